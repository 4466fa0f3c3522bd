//! Topology identification on synthetic tori with shuffled rank numbering (128, 1,024 and
//! 16,384 ranks), stage by stage. Run with `cargo bench -p mpiskel-logicalize` (or `make bench`).

use std::time::Instant;

use mpiskel_logicalize::catalogue::{Kind, Topology};
use mpiskel_logicalize::iso::is_isomorphism;
use mpiskel_logicalize::{identify, Structure};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("| topology (shuffled) | ranks | identified as | simple tests s (left) | spectrum s (left) | isomorphism s (left) | total s (median of 3) |");
    println!("|---|---|---|---|---|---|---|");
    let cases = [
        Topology::new(Kind::Cartesian, vec![16, 8], vec![true, true]),
        Topology::new(Kind::Cartesian, vec![32, 32], vec![true, true]),
        Topology::new(Kind::Cartesian, vec![16, 8, 8], vec![true, true, true]),
        Topology::new(Kind::Cartesian, vec![128, 128], vec![true, true]),
        Topology::new(Kind::Cartesian, vec![32, 32, 16], vec![true, true, true]),
        Topology::new(Kind::Cartesian, vec![128, 128], vec![false, false]),
    ];
    for t in cases {
        let (g, _) = t.graph().shuffled(0x9E37_79B9);
        let mut totals = Vec::new();
        let mut last = None;
        for _ in 0..3 {
            let t0 = Instant::now();
            let id = identify(&g, None);
            totals.push(t0.elapsed().as_secs_f64());
            last = Some(id);
        }
        let id = last.unwrap();
        let name = match &id.structure {
            Structure::Topology { name, topology, .. } => {
                assert!(is_isomorphism(&g, &topology.graph(), &id.node_of_rank));
                name.clone()
            }
            other => format!("{other:?}"),
        };
        totals.sort_by(f64::total_cmp);
        let stage = |i: usize| {
            id.stages
                .get(i)
                .map_or("–".into(), |s| format!("{:.3} ({})", s.seconds, s.candidates.len()))
        };
        println!(
            "| {} | {} | {name} | {} | {} | {} | {:.3} |",
            t.name(),
            t.n(),
            stage(0),
            stage(1),
            stage(2),
            totals[1]
        );
    }
}
