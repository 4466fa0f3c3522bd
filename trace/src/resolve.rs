//! Completing non-blocking receives with what their Wait/Test revealed.
//!
//! An `MPI_Irecv` posted with `MPI_ANY_SOURCE` or `MPI_ANY_TAG` learns its actual source, tag and
//! size only when a Wait or Test completes it. The tracer records those in the completion; this
//! pass copies them back onto the Irecv so that later stages see one self-contained receive.
//!
//! # Complexity
//! O(n) expected time in the number of events, O(pending requests) space.

use std::collections::HashMap;

use crate::model::{Event, Payload, Peer, Rank, RequestId};

/// Fills in the peer, tag and size of every Irecv from the completion that finished it.
pub fn resolve_any_source(events: &mut [Event]) {
    let mut pending: HashMap<RequestId, usize> = HashMap::new();
    for i in 0..events.len() {
        match &events[i].payload {
            Payload::P2p { request: Some(req), .. } => {
                pending.insert(*req, i);
            }
            Payload::Completion { completed, .. } => {
                let done: Vec<_> = completed
                    .iter()
                    .filter_map(|c| Some((c.request?, c.source.zip(c.tag).zip(c.bytes))))
                    .collect();
                for (req, recv) in done {
                    if let (Some(j), Some(((source, ctag), cbytes))) = (pending.remove(&req), recv)
                    {
                        fill(&mut events[j], source, ctag, cbytes);
                    }
                }
            }
            _ => {}
        }
    }
}

fn fill(e: &mut Event, source: Rank, ctag: i32, cbytes: u64) {
    if let Payload::P2p { peer, tag, bytes, .. } = &mut e.payload {
        if *peer != Peer::Null {
            *peer = Peer::Rank(source);
            *tag = ctag;
            *bytes = cbytes;
        }
    }
}
