//! How a logical call is written to and read from JSON (`mpiskel logicalize -o`).
//!
//! In memory a [`LogicalOp`] keeps what the skeleton needs in as few bytes as it can (a 5 M-call
//! trace holds 5 M of them): the range of sizes and of gaps are derived from the per-rank sizes
//! and samples. The document spells them out, as readers of it expect; the per-rank samples and
//! sizes are not written, so a program read back has a mean per position but no range.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use thin_vec::ThinVec;

use super::{GapSamples, GapStats, LogicalOp, OpKey};

/// A logical call as the JSON document holds it.
#[derive(Debug, Serialize, Deserialize)]
pub struct LogicalOpRecord {
    /// What the call is.
    #[serde(flatten)]
    key: Arc<OpKey>,
    /// For completions: positions of the calls whose requests it completes.
    #[serde(default, skip_serializing_if = "ThinVec::is_empty")]
    completes: ThinVec<usize>,
    /// Compute gap before the call, over the class.
    gap: GapRecord,
    /// Smallest and largest size (bytes sent) at this position over the class.
    bytes_range: (u64, u64),
    /// The representative's tag class.
    tag_class: i32,
    /// The representative's tag as traced.
    #[serde(default)]
    traced_tag: i32,
    /// Ranks of the class that make this call toward `MPI_PROC_NULL`.
    #[serde(default, skip_serializing_if = "ThinVec::is_empty")]
    absent: ThinVec<u32>,
}

/// [`GapStats`] with the range of the gaps.
#[derive(Debug, Serialize, Deserialize)]
struct GapRecord {
    /// Ranks × occurrences contributing.
    n: u32,
    /// Mean, seconds.
    mean_s: f64,
    /// Minimum, seconds.
    min_s: f64,
    /// Maximum, seconds.
    max_s: f64,
    /// Mean user-space instructions, where the trace counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instructions_mean: Option<f64>,
    /// Mean floating-point operations, where the trace recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flops_mean: Option<f64>,
    /// Mean number of failed polls made at the end of the gap.
    #[serde(default, skip_serializing_if = "is_zero")]
    polls_mean: f32,
    /// Mean wall seconds from the previous call's return to this call's, where the trace
    /// recorded call times.
    #[serde(default, skip_serializing_if = "is_zero")]
    span_mean_s: f32,
    /// Mean wall seconds of the gap off the processor, where the trace recorded the gap's
    /// processor time.
    #[serde(default, skip_serializing_if = "is_zero")]
    off_mean_s: f32,
}

fn is_zero(x: &f32) -> bool {
    *x == 0.0
}

impl From<LogicalOp> for LogicalOpRecord {
    fn from(op: LogicalOp) -> LogicalOpRecord {
        let (min_s, max_s) = op.gap_range();
        let g = op.gap;
        LogicalOpRecord {
            bytes_range: op.bytes_range(),
            key: op.key,
            completes: op.completes,
            gap: GapRecord {
                n: g.n,
                mean_s: g.mean_s,
                min_s,
                max_s,
                instructions_mean: g.instructions_mean.get(),
                flops_mean: g.flops_mean.get(),
                polls_mean: g.polls_mean,
                span_mean_s: g.span_mean_s,
                off_mean_s: g.off_mean_s,
            },
            tag_class: op.tag_class,
            traced_tag: op.traced_tag,
            absent: op.absent,
        }
    }
}

impl From<LogicalOpRecord> for LogicalOp {
    fn from(r: LogicalOpRecord) -> LogicalOp {
        let g = r.gap;
        LogicalOp {
            key: r.key,
            completes: r.completes,
            gap: GapStats {
                n: g.n,
                polls_mean: g.polls_mean,
                mean_s: g.mean_s,
                span_mean_s: g.span_mean_s,
                off_mean_s: g.off_mean_s,
                instructions_mean: g.instructions_mean.into(),
                flops_mean: g.flops_mean.into(),
            },
            tag_class: r.tag_class,
            traced_tag: r.traced_tag,
            gap_samples: GapSamples::new(),
            rank_bytes: ThinVec::new(),
            absent: r.absent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logical::OptionalMean;
    use mpiskel_trace::Op;

    fn op() -> LogicalOp {
        let key = OpKey { bytes: 800, ..OpKey::bare(Op::Send) };
        LogicalOp {
            key: Arc::new(key),
            completes: ThinVec::new(),
            gap: GapStats {
                n: 3,
                polls_mean: 1.5,
                mean_s: 2.0,
                span_mean_s: 2.5,
                off_mean_s: 0.25,
                instructions_mean: Some(1e6).into(),
                flops_mean: OptionalMean::NONE,
            },
            tag_class: 1,
            traced_tag: 7,
            gap_samples: [(0, 1.0), (2, 3.0), (5, 2.0)].into_iter().collect(),
            rank_bytes: ThinVec::from(vec![(2, 640), (5, 960)]),
            absent: ThinVec::new(),
        }
    }

    #[test]
    fn the_document_spells_out_the_ranges_the_op_derives() {
        let v = serde_json::to_value(op()).unwrap();
        assert_eq!(v["bytes_range"], serde_json::json!([640, 960]));
        assert_eq!(v["gap"]["min_s"], 1.0);
        assert_eq!(v["gap"]["max_s"], 3.0);
        assert_eq!(v["gap"]["instructions_mean"], 1e6);
        assert!(v["gap"].get("flops_mean").is_none(), "{v}");
        assert_eq!(v["bytes"], 800, "the key is flattened: {v}");
    }

    #[test]
    fn reading_back_keeps_the_means_and_drops_the_samples() {
        let back: LogicalOp = serde_json::from_value(serde_json::to_value(op()).unwrap()).unwrap();
        assert_eq!(back.gap, op().gap);
        assert_eq!(back.key, op().key);
        assert!(back.gap_samples.is_empty());
        assert_eq!(back.gap_range(), (0.0, 0.0));
    }

    #[test]
    fn a_logical_op_stays_small() {
        // 5 M calls of a real application must fit in a few hundred MB (104 bytes: 520 MB).
        assert!(std::mem::size_of::<LogicalOp>() <= 104, "{}", std::mem::size_of::<LogicalOp>());
    }
}
