//! An untimed warm-up iteration: a stretch of the program before the main loop that makes
//! exactly the calls of one iteration of it.
//!
//! Benchmarks and solvers often run their time step once before the timed loop (to touch
//! memory, to fill caches, to check the set-up): NPB BT and SP call `adi` once, LU `ssor(1)`,
//! MG one V-cycle, then re-initialise and start the loop. The loop nest cannot fold that
//! iteration into the loop, because the re-initialisation (a barrier, a norm, fresh boundary
//! values) stands between them; left as it is, the set-up holds a whole iteration of the main
//! loop, which a skeleton then runs whole however far it cuts the loop (BT S on 16 ranks: 1.6 %
//! of the run in the warm-up alone, against a target of 4.2 % for the whole skeleton).
//!
//! [`crate::program`] finds that stretch as it lowers the loop nest (`program/warm_iteration.rs`): the top-level nodes ending at most a few calls before the
//! main loop whose calls, expanded, are exactly those of one iteration of its body (the body's
//! parts guarded to the first or last iteration taken or left, since a loop of one iteration is
//! both). The pipeline then lets the skeleton skip it, pricing it as one more iteration of the
//! main loop and keeping the computation it had beyond one ([`crate::scale`]); the calls
//! between it and the loop still run.
//!
//! # Complexity
//! O(phases) to skip or restore.

use mpiskel_program::{calls_in, compute_of, ClassProgram, Skeleton, Stmt, WARMUP};

/// Skips the warm-up phase ([`WARMUP`]) of every class, where every class has one: its body
/// keeps only the computation it had beyond one iteration of the main loop (the set-up's last
/// block usually runs into it), and the main loop prices it as one more iteration. Returns
/// whether it did. [`restore`] undoes it.
pub fn skip(skel: &mut Skeleton) -> bool {
    let has = |c: &ClassProgram| {
        c.main_loop_index().is_some()
            && c.phases.iter().any(|p| p.name == WARMUP && p.skipped.is_none())
    };
    if skel.classes.is_empty() || !skel.classes.iter().all(has) {
        return false;
    }
    for c in &mut skel.classes {
        let Some(m) = c.main_loop_index() else { continue };
        let per_iteration = compute_of(&c.phases[m].body);
        c.phases[m].warmup += 1;
        let Some(w) = c.phases.iter_mut().find(|p| p.name == WARMUP) else { continue };
        let beyond = (compute_of(&w.body) - per_iteration).max(0.0);
        let body = if beyond > 0.0 { vec![Stmt::block(beyond)] } else { Vec::new() };
        w.skipped = Some(std::mem::replace(&mut w.body, body));
        w.compute_s = beyond;
        w.calls = 0;
    }
    true
}

/// Undoes [`skip`] in class `c`: its warm-up phase runs its calls again, and its main loop
/// prices no warm-up.
pub fn restore(c: &mut ClassProgram) {
    let mut restored = false;
    for p in c.phases.iter_mut().filter(|p| p.name == WARMUP) {
        if let Some(body) = p.skipped.take() {
            p.compute_s = compute_of(&body);
            p.calls = calls_in(&body);
            p.body = body;
            restored = true;
        }
    }
    if restored {
        if let Some(m) = c.main_loop_index() {
            c.phases[m].warmup = c.phases[m].warmup.saturating_sub(1);
        }
    }
}
