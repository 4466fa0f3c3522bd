//! Folding polling loops into the blocking completions they stand for.
//!
//! Codes that overlap communication with computation, or that serve requests as they come, poll:
//! `MPI_Test`, `MPI_Testany`, `MPI_Testsome`, `MPI_Testall` or `MPI_Iprobe` in a loop until
//! something arrives. A trace of such a code holds long runs of polls that found nothing — a
//! different number at every iteration and on every rank — which break every loop the
//! compression could find and would make a skeleton replay thousands of calls that only measure
//! how fast the recording machine spins.
//!
//! A run of failed polls followed by a call that waits for a message — a wait, a test or
//! probe that succeeded, a blocking probe or receive — is folded into that call: the run's time
//! becomes waiting inside it (the skeleton's blocking call waits as long as the message takes to
//! arrive on the machine it runs on), except the long blocks between polls, which are work the
//! program did while it waited and stay compute before the call. A block between two polls is
//! work when it takes longer than [`POLL_TURN_NS`] of processor time (wall time where the trace
//! has no processor times); shorter ones are the polling loop's own turn. A run that no waiting
//! call ends (the program stopped polling and went on) keeps a single poll, which takes the
//! run's time.
//!
//! The polls themselves are counted, not dropped: the folded call keeps how many were made before
//! it ([`Event::gap_polls`]) and the skeleton makes as many (`MPI_Iprobe`) before its blocking
//! call. A poll costs what the MPI library's progress engine costs (on a virtual machine with
//! more ranks than cores, a few microseconds: it yields the processor), and a program that polls
//! once per item of its own work runs at the pace of its polls: HPC Challenge's MPI
//! RandomAccess tests its receive once per update it generates, about a million failed polls per
//! rank, and its phase takes 1.7 s where the same messages, sent as soon as they can be, take
//! 27 ms. Where the polls only waited for a message, the skeleton's polls wait for it as well
//! and its blocking call finds the message there.
//!
//! ScalaTrace (Noeth et al. 2009) and the polling-aware replay of Casanova et al. (2015, §4.1)
//! treat repeated tests alike; this pass is what lets the loop discovery of Xu & Subhlok (2008,
//! §3) see the iterations of a polling loop as equal.
//!
//! # Complexity
//! O(n) time in the number of events; a run of polls is held as its sums and its latest poll,
//! so folding while reading ([`PollFolder`]) needs memory only for the events kept.

use serde::{Deserialize, Serialize};

use crate::model::{Event, Op, OpClass, Payload, RankTrace, Work};

/// The longest block between two polls taken for the polling loop's own turn rather than work:
/// a test call's return, a flag check and a few operations take microseconds; a program that
/// computes between polls does so in blocks far longer.
pub const POLL_TURN_NS: u64 = 50_000;

/// What folding did to one trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PollFolding {
    /// Failed polls removed.
    pub polls: u64,
    /// Runs folded into the waiting call that ended them.
    pub folded_runs: u64,
    /// Runs kept as a single poll (no waiting call ended them).
    pub kept_runs: u64,
    /// Nanoseconds of the polls and of the polling loop's turns that became waiting, over all
    /// ranks.
    pub waiting_ns: u64,
    /// Nanoseconds of work between polls kept as compute, over all ranks.
    pub work_ns: u64,
    /// Runs of partial completions (`MPI_Waitsome`, `MPI_Waitany`, and tests that completed
    /// something) folded into one `MPI_Waitall` each ([`crate::completions`]), over all ranks.
    #[serde(default)]
    pub partial_runs: u64,
    /// The calls those runs held.
    #[serde(default)]
    pub partial_calls: u64,
}

impl PollFolding {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &PollFolding) {
        self.polls += other.polls;
        self.folded_runs += other.folded_runs;
        self.kept_runs += other.kept_runs;
        self.waiting_ns += other.waiting_ns;
        self.work_ns += other.work_ns;
        self.partial_runs += other.partial_runs;
        self.partial_calls += other.partial_calls;
    }

    /// Whether anything was folded.
    pub fn any(&self) -> bool {
        self.polls > 0 || self.partial_runs > 0
    }

    /// Adds what folding runs of partial completions did ([`crate::completions`]).
    pub fn add_partial(&mut self, c: crate::completions::CompletionFolding) {
        self.partial_runs += c.runs;
        self.partial_calls += c.calls;
    }
}

/// Whether `e` is a poll that found nothing.
pub fn is_failed_poll(e: &Event) -> bool {
    match (&e.payload, e.op) {
        (
            Payload::Completion { completed, .. },
            Op::Test | Op::Testany | Op::Testsome | Op::Testall,
        ) => completed.is_empty(),
        (Payload::P2p { bytes: 0, .. }, Op::Iprobe) => true,
        _ => false,
    }
}

/// Whether `e` waits for a message, so that polls before it were waiting for the same.
fn ends_a_wait(e: &Event) -> bool {
    match e.op.class() {
        OpClass::Completion => !is_failed_poll(e),
        OpClass::Probe => !is_failed_poll(e),
        OpClass::Recv => e.op == Op::Recv,
        _ => false,
    }
}

/// Folds every run of failed polls of `trace` (see the module documentation).
pub fn fold_polls(trace: &mut RankTrace) -> PollFolding {
    if !trace.events.iter().any(is_failed_poll) {
        // Nothing to fold: the events stay where they are (no copy of a large rank).
        return PollFolding::default();
    }
    let events = std::mem::take(&mut trace.events);
    let mut out: Vec<Event> = Vec::with_capacity(events.len());
    let mut folder = PollFolder::default();
    for e in events {
        folder.push(e, &mut out);
    }
    let stats = folder.finish(&mut out);
    out.shrink_to_fit();
    trace.events = out;
    stats
}

/// Folds polls as a rank's events arrive, in order: what [`fold_polls`] does, in constant
/// memory beyond the events it gives out, so that a reader can fold while it reads (a trace of
/// tens of millions of failed polls need not be held whole). A run of polls is kept as its
/// sums and its latest poll.
#[derive(Debug, Default)]
pub struct PollFolder {
    run: Option<Run>,
    stats: PollFolding,
}

/// The run of failed polls being folded.
#[derive(Debug)]
struct Run {
    /// Its latest poll, not yet in `sums`: it ends the run where no waiting call does.
    last: Event,
    sums: Sums,
}

/// What the polls of a run before its latest one and the blocks between them add up to.
#[derive(Debug)]
struct Sums {
    /// Polls.
    before: u64,
    /// The polls those made, each with those it already carried.
    made: u64,
    /// The program's compute before the first poll and the work between polls: wall time,
    /// processor time, work counted.
    work: u64,
    work_cpu: Option<u64>,
    instr: Option<Work>,
    /// The polls and the polling loop's turns.
    waiting: u64,
}

impl Sums {
    /// The block before `e`, a poll after the first or the call that ends the run: the
    /// polling loop's turn, or work (longer than [`POLL_TURN_NS`] of processor time).
    fn turn(&mut self, e: &Event, stats: &mut PollFolding) {
        let cpu = e.gap_cpu_ns.unwrap_or(e.gap_ns);
        if cpu > POLL_TURN_NS {
            self.work += e.gap_ns;
            stats.work_ns += e.gap_ns;
            self.work_cpu = self.work_cpu.zip(e.gap_cpu_ns).map(|(a, b)| a + b);
            self.instr = Work::sum(self.instr, e.gap_work);
        } else {
            self.waiting += e.gap_ns;
        }
    }

    /// Counts `poll`, a failed poll of the run.
    fn count(&mut self, poll: &Event) {
        self.waiting += poll.duration_ns();
        self.made += 1 + u64::from(poll.gap_polls);
        self.before += 1;
    }

    /// `end`, the call after the polls counted, with their time and their count.
    fn fold_into(self, mut end: Event, stats: &mut PollFolding) -> Event {
        stats.polls += self.before;
        stats.waiting_ns += self.waiting;
        end.gap_polls = u32::try_from(self.made + u64::from(end.gap_polls)).unwrap_or(u32::MAX);
        end.gap_ns = self.work;
        end.gap_cpu_ns = self.work_cpu;
        end.gap_work = self.instr;
        end.enter_ns = end.enter_ns.saturating_sub(self.waiting);
        end
    }
}

impl PollFolder {
    /// Takes the next event of the rank; puts what is folded out into `out`.
    pub fn push(&mut self, e: Event, out: &mut Vec<Event>) {
        if is_failed_poll(&e) {
            match &mut self.run {
                None => {
                    // The block before the first poll is the program's, whatever it is.
                    let sums = Sums {
                        before: 0,
                        made: 0,
                        work: e.gap_ns,
                        work_cpu: e.gap_cpu_ns,
                        instr: e.gap_work,
                        waiting: 0,
                    };
                    self.run = Some(Run { last: e, sums });
                }
                Some(run) => {
                    run.sums.turn(&e, &mut self.stats);
                    run.sums.count(&run.last);
                    run.last = e;
                }
            }
            return;
        }
        match self.run.take() {
            None => out.push(e),
            Some(Run { last, mut sums }) if ends_a_wait(&e) => {
                sums.turn(&e, &mut self.stats);
                sums.count(&last);
                out.push(sums.fold_into(e, &mut self.stats));
                self.stats.folded_runs += 1;
            }
            Some(run) => {
                self.keep_one(run, out);
                out.push(e);
            }
        }
    }

    /// A run that no waiting call ends: its latest poll stays and takes the others' time.
    fn keep_one(&mut self, Run { last, sums }: Run, out: &mut Vec<Event>) {
        if sums.before > 0 {
            self.stats.kept_runs += 1;
            out.push(sums.fold_into(last, &mut self.stats));
        } else {
            out.push(last);
        }
    }

    /// Ends the rank (a run still open keeps one poll); what was folded.
    pub fn finish(mut self, out: &mut Vec<Event>) -> PollFolding {
        if let Some(run) = self.run.take() {
            self.keep_one(run, out);
        }
        self.stats
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{CommId, Completed, Peer, Rank, RankInfo, RequestId};

    pub(crate) fn ev(op: Op, gap: u64, dur: u64, payload: Payload) -> Event {
        Event {
            op,
            enter_ns: 0,
            exit_ns: dur,
            gap_ns: gap,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        }
    }
    fn test(gap: u64, done: bool) -> Event {
        let completed = if done {
            vec![Completed { request: Some(RequestId(1)), source: None, tag: None, bytes: None }]
        } else {
            Vec::new()
        };
        ev(Op::Testany, gap, 1_000, Payload::Completion { n_given: 2, completed })
    }
    fn probe(gap: u64, bytes: u64) -> Event {
        let payload = Payload::P2p {
            peer: Peer::Any,
            tag: 7,
            bytes,
            comm: CommId::WORLD,
            request: None,
            wildcards: Default::default(),
        };
        ev(Op::Iprobe, gap, 500, payload)
    }
    pub(crate) fn send(gap: u64) -> Event {
        let payload = Payload::P2p {
            peer: Peer::Rank(Rank(1)),
            tag: 0,
            bytes: 8,
            comm: CommId::WORLD,
            request: None,
            wildcards: Default::default(),
        };
        ev(Op::Send, gap, 2_000, payload)
    }
    /// Lays the events out in time, as a tracer would have recorded them.
    pub(crate) fn trace(mut events: Vec<Event>) -> RankTrace {
        let mut t = 0;
        for e in &mut events {
            let d = e.duration_ns();
            e.enter_ns = t + e.gap_ns;
            e.exit_ns = e.enter_ns + d;
            t = e.exit_ns;
        }
        RankTrace {
            rank: Rank(0),
            info: RankInfo { n_ranks: 2, ..RankInfo::default() },
            events,
            trailing_gap_ns: 0,
            comms: Default::default(),
            record_counts: Default::default(),
            unrecorded: Default::default(),
        }
    }
    fn span(t: &RankTrace) -> u64 {
        t.events.last().unwrap().exit_ns
    }

    #[test]
    fn a_spinning_run_becomes_waiting_inside_the_completion() {
        let mut t =
            trace(vec![send(10_000), test(3_000, false), test(2_000, false), test(2_000, true)]);
        let before = span(&t);
        let s = fold_polls(&mut t);
        assert_eq!(t.events.len(), 2);
        let end = &t.events[1];
        assert_eq!((end.op, end.gap_ns), (Op::Testany, 3_000));
        // Two failed polls (1 µs each) and two turns of 2 µs became waiting.
        assert_eq!(end.duration_ns(), 1_000 + 2 * 1_000 + 2 * 2_000);
        assert_eq!(span(&t), before, "no time is lost or made");
        assert_eq!((s.polls, s.folded_runs, s.kept_runs), (2, 1, 0));
        assert_eq!(s.waiting_ns, 6_000);
        assert_eq!(end.gap_polls, 2, "the skeleton makes the polls the program made");
    }

    #[test]
    fn polls_are_counted_on_the_call_that_ends_them_and_on_a_kept_poll() {
        let mut t = trace(vec![
            test(0, false),
            test(100, false),
            test(100, false),
            send(5_000),
            test(100, false),
            test(100, true),
            send(1),
        ]);
        fold_polls(&mut t);
        let counts: Vec<(Op, u32)> = t.events.iter().map(|e| (e.op, e.gap_polls)).collect();
        // Three failed polls before the send: one stays as a call, made after the other two;
        // one before the test that completed.
        assert_eq!(
            counts,
            [(Op::Testany, 2), (Op::Send, 0), (Op::Testany, 1), (Op::Send, 0)],
            "{counts:?}"
        );
    }

    #[test]
    fn work_between_polls_stays_compute() {
        let mut t =
            trace(vec![probe(1_000, 0), probe(400_000, 0), probe(2_000, 0), probe(300_000, 64)]);
        let s = fold_polls(&mut t);
        assert_eq!(t.events.len(), 1);
        assert_eq!(t.events[0].gap_ns, 1_000 + 400_000 + 300_000);
        assert_eq!(s.work_ns, 700_000);
        assert_eq!(t.events[0].duration_ns(), 500 + 3 * 500 + 2_000);
    }

    #[test]
    fn a_run_no_wait_ends_keeps_one_poll_with_its_time() {
        let mut t =
            trace(vec![test(0, false), test(1_000, false), test(1_000, false), send(5_000)]);
        let before = span(&t);
        let s = fold_polls(&mut t);
        assert_eq!(t.events.iter().map(|e| e.op).collect::<Vec<_>>(), [Op::Testany, Op::Send]);
        assert!(is_failed_poll(&t.events[0]));
        assert_eq!(span(&t), before);
        assert_eq!((s.polls, s.folded_runs, s.kept_runs), (2, 0, 1));
    }

    #[test]
    fn a_trace_without_polls_is_unchanged() {
        let mut t = trace(vec![send(1), test(5, true), probe(5, 8), send(3)]);
        let before = t.clone();
        assert_eq!(fold_polls(&mut t), PollFolding::default());
        assert_eq!(t, before);
    }

    #[test]
    fn a_trailing_run_keeps_one_poll() {
        let mut t = trace(vec![send(1), probe(5, 0), probe(5, 0)]);
        fold_polls(&mut t);
        assert_eq!(t.events.len(), 2);
        assert_eq!(span(&t), 2_000 + 1 + 5 + 500 + 5 + 500);
    }
}
