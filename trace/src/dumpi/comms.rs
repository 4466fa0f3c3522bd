//! The members of the communicators a DUMPI trace makes, from every rank's records together.
//!
//! DUMPI records a communicator as the handle the run gave it; who is in it follows only from
//! the calls that made it, on every rank: a call that makes communicators is collective over
//! its parent, so the k-th such call a rank makes on a communicator is the same call as the
//! k-th of every other member. Each rank's records are walked in order, all ranks in rounds: a
//! rank runs until it reaches a call that makes communicators and waits there until every
//! member of the parent has reached the same call; then the call is resolved for all of them at
//! once, as MPI defines it:
//! - `MPI_Comm_dup`: the parent's members;
//! - `MPI_Comm_split`: the members of each colour ordered by key, then by rank in the parent;
//! - `MPI_Comm_create`: the group's members (groups are followed locally, from
//!   `MPI_Comm_group`, `MPI_Group_incl` and `MPI_Group_excl`);
//! - `MPI_Cart_create`: the parent's first ranks, as many as the grid holds (as without
//!   reordering, which is what MPI libraries do);
//! - `MPI_Cart_sub`: the ranks that share the dropped coordinates, ordered by the kept ones.
//!
//! # Complexity
//! O(records + Σ members of the parents of the calls that make communicators), in rounds of at
//! most one such call per rank.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::calls::{Args, COMM_NULL, COMM_SELF, COMM_WORLD};
use super::raw::RawRank;
use crate::error::{Result, TraceError};
use crate::model::{world_members, Cart, Rank};

/// What one rank's calls that make communicators made, by record index: the members (world
/// ranks) and Cartesian topology of the communicator this rank got (none where it got
/// `MPI_COMM_NULL`).
#[derive(Debug, Default)]
pub struct RankComms {
    created: HashMap<usize, (Arc<[Rank]>, Option<Cart>)>,
}

impl RankComms {
    /// The communicator record `k` made for this rank.
    pub fn created(&self, k: usize) -> Option<&(Arc<[Rank]>, Option<Cart>)> {
        self.created.get(&k)
    }
}

/// A communicator known to the walk: its members and topology.
struct Comm {
    members: Arc<[Rank]>,
    cart: Option<Cart>,
}

/// How one rank took part in a call that makes communicators.
struct Entry {
    rank: usize,
    record: usize,
    kind: Kind,
}

enum Kind {
    Dup,
    Split { color: i32, key: i32 },
    Create { group: Vec<Rank> },
    Cart { dims: Vec<i32>, periods: Vec<i32> },
    Sub { remain: Vec<i32> },
}

/// One rank's place in the walk.
struct Walker {
    next: usize,
    comms: HashMap<u16, usize>,
    groups: HashMap<u16, Vec<Rank>>,
    made: HashMap<usize, u32>,
    /// The call it waits at: (parent, how many calls on it before).
    waiting: Option<(usize, u32)>,
}

/// Resolves every communicator of `ranks` (the trace at `meta`).
pub fn resolve(meta: &Path, ranks: &[RawRank]) -> Result<Vec<RankComms>> {
    let n = ranks.len() as u32;
    let mut comms: Vec<Comm> = vec![Comm { members: world_members(n), cart: None }];
    let mut selves: Vec<usize> = Vec::with_capacity(ranks.len());
    for r in 0..n {
        selves.push(comms.len());
        comms.push(Comm { members: Arc::from([Rank(r)]), cart: None });
    }
    let mut walkers: Vec<Walker> = (0..ranks.len())
        .map(|r| Walker {
            next: 0,
            comms: [(COMM_WORLD, 0), (COMM_SELF, selves[r])].into_iter().collect(),
            groups: HashMap::new(),
            made: HashMap::new(),
            waiting: None,
        })
        .collect();
    let mut out: Vec<RankComms> = (0..ranks.len()).map(|_| RankComms::default()).collect();
    let mut pending: HashMap<(usize, u32), Vec<Entry>> = HashMap::new();
    loop {
        let mut progress = false;
        for (r, w) in walkers.iter_mut().enumerate() {
            if w.waiting.is_some() {
                continue;
            }
            let raw = &ranks[r];
            while let Some(rec) = raw.records.get(w.next) {
                let k = w.next;
                let bad = |reason: String| TraceError::Corrupt {
                    path: raw.path.clone(),
                    rank: Some(raw.rank),
                    offset: rec.offset,
                    reason,
                };
                let comm = |h: u16| {
                    w.comms
                        .get(&h)
                        .copied()
                        .ok_or_else(|| bad(format!("communicator {h} is not defined here")))
                };
                let (parent, kind) = match &rec.args {
                    Args::CommDup { old, .. } => (comm(*old)?, Kind::Dup),
                    Args::CommSplit { old, color, key, .. } => {
                        (comm(*old)?, Kind::Split { color: *color, key: *key })
                    }
                    Args::CommCreate { old, group, .. } => {
                        let g = w.groups.get(group).cloned();
                        let g =
                            g.ok_or_else(|| bad(format!("group {group} is not defined here")))?;
                        (comm(*old)?, Kind::Create { group: g })
                    }
                    Args::CartCreate { old, dims, periods, .. } => {
                        (comm(*old)?, Kind::Cart { dims: dims.clone(), periods: periods.clone() })
                    }
                    Args::CartSub { old, remain, .. } => {
                        (comm(*old)?, Kind::Sub { remain: remain.clone() })
                    }
                    Args::CommGroup { comm: c, group } => {
                        let members = comms[comm(*c)?].members.to_vec();
                        w.groups.insert(*group, members);
                        w.next += 1;
                        continue;
                    }
                    Args::GroupSelect { group, ranks: sel, exclude, new } => {
                        let g = w
                            .groups
                            .get(group)
                            .ok_or_else(|| bad(format!("group {group} is not defined here")))?;
                        let members = select(g, sel, *exclude).map_err(|i| {
                            bad(format!("rank {i} is not in group {group} ({} members)", g.len()))
                        })?;
                        w.groups.insert(*new, members);
                        w.next += 1;
                        continue;
                    }
                    Args::GroupFree { group } => {
                        w.groups.remove(group);
                        w.next += 1;
                        continue;
                    }
                    Args::CommFree { comm: c } => {
                        if *c != COMM_WORLD && *c != COMM_SELF {
                            w.comms.remove(c);
                        }
                        w.next += 1;
                        continue;
                    }
                    _ => {
                        w.next += 1;
                        continue;
                    }
                };
                let count = w.made.entry(parent).or_default();
                let key = (parent, *count);
                *count += 1;
                pending.entry(key).or_default().push(Entry { rank: r, record: k, kind });
                w.waiting = Some(key);
                progress = true;
                break;
            }
        }
        // Resolve every call all members of its parent have reached.
        let ready: Vec<(usize, u32)> = pending
            .iter()
            .filter(|((p, _), e)| e.len() == comms[*p].members.len())
            .map(|(k, _)| *k)
            .collect();
        for key in ready {
            let entries = pending.remove(&key).unwrap_or_default();
            let (colors, made) = make(meta, ranks, &comms[key.0], &entries)?;
            let mut ids: HashMap<i64, usize> = HashMap::new();
            for (color, c) in made {
                ids.insert(color, comms.len());
                comms.push(c);
            }
            for (e, color) in entries.iter().zip(colors) {
                let w = &mut walkers[e.rank];
                let new = new_handle(&ranks[e.rank].records[e.record].args);
                if let Some(id) = color.map(|c| ids[&c]).filter(|_| new != COMM_NULL) {
                    w.comms.insert(new, id);
                    let c = &comms[id];
                    out[e.rank].created.insert(e.record, (c.members.clone(), c.cart.clone()));
                }
                w.waiting = None;
                w.next += 1;
            }
            progress = true;
        }
        let done = walkers.iter().enumerate().all(|(r, w)| w.next >= ranks[r].records.len());
        if done {
            return Ok(out);
        }
        if !progress {
            let (r, w) = walkers
                .iter()
                .enumerate()
                .find(|(_, w)| w.waiting.is_some())
                .unwrap_or((0, &walkers[0]));
            let rec = ranks[r].records.get(w.next);
            return Err(TraceError::Corrupt {
                path: ranks[r].path.clone(),
                rank: Some(ranks[r].rank),
                offset: rec.map_or(0, |x| x.offset),
                reason: "this call makes communicators, and some members of its parent never \
                         make the matching call"
                    .into(),
            });
        }
    }
}

/// The members of group `g` that `MPI_Group_incl` (or, with `exclude`, `MPI_Group_excl`) of the
/// ranks `sel` makes; the first rank of `sel` outside the group as the error.
fn select(g: &[Rank], sel: &[i32], exclude: bool) -> std::result::Result<Vec<Rank>, i32> {
    let mut chosen = Vec::with_capacity(sel.len());
    for &i in sel {
        chosen.push(usize::try_from(i).ok().filter(|&i| i < g.len()).ok_or(i)?);
    }
    Ok(if exclude {
        (0..g.len()).filter(|i| !chosen.contains(i)).map(|i| g[i]).collect()
    } else {
        chosen.iter().map(|&i| g[i]).collect()
    })
}

fn new_handle(a: &Args) -> u16 {
    match a {
        Args::CommDup { new, .. }
        | Args::CommSplit { new, .. }
        | Args::CommCreate { new, .. }
        | Args::CartCreate { new, .. }
        | Args::CartSub { new, .. } => *new,
        _ => COMM_NULL,
    }
}

/// The communicators one call makes, by colour, and the colour each entry gets (`None` for
/// `MPI_COMM_NULL`).
type Made = (Vec<Option<i64>>, Vec<(i64, Comm)>);

fn make(meta: &Path, ranks: &[RawRank], parent: &Comm, entries: &[Entry]) -> Result<Made> {
    let bad = |e: &Entry, reason: String| TraceError::Invalid {
        path: meta.to_path_buf(),
        rank: ranks[e.rank].rank,
        event: None,
        reason: format!("{reason} (record at byte {})", ranks[e.rank].records[e.record].offset),
    };
    let prank = |e: &Entry| parent.members.iter().position(|&m| m.0 as usize == e.rank);
    // Per entry: (colour, key) to group and order by; None for MPI_COMM_NULL.
    let mut sort: Vec<Option<(i64, i64)>> = Vec::with_capacity(entries.len());
    let mut carts: HashMap<i64, Cart> = HashMap::new();
    for e in entries {
        let pr = prank(e).ok_or_else(|| bad(e, "not a member of the call's communicator".into()))?
            as i64;
        let v = match &e.kind {
            Kind::Dup => Some((0, pr)),
            Kind::Split { color, key } => {
                (*color >= 0).then_some((i64::from(*color), i64::from(*key)))
            }
            Kind::Create { group } => {
                let me = Rank(e.rank as u32);
                group.iter().position(|&g| g == me).map(|i| (0, i as i64))
            }
            Kind::Cart { dims, periods } => {
                let size = dims.iter().try_fold(1i64, |a, &d| (d > 0).then(|| a * i64::from(d)));
                let size = size.filter(|&s| s <= parent.members.len() as i64).ok_or_else(|| {
                    bad(e, format!("a Cartesian grid {dims:?} that does not fit its communicator"))
                })?;
                carts.entry(0).or_insert_with(|| Cart {
                    dims: dims.iter().map(|&d| d as u32).collect(),
                    periods: dims
                        .iter()
                        .enumerate()
                        .map(|(i, _)| periods.get(i).is_some_and(|&p| p != 0))
                        .collect(),
                });
                (pr < size).then_some((0, pr))
            }
            Kind::Sub { remain } => {
                let cart = parent.cart.as_ref().ok_or_else(|| {
                    bad(e, "MPI_Cart_sub on a communicator without a Cartesian topology".into())
                })?;
                if remain.len() != cart.dims.len() {
                    return Err(bad(e, "MPI_Cart_sub with the wrong number of dimensions".into()));
                }
                // Row-major coordinates of this rank; colour over the dropped dimensions, key
                // over the kept ones.
                let mut rest = pr;
                let mut coords = vec![0i64; cart.dims.len()];
                for (d, &size) in cart.dims.iter().enumerate().rev() {
                    coords[d] = rest % i64::from(size.max(1));
                    rest /= i64::from(size.max(1));
                }
                let (mut color, mut key) = (0i64, 0i64);
                for (d, &size) in cart.dims.iter().enumerate() {
                    if remain[d] != 0 {
                        key = key * i64::from(size) + coords[d];
                    } else {
                        color = color * i64::from(size) + coords[d];
                    }
                }
                carts.entry(color).or_insert_with(|| Cart {
                    dims: (0..cart.dims.len())
                        .filter(|&d| remain[d] != 0)
                        .map(|d| cart.dims[d])
                        .collect(),
                    periods: (0..cart.dims.len())
                        .filter(|&d| remain[d] != 0)
                        .map(|d| cart.periods[d])
                        .collect(),
                });
                Some((color, key))
            }
        };
        sort.push(v);
    }
    // Members of each colour, ordered by (key, rank in the parent).
    let mut by_color: HashMap<i64, Vec<(i64, i64, Rank)>> = HashMap::new();
    for (e, v) in entries.iter().zip(&sort) {
        if let Some((c, k)) = v {
            let pr = prank(e).unwrap_or(0) as i64;
            by_color.entry(*c).or_default().push((*k, pr, Rank(e.rank as u32)));
        }
    }
    let made = by_color
        .into_iter()
        .map(|(c, mut v)| {
            v.sort_unstable();
            let members: Arc<[Rank]> = v.into_iter().map(|(_, _, r)| r).collect();
            (c, Comm { members, cart: carts.get(&c).cloned() })
        })
        .collect();
    Ok((sort.iter().map(|v| v.map(|(c, _)| c)).collect(), made))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dumpi::Record;

    fn rank(r: u32, calls: Vec<Args>) -> RawRank {
        let records = calls
            .into_iter()
            .enumerate()
            .map(|(i, args)| Record {
                label: 0,
                offset: i as u64,
                enter_ns: 0,
                exit_ns: 0,
                cpu: None,
                args,
            })
            .collect();
        RawRank {
            path: format!("run-{r:04}.bin").into(),
            rank: Rank(r),
            host: None,
            start_unix_ns: None,
            records,
            counts: Default::default(),
        }
    }

    fn members(c: &RankComms, k: usize) -> Vec<u32> {
        c.created(k).map(|(m, _)| m.iter().map(|r| r.0).collect()).unwrap_or_default()
    }

    #[test]
    fn splits_grids_and_groups_get_the_members_mpi_gives_them() {
        // Six ranks: split by parity, key descending; a 2 × 3 grid and its rows (dimension 1
        // kept); a dup of the split; a group without rank 0, then a communicator of it.
        let ranks: Vec<RawRank> = (0..6)
            .map(|r| {
                rank(
                    r,
                    vec![
                        Args::CommSplit { old: 2, color: (r % 2) as i32, key: -(r as i32), new: 4 },
                        Args::CartCreate { old: 2, dims: vec![2, 3], periods: vec![0, 1], new: 5 },
                        Args::CartSub { old: 5, remain: vec![0, 1], new: 6 },
                        Args::CommDup { old: 4, new: 7 },
                        Args::CommGroup { comm: 2, group: 9 },
                        Args::GroupSelect { group: 9, ranks: vec![0], exclude: true, new: 10 },
                        Args::CommCreate { old: 2, group: 10, new: if r == 0 { 1 } else { 8 } },
                    ],
                )
            })
            .collect();
        let out = resolve(Path::new("run.meta"), &ranks).unwrap();
        assert_eq!(members(&out[0], 0), [4, 2, 0]);
        assert_eq!(members(&out[3], 0), [5, 3, 1]);
        assert_eq!(members(&out[4], 1), [0, 1, 2, 3, 4, 5]);
        let (_, cart) = out[4].created(1).unwrap();
        assert_eq!(cart.as_ref().unwrap().dims, [2, 3]);
        // Rank 4 is at (1, 1): its row is ranks 3, 4, 5, a ring of 3 (dimension 1 wraps).
        assert_eq!(members(&out[4], 2), [3, 4, 5]);
        let (_, row) = out[4].created(2).unwrap();
        assert_eq!(row.as_ref().unwrap().periods, [true]);
        assert_eq!(members(&out[1], 2), [0, 1, 2]);
        assert_eq!(members(&out[5], 3), [5, 3, 1]);
        assert!(out[0].created(6).is_none());
        assert_eq!(members(&out[2], 6), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_member_that_never_makes_the_call_is_an_error_not_a_hang() {
        let ranks =
            vec![rank(0, vec![Args::CommDup { old: 2, new: 4 }]), rank(1, vec![Args::Other])];
        let e = resolve(Path::new("run.meta"), &ranks).unwrap_err().to_string();
        assert!(e.contains("run-0000.bin: rank 0") && e.contains("never make"), "{e}");
    }
}
