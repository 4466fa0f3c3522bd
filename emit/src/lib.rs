//! The back ends (Xu & Subhlok 2008, §4): a skeleton program, built by `mpiskel-program` and cut
//! by `mpiskel-cut`, rendered as a C or a Rust program, with the document of its folder.
//!
//! - [`c`]: the C back end (minijinja templates from `templates/`, runtime from `skeletons/`);
//! - [`rust`]: the Rust back end (rsmpi; `quote!` → `syn` → `prettyplease`), from the same IR;
//! - [`document`]: `skeleton.json`, the provenance of a skeleton folder, and its reader;
//! - [`timers`]: the runtime's timers of each class by name, where the classes' phases differ;
//! - [`constants`]: the one table of the tuning constants the runtimes share with the emitter
//!   and the simulator, written into the runtimes as a folder is written.
//!
//! This crate never reads trace files.
#![deny(missing_docs)]

pub mod c;
pub mod constants;
pub mod document;
pub mod rust;
pub mod timers;
