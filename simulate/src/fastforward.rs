//! Loops simulated until their pace is known, then skipped: the main loop of an iterative
//! program repeats the same messages every iteration, so once a few iterations have run the
//! rest take the same time each, give or take what their computation differs by.
//!
//! The plan ([`plan`]) finds each rank's main loop (its calls as symbols — operation, peer
//! offset, tag, size, communicator — folded into a loop nest by [`mpiskel_compress::greedy`],
//! Xu & Subhlok 2008, §3) and checks that its iterations are closed: every channel carries as
//! many messages out of one iteration as into it, every communicator makes as many collectives
//! in it on every member, and no request outlives it. Only then can every rank jump over the
//! same iterations at its own boundary without changing what any message matches.
//!
//! During the simulation ([`crate::engine`]) each rank notes when it starts each iteration.
//! Once every rank has run the warm-up and the window ([`window`]), the pace is the mean
//! duration of the window's iterations over all ranks, and each rank, at the next boundary none has
//! reached, skips all but the last iteration: it waits as long as they would take at that pace,
//! corrected by how much more (or less) the slowest rank computes in them than in the window.
//!
//! Cost: O(n log n) per distinct rank program of n calls for the fold, O(n) for the checks.

use std::collections::HashMap;

use mpiskel_compress::{greedy, main_loop_index, Node, When};
use mpiskel_trace::{Event, Payload, Peer, RankTrace, Work};

/// Iterations run before the pace is measured, and iterations it is measured over, for a main
/// loop of `n` iterations: a twentieth and a tenth of the loop, at least 2 and 3 and at most 8
/// and 16 (beyond, a longer window changed no NPB prediction by more than 0.1 % and only made
/// loops of thousands of iterations slower to simulate).
pub fn window(n: usize) -> (usize, usize) {
    ((n / 20).clamp(2, 8), (n / 10).clamp(3, 16))
}

/// Where each rank's main loop lies in its calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Iterations of the main loop (the same on every rank).
    pub iterations: usize,
    /// Per rank: where its main loop lies.
    pub loops: Vec<Loop>,
    /// Per rank and iteration: flops computed in it.
    pub flops: Vec<Vec<f64>>,
}

/// Why a trace's loops are simulated whole.
pub type Refusal = String;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    op: u8,
    peer: i64,
    tag: i64,
    bytes: u64,
    comm: u32,
    root: i64,
    counts: u64,
}

fn key(e: &Event, me: u32, n: u32) -> Key {
    let off = |p: &Peer| match p {
        Peer::Rank(r) => i64::from((r.0 + n - me) % n.max(1)),
        Peer::Any => -1,
        Peer::Null => -2,
    };
    let mut k = Key { op: e.op.code(), peer: -3, tag: 0, bytes: 0, comm: 0, root: -1, counts: 0 };
    match &e.payload {
        Payload::P2p { peer, tag, bytes, comm, .. } => {
            (k.peer, k.tag, k.bytes, k.comm) = (off(peer), i64::from(*tag), *bytes, comm.0);
        }
        Payload::SendRecv { dest, send_tag, send_bytes, source, recv_tag, comm, .. } => {
            k.peer = off(dest) * 65_536 + off(source);
            k.tag = i64::from(*send_tag) * 65_536 + i64::from(*recv_tag);
            (k.bytes, k.comm) = (*send_bytes, comm.0);
        }
        Payload::Collective { comm, root, send_bytes, recv_bytes, send_counts, .. } => {
            k.comm = comm.0;
            k.root = root.map_or(-1, |r| i64::from(r.0));
            k.bytes = send_bytes.wrapping_mul(31).wrapping_add(*recv_bytes);
            if let Some(c) = send_counts {
                k.counts = c.iter().fold(17u64, |h, &x| h.wrapping_mul(1_000_003).wrapping_add(x));
            }
        }
        Payload::Completion { n_given, completed } => {
            k.bytes = u64::from(*n_given) * 1_000 + completed.len() as u64;
        }
        Payload::None | Payload::Comm { .. } => {}
    }
    k
}

/// A rank's main loop: where its first iteration starts, the calls only the first iteration
/// makes (guarded), the calls of every iteration, and how many iterations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Loop {
    /// First call of the loop.
    pub start: usize,
    /// Calls only the first iteration makes.
    pub first_extra: usize,
    /// Calls of every iteration.
    pub len: usize,
    /// Iterations.
    pub count: usize,
}

impl Loop {
    /// The first call of iteration `i`.
    pub fn iteration_start(&self, i: usize) -> usize {
        if i == 0 {
            self.start
        } else {
            self.start + self.first_extra + i * self.len
        }
    }

    /// The iteration call `c` starts, if it starts one.
    pub fn iteration_at(&self, c: usize) -> Option<usize> {
        if c == self.start {
            return Some(0);
        }
        let first = self.start + self.first_extra + self.len;
        if c < first || (c - self.start - self.first_extra) % self.len != 0 {
            return None;
        }
        let i = (c - self.start - self.first_extra) / self.len;
        (i < self.count).then_some(i)
    }
}

/// The main loop of one rank's calls.
fn main_loop(syms: &[u32]) -> Option<Loop> {
    let nest = greedy(syms);
    let i = main_loop_index(&nest.items)?;
    let Node::Loop { count, body } = &nest.items[i] else { return None };
    let start: u64 = nest.items[..i].iter().map(Node::expanded_len).sum();
    let (mut len, mut first_extra) = (0, 0);
    for n in body {
        match n {
            Node::Guard { when: When::First, .. } => first_extra += n.expanded_len(),
            Node::Guard { when: When::Last, .. } => {}
            _ => len += n.expanded_len(),
        }
    }
    if *count < 2 || len == 0 {
        return None;
    }
    Some(Loop {
        start: start as usize,
        first_extra: first_extra as usize,
        len: len as usize,
        count: *count as usize,
    })
}

/// Finds every rank's main loop and checks that its iterations can be skipped.
pub fn plan(traces: &[RankTrace]) -> Result<Plan, Refusal> {
    let n = traces.len() as u32;
    if traces.is_empty() {
        return Err("no ranks".into());
    }
    // One fold per distinct program (ranks of a class have the same symbols).
    let mut interner: HashMap<Key, u32> = HashMap::new();
    let mut folds: HashMap<Vec<u32>, Option<Loop>> = HashMap::new();
    let mut loops = Vec::with_capacity(traces.len());
    for t in traces {
        let syms: Vec<u32> = t
            .events
            .iter()
            .map(|e| {
                let k = key(e, t.rank.0, n);
                let next = interner.len() as u32;
                *interner.entry(k).or_insert(next)
            })
            .collect();
        let found = match folds.get(&syms) {
            Some(f) => *f,
            None => {
                let f = main_loop(&syms);
                folds.insert(syms, f);
                f
            }
        };
        match found {
            Some(l) => loops.push(l),
            None => return Err(format!("rank {} has no main loop", t.rank)),
        }
    }
    let iterations = loops[0].count;
    if let Some((r, l)) = loops.iter().enumerate().find(|(_, l)| l.count != iterations) {
        return Err(format!(
            "main loops differ: rank 0 runs {iterations} iterations, rank {r} runs {}",
            l.count
        ));
    }
    if iterations < 3 {
        return Err(format!("the main loop's {iterations} iterations are too few to skip any"));
    }
    closed(traces, &loops)?;
    let flops = traces
        .iter()
        .zip(&loops)
        .map(|(t, l)| {
            (0..l.count)
                .map(|i| {
                    let a = l.iteration_start(i);
                    let b = (l.iteration_start(i + 1)).min(t.events.len());
                    t.events[a..b].iter().map(flops_of).sum()
                })
                .collect()
        })
        .collect();
    Ok(Plan { iterations, loops, flops })
}

/// Flops of the compute block before a call (its recorded seconds at 1 Gflop/s where the trace
/// counted no flops; the engine rescales).
pub fn flops_of(e: &Event) -> f64 {
    match e.gap_work {
        Some(Work::Flops(f)) => f,
        _ => e.gap_cpu_ns.unwrap_or(e.gap_ns) as f64,
    }
}

/// Every channel and communicator balanced over the calls before the loop and over one
/// iteration, and no request of an iteration completed outside it.
fn closed(traces: &[RankTrace], loops: &[Loop]) -> Result<(), Refusal> {
    let n = traces.len();
    for (what, range) in
        [("up to the main loop's second iteration", 0usize), ("in one iteration", 1)]
    {
        let mut sent: HashMap<(u32, u32, u32), i64> = HashMap::new();
        let mut colls: HashMap<(u32, u32), (Vec<u32>, Vec<i64>)> = HashMap::new();
        for (r, t) in traces.iter().enumerate() {
            let l = loops[r];
            // Everything up to the second iteration, then the second iteration (the first may
            // complete requests of the set-up, or make calls only it makes).
            let (a, b) = (l.iteration_start(1), l.iteration_start(2).min(t.events.len()));
            let span = if range == 0 { 0..a } else { a..b };
            let comm_key = |c: u32| -> u32 {
                t.comms
                    .get(&mpiskel_trace::CommId(c))
                    .map_or(c, |m| m.len() as u32 * 65_536 + m[0].0)
            };
            for e in &t.events[span] {
                match &e.payload {
                    Payload::P2p { peer: Peer::Rank(p), comm, .. } => {
                        let (src, dst) = match e.op.class() {
                            mpiskel_trace::OpClass::Send => (r as u32, p.0),
                            mpiskel_trace::OpClass::Recv => (p.0, r as u32),
                            _ => continue,
                        };
                        let d = if e.op.class() == mpiskel_trace::OpClass::Send { 1 } else { -1 };
                        *sent.entry((src, dst, comm_key(comm.0))).or_default() += d;
                    }
                    Payload::SendRecv { dest, source, comm, .. } => {
                        if let Peer::Rank(p) = dest {
                            *sent.entry((r as u32, p.0, comm_key(comm.0))).or_default() += 1;
                        }
                        if let Peer::Rank(p) = source {
                            *sent.entry((p.0, r as u32, comm_key(comm.0))).or_default() -= 1;
                        }
                    }
                    Payload::Collective { comm, .. } => {
                        let members = || {
                            t.comms
                                .get(comm)
                                .map(|m| m.iter().map(|x| x.0).collect())
                                .unwrap_or_default()
                        };
                        let v = colls
                            .entry((comm_key(comm.0), u32::from(e.op.code())))
                            .or_insert_with(|| (members(), vec![0; n]));
                        v.1[r] += 1;
                    }
                    _ => {}
                }
            }
            if range == 1 {
                requests_closed(t, a, b).map_err(|e| format!("rank {r}: {e}"))?;
            }
        }
        if let Some(((s, d, _), k)) = sent.iter().find(|(_, &k)| k != 0) {
            return Err(format!(
                "{what}, rank {s} sends {} messages to rank {d} that it does not receive there",
                k
            ));
        }
        for ((_, op), (members, counts)) in &colls {
            let of = |m: &u32| counts.get(*m as usize).copied().unwrap_or(0);
            if let Some(m) = members.iter().find(|m| of(m) != of(&members[0])) {
                let op = mpiskel_trace::Op::from_code(*op as u8).map_or("?", |o| o.name());
                return Err(format!(
                    "{what}, ranks {} and {m} make {} and {} MPI_{op} on one communicator",
                    members[0],
                    of(&members[0]),
                    of(m)
                ));
            }
        }
    }
    Ok(())
}

/// Every request started in calls `a..b` completes there, and none completed there started
/// before.
fn requests_closed(t: &RankTrace, a: usize, b: usize) -> Result<(), String> {
    let mut open: Vec<u32> = Vec::new();
    for e in &t.events[a..b] {
        match &e.payload {
            Payload::P2p { request: Some(q), .. }
            | Payload::Collective { request: Some(q), .. } => open.push(q.0),
            Payload::Completion { completed, .. } => {
                for c in completed {
                    if let Some(q) = c.request {
                        match open.iter().position(|&x| x == q.0) {
                            Some(p) => {
                                open.swap_remove(p);
                            }
                            None => return Err(format!("a request completed in an iteration started before it (request {})", q.0)),
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(q) = open.first() {
        return Err(format!("request {q} outlives the iteration that started it"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{simulate, Options};
    use crate::platform::{ClusterSpec, Platform};
    use mpiskel_trace::{CommId, Op, Rank, RequestId, Wildcards};

    fn ev(op: Op, flops: f64, payload: Payload) -> Event {
        Event {
            op,
            enter_ns: 0,
            exit_ns: 0,
            gap_ns: flops as u64,
            gap_work: (flops > 0.0).then_some(Work::Flops(flops)),
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        }
    }

    fn p2p(peer: u32, request: Option<u32>) -> Payload {
        Payload::P2p {
            peer: Peer::Rank(Rank(peer)),
            tag: 7,
            bytes: 40_000,
            comm: CommId::WORLD,
            request: request.map(RequestId),
            wildcards: Wildcards::default(),
        }
    }

    fn wait(request: u32) -> Payload {
        Payload::Completion {
            n_given: 1,
            completed: vec![mpiskel_trace::Completed {
                request: Some(RequestId(request)),
                source: None,
                tag: None,
                bytes: None,
            }],
        }
    }

    /// A ring: each step computes (rank 0 a little more every tenth step), sends right,
    /// receives left; `lagged` waits for each step's receive one step later.
    fn ring(n: u32, steps: u32, lagged: bool) -> Vec<RankTrace> {
        (0..n)
            .map(|r| {
                let (right, left) = ((r + 1) % n, (r + n - 1) % n);
                let mut events = vec![ev(Op::Init, 0.0, Payload::None)];
                let mut q = 1;
                for s in 0..steps {
                    let extra = if r == 0 && s % 10 == 3 { 2e5 } else { 0.0 };
                    events.push(ev(Op::Irecv, 1e6 + extra, p2p(left, Some(q))));
                    events.push(ev(Op::Send, 0.0, p2p(right, None)));
                    if !lagged {
                        events.push(ev(Op::Wait, 0.0, wait(q)));
                    } else if s > 0 {
                        events.push(ev(Op::Wait, 0.0, wait(q - 1)));
                    }
                    q += 1;
                }
                if lagged {
                    events.push(ev(Op::Wait, 0.0, wait(q - 1)));
                }
                events.push(ev(Op::Finalize, 0.0, Payload::None));
                crate::engine::made_rank(r, n, events)
            })
            .collect()
    }

    fn cluster(n: usize) -> Platform {
        Platform::cluster(&ClusterSpec {
            name: "t".into(),
            host_names: (0..n).map(|i| format!("h{i}")).collect(),
            speed: 1e9,
            cores: 1,
            bandwidth: 12.5e6,
            latency: 1e-5,
            split_duplex: true,
            fatpipe: false,
            backbone: None,
            loopback: (1e10, 0.0),
        })
    }

    #[test]
    fn a_loop_of_closed_iterations_is_skipped_and_priced_within_a_percent() {
        let traces = ring(6, 200, false);
        let plan = plan(&traces).unwrap();
        assert_eq!(plan.iterations, 200);
        assert_eq!((plan.loops[0].start, plan.loops[0].len), (1, 3));
        let pf = cluster(6);
        let place: Vec<usize> = (0..6).collect();
        let exact = Options { fast_forward: false, ..Options::default() };
        let whole = simulate(&traces, &pf, &place, &exact).unwrap();
        let fast = simulate(&traces, &pf, &place, &Options::default()).unwrap();
        let ff = fast.fast_forward.clone().unwrap();
        assert!(ff.skipped > 100, "{ff:?}");
        assert!(fast.messages < whole.messages / 2);
        let err = fast.predicted_s / whole.predicted_s - 1.0;
        assert!(err.abs() < 0.01, "{} vs {}", fast.predicted_s, whole.predicted_s);
        // Two ranks per host: the computations share a core, and the pace sees it.
        let crowded: Vec<usize> = (0..6).map(|r| r / 2).collect();
        let whole = simulate(&traces, &pf, &crowded, &exact).unwrap();
        let fast = simulate(&traces, &pf, &crowded, &Options::default()).unwrap();
        let err = fast.predicted_s / whole.predicted_s - 1.0;
        assert!(err.abs() < 0.01, "{} vs {}", fast.predicted_s, whole.predicted_s);
    }

    #[test]
    fn iterations_whose_requests_outlive_them_are_simulated_whole() {
        let traces = ring(4, 50, true);
        let why = plan(&traces).unwrap_err();
        assert!(why.contains("request"), "{why}");
        let pf = cluster(4);
        let place: Vec<usize> = (0..4).collect();
        let sim = simulate(&traces, &pf, &place, &Options::default()).unwrap();
        let ff = sim.fast_forward.unwrap();
        assert_eq!(ff.skipped, 0);
        assert!(ff.reason.unwrap().contains("request"));
        assert!(sim.stuck.is_empty());
    }
}
