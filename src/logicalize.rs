//! `mpiskel logicalize`: a trace → its topology and logical trace.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use mpiskel_logicalize::{logicalize, LogicalComm, LogicalPeer, LogicalTrace, Structure};
use mpiskel_report::svg::heatmap_svg;
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};
use serde::{Deserialize, Serialize};

/// Find the application's communication topology and write its logical trace (Xu & Subhlok 2008, §2).
///
/// Builds the communication matrix, identifies the topology by Xu & Subhlok's decision tree (simple
/// tests → graph spectrum → isomorphism, which gives each rank's coordinates), renames every
/// peer as a direction (NORTH, EAST, +x, LEFT, …), and groups ranks into process classes, folding
/// edge ranks of a non-periodic grid into the interior class. Prints the topology, the survivors
/// of each stage with their times, and the classes.
///
/// Examples:
///   mpiskel logicalize lu.S.16/trace.txt
///   mpiskel logicalize app.trace -o app.logical.json --svg app.matrix.svg
///   mpiskel inspect app.logical.json
#[derive(Debug, Args)]
#[command(
    verbatim_doc_comment,
    about = "Find the communication topology and write the logical trace (Xu & Subhlok 2008, §2)."
)]
pub struct LogicalizeArgs {
    /// The trace (any format `mpiskel inspect` reads).
    path: PathBuf,
    /// Write the logical trace as JSON to FILE.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the communication matrix as an SVG heatmap to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Print the JSON document instead of the summary.
    #[arg(long)]
    json: bool,
    /// For SimGrid traces: compute speed in flop/s.
    #[arg(long, value_name = "FLOP/S", default_value_t = 1e9)]
    flops: f64,
}

/// The document `mpiskel logicalize -o` writes.
#[derive(Debug, Serialize, Deserialize)]
pub struct LogicalDocument {
    /// Always `"mpiskel-logical-trace"`.
    pub kind: String,
    /// Layout version (1).
    pub version: u32,
    /// The trace it came from.
    pub trace: String,
    /// Seconds for reading the trace.
    pub read_seconds: f64,
    /// Seconds for logicalization (matrix, identification, classes).
    pub seconds: f64,
    /// The logical trace.
    pub logical: LogicalTrace,
}

pub const KIND: &str = "mpiskel-logical-trace";

pub fn run(a: LogicalizeArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.flops > 0.0 && a.flops.is_finite(), "--flops must be a positive number");
    let t0 = Instant::now();
    let bars = crate::progress::Stages::bars_only();
    // Polls folded as the trace is read.
    let (mut set, _) = {
        let _bar = bars.reading("reading");
        let opts = ReadOptions { ti: TiOptions { flops_per_second: a.flops } };
        TraceSet::open_folded(&a.path, &opts)?
    };
    let read_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    set.drop_local_calls();
    set.align_collectives();
    let logical = {
        let _spinner = bars.spinner("finding the topology and the process classes");
        logicalize(&set)
    };
    let seconds = t1.elapsed().as_secs_f64();
    let doc = LogicalDocument {
        kind: KIND.into(),
        version: 1,
        trace: a.path.display().to_string(),
        read_seconds,
        seconds,
        logical,
    };
    if let Some(out) = &a.output {
        crate::compress::write_atomic(out, &serde_json::to_string(&doc)?)?;
    }
    if let Some(svg) = &a.svg {
        let title = format!("{} — bytes per pair", doc.trace);
        crate::compress::write_atomic(svg, &heatmap_svg(&doc.logical.matrix, &title)?)
            .with_context(|| format!("writing {}", svg.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", render(&doc));
    }
    Ok(ExitCode::SUCCESS)
}

fn peer_name(p: &Option<LogicalPeer>) -> String {
    match p {
        Some(LogicalPeer::Dir(d)) => d.name.to_string(),
        Some(LogicalPeer::Null) => "NULL".into(),
        Some(LogicalPeer::Any) => "ANY".into(),
        Some(LogicalPeer::Exception(r)) => format!("rank {r}!"),
        None => String::new(),
    }
}

pub fn render(d: &LogicalDocument) -> String {
    let l = &d.logical;
    let id = &l.identification;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "logical trace  {} ({} ranks; read {:.3} s, logicalized {:.3} s)",
        d.trace, l.n_ranks, d.read_seconds, d.seconds
    );
    let _ = writeln!(o, "topology       {}", l.topology_name());
    match &id.structure {
        Structure::Topology { topology, alternatives, rule, .. } => {
            let _ = writeln!(
                o,
                "               dims {:?}, periodic {:?}; chosen as {rule}",
                topology.dims, topology.periods
            );
            if !alternatives.is_empty() {
                let _ = writeln!(o, "               also isomorphic: {}", alternatives.join(", "));
            }
        }
        Structure::General => {
            let _ = writeln!(
                o,
                "               no catalogue topology matches: explicit neighbour lists"
            );
        }
        Structure::NoPointToPoint => {
            let _ = writeln!(o, "               the ranks exchange no point-to-point messages");
        }
    }
    let _ = writeln!(
        o,
        "matrix         {} communicating pairs, {} edges kept, {} left out as insignificant",
        l.matrix.pairs.len(),
        id.edges,
        l.dropped_pairs
    );
    for s in &id.stages {
        let shown: Vec<&str> = s.candidates.iter().take(6).map(String::as_str).collect();
        let more = s.candidates.len().saturating_sub(6);
        let _ = writeln!(
            o,
            "  {:<13} {:>8.4} s  {} left{}{}  ({})",
            s.name,
            s.seconds,
            s.candidates.len(),
            if shown.is_empty() { String::new() } else { format!(": {}", shown.join("; ")) },
            if more > 0 { format!(" …+{more}") } else { String::new() },
            s.method
        );
    }
    if matches!(id.structure, Structure::Topology { .. }) {
        let show = id.coords.len().min(16);
        let m: Vec<String> = (0..show).map(|r| format!("{r}→{:?}", id.coords[r])).collect();
        let _ = writeln!(
            o,
            "mapping        {}{}",
            m.join(" "),
            if id.coords.len() > show { " …" } else { "" }
        );
    }
    let dirs: Vec<&str> = l.directions.iter().map(|d| &*d.name).collect();
    let _ = writeln!(
        o,
        "directions     {}",
        if dirs.is_empty() { "none".into() } else { dirs.join(" ") }
    );
    let _ = writeln!(o, "classes        {}", l.classes.len());
    for (i, c) in l.classes.iter().enumerate() {
        let ranks = |v: &[u32]| {
            let s: Vec<String> = v.iter().take(12).map(ToString::to_string).collect();
            format!("{}{}", s.join(","), if v.len() > 12 { ",…" } else { "" })
        };
        let p2p = c.ops.iter().filter(|op| op.key.peer.is_some()).count();
        let subcomms =
            c.ops.iter().filter(|op| matches!(op.key.comm, LogicalComm::Slice { .. })).count();
        let guarded = c.ops.iter().filter(|op| !op.absent.is_empty()).count();
        let _ = writeln!(
            o,
            "  class {i}: {} ranks [{}]{}; {} calls ({} point-to-point{}, {} on rows/columns/planes); first: {}",
            c.ranks.len() + c.folded.len(),
            ranks(&c.ranks),
            if c.folded.is_empty() { String::new() } else { format!(" + folded [{}]", ranks(&c.folded)) },
            c.ops.len(),
            p2p,
            if guarded == 0 { String::new() } else { format!(", {guarded} made by some ranks only") },
            subcomms,
            c.ops
                .iter()
                .filter(|op| op.key.peer.is_some())
                .take(4)
                .map(|op| format!("{} {}", op.key.op, peer_name(&op.key.peer)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if l.exceptions.calls > 0 {
        let _ = writeln!(
            o,
            "exceptions     {} calls to peers outside the topology ({} pairs)",
            l.exceptions.calls,
            l.exceptions.pairs.len()
        );
    }
    o
}
