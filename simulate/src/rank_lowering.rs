//! One rank's calls from a skeleton's program: its class's phases walked statement by
//! statement, compute blocks at the durations they stand for (drawn, replayed, or their mean,
//! times the rank's weight and factor), calls as trace events, and marks where its phases,
//! iterations and steps begin.

use std::collections::HashMap;
use std::sync::Arc;

use mpiskel_compress::When;
use mpiskel_program::instantiate::{self, resolve};
use mpiskel_program::{
    calls_in, collective_recv_bytes, collective_send_bytes, factor_of, Call, Comm, Peer as IrPeer,
    Phase, Skeleton, SlotRef, Stmt, QUANTILE_PROBABILITIES,
};
use mpiskel_trace::{
    CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, RankTrace, RequestId, Wildcards,
};

use crate::lowered::*;

pub(crate) type BTreeComms = std::collections::BTreeMap<CommId, Arc<[Rank]>>;

/// The part of a compute block of duration `d` (this rank's, drawn where the block is) that the
/// skeleton runs, as its runtime under SMPI: a block that keeps only a short part runs
/// max(5 %, 50 µs) of it; a cut
/// block runs `d` less what is removed (a drawn or replayed one nothing where its duration is
/// shorter; a fixed one whole, and `shrink` of the rest where it has no per-rank factors).
pub(crate) fn kept(
    d: f64,
    removed: f64,
    keep_only: bool,
    dist: Option<usize>,
    factors: Option<usize>,
    replay: Option<usize>,
    shrink: f64,
) -> f64 {
    use mpiskel_cut::compute_cut::{KEEP_MIN, KEEP_SHARE};
    if keep_only && replay.is_none() {
        return (KEEP_SHARE * d).max(KEEP_MIN).min(d);
    }
    if removed <= 0.0 {
        return d;
    }
    if replay.is_some() || dist.is_some() {
        return (d - removed).max(0.0);
    }
    if d - removed <= 0.0 {
        return d;
    }
    (d - removed) * if factors.is_some() { 1.0 } else { shrink }
}

pub(crate) fn rank_trace(
    r: u32,
    n: u32,
    events: Vec<Event>,
    trailing_s: f64,
    comms: BTreeComms,
) -> RankTrace {
    RankTrace {
        rank: Rank(r),
        info: RankInfo { n_ranks: n, clock: "simulated".into(), ..Default::default() },
        events,
        trailing_gap_ns: secs_to_ns(trailing_s),
        comms,
        record_counts: Default::default(),
        unrecorded: Default::default(),
    }
}

pub(crate) fn secs_to_ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9).round() as u64
}

/// A rank's group of one communicator: its id and its members.
pub(crate) type Group = (u32, Arc<[Rank]>);

/// Every rank's group of communicator `comm` ([`mpiskel_program::instantiate::groups_of`]), its
/// members as world ranks (one list per group) and its id past `MPI_COMM_SELF`'s.
pub(crate) fn groups_of(skel: &Skeleton, comm: usize) -> Vec<Group> {
    let mut made: HashMap<usize, Arc<[Rank]>> = HashMap::new();
    instantiate::groups_of(skel, comm)
        .into_iter()
        .map(|(id, m)| {
            let members = made
                .entry(m.as_ptr() as usize)
                .or_insert_with(|| m.iter().map(|&r| Rank(r)).collect())
                .clone();
            (if id == 0 { 0 } else { id + 2 }, members)
        })
        .collect()
}

pub(crate) struct RankLowering<'a> {
    pub(crate) skel: &'a Skeleton,
    pub(crate) groups: &'a [Vec<Group>],
    pub(crate) rank: u32,
    /// Position among the class's ranks (ascending): the column of replay tables.
    pub(crate) column: usize,
    pub(crate) weight: f64,
    pub(crate) events: Vec<Event>,
    /// Computation since the last call, seconds.
    pub(crate) gap_s: f64,
    /// Request slot → the request started there and not completed yet.
    pub(crate) pending: HashMap<u32, RequestId>,
    pub(crate) next_req: u32,
    /// Per replay table: executions so far.
    pub(crate) replay_at: HashMap<usize, usize>,
    pub(crate) rng: u64,
    pub(crate) marks: Vec<usize>,
    pub(crate) comms: BTreeComms,
    /// Kind of the time step being run.
    pub(crate) kind: u32,
    /// Every iteration of every loop.
    pub(crate) whole: bool,
    /// The skeleton as it runs ([`lower_as_run`]), with its compute shrink.
    pub(crate) as_run: Option<AsRun>,
    /// A cut loop runs more iterations than the skeleton ([`lower`]).
    pub(crate) more: bool,
    /// As it runs: computation not run since the phase began, seconds, and of it what blocks
    /// that keep a short part skipped.
    pub(crate) removed_s: f64,
    pub(crate) keep_s: f64,
    /// Of `removed_s`, what the phase's cut inner loop did not run (as it runs).
    pub(crate) inner_removed_s: f64,
}

impl RankLowering<'_> {
    pub(crate) fn mark(&mut self) -> usize {
        self.marks.push(self.events.len());
        self.marks.len() - 1
    }

    pub(crate) fn phase(&mut self, p: &Phase) -> PhaseMarks {
        if self.as_run.is_some() {
            return self.phase_as_run(p);
        }
        let start = self.mark();
        let mut body = p.body.clone();
        if let Some(cut) = p.inner {
            // The application's count of the inner loop the skeleton cut.
            if let Some(Stmt::Loop { count, .. }) = body.get_mut(cut.index) {
                *count = cut.full;
            }
        }
        let full = p.full.max(1);
        let (positions, kinds): (Vec<u64>, Vec<u32>) = match &p.steps {
            Some(s) if self.whole => ((0..full).collect(), s.kinds.clone()),
            Some(s) if p.is_loop => {
                let pos: Vec<u64> = s.run.iter().map(|&x| u64::from(x)).collect();
                let k = s.run_kinds();
                (pos, k)
            }
            _ => {
                let k = if !self.whole && p.is_loop && p.run < full && calls_in(&body) > 0 {
                    // As many as the skeleton runs (its draws average over them) where that is
                    // cheap, and up to `WARM + WINDOW + 1` more of those it leaves out; the
                    // same count left out in every class, as the skeleton leaves out the same
                    // count, so that their loops still meet where the classes' loops are not
                    // alike (a loop of one class cut with another class's loop of another
                    // count: HPC Challenge on 2 ranks, its loops of 2 and 3 iterations each
                    // run one less). Beyond, `WARM + WINDOW + 1`.
                    // Without more (the classes' loops did not pair so), the skeleton's.
                    let few = u64::from(self.skel.n_ranks) * p.run <= RANK_ITERATIONS;
                    match (self.more, few) {
                        (true, true) => p.run + (full - p.run).min(WARM + WINDOW + 1),
                        (true, false) => full.min(WARM + WINDOW + 1),
                        (false, _) => p.run,
                    }
                } else {
                    full
                };
                let mut pos: Vec<u64> = (0..k.saturating_sub(1)).collect();
                if k > 0 {
                    pos.push(full - 1);
                }
                (pos, vec![0; k as usize])
            }
        };
        let cut = (positions.len() as u64) < full;
        let mut iterations = Vec::new();
        // Guards count the iterations simulated, as the checked program counts the skeleton's:
        // with one simulated, it is the first and the last (its guards of both run, as in the
        // skeleton that runs one; by its position, the application's last, a first-iteration
        // guard's calls would be left out while the other classes make their partners).
        let n = positions.len() as u64;
        for j in 0..positions.len() {
            if cut {
                iterations.push(self.mark());
            }
            self.kind = kinds.get(j).copied().unwrap_or(0);
            let mut iters = vec![(j as u64, n)];
            self.run(&body, &mut iters);
        }
        let end = self.mark();
        PhaseMarks {
            name: p.name.clone(),
            full,
            warmup: p.warmup,
            simulated: cut.then_some((positions, kinds)),
            kinds: p.steps.as_ref().filter(|_| cut).map(|s| s.kinds.clone()).unwrap_or_default(),
            kind_scales: match p.body.as_slice() {
                [Stmt::Steps { cases }] if cut && cases.iter().any(|c| c.run == 0) => {
                    cases.iter().map(|c| if c.run == 0 { 0.0 } else { c.scale }).collect()
                }
                _ => Vec::new(),
            },
            start,
            iterations,
            end,
            removed_s: 0.0,
            keep_s: 0.0,
            scale: 1.0,
            stretch: p.scale,
            first_apart: false,
            pricing: None,
        }
    }

    /// A phase as the skeleton runs it: the iterations it runs (a time-step loop's schedule),
    /// each counted as one of the phase's.
    pub(crate) fn phase_as_run(&mut self, p: &Phase) -> PhaseMarks {
        let start = self.mark();
        (self.removed_s, self.keep_s) = (0.0, 0.0);
        // A time-step loop's steps as the runtime reads them (`sk_steps_count`).
        let kinds: Vec<u32> = match p.kinds_run() {
            Some(k) if p.is_loop => k,
            _ => vec![0; p.run as usize],
        };
        let n = kinds.len() as u64;
        // Each iteration's start is marked where the runtime times the first apart (a loop of
        // two or more iterations that it scales: see [`runtime_phases`]).
        // A time-step loop: each step is timed in its kind's phase (`sk_steps_count`).
        let cases = match p.body.as_slice() {
            [Stmt::Steps { cases }] if p.is_loop && p.steps.is_some() => Some(cases),
            _ => None,
        };
        let timed_apart = p.is_loop && n >= 2 && (p.full + p.warmup > n || cases.is_some());
        let mut step_removed = Vec::new();
        let mut iterations = Vec::new();
        // The cut inner loop, timed on its own as the runtime times it.
        let inner_cut = p.inner.filter(|c| matches!(p.body.get(c.index), Some(Stmt::Loop { .. })));
        let mut inner_marks = Vec::new();
        self.inner_removed_s = 0.0;
        for (j, &kind) in kinds.iter().enumerate() {
            if timed_apart {
                iterations.push(self.mark());
            }
            self.kind = kind;
            let mut iters = vec![(j as u64, n)];
            match inner_cut {
                Some(c) => {
                    self.run(&p.body[..c.index], &mut iters);
                    let Some(Stmt::Loop { count, body, .. }) = p.body.get(c.index) else {
                        unreachable!("filtered above")
                    };
                    let begin = self.mark();
                    let mut first = begin;
                    let before = self.removed_s;
                    for i in 0..*count {
                        iters.push((i, *count));
                        self.run(body, &mut iters);
                        iters.pop();
                        if i == 0 {
                            first = self.mark();
                        }
                    }
                    self.inner_removed_s += self.removed_s - before;
                    inner_marks.push((begin, first, self.mark()));
                    self.run(&p.body[c.index + 1..], &mut iters);
                }
                None => {
                    let before = self.removed_s;
                    self.run(&p.body, &mut iters);
                    if cases.is_some() {
                        step_removed.push(self.removed_s - before);
                    }
                }
            }
        }
        let end = self.mark();
        PhaseMarks {
            name: p.name.clone(),
            full: n,
            warmup: 0,
            simulated: None,
            kinds: Vec::new(),
            kind_scales: Vec::new(),
            start,
            iterations,
            end,
            first_apart: mpiskel_cut::replay::replays_first(&p.body, &self.skel.replays),
            removed_s: self.removed_s,
            keep_s: self.keep_s,
            scale: if n > 0 { (p.full + p.warmup) as f64 / n as f64 * p.scale } else { 0.0 },
            // As it runs: its own time, not what it stands for.
            stretch: 1.0,
            pricing: Some(RunPricing {
                full: p.full,
                warmup: p.warmup,
                scale: p.scale,
                steps: cases.filter(|_| timed_apart).map(|cases| StepMarks {
                    kinds: kinds.clone(),
                    removed_s: step_removed,
                    cases: cases.iter().map(|c| (c.full, c.scale)).collect(),
                }),
                inner: inner_cut.map(|c| InnerMarks {
                    full: c.full,
                    run: c.run,
                    marks: inner_marks,
                    removed_s: self.inner_removed_s,
                }),
            }),
        }
    }

    pub(crate) fn run(&mut self, body: &[Stmt], iters: &mut Vec<(u64, u64)>) {
        for s in body {
            match s {
                Stmt::Compute { seconds, dist, factors, replay, removed, keep_only, .. } => {
                    let d = self.duration(*seconds, *dist, *factors, *replay);
                    let ran = match self.as_run {
                        Some(AsRun { shrink, cut: true }) => {
                            kept(d, *removed, *keep_only, *dist, *factors, *replay, shrink)
                        }
                        _ => d,
                    };
                    self.gap_s += ran;
                    self.removed_s += d - ran;
                    if *keep_only {
                        self.keep_s += d - ran;
                    }
                }
                Stmt::Call { call, .. } => self.call(call, iters),
                Stmt::Loop { count, body, .. } => {
                    for i in 0..*count {
                        iters.push((i, *count));
                        self.run(body, iters);
                        iters.pop();
                    }
                }
                Stmt::Guard { when, depth, body, .. } => {
                    let (i, n) = iters.get(*depth).copied().unwrap_or((0, 1));
                    let on = match when {
                        When::First => i == 0,
                        When::Last => i + 1 == n,
                    };
                    if on {
                        self.run(body, iters);
                    }
                }
                Stmt::Steps { cases } => {
                    if let Some(c) = cases.get(self.kind as usize) {
                        self.run(&c.body, iters);
                    }
                }
            }
        }
    }

    /// A compute block's duration on this rank, seconds.
    pub(crate) fn duration(
        &mut self,
        seconds: f64,
        dist: Option<usize>,
        factors: Option<usize>,
        replay: Option<usize>,
    ) -> f64 {
        let skel = self.skel;
        let table = replay.and_then(|t| Some((t, skel.replays.get(t)?)));
        if let Some((t, r)) = table.filter(|(_, r)| !r.seconds.is_empty()) {
            // As the runtime's sk_replay_row: the rows in order, then again from the first that
            // is not the loop's first iteration replayed apart.
            let rows = &r.seconds;
            let at = self.replay_at.entry(t).or_insert(0);
            let again = if r.first_rows < rows.len() { r.first_rows } else { 0 };
            let i =
                if *at < rows.len() { *at } else { again + (*at - again) % (rows.len() - again) };
            *at += 1;
            if let Some(&x) = rows[i].get(self.column) {
                return x.max(0.0);
            }
        }
        let factor = factor_of(&skel.compute_factors, factors, self.rank);
        let base = match dist.and_then(|d| skel.distributions.get(d)) {
            Some(d) if d.q.len() == QUANTILE_PROBABILITIES.len() => {
                let u = self.uniform();
                let p = &QUANTILE_PROBABILITIES;
                let mut k = 0;
                while k < p.len() - 2 && u >= p[k + 1] {
                    k += 1;
                }
                let f = (u - p[k]) / (p[k + 1] - p[k]);
                d.q[k] * (1.0 - f) + d.q[k + 1] * f
            }
            _ => seconds,
        };
        (base * self.weight * factor).max(0.0)
    }

    /// A uniform draw in [0, 1): as the runtime draws (xorshift64*, [`runtime_uniform`]) where
    /// the skeleton is lowered as it runs, so that its blocks draw the durations its run
    /// draws; splitmix64 otherwise.
    pub(crate) fn uniform(&mut self) -> f64 {
        if self.as_run.is_some() {
            return runtime_uniform(&mut self.rng);
        }
        mpiskel_trace::rng::unit(mpiskel_trace::rng::splitmix64(&mut self.rng))
    }

    pub(crate) fn peer(&self, p: &IrPeer) -> Peer {
        match p {
            IrPeer::Dir(d) => {
                resolve(self.skel, self.rank, *d).map_or(Peer::Null, |r| Peer::Rank(Rank(r)))
            }
            IrPeer::Only { dir, table } => {
                if self.skel.presence_tables[*table][self.rank as usize] {
                    self.peer(&IrPeer::Dir(*dir))
                } else {
                    Peer::Null
                }
            }
            IrPeer::Null => Peer::Null,
            IrPeer::Any => Peer::Any,
            IrPeer::Rank(r) => Peer::Rank(Rank(*r)),
        }
    }

    pub(crate) fn push(&mut self, op: Op, payload: Payload) {
        let gap = std::mem::take(&mut self.gap_s);
        self.events.push(Event {
            op,
            enter_ns: 0,
            exit_ns: 0,
            gap_ns: secs_to_ns(gap),
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        });
    }

    /// A request started in `slot`: one still pending there is completed first, as the
    /// emitted code does.
    pub(crate) fn start(&mut self, slot: u32) -> RequestId {
        if let Some(old) = self.pending.remove(&slot) {
            self.complete(vec![old]);
        }
        let id = RequestId(self.next_req);
        self.next_req += 1;
        self.pending.insert(slot, id);
        id
    }

    pub(crate) fn complete(&mut self, ids: Vec<RequestId>) {
        if ids.is_empty() {
            return;
        }
        let n = ids.len() as u32;
        let completed = ids
            .into_iter()
            .map(|id| Completed { request: Some(id), source: None, tag: None, bytes: None })
            .collect();
        self.push(Op::Waitall, Payload::Completion { n_given: n, completed });
    }

    pub(crate) fn slot_of(r: &SlotRef, iters: &[(u64, u64)]) -> u32 {
        r.base + if r.ring > 1 { iters.get(r.depth).map_or(0, |x| x.0 as u32) } else { 0 }
    }

    pub(crate) fn sizes(&self, bytes: u64, sizes: Option<usize>) -> u64 {
        sizes
            .and_then(|t| self.skel.size_tables.get(t))
            .and_then(|t| t.get(self.rank as usize))
            .copied()
            .unwrap_or(bytes)
    }

    pub(crate) fn call(&mut self, c: &Call, iters: &[(u64, u64)]) {
        let world = CommId::WORLD;
        match c {
            Call::Send { op, to, tag, bytes, slot, sizes } => {
                let peer = self.peer(to);
                if peer == Peer::Null {
                    return;
                }
                let bytes = self.sizes(*bytes, *sizes);
                let (op, request) = match slot {
                    Some(s) => {
                        let id = self.start(Self::slot_of(s, iters));
                        // A buffered send (`MPI_Ibsend`) stays buffered: its wait never blocks.
                        let op = match op {
                            Op::Issend | Op::Bsend => *op,
                            _ => Op::Isend,
                        };
                        (op, Some(id))
                    }
                    None => (*op, None),
                };
                let p = Payload::P2p {
                    peer,
                    tag: *tag,
                    bytes,
                    comm: world,
                    request,
                    wildcards: Wildcards::default(),
                };
                self.push(op, p);
            }
            Call::Recv { from, tag, bytes, slot, .. } => {
                let peer = self.peer(from);
                if peer == Peer::Null {
                    return;
                }
                let wildcards = Wildcards { source: peer == Peer::Any, tag: *tag < 0 };
                let (op, request) = match slot {
                    Some(s) => (Op::Irecv, Some(self.start(Self::slot_of(s, iters)))),
                    None => (Op::Recv, None),
                };
                let p = Payload::P2p {
                    peer,
                    tag: *tag,
                    bytes: *bytes,
                    comm: world,
                    request,
                    wildcards,
                };
                self.push(op, p);
            }
            Call::SendRecv { to, tag, bytes, from, recv_tag, count, sizes } => {
                let (dest, source) = (self.peer(to), self.peer(from));
                if dest == Peer::Null && source == Peer::Null {
                    return;
                }
                let p = Payload::SendRecv {
                    dest,
                    send_tag: *tag,
                    send_bytes: self.sizes(*bytes, *sizes),
                    source,
                    recv_tag: *recv_tag,
                    recv_bytes: *count,
                    comm: world,
                };
                self.push(Op::Sendrecv, p);
            }
            Call::Probe { .. } => {}
            Call::Complete { how, slots, .. } => {
                let open: Vec<u32> =
                    slots.iter().copied().filter(|s| self.pending.contains_key(s)).collect();
                let ids: Vec<RequestId> =
                    how.completes(open).iter().filter_map(|s| self.pending.remove(s)).collect();
                self.complete(ids);
            }
            Call::Collective { op, comm, root, bytes, slot, .. } => {
                if matches!(self.skel.comms.get(*comm), None | Some(Comm::SelfComm)) {
                    return;
                }
                let Some((id, members)) = self.groups[*comm].get(self.rank as usize).cloned()
                else {
                    return;
                };
                let cid = CommId(id);
                self.comms.entry(cid).or_insert_with(|| members.clone());
                let m = members.len() as u64;
                let request = slot.as_ref().map(|s| self.start(Self::slot_of(s, iters)));
                let root = root.and_then(|x| members.get(x as usize).copied());
                let p = Payload::Collective {
                    comm: cid,
                    root,
                    send_bytes: collective_send_bytes(*op, *bytes, m),
                    recv_bytes: collective_recv_bytes(*op, *bytes, m),
                    send_counts: None,
                    recv_counts: None,
                    request,
                };
                self.push(*op, p);
            }
        }
    }
}
