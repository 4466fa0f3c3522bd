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
//! place among that communicator's collectives, and takes its place from the lowest rank of its
//! communicator (which makes it): in every stretch of a rank's calls between calls that wait
//! (completions, blocking point-to-point), the collectives whose communicators have the same
//! lowest rank are made in that rank's order, each moved later where it must, past non-blocking
//! starts and the collectives it follows: nothing that was started is started later, and no rank
//! waits where it did not. Collectives of communicators with different lowest ranks keep their
//! order (two ranks of one row, each making its row's collective and then the even ranks', need
//! no order with the third row's); each communicator's own order is kept, so is everything else;
//! the computation between calls stays where it was, the k-th gap before the k-th call of the
//! stretch.
//!
//! Nothing moves where every rank makes the collectives it shares with a communicator's lowest
//! rank in that rank's order, as every program whose ranks run one thread each and whose
//! collectives wait for every member does (all fixture and NPB traces).
//!
//! # Complexity
//! O(calls + r log r) per rank for stretches of r collectives, and one pass over each member list
//! the ranks share; memory: 24 bytes per blocking collective.

use std::collections::HashMap;

use crate::model::{CommId, Event, OpClass, Payload, Rank, RankTrace};

/// What [`align`] moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Aligned {
    /// Calls that now stand at another place of their rank's trace.
    pub calls_moved: u64,
    /// Ranks whose calls moved, ascending.
    pub ranks: Vec<u32>,
    /// Of the calls moved, those made earlier than traced where the order found still could
    /// not finish in one thread per rank ([`crate::replayable`]).
    pub made_earlier: u64,
    /// Of those, the calls moved past a call that waits.
    pub past_waits: u64,
}

/// A blocking collective, as every member knows it: its communicator (a fingerprint of its
/// members' world ranks, in any order, with which communicator of those members it is, in the
/// order the rank's tracer numbered them) and its place among that communicator's collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    comm: u64,
    place: u64,
}

/// An order-independent fingerprint of a member list (the sum and the xor of each member's
/// SplitMix64 image, with the count): computed once per list the ranks share
/// (`fingerprints`, by address), so that 16,384 ranks' world costs one pass, not one per rank.
pub(crate) fn fingerprint(members: &[Rank]) -> u64 {
    let (mut sum, mut xor) = (0u64, 0u64);
    for r in members {
        let h = mix(u64::from(r.0));
        sum = sum.wrapping_add(h);
        xor ^= h.rotate_left(17);
    }
    mix(sum ^ xor.rotate_left(29) ^ members.len() as u64)
}

/// SplitMix64's output of the state `x` ([`crate::rng::splitmix64`]): a 64-bit mix.
fn mix(mut x: u64) -> u64 {
    crate::rng::splitmix64(&mut x)
}

/// Each communicator of `rt` as every member knows it (its members' fingerprint with which
/// communicator of those members it is, in the order the rank's tracer numbered them), with the
/// lowest world rank of its members. `fingerprints` holds each member list's fingerprint, by
/// address, for the ranks that share it.
pub(crate) fn comm_keys(
    rt: &RankTrace,
    fingerprints: &mut HashMap<*const Rank, (u64, u32)>,
) -> HashMap<CommId, (u64, u32)> {
    let mut seen: HashMap<u64, u32> = HashMap::new();
    rt.comms
        .iter()
        .map(|(c, m)| {
            let (fp, lowest) = *fingerprints
                .entry(m.as_ptr())
                .or_insert_with(|| (fingerprint(m), m.iter().map(|r| r.0).min().unwrap_or(0)));
            let k = seen.entry(fp).or_insert(0);
            *k += 1;
            (*c, (mix(fp ^ u64::from(*k)), lowest))
        })
        .collect()
}

/// The blocking collectives of `rt`, each with its position among the rank's calls, its key and
/// the lowest world rank of its communicator (the rank whose order it takes).
fn keys(
    rt: &RankTrace,
    fingerprints: &mut HashMap<*const Rank, (u64, u32)>,
) -> Vec<(u32, Key, u32)> {
    let comms = comm_keys(rt, fingerprints);
    let mut made: HashMap<CommId, u64> = HashMap::new();
    rt.events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let Payload::Collective { comm, request: None, .. } = &e.payload else { return None };
            let (fp, lowest) = *comms.get(comm)?;
            let k = made.entry(*comm).or_insert(0);
            *k += 1;
            Some((i as u32, Key { comm: fp, place: *k }, lowest))
        })
        .collect()
}

/// Puts the blocking collectives of `ranks` in the order of their communicators' lowest ranks
/// (see the module documentation); returns what moved.
pub fn align(ranks: &mut [RankTrace]) -> Aligned {
    let mut fingerprints = HashMap::new();
    let all_keys: Vec<Vec<(u32, Key, u32)>> =
        ranks.iter().map(|rt| keys(rt, &mut fingerprints)).collect();
    drop(fingerprints);
    // Each collective's place: where the lowest rank of its communicator makes it.
    let mut place: HashMap<Key, u64> = HashMap::new();
    for (r, keys) in all_keys.iter().enumerate() {
        for (o, (_, k, lowest)) in keys.iter().enumerate() {
            if *lowest as usize == r {
                place.insert(*k, o as u64);
            }
        }
    }
    let mut aligned = Aligned::default();
    for (r, (rt, keys)) in ranks.iter_mut().zip(&all_keys).enumerate() {
        let mut by_lowest: HashMap<u32, HashMap<u32, u64>> = HashMap::new();
        for (i, k, lowest) in keys.iter().filter(|(_, _, l)| *l as usize != r) {
            if let Some(p) = place.get(k) {
                by_lowest.entry(*lowest).or_default().insert(*i, *p);
            }
        }
        let mut groups: Vec<_> = by_lowest.into_iter().collect();
        groups.sort_unstable_by_key(|(l, _)| *l);
        let moved: u64 = groups.iter().map(|(_, at)| align_rank(rt, at)).sum();
        if moved > 0 {
            aligned.calls_moved += moved;
            aligned.ranks.push(r as u32);
        }
    }
    aligned
}

/// Whether `e` is a blocking collective: one rank 0 does not make stays where it is, and one
/// that moves may move past it.
fn blocking_collective(e: &Event) -> bool {
    matches!(e.payload, Payload::Collective { request: None, .. })
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
/// blocking collectives and non-blocking starts) that rank 0 makes in the order of their places
/// `at` (by position: where rank 0 makes them); returns the calls moved. A collective only ever moves later, to just after the one it
/// follows in that order where that one came after it: the starts are made no later than they
/// were.
fn align_rank(rt: &mut RankTrace, at: &HashMap<u32, u64>) -> u64 {
    let keyed = |j: usize| at.get(&(j as u32)).copied();
    let mut moved = 0;
    let mut i = 0;
    let n = rt.events.len();
    while i < n {
        if keyed(i).is_none() {
            i += 1;
            continue;
        }
        // The stretch: from this collective to the next call that is neither a blocking
        // collective nor a start.
        let start = i;
        while i < n
            && (keyed(i).is_some() || blocking_collective(&rt.events[i]) || starts(&rt.events[i]))
        {
            i += 1;
        }
        let end = i;
        let mut sorted: Vec<usize> = (start..end).filter(|&j| keyed(j).is_some()).collect();
        sorted.sort_by_key(|&j| (keyed(j), j));
        // Walk the stretch: starts go out as they come, each collective once it and every one
        // before it in the order have come.
        let mut order = Vec::with_capacity(end - start);
        let mut arrived = vec![false; end - start];
        let mut next = 0;
        for j in start..end {
            if keyed(j).is_none() {
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
    use crate::model::{Op, RankInfo};
    use std::sync::Arc;

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
        assert_eq!(aligned, Aligned { calls_moved: 2, ranks: vec![1], ..Aligned::default() });
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

    #[test]
    fn collectives_of_communicators_with_other_lowest_ranks_keep_their_order() {
        // Rank 1 makes its communicator with rank 2 (lowest rank 1) before the one with rank 0
        // (lowest rank 0); nobody else makes both: nothing moves.
        let pair = |a: u32, b: u32| -> Arc<[Rank]> { vec![Rank(a), Rank(b)].into() };
        let world: Arc<[Rank]> = (0..3).map(Rank).collect();
        let mk = |r: u32, comms: Vec<(u32, Arc<[Rank]>)>, events: Vec<Event>| RankTrace {
            rank: Rank(r),
            info: RankInfo { n_ranks: 3, ..RankInfo::default() },
            events,
            trailing_gap_ns: 0,
            comms: std::iter::once((CommId::WORLD, world.clone()))
                .chain(comms.into_iter().map(|(c, m)| (CommId(c), m)))
                .collect(),
            record_counts: Default::default(),
            unrecorded: Default::default(),
        };
        let mut ranks = vec![
            mk(0, vec![(2, pair(0, 1))], vec![collective(Op::Allreduce, 2)]),
            mk(
                1,
                vec![(2, pair(0, 1)), (3, pair(1, 2))],
                vec![collective(Op::Bcast, 3), collective(Op::Allreduce, 2)],
            ),
            mk(2, vec![(3, pair(1, 2))], vec![collective(Op::Bcast, 3)]),
        ];
        assert_eq!(align(&mut ranks), Aligned::default());
    }
}
