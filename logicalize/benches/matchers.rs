//! The topology matcher (`iso::isomorphism`: breadth-first order, labels, triangle counts)
//! against petgraph's VF2 (`is_isomorphic_matching`, nodes labelled by degree) on renumbered
//! catalogue topologies (positives) and on the same graphs after one degree-keeping double edge
//! swap (hard negatives: same size, same degrees). Run with
//! `cargo bench -p mpiskel-logicalize --bench matchers` (part of `make bench`); prints a
//! Markdown table, best of 3 runs per cell.

use std::time::Instant;

use mpiskel_logicalize::catalogue::{Kind, Topology};
use mpiskel_logicalize::iso::{isomorphism, vf2_isomorphic, IsoResult};

fn best<T>(f: impl Fn() -> T) -> (f64, T) {
    let mut out = None;
    let mut t = f64::INFINITY;
    for _ in 0..3 {
        let t0 = Instant::now();
        let r = f();
        t = t.min(t0.elapsed().as_secs_f64());
        out = Some(r);
    }
    (t, out.unwrap())
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let torus = |d: Vec<usize>| Topology::new(Kind::Cartesian, d.clone(), vec![true; d.len()]);
    let grid = |d: Vec<usize>| Topology::new(Kind::Cartesian, d.clone(), vec![false; d.len()]);
    // (topology, whether VF2 runs on the renumbered graph, on its hard negative): VF2 is left
    // out where one run took over a minute (the 16×16×16 torus renumbered) or was not tried.
    let cases = [
        (torus(vec![8, 8]), true, true),
        (grid(vec![8, 8]), true, true),
        (torus(vec![4, 4, 4]), true, true),
        (Topology::new(Kind::Tree, vec![63, 2], vec![false, false]), true, true),
        (torus(vec![16, 16]), true, true),
        (torus(vec![8, 8, 8]), true, false),
        (grid(vec![32, 32]), true, false),
        (torus(vec![32, 32]), true, false),
        (torus(vec![16, 16, 16]), false, false),
        (torus(vec![64, 64]), false, false),
    ];
    println!("| topology | nodes | matcher: renumbered | VF2: renumbered | matcher: one edge swapped | VF2: one edge swapped |");
    println!("|---|---|---|---|---|---|");
    for (t, positive_vf2, negative_vf2) in cases {
        let g = t.graph();
        let (h, _) = g.shuffled(0x9E37_79B9);
        let (own_pos, r) = best(|| isomorphism(&h, &g, 50_000_000));
        assert!(matches!(r, IsoResult::Found(_)), "{}", t.name());
        let vf2_pos = if positive_vf2 {
            let (x, ok) = best(|| vf2_isomorphic(&h, &g));
            assert!(ok, "{}", t.name());
            format!("{x:.6} s")
        } else {
            "not run".into()
        };
        let s = g.edge_swapped().unwrap_or_else(|| g.clone());
        let (own_neg, r) = best(|| isomorphism(&s, &g, 50_000_000));
        let own_neg = format!(
            "{own_neg:.6} s ({})",
            match r {
                IsoResult::Found(_) => "found",
                IsoResult::No => "no",
                IsoResult::Undecided => "undecided",
            }
        );
        let vf2_neg = if negative_vf2 {
            let (x, iso) = best(|| vf2_isomorphic(&s, &g));
            format!("{x:.6} s ({})", if iso { "found" } else { "no" })
        } else {
            "not run".into()
        };
        println!(
            "| {} | {} | {own_pos:.6} s | {vf2_pos} | {own_neg} | {vf2_neg} |",
            t.name(),
            t.n()
        );
    }
}
