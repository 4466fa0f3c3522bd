//! `mpiskel compress`: one rank's trace → its loop nest.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use mpiskel_compress::{exact, greedy, LoopNest, NestReport, Node};
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};
use serde::{Deserialize, Serialize};

use mpiskel_program::physical::symbolize;
use mpiskel_program::symbols::{symbolize_class, SymbolInfo};

/// Find the loop nest of one rank's trace (Xu & Subhlok 2008, §3).
///
/// The trace is logicalized first (`mpiskel logicalize`); the logical program of the process
/// class of --rank becomes symbols (operation, direction, tag class, size, communicator, root),
/// and the compute gaps (class means) travel beside them, averaged per program position. The greedy pass folds
/// the shortest-period tandem repeats first, then the loops around them; `--exact` finds the
/// nest covering the most calls (then the shortest), for inputs of a few thousand calls.
/// Where the exact main loop is only a piece of an irregular time-step loop (sizes that drift,
/// steps that rebuild or write output now and then), the steps are folded as `build` folds
/// them: `{24 ×230 | 36 ×12}^242` is 242 steps of two kinds, 230 and 12 of each.
///
/// Prints the main loop in that notation, the span covered by loops, the compressed
/// length and ratio; `-o` writes the whole nest as JSON (readable by `mpiskel inspect`).
///
/// Examples:
///   mpiskel compress lu.S.4/trace.txt
///   mpiskel compress app.trace --rank 5 -o app.rank5.nest.json
///   mpiskel compress --exact --json small.trace
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CompressArgs {
    /// The trace (any format `mpiskel inspect` reads).
    path: PathBuf,
    /// Compress the program of the process class this rank belongs to (or, with --physical,
    /// this rank's own calls).
    #[arg(long, default_value_t = 0)]
    rank: u32,
    /// Compress one rank's physical calls (peers as rank offsets) instead of its class's
    /// logical program (peers as directions of the topology).
    #[arg(long)]
    physical: bool,
    /// Exact mode instead of the greedy pass (refused above --exact-limit calls).
    #[arg(long)]
    exact: bool,
    /// Largest number of calls --exact accepts.
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    exact_limit: usize,
    /// Write the loop nest as JSON to FILE.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the JSON document instead of the summary.
    #[arg(long)]
    json: bool,
    /// For SimGrid traces: compute speed in flop/s.
    #[arg(long, value_name = "FLOP/S", default_value_t = 1e9)]
    flops: f64,
}

/// The document `mpiskel compress -o` writes.
#[derive(Debug, Serialize, Deserialize)]
pub struct NestDocument {
    /// Always `"mpiskel-loop-nest"`.
    pub kind: String,
    /// Layout version (1).
    pub version: u32,
    /// The trace it came from.
    pub trace: String,
    /// The rank whose program was compressed.
    pub rank: u32,
    /// What was compressed: a class's logical program or one rank's physical calls.
    #[serde(default)]
    pub input: String,
    /// `greedy` or `exact`.
    pub mode: String,
    /// Seconds the compression took.
    pub seconds: f64,
    /// Coverage and compression figures.
    pub report: NestReport,
    /// The main loop in the notation of Xu & Subhlok (2008).
    pub main_loop: Option<String>,
    /// The whole program in the notation of Xu & Subhlok (2008).
    pub notation: String,
    /// What each symbol stands for.
    pub symbols: Vec<SymbolInfoDoc>,
    /// The program.
    pub nest: LoopNest,
}

/// A legend entry.
#[derive(Debug, Serialize, Deserialize)]
pub struct SymbolInfoDoc {
    /// Symbol id.
    pub sym: u32,
    /// What it stands for.
    pub text: String,
}

impl From<SymbolInfo> for SymbolInfoDoc {
    fn from(s: SymbolInfo) -> Self {
        SymbolInfoDoc { sym: s.sym, text: s.text }
    }
}

pub const KIND: &str = "mpiskel-loop-nest";

pub fn compress(a: CompressArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.flops > 0.0 && a.flops.is_finite(), "--flops must be a positive number");
    let opts = ReadOptions { ti: TiOptions { flops_per_second: a.flops } };
    let (mut set, _) = {
        let _bar = crate::progress::Stages::bars_only().reading("reading");
        TraceSet::open_folded(&a.path, &opts)?
    };
    set.drop_local_calls();
    set.align_collectives();
    let Some(rt) = set.ranks.get(a.rank as usize) else {
        bail!(
            "{}: rank {} does not exist (the trace has {} ranks)",
            a.path.display(),
            a.rank,
            set.n_ranks()
        );
    };
    let mut stepped = None;
    let (sym, input) = if a.physical {
        (symbolize(rt), format!("the physical calls of rank {}", a.rank))
    } else {
        let logical = mpiskel_logicalize::logicalize(&set);
        let (k, class) = logical
            .classes
            .iter()
            .enumerate()
            .find(|(_, c)| c.ranks.contains(&a.rank) || c.folded.contains(&a.rank))
            .context("every rank belongs to a process class")?;
        let size = class.ranks.len() + class.folded.len();
        if !a.exact {
            // The nest `build` uses: with an irregular time-step loop folded into steps.
            let t = Instant::now();
            stepped = mpiskel_cut::pipeline::nests_of(&logical)
                .into_iter()
                .nth(k)
                .map(|n| (n, t.elapsed().as_secs_f64()));
        }
        (
            symbolize_class(class),
            format!(
                "the logical program of process class {k} ({size} ranks, topology {}), which rank {} belongs to",
                logical.topology_name(),
                a.rank
            ),
        )
    };
    let _ = rt;
    if a.exact && sym.symbols.len() > a.exact_limit {
        bail!(
            "--exact on {} calls would take too long (limit {}; raise it with --exact-limit)",
            sym.symbols.len(),
            a.exact_limit
        );
    }
    let t0 = Instant::now();
    let (mut nest, seconds) = match stepped {
        Some(n) => n,
        None if a.exact => (exact(&sym.symbols), t0.elapsed().as_secs_f64()),
        None => (greedy(&sym.symbols), t0.elapsed().as_secs_f64()),
    };
    nest.attach_weights(&sym.gaps_s);
    let doc = NestDocument {
        kind: KIND.into(),
        version: 1,
        trace: a.path.display().to_string(),
        rank: a.rank,
        input,
        mode: if a.exact { "exact" } else { "greedy" }.into(),
        seconds,
        report: nest.report(),
        main_loop: nest.main_loop().map(main_loop_notation),
        notation: nest.notation(),
        symbols: sym.legend.into_iter().map(Into::into).collect(),
        nest,
    };
    if let Some(out) = &a.output {
        write_atomic(out, &serde_json::to_string_pretty(&doc)?)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", render(&doc));
    }
    Ok(ExitCode::SUCCESS)
}

/// `(85)^200 = (13 + (4)^3 + …)^200`: the body's length, then its structure; for time steps
/// `{…}^250: 250 steps of 4 kinds (233, 12, 4, 1), 25.4 calls each on average`.
pub fn main_loop_notation(n: &Node) -> String {
    if let Node::Steps { schedule, kinds } = n {
        let mut sorted = n.step_counts();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let list: Vec<String> = sorted.iter().map(u64::to_string).collect();
        let steps = schedule.len().max(1);
        return format!(
            "{{…}}^{}: {} steps of {} kinds ({}), {:.1} calls each on average",
            schedule.len(),
            schedule.len(),
            kinds.len(),
            list.join(", "),
            n.expanded_len() as f64 / steps as f64
        );
    }
    let Node::Loop { count, body } = n else {
        return String::new();
    };
    let per_iter = n.expanded_len() / count;
    let inner = LoopNest { items: body.clone() }.notation();
    format!("({per_iter})^{count} = ({inner})^{count}")
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

pub fn render(d: &NestDocument) -> String {
    let r = &d.report;
    let mut o = String::new();
    let _ = writeln!(o, "loop nest  {} rank {} ({}, {:.3} s)", d.trace, d.rank, d.mode, d.seconds);
    if !d.input.is_empty() {
        let _ = writeln!(o, "input      {}", d.input);
    }
    let _ = writeln!(o, "calls      {} ({} distinct)", r.input_len, d.symbols.len());
    let _ = writeln!(
        o,
        "main loop  {}",
        d.main_loop.as_deref().map_or("none".into(), |m| shorten(m, 300))
    );
    let _ = writeln!(
        o,
        "covered    {:.2} % of calls inside loops; compressed length {}; ratio {:.1}",
        100.0 * r.coverage,
        r.compressed_len,
        r.ratio
    );
    let _ = writeln!(o, "program    {}", shorten(&d.notation, 600));
    o
}

/// Writes `text` to `path` through a temporary file of a unique name beside it, renamed when
/// complete (two writers never share it; an interrupted write leaves `path` as it was).
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    mpiskel_trace::atomic::write(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
