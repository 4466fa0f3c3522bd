//! `mpiskel simulate`: what-if without a cluster.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use mpiskel_simulate::collectives::Selector;
use mpiskel_simulate::engine::{
    simulate_marked, FastForward, Options, RankFigures, Simulation, Stuck,
};
use mpiskel_simulate::fastforward::{Plan, Refusal};
use mpiskel_simulate::model::Model;
use mpiskel_simulate::platform::{parse_unit, placement, Platform, Unit};
use mpiskel_simulate::skeleton::{lower, price, Lowered, PhaseFigures, Priced};
use mpiskel_trace::local::LocalCalls;
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};
use serde::Serialize;

/// The MPI library a calibration measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CalibrateMpi {
    /// Open MPI (mpicc.openmpi, mpirun.openmpi).
    Openmpi,
    /// MPICH (mpicc.mpich, mpirun.mpich).
    Mpich,
}

/// Whose collective algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CollArg {
    /// SimGrid's default selector.
    Default,
    /// Open MPI 4's decision (binomial broadcasts).
    Ompi,
}

/// The performance model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModelArg {
    /// SimGrid 3.32's SMPI model: latency and bandwidth factors by message size, a 16-byte
    /// envelope, acknowledgements on the reverse route, eager sends below 64 KiB.
    Smpi,
    /// Plain flows: latency plus size over the shared bandwidth, nothing else.
    Plain,
}

/// Simulate a trace's program, or a skeleton's, on a modelled platform: how long the application
/// would take on a cluster nobody has yet, with a slower network, a higher latency, slower
/// processors or more ranks per host, in a fraction of a second per question.
///
/// From a trace, every rank's recorded calls run against the platform: compute blocks as their
/// flops on the rank's host (or their recorded seconds at --trace-speed), messages as flows
/// that share the links they cross (max-min fairness) with SimGrid's SMPI factors by size,
/// collectives as the messages of the algorithms SimGrid chooses by default. Once a few
/// iterations of the main loop have set the pace, the rest are priced at it (--exact: all run).
/// Calls nothing in the trace matches (a receive posted in advance and cancelled) are left out
/// as `mpiskel build` leaves them out, their time computation before the next call.
///
/// From a skeleton folder (what `mpiskel build` wrote; its skeleton.json holds the program, the
/// trace is not needed), the skeleton's program stands for the application: every rank's
/// loop nest with each compute block at its recorded duration (none of it cut), each loop the
/// skeleton cuts simulated for a few iterations (as many as the skeleton runs; six at scale) and
/// the others priced at their pace, per kind of time step. This answers the same question
/// from a folder of kilobytes, in about the time of a few iterations whatever the loop's
/// length (--exact: every iteration), and prints each phase's share. With --as-run, the
/// skeleton itself instead, as it runs: the iterations it runs, the part of each compute block
/// it runs (what the compute cut takes out left out), the warm-up it skips skipped; the
/// predicted time is then how long the skeleton would run there (its SimGrid runs: within 5 %),
/// before anyone runs it.
///
/// The platform is a SimGrid platform file holding one <cluster> (as `smpirun -platform`
/// takes it) or a TOML file:
///
///   [cluster]
///   hosts = 16
///   speed = "1Gf"
///   bandwidth = "10Gbps"
///   latency = "1us"
///   sharing = "splitduplex"        # shared | splitduplex | fatpipe
///   loopback_bandwidth = "100Gbps"
///   loopback_latency = "0.1us"
///
/// --hostfile places ranks as `smpirun -hostfile` does (one host per line, or host:N); without
/// it rank k runs on host k, wrapping around. --sweep asks one question per value of one
/// parameter and prints a table: bandwidth (of every link between hosts), latency, or speed (of
/// every host); --svg draws it.
///
/// --calibrate openmpi|mpich -o FILE measures ping-pong times between two ranks of this machine,
/// fits a one-host platform to them (latency, bandwidth, a bandwidth factor per size range) and
/// writes it as TOML with its [model] section, for --platform FILE.
///
/// Output: the predicted time (the last rank's end, with the iterations priced), the slowest
/// rank, messages and bytes, and how long the simulation took; --json prints {input, from
/// ("trace" or "skeleton"), as_run (true with --as-run; then exposure: the share its compute
/// cut adds to its own prediction there), platform, predicted_s, ranks: [{rank, host, end_s, compute_s}],
/// messages, bytes, stuck, fast_forward and local_calls (traces), phases ([{name, full,
/// simulated, simulated_s, predicted_s}] of the slowest rank: a skeleton's phases, or a trace's
/// setup, main loop and finish where a main loop is found), wall_s} (or {sweep:
/// [{value, predicted_s}]}). A program whose calls cannot all complete (two sends above the
/// eager threshold, each waiting for the other's receive) lists its stuck ranks and exits 1.
///
/// Examples:
///   mpiskel simulate lu.S.4/trace.txt --platform cluster.xml
///   mpiskel simulate bt.S.16 --platform ref.xml --hostfile hostfile_4perhost.txt --json
///   mpiskel simulate bt.S.16.skel --platform ref.xml --sweep latency=1us,10us,100us
///   mpiskel simulate bt.S.16.skel --platform ref.xml --as-run
///   mpiskel simulate --calibrate openmpi -o here.toml
///   mpiskel simulate app.trace --platform here.toml
///   mpiskel simulate app.trace --platform cluster.toml --sweep bandwidth=10Gbps,1Gbps,100MBps \
///       --svg bandwidth.svg
#[derive(Debug, Args)]
#[command(
    verbatim_doc_comment,
    about = "Simulate a trace or a skeleton on a modelled platform (what-if without a cluster)."
)]
pub struct SimulateArgs {
    /// The trace (any format `mpiskel inspect` reads), or a skeleton folder.
    #[arg(required_unless_present = "calibrate")]
    path: Option<PathBuf>,
    /// The platform: a SimGrid platform file with one <cluster>, or mpiskel's TOML.
    #[arg(long, value_name = "FILE", required_unless_present = "calibrate")]
    platform: Option<PathBuf>,
    /// Instead of simulating: measure ping-pong times between two ranks of this machine under
    /// MPI (openmpi or mpich), fit a one-host platform to them and write it to -o FILE (TOML,
    /// with the fitted model), for --platform.
    #[arg(long, value_name = "MPI", conflicts_with_all = ["sweep", "path"])]
    calibrate: Option<CalibrateMpi>,
    /// With --calibrate: the platform file to write.
    #[arg(short, long, value_name = "FILE", requires = "calibrate")]
    output: Option<PathBuf>,
    /// Where each rank runs (SMPI's hostfile format).
    #[arg(long, value_name = "FILE")]
    hostfile: Option<PathBuf>,
    /// Speed of the machine that recorded compute blocks as seconds (traces without flop
    /// counts); SimGrid traces carry flops and ignore it.
    #[arg(long, value_name = "SPEED", default_value = "1Gf")]
    trace_speed: String,
    /// The performance model (default: the platform file's `[model]`, else smpi).
    #[arg(long, value_enum)]
    model: Option<ModelArg>,
    /// Ask one question per value: bandwidth=V,V,…, latency=V,…, or speed=V,… (SimGrid units).
    #[arg(long, value_name = "PARAM=V,V,…")]
    sweep: Option<String>,
    /// Whose choice of collective algorithms to follow: SimGrid's default selector, or Open
    /// MPI 4's fixed decision (as `smpirun --cfg=smpi/coll-selector:ompi
    /// --cfg=smpi/bcast:default`: broadcasts stay binomial).
    #[arg(long, value_enum, default_value_t = CollArg::Default)]
    collectives: CollArg,
    /// Simulate every iteration of the main loop (by default, once a few iterations have set
    /// the pace, the rest are skipped and priced at it); of a skeleton, every iteration of
    /// every loop it cuts.
    #[arg(long)]
    exact: bool,
    /// Of a skeleton: the seed of the draws of compute durations from their recorded spread.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Of a skeleton: simulate the skeleton itself as it runs (the iterations it runs, the
    /// part of each compute block it runs), not the application it stands for: how long the
    /// skeleton would take on the platform, before anyone runs it there (`predicted_s` is then
    /// its time, each phase its own iterations), and what its compute cut adds to its own
    /// prediction there (`exposure`: its shortened blocks waiting for messages their
    /// computation hid).
    #[arg(long, conflicts_with = "exact")]
    as_run: bool,
    /// With --sweep: also draw the predicted time against the parameter as an SVG chart.
    #[arg(long, value_name = "FILE", requires = "sweep")]
    svg: Option<PathBuf>,
    /// Print one JSON document.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    input: String,
    /// `trace` or `skeleton`.
    from: &'static str,
    /// Whether a skeleton was simulated as it runs (`predicted_s` its own time).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    as_run: bool,
    platform: String,
    predicted_s: f64,
    ranks: &'a [RankFigures],
    messages: u64,
    bytes: u64,
    /// Times the sharing of the resources was solved again.
    solves: u64,
    stuck: &'a [Stuck],
    #[serde(skip_serializing_if = "Option::is_none")]
    fast_forward: Option<&'a FastForward>,
    /// Of a trace: the calls nothing matched, left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    local_calls: Option<LocalCalls>,
    /// The slowest rank's phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    phases: Option<&'a Vec<PhaseFigures>>,
    /// Of a skeleton as it runs: the share its compute cut adds to its own prediction there,
    /// its shortened blocks waiting for messages their computation hid.
    #[serde(skip_serializing_if = "Option::is_none")]
    exposure: Option<f64>,
    wall_s: f64,
}

/// A trace's simulation as three phases of its slowest rank: `setup` (before the main loop), the
/// main loop (its iterations, those simulated: all but the ones the fast-forward priced),
/// `finish` (after it).
fn around_main_loop(sim: &Simulation, times: &[Vec<f64>], iterations: u64) -> Priced {
    let slowest = sim
        .ranks
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.end_s.total_cmp(&b.1.end_s))
        .map_or(0, |(i, _)| i);
    let end = sim.ranks.get(slowest).map_or(0.0, |r| r.end_s);
    let t = times.get(slowest).cloned().unwrap_or_default();
    let (a, b) = (t.first().copied().unwrap_or(0.0), t.get(1).copied().unwrap_or(end));
    let skipped = sim.fast_forward.as_ref().map_or(0, |f| f.skipped as u64);
    let phase = |name: &str, full: u64, simulated: u64, s: f64| PhaseFigures {
        name: name.into(),
        full,
        simulated,
        simulated_s: s,
        predicted_s: s,
    };
    Priced {
        predicted_s: sim.predicted_s,
        rank: slowest as u32,
        phases: vec![
            phase("setup", 1, 1, a),
            phase("main_loop", iterations, iterations.saturating_sub(skipped), (b - a).max(0.0)),
            phase("finish", 1, 1, (end - b).max(0.0)),
        ],
    }
}

/// What is simulated: a trace's calls, or a skeleton's program lowered to every rank's calls.
enum Input {
    /// A trace, the calls nothing matched left out of it, and where its main loop lies (made
    /// once: the fast-forward and the phases use it, in every question of a sweep).
    Trace { set: TraceSet, local: LocalCalls, plan: Box<Result<Plan, Refusal>> },
    /// A skeleton's program; as it runs (`--as-run`), also with every block whole, for
    /// [`mpiskel_simulate::skeleton::exposure`].
    Skeleton(Lowered, Option<Lowered>),
}

impl Input {
    /// `as_run`: a skeleton as it runs ([`mpiskel_simulate::skeleton::lower_as_run`]); a trace
    /// is refused then.
    fn open(path: &Path, whole: bool, seed: u64, as_run: bool) -> Result<Input> {
        if let Some(doc) = mpiskel_emit::document::read(path)? {
            use mpiskel_simulate::skeleton::{lower_as_run, lower_as_run_uncut};
            return Ok(if as_run {
                Input::Skeleton(
                    lower_as_run(&doc.program, seed, doc.scaling.compute_shrink),
                    Some(lower_as_run_uncut(&doc.program, seed)),
                )
            } else {
                Input::Skeleton(lower(&doc.program, seed, whole), None)
            });
        }
        anyhow::ensure!(
            !as_run,
            "{}: --as-run simulates a skeleton as it runs; give a skeleton folder (what `mpiskel \
             build` wrote), not a trace",
            path.display()
        );
        let opts = ReadOptions { ti: TiOptions { flops_per_second: 1e9 } };
        let mut set = {
            let _bar = crate::progress::Stages::bars_only().reading("reading");
            TraceSet::open(path, &opts)?
        };
        // Calls nothing matched (a receive posted for updates that stopped coming, then
        // cancelled) would leave their ranks stuck: left out as `build` leaves them out, their
        // time becoming computation before the next call.
        let local = set.drop_local_calls();
        set.align_collectives();
        let plan = Box::new(mpiskel_simulate::fastforward::plan(&set.ranks));
        Ok(Input::Trace { set, local, plan })
    }

    fn n_ranks(&self) -> usize {
        match self {
            Input::Trace { set, .. } => set.n_ranks(),
            Input::Skeleton(l, _) => l.traces.len(),
        }
    }

    fn local_calls(&self) -> Option<LocalCalls> {
        match self {
            Input::Trace { local, .. } => Some(*local),
            Input::Skeleton(..) => None,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Input::Trace { .. } => "trace",
            Input::Skeleton(..) => "skeleton",
        }
    }

    /// The simulation, and for a skeleton its pricing of the iterations it did not simulate.
    fn simulate(
        &self,
        platform: &Platform,
        place: &[usize],
        options: &Options,
    ) -> Result<(Simulation, Option<Priced>)> {
        self.simulate_exposed(platform, place, options).map(|(sim, priced, _)| (sim, priced))
    }

    /// [`Input::simulate`], and of a skeleton as it runs what its compute cut adds to its
    /// prediction there ([`mpiskel_simulate::skeleton::exposure`]).
    fn simulate_exposed(
        &self,
        platform: &Platform,
        place: &[usize],
        options: &Options,
    ) -> Result<(Simulation, Option<Priced>, Option<f64>)> {
        Ok(match self {
            Input::Trace { set, plan, .. } => {
                // Timed around the main loop where one is found: before it, it, after it.
                let plan = plan.as_ref();
                let Ok(p) = plan else {
                    let (sim, _) =
                        simulate_marked(&set.ranks, platform, place, options, &[], Some(plan))?;
                    return Ok((sim, None, None));
                };
                let marks: Vec<Vec<usize>> =
                    p.loops.iter().map(|l| vec![l.start, l.iteration_start(l.count)]).collect();
                let (sim, times) =
                    simulate_marked(&set.ranks, platform, place, options, &marks, Some(plan))?;
                let priced = around_main_loop(&sim, &times, p.iterations as u64);
                (sim, Some(priced), None)
            }
            Input::Skeleton(l, uncut) => {
                let (sim, times) =
                    simulate_marked(&l.traces, platform, place, options, &l.marks, None)?;
                let ends: Vec<f64> = sim.ranks.iter().map(|r| r.end_s).collect();
                let priced = price(l, &times, &ends);
                let exposure = match uncut {
                    Some(w) => {
                        let (whole, wtimes) =
                            simulate_marked(&w.traces, platform, place, options, &w.marks, None)?;
                        let wends: Vec<f64> = whole.ranks.iter().map(|r| r.end_s).collect();
                        Some(mpiskel_simulate::skeleton::exposure(
                            (l, &times, &ends),
                            (w, &wtimes, &wends),
                        ))
                    }
                    None => None,
                };
                (sim, Some(priced), exposure)
            }
        })
    }
}

#[derive(Serialize)]
struct SweepRow {
    value: String,
    /// The value in base units (bytes/s, seconds, flop/s).
    base: f64,
    predicted_s: f64,
    wall_s: f64,
}

pub fn run(a: SimulateArgs) -> Result<ExitCode> {
    if let Some(mpi) = a.calibrate {
        return calibrate(mpi, a.output.as_deref(), a.json);
    }
    let (Some(path), Some(platform_path)) = (a.path.clone(), a.platform.clone()) else {
        bail!("give a trace and --platform (or --calibrate)");
    };
    let trace_speed = parse_unit(&a.trace_speed, Unit::Speed)
        .map_err(|e| anyhow::anyhow!("--trace-speed {}: {e}", a.trace_speed))?;
    anyhow::ensure!(trace_speed > 0.0, "--trace-speed must be positive");
    let platform = Platform::open(&platform_path)?;
    let input = Input::open(&path, a.exact, a.seed, a.as_run)?;
    let place = placement(&platform, a.hostfile.as_deref(), input.n_ranks())?;
    let model = match a.model {
        Some(ModelArg::Smpi) => Model::smpi(),
        Some(ModelArg::Plain) => Model::plain(),
        None => platform.model.clone().unwrap_or_else(Model::smpi),
    };
    let selector = match a.collectives {
        CollArg::Default => Selector::Default,
        CollArg::Ompi => Selector::Ompi,
    };
    let fast_forward = !a.exact && matches!(input, Input::Trace { .. });
    let options = Options { model, trace_speed, fast_forward, selector };
    if let Some(sweep) = &a.sweep {
        let swept = run_sweep(&input, &platform, &place, &options, sweep)?;
        print_sweep(&a, &path, &platform, input.n_ranks(), swept)?;
        return Ok(ExitCode::SUCCESS);
    }
    let t = Instant::now();
    let (sim, priced, exposure) = input.simulate_exposed(&platform, &place, &options)?;
    let wall_s = t.elapsed().as_secs_f64();
    let predicted_s = priced.as_ref().map_or(sim.predicted_s, |p| p.predicted_s);
    if a.json {
        let r = Report {
            input: path.display().to_string(),
            from: input.kind(),
            as_run: a.as_run,
            platform: platform_path.display().to_string(),
            predicted_s,
            ranks: &sim.ranks,
            messages: sim.messages,
            bytes: sim.bytes,
            solves: sim.solves,
            stuck: &sim.stuck,
            fast_forward: sim.fast_forward.as_ref(),
            local_calls: input.local_calls(),
            phases: priced.as_ref().map(|p| &p.phases),
            exposure,
            wall_s,
        };
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        // The slowest rank: of the prediction where iterations were priced, else of the run.
        let slowest = match &priced {
            Some(p) => sim.ranks.get(p.rank as usize),
            None => sim.ranks.iter().max_by(|x, y| x.end_s.total_cmp(&y.end_s)),
        };
        println!(
            "{}: {} ranks on {} ({} hosts): predicted {:.6} s{}",
            path.display(),
            input.n_ranks(),
            platform.name,
            platform.hosts.len(),
            predicted_s,
            match input {
                Input::Skeleton(..) if a.as_run => " (the skeleton itself, as it runs)",
                Input::Skeleton(..) => " (the skeleton's program)",
                Input::Trace { .. } => "",
            }
        );
        if let Some(s) = slowest {
            println!(
                "  slowest rank {} on {}: {:.6} s computing, {:.6} s in MPI, as simulated",
                s.rank,
                s.host,
                s.compute_s,
                (s.end_s - s.compute_s).max(0.0)
            );
        }
        match &sim.fast_forward {
            Some(f) if f.skipped > 0 => println!(
                "  main loop: {} of {} iterations skipped at {:.6} s each ({:.6} s in all)",
                f.skipped, f.iterations, f.pace_s, f.skipped_s
            ),
            Some(f) => println!(
                "  main loop simulated whole: {}",
                f.reason.as_deref().unwrap_or("nothing to skip")
            ),
            None => {}
        }
        if let Some(l) = input.local_calls().filter(|l| l.calls() > 0) {
            println!(
                "  left out {} calls nothing matched ({} sends, {} receives, {} completions; {} bytes)",
                l.calls(),
                l.sends,
                l.receives,
                l.completions,
                l.bytes
            );
        }
        if let Some(x) = exposure {
            println!(
                "  its compute cut moves its own prediction here by {:+.2} %: the blocks it \
                 shortens wait differently for messages their computation hid",
                100.0 * x
            );
        }
        if let Some(p) = &priced {
            if a.as_run {
                println!("  its phases (iterations the skeleton runs, all simulated):");
            } else {
                println!("  its phases (iterations of the application, simulated, priced):");
            }
            println!(
                "    {:<20} {:>10} {:>10} {:>13} {:>13}",
                "phase", "iterations", "simulated", "simulated s", "predicted s"
            );
            for f in &p.phases {
                println!(
                    "    {:<20} {:>10} {:>10} {:>13.6} {:>13.6}",
                    f.name, f.full, f.simulated, f.simulated_s, f.predicted_s
                );
            }
        }
        println!(
            "  {} messages, {} bytes, {} sharing solves; simulated in {:.3} s",
            sim.messages, sim.bytes, sim.solves, wall_s
        );
    }
    if !sim.stuck.is_empty() {
        for s in sim.stuck.iter().take(8) {
            eprintln!("error: rank {} never ends: stuck in call {} ({})", s.rank, s.call, s.op);
        }
        eprintln!("error: {} ranks never end; the prediction covers what ran", sim.stuck.len());
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints (or writes, with `--svg`) the sweep of `swept`, of the trace or skeleton at `path` on
/// `platform`.
fn print_sweep(
    a: &SimulateArgs,
    path: &Path,
    platform: &Platform,
    n_ranks: usize,
    swept: Sweep,
) -> Result<()> {
    let Sweep { param, unit, rows } = swept;
    let param = param.as_str();
    if let Some(svg) = &a.svg {
        let title = format!("{} on {}: {param} swept", path.display(), platform.name);
        crate::compress::write_atomic(svg, &sweep_chart(&title, unit, &rows))?;
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "parameter": param, "sweep": rows })
            )?
        );
    } else {
        println!("{} on {} ({} ranks), {param} swept:", path.display(), platform.name, n_ranks);
        println!("{:>14}  {:>12}  {:>9}", param, "predicted s", "vs first");
        let first = rows.first().map(|r| r.predicted_s).unwrap_or(1.0);
        for r in &rows {
            println!("{:>14}  {:>12.6}  {:>8.2}×", r.value, r.predicted_s, r.predicted_s / first);
        }
    }
    Ok(())
}

/// A sweep: the parameter, its axis's description, one row per value.
struct Sweep {
    param: String,
    unit: &'static str,
    rows: Vec<SweepRow>,
}

/// Asks `input` one question per value of `spec` (`PARAM=V,V,…`: bandwidth, latency or speed,
/// in SimGrid's units) on `platform` with that parameter set on every link or host.
fn run_sweep(
    input: &Input,
    platform: &Platform,
    place: &[usize],
    options: &Options,
    spec: &str,
) -> Result<Sweep> {
    let (param, values) =
        spec.split_once('=').with_context(|| format!("--sweep {spec}: give PARAM=V,V,…"))?;
    let (unit, axis) = match param {
        "bandwidth" => (Unit::Bandwidth, "bandwidth of every link (bytes/s)"),
        "latency" => (Unit::Time, "latency of every link (s)"),
        "speed" => (Unit::Speed, "speed of every host (flop/s)"),
        p => bail!("--sweep: \"{p}\" is not bandwidth, latency or speed"),
    };
    let mut rows = Vec::new();
    for v in values.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        let x = parse_unit(v, unit).map_err(|e| anyhow::anyhow!("--sweep {param}={v}: {e}"))?;
        anyhow::ensure!(x > 0.0, "--sweep {param}={v}: must be positive");
        let mut pf = platform.clone();
        match unit {
            Unit::Bandwidth => pf.set_bandwidth(x),
            Unit::Time => pf.set_latency(x),
            Unit::Speed => pf.set_speed(x),
        }
        let t = Instant::now();
        let (sim, priced) = input.simulate(&pf, place, options)?;
        if !sim.stuck.is_empty() {
            bail!(
                "{param}={v}: {} ranks never end (first: rank {} in call {} {})",
                sim.stuck.len(),
                sim.stuck[0].rank,
                sim.stuck[0].call,
                sim.stuck[0].op
            );
        }
        rows.push(SweepRow {
            value: v.to_string(),
            base: x,
            predicted_s: priced.map_or(sim.predicted_s, |p| p.predicted_s),
            wall_s: t.elapsed().as_secs_f64(),
        });
    }
    anyhow::ensure!(!rows.is_empty(), "--sweep {spec}: no values");
    Ok(Sweep { param: param.to_owned(), unit: axis, rows })
}

/// The chart of a sweep's rows, an SVG document.
fn sweep_chart(title: &str, axis: &str, rows: &[SweepRow]) -> String {
    let points: Vec<mpiskel_report::svg::SweepPoint> = rows
        .iter()
        .map(|r| mpiskel_report::svg::SweepPoint {
            label: r.value.clone(),
            value: r.base,
            predicted_s: r.predicted_s,
        })
        .collect();
    mpiskel_report::svg::sweep_svg(title, axis, &points)
}

/// `x` bytes/s in SimGrid's units with the largest prefix that keeps it at 1 or more: `12.5GBps`.
fn bytes_per_second(x: f64) -> String {
    let (v, p) = [(1e9, "G"), (1e6, "M"), (1e3, "k")]
        .iter()
        .find(|(f, _)| x >= *f)
        .map_or((x, ""), |&(f, p)| (x / f, p));
    let text = format!("{v:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{p}Bps")
}

/// What `mpiskel report --platform` shows: a trace's or a skeleton's predicted time on
/// `platform` (placed by `hostfile`) as one parameter sweeps (`spec`, or by default the
/// platform's link bandwidth divided by 1 to 64), with the default model and collectives.
pub(crate) fn what_if(
    path: &Path,
    platform_path: &Path,
    hostfile: Option<&Path>,
    spec: Option<&str>,
) -> Result<mpiskel_report::WhatIf> {
    let platform = Platform::open(platform_path)?;
    let input = Input::open(path, false, 0, false)?;
    let place = placement(&platform, hostfile, input.n_ranks())?;
    let options = Options {
        model: platform.model.clone().unwrap_or_else(Model::smpi),
        fast_forward: matches!(input, Input::Trace { .. }),
        ..Options::default()
    };
    let default;
    let spec = match spec {
        Some(s) => s,
        None => {
            let bw = platform.links.iter().map(|l| l.bandwidth).fold(0.0, f64::max);
            anyhow::ensure!(bw > 0.0, "{}: no links to sweep", platform_path.display());
            let values: Vec<String> =
                [1.0, 2.0, 4.0, 16.0, 64.0].iter().map(|d| bytes_per_second(bw / d)).collect();
            default = format!("bandwidth={}", values.join(","));
            default.as_str()
        }
    };
    let sweep = run_sweep(&input, &platform, &place, &options, spec)?;
    let title = format!("on {}: {} swept", platform.name, sweep.param);
    Ok(mpiskel_report::WhatIf {
        platform: platform_path.display().to_string(),
        from: input.kind().to_owned(),
        parameter: sweep.param.clone(),
        svg: sweep_chart(&title, sweep.unit, &sweep.rows),
        rows: sweep.rows.iter().map(|r| (r.value.clone(), r.predicted_s)).collect(),
    })
}

#[derive(Serialize)]
struct CalibrationReport {
    mpi: &'static str,
    output: String,
    latency_s: f64,
    bandwidth_bytes_per_s: f64,
    cores: u32,
    sizes: Vec<CalibrationRow>,
}

#[derive(Serialize)]
struct CalibrationRow {
    bytes: u64,
    measured_s: f64,
    simulated_s: f64,
}

/// `--calibrate`: measure, fit, write the platform file atomically, show the fit.
fn calibrate(mpi: CalibrateMpi, output: Option<&std::path::Path>, json: bool) -> Result<ExitCode> {
    use mpiskel_make::run::Mpi;
    use mpiskel_simulate::calibrate::{fit, Sample};
    let output = output.context("--calibrate needs -o FILE, the platform file to write")?;
    let (m, name) = match mpi {
        CalibrateMpi::Openmpi => (Mpi::Openmpi, "openmpi"),
        CalibrateMpi::Mpich => (Mpi::Mpich, "mpich"),
    };
    let dir = std::env::temp_dir().join(format!("mpiskel-calibrate-{}", std::process::id()));
    // Removed when this returns, or by the signal handler if interrupted.
    let _guard = mpiskel_make::harness::TempPath::register(&dir)?;
    std::fs::create_dir_all(&dir)?;
    let samples = {
        let _bar = crate::progress::Stages::bars_only().reading(&format!("ping-pong under {name}"));
        mpiskel_make::calibrate::measure(m, &dir)?
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let origin = format!(
        "Calibrated on {} under {name} by mpiskel simulate --calibrate: ping-pong between two ranks.",
        host.trim()
    );
    let samples: Vec<Sample> =
        samples.iter().map(|&(bytes, one_way_s)| Sample { bytes, one_way_s }).collect();
    let c = fit(&samples, cores, &format!("this-machine-{name}"), &origin)
        .context("the ping-pong times do not grow with the message size: nothing to fit")?;
    crate::compress::write_atomic(output, &c.toml)?;
    let rows: Vec<CalibrationRow> = c
        .check
        .iter()
        .map(|&(bytes, measured_s, simulated_s)| CalibrationRow { bytes, measured_s, simulated_s })
        .collect();
    if json {
        let r = CalibrationReport {
            mpi: name,
            output: output.display().to_string(),
            latency_s: c.latency_s,
            bandwidth_bytes_per_s: c.bandwidth,
            cores,
            sizes: rows,
        };
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "{name} on this machine: latency {:.3} µs, bandwidth {:.2} GB/s, {cores} cores; wrote {}",
            c.latency_s * 1e6,
            c.bandwidth / 1e9,
            output.display()
        );
        println!("{:>10}  {:>14}  {:>14}", "bytes", "measured (µs)", "simulated (µs)");
        for r in &rows {
            println!(
                "{:>10}  {:>14.3}  {:>14.3}",
                r.bytes,
                r.measured_s * 1e6,
                r.simulated_s * 1e6
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
