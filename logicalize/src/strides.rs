//! Grids with extra strides: the structure of a multigrid code, whose fine levels talk to the
//! ±1 neighbours of a Cartesian grid and whose coarse levels also reach further along some
//! dimensions (NPB MG on 2 × 2 × 4 ranks: a 3-D torus plus partners two planes away).
//!
//! Such a graph matches no catalogue topology (its degrees are not a stencil's), so the
//! decision tree of Xu & Subhlok 2008, §2 leaves it a general graph, whose directions are rank
//! offsets that differ from rank to rank and so split every rank into a class of its own. This
//! stage, run when the isomorphism stage finds nothing, tries every Cartesian topology of the
//! catalogue with the ranks numbered row-major (as `MPI_Cart_create` and most codes number
//! them): it fits when the observed graph holds every edge of the grid and every observed edge
//! is a grid offset. The offsets beyond the stencil become [`Topology::strides`], named like
//! the stencil's directions (`+2z`), so that ranks at the same place of the grid run the same
//! logical program. The fit with the fewest strides wins (then the simplest topology); more
//! than [`MAX_STRIDES`], or a stride that fewer than [`MIN_EDGES`] edges follow (a lone chord,
//! better named as an exception), is no grid.
//!
//! # Complexity
//! O(candidates · n · degree), candidates in parallel.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use crate::catalogue::{catalogue, Kind, Topology};
use crate::graph::Graph;

/// Most distinct extra offsets (each with its opposite) a grid may carry.
pub const MAX_STRIDES: usize = 8;

/// Fewest edges along each extra offset: a stride that ranks share, not a lone chord.
pub const MIN_EDGES: usize = 2;

/// The extra offsets of `t` (ranks row-major) that `g` uses, if `g` holds every edge of `t`
/// and nothing off the grid's offsets, with at most [`MAX_STRIDES`] of them.
fn fit(g: &Graph, t: &Topology) -> Option<Vec<Vec<i64>>> {
    let n = g.n();
    let base: BTreeSet<Vec<i64>> = (0..n)
        .flat_map(|v| t.neighbors(v).into_iter().map(move |u| (v, u)))
        .map(|(v, u)| t.offset(v, u))
        .collect();
    let mut extra: BTreeSet<Vec<i64>> = BTreeSet::new();
    // Edges along each extra offset, an offset and its opposite counted as one.
    let mut uses: BTreeMap<Vec<i64>, usize> = BTreeMap::new();
    for v in 0..n {
        if t.neighbors(v).iter().any(|&u| !g.has_edge(v, u)) {
            return None;
        }
        for &u in g.neighbors(v) {
            let o = t.offset(v, u as usize);
            if base.contains(&o) {
                continue;
            }
            if !extra.contains(&o) {
                if t.step(v, &o) != Some(u as usize) {
                    return None;
                }
                extra.insert(o.clone());
                if extra.len() > 2 * MAX_STRIDES {
                    return None;
                }
            }
            let opposite = t.opposite(&o);
            *uses.entry(o.min(opposite)).or_default() += 1;
        }
    }
    // Each must carry at least MIN_EDGES edges (a stride some ranks share, not a lone chord);
    // each undirected edge was seen from both ends.
    let shared = uses.values().all(|&k| k / 2 >= MIN_EDGES);
    (!extra.is_empty() && uses.len() <= MAX_STRIDES && shared).then(|| extra.into_iter().collect())
}

/// The Cartesian topology with strides that `g` fits best (see the module documentation).
pub fn strided(g: &Graph) -> Option<Topology> {
    catalogue(g.n())
        .into_par_iter()
        .filter(|t| t.kind == Kind::Cartesian)
        .filter_map(|t| fit(g, &t).map(|strides| Topology { strides, ..t }))
        .min_by(|a, b| {
            (a.strides.len(), a.simplicity(), &a.dims, &a.periods).cmp(&(
                b.strides.len(),
                b.simplicity(),
                &b.dims,
                &b.periods,
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NPB MG's graph on 16 ranks: a 4 × 2 × 2 torus (row-major, the 4 slowest) plus partners
    /// two planes away along the 4 for the odd planes.
    fn mg16() -> Graph {
        let t = Topology::new(Kind::Cartesian, vec![4, 2, 2], vec![true, false, false]);
        let mut edges: Vec<(u32, u32)> = (0..16)
            .flat_map(|v| t.neighbors(v).into_iter().map(move |u| (v as u32, u as u32)))
            .collect();
        for v in [4u32, 5, 6, 7] {
            edges.push((v, v + 8));
            edges.push((v + 8, v));
        }
        Graph::from_edges(16, edges)
    }

    #[test]
    fn a_torus_with_partners_two_planes_away() {
        let t = strided(&mg16()).expect("a grid with strides");
        assert_eq!(t.dims, vec![4, 2, 2]);
        assert_eq!(t.periods, vec![true, false, false]);
        assert_eq!(t.strides, vec![vec![2, 0, 0]]);
        assert_eq!(t.name(), "4×2×2 grid periodic in dim 0 with strides (2,0,0)");
    }

    #[test]
    fn a_graph_off_every_grid_is_none() {
        // A ring of 16 plus every chord of length 5, 6 and 7 both ways, and a missing edge.
        let mut edges: Vec<(u32, u32)> = Vec::new();
        for v in 0..16u32 {
            for d in [1u32, 3, 5, 6, 7] {
                if (v, d) != (0, 1) {
                    edges.push((v, (v + d) % 16));
                    edges.push(((v + d) % 16, v));
                }
            }
        }
        assert!(strided(&Graph::from_edges(16, edges)).is_none());
    }
}
