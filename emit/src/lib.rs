//! Skeleton construction (seed 001 §4): matching, deadlock check, scaling and code generation.
//!
//! Built so far:
//! - [`matching`]: global and local sends and receives of a class's logical program (seed 001
//!   Fig. 3), with size balancing;
//! - [`deadlock::check`]: executes every rank's program under the strictest MPI semantics and
//!   reports, as data, each rank that would block forever.
//!
//! Scaling and the C and Rust back ends are not built yet. This crate never reads trace files.
#![deny(missing_docs)]

pub mod deadlock;
pub mod matching;

pub use deadlock::{check, Blocked, CheckOp, Deadlock};
pub use matching::{calls_of_class, match_calls, Call, Mark, Matching, P2pCall};
