//! Loop cuts checked in runs: as few deadlock checks as the cuts allow.
//!
//! Where the skeleton is over its target once the main loop is cut, the other top-level loops
//! are cut one by one, heaviest first, each kept only where the deadlock check passes the
//! program with it ([`crate::scale::cut_verified`], `pipeline::cut_for_traffic`). One check per
//! loop costs O(loops × size of the program), which a program of hundreds of set-up loops
//! makes minutes: LAMMPS's `ELASTIC` example (574 top-level loops, a check of its 26,000
//! operations with receives from any source 0.45 s) took 215 s to build.
//!
//! Here the cuts are checked in runs. The first run is every cut (up to where the skeleton is
//! no longer over); a run the check accepts is kept and the next is twice as long; a run it
//! refuses is halved; a single cut refused is left out. Each run is tried as the caller's cut
//! makes it by default (a loop cut by its name in every class) and, where that is refused, in
//! the caller's second way (at its place in every class, where the classes name it
//! differently). Where every cut passes, that is one check. Every program kept has passed the
//! check, which is what makes it safe; and where the check passes every prefix of a run it
//! passes, the cuts kept are those that checking them one by one keeps.
//!
//! A refusal names its suspects where the caller can tell them: the cuts of the run that
//! change what some rank did before the check stopped (a rank blocked in a phase ran every
//! phase before it, and none after; a rank that finished ran them all). A cut that changes
//! nothing a rank ran cannot be what blocked it: the execution up to the deadlock is the same
//! without it. Where the last way tried has one suspect, that cut is tried alone next and the
//! rest of the run after it, instead of halving: a refused cut costs two or three checks, not
//! O(log n). (Quantum ESPRESSO's molecular dynamics, whose classes fold their set-up loops
//! differently, offers 1,117 loops to cut, many of them refused.)
//!
//! The cuts are made in the program itself and undone where refused, not made in a copy per
//! trial. The checks of one search take at most [`CHECKED_OPERATIONS`] operations in all (and
//! at least [`MIN_CHECKS`] checks): the cuts left when they are spent are not tried, and the
//! build says how many.
//!
//! # Complexity
//! O((1 + cuts refused) × log(cuts)) checks, where one check per cut was made before; O(1 +
//! cuts refused) where each refusal names one suspect; at most
//! max([`MIN_CHECKS`], [`CHECKED_OPERATIONS`] / size of the program).

use std::collections::VecDeque;

/// Where a refused program's check stopped, per rank: the index, among its class's phases, of
/// the phase its blocked operation is in (the number of phases where the operation follows
/// them all), or `None` for a rank that finished.
pub type Stopped = Vec<Option<usize>>;

/// A run of cuts refused: the cuts of the run that could have made the check fail (all of
/// them where the caller cannot tell).
pub type Suspects = Vec<usize>;

/// The operations the checks of one search for loop cuts take in all at most: at least
/// [`MIN_CHECKS`] checks, and fewer of a large program (about a minute here: Quantum
/// ESPRESSO's molecular dynamics, 4 ranks of 20,000 operations, 200 checks).
pub const CHECKED_OPERATIONS: usize = 1 << 24;

/// The checks a search for loop cuts makes at least, whatever the program's size.
pub const MIN_CHECKS: usize = 16;

/// The checks a search may make for a program of `operations` operations.
pub fn max_checks(operations: usize) -> usize {
    (CHECKED_OPERATIONS / operations.max(1)).max(MIN_CHECKS)
}

/// The check of a run of cuts made ([`cut_in_runs`]).
pub type Accept<'a, S> = dyn FnMut(&S, &[usize]) -> Result<(), Suspects> + 'a;

/// How a cut is made and undone: `cut(state, i, second_way)` makes cut `i`, in the caller's
/// second way where asked and possible, and says whether it made it that way (a run none of
/// whose cuts has a second way is not tried again); `undo(state, i)` undoes the cut `i` made
/// last (cuts are undone in the reverse order of making).
pub struct Ways<'a, S> {
    /// Makes a cut.
    pub cut: &'a dyn Fn(&mut S, usize, bool) -> bool,
    /// Undoes the cut made last.
    pub undo: &'a dyn Fn(&mut S, usize),
}

impl<S> std::fmt::Debug for Ways<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ways")
    }
}

/// What a search made: the seconds saved, the cuts kept, and the cuts not tried because the
/// checks reached their budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cuts {
    /// Seconds saved by the cuts kept.
    pub saved: f64,
    /// Cuts kept.
    pub kept: usize,
    /// Cuts not tried.
    pub untried: usize,
}

/// Makes the cuts `0..saved.len()` into `state` in order (cut `i` saves `saved[i]` seconds)
/// while `over` says the state, with the seconds saved so far, is still over its target; keeps
/// each run of cuts that `accept` accepts (see the module documentation), making them in
/// `state` itself and undoing those refused (`ways`). `accept(state, run)` checks the state
/// made with the cuts `run` (in the order made) and names the suspects where it refuses it; it
/// is asked at most `max_checks` times, and the cuts left when that is reached are not tried.
pub fn cut_in_runs<S>(
    state: &mut S,
    saved: &[f64],
    ways: &Ways<'_, S>,
    over: &dyn Fn(&S, f64) -> bool,
    accept: &mut Accept<'_, S>,
    max_checks: usize,
) -> Cuts {
    let mut made = Cuts { saved: 0.0, kept: 0, untried: 0 };
    let mut pending: VecDeque<usize> = (0..saved.len()).collect();
    let (mut len, mut checks) = (saved.len(), 0);
    // A lone suspect, tried by itself before the rest.
    let mut alone = false;
    while !pending.is_empty() && over(state, made.saved) {
        if checks >= max_checks {
            made.untried = pending.len();
            break;
        }
        let cap = if alone { 1 } else { len };
        let (mut run, mut kept_run, mut suspects) = (Vec::new(), None, Vec::new());
        for second_way in [false, true] {
            if checks >= max_checks {
                break;
            }
            let candidates: Vec<usize> = pending.iter().take(cap).copied().collect();
            let made_run = make_run(state, &candidates, saved, ways, second_way, &|s, x| {
                over(s, made.saved + x)
            });
            run.clear();
            run.extend(made_run.iter().map(|m| m.0));
            let run_saved: f64 = run.iter().map(|&c| saved[c]).sum();
            let other = made_run.iter().any(|m| m.1);
            // Made without a cut of the second way, the run is the one refused already.
            let result = if second_way && !other {
                Err(suspects.clone())
            } else {
                checks += 1;
                accept(state, &run)
            };
            match result {
                Ok(()) => {
                    kept_run = Some(run_saved);
                    break;
                }
                Err(s) => suspects = s,
            }
            for &c in run.iter().rev() {
                (ways.undo)(state, c);
            }
            if second_way && !other {
                break;
            }
        }
        let was_alone = std::mem::take(&mut alone);
        if let Some(run_saved) = kept_run {
            made.saved += run_saved;
            made.kept += run.len();
            pending.drain(..run.len());
            if !was_alone {
                len = len.saturating_mul(2);
            }
        } else if checks >= max_checks {
            continue;
        } else if run.len() == 1 {
            pending.pop_front();
        } else if let [one] = suspects.as_slice() {
            // The suspect alone next, then the run without it.
            if let Some(at) = pending.iter().position(|c| c == one) {
                let c = pending.remove(at).unwrap_or(*one);
                pending.push_front(c);
                alone = true;
            } else {
                len = run.len() / 2;
            }
        } else {
            len = run.len() / 2;
        }
    }
    made
}

/// Makes the first of `candidates` into `state`, in order, up to and with the first that
/// brings it under its target (`over(state, seconds saved by the cuts made)` false), or all of
/// them; returns the cuts made, each with whether it was made its second way. `over` is asked
/// after 1, 2, 4, … cuts and then by bisection, the cuts past the point undone: a floor of
/// communication counted over thousands of phases, asked after each of thousands of cuts,
/// took all of Quantum ESPRESSO's build.
///
/// # Complexity
/// O(candidates) cuts made or undone and O(log candidates) asks of `over`.
fn make_run<S>(
    state: &mut S,
    candidates: &[usize],
    saved: &[f64],
    ways: &Ways<'_, S>,
    second_way: bool,
    over: &dyn Fn(&S, f64) -> bool,
) -> Vec<(usize, bool)> {
    let mut made: Vec<(usize, bool)> = Vec::with_capacity(candidates.len());
    // Moves the cuts made to the first `k` candidates; the seconds they save, summed in order.
    let to = |state: &mut S, made: &mut Vec<(usize, bool)>, k: usize| {
        while made.len() > k {
            if let Some((c, _)) = made.pop() {
                (ways.undo)(state, c);
            }
        }
        while made.len() < k {
            let c = candidates[made.len()];
            made.push((c, (ways.cut)(state, c, second_way)));
        }
        made.iter().map(|m| saved[m.0]).sum::<f64>()
    };
    // Over with `lo` cuts made (none: the caller's state is over); not with `hi`, if known.
    let (mut lo, mut hi, mut step) = (0, None, 1);
    while lo < candidates.len() {
        let k = (lo + step).min(candidates.len());
        let sum = to(state, &mut made, k);
        if over(state, sum) {
            lo = k;
            step *= 2;
        } else {
            hi = Some(k);
            break;
        }
    }
    if let Some(mut hi) = hi {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let sum = to(state, &mut made, mid);
            if over(state, sum) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        to(state, &mut made, hi);
    }
    made
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cuts made, each as its index (by its first way) or its index + 1000 (the second).
    type Made = Vec<usize>;

    fn cut(state: &mut Made, i: usize, second_way: bool) -> bool {
        let other = second_way && (i % 5 == 3 || i == 40);
        state.push(if other { i + 1000 } else { i });
        other
    }

    fn undo(state: &mut Made, _: usize) {
        state.pop();
    }

    const WAYS: Ways<'static, Made> = Ways { cut: &cut, undo: &undo };

    /// The check: cuts 3, 13, 23 … are refused by their first way (their second passes) and
    /// cuts 7 and 40 both ways.
    fn passes(state: &Made) -> bool {
        state.iter().all(|&c| c < 1000 && c % 5 != 3 && c != 7 && c != 40 || c >= 1000 && c != 1040)
    }

    /// The check as a caller that names no suspects (`blame` false: every cut of the run is
    /// one) or the very cuts refused.
    fn check(state: &Made, run: &[usize], blame: bool) -> Result<(), Suspects> {
        if passes(state) {
            return Ok(());
        }
        if !blame {
            return Err(run.to_vec());
        }
        let refused =
            |i: usize| state.iter().any(|&c| (c == i || c == i + 1000) && !passes(&vec![c]));
        Err(run.iter().copied().filter(|&i| refused(i)).collect())
    }

    /// The cuts one at a time, each its first way and then its second: what runs must give.
    fn one_by_one(n: usize, over: &dyn Fn(&Made, f64) -> bool) -> (Made, f64) {
        let (mut state, mut total) = (Made::new(), 0.0);
        for i in 0..n {
            if !over(&state, total) {
                break;
            }
            for second_way in [false, true] {
                let mut trial = state.clone();
                cut(&mut trial, i, second_way);
                if passes(&trial) {
                    state = trial;
                    total += 1.0;
                    break;
                }
            }
        }
        (state, total)
    }

    /// 200 cuts in runs, none under the target, checked naming suspects (`blame`) or not, with
    /// at most `max_checks` checks: the state, the checks made and what the search says.
    fn search(blame: bool, max_checks: usize) -> (Made, usize, Cuts) {
        let saved = vec![1.0; 200];
        let (mut state, mut checks) = (Made::new(), 0);
        let made = cut_in_runs(
            &mut state,
            &saved,
            &WAYS,
            &|_, _| true,
            &mut |s, run| {
                checks += 1;
                check(s, run, blame)
            },
            max_checks,
        );
        (state, checks, made)
    }

    /// [`search`] without a budget: the cuts kept (sorted) and the checks made.
    fn in_runs(blame: bool) -> (Made, usize) {
        let (mut state, checks, made) = search(blame, usize::MAX);
        assert!(passes(&state));
        assert_eq!(made.kept, state.len());
        assert_eq!(made.saved, state.len() as f64);
        state.sort_unstable();
        (state, checks)
    }

    #[test]
    fn runs_keep_the_cuts_one_by_one_keeps_with_fewer_checks() {
        let (mut expected, _) = one_by_one(200, &|_, _| true);
        expected.sort_unstable();
        let (kept, checks) = in_runs(false);
        assert_eq!(kept, expected);
        // One by one: a check per cut and a second for each refused by its first way, 242 in
        // all; in runs, 60.
        assert!(checks <= 80, "{checks} checks");
    }

    /// Where each refusal names the cuts that made it fail, the lone suspect is tried alone
    /// and the run goes on without it: the same cuts are kept as one by one, with a few checks
    /// per cut refused instead of a halving down to it.
    #[test]
    fn a_lone_suspect_is_tried_alone_and_the_run_goes_on() {
        let (mut expected, _) = one_by_one(200, &|_, _| true);
        expected.sort_unstable();
        let (kept, checks) = in_runs(true);
        assert_eq!(kept, expected);
        let (_, unnamed) = in_runs(false);
        assert!(checks < unnamed, "{checks} checks naming suspects, {unnamed} not");
    }

    #[test]
    fn every_cut_passing_is_one_check() {
        let saved = vec![0.5; 574];
        let (mut state, mut checks) = (Made::new(), 0);
        let ways = Ways {
            cut: &|s: &mut Made, i, _| {
                s.push(i);
                false
            },
            undo: &undo,
        };
        let made = cut_in_runs(
            &mut state,
            &saved,
            &ways,
            &|_, _| true,
            &mut |_, _| {
                checks += 1;
                Ok(())
            },
            usize::MAX,
        );
        assert_eq!((checks, made.kept, made.saved, made.untried), (1, 574, 287.0, 0));
    }

    #[test]
    fn cuts_stop_where_the_target_is_met() {
        // Under the target once 10 seconds are saved: the cuts one by one stop there too.
        let saved = vec![1.0; 100];
        let over = |_: &Made, s: f64| s < 10.0;
        let mut state = Made::new();
        let made =
            cut_in_runs(&mut state, &saved, &WAYS, &over, &mut |s, r| check(s, r, true), 100);
        let (mut expected, expected_total) = one_by_one(100, &over);
        expected.sort_unstable();
        state.sort_unstable();
        assert_eq!((state, made.saved, made.untried), (expected, expected_total, 0));
    }

    /// A run is made up to the cut that meets the target, found with O(log n) asks of `over`,
    /// the cuts past it undone.
    #[test]
    fn the_cut_that_meets_the_target_is_found_in_few_asks() {
        let saved = vec![1.0; 1000];
        let candidates: Vec<usize> = (0..1000).collect();
        for target in [1.0, 2.0, 700.0, 999.0, 1000.0, 5000.0] {
            let (mut state, asks) = (Made::new(), std::cell::Cell::new(0));
            let over = |s: &Made, x: f64| {
                asks.set(asks.get() + 1);
                assert_eq!(s.len() as f64, x);
                x < target
            };
            let made = make_run(&mut state, &candidates, &saved, &WAYS, false, &over);
            let want = (target as usize).min(1000);
            assert_eq!(made.len(), want, "target {target}");
            assert_eq!(state, (0..want).collect::<Vec<_>>(), "target {target}");
            assert!(asks.get() <= 21, "target {target}: {} asks", asks.get());
        }
    }

    /// The checks stop at their budget: the cuts kept by then stay, each refused one undone,
    /// and the others are counted as not tried.
    #[test]
    fn the_checks_stop_at_their_budget_with_what_passed_kept() {
        let (state, checks, made) = search(true, 12);
        assert_eq!(checks, 12);
        assert!(passes(&state), "{state:?}");
        assert_eq!(state.len(), made.kept);
        // Some kept, some refused, the rest not tried.
        assert!(made.kept > 0 && made.untried > 0 && made.kept + made.untried < 200, "{made:?}");
    }
}
