//! The validation suites: how well skeletons predict, measured.
//!
//! - [`suite`]: the suites, [`smpi`] (NPB skeletons under SimGrid on foreign platforms, against
//!   SimGrid's replay of the full trace and NPB's own runs) and [`native`] (applications and
//!   their skeletons with real MPI under changed conditions), with each measuring [`retune`] (a
//!   skeleton's compute fitted to a new machine) as well, all of them set up alike by
//!   [`prepare`] (cases picked by name, skeletons built with `mpiskel_make`);
//! - [`tables`]: the results, their Markdown tables and SVG charts, and the targets they are
//!   held to.
//!
//! The skeleton folders themselves (built, compiled, run, recorded) are `mpiskel_make`'s. One
//! error type, [`Error`], with the file, run or step it concerns.

pub mod error;
pub mod native;
pub mod prepare;
pub mod retune;
pub mod smpi;
pub mod suite;
pub mod tables;

pub use error::{Error, Result};
pub use suite::{validate, Suite, ValidateOptions};
