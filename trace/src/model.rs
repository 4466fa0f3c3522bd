//! The event model every mpiskel stage shares.
//!
//! A trace is one [`RankTrace`] per MPI process. Each holds the sequence of MPI calls the process
//! made, as [`Event`]s, in program order. Computation is not an event: the time a process spends
//! between two calls is the *gap* carried by the second call ([`Event::gap_ns`]), so a stream of
//! events is also a stream of compute blocks.
//!
//! Ranks are always ranks of `MPI_COMM_WORLD`: the tracer translates every peer and root through
//! the communicator the call used. Communicators are named by [`CommId`]s that are local to a
//! rank; [`RankTrace::comms`] gives each one's members as world ranks.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use serde::{Deserialize, Serialize};

/// A rank of `MPI_COMM_WORLD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Rank(pub u32);

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The position of an event in its rank's stream (0 is the first call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventIdx(pub u64);

/// A communicator, numbered by the rank that traced it (0 is `MPI_COMM_WORLD`, 1 is
/// `MPI_COMM_SELF`; others in order of creation). The same number on two ranks need not be the
/// same communicator: compare their member lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommId(pub u32);

impl CommId {
    /// `MPI_COMM_WORLD`.
    pub const WORLD: CommId = CommId(0);
    /// `MPI_COMM_SELF`.
    pub const SELF: CommId = CommId(1);
}

/// A non-blocking request, numbered by the rank that started it. It links the call that started
/// it (Isend, Irecv, Ibcast, …) with the Wait or Test that completed it. Numbers start at 1 (the
/// native format stores "no request" as 0) and are never reused within a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub u32);

/// The other side of a point-to-point call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Peer {
    /// A world rank. For receives posted with `MPI_ANY_SOURCE` this is the actual source, once
    /// the completion that revealed it has been read.
    Rank(Rank),
    /// `MPI_ANY_SOURCE` whose actual source is unknown (the request never completed).
    Any,
    /// `MPI_PROC_NULL`: the call did nothing.
    Null,
}

impl Peer {
    /// The world rank, if there is one.
    pub fn rank(self) -> Option<Rank> {
        match self {
            Peer::Rank(r) => Some(r),
            Peer::Any | Peer::Null => None,
        }
    }
}

impl fmt::Display for CommId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Rank(r) => write!(f, "{r}"),
            Peer::Any => f.write_str("ANY"),
            Peer::Null => f.write_str("NULL"),
        }
    }
}

macro_rules! ops {
    ($( $variant:ident = $code:literal, $name:literal, $class:ident; )*) => {
        /// Every MPI operation mpiskel records.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Op { $( #[doc = concat!("`MPI_", $name, "`")] $variant ),* }

        impl Op {
            /// Every operation, in code order.
            pub const ALL: &'static [Op] = &[$( Op::$variant ),*];

            /// The operation's code in the native trace format (`trace/FORMAT.md`).
            pub fn code(self) -> u8 {
                match self { $( Op::$variant => $code ),* }
            }

            /// The operation with native code `code`.
            pub fn from_code(code: u8) -> Option<Op> {
                match code { $( $code => Some(Op::$variant), )* _ => None }
            }

            /// The MPI name without its `MPI_` prefix, e.g. `Isend`.
            pub fn name(self) -> &'static str {
                match self { $( Op::$variant => $name ),* }
            }

            /// What kind of call this is.
            pub fn class(self) -> OpClass {
                match self { $( Op::$variant => OpClass::$class ),* }
            }
        }
    };
}

ops! {
    Init = 1, "Init", Lifecycle;
    InitThread = 2, "Init_thread", Lifecycle;
    Finalize = 3, "Finalize", Lifecycle;
    Send = 10, "Send", Send;
    Ssend = 11, "Ssend", Send;
    Rsend = 12, "Rsend", Send;
    Bsend = 13, "Bsend", Send;
    Isend = 14, "Isend", Send;
    Issend = 15, "Issend", Send;
    Irsend = 16, "Irsend", Send;
    Recv = 20, "Recv", Recv;
    Irecv = 21, "Irecv", Recv;
    Sendrecv = 22, "Sendrecv", SendRecv;
    SendrecvReplace = 23, "Sendrecv_replace", SendRecv;
    Probe = 24, "Probe", Probe;
    Iprobe = 25, "Iprobe", Probe;
    Wait = 30, "Wait", Completion;
    Waitall = 31, "Waitall", Completion;
    Waitany = 32, "Waitany", Completion;
    Waitsome = 33, "Waitsome", Completion;
    Test = 34, "Test", Completion;
    Testall = 35, "Testall", Completion;
    Testany = 36, "Testany", Completion;
    Testsome = 37, "Testsome", Completion;
    Barrier = 40, "Barrier", Collective;
    Bcast = 41, "Bcast", Collective;
    Reduce = 42, "Reduce", Collective;
    Allreduce = 43, "Allreduce", Collective;
    Scan = 44, "Scan", Collective;
    Exscan = 45, "Exscan", Collective;
    Gather = 46, "Gather", Collective;
    Gatherv = 47, "Gatherv", Collective;
    Scatter = 48, "Scatter", Collective;
    Scatterv = 49, "Scatterv", Collective;
    Allgather = 50, "Allgather", Collective;
    Allgatherv = 51, "Allgatherv", Collective;
    Alltoall = 52, "Alltoall", Collective;
    Alltoallv = 53, "Alltoallv", Collective;
    Alltoallw = 54, "Alltoallw", Collective;
    ReduceScatter = 55, "Reduce_scatter", Collective;
    ReduceScatterBlock = 56, "Reduce_scatter_block", Collective;
    Ibarrier = 60, "Ibarrier", Collective;
    Ibcast = 61, "Ibcast", Collective;
    Ireduce = 62, "Ireduce", Collective;
    Iallreduce = 63, "Iallreduce", Collective;
    Iscan = 64, "Iscan", Collective;
    Iexscan = 65, "Iexscan", Collective;
    Igather = 66, "Igather", Collective;
    Igatherv = 67, "Igatherv", Collective;
    Iscatter = 68, "Iscatter", Collective;
    Iscatterv = 69, "Iscatterv", Collective;
    Iallgather = 70, "Iallgather", Collective;
    Iallgatherv = 71, "Iallgatherv", Collective;
    Ialltoall = 72, "Ialltoall", Collective;
    Ialltoallv = 73, "Ialltoallv", Collective;
    Ialltoallw = 74, "Ialltoallw", Collective;
    IreduceScatter = 75, "Ireduce_scatter", Collective;
    IreduceScatterBlock = 76, "Ireduce_scatter_block", Collective;
    CommSplit = 80, "Comm_split", Comm;
    CommDup = 81, "Comm_dup", Comm;
    CommCreate = 82, "Comm_create", Comm;
    CartCreate = 83, "Cart_create", Comm;
    CartSub = 84, "Cart_sub", Comm;
    CommFree = 85, "Comm_free", Comm;
}

impl Op {
    /// A blocking completion (`MPI_Wait`, `Waitall`, `Waitany`, `Waitsome`): one that completed
    /// nothing had no request to wait for.
    pub fn is_wait(self) -> bool {
        matches!(self, Op::Wait | Op::Waitall | Op::Waitany | Op::Waitsome)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The broad kind of an [`Op`], which fixes the shape of its [`Payload`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    /// Init, Init_thread, Finalize: [`Payload::None`].
    Lifecycle,
    /// Send and its variants, blocking or not: [`Payload::P2p`].
    Send,
    /// Recv and Irecv: [`Payload::P2p`].
    Recv,
    /// Sendrecv and Sendrecv_replace: [`Payload::SendRecv`].
    SendRecv,
    /// Probe and Iprobe: [`Payload::P2p`] (bytes of the probed message, 0 when nothing matched).
    Probe,
    /// Wait*, Test*: [`Payload::Completion`].
    Completion,
    /// Blocking and non-blocking collectives: [`Payload::Collective`].
    Collective,
    /// Communicator management: [`Payload::Comm`].
    Comm,
}

/// One MPI call of one rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Which call.
    pub op: Op,
    /// Entry time, in nanoseconds since the rank's trace started.
    pub enter_ns: u64,
    /// Exit time, in nanoseconds since the rank's trace started (≥ `enter_ns`).
    pub exit_ns: u64,
    /// Time spent outside MPI since the previous call returned (or since the trace started, for
    /// the first call), in nanoseconds: the compute block before this call.
    pub gap_ns: u64,
    /// The work of that compute block, where the trace recorded it.
    pub gap_work: Option<Work>,
    /// Processor time of the rank's thread during that compute block, nanoseconds, where the
    /// trace recorded it: below `gap_ns` when the rank was descheduled (more ranks than cores).
    #[serde(default)]
    pub gap_cpu_ns: Option<u64>,
    /// Polls that found nothing, made at the end of that compute block and folded away
    /// ([`crate::polls`]): the skeleton makes as many before this call, so the rank spends on
    /// them what the program did (a loop that polls once per item of its own work runs at the
    /// pace of its polls, not of its messages).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub gap_polls: u32,
    /// What the call did.
    pub payload: Payload,
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

impl Event {
    /// Time spent inside the call.
    pub fn duration_ns(&self) -> u64 {
        self.exit_ns.saturating_sub(self.enter_ns)
    }
}

/// The amount of work of a compute block, in the unit its trace records.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// User-space instructions retired, counted by the native tracer with `perf_event_open`.
    Instructions(u64),
    /// Floating-point operations, as SimGrid time-independent traces record them.
    Flops(f64),
}

impl Work {
    /// The work of two blocks together, where both counted it in the same unit.
    pub fn sum(a: Option<Work>, b: Option<Work>) -> Option<Work> {
        match (a, b) {
            (Some(Work::Instructions(a)), Some(Work::Instructions(b))) => {
                Some(Work::Instructions(a + b))
            }
            (Some(Work::Flops(a)), Some(Work::Flops(b))) => Some(Work::Flops(a + b)),
            _ => None,
        }
    }
}

/// The arguments of a call that matter for performance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// Nothing beyond the call itself.
    None,
    /// A send, receive or probe.
    P2p {
        /// Destination of a send, source of a receive or probe.
        peer: Peer,
        /// The tag (`-1` for `MPI_ANY_TAG`; the actual tag once a completion revealed it).
        tag: i32,
        /// Message size in bytes (for receives: the size actually received where known,
        /// otherwise the size posted).
        bytes: u64,
        /// The communicator.
        comm: CommId,
        /// The request of a non-blocking call.
        request: Option<RequestId>,
        /// Which arguments of a receive or probe were wildcards (`peer` and `tag` are then the
        /// actual ones, once known).
        #[serde(default, skip_serializing_if = "Wildcards::is_none")]
        wildcards: Wildcards,
    },
    /// Sendrecv or Sendrecv_replace.
    SendRecv {
        /// Destination of the send half.
        dest: Peer,
        /// Tag of the send half.
        send_tag: i32,
        /// Bytes sent.
        send_bytes: u64,
        /// Source of the receive half.
        source: Peer,
        /// Tag of the receive half.
        recv_tag: i32,
        /// Bytes received.
        recv_bytes: u64,
        /// The communicator.
        comm: CommId,
    },
    /// Wait*, Test*: the requests this call completed (empty for a Test that found nothing).
    Completion {
        /// How many requests the call was given.
        n_given: u32,
        /// The requests it completed, in the order MPI reported them.
        completed: Vec<Completed>,
    },
    /// A collective.
    Collective {
        /// The communicator.
        comm: CommId,
        /// The root as a world rank, for rooted collectives.
        root: Option<Rank>,
        /// Bytes this rank contributes (its send buffer; for `v`/`w` variants, the sum).
        send_bytes: u64,
        /// Bytes this rank receives (for `v`/`w` variants, the sum).
        recv_bytes: u64,
        /// Per-rank send sizes in bytes for `v`/`w` variants, in communicator rank order (a
        /// [`Counts`]: one pointer while absent, as for nearly every call).
        send_counts: Option<Counts>,
        /// Per-rank receive sizes in bytes for `v`/`w` variants, in communicator rank order.
        recv_counts: Option<Counts>,
        /// The request of a non-blocking collective.
        request: Option<RequestId>,
    },
    /// Communicator creation or release.
    Comm {
        /// The communicator the call was made on (the one freed, for Comm_free).
        parent: CommId,
        /// The communicator created; `None` where this rank got `MPI_COMM_NULL`, and for
        /// Comm_free.
        created: Option<CommId>,
        /// The colour given to Comm_split (`-1` for `MPI_UNDEFINED`).
        color: Option<i32>,
        /// The key given to Comm_split.
        key: Option<i32>,
        /// For Cart_create and Cart_sub: the Cartesian topology of the communicator created
        /// (boxed: few calls have one, and every event is as large as the largest payload).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cart: Option<Box<Cart>>,
    },
}

/// Per-rank sizes of a `v`/`w` collective: a vector whose length lives with its elements, so that
/// an absent one (nearly every call) costs one pointer in every [`Event`] instead of three
/// words. Dereferences to `[u64]`; made from a `Vec<u64>` with `.into()`.
pub type Counts = thin_vec::ThinVec<u64>;

/// A Cartesian topology as MPI_Cart_get reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cart {
    /// Size of each dimension.
    pub dims: Vec<u32>,
    /// Whether each dimension wraps around.
    pub periods: Vec<bool>,
}

/// Wildcards a receive or probe was posted with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Wildcards {
    /// Posted with `MPI_ANY_SOURCE`.
    pub source: bool,
    /// Posted with `MPI_ANY_TAG`.
    pub tag: bool,
}

impl Wildcards {
    /// Neither wildcard.
    pub fn is_none(&self) -> bool {
        !self.source && !self.tag
    }
}

/// One request completed by a Wait or Test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completed {
    /// The request, as numbered by the call that started it (`None` where the tracer did not see
    /// that call, e.g. a persistent request).
    pub request: Option<RequestId>,
    /// For receives: the actual source as a world rank.
    pub source: Option<Rank>,
    /// For receives: the actual tag.
    pub tag: Option<i32>,
    /// For receives: the bytes actually received.
    pub bytes: Option<u64>,
}

/// Everything recorded for one rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankTrace {
    /// Which rank this is.
    pub rank: Rank,
    /// Where it ran and how it was recorded.
    pub info: RankInfo,
    /// The calls, in program order.
    pub events: Vec<Event>,
    /// Compute time after the last recorded call (non-zero only for traces that end without
    /// Finalize, or formats that record compute after it).
    pub trailing_gap_ns: u64,
    /// Every communicator this rank used: id → member world ranks in communicator rank order.
    /// Shared where ranks have the same members: every rank's `MPI_COMM_WORLD` is one list
    /// ([`world_members`]), so that n ranks hold n members, not n².
    pub comms: BTreeMap<CommId, Arc<[Rank]>>,
    /// How many records of each kind the source file held, under the source format's names
    /// (for SimGrid traces this includes `compute`, which is not an event here).
    pub record_counts: BTreeMap<String, u64>,
    /// Calls the tracer counted but did not record as events, by name without the `MPI_`
    /// prefix (one-sided communication: `Put`, `Get`, `Win_lock`, …). Their time is in the
    /// compute gaps of the calls after them.
    pub unrecorded: BTreeMap<String, Unrecorded>,
}

/// Calls of one kind that a rank made and its trace counts without recording them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Unrecorded {
    /// How many.
    pub calls: u64,
    /// Bytes their origin moved (sent by a put or accumulate, received by a get; both for the
    /// calls that fetch and update).
    pub bytes: u64,
    /// Nanoseconds spent inside them.
    pub ns: u64,
}

/// Facts about one rank's run, from the trace header.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RankInfo {
    /// Size of `MPI_COMM_WORLD`.
    pub n_ranks: u32,
    /// Host name the rank ran on, if recorded.
    pub host: Option<String>,
    /// Process id, if recorded.
    pub pid: Option<u32>,
    /// The MPI library's version string, if recorded.
    pub mpi_library: Option<String>,
    /// Wall-clock time when the trace started, nanoseconds since the Unix epoch, if recorded.
    pub start_unix_ns: Option<u64>,
    /// The clock the timestamps come from (e.g. `CLOCK_MONOTONIC`, or `simulated` for traces
    /// whose times were derived from work volumes).
    pub clock: String,
    /// Whether compute blocks carry instruction counts.
    pub has_instructions: bool,
    /// Whether compute blocks carry their processor time.
    #[serde(default)]
    pub has_cpu_time: bool,
}

/// The members of an `MPI_COMM_WORLD` of `n` ranks (0..n), shared by every rank trace alive
/// with the same `n` (the list is made again once none holds it).
pub fn world_members(n: u32) -> Arc<[Rank]> {
    static LISTS: Mutex<BTreeMap<u32, Weak<[Rank]>>> = Mutex::new(BTreeMap::new());
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(w) = lists.get(&n).and_then(Weak::upgrade) {
        return w;
    }
    lists.retain(|_, w| w.strong_count() > 0);
    let w: Arc<[Rank]> = (0..n).map(Rank).collect();
    lists.insert(n, Arc::downgrade(&w));
    w
}

impl RankTrace {
    /// This rank's share of the application's time, seconds: its span from the end of its
    /// first call (`MPI_Init`) to the start of `MPI_Finalize` (or the end of its last call); 0
    /// without calls.
    pub fn app_time_s(&self) -> f64 {
        let (Some(a), Some(b)) = (self.events.first(), self.events.last()) else { return 0.0 };
        let end = if b.op == Op::Finalize { b.enter_ns } else { b.exit_ns };
        end.saturating_sub(a.exit_ns) as f64 * 1e-9
    }

    /// Members of a communicator as world ranks, if the trace defines it.
    pub fn members(&self, comm: CommId) -> Option<&[Rank]> {
        self.comms.get(&comm).map(|m| &m[..])
    }

    /// Total time between calls, trailing gap included.
    pub fn compute_ns(&self) -> u64 {
        self.events.iter().map(|e| e.gap_ns).sum::<u64>() + self.trailing_gap_ns
    }

    /// Total time inside MPI calls.
    pub fn mpi_ns(&self) -> u64 {
        self.events.iter().map(Event::duration_ns).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_members_are_shared_by_the_ranks_of_a_run() {
        let (a, b) = (world_members(5), world_members(5));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&a[..], &(0..5).map(Rank).collect::<Vec<_>>()[..]);
        let c = world_members(3);
        assert_eq!(c.len(), 3);
        assert_eq!(world_members(0).len(), 0);
    }
}
