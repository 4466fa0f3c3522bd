//! Kinds of time steps that do the same work a different number of times: one family.
//!
//! A fold into steps ([`crate::timesteps`]) tells steps apart by the exact sequence of their
//! calls' shapes. An SCF code's iterations are each of their own kind that way: every one runs
//! a Davidson loop per k-point whose trip counts vary from iteration to iteration, with partners
//! that vary too (receives from any source, pinned to the rank the traced run took) and tags
//! that count up (Quantum ESPRESSO: 12 SCF iterations of 5,000 to 31,000 calls, no two alike;
//! even with every back-to-back repeat written once, and tags and partners left out, their
//! sequences stay 2,000 to 5,000 calls long and differ). Sampled kind by kind, every kind runs
//! once and the skeleton is as long as the application.
//!
//! APPrime (Zhang et al. 2015, §3) models such repetitions as phases whose parameters vary;
//! ScalaTrace 2 (Wu & Mueller 2011, §3) folds loops whose bodies differ by a bounded amount.
//! Here a kind's *family* is the set of distinct calls it makes — operation, and communicator
//! and root for collectives; without partners, tags, sizes or how often and in which order.
//! Only where running one step of every kind would not fit the skeleton's budget
//! ([`crate::scale`]) does the skeleton sample families instead of kinds: it runs a few steps
//! of each family and predicts the family as their measured time × the family's recorded time
//! / theirs (a ratio estimate: the steps left out are priced at the pace of those that ran, in
//! proportion to what they recorded).
//!
//! # Complexity
//! O(n log d) for kinds of n calls in all, of d distinct calls.

use std::collections::{BTreeSet, HashMap};

use mpiskel_program::{Call, StepCase, Stmt};

/// A call without its partners, tag, sizes, buffer offsets and request slots; and its bytes
/// (sent, or received where it sends nothing).
fn token(call: &Call) -> (String, u64) {
    match call {
        Call::Send { op, bytes, .. } => (format!("send {op:?}"), *bytes),
        Call::Recv { op, bytes, .. } => (format!("recv {op:?}"), *bytes),
        Call::SendRecv { bytes, .. } => ("sendrecv".into(), *bytes),
        Call::Probe { .. } => ("probe".into(), 0),
        Call::Complete { how, .. } => (format!("complete {how:?}"), 0),
        Call::Collective { op, comm, root, bytes, .. } => {
            (format!("collective {op:?} {comm} {root:?}"), *bytes)
        }
    }
}

/// What a kind's family is told by: its distinct calls and its largest message.
#[derive(Default)]
struct Made {
    calls: BTreeSet<u32>,
    largest: u64,
}

/// The calls of `body` added to `made` (their tokens numbered in `ids`).
fn calls(body: &[Stmt], ids: &mut HashMap<String, u32>, made: &mut Made) {
    mpiskel_program::visit::each(body, &mut |s| {
        if let Stmt::Call { call, .. } = s {
            let (t, bytes) = token(call);
            let next = ids.len() as u32;
            made.calls.insert(*ids.entry(t).or_insert(next));
            made.largest = made.largest.max(bytes);
        }
    });
}

/// The family of each kind of step of `cases`, numbered by first appearance: kinds that make
/// the same distinct calls (see the module documentation) and whose largest messages are of
/// one size to a power of two (a benchmark repeated with messages half as large each time is
/// a family per repeat: on a network of other latency and bandwidth, the time of one repeat's
/// messages does not follow from another's).
pub fn families(cases: &[StepCase]) -> Vec<u32> {
    let mut ids = HashMap::new();
    let mut keys: HashMap<(BTreeSet<u32>, u32), u32> = HashMap::new();
    cases
        .iter()
        .map(|c| {
            let mut made = Made::default();
            calls(&c.body, &mut ids, &mut made);
            let size = 64 - made.largest.leading_zeros();
            let next = keys.len() as u32;
            *keys.entry((made.calls, size)).or_insert(next)
        })
        .collect()
}

/// Bytes the calls of `body` send, each loop's body as often as it runs: how much of a step's
/// time depends on the network.
pub fn bytes_sent(body: &[Stmt]) -> f64 {
    body.iter()
        .map(|s| match s {
            Stmt::Call { call, .. } => match call {
                Call::Send { bytes, .. }
                | Call::SendRecv { bytes, .. }
                | Call::Collective { bytes, .. } => *bytes as f64,
                _ => 0.0,
            },
            Stmt::Loop { body, count, .. } => *count as f64 * bytes_sent(body),
            Stmt::Guard { body, .. } => bytes_sent(body),
            Stmt::Steps { .. } | Stmt::Compute { .. } => 0.0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiskel_program::Peer;

    fn swap(to: usize, tag: i32, bytes: u64) -> Stmt {
        let call = Call::SendRecv {
            to: Peer::Dir(to),
            tag,
            bytes,
            from: Peer::Dir(1 - to),
            recv_tag: tag,
            count: bytes,
            sizes: None,
        };
        Stmt::Call { call, polls: 0, wait_s: 0.0, off_s: 0.0 }
    }

    fn reduce(comm: usize) -> Stmt {
        let call = Call::Collective {
            op: mpiskel_trace::Op::Allreduce,
            traced: mpiskel_trace::Op::Allreduce,
            comm,
            root: None,
            bytes: 8,
            slot: None,
        };
        Stmt::Call { call, polls: 0, wait_s: 0.0, off_s: 0.0 }
    }

    fn repeat(count: u64, body: Vec<Stmt>) -> Stmt {
        Stmt::Loop { depth: 1, count, body, note: String::new() }
    }

    fn case(body: Vec<Stmt>) -> StepCase {
        StepCase { full: 1, run: 1, body, note: String::new(), scale: 1.0, cut: None }
    }

    #[test]
    fn kinds_that_make_the_same_calls_other_numbers_of_times_are_one_family() {
        let cases = [
            // Solver iterations of 3 and 5, partners and tags that differ: one family.
            case(vec![reduce(0), repeat(3, vec![swap(0, 7, 8192), reduce(1)])]),
            case(vec![reduce(0), swap(1, 9, 6000), reduce(1), repeat(5, vec![swap(0, 8, 8192)])]),
            // Another call (a reduction over another communicator): another family.
            case(vec![reduce(0), repeat(3, vec![swap(0, 7, 8192), reduce(2)])]),
            // The same calls with messages half as large: another family.
            case(vec![reduce(0), repeat(3, vec![swap(0, 7, 4096), reduce(1)])]),
        ];
        assert_eq!(families(&cases), [0, 0, 1, 2]);
        assert_eq!(bytes_sent(&cases[0].body), 8.0 + 3.0 * (8192.0 + 8.0));
    }
}
