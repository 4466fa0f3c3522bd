//! The command line: help, refusals, errors that name file, rank and position, and a traced
//! process that dies.

mod support;

use mpiskel_trace::{native, Rank, TraceError};
use support::{fixture_bin, mpi_lock, mpiskel, root, run_with_timeout, scratch, Lib};

#[test]
fn every_subcommand_has_help_with_examples() {
    for sub in [
        "trace",
        "inspect",
        "tracer",
        "logicalize",
        "compress",
        "build",
        "run",
        "export",
        "validate",
        "retune",
        "synth",
        "report",
        "check",
        "simulate",
        "man",
        "completions",
    ] {
        let out = mpiskel().args([sub, "--help"]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Examples:") || text.contains("Example:"), "{sub}: {text}");
    }
    let out = mpiskel().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Examples:") && text.contains("mpiskel build"), "{text}");
    // Every command's one-line summary fits on its line: none is a paragraph cut by wrapping.
    for line in text.lines().skip_while(|l| !l.starts_with("Commands:")).skip(1) {
        if line.is_empty() {
            break;
        }
        assert!(line.starts_with("  ") && line.chars().nth(2) != Some(' '), "{line:?} in:\n{text}");
    }
    let out = mpiskel().output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no subcommand is a usage error");
}

/// What `make man` writes: mpiskel(1) and a page per command, each a roff page that names its
/// command and its options, and completion scripts for bash, zsh and fish that know every
/// command. (`make install` copies these files beside the binary `cargo install` puts on PATH.)
#[test]
fn manual_pages_and_completions_cover_every_command() {
    let dir = scratch("man");
    let _ = std::fs::remove_dir_all(&dir);
    let out = mpiskel().args(["man", "-o"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let help =
        String::from_utf8_lossy(&mpiskel().arg("--help").output().unwrap().stdout).to_string();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 15 && commands.contains(&"build"), "{commands:?}");
    let page = |name: &str| std::fs::read_to_string(dir.join(format!("{name}.1"))).unwrap();
    assert!(page("mpiskel").starts_with(".ie") || page("mpiskel").contains(".TH mpiskel"));
    for c in &commands {
        let text = page(&format!("mpiskel-{c}"));
        assert!(text.contains(&format!(".TH mpiskel-{c}")), "mpiskel-{c}.1:\n{text}");
        assert!(text.contains(".SH SYNOPSIS") && text.contains(".SH OPTIONS"), "mpiskel-{c}.1");
    }
    assert!(page("mpiskel-build").contains("max\\-error"), "build's page lists --max-error");
    for shell in ["bash", "zsh", "fish"] {
        let out = mpiskel().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        for c in &commands {
            assert!(script.contains(c), "{shell} completion of {c}");
        }
        assert!(script.contains("max-error"), "{shell} completes build's options");
    }
    let bad = mpiskel().args(["completions", "cmd.exe"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn inspect_reports_a_truncated_file_with_rank_and_offset() {
    let dir = scratch("cli-truncated");
    let src = root().join("fixtures/traces/ring");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
    let f = dir.join(native::rank_file_name(Rank(2)));
    let len = std::fs::metadata(&f).unwrap().len();
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..(len as usize) / 2]).unwrap();
    let out = mpiskel().arg("inspect").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rank-2.mpt") && err.contains("rank 2") && err.contains("byte"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn inspect_refuses_what_is_not_a_trace() {
    let dir = scratch("cli-not-a-trace");
    let f = dir.join("x.bin");
    std::fs::write(&f, [0u8, 159, 146, 150, 0, 1, 2, 3, 4]).unwrap();
    let out = mpiskel().arg("inspect").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an mpiskel trace"));
    let out = mpiskel().arg("inspect").arg(dir.join("missing")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// A compressed trace (the shared fixtures ship their large traces as `.tar.gz`) is named as
/// such, with what to do; `build`, which wraps the reader's error in its own, says it once.
#[test]
fn a_compressed_trace_is_named_as_such_and_every_error_is_said_once() {
    let dir = scratch("cli-compressed");
    let f = dir.join("trace.tar.gz");
    std::fs::write(&f, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3]).unwrap();
    let out = dir.join("out");
    for (cmd, extra) in [("inspect", vec![]), ("build", vec!["-o".as_ref(), out.as_os_str()])] {
        let out = mpiskel().arg(cmd).arg(&f).args(extra).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("gzip-compressed") && err.contains("tar xf"), "{cmd}: {err}");
        let error = err.lines().find(|l| l.starts_with("error:")).unwrap_or_default();
        assert_eq!(error.matches("trace.tar.gz").count(), 1, "{cmd}: {err}");
    }
}

#[test]
fn trace_refuses_to_overwrite_without_force() {
    let dir = scratch("cli-exists");
    let out = mpiskel().arg("trace").arg("-o").arg(&dir).args(["--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
}

#[test]
fn a_dying_rank_leaves_a_readable_incomplete_trace_openmpi() {
    dying_rank(Lib::OpenMpi);
}

#[test]
fn a_dying_rank_leaves_a_readable_incomplete_trace_mpich() {
    dying_rank(Lib::Mpich);
}

fn dying_rank(lib: Lib) {
    let bin = fixture_bin(lib).join("crash");
    let base = scratch(&format!("cli-crash-{}", lib.name()));
    let out_dir = base.join("crash.trace");
    let mut cmd = mpiskel();
    cmd.arg("trace").arg("-o").arg(&out_dir).arg("--").args(lib.mpirun(2)).arg(&bin).arg("4");
    let out = {
        let _g = mpi_lock();
        run_with_timeout(cmd, 120)
    };
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("crash.trace.partial"), "{err}");
    assert!(!out_dir.exists(), "nothing is written at the output path of a failed run");
    let f = base.join("crash.trace.partial").join(native::rank_file_name(Rank(1)));
    match native::read_rank_file(&f) {
        Err(TraceError::Incomplete { rank, events, .. }) => {
            assert_eq!(rank, Some(Rank(1)));
            assert_eq!(events, 5, "Init and four Allreduce calls were flushed before the abort");
        }
        other => panic!("expected an incomplete trace, got {other:?}"),
    }
}

/// `--instructions`: where the kernel allows perf_event_open every compute gap carries an
/// instruction count; where it refuses, none does and meta.json says so.
#[test]
fn instruction_counts_are_present_or_recorded_as_absent() {
    let lib = Lib::OpenMpi;
    let dir = scratch("cli-instructions");
    let bin = fixture_bin(lib).join("ring");
    let mut cmd = mpiskel();
    cmd.args(["trace", "--force", "--instructions", "-o"])
        .arg(&dir)
        .arg("--")
        .args(lib.mpirun(2))
        .arg(&bin)
        .arg("5");
    let out = {
        let _g = mpi_lock();
        run_with_timeout(cmd, 120)
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let set = mpiskel_trace::TraceSet::open(&dir, &Default::default()).unwrap();
    let counted = set.meta.as_ref().unwrap().instructions;
    for rt in &set.ranks {
        assert_eq!(rt.info.has_instructions, counted);
        for e in rt.events.iter().skip(1) {
            assert_eq!(
                matches!(e.gap_work, Some(mpiskel_trace::Work::Instructions(_))),
                counted,
                "rank {} {}",
                rt.rank,
                e.op
            );
        }
    }
    if !counted {
        assert!(String::from_utf8_lossy(&out.stderr).contains("refused instruction counting"));
    }
}

/// A SimGrid index of 25,000 lines naming one empty action file is a run of 25,000 ranks
/// without calls. Every rank's `MPI_COMM_WORLD` is one shared member list, so reading it takes
/// memory linear in the ranks (it took 2.4 GB, a list per rank); `inspect`, `logicalize` and
/// `build` finish under a 1 GB address-space limit.
#[test]
fn a_large_index_of_empty_ranks_is_read_in_linear_memory() {
    let dir = scratch("ti-index-25000");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("empty.txt"), "").unwrap();
    std::fs::write(dir.join("trace.txt"), "empty.txt\n".repeat(25_000)).unwrap();
    for args in [&["inspect"][..], &["logicalize"], &["build", "-q", "--force", "-o", "skel"]] {
        // util-linux's prlimit sets the limit for the command it runs.
        let mut cmd = std::process::Command::new("prlimit");
        cmd.current_dir(&dir).arg(format!("--as={}", 1u64 << 30));
        cmd.arg(env!("CARGO_BIN_EXE_mpiskel")).args(args).arg("trace.txt");
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "mpiskel {args:?} under 1 GB: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn synth_writes_a_trace_that_builds_and_refuses_to_overwrite() {
    let dir = scratch("synth-cli");
    let trace = dir.join("tree.trace");
    let synth = |extra: &[&str]| {
        mpiskel()
            .args(["synth", "-o"])
            .arg(&trace)
            .args(["--pattern", "tree", "--ranks", "12", "--iterations", "30", "--irregular"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = synth(&["--force"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    // The summary names the run it wrote.
    assert!(text.contains("12 ranks"), "{text}");
    let again = synth(&[]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    let skel = dir.join("tree.skel");
    let out = mpiskel()
        .args(["build", "-q", "--force"])
        .arg(&trace)
        .arg("-o")
        .arg(&skel)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(skel.join("skeleton.c").is_file());
    let bad = mpiskel()
        .args(["synth", "-o"])
        .arg(dir.join("none"))
        .args(["--ranks", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(!dir.join("none").exists());
}

/// `--json` prints the figures a command reports as one JSON document on stdout, and they agree
/// with what it wrote: synth's counts with the trace, build's with its skeleton.json.
#[test]
fn synth_and_build_print_their_figures_as_json() {
    let dir = scratch("json-cli");
    let trace = dir.join("ring.trace");
    let out = mpiskel()
        .args(["synth", "--force", "--json", "-o"])
        .arg(&trace)
        .args(["--pattern", "stencil1d", "--ranks", "6", "--iterations", "40"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let synth: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(synth["ranks"], 6);
    assert!(synth["calls"].as_u64().unwrap() >= 6 * 40, "{synth}");
    let skel = dir.join("ring.skel");
    let out = mpiskel()
        .args(["build", "-q", "--force", "--json"])
        .arg(&trace)
        .arg("-o")
        .arg(&skel)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let built: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(skel.join("skeleton.json")).unwrap())
            .unwrap();
    assert_eq!(built["ranks"], doc["n_ranks"]);
    assert_eq!(built["topology"], doc["topology"]);
    assert_eq!(built["factor"], doc["scaling"]["factor"]);
    assert_eq!(built["main_full"], doc["scaling"]["main_full"]);
    assert!(built["notes"].is_array(), "{built}");
}

/// Progress bars and spinners are drawn where stderr is a terminal (here one made by
/// `script`), and never in a log: a build with stderr piped prints its stage lines only.
#[test]
fn progress_bars_show_on_a_terminal_and_never_in_a_log() {
    let trace = root().join("fixtures/traces/ring");
    let dir = scratch("cli-progress");
    let skel = dir.join("skel");
    let command = format!(
        "{} build --force {} -o {}",
        env!("CARGO_BIN_EXE_mpiskel"),
        trace.display(),
        skel.display()
    );
    let typescript = dir.join("typescript");
    let out = std::process::Command::new("script")
        .args(["-qec", &command])
        .arg(&typescript)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("finding loops, cutting them and checking the program"), "{shown}");
    assert!(shown.contains("reading"), "{shown}");
    let out =
        mpiskel().args(["build", "--force"]).arg(&trace).arg("-o").arg(&skel).output().unwrap();
    assert!(out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("] program checked:"), "{log}");
    assert!(!log.contains('\u{1b}') && !log.contains("finding loops, cutting"), "{log}");
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    // `mpiskel logicalize --json` of NPB BT S 16 writes megabytes; the reader takes a few bytes
    // and closes the pipe, as `| head -1` does. The process ends with SIGPIPE's status, no panic.
    let mut child = mpiskel()
        .args(["logicalize", "--json"])
        .arg(support::shared().join("fixtures/npb/bt.S.16"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}
