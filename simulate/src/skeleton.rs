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

use mpiskel_compress::When;
use mpiskel_cut::replay::FIRST_APART;
use mpiskel_program::instantiate::{self, resolve};
use mpiskel_program::CheckOp;
use mpiskel_program::{
    calls_in, collective_recv_bytes, collective_send_bytes, factor_of, Call, Comm, Peer as IrPeer,
    Phase, Skeleton, SlotRef, Stmt, QUANTILE_PROBABILITIES,
};
use mpiskel_trace::model::world_members;
use mpiskel_trace::{
    CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, RankTrace, RequestId, Wildcards,
};
use serde::Serialize;

/// Iterations of a cut loop run before its pace is measured (the first waits for the ranks that
/// reach the loop last).
pub const WARM: u64 = 2;
/// Iterations its pace is measured over.
pub const WINDOW: u64 = 3;

/// A cut loop runs as many iterations as the skeleton runs (more draws of its compute blocks to
/// average over), and up to `WARM + WINDOW + 1` more, while ranks × those iterations stay
/// within this; beyond, `WARM + WINDOW + 1`.
pub const RANK_ITERATIONS: u64 = 4096;

/// Every rank's calls, and where the phases and iterations begin in them.
#[derive(Debug)]
pub struct Lowered {
    /// One trace per rank, made from the skeleton's program.
    pub traces: Vec<RankTrace>,
    /// Per rank: the calls (indices into its events; its number of events for its end) at
    /// which the simulation notes the time, ascending.
    pub marks: Vec<Vec<usize>>,
    /// Per rank: its phases, with the marks that time them.
    pub phases: Vec<Vec<PhaseMarks>>,
}

/// One phase of one rank, as lowered.
#[derive(Debug, Clone)]
pub struct PhaseMarks {
    /// The phase's name in its class program.
    pub name: String,
    /// Iterations of the application.
    pub full: u64,
    /// Warm-up iterations of it the skeleton skipped, priced here as iterations of it.
    pub warmup: u64,
    /// Iterations simulated (application positions, ascending) and each one's kind (0 for
    /// every iteration of a plain loop); `None` where every iteration was simulated.
    pub simulated: Option<(Vec<u64>, Vec<u32>)>,
    /// Kind of each application iteration of a time-step loop (empty for other loops).
    pub kinds: Vec<u32>,
    /// Per kind of a time-step loop whose skeleton runs only some kinds of a family
    /// (`mpiskel_cut::families`): what the kind's time is multiplied by, for the kinds of
    /// its family that do not run, 0 for those; empty otherwise.
    pub kind_scales: Vec<f64>,
    /// Index into the rank's marks of the phase's start; of each simulated iteration's start
    /// (where `simulated`); of its end.
    pub start: usize,
    /// See `start`.
    pub iterations: Vec<usize>,
    /// See `start`.
    pub end: usize,
    /// As the skeleton runs ([`lower_as_run`]): seconds of computation this rank did not run in
    /// the phase, which its runtime adds back.
    pub removed_s: f64,
    /// Of `removed_s`, what blocks that keep only a short part skipped: the runtime adds back,
    /// on every rank, the most any rank skipped so in the phase.
    pub keep_s: f64,
    /// As the skeleton runs: the application's iterations of the phase (with the warm-up it
    /// prices) per iteration run, by which its runtime scales the phase, times its
    /// [`Phase::scale`]; 1 otherwise.
    pub scale: f64,
    /// The phase's [`Phase::scale`]: a part of a stretch cut short stands for the whole
    /// stretch.
    pub stretch: f64,
    /// As the skeleton runs: whether its runtime counts the first iteration once because it
    /// replays the application's first (`mpiskel_cut::replay::replays_first`).
    pub first_apart: bool,
    /// As the skeleton runs ([`lower_as_run`]): what its runtime prices the phase by; `None`
    /// otherwise.
    pub pricing: Option<RunPricing>,
}

/// What the runtime prices a phase by, as the skeleton runs (see [`runtime_phases`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RunPricing {
    /// The application's iterations of the phase (without the warm-up).
    pub full: u64,
    /// Warm-up iterations the skeleton skipped, priced as iterations of the phase.
    pub warmup: u64,
    /// The phase's [`Phase::scale`].
    pub scale: f64,
    /// The cut inner loop, timed on its own, if the phase has one.
    pub inner: Option<InnerMarks>,
    /// A time-step loop's steps, each timed in its kind's phase, if the phase is one.
    pub steps: Option<StepMarks>,
}

/// The steps of a time-step loop as the skeleton runs them: its runtime times each in the
/// phase of its kind and scales that kind's time by the application's steps of the kind over
/// those run, times the kind's scale (`sk_steps_count`, `main_loop.kindK`).
#[derive(Debug, Clone, PartialEq)]
pub struct StepMarks {
    /// The kind of each step run, in order (the phase's `iterations` mark their starts).
    pub kinds: Vec<u32>,
    /// Seconds of computation each step did not run.
    pub removed_s: Vec<f64>,
    /// Per kind: its steps in the application and its scale
    /// (`mpiskel_program::StepCase::scale`).
    pub cases: Vec<(u64, f64)>,
}

/// A cut inner loop as the skeleton runs it: timed on its own, its first iteration apart in each
/// iteration of the phase (`sk_inner_first`).
#[derive(Debug, Clone, PartialEq)]
pub struct InnerMarks {
    /// Its iterations in the application per iteration of the phase.
    pub full: u64,
    /// Its iterations run per iteration of the phase.
    pub run: u64,
    /// Per iteration of the phase run, indices into the rank's marks: the inner loop's start,
    /// the end of its first iteration, its end.
    pub marks: Vec<(usize, usize, usize)>,
    /// Seconds of computation the rank did not run inside it.
    pub removed_s: f64,
}

/// What one phase of the slowest rank took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseFigures {
    /// Name in its class program.
    pub name: String,
    /// Iterations of the application.
    pub full: u64,
    /// Iterations simulated.
    pub simulated: u64,
    /// Seconds the simulated iterations took.
    pub simulated_s: f64,
    /// Seconds the phase is predicted to take in the application: the simulated iterations,
    /// the others at their pace, and any warm-up iterations it prices.
    pub predicted_s: f64,
}

/// The prediction made from the marks' times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Priced {
    /// Predicted application time: the slowest rank's simulated end plus the iterations it
    /// did not simulate.
    pub predicted_s: f64,
    /// That rank.
    pub rank: u32,
    /// Its phases.
    pub phases: Vec<PhaseFigures>,
}

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

/// How a skeleton's program is lowered as it runs: the compute shrink of its fixed blocks, and
/// whether its compute cut applies.
#[derive(Debug, Clone, Copy)]
struct AsRun {
    shrink: f64,
    cut: bool,
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

/// The state of the runtime's generator on rank `r` after its set-up with `--seed seed`
/// (`sk_init` of `skeletons/mpiskel_rt.c`, `Rt::init` of the Rust runtime): its constant, the
/// seed and the rank mixed in, eight draws discarded.
fn runtime_rng(seed: u64, r: u32) -> u64 {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    state ^= seed.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    state ^= (u64::from(r) + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    for _ in 0..8 {
        runtime_uniform(&mut state);
    }
    state
}

/// One draw of the runtime's generator (xorshift64*, `sk_uniform`).
fn runtime_uniform(state: &mut u64) -> f64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
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

type BTreeComms = std::collections::BTreeMap<CommId, Arc<[Rank]>>;

/// The part of a compute block of duration `d` (this rank's, drawn where the block is) that the
/// skeleton runs, as its runtime under SMPI: a block that keeps only a short part runs
/// max(5 %, 50 µs) of it; a cut
/// block runs `d` less what is removed (a drawn or replayed one nothing where its duration is
/// shorter; a fixed one whole, and `shrink` of the rest where it has no per-rank factors).
fn kept(
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

fn rank_trace(r: u32, n: u32, events: Vec<Event>, trailing_s: f64, comms: BTreeComms) -> RankTrace {
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

fn secs_to_ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9).round() as u64
}

/// A rank's group of one communicator: its id and its members.
type Group = (u32, Arc<[Rank]>);

/// Every rank's group of communicator `comm` ([`mpiskel_program::instantiate::groups_of`]), its
/// members as world ranks (one list per group) and its id past `MPI_COMM_SELF`'s.
fn groups_of(skel: &Skeleton, comm: usize) -> Vec<Group> {
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

struct RankLowering<'a> {
    skel: &'a Skeleton,
    groups: &'a [Vec<Group>],
    rank: u32,
    /// Position among the class's ranks (ascending): the column of replay tables.
    column: usize,
    weight: f64,
    events: Vec<Event>,
    /// Computation since the last call, seconds.
    gap_s: f64,
    /// Request slot → the request started there and not completed yet.
    pending: HashMap<u32, RequestId>,
    next_req: u32,
    /// Per replay table: executions so far.
    replay_at: HashMap<usize, usize>,
    rng: u64,
    marks: Vec<usize>,
    comms: BTreeComms,
    /// Kind of the time step being run.
    kind: u32,
    /// Every iteration of every loop.
    whole: bool,
    /// The skeleton as it runs ([`lower_as_run`]), with its compute shrink.
    as_run: Option<AsRun>,
    /// A cut loop runs more iterations than the skeleton ([`lower`]).
    more: bool,
    /// As it runs: computation not run since the phase began, seconds, and of it what blocks
    /// that keep a short part skipped.
    removed_s: f64,
    keep_s: f64,
    /// Of `removed_s`, what the phase's cut inner loop did not run (as it runs).
    inner_removed_s: f64,
}

impl RankLowering<'_> {
    fn mark(&mut self) -> usize {
        self.marks.push(self.events.len());
        self.marks.len() - 1
    }

    fn phase(&mut self, p: &Phase) -> PhaseMarks {
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
    fn phase_as_run(&mut self, p: &Phase) -> PhaseMarks {
        let start = self.mark();
        (self.removed_s, self.keep_s) = (0.0, 0.0);
        let kinds: Vec<u32> = match &p.steps {
            Some(s) if p.is_loop => s.run_kinds(),
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

    fn run(&mut self, body: &[Stmt], iters: &mut Vec<(u64, u64)>) {
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
    fn duration(
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
    fn uniform(&mut self) -> f64 {
        if self.as_run.is_some() {
            return runtime_uniform(&mut self.rng);
        }
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    fn peer(&self, p: &IrPeer) -> Peer {
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

    fn push(&mut self, op: Op, payload: Payload) {
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
    fn start(&mut self, slot: u32) -> RequestId {
        if let Some(old) = self.pending.remove(&slot) {
            self.complete(vec![old]);
        }
        let id = RequestId(self.next_req);
        self.next_req += 1;
        self.pending.insert(slot, id);
        id
    }

    fn complete(&mut self, ids: Vec<RequestId>) {
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

    fn slot_of(r: &SlotRef, iters: &[(u64, u64)]) -> u32 {
        r.base + if r.ring > 1 { iters.get(r.depth).map_or(0, |x| x.0 as u32) } else { 0 }
    }

    fn sizes(&self, bytes: u64, sizes: Option<usize>) -> u64 {
        sizes
            .and_then(|t| self.skel.size_tables.get(t))
            .and_then(|t| t.get(self.rank as usize))
            .copied()
            .unwrap_or(bytes)
    }

    fn call(&mut self, c: &Call, iters: &[(u64, u64)]) {
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
                        (if *op == Op::Issend { Op::Issend } else { Op::Isend }, Some(id))
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

#[cfg(test)]
mod tests;
