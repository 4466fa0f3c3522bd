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
//! differently). Where every cut passes, that is one check; each cut refused costs O(log n)
//! more. Every program kept has passed the check, which is what makes it safe; and where the
//! check passes every prefix of a run it passes, the cuts kept are those that checking them one
//! by one keeps.
//!
//! # Complexity
//! O((1 + cuts refused) × log(cuts)) checks, where one check per cut was made before.

/// Makes the cuts `0..saved.len()` into `state` in order (cut `i` saves `saved[i]` seconds)
/// while `over` says the state, with the seconds saved so far, is still over its target; keeps
/// each run of cuts that `accept` accepts (see the module documentation). `cut(state, i,
/// second_way)` makes cut `i`, in the caller's second way where asked and possible, and says
/// whether it made it that way (a run none of whose cuts has a second way is not tried again).
/// Returns the seconds saved and the number of cuts kept.
pub fn cut_in_runs<S: Clone>(
    state: &mut S,
    saved: &[f64],
    cut: &dyn Fn(&mut S, usize, bool) -> bool,
    over: &dyn Fn(&S, f64) -> bool,
    accept: &mut dyn FnMut(&S) -> bool,
) -> (f64, usize) {
    let (mut total, mut kept) = (0.0, 0);
    let (mut i, mut len) = (0, saved.len());
    while i < saved.len() && over(state, total) {
        let (mut run_end, mut kept_run) = (i + 1, None);
        for second_way in [false, true] {
            let mut trial = state.clone();
            let (mut end, mut run_saved, mut other) = (i, 0.0, false);
            while end < saved.len() && end - i < len {
                other |= cut(&mut trial, end, second_way);
                run_saved += saved[end];
                end += 1;
                if !over(&trial, total + run_saved) {
                    break;
                }
            }
            run_end = end;
            // Made without a cut of the second way, the run is the one refused already.
            if (!second_way || other) && accept(&trial) {
                kept_run = Some((trial, run_saved));
                break;
            }
        }
        if let Some((trial, run_saved)) = kept_run {
            *state = trial;
            total += run_saved;
            kept += run_end - i;
            i = run_end;
            len = len.saturating_mul(2);
        } else if run_end - i > 1 {
            len = (run_end - i) / 2;
        } else {
            i += 1;
        }
    }
    (total, kept)
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

    /// The check: cuts 3, 13, 23 … are refused by their first way (their second passes) and
    /// cuts 7 and 40 both ways.
    fn passes(state: &Made) -> bool {
        state.iter().all(|&c| c < 1000 && c % 5 != 3 && c != 7 && c != 40 || c >= 1000 && c != 1040)
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

    #[test]
    fn runs_keep_the_cuts_one_by_one_keeps_with_fewer_checks() {
        let n = 200;
        let saved = vec![1.0; n];
        let never_under = |_: &Made, _: f64| true;
        let (mut state, mut checks) = (Made::new(), 0);
        let (total, kept) = cut_in_runs(&mut state, &saved, &cut, &never_under, &mut |s| {
            checks += 1;
            passes(s)
        });
        let (mut expected, expected_total) = one_by_one(n, &never_under);
        expected.sort_unstable();
        let mut sorted = state.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, expected);
        assert_eq!((total, kept), (expected_total, expected.len()));
        assert!(passes(&state));
        // One by one: a check per cut and a second for each refused by its first way, 242 in
        // all; in runs, 60.
        assert!(checks <= 80, "{checks} checks");
    }

    #[test]
    fn every_cut_passing_is_one_check() {
        let saved = vec![0.5; 574];
        let (mut state, mut checks) = (Made::new(), 0);
        let (total, kept) = cut_in_runs(
            &mut state,
            &saved,
            &|s, i, _| {
                s.push(i);
                false
            },
            &|_, _| true,
            &mut |_| {
                checks += 1;
                true
            },
        );
        assert_eq!((checks, kept, total), (1, 574, 287.0));
    }

    #[test]
    fn cuts_stop_where_the_target_is_met() {
        // Under the target once 10 seconds are saved: the cuts one by one stop there too.
        let saved = vec![1.0; 100];
        let over = |_: &Made, s: f64| s < 10.0;
        let mut state = Made::new();
        let (total, _) = cut_in_runs(&mut state, &saved, &cut, &over, &mut |s| passes(s));
        let (mut expected, expected_total) = one_by_one(100, &over);
        expected.sort_unstable();
        state.sort_unstable();
        assert_eq!((state, total), (expected, expected_total));
    }
}
