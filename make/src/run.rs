//! Compile-and-run of a skeleton folder: the C skeleton with the MPI's compiler wrapper
//! (mpicc.openmpi, mpicc.mpich, or SimGrid's smpicc with compute blocks as simulated work), a
//! Rust one with cargo; run on the recorded number of ranks in a process group of its own with
//! a timeout, and its report (measured time, prediction by phase and by ratio) read back.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::harness;
use crate::observe::{Observer, Quiet};
use mpiskel_emit::document;

/// How to compile and run a skeleton folder (`mpiskel run`'s options).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The skeleton folder (written by `mpiskel build`).
    pub dir: PathBuf,
    /// Number of ranks (must be what the skeleton was made for; `None`: that).
    pub np: Option<u32>,
    /// Which MPI to build and run with.
    pub mpi: Mpi,
    /// SimGrid platform file (`Mpi::Smpi`; `None`: [`DEFAULT_PLATFORM`] for the ranks).
    pub platform: Option<PathBuf>,
    /// SimGrid host file (`Mpi::Smpi`; `None`: the platform's hosts in order).
    pub hostfile: Option<PathBuf>,
    /// Extra SimGrid options, `key:value`.
    pub smpi_cfg: Vec<String>,
    /// Seconds before the run is killed.
    pub timeout: u64,
    /// Rust skeletons: cargo's target folder (`None`: DIR/target/<mpi>).
    pub target_dir: Option<PathBuf>,
    /// Options for the launcher (mpirun).
    pub mpirun_args: Vec<String>,
    /// Ignore the tuning `mpiskel retune` stored in the folder.
    pub untuned: bool,
    /// Arguments for the skeleton itself (e.g. `--iterations 40`).
    pub skeleton_args: Vec<String>,
    /// Words put before the launcher (a namespace or cgroup of the validation harness).
    pub prefix: Vec<std::ffi::OsString>,
}

impl RunOptions {
    /// A run of the skeleton in `dir` under `mpi` with every other option at its default.
    pub fn new(dir: &Path, mpi: Mpi) -> Self {
        Self {
            dir: dir.to_path_buf(),
            np: None,
            mpi,
            platform: None,
            hostfile: None,
            smpi_cfg: Vec::new(),
            timeout: 600,
            target_dir: None,
            mpirun_args: Vec::new(),
            untuned: false,
            skeleton_args: Vec::new(),
            prefix: Vec::new(),
        }
    }
}

/// MPI implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mpi {
    /// OpenMPI (mpicc.openmpi, mpirun.openmpi).
    Openmpi,
    /// MPICH (mpicc.mpich, mpirun.mpich).
    Mpich,
    /// SimGrid SMPI (smpicc, smpirun): a simulated platform.
    Smpi,
}

impl Mpi {
    /// The name in file names and reports (`openmpi`, `mpich`, `smpi`).
    pub fn name(self) -> &'static str {
        match self {
            Mpi::Openmpi => "openmpi",
            Mpi::Mpich => "mpich",
            Mpi::Smpi => "smpi",
        }
    }
}

/// The skeleton's report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// Skeleton name.
    pub skeleton: String,
    /// Ranks.
    pub ranks: u32,
    /// Measured skeleton time (slowest rank), seconds.
    pub skeleton_s: f64,
    /// Predicted application time by phase, seconds.
    pub predicted_s: f64,
    /// Predicted application time, skeleton time × factor.
    pub predicted_ratio_s: f64,
    /// The factor.
    pub factor: f64,
    /// The application time recorded in the trace.
    pub recorded_app_s: f64,
    /// Whether the run was under SimGrid.
    pub smpi: bool,
    /// Kernel iterations per second measured at start-up.
    pub compute_rate: f64,
    /// Natively, where the compute blocks are processor time, rank 0's node: what the
    /// prediction's processor floor saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeReport>,
    /// Phases of rank 0.
    pub phases: Vec<PhaseReport>,
}

/// A node of a native run, as the runtime saw it when holding the prediction to the node's
/// processors (`sk_cores_floor` in `mpiskel_rt.c`): where the node's ranks outnumber its
/// processors, the computation the skeleton did not run takes at least `removed_s` over `cores`
/// (a rank that restored less at its own pace adds the difference), and the prediction is at
/// least `computed_s` + `removed_s` over `cores`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeReport {
    /// Ranks on the node.
    pub ranks: u32,
    /// Processors they may use: the union of their CPU affinities, less a cgroup's CPU quota (may be a fraction).
    pub cores: f64,
    /// Processor seconds of computation the node's ranks ran, in the application's iterations
    /// (each phase's scaled as its time is).
    #[serde(default)]
    pub computed_s: f64,
    /// Processor seconds of computation the node's ranks did not run, in the application's
    /// iterations.
    pub removed_s: f64,
}

/// One phase of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Name.
    pub name: String,
    /// Application iterations.
    pub full: u64,
    /// Iterations run.
    pub run: u64,
    /// Warm-up iterations the skeleton skipped that this phase prices (included in
    /// `predicted_s`, at the slowest rank's mean iteration).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup: u64,
    /// Measured seconds.
    pub seconds: f64,
    /// Seconds of computation the skeleton did not run, added back at the pace it
    /// measured (included in `predicted_s`).
    #[serde(default)]
    pub restored_s: f64,
    /// Predicted seconds.
    pub predicted_s: f64,
}

/// The SimGrid platform a run uses without `platform`: NRANKS and LAST stand for the ranks and
/// the last host's number.
pub const DEFAULT_PLATFORM: &str = r#"<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <!-- Written by mpiskel run: NRANKS single-core 1 Gflop/s hosts, private 10 Gb/s 1 us links
       into a non-blocking crossbar. -->
  <cluster id="skel" prefix="node-" suffix=".skel" radical="0-LAST"
           speed="1Gf" core="1" bw="10Gbps" lat="1us" sharing_policy="SPLITDUPLEX"
           loopback_bw="100Gbps" loopback_lat="0.1us"/>
</platform>
"#;

/// Compiles the skeleton in `dir` for `mpi`; returns the binary.
pub fn compile(dir: &Path, mpi: Mpi) -> Result<PathBuf> {
    let bin = format!("skeleton-{}", mpi.name());
    let (cc, extra): (&str, &[&str]) = match mpi {
        Mpi::Openmpi => ("mpicc.openmpi", &[]),
        Mpi::Mpich => ("mpicc.mpich", &[]),
        Mpi::Smpi => ("smpicc", &["-DMPISKEL_SMPI"]),
    };
    // Linked under a temporary name and renamed, so that an interrupted or failed compile
    // leaves no partial binary behind. The program (a sequence of calls) is compiled at -O1,
    // which runs it as fast and compiles a long one in half the time (at -O0 where it is very
    // long, `mpiskel_emit::c::program_opt`); the runtime, which holds the compute kernel, at
    // -O2 (as the folder's Makefile does).
    let source = dir.join("skeleton.c");
    let text = std::fs::read_to_string(&source)
        .with_context(|| format!("reading {}", source.display()))?;
    let opt = mpiskel_emit::c::program_opt(&text);
    drop(text);
    let tmp = format!(".{bin}.tmp-{}", std::process::id());
    let obj = format!(".{bin}.o.tmp-{}", std::process::id());
    let guard = harness::TempPath::register(&dir.join(&tmp))?;
    let obj_guard = harness::TempPath::register(&dir.join(&obj))?;
    let link: Vec<&str> = ["-O2", "-Wall", "-Wextra", "-o", &tmp, &obj]
        .into_iter()
        .chain(mpiskel_emit::c::RUNTIME_SOURCES)
        .chain(["-lm"])
        .collect();
    let steps: [&[&str]; 2] = [&[opt, "-Wall", "-Wextra", "-c", "-o", &obj, "skeleton.c"], &link];
    for args in steps {
        let mut cmd = Command::new(cc);
        cmd.current_dir(dir).args(args).args(extra);
        let out = harness::output_of_child(cmd, cc)
            .with_context(|| format!("running {cc} (is {} installed?)", mpi.name()))?;
        if !out.status.success() {
            bail!(
                "{cc} failed on {}:\n{}",
                dir.join("skeleton.c").display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    drop(obj_guard);
    std::fs::rename(dir.join(&tmp), dir.join(&bin))
        .with_context(|| format!("renaming {} to {bin}", dir.join(&tmp).display()))?;
    guard.keep();
    Ok(dir.join(bin))
}

/// Builds the Rust skeleton in `dir` with cargo for `mpi`; returns the binary.
///
/// The `mpi` crate finds the library through `MPICC` when it is built, and does not rebuild when
/// that changes: each library gets its own target folder.
pub fn compile_rust(
    dir: &Path,
    mpi: Mpi,
    name: &str,
    target_dir: Option<&Path>,
) -> Result<PathBuf> {
    let cc = match mpi {
        Mpi::Openmpi => "mpicc.openmpi",
        Mpi::Mpich => "mpicc.mpich",
        Mpi::Smpi => bail!(
            "{}: Rust skeletons run under openmpi or mpich; build with --lang c to run under SimGrid",
            dir.display()
        ),
    };
    let target = match target_dir {
        Some(t) => std::path::absolute(t)?,
        None => std::path::absolute(dir.join("target").join(mpi.name()))?,
    };
    let mut cmd = Command::new("cargo");
    cmd.current_dir(dir)
        .args(["build", "--release", "--quiet"])
        .env("MPICC", cc)
        .env("CARGO_TARGET_DIR", &target);
    let out =
        harness::output_of_child(cmd, "cargo").context("running cargo (is Rust installed?)")?;
    if !out.status.success() {
        bail!(
            "cargo build failed on {} (MPICC={cc}):\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(target.join("release").join(mpiskel_emit::rust::package_name(name)))
}

/// Runs `cmd` in its own process group, killing the group after `timeout`; returns (stdout,
/// stderr) of a successful run.
fn run_with_timeout(cmd: Command, timeout: Duration, what: &str) -> Result<(String, String)> {
    let out = harness::run_group(cmd, timeout, what)?;
    if !out.status.success() {
        bail!("{what} failed ({}):\n{}{}", out.status, out.stderr, out.stdout);
    }
    Ok((out.stdout, out.stderr))
}

/// Compiles and runs a skeleton folder; returns its report and the launcher's output.
///
/// `observer` is told of the compile and the run while they last.
pub fn run_skeleton(a: &RunOptions, observer: &dyn Observer) -> Result<(RunReport, String)> {
    // An interrupted run stops the compiler or the launcher's process group, and removes a
    // partly linked binary.
    harness::install_signal_handler()?;
    let doc = document::read(&a.dir)?.with_context(|| {
        format!("{}: not a skeleton folder (no skeleton.json)", a.dir.display())
    })?;
    let np = a.np.unwrap_or(doc.n_ranks);
    if np != doc.n_ranks {
        bail!("{}: the skeleton was made for {} ranks, not {np}", a.dir.display(), doc.n_ranks);
    }
    let bin = {
        let _busy = observer.busy(&format!("compiling {}", a.dir.display()));
        match doc.lang.as_str() {
            "rust" => compile_rust(&a.dir, a.mpi, &doc.name, a.target_dir.as_deref())?,
            _ => std::path::absolute(compile(&a.dir, a.mpi)?)?,
        }
    };
    let launcher = match a.mpi {
        Mpi::Openmpi => "mpirun.openmpi",
        Mpi::Mpich => "mpirun.mpich",
        Mpi::Smpi => "smpirun",
    };
    let mut cmd = match a.prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(launcher);
            c
        }
        None => Command::new(launcher),
    };
    match a.mpi {
        Mpi::Openmpi => {
            cmd.args(["--oversubscribe", "--allow-run-as-root"]);
            cmd.args(["-np", &np.to_string()]);
        }
        Mpi::Mpich => {
            cmd.args(["-np", &np.to_string()]);
        }
        Mpi::Smpi => {
            let platform = match &a.platform {
                Some(p) => p.canonicalize().with_context(|| format!("{}", p.display()))?,
                None => {
                    let p = a.dir.join("smpi-platform.xml");
                    let text = DEFAULT_PLATFORM
                        .replace("NRANKS", &np.to_string())
                        .replace("LAST", &(np.max(1) - 1).to_string());
                    std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
                    p.canonicalize()?
                }
            };
            cmd.args(["-np", &np.to_string(), "-platform"]).arg(&platform);
            if let Some(h) = &a.hostfile {
                cmd.arg("-hostfile")
                    .arg(h.canonicalize().with_context(|| format!("{}", h.display()))?);
            } else if a.platform.is_none() {
                let h = a.dir.join("smpi-hostfile.txt");
                let hosts: String = (0..np).map(|i| format!("node-{i}.skel\n")).collect();
                std::fs::write(&h, hosts)?;
                cmd.arg("-hostfile").arg(h.canonicalize()?);
            }
            cmd.args([
                "--cfg=smpi/host-speed:1Gf",
                "--cfg=smpi/simulate-computation:no",
                "--cfg=smpi/display-timing:yes",
            ]);
            for c in &a.smpi_cfg {
                cmd.arg(format!("--cfg={c}"));
            }
        }
    }
    let report_path = a.dir.join(format!("report-{}.json", a.mpi.name()));
    std::fs::remove_file(&report_path).ok();
    cmd.args(&a.mpirun_args);
    cmd.current_dir(&a.dir).arg(&bin);
    cmd.arg("--report").arg(report_path.file_name().unwrap_or_default());
    if !a.untuned {
        cmd.args(doc.tuning.as_ref().map(|t| t.skeleton_args()).unwrap_or_default());
    }
    cmd.args(&a.skeleton_args);
    let (out, err) = {
        let _busy = observer.busy(&format!("running {np} ranks under {}", a.mpi.name()));
        run_with_timeout(cmd, Duration::from_secs(a.timeout), "the skeleton")?
    };
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("MPISKEL_REPORT "))
        .with_context(|| format!("the skeleton printed no report:\n{out}{err}"))?;
    let report: RunReport = serde_json::from_str(line).context("reading the skeleton's report")?;
    Ok((report, out + &err))
}

/// Runs the C skeleton in `skel` under SimGrid SMPI with its time-independent tracing into
/// `into` (SimGrid's `-trace-ti`; `platform` and `hostfile` as in [`RunOptions`]); returns the
/// trace's index, `into/trace.txt` (`mpiskel export --ti` of a skeleton).
pub fn trace_under_smpi(
    skel: &Path,
    into: &Path,
    platform: Option<&Path>,
    hostfile: Option<&Path>,
) -> Result<PathBuf> {
    let doc = document::read(skel)?
        .with_context(|| format!("{}: not a skeleton folder", skel.display()))?;
    if doc.lang != "c" {
        bail!(
            "{}: a {} skeleton; only C skeletons run under SimGrid (build it with --lang c)",
            skel.display(),
            doc.lang
        );
    }
    std::fs::create_dir_all(into).with_context(|| format!("creating {}", into.display()))?;
    let index = std::path::absolute(into.join("trace.txt"))?;
    let mut run = RunOptions::new(skel, Mpi::Smpi);
    run.platform = platform.map(Path::to_path_buf);
    run.hostfile = hostfile.map(Path::to_path_buf);
    run.mpirun_args =
        vec!["-trace-ti".into(), format!("--cfg=tracing/filename:{}", index.display())];
    run_skeleton(&run, &Quiet)
        .with_context(|| format!("running {} under SimGrid", skel.display()))?;
    Ok(index)
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}
