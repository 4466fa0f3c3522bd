//! The SimGrid suite: NPB skeletons run under SMPI on the fixtures' foreign platforms, against
//! NPB itself on those platforms and against SimGrid's replay of the full trace (both in the
//! fixture's `ground-truth.csv`).

use std::path::{Path, PathBuf};

use crate::error::{bail, Context, Error, Result};

use crate::tables::{RetuneRow, Row, Stat};
use mpiskel_emit::document;
use mpiskel_make::observe::{Observer, Quiet};
use mpiskel_make::run::{run_skeleton, Mpi, RunOptions};

/// One simulated platform.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub class: &'static str,
    pub setting: &'static str,
    platform: &'static str,
    hostfile: &'static str,
    cfg: &'static [&'static str],
}

const fn sc(
    name: &'static str,
    class: &'static str,
    setting: &'static str,
    platform: &'static str,
    hostfile: &'static str,
    cfg: &'static [&'static str],
) -> Scenario {
    Scenario { name, class, setting, platform, hostfile, cfg }
}

const ONE: &str = "hostfile_1perhost.txt";

/// The scenarios of `../shared/fixtures/npb/platforms` (see its README).
pub const SCENARIOS: &[Scenario] = &[
    sc("ref", "reference", "1 Gflop/s hosts, 10 Gb/s 1 µs links", "ref.xml", ONE, &[]),
    sc("bw50MBps", "bandwidth", "links at 50 MB/s", "bw50MBps.xml", ONE, &[]),
    sc("bw20MBps", "bandwidth", "links at 20 MB/s", "bw20MBps.xml", ONE, &[]),
    sc("bw5MBps", "bandwidth", "links at 5 MB/s", "bw5MBps.xml", ONE, &[]),
    sc("lat10x", "latency", "10 µs links", "lat10x.xml", ONE, &[]),
    sc("speedhalf", "CPU speed", "hosts at 0.5 Gflop/s", "speedhalf.xml", ONE, &[]),
    sc(
        "share2",
        "shared processors",
        "16 ranks on 8 hosts",
        "ref.xml",
        "hostfile_2perhost.txt",
        &[],
    ),
    sc(
        "share4",
        "shared processors",
        "16 ranks on 4 hosts",
        "ref.xml",
        "hostfile_4perhost.txt",
        &[],
    ),
    sc(
        "coll_mpich",
        "collectives",
        "MPICH's algorithms",
        "ref.xml",
        ONE,
        &["smpi/coll-selector:mpich"],
    ),
    sc(
        "coll_ompi",
        "collectives",
        "OpenMPI's algorithms",
        "ref.xml",
        ONE,
        &["smpi/coll-selector:ompi"],
    ),
    sc(
        "coll_ompi_nb",
        "collectives",
        "OpenMPI's, default bcast",
        "ref.xml",
        ONE,
        &["smpi/coll-selector:ompi", "smpi/bcast:default"],
    ),
];

/// One row of `ground-truth.csv`: (real median, min, max, runs, replay).
#[derive(Debug, Clone, Copy)]
pub struct Truth {
    pub real: Stat,
    pub replay: Option<f64>,
}

/// The columns of `ground-truth.csv` that name a row.
#[derive(Debug, serde::Deserialize)]
struct TruthKey {
    benchmark: String,
    class: String,
    np: String,
    scenario: String,
}

/// The figures of a row of `ground-truth.csv` (read only for the row asked for).
#[derive(Debug, serde::Deserialize)]
struct TruthRow {
    real_runs: f64,
    real_median_s: f64,
    real_min_s: f64,
    real_max_s: f64,
    /// Empty where SimGrid's replay did not run.
    replay_s: Option<f64>,
}

/// The ground-truth row of a trace in a scenario; `None` where the file has none.
fn read_truth(
    csv: &Path,
    bench: &str,
    class: &str,
    np: &str,
    scenario: &str,
) -> Result<Option<Truth>> {
    let mut reader =
        csv::Reader::from_path(csv).with_context(|| format!("reading {}", csv.display()))?;
    let headers = reader.headers().with_context(|| format!("reading {}", csv.display()))?.clone();
    for (i, record) in reader.records().enumerate() {
        // Line i + 2: the header is line 1.
        let line = || format!("{} line {}", csv.display(), i + 2);
        let record = record.with_context(line)?;
        let k: TruthKey = record.deserialize(Some(&headers)).with_context(line)?;
        if (k.benchmark.as_str(), k.class.as_str(), k.np.as_str(), k.scenario.as_str())
            != (bench, class, np, scenario)
        {
            continue;
        }
        let r: TruthRow = record.deserialize(Some(&headers)).map_err(|e| {
            // Name the column and the text in it, not only the field's number.
            let field = match e.kind() {
                csv::ErrorKind::Deserialize { err, .. } => err.field().map(|f| f as usize),
                _ => None,
            };
            match field {
                Some(f) => Error::Failed(format!(
                    "{}: column {:?} is {:?}, not a number",
                    line(),
                    headers.get(f).unwrap_or("?"),
                    record.get(f).unwrap_or("")
                )),
                None => Error::Context { context: line(), error: Box::new(e.into()) },
            }
        })?;
        return Ok(Some(Truth {
            real: Stat {
                median: r.real_median_s,
                min: r.real_min_s,
                max: r.real_max_s,
                runs: r.real_runs as usize,
            },
            replay: r.replay_s,
        }));
    }
    Ok(None)
}

/// The ground truth of NPB trace `t` (`bt.W.16`) in `scenario`; `None` where there is none.
pub fn truth_of(npb: &Path, t: &str, scenario: &str) -> Result<Option<Truth>> {
    let parts: Vec<&str> = t.split('.').collect();
    let [bench, class, np] = parts[..] else {
        bail!("{t}: expected an NPB trace name like bt.W.16");
    };
    read_truth(&npb.join("ground-truth.csv"), bench, class, np, scenario)
}

/// Every NPB trace of the fixtures (`<bench>.<class>.<ranks>/trace.txt`), sorted.
pub fn all_traces(npb: &Path) -> Result<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(npb)
        .with_context(|| format!("reading {}", npb.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("trace.txt").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Ok(v)
}

/// Builds the C skeleton of each trace and runs it in each scenario, `reps` times with the
/// seeds 0, 1, … of its drawn compute durations (a simulated run is deterministic given its
/// seed: the repetitions show how much the prediction depends on the draws).
pub fn run(
    npb: &Path,
    traces: &[String],
    scenarios: &[Scenario],
    work: &Path,
    reps: usize,
    progress: &dyn Observer,
) -> Result<Vec<Row>> {
    let platforms = npb.join("platforms");
    let mut rows = Vec::new();
    for t in traces {
        let trace = npb.join(t).join("trace.txt");
        let dir: PathBuf = work.join("skeletons").join(t);
        progress.line(&format!("{t}: building the skeleton"));
        // On the reference platform, where the trace was recorded: the factor counts what the
        // messages take there, which a time-independent trace does not record.
        let reference = (platforms.join("ref.xml"), platforms.join(ONE));
        crate::prepare::build_skeleton_on(&trace, &dir, Some(&reference))?;
        let main_iterations = document::read(&dir)?.map(|d| d.scaling.main_full).filter(|&n| n > 1);
        for s in scenarios {
            let Some(truth) = truth_of(npb, t, s.name)? else {
                progress.line(&format!("{t} {}: no ground truth in the fixtures; skipped", s.name));
                continue;
            };
            let (mut skeleton, mut by_phase, mut by_ratio) = (Vec::new(), Vec::new(), Vec::new());
            let mut ranks = 0;
            for seed in 0..reps.max(1) {
                let mut a = RunOptions::new(&dir, Mpi::Smpi);
                a.platform = Some(platforms.join(s.platform));
                a.hostfile = Some(platforms.join(s.hostfile));
                a.smpi_cfg = s.cfg.iter().map(|c| c.to_string()).collect();
                if seed > 0 {
                    a.skeleton_args = vec!["--seed".into(), seed.to_string()];
                }
                let (r, _) = run_skeleton(&a, &Quiet)
                    .with_context(|| format!("{t} in scenario {}", s.name))?;
                progress.line(&format!(
                    "{t} {}{}: {:.4} s predicted, {} real, replay {}",
                    s.name,
                    if reps > 1 { format!(" (seed {seed})") } else { String::new() },
                    r.predicted_s,
                    truth.real.median,
                    truth.replay.map(|x| x.to_string()).unwrap_or_else(|| "–".into())
                ));
                skeleton.push(r.skeleton_s);
                by_phase.push(r.predicted_s);
                by_ratio.push(r.predicted_ratio_s);
                ranks = r.ranks;
            }
            rows.push(Row {
                suite: "smpi".into(),
                case: t.clone(),
                ranks,
                scenario: s.name.into(),
                class: s.class.into(),
                setting: s.setting.into(),
                skeleton: Stat::of(&skeleton),
                by_phase: Stat::of(&by_phase),
                by_ratio: Stat::of(&by_ratio),
                truth: truth.real,
                replay: truth.replay,
                main_iterations,
            });
        }
    }
    Ok(rows)
}

/// The scenarios named (all when none are).
pub fn select(names: &[String]) -> Result<Vec<Scenario>> {
    crate::prepare::pick(SCENARIOS, names, |s| s.name, "SimGrid scenario")
}

/// SimGrid: app-time retuning on the CPU-speed-½ platform, given NPB's median time there.
pub fn retune(
    npb: &Path,
    traces: &[String],
    work: &Path,
    progress: &dyn Observer,
) -> Result<Vec<RetuneRow>> {
    let s = select(&["speedhalf".to_string()])?[0];
    let platforms = npb.join("platforms");
    let mut rows = Vec::new();
    for t in traces {
        let Some(truth) = truth_of(npb, t, s.name)? else {
            progress.line(&format!("{t} {}: no ground truth in the fixtures; not retuned", s.name));
            continue;
        };
        let dir = work.join("retune").join(t);
        crate::prepare::build_skeleton(&npb.join(t).join("trace.txt"), &dir)?;
        let mut a = RunOptions::new(&dir, Mpi::Smpi);
        a.platform = Some(platforms.join("speedhalf.xml"));
        a.hostfile = Some(platforms.join("hostfile_1perhost.txt"));
        // A skeleton whose communication alone, times its factor, passes the application
        // cannot be retuned by ratio: say so and go on with the other traces.
        let (tuning, before) = match crate::retune::tune(&a, Some(truth.real.median), None) {
            Ok(x) => x,
            Err(e) => {
                progress.line(&format!("{t} {}: not retuned: {e:#}", s.name));
                continue;
            }
        };
        crate::retune::store(&dir, Some(tuning.clone()))?;
        let (after, _) = run_skeleton(&a, &Quiet)?;
        progress.line(&format!(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ground_truth_rows_are_found_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("g.csv");
        std::fs::write(
            &csv,
            "benchmark,class,np,scenario,real_runs,real_median_s,real_min_s,real_max_s,npb_timed_median_s,replay_s\n\
             bt,W,16,ref,8,0.32,0.28,0.37,0.3,0.33\n\
             bt,W,16,coll_ompi,3,0.32,0.31,0.33,0.31,\n\
             bt,W,16,bad,3,x,0.31,0.33,0.31,\n",
        )
        .unwrap();
        let t = read_truth(&csv, "bt", "W", "16", "ref").unwrap().unwrap();
        assert_eq!((t.real.median, t.real.runs, t.replay), (0.32, 8, Some(0.33)));
        assert_eq!(read_truth(&csv, "bt", "W", "16", "coll_ompi").unwrap().unwrap().replay, None);
        let e = read_truth(&csv, "bt", "W", "16", "bad").unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("real_median_s"), "{e}");
        assert!(read_truth(&csv, "cg", "W", "16", "ref").unwrap().is_none());
    }
}
