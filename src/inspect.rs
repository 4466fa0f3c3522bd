//! `mpiskel inspect`: what a trace holds.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use mpiskel_trace::summary::{summarize, TraceSummary};
use mpiskel_trace::{ReadOptions, RunMeta, TiOptions, TraceFormat, TraceSet};
use serde::Serialize;

/// Show what a trace holds: ranks, calls per kind per rank, bytes, time inside MPI and between
/// calls, and a summary of the communication matrix.
///
/// PATH is a trace directory written by `mpiskel trace`, one native rank file, a SimGrid
/// time-independent trace (its index file, a folder holding `trace.txt`, or a single action
/// file with the lines of all ranks), or an SST DUMPI trace (its `.meta` file, or the folder
/// holding it and its `<prefix>-NNNN.bin` rank files), or an OTF2 trace (its anchor file
/// `traces.otf2`, or the folder holding it; read through libotf2); or a loop nest written by `mpiskel compress -o` (main
/// loop, coverage, program); or a logical trace written by `mpiskel logicalize -o` (topology,
/// dimensions, periodicity, each stage's candidates and time, mapping, classes); or a skeleton
/// folder written by `mpiskel build` (topology, classes, phases, scaling, matching, check).
///
/// Examples:
///   mpiskel inspect ring.trace
///   mpiskel inspect --json ring.trace | jq .matrix
///   mpiskel inspect ring.trace --svg ring.matrix.svg
///   mpiskel inspect --flops 2e9 lu.S.4/trace.txt
///   mpiskel inspect lu.nest.json
///   mpiskel inspect lu.logical.json
///   mpiskel inspect bt.skel
#[derive(Debug, Args)]
#[command(
    verbatim_doc_comment,
    about = "Show what a trace holds: ranks, calls, bytes, MPI time and the communication matrix."
)]
pub struct InspectArgs {
    /// The trace.
    path: PathBuf,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// For SimGrid traces: compute speed in flop/s that turns `compute` volumes into time.
    #[arg(long, value_name = "FLOP/S", default_value_t = 1e9)]
    flops: f64,
    /// Also write the communication matrix as an SVG heatmap to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

#[derive(Serialize)]
struct Report<'a> {
    path: String,
    meta: Option<&'a RunMeta>,
    #[serde(flatten)]
    summary: &'a TraceSummary,
    /// The time between calls the ranks were off their processors beyond what sharing the
    /// node explains, where the trace can tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    off_processor: Option<mpiskel_trace::off_processor::OffProcessor>,
}

/// Prints a document mpiskel wrote: as JSON, or through its text rendering.
fn show<T: Serialize>(doc: &T, json: bool, render: fn(&T) -> String) -> Result<ExitCode> {
    if json {
        println!("{}", serde_json::to_string_pretty(doc)?);
    } else {
        print!("{}", render(doc));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn inspect(a: InspectArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.flops > 0.0 && a.flops.is_finite(), "--flops must be a positive number");
    if let Some(doc) = mpiskel_emit::document::read(&a.path)? {
        return show(&doc, a.json, mpiskel_emit::document::render);
    }
    if let Some(doc) = read_logical_document(&a.path)? {
        return show(&doc, a.json, crate::logicalize::render);
    }
    if let Some(doc) = read_nest_document(&a.path)? {
        return show(&doc, a.json, crate::compress::render);
    }
    let opts = ReadOptions { ti: TiOptions { flops_per_second: a.flops } };
    let set = {
        let _bar = crate::progress::Stages::bars_only().reading("reading");
        TraceSet::open(&a.path, &opts)?
    };
    if let Some(svg) = &a.svg {
        let m = mpiskel_logicalize::CommMatrix::of(&set);
        let title = format!("{} — bytes per pair", a.path.display());
        crate::compress::write_atomic(svg, &mpiskel_report::svg::heatmap_svg(&m, &title)?)?;
    }
    let summary = summarize(&set);
    let report = Report {
        path: a.path.display().to_string(),
        meta: set.meta.as_ref(),
        summary: &summary,
        off_processor: mpiskel_trace::off_processor::off_processor(&set),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// A JSON document of `kind`, if `path` is one (a JSON file of another kind is an error).
fn read_json_kind(path: &std::path::Path, kind: &str) -> Result<Option<serde_json::Value>> {
    if !path.is_file() {
        return Ok(None);
    }
    let mut head = [0u8; 64];
    let n = std::io::Read::read(&mut std::fs::File::open(path)?, &mut head)?;
    if !head[..n].trim_ascii_start().starts_with(b"{") {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!("{}: line {} column {}: {e}", path.display(), e.line(), e.column())
    })?;
    let k = v["kind"].as_str().unwrap_or_default();
    if k != crate::compress::KIND && k != crate::logicalize::KIND {
        anyhow::bail!(
            "{}: a JSON file, but not an mpiskel loop nest or logical trace",
            path.display()
        );
    }
    Ok((k == kind).then_some(v))
}

/// A logical trace written by `mpiskel logicalize -o`, if `path` is one.
fn read_logical_document(
    path: &std::path::Path,
) -> Result<Option<crate::logicalize::LogicalDocument>> {
    match read_json_kind(path, crate::logicalize::KIND)? {
        None => Ok(None),
        Some(v) => Ok(Some(
            serde_json::from_value(v).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
        )),
    }
}

/// A loop-nest document written by `mpiskel compress -o`, if `path` is one.
fn read_nest_document(path: &std::path::Path) -> Result<Option<crate::compress::NestDocument>> {
    match read_json_kind(path, crate::compress::KIND)? {
        None => Ok(None),
        Some(v) => Ok(Some(
            serde_json::from_value(v).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
        )),
    }
}

fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn render(r: &Report<'_>) -> String {
    let s = r.summary;
    let mut o = String::new();
    let format = match s.format {
        TraceFormat::Native => "native",
        TraceFormat::SimgridTi => "SimGrid time-independent",
        TraceFormat::Dumpi => "SST DUMPI",
        TraceFormat::Otf2 => "OTF2",
    };
    let _ = writeln!(o, "trace    {} ({format}, {} ranks)", r.path, s.ranks);
    if let Some(m) = r.meta {
        let _ = writeln!(o, "command  {}", m.command.join(" "));
        let _ = writeln!(o, "mpi      {} ({}), wall time {:.3} s", m.mpi, m.mpi_version, m.wall_s);
        if let Some(l) = m.node_load {
            let _ = writeln!(o, "load     while it ran, {}", l.summary());
        }
        if let (false, Some(k)) = (m.runs_app_s.is_empty(), m.kept_run) {
            let times: Vec<String> = m.runs_app_s.iter().map(|t| format!("{t:.3}")).collect();
            let _ = writeln!(
                o,
                "runs     {} recorded, the application taking {} s; this is run {}, the median",
                m.runs_app_s.len(),
                times.join(", "),
                k + 1
            );
        }
    }
    let mpi_s: f64 = s.per_rank.iter().map(|p| p.mpi_s).sum();
    let comp_s: f64 = s.per_rank.iter().map(|p| p.compute_s).sum();
    let _ = writeln!(
        o,
        "calls    {} in all; span {:.6} s; summed over ranks: {:.6} s in MPI, {:.6} s between calls",
        s.events, s.span_s, mpi_s, comp_s
    );
    let (io, one_sided): (Vec<_>, Vec<_>) =
        s.unrecorded.iter().partition(|(k, _)| mpiskel_trace::summary::is_file_io(k));
    for (label, kinds, what) in [("rma", one_sided, "one-sided"), ("io", io, "MPI-IO")] {
        if kinds.is_empty() {
            continue;
        }
        let calls: u64 = kinds.iter().map(|(_, u)| u.calls).sum();
        let named: Vec<String> =
            kinds.iter().map(|(k, u)| format!("MPI_{k} {}", u.calls)).collect();
        let _ = writeln!(
            o,
            "{label:<8} {calls} {what} calls counted but not recorded ({}): {:.6} s in them \
             over the ranks, inside the times between calls above",
            named.join(", "),
            kinds.iter().map(|(_, u)| u.ns).sum::<u64>() as f64 * 1e-9
        );
    }
    app_lines(r, &mut o);

    // Records per kind per rank: one column per kind.
    let mut kinds: Vec<&String> = s.per_rank.iter().flat_map(|p| p.records.keys()).collect();
    kinds.sort();
    kinds.dedup();
    let _ = writeln!(o, "\nrecords per kind and rank");
    let width = |k: &str| k.len().max(7);
    let _ = write!(o, "{:>5}", "rank");
    for k in &kinds {
        let _ = write!(o, " {:>w$}", k, w = width(k));
    }
    let _ = writeln!(o);
    for p in &s.per_rank {
        let _ = write!(o, "{:>5}", p.rank.0);
        for k in &kinds {
            let _ = write!(o, " {:>w$}", p.records.get(*k).copied().unwrap_or(0), w = width(k));
        }
        let _ = writeln!(o);
    }

    let _ = writeln!(o, "\nper rank");
    let _ = writeln!(
        o,
        "{:>5} {:>10} {:>12} {:>12} {:>12} {:>11} {:>11} {:>6}  host",
        "rank", "calls", "p2p sent", "p2p recv", "collective", "MPI s", "compute s", "peers"
    );
    for p in &s.per_rank {
        let _ = writeln!(
            o,
            "{:>5} {:>10} {:>12} {:>12} {:>12} {:>11.6} {:>11.6} {:>6}  {}",
            p.rank.0,
            p.events,
            human_bytes(p.p2p_bytes_sent),
            human_bytes(p.p2p_bytes_received),
            human_bytes(p.collective_bytes),
            p.mpi_s,
            p.compute_s,
            p.send_peers,
            p.host.as_deref().unwrap_or("-")
        );
    }

    let m = &s.matrix;
    let _ = writeln!(o, "\ncommunication matrix (point-to-point sends)");
    let _ = writeln!(
        o,
        "  {} directed pairs, {} messages, {}; degree {}..{}; {}",
        m.pairs,
        m.total.messages,
        human_bytes(m.total.bytes),
        m.degree_min,
        m.degree_max,
        if m.symmetric { "symmetric" } else { "not symmetric" }
    );
    if m.self_messages.messages > 0 || m.null_messages > 0 {
        let _ = writeln!(
            o,
            "  {} self-messages ({}), {} sends to MPI_PROC_NULL",
            m.self_messages.messages,
            human_bytes(m.self_messages.bytes),
            m.null_messages
        );
    }
    if !m.top_pairs.is_empty() {
        let _ = writeln!(o, "  heaviest pairs:");
        for (src, dst, t) in &m.top_pairs {
            let _ = writeln!(
                o,
                "    {:>5} -> {:<5} {:>8} msgs {:>12}",
                src.0,
                dst.0,
                t.messages,
                human_bytes(t.bytes)
            );
        }
    }
    if !s.collectives.is_empty() {
        let list: Vec<String> = s.collectives.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(o, "\ncollectives (calls over all ranks): {}", list.join(", "));
    }
    o
}

/// The application's time, and what the trace says of time a skeleton does not replay: outside
/// `MPI_Init`…`MPI_Finalize`, off the processors between calls.
fn app_lines(r: &Report<'_>, o: &mut String) {
    let s = r.summary;
    let only = r.meta.is_some_and(|m| m.time_only);
    let _ = writeln!(
        o,
        "app      {:.6} s from MPI_Init to MPI_Finalize on the slowest rank{}",
        s.app_time_s,
        if only { " (recorded with --time-only: no calls)" } else { "" }
    );
    if let Some(note) =
        r.meta.and_then(|m| mpiskel_make::load::describe_outside_mpi(m, s.app_time_s))
    {
        let _ = writeln!(o, "outside  {note}");
    }
    if let Some(off) = &r.off_processor {
        let _ = writeln!(
            o,
            "off-cpu  between calls the ranks were off their processors {}: asleep, waiting \
             for input or output, or their other threads computing; a skeleton replays \
             processor time",
            off.summary(s.app_time_s)
        );
    }
}
