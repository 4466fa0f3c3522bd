//! The discrete-event simulation of a trace's program on a platform.
//!
//! Every rank runs its recorded calls in order: the compute block before each call becomes a
//! computation of its flops on the rank's host (or of its recorded seconds at the speed of the
//! machine that recorded it), each call becomes the messages MPI would send for it (a collective,
//! those of its algorithm, [`crate::collectives`]), and a rank blocks where MPI would: in a
//! receive or a wait until the message has arrived, in a send above the eager threshold until
//! it has left. A message is matched as MPI matches it (source, tag and communicator, in the
//! order posted) and then moves as a flow ([`crate::model`], [`crate::fluid`]); the simulated
//! time is the last rank's end.
//!
//! Cost: O(E log E) for E calls and messages, plus the sharing solves, each over the component
//! of concurrent flows a message joins or leaves.

use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use mpiskel_trace::{Event, Op, Payload, Peer, Rank, RankTrace, RequestId, Work};
use serde::Serialize;

use crate::collectives::{schedule, CollCall, CollStep, Selector};
use crate::error::{Result, SimulateError};
use crate::fastforward;
use crate::fluid::{Change, System};
use crate::heap::{Deadlines, Entry};
use crate::model::Model;
use crate::platform::{Platform, Sharing};

/// How to simulate.
#[derive(Debug, Clone)]
pub struct Options {
    /// The performance model.
    pub model: Model,
    /// Flop/s of the machine that recorded compute blocks as seconds (traces without flop
    /// counts): a block of t seconds is t × this many flops here.
    pub trace_speed: f64,
    /// Skip the main loop's iterations once their pace is known ([`crate::fastforward`]).
    pub fast_forward: bool,
    /// Whose choice of collective algorithms to follow.
    pub selector: Selector,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            model: Model::smpi(),
            trace_speed: 1e9,
            fast_forward: true,
            selector: Selector::Default,
        }
    }
}

/// What the fast-forward did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FastForward {
    /// Iterations of the main loop.
    pub iterations: usize,
    /// Iterations skipped (0 where it did not apply).
    pub skipped: usize,
    /// The measured seconds per iteration.
    pub pace_s: f64,
    /// Seconds the skipped iterations were priced at.
    pub skipped_s: f64,
    /// Why nothing was skipped, where nothing was.
    pub reason: Option<String>,
}

/// One rank's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankFigures {
    /// The rank.
    pub rank: u32,
    /// The host it ran on.
    pub host: String,
    /// When it ended, seconds.
    pub end_s: f64,
    /// Seconds it computed.
    pub compute_s: f64,
}

/// A rank that never ended: the program, as recorded, cannot go on there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stuck {
    /// The rank.
    pub rank: u32,
    /// The call it was in (position in its trace).
    pub call: usize,
    /// Which call.
    pub op: String,
}

/// What a simulation found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Simulation {
    /// Predicted time: the last rank's end, seconds.
    pub predicted_s: f64,
    /// Per rank.
    pub ranks: Vec<RankFigures>,
    /// Messages moved (point-to-point and inside collectives).
    pub messages: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Times the sharing of the platform's resources was solved again (once per instant at
    /// which activities start, end or change).
    pub solves: u64,
    /// Ranks that never ended (empty for a program that completes).
    pub stuck: Vec<Stuck>,
    /// How the main loop was fast-forwarded (absent where it was not asked for).
    pub fast_forward: Option<FastForward>,
}

const NONE: u32 = u32::MAX;

/// Most resources an activity uses: a route of three links and its reverse.
use crate::fluid::MAX_USES;

#[derive(Debug, Clone)]
enum Step {
    Compute(f64),
    Send { to: u32, tag: i64, ctx: u32, bytes: u64, req: u32, sync: bool },
    Recv { from: Option<u32>, tag: Option<i64>, ctx: u32, req: u32 },
    Wait(Vec<u32>),
    Sleep(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ready,
    Blocked,
    Done,
}

#[derive(Debug)]
struct RankState {
    host: usize,
    next: usize,
    steps: VecDeque<Step>,
    waiting: u32,
    state: State,
    end: f64,
    compute: f64,
    /// The engine's requests behind each of the rank's own: one for a point-to-point call,
    /// every message of a non-blocking collective for it.
    user_reqs: HashMap<RequestId, Vec<u32>>,
    /// CommId → (context, members as world ranks).
    comms: HashMap<u32, (u32, Arc<[Rank]>)>,
    /// The next of its marks to note.
    mark: usize,
}

#[derive(Debug, Clone, Copy)]
struct Req {
    done: bool,
    waiter: u32,
}

#[derive(Debug, Clone, Copy)]
struct PendingSend {
    src: u32,
    tag: i64,
    bytes: u64,
    req: u32,
    sync: bool,
}

#[derive(Debug, Clone, Copy)]
struct PendingRecv {
    tag: Option<i64>,
    req: u32,
}

/// The unmatched sends to one rank and its unmatched receives, on one context. Kept per
/// source so that matching costs O(1) however many ranks send to one (a linear reduction at
/// 16,384 ranks); a posting number keeps MPI's order between a wildcard and a named source.
#[derive(Debug, Default)]
struct Queues {
    sends: HashMap<u32, VecDeque<(u64, PendingSend)>>,
    recvs: HashMap<u32, VecDeque<(u64, PendingRecv)>>,
    any_recvs: VecDeque<(u64, PendingRecv)>,
    posted: u64,
}

impl Queues {
    /// Takes the first receive a send from `src` with `tag` matches.
    fn match_send(&mut self, src: u32, tag: i64) -> Option<PendingRecv> {
        let ok = |p: &PendingRecv| p.tag.is_none_or(|t| t == tag);
        let named = self.recvs.get(&src).and_then(|q| q.iter().position(|(_, p)| ok(p)));
        let any = self.any_recvs.iter().position(|(_, p)| ok(p));
        let named_seq = named.map(|i| self.recvs[&src][i].0);
        let any_seq = any.map(|i| self.any_recvs[i].0);
        match (named_seq, any_seq) {
            (Some(a), Some(b)) if b < a => self.any_recvs.remove(any?).map(|x| x.1),
            (Some(_), _) => self.recvs.get_mut(&src)?.remove(named?).map(|x| x.1),
            (None, Some(_)) => self.any_recvs.remove(any?).map(|x| x.1),
            (None, None) => None,
        }
    }

    /// Takes the first send a receive from `from` (any source where `None`) with `tag` matches.
    fn match_recv(&mut self, from: Option<u32>, tag: Option<i64>) -> Option<PendingSend> {
        let ok = |s: &PendingSend| tag.is_none_or(|t| t == s.tag);
        match from {
            Some(f) => {
                let q = self.sends.get_mut(&f)?;
                let i = q.iter().position(|(_, s)| ok(s))?;
                q.remove(i).map(|x| x.1)
            }
            None => {
                let (src, i) = self
                    .sends
                    .iter()
                    .filter_map(|(&src, q)| {
                        q.iter().position(|(_, s)| ok(s)).map(|i| (q[i].0, src, i))
                    })
                    .min()
                    .map(|(_, src, i)| (src, i))?;
                self.sends.get_mut(&src)?.remove(i).map(|x| x.1)
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum ActKind {
    Compute { rank: u32 },
    Timer { rank: u32 },
    Flow { recv_req: u32, send_req: u32 },
}

#[derive(Debug, Clone, Copy)]
struct Act {
    kind: ActKind,
    remaining: f64,
    factor: f64,
    rate: f64,
    last: f64,
    start: f64,
    penalty: f64,
}

struct Sim<'a> {
    traces: &'a [RankTrace],
    platform: &'a Platform,
    placement: &'a [usize],
    opts: &'a Options,
    now: f64,
    ranks: Vec<RankState>,
    reqs: Vec<Req>,
    queues: HashMap<(u32, u32), Queues>,
    system: System,
    acts: Vec<Option<Act>>,
    heap: Deadlines,
    seq: u64,
    ready: Vec<u32>,
    changes: Vec<Change>,
    /// Resources whose sharing changed since the last solve.
    dirty: Vec<usize>,
    /// Activities added or activated since the last solve.
    dirty_vars: Vec<usize>,
    cpu_base: usize,
    messages: u64,
    bytes: u64,
    solves: u64,
    ff: Option<Ff>,
    /// Per rank: the calls at which to note the time (see [`simulate_marked`]), and the times.
    marks: &'a [Vec<usize>],
    mark_times: Vec<Vec<f64>>,
}

/// The fast-forward's state.
#[derive(Debug)]
struct Ff {
    plan: fastforward::Plan,
    /// Per rank: when it started each iteration so far.
    arrivals: Vec<Vec<f64>>,
    /// The boundary every rank jumps at, the iterations it skips, and what they take.
    jump: Option<(usize, usize, f64)>,
    pace: f64,
    refused: Option<String>,
}

/// Simulates `traces` (every rank of one run) on `platform`, rank `r` on host `placement[r]`.
pub fn simulate(
    traces: &[RankTrace],
    platform: &Platform,
    placement: &[usize],
    opts: &Options,
) -> Result<Simulation> {
    simulate_marked(traces, platform, placement, opts, &[], None).map(|(s, _)| s)
}

/// [`simulate`], also noting when each rank reaches each call of `marks[rank]` (indices into its
/// events, ascending, repeats allowed; its number of events or more: its end): per rank, the
/// times in the order of its marks. `plan`: the fast-forward's plan of `traces` where the caller
/// made it already ([`fastforward::plan`]; made here otherwise, where fast-forwarding).
pub fn simulate_marked(
    traces: &[RankTrace],
    platform: &Platform,
    placement: &[usize],
    opts: &Options,
    marks: &[Vec<usize>],
    plan: Option<&std::result::Result<fastforward::Plan, fastforward::Refusal>>,
) -> Result<(Simulation, Vec<Vec<f64>>)> {
    if placement.len() != traces.len() {
        return Err(SimulateError::Model {
            name: "placement".into(),
            what: format!("{} hosts for {} ranks", placement.len(), traces.len()),
        });
    }
    if let Some(&h) = placement.iter().find(|&&h| h >= platform.hosts.len()) {
        return Err(SimulateError::Model {
            name: "placement".into(),
            what: format!("host {h} of a platform of {}", platform.hosts.len()),
        });
    }
    let mut system = System::default();
    for l in &platform.links {
        system.add_resource(l.bandwidth, l.sharing == Sharing::Fatpipe);
    }
    let cpu_base = platform.links.len();
    for h in &platform.hosts {
        system.add_resource(h.speed * f64::from(h.cores), false);
    }
    let ranks = rank_states(traces, placement);
    let mut sim = Sim {
        traces,
        platform,
        placement,
        opts,
        now: 0.0,
        ranks,
        reqs: Vec::new(),
        queues: HashMap::default(),
        system,
        acts: Vec::new(),
        heap: Deadlines::default(),
        seq: 0,
        ready: (0..traces.len() as u32).rev().collect(),
        changes: Vec::new(),
        dirty: Vec::new(),
        dirty_vars: Vec::new(),
        cpu_base,
        messages: 0,
        solves: 0,
        bytes: 0,
        ff: None,
        marks,
        mark_times: marks.iter().map(|m| Vec::with_capacity(m.len())).collect(),
    };
    if opts.fast_forward {
        let plan = match plan {
            Some(p) => p.clone(),
            None => fastforward::plan(traces),
        };
        sim.ff = Some(fast_forward_of(traces.len(), plan));
    }
    sim.run()?;
    let fast_forward = sim.ff.as_ref().map(|f| FastForward {
        iterations: f.plan.iterations,
        skipped: f.jump.map_or(0, |j| j.1),
        pace_s: f.pace,
        skipped_s: f.jump.map_or(0.0, |j| j.2),
        reason: f.refused.clone().or_else(|| {
            f.jump.is_none().then(|| "the program ended before the pace was known".to_string())
        }),
    });
    let stuck: Vec<Stuck> = sim
        .ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.state != State::Done)
        .map(|(i, r)| {
            let call = r.next.saturating_sub(1);
            Stuck {
                rank: i as u32,
                call,
                op: traces[i].events.get(call).map(|e| e.op.name().to_string()).unwrap_or_default(),
            }
        })
        .collect();
    let figures: Vec<RankFigures> = sim
        .ranks
        .iter()
        .enumerate()
        .map(|(i, r)| RankFigures {
            rank: i as u32,
            host: platform.hosts[r.host].name.clone(),
            end_s: r.end,
            compute_s: r.compute,
        })
        .collect();
    let times = std::mem::take(&mut sim.mark_times);
    let simulation = Simulation {
        predicted_s: figures.iter().map(|f| f.end_s).fold(0.0, f64::max),
        ranks: figures,
        messages: sim.messages,
        bytes: sim.bytes,
        solves: sim.solves,
        stuck,
        fast_forward,
    };
    Ok((simulation, times))
}

/// Each rank's state before the run, on its host of `placement`: its communicators with one
/// context per distinct member list.
fn rank_states(traces: &[RankTrace], placement: &[usize]) -> Vec<RankState> {
    // Communicators: one context per distinct member list.
    let mut ctx_of: HashMap<Arc<[Rank]>, u32> = HashMap::default();
    // Most ranks share their member lists (one world list for all): look them up by address.
    let mut by_address: HashMap<usize, u32> = HashMap::default();
    traces
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let comms = t
                .comms
                .iter()
                .map(|(id, m)| {
                    let address = m.as_ptr() as usize;
                    let c = match by_address.get(&address) {
                        Some(&c) => c,
                        None => {
                            let n = ctx_of.len() as u32;
                            let c = *ctx_of.entry(m.clone()).or_insert(n);
                            by_address.insert(address, c);
                            c
                        }
                    };
                    (id.0, (c, m.clone()))
                })
                .collect();
            RankState {
                host: placement[i],
                next: 0,
                steps: VecDeque::new(),
                waiting: 0,
                state: State::Ready,
                end: 0.0,
                compute: 0.0,
                user_reqs: HashMap::default(),
                comms,
                mark: 0,
            }
        })
        .collect()
}

/// The fast-forward's state for a run of `n` ranks, from its plan (or why it was refused).
fn fast_forward_of(
    n: usize,
    plan: std::result::Result<fastforward::Plan, fastforward::Refusal>,
) -> Ff {
    match plan {
        Ok(plan) => {
            Ff { arrivals: vec![Vec::new(); n], plan, jump: None, pace: 0.0, refused: None }
        }
        Err(why) => Ff {
            plan: fastforward::Plan { iterations: 0, loops: vec![], flops: vec![] },
            arrivals: vec![],
            jump: None,
            pace: 0.0,
            refused: Some(why),
        },
    }
}

/// Rank `r` of a run of `n` made up here (no file behind it): its calls on `MPI_COMM_WORLD`.
pub(crate) fn made_rank(r: u32, n: u32, events: Vec<Event>) -> RankTrace {
    RankTrace {
        rank: Rank(r),
        info: mpiskel_trace::RankInfo {
            n_ranks: n,
            clock: "simulated".into(),
            ..Default::default()
        },
        events,
        trailing_gap_ns: 0,
        comms: [(mpiskel_trace::CommId::WORLD, mpiskel_trace::model::world_members(n))]
            .into_iter()
            .collect(),
        record_counts: Default::default(),
        unrecorded: Default::default(),
    }
}

fn trace_err(rank: usize, call: usize, e: &Event, what: String) -> SimulateError {
    SimulateError::Trace { rank: rank as u32, call, op: e.op.name().into(), what }
}

impl Sim<'_> {
    fn run(&mut self) -> Result<()> {
        loop {
            while let Some(r) = self.ready.pop() {
                self.advance(r as usize)?;
            }
            // Every change made at this instant is solved at once.
            self.flush();
            let Some((var, ev)) = self.heap.pop() else { break };
            self.now = ev.t;
            self.event(var, ev);
            // Events of the same instant (the flows of an all-to-all, equal in size and rate,
            // started together) all happen before the sharing is solved again: one solve for
            // all of them instead of one per flow.
            while self.heap.next_time().is_some_and(|t| t <= self.now) {
                let Some((var, ev)) = self.heap.pop() else { break };
                self.event(var, ev);
            }
        }
        Ok(())
    }

    /// What happens when activity `var`'s event `ev` comes, at `self.now`.
    fn event(&mut self, var: usize, ev: Entry) {
        let Some(act) = self.acts[var] else { return };
        if ev.latency {
            self.system.set_penalty(var, act.penalty);
            self.mark_dirty(var);
            // A flow with nothing to move ends with its latency.
            if let Some(a) = self.acts[var] {
                if a.remaining <= 0.0 {
                    self.finish(var);
                }
            }
        } else {
            self.finish(var);
        }
    }

    fn push_event(&mut self, t: f64, var: usize, latency: bool) {
        self.seq += 1;
        self.heap.set(var, Entry { t, seq: self.seq, latency });
    }

    /// Notes that the sharing around variable `v`'s resources must be solved again.
    fn mark_dirty(&mut self, v: usize) {
        let mut seeds = [0usize; MAX_USES];
        let k = self.system.resources_of(v, &mut seeds);
        self.dirty.extend_from_slice(&seeds[..k]);
        self.dirty_vars.push(v);
    }

    /// Solves again around every resource marked since the last solve.
    fn flush(&mut self) {
        if self.dirty.is_empty() {
            return;
        }
        self.solves += 1;
        let mut seeds = std::mem::take(&mut self.dirty);
        seeds.sort_unstable();
        seeds.dedup();
        let hints = std::mem::take(&mut self.dirty_vars);
        self.resolve_with(&seeds, &hints);
        seeds.clear();
        self.dirty = seeds;
        self.dirty_vars = hints;
        self.dirty_vars.clear();
    }

    /// Re-solves the sharing around `seeds`, told which activities just started sharing
    /// (`hints`), and reschedules every activity whose rate changed.
    fn resolve_with(&mut self, seeds: &[usize], hints: &[usize]) {
        let mut changes = std::mem::take(&mut self.changes);
        self.system.solve_around(seeds, hints, &mut changes);
        for &(v, _old, new) in &changes {
            let Some(a) = self.acts[v].as_mut() else { continue };
            a.remaining = (a.remaining - a.rate * (self.now - a.last)).max(0.0);
            a.last = self.now;
            let old_rate = a.rate;
            a.rate = new * a.factor;
            let (remaining, rate) = (a.remaining, a.rate);
            if rate > 0.0 {
                // An unchanged rate keeps its event where it is.
                if rate != old_rate || !self.heap.contains(v) {
                    let t = if rate.is_finite() { self.now + remaining / rate } else { self.now };
                    self.push_event(t, v, false);
                }
            } else {
                self.heap.remove(v);
            }
        }
        self.changes = changes;
    }

    fn new_act(&mut self, uses: &[(usize, f64)], penalty: f64, bound: f64, act: Act, latency: f64) {
        let share = if latency > 0.0 { 0.0 } else { penalty };
        let v = self.system.add_var(uses, share, bound);
        if self.acts.len() <= v {
            self.acts.resize(v + 1, None);
        }
        self.acts[v] = Some(act);
        if latency > 0.0 {
            self.push_event(self.now + latency, v, true);
        } else {
            self.mark_dirty(v);
            if act.remaining <= 0.0 {
                self.finish(v);
            }
        }
    }

    fn finish(&mut self, v: usize) {
        let Some(act) = self.acts[v].take() else { return };
        self.mark_dirty(v);
        self.system.remove_var(v);
        self.heap.remove(v);
        match act.kind {
            ActKind::Compute { rank } => {
                let r = &mut self.ranks[rank as usize];
                r.compute += self.now - act.start;
                r.state = State::Ready;
                self.ready.push(rank);
            }
            ActKind::Timer { rank } => {
                self.ranks[rank as usize].state = State::Ready;
                self.ready.push(rank);
            }
            ActKind::Flow { recv_req, send_req } => {
                self.complete(recv_req);
                if send_req != NONE {
                    self.complete(send_req);
                }
            }
        }
    }

    fn complete(&mut self, req: u32) {
        let q = &mut self.reqs[req as usize];
        if q.done {
            return;
        }
        q.done = true;
        let w = q.waiter;
        if w != NONE {
            let r = &mut self.ranks[w as usize];
            r.waiting -= 1;
            if r.waiting == 0 && r.state == State::Blocked {
                r.state = State::Ready;
                self.ready.push(w);
            }
        }
    }

    fn new_req(&mut self) -> u32 {
        self.reqs.push(Req { done: false, waiter: NONE });
        (self.reqs.len() - 1) as u32
    }
}

mod advance;
mod expand;
mod flows;

#[cfg(test)]
mod more_tests;
#[cfg(test)]
mod tests;
