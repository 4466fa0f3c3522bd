//! A top-level loop other than the main one cut by its iterations, and put back: a loop of
//! alike iterations runs fewer of them; a loop of time steps of several kinds
//! ([`mpiskel_program::StepSchedule`]) runs one step of each kind, each kind timed on its own
//! and scaled by its steps (`step_sampling::set_steps`).
//!
//! # Complexity
//! O(steps) per cut or restore.

use mpiskel_program::Phase;

/// The iterations a cut of loop `p` to `keep` iterations removes from those it runs, if any. A
/// time-step loop (steps of several kinds, [`mpiskel_program::StepSchedule`]) keeps one step
/// of each kind instead ([`cut_phase`]).
pub(crate) fn removable(p: &Phase, keep: u64) -> Option<u64> {
    let run = match &p.steps {
        Some(st) => one_step_per_kind(st).len() as u64,
        None => keep,
    };
    (p.run > run).then(|| p.run - run)
}

/// The first step of each kind of a time-step loop, in order.
fn one_step_per_kind(st: &mpiskel_program::StepSchedule) -> Vec<u32> {
    let mut seen = std::collections::BTreeSet::new();
    (0..st.kinds.len() as u32).filter(|&i| seen.insert(st.kinds[i as usize])).collect()
}

/// Cuts loop `p` by `d` of its application's iterations (to one at the least). A time-step loop
/// runs one step of each kind instead, each kind timed on its own and scaled by its steps
/// (`step_sampling::set_steps`): cut to its first steps, it would run only their kinds, and
/// the kinds that no longer ran would count for nothing in the prediction (DOLFINx Poisson: a
/// set-up loop of 29 steps in 16 kinds cut to its first step left out the other 28, 7.7 s of
/// the application's 13.4 s on this machine's model).
pub(crate) fn cut_phase(p: &mut Phase, d: u64) {
    match &p.steps {
        Some(st) => {
            let sample = one_step_per_kind(st);
            if sample.len() < st.run.len() {
                crate::step_sampling::set_steps(p, sample);
            }
        }
        None => p.run = p.full.saturating_sub(d).max(1),
    }
}

/// What [`cut_phase`] changes in `p`, to be put back by [`restore_phase`].
pub(crate) type RunState = (u64, Option<Vec<u32>>);

pub(crate) fn run_state(p: &Phase) -> RunState {
    (p.run, p.steps.as_ref().map(|st| st.run.clone()))
}

pub(crate) fn restore_phase(p: &mut Phase, (run, steps): RunState) {
    match steps {
        Some(sample) => crate::step_sampling::set_steps(p, sample),
        None => p.run = run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiskel_program::{StepCase, StepSchedule, Stmt};

    /// A set-up loop of six time steps of three kinds (0 1 0 2 1 0), all run.
    fn set_up_steps() -> Phase {
        let kinds = vec![0, 1, 0, 2, 1, 0];
        let cases = [3, 2, 1]
            .into_iter()
            .map(|full| StepCase {
                full,
                run: full,
                body: Vec::new(),
                note: String::new(),
                scale: 1.0,
                cut: None,
            })
            .collect();
        let body = vec![Stmt::Steps { cases }];
        let mut p = Phase::new("loop_3".into(), 6, true, body, String::new(), (0, 0));
        p.steps = Some(StepSchedule { kinds, run: (0..6).collect(), lens: Vec::new() });
        p
    }

    /// Cut, a loop of time steps runs one step of each kind, each kind counting its own steps,
    /// so that what runs is what its schedule says (the runtime runs `run` steps of its table)
    /// and no kind is left out of the prediction; undone, it runs them all again.
    #[test]
    fn a_time_step_loop_cut_runs_one_step_of_each_kind() {
        let mut p = set_up_steps();
        assert_eq!(removable(&p, 1), Some(3));
        let before = run_state(&p);
        cut_phase(&mut p, 5);
        let st = p.steps.as_ref().unwrap();
        assert_eq!(st.run, vec![0, 1, 3]);
        assert_eq!(p.run, 3, "the steps the runtime runs are the schedule's");
        assert_eq!(p.kinds_run(), Some(vec![0, 1, 2]));
        let [Stmt::Steps { cases }] = p.body.as_slice() else { panic!("a time-step body") };
        assert!(cases.iter().all(|c| c.run == 1), "every kind runs once: {cases:?}");
        // Asked for more steps (`--iterations`), the runtime reads its table over again.
        let asked = Phase { run: 5, ..p.clone() };
        assert_eq!(asked.kinds_run(), Some(vec![0, 1, 2, 0, 1]));
        restore_phase(&mut p, before);
        assert_eq!((p.run, p.kinds_run()), (6, Some(vec![0, 1, 0, 2, 1, 0])));
        // A loop whose every step is of its own kind cannot lose any.
        let mut q = set_up_steps();
        q.steps.as_mut().unwrap().kinds = vec![0, 1, 2, 3, 4, 5];
        assert_eq!(removable(&q, 1), None);
    }
}
