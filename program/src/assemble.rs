//! The whole program from a logical trace and one loop nest per class: tags per channel,
//! directions, communicators, each class's calls and compute blocks, receive counts, phases.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mpiskel_compress::{LoopNest, Node};
use mpiskel_logicalize::{Kind, LogicalComm, LogicalPeer, LogicalTrace, ProcessClass, Structure};
use mpiskel_trace::stretch::StretchCut;
use mpiskel_trace::OpClass;

use super::calls::*;
use super::layout::*;
use super::lower::*;
use super::*;

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
    /// A stretch cut short has no place of its own in a class's program: a loop found there
    /// runs across one of its ends, or the class makes fewer collectives of all ranks.
    #[error("class {class} has no phase boundary at the ends of stretch {stretch} (cut short)")]
    Stretch {
        /// Class.
        class: usize,
        /// The stretch ([`mpiskel_trace::stretch::StretchCut::index`]).
        stretch: usize,
    },
}

/// The positions `from..to` of `class`'s program that the stretch after its `index`-th
/// blocking collective of all ranks covers (up to the next one; `mpiskel_trace::stretch`), if
/// it makes that many and one more.
pub fn stretch_range(class: &ProcessClass, index: usize) -> Option<(u64, u64)> {
    let mut of_all = class.ops.iter().enumerate().filter(|(_, o)| {
        o.key.op.class() == OpClass::Collective
            && o.key.op.code() < mpiskel_trace::Op::Ibarrier.code()
            && o.key.comm == LogicalComm::World
    });
    let (a, _) = of_all.nth(index.checked_sub(1)?)?;
    let (b, _) = of_all.next()?;
    Some((a as u64 + 1, b as u64))
}

/// The parts of `class`'s program that the skeleton runs of stretch `s`, cut short
/// ([`stretch_range`]), each as positions `from..to` with the scale of its time: the first half
/// of its calls counted once, the second scaled to stand for the rest of the stretch. The calls
/// after a collective of all ranks run faster than the stretch's pace until the ranks drift
/// apart as the stretch makes them (a stretch of drawn exchanges on 4 ranks, both simulated:
/// its first 4 % scaled as a whole to 7 % short of the whole stretch, its first 2 % 17 %), so
/// the pace of the second half is taken for the rest. One part, scaled, where the stretch kept
/// a single call.
pub fn stretch_parts(class: &ProcessClass, s: &StretchCut) -> Option<Vec<(u64, u64, f64)>> {
    let (a, b) = stretch_range(class, s.index)?;
    let scale = s.scale();
    if b < a + 2 {
        return Some(vec![(a, b, scale)]);
    }
    let m = a + (b - a) / 2;
    // (b - a)·scale calls stand for the whole; the first m - a count once.
    let rest = ((b - a) as f64 * scale - (m - a) as f64) / (b - m) as f64;
    Some(vec![(a, m, 1.0), (m, b, rest.max(1.0))])
}

/// The parts of `class`'s program that the skeleton runs of each stretch of `lt` cut short
/// ([`stretch_parts`]).
fn stretch_positions(
    lt: &LogicalTrace,
    class: &ProcessClass,
    ci: usize,
) -> Result<Vec<(u64, u64, f64)>, BuildError> {
    let mut out = Vec::new();
    for s in &lt.stretches {
        out.extend(
            stretch_parts(class, s).ok_or(BuildError::Stretch { class: ci, stretch: s.index })?,
        );
    }
    Ok(out)
}

/// Builds the skeleton program from a logical trace and one loop nest per class (compressed
/// from [`crate::symbols::symbolize_class`], with its gap weights attached), one tag per
/// channel ([`Tags::Channels`]).
pub fn build(lt: &LogicalTrace, nests: &[LoopNest]) -> Result<Skeleton, BuildError> {
    build_tagged(lt, nests, Tags::Channels)
}

/// How the skeleton tags its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tags {
    /// One tag per channel (direction), whatever tag the application gave the message: the
    /// ranks of a class may tag theirs differently (by their own rank, by step), and the
    /// skeleton's ranks run one program. Messages that receives from any source take keep a
    /// tag of their own per traced tag (the representative's).
    Channels,
    /// Every traced tag (the representative's) a tag of its own, on every channel: where a
    /// channel carries messages of several tags and the application received them in another
    /// order than they were sent (a receive for a later message posted first, LAMMPS's tiled
    /// communication), one tag per channel makes a receive take the wrong message.
    Traced,
}

/// [`build`] with the messages tagged as `tags` says.
pub fn build_tagged(
    lt: &LogicalTrace,
    nests: &[LoopNest],
    tags: Tags,
) -> Result<Skeleton, BuildError> {
    if nests.len() != lt.classes.len() {
        return Err(BuildError::NestCount { nests: nests.len(), classes: lt.classes.len() });
    }
    let n = lt.n_ranks as u32;
    let topo = lt.topology();
    let layout = layout_of(lt);
    let (directions, any_tags) = directions_and_tags(lt, tags);
    let dir_index: HashMap<&str, usize> =
        lt.directions.iter().enumerate().map(|(i, d)| (&*d.name, i)).collect();
    let peer = |p: &Option<LogicalPeer>| peer_of(&dir_index, p);

    let mut comms = vec![Comm::World];
    let mut comm_index = |c: &LogicalComm| -> usize {
        let want = Comm::of(c, lt);
        comms.iter().position(|x| *x == want).unwrap_or_else(|| {
            comms.push(want);
            comms.len() - 1
        })
    };

    let mut class_of_rank = vec![0u32; n as usize];
    let mut programs = Vec::with_capacity(lt.classes.len());
    // First pass: per class, per leaf, the call it makes (slots assigned per class, shared
    // numbering across classes since every rank runs only one class).
    let mut matching = MatchingReport {
        local_policy: "kept: the whole program is checked for deadlock before it is emitted".into(),
        ..MatchingReport::default()
    };
    let mut max_slots = 0u32;
    let mut tables = ComputeTables::default();
    let mut rank_weight = vec![1.0f64; n as usize];
    let mut size_tables: Vec<Vec<u64>> = Vec::new();
    let mut presence_tables: Vec<Vec<bool>> = Vec::new();
    let collective_sizes = agreed_collective_sizes(lt, nests);
    for (ci, (class, nest)) in lt.classes.iter().zip(nests).enumerate() {
        for &r in class.ranks.iter().chain(&class.folded) {
            if let Some(x) = class_of_rank.get_mut(r as usize) {
                *x = ci as u32;
            }
        }
        let m = crate::matching::balance_class(class, topo);
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
        let (slot_of_leaf, completes_leaves, next_slot) = request_slots(class, nest, &lm);
        max_slots = max_slots.max(next_slot);
        let calls: Vec<Option<Call>> = (0..lm.positions.len())
            .map(|leaf| {
                let p = lm.positions[leaf][0];
                let op = &class.ops[p];
                let ps = &lm.positions[leaf];
                let bytes = leaf_bytes(class, &m, ps);
                let completes: Vec<u32> = completes_leaves
                    .get(&leaf)
                    .map(|s| {
                        let slots = s.iter().filter_map(|l| slot_of_leaf.get(l));
                        slots.flat_map(|r| r.base..r.base + r.ring).collect()
                    })
                    .unwrap_or_default();
                let mut call = call_of(
                    op,
                    probed_any_source(class, p),
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
                    *sizes = rank_sizes(class, ps, n).map(|t| table_index(&mut size_tables, t));
                }
                if !op.absent.is_empty() {
                    if let Some(
                        call @ (Call::Send { .. }
                        | Call::Recv { .. }
                        | Call::SendRecv { .. }
                        | Call::Probe { .. }),
                    ) = &mut call
                    {
                        guard(call, table_index(&mut presence_tables, presence(class, ps, n)));
                    }
                }
                call
            })
            .collect();
        rank_weights(class, &mut rank_weight);
        let gaps = gaps_of(lt, class, &leaf_nodes, &lm, &rank_weight, &mut tables);
        let stretches = stretch_positions(lt, class, ci)?;
        // The leaf map is not needed past here: freed before the next class is lowered (a
        // class of millions of calls that fold into no loop has a leaf per call).
        drop(lm);
        programs.push((class, nest, calls, gaps, stretches));
    }

    let (classes, send_bytes, recv_bytes) =
        classes_with_buffers(lt, programs, &comms, &size_tables)?;
    Ok(Skeleton {
        n_ranks: n,
        topology: lt.topology_name(),
        layout,
        directions,
        message_tags: any_tags.iter().map(|(&t, &v)| (t, v)).collect(),
        all_tags: tags == Tags::Traced,
        comms,
        classes,
        class_of_rank,
        grid_coords: grid_coords(lt),
        n_slots: max_slots,
        reused_slots: Vec::new(),
        send_bytes: send_bytes.max(8),
        recv_bytes: recv_bytes.max(8),
        matching,
        distributions: tables.distributions,
        rank_weight,
        size_tables,
        presence_tables,
        compute_factors: tables.compute_factors,
        send_buffer: None,
        replays: Vec::new(),
        processor_time: lt.processor_time,
        call_times: lt.call_times,
    })
}

/// Sizes after balancing of the positions `ps` of one leaf: the first occurrence's (balancing
/// is per position and positions of one leaf share a key) — or, for a leaf of a time step whose
/// sizes vary from step to step, their mean, which carries the bytes of the channel over the run.
fn leaf_bytes(class: &ProcessClass, m: &Balanced, ps: &[usize]) -> u64 {
    let size = |p: usize| match m.bytes.get(p) {
        Some(&b) if b > 0 => b,
        _ => class.ops[p].key.bytes,
    };
    if ps.iter().all(|&q| class.ops[q].key.bytes == class.ops[ps[0]].key.bytes) {
        size(ps[0])
    } else {
        let total: u128 = ps.iter().map(|&q| u128::from(size(q))).sum();
        (total as f64 / ps.len() as f64).round() as u64
    }
}

/// Whether the call at `p` follows a probe of any source of the same peer: a receive right
/// after one takes whatever the probe found, so it is a receive from any source too.
fn probed_any_source(class: &ProcessClass, p: usize) -> bool {
    p > 0 && {
        let (prev, key) = (&class.ops[p - 1].key, &class.ops[p].key);
        prev.op.class() == OpClass::Probe && prev.any_source && prev.peer == key.peer
    }
}

/// The index of `t` in `tables`, appended where it is not there yet.
fn table_index<T: PartialEq>(tables: &mut Vec<T>, t: T) -> usize {
    tables.iter().position(|x| *x == t).unwrap_or_else(|| {
        tables.push(t);
        tables.len() - 1
    })
}

/// A logical peer as the IR's, directions by their index.
fn peer_of(dir_index: &HashMap<&str, usize>, p: &Option<LogicalPeer>) -> Peer {
    match p {
        Some(LogicalPeer::Dir(d)) => dir_index.get(&*d.name).map_or(Peer::Null, |&i| Peer::Dir(i)),
        Some(LogicalPeer::Null) | None => Peer::Null,
        Some(LogicalPeer::Any) => Peer::Any,
        Some(LogicalPeer::Exception(r)) => Peer::Rank(*r),
    }
}

/// Each rank's grid coordinates where the topology is a grid, none otherwise.
fn grid_coords(lt: &LogicalTrace) -> Vec<Vec<usize>> {
    match lt.topology() {
        Some(t) if matches!(t.kind, Kind::Cartesian | Kind::Moore | Kind::Bt6) => {
            lt.identification.coords.clone()
        }
        _ => Vec::new(),
    }
}

/// How ranks find their neighbours: a Cartesian communicator where the ranks lie row-major in
/// the topology, a table otherwise, none without point-to-point calls.
fn layout_of(lt: &LogicalTrace) -> Layout {
    let n = lt.n_ranks as u32;
    match &lt.identification.structure {
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
    }
}

/// The directions with their tags (one per channel, in order of direction), and the traced tags
/// that get a tag of their own: those of messages that receives from any source take, or with
/// [`Tags::Traced`] every one.
fn directions_and_tags(lt: &LogicalTrace, mode: Tags) -> (Vec<Dir>, BTreeMap<i32, i32>) {
    let topo = lt.topology();
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
                let p2p = matches!(
                    op.key.op.class(),
                    OpClass::Send | OpClass::Recv | OpClass::Probe | OpClass::SendRecv
                );
                let receives = matches!(op.key.op.class(), OpClass::Recv | OpClass::Probe);
                let own = match mode {
                    Tags::Traced => p2p,
                    Tags::Channels => {
                        receives && crate::symbols::takes_from_any_source(&class.ops, i)
                    }
                };
                if own && op.traced_tag >= 0 {
                    tags.insert(crate::calls::message_tag_key(op));
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
            } else if &*d.name == "SELF" {
                // A message to self comes back on its own channel.
                "SELF".to_owned()
            } else if &*d.name == "PARENT" {
                "CHILD".to_owned()
            } else {
                match topo {
                    Some(t) => d.opposite(t).map_or_else(String::new, |o| o.name.to_string()),
                    None => format!("{:+}", -d.offset.first().copied().unwrap_or(0)),
                }
            };
            let recv_tag = channels.get(&channel(&back)).copied().unwrap_or(0);
            Dir {
                name: d.name.to_string(),
                ident: ident_of(&d.name),
                offset: d.offset.to_vec(),
                tag: channels[&channel(&d.name)],
                recv_tag,
            }
        })
        .collect();
    (directions, any_tags)
}

/// Request slots of one class: each non-blocking start leaf gets one (or a ring of them, when
/// an inner loop starts it several times before anything completes it); the leaves one
/// completion finishes get consecutive slots, in order of the completions. Returns the slot of
/// each start leaf, the leaves each completion leaf finishes, and the slots used.
fn request_slots(
    class: &ProcessClass,
    nest: &LoopNest,
    lm: &LeafMap,
) -> (HashMap<usize, SlotRef>, HashMap<usize, BTreeSet<usize>>, u32) {
    let mut next_slot = 0;
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
        if slot_of_leaf.contains_key(&l) || !starts_request(class, lm, l) {
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
    (slot_of_leaf, completes_leaves, next_slot)
}

/// Each rank's systematic weight: its recorded computation over the class's mean program's.
///
/// A rank folded into a class may lack some of its positions (a rank on the grid's boundary
/// makes no call to the neighbour it lacks; a rank of a multigrid that does not hold a coarse
/// level skips its exchanges); the computation around such a call is in its next
/// call's gap, so its gaps hold all of its computation, and the skeleton runs every block of
/// the class program on it. Its weight is therefore its total over the total of every
/// position's mean, not over the positions it has (which counted its merged gaps against
/// single blocks: a corner rank of a 4 × 4 wavefront ran 1.4 times its computation).
fn rank_weights(class: &ProcessClass, rank_weight: &mut [f64]) {
    let mut own = HashMap::<u32, f64>::new();
    let mut all = 0.0;
    for op in &class.ops {
        all += op.gap.mean_s;
        for &(r, x) in &op.gap_samples {
            *own.entry(r).or_default() += f64::from(x);
        }
    }
    if all <= 0.0 {
        return;
    }
    for (r, o) in &own {
        if let Some(w) = rank_weight.get_mut(*r as usize) {
            *w = o / all;
        }
    }
}

/// The distributions and per-rank factors of the compute blocks of every class.
#[derive(Default)]
struct ComputeTables {
    distributions: Vec<Dist>,
    compute_factors: Vec<Vec<f64>>,
}

/// The compute block before each leaf of a class: its mean, the distribution its durations are
/// drawn from and its per-rank factors (added to `tables`).
fn gaps_of(
    lt: &LogicalTrace,
    class: &ProcessClass,
    leaf_nodes: &[Node],
    lm: &LeafMap,
    rank_weight: &[f64],
    tables: &mut ComputeTables,
) -> Vec<Gap> {
    leaf_nodes
        .iter()
        .enumerate()
        .map(|(leaf, l)| {
            let mean = match l {
                Node::Sym { stats: Some(s), .. } => s.mean,
                _ => 0.0,
            };
            let groups: Vec<&[(u32, f32)]> =
                lm.positions[leaf].iter().map(|&p| class.ops[p].gap_samples.as_slice()).collect();
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
                    let mut table = vec![1.0; lt.n_ranks];
                    for (&r, &x) in &f {
                        if let Some(t) = table.get_mut(r as usize) {
                            *t = x;
                        }
                    }
                    tables.compute_factors.push(table);
                    let d = crate::spread::quantiles_of(own, own_mean)
                        .map(|d| Dist { q: d.q.iter().map(|x| x * mean).collect() });
                    (d, Some(tables.compute_factors.len() - 1))
                }
                None => (distribution(&groups, &weight, lt.shared_variation), None),
            };
            let dist = dist.map(|d| {
                tables.distributions.push(d);
                tables.distributions.len() - 1
            });
            // The polls made before the call: the mean over every execution of the leaf.
            let (n, sum) = lm.positions[leaf].iter().fold((0u64, 0.0), |(n, s), &p| {
                let g = &class.ops[p].gap;
                (n + u64::from(g.n), s + f64::from(g.polls_mean) * f64::from(g.n))
            });
            let polls = if n > 0 { sum / n as f64 } else { 0.0 };
            // The wall time beyond the gap until the call returns, where the trace holds call
            // times, the same way.
            let wait_sum = lm.positions[leaf].iter().fold(0.0, |s, &p| {
                let g = &class.ops[p].gap;
                s + (f64::from(g.span_mean_s) - g.mean_s).max(0.0) * f64::from(g.n)
            });
            let wait = if lt.call_times && n > 0 { wait_sum / n as f64 } else { 0.0 };
            // Of that, the time off the processor during the block.
            let off_sum = lm.positions[leaf].iter().fold(0.0, |s, &p| {
                let g = &class.ops[p].gap;
                s + f64::from(g.off_mean_s) * f64::from(g.n)
            });
            let off = if lt.call_times && n > 0 { (off_sum / n as f64).min(wait) } else { 0.0 };
            Gap { seconds: mean, dist, factors, polls, wait, off }
        })
        .collect()
}

/// One class's calls and compute blocks, by leaf of its nest, before receive counts are set.
/// A class, its nest, its calls, its gaps and its stretches cut short.
type ClassCalls<'a> =
    (&'a ProcessClass, &'a LoopNest, Vec<Option<Call>>, Vec<Gap>, Vec<(u64, u64, f64)>);

/// Sets receive counts (the largest size each channel carries) and the receive buffer's regions
/// (one shared by blocking receives and collectives, then the non-blocking receives' slots, a
/// region reused by slots never pending at once: `regions.rs`), and splits each class into
/// phases. Returns the classes, and the bytes of the send and receive buffers.
fn classes_with_buffers(
    lt: &LogicalTrace,
    programs: Vec<ClassCalls<'_>>,
    comms: &[Comm],
    size_tables: &[Vec<u64>],
) -> Result<(Vec<ClassProgram>, u64, u64), BuildError> {
    // Receive counts: the largest size each channel carries.
    let largest = |c: &Call| largest_send(c, size_tables);
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
    for (ci, (class, nest, mut calls, gaps, stretches)) in programs.into_iter().enumerate() {
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
        // Where each slot group is live: from the first place of the nest that names one of
        // its slots to the last, a place inside a top-level loop standing for the whole loop.
        let spans: Vec<(usize, usize)> = leaf_loops(&nest.items)
            .iter()
            .enumerate()
            .map(|(leaf, loops)| loops.first().map_or((leaf, leaf), |l| (l.lo, l.hi - 1)))
            .collect();
        let group_of = |slot: u32| {
            region.range(..=slot).next_back().filter(|(b, r)| slot < *b + r.1).map(|(b, _)| *b)
        };
        let mut live: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
        let mut completed = BTreeSet::new();
        for (leaf, c) in calls.iter().enumerate() {
            let named: Vec<u32> = match c {
                Some(Call::Recv { slot: Some(s), .. }) => vec![s.base],
                Some(Call::Complete { slots, .. }) => slots.clone(),
                _ => continue,
            };
            let (lo, hi) = spans.get(leaf).copied().unwrap_or((leaf, leaf));
            for g in named.into_iter().filter_map(group_of) {
                let e = live.entry(g).or_insert((lo, hi));
                *e = (e.0.min(lo), e.1.max(hi));
                if matches!(c, Some(Call::Complete { .. })) {
                    completed.insert(g);
                }
            }
        }
        let needs: BTreeMap<u32, super::regions::Need> = region
            .iter()
            .map(|(&s, &(b, ring))| {
                // A receive nothing completes stays pending to the end.
                let (from, to) = live.get(&s).copied().unwrap_or((0, usize::MAX));
                let to = if completed.contains(&s) { to } else { usize::MAX };
                (s, super::regions::Need { from, to, bytes: round8(b) * u64::from(ring) })
            })
            .collect();
        let (offsets, at) = super::regions::assign(&needs, round8(shared));
        recv_bytes = recv_bytes.max(at);
        for c in calls.iter_mut().flatten() {
            if let Call::Recv { slot: Some(s), offset, .. } = c {
                *offset = offsets[&s.base];
            }
        }
        let phases = phases_of(&nest.items, &calls, &gaps, class, &stretches)
            .map_err(|s| BuildError::Stretch { class: ci, stretch: lt.stretches[s].index })?;
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
    Ok((classes, send_bytes, recv_bytes))
}
