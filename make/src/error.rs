//! The crate's error: what failed, with the context that names the file, run or step.

use std::fmt::Display;

/// What went wrong running, building or validating a skeleton.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or process operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A JSON document could not be read or written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A trace could not be read.
    #[error(transparent)]
    Trace(#[from] mpiskel_trace::TraceError),
    /// No skeleton could be made.
    #[error(transparent)]
    Pipeline(#[from] mpiskel_cut::pipeline::PipelineError),
    /// A skeleton folder's `skeleton.json` could not be read.
    #[error(transparent)]
    Document(#[from] mpiskel_emit::document::DocumentError),
    /// A picture could not be drawn.
    #[error(transparent)]
    Report(#[from] mpiskel_report::ReportError),
    /// A platform could not be read, or the program not simulated on it.
    #[error(transparent)]
    Simulate(#[from] mpiskel_simulate::SimulateError),
    /// A skeleton could not be rendered.
    #[error("{0}")]
    Render(String),
    /// A number could not be read.
    #[error(transparent)]
    Number(#[from] std::num::ParseFloatError),
    /// A system call failed.
    #[error(transparent)]
    Sys(#[from] nix::Error),
    /// The program made from the trace can block forever; nothing was written.
    #[error("{report}refusing to emit {}: the program can deadlock{}", output.display(), if *strict {
        " (without --strict, calls nothing matches are left out and sends the program relies on \
         the MPI library to buffer are buffered)"
    } else {
        ""
    })]
    Deadlock {
        /// The folder that was not written.
        output: std::path::PathBuf,
        /// The deadlock check's report: the blocked ranks and what each waits for.
        report: String,
        /// Whether the build was `--strict`.
        strict: bool,
    },
    /// A step failed, said in words (a compiler's or a run's output, an invalid option).
    #[error("{0}")]
    Failed(String),
    /// An error with what was being done when it happened.
    #[error("{context}: {error}")]
    Context {
        /// What was being done.
        context: String,
        /// What went wrong.
        error: Box<Error>,
    },
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds what was being done to an error (as `anyhow::Context` does, within this crate's type).
pub trait Context<T> {
    /// With a fixed context.
    fn context(self, context: impl Display) -> Result<T>;
    /// With a context made only on failure.
    fn with_context<C: Display>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl Display) -> Result<T> {
        self.map_err(|e| Error::Context { context: context.to_string(), error: Box::new(e.into()) })
    }
    fn with_context<C: Display>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: context().to_string(),
            error: Box::new(e.into()),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl Display) -> Result<T> {
        self.ok_or_else(|| Error::Failed(context.to_string()))
    }
    fn with_context<C: Display>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.ok_or_else(|| Error::Failed(context().to_string()))
    }
}

/// Returns early with [`Error::Failed`] and a formatted message.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::Failed(format!($($arg)*)))
    };
}

/// Returns early with [`Error::Failed`] unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            $crate::error::bail!($($arg)*);
        }
    };
}

pub(crate) use {bail, ensure};
