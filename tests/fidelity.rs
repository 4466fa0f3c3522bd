//! The fidelity-checked build: every skeleton `build` writes carries its panel (the trace and
//! the skeleton simulated on a reference and five what-ifs), printed by `build --json`, shown
//! by `inspect`, the report page and the folder's README; and the one policy rejects a wrong
//! candidate that the panel measures as wrong.

mod support;

use std::path::Path;

use mpiskel_cut::fidelity::{Outcome, DEFAULT_MAX_ERROR};
use mpiskel_cut::pipeline::make;
use mpiskel_make::policy::{search, Check, Goal};
use mpiskel_simulate::fidelity::{app_times, Panel};
use mpiskel_trace::{ReadOptions, TraceSet};
use support::{fixture, mpiskel, npb, scratch, shared};

const PANEL: [&str; 6] =
    ["reference", "bandwidth/10", "bandwidth/100", "latency*10", "cpu/2", "4-per-host"];

/// Builds `trace` with `mpiskel build --json` and checks the panel it prints and writes.
fn check_panel(name: &str, trace: &Path) {
    let out = scratch(&format!("fidelity-{name}"));
    let built = mpiskel()
        .args(["build", "--force", "--json", "-q", "-o"])
        .arg(&out)
        .arg(trace)
        .output()
        .expect("mpiskel runs");
    assert!(built.status.success(), "{name}: {}", String::from_utf8_lossy(&built.stderr));
    let json: serde_json::Value = serde_json::from_slice(&built.stdout).expect("--json is JSON");
    let rows = json["fidelity"].as_array().expect("build --json prints the panel");
    let names: Vec<&str> = rows.iter().map(|r| r["platform"].as_str().unwrap()).collect();
    assert_eq!(names, PANEL, "{name}: the reference first, then its what-ifs");
    for r in rows {
        let (app, own, predicted, error) = (
            r["app_s"].as_f64().unwrap(),
            r["skeleton_s"].as_f64().unwrap(),
            r["predicted_s"].as_f64().unwrap(),
            r["error_pct"].as_f64().unwrap(),
        );
        assert!(app > 0.0 && own > 0.0 && predicted > 0.0, "{name}: {r}");
        assert!((100.0 * (predicted / app - 1.0) - error).abs() < 1e-6, "{name}: {r}");
    }
    // Less bandwidth makes the application slower on the panel, as it does on a cluster.
    assert!(rows[2]["app_s"].as_f64() > rows[0]["app_s"].as_f64(), "{name}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("skeleton.json")).unwrap()).unwrap();
    assert_eq!(doc["fidelity"], json["fidelity"], "{name}: skeleton.json holds the same panel");
    let kept = doc["fidelity_decision"]["kept"].as_u64().expect("the decision is recorded");
    assert!(kept < doc["fidelity_decision"]["candidates"].as_array().unwrap().len() as u64);
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.contains("modelled platforms") && readme.contains("| bandwidth/100 |"),
        "{name}"
    );
    let inspect = mpiskel().arg("inspect").arg(&out).output().unwrap();
    assert!(String::from_utf8_lossy(&inspect.stdout).contains("fidelity:  checked within"));
    let page = out.with_extension("html");
    let report = mpiskel().args(["report", "-q", "-o"]).arg(&page).arg(&out).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"fidelity\"") && html.contains("4-per-host"), "{name}");
}

#[test]
fn an_npb_build_carries_its_panel() {
    check_panel("is", &npb("is.W.16"));
}

#[test]
fn a_native_build_carries_its_panel() {
    check_panel("halo", &fixture("halo2d-periodic-4x4"));
}

#[test]
fn a_dumpi_build_carries_its_panel() {
    check_panel("dumpi", &shared().join("fixtures/public/dumpi/sst-macro-testbgp"));
}

#[test]
fn an_otf2_build_carries_its_panel() {
    check_panel("otf2", &shared().join("fixtures/public/otf2/pipit-ping-pong"));
}

#[test]
fn no_check_writes_no_panel() {
    let out = scratch("fidelity-no-check");
    let built = mpiskel()
        .args(["build", "--force", "--json", "-q", "--no-check", "-o"])
        .arg(&out)
        .arg(npb("is.W.16"))
        .output()
        .unwrap();
    assert!(built.status.success());
    let json: serde_json::Value = serde_json::from_slice(&built.stdout).unwrap();
    assert_eq!(json["fidelity"], serde_json::json!([]));
    assert!(json["fidelity_decision"].is_null());
}

/// Builds `trace` into `out` and checks it with `mpiskel check --json` on the NPB fixtures'
/// platform `platform` (one rank per host): the check's JSON.
fn built_and_checked(out: &Path, trace: &Path, platform: &str) -> serde_json::Value {
    let built = mpiskel().args(["build", "--force", "-q", "-o"]).arg(out).arg(trace).output();
    assert!(built.unwrap().status.success());
    let platforms = shared().join("fixtures/npb/platforms");
    let checked = mpiskel()
        .arg("check")
        .arg(out)
        .arg(trace)
        .args(["--json", "--max-error", "1000", "--platform"])
        .arg(platforms.join(platform))
        .arg("--hostfile")
        .arg(platforms.join("hostfile_1perhost.txt"))
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
    serde_json::from_slice(&checked.stdout).unwrap()
}

#[test]
fn check_measures_a_skeleton_against_its_trace_on_a_platform_given() {
    let (out, trace) = (scratch("fidelity-check"), npb("bt.S.4"));
    let json = built_and_checked(&out, &trace, "bw5MBps.xml");
    let reference = json["fidelity"][0]["app_s"].as_f64().unwrap();
    // At 5 MB/s BT S on 4 ranks takes about 1.3 s (SimGrid's replay: 1.2969 s).
    assert!((1.1..1.5).contains(&reference), "{reference}");
    // A trace of other ranks is refused.
    let other = mpiskel().arg("check").arg(&out).arg(npb("bt.S.9")).output().unwrap();
    assert!(!other.status.success());
    assert!(String::from_utf8_lossy(&other.stderr).contains("ranks"));
}

/// The V-cycle fixture program (4 cycles of 6 levels down and up, faces halving per level),
/// traced; its skeleton made, then mispriced as a kind of step that stands for others is when
/// the steps it stands for are not like it (every iteration of the main loop counted three
/// times): the panel measures that candidate as wrong, the policy rejects it and keeps one
/// the panel measures as faithful.
#[test]
fn a_wrong_candidate_is_rejected_by_the_panel() {
    let trace = scratch("fidelity-vcycle.trace");
    support::trace_program(
        support::Lib::OpenMpi,
        4,
        "vcycle",
        &["4", "6", "262144", "400"],
        &trace,
    );
    let opts = ReadOptions::default();
    let mut set = TraceSet::open(&trace, &opts).unwrap();
    set.drop_local_calls();
    let panel = Panel::around(None, set.n_ranks(), 1e9);
    let app = app_times(&set.ranks, &panel).unwrap();
    let app_time = set.app_time_s();
    let set_calls = set.ranks.iter().map(|r| r.events.len() as u64).sum();
    let mut lt = mpiskel_logicalize::logicalize_owned(set);
    let mut wrong = make(&mut lt, app_time, "test", None, true).unwrap();
    for class in &mut wrong.skeleton.classes {
        for p in class.phases.iter_mut().filter(|p| p.name == "main_loop") {
            p.full *= 3;
        }
    }
    let check = Check { panel: &panel, app: &app, bound: DEFAULT_MAX_ERROR };
    let goal = Goal {
        app_time_s: app_time,
        source: "test",
        target_s: None,
        compute_cut: true,
        trace_calls: set_calls,
    };
    let kept = search(&mut lt, wrong, goal, &check, &mpiskel_make::Quiet)
        .unwrap_or_else(|(_, e)| panic!("{e}"));
    let d = &kept.decision;
    assert!(d.candidates[0].score.worst_error_pct > 50.0, "{d:?}");
    assert_ne!(d.kept, 0, "the wrong candidate is rejected: {d:?}");
    let score = d.candidates[d.kept].score;
    assert!(score.worst_error_pct < 10.0, "{d:?}");
    match &d.outcome {
        Outcome::Within => assert!(score.worst_error_pct <= 100.0 * DEFAULT_MAX_ERROR),
        Outcome::Closest { error_pct, .. } => {
            assert!((error_pct.abs() - score.worst_error_pct).abs() < 1e-9)
        }
    }
    let main = kept.built.skeleton.classes[0].phases.iter().find(|p| p.name == "main_loop");
    assert_eq!(main.map(|p| p.full), Some(4), "the kept program prices the 4 cycles");
}

/// A trace of few calls is simulated call by call on the panel, not fast-forwarded: NPB BT S on 9
/// ranks (60 iterations, 60 k calls), whose window of iterations runs 3.4 % slower than the loop,
/// is measured on SimGrid's own platform as SimGrid's replay measures it.
#[test]
fn the_panel_measures_a_small_trace_whole() {
    let (out, trace) = (scratch("fidelity-exact"), npb("bt.S.9"));
    let json = built_and_checked(&out, &trace, "ref.xml");
    let npb_dir = shared().join("fixtures/npb");
    let truth = std::fs::read_to_string(npb_dir.join("ground-truth.csv")).unwrap();
    let replay: f64 = truth
        .lines()
        .find(|l| l.starts_with("bt,S,9,ref,"))
        .and_then(|l| l.rsplit(',').next())
        .and_then(|s| s.parse().ok())
        .expect("BT S 9's replay on the reference in ground-truth.csv");
    let app = json["fidelity"][0]["app_s"].as_f64().unwrap();
    assert!((app / replay - 1.0).abs() < 0.002, "panel {app} s, SimGrid's replay {replay} s");
}

/// NPB MG S on 16 ranks: a main loop of 4 iterations, which the default runs whole (their
/// computation spreads widely) and is 5.6 % off on the panel. The fewer-iterations generator
/// measures 1, 2 and 3 of them: fewer iterations, measured within the bound, are kept.
#[test]
fn a_main_loop_of_few_iterations_runs_fewer_where_the_panel_accepts_them() {
    let out = scratch("fidelity-fewer");
    let built =
        mpiskel().args(["build", "--force", "-q", "-o"]).arg(&out).arg(npb("mg.S.16")).output();
    assert!(built.unwrap().status.success());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("skeleton.json")).unwrap()).unwrap();
    let decision = &doc["fidelity_decision"];
    let candidates = decision["candidates"].as_array().unwrap();
    let worst = |c: &serde_json::Value| c["score"]["worst_error_pct"].as_f64().unwrap();
    assert!(
        worst(&candidates[0]) > 2.0,
        "the default is over the bound: {}",
        worst(&candidates[0])
    );
    let kept = &candidates[decision["kept"].as_u64().unwrap() as usize];
    assert!(kept["name"].as_str().unwrap().ends_with("of 4 iterations"), "{kept}");
    assert!(worst(kept) <= 2.0, "{kept}");
    let (run, full) = (doc["scaling"]["main_run"].as_u64(), doc["scaling"]["main_full"].as_u64());
    assert!(run < full, "main loop {run:?} of {full:?}");
}
