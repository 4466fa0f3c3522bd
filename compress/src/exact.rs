//! Exact loop discovery for small inputs: the quality baseline the greedy pass is measured
//! against (Xu & Subhlok 2008, §3, "optimal" column of Table 3).
//!
//! The objective is Xu & Subhlok's: first the largest span of the input covered by loops, then the
//! shortest program ([`Node::program_len`]). Dynamic programming over prefixes: the best program
//! for `s[..t)` ends either with a plain symbol or with a loop `(s[t-kp .. t-kp+p))^k` inside a
//! run of primitive period `p`; a loop body is itself compressed optimally for program length
//! (its coverage does not change the span covered at the top), memoized by content.
//!
//! # Complexity
//! O(n²) to find the runs, plus, for every position `t` and every run containing it, one
//! candidate per iteration count: O(n² / p_min) candidates in the worst case, each with a
//! memoized body. Meant for inputs of a few thousand symbols.

use std::collections::HashMap;

use crate::nest::{LoopNest, Node, Sym};
use crate::runs::{runs_naive, Run};

#[derive(Clone, Copy)]
enum Step {
    Plain,
    Loop { start: usize, period: usize, count: usize },
}

#[derive(Clone)]
struct Solution {
    len: usize,
    nodes: Vec<Node>,
}

/// Compresses `seq` exactly (maximum span covered, then shortest program).
pub fn exact(seq: &[Sym]) -> LoopNest {
    let mut memo = HashMap::new();
    LoopNest { items: solve(seq, true, &mut memo).nodes }
}

/// Only runs whose period is primitive: a run of period p that is also a run of a divisor of p
/// adds nothing (the divisor's loop covers at least as much with a shorter body).
fn primitive_runs(s: &[Sym]) -> Vec<Run> {
    let all = runs_naive(s);
    all.iter()
        .filter(|r| {
            !all.iter().any(|q| {
                q.period < r.period
                    && r.period % q.period == 0
                    && q.start <= r.start
                    && r.end <= q.end
            })
        })
        .copied()
        .collect()
}

fn solve(
    s: &[Sym],
    coverage_first: bool,
    memo: &mut HashMap<(Vec<Sym>, bool), Solution>,
) -> Solution {
    if let Some(sol) = memo.get(&(s.to_vec(), coverage_first)) {
        return sol.clone();
    }
    let n = s.len();
    let found = primitive_runs(s);
    // ends[t]: runs that can end a loop at t.
    let mut ends: Vec<Vec<Run>> = vec![Vec::new(); n + 1];
    for r in &found {
        for e in &mut ends[r.start + 2 * r.period..=r.end] {
            e.push(*r);
        }
    }
    // best[t] = (covered, len) of the best program for s[..t)
    let mut best: Vec<(usize, usize)> = vec![(0, 0); n + 1];
    let mut step: Vec<Step> = vec![Step::Plain; n + 1];
    let better = |a: (usize, usize), b: (usize, usize)| {
        if coverage_first {
            a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
        } else {
            a.1 < b.1 || (a.1 == b.1 && a.0 > b.0)
        }
    };
    let mut body_len: HashMap<(usize, usize), usize> = HashMap::new();
    for t in 1..=n {
        best[t] = (best[t - 1].0, best[t - 1].1 + 1);
        step[t] = Step::Plain;
        for r in &ends[t] {
            let p = r.period;
            for k in 2..=(t - r.start) / p {
                let start = t - k * p;
                let bl = match body_len.get(&(start, p)) {
                    Some(&l) => l,
                    None => {
                        let l = solve(&s[start..start + p], false, memo).len;
                        body_len.insert((start, p), l);
                        l
                    }
                };
                let cand = (best[start].0 + k * p, best[start].1 + 1 + bl);
                if better(cand, best[t]) {
                    best[t] = cand;
                    step[t] = Step::Loop { start, period: p, count: k };
                }
            }
        }
    }
    // Rebuild.
    let mut nodes = Vec::new();
    let mut t = n;
    while t > 0 {
        match step[t] {
            Step::Plain => {
                nodes.push(Node::Sym { sym: s[t - 1], stats: None });
                t -= 1;
            }
            Step::Loop { start, period, count } => {
                let body = solve(&s[start..start + period], false, memo).nodes;
                nodes.push(Node::Loop { count: count as u64, body });
                t = start;
            }
        }
    }
    nodes.reverse();
    let sol = Solution { len: best[n].1, nodes };
    memo.insert((s.to_vec(), coverage_first), sol.clone());
    sol
}
