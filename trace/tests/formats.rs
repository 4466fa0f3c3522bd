//! Round-trip and robustness properties of the trace readers: what the writer writes reads back
//! unchanged; no input, random or truncated or corrupted, makes a reader panic; a truncated file
//! is reported with its rank and byte offset.

use std::io::Cursor;
use std::path::Path;

use mpiskel_trace::native::{self, Item, NativeReader, NativeWriter};
use mpiskel_trace::ti::{read_ti, TiOptions};
use mpiskel_trace::{
    Cart, CommId, Completed, Event, Op, OpClass, Payload, Peer, Rank, RankInfo, RequestId,
    TraceError, Wildcards, Work,
};
use proptest::prelude::*;

fn info(n_ranks: u32, instructions: bool) -> RankInfo {
    RankInfo {
        n_ranks,
        host: Some("node-1".into()),
        pid: Some(4242),
        mpi_library: Some("Open MPI v4.1.4".into()),
        start_unix_ns: Some(1_700_000_000_000_000_000),
        clock: "CLOCK_MONOTONIC".into(),
        has_instructions: instructions,
        has_cpu_time: instructions,
    }
}

fn peer() -> impl Strategy<Value = Peer> {
    prop_oneof![(0u32..64).prop_map(|r| Peer::Rank(Rank(r))), Just(Peer::Any), Just(Peer::Null)]
}

fn opt_req() -> impl Strategy<Value = Option<RequestId>> {
    prop::option::of((1u32..1000).prop_map(RequestId))
}

fn counts() -> impl Strategy<Value = Option<Vec<u64>>> {
    prop::option::of(prop::collection::vec(0u64..1 << 40, 0..8))
}

fn payload(op: Op) -> BoxedStrategy<Payload> {
    match op.class() {
        OpClass::Lifecycle => Just(Payload::None).boxed(),
        OpClass::Send | OpClass::Recv | OpClass::Probe => {
            (peer(), any::<i32>(), any::<u64>(), 0u32..10, opt_req(), any::<(bool, bool)>())
                .prop_map(|(peer, tag, bytes, comm, request, (ws, wt))| Payload::P2p {
                    peer,
                    tag,
                    bytes,
                    comm: CommId(comm),
                    request,
                    wildcards: Wildcards { source: ws, tag: wt },
                })
                .boxed()
        }
        OpClass::SendRecv => {
            (peer(), any::<i32>(), any::<u64>(), peer(), any::<i32>(), any::<u64>(), 0u32..10)
                .prop_map(|(dest, send_tag, send_bytes, source, recv_tag, recv_bytes, comm)| {
                    Payload::SendRecv {
                        dest,
                        send_tag,
                        send_bytes,
                        source,
                        recv_tag,
                        recv_bytes,
                        comm: CommId(comm),
                    }
                })
                .boxed()
        }
        OpClass::Completion => prop::collection::vec(
            (opt_req(), prop::option::of((0u32..64, any::<i32>(), any::<u64>()))),
            0..6,
        )
        .prop_flat_map(|done| {
            let n = done.len() as u32;
            (Just(done), n..n + 4)
        })
        .prop_map(|(done, n_given)| Payload::Completion {
            n_given,
            completed: done
                .into_iter()
                .map(|(request, recv)| Completed {
                    request,
                    source: recv.map(|r| Rank(r.0)),
                    tag: recv.map(|r| r.1),
                    bytes: recv.map(|r| r.2),
                })
                .collect(),
        })
        .boxed(),
        OpClass::Collective => (
            0u32..10,
            prop::option::of(0u32..64),
            any::<u64>(),
            any::<u64>(),
            counts(),
            counts(),
            opt_req(),
        )
            .prop_map(|(comm, root, send_bytes, recv_bytes, send_counts, recv_counts, request)| {
                Payload::Collective {
                    comm: CommId(comm),
                    root: root.map(Rank),
                    send_bytes,
                    recv_bytes,
                    send_counts: send_counts.map(Into::into),
                    recv_counts: recv_counts.map(Into::into),
                    request,
                }
            })
            .boxed(),
        OpClass::Comm => (
            0u32..10,
            prop::option::of(0u32..100),
            prop::option::of((any::<i32>(), any::<i32>())),
            prop::option::of(prop::collection::vec((1u32..64, any::<bool>()), 1..4)),
        )
            .prop_map(|(parent, created, split, cart)| Payload::Comm {
                parent: CommId(parent),
                created: created.map(CommId),
                color: split.map(|s| s.0),
                key: split.map(|s| s.1),
                // Split and Cartesian information never come together.
                cart: if split.is_some() {
                    None
                } else {
                    cart.map(|dp| {
                        Box::new(Cart {
                            dims: dp.iter().map(|x| x.0).collect(),
                            periods: dp.iter().map(|x| x.1).collect(),
                        })
                    })
                },
            })
            .boxed(),
    }
}

/// A sequence of events with consistent times: (op, gap, duration, payload, instructions).
fn events(instructions: bool) -> impl Strategy<Value = Vec<Event>> {
    let one = prop::sample::select(Op::ALL.to_vec()).prop_flat_map(|op| {
        (Just(op), 0u64..1 << 36, 0u64..1 << 30, payload(op), prop::option::of(0u64..1 << 40))
    });
    prop::collection::vec(one, 0..40).prop_map(move |raw| {
        let mut last = 0u64;
        raw.into_iter()
            .map(|(op, gap, dur, payload, instr)| {
                let enter = last + gap;
                let exit = enter + dur;
                last = exit;
                let gap_work = if instructions { instr.map(Work::Instructions) } else { None };
                // Processor time travels with the same flag setting in these tests.
                let gap_cpu_ns = instructions.then_some(gap / 2);
                Event {
                    op,
                    enter_ns: enter,
                    exit_ns: exit,
                    gap_ns: gap,
                    gap_work,
                    gap_cpu_ns,
                    gap_polls: 0,
                    payload,
                }
            })
            .collect()
    })
}

fn write(rank: Rank, info: &RankInfo, comms: &[(CommId, Vec<Rank>)], events: &[Event]) -> Vec<u8> {
    let mut w = NativeWriter::new(Vec::new(), rank, info).unwrap();
    for (id, m) in comms {
        w.comm(*id, m).unwrap();
    }
    for e in events {
        w.event(e).unwrap();
    }
    w.finish().unwrap()
}

/// Counts of calls not recorded, written before the footer, read back as they were written, after
/// the events; a rank file that holds them reads as the trace of that rank with them.
#[test]
fn unrecorded_calls_round_trip() {
    let put = mpiskel_trace::Unrecorded { calls: 40, bytes: 40 * 8192, ns: 1_250_000 };
    let lock = mpiskel_trace::Unrecorded { calls: 20, bytes: 0, ns: 300_000 };
    let mut w = NativeWriter::new(Vec::new(), Rank(0), &info(1, false)).unwrap();
    w.unrecorded("Put", &put).unwrap();
    w.unrecorded("Win_lock", &lock).unwrap();
    let bytes = w.finish().unwrap();
    let items = read_all(&bytes).unwrap();
    assert_eq!(
        items,
        vec![Item::Unrecorded("Put".into(), put), Item::Unrecorded("Win_lock".into(), lock)]
    );
    let reader = NativeReader::new(Cursor::new(&bytes), Path::new("mem.mpt")).unwrap();
    let rank = native::collect_rank(reader).unwrap();
    assert_eq!(rank.unrecorded.len(), 2);
    assert_eq!(rank.unrecorded["Put"], put);
}

fn read_all(bytes: &[u8]) -> Result<Vec<Item>, TraceError> {
    NativeReader::new(Cursor::new(bytes), Path::new("mem.mpt"))?.collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn native_round_trip(instr in any::<bool>(), evs in events(false), evs_i in events(true), rank in 0u32..8) {
        let evs = if instr { evs_i } else { evs };
        let info = info(8, instr);
        let comms = vec![(CommId(2), vec![Rank(0), Rank(3)]), (CommId(3), vec![Rank(rank)])];
        let bytes = write(Rank(rank), &info, &comms, &evs);
        let reader = NativeReader::new(Cursor::new(&bytes), Path::new("mem.mpt")).unwrap();
        prop_assert_eq!(reader.header().rank, Rank(rank));
        prop_assert_eq!(&reader.header().info, &info);
        let items: Vec<Item> = reader.collect::<Result<_, _>>().unwrap();
        let mut want: Vec<Item> = comms.iter().map(|(i, m)| Item::Comm(*i, m.clone())).collect();
        want.extend(evs.iter().cloned().map(Item::Event));
        prop_assert_eq!(items, want);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = read_all(&bytes);
    }

    #[test]
    fn random_records_after_a_valid_header_never_panic(tail in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = write(Rank(1), &info(4, true), &[], &[]);
        bytes.truncate(bytes.len() - 10); // drop the footer
        bytes.extend(tail);
        let _ = read_all(&bytes);
    }

    #[test]
    fn corrupted_files_never_panic(evs in events(true), pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut bytes = write(Rank(2), &info(4, true), &[], &evs);
        let i = pos.index(bytes.len());
        bytes[i] = byte;
        let _ = read_all(&bytes);
    }

    #[test]
    fn ti_random_lines_never_panic(lines in prop::collection::vec(
        (0u32..3, prop::sample::select(vec!["init", "finalize", "compute", "send", "isend", "recv", "irecv",
            "wait", "waitall", "test", "sendrecv", "barrier", "bcast", "reduce", "allreduce", "alltoall",
            "alltoallv", "gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv",
            "reducescatter", "comm_size", "scan", "bogus"]),
         prop::collection::vec(prop::sample::select(vec!["0", "1", "2", "-1", "1e6", "nan", "x", "99999999999"]), 0..8)),
        0..30)) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.txt");
        let text: String = lines.iter().map(|(r, a, args)| format!("{r} {a} {}\n", args.join(" "))).collect();
        std::fs::write(&f, text).unwrap();
        let _ = read_ti(&f, &TiOptions::default());
    }
}

/// A real file, cut at every length: always an error, never a panic; past the header the error
/// names the rank; an incomplete file names the offset where whole records end.
#[test]
fn every_truncation_is_reported_with_rank_and_offset() {
    let evs: Vec<Event> = (0..30)
        .map(|i| Event {
            op: if i % 2 == 0 { Op::Isend } else { Op::Waitall },
            enter_ns: i * 1000 + 10,
            exit_ns: i * 1000 + 500,
            gap_ns: 0,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload: if i % 2 == 0 {
                Payload::P2p {
                    peer: Peer::Rank(Rank(1)),
                    tag: 7,
                    bytes: 4096,
                    comm: CommId::WORLD,
                    request: Some(RequestId(i as u32 + 1)),
                    wildcards: Wildcards::default(),
                }
            } else {
                Payload::Completion {
                    n_given: 1,
                    completed: vec![Completed {
                        request: Some(RequestId(i as u32)),
                        source: None,
                        tag: None,
                        bytes: None,
                    }],
                }
            },
        })
        .collect();
    let bytes = write(Rank(3), &info(4, false), &[(CommId(2), vec![Rank(0), Rank(3)])], &evs);
    let header_len = {
        let h = write(Rank(3), &info(4, false), &[], &[]);
        h.len() - 10
    };
    assert!(read_all(&bytes).is_ok());
    for cut in 0..bytes.len() {
        let err = read_all(&bytes[..cut]).expect_err("a cut file is never complete");
        match err {
            TraceError::Incomplete { rank, offset, .. } => {
                assert!(offset <= cut as u64, "cut {cut}: offset {offset}");
                if cut >= header_len {
                    assert_eq!(rank, Some(Rank(3)), "cut {cut}");
                }
                let msg = err_string(&bytes[..cut]);
                assert!(msg.contains("mem.mpt") && msg.contains("byte"), "{msg}");
            }
            TraceError::Corrupt { .. } | TraceError::BadMagic { .. } => {}
            other => panic!("cut {cut}: unexpected {other}"),
        }
    }
}

fn err_string(b: &[u8]) -> String {
    read_all(b).unwrap_err().to_string()
}

/// Through the public entry point: a trace directory with a truncated rank file.
#[test]
fn truncated_rank_file_in_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..2u32 {
        let evs = vec![
            Event {
                op: Op::Init,
                enter_ns: 0,
                exit_ns: 5,
                gap_ns: 0,
                gap_work: None,
                gap_cpu_ns: None,
                gap_polls: 0,
                payload: Payload::None,
            },
            Event {
                op: Op::Barrier,
                enter_ns: 10,
                exit_ns: 20,
                gap_ns: 5,
                gap_work: None,
                gap_cpu_ns: None,
                gap_polls: 0,
                payload: Payload::Collective {
                    comm: CommId::WORLD,
                    root: None,
                    send_bytes: 0,
                    recv_bytes: 0,
                    send_counts: None,
                    recv_counts: None,
                    request: None,
                },
            },
        ];
        let mut bytes = write(Rank(r), &info(2, false), &[], &evs);
        if r == 1 {
            bytes.truncate(bytes.len() - 4);
        }
        std::fs::write(dir.path().join(native::rank_file_name(Rank(r))), bytes).unwrap();
    }
    let err =
        mpiskel_trace::TraceSet::open(dir.path(), &Default::default()).unwrap_err().to_string();
    assert!(
        err.contains("rank-1.mpt")
            && err.contains("rank 1")
            && err.contains("incomplete")
            && err.contains("byte"),
        "{err}"
    );
}

/// The format stores "no request" as 0: a request numbered 0 cannot be written, and is refused
/// rather than read back as no request (which would leave its wait waiting for nothing).
#[test]
fn request_zero_is_refused_by_the_writer() {
    let e = Event {
        op: Op::Iallreduce,
        enter_ns: 0,
        exit_ns: 1,
        gap_ns: 0,
        gap_work: None,
        gap_cpu_ns: None,
        gap_polls: 0,
        payload: Payload::Collective {
            comm: CommId::WORLD,
            root: None,
            send_bytes: 8,
            recv_bytes: 8,
            send_counts: None,
            recv_counts: None,
            request: Some(RequestId(0)),
        },
    };
    let mut w = NativeWriter::new(Vec::new(), Rank(0), &info(1, false)).unwrap();
    let err = w.event(&e).unwrap_err().to_string();
    assert!(err.contains("request id 0"), "{err}");
    let mut ok = e.clone();
    if let Payload::Collective { request, .. } = &mut ok.payload {
        *request = Some(RequestId(1));
    }
    w.event(&ok).unwrap();
}
