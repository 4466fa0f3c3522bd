//! Rust skeletons of every fixture: built by `mpiskel build --lang rust`, snapshotted, checked
//! with `cargo clippy -- -D warnings`, built against OpenMPI and MPICH and run under both with a
//! timeout; then traced with mpiskel's own tracer beside the C skeleton of the same trace, to
//! show that both make the same MPI calls.
//!
//! The comparison is per rank, over the calls that move data or make communicators, with
//! kinds, peers, tags and sizes; what the two languages may do differently is normalised, and
//! each rule is listed in [`actions`].

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use mpiskel_trace::{Event, OpClass, Payload, Peer, Rank, ReadOptions, TraceSet};
use support::{
    check_report, fixture, mpi_lock, mpiskel, npb, root, run_skeleton, run_with_timeout, scratch,
    skeleton_fixture_tests,
};

/// One library's cargo target folder, shared by every skeleton (the `mpi` crate is built once
/// per library; it does not rebuild when MPICC changes).
fn target_dir(mpi: &str) -> PathBuf {
    root().join("target").join("rust-skeletons").join(mpi)
}

fn build(name: &str, trace: &Path, lang: &str, dir: &Path) {
    let out = mpiskel()
        .args(["build", "-q", "--no-check", "--lang", lang, "--name", name])
        .arg(trace)
        .arg("-o")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "building the {lang} skeleton of {}:\n{}{}",
        trace.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The emitted `src/main.rs` with the trace's location (which depends on where the fixtures
/// are) elided, in focus where it is long (`support::focused`).
fn source_for_snapshot(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("src").join("main.rs")).unwrap();
    let text = text
        .lines()
        .map(|l| if l.starts_with("//! Trace:") { "//! Trace:     <trace>" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    support::focused(&text)
}

/// `cargo <args>` in the skeleton's folder, against `mpi`.
fn cargo(dir: &Path, mpi: &str, args: &[&str]) {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(dir)
        .args(args)
        .env("MPICC", format!("mpicc.{mpi}"))
        .env("CARGO_TARGET_DIR", target_dir(mpi));
    let out = cmd.output().expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {} failed on {} ({mpi}):\n{}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds and runs the skeleton with `mpiskel run --json`; returns the report.
fn run(dir: &Path, mpi: &str, timeout: u64) -> serde_json::Value {
    let target = target_dir(mpi);
    run_skeleton(dir, mpi, timeout, 600, &["--target-dir".as_ref(), target.as_os_str()])
}

/// Traces `bin` (with arguments `args`) on `np` ranks under OpenMPI into `out`.
fn trace(bin: &Path, args: &[String], np: u64, out: &Path) -> TraceSet {
    let mut cmd = mpiskel();
    cmd.args(["trace", "--force", "-o"]).arg(out).arg("--");
    cmd.args(["mpirun.openmpi", "--oversubscribe", "--allow-run-as-root", "-np", &np.to_string()]);
    cmd.arg(bin).args(args);
    let out_run = run_with_timeout(cmd, 300);
    assert!(
        out_run.status.success(),
        "tracing {}:\n{}{}",
        bin.display(),
        String::from_utf8_lossy(&out_run.stdout),
        String::from_utf8_lossy(&out_run.stderr)
    );
    TraceSet::open(out, &ReadOptions::default()).unwrap()
}

/// What one call did, in the terms both skeletons must agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    /// A send or receive: the call (`Isend`, `Recv`, …; a half of a `Sendrecv` counts as the
    /// blocking call), the peer (`None`: any source), tag (`None`: any tag) and bytes.
    P2p { op: String, peer: Option<Rank>, tag: Option<i32>, bytes: u64 },
    /// A probe: the peer and tag asked for (whether anything was there depends on timing).
    Probe { peer: Option<Rank>, tag: Option<i32> },
    /// A collective: the call, root and bytes each way.
    Collective { op: String, root: Option<Rank>, send: u64, recv: u64 },
    /// A communicator made.
    Comm { op: String },
}

/// The actions of one rank's calls. Normalised:
/// - completions (`Wait*`, `Test*`) are left out: rsmpi has no `MPI_Waitall` over requests on
///   different buffer types, so the Rust skeleton waits for reductions and barriers apart from
///   the point-to-point requests, and tests in turn where C calls `MPI_Waitany`;
/// - receives from any source have no size (which message they take depends on timing);
/// - calls toward `MPI_PROC_NULL` are left out (rsmpi has no process for it; MPI does nothing
///   with them), and so is the half of a `Sendrecv` that goes there;
/// - `Comm_free`, `Init` and `Finalize` are left out (rsmpi frees communicators it drops).
fn actions(events: &[Event]) -> Vec<Action> {
    let mut out = Vec::new();
    let tag_of = |tag: i32, any: bool| if any { None } else { Some(tag) };
    for e in events {
        match (&e.payload, e.op.class()) {
            (Payload::P2p { peer: Peer::Null, .. }, _) => {}
            (Payload::P2p { peer, tag, bytes, wildcards, .. }, OpClass::Probe) => {
                out.push(Action::Probe {
                    peer: if wildcards.source { None } else { peer.rank() },
                    tag: tag_of(*tag, wildcards.tag),
                });
                let _ = bytes;
            }
            // A receive from any source gets whichever message came first: its size is the
            // sender's, which depends on timing where senders send different sizes.
            (Payload::P2p { peer, tag, bytes, wildcards, .. }, _) => out.push(Action::P2p {
                op: e.op.name().to_owned(),
                peer: if wildcards.source { None } else { peer.rank() },
                tag: tag_of(*tag, wildcards.tag),
                bytes: if wildcards.source { 0 } else { *bytes },
            }),
            (
                Payload::SendRecv {
                    dest, send_tag, send_bytes, source, recv_tag, recv_bytes, ..
                },
                _,
            ) => {
                if let Some(d) = dest.rank() {
                    out.push(Action::P2p {
                        op: "Send".into(),
                        peer: Some(d),
                        tag: Some(*send_tag),
                        bytes: *send_bytes,
                    });
                }
                if *source != Peer::Null {
                    out.push(Action::P2p {
                        op: "Recv".into(),
                        peer: source.rank(),
                        tag: Some(*recv_tag),
                        bytes: *recv_bytes,
                    });
                }
            }
            (Payload::Collective { root, send_bytes, recv_bytes, .. }, _) => {
                out.push(Action::Collective {
                    op: e.op.name().to_owned(),
                    root: *root,
                    send: *send_bytes,
                    recv: *recv_bytes,
                })
            }
            (Payload::Comm { .. }, OpClass::Comm) if e.op.name() != "Comm_free" => {
                out.push(Action::Comm { op: e.op.name().to_owned() })
            }
            _ => {}
        }
    }
    out
}

/// The C and Rust skeletons of `trace` make the same calls on every rank (each run with the
/// skeleton's arguments `args`).
fn equivalent(name: &str, c_dir: &Path, np: u64, args: &[String]) {
    let _lock = mpi_lock();
    let c_bin = c_dir.join("skeleton-equivalence");
    let out = Command::new("mpicc.openmpi")
        .current_dir(c_dir)
        .args(["-O2", "-o", "skeleton-equivalence", "skeleton.c"])
        .args(mpiskel_emit::c::RUNTIME_SOURCES)
        .arg("-lm")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rust_bin =
        target_dir("openmpi").join("release").join(mpiskel_emit::rust::package_name(name));
    let base = c_dir.parent().unwrap();
    let c = trace(&c_bin, args, np, &base.join("c.trace"));
    let r = trace(&rust_bin, args, np, &base.join("rust.trace"));
    assert_eq!(c.ranks.len(), r.ranks.len());
    let mut compared = 0;
    for (rank, (a, b)) in c.ranks.iter().zip(&r.ranks).enumerate() {
        let (a, b) = (actions(&a.events), actions(&b.events));
        compared += a.len();
        assert!(!a.is_empty(), "{name}: rank {rank} of the C skeleton made no calls");
        if a != b {
            let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            panic!(
                "{name}: rank {rank}: the skeletons differ at call {at} of {} (C) / {} (Rust):\n  C:    {:?}\n  Rust: {:?}",
                a.len(),
                b.len(),
                &a[at..(at + 3).min(a.len())],
                &b[at..(at + 3).min(b.len())]
            );
        }
    }
    eprintln!(
        "{name}: the C and Rust skeletons make the same {compared} calls on {np} ranks {args:?}"
    );
}

/// The whole check for one trace.
fn skeleton(name: &str, trace: &Path) {
    let base = scratch(&format!("rust-skeleton-{name}"));
    let dir = base.join("skel-rs");
    build(name, trace, "rust", &dir);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("skeleton.json")).unwrap()).unwrap();
    assert_eq!(doc["lang"].as_str(), Some("rust"));
    let ranks = doc["n_ranks"].as_u64().unwrap();
    for f in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "run.sh",
        "job.slurm",
        "src/rt/mod.rs",
        "src/rt/report.rs",
        "src/rt/calls.rs",
    ] {
        assert!(dir.join(f).is_file(), "{name}: {f} missing");
    }

    insta::with_settings!({
        description => format!("mpiskel build --lang rust {name} (src/main.rs)"),
        omit_expression => true,
        snapshot_path => root().join("tests").join("snapshots"),
    }, {
        insta::assert_snapshot!(format!("rust__{}", name.replace('.', "_")), source_for_snapshot(&dir));
    });

    cargo(&dir, "openmpi", &["clippy", "--release", "--quiet", "--", "-D", "warnings"]);
    {
        let _lock = mpi_lock();
        check_report(&run(&dir, "openmpi", 300), "openmpi", ranks);
        check_report(&run(&dir, "mpich", 600), "mpich", ranks);
    }

    let c_dir = base.join("skel-c");
    build(name, trace, "c", &c_dir);
    equivalent(name, &c_dir, ranks, &[]);
    // A main loop of time steps asked for more steps than its table (`--iterations`) reads the
    // table over again, in both languages alike.
    let steps = doc["program"]["classes"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "main_loop" && !p["steps"].is_null());
    if steps {
        let twice = 2 * doc["scaling"]["main_run"].as_u64().unwrap() + 1;
        equivalent(name, &c_dir, ranks, &["--iterations".into(), twice.to_string()]);
    }
}

skeleton_fixture_tests!(skeleton);

/// The comparison sees a changed size, peer or call kind, and a missing call.
#[test]
fn the_equivalence_check_detects_a_difference() {
    let base = scratch("rust-skeleton-equivalence-check");
    let c_dir = base.join("skel-c");
    build("ring", &fixture("ring"), "c", &c_dir);
    let out = Command::new("mpicc.openmpi")
        .current_dir(&c_dir)
        .args(["-O2", "-o", "skeleton-equivalence", "skeleton.c"])
        .args(mpiskel_emit::c::RUNTIME_SOURCES)
        .arg("-lm")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let set = {
        let _lock = mpi_lock();
        trace(&c_dir.join("skeleton-equivalence"), &[], 4, &base.join("c.trace"))
    };
    let events = &set.ranks[0].events;
    let reference = actions(events);
    let p2p = events
        .iter()
        .position(|e| matches!(e.payload, Payload::P2p { peer: Peer::Rank(_), .. }))
        .expect("the ring sends");
    let mutate = |f: &dyn Fn(&mut Event)| {
        let mut v = events.clone();
        f(&mut v[p2p]);
        actions(&v)
    };
    assert_ne!(
        reference,
        mutate(&|e| if let Payload::P2p { bytes, .. } = &mut e.payload {
            *bytes += 1
        })
    );
    assert_ne!(
        reference,
        mutate(&|e| if let Payload::P2p { peer, .. } = &mut e.payload {
            *peer = Peer::Rank(Rank(9))
        })
    );
    assert_ne!(reference, mutate(&|e| e.op = mpiskel_trace::Op::Ssend));
    let mut fewer = events.clone();
    fewer.remove(p2p);
    assert_ne!(reference, actions(&fewer));
}

/// The skeleton's own `run.sh` builds with cargo and runs it (here under MPICH, in its own
/// target folder).
#[test]
fn run_script_builds_and_runs_the_rust_skeleton() {
    let base = scratch("rust-skeleton-run-sh");
    let dir = base.join("ring");
    build("ring", &fixture("ring"), "rust", &dir);
    let _lock = mpi_lock();
    let mut cmd = Command::new(dir.join("run.sh"));
    cmd.env("MPICC", "mpicc.mpich")
        .env("MPIRUN", "mpirun.mpich")
        .env("CARGO_TARGET_DIR", target_dir("mpich"));
    let out = run_with_timeout(cmd, 900);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("mpiskel ring: skeleton"), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["ranks"].as_u64(), Some(4));
}

/// Rust skeletons do not run under SimGrid; the error says so and how to get one that does.
#[test]
fn a_rust_skeleton_refuses_smpi_with_a_clear_error() {
    let base = scratch("rust-skeleton-smpi");
    let dir = base.join("ring");
    build("ring", &fixture("ring"), "rust", &dir);
    let out = mpiskel().args(["run", "--mpi", "smpi"]).arg(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--lang c"), "{err}");
}

/// A program whose one long computation differs between ranks (NPB EP): losing the same seconds
/// on every rank is not enough, so the blocks without drawn deviations run a share of what they
/// keep (`compute_shrink`); the Rust skeleton sets it, passes clippy, runs under OpenMPI, and
/// adds what it did not run back to its prediction.
#[test]
fn a_shrunk_computation_is_set_and_runs_in_rust() {
    let base = scratch("rust-skeleton-shrink");
    let dir = base.join("skel-rs");
    build("ep.W.16", &support::npb("ep.W.16"), "rust", &dir);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("skeleton.json")).unwrap()).unwrap();
    let shrink = doc["scaling"]["compute_shrink"].as_f64().expect("a shrink");
    assert!(shrink > 0.0 && shrink < 1.0, "{shrink}");
    let main = std::fs::read_to_string(dir.join("src").join("main.rs")).unwrap();
    assert!(main.contains("sk.set_compute_shrink("), "no shrink set");
    cargo(&dir, "openmpi", &["clippy", "--release", "--quiet", "--", "-D", "warnings"]);
    let _lock = mpi_lock();
    let r = run(&dir, "openmpi", 300);
    check_report(&r, "openmpi", 16);
    // The removed computation, shrunk part included, is added back to some phase.
    let restored =
        r["phases"].as_array().unwrap().iter().any(|p| p["restored_s"].as_f64() > Some(0.0));
    assert!(restored, "{r}");
}

/// The drawn set-up block cut to a short part on every rank (`compute_drawn_keep`; the C test
/// is in `tests/skeleton.rs`): the Rust skeleton makes the call, passes clippy, runs under
/// OpenMPI and adds back what it did not run.
#[test]
fn a_drawn_set_up_block_is_cut_to_a_short_part_in_rust() {
    let base = scratch("rust-drawn-set-up");
    let trace = support::drawn_set_up_trace(&base.join("trace"), 8);
    let dir = base.join("skel-rs");
    build("drawn-set-up", &trace, "rust", &dir);
    let main = std::fs::read_to_string(dir.join("src").join("main.rs")).unwrap();
    assert!(main.contains("sk.compute_drawn_keep("), "the set-up is cut:\n{main}");
    cargo(&dir, "openmpi", &["clippy", "--release", "--quiet", "--", "-D", "warnings"]);
    let _lock = mpi_lock();
    let r = run(&dir, "openmpi", 300);
    check_report(&r, "openmpi", 8);
    let setup = r["phases"].as_array().unwrap().iter().find(|p| p["name"] == "setup").cloned();
    let restored = setup.and_then(|p| p["restored_s"].as_f64()).unwrap_or(0.0);
    assert!(restored > 0.01, "the set-up's skipped computation is added back: {r}");
}

/// The Rust skeleton of NPB fixture `name` uses `table` (a per-rank table the C skeleton uses
/// too), passes clippy, and makes the same calls as the C skeleton on all `np` ranks.
fn same_calls_with_a_table(name: &str, folder: &str, table: &str, np: u64) {
    let base = scratch(folder);
    let dir = base.join("skel-rs");
    build(name, &support::npb(name), "rust", &dir);
    let main = std::fs::read_to_string(dir.join("src").join("main.rs")).unwrap();
    assert!(main.contains(table), "{name}: no {table}");
    cargo(&dir, "openmpi", &["clippy", "--release", "--quiet", "--", "-D", "warnings"]);
    cargo(&dir, "openmpi", &["build", "--release", "--quiet"]);
    let c_dir = base.join("skel-c");
    build(name, &support::npb(name), "c", &c_dir);
    equivalent(name, &c_dir, np, &[]);
}

/// Where the ranks of a class send different sizes (NPB SP's cells), the Rust skeleton sends
/// each rank's own from its table, as the C skeleton does: both make the same calls, sizes
/// included, on all sixteen ranks.
#[test]
fn per_rank_sizes_are_sent_in_rust_as_in_c() {
    same_calls_with_a_table(
        "sp.S.16",
        "rust-skeleton-sp-sizes",
        "SEND_SIZE[0][k.all.rank() as usize]",
        16,
    );
}

/// Where only some ranks of a class make a call (NPB MG's coarse levels, folded into one class
/// with guards), the Rust skeleton reads the same presence table as the C skeleton: both make
/// the same calls on all sixteen ranks, the guarded ones only where the trace made them.
#[test]
fn guarded_calls_are_made_in_rust_as_in_c() {
    same_calls_with_a_table(
        "mg.S.16",
        "rust-skeleton-mg-guards",
        "PRESENT[0][k.all.rank() as usize]",
        16,
    );
}

/// A wait that had no request to complete (the multigrid fixture program's coarsest level,
/// where no rank exchanges: `MPI_Waitall` over none) is the same empty wait in Rust as in C, not
/// a probe: both skeletons make the same calls on all sixteen ranks, probes included.
#[test]
fn an_empty_wait_is_made_in_rust_as_in_c() {
    let base = scratch("rust-skeleton-empty-wait");
    let trace = base.join("trace");
    support::trace_program(support::Lib::OpenMpi, 16, "multigrid", &["40", "4096", "50"], &trace);
    let dir = base.join("skel-rs");
    build("multigrid", &trace, "rust", &dir);
    let main = std::fs::read_to_string(dir.join("src").join("main.rs")).unwrap();
    assert!(main.contains("sk.wait_none();"), "no empty wait");
    assert!(!main.contains("immediate_probe()"), "a wait over nothing became a probe");
    cargo(&dir, "openmpi", &["clippy", "--release", "--quiet", "--", "-D", "warnings"]);
    cargo(&dir, "openmpi", &["build", "--release", "--quiet"]);
    let c_dir = base.join("skel-c");
    build("multigrid", &trace, "c", &c_dir);
    equivalent("multigrid", &c_dir, 16, &[]);
}
