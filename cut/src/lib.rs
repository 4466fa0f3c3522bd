//! The cut (Xu & Subhlok 2008, §4.3): a skeleton program scaled to a target time, by the
//! mechanisms below as candidate generators, one policy keeping a candidate by its fidelity.
//!
//! - [`pipeline`]: the mechanisms in order, and the candidates the build weighs;
//! - [`fidelity`]: the fidelity panel's rows and the one policy that keeps a candidate by them;
//! - [`timesteps`]: each class's loop nest, with an irregular time-step loop folded into steps;
//! - [`families`]: kinds of steps that repeat the same work a different number of times;
//! - [`scale`]: main-loop cut for a target time, and the prediction factors;
//! - [`aligned`]: the loops of different classes that stand for the same loop of the application;
//! - [`cut_runs`]: the other loops' cuts checked in runs, as few deadlock checks as they allow;
//! - [`step_cut`] and [`stretches`]: a time-step loop cut short, by steps and by stretches;
//! - [`compute_cut`]: compute blocks cut where cutting iterations is not enough;
//! - [`correspond`]: compute blocks at corresponding places of the classes' programs;
//! - [`removal`]: what every rank may skip of a compute block whose durations are drawn;
//! - [`sampling`]: how many iterations of a loop of few iterations stand for all of them;
//! - [`warmup`]: an untimed warm-up iteration before the main loop, which a skeleton may skip;
//! - [`replay`]: compute blocks that replay their recorded durations, the same iterations on
//!   every rank, where drawing would lose who computes longest when;
//! - [`tails`]: drawn compute blocks whose mean lies in a tail their few draws would rarely reach;
//! - [`traffic`]: the communication a skeleton runs, against the application's.
//!
//! Every cut is checked by `mpiskel_program::check` before it is kept. This crate never reads
//! trace files and renders nothing.
#![deny(missing_docs)]

pub mod aligned;
mod buffered;
pub mod compute_cut;
pub mod correspond;
pub mod cut_runs;
pub mod families;
pub mod fidelity;
mod loop_cut;
mod over_target;
pub mod pipeline;
pub mod recorded;
pub mod removal;
pub mod replay;
pub mod sampling;
pub mod scale;
pub mod step_cut;
pub mod step_sampling;
pub mod stretches;
pub mod tails;
pub mod timesteps;
pub mod traffic;
pub mod warmup;
mod world_places;

pub use scale::{scale, Scaling};
