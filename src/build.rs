//! `mpiskel build`: trace → logical trace → loop nests → checked, scaled program → skeleton
//! folder.

use crate::progress::Stages;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use mpiskel_emit::c::{render, Meta};
use mpiskel_emit::pipeline::{make, make_strict, CheckSummary, PipelineError};
use mpiskel_emit::program::MatchingReport;
use mpiskel_emit::{Scaling, Skeleton};
use mpiskel_trace::local::LocalCalls;
use mpiskel_trace::polls::PollFolding;
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};
use serde::{Deserialize, Serialize};

/// Build the performance skeleton of a traced application.
///
/// Runs the whole pipeline: reads the trace, finds the topology and the process classes
/// (`mpiskel logicalize`), the loop nest of every class (`mpiskel compress`), builds one SPMD
/// program, cuts its main loop so that it runs about --target-time, executes every rank's
/// program abstractly to prove it cannot deadlock, and writes the skeleton folder:
///
///   skeleton.c, mpiskel_rt.c, mpiskel_rt.h   the program and its runtime
///   Makefile                                  make (MPICC=...), make smpi (SimGrid)
///   run.sh, job.slurm                         run with mpirun or under Slurm
///   README.md                                 for whoever runs it elsewhere
///   skeleton.json                             provenance: trace, topology, loop nests,
///                                             matching, scaling, the program itself
///
/// With --lang rust, a Cargo project making the same MPI calls, with the mpi crate (rsmpi):
///
///   src/main.rs, src/rt.rs                    the program and its runtime
///   Cargo.toml, Cargo.lock                    the crates, pinned to the versions tested
///   run.sh, job.slurm, README.md, skeleton.json
///
/// The folder is written under a temporary name and renamed when complete; an existing DIR is
/// only replaced with --force.
///
/// Examples:
///   mpiskel build halo.trace -o halo.skel
///   mpiskel build bt.W.16/trace.txt -o bt.skel --target-time 0.05
///   mpiskel build app.trace -o app.skel --force && mpiskel run app.skel
///   mpiskel build halo.trace --lang rust -o halo-rs && mpiskel run halo-rs
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct BuildArgs {
    /// The trace (a directory written by `mpiskel trace`, a SimGrid time-independent trace, or
    /// an SST DUMPI trace: its `.meta` file or the folder holding it).
    trace: PathBuf,
    /// The skeleton folder to write.
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Seconds the skeleton should run on the recording machine [default: the shorter of 60 s
    /// and a twelfth of the application's time — a twenty-fourth where the main loop has 20
    /// iterations or more, or where there is no loop to sample and computation alone is cut —
    /// so that it stays under a tenth (a twentieth) where the platform slows the parts that run
    /// whole more than the rest].
    #[arg(long, value_name = "SECONDS")]
    target_time: Option<f64>,
    /// Run every compute block whole, even when the skeleton is then over its target. By
    /// default, when the loops are cut as far as they go (or cannot be cut) and the skeleton is
    /// still over, every rank skips the same seconds of the long compute blocks (set-up, steps
    /// between loops, the bodies of loops of a few long iterations, a program without loops) and
    /// adds their time, at the pace of the part it runs, back to the prediction; if that is not
    /// enough, the blocks without drawn deviations run the same share of what they keep on every
    /// rank, each rank adding its own remainder back.
    #[arg(long, alias = "whole-setup")]
    whole_compute: bool,
    /// Language of the skeleton.
    #[arg(long, value_enum, default_value_t = Lang::C)]
    lang: Lang,
    /// Replace DIR if it exists.
    #[arg(long)]
    force: bool,
    /// The application's run time, seconds, if known better than the trace tells (the trace
    /// gives the span from MPI_Init to MPI_Finalize of the slowest rank).
    #[arg(long, value_name = "SECONDS")]
    app_time: Option<f64>,
    /// Skeleton name (default: the trace's folder name).
    #[arg(long)]
    name: Option<String>,
    /// For SimGrid traces: compute speed in flop/s.
    #[arg(long, value_name = "FLOP/S", default_value_t = 1e9)]
    flops: f64,
    /// Refuse a trace that holds point-to-point calls nothing matches (a receive cancelled
    /// after nothing came, a send never received), as the deadlock check would, and a program
    /// that finishes only if the MPI library buffers some of its blocking sends. By default
    /// such calls are local (Xu & Subhlok 2008, §4): they are left out, their time stays in
    /// the computation before the next call; and sends the run completed before their receives
    /// were posted, where the program relies on it, become buffered sends (`MPI_Bsend`). The
    /// build says what it left out or buffered.
    #[arg(long)]
    strict: bool,
    /// No progress lines on stderr.
    #[arg(short, long)]
    quiet: bool,
}

/// Languages of the skeleton.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// C, built with mpicc (a folder with skeleton.c, the runtime and a Makefile).
    C,
    /// Rust with the `mpi` crate (rsmpi), built with cargo (a Cargo project).
    Rust,
}

impl Lang {
    /// The name `skeleton.json` records.
    pub fn name(self) -> &'static str {
        match self {
            Lang::C => "c",
            Lang::Rust => "rust",
        }
    }
}

/// One class as `skeleton.json` records it.
#[derive(Debug, Serialize, Deserialize)]
pub struct ClassDoc {
    /// Ranks.
    pub ranks: Vec<u32>,
    /// Loop nest in the notation of Xu & Subhlok (2008).
    pub notation: String,
    /// Calls in the class's logical program.
    pub calls: usize,
    /// Phases: name, iterations, run.
    pub phases: Vec<PhaseDoc>,
}

/// One phase as `skeleton.json` records it.
#[derive(Debug, Serialize, Deserialize)]
pub struct PhaseDoc {
    /// Name.
    pub name: String,
    /// Iterations in the application.
    pub full: u64,
    /// Iterations run.
    pub run: u64,
    /// Where it came from.
    pub origin: String,
    /// Compute per iteration, seconds.
    pub compute_s: f64,
    /// Calls per iteration.
    pub calls: u64,
}

/// `skeleton.json`: the provenance of a skeleton folder.
#[derive(Debug, Serialize, Deserialize)]
pub struct SkeletonDocument {
    /// Always `"mpiskel-skeleton"`.
    pub kind: String,
    /// Layout version (1).
    pub version: u32,
    /// Skeleton name.
    pub name: String,
    /// The trace it came from.
    pub trace: String,
    /// Language.
    pub lang: String,
    /// mpiskel version that made it.
    pub mpiskel_version: String,
    /// Ranks.
    pub n_ranks: u32,
    /// Topology found.
    pub topology: String,
    /// Other names of the same topology, and the rule that chose.
    pub topology_alternatives: Vec<String>,
    /// Point-to-point calls to peers outside the topology.
    pub exception_calls: u64,
    /// Polling loops folded into the blocking calls that ended them (`mpiskel_trace::polls`).
    #[serde(default)]
    pub polls: PollFolding,
    /// Point-to-point calls nothing in the trace matched, left out of the skeleton
    /// (`mpiskel_trace::local`).
    #[serde(default, skip_serializing_if = "no_local_calls")]
    pub local_calls: LocalCalls,
    /// Receives and probes posted with `MPI_ANY_SOURCE` that the skeleton pins to the source the
    /// traced run gave them, because with the wildcard the program could deadlock (0: none).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub pinned_any_source: usize,
    /// Blocking sends the skeleton makes buffered (`MPI_Bsend`), because the program relies on
    /// the MPI library buffering them as the traced run did (0: none).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub buffered_sends: usize,
    /// Compute blocks of the loops that replay the durations the ranks recorded in the
    /// iterations the skeleton runs, the same iterations on every rank (`mpiskel_emit::replay`;
    /// 0: every block draws its durations).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub replayed_blocks: usize,
    /// Classes.
    pub classes: Vec<ClassDoc>,
    /// Matching of sends and receives.
    pub matching: MatchingReport,
    /// Scaling and prediction factors.
    pub scaling: Scaling,
    /// The deadlock check.
    pub check: CheckSummary,
    /// Seconds per stage of the build.
    pub stage_seconds: Vec<(String, f64)>,
    /// The program (what both back ends render).
    pub program: Skeleton,
    /// What `mpiskel retune` set for the machine the skeleton runs on (absent until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuning: Option<Tuning>,
}

/// Compute settings `mpiskel retune` chose; `mpiskel run` and run.sh pass them on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tuning {
    /// `app-time` (compute scaled so that the recorded ratio holds for a measured application
    /// time) or `work` (a fixed amount of kernel work per recorded second).
    pub mode: String,
    /// Every compute block times this (`app-time`).
    pub compute_scale: Option<f64>,
    /// Kernel iterations per recorded second (`work`): the rate of the recording machine.
    pub compute_rate: Option<f64>,
    /// How the values were found.
    pub note: String,
}

impl Tuning {
    /// The skeleton's own options that apply the tuning.
    pub fn skeleton_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(s) = self.compute_scale {
            v.extend(["--compute-scale".to_string(), format!("{s}")]);
        }
        if let Some(r) = self.compute_rate {
            v.extend(["--compute-rate".to_string(), format!("{r}")]);
        }
        v
    }
}

pub const KIND: &str = "mpiskel-skeleton";

/// What pinning `n` receives from any source means, for people.
pub fn describe_pinned(n: usize) -> String {
    format!(
        "{n} receives or probes from MPI_ANY_SOURCE take the source the traced run gave them: \
         with the wildcard, a rank could take another rank's message (a master answering whichever \
         worker reported first, each worker's count of tasks fixed as traced) and the program \
         could deadlock; pinned, the skeleton replays an order the application ran in"
    )
}

/// The note on sends made buffered.
pub fn describe_buffered(n: usize) -> String {
    format!(
        "{n} blocking sends are buffered (MPI_Bsend, with a buffer the skeleton attaches): the \
         traced run completed them before their receives were posted (the MPI library buffered \
         them), and without that the program could block; --strict refuses such a trace"
    )
}

fn no_local_calls(l: &LocalCalls) -> bool {
    l.calls() == 0 && l.unmatched_sendrecv == 0
}

/// One line on the local calls left out, with their share of the application's time.
pub fn describe_local(l: &LocalCalls, app_time_s: f64, ranks: usize) -> String {
    let seconds = l.ns as f64 * 1e-9;
    let share = if app_time_s > 0.0 && ranks > 0 {
        format!(", {:.3} % of the ranks' time", 100.0 * seconds / (app_time_s * ranks as f64))
    } else {
        String::new()
    };
    let mut s = format!(
        "{} calls nothing matched are local and left out ({} sends, {} receives, {} completions \
         of them; {} bytes); their {seconds:.6} s{share} stay as computation before the next \
         call, so the prediction keeps them",
        l.calls(),
        l.sends,
        l.receives,
        l.completions,
        l.bytes
    );
    if l.unmatched_sendrecv > 0 {
        s.push_str(&format!(
            "; {} halves of MPI_Sendrecv without a partner are kept",
            l.unmatched_sendrecv
        ));
    }
    s
}

fn is_zero_count(n: &usize) -> bool {
    *n == 0
}

/// One line on the polling loops folded.
pub fn describe_polls(p: &PollFolding) -> String {
    format!(
        "{} failed polls folded: {} polling loops into the blocking call that ended them, {} kept \
         as one poll; {:.6} s of polling became waiting, {:.6} s of work between polls stays \
         compute",
        p.polls,
        p.folded_runs,
        p.kept_runs,
        p.waiting_ns as f64 * 1e-9,
        p.work_ns as f64 * 1e-9
    )
}

pub fn build(a: BuildArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.flops > 0.0 && a.flops.is_finite(), "--flops must be a positive number");
    if let Some(t) = a.target_time {
        anyhow::ensure!(t > 0.0 && t.is_finite(), "--target-time must be a positive number");
    }
    if let Some(t) = a.app_time {
        anyhow::ensure!(t > 0.0 && t.is_finite(), "--app-time must be a positive number");
    }
    if a.output.exists() && !a.force {
        bail!("{} exists; use --force to replace it", a.output.display());
    }
    let stages = Stages::new(a.quiet);
    let opts = ReadOptions { ti: TiOptions { flops_per_second: a.flops } };
    stages.line(&format!("reading {}", a.trace.display()));
    let mut set = {
        let _bar = stages.reading("reading");
        TraceSet::open(&a.trace, &opts)?
    };
    if set.meta.as_ref().is_some_and(|m| m.time_only) {
        bail!(
            "{} holds only the application's time (recorded with `mpiskel trace --time-only`), \
             not its calls; trace the run without --time-only to build a skeleton",
            a.trace.display()
        );
    }
    let polls = set.fold_polls();
    if polls.polls > 0 {
        stages.line(&describe_polls(&polls));
    }
    let local_calls = if a.strict { LocalCalls::default() } else { set.drop_local_calls() };
    if !no_local_calls(&local_calls) {
        let line = describe_local(&local_calls, set.app_time_s(), set.n_ranks());
        eprintln!("note: {line}");
    }
    stages.line(&format!("{} ranks read; finding the topology", set.n_ranks()));
    let (app_time, source) = match a.app_time {
        Some(t) => (t, "given with --app-time".to_owned()),
        None => (
            set.app_time_s(),
            "span of the slowest rank from MPI_Init to MPI_Finalize in the trace".to_owned(),
        ),
    };
    // The calls themselves go into the logical trace, each rank's freed once translated: their
    // memory is not held while the skeleton is made.
    let lt = {
        let _spinner = stages.spinner("finding the topology and the process classes");
        mpiskel_logicalize::logicalize_owned(set)
    };
    stages.line(&format!("topology: {}; {} process classes", lt.topology_name(), lt.classes.len()));
    let make = if a.strict { make_strict } else { make };
    let made = {
        let _spinner = stages.spinner("finding loops, cutting them and checking the program");
        make(&lt, app_time, &source, a.target_time, !a.whole_compute)
    };
    let built = match made {
        Ok(b) => b,
        Err(PipelineError::Deadlock(d)) => {
            eprint!("{d}");
            let hint = if a.strict {
                " (without --strict, calls nothing matches are left out and sends the program \
                 relies on the MPI library to buffer are buffered)"
            } else {
                ""
            };
            bail!("refusing to emit {}: the program can deadlock{hint}", a.output.display());
        }
        Err(e) => return Err(e.into()),
    };
    stages.line(&format!(
        "program checked: {} operations over {} ranks run to completion",
        built.check.operations, built.check.ranks
    ));
    let name = a.name.clone().unwrap_or_else(|| default_name(&a.trace));
    anyhow::ensure!(
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
        "skeleton name {name:?}: use letters, digits, '.', '_' and '-' (--name)"
    );
    let meta = Meta {
        name: name.clone(),
        trace: a.trace.display().to_string(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let files = match a.lang {
        Lang::C => render(&built.skeleton, &built.scaling, &meta)?,
        Lang::Rust => mpiskel_emit::rust::render(&built.skeleton, &built.scaling, &meta)?,
    };
    let alternatives = match &lt.identification.structure {
        mpiskel_logicalize::Structure::Topology { alternatives, .. } => alternatives.clone(),
        _ => Vec::new(),
    };
    let doc = SkeletonDocument {
        kind: KIND.into(),
        version: 1,
        name: name.clone(),
        trace: a.trace.display().to_string(),
        lang: a.lang.name().into(),
        mpiskel_version: meta.version.clone(),
        n_ranks: built.skeleton.n_ranks,
        topology: built.skeleton.topology.clone(),
        topology_alternatives: alternatives,
        exception_calls: lt.exceptions.calls,
        polls,
        local_calls,
        pinned_any_source: built.pinned_any_source,
        buffered_sends: built.buffered_sends,
        replayed_blocks: built.replayed_blocks,
        classes: built
            .skeleton
            .classes
            .iter()
            .zip(&lt.classes)
            .map(|(c, lc)| ClassDoc {
                ranks: c.ranks.clone(),
                notation: c.notation.clone(),
                calls: lc.ops.len(),
                phases: c
                    .phases
                    .iter()
                    .map(|p| PhaseDoc {
                        name: p.name.clone(),
                        full: p.full,
                        run: p.run,
                        origin: p.origin.clone(),
                        compute_s: p.compute_s,
                        calls: p.calls,
                    })
                    .collect(),
            })
            .collect(),
        matching: built.skeleton.matching.clone(),
        scaling: built.scaling.clone(),
        check: built.check.clone(),
        stage_seconds: built.stage_seconds.clone(),
        program: built.skeleton.clone(),
        tuning: None,
    };
    write_folder(&a.output, &files, &serde_json::to_string_pretty(&doc)?, a.force)?;
    stages.line(&format!("wrote {}", a.output.display()));
    let s = &built.scaling;
    if built.pinned_any_source > 0 {
        eprintln!("note: {}", describe_pinned(built.pinned_any_source));
    }
    if built.buffered_sends > 0 {
        eprintln!("note: {}", describe_buffered(built.buffered_sends));
    }
    if !s.note.is_empty() {
        eprintln!("note: {}", s.note);
    }
    if s.warmup_s > 0.0 {
        eprintln!(
            "note: the warm-up iteration before the main loop (one iteration of it, {:.1} % of the time) is not run; the skeleton prices it as one more iteration of the main loop",
            100.0 * s.warmup_s / s.app_time_s
        );
    }
    if s.compute_removed_s > 0.0 {
        eprintln!(
            "note: {:.6} s of computation per rank are not run; the skeleton adds their time back to its prediction",
            s.compute_removed_s
        );
    }
    if s.compute_shrink < 1.0 {
        eprintln!(
            "note: blocks without drawn deviations also run only {:.1} % of what they keep on each rank, the rest added back",
            100.0 * s.compute_shrink
        );
    }
    println!(
        "{}: {} ranks, {}, {} classes; main loop {} of {} iterations; recorded {:.4} s, skeleton ≈ {:.4} s (×{:.3})",
        a.output.display(),
        built.skeleton.n_ranks,
        built.skeleton.topology,
        built.skeleton.classes.len(),
        s.main_run,
        s.main_full,
        s.app_time_s,
        s.skeleton_estimate_s,
        s.factor
    );
    Ok(ExitCode::SUCCESS)
}

pub fn default_name(trace: &Path) -> String {
    let p = if trace.is_file() { trace.parent().unwrap_or(trace) } else { trace };
    let stem = p
        .canonicalize()
        .ok()
        .and_then(|c| c.file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "skeleton".into());
    let s: String = stem
        .trim_end_matches(".trace")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .collect();
    if s.is_empty() {
        "skeleton".into()
    } else {
        s
    }
}

/// Writes the folder under a temporary name beside `dir`, then renames it into place.
fn write_folder(dir: &Path, files: &[mpiskel_emit::c::File], doc: &str, force: bool) -> Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let base =
        dir.file_name().map_or_else(|| "skeleton".into(), |f| f.to_string_lossy().into_owned());
    let tmp = parent.join(format!(".{base}.tmp-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).ok();
    }
    // Interrupted, or failing, the half-written folder goes.
    crate::harness::install_signal_handler()?;
    let guard = crate::harness::TempPath::register(&tmp)?;
    std::fs::create_dir(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let write = || -> Result<()> {
        for f in files {
            let path = tmp.join(&f.path);
            if let Some(p) = path.parent() {
                std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
            }
            let mut out = std::fs::File::create(&path)
                .with_context(|| format!("writing {}", path.display()))?;
            out.write_all(f.contents.as_bytes())?;
            if f.executable {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
            }
        }
        std::fs::write(tmp.join("skeleton.json"), doc)
            .with_context(|| format!("writing {}", tmp.join("skeleton.json").display()))?;
        Ok(())
    };
    if let Err(e) = write() {
        std::fs::remove_dir_all(&tmp).ok();
        return Err(e);
    }
    if dir.exists() {
        if !force {
            std::fs::remove_dir_all(&tmp).ok();
            bail!("{} exists; use --force to replace it", dir.display());
        }
        let old = parent.join(format!(".{base}.old-{}", std::process::id()));
        std::fs::rename(dir, &old).with_context(|| format!("moving {} aside", dir.display()))?;
        std::fs::rename(&tmp, dir).with_context(|| format!("renaming to {}", dir.display()))?;
        std::fs::remove_dir_all(&old).ok();
    } else {
        std::fs::rename(&tmp, dir).with_context(|| format!("renaming to {}", dir.display()))?;
    }
    guard.keep();
    Ok(())
}

/// Reads `DIR/skeleton.json`, if DIR is a skeleton folder.
pub fn read_skeleton_document(dir: &Path) -> Result<Option<SkeletonDocument>> {
    let path = dir.join("skeleton.json");
    if !dir.is_dir() || !path.is_file() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let doc: SkeletonDocument = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a skeleton description", path.display()))?;
    anyhow::ensure!(doc.kind == KIND, "{}: kind is {:?}, not {KIND:?}", path.display(), doc.kind);
    Ok(Some(doc))
}

/// `mpiskel inspect DIR` for a skeleton folder.
pub fn render_document(doc: &SkeletonDocument) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "skeleton {} ({}), made by mpiskel {}",
        doc.name, doc.lang, doc.mpiskel_version
    );
    let _ = writeln!(s, "trace:     {}", doc.trace);
    let _ = writeln!(s, "ranks:     {}", doc.n_ranks);
    let _ = writeln!(s, "topology:  {}", doc.topology);
    if !doc.topology_alternatives.is_empty() {
        let _ = writeln!(
            s,
            "           (also isomorphic to: {})",
            doc.topology_alternatives.join(", ")
        );
    }
    if doc.exception_calls > 0 {
        let _ =
            writeln!(s, "exceptions: {} calls to peers outside the topology", doc.exception_calls);
    }
    if doc.polls.polls > 0 {
        let _ = writeln!(s, "polling:   {}", describe_polls(&doc.polls));
    }
    if !no_local_calls(&doc.local_calls) {
        let line = describe_local(&doc.local_calls, doc.scaling.app_time_s, doc.n_ranks as usize);
        let _ = writeln!(s, "local:     {line}");
    }
    if doc.buffered_sends > 0 {
        let _ = writeln!(s, "sends:     {}", describe_buffered(doc.buffered_sends));
    }
    if doc.pinned_any_source > 0 {
        let _ = writeln!(s, "sources:   {}", describe_pinned(doc.pinned_any_source));
    }
    if doc.replayed_blocks > 0 {
        let _ = writeln!(
            s,
            "compute:   {} blocks of the loops replay the durations recorded in the iterations \
             run, the same iterations on every rank; the others draw theirs",
            doc.replayed_blocks
        );
    }
    let sc = &doc.scaling;
    let _ = writeln!(
        s,
        "scaling:   main loop {} of {} iterations ({:.1} % of the time); recorded {:.6} s ({}); target {:.6} s; expected skeleton {:.6} s; factor {:.4}",
        sc.main_run,
        sc.main_full,
        sc.main_share * 100.0,
        sc.app_time_s,
        sc.app_time_source,
        sc.target_s,
        sc.skeleton_estimate_s,
        sc.factor
    );
    if sc.warmup_s > 0.0 {
        let _ = writeln!(
            s,
            "           warm-up: the iteration of the main loop before it ({:.1} % of the time) is not run, priced as one more",
            100.0 * sc.warmup_s / sc.app_time_s
        );
    }
    if sc.compute_removed_s > 0.0 {
        let _ = writeln!(
            s,
            "           compute: {:.6} s of computation per rank not run, added back to the prediction",
            sc.compute_removed_s
        );
    }
    if sc.compute_shrink < 1.0 {
        let _ = writeln!(
            s,
            "           compute: blocks without drawn deviations run {:.1} % of what they keep",
            100.0 * sc.compute_shrink
        );
    }
    if !sc.note.is_empty() {
        let _ = writeln!(s, "           {}", sc.note);
    }
    let m = &doc.matching;
    let _ = writeln!(
        s,
        "matching:  {} global pairs ({} balanced), {} local sends, {} local receives; local calls {}",
        m.global_pairs, m.balanced, m.local_sends, m.local_recvs, m.local_policy
    );
    let _ = writeln!(
        s,
        "check:     {} operations over {} ranks run to completion in {:.3} s",
        doc.check.operations, doc.check.ranks, doc.check.seconds
    );
    for (i, c) in doc.classes.iter().enumerate() {
        let _ =
            writeln!(s, "class {i}: {} ranks, {} calls: {}", c.ranks.len(), c.calls, c.notation);
        for p in &c.phases {
            let _ = writeln!(
                s,
                "  {:<10} {:>6} of {:>6} iterations, {:>6} calls and {:.4e} s compute each — {}",
                p.name, p.run, p.full, p.calls, p.compute_s, p.origin
            );
        }
    }
    s
}
