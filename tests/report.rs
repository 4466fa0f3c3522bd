//! `mpiskel report`: pages written from an NPB trace, a LAMMPS trace, a skeleton folder with a
//! run beside it and a validation folder, each opened by headless Chromium (Debian's
//! `chromium`), which must load it without a console message and hold its sections.

mod support;

use std::path::Path;
use std::process::Command;

use support::{fixture, mpi_lock, mpiskel, npb, root, run_skeleton, run_with_timeout, scratch};

/// Writes the report of `input` to `out`, returning the HTML.
fn report(input: &Path, out: &Path) -> String {
    let o = mpiskel().args(["report", "-q"]).arg(input).arg("-o").arg(out).output().unwrap();
    assert!(
        o.status.success(),
        "report of {}: {}",
        input.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

/// Opens `page` in headless Chromium; returns the DOM it built. Fails on any console message
/// (a script error is one).
fn open_in_chromium(page: &Path) -> String {
    let profile = scratch(&format!("chromium-{}", page.file_stem().unwrap().to_string_lossy()));
    let mut cmd = Command::new("chromium");
    cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.canonicalize().unwrap().display()));
    let out = run_with_timeout(cmd, 120);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium on {}: {stderr}", page.display());
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages on {}:\n{}", page.display(), console.join("\n"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn has_ids(dom: &str, ids: &[&str], what: &str) {
    for id in ids {
        assert!(dom.contains(&format!("id=\"{id}\"")), "{what}: no #{id} in the page");
    }
}

#[test]
fn a_traces_report_shows_its_matrix_and_loop_nests() {
    let dir = scratch("report-traces");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("cg.html");
    let html = report(&npb("cg.S.16"), &page);
    assert!(html.contains("butterfly rows + transpose on 4×4"), "topology");
    // CG's main loop, with its inner loop at its count in the application (not the skeleton's).
    assert!(html.contains("main_loop ×15"), "main loop");
    assert!(html.contains("loop ×25"), "inner loop");
    // The share of the application's communication the skeleton runs.
    assert!(html.contains("communication run"), "communication run");
    let dom = open_in_chromium(&page);
    has_ids(
        &dom,
        &["title", "facts", "matrix", "timeline", "loops", "scaling", "open-all"],
        "cg.S.16",
    );
    // Every rank sends to some rank: a cell per pair the trace holds.
    assert!(dom.matches("<rect x=").count() > 16, "heatmap cells");

    let page = dir.join("lammps.html");
    let html = report(&fixture("lammps-melt"), &page);
    assert!(html.contains("process classes"), "facts");
    let dom = open_in_chromium(&page);
    has_ids(&dom, &["matrix", "loops", "scaling"], "lammps-melt");
}

#[test]
fn a_skeleton_folders_report_shows_its_runs() {
    let dir = scratch("report-skeleton");
    let skel = dir.join("lu");
    let o = mpiskel()
        .args(["build", "-q", "--force"])
        .arg(npb("lu.S.4"))
        .arg("-o")
        .arg(&skel)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = {
        let _lock = mpi_lock();
        run_skeleton(&skel, "smpi", 300, 60, &[])
    };
    let page = dir.join("lu.html");
    let html = report(&skel, &page);
    // The run's prediction is on the page, to the digits the page shows.
    let predicted = format!("{:.4}", run["predicted_s"].as_f64().unwrap());
    assert!(html.contains(&predicted), "predicted {predicted} not on the page");
    let dom = open_in_chromium(&page);
    has_ids(&dom, &["matrix", "places", "loops", "scaling", "runs"], "lu.S.4 skeleton");
}

#[test]
fn a_validation_folders_report_lists_every_row() {
    let validation = root().join("validation");
    let rows = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(validation.join("results.json")).unwrap(),
    )
    .unwrap()["rows"]
        .as_array()
        .unwrap()
        .len();
    let dir = scratch("report-validation");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("validation.html");
    let html = report(&validation, &page);
    let dom = open_in_chromium(&page);
    has_ids(&dom, &["facts", "validation"], "validation");
    // A header row and one row per result.
    let table = &html[html.find("id=\"validation\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr>").count(), rows + 1);
    assert!(html.contains("<svg"), "the validation charts");
}

#[test]
fn report_refuses_what_it_cannot_read_naming_it() {
    let dir = scratch("report-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("results.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let out = dir.join("x.html");
    let o = mpiskel().args(["report", "-q"]).arg(&dir).arg("-o").arg(&out).output().unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("results.json"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn a_page_answers_a_what_if_on_a_modelled_platform() {
    // A trace's page with --platform: its time on the fixtures' reference cluster as the
    // latency grows, simulated, as a table and a chart that Chromium opens.
    let dir = scratch("report-whatif");
    let out = dir.join("cg.html");
    let platforms = support::shared().join("fixtures/npb/platforms");
    let o = mpiskel()
        .args(["report", "-q"])
        .arg(npb("cg.S.4"))
        .arg("-o")
        .arg(&out)
        .arg("--platform")
        .arg(platforms.join("ref.xml"))
        .args(["--sweep", "latency=1us,10us,100us"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    let section = &html[html.find("id=\"whatif\"").expect("a what-if section")..];
    assert!(section.contains("10us") && section.contains("100us") && section.contains("<svg"));
    // Slower links take longer: the predicted times grow down the table.
    let times: Vec<f64> = section
        .split("<td class=\"num\">")
        .skip(1)
        .step_by(2)
        .take(3)
        .map(|c| c[..c.find('<').unwrap()].parse().unwrap())
        .collect();
    assert!(times.len() == 3 && times[0] < times[1] && times[1] < times[2], "{times:?}");
    let dom = open_in_chromium(&out);
    assert!(dom.contains("What if: latency"));
    // A validation folder has no program: refused, by name.
    let v = dir.join("validation");
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(v.join("results.json"), "{}").unwrap();
    let o = mpiskel()
        .args(["report", "-q"])
        .arg(&v)
        .arg("-o")
        .arg(dir.join("v.html"))
        .arg("--platform")
        .arg(platforms.join("ref.xml"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--platform"));
}
