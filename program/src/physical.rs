//! One rank's physical calls as the symbols loop discovery works on.
//!
//! Each event becomes a symbol determined by its operation and the arguments that shape its
//! communication: for point-to-point calls the peer as an offset from the rank (so that the
//! same neighbour is the same symbol), tag, bytes and communicator; for collectives the
//! communicator, root offset and sizes; for completions how many requests were given and
//! completed. Compute gaps are not symbols: they travel as weights (seconds) beside the symbol
//! of the call that follows them.
//!
//! [`crate::symbols::symbolize_class`] does the same for the logical program of a process
//! class, where peers are directions of the topology and tags are tag classes; [`symbolize`]
//! works on one rank's physical calls (peers as rank offsets), for
//! `mpiskel compress --physical`.
//!
//! # Complexity
//! O(n) hash look-ups for a rank of n calls.

use std::collections::HashMap;

use mpiskel_compress::Sym;
use mpiskel_trace::{Event, Op, Payload, Peer, Rank, RankTrace};

use crate::symbols::{SymbolInfo, Symbolized};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    op: Op,
    peer: i64,
    tag: i64,
    bytes: u64,
    extra: u64,
}

const NO_PEER: i64 = i64::MIN;
const ANY: i64 = i64::MIN + 1;
const NULL: i64 = i64::MIN + 2;

fn offset(p: Peer, me: Rank) -> i64 {
    match p {
        Peer::Rank(r) => i64::from(r.0) - i64::from(me.0),
        Peer::Any => ANY,
        Peer::Null => NULL,
    }
}

fn key(e: &Event, me: Rank) -> Key {
    let op = e.op;
    match &e.payload {
        Payload::None => Key { op, peer: NO_PEER, tag: 0, bytes: 0, extra: 0 },
        Payload::P2p { peer, tag, bytes, comm, .. } => Key {
            op,
            peer: offset(*peer, me),
            tag: i64::from(*tag),
            bytes: *bytes,
            extra: u64::from(comm.0),
        },
        Payload::SendRecv { dest, send_bytes, source, recv_bytes, comm, .. } => Key {
            op,
            peer: offset(*dest, me),
            tag: offset(*source, me),
            bytes: *send_bytes,
            extra: (*recv_bytes << 16) ^ u64::from(comm.0),
        },
        Payload::Completion { n_given, completed } => Key {
            op,
            peer: NO_PEER,
            tag: i64::from(*n_given),
            bytes: completed.len() as u64,
            extra: 0,
        },
        Payload::Collective { comm, root, send_bytes, recv_bytes, .. } => Key {
            op,
            peer: root.map_or(NO_PEER, |r| offset(Peer::Rank(r), me)),
            tag: i64::from(comm.0),
            bytes: *send_bytes,
            extra: *recv_bytes,
        },
        Payload::Comm { parent, created, .. } => Key {
            op,
            peer: NO_PEER,
            tag: i64::from(parent.0),
            bytes: created.map_or(0, |c| u64::from(c.0) + 1),
            extra: 0,
        },
    }
}

/// One rank's physical calls as symbols (peers as rank offsets), with the compute gap before each.
pub fn symbolize(rt: &RankTrace) -> Symbolized {
    let mut ids: HashMap<Key, Sym> = HashMap::new();
    let mut legend = Vec::new();
    let mut symbols = Vec::with_capacity(rt.events.len());
    let mut gaps_s = Vec::with_capacity(rt.events.len());
    for e in &rt.events {
        let k = key(e, rt.rank);
        let next = ids.len() as Sym;
        let sym = *ids.entry(k.clone()).or_insert_with(|| {
            legend.push(SymbolInfo { sym: next, text: describe(&k) });
            next
        });
        symbols.push(sym);
        gaps_s.push(e.gap_ns as f64 * 1e-9);
    }
    let n_syms = legend.len();
    Symbolized {
        shapes: symbols.clone(),
        symbols,
        gaps_s,
        legend,
        shape_is_world_collective: vec![false; n_syms],
    }
}

fn describe(k: &Key) -> String {
    let peer = match k.peer {
        NO_PEER => String::new(),
        ANY => " ANY".into(),
        NULL => " NULL".into(),
        o => format!(" {o:+}"),
    };
    match k.op.class() {
        mpiskel_trace::OpClass::Send
        | mpiskel_trace::OpClass::Recv
        | mpiskel_trace::OpClass::Probe => {
            format!("{}{peer} tag {} {} B", k.op, k.tag, k.bytes)
        }
        mpiskel_trace::OpClass::Completion => format!("{} {}/{}", k.op, k.bytes, k.tag),
        mpiskel_trace::OpClass::Collective => format!(
            "{}{} {} B",
            k.op,
            if peer.is_empty() { String::new() } else { format!(" root{peer}") },
            k.bytes
        ),
        _ => format!("{}{peer}", k.op),
    }
}
