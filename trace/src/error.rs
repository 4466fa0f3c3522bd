//! The one error type of the trace crate.

use std::path::PathBuf;

use crate::model::Rank;

/// Why a trace could not be read or written. Every variant names the file; those about content
/// also name the rank (when known) and the position (byte offset or line).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file system refused.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said (in the message, not repeated as a source).
        error: std::io::Error,
    },
    /// The file does not start with the native magic bytes.
    #[error("{}: not an mpiskel trace file (bad magic at byte 0)", path.display())]
    BadMagic {
        /// The file.
        path: PathBuf,
    },
    /// The file is a native trace of a format version this build cannot read.
    #[error("{}: trace format version {version} is not supported (this build reads version {supported})", path.display())]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Version found.
        version: u16,
        /// Version supported.
        supported: u16,
    },
    /// The file ends before its footer: the process died, or the file was cut.
    #[error("{}: rank {}: trace is incomplete: it ends at byte {offset} after {events} events without the footer that marks a complete file (did the process die before MPI_Finalize?)", path.display(), fmt_rank(*rank))]
    Incomplete {
        /// The file.
        path: PathBuf,
        /// The rank, if the header was readable.
        rank: Option<Rank>,
        /// Offset of the first byte that is not part of a whole record.
        offset: u64,
        /// Whole events read before that offset.
        events: u64,
    },
    /// The bytes do not follow the format.
    #[error("{}: rank {}: byte {offset}: {reason}", path.display(), fmt_rank(*rank))]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The rank, if the header was readable.
        rank: Option<Rank>,
        /// Offset of the offending record or field.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A line of a SimGrid time-independent trace could not be understood.
    #[error("{}:{line}: rank {}: {reason}", path.display(), fmt_rank(*rank))]
    TiSyntax {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The rank the line belongs to, if known.
        rank: Option<Rank>,
        /// What is wrong.
        reason: String,
    },
    /// The records read well but contradict the run: a rank that does not exist, a communicator
    /// never defined.
    #[error("{}: rank {rank}{}: {reason}", path.display(), fmt_event(*event))]
    Invalid {
        /// The trace.
        path: PathBuf,
        /// The rank whose records are wrong.
        rank: Rank,
        /// Index of the offending call in the rank's program order, if a call is at fault.
        event: Option<u64>,
        /// What is wrong.
        reason: String,
    },
    /// The PMPI tracer could not be built.
    #[error("cannot build the tracer for {mpi}: {reason}")]
    TracerBuild {
        /// The MPI implementation.
        mpi: String,
        /// What went wrong.
        reason: String,
    },
    /// The path is not something mpiskel can read as a trace.
    #[error("{}: {reason}", path.display())]
    NotATrace {
        /// The path.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
}

fn fmt_rank(rank: Option<Rank>) -> String {
    rank.map_or_else(|| "?".to_owned(), |r| r.to_string())
}

fn fmt_event(event: Option<u64>) -> String {
    event.map_or_else(String::new, |e| format!(": call {e}"))
}

impl TraceError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TraceError::Io { path: path.into(), error: source }
    }
}

/// Result with [`TraceError`].
pub type Result<T, E = TraceError> = std::result::Result<T, E>;
