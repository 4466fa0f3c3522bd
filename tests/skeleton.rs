//! The skeletons of every fixture: built by `mpiskel build` (which runs the deadlock check),
//! snapshotted, compiled with `-Wall -Wextra -Werror` by mpicc.openmpi, mpicc.mpich and smpicc,
//! and run to completion under mpirun (both libraries) and smpirun, each with a timeout.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{
    check_report, fixture, mpi_lock, mpiskel, npb, root, run_skeleton, run_with_timeout, scratch,
    skeleton_fixture_tests,
};

/// Runs the skeleton with `mpiskel run --json`; returns the report.
fn run(dir: &Path, mpi: &str, timeout: u64) -> serde_json::Value {
    run_skeleton(dir, mpi, timeout, 60, &[])
}

/// A skeleton folder's `skeleton.json`.
fn document(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("skeleton.json")).unwrap()).unwrap()
}

/// Traces the skeleton compiled by [`compile_strict`] in `dir` (OpenMPI) on `np` ranks into
/// scratch folder `name`.
fn trace_skeleton(dir: &Path, np: usize, name: &str) -> PathBuf {
    let recorded = scratch(name).join("trace");
    let mut cmd = mpiskel();
    cmd.args(["trace", "--force", "-o"]).arg(&recorded).arg("--");
    cmd.args(support::Lib::OpenMpi.mpirun(np)).arg(dir.join("strict-mpicc-openmpi"));
    let out = {
        let _lock = mpi_lock();
        run_with_timeout(cmd, 300)
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    recorded
}

/// A trace's messages: the total and the busiest pairs, as `mpiskel inspect` counts them.
fn messages(t: &Path) -> (serde_json::Value, serde_json::Value) {
    let out = mpiskel().args(["inspect", "--json"]).arg(t).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["matrix"]["total"].clone(), v["matrix"]["top_pairs"].clone())
}

/// Builds the skeleton of `trace` into scratch folder `name`, as the pipeline makes it (its own
/// cuts, `--no-check`: what these tests review is the emitted program and the mechanisms that
/// made it; the fidelity check's choice among candidates is `tests/fidelity.rs`'s and
/// `tests/scaling.rs`'s).
fn build(name: &str, trace: &Path) -> PathBuf {
    let dir = scratch(&format!("skeleton-{name}")).join("skel");
    let out = mpiskel()
        .args(["build", "-q", "--no-check", "--name", name])
        .arg(trace)
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "building the skeleton of {}:\n{}{}",
        trace.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// Builds the skeleton of `trace` into `dir` with the extra build options `args` (replacing
/// what is there), as the pipeline makes it (`--no-check`, as [`build`]).
fn build_into(trace: &Path, dir: &Path, args: &[&str]) {
    let out = mpiskel()
        .args(["build", "-q", "--force", "--no-check"])
        .args(args)
        .arg(trace)
        .arg("-o")
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The emitted C with the trace's location (which depends on where the fixtures are) elided, in
/// focus where it is long (`support::focused`).
fn source_for_snapshot(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    let text = text
        .lines()
        .map(|l| if l.starts_with(" * Trace:") { " * Trace:     <trace>" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    support::focused(&text)
}

fn compile_strict(dir: &Path, cc: &str, extra: &[&str]) {
    let bin = format!("strict-{}", cc.replace('.', "-"));
    let out = Command::new(cc)
        .current_dir(dir)
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o", &bin, "skeleton.c"])
        .args(mpiskel_emit::c::RUNTIME_SOURCES)
        .args(extra)
        .arg("-lm")
        .output()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(
        out.status.success(),
        "{cc} -Wall -Wextra -Werror failed on {}:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The 4-rank skeleton in `dir` compiles with `-Wall -Wextra -Werror` under Open MPI and MPICH
/// and runs to its report under both.
fn compiles_strictly_and_runs_under_both(dir: &Path) {
    compile_strict(dir, "mpicc.openmpi", &[]);
    compile_strict(dir, "mpicc.mpich", &[]);
    let _lock = mpi_lock();
    for mpi in ["openmpi", "mpich"] {
        check_report(&run(dir, mpi, 300), mpi, 4);
    }
}

/// The whole check for one trace.
fn skeleton(name: &str, trace: &Path) {
    let dir = build(name, trace);
    let doc: serde_json::Value = document(&dir);
    let ranks = doc["n_ranks"].as_u64().unwrap();
    // The deadlock check ran over every rank and found none (the build refuses otherwise).
    assert_eq!(doc["check"]["ranks"].as_u64(), Some(ranks));
    assert!(doc["check"]["operations"].as_u64().unwrap() > 0);
    let main = &doc["scaling"];
    assert!(main["main_run"].as_u64().unwrap() >= 1);
    assert!(main["main_run"].as_u64() <= main["main_full"].as_u64());

    insta::with_settings!({
        description => format!("mpiskel build {name} (skeleton.c)"),
        omit_expression => true,
        snapshot_path => root().join("tests").join("snapshots"),
    }, {
        insta::assert_snapshot!(format!("skeleton__{}", name.replace('.', "_")), source_for_snapshot(&dir));
    });

    compile_strict(&dir, "mpicc.openmpi", &[]);
    compile_strict(&dir, "mpicc.mpich", &[]);
    compile_strict(&dir, "smpicc", &["-DMPISKEL_SMPI"]);

    let _lock = mpi_lock();
    check_report(&run(&dir, "openmpi", 300), "openmpi", ranks);
    check_report(&run(&dir, "mpich", 600), "mpich", ranks);
    check_report(&run(&dir, "smpi", 300), "smpi", ranks);
}

skeleton_fixture_tests!(skeleton);

/// CG's set-up is over the budget of its default target: by default every rank skips the same
/// part of it (recorded in skeleton.json and visible in the code); `--whole-compute` keeps it whole,
/// for a longer skeleton.
#[test]
fn a_set_up_over_the_budget_is_cut_unless_asked_to_run_whole() {
    let out = scratch("setup-cut");
    let mut results = Vec::new();
    for (name, extra) in [("cut", None), ("whole", Some("--whole-compute"))] {
        let dir = out.join(name);
        let mut c = mpiskel();
        c.args(["build", "-q", "--no-check"]).args(extra).arg(npb("cg.S.16")).arg("-o").arg(&dir);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let code = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
        results.push((document(&dir)["scaling"].clone(), code));
    }
    let (cut, whole) = (&results[0], &results[1]);
    assert!(cut.0["compute_removed_s"].as_f64().unwrap() > 0.0, "{}", cut.0);
    assert!(cut.1.contains("sk_compute_less("), "the set-up's blocks skip the same seconds");
    assert!(whole.0.get("compute_removed_s").is_none(), "{}", whole.0);
    assert!(!whole.1.contains("_less("));
    // Both cut the loops alike; the cut set-up makes the expected skeleton shorter.
    assert_eq!(cut.0["main_run"], whole.0["main_run"]);
    let est = |s: &serde_json::Value| s["skeleton_estimate_s"].as_f64().unwrap();
    assert!(est(&cut.0) < est(&whole.0), "{} vs {}", cut.0, whole.0);
}

/// A multigrid (NPB MG on 16 ranks: a 4 × 2 × 2 torus whose odd planes also talk two planes
/// away at coarse levels) is a grid with strides, and its ranks fold into one class: the
/// exchanges only some ranks make at the coarse levels are guarded per rank (a presence table;
/// the others make them toward `MPI_PROC_NULL`). The untimed V-cycle before the main loop is
/// one iteration of it, which the skeleton skips (priced as one more), and the set-up's loops
/// are cut. Its 4 V-cycles' drawn durations hardly spread, but the recorded ones do (the last
/// two computed 50 % longer on every rank), so all four run in the pipeline's own skeleton
/// (`--no-check`: the fidelity check then measures fewer, `tests/fidelity.rs`). The skeleton
/// runs under SimGrid.
#[test]
fn a_multigrid_is_a_grid_with_strides_and_its_classes_cut_the_loops_they_share() {
    let dir = scratch("mg-cut").join("skel");
    let out = mpiskel()
        .args(["build", "-q", "--no-check"])
        .arg(npb("mg.S.16"))
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = document(&dir);
    assert_eq!(doc["topology"], "4×2×2 grid periodic in dim 0 with strides (2,0,0)");
    assert_eq!(doc["classes"].as_array().map(Vec::len), Some(1), "{}", doc["classes"]);
    assert!(doc["classes"][0]["guarded_calls"].as_u64().is_some_and(|n| n > 0));
    let presence = doc["program"]["presence_tables"].as_array().expect("guarded calls");
    // Every table marks some ranks present and some not.
    for t in presence {
        let t: Vec<bool> = t.as_array().unwrap().iter().map(|b| b.as_bool().unwrap()).collect();
        assert!(t.contains(&true) && t.contains(&false), "{t:?}");
    }
    let scaling = &doc["scaling"];
    assert_eq!(scaling["main_full"].as_u64(), Some(4), "{scaling}");
    assert_eq!(scaling["main_run"].as_u64(), Some(4), "{scaling}");
    assert_eq!(scaling["main_needed"].as_u64(), Some(4), "{scaling}");
    let note = scaling["note"].as_str().unwrap();
    // Over the target, the note says what holds it up.
    assert!(note.contains("the parts outside the main loop"), "{scaling}");
    assert!(scaling["warmup_s"].as_f64().is_some_and(|s| s > 0.0), "{scaling}");
    for class in doc["program"]["classes"].as_array().unwrap() {
        let phases = class["phases"].as_array().unwrap();
        let warm = phases.iter().find(|p| p["name"] == "warmup").expect("a warm-up phase");
        assert_eq!(warm["calls"].as_u64(), Some(0), "{warm}");
        // The set-up's loops (its 20 norm reductions) are cut.
        assert!(
            phases
                .iter()
                .any(|p| p["name"] != "main_loop" && p["run"].as_u64() < p["full"].as_u64()),
            "{phases:?}"
        );
    }
    assert_eq!(doc["check"]["ranks"].as_u64(), Some(16));
    let _lock = mpi_lock();
    check_report(&run(&dir, "smpi", 300), "smpi", 16);
}

/// Blocks too short to time (30 µs, in an inner loop; the report to rank 0 makes rank 0's
/// program differ from the others') are what is left to cut once the main loop runs one of its
/// six steps: every rank runs a short part of each, and the runtime adds back what it skipped
/// at the pace the parts ran. Under SimGrid on hosts at half speed, where that pace is 2, the
/// cut skeleton predicts what the skeleton with every block whole predicts. On this machine the
/// parts too short to time run untimed, priced at the pace of the rank's timed parts (or the
/// pace its kernel was calibrated at): the cut skeleton runs under Open MPI with a prediction.
#[test]
fn short_cut_parts_run_untimed_and_are_priced_at_the_pace_of_the_timed_ones() {
    let dir = scratch("skeleton-untimed");
    let trace = dir.join("chain");
    std::fs::create_dir_all(&trace).unwrap();
    let n: usize = 4;
    let files: Vec<String> = (0..n).map(|r| format!("rank{r}.txt")).collect();
    std::fs::write(trace.join("trace.txt"), files.join("\n") + "\n").unwrap();
    for (r, file) in files.iter().enumerate() {
        let mut t = vec!["init".to_owned(), "compute 1000000".into(), "bcast 8".into()];
        for _ in 0..6 {
            for _ in 0..3 {
                t.push("compute 30000".into());
                if r > 0 {
                    t.push(format!("irecv {} 0 64", r - 1));
                }
                if r + 1 < n {
                    t.push(format!("isend {} 0 64", r + 1));
                }
                t.push("waitall".into());
            }
            if r == 0 {
                t.extend((1..n).map(|q| format!("irecv {q} 1 8")));
            } else {
                t.push("isend 0 1 8".into());
            }
            t.push("waitall".into());
            t.push("allreduce 1 1".into());
        }
        t.push("finalize".into());
        let text: String = t.iter().map(|l| format!("{r} {l}\n")).collect();
        std::fs::write(trace.join(file), text).unwrap();
    }
    let (cut, whole) = (dir.join("cut"), dir.join("whole"));
    // A target the set-up's cut alone cannot reach.
    build_into(&trace.join("trace.txt"), &cut, &["--target-time", "5e-5"]);
    build_into(&trace.join("trace.txt"), &whole, &["--target-time", "5e-5", "--whole-compute"]);
    let code = std::fs::read_to_string(cut.join("skeleton.c")).unwrap();
    assert!(code.contains("sk_compute_less(3.0"), "the inner loop's blocks are cut:\n{code}");
    let platforms = support::shared().join("fixtures").join("npb").join("platforms");
    let (platform, hosts) =
        (platforms.join("speedhalf.xml"), platforms.join("hostfile_1perhost.txt"));
    let extra = [
        std::ffi::OsStr::new("--platform"),
        platform.as_os_str(),
        std::ffi::OsStr::new("--hostfile"),
        hosts.as_os_str(),
    ];
    let _lock = mpi_lock();
    let (c, w) = (
        run_skeleton(&cut, "smpi", 300, 60, &extra),
        run_skeleton(&whole, "smpi", 300, 60, &extra),
    );
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    assert!(f(&c, "skeleton_s") < f(&w, "skeleton_s"), "{c}\n{w}");
    let (pc, pw) = (f(&c, "predicted_s"), f(&w, "predicted_s"));
    assert!((pc / pw - 1.0).abs() < 0.03, "cut {pc} s against whole {pw} s\n{c}\n{w}");
    check_report(&run(&cut, "openmpi", 120), "openmpi", n as u64);
}

/// A program that can deadlock is refused with a diagnostic naming the blocked ranks, and
/// nothing is written: a trace whose ranks wait for each other's blocking receives first
/// (recorded from a real run under eager sends, where it finished) would hang under rendezvous.
#[test]
fn a_program_that_can_deadlock_is_refused_with_a_diagnostic() {
    let dir = scratch("skeleton-refused");
    let trace = dir.join("headtohead");
    // Two ranks that both receive first: a SimGrid time-independent trace, written by hand.
    std::fs::create_dir_all(&trace).unwrap();
    std::fs::write(trace.join("trace.txt"), "rank0.txt\nrank1.txt\n").unwrap();
    for (r, peer) in [(0, 1), (1, 0)] {
        let mut text = format!("{r} init\n");
        for _ in 0..3 {
            text += &format!("{r} compute 1000000\n{r} recv {peer} 0 100\n{r} send {peer} 0 100\n");
        }
        text += &format!("{r} finalize\n");
        std::fs::write(trace.join(format!("rank{r}.txt")), text).unwrap();
    }
    let out_dir = dir.join("skel");
    let out = mpiskel()
        .args(["build", "-q"])
        .arg(trace.join("trace.txt"))
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a deadlocking program was emitted");
    assert!(err.contains("can block forever"), "{err}");
    assert!(err.contains("rank 0") && err.contains("rank 1") && err.contains("MPI_Recv"), "{err}");
    assert!(!out_dir.exists(), "a refused build left {}", out_dir.display());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary folders left: {leftovers:?}");
}

/// A folder is never overwritten without --force, and a failed build leaves nothing behind.
#[test]
fn build_refuses_to_overwrite_and_replaces_with_force() {
    let dir = scratch("skeleton-force").join("skel");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mine.txt"), "keep").unwrap();
    let out =
        mpiskel().args(["build", "-q"]).arg(fixture("ring")).arg("-o").arg(&dir).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert!(dir.join("mine.txt").exists());
    let out = mpiskel()
        .args(["build", "-q", "--force"])
        .arg(fixture("ring"))
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.join("mine.txt").exists());
    for f in [
        "skeleton.c",
        "mpiskel_rt.c",
        "mpiskel_rt_report.c",
        "mpiskel_rt.h",
        "mpiskel_rt_internal.h",
        "Makefile",
        "run.sh",
        "job.slurm",
        "README.md",
        "skeleton.json",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary folders left: {leftovers:?}");
    // inspect shows the skeleton's structure.
    let out = mpiskel().arg("inspect").arg(&dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("main_loop") && text.contains("ring of 4"),
        "{text}"
    );
}

/// The folder's Makefile and run script work on their own (what a user on another cluster does).
#[test]
fn the_folder_builds_and_runs_with_its_own_makefile_and_script() {
    let dir = build("halo-own", &fixture("halo2d-open-4x4"));
    let out = Command::new("make")
        .current_dir(&dir)
        .args([
            "MPICC=mpicc.openmpi",
            "CFLAGS=-O2 -Wall -Wextra -Werror",
            "PROGRAM_CFLAGS=-O1 -Wall -Wextra -Werror",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _lock = mpi_lock();
    let mut cmd = Command::new(dir.join("run.sh"));
    cmd.env("MPIRUN", "mpirun.openmpi").env("MPIRUN_FLAGS", "--oversubscribe --allow-run-as-root");
    let out = run_with_timeout(cmd, 300);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("predicted application time"), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    check_report(&report, "openmpi", 16);
}

/// A time-step loop whose halo sizes drift, which migrates atoms and agrees on new sizes every
/// tenth step and writes output every 25th (`fixtures/programs/timestep.c`): the exact loop
/// discovery breaks it at every rebuild; its steps fold into one main loop of a few kinds that
/// holds nearly all the computation, the skeleton runs a sample of them with every kind, and it
/// runs under both MPI libraries.
#[test]
fn an_irregular_time_step_loop_folds_into_steps_and_is_cut() {
    let trace = scratch("timestep").join("trace");
    support::trace_program(
        support::Lib::OpenMpi,
        4,
        "timestep",
        &["120", "10", "25", "300"],
        &trace,
    );
    let out = mpiskel().args(["compress", "--json", "--rank", "0"]).arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let nest: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let main = nest["main_loop"].as_str().unwrap();
    assert!(main.starts_with("{…}^"), "not folded into steps: {main}");
    assert!(nest["report"]["coverage"].as_f64().unwrap() > 0.95, "{}", nest["report"]);

    let dir = build("timestep", &trace);
    let doc: serde_json::Value = document(&dir);
    let s = &doc["scaling"];
    assert!(s["main_share"].as_f64().unwrap() >= 0.9, "{s}");
    let (ran_steps, full) = (s["main_run"].as_u64().unwrap(), s["main_full"].as_u64().unwrap());
    assert!(full >= 120 && ran_steps * 4 <= full, "{ran_steps} of {full} steps run");
    let phase = doc["program"]["classes"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "main_loop")
        .unwrap()
        .clone();
    let kinds = phase["steps"]["kinds"].as_array().unwrap();
    let ran: std::collections::BTreeSet<u64> = phase["steps"]["run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| kinds[i.as_u64().unwrap() as usize].as_u64().unwrap())
        .collect();
    let all: std::collections::BTreeSet<u64> = kinds.iter().map(|k| k.as_u64().unwrap()).collect();
    assert!(all.len() >= 3, "{} kinds", all.len());
    assert_eq!(ran, all, "every kind of step runs");
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(source.contains(&format!("switch (main_loop_kind[it % {ran_steps}])")));

    compile_strict(&dir, "mpicc.openmpi", &[]);
    compile_strict(&dir, "mpicc.mpich", &[]);
    let _lock = mpi_lock();
    let ranks = doc["n_ranks"].as_u64().unwrap();
    for mpi in ["openmpi", "mpich"] {
        let r = run(&dir, mpi, 300);
        check_report(&r, mpi, ranks);
        // Each kind's timer scales by its own count.
        let timers = r["phases"].as_array().unwrap();
        let kind_timers: Vec<_> = timers
            .iter()
            .filter(|p| p["name"].as_str().unwrap().starts_with("main_loop.kind"))
            .collect();
        assert_eq!(kind_timers.len(), all.len());
        assert!(kind_timers.iter().all(|p| p["run"].as_u64() >= Some(1)));
    }
    // More steps than built in (`--iterations`): the table of kinds is read twice, and each
    // kind's timer counts twice the steps of its kind; fewer than the table's run it whole,
    // so that every kind runs.
    let mut per_kind = std::collections::BTreeMap::new();
    for i in phase["steps"]["run"].as_array().unwrap() {
        *per_kind.entry(kinds[i.as_u64().unwrap() as usize].as_u64().unwrap()).or_insert(0) += 1;
    }
    for (asked, runs) in [(2 * ran_steps, 2), (ran_steps / 2, 1)] {
        let out = mpiskel()
            .args(["run", "--mpi", "openmpi", "--json", "--timeout", "300"])
            .arg(&dir)
            .args(["--", "--iterations", &asked.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        check_report(&r, "openmpi", ranks);
        let timers = r["phases"].as_array().unwrap();
        let main = timers.iter().find(|p| p["name"] == "main_loop").unwrap();
        assert_eq!(main["run"].as_u64(), Some(runs * ran_steps), "--iterations {asked}: {main}");
        for (kind, n) in &per_kind {
            let t = timers.iter().find(|p| p["name"] == format!("main_loop.kind{kind}").as_str());
            assert_eq!(
                t.unwrap()["run"].as_u64(),
                Some(runs * n),
                "kind {kind}, --iterations {asked}"
            );
        }
    }
}

/// Codes that poll instead of blocking (`fixtures/programs/polling.c`: MPI_Testany and MPI_Test
/// loops on a ring, MPI_Iprobe of any source at a collector; `panel.c`: HPL-style panel
/// broadcasts along a ring, received by polling MPI_Iprobe while updating): the failed polls fold
/// into the blocking calls that ended them, the time-step loop is found whole on every rank (the
/// panels' as steps of the calls' shapes, since their sizes differ at every step), the
/// any-source receives of the collector take only the reports (their traced tag is kept apart
/// from the ring's messages), the deadlock check passes, and the skeletons run under both MPI
/// libraries.
#[test]
fn polling_loops_fold_into_blocking_completions() {
    for (program, args) in [("polling", ["24", "4096", "400"]), ("panel", ["24", "32768", "800"])] {
        let trace = scratch(program).join("trace");
        support::trace_program(support::Lib::OpenMpi, 4, program, &args, &trace);
        let dir = build(program, &trace);
        let doc: serde_json::Value = document(&dir);
        let polls = &doc["polls"];
        assert!(polls["polls"].as_u64().unwrap() > 0, "{program}: {polls}");
        assert!(polls["folded_runs"].as_u64().unwrap() > 0, "{program}: {polls}");
        // Every polling loop of these programs ends in the call it waited for.
        assert_eq!(polls["kept_runs"].as_u64(), Some(0), "{program}: {polls}");
        let s = &doc["scaling"];
        if program == "polling" {
            // Every iteration is the same once its polls are folded: the whole loop is found.
            assert_eq!(s["main_full"].as_u64(), Some(24), "{s}");
            assert!(s["main_share"].as_f64().unwrap() >= 0.9, "{s}");
        } else {
            // No two panels have the same size, so no call repeats exactly; the calls' shapes
            // repeat every four panels (the root goes round the ring of 4): those steps are the
            // main loop, every one of the 24 panels in it (the first panels are the largest: a
            // loop begun a step late left a third of the time out), and it is cut.
            let (run, full) = (s["main_run"].as_u64().unwrap(), s["main_full"].as_u64().unwrap());
            assert!(full == 6 && run < full, "{s}");
            assert!(s["main_share"].as_f64().unwrap() >= 0.9, "{s}");
        }
        compile_strict(&dir, "mpicc.openmpi", &[]);
        compile_strict(&dir, "mpicc.mpich", &[]);
        let _lock = mpi_lock();
        let ranks = doc["n_ranks"].as_u64().unwrap();
        for mpi in ["openmpi", "mpich"] {
            check_report(&run(&dir, mpi, 300), mpi, ranks);
        }
    }
}

/// Two threads per rank, each broadcasting on its own copy of the world from a root of its own
/// (`fixtures/programs/threads.c rooted`): rank 0 returns from the first copy's broadcast before
/// the second's and rank 1 the other way round, every round. One thread per rank, as traced,
/// the skeleton would wait forever (the build refused it); its collectives are put in one order
/// and the skeleton, built with its fidelity check, runs to its end under OpenMPI and MPICH.
#[test]
fn collectives_threads_made_in_different_orders_take_one_order() {
    let base = scratch("threads-rooted");
    let (trace, dir) = (base.join("trace"), base.join("skel"));
    support::trace_program(support::Lib::OpenMpi, 4, "threads", &["50", "20", "rooted"], &trace);
    let out = mpiskel()
        .args(["build", "--force", "--json", "-q"])
        .arg(&trace)
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let built: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = built["notes"].to_string();
    assert!(notes.contains("made later than traced"), "{notes}");
    let doc = document(&dir);
    assert_eq!(doc["fidelity"].as_array().map(Vec::len), Some(6), "{}", doc["fidelity"]);
    compile_strict(&dir, "mpicc.openmpi", &[]);
    compile_strict(&dir, "mpicc.mpich", &[]);
    let _lock = mpi_lock();
    for mpi in ["openmpi", "mpich"] {
        check_report(&run(&dir, mpi, 120), mpi, 4);
    }
}

/// Two threads per rank, the first passing a message round the ring and waiting for it before
/// each broadcast on its copy of the world (`fixtures/programs/threads.c waits`): rank 1 returns
/// from the second copy's broadcast before it waits for the ring's message, which rank 0 sends
/// only after the first copy's broadcast. Putting collectives in one order between the calls
/// that wait cannot mend that (the build refused it); the calls another rank waits for are
/// made earlier, past the wait, and the skeleton runs to its end under OpenMPI and MPICH.
#[test]
fn calls_a_thread_made_after_another_threads_wait_are_made_before_it() {
    let base = scratch("threads-waits");
    let (trace, dir) = (base.join("trace"), base.join("skel"));
    support::trace_program(support::Lib::OpenMpi, 4, "threads", &["50", "20", "waits"], &trace);
    let out = mpiskel()
        .args(["build", "--force", "--json", "-q", "--no-check"])
        .arg(&trace)
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let built: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = built["notes"].to_string();
    assert!(notes.contains("made earlier than traced"), "{notes}");
    assert!(notes.contains("past a wait"), "{notes}");
    compile_strict(&dir, "mpicc.openmpi", &[]);
    compile_strict(&dir, "mpicc.mpich", &[]);
    let _lock = mpi_lock();
    for mpi in ["openmpi", "mpich"] {
        check_report(&run(&dir, mpi, 120), mpi, 4);
    }
}

/// A halo exchange that unpacks each neighbour's halo as it lands (`MPI_Waitsome` until the
/// step's requests are done) makes, at every step, the calls its messages' arrival order made:
/// no two steps alike, no loop. Each run of partial completions folded into one `MPI_Waitall`,
/// the steps are one loop of one class, and it is cut. (Before: its 4 ranks were 4 classes and
/// a main loop of 53 iterations ran whole, 0.97 of the run.)
#[test]
fn partial_completions_fold_into_one_waitall_and_the_steps_into_one_loop() {
    let trace = scratch("waitsome").join("trace");
    let args = ["2x2", "1", "200", "4096", "waitsome"];
    support::trace_program(support::Lib::OpenMpi, 4, "halo", &args, &trace);
    let dir = build("waitsome", &trace);
    let doc = document(&dir);
    let polls = &doc["polls"];
    // Every rank completes its 8 requests of every step in one folded call.
    let runs = polls["partial_runs"].as_u64().unwrap();
    assert!((4 * 200..=4 * 201).contains(&runs), "{polls}");
    assert!(polls["partial_calls"].as_u64().unwrap() >= runs, "{polls}");
    let s = &doc["scaling"];
    assert_eq!(s["main_full"].as_u64(), Some(200), "{s}");
    assert!(s["main_run"].as_u64().unwrap() < 50, "{s}");
    assert!(s["main_share"].as_f64().unwrap() >= 0.9, "{s}");
    assert_eq!(doc["classes"].as_array().map(Vec::len), Some(1), "{}", doc["classes"]);
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(source.contains("MPI_Waitall") && !source.contains("MPI_Waitsome"));
    compile_strict(&dir, "mpicc.openmpi", &[]);
    compile_strict(&dir, "mpicc.mpich", &[]);
    let _lock = mpi_lock();
    for mpi in ["openmpi", "mpich"] {
        check_report(&run(&dir, mpi, 300), mpi, 4);
    }
}

/// `build --strict` of `trace` into `strict`: refused, and nothing written there; returns what
/// it said.
fn refused_when_strict(trace: &Path, strict: &Path) -> String {
    let out = mpiskel().args(["build", "-q", "--strict"]).arg(trace).arg("-o").arg(strict).output();
    let out = out.unwrap();
    assert!(!out.status.success());
    assert!(!strict.exists());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A receive posted from any source for updates that stop coming, then cancelled
/// (`fixtures/programs/cancel.c`): nothing matches it, so a skeleton that posted it would wait
/// forever. `build --strict` refuses the trace as the deadlock check finds; by default the
/// receive and the wait that completed it are local calls (Xu & Subhlok 2008, §4), left out and
/// reported, and the skeleton is proven deadlock-free and runs under both MPI libraries.
#[test]
fn calls_nothing_matches_are_left_out_unless_strict() {
    let base = scratch("cancel");
    let (trace, strict) = (base.join("trace"), base.join("strict"));
    support::trace_program(support::Lib::OpenMpi, 4, "cancel", &["30", "512", "100"], &trace);
    let err = refused_when_strict(&trace, &strict);
    assert!(err.contains("which nobody matches") && err.contains("--strict"), "{err}");

    let dir = build("cancel", &trace);
    let doc: serde_json::Value = document(&dir);
    let local = &doc["local_calls"];
    // One cancelled receive and its wait per rank.
    assert_eq!(local["receives"].as_u64(), Some(4), "{local}");
    assert_eq!(local["completions"].as_u64(), Some(4), "{local}");
    assert_eq!(local["sends"].as_u64(), Some(0), "{local}");
    assert_eq!(doc["scaling"]["main_full"].as_u64(), Some(30), "{}", doc["scaling"]);
    compiles_strictly_and_runs_under_both(&dir);
}

/// Exchanges in pairs as Quantum ESPRESSO makes them on 4 ranks (`fixtures/programs/pairwise.c`):
/// `MPI_Sendrecv_replace` rounds tagged by round whose partner is sometimes the rank itself,
/// and pairs of ranks that each start a small send to the other and wait for it before they
/// receive (the wait returns only because the library buffers the message). `build --strict`
/// refuses it as the deadlock check finds; by default those sends become `MPI_Ibsend`, the
/// build says so, and the skeleton is proven deadlock-free and runs under both MPI libraries.
#[test]
fn waits_for_sends_the_run_buffered_are_buffered_unless_strict() {
    let base = scratch("pairwise");
    let (trace, strict) = (base.join("trace"), base.join("strict"));
    support::trace_program(support::Lib::OpenMpi, 4, "pairwise", &["30", "4096", "100"], &trace);
    let err = refused_when_strict(&trace, &strict);
    assert!(err.contains("MPI_Wait on requests") && err.contains("--strict"), "{err}");

    let dir = base.join("skel");
    let out =
        mpiskel().args(["build", "--name", "pairwise"]).arg(&trace).arg("-o").arg(&dir).output();
    let out = out.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("non-blocking sends are buffered (MPI_Ibsend"), "{err}");
    let doc: serde_json::Value = document(&dir);
    // Each rank's send to its partner: one per class.
    let classes = doc["classes"].as_array().unwrap().len() as u64;
    assert_eq!(doc["buffered_nonblocking"].as_u64(), Some(classes), "{doc:#}");
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(source.contains("MPI_Ibsend(") && !source.contains("MPI_Isend("), "{source}");
    assert!(source.contains("sk_buffer_attach(") && source.contains("sk_buffer_detach()"));
    compiles_strictly_and_runs_under_both(&dir);
}

/// A ring whose messages go by buffered and persistent requests (`fixtures/programs/persistent.c`:
/// `MPI_Ibsend`, `MPI_Start`, `MPI_Startall`): the tracer records each start as the send or
/// receive it starts, so the skeleton holds every message and runs under both libraries. The same
/// trace without those sends and receives, as a tracer that does not record them writes it, still
/// builds, and the build says how many requests its waits complete that nothing started, and that
/// the skeleton lacks their messages.
#[test]
fn requests_started_by_persistent_and_buffered_calls_are_traced_and_else_named() {
    let base = scratch("persistent");
    let (trace, dir) = (base.join("trace"), base.join("skel"));
    support::trace_program(support::Lib::OpenMpi, 4, "persistent", &["20", "100"], &trace);
    let build = |trace: &Path, dir: &Path| build_named(trace, dir, "persistent");
    let err = build(&trace, &dir);
    assert!(!err.contains("were started by calls"), "{err}");
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(source.contains("MPI_Irecv(") && source.contains("MPI_Isend("), "{source}");
    {
        let _lock = mpi_lock();
        for mpi in ["openmpi", "mpich"] {
            check_report(&run(&dir, mpi, 300), mpi, 4);
        }
    }

    let set = mpiskel_trace::TraceSet::open(&trace, &Default::default()).unwrap();
    let stripped = base.join("stripped");
    std::fs::create_dir_all(&stripped).unwrap();
    std::fs::copy(trace.join("meta.json"), stripped.join("meta.json")).unwrap();
    for mut rt in set.ranks {
        rt.events.retain(|e| !matches!(e.op, mpiskel_trace::Op::Isend | mpiskel_trace::Op::Irecv));
        let file = stripped.join(mpiskel_trace::native::rank_file_name(rt.rank));
        mpiskel_trace::native::write_rank_file(&file, &rt).unwrap();
    }
    let err = build(&stripped, &base.join("stripped.skel"));
    // Six requests per rank and iteration.
    assert!(
        err.contains("480 requests the trace's waits and tests complete were started by calls"),
        "{err}"
    );
}

/// `mpiskel build --name NAME TRACE -o DIR`, which must succeed; its standard error (the notes).
fn build_named(trace: &Path, dir: &Path, name: &str) -> String {
    let mut cmd = mpiskel();
    let out = cmd
        .args(["build", "--no-check", "--name", name])
        .arg(trace)
        .arg("-o")
        .arg(dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

/// A program that communicates one-sided beside two-sided (`fixtures/programs/onesided.c`):
/// `build` says how many one-sided calls the trace counts without recording them and what they
/// moved, its waits on `MPI_Rget` requests complete nothing in the skeleton, which holds the
/// two-sided messages and runs under both libraries.
#[test]
fn one_sided_calls_are_counted_and_named_by_the_build() {
    let base = scratch("onesided");
    let (trace, dir) = (base.join("trace"), base.join("skel"));
    support::trace_program(support::Lib::OpenMpi, 4, "onesided", &["20", "4096"], &trace);
    let err = build_named(&trace, &dir, "onesided");
    // Per rank and iteration: 2 puts, a get, an accumulate, an Rget, 2 fences and 4 lock calls;
    // 4 KiB each but for the accumulate's double.
    assert!(
        err.contains(
            "the application made 880 one-sided calls that the trace counts but does not record \
             (MPI_Put 160, MPI_Win_fence 160, MPI_Accumulate 80, MPI_Get 80, …; 1.3 MiB moved;"
        ),
        "{err}"
    );
    assert!(!err.contains("were started by calls"), "{err}");
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(source.contains("MPI_Sendrecv("), "{source}");
    let _lock = mpi_lock();
    for mpi in ["openmpi", "mpich"] {
        check_report(&run(&dir, mpi, 300), mpi, 4);
    }
}

/// A program that writes a shared file (`fixtures/programs/fileio.c`): `build` says how many
/// MPI-IO calls the trace counts without recording them, what they read and wrote, and that
/// their time replays as computation.
#[test]
fn file_io_calls_are_counted_and_named_by_the_build() {
    let base = scratch("fileio");
    let (trace, dir) = (base.join("trace"), base.join("skel"));
    let data = base.join("data");
    let args = [data.to_str().unwrap(), "8", "65536"];
    support::trace_program(support::Lib::OpenMpi, 4, "fileio", &args, &trace);
    let err = build_named(&trace, &dir, "fileio");
    // Per rank: an open, 8 collective writes of 64 KiB, a read of 64 KiB and a close.
    assert!(
        err.contains(
            "the application made 44 MPI-IO calls that the trace counts but does not record \
             (MPI_File_write_at_all 32, MPI_File_close 4, MPI_File_open 4, MPI_File_read_at 4; \
             2.2 MiB read or written;"
        ),
        "{err}"
    );
    assert!(!err.contains("one-sided calls"), "{err}");
}

/// A program that relies on its MPI library buffering small sends (`fixtures/programs/eager.c`:
/// a ring that sends before it receives, and a send that waits across a broadcast for its
/// receive): `build --strict` refuses it as the deadlock check finds; by default the sends the
/// check is stuck in become `MPI_Bsend` with a buffer the skeleton attaches, the build says so,
/// and the skeleton runs with more iterations than built in too (the buffer grows with them).
/// (Its code is compiled and run under the three libraries with the other fixtures.)
#[test]
fn sends_the_run_buffered_are_buffered_unless_strict() {
    let trace = root().join("fixtures/traces/eager");
    let base = scratch("eager");
    let strict = base.join("strict");
    let err = refused_when_strict(&trace, &strict);
    assert!(err.contains("MPI_Send to rank") && err.contains("--strict"), "{err}");

    let dir = base.join("skel");
    let out = mpiskel().args(["build", "--name", "eager"]).arg(&trace).arg("-o").arg(&dir).output();
    let out = out.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("blocking sends are buffered (MPI_Bsend"), "{err}");
    let doc: serde_json::Value = document(&dir);
    // The ring's send in each class, and rank 0's send across the broadcast.
    let classes = doc["classes"].as_array().unwrap().len() as u64;
    assert_eq!(doc["buffered_sends"].as_u64(), Some(classes + 1), "{}", doc["buffered_sends"]);
    let buffer = &doc["program"]["send_buffer"];
    assert!(buffer["bytes"].as_u64().unwrap() >= 1024, "{buffer}");
    // The skeleton's code, compiled and run under the three libraries: the `eager` fixture test.
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(!source.contains("MPI_Send("), "every blocking send of eager is buffered");
    assert!(source.contains("sk_buffer_attach(") && source.contains("sk_buffer_detach()"));
    let _lock = mpi_lock();
    let full = mpiskel()
        .args(["run", "--mpi", "openmpi", "--json", "--timeout", "300"])
        .arg(&dir)
        .args(["--", "--iterations", "20"])
        .output()
        .unwrap();
    assert!(full.status.success(), "{}", String::from_utf8_lossy(&full.stderr));
}

/// A dynamic master–worker (`fixtures/programs/taskfarm.c`: the master answers whichever worker
/// reported first, and each worker stops on a message of tag 0): with `MPI_ANY_SOURCE` kept, the
/// master could take another worker's result than the one it then answers, and the deadlock
/// check refuses it; the build pins each any-source receive to the source the traced run gave it,
/// says so, cuts each worker's computation by the same share, and the skeleton runs under both
/// MPI libraries, its prediction holding the workers' removed computation to what the node's
/// processors could have run: the processors of the machine, of one (`taskset`), and of half a
/// processor's quota (a CPU cgroup). On one processor, `run` notes what a single run is worth.
#[test]
fn a_master_worker_with_any_source_is_built_by_pinning_its_sources() {
    let out_dir = scratch("taskfarm");
    let (trace, dir) = (out_dir.join("trace"), out_dir.join("skel"));
    // Enough tasks that the order the workers asked in does not repeat (with 30, a run's order
    // can fold into a few kinds of round, whose every kind the skeleton must then run).
    // With the processor time of each block: the prediction is then held to the node's
    // processors (below).
    support::trace_program_with(
        support::Lib::OpenMpi,
        4,
        "taskfarm",
        &["300", "1000"],
        &trace,
        &["--cpu-time"],
    );
    // The pinning and the compute cut are what this test measures, so the build keeps its
    // default cut (`--no-check`): the fidelity check measures that cut 7 to 12 % short on its
    // panel (the waits the master's order imposes shrink with the computation cut, and nothing
    // adds them back) and keeps the whole program instead; `tests/fidelity.rs` measures the
    // check.
    let out = mpiskel()
        .args(["build", "--no-check", "--name", "taskfarm"])
        .arg(&trace)
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MPI_ANY_SOURCE take the source"));
    let doc: serde_json::Value = document(&dir);
    // The master takes one result per task.
    assert_eq!(doc["pinned_any_source"].as_u64(), Some(300), "{}", doc["pinned_any_source"]);
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(!source.contains("MPI_ANY_SOURCE"));
    // No loop, and no compute block at the same place in every class (the master computes
    // nothing): each worker's blocks lose the same share of themselves, and the skeleton is
    // within a twelfth of the application (its target, with no loop to sample, a
    // twenty-fourth), or `build` says why it is not. A run whose workers fold into one class
    // although their tasks took different times lets each block lose only what the class's
    // quickest rank computed there (one such trace: 0.37 of the run, with the binary of the day
    // before as well); the runs this test makes usually give each worker a class of its own.
    let s = &doc["scaling"];
    assert!(s["compute_removed_s"].as_f64().unwrap_or(0.0) > 0.0, "{s}");
    let (estimate, target, app) = (
        s["skeleton_estimate_s"].as_f64().unwrap(),
        s["target_s"].as_f64().unwrap(),
        s["app_time_s"].as_f64().unwrap(),
    );
    let explained = s["note"].as_str().is_some_and(|n| n.contains("over the target"));
    assert!(estimate <= app / 12.0 || explained, "{s}");
    assert!(estimate <= 1.1 * target || explained, "{s}");
    assert!(source.contains("sk_compute_less("), "workers' blocks are cut");
    compile_strict(&dir, "mpicc.openmpi", &[]);
    compile_strict(&dir, "mpicc.mpich", &[]);
    let _lock = mpi_lock();
    for mpi in ["openmpi", "mpich"] {
        let r = run(&dir, mpi, 300);
        check_report(&r, mpi, 4);
        // The computation the workers did not run shares the node's processors as the
        // application's did: the prediction is at least the node's processor seconds over the
        // processors its ranks may use. With 4 ranks on 2 cores, each worker restoring its own
        // at the pace of its short kept parts (which run between messages, mostly alone) falls
        // under that: one run, 0.37 s predicted against 0.80 s removed over 2 cores.
        let node = &r["node"];
        assert_eq!(node["ranks"].as_u64(), Some(4), "{mpi}: {r}");
        let f = |k: &str| node[k].as_f64().unwrap_or_else(|| panic!("{mpi}: no {k}: {r}"));
        let (cores, computed, removed) = (f("cores"), f("computed_s"), f("removed_s"));
        assert!(cores > 0.0 && computed > 0.0 && removed > 0.0, "{mpi}: {r}");
        let predicted = r["predicted_s"].as_f64().unwrap();
        let least = (computed + removed) / cores;
        assert!(predicted >= 0.999 * least, "{mpi}: {predicted} s < {least} s: {r}");
    }
    // Run with `wrap` before the command, the node's processors are `cores`, and the prediction
    // is at least all the node's computation over them.
    let run_under = |wrap: &[&std::ffi::OsStr], cores: f64| {
        let mut cmd = Command::new(wrap[0]);
        cmd.args(&wrap[1..]).arg(env!("CARGO_BIN_EXE_mpiskel"));
        cmd.args(["run", "--json", "--mpi", "openmpi", "--timeout", "300"]).arg(&dir);
        let out = support::run_with_timeout(cmd, 360);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let node = &r["node"];
        assert_eq!(node["cores"].as_f64(), Some(cores), "{r}");
        let all = node["computed_s"].as_f64().unwrap() + node["removed_s"].as_f64().unwrap();
        assert!(r["predicted_s"].as_f64().unwrap() >= 0.999 * all / cores, "{r}");
    };
    // On one processor (`taskset -c 0`, which every rank inherits) the three workers' removed
    // computation runs one after another: each restored at the pace of its own kept parts, the
    // prediction would be about the busiest worker's alone.
    run_under(&["taskset".as_ref(), "-c".as_ref(), "0".as_ref()], 1.0);
    // Its summary says that one run there is worth little on its own.
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", "0"]).arg(env!("CARGO_BIN_EXE_mpiskel"));
    cmd.args(["run", "--mpi", "openmpi", "--timeout", "300"]).arg(&dir);
    let out = support::run_with_timeout(cmd, 360);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("the 4 ranks share 1 processor here") && text.contains("--repeat"),
        "{text}"
    );
    // Under a CPU quota of half a processor (a cgroup, as `mpiskel validate` makes for its
    // shared-processor scenarios): the node's processors are the quota.
    let cgroup = mpiskel_make::harness::Cgroup::create(50).expect("a CPU cgroup (as root)");
    let prefix = cgroup.prefix();
    run_under(&prefix.iter().map(|w| w.as_os_str()).collect::<Vec<_>>(), 0.5);
}

/// An interrupted `mpiskel run` stops the skeleton's ranks and leaves no partly linked binary:
/// a ring skeleton whose computation is stretched ten thousand times is stopped with SIGTERM while
/// it runs.
#[test]
fn an_interrupted_run_leaves_no_ranks_running() {
    let out_dir = scratch("interrupted-run");
    let dir = out_dir.join("skel");
    let out =
        mpiskel().args(["build", "-q"]).arg(fixture("ring")).arg("-o").arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bin = dir.join("skeleton-openmpi");
    let _lock = mpi_lock();
    let mut cmd = mpiskel();
    cmd.args(["run", "--mpi", "openmpi"]).arg(&dir).args(["--", "--compute-scale", "10000"]);
    cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let running = || {
        let ps = Command::new("pgrep").arg("-f").arg(&bin).output().unwrap();
        !ps.stdout.is_empty()
    };
    let start = std::time::Instant::now();
    while !running() && start.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(running(), "the skeleton never started");
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(128 + 15));
    let mut left = true;
    for _ in 0..100 {
        left = running();
        if !left {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!left, "ranks of {} still run", bin.display());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// NPB SP's sixteen ranks run one program on cells of different sizes (a multi-partition of a
/// 12³ grid): its ranks send different sizes at the same position. The skeleton sends each
/// rank's own (a table of sizes per rank): built for a target longer than the run (nothing cut,
/// the warm-up iteration run too) and traced natively, it sends exactly the bytes of the trace,
/// pair by pair.
#[test]
fn ranks_of_one_class_send_their_own_sizes() {
    let trace = npb("sp.S.16");
    let dir = scratch("skeleton-sp-sizes").join("skel");
    build_into(&trace, &dir, &["--name", "sp-sizes", "--target-time", "100"]);
    let doc: serde_json::Value = document(&dir);
    assert_eq!(doc["program"]["classes"].as_array().map(Vec::len), Some(1));
    let tables = doc["program"]["size_tables"].as_array().expect("size tables");
    assert!(!tables.is_empty());
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    // The first two tables and the calls that use them, in context.
    let lines: Vec<&str> = source.lines().collect();
    let table = lines.iter().position(|l| l.contains("each rank sends where")).unwrap();
    let mut excerpt = lines[table - 1..table + 12].join("\n");
    for l in
        lines.iter().filter(|l| l.contains("send_size[0][me]") || l.contains("send_size[1][me]"))
    {
        excerpt.push_str("\n...\n");
        excerpt.push_str(l.trim());
    }
    insta::with_settings!({
        description => "mpiskel build sp.S.16: the per-rank size tables (excerpt of skeleton.c)",
        omit_expression => true,
        snapshot_path => root().join("tests").join("snapshots"),
    }, {
        insta::assert_snapshot!("skeleton__sp_S_16_size_tables", excerpt);
    });
    compile_strict(&dir, "mpicc.openmpi", &[]);
    let recorded = trace_skeleton(&dir, 16, "sp-sizes");
    assert_eq!(messages(&recorded), messages(&trace));
}

/// NPB MG's coarse levels are exchanges only some of its ranks make; folded into one class,
/// those calls are guarded per rank. Built for a target longer than the run (nothing cut) and
/// traced natively, the skeleton makes exactly the trace's messages, pair by pair: every rank
/// makes the guarded calls it made, and no other.
#[test]
fn guarded_calls_make_the_messages_of_the_trace_pair_by_pair() {
    let trace = npb("mg.S.16");
    let dir = scratch("skeleton-mg-guards").join("skel");
    build_into(&trace, &dir, &["--name", "mg-guards", "--target-time", "100"]);
    let doc: serde_json::Value = document(&dir);
    assert_eq!(doc["program"]["classes"].as_array().map(Vec::len), Some(1));
    assert!(doc["program"]["presence_tables"].as_array().is_some_and(|t| !t.is_empty()));
    compile_strict(&dir, "mpicc.openmpi", &[]);
    let recorded = trace_skeleton(&dir, 16, "mg-guards");
    assert_eq!(messages(&recorded), messages(&trace));
}

/// A multigrid of our own (`fixtures/programs/multigrid.c`: at each coarser level only the
/// ranks at multiples of 2^l hold points and exchange 2^l ranks away) is one class at 16 and
/// at 32 ranks, where the exact fold alone keeps the ranks that hold a coarse level apart from
/// those that do not.
/// Nothing cut, its skeleton makes the trace's messages pair by pair; cut by default, it runs
/// under MPICH.
#[test]
fn a_multigrid_program_is_one_class_at_every_size() {
    for np in [16, 32] {
        let base = scratch(&format!("multigrid-{np}"));
        let trace = base.join("trace");
        support::trace_program(
            support::Lib::OpenMpi,
            np,
            "multigrid",
            &["4", "4096", "50"],
            &trace,
        );
        let dir = base.join("skel");
        build_into(&trace, &dir, &["--name", "multigrid", "--target-time", "100"]);
        let doc: serde_json::Value = document(&dir);
        let topology = doc["topology"].as_str().unwrap();
        assert!(topology.contains("with strides"), "{np} ranks: {topology}");
        assert_eq!(doc["classes"].as_array().map(Vec::len), Some(1), "{np} ranks");
        assert!(doc["program"]["presence_tables"].as_array().is_some_and(|t| !t.is_empty()));
        compile_strict(&dir, "mpicc.openmpi", &[]);
        let recorded = trace_skeleton(&dir, np, &format!("multigrid-{np}-skeleton"));
        assert_eq!(messages(&recorded), messages(&trace), "{np} ranks");
        if np == 32 {
            let cut = base.join("skel-cut");
            build_into(&trace, &cut, &["--name", "multigrid"]);
            let _lock = mpi_lock();
            check_report(&run(&cut, "mpich", 300), "mpich", 32);
        }
    }
}

/// A loop cut to two iterations after an uneven set-up: rank 0 computes 50 ms and sends to
/// rank 1, which waits for it; ranks 2 and 3 compute 1 ms and reach the loop early, to wait
/// 49 ms for ranks 0 and 1 in its first iteration — once in the application and once in the
/// skeleton. Counted once, not scaled by the loop's 30 iterations, the prediction under SimGrid
/// is within a tenth of that of the skeleton that runs everything (its main loop runs one of
/// 200 iterations); scaled, ranks 2 and 3 would predict 1.2 s for 0.48 s.
#[test]
fn a_cut_loop_counts_its_first_iteration_once() {
    let base = scratch("first-iteration");
    std::fs::create_dir_all(&base).unwrap();
    let mut index = String::new();
    for r in 0..4 {
        let setup = match r {
            0 => "0 compute 50000000\n0 send 1 0 64\n".to_owned(),
            1 => "1 compute 1000000\n1 recv 0 0 64\n".to_owned(),
            _ => format!("{r} compute 1000000\n"),
        };
        let mut t = format!("{r} init\n{setup}");
        for _ in 0..30 {
            t.push_str(&format!("{r} compute 1000000\n{r} allreduce 2 0\n"));
        }
        for _ in 0..200 {
            t.push_str(&format!("{r} compute 2000000\n{r} allreduce 4 0\n"));
        }
        t.push_str(&format!("{r} finalize\n"));
        std::fs::write(base.join(format!("rank{r}.txt")), t).unwrap();
        index.push_str(&format!("rank{r}.txt\n"));
    }
    std::fs::write(base.join("trace.txt"), index).unwrap();
    let trace = base.join("trace.txt");
    let dir = build("first-iteration", &trace);
    let doc: serde_json::Value = document(&dir);
    let phases = doc["program"]["classes"][0]["phases"].as_array().unwrap().clone();
    let loop_30 = phases.iter().find(|p| p["full"] == 30).expect("the 30-iteration loop");
    assert_eq!(loop_30["run"].as_u64(), Some(2), "{loop_30}");
    let whole = base.join("whole");
    build_into(&trace, &whole, &["--whole-compute", "--target-time", "100"]);
    let _lock = mpi_lock();
    let (cut, all) = (run(&dir, "smpi", 300), run(&whole, "smpi", 300));
    check_report(&cut, "smpi", 4);
    let (p, q) = (cut["predicted_s"].as_f64().unwrap(), all["predicted_s"].as_f64().unwrap());
    assert!((p / q - 1.0).abs() < 0.1, "cut {p} s against whole {q} s:\n{cut}\n{all}");
    // The loop itself, on the rank reported: as the whole skeleton's.
    let phase = |r: &serde_json::Value| {
        r["phases"].as_array().unwrap().iter().find(|p| p["full"] == 30).unwrap()["predicted_s"]
            .as_f64()
            .unwrap()
    };
    assert!((phase(&cut) / phase(&all) - 1.0).abs() < 0.05, "{cut}\n{all}");
}

/// An untimed warm-up iteration before the main loop (as NPB BT's `adi` before its timed loop,
/// then a barrier) is skipped and priced as one more iteration of the main loop; the computation
/// it had beyond one iteration (the set-up's last block runs into it) still runs. Under SimGrid
/// the cut skeleton predicts what the skeleton that runs everything does, and runs shorter than
/// with the warm-up kept.
#[test]
fn a_warm_up_iteration_is_priced_as_one_more_iteration_of_the_main_loop() {
    let base = scratch("warm-up");
    std::fs::create_dir_all(&base).unwrap();
    let mut index = String::new();
    let n = 4;
    for r in 0..n {
        let (left, right) = ((r + n - 1) % n, (r + 1) % n);
        // One time step: a halo with both neighbours, computation, a norm.
        let step = |compute: u64| {
            format!(
                "{r} irecv {left} 0 20000\n{r} irecv {right} 1 20000\n{r} isend {right} 0 20000\n\
                 {r} isend {left} 1 20000\n{r} waitall\n{r} compute {compute}\n{r} allreduce 4 0\n"
            )
        };
        let mut t = format!("{r} init\n{r} compute 30000000\n");
        t.push_str(&step(3_000_000 + 100_000 * r as u64));
        t.push_str(&format!("{r} compute 5000000\n{r} barrier\n"));
        for i in 0..40u64 {
            t.push_str(&format!("{r} compute {}\n", 200_000 + 10_000 * ((i + r as u64) % 3)));
            t.push_str(&step(3_000_000 + 100_000 * r as u64));
        }
        t.push_str(&format!("{r} finalize\n"));
        std::fs::write(base.join(format!("rank{r}.txt")), t).unwrap();
        index.push_str(&format!("rank{r}.txt\n"));
    }
    std::fs::write(base.join("trace.txt"), index).unwrap();
    let trace = base.join("trace.txt");
    let dir = build("warm-up", &trace);
    let doc: serde_json::Value = document(&dir);
    for class in doc["program"]["classes"].as_array().unwrap() {
        let phases = class["phases"].as_array().unwrap();
        let warm = phases.iter().find(|p| p["name"] == "warmup").expect("a warm-up phase");
        assert_eq!(warm["calls"].as_u64(), Some(0), "skipped: {warm}");
        let main = phases.iter().find(|p| p["name"] == "main_loop").unwrap();
        assert_eq!((main["full"].as_u64(), main["warmup"].as_u64()), (Some(40), Some(1)), "{main}");
        assert!(main["run"].as_u64().unwrap() < 40, "{main}");
    }
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(
        source.contains("the warm-up iteration this skeleton skips counts as 1 more"),
        "{source}"
    );
    let whole = base.join("whole");
    build_into(&trace, &whole, &["--whole-compute", "--target-time", "100"]);
    let _lock = mpi_lock();
    let (cut, all) = (run(&dir, "smpi", 300), run(&whole, "smpi", 300));
    check_report(&cut, "smpi", n as u64);
    let (p, q) = (cut["predicted_s"].as_f64().unwrap(), all["predicted_s"].as_f64().unwrap());
    assert!((p / q - 1.0).abs() < 0.03, "cut {p} s against whole {q} s:\n{cut}\n{all}");
    let main = cut["phases"].as_array().unwrap().iter().find(|p| p["name"] == "main_loop").unwrap();
    assert_eq!((main["full"].as_u64(), main["warmup"].as_u64()), (Some(40), Some(1)), "{main}");
}

/// A loop whose first iteration carries one-off work (rank 0 reads its input before the first of
/// a loop of broadcasts, as NPB MG's set-up does) replays that iteration as recorded and counts
/// it once: cut to two of its twelve iterations, it predicts what the loop run whole does
/// (drawn, the one long execution in 48 was missed, and the loop predicted a tenth of it).
#[test]
fn a_loop_replays_its_first_iteration_as_recorded_and_counts_it_once() {
    let base = scratch("first-apart");
    std::fs::create_dir_all(&base).unwrap();
    let mut index = String::new();
    for r in 0..4 {
        let mut t = format!("{r} init\n");
        for it in 0..12 {
            let work = if r == 0 && it == 0 { 40_000_000 } else { 100_000 };
            t.push_str(&format!("{r} compute {work}\n{r} bcast 8 0\n"));
        }
        for _ in 0..200 {
            t.push_str(&format!("{r} compute 2000000\n{r} allreduce 4 0\n"));
        }
        t.push_str(&format!("{r} finalize\n"));
        std::fs::write(base.join(format!("rank{r}.txt")), t).unwrap();
        index.push_str(&format!("rank{r}.txt\n"));
    }
    std::fs::write(base.join("trace.txt"), index).unwrap();
    let trace = base.join("trace.txt");
    let dir = build("first-apart", &trace);
    let doc: serde_json::Value = document(&dir);
    let phases = doc["program"]["classes"][0]["phases"].as_array().unwrap().clone();
    let loop_12 = phases.iter().find(|p| p["full"] == 12).expect("the loop of broadcasts");
    assert!(loop_12["run"].as_u64().is_some_and(|r| (2..12).contains(&r)), "{loop_12}");
    let replays = doc["program"]["replays"].as_array().expect("replay tables");
    let first = replays
        .iter()
        .find(|r| r["full"] == 12)
        .unwrap_or_else(|| panic!("the loop's block replays: {replays:?}"));
    assert_eq!(first["iterations"][0], 0, "{first}");
    assert_eq!(first["first_rows"], 1, "{first}");
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    let row = source.lines().find(|l| l.contains(", 12, ") && l.trim_start().starts_with("{\""));
    assert!(row.is_some_and(|l| l.ends_with(", 1, 0.0, 0, 0},")), "counted once: {row:?}");
    let whole = base.join("whole");
    build_into(&trace, &whole, &["--target-time", "100"]);
    let _lock = mpi_lock();
    let (cut, all) = (run(&dir, "smpi", 300), run(&whole, "smpi", 300));
    check_report(&cut, "smpi", 4);
    let phase = |r: &serde_json::Value| {
        r["phases"].as_array().unwrap().iter().find(|p| p["full"] == 12).unwrap()["predicted_s"]
            .as_f64()
            .unwrap()
    };
    assert!((phase(&cut) / phase(&all) - 1.0).abs() < 0.05, "{cut}\n{all}");
}

/// `--seed N` gives the skeleton another sequence of drawn compute durations: under SimGrid,
/// where a run is deterministic, the same seed predicts the same to the digit and another seed
/// differently (NPB CG S draws the durations of the blocks of its cut inner loop; the blocks of
/// loops run whole or cut by iterations replay theirs).
#[test]
fn a_seed_chooses_the_draws() {
    let dir = build("cg-seed", &npb("cg.S.16"));
    let doc: serde_json::Value = document(&dir);
    assert!(!doc["program"]["distributions"].as_array().unwrap().is_empty());
    let predicted = |seed: Option<&str>| {
        let mut cmd = mpiskel();
        cmd.args(["run", "--json", "--mpi", "smpi", "--timeout", "300"]).arg(&dir);
        if let Some(s) = seed {
            cmd.args(["--", "--seed", s]);
        }
        let out = run_with_timeout(cmd, 360);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        r["predicted_s"].as_f64().unwrap()
    };
    let _lock = mpi_lock();
    let (a, b, c) = (predicted(None), predicted(None), predicted(Some("7")));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(c, predicted(Some("7")));
}

/// A pipelined sweep (an LU-style wavefront: each rank waits for the one before it, computes a
/// plane, passes it on) cut inside its iterations: the first plane of every sweep waits for the
/// wave to reach the rank, once per sweep in the application too, so it is counted once per
/// iteration of the loop around it and only the planes after it are scaled. Cut to 8 of 16
/// planes on 0.5 ms links, the last of four ranks waits three stages for its first plane;
/// scaled with the rest, that wait put the prediction 14 % over the whole skeleton's (4.5 %
/// counted once).
#[test]
fn a_pipelined_sweeps_fill_counts_once_per_sweep_when_the_sweep_is_cut() {
    let base = scratch("pipeline");
    std::fs::create_dir_all(&base).unwrap();
    let mut index = String::new();
    let n = 4;
    for r in 0..n {
        let mut t = format!("{r} init\n{r} compute 1000000\n");
        for _ in 0..30 {
            for _ in 0..16 {
                if r > 0 {
                    t.push_str(&format!("{r} recv {} 0 64\n", r - 1));
                }
                t.push_str(&format!("{r} compute 100000\n"));
                if r + 1 < n {
                    t.push_str(&format!("{r} send {} 0 64\n", r + 1));
                }
            }
            t.push_str(&format!("{r} compute 200000\n{r} allreduce 1 0\n"));
        }
        t.push_str(&format!("{r} finalize\n"));
        std::fs::write(base.join(format!("rank{r}.txt")), t).unwrap();
        index.push_str(&format!("rank{r}.txt\n"));
    }
    std::fs::write(base.join("trace.txt"), index).unwrap();
    let platform = base.join("slow-links.xml");
    std::fs::write(
        &platform,
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
         <platform version=\"4.1\">\n  <cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-3\" \
         speed=\"1Gf\" bw=\"10Gbps\" lat=\"0.5ms\" loopback_bw=\"100Gbps\" loopback_lat=\"0.1us\"/>\n\
         </platform>\n",
    )
    .unwrap();
    let hosts = base.join("hosts.txt");
    std::fs::write(&hosts, (0..n).map(|r| format!("node-{r}\n")).collect::<String>()).unwrap();
    let trace = base.join("trace.txt");
    let (cut, whole) = (base.join("cut"), base.join("whole"));
    build_into(&trace, &cut, &["--target-time", "0.001"]);
    build_into(&trace, &whole, &["--target-time", "100"]);
    let doc: serde_json::Value = document(&cut);
    let source = std::fs::read_to_string(cut.join("skeleton.c")).unwrap();
    assert!(source.contains("sk_inner_first("), "the sweep is cut inside:\n{source}");
    assert!(doc["scaling"]["main_run"].as_u64() < doc["scaling"]["main_full"].as_u64());
    let extra: Vec<&std::ffi::OsStr> =
        vec!["--platform".as_ref(), platform.as_os_str(), "--hostfile".as_ref(), hosts.as_os_str()];
    let _lock = mpi_lock();
    let (c, w) = (
        run_skeleton(&cut, "smpi", 300, 60, &extra),
        run_skeleton(&whole, "smpi", 300, 60, &extra),
    );
    check_report(&c, "smpi", n as u64);
    let (p, q) = (c["predicted_s"].as_f64().unwrap(), w["predicted_s"].as_f64().unwrap());
    assert!((p / q - 1.0).abs() < 0.08, "cut {p} s against whole {q} s:\n{c}\n{w}");
}

/// A root that computes alone before it broadcasts (reading the input) keeps every rank
/// waiting: a long skeleton cuts that block to a short part on every rank, and every rank adds
/// back the most any rank skipped, so the set-up is predicted as it ran whole. A synthetic
/// SimGrid trace: rank 0 computes 20 ms, the others 1 ms, before a broadcast; then a ring of 40
/// iterations.
#[test]
fn a_root_that_computes_alone_before_a_broadcast_is_cut_and_priced_as_everyones_wait() {
    let base = scratch("root-reads");
    std::fs::create_dir_all(&base).unwrap();
    let n = 4;
    let mut index = String::new();
    for r in 0..n {
        let setup = if r == 0 { 20_000_000 } else { 1_000_000 };
        let mut t = format!("{r} init\n{r} compute {setup}\n{r} bcast 64\n");
        for _ in 0..40 {
            t.push_str(&format!("{r} compute 500000\n"));
            t.push_str(&format!("{r} send {} 0 1024\n", (r + 1) % n));
            t.push_str(&format!("{r} recv {} 0 1024\n", (r + n - 1) % n));
        }
        t.push_str(&format!("{r} allreduce 8 0\n{r} finalize\n"));
        std::fs::write(base.join(format!("rank{r}.txt")), t).unwrap();
        index.push_str(&format!("rank{r}.txt\n"));
    }
    std::fs::write(base.join("trace.txt"), index).unwrap();
    let trace = base.join("trace.txt");
    let (cut, whole) = (base.join("cut"), base.join("whole"));
    build_into(&trace, &cut, &[]);
    build_into(&trace, &whole, &["--target-time", "100"]);
    let source = std::fs::read_to_string(cut.join("skeleton.c")).unwrap();
    assert!(
        source.contains("sk_compute_keep("),
        "the root's block is cut on every rank:\n{source}"
    );
    let whole_source = std::fs::read_to_string(whole.join("skeleton.c")).unwrap();
    assert!(!whole_source.contains("sk_compute_keep("), "not cut without a target to reach");
    // Cut: well under the root's 20 ms; whole: the root's 20 ms.
    set_up_cut_against_whole(&cut, &whole, n as u64, 0.03);
}

/// Runs the skeletons `cut` and `whole` of one trace (`ranks` ranks) under SimGrid and checks
/// that the cut one's set-up ran under a fifth of the whole one's, and predicts it within
/// `setup_tolerance`, the whole run within 5 %.
fn set_up_cut_against_whole(cut: &Path, whole: &Path, ranks: u64, setup_tolerance: f64) {
    let _lock = mpi_lock();
    let (c, w) =
        (run_skeleton(cut, "smpi", 300, 60, &[]), run_skeleton(whole, "smpi", 300, 60, &[]));
    check_report(&c, "smpi", ranks);
    let setup = |r: &serde_json::Value| {
        r["phases"].as_array().unwrap().iter().find(|p| p["name"] == "setup").cloned().unwrap()
    };
    let (sc, sw) = (setup(&c), setup(&w));
    let (ran, ran_whole) = (sc["seconds"].as_f64().unwrap(), sw["seconds"].as_f64().unwrap());
    assert!(ran < 0.2 * ran_whole, "set-up ran {ran} s cut against {ran_whole} s whole");
    let (p, q) = (sc["predicted_s"].as_f64().unwrap(), sw["predicted_s"].as_f64().unwrap());
    assert!(
        (p / q - 1.0).abs() < setup_tolerance,
        "set-up predicted {p} s cut against {q} s whole"
    );
    let (p, q) = (c["predicted_s"].as_f64().unwrap(), w["predicted_s"].as_f64().unwrap());
    assert!((p / q - 1.0).abs() < 0.05, "cut {p} s against whole {q} s:\n{c}\n{w}");
}

/// The same cut inside a loop of broadcasts (a root reading its input line by line, as NPB LU's
/// set-up), where the classes have different phases (two ranks exchange a few more messages at
/// the end): what is restored is gathered by phase name. And the last block of a rank's program
/// (rank 0's output after the last reduction), which only the end of the run waits for, runs a
/// short part and restores its own. Both predict what the skeleton with every block whole does.
#[test]
fn a_root_reading_in_a_loop_and_a_rank_writing_at_the_end_are_cut_and_priced() {
    let base = scratch("root-reads-loop");
    std::fs::create_dir_all(&base).unwrap();
    let n = 4;
    let mut index = String::new();
    for r in 0..n {
        let mut t = format!("{r} init\n");
        for _ in 0..3 {
            let read = if r == 0 { 6_000_000 } else { 100_000 };
            t.push_str(&format!("{r} compute {read}\n{r} bcast 64\n"));
        }
        for _ in 0..40 {
            t.push_str(&format!("{r} compute 500000\n"));
            t.push_str(&format!("{r} send {} 0 1024\n", (r + 1) % n));
            t.push_str(&format!("{r} recv {} 0 1024\n", (r + n - 1) % n));
        }
        t.push_str(&format!("{r} allreduce 8 0\n"));
        if r < 2 {
            for _ in 0..5 {
                let (a, b) = if r == 0 { ("send", "recv") } else { ("recv", "send") };
                t.push_str(&format!("{r} compute 20000\n{r} {a} {} 1 64\n", 1 - r));
                t.push_str(&format!("{r} compute 20000\n{r} {b} {} 1 64\n", 1 - r));
            }
        }
        let write = if r == 0 { 10_000_000 } else { 200_000 };
        t.push_str(&format!("{r} compute {write}\n{r} finalize\n"));
        std::fs::write(base.join(format!("rank{r}.txt")), t).unwrap();
        index.push_str(&format!("rank{r}.txt\n"));
    }
    std::fs::write(base.join("trace.txt"), index).unwrap();
    let trace = base.join("trace.txt");
    let (cut, whole) = (base.join("cut"), base.join("whole"));
    build_into(&trace, &cut, &[]);
    build_into(&trace, &whole, &["--target-time", "100"]);
    let source = std::fs::read_to_string(cut.join("skeleton.c")).unwrap();
    assert!(source.contains("sk_keep_slots("), "phases gathered by name:\n{source}");
    assert!(source.contains("sk_compute_keep(6."), "the root's reads are cut:\n{source}");
    assert!(source.contains("sk_compute_less(1.0"), "rank 0's last block is cut:\n{source}");
    let _lock = mpi_lock();
    let (c, w) =
        (run_skeleton(&cut, "smpi", 300, 60, &[]), run_skeleton(&whole, "smpi", 300, 60, &[]));
    check_report(&c, "smpi", n as u64);
    let phase = |r: &serde_json::Value, name: &str| {
        r["phases"].as_array().unwrap().iter().find(|p| p["name"] == name).cloned().unwrap()
    };
    for name in ["loop_1", "finish"] {
        let (pc, pw) = (phase(&c, name), phase(&w, name));
        let (ran, ran_whole) = (pc["seconds"].as_f64().unwrap(), pw["seconds"].as_f64().unwrap());
        assert!(ran < 0.3 * ran_whole, "{name} ran {ran} s cut against {ran_whole} s whole");
    }
    let (p, q) = (c["predicted_s"].as_f64().unwrap(), w["predicted_s"].as_f64().unwrap());
    assert!((p / q - 1.0).abs() < 0.05, "cut {p} s against whole {q} s:\n{c}\n{w}");
}

/// A set-up block that the ranks of one class compute for different times, too alike for
/// per-rank factors, so that each rank draws its duration from the class's spread, right before
/// a barrier: every rank waits there for the longest. It is cut as a root's block is
/// (`sk_compute_drawn_keep`: a short part of each rank's draw, the most any rank skipped added
/// back), and the skeleton predicts what the one with every block whole does.
#[test]
fn a_drawn_set_up_block_before_a_barrier_is_cut_to_a_short_part_on_every_rank() {
    let base = scratch("drawn-set-up");
    let n = 8;
    let trace = support::drawn_set_up_trace(&base, n);
    let (cut, whole) = (base.join("cut"), base.join("whole"));
    build_into(&trace, &cut, &[]);
    build_into(&trace, &whole, &["--target-time", "100"]);
    let source = std::fs::read_to_string(cut.join("skeleton.c")).unwrap();
    assert!(source.contains("sk_compute_drawn_keep("), "the set-up is cut:\n{source}");
    let whole_source = std::fs::read_to_string(whole.join("skeleton.c")).unwrap();
    assert!(whole_source.contains("sk_compute_drawn("), "drawn per rank:\n{whole_source}");
    assert!(!whole_source.contains("_keep("), "not cut without a target to reach");
    compile_strict(&cut, "mpicc.openmpi", &[]);
    set_up_cut_against_whole(&cut, &whole, u64::from(n), 0.05);
}

/// A fast (10 Gb/s, 1 µs) and a slow (100 Mb/s, 50 µs) modelled cluster of 4 hosts, written
/// into `out`: each one's name and platform file.
fn two_clusters(out: &Path) -> [(&'static str, PathBuf); 2] {
    [("fast", "10Gbps", "1us"), ("slow", "100Mbps", "50us")].map(|(name, bandwidth, latency)| {
        let toml = out.join(format!("{name}.toml"));
        let cluster = format!(
            "[cluster]\nhosts = 4\nspeed = \"1Gf\"\nbandwidth = \"{bandwidth}\"\nlatency = \
             \"{latency}\"\n"
        );
        std::fs::write(&toml, cluster).unwrap();
        (name, toml)
    })
}

/// Simulated on a cluster of 4 one-core hosts at 10 Gb/s and 1 µs, and at 100 Mb/s and 50 µs
/// (TOML files written in `out`), the skeleton's program in `dir` predicts the `trace`'s time
/// within `tolerance`, and the skeleton as it runs takes under `length` of it.
fn stands_for_its_trace_on_two_clusters(
    trace: &Path,
    dir: &Path,
    out: &Path,
    tolerance: f64,
    length: f64,
) {
    for (name, toml) in two_clusters(out) {
        let (app, skel) = (simulated(trace, &toml, &[]), simulated(dir, &toml, &[]));
        assert!((skel / app - 1.0).abs() < tolerance, "{name}: skeleton {skel} s, trace {app} s");
        let own = simulated(dir, &toml, &["--as-run"]);
        assert!(own < length * app, "{name}: the skeleton runs {own} s of {app} s");
    }
}

/// Simulates `input` (a trace or a skeleton folder) on the cluster of `toml`; returns
/// `predicted_s`.
fn simulated(input: &Path, toml: &Path, extra: &[&str]) -> f64 {
    support::simulate_json(input, toml, extra)["predicted_s"].as_f64().unwrap()
}

/// `shuffle` (`fixtures/programs/shuffle.c`, 4 ranks) exchanges with a drawn partner, size and
/// kind of exchange every round, between a barrier, an allreduce and a barrier: two stretches
/// that fold into no loop. `build` cuts each to the first part of every rank's work, scales the
/// part's time to the whole stretch, and the skeleton's program stands for the trace on a fast
/// and on a slow modelled cluster (without the scale it would be a fraction of it); the skeleton
/// itself runs a fraction of the application's calls, and `--strict` cuts nothing.
#[test]
fn stretches_that_fold_into_no_loop_are_cut_short_and_scaled() {
    let trace = fixture("shuffle");
    let out = scratch("stretch");
    let dir = out.join("skel");
    build_into(&trace, &dir, &[]);
    let doc = document(&dir);
    let cuts = doc["stretches"].as_array().expect("stretches cut");
    assert_eq!(cuts.len(), 2, "{cuts:?}");
    for c in cuts {
        let (calls, kept) = (c["calls"].as_u64().unwrap(), c["kept_calls"].as_u64().unwrap());
        // At least 400 calls per rank are aimed at, by time (the pace drifts a little).
        assert!(kept > 4 * 300 && kept < calls / 2, "{c}");
    }
    // Every rank keeps the same share of its own work, so the ranks, which run one program,
    // keep the same rounds and stay one class.
    assert_eq!(doc["program"]["classes"].as_array().map(Vec::len), Some(1));
    // Held over its target by what the stretches keep, the build says so and why.
    let note = doc["scaling"]["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("the 2 stretches cut short keep")
            && note.contains("at least 400 calls per rank"),
        "{note}"
    );
    let code = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(code.contains("sk_phase_scale("), "the kept parts are scaled");
    // The program: its phases timed, the kept parts' halves scaled.
    let from = code.find("static void program(void)").expect("the program");
    let excerpt: String =
        code[from..].lines().take_while(|l| *l != "}").collect::<Vec<_>>().join("\n");
    insta::with_settings!({
        description => "mpiskel build fixtures/traces/shuffle (skeleton.c, program)",
        omit_expression => true,
        snapshot_path => root().join("tests").join("snapshots"),
    }, {
        insta::assert_snapshot!("skeleton__shuffle_program", excerpt);
    });
    let scaled = doc["program"]["classes"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["scale"].as_f64())
        .collect::<Vec<_>>();
    assert!(scaled.iter().any(|&x| x > 1.5), "{scaled:?}");
    // Both simulated on the same clusters: the skeleton's program stands for the trace.
    stands_for_its_trace_on_two_clusters(&trace, &dir, &out, 0.08, 0.5);
    compile_strict(&dir, "mpicc.openmpi", &[]);
    compile_strict(&dir, "mpicc.mpich", &[]);
    {
        let _lock = mpi_lock();
        check_report(&run(&dir, "openmpi", 300), "openmpi", 4);
        check_report(&run(&dir, "mpich", 600), "mpich", 4);
    }
    let strict = out.join("strict");
    build_into(&trace, &strict, &["--strict"]);
    assert!(document(&strict).get("stretches").is_none());
}

/// `suite` (`fixtures/programs/suite.c`, 4 ranks) runs short benchmarks one after the other
/// between barriers: a ping-pong of 1 MiB messages, a ring, a loop of allreduces. Ranks 0 and 3
/// first exchange the input in a loop the others do not make, so their loops are numbered one
/// ahead (the ping-pong is `loop_2` there, `loop_1` on ranks 1 and 2). Cut by name, the
/// ping-pong would be cut on one side only and could not be cut at all; cut at the same place
/// in every class (the same count of collectives of all ranks before it), it is, and so is the
/// input's loop, in the two classes that make it. The
/// skeleton's program stands for the trace on a fast and a slow modelled cluster, and the
/// skeleton itself runs a small part of it.
#[test]
fn loops_named_differently_in_other_classes_are_cut_at_the_same_place() {
    let trace = fixture("suite");
    let out = scratch("suite");
    let dir = out.join("skel");
    build_into(&trace, &dir, &[]);
    let doc = document(&dir);
    let classes = doc["program"]["classes"].as_array().expect("classes");
    assert_eq!(classes.len(), 4);
    let mut names = std::collections::BTreeSet::new();
    for (i, class) in classes.iter().enumerate() {
        let phases = class["phases"].as_array().unwrap();
        // Every loop of the benchmarks (200 ping-pongs, 50 allreduces) runs a few iterations,
        // and so does the input's (16 messages) where a class makes it.
        for full in [200, 50, 16] {
            let loops: Vec<_> = phases.iter().filter(|p| p["full"] == full).collect();
            assert!(full == 16 || !loops.is_empty(), "class {i} has no loop of {full}");
            for p in loops {
                assert!(p["run"].as_u64().unwrap() <= 2, "class {i}: {p:?} not cut");
            }
        }
        let ping_pong = phases
            .iter()
            .find(|p| p["full"] == 200 && p["name"] != "main_loop")
            .expect("the ping-pong loop");
        names.insert(ping_pong["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(names.len(), 2, "the ping-pong is named alike everywhere: {names:?}");
    // Every class's table of phases: name, iterations of the application, iterations run.
    let code = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    let mut excerpt = Vec::new();
    let mut lines = code.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("static sk_phase c") {
            excerpt.push(l);
            excerpt.extend(lines.by_ref().take_while(|l| *l != "};"));
            excerpt.push("};");
        }
    }
    assert_eq!(excerpt.iter().filter(|l| l.starts_with("static")).count(), 4);
    let excerpt = excerpt.join("\n");
    insta::with_settings!({
        description => "mpiskel build fixtures/traces/suite (skeleton.c, the phase tables)",
        omit_expression => true,
        snapshot_path => root().join("tests").join("snapshots"),
    }, {
        insta::assert_snapshot!("skeleton__suite_program", excerpt);
    });
    stands_for_its_trace_on_two_clusters(&trace, &dir, &out, 0.05, 0.1);
    compile_strict(&dir, "mpicc.openmpi", &[]);
    compile_strict(&dir, "mpicc.mpich", &[]);
    let _lock = mpi_lock();
    check_report(&run(&dir, "openmpi", 300), "openmpi", 4);
    check_report(&run(&dir, "mpich", 600), "mpich", 4);
}

/// A skeleton of many phases (`suite` with its benchmarks run 16 times, each time with other
/// sizes and tags: 84 phases on rank 0) reports every one of them, however long the report.
#[test]
fn the_report_lists_every_phase_of_a_long_program() {
    let base = scratch("suite-report");
    let (trace, dir) = (base.join("trace"), base.join("skel"));
    let args = ["16", "262144", "5", "16"];
    support::trace_program(support::Lib::OpenMpi, 4, "suite", &args, &trace);
    build_into(&trace, &dir, &[]);
    let doc = document(&dir);
    let class = doc["program"]["class_of_rank"][0].as_u64().unwrap();
    // The timers of rank 0's class: one line each in its table of phases.
    let code = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    let table = format!("static sk_phase c{class}_phases[] = {{");
    let from = code.find(&table).expect("the table of rank 0's class") + table.len();
    let timers = code[from..].lines().skip(1).take_while(|l| *l != "};").count();
    assert!(timers > 80, "{timers} timers");
    let _lock = mpi_lock();
    let report = run(&dir, "openmpi", 300);
    check_report(&report, "openmpi", 4);
    let listed = report["phases"].as_array().unwrap();
    assert_eq!(listed.len(), timers, "{report}");
    let last = listed.last().unwrap();
    assert!(last["predicted_s"].as_f64().is_some_and(f64::is_finite), "{last}");
}

/// A program on the skeleton runtime where rank 0 computes for a second and the other rank has
/// nothing to do; each rank prints the processor time it used.
const TAIL_PROGRAM: &str = r#"#include "mpiskel_rt.h"
#include <stdio.h>
#include <time.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    sk_init(&argc, &argv);
    static sk_phase phases[] = {{"main_loop", 1, 1, 0.0, -1, 0, 0.0, 0, 0}};
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    sk_start(phases, 1);
    sk_phase_begin(0);
    if (rank == 0) {
        sk_compute(1.0);
    }
    sk_phase_end(0);
    sk_report("tail", 1.0, 1.0);
    struct timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    printf("rank %d processor %.3f\n", rank, (double)cpu.tv_sec + 1e-9 * (double)cpu.tv_nsec);
    MPI_Finalize();
    return 0;
}
"#;

/// A rank that finishes its program first waits for the others without taking the processor,
/// as an application's rank waits in `MPI_Finalize`: where ranks outnumber cores, a rank
/// polling in the report's reduction took the cores from the ranks still running (a
/// master–worker skeleton whose workers finish one after the other ran 5 % longer than its
/// application). Rank 1 waits a second for rank 0 here; polling, it used a second of processor
/// time (1.07 s under Open MPI, 1.10 s under MPICH), asleep 0.14–0.16 s (start-up and
/// calibration).
#[test]
fn a_rank_that_finishes_first_waits_asleep() {
    let dir = scratch("tail-runtime");
    std::fs::write(dir.join("tail.c"), TAIL_PROGRAM).unwrap();
    // The runtime as a skeleton folder holds it: its tuning constants written in.
    let runtime = dir.join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    for (name, text) in mpiskel_emit::c::RUNTIME {
        std::fs::write(runtime.join(name), mpiskel_emit::constants::fill(text)).unwrap();
    }
    for lib in [support::Lib::OpenMpi, support::Lib::Mpich] {
        let bin = dir.join(format!("tail-{}", lib.name()));
        let out = Command::new(format!("mpicc.{}", lib.name()))
            .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(&runtime)
            .arg("-o")
            .arg(&bin)
            .arg(dir.join("tail.c"))
            .args(mpiskel_emit::c::RUNTIME_SOURCES.map(|f| runtime.join(f)))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let launcher = lib.mpirun(2);
        let mut cmd = Command::new(&launcher[0]);
        cmd.args(&launcher[1..]).arg(&bin);
        let out = {
            let _lock = mpi_lock();
            run_with_timeout(cmd, 120)
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        let used = |rank: u32| -> f64 {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("rank {rank} processor ")))
                .unwrap_or_else(|| panic!("no line of rank {rank}: {text}"));
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        assert!(used(0) >= 0.9, "{}: rank 0 did not compute: {text}", lib.name());
        assert!(used(1) < 0.5, "{}: rank 1 polled while it waited: {text}", lib.name());
    }
}

/// A self-consistent-field loop (`fixtures/programs/scf.c`, 4 ranks): 12 iterations of 4
/// k-points, each k-point an eigensolver whose iterations vary in number and in what they do,
/// so that every k-point is a kind of step of its own and one step of each would take most of
/// the run. The skeleton samples families of kinds (the same calls, the largest messages of one
/// size) instead: it runs a few steps, leaves the other kinds out of the code, scales the kinds
/// that run for those of their family that do not, and still stands for its trace on a fast
/// and a slow modelled cluster (within 10 %), running an eighth of its time or less there (a
/// twelfth here, where the network is faster); it runs under both libraries.
#[test]
fn steps_of_kinds_of_their_own_are_sampled_by_family() {
    let trace = fixture("scf");
    let out = scratch("scf-families");
    let dir = out.join("skel");
    let err = build_named(&trace, &dir, "scf");
    assert!(err.contains("too many to run one of each"), "{err}");
    let doc = document(&dir);
    let scaling = &doc["scaling"];
    let full = scaling["main_full"].as_u64().unwrap();
    let steps = scaling["main_run"].as_u64().unwrap();
    assert_eq!(full, 48 + 12, "a step per k-point and per SCF iteration: {scaling}");
    let code = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    let cases = code.lines().filter(|l| l.trim_start().starts_with("case ")).count() as u64;
    assert!(cases <= steps && steps < full / 4, "{cases} kinds emitted, {steps} of {full} steps");
    assert!(code.contains("stands for the kinds of its family that do not run too"), "{code}");
    stands_for_its_trace_on_two_clusters(&trace, &dir, &out, 0.1, 1.0 / 8.0);
    compiles_strictly_and_runs_under_both(&dir);
}

/// SCF iterations that are each a step of their own and each longer than the skeleton may take
/// (`fixtures/programs/scf.c`, 4 ranks: 6 iterations of 96 k-points, 3.7 s, then 100 short output
/// steps that broadcast the density as an iteration does). Folded on that broadcast, every
/// iteration is a kind of step of its own, all of one family, and a sixth of the run: one
/// whole step would be more than the whole skeleton may take. The first iteration, the
/// longest, stays a step (other steps make its calls too). The step that runs is cut short at
/// the same collective of all ranks in every class, its time scaled by the step's recorded
/// time over the part's: the skeleton's program stands for its trace on a fast and a slow
/// modelled cluster within 10 %, and runs under a twelfth of it on both (a sixth or more with
/// the whole step). It runs under Open MPI and MPICH.
#[test]
fn a_step_longer_than_the_skeleton_may_take_is_cut_short() {
    let trace = fixture("scf-iterations");
    let out = scratch("scf-iterations");
    let dir = out.join("skel");
    let err = build_named(&trace, &dir, "scf-iterations");
    assert!(err.contains("1 time step that the skeleton runs takes longer"), "{err}");
    let shown = mpiskel().arg("inspect").arg(&dir).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("steps: 1 time step that the skeleton runs"), "{shown}");
    let doc = document(&dir);
    let scaling = &doc["scaling"];
    assert_eq!(scaling["main_full"].as_u64(), Some(6 + 100), "{scaling}");
    assert_eq!(scaling["steps_cut"]["steps"].as_u64(), Some(1), "{scaling}");
    let phases = doc["program"]["classes"][0]["phases"].as_array().unwrap();
    let main = phases.iter().find(|p| p["name"] == "main_loop").unwrap();
    let cut: Vec<&serde_json::Value> =
        main["body"][0]["cases"].as_array().unwrap().iter().filter_map(|c| c.get("cut")).collect();
    assert_eq!(cut.len(), 1, "{main}");
    let (kept, calls) = (cut[0]["kept_calls"].as_u64().unwrap(), cut[0]["calls"].as_u64().unwrap());
    assert!((400..calls / 2).contains(&kept), "{kept} of {calls} calls kept");
    let code = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(code.contains(&format!("cut short: its first {kept} of {calls} calls run")), "{code}");
    // The kinds that run, what each stands for, and the scales that say so.
    let excerpt: String = code
        .lines()
        .filter(|l| l.trim_start().starts_with("case ") || l.contains("sk_phase_scale("))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n");
    insta::with_settings!({
        description => "mpiskel build fixtures/traces/scf-iterations (skeleton.c, kinds that run)",
        omit_expression => true,
        snapshot_path => root().join("tests").join("snapshots"),
    }, {
        insta::assert_snapshot!("skeleton__scf_iterations_kinds", excerpt);
    });
    stands_for_its_trace_on_two_clusters(&trace, &dir, &out, 0.1, 1.0 / 12.0);
    compiles_strictly_and_runs_under_both(&dir);
}

/// A long set-up that opens with the call every time step opens with
/// (`fixtures/programs/setupstep.c`, 4 ranks: a broadcast, a set-up computation of half of the
/// run and a barrier, then 60 light steps of a broadcast and a reduction of drawn sizes): folded
/// on the broadcast, the first of 61 steps holds the set-up. It is left before the steps, where
/// its compute blocks are cut, rather than run as a step: the main loop holds the 60 steps, the
/// set-up phase before it the barrier and the computation cut. On a fast modelled cluster the
/// skeleton stands for its trace within 10 %, and on a fast and a slow one it runs less than a
/// twelfth of it (the set-up as a step ran a quarter). (On the slow one, where the steps'
/// messages take their time, the one step run, timed on its own, loses the overlap of
/// neighbouring steps: +13 %, the same with the set-up as a step.) It runs under Open MPI and
/// MPICH.
#[test]
fn a_first_step_that_holds_the_set_up_is_left_before_the_steps() {
    let trace = fixture("setupstep");
    let out = scratch("setupstep");
    let dir = out.join("skel");
    build_named(&trace, &dir, "setupstep");
    let doc = document(&dir);
    assert_eq!(doc["scaling"]["main_full"].as_u64(), Some(60), "{}", doc["scaling"]);
    let phases = doc["program"]["classes"][0]["phases"].as_array().unwrap();
    let main = phases.iter().position(|p| p["name"] == "main_loop").unwrap();
    let calls = |p: &serde_json::Value| p["calls"].as_u64().unwrap() * p["full"].as_u64().unwrap();
    assert_eq!(phases[..main].iter().map(calls).sum::<u64>(), 2, "{:?}", &phases[..main]);
    let before = serde_json::to_string(&phases[..main]).unwrap();
    assert!(before.contains("Barrier") && before.contains("\"removed\""), "{before}");
    assert!(!phases[main].to_string().contains("Barrier"), "{}", phases[main]);
    for (name, toml) in two_clusters(&out) {
        let (app, skel) = (simulated(&trace, &toml, &[]), simulated(&dir, &toml, &[]));
        if name == "fast" {
            assert!((skel / app - 1.0).abs() < 0.1, "{name}: skeleton {skel} s, trace {app} s");
        }
        let own = simulated(&dir, &toml, &["--as-run"]);
        assert!(own < app / 12.0, "{name}: the skeleton runs {own} s of {app} s");
    }
    compiles_strictly_and_runs_under_both(&dir);
}

/// Messages of two tags between the same ranks, received in another order than they were sent
/// (`fixtures/programs/tagged.c`, LAMMPS's tiled communication: a receive for the data posted
/// before the partner's empty "ready" message, tag 0, arrives; partners that change every ten
/// steps; sizes sent head to head). With one tag per direction the receive for the data would
/// take the ready message and the program could block, and so could its sizes without
/// buffering: the build keeps the traced tags apart and buffers those sends, says both, and
/// the skeleton runs under both MPI libraries. `--strict` refuses it (it relies on buffering).
#[test]
fn messages_received_out_of_order_keep_their_tags() {
    let trace = root().join("fixtures/traces/tagged");
    let base = scratch("tagged");
    let strict = base.join("strict");
    refused_when_strict(&trace, &strict);

    let dir = base.join("skel");
    let out = mpiskel().args(["build"]).arg(&trace).arg("-o").arg(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("messages keep the 2 tags the application gave them"), "{err}");
    assert!(err.contains("blocking sends are buffered (MPI_Bsend"), "{err}");
    let doc = document(&dir);
    assert_eq!(doc["traced_tags"].as_u64(), Some(2), "{}", doc["traced_tags"]);
    assert_eq!(doc["program"]["all_tags"].as_bool(), Some(true));
    let source = std::fs::read_to_string(dir.join("skeleton.c")).unwrap();
    assert!(source.contains("TAG_MSG0") && source.contains("TAG_MSG1"), "{source}");
    assert!(!source.contains("TAG_LEFT") && !source.contains("TAG_RIGHT"));
    compiles_strictly_and_runs_under_both(&dir);
}

/// Messages labelled by sequence numbers and received from any source
/// (`fixtures/programs/numbered.c`, as ScaLAPACK's BLACS labels MUMPS's panels): the owner of a
/// step sends its panel under the step's number to every other rank, and a token goes round
/// under a number per hop. Sender and receivers agree on each message's tag, so the program
/// keeps the traced wildcards and passes the check as it is (before, receivers folded the
/// numbers their senders kept apart, and every receive had to be pinned to its traced source);
/// the hops, one message per number, share one tag, `TAG_NUMBERED`.
#[test]
fn messages_numbered_by_their_tags_keep_their_any_source_receives() {
    let dir = scratch("numbered");
    let trace = dir.join("trace");
    support::trace_program(support::Lib::OpenMpi, 4, "numbered", &["24", "65536", "100"], &trace);
    let skel = dir.join("skel");
    let out =
        mpiskel().args(["build", "--force"]).arg(&trace).arg("-o").arg(&skel).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = document(&skel);
    assert!(
        doc.get("pinned_any_source").is_none_or(|n| n == 0),
        "no receive is pinned to its traced source: {:?}",
        doc.get("pinned_any_source")
    );
    let source = std::fs::read_to_string(skel.join("skeleton.c")).unwrap();
    assert!(source.contains("MPI_ANY_SOURCE"), "the receives stay wildcards");
    assert!(source.contains("TAG_NUMBERED"), "the hops share one tag");
    compiles_strictly_and_runs_under_both(&skel);
}

/// A coarse level on every rank but rank 0 (`fixtures/programs/coarse.c`, as an algebraic
/// multigrid agglomerates its coarse grids: `MPI_Comm_create` gives rank 0 `MPI_COMM_NULL`):
/// the skeleton makes the traced groups (ranks 1–3) from a table of colours, not blocks of three
/// ranks (0–2 and 3, with which rank 0 was waited for in a collective it never makes and the
/// build was refused as one that can deadlock).
#[test]
fn a_communicator_that_leaves_a_rank_out_is_made_as_traced() {
    let dir = scratch("coarse");
    let trace = dir.join("trace");
    support::trace_program(support::Lib::OpenMpi, 4, "coarse", &["20", "200"], &trace);
    let skel = dir.join("skel");
    let out =
        mpiskel().args(["build", "--force"]).arg(&trace).arg("-o").arg(&skel).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let source = std::fs::read_to_string(skel.join("skeleton.c")).unwrap();
    let colours = colour_table(&source, "traced3_comm_color");
    assert_eq!(colours.len(), 4, "{colours:?}");
    assert!(colours[1] == colours[2] && colours[2] == colours[3], "{colours:?}");
    assert_ne!(colours[0], colours[1], "rank 0 is not in the coarse level: {colours:?}");
    compiles_strictly_and_runs_under_both(&skel);
}

/// The entries of the colour table `name` (`static const int name[N] = {…};`) of a skeleton's C
/// source.
fn colour_table(source: &str, name: &str) -> Vec<u32> {
    let at = source.find(&format!("{name}[")).unwrap_or_else(|| panic!("no table {name}"));
    source[at..]
        .split(['{', '}'])
        .nth(1)
        .unwrap()
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect()
}

/// Two communicators of one size that group the ranks differently (`fixtures/programs/pairs.c`:
/// blocks of two by `MPI_Comm_split`, and pairs across the blocks by `MPI_Comm_create`, as
/// PETSc's blocks and hypre's coarse level under DOLFINx): each is made as traced, the blocks
/// as blocks and the pairs by a table of their own, so that the program is built, not refused
/// as one whose ranks wait in different communicators.
#[test]
fn two_communicators_of_one_size_grouped_differently_are_both_made() {
    let dir = scratch("pairs");
    let trace = dir.join("trace");
    support::trace_program(support::Lib::OpenMpi, 4, "pairs", &["20", "200"], &trace);
    let skel = dir.join("skel");
    let out =
        mpiskel().args(["build", "--force"]).arg(&trace).arg("-o").arg(&skel).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let source = std::fs::read_to_string(skel.join("skeleton.c")).unwrap();
    assert!(
        source.contains("MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &block2_comm);"),
        "the blocks of two are made as blocks"
    );
    let colours = colour_table(&source, "traced2_split1_comm_color");
    assert_eq!(colours.len(), 4, "{colours:?}");
    assert_eq!(colours[1], colours[2], "ranks 1 and 2 are a pair: {colours:?}");
    assert!(colours[0] != colours[1] && colours[3] != colours[1], "{colours:?}");
    assert_ne!(colours[0], colours[3], "ranks 0 and 3 are in no pair: {colours:?}");
    compiles_strictly_and_runs_under_both(&skel);
}

/// The non-blocking consensus of a sparse exchange (`fixtures/programs/consensus.c`, as DOLFINx
/// and PETSc find who sends to them): a rank starts its `MPI_Ibarrier` once its synchronous
/// sends are received and goes on receiving until the barrier completes. Checked as MPI runs it
/// (the barrier's start does not block; its wait completes once every rank has started it),
/// the program is built, not refused as one that can deadlock, and keeps its `MPI_Ibarrier`.
#[test]
fn a_non_blocking_consensus_is_built() {
    let dir = scratch("consensus");
    let trace = dir.join("trace");
    support::trace_program(support::Lib::OpenMpi, 4, "consensus", &["30", "2", "50"], &trace);
    let skel = dir.join("skel");
    let out =
        mpiskel().args(["build", "--force"]).arg(&trace).arg("-o").arg(&skel).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let source = std::fs::read_to_string(skel.join("skeleton.c")).unwrap();
    assert!(source.contains("MPI_Ibarrier("), "the consensus keeps its non-blocking barrier");
    compile_strict(&skel, "mpicc.openmpi", &[]);
}
