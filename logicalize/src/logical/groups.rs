//! The groups of the communicators that are neither the world, a rank alone nor a slice of the
//! topology ([`LogicalComm::Other`]), where the blocks of ranks that their size and spacing give
//! are not what the trace holds.
//!
//! A logical communicator of that kind keeps only its size and the spacing of its ranks, so
//! that ranks in different groups of one split still make the same call; the skeleton makes its
//! groups as blocks (`rank / (size · stride) · stride + rank mod stride`, see
//! [`strided_colour`]). Where the trace's groups are other ones — a hierarchy's coarse level
//! made by `MPI_Comm_create` without rank 0 (hypre's BoomerAMG under DOLFINx: ranks 1–3; blocks
//! of three would put 0–2 together and leave 3 alone, and the program could not finish) — the
//! trace's groups are recorded as a colour per rank ([`CommGroups`]).
//!
//! Groups of one size and spacing may also be more than one split: hypre's coarse levels
//! under DOLFINx pair ranks 1–2 in one communicator while PETSc's blocks pair 0–1 and 2–3 in
//! another. [`partitions`] numbers the splits before the calls are translated, so that the two
//! are different communicators ([`LogicalComm::Other::part`](super::model::LogicalComm)) with a
//! table each.
//!
//! # Complexity
//! O(g · s · (p + log g)) for the `g` groups of size `s` the ranks report in `p` splits, plus
//! O(n) per table made.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::model::CommGroups;

/// The colour of rank `r`'s group among groups of `size` ranks spaced `stride` apart: the
/// blocks the skeleton makes where the trace does not say otherwise.
pub fn strided_colour(r: u32, size: u32, stride: u32) -> u32 {
    let (size, stride) = (size.max(1), stride.max(1));
    (r / (size * stride)) * stride + r % stride
}

/// One communicator's group as a rank reports it: (size, stride, split, members sorted).
pub(super) type Group = (usize, usize, u32, Vec<u32>);

/// The split each group belongs to, for the groups (size, stride, members sorted) of every
/// rank's communicators, where it is not the first: the groups of one size and spacing, in
/// order, each go to the first split none of whose groups it overlaps (greedy colouring of the
/// overlap graph; one split where the groups are disjoint, as they are unless two
/// communicators of one shape group the ranks differently).
pub(super) fn partitions(
    groups: impl Iterator<Item = (usize, usize, Vec<u32>)>,
) -> HashMap<Vec<u32>, u32> {
    let mut by_shape: BTreeMap<(usize, usize), BTreeSet<Vec<u32>>> = BTreeMap::new();
    for (size, stride, members) in groups {
        by_shape.entry((size, stride)).or_default().insert(members);
    }
    let mut part_of = HashMap::new();
    for sets in by_shape.into_values() {
        // The ranks each split holds so far.
        let mut taken: Vec<BTreeSet<u32>> = Vec::new();
        for m in sets {
            let free = taken.iter().position(|t| m.iter().all(|r| !t.contains(r)));
            let part = free.unwrap_or_else(|| {
                taken.push(BTreeSet::new());
                taken.len() - 1
            });
            taken[part].extend(m.iter().copied());
            if part > 0 {
                part_of.insert(m, part as u32);
            }
        }
    }
    part_of
}

/// The tables of the communicators whose groups are not blocks, from each rank's groups
/// ([`Group`]) of the communicators it calls. Groups of one size, spacing and split that
/// overlap are left to the blocks.
pub(super) fn comm_groups<'a>(
    n: usize,
    per_rank: impl Iterator<Item = &'a Vec<Group>>,
) -> Vec<CommGroups> {
    let mut by_shape: BTreeMap<(usize, usize, u32), BTreeSet<&'a [u32]>> = BTreeMap::new();
    for groups in per_rank {
        for (size, stride, part, members) in groups {
            by_shape.entry((*size, *stride, *part)).or_default().insert(members);
        }
    }
    let mut tables = Vec::new();
    for ((size, stride, part), sets) in by_shape {
        let blocks = sets.iter().all(|m| {
            let c = strided_colour(m[0], size as u32, stride as u32);
            let block: Vec<u32> = (0..n as u32)
                .filter(|&r| strided_colour(r, size as u32, stride as u32) == c)
                .collect();
            block.as_slice() == *m
        });
        if blocks {
            continue;
        }
        let mut colours: Vec<Option<u32>> = vec![None; n];
        let mut disjoint = true;
        for (i, m) in sets.iter().enumerate() {
            for &r in m.iter() {
                match colours.get_mut(r as usize) {
                    Some(c @ None) => *c = Some(i as u32),
                    _ => disjoint = false,
                }
            }
        }
        if !disjoint {
            continue;
        }
        // A rank in none of the groups: a colour of its own after theirs.
        let first_free = sets.len() as u32;
        let colours =
            colours.iter().enumerate().map(|(r, c)| c.unwrap_or(first_free + r as u32)).collect();
        tables.push(CommGroups { size, stride, part, colours });
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranks 1–3 of four in one communicator (rank 0 left out): not the blocks 0–2 and 3, so
    /// recorded; blocks of two, as a split by `rank / 2` makes them, are not.
    #[test]
    fn groups_other_than_blocks_are_recorded() {
        let ranks = [vec![], vec![(3, 1, 0, vec![1, 2, 3])], vec![(3, 1, 0, vec![1, 2, 3])]];
        let t = comm_groups(4, ranks.iter());
        assert_eq!(t, vec![CommGroups { size: 3, stride: 1, part: 0, colours: vec![1, 0, 0, 0] }]);
        let blocks = [vec![(2, 1, 0, vec![0, 1])], vec![(2, 1, 0, vec![2, 3])]];
        assert!(comm_groups(4, blocks.iter()).is_empty());
        // Overlapping groups of one split are not a split: left to the blocks.
        let overlap = [vec![(2, 1, 0, vec![1, 2])], vec![(2, 1, 0, vec![2, 3])]];
        assert!(comm_groups(4, overlap.iter()).is_empty());
    }

    /// Blocks of two (0–1, 2–3) and the pair 1–2 of another communicator: two splits, the
    /// blocks first and left to the skeleton's blocks, the pair with a table of its own.
    #[test]
    fn overlapping_groups_of_one_shape_are_two_splits() {
        let reported = [vec![0, 1], vec![1, 2], vec![2, 3], vec![1, 2], vec![0, 1]];
        let parts = partitions(reported.iter().map(|m| (2, 1, m.clone())));
        assert_eq!(parts, HashMap::from([(vec![1, 2], 1)]));
        let ranks = [
            vec![(2, 1, 0, vec![0, 1])],
            vec![(2, 1, 0, vec![0, 1]), (2, 1, 1, vec![1, 2])],
            vec![(2, 1, 0, vec![2, 3]), (2, 1, 1, vec![1, 2])],
            vec![(2, 1, 0, vec![2, 3])],
        ];
        let t = comm_groups(4, ranks.iter());
        assert_eq!(t, vec![CommGroups { size: 2, stride: 1, part: 1, colours: vec![1, 0, 0, 4] }]);
    }
}
