//! Time steps cut short: the part of a long step that the skeleton runs, and what it stands
//! for.
//!
//! A time-step loop is sampled by whole steps ([`crate::scale`]): at least one step of every
//! kind, or of every family of kinds ([`crate::families`]). Where one step is itself longer
//! than the skeleton may take, no choice of steps reaches the target: every SCF iteration of
//! an electronic-structure code is a step of its own, and one iteration of Quantum ESPRESSO's
//! eight-atom silicon run is 0.7 of its 6.5 s (more than a twelfth), its k-points and their
//! eigensolvers inside it folding into no loop.
//!
//! Such a step is cut short the way a stretch between collectives is
//! (`mpiskel_trace::stretch`), but in the program: every class runs the step up to the same
//! collective of all ranks and leaves the rest of the step out, and its kind's time is
//! multiplied by the step's recorded time over that of the part run (each class by its own),
//! a ratio estimate like the one that prices the kinds of a family that do not run. The
//! collective is the first one, made at the step's top level in every class (not inside one
//! of its loops), after which the part kept holds the share of the step that brings the
//! skeleton to its target, and at least [`MIN_KEPT_CALLS`] calls (a shorter sample sets the
//! pace by chance, as for a stretch). Every class makes the step's collectives of all ranks
//! in the same order, so the parts kept end at the same one; the program is checked again, and
//! where it could block (a message or a request crossing the cut) nothing is cut.
//!
//! Only steps whose kinds run once in every class are cut (a kind that runs for several steps
//! is one sample of its steps already), and only where the skeleton is over its target once
//! its loops are cut.
//!
//! # Complexity
//! O(n) in the statements of the kinds that run, and one instantiation and check of the
//! program.

use crate::recorded::{by_span, lead_recorded, recorded_of};
use crate::scale::{Scaling, StepsCut};
pub use mpiskel_program::StepCut;
use mpiskel_program::{calls_in, Call, Comm, Skeleton, StepCase, Stmt};

/// The least share of a step's recorded time that its cut keeps.
pub const MIN_KEPT_SHARE: f64 = crate::stretches::MIN_KEPT_SHARE;

/// The fewest calls of a step that its cut keeps (where the step has more), in the class whose
/// step takes longest.
pub const MIN_KEPT_CALLS: u64 = crate::stretches::MIN_KEPT_CALLS;

/// A scheduler tick, seconds: how late a rank that waits for a descheduled partner can be,
/// where ranks outnumber processors. The part kept is timed and its time multiplied by the
/// step's over the part's, and by its family's scale where the kind stands for others
/// ([`crate::families`]); that multiple of one tick stays within
/// [`crate::sampling::PRECISION`] of the application's time. So a part kept is at least the
/// step's time × tick × the family's scale / (precision × application time) long (NWChem's
/// DFT step, a second of a 1.3 s run: 16 %; where 2 % was kept, its predictions spread from
/// −26 % to +3 %; CP2K's, its time multiplied by 121 in all, from +9 % to +28 %).
pub const TICK_S: f64 = 0.004;

/// A kept part that would hold this share of its step or more is not worth a cut.
const MOST_KEPT_SHARE: f64 = 0.9;

/// Whether communicator `comm` of `skel` holds every rank.
fn of_all(skel: &Skeleton, comm: usize) -> bool {
    match skel.comms.get(comm) {
        Some(Comm::World) => true,
        Some(Comm::Strided { size, .. }) => *size >= skel.n_ranks as usize,
        _ => false,
    }
}

/// Blocking collectives of all ranks (over the communicators `of_all` tells) in `body`, in
/// order, counted as often as its loops run them: for each, the index of its top-level
/// statement, or `None` inside a loop. `None` where a guarded statement holds one (its count
/// depends on the iteration).
fn collectives(of_all: &dyn Fn(usize) -> bool, body: &[Stmt]) -> Option<Vec<Option<usize>>> {
    fn inside(of_all: &dyn Fn(usize) -> bool, body: &[Stmt]) -> Option<u64> {
        let mut n = 0u64;
        for s in body {
            n += match s {
                Stmt::Call { call: Call::Collective { comm, slot: None, .. }, .. }
                    if of_all(*comm) =>
                {
                    1
                }
                Stmt::Loop { count, body, .. } => count.saturating_mul(inside(of_all, body)?),
                Stmt::Guard { body, .. } if inside(of_all, body) != Some(0) => return None,
                Stmt::Steps { .. } => return None,
                _ => 0,
            };
        }
        Some(n)
    }
    let mut marks = Vec::new();
    for (i, s) in body.iter().enumerate() {
        match s {
            Stmt::Call { call: Call::Collective { comm, slot: None, .. }, .. } if of_all(*comm) => {
                marks.push(Some(i));
            }
            _ => {
                let n = inside(of_all, std::slice::from_ref(s))?;
                marks.extend(std::iter::repeat_n(None, n as usize));
            }
        }
    }
    Some(marks)
}

/// One step the skeleton runs, where it is cut: per class, the phase, the kind and the
/// top-level statement that ends the part kept (the `collective`-th collective of all ranks).
struct Planned {
    at: Vec<(usize, usize, usize, usize)>,
    collective: u64,
}

/// Cuts short the steps the skeleton runs of its time-step main loop where it is over its
/// target (see the module documentation), if `accept` takes the program so cut; returns
/// whether it did, with `scaling`'s estimate and factor made for the parts kept.
pub fn cut_short(
    skel: &mut Skeleton,
    scaling: &mut Scaling,
    accept: &mut dyn FnMut(&Skeleton) -> bool,
) -> bool {
    // The steps sampled beyond the target on purpose ([`Scaling::sampled_extra_s`]) stay.
    let excess = scaling.estimate_for_target_s() - scaling.target_s;
    let recorded = lead_recorded(skel);
    if excess <= 0.0 || recorded <= 0.0 || scaling.app_time_s <= 0.0 {
        return false;
    }
    let seconds = |r: f64| r / recorded * scaling.app_time_s;
    let split = by_span(skel);
    let most = crate::sampling::PRECISION * scaling.app_time_s / TICK_S;
    let Some(plans) = plan(skel, (excess, most), &seconds, split) else { return false };
    let mut tails = Vec::new();
    let mut removed_s = 0.0;
    let mut least_share = 1.0f64;
    for p in &plans {
        let (mut whole_s, mut kept_s) = (0.0f64, 0.0f64);
        for &(ci, pi, k, end) in &p.at {
            let Some(case) = case_mut(skel, ci, pi, k) else { continue };
            let whole = recorded_of(&case.body, split);
            let (calls, bytes) = (calls_in(&case.body), crate::families::bytes_sent(&case.body));
            let tail = case.body.split_off(end + 1);
            let (kept, kept_calls) = (recorded_of(&case.body, split), calls_in(&case.body));
            let factor =
                if kept > 0.0 { whole / kept } else { calls as f64 / kept_calls.max(1) as f64 };
            case.scale *= factor;
            case.cut = Some(StepCut { calls, kept_calls, bytes, collective: p.collective, factor });
            whole_s = whole_s.max(seconds(whole));
            kept_s = kept_s.max(seconds(kept));
            if whole > 0.0 {
                least_share = least_share.min(kept / whole);
            }
            tails.push(((ci, pi, k), tail, factor));
        }
        removed_s += (whole_s - kept_s).max(0.0);
    }
    if !accept(skel) {
        // A message or a request crosses a cut: the steps run whole.
        for ((ci, pi, k), tail, factor) in tails {
            if let Some(case) = case_mut(skel, ci, pi, k) {
                case.body.extend(tail);
                case.scale /= factor;
                case.cut = None;
            }
        }
        return false;
    }
    scaling.skeleton_estimate_s = (scaling.skeleton_estimate_s - removed_s).max(0.0);
    if scaling.skeleton_estimate_s > 0.0 {
        scaling.factor = scaling.app_time_s / scaling.skeleton_estimate_s;
    }
    scaling.steps_cut = Some(StepsCut { steps: plans.len() as u64, least_share, removed_s });
    true
}

/// The case of kind `k` of the time-step phase `pi` of class `ci`.
fn case_mut(skel: &mut Skeleton, ci: usize, pi: usize, k: usize) -> Option<&mut StepCase> {
    match skel.classes.get_mut(ci)?.phases.get_mut(pi)?.body.as_mut_slice() {
        [Stmt::Steps { cases }] => cases.get_mut(k),
        _ => None,
    }
}

/// The steps to cut and where, for a skeleton `excess` application seconds over its target,
/// each step's time at most `most` times its part's (`seconds` turns recorded seconds into
/// application seconds): `None` where the main loop is not a time-step loop in every class or
/// nothing can be cut.
fn plan(
    skel: &Skeleton,
    (excess, most): (f64, f64),
    seconds: &dyn Fn(f64) -> f64,
    split: bool,
) -> Option<Vec<Planned>> {
    let mains: Vec<usize> =
        skel.classes.iter().map(|c| c.main_loop_index()).collect::<Option<_>>()?;
    let schedules: Vec<_> = skel
        .classes
        .iter()
        .zip(&mains)
        .map(|(c, &pi)| c.phases[pi].steps.as_ref())
        .collect::<Option<_>>()?;
    let run = &schedules.first()?.run;
    if schedules.iter().any(|s| s.run != *run || s.kinds.len() != schedules[0].kinds.len()) {
        return None;
    }
    let cases = |ci: usize| match skel.classes[ci].phases[mains[ci]].body.as_slice() {
        [Stmt::Steps { cases }] => Some(cases),
        _ => None,
    };
    // The steps whose kinds run once in every class, each with its cost.
    struct Step<'a> {
        bodies: Vec<&'a [Stmt]>,
        at: Vec<(usize, usize, usize)>,
        marks: Vec<Vec<Option<usize>>>,
        whole: Vec<f64>,
        cost: f64,
        /// The most its part's time may be multiplied by for the rest of the step.
        most: f64,
    }
    let mut steps = Vec::new();
    for &i in run {
        let mut step =
            Step { bodies: vec![], at: vec![], marks: vec![], whole: vec![], cost: 0.0, most };
        for (ci, s) in schedules.iter().enumerate() {
            let k = s.kinds[i as usize] as usize;
            let case = cases(ci)?.get(k)?;
            if case.run != 1 || case.cut.is_some() {
                break;
            }
            let Some(marks) = collectives(&|c| of_all(skel, c), &case.body) else { break };
            let whole = recorded_of(&case.body, split);
            step.cost = step.cost.max(seconds(whole));
            // Its time is multiplied for the kinds of its family that do not run already.
            step.most = step.most.min(most / case.scale.max(1.0));
            step.bodies.push(&case.body);
            step.at.push((ci, mains[ci], k));
            step.marks.push(marks);
            step.whole.push(whole);
        }
        let same = step.marks.iter().all(|m| m.len() == step.marks[0].len());
        if step.at.len() == schedules.len() && same && !step.marks[0].is_empty() {
            steps.push(step);
        }
    }
    let cost: f64 = steps.iter().map(|s| s.cost).sum();
    if cost <= 0.0 {
        return None;
    }
    let share = (1.0 - excess / cost).max(MIN_KEPT_SHARE);
    if share >= MOST_KEPT_SHARE {
        return None;
    }
    let mut plans = Vec::new();
    for step in steps {
        // The class whose step takes longest decides where its part ends.
        let lead = (0..step.whole.len())
            .max_by(|&a, &b| step.whole[a].total_cmp(&step.whole[b]))
            .unwrap_or(0);
        let body = step.bodies[lead];
        let (mut kept, mut calls, mut upto) = (0.0, 0u64, 0usize);
        let mut chosen = None;
        for (j, _) in step.marks[lead].iter().enumerate() {
            let Some(ends) = step.marks.iter().map(|m| m[j]).collect::<Option<Vec<usize>>>() else {
                continue;
            };
            let end = ends[lead];
            kept += recorded_of(&body[upto..=end], split);
            calls += calls_in(&body[upto..=end]);
            upto = end + 1;
            let whole = step.whole[lead];
            if kept >= share * whole && kept * step.most >= whole && calls >= MIN_KEPT_CALLS {
                chosen = Some((j, ends));
                break;
            }
        }
        let Some((j, ends)) = chosen else { continue };
        if kept >= MOST_KEPT_SHARE * step.whole[lead] {
            continue;
        }
        let at = step.at.iter().zip(ends).map(|(&(ci, pi, k), end)| (ci, pi, k, end)).collect();
        plans.push(Planned { at, collective: j as u64 + 1 });
    }
    (!plans.is_empty()).then_some(plans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiskel_compress::When;
    use mpiskel_trace::Op;

    fn collective(comm: usize) -> Stmt {
        let call = Call::Collective {
            op: Op::Allreduce,
            traced: Op::Allreduce,
            comm,
            root: None,
            bytes: 8,
            slot: None,
        };
        Stmt::Call { call, polls: 0, wait_s: 0.0, off_s: 0.0 }
    }

    #[test]
    fn collectives_of_all_ranks_are_marks_where_they_stand_at_the_top_level() {
        let world = |c: usize| c == 0;
        let inner = vec![collective(1), collective(0)];
        let body = vec![
            Stmt::block(1e-3),
            collective(0),
            Stmt::Loop { depth: 1, count: 3, body: inner, note: String::new() },
            collective(1),
            collective(0),
        ];
        // The loop's three collectives of all ranks stand inside it; the others at 1 and 4.
        let marks = collectives(&world, &body).unwrap();
        assert_eq!(marks, [Some(1), None, None, None, Some(4)]);
        assert_eq!(calls_in(&body), 1 + 3 * 2 + 2);
        // A guarded one runs in some iterations only: no count holds.
        let mut guarded = body.clone();
        let when = When::First;
        guarded.push(Stmt::Guard { when, depth: 1, count: 3, body: vec![collective(0)] });
        assert_eq!(collectives(&world, &guarded), None);
        // One over a communicator of some ranks only is no mark.
        guarded.pop();
        guarded.push(Stmt::Guard { when, depth: 1, count: 3, body: vec![collective(1)] });
        assert_eq!(collectives(&world, &guarded).map(|m| m.len()), Some(5));
    }

    #[test]
    fn a_kind_cut_short_says_what_it_runs_and_what_its_time_stands_for() {
        let mut case = StepCase {
            full: 1,
            run: 1,
            body: Vec::new(),
            note: String::new(),
            scale: 2.0 * 7.0,
            cut: None,
        };
        assert_eq!(case.pricing(), ", timed ×14.000 for the steps of its family that do not run");
        case.cut =
            Some(StepCut { calls: 1000, kept_calls: 400, bytes: 0.0, collective: 3, factor: 2.0 });
        let text = case.pricing();
        assert!(text.starts_with(", cut short: its first 400 of 1000 calls run, to its collective of all ranks no. 3, timed ×2.000 for the rest of the step"), "{text}");
        assert!(
            text.ends_with(", timed ×7.000 for the steps of its family that do not run"),
            "{text}"
        );
        case.scale = 2.0;
        assert!(!case.pricing().contains("family"));
    }
}
