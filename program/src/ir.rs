//! The program IR: layout, directions, communicators, calls, statements, phases, classes and
//! the skeleton, with the queries the back ends, the check and the scaling make of it.

use mpiskel_compress::When;
use serde::{Deserialize, Serialize};

use super::Dist;
use crate::ir_calls::{Call, Comm, Dir, Layout, Pinned};

/// A statement of a class program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "stmt")]
pub enum Stmt {
    /// Busy computation for this many seconds (of the machine the trace was recorded on).
    Compute {
        /// Seconds (the mean).
        seconds: f64,
        /// Where the recorded gaps spread: the distribution (index into
        /// [`Skeleton::distributions`]) each execution draws its duration from.
        dist: Option<usize>,
        /// Seconds taken out of every rank's duration to shorten the skeleton (a long set-up
        /// block; see [`mpiskel_cut::scale`]): the same amount on every rank, so that the ranks'
        /// differences, and the waiting they cause, stay. The runtime adds the time it would
        /// have taken back into its phase's prediction.
        #[serde(default, skip_serializing_if = "is_zero")]
        removed: f64,
        /// Per-rank factors (index into [`Skeleton::compute_factors`]) where the ranks of the
        /// class differ at this block beyond their weights (a rank with more of the grid's
        /// boundary, or the root of a coarse level, computes more here and not elsewhere);
        /// each rank's duration is multiplied by its factor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        factors: Option<usize>,
        /// The recorded durations this block replays instead of drawing (index into
        /// [`Skeleton::replays`]; see [`mpiskel_cut::replay`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay: Option<usize>,
        /// Every rank runs only a short part of the block (max(5 %, 50 µs) of its own duration)
        /// and the rest is added back to its phase's prediction as the most any rank skipped: a
        /// block outside the main loop right before a collective of every rank, where the
        /// rank that computes longest (the root reading the input) is what every rank waited
        /// for (see [`mpiskel_cut::compute_cut::cut_compute`]).
        #[serde(default, skip_serializing_if = "is_false")]
        keep_only: bool,
        /// The leaf of the class's loop nest the block stands for (not serialized; `None` for
        /// blocks merged from several leaves).
        #[serde(skip)]
        leaf: Option<usize>,
        /// Where the block runs its mean instead of drawing ([`mpiskel_cut::tails`]): why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pinned: Option<Pinned>,
    },
    /// An MPI call.
    Call {
        /// The call.
        call: Call,
        /// Polls that found nothing before the call in the application, folded into it
        /// (`mpiskel_trace::polls`; the mean over the call's executions): the skeleton makes as
        /// many (`MPI_Iprobe` of any source and tag) before it. Each runs the MPI library's
        /// progress engine, which is what a program that polls once per item of its own work
        /// spends its time on.
        #[serde(default, skip_serializing_if = "is_zero_u32")]
        polls: u32,
        /// Recorded wall seconds from the previous call's return to this call's beyond the
        /// computation before it: the call's own time, waiting included (and the time the rank
        /// was descheduled in the gap, where the gap is processor time); the mean over the
        /// leaf's executions, with those of calls dropped just before it; 0 where the trace
        /// holds no call times ([`Skeleton::call_times`]). Not serialized: the phases'
        /// [`Phase::span_s`] sum it.
        #[serde(skip)]
        wait_s: f64,
        /// Of `wait_s`, the seconds the ranks spent off the processor during the compute block
        /// before the call (descheduled, where they shared cores; 0 where the trace holds no
        /// processor times): they wait for a core while they compute, so that time shrinks with
        /// the block where the computation cut takes some of it out. Not serialized.
        #[serde(skip)]
        off_s: f32,
    },
    /// A loop.
    Loop {
        /// Nesting depth (1 for loops directly inside a phase's loop); names the loop variable.
        depth: usize,
        /// Iterations.
        count: u64,
        /// Body.
        body: Vec<Stmt>,
        /// The loop in Xu & Subhlok's (2008) notation.
        note: String,
    },
    /// The body of a time-step loop (the phase's loop; see [`StepSchedule`]): each iteration
    /// runs the case of its step's kind.
    Steps {
        /// One case per kind.
        cases: Vec<StepCase>,
    },
    /// Runs only in the first or last iteration of the enclosing loop.
    Guard {
        /// Which iteration.
        when: When,
        /// Depth of the enclosing loop (0: the phase's loop).
        depth: usize,
        /// Iterations of the enclosing loop (0 for the phase's loop, whose count is cut).
        count: u64,
        /// Body.
        body: Vec<Stmt>,
    },
}

/// One kind of time step of a [`Stmt::Steps`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCase {
    /// Steps of this kind in the application.
    pub full: u64,
    /// Steps of this kind the skeleton runs.
    pub run: u64,
    /// One step's statements.
    pub body: Vec<Stmt>,
    /// The kind's body in the notation of Xu & Subhlok (2008, §3).
    pub note: String,
    /// What the kind's prediction (its time × `full / run`) is multiplied by: where the
    /// skeleton runs only some kinds of a family ([`mpiskel_cut::families`]), the family's recorded
    /// time over that of the kinds it runs; 1 otherwise.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scale: f64,
    /// Where the skeleton runs only the first part of the kind's step
    /// ([`mpiskel_cut::step_cut`]): what it keeps and what the rest is priced at (in `scale`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<super::StepCut>,
}

impl StepCase {
    /// How the kind's time is priced beyond the steps it runs, for the comment above its code:
    /// the rest of a step cut short ([`mpiskel_cut::step_cut`]) and the kinds of its family that do
    /// not run ([`mpiskel_cut::families`]); empty where neither.
    pub fn pricing(&self) -> String {
        let mut s = String::new();
        let family = match &self.cut {
            Some(cut) => {
                s = format!(
                    ", cut short: its first {} of {} calls run, to its collective of all ranks \
                     no. {}, timed ×{:.3} for the rest of the step",
                    cut.kept_calls, cut.calls, cut.collective, cut.factor
                );
                let f = self.scale / cut.factor;
                ((f - 1.0).abs() > 1e-9).then_some(f)
            }
            None => (self.scale != 1.0).then_some(self.scale),
        };
        if let Some(f) = family {
            s += &format!(", timed ×{f:.3} for the steps of its family that do not run");
        }
        s
    }
}

/// Which steps a time-step loop runs: the kind of every step of the application, and the steps
/// the skeleton runs (all of them until the loop is cut).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSchedule {
    /// The kind (case of the phase's [`Stmt::Steps`]) of every step of the application.
    pub kinds: Vec<u32>,
    /// The steps the skeleton runs, ascending (indices into `kinds`).
    pub run: Vec<u32>,
    /// The positions of the class program one step of each kind covers (not serialized).
    #[serde(skip)]
    pub lens: Vec<u64>,
}

impl StepSchedule {
    /// The kind of each step the skeleton runs, in order.
    pub fn run_kinds(&self) -> Vec<u32> {
        self.run.iter().map(|&i| self.kinds[i as usize]).collect()
    }

    /// How many of the positions `from..to` of the class program the steps the skeleton leaves
    /// out cover, the steps laid end to end from position `start` ([`Self::lens`]); `None` where
    /// the lengths are not known.
    pub fn left_out(&self, start: u64, (from, to): (u64, u64)) -> Option<u64> {
        let mut run = self.run.iter().peekable();
        let (mut at, mut out) = (start, 0);
        for (i, &k) in self.kinds.iter().enumerate() {
            let end = at + *self.lens.get(k as usize)?;
            if run.next_if(|&&r| r as usize == i).is_none() {
                out += end.min(to).saturating_sub(at.max(from));
            }
            at = end;
        }
        Some(out)
    }
}

/// A top-level part of a class program: a loop of the trace, or the straight-line calls between
/// loops. Each is timed separately; its prediction is its time × `full / run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Name, e.g. `main_loop`, `loop_2`, `setup`.
    pub name: String,
    /// Iterations of the application (1 for straight-line code).
    pub full: u64,
    /// Iterations the skeleton runs.
    pub run: u64,
    /// Whether this phase is a loop (so `run` may be cut).
    pub is_loop: bool,
    /// One iteration's statements (straight-line code: all of it).
    pub body: Vec<Stmt>,
    /// Where it came from: the positions of the class's calls it covers.
    pub origin: String,
    /// Recorded computation per iteration, seconds.
    pub compute_s: f64,
    /// Recorded wall time per iteration, seconds ([`span_of`] its body): its computation and
    /// its calls' waiting where the trace recorded call times ([`Skeleton::call_times`]), its
    /// computation otherwise (not serialized).
    #[serde(skip)]
    pub span_s: f64,
    /// Calls per iteration.
    pub calls: u64,
    /// An inner loop of the body cut as well (when one iteration of the phase is already more
    /// than the skeleton's budget); timed on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner: Option<InnerCut>,
    /// For a time-step loop (its body one [`Stmt::Steps`]): the kind of each step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepSchedule>,
    /// For the main loop: copies of one of its iterations elsewhere in the program that the
    /// skeleton does not run (an untimed warm-up iteration, [`mpiskel_cut::warmup`]), each priced as
    /// one more iteration of this loop.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub warmup: u64,
    /// For a [`WARMUP`] phase the skeleton skips: the statements it had (the body left runs only
    /// the computation it had beyond one iteration of the main loop).
    #[serde(skip)]
    pub skipped: Option<Vec<Stmt>>,
    /// What its time is multiplied by, beyond its iterations, to stand for the application's:
    /// for a phase of a stretch cut short (`mpiskel_trace::stretch`), the stretch's recorded
    /// span over the part the skeleton runs; 1 elsewhere.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scale: f64,
    /// The positions of the class program it covers, `from..to` (not serialized).
    #[serde(skip)]
    pub positions: (u64, u64),
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// The name of the phase that holds a warm-up iteration of the main loop ([`mpiskel_cut::warmup`]).
pub const WARMUP: &str = "warmup";

pub(super) fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

pub(super) fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

/// An inner loop of a phase's body run fewer times than recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InnerCut {
    /// Index of the loop among the body's statements.
    pub index: usize,
    /// Its iterations in the application, per iteration of the phase.
    pub full: u64,
    /// Iterations the skeleton runs.
    pub run: u64,
}

/// One process class: ranks running the same program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassProgram {
    /// Ranks (folded ones included).
    pub ranks: Vec<u32>,
    /// Phases in order.
    pub phases: Vec<Phase>,
    /// The loop nest in Xu & Subhlok's (2008) notation.
    pub notation: String,
}

impl Stmt {
    /// A compute block of `seconds`, fixed, whole, with nothing else attached.
    pub fn block(seconds: f64) -> Stmt {
        Stmt::Compute {
            seconds,
            dist: None,
            removed: 0.0,
            factors: None,
            replay: None,
            keep_only: false,
            leaf: None,
            pinned: None,
        }
    }
}

impl Phase {
    /// The kind of each step a time-step loop runs, as the skeleton runs them: `run` steps,
    /// the table of its schedule's steps ([`StepSchedule::run_kinds`]) read over again where
    /// `run` is the longer (`sk_steps_count`; `table[it % rows]`). `None` for other phases.
    pub fn kinds_run(&self) -> Option<Vec<u32>> {
        let table = self.steps.as_ref()?.run_kinds();
        if table.is_empty() {
            return Some(Vec::new());
        }
        Some((0..self.run as usize).map(|it| table[it % table.len()]).collect())
    }

    /// A phase of `full` iterations (all run), one of which is `body`, from `origin`.
    pub fn new(
        name: String,
        full: u64,
        is_loop: bool,
        body: Vec<Stmt>,
        origin: String,
        positions: (u64, u64),
    ) -> Phase {
        Phase {
            scale: 1.0,
            positions,
            name,
            full,
            run: full,
            is_loop,
            compute_s: compute_of(&body),
            span_s: span_of(&body),
            calls: calls_in(&body),
            inner: None,
            steps: None,
            warmup: 0,
            skipped: None,
            body,
            origin,
        }
    }

    /// Iterations of the application its time stands for: its own and the warm-up iterations
    /// it prices.
    pub fn priced(&self) -> u64 {
        self.full + self.warmup
    }

    /// What its measured time is multiplied by to stand for the application's: its
    /// iterations, `full / run`, and its [`Phase::scale`].
    pub fn multiplier(&self) -> f64 {
        self.full as f64 / self.run.max(1) as f64 * self.scale
    }
}

impl ClassProgram {
    /// Index of the main loop among the phases, if the class has one.
    pub fn main_loop_index(&self) -> Option<usize> {
        self.phases.iter().position(|p| p.name == "main_loop")
    }

    /// The main loop's phase, if the class has one.
    pub fn main_loop(&self) -> Option<&Phase> {
        self.main_loop_index().map(|i| &self.phases[i])
    }
}

/// How the sends and receives of the program were treated (Xu & Subhlok 2008, Fig. 3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MatchingReport {
    /// Global pairs over all classes.
    pub global_pairs: usize,
    /// Global pairs whose sizes were balanced to their median.
    pub balanced: usize,
    /// Local sends and receives: no partner in their class's pattern.
    pub local_sends: usize,
    /// Local receives.
    pub local_recvs: usize,
    /// What was done with local calls.
    pub local_policy: String,
}

/// The skeleton program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skeleton {
    /// Number of ranks.
    pub n_ranks: u32,
    /// Name of the topology found.
    pub topology: String,
    /// How neighbours are found.
    pub layout: Layout,
    /// Directions used.
    pub directions: Vec<Dir>,
    /// Traced tags whose messages run with a tag of their own, (tag as traced, tag run): those
    /// of the messages that receives from any source take, or with `all_tags` every one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub message_tags: Vec<(i32, i32)>,
    /// Whether every message runs with the tag of its traced tag (`message_tags`) rather than
    /// its channel's ([`crate::Tags::Traced`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_tags: bool,
    /// Communicators used (index 0 is `MPI_COMM_WORLD`).
    pub comms: Vec<Comm>,
    /// Class programs.
    pub classes: Vec<ClassProgram>,
    /// Class of each rank.
    pub class_of_rank: Vec<u32>,
    /// Coordinates of each rank in the topology's grid (empty without one).
    pub grid_coords: Vec<Vec<usize>>,
    /// Request slots.
    pub n_slots: u32,
    #[serde(default)]
    /// Slots that a request is started in while an earlier one there may still be pending (a
    /// Waitany completed its neighbour instead): the code waits for it before starting anew.
    pub reused_slots: Vec<u32>,
    /// Send buffer bytes.
    pub send_bytes: u64,
    /// Receive buffer bytes.
    pub recv_bytes: u64,
    /// Matching.
    pub matching: MatchingReport,
    /// Distributions of compute blocks whose recorded durations spread.
    #[serde(default)]
    pub distributions: Vec<Dist>,
    /// Each rank's systematic compute weight: its recorded gaps over its class's mean (every
    /// compute block of the rank is multiplied by it).
    #[serde(default)]
    pub rank_weight: Vec<f64>,
    /// Bytes each rank sends at a send whose class's ranks send different sizes there (an
    /// uneven decomposition): one table per distinct set of sizes, one entry per rank (0 for
    /// ranks of other classes). Sends name theirs in `sizes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_tables: Vec<Vec<u64>>,
    /// Per-rank presence of the calls only some ranks of a class make ([`Peer::Only`]): `true`
    /// where rank `r` makes the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub presence_tables: Vec<Vec<bool>>,
    /// Per-rank factors of compute blocks whose class's ranks differ there beyond their
    /// weights: one table per such block, one entry per rank (1 for ranks of other classes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute_factors: Vec<Vec<f64>>,
    /// The buffer the skeleton attaches for its buffered sends (`MPI_Bsend`, `MPI_Ibsend`): sends
    /// that the run completed before their receive was posted, and without which the program
    /// could block (see [`mpiskel_cut::pipeline::make`]). `None` where it makes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_buffer: Option<SendBuffer>,
    /// Recorded durations of the compute blocks that replay them (see [`mpiskel_cut::replay`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replays: Vec<super::Replay>,
    /// Whether the compute blocks are processor time (the trace recorded it): natively, the
    /// runtime then holds the prediction to what the node's processors could run
    /// (`sk_processor_time` in `mpiskel_rt.c`). Wall-time blocks of ranks that shared their
    /// cores hold the waiting for a core already.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub processor_time: bool,
    /// Whether the trace recorded how long calls took (`LogicalTrace::call_times`): the calls'
    /// [`Stmt::Call`] `wait_s` then hold it, and [`mpiskel_cut::scale`] splits the recorded time by
    /// the phases' wall time ([`Phase::span_s`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub call_times: bool,
}

/// What the buffered sends of a skeleton need: the most any rank sends buffered in one run of
/// the skeleton as built, for `main_run` iterations of its main loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SendBuffer {
    /// Bytes.
    pub bytes: u64,
    /// Messages (each takes `MPI_BSEND_OVERHEAD` more).
    pub messages: u64,
    /// Iterations of the main loop those are for; a run of more iterations attaches in
    /// proportion.
    pub main_run: u64,
}

/// Where each class of a skeleton has the phases of each name. Lowering names a class's phases
/// apart, and a program that folds into few loops has thousands of them (LAMMPS `balance` on 4
/// ranks: 19,248 per class), so the passes that look a phase of one class up in the others by
/// name use this instead of a scan of the class. Built from one skeleton, it holds for its
/// clones and for any change that leaves each class's list of phases as it is (cuts change how
/// often a phase runs, not which phases there are).
///
/// # Complexity
/// O(phases) to build; a look-up is O(1) expected (plus the name's length).
#[derive(Debug, Clone, Default)]
pub struct PhaseIndex(Vec<std::collections::HashMap<String, Vec<usize>>>);

impl PhaseIndex {
    /// The index of the phases of `classes` (a skeleton's).
    pub fn new(classes: &[ClassProgram]) -> PhaseIndex {
        PhaseIndex(
            classes
                .iter()
                .map(|c| {
                    let mut at = std::collections::HashMap::<String, Vec<usize>>::new();
                    for (i, p) in c.phases.iter().enumerate() {
                        at.entry(p.name.clone()).or_default().push(i);
                    }
                    at
                })
                .collect(),
        )
    }

    /// The position in class `class`'s phases of its first phase named `name`.
    pub fn get(&self, class: usize, name: &str) -> Option<usize> {
        self.all(class, name).first().copied()
    }

    /// The positions in class `class`'s phases of every phase named `name`, in order.
    pub fn all(&self, class: usize, name: &str) -> &[usize] {
        self.0.get(class).and_then(|c| c.get(name)).map_or(&[], Vec::as_slice)
    }
}

impl Skeleton {
    /// What each rank of `class` multiplies a compute block with `factors` by: its weight times
    /// its factor there.
    pub fn block_weights(&self, class: &ClassProgram, factors: Option<usize>) -> Vec<f64> {
        class
            .ranks
            .iter()
            .map(|&r| {
                self.rank_weight.get(r as usize).copied().unwrap_or(1.0)
                    * factor_of(&self.compute_factors, factors, r)
            })
            .collect()
    }
}

/// The factor of rank `r` at a compute block with `factors` (1 without a table).
pub fn factor_of(tables: &[Vec<f64>], factors: Option<usize>, r: u32) -> f64 {
    factors.and_then(|t| tables.get(t)).and_then(|t| t.get(r as usize)).copied().unwrap_or(1.0)
}

/// Whether a flag is off (left out of the JSON).
pub fn is_false(x: &bool) -> bool {
    !*x
}

/// Whether a number is zero (left out of the JSON).
pub fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Recorded compute seconds of one pass over `body` (loops at their counts; guards once).
pub fn compute_of(body: &[Stmt]) -> f64 {
    body.iter()
        .map(|s| match s {
            Stmt::Compute { seconds, .. } => *seconds,
            Stmt::Call { .. } => 0.0,
            Stmt::Loop { count, body, .. } => *count as f64 * compute_of(body),
            Stmt::Guard { body, .. } => compute_of(body),
            Stmt::Steps { cases } => per_step(cases, compute_of),
        })
        .sum()
}

/// Recorded wall seconds of one pass over `body`: its computation ([`compute_of`]) and the
/// time its calls took, waiting included (`wait_s`, see [`Stmt::Call`]; 0 where the trace
/// holds no call times).
pub fn span_of(body: &[Stmt]) -> f64 {
    body.iter()
        .map(|s| match s {
            Stmt::Compute { seconds, .. } => *seconds,
            Stmt::Call { wait_s, .. } => *wait_s,
            Stmt::Loop { count, body, .. } => *count as f64 * span_of(body),
            Stmt::Guard { body, .. } => span_of(body),
            Stmt::Steps { cases } => per_step(cases, span_of),
        })
        .sum()
}

/// [`compute_of`] less what the computation cut takes out of each block
/// ([`mpiskel_cut::compute_cut`]): the recorded seconds one pass over `body` still runs.
pub fn kept_compute_of(body: &[Stmt]) -> f64 {
    body.iter()
        .map(|s| match s {
            Stmt::Compute { seconds, removed, .. } => (seconds - removed).max(0.0),
            Stmt::Call { .. } => 0.0,
            Stmt::Loop { count, body, .. } => *count as f64 * kept_compute_of(body),
            Stmt::Guard { body, .. } => kept_compute_of(body),
            Stmt::Steps { cases } => per_step(cases, kept_compute_of),
        })
        .sum()
}

/// Wall seconds that one second of the compute block `body[at]` took in the traced run: 1, and
/// the time its ranks spent off the processor during it (the `off_s` of the call right after
/// it) per second of its computation. Where a rank shared its core, the computation the cut
/// takes out of the block takes that much wall time with it; 1 for anything but a block.
pub fn wall_per_compute(body: &[Stmt], at: usize) -> f64 {
    match (body.get(at), body.get(at + 1)) {
        (Some(Stmt::Compute { seconds, .. }), Some(Stmt::Call { off_s, .. })) if *seconds > 0.0 => {
            1.0 + f64::from(*off_s) / seconds
        }
        _ => 1.0,
    }
}

/// The recorded wall seconds of one pass over `body` that the computation cut takes out
/// ([`mpiskel_cut::compute_cut`]): each block's removed seconds ([`kept_compute_of`]), with the time
/// off the processor that went with them ([`wall_per_compute`]).
pub fn removed_wall_of(body: &[Stmt]) -> f64 {
    body.iter()
        .enumerate()
        .map(|(i, s)| match s {
            Stmt::Compute { seconds, removed, .. } => {
                removed.min(*seconds).max(0.0) * wall_per_compute(body, i)
            }
            Stmt::Call { .. } => 0.0,
            Stmt::Loop { count, body, .. } => *count as f64 * removed_wall_of(body),
            Stmt::Guard { body, .. } => removed_wall_of(body),
            Stmt::Steps { cases } => per_step(cases, removed_wall_of),
        })
        .sum()
}

/// The mean over the application's steps of `f` of a step's body.
pub fn per_step(cases: &[StepCase], f: fn(&[Stmt]) -> f64) -> f64 {
    let n: u64 = cases.iter().map(|c| c.full).sum();
    if n == 0 {
        return 0.0;
    }
    cases.iter().map(|c| c.full as f64 * f(&c.body)).sum::<f64>() / n as f64
}

/// MPI calls in one pass over `body`.
pub fn calls_in(body: &[Stmt]) -> u64 {
    body.iter()
        .map(|s| match s {
            Stmt::Compute { .. } => 0,
            Stmt::Call { .. } => 1,
            Stmt::Loop { count, body, .. } => count * calls_in(body),
            Stmt::Guard { body, .. } => calls_in(body),
            Stmt::Steps { cases } => per_step(cases, |b| calls_in(b) as f64).round() as u64,
        })
        .sum()
}
