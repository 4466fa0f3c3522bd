use super::*;
use crate::model::{Completed, Op, Rank, RankInfo, RequestId, Wildcards};
use std::sync::Arc;

fn event(op: Op, payload: Payload) -> Event {
    Event {
        op,
        enter_ns: 0,
        exit_ns: 0,
        gap_ns: 0,
        gap_work: None,
        gap_cpu_ns: None,
        gap_polls: 0,
        payload,
    }
}

fn coll(op: Op, comm: u32) -> Event {
    event(
        op,
        Payload::Collective {
            comm: CommId(comm),
            root: None,
            send_bytes: 8,
            recv_bytes: 8,
            send_counts: None,
            recv_counts: None,
            request: None,
        },
    )
}

fn p2p(op: Op, peer: u32, tag: i32, request: Option<u32>) -> Event {
    event(
        op,
        Payload::P2p {
            peer: Peer::Rank(Rank(peer)),
            tag,
            bytes: 8,
            comm: CommId(0),
            request: request.map(RequestId),
            wildcards: Wildcards::default(),
        },
    )
}

fn waitall(requests: &[u32]) -> Event {
    let completed = requests
        .iter()
        .map(|&r| Completed { request: Some(RequestId(r)), source: None, tag: None, bytes: None })
        .collect();
    event(Op::Waitall, Payload::Completion { n_given: requests.len() as u32, completed })
}

/// Ranks of `n` with the world (0) and one copy of it (5).
fn ranks(events: Vec<Vec<Event>>) -> Vec<RankTrace> {
    let n = events.len() as u32;
    let all: Arc<[Rank]> = (0..n).map(Rank).collect();
    events
        .into_iter()
        .enumerate()
        .map(|(r, events)| RankTrace {
            rank: Rank(r as u32),
            info: RankInfo { n_ranks: n, ..RankInfo::default() },
            events,
            trailing_gap_ns: 0,
            comms: [(CommId::WORLD, all.clone()), (CommId(5), all.clone())].into_iter().collect(),
            record_counts: Default::default(),
            unrecorded: Default::default(),
        })
        .collect()
}

fn ops(rt: &RankTrace) -> Vec<Op> {
    rt.events.iter().map(|e| e.op).collect()
}

#[test]
fn a_collective_a_thread_made_after_a_wait_is_made_before_it() {
    // Rank 1 waits for rank 0's message before the copy's Alltoall; rank 0 sends it only once
    // that Alltoall is done (DOLFINx's partitioning through PT-Scotch, in small).
    let mut rs = ranks(vec![
        vec![
            coll(Op::Alltoall, 5),
            p2p(Op::Isend, 1, 3, Some(1)),
            waitall(&[1]),
            coll(Op::Barrier, 0),
        ],
        vec![
            p2p(Op::Irecv, 0, 3, Some(1)),
            waitall(&[1]),
            coll(Op::Alltoall, 5),
            coll(Op::Barrier, 0),
        ],
    ]);
    rs[1].events[1].gap_ns = 7;
    let moved = make_replayable(&mut rs);
    assert_eq!(moved.calls_moved, 1);
    assert_eq!(moved.past_waits, 1);
    assert_eq!(moved.ranks, vec![1]);
    assert!(!moved.stuck);
    assert_eq!(ops(&rs[1]), vec![Op::Irecv, Op::Alltoall, Op::Waitall, Op::Barrier]);
    // The computation stays where it was.
    assert_eq!(rs[1].events[1].gap_ns, 7);
}

#[test]
fn collectives_of_two_copies_in_crossed_orders_meet() {
    // The skeleton makes the collectives of the world and its copy on one communicator: rank 1's
    // Alltoall of the copy, before its Allgather of the world, would meet the others'
    // Allgather.
    let mut rs = ranks(vec![
        vec![coll(Op::Allgather, 0), coll(Op::Alltoall, 5)],
        vec![coll(Op::Alltoall, 5), coll(Op::Allgather, 0)],
        vec![coll(Op::Allgather, 0), coll(Op::Alltoall, 5)],
    ]);
    let moved = make_replayable(&mut rs);
    assert_eq!(moved.ranks, vec![1]);
    assert!(!moved.stuck);
    for rt in &rs {
        assert_eq!(ops(rt), vec![Op::Allgather, Op::Alltoall]);
    }
}

#[test]
fn collectives_of_two_copies_that_make_the_same_calls_stay() {
    let before = ranks(vec![
        vec![coll(Op::Allgather, 0), coll(Op::Allgather, 5)],
        vec![coll(Op::Allgather, 5), coll(Op::Allgather, 0)],
    ]);
    let mut rs = before.clone();
    assert_eq!(make_replayable(&mut rs), Replayable::default());
    assert_eq!(rs, before);
}

#[test]
fn receives_both_ranks_make_first_stay_stuck() {
    // No run made these calls so (each rank receives before it sends): nothing moves.
    let before = ranks(vec![
        vec![p2p(Op::Recv, 1, 1, None), p2p(Op::Send, 1, 2, None)],
        vec![p2p(Op::Recv, 0, 2, None), p2p(Op::Send, 0, 1, None)],
    ]);
    let mut rs = before.clone();
    let moved = make_replayable(&mut rs);
    assert!(moved.stuck);
    assert_eq!(moved.calls_moved, 0);
    assert_eq!(rs, before);
}

#[test]
fn calls_that_finish_as_recorded_do_not_move() {
    let before = ranks(vec![
        vec![
            p2p(Op::Isend, 1, 3, Some(1)),
            p2p(Op::Recv, 1, 4, None),
            waitall(&[1]),
            coll(Op::Allreduce, 0),
        ],
        vec![
            p2p(Op::Irecv, 0, 3, Some(2)),
            p2p(Op::Send, 0, 4, None),
            waitall(&[2]),
            coll(Op::Allreduce, 0),
        ],
    ]);
    let mut rs = before.clone();
    assert_eq!(make_replayable(&mut rs), Replayable::default());
    assert_eq!(rs, before);
}

#[test]
fn a_trace_cut_short_stays_stuck_and_says_so() {
    // Rank 1 never makes the world's collective rank 0 waits in.
    let mut rs = ranks(vec![vec![coll(Op::Barrier, 0)], vec![]]);
    let moved = make_replayable(&mut rs);
    assert!(moved.stuck);
    assert_eq!(moved.calls_moved, 0);
}
