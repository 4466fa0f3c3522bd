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
//! # Complexity
//! O(g · s · log) for the `g` groups of size `s` the ranks report, plus O(n) per table made.

use std::collections::{BTreeMap, BTreeSet};

use super::model::CommGroups;

/// The colour of rank `r`'s group among groups of `size` ranks spaced `stride` apart: the
/// blocks the skeleton makes where the trace does not say otherwise.
pub fn strided_colour(r: u32, size: u32, stride: u32) -> u32 {
    let (size, stride) = (size.max(1), stride.max(1));
    (r / (size * stride)) * stride + r % stride
}

/// The tables of the communicators whose groups are not blocks, from each rank's (size,
/// stride, members) of the communicators it calls. Groups of one size and spacing that overlap
/// (not one split) are left to the blocks.
pub(super) fn comm_groups<'a>(
    n: usize,
    per_rank: impl Iterator<Item = &'a Vec<(usize, usize, Vec<u32>)>>,
) -> Vec<CommGroups> {
    let mut by_shape: BTreeMap<(usize, usize), BTreeSet<&'a [u32]>> = BTreeMap::new();
    for groups in per_rank {
        for (size, stride, members) in groups {
            by_shape.entry((*size, *stride)).or_default().insert(members);
        }
    }
    let mut tables = Vec::new();
    for ((size, stride), sets) in by_shape {
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
        tables.push(CommGroups { size, stride, colours });
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
        let ranks = [vec![], vec![(3, 1, vec![1, 2, 3])], vec![(3, 1, vec![1, 2, 3])]];
        let t = comm_groups(4, ranks.iter());
        assert_eq!(t, vec![CommGroups { size: 3, stride: 1, colours: vec![1, 0, 0, 0] }]);
        let blocks = [vec![(2, 1, vec![0, 1])], vec![(2, 1, vec![2, 3])]];
        assert!(comm_groups(4, blocks.iter()).is_empty());
        // Overlapping groups are not one split: left to the blocks.
        let overlap = [vec![(2, 1, vec![1, 2])], vec![(2, 1, vec![2, 3])]];
        assert!(comm_groups(4, overlap.iter()).is_empty());
    }
}
