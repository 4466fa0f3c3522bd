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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use rustc_hash::FxBuildHasher;
use std::fmt;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The checker's hash maps, keyed by ranks, slots and counts: hashed by Fx (`rustc-hash`), a
/// tenth of a check's time went to SipHash. No result depends on their order.
type Map<K, V> = HashMap<K, V, FxBuildHasher>;

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

/// A posted send or receive, waiting for its partner.
#[derive(Debug, Clone, Copy)]
struct Posted {
    rank: u32,
    /// Request slot, or `None` for a blocking call.
    slot: Option<Slot>,
}

#[derive(Default)]
struct Matcher {
    /// Where a wildcard receive finds several queued sends: the lowest source and tag
    /// (`false`) or the highest (`true`).
    highest: bool,
    /// Wildcard receives are matched only where nothing else can move, the send each takes
    /// chosen from all it could take then ([`Matcher::choose`]); and standard-mode sends of at
    /// most [`EAGER_BYTES`] complete once posted (the library buffers them), others once
    /// received.
    delay: bool,
    /// Unmatched sends by destination, then (source, tag), in posting order; no queue empty.
    sends: Map<u32, BTreeMap<(u32, i32), VecDeque<Posted>>>,
    /// Unmatched receives by destination, in posting order: (source or any, tag, who).
    recvs: Map<u32, VecDeque<(Option<u32>, i32, Posted)>>,
    /// Delayed: how many wildcard receives are pending at each destination.
    wild_at: BTreeMap<u32, usize>,
    /// Matched (rank, slot) pairs; blocking calls use slot `u32::MAX`.
    matched: Map<(u32, Slot), bool>,
}

const BLOCKING: Slot = Slot::MAX;
/// The slot a buffered send is matched under: no operation waits for it.
const BUFFERED_SEND: Slot = Slot::MAX - 3;

impl Matcher {
    fn done(&mut self, p: Posted) {
        self.matched.insert((p.rank, p.slot.unwrap_or(BLOCKING)), true);
    }

    fn is_matched(&self, rank: u32, slot: Slot) -> bool {
        self.matched.get(&(rank, slot)).copied().unwrap_or(false)
    }

    /// Completes the blocking send of `rank` to `to` with `tag`, queued unmatched, as buffered:
    /// its message stays queued for its receive under [`BUFFERED_SEND`]. False if it is not
    /// queued.
    fn buffer(&mut self, rank: u32, to: u32, tag: i32) -> bool {
        let queued = self.sends.get_mut(&to).and_then(|by| by.get_mut(&(rank, tag)));
        let Some(p) = queued.and_then(|q| q.iter_mut().find(|p| p.slot.is_none())) else {
            return false;
        };
        p.slot = Some(BUFFERED_SEND);
        self.done(Posted { rank, slot: None });
        true
    }

    /// Completes the non-blocking send of `rank` in request `slot`, queued unmatched, as
    /// buffered (`MPI_Ibsend`): its message stays queued for its receive under
    /// [`BUFFERED_SEND`]. False if it is not queued.
    fn buffer_request(&mut self, rank: u32, slot: Slot) -> bool {
        let queued = self
            .sends
            .values_mut()
            .flat_map(|by| by.iter_mut())
            .filter(|((source, _), _)| *source == rank)
            .find_map(|(_, q)| q.iter_mut().find(|p| p.slot == Some(slot)));
        let Some(p) = queued else { return false };
        p.slot = Some(BUFFERED_SEND);
        self.done(Posted { rank, slot: Some(slot) });
        true
    }

    /// The first queued send of `source` to `to` with `tag`, taken off its queue.
    fn pop(&mut self, to: u32, key: (u32, i32)) -> Option<Posted> {
        let by = self.sends.get_mut(&to)?;
        let q = by.get_mut(&key)?;
        let p = q.pop_front();
        if q.is_empty() {
            by.remove(&key);
        }
        p
    }

    /// The (source, tag) of the queued sends to `to` that a receive from `from` with `tag`
    /// accepts, ascending.
    fn open(&self, to: u32, from: Option<u32>, tag: i32) -> impl Iterator<Item = (u32, i32)> + '_ {
        self.sends
            .get(&to)
            .into_iter()
            .flat_map(|by| by.keys())
            .copied()
            .filter(move |&(s, t)| accepts(from, tag, s, t))
    }

    /// Posts a send; `eager`: a standard-mode send small enough for every library to buffer.
    fn post_send(&mut self, from: u32, to: u32, tag: i32, slot: Option<Slot>, eager: bool) {
        let mut me = Posted { rank: from, slot };
        if self.delay && eager {
            // Complete now; matched later under a slot nobody waits for (the request's own
            // may be started again before then).
            self.done(me);
            me.slot = Some(BUFFERED_SEND);
        }
        if let Some(q) = self.recvs.get_mut(&to) {
            if let Some(i) = q.iter().position(|(src, t, _)| accepts(*src, *t, from, tag)) {
                // Delayed, a wildcard receive first in line leaves the send to the choice.
                if !(self.delay && wild(q[i].0, q[i].1)) {
                    let (_, _, r) = q.remove(i).expect("position is valid");
                    self.done(r);
                    self.done(me);
                    return;
                }
            }
        }
        self.sends.entry(to).or_default().entry((from, tag)).or_default().push_back(me);
    }

    fn post_recv(&mut self, to: u32, from: Option<u32>, tag: i32, slot: Option<Slot>) {
        let me = Posted { rank: to, slot };
        if self.delay {
            // A wildcard waits for the choice; so does a receive behind a pending wildcard
            // that would take the same send.
            // (Without a wildcard pending at `to`, no receive queued there has a send queued for
            // it, so one behind it finds none either and is queued all the same.)
            let behind = from.is_some_and(|s| {
                self.wild_at.contains_key(&to)
                    && self
                        .recvs
                        .get(&to)
                        .is_some_and(|q| q.iter().any(|(src, t, _)| accepts(*src, *t, s, tag)))
            });
            let is_wild = wild(from, tag);
            if is_wild || behind {
                if is_wild {
                    *self.wild_at.entry(to).or_default() += 1;
                }
                self.recvs.entry(to).or_default().push_back((from, tag, me));
                return;
            }
        }
        // Any source or any tag: the oldest matching send is taken from the lowest source and
        // tag (the highest, in the opposite order).
        let key = if self.highest {
            self.open(to, from, tag).last()
        } else {
            self.open(to, from, tag).next()
        };
        if let Some(k) = key {
            let s = self.pop(to, k).expect("queue is not empty");
            self.done(s);
            self.done(me);
            return;
        }
        self.recvs.entry(to).or_default().push_back((from, tag, me));
    }

    /// Delayed, where nothing else can move: at each destination (lowest first), the oldest
    /// wildcard receive that some queued send could match takes one, the `forced`-th of those
    /// it could take (each the first unmatched of its source and tag, ordered by them; the
    /// first where `forced` has no entry for it); then queued sends that now come first for a
    /// receive of their own match it. Each choice is appended to `choices` with how many sends
    /// it had; returns whether any was made. (Destinations do not compete for a send, so one
    /// choice at each at once is as general as one at a time.)
    fn choose(&mut self, forced: &[usize], choices: &mut Vec<(usize, usize)>) -> bool {
        let dests: Vec<u32> = self.wild_at.keys().copied().collect();
        let mut made = false;
        for d in dests {
            let Some(q) = self.recvs.get(&d) else { continue };
            let found = q.iter().enumerate().find_map(|(i, &(src, t, _))| {
                if !wild(src, t) {
                    return None;
                }
                let open: Vec<(u32, i32)> = self.open(d, src, t).collect();
                (!open.is_empty()).then_some((i, open))
            });
            let Some((i, open)) = found else { continue };
            let c = forced.get(choices.len()).copied().unwrap_or(0).min(open.len() - 1);
            choices.push((c, open.len()));
            let sent = self.pop(d, open[c]).expect("the queue is not empty");
            let (_, _, r) =
                self.recvs.get_mut(&d).and_then(|q| q.remove(i)).expect("position is valid");
            if let Some(n) = self.wild_at.get_mut(&d) {
                *n -= 1;
                if *n == 0 {
                    self.wild_at.remove(&d);
                }
            }
            self.done(r);
            self.done(sent);
            self.settle(d);
            made = true;
        }
        made
    }

    /// Matches the queued sends to `to` that now come first for a receive that is not a
    /// wildcard, until none does.
    ///
    /// # Complexity
    /// One pass over the receives queued at `to`: O(Q + M log K) for Q receives, M matches and
    /// K (source, tag) keys of queued sends. A receive that is not a wildcard accepts one key,
    /// so the matches of different keys are independent: for each key, the receives of it
    /// before the first queued receive that also accepts it and is a wildcard (or that found
    /// no send left) take its sends in order, as matching them one at a time would.
    fn settle(&mut self, to: u32) {
        let Some(mut q) = self.recvs.remove(&to) else { return };
        let Some(mut by) = self.sends.remove(&to) else {
            self.recvs.insert(to, q);
            return;
        };
        // Keys that a receive still queued comes first for: later receives cannot take them.
        let mut closed_keys: HashSet<(u32, i32), FxBuildHasher> = HashSet::default();
        let mut closed_sources: HashSet<u32, FxBuildHasher> = HashSet::default();
        let mut closed_tags: HashSet<i32, FxBuildHasher> = HashSet::default();
        let mut all_closed = false;
        let mut kept = VecDeque::with_capacity(q.len());
        let mut matched = Vec::new();
        for (src, t, r) in q.drain(..) {
            if all_closed || by.is_empty() {
                kept.push_back((src, t, r));
                continue;
            }
            match src {
                Some(s) if t >= 0 => {
                    let key = (s, t);
                    let open = !closed_keys.contains(&key)
                        && !closed_sources.contains(&s)
                        && !closed_tags.contains(&t);
                    let sent =
                        if open { by.get_mut(&key).and_then(VecDeque::pop_front) } else { None };
                    match sent {
                        Some(p) => {
                            if by.get(&key).is_some_and(VecDeque::is_empty) {
                                by.remove(&key);
                            }
                            matched.push(r);
                            matched.push(p);
                        }
                        None => {
                            closed_keys.insert(key);
                            kept.push_back((src, t, r));
                        }
                    }
                }
                Some(s) => {
                    closed_sources.insert(s);
                    kept.push_back((src, t, r));
                }
                None if t >= 0 => {
                    closed_tags.insert(t);
                    kept.push_back((src, t, r));
                }
                None => {
                    all_closed = true;
                    kept.push_back((src, t, r));
                }
            }
        }
        for p in matched {
            self.done(p);
        }
        if !kept.is_empty() {
            self.recvs.insert(to, kept);
        }
        if !by.is_empty() {
            self.sends.insert(to, by);
        }
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

/// Whether a receive from `from` (`None`: any source) with `tag` (negative: any) is a wildcard.
fn wild(from: Option<u32>, tag: i32) -> bool {
    from.is_none() || tag < 0
}

/// Whether a receive from `from` with `tag` accepts a send of `source` with `send_tag`.
fn accepts(from: Option<u32>, tag: i32, source: u32, send_tag: i32) -> bool {
    (tag < 0 || tag == send_tag) && from.is_none_or(|f| f == source)
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
    let mut m = Matcher { highest: reverse, delay: order.delay, ..Matcher::default() };
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
                for r in 0..n {
                    let rank = r as u32;
                    match programs[r].get(pc[r]) {
                        Some(CheckOp::Send { to, tag, .. })
                            if posted[r]
                                && !m.is_matched(rank, BLOCKING)
                                && m.buffer(rank, *to, *tag) =>
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
            if buffered.len() == before {
                break;
            }
        }
    }
    let blocked = (0..n)
        .filter(|&r| pc[r] < programs[r].len())
        .map(|r| {
            let op = programs[r][pc[r]].clone();
            let waits_for = match &op {
                CheckOp::Send { to, .. } | CheckOp::Ssend { to, .. } => {
                    format!("rank {to} to post a matching receive")
                }
                CheckOp::Recv { from: Some(f), .. } => format!("rank {f} to post a matching send"),
                CheckOp::Recv { from: None, .. } => "any rank to post a matching send".into(),
                CheckOp::Wait { slots } => {
                    let open: Vec<_> =
                        slots.iter().filter(|s| !m.is_matched(r as u32, **s)).collect();
                    let collective: Vec<String> = open
                        .iter()
                        .filter_map(|s| {
                            let &(c, k, _) = icoll.get(&(r as u32, **s))?;
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
                CheckOp::Icollective { comm, name, .. } => {
                    let k = *coll_done.get(&(*comm, r as u32)).unwrap_or(&0);
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
            };
            Blocked { rank: r as u32, position: pc[r], op, waits_for }
        })
        .collect();
    (Some(Deadlock { blocked }), choices)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank 0 posts a receive from any source, then `n` receives from rank 1 and one of
    /// another tag, and waits for them all; rank 1 sends `sends` messages of the first tag and
    /// one of the other. The receives behind the wildcard wait for its choice, then take their
    /// sends at once ([`Matcher::settle`]).
    fn behind_a_wildcard(n: u32, sends: u32) -> Vec<Vec<CheckOp>> {
        let mut receiver = vec![CheckOp::Irecv { from: None, tag: 7, slot: 0 }];
        receiver.extend((1..=n).map(|slot| CheckOp::Irecv { from: Some(1), tag: 7, slot }));
        receiver.push(CheckOp::Irecv { from: Some(1), tag: 8, slot: n + 1 });
        receiver.push(CheckOp::Wait { slots: (0..=n + 1).collect() });
        let mut sender: Vec<CheckOp> =
            (0..sends).map(|_| CheckOp::Send { to: 0, tag: 7, bytes: 8 }).collect();
        sender.push(CheckOp::Send { to: 0, tag: 8, bytes: 8 });
        vec![receiver, sender]
    }

    /// The non-blocking consensus of sparse data exchanges (DOLFINx, PETSc): a rank starts its
    /// `MPI_Ibarrier` and then still receives what others send it synchronously. The start
    /// does not block (taken as blocking, the two ranks waited for each other); the wait
    /// completes once both have started it, and one that a member never starts is reported.
    #[test]
    fn a_non_blocking_barrier_waits_at_its_wait_not_at_its_start() {
        let members: Arc<[u32]> = vec![0, 1].into();
        let ibarrier = |slot| CheckOp::Icollective {
            comm: 0,
            members: members.clone(),
            name: "Ibarrier".into(),
            slot,
        };
        let programs = vec![
            vec![
                ibarrier(1),
                CheckOp::Recv { from: Some(1), tag: 0 },
                CheckOp::Wait { slots: vec![1] },
            ],
            vec![CheckOp::Ssend { to: 0, tag: 0 }, ibarrier(1), CheckOp::Wait { slots: vec![1] }],
        ];
        assert_eq!(check(&programs), None);
        let never = vec![programs[0].clone(), vec![CheckOp::Ssend { to: 0, tag: 0 }]];
        let d = check(&never).expect("rank 0 waits for a barrier rank 1 never starts");
        assert_eq!(d.blocked.len(), 1, "{d}");
        assert!(d.blocked[0].waits_for.contains("non-blocking collective"), "{d}");
        // A blocking collective where the others started a non-blocking one does not match.
        let mixed = vec![
            vec![ibarrier(1), CheckOp::Wait { slots: vec![1] }],
            vec![CheckOp::Collective { comm: 0, members: members.clone(), name: "Barrier".into() }],
        ];
        assert!(check(&mixed).is_some());
    }

    #[test]
    fn receives_behind_a_wildcard_take_their_sends_once_it_has_chosen() {
        assert_eq!(check(&behind_a_wildcard(20_000, 20_001)), None);
        let short = check(&behind_a_wildcard(20_000, 20_000)).expect("one receive is left");
        assert_eq!(short.blocked.len(), 1, "{short}");
        assert_eq!(short.blocked[0].rank, 0);
    }

    /// Once a wildcard has chosen its send, the receives queued behind it take theirs in
    /// order, up to a wildcard still queued that accepts their key.
    #[test]
    fn receives_settle_up_to_the_next_wildcard_of_their_key() {
        let mut m = Matcher { delay: true, ..Matcher::default() };
        for _ in 0..3 {
            m.post_send(1, 0, 7, None, false);
        }
        m.post_send(2, 0, 8, Some(9), false);
        m.post_recv(0, None, 7, Some(0));
        m.post_recv(0, Some(1), 7, Some(1));
        m.post_recv(0, Some(1), 7, Some(2));
        m.post_recv(0, None, 8, Some(3));
        m.post_recv(0, Some(2), 8, Some(4));
        assert!((0..=4).all(|slot| !m.is_matched(0, slot)), "all wait for the choice");
        let mut choices = Vec::new();
        assert!(m.choose(&[], &mut choices));
        // The first wildcard took (1, 7); the next wildcard's turn is a choice of its own.
        assert_eq!(choices, vec![(0, 1)]);
        assert!((0..=2).all(|slot| m.is_matched(0, slot)));
        assert!(!m.is_matched(0, 3) && !m.is_matched(0, 4), "behind the wildcard of tag 8");
        assert_eq!(m.recvs[&0].len(), 2);
        assert!(m.choose(&[], &mut choices));
        assert!(m.is_matched(0, 3) && !m.is_matched(0, 4), "the send of (2, 8) went to it");
    }

    #[test]
    fn the_last_start_of_each_standard_send_is_found_in_one_pass() {
        let before = [
            CheckOp::Isend { to: 1, tag: 0, slot: 1, bytes: 8 },
            CheckOp::Irecv { from: Some(1), tag: 0, slot: 2 },
            CheckOp::Isend { to: 1, tag: 0, slot: 1, bytes: 8 },
            CheckOp::Issend { to: 1, tag: 0, slot: 3 },
            CheckOp::Isend { to: 1, tag: 0, slot: 4, bytes: 8 },
            CheckOp::Irecv { from: Some(1), tag: 0, slot: 4 },
        ];
        let mut found = standard_sends_of(&before, &[1, 2, 3, 4, 5]);
        found.sort_unstable();
        assert_eq!(found, vec![2]);
    }
}
