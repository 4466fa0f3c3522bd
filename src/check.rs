//! `mpiskel check`: a skeleton's fidelity panel, made again against its trace, around any
//! platform.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Args;
use mpiskel_cut::fidelity::{describe, table, Score, DEFAULT_MAX_ERROR};
use mpiskel_simulate::fidelity::{app_times, check, Panel};
use mpiskel_simulate::platform::{placement, Platform};
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};

/// Check a skeleton against its trace on a panel of modelled platforms.
///
/// Simulates the application's trace and the skeleton — as it runs, priced by its runtime's own
/// by-phase formula — on a reference platform and its what-ifs (bandwidth ÷10 and ÷100,
/// latency ×10, processors at half speed, four ranks to a host), and prints, per platform, the
/// application's time, the skeleton's, its prediction and the error. This is the check every
/// `mpiskel build` makes (its panel is in skeleton.json as `fidelity`); here it can be made
/// around another platform: the cluster you mean to run on.
///
/// The reference is --platform (a SimGrid cluster file or mpiskel's TOML, with --hostfile),
/// else a cluster inferred from the trace: one host per rank, 10 Gb/s, 1 µs, hosts at --flops.
/// Exits 1 where the worst error is over --max-error.
///
/// Examples:
///   mpiskel check bt.skel bt.W.16/trace.txt
///   mpiskel check bt.skel bt.W.16/trace.txt --platform bw5MBps.xml --hostfile hostfile.txt
///   mpiskel check app.skel app.trace --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CheckArgs {
    /// The skeleton folder (written by `mpiskel build`).
    skeleton: PathBuf,
    /// The trace it was built from.
    trace: PathBuf,
    /// The reference platform (default: the cluster inferred from the trace).
    #[arg(long, value_name = "FILE")]
    platform: Option<PathBuf>,
    /// With --platform: where the ranks run (SMPI's hostfile format).
    #[arg(long, value_name = "FILE", requires = "platform")]
    hostfile: Option<PathBuf>,
    /// For SimGrid traces: the compute speed they were recorded at, flop/s (as for `build`).
    #[arg(long, value_name = "FLOP/S", default_value_t = 1e9)]
    flops: f64,
    /// The largest error, in percent, the skeleton may show on any platform.
    #[arg(long, value_name = "PERCENT", default_value_t = 100.0 * DEFAULT_MAX_ERROR)]
    max_error: f64,
    /// Print the rows as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: CheckArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.flops > 0.0 && a.flops.is_finite(), "--flops must be a positive number");
    let doc = mpiskel_emit::document::read(&a.skeleton)?.with_context(|| {
        format!("{}: not a skeleton folder (no skeleton.json)", a.skeleton.display())
    })?;
    let reference = match &a.platform {
        Some(p) => {
            let pf = Platform::open(p)?;
            let place = placement(&pf, a.hostfile.as_deref(), doc.n_ranks as usize)?;
            Some((pf, place))
        }
        None => None,
    };
    let opts = ReadOptions { ti: TiOptions { flops_per_second: a.flops } };
    let (mut set, _) = {
        let _bar = crate::progress::Stages::bars_only().reading("reading");
        TraceSet::open_folded(&a.trace, &opts)?
    };
    anyhow::ensure!(
        set.n_ranks() == doc.n_ranks as usize,
        "{} has {} ranks, the skeleton {} was made for {}",
        a.trace.display(),
        set.n_ranks(),
        a.skeleton.display(),
        doc.n_ranks
    );
    set.drop_local_calls();
    set.align_collectives();
    let panel = Panel::around(reference, set.n_ranks(), a.flops);
    let app = app_times(&set.ranks, &panel)?;
    drop(set);
    let rows = check(&doc.program, doc.scaling.compute_shrink, &panel, &app)?;
    let score = Score::of(&rows);
    if a.json {
        let out = serde_json::json!({ "fidelity": rows, "score": score });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", table(&rows));
        println!("{}", describe(&rows));
    }
    Ok(if score.within(a.max_error / 100.0) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
