//! Skeleton folders end to end, and the suites that measure how well they predict.
//!
//! - [`build`]: a skeleton folder from a trace (read, fold polls, leave out local calls,
//!   logicalize, make the checked and scaled program, render C or Rust), written under a
//!   temporary name and renamed into place when complete;
//! - [`run`]: compile a skeleton folder (mpicc of OpenMPI or MPICH, SimGrid's smpicc, or cargo
//!   for a Rust skeleton) and run it with a timeout; its report read back;
//! - [`record`]: a run recorded with the PMPI tracer into a trace folder;
//! - [`harness`]: what the runs and the native suite set up on this machine (process groups,
//!   network namespaces with a bandwidth limit, CPU cgroups, temporary folders) and the
//!   guarantee that all of it goes away again, also on SIGINT, SIGTERM and SIGHUP;
//! - [`suite`]: the validation suites, [`smpi`] (NPB skeletons under SimGrid on foreign
//!   platforms, against SimGrid's replay of the full trace and NPB's own runs) and [`native`]
//!   (applications and their skeletons with real MPI under changed conditions), with
//!   each measuring [`retune`] (a skeleton's compute fitted to a new machine) as well, all of
//!   them set up alike by [`prepare`] (cases picked by name, skeletons built);
//! - [`tables`]: the results, their Markdown tables and SVG charts, and the targets they are
//!   held to;
//! - [`policy`]: the fidelity-checked build's one decision, which candidate skeleton is kept;
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
pub mod native;
pub mod observe;
pub mod options;
pub mod policy;
pub mod prepare;
pub mod record;
pub mod retune;
pub mod run;
pub mod smpi;
pub mod suite;
pub mod tables;

pub use build::{build, BuildOptions, BuildOutcome, Lang};
pub use error::{Error, Result};
pub use observe::{Busy, Observer, Quiet};
pub use run::{compile, compile_rust, run_skeleton, Mpi, PhaseReport, RunOptions, RunReport};
pub use suite::{validate, Suite, ValidateOptions};
