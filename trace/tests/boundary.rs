//! The whole-run checks at the reader boundary: inputs that read well byte by byte but do not
//! make a run — one rank file of many, a rank that does not exist, a header claiming billions of
//! ranks, TI rank numbers with gaps — are refused with an error that names the file, the rank and
//! the call, never a panic downstream.

use std::path::Path;

use mpiskel_trace::native::{self, NativeWriter};
use mpiskel_trace::{CommId, Event, Op, Payload, Peer, Rank, RankInfo, TraceSet};

fn info(n_ranks: u32) -> RankInfo {
    RankInfo { n_ranks, clock: "CLOCK_MONOTONIC".into(), ..RankInfo::default() }
}

fn event(op: Op, payload: Payload) -> Event {
    Event {
        op,
        enter_ns: 0,
        exit_ns: 1,
        gap_ns: 0,
        gap_work: None,
        gap_cpu_ns: None,
        gap_polls: 0,
        payload,
    }
}

fn send_to(peer: u32) -> Event {
    event(
        Op::Send,
        Payload::P2p {
            peer: Peer::Rank(Rank(peer)),
            tag: 0,
            bytes: 8,
            comm: CommId::WORLD,
            request: None,
            wildcards: Default::default(),
        },
    )
}

/// Writes rank `r` of an `n`-rank run into `dir`.
fn write_rank(dir: &Path, r: u32, n: u32, events: &[Event]) {
    let mut w = NativeWriter::new(Vec::new(), Rank(r), &info(n)).unwrap();
    for (k, e) in events.iter().enumerate() {
        let t = 10 * k as u64;
        w.event(&Event { enter_ns: t, exit_ns: t + 1, ..e.clone() }).unwrap();
    }
    std::fs::write(dir.join(native::rank_file_name(Rank(r))), w.finish().unwrap()).unwrap();
}

fn open_err(path: &Path) -> String {
    TraceSet::open(path, &Default::default()).unwrap_err().to_string()
}

#[test]
fn one_rank_file_of_a_larger_run_is_refused_naming_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..4 {
        write_rank(dir.path(), r, 4, &[send_to((r + 1) % 4)]);
    }
    assert_eq!(TraceSet::open(dir.path(), &Default::default()).unwrap().n_ranks(), 4);
    let file = dir.path().join("rank-1.mpt");
    let err = open_err(&file);
    assert!(
        err.contains("rank-1.mpt")
            && err.contains("rank 1 of a 4-rank run")
            && err.contains(&dir.path().display().to_string()),
        "{err}"
    );
}

#[test]
fn a_single_rank_run_opens_from_its_rank_file() {
    let dir = tempfile::tempdir().unwrap();
    write_rank(dir.path(), 0, 1, &[event(Op::Init, Payload::None)]);
    assert_eq!(
        TraceSet::open(&dir.path().join("rank-0.mpt"), &Default::default()).unwrap().n_ranks(),
        1
    );
}

#[test]
fn a_peer_outside_the_run_is_refused_with_rank_and_call() {
    let dir = tempfile::tempdir().unwrap();
    write_rank(dir.path(), 0, 2, &[event(Op::Init, Payload::None), send_to(1)]);
    write_rank(dir.path(), 1, 2, &[event(Op::Init, Payload::None), send_to(7)]);
    let err = open_err(dir.path());
    assert!(
        err.contains("rank 1: call 1: MPI_Send: peer 7 is not a rank of this 2-rank run"),
        "{err}"
    );
}

#[test]
fn a_root_outside_the_run_and_an_undefined_communicator_are_refused() {
    let collective = |comm: u32, root: u32| {
        event(
            Op::Bcast,
            Payload::Collective {
                comm: CommId(comm),
                root: Some(Rank(root)),
                send_bytes: 8,
                recv_bytes: 8,
                send_counts: None,
                recv_counts: None,
                request: None,
            },
        )
    };
    let dir = tempfile::tempdir().unwrap();
    write_rank(dir.path(), 0, 2, &[collective(0, 0)]);
    write_rank(dir.path(), 1, 2, &[collective(0, 5)]);
    assert!(open_err(dir.path()).contains("MPI_Bcast: root 5 is not a rank"));
    write_rank(dir.path(), 1, 2, &[collective(77, 0)]);
    assert!(open_err(dir.path()).contains("MPI_Bcast: communicator 77 is never defined"));
}

#[test]
fn a_header_claiming_billions_of_ranks_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    write_rank(dir.path(), 0, 1 << 31, &[]);
    let err = open_err(&dir.path().join("rank-0.mpt"));
    assert!(err.contains("2147483648 ranks") && err.contains("byte"), "{err}");
}

#[test]
fn ti_rank_numbers_with_gaps_or_overflow_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        ("0 init\n4294967295 init\n", "rank 1 has no lines (ranks 0 to 4294967295 appear)"),
        ("0 init\n2 init\n", "rank 1 has no lines (ranks 0 to 2 appear)"),
        ("3 init\n3 finalize\n", "holds the actions of rank 3 alone"),
    ] {
        let f = dir.path().join("t.txt");
        std::fs::write(&f, text).unwrap();
        let err = open_err(&f);
        assert!(err.contains(want), "{err}");
    }
}

/// An error that quotes what the OS said does not hand it on as its source too: a chain printer
/// (`anyhow`'s `{:#}`) would print it twice.
#[test]
fn a_missing_file_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.trace");
    let err = TraceSet::open(&missing, &Default::default()).unwrap_err();
    assert!(std::error::Error::source(&err).is_none());
    let text = err.to_string();
    assert!(text.starts_with(&missing.display().to_string()), "{text}");
    assert_eq!(text.matches("os error").count(), 1, "{text}");
}

#[test]
fn sizes_no_mpi_call_moves_are_refused_before_any_sum_overflows() {
    let dir = tempfile::tempdir().unwrap();
    let mut huge = send_to(1);
    if let Payload::P2p { bytes, .. } = &mut huge.payload {
        *bytes = u64::MAX / 3;
    }
    write_rank(dir.path(), 0, 2, &[send_to(1), huge]);
    write_rank(dir.path(), 1, 2, &[send_to(0)]);
    let err = open_err(dir.path());
    assert!(err.contains("rank 0") && err.contains("call 1") && err.contains("2^48"), "{err}");
}

#[test]
fn times_that_run_backwards_are_refused_with_rank_and_call() {
    let ranks: Vec<_> = (0..2)
        .map(|r| {
            let mut events = vec![send_to(1 - r), send_to(1 - r)];
            events[1].enter_ns = 5;
            events[1].exit_ns = 6;
            events[0].enter_ns = 10;
            events[0].exit_ns = 20;
            mpiskel_trace::RankTrace {
                rank: Rank(r),
                info: info(2),
                events,
                trailing_gap_ns: 0,
                comms: [(CommId::WORLD, mpiskel_trace::model::world_members(2))].into(),
                record_counts: Default::default(),
                unrecorded: Default::default(),
            }
        })
        .collect();
    let err = mpiskel_trace::validate::validate("t".as_ref(), &ranks).unwrap_err().to_string();
    assert!(
        err.contains("rank 0") && err.contains("call 1") && err.contains("times out of order"),
        "{err}"
    );
}

#[test]
fn a_ti_file_that_is_not_text_is_reported_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.txt");
    std::fs::write(&f, b"0 init\n1 init\n0 send 1 0 8\n1 recv 0 0 \xff8\n").unwrap();
    let err = open_err(&f);
    assert!(err.contains(":4") && err.contains("not UTF-8"), "{err}");
    assert_eq!(err.matches("UTF-8").count(), 1, "{err}");
}

#[test]
fn a_bad_token_of_megabytes_is_quoted_as_a_short_excerpt() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.txt");
    let long = "x".repeat(4 << 20);
    for text in [
        format!("0 init\n1 init\n0 {long} 1\n"),
        format!("0 init\n1 init\n0 send 1 0 {long}\n"),
        format!("0 init\n{long} init\n"),
    ] {
        std::fs::write(&f, text).unwrap();
        let err = open_err(&f);
        assert!(err.len() < 300, "{} bytes: {}…", err.len(), &err[..300]);
        assert!(err.contains(&format!("({} bytes)", 4 << 20)), "{err}");
    }
}
