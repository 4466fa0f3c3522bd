//! The OTF2 reader against Score-P's traces in `../shared/fixtures/public/otf2` (a 2-rank
//! ping-pong and a 10-rank MPI coverage test), checked against `otf2-print` of Debian's
//! otf2-tools: every rank's MPI calls per region, and its MPI point-to-point records. Both go
//! through the whole pipeline, and their skeletons run under Open MPI and MPICH.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use mpiskel_trace::{Op, Payload, Peer, ReadOptions, TraceFormat, TraceSet};
use support::{check_report, mpi_lock, mpiskel, run_skeleton, scratch, shared};

fn otf2(name: &str) -> PathBuf {
    shared().join("fixtures/public/otf2").join(name)
}

fn open(path: &Path) -> TraceSet {
    TraceSet::open(path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// `otf2-print -L loc`'s events of one location: (kind, MPI region entered).
fn printed(anchor: &Path, loc: usize) -> Vec<(String, Option<String>)> {
    let out =
        Command::new("otf2-print").arg("-L").arg(loc.to_string()).arg(anchor).output().unwrap();
    assert!(out.status.success(), "otf2-print (Debian's otf2-tools) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let kind = l.split_whitespace().next()?.to_owned();
            let region = l
                .split_once("Region: \"")
                .map(|(_, r)| r.split('"').next().unwrap_or("").to_owned());
            Some((kind, region))
        })
        .collect()
}

#[test]
fn every_rank_holds_the_mpi_calls_and_records_otf2_print_shows() {
    for name in ["pipit-ping-pong", "sst-macro-mpi-coverage"] {
        let anchor = otf2(name).join("traces.otf2");
        let set = open(&otf2(name));
        assert_eq!(set.format, TraceFormat::Otf2);
        for r in &set.ranks {
            // Score-P's locations are numbered as the ranks in these traces.
            let events = printed(&anchor, r.rank.0 as usize);
            let mut want: BTreeMap<String, u64> = BTreeMap::new();
            for (kind, region) in &events {
                if let (true, Some(reg)) = (kind == "ENTER", region) {
                    if reg.starts_with("MPI_") {
                        *want.entry(reg.clone()).or_default() += 1;
                    }
                }
            }
            assert_eq!(r.record_counts, want, "{name} rank {}", r.rank);
            let count = |k: &str| events.iter().filter(|(kind, _)| kind == k).count();
            let ops = |f: &dyn Fn(&Op) -> bool| r.events.iter().filter(|e| f(&e.op)).count();
            assert_eq!(ops(&|o| *o == Op::Send), count("MPI_SEND"), "{name}");
            assert_eq!(ops(&|o| *o == Op::Recv), count("MPI_RECV"), "{name}");
            assert_eq!(ops(&|o| *o == Op::Isend), count("MPI_ISEND"), "{name}");
            assert_eq!(ops(&|o| *o == Op::Irecv), count("MPI_IRECV_REQUEST"), "{name}");
            let collectives =
                r.events.iter().filter(|e| matches!(e.payload, Payload::Collective { .. }));
            assert_eq!(collectives.count(), count("MPI_COLLECTIVE_END"), "{name}");
            // Every Irecv learned its source from its completion; every request completed.
            for e in &r.events {
                if let Payload::P2p { peer, .. } = e.payload {
                    assert!(matches!(peer, Peer::Rank(_)), "{name} rank {}: {e:?}", r.rank);
                }
            }
            let completed: usize = r
                .events
                .iter()
                .map(|e| match &e.payload {
                    Payload::Completion { completed, .. } => completed.len(),
                    _ => 0,
                })
                .sum();
            assert_eq!(completed, count("MPI_ISEND_COMPLETE") + count("MPI_IRECV"), "{name}");
        }
    }
    // The coverage test's split communicators: pairs of ranks five apart (Score-P's groups).
    let cov = open(&otf2("sst-macro-mpi-coverage"));
    let pairs: Vec<Vec<u32>> = cov.ranks[3]
        .comms
        .values()
        .filter(|m| m.len() == 2)
        .map(|m| m.iter().map(|r| r.0).collect())
        .collect();
    assert_eq!(pairs, [vec![3, 9]]);
}

#[test]
fn both_otf2_traces_go_through_the_pipeline_and_their_skeletons_run_under_both_libraries() {
    for name in ["pipit-ping-pong", "sst-macro-mpi-coverage"] {
        for cmd in ["inspect", "logicalize", "compress"] {
            let out = mpiskel().arg(cmd).arg(otf2(name)).output().unwrap();
            assert!(out.status.success(), "{cmd} {name}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let dir = scratch(&format!("otf2-{name}")).join("skeleton");
        let out = mpiskel().arg("build").arg(otf2(name)).arg("-o").arg(&dir).output().unwrap();
        assert!(out.status.success(), "build {name}: {}", String::from_utf8_lossy(&out.stderr));
        let ranks = open(&otf2(name)).n_ranks() as u64;
        let _lock = mpi_lock();
        for mpi in ["openmpi", "mpich"] {
            let r = run_skeleton(&dir, mpi, 120, 60, &[]);
            check_report(&r, mpi, ranks);
        }
    }
}

#[test]
fn a_damaged_otf2_trace_is_refused_naming_it() {
    let src = otf2("pipit-ping-pong");
    let dir = scratch("otf2-damaged");
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    for f in ["0.def", "0.evt", "1.def"] {
        std::fs::copy(src.join("traces").join(f), dir.join("traces").join(f)).unwrap();
    }
    // Rank 1's events cut in half.
    let evt = std::fs::read(src.join("traces/1.evt")).unwrap();
    std::fs::write(dir.join("traces/1.evt"), &evt[..evt.len() / 2]).unwrap();
    let e = TraceSet::open(&dir, &ReadOptions::default()).map(|s| s.n_ranks());
    let e = e.expect_err("a cut event file is refused").to_string();
    assert!(e.contains("traces.otf2"), "{e}");
    // Not an anchor file at all.
    std::fs::write(dir.join("traces.otf2"), b"\x03BOTF2 but nothing else").unwrap();
    let e = TraceSet::open(&dir.join("traces.otf2"), &ReadOptions::default()).map(|s| s.n_ranks());
    let e = e.expect_err("a broken anchor is refused").to_string();
    assert!(e.contains("traces.otf2") && e.contains("libotf2"), "{e}");
}
