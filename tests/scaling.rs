//! The scaling decision for every NPB fixture, as one small table to review: the candidate the
//! fidelity check kept (of how many it measured) and its worst error on the panel, how many of the
//! main loop's iterations run, the target and the estimate against the recorded application
//! time, the computation cut, and what `build` says holds a skeleton over its target. No MPI:
//! `mpiskel build` with the default target, read back from each `skeleton.json`.

mod support;

use std::fmt::Write as _;

use support::{mpiskel, root, scratch, shared};

/// `mpiskel build` of the NPB fixture `name` with the default target, into `work`: its
/// `skeleton.json`.
fn build_npb(name: &str, work: &std::path::Path) -> serde_json::Value {
    build_npb_with(name, work, &[])
}

/// [`build_npb`] with the extra build options `args`.
fn build_npb_with(name: &str, work: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let dir = work.join(name);
    let trace = shared().join("fixtures").join("npb").join(name).join("trace.txt");
    let out = mpiskel()
        .args(["build", "-q", "--force"])
        .args(args)
        .arg(&trace)
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(dir.join("skeleton.json")).unwrap()).unwrap()
}

#[test]
fn scaling_decisions_of_every_npb_fixture() {
    let npb = shared().join("fixtures").join("npb");
    let mut names: Vec<String> = std::fs::read_dir(&npb)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("trace.txt").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 20, "{names:?}");
    let mut table = String::from(
        "trace | kept (of candidates) | worst panel error | main loop run | target | estimate | compute cut | note\n",
    );
    let work = scratch("scaling-npb");
    for name in &names {
        let doc = build_npb(name, &work);
        let s = &doc["scaling"];
        let f = |k: &str| s[k].as_f64().unwrap_or(0.0);
        let app = f("app_time_s");
        let note = s["note"].as_str().unwrap_or("");
        let d = &doc["fidelity_decision"];
        let kept = &d["candidates"][d["kept"].as_u64().unwrap() as usize];
        let _ = writeln!(
            table,
            "{name} | {} ({}) | {:.2} % | {} of {} | 1/{:.0} | {:.3} | {:.2e} s | {}",
            kept["name"].as_str().unwrap(),
            d["candidates"].as_array().unwrap().len(),
            kept["score"]["worst_error_pct"].as_f64().unwrap(),
            s["main_run"],
            s["main_full"],
            app / f("target_s"),
            f("skeleton_estimate_s") / app,
            f("compute_removed_s"),
            if note.is_empty() { "—" } else { note }
        );
    }
    insta::with_settings!({
        description => "mpiskel build (default target) on every NPB fixture: the scaling decision",
        omit_expression => true,
        snapshot_path => root().join("tests").join("snapshots"),
    }, {
        insta::assert_snapshot!("scaling__npb_decisions", table);
    });
}

/// The main loop's variable compute blocks of `name`'s default skeleton (the pipeline's own,
/// `--no-check`: the mechanism, whichever candidate the fidelity check then keeps): how many
/// there are, and how many of them draw their durations rather than replay them.
fn drawn_blocks(name: &str) -> (usize, usize) {
    fn walk(body: &serde_json::Value, out: &mut (usize, usize)) {
        for s in body.as_array().into_iter().flatten() {
            if s["stmt"] == "compute" && (s.get("dist").is_some() || s.get("factors").is_some()) {
                out.0 += 1;
                out.1 += usize::from(s.get("replay").is_none());
            }
            walk(&s["body"], out);
            for c in s["cases"].as_array().into_iter().flatten() {
                walk(&c["body"], out);
            }
        }
    }
    let doc = build_npb_with(name, &scratch("scaling-short-blocks"), &["--no-check"]);
    let mut counts = (0, 0);
    for class in doc["program"]["classes"].as_array().unwrap() {
        for phase in class["phases"].as_array().unwrap() {
            if phase["name"] == "main_loop" {
                walk(&phase["body"], &mut counts);
            }
        }
    }
    counts
}

/// Short blocks replay where together they hold most of the main loop's computation (NPB MG's
/// V-cycle: hundreds of short blocks between exchanges, whose independent draws add up to
/// waiting the application never had), and keep their draws where a few long blocks hold most
/// of it (NPB BT).
#[test]
fn short_blocks_replay_where_together_they_hold_most_of_a_loop() {
    let (mg, mg_drawn) = drawn_blocks("mg.S.16");
    assert!(mg > 100, "mg.S.16: {mg} variable blocks in the main loop");
    assert_eq!(mg_drawn, 0, "mg.S.16: {mg_drawn} of {mg} main-loop blocks draw");
    let (bt, bt_drawn) = drawn_blocks("bt.S.16");
    assert!(bt_drawn > 0 && bt_drawn < bt, "bt.S.16: {bt_drawn} of {bt} main-loop blocks draw");
}
