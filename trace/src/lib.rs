//! The trace crate: the event model every mpiskel stage shares, the trace formats, and the PMPI
//! tracer that records them.
//!
//! - [`model`]: [`RankTrace`] (one rank's [`Event`]s in program order, compute as the gap before
//!   each call), typed ids [`Rank`], [`CommId`], [`RequestId`], [`EventIdx`].
//! - [`native`]: the native binary format (`trace/FORMAT.md`), streamed by [`NativeWriter`] and
//!   [`NativeReader`]; the PMPI tracer (`trace/tracer/`, C) writes the same format.
//! - [`ti`]: SimGrid time-independent traces (Casanova et al. 2015), as SimGrid 3.32 writes them.
//! - [`ti_export`]: any trace written as a SimGrid time-independent trace, for SimGrid to replay.
//! - [`otf2`]: OTF2 traces (Score-P), read through libotf2.
//! - [`dumpi`]: SST DUMPI traces (a `.meta` file and one binary file per rank), as sst-dumpi
//!   writes them.
//! - [`TraceSet`]: opens any supported trace, detecting its format, reading ranks in parallel.
//! - [`collective_order`]: the collectives threads made on copies of the world, put in one
//!   order on every rank.
//! - [`stretch`]: the calls between two collectives of all ranks, cut short where they fold
//!   into no loop.
//! - [`summary`]: the figures `mpiskel inspect` reports.
//! - [`tracer`]: the tracer's C source, embedded so the CLI can build it for any installed MPI.
//!
//! ```no_run
//! use mpiskel_trace::{summary::summarize, ReadOptions, TraceSet};
//! let set = TraceSet::open("lu.trace".as_ref(), &ReadOptions::default())?;
//! let s = summarize(&set);
//! println!("{} ranks, {} MPI calls", s.ranks, s.events);
//! # Ok::<(), mpiskel_trace::TraceError>(())
//! ```
#![deny(missing_docs)]

pub mod atomic;
pub mod collective_order;
pub mod completions;
pub mod dumpi;
mod error;
pub mod local;
pub mod meta;
pub mod model;
pub mod native;
pub mod off_processor;
pub mod otf2;
pub mod polls;
pub mod progress;
pub mod replayable;
mod resolve;
pub mod rng;
mod set;
pub mod stretch;
pub mod summary;
pub mod synth;
pub mod ti;
pub mod ti_export;
pub mod tracer;
pub mod validate;

pub use error::{Result, TraceError};
pub use meta::{NodeLoad, RunMeta};
pub use model::{
    Cart, CommId, Completed, Counts, Event, EventIdx, Op, OpClass, Payload, Peer, Rank, RankInfo,
    RankTrace, RequestId, Unrecorded, Wildcards, Work,
};
pub use native::{NativeReader, NativeWriter};
pub use resolve::resolve_any_source;
pub use set::{ReadOptions, TraceFormat, TraceSet};
pub use ti::TiOptions;
