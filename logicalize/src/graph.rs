//! An undirected simple graph (no loops, no parallel edges): a petgraph [`UnGraph`], which the
//! graph algorithms use ([`Graph::bfs_layers`], [`Graph::components`], the cross-checks against
//! petgraph's VF2 in the tests), with sorted adjacency lists beside it for the matcher
//! ([`crate::iso`]), which walks neighbours in order and tests adjacency by binary search.

use petgraph::graph::{NodeIndex, UnGraph};

/// An undirected simple graph on nodes `0..n`.
#[derive(Debug, Clone)]
pub struct Graph {
    g: UnGraph<(), (), u32>,
    adj: Vec<Vec<u32>>,
}

impl PartialEq for Graph {
    fn eq(&self, other: &Graph) -> bool {
        self.adj == other.adj
    }
}

impl Eq for Graph {}

impl Graph {
    /// A graph from an edge list; loops and repeated edges are dropped.
    pub fn from_edges(n: usize, edges: impl IntoIterator<Item = (u32, u32)>) -> Graph {
        let mut adj = vec![Vec::new(); n];
        for (a, b) in edges {
            if a != b {
                adj[a as usize].push(b);
                adj[b as usize].push(a);
            }
        }
        for v in &mut adj {
            v.sort_unstable();
            v.dedup();
        }
        let mut g = UnGraph::with_capacity(n, adj.iter().map(Vec::len).sum::<usize>() / 2);
        for _ in 0..n {
            g.add_node(());
        }
        for (v, ns) in adj.iter().enumerate() {
            for &u in ns.iter().filter(|&&u| u as usize > v) {
                g.add_edge(NodeIndex::new(v), NodeIndex::new(u as usize), ());
            }
        }
        Graph { g, adj }
    }

    /// The graph as petgraph holds it (node `v` is `NodeIndex::new(v)`).
    pub fn petgraph(&self) -> &UnGraph<(), (), u32> {
        &self.g
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        self.adj.len()
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.g.edge_count()
    }

    /// Neighbours of `v`, sorted.
    pub fn neighbors(&self, v: usize) -> &[u32] {
        &self.adj[v]
    }

    /// Degree of `v`.
    pub fn degree(&self, v: usize) -> usize {
        self.adj[v].len()
    }

    /// Whether `u` and `v` are adjacent.
    pub fn has_edge(&self, u: usize, v: usize) -> bool {
        self.adj[u].binary_search(&(v as u32)).is_ok()
    }

    /// Degrees sorted in increasing order.
    pub fn degree_sequence(&self) -> Vec<usize> {
        let mut d: Vec<usize> = self.adj.iter().map(Vec::len).collect();
        d.sort_unstable();
        d
    }

    /// How many nodes lie at each distance from `root` (index 0: the root itself), by
    /// petgraph's breadth-first search. O(n + edges).
    pub fn bfs_layers(&self, root: usize) -> Vec<usize> {
        let mut dist = vec![usize::MAX; self.n()];
        dist[root] = 0;
        let mut layers = vec![1];
        let mut bfs = petgraph::visit::Bfs::new(&self.g, NodeIndex::new(root));
        while let Some(v) = bfs.next(&self.g) {
            let d = dist[v.index()];
            for u in self.g.neighbors(v) {
                if dist[u.index()] == usize::MAX {
                    dist[u.index()] = d + 1;
                    if layers.len() <= d + 1 {
                        layers.push(0);
                    }
                    layers[d + 1] += 1;
                }
            }
        }
        layers
    }

    /// Number of connected components (petgraph's union–find). O(edges · α(n)).
    pub fn components(&self) -> usize {
        petgraph::algo::connected_components(&self.g)
    }

    /// The graph after one double edge swap that keeps every degree: (a, b), (c, d) become
    /// (a, d), (c, b) for a's first edge and the last edge (c, d) where that adds no edge that
    /// exists — same size, same degrees, usually another graph (a hard negative for a
    /// matcher). `None` where no such pair exists.
    pub fn edge_swapped(&self) -> Option<Graph> {
        let edges: Vec<(u32, u32)> = (0..self.n())
            .flat_map(|v| self.adj[v].iter().map(move |&u| (v as u32, u)))
            .filter(|(v, u)| v < u)
            .collect();
        let &(a, b) = edges.first()?;
        let &(c, d) = edges.iter().rev().find(|&&(c, d)| {
            a != c
                && a != d
                && b != c
                && b != d
                && !self.has_edge(a as usize, d as usize)
                && !self.has_edge(c as usize, b as usize)
        })?;
        let rest = edges.iter().copied().filter(|&e| e != (a, b) && e != (c, d));
        Some(Graph::from_edges(self.n(), rest.chain([(a, d), (c, b)])))
    }

    /// The same graph with its nodes renumbered by a pseudo-random permutation drawn from
    /// `seed` (xorshift, Fisher–Yates), and the permutation (`perm[v]` is `v`'s new number).
    pub fn shuffled(&self, seed: u64) -> (Graph, Vec<u32>) {
        let n = self.n();
        let mut perm: Vec<u32> = (0..n as u32).collect();
        let mut x = seed | 1;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            perm.swap(i, (x % (i as u64 + 1)) as usize);
        }
        (self.relabel(&perm), perm)
    }

    /// The same graph with node `v` renamed `perm[v]`.
    pub fn relabel(&self, perm: &[u32]) -> Graph {
        let edges = (0..self.n())
            .flat_map(|v| self.adj[v].iter().map(move |&u| (perm[v], perm[u as usize])));
        Graph::from_edges(self.n(), edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_and_components_of_a_ring_and_two_paths() {
        let ring = Graph::from_edges(6, (0..6u32).map(|i| (i, (i + 1) % 6)));
        assert_eq!(ring.bfs_layers(0), vec![1, 2, 2, 1]);
        assert_eq!(ring.components(), 1);
        assert_eq!(ring.edges(), 6);
        let paths = Graph::from_edges(5, [(0, 1), (1, 2), (3, 4), (1, 0), (2, 2)]);
        assert_eq!(paths.edges(), 3, "repeated edges and loops dropped");
        assert_eq!(paths.components(), 2);
        assert_eq!(paths.bfs_layers(3), vec![1, 1]);
    }
}
