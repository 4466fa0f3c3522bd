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

use crate::catalogue::{Kind, Topology};
use crate::identify::{identify, normalize_declared, Identification, Structure};
use crate::matrix::CommMatrix;

mod fold;
mod groups;
mod guarded;
mod model;
mod translate;

pub use groups::strided_colour;
pub use model::*;

use fold::*;
use std::sync::Arc;

use thin_vec::ThinVec;

use translate::*;

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
    single_tags: std::collections::HashSet<i32>,
    /// The splits of the communicators' groups ([`groups::partitions`]).
    parts: std::collections::HashMap<Vec<u32>, u32>,
}

impl Found {
    fn namer(&self) -> Namer<'_> {
        let topo = match &self.ident.structure {
            Structure::Topology { topology, .. } => Some(topology),
            _ => None,
        };
        Namer { ident: &self.ident, topo, single_tags: &self.single_tags, parts: &self.parts }
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
    let mut found = Found {
        n_ranks: set.n_ranks(),
        matrix,
        dropped_pairs,
        ident,
        shared_variation: crate::common::shared_variation(set),
        processor_time: !set.ranks.is_empty() && set.ranks.iter().all(|r| r.info.has_cpu_time),
        call_times: set.ranks.iter().any(|r| r.events.iter().any(|e| e.exit_ns > e.enter_ns)),
        single_tags: translate::single_message_tags(set),
        parts: std::collections::HashMap::new(),
    };
    let groups: Vec<_> = {
        let namer = found.namer();
        set.ranks.par_iter().flat_map_iter(|rt| namer.other_groups(rt)).collect()
    };
    found.parts = groups::partitions(groups.into_iter());
    found
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
    let comm_groups = groups::comm_groups(found.n_ranks, translated.iter().map(|t| &t.groups));

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
        comm_groups,
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
