//! Topology identification: the decision tree of Xu & Subhlok 2008, §2 (Xu, Prithivathi, Subhlok, Zheng,
//! *Logicalization of MPI communication traces*, UH-CS-08-07).
//!
//! 1. **Simple tests**: every catalogue topology for the number of ranks
//!    ([`crate::catalogue::catalogue`]) whose edge count and sorted degree sequence equal the
//!    observed graph's survives.
//! 2. **Spectrum**: survivors must have the observed adjacency spectrum ([`crate::spectrum`]).
//! 3. **Isomorphism**: survivors must be isomorphic to the observed graph ([`crate::iso`]); the
//!    isomorphism is the rank → node (and so rank → coordinate) map.
//! 4. **Strides** (beyond the decision tree, only when nothing is isomorphic): a Cartesian grid,
//!    ranks row-major, that the graph holds with a few longer offsets ([`crate::strides`]).
//!
//! When several topologies are isomorphic (a 4 × 4 torus is also a 2^4 hypercube), one is chosen
//! by this rule: the Cartesian topology the program itself declared with `MPI_Cart_create`, if it
//! is among them; otherwise the simplest — fewest dimensions, then the family order Cartesian,
//! Moore, BT, butterfly, tree, pairs, all-to-all, then the smallest largest dimension, then the fewest
//! periodic dimensions. The others are listed. When nothing survives, the result is the general
//! graph (explicit neighbour lists); a trace without point-to-point messages has no topology.
//!
//! # Complexity
//! Simple tests O(candidates · n · degree) in parallel; spectrum O(n³) up to
//! [`crate::spectrum::DENSE_LIMIT`] nodes, O(n · degree²) beyond; isomorphism O(n · degree) per
//! survivor on structured graphs.

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::catalogue::{catalogue, Kind, Topology};
use crate::graph::Graph;
use crate::iso::{isomorphism, IsoResult};
use crate::spectrum::{eigenvalues, same_spectrum, DENSE_LIMIT};

/// What one stage of the decision tree left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// `simple tests`, `spectrum`, `isomorphism` or `strides`.
    pub name: String,
    /// The topologies that passed it.
    pub candidates: Vec<String>,
    /// How long it took, seconds.
    pub seconds: f64,
    /// How the stage decided (e.g. dense eigenvalues or spectral moments).
    pub method: String,
}

/// The communication structure found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Structure {
    /// A catalogue topology.
    Topology {
        /// The topology chosen.
        topology: Topology,
        /// Its name.
        name: String,
        /// Other catalogue topologies isomorphic to the observed graph.
        alternatives: Vec<String>,
        /// Why this one was chosen among them.
        rule: String,
    },
    /// No catalogue topology matches: explicit neighbour lists.
    General,
    /// No point-to-point messages between ranks at all.
    NoPointToPoint,
}

/// The result of identification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identification {
    /// Number of ranks.
    pub n: usize,
    /// What was found.
    pub structure: Structure,
    /// The decision tree, stage by stage.
    pub stages: Vec<Stage>,
    /// Node of the topology each rank is (identity for the general graph).
    pub node_of_rank: Vec<u32>,
    /// Coordinates of each rank in the topology.
    pub coords: Vec<Vec<usize>>,
    /// Edges of the observed graph.
    pub edges: usize,
}

fn label(g: &Graph, v: usize) -> (usize, usize) {
    (g.degree(v), g.neighbors(v).iter().map(|&u| g.degree(u as usize)).sum())
}

/// The observed node with the rarest (degree, neighbour-degree sum) label, and its layers.
fn distance_profile_root(g: &Graph) -> (usize, (usize, usize), Vec<usize>) {
    let mut freq: std::collections::HashMap<(usize, usize), usize> =
        std::collections::HashMap::new();
    for v in 0..g.n() {
        *freq.entry(label(g, v)).or_insert(0) += 1;
    }
    let root = (0..g.n()).min_by_key(|&v| (freq[&label(g, v)], label(g, v), v)).unwrap_or(0);
    (root, label(g, root), g.bfs_layers(root))
}

/// A cheap necessary condition before the matcher: an isomorphism maps the observed root to a
/// candidate node with the same label and the same breadth-first layer sizes. Checked from one
/// node of a vertex-transitive candidate, from every node with that label when they are few
/// (at most 16), and not at all otherwise.
fn same_distance_profile(
    g: &Graph,
    root: &(usize, (usize, usize), Vec<usize>),
    t: &Topology,
    h: &Graph,
) -> bool {
    let (_, lab, prof) = root;
    let nodes: Vec<usize> = (0..h.n()).filter(|&v| label(h, v) == *lab).collect();
    if nodes.is_empty() {
        return false;
    }
    let _ = g;
    if t.vertex_transitive() {
        return h.bfs_layers(nodes[0]) == *prof;
    }
    if nodes.len() > 16 {
        return true;
    }
    nodes.iter().any(|&v| h.bfs_layers(v) == *prof)
}

/// Step budget of the isomorphism test for a graph of `n` nodes and `e` edges.
fn budget(n: usize, e: usize) -> u64 {
    200 * (n + 2 * e) as u64 + 1_000_000
}

/// Normalises a declared Cartesian topology as the catalogue spells it: size-1 dimensions
/// dropped, size-2 dimensions not periodic, dimensions in non-increasing order.
pub fn normalize_declared(dims: &[u32], periods: &[bool]) -> Option<Topology> {
    let mut dp: Vec<(usize, bool)> = dims
        .iter()
        .zip(periods)
        .filter(|(d, _)| **d > 1)
        .map(|(&d, &p)| (d as usize, p && d > 2))
        .collect();
    if dp.is_empty() {
        return None;
    }
    dp.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    Some(Topology::new(
        Kind::Cartesian,
        dp.iter().map(|x| x.0).collect(),
        dp.iter().map(|x| x.1).collect(),
    ))
}

/// Identifies the topology of `observed` (a graph on the ranks); `declared` is the Cartesian
/// topology the program declared, if any (see [`normalize_declared`]).
pub fn identify(observed: &Graph, declared: Option<&Topology>) -> Identification {
    let n = observed.n();
    let identity: Vec<u32> = (0..n as u32).collect();
    let general = |structure: Structure, stages: Vec<Stage>| Identification {
        n,
        structure,
        stages,
        node_of_rank: identity.clone(),
        coords: (0..n).map(|r| vec![r]).collect(),
        edges: observed.edges(),
    };
    if observed.edges() == 0 {
        return general(Structure::NoPointToPoint, Vec::new());
    }

    // 1. Simple tests.
    let t0 = Instant::now();
    let degrees = observed.degree_sequence();
    let edges = observed.edges();
    let simple: Vec<(Topology, Graph)> = catalogue(n)
        .into_par_iter()
        .filter(|t| t.degree_sequence() == (degrees.clone(), edges))
        .map(|t| {
            let g = t.graph();
            (t, g)
        })
        .collect();
    let mut stages = vec![Stage {
        name: "simple tests".into(),
        candidates: simple.iter().map(|(t, _)| t.name()).collect(),
        seconds: t0.elapsed().as_secs_f64(),
        method: "edge count and sorted degree sequence".into(),
    }];

    // 2. Spectrum.
    let t0 = Instant::now();
    let dense = n <= DENSE_LIMIT;
    let ev = (dense && !simple.is_empty()).then(|| eigenvalues(observed));
    let spectral: Vec<(Topology, Graph)> =
        simple.into_par_iter().filter(|(_, g)| same_spectrum(observed, ev.as_deref(), g)).collect();
    stages.push(Stage {
        name: "spectrum".into(),
        candidates: spectral.iter().map(|(t, _)| t.name()).collect(),
        seconds: t0.elapsed().as_secs_f64(),
        method: if dense {
            "adjacency eigenvalues (dense)".into()
        } else {
            "spectral moments tr(A^2), tr(A^3), tr(A^4)".into()
        },
    });

    // 3. Isomorphism.
    let t0 = Instant::now();
    let b = budget(n, edges);
    let profile = distance_profile_root(observed);
    let results: Vec<(Topology, IsoResult)> = spectral
        .into_par_iter()
        .map(|(t, g)| {
            if !same_distance_profile(observed, &profile, &t, &g) {
                return (t, IsoResult::No);
            }
            let r = isomorphism(observed, &g, b);
            (t, r)
        })
        .collect();
    let undecided: Vec<String> = results
        .iter()
        .filter(|(_, r)| *r == IsoResult::Undecided)
        .map(|(t, _)| format!("{} (undecided)", t.name()))
        .collect();
    let mut iso: Vec<(Topology, Vec<u32>)> = results
        .into_iter()
        .filter_map(|(t, r)| match r {
            IsoResult::Found(m) => Some((t, m)),
            _ => None,
        })
        .collect();
    let mut names: Vec<String> = iso.iter().map(|(t, _)| t.name()).collect();
    names.extend(undecided);
    stages.push(Stage {
        name: "isomorphism".into(),
        candidates: names,
        seconds: t0.elapsed().as_secs_f64(),
        method: "distance profile, then BFS-ordered matching with labels".into(),
    });
    if iso.is_empty() {
        // 4. A grid with extra strides (a multigrid's coarse levels).
        let t0 = Instant::now();
        let found = crate::strides::strided(observed);
        stages.push(Stage {
            name: "strides".into(),
            candidates: found.iter().map(Topology::name).collect(),
            seconds: t0.elapsed().as_secs_f64(),
            method: "Cartesian topologies, ranks row-major, whose every edge is observed, \
                     with the fewest offsets beyond the stencil"
                .into(),
        });
        let Some(topology) = found else {
            return general(Structure::General, stages);
        };
        return Identification {
            n,
            structure: Structure::Topology {
                name: topology.name(),
                alternatives: Vec::new(),
                rule: "the only stage that matched: a grid whose ranks also talk along a few \
                       longer offsets"
                    .into(),
                topology: topology.clone(),
            },
            stages,
            node_of_rank: identity.clone(),
            coords: (0..n).map(|v| topology.coords(v)).collect(),
            edges,
        };
    }

    iso.sort_by_key(|a| a.0.simplicity());
    let chosen = declared.and_then(|d| iso.iter().position(|(t, _)| t == d));
    let (pick, rule) = match chosen {
        Some(i) => (i, "the Cartesian topology the program declared (MPI_Cart_create)"),
        None => {
            (0, "the simplest: fewest dimensions, then family, then smallest largest dimension")
        }
    };
    let (topology, map) = iso.swap_remove(pick);
    let alternatives = {
        let mut a: Vec<String> = iso.iter().map(|(t, _)| t.name()).collect();
        a.sort();
        a
    };
    let coords = map.iter().map(|&v| topology.coords(v as usize)).collect();
    Identification {
        n,
        structure: Structure::Topology {
            name: topology.name(),
            topology,
            alternatives,
            rule: rule.into(),
        },
        stages,
        node_of_rank: map,
        coords,
        edges,
    }
}
