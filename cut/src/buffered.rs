//! What a program that can block is given so that it completes as the run did: the
//! standard-mode sends a deadlock is stuck on made buffered (`MPI_Bsend`, `MPI_Ibsend`), the
//! buffer they need, and receives from any source pinned to the sources the run gave them.

use mpiskel_logicalize::LogicalTrace;
use mpiskel_program::deadlock::{check, standard_sends_of, stuck_sends, CheckOp, Deadlock};
use mpiskel_program::instantiate::{instantiate_traced, Instantiated};
use mpiskel_program::{Call, SendBuffer, Skeleton, Stmt};
use mpiskel_trace::Op;

/// Makes the standard-mode sends that a deadlock of `skel` is stuck on buffered (`MPI_Bsend`,
/// or `MPI_Ibsend` for a non-blocking send a wait is stuck on): those one execution finds stuck
/// ([`stuck_sends`]), then, round after round, those a deadlock the check still finds is stuck
/// on, until the program passes or a deadlock holds no such send (see [`make`]). Returns the calls made buffered, the program as checked last, and its
/// verdict.
///
/// # Complexity
/// One instantiation and execution, then one instantiation and check per round; at most one
/// round per send of the program.
pub(crate) fn buffer_blocked_sends(skel: &mut Skeleton) -> (usize, Instantiated, Option<Deadlock>) {
    // First the sends one execution finds stuck, all at once ([`stuck_sends`]).
    let inst = instantiate_traced(skel);
    let (stuck, _) = stuck_sends(&inst.programs);
    let at = addresses(&inst, stuck.into_iter());
    let mut n = make_buffered(skel, &at);
    loop {
        let inst = instantiate_traced(skel);
        let Some(d) = check(&inst.programs) else { return (n, inst, None) };
        let mut sends = Vec::new();
        for b in &d.blocked {
            match &b.op {
                CheckOp::Send { .. } | CheckOp::Ssend { .. } => sends.push((b.rank, b.position)),
                CheckOp::Wait { slots } => {
                    let before = &inst.programs[b.rank as usize][..b.position];
                    sends.extend(
                        standard_sends_of(before, slots).into_iter().map(|at| (b.rank, at)),
                    );
                }
                _ => {}
            }
        }
        let at = addresses(&inst, sends.into_iter());
        let made = make_buffered(skel, &at);
        if made == 0 {
            return (n, inst, Some(d));
        }
        n += made;
    }
}

/// The addresses in the skeleton ([`Instantiated::origins`]) of the operations at (rank,
/// position) of `inst`'s programs.
fn addresses(
    inst: &Instantiated,
    at: impl Iterator<Item = (u32, usize)>,
) -> std::collections::HashSet<usize> {
    at.filter_map(|(rank, position)| inst.origins.get(rank as usize)?.get(position).copied())
        .filter(|&at| at != 0)
        .collect()
}

/// Turns the standard-mode sends at the addresses `at` (see [`Instantiated::origins`]) into
/// buffered ones (`Op::Bsend`: `MPI_Bsend`, or `MPI_Ibsend` where the send has a request);
/// returns how many.
fn make_buffered(skel: &mut Skeleton, at: &std::collections::HashSet<usize>) -> usize {
    fn walk(body: &mut [Stmt], at: &std::collections::HashSet<usize>, n: &mut usize) {
        mpiskel_program::visit::each_mut(body, &mut |s| {
            let Stmt::Call { call, .. } = s else { return };
            let here = &*call as *const Call as usize;
            // Blocking sends become `MPI_Bsend`, non-blocking ones `MPI_Ibsend` (a synchronous
            // send is never taken for buffered).
            if let Call::Send { op, .. } = call {
                if matches!(op, Op::Send | Op::Isend) && at.contains(&here) {
                    *op = Op::Bsend;
                    *n += 1;
                }
            }
        });
    }
    let mut n = 0;
    for p in skel.classes.iter_mut().flat_map(|c| c.phases.iter_mut()) {
        walk(&mut p.body, at, &mut n);
    }
    n
}

/// Calls of `skel` that are buffered sends, in its statements (not per rank): all of them, and
/// the non-blocking ones (`MPI_Ibsend`).
pub(crate) fn count_buffered(skel: &Skeleton) -> (usize, usize) {
    fn walk(body: &[Stmt], n: &mut (usize, usize)) {
        mpiskel_program::visit::each(body, &mut |s| {
            if let Stmt::Call { call: Call::Send { op: Op::Bsend, slot, .. }, .. } = s {
                n.0 += 1;
                n.1 += usize::from(slot.is_some());
            }
        });
    }
    let mut n = (0, 0);
    for p in skel.classes.iter().flat_map(|c| &c.phases) {
        walk(&p.body, &mut n);
    }
    n
}

/// The buffer the buffered sends of `skel` need, from its instantiation.
pub(crate) fn send_buffer(skel: &Skeleton, inst: &Instantiated) -> Option<SendBuffer> {
    let main_run = skel
        .classes
        .iter()
        .filter_map(|c| c.main_loop_index().map(|i| c.phases[i].run))
        .max()
        .unwrap_or(1);
    (inst.buffer.1 > 0).then_some(SendBuffer {
        bytes: inst.buffer.0,
        messages: inst.buffer.1,
        main_run,
    })
}

/// Receives and probes of a logical trace pinned in place to the sources the run gave them
/// ([`PinnedSources::pin`]), until [`PinnedSources::restore`] gives them their wildcard back.
///
/// In place rather than on a copy: the logical trace of a long run takes tens of megabytes
/// (Quantum ESPRESSO MD, 858,000 calls: 89 MB), and a copy would be held beside the trace
/// for every program made from it.
#[derive(Debug, Default)]
pub struct PinnedSources {
    /// (class, position, the call as traced) of every call pinned.
    at: Vec<(usize, usize, std::sync::Arc<mpiskel_logicalize::OpKey>)>,
}

impl PinnedSources {
    /// Makes every receive and probe of `lt` posted with `MPI_ANY_SOURCE` take the source the
    /// run gave it (its resolved peer). Calls whose source stayed unknown (a request never
    /// completed) keep the wildcard. A call shared by several positions is pinned once.
    ///
    /// # Complexity
    /// O(calls).
    pub fn pin(lt: &mut LogicalTrace) -> PinnedSources {
        use std::collections::HashMap;
        use std::sync::Arc;
        let mut at = Vec::new();
        for (ci, class) in lt.classes.iter_mut().enumerate() {
            // Pinned keys by the address of the key they replace (kept alive in `at`).
            let mut made: HashMap<*const mpiskel_logicalize::OpKey, Arc<_>> = HashMap::new();
            for (i, op) in class.ops.iter_mut().enumerate() {
                let resolved =
                    !matches!(op.key.peer, Some(mpiskel_logicalize::LogicalPeer::Any) | None);
                if !(op.key.any_source && resolved) {
                    continue;
                }
                let pinned = made
                    .entry(Arc::as_ptr(&op.key))
                    .or_insert_with(|| {
                        let mut k = (*op.key).clone();
                        k.any_source = false;
                        Arc::new(k)
                    })
                    .clone();
                at.push((ci, i, std::mem::replace(&mut op.key, pinned)));
            }
        }
        PinnedSources { at }
    }

    /// How many calls are pinned.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Gives the calls pinned their wildcard back: `lt` is as it was before [`Self::pin`].
    pub fn restore(self, lt: &mut LogicalTrace) {
        for (ci, i, key) in self.at {
            lt.classes[ci].ops[i].key = key;
        }
    }
}
