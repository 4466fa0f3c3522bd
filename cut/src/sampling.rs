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
//! Independent draws per block miss variation that slows whole iterations at once (the
//! machine a trace was recorded on computing slower for a while: NPB MG S's last two V-cycles
//! took 50 % longer than the first two on every rank, and one V-cycle of four predicted −14 %
//! under SMPI). σ is therefore the larger of the drawn one and the standard deviation of the
//! recorded iterations' critical computation ([`recorded_spread`]).
//!
//! # Complexity
//! O(blocks of the body × ranks of the lead class × [`SAMPLES`]).

use mpiskel_compress::LoopNest;
use mpiskel_logicalize::LogicalTrace;

use crate::removal::{uniform, Duration};
use mpiskel_program::{compute_of, leaf_map, ClassProgram, Skeleton, Stmt};

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

/// The standard deviation of one iteration's *recorded* critical computation in the main loop
/// of class `ci` (per iteration: per block, the longest any rank recorded, summed), recorded
/// seconds, over its iterations but the first (which may do one-off work, counted apart).
/// Draws per block ([`iteration_spread`]) miss what slows whole iterations at once: the
/// machine a trace was recorded on computing slower for a while (NPB MG S's iterations 3–4
/// took 50 % longer than 1–2 on every rank). 0 where the loop has fewer than three iterations
/// or its blocks do not map onto them.
///
/// # Complexity
/// O(the main loop's recorded executions × ranks).
pub fn recorded_spread(skel: &Skeleton, ci: usize, lt: &LogicalTrace, nests: &[LoopNest]) -> f64 {
    fn leaves(body: &[Stmt], times: u64, out: &mut Vec<(usize, u64)>) {
        for s in body {
            match s {
                Stmt::Compute { leaf: Some(l), .. } => out.push((*l, times)),
                Stmt::Loop { count, body, .. } => leaves(body, times * count, out),
                Stmt::Guard { body, .. } => leaves(body, times, out),
                _ => {}
            }
        }
    }
    let (Some(class), Some(lclass), Some(nest)) =
        (skel.classes.get(ci), lt.classes.get(ci), nests.get(ci))
    else {
        return 0.0;
    };
    let Some(main) = class.main_loop().filter(|p| p.steps.is_none() && p.full >= 3) else {
        return 0.0;
    };
    let full = main.full as usize;
    let mut found = Vec::new();
    leaves(&main.body, 1, &mut found);
    let lm = leaf_map(nest, mpiskel_compress::leaf_count(&nest.items));
    let mut critical = vec![0.0f64; full];
    for (leaf, per) in found {
        let Some(positions) = lm.positions.get(leaf) else { continue };
        // A guarded block runs in some iterations only: it does not map one to one.
        if positions.len() != full * per as usize {
            continue;
        }
        for (k, &p) in positions.iter().enumerate() {
            let Some(op) = lclass.ops.get(p) else { continue };
            let most = op.gap_samples.iter().map(|&(_, x)| f64::from(x)).fold(0.0, f64::max);
            critical[k / per as usize] += most;
        }
    }
    let rest = &critical[1..];
    let mean = rest.iter().sum::<f64>() / rest.len() as f64;
    let var = rest.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (rest.len() - 1) as f64;
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
