//! The crate's error: what failed, with the context that names the file, run or step.

use std::fmt::Display;

/// What went wrong validating skeletons.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A skeleton folder could not be built, compiled, run or recorded.
    #[error(transparent)]
    Make(#[from] mpiskel_make::Error),
    /// A file or process operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A JSON document could not be read or written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A CSV table could not be read.
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// A trace could not be read.
    #[error(transparent)]
    Trace(#[from] mpiskel_trace::TraceError),
    /// A skeleton folder's `skeleton.json` could not be read.
    #[error(transparent)]
    Document(#[from] mpiskel_emit::document::DocumentError),
    /// A picture could not be drawn.
    #[error(transparent)]
    Report(#[from] mpiskel_report::ReportError),
    /// A platform could not be read, or a program not simulated on it.
    #[error(transparent)]
    Simulate(#[from] mpiskel_simulate::SimulateError),
    /// A number could not be read.
    #[error(transparent)]
    Number(#[from] std::num::ParseFloatError),
    /// A step failed, said in words (a run's output, an invalid option).
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
