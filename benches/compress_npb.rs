//! Loop discovery on the NPB traces of `../shared/fixtures/npb`, next to Xu & Subhlok 2008, Table 3.
//!
//! Run with `cargo bench --bench compress_npb` (or `make bench`). Calls the release `mpiskel
//! compress --json` on rank 0 of every trace (greedy; exact too where it has at most 20,000
//! calls) and prints a Markdown table.

use std::path::PathBuf;
use std::process::Command;

fn shared() -> PathBuf {
    std::env::var_os("MPISKEL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

fn run(trace: &std::path::Path, exact: bool) -> Option<serde_json::Value> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mpiskel"));
    cmd.arg("compress").arg(trace).args(["--rank", "0", "--json"]);
    if exact {
        cmd.arg("--exact");
    }
    let out = cmd.output().expect("mpiskel runs");
    out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("JSON"))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(shared().join("fixtures/npb"))
        .expect("../shared/fixtures/npb")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("trace.txt").is_file())
        .collect();
    dirs.sort();
    println!("| trace (rank 0) | calls | greedy s | main loop (greedy) | span covered | compressed length | ratio | exact s | exact: covered, length |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for d in dirs {
        let trace = d.join("trace.txt");
        let g = run(&trace, false).expect("greedy");
        let r = &g["report"];
        let main = g["main_loop"].as_str().unwrap_or("none");
        let short = main.split(" = ").collect::<Vec<_>>();
        let shown = if short.len() == 2 && short[1].len() <= 60 {
            main.to_owned()
        } else {
            short[0].to_owned()
        };
        let exact =
            if r["input_len"].as_u64().unwrap() <= 20_000 { run(&trace, true) } else { None };
        let exact_cols = exact.map_or("–| –".to_owned(), |e| {
            format!(
                "{:.3} | {:.2} %, {}",
                e["seconds"].as_f64().unwrap(),
                100.0 * e["report"]["coverage"].as_f64().unwrap(),
                e["report"]["compressed_len"]
            )
        });
        println!(
            "| {} | {} | {:.4} | `{}` | {:.2} % | {} | {:.1} | {} |",
            d.file_name().unwrap().to_string_lossy(),
            r["input_len"],
            g["seconds"].as_f64().unwrap(),
            shown,
            100.0 * r["coverage"].as_f64().unwrap(),
            r["compressed_len"],
            r["ratio"].as_f64().unwrap(),
            exact_cols
        );
    }
}
