//! Short campaigns of every target (the long ones are recorded in BENCHMARKS.md): nothing
//! panics, hangs or breaks a promise, and each target reaches the last stage in some cases —
//! a campaign whose every input is refused at the first check would test nothing.
//! `MPISKEL_FUZZ_SEED=S cargo test -p mpiskel-fuzz --test smoke` runs other cases.

use std::path::PathBuf;
use std::time::Duration;

use mpiskel_fuzz::campaign::{run, Config, Report, Target};

/// A campaign of `cases` on both cores: through the pipeline (the Rust back end every case) or
/// `read_only`.
fn config(target: Target, cases: u64, seed: u64, corpus: Vec<PathBuf>, read_only: bool) -> Config {
    Config {
        target,
        cases,
        seed,
        jobs: 2,
        hang_after: Duration::from_secs(120),
        corpus,
        rust_every: u64::from(!read_only),
        verbose: false,
        read_only,
    }
}

fn campaign(target: Target, cases: u64, seed: u64, corpus: Vec<PathBuf>) -> Report {
    let r = run(&config(target, cases, seed, corpus, false)).unwrap();
    assert!(r.clean(), "{target:?}: panics {:?}, broken promises {:?}", r.panics, r.violations);
    assert_eq!(r.cases, cases);
    assert!(r.built > 0, "{target:?}: no case reached the back ends: refused {:?}", r.refused);
    r
}

/// A read-only campaign: cases stop once read, and some are read whole.
fn read_only(target: Target, cases: u64, corpus: Vec<PathBuf>) -> Report {
    let r = run(&config(target, cases, seed(), corpus, true)).unwrap();
    assert!(r.clean(), "{target:?}: panics {:?}, broken promises {:?}", r.panics, r.violations);
    assert_eq!(r.built, 0, "{target:?}: a read-only campaign built skeletons");
    assert!(r.read > 0, "{target:?}: every case refused: {:?}", r.refused);
    assert_eq!(r.read + r.refused.values().sum::<u64>(), cases);
    r
}

/// `$MPISKEL_SHARED`, or `../shared` beside the repository.
fn shared() -> PathBuf {
    std::env::var_os("MPISKEL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
}

/// The first case's seed: `$MPISKEL_FUZZ_SEED`, or 0 (the tests stay reproducible; campaigns
/// from other seeds run with `mpiskel-fuzz`).
fn seed() -> u64 {
    std::env::var("MPISKEL_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[test]
fn the_pipeline_survives_generated_and_mutated_programs() {
    let r = campaign(Target::Pipeline, 300, seed(), Vec::new());
    assert!(r.mutated > 0 && r.mutated < r.cases);
}

#[test]
fn the_native_reader_survives_mutated_rank_files() {
    campaign(Target::Native, 300, seed(), Vec::new());
    read_only(Target::Native, 1_000, Vec::new());
}

#[test]
fn the_ti_reader_survives_mutated_real_traces() {
    let shared = shared();
    let ti = shared.join("fixtures/public/simgrid-ti");
    let mut corpus = vec![ti.join("ti_traces_32_1.index.txt")];
    for f in ["actions_bcast.txt", "actions_alltoallv.txt", "actions0.txt"] {
        corpus.push(ti.join("replay-examples").join(f));
    }
    corpus.push(shared.join("fixtures/npb/is.W.16/trace.txt"));
    for c in &corpus {
        assert!(c.is_file(), "{} missing (set MPISKEL_SHARED)", c.display());
    }
    campaign(Target::Ti, 300, seed(), corpus.clone());
    read_only(Target::Ti, 1_000, corpus);
}

#[test]
fn the_dumpi_reader_survives_mutated_real_traces() {
    let shared = shared();
    let d = shared.join("fixtures/public/dumpi");
    let corpus = vec![
        d.join("sst-dumpi-testtrace/testtrace.meta"),
        d.join("sst-macro-testbgp/testbgp.meta"),
    ];
    for c in &corpus {
        assert!(c.is_file(), "{} missing (set MPISKEL_SHARED)", c.display());
    }
    campaign(Target::Dumpi, 300, seed(), corpus.clone());
    read_only(Target::Dumpi, 1_000, corpus);
}

#[test]
fn the_otf2_reader_survives_mutated_real_traces() {
    let d = shared().join("fixtures/public/otf2");
    let corpus =
        vec![d.join("pipit-ping-pong/traces.otf2"), d.join("sst-macro-mpi-coverage/traces.otf2")];
    for c in &corpus {
        assert!(c.is_file(), "{} missing (set MPISKEL_SHARED)", c.display());
    }
    campaign(Target::Otf2, 100, seed(), corpus.clone());
    // The dump program's text, mutated and turned into the model in process.
    campaign(Target::Otf2Dump, 300, seed(), corpus.clone());
    read_only(Target::Otf2Dump, 2_000, corpus);
}
