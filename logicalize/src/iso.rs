//! The isomorphism test (Xu & Subhlok 2008, §2, step 3), which also yields the rank → node mapping.
//!
//! A backtracking matcher in the spirit of VF2 (Cordella et al., IEEE TPAMI 26(10), 2004) with
//! two choices that make structured graphs cheap: nodes of the observed graph are matched in
//! breadth-first order, so every node after the first of its component has a matched neighbour
//! and its candidates are the unmatched neighbours of that neighbour's image; and nodes carry a
//! label (degree, sum of neighbour degrees) that candidates must share. A candidate is accepted
//! when its matched neighbours are exactly the images of the node's matched neighbours, and each
//! of those edges lies on as many triangles as its image (which tells the face, edge and corner
//! neighbours of a stencil apart). Grids,
//! tori and stencils are matched with almost no backtracking; hard non-isomorphic pairs (same
//! degrees, one edge moved) are cut off by a step budget and reported as undecided — they rarely
//! get here, since the spectrum test rejects them first.
//!
//! The graphs are petgraph graphs ([`Graph::petgraph`]); petgraph's own VF2
//! (`is_isomorphic_matching`, nodes labelled by degree) checks this matcher in the tests on
//! every catalogue topology up to 64 nodes and on grids and tori of 128 and 256, positives and
//! hard negatives. It is not the matcher here because it is far slower on the graphs topology
//! identification meets (BENCHMARKS.md, "Topology matchers": 3.8 s against 0.26 ms for a
//! renumbered 8 × 8 × 8 torus, over a minute for a 16 × 16 × 16 one).
//!
//! # Complexity
//! O(n · degree) steps without backtracking; at most the budget otherwise.

use std::collections::{HashMap, VecDeque};

use crate::graph::Graph;

/// What the matcher concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsoResult {
    /// `map[v]` is the node of the candidate that observed node `v` corresponds to.
    Found(Vec<u32>),
    /// The graphs are not isomorphic.
    No,
    /// The step budget ran out.
    Undecided,
}

fn labels(g: &Graph) -> Vec<(usize, usize)> {
    (0..g.n())
        .map(|v| (g.degree(v), g.neighbors(v).iter().map(|&u| g.degree(u as usize)).sum()))
        .collect()
}

/// Breadth-first order of `g`, each component from its node with the rarest label.
fn bfs_order(g: &Graph, lab: &[(usize, usize)]) -> Vec<usize> {
    let mut freq: HashMap<(usize, usize), usize> = HashMap::new();
    for l in lab {
        *freq.entry(*l).or_insert(0) += 1;
    }
    let mut roots: Vec<usize> = (0..g.n()).collect();
    roots.sort_by_key(|&v| (freq[&lab[v]], lab[v], v));
    let mut seen = vec![false; g.n()];
    let mut order = Vec::with_capacity(g.n());
    for r in roots {
        if seen[r] {
            continue;
        }
        seen[r] = true;
        let mut q = VecDeque::from([r]);
        while let Some(v) = q.pop_front() {
            order.push(v);
            for &u in g.neighbors(v) {
                if !seen[u as usize] {
                    seen[u as usize] = true;
                    q.push_back(u as usize);
                }
            }
        }
    }
    order
}

const NONE: u32 = u32::MAX;

/// Number of common neighbours of `a` and `b` (triangles on the edge a–b).
fn common(g: &Graph, a: usize, b: usize) -> usize {
    let (x, y) = (g.neighbors(a), g.neighbors(b));
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Finds an isomorphism from `g` to `h`, within `budget` candidate checks.
pub fn isomorphism(g: &Graph, h: &Graph, budget: u64) -> IsoResult {
    let n = g.n();
    if n != h.n() || g.edges() != h.edges() || g.degree_sequence() != h.degree_sequence() {
        return IsoResult::No;
    }
    let (lg, lh) = (labels(g), labels(h));
    let mut a = lg.clone();
    let mut b = lh.clone();
    a.sort_unstable();
    b.sort_unstable();
    if a != b {
        return IsoResult::No;
    }
    let order = bfs_order(g, &lg);
    let mut map = vec![NONE; n]; // g → h
    let mut inv = vec![NONE; n]; // h → g
                                 // Per position: the candidate list and the index of the next one to try.
    let mut cands: Vec<Vec<u32>> = Vec::with_capacity(n);
    let mut next: Vec<usize> = Vec::with_capacity(n);
    let mut steps = 0u64;
    let candidates_for = |v: usize, map: &[u32], inv: &[u32]| -> Vec<u32> {
        match g.neighbors(v).iter().find(|&&u| map[u as usize] != NONE) {
            Some(&u) => h
                .neighbors(map[u as usize] as usize)
                .iter()
                .copied()
                .filter(|&c| inv[c as usize] == NONE && lh[c as usize] == lg[v])
                .collect(),
            None => (0..n as u32)
                .filter(|&c| inv[c as usize] == NONE && lh[c as usize] == lg[v])
                .collect(),
        }
    };
    let consistent = |v: usize, c: usize, map: &[u32], inv: &[u32]| -> bool {
        let mut mapped = 0;
        for &u in g.neighbors(v) {
            let m = map[u as usize];
            if m != NONE {
                // The edge must exist, and lie on as many triangles in both graphs.
                if !h.has_edge(c, m as usize)
                    || common(g, v, u as usize) != common(h, c, m as usize)
                {
                    return false;
                }
                mapped += 1;
            }
        }
        h.neighbors(c).iter().filter(|&&w| inv[w as usize] != NONE).count() == mapped
    };
    let mut pos = 0;
    cands.push(candidates_for(order[0], &map, &inv));
    next.push(0);
    loop {
        let v = order[pos];
        let mut placed = false;
        while next[pos] < cands[pos].len() {
            let c = cands[pos][next[pos]] as usize;
            next[pos] += 1;
            steps += 1;
            if steps > budget {
                return IsoResult::Undecided;
            }
            if consistent(v, c, &map, &inv) {
                map[v] = c as u32;
                inv[c] = v as u32;
                placed = true;
                break;
            }
        }
        if placed {
            pos += 1;
            if pos == n {
                return IsoResult::Found(map);
            }
            if cands.len() == pos {
                cands.push(Vec::new());
                next.push(0);
            }
            cands[pos] = candidates_for(order[pos], &map, &inv);
            next[pos] = 0;
        } else {
            // Backtrack.
            if pos == 0 {
                return IsoResult::No;
            }
            pos -= 1;
            let u = order[pos];
            inv[map[u] as usize] = NONE;
            map[u] = NONE;
        }
    }
}

/// Whether petgraph's VF2 (`is_isomorphic_matching`, nodes labelled by degree) finds `a` and
/// `b` isomorphic: the cross-check of [`isomorphism`] in the tests and the benchmark. No step
/// budget: on large hard cases it can run for minutes.
pub fn vf2_isomorphic(a: &Graph, b: &Graph) -> bool {
    let label = |g: &Graph| g.petgraph().map(|v, _| g.degree(v.index()), |_, _| ());
    petgraph::algo::is_isomorphic_matching(&label(a), &label(b), |x, y| x == y, |_, _| true)
}

/// Whether `map` is an isomorphism from `g` to `h`.
pub fn is_isomorphism(g: &Graph, h: &Graph, map: &[u32]) -> bool {
    if g.n() != h.n() || g.edges() != h.edges() || map.len() != g.n() {
        return false;
    }
    let mut seen = vec![false; h.n()];
    for &m in map {
        if m as usize >= h.n() || std::mem::replace(&mut seen[m as usize], true) {
            return false;
        }
    }
    (0..g.n()).all(|v| {
        g.neighbors(v).iter().all(|&u| h.has_edge(map[v] as usize, map[u as usize] as usize))
    })
}
