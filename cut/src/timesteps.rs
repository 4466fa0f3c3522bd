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
//! in its forward and its reverse pass), runs of shapes it makes once, of every length tried,
//! the fold with the fewest kinds and then the longest span kept — collectives over every rank
//! first (every class makes them at the same step), then those met first in the program: the
//! loop found may begin part-way into an iteration (HPL-style panels that shrink every step:
//! their first, largest panel left before it), and the steps begin at their anchor's first
//! occurrence. A second fold
//! takes anchors made a whole number of times per iteration: where the exact main loop is the
//! span between two rebuilds of a particle code (the same number of plain steps twice in a
//! row), its steps are the spans between rebuilds — one kind per number of plain steps in
//! them (LAMMPS flow: 46 kinds) — while the time steps themselves are of a few kinds (plain,
//! rebuild, output). Of the folds that every class makes with the same number of steps, the
//! one with the fewest kinds in all wins, among those whose steps take at most a twelfth of
//! each class's time (a fold into the intervals between outputs is of one kind, but one
//! interval can be more than a skeleton may run).
//!
//! Steps are folded in every class or in none: the skeleton runs the same steps in every class,
//! so every class must have as many. When one class would fold and another cannot, or they find
//! different numbers of steps, every class keeps its exact nest.
//!
//! # Complexity
//! O(n) per class for the exact nest and the coverage, O(k · n) for the runs of k shapes, and
//! O(a · n) for `a` ≤ 8 anchors.

use std::collections::HashMap;

use mpiskel_compress::{find_steps, greedy, LoopNest, Node, StepFold, Sym};
use mpiskel_logicalize::LogicalTrace;

use mpiskel_program::symbols::{symbolize_class, Symbolized};

/// Kinds of steps a time-step loop may have at most.
pub const MAX_KINDS: usize = 64;

/// What one call weighs besides its compute gap, seconds, when coverage is compared.
const CALL_WEIGHT_S: f64 = 1e-6;

/// The time of positions `r`: their compute gaps, and a microsecond per call.
fn weight(s: &Symbolized, r: std::ops::Range<usize>) -> f64 {
    s.gaps_s[r.clone()].iter().sum::<f64>() + r.len() as f64 * CALL_WEIGHT_S
}

/// The exact nest of a class (greedy, with its mean gaps).
///
/// Where stretches were cut short (`mpiskel_trace::stretch`), the program is folded in pieces
/// between their ends (`bounds`, ascending positions), so that no loop runs across one: the
/// part of a stretch that the skeleton runs is timed on its own.
fn exact_nest(s: &Symbolized, bounds: &[usize]) -> LoopNest {
    let mut nest = if bounds.is_empty() {
        greedy(&s.symbols)
    } else {
        let mut items = Vec::new();
        let mut from = 0;
        for &to in bounds.iter().chain([&s.symbols.len()]) {
            let to = to.min(s.symbols.len());
            if to > from {
                items.extend(greedy(&s.symbols[from..to]).items);
            }
            from = from.max(to);
        }
        LoopNest { items }
    };
    nest.attach_weights(&s.gaps_s);
    nest
}

/// The positions of `class`'s program where a stretch cut short begins or ends, ascending.
fn stretch_bounds(lt: &LogicalTrace, class: &mpiskel_logicalize::ProcessClass) -> Vec<usize> {
    let mut b: Vec<usize> = lt
        .stretches
        .iter()
        .filter_map(|s| mpiskel_program::stretch_parts(class, s))
        .flatten()
        .flat_map(|(a, b, _)| [a as usize, b as usize])
        .collect();
    b.sort_unstable();
    b.dedup();
    b
}

/// Whether no top-level node of `nest` runs across one of `bounds`.
fn respects(nest: &LoopNest, bounds: &[usize]) -> bool {
    let mut at = 0usize;
    nest.items.iter().all(|n| {
        let len = n.expanded_len() as usize;
        let ok = !bounds.iter().any(|&b| at < b && b < at + len);
        at += len;
        ok
    })
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
    kinds: usize,
    /// Whether the steps cover clearly more than the exact main loop.
    better: bool,
    /// Whether a step takes at most a twelfth of the class's time on average: one step of a
    /// fold whose steps are longer is more than a skeleton of a twelfth may run.
    short: bool,
    /// The fold the nest holds.
    fold: StepFold,
    nest: LoopNest,
}

/// Finer folds tried at most per class (one per number of anchors per main-loop iteration).
const MAX_FINE: usize = 4;

/// The anchors of one granularity: marks made `per` times in each of the `count` iterations of
/// the exact main loop, collectives over every rank first (every class makes them at the same
/// step), then by first appearance in the whole program (`first`): the steps begin at an
/// anchor's first occurrence, so the anchors met first are the rotations of the loop that
/// cover the most of it (the loop found may start part-way into an iteration).
fn anchors_made(
    seen: &[(Sym, u64, usize, Sym)],
    first: &HashMap<Sym, usize>,
    s: &Symbolized,
    count: u64,
    per: u64,
) -> Vec<Sym> {
    let mut anchors: Vec<(bool, usize, usize, Sym)> = seen
        .iter()
        .filter(|(_, n, _, _)| *n == count * per)
        .map(|&(m, _, at, sh)| {
            let world = s.shape_is_world_collective[sh as usize];
            (!world, first.get(&m).copied().unwrap_or(at), at, m)
        })
        .collect();
    anchors.sort_unstable();
    anchors.into_iter().map(|(_, _, _, m)| m).collect()
}

/// The folds into steps whose anchors come from the loop over positions `a..b` of `count`
/// iterations: at most one made once per iteration (the span between two rebuilds of a particle
/// code, say), and up to [`MAX_FINE`] made several times per iteration (each time step of that
/// span, or pieces of one).
fn folds_from(s: &Symbolized, (a, b, count): (usize, usize, u64)) -> Vec<StepFold> {
    if count < 2 {
        return Vec::new();
    }
    // Anchors: shapes made a whole number of times per iteration of the loop, or else runs of k
    // shapes (k = 2, 3, 4, 6, 8), in order of first appearance.
    let mut coarse = None;
    let mut fine: Vec<StepFold> = Vec::new();
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
        let mut first: HashMap<Sym, usize> = HashMap::new();
        for (i, &m) in marks.iter().enumerate() {
            first.entry(m).or_insert(i);
        }
        let mut seen: Vec<(Sym, u64, usize, Sym)> = Vec::new();
        let mut index = HashMap::new();
        for (i, &m) in marks[a..b].iter().enumerate() {
            let j = *index.entry(m).or_insert_with(|| {
                seen.push((m, 0, i, s.shapes[a + i]));
                seen.len() - 1
            });
            seen[j].1 += 1;
        }
        // Runs of more shapes can start the steps where runs of fewer cannot (the first call
        // of an iteration, whose shape recurs inside it): of all, the fold with the fewest
        // kinds, then the longest span, then the shortest runs.
        let anchors = anchors_made(&seen, &first, s, count, 1);
        if !anchors.is_empty() {
            if let Some(f) = find_steps(&s.shapes, &marks, &anchors, MAX_KINDS) {
                let key = |f: &StepFold| (f.kinds.len(), std::cmp::Reverse(f.end - f.start));
                if coarse.as_ref().is_none_or(|c| key(&f) < key(c)) {
                    coarse = Some(f);
                }
            }
        }
        let per: std::collections::BTreeSet<u64> = seen
            .iter()
            .filter(|(_, n, _, _)| *n > count && n % count == 0)
            .map(|(_, n, _, _)| n / count)
            .collect();
        for p in per {
            if fine.len() >= MAX_FINE {
                break;
            }
            let taken = |f: &StepFold| fine.iter().chain(&coarse).any(|g| g.steps() == f.steps());
            let fold =
                find_steps(&s.shapes, &marks, &anchors_made(&seen, &first, s, count, p), MAX_KINDS);
            if let Some(f) = fold.filter(|f| !taken(f)) {
                fine.push(f);
            }
        }
    }
    coarse.into_iter().chain(fine).collect()
}

/// A class's folds into steps, the caller picks one that every class shares. Anchors come from
/// the exact main loop, and — where the shapes (calls without their sizes) repeat in a longer
/// loop than the calls themselves, as when every step's sizes differ (the panels of an LU
/// factorization shrink every step) — from the main loop over the shapes; with `world`, also
/// the fold anchored on the collectives over every rank ([`world_folds`]).
fn candidates(s: &Symbolized, exact: &LoopNest, world: World) -> Vec<Candidate> {
    let exact_span = main_span(exact);
    let by_shape = main_span(&greedy(&s.shapes))
        .filter(|&(a, b, _)| exact_span.is_none_or(|(c, d, _)| b - a > d - c));
    let mut folds = exact_span.map(|span| folds_from(s, span)).unwrap_or_default();
    for fold in by_shape.map(|span| folds_from(s, span)).unwrap_or_default() {
        if !folds.iter().any(|f| f.steps() == fold.steps()) {
            folds.push(fold);
        }
    }
    let main = exact_span.map_or(0.0, |(a, b, _)| weight(s, a..b));
    let main_count = exact_span.map_or(0, |(_, _, count)| count);
    let pair = main_count == 2 && irregular_body(exact);
    let total = weight(s, 0..s.symbols.len());
    if world != World::None {
        let all = world_folds(s);
        let take = if world == World::First { all.len().min(1) } else { all.len() };
        for f in all.into_iter().take(take) {
            if !folds.iter().any(|g| g.steps() == f.steps()) {
                folds.push(f);
            }
        }
    }
    folds
        .into_iter()
        .map(|fold| {
            // The compute before the first anchor is the set-up's, not the first step's (NPB
            // EP: one long computation, then three reductions alike, which are no loop).
            let steps = weight(s, fold.start..fold.end) - s.gaps_s[fold.start];
            // Worth trying: the steps hold most of the time, and clearly more than the exact main
            // loop, or that loop is two copies of a long irregular stretch (which cannot be cut
            // below half) and the steps are more. (Steps that split a regular loop's iterations
            // predict worse than its iterations do: run apart, they lose the overlap between
            // neighbouring steps; NPB BT S 16 +3.5 % against +0.3 %.)
            let better = steps >= 0.5 * total && (steps >= 1.5 * main || pair && fold.steps() > 2);
            let short = 12.0 * steps <= total * fold.steps() as f64;
            let nest = folded_nest(s, &fold);
            Candidate { steps: fold.steps(), kinds: fold.kinds.len(), better, short, fold, nest }
        })
        .collect()
}

/// The nest of a class whose program folds into `fold`: the calls before and after the steps
/// in their exact nests, the steps between them.
fn folded_nest(s: &Symbolized, fold: &StepFold) -> LoopNest {
    let mut items = greedy(&s.symbols[..fold.start]).items;
    items.push(fold.node(&s.shapes));
    items.extend(greedy(&s.symbols[fold.end..]).items);
    let mut nest = LoopNest { items };
    nest.attach_weights(&s.gaps_s);
    nest
}

/// Which folds anchored on the collectives over every rank ([`world_folds`]) a class offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum World {
    /// None.
    None,
    /// The first: the most frequent collective's that folds the class.
    First,
    /// All of them.
    All,
}

/// Kinds of steps a fold anchored on a collective over every rank may have at most (the
/// kind table is a byte per step).
pub const MAX_WORLD_KINDS: usize = 256;

/// Collectives over every rank that a fold is anchored on ([`world_folds`]) are made at least
/// this many times.
const MIN_WORLD_STEPS: usize = 8;

/// The folds anchored on the collectives over every rank, those the class makes most often
/// first, of those (made at least [`MIN_WORLD_STEPS`] times) that cut the program into at most
/// [`MAX_WORLD_KINDS`] kinds of steps: the finest steps are the time steps, where a rarer
/// collective (one made at set-up and at each output) makes a step of the whole run. For a code
/// whose steps differ in their partners as well as their sizes, the classes' loops give anchors
/// that fold each class into its own number of steps: no loop of whole steps repeats (LAMMPS
/// with `fix balance … rcb` and tiled communication, where the cuts between the ranks' boxes
/// move with the atoms: exact main loops of five to seven iterations of a sliver, folds into
/// 514 to 5,832 steps). Every class makes the collectives over every rank at the same steps,
/// but not every anchor folds every class within the kinds allowed: all folds are returned,
/// and the caller keeps those every class shares (CP2K: the most frequent collective folds
/// one class into 7,772 steps of 199 kinds and the others into more than 256 kinds; the next
/// folds every class into 2,764 steps).
fn world_folds(s: &Symbolized) -> Vec<StepFold> {
    let mut made: HashMap<Sym, (usize, usize)> = HashMap::new();
    for (i, &sh) in s.shapes.iter().enumerate() {
        if s.shape_is_world_collective[sh as usize] {
            made.entry(sh).or_insert((0, i)).0 += 1;
        }
    }
    let mut anchors: Vec<(std::cmp::Reverse<usize>, usize, Sym)> = made
        .into_iter()
        .filter(|(_, (n, _))| *n >= MIN_WORLD_STEPS)
        .map(|(sh, (n, first))| (std::cmp::Reverse(n), first, sh))
        .collect();
    anchors.sort_unstable();
    anchors
        .into_iter()
        .filter_map(|(_, _, a)| find_steps(&s.shapes, &s.shapes, &[a], MAX_WORLD_KINDS))
        .collect()
}

/// Whether the main loop's body is no loop itself: its largest inner loop holds less than half
/// of its calls (a time-step stretch broken at every rebuild, `10 + (5)^10 + 10 + (5)^6 + 1 + …`,
/// against a sweep of a few long iterations, `(12)^5 + 1`).
fn irregular_body(nest: &LoopNest) -> bool {
    let Some(Node::Loop { body, .. }) = nest.main_loop() else { return false };
    let all: u64 = body.iter().map(Node::expanded_len).sum();
    let largest = body
        .iter()
        .filter(|n| n.iterations().is_some_and(|c| c > 1))
        .map(Node::expanded_len)
        .max()
        .unwrap_or(0);
    2 * largest < all
}

/// The loop nest of every class of `lt` (see the module documentation): the first of
/// [`nest_choices`].
pub fn nests_of(lt: &LogicalTrace) -> Vec<LoopNest> {
    nest_choices(lt).swap_remove(0)
}

/// The loop nests of every class of `lt`, best first: folds into steps that every class shares,
/// those of short steps first and the fewest kinds in all first among them ([`choose`]), then
/// the exact nests. The skeleton takes the first whose main
/// loop it can cut: steps that split a time step (an anchor made twice in it) may leave a
/// class's messages in a step the others do not run.
pub fn nest_choices(lt: &LogicalTrace) -> Vec<Vec<LoopNest>> {
    let symbolized: Vec<Symbolized> = lt.classes.iter().map(symbolize_class).collect();
    let bounds: Vec<Vec<usize>> = lt.classes.iter().map(|c| stretch_bounds(lt, c)).collect();
    let exact: Vec<LoopNest> =
        symbolized.iter().zip(&bounds).map(|(s, b)| exact_nest(s, b)).collect();
    // Steps can cover half as much again as the main loop only where it holds less than two
    // thirds of the time: where no class is so, the exact nests come first.
    let loose = symbolized.iter().zip(&exact).any(|(s, e)| {
        let main = main_span(e).map_or(0.0, |(a, b, _)| weight(s, a..b));
        1.5 * main < weight(s, 0..s.symbols.len())
    });
    let folds_of = |world: World| -> Vec<Vec<LoopNest>> {
        let per_class: Vec<Vec<Candidate>> =
            symbolized.iter().zip(&exact).map(|(s, e)| candidates(s, e, world)).collect();
        choose(per_class)
            .into_iter()
            .map(|chosen| peel_ends(&symbolized, chosen))
            .filter(|nests| nests.iter().zip(&bounds).all(|(n, b)| respects(n, b)))
            .collect()
    };
    // Where the classes share no fold of the anchors their loops give, the collectives over
    // every rank, which every class makes at the same steps, anchor one: the most frequent
    // that folds each class, or else any that folds every class.
    let mut folds = folds_of(World::None);
    for w in [World::First, World::All] {
        if folds.is_empty() {
            folds = folds_of(w);
        }
    }
    if loose {
        folds.into_iter().chain([exact]).collect()
    } else {
        // The exact nests first; folds after them where a class's exact main loop is two copies
        // of a long irregular stretch (see `candidates`).
        [exact].into_iter().chain(folds).collect()
    }
}

/// The distinct shapes (calls without their sizes) step `i` of `f` makes.
fn shapes_of(s: &Symbolized, f: &StepFold, i: usize) -> std::collections::BTreeSet<Sym> {
    let at = f.step_start(i).min(s.shapes.len());
    s.shapes[at..(at + f.step_len(i)).min(s.shapes.len())].iter().copied().collect()
}

/// Where the first step of a fold is a kind of its own, makes calls of shapes no other step makes
/// all of (alone), holds more than a twelfth of its class's
/// time and more than twice as much as the fold's other steps on average, in some class, it is
/// left before the steps in every class, and likewise the last step after them: such a step is
/// the set-up (finish) that happens to begin with the anchor (ABINIT: the first of 114 steps is
/// the wave functions' set-up, 3.0 of 6.1 s, and the output steps follow). As a step, it would
/// run whole in any skeleton (one step of every kind, or of every family, runs), and one step
/// over a twelfth is more than the whole skeleton may take; as set-up, its compute blocks can be
/// cut ([`crate::compute_cut`]). A first step whose calls other steps make too is a step like
/// them, only longer: it stays, whether another step is of its kind (the first and largest
/// panel of an LU factorization) or only makes the same shapes of calls (an SCF code's first
/// iteration, which runs more solver iterations than the later ones). Each
/// class's chosen fold and nest come in; the nests go out.
///
/// # Complexity
/// O(steps + positions × log shapes) per class.
fn peel_ends(symbolized: &[Symbolized], chosen: Vec<(StepFold, LoopNest)>) -> Vec<LoopNest> {
    // The time of step `i` of `f`: its calls and the compute between them, and the compute
    // before the next step's anchor (that before its own anchor is the previous step's).
    let heavy = |s: &Symbolized, f: &StepFold, i: usize| {
        let k = f.schedule[i];
        let alone = f.schedule.iter().filter(|&&x| x == k).count() == 1 && {
            let mine = shapes_of(s, f, i);
            !(0..f.steps()).any(|j| j != i && shapes_of(s, f, j) == mine)
        };
        let at = f.step_start(i);
        let end = (at + f.step_len(i) + 1).min(s.symbols.len());
        let step = weight(s, at + 1..end);
        let all_steps = weight(s, f.start + 1..(f.end + 1).min(s.symbols.len()));
        let others = (all_steps - step) / (f.steps() - 1).max(1) as f64;
        alone && 12.0 * step > weight(s, 0..s.symbols.len()) && step > 2.0 * others
    };
    let any = |f: &dyn Fn(&Symbolized, &StepFold) -> bool| {
        symbolized.iter().zip(&chosen).any(|(s, (fold, _))| f(s, fold))
    };
    let first = any(&|s, f| heavy(s, f, 0));
    let last = any(&|s, f| heavy(s, f, f.steps() - 1));
    if !first && !last {
        return chosen.into_iter().map(|(_, nest)| nest).collect();
    }
    let peeled = |f: &StepFold| {
        let f = if first { f.without_first()? } else { f.clone() };
        if last {
            f.without_last()
        } else {
            Some(f)
        }
    };
    let folds: Option<Vec<StepFold>> = chosen.iter().map(|(f, _)| peeled(f)).collect();
    match folds {
        Some(folds) => symbolized.iter().zip(&folds).map(|(s, f)| folded_nest(s, f)).collect(),
        None => chosen.into_iter().map(|(_, nest)| nest).collect(),
    }
}

/// The numbers of steps every class folds into, where one class's steps cover clearly more than
/// its exact main loop, the fewest kinds in all first: each class's fold and nest with those
/// steps. Folds whose steps take more than a twelfth of a class's time each come after the
/// others whatever their kinds: LAMMPS melt run for 50,000 steps with output every 5,000 folds
/// into 9 output intervals of one kind and into 50,000 time steps of three (plain, rebuild,
/// output), and one interval, 11 % of the run, is more than a skeleton of a twelfth can run.
fn choose(mut per_class: Vec<Vec<Candidate>>) -> Vec<Vec<(StepFold, LoopNest)>> {
    let mut options: Vec<((bool, usize), Vec<usize>)> = per_class
        .first()
        .into_iter()
        .flatten()
        .map(|c| c.steps)
        .filter_map(|steps| {
            let picks: Vec<usize> = per_class
                .iter()
                .map(|cs| cs.iter().position(|c| c.steps == steps))
                .collect::<Option<_>>()?;
            let chosen: Vec<&Candidate> =
                per_class.iter().zip(&picks).map(|(cs, &i)| &cs[i]).collect();
            let kinds: usize = chosen.iter().map(|c| c.kinds).sum();
            let long = !chosen.iter().all(|c| c.short);
            chosen.iter().any(|c| c.better).then_some(((long, kinds), picks))
        })
        .collect();
    options.sort_by_key(|(key, _)| *key);
    options
        .into_iter()
        .map(|(_, picks)| {
            per_class
                .iter_mut()
                .zip(picks)
                .map(|(cs, i)| {
                    let nest = std::mem::replace(&mut cs[i].nest, LoopNest { items: Vec::new() });
                    (cs[i].fold.clone(), nest)
                })
                .collect()
        })
        .collect()
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
        let exact = exact_nest(&s, &[]);
        assert!(!exact.notation().starts_with('{'), "{}", exact.notation());
        let c = candidates(&s, &exact, World::None).into_iter().next().expect("steps");
        assert!(c.better);
        // Every step, the last (a rebuild) too: the steps begin at the first call of a step.
        assert_eq!(c.steps, 40);
        assert_eq!(c.nest.notation(), "(1)^2 + {3 ×32 | 2 + (1)^2 + 1 ×8}^40 + 1");
        assert_eq!(c.nest.report().input_len, shapes.len() as u64);
    }

    /// Output every 20 time steps, four times: a fold into the output intervals (4 steps,
    /// each a quarter of the run) and one into the time steps (80). The intervals are too long
    /// for a skeleton of a twelfth; the time steps are not.
    #[test]
    fn steps_longer_than_a_twelfth_are_marked_long() {
        let interval = std::iter::once(7).chain((0..20).flat_map(|_| [1, 2, 3]));
        let shapes: Vec<Sym> =
            [9].into_iter().chain((0..4).flat_map(|_| interval.clone())).chain([9]).collect();
        let s = symbolized(&shapes, &vec![0; shapes.len()], 1e-3);
        let exact = exact_nest(&s, &[]);
        let found = candidates(&s, &exact, World::None);
        let by_steps = |n: usize| found.iter().find(|c| c.steps == n);
        assert!(by_steps(4).is_some_and(|c| !c.short), "{}", exact.notation());
        assert!(by_steps(80).is_some_and(|c| c.short), "{}", exact.notation());
    }

    /// Of two folds every class shares, the one of fewer kinds comes first only where its
    /// steps are short: LAMMPS melt's 9 output intervals of one kind over 50,000 steps came
    /// before its time steps of three kinds, and one interval was more than the skeleton may
    /// run.
    #[test]
    fn short_steps_come_before_long_steps_of_fewer_kinds() {
        let shapes: Vec<Sym> = (0..12).flat_map(|_| [1, 2, 3]).collect();
        let s = symbolized(&shapes, &vec![0; shapes.len()], 1e-3);
        // Told apart by their nests: the long one's is empty.
        let candidate = |steps: usize, kinds: usize, short: bool| {
            let fold = find_steps(&s.shapes, &s.shapes, &[1], MAX_KINDS).unwrap();
            let nest = if short { folded_nest(&s, &fold) } else { LoopNest { items: Vec::new() } };
            Candidate { steps, kinds, better: true, short, fold, nest }
        };
        let first_is_short = |chosen: Vec<Vec<(StepFold, LoopNest)>>| {
            assert_eq!(chosen.len(), 2);
            !chosen[0][0].1.items.is_empty()
        };
        assert!(first_is_short(choose(vec![vec![candidate(3, 1, false), candidate(60, 3, true)]])));
        // Both short: the fewest kinds first, as before.
        assert!(!first_is_short(choose(vec![vec![
            Candidate { short: true, ..candidate(3, 1, false) },
            candidate(60, 3, true)
        ]])));
    }

    #[test]
    fn an_exact_loop_stays_exact() {
        let shapes: Vec<Sym> =
            [7].into_iter().chain((0..30).flat_map(|_| [1, 2, 3])).chain([8]).collect();
        let sizes = vec![5; shapes.len()];
        let s = symbolized(&shapes, &sizes, 1e-3);
        let exact = exact_nest(&s, &[]);
        assert_eq!(exact.notation(), "1 + (3)^30 + 1");
        assert!(!candidates(&s, &exact, World::None).iter().any(|c| c.better));
    }

    #[test]
    fn rebuilds_at_varying_periods_fold_into_single_time_steps() {
        // A particle code: plain steps `1 2 3`, a rebuild `1 2 4 4 3` after 6, 6, 6, 6 then 9,
        // 5, 6, 6, … plain steps (as atoms move). The exact main loop is the first four spans
        // between rebuilds; those spans are of five kinds (one per number of plain steps), the
        // time steps of only two.
        let (mut shapes, mut sizes) = (vec![9, 9], vec![0, 0]);
        let periods = [6, 6, 6, 6, 9, 5, 6, 6, 8, 6, 7, 6, 6, 5, 9, 6, 6, 6];
        let mut steps = 0;
        for &k in &periods {
            for step in std::iter::once(&[1, 2, 4, 4, 3][..]).chain((0..k).map(|_| &[1, 2, 3][..]))
            {
                shapes.extend(step);
                sizes.extend(step.iter().map(|_| 0));
                steps += 1;
            }
        }
        shapes.push(9);
        sizes.push(0);
        let s = symbolized(&shapes, &sizes, 1e-3);
        let exact = exact_nest(&s, &[]);
        let found = candidates(&s, &exact, World::None);
        let notes: Vec<String> = found.iter().map(|c| c.nest.notation()).collect();
        // The spans between rebuilds: one kind per number of plain steps (a rebuild, then its
        // plain steps; the rebuild's two calls more are not a few extras of a three-call step).
        assert!(
            notes[0].contains("{2 + (1)^2 + (3)^6 + 1 ×12 | 2 + (1)^2 + (3)^9 + 1 ×2 |"),
            "{notes:?}"
        );
        let nests = choose(vec![found]).swap_remove(0);
        assert_eq!(
            nests[0].1.notation(),
            format!("(1)^2 + {{2 + (1)^2 + 1 ×18 | 3 ×{}}}^{} + 1", steps - 18, steps)
        );
    }

    /// A set-up of 40 calls that opens with the anchor of the 20 steps after it: the first
    /// step, a kind of its own that holds a third of the time, is left before the steps; a
    /// light one is not, nor one as heavy whose calls the other steps make.
    #[test]
    fn a_first_step_of_its_own_that_holds_a_twelfth_is_left_before_the_steps() {
        let program = |setup: usize, shape: Sym| {
            let mut shapes = vec![9, 1];
            shapes.extend(vec![shape; setup]);
            for i in 0..20 {
                shapes.push(1);
                shapes.extend(vec![2; 1 + i * 7 % 3]);
            }
            shapes.extend([1, 9]);
            shapes
        };
        let peeled_as = |setup: usize, shape: Sym| {
            let shapes = program(setup, shape);
            let s = symbolized(&shapes, &vec![0; shapes.len()], 1e-3);
            let fold = find_steps(&s.shapes, &s.shapes, &[1], MAX_KINDS).unwrap();
            assert_eq!(fold.steps(), 21);
            let nest = folded_nest(&s, &fold);
            peel_ends(&[s], vec![(fold, nest)]).swap_remove(0).notation()
        };
        let peeled = |setup: usize| peeled_as(setup, 5);
        assert_eq!(
            peeled(40),
            "2 + (1)^40 + {2 ×7 | 1 + (1)^2 ×7 | 1 + (1)^3 ×6}^20 + 2".to_owned()
        );
        let light = peeled(2);
        assert!(light.starts_with("1 + {1 + (1)^2 ×1 |") && light.ends_with("}^21 + 2"), "{light}");
        // As heavy, but of the calls the other steps make, only more of them (an SCF code's
        // first iteration, whose solver runs longest): a step like them.
        let like = peeled_as(40, 2);
        assert!(like.starts_with("1 + {1 + (1)^40 ×1 |") && like.ends_with("}^21 + 2"), "{like}");
    }

    #[test]
    fn steps_whose_sizes_all_differ_fold_by_their_shapes() {
        // An LU factorization's panels: per four steps the shapes `1 2 2 1 2 1` (send, receive),
        // every call's size shrinking with the step, so no two calls are alike and the exact
        // nest has no loop at all.
        let (mut shapes, mut sizes) = (vec![9], vec![0]);
        for k in 0..96u32 {
            let step: &[Sym] = match k % 4 {
                0 => &[1],
                1 => &[2],
                _ => &[2, 1],
            };
            shapes.extend(step);
            sizes.extend(step.iter().map(|_| 96 - k));
        }
        shapes.push(9);
        sizes.push(0);
        let s = symbolized(&shapes, &sizes, 1e-3);
        let exact = exact_nest(&s, &[]);
        assert!(main_span(&exact).is_none(), "{}", exact.notation());
        let found = candidates(&s, &exact, World::None);
        let c = found.iter().find(|c| c.better).expect("a fold by shapes");
        assert_eq!(c.kinds, 1, "{}", c.nest.notation());
        // Every panel is in a step: the loop found over the shapes begins part-way into an
        // iteration, and the steps begin at the anchor met first in the program, with the last
        // iteration, which no anchor ends, one step more.
        assert_eq!(c.steps, 24, "{}", c.nest.notation());
        assert_eq!(c.nest.notation(), "1 + {1 + (1)^2 + 3 ×24}^24 + 1");
        assert_eq!(c.nest.report().input_len, shapes.len() as u64);
    }

    #[test]
    fn an_exact_loop_of_two_long_copies_is_followed_by_its_steps() {
        // Steps `1 2 3` with a rebuild `1 2 4 4 3` at irregular periods, the whole stretch run
        // twice with the same sizes: the exact main loop is its two copies.
        let periods = [6, 9, 5, 7, 6, 8, 5, 9, 6, 7];
        let (mut shapes, mut sizes) = (vec![9], vec![0]);
        for _ in 0..2 {
            for (i, &k) in periods.iter().enumerate() {
                for step in
                    std::iter::once(&[1, 2, 4, 4, 3][..]).chain((0..k).map(|_| &[1, 2, 3][..]))
                {
                    shapes.extend(step);
                    sizes.extend(step.iter().map(|_| i as u32));
                }
            }
        }
        shapes.push(9);
        sizes.push(0);
        let s = symbolized(&shapes, &sizes, 1e-3);
        let exact = exact_nest(&s, &[]);
        assert_eq!(main_span(&exact).map(|m| m.2), Some(2), "{}", exact.notation());
        let found = candidates(&s, &exact, World::None);
        assert!(found.iter().any(|c| c.better && c.steps > 20), "{}", exact.notation());
        assert!(!choose(vec![found]).is_empty());
    }

    #[test]
    fn the_most_frequent_collective_over_every_rank_anchors_steps_that_differ_in_partners() {
        // Time steps that each begin with a collective over every rank (shape 1), then exchange
        // with up to seven partners that change as the work moves (shapes 10 to 13, drawn), 60
        // steps; a collective over every rank at set-up and at each of three outputs
        // (shape 2) makes a step of the whole run.
        let (mut shapes, mut sizes) = (vec![2, 9], vec![0, 0]);
        let mut x = 12345u64;
        for i in 0..60u32 {
            shapes.push(1);
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for p in 0..(x >> 61) as u32 {
                shapes.extend([10 + ((x >> (20 + 2 * p)) % 4) as Sym, 20]);
            }
            if i % 20 == 19 {
                shapes.push(2);
            }
        }
        sizes.resize(shapes.len(), 0);
        let mut s = symbolized(&shapes, &sizes, 1e-4);
        s.shape_is_world_collective[1] = true;
        s.shape_is_world_collective[2] = true;
        let folds = world_folds(&s);
        let fold = folds.first().expect("steps");
        assert_eq!(fold.anchor, 1);
        assert_eq!(fold.steps(), 60);
        // No anchor that no loop gives: without it, no fold of the class's anchors has the 60
        // steps; with it, one does, and it holds the time.
        let exact = exact_nest(&s, &[]);
        assert!(!candidates(&s, &exact, World::None).iter().any(|c| c.steps == 60));
        let with = candidates(&s, &exact, World::First);
        assert!(with.iter().any(|c| c.steps == 60 && c.better), "{}", exact.notation());
        // Fewer than the least number of steps: no anchor.
        let few: Vec<Sym> = [1, 10, 1, 11, 1, 10].to_vec();
        let mut s = symbolized(&few, &[0; 6], 1e-4);
        s.shape_is_world_collective[1] = true;
        assert!(world_folds(&s).is_empty());
    }
}
