//! The deadlock checker on the classic cases: each hand-made deadlocking program is rejected with
//! a diagnostic naming the rank, the operation and what it waits for; correct patterns pass.

use mpiskel_program::{check, CheckOp};

fn send(to: u32) -> CheckOp {
    CheckOp::Send { to, tag: 0, bytes: 8 }
}
fn recv(from: u32) -> CheckOp {
    CheckOp::Recv { from: Some(from), tag: 0 }
}

#[test]
fn head_to_head_blocking_sends_deadlock_under_rendezvous() {
    let d = check(&[vec![send(1), recv(1)], vec![send(0), recv(0)]]).expect("deadlock");
    assert_eq!(d.blocked.len(), 2);
    assert_eq!(d.blocked[0].op, send(1));
    assert_eq!(d.blocked[0].waits_for, "rank 1 to post a matching receive");
    assert!(d
        .to_string()
        .contains("rank 0 at operation 0: MPI_Send to rank 1 (tag 0) waits for rank 1"));
}

#[test]
fn a_wait_on_a_request_nobody_matches() {
    let d = check(&[
        vec![CheckOp::Irecv { from: Some(1), tag: 7, slot: 0 }, CheckOp::Wait { slots: vec![0] }],
        vec![],
    ])
    .expect("deadlock");
    assert_eq!(d.blocked.len(), 1);
    assert_eq!(d.blocked[0].rank, 0);
    assert_eq!(d.blocked[0].waits_for, "requests [0], which nobody matches");
}

#[test]
fn a_cyclic_dependency_around_a_ring() {
    let n = 5;
    let ring: Vec<Vec<CheckOp>> =
        (0..n).map(|r| vec![send((r + 1) % n), recv((r + n - 1) % n)]).collect();
    let d = check(&ring).expect("deadlock");
    assert_eq!(d.blocked.len(), n as usize);
    assert!(d.blocked.iter().all(|b| matches!(b.op, CheckOp::Send { .. })));
}

#[test]
fn a_collective_someone_skips() {
    let barrier =
        CheckOp::Collective { comm: 0, members: vec![0, 1, 2].into(), name: "Barrier".into() };
    let d = check(&[vec![barrier.clone()], vec![barrier], vec![]]).expect("deadlock");
    assert_eq!(d.blocked.len(), 2);
    assert_eq!(d.blocked[0].waits_for, "ranks [2] to reach it");
}

#[test]
fn mismatched_tags_never_meet() {
    let d = check(&[
        vec![CheckOp::Send { to: 1, tag: 1, bytes: 8 }],
        vec![CheckOp::Recv { from: Some(0), tag: 2 }],
    ]);
    assert!(d.is_some());
}

#[test]
fn correct_patterns_pass() {
    let n = 6;
    // Odd/even ring of blocking calls.
    let ring: Vec<Vec<CheckOp>> = (0..n)
        .map(|r| {
            let (s, v) = (send((r + 1) % n), recv((r + n - 1) % n));
            if r % 2 == 0 {
                vec![s, v]
            } else {
                vec![v, s]
            }
        })
        .collect();
    assert_eq!(check(&ring), None);
    // Non-blocking exchange with both neighbours, twice, then a collective.
    let halo: Vec<Vec<CheckOp>> = (0..n)
        .map(|r| {
            let (l, rt) = ((r + n - 1) % n, (r + 1) % n);
            let mut v = Vec::new();
            for _ in 0..2 {
                v.push(CheckOp::Irecv { from: Some(l), tag: 0, slot: 0 });
                v.push(CheckOp::Irecv { from: Some(rt), tag: 1, slot: 1 });
                v.push(CheckOp::Isend { to: rt, tag: 0, slot: 2, bytes: 8 });
                v.push(CheckOp::Isend { to: l, tag: 1, slot: 3, bytes: 8 });
                v.push(CheckOp::Wait { slots: vec![0, 1, 2, 3] });
            }
            v.push(CheckOp::Collective {
                comm: 0,
                members: (0..n).collect::<Vec<u32>>().into(),
                name: "Allreduce".into(),
            });
            v
        })
        .collect();
    assert_eq!(check(&halo), None);
    // Master and workers with ANY_SOURCE.
    let mut star = vec![(1..n).map(|_| CheckOp::Recv { from: None, tag: 0 }).collect::<Vec<_>>()];
    star.extend((1..n).map(|_| vec![send(0)]));
    assert_eq!(check(&star), None);
}

/// A receive from any source takes whichever matching send comes first. Rank 2 receives one
/// message from anyone, then one from rank 1. If rank 0's comes first, rank 1's is left for
/// the second receive; if rank 1's comes first, nothing is left for it and rank 2 waits
/// forever, whatever the library buffers. Taking the lowest source first, as a single order
/// does, passes it; every order does not.
#[test]
fn a_wildcard_that_can_take_the_message_another_receive_needs_is_refused() {
    let race = |second: u32| {
        vec![vec![send(2)], vec![send(2)], vec![CheckOp::Recv { from: None, tag: 0 }, recv(second)]]
    };
    let d = check(&race(1)).expect("rank 1's message can be taken first");
    assert_eq!(d.blocked.len(), 1, "{d}");
    assert_eq!((d.blocked[0].rank, d.blocked[0].position), (2, 1), "{d}");
    assert!(d.to_string().contains("waits for rank 1 to post a matching send"), "{d}");
    // Receiving from rank 0 second is refused too (the other order); with both from anyone it
    // passes in every order.
    assert!(check(&race(0)).is_some());
    let both = vec![
        vec![send(2)],
        vec![send(2)],
        vec![CheckOp::Recv { from: None, tag: 0 }, CheckOp::Recv { from: None, tag: 0 }],
    ];
    assert_eq!(check(&both), None);
}

/// Rank 0 takes one message from anyone, sends to rank 1, then takes another. If rank 2's
/// comes first, rank 0 sends to rank 1 while rank 1 still sends to rank 0: small messages the
/// libraries buffer and it finishes; large ones wait for their receives (rendezvous) and it
/// blocks. In the order that takes rank 1's first it finishes either way.
#[test]
fn a_wildcard_order_that_needs_large_messages_buffered_is_refused() {
    let program = |bytes: u64| {
        let send = |to: u32, tag: i32| CheckOp::Send { to, tag, bytes };
        vec![
            vec![
                CheckOp::Recv { from: None, tag: 0 },
                send(1, 1),
                CheckOp::Recv { from: None, tag: 0 },
            ],
            vec![send(0, 0), CheckOp::Recv { from: Some(0), tag: 1 }],
            vec![send(0, 0)],
        ]
    };
    assert_eq!(check(&program(8)), None, "small messages are buffered in every library");
    let d = check(&program(1 << 20)).expect("rank 2's message first, then a rendezvous");
    assert!(d.blocked.iter().any(|b| b.rank == 1 && matches!(b.op, CheckOp::Send { .. })), "{d}");
}

/// Programs with more wildcard orders than the check executes still finish the check: a master
/// answering eight workers over four rounds has 8!⁴ orders.
#[test]
fn a_master_with_many_wildcard_orders_is_checked_within_its_executions() {
    let workers = 8u32;
    let rounds = 4;
    let mut master = Vec::new();
    for _ in 0..rounds {
        master.extend((1..=workers).map(|_| CheckOp::Recv { from: None, tag: 0 }));
        master.extend((1..=workers).map(|w| CheckOp::Send { to: w, tag: 1, bytes: 8 }));
    }
    let mut programs = vec![master];
    for _ in 1..=workers {
        programs.push(
            (0..rounds).flat_map(|_| [send(0), CheckOp::Recv { from: Some(0), tag: 1 }]).collect(),
        );
    }
    assert_eq!(check(&programs), None);
}
