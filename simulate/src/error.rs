//! The simulator's one error type.

use std::path::PathBuf;

/// What can go wrong reading a platform or simulating a trace.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A platform file describes something the simulator does not model, or is malformed.
    #[error("{path}: {what}")]
    Platform {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line where there is one.
        what: String,
    },
    /// A hostfile line names no host of the platform, or is malformed.
    #[error("{path}: line {line}: {what}")]
    Hostfile {
        /// The file.
        path: PathBuf,
        /// Its line (1-based; 0 for the whole file).
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// A model parameter is out of range.
    #[error("model parameter {name}: {what}")]
    Model {
        /// The parameter.
        name: String,
        /// What is wrong.
        what: String,
    },
    /// The trace cannot be simulated as it is (a rank names a peer that does not exist…).
    #[error("rank {rank}, call {call} ({op}): {what}")]
    Trace {
        /// The rank.
        rank: u32,
        /// The call's position in the rank's trace (0 is the first).
        call: usize,
        /// The call.
        op: String,
        /// What is wrong.
        what: String,
    },
}

impl SimulateError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> SimulateError {
        SimulateError::Io { path: path.to_path_buf(), source }
    }
}

/// The simulator's result type.
pub type Result<T, E = SimulateError> = std::result::Result<T, E>;
