//! `mpiskel trace` (record a run with the PMPI tracer) and `mpiskel tracer` (build the tracer).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::Args;
use mpiskel_trace::native::{self, NativeReader};
use mpiskel_trace::tracer::{self, Mpi};
use mpiskel_trace::{Rank, RunMeta};

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
///   mpiskel trace --cpu-time -o app.trace -- mpirun --oversubscribe -np 16 ./app
///   mpiskel trace --time-only -o app.time -- mpirun -np 8 ./app input.dat
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
    /// Record the processor time of each compute gap (thread CPU clock) beside its wall time.
    /// Use it when ranks share cores (more ranks than cores, or a loaded machine): a skeleton
    /// then computes for the time the rank ran, not the time it waited for a core. The clock is
    /// read only around gaps and calls of 20 µs or more (a read is a system call, about 0.6 µs
    /// in a virtual machine); shorter ones are taken to have run throughout.
    #[arg(long)]
    cpu_time: bool,
    /// Record only MPI_Init and MPI_Finalize: the application's own time, without the overhead
    /// of recording its calls (which grows with the calls it makes). Compare a skeleton's
    /// prediction with this; `mpiskel inspect` shows it as the span.
    #[arg(long, conflicts_with_all = ["instructions", "cpu_time"])]
    time_only: bool,
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
    let out = absolute(&a.output)?;
    if out.exists() {
        if !a.force {
            bail!(
                "{} exists; choose another directory or pass --force to replace it",
                out.display()
            );
        }
        if !out.join(native::rank_file_name(Rank(0))).exists() && out.read_dir()?.next().is_some() {
            bail!(
                "{} is not empty and is not a trace directory; refusing to replace it",
                out.display()
            );
        }
    }
    let mpi = match a.mpi {
        Some(m) => m,
        None => tracer::detect_mpi(&a.command).with_context(|| {
            format!(
                "cannot tell which MPI library `{}` uses; pass --mpi openmpi or --mpi mpich",
                a.command[0]
            )
        })?,
    };
    let lib = tracer::build(mpi, &tracer::cache_dir())?;

    let parent = out.parent().context("output directory has no parent")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let name =
        out.file_name().context("output directory has no name")?.to_string_lossy().into_owned();
    let tmp = parent.join(format!(".{name}.recording-{}", std::process::id()));
    let partial = parent.join(format!("{name}.partial"));
    let _ = std::fs::remove_dir_all(&tmp);
    // Interrupted (Ctrl-C, SIGTERM), the traced run is killed and the folder removed.
    mpiskel_validate::harness::install_signal_handler()?;
    let guard = mpiskel_validate::harness::TempPath::register(&tmp)?;
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;

    let what = tracer::Recording {
        instructions: a.instructions,
        cpu_time: a.cpu_time,
        time_only: a.time_only,
    };
    let plan = tracer::launch(&a.command, mpi, &lib, &tmp, what);
    eprintln!("mpiskel: tracing with the {mpi} tracer: {}", plan.argv.join(" "));
    let start_unix =
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let started = Instant::now();
    let mut cmd = Command::new(&plan.argv[0]);
    cmd.args(&plan.argv[1..]).envs(plan.env.iter().map(|(k, v)| (k, v)));
    let status = mpiskel_validate::harness::status_of_child(cmd, &plan.argv[0])?;
    let wall_s = started.elapsed().as_secs_f64();

    let fail = |why: String| -> Result<ExitCode> {
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::rename(&tmp, &partial).ok();
        // Moved aside on purpose: what was recorded stays for the user to look at.
        bail!("{why}; what was recorded is in {}", partial.display())
    };
    if !status.success() {
        return fail(format!("the traced command failed ({status})"));
    }
    let first = tmp.join(native::rank_file_name(Rank(0)));
    if !first.is_file() {
        let _ = std::fs::remove_dir_all(&tmp);
        bail!(
            "no rank wrote a trace: does the command run an MPI program linked with {mpi} \
             (and does the launcher pass LD_PRELOAD on)?"
        );
    }
    let header = NativeReader::open(&first)?.header().clone();
    let n_ranks = header.info.n_ranks;
    let mut hosts = Vec::with_capacity(n_ranks as usize);
    for r in 0..n_ranks {
        let file = tmp.join(native::rank_file_name(Rank(r)));
        match NativeReader::open(&file) {
            Ok(reader) => hosts.push(reader.header().info.host.clone().unwrap_or_default()),
            Err(e) => return fail(format!("rank {r}: {e}")),
        }
        // A complete file ends with the footer; reading it through proves it.
        if let Err(e) = native::read_rank_file(&file) {
            return fail(e.to_string());
        }
    }
    let meta = RunMeta {
        meta_version: 1,
        command: a.command.clone(),
        ranks: n_ranks,
        hosts,
        mpi: mpi.name().to_owned(),
        mpi_version: header.info.mpi_library.clone().unwrap_or_default(),
        start_unix_s: start_unix,
        wall_s,
        exit_code: status.code().unwrap_or(0),
        instructions: header.info.has_instructions,
        cpu_time: header.info.has_cpu_time,
        time_only: a.time_only,
        mpiskel_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    meta.write(&tmp.join("meta.json"))?;
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    std::fs::rename(&tmp, &out)
        .with_context(|| format!("renaming {} to {}", tmp.display(), out.display()))?;
    guard.keep();
    let _ = std::fs::remove_dir_all(&partial);
    if a.instructions && !header.info.has_instructions {
        eprintln!(
            "mpiskel: note: the kernel refused instruction counting; compute gaps have times only"
        );
    }
    eprintln!("mpiskel: {} ranks traced in {wall_s:.2} s into {}", n_ranks, out.display());
    Ok(ExitCode::SUCCESS)
}

fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir()?.join(p) })
}
