//! The validation results, and their Markdown tables and SVG charts.
//!
//! Errors are signed, `predicted / truth − 1`, in percent. A row has one main ground truth
//! (the application itself: NPB run under SimGrid, or the program run natively here) and, for
//! SimGrid scenarios, SimGrid's replay of the full trace — both a second ground truth (the
//! skeleton's method error, without measurement noise) and a peer predictor of the real run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use mpiskel_report::svg::{Chart, ChartPoint};
use mpiskel_report::ReportError;
use serde::{Deserialize, Serialize};

/// Median, minimum and maximum of repeated measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

impl Stat {
    /// The statistics of `v` (not empty).
    pub fn of(v: &[f64]) -> Stat {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Stat {
            median,
            min: s.first().copied().unwrap_or(f64::NAN),
            max: s.last().copied().unwrap_or(f64::NAN),
            runs: n,
        }
    }

    /// The spread around the median, percent: (below, above).
    pub fn spread(&self) -> (f64, f64) {
        ((self.min / self.median - 1.0) * 100.0, (self.max / self.median - 1.0) * 100.0)
    }
}

/// Signed error of `predicted` against `truth`, percent.
pub fn err(predicted: f64, truth: f64) -> f64 {
    (predicted / truth - 1.0) * 100.0
}

/// One (case, scenario) measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// `smpi` or `native`.
    pub suite: String,
    /// The application (`bt.W.16`, `halo2d`, `lammps-melt`).
    pub case: String,
    pub ranks: u32,
    /// The scenario (`bw5MBps`, `quota50`).
    pub scenario: String,
    /// Its class (`bandwidth`, `shared processors` …).
    pub class: String,
    /// What the scenario is, in words.
    pub setting: String,
    /// Measured skeleton time.
    pub skeleton: Stat,
    /// Predicted application time, per phase.
    pub by_phase: Stat,
    /// Predicted application time, skeleton time × the recorded factor.
    pub by_ratio: Stat,
    /// The application's time in the scenario (SMPI: NPB under SimGrid; native: the program).
    pub truth: Stat,
    /// SimGrid's replay of the full trace in the scenario, where there is one.
    pub replay: Option<f64>,
    /// Iterations of the skeleton's main loop in the application (SMPI suite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_iterations: Option<u64>,
}

/// Targets of the SimGrid suite, against the replay: mean |error| per scenario class, |error| of
/// each case, and skeleton time over the replay's (a twentieth where the main loop has at least
/// 20 iterations, a twelfth otherwise).
pub const TARGET_CLASS_MEAN: f64 = 3.0;
/// See [`TARGET_CLASS_MEAN`].
pub const TARGET_CASE: f64 = 8.0;

/// Every target of the SimGrid suite the rows miss, in words (empty: all met).
pub fn missed_targets(v: &Validation) -> Vec<String> {
    let mut missed = Vec::new();
    for (class, rows) in by_class(&v.rows, "smpi") {
        let errors: Vec<(&Row, f64)> = rows
            .iter()
            .filter_map(|r| r.replay.map(|rep| (*r, err(r.by_phase.median, rep))))
            .collect();
        if errors.is_empty() {
            continue;
        }
        let mean = errors.iter().map(|e| e.1.abs()).sum::<f64>() / errors.len() as f64;
        if mean > TARGET_CLASS_MEAN {
            missed.push(format!(
                "{class}: mean |error| {mean:.1} % over {} cases (target {TARGET_CLASS_MEAN} %)",
                errors.len()
            ));
        }
        for (r, e) in &errors {
            if e.abs() > TARGET_CASE {
                missed.push(format!(
                    "{} {}: error {e:+.1} % (target ±{TARGET_CASE} %)",
                    r.case, r.scenario
                ));
            }
            let rep = r.replay.unwrap_or(f64::NAN);
            let (limit, what) = match r.main_iterations {
                Some(n) if n >= 20 => (1.0 / 20.0, "a twentieth"),
                _ => (1.0 / 12.0, "a twelfth"),
            };
            let share = r.skeleton.median / rep;
            if share > limit {
                missed.push(format!(
                    "{} {}: skeleton {share:.3} of the replay (target {what})",
                    r.case, r.scenario
                ));
            }
        }
    }
    missed
}

/// A retuned skeleton against the application, in one scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RetuneRow {
    pub suite: String,
    pub case: String,
    pub scenario: String,
    /// `app-time` or `work`.
    pub mode: String,
    /// What was given to or measured by `mpiskel retune`.
    pub setting: String,
    /// The application's time there.
    pub truth: Stat,
    /// SimGrid's replay of the full trace there, where there is one.
    pub replay: Option<f64>,
    /// Predictions (by ratio, by phase) before and after retuning.
    pub ratio_before: f64,
    pub ratio_after: f64,
    pub phase_before: f64,
    pub phase_after: f64,
}

/// Everything one `mpiskel validate` run measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Validation {
    /// The machine and date of the measurements.
    pub machine: String,
    pub rows: Vec<Row>,
    #[serde(default)]
    pub retune: Vec<RetuneRow>,
}

fn mean_max(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let a: Vec<f64> = v.iter().map(|x| x.abs()).collect();
    (a.iter().sum::<f64>() / a.len() as f64, a.iter().copied().fold(0.0, f64::max))
}

fn pct(x: f64) -> String {
    if x.is_nan() {
        "–".into()
    } else {
        format!("{x:+.1} %")
    }
}

fn mm(v: &[f64]) -> String {
    let (mean, max) = mean_max(v);
    if mean.is_nan() {
        "–".into()
    } else {
        format!("{mean:.1} / {max:.1} %")
    }
}

fn secs(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.2}")
    } else if x >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// Rows grouped by (suite, class), in the order classes first appear.
fn by_class<'a>(rows: &'a [Row], suite: &str) -> Vec<(String, Vec<&'a Row>)> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.suite == suite) {
        if !groups.contains_key(&r.class) {
            order.push(r.class.clone());
        }
        groups.entry(r.class.clone()).or_default().push(r);
    }
    order.into_iter().map(|c| (c.clone(), groups.remove(&c).unwrap_or_default())).collect()
}

/// The summary per scenario class: mean / max |error|.
pub fn summary_markdown(v: &Validation) -> String {
    let mut o = String::new();
    if v.rows.iter().any(|r| r.suite == "smpi") {
        o.push_str("### SimGrid SMPI (NPB)\n\n");
        o.push_str(
            "Mean / max |error|. *Against the replay*: the skeleton's method error (the \
                    replay is deterministic). *Against the real runs*: NPB itself under SimGrid, \
                    whose measured CPU bursts spread by the amount given (max − min over median, \
                    mean over the class); SimGrid's replay of the full trace is the peer.\n\n",
        );
        o.push_str("| class | rows | by phase vs replay | by ratio vs replay | by phase vs real | by ratio vs real | replay vs real (peer) | real runs' spread | skeleton / app (max) |\n");
        o.push_str("|---|---|---|---|---|---|---|---|---|\n");
        let mut all: [Vec<f64>; 5] = Default::default();
        for (class, rows) in by_class(&v.rows, "smpi") {
            let mut e: [Vec<f64>; 5] = Default::default();
            let mut spread = Vec::new();
            let mut ratio: f64 = 0.0;
            for r in &rows {
                if let Some(rep) = r.replay {
                    e[0].push(err(r.by_phase.median, rep));
                    e[1].push(err(r.by_ratio.median, rep));
                    e[4].push(err(rep, r.truth.median));
                }
                e[2].push(err(r.by_phase.median, r.truth.median));
                e[3].push(err(r.by_ratio.median, r.truth.median));
                if r.truth.runs > 1 {
                    spread.push((r.truth.max - r.truth.min) / r.truth.median * 100.0);
                }
                ratio = ratio.max(r.skeleton.median / r.replay.unwrap_or(r.truth.median));
            }
            let spread = if spread.is_empty() {
                "1 run".to_string()
            } else {
                format!("{:.1} %", spread.iter().sum::<f64>() / spread.len() as f64)
            };
            let _ = writeln!(
                o,
                "| {class} | {} | {} | {} | {} | {} | {} | {spread} | {ratio:.3} |",
                rows.len(),
                mm(&e[0]),
                mm(&e[1]),
                mm(&e[2]),
                mm(&e[3]),
                mm(&e[4])
            );
            for (a, b) in all.iter_mut().zip(e) {
                a.extend(b);
            }
        }
        let _ = writeln!(
            o,
            "| **all** | | {} | {} | {} | {} | {} | | |\n",
            mm(&all[0]),
            mm(&all[1]),
            mm(&all[2]),
            mm(&all[3]),
            mm(&all[4])
        );
    }
    if v.rows.iter().any(|r| r.suite == "native") {
        o.push_str("### Real MPI on this machine\n\n");
        o.push_str(
            "Mean / max |error| of the medians against the application's median, beside \
                    the spread of the application's own runs (max − min over median, mean over \
                    the class).\n\n",
        );
        o.push_str("| class | rows | by phase | by ratio | application runs' spread | skeleton / app (max) |\n");
        o.push_str("|---|---|---|---|---|---|\n");
        let mut all: [Vec<f64>; 2] = Default::default();
        for (class, rows) in by_class(&v.rows, "native") {
            let e0: Vec<f64> =
                rows.iter().map(|r| err(r.by_phase.median, r.truth.median)).collect();
            let e1: Vec<f64> =
                rows.iter().map(|r| err(r.by_ratio.median, r.truth.median)).collect();
            let spread = rows
                .iter()
                .map(|r| (r.truth.max - r.truth.min) / r.truth.median * 100.0)
                .sum::<f64>()
                / rows.len() as f64;
            let ratio = rows.iter().map(|r| r.skeleton.median / r.truth.median).fold(0.0, f64::max);
            let _ = writeln!(
                o,
                "| {class} | {} | {} | {} | {spread:.1} % | {ratio:.3} |",
                rows.len(),
                mm(&e0),
                mm(&e1)
            );
            all[0].extend(e0);
            all[1].extend(e1);
        }
        let _ = writeln!(o, "| **all** | | {} | {} | | |\n", mm(&all[0]), mm(&all[1]));
    }
    o
}

/// Every row.
pub fn rows_markdown(v: &Validation, suite: &str) -> String {
    let mut o = String::new();
    let smpi = suite == "smpi";
    if smpi {
        o.push_str("| case | scenario | setting | real (s) | spread | replay (s) | replay vs real | skeleton (s) | by phase (s) | vs replay | vs real | by ratio (s) | vs replay | vs real |\n");
        o.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    } else {
        o.push_str("| case | ranks | scenario | setting | application (s) | spread | runs | skeleton (s) | skeleton / app | by phase (s) | error | by ratio (s) | error |\n");
        o.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    }
    for r in v.rows.iter().filter(|r| r.suite == suite) {
        let (lo, hi) = r.truth.spread();
        let spread =
            if r.truth.runs > 1 { format!("{lo:+.0} / {hi:+.0} %") } else { "1 run".into() };
        if smpi {
            let rep = r.replay.map(secs).unwrap_or_else(|| "–".into());
            let vs = |p: f64| r.replay.map(|x| pct(err(p, x))).unwrap_or_else(|| "–".into());
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {spread} | {rep} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.case,
                r.scenario,
                r.setting,
                secs(r.truth.median),
                r.replay.map(|x| pct(err(x, r.truth.median))).unwrap_or_else(|| "–".into()),
                secs(r.skeleton.median),
                secs(r.by_phase.median),
                vs(r.by_phase.median),
                pct(err(r.by_phase.median, r.truth.median)),
                secs(r.by_ratio.median),
                vs(r.by_ratio.median),
                pct(err(r.by_ratio.median, r.truth.median)),
            );
        } else {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {spread} | {} | {} | {:.3} | {} | {} | {} | {} |",
                r.case,
                r.ranks,
                r.scenario,
                r.setting,
                secs(r.truth.median),
                r.truth.runs,
                secs(r.skeleton.median),
                r.skeleton.median / r.truth.median,
                secs(r.by_phase.median),
                pct(err(r.by_phase.median, r.truth.median)),
                secs(r.by_ratio.median),
                pct(err(r.by_ratio.median, r.truth.median)),
            );
        }
    }
    o
}

/// The retune table.
pub fn retune_markdown(v: &Validation) -> String {
    let mut o = String::new();
    o.push_str("| case | scenario | mode | setting | application (s) | replay (s) | by ratio before | after | by phase before | after |\n");
    o.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for r in &v.retune {
        let t = r.truth.median;
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} ({}) | {} ({}) | {} ({}) | {} ({}) |",
            r.case,
            r.scenario,
            r.mode,
            r.setting,
            secs(t),
            r.replay.map(secs).unwrap_or_else(|| "–".into()),
            secs(r.ratio_before),
            pct(err(r.ratio_before, t)),
            secs(r.ratio_after),
            pct(err(r.ratio_after, t)),
            secs(r.phase_before),
            pct(err(r.phase_before, t)),
            secs(r.phase_after),
            pct(err(r.phase_after, t)),
        );
    }
    o
}

/// Predicted (per phase) against measured, log–log, one colour per class, with the diagonal
/// and a ±8 % band (drawn by [`mpiskel_report::svg::chart_svg`]).
pub fn chart_svg(v: &Validation, suite: &str, title: &str) -> Result<String, ReportError> {
    let truth = |r: &Row| r.replay.unwrap_or(r.truth.median);
    let truth_name = if suite == "smpi" { "replay of the full trace" } else { "application" };
    let chart = Chart {
        title: title.to_owned(),
        x_label: format!("measured: {truth_name} (s)"),
        y_label: "predicted by the skeleton, per phase (s)".into(),
        band: TARGET_CASE / 100.0,
        points: v
            .rows
            .iter()
            .filter(|r| r.suite == suite)
            .map(|r| {
                let (x, y) = (truth(r), r.by_phase.median);
                ChartPoint {
                    series: r.class.clone(),
                    x,
                    y,
                    tip: format!(
                        "{} {}: {} s predicted, {} s measured ({})",
                        r.case,
                        r.scenario,
                        secs(y),
                        secs(x),
                        pct(err(y, x))
                    ),
                }
            })
            .collect(),
    };
    mpiskel_report::svg::chart_svg(&chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(class: &str, phase: f64, truth: f64, replay: Option<f64>) -> Row {
        Row {
            suite: "smpi".into(),
            case: "bt.W.16".into(),
            ranks: 16,
            scenario: class.into(),
            class: class.into(),
            setting: String::new(),
            skeleton: Stat::of(&[truth / 10.0]),
            by_phase: Stat::of(&[phase]),
            by_ratio: Stat::of(&[phase]),
            truth: Stat::of(&[truth * 0.9, truth, truth * 1.2]),
            replay,
            main_iterations: None,
        }
    }

    #[test]
    fn medians_and_spreads() {
        let s = Stat::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max, s.runs), (2.5, 1.0, 10.0, 4));
        let (lo, hi) = Stat::of(&[0.9, 1.0, 1.1]).spread();
        assert!((lo + 10.0).abs() < 1e-9 && (hi - 10.0).abs() < 1e-9);
    }

    #[test]
    fn the_summary_averages_absolute_errors_per_class() {
        let v = Validation {
            machine: "here".into(),
            rows: vec![
                row("bandwidth", 1.02, 1.0, Some(1.0)),
                row("bandwidth", 0.96, 1.0, Some(1.0)),
                row("latency", 1.0, 1.0, None),
            ],
            retune: Vec::new(),
        };
        let md = summary_markdown(&v);
        // bandwidth: errors +2 % and −4 %: mean 3.0, max 4.0.
        assert!(md.contains("| bandwidth | 2 | 3.0 / 4.0 % |"), "{md}");
        // latency has no replay: its replay columns are empty.
        assert!(md.contains("| latency | 1 | – | – | 0.0 / 0.0 % |"), "{md}");
        let svg = chart_svg(&v, "smpi", "t").unwrap();
        assert_eq!(svg.matches("<circle").count(), 3 + 2, "points and legend");
    }

    #[test]
    fn missed_targets_name_the_class_the_case_and_the_length() {
        // Rows whose skeletons run a twentieth of the replay.
        let short = |class: &str, phase: f64| {
            let mut r = row(class, phase, 1.0, Some(1.0));
            r.skeleton = Stat::of(&[0.05]);
            r
        };
        let met = Validation {
            machine: "here".into(),
            rows: vec![short("bandwidth", 1.02), short("latency", 0.99)],
            retune: Vec::new(),
        };
        assert!(missed_targets(&met).is_empty(), "{:?}", missed_targets(&met));
        // Bandwidth: +2 and −9 %: mean 5.5 % (over 3 %), one case over 8 %.
        let mut v = met.clone();
        v.rows.push(short("bandwidth", 0.91));
        let m = missed_targets(&v);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].starts_with("bandwidth: mean |error| 5.5 %"), "{m:?}");
        assert!(m[1].contains("error -9.0 %"), "{m:?}");
        // 0.07 of the run meets a twelfth, not the twentieth of a main loop of ≥ 20 iterations.
        let mut long = short("latency", 1.0);
        long.skeleton = Stat::of(&[0.07]);
        long.main_iterations = Some(200);
        let v = Validation { rows: vec![long], ..met.clone() };
        let m = missed_targets(&v);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("skeleton 0.070 of the replay (target a twentieth)"), "{m:?}");
        // Rows without a replay have no targets.
        let v = Validation { rows: vec![row("collectives", 2.0, 1.0, None)], ..met };
        assert!(missed_targets(&v).is_empty());
    }
}
