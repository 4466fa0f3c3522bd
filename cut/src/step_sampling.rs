//! A time-step main loop sampled for a target time: the steps of each kind (or each family of
//! kinds) that run, the groups that take most of the loop's time first, and the scale that
//! makes the steps run stand for those that do not.

use std::collections::BTreeMap;

use crate::recorded::{by_span, recorded_of};
use mpiskel_program::{Skeleton, Stmt};

/// Chooses the steps a time-step main loop runs (see [`crate::timesteps`]): every kind of step
/// at least once, and each about in its share of the application's steps, for a main loop of
/// about `budget_s` application seconds (`seconds_of` turns a step's recorded computation into
/// application seconds). Steps are grouped by the kinds they have in all classes; a group of `c`
/// steps runs `r = clamp(round(f·c), 1, c)` of them, evenly spread over the group, with the
/// largest `f` within the budget. Every class runs the same steps, in their order. Each kind is
/// timed on its own and predicted as its time × its steps in the application / its steps run,
/// so a kind that runs more (or less) than its share does not bias the prediction.
///
/// Where one step of every group would take longer than the whole skeleton may (`longest_s`,
/// application seconds: the target, or a twelfth of the application's time where that is
/// longer; an SCF code whose iterations are each a kind of their own) and the families are
/// fewer than the groups, the steps are grouped by the families of their kinds instead
/// ([`crate::families`]): the kinds of a family that run are timed ×(the family's recorded
/// time / theirs) for those that do not, and those are not emitted.
///
/// With `sampled_within` (application seconds: the longer default target less the rest of the
/// program), each group then runs at least [`MIN_SAMPLED`] of its steps (all where it has
/// fewer), the groups that take most of the loop's time first, as far as they fit: the steps of
/// a group stand for all of its steps in the application, and one step's durations are one
/// sample of them (LAMMPS melt, 250 steps of which 233 of one kind, built for a twenty-fourth
/// ran one step of that kind: the skeletons of three traces predicted 17 points apart, with
/// four of its steps 8 points apart).
///
/// Returns the main loop's estimated application seconds and what the least samples add to
/// them, or `None` when the main loop is not a time-step loop in every class (or the classes'
/// steps differ in number).
pub(crate) fn sample_steps(
    skel: &mut Skeleton,
    (budget_s, longest_s): (f64, f64),
    sampled_within: Option<f64>,
    seconds_of: &dyn Fn(f64) -> f64,
) -> Option<(f64, f64)> {
    let mains: Vec<(usize, usize)> = skel
        .classes
        .iter()
        .enumerate()
        .map(|(ci, c)| c.main_loop_index().map(|pi| (ci, pi)))
        .collect::<Option<_>>()?;
    let n = {
        let p = &skel.classes[mains[0].0].phases[mains[0].1];
        p.steps.as_ref()?.kinds.len()
    };
    let mut cost_of_kind: Vec<Vec<f64>> = Vec::new();
    let split = by_span(skel);
    for &(ci, pi) in &mains {
        let p = &skel.classes[ci].phases[pi];
        let (Some(st), [Stmt::Steps { cases }]) = (&p.steps, p.body.as_slice()) else {
            return None;
        };
        if st.kinds.len() != n {
            return None;
        }
        cost_of_kind.push(cases.iter().map(|c| seconds_of(recorded_of(&c.body, split))).collect());
    }
    // Groups: the kinds a step has in every class; where one step of each would take longer
    // than the whole skeleton may (`longest_s`), the families of those kinds
    // ([`crate::families`]).
    let kinds_of = |i: usize| -> Vec<u32> {
        mains
            .iter()
            .map(|&(ci, pi)| skel.classes[ci].phases[pi].steps.as_ref().map_or(0, |s| s.kinds[i]))
            .collect()
    };
    let step_cost: Vec<f64> = (0..n)
        .map(|i| {
            kinds_of(i).iter().zip(&cost_of_kind).map(|(&k, c)| c[k as usize]).fold(0.0, f64::max)
        })
        .collect();
    let group_by = |key: &dyn Fn(&[u32]) -> Vec<u32>| -> BTreeMap<Vec<u32>, Vec<u32>> {
        let mut groups: BTreeMap<Vec<u32>, Vec<u32>> = BTreeMap::new();
        for i in 0..n {
            groups.entry(key(&kinds_of(i))).or_default().push(i as u32);
        }
        groups
    };
    let mut groups = group_by(&|kinds| kinds.to_vec());
    let one_each: f64 = groups.values().map(|m| step_cost[m[m.len() / 2] as usize]).sum();
    // Per class, each kind's family and bytes sent; only where one step of each kind is too
    // long.
    let (families, bytes): (Vec<Vec<u32>>, Vec<Vec<f64>>) = if one_each > longest_s {
        mains
            .iter()
            .map(|&(ci, pi)| match skel.classes[ci].phases[pi].body.as_slice() {
                [Stmt::Steps { cases }] => (
                    crate::families::families(cases),
                    cases.iter().map(|c| crate::families::bytes_sent(&c.body)).collect(),
                ),
                _ => (Vec::new(), Vec::new()),
            })
            .unzip()
    } else {
        (Vec::new(), Vec::new())
    };
    let pooled = (!families.is_empty()).then(|| {
        group_by(&|kinds| {
            kinds
                .iter()
                .zip(&families)
                .map(|(&k, f)| f.get(k as usize).copied().unwrap_or(k))
                .collect()
        })
    });
    // Only where families are fewer than the groups of kinds (else nothing is gained).
    let by_family = pooled.as_ref().is_some_and(|p| p.len() < groups.len());
    if let Some(pooled) = pooled.filter(|_| by_family) {
        // A family's steps, the least network-bound first (bytes sent per recorded second, the
        // most of any class): spread over that order, the steps that run send about the
        // family's share, so its ratio estimate holds on a network of other speed.
        let intensity = |i: usize| -> f64 {
            let sent = kinds_of(i)
                .iter()
                .zip(&bytes)
                .map(|(&k, b)| b.get(k as usize).copied().unwrap_or(0.0))
                .fold(0.0, f64::max);
            sent / step_cost[i].max(f64::MIN_POSITIVE)
        };
        groups = pooled;
        for m in groups.values_mut() {
            m.sort_by(|&a, &b| {
                intensity(a as usize).total_cmp(&intensity(b as usize)).then(a.cmp(&b))
            });
        }
    }
    // A group's cost: the mean of its steps' (the same for all where they are of one kind).
    let cost: Vec<f64> = groups
        .values()
        .map(|m| m.iter().map(|&i| step_cost[i as usize]).sum::<f64>() / m.len() as f64)
        .collect();
    let runs = |f: f64| -> Vec<usize> {
        groups.values().map(|m| ((f * m.len() as f64).round() as usize).clamp(1, m.len())).collect()
    };
    let total = |r: &[usize]| r.iter().zip(&cost).map(|(&r, &c)| r as f64 * c).sum::<f64>();
    let mut r = runs(largest_share(|f| total(&runs(f)), budget_s));
    let for_target = total(&r);
    if let Some(within) = sampled_within {
        let sizes: Vec<usize> = groups.values().map(Vec::len).collect();
        let mut heaviest: Vec<usize> = (0..sizes.len()).collect();
        heaviest.sort_by(|&a, &b| {
            (sizes[b] as f64 * cost[b]).total_cmp(&(sizes[a] as f64 * cost[a])).then(a.cmp(&b))
        });
        for g in heaviest {
            let least = (MIN_SAMPLED as usize).min(sizes[g]);
            if r[g] < least && total(&r) + (least - r[g]) as f64 * cost[g] <= within {
                r[g] = least;
            }
        }
    }
    let mut sample: Vec<u32> = groups
        .values()
        .zip(&r)
        .flat_map(|(m, &r)| {
            (0..r).map(move |j| m[((2 * j + 1) * m.len() / (2 * r)).min(m.len() - 1)])
        })
        .collect();
    sample.sort_unstable();
    // What the steps that run take: by family, the steps chosen are not of the family's mean
    // (an SCF code's iterations grow and shrink), so each is counted at its own cost.
    let run_s: f64 = sample.iter().map(|&i| step_cost[i as usize]).sum();
    for (m, &(ci, pi)) in mains.iter().enumerate() {
        let p = &mut skel.classes[ci].phases[pi];
        set_steps(p, sample.clone());
        if by_family {
            if let [Stmt::Steps { cases }] = p.body.as_mut_slice() {
                scale_families(cases, &families[m], &cost_of_kind[m]);
            }
        }
    }
    Some((run_s, total(&r) - for_target))
}

/// The largest share `f` in [0, 1] whose cost `total(f)` (growing with `f`) is within
/// `budget_s`: 1 where all of it is, else by bisection (50 halvings).
fn largest_share(total: impl Fn(f64) -> f64, budget_s: f64) -> f64 {
    if total(1.0) <= budget_s {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..50 {
        let mid = (lo + hi) / 2.0;
        if total(mid) <= budget_s {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Sets each kind's [`mpiskel_program::StepCase::scale`] for the families of `cases`
/// (`families`, per kind) of which the skeleton runs only some kinds: the family's recorded
/// time (`cost`, per kind and step) over that of the kinds it runs, each kind counted with
/// all its steps (its own time × `full / run` stands for them). Where the kinds that run
/// recorded no time, by their counts of steps.
fn scale_families(cases: &mut [mpiskel_program::StepCase], families: &[u32], cost: &[f64]) {
    let mut sums: BTreeMap<u32, [f64; 4]> = BTreeMap::new();
    for (k, c) in cases.iter().enumerate() {
        let Some(&f) = families.get(k) else { return };
        let e = sums.entry(f).or_default();
        let t = c.full as f64 * cost.get(k).copied().unwrap_or(0.0);
        e[0] += t;
        e[1] += c.full as f64;
        if c.run > 0 {
            e[2] += t;
            e[3] += c.full as f64;
        }
    }
    for (k, c) in cases.iter_mut().enumerate() {
        let [all_t, all_n, ran_t, ran_n] = sums[&families[k]];
        if c.run > 0 {
            c.scale = if ran_t > 0.0 { all_t / ran_t } else { all_n / ran_n };
        }
    }
}

/// Makes a time-step phase run `sample` (indices into its steps), with each kind's count.
pub(crate) fn set_steps(p: &mut mpiskel_program::Phase, sample: Vec<u32>) {
    let (Some(st), [Stmt::Steps { cases }]) = (&mut p.steps, p.body.as_mut_slice()) else {
        return;
    };
    for c in cases.iter_mut() {
        c.run = 0;
        c.scale = 1.0;
    }
    for &i in &sample {
        cases[st.kinds[i as usize] as usize].run += 1;
    }
    p.run = sample.len() as u64;
    st.run = sample;
}

/// Iterations of the main loop that a skeleton for the shorter default target (a main loop of
/// at least [`MANY_ITERATIONS`]) runs at least, as far as they fit in a twelfth of the
/// application: the compute blocks of one iteration draw their durations (the spread of the
/// recorded gaps), and a single iteration's draws are one sample of the slowest rank's time
/// (NPB SP S: one of 100 iterations predicts −14 to +12 % depending on the draws' seed, four
/// −6 to +5 %). What this adds over the target is taken out of computation by [`crate::compute_cut::cut_compute`] where
/// it can be.
pub const MIN_SAMPLED: u64 = 4;

#[cfg(test)]
mod tests;
