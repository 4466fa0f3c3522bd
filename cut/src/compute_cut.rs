//! The compute cut: when cutting iterations is not enough (or not possible), compute blocks
//! run only part of their duration and the runtime adds the rest back to the prediction, timed
//! at the pace of the part that ran. Blocks a root computes alone before a collective of every
//! rank run a short part on every rank and restore the most any rank skipped
//! (`cut_to_keep`); a class's last block, which nothing but the end of the run waits for, runs
//! a short part on each rank, which restores its own (`cut_tail`); the others lose the same
//! seconds on every rank, so that the ranks' differences, and the waits they cause, stay
//! ([`cut_compute`]).
//!
//! # Complexity
//! O(size of the program), and the Monte Carlo of [`crate::removal`] for drawn blocks.

use crate::recorded::lead_recorded;
use crate::scale::{twelfth, Scaling};
use crate::world_places::{before_world_collectives, Place};
use mpiskel_program::{wall_per_compute, ClassProgram, Phase, PhaseIndex, Skeleton, Stmt};

/// Share of a block's smallest duration (over the ranks) that still runs when the block is cut:
/// enough to time, on the machine the skeleton runs on, how fast it computes.
pub const KEEP_SHARE: f64 = 0.05;

/// Seconds of a cut block that always run, however short the share: a part long enough to time.
pub const KEEP_MIN: f64 = 5e-5;

/// Recorded seconds a block must be able to lose to be cut by [`cut_small`]: a microsecond, of
/// which the runtime's own work per block is a small share.
const MIN_SMALL: f64 = 1e-6;

/// Recorded seconds a block must be able to lose to be cut at all: ten microseconds, well above
/// the timers' resolution (a block must also lose a hundredth of the target over the run).
const MIN_REMOVED: f64 = 1e-5;

/// Takes computation out of compute blocks when cutting iterations is not enough (or not
/// possible): the straight-line phases (a long set-up, as NPB CG's matrix generation; a program
/// without loops, as NPB EP), and the blocks directly in a loop's body (a loop of a few long
/// iterations, as NPB FT's and MG's; a loop whose iterations cannot be cut because classes do
/// not correspond). Every rank loses the same seconds from a block, in every class (blocks at
/// the same place of a phase of the same name in all classes, or right before the same
/// collective of all ranks in straight-line phases that differ: [`before_world_collectives`];
/// ABySS on 2 ranks, whose ranks relay messages differently in its set-up, 0.14 → 0.07 of the
/// run with its 0.3 s blocks before one all-reduce cut), at most all but
/// max(`KEEP_SHARE`, `KEEP_MIN`) of the block's smallest duration on any rank, so that the
/// differences between ranks, and the waiting they cause, stay those of the application; the
/// runtime times the part that runs and adds to the phase's prediction what the removed part
/// takes at that pace (scaled by the phase's iterations, as its measured time is). Blocks inside
/// an inner loop of a phase are left whole. Removing computation never changes what is sent,
/// so the program checked for deadlock stays valid.
///
/// The blocks of a main loop whose iterations were cut already (it runs a sample of them) are
/// cut only where the rest of the program cannot come within a twelfth of the application's
/// time without them: with more ranks than cores, taking computation out of the iterations that
/// run changes how the ranks share the cores in them, which the pace of the parts that run does
/// not tell (a polling ring, 4 ranks on 2 cores, 4 of 60 iterations run: −13 % with its loop's
/// blocks cut to the target, −1 % with them whole at 0.066 of the run).
///
/// Updates `scaling`'s estimate and factor.
pub fn cut_compute(skel: &mut Skeleton, scaling: &mut Scaling) {
    cut_to_keep(skel, scaling);
    cut_tail(skel, scaling);
    if scaling.main_run < scaling.main_full {
        // Tried in place and undone if refused: the cut changes only what the top-level blocks
        // remove, and a copy of a program of thousands of phases takes hundreds of megabytes.
        let before = top_level_removals(skel);
        let mut sc = scaling.clone();
        cut_compute_with(skel, &mut sc, false);
        let twelfth = twelfth(scaling.app_time_s);
        // Within a twelfth, a main loop that still runs more iterations than it needs keeps its
        // blocks whole; one that runs the fewest it can has no other way to the target.
        let fewest = scaling.main_run <= scaling.main_needed.max(1);
        if sc.skeleton_estimate_s <= twelfth * (1.0 + 1e-9)
            && (!fewest || sc.skeleton_estimate_s <= sc.target_s * (1.0 + 1e-9))
        {
            *scaling = sc;
            return;
        }
        restore_removals(skel, &before);
    }
    cut_compute_with(skel, scaling, true);
    cut_small(skel, scaling);
}

/// What each top-level compute block of every phase removes, as (class, phase, position,
/// seconds): all that [`cut_compute_with`] changes in the program.
fn top_level_removals(skel: &Skeleton) -> Vec<(usize, usize, usize, f64)> {
    let mut out = Vec::new();
    for (ci, c) in skel.classes.iter().enumerate() {
        for (pi, p) in c.phases.iter().enumerate() {
            for (at, st) in p.body.iter().enumerate() {
                if let Stmt::Compute { removed, .. } = st {
                    out.push((ci, pi, at, *removed));
                }
            }
        }
    }
    out
}

/// Puts back the removals [`top_level_removals`] took.
fn restore_removals(skel: &mut Skeleton, before: &[(usize, usize, usize, f64)]) {
    for &(ci, pi, at, r) in before {
        if let Some(Stmt::Compute { removed, .. }) = skel.classes[ci].phases[pi].body.get_mut(at) {
            *removed = r;
        }
    }
}

/// The last step of [`cut_compute`], while the skeleton is still over its target: the blocks
/// the first steps leave whole because they are short (under [`KEEP_MIN`] to keep, or under
/// [`MIN_REMOVED`] to lose), inside an inner loop of a phase, or at places whose index differs
/// between classes (NPB MG at 256 ranks: 255 of the 261 blocks of an iteration are under 20 µs,
/// three quarters of its computation is inside loops of 2 or 3 smoothing steps, and its five
/// classes' bodies differ in length), and the part the first steps keep of the blocks they cut
/// (at least [`KEEP_MIN`], to time). Blocks correspond across classes by their place in the
/// program ([`crate::correspond`]). Every rank loses the same seconds from each, in every class,
/// at most all but [`KEEP_SHARE`] of the block's shortest duration on any rank (for a drawn
/// block, the shortest its distribution holds: unlike [`cut_compute_with`], which may clip a
/// draw's lower tail within a bounded bias, this cut never makes an execution skip more than it
/// lasts, because blocks this short are too many to bound the bias of each), by one share of
/// what that bound leaves for all blocks, the share that brings the estimate to the target. A
/// block of fixed duration whose kept part is shrunk already ([`Scaling::compute_shrink`]) saves
/// only that share of what it loses more, and is counted so. The part that runs is too short to
/// time on its own on a real machine: the runtime runs it untimed there and prices what it
/// skipped at the pace of the phase's timed parts (or the rank's, where the phase has none);
/// simulated parts are timed at any length. Blocks in time-step loops, in a phase with a cut
/// inner loop, or under a guard are left as they are.
///
/// # Complexity
/// O(size of the program) and the alignment of [`crate::correspond`].
fn cut_small(skel: &mut Skeleton, scaling: &mut Scaling) {
    use crate::correspond::{at, at_mut, Path};
    let lead_recorded = lead_recorded(skel);
    if scaling.skeleton_estimate_s <= scaling.target_s || lead_recorded <= 0.0 {
        return;
    }
    let Some(first) = skel.classes.first() else { return };
    /// A group of blocks at the same place of every class.
    struct Small {
        phase: String,
        /// Each class's paths of the group's blocks.
        paths: Vec<Vec<Path>>,
        /// What an earlier step took from them.
        before: f64,
        /// What every rank can lose beyond it.
        can: f64,
        /// Executions run, times the share of a loss that is saved.
        runs: f64,
        /// Wall seconds per second of the blocks' computation ([`wall_per_compute`]), the most
        /// of the first class's blocks of the group.
        wall: f64,
    }
    let index = PhaseIndex::new(&skel.classes);
    let mut blocks: Vec<Small> = Vec::new();
    for p in &first.phases {
        if p.steps.is_some() || p.skipped.is_some() || p.inner.is_some() {
            continue;
        }
        let Some(others) = (1..skel.classes.len())
            .map(|ci| {
                let q = &skel.classes[ci].phases[index.get(ci, &p.name)?];
                (q.full == p.full).then_some(q)
            })
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let phases: Vec<&mpiskel_program::Phase> =
            std::iter::once(p).chain(others.iter().copied()).collect();
        'group: for g in crate::correspond::groups(p, &others) {
            let mut here = Vec::new();
            for ((c, q), paths) in skel.classes.iter().zip(&phases).zip(&g.paths) {
                for path in paths {
                    match at(&q.body, path) {
                        Some(st @ Stmt::Compute { keep_only: false, .. }) => here.push((c, st)),
                        _ => continue 'group,
                    }
                }
            }
            // The shortest duration any rank may run here: for a drawn block, the shortest its
            // distribution holds, so that no execution is shorter than what it skips.
            let least = here
                .iter()
                .flat_map(|(c, st)| match st {
                    Stmt::Compute { seconds, dist, factors, .. } => {
                        let shortest = dist
                            .and_then(|d| skel.distributions.get(d))
                            .and_then(|d| d.q.first().copied())
                            .unwrap_or(*seconds);
                        skel.block_weights(c, *factors)
                            .into_iter()
                            .map(|w| shortest * w)
                            .collect::<Vec<_>>()
                    }
                    _ => Vec::new(),
                })
                .fold(f64::INFINITY, f64::min);
            // What an earlier step took from the group's blocks already (the most, where the
            // classes' differ): this step takes the rest, up to the same bound.
            let before = here
                .iter()
                .map(|(_, st)| match st {
                    Stmt::Compute { removed, .. } => *removed,
                    _ => 0.0,
                })
                .fold(0.0, f64::max);
            let can = (1.0 - KEEP_SHARE) * least - before;
            // A block of fixed duration cut already runs only `compute_shrink` of what it keeps
            // (see `cut_compute_with`): losing more saves that share of it. (One that ran whole
            // is shrunk too once cut, and saves more than it loses: counted as what it loses.)
            let shrunk = before > 0.0
                && here.iter().any(|(_, st)| {
                    matches!(st, Stmt::Compute { dist: None, factors: None, replay: None, .. })
                });
            let saves = if shrunk { scaling.compute_shrink } else { 1.0 };
            if can.is_finite() && can >= MIN_SMALL {
                let runs = saves * (p.run * g.runs) as f64;
                let wall = g.paths.first().map_or(1.0, |paths| {
                    paths.iter().map(|path| wall_at(&p.body, path)).fold(1.0, f64::max)
                });
                let phase = p.name.clone();
                blocks.push(Small { phase, paths: g.paths, before, can, runs, wall });
            }
        }
    }
    let total: f64 = blocks.iter().map(|b| b.can * b.runs).sum();
    let total_wall: f64 = blocks.iter().map(|b| b.can * b.runs * b.wall).sum();
    let seconds_of = |compute: f64| compute / lead_recorded * scaling.app_time_s;
    if total <= 0.0 || seconds_of(total) < 0.01 * scaling.target_s {
        return;
    }
    let share =
        ((scaling.skeleton_estimate_s - scaling.target_s) / seconds_of(total_wall)).min(1.0);
    for b in &blocks {
        for (ci, (c, paths)) in skel.classes.iter_mut().zip(&b.paths).enumerate() {
            let Some(p) = index.get(ci, &b.phase).map(|i| &mut c.phases[i]) else { continue };
            for path in paths {
                if let Some(Stmt::Compute { removed, .. }) = at_mut(&mut p.body, path) {
                    *removed = b.before + share * b.can;
                }
            }
        }
    }
    scaling.skeleton_estimate_s -= share * seconds_of(total_wall);
    scaling.compute_removed_s += share * total;
    if scaling.skeleton_estimate_s > 0.0 {
        scaling.factor = scaling.app_time_s / scaling.skeleton_estimate_s;
    }
}

/// [`wall_per_compute`] of the block at `path` of `body` (a path of [`crate::correspond`]).
fn wall_at(body: &[Stmt], path: &[usize]) -> f64 {
    match path.split_last() {
        Some((&last, [])) => wall_per_compute(body, last),
        Some((&last, parent)) => match crate::correspond::at(body, parent) {
            Some(Stmt::Loop { body, .. }) => wall_per_compute(body, last),
            _ => 1.0,
        },
        None => 1.0,
    }
}

/// The first step of [`cut_compute`]: blocks of the phases outside the main loop (set-up and
/// its loops, steps between loops, finish) that end right before a collective of every rank (in
/// a straight-line phase, possibly with point-to-point calls and other blocks between) run
/// only a short part on every rank (max(`KEEP_SHARE`, `KEEP_MIN`) of the rank's own duration),
/// and each phase adds back, on every rank, the most that any rank skipped. Such a block is a
/// critical path of its own: every rank waits at the collective for the one that computes
/// longest (the root that reads the input before broadcasting it: NPB BT S 16's set-up, 2.5
/// times the other ranks'; NPB LU's loop of broadcasts, each after rank 0 read a line of the
/// input), so the phase took that rank's duration in the application, and in the skeleton the
/// kept parts are short and alike. A uniform cut ([`cut_compute_with`]) can only take what the
/// lightest rank computes, and leaves the root's excess to run. In a loop, what is skipped in
/// the iterations run is scaled by the loop's iterations, as its measured time is.
///
/// Applied only where the longest rank's excess over the shortest is more than the part kept
/// (elsewhere the uniform cut, with its shrink, takes more); where every class has a phase of
/// that name, with as many iterations, and the block at the same place in it (the runtime
/// gathers what is restored by phase name: [`keep_slots`]); the block fixed, or drawn within
/// the part a cut block keeps (it then runs whole); only while the skeleton is over its
/// target. Updates the estimate and factor.
fn cut_to_keep(skel: &mut Skeleton, scaling: &mut Scaling) {
    let lead_recorded = lead_recorded(skel);
    if scaling.skeleton_estimate_s <= scaling.target_s || lead_recorded <= 0.0 {
        return;
    }
    let Some(first) = skel.classes.first() else { return };
    let meets_everyone = |p: &Phase, at: usize| meets_everyone(skel, p, at);
    // A block followed, before any other call or block, by a collective on every rank, in a
    // phase other than the main loop: fixed (neither drawn nor replayed), or drawn in a
    // straight-line phase (each rank's one execution drawn from the class's spread: NPB MG's
    // set-up at 256 ranks, where one class's ranks agree within a tenth and so have no factors;
    // the collective still waits for the longest draw). In a loop, a drawn block no longer than
    // the part a cut block keeps runs whole and can stand beside one.
    let eligible = |p: &Phase, at: usize| -> bool {
        if p.name == "main_loop" || p.skipped.is_some() || p.steps.is_some() {
            return false;
        }
        let Some(Stmt::Compute { dist, replay: None, removed, seconds, .. }) = p.body.get(at)
        else {
            return false;
        };
        let short = |d: usize| {
            skel.distributions.get(d).and_then(|d| d.q.last()).is_some_and(|&m| m <= KEEP_MIN)
                && *seconds <= KEEP_MIN
        };
        dist.is_none_or(|d| !p.is_loop || short(d))
            && *removed == 0.0
            && meets_everyone(p, at).is_some()
    };
    // The phase of each class with a name (the report gathers the phases by name).
    let index = PhaseIndex::new(&skel.classes);
    let keep = |d: f64| (KEEP_SHARE * d).max(KEEP_MIN).min(d);
    let (mut saved, mut counted) = (0.0, 0.0);
    let mut chosen = Vec::new();
    for p in &first.phases {
        let at_of: Vec<Option<usize>> =
            (0..skel.classes.len()).map(|ci| index.get(ci, &p.name)).collect();
        for at in 0..p.body.len() {
            let all = skel.classes.iter().zip(&at_of).all(|(c, pi)| {
                pi.is_some_and(|pi| c.phases[pi].full == p.full && eligible(&c.phases[pi], at))
            });
            if !all {
                continue;
            }
            // Every class meets the others at the same collective, after the same statements:
            // blocks at one position of programs that differ between there (a master that
            // hands out tasks and workers that compute them) are not one block.
            let Some(to) = meets_everyone(p, at) else { continue };
            let want = shape(p, at, to);
            let aligned = skel.classes.iter().zip(&at_of).all(|(c, pi)| {
                pi.is_some_and(|pi| {
                    meets_everyone(&c.phases[pi], at) == Some(to)
                        && shape(&c.phases[pi], at, to) == want
                })
            });
            if !aligned {
                continue;
            }
            // The longest and the shortest rank's durations: only where the longest rank's excess
            // over the shortest, which a uniform cut cannot take, is more than the part kept.
            let (mut most, mut least) = (0.0f64, f64::INFINITY);
            for (c, pi) in skel.classes.iter().zip(&at_of) {
                let Some(pi) = pi else { continue };
                if let Some(st) = c.phases[*pi].body.get(at) {
                    let (l, h) = extremes(skel, c, st);
                    most = most.max(h);
                    least = least.min(l);
                }
            }
            let skip = most - keep(most);
            if skip < MIN_REMOVED || most - least <= keep(most) {
                continue;
            }
            // A loop's block where the ranks differ by less than the lightest rank's own
            // duration is left to the uniform cut, whose shrink takes more of it (NPB EP's two
            // long blocks, ranks 0.90–1.08 of the mean, before each reduction): the kept part
            // here is a fixed share.
            if p.is_loop && most - least <= least {
                continue;
            }
            // The estimate counts the block at its mean (the recorded computation's share, with
            // the time off the processor that goes with it), in every iteration the skeleton
            // runs.
            if let Some(Stmt::Compute { seconds, .. }) = p.body.get(at) {
                counted += (seconds - keep(*seconds)).max(0.0)
                    * p.run as f64
                    * wall_per_compute(&p.body, at);
            }
            saved += skip * p.run as f64;
            chosen.push((p.name.clone(), at));
        }
    }
    for (name, at) in chosen {
        for (ci, c) in skel.classes.iter_mut().enumerate() {
            let Some(pi) = index.get(ci, &name) else { continue };
            // A drawn block stands beside one in a loop only because it is too short to cut: it
            // runs whole.
            let is_loop = c.phases[pi].is_loop;
            if let Some(Stmt::Compute { keep_only, dist, .. }) = c.phases[pi].body.get_mut(at) {
                *keep_only = dist.is_none() || !is_loop;
            }
        }
    }
    account(scaling, lead_recorded, counted, saved);
}

/// Where block `at` of `p` meets the other ranks: the position of the next collective of every
/// rank (on `MPI_COMM_WORLD`). In a straight-line phase, point-to-point calls and blocks may
/// come between (NPB IS's verification: each rank sorts its keys, passes one to its neighbour,
/// then all reduce): the collective still waits for the rank that computed longest.
fn meets_everyone(skel: &Skeleton, p: &Phase, at: usize) -> Option<usize> {
    use mpiskel_program::{Call, Comm};
    for (i, st) in p.body.iter().enumerate().skip(at + 1) {
        match st {
            Stmt::Call { call: Call::Collective { comm, slot: None, .. }, .. } => {
                return matches!(skel.comms.get(*comm), Some(Comm::World)).then_some(i)
            }
            Stmt::Call { call: Call::Collective { .. }, .. } => return None,
            Stmt::Call { .. } | Stmt::Compute { .. } if !p.is_loop => {}
            _ => return None,
        }
    }
    None
}

/// The statements of `p` from `at` to `to` by kind (a block, or a call of an operation): the
/// classes' phases must agree on them for their blocks at one position to be one block.
fn shape(p: &Phase, at: usize, to: usize) -> Vec<String> {
    p.body[at..=to.min(p.body.len().saturating_sub(1))]
        .iter()
        .map(|st| match st {
            Stmt::Call { call, .. } => format!("{:?}", std::mem::discriminant(call)),
            Stmt::Compute { .. } => "compute".into(),
            _ => "other".into(),
        })
        .collect()
}

/// A block's shortest and longest durations over the ranks of class `c`: fixed, times each
/// rank's weight; drawn, the least and the most of as many draws as the class has ranks (their
/// expected quantiles, 1/(k+1) and k/(k+1)), times the lightest and heaviest weights.
fn extremes(skel: &Skeleton, c: &ClassProgram, st: &Stmt) -> (f64, f64) {
    let Stmt::Compute { seconds, factors, dist, .. } = st else { return (0.0, 0.0) };
    let weights = skel.block_weights(c, *factors);
    let (wl, wh) = weights.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &w| (l.min(w), h.max(w)));
    match dist.and_then(|d| skel.distributions.get(d)) {
        Some(d) if !d.q.is_empty() => {
            let k = weights.len() as f64;
            let at = |u: f64| crate::removal::quantile(&d.q, u);
            (at(1.0 / (k + 1.0)) * wl, at(k / (k + 1.0)) * wh)
        }
        _ => (seconds * wl, seconds * wh),
    }
}

/// The second step of [`cut_compute`]: a class's last compute block, after its last call, runs
/// only a short part (max(`KEEP_SHARE`, `KEEP_MIN`) of its shortest duration on the class's
/// ranks), and each rank adds back what it skipped at the pace of that part. Nothing waits for
/// this block but the end of the run, whose time is the slowest rank's span — and the prediction
/// is the slowest rank's sum of its phases, its own block included — so, unlike a block before a
/// collective, each rank restores only its own: the verification and output after an NPB LU's
/// last reduction (rank 0: 0.24 ms of a 1.8 ms skeleton on 16 ranks). Only while the skeleton
/// is over its target. Updates the estimate and factor.
fn cut_tail(skel: &mut Skeleton, scaling: &mut Scaling) {
    let lead_recorded = lead_recorded(skel);
    if scaling.skeleton_estimate_s <= scaling.target_s || lead_recorded <= 0.0 {
        return;
    }
    let lead = crate::recorded::lead_class_index(skel);
    let mut counted = 0.0f64;
    let mut saved = 0.0f64;
    for ci in 0..skel.classes.len() {
        let least_weight = {
            let c = &skel.classes[ci];
            let Some(p) = c.phases.last() else { continue };
            let Some(Stmt::Compute { factors, .. }) = p.body.last() else { continue };
            skel.block_weights(c, *factors).into_iter().fold(f64::INFINITY, f64::min)
        };
        let c = &mut skel.classes[ci];
        let Some(p) = c.phases.last_mut() else { continue };
        if p.is_loop || p.full != 1 || p.skipped.is_some() {
            continue;
        }
        let Some(Stmt::Compute {
            seconds,
            dist: None,
            replay: None,
            removed,
            keep_only: false,
            ..
        }) = p.body.last_mut()
        else {
            continue;
        };
        let least = *seconds * if least_weight.is_finite() { least_weight } else { 1.0 };
        let lose = least - (KEEP_SHARE * least).max(KEEP_MIN);
        if *removed != 0.0 || lose < MIN_REMOVED {
            continue;
        }
        *removed = lose;
        saved = saved.max(lose);
        if lead == Some(ci) {
            counted = lose;
        }
    }
    account(scaling, lead_recorded, counted, saved);
}

/// Records a cut in `scaling`: `saved` recorded seconds per rank not run, of which `counted`
/// were in the estimate (recorded computation of the lead class, `lead_recorded` in all).
fn account(scaling: &mut Scaling, lead_recorded: f64, counted: f64, saved: f64) {
    if saved <= 0.0 {
        return;
    }
    let seconds_of = |compute: f64| compute / lead_recorded * scaling.app_time_s;
    scaling.skeleton_estimate_s = (scaling.skeleton_estimate_s - seconds_of(counted)).max(0.0);
    scaling.compute_removed_s += saved;
    if scaling.skeleton_estimate_s > 0.0 {
        scaling.factor = scaling.app_time_s / scaling.skeleton_estimate_s;
    }
}

/// [`cut_compute`], with the main loop's blocks (`main`) or without.
fn cut_compute_with(skel: &mut Skeleton, scaling: &mut Scaling, main: bool) {
    let lead_recorded = lead_recorded(skel);
    let (app_time_s, target_s) = (scaling.app_time_s, scaling.target_s);
    if scaling.skeleton_estimate_s <= target_s || lead_recorded <= 0.0 {
        return;
    }
    // Application seconds that a share of the recorded computation stands for.
    let seconds_of = |compute: f64| compute / lead_recorded * app_time_s;
    let weight_min = |c: &ClassProgram, factors: Option<usize>| -> f64 {
        let w = skel.block_weights(c, factors).into_iter().fold(f64::INFINITY, f64::min);
        Some(w).filter(|w| w.is_finite()).unwrap_or(1.0)
    };
    // What a block can lose in one class, less what runs: its shortest duration on any of its
    // ranks, or for a drawn block what every rank may skip (see [`crate::removal`]).
    let drawn = crate::removal::drawn_removals(skel);
    let index = PhaseIndex::new(&skel.classes);
    let can_at = |ci: usize, pi: usize, at: usize| -> Option<f64> {
        let c = &skel.classes[ci];
        let p = c.phases.get(pi)?;
        let Some(Stmt::Compute { seconds, dist, factors, keep_only: false, removed, .. }) =
            p.body.get(at)
        else {
            return None;
        };
        // A block the tail cut took already keeps its cut.
        if *removed > 0.0 {
            return None;
        }
        let least = match dist {
            Some(_) => *drawn.get(&p.name)?.get(&at)?,
            None => *seconds * weight_min(c, *factors),
        };
        Some((least - (KEEP_SHARE * least).max(KEEP_MIN)).max(0.0))
    };
    let can_of = |ci: usize, phase: &str, at: usize| can_at(ci, index.get(ci, phase)?, at);
    let Some(first) = skel.classes.first() else { return };
    // Blocks every class has, at each class's (phase, position), with what all of them can
    // lose per execution, how often the skeleton runs them, and the wall seconds per second of
    // their computation ([`wall_per_compute`]).
    let mut blocks: Vec<(Vec<Option<Place>>, f64, f64, f64)> = Vec::new();
    let mut named = std::collections::HashSet::new();
    for p in first.phases.iter().filter(|p| main || p.name != "main_loop") {
        let runs = p.run as f64;
        for at in 0..p.body.len() {
            let can = (0..skel.classes.len())
                .map(|ci| can_of(ci, &p.name, at))
                .try_fold(f64::INFINITY, |m, x| x.map(|x| m.min(x)));
            // Blocks too short to matter, or to time the part that runs, stay as recorded.
            if let Some(can) =
                can.filter(|&c| c >= MIN_REMOVED && seconds_of(c * runs) >= 0.01 * target_s)
            {
                let places: Vec<_> = (0..skel.classes.len())
                    .map(|ci| index.get(ci, &p.name).map(|pi| (pi, at)))
                    .collect();
                named.insert(places.clone());
                blocks.push((places, can, runs, wall_per_compute(&p.body, at)));
            }
        }
    }
    // Blocks of straight-line phases whose names differ between the classes but that end at
    // the same collective of all ranks in every class ([`before_world_collectives`]): the
    // classes' nests differ around them (a rank that relays messages the others do not), and
    // the collective ends the same computation on every rank.
    for places in before_world_collectives(skel) {
        let places: Vec<_> = places.into_iter().map(Some).collect();
        if named.contains(&places) {
            continue;
        }
        let can = places
            .iter()
            .enumerate()
            .map(|(ci, at)| at.and_then(|(pi, at)| can_at(ci, pi, at)))
            .try_fold(f64::INFINITY, |m, x| x.map(|x| m.min(x)));
        if let Some(can) = can.filter(|&c| c >= MIN_REMOVED && seconds_of(c) >= 0.01 * target_s) {
            let wall =
                places[0].map_or(1.0, |(pi, at)| wall_per_compute(&first.phases[pi].body, at));
            blocks.push((places, can, 1.0, wall));
        }
    }
    let total: f64 = blocks.iter().map(|b| b.1 * b.2).sum();
    let total_wall: f64 = blocks.iter().map(|b| b.1 * b.2 * b.3).sum();
    // No block common to all classes: where a loop was cut, the rest stays whole (LU's corner
    // classes cut apart lose the waiting of their wavefront: S 16 at half CPU speed −7.9 %
    // against −4.4 %); a program with no loop to cut has nothing else to shrink.
    if total <= 0.0 && scaling.main_full > 1 {
        return;
    }
    if total <= 0.0 {
        let per_class = blocks_of_each_class(skel, &can_of);
        cut_each_class(skel, scaling, &seconds_of, &per_class);
        return;
    }
    let share = ((scaling.skeleton_estimate_s - target_s) / seconds_of(total_wall)).min(1.0);
    // What the cut blocks still run, on average and on the rank that computes most of each,
    // over the run.
    let (mut kept, mut kept_mean) = (0.0, 0.0);
    for (places, can, runs, wall) in &blocks {
        let (mut most, mut mean) = (0.0f64, 0.0f64);
        let weights = place_weights(skel, places);
        for ((c, ws), place) in skel.classes.iter_mut().zip(&weights).zip(places) {
            let w = ws.iter().copied().fold(1.0f64, f64::max);
            let Some((pi, at)) = *place else { continue };
            if let Some(Stmt::Compute { removed, seconds, dist, factors, .. }) =
                c.phases[pi].body.get_mut(at)
            {
                *removed = share * can;
                // Drawn blocks and blocks with per-rank factors are not shrunk (see the runtime's
                // sk_compute_drawn_less and sk_compute_less_whole).
                if dist.is_none() && factors.is_none() {
                    most = most.max(*seconds * w - *removed);
                    mean = mean.max(*seconds - *removed);
                }
            }
        }
        kept += most.max(0.0) * runs * wall;
        kept_mean += mean.max(0.0) * runs * wall;
    }
    scaling.skeleton_estimate_s -= share * seconds_of(total_wall);
    scaling.compute_removed_s += share * total;
    // Still over: losing the same seconds everywhere keeps every rank's difference from the
    // lightest (NPB EP's ranks compute 0.90–1.08 times the mean). Each rank then runs the same
    // share of what its blocks without drawn deviations keep, and adds its own remainder back:
    // those differences are the ranks' weights, the same in every execution, so the rank that
    // computes most of one block computes most of all, and the maximum over ranks of their
    // per-phase sums, which is the prediction, stays that of the blocks run whole. (Drawn
    // blocks make a different rank the slowest at each execution; shrunk, the waiting for each
    // execution's slowest would be lost: NPB FT −8 % against +2 %.)
    // The estimate so far counts each block's mean; the heaviest rank keeps more.
    let heaviest = scaling.skeleton_estimate_s + seconds_of(kept - kept_mean);
    if share >= 1.0 && heaviest > target_s && kept > 0.0 {
        let f = (1.0 - (heaviest - target_s) / seconds_of(kept)).max(MIN_SHRINK);
        scaling.compute_shrink = f;
        scaling.skeleton_estimate_s = heaviest - (1.0 - f) * seconds_of(kept);
    }
    if scaling.skeleton_estimate_s > 0.0 {
        scaling.factor = app_time_s / scaling.skeleton_estimate_s;
    }
}

/// Per class, the blocks that can lose at least `MIN_REMOVED` (`can_of`: what a class's block
/// of a phase at a position can lose per execution): (phase, position, that loss, executions
/// run).
fn blocks_of_each_class(
    skel: &Skeleton,
    can_of: &dyn Fn(usize, &str, usize) -> Option<f64>,
) -> Vec<Vec<(usize, usize, f64, f64)>> {
    let mut per_class = Vec::with_capacity(skel.classes.len());
    for (ci, c) in skel.classes.iter().enumerate() {
        let mut blocks = Vec::new();
        for (pi, p) in c.phases.iter().enumerate() {
            for at in 0..p.body.len() {
                if let Some(can) = can_of(ci, &p.name, at).filter(|&x| x >= MIN_REMOVED) {
                    blocks.push((pi, at, can, p.run as f64));
                }
            }
        }
        per_class.push(blocks);
    }
    per_class
}

/// Each class's rank weights at its block of `places` (its factors', where it has any).
fn place_weights(skel: &Skeleton, places: &[Option<Place>]) -> Vec<Vec<f64>> {
    let weights = skel.classes.iter().zip(places).map(|(c, place)| {
        let factors = place.and_then(|(pi, at)| match c.phases[pi].body.get(at) {
            Some(Stmt::Compute { factors, .. }) => *factors,
            _ => None,
        });
        skel.block_weights(c, factors)
    });
    weights.collect()
}

/// [`cut_compute`] for a program without a loop to cut, where no compute block is at the same
/// place in every class — classes whose programs do not correspond, as a master that only hands
/// out tasks and workers that each ran a different number of them (the order of a task farm is
/// the traced run's): each
/// block loses, on every rank of its class, the same share of what it can lose there (its
/// shortest duration on the class's ranks, less the part that runs), the share that brings the
/// class that computes most to the target. The differences between the ranks of a class stay
/// as recorded; between classes, each keeps the same share of its computation, so the ranks
/// that wait for others wait in proportion. `per_class`: each class's blocks, as (phase,
/// position, seconds it can lose per execution, executions run).
fn cut_each_class(
    skel: &mut Skeleton,
    scaling: &mut Scaling,
    seconds_of: &dyn Fn(f64) -> f64,
    per_class: &[Vec<(usize, usize, f64, f64)>],
) {
    let target_s = scaling.target_s;
    // The class that can lose most, by the wall time its blocks take ([`wall_per_compute`]),
    // and what that class can lose, by its computation.
    let (most, most_compute) = per_class
        .iter()
        .zip(&skel.classes)
        .map(|(b, c)| {
            b.iter().fold((0.0, 0.0), |(w, s), &(pi, at, can, runs)| {
                (w + can * runs * wall_per_compute(&c.phases[pi].body, at), s + can * runs)
            })
        })
        .fold((0.0f64, 0.0f64), |m, x| if x.0 > m.0 { x } else { m });
    if most <= 0.0 || seconds_of(most) < 0.01 * target_s {
        return;
    }
    let share = ((scaling.skeleton_estimate_s - target_s) / seconds_of(most)).min(1.0);
    for (c, blocks) in skel.classes.iter_mut().zip(per_class) {
        for &(pi, at, can, _) in blocks {
            if let Some(Stmt::Compute { removed, .. }) = c.phases[pi].body.get_mut(at) {
                *removed = share * can;
            }
        }
    }
    scaling.skeleton_estimate_s -= share * seconds_of(most);
    scaling.compute_removed_s += share * most_compute;
    if scaling.skeleton_estimate_s > 0.0 {
        scaling.factor = scaling.app_time_s / scaling.skeleton_estimate_s;
    }
}

/// Smallest share of a cut block's kept part that still runs ([`Scaling::compute_shrink`]).
const MIN_SHRINK: f64 = 0.1;
