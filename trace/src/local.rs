//! Local calls: point-to-point calls that nothing in the trace matches (Xu & Subhlok 2008, §4).
//!
//! A run that finished can still hold messages that never met a partner: a receive posted in
//! advance for updates that stopped coming, then cancelled (`MPI_Cancel` and a wait); a send
//! to a rank that never received it before `MPI_Finalize`. A skeleton that makes those calls
//! would block forever on the machine it runs on — the deadlock check refuses it. Xu & Subhlok
//! classify such calls as *local* (no partner in the communication pattern) and leave them
//! out; this pass does so on the trace itself, before the loop discovery, so the loops see the
//! program without them:
//!
//! - On every channel (source, destination, tag) the *k*-th receive matches the *k*-th send (MPI
//!   does not let messages between a pair overtake). Receives whose tag is `MPI_ANY_TAG` and
//!   stayed unknown take the sends left on their (source, destination) pair. The sends or
//!   receives left over at the end of a channel are local; so is every receive whose source
//!   stayed unknown (its request never completed with a message).
//! - A local call is removed. A completion loses the local requests it completed, and is removed
//!   too when that leaves it nothing (a wait on a cancelled receive).
//! - The time of a removed call (its gap before it and its own duration) is added to the gap
//!   before the next call: the skeleton spends it computing, so the prediction keeps it.
//!
//! The two halves of `MPI_Sendrecv` are matched like any call but never removed (the call is
//! one); probes are not messages and are left alone.
//!
//! # Complexity
//! O(n log n) in the number of point-to-point events (channel maps are ordered), O(n) space.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::model::{OpClass, Payload, Peer, Rank, RankTrace, RequestId};

/// What removing local calls did to one trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalCalls {
    /// Sends nothing received.
    pub sends: u64,
    /// Receives nothing sent to.
    pub receives: u64,
    /// Completions removed because they completed only local requests.
    pub completions: u64,
    /// Bytes the removed sends and receives would have moved.
    pub bytes: u64,
    /// Nanoseconds the removed calls took, over all ranks (now computation before the next
    /// call).
    pub ns: u64,
    /// Halves of `MPI_Sendrecv` without a partner (kept: the call is one).
    pub unmatched_sendrecv: u64,
}

impl LocalCalls {
    /// Calls removed.
    pub fn calls(&self) -> u64 {
        self.sends + self.receives + self.completions
    }

    /// Adds what another pass removed.
    pub fn add(&mut self, other: &LocalCalls) {
        self.sends += other.sends;
        self.receives += other.receives;
        self.completions += other.completions;
        self.bytes += other.bytes;
        self.ns += other.ns;
        self.unmatched_sendrecv += other.unmatched_sendrecv;
    }
}

/// One point-to-point half: (rank index, event index, whether it can be removed). 32-bit
/// indices (12 bytes a half, not 24): a rank of 2³² events would hold over 500 GB of them.
pub(crate) type Half = (u32, u32, bool);

/// The point-to-point halves of `ranks` matched as MPI matches them (see the module
/// documentation): each pair given to `pair` as (send, receive); returns the halves nothing
/// matches. The pairs are handed over rather than collected: the removal of local calls needs
/// only the unmatched halves, and a list of millions of pairs would add to `build`'s peak
/// (NPB LU A on 64 ranks: 97 MB).
pub(crate) fn pair_up(ranks: &[RankTrace], mut pair: impl FnMut(Half, Half)) -> Vec<Half> {
    // Channels: sends and receives per (source, destination, tag), in program order.
    let mut sends: BTreeMap<(Rank, Rank, i32), Vec<Half>> = BTreeMap::new();
    let mut recvs: BTreeMap<(Rank, Rank, i32), Vec<Half>> = BTreeMap::new();
    let mut any_tag: BTreeMap<(Rank, Rank), Vec<Half>> = BTreeMap::new();
    let mut local: Vec<Half> = Vec::new();
    for (ri, r) in ranks.iter().enumerate() {
        let me = r.rank;
        let ri = ri as u32;
        for (ei, e) in r.events.iter().enumerate() {
            let ei = ei as u32;
            match (&e.payload, e.op.class()) {
                (Payload::P2p { peer: Peer::Rank(to), tag, .. }, OpClass::Send) => {
                    sends.entry((me, *to, *tag)).or_default().push((ri, ei, true));
                }
                (Payload::P2p { peer, tag, .. }, OpClass::Recv) => match peer {
                    Peer::Rank(from) if *tag >= 0 => {
                        recvs.entry((*from, me, *tag)).or_default().push((ri, ei, true))
                    }
                    Peer::Rank(from) => {
                        any_tag.entry((*from, me)).or_default().push((ri, ei, true))
                    }
                    Peer::Any => local.push((ri, ei, true)),
                    Peer::Null => {}
                },
                (Payload::SendRecv { dest, send_tag, source, recv_tag, .. }, _) => {
                    if let Peer::Rank(to) = dest {
                        sends.entry((me, *to, *send_tag)).or_default().push((ri, ei, false));
                    }
                    match source {
                        Peer::Rank(from) if *recv_tag >= 0 => {
                            recvs.entry((*from, me, *recv_tag)).or_default().push((ri, ei, false))
                        }
                        Peer::Rank(from) => {
                            any_tag.entry((*from, me)).or_default().push((ri, ei, false))
                        }
                        Peer::Any => local.push((ri, ei, false)),
                        Peer::Null => {}
                    }
                }
                _ => {}
            }
        }
    }
    // Sends left on each pair after its channels matched, for the receives of any tag.
    let mut left: BTreeMap<(Rank, Rank), Vec<Half>> = BTreeMap::new();
    for (key, s) in &sends {
        let r = recvs.get(key).map_or(&[][..], Vec::as_slice);
        s.iter().zip(r).for_each(|(&a, &b)| pair(a, b));
        local.extend_from_slice(r.get(s.len()..).unwrap_or(&[]));
        left.entry((key.0, key.1)).or_default().extend_from_slice(s.get(r.len()..).unwrap_or(&[]));
    }
    for (key, r) in &recvs {
        if !sends.contains_key(key) {
            local.extend_from_slice(r);
        }
    }
    for (channel, r) in &any_tag {
        let s = left.remove(channel).unwrap_or_default();
        s.iter().zip(r).for_each(|(&a, &b)| pair(a, b));
        local.extend_from_slice(r.get(s.len()..).unwrap_or(&[]));
        left.insert(*channel, s.get(r.len()..).unwrap_or(&[]).to_vec());
    }
    local.extend(left.into_values().flatten());
    local
}

/// Removes the local calls of `ranks` (see the module documentation); returns what it removed.
pub fn drop_local_calls(ranks: &mut [RankTrace]) -> LocalCalls {
    let mut out = LocalCalls::default();
    let local = pair_up(ranks, |_, _| {});
    if local.is_empty() {
        return out;
    }
    // Remove them, rank by rank.
    let mut per_rank: Vec<Vec<usize>> = vec![Vec::new(); ranks.len()];
    for (ri, ei, removable) in local {
        if removable {
            per_rank[ri as usize].push(ei as usize);
        } else {
            out.unmatched_sendrecv += 1;
        }
    }
    for (r, gone) in ranks.iter_mut().zip(per_rank) {
        if gone.is_empty() {
            continue;
        }
        let mut drop = vec![false; r.events.len()];
        for i in gone {
            drop[i] = true;
        }
        let mut requests: HashSet<RequestId> = HashSet::new();
        for (i, e) in r.events.iter_mut().enumerate() {
            if drop[i] {
                if let Payload::P2p { request, bytes, .. } = &e.payload {
                    requests.extend(*request);
                    out.bytes += bytes;
                }
                if e.op.class() == OpClass::Send {
                    out.sends += 1;
                } else {
                    out.receives += 1;
                }
            } else if let Payload::Completion { completed, n_given } = &mut e.payload {
                let before = completed.len();
                completed.retain(|c| c.request.is_none_or(|q| !requests.contains(&q)));
                let removed = (before - completed.len()) as u32;
                if removed > 0 {
                    *n_given = n_given.saturating_sub(removed);
                    if completed.is_empty() {
                        out.completions += 1;
                        drop[i] = true;
                    }
                }
            }
        }
        out.ns += remove_events(r, &drop);
    }
    out
}

/// Removes the events marked in `drop`, adding each one's gap and duration to the gap before the
/// next kept call (or to the trailing gap); returns the nanoseconds moved.
fn remove_events(r: &mut RankTrace, drop: &[bool]) -> u64 {
    let (mut carry, mut carry_cpu, mut moved) = (0u64, 0u64, 0u64);
    // In place: a copy of the kept calls would hold a rank's trace twice (220 MB for one rank
    // of an ABySS run of 3.7 M calls).
    let mut i = 0;
    r.events.retain_mut(|e| {
        let d = drop.get(i).copied().unwrap_or(false);
        i += 1;
        // Saturating: a file's times may be anything (a mutated one near u64::MAX), and a
        // time that cannot be represented stays the largest one, not a wrapped small one.
        if d {
            let own = e.exit_ns.saturating_sub(e.enter_ns);
            moved = moved.saturating_add(own);
            carry = carry.saturating_add(e.gap_ns.saturating_add(own));
            carry_cpu =
                carry_cpu.saturating_add(e.gap_cpu_ns.unwrap_or(e.gap_ns).saturating_add(own));
            return false;
        }
        if carry > 0 {
            e.gap_ns = e.gap_ns.saturating_add(carry);
            e.gap_cpu_ns = e.gap_cpu_ns.map(|c| c.saturating_add(carry_cpu));
            (carry, carry_cpu) = (0, 0);
        }
        true
    });
    r.trailing_gap_ns = r.trailing_gap_ns.saturating_add(carry);
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CommId, Completed, Event, Op, RankInfo};

    fn p2p(op: Op, gap: u64, peer: Peer, tag: i32, request: Option<u32>) -> Event {
        let payload = Payload::P2p {
            peer,
            tag,
            bytes: 100,
            comm: CommId::WORLD,
            request: request.map(RequestId),
            wildcards: Default::default(),
        };
        Event {
            op,
            enter_ns: 0,
            exit_ns: 1_000,
            gap_ns: gap,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        }
    }
    fn wait(gap: u64, requests: &[u32]) -> Event {
        let completed = requests
            .iter()
            .map(|&r| Completed {
                request: Some(RequestId(r)),
                source: None,
                tag: None,
                bytes: None,
            })
            .collect();
        let payload = Payload::Completion { n_given: requests.len() as u32, completed };
        Event {
            op: Op::Waitall,
            enter_ns: 0,
            exit_ns: 2_000,
            gap_ns: gap,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        }
    }
    fn rank(r: u32, events: Vec<Event>) -> RankTrace {
        RankTrace {
            rank: Rank(r),
            info: RankInfo { n_ranks: 2, ..RankInfo::default() },
            events,
            trailing_gap_ns: 0,
            comms: Default::default(),
            record_counts: Default::default(),
            unrecorded: Default::default(),
        }
    }
    fn ops(r: &RankTrace) -> Vec<Op> {
        r.events.iter().map(|e| e.op).collect()
    }

    #[test]
    fn a_cancelled_receive_and_its_wait_are_local_and_their_time_stays() {
        // Rank 0 sends once to rank 1; rank 1 receives it, then posts a receive from any source
        // that nothing matches, cancels it and waits (the wait completes only that request).
        let mut ranks = vec![
            rank(0, vec![p2p(Op::Send, 10, Peer::Rank(Rank(1)), 3, None)]),
            rank(
                1,
                vec![
                    p2p(Op::Recv, 10, Peer::Rank(Rank(0)), 3, None),
                    p2p(Op::Irecv, 500, Peer::Any, 3, Some(1)),
                    wait(700, &[1]),
                    p2p(Op::Barrier, 40, Peer::Null, 0, None),
                ],
            ),
        ];
        let out = drop_local_calls(&mut ranks);
        assert_eq!((out.sends, out.receives, out.completions, out.bytes), (0, 1, 1, 100));
        assert_eq!(out.ns, 3_000);
        assert_eq!(ops(&ranks[1]), [Op::Recv, Op::Barrier]);
        // The barrier's gap holds the removed calls' gaps and durations.
        assert_eq!(ranks[1].events[1].gap_ns, 500 + 1_000 + 700 + 2_000 + 40);
        assert_eq!(ops(&ranks[0]), [Op::Send]);
    }

    /// A mutated time-independent trace (`mpiskel-fuzz ti --read-only --seed 34404802`) gave a
    /// local call a gap near 2⁶⁴ ns: moved onto the next call, it overflowed. Times saturate.
    #[test]
    fn gaps_moved_from_local_calls_saturate() {
        let mut ranks = vec![
            rank(0, vec![p2p(Op::Send, 10, Peer::Rank(Rank(1)), 3, None)]),
            rank(
                1,
                vec![
                    p2p(Op::Recv, 10, Peer::Rank(Rank(0)), 3, None),
                    p2p(Op::Irecv, u64::MAX - 10, Peer::Any, 3, Some(1)),
                    wait(700, &[1]),
                    p2p(Op::Barrier, u64::MAX - 10, Peer::Null, 0, None),
                ],
            ),
        ];
        drop_local_calls(&mut ranks);
        assert_eq!(ops(&ranks[1]), [Op::Recv, Op::Barrier]);
        assert_eq!(ranks[1].events[1].gap_ns, u64::MAX);
    }

    #[test]
    fn sends_left_over_on_a_channel_are_local_and_waits_keep_their_other_requests() {
        // Rank 0 sends three messages with tag 1 (the last non-blocking), rank 1 receives two:
        // the third send is local; the Waitall that completed it and another request keeps the
        // other. A receive of any tag takes what a channel of its pair left over.
        let to1 = Peer::Rank(Rank(1));
        let mut ranks = vec![
            rank(
                0,
                vec![
                    p2p(Op::Send, 0, to1, 1, None),
                    p2p(Op::Send, 0, to1, 1, None),
                    p2p(Op::Isend, 0, to1, 1, Some(1)),
                    p2p(Op::Isend, 0, to1, 2, Some(2)),
                    wait(0, &[1, 2]),
                ],
            ),
            rank(
                1,
                vec![
                    p2p(Op::Recv, 0, Peer::Rank(Rank(0)), 1, None),
                    p2p(Op::Recv, 0, Peer::Rank(Rank(0)), 1, None),
                    p2p(Op::Recv, 0, Peer::Rank(Rank(0)), -1, None),
                ],
            ),
        ];
        let out = drop_local_calls(&mut ranks);
        // Four sends, three receives: the tag-2 send is left over (the receive of any tag took
        // the third of tag 1), and the Waitall keeps only the third send's request.
        assert_eq!((out.sends, out.receives, out.completions), (1, 0, 0), "{out:?}");
        assert_eq!(ops(&ranks[0]), [Op::Send, Op::Send, Op::Isend, Op::Waitall]);
        let Payload::Completion { n_given, completed } = &ranks[0].events[3].payload else {
            panic!("not a completion")
        };
        assert_eq!((*n_given, completed.len()), (1, 1));
        // Without the receive of any tag, the third send is local too, and the Waitall with it.
        ranks[1].events.pop();
        let out = drop_local_calls(&mut ranks);
        assert_eq!((out.sends, out.receives, out.completions), (1, 0, 1), "{out:?}");
        assert_eq!(ops(&ranks[0]), [Op::Send, Op::Send]);
    }

    #[test]
    fn a_matched_trace_is_left_alone() {
        let mut ranks = vec![
            rank(0, vec![p2p(Op::Send, 5, Peer::Rank(Rank(1)), 0, None)]),
            rank(1, vec![p2p(Op::Recv, 5, Peer::Rank(Rank(0)), 0, None)]),
        ];
        let before = ranks.clone();
        assert_eq!(drop_local_calls(&mut ranks), LocalCalls::default());
        assert_eq!(ranks, before);
    }
}
