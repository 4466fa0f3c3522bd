//! Topology identification on the 16-rank NPB traces, beside Xu & Subhlok 2008, Table 2.
//!
//! Run with `cargo bench --bench logicalize_npb` (or `make bench`): calls the release
//! `mpiskel logicalize --json` on each trace (median of 5 runs) and prints a Markdown table with
//! every stage's survivors and times, reading included.

use std::path::PathBuf;
use std::process::Command;

fn shared() -> PathBuf {
    std::env::var_os("MPISKEL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("| trace | simple tests | spectrum | isomorphism | chosen | classes | read + logicalize s (median of 5) |");
    println!("|---|---|---|---|---|---|---|");
    for name in ["bt.S.16", "bt.W.16", "cg.S.16", "cg.W.16", "lu.S.16", "lu.W.16"] {
        let trace = shared().join("fixtures/npb").join(name).join("trace.txt");
        let mut runs = Vec::new();
        let mut doc = serde_json::Value::Null;
        for _ in 0..5 {
            let out = Command::new(env!("CARGO_BIN_EXE_mpiskel"))
                .arg("logicalize")
                .arg(&trace)
                .arg("--json")
                .output()
                .expect("mpiskel runs");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            doc = serde_json::from_slice(&out.stdout).expect("JSON");
            runs.push(doc["read_seconds"].as_f64().unwrap() + doc["seconds"].as_f64().unwrap());
        }
        runs.sort_by(f64::total_cmp);
        let l = &doc["logical"];
        let stage = |i: usize| {
            let s = &l["identification"]["stages"][i];
            let c: Vec<&str> =
                s["candidates"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
            format!("{} ({:.1} ms)", c.join("; "), 1e3 * s["seconds"].as_f64().unwrap())
        };
        let chosen = l["identification"]["structure"]["name"].as_str().unwrap_or("?");
        println!(
            "| {name} | {} | {} | {} | {chosen} | {} | {:.3} |",
            stage(0),
            stage(1),
            stage(2),
            l["classes"].as_array().unwrap().len(),
            runs[2]
        );
    }
}
