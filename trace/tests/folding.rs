//! Polls folded as a native trace is read (`TraceSet::open_folded`) give the trace that reading
//! it whole and folding after (`TraceSet::open`, then `TraceSet::fold_polls`) gives, with the
//! same counts, and a broken event among the polls is refused at its place in the file.

use std::path::Path;

use mpiskel_trace::native::{self, NativeWriter};
use mpiskel_trace::{
    CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, RequestId, TraceError, TraceSet,
};

fn info(n_ranks: u32) -> RankInfo {
    RankInfo { n_ranks, clock: "CLOCK_MONOTONIC".into(), ..RankInfo::default() }
}

fn call(op: Op, gap_ns: u64, dur_ns: u64, gap_cpu_ns: Option<u64>, payload: Payload) -> Event {
    Event {
        op,
        enter_ns: 0,
        exit_ns: dur_ns,
        gap_ns,
        gap_work: None,
        gap_cpu_ns,
        gap_polls: 0,
        payload,
    }
}

fn p2p(peer: u32, request: Option<u32>) -> Payload {
    Payload::P2p {
        peer: Peer::Rank(Rank(peer)),
        tag: 3,
        bytes: 64,
        comm: CommId::WORLD,
        request: request.map(RequestId),
        wildcards: Default::default(),
    }
}

fn test(done: Option<u32>) -> Payload {
    let completed = done
        .map(|r| {
            vec![Completed { request: Some(RequestId(r)), source: None, tag: None, bytes: None }]
        })
        .unwrap_or_default();
    Payload::Completion { n_given: 1, completed }
}

fn probe(bytes: u64) -> Payload {
    Payload::P2p {
        peer: Peer::Any,
        tag: 3,
        bytes,
        comm: CommId::WORLD,
        request: None,
        wildcards: Default::default(),
    }
}

/// One rank of a 2-rank program that polls: runs of failed tests of drawn lengths, some with
/// work between polls, ended by the test that completes, by a probe that finds, by a send
/// (no waiting call: one poll stays), and a run at the very end.
fn polling_rank(r: u32, seed: u64) -> Vec<Event> {
    let mut s = seed;
    let mut next = move |m: u64| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 33) % m
    };
    let peer = 1 - r;
    let mut out = Vec::new();
    for k in 1..=40u32 {
        out.push(call(Op::Irecv, 1_000, 500, Some(1_000), p2p(peer, Some(k))));
        out.push(call(Op::Send, 2_000, 800, Some(2_000), p2p(peer, None)));
        for _ in 0..next(300) {
            let gap = if next(10) == 0 { 80_000 } else { 200 };
            out.push(call(Op::Test, gap, 300, Some(gap), test(None)));
        }
        match next(3) {
            0 => out.push(call(Op::Test, 100, 300, Some(100), test(Some(k)))),
            1 => {
                out.push(call(Op::Iprobe, 100, 300, None, probe(64)));
                out.push(call(Op::Wait, 100, 300, Some(100), test(Some(k))));
            }
            _ => out.push(call(Op::Wait, 100, 300, Some(100), test(Some(k)))),
        }
        for _ in 0..next(5) {
            out.push(call(Op::Iprobe, 500, 300, Some(500), probe(0)));
        }
    }
    for _ in 0..7 {
        out.push(call(Op::Testany, 100, 300, Some(100), test(None)));
    }
    out
}

/// Writes rank `r` of an `n`-rank run into `dir`, its events laid out in time.
fn write_rank(dir: &Path, r: u32, n: u32, events: &[Event]) {
    let mut w = NativeWriter::new(Vec::new(), Rank(r), &info(n)).unwrap();
    let mut t = 0;
    for e in events {
        let enter = t + e.gap_ns;
        let exit = enter + e.duration_ns();
        w.event(&Event { enter_ns: enter, exit_ns: exit, ..e.clone() }).unwrap();
        t = exit;
    }
    std::fs::write(dir.join(native::rank_file_name(Rank(r))), w.finish().unwrap()).unwrap();
}

fn both_ways(path: &Path) -> (TraceSet, TraceSet, u64) {
    let mut whole = TraceSet::open(path, &Default::default()).unwrap();
    let after = whole.fold_polls();
    let (streamed, during) = TraceSet::open_folded(path, &Default::default()).unwrap();
    assert_eq!(after, during, "the same polls folded, the same runs, the same times");
    (whole, streamed, after.polls)
}

#[test]
fn polls_folded_as_read_equal_polls_folded_after_reading() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..2 {
        write_rank(dir.path(), r, 2, &polling_rank(r, 17 + u64::from(r)));
    }
    let (whole, streamed, polls) = both_ways(dir.path());
    assert!(polls > 1_000, "{polls} polls folded");
    assert_eq!(whole, streamed);
    // A traced program's polls (Test, Testall, Testany, Testsome and Iprobe loops).
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/traces/p2pmodes");
    let (whole, streamed, polls) = both_ways(&fixture);
    assert!(polls > 0, "the fixture polls");
    assert_eq!(whole, streamed);
}

#[test]
fn a_broken_poll_is_refused_at_its_place_in_the_file() {
    let place = |e: TraceError| match e {
        TraceError::Invalid { rank, event, reason, .. } => (rank, event, reason),
        other => panic!("{other}"),
    };
    // A failed probe, which folding removes, of a rank the run does not have; then one of a
    // communicator the rank never defines.
    for (peer, comm, says) in [
        (Peer::Rank(Rank(7)), CommId::WORLD, "not a rank of this 2-rank run"),
        (Peer::Any, CommId(9), "communicator 9 is never defined"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_rank(dir.path(), 0, 2, &polling_rank(0, 5));
        let mut events = polling_rank(1, 6);
        // A probe another follows: folded into the run's last.
        let at = events
            .windows(2)
            .position(|w| w.iter().all(|e| e.op == Op::Iprobe && is_failed(e)))
            .unwrap();
        if let Payload::P2p { peer: p, comm: c, .. } = &mut events[at].payload {
            (*p, *c) = (peer, comm);
        }
        write_rank(dir.path(), 1, 2, &events);
        let whole = place(TraceSet::open(dir.path(), &Default::default()).unwrap_err());
        let streamed = place(TraceSet::open_folded(dir.path(), &Default::default()).unwrap_err());
        assert_eq!(whole, streamed);
        assert_eq!((whole.0, whole.1), (Rank(1), Some(at as u64)));
        assert!(whole.2.contains(says), "{}", whole.2);
    }
}

fn is_failed(e: &Event) -> bool {
    mpiskel_trace::polls::is_failed_poll(e)
}
