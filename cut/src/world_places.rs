//! The compute blocks of every class right before the same collective of all ranks: where the
//! compute cut may cut the classes' blocks alike, since each collective waits for the rank that
//! computed longest.

use mpiskel_program::{Skeleton, Stmt};

/// A compute block's place in a class program: its phase's index and its position there.
pub(crate) type Place = (usize, usize);

/// The compute blocks that end at the same collective of all ranks (on `MPI_COMM_WORLD`) in
/// every class: per such collective, each class's (phase, position) of the block right before
/// it, where that block is at the top of a straight-line phase (one that runs once, not the
/// main loop). Collectives are counted in the order the application makes them, a loop's as
/// often as it iterates; a class whose count becomes uncertain (time steps of several kinds, a
/// guarded call, an inner loop cut) offers no block past that point, and a collective that is
/// not the same operation in every class ends the matching, as the classes then do not make the
/// same collectives.
///
/// # Complexity
/// O(statements) per class, and O(c × k log k) for c classes of k collectives.
pub(crate) fn before_world_collectives(skel: &Skeleton) -> Vec<Vec<Place>> {
    use mpiskel_program::Call;
    use std::collections::BTreeMap;
    /// Collectives of all ranks that one pass over `body` makes, `None` where not fixed.
    fn count(body: &[Stmt]) -> Option<u64> {
        body.iter().try_fold(0u64, |n, s| {
            Some(
                n + match s {
                    Stmt::Call { call: Call::Collective { comm: 0, .. }, .. } => 1,
                    Stmt::Loop { count: k, body, .. } => k * count(body)?,
                    Stmt::Guard { .. } | Stmt::Steps { .. } => {
                        (count_any(std::slice::from_ref(s)) == 0).then_some(0)?
                    }
                    _ => 0,
                },
            )
        })
    }
    /// Whether `body` makes any collective of all ranks, at any depth.
    fn count_any(body: &[Stmt]) -> u64 {
        let world =
            |s: &Stmt| matches!(s, Stmt::Call { call: Call::Collective { comm: 0, .. }, .. });
        mpiskel_program::visit::count(body, &mut |s| world(s)) as u64
    }
    if skel.classes.len() < 2 || !matches!(skel.comms.first(), Some(mpiskel_program::Comm::World)) {
        return Vec::new();
    }
    // Per class: collective number → (its operation, the block before it if any).
    let per_class: Vec<BTreeMap<u64, (mpiskel_trace::Op, Option<Place>)>> = skel
        .classes
        .iter()
        .map(|c| {
            let mut at = BTreeMap::new();
            let mut k = 0u64;
            'phases: for (pi, p) in c.phases.iter().enumerate() {
                // An inner loop cut runs fewer iterations than its statement says it made.
                if p.inner.is_some() {
                    break;
                }
                let straight = !p.is_loop && p.full == 1 && p.name != "main_loop";
                if !straight {
                    match count(&p.body) {
                        Some(n) => k += n * p.full,
                        None => break 'phases,
                    }
                    continue;
                }
                for (i, s) in p.body.iter().enumerate() {
                    match s {
                        Stmt::Call { call: Call::Collective { comm: 0, op, .. }, .. } => {
                            let block = matches!(
                                i.checked_sub(1).and_then(|j| p.body.get(j)),
                                Some(Stmt::Compute { .. })
                            );
                            at.insert(k, (*op, block.then(|| (pi, i - 1))));
                            k += 1;
                        }
                        other => match count(std::slice::from_ref(other)) {
                            Some(n) => k += n,
                            None => break 'phases,
                        },
                    }
                }
            }
            at
        })
        .collect();
    let mut out = Vec::new();
    let Some(first) = per_class.first() else { return out };
    for (k, (op, _)) in first {
        let same: Option<Vec<_>> = per_class.iter().map(|c| c.get(k).copied()).collect();
        let Some(same) = same else { continue };
        if same.iter().any(|(o, _)| o != op) {
            break;
        }
        if let Some(places) = same.iter().map(|(_, b)| *b).collect::<Option<Vec<_>>>() {
            out.push(places);
        }
    }
    out
}
