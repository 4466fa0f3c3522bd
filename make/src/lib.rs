//! Skeleton folders end to end: what the product's `build`, `run`, `record` and `calibrate`
//! commands do, as a library the CLI and the validation suites call.
//!
//! - [`build`]: a skeleton folder from a trace (read, fold polls, leave out local calls, align
//!   collectives, logicalize, make the checked and scaled program, render C or Rust), its
//!   candidates measured on the fidelity panel and one kept by [`policy`] (the platforms and
//!   targets aimed at by `aim`, the options in [`options`]), written under a temporary name and
//!   renamed into place when complete; [`memory`] gives freed stages back to the system;
//! - [`run`]: compile a skeleton folder (mpicc of OpenMPI or MPICH, SimGrid's smpicc, or cargo
//!   for a Rust skeleton) and run it with a timeout; its report read back;
//! - [`record`]: a run recorded with the PMPI tracer into a trace folder, with the load beside
//!   it ([`load`]);
//! - [`calibrate`]: ping-pong times of this machine, for the simulator's network model;
//! - [`harness`]: what the runs set up on this machine (process groups, network namespaces with
//!   a bandwidth limit, CPU cgroups, temporary folders) and the guarantee that all of it goes
//!   away again, also on SIGINT, SIGTERM and SIGHUP;
//! - [`observe`]: how the long steps report progress to the caller.
//!
//! One error type, [`Error`], with the file, run or step it concerns.

mod aim;
pub mod build;
pub mod calibrate;
pub mod error;
pub mod harness;
pub mod load;
pub mod memory;
pub mod observe;
pub mod options;
pub mod policy;
pub mod record;
pub mod run;

pub use build::{build, BuildOptions, BuildOutcome, Lang};
pub use error::{Error, Result};
pub use observe::{Busy, Observer, Quiet};
pub use run::{compile, compile_rust, run_skeleton, Mpi, PhaseReport, RunOptions, RunReport};
