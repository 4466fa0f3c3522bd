//! The warm-up iteration in a class's loop nest: the top-level nodes ending at most a few calls
//! before the main loop whose calls, expanded, are exactly those of one iteration of its body
//! (the body's parts guarded to the first or last iteration taken or left, since a loop of one
//! iteration is both). Lowering makes that stretch a phase of its own ([`super::WARMUP`]),
//! which [`mpiskel_cut::warmup`] lets the skeleton skip.
//!
//! # Complexity
//! O(n + L · w) for n top-level nodes, a body of L calls and the w candidate ends tried (at
//! most the calls allowed between the stretch and the loop).

use std::ops::Range;

use mpiskel_compress::{LoopNest, Node, Sym, When};

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
