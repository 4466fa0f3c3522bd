//! Skeleton construction (Xu & Subhlok 2008, §4): from a logical trace and the loop nest of each process
//! class to a program that cannot hang, scaled to a target time, rendered as C or Rust.
//!
//! - [`symbols`]: a class's logical program as symbols for loop discovery;
//! - [`timesteps`]: each class's loop nest, with an irregular time-step loop folded into steps;
//! - [`families`]: kinds of steps that repeat the same work a different number of times;
//! - [`program`]: the program IR (classes, phases, statements, calls), built from the logical
//!   trace and the nests;
//! - [`matching`]: global and local sends and receives (Xu & Subhlok 2008, Fig. 3), size balancing;
//! - [`scale`]: main-loop cut for a target time, and the prediction factors;
//! - [`cut_runs`]: the other loops' cuts checked in runs, as few deadlock checks as they allow;
//! - [`compute_cut`]: compute blocks cut where cutting iterations is not enough;
//! - [`removal`]: what every rank may skip of a compute block whose durations are drawn;
//! - [`sampling`]: how many iterations of a loop of few iterations stand for all of them;
//! - [`warmup`]: an untimed warm-up iteration before the main loop, which a skeleton may skip;
//! - [`replay`]: compute blocks that replay their recorded durations, the same iterations on
//!   every rank, where drawing would lose who computes longest when;
//! - [`instantiate`] + [`deadlock::check`]: every rank's program executed under the strictest
//!   MPI semantics; a program that can block forever is refused, with the blocked ranks named;
//! - [`pipeline`]: all of the above in order;
//! - [`fidelity`]: the fidelity panel's rows and the one policy that keeps a candidate by them;
//! - [`document`]: `skeleton.json`, the provenance of a skeleton folder, and its reader;
//! - [`c`]: the C back end (minijinja templates from `templates/`, runtime from `skeletons/`);
//! - [`rust`]: the Rust back end (rsmpi; `quote!` → `syn` → `prettyplease`), from the same IR;
//! - [`constants`]: the one table of the tuning constants the runtimes share with the emitter
//!   and the simulator, written into the runtimes as a folder is written.
//!
//! This crate never reads trace files.
#![deny(missing_docs)]

pub mod aligned;
pub mod c;
pub mod compute_cut;
pub mod constants;
pub mod correspond;
pub mod cut_runs;
pub mod deadlock;
pub mod document;
pub mod families;
pub mod fidelity;
pub mod instantiate;
pub mod matching;
pub mod physical;
pub mod pipeline;
pub mod program;
pub mod removal;
pub mod replay;
pub mod rust;
pub mod sampling;
pub mod scale;
pub mod spread;
pub mod step_cut;
pub mod stretches;
pub mod symbols;
pub mod tails;
pub mod timesteps;
pub mod traffic;
pub mod warmup;

pub use deadlock::{check, stuck_sends, Blocked, CheckOp, Deadlock};
pub use matching::{
    balance_class, calls_of_class, match_calls, Balanced, Call, Mark, Matching, P2pCall,
};
pub use program::{build, Skeleton};
pub use scale::{scale, Scaling};
