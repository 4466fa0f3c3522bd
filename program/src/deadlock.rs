//! Deadlock check of a program before it is emitted (Xu & Subhlok 2008, §4: a skeleton must not hang).
//!
//! Every rank's program is executed abstractly, all ranks together, under the strictest MPI
//! semantics a correct program must survive:
//! - a blocking send completes only once a matching receive is posted (as `MPI_Ssend`; no
//!   eager buffering is assumed);
//! - a non-blocking request completes only when it is matched *and* waited for;
//! - a blocking receive completes when a matching send is posted;
//! - a collective completes when every member of its communicator has reached it (each member's
//!   k-th collective on a communicator meets the others' k-th); a non-blocking one starts
//!   without blocking, and its wait completes once every member has started it.
//!
//! Messages match as in MPI: by source (or any source), destination and tag (or any tag: a
//! negative tag), and in posting order between a pair (non-overtaking). The execution runs
//! until every rank has finished or none can move; in the latter case the result is a
//! [`Deadlock`] naming each blocked rank, the operation it is in and what that waits for.
//! Findings are data, not errors.
//!
//! A receive from any source (or with any tag) can take any of the sends it matches, whichever
//! comes first in the run. Where a program has such receives, [`check`] also executes it in
//! every order of those choices, up to [`WILDCARD_RUNS`] executions (the POE algorithm of
//! Vakkalanka, Gopalakrishnan & Kirby, CAV 2008), with small standard-mode sends buffered as
//! every library buffers them.
//!
//! Programs reach the checker as per-rank sequences of [`CheckOp`]s, loops already expanded (cut
//! to a few iterations).
//!
//! # Complexity
//! O(ranks × steps) rounds of O(ranks) in the worst case; each operation is matched in O(1)
//! amortised through per-(source, destination, tag) queues. With wildcard receives, up to
//! [`WILDCARD_RUNS`] + 1 more executions, each choice scanning the queued sends to its rank.

use std::collections::HashSet;

use rustc_hash::FxBuildHasher;
use std::fmt;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use crate::matcher::Slot;
use crate::matcher::{wild, Map, Matcher, BLOCKING};

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
        /// Its size (the largest of any rank where it varies), which decides where the
        /// wildcard executions buffer it ([`EAGER_BYTES`]).
        #[serde(default)]
        bytes: u64,
    },
    /// A non-blocking send into request `slot`.
    Isend {
        /// Destination.
        to: u32,
        /// Tag.
        tag: i32,
        /// Request slot.
        slot: Slot,
        /// Its size, as for [`CheckOp::Send`].
        #[serde(default)]
        bytes: u64,
    },
    /// A synchronous send (`MPI_Ssend`): complete only once its receive takes it, whatever the
    /// library buffers.
    Ssend {
        /// Destination.
        to: u32,
        /// Tag.
        tag: i32,
    },
    /// A non-blocking synchronous send (`MPI_Issend`) into request `slot`.
    Issend {
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
    /// A non-blocking collective (`MPI_Ibarrier`, `MPI_Iallreduce`, …) started into request
    /// `slot`: its start never blocks, and a wait on its slot completes once every member has
    /// started it (the members' k-th collectives on a communicator, blocking or not, meet).
    Icollective {
        /// Communicator id, shared by all its members.
        comm: u32,
        /// Its members (sorted).
        members: Arc<[u32]>,
        /// What it is, for diagnostics (e.g. `Ibarrier`).
        name: String,
        /// Request slot.
        slot: Slot,
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
            CheckOp::Send { to, tag, .. } => write!(f, "MPI_Send to rank {to} (tag {tag})"),
            CheckOp::Ssend { to, tag } => write!(f, "MPI_Ssend to rank {to} (tag {tag})"),
            CheckOp::Isend { to, tag, slot, .. } => {
                write!(f, "MPI_Isend to rank {to} (tag {tag}, request {slot})")
            }
            CheckOp::Issend { to, tag, slot } => {
                write!(f, "MPI_Issend to rank {to} (tag {tag}, request {slot})")
            }
            CheckOp::Recv { from, tag } => write!(f, "MPI_Recv from {} (tag {tag})", src(from)),
            CheckOp::Irecv { from, tag, slot } => {
                write!(f, "MPI_Irecv from {} (tag {tag}, request {slot})", src(from))
            }
            CheckOp::Wait { slots } => write!(f, "MPI_Wait on requests {slots:?}"),
            CheckOp::Collective { name, comm, .. } => {
                write!(f, "MPI_{name} on communicator {comm}")
            }
            CheckOp::Icollective { name, comm, slot, .. } => {
                write!(f, "MPI_{name} on communicator {comm} (request {slot})")
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

/// The positions in `before` (a rank's operations up to a wait) of the standard-mode
/// non-blocking sends that started the requests `slots`, each the last to start it; none for a
/// request of another kind (a receive, a synchronous send).
///
/// # Complexity
/// One backward pass over `before`, ended once every slot is found: O(|before| + |slots|).
pub fn standard_sends_of(before: &[CheckOp], slots: &[Slot]) -> Vec<usize> {
    let mut wanted: HashSet<Slot, FxBuildHasher> = slots.iter().copied().collect();
    let mut found = Vec::new();
    for (at, op) in before.iter().enumerate().rev() {
        if wanted.is_empty() {
            break;
        }
        let (CheckOp::Isend { slot, .. }
        | CheckOp::Issend { slot, .. }
        | CheckOp::Irecv { slot, .. }) = op
        else {
            continue;
        };
        if wanted.remove(slot) && matches!(op, CheckOp::Isend { .. }) {
            found.push(at);
        }
    }
    found
}

/// Executes all ranks' programs together; `None` when every rank finishes.
///
/// Without wildcard receives the matching of sends to receives is unique and the check exact.
/// A receive from any source or with any tag may take any of several sends, whichever the run
/// brings first, and the program must finish whatever it takes. Such a program is executed
/// again with wildcard receives matched only where nothing else can move, each taking in turn
/// every send it could take then (the POE algorithm of Vakkalanka, Gopalakrishnan & Kirby,
/// CAV 2008), depth first, up to [`WILDCARD_RUNS`] executions (fewer for programs of over
/// 65,536 operations: [`WILDCARD_OPS`] in all). Those executions buffer the
/// standard-mode sends that every MPI library sends eagerly ([`EAGER_BYTES`]) and hold the
/// others until received: what they find blocks in any library (a receive left without its
/// message, a large or synchronous send without its receive). That a program needs no
/// buffering at all is checked in the first order. A program with more matchings than the
/// executions allow is proven for those tried, and then checked once more in the opposite
/// order (ranks advanced from the highest, a wildcard taking the highest source's send).
pub fn check(programs: &[Vec<CheckOp>]) -> Option<Deadlock> {
    let wildcards = programs.iter().flatten().any(|op| {
        matches!(op, CheckOp::Recv { from, tag } | CheckOp::Irecv { from, tag, .. }
            if wild(*from, *tag))
    });
    let eager = Order { reverse: false, delay: false, buffer_stuck: false };
    let (found, _) = check_in(programs, eager, &[], &mut Vec::new());
    if found.is_some() || !wildcards {
        return found;
    }
    // As many executions as the program's size allows within the budget of operations.
    let ops: usize = programs.iter().map(Vec::len).sum();
    let runs = (WILDCARD_OPS / ops.max(1)).clamp(1, WILDCARD_RUNS);
    let mut forced: Vec<usize> = Vec::new();
    for _ in 0..runs {
        let order = Order { reverse: false, delay: true, buffer_stuck: false };
        let (found, choices) = check_in(programs, order, &forced, &mut Vec::new());
        if found.is_some() {
            return found;
        }
        // The deepest choice with a send left to try; the choices before it as they were.
        let i = choices.iter().rposition(|&(c, n)| c + 1 < n)?;
        forced = choices[..i].iter().map(|c| c.0).collect();
        forced.push(choices[i].0 + 1);
    }
    let opposite = Order { reverse: true, delay: false, buffer_stuck: false };
    check_in(programs, opposite, &[], &mut Vec::new()).0
}

/// The standard-mode sends that `programs`, executed once in the first order of [`check`],
/// are stuck on where nothing else can move (a blocking `MPI_Send` waiting for its receive, or
/// a wait for an `MPI_Isend` that nobody has received yet): each is taken as buffered there
/// (complete, its message queued for its receive) and the execution goes on, so that
/// one execution finds all the sends a program relies on the library buffering, where a check
/// after each would take one execution per deadlock (LAMMPS's tiled communication exchanges
/// counts head to head before every rebalancing: 3,216 sends; Quantum ESPRESSO's ranks each
/// start a send of a few hundred bytes to the other and wait for it before receiving). Returns
/// them as (rank, position of the send), in the order found, and what still blocks at the end.
///
/// # Complexity
/// One execution, as [`check`] without wildcards, plus O(ranks) per stop.
pub fn stuck_sends(programs: &[Vec<CheckOp>]) -> (Vec<(u32, usize)>, Option<Deadlock>) {
    let mut stuck = Vec::new();
    let order = Order { reverse: false, delay: false, buffer_stuck: true };
    let (found, _) = check_in(programs, order, &[], &mut stuck);
    (stuck, found)
}

/// Executions of a program with wildcard receives, each with other sends taken, that
/// [`check`] makes at most.
pub const WILDCARD_RUNS: usize = 64;

/// Operations the executions of [`check`] with wildcards take in all at most (about a second
/// here: a ring of 4,096 ranks whose every receive is a wildcard, 204,800 operations, is
/// checked 21 times in 1.8 s): a program of more than a 64th of it (65,536 operations) gets
/// fewer executions, at least one.
pub const WILDCARD_OPS: usize = 1 << 22;

/// The largest standard-mode send the wildcard executions take as buffered: Open MPI's
/// shared-memory eager limit, the smallest of the libraries' (MPICH's and SimGrid's are
/// 64 KiB). Larger ones wait for their receive, as the libraries' rendezvous does.
pub const EAGER_BYTES: u64 = 4096;

/// How [`check_in`] executes a program.
#[derive(Debug, Clone, Copy)]
struct Order {
    /// Ranks advanced from the highest, a wildcard receive taking the highest source's queued
    /// send (else from the lowest, the lowest's).
    reverse: bool,
    /// Wildcard receives matched where nothing else can move ([`Matcher::choose`]), and
    /// standard-mode sends buffered.
    delay: bool,
    /// Where nothing can move, the standard-mode sends waiting for their receives (blocking
    /// ones, and non-blocking ones a wait is stuck on) complete as buffered ([`stuck_sends`]).
    buffer_stuck: bool,
}

/// [`check`] in one order; with `delay`, the i-th wildcard choice takes the `forced[i]`-th
/// send it could (the first past the list). Returns the deadlock found, and each wildcard
/// choice made with how many sends it could take.
/// With `order.buffer_stuck`, the sends it took as buffered are pushed on `buffered` as (rank,
/// position).
fn check_in(
    programs: &[Vec<CheckOp>],
    order: Order,
    forced: &[usize],
    buffered: &mut Vec<(u32, usize)>,
) -> (Option<Deadlock>, Vec<(usize, usize)>) {
    let reverse = order.reverse;
    let mut choices = Vec::new();
    let n = programs.len();
    let mut pc = vec![0usize; n];
    // Whether the blocking call at pc has been posted already.
    let mut posted = vec![false; n];
    let mut m = Matcher::new(reverse, order.delay);
    // Collectives: per communicator, how many each member has completed, and who is waiting.
    let mut coll_done: Map<(u32, u32), usize> = Map::default();
    let mut arrived: Map<(u32, usize), Vec<u32>> = Map::default();
    // The kind of each collective, as the first member to reach it made it: a member that makes
    // another kind at the same point (an `MPI_Barrier` where the others reduce) never completes,
    // as in MPI, where mismatched collectives hang or fail.
    let mut kinds: Map<(u32, usize), &str> = Map::default();
    // Non-blocking collectives started and not yet waited for: per (rank, slot), the
    // collective (communicator, index) and its number of members.
    let mut icoll: Map<(u32, Slot), (u32, usize, usize)> = Map::default();
    // With `buffer_stuck`: the position of the operation that last started each request of
    // each rank ([`standard_sends_of`] without scanning back at every stop).
    let mut started: Map<(u32, Slot), usize> = Map::default();
    loop {
        let mut progress = false;
        for i in 0..n {
            let r = if reverse { n - 1 - i } else { i };
            while let Some(op) = programs[r].get(pc[r]) {
                let rank = r as u32;
                let advance = match op {
                    CheckOp::Isend { to, tag, slot, bytes } => {
                        m.post_send(rank, *to, *tag, Some(*slot), *bytes <= EAGER_BYTES);
                        true
                    }
                    CheckOp::Issend { to, tag, slot } => {
                        m.post_send(rank, *to, *tag, Some(*slot), false);
                        true
                    }
                    CheckOp::Irecv { from, tag, slot } => {
                        m.post_recv(rank, *from, *tag, Some(*slot));
                        true
                    }
                    CheckOp::Send { .. } | CheckOp::Ssend { .. } | CheckOp::Recv { .. } => {
                        // A blocking call is posted once, then waits for its match.
                        if !posted[r] {
                            posted[r] = true;
                            m.matched.remove(&(rank, BLOCKING));
                            match op {
                                CheckOp::Send { to, tag, bytes } => {
                                    m.post_send(rank, *to, *tag, None, *bytes <= EAGER_BYTES);
                                }
                                CheckOp::Ssend { to, tag } => {
                                    m.post_send(rank, *to, *tag, None, false);
                                }
                                CheckOp::Recv { from, tag } => m.post_recv(rank, *from, *tag, None),
                                _ => unreachable!("matched above"),
                            }
                        }
                        m.is_matched(rank, BLOCKING)
                    }
                    CheckOp::Wait { slots } => slots.iter().all(|s| {
                        m.is_matched(rank, *s)
                            || icoll.get(&(rank, *s)).is_some_and(|&(c, k, n)| {
                                arrived.get(&(c, k)).map_or(0, Vec::len) == n
                            })
                    }),
                    CheckOp::Icollective { comm, members, name, slot } => {
                        let k = *coll_done.get(&(*comm, rank)).unwrap_or(&0);
                        let kind = *kinds.entry((*comm, k)).or_insert(name.as_str());
                        if kind != name.as_str() {
                            false
                        } else {
                            arrived.entry((*comm, k)).or_default().push(rank);
                            icoll.insert((rank, *slot), (*comm, k, members.len()));
                            true
                        }
                    }
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
                if let CheckOp::Collective { comm, .. } | CheckOp::Icollective { comm, .. } = op {
                    *coll_done.entry((*comm, rank)).or_insert(0) += 1;
                }
                if let CheckOp::Wait { slots } = op {
                    for s in slots {
                        m.matched.remove(&(rank, *s));
                        icoll.remove(&(rank, *s));
                    }
                }
                if order.buffer_stuck {
                    // (The last start of each request, for the sends a wait is stuck on.)
                    if let CheckOp::Isend { slot, .. }
                    | CheckOp::Issend { slot, .. }
                    | CheckOp::Irecv { slot, .. } = op
                    {
                        started.insert((rank, *slot), pc[r]);
                    }
                }
                posted[r] = false;
                pc[r] += 1;
                progress = true;
            }
        }
        if (0..n).all(|r| pc[r] == programs[r].len()) {
            return (None, choices);
        }
        // Where nothing moves, the wildcard executions choose what waiting wildcards take.
        let chose = !progress && order.delay && m.choose(forced, &mut choices);
        if !progress && !chose {
            let before = buffered.len();
            if order.buffer_stuck {
                buffer_stuck(programs, &pc, &posted, &mut m, &started, buffered);
            }
            if buffered.len() == before {
                break;
            }
        }
    }
    let blocked = (0..n)
        .filter(|&r| pc[r] < programs[r].len())
        .map(|r| {
            let op = programs[r][pc[r]].clone();
            let waits_for = waits_for(&op, r as u32, &m, &coll_done, &arrived, &kinds, &icoll);
            Blocked { rank: r as u32, position: pc[r], op, waits_for }
        })
        .collect();
    (Some(Deadlock { blocked }), choices)
}

/// Where nothing moves: the standard-mode sends the ranks are stuck on (a blocking send posted
/// and unmatched, or the non-blocking sends a wait is stuck on, `started` giving the position
/// that last started each request) completed as buffered, each pushed on `buffered` as (rank,
/// position).
fn buffer_stuck(
    programs: &[Vec<CheckOp>],
    pc: &[usize],
    posted: &[bool],
    m: &mut Matcher,
    started: &Map<(u32, Slot), usize>,
    buffered: &mut Vec<(u32, usize)>,
) {
    let n = programs.len();
    for r in 0..n {
        let rank = r as u32;
        match programs[r].get(pc[r]) {
            Some(CheckOp::Send { to, tag, .. })
                if posted[r] && !m.is_matched(rank, BLOCKING) && m.buffer(rank, *to, *tag) =>
            {
                buffered.push((rank, pc[r]));
            }
            Some(CheckOp::Wait { slots }) => {
                for &slot in slots {
                    if m.is_matched(rank, slot) {
                        continue;
                    }
                    let Some(&at) = started.get(&(rank, slot)) else { continue };
                    if !matches!(programs[r][at], CheckOp::Isend { .. }) {
                        continue;
                    }
                    if m.buffer_request(rank, slot) {
                        buffered.push((rank, at));
                    }
                }
            }
            _ => {}
        }
    }
}

/// What the blocked operation `op` of `rank` waits for, in words.
fn waits_for(
    op: &CheckOp,
    rank: u32,
    m: &Matcher,
    coll_done: &Map<(u32, u32), usize>,
    arrived: &Map<(u32, usize), Vec<u32>>,
    kinds: &Map<(u32, usize), &str>,
    icoll: &Map<(u32, Slot), (u32, usize, usize)>,
) -> String {
    match &op {
        CheckOp::Send { to, .. } | CheckOp::Ssend { to, .. } => {
            format!("rank {to} to post a matching receive")
        }
        CheckOp::Recv { from: Some(f), .. } => format!("rank {f} to post a matching send"),
        CheckOp::Recv { from: None, .. } => "any rank to post a matching send".into(),
        CheckOp::Wait { slots } => {
            let open: Vec<_> = slots.iter().filter(|s| !m.is_matched(rank, **s)).collect();
            let collective: Vec<String> = open
                .iter()
                .filter_map(|s| {
                    let &(c, k, _) = icoll.get(&(rank, **s))?;
                    let here = arrived.get(&(c, k)).map_or(0, Vec::len);
                    Some(format!("request {s}: a non-blocking collective on communicator {c} that {here} members started"))
                })
                .collect();
            if collective.is_empty() {
                format!("requests {open:?}, which nobody matches")
            } else {
                format!("requests {open:?} ({})", collective.join("; "))
            }
        }
        CheckOp::Collective { comm, members, name } => {
            let k = *coll_done.get(&(*comm, rank)).unwrap_or(&0);
            match kinds.get(&(*comm, k)) {
                Some(kind) if *kind != name.as_str() => format!(
                    "the other members, which made an MPI_{kind} at this point of the \
                     communicator"
                ),
                _ => {
                    let here = arrived.get(&(*comm, k)).cloned().unwrap_or_default();
                    let missing: Vec<_> = members.iter().filter(|x| !here.contains(x)).collect();
                    format!("ranks {missing:?} to reach it")
                }
            }
        }
        CheckOp::Icollective { comm, name, .. } => {
            let k = *coll_done.get(&(*comm, rank)).unwrap_or(&0);
            match kinds.get(&(*comm, k)) {
                Some(kind) if *kind != name.as_str() => format!(
                    "the other members, which made an MPI_{kind} at this point of the \
                     communicator"
                ),
                _ => "nothing (it cannot block)".into(),
            }
        }
        CheckOp::Isend { .. } | CheckOp::Issend { .. } | CheckOp::Irecv { .. } => {
            "nothing (it cannot block)".into()
        }
    }
}

#[cfg(test)]
mod tests;
