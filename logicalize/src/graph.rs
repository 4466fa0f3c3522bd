//! A simple undirected graph (sorted adjacency lists, no loops, no parallel edges).

/// An undirected simple graph on nodes `0..n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    adj: Vec<Vec<u32>>,
}

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
        Graph { adj }
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        self.adj.len()
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.adj.iter().map(Vec::len).sum::<usize>() / 2
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
