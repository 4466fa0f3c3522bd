//! `skeleton.json`: the provenance of a skeleton folder — the trace it came from, the topology
//! and classes found, the loop nests and phases, the matching, the scaling and prediction
//! factors, the deadlock check, and the program itself (what both back ends render) — with its
//! reader and the plain-text view `mpiskel inspect` prints.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mpiskel_logicalize::{LogicalTrace, Structure};
use mpiskel_trace::local::LocalCalls;
use mpiskel_trace::polls::PollFolding;
use mpiskel_trace::stretch::StretchCut;
use serde::{Deserialize, Serialize};

use mpiskel_cut::pipeline::{Built, CheckSummary};
use mpiskel_cut::Scaling;
use mpiskel_program::MatchingReport;
use mpiskel_program::Skeleton;

/// Why a folder's `skeleton.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The file could not be read.
    #[error("reading {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file is not a skeleton description.
    #[error("{path}: not a skeleton description: {error}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        error: serde_json::Error,
    },
    /// The file describes something else.
    #[error("{path}: kind is {kind:?}, not {KIND:?}")]
    Kind {
        /// The file.
        path: PathBuf,
        /// The kind it names.
        kind: String,
    },
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
    /// Of those, the point-to-point calls only some of its ranks make (a multigrid's coarse
    /// levels; the others make them toward `MPI_PROC_NULL`).
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub guarded_calls: usize,
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
    /// What its time is multiplied by beyond its iterations (a part of a stretch cut short;
    /// [`mpiskel_program::Phase::scale`]).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scale: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
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
    /// Stretches between collectives of all ranks that fold into no loop, cut short
    /// (`mpiskel_trace::stretch`); their calls left without a partner are in `local_calls`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stretches: Vec<StretchCut>,
    /// Receives and probes posted with `MPI_ANY_SOURCE` that the skeleton pins to the source the
    /// traced run gave them, because with the wildcard the program could deadlock (0: none).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub pinned_any_source: usize,
    /// Sends the skeleton makes buffered (`MPI_Bsend`, `MPI_Ibsend`), because the program
    /// relies on the MPI library buffering them as the traced run did (0: none).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub buffered_sends: usize,
    /// Of those, the non-blocking sends (`MPI_Ibsend`) whose waits relied on the buffering.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub buffered_nonblocking: usize,
    /// Tags the application gave its messages that the skeleton keeps apart, because with one
    /// tag per channel a receive would take a message meant for another and the program could
    /// block (0: one tag per channel).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub traced_tags: usize,
    /// Compute blocks of the loops that replay the durations the ranks recorded in the
    /// iterations the skeleton runs, the same iterations on every rank (`mpiskel_cut::replay`;
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
    /// The fidelity check ([`mpiskel_cut::fidelity`]): the application and the skeleton simulated on
    /// each platform of the panel, the reference first. Empty where the build skipped it
    /// (`mpiskel build --no-check`).
    #[serde(default)]
    pub fidelity: Vec<mpiskel_cut::fidelity::PanelRow>,
    /// The candidates the fidelity check measured and which was kept (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fidelity_decision: Option<mpiskel_cut::fidelity::Decision>,
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

/// The `kind` of every `skeleton.json`.
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

/// The note on sends made buffered: `n` in all, `nonblocking` of them `MPI_Ibsend`.
pub fn describe_buffered(n: usize, nonblocking: usize) -> String {
    let which = if nonblocking == 0 {
        format!("{n} blocking sends are buffered (MPI_Bsend")
    } else if nonblocking == n {
        format!("{n} non-blocking sends are buffered (MPI_Ibsend")
    } else {
        format!(
            "{n} sends are buffered ({} blocking ones as MPI_Bsend, {nonblocking} non-blocking \
             ones, whose waits relied on it, as MPI_Ibsend",
            n - nonblocking
        )
    };
    format!(
        "{which}, with a buffer the skeleton attaches): the traced run completed them before \
         their receives were posted (the MPI library buffered them), and without that the \
         program could block; --strict refuses such a trace"
    )
}

/// The note on messages told apart by their traced tags.
pub fn describe_traced_tags(n: usize) -> String {
    format!(
        "messages keep the {n} tags the application gave them: with one tag per direction, a \
         receive posted early for one kind of message would take another sent before it (the \
         application received them in another order than they were sent) and the program could \
         block"
    )
}

fn no_local_calls(l: &LocalCalls) -> bool {
    l.calls() == 0 && l.unmatched_sendrecv == 0
}

/// One sentence on the stretches cut short ([`mpiskel_trace::stretch`]).
pub fn describe_stretches(cuts: &[StretchCut], app_time_s: f64) -> String {
    let span: f64 = cuts.iter().map(|c| c.span_s).sum();
    let kept: f64 = cuts.iter().map(|c| c.kept_s).sum();
    let (calls, dropped): (u64, u64) =
        cuts.iter().fold((0, 0), |(a, b), c| (a + c.calls, b + c.dropped));
    let share = if app_time_s > 0.0 { 100.0 * span / app_time_s } else { 0.0 };
    let each: Vec<String> = cuts
        .iter()
        .map(|c| {
            let polls = if c.polls > 0 {
                format!(" (with {} of their {} failed polls)", c.kept_polls, c.polls)
            } else {
                String::new()
            };
            format!(
                "after collective {}: {} of {} calls{polls}, {:.6} of its {:.6} s, ×{:.3}",
                c.index,
                c.kept_calls,
                c.calls,
                c.kept_s,
                c.span_s,
                c.scale()
            )
        })
        .collect();
    format!(
        "{} stretches between collectives of all ranks fold into no loop and take {share:.1} % of \
         the application's time ({span:.6} s): each rank runs the first calls that make the same \
         share of its own work in each, its calls and the polls folded into them ({kept:.6} s in \
         all; {dropped} of their {calls} calls are left out with the ends of messages and the \
         requests they held), and the skeleton scales the time of that part by the stretch's \
         work over the work kept ({})",
        cuts.len(),
        each.join("; ")
    )
}

/// One line on the time steps cut short ([`mpiskel_cut::step_cut`]).
pub fn describe_steps_cut(c: &mpiskel_cut::scale::StepsCut, app_time_s: f64) -> String {
    let share = if app_time_s > 0.0 { 100.0 * c.removed_s / app_time_s } else { 0.0 };
    let (n, take, each) = match c.steps {
        1 => ("1 time step".to_owned(), "takes", "it"),
        n => (format!("{n} time steps"), "take", "each"),
    };
    format!(
        "{n} that the skeleton runs {take} longer than the whole skeleton may: {each} runs, in \
         every class, up to the same collective of all ranks and leaves the rest of the step \
         out (at least {:.1} % of its recorded time and {} calls kept), and its time is \
         multiplied by the step's recorded time over the part's; {:.6} s of the application's \
         time ({share:.1} %) are not run",
        100.0 * c.least_share,
        mpiskel_cut::step_cut::MIN_KEPT_CALLS,
        c.removed_s
    )
}

/// The note on the collectives put in rank 0's order
/// ([`mpiskel_trace::collective_order`]).
pub fn describe_aligned(a: &mpiskel_trace::collective_order::Aligned) -> String {
    let ranks: Vec<String> = a.ranks.iter().map(u32::to_string).collect();
    let later = a.calls_moved - a.made_earlier;
    let mut moved = Vec::new();
    if later > 0 {
        moved.push(format!(
            "{later} collectives are made later than traced, in one order with the other ranks' \
             (each moved past non-blocking starts only)"
        ));
    }
    if a.made_earlier > 0 {
        moved.push(format!(
            "{} calls are made earlier than traced, at the call their rank waited in, where \
             another rank waited for them ({} of them past a wait: a thread of its own made \
             them, which did not wait)",
            a.made_earlier, a.past_waits
        ));
    }
    format!(
        "on rank{} {}, {}: the application's ranks made the collectives of different \
         communicators in different orders (threads, each with its communicator, or \
         collectives that returned before every member had made them), which one thread per \
         rank cannot do without waiting forever (the computation between calls stays where it \
         was)",
        if a.ranks.len() == 1 { "" } else { "s" },
        ranks.join(", "),
        moved.join("; ")
    )
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

/// One line on the polling loops and the runs of partial completions folded.
pub fn describe_polls(p: &PollFolding) -> String {
    let mut parts = Vec::new();
    if p.polls > 0 {
        parts.push(format!(
            "{} failed polls folded: {} polling loops into the blocking call that ended them, {} \
             kept as one poll; {:.6} s of polling became waiting, {:.6} s of work between polls \
             stays compute",
            p.polls,
            p.folded_runs,
            p.kept_runs,
            p.waiting_ns as f64 * 1e-9,
            p.work_ns as f64 * 1e-9
        ));
    }
    if p.partial_runs > 0 {
        parts.push(format!(
            "{} runs of partial completions ({} calls of MPI_Waitsome, MPI_Waitany, or tests \
             that completed some requests of an array) folded into one MPI_Waitall each: which \
             requests each call completed was the order the messages arrived in; the \
             computation between the calls follows the wait",
            p.partial_runs, p.partial_calls
        ));
    }
    parts.join("; ")
}

impl SkeletonDocument {
    /// The document of a skeleton just built from `lt`: `meta` names it, `lang` is the back
    /// end's name (`c`, `rust`); `polls` and `local_calls` are what the trace's reading folded
    /// and left out.
    pub fn new(
        built: &Built,
        lt: &LogicalTrace,
        meta: &crate::c::Meta,
        lang: &str,
        polls: PollFolding,
        local_calls: LocalCalls,
    ) -> SkeletonDocument {
        let alternatives = match &lt.identification.structure {
            Structure::Topology { alternatives, .. } => alternatives.clone(),
            _ => Vec::new(),
        };
        SkeletonDocument {
            kind: KIND.into(),
            version: 1,
            name: meta.name.clone(),
            trace: meta.trace.clone(),
            lang: lang.into(),
            mpiskel_version: meta.version.clone(),
            n_ranks: built.skeleton.n_ranks,
            topology: built.skeleton.topology.clone(),
            topology_alternatives: alternatives,
            exception_calls: lt.exceptions.calls,
            polls,
            local_calls,
            stretches: lt.stretches.clone(),
            pinned_any_source: built.pinned_any_source,
            buffered_sends: built.buffered_sends,
            buffered_nonblocking: built.buffered_nonblocking,
            traced_tags: built.traced_tags,
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
                    guarded_calls: lc.ops.iter().filter(|op| !op.absent.is_empty()).count(),
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
                            scale: p.scale,
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
            fidelity: Vec::new(),
            fidelity_decision: None,
        }
    }
}

/// Reads `DIR/skeleton.json`, if DIR is a skeleton folder (`None` if it is not one).
pub fn read(dir: &Path) -> Result<Option<SkeletonDocument>, DocumentError> {
    let path = dir.join("skeleton.json");
    if !dir.is_dir() || !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|error| DocumentError::Read { path: path.clone(), error })?;
    let doc: SkeletonDocument = serde_json::from_str(&text)
        .map_err(|error| DocumentError::Parse { path: path.clone(), error })?;
    if doc.kind != KIND {
        return Err(DocumentError::Kind { path, kind: doc.kind });
    }
    Ok(Some(doc))
}

/// The plain-text view of a skeleton folder (`mpiskel inspect DIR`).
pub fn render(doc: &SkeletonDocument) -> String {
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
    if doc.polls.any() {
        let _ = writeln!(s, "polling:   {}", describe_polls(&doc.polls));
    }
    if !no_local_calls(&doc.local_calls) {
        let line = describe_local(&doc.local_calls, doc.scaling.app_time_s, doc.n_ranks as usize);
        let _ = writeln!(s, "local:     {line}");
    }
    if !doc.stretches.is_empty() {
        let _ = writeln!(
            s,
            "stretches: {}",
            describe_stretches(&doc.stretches, doc.scaling.app_time_s)
        );
    }
    if doc.buffered_sends > 0 {
        let note = describe_buffered(doc.buffered_sends, doc.buffered_nonblocking);
        let _ = writeln!(s, "sends:     {note}");
    }
    if doc.pinned_any_source > 0 {
        let _ = writeln!(s, "sources:   {}", describe_pinned(doc.pinned_any_source));
    }
    if doc.traced_tags > 0 {
        let _ = writeln!(s, "tags:      {}", describe_traced_tags(doc.traced_tags));
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
    if let Some(c) = &sc.steps_cut {
        let _ = writeln!(s, "           steps: {}", describe_steps_cut(c, sc.app_time_s));
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
    if let Some(t) = &sc.traffic {
        let _ = writeln!(s, "           communication: {}", t.describe());
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
        let guarded = if c.guarded_calls == 0 {
            String::new()
        } else {
            format!(" ({} made by some ranks only)", c.guarded_calls)
        };
        let _ = writeln!(
            s,
            "class {i}: {} ranks, {} calls{guarded}: {}",
            c.ranks.len(),
            c.calls,
            c.notation
        );
        for p in &c.phases {
            let scaled = if p.scale == 1.0 {
                String::new()
            } else {
                format!(" (part of a stretch cut short: its time ×{:.3})", p.scale)
            };
            let _ = writeln!(
                s,
                "  {:<10} {:>6} of {:>6} iterations, {:>6} calls and {:.4e} s compute each — {}{scaled}",
                p.name, p.run, p.full, p.calls, p.compute_s, p.origin
            );
        }
    }
    if !doc.fidelity.is_empty() {
        let _ = writeln!(s, "fidelity:  {}", mpiskel_cut::fidelity::describe(&doc.fidelity));
        for line in mpiskel_cut::fidelity::table(&doc.fidelity).lines() {
            let _ = writeln!(s, "  {line}");
        }
    }
    s
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}
