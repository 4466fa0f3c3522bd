//! Fuzzing mpiskel: random correct MPI programs, their traces mutated at the event and the
//! byte level, run through the readers and every stage of the pipeline, with the invariant that
//! each stage returns a result or an error — never a panic, a hang or a broken promise.
//!
//! - [`rng`]: the reproducible generator every case is made from;
//! - [`programs`]: random SPMD programs executed into traces;
//! - [`mutate`]: event and byte mutations;
//! - [`pipeline`]: one case through every stage, and the invariants checked;
//! - [`campaign`]: many cases on every core, the figures BENCHMARKS.md records.
//!
//! `mpiskel-fuzz pipeline --cases 1000000` runs a campaign; `tests/smoke.rs` runs short ones.
#![deny(missing_docs)]

pub mod campaign;
pub mod mutate;
pub mod pipeline;
pub mod programs;
pub mod rng;
