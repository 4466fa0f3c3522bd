//! The logical trace on small programs written here as SimGrid time-independent traces (no MPI
//! needed): peers become directions, edge ranks of an open grid fold into the interior class,
//! a peer outside the topology is kept as an exception, and compute gaps are aggregated per
//! position over a class's ranks.

use std::path::Path;

use mpiskel_logicalize::{logicalize, logicalize_owned, LogicalPeer, LogicalTrace};
use mpiskel_trace::{ReadOptions, TraceSet};

/// The logical trace of `n` ranks whose rank `r` runs `body(r)` (action lines without the rank).
fn logical(n: u32, body: impl Fn(u32) -> Vec<String>) -> LogicalTrace {
    let dir = tempfile::tempdir().unwrap();
    let path = mpiskel_trace::ti::write_actions(dir.path(), n, body).unwrap();
    logicalize(&TraceSet::open(Path::new(&path), &ReadOptions::default()).unwrap())
}

/// A halo exchange on an open `px × py` grid, `iterations` times: edge ranks skip the missing
/// neighbours. Rank r's compute takes `flops(r)`.
fn open_halo(
    px: u32,
    py: u32,
    iterations: u32,
    flops: impl Fn(u32) -> u64,
) -> impl Fn(u32) -> Vec<String> {
    move |r| {
        let (x, y) = (r % px, r / px);
        let mut nbrs = Vec::new();
        if x > 0 {
            nbrs.push(r - 1);
        }
        if x + 1 < px {
            nbrs.push(r + 1);
        }
        if y > 0 {
            nbrs.push(r - px);
        }
        if y + 1 < py {
            nbrs.push(r + px);
        }
        let mut v = Vec::new();
        for _ in 0..iterations {
            v.push(format!("compute {}", flops(r)));
            for &p in &nbrs {
                v.push(format!("irecv {p} 0 1024"));
            }
            for &p in &nbrs {
                v.push(format!("isend {p} 0 1024"));
            }
            v.push("waitall".into());
        }
        v
    }
}

/// Rank `r`'s part of one exchange around a periodic ring of `n`: receive `count` elements
/// from the left, send as many to the right, wait for both.
fn ring_exchange(r: u32, n: u32, count: u64) -> [String; 3] {
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    [format!("irecv {prev} 0 {count}"), format!("isend {next} 0 {count}"), "waitall".into()]
}

#[test]
fn an_open_grid_folds_its_edges_into_the_interior_class() {
    let lt = logical(16, open_halo(4, 4, 3, |_| 1_000_000));
    assert_eq!(lt.topology_name(), "4×4 grid", "{:?}", lt.identification.structure);
    let mut all: Vec<u32> =
        lt.classes.iter().flat_map(|c| c.ranks.iter().chain(&c.folded).copied()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..16).collect::<Vec<_>>(), "every rank in exactly one class");
    assert!(lt.classes.iter().any(|c| !c.folded.is_empty()), "edge ranks folded");
    assert!(lt.classes.len() < 9, "{} classes: the edges did not fold", lt.classes.len());
    assert_eq!(lt.exceptions.calls, 0);
    // Every point-to-point peer is a direction of the grid.
    for op in lt.classes.iter().flat_map(|c| &c.ops) {
        if let Some(p) = &op.key.peer {
            assert!(matches!(p, LogicalPeer::Dir(_) | LogicalPeer::Null), "{p:?}");
        }
    }
}

#[test]
fn a_peer_outside_the_topology_is_an_exception_not_a_loss() {
    // A periodic ring of 30 exchanges, plus one message from rank 0 to rank 4: a pair that
    // carries under a tenth of the median pair's messages is not an edge of the topology.
    let n = 8;
    let lt = logical(n, move |r| {
        let mut v = Vec::new();
        for _ in 0..30 {
            v.extend(ring_exchange(r, n, 4096));
        }
        match r {
            0 => v.push("send 4 1 8".into()),
            4 => v.push("recv 0 1 8".into()),
            _ => {}
        }
        v
    });
    assert_eq!(lt.topology_name(), "ring of 8");
    assert_eq!(lt.dropped_pairs, 1);
    assert_eq!(lt.exceptions.calls, 2, "{:?}", lt.exceptions);
    assert!(lt.exceptions.pairs.contains(&(0, 4)), "{:?}", lt.exceptions.pairs);
}

#[test]
fn compute_gaps_are_aggregated_over_the_ranks_of_a_class() {
    // A periodic ring where rank r computes (r + 1) Mflop per iteration.
    let n = 4;
    let lt = logical(n, move |r| {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(format!("compute {}", (r as u64 + 1) * 1_000_000));
            v.extend(ring_exchange(r, n, 64));
        }
        v
    });
    assert_eq!(lt.classes.len(), 1);
    let c = &lt.classes[0];
    let first = c
        .ops
        .iter()
        .find(|o| o.gap.flops_mean.get().is_some_and(|f| f > 0.0))
        .expect("a compute gap");
    assert_eq!(first.gap.n, n, "one sample per rank");
    let mean = first.gap.flops_mean.get().unwrap();
    assert!((mean - 2.5e6).abs() < 1.0, "mean of 1, 2, 3, 4 Mflop: {mean}");
    let (min_s, max_s) = first.gap_range();
    assert!(min_s < first.gap.mean_s && first.gap.mean_s < max_s);
    assert_eq!(first.gap_samples.len(), n as usize, "every rank's gap is kept");
}

/// The share of the ranks' compute variation they have at once: work that changes for every
/// rank at the same step is shared (close to 1); ranks that vary each on its own share nothing
/// (close to 0); too few steps between collectives over every rank give no estimate.
#[test]
fn ranks_that_vary_together_share_their_variation() {
    // A step of `work(r, k)` flops, then an allreduce; a cheap hash stands for noise.
    let noise = |r: u32, k: u32| {
        let mut x = u64::from(r) << 32 | u64::from(k);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (x ^ (x >> 31)) % 1000
    };
    let steps = |n: u32, work: &dyn Fn(u32, u32) -> u64| {
        logical(4, |r| {
            (0..n)
                .flat_map(|k| [format!("compute {}", work(r, k)), "allreduce 8 8".to_owned()])
                .collect()
        })
    };
    // Every tenth step does ten times the work on every rank, plus a little noise of its own.
    let together = steps(200, &|r, k| if k % 10 == 0 { 100_000 } else { 10_000 } + noise(r, k));
    assert!(together.shared_variation.unwrap() > 0.95, "{:?}", together.shared_variation);
    let apart = steps(200, &|r, k| 10_000 + 20 * noise(r, k));
    assert!(apart.shared_variation.unwrap() < 0.2, "{:?}", apart.shared_variation);
    assert_eq!(steps(8, &|_, _| 1000).shared_variation, None);
}

/// `logicalize_owned` (which frees each rank's calls as it goes) gives the logical trace that
/// `logicalize` gives: on an open grid whose edge ranks fold, on a synthetic 3-D halo with
/// drifting sizes, and on a tree whose classes differ.
#[test]
fn the_owned_and_borrowed_paths_agree() {
    let dir = tempfile::tempdir().unwrap();
    let grid = mpiskel_trace::ti::write_actions(
        dir.path(),
        12,
        open_halo(4, 3, 5, |r| 1000 + 37 * u64::from(r)),
    )
    .unwrap();
    let mut traces = vec![grid];
    for (name, pattern) in [
        ("halo", mpiskel_trace::synth::Pattern::Stencil { dims: 3 }),
        ("tree", mpiskel_trace::synth::Pattern::Tree),
    ] {
        let p = dir.path().join(name);
        let spec = mpiskel_trace::synth::Spec {
            pattern,
            irregular: true,
            ..mpiskel_trace::synth::Spec::stencil3d(12, 7)
        };
        mpiskel_trace::synth::write(&p, &spec).unwrap();
        traces.push(p);
    }
    for t in traces {
        let set = TraceSet::open(&t, &ReadOptions::default()).unwrap();
        // Each identification stage records how long it took: not part of the comparison.
        let untimed = |mut l: LogicalTrace| {
            l.identification.stages.iter_mut().for_each(|st| st.seconds = 0.0);
            l
        };
        let borrowed = untimed(logicalize(&set));
        let owned = untimed(logicalize_owned(set));
        assert!(borrowed == owned, "{}: the two paths differ", t.display());
        assert!(!owned.classes.is_empty());
    }
}
