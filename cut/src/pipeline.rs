//! The whole construction, from a logical trace to a checked, scaled program: loop nests per
//! class, the program IR, scaling, instantiation and the deadlock check.

use std::time::Instant;

use mpiskel_compress::LoopNest;
use mpiskel_logicalize::LogicalTrace;
use serde::{Deserialize, Serialize};

use crate::compute_cut::cut_compute;
use crate::cut_runs::Stopped;
use crate::recorded::main_iterations;
use crate::scale::{
    cut_verified, default_target, scale, uncut, Reach, ScaleOptions, Scaling, MANY_ITERATIONS,
};
use mpiskel_program::deadlock::{check, CheckOp, Deadlock};
use mpiskel_program::instantiate::{instantiate, instantiate_traced};
use mpiskel_program::{build_tagged, BuildError, Skeleton, Stmt, Tags};

pub use crate::buffered::PinnedSources;
use crate::buffered::{buffer_blocked_sends, count_buffered, send_buffer};
use crate::over_target::{over_target, Steps};

/// What the deadlock check did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// Ranks executed.
    pub ranks: usize,
    /// Operations executed over all ranks.
    pub operations: usize,
    /// Seconds it took.
    pub seconds: f64,
}

/// A checked skeleton program.
#[derive(Debug, Clone)]
pub struct Built {
    /// The program.
    pub skeleton: Skeleton,
    /// How it was scaled.
    pub scaling: Scaling,
    /// The loop nest of each class.
    pub nests: Vec<LoopNest>,
    /// The deadlock check.
    pub check: CheckSummary,
    /// Seconds per stage: nests, build, check.
    pub stage_seconds: Vec<(String, f64)>,
    /// Receives and probes posted with `MPI_ANY_SOURCE` that take, in the skeleton, the source
    /// the traced run gave them (0 where the wildcards could stay: see [`make`]).
    pub pinned_any_source: usize,
    /// Tags the application gave its messages that the skeleton keeps apart, each with a tag
    /// of its own, because with one tag per channel a receive would take a message meant for a
    /// later one and the program could block (0: one tag per channel; see [`make`]).
    pub traced_tags: usize,
    /// Sends of the program made buffered (`MPI_Bsend`, `MPI_Ibsend`) because without the
    /// buffering the traced run had, the program could block (0: none; see [`make`]).
    pub buffered_sends: usize,
    /// Of those, the non-blocking ones (`MPI_Ibsend`).
    pub buffered_nonblocking: usize,
    /// Compute blocks that replay the durations recorded in the iterations they run, the same
    /// iterations on every rank (see [`crate::replay`]); the others draw theirs.
    pub replayed_blocks: usize,
}

/// Why no skeleton could be made.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The IR could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The program can block forever; it is not emitted.
    #[error("refusing to emit a program that can deadlock: {0}")]
    Deadlock(Deadlock),
}

pub use crate::timesteps::{nest_choices, nests_of};

/// Why loops other than the main one run whole although the skeleton is over its target.
/// Share of its target that a target made shorter ([`make_shorter`]) keeps at least.
const MIN_AIM: f64 = 0.1;

const SOME_LOOPS_WHOLE: &str = "some loops are not cut: the classes' loop nests do not \
     correspond, and cut alike those loops would lose messages that ranks of other classes still \
     send";

/// Why the main loop runs whole.
const MAIN_LOOP_WHOLE: &str = "main loop not cut: with it cut, some ranks would wait for \
     messages that ranks of other classes no longer send";

/// Builds, scales and checks the skeleton of `lt` for `target_s` seconds (by default
/// [`default_target`] of the main loop found), given the recorded application time; `compute_cut`: whether compute blocks may lose time when cutting loops is
/// not enough ([`crate::compute_cut::cut_compute`]).
///
/// Receives from `MPI_ANY_SOURCE` stay wildcards where the program is deadlock-free with them.
/// Where it is not — a master that answers whichever worker reported first, while each worker's
/// count of tasks is fixed in the skeleton as traced — every such receive (and probe) takes the
/// source the traced run gave it, which reproduces an order the application did run in; the
/// program is checked again, and [`Built::pinned_any_source`] says how many were pinned.
///
/// The check takes no send for buffered (a blocking `MPI_Send` completes when its receive is
/// posted, the wait for an `MPI_Isend` when it is received). A program that still cannot
/// finish and blocks in sends, or in waits for them, relied on the MPI library buffering them,
/// as the traced run did (it finished: those sends completed before their receives were
/// posted — an eager protocol). Those sends become `MPI_Bsend` (`MPI_Ibsend`), which is
/// buffered by definition, with a buffer the skeleton attaches: the sends a deadlock is stuck
/// on, one round after another, until the program passes or a deadlock holds no such send.
/// [`Built::buffered_sends`] says how many; [`make_strict`] refuses instead.
///
/// The skeleton tags a message by the direction it travels in. Where a rank received messages
/// of several tags from one neighbour in another order than they were sent (a receive for the
/// data posted before the partner's "ready" message arrives), a receive would take the wrong
/// message and the program could block: before buffering, and again with it, the program is
/// built with every traced tag a tag of its own ([`Tags::Traced`]), and
/// [`Built::traced_tags`] says how many.
///
/// `lt` is borrowed mutably for the sources pinned in place ([`PinnedSources`]) and given back
/// as it was.
pub fn make(
    lt: &mut LogicalTrace,
    app_time_s: f64,
    app_time_source: &str,
    target_s: Option<f64>,
    compute_cut: bool,
) -> Result<Built, PipelineError> {
    let plan = Plan::of(lt);
    make_planned(lt, plan, app_time_s, app_time_source, target_s, compute_cut)
}

/// The loop nests found in a logical trace, before its program is made ([`Plan::of`]): where a
/// look at the program they make ([`Plan::program`]) shows that the trace is better cut before
/// it is made (its stretches between collectives of all ranks, `mpiskel_trace::stretch`),
/// the program is not made whole and checked for nothing; where it does not, [`make_planned`]
/// makes it from the nests found.
#[derive(Debug)]
pub struct Plan {
    choices: Choices,
}

impl Plan {
    /// The loop nests `lt` offers ([`nest_choices`]).
    pub fn of(lt: &LogicalTrace) -> Plan {
        Plan { choices: Choices::of(lt) }
    }

    /// How many choices of loop nests the plan holds (at least one: the exact nests).
    pub fn len(&self) -> usize {
        self.choices.nests.len()
    }

    /// Whether the plan holds no choice (never: [`nest_choices`] offers the exact nests).
    pub fn is_empty(&self) -> bool {
        self.choices.nests.is_empty()
    }

    /// The plan of the `i`-th choice alone (`None` past the last): a candidate of its own for
    /// the fidelity-checked build ([`crate::fidelity`]).
    pub fn only(&self, i: usize) -> Option<Plan> {
        let nests = self.choices.nests.get(i)?.clone();
        Some(Plan { choices: Choices { nests: vec![nests], seconds: self.choices.seconds } })
    }

    /// The program of the first choice of loop nests, scaled as [`make`] scales it with every
    /// loop cut that any reach of the cut allows ([`Reach::Everything`]), its steps cut short
    /// and its computation cut (with `compute_cut`), none of it checked: as short as [`make`]'s
    /// program can be before the cuts the check decides, a look at it rather than the program.
    ///
    /// # Complexity
    /// One lowering of the program and its scaling: O(calls), without instantiation or check.
    pub fn program(
        &self,
        lt: &LogicalTrace,
        app_time_s: f64,
        app_time_source: &str,
        target_s: Option<f64>,
        compute_cut: bool,
    ) -> Result<(Skeleton, Scaling), PipelineError> {
        let nests = self.choices.nests.first().map_or(&[][..], Vec::as_slice);
        let mut skeleton = build_tagged(lt, nests, Tags::Channels)?;
        let n_main = main_iterations(&skeleton);
        let sampled_within = (target_s.is_none() && n_main >= MANY_ITERATIONS)
            .then(|| crate::scale::twelfth(app_time_s));
        let target_s = target_s.unwrap_or_else(|| default_target(app_time_s, n_main));
        let recorded_spread = crate::recorded::lead_class_index(&skeleton)
            .map_or(0.0, |ci| crate::sampling::recorded_spread(&skeleton, ci, lt, nests));
        let options = ScaleOptions { skip_warmup: true, recorded_spread, main_run: None };
        let mut scaling = scale(
            &mut skeleton,
            app_time_s,
            app_time_source,
            target_s,
            Reach::Everything,
            sampled_within,
            &options,
        );
        crate::step_cut::cut_short(&mut skeleton, &mut scaling, &mut |_| true);
        if compute_cut {
            cut_compute(&mut skeleton, &mut scaling);
        }
        Ok((skeleton, scaling))
    }
}

/// [`make`] from the loop nests of `plan`, found in `lt` as it is.
pub fn make_planned(
    lt: &mut LogicalTrace,
    plan: Plan,
    app_time_s: f64,
    app_time_source: &str,
    target_s: Option<f64>,
    compute_cut: bool,
) -> Result<Built, PipelineError> {
    let goal = (app_time_s, app_time_source, target_s);
    make_sends(lt, plan.choices, goal, compute_cut, true, 0.0, None)
}

/// [`make`] without buffered sends: a program that finishes only if the MPI library buffers
/// some of its sends is refused.
pub fn make_strict(
    lt: &mut LogicalTrace,
    app_time_s: f64,
    app_time_source: &str,
    target_s: Option<f64>,
    compute_cut: bool,
) -> Result<Built, PipelineError> {
    let choices = Choices::of(lt);
    let goal = (app_time_s, app_time_source, target_s);
    make_sends(lt, choices, goal, compute_cut, false, 0.0, None)
}

/// [`make`] (or [`make_strict`], with `strict`) for a target `shorter_by` seconds shorter than
/// the one given (or the default), the main loop sampled as for that one: where the skeleton
/// runs longer than its estimate because its messages take more than the trace recorded (a
/// trace without call times, simulated where it ran), the computation makes up for them.
pub fn make_shorter(
    lt: &mut LogicalTrace,
    app_time_s: f64,
    app_time_source: &str,
    target_s: Option<f64>,
    strict: bool,
    shorter_by: f64,
) -> Result<Built, PipelineError> {
    let choices = Choices::of(lt);
    let goal = (app_time_s, app_time_source, target_s);
    make_sends(lt, choices, goal, true, !strict, shorter_by, None)
}

/// [`make`] with the main loop running `main_run` iterations (at least 1, at most all), in
/// place of those its target and the spread of its iterations choose: a candidate of the
/// fidelity check, which measures whether so few predict (a main loop of a few long
/// iterations, which the default runs whole).
pub fn make_running(
    lt: &mut LogicalTrace,
    app_time_s: f64,
    app_time_source: &str,
    target_s: Option<f64>,
    compute_cut: bool,
    main_run: u64,
) -> Result<Built, PipelineError> {
    let choices = Choices::of(lt);
    let goal = (app_time_s, app_time_source, target_s);
    make_sends(lt, choices, goal, compute_cut, true, 0.0, Some(main_run))
}

/// [`make`] from the loop nests `choices` found in `lt`, for the application's time, where it
/// comes from and the target given (`goal`).
fn make_sends(
    lt: &mut LogicalTrace,
    mut choices: Choices,
    (app_time_s, app_time_source, target_s): (f64, &str, Option<f64>),
    compute_cut: bool,
    buffer: bool,
    shorter_by: f64,
    main_run: Option<u64>,
) -> Result<Built, PipelineError> {
    let once = |lt: &LogicalTrace, choices: &Choices, buffer: bool, tags: Tags, every: bool| {
        let goal = Goal {
            app_time_s,
            app_time_source,
            target_s,
            shorter_by,
            compute_cut,
            buffer,
            tags,
            kept_statements: KEPT_STATEMENTS,
            main_run,
        };
        make_once(lt, choices, &goal, every)
    };
    // The loop nests depend on the trace, not on the remedies below: found once for it, and
    // once more with its wildcard sources pinned.
    // A deadlock is one of the program uncut, whose calls every choice of loop nests makes
    // alike: where the first choice's program deadlocks, the next remedy is tried rather than
    // the other choices (Quantum ESPRESSO MD: 9 of the 12 programs made deadlocked, 10 of its
    // 28 s). Where no remedy passes so, every choice of every remedy is tried, as a choice that
    // folds calls by their shapes may make them otherwise.
    let d = match once(lt, &choices, false, Tags::Channels, false) {
        Err(PipelineError::Deadlock(d)) => d,
        other => return other,
    };
    for every in [false, true] {
        if every {
            match once(lt, &choices, false, Tags::Channels, true) {
                Err(PipelineError::Deadlock(_)) => {}
                other => return other,
            }
        }
        let pinned = PinnedSources::pin(lt);
        let n = pinned.len();
        if n > 0 {
            choices = Choices::of(lt);
        }
        // The remedies in order: sources pinned; messages told apart by their traced tags;
        // sends buffered; both. The first program that passes the check is kept.
        let mut tries = Vec::new();
        if n > 0 {
            tries.push((false, Tags::Channels));
        }
        tries.push((false, Tags::Traced));
        if buffer {
            tries.extend([(true, Tags::Channels), (true, Tags::Traced)]);
        }
        let mut made = None;
        for (buffer, tags) in tries {
            match once(lt, &choices, buffer, tags, every) {
                Ok(mut built) => {
                    built.pinned_any_source = n;
                    made = Some(Ok(built));
                    break;
                }
                Err(PipelineError::Deadlock(_)) => {}
                Err(e) => {
                    made = Some(Err(e));
                    break;
                }
            }
        }
        pinned.restore(lt);
        if let Some(made) = made {
            return made;
        }
        if n > 0 && !every {
            choices = Choices::of(lt);
        }
    }
    Err(PipelineError::Deadlock(d))
}

/// Builds the skeleton from the first of the loop nests [`nest_choices`] offers whose main loop
/// can be cut, where that skeleton stays within its target or within a twelfth of the
/// application's time. Beyond both, a later choice is taken: the first that meets its target,
/// else the shortest (a fold into a few steps may cut less than the exact nest's compute cut, as
/// for a program with no loop but a few collectives; the panels of an LU factorization fold only
/// by their shapes). The first that builds at all where none can be cut.
///
/// The first cut choice is kept when it is within a twelfth although a later one is shorter:
/// steps that split a regular iteration run apart and lose its overlap (NPB BT S on 16 ranks:
/// +3.1 % against SimGrid's replay with the shorter fold, +0.3 % with its exact loop).
///
/// Unless `every_choice`, a deadlock of the first choice's program is returned at once (see
/// [`make_sends`]).
fn make_once(
    lt: &LogicalTrace,
    choices: &Choices,
    goal: &Goal<'_>,
    every_choice: bool,
) -> Result<Built, PipelineError> {
    let twelfth = crate::scale::twelfth(goal.app_time_s);
    let stages = || vec![("loop nests".to_owned(), choices.seconds)];
    let mut first = None;
    let mut seen_cut = false;
    // The shortest choice over its target so far, by its index and estimate, and the choice
    // itself where its program is small: a large one is made again if it is the one kept,
    // rather than kept beside the next choice being made (Quantum ESPRESSO MD: a program of
    // 967,000 statements, 140 MB a copy, made again in 3 s).
    let mut shortest: Option<(usize, f64, Option<Built>)> = None;
    for (i, nests) in choices.nests.iter().enumerate() {
        let built = make_with(lt, nests.clone(), stages(), goal);
        match built {
            Ok(b) if !b.scaling.main_loop_whole => {
                // Time steps sampled beyond the target do not count against a choice.
                let estimate = b.scaling.estimate_for_target_s();
                let within = |limit: f64| estimate <= limit * (1.0 + 1e-9);
                if within(b.scaling.target_s) || (!seen_cut && within(twelfth)) {
                    return Ok(b);
                }
                seen_cut = true;
                if shortest.as_ref().is_none_or(|(_, s, _)| estimate < *s) {
                    let small = statements(&b.skeleton) <= goal.kept_statements;
                    shortest = Some((i, estimate, small.then_some(b)));
                }
            }
            Err(PipelineError::Deadlock(d)) if i == 0 && !every_choice => {
                return Err(PipelineError::Deadlock(d));
            }
            other => {
                if first.is_none() {
                    first = Some(other.map(|_| i));
                }
            }
        }
    }
    let i = match (shortest, first) {
        (Some((_, _, Some(b))), _) => return Ok(b),
        (Some((i, _, None)), _) | (None, Some(Ok(i))) => i,
        (None, Some(Err(e))) => return Err(e),
        (None, None) => unreachable!("nest_choices offers at least the exact nests"),
    };
    make_with(lt, choices.nests[i].clone(), stages(), goal)
}

/// Statements of a program above which [`make_once`] makes a choice again rather than keep it
/// while it tries the next: about 100 MB.
const KEPT_STATEMENTS: usize = 700_000;

/// The statements of every class program of `skel`, loop bodies and kinds of steps once each.
///
/// # Complexity
/// O(statements).
fn statements(skel: &Skeleton) -> usize {
    let of = |body: &[Stmt]| mpiskel_program::visit::count(body, &mut |_| true);
    skel.classes.iter().flat_map(|c| &c.phases).map(|p| of(&p.body)).sum()
}

/// The loop nests a trace offers ([`nest_choices`], best first) and the seconds it took to find
/// them.
#[derive(Debug)]
struct Choices {
    nests: Vec<Vec<mpiskel_compress::LoopNest>>,
    seconds: f64,
}

impl Choices {
    fn of(lt: &LogicalTrace) -> Choices {
        let t = Instant::now();
        let nests = nest_choices(lt);
        Choices { nests, seconds: t.elapsed().as_secs_f64() }
    }
}

/// What a skeleton is made for: the recorded application time and where it comes from, the
/// target (default: [`default_target`]), whether compute blocks may be cut, and whether sends
/// may be buffered (see [`make`]).
#[derive(Clone, Copy)]
struct Goal<'a> {
    app_time_s: f64,
    app_time_source: &'a str,
    target_s: Option<f64>,
    /// Seconds taken off the target (see [`make_shorter`]).
    shorter_by: f64,
    compute_cut: bool,
    buffer: bool,
    /// How messages are tagged (see [`make`]).
    tags: Tags,
    /// Statements of a program above which [`make_once`] makes it again rather than keep it
    /// ([`KEPT_STATEMENTS`]).
    kept_statements: usize,
    /// The iterations the main loop runs, where asked ([`make_running`]).
    main_run: Option<u64>,
}

fn make_with(
    lt: &LogicalTrace,
    nests: Vec<mpiskel_compress::LoopNest>,
    mut stage_seconds: Vec<(String, f64)>,
    goal: &Goal<'_>,
) -> Result<Built, PipelineError> {
    let &Goal { app_time_s, target_s, compute_cut, .. } = goal;
    let t = Instant::now();
    let whole = build_tagged(lt, &nests, goal.tags)?;
    stage_seconds.push(("program".to_owned(), t.elapsed().as_secs_f64()));
    let n_main = main_iterations(&whole);
    // The shorter default target keeps enough iterations to sample, within the longer one.
    let sampled_within = (target_s.is_none() && n_main >= MANY_ITERATIONS)
        .then(|| crate::scale::twelfth(app_time_s));
    let target_s = target_s.unwrap_or_else(|| default_target(app_time_s, n_main));
    let given_s = target_s;
    let target_s = (target_s - goal.shorter_by).max(target_s * MIN_AIM);
    let t = Instant::now();
    // A warm-up iteration is skipped where the program stays checkable; where skipping it is
    // what would keep the loops whole, it runs.
    let recorded_spread = crate::recorded::lead_class_index(&whole)
        .map_or(0.0, |ci| crate::sampling::recorded_spread(&whole, ci, lt, &nests));
    let options =
        |skip_warmup| ScaleOptions { skip_warmup, recorded_spread, main_run: goal.main_run };
    // Stretches cut short (`mpiskel_trace::stretch`) are not in the trace the program was made
    // from: its cuts are decided for the time that trace holds, the target stays the
    // application's, and the factor is the application's time over the skeleton's.
    let removed_s: f64 = lt.stretches.iter().map(|s| s.removed_s()).sum();
    let kept_goal = Goal { app_time_s: (app_time_s - removed_s).max(app_time_s * 1e-3), ..*goal };
    let goal = &kept_goal;
    let mut cut = cut_and_check(&whole, goal, target_s, sampled_within, &options(true));
    let skipped_any = cut.0.classes.iter().any(|c| c.phases.iter().any(|p| p.skipped.is_some()));
    if skipped_any && (cut.4.is_some() || cut.1.main_loop_whole) {
        drop(cut);
        cut = cut_and_check(&whole, goal, target_s, sampled_within, &options(false));
    }
    // One copy of the program at a time from here (see `cut_and_check`).
    drop(whole);
    let (mut skeleton, mut scaling, mut programs, mut reused, verdict) = cut;
    if let Some(d) = verdict {
        return Err(PipelineError::Deadlock(d));
    }
    // Steps longer than the skeleton may take: each that runs is cut short
    // ([`crate::step_cut`]) where the program so cut passes the check.
    let mut passed = None;
    crate::step_cut::cut_short(&mut skeleton, &mut scaling, &mut |s| {
        checked(s).map(|p| passed = Some(p)).is_ok()
    });
    if let Some((p, r)) = passed {
        (programs, reused) = (p, r);
    }
    if compute_cut {
        cut_compute(&mut skeleton, &mut scaling);
    }
    if let Some((p, r)) = cut_for_traffic(&mut skeleton, &mut scaling) {
        (programs, reused) = (p, r);
    }
    let replayed_blocks = crate::replay::attach(&mut skeleton, lt, &nests);
    crate::tails::pin_undersampled(&mut skeleton);
    scaling.traffic = Some(crate::traffic::traffic(&skeleton));
    // A target made shorter only drove the cuts: what the skeleton is said to be over, and
    // aimed at, is the one given.
    scaling.target_s = given_s;
    if removed_s > 0.0 {
        scaling.app_time_s = app_time_s;
        scaling.main_share *= goal.app_time_s / app_time_s;
        if scaling.skeleton_estimate_s > 0.0 {
            scaling.factor = app_time_s / scaling.skeleton_estimate_s;
        }
    }
    // Over the target: which parts hold it up, after why loops stayed whole if they did.
    let main = crate::recorded::lead_class_index(&skeleton)
        .and_then(|ci| skeleton.classes[ci].main_loop())
        .filter(|p| p.steps.is_some());
    let steps = main.map(|p| match p.body.as_slice() {
        [Stmt::Steps { cases }] if cases.iter().any(|c| c.run == 0) => Steps::Pooled {
            kinds: cases.len(),
            families: {
                let mut f = crate::families::families(cases);
                f.sort_unstable();
                f.dedup();
                f.len()
            },
        },
        _ => Steps::Kinds,
    });
    let over = over_target(&scaling, sampled_within.is_some(), steps, &lt.stretches);
    scaling.note = match (scaling.note.is_empty(), over.is_empty()) {
        (true, _) => over,
        (false, true) => scaling.note.clone(),
        (false, false) => format!("{}; {over}", scaling.note),
    };
    skeleton.reused_slots = reused.into_iter().collect();
    let (buffered_sends, buffered_nonblocking) = count_buffered(&skeleton);
    if buffered_sends > 0 {
        skeleton.send_buffer = send_buffer(&skeleton, &instantiate_traced(&skeleton));
    }
    let operations = programs.iter().map(Vec::len).sum();
    let seconds = t.elapsed().as_secs_f64();
    stage_seconds.push(("deadlock check".to_owned(), seconds));
    let traced_tags = if skeleton.all_tags { skeleton.message_tags.len() } else { 0 };
    Ok(Built {
        check: CheckSummary { ranks: programs.len(), operations, seconds },
        skeleton,
        scaling,
        nests,
        stage_seconds,
        pinned_any_source: 0,
        traced_tags,
        buffered_sends,
        buffered_nonblocking,
        replayed_blocks,
    })
}

/// Where the communication the skeleton keeps is over its target once every other cut is made
/// (the main loop at one iteration, the other loops at two, the computation cut), the other
/// top-level loops run one iteration each, heaviest first, each cut kept only if the deadlock
/// check passes it (the cuts checked in runs, [`crate::cut_runs`]), until the skeleton's calls
/// and bytes are within the target's share of the application's ([`crate::traffic`]). A
/// skeleton sends every message at its recorded size, so a set-up loop of two that exchanges
/// whole faces (NPB LU's right-hand side before and after its warm-up) holds more of a short
/// run's bytes than the one main-loop iteration; its
/// iterations are alike, and one of them priced as two predicts as both (LU S 16 under
/// SimGrid at 5 MB/s: 0.4591 s with both, 0.4575 s with one, against 0.4426 s replayed; the
/// skeleton 0.063 → 0.048 of the run). The computation cut is made first and stays as it was:
/// decided on the estimate, which counts no message, it is what keeps the skeleton short
/// where computation takes most of the time. Returns the checked program where a cut was kept.
///
/// # Complexity
/// One instantiation and check per run of cuts tried ([`crate::cut_runs::cut_in_runs`]):
/// O((1 + cuts refused) × log(top-level loops) × size of the program).
fn cut_for_traffic(
    skeleton: &mut Skeleton,
    scaling: &mut Scaling,
) -> Option<(Vec<Vec<CheckOp>>, std::collections::BTreeSet<u32>)> {
    // Asked after each cut tried: from each phase's counts, made once.
    let counts = crate::traffic::FloorOfRuns::new(skeleton);
    let over =
        |s: &Skeleton| counts.floor(s) * scaling.app_time_s > scaling.target_s * (1.0 + 1e-9);
    let main_at_one = scaling.main_run <= 1;
    if scaling.main_loop_whole || !main_at_one || !over(skeleton) {
        return None;
    }
    // The estimate loses the share of the recorded time that runs which the cut iterations held
    // (their computation, and the wall time of their calls where the trace recorded it).
    let (cuts, total) =
        crate::scale::one_iteration_cuts(skeleton, scaling.app_time_s, scaling.target_s);
    let mut accepted = None;
    let lead = crate::recorded::lead_class_index(skeleton).unwrap_or(0);
    let max_checks = crate::cut_runs::max_checks(operations(skeleton));
    let made = crate::scale::cut_loops_in_runs(
        skeleton,
        lead,
        &cuts,
        &|s, _| over(s),
        &mut |t| checked(t).map(|p| accepted = Some(p)),
        max_checks,
    );
    let saved = made.saved;
    scaling.cuts_untried += made.untried as u64;
    let left = total - saved;
    if accepted.is_some() && total > 0.0 {
        scaling.skeleton_estimate_s *= (left / total).clamp(0.0, 1.0);
        if scaling.skeleton_estimate_s > 0.0 {
            scaling.factor = scaling.app_time_s / scaling.skeleton_estimate_s;
        }
    }
    accepted
}

/// A program that passed the check: every rank's operations and the request slots reused.
type Passed = (Vec<Vec<CheckOp>>, std::collections::BTreeSet<u32>);

/// Instantiates and checks a program a loop cut made: its operations and the request slots
/// reused where it passes, and where its check stopped in each rank where it does not.
///
/// # Complexity
/// One instantiation and check, and O(ranks × log phases) for where it stopped.
fn checked(skel: &Skeleton) -> Result<Passed, Option<Stopped>> {
    let inst = instantiate_traced(skel);
    let Some(d) = check(&inst.programs) else { return Ok((inst.programs, inst.reused)) };
    let mut stopped: Stopped = vec![None; inst.programs.len()];
    for b in &d.blocked {
        stopped[b.rank as usize] = Some(inst.phase_of(b.rank, b.position));
    }
    Err(Some(stopped))
}

/// The operations the checker runs for `skel` (its instantiation's).
fn operations(skel: &Skeleton) -> usize {
    instantiate(skel).0.iter().map(Vec::len).sum()
}

/// What [`cut_and_check`] gives: the program, its scaling, every rank's checked operations, the
/// request slots reused, and the check's verdict.
type Cut =
    (Skeleton, Scaling, Vec<Vec<CheckOp>>, std::collections::BTreeSet<u32>, Option<Deadlock>);

/// Cuts `whole` as far as the deadlock check allows (with `options`) and checks it.
fn cut_and_check(
    whole: &Skeleton,
    goal: &Goal<'_>,
    target_s: f64,
    sampled_within: Option<f64>,
    options: &ScaleOptions,
) -> Cut {
    let &Goal { app_time_s, app_time_source, buffer, .. } = goal;
    // Cut as far as the deadlock check allows: classes whose loop nests do not correspond
    // (one class's loop is not another's) may lose their partners when their loops are cut.
    let attempt = |reach: Option<Reach>| {
        let mut skeleton = whole.clone();
        let within = reach.unwrap_or(Reach::MainLoop);
        let mut scaling = scale(
            &mut skeleton,
            app_time_s,
            app_time_source,
            target_s,
            within,
            sampled_within,
            options,
        );
        if reach.is_none() {
            uncut(&mut skeleton, &mut scaling, "");
        }
        let (mut programs, mut reused) = instantiate(&skeleton);
        let mut verdict = check(&programs);
        if verdict.is_some() && buffer {
            // (The program refused is dropped before the buffered one is instantiated.)
            drop(std::mem::take(&mut programs));
            let (_, inst, v) = buffer_blocked_sends(&mut skeleton);
            (programs, reused, verdict) = (inst.programs, inst.reused, v);
        }
        (skeleton, scaling, programs, reused, verdict)
    };
    let everything = attempt(Some(Reach::Everything));
    let cut = |s: &Skeleton| {
        s.classes.iter().flat_map(|c| &c.phases).any(|p| p.run < p.full || p.inner.is_some())
    };
    if everything.4.is_none() || !cut(&everything.0) {
        return everything;
    }
    // Refused: the program cut less replaces it (one copy of the program at a time: a program
    // of thousands of phases takes hundreds of megabytes).
    drop(everything);
    let narrower = attempt(Some(Reach::MainLoop));
    if narrower.4.is_some() {
        // (The refused program is dropped before the whole one is made.)
        drop(narrower);
        let mut whole = attempt(None);
        whole.1.note = MAIN_LOOP_WHOLE.into();
        whole.1.main_loop_whole = true;
        return whole;
    }
    let (mut skeleton, mut scaling, mut programs, mut reused, verdict) = narrower;
    // The loops whose names stand for the same loop in every class can still be cut; the last
    // program accepted is the one kept.
    let mut accepted = None;
    let max_checks = crate::cut_runs::max_checks(programs.iter().map(Vec::len).sum());
    let mut accept = |s: &Skeleton| checked(s).map(|p| accepted = Some(p));
    cut_verified(&mut skeleton, &mut scaling, &mut accept, max_checks);
    if let Some((p, r)) = accepted {
        (programs, reused) = (p, r);
    }
    // (Where every loop could be cut, by name or at its place, none is left whole.)
    let whole = skeleton
        .classes
        .iter()
        .flat_map(|c| &c.phases)
        .any(|p| p.is_loop && p.name != "main_loop" && p.full > 2 && p.run == p.full);
    if whole {
        scaling.note = SOME_LOOPS_WHOLE.into();
    }
    (skeleton, scaling, programs, reused, verdict)
}

#[cfg(test)]
mod tests;
