//! A skeleton's program simulated as the application it stands for: the loop nest of each
//! process class (`skeleton.json`'s `program`, the IR both back ends render) becomes every
//! rank's calls, with each compute block at its recorded duration (drawn from its spread,
//! replayed, or its mean, times the rank's weight and factor, none of it cut), and each loop
//! the skeleton cuts is simulated for a few iterations and priced at the pace they set. Or, with
//! [`lower_as_run`], the skeleton itself as it runs: how long it would take on the platform.
//!
//! Where the trace is not at hand (a skeleton travels, its trace may be gigabytes), this answers
//! the same what-if from the folder alone; and because a cut loop costs a handful of simulated
//! iterations whatever its length, a nest of thousands of iterations at thousands of ranks takes
//! seconds (the trace's own simulation reads and runs every call up to its fast-forward,
//! [`crate::fastforward`]).
//!
//! Which iterations run: a loop the skeleton runs whole runs whole here. A loop it cuts to `run`
//! of `full` iterations runs `k = max(run, WARM + WINDOW + 1)` of them (all, where that is
//! not fewer; `WARM + WINDOW + 1` where ranks × `run` is over [`RANK_ITERATIONS`]): the first
//! `k − 1` and the last (which makes the calls guarded to the last iteration), and the rest
//! take the mean duration of iterations `WARM … k − 2` on each rank.
//! Every class cuts its corresponding loops alike ([`mpiskel_cut::scale`] checks each cut for
//! deadlock), so every class runs them alike here too. A time-step loop runs the steps the
//! skeleton runs, and each step it does not run takes the mean duration of the steps of its
//! kind that ran (Xu & Subhlok 2008, §3: a loop's iterations repeat; ScalaTrace's time-step
//! histograms for the kinds). Warm-up iterations the skeleton skipped ([`Phase::warmup`]) are
//! priced as iterations of the main loop, as its runtime does.
//!
//! # Complexity
//! O(ranks × calls simulated): each cut loop contributes at most `max(run, 6)` iterations, 6
//! at scale.

use std::collections::HashMap;
use std::sync::Arc;

use mpiskel_cut::replay::FIRST_APART;
use mpiskel_program::CheckOp;
use mpiskel_program::Skeleton;
use mpiskel_trace::model::world_members;
use mpiskel_trace::{CommId, Op, Payload, Peer, RankTrace};

use crate::lowered::{runtime_rng, AsRun};
pub use crate::lowered::{
    InnerMarks, Lowered, PhaseFigures, PhaseMarks, Priced, RunPricing, StepMarks, RANK_ITERATIONS,
    WARM, WINDOW,
};
use crate::rank_lowering::{groups_of, rank_trace, BTreeComms, Group, RankLowering};

/// Lowers `skel` for simulation; compute draws use `seed`; `whole` simulates every iteration of
/// every loop.
///
/// A cut loop is simulated for more iterations than the skeleton runs, the same count more in
/// every class. Where the classes' loops do not correspond (one class's loop of 2 iterations
/// cut with another class's loop of 5), more iterations of each need not pair their messages
/// or collectives; where the program so lowered does not ([`pairs`]), it is lowered again with
/// the iterations the skeleton runs, the program the deadlock check passed.
pub fn lower(skel: &Skeleton, seed: u64, whole: bool) -> Lowered {
    let lowered = lower_with(skel, seed, whole, None, true);
    if whole || (pairs(&lowered.traces) && runs_through(&lowered.traces)) {
        return lowered;
    }
    lower_with(skel, seed, whole, None, false)
}

/// Whether the lowered `traces` run to their end under the deadlock check's semantics
/// ([`mpiskel_program::check`]: every blocking send synchronous, each collective met by the same
/// kind on every member). The skeleton's own iterations passed that check; more iterations of
/// loops the classes cut alike need not (a loop of one class cut with another class's loop
/// whose later iterations meet other partners), and [`pairs`] counts messages, not their order.
///
/// # Complexity
/// O(events × ranks) in the worst case (the check's rounds).
pub fn runs_through(traces: &[RankTrace]) -> bool {
    mpiskel_program::check(&check_ops(traces)).is_none()
}

/// Every rank's calls of `traces` as the deadlock check's operations: request ids as slots,
/// `MPI_Sendrecv` as its send and receive started together and waited for, a buffered send as
/// one that completes once received, a non-blocking collective where it starts.
fn check_ops(traces: &[RankTrace]) -> Vec<Vec<CheckOp>> {
    const SR_SEND: u32 = u32::MAX - 2;
    const SR_RECV: u32 = u32::MAX - 1;
    // Buffered sends' slots, past every request id a lowering makes.
    const BUFFERED: u32 = 1 << 31;
    traces
        .iter()
        .map(|t| {
            let world = |c: &CommId, p: &Peer| -> Option<Option<u32>> {
                match p {
                    Peer::Rank(r) if *c == CommId::WORLD => Some(Some(r.0)),
                    Peer::Rank(r) => {
                        t.comms.get(c).and_then(|m| m.get(r.0 as usize)).map(|w| Some(w.0))
                    }
                    Peer::Any => Some(None),
                    _ => None,
                }
            };
            let mut out = Vec::new();
            let mut collective = std::collections::BTreeSet::new();
            let mut buffered = Vec::new();
            for e in &t.events {
                match &e.payload {
                    Payload::P2p { peer, tag, bytes, comm, request, wildcards } => {
                        let bytes = *bytes;
                        let Some(to) = world(comm, peer) else { continue };
                        let tag = if wildcards.tag { -1 } else { *tag };
                        let slot = request.map(|r| r.0);
                        match (e.op.class(), to, slot) {
                            (mpiskel_trace::OpClass::Send, Some(to), _) if e.op == Op::Bsend => {
                                let s = BUFFERED + buffered.len() as u32;
                                buffered.push(s);
                                // Buffered by definition: sent as the smallest.
                                out.push(CheckOp::Isend { to, tag, slot: s, bytes: 0 });
                            }
                            (mpiskel_trace::OpClass::Send, Some(to), Some(slot)) => {
                                out.push(if e.op == Op::Issend {
                                    CheckOp::Issend { to, tag, slot }
                                } else {
                                    CheckOp::Isend { to, tag, slot, bytes }
                                });
                            }
                            (mpiskel_trace::OpClass::Send, Some(to), None) => {
                                out.push(if e.op == Op::Ssend {
                                    CheckOp::Ssend { to, tag }
                                } else {
                                    CheckOp::Send { to, tag, bytes }
                                });
                            }
                            (mpiskel_trace::OpClass::Recv, from, Some(slot)) => {
                                out.push(CheckOp::Irecv { from, tag, slot });
                            }
                            (mpiskel_trace::OpClass::Recv, from, None) => {
                                out.push(CheckOp::Recv { from, tag });
                            }
                            _ => {}
                        }
                    }
                    Payload::SendRecv {
                        dest,
                        send_tag,
                        send_bytes,
                        source,
                        recv_tag,
                        comm,
                        ..
                    } => {
                        let mut slots = Vec::new();
                        if let Some(Some(to)) = world(comm, dest) {
                            let (tag, bytes) = (*send_tag, *send_bytes);
                            out.push(CheckOp::Isend { to, tag, slot: SR_SEND, bytes });
                            slots.push(SR_SEND);
                        }
                        if let Some(from) = world(comm, source) {
                            out.push(CheckOp::Irecv { from, tag: *recv_tag, slot: SR_RECV });
                            slots.push(SR_RECV);
                        }
                        if !slots.is_empty() {
                            out.push(CheckOp::Wait { slots });
                        }
                    }
                    Payload::Completion { completed, .. } => {
                        let slots: Vec<u32> = completed
                            .iter()
                            .filter_map(|c| c.request.map(|r| r.0))
                            .filter(|s| !collective.remove(s))
                            .collect();
                        if !slots.is_empty() {
                            out.push(CheckOp::Wait { slots });
                        }
                    }
                    Payload::Collective { comm, root, request, .. } => {
                        let members: Arc<[u32]> = match t.comms.get(comm) {
                            Some(m) => m.iter().map(|r| r.0).collect(),
                            None if *comm == CommId::WORLD => (0..traces.len() as u32).collect(),
                            None => {
                                // (Not simulated: its wait never blocks.)
                                if let Some(r) = request {
                                    collective.insert(r.0);
                                }
                                continue;
                            }
                        };
                        let name = match root {
                            Some(r) => format!("{} (root {})", e.op.name(), r.0),
                            None => e.op.name().into(),
                        };
                        out.push(match request {
                            Some(r) => {
                                CheckOp::Icollective { comm: comm.0, members, name, slot: r.0 }
                            }
                            None => CheckOp::Collective { comm: comm.0, members, name },
                        });
                    }
                    Payload::None | Payload::Comm { .. } => {}
                }
            }
            if !buffered.is_empty() {
                out.push(CheckOp::Wait { slots: buffered });
            }
            out
        })
        .collect()
}

/// Whether every rank's sends to each other rank are as many as that rank's receives from it
/// (receives from any source counted against all their senders), and the ranks make as many
/// collectives of `MPI_COMM_WORLD`: a necessary condition for a program to run to its end.
///
/// # Complexity
/// O(events + ranks²).
pub fn pairs(traces: &[RankTrace]) -> bool {
    let n = traces.len();
    let mut sent = vec![0i64; n * n];
    let mut received = vec![0i64; n * n];
    let mut any = vec![0i64; n];
    let mut world = vec![0u64; n];
    let index = |p: &Peer| match p {
        Peer::Rank(r) if (r.0 as usize) < n => Some(r.0 as usize),
        _ => None,
    };
    for (me, t) in traces.iter().enumerate() {
        for e in &t.events {
            match (&e.payload, e.op.class()) {
                (Payload::P2p { peer, comm, wildcards, .. }, c) if *comm == CommId::WORLD => {
                    match (c, index(peer)) {
                        (mpiskel_trace::OpClass::Send, Some(to)) => sent[me * n + to] += 1,
                        (mpiskel_trace::OpClass::Recv, _) if wildcards.source => any[me] += 1,
                        (mpiskel_trace::OpClass::Recv, Some(from)) => received[from * n + me] += 1,
                        _ => {}
                    }
                }
                (Payload::SendRecv { dest, source, comm, .. }, _) if *comm == CommId::WORLD => {
                    if let Some(to) = index(dest) {
                        sent[me * n + to] += 1;
                    }
                    if let Some(from) = index(source) {
                        received[from * n + me] += 1;
                    }
                }
                (Payload::Collective { comm, .. }, _) if *comm == CommId::WORLD => world[me] += 1,
                _ => {}
            }
        }
    }
    let each = (0..n).all(|to| {
        let short: i64 = (0..n).map(|from| sent[from * n + to] - received[from * n + to]).sum();
        let exact = (0..n).all(|from| sent[from * n + to] >= received[from * n + to]);
        exact && short == any[to]
    });
    each && world.windows(2).all(|w| w[0] == w[1])
}

/// Lowers `skel` as the skeleton itself runs, not as the application it stands for: each loop
/// for the iterations the skeleton runs (its cut inner loop as cut), the warm-up it skips
/// skipped, and each compute block for the part it runs (what the compute cut removes left
/// out; blocks of fixed duration cut already running `shrink` of what they keep, as the
/// runtime's `sk_compute_shrink`). Every phase counts as many iterations as it runs, so that
/// [`price`] gives the skeleton's own time: how long it would run on the platform simulated,
/// before anyone runs it there.
pub fn lower_as_run(skel: &Skeleton, seed: u64, shrink: f64) -> Lowered {
    lower_with(skel, seed, false, Some(AsRun { shrink, cut: true }), false)
}

/// [`lower_as_run`] with every compute block whole: the iterations the skeleton runs, each
/// block for its whole duration. Beside the skeleton as it runs, it tells what the compute
/// cut does to the waiting ([`exposure`]).
pub fn lower_as_run_uncut(skel: &Skeleton, seed: u64) -> Lowered {
    lower_with(skel, seed, false, Some(AsRun { shrink: 1.0, cut: false }), false)
}

/// What the skeleton's prediction gains from its compute cut on the platform simulated, as a
/// share of the prediction without it: its runtime's prediction (each phase's time, plus the
/// computation it did not run, scaled to the application's iterations; the slowest rank's
/// sum) from the skeleton as it runs (`cut`, [`lower_as_run`]), against the same from its
/// iterations run with every block whole (`whole`, [`lower_as_run_uncut`]). Taking
/// computation out of a rank's blocks moves what it waits for: a message that its computation
/// hid arrives after the shortened block, and the rank waits for it (NPB MG on 256 ranks: 0.2 ms
/// of one 5.9 ms iteration with a third of its computation cut). The runtime cannot tell that
/// waiting from the application's and adds the computation back on top of it, so the
/// prediction grows by this share. `times` and `ends` are each lowering's simulated marks and
/// ranks' ends.
pub fn exposure(
    cut: (&Lowered, &[Vec<f64>], &[f64]),
    whole: (&Lowered, &[Vec<f64>], &[f64]),
) -> f64 {
    let (c, w) =
        (runtime_prediction(cut.0, cut.1, cut.2), runtime_prediction(whole.0, whole.1, whole.2));
    if w > 0.0 {
        c / w - 1.0
    } else {
        0.0
    }
}

/// The prediction the skeleton's runtime prints (`predicted_s`, by phase) from its run as
/// simulated: on each rank, each phase's time plus the computation it did not run, times the
/// application's iterations of the phase per iteration run; the slowest rank's sum. `l` is the
/// skeleton as it runs ([`lower_as_run`] or [`lower_as_run_uncut`]), `times` and `ends` its
/// simulated marks and ranks' ends.
///
/// # Complexity
/// O(ranks × phases).
pub fn runtime_prediction(l: &Lowered, times: &[Vec<f64>], ends: &[f64]) -> f64 {
    runtime_phases(l, times, ends, None).into_iter().map(|(_, s)| s).sum()
}

/// [`runtime_prediction`] by phase: the slowest rank's phases, each with its predicted seconds,
/// as the runtime prices them (`sk_predicted` of `skeletons/mpiskel_rt.c`): a phase's time and
/// the computation it did not run, times the application's iterations per iteration run; where
/// a scaled loop's first iteration is over [`FIRST_APART`] times the mean of the others (or
/// replays the application's first), the first counted once and the others scaled; a rank that
/// began the main loop before the last one, that wait counted once. `pace`: per rank, the
/// simulated seconds a recorded second of its computation took (the runtime restores the
/// computation it did not run at the pace of the part that ran: `sk_restored_of`); `None`: 1.
///
/// # Complexity
/// O(ranks × phases).
pub fn runtime_phases(
    l: &Lowered,
    times: &[Vec<f64>],
    ends: &[f64],
    pace: Option<&[f64]>,
) -> Vec<(String, f64)> {
    // What blocks that keep a short part skipped is restored as the most any rank skipped
    // in the phase of that name.
    let mut most: HashMap<&str, f64> = HashMap::new();
    for p in l.phases.iter().flatten() {
        let m = most.entry(p.name.as_str()).or_insert(0.0);
        *m = m.max(p.keep_s);
    }
    let at = |r: usize, i: usize| times[r].get(i).copied().unwrap_or(ends[r]);
    // When the last rank began the main loop.
    let latest = l
        .phases
        .iter()
        .enumerate()
        .filter_map(|(r, ps)| ps.iter().find(|p| p.name == "main_loop").map(|p| at(r, p.start)))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut best: (f64, Vec<(String, f64)>) = (f64::NEG_INFINITY, Vec::new());
    for (r, phases) in l.phases.iter().enumerate() {
        let pace = pace.and_then(|v| v.get(r)).copied().unwrap_or(1.0);
        let figures: Vec<(String, f64)> = phases
            .iter()
            .map(|p| {
                let t = |i: usize| at(r, i);
                let restored_all = (p.removed_s - p.keep_s + most[p.name.as_str()]) * pace;
                let predicted = match &p.pricing {
                    Some(pricing) => priced_as_run(p, pricing, &t, restored_all, pace, latest),
                    None => {
                        let own = (t(p.end) - t(p.start)).max(0.0);
                        (own + restored_all) * p.scale
                    }
                };
                (p.name.clone(), predicted)
            })
            .collect();
        let total: f64 = figures.iter().map(|(_, s)| s).sum();
        if total > best.0 {
            best = (total, figures);
        }
    }
    best.1
}

/// One phase's prediction as the runtime makes it (`sk_predicted` and the warm-up it prices,
/// `skeletons/mpiskel_rt.c`), from the simulated times of its marks (`t`): `restored` is the
/// computation the rank did not run in the phase at its pace (`pace` the rank's), `latest` when
/// the last rank began the main loop.
fn priced_as_run(
    p: &PhaseMarks,
    pricing: &RunPricing,
    t: &dyn Fn(usize) -> f64,
    restored: f64,
    pace: f64,
    latest: f64,
) -> f64 {
    let run = p.full as f64;
    if run <= 0.0 {
        return 0.0;
    }
    let full = pricing.full as f64;
    let seconds = (t(p.end) - t(p.start)).max(0.0);
    let mut own = seconds;
    // The cut inner loop: its first iterations count once per iteration of the phase, the
    // others are scaled to the application's (`sk_predicted_unscaled`, a child phase).
    let (inner, inner_removed) = match &pricing.inner {
        Some(i) => {
            let took: f64 = i.marks.iter().map(|&(a, _, c)| (t(c) - t(a)).max(0.0)).sum();
            let first: f64 = i.marks.iter().map(|&(a, b, _)| (t(b) - t(a)).max(0.0)).sum();
            own -= took;
            let (i_full, i_run) = ((i.full * pricing.full) as f64, (i.run * p.full) as f64);
            let i_restored = if i_run > 0.0 { i.removed_s * pace * i_full / i_run } else { 0.0 };
            let predicted = if !i.marks.is_empty() && i_run >= 2.0 * run && i_full > i_run {
                let others = (took - first) / (i_run - run);
                first * full / run + others * (i_full - full) + i_restored
            } else if i_run > 0.0 {
                took * i_full / i_run + i_restored
            } else {
                0.0
            };
            (Some(predicted), i.removed_s * pace)
        }
        None => (None, 0.0),
    };
    // A time-step loop: each kind's steps at the application's count of the kind.
    let (steps, steps_removed) = match &pricing.steps {
        Some(st) if p.iterations.len() == st.kinds.len() => {
            let n_kinds = st.cases.len();
            let (mut took, mut runs, mut removed) =
                (vec![0.0; n_kinds], vec![0u64; n_kinds], vec![0.0; n_kinds]);
            for (j, &k) in st.kinds.iter().enumerate() {
                let next = p.iterations.get(j + 1).map_or(t(p.end), |&m| t(m));
                let k = k as usize;
                if k < n_kinds {
                    took[k] += (next - t(p.iterations[j])).max(0.0);
                    runs[k] += 1;
                    removed[k] += st.removed_s.get(j).copied().unwrap_or(0.0);
                }
            }
            let predicted: f64 = (0..n_kinds)
                .filter(|&k| runs[k] > 0)
                .map(|k| {
                    let (k_full, k_scale) = st.cases[k];
                    (took[k] + removed[k] * pace) * k_full as f64 / runs[k] as f64 * k_scale
                })
                .sum();
            own -= took.iter().sum::<f64>();
            (Some(predicted), removed.iter().sum::<f64>() * pace)
        }
        _ => (None, 0.0),
    };
    let restored = (restored - inner_removed - steps_removed).max(0.0) * full / run;
    let inner = match (inner, steps) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    let first_apart = match (p.iterations.as_slice(), inner) {
        ([a, b, ..], None) if full > run => {
            let first = (t(*b) - t(*a)).max(0.0);
            let others = (own - first) / (run - 1.0);
            (p.first_apart || first > FIRST_APART * others)
                .then_some(first + others * (full - 1.0) + restored)
        }
        _ => None,
    };
    let mut predicted = match first_apart {
        Some(f) => f,
        None => {
            let mut x = own * full / run + restored + inner.unwrap_or(0.0);
            // A rank that began the main loop before the last one waited for it once.
            if p.name == "main_loop" && full > run {
                let wait = (latest - t(p.start)).max(0.0).min(seconds / run);
                x -= wait * (full / run - 1.0);
            }
            x
        }
    };
    predicted *= pricing.scale;
    if pricing.warmup > 0 && pricing.full > 0 {
        predicted += pricing.warmup as f64 * predicted / full;
    }
    predicted
}

/// `more`: a cut loop runs more iterations than the skeleton, as many more in every class
/// (otherwise exactly the skeleton's).
fn lower_with(
    skel: &Skeleton,
    seed: u64,
    whole: bool,
    as_run: Option<AsRun>,
    more: bool,
) -> Lowered {
    let n = skel.n_ranks;
    // Every communicator's groups, made once: per communicator and rank, the rank's group.
    let groups: Vec<Vec<Group>> = (0..skel.comms.len()).map(|c| groups_of(skel, c)).collect();
    let mut traces = Vec::with_capacity(n as usize);
    let mut marks = Vec::with_capacity(n as usize);
    let mut phases = Vec::with_capacity(n as usize);
    for r in 0..n {
        let class = skel.class_of_rank.get(r as usize).copied().unwrap_or(0) as usize;
        let Some(cp) = skel.classes.get(class) else {
            traces.push(rank_trace(r, n, Vec::new(), 0.0, BTreeComms::new()));
            marks.push(vec![0]);
            phases.push(Vec::new());
            continue;
        };
        let mut sorted = cp.ranks.clone();
        sorted.sort_unstable();
        let mut lw = RankLowering {
            skel,
            groups: &groups,
            rank: r,
            column: sorted.binary_search(&r).unwrap_or(0),
            weight: skel.rank_weight.get(r as usize).copied().unwrap_or(1.0),
            events: Vec::new(),
            gap_s: 0.0,
            pending: HashMap::new(),
            next_req: 0,
            replay_at: HashMap::new(),
            rng: match as_run {
                Some(_) => runtime_rng(seed, r),
                None => seed ^ (u64::from(r).wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            },
            marks: Vec::new(),
            comms: BTreeComms::new(),
            kind: 0,
            whole,
            as_run,
            more,
            removed_s: 0.0,
            keep_s: 0.0,
            inner_removed_s: 0.0,
        };
        let mine: Vec<PhaseMarks> = cp.phases.iter().map(|p| lw.phase(p)).collect();
        lw.comms.entry(CommId::WORLD).or_insert_with(|| world_members(n));
        traces.push(rank_trace(r, n, lw.events, lw.gap_s, lw.comms));
        marks.push(lw.marks);
        phases.push(mine);
    }
    Lowered { traces, marks, phases }
}

/// Prices the simulated marks: each rank's end plus the iterations it did not simulate, the
/// slowest rank's total; `ends[r]` is rank r's simulated end, `times[r]` its marks' times.
///
/// As the skeleton's runtime does, a rank that began the main loop before the last one waited
/// for it in its first iteration, as the application did once: that wait, up to the
/// iteration's own duration, is not part of the pace the other iterations are priced at (an
/// LU factorization's panels start where the longest set-up ends; one step of eleven simulated,
/// the wait was counted eleven times).
pub fn price(lowered: &Lowered, times: &[Vec<f64>], ends: &[f64]) -> Priced {
    let mut best = Priced { predicted_s: 0.0, rank: 0, phases: Vec::new() };
    let main_start = |r: usize| -> Option<f64> {
        let p = lowered.phases[r].iter().find(|p| p.name == "main_loop")?;
        Some(times[r].get(p.start).copied().unwrap_or(ends[r]))
    };
    let latest = (0..lowered.phases.len()).filter_map(main_start).fold(f64::NEG_INFINITY, f64::max);
    for (r, phases) in lowered.phases.iter().enumerate() {
        let t = &times[r];
        let at = |i: usize| t.get(i).copied().unwrap_or(ends[r]);
        let mut added_all = 0.0;
        let mut figures = Vec::with_capacity(phases.len());
        for p in phases {
            let simulated_s = (at(p.end) - at(p.start)).max(0.0);
            let mut predicted = simulated_s;
            let mut simulated = p.full;
            if let Some((positions, kinds)) = &p.simulated {
                simulated = positions.len() as u64;
                // Each simulated iteration's duration: to the next one's start, the last to
                // the phase's end.
                let mut d: Vec<f64> = (0..positions.len())
                    .map(|j| {
                        let next = p.iterations.get(j + 1).map_or(at(p.end), |&m| at(m));
                        (next - at(p.iterations[j])).max(0.0)
                    })
                    .collect();
                if let (true, Some(first)) = (p.name == "main_loop", d.first_mut()) {
                    let wait = (latest - at(p.start)).max(0.0);
                    *first -= wait.min(*first);
                }
                predicted += unsimulated(p, positions, kinds, &d);
            }
            predicted *= p.stretch;
            if p.warmup > 0 && p.full > 0 {
                predicted += p.warmup as f64 * predicted / p.full as f64;
            }
            added_all += predicted - simulated_s;
            figures.push(PhaseFigures {
                name: p.name.clone(),
                full: p.full,
                simulated,
                simulated_s,
                predicted_s: predicted,
            });
        }
        let total = ends[r] + added_all;
        if r == 0 || total > best.predicted_s {
            best = Priced { predicted_s: total, rank: r as u32, phases: figures };
        }
    }
    best
}

/// Seconds of the iterations of `p` that were not simulated, at the pace of those that were:
/// per kind, the mean of that kind's simulated iterations past the warm-up (the last one
/// excluded where others are there: it makes the calls guarded to the last iteration).
fn unsimulated(p: &PhaseMarks, positions: &[u64], kinds: &[u32], d: &[f64]) -> f64 {
    let n = positions.len();
    let usable: Vec<usize> = (0..n)
        .filter(|&j| (j as u64) >= WARM.min(n.saturating_sub(2) as u64))
        .filter(|&j| j + 1 < n || n == 1)
        .collect();
    let mean_of = |js: &mut dyn Iterator<Item = usize>| -> Option<f64> {
        let (s, c) = js.fold((0.0, 0usize), |(s, c), j| (s + d[j], c + 1));
        (c > 0).then(|| s / c as f64)
    };
    let overall =
        mean_of(&mut usable.iter().copied()).or_else(|| mean_of(&mut (0..n))).unwrap_or(0.0);
    if p.kinds.is_empty() {
        return (p.full - n as u64) as f64 * overall;
    }
    // A time-step loop: each kind at its own pace.
    let mut pace: HashMap<u32, f64> = HashMap::new();
    let mut kinds_seen: Vec<u32> = kinds.to_vec();
    kinds_seen.sort_unstable();
    kinds_seen.dedup();
    for k in kinds_seen {
        let of_kind: Vec<usize> = (0..n).filter(|&j| kinds[j] == k).collect();
        let later: Vec<usize> = of_kind.iter().copied().filter(|&j| j > 0).collect();
        let js = if later.is_empty() { of_kind } else { later };
        if let Some(m) = mean_of(&mut js.into_iter()) {
            pace.insert(k, m);
        }
    }
    let mut ran = vec![false; p.kinds.len()];
    for &q in positions {
        if let Some(x) = ran.get_mut(q as usize) {
            *x = true;
        }
    }
    if p.kind_scales.is_empty() {
        return p
            .kinds
            .iter()
            .zip(&ran)
            .filter(|(_, &r)| !r)
            .map(|(k, _)| pace.get(k).copied().unwrap_or(overall))
            .sum();
    }
    // Kinds of families of which only some kinds run: each kind that runs, simulated and
    // priced, times its scale; those that do not run are in those scales.
    let mut of_kind: std::collections::BTreeMap<u32, f64> = std::collections::BTreeMap::new();
    for (j, &k) in kinds.iter().enumerate() {
        *of_kind.entry(k).or_default() += d[j];
    }
    for (k, _) in p.kinds.iter().zip(&ran).filter(|(_, &r)| !r) {
        if let Some(&x) = pace.get(k) {
            *of_kind.entry(*k).or_default() += x;
        }
    }
    of_kind
        .iter()
        .map(|(&k, &t)| {
            let scale = p.kind_scales.get(k as usize).copied().unwrap_or(1.0);
            let simulated: f64 = (0..n).filter(|&j| kinds[j] == k).map(|j| d[j]).sum();
            t * scale - simulated
        })
        .sum()
}

#[cfg(test)]
mod tests;
