//! The time between calls that ranks spent off their processors beyond what sharing the node
//! explains: sleeping, waiting for input or output, or while other threads of theirs computed.
//!
//! A trace with processor time ([`Event::gap_cpu_ns`](crate::model::Event)) records, per gap
//! between calls, its wall time `W` and the processor time `C` the calling thread had in it. With
//! `R` ranks on a node of `P` processors of which other processes and the hypervisor took a
//! share `o`, a rank that can run gets at least `s = min(1, P·(1 − o) / R)` of a processor, so a
//! gap of computation alone has `C ≥ s·W`. What a gap lacks of that, `max(0, s·W − C)`, the
//! rank was not runnable: it slept, waited for a file, or its other threads took the processor
//! (PT-Scotch's `dgord`, whose threads work beside each rank's: 3 s of processor time per rank
//! in gaps of 12 s, on 4 ranks over 2 processors). A skeleton replays each block's processor
//! time in one thread, so its prediction leaves that time out; `inspect` shows it and `build`
//! notes it.
//!
//! # Complexity
//! O(events).

use crate::TraceSet;

/// The time between calls the ranks were off their processors beyond what sharing the node
/// explains (see the module's documentation).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OffProcessor {
    /// Per rank, seconds.
    pub per_rank_s: Vec<f64>,
    /// The least share of a processor a rank that could run had (`s`).
    pub share: f64,
    /// The node's processors.
    pub processors: u32,
}

impl OffProcessor {
    /// The mean over the ranks, seconds.
    pub fn mean_s(&self) -> f64 {
        self.per_rank_s.iter().sum::<f64>() / self.per_rank_s.len().max(1) as f64
    }

    /// In words, for an application of `app_s` seconds: "3.2 s per rank (22 % of the
    /// application's time) more than sharing the node's 2 processors among 4 ranks explains
    /// (each had at least 50 % of one)".
    pub fn summary(&self, app_s: f64) -> String {
        let share = if app_s > 0.0 { 100.0 * self.mean_s() / app_s } else { 0.0 };
        format!(
            "{:.3} s per rank ({share:.0} % of the application's time) more than sharing the \
             node's {} processors among {} ranks explains (each had at least {:.0} % of one)",
            self.mean_s(),
            self.processors,
            self.per_rank_s.len(),
            100.0 * self.share
        )
    }
}

/// The off-processor time of `set`'s ranks; `None` where the trace has no processor time, no
/// record of its node's processors (`meta.json`'s `node_load`), or ranks on several hosts.
pub fn off_processor(set: &TraceSet) -> Option<OffProcessor> {
    let meta = set.meta.as_ref()?;
    let load = meta.node_load?;
    if set.ranks.is_empty() || !set.ranks.iter().all(|r| r.info.has_cpu_time) {
        return None;
    }
    if meta.hosts.iter().any(|h| *h != meta.hosts[0]) {
        return None;
    }
    let free = f64::from(load.processors) * (1.0 - load.others - load.steal).max(0.0);
    let share = (free / set.ranks.len() as f64).min(1.0);
    let per_rank_s = set
        .ranks
        .iter()
        .map(|r| {
            let ns: f64 = r
                .events
                .iter()
                .filter_map(|e| {
                    let c = e.gap_cpu_ns? as f64;
                    Some((e.gap_ns as f64 * share - c).max(0.0))
                })
                .sum();
            ns * 1e-9
        })
        .collect();
    Some(OffProcessor { per_rank_s, share, processors: load.processors })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Event, Op, Payload, Rank, RankInfo, RankTrace};
    use crate::TraceFormat;

    /// A rank whose gaps are (wall, processor) nanoseconds.
    fn rank(r: u32, gaps: &[(u64, u64)]) -> RankTrace {
        let events = gaps
            .iter()
            .map(|&(wall, cpu)| Event {
                op: Op::Barrier,
                enter_ns: 0,
                exit_ns: 0,
                gap_ns: wall,
                gap_work: None,
                gap_cpu_ns: Some(cpu),
                gap_polls: 0,
                payload: Payload::None,
            })
            .collect();
        RankTrace {
            rank: Rank(r),
            info: RankInfo { n_ranks: 4, has_cpu_time: true, ..RankInfo::default() },
            events,
            trailing_gap_ns: 0,
            comms: Default::default(),
            record_counts: Default::default(),
            unrecorded: Default::default(),
        }
    }

    fn set(ranks: Vec<RankTrace>, others: f64) -> TraceSet {
        let meta = serde_json::json!({
            "meta_version": 1, "command": ["app"], "ranks": ranks.len(),
            "hosts": vec!["vm"; ranks.len()], "mpi": "openmpi", "mpi_version": "4.1",
            "start_unix_s": 0.0, "wall_s": 1.0, "exit_code": 0, "instructions": false,
            "cpu_time": true, "mpiskel_version": "0",
            "node_load": {"processors": 2, "others": others, "steal": 0.0}
        });
        TraceSet {
            path: "t".into(),
            format: TraceFormat::Native,
            ranks,
            meta: Some(serde_json::from_value(meta).unwrap()),
        }
    }

    /// Four ranks on two processors: a gap of half its wall time on the processor is sharing
    /// and counts nothing; one of a tenth lacks two fifths of its wall time. Beside other
    /// processes that took half the node, each rank could count on a quarter only.
    #[test]
    fn only_what_sharing_the_node_cannot_explain_counts() {
        let shared = |r| rank(r, &[(1_000_000_000, 500_000_000)]);
        let off = off_processor(&set((0..4).map(shared).collect(), 0.0)).unwrap();
        assert_eq!(off.per_rank_s, vec![0.0; 4]);
        assert_eq!(off.share, 0.5);
        let mut ranks: Vec<_> = (0..4).map(shared).collect();
        ranks[2] = rank(2, &[(1_000_000_000, 100_000_000), (10, 10)]);
        let off = off_processor(&set(ranks, 0.0)).unwrap();
        assert!((off.per_rank_s[2] - 0.4).abs() < 1e-9, "{off:?}");
        assert!((off.mean_s() - 0.1).abs() < 1e-9);
        let busy = off_processor(&set((0..4).map(shared).collect(), 0.5)).unwrap();
        assert_eq!((busy.share, busy.per_rank_s[0]), (0.25, 0.0));
        // Without processor time there is nothing to tell.
        let mut wall: Vec<_> = (0..4).map(shared).collect();
        wall[0].info.has_cpu_time = false;
        assert!(off_processor(&set(wall, 0.0)).is_none());
    }
}
