//! `mpiskel trace` (record a run with the PMPI tracer) and `mpiskel tracer` (build the tracer).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use mpiskel_make::record::{record, RecordOptions};
use mpiskel_trace::tracer::{self, Mpi};

/// Record an MPI run: every rank's MPI calls, into a trace directory.
///
/// Runs the command after `--` with the PMPI tracer preloaded into every MPI process (the
/// tracer is built for the MPI library the command uses, once, and cached). The directory
/// receives one `rank-<k>.mpt` file per rank and a `meta.json`. It is written under a temporary
/// name and renamed when every rank's file is complete; if the run fails, what was recorded is
/// left in `<DIR>.partial` and nothing is written at DIR.
///
/// Examples:
///   mpiskel trace -o ring.trace -- mpirun.openmpi -np 4 ./ring
///   mpiskel trace -o lu.trace -- mpiexec.mpich -n 16 ./lu.C.16
///   mpiskel trace --instructions -o app.trace -- mpirun -np 8 ./app input.dat
///   mpiskel trace --wall-time -o app.trace -- mpirun -np 8 ./app   (every rank on a core of its own)
///   mpiskel trace --time-only -o app.time -- mpirun -np 8 ./app input.dat
///   mpiskel trace --runs 3 -o app.trace -- mpirun -np 8 ./app input.dat
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct TraceArgs {
    /// Trace directory to create.
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// MPI library the command uses (default: detected from the launcher or the program).
    #[arg(long, value_name = "openmpi|mpich", value_parser = parse_mpi)]
    mpi: Option<Mpi>,
    /// Count the user-space instructions of each compute gap (perf_event_open); recorded as
    /// absent where the kernel does not allow it.
    #[arg(long)]
    instructions: bool,
    /// Record the processor time of each compute gap (thread CPU clock) beside its wall time:
    /// the default. A skeleton then computes for the time the rank ran, not the time it waited
    /// for a core, which is what it replays faithfully whether or not the ranks share cores
    /// (more ranks than cores, or a loaded machine): traced on 4 ranks on 2 cores, a k-point
    /// DFT code's prediction was +80 % from wall time and -1 % from processor time. The clock
    /// is read after gaps and calls of 20 µs or more and every 20 µs otherwise (a read is a
    /// system call, about 0.6 µs in a virtual machine); shorter gaps are taken to have run
    /// throughout, and what a read finds missing is taken from the calls (which yield the
    /// processor while they wait) before the gap. Each thread's clock is its own: where
    /// several threads call MPI, a call's gap is the processor time its thread had since that
    /// thread's last call, so that the work of every thread is counted once (PT-Scotch's two
    /// threads per rank). Kept for scripts written when it was not the default.
    #[arg(long, conflicts_with = "wall_time")]
    cpu_time: bool,
    /// Record wall time only (no processor time): a skeleton computes for the wall time of
    /// each gap, time spent waiting for a core included. Right only where every rank had a
    /// core of its own and nothing else ran.
    #[arg(long)]
    wall_time: bool,
    /// Record only MPI_Init and MPI_Finalize: the application's own time, without the overhead
    /// of recording its calls (which grows with the calls it makes). Compare a skeleton's
    /// prediction with this; `mpiskel inspect` shows it as the span.
    #[arg(long, conflicts_with_all = ["instructions", "cpu_time", "wall_time"])]
    time_only: bool,
    /// Record the run N times and keep the trace of median application time (MPI_Init to
    /// MPI_Finalize on the slowest rank); `meta.json` lists every run's time. A skeleton replays
    /// the run it is made from, so on a machine whose speed varies from run to run (a shared
    /// or virtual machine), one run may stand for a slow or a quiet spell; the median run
    /// stands for a typical one. The N traces are kept beside DIR until the last run ends.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Replace DIR if it exists.
    #[arg(long)]
    force: bool,
    /// The command to trace: an MPI launcher with its arguments, or an MPI program.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Build the PMPI tracer library for an MPI implementation and print its path.
///
/// Useful to link or preload the tracer by hand (LD_PRELOAD=<path>, with MPISKEL_TRACE_DIR
/// naming an existing directory). `mpiskel trace` builds it on demand.
///
/// Example:
///   mpiskel tracer --mpi mpich
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct TracerArgs {
    /// MPI implementation to build for.
    #[arg(long, value_name = "openmpi|mpich", value_parser = parse_mpi, default_value = "openmpi")]
    mpi: Mpi,
    /// Directory for the library (default: the cache, see MPISKEL_CACHE).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

fn parse_mpi(s: &str) -> Result<Mpi, String> {
    Mpi::parse(s).ok_or_else(|| format!("unknown MPI library {s:?} (expected openmpi or mpich)"))
}

pub fn tracer(a: TracerArgs) -> Result<ExitCode> {
    let dir = a.dir.unwrap_or_else(tracer::cache_dir);
    let lib = tracer::build(a.mpi, &dir)?;
    println!("{}", lib.display());
    Ok(ExitCode::SUCCESS)
}

pub fn trace(a: TraceArgs) -> Result<ExitCode> {
    let o = RecordOptions {
        output: a.output,
        mpi: a.mpi,
        instructions: a.instructions,
        cpu_time: !a.wall_time && !a.time_only,
        time_only: a.time_only,
        force: a.force,
        runs: a.runs,
        command: a.command,
    };
    let r = record(&o, &Said)?;
    if r.instructions_refused {
        eprintln!(
            "mpiskel: note: the kernel refused instruction counting; compute gaps have times only"
        );
    }
    eprintln!("mpiskel: {} ranks traced in {:.2} s into {}", r.ranks, r.wall_s, r.dir.display());
    Ok(ExitCode::SUCCESS)
}

/// The recording's lines on stderr as `mpiskel trace` has always printed them.
struct Said;

impl mpiskel_make::Observer for Said {
    fn line(&self, what: &str) {
        eprintln!("mpiskel: {what}");
    }
    fn busy(&self, _: &str) -> mpiskel_make::Busy {
        mpiskel_make::Busy::none()
    }
}
