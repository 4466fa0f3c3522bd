//! How much of the variation of the ranks' computation over time they share.
//!
//! A rank's compute time between two calls varies from one execution to the next for two kinds
//! of reason: the work changes for everyone at once (a particle code's step that rebuilds its
//! neighbour lists, a solver's iteration that does more), or the rank itself is faster or slower
//! this time. Only the second makes ranks wait for each other; a skeleton that drew the first
//! independently per rank would invent the waiting (LAMMPS crack, 4 ranks: the steps' compute
//! is 99 % correlated between ranks; drawn independently, the slowest rank of a step took 45 %
//! longer than in the application).
//!
//! The calls to collectives over every rank are the same points of every rank's program: the
//! time between two consecutive ones is one *segment*, the same span of the program on every
//! rank. With `C[r][k]` rank r's computation in segment k and `m[k]` its mean over ranks, each
//! rank's own part is `d[r][k] = C[r][k] − m[k]`, and
//!
//! ```text
//! shared = 1 − (R / (R − 1)) · mean_r Var_k(d[r]) / mean_r Var_k(C[r])
//! ```
//!
//! (the variance of the common part over that of the whole; `R / (R − 1)` because each `d` is
//! taken from a mean it is part of), clamped to [0, 1].
//!
//! # Complexity
//! O(n) over the calls of every rank.

use mpiskel_trace::{OpClass, TraceSet};

/// Segments needed before the share is estimated.
const MIN_SEGMENTS: usize = 16;

/// The share of the variance of the ranks' computation per segment between collectives over
/// every rank that all ranks have in common (see the module documentation); `None` with fewer
/// than two ranks, fewer than [`MIN_SEGMENTS`] segments on some rank, or no variation.
pub fn shared_variation(set: &TraceSet) -> Option<f64> {
    let r = set.ranks.len();
    if r < 2 {
        return None;
    }
    let segments: Vec<Vec<f64>> = set
        .ranks
        .iter()
        .map(|rt| {
            let mut out = Vec::new();
            let mut acc = 0.0;
            for e in &rt.events {
                acc += e.gap_cpu_ns.unwrap_or(e.gap_ns) as f64 * 1e-9;
                let world = matches!(
                    &e.payload,
                    mpiskel_trace::Payload::Collective { comm, .. } if *comm == mpiskel_trace::CommId::WORLD
                );
                if e.op.class() == OpClass::Collective && world {
                    out.push(acc);
                    acc = 0.0;
                }
            }
            out
        })
        .collect();
    let k = segments.iter().map(Vec::len).min()?;
    if k < MIN_SEGMENTS {
        return None;
    }
    let mean_of = |v: &mut dyn Iterator<Item = f64>| {
        let (mut s, mut n) = (0.0, 0.0);
        for x in v {
            s += x;
            n += 1.0;
        }
        s / n
    };
    let variance = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64
    };
    let m: Vec<f64> = (0..k).map(|j| mean_of(&mut segments.iter().map(|s| s[j]))).collect();
    let total = mean_of(&mut segments.iter().map(|s| variance(&s[..k])));
    if total <= 0.0 {
        return None;
    }
    let own = mean_of(&mut segments.iter().map(|s| {
        let d: Vec<f64> = (0..k).map(|j| s[j] - m[j]).collect();
        variance(&d)
    }));
    let n = r as f64;
    Some((1.0 - n / (n - 1.0) * own / total).clamp(0.0, 1.0))
}
