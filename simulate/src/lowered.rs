//! What a skeleton's program lowers to: every rank's calls, and where its phases, iterations,
//! time steps and cut inner loops begin in them, with how the runtime prices them.

use mpiskel_trace::RankTrace;
use serde::Serialize;

/// Iterations of a cut loop run before its pace is measured (the first waits for the ranks that
/// reach the loop last).
pub const WARM: u64 = 2;

/// Iterations its pace is measured over.
pub const WINDOW: u64 = 3;

/// A cut loop runs as many iterations as the skeleton runs (more draws of its compute blocks to
/// average over), and up to `WARM + WINDOW + 1` more, while ranks × those iterations stay
/// within this; beyond, `WARM + WINDOW + 1`.
pub const RANK_ITERATIONS: u64 = 4096;

/// Every rank's calls, and where the phases and iterations begin in them.
#[derive(Debug)]
pub struct Lowered {
    /// One trace per rank, made from the skeleton's program.
    pub traces: Vec<RankTrace>,
    /// Per rank: the calls (indices into its events; its number of events for its end) at
    /// which the simulation notes the time, ascending.
    pub marks: Vec<Vec<usize>>,
    /// Per rank: its phases, with the marks that time them.
    pub phases: Vec<Vec<PhaseMarks>>,
}

/// One phase of one rank, as lowered.
#[derive(Debug, Clone)]
pub struct PhaseMarks {
    /// The phase's name in its class program.
    pub name: String,
    /// Iterations of the application.
    pub full: u64,
    /// Warm-up iterations of it the skeleton skipped, priced here as iterations of it.
    pub warmup: u64,
    /// Iterations simulated (application positions, ascending) and each one's kind (0 for
    /// every iteration of a plain loop); `None` where every iteration was simulated.
    pub simulated: Option<(Vec<u64>, Vec<u32>)>,
    /// Kind of each application iteration of a time-step loop (empty for other loops).
    pub kinds: Vec<u32>,
    /// Per kind of a time-step loop whose skeleton runs only some kinds of a family
    /// (`mpiskel_cut::families`): what the kind's time is multiplied by, for the kinds of
    /// its family that do not run, 0 for those; empty otherwise.
    pub kind_scales: Vec<f64>,
    /// Index into the rank's marks of the phase's start; of each simulated iteration's start
    /// (where `simulated`); of its end.
    pub start: usize,
    /// See `start`.
    pub iterations: Vec<usize>,
    /// See `start`.
    pub end: usize,
    /// As the skeleton runs ([`lower_as_run`]): seconds of computation this rank did not run in
    /// the phase, which its runtime adds back.
    pub removed_s: f64,
    /// Of `removed_s`, what blocks that keep only a short part skipped: the runtime adds back,
    /// on every rank, the most any rank skipped so in the phase.
    pub keep_s: f64,
    /// As the skeleton runs: the application's iterations of the phase (with the warm-up it
    /// prices) per iteration run, by which its runtime scales the phase, times its
    /// [`Phase::scale`]; 1 otherwise.
    pub scale: f64,
    /// The phase's [`Phase::scale`]: a part of a stretch cut short stands for the whole
    /// stretch.
    pub stretch: f64,
    /// As the skeleton runs: whether its runtime counts the first iteration once because it
    /// replays the application's first (`mpiskel_cut::replay::replays_first`).
    pub first_apart: bool,
    /// As the skeleton runs ([`lower_as_run`]): what its runtime prices the phase by; `None`
    /// otherwise.
    pub pricing: Option<RunPricing>,
}

/// What the runtime prices a phase by, as the skeleton runs (see [`runtime_phases`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RunPricing {
    /// The application's iterations of the phase (without the warm-up).
    pub full: u64,
    /// Warm-up iterations the skeleton skipped, priced as iterations of the phase.
    pub warmup: u64,
    /// The phase's [`Phase::scale`].
    pub scale: f64,
    /// The cut inner loop, timed on its own, if the phase has one.
    pub inner: Option<InnerMarks>,
    /// A time-step loop's steps, each timed in its kind's phase, if the phase is one.
    pub steps: Option<StepMarks>,
}

/// The steps of a time-step loop as the skeleton runs them: its runtime times each in the
/// phase of its kind and scales that kind's time by the application's steps of the kind over
/// those run, times the kind's scale (`sk_steps_count`, `main_loop.kindK`).
#[derive(Debug, Clone, PartialEq)]
pub struct StepMarks {
    /// The kind of each step run, in order (the phase's `iterations` mark their starts).
    pub kinds: Vec<u32>,
    /// Seconds of computation each step did not run.
    pub removed_s: Vec<f64>,
    /// Per kind: its steps in the application and its scale
    /// (`mpiskel_program::StepCase::scale`).
    pub cases: Vec<(u64, f64)>,
}

/// A cut inner loop as the skeleton runs it: timed on its own, its first iteration apart in each
/// iteration of the phase (`sk_inner_first`).
#[derive(Debug, Clone, PartialEq)]
pub struct InnerMarks {
    /// Its iterations in the application per iteration of the phase.
    pub full: u64,
    /// Its iterations run per iteration of the phase.
    pub run: u64,
    /// Per iteration of the phase run, indices into the rank's marks: the inner loop's start,
    /// the end of its first iteration, its end.
    pub marks: Vec<(usize, usize, usize)>,
    /// Seconds of computation the rank did not run inside it.
    pub removed_s: f64,
}

/// What one phase of the slowest rank took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseFigures {
    /// Name in its class program.
    pub name: String,
    /// Iterations of the application.
    pub full: u64,
    /// Iterations simulated.
    pub simulated: u64,
    /// Seconds the simulated iterations took.
    pub simulated_s: f64,
    /// Seconds the phase is predicted to take in the application: the simulated iterations,
    /// the others at their pace, and any warm-up iterations it prices.
    pub predicted_s: f64,
}

/// The prediction made from the marks' times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Priced {
    /// Predicted application time: the slowest rank's simulated end plus the iterations it
    /// did not simulate.
    pub predicted_s: f64,
    /// That rank.
    pub rank: u32,
    /// Its phases.
    pub phases: Vec<PhaseFigures>,
}

/// How a skeleton's program is lowered as it runs: the compute shrink of its fixed blocks, and
/// whether its compute cut applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AsRun {
    pub(crate) shrink: f64,
    pub(crate) cut: bool,
}

/// The state of the runtime's generator on rank `r` after its set-up with `--seed seed`
/// (`sk_init` of `skeletons/mpiskel_rt.c`, `Rt::init` of the Rust runtime): its constant, the
/// seed and the rank mixed in, eight draws discarded.
pub(crate) fn runtime_rng(seed: u64, r: u32) -> u64 {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    state ^= seed.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    state ^= (u64::from(r) + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    for _ in 0..8 {
        runtime_uniform(&mut state);
    }
    state
}

/// One draw of the runtime's generator (xorshift64*, `sk_uniform`).
pub(crate) fn runtime_uniform(state: &mut u64) -> f64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
}
