//! The fidelity-checked build's one decision: which candidate skeleton is kept.
//!
//! The cut mechanisms of `mpiskel_cut::pipeline` (main-loop sampling, time-step kinds and
//! families, loop cuts, compute cuts, stretch cuts, …) each make a program; here they only
//! propose. Every candidate is simulated on the fidelity panel
//! (`mpiskel_simulate::fidelity`) beside the application's trace and scored by one measure
//! (`mpiskel_cut::fidelity::Score`: the largest error over the panel, then the longest simulated
//! run); [`search`] keeps the shortest within the bound, else the most faithful one, those within
//! the length bound ([`length_bound`]) first as long as one of them is near the error bound
//! (`mpiskel_cut::fidelity::choose`). The generators, in the order they propose:
//!
//! 1. the default build (whatever the pipeline's own order of cuts made);
//! 2. each other choice of loop nests the trace offers (time steps folded into kinds, the exact
//!    nests, …), at the default target;
//! 3. the default choice for targets twice, four times, … as long (more iterations of every
//!    cut loop, loops of fewer than eight iterations included), up to a third of the
//!    application's time, and last every loop whole;
//! 4. every compute block whole (no compute cut);
//! 5. where the candidate kept so far runs a main loop of fewer than
//!    [`mpiskel_cut::scale::MANY_ITERATIONS`] iterations, more than one of them, and runs longer
//!    than the length rule ([`length_rule`]) on some platform of the panel: the main loop
//!    running 1, 2, … of its iterations (`mpiskel_cut::pipeline::make_running`). The default
//!    runs such a loop whole where its iterations' computation spreads widely, and cuts its
//!    computation instead, which leaves its communication whole: on a slow network it runs as
//!    long as the application (NPB FT W at 5 MB/s: 0.99). The panel measures whether fewer
//!    iterations predict.
//!
//! Where the default is within the bound and the length rule, nothing else is made: the default
//! is the shortest the pipeline can make. Generators 3 and 5 stop at the first candidate within
//! the bound (longer ones cannot be shorter). A program measured already is not measured
//! again, and the search stops at its budget ([`SEARCH_BUDGET`] times the default's cost,
//! counted in calls so that a trace gives the same skeleton on a loaded machine as on an idle
//! one), which the decision records.
//!
//! # Complexity
//! One make and one panel check per candidate: at most 2 + choices + [`MAX_DOUBLINGS`] + 1
//! candidates, and fewer than [`mpiskel_cut::scale::MANY_ITERATIONS`] more from generator 5.

use mpiskel_cut::fidelity::{
    choose, Candidate, Decision, Outcome, PanelRow, Score, ERROR_TIE, NEAR,
};
use mpiskel_cut::pipeline::{make, make_planned, make_running, Built, Plan};
use mpiskel_logicalize::LogicalTrace;
use mpiskel_simulate::fidelity::{check, check_one, worst_phase, Panel};

use crate::observe::Observer;

/// Target doublings tried at most (generator 3): a target 2⁶ = 64 times the default's, a
/// twelfth of the application's time becomes all of it.
pub const MAX_DOUBLINGS: u32 = 6;

/// The longest a candidate of a longer target may be, as a share of the application's time.
pub const LONGEST_SHARE: f64 = 1.0 / 3.0;

/// What the build makes candidates for: the application's time and where it comes from, the
/// target given, whether computation may be cut.
#[derive(Debug, Clone, Copy)]
pub struct Goal<'a> {
    /// Seconds.
    pub app_time_s: f64,
    /// Where it comes from.
    pub source: &'a str,
    /// `--target-time`, if given.
    pub target_s: Option<f64>,
    /// Whether compute blocks may be cut.
    pub compute_cut: bool,
    /// Calls in the trace, over all ranks: the measure of the search's budget
    /// ([`SEARCH_BUDGET`]).
    pub trace_calls: u64,
}

/// How much the other candidates may cost, as a multiple of what the default cost: past it, no
/// further candidate is proposed and the decision says so. Costs are counted in calls, so that
/// the same trace always gives the same skeleton, however loaded the machine: the default's is
/// the trace's calls once to make it and once per platform to simulate the application
/// (an upper bound where the main loop is fast-forwarded), a candidate's the trace's calls to
/// make it (the pipeline walks the logical trace) and the calls its program makes
/// ([`mpiskel_program::deadlock::CheckSummary::operations`]) once per platform. On NPB MG B at
/// 256 ranks (3.9 M calls, 6 platforms) a candidate costs about a seventh of the default's
/// cost (2 s of the 11 s the default took here with its panel), so the budget of two defaults
/// allows every generator's candidates but the longest targets; on a trace of millions of
/// calls per rank it bounds the check at about three times the build without it.
pub const SEARCH_BUDGET: u64 = 2;

/// The least budget, calls: traces of a few hundred thousand calls build in a fraction of a
/// second, and every candidate is measured.
pub const MIN_SEARCH_CALLS: u64 = 20_000_000;

impl Goal<'_> {
    /// The budget of the other candidates, calls ([`SEARCH_BUDGET`]).
    fn budget(&self, platforms: usize) -> u64 {
        (SEARCH_BUDGET * self.trace_calls * (1 + platforms as u64)).max(MIN_SEARCH_CALLS)
    }
}

/// What the other candidates have cost so far, in calls, against their budget
/// ([`SEARCH_BUDGET`]).
struct Spent {
    budget: u64,
    calls: std::cell::Cell<u64>,
}

impl Spent {
    fn add(&self, calls: u64) {
        self.calls.set(self.calls.get() + calls);
    }

    /// Whether the budget is spent; says so once (`cut_short`).
    fn over(&self, cut_short: &mut bool, observer: &dyn Observer) -> bool {
        let over = self.calls.get() >= self.budget;
        if over && !*cut_short {
            observer.line(&format!(
                "the candidates have cost {} calls simulated or walked, {SEARCH_BUDGET} times \
                 the default's: no more are proposed",
                self.calls.get()
            ));
            *cut_short = true;
        }
        over
    }
}

/// The panel and the application's times on it: what every candidate is held to.
#[derive(Debug)]
pub struct Check<'a> {
    /// The platforms.
    pub panel: &'a Panel,
    /// The application's time on each.
    pub app: &'a [f64],
    /// The largest error a kept candidate may show, as a share.
    pub bound: f64,
}

/// The longest a kept candidate may run on the reference, as a share of the application's time:
/// a twelfth where the main loop has [`mpiskel_cut::scale::MANY_ITERATIONS`] iterations or
/// more (enough to sample), a third otherwise (a few long iterations, no loop); never shorter
/// than the default build's own run there, which is as short as the cuts can make it.
pub fn length_bound(main_full: u64, default_share: f64) -> f64 {
    length_rule(main_full).max(default_share)
}

/// The length rule alone: a twelfth where the main loop has
/// [`mpiskel_cut::scale::MANY_ITERATIONS`] iterations or more, a third otherwise.
pub fn length_rule(main_full: u64) -> f64 {
    if main_full >= mpiskel_cut::scale::MANY_ITERATIONS {
        1.0 / 12.0
    } else {
        LONGEST_SHARE
    }
}

impl Check<'_> {
    /// `built` on the panel.
    pub fn rows(&self, built: &Built) -> crate::Result<Vec<PanelRow>> {
        Ok(check(&built.skeleton, built.scaling.compute_shrink, self.panel, self.app)?)
    }
}

/// The candidate kept, its panel and the decision.
#[derive(Debug)]
pub struct Kept {
    /// The program kept.
    pub built: Built,
    /// Its panel.
    pub rows: Vec<PanelRow>,
    /// The candidates and why this one.
    pub decision: Decision,
}

/// Measures `default` (the pipeline's own build of `lt`) on the panel and, where it is not
/// within the bound, the other candidates ([`self`'s generators](self)); keeps one by
/// `mpiskel_cut::fidelity::choose`. Where the default itself cannot be simulated on the panel,
/// it comes back with the reason: the build goes on without the check.
pub fn search(
    lt: &mut LogicalTrace,
    default: Built,
    goal: Goal<'_>,
    check: &Check<'_>,
    observer: &dyn Observer,
) -> Result<Kept, (Box<Built>, crate::Error)> {
    let rows = match check.rows(&default) {
        Ok(rows) => rows,
        Err(e) => return Err((Box::new(default), e)),
    };
    let base_target = default.scaling.target_s;
    let mut cut_short = false;
    let length = length_bound(default.scaling.main_full, Score::of(&rows).reference_share);
    let mut candidates =
        vec![Candidate { name: "default".into(), score: Score::of(&rows), screened: false }];
    let mut best = (default, rows);
    let mut best_index = 0;
    // The programs measured so far, by a digest (made only where other candidates are
    // proposed): a generator that makes one of them again proposes nothing new.
    let within_at_once = candidates[0].score.within(check.bound);
    // What generator 5 looks at: the kept candidate's main loop (iterations, those it runs) and
    // its longest run over the panel.
    let kept_main = std::cell::Cell::new((
        best.0.scaling.main_full,
        best.0.scaling.main_run,
        candidates[0].score.longest_share,
    ));
    let mut seen = if within_at_once && !fewer_wanted(kept_main.get()) {
        Vec::new()
    } else {
        vec![digest(&best.0)]
    };
    let platforms = check.panel.platforms.len();
    let spent = Spent { budget: goal.budget(platforms), calls: std::cell::Cell::new(0) };
    let over = |cut_short: &mut bool| spent.over(cut_short, observer);
    let mut consider = |name: String, built: Built, candidates: &mut Vec<Candidate>| {
        // Its make, then its simulations below.
        spent.add(goal.trace_calls);
        let calls = built.check.operations as u64;
        let d = digest(&built);
        if seen.contains(&d) {
            observer.line(&format!("candidate {name}: the same program as one measured"));
            return None;
        }
        seen.push(d);
        let screened = screened_out(&built, &best.1, candidates, check);
        spent.add(calls);
        if let Some(row) = screened {
            observer.line(&format!(
                "candidate {name}: {:.2} % off on {}, where the one kept is worst: not kept",
                row.error_pct.abs(),
                row.platform
            ));
            let score = Score::of(std::slice::from_ref(&row));
            candidates.push(Candidate { name, score, screened: true });
            return Some(score);
        }
        spent.add(calls * (platforms as u64).saturating_sub(1));
        let rows = match check.rows(&built) {
            Ok(rows) => rows,
            Err(e) => {
                observer.line(&format!("candidate {name} not measured: {e}"));
                return None;
            }
        };
        let score = Score::of(&rows);
        observer.line(&format!(
            "candidate {name}: worst error {:.2} %, runs {:.1} % of the application",
            score.worst_error_pct,
            100.0 * score.longest_share
        ));
        candidates.push(Candidate { name, score, screened: false });
        let scores: Vec<Score> = candidates.iter().map(|c| c.score).collect();
        let kept = choose(&scores, check.bound, length)?;
        if kept == candidates.len() - 1 {
            kept_main.set((built.scaling.main_full, built.scaling.main_run, score.longest_share));
            best = (built, rows);
            best_index = kept;
        }
        Some(score)
    };
    if !within_at_once {
        observer.line(&format!(
            "the skeleton's worst error on the panel is {:.2} %, over {:.1} %: measuring other \
             candidates",
            candidates[0].score.worst_error_pct,
            100.0 * check.bound
        ));
        loop_nests(lt, &goal, &mut || over(&mut cut_short), &mut |name, b| {
            consider(name, b, &mut candidates);
        });
        // Generator 3: longer targets, to every loop whole.
        for k in 1..=MAX_DOUBLINGS {
            if over(&mut cut_short) {
                break;
            }
            let target = base_target * f64::from(1u32 << k);
            let last = target >= goal.app_time_s * LONGEST_SHARE;
            let target = target.min(goal.app_time_s);
            let Ok(b) = make(lt, goal.app_time_s, goal.source, Some(target), goal.compute_cut)
            else {
                break;
            };
            let whole = runs_whole(&b);
            let name = format!("target x{}", 1u32 << k);
            let score = consider(name, b, &mut candidates);
            // Longer ones cannot be kept where this one is over the length bound and a
            // candidate within it is near the error bound (`choose`'s second rule).
            let short_near = candidates
                .iter()
                .any(|c| c.score.reference_share <= length && c.score.within(NEAR * check.bound));
            let over = score.is_some_and(|s| s.reference_share > length);
            if last || whole || score.is_some_and(|s| s.within(check.bound)) || over && short_near {
                break;
            }
        }
        // Generator 4: every compute block whole.
        if goal.compute_cut && !over(&mut cut_short) {
            if let Ok(b) = make(lt, goal.app_time_s, goal.source, goal.target_s, false) {
                consider("every block whole".into(), b, &mut candidates);
            }
        }
    }
    if fewer_wanted(kept_main.get()) {
        fewer_iterations(
            lt,
            &goal,
            kept_main.get(),
            observer,
            &mut || over(&mut cut_short),
            &mut |n, b| consider(n, b, &mut candidates).is_some_and(|s| s.within(check.bound)),
        );
    }
    let (built, rows) = best;
    let score = candidates[best_index].score;
    let outcome =
        if score.within(check.bound) { Outcome::Within } else { closest(&built, &rows, check) };
    let decision = Decision {
        max_error_pct: 100.0 * check.bound,
        candidates,
        kept: best_index,
        outcome,
        length_bound: length,
        cut_short,
    };
    Ok(Kept { built, rows, decision })
}

/// Whether generator 5 proposes, for the candidate kept so far: its main loop's iterations, those
/// it runs, and its longest run over the panel as a share of the application's.
fn fewer_wanted((full, run, longest): (u64, u64, f64)) -> bool {
    full < mpiskel_cut::scale::MANY_ITERATIONS && run > 1 && longest > length_rule(full)
}

/// Generator 2: the default's program from each other choice of loop nests the trace offers
/// (with one choice, it is the default's), each given to `propose` until `stop` says the budget
/// is spent.
fn loop_nests(
    lt: &mut LogicalTrace,
    goal: &Goal<'_>,
    stop: &mut dyn FnMut() -> bool,
    propose: &mut dyn FnMut(String, Built),
) {
    let plan = Plan::of(lt);
    for i in (0..plan.len()).filter(|_| plan.len() > 1) {
        if stop() {
            break;
        }
        let Some(only) = plan.only(i) else { break };
        let made =
            make_planned(lt, only, goal.app_time_s, goal.source, goal.target_s, goal.compute_cut);
        if let Ok(b) = made {
            propose(format!("loop nests {} of {}", i + 1, plan.len()), b);
        }
    }
}

/// Generator 5: the main loop of `full` iterations, of which the candidate kept runs `run` and
/// runs `longest` of the application at most on the panel, running 1, 2, … up to `run` − 1 of
/// them, each given to `propose`, until one is within the bound (`propose` says so) or `stop`
/// says the budget is spent.
fn fewer_iterations(
    lt: &mut LogicalTrace,
    goal: &Goal<'_>,
    (full, run, longest): (u64, u64, f64),
    observer: &dyn Observer,
    stop: &mut dyn FnMut() -> bool,
    propose: &mut dyn FnMut(String, Built) -> bool,
) {
    observer.line(&format!(
        "the skeleton runs {:.1} % of the application on some platform, over {:.1} %: measuring \
         fewer of its main loop's {full} iterations",
        100.0 * longest,
        100.0 * length_rule(full)
    ));
    for k in 1..run {
        if stop() {
            break;
        }
        let (app, source, target, cut) =
            (goal.app_time_s, goal.source, goal.target_s, goal.compute_cut);
        let Ok(b) = make_running(lt, app, source, target, cut, k) else { break };
        if propose(format!("{k} of {full} iterations"), b) {
            break;
        }
    }
}

/// A candidate screened on the one platform where the kept one (its panel `kept`) is worst: its
/// row there where it is off by more than [`NEAR`] times the bound and than the kept one's
/// worst error (and the least of the `candidates` measured), which it cannot be kept with.
fn screened_out(
    built: &Built,
    kept: &[PanelRow],
    candidates: &[Candidate],
    check: &Check<'_>,
) -> Option<PanelRow> {
    let (at, worst) = worst_of(kept);
    let least = candidates.iter().map(|c| c.score.worst_error_pct).fold(f64::INFINITY, f64::min);
    let shrink = built.scaling.compute_shrink;
    let row = check_one(&built.skeleton, shrink, check.panel, check.app, at).ok()??;
    let e = row.error_pct.abs();
    (e > 100.0 * NEAR * check.bound && e > least + ERROR_TIE && e >= worst).then_some(row)
}

/// The outcome of a kept candidate outside the bound: its worst platform and the phase that
/// holds its error there.
fn closest(built: &Built, rows: &[PanelRow], check: &Check<'_>) -> Outcome {
    let worst = rows
        .iter()
        .max_by(|a, b| a.error_pct.abs().total_cmp(&b.error_pct.abs()))
        .cloned()
        .unwrap_or_else(|| PanelRow::new("reference", 0.0, 0.0, 0.0));
    let shrink = built.scaling.compute_shrink;
    let phase = worst_phase(&built.skeleton, shrink, check.panel, &worst.platform)
        .ok()
        .flatten()
        .map(|(name, _)| name);
    Outcome::Closest { platform: worst.platform, error_pct: worst.error_pct, phase }
}

/// Whether everything of `b` runs whole: a longer target adds nothing.
fn runs_whole(b: &Built) -> bool {
    let s = &b.scaling;
    s.main_run >= s.main_full && s.compute_removed_s <= 0.0 && s.compute_shrink >= 1.0
}

/// The index of the platform of the largest |error| among `rows`, and that error.
fn worst_of(rows: &[PanelRow]) -> (usize, f64) {
    rows.iter().enumerate().map(|(i, r)| (i, r.error_pct.abs())).fold((0, 0.0), |best, x| {
        if x.1 > best.1 {
            x
        } else {
            best
        }
    })
}

/// A digest of a candidate's program and scaling, to tell candidates that are the same program.
fn digest(built: &Built) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&(&built.skeleton, &built.scaling)).unwrap_or_default().hash(&mut h);
    h.finish()
}

/// The note on the decision, for people; `None` where the default was kept within the bound
/// without another candidate.
pub fn describe(decision: &Decision) -> Option<String> {
    let kept = &decision.candidates[decision.kept];
    match &decision.outcome {
        Outcome::Within if decision.candidates.len() == 1 => None,
        Outcome::Within => Some(format!(
            "the fidelity check measured {} candidates and kept \"{}\", the shortest within {:.1} \
             % on every platform of the panel (the default's worst error was {:.2} %)",
            decision.candidates.len(),
            kept.name,
            decision.max_error_pct,
            decision.candidates[0].score.worst_error_pct
        )),
        Outcome::Closest { platform, error_pct, phase } => {
            let bound = decision.max_error_pct / 100.0;
            let longer = decision
                .candidates
                .iter()
                .filter(|c| c.score.within(bound))
                .min_by(|a, b| a.score.longest_share.total_cmp(&b.score.longest_share));
            let why = match longer {
                Some(c) => format!(
                    "no candidate within the length bound ({:.1} % of the application's time) \
                     is within {:.1} % on every platform of the panel (\"{}\" is, {:.2} %, but \
                     runs {:.1} % of it on the reference)",
                    100.0 * decision.length_bound,
                    decision.max_error_pct,
                    c.name,
                    c.score.worst_error_pct,
                    100.0 * c.score.reference_share
                ),
                None => format!(
                    "no candidate of {}{} is within {:.1} % on every platform of the panel",
                    decision.candidates.len(),
                    if decision.cut_short {
                        " (measured before the search reached its budget)"
                    } else {
                        ""
                    },
                    decision.max_error_pct
                ),
            };
            Some(format!(
                "{why}: the most faithful, \"{}\", is kept, {error_pct:+.2} % on {platform}{}",
                kept.name,
                phase.as_ref().map_or(String::new(), |p| format!(
                    ", where its phase {p} departs most from the program it stands for"
                ))
            ))
        }
    }
}

/// The note on a skeleton whose fidelity could not be measured: the build goes on without the
/// panel (a finding, not a failure).
pub(crate) fn unchecked(e: &crate::Error) -> String {
    format!(
        "the fidelity check did not run: the skeleton could not be simulated on the panel ({e}); \
         its prediction is not checked (`mpiskel check` tries again)"
    )
}
