//! `mpiskel validate` (how well skeletons predict their applications when conditions change)
//! and `mpiskel retune` (a skeleton's computation fitted to the machine it now runs on).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use mpiskel_make::run::run_skeleton;
use mpiskel_validate::retune::{store, tune};
use mpiskel_validate::suite::{validate as run_suites, Suite, ValidateOptions};
use mpiskel_validate::tables::{missed_targets, summary_markdown};

use crate::progress::Stages;
use crate::run::RunArgs;

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
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [SuiteArg::Smpi, SuiteArg::Native])]
    suite: Vec<SuiteArg>,
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
    /// Print the results (every row, and the targets missed) as JSON instead of the summary.
    #[arg(long)]
    json: bool,
}

/// The suites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SuiteArg {
    /// NPB skeletons under SimGrid SMPI on the fixtures' platforms.
    Smpi,
    /// Applications and skeletons with real MPI on this machine.
    Native,
}

impl From<SuiteArg> for Suite {
    fn from(s: SuiteArg) -> Self {
        match s {
            SuiteArg::Smpi => Suite::Smpi,
            SuiteArg::Native => Suite::Native,
        }
    }
}

pub fn validate(a: ValidateArgs) -> Result<ExitCode> {
    let o = ValidateOptions {
        suites: a.suite.iter().map(|&s| s.into()).collect(),
        output: a.output.clone(),
        markdown: a.markdown.clone(),
        fixtures: a.fixtures.clone(),
        traces: a.trace.clone(),
        cases: a.case.clone(),
        scenarios: a.scenario.clone(),
        reps: a.reps,
        programs: a.programs.clone(),
        timeout: a.timeout,
        from_json: a.from_json,
        mpiskel: std::env::current_exe().context("finding the mpiskel executable")?,
    };
    let v = run_suites(&o, &Stages::new(a.quiet))?;
    let missed = missed_targets(&v);
    if a.json {
        let doc = serde_json::json!({ "results": v, "missed_targets": missed });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", summary_markdown(&v));
    }
    if missed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("TARGETS MISSED ({}):", missed.len());
    for m in &missed {
        eprintln!("  {m}");
    }
    Ok(if a.no_fail { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Adjust a skeleton's compute blocks for the machine it now runs on.
///
/// With --app-time T (the application's time measured on this machine, seconds): scales every
/// compute block so that the skeleton's prediction by ratio gives T here, as Xu & Subhlok's method
/// does (two runs of the skeleton: as built and without computation). Predictions for other
/// settings of this machine (another network, a CPU share) then start from the right compute
/// speed.
///
/// With --work: compute blocks become a fixed amount of kernel work, this machine's kernel rate
/// (or --rate) × the recorded seconds, so that on a slower processor they take longer. Run it
/// on the machine where the trace was recorded, then take the skeleton elsewhere.
///
/// --reset removes the tuning. The tuning is stored in DIR/skeleton.json and DIR/tuning.args;
/// `mpiskel run` and run.sh apply it (`mpiskel run --untuned` does not).
///
/// Examples:
///   mpiskel retune halo.skel --app-time 12.7
///   mpiskel retune bt.skel --app-time 0.62 --mpi smpi --platform speedhalf.xml --hostfile hosts.txt
///   mpiskel retune halo.skel --work            # on the recording machine
///   mpiskel retune halo.skel --reset
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RetuneArgs {
    /// The application's time on this machine, seconds.
    #[arg(long, value_name = "SECONDS", conflicts_with_all = ["work", "reset"])]
    app_time: Option<f64>,
    /// Make compute blocks a fixed amount of work (this machine's kernel rate, or --rate).
    #[arg(long, conflicts_with = "reset")]
    work: bool,
    /// Kernel iterations per second of the recording machine (with --work).
    #[arg(long, value_name = "PER_SECOND", requires = "work")]
    rate: Option<f64>,
    /// Remove the tuning.
    #[arg(long)]
    reset: bool,
    /// How to run the skeleton (the options of `mpiskel run`).
    #[command(flatten)]
    run: RunArgs,
}

pub fn retune(a: RetuneArgs) -> Result<ExitCode> {
    let dir = a.run.dir.clone();
    let run = a.run.options();
    if a.reset {
        store(&dir, None)?;
        println!("{}: tuning removed", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    if a.app_time.is_none() && !a.work {
        bail!("say how to retune: --app-time SECONDS, --work, or --reset");
    }
    let (tuning, before) = tune(&run, a.app_time, a.rate)?;
    store(&dir, Some(tuning.clone()))?;
    let (after, _) = run_skeleton(&run, &Stages::bars_only())?;
    println!("{}: {} ({})", dir.display(), tuning.skeleton_args().join(" "), tuning.note);
    println!(
        "  predicted application time: {:.6} s by ratio, {:.6} s by phase before; {:.6} s, {:.6} s after",
        before.predicted_ratio_s, before.predicted_s, after.predicted_ratio_s, after.predicted_s
    );
    Ok(ExitCode::SUCCESS)
}
