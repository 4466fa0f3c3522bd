//! The fidelity panel: the application's trace and a skeleton simulated side by side on a
//! reference platform and its what-ifs, so that a build measures whether its skeleton predicts
//! before it writes it (`mpiskel_cut::fidelity` holds the rows and the decision made from them).
//!
//! The panel ([`Panel::around`]) is the reference — the platform the build was given, else a
//! cluster inferred from the trace: one single-core host per rank, private 10 Gb/s links of
//! 1 µs into a crossbar, hosts at the speed the trace's compute blocks were recorded at, as the
//! SimGrid reference cluster of the NPB fixtures — and five what-ifs of it: bandwidth ÷10 and
//! ÷100, latency ×10, processors at half speed, and four ranks to a host. These are the
//! scenarios Xu & Subhlok 2008 (§5.3–5.4) measure skeletons on: a shared network, a slower CPU,
//! shared processors.
//!
//! On each platform: the application's time is its trace simulated whole (call by call up to
//! [`EXACT_CALLS`] calls, else the main loop fast-forwarded once its pace is known,
//! [`crate::fastforward`]); the skeleton's is its program
//! as it runs ([`crate::skeleton::lower_as_run`]), and its prediction is what its runtime would
//! print from that run ([`crate::skeleton::runtime_prediction`]). The trace is simulated once per
//! platform for every candidate a build measures ([`app_times`]); a candidate costs one
//! simulation of its own short run per platform ([`check`]).
//!
//! The platforms are simulated in parallel (rayon), one simulation per thread.
//!
//! # Complexity
//! [`app_times`]: platforms × the trace's simulation (O(calls simulated × log ranks));
//! [`check`]: platforms × the skeleton's simulation (O(calls the skeleton makes)).

use mpiskel_cut::fidelity::PanelRow;
use mpiskel_program::Skeleton;
use mpiskel_trace::RankTrace;
use rayon::prelude::*;

use crate::engine::{simulate_marked, Options};
use crate::error::{Result, SimulateError};
use crate::model::Model;
use crate::platform::{ClusterSpec, Platform};
use crate::skeleton::{lower_as_run, runtime_phases, Lowered};

/// Bandwidth of the inferred reference's private links, bytes/s (10 Gb/s).
pub const REFERENCE_BANDWIDTH: f64 = 1.25e9;
/// Latency of the inferred reference's private links, seconds.
pub const REFERENCE_LATENCY: f64 = 1e-6;
/// Loopback of the inferred reference (bandwidth bytes/s, latency s), as SimGrid's reference
/// cluster of the NPB fixtures (100 Gb/s, 0.1 µs).
pub const REFERENCE_LOOPBACK: (f64, f64) = (12.5e9, 1e-7);
/// Ranks to a host on the panel's shared-processor platform.
pub const SHARED_RANKS_PER_HOST: usize = 4;

/// One platform of the panel and where the ranks run on it.
#[derive(Debug, Clone)]
pub struct PanelPlatform {
    /// Its name in the panel.
    pub name: String,
    /// The platform.
    pub platform: Platform,
    /// Rank → host.
    pub placement: Vec<usize>,
}

/// The platforms a build checks its skeleton on, the reference first.
#[derive(Debug, Clone)]
pub struct Panel {
    /// The platforms.
    pub platforms: Vec<PanelPlatform>,
    /// Flop/s of the machine that recorded compute blocks as seconds (the simulator's
    /// `trace_speed`).
    pub trace_speed: f64,
}

impl Panel {
    /// The reference (`reference`: a platform and its placement; `None`: the cluster inferred
    /// for `n_ranks` ranks whose blocks were recorded at `trace_speed` flop/s) and its five
    /// what-ifs.
    pub fn around(
        reference: Option<(Platform, Vec<usize>)>,
        n_ranks: usize,
        trace_speed: f64,
    ) -> Panel {
        let (reference, placement) =
            reference.unwrap_or_else(|| (inferred(n_ranks, trace_speed), (0..n_ranks).collect()));
        let what_if = |name: &str, change: &dyn Fn(&mut Platform)| {
            let mut p = reference.clone();
            change(&mut p);
            PanelPlatform { name: name.to_owned(), platform: p, placement: placement.clone() }
        };
        let mut platforms = vec![
            what_if("reference", &|_| {}),
            what_if("bandwidth/10", &|p| p.scale_bandwidth(0.1)),
            what_if("bandwidth/100", &|p| p.scale_bandwidth(0.01)),
            what_if("latency*10", &|p| p.scale_latency(10.0)),
            what_if("cpu/2", &|p| p.scale_speed(0.5)),
        ];
        // Four ranks to a host: the ranks of four hosts of the reference on the first of them.
        let shared: Vec<usize> = placement.iter().map(|&h| h / SHARED_RANKS_PER_HOST).collect();
        platforms.push(PanelPlatform {
            name: format!("{SHARED_RANKS_PER_HOST}-per-host"),
            platform: reference.clone(),
            placement: shared,
        });
        Panel { platforms, trace_speed }
    }

    fn options(&self, p: &PanelPlatform, fast_forward: bool) -> Options {
        Options {
            model: p.platform.model.clone().unwrap_or_else(Model::smpi),
            trace_speed: self.trace_speed,
            fast_forward,
            ..Options::default()
        }
    }
}

/// The reference cluster inferred for `n` ranks recorded at `speed` flop/s (see the module
/// documentation).
pub fn inferred(n: usize, speed: f64) -> Platform {
    Platform::cluster(&ClusterSpec {
        name: "inferred".into(),
        host_names: (0..n.max(1)).map(|i| format!("node-{i}")).collect(),
        speed,
        cores: 1,
        bandwidth: REFERENCE_BANDWIDTH,
        latency: REFERENCE_LATENCY,
        split_duplex: true,
        fatpipe: false,
        backbone: None,
        loopback: REFERENCE_LOOPBACK,
    })
}

/// Traces of at most this many calls (over all ranks) are simulated call by call on the panel,
/// larger ones with their main loop fast-forwarded. The fast-forward prices the iterations it
/// skips at the pace of a window of them, which is off by up to 3.4 % on the NPB fixtures (BT S
/// on 9 ranks, 60 iterations, whose later iterations run faster than the window's) where the
/// whole simulation is exact against SimGrid's replay; a whole simulation takes about 0.6 µs a
/// call at 16 ranks here (0.3 s per platform at this bound, the six of the panel in about a
/// second on two cores). The panel is the yardstick of every candidate: where it can afford to,
/// it measures the application exactly.
pub const EXACT_CALLS: usize = 500_000;

/// Whether the panel simulates `traces` with their main loop fast-forwarded ([`EXACT_CALLS`]).
pub fn fast_forwards(traces: &[RankTrace]) -> bool {
    traces.iter().map(|t| t.events.len()).sum::<usize>() > EXACT_CALLS
}

/// The application's time on each platform of `panel`: `traces` (every rank of the run, the
/// calls nothing matched left out) simulated, call by call where they are few enough, else
/// with the main loop fast-forwarded ([`fast_forwards`]).
pub fn app_times(traces: &[RankTrace], panel: &Panel) -> Result<Vec<f64>> {
    let fast = fast_forwards(traces);
    let plan = fast.then(|| crate::fastforward::plan(traces));
    panel
        .platforms
        .par_iter()
        .map(|p| {
            let options = panel.options(p, fast);
            let (sim, _) =
                simulate_marked(traces, &p.platform, &p.placement, &options, &[], plan.as_ref())?;
            stuck(&sim, "the application's trace", &p.name)?;
            Ok(sim.predicted_s)
        })
        .collect()
}

/// The skeleton `skel` (its blocks of fixed duration running `shrink` of what they keep, the
/// scaling's `compute_shrink`) checked on `panel` against the application's times `app`
/// ([`app_times`]): one row per platform, the reference first.
pub fn check(skel: &Skeleton, shrink: f64, panel: &Panel, app: &[f64]) -> Result<Vec<PanelRow>> {
    let lowered = lower_as_run(skel, 0, shrink);
    panel
        .platforms
        .par_iter()
        .zip(app)
        .map(|(p, &app_s)| {
            let (skeleton_s, phases) = run(&lowered, panel, p)?;
            let predicted_s = phases.iter().map(|(_, s)| s).sum();
            Ok(PanelRow::new(&p.name, app_s, skeleton_s, predicted_s))
        })
        .collect()
}

/// [`check`] on the panel's platform `i` alone (`None` past the last): a candidate that is off
/// there by more than the kept one is off anywhere need not be measured on the others.
pub fn check_one(
    skel: &Skeleton,
    shrink: f64,
    panel: &Panel,
    app: &[f64],
    i: usize,
) -> Result<Option<PanelRow>> {
    let (Some(p), Some(&app_s)) = (panel.platforms.get(i), app.get(i)) else { return Ok(None) };
    let (skeleton_s, phases) = run(&lower_as_run(skel, 0, shrink), panel, p)?;
    let predicted_s = phases.iter().map(|(_, s)| s).sum();
    Ok(Some(PanelRow::new(&p.name, app_s, skeleton_s, predicted_s)))
}

/// The phase of `skel` whose prediction on the panel's platform `platform` departs most from
/// the application's program there (the skeleton's program with every iteration priced,
/// [`crate::skeleton::lower`]), by name, with that departure in seconds; `None` where the
/// platform is not in the panel or the skeleton has no phases.
pub fn worst_phase(
    skel: &Skeleton,
    shrink: f64,
    panel: &Panel,
    platform: &str,
) -> Result<Option<(String, f64)>> {
    let Some(p) = panel.platforms.iter().find(|p| p.name == platform) else { return Ok(None) };
    let (_, as_run) = run(&lower_as_run(skel, 0, shrink), panel, p)?;
    let program = crate::skeleton::lower(skel, 0, false);
    let (_, times, ends) = simulated(&program, panel, p, "the skeleton's program")?;
    let priced = crate::skeleton::price(&program, &times, &ends);
    let worst = as_run
        .iter()
        .filter_map(|(name, s)| {
            let of_program = priced.phases.iter().find(|f| &f.name == name)?.predicted_s;
            Some((name.clone(), s - of_program))
        })
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()));
    Ok(worst)
}

/// `lowered` simulated on `p`: the slowest rank's end and the runtime's prediction by phase.
fn run(lowered: &Lowered, panel: &Panel, p: &PanelPlatform) -> Result<(f64, Vec<(String, f64)>)> {
    let (sim, times, ends) = simulated(lowered, panel, p, "the skeleton")?;
    // The pace of each rank's computation there: simulated seconds per recorded second.
    let pace: Vec<f64> = sim
        .ranks
        .iter()
        .zip(&lowered.traces)
        .map(|(r, t)| {
            let recorded_ns = t.events.iter().map(|e| e.gap_ns).sum::<u64>() + t.trailing_gap_ns;
            let recorded_s = recorded_ns as f64 * 1e-9;
            if recorded_s > 0.0 {
                r.compute_s / recorded_s
            } else {
                1.0
            }
        })
        .collect();
    Ok((sim.predicted_s, runtime_phases(lowered, &times, &ends, Some(&pace))))
}

/// `lowered` (`what`, for the error) simulated on `p`, to its end: the simulation, the times of
/// its marks and each rank's end.
fn simulated(
    lowered: &Lowered,
    panel: &Panel,
    p: &PanelPlatform,
    what: &str,
) -> Result<(crate::engine::Simulation, Vec<Vec<f64>>, Vec<f64>)> {
    let options = panel.options(p, false);
    let (sim, times) = simulate_marked(
        &lowered.traces,
        &p.platform,
        &p.placement,
        &options,
        &lowered.marks,
        None,
    )?;
    stuck(&sim, what, &p.name)?;
    let ends = sim.ranks.iter().map(|r| r.end_s).collect();
    Ok((sim, times, ends))
}

fn stuck(sim: &crate::engine::Simulation, what: &str, platform: &str) -> Result<()> {
    if sim.stuck.is_empty() {
        return Ok(());
    }
    Err(SimulateError::Model {
        name: "fidelity".into(),
        what: format!(
            "{what} could not run to its end on the panel's platform {platform}: {} ranks stuck \
             ({})",
            sim.stuck.len(),
            sim.stuck
                .iter()
                .take(4)
                .map(|s| format!("rank {} in {} (call {})", s.rank, s.op, s.call))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panel_is_the_reference_and_five_what_ifs() {
        let panel = Panel::around(None, 8, 1e9);
        let names: Vec<&str> = panel.platforms.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["reference", "bandwidth/10", "bandwidth/100", "latency*10", "cpu/2", "4-per-host"]
        );
        let reference = &panel.platforms[0];
        assert_eq!(reference.platform.hosts.len(), 8);
        assert_eq!(reference.placement, (0..8).collect::<Vec<_>>());
        let link = |p: &PanelPlatform| p.platform.links[0].clone();
        assert!((link(&panel.platforms[1]).bandwidth - REFERENCE_BANDWIDTH / 10.0).abs() < 1.0);
        assert!((link(&panel.platforms[2]).bandwidth - REFERENCE_BANDWIDTH / 100.0).abs() < 1.0);
        assert!((link(&panel.platforms[3]).latency - 10.0 * REFERENCE_LATENCY).abs() < 1e-12);
        assert!((panel.platforms[4].platform.hosts[0].speed - 0.5e9).abs() < 1.0);
        assert_eq!(panel.platforms[5].placement, [0, 0, 0, 0, 1, 1, 1, 1]);
        // Loopbacks stay as they are.
        let loopback = |p: &PanelPlatform| p.platform.links[2].bandwidth;
        assert_eq!(loopback(&panel.platforms[2]), REFERENCE_LOOPBACK.0);
    }
}
