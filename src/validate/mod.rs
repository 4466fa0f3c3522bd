//! `mpiskel validate`: how well skeletons predict their applications when conditions change.
//!
//! Two suites. `smpi`: skeletons of NPB traces run under SimGrid on the fixtures' foreign
//! platforms ([`smpi`]). `native`: applications and their skeletons run here with real MPI,
//! under a bandwidth limit, a CPU quota and the other MPI library ([`native`], set up and torn
//! down by [`crate::harness`]). The results go to `results.json`, per-suite SVG charts, and a
//! Markdown report ([`report`]); `mpiskel retune` is measured as part of the run.

pub mod native;
pub mod report;
pub mod retune;
pub mod smpi;

use crate::compress::write_atomic;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use report::Validation;

/// Measure skeletons' predictions across platforms and write the validation report.
///
/// The smpi suite builds the skeleton of each NPB trace (--fixtures, default
/// ../shared/fixtures) and runs it under SimGrid on each platform of the fixtures'
/// `npb/platforms` (reference; bandwidth 50, 20, 5 MB/s; latency ×10; CPU speed ½; 16 ranks on
/// 8 and on 4 hosts; MPICH's and OpenMPI's collective algorithms), against NPB itself there and
/// against SimGrid's replay of the full trace (`npb/ground-truth.csv`), --reps times with
/// different seeds of the skeleton's drawn compute durations.
///
/// The native suite traces each application once here (OpenMPI, shared memory), builds its
/// skeleton, then runs application and skeleton interleaved, --reps times each, in each
/// scenario: OpenMPI over TCP in a network namespace (unlimited, and limited by a tc token-bucket
/// filter to 1 Gbit/s and 200 Mbit/s), a CPU cgroup quota (200, 100, 50, 25 % of a processor),
/// and MPICH. The bandwidth and quota scenarios need root; everything the harness creates is
/// removed when it ends, also on Ctrl-C (SIGINT), SIGTERM and SIGHUP.
///
/// Both suites also measure `mpiskel retune` (its two modes) where it applies.
///
/// Writes DIR/results.json, DIR/smpi.svg, DIR/native.svg, and the Markdown report (--markdown;
/// between its `<!-- validate: begin -->` and `<!-- validate: end -->` lines when the file
/// already has them, so that text around the tables stays). --from-json re-renders the report
/// from DIR/results.json without running anything.
///
/// Examples:
///   mpiskel validate --suite smpi -o validation --markdown VALIDATION.md
///   mpiskel validate --suite native --case ring --scenario ref,quota50 --reps 3
///   mpiskel validate --from-json -o validation --markdown VALIDATION.md
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ValidateArgs {
    /// Which suites to run.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Suite::Smpi, Suite::Native])]
    suite: Vec<Suite>,
    /// Folder for results, charts, skeletons and traces.
    #[arg(short, long, value_name = "DIR", default_value = "validation")]
    output: PathBuf,
    /// The Markdown report [default: DIR/VALIDATION.md].
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The shared fixtures folder (holding npb/) [default: $MPISKEL_SHARED/fixtures, else
    /// ../shared/fixtures].
    #[arg(long, value_name = "DIR")]
    fixtures: Option<PathBuf>,
    /// NPB traces of the smpi suite [default: every one of the fixtures' npb/ folder].
    #[arg(long, value_delimiter = ',')]
    trace: Vec<String>,
    /// Applications of the native suite (halo2d, ring, lammps-melt) [default: all].
    #[arg(long, value_delimiter = ',')]
    case: Vec<String>,
    /// Scenarios, by name, of either suite [default: all].
    #[arg(long, value_delimiter = ',')]
    scenario: Vec<String>,
    /// Repetitions: of each native run; under SimGrid (deterministic), runs of each skeleton
    /// with the seeds 0 to N−1 of its drawn compute durations (`--seed` of the skeleton).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// The fixture programs' folder (their Makefile).
    #[arg(long, value_name = "DIR", default_value = "fixtures/programs")]
    programs: PathBuf,
    /// Seconds before one run is killed.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Only re-render the report from DIR/results.json.
    #[arg(long)]
    from_json: bool,
    /// Report the SimGrid suite's missed targets without failing. By default `validate` exits
    /// with status 1, after writing everything, when a scenario class's mean |error| against
    /// the replay passes 3 %, a case's passes 8 %, or a skeleton runs more than a twelfth of
    /// the replay (a twentieth where its main loop has at least 20 iterations).
    #[arg(long)]
    no_fail: bool,
    /// Print no progress.
    #[arg(short, long)]
    quiet: bool,
}

/// The suites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    /// NPB skeletons under SimGrid SMPI on the fixtures' platforms.
    Smpi,
    /// Applications and skeletons with real MPI on this machine.
    Native,
}

/// Progress lines on stderr, with the time since the start.
#[derive(Debug)]
pub struct Progress {
    start: Instant,
    quiet: bool,
}

impl Progress {
    pub fn say(&self, what: &str) {
        if !self.quiet {
            eprintln!("[{:7.1} s] {what}", self.start.elapsed().as_secs_f64());
        }
    }
}

/// Builds the C skeleton of `trace` into `dir` (replacing it) with the mpiskel executable.
pub fn build_skeleton(trace: &Path, dir: &Path, extra: &[&str]) -> Result<()> {
    let exe = std::env::current_exe().context("finding the mpiskel executable")?;
    let out = Command::new(exe)
        .args(["build", "-q", "--force"])
        .arg(trace)
        .arg("-o")
        .arg(dir)
        .args(extra)
        .output()
        .context("running mpiskel build")?;
    if !out.status.success() {
        bail!(
            "building the skeleton of {} failed:\n{}",
            trace.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The entries of `all` named in `names`, in that order (all of them when none are named).
pub fn pick<T: Clone>(
    all: &[T],
    names: &[String],
    name: impl Fn(&T) -> &str,
    what: &str,
) -> Result<Vec<T>> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    names
        .iter()
        .map(|n| {
            all.iter().find(|x| name(x) == n).cloned().with_context(|| {
                let known: Vec<&str> = all.iter().map(&name).collect();
                format!("unknown {what} {n:?} (known: {})", known.join(", "))
            })
        })
        .collect()
}

fn default_fixtures() -> PathBuf {
    match std::env::var_os("MPISKEL_SHARED") {
        Some(s) => PathBuf::from(s).join("fixtures"),
        None => PathBuf::from("../shared/fixtures"),
    }
}

const BEGIN: &str = "<!-- validate: begin -->";
const END: &str = "<!-- validate: end -->";

/// The generated part of the report.
fn generated(v: &Validation, dir: &Path, md_path: &Path) -> String {
    let rel = |f: &str| {
        let p = dir.join(f);
        let base = md_path.parent().filter(|p| !p.as_os_str().is_empty());
        match base {
            Some(b) => p.strip_prefix(b).map(Path::to_path_buf).unwrap_or(p),
            None => p,
        }
        .display()
        .to_string()
    };
    let mut o = String::new();
    o.push_str(BEGIN);
    o.push('\n');
    o.push_str(&format!("\nMeasured on {}.\n\n", v.machine));
    o.push_str("## Summary per scenario class\n\n");
    o.push_str(&report::summary_markdown(v));
    if v.rows.iter().any(|r| r.suite == "smpi") {
        o.push_str("## SimGrid SMPI: every scenario\n\n");
        o.push_str(&format!("![predicted against replay]({})\n\n", rel("smpi.svg")));
        o.push_str(&report::rows_markdown(v, "smpi"));
        o.push('\n');
    }
    if v.rows.iter().any(|r| r.suite == "native") {
        o.push_str("## Real MPI on this machine: every scenario\n\n");
        o.push_str(&format!("![predicted against measured]({})\n\n", rel("native.svg")));
        o.push_str(&report::rows_markdown(v, "native"));
        o.push('\n');
    }
    if !v.retune.is_empty() {
        o.push_str("## `mpiskel retune`\n\n");
        o.push_str(&report::retune_markdown(v));
        o.push('\n');
    }
    o.push_str(END);
    o.push('\n');
    o
}

/// Puts the generated part into the report, keeping what surrounds its markers.
fn splice(old: Option<&str>, gen: &str) -> String {
    if let Some(old) = old {
        if let (Some(a), Some(b)) = (old.find(BEGIN), old.find(END)) {
            if a < b {
                let after = &old[b + END.len()..];
                return format!(
                    "{}{}{}",
                    &old[..a],
                    gen,
                    after.strip_prefix('\n').unwrap_or(after)
                );
            }
        }
    }
    format!("# Validation\n\nRegenerate with `make validate`.\n\n{gen}")
}

fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "an unknown processor".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let date = Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("{} ({cores} cores, {cpu}), {date}", host.trim())
}

pub fn validate(a: ValidateArgs) -> Result<ExitCode> {
    let progress = Progress { start: Instant::now(), quiet: a.quiet };
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("creating {}", a.output.display()))?;
    let json_path = a.output.join("results.json");
    let md_path = a.markdown.clone().unwrap_or_else(|| a.output.join("VALIDATION.md"));
    let v: Validation = if a.from_json {
        let text = std::fs::read_to_string(&json_path)
            .with_context(|| format!("reading {}", json_path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", json_path.display()))?
    } else {
        crate::harness::install_signal_handler()?;
        let fixtures = a.fixtures.clone().unwrap_or_else(default_fixtures);
        let mut v = Validation { machine: machine(), ..Default::default() };
        let names = |known: &[&str]| -> Vec<String> {
            a.scenario.iter().filter(|s| known.contains(&s.as_str())).cloned().collect()
        };
        let smpi_known: Vec<&str> = smpi::SCENARIOS.iter().map(|s| s.name).collect();
        let native_known: Vec<&str> = native::SCENARIOS.iter().map(|s| s.name).collect();
        if let Some(u) = a
            .scenario
            .iter()
            .find(|s| !smpi_known.contains(&s.as_str()) && !native_known.contains(&s.as_str()))
        {
            bail!(
                "unknown scenario {u:?} (SimGrid: {}; native: {})",
                smpi_known.join(", "),
                native_known.join(", ")
            );
        }
        let run_smpi = a.suite.contains(&Suite::Smpi)
            && (a.scenario.is_empty() || !names(&smpi_known).is_empty());
        let run_native = a.suite.contains(&Suite::Native)
            && (a.scenario.is_empty() || !names(&native_known).is_empty());
        anyhow::ensure!(a.reps >= 1, "--reps must be at least 1");
        if run_smpi {
            let npb = fixtures.join("npb");
            if !npb.join("ground-truth.csv").exists() {
                bail!("{}: no NPB fixtures (ground-truth.csv); use --fixtures", npb.display());
            }
            let scenarios = smpi::select(&names(&smpi_known))?;
            let traces = if a.trace.is_empty() { smpi::all_traces(&npb)? } else { a.trace.clone() };
            v.rows.extend(smpi::run(&npb, &traces, &scenarios, &a.output, a.reps, &progress)?);
            v.retune.extend(retune::smpi(&npb, &traces, &a.output, &progress)?);
        }
        if run_native {
            let (cases, scenarios) = native::select(&a.case, &names(&native_known))?;
            let o = native::Options {
                programs: &a.programs,
                work: &a.output,
                reps: a.reps,
                timeout: Duration::from_secs(a.timeout),
            };
            v.rows.extend(native::run(&cases, &scenarios, &o, &progress)?);
            if scenarios.iter().any(|s| s.name == "quota50") {
                v.retune.extend(retune::native(&cases, &o, &progress)?);
            }
        }
        write_atomic(&json_path, &serde_json::to_string_pretty(&v)?)?;
        v
    };
    for suite in ["smpi", "native"] {
        if v.rows.iter().any(|r| r.suite == suite) {
            let title = match suite {
                "smpi" => "NPB skeletons under SimGrid: per-phase prediction against the replay",
                _ => "Skeletons with real MPI: per-phase prediction against the application",
            };
            write_atomic(
                &a.output.join(format!("{suite}.svg")),
                &report::chart_svg(&v, suite, title),
            )?;
        }
    }
    let old = std::fs::read_to_string(&md_path).ok();
    write_atomic(&md_path, &splice(old.as_deref(), &generated(&v, &a.output, &md_path)))?;
    progress.say(&format!("wrote {}, {}", json_path.display(), md_path.display()));
    print!("{}", report::summary_markdown(&v));
    let missed = report::missed_targets(&v);
    if missed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("TARGETS MISSED ({}):", missed.len());
    for m in &missed {
        eprintln!("  {m}");
    }
    Ok(if a.no_fail { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_are_picked_by_name_in_the_order_given() {
        let all = ["ref", "bw5MBps", "lat10x"];
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(pick(&all, &[], |s| s, "x").unwrap(), all);
        assert_eq!(pick(&all, &names(&["lat10x", "ref"]), |s| s, "x").unwrap(), ["lat10x", "ref"]);
        let e = pick(&all, &names(&["fast"]), |s| s, "SimGrid scenario").unwrap_err().to_string();
        assert_eq!(e, "unknown SimGrid scenario \"fast\" (known: ref, bw5MBps, lat10x)");
    }

    #[test]
    fn the_report_keeps_the_text_around_its_markers() {
        let old = format!("# V\n\nintro\n\n{BEGIN}\nold tables\n{END}\n\n## Analysis\n\ntext\n");
        let new = splice(Some(&old), &format!("{BEGIN}\nnew\n{END}\n"));
        assert_eq!(new, format!("# V\n\nintro\n\n{BEGIN}\nnew\n{END}\n\n## Analysis\n\ntext\n"));
        let fresh = splice(None, "x\n");
        assert!(fresh.starts_with("# Validation") && fresh.ends_with("x\n"));
    }
}
