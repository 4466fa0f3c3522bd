//! How the long steps of this crate tell the caller what they are doing: a line per step done,
//! and a guard held while a step runs (for a spinner or a bar). The CLI draws them; a library
//! user may ignore them ([`Quiet`]).

/// Receives the progress of builds, runs and validation suites.
pub trait Observer {
    /// A step done (or begun), in words.
    fn line(&self, what: &str);
    /// A step running until the returned guard is dropped (`what` says which).
    fn busy(&self, what: &str) -> Busy;
    /// A trace being read until the returned guard is dropped (the readers count the rank
    /// files read in `mpiskel_trace::progress`).
    fn reading(&self, what: &str) -> Busy {
        self.busy(what)
    }
}

/// A step running; whatever shows it ends when this is dropped.
pub struct Busy(Option<Box<dyn std::any::Any>>);

impl Busy {
    /// Nothing to show.
    pub fn none() -> Busy {
        Busy(None)
    }
    /// Ends `shown` (dropping it) when the step ends.
    pub fn new(shown: impl std::any::Any) -> Busy {
        Busy(Some(Box::new(shown)))
    }
}

impl std::fmt::Debug for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Busy(shown)" } else { "Busy(none)" })
    }
}

/// An observer that shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Observer for Quiet {
    fn line(&self, _: &str) {}
    fn busy(&self, _: &str) -> Busy {
        Busy::none()
    }
}
