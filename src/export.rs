//! `mpiskel export`: a trace in another format.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};

use mpiskel_make::harness::TempPath;
use mpiskel_make::run::trace_under_smpi;

/// Write a trace (any format `mpiskel inspect` reads), or a skeleton's program, as a SimGrid
/// time-independent trace, for SimGrid to replay on any platform it models (`smpirun -replay
/// DIR/trace.txt`).
///
/// Writes one action file per rank (`rank<r>.txt`) and the index `trace.txt` naming them, sizes
/// in bytes; the computation between calls becomes `compute` actions of its recorded flops, or
/// of its time at --flops flop/s. Polling loops are folded into the completions they waited for
/// and calls nothing matches are left out, as `mpiskel build` does. Refused, naming the rank and
/// call: collectives on other communicators than MPI_COMM_WORLD and non-blocking collectives
/// (the format has neither).
///
/// A skeleton folder (written by `mpiskel build`, C) is run once under SimGrid SMPI with
/// SimGrid's time-independent tracing on (on --platform and --hostfile, by default the cluster
/// `mpiskel run --mpi smpi` uses, at 1 Gflop/s): every compute block becomes the flops it
/// simulated and every MPI call the skeleton makes an action, the runtime's own timing
/// collectives included, so a replay of the export takes what the skeleton takes there. That
/// trace is then read and written like any other. Needs smpicc and smpirun.
///
/// Examples:
///   mpiskel export --ti ring.ti ring.trace
///   mpiskel export --ti bt.skel.ti bt.skel
///   cd ring.ti && smpirun -np 4 -platform cluster.xml -hostfile hosts.txt -replay trace.txt \
///       /usr/lib/x86_64-linux-gnu/simgrid/smpireplaymain
#[derive(Debug, Args)]
#[command(
    verbatim_doc_comment,
    about = "Write a trace, or a skeleton's program, as a SimGrid time-independent trace."
)]
pub struct ExportArgs {
    /// The trace (any format `mpiskel inspect` reads), or a skeleton folder.
    trace: PathBuf,
    /// Write a SimGrid time-independent trace into the folder DIR.
    #[arg(long, value_name = "DIR")]
    ti: PathBuf,
    /// Flop rate at which recorded time becomes `compute` flops (and, for SimGrid input,
    /// flops become time when read).
    #[arg(long, value_name = "FLOP/S", default_value_t = 1e9)]
    flops: f64,
    /// Replace DIR's trace if it holds one.
    #[arg(long)]
    force: bool,
    /// A skeleton folder: the SimGrid platform file it runs on while it is traced.
    #[arg(long, value_name = "FILE")]
    platform: Option<PathBuf>,
    /// A skeleton folder: the SimGrid host file for --platform.
    #[arg(long, value_name = "FILE")]
    hostfile: Option<PathBuf>,
    /// Print what was written as JSON (index, ranks, calls, polls folded, calls left out).
    #[arg(long)]
    json: bool,
}

pub fn export(a: ExportArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.flops > 0.0 && a.flops.is_finite(), "--flops must be a positive number");
    let index = a.ti.join("trace.txt");
    anyhow::ensure!(
        a.force || !index.exists(),
        "{} exists; use --force to replace it",
        index.display()
    );
    let skeleton = a.trace.join("skeleton.json").is_file();
    // A skeleton: SimGrid's trace of its run, in a folder beside DIR removed when done; its
    // compute actions are flops at the 1 Gflop/s the run simulated.
    let tmp = if skeleton {
        let parent = a.ti.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        Some(parent.join(format!(".mpiskel-export-{}", std::process::id())))
    } else {
        None
    };
    let guard = tmp.as_deref().map(TempPath::register).transpose()?;
    let (input, flops) = match &tmp {
        Some(t) => {
            (trace_under_smpi(&a.trace, t, a.platform.as_deref(), a.hostfile.as_deref())?, 1e9)
        }
        None => (a.trace.clone(), a.flops),
    };
    let opts = ReadOptions { ti: TiOptions { flops_per_second: flops } };
    let (mut set, polls) = {
        let _bar = crate::progress::Stages::bars_only().reading("reading");
        TraceSet::open_folded(&input, &opts)?
    };
    let local = set.drop_local_calls();
    set.align_collectives();
    let written = mpiskel_trace::ti_export::write_ti(&set.path, &set.ranks, &a.ti, a.flops)?;
    let calls: usize = set.ranks.iter().map(|r| r.events.len()).sum();
    let what = if skeleton { " (the skeleton's program as it ran under SimGrid SMPI)" } else { "" };
    if a.json {
        drop(guard);
        let doc = serde_json::json!({
            "index": written,
            "ranks": set.n_ranks(),
            "calls": calls,
            "from_skeleton": skeleton,
            "polls_folded": polls.polls,
            "local_calls_left_out": local.calls(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{}: {} ranks, {calls} calls as SimGrid time-independent actions{what}",
        written.display(),
        set.n_ranks()
    );
    drop(guard);
    if polls.polls > 0 {
        println!("note: {} polling calls folded into the completions they waited for", polls.polls);
    }
    if local.calls() > 0 {
        println!("note: {} calls nothing in the trace matches were left out", local.calls());
    }
    Ok(ExitCode::SUCCESS)
}
