//! Which stretches between collectives of all ranks a skeleton cuts by time, and how much of
//! each it keeps (`mpiskel_trace::stretch` cuts them in the trace).
//!
//! A stretch is cut where the skeleton is over its target and loops that the cut of loops
//! already shortened hold less than half of the stretch's calls in every class: where they hold
//! more, the loops are the better sample.
//! Every stretch cut keeps the same share of its span, the share that brings the skeleton to its
//! target: the rest of the application, at its recorded time, plus that share of the stretches,
//! makes the target. It keeps at least [`MIN_KEPT_SHARE`] of
//! each and [`MIN_KEPT_CALLS`] calls per rank, so that the part it runs is long enough to set a
//! pace; a stretch that would keep all its calls is not cut.
//!
//! # Complexity
//! O(c × (n + p)) for c classes of n positions and p phases, per stretch.

use mpiskel_logicalize::LogicalTrace;
use mpiskel_trace::stretch::Stretch;

use crate::scale::Scaling;
use mpiskel_program::{stretch_range, Phase, Skeleton};

/// The least share of a stretch's span that its cut keeps.
pub const MIN_KEPT_SHARE: f64 = 0.02;

/// The fewest calls per rank that the cut of a stretch keeps (where the stretch has more): the
/// pace of its second half stands for the rest of the stretch
/// ([`mpiskel_program::stretch_parts`]), and a short sample sets it by chance. A stretch of drawn
/// exchanges on 4 ranks, cut to 80, 170, 400 and 2,400 calls per rank, predicted, both
/// simulated on a 10 Gb/s and a 100 Mb/s cluster, 21–25 %, 1–10 %, 2 % and under 0.5 % from its
/// trace.
pub const MIN_KEPT_CALLS: u64 = 400;

/// Whether `program` (made from `lt`, the trace uncut) holds half the calls of the stretch after
/// the `index`-th collective of all ranks, or more, in loops it shortened, in some class (there
/// the loops are the better sample), or a class lacks that stretch. Loops of a few iterations
/// that an irregular stretch holds by chance do not count for more than their calls, and the
/// steps of a time-step loop that the skeleton runs do not count at all: a stretch that is one
/// step of its own kind (a suite's benchmarks, each run once, folded as the steps of one loop)
/// runs whole however the loop is cut.
fn in_cut_loops(lt: &LogicalTrace, program: &Skeleton, index: usize) -> bool {
    lt.classes.iter().zip(&program.classes).any(|(class, program)| {
        let Some((a, b)) = stretch_range(class, index) else {
            return true;
        };
        let looped: u64 = program
            .phases
            .iter()
            .filter(|p| p.positions.0 < b && a < p.positions.1)
            .filter(|p| p.run < p.full || p.inner.is_some())
            .map(|p| cut_positions(p, a, b))
            .sum();
        2 * looped >= b - a
    })
}

/// How many of the positions `a..b` that `phase` covers the skeleton leaves out: for a loop
/// cut, the share of them its iterations left out hold (a loop of three iterations that runs
/// two leaves a third of its calls out); for a time-step loop, those of the steps it leaves
/// out; all of them for a loop whose inner loop is cut.
fn cut_positions(phase: &Phase, a: u64, b: u64) -> u64 {
    let within = (phase.positions.0.max(a), phase.positions.1.min(b));
    let all = within.1.saturating_sub(within.0);
    match &phase.steps {
        Some(schedule) if phase.inner.is_none() => {
            schedule.left_out(phase.positions.0, within).unwrap_or(all)
        }
        _ if phase.inner.is_none() && phase.full > 0 => {
            (all as u128 * u128::from(phase.full.saturating_sub(phase.run))
                / u128::from(phase.full)) as u64
        }
        _ => all,
    }
}

/// The stretches of `stretches` (found in the trace `lt` was made from) to cut, each with the
/// seconds its ranks keep, for `program` scaled by `scaling`, made from the whole trace of an
/// application of `app_time_s` seconds (by [`crate::pipeline::make`], or as
/// [`crate::pipeline::Plan::program`] has it before); empty where the program is within its
/// target or nothing is to be gained.
///
/// The longest stretches are taken first, until the share each keeps reaches
/// [`MIN_KEPT_SHARE`] (the target is then met) or none is left; stretches shorter than that share
/// of the target are left whole, as not worth a phase of their own.
pub fn choose(
    lt: &LogicalTrace,
    (program, scaling): (&Skeleton, &Scaling),
    stretches: Vec<Stretch>,
    app_time_s: f64,
) -> Vec<(Stretch, f64)> {
    choose_keeping(lt, (program, scaling), stretches, app_time_s, MIN_KEPT_CALLS)
}

/// [`choose`] with `min_calls` instead of [`MIN_KEPT_CALLS`] (the fuzzer cuts the stretches of
/// short generated programs with it).
pub fn choose_keeping(
    lt: &LogicalTrace,
    (program, scaling): (&Skeleton, &Scaling),
    stretches: Vec<Stretch>,
    app_time_s: f64,
    min_calls: u64,
) -> Vec<(Stretch, f64)> {
    let s = scaling;
    if s.skeleton_estimate_s <= s.target_s || app_time_s <= 0.0 {
        return Vec::new();
    }
    let mut candidates: Vec<Stretch> = stretches
        .into_iter()
        .filter(|st| st.span_s >= MIN_KEPT_SHARE * s.target_s)
        .filter(|st| !in_cut_loops(lt, program, st.index))
        .collect();
    candidates.sort_by(|a, b| b.span_s.total_cmp(&a.span_s));
    // What the rest of the application takes in the skeleton: its recorded time (the estimate
    // of the skeleton made of the whole trace splits the time by computation where the trace
    // has no call times, and a stretch is mostly messages).
    let (mut taken, mut span, mut share) = (0usize, 0.0f64, 1.0f64);
    for st in &candidates {
        taken += 1;
        span += st.span_s;
        let rest = (app_time_s - span).max(0.0);
        share = ((s.target_s - rest) / span).min(1.0);
        if share >= MIN_KEPT_SHARE {
            break;
        }
    }
    let share = share.max(MIN_KEPT_SHARE);
    if taken == 0 || share >= 1.0 {
        return Vec::new();
    }
    candidates.truncate(taken);
    candidates.sort_by_key(|st| st.index);
    let ranks = lt.n_ranks.max(1) as u64;
    candidates
        .into_iter()
        .filter_map(|st| {
            let least = (min_calls * ranks) as f64 / st.calls.max(1) as f64;
            let share = share.max(least);
            (share < 1.0).then(|| {
                let keep = share * st.span_s;
                (st, keep)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop over positions 30..60 that runs 2 of its 3 iterations leaves a third of them out,
    /// counted only within the stretch; one that runs all leaves none out.
    #[test]
    fn a_loop_cut_leaves_out_the_share_of_positions_of_its_iterations_left_out() {
        let mut p = Phase::new("loop_1".into(), 3, true, Vec::new(), String::new(), (30, 60));
        p.run = 2;
        assert_eq!(cut_positions(&p, 0, 100), 10);
        assert_eq!(cut_positions(&p, 45, 60), 5);
        p.run = 3;
        assert_eq!(cut_positions(&p, 0, 100), 0);
    }
}
