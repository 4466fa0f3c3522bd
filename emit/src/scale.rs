//! Scaling (seed 001 §4–5.1): cut the main loop so the skeleton runs about a target time, and
//! record the factors that turn skeleton time back into application time.
//!
//! The recorded application time T is split by the recorded computation: the main loop's share
//! f of the computation of the largest class stands for f·T (when nothing was computed, its share
//! of the calls does). With N iterations of the main loop, one costs t = f·T/N and the rest of
//! the program r = (1−f)·T, so `k = ⌊(target − r) / t⌋`, clamped to 1..=N, iterations run. Every
//! class removes the same N−k iterations from its main loop, so classes whose nests peeled an
//! iteration differently still meet each other's messages; the whole program is then checked.
//!
//! Two predictions come out of a run: the **single ratio** (skeleton time × T / (r + k·t), the
//! seed's factor) and the **per-phase** one (each phase's measured time × full / run, in the
//! spirit of the phase weights of seed 003), which does not assume the loop and the rest slowed
//! down alike.
//!
//! # Complexity
//! O(size of the program).

use serde::{Deserialize, Serialize};

use crate::program::{calls_in, Skeleton};

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
    /// Why the cut differs from the target's, if it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// The default target: the shorter of 60 s and a tenth of the application's time.
pub fn default_target(app_time_s: f64) -> f64 {
    (app_time_s / 10.0).min(60.0)
}

/// Cuts the main loops of `skel` for `target_s` (see the module documentation).
pub fn scale(skel: &mut Skeleton, app_time_s: f64, source: &str, target_s: f64) -> Scaling {
    // The largest class by computation decides the split.
    let weight = |c: &crate::program::ClassProgram| -> (f64, f64) {
        let total: f64 = c.phases.iter().map(|p| p.compute_s * p.full as f64).sum();
        let main: f64 = c
            .phases
            .iter()
            .filter(|p| p.name == "main_loop")
            .map(|p| p.compute_s * p.full as f64)
            .sum();
        if total > 0.0 {
            return (main, total);
        }
        let calls: f64 = c.phases.iter().map(|p| (p.calls * p.full) as f64).sum();
        let main_calls: f64 = c
            .phases
            .iter()
            .filter(|p| p.name == "main_loop")
            .map(|p| (p.calls * p.full) as f64)
            .sum();
        (main_calls, calls)
    };
    let lead = skel
        .classes
        .iter()
        .max_by(|a, b| weight(a).1.total_cmp(&weight(b).1))
        .map(|c| (weight(c), c.phases.iter().find(|p| p.name == "main_loop").map(|p| p.full)));
    let (share, n) = match lead {
        Some(((main, total), Some(n))) if total > 0.0 => (main / total, n),
        Some((_, Some(n))) => (1.0, n),
        _ => (0.0, 1),
    };
    let per_iter = share * app_time_s / n as f64;
    let rest = app_time_s - share * app_time_s;
    let k = if per_iter > 0.0 {
        (((target_s - rest) / per_iter).floor() as i64).clamp(1, n as i64) as u64
    } else {
        n
    };
    let cut = n - k;
    for c in &mut skel.classes {
        for p in c.phases.iter_mut().filter(|p| p.name == "main_loop") {
            p.run = p.full.saturating_sub(cut).max(1);
        }
    }
    let estimate = rest + k as f64 * per_iter;
    let _ = calls_in;
    Scaling {
        app_time_s,
        app_time_source: source.into(),
        target_s,
        main_full: n,
        main_run: k,
        main_share: share,
        skeleton_estimate_s: estimate,
        factor: if estimate > 0.0 { app_time_s / estimate } else { 1.0 },
        note: String::new(),
    }
}
