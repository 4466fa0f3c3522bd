//! The skeleton program (Xu & Subhlok 2008, §4): one SPMD program for every rank, built from
//! the logical trace and the loop nest of each process class, and what is proved of it before
//! it is cut or rendered.
//!
//! - the IR (this crate's root: classes, phases, statements, calls) and its lowering from the
//!   loop nests (`assemble.rs`, `lower.rs`, `calls.rs`, `layout.rs`, `regions.rs`, `cuts.rs`);
//! - [`symbols`]: a class's logical program as symbols for loop discovery; [`physical`]: one
//!   rank's physical calls as the same;
//! - [`matching`]: global and local sends and receives (Xu & Subhlok 2008, Fig. 3), size balancing;
//! - [`spread`]: how the recorded durations of a compute block spread over ranks and iterations;
//! - [`instantiate`] + [`deadlock::check`]: every rank's program executed under the strictest
//!   MPI semantics; a program that can block forever is returned with the blocked ranks named.
//!
//! The cut (`mpiskel-cut`) sets the IR's iteration counts; the back ends (`mpiskel-emit`) render
//! it; the simulator (`mpiskel-simulate`) runs it. This crate never reads trace files.
//!
//! # The program
//!
//! One SPMD program for every rank, built from the logical trace and the
//! loop nest of each process class. Both back ends render this IR; the deadlock check executes
//! it (see [`crate::instantiate`]); scaling sets its iteration counts (see [`mpiskel_cut::scale`]).
//!
//! Choices made while building it (Xu & Subhlok 2008, §4 leaves them open):
//! - **Ranks.** Rank `r` of the skeleton plays rank `r` of the application, so a skeleton keeps
//!   the application's placement on hosts. Neighbours come from `MPI_Cart_create`/
//!   `MPI_Cart_shift` when the application's ranks lie row-major in a Cartesian-like topology,
//!   and from explicit neighbour tables otherwise.
//! - **Tags.** A message travelling in direction D carries the tag of D, so every direction is
//!   its own channel, and within a channel MPI's non-overtaking order pairs the k-th send with
//!   the k-th receive. A receive from direction S expects the tag of the direction its partner
//!   sends in, opposite(S). Wildcard receives keep `MPI_ANY_SOURCE` with `MPI_ANY_TAG`.
//! - **Receive counts** are the largest size their channel carries, so that a pairing other
//!   than the application's (tags are per direction, not per message) cannot truncate.
//! - **Calls the skeleton does not make**: `MPI_Init`/`Finalize` (made by the runtime),
//!   communicator constructors (made once in the set-up). Their gaps stay as computation.
//!   Blocking probes become `MPI_Iprobe` (the receive that follows blocks anyway); a receive
//!   right after a probe of `MPI_ANY_SOURCE` receives from any source, as it did in effect. `Rsend`,
//!   `Bsend` become `MPI_Send`, `Irsend` becomes `MPI_Isend`. A test that completed nothing
//!   becomes a progress poll (`MPI_Iprobe`); one that completed requests becomes the matching
//!   wait. A wait that completed nothing had no request to wait for: both back ends make the
//!   same empty wait (`sk_wait_none`, `wait_none`: `MPI_Waitall` over none), which costs
//!   nothing, where a poll would cost SimGrid's simulated probe time. Non-blocking collectives
//!   run as their `MPI_I…` form with a request slot like any non-blocking call (the check
//!   completes their wait once every member has started them). Vector collectives run as their regular form
//!   with this rank's size per member.
//!
//! The parts: `ir.rs` (the types; `ir_calls.rs` the calls and what they name), `layout.rs`
//! (ranks, directions, the Cartesian layout),
//! `calls.rs` (logical operations as calls), `cuts.rs` (what the cuts leave in it: replayed
//! durations, steps cut short), `lower.rs` (loop nests as phases, the warm-up iteration found by
//! `warm_iteration.rs`), `regions.rs`
//! (the receive buffer's regions), `assemble.rs` (the whole program).

#![deny(missing_docs)]
pub mod deadlock;
pub mod instantiate;
mod matcher;
pub mod matching;
pub mod physical;
pub mod spread;
pub mod symbols;
pub mod visit;

mod assemble;
mod calls;
mod cuts;
mod ir;
mod ir_calls;
mod layout;
mod lower;
mod regions;
mod warm_iteration;

pub use assemble::{build, build_tagged, stretch_parts, stretch_range, BuildError, Tags};
pub use calls::{collective_recv_bytes, collective_send_bytes, comm_size, nonblocking_collective};
pub use cuts::{Replay, StepCut};
pub use deadlock::{check, stuck_sends, Blocked, CheckOp, Deadlock};
pub use ir::*;
pub use ir_calls::*;
pub use layout::{ident_of, neighbour};
pub use lower::{leaf_map, LeafMap, Positions};
pub use matching::{balance_class, calls_of_class, match_calls, Balanced, Matching, P2pCall};

pub use crate::spread::{
    distribution, rank_factors, Dist, CENSORED_BELOW, FACTOR_SPREAD, QUANTILES,
    QUANTILE_PROBABILITIES,
};
