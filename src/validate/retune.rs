//! `mpiskel retune`: fit a skeleton's compute blocks to the machine it now runs on.
//!
//! - **app-time** (Xu & Subhlok 2008, §5: the skeleton's time keeps the ratio it had to the application
//!   where it was recorded): given one application time T measured here, the skeleton runs once
//!   as built and once with no computation (`--compute-scale 0`). Its predicted time by ratio is
//!   nearly linear in the compute scale c, P(c) ≈ P₀ + c·(P₁ − P₀), so c = (T − P₀) / (P₁ − P₀);
//!   up to three check runs refine c by secant steps until P(c) is within 2 % of T.
//! - **work**: compute blocks become a fixed number of kernel iterations, the recording
//!   machine's rate times the recorded seconds, instead of recorded seconds re-timed on each
//!   machine; a slower processor then takes longer, as the application would. Run it where the
//!   trace was recorded (or give that machine's rate with --rate). Under SimGrid, compute blocks
//!   are simulated work already.
//!
//! The result is stored in skeleton.json (`tuning`) and tuning.args, which `mpiskel run` and
//! run.sh pass to the skeleton.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::native::{Case, Options};
use super::report::RetuneRow;
use super::Progress;
use crate::build::{read_skeleton_document, Tuning};
use crate::compress::write_atomic;
use crate::run::{run_skeleton, Mpi, RunArgs, RunReport};

/// Adjust a skeleton's compute blocks for the machine it now runs on.
///
/// With --app-time T (the application's time measured on this machine, seconds): scales every
/// compute block so that the skeleton's prediction by ratio gives T here, as Xu & Subhlok's method
/// does (two runs of the skeleton: as built and without computation). Predictions for other
/// settings of this machine (another network, a CPU share) then start from the right compute
/// speed.
///
/// With --work: compute blocks become a fixed amount of kernel work, this machine's kernel rate
/// (or --rate) × the recorded seconds, so that on a slower processor they take longer. Run it
/// on the machine where the trace was recorded, then take the skeleton elsewhere.
///
/// --reset removes the tuning. The tuning is stored in DIR/skeleton.json and DIR/tuning.args;
/// `mpiskel run` and run.sh apply it (`mpiskel run --untuned` does not).
///
/// Examples:
///   mpiskel retune halo.skel --app-time 12.7
///   mpiskel retune bt.skel --app-time 0.62 --mpi smpi --platform speedhalf.xml --hostfile hosts.txt
///   mpiskel retune halo.skel --work            # on the recording machine
///   mpiskel retune halo.skel --reset
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RetuneArgs {
    /// The application's time on this machine, seconds.
    #[arg(long, value_name = "SECONDS", conflicts_with_all = ["work", "reset"])]
    app_time: Option<f64>,
    /// Make compute blocks a fixed amount of work (this machine's kernel rate, or --rate).
    #[arg(long, conflicts_with = "reset")]
    work: bool,
    /// Kernel iterations per second of the recording machine (with --work).
    #[arg(long, value_name = "PER_SECOND", requires = "work")]
    rate: Option<f64>,
    /// Remove the tuning.
    #[arg(long)]
    reset: bool,
    /// How to run the skeleton (the options of `mpiskel run`).
    #[command(flatten)]
    run: RunArgs,
}

/// Relative distance from the application time at which app-time retuning stops.
const TOLERANCE: f64 = 0.02;
/// Check runs (secant steps) of app-time retuning at most.
const MAX_STEPS: usize = 3;

/// Runs the skeleton untuned with extra skeleton options.
fn run_untuned(base: &RunArgs, extra: &[&str]) -> Result<RunReport> {
    let mut a = base.clone();
    a.untuned = true;
    a.skeleton_args.extend(extra.iter().map(|s| s.to_string()));
    Ok(run_skeleton(&a)?.0)
}

/// The compute scale that makes the ratio prediction `target`, from runs at scale 1 and 0.
pub fn scale_for(target: f64, full: f64, no_compute: f64) -> Result<f64> {
    let compute = full - no_compute;
    if compute <= 0.0 || !compute.is_finite() {
        bail!("the skeleton's computation takes no measurable time here ({full} s with it, {no_compute} s without): nothing to scale");
    }
    let c = (target - no_compute) / compute;
    if c <= 0.0 {
        bail!("the application time {target} s is below the skeleton's communication alone ({no_compute} s predicted): it cannot be reached by scaling computation");
    }
    Ok(c)
}

/// Stores `tuning` in the skeleton folder (None: removes it).
pub fn store(dir: &Path, tuning: Option<Tuning>) -> Result<()> {
    let mut doc = read_skeleton_document(dir)?
        .with_context(|| format!("{}: not a skeleton folder (no skeleton.json)", dir.display()))?;
    let args = dir.join("tuning.args");
    match &tuning {
        Some(t) => write_atomic(&args, &format!("{}\n", t.skeleton_args().join(" ")))?,
        None => {
            if args.exists() {
                std::fs::remove_file(&args)
                    .with_context(|| format!("removing {}", args.display()))?;
            }
        }
    }
    doc.tuning = tuning;
    write_atomic(&dir.join("skeleton.json"), &serde_json::to_string_pretty(&doc)?)
}

/// Finds the tuning of one mode; returns it with the untuned report.
pub fn tune(
    base: &RunArgs,
    app_time: Option<f64>,
    rate: Option<f64>,
) -> Result<(Tuning, RunReport)> {
    let before = run_untuned(base, &[])?;
    if let Some(t) = app_time {
        anyhow::ensure!(t > 0.0 && t.is_finite(), "--app-time must be a positive number");
        let none = run_untuned(base, &["--compute-scale", "0"])?;
        let mut c = scale_for(t, before.predicted_ratio_s, none.predicted_ratio_s)?;
        // Where computation and communication overlap (or a CPU quota throttles), time is not
        // quite linear in the scale: a few secant steps from the last two points.
        let mut last = (1.0, before.predicted_ratio_s);
        let mut steps = 0;
        for _ in 0..MAX_STEPS {
            let r = run_untuned(base, &["--compute-scale", &format!("{c}")])?.predicted_ratio_s;
            steps += 1;
            if (r / t - 1.0).abs() <= TOLERANCE || (r - last.1).abs() < 1e-12 {
                break;
            }
            let next = c + (t - r) * (c - last.0) / (r - last.1);
            last = (c, r);
            if !(next > 0.0 && next.is_finite()) {
                break;
            }
            c = next;
        }
        let note = format!(
            "application {t} s here; skeleton predicted {:.6} s by ratio as built, {:.6} s without computation; {steps} check runs",
            before.predicted_ratio_s, none.predicted_ratio_s
        );
        return Ok((
            Tuning { mode: "app-time".into(), compute_scale: Some(c), compute_rate: None, note },
            before,
        ));
    }
    if base.mpi == Mpi::Smpi {
        bail!("under SimGrid, compute blocks are simulated work already (--work is for real machines)");
    }
    let (r, note) = match rate {
        Some(r) => {
            anyhow::ensure!(r > 0.0 && r.is_finite(), "--rate must be a positive number");
            (r, "rate given".to_string())
        }
        None => (before.compute_rate, format!("kernel rate measured on {}", hostname())),
    };
    Ok((Tuning { mode: "work".into(), compute_scale: None, compute_rate: Some(r), note }, before))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string()
}

pub fn retune(a: RetuneArgs) -> Result<ExitCode> {
    let dir = a.run.dir.clone();
    if a.reset {
        store(&dir, None)?;
        println!("{}: tuning removed", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    if a.app_time.is_none() && !a.work {
        bail!("say how to retune: --app-time SECONDS, --work, or --reset");
    }
    let (tuning, before) = tune(&a.run, a.app_time, a.rate)?;
    store(&dir, Some(tuning.clone()))?;
    let (after, _) = run_skeleton(&a.run)?;
    println!("{}: {} ({})", dir.display(), tuning.skeleton_args().join(" "), tuning.note);
    println!(
        "  predicted application time: {:.6} s by ratio, {:.6} s by phase before; {:.6} s, {:.6} s after",
        before.predicted_ratio_s, before.predicted_s, after.predicted_ratio_s, after.predicted_s
    );
    Ok(ExitCode::SUCCESS)
}

/// SimGrid: app-time retuning on the CPU-speed-½ platform, given NPB's median time there.
pub fn smpi(
    npb: &Path,
    traces: &[String],
    work: &Path,
    progress: &Progress,
) -> Result<Vec<RetuneRow>> {
    let s = super::smpi::select(&["speedhalf".to_string()])?[0];
    let platforms = npb.join("platforms");
    let mut rows = Vec::new();
    for t in traces {
        let Some(truth) = super::smpi::truth_of(npb, t, s.name)? else {
            progress.say(&format!("{t} {}: no ground truth in the fixtures; not retuned", s.name));
            continue;
        };
        let dir = work.join("retune").join(t);
        super::build_skeleton(&npb.join(t).join("trace.txt"), &dir, &[])?;
        let mut a = RunArgs::new(&dir, Mpi::Smpi);
        a.platform = Some(platforms.join("speedhalf.xml"));
        a.hostfile = Some(platforms.join("hostfile_1perhost.txt"));
        // A skeleton whose communication alone, times its factor, passes the application
        // cannot be retuned by ratio: say so and go on with the other traces.
        let (tuning, before) = match tune(&a, Some(truth.real.median), None) {
            Ok(x) => x,
            Err(e) => {
                progress.say(&format!("{t} {}: not retuned: {e:#}", s.name));
                continue;
            }
        };
        store(&dir, Some(tuning.clone()))?;
        let (after, _) = run_skeleton(&a)?;
        progress.say(&format!(
            "{t} retuned on {}: scale {:.3}, {:.4} s → {:.4} s by ratio",
            s.name,
            tuning.compute_scale.unwrap_or(1.0),
            before.predicted_ratio_s,
            after.predicted_ratio_s
        ));
        rows.push(RetuneRow {
            suite: "smpi".into(),
            case: t.clone(),
            scenario: s.name.into(),
            mode: "app-time".into(),
            setting: format!(
                "given NPB's median there; compute × {:.3}",
                tuning.compute_scale.unwrap_or(1.0)
            ),
            truth: truth.real,
            replay: truth.replay,
            ratio_before: before.predicted_ratio_s,
            ratio_after: after.predicted_ratio_s,
            phase_before: before.predicted_s,
            phase_after: after.predicted_s,
        });
    }
    Ok(rows)
}

/// Real MPI, under a 50 % CPU quota: app-time retuning given the application's first run
/// there (checked against the median of the following runs), and work retuning with the kernel
/// rate measured without the quota.
pub fn native(cases: &[Case], o: &Options, progress: &Progress) -> Result<Vec<RetuneRow>> {
    let mut rows = Vec::new();
    for case in cases {
        rows.extend(super::native::retune_under_quota(case, 50, o, progress)?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_meets_the_target_on_the_line() {
        // 2 s with computation, 0.5 s without: 1.5 s of computation; 3.5 s needs ×2.
        assert!((scale_for(3.5, 2.0, 0.5).unwrap() - 2.0).abs() < 1e-12);
        assert!(scale_for(0.4, 2.0, 0.5).is_err(), "below communication alone");
        assert!(scale_for(1.0, 0.5, 0.5).is_err(), "no computation to scale");
    }
}
