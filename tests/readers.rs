//! The readers against real traces: the NPB traces of `../shared/fixtures/npb` (per-rank action
//! counts must equal each folder's `counts.csv`), SimGrid's public sample traces, and the
//! project's own recorded traces in `fixtures/traces`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use mpiskel_trace::summary::summarize;
use mpiskel_trace::{Op, Payload, Peer, Rank, ReadOptions, TraceFormat, TraceSet};
use support::{mpiskel, root, shared};

/// One row of a `counts.csv`.
#[derive(serde::Deserialize)]
struct CountRow {
    rank: u32,
    action: String,
    count: u64,
}

/// rank → action → count, from a `counts.csv`.
fn read_counts(path: &Path) -> BTreeMap<u32, BTreeMap<String, u64>> {
    let mut m: BTreeMap<u32, BTreeMap<String, u64>> = BTreeMap::new();
    for row in csv::Reader::from_path(path).unwrap().deserialize::<CountRow>() {
        let r = row.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        m.entry(r.rank).or_default().insert(r.action, r.count);
    }
    m
}

fn npb_dirs() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(shared().join("fixtures/npb"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("trace.txt").is_file())
        .collect();
    v.sort();
    assert!(v.len() >= 14, "expected the NPB traces, found {}", v.len());
    v
}

#[test]
fn npb_action_counts_equal_counts_csv() {
    for dir in npb_dirs() {
        let set = TraceSet::open(&dir.join("trace.txt"), &ReadOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_eq!(set.format, TraceFormat::SimgridTi);
        let want = read_counts(&dir.join("counts.csv"));
        let s = summarize(&set);
        assert_eq!(s.ranks as usize, want.len(), "{}", dir.display());
        for r in &s.per_rank {
            assert_eq!(r.records, want[&r.rank.0], "{} rank {}", dir.display(), r.rank);
        }
    }
}

#[test]
fn npb_inspect_json_reports_the_same_counts() {
    let dir = shared().join("fixtures/npb/lu.S.4");
    let out = mpiskel().arg("inspect").arg("--json").arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = read_counts(&dir.join("counts.csv"));
    for (r, counts) in want {
        let got = &v["per_rank"][r as usize]["records"];
        for (k, n) in counts {
            assert_eq!(got[&k], n, "rank {r} {k}");
        }
    }
    // LU: a 2-D grid without wrap-around, 2 to 4 neighbours on 4 ranks (2 x 2: all corners).
    assert_eq!(v["matrix"]["degree_min"], 2);
    assert_eq!(v["matrix"]["symmetric"], true);
}

#[test]
fn npb_structure_as_the_readme_describes() {
    let open = |name: &str| {
        TraceSet::open(
            &shared().join("fixtures/npb").join(name).join("trace.txt"),
            &ReadOptions::default(),
        )
        .unwrap()
    };
    // BT on 16 ranks: rank 0 talks to 1, 3, 4, 12, 13 and 7.
    let bt = open("bt.S.16");
    let m = mpiskel_trace::summary::send_matrix(&bt);
    let mut peers: Vec<u32> =
        m.keys().filter(|(s, d)| s.0 == 0 && d.0 != 0).map(|(_, d)| d.0).collect();
    peers.sort();
    assert_eq!(peers, vec![1, 3, 4, 7, 12, 13]);
    // CG: self-messages on the diagonal of the process grid.
    let cg = open("cg.S.4");
    assert!(summarize(&cg).matrix.self_messages.messages > 0);
    // Every wait completes an isend/irecv that was posted.
    for rt in &cg.ranks {
        let irecvs = rt.events.iter().filter(|e| e.op == Op::Irecv).count();
        let completed: usize = rt
            .events
            .iter()
            .map(|e| match &e.payload {
                Payload::Completion { completed, .. } => completed.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(irecvs, completed, "rank {}", rt.rank);
    }
    // Compute volumes become time at the given rate: twice the speed halves the compute.
    let slow =
        TraceSet::open(&shared().join("fixtures/npb/cg.S.4/trace.txt"), &ReadOptions::default())
            .unwrap();
    let fast_opts = ReadOptions { ti: mpiskel_trace::TiOptions { flops_per_second: 2e9 } };
    let fast = TraceSet::open(&shared().join("fixtures/npb/cg.S.4/trace.txt"), &fast_opts).unwrap();
    let (a, b) = (slow.ranks[0].compute_ns() as f64, fast.ranks[0].compute_ns() as f64);
    assert!((a / b - 2.0).abs() < 1e-3, "{a} vs {b}");
}

#[test]
fn simgrid_public_samples_read() {
    let base = shared().join("fixtures/public/simgrid-ti");
    let set =
        TraceSet::open(&base.join("ti_traces_32_1.index.txt"), &ReadOptions::default()).unwrap();
    assert_eq!(set.n_ranks(), 32);
    assert!(set.ranks.iter().all(|r| r.record_counts.get("comm_size").copied() == Some(15)));
    let mut files: Vec<_> = std::fs::read_dir(base.join("replay-examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    // actions0.txt and actions1.txt are the two ranks of one trace, without an index: alone,
    // each is refused with a clear error; with an index naming both, they read.
    for f in files.iter().filter(|f| !f.ends_with("actions0.txt") && !f.ends_with("actions1.txt")) {
        let set = TraceSet::open(f, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(set.n_ranks() >= 2, "{}", f.display());
    }
    let err = TraceSet::open(&base.join("replay-examples/actions0.txt"), &ReadOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("partner 1 is not a rank of this 1-rank trace"), "{err}");
    let dir = support::scratch("ti-index");
    let ex = base.join("replay-examples");
    let index = dir.join("index.txt");
    std::fs::write(
        &index,
        format!("{}\n{}\n", ex.join("actions0.txt").display(), ex.join("actions1.txt").display()),
    )
    .unwrap();
    assert_eq!(TraceSet::open(&index, &ReadOptions::default()).unwrap().n_ranks(), 2);
    // alltoallv: per-rank counts in elements of 8 bytes.
    let set = TraceSet::open(
        &base.join("replay-examples/actions_alltoallv.txt"),
        &ReadOptions::default(),
    )
    .unwrap();
    let e = set.ranks[0].events.iter().find(|e| e.op == Op::Alltoallv).unwrap();
    let Payload::Collective { send_counts, recv_counts, .. } = &e.payload else { panic!() };
    assert_eq!(send_counts.as_deref(), Some(&[8, 320, 240][..]));
    assert_eq!(recv_counts.as_deref(), Some(&[8, 640, 800][..]));
    // Old-style send without tag, wait by (src, dst, tag).
    let set = TraceSet::open(&index, &ReadOptions::default()).unwrap();
    let rank1 = &set.ranks[1];
    assert!(matches!(
        rank1.events[1].payload,
        Payload::P2p { peer: Peer::Rank(Rank(0)), bytes: 8_000_000, .. }
    ));
}

#[test]
fn ti_errors_name_file_line_and_rank() {
    let dir = support::scratch("ti-errors");
    let f = dir.join("bad.txt");
    std::fs::write(&f, "0 init\n1 init\n0 send 1 0 10\n1 frobnicate 3\n").unwrap();
    let err = TraceSet::open(&f, &ReadOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("bad.txt:4") && err.contains("rank 1") && err.contains("frobnicate"),
        "{err}"
    );
    std::fs::write(&f, "0 init\n0 send 7 0 10\n").unwrap();
    let err = TraceSet::open(&f, &ReadOptions::default()).unwrap_err().to_string();
    assert!(err.contains("bad.txt:2") && err.contains("partner 7"), "{err}");
    std::fs::write(&f, "0 init\n0 wait 0 1 5\n1 init\n").unwrap();
    let err = TraceSet::open(&f, &ReadOptions::default()).unwrap_err().to_string();
    assert!(err.contains("bad.txt:2") && err.contains("no pending"), "{err}");
}

/// The traces committed in `fixtures/traces` (recorded with the project's tracer) read
/// completely, and `inspect` shows them.
#[test]
fn recorded_fixture_traces_read() {
    let dir = root().join("fixtures/traces");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if !p.is_dir() {
            continue;
        }
        let set = TraceSet::open(&p, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let meta = set.meta.as_ref().expect("meta.json");
        assert_eq!(meta.ranks as usize, set.n_ranks());
        assert!(set.ranks.iter().all(|r| r.events.first().map(|e| e.op) == Some(Op::Init)
            || r.events.first().map(|e| e.op) == Some(Op::InitThread)));
        assert!(set.ranks.iter().all(|r| r.events.last().map(|e| e.op) == Some(Op::Finalize)));
        let out = mpiskel().arg("inspect").arg(&p).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        n += 1;
    }
    assert!(n >= 9, "expected the recorded fixture traces, found {n}");
}
