//! Every input a fuzzing campaign found to break a promise (`regressions/`, with its README)
//! goes through the reader and every stage again: no panic, no broken promise, and a skeleton
//! for the correct programs among them.

use std::path::Path;

use mpiskel_fuzz::campaign::read_and_build;
use mpiskel_fuzz::pipeline::Outcome;

fn case(name: &str, correct: bool) -> Outcome {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions").join(name);
    assert!(dir.is_dir(), "{} missing", dir.display());
    read_and_build(&dir, correct).unwrap_or_else(|v| panic!("{name}: {v}"))
}

#[test]
fn messages_to_self_travel_on_the_self_channel_both_ways() {
    for name in ["self-messages-1-rank", "self-messages-2-ranks"] {
        assert!(matches!(case(name, true), Outcome::Built { .. }), "{name}");
    }
}

#[test]
fn loops_are_cut_by_the_class_that_splits_the_time() {
    // Classes whose loop nests differ: the estimate stays positive (a negative one is a broken
    // promise of `read_and_build`).
    for name in ["cut-estimate-24-ranks", "cut-estimate-24-ranks-b"] {
        case(name, false);
    }
}

#[test]
fn along_a_dimension_of_two_no_rank_misses_its_neighbour() {
    // A 3 × 2 grid with strides: folding took a rank for an edge of the dimension of two.
    assert!(matches!(case("size-two-dim-stride-6-ranks", true), Outcome::Built { .. }));
}

#[test]
fn a_dumpi_collective_of_huge_counts_is_refused_not_overflowed() {
    // Only the mutated rank file is kept here; the others and the `.meta` file are the public
    // trace's own (`../shared/fixtures/public/dumpi/sst-macro-testbgp`).
    let name = "dumpi-collective-size-overflow";
    let shared = std::env::var_os("MPISKEL_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let public = shared.join("fixtures/public/dumpi/sst-macro-testbgp");
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions").join(name);
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&public).unwrap().flatten() {
        std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
    }
    for e in std::fs::read_dir(&kept).unwrap().flatten() {
        std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
    }
    let out = read_and_build(&dir.path().join("testbgp.meta"), false)
        .unwrap_or_else(|v| panic!("{name}: {v}"));
    assert!(matches!(out, Outcome::Refused { stage: "read", .. }), "{name}: {out:?}");
}

#[test]
fn every_regression_input_is_listed_and_tested() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let this = std::fs::read_to_string(file!()).unwrap_or_else(|_| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions.rs"))
            .unwrap()
    });
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                readme.contains(&format!("`{name}`")),
                "{name} is not in regressions/README.md"
            );
            assert!(this.contains(&format!("\"{name}\"")), "{name} is not tested");
        }
    }
}
