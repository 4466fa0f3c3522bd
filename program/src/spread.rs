//! How the recorded durations of one compute block spread, and what of that spread a
//! skeleton draws: the quantiles of the deviations across the ranks at each position
//! ([`distribution`]), each rank's systematic factor where one weight per rank cannot say it
//! ([`rank_factors`]), the unsteady share of a single rank's executions (`unsteady_share`,
//! von Neumann 1941), and which sub-microsecond blocks are drawn at all (censored recordings,
//! [`CENSORED_BELOW`]).
//!
//! # Complexity
//! O(samples) per block, plus a sort of its deviations (O(k log k)).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Quantiles kept per compute distribution.
pub const QUANTILES: usize = 12;

/// Mean duration under which a block is drawn only from a censored recording (see
/// [`distribution`]): SimGrid's default `smpi/cpu-threshold`.
pub const CENSORED_BELOW: f64 = 1e-6;

/// The probabilities of the kept quantiles: dense in the tails, where the slowest rank of a
/// step comes from, up to 99.9 % so that a lone outlier (an interrupt in one of thousands of
/// gaps) does not spread over the top percent of the draws (measured on NPB under SMPI: with the
/// maximum right after 99 %, predictions ran 10–15 % high). The runtime interpolates linearly
/// between them.
pub const QUANTILE_PROBABILITIES: [f64; QUANTILES] =
    [0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0];

/// How the recorded durations of one compute block spread across the ranks that run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    /// [`QUANTILES`] quantiles at [`QUANTILE_PROBABILITIES`], seconds, with the recorded mean.
    pub q: Vec<f64>,
}

/// How far a rank's mean at a block may stray from its weight before the block gets a table of
/// per-rank factors ([`rank_factors`]).
pub const FACTOR_SPREAD: f64 = 0.1;

/// Each rank's mean duration at one compute block over the class mean × the rank's weight, when
/// some rank strays by more than [`FACTOR_SPREAD`]: the ranks of a class then differ
/// systematically at this block (a rank on the grid's boundary, or the root of a coarse level,
/// computes more here and not elsewhere), which one weight per rank cannot say and drawing at
/// random would scatter over the ranks (measured on NPB MG, 16 ranks folded into 2 classes,
/// against SimGrid's replay: −18.0 % with random draws, −14.9 % with the factors; −6.5 % with
/// one class per rank, so folding loses more than this restores). `groups` are
/// the block's positions, each with one sample per rank. `None` for a class of one rank, blocks
/// under a microsecond, or ranks that agree.
///
/// # Complexity
/// O(samples).
pub fn rank_factors(
    groups: &[&[(u32, f32)]],
    weight: &dyn Fn(u32) -> f64,
) -> Option<BTreeMap<u32, f64>> {
    // Per rank: sum, sum of squares, executions.
    let mut sums: BTreeMap<u32, (f64, f64, usize)> = BTreeMap::new();
    let (mut total, mut count) = (0.0f64, 0usize);
    for g in groups {
        for &(r, x) in g.iter() {
            let x = f64::from(x);
            let e = sums.entry(r).or_default();
            e.0 += x;
            e.1 += x * x;
            e.2 += 1;
            total += x;
            count += 1;
        }
    }
    if sums.len() < 2 || count == 0 {
        return None;
    }
    let mean = total / count as f64;
    if mean < 1e-6 {
        return None;
    }
    let f: BTreeMap<u32, f64> = sums
        .iter()
        .map(|(&r, &(s, _, k))| {
            let w = weight(r);
            (r, if w > 0.0 { s / k as f64 / (mean * w) } else { 1.0 })
        })
        .collect();
    if !f.values().any(|&x| (x - 1.0).abs() > FACTOR_SPREAD) {
        return None;
    }
    // Where ranks ran the block several times, their means must differ by more than their
    // executions' own spread explains (four times the variance of a mean), or the differences
    // are noise, which the draws carry. A block run once per rank has no other evidence: its
    // durations are the ranks' own.
    let k_min = sums.values().map(|e| e.2).min().unwrap_or(1);
    if k_min >= 2 {
        let within: f64 = sums
            .values()
            .map(|&(s, q, k)| {
                let m = s / k as f64;
                ((q / k as f64 - m * m).max(0.0) / k as f64) / (mean * mean)
            })
            .sum::<f64>()
            / sums.len() as f64;
        let fm = f.values().sum::<f64>() / f.len() as f64;
        let between = f.values().map(|x| (x - fm).powi(2)).sum::<f64>() / (f.len() - 1) as f64;
        if between <= 4.0 * within {
            return None;
        }
    }
    Some(f)
}

/// The distribution of one compute block, from the samples of each program position it stands
/// for (one per rank of the class: rank, seconds), given each rank's systematic weight.
///
/// Only the spread *across ranks at the same position* that the ranks' weights do not explain
/// is kept: each sample becomes the block's mean plus its deviation from its position's mean
/// times its rank's weight. That is the spread that makes the slowest rank of a synchronised
/// step slower than the average one. Two other kinds of spread are left out of the draws:
/// - between positions (one iteration slower than another for every rank, or a loop's
///   iterations doing different work): it hits all ranks alike, and drawn independently per
///   rank it invents waiting the application never did (measured: +30 % on NPB LU's wavefront);
/// - between ranks, systematically (one rank always computes more): the rank's weight
///   reproduces it; drawn at random it would make a different rank the slowest at every step.
///
/// A class of a single rank has no spread across ranks; its draws come from the spread between
/// its own executions of the block instead. That rank's slow executions, averaged away, would
/// no longer hold up the ranks of the other classes that wait for it: NPB MG on 16 ranks (a
/// class per rank) ran 11 % short of SimGrid's replay with every block at its mean, and
/// replaying the trace itself with each rank's gaps replaced by those means ran as short.
/// Where the ranks vary together over time (`shared`, the share of that variation they have
/// at once, [`mpiskel_logicalize::common`]), only the rest is the rank's own: the deviations
/// are scaled by √(1 − shared), keeping the variance of the rank's own part (LAMMPS crack, a
/// class per rank, 99 % shared: drawn whole, the skeleton ran 18 % over the application).
/// Programs without collectives over every rank to measure that by still show it as a trend
/// along the run, which is not the rank's own either (`unsteady_share`); the smaller of the
/// two own shares is kept.
///
/// `None` where drawing would not differ from the mean: fewer than 8 deviations, or a spread
/// under 2 % of the mean; and a block under a microsecond ([`CENSORED_BELOW`]) on average unless
/// its recording is censored — some executions recorded as exactly nothing. SimGrid's
/// time-independent traces leave out CPU bursts shorter than its `smpi/cpu-threshold` (1 µs),
/// so such a block is nothing in most executions and a microsecond or more in a few, and a
/// synchronised step waits for the rank that had it: at its mean on every rank, NPB CG S on 16
/// ranks (thousands of such gaps between the calls of its row reductions) ran 7 % short of
/// SimGrid's replay even with every iteration run, 10 % at half the CPU speed. A timed trace
/// never records nothing: its sub-microsecond gaps are mostly the tracer's own clock reads and
/// the scheduler's jitter, which a native skeleton's run has of its own (drawn on top, the
/// LAMMPS skeleton predicted 18 % more, median of 5 runs each on 4 ranks over 2 cores).
pub fn distribution(
    groups: &[&[(u32, f32)]],
    weight: &dyn Fn(u32) -> f64,
    shared: Option<f64>,
) -> Option<Dist> {
    let (mut n, mut sum) = (0usize, 0.0f64);
    for g in groups {
        n += g.len();
        sum += g.iter().map(|&(_, x)| f64::from(x)).sum::<f64>();
    }
    if n == 0 {
        return None;
    }
    let mean = sum / n as f64;
    // Under a microsecond, only a censored recording is drawn (see above).
    if mean < CENSORED_BELOW && !groups.iter().any(|g| g.iter().any(|&(_, x)| x == 0.0)) {
        return None;
    }
    let mut v: Vec<f64> = Vec::new();
    // A class of one rank: the spread between its executions of the block, less what the ranks
    // share and what follows the run's course.
    if groups.iter().all(|g| g.len() == 1) {
        let xs: Vec<f64> = groups.iter().map(|g| f64::from(g[0].1)).collect();
        let own_share = (1.0 - shared.unwrap_or(0.0)).min(unsteady_share(&xs)).clamp(0.0, 1.0);
        let own = own_share.sqrt();
        v.extend(xs.iter().map(|&x| (mean + own * (x - mean)).max(0.0)));
    }
    for g in groups.iter().filter(|g| g.len() >= 2) {
        let m = g.iter().map(|&(_, x)| f64::from(x)).sum::<f64>() / g.len() as f64;
        v.extend(g.iter().map(|&(r, x)| (mean + f64::from(x) - weight(r) * m).max(0.0)));
    }
    quantiles_of(v, mean)
}

/// The share of the variance of `xs` (one rank's executions of a block, in program order) that
/// changes from one execution to the next rather than along the run: half the mean squared
/// successive difference over the variance (von Neumann 1941), at most 1. Noise gives about 1; a
/// trend (an LU factorization's panels shrinking step by step, each update shorter than the one
/// before) gives nearly 0. A trend is the program's course, which every rank follows at once:
/// drawn at random per rank it would invent waiting (the panel program, a class per rank: +109 %
/// with the whole spread drawn), so only the unsteady part is the rank's own.
///
/// O(n).
fn unsteady_share(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 3 {
        return 1.0;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    if var <= 0.0 {
        return 1.0;
    }
    let msd = xs.windows(2).map(|w| (w[1] - w[0]) * (w[1] - w[0])).sum::<f64>() / (n - 1) as f64;
    (msd / 2.0 / var).min(1.0)
}

/// The distribution of the durations `v` with mean `mean`: its quantiles, scaled so that the
/// distribution's mean is `mean`; `None` for fewer than 8 values, no mean, or a spread under
/// 2 % of the mean.
pub fn quantiles_of(mut v: Vec<f64>, mean: f64) -> Option<Dist> {
    if v.len() < 8 || mean <= 0.0 {
        return None;
    }
    v.sort_unstable_by(f64::total_cmp);
    let last = v.len() - 1;
    let mut q: Vec<f64> = QUANTILE_PROBABILITIES
        .iter()
        .map(|&p| {
            let x = p * last as f64;
            let (lo, f) = (x.floor() as usize, x - x.floor());
            v[lo] * (1.0 - f) + v[(lo + 1).min(last)] * f
        })
        .collect();
    q[QUANTILES - 1] = top_end(&v, q[QUANTILES - 2]);
    if q[QUANTILES - 1] - q[0] < 0.02 * mean {
        return None;
    }
    // Mean of the piecewise-linear distribution: each segment's midpoint, weighted by its mass.
    let qmean: f64 = q
        .windows(2)
        .zip(QUANTILE_PROBABILITIES.windows(2))
        .map(|(w, p)| (w[0] + w[1]) / 2.0 * (p[1] - p[0]))
        .sum();
    if qmean <= 0.0 {
        return None;
    }
    Some(Dist { q: q.iter().map(|x| x * mean / qmean).collect() })
}

/// The end of the top segment of the drawn distribution of the sorted durations `v`, whose
/// 99.9 % quantile is `from`: the draws above `from` (a thousandth of them) are uniform up to
/// it, so it is set where their mean is that of the samples they stand for — the largest
/// sample at most, `from` at least. Drawn up to the largest sample, a lone outlier (an
/// interrupt, or a preemption a virtual machine counts as processor time) would take the
/// weight of a thousandth of the draws: in 1.2 M gaps of 9.6 µs on 4 ranks over 2 cores, the
/// samples above 61 µs averaged 89 µs and the largest was 7 ms, and the segment up to it held
/// a third of the distribution's mean; scaled back to the recorded mean, every other draw came
/// out a quarter short, and the rare long blocks made the partners wait: the skeleton ran 12–20
/// % over the application, and within 2 % with its blocks at their mean. Fewer than two
/// samples above `from` (under 2,000 in all) leave the largest as it is.
fn top_end(v: &[f64], from: f64) -> f64 {
    let last = v.len() - 1;
    let first = (QUANTILE_PROBABILITIES[QUANTILES - 2] * last as f64).ceil() as usize;
    let top = &v[first.min(last)..];
    if top.len() < 2 {
        return v[last];
    }
    let mean = top.iter().sum::<f64>() / top.len() as f64;
    (2.0 * mean - from).min(v[last]).max(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_along_the_run_is_not_a_ranks_own_spread() {
        // Panels shrinking step by step, with a little noise: nearly all of the spread is trend.
        let trend: Vec<f64> =
            (0..40).map(|i| 40.0 - f64::from(i) + if i % 2 == 0 { 0.3 } else { -0.3 }).collect();
        assert!(unsteady_share(&trend) < 0.05, "{}", unsteady_share(&trend));
        // Alternating values (two kinds of step) change at every execution: all of it stays.
        let alternating: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { 1.0 } else { 3.0 }).collect();
        assert_eq!(unsteady_share(&alternating), 1.0);
        // Too few executions, or none that differ: nothing is taken away.
        assert_eq!(unsteady_share(&[1.0, 2.0]), 1.0);
        assert_eq!(unsteady_share(&[2.0; 10]), 1.0);
    }

    #[test]
    fn a_single_rank_class_following_a_trend_draws_only_its_noise() {
        let samples: Vec<[(u32, f32); 1]> = (0..64)
            .map(|i| [(0, (64 - i) as f32 * 1e-3 + if i % 2 == 0 { 1e-5 } else { 0.0 })])
            .collect();
        let groups: Vec<&[(u32, f32)]> = samples.iter().map(|s| &s[..]).collect();
        // In program order the draws keep only what changes from step to step: a few percent
        // of the 64 ms the steps span.
        let spread = |d: &Dist| d.q[QUANTILES - 1] - d.q[0];
        let d = distribution(&groups, &|_| 1.0, None).expect("some spread is left");
        assert!(spread(&d) < 0.005, "{:?}", d.q);
        // Shuffled, the same values are noise and are drawn whole.
        let mut shuffled = groups.clone();
        for i in 0..shuffled.len() {
            shuffled.swap(i, (i * 37 + 11) % 64);
        }
        let d = distribution(&shuffled, &|_| 1.0, None).expect("spread drawn");
        assert!(spread(&d) > 0.05, "{:?}", d.q);
    }

    #[test]
    fn a_censored_block_under_a_microsecond_keeps_the_bursts_some_ranks_had() {
        // Sixteen ranks at 40 positions: nothing recorded (a burst under SimGrid's threshold)
        // but at one rank in eight, which computed 1.5 µs: a mean of 0.19 µs.
        let samples: Vec<Vec<(u32, f32)>> = (0..40u32)
            .map(|p| (0..16u32).map(|r| (r, if (r + p) % 8 == 0 { 1.5e-6 } else { 0.0 })).collect())
            .collect();
        let groups: Vec<&[(u32, f32)]> = samples.iter().map(|s| &s[..]).collect();
        let d = distribution(&groups, &|_| 1.0, None).expect("drawn, not the mean everywhere");
        // The draws reach the bursts at the top and keep the mean.
        assert!(d.q[QUANTILES - 1] > 1e-6, "{:?}", d.q);
        let mean: f64 =
            d.q.windows(2)
                .zip(QUANTILE_PROBABILITIES.windows(2))
                .map(|(w, p)| (w[0] + w[1]) / 2.0 * (p[1] - p[0]))
                .sum();
        assert!((mean - 1.5e-6 / 8.0).abs() < 1e-9, "mean {mean}");
        // Timed, never nothing (a native tracer's gaps): the same spread stays at its mean.
        let timed: Vec<Vec<(u32, f32)>> = (0..40u32)
            .map(|p| (0..16u32).map(|r| (r, 1e-7 + 8e-7 * ((r + p) % 8) as f32 / 7.0)).collect())
            .collect();
        let groups: Vec<&[(u32, f32)]> = timed.iter().map(|s| &s[..]).collect();
        assert!(distribution(&groups, &|_| 1.0, None).is_none());
        // All ranks alike: nothing to draw.
        let flat: Vec<Vec<(u32, f32)>> =
            (0..40u32).map(|_| (0..16u32).map(|r| (r, 2e-7)).collect()).collect();
        let groups: Vec<&[(u32, f32)]> = flat.iter().map(|s| &s[..]).collect();
        assert!(distribution(&groups, &|_| 1.0, None).is_none());
    }

    #[test]
    fn a_lone_outlier_does_not_take_a_thousandth_of_the_draws() {
        // 100,000 gaps of about 10 us with a few interrupts (60-120 us) and one 7 ms outlier.
        let mut v: Vec<f64> = (0..100_000).map(|i| 10.0 + f64::from(i % 7) * 0.1).collect();
        for k in 0..120 {
            v[k * 800] = 60.0 + f64::from(k as u32 % 7) * 10.0;
        }
        v[5] = 7000.0;
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let d = quantiles_of(v.clone(), mean).expect("a spread");
        // The body keeps its place (the median gap, within what the linear segments below the
        // top misplace), rather than being scaled down a quarter to make room for draws up to
        // 7 ms.
        let median = d.q[5];
        assert!((median - 10.3).abs() < 0.03 * 10.3, "median {median} in {:?}", d.q);
        // The top segment stands for the samples above the 99.9 % quantile, on average.
        let first = (0.999 * (v.len() - 1) as f64).ceil() as usize;
        let mut sorted = v;
        sorted.sort_unstable_by(f64::total_cmp);
        let top = sorted[first..].iter().sum::<f64>() / (sorted.len() - first) as f64;
        let drawn = (d.q[10] + d.q[11]) / 2.0;
        assert!((drawn - top).abs() < 0.05 * top, "top segment {drawn} for samples of {top}");
        assert!(d.q[11] < 1000.0, "{:?}", d.q);
    }

    #[test]
    fn few_samples_keep_their_largest_as_the_top() {
        let v: Vec<f64> = (0..100).map(f64::from).collect();
        let d = quantiles_of(v, 49.5).expect("a spread");
        assert!((d.q[11] - 99.0).abs() < 1e-9, "{:?}", d.q);
    }
}
