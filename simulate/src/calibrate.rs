//! A platform fitted to measurements: ping-pong times between two ranks of this machine, as
//! `mpiskel simulate --calibrate` takes them under Open MPI or MPICH.
//!
//! The fit (Hockney's model per size range, as SimGrid's SMPI calibration does it, Clauss et
//! al. 2011, §4): the latency is the least one-way time measured, the bandwidth the
//! best of the large ones (payload over time beyond the latency); each measured size then gets
//! the bandwidth factor that makes the model give its measured time, from that size up to the
//! next one measured. The result is a one-host platform with the machine's cores whose ranks
//! talk through the loopback link at that latency and bandwidth, written as mpiskel's TOML with
//! its `[model]` section, so that `mpiskel simulate --platform` reads it back.

use mpiskel_trace::{CommId, Event, Op, Payload, Peer, Rank, RankTrace, Wildcards};
use serde::Serialize;

use crate::engine::{simulate, Options};
use crate::model::{Model, Piecewise};
use crate::platform::{ClusterSpec, Platform};

/// One measured message size: bytes and one-way time (half a round trip), seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Payload bytes.
    pub bytes: u64,
    /// One-way time, seconds.
    pub one_way_s: f64,
}

/// What the fit found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Latency of the smallest message, seconds.
    pub latency_s: f64,
    /// Bandwidth of the largest messages, bytes/s.
    pub bandwidth: f64,
    /// Cores of the machine.
    pub cores: u32,
    /// The model with the fitted factors.
    pub model: Model,
    /// Per measured size: measured and simulated one-way time with the fitted platform.
    pub check: Vec<(u64, f64, f64)>,
    /// The platform file (mpiskel TOML).
    pub toml: String,
}

/// Fits a one-host platform of `cores` cores to `samples` (at least two sizes).
pub fn fit(samples: &[Sample], cores: u32, name: &str, origin: &str) -> Option<Calibration> {
    let mut s: Vec<Sample> =
        samples.iter().copied().filter(|x| x.one_way_s > 0.0 && x.one_way_s.is_finite()).collect();
    s.sort_by_key(|x| x.bytes);
    s.dedup_by_key(|x| x.bytes);
    if s.len() < 2 {
        return None;
    }
    let base = Model::smpi();
    let env = base.envelope as f64;
    // The least time measured: an empty message can take longer than a small one (noise, or a
    // library's path for zero bytes), and no size can be faster than the latency.
    let latency = s.iter().map(|x| x.one_way_s).fold(f64::INFINITY, f64::min);
    let bandwidth = s
        .iter()
        .filter(|x| x.one_way_s > latency && x.bytes > 0)
        .map(|x| (x.bytes as f64 + env) / (x.one_way_s - latency))
        .fold(0.0, f64::max);
    if bandwidth <= 0.0 {
        return None;
    }
    // Factor of each size from it up to the next measured: the boundary is the size before it.
    let mut steps = Vec::new();
    for x in &s {
        let size = x.bytes as f64 + env;
        let transfer = x.one_way_s - latency;
        let f = if transfer > 0.0 { (size / (transfer * bandwidth)).clamp(1e-3, 1e3) } else { 1e3 };
        steps.push(((size - 1.0).max(0.0), f));
    }
    let model = Model {
        bandwidth_factor: Piecewise { steps, default: 1.0 },
        latency_factor: Piecewise::constant(1.0),
        eager_threshold: base.eager_threshold,
        envelope: base.envelope,
        crosstraffic: 0.0,
        weight_s: 0.0,
        tcp_gamma: 0.0,
    };
    let spec = ClusterSpec {
        name: name.to_string(),
        host_names: vec!["this-machine".into()],
        speed: 1e9,
        cores,
        bandwidth,
        latency,
        split_duplex: false,
        fatpipe: false,
        backbone: None,
        loopback: (bandwidth, latency),
    };
    let platform = Platform::cluster(&spec);
    let check = s
        .iter()
        .map(|x| {
            let t = pingpong(x.bytes, 10);
            let opts = Options { model: model.clone(), fast_forward: false, ..Options::default() };
            let sim = simulate(&t, &platform, &[0, 0], &opts).ok();
            let one_way = sim.map_or(f64::NAN, |r| r.predicted_s / 20.0);
            (x.bytes, x.one_way_s, one_way)
        })
        .collect();
    let factors: Vec<String> =
        model.bandwidth_factor.steps.iter().map(|(b, v)| format!("{b}:{v:.6}")).collect();
    let toml = format!(
        "# {origin}\n# One host: this machine's {cores} cores; its ranks talk through the loopback link.\n\
         [cluster]\nname = \"{name}\"\nnames = [\"this-machine\"]\nspeed = \"1Gf\"\ncores = {cores}\n\
         bandwidth = \"{bandwidth:.6e}Bps\"\nlatency = \"{latency:.6e}s\"\nsharing = \"shared\"\n\
         loopback_bandwidth = \"{bandwidth:.6e}Bps\"\nloopback_latency = \"{latency:.6e}s\"\n\n\
         [model]\n# Bandwidth factor by message size (payload + {} bytes): size above which : factor.\n\
         bandwidth_factor = \"{}\"\nlatency_factor = \"1\"\ncrosstraffic = 0.0\nweight_s = 0.0\ntcp_gamma = 0.0\n",
        base.envelope,
        factors.join(";")
    );
    Some(Calibration { latency_s: latency, bandwidth, cores, model, check, toml })
}

/// Two ranks exchanging `reps` round trips of `bytes`, as a trace (what the calibration ran).
pub fn pingpong(bytes: u64, reps: u32) -> Vec<RankTrace> {
    let p2p = |peer: u32| Payload::P2p {
        peer: Peer::Rank(Rank(peer)),
        tag: 1,
        bytes,
        comm: CommId::WORLD,
        request: None,
        wildcards: Wildcards::default(),
    };
    let ev = |op: Op, payload: Payload| Event {
        op,
        enter_ns: 0,
        exit_ns: 0,
        gap_ns: 0,
        gap_work: None,
        gap_cpu_ns: None,
        gap_polls: 0,
        payload,
    };
    (0..2u32)
        .map(|r| {
            let other = 1 - r;
            let mut events = Vec::new();
            for _ in 0..reps {
                if r == 0 {
                    events.push(ev(Op::Send, p2p(other)));
                    events.push(ev(Op::Recv, p2p(other)));
                } else {
                    events.push(ev(Op::Recv, p2p(other)));
                    events.push(ev(Op::Send, p2p(other)));
                }
            }
            crate::engine::made_rank(r, 2, events)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fitted_platform_gives_back_the_times_it_was_fitted_to() {
        // Shared memory in the shape MPI libraries show: 0.4 µs, then 6 GB/s, slower mid-sizes.
        let samples: Vec<Sample> =
            [(0, 0.4e-6), (64, 0.45e-6), (4096, 1.6e-6), (65536, 14e-6), (1 << 20, 180e-6)]
                .iter()
                .map(|&(bytes, one_way_s)| Sample { bytes, one_way_s })
                .collect();
        let c = fit(&samples, 2, "here", "test").unwrap();
        assert_eq!(c.latency_s, 0.4e-6);
        assert!(c.bandwidth > 5e9 && c.bandwidth < 7e9, "{}", c.bandwidth);
        for (bytes, measured, simulated) in &c.check {
            assert!(
                (simulated / measured - 1.0).abs() < 0.05,
                "{bytes}: {simulated} vs {measured}"
            );
        }
        // The file reads back as the same platform and model.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("here.toml");
        std::fs::write(&p, &c.toml).unwrap();
        let pf = Platform::open(&p).unwrap();
        assert_eq!((pf.hosts.len(), pf.hosts[0].cores), (1, 2));
        let m = pf.model.clone().expect("a [model] section");
        assert_eq!(m.bandwidth_factor.steps.len(), 5);
        assert_eq!(m.crosstraffic, 0.0);
    }
}
