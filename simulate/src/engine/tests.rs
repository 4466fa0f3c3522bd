use super::*;
use crate::platform::ClusterSpec;

pub(crate) fn cluster(n: usize, bw: f64, lat: f64) -> Platform {
    Platform::cluster(&ClusterSpec {
        name: "t".into(),
        host_names: (0..n).map(|i| format!("h{i}")).collect(),
        speed: 1e9,
        cores: 1,
        bandwidth: bw,
        latency: lat,
        split_duplex: true,
        fatpipe: false,
        backbone: None,
        loopback: (1e11, 1e-7),
    })
}

pub(crate) fn ev(op: Op, gap_flops: f64, payload: Payload) -> Event {
    Event {
        op,
        enter_ns: 0,
        exit_ns: 0,
        gap_ns: (gap_flops) as u64,
        gap_work: (gap_flops > 0.0).then_some(Work::Flops(gap_flops)),
        gap_cpu_ns: None,
        gap_polls: 0,
        payload,
    }
}

pub(crate) fn rank(r: u32, n: u32, events: Vec<Event>) -> RankTrace {
    made_rank(r, n, events)
}

#[test]
fn buffered_sends_return_at_once_where_plain_ones_of_the_same_size_wait() {
    // Each rank sends 8 MB to the other, then receives: above the eager threshold two
    // MPI_Send wait for receives that come after them; two MPI_Bsend return at once.
    let p2p = |peer: u32| Payload::P2p {
        peer: Peer::Rank(Rank(peer)),
        tag: 1,
        bytes: 8 << 20,
        comm: mpiskel_trace::CommId::WORLD,
        request: None,
        wildcards: Default::default(),
    };
    let run = |send: Op| {
        let traces: Vec<RankTrace> = (0..2)
            .map(|r| {
                let other = 1 - r;
                rank(r, 2, vec![ev(send, 0.0, p2p(other)), ev(Op::Recv, 0.0, p2p(other))])
            })
            .collect();
        simulate(&traces, &cluster(2, 1e9, 1e-6), &[0, 1], &Options::default()).unwrap()
    };
    assert_eq!(run(Op::Send).stuck.len(), 2);
    let buffered = run(Op::Bsend);
    assert!(buffered.stuck.is_empty());
    // 8 MiB each way at 1 GB/s (SMPI's factors aside): milliseconds, not nothing.
    assert!(buffered.predicted_s > 5e-3, "{}", buffered.predicted_s);
}

#[test]
fn ranks_sharing_one_core_take_turns_and_ranks_on_their_own_do_not() {
    let traces: Vec<RankTrace> = (0..4)
        .map(|r| rank(r, 4, vec![ev(Op::Finalize, 1e9 * f64::from(r + 1), Payload::None)]))
        .collect();
    let pf = cluster(4, 1e9, 1e-6);
    let sim = simulate(&traces, &pf, &[0, 0, 0, 0], &Options::default()).unwrap();
    // 1+2+3+4 seconds of work on one core: the last ends at 10 s.
    assert!((sim.predicted_s - 10.0).abs() < 1e-9, "{}", sim.predicted_s);
    let sim = simulate(&traces, &pf, &[0, 1, 2, 3], &Options::default()).unwrap();
    assert!((sim.predicted_s - 4.0).abs() < 1e-9, "{}", sim.predicted_s);
}
