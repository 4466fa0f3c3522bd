//! Drawn compute blocks whose mean lies in a tail their few draws would rarely reach.
//!
//! A drawn block ([`mpiskel_program::spread`]) gives each execution a duration from its recorded
//! distribution, and over many executions the draws hold the block's mean. Over a few they hold
//! it only where the mean is spread over the distribution. Where half of the mean lies in a
//! tail that the skeleton's draws of the block (its executions on every rank of its class)
//! reach less than once on average, the draws run a small part of the block's computation in
//! most runs and many times it in the others, and the prediction, which scales the kept
//! iterations to the application's, follows them: LAMMPS `melt` on one rank computes 88–119 ms
//! before one `MPI_Allreduce` in twelve (a thermo output's stretch of time steps) and
//! microseconds before the others, a kind of step that runs 4 of its 84 steps, and its skeleton
//! predicted 0.011 s for a 0.54–0.66 s run (−98 %). Such a block runs its mean in every
//! execution: the waiting its rare long draws cause on other ranks is lost, where the draws
//! would have shown it a few times too often or not at all. The emitted code says so at the block
//! ([`mpiskel_program::Pinned::note`]: the share of the durations that holds half the mean, and
//! how often one run reaches it).
//!
//! Blocks that replay their recorded durations ([`crate::replay`]) keep them, and blocks under
//! [`crate::replay::MIN_SHARE`] of their phase's computation per iteration keep their draws:
//! their spread can hold no rank up for long, and their mean is no share of the prediction
//! (sub-microsecond blocks of NPB's loops, whose recordings are censored, draw mostly nothing
//! and now and then a microsecond, as the simulated application ran them).
//!
//! # Complexity
//! O(size of the program + distributions × [`mpiskel_program::spread::QUANTILES`]).

use mpiskel_program::spread::{Dist, QUANTILE_PROBABILITIES};
use mpiskel_program::{Pinned, Skeleton, Stmt};

/// The probability of a draw from `dist` landing in the top of the distribution that holds
/// half of its mean (the draws interpolate linearly between the quantiles; the segment where
/// the half is reached counts whole).
pub fn half_mass_tail(dist: &Dist) -> f64 {
    let segments: Vec<(f64, f64)> = dist
        .q
        .windows(2)
        .zip(QUANTILE_PROBABILITIES.windows(2))
        .map(|(w, p)| (p[1] - p[0], (w[0] + w[1]) / 2.0 * (p[1] - p[0])))
        .collect();
    let total: f64 = segments.iter().map(|s| s.1).sum();
    if total <= 0.0 {
        return 1.0;
    }
    let (mut mass, mut tail) = (0.0, 0.0);
    for &(width, m) in segments.iter().rev() {
        mass += m;
        tail += width;
        if mass >= total / 2.0 {
            break;
        }
    }
    tail
}

/// Whether `executions` draws from `dist` reach the half of its mean less than once on
/// average.
pub fn undersampled(dist: &Dist, executions: f64) -> bool {
    executions * half_mass_tail(dist) < 1.0
}

/// Makes every drawn block of `skel` that its draws in one run of the skeleton (its executions
/// on every rank of its class) undersample ([`undersampled`]) run its mean; returns how many
/// blocks changed.
///
/// # Complexity
/// O(size of the program + distributions × [`mpiskel_program::spread::QUANTILES`]).
pub fn pin_undersampled(skel: &mut Skeleton) -> usize {
    let dists = skel.distributions.clone();
    let mut pinned = 0;
    for class in &mut skel.classes {
        let ranks = class.ranks.len().max(1) as f64;
        for phase in &mut class.phases {
            let kinds = phase.steps.as_ref().map(|s| s.run_kinds());
            let inner = phase.inner.as_ref().map(|c| (c.index, c.run));
            let run = phase.run as f64 * ranks;
            let least = crate::replay::MIN_SHARE * phase.compute_s;
            let walk = Walk { kinds: kinds.as_deref(), least, dists: &dists };
            for (i, stmt) in phase.body.iter_mut().enumerate() {
                let times = match (&*stmt, inner) {
                    (Stmt::Loop { .. }, Some((at, inner_run))) if at == i => {
                        Some(run * inner_run as f64)
                    }
                    _ => None,
                };
                pin(stmt, run, times, &walk, &mut pinned);
            }
        }
    }
    pinned
}

/// What [`pin`] needs of its phase: the kinds of the steps a time-step phase runs, the least
/// mean a block pinned has, and the skeleton's distributions.
struct Walk<'a> {
    kinds: Option<&'a [u32]>,
    least: f64,
    dists: &'a [Dist],
}

/// Walks `stmt`, run `times` times on the ranks of its class in all (`loop_times`: those of a
/// loop cut inside its phase).
fn pin(stmt: &mut Stmt, times: f64, loop_times: Option<f64>, walk: &Walk<'_>, pinned: &mut usize) {
    // Below this statement, steps are no longer the phase's.
    let inside = Walk { kinds: None, ..*walk };
    match stmt {
        Stmt::Compute { seconds, dist, replay: None, pinned: why, .. } => {
            if let Some(d) = dist.and_then(|d| walk.dists.get(d)) {
                if *seconds >= walk.least && undersampled(d, times) {
                    *dist = None;
                    *why = Some(Pinned { tail: half_mass_tail(d), executions: times });
                    *pinned += 1;
                }
            }
        }
        Stmt::Compute { .. } | Stmt::Call { .. } => {}
        Stmt::Loop { count, body, .. } => {
            let n = loop_times.unwrap_or(times * *count as f64);
            for s in body {
                pin(s, n, None, &inside, pinned);
            }
        }
        Stmt::Guard { body, .. } => {
            for s in body {
                pin(s, times, None, &inside, pinned);
            }
        }
        Stmt::Steps { cases } => {
            for (k, case) in cases.iter_mut().enumerate() {
                let n = walk.kinds.map_or(times, |ks| {
                    // `times` is the steps run on every rank: this kind's share of them.
                    let steps = ks.iter().filter(|&&x| x as usize == k).count() as f64;
                    steps * times / ks.len().max(1) as f64
                });
                for s in &mut case.body {
                    pin(s, n, None, &inside, pinned);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The durations LAMMPS `melt` on one rank recorded before its thermo `MPI_Allreduce`s:
    /// microseconds, and 88–119 ms before one in twelve.
    fn melt_one_rank() -> Dist {
        Dist {
            q: vec![
                2.58e-8, 2.58e-8, 2.67e-8, 2.67e-8, 2.67e-8, 1.23e-6, 1.36e-5, 9.48e-5, 8.82e-2,
                1.19e-1, 1.193e-1, 1.193e-1,
            ],
        }
    }

    #[test]
    fn a_mean_held_by_a_twentieth_of_the_draws_needs_twenty_of_them() {
        let d = melt_one_rank();
        let tail = half_mass_tail(&d);
        assert!((tail - 0.05).abs() < 1e-9, "{tail}");
        assert!(undersampled(&d, 4.0));
        assert!(undersampled(&d, 19.0));
        assert!(!undersampled(&d, 20.0));
        assert!(!undersampled(&d, 84.0));
    }

    #[test]
    fn a_spread_mean_is_held_by_a_few_draws() {
        // Uniform from 1 to 3 ms: half of the mean lies above about 2.2 ms, in the top 40 %
        // of the draws (counted here by whole segments: the top half).
        let q: Vec<f64> = QUANTILE_PROBABILITIES.iter().map(|p| 1e-3 + 2e-3 * p).collect();
        let d = Dist { q };
        let tail = half_mass_tail(&d);
        assert!((0.4..=0.5).contains(&tail), "{tail}");
        assert!(!undersampled(&d, 4.0));
        assert!(undersampled(&d, 1.0));
    }
}
