//! The logical trace's types: directions and logical peers, communicators, the key of a
//! logical call and its gap statistics, the calls of a class's program, the classes, and the
//! logical trace that holds them, and how a logical call is written to and read from JSON
//! (`mpiskel logicalize -o`: [`LogicalOpRecord`]; in memory a [`LogicalOp`] keeps what the
//! skeleton needs in as few bytes as it can, a 5 M-call trace holding 5 M of them, and the
//! document spells out the ranges of sizes and gaps derived from its per-rank sizes and
//! samples, which are not written). The modules that make it ([`super`], `fold.rs`,
//! `guarded.rs`, `translate.rs`) import these; these import none of them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use thin_vec::ThinVec;

use mpiskel_trace::Op;

use crate::catalogue::{Kind, Topology};
use crate::identify::{Identification, Structure};
use crate::matrix::CommMatrix;

/// A direction in the topology, e.g. `EAST` (offset `[0, 1]`).
///
/// Name and offset are shared, not copied: every call of a class's logical program names its
/// peer by a direction, and a 6 M-call trace holds millions of them (two heap blocks each when
/// they were a `String` and a `Vec`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Direction {
    /// Its name.
    pub name: Arc<str>,
    /// The coordinate offset (Cartesian-like topologies), or a rank offset.
    pub offset: Arc<[i64]>,
}

impl Direction {
    /// The direction named `name` with `offset`.
    pub fn new(name: impl Into<Arc<str>>, offset: impl Into<Arc<[i64]>>) -> Direction {
        Direction { name: name.into(), offset: offset.into() }
    }
}

impl Direction {
    /// The direction by which the neighbour in this direction names this rank (`EAST` ↔
    /// `WEST`; `XORk`, `TRANSPOSE`, `PARTNER`, `SELF` and moves along a dimension of two are
    /// their own opposites). `None` where it depends on the rank (trees: a parent names each
    /// child differently).
    pub fn opposite(&self, topo: &Topology) -> Option<Direction> {
        if &*self.name == "SELF" {
            return Some(self.clone());
        }
        match topo.kind {
            Kind::Cartesian | Kind::Moore | Kind::Bt6 => {
                // Wrapped as the neighbour names it: half-way round a periodic dimension
                // (a stride of 2 along 4) is the same offset both ways.
                let offset = topo.opposite(&self.offset);
                Some(Direction::new(direction_name(&offset), offset))
            }
            Kind::Tree => None,
            Kind::AllToAll => {
                let n = topo.n() as i64;
                let o = (n - self.offset.first().copied().unwrap_or(0)).rem_euclid(n);
                Some(Direction::new(format!("+{o}"), vec![o]))
            }
            Kind::Butterfly | Kind::Pairs => Some(self.clone()),
        }
    }
}

/// The other side of a point-to-point call, logically.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogicalPeer {
    /// A neighbour in the topology.
    Dir(Direction),
    /// `MPI_PROC_NULL`.
    Null,
    /// `MPI_ANY_SOURCE` never resolved.
    Any,
    /// Not a neighbour in the topology: the world rank, kept as an exception.
    Exception(u32),
}

/// The communicator of a call, logically.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogicalComm {
    /// `MPI_COMM_WORLD` (or a communicator with the same members).
    World,
    /// `MPI_COMM_SELF`.
    SelfComm,
    /// The ranks that share this rank's coordinates except along `free` dimensions: a row,
    /// column or plane of the topology.
    Slice {
        /// The dimensions that vary within the communicator.
        free: Vec<usize>,
    },
    /// Some other group of this size.
    Other {
        /// Number of members.
        size: usize,
        /// When the members' world ranks are evenly spaced: the spacing (1 for consecutive
        /// ranks, 2 for the even or odd ones of a block, …); 0 otherwise.
        #[serde(default)]
        stride: usize,
        /// Which split of the ranks into groups of this size and spacing the communicator
        /// belongs to, where the trace has groups of one shape that overlap (blocks of two and a
        /// pair across them): 0 for the first, and for every communicator of a shape whose
        /// groups are one split (see `groups::partitions`).
        #[serde(default, skip_serializing_if = "is_first_part")]
        part: u32,
    },
}

/// Whether a split number is the first (not written).
fn is_first_part(part: &u32) -> bool {
    *part == 0
}

/// Statistics of the compute gaps folded into one position. Their range (smallest and largest
/// gap) is [`LogicalOp::gap_range`], read from the samples: a logical program holds one of
/// these per call, millions in a long run, so it keeps only what the skeleton needs (40 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GapStats {
    /// Ranks × occurrences contributing.
    pub n: u32,
    /// Mean number of failed polls made at the end of the gap, before the call (folded by
    /// `mpiskel_trace::polls`).
    pub polls_mean: f32,
    /// Mean, seconds.
    pub mean_s: f64,
    /// Mean wall seconds from the previous call's return to this call's (the gap and the
    /// call's own time, waiting included); 0 where the trace holds no call times.
    pub span_mean_s: f32,
    /// Mean wall seconds of the gap the rank spent off the processor, where the trace recorded
    /// the gap's processor time (`mean_s` is then that processor time): part of `span_mean_s`,
    /// time a rank that shares its core waits for it while it computes, which shrinks with the
    /// computation where a skeleton cuts it.
    pub off_mean_s: f32,
    /// Mean user-space instructions, where the trace counted them.
    pub instructions_mean: OptionalMean,
    /// Mean floating-point operations, where the trace recorded them (SimGrid traces).
    pub flops_mean: OptionalMean,
}

/// An optional mean in eight bytes (an `Option<f64>` takes sixteen): NaN stands for none,
/// which a mean of counts never is.
#[derive(Debug, Clone, Copy)]
pub struct OptionalMean(f64);

impl OptionalMean {
    /// No mean: nothing was counted.
    pub const NONE: OptionalMean = OptionalMean(f64::NAN);

    /// The mean, if there is one.
    pub fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }

    /// Whether there is no mean.
    pub fn is_none(&self) -> bool {
        self.0.is_nan()
    }
}

impl Default for OptionalMean {
    fn default() -> OptionalMean {
        OptionalMean::NONE
    }
}

impl PartialEq for OptionalMean {
    fn eq(&self, other: &OptionalMean) -> bool {
        self.get() == other.get()
    }
}

impl From<Option<f64>> for OptionalMean {
    fn from(x: Option<f64>) -> OptionalMean {
        x.filter(|v| !v.is_nan()).map_or(OptionalMean::NONE, OptionalMean)
    }
}

/// The tag class of the tags a rank gives one message each way at most (sequence numbers):
/// one class for all of them, so that loops over such messages fold.
pub const SINGLE_MESSAGE_TAG: i32 = i32::MAX;

/// What identifies a logical call (everything but its timing).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OpKey {
    /// The operation.
    pub op: Op,
    /// Peer (destination of the send half for Sendrecv).
    pub peer: Option<LogicalPeer>,
    /// Source of the receive half of Sendrecv.
    pub source: Option<LogicalPeer>,
    /// Always 0 in the key (tags do not distinguish classes; see [`LogicalOp::tag_class`]).
    pub tag: i32,
    /// Bytes (sent, for Sendrecv and collectives).
    pub bytes: u64,
    /// Bytes received (Sendrecv and collectives).
    pub recv_bytes: u64,
    /// Communicator.
    pub comm: LogicalComm,
    /// Root of a rooted collective, as coordinates (within a row, column or plane: its
    /// coordinates along that slice's free dimensions).
    pub root: Option<Vec<usize>>,
    /// Requests given to a completion.
    pub given: u32,
    /// Requests a completion completed.
    pub done: u32,
    /// The receive was posted with `MPI_ANY_SOURCE` (`peer` is where the message came from).
    #[serde(default)]
    pub any_source: bool,
}

impl OpKey {
    /// The call `op` with nothing else said yet: no peer, no bytes, on `MPI_COMM_WORLD`.
    pub fn bare(op: Op) -> OpKey {
        OpKey {
            op,
            peer: None,
            source: None,
            tag: 0,
            bytes: 0,
            recv_bytes: 0,
            comm: LogicalComm::World,
            root: None,
            given: 0,
            done: 0,
            any_source: false,
        }
    }
}

/// The gaps of the ranks at one position, (rank, seconds): held in place for the one or two
/// ranks most classes have (a logical program has one entry per call of its representative,
/// millions in a long run), on the heap beyond.
pub type GapSamples = SmallVec<[(u32, f32); 2]>;

/// One call of a class's logical program (written to and read from JSON by `record.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "LogicalOpRecord", from = "LogicalOpRecord")]
pub struct LogicalOp {
    /// What the call is: shared by every position of the class that makes the same call (a
    /// class's program has a few hundred distinct calls at millions of positions).
    pub key: Arc<OpKey>,
    /// For completions: positions (in this sequence) of the calls whose requests it completes.
    pub completes: ThinVec<usize>,
    /// Compute gap before the call, over the class.
    pub gap: GapStats,
    /// The representative's tag class (order of first use; −1 for any tag;
    /// [`SINGLE_MESSAGE_TAG`] for tags that label one message each way).
    pub tag_class: i32,
    /// The representative's tag as traced (−1 for any tag; 0 for calls without one).
    pub traced_tag: i32,
    /// The gap of every contributing rank at this position, (rank, seconds): the
    /// distribution a skeleton draws its compute blocks from.
    pub gap_samples: GapSamples,
    /// The bytes sent at this position by each folded rank whose size differs from the
    /// representative's (`key.bytes`), by rank: an uneven decomposition's
    /// sizes per rank (NPB SP's multi-partition cells). Ranks not listed send `key.bytes`.
    pub rank_bytes: ThinVec<(u32, u64)>,
    /// Ranks of the class that do not make this point-to-point call (ascending): they make it
    /// toward `MPI_PROC_NULL`. Set where classes that differ by such calls were merged (a
    /// multigrid's coarse levels; see `guarded.rs`); a rank at a grid's edge that lacks a
    /// neighbour is not listed, its missing direction resolves to `MPI_PROC_NULL` by itself.
    pub absent: ThinVec<u32>,
}

impl LogicalOp {
    /// Bytes rank `r` (of the class) sends at this position.
    pub fn bytes_of(&self, r: u32) -> u64 {
        self.rank_bytes
            .binary_search_by_key(&r, |&(x, _)| x)
            .map_or(self.key.bytes, |i| self.rank_bytes[i].1)
    }

    /// Smallest and largest size (bytes sent) at this position over the class.
    pub fn bytes_range(&self) -> (u64, u64) {
        let b = self.key.bytes;
        self.rank_bytes.iter().fold((b, b), |(lo, hi), &(_, x)| (lo.min(x), hi.max(x)))
    }

    /// Smallest and largest gap, seconds, over the samples; (0, 0) without samples (a logical
    /// program read back from JSON keeps none).
    pub fn gap_range(&self) -> (f64, f64) {
        let mut xs = self.gap_samples.iter().map(|&(_, x)| f64::from(x));
        let Some(first) = xs.next() else { return (0.0, 0.0) };
        xs.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x)))
    }
}

/// Ranks that run one logical program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessClass {
    /// Ranks whose logical sequence is exactly this program.
    pub ranks: Vec<u32>,
    /// Ranks folded in: they skip calls to neighbours they do not have.
    pub folded: Vec<u32>,
    /// The rank whose sequence is the program.
    pub representative: u32,
    /// The program.
    pub ops: Vec<LogicalOp>,
}

/// Point-to-point calls to peers outside the topology.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Exceptions {
    /// How many calls.
    pub calls: u64,
    /// Which (rank, peer) pairs.
    pub pairs: Vec<(u32, u32)>,
}

/// A logical trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogicalTrace {
    /// Number of ranks.
    pub n_ranks: usize,
    /// The communication matrix.
    pub matrix: CommMatrix,
    /// Communicating pairs left out as insignificant.
    pub dropped_pairs: usize,
    /// The topology found and how.
    pub identification: Identification,
    /// Every direction the program uses.
    pub directions: Vec<Direction>,
    /// Process classes, largest first.
    pub classes: Vec<ProcessClass>,
    /// Calls to peers outside the topology.
    pub exceptions: Exceptions,
    /// The share of the variation of the ranks' computation over time that they all have at
    /// once ([`crate::common::shared_variation`]), where the trace tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_variation: Option<f64>,
    /// Whether the compute blocks are processor time: every rank's trace recorded it (`mpiskel
    /// trace` does by default); otherwise (`--wall-time`, other formats) they are wall time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub processor_time: bool,
    /// Whether the trace recorded how long calls took (native, OTF2 and DUMPI traces; SimGrid's
    /// time-independent traces do not): each position's [`GapStats::span_mean_s`] then holds
    /// its wall time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub call_times: bool,
    /// Stretches between collectives of all ranks that were cut short before the trace was
    /// made logical (`mpiskel_trace::stretch`): the skeleton scales the part of each it runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stretches: Vec<mpiskel_trace::stretch::StretchCut>,
    /// The groups of the communicators that are neither the world, a rank alone nor a slice
    /// of the topology ([`LogicalComm::Other`]), where the trace's are not the blocks of ranks
    /// their size and spacing give (ranks left out of a communicator, as `MPI_Comm_create`
    /// leaves out the ranks not in its group): see [`CommGroups`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comm_groups: Vec<CommGroups>,
}

/// The groups the trace's communicators of one size and spacing ([`LogicalComm::Other`]) form:
/// each rank's group, by a colour that the members of a group share. Recorded where the groups
/// are disjoint (one split of the ranks) and differ from the blocks their size and spacing give;
/// a rank in none of them has a colour of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommGroups {
    /// Members per group ([`LogicalComm::Other::size`]).
    pub size: usize,
    /// Spacing of their ranks ([`LogicalComm::Other::stride`]).
    pub stride: usize,
    /// Which split of that size and spacing ([`LogicalComm::Other::part`]).
    #[serde(default, skip_serializing_if = "is_first_part")]
    pub part: u32,
    /// Each rank's colour.
    pub colours: Vec<u32>,
}

impl LogicalTrace {
    /// The name of the structure found.
    pub fn topology_name(&self) -> String {
        match &self.identification.structure {
            Structure::Topology { name, .. } => name.clone(),
            Structure::General => "general graph".into(),
            Structure::NoPointToPoint => "no point-to-point topology".into(),
        }
    }

    /// The topology, if one was found.
    pub fn topology(&self) -> Option<&Topology> {
        match &self.identification.structure {
            Structure::Topology { topology, .. } => Some(topology),
            _ => None,
        }
    }
}

/// Names of offsets: compass directions in 2-D, LEFT/RIGHT in 1-D, ±x/±y/±z/±w beyond.
pub(crate) fn direction_name(offset: &[i64]) -> String {
    let d = offset.len();
    if d == 1 {
        return match offset[0] {
            -1 => "LEFT".into(),
            1 => "RIGHT".into(),
            o => format!("{o:+}"),
        };
    }
    if d == 2 && offset.iter().all(|o| o.abs() <= 1) {
        let ns = match offset[0] {
            -1 => "NORTH",
            1 => "SOUTH",
            _ => "",
        };
        let ew = match offset[1] {
            -1 => "WEST",
            1 => "EAST",
            _ => "",
        };
        return format!("{ns}{ew}");
    }
    let axes = ["x", "y", "z", "w"];
    offset
        .iter()
        .enumerate()
        .filter(|(_, o)| **o != 0)
        .map(|(k, o)| {
            let ax = axes.get(k).map_or_else(|| format!("d{k}"), |a| (*a).to_owned());
            match o {
                1 => format!("+{ax}"),
                -1 => format!("-{ax}"),
                o => format!("{o:+}{ax}"),
            }
        })
        .collect::<Vec<_>>()
        .join("")
}

/// A logical call as the JSON document holds it.
#[derive(Debug, Serialize, Deserialize)]
pub struct LogicalOpRecord {
    /// What the call is.
    #[serde(flatten)]
    key: Arc<OpKey>,
    /// For completions: positions of the calls whose requests it completes.
    #[serde(default, skip_serializing_if = "ThinVec::is_empty")]
    completes: ThinVec<usize>,
    /// Compute gap before the call, over the class.
    gap: GapRecord,
    /// Smallest and largest size (bytes sent) at this position over the class.
    bytes_range: (u64, u64),
    /// The representative's tag class.
    tag_class: i32,
    /// The representative's tag as traced.
    #[serde(default)]
    traced_tag: i32,
    /// Ranks of the class that make this call toward `MPI_PROC_NULL`.
    #[serde(default, skip_serializing_if = "ThinVec::is_empty")]
    absent: ThinVec<u32>,
}

/// [`GapStats`] with the range of the gaps.
#[derive(Debug, Serialize, Deserialize)]
struct GapRecord {
    /// Ranks × occurrences contributing.
    n: u32,
    /// Mean, seconds.
    mean_s: f64,
    /// Minimum, seconds.
    min_s: f64,
    /// Maximum, seconds.
    max_s: f64,
    /// Mean user-space instructions, where the trace counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instructions_mean: Option<f64>,
    /// Mean floating-point operations, where the trace recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flops_mean: Option<f64>,
    /// Mean number of failed polls made at the end of the gap.
    #[serde(default, skip_serializing_if = "is_zero")]
    polls_mean: f32,
    /// Mean wall seconds from the previous call's return to this call's, where the trace
    /// recorded call times.
    #[serde(default, skip_serializing_if = "is_zero")]
    span_mean_s: f32,
    /// Mean wall seconds of the gap off the processor, where the trace recorded the gap's
    /// processor time.
    #[serde(default, skip_serializing_if = "is_zero")]
    off_mean_s: f32,
}

fn is_zero(x: &f32) -> bool {
    *x == 0.0
}

impl From<LogicalOp> for LogicalOpRecord {
    fn from(op: LogicalOp) -> LogicalOpRecord {
        let (min_s, max_s) = op.gap_range();
        let g = op.gap;
        LogicalOpRecord {
            bytes_range: op.bytes_range(),
            key: op.key,
            completes: op.completes,
            gap: GapRecord {
                n: g.n,
                mean_s: g.mean_s,
                min_s,
                max_s,
                instructions_mean: g.instructions_mean.get(),
                flops_mean: g.flops_mean.get(),
                polls_mean: g.polls_mean,
                span_mean_s: g.span_mean_s,
                off_mean_s: g.off_mean_s,
            },
            tag_class: op.tag_class,
            traced_tag: op.traced_tag,
            absent: op.absent,
        }
    }
}

impl From<LogicalOpRecord> for LogicalOp {
    fn from(r: LogicalOpRecord) -> LogicalOp {
        let g = r.gap;
        LogicalOp {
            key: r.key,
            completes: r.completes,
            gap: GapStats {
                n: g.n,
                polls_mean: g.polls_mean,
                mean_s: g.mean_s,
                span_mean_s: g.span_mean_s,
                off_mean_s: g.off_mean_s,
                instructions_mean: g.instructions_mean.into(),
                flops_mean: g.flops_mean.into(),
            },
            tag_class: r.tag_class,
            traced_tag: r.traced_tag,
            gap_samples: GapSamples::new(),
            rank_bytes: ThinVec::new(),
            absent: r.absent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logical::OptionalMean;
    use mpiskel_trace::Op;

    fn op() -> LogicalOp {
        let key = OpKey { bytes: 800, ..OpKey::bare(Op::Send) };
        LogicalOp {
            key: Arc::new(key),
            completes: ThinVec::new(),
            gap: GapStats {
                n: 3,
                polls_mean: 1.5,
                mean_s: 2.0,
                span_mean_s: 2.5,
                off_mean_s: 0.25,
                instructions_mean: Some(1e6).into(),
                flops_mean: OptionalMean::NONE,
            },
            tag_class: 1,
            traced_tag: 7,
            gap_samples: [(0, 1.0), (2, 3.0), (5, 2.0)].into_iter().collect(),
            rank_bytes: ThinVec::from(vec![(2, 640), (5, 960)]),
            absent: ThinVec::new(),
        }
    }

    #[test]
    fn the_document_spells_out_the_ranges_the_op_derives() {
        let v = serde_json::to_value(op()).unwrap();
        assert_eq!(v["bytes_range"], serde_json::json!([640, 960]));
        assert_eq!(v["gap"]["min_s"], 1.0);
        assert_eq!(v["gap"]["max_s"], 3.0);
        assert_eq!(v["gap"]["instructions_mean"], 1e6);
        assert!(v["gap"].get("flops_mean").is_none(), "{v}");
        assert_eq!(v["bytes"], 800, "the key is flattened: {v}");
    }

    #[test]
    fn reading_back_keeps_the_means_and_drops_the_samples() {
        let back: LogicalOp = serde_json::from_value(serde_json::to_value(op()).unwrap()).unwrap();
        assert_eq!(back.gap, op().gap);
        assert_eq!(back.key, op().key);
        assert!(back.gap_samples.is_empty());
        assert_eq!(back.gap_range(), (0.0, 0.0));
    }

    #[test]
    fn a_logical_op_stays_small() {
        // 5 M calls of a real application must fit in a few hundred MB (104 bytes: 520 MB).
        assert!(std::mem::size_of::<LogicalOp>() <= 104, "{}", std::mem::size_of::<LogicalOp>());
    }
}
