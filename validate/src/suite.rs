//! The validation suites: how well skeletons predict their applications when conditions change.
//!
//! Two suites. `smpi`: skeletons of NPB traces run under SimGrid on the fixtures' foreign
//! platforms ([`crate::smpi`]). `native`: applications and their skeletons run here with real
//! MPI, under a bandwidth limit, a CPU quota and the other MPI library ([`crate::native`], set
//! up and torn down by [`mpiskel_make::harness`]). The results go to `results.json`, per-suite SVG
//! charts, and a Markdown report ([`crate::tables`]); `mpiskel retune` is measured as part of
//! the run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{bail, ensure, Context, Result};
use crate::prepare::write_atomic;
use crate::tables::{self as report, Validation};
use crate::{native, smpi};
use mpiskel_make::observe::Observer;

/// The suites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// NPB skeletons under SimGrid SMPI on the fixtures' platforms.
    Smpi,
    /// Applications and skeletons with real MPI on this machine.
    Native,
}

/// What to validate (`mpiskel validate`'s options).
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// Which suites to run.
    pub suites: Vec<Suite>,
    /// Folder for results, charts, skeletons and traces.
    pub output: PathBuf,
    /// The Markdown report (`None`: DIR/VALIDATION.md).
    pub markdown: Option<PathBuf>,
    /// The shared fixtures folder (holding npb/) (`None`: $MPISKEL_SHARED/fixtures, else
    /// ../shared/fixtures).
    pub fixtures: Option<PathBuf>,
    /// NPB traces of the smpi suite (empty: every one of the fixtures' npb/ folder).
    pub traces: Vec<String>,
    /// Applications of the native suite (empty: all).
    pub cases: Vec<String>,
    /// Scenarios, by name, of either suite (empty: all).
    pub scenarios: Vec<String>,
    /// Repetitions of each native run; under SimGrid, seeds of the drawn compute durations.
    pub reps: usize,
    /// The fixture programs' folder (their Makefile).
    pub programs: PathBuf,
    /// Seconds before one run is killed.
    pub timeout: u64,
    /// Only re-render the report from DIR/results.json.
    pub from_json: bool,
    /// The mpiskel executable, which records the native suite's applications (`mpiskel trace`,
    /// inside the scenario's namespace or cgroup).
    pub mpiskel: PathBuf,
}

const BEGIN: &str = "<!-- validate: begin -->";
const END: &str = "<!-- validate: end -->";

/// The generated part of the report.
fn generated(v: &Validation, dir: &Path, md_path: &Path) -> String {
    let rel = |f: &str| {
        let p = dir.join(f);
        let base = md_path.parent().filter(|p| !p.as_os_str().is_empty());
        match base {
            Some(b) => p.strip_prefix(b).map(Path::to_path_buf).unwrap_or(p),
            None => p,
        }
        .display()
        .to_string()
    };
    let mut o = String::new();
    o.push_str(BEGIN);
    o.push('\n');
    o.push_str(&format!("\nMeasured on {}.\n\n", v.machine));
    o.push_str("## Summary per scenario class\n\n");
    o.push_str(&report::summary_markdown(v));
    if v.rows.iter().any(|r| r.suite == "smpi") {
        o.push_str("## SimGrid SMPI: every scenario\n\n");
        o.push_str(&format!("![predicted against replay]({})\n\n", rel("smpi.svg")));
        o.push_str(&report::rows_markdown(v, "smpi"));
        o.push('\n');
    }
    if v.rows.iter().any(|r| r.suite == "native") {
        o.push_str("## Real MPI on this machine: every scenario\n\n");
        o.push_str(&format!("![predicted against measured]({})\n\n", rel("native.svg")));
        o.push_str(&report::rows_markdown(v, "native"));
        o.push('\n');
    }
    if !v.retune.is_empty() {
        o.push_str("## `mpiskel retune`\n\n");
        o.push_str(&report::retune_markdown(v));
        o.push('\n');
    }
    o.push_str(END);
    o.push('\n');
    o
}

/// Puts the generated part into the report, keeping what surrounds its markers.
fn splice(old: Option<&str>, gen: &str) -> String {
    if let Some(old) = old {
        if let (Some(a), Some(b)) = (old.find(BEGIN), old.find(END)) {
            if a < b {
                let after = &old[b + END.len()..];
                return format!(
                    "{}{}{}",
                    &old[..a],
                    gen,
                    after.strip_prefix('\n').unwrap_or(after)
                );
            }
        }
    }
    format!("# Validation\n\nRegenerate with `make validate`.\n\n{gen}")
}

fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "an unknown processor".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let date = Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("{} ({cores} cores, {cpu}), {date}", host.trim())
}

/// Runs the suites (or, with `from_json`, reads their results back) and writes the results,
/// the charts and the Markdown report; returns the results. Whether targets were missed is
/// [`report::missed_targets`] of them.
pub fn validate(a: &ValidateOptions, progress: &dyn Observer) -> Result<Validation> {
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("creating {}", a.output.display()))?;
    let json_path = a.output.join("results.json");
    let md_path = a.markdown.clone().unwrap_or_else(|| a.output.join("VALIDATION.md"));
    let v: Validation = if a.from_json {
        let text = std::fs::read_to_string(&json_path)
            .with_context(|| format!("reading {}", json_path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", json_path.display()))?
    } else {
        mpiskel_make::harness::install_signal_handler()?;
        let fixtures = a.fixtures.clone().unwrap_or_else(default_fixtures);
        let mut v = Validation { machine: machine(), ..Default::default() };
        let names = |known: &[&str]| -> Vec<String> {
            a.scenarios.iter().filter(|s| known.contains(&s.as_str())).cloned().collect()
        };
        let smpi_known: Vec<&str> = smpi::SCENARIOS.iter().map(|s| s.name).collect();
        let native_known: Vec<&str> = native::SCENARIOS.iter().map(|s| s.name).collect();
        if let Some(u) = a
            .scenarios
            .iter()
            .find(|s| !smpi_known.contains(&s.as_str()) && !native_known.contains(&s.as_str()))
        {
            bail!(
                "unknown scenario {u:?} (SimGrid: {}; native: {})",
                smpi_known.join(", "),
                native_known.join(", ")
            );
        }
        let run_smpi = a.suites.contains(&Suite::Smpi)
            && (a.scenarios.is_empty() || !names(&smpi_known).is_empty());
        let run_native = a.suites.contains(&Suite::Native)
            && (a.scenarios.is_empty() || !names(&native_known).is_empty());
        ensure!(a.reps >= 1, "--reps must be at least 1");
        if run_smpi {
            let npb = fixtures.join("npb");
            if !npb.join("ground-truth.csv").exists() {
                bail!("{}: no NPB fixtures (ground-truth.csv); use --fixtures", npb.display());
            }
            let scenarios = smpi::select(&names(&smpi_known))?;
            let traces =
                if a.traces.is_empty() { smpi::all_traces(&npb)? } else { a.traces.clone() };
            v.rows.extend(smpi::run(&npb, &traces, &scenarios, &a.output, a.reps, progress)?);
            v.retune.extend(smpi::retune(&npb, &traces, &a.output, progress)?);
        }
        if run_native {
            let (cases, scenarios) = native::select(&a.cases, &names(&native_known))?;
            let o = native::Options {
                programs: &a.programs,
                work: &a.output,
                reps: a.reps,
                timeout: Duration::from_secs(a.timeout),
                mpiskel: &a.mpiskel,
            };
            v.rows.extend(native::run(&cases, &scenarios, &o, progress)?);
            if scenarios.iter().any(|s| s.name == "quota50") {
                v.retune.extend(native::retune(&cases, &o, progress)?);
            }
        }
        write_atomic(&json_path, &serde_json::to_string_pretty(&v)?)?;
        v
    };
    for suite in ["smpi", "native"] {
        if v.rows.iter().any(|r| r.suite == suite) {
            let title = match suite {
                "smpi" => "NPB skeletons under SimGrid: per-phase prediction against the replay",
                _ => "Skeletons with real MPI: per-phase prediction against the application",
            };
            write_atomic(
                &a.output.join(format!("{suite}.svg")),
                &report::chart_svg(&v, suite, title)?,
            )?;
        }
    }
    let old = std::fs::read_to_string(&md_path).ok();
    write_atomic(&md_path, &splice(old.as_deref(), &generated(&v, &a.output, &md_path)))?;
    progress.line(&format!("wrote {}, {}", json_path.display(), md_path.display()));
    Ok(v)
}

/// `$MPISKEL_SHARED/fixtures`, else `../shared/fixtures`.
pub fn default_fixtures() -> PathBuf {
    match std::env::var_os("MPISKEL_SHARED") {
        Some(s) => PathBuf::from(s).join("fixtures"),
        None => PathBuf::from("../shared/fixtures"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_keeps_the_text_around_its_markers() {
        let old = format!("# V\n\nintro\n\n{BEGIN}\nold tables\n{END}\n\n## Analysis\n\ntext\n");
        let new = splice(Some(&old), &format!("{BEGIN}\nnew\n{END}\n"));
        assert_eq!(new, format!("# V\n\nintro\n\n{BEGIN}\nnew\n{END}\n\n## Analysis\n\ntext\n"));
        let fresh = splice(None, "x\n");
        assert!(fresh.starts_with("# Validation") && fresh.ends_with("x\n"));
    }
}
