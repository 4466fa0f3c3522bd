//! One order of every rank's calls that one thread per rank can make to the end, where the
//! order the trace gives cannot.
//!
//! A rank whose threads call MPI at the same time records its calls in the order they
//! returned, an interleaving of its threads' calls. [`crate::collective_order`] puts the
//! collectives of the world's copies in one order between the calls that wait; where a thread
//! waited in between (DOLFINx's mesh partitioning through PT-Scotch, 4 ranks: rank 1 makes a
//! copy's `MPI_Alltoallv` after a `MPI_Waitall` for a message that rank 3 sends only once it
//! has made that `MPI_Alltoallv`), the calls as recorded cannot finish in one thread per rank,
//! although the application did.
//!
//! The run finished, so its calls have an order that finishes. Here every rank's calls are
//! made, all ranks together, under the semantics every such order must meet: a blocking
//! collective returns once every member has made it (each member's k-th collective on a
//! communicator meets the others' k-th), the wait for a non-blocking one once every member has
//! started it; a receive, or the wait for it, returns once its message is sent (the k-th
//! receive between two ranks on a communicator with a tag takes the k-th send); a send never
//! waits (the trace's run finished: the library buffered what it had to). Where no rank can go
//! on, the collective the most members wait in is made earlier by the members that have not
//! reached it: each makes its next collective on that communicator at the call it waits in (a
//! thread of its own made it, which need not have waited). Sends are not moved: ranks that
//! each receive before they send to the other did not run as recorded, and their build is
//! refused. Each call made earlier meets a collective some rank waits for, so the execution
//! goes on until every rank has made every call, or no call made earlier can help (a trace cut
//! short, receives head to head): then what was made earlier stays and the program's own check
//! names what still waits.
//!
//! Nothing moves in a trace whose calls finish in the order recorded: every trace of a program
//! whose ranks call MPI from one thread each and whose collectives wait for every member (all
//! fixture and NPB traces). A call moves with its arguments; the computation between calls
//! stays where it was, the k-th gap before the k-th call.
//!
//! # Complexity
//! O(calls) hash-map steps for the execution, each rank woken once per collective or message
//! it waits for; each call made earlier costs the calls it is moved past. Memory: one counter
//! per channel (source, destination, communicator, tag) and per collective met.

use std::collections::HashMap as StdMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::collective_order::fingerprint;
use crate::model::{CommId, Event, OpClass, Payload, Peer, RankTrace};

/// A collective as every member knows it: its communicator's members (a fingerprint: the
/// skeleton makes the collectives of communicators of the same members on one, as the world's
/// copies) and its place among their collectives.
type Key = (u64, u64);

/// What a collective is, as the skeleton's check compares it: the call and its root.
type Kind = (u8, Option<u32>);

fn kind_of(e: &Event) -> Kind {
    let root = match &e.payload {
        Payload::Collective { root, .. } => root.map(|r| r.0),
        _ => None,
    };
    (e.op.code(), root)
}

/// A channel of messages: source and destination world ranks, communicator key, tag.
type Chan = (u32, u32, u64, i32);

/// What [`make_replayable`] moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replayable {
    /// Calls made earlier than traced.
    pub calls_moved: u64,
    /// Of those, calls moved past a call that waits (a completion or a blocking receive).
    pub past_waits: u64,
    /// Ranks whose calls moved, ascending.
    pub ranks: Vec<u32>,
    /// Whether some rank still waits forever in the order found (a trace cut short, or calls
    /// these semantics do not see, such as communicators the trace does not define).
    pub stuck: bool,
}

/// What a rank waits for at its current call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Every member of the collective `Key` (of this many members) to have made it.
    Met(Key, u32),
    /// The message of this ordinal on the channel to have been sent.
    Sent(Chan, u64),
}

/// What the call a rank waits in did, undone where a call is made before it.
#[derive(Debug, Clone, Copy)]
enum Undo {
    Nothing,
    /// It arrived at a collective of the communicators of these members.
    Arrival(u64, Key),
    /// It took the next ordinal of a channel.
    Receive(Chan),
    /// It sent as well (`MPI_Sendrecv`): nothing is made before it.
    Cannot,
}

/// One call as the execution sees it.
enum Call {
    /// A collective on a communicator; with a request when non-blocking.
    Collective(CommId, Option<u32>),
    /// A send on a communicator to a world rank with a tag.
    Send(CommId, u32, i32),
    /// A receive on a communicator from a world rank with a tag; with a request when
    /// non-blocking.
    Recv(CommId, u32, i32, Option<u32>),
    /// `MPI_Sendrecv`: the send half, then the receive half.
    SendRecv((CommId, u32, i32), (CommId, u32, i32)),
    /// A completion of requests (those of the call's [`Payload::Completion`]).
    Completion,
    /// Anything that neither waits nor is waited for here.
    Other,
}

fn call_of(e: &Event) -> Call {
    let rank = |p: &Peer| p.rank().map(|r| r.0);
    match (&e.payload, e.op.class()) {
        (Payload::Collective { comm, request, .. }, _) => {
            Call::Collective(*comm, request.map(|r| r.0))
        }
        (Payload::P2p { peer, tag, comm, .. }, OpClass::Send) => match rank(peer) {
            Some(to) => Call::Send(*comm, to, *tag),
            None => Call::Other,
        },
        (Payload::P2p { peer, tag, comm, request, wildcards, .. }, OpClass::Recv) => {
            match rank(peer) {
                Some(from) if *tag >= 0 && !wildcards.tag => {
                    Call::Recv(*comm, from, *tag, request.map(|r| r.0))
                }
                _ => Call::Other,
            }
        }
        (Payload::SendRecv { dest, send_tag, source, recv_tag, comm, .. }, _) => {
            match (rank(dest), rank(source)) {
                (Some(to), Some(from)) if *recv_tag >= 0 => {
                    Call::SendRecv((*comm, to, *send_tag), (*comm, from, *recv_tag))
                }
                (Some(to), _) => Call::Send(*comm, to, *send_tag),
                (None, Some(from)) if *recv_tag >= 0 => Call::Recv(*comm, from, *recv_tag, None),
                _ => Call::Other,
            }
        }
        (Payload::Completion { .. }, _) => Call::Completion,
        _ => Call::Other,
    }
}

/// One rank's place in the execution.
#[derive(Default)]
struct State {
    pos: usize,
    /// What the call at `pos` waits for, and what it did.
    waiting: Option<(Need, Undo)>,
    /// Collectives made per member list.
    places: HashMap<u64, u64>,
    /// Receives posted per channel.
    received: HashMap<Chan, u64>,
    /// What each pending request waits for.
    requests: HashMap<u32, Need>,
    /// Each communicator's key and size.
    comms: HashMap<CommId, (u64, u32)>,
}

/// The execution of all ranks together.
struct Run<'a> {
    ranks: &'a mut [RankTrace],
    states: Vec<State>,
    /// The members at each collective not met yet, with what each made there.
    arrived: HashMap<Key, Vec<(u32, Kind)>>,
    met: HashSet<Key>,
    sent: HashMap<Chan, u64>,
    waiting_met: HashMap<Key, Vec<u32>>,
    waiting_sent: HashMap<Chan, Vec<u32>>,
    runnable: Vec<u32>,
    moved: Replayable,
    moved_ranks: HashSet<u32>,
}

impl Run<'_> {
    fn satisfied(&self, need: Need) -> bool {
        match need {
            Need::Met(k, _) => self.met.contains(&k),
            Need::Sent(c, ord) => self.sent.get(&c).copied().unwrap_or(0) > ord,
        }
    }

    fn wait_for(&mut self, r: u32, need: Need) {
        match need {
            Need::Met(k, _) => self.waiting_met.entry(k).or_default().push(r),
            Need::Sent(c, _) => self.waiting_sent.entry(c).or_default().push(r),
        }
    }

    fn chan(&self, r: u32, comm: CommId, from: u32, to: u32, tag: i32) -> Option<Chan> {
        self.states[r as usize].comms.get(&comm).map(|&(k, _)| (from, to, k, tag))
    }

    fn send(&mut self, c: Chan) {
        *self.sent.entry(c).or_insert(0) += 1;
        if let Some(w) = self.waiting_sent.remove(&c) {
            self.runnable.extend(w);
        }
    }

    /// Arrives at the next collective of `comm` with the call at the rank's place; its need.
    /// The collective is met once every member has arrived with the same call.
    fn arrive(&mut self, r: u32, comm: CommId) -> Option<(Need, u64)> {
        let kind = kind_of(&self.ranks[r as usize].events[self.states[r as usize].pos]);
        let st = &mut self.states[r as usize];
        let &(mk, size) = st.comms.get(&comm)?;
        let place = st.places.entry(mk).or_insert(0);
        *place += 1;
        let key = (mk, *place);
        let at = self.arrived.entry(key).or_default();
        at.push((r, kind));
        if at.len() as u32 >= size && at.iter().all(|(_, k)| *k == at[0].1) {
            self.arrived.remove(&key);
            self.met.insert(key);
            if let Some(w) = self.waiting_met.remove(&key) {
                self.runnable.extend(w);
            }
        }
        Some((Need::Met(key, size), mk))
    }

    /// Posts the next receive of a channel; its need.
    fn post(&mut self, r: u32, c: Chan) -> Need {
        let n = self.states[r as usize].received.entry(c).or_insert(0);
        *n += 1;
        Need::Sent(c, *n - 1)
    }

    /// Makes rank `r`'s calls until it waits or has made them all.
    fn go(&mut self, r: u32) {
        let ri = r as usize;
        if let Some((need, undo)) = self.states[ri].waiting {
            if !self.satisfied(need) {
                self.wait_for(r, need);
                return;
            }
            self.states[ri].waiting = None;
            // A completion is looked at again: it may wait for more than one request.
            if !matches!(undo, Undo::Nothing) {
                self.states[ri].pos += 1;
            }
        }
        while self.states[ri].pos < self.ranks[ri].events.len() {
            let call = call_of(&self.ranks[ri].events[self.states[ri].pos]);
            let blocked = match call {
                Call::Collective(comm, request) => match (self.arrive(r, comm), request) {
                    (Some((need, _)), Some(req)) => {
                        self.states[ri].requests.insert(req, need);
                        None
                    }
                    (Some((Need::Met(key, size), mk)), None) => {
                        Some((Need::Met(key, size), Undo::Arrival(mk, key)))
                    }
                    _ => None,
                },
                Call::Send(comm, to, tag) => {
                    if let Some(c) = self.chan(r, comm, r, to, tag) {
                        self.send(c);
                    }
                    None
                }
                Call::Recv(comm, from, tag, request) => {
                    match (self.chan(r, comm, from, r, tag), request) {
                        (Some(c), Some(req)) => {
                            let need = self.post(r, c);
                            self.states[ri].requests.insert(req, need);
                            None
                        }
                        (Some(c), None) => Some((self.post(r, c), Undo::Receive(c))),
                        _ => None,
                    }
                }
                Call::SendRecv((sc, to, st), (rc, from, rt)) => {
                    if let Some(c) = self.chan(r, sc, r, to, st) {
                        self.send(c);
                    }
                    self.chan(r, rc, from, r, rt).map(|c| (self.post(r, c), Undo::Cannot))
                }
                Call::Completion => {
                    let completed = match &self.ranks[ri].events[self.states[ri].pos].payload {
                        Payload::Completion { completed, .. } => &completed[..],
                        _ => &[],
                    };
                    let st = &self.states[ri];
                    let need = completed
                        .iter()
                        .filter_map(|c| c.request.and_then(|q| st.requests.get(&q.0).copied()))
                        .find(|n| !self.satisfied(*n));
                    if need.is_none() && !st.requests.is_empty() {
                        for c in completed.iter().filter_map(|c| c.request) {
                            self.states[ri].requests.remove(&c.0);
                        }
                    }
                    need.map(|n| (n, Undo::Nothing))
                }
                Call::Other => None,
            };
            match blocked {
                Some((need, undo)) if !self.satisfied(need) => {
                    self.states[ri].waiting = Some((need, undo));
                    self.wait_for(r, need);
                    return;
                }
                _ => self.states[ri].pos += 1,
            }
        }
    }

    fn execute(&mut self) {
        while let Some(r) = self.runnable.pop() {
            self.go(r);
        }
    }

    fn finished(&self) -> bool {
        self.states.iter().zip(self.ranks.iter()).all(|(s, rt)| s.pos >= rt.events.len())
    }

    /// Undoes what rank `m`'s waiting call did, so that a call can be made before it; false
    /// where it cannot be.
    fn undo(&mut self, m: usize) -> bool {
        match self.states[m].waiting.map(|(_, u)| u) {
            None | Some(Undo::Nothing) => {}
            Some(Undo::Cannot) => return false,
            Some(Undo::Arrival(mk, key)) => {
                if let Some(p) = self.states[m].places.get_mut(&mk) {
                    *p -= 1;
                }
                if let Some(at) = self.arrived.get_mut(&key) {
                    at.retain(|&(x, _)| x as usize != m);
                }
            }
            Some(Undo::Receive(c)) => {
                if let Some(n) = self.states[m].received.get_mut(&c) {
                    *n -= 1;
                }
            }
        }
        self.states[m].waiting = None;
        true
    }

    /// Moves rank `m`'s call at `from` to its current call's place.
    fn hoist(&mut self, m: usize, from: usize) {
        let at = self.states[m].pos;
        let past_wait = self.ranks[m].events[at..from].iter().any(|e| {
            e.op.is_wait()
                || matches!(e.op.class(), OpClass::SendRecv)
                || (e.op.class() == OpClass::Recv
                    && !matches!(e.payload, Payload::P2p { request: Some(_), .. }))
        });
        let events = &mut self.ranks[m].events;
        for k in (at..from).rev() {
            let (a, b) = events.split_at_mut(k + 1);
            std::mem::swap(&mut a[k].op, &mut b[0].op);
            std::mem::swap(&mut a[k].payload, &mut b[0].payload);
        }
        self.moved.calls_moved += 1;
        self.moved.past_waits += u64::from(past_wait);
        self.moved_ranks.insert(m as u32);
        self.runnable.push(m as u32);
    }

    /// Where rank `m`'s next collective of the kind `kind` on the communicators of the members
    /// of `key` is, if it would be the collective `key` there.
    fn next_collective(&self, m: usize, key: Key, kind: Kind) -> Option<usize> {
        let st = &self.states[m];
        let mut place = st.places.get(&key.0).copied().unwrap_or(0);
        if let Some((_, Undo::Arrival(mk, _))) = st.waiting {
            if mk == key.0 {
                place -= 1;
            }
        }
        if place + 1 != key.1 {
            return None;
        }
        let events = &self.ranks[m].events;
        (st.pos..events.len()).find(|&j| match &events[j].payload {
            Payload::Collective { comm, .. } => {
                st.comms.get(comm).is_some_and(|&(k, _)| k == key.0) && kind_of(&events[j]) == kind
            }
            _ => false,
        })
    }

    /// The collective the most members wait in (or one all members reached with different
    /// calls), made with the call most of them made there by the others, at the calls they
    /// wait in; false where none can be.
    fn meet_a_collective(&mut self) -> bool {
        let mut open: Vec<(usize, Key)> = self
            .states
            .iter()
            .filter_map(|s| match s.waiting {
                Some((Need::Met(k, _), _)) => self.arrived.get(&k).map(|a| (a.len(), k)),
                _ => None,
            })
            .collect();
        open.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        open.dedup_by_key(|o| o.1);
        for (_, key) in open {
            let Some(at) = self.arrived.get(&key).cloned() else { continue };
            let Some(&(first, _)) = at.first() else { continue };
            let Some((&comm, _)) =
                self.states[first as usize].comms.iter().find(|(_, (k, _))| *k == key.0)
            else {
                continue;
            };
            let Some(members) = self.ranks[first as usize].comms.get(&comm).cloned() else {
                continue;
            };
            // The call most members made there (the lowest rank's among as many).
            let mut counts: Vec<(Kind, usize, u32)> = Vec::new();
            for &(r, k) in &at {
                match counts.iter_mut().find(|c| c.0 == k) {
                    Some(c) => {
                        c.1 += 1;
                        c.2 = c.2.min(r);
                    }
                    None => counts.push((k, 1, r)),
                }
            }
            counts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
            let kind = counts[0].0;
            let made: HashMap<u32, Kind> = at.iter().copied().collect();
            let mut plan = Vec::new();
            for m in members.iter().map(|r| r.0 as usize) {
                if made.get(&(m as u32)) == Some(&kind) {
                    continue;
                }
                let state = self.states.get(m);
                let movable = state.is_some_and(|s| match s.waiting {
                    None | Some((_, Undo::Nothing)) | Some((_, Undo::Receive(_))) => {
                        !made.contains_key(&(m as u32))
                    }
                    Some((Need::Met(k, _), Undo::Arrival(..))) => {
                        k == key || !made.contains_key(&(m as u32))
                    }
                    Some(_) => false,
                });
                match self.next_collective(m, key, kind).filter(|_| movable) {
                    Some(j) => plan.push((m, j)),
                    None => {
                        plan.clear();
                        break;
                    }
                }
            }
            if plan.is_empty() {
                continue;
            }
            for (m, j) in plan {
                self.undo(m);
                self.hoist(m, j);
            }
            return true;
        }
        false
    }
}

/// Finds an order of every rank's calls that one thread per rank makes to the end (see the
/// module documentation) and puts the calls of `ranks` in it; returns what moved.
pub fn make_replayable(ranks: &mut [RankTrace]) -> Replayable {
    if ranks.iter().enumerate().any(|(i, rt)| rt.rank.0 as usize != i) {
        return Replayable::default();
    }
    let mut fingerprints: StdMap<*const crate::model::Rank, u64> = StdMap::new();
    let states: Vec<State> = ranks
        .iter()
        .map(|rt| {
            let comms = rt
                .comms
                .iter()
                .map(|(c, m)| {
                    let fp = *fingerprints.entry(m.as_ptr()).or_insert_with(|| fingerprint(m));
                    (*c, (fp, m.len() as u32))
                })
                .collect();
            State { comms, ..State::default() }
        })
        .collect();
    drop(fingerprints);
    let n = ranks.len() as u32;
    let mut run = Run {
        ranks,
        states,
        arrived: HashMap::default(),
        met: HashSet::default(),
        sent: HashMap::default(),
        waiting_met: HashMap::default(),
        waiting_sent: HashMap::default(),
        runnable: (0..n).rev().collect(),
        moved: Replayable::default(),
        moved_ranks: HashSet::default(),
    };
    loop {
        run.execute();
        if run.finished() {
            break;
        }
        if !run.meet_a_collective() {
            run.moved.stuck = true;
            break;
        }
    }
    let mut moved = run.moved;
    moved.ranks = run.moved_ranks.into_iter().collect();
    moved.ranks.sort_unstable();
    moved
}

#[cfg(test)]
mod tests;
