//! Properties of identification: under any renumbering of the ranks, the same topology is found
//! and the returned mapping is a true isomorphism.

use mpiskel_logicalize::catalogue::{Kind, Topology};
use mpiskel_logicalize::iso::is_isomorphism;
use mpiskel_logicalize::{identify, Graph, Structure};
use proptest::prelude::*;

/// Identifies `g` renumbered, and checks the answer is `want` (or isomorphic to it, listed as
/// an alternative) with a mapping that is an isomorphism.
fn check(want: &Topology, seed: u64) -> Result<(), TestCaseError> {
    let (g, _) = want.graph().shuffled(seed);
    let id = identify(&g, None);
    let Structure::Topology { topology, name, alternatives, .. } = &id.structure else {
        return Err(TestCaseError::fail(format!(
            "{} not identified: {:?}",
            want.name(),
            id.structure
        )));
    };
    prop_assert!(
        *name == want.name() || alternatives.contains(&want.name()),
        "{} identified as {name} (alternatives {alternatives:?})",
        want.name()
    );
    prop_assert!(
        is_isomorphism(&g, &topology.graph(), &id.node_of_rank),
        "mapping is not an isomorphism"
    );
    Ok(())
}

fn cartesian() -> impl Strategy<Value = Topology> {
    prop_oneof![
        (2usize..=32, 2usize..=32).prop_map(|(a, b)| vec![a.max(b), a.min(b)]),
        (2usize..=10, 2usize..=10, 2usize..=10).prop_map(|(a, b, c)| {
            let mut v = vec![a, b, c];
            v.sort_unstable_by(|x, y| y.cmp(x));
            v
        }),
    ]
    .prop_filter("at most 1024 ranks", |d| d.iter().product::<usize>() <= 1024)
    .prop_flat_map(|dims| {
        let d = dims.len();
        (Just(dims), prop::collection::vec(any::<bool>(), d))
    })
    .prop_map(|(dims, p)| {
        // As the catalogue spells them: size-2 dimensions never periodic, equal dimensions
        // with non-increasing periodicity.
        let mut axes: Vec<(usize, bool)> =
            dims.iter().zip(&p).map(|(&d, &p)| (d, p && d > 2)).collect();
        axes.sort_unstable_by(|a, b| b.cmp(a));
        let (dims, periods) = axes.into_iter().unzip();
        Topology::new(Kind::Cartesian, dims, periods)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn grids_and_tori_are_identified_under_renumbering(t in cartesian(), seed in any::<u64>()) {
        check(&t, seed)?;
    }
}

#[test]
fn stencils_trees_and_butterflies_are_identified_under_renumbering() {
    let cases = [
        Topology::new(Kind::Moore, vec![6, 5], vec![true, false]),
        Topology::new(Kind::Moore, vec![4, 4, 3], vec![true, true, true]),
        Topology::new(Kind::Bt6, vec![11, 11], vec![true, true]),
        Topology::new(Kind::Butterfly, vec![8, 8], vec![false, false]),
        Topology::new(Kind::Tree, vec![40, 3], vec![]),
        Topology::new(Kind::Cartesian, vec![16, 8], vec![false, false]),
        Topology::new(Kind::Cartesian, vec![8, 2, 2, 2], vec![true, false, false, false]),
    ];
    for (i, t) in cases.iter().enumerate() {
        check(t, 0x9E37 + i as u64).unwrap();
    }
}

#[test]
fn an_irregular_graph_is_a_general_graph() {
    // A ring of 30 with three chords: no catalogue topology.
    let mut edges: Vec<(u32, u32)> = (0..30).map(|i| (i, (i + 1) % 30)).collect();
    edges.extend([(0, 7), (3, 19), (11, 25)]);
    let id = identify(&Graph::from_edges(30, edges), None);
    assert_eq!(id.structure, Structure::General);
    // The decision tree's three stages, then grids with strides: lone chords are none.
    assert_eq!(id.stages.len(), 4);
    assert_eq!(id.stages[3].name, "strides");
    assert!(id.stages[3].candidates.is_empty());
}

#[test]
fn a_torus_with_shared_strides_is_a_grid_with_strides() {
    // A 4 × 2 × 2 torus whose odd planes also talk two planes away (NPB MG on 16 ranks).
    let base = Topology::new(Kind::Cartesian, vec![4, 2, 2], vec![true, false, false]);
    let mut edges: Vec<(u32, u32)> = (0..16)
        .flat_map(|v| base.neighbors(v).into_iter().map(move |u| (v as u32, u as u32)))
        .collect();
    edges.extend((4..8).map(|v| (v, v + 8)));
    let id = identify(&Graph::from_edges(16, edges), None);
    let Structure::Topology { topology, .. } = &id.structure else { panic!("{:?}", id.structure) };
    assert_eq!(topology.strides, vec![vec![2, 0, 0]]);
    assert_eq!(id.coords[5], vec![1, 0, 1]);
    // Rank 5 reaches 13 two planes on, and 13 reaches 5 the same way round the torus.
    assert!(topology.neighbors(5).contains(&13) && topology.neighbors(13).contains(&5));
}

#[test]
fn no_messages_no_topology() {
    let id = identify(&Graph::from_edges(8, []), None);
    assert_eq!(id.structure, Structure::NoPointToPoint);
}

/// A shape whose equal dimensions need more than one swap to put the periodic one first.
#[test]
fn a_cube_periodic_in_its_last_dimension_is_named_canonically() {
    let t = Topology::new(Kind::Cartesian, vec![6, 6, 6], vec![true, false, false]);
    check(&t, 1189078307211405554).unwrap();
}
