//! Synthetic traces at any scale, written in the native format: the shapes real codes take
//! (stencils in one to three dimensions, trees, all-to-all phases), with message sizes that
//! change from step to step and noise in the compute times, at thousands of ranks, where no
//! recorded trace exists. For tests and benchmarks of the pipeline at scale; each trace is made
//! from its [`Spec`] alone (the seed fixes the noise), one rank at a time, so that writing a
//! trace of 10⁸ calls holds one rank's calls in memory, not all of them.
//!
//! Each rank runs `iterations` steps. A step computes (`compute_ns`, with the rank's noise),
//! then communicates by the pattern:
//! - **stencil** (`dims` 1–3): a periodic grid of the most cubic shape of the rank count; an
//!   `MPI_Irecv` from and an `MPI_Isend` to both neighbours along every dimension, then one
//!   `MPI_Waitall`;
//! - **tree**: a binary tree rooted at rank 0; each rank receives from its parent (`MPI_Recv`),
//!   sends to its children (`MPI_Send`), then the values go back up the same way;
//! - **alltoall**: one `MPI_Alltoall` over the world.
//!
//! Every `allreduce_every` steps (0: never) the step ends with an `MPI_Allreduce` of 8 bytes
//! (a residual), and every `alltoall_every` steps (0: never) with an `MPI_Alltoall` (a
//! transpose). With `irregular`, message sizes change every step (a smooth drift of ±25 %
//! around `bytes`, the same on both sides of each message, as when particles migrate).
//!
//! The ranks' times are made up, not simulated: a call takes 2 µs plus 1 ns per 4 bytes, which
//! is enough for the pipeline (gaps carry the compute; nothing checks that a receive ends after
//! its send).
//!
//! # Complexity
//! O(ranks × iterations × calls per step) time; one rank's events in memory per thread.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Result, TraceError};
use crate::model::{
    CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, RequestId, Wildcards,
};
use crate::native::{rank_file_name, NativeWriter};

/// The communication pattern of every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Halo exchange on a periodic grid of this many dimensions (1–3).
    Stencil {
        /// Dimensions of the grid.
        dims: u8,
    },
    /// Down and up a binary tree rooted at rank 0.
    Tree,
    /// One all-to-all over every rank.
    AllToAll,
}

/// What to generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// Number of ranks.
    pub ranks: u32,
    /// The pattern of each step.
    pub pattern: Pattern,
    /// Steps.
    pub iterations: u32,
    /// Bytes per message (per destination for all-to-alls).
    pub bytes: u64,
    /// Computation per step, nanoseconds, before noise.
    pub compute_ns: u64,
    /// Noise: each compute block is scaled by 1 + `noise` × u, u uniform in [−1, 1).
    pub noise: f64,
    /// Message sizes drift from step to step (±25 %).
    pub irregular: bool,
    /// An 8-byte `MPI_Allreduce` ends every this many steps (0: never).
    pub allreduce_every: u32,
    /// An `MPI_Alltoall` of `bytes` per destination ends every this many steps (0: never).
    pub alltoall_every: u32,
    /// Seed of the noise.
    pub seed: u64,
}

impl Spec {
    /// A periodic 3-D halo exchange with a residual every step: the shape of most structured
    /// codes.
    pub fn stencil3d(ranks: u32, iterations: u32) -> Spec {
        Spec {
            ranks,
            pattern: Pattern::Stencil { dims: 3 },
            iterations,
            bytes: 8192,
            compute_ns: 200_000,
            noise: 0.05,
            irregular: false,
            allreduce_every: 1,
            alltoall_every: 0,
            seed: 1,
        }
    }
}

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// Ranks.
    pub ranks: u32,
    /// Calls over all ranks, `MPI_Init` and `MPI_Finalize` included.
    pub events: u64,
    /// Bytes of the rank files.
    pub file_bytes: u64,
}

/// The most cubic shape of `n` ranks in `d` dimensions (largest first), e.g. 16,384 in 3-D:
/// 32 × 32 × 16.
pub fn grid_shape(n: u32, d: u8) -> Vec<u32> {
    let mut factors = Vec::new();
    let (mut m, mut p) = (n, 2);
    while m > 1 {
        while m % p == 0 {
            factors.push(p);
            m /= p;
        }
        p += 1;
        if p * p > m && m > 1 {
            factors.push(m);
            break;
        }
    }
    let mut shape = vec![1u32; usize::from(d.max(1))];
    for f in factors.into_iter().rev() {
        // The largest factor goes to the smallest side.
        if let Some(s) = shape.iter_mut().min() {
            *s *= f;
        }
    }
    shape.sort_unstable_by(|a, b| b.cmp(a));
    shape
}

/// The generator of a synthetic trace ([`crate::rng`]): the same numbers for the same seed on
/// every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        crate::rng::splitmix64(&mut self.0)
    }

    /// Uniform in [−1, 1).
    fn signed_unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// One rank's stream of events as it is made.
struct Stream {
    events: Vec<Event>,
    now: u64,
    gap: u64,
    next_request: u32,
}

impl Stream {
    fn call(&mut self, op: Op, payload: Payload, bytes: u64) {
        let enter = self.now + self.gap;
        let exit = enter + 2_000 + bytes / 4;
        self.events.push(Event {
            op,
            enter_ns: enter,
            exit_ns: exit,
            gap_ns: self.gap,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        });
        self.now = exit;
        self.gap = 0;
    }

    fn p2p(&mut self, op: Op, peer: u32, bytes: u64, tag: i32) -> Option<RequestId> {
        let request = matches!(op, Op::Isend | Op::Irecv).then(|| {
            self.next_request += 1;
            RequestId(self.next_request)
        });
        let payload = Payload::P2p {
            peer: Peer::Rank(Rank(peer)),
            tag,
            bytes,
            comm: CommId::WORLD,
            request,
            wildcards: Wildcards::default(),
        };
        self.call(op, payload, bytes);
        request
    }

    fn collective(&mut self, op: Op, send: u64, recv: u64) {
        let payload = Payload::Collective {
            comm: CommId::WORLD,
            root: None,
            send_bytes: send,
            recv_bytes: recv,
            send_counts: None,
            recv_counts: None,
            request: None,
        };
        self.call(op, payload, send.max(recv));
    }
}

/// The size of a message in step `step` (the same on both sides: it depends on the step alone).
fn size_at(spec: &Spec, step: u32) -> u64 {
    if !spec.irregular {
        return spec.bytes;
    }
    let drift = 0.25 * (f64::from(step) * 0.37).sin();
    ((spec.bytes as f64) * (1.0 + drift)).round().max(1.0) as u64
}

/// Rank `r`'s neighbours along each dimension of a periodic grid: (minus, plus) per dimension.
fn stencil_neighbours(r: u32, shape: &[u32]) -> Vec<(u32, u32)> {
    // Row-major: the last dimension varies fastest.
    let mut coords = vec![0u32; shape.len()];
    let mut rest = r;
    for k in (0..shape.len()).rev() {
        coords[k] = rest % shape[k];
        rest /= shape[k];
    }
    let rank_of = |c: &[u32]| c.iter().zip(shape).fold(0u32, |acc, (&x, &s)| acc * s + x);
    (0..shape.len())
        .filter(|&k| shape[k] > 1)
        .map(|k| {
            let s = shape[k];
            let mut minus = coords.clone();
            minus[k] = (coords[k] + s - 1) % s;
            let mut plus = coords.clone();
            plus[k] = (coords[k] + 1) % s;
            (rank_of(&minus), rank_of(&plus))
        })
        .collect()
}

/// The events of rank `r`.
fn rank_events(spec: &Spec, r: u32) -> Vec<Event> {
    let n = spec.ranks;
    let mut rng = Rng(spec.seed ^ u64::from(r).wrapping_mul(0xA24B_AED4_963E_E407));
    let mut s = Stream { events: Vec::new(), now: 0, gap: 1_000, next_request: 0 };
    s.call(Op::Init, Payload::None, 0);
    let shape = match spec.pattern {
        Pattern::Stencil { dims } => grid_shape(n, dims),
        _ => Vec::new(),
    };
    let neighbours = stencil_neighbours(r, &shape);
    for step in 0..spec.iterations {
        let noise = 1.0 + spec.noise * rng.signed_unit();
        s.gap = (spec.compute_ns as f64 * noise).max(0.0) as u64;
        let bytes = size_at(spec, step);
        match spec.pattern {
            Pattern::Stencil { .. } => {
                // Each request as its Waitall reports it: receives with where their message
                // came from, sends with the request alone.
                let mut completed = Vec::new();
                let done = |q: Option<RequestId>, from: Option<(u32, i32)>| Completed {
                    request: q,
                    source: from.map(|(p, _)| Rank(p)),
                    tag: from.map(|(_, t)| t),
                    bytes: from.map(|_| bytes),
                };
                for (k, &(minus, plus)) in neighbours.iter().enumerate() {
                    // Tags name the direction a message travels, so both sides agree.
                    let (up, down) = (2 * k as i32, 2 * k as i32 + 1);
                    completed.push(done(s.p2p(Op::Irecv, minus, bytes, up), Some((minus, up))));
                    completed.push(done(s.p2p(Op::Irecv, plus, bytes, down), Some((plus, down))));
                    completed.push(done(s.p2p(Op::Isend, plus, bytes, up), None));
                    completed.push(done(s.p2p(Op::Isend, minus, bytes, down), None));
                }
                if !completed.is_empty() {
                    let payload =
                        Payload::Completion { n_given: completed.len() as u32, completed };
                    s.call(Op::Waitall, payload, 0);
                }
            }
            Pattern::Tree => {
                let parent = (r > 0).then(|| (r - 1) / 2);
                let children: Vec<u32> =
                    [2 * r + 1, 2 * r + 2].into_iter().filter(|&c| c < n).collect();
                if let Some(p) = parent {
                    s.p2p(Op::Recv, p, bytes, 0);
                }
                for &c in &children {
                    s.p2p(Op::Send, c, bytes, 0);
                }
                for &c in &children {
                    s.p2p(Op::Recv, c, bytes, 1);
                }
                if let Some(p) = parent {
                    s.p2p(Op::Send, p, bytes, 1);
                }
            }
            Pattern::AllToAll => {
                s.collective(Op::Alltoall, bytes * u64::from(n), bytes * u64::from(n))
            }
        }
        let last = step + 1;
        if spec.allreduce_every > 0 && last % spec.allreduce_every == 0 {
            s.collective(Op::Allreduce, 8, 8);
        }
        if spec.alltoall_every > 0 && last % spec.alltoall_every == 0 {
            s.collective(Op::Alltoall, bytes * u64::from(n), bytes * u64::from(n));
        }
    }
    s.gap = 1_000;
    s.call(Op::Finalize, Payload::None, 0);
    s.events
}

/// Writes the trace of `spec` into the directory `dir` (which must not exist): one native rank
/// file per rank, written in parallel, under a temporary name renamed into place when all are
/// complete.
pub fn write(dir: &Path, spec: &Spec) -> Result<Written> {
    if spec.ranks == 0 {
        return Err(TraceError::NotATrace { path: dir.into(), reason: "no ranks".into() });
    }
    if let Pattern::Stencil { dims } = spec.pattern {
        if !(1..=3).contains(&dims) {
            return Err(TraceError::NotATrace {
                path: dir.into(),
                reason: format!("a stencil has 1 to 3 dimensions, not {dims}"),
            });
        }
    }
    let partial = partial_path(dir);
    if partial.exists() {
        fs::remove_dir_all(&partial).map_err(|e| TraceError::io(&partial, e))?;
    }
    fs::create_dir_all(&partial).map_err(|e| TraceError::io(&partial, e))?;
    let info = |r: u32| RankInfo {
        n_ranks: spec.ranks,
        host: Some("synthetic".into()),
        pid: Some(r),
        clock: "simulated".into(),
        ..RankInfo::default()
    };
    let counts: Vec<(u64, u64)> = (0..spec.ranks)
        .into_par_iter()
        .map(|r| -> Result<(u64, u64)> {
            let path = partial.join(rank_file_name(Rank(r)));
            let events = rank_events(spec, r);
            let file = File::create(&path).map_err(|e| TraceError::io(&path, e))?;
            let io = |e| TraceError::io(&path, e);
            let mut w = NativeWriter::new(file, Rank(r), &info(r)).map_err(io)?;
            for e in &events {
                w.event(e).map_err(io)?;
            }
            let file = w.finish().map_err(io)?;
            let len = file.metadata().map_err(io)?.len();
            Ok((events.len() as u64, len))
        })
        .collect::<Result<_>>()?;
    fs::rename(&partial, dir).map_err(|e| TraceError::io(dir, e))?;
    Ok(Written {
        ranks: spec.ranks,
        events: counts.iter().map(|c| c.0).sum(),
        file_bytes: counts.iter().map(|c| c.1).sum(),
    })
}

fn partial_path(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".partial");
    dir.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ReadOptions, TraceSet};

    #[test]
    fn shapes_are_as_cubic_as_the_factors_allow() {
        assert_eq!(grid_shape(16_384, 3), vec![32, 32, 16]);
        assert_eq!(grid_shape(1_024, 3), vec![16, 8, 8]);
        assert_eq!(grid_shape(64, 2), vec![8, 8]);
        assert_eq!(grid_shape(12, 3), vec![3, 2, 2]);
        assert_eq!(grid_shape(7, 3), vec![7, 1, 1]);
        assert_eq!(grid_shape(1, 3), vec![1, 1, 1]);
    }

    #[test]
    fn every_pattern_reads_back_as_a_whole_run() {
        let tmp = tempfile::tempdir().unwrap();
        for (i, pattern) in [
            Pattern::Stencil { dims: 3 },
            Pattern::Stencil { dims: 1 },
            Pattern::Tree,
            Pattern::AllToAll,
        ]
        .into_iter()
        .enumerate()
        {
            let spec = Spec {
                pattern,
                irregular: i % 2 == 0,
                alltoall_every: 3,
                ..Spec::stencil3d(12, 5)
            };
            let dir = tmp.path().join(format!("t{i}"));
            let w = write(&dir, &spec).unwrap();
            let set = TraceSet::open(&dir, &ReadOptions::default()).unwrap();
            assert_eq!(set.n_ranks(), 12);
            let events: usize = set.ranks.iter().map(|r| r.events.len()).sum();
            assert_eq!(events as u64, w.events);
            // The same spec makes the same bytes.
            let again = tmp.path().join(format!("u{i}"));
            write(&again, &spec).unwrap();
            let a = fs::read(dir.join("rank-5.mpt")).unwrap();
            let b = fs::read(again.join("rank-5.mpt")).unwrap();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn every_send_has_its_receive() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        write(&dir, &Spec { irregular: true, ..Spec::stencil3d(24, 4) }).unwrap();
        let mut set = TraceSet::open(&dir, &ReadOptions::default()).unwrap();
        let local = set.drop_local_calls();
        assert_eq!(local.calls(), 0, "{local:?}");
    }
}
