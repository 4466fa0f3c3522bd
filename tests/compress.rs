//! `mpiskel compress` on real traces: the NPB main loops are found with the iteration counts the
//! benchmarks ran (`../shared/fixtures/npb/README.md`), covering at least 99 % of the calls of
//! the class W traces; the recorded fixture programs' loops are found; the nest document reads
//! back through `mpiskel inspect`.

mod support;

use support::{mpiskel, root, scratch, shared};

fn compress_json(trace: &std::path::Path, rank: u32, extra: &[&str]) -> serde_json::Value {
    let out = mpiskel()
        .arg("compress")
        .arg(trace)
        .args(["--rank", &rank.to_string(), "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (count, coverage) of the main loop.
fn main_loop(doc: &serde_json::Value) -> (u64, f64) {
    let main = doc["main_loop"].as_str().expect("a main loop");
    let count = main.rsplit('^').next().unwrap().parse().unwrap();
    (count, doc["report"]["coverage"].as_f64().unwrap())
}

#[test]
fn npb_main_loops_have_the_iteration_counts_the_benchmarks_ran() {
    // (trace, iterations NPB printed, whether the ≥ 99 % coverage bar applies)
    let cases = [
        ("bt.S.4", 60, false),
        ("bt.W.16", 200, true),
        ("cg.S.4", 15, false),
        ("cg.W.16", 15, true),
        ("lu.S.4", 50, false),
        ("lu.W.16", 300, true),
        ("cg.A.16", 15, true),
        ("mg.S.16", 4, false),
        ("sp.S.16", 100, false),
        // NPB IS prints 10: its untimed first iteration makes the same calls, and folds in.
        ("is.W.16", 11, false),
        // Six iterations of transform and checksum after an untimed transform that makes the
        // same all-to-all as their first call.
        ("ft.W.16", 6, false),
    ];
    for (name, iters, coverage_bar) in cases {
        let trace = shared().join("fixtures/npb").join(name).join("trace.txt");
        for rank in [0, 5] {
            if name.ends_with(".4") && rank == 5 {
                continue;
            }
            let doc = compress_json(&trace, rank, &[]);
            let (count, coverage) = main_loop(&doc);
            assert_eq!(count, iters, "{name} rank {rank}: {}", doc["main_loop"]);
            if coverage_bar {
                assert!(coverage >= 0.99, "{name} rank {rank}: coverage {coverage}");
            }
        }
    }
}

#[test]
fn a_program_without_a_loop_has_no_main_loop() {
    // NPB EP: one long computation, then reductions, two of which agree.
    let trace = shared().join("fixtures/npb/ep.W.16/trace.txt");
    for rank in [0, 9] {
        let doc = compress_json(&trace, rank, &[]);
        assert!(doc["main_loop"].is_null(), "rank {rank}: {}", doc["main_loop"]);
    }
}

#[test]
fn greedy_matches_exact_on_small_npb_traces() {
    for name in ["lu.S.4", "cg.S.4"] {
        let trace = shared().join("fixtures/npb").join(name).join("trace.txt");
        let g = compress_json(&trace, 0, &[]);
        let e = compress_json(&trace, 0, &["--exact"]);
        let (gc, ge) =
            (g["report"]["covered"].as_u64().unwrap(), e["report"]["covered"].as_u64().unwrap());
        let body = |d: &serde_json::Value| -> u64 {
            let m = d["main_loop"].as_str().unwrap();
            m[1..m.find(')').unwrap()].parse().unwrap()
        };
        // Seed bound: the greedy main loop may have up to two iterations fewer.
        assert!(gc + 2 * body(&e) >= ge, "{name}: greedy covers {gc}, exact {ge}");
    }
}

#[test]
fn fixture_program_loops() {
    let traces = root().join("fixtures/traces");
    // ring: 20 iterations of Send/Recv.
    let d = compress_json(&traces.join("ring"), 0, &[]);
    assert_eq!(main_loop(&d).0, 20);
    assert_eq!(d["main_loop"], "(2)^20 = (2)^20");
    // wavefront 4x4, 10 iterations of 12 calls on an inner rank, an Allreduce after every
    // 5th: the 5-iteration block and its Allreduce repeat twice.
    let d = compress_json(&traces.join("wavefront-4x4"), 5, &[]);
    assert_eq!(d["notation"], "1 + ((12)^5 + 1)^2 + 1");
}

#[test]
fn the_nest_document_reads_back_through_inspect() {
    let dir = scratch("compress-doc");
    let out_file = dir.join("lu.nest.json");
    let trace = shared().join("fixtures/npb/lu.S.4/trace.txt");
    let out = mpiskel().arg("compress").arg(&trace).arg("-o").arg(&out_file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let out = mpiskel().arg("inspect").arg(&out_file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("main loop  (46)^50"), "{shown}");
    // The same summary the compress command printed.
    assert_eq!(printed.lines().nth(2), shown.lines().nth(2));
    // Compute gaps are folded per position: every symbol carries statistics.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let first = &doc["nest"]["items"][0]["sym"]["stats"];
    assert!(first["n"].as_u64().unwrap() >= 1);
}

#[test]
fn compress_errors_are_clear() {
    let trace = root().join("fixtures/traces/ring");
    let out = mpiskel().arg("compress").arg(&trace).args(["--rank", "9"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("rank 9 does not exist (the trace has 4 ranks)"));
    let big = shared().join("fixtures/npb/lu.W.16/trace.txt");
    let out = mpiskel().arg("compress").arg(&big).arg("--exact").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--exact-limit"));
}

#[test]
fn the_logical_program_is_compressed_unless_physical_is_asked() {
    let trace = shared().join("fixtures/npb/lu.S.16/trace.txt");
    let logical = compress_json(&trace, 5, &[]);
    assert!(logical["input"].as_str().unwrap().contains("logical program of process class"));
    let legend: Vec<&str> = logical["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    assert!(legend.iter().any(|t| t.contains("NORTH")), "{legend:?}");
    let physical = compress_json(&trace, 5, &["--physical"]);
    assert!(physical["input"].as_str().unwrap().contains("physical calls of rank 5"));
    assert_eq!(main_loop(&physical).0, main_loop(&logical).0);
}

#[test]
fn loop_nests_of_the_other_npb_kernels() {
    // Iterations NPB printed (`../shared/fixtures/npb/README.md`): CG A 15, MG S 4 (+1
    // untimed V-cycle in the set-up), FT W 6, IS W 10 (+1 untimed that makes the same calls),
    // EP none, SP S 100. Rank 0 and rank 5 of each, with the main loop each reports.
    let mut out = String::new();
    for name in ["cg.A.16", "mg.S.16", "ft.W.16", "is.W.16", "ep.W.16", "sp.S.16"] {
        let trace = shared().join("fixtures/npb").join(name).join("trace.txt");
        for rank in [0, 5] {
            let doc = compress_json(&trace, rank, &[]);
            let main = doc["main_loop"].as_str().map_or("none".to_owned(), |m| {
                format!("{} iterations", m.rsplit('^').next().unwrap_or("?"))
            });
            out += &format!(
                "{name} rank {rank}: main loop {main}; {:.2} % of calls in loops\n  {}\n",
                doc["report"]["coverage"].as_f64().unwrap_or(0.0) * 100.0,
                doc["notation"].as_str().unwrap_or("?")
            );
        }
    }
    insta::with_settings!({
        description => "mpiskel compress <trace> --rank R --json: main loop, coverage, notation",
        omit_expression => true,
    }, {
        insta::assert_snapshot!("npb_other_kernels_loop_nests", out);
    });
}
