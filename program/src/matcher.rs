//! The matching engine of the deadlock check: posted sends and receives by destination, MPI's
//! matching rules (non-overtaking per source and tag, wildcards), eager buffering, and the
//! wildcard receives' delayed choices (Vakkalanka, Gopalakrishnan & Kirby, CAV 2008).
//!
//! # Complexity
//! Posting is O(log k) for k queued (source, tag) keys at a destination; a delayed choice scans
//! the pending wildcard receives of one destination.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use rustc_hash::FxBuildHasher;

/// The checker's hash maps, keyed by ranks, slots and counts: hashed by Fx (`rustc-hash`), a
/// tenth of a check's time went to SipHash. No result depends on their order.
pub(crate) type Map<K, V> = HashMap<K, V, FxBuildHasher>;

/// A request slot of one rank (the rank's own numbering).
pub type Slot = u32;

/// A posted send or receive, waiting for its partner.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posted {
    rank: u32,
    /// Request slot, or `None` for a blocking call.
    slot: Option<Slot>,
}

#[derive(Default)]
pub(crate) struct Matcher {
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
    pub(crate) matched: Map<(u32, Slot), bool>,
}

pub(crate) const BLOCKING: Slot = Slot::MAX;
/// The slot a buffered send is matched under: no operation waits for it.
pub(crate) const BUFFERED_SEND: Slot = Slot::MAX - 3;

impl Matcher {
    /// An empty matcher: wildcards take the highest source and tag with `highest`, and are
    /// delayed with `delay`.
    pub(crate) fn new(highest: bool, delay: bool) -> Matcher {
        Matcher { highest, delay, ..Matcher::default() }
    }

    pub(crate) fn done(&mut self, p: Posted) {
        self.matched.insert((p.rank, p.slot.unwrap_or(BLOCKING)), true);
    }

    /// How many receives wait unmatched at `to`.
    #[cfg(test)]
    pub(crate) fn receives_waiting(&self, to: u32) -> usize {
        self.recvs.get(&to).map_or(0, |q| q.len())
    }

    pub(crate) fn is_matched(&self, rank: u32, slot: Slot) -> bool {
        self.matched.get(&(rank, slot)).copied().unwrap_or(false)
    }

    /// Completes the blocking send of `rank` to `to` with `tag`, queued unmatched, as buffered:
    /// its message stays queued for its receive under [`BUFFERED_SEND`]. False if it is not
    /// queued.
    pub(crate) fn buffer(&mut self, rank: u32, to: u32, tag: i32) -> bool {
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
    pub(crate) fn buffer_request(&mut self, rank: u32, slot: Slot) -> bool {
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
    pub(crate) fn pop(&mut self, to: u32, key: (u32, i32)) -> Option<Posted> {
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
    pub(crate) fn open(
        &self,
        to: u32,
        from: Option<u32>,
        tag: i32,
    ) -> impl Iterator<Item = (u32, i32)> + '_ {
        self.sends
            .get(&to)
            .into_iter()
            .flat_map(|by| by.keys())
            .copied()
            .filter(move |&(s, t)| accepts(from, tag, s, t))
    }

    /// Posts a send; `eager`: a standard-mode send small enough for every library to buffer.
    pub(crate) fn post_send(
        &mut self,
        from: u32,
        to: u32,
        tag: i32,
        slot: Option<Slot>,
        eager: bool,
    ) {
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

    pub(crate) fn post_recv(&mut self, to: u32, from: Option<u32>, tag: i32, slot: Option<Slot>) {
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
    pub(crate) fn choose(&mut self, forced: &[usize], choices: &mut Vec<(usize, usize)>) -> bool {
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
    pub(crate) fn settle(&mut self, to: u32) {
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

/// Whether a receive from `from` (`None`: any source) with `tag` (negative: any) is a wildcard.
pub(crate) fn wild(from: Option<u32>, tag: i32) -> bool {
    from.is_none() || tag < 0
}

/// Whether a receive from `from` with `tag` accepts a send of `source` with `send_tag`.
pub(crate) fn accepts(from: Option<u32>, tag: i32, source: u32, send_tag: i32) -> bool {
    (tag < 0 || tag == send_tag) && from.is_none_or(|f| f == source)
}
