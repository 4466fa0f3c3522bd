//! Greedy bottom-up loop discovery (seed 001 §3; Xu & Subhlok, *Efficient discovery of loop
//! nests in communication traces of parallel programs*, UH-CS-08-08).
//!
//! Each round finds every run of the current sequence ([`crate::runs::runs`]), takes them in
//! order of increasing period (then position) and keeps those that do not overlap a run already
//! kept; each kept run of period `p` and length `L` becomes one loop symbol standing for its
//! first `p` symbols repeated `⌊L/p⌋` times (the `L mod p` symbols after it stay as they are).
//! Loops with the same body and count share one symbol. Rounds repeat on the shortened sequence
//! until nothing repeats; inner (short-period) loops are thus folded before the outer loops that
//! contain them. By the seed's analysis an outer loop found this way has the same symbols as the
//! optimal one, possibly rotated, and at most two fewer iterations.
//!
//! What real traces do to it:
//! - set-up and tear-down calls before and after the main loop stay as plain symbols beside it;
//! - a first or last iteration that differs from the others falls outside the loop (one
//!   iteration fewer), and stays plain;
//! - a call made every k-th iteration makes the k-iteration block the repeating unit: the loop
//!   is found with k times the body and 1/k of the count, the inner k − 1 iterations as a loop;
//! - trip counts that differ between outer iterations give different loop symbols, so the outer
//!   iterations stop repeating: the outer loop is found only where consecutive iterations agree.
//!   The span covered (reported) shows what was left out.
//!
//! # Complexity
//! O(n log n) for the first round; later rounds work on the shortened sequence, so for traces
//! that are loop nests the total is dominated by the first round. O(n) memory.

use std::collections::HashMap;

use crate::nest::{LoopNest, Node, Sym};
use crate::runs::runs;

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
            None => Node::Sym {
                sym: s,
                stats: None,
            },
            Some((body, count)) => Node::Loop {
                count: *count,
                body: body.iter().map(|&b| self.node(b)).collect(),
            },
        }
    }
}

/// One round: folds the non-overlapping runs, shortest period first. `None` when nothing
/// repeats.
fn round(seq: &[Sym], defs: &mut Defs) -> Option<Vec<Sym>> {
    let found = runs(seq);
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
    let mut defs = Defs {
        first,
        bodies: Vec::new(),
        index: HashMap::new(),
    };
    let mut cur = seq.to_vec();
    while let Some(next) = round(&cur, &mut defs) {
        cur = next;
    }
    LoopNest {
        items: cur.iter().map(|&s| defs.node(s)).collect(),
    }
}
