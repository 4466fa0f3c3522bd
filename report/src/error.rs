//! The one error of this crate.

/// An error rendering the page.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The template failed (a bug: the page's data always fits it).
    #[error("rendering the report: {0}")]
    Template(#[from] minijinja::Error),
}
