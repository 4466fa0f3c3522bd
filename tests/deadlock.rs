//! The deadlock checker on real programs: every fixture program's recorded trace, replayed as the
//! checker's program (each rank's calls in order, peers as recorded), finishes under the
//! strictest semantics; cutting one receive out of a trace makes the checker name the rank that
//! would hang.

mod support;

use std::collections::BTreeMap;

use mpiskel_program::{check, stuck_sends, CheckOp};
use mpiskel_trace::{OpClass, Payload, Peer, Rank, RankTrace, ReadOptions, TraceSet};
use support::root;

/// A rank's calls as checker operations. Communicators are numbered by their member lists, so
/// that all members agree; non-blocking collectives are checked as blocking ones.
fn program(rt: &RankTrace, comm_ids: &mut BTreeMap<Vec<Rank>, u32>) -> Vec<CheckOp> {
    let mut out = Vec::new();
    let mut p2p_requests = std::collections::BTreeSet::new();
    let mut probed_any = None;
    for e in &rt.events {
        match (&e.payload, e.op.class()) {
            (Payload::P2p { peer: Peer::Rank(p), tag, bytes, request, .. }, OpClass::Send) => {
                let (to, tag, bytes) = (p.0, *tag, *bytes);
                match request {
                    Some(r) => {
                        p2p_requests.insert(*r);
                        out.push(CheckOp::Isend { to, tag, slot: r.0, bytes })
                    }
                    None => out.push(CheckOp::Send { to, tag, bytes }),
                }
            }
            (Payload::P2p { peer, tag, wildcards, .. }, OpClass::Probe) => {
                // Probe(ANY_SOURCE) then Recv from the probed source receives from any source.
                probed_any = wildcards.source.then_some((*peer, *tag));
            }
            (Payload::P2p { peer, tag, request, wildcards, .. }, OpClass::Recv)
                if *peer != Peer::Null =>
            {
                // A receive posted with MPI_ANY_SOURCE stays one: the source the run happened
                // to see is one possible order, not the program.
                let any = wildcards.source || probed_any.take() == Some((*peer, *tag));
                let from = if any { None } else { peer.rank().map(|r| r.0) };
                match request {
                    Some(r) => {
                        p2p_requests.insert(*r);
                        out.push(CheckOp::Irecv { from, tag: *tag, slot: r.0 })
                    }
                    None => out.push(CheckOp::Recv { from, tag: *tag }),
                }
            }
            (Payload::SendRecv { dest, send_tag, send_bytes, source, recv_tag, .. }, _) => {
                // As the pair of non-blocking calls and a wait it is defined to be.
                let base = u32::MAX - 4;
                if let Peer::Rank(d) = dest {
                    let (tag, bytes) = (*send_tag, *send_bytes);
                    out.push(CheckOp::Isend { to: d.0, tag, slot: base, bytes });
                }
                if let Peer::Rank(s) = source {
                    out.push(CheckOp::Irecv { from: Some(s.0), tag: *recv_tag, slot: base + 1 });
                }
                let slots = [(dest, base), (source, base + 1)]
                    .into_iter()
                    .filter(|(p, _)| matches!(p, Peer::Rank(_)))
                    .map(|(_, s)| s)
                    .collect();
                out.push(CheckOp::Wait { slots });
            }
            (Payload::Completion { completed, .. }, _) => {
                let slots: Vec<u32> = completed
                    .iter()
                    .filter_map(|c| c.request)
                    .filter(|r| p2p_requests.contains(r))
                    .map(|r| r.0)
                    .collect();
                if !slots.is_empty() {
                    out.push(CheckOp::Wait { slots });
                }
            }
            (Payload::Collective { comm, .. }, _) => {
                let members = rt.members(*comm).expect("communicator defined").to_vec();
                let next = comm_ids.len() as u32;
                let id = *comm_ids.entry(members.clone()).or_insert(next);
                let mut m: Vec<u32> = members.iter().map(|r| r.0).collect();
                m.sort_unstable();
                out.push(CheckOp::Collective {
                    comm: id,
                    members: m.into(),
                    name: e.op.name().into(),
                });
            }
            _ => {}
        }
    }
    out
}

fn programs(set: &TraceSet) -> Vec<Vec<CheckOp>> {
    let mut ids = BTreeMap::new();
    set.ranks.iter().map(|rt| program(rt, &mut ids)).collect()
}

/// Every fixture trace replays without deadlock under rendezvous semantics, but `eager`
/// (`fixtures/programs/eager.c`), which sends to its neighbour before it receives and so
/// finishes only where the MPI library buffers its sends, as the traced run did, and `tagged`
/// (`fixtures/programs/tagged.c`), whose partners tell each other their sizes head to head:
/// the check finds every rank in `MPI_Send`.
#[test]
fn every_fixture_trace_replays_without_deadlock() {
    let dir = root().join("fixtures/traces");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let set = TraceSet::open(&p, &ReadOptions::default()).unwrap();
        let progs = programs(&set);
        assert!(progs.iter().any(|p| !p.is_empty()), "{}", p.display());
        let verdict = check(&progs);
        if p.ends_with("eager") || p.ends_with("tagged") {
            let d = verdict.expect("eager and tagged rely on buffered sends");
            assert_eq!(d.blocked.len(), 4, "{d}");
            assert!(d.blocked.iter().all(|b| matches!(b.op, CheckOp::Send { .. })), "{d}");
        } else if let Some(d) = verdict {
            panic!("{}: {d}", p.display());
        }
        n += 1;
    }
    assert!(n >= 15, "{n} traces replayed");
}

/// `anysource` and `irregular` receive with MPI_ANY_SOURCE; the trace also records the sources
/// the run happened to see. Fixed to one schedule, a program can deadlock under rendezvous
/// semantics where it would not with its wildcards (shown on a three-rank case; whether a
/// recorded schedule does depends on the run): which is why the trace keeps the wildcard.
#[test]
fn fixed_any_source_order_is_not_safe_under_rendezvous() {
    for name in ["anysource", "irregular"] {
        let set =
            TraceSet::open(&root().join("fixtures/traces").join(name), &ReadOptions::default())
                .unwrap();
        let mut fixed = programs(&set);
        let mut wildcards = 0;
        for (rt, prog) in set.ranks.iter().zip(&mut fixed) {
            let recvs = rt.events.iter().filter_map(|e| match &e.payload {
                Payload::P2p { peer: Peer::Rank(p), wildcards, .. }
                    if e.op.class() == OpClass::Recv =>
                {
                    Some((p.0, wildcards.source))
                }
                _ => None,
            });
            let mut recvs = recvs.collect::<Vec<_>>().into_iter();
            for op in prog.iter_mut() {
                if let CheckOp::Recv { from, .. } | CheckOp::Irecv { from, .. } = op {
                    let (actual, any) = recvs.next().expect("one receive per receive");
                    wildcards += usize::from(any);
                    *from = Some(actual);
                }
            }
        }
        assert!(wildcards > 0, "{name} records its MPI_ANY_SOURCE receives");
        // Whether the recorded order deadlocks depends on the schedule the run happened to
        // take; the program with its wildcards kept must not.
        assert!(check(&programs(&set)).is_none(), "{name} with its wildcards deadlocks");
    }
    // A schedule whose fixed order deadlocks: rank 0 takes whatever comes first (rank 1's
    // message, the only one that can come), then serves rank 2, then takes rank 2's answer.
    // Fixed to the other order, rank 0 waits for rank 2, which waits for rank 0.
    let wild = |first: Option<u32>, second: Option<u32>| {
        vec![
            vec![
                CheckOp::Recv { from: first, tag: 0 },
                CheckOp::Send { to: 2, tag: 0, bytes: 8 },
                CheckOp::Recv { from: second, tag: 0 },
            ],
            vec![CheckOp::Send { to: 0, tag: 0, bytes: 8 }],
            vec![
                CheckOp::Recv { from: Some(0), tag: 0 },
                CheckOp::Send { to: 0, tag: 0, bytes: 8 },
            ],
        ]
    };
    assert!(check(&wild(None, None)).is_none(), "with wildcards it finishes");
    assert!(check(&wild(Some(1), Some(2))).is_none(), "the order it took finishes");
    assert!(check(&wild(Some(2), Some(1))).is_some(), "the other fixed order deadlocks");
}

#[test]
fn a_trace_with_a_receive_cut_out_is_rejected_with_the_rank_that_hangs() {
    let set =
        TraceSet::open(&root().join("fixtures/traces/ring"), &ReadOptions::default()).unwrap();
    let mut progs = programs(&set);
    // Rank 2 forgets its last receive from rank 1: rank 1's last send can never complete.
    let last = progs[2].iter().rposition(|op| matches!(op, CheckOp::Recv { .. })).unwrap();
    progs[2].remove(last);
    let d = check(&progs).expect("deadlock");
    let b = d.blocked.iter().find(|b| b.rank == 1).expect("rank 1 blocked");
    assert!(matches!(b.op, CheckOp::Send { to: 2, tag: 0, .. }), "{d}");
    assert!(d.to_string().contains("waits for rank 2 to post a matching receive"), "{d}");
}

/// Matching (Xu & Subhlok 2008, Fig. 3) on the logical programs of the fixture programs and NPB: every
/// send and receive of the exchange-style codes pairs up globally. Pipelined blocking sweeps
/// (wavefront, LU) are marked local by Fig. 3's conservative rule (another blocking call lies
/// between a receive and its partner send): their safety comes from the order across ranks,
/// which only the deadlock checker of the instantiated program can confirm.
#[test]
fn structured_programs_have_no_local_calls() {
    use mpiskel_program::{balance_class, calls_of_class, match_calls};
    let mut paths: Vec<std::path::PathBuf> =
        ["ring", "ring-fortran", "halo2d-periodic-4x4", "halo2d-open-4x4", "halo3d-2x2x2"]
            .iter()
            .map(|n| root().join("fixtures/traces").join(n))
            .collect();
    paths.extend(
        ["bt.S.16", "cg.S.16"]
            .iter()
            .map(|n| support::shared().join("fixtures/npb").join(n).join("trace.txt")),
    );
    for p in paths {
        let l =
            mpiskel_logicalize::logicalize(&TraceSet::open(&p, &ReadOptions::default()).unwrap());
        for (k, class) in l.classes.iter().enumerate() {
            let m = match_calls(&calls_of_class(class, l.topology()));
            assert!(m.global_pairs > 0, "{} class {k}", p.display());
            assert_eq!((m.local_sends, m.local_recvs), (0, 0), "{} class {k}: {m:?}", p.display());
            assert_same_balance(&m, &balance_class(class, l.topology()));
        }
    }
}

/// What a skeleton is built from ([`mpiskel_program::balance_class`], without the list of calls)
/// is what matching the list gives: the sizes after balancing and every count.
fn assert_same_balance(m: &mpiskel_program::Matching, b: &mpiskel_program::Balanced) {
    assert_eq!(m.bytes, b.bytes);
    assert_eq!(
        (m.global_pairs, m.balanced, m.local_sends, m.local_recvs),
        (b.global_pairs, b.balanced, b.local_sends, b.local_recvs)
    );
}

#[test]
fn pipelined_sweeps_are_local_under_the_conservative_rule() {
    use mpiskel_program::{balance_class, calls_of_class, match_calls};
    let set =
        TraceSet::open(&root().join("fixtures/traces/wavefront-4x4"), &ReadOptions::default())
            .unwrap();
    let l = mpiskel_logicalize::logicalize(&set);
    let m = match_calls(&calls_of_class(&l.classes[0], l.topology()));
    assert!(m.local_sends > 0 && m.local_recvs > 0, "{m:?}");
    assert_same_balance(&m, &balance_class(&l.classes[0], l.topology()));
    // The sweep itself is deadlock-free: the recorded program replays.
    assert_eq!(check(&programs(&set)), None);
}

/// Collectives meet by their order on a communicator and must be of one kind: a rank that makes
/// an `MPI_Barrier` where the others make an `MPI_Allreduce` hangs a real run (classes whose cut
/// loops hold different collectives; a LAMMPS skeleton did so before the checker compared
/// kinds), so the checker refuses it, naming the kind the others made.
#[test]
fn collectives_of_different_kinds_at_the_same_point_are_refused() {
    let members: std::sync::Arc<[u32]> = vec![0u32, 1, 2].into();
    let coll =
        |name: &str| CheckOp::Collective { comm: 0, members: members.clone(), name: name.into() };
    let same = vec![vec![coll("Allreduce"), coll("Barrier")]; 3];
    assert!(check(&same).is_none(), "the same kinds in the same order complete");
    let mut mixed = same.clone();
    mixed[2] = vec![coll("Barrier"), coll("Allreduce")];
    let d = check(&mixed).expect("mismatched kinds never complete");
    let text = d.to_string();
    assert!(text.contains("MPI_Allreduce at this point"), "{text}");
    assert!(d.blocked.iter().any(|b| b.rank == 2), "{text}");
}

/// The members of a rooted collective must name one root: a broadcast whose root one class
/// names differently (a mutated trace; fuzz seed 9500714 before this rule) hangs a real run,
/// where the simulation found the ranks stuck, so the checker refuses it, naming the root.
#[test]
fn a_rooted_collective_whose_classes_name_different_roots_is_refused() {
    let class = |rank: u32, root: u32| {
        serde_json::json!({"ranks": [rank], "notation": "1", "phases": [{
            "name": "setup", "full": 1, "run": 1, "is_loop": false, "origin": "test",
            "compute_s": 0.0, "calls": 1,
            "body": [{"stmt": "call", "call": {"call": "collective", "op": "Bcast",
                "traced": "Bcast", "comm": 0, "root": root, "bytes": 8, "slot": null}}]}]})
    };
    let skeleton = |roots: [u32; 2]| -> mpiskel_program::Skeleton {
        serde_json::from_value(serde_json::json!({
            "n_ranks": 2, "topology": "line", "layout": {"type": "table", "neighbours": [[1], [0]]},
            "directions": [], "comms": [{"type": "world"}],
            "classes": [class(0, roots[0]), class(1, roots[1])],
            "class_of_rank": [0, 1], "grid_coords": [], "n_slots": 0, "send_bytes": 0,
            "recv_bytes": 0, "matching": {"global_pairs": 0, "balanced": 0, "local_sends": 0,
                "local_recvs": 0, "local_policy": ""}
        }))
        .unwrap()
    };
    let (same, _) = mpiskel_program::instantiate::instantiate(&skeleton([1, 1]));
    assert!(check(&same).is_none(), "one root: the broadcast completes");
    let (mixed, _) = mpiskel_program::instantiate::instantiate(&skeleton([0, 1]));
    let d = check(&mixed).expect("two roots never complete");
    assert!(d.to_string().contains("(root "), "{d}");
}

/// One execution finds every blocking send a program relies on the library buffering: the
/// fixture `tagged`'s partners send each other their sizes, then an empty "ready" message, head
/// to head every step, so the execution stops twice a step until those sends are taken as
/// buffered, and then finishes. A deadlock no buffering mends (a receive whose send never comes)
/// is still reported.
#[test]
fn one_execution_finds_every_send_the_program_relies_on_buffering() {
    let set =
        TraceSet::open(&root().join("fixtures/traces/tagged"), &ReadOptions::default()).unwrap();
    let progs = programs(&set);
    assert!(check(&progs).is_some(), "tagged relies on buffered sends");
    let (stuck, left) = stuck_sends(&progs);
    assert!(left.is_none(), "{}", left.unwrap());
    // Each rank's two head-to-head sends of each of the 60 steps (the size, then the empty
    // "ready" message).
    for r in 0..4u32 {
        let n = stuck.iter().filter(|s| s.0 == r).count();
        assert_eq!(n, 120, "rank {r}: {n} sends taken as buffered");
    }
    // A receive nobody sends to stays a deadlock.
    let hang = vec![vec![CheckOp::Recv { from: Some(1), tag: 0 }], vec![]];
    let (stuck, left) = stuck_sends(&hang);
    assert!(stuck.is_empty());
    assert_eq!(left.expect("a deadlock").blocked.len(), 1);
}
