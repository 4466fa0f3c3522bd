//! Stretches: what the ranks do between two consecutive collectives of all ranks, and how a
//! long one is cut by its share of the work.
//!
//! Loop discovery (Xu & Subhlok 2008, §3) shortens a program by running fewer iterations of
//! its loops. Some programs spend their time in long runs of calls that repeat nothing exactly:
//! a random-access benchmark whose ranks exchange buckets of updates with whichever rank filled
//! one first, polling in between; a task farm; a solver that adapts its messages to the data.
//! Their calls fold into no loop, and a skeleton that keeps them runs as long as the
//! application.
//!
//! Between two collectives that every rank makes, the ranks only exchange messages among
//! themselves (a *stretch*). A stretch is cut consistently by its share of the work: to keep
//! a share of it (`keep_s` of its span), each rank keeps its first calls that make that share
//! of its own work in the stretch, a call's work being the call and the failed polls folded
//! into it, and drops the rest, up to the closing collective, which every rank still makes.
//! What crosses the cut goes with what it crosses: the other end of a message one of whose
//! ends is dropped (wherever it is, so that every channel's messages still pair in order), the
//! start and the completions of a request. The skeleton then times the part it kept and scales
//! it by the stretch's work over the work kept ([`StretchCut::scale`]): the pace of a sample of
//! the stretch stands for all of it, as the pace of sampled iterations stands for a loop.
//!
//! Each rank keeps the same share of its own work, not the calls it began in the same first
//! seconds: where the ranks shared cores, one ran ahead of the others for a while, and the
//! skeleton, whose ranks replay their calls and polls at the same pace, waits at the closing
//! collective for the rank whose sample holds the most. HPC Challenge's MPI RandomAccess on 4
//! ranks and 2 cores: in the first 13 % of a stretch's time one rank made 158,000 polls and the
//! others 45,000–66,000. Cut by time, the skeleton predicted 3.6–5.4 s against 2.4–3.4 s for
//! the application (six interleaved rounds); cut by share, 2.1–2.6 s.
//!
//! Stretches that hold a collective of only some ranks, or a communicator's creation, are not
//! cut (their members would not agree on which of its instances they make).
//!
//! # Complexity
//! O(n) in the events of the ranks to find the stretches; O(n log n) to cut them, with the
//! messages paired and each rank's requests listed in sorted order (a few bytes per call: no
//! map of lists per call or per request).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::{Event, OpClass, Payload, RankTrace, RequestId};

/// The calls every rank makes between its `index`-th and `index + 1`-th collective of all
/// ranks (counted from 1 in program order).
#[derive(Debug, Clone, PartialEq)]
pub struct Stretch {
    /// Which: the stretch after the `index`-th collective of all ranks.
    pub index: usize,
    /// Per rank, in the order of the ranks given: the stretch's events, `from..to` (the
    /// opening collective is event `from - 1`, the closing one event `to`).
    pub events: Vec<(usize, usize)>,
    /// From the moment each rank left the opening collective to its entry into the closing
    /// one, the longest over the ranks, seconds.
    pub span_s: f64,
    /// Calls over all ranks.
    pub calls: u64,
    /// Failed polls folded into those calls ([`crate::model::Event::gap_polls`]), over all
    /// ranks.
    pub polls: u64,
}

/// What cutting one stretch did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StretchCut {
    /// Which stretch ([`Stretch::index`]).
    pub index: usize,
    /// Its span in the trace ([`Stretch::span_s`]), seconds.
    pub span_s: f64,
    /// The span of what the ranks kept, from leaving the opening collective to the end of the
    /// last call kept, the longest over the ranks, seconds.
    pub kept_s: f64,
    /// Calls of the stretch over all ranks.
    pub calls: u64,
    /// Calls of the stretch the ranks keep (before those that go with dropped ones), over all
    /// ranks.
    pub kept_calls: u64,
    /// Failed polls folded into the stretch's calls ([`crate::model::Event::gap_polls`]), over
    /// all ranks (absent, 0, in skeletons written before they were counted).
    #[serde(default)]
    pub polls: u64,
    /// Those folded into the calls kept.
    #[serde(default)]
    pub kept_polls: u64,
    /// Calls dropped over all ranks: those after the cut and those that went with them
    /// (the other ends of their messages, their requests' starts and completions).
    pub dropped: u64,
}

impl StretchCut {
    /// What the time of the kept part is multiplied by to stand for the whole stretch: its
    /// work over the work kept, each call counted with the failed polls folded into it (the
    /// skeleton makes them too; a call of HPC Challenge's MPI RandomAccess stands for hundreds,
    /// one per update generated). The part's share of the work, not of the recorded time: a
    /// run's pace drifts (the traced run of a stretch of drawn exchanges, on more ranks than
    /// cores, made 55 % of its calls in the first 60 % of its time, and the skeleton, scaled by
    /// time, predicted 8 % short of the trace, both simulated).
    pub fn scale(&self) -> f64 {
        let (all, kept) = (self.calls + self.polls, self.kept_calls + self.kept_polls);
        if kept > 0 {
            (all as f64 / kept as f64).max(1.0)
        } else {
            1.0
        }
    }

    /// Recorded seconds of the stretch the skeleton does not run: its span less the share it
    /// keeps ([`StretchCut::scale`]).
    pub fn removed_s(&self) -> f64 {
        self.span_s * (1.0 - 1.0 / self.scale())
    }
}

/// Whether event `e` of rank `r` is a blocking collective of all `n` ranks.
fn of_all(r: &RankTrace, e: &crate::model::Event, n: usize) -> bool {
    match &e.payload {
        Payload::Collective { comm, request: None, .. } => {
            r.members(*comm).is_some_and(|m| m.len() == n)
        }
        _ => false,
    }
}

/// The stretches of `ranks` that can be cut: between two consecutive collectives of all ranks,
/// holding no other collective and no communicator's creation or release, in program order.
/// Empty where the ranks do not make the same number of collectives of all ranks, or the trace
/// records no call times.
pub fn find(ranks: &[RankTrace]) -> Vec<Stretch> {
    let n = ranks.len();
    if n == 0 {
        return Vec::new();
    }
    let marks: Vec<Vec<usize>> = ranks
        .iter()
        .map(|r| {
            r.events.iter().enumerate().filter(|(_, e)| of_all(r, e, n)).map(|(i, _)| i).collect()
        })
        .collect();
    let k = marks[0].len();
    if marks.iter().any(|m| m.len() != k) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for s in 0..k.saturating_sub(1) {
        let mut events = Vec::with_capacity(n);
        let (mut span, mut calls, mut polls, mut cuttable) = (0u64, 0u64, 0u64, true);
        for (r, m) in ranks.iter().zip(&marks) {
            let (open, close) = (m[s], m[s + 1]);
            if r.events[open].op != ranks[0].events[marks[0][s]].op {
                return Vec::new();
            }
            let inside = &r.events[open + 1..close];
            if inside.iter().any(|e| matches!(e.op.class(), OpClass::Collective | OpClass::Comm)) {
                cuttable = false;
                break;
            }
            span = span.max(r.events[close].enter_ns.saturating_sub(r.events[open].exit_ns));
            calls += inside.len() as u64;
            polls += inside.iter().map(|e| u64::from(e.gap_polls)).sum::<u64>();
            events.push((open + 1, close));
        }
        if cuttable && span > 0 && calls > 0 {
            out.push(Stretch { index: s + 1, events, span_s: span as f64 * 1e-9, calls, polls });
        }
    }
    out
}

/// How many of `events` (one rank's calls in a stretch, in order) the cut keeps: the first
/// ones that hold `share` of their work, at least one. A call's work is the call and the failed
/// polls folded into it ([`crate::model::Event::gap_polls`]), which the skeleton makes as well.
fn share_cut(events: &[Event], share: f64) -> usize {
    let units = |e: &Event| 1 + u64::from(e.gap_polls);
    let total: u64 = events.iter().map(units).sum();
    let want = ((share * total as f64).ceil() as u64).max(1);
    let mut done = 0u64;
    events
        .iter()
        .position(|e| {
            let before = done;
            done += units(e);
            before >= want
        })
        .unwrap_or(events.len())
}

/// The request a call starts, if it starts one.
fn started(e: &crate::model::Event) -> Option<RequestId> {
    match &e.payload {
        Payload::P2p { request, .. } | Payload::Collective { request, .. } => *request,
        _ => None,
    }
}

/// The other ends of each call's messages, as [`crate::local::pair_up`] pairs them: one per
/// call, two for an `MPI_Sendrecv` that both sends and receives. Flat, 8 bytes a call: a map
/// of a list per call took 330 MB for the 3.7 M calls of an ABySS run.
struct Partners {
    /// Per rank, per call: its first partner (rank, call), or [`Partners::NONE`].
    first: Vec<Vec<(u32, u32)>>,
    /// The second partners of the calls that have two.
    second: HashMap<(u32, u32), (u32, u32)>,
}

impl Partners {
    const NONE: (u32, u32) = (u32::MAX, u32::MAX);

    /// The partners of every call of `ranks`. O(n log n) in the point-to-point calls.
    fn of(ranks: &[RankTrace]) -> Partners {
        let mut first: Vec<Vec<(u32, u32)>> =
            ranks.iter().map(|r| vec![Partners::NONE; r.events.len()]).collect();
        let mut second = HashMap::new();
        crate::local::pair_up(ranks, |(sr, se, _), (rr, re, _)| {
            for (at, to) in [((sr, se), (rr, re)), ((rr, re), (sr, se))] {
                let slot = &mut first[at.0 as usize][at.1 as usize];
                if *slot == Partners::NONE {
                    *slot = to;
                } else {
                    second.insert(at, to);
                }
            }
        });
        Partners { first, second }
    }

    /// The partners of call `i` of rank `r`, in the order they were paired.
    fn of_call(&self, r: u32, i: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let first = self.first[r as usize][i as usize];
        let second = if first == Partners::NONE { None } else { self.second.get(&(r, i)) };
        (first != Partners::NONE).then_some(first).into_iter().chain(second.copied())
    }
}

/// One rank's requests: the call that last started each, and the calls that completed it,
/// as lists sorted by request (a map of a list per request costs several times as much).
struct Requests {
    /// (request, call that started it), the last start of each request only.
    starts: Vec<(RequestId, u32)>,
    /// (request, call that completed it), in program order within a request.
    completions: Vec<(RequestId, u32)>,
}

impl Requests {
    /// The requests of `r`. O(n log n) in its calls.
    fn of(r: &RankTrace) -> Requests {
        let (mut starts, mut completions) = (Vec::new(), Vec::new());
        for (i, e) in r.events.iter().enumerate() {
            if let Some(q) = started(e) {
                starts.push((q, i as u32));
            }
            if let Payload::Completion { completed, .. } = &e.payload {
                completions
                    .extend(completed.iter().filter_map(|c| c.request).map(|q| (q, i as u32)));
            }
        }
        // Stable: the last start of a request is the last of its run; completions stay in
        // program order.
        starts.sort_by_key(|&(q, _)| q);
        starts.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 = later.1;
            }
            same
        });
        completions.sort_by_key(|&(q, _)| q);
        Requests { starts, completions }
    }

    /// The call that last started request `q`.
    fn start(&self, q: RequestId) -> Option<usize> {
        let at = self.starts.partition_point(|&(x, _)| x < q);
        self.starts.get(at).filter(|&&(x, _)| x == q).map(|&(_, i)| i as usize)
    }

    /// The calls that completed request `q`, in program order.
    fn completions(&self, q: RequestId) -> impl Iterator<Item = usize> + '_ {
        let at = self.completions.partition_point(|&(x, _)| x < q);
        self.completions[at..].iter().take_while(move |&&(x, _)| x == q).map(|&(_, i)| i as usize)
    }
}

/// Cuts `stretch` of `ranks` (found by [`find`] on these ranks) to the share `keep_s` of its
/// span of each rank's work ([`cut_all`] of one).
pub fn cut(ranks: &mut [RankTrace], stretch: &Stretch, keep_s: f64) -> StretchCut {
    let mut out = cut_all(ranks, &[(stretch.clone(), keep_s)]);
    out.pop().expect("one cut per stretch")
}

/// Cuts each stretch of `cuts` of `ranks` (all found by [`find`] on these ranks) to the first
/// calls that make, on each rank, the share of its work that the seconds the stretch keeps are
/// of its span (see the module documentation); what each cut did, in the order of `cuts`. A
/// message whose one end is dropped loses the other too, wherever it is (the messages of every
/// channel still pair in order), and a request its start or its completion. All the cuts are
/// made in one pass: the other end of a message dropped in one stretch may lie in another (a
/// send posted before a collective and received after the next), so cutting one stretch after
/// another would move the calls the next cut's ranges name.
///
/// Every rank keeps at least the first call it makes in the stretch, so that the part kept has
/// a time.
pub fn cut_all(ranks: &mut [RankTrace], cuts: &[(Stretch, f64)]) -> Vec<StretchCut> {
    let mut gone: Vec<Vec<bool>> = ranks.iter().map(|r| vec![false; r.events.len()]).collect();
    // The calls each cut drops itself: (rank, first, end, the cut), one range per rank and cut
    // (the stretches do not overlap), not one entry per call (a trace of millions of calls
    // drops millions).
    let mut ranges: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut dropped = vec![0u64; cuts.len()];
    let mut out = Vec::with_capacity(cuts.len());
    for (k, (stretch, keep_s)) in cuts.iter().enumerate() {
        let share =
            if stretch.span_s > 0.0 { (keep_s / stretch.span_s).clamp(0.0, 1.0) } else { 1.0 };
        let (mut kept, mut kept_calls, mut kept_polls) = (0u64, 0u64, 0u64);
        for (ri, (r, &(from, to))) in ranks.iter().zip(&stretch.events).enumerate() {
            if from < 1 || from > to || to > r.events.len() {
                continue;
            }
            let base = r.events[from - 1].exit_ns;
            let cut_at = share_cut(&r.events[from..to], share) + from;
            if cut_at > from {
                kept = kept.max(r.events[cut_at - 1].exit_ns.saturating_sub(base));
            }
            kept_calls += (cut_at - from) as u64;
            kept_polls +=
                r.events[from..cut_at].iter().map(|e| u64::from(e.gap_polls)).sum::<u64>();
            let newly = gone[ri][cut_at..to].iter().filter(|g| !**g).count();
            gone[ri][cut_at..to].fill(true);
            dropped[k] += newly as u64;
            ranges.push((ri, cut_at, to, k));
        }
        out.push(StretchCut {
            index: stretch.index,
            span_s: stretch.span_s,
            kept_s: kept as f64 * 1e-9,
            calls: stretch.calls,
            kept_calls,
            polls: stretch.polls,
            kept_polls,
            dropped: 0,
        });
    }
    // What goes with what: the two ends of each message, a request's start and completions.
    let partners = Partners::of(ranks);
    let requests: Vec<Requests> = ranks.iter().map(Requests::of).collect();
    // Dropped: each call that goes with a dropped one, until none is left; each counted with
    // the cut it went with. Depth first from each call the cuts dropped, the last first.
    let mut with: Vec<(u32, u32)> = Vec::new();
    let mut work: Vec<(u32, u32, u32)> = Vec::new();
    let starts = ranges.iter().rev().flat_map(|&(ri, from, to, k)| {
        (from..to).rev().map(move |i| (ri as u32, i as u32, k as u32))
    });
    for start in starts {
        work.push(start);
        while let Some((ri, i, k)) = work.pop() {
            with.clear();
            with.extend(partners.of_call(ri, i));
            let (rq, i) = (&requests[ri as usize], i as usize);
            let e = &ranks[ri as usize].events[i];
            if let Some(q) = started(e) {
                // Its completions lose it; one left with nothing goes.
                for c in rq.completions(q) {
                    if let Payload::Completion { completed, .. } =
                        &ranks[ri as usize].events[c].payload
                    {
                        let left = completed
                            .iter()
                            .filter_map(|x| x.request)
                            .any(|x| rq.start(x).is_none_or(|s| !gone[ri as usize][s]));
                        if !left {
                            with.push((ri, c as u32));
                        }
                    }
                }
            }
            if let Payload::Completion { completed, .. } = &e.payload {
                with.extend(
                    completed
                        .iter()
                        .filter_map(|c| c.request)
                        .filter_map(|q| rq.start(q))
                        .map(|s| (ri, s as u32)),
                );
            }
            for &(rj, j) in &with {
                let g = &mut gone[rj as usize][j as usize];
                if !*g {
                    *g = true;
                    dropped[k as usize] += 1;
                    work.push((rj, j, k));
                }
            }
        }
    }
    for (ri, r) in ranks.iter_mut().enumerate() {
        let g = &gone[ri];
        let mut lost: Vec<RequestId> =
            r.events.iter().zip(g).filter(|(_, &x)| x).filter_map(|(e, _)| started(e)).collect();
        lost.sort_unstable();
        lost.dedup();
        if !lost.is_empty() {
            for (e, _) in r.events.iter_mut().zip(g).filter(|(_, &x)| !x) {
                if let Payload::Completion { n_given, completed } = &mut e.payload {
                    let before = completed.len();
                    completed.retain(|c| c.request.is_none_or(|q| lost.binary_search(&q).is_err()));
                    *n_given = n_given.saturating_sub((before - completed.len()) as u32);
                }
            }
        }
        let mut i = 0;
        r.events.retain(|_| {
            i += 1;
            !g[i - 1]
        });
        // What is left is a sample: the room the whole stretch took goes back.
        r.events.shrink_to_fit();
    }
    for (c, d) in out.iter_mut().zip(dropped) {
        c.dropped = d;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::world_members;
    use crate::model::{CommId, Completed, Event, Op, Peer, Rank, RankInfo, Wildcards};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn ev(op: Op, at_us: u64, payload: Payload) -> Event {
        Event {
            op,
            enter_ns: at_us * 1000,
            exit_ns: at_us * 1000 + 500,
            gap_ns: 0,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        }
    }

    fn barrier(at_us: u64) -> Event {
        ev(
            Op::Barrier,
            at_us,
            Payload::Collective {
                comm: CommId::WORLD,
                root: None,
                send_bytes: 0,
                recv_bytes: 0,
                send_counts: None,
                recv_counts: None,
                request: None,
            },
        )
    }

    fn p2p(op: Op, at_us: u64, peer: u32, request: Option<u32>) -> Event {
        ev(
            op,
            at_us,
            Payload::P2p {
                peer: Peer::Rank(Rank(peer)),
                tag: 1,
                bytes: 8,
                comm: CommId::WORLD,
                request: request.map(RequestId),
                wildcards: Wildcards::default(),
            },
        )
    }

    fn wait(at_us: u64, request: u32) -> Event {
        ev(
            Op::Wait,
            at_us,
            Payload::Completion {
                n_given: 1,
                completed: vec![Completed {
                    request: Some(RequestId(request)),
                    source: None,
                    tag: None,
                    bytes: None,
                }],
            },
        )
    }

    fn rank(r: u32, events: Vec<Event>) -> RankTrace {
        let mut comms = BTreeMap::new();
        comms.insert(CommId::WORLD, world_members(2));
        RankTrace {
            rank: Rank(r),
            info: RankInfo { n_ranks: 2, ..RankInfo::default() },
            events,
            trailing_gap_ns: 0,
            comms,
            record_counts: BTreeMap::new(),
            unrecorded: Default::default(),
        }
    }

    /// Two ranks between two barriers: rank 0 sends at 10, 20, … 90 µs, rank 1 posts each
    /// receive a microsecond later and waits for it.
    fn exchange() -> Vec<RankTrace> {
        let mut a = vec![barrier(0)];
        let mut b = vec![barrier(0)];
        for k in 1..10u64 {
            a.push(p2p(Op::Send, 10 * k, 1, None));
            b.push(p2p(Op::Irecv, 10 * k + 1, 0, Some(k as u32)));
            b.push(wait(10 * k + 2, k as u32));
        }
        a.push(barrier(100));
        b.push(barrier(100));
        vec![rank(0, a), rank(1, b)]
    }

    #[test]
    fn a_stretch_lies_between_two_collectives_of_all_ranks() {
        let ranks = exchange();
        let s = find(&ranks);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].index, 1);
        assert_eq!(s[0].events, vec![(1, 10), (1, 19)]);
        assert_eq!(s[0].calls, 27);
        assert!((s[0].span_s - 99.5e-6).abs() < 1e-9, "{}", s[0].span_s);
    }

    #[test]
    fn a_cut_keeps_each_ranks_share_of_its_work_and_drops_the_waits_of_what_it_dropped() {
        let mut ranks = exchange();
        let s = find(&ranks).remove(0);
        // 43 of the span's 99.5 µs, 43 %: rank 0 keeps 4 of its 9 sends (10–40 µs), rank 1 8 of
        // its 18 calls (the receives at 11–41 and their waits at 12–42).
        let c = cut(&mut ranks, &s, 43e-6);
        assert_eq!(ranks[0].events.len(), 2 + 4);
        assert_eq!(ranks[1].events.len(), 2 + 8);
        assert_eq!(c.dropped, 5 + 10);
        assert!((c.kept_s - 42.0e-6).abs() < 1e-9, "{}", c.kept_s);
        assert_eq!((c.calls, c.kept_calls), (27, 12));
        assert!((c.scale() - 27.0 / 12.0).abs() < 1e-9);
        // 35 %: rank 1 keeps 7 calls, so the cut falls between a receive and its wait. The
        // receive goes with its wait, and the send it matched with it, although rank 0's share
        // (4 sends) holds that send.
        let mut ranks = exchange();
        let c = cut(&mut ranks, &s, 0.35 * s.span_s);
        assert_eq!(ranks[1].events.len(), 2 + 6, "{:?}", ranks[1].events);
        assert_eq!(ranks[1].events.last().map(|e| e.op), Some(Op::Barrier));
        assert_eq!(ranks[0].events.len(), 2 + 3, "{:?}", ranks[0].events);
        assert_eq!(c.dropped, 6 + 12);
        assert_eq!(crate::local::drop_local_calls(&mut ranks).calls(), 0);
        // The closing barrier stays on every rank.
        assert!(ranks.iter().all(|r| r.events.iter().filter(|e| e.op == Op::Barrier).count() == 2));
    }

    #[test]
    fn a_call_counts_with_its_polls_in_the_share_a_rank_keeps() {
        // Rank 0's first send carries 9 failed polls (its work: 9 sends and 9 polls), and it
        // runs ahead of rank 1: all its sends in the first 5 µs.
        let mut ranks = exchange();
        for (k, e) in ranks[0].events[1..10].iter_mut().enumerate() {
            e.enter_ns = 500 * k as u64;
            e.exit_ns = e.enter_ns + 100;
        }
        ranks[0].events[1].gap_polls = 9;
        let s = find(&ranks).remove(0);
        assert_eq!((s.calls, s.polls), (27, 9));
        // Half the work: rank 0 its first send (10 of 18), although all its sends lie in the
        // first tenth of the span; rank 1 9 of its 18 calls, of which the 5th receive goes
        // with its wait, and the 2nd–4th with the sends rank 0 dropped.
        let c = cut(&mut ranks, &s, 0.5 * s.span_s);
        assert_eq!(ranks[0].events.len(), 2 + 1);
        assert_eq!(ranks[1].events.len(), 2 + 2);
        assert_eq!((c.kept_calls, c.kept_polls), (1 + 9, 9));
        assert!((c.scale() - 36.0 / 19.0).abs() < 1e-9, "{}", c.scale());
        assert_eq!(crate::local::drop_local_calls(&mut ranks).calls(), 0);
    }

    #[test]
    fn a_message_dropped_at_one_end_is_dropped_at_the_other_even_after_the_stretch() {
        // Rank 0 sends twice in the stretch; rank 1 receives both after the closing barrier.
        let mut ranks = exchange();
        ranks[0].events.truncate(1);
        ranks[1].events.truncate(1);
        ranks[0].events.extend([
            p2p(Op::Send, 10, 1, None),
            p2p(Op::Send, 60, 1, None),
            barrier(100),
        ]);
        ranks[1].events.extend([
            barrier(100),
            p2p(Op::Recv, 101, 0, None),
            p2p(Op::Recv, 102, 0, None),
        ]);
        let s = find(&ranks).remove(0);
        let c = cut(&mut ranks, &s, 30e-6);
        // The second send is past the cut: its receive, the second, goes; the first stays and
        // still meets the first send.
        assert_eq!(c.dropped, 2);
        assert_eq!(ranks[1].events.len(), 3);
        assert_eq!(ranks[1].events[2].enter_ns, 101_000);
        assert_eq!(crate::local::drop_local_calls(&mut ranks).calls(), 0);
    }

    #[test]
    fn stretches_cut_together_keep_their_ranges_when_a_message_crosses_from_one_to_the_next() {
        // Rank 0 sends three messages in the first stretch, at 10, 20 and 30 µs; rank 1
        // receives them in the second, at 110, 130 and 140 µs. The first stretch keeps half its
        // work, two sends, the second a quarter, one receive, so the send at 20 µs goes with
        // its receive. Cut one after the other, from the last, that drop moved the first
        // stretch's calls on rank 0, and its cut took the barriers that follow (a fuzzed
        // trace: an index past the end of the rank).
        let a = vec![
            barrier(0),
            p2p(Op::Send, 10, 1, None),
            p2p(Op::Send, 20, 1, None),
            p2p(Op::Send, 30, 1, None),
            barrier(100),
            barrier(200),
        ];
        let b = vec![
            barrier(0),
            barrier(100),
            p2p(Op::Recv, 110, 0, None),
            p2p(Op::Recv, 130, 0, None),
            p2p(Op::Recv, 140, 0, None),
            barrier(200),
        ];
        let mut ranks = vec![rank(0, a), rank(1, b)];
        let stretches = find(&ranks);
        assert_eq!(stretches.len(), 2);
        let cuts: Vec<(Stretch, f64)> = stretches
            .into_iter()
            .zip([0.5, 0.25])
            .map(|(s, share)| {
                let keep = share * s.span_s;
                (s, keep)
            })
            .collect();
        let done = cut_all(&mut ranks, &cuts);
        assert_eq!(done.iter().map(|c| c.dropped).collect::<Vec<_>>(), vec![1, 3]);
        let ops = |r: &RankTrace| r.events.iter().map(|e| e.op).collect::<Vec<_>>();
        assert_eq!(ops(&ranks[0]), [Op::Barrier, Op::Send, Op::Barrier, Op::Barrier]);
        assert_eq!(ops(&ranks[1]), [Op::Barrier, Op::Barrier, Op::Recv, Op::Barrier]);
        assert_eq!(crate::local::drop_local_calls(&mut ranks).calls(), 0);
    }

    #[test]
    fn a_request_started_again_is_found_at_its_last_start_with_every_completion_in_order() {
        // Request 7 started at 1 and again at 3 (a persistent request), completed at 2 and 4;
        // request 2 started at 5, completed at 6.
        let r = rank(
            0,
            vec![
                barrier(0),
                p2p(Op::Isend, 1, 1, Some(7)),
                wait(2, 7),
                p2p(Op::Isend, 3, 1, Some(7)),
                wait(4, 7),
                p2p(Op::Irecv, 5, 1, Some(2)),
                wait(6, 2),
            ],
        );
        let q = Requests::of(&r);
        assert_eq!(q.start(RequestId(7)), Some(3));
        assert_eq!(q.start(RequestId(2)), Some(5));
        assert_eq!(q.start(RequestId(3)), None);
        assert_eq!(q.completions(RequestId(7)).collect::<Vec<_>>(), [2, 4]);
        assert_eq!(q.completions(RequestId(2)).collect::<Vec<_>>(), [6]);
        assert_eq!(q.completions(RequestId(9)).count(), 0);
    }

    #[test]
    fn a_sendrecv_has_a_partner_for_each_of_its_halves() {
        let sendrecv = |at_us: u64, peer: u32| {
            ev(
                Op::Sendrecv,
                at_us,
                Payload::SendRecv {
                    dest: Peer::Rank(Rank(peer)),
                    send_tag: 1,
                    send_bytes: 8,
                    source: Peer::Rank(Rank(peer)),
                    recv_tag: 1,
                    recv_bytes: 8,
                    comm: CommId::WORLD,
                },
            )
        };
        let ranks = vec![
            rank(0, vec![sendrecv(1, 1), p2p(Op::Send, 2, 1, None)]),
            rank(1, vec![p2p(Op::Recv, 1, 0, None), p2p(Op::Send, 2, 0, None)]),
        ];
        let p = Partners::of(&ranks);
        // Rank 0's Sendrecv: its send meets rank 1's first receive, its receive rank 1's send.
        let mut both: Vec<_> = p.of_call(0, 0).collect();
        both.sort_unstable();
        assert_eq!(both, [(1, 0), (1, 1)]);
        assert_eq!(p.of_call(1, 1).collect::<Vec<_>>(), [(0, 0)]);
        // Rank 0's plain send has no receive.
        assert_eq!(p.of_call(0, 1).count(), 0);
    }

    #[test]
    fn a_collective_of_some_ranks_or_unequal_collectives_leave_nothing_to_cut() {
        let mut ranks = exchange();
        let mut b = barrier(50);
        if let Payload::Collective { comm, .. } = &mut b.payload {
            *comm = CommId(2);
        }
        ranks[0].comms.insert(CommId(2), Arc::from(vec![Rank(0)]));
        ranks[0].events.insert(5, b);
        assert!(find(&ranks).is_empty());
        let mut ranks = exchange();
        ranks[1].events.pop();
        assert!(find(&ranks).is_empty());
    }
}
