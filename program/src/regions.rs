//! Regions of the receive buffer for non-blocking receives: two receives pending at once must
//! not share memory (MPI 4.0, §3.7.2: a buffer of a pending receive is not to be used by any
//! other operation), and a receive that completed leaves its region free for the next.
//!
//! Each request slot of a non-blocking receive (a ring of slots for a receive started several
//! times by an inner loop before any completes) is live from the first place of the class's loop
//! nest that names it to the last (its receive, the completions of any of its slots). A place
//! inside a top-level loop stands for every iteration: the slot is then live over the whole
//! loop, since an iteration's receive may be completed by the next. Slots whose live ranges do
//! not meet share a region; the regions are assigned by the greedy colouring of an interval
//! graph in order of start (optimal in the number of regions: as many as the most slots live at
//! one place; Golumbic 1980, §8.2), each region as large as the largest slot it holds.
//!
//! A program whose receives are each completed before the next is posted then needs one
//! region, where a region per slot needed as many as it has receives: HPC Challenge's
//! RandomAccess, traced on 4 ranks, has 1,713 receive slots of up to 2 MB in one straight-line
//! phase, which made a receive buffer of 3.4 GB.
//!
//! # Complexity
//! O(L + S log S) for L places and S slots: the regions free and in use are kept ordered.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// One slot group's needs: its live range over the nest's places (inclusive) and its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Need {
    /// First place it is live at.
    pub(super) from: usize,
    /// Last place it is live at.
    pub(super) to: usize,
    /// Bytes it needs.
    pub(super) bytes: u64,
}

/// Assigns each slot group (keyed by its first slot) an offset from `base`, regions reused
/// between groups that are never live at once; returns the offsets and the end of the last
/// region.
pub(super) fn assign(needs: &BTreeMap<u32, Need>, base: u64) -> (BTreeMap<u32, u64>, u64) {
    let mut order: Vec<(&u32, &Need)> = needs.iter().collect();
    order.sort_by_key(|(s, n)| (n.from, n.to, **s));
    // Per region: its size. The regions in use, by the last place a slot in them is live at
    // (a min-heap), and the free ones by size and index: slots come in order of their first
    // place, so a region once free stays free until it is given a slot.
    let mut regions: Vec<u64> = Vec::new();
    let mut busy: BinaryHeap<Reverse<(usize, usize)>> = BinaryHeap::new();
    let mut free: BTreeSet<(u64, usize)> = BTreeSet::new();
    let mut of: BTreeMap<u32, usize> = BTreeMap::new();
    for (&slot, n) in order {
        while let Some(&Reverse((to, i))) = busy.peek() {
            if to >= n.from {
                break;
            }
            busy.pop();
            free.insert((regions[i], i));
        }
        // A free region that is large enough, the smallest such (the first of those); else
        // the largest free one (the last of those), grown; else a new one.
        let pick = free.range((n.bytes, 0)..).next().or_else(|| free.iter().next_back()).copied();
        let i = match pick {
            Some(key) => {
                free.remove(&key);
                key.1
            }
            None => {
                regions.push(0);
                regions.len() - 1
            }
        };
        regions[i] = regions[i].max(n.bytes);
        busy.push(Reverse((n.to, i)));
        of.insert(slot, i);
    }
    let mut starts = Vec::with_capacity(regions.len());
    let mut at = base;
    for &bytes in &regions {
        starts.push(at);
        at += bytes;
    }
    (of.into_iter().map(|(s, i)| (s, starts[i])).collect(), at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(v: &[(u32, usize, usize, u64)]) -> BTreeMap<u32, Need> {
        v.iter().map(|&(s, from, to, bytes)| (s, Need { from, to, bytes })).collect()
    }

    #[test]
    fn receives_completed_one_after_another_share_one_region() {
        // Three receives, each completed before the next is posted.
        let (at, end) = assign(&needs(&[(0, 0, 1, 64), (1, 2, 3, 128), (2, 4, 5, 32)]), 8);
        assert_eq!(at.values().copied().collect::<Vec<_>>(), vec![8, 8, 8]);
        assert_eq!(end, 8 + 128);
    }

    #[test]
    fn receives_pending_at_once_get_regions_apart() {
        // 0 and 1 overlap; 2 starts when 0 has ended, and overlaps 1.
        let n = needs(&[(0, 0, 3, 64), (1, 1, 6, 64), (2, 4, 8, 64)]);
        let (at, end) = assign(&n, 0);
        assert_ne!(at[&0], at[&1]);
        assert_ne!(at[&1], at[&2]);
        assert_eq!(at[&0], at[&2]);
        assert_eq!(end, 128);
        // No two slots live at one place overlap in memory.
        for (a, na) in &n {
            for (b, nb) in &n {
                if a < b && na.from <= nb.to && nb.from <= na.to {
                    let (x, y) = (at[a], at[b]);
                    assert!(x + na.bytes <= y || y + nb.bytes <= x, "{a} and {b}");
                }
            }
        }
    }

    #[test]
    fn a_region_grows_to_the_largest_slot_it_holds() {
        let (at, end) = assign(&needs(&[(0, 0, 0, 16), (1, 1, 1, 4096), (2, 2, 2, 8)]), 0);
        assert!(at.values().all(|&o| o == 0));
        assert_eq!(end, 4096);
    }

    /// The regions as first assigned, by scanning every region for each slot (O(S · R)).
    fn assign_by_scan(needs: &BTreeMap<u32, Need>, base: u64) -> (BTreeMap<u32, u64>, u64) {
        let mut order: Vec<(&u32, &Need)> = needs.iter().collect();
        order.sort_by_key(|(s, n)| (n.from, n.to, **s));
        let mut regions: Vec<(usize, u64)> = Vec::new();
        let mut of: BTreeMap<u32, usize> = BTreeMap::new();
        for (&slot, n) in order {
            let free = |r: &(usize, u64)| r.0 < n.from;
            let fits = regions
                .iter()
                .enumerate()
                .filter(|(_, r)| free(r) && r.1 >= n.bytes)
                .min_by_key(|(_, r)| r.1)
                .map(|(i, _)| i);
            let pick = fits.or_else(|| {
                regions
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| free(r))
                    .max_by_key(|(_, r)| r.1)
                    .map(|x| x.0)
            });
            let i = pick.unwrap_or_else(|| {
                regions.push((0, 0));
                regions.len() - 1
            });
            regions[i].0 = n.to;
            regions[i].1 = regions[i].1.max(n.bytes);
            of.insert(slot, i);
        }
        let mut starts = Vec::new();
        let mut at = base;
        for r in &regions {
            starts.push(at);
            at += r.1;
        }
        (of.into_iter().map(|(s, i)| (s, starts[i])).collect(), at)
    }

    /// Slots of random live ranges and sizes (few distinct sizes, so that ties occur) get the
    /// offsets the scan of every region gave them.
    #[test]
    fn ordered_regions_assign_as_the_scan_of_every_region() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..200 {
            let n = 1 + next(60) as u32;
            let v: Vec<(u32, usize, usize, u64)> = (0..n)
                .map(|s| {
                    let from = next(100) as usize;
                    let to = from + next(20) as usize;
                    (s, from, to, 8 << next(4))
                })
                .collect();
            let needs = needs(&v);
            assert_eq!(assign(&needs, 16), assign_by_scan(&needs, 16), "{v:?}");
        }
    }
}
