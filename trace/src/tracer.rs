//! The PMPI tracer: its C source (embedded, so the `mpiskel` binary carries it), how to build it
//! for an MPI implementation, and how to pass it through an MPI launcher.
//!
//! OpenMPI and MPICH have different ABIs, so the tracer is built once per implementation with
//! that implementation's `mpicc`, and cached by a hash of the source.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::{Result, TraceError};

/// The tracer's C source, by file name: `mpiskel_tracer.c`, compiled, includes the others in
/// order as one translation unit (the state, clocks and buffer; the records, start and end;
/// point-to-point calls; collectives and communicators; OpenMPI's Fortran entry points).
pub const TRACER_SOURCES: [(&str, &str); 6] = [
    ("mpiskel_tracer.c", include_str!("../tracer/mpiskel_tracer.c")),
    ("mpiskel_tracer_state.h", include_str!("../tracer/mpiskel_tracer_state.h")),
    ("mpiskel_tracer_records.h", include_str!("../tracer/mpiskel_tracer_records.h")),
    ("mpiskel_tracer_p2p.h", include_str!("../tracer/mpiskel_tracer_p2p.h")),
    ("mpiskel_tracer_coll.h", include_str!("../tracer/mpiskel_tracer_coll.h")),
    ("mpiskel_fortran_ompi.h", include_str!("../tracer/mpiskel_fortran_ompi.h")),
];

/// An MPI implementation the tracer can be built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mpi {
    /// Open MPI (Debian: `openmpi-bin`, `libopenmpi-dev`).
    OpenMpi,
    /// MPICH (Debian: `mpich`, `libmpich-dev`).
    Mpich,
}

impl Mpi {
    /// The name used on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::Mpich => "mpich",
        }
    }

    /// Parses `openmpi`/`ompi` or `mpich`.
    pub fn parse(s: &str) -> Option<Mpi> {
        match s.to_ascii_lowercase().as_str() {
            "openmpi" | "ompi" | "open-mpi" => Some(Mpi::OpenMpi),
            "mpich" => Some(Mpi::Mpich),
            _ => None,
        }
    }

    /// The compiler wrapper that selects this implementation (Debian's suffixed names), unless
    /// `MPISKEL_MPICC_OPENMPI` / `MPISKEL_MPICC_MPICH` name another.
    pub fn mpicc(self) -> String {
        let var = match self {
            Mpi::OpenMpi => "MPISKEL_MPICC_OPENMPI",
            Mpi::Mpich => "MPISKEL_MPICC_MPICH",
        };
        std::env::var(var).unwrap_or_else(|_| format!("mpicc.{}", self.name()))
    }
}

impl fmt::Display for Mpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// FNV-1a of the tracer sources: names the cached library so a new source is rebuilt.
fn source_hash() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in TRACER_SOURCES.iter().flat_map(|(_, text)| text.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Where built tracers are cached: `$MPISKEL_CACHE`, else `$XDG_CACHE_HOME/mpiskel`, else
/// `~/.cache/mpiskel`, else the system temporary directory.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MPISKEL_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("mpiskel");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache").join("mpiskel");
    }
    std::env::temp_dir().join("mpiskel")
}

/// Builds the tracer for `mpi` into `dir` (or reuses the one built from the same source) and
/// returns the shared library's path.
pub fn build(mpi: Mpi, dir: &Path) -> Result<PathBuf> {
    let lib = dir.join(format!("libmpiskel-{}-{:016x}.so", mpi.name(), source_hash()));
    if lib.is_file() {
        return Ok(lib);
    }
    std::fs::create_dir_all(dir).map_err(|e| TraceError::io(dir, e))?;
    let src_dir = dir.join(format!("src-{:016x}", source_hash()));
    std::fs::create_dir_all(&src_dir).map_err(|e| TraceError::io(&src_dir, e))?;
    for (name, text) in TRACER_SOURCES {
        let p = src_dir.join(name);
        std::fs::write(&p, text).map_err(|e| TraceError::io(&p, e))?;
    }
    // One temporary file per build: threads of one process that build it at once must not
    // write one file together.
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.{}.{n}.tmp",
        lib.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let mpicc = mpi.mpicc();
    let out = Command::new(&mpicc)
        .args(["-O2", "-fPIC", "-shared", "-o"])
        .arg(&tmp)
        .arg(src_dir.join("mpiskel_tracer.c"))
        .output()
        .map_err(|e| TraceError::TracerBuild {
            mpi: mpi.name().into(),
            reason: format!(
                "cannot run {mpicc}: {e} (is the {mpi} development package installed?)"
            ),
        })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(TraceError::TracerBuild {
            mpi: mpi.name().into(),
            reason: format!("{mpicc} failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
        });
    }
    std::fs::rename(&tmp, &lib).map_err(|e| TraceError::io(&lib, e))?;
    Ok(lib)
}

/// Launchers that start MPI processes and take options before the program.
const OPENMPI_LAUNCHERS: &[&str] = &["mpirun.openmpi", "mpiexec.openmpi", "orterun"];
const MPICH_LAUNCHERS: &[&str] = &["mpirun.mpich", "mpiexec.mpich", "mpiexec.hydra"];
const GENERIC_LAUNCHERS: &[&str] = &["mpirun", "mpiexec"];

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Finds `prog` on `PATH` (or as given, if it has a slash).
fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        return Some(PathBuf::from(prog));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(prog)).find(|p| p.is_file())
}

/// Which MPI a command line uses: by the launcher's name (following symlinks such as Debian's
/// alternatives), by asking the launcher for its version, or, for a program started directly,
/// by the MPI library it links.
pub fn detect_mpi(cmd: &[String]) -> Option<Mpi> {
    let argv0 = cmd.first()?;
    let by_name = |name: &str| {
        if OPENMPI_LAUNCHERS.contains(&name) || name.contains("openmpi") {
            Some(Mpi::OpenMpi)
        } else if MPICH_LAUNCHERS.contains(&name) || name.contains("mpich") {
            Some(Mpi::Mpich)
        } else {
            None
        }
    };
    if let Some(m) = by_name(basename(argv0)) {
        return Some(m);
    }
    let path = which(argv0)?;
    if let Ok(real) = std::fs::canonicalize(&path) {
        if let Some(m) = by_name(&real.file_name()?.to_string_lossy()) {
            return Some(m);
        }
    }
    if GENERIC_LAUNCHERS.contains(&basename(argv0)) {
        let out = Command::new(&path).arg("--version").output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        if text.contains("Open MPI") || text.contains("OpenRTE") {
            return Some(Mpi::OpenMpi);
        }
        if text.contains("HYDRA") || text.contains("MPICH") {
            return Some(Mpi::Mpich);
        }
        return None;
    }
    let out = Command::new("ldd").arg(&path).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("libmpi.so") {
        Some(Mpi::OpenMpi)
    } else if text.contains("libmpich") || text.contains("libmpi.so.12") {
        Some(Mpi::Mpich)
    } else {
        None
    }
}

/// How the traced command is started: its argument vector and the variables to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The command line to run.
    pub argv: Vec<String>,
    /// Environment variables to set on the command itself.
    pub env: Vec<(String, String)>,
}

/// What the tracer records beside every call's times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recording {
    /// Count each compute gap's user-space instructions.
    pub instructions: bool,
    /// Record each compute gap's processor time.
    pub cpu_time: bool,
    /// Record only `MPI_Init` and `MPI_Finalize`: the application's time without the overhead of
    /// recording its calls (the run between them is one gap).
    pub time_only: bool,
}

/// Builds the command line that runs `cmd` with the tracer `lib` writing into `dir`.
///
/// OpenMPI launchers get `-x NAME=VALUE` options and MPICH's Hydra `-genv NAME VALUE` options, so
/// that the tracer is preloaded into the application processes only (not into the launcher). A
/// program started directly (a singleton) gets the variables in its environment.
pub fn launch(cmd: &[String], mpi: Mpi, lib: &Path, dir: &Path, what: Recording) -> Launch {
    let mut preload = lib.display().to_string();
    if let Ok(old) = std::env::var("LD_PRELOAD") {
        if !old.is_empty() {
            preload = format!("{preload}:{old}");
        }
    }
    let mut vars = vec![
        ("LD_PRELOAD".to_owned(), preload),
        ("MPISKEL_TRACE_DIR".to_owned(), dir.display().to_string()),
    ];
    for (on, name) in [
        (what.instructions, "MPISKEL_INSTRUCTIONS"),
        (what.cpu_time, "MPISKEL_CPU_TIME"),
        (what.time_only, "MPISKEL_TIME_ONLY"),
    ] {
        if on {
            vars.push((name.to_owned(), "1".to_owned()));
        }
    }
    let name = cmd.first().map(|s| basename(s)).unwrap_or_default();
    let is_launcher = OPENMPI_LAUNCHERS.contains(&name)
        || MPICH_LAUNCHERS.contains(&name)
        || GENERIC_LAUNCHERS.contains(&name);
    if !is_launcher {
        return Launch { argv: cmd.to_vec(), env: vars };
    }
    let mut argv = vec![cmd[0].clone()];
    for (k, v) in &vars {
        match mpi {
            Mpi::OpenMpi => argv.extend(["-x".to_owned(), format!("{k}={v}")]),
            Mpi::Mpich => argv.extend(["-genv".to_owned(), k.clone(), v.clone()]),
        }
    }
    argv.extend(cmd[1..].iter().cloned());
    Launch { argv, env: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn launcher_names_select_the_library() {
        assert_eq!(detect_mpi(&s(&["mpirun.openmpi", "-np", "2", "x"])), Some(Mpi::OpenMpi));
        assert_eq!(detect_mpi(&s(&["/usr/bin/mpiexec.mpich", "-n", "2", "x"])), Some(Mpi::Mpich));
        assert_eq!(detect_mpi(&s(&["mpiexec.hydra", "x"])), Some(Mpi::Mpich));
    }

    #[test]
    fn openmpi_gets_x_options_and_mpich_genv() {
        let lib = Path::new("/l/t.so");
        let dir = Path::new("/d");
        let o = launch(
            &s(&["mpirun.openmpi", "-np", "4", "./a"]),
            Mpi::OpenMpi,
            lib,
            dir,
            Recording::default(),
        );
        assert_eq!(o.argv[1], "-x");
        assert!(o.argv[2].starts_with("LD_PRELOAD=/l/t.so"));
        assert_eq!(&o.argv[5..], &s(&["-np", "4", "./a"])[..]);
        assert!(o.env.is_empty());
        let all = Recording { instructions: true, cpu_time: true, time_only: true };
        let m = launch(&s(&["mpirun.mpich", "-n", "2", "./a"]), Mpi::Mpich, lib, dir, all);
        assert!(m.argv.contains(&"MPISKEL_CPU_TIME".to_owned()));
        assert_eq!(&m.argv[1..3], &s(&["-genv", "LD_PRELOAD"])[..]);
        assert!(m.argv.contains(&"MPISKEL_INSTRUCTIONS".to_owned()));
        assert!(m.argv.contains(&"MPISKEL_TIME_ONLY".to_owned()));
        let direct = launch(&s(&["./a"]), Mpi::Mpich, lib, dir, Recording::default());
        assert_eq!(direct.argv, s(&["./a"]));
        assert_eq!(direct.env[1], ("MPISKEL_TRACE_DIR".to_owned(), "/d".to_owned()));
    }
}
