//! The loop nest of every class: exact where the program repeats exactly, and with its time-step
//! loop folded into steps of a few kinds ([`mpiskel_compress::find_steps`]) where the exact
//! main loop is only a piece of it.
//!
//! A class's exact nest (greedy, Xu & Subhlok 2008, §3) is kept unless folding steps covers
//! clearly more of its time: the steps' span must hold at least half of the class's time and
//! half as much again as the exact main loop (time: the recorded computation, each call
//! counting as a microsecond besides, so that programs that compute nothing compare by calls).
//! The anchors tried are the shapes the exact main loop makes exactly once per iteration —
//! or, when every shape comes several times per iteration (a halo exchange sends the same way
//! in its forward and its reverse pass), the shortest runs of shapes it makes once —
//! collectives over every rank first (every class makes them at the same step).
//!
//! Steps are folded in every class or in none: the skeleton runs the same steps in every class,
//! so every class must have as many. When one class would fold and another cannot, or they find
//! different numbers of steps, every class keeps its exact nest.
//!
//! # Complexity
//! O(n) per class for the exact nest and the coverage, O(k · n) for the runs of k shapes, and
//! O(a · n) for `a` ≤ 8 anchors.

use std::collections::HashMap;

use mpiskel_compress::{find_steps, greedy, LoopNest, Sym};
use mpiskel_logicalize::LogicalTrace;

use crate::symbols::{symbolize_class, Symbolized};

/// Kinds of steps a time-step loop may have at most.
pub const MAX_KINDS: usize = 64;

/// What one call weighs besides its compute gap, seconds, when coverage is compared.
const CALL_WEIGHT_S: f64 = 1e-6;

/// The time of positions `r`: their compute gaps, and a microsecond per call.
fn weight(s: &Symbolized, r: std::ops::Range<usize>) -> f64 {
    s.gaps_s[r.clone()].iter().sum::<f64>() + r.len() as f64 * CALL_WEIGHT_S
}

/// The exact nest of a class (greedy, with its mean gaps).
fn exact_nest(s: &Symbolized) -> LoopNest {
    let mut nest = greedy(&s.symbols);
    nest.attach_weights(&s.gaps_s);
    nest
}

/// The span of positions of the exact nest's main loop.
fn main_span(nest: &LoopNest) -> Option<(usize, usize, u64)> {
    let i = mpiskel_compress::main_loop_index(&nest.items)?;
    let at: usize = nest.items[..i].iter().map(|n| n.expanded_len() as usize).sum();
    let main = &nest.items[i];
    Some((at, at + main.expanded_len() as usize, main.iterations()?))
}

/// A class's steps, if it has some: the fold and the nest with the steps in it.
struct Candidate {
    steps: usize,
    /// Whether the steps cover clearly more than the exact main loop.
    better: bool,
    nest: LoopNest,
}

fn candidate(s: &Symbolized, exact: &LoopNest) -> Option<Candidate> {
    let (a, b, count) = main_span(exact)?;
    if count < 2 {
        return None;
    }
    // Anchors: shapes made exactly once per iteration of the exact main loop, or else runs of
    // k shapes (k = 2, 3, 4, 6, 8), in order of first appearance, collectives over every rank
    // first (every class makes them at the same step).
    let mut fold = None;
    for k in [1usize, 2, 3, 4, 6, 8] {
        let marks: Vec<Sym> = if k == 1 {
            s.shapes.clone()
        } else {
            let mut ids: HashMap<&[Sym], Sym> = HashMap::new();
            (0..s.shapes.len())
                .map(|i| {
                    let next = ids.len() as Sym;
                    *ids.entry(&s.shapes[i..(i + k).min(s.shapes.len())]).or_insert(next)
                })
                .collect()
        };
        let mut seen: Vec<(Sym, u64, usize, Sym)> = Vec::new();
        let mut index = HashMap::new();
        for (i, &m) in marks[a..b].iter().enumerate() {
            let j = *index.entry(m).or_insert_with(|| {
                seen.push((m, 0, i, s.shapes[a + i]));
                seen.len() - 1
            });
            seen[j].1 += 1;
        }
        let mut anchors: Vec<(bool, usize, Sym)> = seen
            .iter()
            .filter(|(_, n, _, _)| *n == count)
            .map(|&(m, _, first, sh)| (!s.shape_is_world_collective[sh as usize], first, m))
            .collect();
        anchors.sort_unstable();
        let anchors: Vec<Sym> = anchors.into_iter().map(|(_, _, m)| m).collect();
        if anchors.is_empty() {
            continue;
        }
        fold = find_steps(&s.shapes, &marks, &anchors, MAX_KINDS);
        if fold.is_some() {
            break;
        }
    }
    let fold = fold?;
    let (total, main, steps) =
        (weight(s, 0..s.symbols.len()), weight(s, a..b), weight(s, fold.start..fold.end));
    let better = steps >= 0.5 * total && steps >= 1.5 * main;
    let mut items = greedy(&s.symbols[..fold.start]).items;
    items.push(fold.node(&s.shapes));
    items.extend(greedy(&s.symbols[fold.end..]).items);
    let mut nest = LoopNest { items };
    nest.attach_weights(&s.gaps_s);
    Some(Candidate { steps: fold.steps(), better, nest })
}

/// The loop nest of every class of `lt` (see the module documentation).
pub fn nests_of(lt: &LogicalTrace) -> Vec<LoopNest> {
    let symbolized: Vec<Symbolized> = lt.classes.iter().map(symbolize_class).collect();
    let exact: Vec<LoopNest> = symbolized.iter().map(exact_nest).collect();
    // Steps can cover half as much again as the main loop only where it holds less than two
    // thirds of the time: where no class is so, the exact nests stand.
    let loose = symbolized.iter().zip(&exact).any(|(s, e)| {
        main_span(e).is_some_and(|(a, b, _)| 1.5 * weight(s, a..b) < weight(s, 0..s.symbols.len()))
    });
    if !loose {
        return exact;
    }
    let candidates: Vec<Option<Candidate>> =
        symbolized.iter().zip(&exact).map(|(s, e)| candidate(s, e)).collect();
    let any_better = candidates.iter().flatten().any(|c| c.better);
    let steps = candidates.first().and_then(|c| c.as_ref().map(|c| c.steps));
    let agree = steps.is_some() && candidates.iter().all(|c| c.as_ref().map(|c| c.steps) == steps);
    if any_better && agree {
        candidates.into_iter().flatten().map(|c| c.nest).collect()
    } else {
        exact
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbolized(shapes: &[Sym], sizes: &[u32], gap: f64) -> Symbolized {
        // The exact symbol: shape and size together.
        let symbols = shapes.iter().zip(sizes).map(|(&a, &b)| a * 1000 + b).collect();
        let n = shapes.len();
        let top = shapes.iter().copied().max().unwrap_or(0) as usize + 1;
        Symbolized {
            symbols,
            gaps_s: vec![gap; n],
            legend: Vec::new(),
            shapes: shapes.to_vec(),
            shape_is_world_collective: vec![false; top],
        }
    }

    #[test]
    fn drifting_sizes_and_rebuilds_fold_into_steps() {
        // Steps `1 2 3` whose size drifts after every rebuild `1 2 4 4 3`, every fifth step.
        let (mut shapes, mut sizes) = (vec![9, 9], vec![0, 0]);
        for i in 0..40u32 {
            let step: &[Sym] = if i % 5 == 4 { &[1, 2, 4, 4, 3] } else { &[1, 2, 3] };
            shapes.extend(step);
            sizes.extend(step.iter().map(|_| i / 5));
        }
        shapes.push(9);
        sizes.push(0);
        let s = symbolized(&shapes, &sizes, 1e-3);
        let exact = exact_nest(&s);
        assert!(!exact.notation().starts_with('{'), "{}", exact.notation());
        let c = candidate(&s, &exact).expect("steps");
        assert!(c.better);
        assert_eq!(c.steps, 39);
        assert_eq!(c.nest.notation(), "(1)^2 + 2 + {3 ×31 | 3 + (1)^2 ×8}^39 + 2");
        assert_eq!(c.nest.report().input_len, shapes.len() as u64);
    }

    #[test]
    fn an_exact_loop_stays_exact() {
        let shapes: Vec<Sym> =
            [7].into_iter().chain((0..30).flat_map(|_| [1, 2, 3])).chain([8]).collect();
        let sizes = vec![5; shapes.len()];
        let s = symbolized(&shapes, &sizes, 1e-3);
        let exact = exact_nest(&s);
        assert_eq!(exact.notation(), "1 + (3)^30 + 1");
        assert!(!candidate(&s, &exact).is_some_and(|c| c.better));
    }
}
