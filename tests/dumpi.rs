//! The DUMPI reader against the public DUMPI traces of `../shared/fixtures/public/dumpi`:
//! sst-dumpi's 4-rank test trace, checked call by call against `dumpi2ascii`'s text of rank 0
//! and the call counts sst-dumpi's tests expect, and a 7-rank Blue Gene/P trace, checked
//! against the call counts each rank file's footer holds (read here apart from the reader,
//! with the labels the test trace's count list gives). Each goes through the whole pipeline,
//! and the Blue Gene/P skeleton runs under Open MPI and MPICH.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mpiskel_trace::{
    CommId, Op, Payload, Peer, Rank, ReadOptions, TraceError, TraceFormat, TraceSet,
};
use support::{check_report, mpi_lock, mpiskel, run_skeleton, scratch, shared};

fn dumpi(name: &str) -> PathBuf {
    shared().join("fixtures/public/dumpi").join(name)
}

fn open(path: &Path) -> TraceSet {
    TraceSet::open(path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The call names in label order, from sst-dumpi's expected counts (one line per label).
fn label_names() -> Vec<String> {
    let text = std::fs::read_to_string(dumpi("sst-dumpi-testtrace/callcounts-single.txt")).unwrap();
    text.lines().map(|l| l.split(" called").next().unwrap().to_owned()).collect()
}

/// The non-zero call counts of a DUMPI rank file's footer: the index's seventh field gives its
/// offset; a magic word, then one 32-bit count per label (big-endian).
fn footer_counts(file: &Path) -> BTreeMap<String, u64> {
    let b = std::fs::read(file).unwrap();
    let be64 = |at: usize| u64::from_be_bytes(b[at..at + 8].try_into().unwrap());
    let footer = be64(b.len() - 64 + 6 * 8) as usize;
    assert_eq!(be64(footer), 0xf007_fee7, "{}", file.display());
    let names = label_names();
    let mut out = BTreeMap::new();
    for (i, name) in names.iter().enumerate().filter(|(_, n)| *n != "MPI_ALL_FUNCTIONS") {
        let at = footer + 8 + 4 * i;
        let n = u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
        if n > 0 {
            out.insert(name.clone(), u64::from(n));
        }
    }
    out
}

#[test]
fn the_test_trace_counts_equal_sst_dumpis_expected_counts() {
    let set = open(&dumpi("sst-dumpi-testtrace/testtrace.meta"));
    assert_eq!(set.format, TraceFormat::Dumpi);
    assert_eq!(set.n_ranks(), 4);
    let text = std::fs::read_to_string(dumpi("sst-dumpi-testtrace/callcounts-single.txt")).unwrap();
    let want: BTreeMap<String, u64> = text
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(" called ")?;
            let n: u64 = rest.split_whitespace().next()?.parse().ok()?;
            (n > 0 && name != "MPI_ALL_FUNCTIONS").then(|| (name.to_owned(), n))
        })
        .collect();
    assert_eq!(want.len(), 9, "{want:?}");
    for r in &set.ranks {
        assert_eq!(r.record_counts, want, "rank {}", r.rank);
    }
}

/// One call of `dumpi2ascii`'s text: name, wall-clock entry and exit (ns), and its arguments.
struct AsciiCall {
    name: String,
    enter_ns: u64,
    exit_ns: u64,
    cpu_enter_ns: u64,
    args: BTreeMap<String, String>,
}

fn ns(s: &str) -> u64 {
    let (a, b) = s.split_once('.').unwrap();
    a.parse::<u64>().unwrap() * 1_000_000_000 + b.parse::<u64>().unwrap()
}

fn ascii_calls(path: &Path) -> Vec<AsciiCall> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<AsciiCall> = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() > 5 && words[1] == "entering" {
            out.push(AsciiCall {
                name: words[0].to_owned(),
                enter_ns: ns(words[4].trim_end_matches(',')),
                exit_ns: 0,
                cpu_enter_ns: ns(words[6]),
                args: BTreeMap::new(),
            });
        } else if words.len() > 5 && words[1] == "returning" {
            out.last_mut().unwrap().exit_ns = ns(words[4].trim_end_matches(','));
        } else if let (Some(c), Some((k, v))) = (out.last_mut(), line.split_once('=')) {
            if c.exit_ns == 0 {
                let key = k.split_whitespace().last().unwrap_or(k).to_owned();
                c.args.insert(key, v.to_owned());
            }
        }
    }
    out
}

#[test]
fn rank_0_of_the_test_trace_equals_dumpi2ascii_call_by_call() {
    let set = open(&dumpi("sst-dumpi-testtrace"));
    let r0 = &set.ranks[0];
    let calls = ascii_calls(&dumpi("sst-dumpi-testtrace/testtrace-0000.txt"));
    assert_eq!(calls.len(), 9);
    let t0 = calls[0].enter_ns;
    // The calls mpiskel models, in order (Comm_rank and Comm_size are read past).
    let modelled: Vec<&AsciiCall> =
        calls.iter().filter(|c| !c.name.starts_with("MPI_Comm_")).collect();
    assert_eq!(r0.events.len(), modelled.len());
    let mut last_exit = 0;
    for (e, c) in r0.events.iter().zip(&modelled) {
        assert_eq!(format!("MPI_{}", e.op.name()), c.name);
        assert_eq!(e.enter_ns, c.enter_ns - t0, "{}", c.name);
        assert_eq!(e.exit_ns, c.exit_ns - t0, "{}", c.name);
        // The time between calls (Comm_rank and Comm_size included) is computation.
        assert_eq!(e.gap_ns, e.enter_ns - last_exit, "{}", c.name);
        last_exit = e.exit_ns;
        match (&e.payload, c.name.as_str()) {
            (Payload::P2p { peer, tag, bytes, comm, request, .. }, "MPI_Isend") => {
                assert_eq!(c.args["dest"], "1");
                assert_eq!(*peer, Peer::Rank(Rank(1)));
                assert_eq!(c.args["tag"], tag.to_string());
                assert_eq!((c.args["count"].as_str(), *bytes), ("1", 4), "one MPI_INT");
                assert_eq!(*comm, CommId::WORLD);
                assert!(request.is_some());
            }
            (Payload::P2p { peer, tag, bytes, request, .. }, "MPI_Recv") => {
                assert_eq!(c.args["source"], "3");
                assert_eq!(*peer, Peer::Rank(Rank(3)));
                assert_eq!((*tag, *bytes, *request), (1337, 4, None));
            }
            (Payload::Completion { n_given, completed }, "MPI_Wait") => {
                // The Isend's request, completed.
                assert_eq!(*n_given, 1);
                let isend = r0.events.iter().find(|x| x.op == Op::Isend).unwrap();
                let Payload::P2p { request, .. } = isend.payload else { unreachable!() };
                assert_eq!(completed.len(), 1);
                assert_eq!(completed[0].request, request);
            }
            (Payload::Collective { root, send_bytes, recv_bytes, .. }, "MPI_Allreduce") => {
                assert_eq!((*root, *send_bytes, *recv_bytes), (None, 4, 4));
            }
            (Payload::Collective { send_bytes, .. }, "MPI_Barrier") => assert_eq!(*send_bytes, 0),
            (Payload::None, "MPI_Init" | "MPI_Finalize") => {}
            (p, name) => panic!("{name}: unexpected payload {p:?}"),
        }
    }
    // Processor time: the Init's entry, as dumpi2ascii prints it, starts the first gap's clock.
    assert!(r0.info.has_cpu_time);
    let cpu0 = calls[0].cpu_enter_ns;
    assert!(cpu0 > 0);
    assert_eq!(r0.info.host.as_deref(), Some("hadalst-mbp.ca.sandia.gov"));
}

#[test]
fn the_blue_gene_trace_counts_equal_each_footer_and_its_group_communicator_resolves() {
    let dir = dumpi("sst-macro-testbgp");
    let set = open(&dir);
    assert_eq!(set.n_ranks(), 7);
    for r in &set.ranks {
        let file = dir.join(format!("testbgp-{:04}.bin", r.rank.0));
        assert_eq!(r.record_counts, footer_counts(&file), "rank {}", r.rank);
        // Every Isend is completed by one of the Waitalls, and every completed request was
        // started by this rank.
        let started = r.events.iter().filter(|e| matches!(e.op, Op::Isend | Op::Irecv)).count();
        let completed: usize = r
            .events
            .iter()
            .map(|e| match &e.payload {
                Payload::Completion { completed, .. } => {
                    completed.iter().filter(|c| c.request.is_some()).count()
                }
                _ => 0,
            })
            .sum();
        assert_eq!(started, completed, "rank {}", r.rank);
        // MPI_Comm_create over the world from a group: every rank gets a communicator whose
        // members are world ranks, itself among them.
        let made: Vec<CommId> = r
            .events
            .iter()
            .filter_map(|e| match e.payload {
                Payload::Comm { created, .. } if e.op == Op::CommCreate => created,
                _ => None,
            })
            .collect();
        for c in made {
            let m = r.members(c).unwrap();
            assert!(m.contains(&r.rank), "rank {}: {m:?}", r.rank);
        }
    }
}

#[test]
fn both_dumpi_traces_go_through_the_pipeline_and_the_skeleton_runs_under_both_libraries() {
    for (name, path) in [
        ("testtrace", dumpi("sst-dumpi-testtrace/testtrace.meta")),
        ("testbgp", dumpi("sst-macro-testbgp")),
    ] {
        for cmd in ["inspect", "logicalize", "compress"] {
            let out = mpiskel().arg(cmd).arg(&path).output().unwrap();
            assert!(out.status.success(), "{cmd} {name}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let dir = scratch(&format!("dumpi-{name}")).join("skeleton");
        let out = mpiskel().arg("build").arg(&path).arg("-o").arg(&dir).output().unwrap();
        assert!(out.status.success(), "build {name}: {}", String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("skeleton.json")).unwrap())
                .unwrap();
        // `build` refuses a program that can block: the check ran over every rank.
        assert_eq!(doc["check"]["ranks"], doc["n_ranks"], "{name}: {}", doc["check"]);
        assert!(doc["check"]["operations"].as_u64() > Some(0), "{name}: {}", doc["check"]);
        if name == "testbgp" {
            let _lock = mpi_lock();
            for mpi in ["openmpi", "mpich"] {
                let r = run_skeleton(&dir, mpi, 120, 60, &[]);
                check_report(&r, mpi, 7);
            }
        }
    }
}

#[test]
fn bad_dumpi_input_is_refused_naming_file_rank_and_byte() {
    let src = dumpi("sst-macro-testbgp");
    let dir = scratch("dumpi-bad");
    let copy = |cut: &dyn Fn(Vec<u8>) -> Vec<u8>| {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(src.join("testbgp.meta"), dir.join("testbgp.meta")).unwrap();
        for r in 0..7 {
            let name = format!("testbgp-{r:04}.bin");
            let b = std::fs::read(src.join(&name)).unwrap();
            let b = if r == 3 { cut(b) } else { b };
            std::fs::write(dir.join(&name), b).unwrap();
        }
    };
    let refused = |what: &str| -> String {
        match TraceSet::open(&dir, &ReadOptions::default()) {
            Ok(_) => panic!("{what}: read as if whole"),
            Err(e) => e.to_string(),
        }
    };
    // Cut short: the index at the end is gone.
    copy(&|b| b[..b.len() / 2].to_vec());
    let e = refused("cut");
    assert!(e.contains("testbgp-0003.bin") && e.contains("rank 3") && e.contains("byte"), "{e}");
    // The second record's label (after Init at byte 16: a 29-byte header, argc and seven
    // arguments) made one whose layout the reader does not know.
    copy(&|mut b| {
        b[123..125].copy_from_slice(&[0x01, 0x20]);
        b
    });
    let e = refused("label");
    assert!(e.contains("testbgp-0003.bin: rank 3: byte 123") && e.contains("label 288"), "{e}");
    // The first argument's length (byte 49) far past the end of the file: refused, nothing
    // allocated for it.
    copy(&|mut b| {
        b[49..53].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
        b
    });
    let e = refused("length");
    assert!(e.contains("rank 3: byte 49") && e.contains("runs past the end"), "{e}");
    // A rank file given alone, and a missing rank file.
    let e = match TraceSet::open(&src.join("testbgp-0000.bin"), &ReadOptions::default()) {
        Ok(_) => panic!("a single DUMPI rank file read as a whole run"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("DUMPI rank file") && e.contains(".meta"), "{e}");
    copy(&|b| b);
    std::fs::remove_file(dir.join("testbgp-0005.bin")).unwrap();
    match TraceSet::open(&dir, &ReadOptions::default()) {
        Err(TraceError::NotATrace { path, reason }) => {
            assert!(path.ends_with("testbgp-0005.bin") && reason.contains("7 ranks"), "{reason}");
        }
        other => panic!("missing rank file: {other:?}"),
    }
}
