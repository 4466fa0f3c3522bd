//! Collectives that concurrent threads made on different communicators, put in one order on
//! every rank.
//!
//! MPI orders the collectives of one communicator: every member makes them in the same order.
//! It does not order those of two communicators, and a rank whose threads each use their own
//! copy of the world (`MPI_Comm_dup`) makes them as its threads run: PT-Scotch's parallel
//! ordering, two threads per rank, traced on 4 ranks, has rank 0 make an `MPI_Allgather` on its
//! copy before an `MPI_Alltoall` on the world where rank 3 makes them the other way round. A
//! skeleton runs each rank's calls in one thread, in the order the trace gives them; taken as
//! they are, rank 0 would wait in the copy's collective for rank 3 and rank 3 in the world's for
//! rank 0, and the skeleton could never finish, although the application did. One thread per
//! rank can show the same where a collective returns before every member has made it (an
//! `MPI_Alltoallv` of a rank that moves nothing, in DOLFINx's Poisson solver on 4 ranks: rank 1
//! returns from it before rank 0 has made it, and makes an `MPI_Allgather` of another
//! communicator that rank 0 made first).
//!
//! Here every blocking collective is known by its communicator (its members, and which of the
//! rank's communicators of those members it is, in the order the tracer numbered them) and its
//! place among that communicator's collectives, and the collectives get one order: rank 0's, each
//! one rank 0 does not make placed right after the one its first maker made before it. In every
//! stretch of a rank's calls between calls that wait (completions, blocking point-to-point), the
//! blocking collectives are then made in that order, each moved later where it must, past
//! non-blocking starts and the collectives it follows: nothing that was started is started
//! later, and no rank waits where it did not. Each communicator's own order is kept (every rank
//! kept it), so is everything else; the computation between calls stays where it was, the k-th
//! gap before the k-th call of the stretch.
//!
//! Nothing moves where the ranks that share communicators make their collectives in the same
//! order, as every program whose ranks run one thread each does.
//!
//! # Complexity
//! O(calls + r log r) per rank for runs of r collectives (hashing each collective's members).

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::{CommId, Event, OpClass, Payload, RankTrace};

/// What [`align`] moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Aligned {
    /// Calls that now stand at another place of their rank's trace.
    pub calls_moved: u64,
    /// Ranks whose calls moved, ascending.
    pub ranks: Vec<u32>,
}

/// A blocking collective, as every member knows it: its communicator (the sorted world ranks of
/// its members and which communicator of those members it is, in the order the rank's tracer
/// numbered them) and its place among that communicator's collectives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    members: Arc<[u32]>,
    instance: u32,
    place: u64,
}

/// Each event's key on `rt`, `None` for the events that are not blocking collectives.
fn keys(rt: &RankTrace) -> Vec<Option<Key>> {
    // Each communicator's members (sorted) and instance among those of the same members.
    let mut seen: HashMap<Arc<[u32]>, u32> = HashMap::new();
    let comms: HashMap<CommId, (Arc<[u32]>, u32)> = rt
        .comms
        .iter()
        .map(|(c, m)| {
            let mut sorted: Vec<u32> = m.iter().map(|r| r.0).collect();
            sorted.sort_unstable();
            let sorted: Arc<[u32]> = sorted.into();
            let k = seen.entry(sorted.clone()).or_insert(0);
            *k += 1;
            (*c, (sorted, *k))
        })
        .collect();
    let mut made: HashMap<CommId, u64> = HashMap::new();
    rt.events
        .iter()
        .map(|e| {
            let Payload::Collective { comm, request: None, .. } = &e.payload else { return None };
            let (members, instance) = comms.get(comm)?.clone();
            let k = made.entry(*comm).or_insert(0);
            *k += 1;
            Some(Key { members, instance, place: *k })
        })
        .collect()
}

/// Where a collective stands in the one order: rank 0's collectives in its order; one first made
/// by a later rank `r` right after the last collective before it on `r` that has a place (as
/// the `seq`-th so placed).
type Place = (u64, u32, u64);

/// Puts the blocking collectives of `ranks` in one order (see the module documentation);
/// returns what moved.
pub fn align(ranks: &mut [RankTrace]) -> Aligned {
    let all_keys: Vec<Vec<Option<Key>>> = ranks.iter().map(keys).collect();
    let mut place: HashMap<&Key, Place> = HashMap::new();
    let mut seq = 0u64;
    for (r, keys) in all_keys.iter().enumerate() {
        let mut last: Place = (0, 0, 0);
        for (i, k) in keys.iter().enumerate() {
            let Some(k) = k else { continue };
            last = *place.entry(k).or_insert_with(|| {
                seq += 1;
                if r == 0 {
                    (i as u64 + 1, 0, 0)
                } else {
                    (last.0, r as u32, seq)
                }
            });
        }
    }
    let mut aligned = Aligned::default();
    for (r, (rt, keys)) in ranks.iter_mut().zip(&all_keys).enumerate() {
        let moved = align_rank(rt, keys, &place);
        if moved > 0 {
            aligned.calls_moved += moved;
            aligned.ranks.push(r as u32);
        }
    }
    aligned
}

/// Whether `e` starts something without waiting for it (a non-blocking send, receive or
/// collective): a blocking collective may move past it, later, and nothing waits the longer.
fn starts(e: &Event) -> bool {
    match &e.payload {
        Payload::P2p { request: Some(_), .. } => {
            matches!(e.op.class(), OpClass::Send | OpClass::Recv)
        }
        Payload::Collective { request: Some(_), .. } => true,
        _ => false,
    }
}

/// Puts the blocking collectives of each stretch of `rt` between calls that wait (stretches of
/// blocking collectives and non-blocking starts) in the order `place` gives; returns the calls
/// moved. A collective only ever moves later, to just after the one it follows in that order
/// where that one came after it: the starts are made no later than they were.
fn align_rank(rt: &mut RankTrace, keys: &[Option<Key>], place: &HashMap<&Key, Place>) -> u64 {
    let mut moved = 0;
    let mut i = 0;
    while i < keys.len() {
        if keys[i].is_none() {
            i += 1;
            continue;
        }
        // The stretch: from this collective to the next call that is neither a blocking
        // collective nor a start.
        let start = i;
        while i < keys.len() && (keys[i].is_some() || starts(&rt.events[i])) {
            i += 1;
        }
        let end = i;
        let at = |j: usize| keys[j].as_ref().and_then(|k| place.get(k).copied());
        let mut sorted: Vec<usize> = (start..end).filter(|&j| keys[j].is_some()).collect();
        sorted.sort_by_key(|&j| (at(j), j));
        // Walk the stretch: starts go out as they come, each collective once it and every one
        // before it in the order have come.
        let mut order = Vec::with_capacity(end - start);
        let mut arrived = vec![false; end - start];
        let mut next = 0;
        for j in start..end {
            if keys[j].is_none() {
                order.push(j);
                continue;
            }
            arrived[j - start] = true;
            while next < sorted.len() && arrived[sorted[next] - start] {
                order.push(sorted[next]);
                next += 1;
            }
        }
        if order.iter().enumerate().all(|(o, &j)| start + o == j) {
            continue;
        }
        let calls: Vec<_> =
            order.iter().map(|&j| (rt.events[j].op, rt.events[j].payload.clone())).collect();
        for (o, (op, payload)) in calls.into_iter().enumerate() {
            if order[o] != start + o {
                moved += 1;
            }
            let e = &mut rt.events[start + o];
            e.op = op;
            e.payload = payload;
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Op, Rank, RankInfo};

    fn collective(op: Op, comm: u32) -> Event {
        Event {
            op,
            enter_ns: 0,
            exit_ns: 0,
            gap_ns: 0,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload: Payload::Collective {
                comm: CommId(comm),
                root: None,
                send_bytes: 4,
                recv_bytes: 4,
                send_counts: None,
                recv_counts: None,
                request: None,
            },
        }
    }

    fn rank(r: u32, events: Vec<Event>) -> RankTrace {
        let all: Arc<[Rank]> = (0..2).map(Rank).collect();
        RankTrace {
            rank: Rank(r),
            info: RankInfo { n_ranks: 2, ..RankInfo::default() },
            events,
            trailing_gap_ns: 0,
            comms: [(CommId::WORLD, all.clone()), (CommId(7), all)].into_iter().collect(),
            record_counts: Default::default(),
            unrecorded: Default::default(),
        }
    }

    #[test]
    fn threads_collectives_take_rank_0s_order() {
        let a = || collective(Op::Allgather, 0);
        let b = || collective(Op::Alltoall, 7);
        let mut ranks = vec![rank(0, vec![a(), b()]), rank(1, vec![b(), a()])];
        ranks[1].events[0].gap_ns = 5;
        let aligned = align(&mut ranks);
        assert_eq!(aligned, Aligned { calls_moved: 2, ranks: vec![1] });
        let ops: Vec<Op> = ranks[1].events.iter().map(|e| e.op).collect();
        assert_eq!(ops, vec![Op::Allgather, Op::Alltoall]);
        // The computation stays where it was.
        assert_eq!(ranks[1].events[0].gap_ns, 5);
    }

    #[test]
    fn one_order_is_left_alone() {
        let a = || collective(Op::Allgather, 0);
        let b = || collective(Op::Alltoall, 7);
        let mut ranks = vec![rank(0, vec![a(), b()]), rank(1, vec![a(), b()])];
        assert_eq!(align(&mut ranks), Aligned::default());
    }
}
