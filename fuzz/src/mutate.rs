//! Mutations: of a trace's events (what a tracer with a bug, a truncated run or a hand-edited
//! file could produce) and of a file's bytes (what a disk, a transfer or another tool could).
//!
//! Event mutations keep the model's types but break its promises: calls dropped, repeated,
//! moved or swapped between ranks; peers, roots, tags, sizes, communicators and requests set to
//! other values, in range or not; extreme times; a rank cut short. Byte mutations follow the
//! usual mutational fuzzers (AFL's havoc stage, Zalewski 2014): bit flips, interesting values
//! (0, −1, 2³¹, …) written over 1, 2, 4 or 8 bytes, blocks deleted, repeated or spliced from
//! another file, truncation.
//!
//! Each mutation is O(events) or O(bytes) at most.

use std::sync::Arc;

use mpiskel_trace::{CommId, Op, Payload, Peer, Rank, RankTrace, RequestId};

use crate::rng::Rng;

/// Values that break arithmetic and bounds: zero, one, signed and unsigned extremes.
const INTERESTING: [u64; 10] =
    [0, 1, 2, 0x7f, 0xff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, u64::MAX / 2, u64::MAX];

/// How many mutations to apply: one half of the time (so that most mutated inputs still get
/// past their first check), otherwise up to `most`.
fn count(rng: &mut Rng, most: u64) -> u64 {
    if rng.chance(0.5) {
        1
    } else {
        rng.range(1, most.max(1))
    }
}

/// Applies 1 to `most` random event mutations to `ranks`; returns their names.
pub fn events(rng: &mut Rng, ranks: &mut [RankTrace], most: u64) -> Vec<&'static str> {
    let mut done = Vec::new();
    if ranks.is_empty() {
        return done;
    }
    for _ in 0..count(rng, most) {
        let n = ranks.len() as u64;
        let r = rng.below(n) as usize;
        let len = ranks[r].events.len() as u64;
        if len == 0 {
            continue;
        }
        let i = rng.below(len) as usize;
        let name = match rng.below(12) {
            0 => {
                ranks[r].events.remove(i);
                "drop a call"
            }
            1 => {
                let e = ranks[r].events[i].clone();
                ranks[r].events.insert(i, e);
                "repeat a call"
            }
            2 => {
                let j = rng.below(len) as usize;
                ranks[r].events.swap(i, j);
                "swap two calls"
            }
            3 => {
                let to = rng.below(n) as usize;
                let e = ranks[r].events[i].clone();
                let at = rng.below(ranks[to].events.len() as u64 + 1) as usize;
                ranks[to].events.insert(at, e);
                "copy a call to another rank"
            }
            4 => {
                let at = rng.below(len + 1) as usize;
                ranks[r].events.truncate(at);
                "cut a rank short"
            }
            5 => {
                let p = peer(rng, n);
                set_peer(&mut ranks[r].events[i].payload, p);
                "change a peer"
            }
            6 => {
                let b = if rng.chance(0.5) { *rng.pick(&INTERESTING) } else { rng.below(1 << 24) };
                set_bytes(&mut ranks[r].events[i].payload, b);
                "change a size"
            }
            7 => {
                let c = CommId(rng.below(5) as u32);
                set_comm(&mut ranks[r].events[i].payload, c);
                "change a communicator"
            }
            8 => {
                let e = &mut ranks[r].events[i];
                match rng.below(3) {
                    0 => e.gap_ns = *rng.pick(&INTERESTING),
                    1 => e.exit_ns = e.enter_ns.saturating_sub(rng.below(1000)),
                    _ => e.enter_ns = *rng.pick(&INTERESTING),
                }
                "extreme times"
            }
            9 => {
                set_request(&mut ranks[r].events[i].payload, RequestId(rng.below(40) as u32));
                "change a request"
            }
            10 => {
                let e = &mut ranks[r].events[i];
                let same: Vec<Op> =
                    Op::ALL.iter().copied().filter(|o| o.class() == e.op.class()).collect();
                e.op = *rng.pick(&same);
                "change an operation within its kind"
            }
            _ => {
                let members: Arc<[Rank]> =
                    (0..rng.range(0, n + 1)).map(|_| Rank(rng.below(n + 1) as u32)).collect();
                ranks[r].comms.insert(CommId(rng.below(4) as u32), members);
                "change a communicator's members"
            }
        };
        done.push(name);
    }
    done
}

/// Sets every rank's times in order again after events moved: each call enters after its gap
/// and leaves after its duration (both capped at a second), so that a mutated trace passes the
/// reader boundary's time check and reaches the later stages.
pub fn retime(ranks: &mut [RankTrace]) {
    const CAP: u64 = 1_000_000_000;
    for t in ranks {
        let mut clock = 0u64;
        for e in &mut t.events {
            let duration = e.exit_ns.saturating_sub(e.enter_ns).min(CAP);
            e.gap_ns = e.gap_ns.min(CAP);
            e.enter_ns = clock + e.gap_ns;
            e.exit_ns = e.enter_ns + duration;
            clock = e.exit_ns;
        }
    }
}

fn peer(rng: &mut Rng, n: u64) -> Peer {
    match rng.below(10) {
        0 => Peer::Any,
        1 => Peer::Null,
        2 => Peer::Rank(Rank(n as u32 + rng.below(3) as u32)),
        _ => Peer::Rank(Rank(rng.below(n) as u32)),
    }
}

fn set_peer(p: &mut Payload, to: Peer) {
    match p {
        Payload::P2p { peer, tag, .. } => {
            *peer = to;
            *tag ^= 1;
        }
        Payload::SendRecv { dest, source, .. } => {
            if to == Peer::Any {
                *source = to;
            } else {
                *dest = to;
            }
        }
        Payload::Collective { root, .. } => *root = to.rank(),
        Payload::Completion { completed, .. } => {
            if let Some(c) = completed.first_mut() {
                c.source = to.rank();
            }
        }
        Payload::None | Payload::Comm { .. } => {}
    }
}

fn set_bytes(p: &mut Payload, b: u64) {
    match p {
        Payload::P2p { bytes, .. } => *bytes = b,
        Payload::SendRecv { send_bytes, .. } => *send_bytes = b,
        Payload::Collective { send_bytes, recv_counts, .. } => {
            *send_bytes = b;
            if let Some(c) = recv_counts.as_mut().and_then(|c| c.first_mut()) {
                *c = b;
            }
        }
        Payload::Completion { completed, .. } => {
            if let Some(c) = completed.first_mut() {
                c.bytes = Some(b);
            }
        }
        Payload::None | Payload::Comm { .. } => {}
    }
}

fn set_comm(p: &mut Payload, to: CommId) {
    match p {
        Payload::P2p { comm, .. } | Payload::SendRecv { comm, .. } => *comm = to,
        Payload::Collective { comm, .. } => *comm = to,
        Payload::Comm { created, .. } => *created = Some(to),
        Payload::None | Payload::Completion { .. } => {}
    }
}

fn set_request(p: &mut Payload, to: RequestId) {
    match p {
        Payload::P2p { request, .. } | Payload::Collective { request, .. } => *request = Some(to),
        Payload::Completion { completed, n_given } => match completed.first_mut() {
            Some(c) => c.request = Some(to),
            None => *n_given = n_given.wrapping_add(1),
        },
        Payload::None | Payload::SendRecv { .. } | Payload::Comm { .. } => {}
    }
}

/// Applies 1 to `most` random byte mutations to `bytes`, splicing from `other` where it draws
/// that; returns their names.
pub fn bytes(rng: &mut Rng, bytes: &mut Vec<u8>, other: &[u8], most: u64) -> Vec<&'static str> {
    let mut done = Vec::new();
    for _ in 0..count(rng, most) {
        let len = bytes.len() as u64;
        let at = rng.below(len.max(1)) as usize;
        let name = match rng.below(8) {
            0 if len > 0 => {
                bytes[at] ^= 1 << rng.below(8);
                "flip a bit"
            }
            1 if len > 0 => {
                bytes[at] = rng.next_u64() as u8;
                "set a byte"
            }
            2 if len > 0 => {
                let width = *rng.pick(&[1usize, 2, 4, 8]);
                let v = rng.pick(&INTERESTING).to_le_bytes();
                let end = (at + width).min(bytes.len());
                bytes[at..end].copy_from_slice(&v[..end - at]);
                "write an interesting value"
            }
            3 if len > 0 => {
                let end = (at + rng.range(1, 64) as usize).min(bytes.len());
                bytes.drain(at..end);
                "delete a block"
            }
            4 if len > 0 => {
                let end = (at + rng.range(1, 64) as usize).min(bytes.len());
                let block = bytes[at..end].to_vec();
                let to = rng.below(len + 1) as usize;
                bytes.splice(to..to, block);
                "repeat a block"
            }
            5 if !other.is_empty() => {
                let from = rng.below(other.len() as u64) as usize;
                let end = (from + rng.range(1, 256) as usize).min(other.len());
                let to = rng.below(len + 1) as usize;
                bytes.splice(to..to, other[from..end].iter().copied());
                "splice from another file"
            }
            6 => {
                bytes.truncate(rng.below(len + 1) as usize);
                "truncate"
            }
            _ if len > 0 => {
                // Text formats: a digit, sign or separator where a token was.
                bytes[at] = *rng.pick(b"0123456789-+.e \n\t");
                "set a text character"
            }
            _ => "nothing",
        };
        done.push(name);
    }
    done
}
