//! Scaling (Xu & Subhlok 2008, §4–5.1): cut the main loop so the skeleton runs about a target time, and
//! record the factors that turn skeleton time back into application time.
//!
//! The recorded application time T is split by the recorded time of the largest class: where the
//! trace recorded how long calls took, the main loop's share f of that class's wall time
//! (computation and calls, waiting included) stands for f·T; where it did not (SimGrid's
//! time-independent traces), its share of the computation does, as in Xu & Subhlok 2008, §4
//! (and when nothing was computed, its share of the calls). A loop that mostly waits holds a
//! small share of the computation and a large one of the time: split by computation, LAMMPS's
//! Couette flow (a call every 3 µs per rank) priced its main loop at a third of its time and ran
//! 465 of its 40,971 iterations, a 14 ms sample. With N iterations of the main loop, one costs
//! t = f·T/N and the rest of the program r = (1−f)·T, so `k = ⌊(target − r) / t⌋`, clamped to
//! 1..=N, iterations run. Every
//! class removes the same N−k iterations from its main loop, so classes whose nests peeled an
//! iteration differently still meet each other's messages; the whole program is then checked.
//!
//! When one iteration of the main loop plus the rest is still over the target, the other
//! top-level loops run two iterations each (the same number removed in every class; the
//! shortest loops of many iterations run whole, [`left_whole`]), and then
//! the heaviest inner loop of the main loop's body is cut as well (keeping at least eight
//! iterations), when every class has it at
//! the same place with the same count; it is timed on its own so that its time scales by its
//! own factor. (Where the communication the skeleton keeps is still over the target, the other
//! top-level loops then run one iteration: see `pipeline::cut_for_traffic`.) Last, if one iteration of everything is still over the target (a long set-up, a
//! loop of a few long iterations, a program without loops) or the iterations could not be cut
//! at all, compute blocks lose the same seconds on every rank, and the runtime adds the time
//! those seconds take back into the prediction ([`crate::compute_cut`], after the deadlock
//! check: it changes no message).
//!
//! Two predictions come out of a run: the **single ratio** (skeleton time × T / (r + k·t), the
//! factor of Xu & Subhlok 2008) and the **per-phase** one (each phase's measured time × full / run, in the
//! spirit of the phase weights of PAS2P, Tirado et al. 2022, §4.3), which does not assume the loop and the rest slowed
//! down alike.
//!
//! # Complexity
//! O(size of the program).

use serde::{Deserialize, Serialize};

use crate::cut_runs::{Cuts, Stopped};
use crate::recorded::{
    app_seconds, by_span, kept_recorded, lead, lead_class, lead_recorded, recorded_of,
    recorded_phase,
};
pub use crate::recorded::{lead_class_index, main_iterations};
pub use crate::step_sampling::MIN_SAMPLED;
use crate::step_sampling::{sample_steps, set_steps};
use mpiskel_program::{is_zero, ClassProgram, InnerCut, PhaseIndex, Skeleton, Stmt};

/// Iterations of a cut loop that always run: a steady state to time, and enough draws of each
/// compute block to average. A main loop of at most this many iterations (a few long ones, as
/// NPB MG's 4 V-cycles and FT's 6 transforms) whose body holds no inner loop longer than this
/// runs as many iterations as [`crate::sampling`] finds its drawn durations need: one iteration
/// stands for up to eight, so one unusual draw weighs up to eight times (measured on NPB FT W,
/// 16 ranks, under SMPI: one of six iterations predicts +43 % where all six predict +2.4 %,
/// because a draw from the 1 % of blocks that took five times the usual lands in the one
/// iteration); where they hardly spread, one iteration does. Its compute blocks are cut where
/// that is not enough. With a longer inner loop (a few outer iterations of many inner ones),
/// the inner loop is cut keeping at least this many iterations, and the draws stay many.
pub const MIN_INNER: u64 = 8;

/// The share of the target that the shortest loops of many iterations may take run whole
/// ([`left_whole`]): the skeleton may run this much over its target and still count as within it
/// (its estimate is one; `pipeline::over_target`).
pub const TARGET_SLACK: f64 = 0.1;

/// The top-level loops but the main one, of more than [`MIN_INNER`] iterations, that no cut
/// shortens, by the lead class's names: the shortest by their whole recorded time
/// (`seconds_of` turns it into application seconds), taken while together they run within
/// [`TARGET_SLACK`] of `target_s`. A loop cut to one or two iterations is timed over those and
/// priced at all of them, so whatever delays one iteration (a rank descheduled where ranks
/// outnumber processors: a scheduler tick, 4 ms, where the iteration takes 50 µs) counts once
/// per iteration left out; run whole, a short loop costs the skeleton little and that delay
/// counts once. HPC Challenge on 4 ranks on 2 cores (six latency loops of 80 iterations, 0.03–0.12
/// s run whole): cut to one iteration each, they predicted 0.1–0.5 s each, and the skeleton
/// 4.28–6.83 s against the application's 4.12–4.92 s; run whole, 4.41–4.73 s, the skeleton
/// hardly longer (0.89–0.92 s against 0.83–0.99 s).
///
/// # Complexity
/// O(p log p) for p phases of the lead class.
pub fn left_whole(
    skel: &Skeleton,
    target_s: f64,
    seconds_of: &dyn Fn(f64) -> f64,
) -> std::collections::HashSet<String> {
    let Some(lead) = lead_class(skel) else { return Default::default() };
    let split = by_span(skel);
    let mut short: Vec<(f64, &str)> = lead
        .phases
        .iter()
        .filter(|p| p.is_loop && p.name != "main_loop" && p.full > MIN_INNER)
        .map(|p| (seconds_of(recorded_phase(p, split)) * p.full as f64, p.name.as_str()))
        .collect();
    short.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut left = TARGET_SLACK * target_s;
    let mut whole = std::collections::HashSet::new();
    for (s, name) in short {
        if s > left {
            break;
        }
        left -= s;
        whole.insert(name.to_owned());
    }
    whole
}

/// Whether the main loop's body (in the lead class) holds an inner loop of more than
/// [`MIN_INNER`] iterations.
fn has_long_inner(skel: &Skeleton) -> bool {
    lead_class(skel).and_then(|c| c.main_loop()).is_some_and(|p| {
        p.body.iter().any(|s| matches!(s, Stmt::Loop { count, .. } if *count > MIN_INNER))
    })
}

/// The top-level loops but the main one that can lose iterations, by the lead class's names:
/// (name, iterations removed to leave two, application seconds saved), most saved first.
/// The loops [`left_whole`] keeps whole (within `target_s`) are not among them.
fn other_loop_cuts(
    skel: &Skeleton,
    target_s: f64,
    seconds_of: &dyn Fn(f64) -> f64,
) -> Vec<(String, u64, f64)> {
    let Some(lead) = lead_class(skel) else { return Vec::new() };
    let whole = left_whole(skel, target_s, seconds_of);
    let mut cuts: Vec<(String, u64, f64)> = lead
        .phases
        .iter()
        .filter(|p| cuttable(p) && p.full > 2 && !whole.contains(&p.name))
        .filter_map(|p| {
            let d = removable(p, 2)?;
            let recorded = recorded_phase(p, by_span(skel));
            Some((p.name.clone(), d, seconds_of(recorded) * d as f64))
        })
        .collect();
    cuts.sort_by(|a, b| b.2.total_cmp(&a.2));
    cuts
}

use crate::loop_cut::{cut_phase, removable, restore_phase, run_state, RunState};

/// Whether the iterations of top-level phase `p` may be cut: a loop other than the main one.
fn cuttable(p: &mpiskel_program::Phase) -> bool {
    p.is_loop && p.name != "main_loop"
}

/// The top-level loops but the main one that still run more than one iteration, by the lead
/// class's names: (name, iterations removed to leave one, recorded compute seconds the lead
/// class's ranks then no longer run), most first: what [`crate::pipeline`] cuts where the
/// skeleton's communication is over its target once every other cut is made (see
/// `pipeline::cut_for_traffic`). With them, the lead class's compute that runs in all. The
/// loops [`left_whole`] keeps whole for an application of `app_time_s` and a target of
/// `target_s` are not among them.
pub(crate) fn one_iteration_cuts(
    skel: &Skeleton,
    app_time_s: f64,
    target_s: f64,
) -> (Vec<(String, u64, f64)>, f64) {
    let Some(lead) = lead_class(skel) else { return (Vec::new(), 0.0) };
    let kept = |body: &[Stmt]| kept_recorded(body, by_span(skel));
    let total: f64 = lead.phases.iter().map(|p| kept(&p.body) * p.run as f64).sum();
    let whole = left_whole(skel, target_s, &app_seconds(lead_recorded(skel), app_time_s));
    let mut cuts: Vec<(String, u64, f64)> = lead
        .phases
        .iter()
        .filter(|p| cuttable(p) && p.run > 1 && !whole.contains(&p.name))
        .filter_map(|p| {
            let d = removable(p, 1)?;
            Some((p.name.clone(), p.full - (p.run - d), kept(&p.body) * d as f64))
        })
        .collect();
    cuts.sort_by(|a, b| b.2.total_cmp(&a.2));
    (cuts, total)
}

/// Removes `d` iterations from the loop named `name` in every class (`index`: its phases,
/// [`PhaseIndex`]).
pub(crate) fn cut_loop(skel: &mut Skeleton, index: &PhaseIndex, name: &str, d: u64) {
    for (ci, c) in skel.classes.iter_mut().enumerate() {
        for &pi in index.all(ci, name) {
            cut_phase(&mut c.phases[pi], d);
        }
    }
}

/// Makes the loop cuts `cuts` (loop name, iterations removed, seconds saved) in order while
/// `over` says the skeleton, with the seconds saved so far, is still over its target, keeping
/// those that `accept` (the deadlock check) accepts, checked in runs
/// ([`crate::cut_runs::cut_in_runs`]): each loop cut by its name in every class, or where that
/// is refused, at its place in every class where the classes name it differently
/// ([`crate::aligned::same_loop_named`]). Where `accept` says where its check stopped
/// ([`Stopped`]), the cuts of a run refused that touch no phase a rank ran before it stopped
/// are not suspects (see [`crate::cut_runs`]). The cuts are made in `skel` itself and undone
/// where refused: a copy of a program of thousands of phases per trial took a third of the
/// time. At most `max_checks` checks are made.
///
/// # Complexity
/// O((1 + cuts refused) × log(cuts)) checks, each O(size of the program); O(1 + cuts
/// refused) checks where each refusal has one suspect.
pub fn cut_loops_in_runs(
    skel: &mut Skeleton,
    lead: usize,
    cuts: &[(String, u64, f64)],
    over: &dyn Fn(&Skeleton, f64) -> bool,
    accept: &mut dyn FnMut(&Skeleton) -> Result<(), Option<Stopped>>,
    max_checks: usize,
) -> Cuts {
    let saved: Vec<f64> = cuts.iter().map(|c| c.2).collect();
    let index = PhaseIndex::new(&skel.classes);
    // Found at the first cut tried at its place: places do not depend on the cuts.
    let places = std::cell::OnceCell::new();
    // The phases each cut touched when it was made last, as (class, phase, iterations run
    // before it).
    let touched = std::cell::RefCell::new(std::collections::HashMap::new());
    let cut = |trial: &mut Skeleton, i: usize, at_place: bool| {
        let (name, d, _) = &cuts[i];
        let group = at_place
            .then(|| {
                let places = places.get_or_init(|| crate::aligned::Places::new(&trial.classes));
                crate::aligned::same_loop_named(&trial.classes, places, &index, lead, name)
            })
            .flatten();
        let made_at_place = group.is_some();
        let group = group.unwrap_or_else(|| {
            (0..trial.classes.len())
                .flat_map(|ci| index.all(ci, name).iter().map(move |&pi| (ci, pi)))
                .collect()
        });
        let before =
            group.iter().map(|&(ci, pi)| (ci, pi, run_state(&trial.classes[ci].phases[pi])));
        let before: Vec<_> = before.collect();
        for &(ci, pi) in &group {
            cut_phase(&mut trial.classes[ci].phases[pi], *d);
        }
        touched.borrow_mut().insert(i, before);
        made_at_place
    };
    let undo = |trial: &mut Skeleton, i: usize| {
        for (ci, pi, state) in touched.borrow().get(&i).into_iter().flatten().rev() {
            restore_phase(&mut trial.classes[*ci].phases[*pi], state.clone());
        }
    };
    let mut checked = |s: &Skeleton, run: &[usize]| {
        accept(s).map_err(|stopped| {
            let Some(stopped) = stopped else { return run.to_vec() };
            let touched = touched.borrow();
            // A rank ran a phase where it stopped past it, or finished.
            let ran = |&(ci, pi, _): &(usize, usize, RunState)| {
                s.classes[ci]
                    .ranks
                    .iter()
                    .any(|&r| stopped.get(r as usize).is_none_or(|at| at.is_none_or(|at| at > pi)))
            };
            run.iter()
                .copied()
                .filter(|i| touched.get(i).is_none_or(|group: &Vec<_>| group.iter().any(ran)))
                .collect()
        })
    };
    let ways = crate::cut_runs::Ways { cut: &cut, undo: &undo };
    crate::cut_runs::cut_in_runs(skel, &saved, &ways, over, &mut checked, max_checks)
}

/// Cuts every top-level loop but the main one to two iterations, removing the same number of
/// iterations from the loop of that name in every class; returns the new estimate.
///
/// # Complexity
/// O(phases): each loop is found through a [`PhaseIndex`] (a program that folds into no long
/// loop has thousands of short ones).
fn cut_other_loops(
    skel: &mut Skeleton,
    estimate: f64,
    target_s: f64,
    seconds_of: &dyn Fn(f64) -> f64,
) -> f64 {
    let index = PhaseIndex::new(&skel.classes);
    let mut estimate = estimate;
    for (name, d, saved) in other_loop_cuts(skel, target_s, seconds_of) {
        cut_loop(skel, &index, &name, d);
        estimate -= saved;
    }
    estimate
}

/// After [`scale`] within [`Reach::MainLoop`] (the cut by name of everything was refused):
/// cuts the other top-level loops, most saved first, checked in runs ([`cut_loops_in_runs`]),
/// then the main loop's heaviest inner loop, keeping each cut that `accept` (the deadlock
/// check) accepts, until the estimate meets the target. A loop whose name stands for the same
/// loop in every class is cut; one that names different loops in different classes is left
/// whole. `accept` says where its check stopped where it refuses ([`Stopped`]); the loop cuts
/// take at most `max_checks` checks, and those not tried are counted in
/// `scaling.cuts_untried`. Returns how many cuts were kept; updates `scaling`'s estimate and
/// factor.
///
/// # Complexity
/// One `accept` per run of cuts tried ([`cut_loops_in_runs`]): O((1 + cuts refused) ×
/// log(top-level loops)) checks, each O(size of the program), and at most `max_checks`.
pub fn cut_verified(
    skel: &mut Skeleton,
    scaling: &mut Scaling,
    accept: &mut dyn FnMut(&Skeleton) -> Result<(), Option<Stopped>>,
    max_checks: usize,
) -> usize {
    let lead_recorded = lead_recorded(skel);
    let (app_time_s, target_s) = (scaling.app_time_s, scaling.target_s);
    let Some(lead) = lead_class_index(skel) else { return 0 };
    if lead_recorded <= 0.0 {
        return 0;
    }
    let seconds_of = app_seconds(lead_recorded, app_time_s);
    let start = scaling.skeleton_estimate_s;
    let cuts = other_loop_cuts(skel, target_s, &seconds_of);
    let over = |_: &Skeleton, s: f64| start - s > target_s;
    let made = cut_loops_in_runs(skel, lead, &cuts, &over, accept, max_checks);
    let (saved, mut kept) = (made.saved, made.kept);
    scaling.cuts_untried += made.untried as u64;
    let mut estimate = start - saved;
    let plan = (estimate > target_s && scaling.main_run == 1)
        .then(|| plan_inner(skel, estimate, target_s, &seconds_of))
        .flatten()
        .filter(|plan| plan.estimate < estimate);
    if let Some(plan) = plan {
        let mut trial = skel.clone();
        let cut = apply_inner(&mut trial, &plan);
        if accept(&trial).is_ok() {
            *skel = trial;
            estimate = cut;
            kept += 1;
        }
    }
    scaling.skeleton_estimate_s = estimate;
    if estimate > 0.0 {
        scaling.factor = app_time_s / estimate;
    }
    kept
}

/// Cuts the heaviest inner loop of the main loop's body (one iteration of the main loop runs)
/// so that the estimate meets the target, when every class has that loop at the same place
/// with the same count ([`plan_inner`]); returns the new estimate.
fn cut_inner(
    skel: &mut Skeleton,
    estimate: f64,
    target_s: f64,
    seconds_of: &dyn Fn(f64) -> f64,
) -> f64 {
    plan_inner(skel, estimate, target_s, seconds_of)
        .map_or(estimate, |plan| apply_inner(skel, &plan))
}

/// A cut of the main loop's heaviest inner loop ([`plan_inner`]).
struct InnerPlan {
    /// The loop's index in the main loop's body.
    index: usize,
    /// Its iterations.
    count: u64,
    /// The iterations it keeps.
    run: u64,
    /// The skeleton's estimate with the cut made.
    estimate: f64,
}

/// The cut of the main loop's heaviest inner loop that brings the estimate to the target (at
/// least [`MIN_INNER`] iterations stay), where every class has that loop at the same place with
/// the same count; `None` where there is none. Made apart from [`apply_inner`] so that a program
/// with nothing to cut is not copied to try it.
fn plan_inner(
    skel: &Skeleton,
    estimate: f64,
    target_s: f64,
    seconds_of: &dyn Fn(f64) -> f64,
) -> Option<InnerPlan> {
    let main_of = ClassProgram::main_loop_index;
    let split = by_span(skel);
    let lead = lead_class(skel)?;
    let body = &lead.phases[main_of(lead)?].body;
    let (index, count, compute) = body
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Stmt::Loop { count, body, .. } => Some((i, *count, recorded_of(body, split))),
            _ => None,
        })
        .max_by(|a, b| (a.1 as f64 * a.2).total_cmp(&(b.1 as f64 * b.2)))?;
    let same = skel.classes.iter().all(|c| {
        main_of(c).is_some_and(|m| {
            matches!(c.phases[m].body.get(index), Some(Stmt::Loop { count: n, .. }) if *n == count)
        })
    });
    let per_inner = seconds_of(compute);
    if !same || per_inner <= 0.0 || count <= MIN_INNER {
        return None;
    }
    // At least eight iterations stay: a steady state to time, and enough draws to average.
    let over = estimate - target_s;
    let drop = ((over / per_inner).ceil() as u64).min(count.saturating_sub(MIN_INNER));
    let estimate = estimate - drop as f64 * per_inner;
    Some(InnerPlan { index, count, run: count - drop, estimate })
}

/// Makes the cut `plan` in every class; returns the new estimate.
fn apply_inner(skel: &mut Skeleton, plan: &InnerPlan) -> f64 {
    let &InnerPlan { index, count, run, .. } = plan;
    for c in &mut skel.classes {
        let Some(m) = ClassProgram::main_loop_index(c) else { continue };
        let p = &mut c.phases[m];
        if let Some(Stmt::Loop { count: n, body, .. }) = p.body.get_mut(index) {
            *n = run;
            set_guard_counts(body, count, run);
        }
        p.inner = Some(InnerCut { index, full: count, run });
    }
    plan.estimate
}

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// Undoes every cut of [`scale`]: each phase runs all its iterations and every compute block
/// all its computation; `scaling` then says so, with `note` for why.
pub fn uncut(skel: &mut Skeleton, scaling: &mut Scaling, note: &str) {
    for c in &mut skel.classes {
        crate::warmup::restore(c);
    }
    for p in skel.classes.iter_mut().flat_map(|c| c.phases.iter_mut()) {
        if let Some(st) = &p.steps {
            let all = (0..st.kinds.len() as u32).collect();
            set_steps(p, all);
        }
        p.run = p.full;
        for s in &mut p.body {
            if let Stmt::Compute { removed, .. } = s {
                *removed = 0.0;
            }
        }
    }
    scaling.main_run = scaling.main_full;
    scaling.skeleton_estimate_s = scaling.app_time_s;
    scaling.factor = 1.0;
    scaling.compute_removed_s = 0.0;
    scaling.compute_shrink = 1.0;
    scaling.warmup_s = 0.0;
    scaling.note = note.into();
}

/// Guards of a cut loop's body name its last iteration by count: keep them on the new one.
fn set_guard_counts(body: &mut [Stmt], old: u64, new: u64) {
    for s in body {
        if let Stmt::Guard { count, .. } = s {
            if *count == old {
                *count = new;
            }
        }
    }
}

/// Which loops [`scale`] may cut. Loops are named per class, and classes whose loop nests do
/// not correspond (a multigrid's classes fold their set-up differently) can give one name to
/// different loops: cutting them by name removes messages that a partner class still expects.
/// The pipeline therefore cuts as far as the deadlock check allows, narrowing the reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The main loop, the other top-level loops and the main loop's heaviest inner loop.
    Everything,
    /// The main loop's iterations (or time steps) only.
    MainLoop,
}

/// How the skeleton was scaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    /// Recorded application time, seconds.
    pub app_time_s: f64,
    /// How that time was obtained.
    pub app_time_source: String,
    /// Target skeleton time, seconds.
    pub target_s: f64,
    /// Iterations of the main loop in the application.
    pub main_full: u64,
    /// Iterations the skeleton runs.
    pub main_run: u64,
    /// Share of the application's time in the main loop (estimated).
    pub main_share: f64,
    /// Estimated skeleton time on the recording machine, seconds.
    pub skeleton_estimate_s: f64,
    /// Application time / estimated skeleton time: the single-ratio factor.
    pub factor: f64,
    /// Recorded computation taken out of every rank's compute blocks over the skeleton's run
    /// (see [`crate::compute_cut::cut_compute`]), seconds; the skeleton adds its time back to the prediction.
    #[serde(default, alias = "setup_removed_s", skip_serializing_if = "is_zero")]
    pub compute_removed_s: f64,
    /// Share of what each cut compute block keeps (its own part beyond what every rank loses)
    /// that runs, when losing the same seconds everywhere was not enough (see [`crate::compute_cut::cut_compute`]);
    /// 1: all of it.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub compute_shrink: f64,
    /// Iterations a main loop of at most [`MIN_INNER`] iterations must run for the durations
    /// they draw to stand for all of them ([`crate::sampling`]); 0 for longer loops.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub main_needed: u64,
    /// Seconds of the application that a warm-up iteration the skeleton skips stands for (one
    /// iteration of the main loop; see [`crate::warmup`]); 0 where none is skipped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_s: f64,
    /// Seconds of the estimate that the main loop's sample adds over what the target alone
    /// would run (time steps run so that each kind is sampled, [`MIN_SAMPLED`]): the choice
    /// between loop nests compares the estimates without it (not written to the document).
    #[serde(skip)]
    pub sampled_extra_s: f64,
    /// Why the cut differs from the target's, if it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Loop cuts not tried where the skeleton stayed over its target: the deadlock checks of
    /// cuts reached their budget ([`crate::cut_runs::CHECKED_OPERATIONS`]).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cuts_untried: u64,
    /// The communication the skeleton runs against the application's ([`crate::traffic`]):
    /// its floor where communication is most of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<crate::traffic::Traffic>,
    /// The time steps run that the skeleton cuts short ([`crate::step_cut`]), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_cut: Option<StepsCut>,
    /// Whether the main loop runs whole because, cut, some ranks would wait for messages that
    /// ranks of other classes no longer send (the note says so; the pipeline decides on this,
    /// not on the note). Not written to the document.
    #[serde(skip)]
    pub main_loop_whole: bool,
}

/// The time steps cut short (`crate::step_cut::cut_short`), for the notes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepsCut {
    /// Steps the skeleton runs that it cuts short.
    pub steps: u64,
    /// The least share of its recorded time any of them keeps.
    pub least_share: f64,
    /// Application seconds the skeleton no longer runs.
    pub removed_s: f64,
}

impl Scaling {
    /// The estimate without what the main loop's sample adds over the target
    /// ([`Scaling::sampled_extra_s`]): what a choice between loop nests compares.
    pub fn estimate_for_target_s(&self) -> f64 {
        self.skeleton_estimate_s - self.sampled_extra_s
    }
}

/// What [`scale`] may do beyond cutting loops for its target.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ScaleOptions {
    /// Skip a warm-up iteration before the main loop ([`crate::warmup`]).
    pub skip_warmup: bool,
    /// The standard deviation of one iteration's recorded critical computation in the lead
    /// class's main loop ([`crate::sampling::recorded_spread`]), recorded seconds: a loop of
    /// few iterations runs as many as the larger of it and the drawn spread needs.
    pub recorded_spread: f64,
    /// The iterations the main loop runs, where a candidate of the fidelity check asks for
    /// them (`mpiskel_make::policy`'s fewer-iterations generator), in place of those its target
    /// and the spread of its iterations choose; at least 1, at most all.
    pub main_run: Option<u64>,
}

/// Main loops of at least this many iterations get the shorter default target (a
/// twenty-fourth): with many iterations to choose from, a skeleton keeps enough of them.
pub const MANY_ITERATIONS: u64 = 20;

/// The default target: the shorter of 60 s and a twelfth of the application's time, or a
/// twenty-fourth where the main loop has at least [`MANY_ITERATIONS`] iterations or there is no
/// loop to run a sample of (at most one iteration: the program is cut by its computation
/// alone, which can reach any target) — under a tenth (a twentieth), with room for platforms
/// that slow the parts that run whole (set-up, finish, a program's communication) more than
/// the rest (NPB EP W, cut to a twelfth exactly: 0.084–0.089 of SimGrid's replay).
pub fn default_target(app_time_s: f64, main_iterations: u64) -> f64 {
    if main_iterations >= MANY_ITERATIONS || main_iterations <= 1 {
        twelfth(app_time_s) / 2.0
    } else {
        twelfth(app_time_s)
    }
}

/// The shorter of 60 s and a twelfth of the application's time: the longest default target.
pub fn twelfth(app_time_s: f64) -> f64 {
    (app_time_s / 12.0).min(60.0)
}

/// Cuts the loops of `skel` for `target_s` (see the module documentation), skipping a warm-up
/// iteration of the main loop where `skip_warmup` and the program is over the target
/// ([`crate::warmup`]); computation is cut afterwards by [`crate::compute_cut::cut_compute`]. With `sampled_within`, the main loop runs at least
/// [`MIN_SAMPLED`] iterations, or as many as fit in that many seconds.
pub fn scale(
    skel: &mut Skeleton,
    app_time_s: f64,
    source: &str,
    target_s: f64,
    reach: Reach,
    sampled_within: Option<f64>,
    options: &ScaleOptions,
) -> Scaling {
    let ScaleOptions { skip_warmup, recorded_spread, main_run } = *options;
    let lead = lead(skel);
    let (share, n) = match lead {
        Some(((main, total), Some(n))) if total > 0.0 => (main / total, n),
        Some((_, Some(n))) => (1.0, n),
        _ => (0.0, 1),
    };
    let per_iter = share * app_time_s / n as f64;
    let mut rest = app_time_s - share * app_time_s;
    // A warm-up iteration before the main loop is skipped, priced as one more iteration of it,
    // wherever the skeleton is cut at all and every class has one (see [`crate::warmup`]).
    // The iterations kept to sample are counted with the warm-up still in: skipping it makes
    // the skeleton shorter, it does not buy more samples.
    let sample_rest = rest;
    let mut warmup_s = 0.0;
    if skip_warmup && rest + per_iter * n as f64 > target_s && crate::warmup::skip(skel) {
        warmup_s = per_iter.min(rest);
        rest -= warmup_s;
    }
    let fit_after = |t: f64, rest: f64| ((t - rest) / per_iter).floor().max(0.0) as u64;
    let fit = |t: f64| fit_after(t, rest);
    // A loop of few iterations runs as many as its drawn durations need (all of them where
    // they spread widely; see [`crate::sampling`]).
    let few = n <= MIN_INNER && !has_long_inner(skel);
    let needed = match lead_class(skel) {
        Some(c) if few && per_iter > 0.0 => {
            let lead_recorded = lead_recorded(skel);
            let spread = crate::sampling::iteration_spread(skel, c).max(recorded_spread);
            let spread_s =
                if lead_recorded > 0.0 { spread / lead_recorded * app_time_s } else { 0.0 };
            crate::sampling::iterations_needed(n, spread_s, app_time_s)
        }
        _ => 0,
    };
    let k = if let Some(asked) = main_run.filter(|_| per_iter > 0.0) {
        asked.clamp(1, n)
    } else if per_iter > 0.0 && (!few || needed < n) {
        let least = if few {
            needed
        } else {
            sampled_within.map_or(1, |t| fit_after(t, sample_rest).min(MIN_SAMPLED))
        };
        fit(target_s).max(least).clamp(1, n)
    } else {
        n
    };
    let cut = n - k;
    for c in &mut skel.classes {
        for p in c.phases.iter_mut().filter(|p| p.name == "main_loop") {
            p.run = p.full.saturating_sub(cut).max(1);
        }
    }
    let mut estimate = rest + k as f64 * per_iter;
    let mut sampled_extra_s = 0.0;
    let lead_recorded = lead_recorded(skel);
    let steps_within = sampled_within.map(|t| t - sample_rest);
    if let Some(main) = sample_steps(
        skel,
        (target_s - rest, target_s.max(twelfth(app_time_s))),
        steps_within,
        &|recorded: f64| {
            if lead_recorded > 0.0 {
                recorded / lead_recorded * app_time_s
            } else {
                per_iter
            }
        },
    ) {
        estimate = rest + main.0;
        sampled_extra_s = main.1;
    }
    let k = lead_class(skel).and_then(|c| c.main_loop()).map_or(k, |p| p.run);
    // Still over the budget: the other top-level loops run two iterations, then the main
    // loop's heaviest inner loop is cut too.
    let seconds_of = app_seconds(lead_recorded, app_time_s);
    if reach == Reach::Everything && estimate > target_s && lead_recorded > 0.0 {
        estimate = cut_other_loops(skel, estimate, target_s, &seconds_of);
    }
    if reach == Reach::Everything && estimate > target_s && k == 1 && lead_recorded > 0.0 {
        estimate = cut_inner(skel, estimate, target_s, &seconds_of);
    }
    Scaling {
        app_time_s,
        app_time_source: source.into(),
        target_s,
        main_full: n,
        main_run: k,
        main_share: share,
        skeleton_estimate_s: estimate,
        factor: if estimate > 0.0 { app_time_s / estimate } else { 1.0 },
        compute_removed_s: 0.0,
        compute_shrink: 1.0,
        main_needed: needed,
        warmup_s,
        sampled_extra_s,
        note: String::new(),
        cuts_untried: 0,
        traffic: None,
        steps_cut: None,
        main_loop_whole: false,
    }
}
