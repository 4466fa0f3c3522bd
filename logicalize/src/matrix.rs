//! The communication matrix (Xu & Subhlok 2008, §2): messages and bytes per ordered pair of ranks.
//!
//! Point-to-point traffic is counted on the sending side (Send and its variants, the send half
//! of Sendrecv), so every message is counted once. Messages a rank sends to itself are kept
//! apart, collectives are tallied per operation, and sends to `MPI_PROC_NULL` are counted but
//! connect nobody.
//!
//! **Significant edges.** Two ranks are neighbours when the messages between them (both
//! directions) number at least a tenth of the median over all communicating pairs. The median
//! makes the threshold independent of run length; a tenth keeps every edge of a regular pattern
//! (whose pairs carry similar traffic) and drops occasional messages (a set-up exchange, a
//! reduction implemented by hand) that would otherwise make any topology look irregular.
//!
//! # Complexity
//! O(events) time, ranks read in parallel; O(ranks + pairs) space.

use std::collections::BTreeMap;

use mpiskel_trace::{OpClass, Payload, Peer, TraceSet};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::graph::Graph;

/// Messages and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// Number of messages.
    pub messages: u64,
    /// Total bytes.
    pub bytes: u64,
}

/// The communication matrix of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommMatrix {
    /// Number of ranks.
    pub n: usize,
    /// Point-to-point traffic per ordered pair (src ≠ dst); serialized as a list of
    /// `[src, dst, traffic]`.
    #[serde(with = "pair_list")]
    pub pairs: BTreeMap<(u32, u32), Traffic>,
    /// Messages each rank sent to itself.
    pub self_messages: Traffic,
    /// Sends to `MPI_PROC_NULL`.
    pub null_messages: u64,
    /// Collective calls per operation, over all ranks.
    pub collectives: BTreeMap<String, u64>,
}

impl CommMatrix {
    /// Builds the matrix of a trace set.
    pub fn of(set: &TraceSet) -> CommMatrix {
        let parts: Vec<_> = set
            .ranks
            .par_iter()
            .map(|rt| {
                let mut pairs: BTreeMap<(u32, u32), Traffic> = BTreeMap::new();
                let mut own = Traffic::default();
                let mut null = 0;
                let mut coll: BTreeMap<String, u64> = BTreeMap::new();
                for e in &rt.events {
                    let send = match (&e.payload, e.op.class()) {
                        (Payload::P2p { peer, bytes, .. }, OpClass::Send) => Some((*peer, *bytes)),
                        (Payload::SendRecv { dest, send_bytes, .. }, _) => {
                            Some((*dest, *send_bytes))
                        }
                        (Payload::Collective { .. }, _) => {
                            *coll.entry(e.op.name().to_owned()).or_insert(0) += 1;
                            None
                        }
                        _ => None,
                    };
                    match send {
                        Some((Peer::Rank(d), b)) if d == rt.rank => {
                            own.messages += 1;
                            own.bytes += b;
                        }
                        Some((Peer::Rank(d), b)) => {
                            let t = pairs.entry((rt.rank.0, d.0)).or_default();
                            t.messages += 1;
                            t.bytes += b;
                        }
                        Some((Peer::Null, _)) => null += 1,
                        _ => {}
                    }
                }
                (pairs, own, null, coll)
            })
            .collect();
        let mut m = CommMatrix {
            n: set.n_ranks(),
            pairs: BTreeMap::new(),
            self_messages: Traffic::default(),
            null_messages: 0,
            collectives: BTreeMap::new(),
        };
        for (pairs, own, null, coll) in parts {
            m.pairs.extend(pairs);
            m.self_messages.messages += own.messages;
            m.self_messages.bytes += own.bytes;
            m.null_messages += null;
            for (k, v) in coll {
                *m.collectives.entry(k).or_insert(0) += v;
            }
        }
        m
    }

    /// Messages between `a` and `b`, both directions.
    pub fn between(&self, a: u32, b: u32) -> u64 {
        self.pairs.get(&(a, b)).map_or(0, |t| t.messages)
            + self.pairs.get(&(b, a)).map_or(0, |t| t.messages)
    }

    /// The graph of significant edges (rule in the module documentation), and the number of
    /// communicating pairs left out as insignificant.
    pub fn significant_graph(&self) -> (Graph, usize) {
        let mut undirected: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for (&(a, b), t) in &self.pairs {
            *undirected.entry((a.min(b), a.max(b))).or_insert(0) += t.messages;
        }
        if undirected.is_empty() {
            return (Graph::from_edges(self.n, []), 0);
        }
        let mut w: Vec<u64> = undirected.values().copied().collect();
        w.sort_unstable();
        let median = w[w.len() / 2];
        let threshold = (median as f64 / 10.0).ceil().max(1.0) as u64;
        let keep: Vec<(u32, u32)> =
            undirected.iter().filter(|(_, &m)| m >= threshold).map(|(&p, _)| p).collect();
        let dropped = undirected.len() - keep.len();
        (Graph::from_edges(self.n, keep), dropped)
    }

    /// Whether any rank sent a point-to-point message to another.
    pub fn has_point_to_point(&self) -> bool {
        !self.pairs.is_empty()
    }
}

mod pair_list {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Traffic;

    pub fn serialize<S: Serializer>(
        m: &BTreeMap<(u32, u32), Traffic>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        m.iter().map(|(&(a, b), t)| (a, b, *t)).collect::<Vec<_>>().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<(u32, u32), Traffic>, D::Error> {
        let v: Vec<(u32, u32, Traffic)> = Vec::deserialize(d)?;
        Ok(v.into_iter().map(|(a, b, t)| ((a, b), t)).collect())
    }
}
