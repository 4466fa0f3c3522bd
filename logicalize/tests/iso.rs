//! The isomorphism matcher's three outcomes on small graphs, and the checker of a mapping.

use mpiskel_logicalize::iso::{is_isomorphism, isomorphism, IsoResult};
use mpiskel_logicalize::Graph;

fn ring(n: u32) -> Graph {
    Graph::from_edges(n as usize, (0..n).map(|i| (i, (i + 1) % n)))
}

fn grid(a: u32, b: u32) -> Graph {
    let mut e = Vec::new();
    for i in 0..a {
        for j in 0..b {
            let v = i * b + j;
            if j + 1 < b {
                e.push((v, v + 1));
            }
            if i + 1 < a {
                e.push((v, v + b));
            }
        }
    }
    Graph::from_edges((a * b) as usize, e)
}

#[test]
fn a_renumbered_graph_is_found_with_a_true_mapping() {
    for g in [ring(12), grid(4, 5)] {
        let (h, _) = g.shuffled(7);
        let IsoResult::Found(map) = isomorphism(&h, &g, 1_000_000) else {
            panic!("not found");
        };
        assert!(is_isomorphism(&h, &g, &map));
    }
}

#[test]
fn graphs_that_differ_are_not_isomorphic() {
    // Same size, same number of edges and degrees: two rings of 6 against one of 12.
    let two =
        Graph::from_edges(12, (0..12u32).map(|i| (i, if i % 6 == 5 { i - 5 } else { i + 1 })));
    assert_eq!(two.edges(), ring(12).edges());
    assert!(matches!(isomorphism(&two, &ring(12), 1_000_000), IsoResult::No));
    // Different sizes or degree sequences are refused at once.
    assert!(matches!(isomorphism(&ring(12), &ring(13), 1), IsoResult::No));
    assert!(matches!(isomorphism(&grid(3, 4), &ring(12), 1), IsoResult::No));
}

#[test]
fn a_budget_too_small_leaves_it_undecided() {
    // A vertex-transitive graph gives the search nothing to prune by: with one step it cannot
    // finish.
    let g = ring(64);
    let (h, _) = g.shuffled(3);
    assert!(matches!(isomorphism(&h, &g, 1), IsoResult::Undecided));
    let IsoResult::Found(map) = isomorphism(&h, &g, 10_000_000) else { panic!("not found") };
    assert!(is_isomorphism(&h, &g, &map));
}

#[test]
fn a_wrong_mapping_is_caught() {
    let g = grid(3, 3);
    let identity: Vec<u32> = (0..9).collect();
    assert!(is_isomorphism(&g, &g, &identity));
    let mut swapped = identity.clone();
    swapped.swap(0, 4); // a corner for the centre
    assert!(!is_isomorphism(&g, &g, &swapped));
    assert!(!is_isomorphism(&g, &g, &identity[..8]));
    let repeated = vec![0u32; 9];
    assert!(!is_isomorphism(&g, &g, &repeated));
}
