//! Request scopes: where each phase's non-blocking requests (and their buffers) live, so that
//! rsmpi's scopes end only once every request they started is complete.

use std::collections::BTreeSet;

use mpiskel_trace::Op;

use mpiskel_program::{Call, Completion, Phase, SlotRef, Stmt};

/// Where a phase's requests live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeLevel {
    /// The phase starts no non-blocking call.
    None,
    /// One scope per iteration: every request an iteration starts completes in it.
    Iteration,
    /// One scope around the whole phase.
    Phase,
}

/// Where `phase`'s requests can be scoped: per iteration when every slot started in one
/// iteration is completed later in the same iteration (a guard's starts count only if the guard
/// completes them itself), otherwise around the phase.
pub fn scope_level(phase: &Phase) -> ScopeLevel {
    let mut started = BTreeSet::new();
    let mut pending = BTreeSet::new();
    simulate(&phase.body, &mut started, &mut pending);
    if started.is_empty() {
        ScopeLevel::None
    } else if pending.is_empty() {
        ScopeLevel::Iteration
    } else {
        ScopeLevel::Phase
    }
}

pub(super) fn slots_of(s: &SlotRef) -> impl Iterator<Item = u32> {
    s.base..s.base + s.ring.max(1)
}

pub(super) fn simulate(body: &[Stmt], started: &mut BTreeSet<u32>, pending: &mut BTreeSet<u32>) {
    for s in body {
        match s {
            Stmt::Call { call, .. } => match call {
                Call::Send { slot: Some(r), .. }
                | Call::Recv { slot: Some(r), .. }
                | Call::Collective { slot: Some(r), .. } => {
                    for k in slots_of(r) {
                        started.insert(k);
                        pending.insert(k);
                    }
                }
                Call::Complete { how: Completion::All, slots, .. } => {
                    for k in slots {
                        pending.remove(k);
                    }
                }
                // Completes at least one; the others may stay pending.
                Call::Complete { how: Completion::Any | Completion::Some, slots, .. }
                    if slots.len() == 1 =>
                {
                    pending.remove(&slots[0]);
                }
                _ => {}
            },
            Stmt::Loop { body, .. } => simulate(body, started, pending),
            // One case runs per iteration: what any of them leaves pending stays pending.
            Stmt::Steps { cases } => {
                for c in cases {
                    let mut inner = pending.clone();
                    simulate(&c.body, started, &mut inner);
                    pending.extend(inner);
                }
            }
            Stmt::Guard { body, .. } => {
                let mut inner = BTreeSet::new();
                simulate(body, started, &mut inner);
                pending.extend(inner);
            }
            Stmt::Compute { .. } => {}
        }
    }
}

/// Whether loop variable `depth` is read in `body` (by a ring slot or a guard).
pub(super) fn uses_var(body: &[Stmt], depth: usize) -> bool {
    body.iter().any(|s| match s {
        Stmt::Call { call, .. } => match call {
            Call::Send { slot: Some(r), .. }
            | Call::Recv { slot: Some(r), .. }
            | Call::Collective { slot: Some(r), .. } => r.ring > 1 && r.depth == depth,
            _ => false,
        },
        Stmt::Loop { body, .. } => uses_var(body, depth),
        // The phase's variable picks the kind.
        Stmt::Steps { cases } => depth == 0 || cases.iter().any(|c| uses_var(&c.body, depth)),
        Stmt::Guard { depth: d, body, .. } => *d == depth || uses_var(body, depth),
        Stmt::Compute { .. } => false,
    })
}

/// Whether a class's requests must live in one scope for its whole program: some phase
/// completes a request another phase started.
pub fn needs_program_scope(phases: &[Phase]) -> bool {
    phases.iter().any(|p| {
        let (mut started, mut completed) = (BTreeSet::new(), BTreeSet::new());
        collect(&p.body, &mut started, &mut completed);
        !completed.is_subset(&started)
    })
}

pub(super) fn collect(body: &[Stmt], started: &mut BTreeSet<u32>, completed: &mut BTreeSet<u32>) {
    mpiskel_program::visit::each(body, &mut |s| {
        let Stmt::Call { call, .. } = s else { return };
        match call {
            Call::Send { slot: Some(r), .. }
            | Call::Recv { slot: Some(r), .. }
            | Call::Collective { slot: Some(r), .. } => started.extend(slots_of(r)),
            Call::Complete { how, slots, .. } if *how != Completion::Poll => {
                completed.extend(slots.iter().copied())
            }
            _ => {}
        }
    });
}

/// Bytes one execution of `body` takes from the pool (fresh buffers of non-blocking receives and
/// collectives, with room for alignment); communicator sizes are bounded by `n_ranks`.
pub(super) fn pool_bytes(body: &[Stmt], n_ranks: u64) -> u64 {
    body.iter()
        .map(|s| match s {
            Stmt::Call { call, .. } => match call {
                Call::Recv { slot: Some(_), count, .. } => count + 16,
                Call::Collective { op, bytes, slot: Some(_), .. } => {
                    16 + match op {
                        Op::Gather | Op::Allgather | Op::Alltoall => bytes * n_ranks,
                        Op::Barrier => 0,
                        _ => *bytes,
                    }
                }
                _ => 0,
            },
            Stmt::Loop { count, body, .. } => count * pool_bytes(body, n_ranks),
            Stmt::Guard { body, .. } => pool_bytes(body, n_ranks),
            Stmt::Steps { cases } => {
                cases.iter().map(|c| pool_bytes(&c.body, n_ranks)).max().unwrap_or(0)
            }
            Stmt::Compute { .. } => 0,
        })
        .sum()
}

/// The largest count each slot's non-blocking receives post.
pub(super) fn slot_counts(body: &[Stmt], out: &mut [u64]) {
    for s in body {
        match s {
            Stmt::Call { call: Call::Recv { slot: Some(r), count, .. }, .. }
            | Stmt::Call {
                call: Call::Collective { op: Op::Bcast, slot: Some(r), bytes: count, .. },
                ..
            } => {
                for k in slots_of(r) {
                    if let Some(b) = out.get_mut(k as usize) {
                        *b = (*b).max(*count);
                    }
                }
            }
            Stmt::Loop { body, .. } | Stmt::Guard { body, .. } => slot_counts(body, out),
            _ => {}
        }
    }
}

/// Whether a phase of a class under a program-wide scope can still scope its own requests, one
/// loop iteration at a time: it completes only requests it started, and each iteration
/// completes all it started (or it starts and completes none).
pub fn self_contained(p: &Phase) -> bool {
    let (mut started, mut completed) = (BTreeSet::new(), BTreeSet::new());
    collect(&p.body, &mut started, &mut completed);
    completed.is_subset(&started) && scope_level(p) != ScopeLevel::Phase
}
