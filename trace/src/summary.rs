//! The numbers `mpiskel inspect` shows for a trace: per-rank record counts, bytes, time inside
//! and between MPI calls, and a summary of the point-to-point communication matrix.
//!
//! # Complexity
//! O(events) time; O(ranks + communicating pairs) space.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{OpClass, Payload, Peer, Rank, RankTrace, Unrecorded};
use crate::set::{TraceFormat, TraceSet};

/// Messages and bytes on one directed pair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// Number of messages.
    pub messages: u64,
    /// Total bytes.
    pub bytes: u64,
}

impl Traffic {
    fn add(&mut self, bytes: u64) {
        self.messages += 1;
        self.bytes += bytes;
    }
}

/// One rank's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    /// The rank.
    pub rank: Rank,
    /// Host, where recorded.
    pub host: Option<String>,
    /// Records per kind, under the source format's names.
    pub records: BTreeMap<String, u64>,
    /// Number of MPI calls.
    pub events: u64,
    /// Point-to-point bytes sent (Sendrecv included; `MPI_PROC_NULL` excluded).
    pub p2p_bytes_sent: u64,
    /// Point-to-point bytes received.
    pub p2p_bytes_received: u64,
    /// Bytes this rank contributed to collectives.
    pub collective_bytes: u64,
    /// Seconds inside MPI calls.
    pub mpi_s: f64,
    /// Seconds between MPI calls (compute).
    pub compute_s: f64,
    /// Distinct peers this rank sent to (itself excluded).
    pub send_peers: u32,
}

/// A summary of the point-to-point communication matrix (sends, by source and destination).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixSummary {
    /// Directed pairs (src ≠ dst) with at least one message.
    pub pairs: u64,
    /// Messages and bytes over all pairs (self-messages excluded).
    pub total: Traffic,
    /// Messages a rank sent to itself.
    pub self_messages: Traffic,
    /// Sends to `MPI_PROC_NULL`.
    pub null_messages: u64,
    /// Smallest and largest number of distinct peers (in or out) of any rank.
    pub degree_min: u32,
    /// See `degree_min`.
    pub degree_max: u32,
    /// Whether every pair that talks one way also talks the other way.
    pub symmetric: bool,
    /// The heaviest pairs by bytes, at most ten.
    pub top_pairs: Vec<(Rank, Rank, Traffic)>,
}

/// Everything `inspect` reports about a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Source format.
    pub format: TraceFormat,
    /// Number of ranks.
    pub ranks: u32,
    /// Total MPI calls.
    pub events: u64,
    /// Per-rank figures.
    pub per_rank: Vec<RankSummary>,
    /// Calls per MPI operation over all ranks.
    pub ops: BTreeMap<String, u64>,
    /// Collective calls per operation over all ranks (a subset of `ops`).
    pub collectives: BTreeMap<String, u64>,
    /// The communication matrix.
    pub matrix: MatrixSummary,
    /// The longest rank's time from first to last call plus its trailing compute, seconds.
    pub span_s: f64,
    /// The application's time: the slowest rank's, from the end of `MPI_Init` to the start of
    /// `MPI_Finalize` (what a skeleton predicts), seconds.
    pub app_time_s: f64,
    /// Calls counted but not recorded ([`RankTrace::unrecorded`]), summed over the ranks.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unrecorded: BTreeMap<String, Unrecorded>,
}

/// Whether a call counted but not recorded ([`RankTrace::unrecorded`], named without `MPI_`) is
/// MPI-IO rather than one-sided communication.
pub fn is_file_io(name: &str) -> bool {
    name.starts_with("File_")
}

/// The calls of `set` counted but not recorded ([`RankTrace::unrecorded`]), by name, summed over
/// its ranks. O(ranks × kinds).
pub fn unrecorded(set: &TraceSet) -> BTreeMap<String, Unrecorded> {
    let mut all: BTreeMap<String, Unrecorded> = BTreeMap::new();
    for (name, u) in set.ranks.iter().flat_map(|r| &r.unrecorded) {
        let e = all.entry(name.clone()).or_default();
        e.calls += u.calls;
        e.bytes += u.bytes;
        e.ns += u.ns;
    }
    all
}

/// Directed point-to-point matrix: (src, dst) → traffic, built from the sending side.
pub fn send_matrix(set: &TraceSet) -> BTreeMap<(Rank, Rank), Traffic> {
    let mut m: BTreeMap<(Rank, Rank), Traffic> = BTreeMap::new();
    for rt in &set.ranks {
        for (peer, bytes) in sends(rt) {
            if let Peer::Rank(dst) = peer {
                m.entry((rt.rank, dst)).or_default().add(bytes);
            }
        }
    }
    m
}

/// Every point-to-point send of a rank: (destination, bytes).
fn sends(rt: &RankTrace) -> impl Iterator<Item = (Peer, u64)> + '_ {
    rt.events.iter().filter_map(|e| match (&e.payload, e.op.class()) {
        (Payload::P2p { peer, bytes, .. }, OpClass::Send) => Some((*peer, *bytes)),
        (Payload::SendRecv { dest, send_bytes, .. }, _) => Some((*dest, *send_bytes)),
        _ => None,
    })
}

/// Computes the summary of a trace set.
pub fn summarize(set: &TraceSet) -> TraceSummary {
    let mut ops: BTreeMap<String, u64> = BTreeMap::new();
    let mut collectives: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_rank = Vec::with_capacity(set.ranks.len());
    let mut self_messages = Traffic::default();
    let mut null_messages = 0;
    let mut span_ns = 0u64;
    for rt in &set.ranks {
        let (mut sent, mut received, mut coll) = (0, 0, 0);
        for e in &rt.events {
            *ops.entry(e.op.name().to_owned()).or_insert(0) += 1;
            match &e.payload {
                Payload::P2p { peer, bytes, .. } if *peer != Peer::Null => match e.op.class() {
                    OpClass::Send => sent += bytes,
                    OpClass::Recv => received += bytes,
                    _ => {}
                },
                Payload::SendRecv { dest, send_bytes, source, recv_bytes, .. } => {
                    if *dest != Peer::Null {
                        sent += send_bytes;
                    }
                    if *source != Peer::Null {
                        received += recv_bytes;
                    }
                }
                Payload::Collective { send_bytes, .. } => {
                    *collectives.entry(e.op.name().to_owned()).or_insert(0) += 1;
                    coll += send_bytes;
                }
                _ => {}
            }
        }
        let mut peers: Vec<Rank> = Vec::new();
        for (peer, bytes) in sends(rt) {
            match peer {
                Peer::Rank(d) if d == rt.rank => self_messages.add(bytes),
                Peer::Rank(d) => peers.push(d),
                Peer::Null => null_messages += 1,
                Peer::Any => {}
            }
        }
        peers.sort_unstable();
        peers.dedup();
        let end = rt.events.last().map_or(0, |e| e.exit_ns) + rt.trailing_gap_ns;
        span_ns = span_ns.max(end);
        per_rank.push(RankSummary {
            rank: rt.rank,
            host: rt.info.host.clone(),
            records: rt.record_counts.clone(),
            events: rt.events.len() as u64,
            p2p_bytes_sent: sent,
            p2p_bytes_received: received,
            collective_bytes: coll,
            mpi_s: rt.mpi_ns() as f64 * 1e-9,
            compute_s: rt.compute_ns() as f64 * 1e-9,
            send_peers: peers.len() as u32,
        });
    }

    let matrix = send_matrix(set);
    let n = set.ranks.len();
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut total = Traffic::default();
    let mut pairs = 0;
    let mut symmetric = true;
    for (&(s, d), t) in &matrix {
        if s == d {
            continue;
        }
        pairs += 1;
        total.messages += t.messages;
        total.bytes += t.bytes;
        symmetric &= matrix.contains_key(&(d, s));
        for (a, b) in [(s, d), (d, s)] {
            if let Some(v) = neighbours.get_mut(a.0 as usize) {
                v.push(b.0);
            }
        }
    }
    let degrees: Vec<u32> = neighbours
        .iter_mut()
        .map(|v| {
            v.sort_unstable();
            v.dedup();
            v.len() as u32
        })
        .collect();
    let mut top: Vec<(Rank, Rank, Traffic)> =
        matrix.iter().filter(|((s, d), _)| s != d).map(|(&(s, d), &t)| (s, d, t)).collect();
    top.sort_by(|a, b| b.2.bytes.cmp(&a.2.bytes).then((a.0, a.1).cmp(&(b.0, b.1))));
    top.truncate(10);

    TraceSummary {
        unrecorded: unrecorded(set),
        format: set.format,
        ranks: n as u32,
        events: per_rank.iter().map(|r| r.events).sum(),
        per_rank,
        ops,
        collectives,
        matrix: MatrixSummary {
            pairs,
            total,
            self_messages,
            null_messages,
            degree_min: degrees.iter().copied().min().unwrap_or(0),
            degree_max: degrees.iter().copied().max().unwrap_or(0),
            symmetric,
            top_pairs: top,
        },
        span_s: span_ns as f64 * 1e-9,
        app_time_s: set.app_time_s(),
    }
}
