//! Global and local communication (Xu & Subhlok 2008, §4, Fig. 3).
//!
//! In a logical program every rank runs the same calls with peers named by direction, so a send
//! to EAST is received by the neighbour's receive from WEST. A send or receive is **global** when
//! the program also contains the opposite call it pairs with, placed so that the pattern cannot
//! deadlock; otherwise it is **local** (it has no partner in the pattern). The rules, per Fig. 3:
//! - a non-blocking call is global when the next unmarked opposite call (the opposite kind in
//!   the opposite direction) comes before the Wait that completes it;
//! - a blocking call is global when the next unmarked opposite call comes with no other
//!   blocking send or receive in between.
//!
//! Global pairs whose sizes differ a little (an uneven decomposition: at most a quarter of the
//! larger) are balanced to the median of the two sizes (Xu & Subhlok's choice), so that both
//! sides move the same bytes. Sizes that differ more are different messages that happen to pair
//! by direction — on a 4 × 2 grid NPB CG's send SOUTH is a 14,000 B transpose while the receive
//! from NORTH is an 8 B reduction of another role — and keep their own: balanced, each link
//! would carry the mean (7,004 B), half or 875 times its bytes, and bandwidth-bound predictions
//! miss by a quarter. Receives post room for the largest message of their channel, so unequal
//! sizes still match. Findings come back as data: the marks, the balanced sizes, and counts per
//! kind.
//!
//! # Complexity
//! O(n) for a program of n calls (one queue of positions per kind of call, prefix counts of
//! blocking calls), after hashing each call's directions once.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use mpiskel_logicalize::{LogicalPeer, ProcessClass, Topology};
use mpiskel_trace::{Op, OpClass};
use serde::{Deserialize, Serialize};

/// Largest difference between the two sizes of a global pair that are balanced, as a share of
/// the larger.
const BALANCE_TOLERANCE: f64 = 0.25;

/// Whether two sizes of a global pair are one message of an uneven decomposition.
fn same_message(a: u64, b: u64) -> bool {
    let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
    hi - lo <= BALANCE_TOLERANCE * hi
}

/// One point-to-point call as matching sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct P2pCall {
    /// Whether it sends.
    pub send: bool,
    /// Whether it is non-blocking.
    pub nonblocking: bool,
    /// Direction name, e.g. `EAST` (shared with the program's direction, not a copy per call).
    pub dir: Arc<str>,
    /// The opposite direction, e.g. `WEST` (the direction the partner names this rank by).
    pub opposite: Arc<str>,
    /// Tag class.
    pub tag: i32,
    /// Bytes.
    pub bytes: u64,
    /// For non-blocking calls: the position of the Wait that completes it.
    pub wait_at: Option<usize>,
}

/// A call of the program: point-to-point, or anything else (which matching skips).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// A send or receive.
    P2p(P2pCall),
    /// A completion, collective, or anything else.
    Other,
}

/// How a call was marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// Paired with the call at this position.
    Global(usize),
    /// No partner in the pattern.
    Local,
    /// Not a send or receive.
    NotP2p,
}

/// The result of matching one program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matching {
    /// One mark per call.
    pub marks: Vec<Mark>,
    /// Sizes after balancing (unchanged for local calls and non-p2p calls).
    pub bytes: Vec<u64>,
    /// Global pairs.
    pub global_pairs: usize,
    /// Global pairs whose sizes were balanced.
    pub balanced: usize,
    /// Local sends.
    pub local_sends: usize,
    /// Local receives.
    pub local_recvs: usize,
}

/// The sizes of a program's calls after balancing and the counts of [`Matching`], without the
/// marks: what a skeleton is built from ([`balance_class`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Balanced {
    /// Sizes after balancing, one per call (0 for calls that are not sends or receives).
    pub bytes: Vec<u64>,
    /// Global pairs.
    pub global_pairs: usize,
    /// Global pairs whose sizes were balanced.
    pub balanced: usize,
    /// Local sends.
    pub local_sends: usize,
    /// Local receives.
    pub local_recvs: usize,
}

/// A call as the matching core sees it, in 24 bytes (a class's program can hold millions): its
/// kind (send or receive, direction, opposite direction) as a number, [`NOT_P2P`] for the rest.
#[derive(Debug, Clone, Copy)]
struct Item {
    bytes: u64,
    /// For a non-blocking call, the position of the wait that completes it ([`NONE`]: none).
    wait_at: usize,
    kind: u32,
    send: bool,
    nonblocking: bool,
}

/// The kind of a call that is not a send or receive.
const NOT_P2P: u32 = u32::MAX;

impl Item {
    /// A call that is not a send or receive (which matching skips).
    const OTHER: Item =
        Item { bytes: 0, wait_at: NONE, kind: NOT_P2P, send: false, nonblocking: false };
}
/// No position.
const NONE: usize = usize::MAX;
/// Marks of the core, beside a partner's position: not yet marked, local, not a send or receive.
const UNMARKED: usize = usize::MAX;
const LOCAL: usize = usize::MAX - 1;
const OTHER: usize = usize::MAX - 2;

/// Numbers the kinds of calls (send or receive, direction, opposite direction) in order of
/// first use, and finds the kind each pairs with.
#[derive(Debug, Default)]
struct Kinds<K> {
    ids: HashMap<(bool, K, K), u32>,
}

impl<K: std::hash::Hash + Eq + Clone> Kinds<K> {
    fn id(&mut self, send: bool, dir: &K, opposite: &K) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry((send, dir.clone(), opposite.clone())).or_insert(next)
    }

    /// For each kind, the kind it pairs with: the other kind, in the direction by which the
    /// partner names this rank.
    fn partners(&self) -> Vec<Option<u32>> {
        let mut out = vec![None; self.ids.len()];
        for ((send, dir, opp), &k) in &self.ids {
            out[k as usize] = self.ids.get(&(!send, opp.clone(), dir.clone())).copied();
        }
        out
    }
}

/// Marks every send and receive of `calls` global or local (Xu & Subhlok 2008, Fig. 3).
///
/// The next unmarked opposite call is found through one queue of positions per kind of call
/// (send or receive, direction, opposite direction), and "a blocking call in between" through
/// prefix counts, so that the whole program is matched in O(n) after hashing each call's kind
/// once (a call without partner no longer scans the rest of the program).
pub fn match_calls(calls: &[Call]) -> Matching {
    let mut kinds = Kinds::default();
    let items: Vec<Item> = calls
        .iter()
        .map(|c| match c {
            Call::P2p(p) => Item {
                bytes: p.bytes,
                wait_at: p.wait_at.unwrap_or(NONE),
                kind: kinds.id(p.send, &&*p.dir, &&*p.opposite),
                send: p.send,
                nonblocking: p.nonblocking,
            },
            Call::Other => Item::OTHER,
        })
        .collect();
    let (marks, b) = mark(&items, &kinds.partners());
    let marks = marks
        .into_iter()
        .map(|m| match m {
            LOCAL | UNMARKED => Mark::Local,
            OTHER => Mark::NotP2p,
            j => Mark::Global(j),
        })
        .collect();
    Matching {
        marks,
        bytes: b.bytes,
        global_pairs: b.global_pairs,
        balanced: b.balanced,
        local_sends: b.local_sends,
        local_recvs: b.local_recvs,
    }
}

/// [`match_calls`] of [`calls_of_class`] without either's list of calls: the sizes and counts
/// only, in about 56 bytes a call where the two take 130 while they run (ABySS, 2.5 million
/// calls a class: 200 MB at the peak of `build`).
///
/// # Complexity
/// O(n) for a class of n calls, as [`match_calls`].
pub fn balance_class(class: &ProcessClass, topo: Option<&Topology>) -> Balanced {
    let mut kinds = Kinds::default();
    let mut items: Vec<Item> = Vec::with_capacity(class.ops.len());
    each_call(class, topo, |send, nonblocking, dir, opposite, bytes| {
        items.push(match dir {
            Some(dir) => Item {
                bytes,
                wait_at: NONE,
                kind: kinds.id(send, &dir, &opposite),
                send,
                nonblocking,
            },
            None => Item::OTHER,
        });
    });
    for (w, op) in class.ops.iter().enumerate() {
        for &started in &op.completes {
            if let Some(x) = items.get_mut(started).filter(|x| x.nonblocking) {
                x.wait_at = w;
            }
        }
    }
    mark(&items, &kinds.partners()).1
}

/// The rules of Fig. 3 over `items`, the kinds paired by `partner_kind`: each call's mark (its
/// partner's position, [`LOCAL`] or [`OTHER`]) and the sizes and counts.
fn mark(items: &[Item], partner_kind: &[Option<u32>]) -> (Vec<usize>, Balanced) {
    let n = items.len();
    let mut marks: Vec<usize> =
        items.iter().map(|x| if x.kind == NOT_P2P { OTHER } else { UNMARKED }).collect();
    let mut bytes: Vec<u64> = items.iter().map(|x| x.bytes).collect();
    // Positions of each kind of call, in program order.
    let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); partner_kind.len()];
    for (i, x) in items.iter().enumerate().filter(|(_, x)| x.kind != NOT_P2P) {
        queues[x.kind as usize].push_back(i);
    }
    // blocking_before[j]: blocking sends and receives among items[..j].
    let mut blocking_before = Vec::with_capacity(n + 1);
    blocking_before.push(0usize);
    for x in items {
        let blocking = x.kind != NOT_P2P && !x.nonblocking;
        blocking_before.push(blocking_before.last().copied().unwrap_or(0) + blocking as usize);
    }
    let (mut global_pairs, mut balanced) = (0, 0);
    for (i, x) in items.iter().enumerate() {
        if marks[i] != UNMARKED {
            continue;
        }
        // The next unmarked opposite call. Every position before i is marked by now, so the
        // first unmarked entry of the partner kind's queue comes after i. Tags are not compared
        // (Xu & Subhlok match by direction and datatype; programs such as NPB BT compute tags
        // from their rank).
        let partner = partner_kind[x.kind as usize].and_then(|pk| {
            let q = &mut queues[pk as usize];
            while q.front().is_some_and(|&j| marks[j] != UNMARKED) {
                q.pop_front();
            }
            q.front().copied()
        });
        let ok = partner.is_some_and(|j| {
            if x.nonblocking {
                // It must come before the wait that completes this call.
                x.wait_at != NONE && j < x.wait_at
            } else {
                // No other blocking send or receive in between.
                blocking_before[j] == blocking_before[i + 1]
            }
        });
        match (ok, partner) {
            (true, Some(j)) => {
                marks[i] = j;
                marks[j] = i;
                global_pairs += 1;
                if bytes[i] != bytes[j] && same_message(bytes[i], bytes[j]) {
                    // The median of two sizes is their mean.
                    let m = (bytes[i] + bytes[j]) / 2;
                    bytes[i] = m;
                    bytes[j] = m;
                    balanced += 1;
                }
            }
            _ => marks[i] = LOCAL,
        }
    }
    let local = |send: bool| {
        marks
            .iter()
            .zip(items)
            .filter(|(&m, x)| m == LOCAL && x.kind != NOT_P2P && x.send == send)
            .count()
    };
    let (local_sends, local_recvs) = (local(true), local(false));
    (marks, Balanced { bytes, global_pairs, balanced, local_sends, local_recvs })
}

/// A direction's offset, as the logical trace shares it.
type Offset = Arc<[i64]>;

/// The calls of a process class's logical program, for [`match_calls`]. Calls whose partner
/// direction depends on the rank (trees) or that name no neighbour (`NULL`, exceptions) are
/// treated as having no partner.
pub fn calls_of_class(class: &ProcessClass, topo: Option<&Topology>) -> Vec<Call> {
    // Where each request is completed.
    let mut wait_at: Vec<Option<usize>> = vec![None; class.ops.len()];
    for (w, op) in class.ops.iter().enumerate() {
        for &started in &op.completes {
            wait_at[started] = Some(w);
        }
    }
    let mut calls = Vec::with_capacity(class.ops.len());
    each_call(class, topo, |send, nonblocking, dir, opposite, bytes| {
        let i = calls.len();
        calls.push(match dir {
            Some(dir) => Call::P2p(P2pCall {
                send,
                nonblocking,
                dir,
                opposite,
                tag: class.ops[i].tag_class,
                bytes,
                wait_at: if nonblocking { wait_at[i] } else { None },
            }),
            None => Call::Other,
        });
    });
    calls
}

/// Calls `f` for each call of `class` in order with what matching needs of it: whether it sends,
/// whether it is non-blocking, its direction (`None` for a call that is not a send or receive
/// to a direction, which matching skips) and the opposite direction (empty where the topology
/// has none), and its bytes.
fn each_call(
    class: &ProcessClass,
    topo: Option<&Topology>,
    mut f: impl FnMut(bool, bool, Option<Arc<str>>, Arc<str>, u64),
) {
    // The opposite of each direction, found once (a program of millions of calls names a few).
    let mut opposites: HashMap<(Arc<str>, Offset), Arc<str>> = HashMap::new();
    let none: Arc<str> = Arc::from("");
    for op in &class.ops {
        let k = &op.key;
        let send = match k.op.class() {
            OpClass::Send => true,
            OpClass::Recv => false,
            _ => {
                f(false, false, None, none.clone(), 0);
                continue;
            }
        };
        let Some(LogicalPeer::Dir(d)) = &k.peer else {
            f(false, false, None, none.clone(), 0);
            continue;
        };
        let opposite = opposites
            .entry((d.name.clone(), d.offset.clone()))
            .or_insert_with(|| {
                topo.and_then(|t| d.opposite(t)).map_or_else(|| none.clone(), |o| o.name)
            })
            .clone();
        let nonblocking = matches!(k.op, Op::Isend | Op::Issend | Op::Irsend | Op::Irecv);
        f(send, nonblocking, Some(d.name.clone()), opposite, k.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_blocking_p2p(c: &Call) -> bool {
        matches!(c, Call::P2p(p) if !p.nonblocking)
    }

    /// Every call unmarked but those that are not sends or receives, and the calls' sizes.
    fn unmarked(calls: &[Call]) -> (Vec<Option<Mark>>, Vec<u64>) {
        let marks =
            calls.iter().map(|c| matches!(c, Call::Other).then_some(Mark::NotP2p)).collect();
        let bytes = calls
            .iter()
            .map(|c| match c {
                Call::P2p(p) => p.bytes,
                Call::Other => 0,
            })
            .collect();
        (marks, bytes)
    }

    fn p(send: bool, nb: bool, dir: &str, opp: &str, bytes: u64, wait_at: Option<usize>) -> Call {
        Call::P2p(P2pCall {
            send,
            nonblocking: nb,
            dir: dir.into(),
            opposite: opp.into(),
            tag: 0,
            bytes,
            wait_at,
        })
    }

    #[test]
    fn ring_of_blocking_calls_is_global() {
        // Send RIGHT, Recv LEFT: the partner receives from LEFT what this rank sends RIGHT.
        let calls =
            [p(true, false, "RIGHT", "LEFT", 8, None), p(false, false, "LEFT", "RIGHT", 8, None)];
        let m = match_calls(&calls);
        assert_eq!(m.marks, vec![Mark::Global(1), Mark::Global(0)]);
        assert_eq!((m.local_sends, m.local_recvs), (0, 0));
    }

    #[test]
    fn halo_exchange_before_its_wait_is_global_and_balanced() {
        let calls = [
            p(false, true, "NORTH", "SOUTH", 100, Some(4)),
            p(false, true, "SOUTH", "NORTH", 100, Some(4)),
            p(true, true, "SOUTH", "NORTH", 120, Some(4)),
            p(true, true, "NORTH", "SOUTH", 100, Some(4)),
            Call::Other,
        ];
        let m = match_calls(&calls);
        assert_eq!(m.global_pairs, 2);
        assert_eq!(m.balanced, 1);
        // The receive from NORTH pairs with the send to SOUTH (what the northern neighbour
        // sends): 100 and 120 bytes balance to 110.
        assert_eq!(m.marks[0], Mark::Global(2));
        assert_eq!((m.bytes[0], m.bytes[2], m.bytes[1]), (110, 110, 100));
    }

    #[test]
    fn messages_of_different_roles_keep_their_sizes() {
        // A 14,000 B transpose sent SOUTH pairs by direction with an 8 B reduction received
        // from NORTH: both global, neither resized.
        let calls = [
            p(false, true, "NORTH", "SOUTH", 8, Some(2)),
            p(true, true, "SOUTH", "NORTH", 14_000, Some(2)),
            Call::Other,
        ];
        let m = match_calls(&calls);
        assert_eq!(m.global_pairs, 1);
        assert_eq!(m.balanced, 0);
        assert_eq!((m.bytes[0], m.bytes[1]), (8, 14_000));
    }

    #[test]
    fn a_send_without_partner_is_local() {
        // Send to WEST but nobody receives from EAST; a receive completed before its partner.
        let calls = [
            p(true, false, "WEST", "EAST", 8, None),
            p(false, true, "NORTH", "SOUTH", 8, Some(2)),
            Call::Other,
            p(true, true, "SOUTH", "NORTH", 8, Some(4)),
            Call::Other,
        ];
        let m = match_calls(&calls);
        assert_eq!(m.marks[0], Mark::Local);
        assert_eq!(m.marks[1], Mark::Local, "its partner comes after its wait");
        assert_eq!((m.local_sends, m.local_recvs), (2, 1));
    }

    #[test]
    fn a_blocking_call_in_between_makes_it_local() {
        let calls = [
            p(true, false, "EAST", "WEST", 8, None),
            p(false, false, "NORTH", "SOUTH", 8, None),
            p(false, false, "WEST", "EAST", 8, None),
        ];
        let m = match_calls(&calls);
        assert_eq!(m.marks[0], Mark::Local);
    }

    /// The rules of Fig. 3 as written: a linear search for each call's partner (O(n²)).
    fn reference(calls: &[Call]) -> (Vec<Mark>, Vec<u64>) {
        let n = calls.len();
        let (mut marks, mut bytes) = unmarked(calls);
        for i in 0..n {
            let Call::P2p(x) = &calls[i] else { continue };
            if marks[i].is_some() {
                continue;
            }
            let partner = (i + 1..n).find(|&j| {
                marks[j].is_none()
                    && matches!(&calls[j], Call::P2p(y)
                        if y.send != x.send && y.dir == x.opposite && x.dir == y.opposite)
            });
            let ok = partner.is_some_and(|j| {
                if x.nonblocking {
                    x.wait_at.is_some_and(|w| j < w)
                } else {
                    !calls[i + 1..j].iter().any(is_blocking_p2p)
                }
            });
            match (ok, partner) {
                (true, Some(j)) => {
                    marks[i] = Some(Mark::Global(j));
                    marks[j] = Some(Mark::Global(i));
                    if bytes[i] != bytes[j] && same_message(bytes[i], bytes[j]) {
                        let m = (bytes[i] + bytes[j]) / 2;
                        bytes[i] = m;
                        bytes[j] = m;
                    }
                }
                _ => marks[i] = Some(Mark::Local),
            }
        }
        (marks.into_iter().map(|m| m.unwrap_or(Mark::Local)).collect(), bytes)
    }

    #[test]
    fn queues_mark_as_the_linear_search_does() {
        // Random programs over a few directions (with SELF and a direction without opposite),
        // blocking and non-blocking calls, waits at random later positions.
        let dirs = [
            ("EAST", "WEST"),
            ("WEST", "EAST"),
            ("NORTH", "SOUTH"),
            ("SOUTH", "NORTH"),
            ("SELF", "SELF"),
            ("PARENT", ""),
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: usize| (mpiskel_trace::rng::splitmix64(&mut state) % m as u64) as usize;
        for case in 0..2_000 {
            let n = 1 + next(40);
            let calls: Vec<Call> = (0..n)
                .map(|i| {
                    if next(5) == 0 {
                        return Call::Other;
                    }
                    let (d, o) = dirs[next(dirs.len())];
                    let nb = next(2) == 0;
                    let wait_at = (nb && next(6) != 0).then(|| i + 1 + next(n - i));
                    p(next(2) == 0, nb, d, o, 8 * (1 + next(4) as u64), wait_at)
                })
                .collect();
            let m = match_calls(&calls);
            let (marks, bytes) = reference(&calls);
            assert_eq!((m.marks, m.bytes), (marks, bytes), "case {case}: {calls:?}");
        }
    }
}
