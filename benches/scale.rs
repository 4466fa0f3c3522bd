//! The pipeline at scale: `mpiskel build`'s time and peak memory against ranks and calls, on
//! synthetic 3-D halo exchanges (`mpiskel synth`) from 16 to 16,384 ranks and on the NPB traces
//! of `../shared/fixtures` (16 ranks) and `npb-scale` (64 and 256 ranks, unpacked into a
//! temporary folder), with the exponent of time and memory fitted against calls; and the
//! deadlock check of a ring whose receives all take any source, at 1,024 to 16,384 ranks.
//!
//! Run with `cargo bench --bench scale` (or `make bench`). `SCALE_MAX_RANKS` (default 16384)
//! leaves out the larger synthetic traces; `SCALE_ITERATIONS` (default 440: 100 M calls at
//! 16,384 ranks) sets their steps. Needs /usr/bin/time (Debian package `time`). Prints a
//! Markdown table; BENCHMARKS.md records its results.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn shared() -> PathBuf {
    std::env::var_os("MPISKEL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One measured build.
struct Row {
    name: String,
    ranks: u64,
    calls: u64,
    seconds: f64,
    peak_mb: f64,
    result: String,
}

/// `mpiskel build` of `trace` under /usr/bin/time: (seconds, peak MB, summary line).
fn build(trace: &Path, out: &Path) -> (f64, f64, String) {
    let t = Instant::now();
    let o = Command::new("/usr/bin/time")
        .args(["-f", "MPISKEL_PEAK_KB %M", env!("CARGO_BIN_EXE_mpiskel"), "build", "-q", "--force"])
        .arg(trace)
        .arg("-o")
        .arg(out)
        .output()
        .expect("/usr/bin/time (Debian package time)");
    let seconds = t.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "build {}: {err}", trace.display());
    let peak_mb = err
        .lines()
        .find_map(|l| l.strip_prefix("MPISKEL_PEAK_KB "))
        .and_then(|k| k.trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN)
        / 1024.0;
    let line = String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or("").to_owned();
    // "<dir>: 64 ranks, 8×8 grid, 9 classes; main loop 7 of 250 iterations; …"
    let result = line.split_once(": ").map_or(line.clone(), |(_, r)| r.to_owned());
    (seconds, peak_mb, result)
}

/// Calls of every rank of a trace, as `mpiskel inspect --json` counts them.
fn calls_of(trace: &Path) -> (u64, u64) {
    let o = Command::new(env!("CARGO_BIN_EXE_mpiskel"))
        .args(["inspect", "--json"])
        .arg(trace)
        .output()
        .expect("mpiskel inspect");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("inspect --json");
    (doc["ranks"].as_u64().unwrap_or(0), doc["events"].as_u64().unwrap_or(0))
}

/// Least-squares slope of ln y against ln x.
fn exponent(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), &(x, y)| (a + x.ln(), b + y.ln()));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), &(x, y)| {
        (a + (x.ln() - mx) * (y.ln() - my), b + (x.ln() - mx).powi(2))
    });
    num / den
}

fn main() {
    let max_ranks = env_u32("SCALE_MAX_RANKS", 16_384);
    let iterations = env_u32("SCALE_ITERATIONS", 440);
    let tmp = tempfile::tempdir().expect("temporary folder");
    let mut rows: Vec<Row> = Vec::new();
    for ranks in [16u32, 64, 256, 1_024, 4_096, 16_384].into_iter().filter(|&r| r <= max_ranks) {
        let dir = tmp.path().join(format!("synth-{ranks}"));
        let o = Command::new(env!("CARGO_BIN_EXE_mpiskel"))
            .args(["synth", "-o"])
            .arg(&dir)
            .args(["--ranks", &ranks.to_string(), "--iterations", &iterations.to_string()])
            .output()
            .expect("mpiskel synth");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let calls: u64 = String::from_utf8_lossy(&o.stdout)
            .split(", ")
            .find_map(|w| w.strip_suffix(" calls").and_then(|c| c.parse().ok()))
            .expect("synth prints its calls");
        let (seconds, peak_mb, result) = build(&dir, &tmp.path().join(format!("s{ranks}.skel")));
        rows.push(Row {
            name: format!("synthetic 3-D halo, {iterations} steps"),
            ranks: u64::from(ranks),
            calls,
            seconds,
            peak_mb,
            result,
        });
        std::fs::remove_dir_all(&dir).ok();
    }
    let fixtures = shared().join("fixtures");
    let mut npb: Vec<(String, PathBuf)> = ["bt.W.16", "lu.W.16", "cg.A.16"]
        .iter()
        .map(|n| (n.to_string(), fixtures.join("npb").join(n).join("trace.txt")))
        .collect();
    for name in ["lu.A.64", "mg.B.256"] {
        let archive = fixtures.join("npb-scale").join(format!("{name}.tar.gz"));
        let ok = Command::new("tar")
            .arg("xzf")
            .arg(&archive)
            .arg("-C")
            .arg(tmp.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "cannot unpack {}", archive.display());
        npb.push((name.to_string(), tmp.path().join(name).join("trace.txt")));
    }
    for (name, trace) in npb {
        let (ranks, calls) = calls_of(&trace);
        let (seconds, peak_mb, result) = build(&trace, &tmp.path().join(format!("{name}.skel")));
        rows.push(Row {
            name: format!("NPB {name} (SimGrid TI)"),
            ranks,
            calls,
            seconds,
            peak_mb,
            result,
        });
    }

    println!("| trace | ranks | calls | build (s) | peak (MB) | bytes per call | result |");
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.2} | {:.0} | {:.0} | {} |",
            r.name,
            r.ranks,
            r.calls,
            r.seconds,
            r.peak_mb,
            r.peak_mb * 1024.0 * 1024.0 / r.calls as f64,
            r.result
        );
    }
    let synth: Vec<&Row> = rows.iter().filter(|r| r.name.starts_with("synthetic")).collect();
    if synth.len() >= 2 {
        let time: Vec<(f64, f64)> = synth.iter().map(|r| (r.calls as f64, r.seconds)).collect();
        let mem: Vec<(f64, f64)> = synth.iter().map(|r| (r.calls as f64, r.peak_mb)).collect();
        // Small traces are dominated by start-up: fit from 256 ranks up where there are three.
        let big = |v: &[(f64, f64)]| -> Vec<(f64, f64)> {
            let b: Vec<(f64, f64)> = v.iter().copied().filter(|p| p.0 >= 1e6).collect();
            if b.len() >= 3 {
                b
            } else {
                v.to_vec()
            }
        };
        println!();
        println!(
            "Fitted exponents against calls (synthetic, traces of ≥ 1 M calls where there are three): \
             time {:.2}, peak memory {:.2}",
            exponent(&big(&time)),
            exponent(&big(&mem))
        );
    }
    wildcard_checks(max_ranks);
}

/// The deadlock check of a program whose every receive takes any source, which it executes in
/// many orders of what those receives take (`mpiskel_program::check`): a ring of 10 exchanges
/// with both neighbours, received from `MPI_ANY_SOURCE`, at 1,024 to 16,384 ranks.
fn wildcard_checks(max_ranks: u32) {
    use mpiskel_program::{check, CheckOp};
    println!();
    println!("| deadlock check, ring of wildcard receives | ranks | operations | check (s) |");
    println!("|---|---|---|---|");
    for n in [1_024u32, 4_096, 16_384].into_iter().filter(|&r| r <= max_ranks) {
        let programs: Vec<Vec<CheckOp>> = (0..n)
            .map(|r| {
                (0..10)
                    .flat_map(|_| {
                        [
                            CheckOp::Irecv { from: None, tag: 0, slot: 0 },
                            CheckOp::Irecv { from: None, tag: 0, slot: 1 },
                            CheckOp::Isend { to: (r + 1) % n, tag: 0, slot: 2, bytes: 8 },
                            CheckOp::Isend { to: (r + n - 1) % n, tag: 0, slot: 3, bytes: 8 },
                            CheckOp::Wait { slots: vec![0, 1, 2, 3] },
                        ]
                    })
                    .collect()
            })
            .collect();
        let ops: usize = programs.iter().map(Vec::len).sum();
        let t = Instant::now();
        let found = check(&programs);
        assert!(found.is_none(), "the ring cannot block");
        println!("| ring | {n} | {ops} | {:.2} |", t.elapsed().as_secs_f64());
    }
}
