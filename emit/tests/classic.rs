//! The deadlock checker on the classic cases: each hand-made deadlocking program is rejected with
//! a diagnostic naming the rank, the operation and what it waits for; correct patterns pass.

use mpiskel_emit::{check, CheckOp};

fn send(to: u32) -> CheckOp {
    CheckOp::Send { to, tag: 0 }
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
        vec![CheckOp::Send { to: 1, tag: 1 }],
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
                v.push(CheckOp::Isend { to: rt, tag: 0, slot: 2 });
                v.push(CheckOp::Isend { to: l, tag: 1, slot: 3 });
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
