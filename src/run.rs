//! `mpiskel run`: compile a skeleton folder, run it, print measured and predicted times.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use mpiskel_make::run::{run_skeleton, RunOptions};

use crate::progress::Stages;

/// Compile a skeleton folder, run it and print its prediction.
///
/// Compiles with the MPI's compiler wrapper (mpicc.openmpi, mpicc.mpich, or SimGrid's smpicc
/// with compute blocks as simulated work), runs it on the recorded number of ranks with a
/// timeout, and prints the skeleton's measured time beside the predicted application time (by
/// phase, and skeleton time × the recorded factor). Under --mpi smpi the run is simulated on
/// --platform (default: a cluster like the one NPB fixtures were recorded on: 1 Gflop/s hosts,
/// 10 Gb/s 1 µs links, one rank per host).
///
/// A Rust skeleton (`mpiskel build --lang rust`) is built with `cargo build --release`, with
/// MPICC naming the library's compiler wrapper and a target folder per library; it runs under
/// OpenMPI or MPICH.
///
/// Examples:
///   mpiskel run halo.skel
///   mpiskel run halo.skel --mpi mpich --timeout 120
///   mpiskel run bt.skel --mpi smpi --platform platforms/bw5MBps.xml \
///       --hostfile platforms/hostfile_1perhost.txt
///   mpiskel run bt.skel --json -- --iterations 40
///   mpiskel run halo-rs --mpi mpich --target-dir /tmp/skeleton-builds/mpich
///   mpiskel run halo.skel --repeat 5      # the median of five runs, with their spread
///
/// With --repeat N the skeleton runs N times, run k with `--seed k` (unless a seed is given
/// after --): on a shared or oversubscribed machine one short run can be descheduled at the
/// wrong moment, and each seed draws other compute durations; it prints each run and the
/// median of each figure with the smallest and largest, and --json prints {runs: [the reports],
/// median, min, max: {skeleton_s, predicted_s, predicted_ratio_s}}.
#[derive(Debug, Clone, Args)]
#[command(verbatim_doc_comment)]
pub struct RunCommand {
    /// How to run the skeleton.
    #[command(flatten)]
    pub run: RunArgs,
    /// Run the skeleton this many times and report the medians, with the spread.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
}

/// The options of `mpiskel run` that say how to run a skeleton (also `mpiskel retune`'s).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The skeleton folder (written by `mpiskel build`).
    pub dir: PathBuf,
    /// Number of ranks (must be what the skeleton was made for; default: that).
    #[arg(short = 'n', long = "np", value_name = "N")]
    pub np: Option<u32>,
    /// Which MPI to build and run with.
    #[arg(long, value_enum, default_value_t = Mpi::Openmpi)]
    pub mpi: Mpi,
    /// SimGrid platform file (--mpi smpi).
    #[arg(long, value_name = "FILE")]
    pub platform: Option<PathBuf>,
    /// SimGrid host file (--mpi smpi; default: the platform's hosts in order).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Extra SimGrid options, e.g. --smpi-cfg smpi/coll-selector:mpich (repeatable).
    #[arg(long = "smpi-cfg", value_name = "KEY:VALUE")]
    pub smpi_cfg: Vec<String>,
    /// Seconds before the run is killed.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Print the skeleton's JSON report instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Rust skeletons: cargo's target folder [default: DIR/target/<mpi>]. The mpi crate does not
    /// rebuild when the MPI library changes, so use one folder per library; skeletons sharing a
    /// folder need different names (`mpiskel build --name`), which name their binaries.
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// An option for the launcher (mpirun), e.g. --mpirun-arg=--mca --mpirun-arg=btl
    /// (repeatable).
    #[arg(long = "mpirun-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub mpirun_args: Vec<String>,
    /// Ignore the compute scale or reference rate `mpiskel retune` stored in the folder.
    #[arg(long)]
    pub untuned: bool,
    /// Arguments for the skeleton itself (e.g. --iterations 40, --compute-scale 1.1).
    #[arg(last = true)]
    pub skeleton_args: Vec<String>,
}

impl RunArgs {
    /// The library's options for this run.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            dir: self.dir.clone(),
            np: self.np,
            mpi: self.mpi.into(),
            platform: self.platform.clone(),
            hostfile: self.hostfile.clone(),
            smpi_cfg: self.smpi_cfg.clone(),
            timeout: self.timeout,
            target_dir: self.target_dir.clone(),
            mpirun_args: self.mpirun_args.clone(),
            untuned: self.untuned,
            skeleton_args: self.skeleton_args.clone(),
            prefix: Vec::new(),
        }
    }
}

/// MPI implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mpi {
    /// OpenMPI (mpicc.openmpi, mpirun.openmpi).
    Openmpi,
    /// MPICH (mpicc.mpich, mpirun.mpich).
    Mpich,
    /// SimGrid SMPI (smpicc, smpirun): a simulated platform.
    Smpi,
}

impl From<Mpi> for mpiskel_make::Mpi {
    fn from(m: Mpi) -> Self {
        match m {
            Mpi::Openmpi => mpiskel_make::Mpi::Openmpi,
            Mpi::Mpich => mpiskel_make::Mpi::Mpich,
            Mpi::Smpi => mpiskel_make::Mpi::Smpi,
        }
    }
}

pub fn run(c: RunCommand) -> Result<ExitCode> {
    if c.repeat > 1 {
        return repeated(&c.run, c.repeat);
    }
    let a = c.run;
    let (r, _) = run_skeleton(&a.options(), &Stages::bars_only())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} on {} ({} ranks): skeleton ran {:.6} s",
        r.skeleton,
        mpiskel_make::Mpi::from(a.mpi).name(),
        r.ranks,
        r.skeleton_s
    );
    println!(
        "  predicted application time: {:.6} s by phase, {:.6} s by ratio (×{:.4})",
        r.predicted_s, r.predicted_ratio_s, r.factor
    );
    println!("  recorded application time:  {:.6} s (where the trace was made)", r.recorded_app_s);
    for p in &r.phases {
        let restored = if p.restored_s > 0.0 {
            format!(" ({:.6} s of removed computation added back, per iteration run)", p.restored_s)
        } else {
            String::new()
        };
        let warmup = if p.warmup > 0 {
            format!(" (with the {} warm-up iteration(s) skipped, priced as its own)", p.warmup)
        } else {
            String::new()
        };
        println!(
            "  {:<12} {:>6}/{:<6} iterations  {:.6} s → {:.6} s{restored}{warmup}",
            p.name, p.run, p.full, p.seconds, p.predicted_s
        );
    }
    let figures = Figures {
        skeleton_s: r.skeleton_s,
        predicted_s: r.predicted_s,
        predicted_ratio_s: r.predicted_ratio_s,
    };
    if let Some(note) = disagreement_note(&figures, r.factor, r.recorded_app_s) {
        println!("{note}");
    }
    if let Some(note) = r.node.as_ref().and_then(shared_processors_note) {
        println!("{note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the two predictions differ by more than half of the smaller: what the prediction by
/// ratio rests on, and which one to read. The ratio assumes the skeleton runs for the time the
/// build estimated from the trace (the factor's denominator); where the skeleton's cuts remove
/// what that estimate kept — the waiting of ranks on computation that the compute cut shortens,
/// or time the traced ranks spent off the processor (descheduled, or writing files) — it runs
/// far shorter, and only the prediction by phase, each phase's own measured time, follows
/// (ABINIT's skeleton: 0.06 s run against 1.32 s estimated; 5.8 s by phase against 6.2 s, 0.26 s
/// by ratio).
fn disagreement_note(f: &Figures, factor: f64, recorded_s: f64) -> Option<String> {
    let (lo, hi) = (f.predicted_s.min(f.predicted_ratio_s), f.predicted_s.max(f.predicted_ratio_s));
    if !(lo > 0.0 && hi > 1.5 * lo && factor > 0.0) {
        return None;
    }
    Some(format!(
        "note: the predictions differ by ×{:.1}, as the skeleton's run ({:.6} s) differs from the \
         build's estimate of it ({:.6} s, the recorded time / ×{factor:.4}), on which the \
         prediction by ratio rests; the prediction by phase rests on each phase's own measured \
         time, and is the one to read where the skeleton's cuts remove what that estimate kept \
         (ranks waiting on computation that is cut, time the traced ranks spent off the \
         processor)",
        hi / lo,
        f.skeleton_s,
        recorded_s / factor,
    ))
}

/// Where a node's ranks outnumber its processors, what a single run is worth: ranks that spin
/// while they wait are seldom moved from the processor they started on, so a short run keeps
/// whichever placement it began with (LAMMPS crack's skeleton on 4 ranks and 2 cores predicted
/// 1.58–1.64 s in four runs and 1.92–2.25 s in four others, as the application itself took
/// 1.45–1.52 or 1.78–1.81 s).
fn shared_processors_note(node: &mpiskel_make::run::NodeReport) -> Option<String> {
    if node.cores <= 0.0 || f64::from(node.ranks) <= node.cores {
        return None;
    }
    let cores = if node.cores.fract() == 0.0 {
        format!("{}", node.cores)
    } else {
        format!("{:.2}", node.cores)
    };
    let plural = if node.cores == 1.0 { "" } else { "s" };
    Some(format!(
        "note: the {} ranks share {cores} processor{plural} here: one run this short keeps the \
         placement of ranks on processors it began with, and two runs can differ by a third; \
         `--repeat 5` gives the median of five runs",
        node.ranks
    ))
}

/// The three figures of a run that `--repeat` summarizes.
#[derive(serde::Serialize)]
struct Figures {
    skeleton_s: f64,
    predicted_s: f64,
    predicted_ratio_s: f64,
}

/// `mpiskel run --repeat n`: n runs, run k with `--seed k` unless the skeleton's arguments
/// name a seed; each figure's median (the middle run's, or the mean of the two middle ones),
/// smallest and largest.
fn repeated(a: &RunArgs, n: u32) -> Result<ExitCode> {
    let seeded = a.skeleton_args.iter().any(|x| x == "--seed" || x.starts_with("--seed="));
    let mut runs = Vec::new();
    for k in 0..n {
        let mut o = a.options();
        if !seeded {
            o.skeleton_args.extend(["--seed".to_owned(), k.to_string()]);
        }
        let (r, _) = run_skeleton(&o, &Stages::bars_only())?;
        if !a.json {
            println!(
                "run {}/{n}: skeleton ran {:.6} s; predicted {:.6} s by phase, {:.6} s by ratio",
                k + 1,
                r.skeleton_s,
                r.predicted_s,
                r.predicted_ratio_s
            );
        }
        runs.push(r);
    }
    let stat = |f: &dyn Fn(&mpiskel_make::run::RunReport) -> f64| -> (f64, f64, f64) {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        let m = v.len();
        let median = if m % 2 == 1 { v[m / 2] } else { (v[m / 2 - 1] + v[m / 2]) / 2.0 };
        (median, v[0], v[m - 1])
    };
    let (s, p, q) =
        (stat(&|r| r.skeleton_s), stat(&|r| r.predicted_s), stat(&|r| r.predicted_ratio_s));
    let pick = |i: usize| {
        let at = |t: (f64, f64, f64)| [t.0, t.1, t.2][i];
        Figures { skeleton_s: at(s), predicted_s: at(p), predicted_ratio_s: at(q) }
    };
    if a.json {
        let doc = serde_json::json!({
            "runs": runs,
            "median": pick(0),
            "min": pick(1),
            "max": pick(2),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let spread = |t: (f64, f64, f64)| {
        if t.0 > 0.0 {
            format!("{:+.1} / {:+.1} %", 100.0 * (t.1 / t.0 - 1.0), 100.0 * (t.2 / t.0 - 1.0))
        } else {
            "–".to_owned()
        }
    };
    let r0 = &runs[0];
    println!(
        "{} on {} ({} ranks), median of {n} runs: skeleton ran {:.6} s ({})",
        r0.skeleton,
        mpiskel_make::Mpi::from(a.mpi).name(),
        r0.ranks,
        s.0,
        spread(s)
    );
    println!(
        "  predicted application time: {:.6} s by phase ({}), {:.6} s by ratio ({})",
        p.0,
        spread(p),
        q.0,
        spread(q)
    );
    println!("  recorded application time:  {:.6} s (where the trace was made)", r0.recorded_app_s);
    if let Some(note) = disagreement_note(&pick(0), r0.factor, r0.recorded_app_s) {
        println!("{note}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::{disagreement_note, Figures};

    /// Predictions within half of each other say nothing more; ABINIT's, ×22 apart, name the
    /// skeleton's run and the build's estimate behind the ratio.
    #[test]
    fn predictions_far_apart_say_which_to_read() {
        let near = Figures { skeleton_s: 1.0, predicted_s: 10.0, predicted_ratio_s: 14.0 };
        assert_eq!(disagreement_note(&near, 14.0, 13.0), None);
        let far = Figures { skeleton_s: 0.057862, predicted_s: 5.82, predicted_ratio_s: 0.2684 };
        let note = disagreement_note(&far, 4.6382, 6.129971).unwrap();
        assert!(note.starts_with("note: the predictions differ by ×21.7"), "{note}");
        assert!(note.contains("(0.057862 s)") && note.contains("(1.321627 s,"), "{note}");
        assert!(
            note.contains("read the prediction by phase")
                || note.contains("prediction by phase rests")
        );
    }
}
