//! How many seconds every rank may skip of a compute block whose durations are drawn.
//!
//! The compute cut ([`crate::compute_cut::cut_compute`]) takes the same seconds `R` out of a block on
//! every rank, so that the ranks' differences, and the waiting they cause, stay those of the
//! application, and adds `R` back to every rank's prediction. For a block of fixed duration `R`
//! is at most the shortest rank's duration. A drawn block (a new duration per execution, from
//! the recorded spread) has durations down to its distribution's minimum, often a lone outlier
//! far below the rest (NPB IS: 0.19 ms against 0.63 ms at the first percentile and 0.93 ms at the
//! median), so bounding `R` by the minimum leaves most of the block to run.
//!
//! Instead an execution whose draw is shorter than `R` runs nothing (it is *clipped*), and every
//! rank still adds `R` back. What decides the time is the slowest rank before each point where
//! all ranks meet: as long as that rank was not clipped, its time less `R`, plus `R`, is exact.
//! Clipping can only lengthen the prediction, by `E[max_r T'_r] + ΣR − E[max_r T_r]` over the
//! blocks of one *segment* (the statements between two collectives that make every rank wait
//! for every other: barrier, all-reduce, all-gather, all-to-all, reduce-scatter on the world
//! communicator), where `T_r` is rank `r`'s time over the segment's blocks and `T'_r` the same
//! with `R` taken out of each block, clipped at zero. `R` is chosen per segment as the largest
//! quantile level `λ` of every block's duration (on the rank that computes least) whose
//! estimated bias stays within [`TOLERANCE`] of the segment's expected time. Where a segment is
//! not closed by such collectives on both sides (ranks meet only their neighbours, or the
//! segment opens a straight-line phase), the maximum over ranks is not taken: each rank's own
//! bias must stay within the tolerance, which clips only the lower tail.
//!
//! The bias is estimated by Monte Carlo over the recorded distributions (the runtime's inverse
//! CDF, linear between quantiles) and the ranks' weights, with common random numbers for both
//! sides and a fixed seed, so the result is deterministic.
//!
//! # Complexity
//! O(phases × (blocks × ranks × samples) × bisection steps), with samples reduced so that one
//! segment holds at most [`MAX_DRAWS`] draws.

use std::collections::{BTreeMap, HashMap};

use mpiskel_trace::Op;

use mpiskel_program::{Call, Phase, PhaseIndex, Skeleton, Stmt, QUANTILE_PROBABILITIES};

/// Largest bias of the prediction that clipping may add, as a share of the segment's expected
/// time: well under the method's target (3 % mean).
pub const TOLERANCE: f64 = 0.005;

/// Monte Carlo samples of a segment (fewer where ranks × blocks × samples would pass
/// [`MAX_DRAWS`]; at least [`MIN_SAMPLES`]).
const SAMPLES: usize = 1000;

/// Fewest samples of a segment, however many ranks.
const MIN_SAMPLES: usize = 64;

/// Most draws held for one segment.
pub const MAX_DRAWS: usize = 4_000_000;

/// Bisection steps on the quantile level.
const STEPS: usize = 24;

/// Collectives (run blocking, on the world communicator) after which every rank has waited for
/// every other.
fn all_meet(s: &Stmt) -> bool {
    matches!(
        s,
        Stmt::Call {
            call: Call::Collective {
                op: Op::Barrier
                    | Op::Allreduce
                    | Op::Allgather
                    | Op::Allgatherv
                    | Op::Alltoall
                    | Op::Alltoallv
                    | Op::Alltoallw
                    | Op::ReduceScatter
                    | Op::ReduceScatterBlock,
                comm: 0,
                slot: None,
                ..
            },
            ..
        }
    )
}

/// A block's duration at quantile level `u`: the runtime's draw (linear between quantiles).
pub fn quantile(q: &[f64], u: f64) -> f64 {
    let p = &QUANTILE_PROBABILITIES;
    if q.len() != p.len() {
        return q.first().copied().unwrap_or(0.0);
    }
    let mut k = 0;
    while k < p.len() - 2 && u >= p[k + 1] {
        k += 1;
    }
    let f = ((u - p[k]) / (p[k + 1] - p[k])).clamp(0.0, 1.0);
    q[k] * (1.0 - f) + q[k + 1] * f
}

/// One rank's durations of one block: fixed, or drawn from quantiles; times its weight.
#[derive(Debug, Clone)]
pub(crate) enum Duration {
    Fixed(f64),
    Drawn(Vec<f64>, f64),
}

impl Duration {
    /// The duration at quantile level `u`.
    pub(crate) fn at(&self, u: f64) -> f64 {
        match self {
            Duration::Fixed(x) => *x,
            Duration::Drawn(q, w) => quantile(q, u) * w,
        }
    }
}

/// A uniform draw in [0, 1) for the deterministic samples ([`mpiskel_trace::rng`]).
pub(crate) fn uniform(state: &mut u64) -> f64 {
    mpiskel_trace::rng::unit(mpiskel_trace::rng::splitmix64(state))
}

/// For every drawn block at the same place of a phase of the same name in every class, the
/// recorded seconds every rank may skip per execution (see the module documentation), keyed by
/// phase name, then index in the body. Blocks of fixed duration are not listed (the shortest
/// rank's duration bounds them).
///
/// # Complexity
/// O(phases) look-ups ([`PhaseIndex`]) and, per phase, O(blocks × ranks × samples) for its
/// drawn segments.
pub fn drawn_removals(skel: &Skeleton) -> HashMap<String, BTreeMap<usize, f64>> {
    let mut out = HashMap::new();
    let Some(first) = skel.classes.first() else { return out };
    let index = PhaseIndex::new(&skel.classes);
    for p in &first.phases {
        let phases: Option<Vec<&Phase>> = (0..skel.classes.len())
            .map(|ci| index.get(ci, &p.name).map(|i| &skel.classes[ci].phases[i]))
            .collect();
        let Some(phases) = phases else { continue };
        let removals: BTreeMap<usize, f64> = phase_removals(skel, &phases).into_iter().collect();
        if !removals.is_empty() {
            out.insert(p.name.clone(), removals);
        }
    }
    out
}

/// The removals of one phase (the same phase in every class, `phases[i]` of class `i`).
fn phase_removals(skel: &Skeleton, phases: &[&Phase]) -> Vec<(usize, f64)> {
    let body = &phases[0].body;
    let n = body.len();
    // Positions that are blocks in every class, and where every class meets every rank.
    // (Classes whose bodies differ in length have positions only some of them hold.)
    let block =
        |at: usize| phases.iter().all(|p| matches!(p.body.get(at), Some(Stmt::Compute { .. })));
    let drawn = |at: usize| {
        block(at)
            && phases
                .iter()
                .any(|p| matches!(p.body.get(at), Some(Stmt::Compute { dist: Some(_), .. })))
    };
    // Where bodies differ, meetings are not trusted to correspond: every segment is open.
    let aligned = phases.iter().all(|p| p.body.len() == n);
    let meets: Vec<usize> = (0..n)
        .filter(|&at| aligned && phases.iter().all(|p| p.body.get(at).is_some_and(all_meet)))
        .collect();
    // Segments: (blocks, closed by meetings on both sides).
    let mut segments: Vec<(Vec<usize>, bool)> = Vec::new();
    if meets.is_empty() {
        segments.push(((0..n).filter(|&at| block(at)).collect(), false));
    } else {
        let (first, last) = (meets[0], meets[meets.len() - 1]);
        for w in meets.windows(2) {
            segments.push(((w[0] + 1..w[1]).filter(|&at| block(at)).collect(), true));
        }
        let head: Vec<usize> = (0..first).filter(|&at| block(at)).collect();
        let tail: Vec<usize> = (last + 1..n).filter(|&at| block(at)).collect();
        if phases[0].is_loop {
            // The body repeats: its tail and head form one segment between meetings.
            segments.push((tail.into_iter().chain(head).collect(), true));
        } else {
            segments.push((head, false));
            segments.push((tail, false));
        }
    }
    let mut out = Vec::new();
    for (blocks, closed) in segments {
        if !blocks.iter().any(|&at| drawn(at)) {
            continue;
        }
        let durations: Vec<Vec<Duration>> = blocks
            .iter()
            .map(|&at| {
                skel.classes
                    .iter()
                    .zip(phases)
                    .flat_map(|(c, p)| {
                        let (d, factors) = match &p.body[at] {
                            Stmt::Compute { seconds, dist, factors, .. } => {
                                match dist.and_then(|d| skel.distributions.get(d)) {
                                    Some(x) => (Duration::Drawn(x.q.clone(), 1.0), *factors),
                                    None => (Duration::Fixed(*seconds), *factors),
                                }
                            }
                            _ => (Duration::Fixed(0.0), None),
                        };
                        skel.block_weights(c, factors).into_iter().map(move |w| match &d {
                            Duration::Fixed(x) => Duration::Fixed(x * w),
                            Duration::Drawn(q, _) => Duration::Drawn(q.clone(), w),
                        })
                    })
                    .collect()
            })
            .collect();
        let removals = segment_removals(&durations, closed);
        for (&at, r) in blocks.iter().zip(removals) {
            if drawn(at) && r > 0.0 {
                out.push((at, r));
            }
        }
    }
    out
}

/// The removal of each block of one segment (`durations[block][rank]`), for the largest
/// quantile level whose bias stays within [`TOLERANCE`].
fn segment_removals(durations: &[Vec<Duration>], closed: bool) -> Vec<f64> {
    let ranks = durations.first().map_or(0, Vec::len);
    if ranks == 0 {
        return vec![0.0; durations.len()];
    }
    let samples = (MAX_DRAWS / (ranks * durations.len())).clamp(MIN_SAMPLES, SAMPLES);
    // draws[s][b][r], flattened.
    let mut state = 0x6D70_6973_6B65_6C00u64;
    let mut draws = Vec::with_capacity(samples * durations.len() * ranks);
    for _ in 0..samples {
        for b in durations {
            for d in b {
                draws.push(d.at(uniform(&mut state)));
            }
        }
    }
    // What every rank can lose of a block at level λ: the least of its ranks' durations there.
    let removal_at = |lambda: f64| -> Vec<f64> {
        durations
            .iter()
            .map(|b| b.iter().map(|d| d.at(lambda)).fold(f64::INFINITY, f64::min).max(0.0))
            .collect()
    };
    // The segment's time and the clipped one's, per sample: the slowest rank's (closed), or
    // each rank's own (open), summed over samples.
    let bias_within = |r: &[f64]| -> bool {
        let removed: f64 = r.iter().sum();
        let nb = durations.len();
        let mut whole = vec![0.0f64; if closed { 1 } else { ranks }];
        let mut clipped = vec![0.0f64; whole.len()];
        let (mut t, mut tc) = (vec![0.0f64; ranks], vec![0.0f64; ranks]);
        for s in 0..samples {
            t.iter_mut().for_each(|x| *x = 0.0);
            tc.iter_mut().for_each(|x| *x = 0.0);
            for (b, &rb) in r.iter().enumerate() {
                let row = &draws[(s * nb + b) * ranks..(s * nb + b + 1) * ranks];
                for (k, &x) in row.iter().enumerate() {
                    t[k] += x;
                    tc[k] += (x - rb).max(0.0);
                }
            }
            if closed {
                whole[0] += t.iter().copied().fold(0.0, f64::max);
                clipped[0] += tc.iter().copied().fold(0.0, f64::max) + removed;
            } else {
                for k in 0..ranks {
                    whole[k] += t[k];
                    clipped[k] += tc[k] + removed;
                }
            }
        }
        whole.iter().zip(&clipped).all(|(w, c)| c - w <= TOLERANCE * w)
    };
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    if bias_within(&removal_at(1.0)) {
        return removal_at(1.0);
    }
    for _ in 0..STEPS {
        let mid = (lo + hi) / 2.0;
        if bias_within(&removal_at(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    removal_at(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread() -> Vec<f64> {
        // A block of about 1 ms with a low outlier at 0.2 ms and a tail to 1.3 ms.
        vec![
            2e-4, 6.3e-4, 8.0e-4, 8.1e-4, 8.5e-4, 9.3e-4, 9.7e-4, 1.0e-3, 1.07e-3, 1.18e-3,
            1.27e-3, 1.28e-3,
        ]
    }

    #[test]
    fn quantile_interpolates_like_the_runtime() {
        let q = spread();
        assert_eq!(quantile(&q, 0.0), 2e-4);
        assert_eq!(quantile(&q, 1.0), 1.28e-3);
        assert!((quantile(&q, 0.375) - (8.5e-4 + 9.3e-4) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn ranks_that_all_meet_lose_more_than_the_minimum() {
        let b = vec![(0..16).map(|_| Duration::Drawn(spread(), 1.0)).collect::<Vec<_>>()];
        let closed = segment_removals(&b, true)[0];
        let open = segment_removals(&b, false)[0];
        // The slowest of sixteen is rarely below the median; one rank alone often is.
        assert!(closed > 8.0e-4, "closed segment removes {closed}");
        assert!(open > 2e-4 && open < closed, "open segment removes {open}");
    }

    #[test]
    fn fixed_blocks_lose_their_shortest_rank() {
        let b = vec![vec![Duration::Fixed(1e-3), Duration::Fixed(2e-3)]];
        assert_eq!(segment_removals(&b, true), vec![1e-3]);
    }
}
