//! Logicalization (Xu & Subhlok 2008, §2): communication matrix → topology → logical trace.
//!
//! - [`CommMatrix`]: messages and bytes per ordered pair of ranks, collectives and
//!   self-messages apart; [`CommMatrix::significant_graph`] keeps the edges that matter.
//! - [`catalogue`]: every structured topology for a number of ranks, from its prime
//!   factorisation.
//! - [`identify`]: the decision tree (simple tests → spectrum → isomorphism), with each stage's
//!   survivors and time, giving the rank → coordinate map; [`strides`]: a grid with a few
//!   longer offsets where nothing in the catalogue matches (a multigrid).
//! - [`logicalize`]: the logical trace — peers as directions of the topology, ranks grouped
//!   into process classes, edge classes folded into the interior one.
//!
//! ```no_run
//! use mpiskel_logicalize::logicalize;
//! use mpiskel_trace::{ReadOptions, TraceSet};
//! let set = TraceSet::open("lu.trace".as_ref(), &ReadOptions::default()).unwrap();
//! let logical = logicalize(&set);
//! println!("{}", logical.topology_name());
//! ```
#![deny(missing_docs)]

pub mod catalogue;
pub mod common;
pub mod graph;
pub mod identify;
pub mod iso;
mod logical;
pub mod matrix;
pub mod spectrum;
pub mod strides;

pub use catalogue::{Kind, Topology};
pub use graph::Graph;
pub use identify::{identify, Identification, Stage, Structure};
pub use logical::{
    logicalize, logicalize_owned, strided_colour, CommGroups, Direction, Exceptions, GapSamples,
    GapStats, LogicalComm, LogicalOp, LogicalPeer, LogicalTrace, OpKey, OptionalMean, ProcessClass,
    SINGLE_MESSAGE_TAG,
};
pub use matrix::{CommMatrix, Traffic};
