//! Irregular time-step loops as steps of a few kinds.
//!
//! The time-step loop of a real code does not repeat exactly: message sizes drift as particles
//! migrate, and every so often a step does more (rebuilding neighbour lists, exchanging atoms,
//! writing output), at a fixed period or whenever the data asks for it. Exact loop discovery
//! ([`crate::greedy`]) then finds the loop only between two such steps — `(24)^19 + 36 +
//! (24)^10 + 14 + …` — and the longest of those pieces covers a sliver of the run. ScalaTrace 2
//! (Wu & Mueller 2011, §3) folds loop bodies that differ by a bounded amount; APPrime
//! (Zhang et al. 2015, §3) models the parameters that vary. Here the steps themselves are found:
//!
//! 1. The caller gives each call a *shape* symbol (its symbol without the sizes) and a few
//!    candidate *anchors*: shapes (or short runs of shapes) made exactly once per iteration of
//!    the loop the exact pass found.
//! 2. For each anchor, the span from its first to its last occurrence is cut at every
//!    occurrence into steps; steps with the same sequence of shapes are of one *kind*. After the
//!    last occurrence, a whole step of a kind already seen (the last iteration, which no
//!    occurrence ends) is one more step.
//! 3. The anchor giving the fewest kinds wins (ties: the longest span). Each kind's body is
//!    compressed on its own; the loop becomes [`Node::Steps`]: the kind of every step, in order,
//!    and each kind's body. Sizes, compute times and everything else that varies between steps of
//!    one kind are the per-position statistics of its leaves, as for any loop.
//!
//! A kind that occurs once (a second run's set-up between two runs) is a step like any other:
//! the skeleton runs it once. More than `max_kinds` kinds for every anchor: no fold.
//!
//! # Complexity
//! O(a · n) hash work for `a` anchors over `n` calls, plus the greedy pass over each kind's body.

use std::collections::HashMap;

use crate::greedy::greedy;
use crate::nest::{Node, Sym};

/// Anchors tried at most, in the caller's order.
const MAX_ANCHORS: usize = 8;

/// Steps found in a sequence of shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFold {
    /// First position of the first step.
    pub start: usize,
    /// Position after the last step.
    pub end: usize,
    /// The anchor shape every step begins with.
    pub anchor: Sym,
    /// The kind of each step.
    pub schedule: Vec<u32>,
    /// Each kind's first step: (position, length).
    pub kinds: Vec<(usize, usize)>,
}

impl StepFold {
    /// Number of steps.
    pub fn steps(&self) -> usize {
        self.schedule.len()
    }

    /// The position where step `i` begins.
    pub fn step_start(&self, i: usize) -> usize {
        self.start + self.schedule[..i].iter().map(|&k| self.kinds[k as usize].1).sum::<usize>()
    }

    /// The length of step `i`, in positions.
    pub fn step_len(&self, i: usize) -> usize {
        self.kinds[self.schedule[i] as usize].1
    }

    /// The fold without its first step, which is left before the steps: `None` where fewer
    /// than three steps would remain.
    pub fn without_first(&self) -> Option<StepFold> {
        (self.steps() > 3).then(|| {
            let start = self.start + self.step_len(0);
            self.renumbered(start, self.end, &self.schedule[1..])
        })
    }

    /// The fold without its last step, which is left after the steps: `None` where fewer than
    /// three steps would remain.
    pub fn without_last(&self) -> Option<StepFold> {
        (self.steps() > 3).then(|| {
            let n = self.steps();
            let end = self.end - self.step_len(n - 1);
            self.renumbered(self.start, end, &self.schedule[..n - 1])
        })
    }

    /// The fold of the steps `schedule` (kinds of this fold) from `start` to `end`, its kinds
    /// numbered anew in order of first appearance, as [`find_steps`] numbers them.
    fn renumbered(&self, start: usize, end: usize, schedule: &[u32]) -> StepFold {
        let mut new_of: HashMap<u32, u32> = HashMap::new();
        let (mut kinds, mut at) = (Vec::new(), start);
        let schedule = schedule
            .iter()
            .map(|&k| {
                let len = self.kinds[k as usize].1;
                let next = new_of.len() as u32;
                let id = *new_of.entry(k).or_insert_with(|| {
                    kinds.push((at, len));
                    next
                });
                at += len;
                id
            })
            .collect();
        StepFold { start, end, anchor: self.anchor, schedule, kinds }
    }

    /// The loop-nest node: each kind's body compressed (over the shapes) on its own.
    pub fn node(&self, shapes: &[Sym]) -> Node {
        let kinds =
            self.kinds.iter().map(|&(at, len)| greedy(&shapes[at..at + len]).items).collect();
        Node::Steps { schedule: self.schedule.clone(), kinds }
    }
}

/// Cuts `shapes` into steps at every occurrence of the best of `anchors` in `marks` (see the
/// module documentation; `marks` is `shapes` itself, or a symbol per position for the few
/// shapes that start there, when no single shape is made once per step). `None` when no
/// anchor gives at least three steps of at most `max_kinds` kinds. Anchors are compared by
/// kinds, then by the span their steps cover: of two rotations of one loop, the one whose
/// last iteration is whole covers one step more.
pub fn find_steps(
    shapes: &[Sym],
    marks: &[Sym],
    anchors: &[Sym],
    max_kinds: usize,
) -> Option<StepFold> {
    let mut best: Option<StepFold> = None;
    for &a in anchors.iter().take(MAX_ANCHORS) {
        let occ: Vec<usize> =
            marks.iter().enumerate().filter(|(_, &s)| s == a).map(|(i, _)| i).collect();
        if occ.len() < 4 {
            continue;
        }
        let mut index: HashMap<&[Sym], u32> = HashMap::new();
        let mut kinds = Vec::new();
        let mut schedule = Vec::with_capacity(occ.len() - 1);
        for w in occ.windows(2) {
            let seg = &shapes[w[0]..w[1]];
            let next = index.len() as u32;
            let k = *index.entry(seg).or_insert_with(|| {
                kinds.push((w[0], seg.len()));
                next
            });
            if index.len() > max_kinds {
                break;
            }
            schedule.push(k);
        }
        if index.len() > max_kinds {
            continue;
        }
        // The last step: from the last occurrence, no occurrence ends it; where the shapes after
        // it are a kind's (the program's last iteration, whole), it is a step of that kind.
        let last = occ[occ.len() - 1];
        let mut end = last;
        let whole = kinds.iter().position(|&(at, len)| {
            shapes.get(last..last + len).is_some_and(|seg| seg == &shapes[at..at + len])
        });
        if let Some(k) = whole {
            schedule.push(k as u32);
            end += kinds[k].1;
        }
        let fold = StepFold { start: occ[0], end, anchor: a, schedule, kinds };
        let better = best.as_ref().is_none_or(|b| {
            (fold.kinds.len(), std::cmp::Reverse(fold.end - fold.start))
                < (b.kinds.len(), std::cmp::Reverse(b.end - b.start))
        });
        if better {
            best = Some(fold);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nest::LoopNest;

    /// Steps `1 2 3` with a rebuild `1 2 9 9 3` every fourth step, after a set-up `7 7`.
    fn program(steps: usize) -> Vec<Sym> {
        let mut v = vec![7, 7];
        for i in 0..steps {
            if i % 4 == 3 {
                v.extend([1, 2, 9, 9, 3]);
            } else {
                v.extend([1, 2, 3]);
            }
        }
        v.push(8);
        v
    }

    #[test]
    fn a_rebuild_every_fourth_step_is_a_second_kind() {
        let s = program(12);
        // Anchor 2 splits as `2 3 1 | 2 9 9 3 1`, anchor 1 as `1 2 3 | 1 2 9 9 3`: two kinds
        // either way. After anchor 1's last occurrence comes a whole step (`1 2 9 9 3`, then the
        // tear-down), after anchor 2's only part of one (`2 9 9 3`): anchor 1 covers all twelve
        // steps and wins whatever the order given.
        assert_eq!(find_steps(&s, &s, &[2, 1], 8).unwrap().anchor, 1);
        let f = find_steps(&s, &s, &[1, 2], 8).unwrap();
        assert_eq!(f.anchor, 1);
        assert_eq!(f.kinds.len(), 2);
        assert_eq!(f.steps(), 12);
        assert_eq!(f.schedule, vec![0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!((f.start, f.end), (2, s.len() - 1));
        let node = f.node(&s);
        let nest = LoopNest { items: vec![node] };
        assert_eq!(nest.expand(), s[f.start..f.end].to_vec());
        assert_eq!(nest.notation(), "{3 ×9 | 2 + (1)^2 + 1 ×3}^12");
        // With the anchors of the same span, the first given wins: cut short of the last step,
        // anchor 2 and anchor 1 both cover the first eleven.
        let cut = &s[..s.len() - 3];
        assert_eq!(find_steps(cut, cut, &[2, 1], 8).unwrap().anchor, 2);
        assert_eq!(nest.leaf_of_position().len(), f.end - f.start);
    }

    #[test]
    fn too_many_kinds_or_too_few_steps_give_nothing() {
        let s: Vec<Sym> = (0..40).flat_map(|i| [1, 100 + i]).collect();
        assert_eq!(find_steps(&s, &s, &[1], 8), None);
        assert!(find_steps(&s, &s, &[1], 64).is_some());
        assert_eq!(find_steps(&[1, 2, 1, 2, 1], &[1, 2, 1, 2, 1], &[1], 8), None);
        assert_eq!(find_steps(&program(12), &program(12), &[5], 8), None);
    }

    #[test]
    fn a_first_or_last_step_of_its_own_is_left_out_and_the_kinds_renumbered() {
        // `9 9 1 7 7 | 1 2 | 1 2 | 1 2 3 | 1 2 | 1 5 5 5 | 1 0`: a long first step, a longer last.
        let s: Vec<Sym> = vec![9, 9, 1, 7, 7, 1, 2, 1, 2, 1, 2, 3, 1, 2, 1, 5, 5, 5, 1, 0];
        let f = find_steps(&s, &s, &[1], 8).unwrap();
        assert_eq!((f.start, f.end, f.steps()), (2, 18, 6));
        assert_eq!(f.schedule, vec![0, 1, 1, 2, 1, 3]);
        let first = f.without_first().unwrap();
        assert_eq!((first.start, first.end), (5, 18));
        assert_eq!(first.schedule, vec![0, 0, 1, 0, 2]);
        assert_eq!(first.kinds, vec![(5, 2), (9, 3), (14, 4)]);
        let both = first.without_last().unwrap();
        assert_eq!((both.start, both.end), (5, 14));
        assert_eq!(both.schedule, vec![0, 0, 1, 0]);
        assert_eq!(both.kinds, vec![(5, 2), (9, 3)]);
        assert_eq!((both.step_start(3), both.step_len(3)), (12, 2));
        // Three steps are the fewest a fold keeps.
        let three = both.without_first().unwrap();
        assert_eq!(three.without_last(), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Steps of drawn kinds (each the anchor and a drawn body) between a set-up and a
        /// tear-down: without its first or last step, a fold covers the same steps at the same
        /// positions, its kinds numbered anew in order of first appearance, each kind's first
        /// step where it now first runs, and its node expands to the positions it covers.
        #[test]
        fn a_fold_without_an_end_step_covers_the_others_where_they_were(
            bodies in proptest::collection::vec(proptest::collection::vec(2u32..6, 0..4), 1..5),
            picks in proptest::collection::vec(0usize..5, 4..30),
        ) {
            let mut s: Vec<Sym> = vec![9, 9];
            for &p in &picks {
                s.push(1);
                s.extend(&bodies[p % bodies.len()]);
            }
            s.extend([1, 0]);
            let f = find_steps(&s, &s, &[1], 64).unwrap();
            for (g, dropped) in [(f.without_first(), 0), (f.without_last(), f.steps() - 1)] {
                let g = g.unwrap();
                let kept: Vec<usize> = (0..f.steps()).filter(|&i| i != dropped).collect();
                proptest::prop_assert_eq!(g.steps(), kept.len());
                let mut first_seen = Vec::new();
                for (j, &i) in kept.iter().enumerate() {
                    proptest::prop_assert_eq!(g.step_start(j), f.step_start(i));
                    let (at, len) = (g.step_start(j), g.step_len(j));
                    proptest::prop_assert_eq!(&s[at..at + len], &s[f.step_start(i)..f.step_start(i) + f.step_len(i)]);
                    let k = g.schedule[j] as usize;
                    if k == first_seen.len() {
                        first_seen.push(at);
                    }
                    proptest::prop_assert!(k < first_seen.len(), "kinds numbered by first appearance");
                    proptest::prop_assert_eq!(g.kinds[k].0, first_seen[k]);
                }
                proptest::prop_assert_eq!(g.kinds.len(), first_seen.len());
                proptest::prop_assert_eq!(g.end, g.step_start(g.steps() - 1) + g.step_len(g.steps() - 1));
                proptest::prop_assert_eq!(g.node(&s).expanded_len() as usize, g.end - g.start);
            }
        }
    }

    #[test]
    fn leaves_of_a_kind_share_their_statistics() {
        let s = program(8);
        let f = find_steps(&s, &s, &[1], 8).unwrap();
        let mut nest = LoopNest { items: vec![f.node(&s)] };
        let n = f.end - f.start;
        let weights: Vec<f64> = (0..n).map(|i| i as f64).collect();
        nest.attach_weights(&weights);
        let Node::Steps { kinds, .. } = &nest.items[0] else { panic!("not steps") };
        // Kind 0 `1 2 3` runs in steps 0, 1, 2, 4, 5, 6: its first leaf stands for positions
        // 0, 3, 6, 14, 17, 20.
        let Node::Sym { stats: Some(st), .. } = &kinds[0][0] else { panic!("not a leaf") };
        assert_eq!(st.n, 6);
        assert!((st.mean - 60.0 / 6.0).abs() < 1e-9);
    }
}
