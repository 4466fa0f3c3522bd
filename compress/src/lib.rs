//! Loop-nest discovery (Xu & Subhlok 2008, §3): a symbol sequence → a loop-nest program.
//!
//! This crate knows nothing about MPI: it compresses sequences of [`Sym`]s (the caller decides
//! what a symbol stands for) into a [`LoopNest`] of symbols and loops whose
//! [`expand`](LoopNest::expand) gives the sequence back. Weights carried alongside the symbols
//! (compute-gap durations) are folded per program position with
//! [`LoopNest::attach_weights`] (mean, min, max, spread).
//!
//! - [`greedy`]: bottom-up, shortest period first, O(n log n) — the production pass.
//! - [`exact`]: maximum span covered, then shortest program — the baseline for small inputs.
//! - [`runs`](runs::runs): all runs (maximal tandem repeats) by Main–Lorentz sampling.
//! - [`find_steps`]: an irregular time-step loop as steps of a few kinds ([`Node::Steps`]).
//!
//! ```
//! use mpiskel_compress::{greedy, LoopNest};
//! let seq = [7, 1, 2, 1, 2, 1, 2, 9];
//! let nest = greedy(&seq);
//! assert_eq!(nest.expand(), seq);
//! assert_eq!(nest.notation(), "1 + (2)^3 + 1");
//! ```
#![deny(missing_docs)]

mod exact;
mod greedy;
mod nest;
pub mod runs;
mod steps;

pub use exact::exact;
pub use greedy::greedy;
pub use nest::{
    leaf_count, main_loop_index, LoopNest, NestReport, Node, Stats, Sym, When,
    MAIN_LOOP_PAIR_MIN_BODY,
};
pub use steps::{find_steps, StepFold};
