use super::*;

/// Rank 0 posts a receive from any source, then `n` receives from rank 1 and one of
/// another tag, and waits for them all; rank 1 sends `sends` messages of the first tag and
/// one of the other. The receives behind the wildcard wait for its choice, then take their
/// sends at once ([`Matcher::settle`]).
fn behind_a_wildcard(n: u32, sends: u32) -> Vec<Vec<CheckOp>> {
    let mut receiver = vec![CheckOp::Irecv { from: None, tag: 7, slot: 0 }];
    receiver.extend((1..=n).map(|slot| CheckOp::Irecv { from: Some(1), tag: 7, slot }));
    receiver.push(CheckOp::Irecv { from: Some(1), tag: 8, slot: n + 1 });
    receiver.push(CheckOp::Wait { slots: (0..=n + 1).collect() });
    let mut sender: Vec<CheckOp> =
        (0..sends).map(|_| CheckOp::Send { to: 0, tag: 7, bytes: 8 }).collect();
    sender.push(CheckOp::Send { to: 0, tag: 8, bytes: 8 });
    vec![receiver, sender]
}

/// The non-blocking consensus of sparse data exchanges (DOLFINx, PETSc): a rank starts its
/// `MPI_Ibarrier` and then still receives what others send it synchronously. The start
/// does not block (taken as blocking, the two ranks waited for each other); the wait
/// completes once both have started it, and one that a member never starts is reported.
#[test]
fn a_non_blocking_barrier_waits_at_its_wait_not_at_its_start() {
    let members: Arc<[u32]> = vec![0, 1].into();
    let ibarrier = |slot| CheckOp::Icollective {
        comm: 0,
        members: members.clone(),
        name: "Ibarrier".into(),
        slot,
    };
    let programs = vec![
        vec![
            ibarrier(1),
            CheckOp::Recv { from: Some(1), tag: 0 },
            CheckOp::Wait { slots: vec![1] },
        ],
        vec![CheckOp::Ssend { to: 0, tag: 0 }, ibarrier(1), CheckOp::Wait { slots: vec![1] }],
    ];
    assert_eq!(check(&programs), None);
    let never = vec![programs[0].clone(), vec![CheckOp::Ssend { to: 0, tag: 0 }]];
    let d = check(&never).expect("rank 0 waits for a barrier rank 1 never starts");
    assert_eq!(d.blocked.len(), 1, "{d}");
    assert!(d.blocked[0].waits_for.contains("non-blocking collective"), "{d}");
    // A blocking collective where the others started a non-blocking one does not match.
    let mixed = vec![
        vec![ibarrier(1), CheckOp::Wait { slots: vec![1] }],
        vec![CheckOp::Collective { comm: 0, members: members.clone(), name: "Barrier".into() }],
    ];
    assert!(check(&mixed).is_some());
}

#[test]
fn receives_behind_a_wildcard_take_their_sends_once_it_has_chosen() {
    assert_eq!(check(&behind_a_wildcard(20_000, 20_001)), None);
    let short = check(&behind_a_wildcard(20_000, 20_000)).expect("one receive is left");
    assert_eq!(short.blocked.len(), 1, "{short}");
    assert_eq!(short.blocked[0].rank, 0);
}

/// Once a wildcard has chosen its send, the receives queued behind it take theirs in
/// order, up to a wildcard still queued that accepts their key.
#[test]
fn receives_settle_up_to_the_next_wildcard_of_their_key() {
    let mut m = Matcher::new(false, true);
    for _ in 0..3 {
        m.post_send(1, 0, 7, None, false);
    }
    m.post_send(2, 0, 8, Some(9), false);
    m.post_recv(0, None, 7, Some(0));
    m.post_recv(0, Some(1), 7, Some(1));
    m.post_recv(0, Some(1), 7, Some(2));
    m.post_recv(0, None, 8, Some(3));
    m.post_recv(0, Some(2), 8, Some(4));
    assert!((0..=4).all(|slot| !m.is_matched(0, slot)), "all wait for the choice");
    let mut choices = Vec::new();
    assert!(m.choose(&[], &mut choices));
    // The first wildcard took (1, 7); the next wildcard's turn is a choice of its own.
    assert_eq!(choices, vec![(0, 1)]);
    assert!((0..=2).all(|slot| m.is_matched(0, slot)));
    assert!(!m.is_matched(0, 3) && !m.is_matched(0, 4), "behind the wildcard of tag 8");
    assert_eq!(m.receives_waiting(0), 2);
    assert!(m.choose(&[], &mut choices));
    assert!(m.is_matched(0, 3) && !m.is_matched(0, 4), "the send of (2, 8) went to it");
}

#[test]
fn the_last_start_of_each_standard_send_is_found_in_one_pass() {
    let before = [
        CheckOp::Isend { to: 1, tag: 0, slot: 1, bytes: 8 },
        CheckOp::Irecv { from: Some(1), tag: 0, slot: 2 },
        CheckOp::Isend { to: 1, tag: 0, slot: 1, bytes: 8 },
        CheckOp::Issend { to: 1, tag: 0, slot: 3 },
        CheckOp::Isend { to: 1, tag: 0, slot: 4, bytes: 8 },
        CheckOp::Irecv { from: Some(1), tag: 0, slot: 4 },
    ];
    let mut found = standard_sends_of(&before, &[1, 2, 3, 4, 5]);
    found.sort_unstable();
    assert_eq!(found, vec![2]);
}
