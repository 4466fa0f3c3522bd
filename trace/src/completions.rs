//! Folding runs of partial completions into the `MPI_Waitall` they stand for.
//!
//! A code that handles its messages as they arrive waits with `MPI_Waitsome` or `MPI_Waitany`
//! (or tests with `MPI_Testsome` / `MPI_Testany` until something is done) over one array of
//! requests, again and again, and processes what each call completed before the next: a
//! finite-difference code unpacks each neighbour's halo as it lands (MEEP: a `MPI_Waitsome` over
//! the step's receives and sends, called 9 to 12 times per time step). Which requests each call
//! completes, and so how many calls the array takes, is the order the messages arrived in that
//! step of that run. Every time step then makes a different sequence of calls, and no loop
//! folds: the time-step loop of such a code is a stretch of hundreds of thousands of calls.
//!
//! A run of such calls — the same operation on arrays of the same size, one right after the
//! other with no other call between, each completing something, no request twice, until the
//! array is done or the run ends — becomes one `MPI_Waitall` of every request the run
//! completed, where the run began; so does a single call that completed its whole array (a step
//! whose messages had all arrived before it), so that every step makes the same call. The calls' own time becomes waiting inside it; the
//! computation between them (the processing of what had arrived) comes after it, before the
//! next call: where the messages arrive together, as a halo exchange's do, the application
//! processed them once they were there, and on a slower network it waits for them first.
//! No call lies between, so no message moves to another side of a call: the program's matching
//! and its order are unchanged. Failed polls are folded first ([`crate::polls`]); a run that
//! completes a request the trace did not see start (a persistent request) is left as it is.
//!
//! The loop discovery of Xu & Subhlok (2008, §3) then sees the time steps as equal;
//! ScalaTrace (Noeth et al. 2009) likewise aggregates the completions of a request array.
//!
//! # Complexity
//! O(n) time in the number of events and O(r) memory for the requests of the longest run; the
//! events are rewritten in place.

use std::collections::HashSet;

use crate::model::{Completed, Event, Op, Payload, RankTrace, Work};

/// What folding runs of partial completions did to one trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompletionFolding {
    /// Runs folded into one `MPI_Waitall` each.
    pub runs: u64,
    /// Calls those runs held.
    pub calls: u64,
}

/// The calls a run can hold: those that complete part of an array of requests.
fn partial_op(op: Op) -> bool {
    matches!(op, Op::Waitsome | Op::Waitany | Op::Testsome | Op::Testany)
}

/// The size of the array `e` was given and what it completed, where `e` can be part of a run.
fn partial(e: &Event) -> Option<(u32, &[Completed])> {
    match &e.payload {
        Payload::Completion { n_given, completed }
            if partial_op(e.op)
                && !completed.is_empty()
                && completed.iter().all(|c| c.request.is_some()) =>
        {
            Some((*n_given, completed))
        }
        _ => None,
    }
}

/// The end (exclusive) of the run that begins at `events[start]`, and whether it is one to fold:
/// two calls or more, or one that completed its whole array. `seen` is left holding the
/// requests the run completes.
fn run_end(events: &[Event], start: usize, seen: &mut HashSet<u32>) -> (usize, bool) {
    seen.clear();
    let Some((given, first)) = partial(&events[start]) else { return (start + 1, false) };
    let op = events[start].op;
    seen.extend(first.iter().filter_map(|c| c.request.map(|r| r.0)));
    if seen.len() != first.len() {
        return (start + 1, false);
    }
    let mut end = start + 1;
    while seen.len() < given as usize {
        let Some(e) = events.get(end) else { break };
        let Some((_, done)) = partial(e).filter(|(n, _)| e.op == op && *n == given) else {
            break;
        };
        if done.iter().any(|c| c.request.is_some_and(|r| seen.contains(&r.0))) {
            break;
        }
        seen.extend(done.iter().filter_map(|c| c.request.map(|r| r.0)));
        end += 1;
    }
    (end, end > start + 1 || seen.len() == given as usize)
}

/// The computation of the gaps between a run's calls, which the fold moves after its wait:
/// wall time, and processor time and counted work where every gap has them.
struct Between {
    ns: u64,
    cpu: Option<u64>,
    work: Option<Work>,
}

impl Between {
    fn of(e: &Event) -> Between {
        Between { ns: e.gap_ns, cpu: e.gap_cpu_ns, work: e.gap_work }
    }

    fn add(&mut self, ns: u64, cpu: Option<u64>, work: Option<Work>) {
        self.ns += ns;
        self.cpu = self.cpu.zip(cpu).map(|(a, b)| a + b);
        self.work = Work::sum(self.work, work);
    }
}

/// Folds every run of partial completions of `trace` (see the module documentation).
pub fn fold_completions(trace: &mut RankTrace) -> CompletionFolding {
    let mut stats = CompletionFolding::default();
    let events = &mut trace.events;
    if !events.iter().any(|e| partial_op(e.op)) {
        return stats;
    }
    let mut seen = HashSet::new();
    // The computation between the calls of the run just folded, for the event after it.
    let mut carry: Option<Between> = None;
    let (mut read, mut write) = (0, 0);
    while read < events.len() {
        let (end, fold) = run_end(events, read, &mut seen);
        let (first, later) = events[read..end].split_first_mut().expect("a run holds a call");
        if let Some(c) = carry.take() {
            let mut gap = Between::of(first);
            gap.add(c.ns, c.cpu, c.work);
            (first.gap_ns, first.gap_cpu_ns, first.gap_work) = (gap.ns, gap.cpu, gap.work);
        }
        if fold {
            let mut waited = first.duration_ns();
            let mut completed = match std::mem::replace(&mut first.payload, Payload::None) {
                Payload::Completion { completed, .. } => completed,
                _ => Vec::new(),
            };
            for e in later.iter_mut() {
                waited += e.duration_ns();
                match &mut carry {
                    None => carry = Some(Between::of(e)),
                    Some(c) => c.add(e.gap_ns, e.gap_cpu_ns, e.gap_work),
                }
                first.gap_polls = first.gap_polls.saturating_add(e.gap_polls);
                if let Payload::Completion { completed: more, .. } = &mut e.payload {
                    completed.append(more);
                }
            }
            stats.runs += 1;
            stats.calls += (end - read) as u64;
            first.op = Op::Waitall;
            first.exit_ns = first.enter_ns + waited;
            let n_given = u32::try_from(completed.len()).unwrap_or(u32::MAX);
            first.payload = Payload::Completion { n_given, completed };
        }
        events.swap(write, read);
        write += 1;
        read = end;
    }
    events.truncate(write);
    if let Some(c) = carry {
        trace.trailing_gap_ns += c.ns;
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RequestId;
    use crate::polls::tests::{ev, send, trace};

    /// A partial completion over `given` requests, its gap half on the processor.
    fn some(op: Op, gap: u64, dur: u64, given: u32, requests: &[Option<u32>]) -> Event {
        let completed = requests
            .iter()
            .map(|r| Completed { request: r.map(RequestId), source: None, tag: None, bytes: None })
            .collect();
        let mut e = ev(op, gap, dur, Payload::Completion { n_given: given, completed });
        e.gap_cpu_ns = Some(gap / 2);
        e
    }
    fn waitsome(gap: u64, dur: u64, requests: &[u32]) -> Event {
        let r: Vec<Option<u32>> = requests.iter().map(|&r| Some(r)).collect();
        some(Op::Waitsome, gap, dur, 4, &r)
    }
    fn requests(e: &Event) -> Vec<u32> {
        match &e.payload {
            Payload::Completion { completed, .. } => {
                completed.iter().filter_map(|c| c.request.map(|r| r.0)).collect()
            }
            _ => Vec::new(),
        }
    }

    #[test]
    fn a_run_of_waitsomes_becomes_one_waitall_and_the_work_between_follows_it() {
        let mut t = trace(vec![
            send(10_000),
            waitsome(4_000, 3_000, &[2]),
            waitsome(6_000, 1_000, &[1, 4]),
            waitsome(8_000, 2_000, &[3]),
            Event { gap_cpu_ns: Some(2_500), ..send(5_000) },
        ]);
        let (last_enter, last_exit) = (t.events[4].enter_ns, t.events[4].exit_ns);
        let s = fold_completions(&mut t);
        assert_eq!(s, CompletionFolding { runs: 1, calls: 3 });
        assert_eq!(t.events.len(), 3);
        let w = &t.events[1];
        assert_eq!(w.op, Op::Waitall);
        assert_eq!(requests(w), [2, 1, 4, 3]);
        assert!(matches!(w.payload, Payload::Completion { n_given: 4, .. }));
        // Its own gap stays; the calls' 6 µs are waiting inside it.
        assert_eq!((w.gap_ns, w.gap_cpu_ns, w.duration_ns()), (4_000, Some(2_000), 6_000));
        // The 14 µs between the calls come after it, before the next call, which keeps its time.
        let next = &t.events[2];
        assert_eq!((next.gap_ns, next.gap_cpu_ns), (5_000 + 14_000, Some(2_500 + 7_000)));
        assert_eq!((next.enter_ns, next.exit_ns), (last_enter, last_exit));
        assert_eq!(next.enter_ns - w.exit_ns, next.gap_ns);
    }

    #[test]
    fn a_single_call_that_completes_its_array_is_a_waitall_and_a_partial_one_stays() {
        let mut t = trace(vec![
            waitsome(1_000, 1_000, &[1, 2, 3, 4]),
            send(1_000),
            waitsome(1_000, 1_000, &[1, 2]),
            send(1_000),
        ]);
        let s = fold_completions(&mut t);
        assert_eq!(s, CompletionFolding { runs: 1, calls: 1 });
        let ops: Vec<Op> = t.events.iter().map(|e| e.op).collect();
        assert_eq!(ops, [Op::Waitall, Op::Send, Op::Waitsome, Op::Send]);
    }

    #[test]
    fn a_run_ends_at_another_array_a_request_seen_twice_or_a_request_not_seen_start() {
        let mut t = trace(vec![
            waitsome(1_000, 1_000, &[1]),
            waitsome(1_000, 1_000, &[1]),
            some(Op::Waitsome, 1_000, 1_000, 3, &[Some(7)]),
            some(Op::Waitany, 1_000, 1_000, 4, &[Some(8)]),
            some(Op::Waitany, 1_000, 1_000, 4, &[None]),
        ]);
        let before = t.events.clone();
        let s = fold_completions(&mut t);
        assert_eq!(s, CompletionFolding::default());
        assert_eq!(t.events, before);
    }

    #[test]
    fn the_work_after_a_run_that_ends_the_rank_is_the_ranks_trailing_computation() {
        let mut t = trace(vec![
            some(Op::Waitany, 1_000, 1_000, 2, &[Some(1)]),
            some(Op::Waitany, 3_000, 1_000, 2, &[Some(2)]),
        ]);
        let s = fold_completions(&mut t);
        assert_eq!(s, CompletionFolding { runs: 1, calls: 2 });
        assert_eq!(t.events.len(), 1);
        assert_eq!((t.events[0].op, t.events[0].duration_ns()), (Op::Waitall, 2_000));
        assert_eq!(t.trailing_gap_ns, 3_000);
    }
}
