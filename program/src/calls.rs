//! Logical operations of the trace as calls of the program: sizes per rank, the sizes all
//! members of a collective agree on, the blocking form of vector and non-blocking collectives,
//! request slots, and roots.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mpiskel_compress::LoopNest;
use mpiskel_logicalize::{
    Kind, LogicalComm, LogicalPeer, LogicalTrace, ProcessClass, SINGLE_MESSAGE_TAG,
};
use mpiskel_trace::{Op, OpClass};

use super::layout::rank_of_node;
use super::lower::LeafMap;
use super::*;

/// Each rank's bytes at the send that positions `ps` of `class` make (the mean over them), one
/// entry per rank of the `n` (0 outside the class), if the class's ranks send different sizes
/// there; `None` if they all send the same.
pub(super) fn rank_sizes(class: &ProcessClass, ps: &[usize], n: u32) -> Option<Vec<u64>> {
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

/// Which ranks make the call that positions `ps` of `class` make: all but those the logical
/// trace lists as absent at every one of them (ranks outside the class are marked present; they
/// never run it).
pub(super) fn presence(class: &ProcessClass, ps: &[usize], n: u32) -> Vec<bool> {
    let mut table = vec![true; n as usize];
    if let Some(&first) = ps.first() {
        for &r in &class.ops[first].absent {
            if ps.iter().all(|&q| class.ops[q].absent.binary_search(&r).is_ok()) {
                if let Some(x) = table.get_mut(r as usize) {
                    *x = false;
                }
            }
        }
    }
    table
}

/// Makes a point-to-point call toward a direction run only where presence table `t` says so.
pub(super) fn guard(call: &mut Call, t: usize) {
    let only = |p: &mut Peer| {
        if let Peer::Dir(d) = *p {
            *p = Peer::Only { dir: d, table: t };
        }
    };
    match call {
        Call::Send { to, .. } => only(to),
        Call::Recv { from, .. } | Call::Probe { from, .. } => only(from),
        Call::SendRecv { to, from, .. } => {
            only(to);
            only(from);
        }
        Call::Complete { .. } | Call::Collective { .. } => {}
    }
}

/// What makes calls of a collective the same collective to every rank: operation,
/// communicator, root (`None` for other calls).
pub(super) fn collective_key(op: &mpiskel_logicalize::LogicalOp) -> Option<String> {
    (op.key.op.class() == OpClass::Collective)
        .then(|| format!("{:?} {:?} {:?}", op.key.op, op.key.comm, op.key.root))
}

/// Whether a collective gives each rank its own sizes.
pub(super) fn is_vector(op: Op) -> bool {
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
/// and the bytes over the run stay those of the application. The mean is taken in whole
/// elements: rounded to the nearest multiple of the greatest common divisor of the sizes (the
/// widest element every call's size is made of), and at least one element. A mean of 6.1 bytes
/// over reductions of one `int` and of one `double` runs as one double, not as 7 bytes summed
/// one by one, which the library reduces twice as slowly ([`super::Element`]).
pub(super) fn agreed_collective_sizes(
    lt: &LogicalTrace,
    nests: &[LoopNest],
) -> HashMap<Option<String>, u64> {
    let mut sum: HashMap<Option<String>, (f64, f64, u64)> = HashMap::new();
    let mut varies = BTreeSet::new();
    for (class, nest) in lt.classes.iter().zip(nests) {
        let lm = leaf_map(nest, mpiskel_compress::leaf_count(&nest.items));
        if lm.leaf_of.len() != class.ops.len() {
            continue; // reported by the caller
        }
        let ranks = (class.ranks.len() + class.folded.len()).max(1) as f64;
        for ps in lm.positions.iter() {
            let Some(&first) = ps.first() else { continue };
            let key = collective_key(&class.ops[first]);
            if key.is_none() {
                continue;
            }
            let members = comm_size(&Comm::of(&class.ops[first].key.comm, lt), lt);
            let form = |q: usize| {
                let k = &class.ops[q].key;
                collective_form(k.op, k.bytes, k.recv_bytes, members).1
            };
            let sizes: Vec<u64> = ps.iter().map(|&q| form(q)).collect();
            if is_vector(class.ops[first].key.op) || sizes.iter().any(|&b| b != sizes[0]) {
                varies.insert(key.clone());
            }
            let e = sum.entry(key).or_insert((0.0, 0.0, 0));
            e.0 += sizes.iter().sum::<u64>() as f64 * ranks;
            e.1 += sizes.len() as f64 * ranks;
            e.2 = sizes.iter().fold(e.2, |g, &b| gcd(g, b));
        }
    }
    sum.into_iter()
        .filter(|(k, _)| varies.contains(k))
        .map(|(k, (total, n, element))| (k, whole_elements(total, n, element)))
        .collect()
}

/// The mean `total / n` in whole elements of `element` bytes (see [`agreed_collective_sizes`]).
fn whole_elements(total: f64, n: f64, element: u64) -> u64 {
    if n <= 0.0 || element == 0 {
        return 0;
    }
    let e = element as f64;
    ((total / n / e).round() * e).max(e) as u64
}

/// Greatest common divisor (`gcd(0, b) = b`).
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub(super) fn round8(b: u64) -> u64 {
    b.div_ceil(8) * 8
}

pub(super) fn starts_request(class: &ProcessClass, lm: &LeafMap, leaf: usize) -> bool {
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
        Comm::Strided { size, .. } | Comm::Groups { size, .. } => *size as u64,
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
pub(super) fn collective_form(op: Op, bytes: u64, recv: u64, members: u64) -> (Op, u64) {
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

/// The traced tag by which a call's messages get a tag of their own (see
/// `assemble::directions_and_tags`): its representative's, except for tags that number their
/// messages one by one ([`SINGLE_MESSAGE_TAG`]), which are all one. Those calls fold whatever
/// their numbers, so a representative's number is one of many, picked apart on the sending and
/// the receiving side (MUMPS's ScaLAPACK grid: a send traced with tag 24 against a receive
/// whose representative was traced with tag 23, and a receive from any source that waited
/// forever).
pub(crate) fn message_tag_key(op: &mpiskel_logicalize::LogicalOp) -> i32 {
    if op.tag_class == SINGLE_MESSAGE_TAG {
        SINGLE_MESSAGE_TAG
    } else {
        op.traced_tag
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn call_of(
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
    let own = any_tags.get(&message_tag_key(op)).copied();
    let send_tag = |p: &Peer| match p {
        _ if own.is_some() => own.unwrap_or(0),
        Peer::Dir(i) | Peer::Only { dir: i, .. } => dirs[*i].tag,
        _ => 0,
    };
    let recv_tag = |p: &Peer, any_tag: bool| match p {
        _ if any_tag => -1,
        _ if own.is_some() => own.unwrap_or(0),
        Peer::Dir(i) | Peer::Only { dir: i, .. } => dirs[*i].recv_tag,
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
            let c = Comm::of(&k.comm, lt);
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
pub(super) fn root_rank(root: Option<&[usize]>, c: &Comm, lt: &LogicalTrace) -> u32 {
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
        // Members of a group ascend by world rank.
        (Comm::Groups { colours, .. }, _) => {
            let w = (world() as usize).min(colours.len().saturating_sub(1));
            colours[..w].iter().filter(|&&c| Some(&c) == colours.get(w)).count() as u32
        }
        (Comm::World, _) => world(),
        _ => coords.first().copied().unwrap_or(0) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Element;

    #[test]
    fn a_drifting_reduction_agrees_on_whole_elements_of_every_size_it_had() {
        // nemd (LAMMPS): 50,009 reductions of one int, 55,509 of one double: 6.1 bytes each.
        let (total, n) = (50_009.0 * 4.0 + 55_509.0 * 8.0, 105_518.0);
        assert_eq!(whole_elements(total, n, gcd(4, 8)), 8);
        assert_eq!(Element::of(8), (Element::Double, 1));
        // Mostly ints: one int.
        assert_eq!(whole_elements(9.0 * 4.0 + 8.0, 10.0, 4), 4);
        assert_eq!(Element::of(4), (Element::Word, 1));
        // Never below one element, and bytes stay bytes.
        assert_eq!(whole_elements(1.0, 10.0, 8), 8);
        assert_eq!(whole_elements(61.0, 10.0, gcd(gcd(0, 7), 5)), 6);
        assert_eq!(Element::of(6), (Element::Byte, 6));
        assert_eq!(Element::of(12), (Element::Word, 3));
        assert_eq!(whole_elements(0.0, 0.0, 0), 0);
    }
}
