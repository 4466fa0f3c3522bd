//! Greedy bottom-up loop discovery (Xu & Subhlok 2008, §3; Xu & Subhlok, *Efficient discovery of loop
//! nests in communication traces of parallel programs*, UH-CS-08-08).
//!
//! Each round finds the runs of the current sequence ([`crate::runs::runs`]) whose periods lie
//! in the first doubling block `[2^k, 2^(k+1))` that has any, takes them in order of increasing
//! period (then position) and keeps those that do not overlap a run already kept; each kept run of period `p` and length `L` becomes one loop symbol standing for its
//! first `p` symbols repeated `⌊L/p⌋` times (the `L mod p` symbols after it stay as they are).
//! Loops with the same body and count share one symbol. Rounds repeat on the shortened sequence
//! until nothing repeats; inner (short-period) loops are thus folded before the outer loops that
//! contain them. By Xu & Subhlok's analysis an outer loop found this way has the same symbols as the
//! optimal one, possibly rotated, and at most two fewer iterations.
//!
//! A run of only two periods that straddles the edge of a longer run (three or more periods of a
//! longer period) is left to that run: it is the longer loop's first or last call agreeing with
//! the call beside it, not a loop (see [`LongerEdges`]).
//!
//! A final pass folds a first or last iteration that differs from the others only by a few
//! extra elements (at most a quarter of the body, counted in elements and in calls) into its
//! loop, as parts guarded to run in that iteration only ([`Node::Guard`]); the loop then has
//! the iteration count the program ran.
//!
//! What real traces do to it:
//! - set-up and tear-down calls before and after the main loop stay as plain symbols beside it;
//! - a first or last iteration with a few extra calls (NPB LU computes its residual norm in the
//!   last iteration) joins the loop with those calls guarded; one that differs more stays plain
//!   beside the loop (one iteration fewer), like an untimed warm-up iteration;
//! - a call made every k-th iteration makes the k-iteration block the repeating unit: the loop
//!   is found with k times the body and 1/k of the count, the inner k − 1 iterations as a loop;
//! - trip counts that differ between outer iterations give different loop symbols, so the outer
//!   iterations stop repeating: the outer loop is found only where consecutive iterations agree.
//!   The span covered (reported) shows what was left out.
//!
//! # Complexity
//! A round that finds runs of period below `P` costs O(n log P); a sequence with no repeat at
//! all costs one O(n log n) round. Later rounds work on the shortened sequence, so for traces
//! that are loop nests the total is close to linear. O(n) memory.

use std::collections::HashMap;

use crate::nest::{LoopNest, Node, Sym, When};
use crate::runs::{Run, RunSearch};

/// The definitions of loop symbols made during compression.
struct Defs {
    first: Sym,
    bodies: Vec<(Vec<Sym>, u64)>,
    index: HashMap<(Vec<Sym>, u64), Sym>,
}

impl Defs {
    fn intern(&mut self, body: &[Sym], count: u64) -> Sym {
        let key = (body.to_vec(), count);
        if let Some(&s) = self.index.get(&key) {
            return s;
        }
        let s = self.first + self.bodies.len() as Sym;
        self.bodies.push(key.clone());
        self.index.insert(key, s);
        s
    }

    fn node(&self, s: Sym) -> Node {
        match s.checked_sub(self.first).map(|k| &self.bodies[k as usize]) {
            None => Node::Sym { sym: s, stats: None },
            Some((body, count)) => {
                Node::Loop { count: *count, body: body.iter().map(|&b| self.node(b)).collect() }
            }
        }
    }
}

/// Whether a run repeats its period only twice: weak evidence of a loop, as likely two calls
/// that happen to agree.
fn is_pair(r: &Run) -> bool {
    (r.end - r.start) / r.period == 2
}

/// The edges of the longer loops among `longer` runs (three or more periods each), sorted, to ask
/// whether a pair straddles one: a run of a longer period repeated at least three times that
/// covers part of the pair, not all of it. A pair inside a longer loop recurs in each of its
/// iterations and is an inner loop; one across its edge is the loop's first (or last) call
/// agreeing with the call next to it, as NPB FT's untimed transform before its six iterations
/// of transform and checksum: folding it first would leave `A + (A)^2 + (R A)^5 + R` instead of
/// `A + (A R)^6`.
///
/// A longer loop covers part of the pair's span, not all of it, exactly when one of its edges
/// lies strictly inside that span; the edges are sorted, so each question is two binary
/// searches: O((pairs + longer runs) · log) a round, where comparing every pair with every
/// longer run took 35 s of a 5.9 M-call LAMMPS trace's 36 s build.
struct LongerEdges {
    /// Start and end of each longer loop's whole periods, each list sorted.
    starts: Vec<usize>,
    ends: Vec<usize>,
    /// The shortest period among them.
    min_period: usize,
}

impl LongerEdges {
    fn new(longer: &[Run]) -> LongerEdges {
        let (mut starts, mut ends) = (Vec::new(), Vec::new());
        let mut min_period = usize::MAX;
        for l in longer {
            let count = (l.end - l.start) / l.period;
            if count >= 3 {
                starts.push(l.start);
                ends.push(l.start + count * l.period);
                min_period = min_period.min(l.period);
            }
        }
        starts.sort_unstable();
        ends.sort_unstable();
        LongerEdges { starts, ends, min_period }
    }

    /// Whether the pair `r` straddles the edge of one of the longer loops (all of whose periods
    /// are longer than `r`'s, as the rounds search them).
    fn straddled(&self, r: &Run) -> bool {
        debug_assert!(self.starts.is_empty() || self.min_period > r.period);
        let (lo, hi) = (r.start, r.start + 2 * r.period);
        let inside = |edges: &[usize]| {
            let i = edges.partition_point(|&x| x <= lo);
            edges.get(i).is_some_and(|&x| x < hi)
        };
        inside(&self.starts) || inside(&self.ends)
    }
}

/// One round: folds the non-overlapping runs, shortest period first. `None` when nothing
/// repeats.
fn round(seq: &[Sym], defs: &mut Defs) -> Option<Vec<Sym>> {
    // Periods in doubling blocks [1, 2), [2, 4), …: the first block with a run ends the
    // search, so long periods are looked for only once the short loops inside them are folded.
    let mut search = RunSearch::new(seq);
    let mut found = Vec::new();
    let mut lo = 1;
    while found.is_empty() && lo <= seq.len() / 2 {
        found = search.periods(lo..2 * lo);
        if found.iter().any(is_pair) {
            let ahead = LongerEdges::new(&search.periods(2 * lo..8 * lo));
            found.retain(|r| !is_pair(r) || !ahead.straddled(r));
        }
        lo *= 2;
    }
    if found.is_empty() {
        return None;
    }
    let mut taken = vec![false; seq.len()];
    let mut starts: Vec<(usize, usize, u64)> = Vec::new(); // (start, period, count)
    for r in found {
        let count = (r.end - r.start) / r.period;
        let span = r.start..r.start + count * r.period;
        if taken[span.clone()].iter().any(|&t| t) {
            continue;
        }
        taken[span].iter_mut().for_each(|t| *t = true);
        starts.push((r.start, r.period, count as u64));
    }
    starts.sort_unstable();
    let mut out = Vec::with_capacity(seq.len());
    let mut i = 0;
    for (start, period, count) in starts {
        out.extend_from_slice(&seq[i..start]);
        out.push(defs.intern(&seq[start..start + period], count));
        i = start + period * count as usize;
    }
    out.extend_from_slice(&seq[i..]);
    Some(out)
}

/// Compresses `seq` into a loop nest, greedily.
pub fn greedy(seq: &[Sym]) -> LoopNest {
    let first = seq.iter().copied().max().map_or(0, |m| m + 1);
    let mut defs = Defs { first, bodies: Vec::new(), index: HashMap::new() };
    let mut cur = seq.to_vec();
    while let Some(next) = round(&cur, &mut defs) {
        cur = next;
    }
    let items = cur.iter().map(|&s| defs.node(s)).collect();
    LoopNest { items: absorb(items) }
}

/// Most extra elements a differing first or last iteration may have, for a body of `len`.
fn max_extra(len: usize) -> usize {
    (len / 4).max(1)
}

/// Matches `body` as a subsequence of a prefix of the sequence `seg_at(0), seg_at(1), …` (of
/// length `seg_len`) that starts with `body[0]`, with at most `max_extra(body.len())` elements
/// in between, which make at most `max_extra` of the body's calls. Returns the prefix length
/// and, per element of the prefix, whether it is extra. Looks at no more than
/// `body.len() + max_extra` elements.
fn match_with_extras<'a>(
    body: &[&'a Node],
    seg_len: usize,
    seg_at: impl Fn(usize) -> &'a Node,
) -> Option<(usize, Vec<bool>)> {
    if body.is_empty() || seg_len == 0 || seg_at(0) != body[0] {
        return None;
    }
    let limit = max_extra(body.len());
    // The extras' calls are bounded alike: an extra element may be a loop of many calls (a
    // time-step loop of 14,000 steps before a loop of 13-call steps), which is no extra part
    // of one iteration.
    let body_calls: u64 = body.iter().map(|n| n.expanded_len()).sum();
    let call_limit = max_extra(usize::try_from(body_calls).unwrap_or(usize::MAX)) as u64;
    let mut extra_calls = 0u64;
    let mut k = 0;
    let mut n_extra = 0;
    let mut extra = Vec::new();
    for i in 0..seg_len {
        if seg_at(i) == body[k] {
            extra.push(false);
            k += 1;
            if k == body.len() {
                return (n_extra > 0).then_some((i + 1, extra));
            }
        } else {
            extra.push(true);
            n_extra += 1;
            extra_calls += seg_at(i).expanded_len();
            if n_extra > limit || extra_calls > call_limit {
                return None;
            }
        }
    }
    None
}

/// Builds the body of a loop whose first or last iteration had extras (marked in `extra`).
fn guarded_body(seg: &[Node], extra: &[bool], when: When) -> Vec<Node> {
    let mut body = Vec::new();
    let mut pending: Vec<Node> = Vec::new();
    for (n, &is_extra) in seg.iter().zip(extra) {
        if is_extra {
            pending.push(n.clone());
        } else {
            if !pending.is_empty() {
                body.push(Node::Guard { when, body: std::mem::take(&mut pending) });
            }
            body.push(n.clone());
        }
    }
    if !pending.is_empty() {
        body.push(Node::Guard { when, body: pending });
    }
    body
}

/// Matches a differing first iteration of `body` at the end of the sequence `at(0..len)`:
/// the number of elements it takes and the new body with the extras guarded.
fn first_iteration<'a>(
    body: &[Node],
    len: usize,
    at: impl Fn(usize) -> &'a Node,
) -> Option<(usize, Vec<Node>)> {
    let rev_body: Vec<&Node> = body.iter().rev().collect();
    let (m, extra) = match_with_extras(&rev_body, len, |i| at(len - 1 - i))?;
    let seg: Vec<Node> = (len - m..len).map(|i| at(i).clone()).collect();
    let extra: Vec<bool> = extra.into_iter().rev().collect();
    Some((m, guarded_body(&seg, &extra, When::First)))
}

/// Folds a first or last iteration that differs from the others only by a few extra elements
/// (a convergence check in the last iteration, a set-up call in the first) into its loop, as
/// parts guarded to run only in that iteration. Inner loops are treated before outer ones.
fn absorb(items: Vec<Node>) -> Vec<Node> {
    let mut items: Vec<Node> = items
        .into_iter()
        .map(|n| match n {
            Node::Loop { count, body } => Node::Loop { count, body: absorb(body) },
            other => other,
        })
        .collect();
    let mut j = 0;
    while j < items.len() {
        let Node::Loop { count, body } = &items[j] else {
            j += 1;
            continue;
        };
        if body.iter().any(|n| matches!(n, Node::Guard { .. })) {
            j += 1;
            continue;
        }
        let (count, body) = (*count, body.clone());
        // A differing last iteration after the loop.
        let body_refs: Vec<&Node> = body.iter().collect();
        let after = &items[j + 1..];
        if let Some((m, extra)) = match_with_extras(&body_refs, after.len(), |i| &after[i]) {
            let new_body = guarded_body(&items[j + 1..j + 1 + m], &extra, When::Last);
            items.splice(j..j + 1 + m, [Node::Loop { count: count + 1, body: new_body }]);
            continue;
        }
        // A differing first iteration before it. The runs start as early as they can, so the
        // loop may begin part-way into an iteration, with the rest of the last iteration after
        // it: rotate the loop so that the symbols after it move before it, then match.
        let r = body.iter().zip(&items[j + 1..]).take_while(|(a, b)| a == b).count();
        if r > 0 && r < body.len() {
            let mut rotated = body[r..].to_vec();
            rotated.extend_from_slice(&body[..r]);
            // The sequence before the rotated loop: items[..j] followed by body[..r].
            let before = &items[..j];
            let at = |i: usize| if i < j { &before[i] } else { &body[i - j] };
            if let Some((m, new_body)) = first_iteration(&rotated, j + r, at) {
                // The new loop replaces the last m elements of that sequence, the old loop
                // and the r elements after it.
                let start = j + r - m;
                items.splice(start..j + 1 + r, [Node::Loop { count: count + 1, body: new_body }]);
                j = start;
                continue;
            }
        }
        let before = &items[..j];
        if let Some((m, new_body)) = first_iteration(&body, j, |i| &before[i]) {
            items.splice(j - m..=j, [Node::Loop { count: count + 1, body: new_body }]);
            j -= m;
            continue;
        }
        j += 1;
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The question [`LongerEdges`] answers, asked of every longer run in turn.
    fn straddles_by_scan(r: &Run, longer: &[Run]) -> bool {
        let span = r.start..r.start + 2 * r.period;
        longer.iter().any(|l| {
            let count = (l.end - l.start) / l.period;
            let lspan = l.start..l.start + count * l.period;
            count >= 3
                && l.period > r.period
                && span.start < lspan.end
                && lspan.start < span.end
                && !(lspan.start <= span.start && span.end <= lspan.end)
        })
    }

    fn run(period: std::ops::Range<usize>) -> impl Strategy<Value = Run> {
        (period, 0usize..200, 2usize..6, 0usize..3).prop_map(|(p, start, count, extra)| Run {
            period: p,
            start,
            end: start + count * p + extra.min(p - 1),
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn longer_edges_answer_as_the_scan_of_every_longer_run(
            pairs in proptest::collection::vec(run(4..8), 1..20),
            longer in proptest::collection::vec(run(8..32), 0..20),
        ) {
            let edges = LongerEdges::new(&longer);
            for r in pairs.iter().filter(|r| is_pair(r)) {
                prop_assert_eq!(edges.straddled(r), straddles_by_scan(r, &longer), "{:?}", r);
            }
        }
    }
}
