//! The topology catalogue: every structured communication pattern mpiskel knows, generated for
//! a number of ranks from its prime factorisation (Xu & Subhlok 2008, §2, step 1).
//!
//! Families (nodes numbered row-major over `dims`, dimension 0 slowest):
//! - **Cartesian**: each node talks to ±1 along every dimension — lines and rings (1-D), 2-D,
//!   3-D and 4-D grids and tori with any mix of periodic dimensions; a product of size-2
//!   dimensions is a hypercube.
//! - **Moore**: all offsets in {−1, 0, 1}^d — the 9-point (2-D) and 27-point (3-D) stencils.
//! - **Bt6**: the 6-point stencil of NPB BT/SP on a square torus: E, W, N, S and the two opposite
//!   diagonals (row −1, col +1) and (row +1, col −1).
//! - **Butterfly**: recursive doubling within the rows of an R × C grid (partners c xor 2^k) plus
//!   a transpose partner (r, c) ↔ (c, r), as in NPB CG (R = C, C a power of two).
//! - **Tree**: a k-ary tree in heap order (k = 2, 3, 4), and the star (one root, n − 1 leaves:
//!   master and workers).
//! - **Pairs**: disjoint pairs (r, r xor 1), e.g. ping-pong between partners.
//! - **AllToAll**: every pair.
//!
//! Dimensions of size 1 are never generated, and a dimension of size 2 is never periodic (its
//! two neighbours coincide, so it is the same graph).
//!
//! # Complexity
//! The number of candidates is polynomial in the number of prime factors (a few hundred for
//! 16,384 ranks); building one candidate graph is O(N · degree).

use serde::{Deserialize, Serialize};

use crate::graph::Graph;

/// The family of a topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// ±1 along every dimension.
    Cartesian,
    /// Every offset in {−1, 0, 1}^d.
    Moore,
    /// NPB BT/SP's 6-point stencil on a square torus.
    Bt6,
    /// Recursive doubling within rows plus a transpose partner.
    Butterfly,
    /// A k-ary tree in heap order.
    Tree,
    /// Disjoint pairs (r, r xor 1).
    Pairs,
    /// Every rank with every other.
    AllToAll,
}

/// One topology of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Topology {
    /// The family.
    pub kind: Kind,
    /// Dimension sizes (for trees: `[n, k]`; for all-to-all: `[n]`).
    pub dims: Vec<usize>,
    /// Whether each dimension wraps around (Cartesian and Moore).
    pub periods: Vec<bool>,
    /// Offsets beyond the family's stencil that some ranks also talk along (a Cartesian grid
    /// with extra strides, as a multigrid's coarse levels two planes away; see
    /// [`crate::identify`]), as the logical trace names them. Empty for catalogue topologies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strides: Vec<Vec<i64>>,
}

impl Topology {
    /// A topology of `kind` over `dims` with `periods`, without extra strides.
    pub fn new(kind: Kind, dims: Vec<usize>, periods: Vec<bool>) -> Topology {
        Topology { kind, dims, periods, strides: Vec::new() }
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        match self.kind {
            Kind::Tree | Kind::Pairs => self.dims[0],
            _ => self.dims.iter().product(),
        }
    }

    /// A readable name, e.g. `4×4 torus`, `16×8 grid`, `ring of 8`, `hypercube 2^4`.
    pub fn name(&self) -> String {
        let x = self.dims.iter().map(ToString::to_string).collect::<Vec<_>>().join("×");
        let all = self.periods.iter().all(|&p| p);
        let none = self.periods.iter().all(|&p| !p);
        let wrap = || {
            if all {
                "torus".to_owned()
            } else if none {
                "grid".to_owned()
            } else {
                let p: Vec<String> = self
                    .periods
                    .iter()
                    .enumerate()
                    .filter(|(_, &p)| p)
                    .map(|(i, _)| i.to_string())
                    .collect();
                format!("grid periodic in dim {}", p.join(","))
            }
        };
        match self.kind {
            Kind::Cartesian if self.dims.len() == 1 => {
                if all {
                    format!("ring of {x}")
                } else {
                    format!("line of {x}")
                }
            }
            Kind::Cartesian if self.dims.len() > 2 && self.dims.iter().all(|&d| d == 2) => {
                format!("hypercube 2^{}", self.dims.len())
            }
            Kind::Cartesian if !self.strides.is_empty() => {
                let s: Vec<String> = self
                    .strides
                    .iter()
                    .map(|o| {
                        format!(
                            "({})",
                            o.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
                        )
                    })
                    .collect();
                format!("{x} {} with strides {}", wrap(), s.join(" "))
            }
            Kind::Cartesian => format!("{x} {}", wrap()),
            Kind::Moore => {
                format!("{}-point stencil on {x} {}", 3usize.pow(self.dims.len() as u32), wrap())
            }
            Kind::Bt6 => format!("6-point stencil (BT/SP) on {x} torus"),
            Kind::Butterfly => format!("butterfly rows + transpose on {x}"),
            Kind::Pairs => format!("{} pairs (r, r xor 1)", self.dims[0] / 2),
            Kind::Tree if self.dims[1] + 1 == self.dims[0] => format!("star of {}", self.dims[0]),
            Kind::Tree => format!("{}-ary tree of {}", self.dims[1], self.dims[0]),
            Kind::AllToAll => format!("all-to-all of {x}"),
        }
    }

    /// Coordinates of node `v` (row-major; for trees and all-to-all: `[v]`).
    pub fn coords(&self, v: usize) -> Vec<usize> {
        match self.kind {
            Kind::Tree | Kind::AllToAll | Kind::Pairs => vec![v],
            _ => {
                let mut c = vec![0; self.dims.len()];
                let mut rest = v;
                for k in (0..self.dims.len()).rev() {
                    c[k] = rest % self.dims[k];
                    rest /= self.dims[k];
                }
                c
            }
        }
    }

    /// Node at coordinates `c` (row-major).
    pub fn node(&self, c: &[usize]) -> usize {
        c.iter().zip(&self.dims).fold(0, |acc, (x, n)| acc * n + x)
    }

    /// The neighbour of `v` at `offset` (per dimension), if it exists (Cartesian-like kinds).
    pub fn at_offset(&self, v: usize, offset: &[i64]) -> Option<usize> {
        let mut c = self.coords(v);
        for (k, &o) in offset.iter().enumerate() {
            let n = self.dims[k] as i64;
            let x = c[k] as i64 + o;
            let periodic = self.periods.get(k).copied().unwrap_or(false);
            if !(0..n).contains(&x) && !periodic {
                return None;
            }
            c[k] = x.rem_euclid(n) as usize;
        }
        Some(self.node(&c))
    }

    /// The node one step along `offset` from `v`, as a skeleton moves: along a dimension of two
    /// any non-zero offset is the other node; periodic dimensions wrap; `None` past the edge
    /// of a non-periodic one.
    pub fn step(&self, v: usize, offset: &[i64]) -> Option<usize> {
        let mut c = self.coords(v);
        for (k, &o) in offset.iter().enumerate() {
            let size = *self.dims.get(k)? as i64;
            if size == 2 && o != 0 {
                c[k] = 1 - c[k];
                continue;
            }
            let x = c[k] as i64 + o;
            if !(0..size).contains(&x) && !self.periods.get(k).copied().unwrap_or(false) {
                return None;
            }
            c[k] = x.rem_euclid(size) as usize;
        }
        Some(self.node(&c))
    }

    /// The offset from node `a` to node `b` of a Cartesian-like kind, as directions name it:
    /// along a dimension of two, 1 for "the other one" either way; along a periodic dimension,
    /// wrapped into (−n/2, n/2].
    pub fn offset(&self, a: usize, b: usize) -> Vec<i64> {
        let (ca, cb) = (self.coords(a), self.coords(b));
        (0..ca.len())
            .map(|k| {
                let n = self.dims[k] as i64;
                let o = cb[k] as i64 - ca[k] as i64;
                if n == 2 {
                    return o.abs();
                }
                self.wrap(k, o)
            })
            .collect()
    }

    /// The offset by which the node at `offset` names this one, wrapped as [`Topology::offset`]
    /// wraps (a move along a dimension of two, and half-way round a periodic one, is its own
    /// opposite).
    pub fn opposite(&self, offset: &[i64]) -> Vec<i64> {
        offset
            .iter()
            .zip(&self.dims)
            .enumerate()
            .map(|(k, (&o, &d))| if d == 2 { o } else { self.wrap(k, -o) })
            .collect()
    }

    /// Offset `o` along dimension `k` wrapped into (−n/2, n/2] if the dimension is periodic.
    pub fn wrap(&self, k: usize, o: i64) -> i64 {
        let n = self.dims[k] as i64;
        if !self.periods.get(k).copied().unwrap_or(false) {
            return o;
        }
        let o = o.rem_euclid(n);
        if o > n / 2 {
            o - n
        } else {
            o
        }
    }

    /// The stencil offsets of Cartesian-like kinds (not the extra [`Topology::strides`]).
    pub fn offsets(&self) -> Vec<Vec<i64>> {
        let d = self.dims.len();
        match self.kind {
            Kind::Cartesian => (0..d)
                .flat_map(|k| {
                    [-1, 1].into_iter().map(move |s| {
                        let mut o = vec![0; d];
                        o[k] = s;
                        o
                    })
                })
                .collect(),
            Kind::Moore => {
                let mut out = Vec::new();
                for code in 0..3usize.pow(d as u32) {
                    let o: Vec<i64> =
                        (0..d).map(|k| (code / 3usize.pow(k as u32) % 3) as i64 - 1).collect();
                    if o.iter().any(|&x| x != 0) {
                        out.push(o);
                    }
                }
                out
            }
            Kind::Bt6 => {
                vec![vec![-1, 0], vec![1, 0], vec![0, -1], vec![0, 1], vec![-1, 1], vec![1, -1]]
            }
            _ => Vec::new(),
        }
    }

    /// The neighbours of node `v`.
    pub fn neighbors(&self, v: usize) -> Vec<usize> {
        let n = self.n();
        match self.kind {
            Kind::Cartesian | Kind::Moore | Kind::Bt6 => self
                .offsets()
                .iter()
                .filter_map(|o| self.at_offset(v, o))
                .chain(self.strides.iter().filter_map(|o| self.step(v, o)))
                .filter(|&u| u != v)
                .collect(),
            Kind::Butterfly => {
                let (r, c) = (v / self.dims[1], v % self.dims[1]);
                let mut out: Vec<usize> = (0..)
                    .map(|k| 1usize << k)
                    .take_while(|&b| b < self.dims[1])
                    .map(|b| r * self.dims[1] + (c ^ b))
                    .collect();
                let t = c * self.dims[1] + r;
                if t != v {
                    out.push(t);
                }
                out
            }
            Kind::Tree => {
                let k = self.dims[1];
                let mut out: Vec<usize> = (1..=k).map(|i| k * v + i).filter(|&u| u < n).collect();
                if v > 0 {
                    out.push((v - 1) / k);
                }
                out
            }
            Kind::AllToAll => (0..n).filter(|&u| u != v).collect(),
            Kind::Pairs => vec![v ^ 1],
        }
    }

    /// The topology's graph.
    pub fn graph(&self) -> Graph {
        let n = self.n();
        Graph::from_edges(
            n,
            (0..n).flat_map(|v| self.neighbors(v).into_iter().map(move |u| (v as u32, u as u32))),
        )
    }

    /// Sorted degree sequence and edge count, without building the graph: nodes of a
    /// Cartesian-like topology fall into at most 3^d classes by whether each coordinate is at a
    /// boundary, and all nodes of a class have the same degree.
    pub fn degree_sequence(&self) -> (Vec<usize>, usize) {
        let n = self.n();
        let mut degs: Vec<usize> = match self.kind {
            Kind::Cartesian | Kind::Moore | Kind::Bt6 => {
                // Per dimension: (representative coordinate, how many coordinates it stands for).
                let per_dim: Vec<Vec<(usize, usize)>> = self
                    .dims
                    .iter()
                    .zip(&self.periods)
                    .map(|(&d, &p)| {
                        if p || d == 1 {
                            vec![(0, d)]
                        } else if d == 2 {
                            vec![(0, 1), (1, 1)]
                        } else {
                            vec![(0, 1), (1, d - 2), (d - 1, 1)]
                        }
                    })
                    .collect();
                let mut out = Vec::with_capacity(n);
                let mut idx = vec![0usize; per_dim.len()];
                loop {
                    let coords: Vec<usize> =
                        idx.iter().zip(&per_dim).map(|(&i, c)| c[i].0).collect();
                    let count: usize = idx.iter().zip(&per_dim).map(|(&i, c)| c[i].1).product();
                    let mut nb = self.neighbors(self.node(&coords));
                    nb.sort_unstable();
                    nb.dedup();
                    out.extend(std::iter::repeat_n(nb.len(), count));
                    // Next combination.
                    let mut k = 0;
                    while k < idx.len() {
                        idx[k] += 1;
                        if idx[k] < per_dim[k].len() {
                            break;
                        }
                        idx[k] = 0;
                        k += 1;
                    }
                    if k == idx.len() {
                        break;
                    }
                }
                out
            }
            Kind::AllToAll => vec![n - 1; n],
            Kind::Pairs => vec![1; n],
            Kind::Tree | Kind::Butterfly => (0..n)
                .map(|v| {
                    let mut nb = self.neighbors(v);
                    nb.sort_unstable();
                    nb.dedup();
                    nb.len()
                })
                .collect(),
        };
        degs.sort_unstable();
        let edges = degs.iter().sum::<usize>() / 2;
        (degs, edges)
    }

    /// Whether every node looks the same (tori, periodic stencils, rings, all-to-all, pairs).
    pub fn vertex_transitive(&self) -> bool {
        match self.kind {
            Kind::Cartesian | Kind::Moore | Kind::Bt6 => {
                self.dims.iter().zip(&self.periods).all(|(&d, &p)| p || d <= 2)
            }
            Kind::AllToAll | Kind::Pairs => true,
            Kind::Tree | Kind::Butterfly => false,
        }
    }

    /// Rank of the family in the tie-breaking order (simpler first).
    pub(crate) fn simplicity(&self) -> (usize, Kind, usize, usize) {
        let periodic = self.periods.iter().filter(|&&p| p).count();
        (self.dims.len(), self.kind, *self.dims.iter().max().unwrap_or(&0), periodic)
    }
}

/// Prime factors of `n`, with repetition, in increasing order.
pub fn prime_factors(mut n: usize) -> Vec<usize> {
    let mut f = Vec::new();
    let mut p = 2;
    while p * p <= n {
        while n % p == 0 {
            f.push(p);
            n /= p;
        }
        p += 1;
    }
    if n > 1 {
        f.push(n);
    }
    f
}

/// Every way to write `n` as a product of `d` factors ≥ 2, in non-increasing order.
fn factorizations(n: usize, d: usize, max: usize) -> Vec<Vec<usize>> {
    if d == 1 {
        return if (2..=max).contains(&n) { vec![vec![n]] } else { Vec::new() };
    }
    let mut out = Vec::new();
    for f in (2..=max.min(n)).rev() {
        if n % f == 0 {
            for mut rest in factorizations(n / f, d - 1, f) {
                rest.insert(0, f);
                out.push(rest);
            }
        }
    }
    out
}

/// Periodicity choices for `dims`, one per distinct graph: size-2 dimensions never wrap, and
/// equal-sized dimensions get non-increasing periodicity (the others are the same graph with
/// the dimensions swapped).
fn periodicities(dims: &[usize]) -> Vec<Vec<bool>> {
    let d = dims.len();
    let mut out = Vec::new();
    for mask in 0..(1u32 << d) {
        let p: Vec<bool> = (0..d).map(|k| mask & (1 << k) != 0).collect();
        if (0..d).any(|k| p[k] && dims[k] <= 2) {
            continue;
        }
        if (1..d).any(|k| dims[k] == dims[k - 1] && p[k] && !p[k - 1]) {
            continue;
        }
        out.push(p);
    }
    out
}

/// The whole catalogue for `n` nodes.
pub fn catalogue(n: usize) -> Vec<Topology> {
    let mut out = Vec::new();
    if n < 2 {
        return out;
    }
    for d in 1..=4 {
        for dims in factorizations(n, d, n) {
            for periods in periodicities(&dims) {
                out.push(Topology::new(Kind::Cartesian, dims.clone(), periods.clone()));
                if (d == 2 || d == 3) && dims.iter().all(|&x| x >= 3) {
                    out.push(Topology::new(Kind::Moore, dims.clone(), periods));
                }
            }
            if d == 2 && dims[0] == dims[1] && dims[0] >= 3 {
                out.push(Topology::new(Kind::Bt6, dims.clone(), vec![true, true]));
            }
            if d == 2 && dims[0] == dims[1] && dims[0].is_power_of_two() {
                out.push(Topology::new(Kind::Butterfly, dims.clone(), vec![false, false]));
            }
        }
    }
    if n >= 4 {
        for k in 2..=4 {
            if n > k + 1 {
                out.push(Topology::new(Kind::Tree, vec![n, k], Vec::new()));
            }
        }
        // The star (master and workers): a tree of one level.
        out.push(Topology::new(Kind::Tree, vec![n, n - 1], Vec::new()));
    }
    if n % 2 == 0 && n > 2 {
        out.push(Topology::new(Kind::Pairs, vec![n], Vec::new()));
    }
    out.push(Topology::new(Kind::AllToAll, vec![n], Vec::new()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factorisations_of_sixteen() {
        let names: Vec<String> = catalogue(16).iter().map(Topology::name).collect();
        for want in
            ["ring of 16", "line of 16", "4×4 torus", "4×4 grid", "8×2 grid", "hypercube 2^4"]
        {
            assert!(names.contains(&want.to_owned()), "{want} missing from {names:?}");
        }
        assert!(names.iter().any(|n| n.starts_with("6-point")));
        assert!(names.iter().any(|n| n.starts_with("butterfly")));
    }

    #[test]
    fn bt_stencil_matches_npb() {
        // Rank 0 of BT on 16 ranks talks to 1, 3, 4, 12, 13 and 7.
        let t = Topology::new(Kind::Bt6, vec![4, 4], vec![true, true]);
        let mut nb = t.neighbors(0);
        nb.sort();
        assert_eq!(nb, vec![1, 3, 4, 7, 12, 13]);
    }
}
