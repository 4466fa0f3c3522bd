//! `mpiskel export --ti`: recorded traces (native, DUMPI and OTF2) written as SimGrid time-independent traces hold the
//! same calls per rank as the trace (sends, receives, collectives, completed requests), and
//! SimGrid replays them: its own trace of the replay (`-trace-ti`) holds the same actions per
//! rank as the export. A skeleton's export (its program as it ran under SimGrid) replays within
//! 1 % of the skeleton's own run (NPB BT S on 16 ranks).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use mpiskel_trace::{OpClass, Payload, Peer, ReadOptions, TraceSet};
use support::{fixture, mpiskel, run_with_timeout, scratch, shared};

fn open(path: &Path) -> TraceSet {
    TraceSet::open(path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Per rank: point-to-point sends and receives with a peer, completed requests, and each
/// collective by name. `MPI_Sendrecv` counts as the send, receive and two completions the
/// export writes for it.
fn calls(set: &TraceSet) -> Vec<BTreeMap<String, u64>> {
    set.ranks
        .iter()
        .map(|r| {
            let mut m: BTreeMap<String, u64> = BTreeMap::new();
            let mut add = |k: &str, n: u64| *m.entry(k.to_owned()).or_default() += n;
            for e in &r.events {
                match &e.payload {
                    Payload::P2p { peer: Peer::Rank(_), .. } => match e.op.class() {
                        OpClass::Send => add("send", 1),
                        OpClass::Recv => add("recv", 1),
                        _ => {}
                    },
                    Payload::SendRecv { dest, source, .. } => {
                        for (p, k) in [(dest, "send"), (source, "recv")] {
                            if let Peer::Rank(_) = p {
                                add(k, 1);
                                add("completed", 1);
                            }
                        }
                    }
                    Payload::Completion { completed, .. } => add(
                        "completed",
                        completed.iter().filter(|c| c.request.is_some()).count() as u64,
                    ),
                    Payload::Collective { .. } => add(e.op.name(), 1),
                    _ => {}
                }
            }
            m
        })
        .collect()
}

/// Per rank: the actions of a time-independent trace, `comm_size` left out (SimGrid does not
/// trace it again).
fn actions(set: &TraceSet) -> Vec<BTreeMap<String, u64>> {
    set.ranks
        .iter()
        .map(|r| {
            let mut m = r.record_counts.clone();
            m.remove("comm_size");
            m
        })
        .collect()
}

fn replayer() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib")
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path().join("simgrid/smpireplaymain")))
        .find(|p| p.is_file());
    found.expect("SimGrid's smpireplaymain (libsimgrid-dev) is installed")
}

#[test]
fn exported_traces_keep_every_call_and_simgrid_replays_them() {
    let platforms = shared().join("fixtures/npb/platforms");
    let mut traces: Vec<(&str, PathBuf)> =
        ["ring", "p2pmodes", "halo3d-2x2x2", "anysource", "lammps-melt"]
            .into_iter()
            .map(|n| (n, fixture(n)))
            .collect();
    // A DUMPI trace from a Blue Gene/P (its collectives on a communicator of all ranks).
    traces.push(("dumpi-testbgp", shared().join("fixtures/public/dumpi/sst-macro-testbgp")));
    // An OTF2 trace from Score-P.
    traces.push(("otf2-ping-pong", shared().join("fixtures/public/otf2/pipit-ping-pong")));
    for (name, trace) in traces {
        let dir = scratch(&format!("export-{name}"));
        let out = mpiskel()
            .args(["export", "--ti"])
            .arg(&dir)
            .arg(&trace)
            .arg("--force")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let mut native = open(&trace);
        native.fold_polls();
        native.drop_local_calls();
        let exported = open(&dir.join("trace.txt"));
        assert_eq!(exported.n_ranks(), native.n_ranks(), "{name}");
        assert_eq!(calls(&exported), calls(&native), "{name}");
        // SimGrid replays the export on the NPB fixtures' reference platform and traces it.
        let replayed = dir.join("replayed");
        std::fs::create_dir_all(&replayed).unwrap();
        let mut cmd = Command::new("smpirun");
        cmd.current_dir(&dir)
            .args(["-np", &native.n_ranks().to_string(), "-platform"])
            .arg(platforms.join("ref.xml"))
            .arg("-hostfile")
            .arg(platforms.join("hostfile_1perhost.txt"))
            .args(["--cfg=smpi/host-speed:1Gf", "-trace-ti"])
            .arg(format!("--cfg=tracing/filename:{}", replayed.join("trace.txt").display()))
            .args(["-replay", "trace.txt"])
            .arg(replayer());
        let run = run_with_timeout(cmd, 300);
        let log = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success() && log.contains("Simulation time"), "{name}: {log}");
        let again = open(&replayed.join("trace.txt"));
        assert_eq!(actions(&again), actions(&exported), "{name}");
    }
}

#[test]
fn what_the_format_cannot_say_is_refused_naming_the_rank_and_call() {
    for (name, why) in [("collectives", "Alltoallw"), ("subcomm-2x3", "MPI_COMM_WORLD")] {
        let dir = scratch(&format!("export-refused-{name}"));
        let out = mpiskel().args(["export", "--ti"]).arg(&dir).arg(fixture(name)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains("rank ") && err.contains("call ") && err.contains(why),
            "{name}: {err}"
        );
        // Nothing written as if complete.
        assert!(!dir.join("trace.txt").exists(), "{name}");
    }
}

/// SimGrid's simulated time of a run, from its `smpi/display-timing` line.
fn simulated_time(log: &str) -> f64 {
    log.lines()
        .find_map(|l| l.split("Simulated time: ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no simulated time in:\n{log}"))
}

#[test]
fn a_skeletons_export_replays_as_long_as_the_skeleton_runs() {
    let platforms = shared().join("fixtures/npb/platforms");
    let dir = scratch("export-skeleton-bt");
    let skel = dir.join("bt.skel");
    let out = mpiskel()
        .args(["build", "-q", "--force"])
        .arg(shared().join("fixtures/npb/bt.S.16/trace.txt"))
        .arg("-o")
        .arg(&skel)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ti = dir.join("bt.ti");
    let out = mpiskel()
        .args(["export", "--force", "--ti"])
        .arg(&ti)
        .arg(&skel)
        .args(["--platform"])
        .arg(platforms.join("ref.xml"))
        .arg("--hostfile")
        .arg(platforms.join("hostfile_1perhost.txt"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir
        .read_dir()
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(".mpiskel-export")));
    // The export holds the skeleton's calls: its MPI_Isends, as many per rank as the program
    // makes (every rank of BT runs the same program).
    let exported = open(&ti.join("trace.txt"));
    assert_eq!(exported.n_ranks(), 16);
    let isends = |r: usize| exported.ranks[r].record_counts.get("isend").copied().unwrap_or(0);
    assert!(isends(0) > 0 && (1..16).all(|r| isends(r) == isends(0)));
    // The skeleton's own run and the replay of its export, on the same platform.
    let smpirun = |args: &[&str], cwd: &Path| {
        let mut cmd = Command::new("smpirun");
        cmd.current_dir(cwd)
            .args(["-np", "16", "-platform"])
            .arg(platforms.join("ref.xml"))
            .arg("-hostfile")
            .arg(platforms.join("hostfile_1perhost.txt"))
            .args(["--cfg=smpi/host-speed:1Gf", "--cfg=smpi/display-timing:yes"])
            .args(args);
        let run = run_with_timeout(cmd, 300);
        let log = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{log}");
        simulated_time(&log)
    };
    let own = smpirun(&["--cfg=smpi/simulate-computation:no", "./skeleton-smpi"], &skel);
    let replayer = replayer();
    let replay = smpirun(&["-replay", "trace.txt", replayer.to_str().unwrap()], &ti);
    let err = replay / own - 1.0;
    assert!(
        err.abs() <= 0.01,
        "replay {replay} s against the skeleton's {own} s ({:+.2} %)",
        err * 100.0
    );
}
