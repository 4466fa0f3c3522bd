//! Deadlock check of a program before it is emitted (Xu & Subhlok 2008, §4: a skeleton must not hang).
//!
//! Every rank's program is executed abstractly, all ranks together, under the strictest MPI
//! semantics a correct program must survive:
//! - a blocking send completes only once a matching receive is posted (as `MPI_Ssend`; no
//!   eager buffering is assumed);
//! - a non-blocking request completes only when it is matched *and* waited for;
//! - a blocking receive completes when a matching send is posted;
//! - a collective completes when every member of its communicator has reached it (each member's
//!   k-th collective on a communicator meets the others' k-th).
//!
//! Messages match as in MPI: by source (or any source), destination and tag (or any tag: a
//! negative tag), and in posting order between a pair (non-overtaking). The execution runs until every rank has finished or
//! none can move; in the latter case the result is a [`Deadlock`] naming each blocked rank, the
//! operation it is in and what that waits for. Findings are data, not errors.
//!
//! Programs reach the checker as per-rank sequences of [`CheckOp`]s, loops already expanded (cut
//! to a few iterations).
//!
//! # Complexity
//! O(ranks × steps) rounds of O(ranks) in the worst case; each operation is matched in O(1)
//! amortised through per-(source, destination, tag) queues.

use std::collections::{HashMap, VecDeque};
use std::fmt;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A request slot of one rank (the rank's own numbering).
pub type Slot = u32;

/// One operation as the checker sees it. Ranks are world ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOp {
    /// A blocking send.
    Send {
        /// Destination.
        to: u32,
        /// Tag.
        tag: i32,
    },
    /// A non-blocking send into request `slot`.
    Isend {
        /// Destination.
        to: u32,
        /// Tag.
        tag: i32,
        /// Request slot.
        slot: Slot,
    },
    /// A blocking receive (`from: None` is `MPI_ANY_SOURCE`).
    Recv {
        /// Source.
        from: Option<u32>,
        /// Tag.
        tag: i32,
    },
    /// A non-blocking receive into request `slot`.
    Irecv {
        /// Source.
        from: Option<u32>,
        /// Tag.
        tag: i32,
        /// Request slot.
        slot: Slot,
    },
    /// Waits for every request in `slots`.
    Wait {
        /// Request slots.
        slots: Vec<Slot>,
    },
    /// A collective over the ranks `members` (sorted), identified by `comm`.
    Collective {
        /// Communicator id, shared by all its members.
        comm: u32,
        /// Its members: one list shared by every member's operations (a world collective at
        /// 16,384 ranks would otherwise list them again for every rank and call).
        members: Arc<[u32]>,
        /// What it is, for diagnostics (e.g. `Allreduce`).
        name: String,
    },
}

impl fmt::Display for CheckOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let src =
            |s: &Option<u32>| s.map_or_else(|| "ANY_SOURCE".to_owned(), |r| format!("rank {r}"));
        match self {
            CheckOp::Send { to, tag } => write!(f, "MPI_Send to rank {to} (tag {tag})"),
            CheckOp::Isend { to, tag, slot } => {
                write!(f, "MPI_Isend to rank {to} (tag {tag}, request {slot})")
            }
            CheckOp::Recv { from, tag } => write!(f, "MPI_Recv from {} (tag {tag})", src(from)),
            CheckOp::Irecv { from, tag, slot } => {
                write!(f, "MPI_Irecv from {} (tag {tag}, request {slot})", src(from))
            }
            CheckOp::Wait { slots } => write!(f, "MPI_Wait on requests {slots:?}"),
            CheckOp::Collective { name, comm, .. } => {
                write!(f, "MPI_{name} on communicator {comm}")
            }
        }
    }
}

/// One blocked rank of a deadlock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocked {
    /// The rank.
    pub rank: u32,
    /// Position of the operation in the rank's program.
    pub position: usize,
    /// The operation.
    pub op: CheckOp,
    /// What it waits for.
    pub waits_for: String,
}

/// A program that can block forever.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadlock {
    /// Every rank that cannot finish.
    pub blocked: Vec<Blocked>,
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "the program can block forever; {} ranks cannot finish:", self.blocked.len())?;
        for b in &self.blocked {
            writeln!(
                f,
                "  rank {} at operation {}: {} waits for {}",
                b.rank, b.position, b.op, b.waits_for
            )?;
        }
        Ok(())
    }
}

/// A posted send or receive, waiting for its partner.
#[derive(Debug, Clone, Copy)]
struct Posted {
    rank: u32,
    /// Request slot, or `None` for a blocking call.
    slot: Option<Slot>,
}

#[derive(Default)]
struct Matcher {
    /// Unmatched sends by (source, destination, tag), in posting order.
    sends: HashMap<(u32, u32, i32), VecDeque<Posted>>,
    /// Unmatched receives by destination, in posting order: (source or any, tag, who).
    recvs: HashMap<u32, VecDeque<(Option<u32>, i32, Posted)>>,
    /// Matched (rank, slot) pairs; blocking calls use slot `u32::MAX`.
    matched: HashMap<(u32, Slot), bool>,
}

const BLOCKING: Slot = Slot::MAX;

impl Matcher {
    fn done(&mut self, p: Posted) {
        self.matched.insert((p.rank, p.slot.unwrap_or(BLOCKING)), true);
    }

    fn is_matched(&self, rank: u32, slot: Slot) -> bool {
        self.matched.get(&(rank, slot)).copied().unwrap_or(false)
    }

    fn post_send(&mut self, from: u32, to: u32, tag: i32, slot: Option<Slot>) {
        let me = Posted { rank: from, slot };
        if let Some(q) = self.recvs.get_mut(&to) {
            if let Some(i) = q
                .iter()
                .position(|(src, t, _)| (*t < 0 || *t == tag) && src.is_none_or(|s| s == from))
            {
                let (_, _, r) = q.remove(i).expect("position is valid");
                self.done(r);
                self.done(me);
                return;
            }
        }
        self.sends.entry((from, to, tag)).or_default().push_back(me);
    }

    fn post_recv(&mut self, to: u32, from: Option<u32>, tag: i32, slot: Option<Slot>) {
        let me = Posted { rank: to, slot };
        let key = match from {
            Some(s) if tag >= 0 => {
                Some((s, to, tag)).filter(|k| self.sends.get(k).is_some_and(|q| !q.is_empty()))
            }
            // Any source or any tag (negative): the oldest matching send is taken from the
            // lowest source and tag (any choice is a possible execution; the check is for the
            // program, not this order).
            _ => self
                .sends
                .iter()
                .filter(|((s, d, t), q)| {
                    *d == to
                        && (tag < 0 || *t == tag)
                        && from.is_none_or(|f| f == *s)
                        && !q.is_empty()
                })
                .map(|(k, _)| *k)
                .min(),
        };
        if let Some(k) = key {
            let s =
                self.sends.get_mut(&k).and_then(VecDeque::pop_front).expect("queue is not empty");
            self.done(s);
            self.done(me);
            return;
        }
        self.recvs.entry(to).or_default().push_back((from, tag, me));
    }
}

/// Executes all ranks' programs together; `None` when every rank finishes.
pub fn check(programs: &[Vec<CheckOp>]) -> Option<Deadlock> {
    let n = programs.len();
    let mut pc = vec![0usize; n];
    // Whether the blocking call at pc has been posted already.
    let mut posted = vec![false; n];
    let mut m = Matcher::default();
    // Collectives: per communicator, how many each member has completed, and who is waiting.
    let mut coll_done: HashMap<(u32, u32), usize> = HashMap::new();
    let mut arrived: HashMap<(u32, usize), Vec<u32>> = HashMap::new();
    // The kind of each collective, as the first member to reach it made it: a member that makes
    // another kind at the same point (an `MPI_Barrier` where the others reduce) never completes,
    // as in MPI, where mismatched collectives hang or fail.
    let mut kinds: HashMap<(u32, usize), &str> = HashMap::new();
    loop {
        let mut progress = false;
        for r in 0..n {
            while let Some(op) = programs[r].get(pc[r]) {
                let rank = r as u32;
                let advance = match op {
                    CheckOp::Isend { to, tag, slot } => {
                        m.post_send(rank, *to, *tag, Some(*slot));
                        true
                    }
                    CheckOp::Irecv { from, tag, slot } => {
                        m.post_recv(rank, *from, *tag, Some(*slot));
                        true
                    }
                    CheckOp::Send { .. } | CheckOp::Recv { .. } => {
                        // A blocking call is posted once, then waits for its match.
                        if !posted[r] {
                            posted[r] = true;
                            m.matched.remove(&(rank, BLOCKING));
                            match op {
                                CheckOp::Send { to, tag } => m.post_send(rank, *to, *tag, None),
                                CheckOp::Recv { from, tag } => m.post_recv(rank, *from, *tag, None),
                                _ => unreachable!("matched above"),
                            }
                        }
                        m.is_matched(rank, BLOCKING)
                    }
                    CheckOp::Wait { slots } => slots.iter().all(|s| m.is_matched(rank, *s)),
                    CheckOp::Collective { comm, members, name } => {
                        let k = *coll_done.get(&(*comm, rank)).unwrap_or(&0);
                        let kind = *kinds.entry((*comm, k)).or_insert(name.as_str());
                        if kind != name.as_str() {
                            false
                        } else {
                            if !posted[r] {
                                posted[r] = true;
                                arrived.entry((*comm, k)).or_default().push(rank);
                            }
                            let here = arrived.get(&(*comm, k)).map_or(0, Vec::len);
                            here == members.len()
                        }
                    }
                };
                if !advance {
                    break;
                }
                if let CheckOp::Collective { comm, .. } = op {
                    *coll_done.entry((*comm, rank)).or_insert(0) += 1;
                }
                if let CheckOp::Wait { slots } = op {
                    for s in slots {
                        m.matched.remove(&(rank, *s));
                    }
                }
                posted[r] = false;
                pc[r] += 1;
                progress = true;
            }
        }
        if (0..n).all(|r| pc[r] == programs[r].len()) {
            return None;
        }
        if !progress {
            break;
        }
    }
    let blocked = (0..n)
        .filter(|&r| pc[r] < programs[r].len())
        .map(|r| {
            let op = programs[r][pc[r]].clone();
            let waits_for = match &op {
                CheckOp::Send { to, .. } => format!("rank {to} to post a matching receive"),
                CheckOp::Recv { from: Some(f), .. } => format!("rank {f} to post a matching send"),
                CheckOp::Recv { from: None, .. } => "any rank to post a matching send".into(),
                CheckOp::Wait { slots } => {
                    let open: Vec<_> =
                        slots.iter().filter(|s| !m.is_matched(r as u32, **s)).collect();
                    format!("requests {open:?}, which nobody matches")
                }
                CheckOp::Collective { comm, members, name } => {
                    let k = *coll_done.get(&(*comm, r as u32)).unwrap_or(&0);
                    match kinds.get(&(*comm, k)) {
                        Some(kind) if *kind != name.as_str() => format!(
                            "the other members, which made an MPI_{kind} at this point of the \
                             communicator"
                        ),
                        _ => {
                            let here = arrived.get(&(*comm, k)).cloned().unwrap_or_default();
                            let missing: Vec<_> =
                                members.iter().filter(|x| !here.contains(x)).collect();
                            format!("ranks {missing:?} to reach it")
                        }
                    }
                }
                CheckOp::Isend { .. } | CheckOp::Irecv { .. } => "nothing (it cannot block)".into(),
            };
            Blocked { rank: r as u32, position: pc[r], op, waits_for }
        })
        .collect();
    Some(Deadlock { blocked })
}
