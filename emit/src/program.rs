//! The skeleton program: one SPMD program for every rank, built from the logical trace and the
//! loop nest of each process class. Both back ends render this IR; the deadlock check executes
//! it (see [`crate::instantiate`]); scaling sets its iteration counts (see [`crate::scale`]).
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
//!   wait. Non-blocking collectives run as their `MPI_I…` form with a request slot like any
//!   non-blocking call (the check takes them as blocking where they start: stricter). Vector
//!   collectives run as their regular form with this rank's size per member.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mpiskel_compress::{LoopNest, Node, When};
use mpiskel_logicalize::{
    Direction, Kind, LogicalComm, LogicalPeer, LogicalTrace, ProcessClass, Structure, Topology,
};
use mpiskel_trace::{Op, OpClass};
use serde::{Deserialize, Serialize};

pub use crate::spread::{
    distribution, rank_factors, Dist, CENSORED_BELOW, FACTOR_SPREAD, QUANTILES,
    QUANTILE_PROBABILITIES,
};

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
}

impl Comm {
    /// The skeleton's communicator for a logical one.
    pub fn of(c: &LogicalComm) -> Comm {
        match c {
            LogicalComm::World => Comm::World,
            LogicalComm::SelfComm => Comm::SelfComm,
            LogicalComm::Slice { free } => Comm::Slice { free: free.clone() },
            LogicalComm::Other { size, stride } => {
                Comm::Strided { size: (*size).max(1), stride: (*stride).max(1) }
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

/// One MPI call of the skeleton.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "call")]
pub enum Call {
    /// Blocking or non-blocking send.
    Send {
        /// `MPI_Send`, `MPI_Ssend`, `MPI_Isend` or `MPI_Issend`.
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

/// A statement of a class program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "stmt")]
pub enum Stmt {
    /// Busy computation for this many seconds (of the machine the trace was recorded on).
    Compute {
        /// Seconds (the mean).
        seconds: f64,
        /// Where the recorded gaps spread: the distribution (index into
        /// [`Skeleton::distributions`]) each execution draws its duration from.
        dist: Option<usize>,
        /// Seconds taken out of every rank's duration to shorten the skeleton (a long set-up
        /// block; see [`crate::scale`]): the same amount on every rank, so that the ranks'
        /// differences, and the waiting they cause, stay. The runtime adds the time it would
        /// have taken back into its phase's prediction.
        #[serde(default, skip_serializing_if = "is_zero")]
        removed: f64,
        /// Per-rank factors (index into [`Skeleton::compute_factors`]) where the ranks of the
        /// class differ at this block beyond their weights (a rank with more of the grid's
        /// boundary, or the root of a coarse level, computes more here and not elsewhere);
        /// each rank's duration is multiplied by its factor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        factors: Option<usize>,
        /// The recorded durations this block replays instead of drawing (index into
        /// [`Skeleton::replays`]; see [`crate::replay`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay: Option<usize>,
        /// The leaf of the class's loop nest the block stands for (not serialized; `None` for
        /// blocks merged from several leaves).
        #[serde(skip)]
        leaf: Option<usize>,
    },
    /// An MPI call.
    Call {
        /// The call.
        call: Call,
    },
    /// A loop.
    Loop {
        /// Nesting depth (1 for loops directly inside a phase's loop); names the loop variable.
        depth: usize,
        /// Iterations.
        count: u64,
        /// Body.
        body: Vec<Stmt>,
        /// The loop in Xu & Subhlok's (2008) notation.
        note: String,
    },
    /// The body of a time-step loop (the phase's loop; see [`StepSchedule`]): each iteration
    /// runs the case of its step's kind.
    Steps {
        /// One case per kind.
        cases: Vec<StepCase>,
    },
    /// Runs only in the first or last iteration of the enclosing loop.
    Guard {
        /// Which iteration.
        when: When,
        /// Depth of the enclosing loop (0: the phase's loop).
        depth: usize,
        /// Iterations of the enclosing loop (0 for the phase's loop, whose count is cut).
        count: u64,
        /// Body.
        body: Vec<Stmt>,
    },
}

/// One kind of time step of a [`Stmt::Steps`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCase {
    /// Steps of this kind in the application.
    pub full: u64,
    /// Steps of this kind the skeleton runs.
    pub run: u64,
    /// One step's statements.
    pub body: Vec<Stmt>,
    /// The kind's body in the notation of Xu & Subhlok (2008, §3).
    pub note: String,
}

/// Which steps a time-step loop runs: the kind of every step of the application, and the steps
/// the skeleton runs (all of them until the loop is cut).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSchedule {
    /// The kind (case of the phase's [`Stmt::Steps`]) of every step of the application.
    pub kinds: Vec<u32>,
    /// The steps the skeleton runs, ascending (indices into `kinds`).
    pub run: Vec<u32>,
}

impl StepSchedule {
    /// The kind of each step the skeleton runs, in order.
    pub fn run_kinds(&self) -> Vec<u32> {
        self.run.iter().map(|&i| self.kinds[i as usize]).collect()
    }
}

/// A top-level part of a class program: a loop of the trace, or the straight-line calls between
/// loops. Each is timed separately; its prediction is its time × `full / run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Name, e.g. `main_loop`, `loop_2`, `setup`.
    pub name: String,
    /// Iterations of the application (1 for straight-line code).
    pub full: u64,
    /// Iterations the skeleton runs.
    pub run: u64,
    /// Whether this phase is a loop (so `run` may be cut).
    pub is_loop: bool,
    /// One iteration's statements (straight-line code: all of it).
    pub body: Vec<Stmt>,
    /// Where it came from: the positions of the class's calls it covers.
    pub origin: String,
    /// Recorded computation per iteration, seconds.
    pub compute_s: f64,
    /// Calls per iteration.
    pub calls: u64,
    /// An inner loop of the body cut as well (when one iteration of the phase is already more
    /// than the skeleton's budget); timed on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner: Option<InnerCut>,
    /// For a time-step loop (its body one [`Stmt::Steps`]): the kind of each step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepSchedule>,
    /// For the main loop: copies of one of its iterations elsewhere in the program that the
    /// skeleton does not run (an untimed warm-up iteration, [`crate::warmup`]), each priced as
    /// one more iteration of this loop.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub warmup: u64,
    /// For a [`WARMUP`] phase the skeleton skips: the statements it had (the body left runs only
    /// the computation it had beyond one iteration of the main loop).
    #[serde(skip)]
    pub skipped: Option<Vec<Stmt>>,
}

/// The name of the phase that holds a warm-up iteration of the main loop ([`crate::warmup`]).
pub const WARMUP: &str = "warmup";

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

/// An inner loop of a phase's body run fewer times than recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InnerCut {
    /// Index of the loop among the body's statements.
    pub index: usize,
    /// Its iterations in the application, per iteration of the phase.
    pub full: u64,
    /// Iterations the skeleton runs.
    pub run: u64,
}

/// One process class: ranks running the same program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassProgram {
    /// Ranks (folded ones included).
    pub ranks: Vec<u32>,
    /// Phases in order.
    pub phases: Vec<Phase>,
    /// The loop nest in Xu & Subhlok's (2008) notation.
    pub notation: String,
}

impl Phase {
    /// A phase of `full` iterations (all run), one of which is `body`, from `origin`.
    fn new(name: String, full: u64, is_loop: bool, body: Vec<Stmt>, origin: String) -> Phase {
        Phase {
            name,
            full,
            run: full,
            is_loop,
            compute_s: compute_of(&body),
            calls: calls_in(&body),
            inner: None,
            steps: None,
            warmup: 0,
            skipped: None,
            body,
            origin,
        }
    }

    /// Iterations of the application its time stands for: its own and the warm-up iterations
    /// it prices.
    pub fn priced(&self) -> u64 {
        self.full + self.warmup
    }
}

impl ClassProgram {
    /// Index of the main loop among the phases, if the class has one.
    pub fn main_loop_index(&self) -> Option<usize> {
        self.phases.iter().position(|p| p.name == "main_loop")
    }

    /// The main loop's phase, if the class has one.
    pub fn main_loop(&self) -> Option<&Phase> {
        self.main_loop_index().map(|i| &self.phases[i])
    }
}

/// How the sends and receives of the program were treated (Xu & Subhlok 2008, Fig. 3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MatchingReport {
    /// Global pairs over all classes.
    pub global_pairs: usize,
    /// Global pairs whose sizes were balanced to their median.
    pub balanced: usize,
    /// Local sends and receives: no partner in their class's pattern.
    pub local_sends: usize,
    /// Local receives.
    pub local_recvs: usize,
    /// What was done with local calls.
    pub local_policy: String,
}

/// The skeleton program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skeleton {
    /// Number of ranks.
    pub n_ranks: u32,
    /// Name of the topology found.
    pub topology: String,
    /// How neighbours are found.
    pub layout: Layout,
    /// Directions used.
    pub directions: Vec<Dir>,
    /// Tags of the messages that receives from any source take: (tag as traced, tag run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub message_tags: Vec<(i32, i32)>,
    /// Communicators used (index 0 is `MPI_COMM_WORLD`).
    pub comms: Vec<Comm>,
    /// Class programs.
    pub classes: Vec<ClassProgram>,
    /// Class of each rank.
    pub class_of_rank: Vec<u32>,
    /// Coordinates of each rank in the topology's grid (empty without one).
    pub grid_coords: Vec<Vec<usize>>,
    /// Request slots.
    pub n_slots: u32,
    #[serde(default)]
    /// Slots that a request is started in while an earlier one there may still be pending (a
    /// Waitany completed its neighbour instead): the code waits for it before starting anew.
    pub reused_slots: Vec<u32>,
    /// Send buffer bytes.
    pub send_bytes: u64,
    /// Receive buffer bytes.
    pub recv_bytes: u64,
    /// Matching.
    pub matching: MatchingReport,
    /// Distributions of compute blocks whose recorded durations spread.
    #[serde(default)]
    pub distributions: Vec<Dist>,
    /// Each rank's systematic compute weight: its recorded gaps over its class's mean (every
    /// compute block of the rank is multiplied by it).
    #[serde(default)]
    pub rank_weight: Vec<f64>,
    /// Bytes each rank sends at a send whose class's ranks send different sizes there (an
    /// uneven decomposition): one table per distinct set of sizes, one entry per rank (0 for
    /// ranks of other classes). Sends name theirs in `sizes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_tables: Vec<Vec<u64>>,
    /// Per-rank factors of compute blocks whose class's ranks differ there beyond their
    /// weights: one table per such block, one entry per rank (1 for ranks of other classes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute_factors: Vec<Vec<f64>>,
    /// The buffer the skeleton attaches for its buffered sends (`MPI_Bsend`): blocking sends
    /// that the run completed before their receive was posted, and without which the program
    /// could block (see [`crate::pipeline::make`]). `None` where it makes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_buffer: Option<SendBuffer>,
    /// Recorded durations of the compute blocks that replay them (see [`crate::replay`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replays: Vec<crate::replay::Replay>,
}

/// What the buffered sends of a skeleton need: the most any rank sends buffered in one run of
/// the skeleton as built, for `main_run` iterations of its main loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SendBuffer {
    /// Bytes.
    pub bytes: u64,
    /// Messages (each takes `MPI_BSEND_OVERHEAD` more).
    pub messages: u64,
    /// Iterations of the main loop those are for; a run of more iterations attaches in
    /// proportion.
    pub main_run: u64,
}

impl Skeleton {
    /// What each rank of `class` multiplies a compute block with `factors` by: its weight times
    /// its factor there.
    pub fn block_weights(&self, class: &ClassProgram, factors: Option<usize>) -> Vec<f64> {
        class
            .ranks
            .iter()
            .map(|&r| {
                self.rank_weight.get(r as usize).copied().unwrap_or(1.0)
                    * factor_of(&self.compute_factors, factors, r)
            })
            .collect()
    }
}

/// The factor of rank `r` at a compute block with `factors` (1 without a table).
pub fn factor_of(tables: &[Vec<f64>], factors: Option<usize>, r: u32) -> f64 {
    factors.and_then(|t| tables.get(t)).and_then(|t| t.get(r as usize)).copied().unwrap_or(1.0)
}

/// The largest number of bytes `c` sends on any rank, given the size tables (0 for calls that
/// send nothing point-to-point).
pub(crate) fn largest_send(c: &Call, tables: &[Vec<u64>]) -> u64 {
    match c {
        Call::Send { bytes, sizes, .. } | Call::SendRecv { bytes, sizes, .. } => sizes
            .and_then(|t| tables.get(t))
            .and_then(|t| t.iter().max().copied())
            .unwrap_or(*bytes),
        _ => 0,
    }
}

/// One compute block of a class program as recorded: its mean, the distribution its durations
/// are drawn from, and its per-rank factors.
#[derive(Debug, Clone, Copy)]
struct Gap {
    seconds: f64,
    dist: Option<usize>,
    factors: Option<usize>,
}

/// An error building the program.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The number of nests does not match the number of classes.
    #[error("{nests} loop nests given for {classes} process classes")]
    NestCount {
        /// Nests.
        nests: usize,
        /// Classes.
        classes: usize,
    },
    /// A nest does not expand to its class program.
    #[error("the loop nest of class {class} expands to {got} calls, its program has {want}")]
    NestLength {
        /// Class.
        class: usize,
        /// Expanded length.
        got: usize,
        /// Program length.
        want: usize,
    },
}

/// C identifier of a direction name.
pub fn ident_of(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        match c {
            '+' => s.push_str("_PLUS_"),
            '-' => s.push_str("_MINUS_"),
            c if c.is_ascii_alphanumeric() => s.push(c.to_ascii_uppercase()),
            _ => s.push('_'),
        }
    }
    let s = s.trim_matches('_').replace("__", "_");
    if s.starts_with(|c: char| c.is_ascii_digit()) || s.is_empty() {
        format!("D{s}")
    } else {
        s
    }
}

/// The channel a direction's messages travel on: a tree's children share one (a parent names
/// each child differently, a child names its parent one way).
fn channel(name: &str) -> String {
    if name.starts_with("CHILD") {
        "CHILD".into()
    } else {
        name.into()
    }
}

/// The world rank in direction `d` of `rank`, if any.
pub fn neighbour(lt: &LogicalTrace, rank: u32, d: &Direction) -> Option<u32> {
    let n = lt.n_ranks as i64;
    if d.name == "SELF" {
        return Some(rank);
    }
    let Some(t) = lt.topology() else {
        // General graph: directions are rank offsets.
        let o = d.offset.first().copied()?;
        let r = i64::from(rank) + o;
        return (0..n).contains(&r).then_some(r as u32);
    };
    let ident = &lt.identification;
    let node = ident.node_of_rank.get(rank as usize).copied()? as usize;
    let target = node_in_direction(t, node, d)?;
    let rank_of_node = rank_of_node(lt);
    rank_of_node.get(target).copied()
}

fn rank_of_node(lt: &LogicalTrace) -> Vec<u32> {
    let mut out = vec![0; lt.identification.node_of_rank.len()];
    for (r, &v) in lt.identification.node_of_rank.iter().enumerate() {
        out[v as usize] = r as u32;
    }
    out
}

fn node_in_direction(t: &Topology, v: usize, d: &Direction) -> Option<usize> {
    let n = t.n();
    match t.kind {
        Kind::Cartesian | Kind::Moore | Kind::Bt6 => t.step(v, &d.offset),
        Kind::Butterfly => {
            let cols = t.dims[1];
            let (r, c) = (v / cols, v % cols);
            if d.name == "TRANSPOSE" {
                Some(c * cols + r)
            } else {
                let bit = *d.offset.get(1)? as usize;
                Some(r * cols + (c ^ bit))
            }
        }
        Kind::Tree => {
            let k = t.dims[1];
            if d.name == "PARENT" {
                (v > 0).then(|| (v - 1) / k)
            } else {
                let i = *d.offset.first()? as usize;
                Some(k * v + i).filter(|&u| u < n)
            }
        }
        Kind::Pairs => Some(v ^ 1).filter(|&u| u < n),
        Kind::AllToAll => Some((v + *d.offset.first()? as usize) % n),
    }
}

/// Whether the application's ranks lie row-major in a Cartesian-like topology whose
/// directions `MPI_Cart_shift` and coordinate arithmetic reach.
fn cartesian_layout(lt: &LogicalTrace) -> Option<Layout> {
    let t = lt.topology()?;
    if !matches!(t.kind, Kind::Cartesian | Kind::Moore | Kind::Bt6) {
        return None;
    }
    let identity = lt.identification.node_of_rank.iter().enumerate().all(|(r, &v)| r == v as usize);
    identity.then(|| Layout::Cartesian {
        dims: t.dims.clone(),
        periods: t
            .dims
            .iter()
            .zip(&t.periods)
            .map(|(&d, &p)| p || d == 2)
            .chain(std::iter::repeat(false))
            .take(t.dims.len())
            .collect(),
    })
}

/// Numbers every `Sym` node of a nest in pre-order (the numbering
/// [`LoopNest::leaf_of_position`] uses).
fn leaves(nodes: &[Node], out: &mut Vec<Node>) {
    for n in nodes {
        match n {
            Node::Sym { .. } => out.push(n.clone()),
            Node::Loop { body, .. } | Node::Guard { body, .. } => leaves(body, out),
            Node::Steps { kinds, .. } => kinds.iter().for_each(|k| leaves(k, out)),
        }
    }
}

/// A loop around a leaf: its count, the depth of its variable (0: the phase's loop), and the
/// leaves it holds (`lo..hi`).
#[derive(Debug, Clone, Copy)]
struct LoopSpan {
    count: u64,
    depth: usize,
    lo: usize,
    hi: usize,
}

/// For every leaf (pre-order), the loops around it, outermost first.
fn leaf_loops(items: &[Node]) -> Vec<Vec<LoopSpan>> {
    fn walk(nodes: &[Node], depth: usize, stack: &mut Vec<LoopSpan>, out: &mut Vec<Vec<LoopSpan>>) {
        for n in nodes {
            match n {
                Node::Sym { .. } => out.push(stack.clone()),
                Node::Loop { count, body } => {
                    let lo = out.len();
                    let hi = lo + mpiskel_compress::leaf_count(body);
                    stack.push(LoopSpan { count: *count, depth, lo, hi });
                    walk(body, depth + 1, stack, out);
                    stack.pop();
                }
                Node::Steps { schedule, kinds } => {
                    let lo = out.len();
                    let hi =
                        lo + kinds.iter().map(|k| mpiskel_compress::leaf_count(k)).sum::<usize>();
                    let count = schedule.len() as u64;
                    stack.push(LoopSpan { count, depth, lo, hi });
                    for k in kinds {
                        walk(k, depth + 1, stack, out);
                    }
                    stack.pop();
                }
                Node::Guard { body, .. } => walk(body, depth, stack, out),
            }
        }
    }
    let mut out = Vec::new();
    walk(items, 0, &mut Vec::new(), &mut out);
    out
}

/// Per leaf of one class's nest: the program positions it stands for.
pub(crate) struct LeafMap {
    pub(crate) positions: Vec<Vec<usize>>,
    pub(crate) leaf_of: Vec<usize>,
}

pub(crate) fn leaf_map(nest: &LoopNest, n_leaves: usize) -> LeafMap {
    let leaf_of = nest.leaf_of_position();
    let mut positions = vec![Vec::new(); n_leaves];
    for (p, &l) in leaf_of.iter().enumerate() {
        positions[l].push(p);
    }
    LeafMap { positions, leaf_of }
}

/// Builds the skeleton program from a logical trace and one loop nest per class (compressed
/// from [`crate::symbols::symbolize_class`], with its gap weights attached).
pub fn build(lt: &LogicalTrace, nests: &[LoopNest]) -> Result<Skeleton, BuildError> {
    if nests.len() != lt.classes.len() {
        return Err(BuildError::NestCount { nests: nests.len(), classes: lt.classes.len() });
    }
    let n = lt.n_ranks as u32;
    let topo = lt.topology();
    let layout = match &lt.identification.structure {
        Structure::NoPointToPoint => Layout::None,
        _ => cartesian_layout(lt).unwrap_or_else(|| Layout::Table {
            neighbours: (0..n)
                .map(|r| {
                    lt.directions
                        .iter()
                        .map(|d| neighbour(lt, r, d).map_or(-1, i64::from))
                        .collect()
                })
                .collect(),
        }),
    };
    // Tags: one per channel, in order of direction.
    let mut channels: BTreeMap<String, i32> = BTreeMap::new();
    for d in &lt.directions {
        let next = channels.len() as i32 + 1;
        channels.entry(channel(&d.name)).or_insert(next);
    }
    // Messages that receives from any source take are told apart by their traced tag, as in the
    // application: each such tag gets a tag of its own above the channels', on both sides, so
    // that an any-source receive never takes a message of another channel (a neighbour's halo
    // instead of a worker's report).
    let any_tags: BTreeMap<i32, i32> = {
        let mut tags = BTreeSet::new();
        for class in &lt.classes {
            for (i, op) in class.ops.iter().enumerate() {
                let receives = matches!(op.key.op.class(), OpClass::Recv | OpClass::Probe);
                if receives
                    && crate::symbols::takes_from_any_source(&class.ops, i)
                    && op.traced_tag >= 0
                {
                    tags.insert(op.traced_tag);
                }
            }
        }
        let base = channels.len() as i32 + 1;
        tags.into_iter().enumerate().map(|(i, t)| (t, base + i as i32)).collect()
    };
    let directions: Vec<Dir> = lt
        .directions
        .iter()
        .map(|d| {
            // The channel the neighbour in this direction sends on to reach this rank: a
            // tree's children send to PARENT and a parent to its CHILDren.
            let back = if d.name.starts_with("CHILD") {
                "PARENT".to_owned()
            } else if d.name == "SELF" {
                // A message to self comes back on its own channel.
                "SELF".to_owned()
            } else if d.name == "PARENT" {
                "CHILD".to_owned()
            } else {
                match topo {
                    Some(t) => d.opposite(t).map_or_else(String::new, |o| o.name),
                    None => format!("{:+}", -d.offset.first().copied().unwrap_or(0)),
                }
            };
            let recv_tag = channels.get(&channel(&back)).copied().unwrap_or(0);
            Dir {
                name: d.name.clone(),
                ident: ident_of(&d.name),
                offset: d.offset.clone(),
                tag: channels[&channel(&d.name)],
                recv_tag,
            }
        })
        .collect();
    let dir_index: HashMap<&str, usize> =
        lt.directions.iter().enumerate().map(|(i, d)| (d.name.as_str(), i)).collect();
    let peer = |p: &Option<LogicalPeer>| match p {
        Some(LogicalPeer::Dir(d)) => {
            dir_index.get(d.name.as_str()).map_or(Peer::Null, |&i| Peer::Dir(i))
        }
        Some(LogicalPeer::Null) | None => Peer::Null,
        Some(LogicalPeer::Any) => Peer::Any,
        Some(LogicalPeer::Exception(r)) => Peer::Rank(*r),
    };

    let mut comms = vec![Comm::World];
    let mut comm_index = |c: &LogicalComm| -> usize {
        let want = Comm::of(c);
        comms.iter().position(|x| *x == want).unwrap_or_else(|| {
            comms.push(want);
            comms.len() - 1
        })
    };

    let mut class_of_rank = vec![0u32; n as usize];
    let mut next_slot;
    let mut programs = Vec::with_capacity(lt.classes.len());
    // First pass: per class, per leaf, the call it makes (slots assigned per class, shared
    // numbering across classes since every rank runs only one class).
    let mut matching = MatchingReport {
        local_policy: "kept: the whole program is checked for deadlock before it is emitted".into(),
        ..MatchingReport::default()
    };
    let mut max_slots = 0u32;
    let mut distributions: Vec<Dist> = Vec::new();
    let mut rank_weight = vec![1.0f64; n as usize];
    let mut size_tables: Vec<Vec<u64>> = Vec::new();
    let mut compute_factors: Vec<Vec<f64>> = Vec::new();
    let collective_sizes = agreed_collective_sizes(lt, nests);
    for (ci, (class, nest)) in lt.classes.iter().zip(nests).enumerate() {
        for &r in class.ranks.iter().chain(&class.folded) {
            if let Some(x) = class_of_rank.get_mut(r as usize) {
                *x = ci as u32;
            }
        }
        let m = crate::matching::match_calls(&crate::matching::calls_of_class(class, topo));
        matching.global_pairs += m.global_pairs;
        matching.balanced += m.balanced;
        matching.local_sends += m.local_sends;
        matching.local_recvs += m.local_recvs;

        let mut leaf_nodes = Vec::new();
        leaves(&nest.items, &mut leaf_nodes);
        let lm = leaf_map(nest, leaf_nodes.len());
        if lm.leaf_of.len() != class.ops.len() {
            return Err(BuildError::NestLength {
                class: ci,
                got: lm.leaf_of.len(),
                want: class.ops.len(),
            });
        }
        // Request slots: each non-blocking start leaf gets one (or a ring of them, when an
        // inner loop starts it several times before anything completes it); the leaves one
        // completion finishes get consecutive slots, in order of the completions.
        next_slot = 0;
        let loops = leaf_loops(&nest.items);
        let mut slot_of_leaf: HashMap<usize, SlotRef> = HashMap::new();
        let mut completes_leaves: HashMap<usize, BTreeSet<usize>> = HashMap::new();
        let mut completed_by: HashMap<usize, Vec<usize>> = HashMap::new();
        for (leaf, ps) in lm.positions.iter().enumerate() {
            let op = ps.first().map(|&p| &class.ops[p]);
            if op.is_some_and(|o| o.key.op.class() == OpClass::Completion) {
                let set: BTreeSet<usize> = ps
                    .iter()
                    .flat_map(|&p| class.ops[p].completes.iter().map(|&q| lm.leaf_of[q]))
                    .collect();
                for &l in &set {
                    completed_by.entry(l).or_default().push(leaf);
                }
                completes_leaves.insert(leaf, set);
            }
        }
        let mut assign = |l: usize, next_slot: &mut u32| {
            if slot_of_leaf.contains_key(&l) || !starts_request(class, &lm, l) {
                return;
            }
            let waits = completed_by.get(&l).map(Vec::as_slice).unwrap_or(&[]);
            // The innermost inner loop around the start that holds none of its completions.
            let ring = loops[l]
                .iter()
                .rev()
                .find(|lp| lp.depth >= 1 && !waits.iter().any(|w| (lp.lo..lp.hi).contains(w)))
                .filter(|_| !waits.is_empty());
            let r = match ring {
                Some(lp) => SlotRef { base: *next_slot, ring: lp.count as u32, depth: lp.depth },
                None => SlotRef { base: *next_slot, ring: 1, depth: 0 },
            };
            *next_slot += r.ring;
            slot_of_leaf.insert(l, r);
        };
        let mut order: Vec<usize> = completes_leaves.keys().copied().collect();
        order.sort_unstable();
        for c in &order {
            for &l in &completes_leaves[c] {
                assign(l, &mut next_slot);
            }
        }
        for leaf in 0..lm.positions.len() {
            assign(leaf, &mut next_slot);
        }
        max_slots = max_slots.max(next_slot);
        let calls: Vec<Option<Call>> = (0..lm.positions.len())
            .map(|leaf| {
                let p = lm.positions[leaf][0];
                let op = &class.ops[p];
                // Sizes after balancing: the first occurrence's (balancing is per position
                // and positions of one leaf share a key) — or, for a leaf of a time step
                // whose sizes vary from step to step, their mean, which carries the bytes
                // of the channel over the run.
                let size = |p: usize| match m.bytes.get(p) {
                    Some(&b) if b > 0 => b,
                    _ => class.ops[p].key.bytes,
                };
                let ps = &lm.positions[leaf];
                let bytes = if ps.iter().all(|&q| class.ops[q].key.bytes == op.key.bytes) {
                    size(p)
                } else {
                    let total: u128 = ps.iter().map(|&q| u128::from(size(q))).sum();
                    (total as f64 / ps.len() as f64).round() as u64
                };
                let completes: Vec<u32> = completes_leaves
                    .get(&leaf)
                    .map(|s| {
                        s.iter()
                            .filter_map(|l| slot_of_leaf.get(l))
                            .flat_map(|r| r.base..r.base + r.ring)
                            .collect()
                    })
                    .unwrap_or_default();
                // A receive right after a probe of any source takes whatever the probe found:
                // it is a receive from any source too.
                let probed_any = p > 0 && {
                    let prev = &class.ops[p - 1].key;
                    prev.op.class() == OpClass::Probe && prev.any_source && prev.peer == op.key.peer
                };
                let mut call = call_of(
                    op,
                    probed_any,
                    bytes,
                    slot_of_leaf.get(&leaf).copied(),
                    completes,
                    &peer,
                    &directions,
                    &any_tags,
                    &mut comm_index,
                    lt,
                );
                if let (Some(Call::Collective { bytes, .. }), Some(&agreed)) =
                    (&mut call, collective_sizes.get(&collective_key(op)))
                {
                    *bytes = agreed;
                }
                if let Some(Call::Send { sizes, .. } | Call::SendRecv { sizes, .. }) = &mut call {
                    *sizes = rank_sizes(class, ps, n).map(|t| {
                        size_tables.iter().position(|x| *x == t).unwrap_or_else(|| {
                            size_tables.push(t);
                            size_tables.len() - 1
                        })
                    });
                }
                call
            })
            .collect();
        // Each rank's systematic weight: its gaps over the class mean at the positions it has.
        let (mut own, mut avg) = (HashMap::<u32, f64>::new(), HashMap::<u32, f64>::new());
        for op in &class.ops {
            for &(r, x) in &op.gap_samples {
                *own.entry(r).or_default() += f64::from(x);
                *avg.entry(r).or_default() += op.gap.mean_s;
            }
        }
        for (r, o) in &own {
            let a = avg[r];
            if a > 0.0 {
                if let Some(w) = rank_weight.get_mut(*r as usize) {
                    *w = o / a;
                }
            }
        }
        let gaps: Vec<Gap> = leaf_nodes
            .iter()
            .enumerate()
            .map(|(leaf, l)| {
                let mean = match l {
                    Node::Sym { stats: Some(s), .. } => s.mean,
                    _ => 0.0,
                };
                let groups: Vec<&[(u32, f32)]> = lm.positions[leaf]
                    .iter()
                    .map(|&p| class.ops[p].gap_samples.as_slice())
                    .collect();
                let weight = |r: u32| rank_weight[r as usize];
                let (dist, factors) = match rank_factors(&groups, &weight) {
                    Some(f) => {
                        // Each rank's own spread between executions, relative to its mean
                        // (rounded as recorded samples are).
                        let own: Vec<f64> = groups
                            .iter()
                            .flat_map(|g| g.iter())
                            .filter_map(|&(r, x)| {
                                let m = f.get(&r)? * weight(r) * mean;
                                (m > 0.0).then(|| f64::from((f64::from(x) / m) as f32))
                            })
                            .collect();
                        let own_mean = own.iter().sum::<f64>() / own.len().max(1) as f64;
                        let mut table = vec![1.0; n as usize];
                        for (&r, &x) in &f {
                            if let Some(t) = table.get_mut(r as usize) {
                                *t = x;
                            }
                        }
                        compute_factors.push(table);
                        let d = crate::spread::quantiles_of(own, own_mean)
                            .map(|d| Dist { q: d.q.iter().map(|x| x * mean).collect() });
                        (d, Some(compute_factors.len() - 1))
                    }
                    None => (distribution(&groups, &weight, lt.shared_variation), None),
                };
                let dist = dist.map(|d| {
                    distributions.push(d);
                    distributions.len() - 1
                });
                Gap { seconds: mean, dist, factors }
            })
            .collect();
        programs.push((class, nest, calls, gaps, lm));
    }

    // Receive counts: the largest size each channel carries.
    let largest = |c: &Call| largest_send(c, &size_tables);
    let mut channel_max: HashMap<i32, u64> = HashMap::new();
    let mut any_max = 0u64;
    for (_, _, calls, _, _) in &programs {
        for c in calls.iter().flatten() {
            if let Call::Send { tag, .. } | Call::SendRecv { tag, .. } = c {
                let e = channel_max.entry(*tag).or_insert(0);
                *e = (*e).max(largest(c));
                any_max = any_max.max(largest(c));
            }
        }
    }
    let mut classes = Vec::with_capacity(programs.len());
    let (mut send_bytes, mut recv_bytes) = (0u64, 0u64);
    for (class, nest, mut calls, gaps, _) in programs {
        // Receive buffer: a region per non-blocking receive slot, one shared region for the
        // rest (blocking receives and collectives).
        let mut region: BTreeMap<u32, (u64, u32)> = BTreeMap::new();
        let mut shared = 0u64;
        for c in calls.iter_mut().flatten() {
            match c {
                Call::Recv { tag, bytes, count, slot, .. } => {
                    let ch =
                        if *tag < 0 { any_max } else { channel_max.get(tag).copied().unwrap_or(0) };
                    *count = (*bytes).max(ch);
                    match slot {
                        Some(s) => {
                            let e = region.entry(s.base).or_insert((0, s.ring));
                            e.0 = e.0.max(*count);
                        }
                        None => shared = shared.max(*count),
                    }
                }
                Call::SendRecv { recv_tag, count, .. } => {
                    let ch = if *recv_tag < 0 {
                        any_max
                    } else {
                        channel_max.get(recv_tag).copied().unwrap_or(0)
                    };
                    *count = (*count).max(ch);
                    shared = shared.max(*count);
                }
                Call::Collective { op, bytes, comm, .. } => {
                    let members = comm_size(&comms[*comm], lt);
                    shared = shared.max(collective_recv_bytes(*op, *bytes, members));
                    send_bytes = send_bytes.max(collective_send_bytes(*op, *bytes, members));
                }
                _ => {}
            }
            send_bytes = send_bytes.max(largest(c));
        }
        let mut offsets: HashMap<u32, u64> = HashMap::new();
        let mut at = round8(shared);
        for (s, (b, ring)) in &region {
            offsets.insert(*s, at);
            at += round8(*b) * u64::from(*ring);
        }
        recv_bytes = recv_bytes.max(at);
        for c in calls.iter_mut().flatten() {
            if let Call::Recv { slot: Some(s), offset, .. } = c {
                *offset = offsets[&s.base];
            }
        }
        let phases = phases_of(&nest.items, &calls, &gaps, class);
        classes.push(ClassProgram {
            ranks: {
                let mut r: Vec<u32> = class.ranks.iter().chain(&class.folded).copied().collect();
                r.sort_unstable();
                r
            },
            phases,
            notation: nest.notation(),
        });
    }
    Ok(Skeleton {
        n_ranks: n,
        topology: lt.topology_name(),
        layout,
        directions,
        message_tags: any_tags.iter().map(|(&t, &v)| (t, v)).collect(),
        comms,
        classes,
        class_of_rank,
        grid_coords: match topo {
            Some(t) if matches!(t.kind, Kind::Cartesian | Kind::Moore | Kind::Bt6) => {
                lt.identification.coords.clone()
            }
            _ => Vec::new(),
        },
        n_slots: max_slots,
        reused_slots: Vec::new(),
        send_bytes: send_bytes.max(8),
        recv_bytes: recv_bytes.max(8),
        matching,
        distributions,
        rank_weight,
        size_tables,
        compute_factors,
        send_buffer: None,
        replays: Vec::new(),
    })
}

/// Each rank's bytes at the send that positions `ps` of `class` make (the mean over them), one
/// entry per rank of the `n` (0 outside the class), if the class's ranks send different sizes
/// there; `None` if they all send the same.
fn rank_sizes(class: &ProcessClass, ps: &[usize], n: u32) -> Option<Vec<u64>> {
    if ps.iter().all(|&q| class.ops[q].rank_bytes.is_empty()) {
        return None;
    }
    let mut table = vec![0u64; n as usize];
    let mut seen = BTreeSet::new();
    for &r in class.ranks.iter().chain(&class.folded) {
        let total: u128 = ps.iter().map(|&q| u128::from(class.ops[q].bytes_of(r))).sum();
        let b = (total as f64 / ps.len().max(1) as f64).round() as u64;
        if let Some(x) = table.get_mut(r as usize) {
            *x = b;
            seen.insert(b);
        }
    }
    (seen.len() > 1).then_some(table)
}

/// What makes calls of a collective the same collective to every rank: operation,
/// communicator, root (`None` for other calls).
fn collective_key(op: &mpiskel_logicalize::LogicalOp) -> Option<String> {
    (op.key.op.class() == OpClass::Collective)
        .then(|| format!("{:?} {:?} {:?}", op.key.op, op.key.comm, op.key.root))
}

/// Whether a collective gives each rank its own sizes.
fn is_vector(op: Op) -> bool {
    matches!(
        op,
        Op::Gatherv
            | Op::Igatherv
            | Op::Allgatherv
            | Op::Iallgatherv
            | Op::Scatterv
            | Op::Iscatterv
            | Op::Alltoallv
            | Op::Ialltoallv
            | Op::Alltoallw
            | Op::Ialltoallw
            | Op::ReduceScatter
            | Op::IreduceScatter
    )
}

/// Collectives every rank must run with one size that its calls do not give: vector
/// collectives (each rank its own sizes; they run as their regular form) and collectives whose
/// size varies at one position of some class's nest (a leaf of a time step whose sizes drift,
/// where each class would take its own mean). Every call of such a collective, in every class,
/// runs with the mean size per member of all its calls over all ranks, so that the ranks agree
/// and the bytes over the run stay those of the application.
fn agreed_collective_sizes(lt: &LogicalTrace, nests: &[LoopNest]) -> HashMap<Option<String>, u64> {
    let mut sum: HashMap<Option<String>, (f64, f64)> = HashMap::new();
    let mut varies = BTreeSet::new();
    for (class, nest) in lt.classes.iter().zip(nests) {
        let lm = leaf_map(nest, mpiskel_compress::leaf_count(&nest.items));
        if lm.leaf_of.len() != class.ops.len() {
            continue; // reported by the caller
        }
        let ranks = (class.ranks.len() + class.folded.len()).max(1) as f64;
        for ps in &lm.positions {
            let Some(&first) = ps.first() else { continue };
            let key = collective_key(&class.ops[first]);
            if key.is_none() {
                continue;
            }
            let members = comm_size(&Comm::of(&class.ops[first].key.comm), lt);
            let form = |q: usize| {
                let k = &class.ops[q].key;
                collective_form(k.op, k.bytes, k.recv_bytes, members).1
            };
            let sizes: Vec<u64> = ps.iter().map(|&q| form(q)).collect();
            if is_vector(class.ops[first].key.op) || sizes.iter().any(|&b| b != sizes[0]) {
                varies.insert(key.clone());
            }
            let e = sum.entry(key).or_insert((0.0, 0.0));
            e.0 += sizes.iter().sum::<u64>() as f64 * ranks;
            e.1 += sizes.len() as f64 * ranks;
        }
    }
    sum.into_iter()
        .filter(|(k, _)| varies.contains(k))
        .map(|(k, (total, n))| (k, if n > 0.0 { (total / n).ceil() as u64 } else { 0 }))
        .collect()
}

fn round8(b: u64) -> u64 {
    b.div_ceil(8) * 8
}

fn starts_request(class: &ProcessClass, lm: &LeafMap, leaf: usize) -> bool {
    lm.positions[leaf].first().is_some_and(|&p| {
        let op = class.ops[p].key.op;
        matches!(op, Op::Isend | Op::Issend | Op::Irsend | Op::Irecv) || nonblocking_collective(op)
    })
}

/// `MPI_Ibarrier`, `MPI_Ibcast`, … .
pub fn nonblocking_collective(op: Op) -> bool {
    op.class() == OpClass::Collective && op.name().starts_with('I')
}

/// Members of a communicator of the skeleton, as seen by any of them.
pub fn comm_size(c: &Comm, lt: &LogicalTrace) -> u64 {
    match c {
        Comm::World => lt.n_ranks as u64,
        Comm::SelfComm => 1,
        Comm::Slice { free } => lt
            .topology()
            .map_or(1, |t| free.iter().filter_map(|&k| t.dims.get(k)).product::<usize>() as u64),
        Comm::Strided { size, .. } => *size as u64,
    }
}

/// Bytes a collective writes into the receive buffer.
pub fn collective_recv_bytes(op: Op, bytes: u64, members: u64) -> u64 {
    match op {
        Op::Gather | Op::Allgather | Op::Alltoall => bytes.saturating_mul(members),
        Op::ReduceScatterBlock => bytes,
        Op::Barrier => 0,
        _ => bytes,
    }
}

/// Bytes a collective reads from the send buffer.
pub fn collective_send_bytes(op: Op, bytes: u64, members: u64) -> u64 {
    match op {
        Op::Scatter | Op::Alltoall | Op::ReduceScatterBlock => bytes.saturating_mul(members),
        Op::Barrier => 0,
        _ => bytes,
    }
}

/// The blocking, regular collective a traced collective runs as, and its size per member.
fn collective_form(op: Op, bytes: u64, recv: u64, members: u64) -> (Op, u64) {
    let m = members.max(1);
    let per = |total: u64| total.div_ceil(m);
    match op {
        Op::Barrier | Op::Ibarrier => (Op::Barrier, 0),
        Op::Bcast | Op::Ibcast => (Op::Bcast, bytes.max(recv)),
        Op::Reduce | Op::Ireduce => (Op::Reduce, bytes),
        Op::Allreduce | Op::Iallreduce => (Op::Allreduce, bytes),
        Op::Scan | Op::Iscan => (Op::Scan, bytes),
        Op::Exscan | Op::Iexscan => (Op::Exscan, bytes),
        Op::Gather | Op::Igather | Op::Gatherv | Op::Igatherv => (Op::Gather, bytes),
        Op::Allgather | Op::Iallgather | Op::Allgatherv | Op::Iallgatherv => (Op::Allgather, bytes),
        Op::Scatter | Op::Iscatter | Op::Scatterv | Op::Iscatterv => (Op::Scatter, recv),
        Op::Alltoall
        | Op::Ialltoall
        | Op::Alltoallv
        | Op::Ialltoallv
        | Op::Alltoallw
        | Op::Ialltoallw => (Op::Alltoall, per(bytes.max(recv))),
        // Reduce_scatter sends the sum of every member's block: its mean block runs.
        Op::ReduceScatter | Op::IreduceScatter => (Op::ReduceScatterBlock, per(bytes)),
        Op::ReduceScatterBlock | Op::IreduceScatterBlock => {
            (Op::ReduceScatterBlock, if recv > 0 { recv } else { per(bytes) })
        }
        other => (other, bytes),
    }
}

#[allow(clippy::too_many_arguments)]
fn call_of(
    op: &mpiskel_logicalize::LogicalOp,
    probed_any: bool,
    bytes: u64,
    slot: Option<SlotRef>,
    completes: Vec<u32>,
    peer: &dyn Fn(&Option<LogicalPeer>) -> Peer,
    dirs: &[Dir],
    any_tags: &BTreeMap<i32, i32>,
    comm_index: &mut dyn FnMut(&LogicalComm) -> usize,
    lt: &LogicalTrace,
) -> Option<Call> {
    let k = &op.key;
    let own = any_tags.get(&op.traced_tag).copied();
    let send_tag = |p: &Peer| match p {
        _ if own.is_some() => own.unwrap_or(0),
        Peer::Dir(i) => dirs[*i].tag,
        _ => 0,
    };
    let recv_tag = |p: &Peer, any_tag: bool| match p {
        _ if any_tag => -1,
        _ if own.is_some() => own.unwrap_or(0),
        Peer::Dir(i) => dirs[*i].recv_tag,
        Peer::Any => -1,
        _ => 0,
    };
    Some(match k.op.class() {
        OpClass::Lifecycle | OpClass::Comm => return None,
        OpClass::Send => {
            let to = peer(&k.peer);
            let run = match k.op {
                Op::Send | Op::Rsend | Op::Bsend => Op::Send,
                Op::Ssend => Op::Ssend,
                Op::Issend => Op::Issend,
                _ => Op::Isend,
            };
            Call::Send { op: run, tag: send_tag(&to), to, bytes, slot, sizes: None }
        }
        OpClass::Recv => {
            let from = if k.any_source || probed_any { Peer::Any } else { peer(&k.peer) };
            let tag = recv_tag(&from, op.tag_class < 0);
            Call::Recv { op: k.op, from, tag, bytes, count: bytes, offset: 0, slot }
        }
        OpClass::SendRecv => {
            let to = peer(&k.peer);
            let from = peer(&k.source);
            Call::SendRecv {
                tag: send_tag(&to),
                recv_tag: recv_tag(&from, false),
                to,
                bytes,
                from,
                count: k.recv_bytes,
                sizes: None,
            }
        }
        OpClass::Probe => {
            let from = if k.any_source { Peer::Any } else { peer(&k.peer) };
            Call::Probe { tag: recv_tag(&from, op.tag_class < 0), from }
        }
        OpClass::Completion => {
            let how = if k.done == 0 || completes.is_empty() {
                Completion::Poll
            } else {
                match k.op {
                    Op::Waitany | Op::Testany => Completion::Any,
                    Op::Waitsome | Op::Testsome => Completion::Some,
                    _ => Completion::All,
                }
            };
            Call::Complete { how, slots: completes, traced: k.op }
        }
        OpClass::Collective => {
            let comm = comm_index(&k.comm);
            let c = Comm::of(&k.comm);
            let members = comm_size(&c, lt);
            let (run, per) = collective_form(k.op, bytes, k.recv_bytes, members);
            let rooted = matches!(run, Op::Bcast | Op::Reduce | Op::Gather | Op::Scatter);
            let root = if rooted { Some(root_rank(k.root.as_deref(), &c, lt)) } else { None };
            let slot = if nonblocking_collective(k.op) { slot } else { None };
            Call::Collective { op: run, traced: k.op, comm, root, bytes: per, slot }
        }
    })
}

/// The rank, within its communicator, of a root given as coordinates.
fn root_rank(root: Option<&[usize]>, c: &Comm, lt: &LogicalTrace) -> u32 {
    let Some(coords) = root else { return 0 };
    // The root's world rank, where the coordinates are the topology's.
    let world = || match lt.topology() {
        Some(t) if coords.len() == t.dims.len() || t.dims.is_empty() => {
            let node = if matches!(t.kind, Kind::Tree | Kind::AllToAll | Kind::Pairs) {
                coords.first().copied().unwrap_or(0)
            } else {
                t.node(coords)
            };
            rank_of_node(lt).get(node).copied().unwrap_or(0)
        }
        _ => coords.first().copied().unwrap_or(0) as u32,
    };
    match (c, lt.topology()) {
        // The rank alone: its own root.
        (Comm::SelfComm, _) => 0,
        (Comm::Slice { free }, Some(t)) => {
            // Row-major among the free dimensions (the numbering of MPI_Cart_sub).
            let dims: Vec<usize> = free.iter().filter_map(|&k| t.dims.get(k).copied()).collect();
            coords.iter().zip(&dims).fold(0usize, |acc, (x, n)| acc * n + x) as u32
        }
        // Members of a group ascend by world rank, `stride` apart.
        (Comm::Strided { size, stride }, _) => {
            let (size, stride) = ((*size).max(1) as u32, (*stride).max(1) as u32);
            (world() % (size * stride)) / stride
        }
        (Comm::World, _) => world(),
        _ => coords.first().copied().unwrap_or(0) as u32,
    }
}

/// Splits a class's nest into phases: each top-level loop is one, straight-line runs between
/// them are one each.
fn phases_of(
    items: &[Node],
    calls: &[Option<Call>],
    gaps: &[Gap],
    class: &ProcessClass,
) -> Vec<Phase> {
    let main = mpiskel_compress::main_loop_index(items);
    let mut phases = Vec::new();
    let mut leaf = 0usize;
    let mut pos = 0u64;
    let mut straight: Vec<Stmt> = Vec::new();
    let mut straight_from = 0u64;
    let mut n_loops = 0;
    let total = class.ops.len() as u64;
    let flush = |straight: &mut Vec<Stmt>, from: u64, to: u64, phases: &mut Vec<Phase>| {
        if straight.is_empty() {
            return;
        }
        let body = std::mem::take(straight);
        let name = if phases.is_empty() {
            "setup".to_owned()
        } else if to == total {
            "finish".to_owned()
        } else {
            format!("step_{}", phases.len())
        };
        let origin = format!("calls {}–{} of the class program", from + 1, to);
        phases.push(Phase::new(name, 1, false, body, origin));
    };
    // An untimed warm-up iteration of the main loop is a phase of its own, which the skeleton
    // may skip ([`crate::warmup`]).
    let warm = main.and_then(|m| crate::warmup::find(items, m));
    for (i, node) in items.iter().enumerate() {
        if let Some(w) = warm.as_ref().filter(|w| w.start == i) {
            flush(&mut straight, straight_from, pos, &mut phases);
            let span: u64 = items[w.clone()].iter().map(Node::expanded_len).sum();
            let mut body = Vec::new();
            lower(&items[w.clone()], 1, 0, calls, gaps, &mut leaf, &mut body);
            let origin = format!(
                "calls {}–{} of the class program: one iteration of the main loop before it",
                pos + 1,
                pos + span
            );
            phases.push(Phase::new(WARMUP.to_owned(), 1, false, body, origin));
            pos += span;
            straight_from = pos;
        }
        if warm.as_ref().is_some_and(|w| w.contains(&i)) {
            continue;
        }
        match node {
            Node::Loop { count, body } => {
                flush(&mut straight, straight_from, pos, &mut phases);
                let span = node.expanded_len();
                let mut stmts = Vec::new();
                lower(body, 1, 0, calls, gaps, &mut leaf, &mut stmts);
                n_loops += 1;
                let name = if Some(i) == main {
                    "main_loop".to_owned()
                } else {
                    format!("loop_{n_loops}")
                };
                let origin = format!(
                    "calls {}–{} of the class program: ({})^{count}",
                    pos + 1,
                    pos + span,
                    mpiskel_compress::LoopNest { items: body.clone() }.notation()
                );
                phases.push(Phase::new(name, *count, true, stmts, origin));
                pos += span;
                straight_from = pos;
            }
            Node::Steps { schedule, kinds } => {
                flush(&mut straight, straight_from, pos, &mut phases);
                let span = node.expanded_len();
                let cases: Vec<StepCase> = kinds
                    .iter()
                    .zip(&node.step_counts())
                    .map(|(k, &full)| {
                        let mut body = Vec::new();
                        lower(k, 1, 0, calls, gaps, &mut leaf, &mut body);
                        let note = LoopNest { items: k.clone() }.notation();
                        StepCase { full, run: full, body, note }
                    })
                    .collect();
                n_loops += 1;
                let name = if Some(i) == main {
                    "main_loop".to_owned()
                } else {
                    format!("loop_{n_loops}")
                };
                let body = vec![Stmt::Steps { cases }];
                let origin = format!(
                    "calls {}–{} of the class program: {}",
                    pos + 1,
                    pos + span,
                    LoopNest { items: vec![node.clone()] }.notation()
                );
                let mut phase = Phase::new(name, schedule.len() as u64, true, body, origin);
                phase.steps = Some(StepSchedule {
                    kinds: schedule.clone(),
                    run: (0..schedule.len() as u32).collect(),
                });
                phases.push(phase);
                pos += span;
                straight_from = pos;
            }
            other => {
                lower(std::slice::from_ref(other), 0, 0, calls, gaps, &mut leaf, &mut straight);
                pos += other.expanded_len();
            }
        }
    }
    flush(&mut straight, straight_from, pos, &mut phases);
    phases
}

/// Lowers nest nodes into statements; `depth` is the loop depth of the statements made and
/// `enclosing` the count of the loop around them.
fn lower(
    nodes: &[Node],
    depth: usize,
    enclosing: u64,
    calls: &[Option<Call>],
    gaps: &[Gap],
    leaf: &mut usize,
    out: &mut Vec<Stmt>,
) {
    for n in nodes {
        match n {
            Node::Sym { .. } => {
                let Gap { seconds: g, dist, factors } = gaps[*leaf];
                if g > 0.0 {
                    // Merge with a preceding plain compute block (dropped calls leave two in a
                    // row).
                    match out.last_mut() {
                        Some(Stmt::Compute {
                            seconds,
                            dist: None,
                            factors: None,
                            leaf: merged,
                            ..
                        }) if dist.is_none() && factors.is_none() => {
                            *seconds += g;
                            *merged = None;
                        }
                        _ => out.push(Stmt::Compute {
                            seconds: g,
                            dist,
                            removed: 0.0,
                            factors,
                            replay: None,
                            leaf: Some(*leaf),
                        }),
                    }
                }
                if let Some(c) = &calls[*leaf] {
                    out.push(Stmt::Call { call: c.clone() });
                }
                *leaf += 1;
            }
            Node::Loop { count, body } => {
                let mut b = Vec::new();
                lower(body, depth + 1, *count, calls, gaps, leaf, &mut b);
                let note = format!("({})^{count}", LoopNest { items: body.clone() }.notation());
                out.push(Stmt::Loop { depth, count: *count, body: b, note });
            }
            Node::Steps { .. } => {
                // Time steps are a phase of their own (phases_of); never nested.
                unreachable!("time steps below the top level")
            }
            Node::Guard { when, body } => {
                let mut b = Vec::new();
                lower(body, depth, enclosing, calls, gaps, leaf, &mut b);
                if !b.is_empty() {
                    out.push(Stmt::Guard {
                        when: *when,
                        depth: depth.saturating_sub(1),
                        count: enclosing,
                        body: b,
                    });
                }
            }
        }
    }
}

/// Whether a number is zero (left out of the JSON).
pub(crate) fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Recorded compute seconds of one pass over `body` (loops at their counts; guards once).
pub fn compute_of(body: &[Stmt]) -> f64 {
    body.iter()
        .map(|s| match s {
            Stmt::Compute { seconds, .. } => *seconds,
            Stmt::Call { .. } => 0.0,
            Stmt::Loop { count, body, .. } => *count as f64 * compute_of(body),
            Stmt::Guard { body, .. } => compute_of(body),
            Stmt::Steps { cases } => per_step(cases, compute_of),
        })
        .sum()
}

/// The mean over the application's steps of `f` of a step's body.
fn per_step(cases: &[StepCase], f: fn(&[Stmt]) -> f64) -> f64 {
    let n: u64 = cases.iter().map(|c| c.full).sum();
    if n == 0 {
        return 0.0;
    }
    cases.iter().map(|c| c.full as f64 * f(&c.body)).sum::<f64>() / n as f64
}

/// MPI calls in one pass over `body`.
pub fn calls_in(body: &[Stmt]) -> u64 {
    body.iter()
        .map(|s| match s {
            Stmt::Compute { .. } => 0,
            Stmt::Call { .. } => 1,
            Stmt::Loop { count, body, .. } => count * calls_in(body),
            Stmt::Guard { body, .. } => calls_in(body),
            Stmt::Steps { cases } => per_step(cases, |b| calls_in(b) as f64).round() as u64,
        })
        .sum()
}
