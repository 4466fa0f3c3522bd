//! What-if without a cluster: a trace's program simulated on a modelled platform.
//!
//! `mpiskel simulate` answers "how long would this run take on that cluster?" before anyone has
//! the cluster: every rank's recorded calls run against a [`platform::Platform`] (hosts, links,
//! routes, read from a SimGrid platform file or a small TOML file) under a flow-level
//! [`model::Model`] whose defaults are SimGrid's SMPI model, so the same question asked of
//! SimGrid and of mpiskel gets comparable answers, in a fraction of the time.
//!
//! - [`platform`]: platforms (SimGrid `<cluster>`, mpiskel TOML) and rank placement (hostfiles).
//! - [`model`]: how long a message and a computation take (latency and bandwidth factors by
//!   size, eager threshold, envelope, acknowledgement traffic; LogGOPS's parameters).
//! - [`fluid`]: max-min fair sharing of links and processors among concurrent activities.
//! - [`collectives`]: collectives as the messages of their algorithms.
//! - [`engine`]: the discrete-event simulation itself.
//! - [`calibrate`]: a one-host platform fitted to ping-pong times measured here.
//! - [`fastforward`]: the main loop skipped once its pace is known.
//! - [`fidelity`]: the fidelity panel, a trace and its skeleton simulated side by side on a
//!   reference platform and its what-ifs.
//!
//! ```no_run
//! use mpiskel_simulate::{engine, platform};
//! use mpiskel_trace::{ReadOptions, TraceSet};
//! let set = TraceSet::open("lu.S.4/trace.txt".as_ref(), &ReadOptions::default())?;
//! let pf = platform::Platform::open("cluster.xml".as_ref())?;
//! let place = platform::placement(&pf, None, set.n_ranks())?;
//! let sim = engine::simulate(&set.ranks, &pf, &place, &engine::Options::default())?;
//! println!("{:.4} s", sim.predicted_s);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod calibrate;
pub mod collectives;
pub mod engine;
mod error;
pub mod fastforward;
pub mod fidelity;
pub mod fluid;
mod heap;
mod lowered;
pub mod model;
pub mod platform;
mod rank_lowering;
pub mod skeleton;

pub use error::{Result, SimulateError};
