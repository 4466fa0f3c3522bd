//! Recording a run: the command run with the PMPI tracer preloaded into every MPI process
//! (built for the MPI library the command uses, once, and cached), every rank's file read
//! through to prove it complete, `meta.json` written, and the folder renamed into place — or,
//! if the run fails, what was recorded moved aside to `<DIR>.partial`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use mpiskel_trace::native::{self, NativeReader};
use mpiskel_trace::tracer::{self, Mpi};
use mpiskel_trace::{Rank, RunMeta};

use crate::error::{bail, Context, Result};
use crate::harness;
use crate::load;
use crate::observe::Observer;

/// What to record (`mpiskel trace`'s options).
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Trace directory to create.
    pub output: PathBuf,
    /// MPI library the command uses (`None`: detected from the launcher or the program).
    pub mpi: Option<Mpi>,
    /// Count the user-space instructions of each compute gap.
    pub instructions: bool,
    /// Record the processor time of each compute gap beside its wall time.
    pub cpu_time: bool,
    /// Record only MPI_Init and MPI_Finalize.
    pub time_only: bool,
    /// Replace `output` if it exists.
    pub force: bool,
    /// Runs to record; the trace kept is the one of median application time.
    pub runs: u32,
    /// The command to trace: an MPI launcher with its arguments, or an MPI program.
    pub command: Vec<String>,
}

/// A run recorded.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The trace directory.
    pub dir: PathBuf,
    /// Ranks traced.
    pub ranks: u32,
    /// Wall-clock seconds of the run.
    pub wall_s: f64,
    /// Whether instructions were asked for but the kernel refused to count them.
    pub instructions_refused: bool,
}

/// Records `o.command` into `o.output` (`o.runs` times, keeping the run of median time);
/// `observer` is told the command line run and, over several runs, each run's time.
pub fn record(o: &RecordOptions, observer: &dyn Observer) -> Result<Recorded> {
    let out = std::path::absolute(&o.output)?;
    if out.exists() {
        if !o.force {
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
    if o.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let mpi = match o.mpi {
        Some(m) => m,
        None => tracer::detect_mpi(&o.command).with_context(|| {
            format!(
                "cannot tell which MPI library `{}` uses; pass --mpi openmpi or --mpi mpich",
                o.command[0]
            )
        })?,
    };
    let lib = tracer::build(mpi, &tracer::cache_dir())?;

    let parent = out.parent().context("output directory has no parent")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let name =
        out.file_name().context("output directory has no name")?.to_string_lossy().into_owned();
    let partial = parent.join(format!("{name}.partial"));
    // Interrupted (Ctrl-C, SIGTERM), the traced run is killed and the folders removed.
    harness::install_signal_handler()?;
    let mut runs: Vec<Run> = Vec::with_capacity(o.runs as usize);
    for k in 0..o.runs {
        let suffix = if o.runs > 1 { format!("-{k}") } else { String::new() };
        let tmp = parent.join(format!(".{name}.recording-{}{suffix}", std::process::id()));
        // A failed run drops the runs before it, and their guards remove their folders.
        let run = record_once(o, mpi, &lib, tmp, &partial, observer)?;
        if o.runs > 1 {
            observer.line(&format!(
                "run {} of {}: the application took {:.3} s",
                k + 1,
                o.runs,
                run.app_s
            ));
        }
        runs.push(run);
    }
    // The run of median time stands for the others: one run alone may have met a slow (or a
    // quiet) spell of the machine, and the skeleton replays the run it is made from.
    let times: Vec<f64> = runs.iter().map(|r| r.app_s).collect();
    let kept = median_index(&times);
    let mut keep = runs.swap_remove(kept);
    drop(runs); // their guards remove the other runs' folders
    if o.runs > 1 {
        keep.meta.runs_app_s = times;
        keep.meta.kept_run = Some(kept);
        observer.line(&format!(
            "kept run {} of {} ({:.3} s), the median",
            kept + 1,
            o.runs,
            keep.app_s
        ));
    }
    keep.meta.write(&keep.dir.join("meta.json"))?;
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    std::fs::rename(&keep.dir, &out)
        .with_context(|| format!("renaming {} to {}", keep.dir.display(), out.display()))?;
    keep.guard.keep();
    let _ = std::fs::remove_dir_all(&partial);
    Ok(Recorded {
        dir: out,
        ranks: keep.meta.ranks,
        wall_s: keep.meta.wall_s,
        instructions_refused: o.instructions && !keep.meta.instructions,
    })
}

/// The index of the median of `times` (of an even number, the earlier of the two middle runs).
fn median_index(times: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..times.len()).collect();
    order.sort_by(|&a, &b| times[a].total_cmp(&times[b]).then(a.cmp(&b)));
    let n = order.len();
    if n % 2 == 1 {
        order[n / 2]
    } else {
        order[n / 2 - 1].min(order[n / 2])
    }
}

/// One run recorded, complete, under its temporary name.
struct Run {
    dir: PathBuf,
    meta: RunMeta,
    /// The application's time: the slowest rank's span from `MPI_Init` to `MPI_Finalize`.
    app_s: f64,
    /// Removes `dir` if the recording is interrupted or given up.
    guard: harness::TempPath,
}

/// Runs the command once with the tracer into `tmp`, and checks every rank's file; a failed
/// run's files are moved to `partial`.
fn record_once(
    o: &RecordOptions,
    mpi: Mpi,
    lib: &std::path::Path,
    tmp: PathBuf,
    partial: &std::path::Path,
    observer: &dyn Observer,
) -> Result<Run> {
    let _ = std::fs::remove_dir_all(&tmp);
    let guard = harness::TempPath::register(&tmp)?;
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;

    let what = tracer::Recording {
        instructions: o.instructions,
        cpu_time: o.cpu_time,
        time_only: o.time_only,
    };
    let plan = tracer::launch(&o.command, mpi, lib, &tmp, what);
    observer.line(&format!("tracing with the {mpi} tracer: {}", plan.argv.join(" ")));
    let start_unix =
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let (node_before, own_before) = (load::node_times(), load::children_cpu_s());
    let started = Instant::now();
    let mut cmd = Command::new(&plan.argv[0]);
    cmd.args(&plan.argv[1..]).envs(plan.env.iter().map(|(k, v)| (k, v)));
    let status = harness::status_of_child(cmd, &plan.argv[0])?;
    let wall_s = started.elapsed().as_secs_f64();
    let (node_after, own_after) = (load::node_times(), load::children_cpu_s());

    let fail = |why: String| -> Result<Run> {
        let _ = std::fs::remove_dir_all(partial);
        std::fs::rename(&tmp, partial).ok();
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
    let mut app_s = 0.0f64;
    for r in 0..n_ranks {
        let file = tmp.join(native::rank_file_name(Rank(r)));
        match NativeReader::open(&file) {
            Ok(reader) => hosts.push(reader.header().info.host.clone().unwrap_or_default()),
            Err(e) => return fail(format!("rank {r}: {e}")),
        }
        // A complete file ends with the footer; reading it through proves it.
        match native::read_rank_file(&file) {
            Ok(t) => app_s = app_s.max(t.app_time_s()),
            Err(e) => return fail(e.to_string()),
        }
    }
    // Only a run on this node alone has all its ranks among this process's descendants.
    let here = nix::unistd::gethostname().ok().map(|h| h.to_string_lossy().into_owned());
    let local = hosts.iter().all(|h| Some(h) == here.as_ref());
    let node_load = match (node_before, node_after, own_before, own_after) {
        (Some(a), Some(b), Some(x), Some(y)) if local => load::load_between(&a, &b, y - x),
        _ => None,
    };
    let meta = RunMeta {
        meta_version: 1,
        command: o.command.clone(),
        ranks: n_ranks,
        hosts,
        mpi: mpi.name().to_owned(),
        mpi_version: header.info.mpi_library.clone().unwrap_or_default(),
        start_unix_s: start_unix,
        wall_s,
        exit_code: status.code().unwrap_or(0),
        instructions: header.info.has_instructions,
        cpu_time: header.info.has_cpu_time,
        time_only: o.time_only,
        mpiskel_version: env!("CARGO_PKG_VERSION").to_owned(),
        node_load,
        runs_app_s: Vec::new(),
        kept_run: None,
    };
    Ok(Run { dir: tmp, meta, app_s, guard })
}

#[cfg(test)]
mod tests {
    use super::median_index;

    #[test]
    fn the_median_run_is_the_middle_one_or_the_middle_pair_s_nearer_to_their_mean() {
        assert_eq!(median_index(&[3.0]), 0);
        assert_eq!(median_index(&[3.4, 4.2, 3.5]), 2);
        assert_eq!(median_index(&[5.0, 1.0, 3.0, 9.0, 2.0]), 2);
        // Two middle runs: the earlier.
        assert_eq!(median_index(&[4.0, 3.0]), 0);
        assert_eq!(median_index(&[1.0, 3.0, 4.0, 9.0]), 1);
    }
}
