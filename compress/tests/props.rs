//! Properties of loop discovery: expansion gives the input back; the greedy pass covers what the
//! exact mode covers, minus Xu & Subhlok's bound (2008, §3: at most two iterations fewer per loop).

use mpiskel_compress::{exact, find_steps, greedy, LoopNest, Node, Sym};
use proptest::prelude::*;

/// A random loop-nest program over `alphabet` symbols, expanded.
fn structured(alphabet: u32) -> impl Strategy<Value = Vec<Sym>> {
    let leaf = prop::collection::vec(0..alphabet, 1..4);
    leaf.prop_recursive(3, 200, 4, move |inner| {
        prop::collection::vec((inner, 1u64..5), 1..4).prop_map(|parts| {
            let mut out = Vec::new();
            for (body, count) in parts {
                for _ in 0..count {
                    out.extend_from_slice(&body);
                }
            }
            out
        })
    })
}

/// Span covered by `nest` minus Xu & Subhlok's allowance: two iterations of every top-level loop.
fn covered_minus_bound(nest: &LoopNest) -> i64 {
    let r = nest.report();
    let allowance: u64 = nest
        .items
        .iter()
        .map(|n| match n {
            Node::Loop { count, .. } => 2 * n.expanded_len() / count,
            Node::Sym { .. } | Node::Guard { .. } | Node::Steps { .. } => 0,
        })
        .sum();
    r.covered as i64 - allowance as i64
}

/// Time steps: one of a few step bodies (all beginning with the anchor 0) at random, between a
/// set-up and a finish of other symbols.
fn stepped() -> impl Strategy<Value = Vec<Sym>> {
    let bodies: Vec<Vec<Sym>> =
        vec![vec![0, 1, 2], vec![0, 1, 3, 3, 2], vec![0, 4, 1, 2], vec![0, 1, 1, 1, 2]];
    (prop::collection::vec(0usize..4, 4..60), prop::collection::vec(5u32..8, 0..5)).prop_map(
        move |(steps, setup)| {
            let mut v = setup.clone();
            for k in steps {
                v.extend(&bodies[k]);
            }
            v.extend(setup.iter().rev());
            v
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn steps_expand_to_their_span_and_keep_every_weight(s in stepped()) {
        let f = find_steps(&s, &s, &[0], 8).expect("at least four steps");
        let mut nest = LoopNest { items: vec![f.node(&s)] };
        prop_assert_eq!(nest.expand(), s[f.start..f.end].to_vec());
        let weights: Vec<f64> = (0..f.end - f.start).map(|i| (i % 7) as f64).collect();
        nest.attach_weights(&weights);
        let Node::Steps { kinds, schedule } = &nest.items[0] else { panic!("not steps") };
        prop_assert_eq!(schedule.len(), f.steps());
        let mut total = 0.0;
        fn walk(nodes: &[Node], total: &mut f64) {
            for node in nodes {
                match node {
                    Node::Sym { stats: Some(st), .. } => *total += st.mean * st.n as f64,
                    Node::Loop { body, .. } | Node::Guard { body, .. } => walk(body, total),
                    _ => {}
                }
            }
        }
        kinds.iter().for_each(|k| walk(k, &mut total));
        prop_assert!((total - weights.iter().sum::<f64>()).abs() < 1e-6);
    }

    #[test]
    fn greedy_expands_to_its_input_random(s in prop::collection::vec(0u32..4, 0..300)) {
        prop_assert_eq!(greedy(&s).expand(), s);
    }

    #[test]
    fn greedy_expands_to_its_input_structured(s in structured(6)) {
        let nest = greedy(&s);
        prop_assert_eq!(nest.expand(), s);
    }

    #[test]
    fn exact_expands_to_its_input(s in prop::collection::vec(0u32..3, 0..40)) {
        prop_assert_eq!(exact(&s).expand(), s);
    }

    #[test]
    fn greedy_covers_what_exact_covers_within_the_seed_bound(s in prop::collection::vec(0u32..3, 0..40)) {
        let g = greedy(&s).report();
        let e = exact(&s);
        prop_assert!(g.covered as i64 >= covered_minus_bound(&e),
            "greedy covers {} of {}, exact {} ({})", g.covered, s.len(), e.report().covered, e.notation());
    }

    #[test]
    fn greedy_within_bound_on_structured_input(s in structured(4).prop_filter("small", |s| s.len() <= 60)) {
        let g = greedy(&s).report();
        let e = exact(&s);
        prop_assert!(g.covered as i64 >= covered_minus_bound(&e),
            "greedy covers {} of {}, exact {} ({})", g.covered, s.len(), e.report().covered, e.notation());
    }

    #[test]
    fn weights_fold_per_program_position(s in structured(5), seed in any::<u64>()) {
        let weights: Vec<f64> = (0..s.len()).map(|i| ((i as u64 ^ seed) % 97) as f64).collect();
        let mut nest = greedy(&s);
        nest.attach_weights(&weights);
        let mut n = 0;
        let mut sum = 0.0;
        fn walk(nodes: &[Node], n: &mut u64, sum: &mut f64) {
            for node in nodes {
                match node {
                    Node::Sym { stats: Some(st), .. } => {
                        assert!(st.min <= st.mean + 1e-9 && st.mean <= st.max + 1e-9);
                        *n += st.n;
                        *sum += st.mean * st.n as f64;
                    }
                    Node::Sym { stats: None, .. } => panic!("stats missing"),
                    Node::Loop { body, .. } | Node::Guard { body, .. } => walk(body, n, sum),
                    Node::Steps { kinds, .. } => kinds.iter().for_each(|k| walk(k, n, sum)),
                }
            }
        }
        walk(&nest.items, &mut n, &mut sum);
        prop_assert_eq!(n as usize, s.len());
        let want: f64 = weights.iter().sum();
        prop_assert!((sum - want).abs() < 1e-6 * want.max(1.0));
    }
}

/// The shapes of Xu & Subhlok 2008, Table 3: the greedy pass finds them exactly.
#[test]
fn lu_like_nest() {
    // ((4)^10 + (4)^10 + 12)^20 with distinct symbols per part.
    let mut s = Vec::new();
    for _ in 0..20 {
        for _ in 0..10 {
            s.extend([1, 2, 3, 4]);
        }
        for _ in 0..10 {
            s.extend([5, 6, 7, 8]);
        }
        s.extend(10..22);
    }
    let nest = greedy(&s);
    assert_eq!(nest.notation(), "((4)^10 + (4)^10 + 12)^20");
    assert_eq!(nest.report().coverage, 1.0);
    assert_eq!(exact(&s).notation(), "((4)^10 + (4)^10 + 12)^20");
}

/// The last iteration computes a residual (one extra call): it joins the loop, guarded.
#[test]
fn a_differing_last_iteration_joins_its_loop() {
    let mut s = vec![100];
    for it in 0..50 {
        s.extend([1, 2, 3, 4]);
        if it == 49 {
            s.push(99);
        }
        s.extend([5, 6]);
    }
    let nest = greedy(&s);
    assert_eq!(nest.expand(), s);
    assert_eq!(nest.notation(), "1 + (4 + [last: 1] + 2)^50");
    // And a differing first iteration.
    let mut s = vec![];
    for it in 0..30 {
        s.extend([1, 2]);
        if it == 0 {
            s.push(77);
        }
        s.extend([3, 4, 5]);
    }
    let nest = greedy(&s);
    assert_eq!(nest.expand(), s);
    assert_eq!(nest.notation(), "(2 + [first: 1] + 3)^30");
}

/// A whole loop between two calls that open and close an iteration (a run of 14,000 time steps
/// before a run of 13-call steps that rebuild; LAMMPS's `cmap` example) is no extra part of that
/// iteration: one element, but many more calls than the iteration makes. It stays beside the
/// loop instead of running, guarded, in its first iteration.
#[test]
fn a_whole_loop_before_a_loop_is_not_its_first_iterations_extra() {
    let mut s = vec![1];
    s.extend(std::iter::repeat_n(7, 50));
    s.push(2);
    for _ in 0..20 {
        s.extend([1, 2]);
    }
    let nest = greedy(&s);
    assert_eq!(nest.expand(), s);
    assert_eq!(nest.notation(), "1 + (1)^50 + (2)^20 + 1");
    // One extra call in that place is a first iteration's extra, as before.
    let mut s = vec![1, 7, 2];
    for _ in 0..20 {
        s.extend([1, 2]);
    }
    assert_eq!(greedy(&s).notation(), "(1 + [first: 1] + 1)^21");
}

#[test]
fn setup_and_teardown_stay_beside_the_main_loop() {
    let mut s = vec![100, 101, 102];
    for _ in 0..50 {
        s.extend([1, 2, 3]);
    }
    s.extend([200, 201]);
    assert_eq!(greedy(&s).notation(), "3 + (3)^50 + 2");
}

/// A call that agrees with the first call of the loop after it (NPB FT: an untimed transform,
/// then iterations of transform and checksum) is not a loop of two: the longer loop keeps all
/// its iterations. A pair inside every iteration of a longer loop stays an inner loop.
#[test]
fn a_pair_across_a_longer_loops_edge_is_left_to_that_loop() {
    let (a, r) = (1, 2);
    let mut s = vec![100, a];
    for _ in 0..6 {
        s.extend([a, r]);
    }
    s.push(200);
    let nest = greedy(&s);
    assert_eq!(nest.expand(), s);
    assert_eq!(nest.notation(), "2 + (2)^6 + 1");
    assert_eq!(nest.main_loop().and_then(|n| n.iterations()), Some(6));

    let mut s = vec![100];
    for _ in 0..5 {
        s.extend([a, a, r]);
    }
    let nest = greedy(&s);
    assert_eq!(nest.expand(), s);
    assert_eq!(nest.notation(), "1 + ((1)^2 + 1)^5");
}

/// Two agreeing calls are no main loop; two iterations of a longer body are.
#[test]
fn a_main_loop_repeats_more_than_a_coincidence() {
    let nest = greedy(&[100, 101, 5, 5, 102]);
    assert_eq!(nest.notation(), "2 + (1)^2 + 1");
    assert!(nest.main_loop().is_none());
    let nest = greedy(&[100, 1, 2, 3, 4, 1, 2, 3, 4, 102]);
    assert_eq!(nest.main_loop().and_then(|n| n.iterations()), Some(2));
}
