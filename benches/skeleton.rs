//! Skeleton predictions (figures of BENCHMARKS.md, "Skeletons").
//!
//! 1. SimGrid: for NPB BT, CG and LU (`../shared/fixtures/npb`), build the skeleton, run it
//!    with `smpirun` on the reference platform, and compare the per-phase and single-ratio
//!    predictions with SimGrid's replay of the full trace (`replay_s` of the `ref` rows of
//!    `ground-truth.csv`), and the skeleton's time with it.
//! 2. Native (OpenMPI, this machine): for fixture programs and Debian's LAMMPS, trace the
//!    application once (`--cpu-time`: the runs oversubscribe the cores), build its skeleton, then
//!    interleave REPS runs of the application (traced:
//!    its time is the slowest rank's span from MPI_Init to MPI_Finalize, as the build records
//!    it) and of the skeleton; print medians.
//!
//! 3. Rust against C: for the same native cases, the C and the Rust skeleton of one trace, run
//!    interleaved under OpenMPI; medians of their predicted application times.
//! 4. Real applications: Debian's LAMMPS on four of its examples (4 ranks): calls, the main
//!    loop's share of the computation, the compression ratio, the emitted lines and their
//!    compile time, the build's peak memory, skeleton / application time, and the prediction's
//!    error (medians) and spread (smallest and largest prediction against the median
//!    application time). Each program is traced BENCH_TRACES times (default 3), each trace
//!    followed by its share of the timed runs of the application and of that trace's skeleton,
//!    interleaved, so that the machine's pace when a trace was made and when the runs compared
//!    with it were is the same; the error is over all runs (medians), per trace, and as the
//!    median of each prediction over the application's run just before it (paired runs, with
//!    a 95 % bootstrap interval). Each trace gets at least its share of BENCH_REPS pairs of
//!    runs, and a short program as many as make BENCH_APP_SECONDS of its runs (default 8, at
//!    most eight times the share). Every timed run starts after BENCH_PAUSE seconds idle
//!    (default 3). Every run is kept in target/bench-apps/NAME/runs.json.
//!
//! Run: `cargo bench --bench skeleton` (MPISKEL_SHARED for the NPB folder; BENCH_REPS, default 5;
//! BENCH_ONLY=smpi|native|rust|apps to run one part; BENCH_CASES=collectives,ring to run some
//! cases; BENCH_TRACES, BENCH_APP_SECONDS and BENCH_PAUSE for the real applications).

use std::path::{Path, PathBuf};
use std::process::Command;

fn mpiskel() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mpiskel"));
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

/// The shared data beside the repository (MPISKEL_SHARED, else `../shared`).
fn shared_root() -> PathBuf {
    std::env::var_os("MPISKEL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("..").join("shared"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn ok(mut c: Command, what: &str) -> String {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn build(trace: &Path, dir: &Path) -> serde_json::Value {
    let mut c = mpiskel();
    c.args(["build", "-q", "--force"]).arg(trace).arg("-o").arg(dir);
    ok(c, &format!("building {}", trace.display()));
    serde_json::from_str(&std::fs::read_to_string(dir.join("skeleton.json")).unwrap()).unwrap()
}

fn run(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut c = mpiskel();
    c.args(["run", "--json"]).arg(dir).args(extra);
    serde_json::from_str(&ok(c, &format!("running {}", dir.display()))).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn smpi() {
    let npb = shared_root().join("fixtures").join("npb");
    let platforms = npb.join("platforms");
    let platform = platforms.join("ref.xml");
    let hostfile = platforms.join("hostfile_1perhost.txt");
    println!("## SimGrid, reference platform: skeleton vs replay of the full trace");
    println!("| trace | replay (s) | skeleton (s) | skeleton / replay | by phase (s) | error | by ratio (s) | error | main loop run |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut errs = Vec::new();
    for t in [
        "bt.W.16", "cg.W.16", "lu.W.16", "bt.S.16", "cg.S.16", "lu.S.16", "bt.W.9", "cg.W.8",
        "bt.S.4", "cg.S.4", "lu.S.4",
    ] {
        let truth = mpiskel_validate::smpi::truth_of(&npb, t, "ref").expect("ground-truth.csv");
        let Some(replay) = truth.and_then(|t| t.replay) else { continue };
        let dir = root().join("target").join("bench-skeletons").join(t);
        let doc = build(&npb.join(t).join("trace.txt"), &dir);
        let r = run(
            &dir,
            &[
                "--mpi",
                "smpi",
                "--platform",
                platform.to_str().unwrap(),
                "--hostfile",
                hostfile.to_str().unwrap(),
            ],
        );
        let f = |k: &str| r[k].as_f64().unwrap();
        let (phase, ratio) = (f("predicted_s"), f("predicted_ratio_s"));
        errs.push((phase / replay - 1.0) * 100.0);
        println!(
            "| {t} | {replay:.4} | {:.4} | {:.3} | {phase:.4} | {:+.1} % | {ratio:.4} | {:+.1} % | {} of {} |",
            f("skeleton_s"),
            f("skeleton_s") / replay,
            (phase / replay - 1.0) * 100.0,
            (ratio / replay - 1.0) * 100.0,
            doc["scaling"]["main_run"],
            doc["scaling"]["main_full"],
        );
    }
    let mean = errs.iter().map(|e| e.abs()).sum::<f64>() / errs.len().max(1) as f64;
    let max = errs.iter().map(|e| e.abs()).fold(0.0, f64::max);
    println!("\nby phase: mean |error| {mean:.1} %, max {max:.1} %\n");
}

/// Builds the fixture programs for OpenMPI; their folder.
fn fixture_programs() -> PathBuf {
    let bin = root().join("target").join("fixture-programs").join("openmpi");
    let mut mk = Command::new("make");
    mk.args(["-s", "-C"])
        .arg(root().join("fixtures").join("programs"))
        .arg("MPI=openmpi")
        .arg(format!("OUT={}", bin.display()));
    ok(mk, "building the fixture programs");
    bin
}

/// The native cases: name, ranks, command.
fn native_cases() -> Vec<(&'static str, u32, Vec<String>)> {
    let bin = fixture_programs();
    let p = |name: &str| bin.join(name).display().to_string();
    vec![
        ("ring", 4, vec![p("ring"), "2000".into(), "65536".into()]),
        (
            "halo2d-periodic-4x4",
            16,
            vec![p("halo"), "4x4".into(), "1".into(), "200".into(), "65536".into()],
        ),
        (
            "halo3d-2x2x2",
            8,
            vec![p("halo"), "2x2x2".into(), "1".into(), "200".into(), "65536".into()],
        ),
        (
            "wavefront-4x4",
            16,
            vec![p("wavefront"), "4".into(), "4".into(), "100".into(), "8192".into()],
        ),
        ("collectives", 4, vec![p("collectives"), "200".into(), "65536".into()]),
        (
            "lammps-melt",
            4,
            vec![
                "lmp".into(),
                "-in".into(),
                "/usr/share/lammps/examples/melt/in.melt".into(),
                "-log".into(),
                "none".into(),
                "-screen".into(),
                "none".into(),
            ],
        ),
    ]
}

/// The cases BENCH_CASES names (comma-separated; all when unset).
fn selected(cases: Vec<(&'static str, u32, Vec<String>)>) -> Vec<(&'static str, u32, Vec<String>)> {
    match std::env::var("BENCH_CASES") {
        Ok(v) if !v.is_empty() => {
            let names: Vec<&str> = v.split(',').collect();
            cases.into_iter().filter(|c| names.contains(&c.0)).collect()
        }
        _ => cases,
    }
}

/// Traces `cmd` on `np` ranks under OpenMPI (`--cpu-time`) into `t`.
/// Traces a native run (`--cpu-time`: ranks share the cores) to build a skeleton from.
/// The trace a skeleton is built from: three runs, the one of median time kept (`--runs 3`), so
/// that a run that met a slow or a quiet spell of the machine does not stand for the others.
fn trace_native(work: &Path, t: &Path, np: u32, cmd: &[String], name: &str) {
    record_native(work, t, np, cmd, name, &["--cpu-time", "--runs", "3"]);
}

/// `mpiskel trace` as a user runs it, without options: one run. A trace that fails comes back
/// as the error it printed.
fn trace_default(work: &Path, t: &Path, np: u32, cmd: &[String]) -> Result<(), String> {
    let mut c = mpiskel();
    c.current_dir(work).args(["trace", "--force", "-o"]).arg(t);
    c.args(["--", "mpirun.openmpi", "--oversubscribe", "-np", &np.to_string()]).args(cmd);
    let out = c.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(err.lines().find(|l| l.starts_with("error")).unwrap_or("failed").to_owned())
}

/// The application's time in one native run, recorded with `--time-only` (without the
/// tracer's overhead on its calls).
fn time_native(work: &Path, t: &Path, np: u32, cmd: &[String], name: &str) -> f64 {
    record_native(work, t, np, cmd, name, &["--time-only"]);
    let mut c = mpiskel();
    c.args(["inspect", "--json"]).arg(t);
    let doc: serde_json::Value = serde_json::from_str(&ok(c, "inspecting a timed run")).unwrap();
    doc["app_time_s"].as_f64().unwrap()
}

/// Runs of an application that take longer than this (BENCH_RUN_TIMEOUT seconds, default 900)
/// are taken for hung and made again, up to [`RUN_ATTEMPTS`] times in all: DOLFINx's mesh
/// partitioning by PT-Scotch, whose threads call MPI without `MPI_THREAD_MULTIPLE`, now and then
/// waits forever in a collective the ranks made in different orders, traced or not.
fn run_timeout_s() -> u64 {
    std::env::var("BENCH_RUN_TIMEOUT").ok().and_then(|v| v.parse().ok()).unwrap_or(900)
}
const RUN_ATTEMPTS: usize = 3;

fn record_native(work: &Path, t: &Path, np: u32, cmd: &[String], name: &str, record: &[&str]) {
    for attempt in 1..=RUN_ATTEMPTS {
        let mut c = Command::new("timeout");
        c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        c.args(["--kill-after=30", &run_timeout_s().to_string()]);
        c.arg(env!("CARGO_BIN_EXE_mpiskel"));
        c.current_dir(work).arg("trace").args(record).args(["--force", "-o"]).arg(t).args([
            "--",
            "mpirun.openmpi",
            "--oversubscribe",
            "-np",
            &np.to_string(),
        ]);
        c.args(cmd);
        let out = c.output().unwrap_or_else(|e| panic!("tracing {name}: {e}"));
        if out.status.code() == Some(124) && attempt < RUN_ATTEMPTS {
            eprintln!(
                "{name}: a run took over {} s and was stopped (hung); run again ({attempt} of \
                 {RUN_ATTEMPTS})",
                run_timeout_s()
            );
            continue;
        }
        assert!(
            out.status.success(),
            "tracing {name} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        break;
    }
}

fn native(reps: usize) {
    let cases = selected(native_cases());
    println!("## Native, OpenMPI on this machine: predicted vs measured application time ({reps} runs each, medians)");
    println!("| program | ranks | measured app (s) | skeleton (s) | skeleton / app | by phase (s) | error | by ratio (s) | error |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, np, cmd) in cases {
        let work = root().join("target").join("bench-native").join(name);
        std::fs::create_dir_all(&work).unwrap();
        let t0 = work.join("run0.trace");
        trace_native(&work, &t0, np, &cmd, name);
        let skel = work.join("run0.skel");
        build(&t0, &skel);
        let (mut app, mut sk, mut ph, mut ra) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for k in 1..=reps {
            app.push(time_native(&work, &work.join(format!("run{k}.time")), np, &cmd, name));
            let r = run(&skel, &["--mpi", "openmpi"]);
            sk.push(r["skeleton_s"].as_f64().unwrap());
            ph.push(r["predicted_s"].as_f64().unwrap());
            ra.push(r["predicted_ratio_s"].as_f64().unwrap());
        }
        let (a, s, p, r) = (median(app), median(sk), median(ph), median(ra));
        println!(
            "| {name} | {np} | {a:.4} | {s:.4} | {:.3} | {p:.4} | {:+.1} % | {r:.4} | {:+.1} % |",
            s / a,
            (p / a - 1.0) * 100.0,
            (r / a - 1.0) * 100.0
        );
    }
}

/// Rust against C: for each native case, trace once, build the C and the Rust skeleton of the
/// same trace, run them REPS times each, interleaved, under OpenMPI; compare the medians of
/// their predicted application times, and give the median of the ratios of each Rust run to the
/// C run just before it (the machine's slow drifts hit both runs of a pair alike), each with a
/// 95 % bootstrap interval (pairs resampled together). Every run's prediction is kept in
/// target/bench-rust/NAME/runs.json.
fn rust(reps: usize) {
    let cases = selected(native_cases());
    let target = root().join("target").join("bench-rust-skeletons").join("openmpi");
    println!("## Rust against C skeletons, OpenMPI on this machine ({reps} runs each, interleaved, medians)");
    println!(
        "| program | ranks | C predicted (s) | C spread | Rust predicted (s) | Rust spread | Rust / C | 95 % interval | paired runs | 95 % interval |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, np, cmd) in cases {
        let work = root().join("target").join("bench-rust").join(name);
        std::fs::create_dir_all(&work).unwrap();
        let t = work.join("app.trace");
        trace_native(&work, &t, np, &cmd, name);
        let c_dir = work.join("skel-c");
        build(&t, &c_dir);
        let r_dir = work.join("skel-rs");
        let mut c = mpiskel();
        // Skeletons sharing a target folder need names of their own (the binary's name).
        c.args(["build", "-q", "--force", "--lang", "rust", "--name", name]);
        c.arg(&t).arg("-o").arg(&r_dir);
        ok(c, &format!("building the Rust skeleton of {name}"));
        let target_arg = target.display().to_string();
        let (mut cp, mut rp) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            cp.push(run(&c_dir, &["--mpi", "openmpi"])["predicted_s"].as_f64().unwrap());
            let r = run(&r_dir, &["--mpi", "openmpi", "--target-dir", &target_arg]);
            rp.push(r["predicted_s"].as_f64().unwrap());
        }
        let spread = |v: &[f64]| {
            let m = median(v.to_vec());
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            format!("{:+.0} / {:+.0} %", (lo / m - 1.0) * 100.0, (hi / m - 1.0) * 100.0)
        };
        // Every run's prediction, for a closer look (target/bench-rust/NAME/runs.json).
        let runs = serde_json::json!({ "c_predicted_s": cp, "rust_predicted_s": rp });
        std::fs::write(work.join("runs.json"), runs.to_string()).unwrap();
        let ratio_of_medians = |picks: &[usize]| {
            median(picks.iter().map(|&i| rp[i]).collect())
                / median(picks.iter().map(|&i| cp[i]).collect())
        };
        let median_of_ratios =
            |picks: &[usize]| median(picks.iter().map(|&i| rp[i] / cp[i]).collect());
        let all: Vec<usize> = (0..reps).collect();
        let pct = |x: f64| (x - 1.0) * 100.0;
        let (c_med, r_med) = (median(cp.clone()), median(rp.clone()));
        let (lo, hi) = bootstrap(reps, ratio_of_medians);
        let (plo, phi) = bootstrap(reps, median_of_ratios);
        println!(
            "| {name} | {np} | {c_med:.4} | {} | {r_med:.4} | {} | {:+.1} % | {:+.1} … {:+.1} % | {:+.1} % | {:+.1} … {:+.1} % |",
            spread(&cp),
            spread(&rp),
            pct(ratio_of_medians(&all)),
            pct(lo),
            pct(hi),
            pct(median_of_ratios(&all)),
            pct(plo),
            pct(phi)
        );
    }
}

/// The 2.5 % and 97.5 % points of `stat` over 2000 resamples (with replacement) of the `n` run
/// pairs, each resample given as the indices it picked; the workspace's generator from a fixed
/// state ([`mpiskel_trace::rng`]), so the interval is repeatable for the same runs.
fn bootstrap(n: usize, stat: impl Fn(&[usize]) -> f64) -> (f64, f64) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || (mpiskel_trace::rng::splitmix64(&mut state) % n as u64) as usize;
    let mut values: Vec<f64> = (0..2000)
        .map(|_| {
            let picks: Vec<usize> = (0..n).map(|_| next()).collect();
            stat(&picks)
        })
        .collect();
    values.sort_by(f64::total_cmp);
    (values[values.len() * 25 / 1000], values[values.len() * 975 / 1000])
}

/// The development set of irregular programs: LAMMPS examples and fixture programs that
/// reproduce their patterns.
enum App {
    /// A LAMMPS example: its folder, its input, and the run length to set (each `run N` line of
    /// the input rewritten), if any.
    Lammps(&'static str, &'static str, Option<u32>),
    /// A fixture program (`fixtures/programs`) with its arguments.
    Program(&'static str, &'static [&'static str]),
    /// An application of `../shared/apps` (a Debian package): the script that writes its
    /// inputs into the working folder, and the command each rank runs. Traced as `mpiskel
    /// trace` does by default (one run).
    Shared(&'static str, &'static [&'static str]),
}

fn app_cases() -> Vec<(&'static str, App)> {
    vec![
        ("lammps-melt", App::Lammps("melt", "in.melt", None)),
        ("lammps-peptide", App::Lammps("peptide", "in.peptide", None)),
        ("lammps-crack", App::Lammps("crack", "in.crack", None)),
        ("lammps-flow", App::Lammps("flow", "in.flow.pois", None)),
        ("lammps-melt-2000", App::Lammps("melt", "in.melt", Some(2000))),
        ("lammps-peptide-1000", App::Lammps("peptide", "in.peptide", Some(1000))),
        // A time-step loop with migrating sizes and rebuilds every tenth step.
        ("timestep", App::Program("timestep", &["1000", "10", "25", "200"])),
        // Testany/Test polling on a ring, Iprobe(ANY_SOURCE) at a collector.
        ("polling", App::Program("polling", &["60", "4096", "3000"])),
        // HPL-style panels that shrink every step, received by polling.
        ("panel", App::Program("panel", &["96", "65536", "8000"])),
        // Master–worker with ANY_SOURCE: regular, and a task farm in the run's order. Messages
        // of at most 3 KB: anysource relies on eager sends (see its header).
        ("anysource", App::Program("anysource", &["2000", "1024"])),
        ("taskfarm", App::Program("taskfarm", &["300", "2000"])),
        // Pre-posted any-source receives, the last one cancelled.
        ("cancel", App::Program("cancel", &["400", "1024", "3000"])),
        // Two stretches of drawn exchanges that fold into no loop, cut short.
        ("shuffle", App::Program("shuffle", &["4000", "40"])),
        // Real applications of new kinds (`../shared/apps/cases.tsv`).
        ("ptscotch-dgord", App::Shared("ptscotch_dgord.sh", &["dgord", "-vt", "m3.grf", "m3.ord"])),
        (
            "mumps-dsimpletest",
            App::Shared(
                "mumps_dsimpletest.sh",
                &["sh", "-c", "/usr/lib/mumps/dsimpletest < input_lap50"],
            ),
        ),
        (
            "fenicsx-poisson",
            App::Shared(
                "fenicsx_poisson.sh",
                &[
                    "dolfinx-scaling-test",
                    "--problem_type",
                    "poisson",
                    "--scaling_type",
                    "strong",
                    "--ndofs",
                    "300000",
                    "-ksp_type",
                    "cg",
                    "-ksp_rtol",
                    "1.0e-8",
                    "-pc_type",
                    "hypre",
                    "-pc_hypre_type",
                    "boomeramg",
                ],
            ),
        ),
        ("elk-si", App::Shared("elk_si.sh", &["env", "OMP_NUM_THREADS=1", "elk-lapw"])),
    ]
}

fn apps(reps: usize) {
    let names: Vec<&str> =
        selected(app_cases().into_iter().map(|(n, _)| (n, 4, Vec::new())).collect::<Vec<_>>())
            .into_iter()
            .map(|c| c.0)
            .collect();
    let traces: usize =
        std::env::var("BENCH_TRACES").ok().and_then(|v| v.parse().ok()).unwrap_or(3).max(1);
    let per_trace = reps.div_ceil(traces);
    let pause: f64 = std::env::var("BENCH_PAUSE").ok().and_then(|v| v.parse().ok()).unwrap_or(3.0);
    let budget: f64 =
        std::env::var("BENCH_APP_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(8.0);
    println!(
        "## Real applications and irregular programs, OpenMPI on this machine, 4 ranks ({traces} traces, at least {} runs each and {budget} s of the application per trace, medians)",
        traces * per_trace
    );
    println!("| program | runs | calls | main loop (share of the recorded time) | compression | lines | compile (s) | build peak (MB) | skeleton / app | app (s) | by phase | spread | by trace | paired runs (95 % interval) | MPICH skeleton (s) | load beside the traces | traced runs (s) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let bin = fixture_programs();
    for (name, app) in app_cases().into_iter().filter(|c| names.contains(&c.0)) {
        let work = root().join("target").join("bench-apps").join(name);
        std::fs::create_dir_all(&work).unwrap();
        let default_tracing = matches!(app, App::Shared(..));
        let cmd: Vec<String> = match app {
            App::Lammps(folder, input, steps) => {
                let examples = Path::new("/usr/share/lammps/examples").join(folder);
                for e in std::fs::read_dir(&examples).unwrap().flatten() {
                    std::fs::copy(e.path(), work.join(e.file_name())).unwrap();
                }
                if let Some(n) = steps {
                    let text = std::fs::read_to_string(work.join(input)).unwrap();
                    let runs: String = text
                        .lines()
                        .map(|l| match l.split_whitespace().next() {
                            Some("run") => format!("run {n}\n"),
                            _ => format!("{l}\n"),
                        })
                        .collect();
                    std::fs::write(work.join(input), runs).unwrap();
                }
                ["lmp", "-in", input, "-log", "none", "-screen", "none"].map(String::from).to_vec()
            }
            App::Program(program, args) => std::iter::once(bin.join(program).display().to_string())
                .chain(args.iter().map(|a| a.to_string()))
                .collect(),
            App::Shared(script, cmd) => {
                let mut c = Command::new("sh");
                c.current_dir(&work).arg(shared_root().join("apps").join(script));
                ok(c, &format!("setting up {name}"));
                cmd.iter().map(|a| a.to_string()).collect()
            }
        };
        // Traces interleaved with the timed runs: each trace's skeleton is timed beside runs of
        // the application made just after it, so that a change of the machine's pace between a
        // trace and the runs it is compared with is not taken for an error of the method.
        let mut rounds: Vec<Round> = Vec::new();
        let mut timed = 0;
        for i in 0..traces {
            let traced = match trace_and_build(&work, i, &cmd, name, default_tracing) {
                Ok(t) => t,
                Err(e) => {
                    println!("| {name} | trace {} of {traces}: {e} |", i + 1);
                    continue;
                }
            };
            let mut round =
                Round { traced, app: Vec::new(), predicted: Vec::new(), skel: Vec::new() };
            // At least `per_trace` pairs, and for a short program as many as make `budget`
            // seconds of its runs: the application's own runs spread by a quarter either way
            // on this machine, and the median of a handful of them moves by several points.
            let mut wanted = per_trace;
            while round.app.len() < wanted {
                timed += 1;
                let t = work.join(format!("run{timed}.time"));
                settle(pause);
                let app_s = time_native(&work, &t, 4, &cmd, name);
                if round.app.is_empty() && app_s > 0.0 {
                    wanted = per_trace.max((budget / app_s).ceil() as usize).min(8 * per_trace);
                }
                round.app.push(app_s);
                settle(pause);
                let r = run(&round.traced.skel, &["--mpi", "openmpi"]);
                round.skel.push(r["skeleton_s"].as_f64().unwrap());
                round.predicted.push(r["predicted_s"].as_f64().unwrap());
            }
            rounds.push(round);
        }
        if rounds.is_empty() {
            continue;
        }
        // The figures of the program and its skeleton, from the first trace.
        let first = &rounds[0].traced;
        let skel = &first.skel;
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(skel.join("skeleton.json")).unwrap())
                .unwrap();
        let calls: u64 = doc["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                c["calls"].as_u64().unwrap_or(0)
                    * c["ranks"].as_array().map_or(1, |r| r.len() as u64)
            })
            .sum::<u64>()
            // The calls of stretches cut short that the skeleton's program left out.
            + doc["stretches"]
                .as_array()
                .map_or(0, |a| a.iter().map(|c| c["dropped"].as_u64().unwrap_or(0)).sum());
        let share = doc["scaling"]["main_share"].as_f64().unwrap_or(0.0);
        let mut c = mpiskel();
        c.args(["compress", "--json", "--rank", "0"]).arg(&first.trace);
        let nest: serde_json::Value = serde_json::from_str(&ok(c, "compressing")).unwrap();
        let ratio = nest["report"]["ratio"].as_f64().unwrap_or(f64::NAN);
        let source = std::fs::read_to_string(skel.join("skeleton.c")).unwrap();
        let lines = source.lines().count();
        let mut mk = Command::new("make");
        mk.arg("-s").arg("-B").arg("-C").arg(skel);
        let t = std::time::Instant::now();
        ok(mk, "compiling the skeleton");
        let compile = t.elapsed().as_secs_f64();
        // The same skeleton under MPICH: it runs there too (its time, not compared: the
        // application ran under OpenMPI).
        let mpich = run(skel, &["--mpi", "mpich"])["skeleton_s"].as_f64().unwrap();
        let all = |f: fn(&Round) -> &Vec<f64>| -> Vec<f64> {
            rounds.iter().flat_map(|r| f(r).iter().copied()).collect()
        };
        let (app, sk, ph) = (all(|r| &r.app), all(|r| &r.skel), all(|r| &r.predicted));
        let n_runs = app.len();
        let (a, s, p) = (median(app.clone()), median(sk), median(ph.clone()));
        let lo = ph.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ph.iter().copied().fold(0.0, f64::max);
        let peak_mb = rounds.iter().map(|r| r.traced.peak_mb).fold(0.0, f64::max);
        // Each prediction against the application's run just before it: a slow drift of the
        // machine's pace hits both runs of a pair alike. Their median, with a 95 % bootstrap
        // interval (pairs resampled).
        let pairs: Vec<f64> = ph.iter().zip(&app).map(|(p, a)| p / a).collect();
        let of_pairs = |picks: &[usize]| median(picks.iter().map(|&i| pairs[i]).collect());
        let paired = of_pairs(&(0..pairs.len()).collect::<Vec<_>>());
        let (plo, phi) = bootstrap(pairs.len(), of_pairs);
        // Every run, for a closer look (target/bench-apps/NAME/runs.json).
        let runs = serde_json::json!(rounds
            .iter()
            .map(|r| serde_json::json!({
                "trace": r.traced.trace.display().to_string(),
                "traced_runs": r.traced.runs,
                "app_s": r.app,
                "skeleton_s": r.skel,
                "predicted_s": r.predicted,
            }))
            .collect::<Vec<_>>());
        std::fs::write(work.join("runs.json"), runs.to_string()).unwrap();
        // Each trace's prediction against the application's runs beside its skeleton's.
        let by_trace = rounds
            .iter()
            .map(|r| {
                format!(
                    "{:+.0}",
                    (median(r.predicted.clone()) / median(r.app.clone()) - 1.0) * 100.0
                )
            })
            .collect::<Vec<_>>()
            .join(" / ");
        let beside = rounds.iter().map(|r| r.traced.beside.as_str()).collect::<Vec<_>>().join(", ");
        let traced = rounds.iter().map(|r| r.traced.runs.as_str()).collect::<Vec<_>>().join("; ");
        println!(
            "| {name} | {n_runs} | {calls} | {:.1} % | {ratio:.1} | {lines} | {compile:.1} | {peak_mb:.0} | {:.3} | {a:.4} | {:+.1} % | {:+.0} / {:+.0} % | {by_trace} % | {:+.1} % ({:+.1} … {:+.1} %) | {mpich:.4} | {beside} | {traced} |",
            share * 100.0,
            s / a,
            (p / a - 1.0) * 100.0,
            (lo / a - 1.0) * 100.0,
            (hi / a - 1.0) * 100.0,
            (paired - 1.0) * 100.0,
            (plo - 1.0) * 100.0,
            (phi - 1.0) * 100.0
        );
    }
}

/// Waits `seconds` before a timed run, so that no run starts in the wake of the one before: on
/// this machine (2 vCPUs under KVM), a skeleton of LAMMPS flow (20 ms, a call every 4 µs per
/// rank on 4 ranks and 2 cores) predicted a median 10 % more right after a run of the
/// application than after three seconds idle (six runs each; timestep's +4 %), while runs of
/// the application followed the skeleton's short ones.
fn settle(seconds: f64) {
    if seconds > 0.0 {
        std::thread::sleep(std::time::Duration::from_secs_f64(seconds));
    }
}

/// One trace of a development-set program and the runs timed after it.
struct Round {
    traced: Traced,
    /// The application's times (`--time-only`), each run just before one of the skeleton's.
    app: Vec<f64>,
    /// The skeleton's own times and its predictions of the application's, by phase.
    skel: Vec<f64>,
    predicted: Vec<f64>,
}

/// A trace (three runs, the median kept) and the skeleton built from it.
struct Traced {
    trace: PathBuf,
    skel: PathBuf,
    /// The build's peak memory (MB).
    peak_mb: f64,
    /// What else the node did while the trace was made.
    beside: String,
    /// The traced runs' times, the one kept in bold.
    runs: String,
}

/// Traces `cmd` (the `i`-th trace of `name`: `run0.trace`, then `trace<i>.trace`) and builds its
/// skeleton with the default target under `/usr/bin/time`, for the build's peak memory.
/// With `default_tracing`, traced as a user traces ([`trace_default`]); else three runs with
/// their median kept ([`trace_native`]). A build that fails comes back as its message.
fn trace_and_build(
    work: &Path,
    i: usize,
    cmd: &[String],
    name: &str,
    default_tracing: bool,
) -> Result<Traced, String> {
    let stem = if i == 0 { "run0".to_owned() } else { format!("trace{i}") };
    let trace = work.join(format!("{stem}.trace"));
    if default_tracing {
        trace_default(work, &trace, 4, cmd).map_err(|e| format!("not traced: {e}"))?;
    } else {
        trace_native(work, &trace, 4, cmd, name);
    }
    // What else the node did while the trace was made: a trace is as typical as its run.
    let meta = mpiskel_trace::RunMeta::read(&trace.join("meta.json")).ok();
    let beside = meta
        .as_ref()
        .and_then(|m| m.node_load)
        .map_or("–".to_owned(), |l| format!("{:.0} %", 100.0 * (l.others + l.steal)));
    let runs = meta.as_ref().map_or("–".to_owned(), |m| {
        let each = m.runs_app_s.iter().enumerate().map(|(k, t)| {
            if Some(k) == m.kept_run {
                format!("**{t:.2}**")
            } else {
                format!("{t:.2}")
            }
        });
        each.collect::<Vec<_>>().join(", ")
    });
    let skel = work.join(format!("{stem}.skel"));
    let mut c = Command::new("/usr/bin/time");
    c.args(["-f", "MPISKEL_PEAK_KB %M", env!("CARGO_BIN_EXE_mpiskel"), "build", "-q", "--force"])
        .arg(&trace)
        .arg("-o")
        .arg(&skel);
    let out = c.output().expect("/usr/bin/time (Debian package time)");
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let e = err.lines().find(|l| l.starts_with("error")).unwrap_or("failed");
        return Err(format!("not built: {e}"));
    }
    let peak_mb = String::from_utf8_lossy(&out.stderr)
        .lines()
        .find_map(|l| l.strip_prefix("MPISKEL_PEAK_KB "))
        .and_then(|k| k.trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN)
        / 1024.0;
    Ok(Traced { trace, skel, peak_mb, beside, runs })
}

fn main() {
    // `cargo bench` passes --bench; nothing else is accepted.
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let reps = std::env::var("BENCH_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    if only.is_empty() || only == "smpi" {
        smpi();
    }
    if only.is_empty() || only == "native" {
        native(reps);
    }
    if only.is_empty() || only == "rust" {
        rust(reps);
    }
    if only.is_empty() || only == "apps" {
        apps(reps);
    }
}
