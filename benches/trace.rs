//! Benchmarks of the trace stage: tracer overhead, trace bytes per event, reader throughput.
//!
//! Run with `cargo bench --bench trace` (or `make bench`); needs OpenMPI (`mpicc.openmpi`,
//! `mpirun.openmpi`) and `../shared/fixtures` (or `MPISKEL_SHARED`). Prints a Markdown report;
//! BENCHMARKS.md records its results.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use mpiskel_trace::native::{self, NativeWriter};
use mpiskel_trace::tracer::{self, Mpi};
use mpiskel_trace::{
    CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, ReadOptions, RequestId, TraceSet,
    Wildcards,
};

const REPS: usize = 7;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shared() -> PathBuf {
    std::env::var_os("MPISKEL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spread(v: &[f64]) -> (f64, f64) {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(0.0, f64::max);
    (min, max)
}

/// Runs callrate on 2 ranks; returns (calls of rank 0, seconds from Init to Finalize).
fn callrate(bin: &Path, iters: u32, work: u32, preload: Option<(&Path, &Path)>) -> (f64, f64) {
    let mut cmd = Command::new("mpirun.openmpi");
    cmd.args(["--allow-run-as-root", "-np", "2"]);
    if let Some((lib, dir)) = preload {
        cmd.arg("-x").arg(format!("LD_PRELOAD={}", lib.display()));
        cmd.arg("-x").arg(format!("MPISKEL_TRACE_DIR={}", dir.display()));
    }
    cmd.arg(bin).arg(iters.to_string()).arg("8").arg(work.to_string());
    let out = cmd.output().expect("mpirun.openmpi runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| -> f64 {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {text}"))
    };
    (field("calls="), field("seconds="))
}

fn tracer_overhead(report: &mut String) -> PathBuf {
    let bins = root().join("target/fixture-programs/openmpi");
    let ok = Command::new("make")
        .args(["-s", "-C"])
        .arg(root().join("fixtures/programs"))
        .args(["MPI=openmpi", &format!("OUT={}", bins.display())])
        .status()
        .unwrap()
        .success();
    assert!(ok, "building fixtures");
    let lib = tracer::build(Mpi::OpenMpi, &root().join("target/bench-tracer")).unwrap();
    let dir = root().join("target/bench-trace-callrate");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bin = bins.join("callrate");
    report.push_str(
        "## Tracer overhead (OpenMPI 4.1.4, 2 ranks, shared memory, 8-byte messages)\n\n",
    );
    report.push_str("| compute per iteration | calls (rank 0) | untraced s (median, min–max) | traced s (median, min–max) | overhead per call | overhead % of run time |\n|---|---|---|---|---|---|\n");
    for (iters, work) in [(200_000u32, 0u32), (20_000, 10)] {
        let (mut plain, mut traced, mut calls) = (Vec::new(), Vec::new(), 0.0);
        for _ in 0..REPS {
            let (c, t) = callrate(&bin, iters, work, None);
            plain.push(t);
            let (c2, t2) = callrate(&bin, iters, work, Some((&lib, &dir)));
            assert_eq!(c, c2);
            traced.push(t2);
            calls = c;
        }
        let (p, t) = (median(plain.clone()), median(traced.clone()));
        let ((pa, pb), (ta, tb)) = (spread(&plain), spread(&traced));
        report.push_str(&format!(
            "| {} kflop | {calls:.0} | {p:.4} ({pa:.4}–{pb:.4}) | {t:.4} ({ta:.4}–{tb:.4}) | {:.0} ns | {:.1} % |\n",
            work,
            (t - p) / calls * 1e9,
            (t - p) / p * 100.0
        ));
    }
    report.push('\n');
    dir
}

fn bytes_per_event(report: &mut String, callrate_dir: &Path) {
    report.push_str("## Trace bytes per event (native format, as written by the tracer)\n\n| trace | ranks | events | bytes | bytes/event |\n|---|---|---|---|---|\n");
    let mut dirs: Vec<PathBuf> = vec![callrate_dir.to_path_buf()];
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fixtures.sort();
    dirs.extend(fixtures);
    for d in dirs {
        let Ok(set) = TraceSet::open(&d, &ReadOptions::default()) else {
            continue;
        };
        let events: usize = set.ranks.iter().map(|r| r.events.len()).sum();
        let bytes: u64 = (0..set.n_ranks())
            .map(|r| {
                std::fs::metadata(d.join(native::rank_file_name(Rank(r as u32)))).unwrap().len()
            })
            .sum();
        let name = if d == callrate_dir {
            "callrate (20,000 iterations, 10 kflop each)".to_owned()
        } else {
            format!("fixtures/traces/{}", d.file_name().unwrap().to_string_lossy())
        };
        report.push_str(&format!(
            "| {name} | {} | {events} | {bytes} | {:.1} |\n",
            set.n_ranks(),
            bytes as f64 / events as f64
        ));
    }
    report.push('\n');
}

/// A synthetic halo-exchange rank file of `n` events, written with [`NativeWriter`].
fn synthetic(path: &Path, n: u64) {
    let f = std::fs::File::create(path).unwrap();
    let info = RankInfo { n_ranks: 64, clock: "CLOCK_MONOTONIC".into(), ..RankInfo::default() };
    let mut w = NativeWriter::new(f, Rank(5), &info).unwrap();
    let mut t = 0;
    let mut req = 0;
    for i in 0..n {
        t += 1500;
        let payload = match i % 3 {
            0 => Payload::P2p {
                peer: Peer::Any,
                tag: 3,
                bytes: 4096,
                comm: CommId::WORLD,
                request: Some(RequestId({
                    req += 1;
                    req
                })),
                wildcards: Wildcards { source: true, tag: false },
            },
            1 => Payload::P2p {
                peer: Peer::Rank(Rank((i % 64) as u32)),
                tag: 3,
                bytes: 4096,
                comm: CommId::WORLD,
                request: Some(RequestId({
                    req += 1;
                    req
                })),
                wildcards: Wildcards::default(),
            },
            _ => Payload::Completion {
                n_given: 2,
                completed: vec![
                    Completed {
                        request: Some(RequestId(req - 1)),
                        source: Some(Rank(4)),
                        tag: Some(3),
                        bytes: Some(4096),
                    },
                    Completed {
                        request: Some(RequestId(req)),
                        source: None,
                        tag: None,
                        bytes: None,
                    },
                ],
            },
        };
        let op = [Op::Irecv, Op::Isend, Op::Waitall][(i % 3) as usize];
        w.event(&Event {
            op,
            enter_ns: t,
            exit_ns: t + 300,
            gap_ns: 0,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        })
        .unwrap();
        t += 300;
    }
    w.finish().unwrap();
}

/// Lines of the rank files a SimGrid index names (each action is a line).
fn ti_lines(index: &Path) -> (u64, u64) {
    let dir = index.parent().unwrap();
    let (mut lines, mut bytes) = (0u64, 0u64);
    for l in std::fs::read_to_string(index).unwrap().lines().filter(|l| !l.trim().is_empty()) {
        let text = std::fs::read(dir.join(l.trim())).unwrap();
        lines += text.iter().filter(|&&b| b == b'\n').count() as u64;
        bytes += text.len() as u64;
    }
    (lines, bytes)
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                dir_size(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}

fn reader_throughput(report: &mut String) {
    report.push_str("## Reader throughput (`TraceSet::open`: read and check the whole run; rank files read in parallel on the 2 cores)\n\n| input | events | lines | size | read s (median of 5) | events/s | lines/s |\n|---|---|---|---|---|---|---|\n");
    let mut row = |name: String, path: &Path, size: u64, lines: Option<u64>| {
        let mut times = Vec::new();
        let mut events = 0;
        for _ in 0..5 {
            let t0 = Instant::now();
            // A single rank file is not a whole run: it is read by the rank-file reader.
            events = if path.is_file() && path.extension().is_some_and(|e| e == "mpt") {
                native::read_rank_file(path).unwrap().events.len()
            } else {
                let set = TraceSet::open(path, &ReadOptions::default()).unwrap();
                set.ranks.iter().map(|r| r.events.len()).sum::<usize>()
            };
            times.push(t0.elapsed().as_secs_f64());
        }
        let t = median(times);
        let (l, lps) = lines.map_or(("–".to_owned(), "–".to_owned()), |l| {
            (l.to_string(), format!("{:.2e}", l as f64 / t))
        });
        report.push_str(&format!(
            "| {name} | {events} | {l} | {:.1} MB | {t:.3} | {:.2e} | {lps} |\n",
            size as f64 / 1e6,
            events as f64 / t
        ));
    };
    let dir = root().join("target/bench-synthetic");
    let _ = std::fs::create_dir_all(&dir);
    let f = dir.join("rank-5.mpt");
    synthetic(&f, 5_000_000);
    row(
        "native, synthetic halo rank file (one thread)".into(),
        &f,
        std::fs::metadata(&f).unwrap().len(),
        None,
    );
    let halo = dir.join("halo-64");
    if !halo.exists() {
        mpiskel_trace::synth::write(&halo, &mpiskel_trace::synth::Spec::stencil3d(64, 2000))
            .unwrap();
    }
    row("native, `mpiskel synth` 3-D halo, 64 ranks".into(), &halo, dir_size(&halo), None);
    let fixtures = shared().join("fixtures");
    let lu = fixtures.join("npb/lu.W.16/trace.txt");
    let (lines, size) = ti_lines(&lu);
    row("SimGrid TI, npb/lu.W.16".into(), &lu, size, Some(lines));
    let scale = dir.join("npb-scale");
    let lu64 = scale.join("lu.A.64/trace.txt");
    if !lu64.exists() {
        let _ = std::fs::create_dir_all(&scale);
        let _ = Command::new("tar")
            .arg("xzf")
            .arg(fixtures.join("npb-scale/lu.A.64.tar.gz"))
            .arg("-C")
            .arg(&scale)
            .status();
    }
    if lu64.exists() {
        let (lines, size) = ti_lines(&lu64);
        row("SimGrid TI, npb-scale/lu.A.64".into(), &lu64, size, Some(lines));
    }
    let bgp = fixtures.join("public/dumpi/sst-macro-testbgp");
    row("SST DUMPI, public/dumpi/sst-macro-testbgp".into(), &bgp, dir_size(&bgp), None);
    let otf2 = fixtures.join("public/otf2");
    if let Some(anchor) = std::fs::read_dir(&otf2)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("traces.otf2"))
        .filter(|p| p.is_file())
        .max_by_key(|p| dir_size(p.parent().unwrap()))
    {
        let size = dir_size(anchor.parent().unwrap());
        row(format!("OTF2 (libotf2), {}", anchor.parent().unwrap().display()), &anchor, size, None);
    }
    report.push('\n');
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mut report = String::from("# mpiskel trace benchmarks\n\n");
    // TRACE_BENCH_ONLY=readers: only the readers (no MPI needed).
    if std::env::var("TRACE_BENCH_ONLY").as_deref() != Ok("readers") {
        let callrate_dir = tracer_overhead(&mut report);
        bytes_per_event(&mut report, &callrate_dir);
    }
    reader_throughput(&mut report);
    print!("{report}");
}
