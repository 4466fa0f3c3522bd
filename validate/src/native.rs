//! The real-MPI suite: applications and their skeletons run on this machine, interleaved, in
//! scenarios the harness sets up and tears down itself (`mpiskel_make::harness`).
//!
//! Each application is traced once in the reference setting (OpenMPI, shared memory, the whole
//! machine) and its skeleton built from that trace. In every scenario, each repetition runs
//! the application (traced, for its MPI_Init-to-MPI_Finalize time, as recorded) and then the
//! skeleton; the table gives medians and the spread of the application's own runs.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{bail, Context, Result};

use crate::retune;
use crate::tables::{RetuneRow, Row, Stat};
use mpiskel_emit::document::Tuning;
use mpiskel_make::harness::{self, Cgroup, Netns};
use mpiskel_make::observe::{Observer, Quiet};
use mpiskel_make::run::{run_skeleton, Mpi, RunOptions, RunReport};

/// An application of the suite.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: &'static str,
    pub ranks: u32,
    /// Program (a fixture program's name, or `lmp`) and arguments.
    program: &'static str,
    args: &'static [&'static str],
}

/// The applications: two fixture programs and LAMMPS (Debian's, which links OpenMPI only) on
/// its `melt` example. `{programs}` in an argument stands for the programs' folder.
pub const CASES: &[Case] = &[
    Case { name: "halo2d", ranks: 4, program: "halo", args: &["2x2", "1", "1500", "16384"] },
    Case { name: "ring", ranks: 4, program: "ring", args: &["1500", "32768"] },
    Case {
        name: "lammps-melt",
        ranks: 4,
        program: "lmp",
        args: &[
            "-in",
            "/usr/share/lammps/examples/melt/in.melt",
            "-log",
            "none",
            "-screen",
            "none",
        ],
    },
];

/// How a scenario changes the machine.
#[derive(Debug, Clone, Copy)]
pub enum Setting {
    /// As it is: OpenMPI over shared memory.
    Reference,
    /// OpenMPI over TCP on the loopback of a namespace, optionally rate-limited (tc rate).
    Tcp(Option<&'static str>),
    /// A CPU quota, percent of one processor.
    Quota(u32),
    /// The other library.
    Mpich,
}

/// One scenario.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub class: &'static str,
    pub setting: Setting,
}

/// The scenarios, in the order they run.
pub const SCENARIOS: &[Scenario] = &[
    Scenario { name: "ref", class: "reference", setting: Setting::Reference },
    Scenario { name: "tcp", class: "bandwidth", setting: Setting::Tcp(None) },
    Scenario { name: "bw1gbit", class: "bandwidth", setting: Setting::Tcp(Some("1gbit")) },
    Scenario { name: "bw200mbit", class: "bandwidth", setting: Setting::Tcp(Some("200mbit")) },
    Scenario { name: "quota200", class: "shared processors", setting: Setting::Quota(200) },
    Scenario { name: "quota100", class: "shared processors", setting: Setting::Quota(100) },
    Scenario { name: "quota50", class: "shared processors", setting: Setting::Quota(50) },
    Scenario { name: "quota25", class: "shared processors", setting: Setting::Quota(25) },
    Scenario { name: "mpich", class: "library", setting: Setting::Mpich },
];

impl Setting {
    fn describe(self) -> String {
        match self {
            Setting::Reference => "OpenMPI, shared memory".into(),
            Setting::Tcp(None) => "OpenMPI, TCP over loopback".into(),
            Setting::Tcp(Some(r)) => format!("TCP, tbf {r}"),
            Setting::Quota(p) => format!("CPU quota {p} %"),
            Setting::Mpich => "MPICH instead of OpenMPI".into(),
        }
    }

    fn mpi(self) -> Mpi {
        if matches!(self, Setting::Mpich) {
            Mpi::Mpich
        } else {
            Mpi::Openmpi
        }
    }

    fn needs_root(self) -> bool {
        matches!(self, Setting::Tcp(_) | Setting::Quota(_))
    }
}

/// OpenMPI's options for TCP over the loopback only.
const TCP_ONLY: &[&str] = &[
    "--mca",
    "pml",
    "ob1",
    "--mca",
    "btl",
    "tcp,self",
    "--mca",
    "btl_tcp_if_include",
    "lo",
    "--mca",
    "oob_tcp_if_include",
    "lo",
];

/// The resources of one scenario, alive while it runs.
#[derive(Debug)]
enum Env {
    Plain,
    Net(Netns),
    Cpu(Cgroup),
}

impl Env {
    fn enter(s: Setting) -> Result<Env> {
        Ok(match s {
            Setting::Tcp(rate) => Env::Net(Netns::create(rate)?),
            Setting::Quota(p) => Env::Cpu(Cgroup::create(p)?),
            Setting::Reference | Setting::Mpich => Env::Plain,
        })
    }

    fn prefix(&self) -> Vec<OsString> {
        match self {
            Env::Plain => Vec::new(),
            Env::Net(n) => n.prefix(),
            Env::Cpu(c) => c.prefix(),
        }
    }
}

/// Options of the native suite.
#[derive(Debug)]
pub struct Options<'a> {
    /// The fixture programs' folder (their Makefile).
    pub programs: &'a Path,
    /// Folder for traces, skeletons and built programs.
    pub work: &'a Path,
    /// Runs of each application and skeleton per scenario.
    pub reps: usize,
    /// How long one run may take.
    pub timeout: Duration,
    /// The mpiskel executable, which records the applications (`mpiskel trace`).
    pub mpiskel: &'a Path,
}

/// Builds the fixture programs for one library into `work/programs/<mpi>`.
fn build_programs(programs: &Path, work: &Path, mpi: Mpi) -> Result<PathBuf> {
    let out = std::path::absolute(work.join("programs").join(mpi.name()))?;
    let st = Command::new("make")
        .args(["-s", "-C"])
        .arg(programs)
        .arg(format!("MPI={}", mpi.name()))
        .arg(format!("OUT={}", out.display()))
        .output()
        .with_context(|| format!("running make in {}", programs.display()))?;
    if !st.status.success() {
        bail!(
            "building the programs of {} failed:\n{}",
            programs.display(),
            String::from_utf8_lossy(&st.stderr)
        );
    }
    Ok(out)
}

/// The application's command line.
fn app_command(
    case: &Case,
    programs: &Path,
    bin: &Path,
    mpi: Mpi,
    setting: Setting,
) -> Result<Vec<OsString>> {
    let mut v: Vec<OsString> = Vec::new();
    match mpi {
        Mpi::Mpich => v.push("mpirun.mpich".into()),
        _ => {
            v.extend(
                ["mpirun.openmpi", "--oversubscribe", "--allow-run-as-root"].map(OsString::from),
            );
            if matches!(setting, Setting::Tcp(_)) {
                v.extend(TCP_ONLY.iter().map(OsString::from));
            }
        }
    }
    v.extend(["-np".into(), case.ranks.to_string().into()]);
    if case.program == "lmp" {
        v.push("lmp".into());
    } else {
        v.push(bin.join(case.program).into());
    }
    let programs = std::path::absolute(programs)?;
    for a in case.args {
        match a.strip_prefix("{programs}") {
            Some(rest) => v.push(format!("{}{rest}", programs.display()).into()),
            None => v.push(a.into()),
        }
    }
    Ok(v)
}

/// How the application is run: traced whole (to build its skeleton from), or timed only (the
/// ground truth, without the tracer's overhead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AppRun {
    Traced,
    Timed,
}

/// Runs the application (with the prefix of its scenario) under the tracer into `trace`;
/// returns its time.
fn run_app(
    case: &Case,
    cmd: &[OsString],
    prefix: &[OsString],
    trace: &Path,
    o: &Options,
    how: AppRun,
) -> Result<f64> {
    let mut words: Vec<OsString> = prefix.to_vec();
    words.push(o.mpiskel.into());
    let record = match how {
        AppRun::Traced => "--cpu-time",
        AppRun::Timed => "--time-only",
    };
    words.extend(["trace", record, "--force", "-o"].map(OsString::from));
    words.push(trace.into());
    words.push("--".into());
    words.extend(cmd.iter().cloned());
    let mut c = Command::new(&words[0]);
    c.args(&words[1..]);
    let out = harness::run_group(c, o.timeout, &format!("{} (traced)", case.name))?;
    if !out.status.success() {
        bail!("{} failed ({}):\n{}{}", case.name, out.status, out.stderr, out.stdout);
    }
    let set = mpiskel_trace::TraceSet::open(trace, &mpiskel_trace::ReadOptions::default())
        .with_context(|| format!("reading {}", trace.display()))?;
    Ok(set.app_time_s())
}

/// How the skeleton in `skel` runs in a scenario.
fn skel_args(skel: &Path, setting: Setting, prefix: &[OsString], o: &Options) -> RunOptions {
    let mut a = RunOptions::new(skel, setting.mpi());
    a.prefix = prefix.to_vec();
    a.timeout = o.timeout.as_secs();
    if matches!(setting, Setting::Tcp(_)) {
        a.mpirun_args = TCP_ONLY.iter().map(|x| x.to_string()).collect();
    }
    a
}

fn run_skel(skel: &Path, setting: Setting, prefix: &[OsString], o: &Options) -> Result<RunReport> {
    Ok(run_skeleton(&skel_args(skel, setting, prefix, o), &Quiet)?.0)
}

/// `mpiskel retune` under a CPU quota of `percent` %, for an application whose reference trace
/// the suite has recorded: app-time mode given the application's first run there, checked
/// against the median of the following --reps runs; work mode with the kernel rate measured
/// without the quota. Application and skeletons run interleaved.
pub fn retune_under_quota(
    case: &Case,
    percent: u32,
    o: &Options,
    progress: &dyn Observer,
) -> Result<Vec<RetuneRow>> {
    let dir = o.work.join("native").join(case.name);
    let trace = dir.join("reference.trace");
    if !trace.exists() {
        bail!("{}: run the native suite first (no reference trace)", trace.display());
    }
    let setting = Setting::Quota(percent);
    let scenario = format!("quota{percent}");
    let bin = build_programs(o.programs, o.work, Mpi::Openmpi)?;
    let cmd = app_command(case, o.programs, &bin, Mpi::Openmpi, setting)?;
    let (plain, by_time, by_work) =
        (dir.join("skeleton"), dir.join("skeleton-app-time"), dir.join("skeleton-work"));
    for d in [&by_time, &by_work] {
        crate::prepare::build_skeleton(&trace, d)?;
    }
    // Work: the kernel's rate here without the quota, as on the recording machine.
    let (work, _) = retune::tune(&skel_args(&by_work, Setting::Reference, &[], o), None, None)?;
    retune::store(&by_work, Some(work.clone()))?;
    let env = Env::enter(setting)?;
    let prefix = env.prefix();
    let given = run_app(case, &cmd, &prefix, &dir.join("retune.trace"), o, AppRun::Timed)?;
    let (time, _) = retune::tune(&skel_args(&by_time, setting, &prefix, o), Some(given), None)?;
    retune::store(&by_time, Some(time.clone()))?;
    progress.line(&format!(
        "{} under {scenario}: compute × {:.3} given {given:.4} s; work at {:.3e} iterations/s",
        case.name,
        time.compute_scale.unwrap_or(1.0),
        work.compute_rate.unwrap_or(0.0)
    ));
    let mut app = Vec::new();
    let mut runs: [(Vec<f64>, Vec<f64>); 3] = Default::default();
    for _ in 0..o.reps {
        let timed = AppRun::Timed;
        app.push(run_app(case, &cmd, &prefix, &dir.join("retune.trace"), o, timed)?);
        for (k, d) in [&plain, &by_time, &by_work].into_iter().enumerate() {
            let r = run_skel(d, setting, &prefix, o)?;
            runs[k].0.push(r.predicted_s);
            runs[k].1.push(r.predicted_ratio_s);
        }
    }
    drop(env);
    let med = |v: &[f64]| Stat::of(v).median;
    let row = |t: &Tuning, k: usize, setting: String| RetuneRow {
        suite: "native".into(),
        case: case.name.into(),
        scenario: scenario.clone(),
        mode: t.mode.clone(),
        setting,
        truth: Stat::of(&app),
        replay: None,
        ratio_before: med(&runs[0].1),
        ratio_after: med(&runs[k].1),
        phase_before: med(&runs[0].0),
        phase_after: med(&runs[k].0),
    };
    Ok(vec![
        row(
            &time,
            1,
            format!(
                "given one run ({given:.4} s); compute × {:.3}",
                time.compute_scale.unwrap_or(1.0)
            ),
        ),
        row(
            &work,
            2,
            format!("kernel rate without the quota, {:.3e} /s", work.compute_rate.unwrap_or(0.0)),
        ),
    ])
}

/// Runs the suite.
pub fn run(
    cases: &[Case],
    scenarios: &[Scenario],
    o: &Options,
    progress: &dyn Observer,
) -> Result<Vec<Row>> {
    if scenarios.iter().any(|s| s.setting.needs_root()) && !harness::is_root() {
        bail!("the bandwidth and CPU-quota scenarios create network namespaces and cgroups: run as root, or choose --scenario ref,mpich");
    }
    let mut bins = std::collections::BTreeMap::new();
    let mut rows = Vec::new();
    for case in cases {
        let dir = o.work.join("native").join(case.name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        if !bins.contains_key("openmpi") {
            bins.insert("openmpi", build_programs(o.programs, o.work, Mpi::Openmpi)?);
        }
        let bin = bins["openmpi"].clone();
        progress.line(&format!("{}: tracing the reference run", case.name));
        let trace = dir.join("reference.trace");
        let cmd = app_command(case, o.programs, &bin, Mpi::Openmpi, Setting::Reference)?;
        run_app(case, &cmd, &[], &trace, o, AppRun::Traced)?;
        let skel = dir.join("skeleton");
        crate::prepare::build_skeleton(&trace, &skel)?;
        for s in scenarios {
            let mpi = s.setting.mpi();
            if mpi == Mpi::Mpich && case.program == "lmp" {
                progress.line(&format!(
                    "{}: skipped under MPICH (Debian's lmp links OpenMPI)",
                    case.name
                ));
                continue;
            }
            if !bins.contains_key(mpi.name()) {
                bins.insert(mpi.name(), build_programs(o.programs, o.work, mpi)?);
            }
            let bin = &bins[mpi.name()];
            let cmd = app_command(case, o.programs, bin, mpi, s.setting)?;
            let env = Env::enter(s.setting)?;
            let prefix = env.prefix();
            let (mut app, mut sk, mut ph, mut ra) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for k in 0..o.reps {
                let timed = dir.join(format!("{}.trace", s.name));
                let t = run_app(case, &cmd, &prefix, &timed, o, AppRun::Timed)
                    .with_context(|| format!("{} in scenario {}", case.name, s.name))?;
                let r = run_skel(&skel, s.setting, &prefix, o).with_context(|| {
                    format!("the skeleton of {} in scenario {}", case.name, s.name)
                })?;
                progress.line(&format!(
                    "{} {} run {}: application {t:.4} s, skeleton {:.4} s → {:.4} s",
                    case.name,
                    s.name,
                    k + 1,
                    r.skeleton_s,
                    r.predicted_s
                ));
                app.push(t);
                sk.push(r.skeleton_s);
                ph.push(r.predicted_s);
                ra.push(r.predicted_ratio_s);
            }
            drop(env);
            rows.push(Row {
                suite: "native".into(),
                case: case.name.into(),
                ranks: case.ranks,
                scenario: s.name.into(),
                class: s.class.into(),
                setting: s.setting.describe(),
                skeleton: Stat::of(&sk),
                by_phase: Stat::of(&ph),
                by_ratio: Stat::of(&ra),
                truth: Stat::of(&app),
                replay: None,
                main_iterations: None,
            });
        }
    }
    Ok(rows)
}

/// Picks cases and scenarios by name (all when none are named).
pub fn select(cases: &[String], scenarios: &[String]) -> Result<(Vec<Case>, Vec<Scenario>)> {
    Ok((
        crate::prepare::pick(CASES, cases, |c| c.name, "case")?,
        crate::prepare::pick(SCENARIOS, scenarios, |s| s.name, "native scenario")?,
    ))
}

/// Real MPI, under a 50 % CPU quota: app-time retuning given the application's first run
/// there (checked against the median of the following runs), and work retuning with the kernel
/// rate measured without the quota.
pub fn retune(cases: &[Case], o: &Options, progress: &dyn Observer) -> Result<Vec<RetuneRow>> {
    let mut rows = Vec::new();
    for case in cases {
        rows.extend(retune_under_quota(case, 50, o, progress)?);
    }
    Ok(rows)
}
