//! Folding: an edge rank's sequence aligned onto a class with more calls (missing neighbours
//! as `MPI_PROC_NULL`, skipped calls and completions), and compute gaps aggregated per position.

use std::collections::BTreeSet;

use mpiskel_trace::{OpClass, Work};

use super::*;

/// Directions in which rank `r` has no neighbour (edges of non-periodic Cartesian topologies).
pub(super) fn missing_directions(
    ident: &Identification,
    topo: Option<&Topology>,
    r: usize,
) -> BTreeSet<Vec<i64>> {
    let Some(t) = topo.filter(|t| matches!(t.kind, Kind::Cartesian | Kind::Moore | Kind::Bt6))
    else {
        return BTreeSet::new();
    };
    let node = ident.node_of_rank[r] as usize;
    // As a skeleton moves (`Topology::step`): along a dimension of two the other node is always
    // there, so no rank misses a neighbour along it.
    t.offsets().into_iter().filter(|o| t.step(node, o).is_none()).collect()
}

/// Aligns rank sequence `b` (with `missing` directions) to class program `a`: for each position
/// of `a`, the position of `b` it corresponds to, or `None` where `b` skips it.
pub(super) fn align(
    table: &[OpKey],
    (a_ids, a_links): (&[u32], &Links),
    b_ids: &[u32],
    missing: &BTreeSet<Vec<i64>>,
) -> Option<Vec<Option<usize>>> {
    let is_missing = |p: &Option<LogicalPeer>| matches!(p, Some(LogicalPeer::Dir(d)) if missing.contains(&d.offset[..]));
    let mut out = vec![None; a_ids.len()];
    let mut skipped = vec![false; a_ids.len()];
    let (mut i, mut j) = (0, 0);
    while i < a_ids.len() {
        let x = &table[a_ids[i] as usize];
        if j < b_ids.len() {
            let y = &table[b_ids[j] as usize];
            let same = a_ids[i] == b_ids[j] || {
                // Sizes may differ (uneven decompositions).
                let mut x2 = x.clone();
                x2.bytes = y.bytes;
                x2.recv_bytes = y.recv_bytes;
                // A NULL peer where the class has a missing direction.
                if is_missing(&x.peer) && y.peer == Some(LogicalPeer::Null) {
                    x2.peer = Some(LogicalPeer::Null);
                }
                if is_missing(&x.source) && y.source == Some(LogicalPeer::Null) {
                    x2.source = Some(LogicalPeer::Null);
                }
                // A completion of fewer requests, the others having been skipped.
                if x2.op.class() == OpClass::Completion {
                    let gone =
                        a_links.get(i).iter().filter(|&&p| skipped[p as usize]).count() as u32;
                    if x2.given.checked_sub(gone) == Some(y.given)
                        && x2.done.checked_sub(gone) == Some(y.done)
                    {
                        x2.given = y.given;
                        x2.done = y.done;
                    }
                }
                x2 == *y
            };
            if same {
                out[i] = Some(j);
                i += 1;
                j += 1;
                continue;
            }
        }
        let skip = match x.op.class() {
            OpClass::Send | OpClass::Recv | OpClass::Probe => is_missing(&x.peer),
            OpClass::SendRecv => is_missing(&x.peer) && is_missing(&x.source),
            OpClass::Completion => {
                let l = a_links.get(i);
                !l.is_empty() && l.iter().all(|&p| skipped[p as usize])
            }
            _ => false,
        };
        if !skip {
            return None;
        }
        skipped[i] = true;
        i += 1;
    }
    (j == b_ids.len()).then_some(out)
}

#[derive(Default)]
pub(super) struct GapAcc {
    pub(super) n: u64,
    pub(super) sum: f64,
    pub(super) instructions: (u64, f64),
    pub(super) flops: (u64, f64),
    pub(super) samples: super::GapSamples,
    pub(super) polls: u64,
    pub(super) span: f64,
    pub(super) off: f64,
}

impl GapAcc {
    pub(super) fn add(&mut self, rank: u32, g: Gap) {
        self.samples.push((rank, g.s as f32));
        self.n += 1;
        self.sum += g.s;
        self.polls += u64::from(g.polls);
        self.span += f64::from(g.span);
        self.off += f64::from(g.off);
        match g.work {
            Some(Work::Instructions(i)) => {
                self.instructions.0 += 1;
                self.instructions.1 += i as f64;
            }
            Some(Work::Flops(f)) => {
                self.flops.0 += 1;
                self.flops.1 += f;
            }
            None => {}
        }
    }

    pub(super) fn stats(&self) -> GapStats {
        let mean = |(n, sum): (u64, f64)| (n > 0).then(|| sum / n as f64);
        GapStats {
            n: u32::try_from(self.n).unwrap_or(u32::MAX),
            polls_mean: mean((self.n, self.polls as f64)).unwrap_or(0.0) as f32,
            mean_s: mean((self.n, self.sum)).unwrap_or(0.0),
            span_mean_s: mean((self.n, self.span)).unwrap_or(0.0) as f32,
            off_mean_s: mean((self.n, self.off)).unwrap_or(0.0) as f32,
            instructions_mean: mean(self.instructions).into(),
            flops_mean: mean(self.flops).into(),
        }
    }
}

/// A position of a class's program with what its ranks gave there: the call, the positions it
/// completes, the gaps, the tag class, the sizes of the ranks that differ
/// from the call's and the ranks that skip it.
pub(super) fn gathered_op(
    key: Arc<OpKey>,
    completes: ThinVec<usize>,
    acc: GapAcc,
    (tag_class, traced_tag): (i32, i32),
    mut rank_bytes: Vec<(u32, u64)>,
    absent: Vec<u32>,
) -> LogicalOp {
    rank_bytes.sort_unstable();
    LogicalOp {
        key,
        completes,
        tag_class,
        traced_tag,
        gap: acc.stats(),
        gap_samples: acc.samples,
        rank_bytes: ThinVec::from(rank_bytes),
        absent: ThinVec::from(absent),
    }
}
