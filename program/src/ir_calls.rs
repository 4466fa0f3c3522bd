//! The calls of the IR and what they name: the layout, directions, communicators, peers,
//! request slots, element types, completions, and the compute blocks pinned to their mean.

use mpiskel_logicalize::LogicalComm;
use mpiskel_trace::Op;
use serde::{Deserialize, Serialize};

/// How ranks find their neighbours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Layout {
    /// `MPI_Cart_create` with these dimensions and periods (ranks row-major).
    Cartesian {
        /// Dimensions.
        dims: Vec<usize>,
        /// Periodicity (dimensions of two are periodic: "the other one" both ways).
        periods: Vec<bool>,
    },
    /// Explicit tables: `neighbours[rank][direction]`, `-1` for none.
    Table {
        /// Per rank, per direction.
        neighbours: Vec<Vec<i64>>,
    },
    /// No point-to-point communication between distinct ranks.
    None,
}

/// A direction of the skeleton.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dir {
    /// Name in the logical trace, e.g. `NORTHEAST`, `+x-y`, `XOR2`.
    pub name: String,
    /// C identifier, e.g. `NORTHEAST`, `PLUS_X_MINUS_Y`.
    pub ident: String,
    /// Coordinate offset (Cartesian-like) or rank offset.
    pub offset: Vec<i64>,
    /// Tag of messages travelling this way.
    pub tag: i32,
    /// Tag a receive from this direction expects (that of the opposite direction).
    pub recv_tag: i32,
}

/// A communicator of the skeleton.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Comm {
    /// `MPI_COMM_WORLD`.
    World,
    /// `MPI_COMM_SELF`.
    SelfComm,
    /// A row, column or plane of the topology: the ranks that differ only along `free`.
    Slice {
        /// Dimensions that vary within it.
        free: Vec<usize>,
    },
    /// Groups of `size` ranks spaced `stride` apart: rank r is in the group of colour
    /// `(r / (size·stride))·stride + r mod stride` (stride 1: consecutive blocks). Groups the
    /// trace saw unevenly spaced are approximated by consecutive blocks.
    Strided {
        /// Members per group.
        size: usize,
        /// Spacing of their ranks.
        stride: usize,
    },
    /// Groups of `size` ranks as the trace had them, where they are not blocks
    /// ([`mpiskel_logicalize::CommGroups`]): rank r is in the group of colour `colours[r]`.
    Groups {
        /// Members per group.
        size: usize,
        /// Spacing of the ranks of the logical communicator it stands for (which tells two such
        /// communicators of one size apart).
        stride: usize,
        /// Which split of that size and spacing ([`LogicalComm::Other::part`]).
        #[serde(default, skip_serializing_if = "is_first_part")]
        part: u32,
        /// Each rank's colour.
        colours: Vec<u32>,
    },
}

/// Whether a split number is the first (not written).
fn is_first_part(part: &u32) -> bool {
    *part == 0
}

impl Comm {
    /// The skeleton's communicator for a logical one of `lt`.
    pub fn of(c: &LogicalComm, lt: &mpiskel_logicalize::LogicalTrace) -> Comm {
        match c {
            LogicalComm::World => Comm::World,
            LogicalComm::SelfComm => Comm::SelfComm,
            LogicalComm::Slice { free } => Comm::Slice { free: free.clone() },
            LogicalComm::Other { size, stride, part } => {
                let table = lt
                    .comm_groups
                    .iter()
                    .find(|g| g.size == *size && g.stride == *stride && g.part == *part);
                match table {
                    Some(g) => Comm::Groups {
                        size: *size,
                        stride: *stride,
                        part: *part,
                        colours: g.colours.clone(),
                    },
                    None => Comm::Strided { size: (*size).max(1), stride: (*stride).max(1) },
                }
            }
        }
    }
}

/// The other side of a point-to-point call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Peer {
    /// A direction (index into [`Skeleton::directions`]).
    Dir(usize),
    /// `MPI_PROC_NULL`.
    Null,
    /// `MPI_ANY_SOURCE`.
    Any,
    /// A fixed world rank (an exception of the logical trace).
    Rank(u32),
    /// Direction `dir` for the ranks marked in presence table `table` (index into
    /// [`Skeleton::presence_tables`]), `MPI_PROC_NULL` for the others: a call that only some
    /// ranks of a class make (a multigrid's coarse-level exchange; see
    /// `mpiskel_logicalize`'s guarded folding).
    Only {
        /// Direction (index into [`Skeleton::directions`]).
        dir: usize,
        /// Presence table.
        table: usize,
    },
}

/// Where a non-blocking call keeps its request: slot `base`, or for a call started `ring` times
/// by an inner loop before anything completes it, slot `base + i` in that loop's iteration `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotRef {
    /// First slot.
    pub base: u32,
    /// Slots in the ring (1: a single slot).
    pub ring: u32,
    /// Depth of the loop whose variable indexes the ring.
    pub depth: usize,
}

/// The elements a reduction runs on. The trace gives a reduction's size in bytes only, while
/// MPI libraries choose a reduction's algorithm by its elements as well as its bytes: with Open
/// MPI on four ranks, 4, 7 or 8 bytes summed as `MPI_UNSIGNED_CHAR` took about twice as long
/// as one to six `MPI_UNSIGNED` or `MPI_DOUBLE`, the types an application reduces. So a size
/// is run in the widest elements that divide it: eight-byte doubles, four-byte unsigned words
/// (which wrap, rather than overflow, when summed), or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    /// `MPI_DOUBLE`.
    Double,
    /// `MPI_UNSIGNED`.
    Word,
    /// `MPI_UNSIGNED_CHAR`.
    Byte,
}

impl Element {
    /// The element type and count a reduction of `bytes` bytes runs with.
    pub fn of(bytes: u64) -> (Element, u64) {
        if bytes % 8 == 0 {
            (Element::Double, bytes / 8)
        } else if bytes % 4 == 0 {
            (Element::Word, bytes / 4)
        } else {
            (Element::Byte, bytes)
        }
    }

    /// The MPI datatype's name in C.
    pub fn mpi_name(self) -> &'static str {
        match self {
            Element::Double => "MPI_DOUBLE",
            Element::Word => "MPI_UNSIGNED",
            Element::Byte => "MPI_UNSIGNED_CHAR",
        }
    }
}

/// How a completion call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Completion {
    /// Every request (`MPI_Wait` / `MPI_Waitall`).
    All,
    /// One of them (`MPI_Waitany`).
    Any,
    /// Those ready, at least one (`MPI_Waitsome`).
    Some,
    /// Nothing completed in the trace: a progress poll.
    Poll,
}

impl Completion {
    /// Which of `open`, the slots of a completion call whose requests are still pending, it
    /// completes: every one, the first (`MPI_Waitany`/`Waitsome`: a possible execution, the
    /// real call returns no later), or none (a poll).
    pub fn completes(self, open: Vec<u32>) -> Vec<u32> {
        match self {
            Completion::All => open,
            Completion::Any | Completion::Some => open.into_iter().take(1).collect(),
            Completion::Poll => Vec::new(),
        }
    }
}

/// One MPI call of the skeleton.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "call")]
pub enum Call {
    /// Blocking or non-blocking send.
    Send {
        /// `MPI_Send`, `MPI_Ssend`, `MPI_Isend` or `MPI_Issend`; `Bsend` for a send made
        /// buffered (`MPI_Bsend`, or `MPI_Ibsend` where it has a request slot).
        op: Op,
        /// Destination.
        to: Peer,
        /// Tag.
        tag: i32,
        /// Bytes.
        bytes: u64,
        /// Request slot of a non-blocking send.
        slot: Option<SlotRef>,
        /// Where the ranks of the class send different sizes here: the table of each rank's
        /// bytes (index into [`Skeleton::size_tables`]), which replaces `bytes`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sizes: Option<usize>,
    },
    /// Blocking or non-blocking receive.
    Recv {
        /// `MPI_Recv` or `MPI_Irecv`.
        op: Op,
        /// Source.
        from: Peer,
        /// Tag (`-1`: `MPI_ANY_TAG`).
        tag: i32,
        /// Bytes recorded.
        bytes: u64,
        /// Count posted (the largest size the channel carries).
        count: u64,
        /// Offset in the receive buffer.
        offset: u64,
        /// Request slot of a non-blocking receive.
        slot: Option<SlotRef>,
    },
    /// `MPI_Sendrecv`.
    SendRecv {
        /// Destination.
        to: Peer,
        /// Send tag.
        tag: i32,
        /// Bytes sent.
        bytes: u64,
        /// Source.
        from: Peer,
        /// Receive tag.
        recv_tag: i32,
        /// Count posted for the receive.
        count: u64,
        /// Per-rank sizes sent, as for [`Call::Send`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sizes: Option<usize>,
    },
    /// `MPI_Iprobe`.
    Probe {
        /// Source.
        from: Peer,
        /// Tag.
        tag: i32,
    },
    /// A wait (or a test that completed requests).
    Complete {
        /// How.
        how: Completion,
        /// Request slots.
        slots: Vec<u32>,
        /// The call of the trace, e.g. `Testall`.
        traced: Op,
    },
    /// A collective.
    Collective {
        /// The blocking operation run.
        op: Op,
        /// The traced operation (`Gatherv`, `Iallreduce`, …).
        traced: Op,
        /// Communicator (index into [`Skeleton::comms`]).
        comm: usize,
        /// Root, as a rank of `comm`.
        root: Option<u32>,
        /// Bytes per member (or of the whole buffer for broadcasts and reductions).
        bytes: u64,
        /// Request slot of a non-blocking collective (run as its `MPI_I…` form).
        #[serde(default)]
        slot: Option<SlotRef>,
    },
}

/// Why a drawn block runs its mean ([`mpiskel_cut::tails`]): half of its mean lies in the top `tail`
/// of its recorded durations, and one run of the skeleton executes it `executions` times on the
/// ranks of its class, too few to reach that top once on average.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pinned {
    /// The share of the recorded durations, the longest, that holds half of the mean.
    pub tail: f64,
    /// Executions in one run of the skeleton, on every rank of the class.
    pub executions: f64,
}

impl Pinned {
    /// The emitted code's comment on the block.
    pub fn note(&self) -> String {
        format!(
            "its mean: half of it lies in the longest {:.1} % of the recorded durations, which \
             its {:.0} executions per run would reach {:.2} times on average",
            100.0 * self.tail,
            self.executions,
            self.tail * self.executions
        )
    }
}

/// The largest number of bytes `c` sends on any rank, given the size tables (0 for calls that
/// send nothing point-to-point).
pub fn largest_send(c: &Call, tables: &[Vec<u64>]) -> u64 {
    match c {
        Call::Send { bytes, sizes, .. } | Call::SendRecv { bytes, sizes, .. } => sizes
            .and_then(|t| tables.get(t))
            .and_then(|t| t.iter().max().copied())
            .unwrap_or(*bytes),
        _ => 0,
    }
}
