//! `mpiskel export`: a trace in another format.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};

/// Write a trace (any format `mpiskel inspect` reads) as a SimGrid time-independent trace, for
/// SimGrid to replay on any platform it models (`smpirun -replay DIR/trace.txt`).
///
/// Writes one action file per rank (`rank<r>.txt`) and the index `trace.txt` naming them, sizes
/// in bytes; the computation between calls becomes `compute` actions of its recorded flops, or
/// of its time at --flops flop/s. Polling loops are folded into the completions they waited for
/// and calls nothing matches are left out, as `mpiskel build` does. Refused, naming the rank and
/// call: collectives on other communicators than MPI_COMM_WORLD and non-blocking collectives
/// (the format has neither).
///
/// Examples:
///   mpiskel export --ti ring.ti ring.trace
///   cd ring.ti && smpirun -np 4 -platform cluster.xml -hostfile hosts.txt -replay trace.txt \
///       /usr/lib/x86_64-linux-gnu/simgrid/smpireplaymain
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// The trace (any format `mpiskel inspect` reads).
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
}

pub fn export(a: ExportArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.flops > 0.0 && a.flops.is_finite(), "--flops must be a positive number");
    let index = a.ti.join("trace.txt");
    anyhow::ensure!(
        a.force || !index.exists(),
        "{} exists; use --force to replace it",
        index.display()
    );
    let opts = ReadOptions { ti: TiOptions { flops_per_second: a.flops } };
    let mut set = TraceSet::open(&a.trace, &opts)?;
    let polls = set.fold_polls();
    let local = set.drop_local_calls();
    let written = mpiskel_trace::ti_export::write_ti(&set.path, &set.ranks, &a.ti, a.flops)?;
    let calls: usize = set.ranks.iter().map(|r| r.events.len()).sum();
    println!(
        "{}: {} ranks, {calls} calls as SimGrid time-independent actions",
        written.display(),
        set.n_ranks()
    );
    if polls.polls > 0 {
        println!("note: {} polling calls folded into the completions they waited for", polls.polls);
    }
    if local.calls() > 0 {
        println!("note: {} calls nothing in the trace matches were left out", local.calls());
    }
    Ok(ExitCode::SUCCESS)
}
