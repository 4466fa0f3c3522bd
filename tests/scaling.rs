//! The scaling decision for every NPB fixture, as one small table to review: how many of the
//! main loop's iterations run, the target and the estimate against the recorded application
//! time, the computation cut, and what `build` says holds a skeleton over its target. No MPI:
//! `mpiskel build` with the default target, read back from each `skeleton.json`.

mod support;

use std::fmt::Write as _;

use support::{mpiskel, root, scratch, shared};

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
    let mut table =
        String::from("trace | main loop run | target | estimate | compute cut | note\n");
    let work = scratch("scaling-npb");
    for name in &names {
        let dir = work.join(name);
        let out = mpiskel()
            .args(["build", "-q", "--force"])
            .arg(npb.join(name).join("trace.txt"))
            .arg("-o")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("skeleton.json")).unwrap())
                .unwrap();
        let s = &doc["scaling"];
        let f = |k: &str| s[k].as_f64().unwrap_or(0.0);
        let app = f("app_time_s");
        let note = s["note"].as_str().unwrap_or("");
        let _ = writeln!(
            table,
            "{name} | {} of {} | 1/{:.0} | {:.3} | {:.2e} s | {}",
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
