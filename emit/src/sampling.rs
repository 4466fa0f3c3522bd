//! How many iterations of a main loop of few iterations must run for the compute durations
//! they draw to stand for all of them.
//!
//! A skeleton that runs k of a loop's n iterations predicts the loop as the k iterations' mean
//! time × n. Each iteration draws its compute durations from the recorded spread, so that mean
//! is a sample: with a heavy tail (NPB FT W on 16 ranks, where 1 % of the blocks took five times
//! the usual), one iteration of six predicts +43 % where all six predict +2.4 % under SMPI.
//! Where the durations hardly spread, one iteration stands for all of them exactly.
//!
//! The iteration's compute time is modelled as what the slowest rank computes at each block of
//! the loop's body (every rank waiting for the slowest after each block: the most variable
//! case), plus its inner loops at their mean, over the lead class's ranks with their weights;
//! its standard deviation σ comes from [`SAMPLES`] Monte Carlo draws (fixed seed). The loop of
//! n iterations predicted from k of them is off by n·σ/√k (one standard error); within
//! [`PRECISION`] of the application's time T at about 95 % (two standard errors) when
//! `k ≥ (2·n·σ / (PRECISION·T))²`.
//!
//! # Complexity
//! O(blocks of the body × ranks of the lead class × [`SAMPLES`]).

use crate::program::{compute_of, ClassProgram, Skeleton, Stmt};
use crate::removal::{uniform, Duration};

/// Half-width, as a share of the loop's time, within which the sampled iterations' mean stands
/// for all iterations (at about 95 %).
pub const PRECISION: f64 = 0.02;

/// Monte Carlo draws of one iteration.
const SAMPLES: usize = 2000;

/// The standard deviation of one iteration's compute time of `class`'s main loop, recorded
/// seconds (0 without a main loop or compute blocks).
pub fn iteration_spread(skel: &Skeleton, class: &ClassProgram) -> f64 {
    let Some(main) = class.main_loop() else { return 0.0 };
    let w = skel.block_weights(class, None);
    let w_max = w.iter().copied().fold(1.0f64, f64::max);
    // Inner loops count at their mean; the body's own blocks are drawn.
    let fixed: f64 = main
        .body
        .iter()
        .filter(|s| !matches!(s, Stmt::Compute { .. }))
        .map(|s| compute_of(std::slice::from_ref(s)))
        .sum::<f64>()
        * w_max;
    let blocks: Vec<Vec<Duration>> = main
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::Compute { seconds, dist, factors, .. } => {
                let w = skel.block_weights(class, *factors);
                Some(match dist.and_then(|d| skel.distributions.get(d)) {
                    Some(x) => w.iter().map(|&wr| Duration::Drawn(x.q.clone(), wr)).collect(),
                    None => w.iter().map(|&wr| Duration::Fixed(seconds * wr)).collect(),
                })
            }
            _ => None,
        })
        .collect();
    if blocks.is_empty() || w.is_empty() {
        return 0.0;
    }
    let mut state = 0x7361_6D70_6C65_7300u64;
    let times: Vec<f64> = (0..SAMPLES)
        .map(|_| {
            fixed
                + blocks
                    .iter()
                    .map(|b| b.iter().map(|d| d.at(uniform(&mut state))).fold(0.0, f64::max))
                    .sum::<f64>()
        })
        .collect();
    let mean = times.iter().sum::<f64>() / SAMPLES as f64;
    let var = times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (SAMPLES - 1) as f64;
    var.sqrt()
}

/// The iterations of a main loop of `full` iterations that must run so that the prediction of
/// the whole loop (their mean × `full`) is within [`PRECISION`] of the application's time
/// `app_s` at about 95 %, given the standard deviation `spread_s` of one iteration (in
/// application seconds): `k ≥ (2 · full · spread_s / (PRECISION · app_s))²`, 1 to `full`.
pub fn iterations_needed(full: u64, spread_s: f64, app_s: f64) -> u64 {
    if app_s <= 0.0 || !spread_s.is_finite() || spread_s <= 0.0 {
        return 1;
    }
    let k = (2.0 * full as f64 * spread_s / (PRECISION * app_s)).powi(2).ceil();
    if k >= full as f64 {
        full.max(1)
    } else {
        (k as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::iterations_needed;

    #[test]
    fn the_spread_decides_the_iterations() {
        // Six iterations of 1 s in a 10 s run.
        assert_eq!(iterations_needed(6, 0.0, 10.0), 1, "no spread: one stands for all");
        // 1 % of a second per iteration: 2·6·0.01/0.2 = 0.6 → 1.
        assert_eq!(iterations_needed(6, 0.01, 10.0), 1);
        // 3 %: 1.8² → 4.
        assert_eq!(iterations_needed(6, 0.03, 10.0), 4);
        // 30 %: all of them.
        assert_eq!(iterations_needed(6, 0.3, 10.0), 6);
    }
}
