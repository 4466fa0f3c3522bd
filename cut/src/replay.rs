//! Compute blocks that replay their recorded durations instead of drawing them.
//!
//! A drawn block gives each rank an independent duration from the block's distribution
//! ([`mpiskel_program::distribution`]). That keeps how far the ranks spread, not who computes
//! longest when: where the load rotates over the ranks (each rank's work follows
//! `(rank + iteration) mod 3`, a pipeline's stages, a moving root), some neighbour computes the
//! longest block in every iteration of the application, while independent draws miss it in a
//! share of the iterations and the skeleton waits less than the application did (the polling
//! fixture program: −12 to −17 %).
//!
//! A loop's blocks therefore replay what the ranks recorded in the iterations the skeleton runs:
//! of the loop's `full` iterations, the `run` it runs are taken evenly (the middle of each of
//! `run` equal stretches), and every block of every class replays the same recorded iterations,
//! so that each iteration the skeleton runs is one the application ran, on every rank at once.
//! The values are scaled by one factor per loop (its blocks' recorded computation over all
//! iterations, ranks and classes over that of the replayed iterations), so the computation over
//! the run stays the application's while the pattern across ranks and classes stays as recorded:
//! a factor per block, or per class, would undo it (a class of one rank that computed the
//! longest block in every replayed iteration would be scaled down to its mean). APPrime (Jin et al.,
//! SIGMETRICS 2015) models a parameter that varies by a distribution it samples; here the
//! samples are kept as recorded, per rank and per iteration, which keeps their joint pattern.
//!
//! A loop whose first iteration computes much more than the others (one-off work:
//! reading the input before the first of a loop of broadcasts) replays it as recorded, apart,
//! and the skeleton counts it once ([`FIRST_APART`]); the others stand for the rest.
//!
//! Blocks under [`MIN_SHARE`] of their loop's computation keep their draws, unless together
//! they hold most of it ([`MOST_SMALL`]: a loop of hundreds of short blocks between as many
//! exchanges, as NPB MG's V-cycle, where the draws' maxima add up). A block with
//! computation removed ([`crate::removal`]) replays too: every rank skips the same
//! seconds of its recorded duration, as of a draw. The blocks of a cut inner loop replay the
//! inner iterations it runs (the same ones, one per equal stretch, in every iteration of the
//! loop around it): where a rank computes slowly for a stretch of iterations (NPB CG: its
//! slow stretches span several inner iterations), independent draws per block spread that
//! over all ranks and iterations, and the slowest rank of a step is faster than it was.
//!
//! A time-step loop's steps of one kind are such a loop too: each block of a kind's body
//! replays the steps of that kind the skeleton runs (its schedule chose them, every class
//! alike), as recorded, scaled by one factor per kind. Steps change along the run where a plain
//! loop's iterations repeat (panels that shrink, neighbour lists that grow), so drawing would
//! mix the blocks of different steps on each rank (the panel program simulated whole: +43 %;
//! LAMMPS peptide +13 %; replayed, within 2 %).
//!
//! Blocks inside a guard, and blocks whose replayed iterations miss their mean by more than
//! [`MIN_SCALE`] either way (time spent in a few iterations only) keep their draws; so do
//! blocks past the budget of table cells, taken in order of the time they take in the
//! skeleton.
//!
//! # Complexity
//! O(recorded samples of the blocks replayed + blocks × log blocks).

use std::collections::HashMap;

use mpiskel_compress::LoopNest;
use mpiskel_logicalize::LogicalTrace;

pub use mpiskel_program::Replay;
use mpiskel_program::{leaf_map, Skeleton, Stmt};

/// Table cells (executions × ranks of the class) the replayed blocks of a skeleton may hold in
/// all: about 10 bytes of source each, so at most a few hundred kilobytes of tables.
pub const MAX_CELLS: usize = 1 << 15;

/// Share of its loop's computation per iteration below which a block keeps its draws: its
/// spread can hold no rank up for long (the microsecond between two calls of a halo exchange).
/// Where such blocks together hold most of the loop's computation ([`MOST_SMALL`]), they
/// replay all the same: a loop of many short blocks between many synchronisations (NPB MG's
/// V-cycle: 255 of the 261 blocks of an iteration at 256 ranks under 20 µs, 62–67 % of its
/// computation) waits at each for the longest of its neighbours' independent draws, and over
/// hundreds of exchanges those maxima add up to more than the ranks' recorded pattern, which
/// is steady from one iteration to the next (mg.B.256 under SimGrid on its platform, seeds
/// 0–4: +4.0 to +19.7 % by phase drawn, −1.7 to −1.8 % replayed; MG S on 16 ranks, 55 %
/// of its main loop's computation in short blocks, over the eight scenarios with a replay:
/// mean |error| 2.4 → 1.5 %). Elsewhere the short blocks hold at most 26 % of a loop's
/// computation in the NPB fixtures (BT S 16), and their draws stay.
pub const MIN_SHARE: f64 = 0.01;

/// Share of a loop's computation per iteration its blocks under [`MIN_SHARE`] must hold
/// together for them to replay: most of it.
pub const MOST_SMALL: f64 = 0.5;

/// Table cells the blocks under [`MIN_SHARE`] that replay together ([`MOST_SMALL`]) may hold
/// besides [`MAX_CELLS`]: a loop of hundreds of short blocks on hundreds of ranks (mg.B.256:
/// 105,832 cells, 1.4 MB more source; `make` 5.6 s and 139 MB instead of 3.4 s and 89 MB).
pub const MAX_SMALL_CELLS: usize = 1 << 17;

/// How far the iterations replayed may miss the block's mean over the whole loop (as a factor,
/// either way) and still stand for it.
pub const MIN_SCALE: f64 = 0.5;

/// A loop whose first iteration's recorded computation (its replayable blocks, every rank of
/// every class) is over this factor of the mean of the others' replays that iteration as
/// recorded and counts it once: the first iteration carries one-off work (NPB MG's rank 0
/// reads its input before the first of a loop of five broadcasts: 0.39 ms in one execution of
/// 40). Otherwise it is one iteration among the others: in a pipelined loop the first runs from
/// ranks that start together, shorter than the steady state the others show, and counted once
/// it weighs that short start (NPB BT S on 9 ranks: +12 % against −3 %; LU W, whose first
/// iteration computes less than the others: +4.0 % against +0.8 %). The factor is the one the
/// skeleton's runtime applies to the measured first iteration (`SK_FIRST_LONGER`).
pub const FIRST_APART: f64 = 1.25;

/// A compute block that may replay: where it is and what it costs.
struct Candidate {
    class: usize,
    phase: usize,
    leaf: usize,
    /// Executions per iteration of the phase's loop in the application.
    per_iteration: u64,
    /// For a block of the phase's cut inner loop: that loop's iterations in the application
    /// and run, and the block's executions per iteration of it.
    inner: Option<(u64, u64, u64)>,
    /// For a block of a time-step loop: the kind of step it is in, that kind's steps in the
    /// application, and which of them (counted among that kind's) the skeleton runs.
    steps: Option<(usize, u64, Vec<u64>)>,
    /// Seconds it takes in one run of the skeleton (per rank).
    weight: f64,
    cells: usize,
    /// Under [`MIN_SHARE`] of its loop's computation: one of many small blocks that replay
    /// together, within [`MAX_SMALL_CELLS`].
    small: bool,
}

/// The application's iterations a loop of `full` iterations run `run` times replays. With
/// `apart` (see [`FIRST_APART`]), a loop cut to two iterations or more replays its first as the
/// application ran it and the skeleton counts it once. The others (all of them otherwise) come
/// one from each of the equal stretches of the iterations left: the one whose critical
/// computation (`critical[i]`: per block, the longest any rank recorded in iteration `i`,
/// summed) is the median of its stretch, so that the sample is neither the stretch's least nor
/// its most unbalanced iteration, since the scale keeps the mean computation but not how far the
/// ranks spread. Among iterations alike (no profile, or equal values), the one at an offset
/// into the stretch that moves by the golden ratio from one stretch to the next (jittered
/// sampling), so that a pattern with the stretch's period (every rank's load rotating with
/// period 3, stretches of 15 iterations) is not sampled in the same phase every time. Every
/// iteration when `run ≥ full`.
pub fn replayed_iterations(full: u64, run: u64, apart: bool, critical: &[f64]) -> Vec<u64> {
    let run = run.clamp(1, full.max(1));
    if apart && may_set_apart(full, run) {
        let mut v = vec![0];
        v.extend(spread(1, full, run - 1, critical));
        return v;
    }
    spread(0, full, run, critical)
}

/// Whether a loop of `full` iterations run `run` times can replay its first iteration apart
/// from the others: when it is cut and runs two or more.
pub fn may_set_apart(full: u64, run: u64) -> bool {
    run >= 2 && full > run
}

/// `run` of the iterations `from..full`, one from each equal stretch: its median by
/// `critical`, the golden-ratio offset among equals.
fn spread(from: u64, full: u64, run: u64, critical: &[f64]) -> Vec<u64> {
    const GOLDEN: f64 = 0.618_033_988_749_895;
    let n = full.saturating_sub(from);
    let run = run.clamp(1, n.max(1));
    (0..run)
        .map(|j| {
            let offset = (0.5 + j as f64 * GOLDEN).fract();
            let at = |x: f64| from + ((x * n as f64 / run as f64) as u64).min(n.max(1) - 1);
            let (lo, hi) = (at(j as f64), at((j + 1) as f64).max(at(j as f64) + 1));
            let hi = if j + 1 == run { full } else { hi };
            let jitter = at(j as f64 + offset);
            median_near(lo, hi, jitter, critical)
        })
        .collect()
}

/// The iteration of `lo..hi` whose value in `critical` is the stretch's median, the nearest to
/// `near` among those of that value; `near` itself without values.
fn median_near(lo: u64, hi: u64, near: u64, critical: &[f64]) -> u64 {
    let Some(values) = critical.get(lo as usize..hi as usize) else { return near };
    if values.is_empty() || values.iter().any(|x| !x.is_finite()) {
        return near;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    // Both middle values of an even stretch are medians.
    let (a, b) = (sorted[(n - 1) / 2], sorted[n / 2]);
    let tol = 1e-9 * b.abs().max(1e-300);
    (lo..hi)
        .filter(|&i| {
            let x = critical[i as usize];
            (x - a).abs() <= tol || (x - b).abs() <= tol
        })
        .min_by_key(|&i| i.abs_diff(near))
        .unwrap_or(near)
}

/// The compute blocks of `skel`'s loops (and kinds of time steps) that may replay, each with
/// the rows and cells its table would take; blocks too short to hold anything up left out
/// unless together they hold most of their loop's computation.
fn candidates_of(skel: &Skeleton) -> Vec<Candidate> {
    let mut candidates = Vec::new();
    for (ci, class) in skel.classes.iter().enumerate() {
        let cols = class.ranks.len();
        for (pi, p) in class.phases.iter().enumerate() {
            if let (Some(schedule), Some(Stmt::Steps { cases })) = (&p.steps, p.body.first()) {
                step_candidates(ci, pi, p, schedule, cases, cols, &mut candidates);
                continue;
            }
            if !p.is_loop || p.run == 0 {
                continue;
            }
            let mut found = Vec::new();
            for (i, st) in p.body.iter().enumerate() {
                match (p.inner, st) {
                    // The cut inner loop: its blocks replay the inner iterations that run.
                    (Some(ic), Stmt::Loop { body, .. }) if ic.index == i => {
                        let mut own = Vec::new();
                        blocks(body, 1, &mut own);
                        found.extend(own.into_iter().map(|(leaf, seconds, per)| {
                            (leaf, seconds, ic.full * per, Some((ic.full, ic.run, per)))
                        }));
                    }
                    _ => {
                        let mut own = Vec::new();
                        blocks(std::slice::from_ref(st), 1, &mut own);
                        found.extend(own.into_iter().map(|(l, s, per)| (l, s, per, None)));
                    }
                }
            }
            // Blocks too short to hold anything up keep their draws, unless together they
            // hold most of the loop's computation (see [`MIN_SHARE`]).
            let is_small =
                |seconds: f64, per: u64| seconds * (per as f64) < MIN_SHARE * p.compute_s;
            let small_s: f64 = found
                .iter()
                .filter(|&&(_, seconds, per, _)| is_small(seconds, per))
                .map(|&(_, seconds, per, _)| seconds * per as f64)
                .sum();
            let many_small = small_s > MOST_SMALL * p.compute_s;
            for (leaf, seconds, per_iteration, inner) in found {
                let small = is_small(seconds, per_iteration);
                if small && !many_small {
                    continue;
                }
                let per_run = inner.map_or(per_iteration, |(_, run, per)| run * per);
                let rows = (p.run * per_run) as usize;
                candidates.push(Candidate {
                    class: ci,
                    phase: pi,
                    leaf,
                    per_iteration,
                    inner,
                    steps: None,
                    weight: seconds * rows as f64,
                    cells: rows * cols,
                    small,
                });
            }
        }
    }
    candidates
}

/// One factor per loop, over every class (`names`: each replay's loop): the whole loop's
/// recorded computation over the replayed iterations', times the share replayed; a first
/// iteration replayed apart stays as recorded.
fn scale_to_loops(skel: &mut Skeleton, names: &[String]) {
    let mut totals: HashMap<&str, (f64, f64)> = HashMap::new();
    for (r, name) in skel.replays.iter().zip(names) {
        let e = totals.entry(name.as_str()).or_default();
        e.0 += r.scale;
        e.1 += r.seconds[r.first_rows..].iter().flatten().sum::<f64>();
    }
    for (r, name) in skel.replays.iter_mut().zip(names) {
        let (whole, replayed) = totals[name.as_str()];
        let f = if replayed > 0.0 { whole / replayed } else { 1.0 };
        r.scale = f;
        let first = r.first_rows;
        for x in r.seconds[first..].iter_mut().flatten() {
            *x *= f;
        }
    }
}

/// Makes the compute blocks of the skeleton's loops replay their recorded durations, as far as
/// [`MAX_CELLS`] allows; returns how many blocks replay. `nests` are the loop nests the skeleton
/// was built from, one per class of `lt`.
pub fn attach(skel: &mut Skeleton, lt: &LogicalTrace, nests: &[LoopNest]) -> usize {
    skel.replays.clear();
    clear(skel);
    if nests.len() != lt.classes.len() || skel.classes.len() != lt.classes.len() {
        return 0;
    }
    let mut candidates = candidates_of(skel);
    candidates.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    let mut maps = HashMap::new();
    // Per loop, over its blocks that may replay, in every class, per iteration: the recorded
    // computation, and the critical one (per execution, the longest any rank recorded).
    let mut profiles: HashMap<String, (Vec<f64>, Vec<f64>)> = HashMap::new();
    // The same for a cut inner loop, per iteration of the loop and of the inner loop.
    let mut inner_profiles: HashMap<String, Vec<f64>> = HashMap::new();
    for c in candidates.iter().filter(|c| c.steps.is_none()) {
        let lm = maps.entry(c.class).or_insert_with(|| {
            let nest = &nests[c.class];
            leaf_map(nest, mpiskel_compress::leaf_count(&nest.items))
        });
        let phase = &skel.classes[c.class].phases[c.phase];
        let Some(positions) = lm.positions.get(c.leaf) else { continue };
        if positions.len() as u64 != phase.full * c.per_iteration {
            continue;
        }
        let full = phase.full as usize;
        let (total, critical) = profiles
            .entry(phase.name.clone())
            .or_insert_with(|| (vec![0.0; full], vec![0.0; full]));
        if total.len() != full {
            continue;
        }
        let inner = c.inner.map(|(f, _, per)| {
            let v = inner_profiles
                .entry(phase.name.clone())
                .or_insert_with(|| vec![0.0; full * f as usize]);
            (v, f as usize, per as usize)
        });
        let mut inner = inner.filter(|(v, f, _)| v.len() == full * f);
        for (k, &p) in positions.iter().enumerate() {
            let Some(op) = lt.classes[c.class].ops.get(p) else { continue };
            let i = k / c.per_iteration as usize;
            for &(_, x) in &op.gap_samples {
                total[i] += f64::from(x);
            }
            let most = op.gap_samples.iter().map(|&(_, x)| f64::from(x)).fold(0.0, f64::max);
            critical[i] += most;
            if let Some((v, f, per)) = inner.as_mut() {
                let j = (k % c.per_iteration as usize) / *per;
                v[i * *f + j] += most;
            }
        }
    }
    let apart: HashMap<&str, bool> = profiles
        .iter()
        .map(|(name, (total, _))| {
            let rest = &total[1.min(total.len())..];
            let mean = rest.iter().sum::<f64>() / rest.len().max(1) as f64;
            (name.as_str(), total.len() > 1 && total[0] > FIRST_APART * mean)
        })
        .collect();
    // Cells used of each budget: [`MAX_CELLS`], and [`MAX_SMALL_CELLS`] for small blocks.
    let mut cells = [0usize; 2];
    let budget = [MAX_CELLS, MAX_SMALL_CELLS];
    let mut chosen: HashMap<(usize, usize, usize), usize> = HashMap::new();
    let mut names = Vec::new();
    for c in candidates {
        let b = usize::from(c.small);
        if cells[b] + c.cells > budget[b] {
            continue;
        }
        let lm = maps.entry(c.class).or_insert_with(|| {
            let nest = &nests[c.class];
            leaf_map(nest, mpiskel_compress::leaf_count(&nest.items))
        });
        let Some(positions) = lm.positions.get(c.leaf) else { continue };
        let phase = &skel.classes[c.class].phases[c.phase];
        let (sample, name) = match &c.steps {
            // A kind of time step: its steps are the loop, the ones the skeleton runs replayed.
            Some((kind, full, which)) => (
                Sample {
                    full: *full,
                    run: which.len() as u64,
                    per_iteration: c.per_iteration,
                    inner: None,
                    apart: false,
                    critical: &[],
                    inner_critical: &[],
                    iterations: Some(which.as_slice()),
                },
                format!("{}#{kind}", phase.name),
            ),
            None => (
                Sample {
                    full: phase.full,
                    run: phase.run,
                    per_iteration: c.per_iteration,
                    inner: c.inner,
                    // A loop with a cut inner loop times that loop on its own: no first apart.
                    apart: phase.inner.is_none()
                        && apart.get(phase.name.as_str()).copied().unwrap_or(false),
                    critical: profiles.get(&phase.name).map_or(&[][..], |(_, c)| c.as_slice()),
                    inner_critical: inner_profiles.get(&phase.name).map_or(&[][..], Vec::as_slice),
                    iterations: None,
                },
                phase.name.clone(),
            ),
        };
        let Some(r) = table(lt, c.class, &skel.classes[c.class].ranks, positions, &sample) else {
            continue;
        };
        cells[b] += c.cells;
        chosen.insert((c.class, c.phase, c.leaf), skel.replays.len());
        names.push(name);
        skel.replays.push(r);
    }
    scale_to_loops(skel, &names);
    for (ci, class) in skel.classes.iter_mut().enumerate() {
        for (pi, p) in class.phases.iter_mut().enumerate() {
            mark(&mut p.body, &|leaf| chosen.get(&(ci, pi, leaf)).copied());
        }
    }
    chosen.len()
}

/// Leaves of the compute blocks of a loop body that may replay, with their mean seconds and
/// executions per iteration of the loop (`times`: the product of the inner loops' counts).
fn blocks(body: &[Stmt], times: u64, out: &mut Vec<(usize, f64, u64)>) {
    for s in body {
        match s {
            Stmt::Compute { seconds, dist, factors, leaf: Some(l), .. }
                if dist.is_some() || factors.is_some() =>
            {
                out.push((*l, *seconds, times));
            }
            Stmt::Loop { count, body, .. } => blocks(body, times * count, out),
            _ => {}
        }
    }
}

/// The blocks of a time-step loop that may replay: per kind of step, the blocks of its body, each
/// replaying the steps of that kind the skeleton runs (`schedule.run`, in their order) as the
/// application recorded them. A kind's steps change along the run where a plain loop's
/// iterations repeat (the panels of a factorization shrink, a particle code's neighbour lists
/// grow): drawn at random, the blocks of one step would come from different steps, on every
/// rank independently, and the waiting they cause with them (the panel fixture program,
/// simulated whole: +43 % with draws, +7 % with each block's mean).
fn step_candidates(
    class: usize,
    phase: usize,
    p: &mpiskel_program::Phase,
    schedule: &mpiskel_program::StepSchedule,
    cases: &[mpiskel_program::StepCase],
    cols: usize,
    out: &mut Vec<Candidate>,
) {
    // Each step that runs, counted among the steps of its kind.
    let mut seen = vec![0u64; cases.len()];
    let mut which: Vec<Vec<u64>> = vec![Vec::new(); cases.len()];
    let mut run = schedule.run.iter().peekable();
    for (q, &kind) in schedule.kinds.iter().enumerate() {
        let Some(n) = seen.get_mut(kind as usize) else { return };
        if run.peek().is_some_and(|&&r| r as usize == q) {
            which[kind as usize].push(*n);
            run.next();
        }
        *n += 1;
    }
    for (kind, case) in cases.iter().enumerate() {
        if which[kind].is_empty() || seen[kind] != case.full {
            continue;
        }
        let mut own = Vec::new();
        blocks(&case.body, 1, &mut own);
        for (leaf, seconds, per) in own {
            // Its share of a mean step, as for a plain loop's blocks.
            let share = seconds * per as f64 * case.full as f64 / p.full.max(1) as f64;
            if share < MIN_SHARE * p.compute_s {
                continue;
            }
            let rows = which[kind].len() * per as usize;
            out.push(Candidate {
                class,
                phase,
                leaf,
                per_iteration: per,
                inner: None,
                steps: Some((kind, case.full, which[kind].clone())),
                weight: seconds * rows as f64,
                cells: rows * cols,
                small: false,
            });
        }
    }
}

/// Whether a loop body holds a block that replays its loop's first iteration apart
/// ([`FIRST_APART`]): the skeleton then counts the loop's first iteration once.
pub fn replays_first(body: &[Stmt], replays: &[Replay]) -> bool {
    mpiskel_program::visit::any(body, &mut |s| match s {
        Stmt::Compute { replay: Some(t), .. } => replays.get(*t).is_some_and(|r| r.first_rows > 0),
        _ => false,
    })
}

fn clear(skel: &mut Skeleton) {
    for c in &mut skel.classes {
        for p in &mut c.phases {
            mark(&mut p.body, &|_| None);
        }
    }
}

fn mark(body: &mut [Stmt], which: &dyn Fn(usize) -> Option<usize>) {
    mpiskel_program::visit::each_mut(body, &mut |s| {
        if let Stmt::Compute { replay, leaf, .. } = s {
            *replay = leaf.and_then(which);
        }
    });
}

/// Which executions of a block a table replays.
struct Sample<'a> {
    /// The loop's iterations in the application, and those the skeleton runs.
    full: u64,
    run: u64,
    /// Executions of the block per iteration in the application.
    per_iteration: u64,
    /// For a block of a cut inner loop: that loop's iterations in the application and run, and
    /// the block's executions per iteration of it.
    inner: Option<(u64, u64, u64)>,
    /// Whether the loop's first iteration replays apart ([`FIRST_APART`]).
    apart: bool,
    /// The loop's critical computation per iteration (see [`replayed_iterations`]).
    critical: &'a [f64],
    /// The same per iteration of a cut inner loop, its iterations in each iteration of the
    /// loop in turn (empty without one).
    inner_critical: &'a [f64],
    /// The iterations replayed, where the skeleton chose them already (the steps of a kind it
    /// runs); otherwise [`replayed_iterations`].
    iterations: Option<&'a [u64]>,
}

/// The table of one block: `positions` are the block's positions in the class program, all
/// `full × per_iteration` executions in order. `None` where they are not that many or hold no
/// samples.
fn table(
    lt: &LogicalTrace,
    class: usize,
    ranks: &[u32],
    positions: &[usize],
    sample: &Sample<'_>,
) -> Option<Replay> {
    let &Sample { full, run, per_iteration, inner, apart, critical, inner_critical, .. } = sample;
    let ops = &lt.classes.get(class)?.ops;
    if per_iteration == 0 || positions.len() as u64 != full * per_iteration {
        return None;
    }
    let col: HashMap<u32, usize> = ranks.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    let iterations = match sample.iterations {
        Some(which) if which.iter().all(|&i| i < full) => which.to_vec(),
        Some(_) => return None,
        None => replayed_iterations(full, run, apart, critical),
    };
    // The executions of iteration `i` that run: all, or those of the inner iterations that run
    // (one per equal stretch, the stretch's median by critical computation).
    let executions = |i: u64| -> Vec<u64> {
        match inner {
            Some((inner_full, inner_run, per)) => {
                let f = inner_full as usize;
                let profile = inner_critical.get(i as usize * f..(i as usize + 1) * f);
                spread(0, inner_full, inner_run, profile.unwrap_or(&[]))
                    .into_iter()
                    .flat_map(|j| (0..per).map(move |m| j * per + m))
                    .collect()
            }
            None => (0..per_iteration).collect(),
        }
    };
    let per_run = inner.map_or(per_iteration, |(_, run, per)| run * per) as usize;
    // Executions of a first iteration replayed apart: as recorded, outside the loop's mean.
    let apart = if apart && may_set_apart(full, run) { per_run } else { 0 };
    // The block's recorded computation over the executions that stand for the loop, per cell
    // (execution × rank of the class). A rank folded into the class that lacks the call here (a
    // rank on the grid's boundary makes none to the neighbour it lacks) computes nothing at it:
    // its computation around the call is in its next call's gap, recorded there.
    let total: f64 = positions[apart..]
        .iter()
        .filter_map(|&p| ops.get(p))
        .flat_map(|op| op.gap_samples.iter())
        .filter(|(r, _)| col.contains_key(r))
        .map(|&(_, x)| f64::from(x))
        .sum();
    let stand_cells = (positions.len() - apart) * ranks.len();
    if stand_cells == 0 {
        return None;
    }
    let overall = total / stand_cells.max(1) as f64;
    let mut rows = Vec::with_capacity(iterations.len() * per_iteration as usize);
    for &i in &iterations {
        for m in executions(i) {
            let p = positions[(i * per_iteration + m) as usize];
            let mut row = vec![0.0; ranks.len()];
            for &(r, x) in &ops.get(p)?.gap_samples {
                if let Some(&c) = col.get(&r) {
                    row[c] = f64::from(x);
                }
            }
            rows.push(row);
        }
    }
    let cells = ((rows.len() - apart) * ranks.len()).max(1) as f64;
    let replayed = rows[apart..].iter().flatten().sum::<f64>() / cells;
    // Iterations that do not stand for the loop (a block that takes its time in a few
    // iterations only, none of them replayed) keep the draws, which hold its mean; unless the
    // block takes its time in the first iteration, replayed apart, and the others are
    // negligible beside it.
    let stands = replayed > 0.0 && (MIN_SCALE..=1.0 / MIN_SCALE).contains(&(overall / replayed));
    let first: f64 = rows[..apart].iter().flatten().sum();
    let rest = total;
    if !(stands || (apart > 0 && rest <= MIN_SHARE * first)) {
        return None;
    }
    // `scale` holds the block's recorded total over the cells, as the iterations replayed
    // would have it if they were the loop's average, until [`attach`] sets the loop's factor.
    Some(Replay {
        class,
        full,
        iterations,
        per_iteration: per_run as u64,
        seconds: rows,
        first_rows: apart,
        scale: overall * cells,
        steps: sample.iterations.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_are_spread_over_the_loop() {
        assert_eq!(spread(0, 60, 4, &[]), vec![7, 16, 41, 50]);
        assert_eq!(replayed_iterations(60, 4, false, &[]), vec![7, 16, 41, 50]);
        // The first apart, then the rest spread over the others.
        assert_eq!(replayed_iterations(60, 4, true, &[]), vec![0, 10, 22, 54]);
        // Not all in one phase of a period that divides the stretch.
        let phases: std::collections::BTreeSet<u64> =
            spread(0, 60, 4, &[]).iter().map(|i| i % 3).collect();
        assert!(phases.len() > 1);
        // Alike by their critical computation: as without it.
        assert_eq!(replayed_iterations(60, 4, false, &[1.0; 60]), vec![7, 16, 41, 50]);
        assert_eq!(replayed_iterations(5, 2, true, &[]), vec![0, 3]);
        assert_eq!(replayed_iterations(5, 5, true, &[]), vec![0, 1, 2, 3, 4]);
        assert_eq!(replayed_iterations(10, 1, true, &[]), vec![5]);
        // More than the loop has: each iteration once.
        assert_eq!(replayed_iterations(3, 7, false, &[]), vec![0, 1, 2]);
    }

    #[test]
    fn each_stretch_replays_its_median_iteration() {
        // Stretches 0..4 and 4..8: medians 3 or 5 (iterations 2, 1), then 2 or 4 (4, 5, 7);
        // of those, the nearest to the golden-ratio offsets 2 and 4.
        let critical = [1.0, 5.0, 3.0, 9.0, 2.0, 2.0, 8.0, 4.0];
        assert_eq!(replayed_iterations(8, 2, false, &critical), vec![2, 4]);
        // The outlier of a stretch is never the one replayed.
        let mut spike = vec![1.0; 30];
        spike[5] = 40.0;
        spike[15] = 0.1;
        for i in replayed_iterations(30, 3, false, &spike) {
            assert!(i != 5 && i != 15, "{i}");
        }
    }
}
