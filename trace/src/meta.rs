//! `meta.json`: what `mpiskel trace` knows about a recorded run beyond the rank files.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, TraceError};

/// The run a native trace directory was recorded from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Version of the `meta.json` layout (currently 1).
    pub meta_version: u32,
    /// The command that was traced, as given after `--`.
    pub command: Vec<String>,
    /// Number of ranks.
    pub ranks: u32,
    /// Host of each rank, in rank order.
    pub hosts: Vec<String>,
    /// The MPI implementation the tracer was built for (`openmpi` or `mpich`).
    pub mpi: String,
    /// The library's own version string (`MPI_Get_library_version`), first line.
    pub mpi_version: String,
    /// When the run started, seconds since the Unix epoch.
    pub start_unix_s: f64,
    /// Wall time of the whole traced command, seconds.
    pub wall_s: f64,
    /// Exit status of the traced command.
    pub exit_code: i32,
    /// Whether compute gaps carry instruction counts.
    pub instructions: bool,
    /// Whether compute gaps carry their processor time.
    #[serde(default)]
    pub cpu_time: bool,
    /// Whether only `MPI_Init` and `MPI_Finalize` were recorded (`mpiskel trace --time-only`):
    /// the application's time, not its calls.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub time_only: bool,
    /// mpiskel version that recorded the trace.
    pub mpiskel_version: String,
    /// What else the node's processors did while the command ran, where the run was on this
    /// node alone and Linux's `/proc/stat` could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_load: Option<NodeLoad>,
    /// Where several runs were recorded (`mpiskel trace --runs N`): the application's time in
    /// each, in the order they ran (seconds, the slowest rank's span from `MPI_Init` to
    /// `MPI_Finalize`, as `inspect` gives it). The directory holds the one of median time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_app_s: Vec<f64>,
    /// Which of `runs_app_s` the directory holds (from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_run: Option<usize>,
}

/// The load beside a traced run, on the node it ran on: shares of the node's processor time
/// while the command ran (its processors × its wall time). A compute block recorded beside a
/// busy neighbour took longer, on the wall clock and in processor time alike (caches and memory
/// shared), and a skeleton replays the run as it was then.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NodeLoad {
    /// The node's processors.
    pub processors: u32,
    /// Share taken by other processes: the node's busy time less the traced command's own
    /// processor time.
    pub others: f64,
    /// Share the hypervisor gave to other virtual machines (steal time).
    pub steal: f64,
}

impl NodeLoad {
    /// The shares in words, as `inspect` and `build` say them: "other processes took 54.0 % of
    /// the time of the node's 2 processors and the hypervisor 0.0 %".
    pub fn summary(&self) -> String {
        format!(
            "other processes took {:.1} % of the time of the node's {} processors and the \
             hypervisor {:.1} %",
            100.0 * self.others,
            self.processors,
            100.0 * self.steal
        )
    }
}

impl RunMeta {
    /// Reads `meta.json`.
    pub fn read(path: &Path) -> Result<RunMeta> {
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| TraceError::Corrupt {
            path: path.to_path_buf(),
            rank: None,
            offset: 0,
            reason: format!("line {} column {}: {e}", e.line(), e.column()),
        })
    }

    /// Writes `meta.json` atomically (a temporary file of a unique name beside it, renamed).
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("RunMeta serializes");
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let write = || -> std::io::Result<()> {
            let mut tmp =
                tempfile::Builder::new().prefix(".meta").suffix(".tmp").tempfile_in(dir)?;
            std::io::Write::write_all(&mut tmp, (text + "\n").as_bytes())?;
            tmp.persist(path).map(drop).map_err(|e| e.error)
        };
        write().map_err(|e| TraceError::io(path, e))
    }
}
