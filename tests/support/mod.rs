//! Shared helpers of the integration tests: paths, building the fixture programs, running
//! `mpiskel trace` under a real MPI library.
// Each test binary uses part of these helpers.
#![allow(dead_code, unused_macros, unused_imports)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared` beside the repository, or `$MPISKEL_SHARED`.
pub fn shared() -> PathBuf {
    let p = std::env::var_os("MPISKEL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("..").join("shared"));
    assert!(
        p.join("fixtures").is_dir(),
        "shared fixtures not found at {} (set MPISKEL_SHARED)",
        p.display()
    );
    p
}

pub fn mpiskel() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mpiskel"));
    c.env("MPISKEL_CACHE", root().join("target").join("test-tracer-cache"));
    c
}

/// Scratch space under `target/` that survives the test for inspection.
pub fn scratch(name: &str) -> PathBuf {
    let d = root().join("target").join("test-scratch").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// MPI runs share two cores: one at a time.
pub fn mpi_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lib {
    OpenMpi,
    Mpich,
}

impl Lib {
    pub fn name(self) -> &'static str {
        match self {
            Lib::OpenMpi => "openmpi",
            Lib::Mpich => "mpich",
        }
    }

    /// The launcher command line for `np` ranks.
    pub fn mpirun(self, np: usize) -> Vec<String> {
        let mut v = vec![format!("mpirun.{}", self.name())];
        if self == Lib::OpenMpi {
            v.extend(["--oversubscribe".into(), "--allow-run-as-root".into()]);
        }
        v.extend(["-n".into(), np.to_string()]);
        v
    }
}

/// Builds the fixture programs for `lib` once per test binary; returns their directory.
pub fn fixture_bin(lib: Lib) -> PathBuf {
    static BUILT: OnceLock<Mutex<Vec<Lib>>> = OnceLock::new();
    let out = root().join("target").join("fixture-programs").join(lib.name());
    let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut done = built.lock().unwrap_or_else(|e| e.into_inner());
    if !done.contains(&lib) {
        let st = Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(root().join("fixtures").join("programs"))
            .arg(format!("MPI={}", lib.name()))
            .arg(format!("OUT={}", out.display()))
            .status()
            .expect("make runs");
        assert!(st.success(), "building the fixture programs for {} failed", lib.name());
        done.push(lib);
    }
    out
}

/// Traces `program args` on `np` ranks under `lib` into `dir`; panics with the output on failure.
pub fn trace_program(lib: Lib, np: usize, program: &str, args: &[&str], dir: &Path) {
    trace_program_with(lib, np, program, args, dir, &[]);
}

/// [`trace_program`] with options for `mpiskel trace` (`--cpu-time`, `--time-only`); returns
/// the command's output (the program's own standard output among it).
pub fn trace_program_with(
    lib: Lib,
    np: usize,
    program: &str,
    args: &[&str],
    dir: &Path,
    options: &[&str],
) -> std::process::Output {
    let bin = fixture_bin(lib).join(program);
    let mut cmd = mpiskel();
    cmd.arg("trace").arg("--force").args(options).arg("-o").arg(dir).arg("--");
    cmd.args(lib.mpirun(np)).arg(&bin).args(args);
    let _guard = mpi_lock();
    let out = run_with_timeout(cmd, 240);
    assert!(
        out.status.success(),
        "tracing {program} under {} failed:\n{}\n{}",
        lib.name(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a skeleton folder with `mpiskel run --json --mpi MPI --timeout TIMEOUT`, `extra`
/// arguments before the folder; returns its report. The whole command may take `slack`
/// seconds beyond the skeleton's own timeout (a Rust skeleton is compiled first).
pub fn run_skeleton(
    dir: &Path,
    mpi: &str,
    timeout: u64,
    slack: u64,
    extra: &[&OsStr],
) -> serde_json::Value {
    let mut cmd = mpiskel();
    cmd.args(["run", "--json", "--mpi", mpi, "--timeout", &timeout.to_string()]);
    cmd.args(extra).arg(dir);
    let out = run_with_timeout(cmd, timeout + slack);
    assert!(
        out.status.success(),
        "running {} under {mpi}:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Checks a skeleton's report (C or Rust, the same format) from a run on `ranks` ranks under
/// `mpi`: times measured, predictions finite and the phases there.
pub fn check_report(r: &serde_json::Value, mpi: &str, ranks: u64) {
    let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{mpi}: report lacks {k}: {r}"));
    assert_eq!(r["ranks"].as_u64(), Some(ranks), "{mpi}: {r}");
    assert!(f("skeleton_s") > 0.0, "{mpi}: {r}");
    assert!(
        // The prediction scales the phases up; time outside them (a few calls to the clock) is
        // not in it.
        f("predicted_s").is_finite() && f("predicted_s") >= f("skeleton_s") * 0.9,
        "{mpi}: {r}"
    );
    assert!(f("predicted_ratio_s").is_finite() && f("predicted_ratio_s") > 0.0, "{mpi}: {r}");
    assert!(f("compute_rate") > 0.0, "{mpi}: {r}");
    assert!(!r["phases"].as_array().expect("phases").is_empty(), "{mpi}: {r}");
    assert_eq!(r["smpi"].as_bool(), Some(mpi == "smpi"), "{mpi}: {r}");
}

/// `mpiskel simulate --json --platform PLATFORM EXTRA INPUT` (a trace or a skeleton folder); its
/// report.
pub fn simulate_json(input: &Path, platform: &Path, extra: &[&str]) -> serde_json::Value {
    let out = mpiskel()
        .args(["simulate", "--json", "--platform"])
        .arg(platform)
        .args(extra)
        .arg(input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs a command, killing it after `secs` seconds.
pub fn run_with_timeout(mut cmd: Command, secs: u64) -> std::process::Output {
    let mut wrapped = Command::new("timeout");
    wrapped.arg("--kill-after=10").arg(secs.to_string()).arg(cmd.get_program());
    wrapped.args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    let _ = &mut cmd;
    wrapped.output().expect("command runs")
}

/// A recorded trace of `fixtures/traces`.
pub fn fixture(name: &str) -> PathBuf {
    root().join("fixtures").join("traces").join(name)
}

/// An NPB trace of `../shared/fixtures/npb`.
pub fn npb(name: &str) -> PathBuf {
    shared().join("fixtures").join("npb").join(name).join("trace.txt")
}

/// One test per skeleton fixture (every recorded program and NPB BT, CG, LU S.16), each calling
/// `$check(name, trace)`.
macro_rules! skeleton_fixture_tests {
    ($check:ident) => {
        skeleton_fixture_tests!(@each $check;
            ring => "ring", fixture("ring");
            ring_fortran => "ring-fortran", fixture("ring-fortran");
            halo2d_periodic => "halo2d-periodic-4x4", fixture("halo2d-periodic-4x4");
            halo2d_open => "halo2d-open-4x4", fixture("halo2d-open-4x4");
            halo3d => "halo3d-2x2x2", fixture("halo3d-2x2x2");
            wavefront => "wavefront-4x4", fixture("wavefront-4x4");
            collectives => "collectives", fixture("collectives");
            subcomm => "subcomm-2x3", fixture("subcomm-2x3");
            p2pmodes => "p2pmodes", fixture("p2pmodes");
            callrate => "callrate", fixture("callrate");
            lammps_melt => "lammps-melt", fixture("lammps-melt");
            anysource => "anysource", fixture("anysource");
            irregular => "irregular", fixture("irregular");
            eager => "eager", fixture("eager");
            tagged => "tagged", fixture("tagged");
            scf => "scf", fixture("scf");
            npb_bt => "bt.S.16", npb("bt.S.16");
            npb_cg => "cg.S.16", npb("cg.S.16");
            npb_lu => "lu.S.16", npb("lu.S.16");
        );
    };
    (@each $check:ident; $($test:ident => $name:literal, $trace:expr;)*) => {
        $(
            #[test]
            fn $test() {
                $check($name, &$trace);
            }
        )*
    };
}
pub(crate) use skeleton_fixture_tests;

/// Writes a SimGrid trace of `n` ranks into `base`: a set-up block whose duration each rank
/// draws (the class's ranks differ by up to 8 %, in no order their weights follow), before a
/// barrier; then a ring of 40 iterations. Returns the index file.
pub fn drawn_set_up_trace(base: &Path, n: u32) -> PathBuf {
    std::fs::create_dir_all(base).unwrap();
    let mut index = String::new();
    for r in 0..n {
        let setup = 20_000_000 + 400_000 * u64::from((r * 5) % 7);
        let mut t = format!("{r} init\n{r} compute {setup}\n{r} barrier\n");
        for _ in 0..40 {
            t.push_str(&format!("{r} compute 2000000\n"));
            t.push_str(&format!("{r} send {} 0 1024\n", (r + 1) % n));
            t.push_str(&format!("{r} recv {} 0 1024\n", (r + n - 1) % n));
        }
        t.push_str(&format!("{r} allreduce 8 0\n{r} finalize\n"));
        std::fs::write(base.join(format!("rank{r}.txt")), t).unwrap();
        index.push_str(&format!("rank{r}.txt\n"));
    }
    std::fs::write(base.join("trace.txt"), &index).unwrap();
    base.join("trace.txt")
}

/// Programs up to this many lines are snapshotted whole; longer ones in focus ([`focused`]).
pub const WHOLE_PROGRAM_LINES: usize = 720;

/// What a snapshot of the emitted program `text` (C or Rust) holds: the whole program where it
/// is short; otherwise its head comment (trace, ranks, phases, decisions), the main loop of its
/// first class (`main_loop` or `c0_main_loop`, where it has one) and the first class's program
/// (the order of its phases) — one loop and one class's nest, which a reviewer can read, in
/// place of thousands of lines of tables.
pub fn focused(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= WHOLE_PROGRAM_LINES {
        return lines.join("\n");
    }
    let head_end = if lines[0].starts_with("//!") {
        lines.iter().position(|l| !l.starts_with("//!")).unwrap_or(lines.len())
    } else {
        lines.iter().position(|l| *l == " */").map_or(0, |k| k + 1)
    };
    let function = |name: &str| -> Option<&[&str]> {
        let start = lines.iter().position(|l| {
            l.starts_with(&format!("static void {name}(")) || l.starts_with(&format!("fn {name}("))
        })?;
        let end = start + lines[start..].iter().position(|l| *l == "}")?;
        Some(&lines[start..=end])
    };
    let mut out: Vec<String> = lines[..head_end].iter().map(|l| l.to_string()).collect();
    out.push(format!("[… {} lines in all; the first class's main loop and program:]", lines.len()));
    for name in ["main_loop", "c0_main_loop", "program", "c0_program"] {
        if let Some(body) = function(name) {
            out.push(String::new());
            out.extend(body.iter().map(|l| l.to_string()));
        }
    }
    out.join("\n")
}
