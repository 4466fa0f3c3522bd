//! The loops of different classes that stand for the same loop of the application where their
//! names do not say so.
//!
//! Each class program names its top-level loops in the order its own nest found them
//! (`loop_1`, `loop_2`, …), so classes whose nests differ (a master that reads the input and
//! reports, workers that do not; a benchmark suite whose ranks fold their set-up differently)
//! give one loop different names: HPC Challenge on two ranks has a ping-pong loop of 521
//! iterations that is `loop_41` on rank 0 and `loop_45` on rank 1. Cut by name, as the loops of
//! classes whose nests correspond are (`crate::scale`), such a loop is cut in one class and
//! not in the other, and the deadlock check refuses the program; the loop then runs whole.
//!
//! A blocking collective of `MPI_COMM_WORLD` is a point every rank passes at once, so the k-th
//! of them is the same point of the application in every class (as in Xu & Subhlok 2008, §4,
//! where calls match by their place in the program; `mpiskel_trace::stretch` cuts by the same
//! points). A loop begins after some number of them, its *region*, and makes as many in each of
//! its iterations in every class; the loops that begin in a region with the same number of
//! iterations and of such collectives per iteration, taken in order, are the same loop in
//! every class that has as many of them there. Cutting them alike keeps their collectives
//! aligned and their messages paired when they exchange with each other; the deadlock check
//! decides whether a cut is kept.
//!
//! # Complexity
//! O(size of the program) per loop looked up.

use std::collections::HashMap;

use mpiskel_program::{per_step, ClassProgram, PhaseIndex, Stmt};

/// The region (blocking collectives of `MPI_COMM_WORLD` made before it), iterations, such
/// collectives per iteration, and order among the loops of that region alike in both: a loop's
/// place in the application.
type Key = (u64, u64, u64, usize);

/// Blocking collectives of `MPI_COMM_WORLD` one pass over `body` makes (for a time-step body,
/// the mean over the application's steps; a guarded part once).
fn world_collectives(body: &[Stmt]) -> f64 {
    body.iter()
        .map(|s| match s {
            Stmt::Call {
                call: mpiskel_program::Call::Collective { comm: 0, slot: None, .. },
                ..
            } => 1.0,
            Stmt::Call { .. } | Stmt::Compute { .. } => 0.0,
            Stmt::Loop { count, body, .. } => *count as f64 * world_collectives(body),
            Stmt::Guard { body, .. } => world_collectives(body),
            Stmt::Steps { cases } => per_step(cases, world_collectives),
        })
        .sum()
}

/// The place of each top-level loop of `class` (not a time-step loop), by phase index, up to
/// the first phase whose collectives per iteration are not a whole number (time steps that
/// make them in some steps only): past it, regions are not counted.
fn places(class: &ClassProgram) -> HashMap<usize, Key> {
    let mut out = HashMap::new();
    let mut seen: HashMap<(u64, u64, u64), usize> = HashMap::new();
    let mut region = 0u64;
    for (i, p) in class.phases.iter().enumerate() {
        let per = world_collectives(&p.body);
        if (per - per.round()).abs() > 1e-6 {
            break;
        }
        let per = per.round() as u64;
        if p.is_loop && p.steps.is_none() {
            let n = seen.entry((region, p.full, per)).or_default();
            out.insert(i, (region, p.full, per, *n));
            *n += 1;
        }
        region += per * p.full;
    }
    out
}

/// Every class's loop places ([`places`]), found once for a program: they depend on its
/// phases' bodies and iterations in the application, which cuts do not change, so one
/// [`Places`] serves every copy of the program a run of cuts tries.
///
/// # Complexity
/// O(size of the program) to build; [`same_loop_in`] is then O(classes) expected.
#[derive(Debug)]
pub struct Places {
    /// Per class: each loop's place, by phase index.
    at: Vec<HashMap<usize, Key>>,
    /// Per class: the phase at each place.
    of: Vec<HashMap<Key, usize>>,
    /// Per class: how many loops begin in a region with as many iterations and collectives
    /// per iteration.
    alike: Vec<HashMap<(u64, u64, u64), usize>>,
}

impl Places {
    /// The places of the loops of `classes`.
    pub fn new(classes: &[ClassProgram]) -> Places {
        let at: Vec<HashMap<usize, Key>> = classes.iter().map(places).collect();
        let of = at.iter().map(|p| p.iter().map(|(&i, &k)| (k, i)).collect()).collect();
        let alike = at
            .iter()
            .map(|p| {
                let mut n = HashMap::new();
                for k in p.values() {
                    *n.entry((k.0, k.1, k.2)).or_insert(0) += 1;
                }
                n
            })
            .collect();
        Places { at, of, alike }
    }
}

/// The loop of every class at the place of `class`'s phase `phase` (class and phase index of
/// each, `class`'s own first): every class that has as many loops alike in that region has
/// one, and a class with none there (a master's loop that only some ranks make) is left out;
/// `None` where a class has another number of them, or where the loops found are those of
/// the same name in every class (the cut by name is that cut).
pub fn same_loop(
    classes: &[ClassProgram],
    class: usize,
    phase: usize,
) -> Option<Vec<(usize, usize)>> {
    same_loop_in(classes, &Places::new(classes), &PhaseIndex::new(classes), class, phase)
}

/// [`same_loop`] with the places and the phases by name of `classes` found already.
pub fn same_loop_in(
    classes: &[ClassProgram],
    places: &Places,
    index: &PhaseIndex,
    class: usize,
    phase: usize,
) -> Option<Vec<(usize, usize)>> {
    let key = *places.at.get(class)?.get(&phase)?;
    let alike = |ci: usize| places.alike[ci].get(&(key.0, key.1, key.2)).copied().unwrap_or(0);
    let n = alike(class);
    let mut out = vec![(class, phase)];
    for ci in (0..classes.len()).filter(|&ci| ci != class) {
        match alike(ci) {
            0 => continue,
            m if m == n => out.push((ci, *places.of[ci].get(&key)?)),
            _ => return None,
        }
    }
    let name = &classes[class].phases[phase].name;
    let by_name =
        classes.iter().enumerate().all(|(ci, c)| match out.iter().find(|&&(oc, _)| oc == ci) {
            Some(&(_, pi)) => &c.phases[pi].name == name,
            None => index.all(ci, name).iter().all(|&pi| !c.phases[pi].is_loop),
        });
    (!by_name).then_some(out)
}

/// The loop of every class at the place of `class`'s phase named `name` ([`same_loop_in`];
/// `places` and `index`: the places of the skeleton's loops and its phases by name), as
/// (class, phase), where there is such a loop everywhere.
pub fn same_loop_named(
    classes: &[ClassProgram],
    places: &Places,
    index: &PhaseIndex,
    class: usize,
    name: &str,
) -> Option<Vec<(usize, usize)>> {
    same_loop_in(classes, places, index, class, index.get(class, name)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiskel_program::{Call, Phase};

    fn call(op: mpiskel_trace::Op, comm: usize) -> Stmt {
        let call = Call::Collective { op, traced: op, comm, root: None, bytes: 8, slot: None };
        Stmt::Call { call, polls: 0, wait_s: 0.0, off_s: 0.0 }
    }

    fn phase(name: &str, full: u64, body: Vec<Stmt>) -> Phase {
        Phase::new(name.into(), full, full > 1, body, String::new(), (0, 0))
    }

    fn class(phases: Vec<Phase>) -> ClassProgram {
        ClassProgram { ranks: vec![0], phases, notation: String::new() }
    }

    fn barrier() -> Phase {
        phase("step", 1, vec![call(mpiskel_trace::Op::Barrier, 0)])
    }

    fn work(name: &str, full: u64) -> Phase {
        phase(name, full, vec![Stmt::block(1e-3), call(mpiskel_trace::Op::Bcast, 1)])
    }

    #[test]
    fn the_phase_index_finds_each_name_where_a_scan_of_the_class_does() {
        let classes = vec![
            class(vec![work("loop_1", 16), barrier(), work("loop_2", 200), barrier()]),
            class(vec![barrier(), work("loop_2", 50)]),
        ];
        let index = PhaseIndex::new(&classes);
        for (ci, c) in classes.iter().enumerate() {
            for name in ["loop_1", "loop_2", "step", "main_loop"] {
                let scan: Vec<usize> =
                    (0..c.phases.len()).filter(|&i| c.phases[i].name == name).collect();
                assert_eq!(index.all(ci, name), scan.as_slice(), "class {ci}, {name}");
                assert_eq!(index.get(ci, name), scan.first().copied(), "class {ci}, {name}");
            }
        }
        assert_eq!(index.all(2, "loop_1"), &[] as &[usize]);
    }

    #[test]
    fn loops_after_as_many_collectives_of_all_ranks_are_the_same_loop() {
        // The master reads in a loop of its own; after the barrier, the loops of 200 and then
        // of 50 are the same in both classes, though numbered one apart.
        let master =
            class(vec![work("loop_1", 16), barrier(), work("loop_2", 200), work("loop_3", 50)]);
        let worker = class(vec![barrier(), work("loop_1", 200), work("loop_2", 50)]);
        let classes = [master, worker];
        assert_eq!(same_loop(&classes, 0, 2), Some(vec![(0, 2), (1, 1)]));
        assert_eq!(same_loop(&classes, 1, 2), Some(vec![(1, 2), (0, 3)]));
        // The master's own loop: the worker has none there and is left out.
        assert_eq!(same_loop(&classes, 0, 0), Some(vec![(0, 0)]));
    }

    #[test]
    fn loops_named_alike_or_of_other_counts_are_not_offered() {
        let a = class(vec![barrier(), work("loop_1", 200), work("loop_2", 50)]);
        let b = class(vec![barrier(), work("loop_1", 200), work("loop_2", 50)]);
        // The cut by name already is this cut.
        assert_eq!(same_loop(&[a.clone(), b], 0, 1), None);
        // Two loops of 200 in one class, one in the other: which is which is not known.
        let c = class(vec![barrier(), work("loop_1", 200), work("loop_2", 200)]);
        assert_eq!(same_loop(&[a, c], 0, 1), None);
        // A loop that makes collectives of all ranks moves the regions after it: the loops of
        // 200 are not at the same place.
        let d = class(vec![
            barrier(),
            phase("loop_1", 3, vec![call(mpiskel_trace::Op::Allreduce, 0)]),
            work("loop_2", 200),
        ]);
        let e = class(vec![barrier(), work("loop_1", 200)]);
        assert_eq!(same_loop(&[d, e], 0, 2), None);
    }
}
