//! Skeleton construction (seed 001 §4): matching, deadlock check, scaling and code generation.
//!
//! Built so far: the deadlock checker ([`deadlock::check`]), which executes every rank's program
//! under the strictest MPI semantics and reports, as data, each rank that would block forever.
//! Matching, scaling and the C and Rust back ends are not built yet. This crate never reads
//! trace files.
#![deny(missing_docs)]

pub mod deadlock;

pub use deadlock::{check, Blocked, CheckOp, Deadlock};
