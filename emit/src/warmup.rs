//! An untimed warm-up iteration: a stretch of the program before the main loop that makes
//! exactly the calls of one iteration of it.
//!
//! Benchmarks and solvers often run their time step once before the timed loop (to touch
//! memory, to fill caches, to check the set-up): NPB BT and SP call `adi` once, LU `ssor(1)`,
//! MG one V-cycle, then re-initialise and start the loop. The loop nest cannot fold that
//! iteration into the loop, because the re-initialisation (a barrier, a norm, fresh boundary
//! values) stands between them; left as it is, the set-up holds a whole iteration of the main
//! loop, which a skeleton then runs whole however far it cuts the loop (BT S on 16 ranks: 1.6 %
//! of the run in the warm-up alone, against a target of 4.2 % for the whole skeleton).
//!
//! [`find`] looks for that stretch: the top-level nodes ending at most a few calls before the
//! main loop whose calls, expanded, are exactly those of one iteration of its body (the body's
//! parts guarded to the first or last iteration taken or left, since a loop of one iteration is
//! both). The pipeline then lets the skeleton skip it, pricing it as one more iteration of the
//! main loop and keeping the computation it had beyond one ([`crate::scale`]); the calls
//! between it and the loop still run.
//!
//! # Complexity
//! O(n + L · w) for n top-level nodes, a body of L calls and the w candidate ends tried (at
//! most the calls allowed between the stretch and the loop).

use std::ops::Range;

use mpiskel_compress::{LoopNest, Node, Sym, When};

use crate::program::{calls_in, compute_of, ClassProgram, Skeleton, Stmt, WARMUP};

/// The most calls allowed between the warm-up iteration and the main loop, for a body of
/// `len` calls: half an iteration, and at least a few (a barrier and a norm).
fn max_between(len: usize) -> usize {
    (len / 2).max(4)
}

/// One iteration of `body` as symbols, with its first-iteration and last-iteration parts
/// included as `first` and `last` say; inner loops expand as they ran.
fn iteration(body: &[Node], first: bool, last: bool) -> Vec<Sym> {
    let mut out = Vec::new();
    for n in body {
        match n {
            Node::Guard { when, body } => {
                if (*when == When::First && first) || (*when == When::Last && last) {
                    out.extend(LoopNest { items: body.clone() }.expand());
                }
            }
            other => out.extend(LoopNest { items: vec![other.clone()] }.expand()),
        }
    }
    out
}

/// The top-level nodes `items[s..e]` that make the calls of one iteration of the main loop
/// `items[main]`, the nearest to it with at most [`max_between`] calls between; `None` where
/// there is none (or the main loop is not a plain loop).
pub fn find(items: &[Node], main: usize) -> Option<Range<usize>> {
    let Some(Node::Loop { body, .. }) = items.get(main) else { return None };
    let guarded = body.iter().any(|n| matches!(n, Node::Guard { .. }));
    let variants: &[(bool, bool)] = if guarded {
        &[(false, false), (true, true), (true, false), (false, true)]
    } else {
        &[(false, false)]
    };
    // Calls before each top-level node: prefix[i] = calls of items[..i].
    let mut prefix = Vec::with_capacity(main + 1);
    let mut at = 0u64;
    for n in &items[..main] {
        prefix.push(at);
        at += n.expanded_len();
    }
    prefix.push(at);
    for &(first, last) in variants {
        let want = iteration(body, first, last);
        if want.is_empty() {
            continue;
        }
        let len = want.len() as u64;
        let limit = max_between(want.len()) as u64;
        // Candidate ends, nearest the loop first.
        for e in (0..=main).rev() {
            if prefix[main] - prefix[e] > limit {
                break;
            }
            let Some(start_calls) = prefix[e].checked_sub(len) else { break };
            let Ok(s) = prefix[..=e].binary_search(&start_calls) else { continue };
            // Equal prefixes mean empty nodes between: take the latest start.
            let s = (s..e).rev().find(|&i| prefix[i] == start_calls).unwrap_or(s);
            if (LoopNest { items: items[s..e].to_vec() }).expand() == want {
                return Some(s..e);
            }
        }
    }
    None
}

/// Skips the warm-up phase ([`WARMUP`]) of every class, where every class has one: its body
/// keeps only the computation it had beyond one iteration of the main loop (the set-up's last
/// block usually runs into it), and the main loop prices it as one more iteration. Returns
/// whether it did. [`restore`] undoes it.
pub fn skip(skel: &mut Skeleton) -> bool {
    let has = |c: &ClassProgram| {
        c.main_loop_index().is_some()
            && c.phases.iter().any(|p| p.name == WARMUP && p.skipped.is_none())
    };
    if skel.classes.is_empty() || !skel.classes.iter().all(has) {
        return false;
    }
    for c in &mut skel.classes {
        let Some(m) = c.main_loop_index() else { continue };
        let per_iteration = compute_of(&c.phases[m].body);
        c.phases[m].warmup += 1;
        let Some(w) = c.phases.iter_mut().find(|p| p.name == WARMUP) else { continue };
        let beyond = (compute_of(&w.body) - per_iteration).max(0.0);
        let body = if beyond > 0.0 { vec![Stmt::block(beyond)] } else { Vec::new() };
        w.skipped = Some(std::mem::replace(&mut w.body, body));
        w.compute_s = beyond;
        w.calls = 0;
    }
    true
}

/// Undoes [`skip`] in class `c`: its warm-up phase runs its calls again, and its main loop
/// prices no warm-up.
pub fn restore(c: &mut ClassProgram) {
    let mut restored = false;
    for p in c.phases.iter_mut().filter(|p| p.name == WARMUP) {
        if let Some(body) = p.skipped.take() {
            p.compute_s = compute_of(&body);
            p.calls = calls_in(&body);
            p.body = body;
            restored = true;
        }
    }
    if restored {
        if let Some(m) = c.main_loop_index() {
            c.phases[m].warmup = c.phases[m].warmup.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(s: Sym) -> Node {
        Node::Sym { sym: s, stats: None }
    }

    fn lp(count: u64, body: Vec<Node>) -> Node {
        Node::Loop { count, body }
    }

    #[test]
    fn finds_the_iteration_before_a_barrier() {
        // 9 + 1 2 (3)^2 + 8 + (1 2 (3)^2)^5
        let body = vec![sym(1), sym(2), lp(2, vec![sym(3)])];
        let items = vec![sym(9), sym(1), sym(2), lp(2, vec![sym(3)]), sym(8), lp(5, body)];
        assert_eq!(find(&items, 5), Some(1..4));
    }

    #[test]
    fn matches_calls_not_nodes() {
        // The warm-up's inner loop was not folded: 1 2 3 3 + 8 + (1 2 (3)^2)^5.
        let body = vec![sym(1), sym(2), lp(2, vec![sym(3)])];
        let items = vec![sym(1), sym(2), sym(3), sym(3), sym(8), lp(5, body)];
        assert_eq!(find(&items, 5), Some(0..4));
    }

    #[test]
    fn takes_the_last_iterations_part_of_a_one_iteration_loop() {
        // LU: the warm-up is the last iteration of its own loop, so it has the guarded norm.
        let body = vec![sym(1), Node::Guard { when: When::Last, body: vec![sym(7)] }, sym(2)];
        let items = vec![sym(1), sym(7), sym(2), sym(8), sym(8), lp(4, body)];
        assert_eq!(find(&items, 5), Some(0..3));
    }

    #[test]
    fn refuses_what_differs_or_lies_too_far() {
        let body = vec![sym(1), sym(2)];
        // Differs.
        let items = vec![sym(1), sym(3), sym(8), lp(5, body.clone())];
        assert_eq!(find(&items, 3), None);
        // Five calls between the stretch and the loop, for a body of two: too far.
        let mut items = vec![sym(1), sym(2)];
        items.extend((0..5).map(|_| sym(8)));
        items.push(lp(5, body.clone()));
        assert_eq!(find(&items, 7), None);
        // Straddling a node: the stretch must begin at a node.
        let items = vec![lp(2, vec![sym(2), sym(1)]), sym(2), lp(5, body)];
        assert_eq!(find(&items, 2), None);
    }
}
