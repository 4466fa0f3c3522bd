//! The runtime's timers of each class, by name: where blocks run only a short part on every
//! rank and the classes' timed phases differ, the slot each class's timer has among all names,
//! so that the runtime gathers what any rank restores by name, not by position.

use mpiskel_program::{Skeleton, Stmt};

/// Where blocks run only a short part on every rank (the compute cut's `cut_to_keep`) and the classes' timed
/// phases differ (`names`: each class's timers in order), the slot of each class's timer among
/// all names (first seen first) and the number of slots: the runtime gathers the most any rank
/// restores by name, not by position. `None` where positions do.
pub fn keep_slots(skel: &Skeleton, names: &[Vec<String>]) -> Option<(Vec<Vec<usize>>, usize)> {
    fn any_keep(body: &[Stmt]) -> bool {
        mpiskel_program::visit::any(body, &mut |s| {
            matches!(s, Stmt::Compute { keep_only: true, .. })
        })
    }
    let keeps = skel.classes.iter().flat_map(|c| &c.phases).any(|p| any_keep(&p.body));
    let first = names.first()?;
    if !keeps || names.iter().all(|n| n == first) {
        return None;
    }
    let mut all: Vec<&str> = Vec::new();
    let slots = names
        .iter()
        .map(|class| {
            class
                .iter()
                .map(|n| match all.iter().position(|a| a == n) {
                    Some(i) => i,
                    None => {
                        all.push(n);
                        all.len() - 1
                    }
                })
                .collect()
        })
        .collect();
    Some((slots, all.len()))
}

/// The names of a class's timed phases, in the order both back ends number their timers: each
/// phase, then its step kinds (`name.kind0`, …) or its cut inner loop (`name.inner`).
pub fn timer_names(phases: &[mpiskel_program::Phase]) -> Vec<String> {
    let mut v = Vec::new();
    for p in phases {
        v.push(p.name.clone());
        if let (Some(_), [Stmt::Steps { cases }]) = (&p.steps, p.body.as_slice()) {
            v.extend((0..cases.len()).map(|k| format!("{}.kind{k}", p.name)));
        }
        if p.inner.is_some() {
            v.push(format!("{}.inner", p.name));
        }
    }
    v
}
