use super::tests::*;
use super::*;
use mpiskel_trace::{CommId, Wildcards};

fn p2p(peer: u32, bytes: u64) -> Payload {
    Payload::P2p {
        peer: Peer::Rank(Rank(peer)),
        tag: 0,
        bytes,
        comm: CommId::WORLD,
        request: None,
        wildcards: Wildcards::default(),
    }
}

#[test]
fn computing_ranks_that_exchange_on_one_core_still_share_it() {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for _ in 0..10 {
        a.push(ev(Op::Send, 1e8, p2p(1, 8)));
        a.push(ev(Op::Recv, 0.0, p2p(1, 8)));
        b.push(ev(Op::Recv, 1e8, p2p(0, 8)));
        b.push(ev(Op::Send, 0.0, p2p(0, 8)));
    }
    let traces = vec![rank(0, 2, a), rank(1, 2, b)];
    let pf = cluster(2, 1e9, 1e-6);
    let sim = simulate(&traces, &pf, &[0, 0], &Options::default()).unwrap();
    assert!(sim.stuck.is_empty());
    assert!(sim.predicted_s >= 2.0, "{}", sim.predicted_s);
    assert!(sim.predicted_s < 2.01, "{}", sim.predicted_s);
}

#[test]
fn the_flows_of_an_all_to_all_end_together_in_one_solve() {
    // 16 ranks, one all-to-all of 64 KB per pair (Open MPI's linear algorithm: 240 flows at
    // once, alike in size and rate): they end at one instant, solved once, not 240 times.
    let n = 16;
    let coll = Payload::Collective {
        comm: CommId::WORLD,
        root: None,
        send_bytes: 16 * (64 << 10),
        recv_bytes: 16 * (64 << 10),
        send_counts: None,
        recv_counts: None,
        request: None,
    };
    let traces: Vec<RankTrace> =
        (0..n).map(|r| rank(r, n, vec![ev(Op::Alltoall, 0.0, coll.clone())])).collect();
    let hosts: Vec<usize> = (0..n as usize).collect();
    let sim =
        simulate(&traces, &cluster(n as usize, 1e9, 1e-6), &hosts, &Options::default()).unwrap();
    assert!(sim.stuck.is_empty());
    assert_eq!(sim.messages, 240);
    assert!(sim.solves < 20, "{} solves for 240 flows", sim.solves);
    // Each rank's link carries 15 × 64 KB out at 1 GB/s.
    let wire = 15.0 * 65536.0 / 1e9;
    assert!(sim.predicted_s >= wire, "{} < {wire}", sim.predicted_s);
}

#[test]
fn a_non_blocking_collective_lets_its_rank_go_on_until_its_wait() {
    // Rank 0 starts a barrier and then receives 8 MB from rank 1, which sends it before it
    // starts the barrier (NBX's consensus, Hoefler et al. 2010): run as a blocking barrier,
    // rank 0 would wait in it for rank 1, and rank 1 in its send, above the eager threshold,
    // for rank 0's receive.
    let barrier = Payload::Collective {
        comm: CommId::WORLD,
        root: None,
        send_bytes: 0,
        recv_bytes: 0,
        send_counts: None,
        recv_counts: None,
        request: Some(RequestId(1)),
    };
    let wait = Payload::Completion {
        n_given: 1,
        completed: vec![mpiskel_trace::Completed {
            request: Some(RequestId(1)),
            source: None,
            tag: None,
            bytes: None,
        }],
    };
    let a = vec![
        ev(Op::Ibarrier, 0.0, barrier.clone()),
        ev(Op::Recv, 0.0, p2p(1, 8 << 20)),
        ev(Op::Wait, 0.0, wait.clone()),
    ];
    let b = vec![
        ev(Op::Send, 0.0, p2p(0, 8 << 20)),
        ev(Op::Ibarrier, 0.0, barrier),
        ev(Op::Wait, 0.0, wait),
    ];
    let traces = vec![rank(0, 2, a), rank(1, 2, b)];
    let sim = simulate(&traces, &cluster(2, 1e9, 1e-6), &[0, 1], &Options::default()).unwrap();
    assert!(sim.stuck.is_empty(), "{:?}", sim.stuck);
    // The message's 8 MB at 1 GB/s, and the barrier's messages.
    assert!(sim.predicted_s > 0.008, "{}", sim.predicted_s);
    assert!(sim.predicted_s < 0.01, "{}", sim.predicted_s);
}
