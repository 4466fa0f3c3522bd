//! Checking a whole trace at the reader boundary, so that nothing downstream meets a rank that
//! does not exist.
//!
//! A reader checks the bytes or lines of one file; this pass checks what only the whole set can
//! tell: every rank of the run is present, in order, and agrees on the run's size; every rank a
//! call names (peer, root, actual source of a completed receive) and every communicator member is
//! a rank of the run; every communicator a call uses is defined; each rank's times run forward
//! and its sizes are ones an MPI call can move ([`MAX_BYTES`]), so that no sum over a run
//! overflows. A single rank file of a larger
//! run is refused, naming the directory that holds the whole run.
//!
//! Linear in the number of events and communicator members.

use std::path::Path;

use crate::error::{Result, TraceError};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::{CommId, Event, Op, Payload, Peer, Rank, RankTrace};

/// The largest message or buffer size accepted (256 TiB): far beyond any MPI call, far enough
/// below 2^64 that sums and products of sizes over a run cannot overflow.
pub const MAX_BYTES: u64 = 1 << 48;

/// The latest time accepted, nanoseconds after a rank's trace started (about 146 years).
pub const MAX_TIME_NS: u64 = 1 << 62;

/// The largest size a call's payload names.
fn largest_size(p: &Payload) -> Option<u64> {
    match p {
        Payload::None | Payload::Comm { .. } => None,
        Payload::P2p { bytes, .. } => Some(*bytes),
        Payload::SendRecv { send_bytes, recv_bytes, .. } => Some(*send_bytes.max(recv_bytes)),
        Payload::Completion { completed, .. } => completed.iter().filter_map(|c| c.bytes).max(),
        Payload::Collective { send_bytes, recv_bytes, send_counts, recv_counts, .. } => {
            let counts = send_counts.iter().chain(recv_counts).flatten().copied();
            counts.chain([*send_bytes, *recv_bytes]).max()
        }
    }
}

/// Checks `ranks`, read from `path`, as one whole run.
pub fn validate(path: &Path, ranks: &[RankTrace]) -> Result<()> {
    check_run(path, ranks, true)
}

/// Checks `ranks`, read from `path`, as one whole run; their events too where `events` (a
/// reader that folded polls checked them as it read, before folding moved them).
pub(crate) fn check_run(path: &Path, ranks: &[RankTrace], events: bool) -> Result<()> {
    let Some(first) = ranks.first() else {
        return Err(TraceError::NotATrace {
            path: path.into(),
            reason: "the trace holds no rank".into(),
        });
    };
    let n = first.info.n_ranks;
    if ranks.len() != n as usize {
        let reason = if ranks.len() == 1 {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            format!(
                "holds rank {} of a {n}-rank run; a skeleton needs every rank: give the directory \
                 that holds all {n} rank files ({})",
                first.rank,
                dir.display()
            )
        } else {
            format!("holds {} ranks of a run of {n}", ranks.len())
        };
        return Err(TraceError::NotATrace { path: path.into(), reason });
    }
    for (k, t) in ranks.iter().enumerate() {
        let bad = |event: Option<usize>, reason: String| TraceError::Invalid {
            path: path.into(),
            rank: t.rank,
            event: event.map(|e| e as u64),
            reason,
        };
        if t.rank != Rank(k as u32) || t.info.n_ranks != n {
            return Err(bad(
                None,
                format!("is rank {} of {}, expected rank {k} of {n}", t.rank, t.info.n_ranks),
            ));
        }
        let in_run = |r: Rank| r.0 < n;
        for (id, members) in &t.comms {
            if let Some(m) = members.iter().find(|m| !in_run(**m)) {
                return Err(bad(
                    None,
                    format!("communicator {id} has member {m}, not a rank of this {n}-rank run"),
                ));
            }
        }
        let mut check = EventCheck::new(path, t.rank, n);
        for (i, e) in t.events.iter().enumerate().filter(|_| events) {
            check.event(i, e, Some(&t.comms))?;
        }
    }
    Ok(())
}

/// The checks of [`validate`] on one rank's events, one at a time (a reader that folds polls
/// as it reads checks the events it folds away, with their positions in the file).
pub(crate) struct EventCheck<'a> {
    path: &'a Path,
    rank: Rank,
    n: u32,
    last_exit: u64,
    /// Communicators used before the rank's were all known: each with its first use.
    pending: BTreeMap<CommId, (usize, Op)>,
}

impl<'a> EventCheck<'a> {
    pub(crate) fn new(path: &'a Path, rank: Rank, n: u32) -> Self {
        EventCheck { path, rank, n, last_exit: 0, pending: BTreeMap::new() }
    }

    fn bad(&self, event: Option<usize>, reason: String) -> TraceError {
        TraceError::Invalid {
            path: self.path.into(),
            rank: self.rank,
            event: event.map(|e| e as u64),
            reason,
        }
    }

    /// Checks event `i`, `e`. With `comms`, the rank's communicators, each it uses must be
    /// there; without, it is checked by [`EventCheck::finish`].
    pub(crate) fn event(
        &mut self,
        i: usize,
        e: &Event,
        comms: Option<&BTreeMap<CommId, Arc<[Rank]>>>,
    ) -> Result<()> {
        let (n, last_exit) = (self.n, self.last_exit);
        let name = e.op.name();
        if e.enter_ns < last_exit || e.exit_ns < e.enter_ns || e.gap_ns > e.enter_ns {
            return Err(self.bad(
                Some(i),
                format!(
                    "MPI_{name}: times out of order (enters at {} ns, leaves at {} ns after {} ns \
                     of compute; the previous call left at {last_exit} ns)",
                    e.enter_ns, e.exit_ns, e.gap_ns
                ),
            ));
        }
        if e.exit_ns > MAX_TIME_NS {
            return Err(self.bad(
                Some(i),
                format!(
                    "MPI_{name}: ends {} ns after the trace started, more than a century",
                    e.exit_ns
                ),
            ));
        }
        self.last_exit = e.exit_ns;
        if let Some(b) = largest_size(&e.payload).filter(|&b| b > MAX_BYTES) {
            return Err(self.bad(
                Some(i),
                format!("MPI_{name}: a size of {b} bytes, more than any MPI call moves (2^48)"),
            ));
        }
        let peer = |p: Peer, what: &str| match p {
            Peer::Rank(r) if r.0 >= n => Err(self.bad(
                Some(i),
                format!("MPI_{name}: {what} {r} is not a rank of this {n}-rank run"),
            )),
            _ => Ok(()),
        };
        let used = match &e.payload {
            Payload::None => None,
            Payload::P2p { peer: p, comm: c, .. } => {
                peer(*p, "peer")?;
                Some(*c)
            }
            Payload::SendRecv { dest, source, comm: c, .. } => {
                peer(*dest, "destination")?;
                peer(*source, "source")?;
                Some(*c)
            }
            Payload::Completion { completed, .. } => {
                for s in completed.iter().filter_map(|c| c.source) {
                    peer(Peer::Rank(s), "actual source")?;
                }
                None
            }
            Payload::Collective { comm: c, root, .. } => {
                if let Some(r) = root {
                    peer(Peer::Rank(*r), "root")?;
                }
                Some(*c)
            }
            Payload::Comm { parent, .. } => Some(*parent),
        };
        match (used, comms) {
            (Some(c), Some(comms)) if !comms.contains_key(&c) => {
                Err(self.bad(Some(i), format!("MPI_{name}: communicator {c} is never defined")))
            }
            (Some(c), None) => {
                self.pending.entry(c).or_insert((i, e.op));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Checks the communicators used before `comms`, all the rank's, were known.
    pub(crate) fn finish(self, comms: &BTreeMap<CommId, Arc<[Rank]>>) -> Result<()> {
        match self.pending.iter().filter(|(c, _)| !comms.contains_key(c)).min_by_key(|(_, u)| u.0) {
            Some((c, &(i, op))) => {
                Err(self
                    .bad(Some(i), format!("MPI_{}: communicator {c} is never defined", op.name())))
            }
            None => Ok(()),
        }
    }
}
