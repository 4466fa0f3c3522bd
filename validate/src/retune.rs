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

use crate::error::{bail, ensure, Context, Result};

use crate::prepare::write_atomic;
use mpiskel_emit::document::{self, Tuning};
use mpiskel_make::observe::Quiet;
use mpiskel_make::run::{run_skeleton, Mpi, RunOptions, RunReport};

/// Relative distance from the application time at which app-time retuning stops.
const TOLERANCE: f64 = 0.02;
/// Check runs (secant steps) of app-time retuning at most.
const MAX_STEPS: usize = 3;

/// Runs the skeleton untuned with extra skeleton options.
fn run_untuned(base: &RunOptions, extra: &[&str]) -> Result<RunReport> {
    let mut a = base.clone();
    a.untuned = true;
    a.skeleton_args.extend(extra.iter().map(|s| s.to_string()));
    Ok(run_skeleton(&a, &Quiet)?.0)
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
    let mut doc = document::read(dir)?
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
    base: &RunOptions,
    app_time: Option<f64>,
    rate: Option<f64>,
) -> Result<(Tuning, RunReport)> {
    let before = run_untuned(base, &[])?;
    if let Some(t) = app_time {
        ensure!(t > 0.0 && t.is_finite(), "--app-time must be a positive number");
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
            ensure!(r > 0.0 && r.is_finite(), "--rate must be a positive number");
            (r, "rate given".to_string())
        }
        None => (before.compute_rate, format!("kernel rate measured on {}", hostname())),
    };
    Ok((Tuning { mode: "work".into(), compute_scale: None, compute_rate: Some(r), note }, before))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string()
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
