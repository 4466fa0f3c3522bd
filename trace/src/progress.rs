//! How far reading has come, for progress displays: the rank files read so far and how many
//! the trace has, counted by every reader as it goes.
//!
//! The counters are process-wide (a display polls them from another thread while
//! [`crate::TraceSet::open`] reads); two traces read at once in one process share them, which
//! only a display could notice.

use std::sync::atomic::{AtomicU64, Ordering};

static EXPECTED: AtomicU64 = AtomicU64::new(0);
static READ: AtomicU64 = AtomicU64::new(0);

/// A reader starts on a trace of `ranks` rank files.
pub(crate) fn start(ranks: u64) {
    READ.store(0, Ordering::Relaxed);
    EXPECTED.store(ranks, Ordering::Relaxed);
}

/// A reader finished one rank file.
pub(crate) fn rank_read() {
    READ.fetch_add(1, Ordering::Relaxed);
}

/// Rank files read so far and rank files of the trace being read (0 before a reader knows).
pub fn ranks_read() -> (u64, u64) {
    (READ.load(Ordering::Relaxed), EXPECTED.load(Ordering::Relaxed))
}
