//! The logical trace (Xu & Subhlok 2008, §2): every rank's calls with peers named by direction in the
//! identified topology, ranks with the same logical sequence grouped into process classes (as
//! Zhai et al. 2016, §5.4 groups processes by identical communication sequence), and classes at the edge
//! of a non-periodic grid folded into the interior class.
//!
//! **Folding.** A rank at the edge of a grid either calls with `MPI_PROC_NULL` where an interior
//! rank calls its neighbour, or skips the call (and its Wait). Its sequence folds into a class
//! with more calls when aligning the two, position by position, needs nothing but: a `NULL`
//! peer standing for a direction this rank has no neighbour in, calls to such directions
//! skipped, and completions of skipped requests skipped or completing fewer requests. The folded
//! rank then runs the class's program with the missing neighbour as `MPI_PROC_NULL`.
//!
//! Tags do not separate classes, since programs often compute tags from their rank; each call
//! keeps the representative's *tag class* (the order in which it first used each tag). Message
//! sizes may differ between the ranks of a class (uneven decompositions); each position keeps
//! the smallest and largest size.
//!
//! **Compute gaps** are the processor time of the rank's thread between calls where the trace
//! recorded it (the wall time otherwise), aggregated per position over every rank of the class (folded ranks at
//! the positions they align with) as the mean, with min, max and count, and the mean work
//! (instructions or flops) where the trace recorded it: the mean keeps the
//! class's total compute time, which is what a skeleton must reproduce; min and max show the
//! imbalance that the mean hides. Each position also keeps every rank's gap (in memory only), so
//! that a skeleton can reproduce the spread: in a bulk-synchronous step the slowest rank sets
//! the pace, and a skeleton computing only means would run faster than the application.
//!
//! **Exceptions.** A point-to-point peer that is not a neighbour in the topology is kept as an
//! explicit exception (its world rank), counted and reported, never dropped.
//!
//! The parts: `translate.rs` (each rank's calls with peers named by direction), `fold.rs` (edge
//! ranks folded into the interior class, compute gaps aggregated per position).
//!
//! # Complexity
//! O(events) to translate, O(classes² · sequence length) to fold.

use std::collections::{BTreeSet, HashMap};

use mpiskel_trace::{Op, Payload, TraceSet};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::catalogue::{Kind, Topology};
use crate::identify::{identify, normalize_declared, Identification, Structure};
use crate::matrix::CommMatrix;

mod fold;
mod guarded;
mod record;
mod translate;

use fold::*;
use std::sync::Arc;

use smallvec::SmallVec;
use thin_vec::ThinVec;

use translate::*;

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
    },
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
#[serde(into = "record::LogicalOpRecord", from = "record::LogicalOpRecord")]
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
    /// trace --cpu-time`); otherwise they are wall time.
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

/// Without point-to-point messages there is nothing to identify, but a program that declared a
/// Cartesian communicator over all ranks still has rows and columns: its layout is taken as the
/// topology, with each rank at the coordinates its Cartesian rank gives.
fn declared_layout(set: &TraceSet) -> Option<Identification> {
    let n = set.n_ranks();
    let rt = set.ranks.first()?;
    let (created, cart) = rt.events.iter().find_map(|e| match &e.payload {
        Payload::Comm { created: Some(c), cart: Some(cart), .. } if e.op == Op::CartCreate => {
            Some((*c, cart))
        }
        _ => None,
    })?;
    let members = rt.members(created)?;
    let dims: Vec<usize> = cart.dims.iter().map(|&d| d as usize).filter(|&d| d > 1).collect();
    if members.len() != n || dims.iter().product::<usize>() != n || dims.is_empty() {
        return None;
    }
    let periods: Vec<bool> = cart
        .dims
        .iter()
        .zip(&cart.periods)
        .filter(|(d, _)| **d > 1)
        .map(|(&d, &p)| p && d > 2)
        .collect();
    let topology = Topology::new(Kind::Cartesian, dims, periods);
    let mut node_of_rank = vec![0u32; n];
    for (cart_rank, world) in members.iter().enumerate() {
        node_of_rank[world.0 as usize] = cart_rank as u32;
    }
    let coords = node_of_rank.iter().map(|&v| topology.coords(v as usize)).collect();
    Some(Identification {
        n,
        structure: Structure::Topology {
            name: topology.name(),
            topology,
            alternatives: Vec::new(),
            rule: "declared by the program (MPI_Cart_create); no point-to-point messages to identify it from".into(),
        },
        stages: Vec::new(),
        node_of_rank,
        coords,
        edges: 0,
    })
}

/// Builds the logical trace of a trace set.
pub fn logicalize(set: &TraceSet) -> LogicalTrace {
    let found = find_topology(set);
    let per_rank = {
        let namer = found.namer();
        set.ranks.par_iter().map(|rt| translate(rt, &namer)).collect()
    };
    logical_trace(found, per_rank)
}

/// [`logicalize`], taking the trace set: each rank's calls are freed as soon as they are
/// translated, so that the calls and the classes made of them are never held at once (NPB LU A
/// on 64 ranks: 7.1 M calls of about 150 bytes each, beside their translation).
pub fn logicalize_owned(set: TraceSet) -> LogicalTrace {
    let found = find_topology(&set);
    let per_rank = {
        let namer = found.namer();
        // With no more ranks than threads every rank would be translated at once, each rank's
        // calls held beside every translation; one at a time, each rank's calls are freed before
        // the next one's translation grows (2 ranks of 2.5 million calls: 150 MB less).
        if set.ranks.len() > rayon::current_num_threads() {
            set.ranks.into_par_iter().map(|rt| translate(&rt, &namer)).collect()
        } else {
            set.ranks.into_iter().map(|rt| translate(&rt, &namer)).collect()
        }
    };
    logical_trace(found, per_rank)
}

/// What is known of a trace set before its calls are translated.
struct Found {
    n_ranks: usize,
    matrix: CommMatrix,
    dropped_pairs: usize,
    ident: Identification,
    shared_variation: Option<f64>,
    processor_time: bool,
    call_times: bool,
}

impl Found {
    fn namer(&self) -> Namer<'_> {
        let topo = match &self.ident.structure {
            Structure::Topology { topology, .. } => Some(topology),
            _ => None,
        };
        Namer { ident: &self.ident, topo }
    }
}

/// The communication matrix, the topology and the ranks' shared variation of a trace set.
fn find_topology(set: &TraceSet) -> Found {
    let matrix = CommMatrix::of(set);
    let (graph, dropped_pairs) = matrix.significant_graph();
    let declared = set.ranks.first().and_then(|rt| {
        rt.events.iter().find_map(|e| match &e.payload {
            Payload::Comm { cart: Some(c), .. } if e.op == Op::CartCreate => {
                normalize_declared(&c.dims, &c.periods)
            }
            _ => None,
        })
    });
    let mut ident = identify(&graph, declared.as_ref());
    if ident.structure == Structure::NoPointToPoint {
        if let Some(d) = declared_layout(set) {
            ident = d;
        }
    }
    Found {
        n_ranks: set.n_ranks(),
        matrix,
        dropped_pairs,
        ident,
        shared_variation: crate::common::shared_variation(set),
        processor_time: !set.ranks.is_empty() && set.ranks.iter().all(|r| r.info.has_cpu_time),
        call_times: set.ranks.iter().any(|r| r.events.iter().any(|e| e.exit_ns > e.enter_ns)),
    }
}

/// The logical trace from the ranks' translated calls.
fn logical_trace(found: Found, per_rank: Vec<(Vec<OpKey>, Translated)>) -> LogicalTrace {
    let topo = match &found.ident.structure {
        Structure::Topology { topology, .. } => Some(topology),
        _ => None,
    };
    let ident = &found.ident;
    // Each rank was translated against its own table of distinct calls; the tables are merged
    // into one, in rank order, so that every distinct call gets one number and sequences
    // compare as numbers.
    let mut keys = Keys::default();
    let translated: Vec<Translated> = per_rank
        .into_iter()
        .map(|(local, mut t)| {
            let global: Vec<u32> = local.into_iter().map(|k| keys.id(k)).collect();
            for id in &mut t.ids {
                *id = global[*id as usize];
            }
            t
        })
        .collect();
    let ids: Vec<&[u32]> = translated.iter().map(|t| t.ids.as_slice()).collect();

    // Exceptions and directions.
    let mut exceptions = Exceptions::default();
    let mut directions: BTreeSet<Direction> = BTreeSet::new();
    let mut pairs: BTreeSet<(u32, u32)> = BTreeSet::new();
    for k in &keys.table {
        for p in [&k.peer, &k.source].into_iter().flatten() {
            if let LogicalPeer::Dir(d) = p {
                directions.insert(d.clone());
            }
        }
    }
    for (r, seq) in ids.iter().enumerate() {
        for &id in *seq {
            let k = &keys.table[id as usize];
            for p in [&k.peer, &k.source].into_iter().flatten() {
                if let LogicalPeer::Exception(o) = p {
                    exceptions.calls += 1;
                    pairs.insert((r as u32, *o));
                }
            }
        }
    }
    exceptions.pairs = pairs.into_iter().collect();

    // Classes of identical sequences, largest first (then longest, then lowest rank).
    let mut groups: HashMap<&[u32], Vec<u32>> = HashMap::new();
    for (r, seq) in ids.iter().enumerate() {
        groups.entry(seq).or_default().push(r as u32);
    }
    let mut groups: Vec<Vec<u32>> = groups.into_values().collect();
    groups.sort_by_key(|g| {
        (std::cmp::Reverse(ids[g[0] as usize].len()), std::cmp::Reverse(g.len()), g[0])
    });

    // Fold edge classes into the classes before them.
    // (members, folded ranks with their alignment to the representative)
    let mut classes: Vec<(Vec<u32>, Folded)> = Vec::new();
    'group: for g in groups {
        let r = g[0] as usize;
        let missing = missing_directions(ident, topo, r);
        for (members, folded) in &mut classes {
            let rep = members[0] as usize;
            let a = (ids[rep], &translated[rep].links);
            if align(&keys.table, a, ids[r], &missing).is_none() {
                continue;
            }
            // Every member must align (their missing directions may differ).
            let maps: Option<Vec<(u32, Vec<Option<usize>>)>> = g
                .iter()
                .map(|&m| {
                    let mm = missing_directions(ident, topo, m as usize);
                    align(&keys.table, a, ids[m as usize], &mm).map(|map| (m, map))
                })
                .collect();
            if let Some(maps) = maps {
                folded.extend(maps);
                continue 'group;
            }
        }
        classes.push((g, Vec::new()));
    }

    // Classes that differ by calls some ranks do not make, merged with guards (guarded.rs).
    let plans = guarded::applies(topo, classes.len()).then(|| {
        let mut shape = guarded::shapes(&keys);
        let mut plans: Vec<guarded::Plan> = Vec::new();
        for (members, folded) in &classes {
            let rep = members[0] as usize;
            let p = guarded::Plan::of_class(members, folded, ids[rep], &translated[rep].links);
            let merged = plans
                .iter()
                .enumerate()
                .find_map(|(i, q)| guarded::merge(&mut keys, &mut shape, q, &p).map(|m| (i, m)));
            match merged {
                Some((i, m)) => plans[i] = m,
                None => plans.push(p),
            }
        }
        plans
    });
    let table = keys.table;

    // Each rank's translation is freed as soon as its class has taken what it needs.
    let mut translated = translated;
    let classes = match plans {
        Some(plans) => {
            let shared: Vec<Arc<OpKey>> = table.iter().cloned().map(Arc::new).collect();
            plans.into_iter().map(|p| guarded::build(p, &table, &shared, &mut translated)).collect()
        }
        None => exact_classes(classes, &table, &mut translated),
    };

    LogicalTrace {
        n_ranks: found.n_ranks,
        directions: directions.into_iter().collect(),
        classes,
        exceptions,
        shared_variation: found.shared_variation,
        processor_time: found.processor_time,
        call_times: found.call_times,
        matrix: found.matrix,
        dropped_pairs: found.dropped_pairs,
        identification: found.ident,
        stretches: Vec::new(),
    }
}

/// The ranks folded into a class, each with its alignment to the class's program.
type Folded = Vec<(u32, Vec<Option<usize>>)>;

/// Positions per block of a class's gap accumulators ([`exact_classes`]): a class of millions
/// of calls does not hold an accumulator for each (96 bytes) beside its calls while they are
/// made, only a block's.
const ACC_BLOCK: usize = 1 << 16;

/// The classes of the exact fold: each member's gaps at every position, each folded rank's at
/// the positions it aligned with.
fn exact_classes(
    classes: Vec<(Vec<u32>, Folded)>,
    table: &[OpKey],
    translated: &mut [Translated],
) -> Vec<ProcessClass> {
    let mut built = Vec::with_capacity(classes.len());
    for (ranks, folded) in classes {
        let rep = ranks[0] as usize;
        let n_ops = translated[rep].ids.len();
        let key = |t: &Translated, i: usize| &table[t.ids[i] as usize];
        // One shared copy of each distinct call for the class's positions.
        let shared: Vec<Arc<OpKey>> = table.iter().cloned().map(Arc::new).collect();
        // The gaps' accumulators in blocks, each freed once its positions are made calls.
        let mut acc: Vec<Vec<GapAcc>> = (0..n_ops)
            .step_by(ACC_BLOCK)
            .map(|s| (s..n_ops.min(s + ACC_BLOCK)).map(|_| GapAcc::default()).collect())
            .collect();
        let at = |i: usize| (i / ACC_BLOCK, i % ACC_BLOCK);
        // (position, folded rank, bytes) where a folded rank sends another size than the
        // representative: few, so listed apart rather than as a list per position.
        let mut rank_bytes: Vec<(usize, u32, u64)> = Vec::new();
        for &r in &ranks {
            let gaps = std::mem::take(&mut translated[r as usize].gaps);
            for (i, g) in gaps.iter().enumerate() {
                let (b, k) = at(i);
                acc[b][k].add(r, *g);
            }
        }
        for (r, map) in &folded {
            let other = std::mem::take(&mut translated[*r as usize]);
            for (i, j) in map.iter().enumerate() {
                if let Some(j) = j {
                    let bytes = table[other.ids[*j] as usize].bytes;
                    let (b, k) = at(i);
                    acc[b][k].add(*r, other.gaps[*j]);
                    if bytes != key(&translated[rep], i).bytes {
                        rank_bytes.push((i, *r, bytes));
                    }
                }
            }
        }
        rank_bytes.sort_by_key(|&(i, _, _)| i);
        let mut rank_bytes = rank_bytes.into_iter().peekable();
        let t = &translated[rep];
        let mut ops = Vec::with_capacity(n_ops.min(t.tag_classes.len()));
        'blocks: for block in acc {
            for a in block {
                let i = ops.len();
                let Some(&tags) = t.tag_classes.get(i) else { break 'blocks };
                let mut bytes = Vec::new();
                while let Some((_, r, b)) = rank_bytes.next_if(|&(p, _, _)| p == i) {
                    bytes.push((r, b));
                }
                let completes = t.links.get(i).iter().map(|&p| p as usize).collect();
                let key = Arc::clone(&shared[t.ids[i] as usize]);
                ops.push(gathered_op(key, completes, a, tags, bytes, Vec::new()));
            }
        }
        for &r in &ranks {
            translated[r as usize] = Translated::default();
        }
        let mut folded_ranks: Vec<u32> = folded.iter().map(|(r, _)| *r).collect();
        folded_ranks.sort_unstable();
        built.push(ProcessClass { ranks, folded: folded_ranks, representative: rep as u32, ops });
    }
    built
}
