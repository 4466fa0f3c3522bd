//! Benchmarks of loop discovery on synthetic sequences shaped like NPB LU (Xu & Subhlok 2008, Table 3):
//! `((4)^160 + (4)^160 + 12)^iters` with distinct symbols per part.
//!
//! Run with `cargo bench -p mpiskel-compress` (or `make bench`). Each size runs in a child
//! process so that its peak memory (VmHWM) is its own.

use std::process::Command;
use std::time::Instant;

use mpiskel_compress::{exact, greedy, Sym};

fn lu_like(inner: usize, iters: usize) -> Vec<Sym> {
    let mut s = Vec::with_capacity(iters * (8 * inner + 12));
    for _ in 0..iters {
        for _ in 0..inner {
            s.extend([1, 2, 3, 4]);
        }
        for _ in 0..inner {
            s.extend([5, 6, 7, 8]);
        }
        s.extend(10..22);
    }
    s
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Child: one measurement, printed as a Markdown row.
fn child(which: &str, n: usize) {
    let (name, seq) = match which {
        "greedy" => ("greedy", lu_like(160, n.div_ceil(8 * 160 + 12))),
        "exact" => ("exact", lu_like(10, n.div_ceil(8 * 10 + 12))),
        // No structure: symbols from a 4-letter alphabet, pseudo-random (xorshift).
        "greedy-random" | "exact-random" => {
            let mut x = 0x2545_F491_4F6C_DD1Du64;
            let seq = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 4) as Sym
                })
                .collect();
            (if which == "greedy-random" { "greedy" } else { "exact" }, seq)
        }
        _ => unreachable!(),
    };
    let base = peak_rss_kib();
    let mut times = Vec::new();
    let mut notation = String::new();
    let reps = if seq.len() > 1_000_000 { 3 } else { 5 };
    for _ in 0..reps {
        let t0 = Instant::now();
        let nest = if name == "greedy" { greedy(&seq) } else { exact(&seq) };
        times.push(t0.elapsed().as_secs_f64());
        assert_eq!(nest.expand().len(), seq.len());
        notation = nest.notation();
    }
    times.sort_by(f64::total_cmp);
    let peak = peak_rss_kib();
    let shown = if notation.len() > 60 { format!("{}…", &notation[..60]) } else { notation };
    println!(
        "| {which} | {} | {:.4} | {:.1} | {:.0} | `{}` |",
        seq.len(),
        times[times.len() / 2],
        peak as f64 / 1024.0,
        (peak.saturating_sub(base)) as f64 * 1024.0 / seq.len() as f64,
        shown
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let (Some(w), Some(n)) = (
        args.iter().position(|a| a == "--child").map(|i| &args[i + 1]),
        args.iter().position(|a| a == "--child").map(|i| &args[i + 2]),
    ) {
        child(w, n.parse().unwrap());
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    println!("| mode | symbols | seconds (median) | peak RSS MiB | bytes/symbol above start | loop nest |");
    println!("|---|---|---|---|---|---|");
    let me = std::env::current_exe().unwrap();
    for (w, n) in [
        ("greedy", 323_000usize),
        ("greedy", 1_000_000),
        ("greedy", 10_000_000),
        ("greedy-random", 1_000_000),
        ("exact", 1_000),
        ("exact", 5_000),
        ("exact-random", 5_000),
    ] {
        let out = Command::new(&me).args(["--child", w, &n.to_string()]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}
