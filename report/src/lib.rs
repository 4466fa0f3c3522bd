//! `mpiskel report`: one self-contained HTML page (no network, no external script or style)
//! about a trace, a skeleton folder or a validation run.
//!
//! The page holds what is known of its input: the communication matrix as a heatmap with the
//! topology and each rank's coordinates; each class's loop nest as a tree that opens and
//! closes, with each loop's share of the computation and of the bytes sent; the phases of the
//! program on a time line; how the skeleton was scaled; and predicted against measured times
//! (the runs of a skeleton folder, the rows of a validation run).
//!
//! The caller gathers the facts into a [`Page`] ([`Page::skeleton`], [`Page::matrix`], …);
//! [`render`] lays it out with one template (`templates/report.html.j2`) in which every
//! picture is SVG drawn from the page's data, and every text is escaped by the template
//! engine. [`heatmap`] bins and colours the communication matrix; [`svg`] draws the same pictures as files of their own (the heatmap of
//! `logicalize --svg`, the validation charts) with the same templates.

mod error;
pub mod heatmap;
pub mod loops;
pub mod svg;

use mpiskel_cut::scale::Scaling;
use mpiskel_logicalize::CommMatrix;
use mpiskel_program::Skeleton;
use serde::Serialize;

pub use error::ReportError;
pub use heatmap::{Cell, Heatmap, HEATMAP_CELLS};
pub use loops::Node;

/// Everything the page shows; sections without data are left out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Page {
    /// Title: the trace's, skeleton's or validation run's name.
    pub title: String,
    /// What the page was made from (a path), and by which version.
    pub source: String,
    /// Key facts: ranks, topology, classes, calls…
    pub facts: Vec<(String, String)>,
    /// Lines worth reading first (notes of the build, what is missing).
    pub notes: Vec<String>,
    /// The communication matrix.
    pub matrix: Option<Heatmap>,
    /// Each rank's coordinates in the topology's grid, where it has one.
    pub coords: Vec<RankPlace>,
    /// Each class's loop tree.
    pub classes: Vec<ClassView>,
    /// The phases of the lead class, in order, on a time line.
    pub timeline: Option<Timeline>,
    /// How the skeleton was scaled.
    pub scaling: Vec<(String, String)>,
    /// The fidelity check's panel of a skeleton (`skeleton.json`'s `fidelity`), the reference
    /// first.
    pub fidelity: Vec<mpiskel_cut::fidelity::PanelRow>,
    /// What the fidelity check decided, in words, where it chose among candidates.
    pub fidelity_note: Option<String>,
    /// Runs of the skeleton: predicted against measured, by phase.
    pub runs: Vec<RunView>,
    /// Rows of a validation run.
    pub validation: Vec<ValidationRow>,
    /// Charts of a validation run, SVG documents made by mpiskel itself.
    pub charts: Vec<String>,
    /// A what-if sweep on a modelled platform (`mpiskel report --platform`).
    pub whatif: Option<WhatIf>,
}

/// The predicted time on a modelled platform as one of its parameters sweeps
/// (`mpiskel simulate`).
#[derive(Debug, Clone, Serialize)]
pub struct WhatIf {
    /// The platform file.
    pub platform: String,
    /// What was simulated: `trace` or `skeleton` (its program).
    pub from: String,
    /// The parameter swept: bandwidth, latency or speed.
    pub parameter: String,
    /// The chart, an SVG document made by mpiskel itself.
    pub svg: String,
    /// (value as given, predicted seconds), in the order asked.
    pub rows: Vec<(String, f64)>,
}

/// A rank's class and place.
#[derive(Debug, Clone, Serialize)]
pub struct RankPlace {
    /// Rank.
    pub rank: u32,
    /// Its class.
    pub class: u32,
    /// Coordinates, e.g. `(2, 1, 0)`.
    pub coords: String,
}

/// One class and its loop tree.
#[derive(Debug, Clone, Serialize)]
pub struct ClassView {
    /// Class index.
    pub index: usize,
    /// Its ranks, in ranges (`0-3, 8`).
    pub ranks: String,
    /// How many.
    pub n_ranks: usize,
    /// The loop nest in Xu & Subhlok's (2008, §3) notation, shortened.
    pub notation: String,
    /// The tree.
    pub tree: Vec<Node>,
}

/// Phases on a line, each as wide as its share.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    /// What the widths measure.
    pub measure: String,
    /// Pixels wide.
    pub width: f64,
    /// The bars.
    pub bars: Vec<Bar>,
}

/// One phase on the time line.
#[derive(Debug, Clone, Serialize)]
pub struct Bar {
    /// Left edge, pixels.
    pub x: f64,
    /// Width, pixels.
    pub w: f64,
    /// Phase name.
    pub label: String,
    /// Fill colour.
    pub colour: String,
    /// Hover text.
    pub tip: String,
}

/// One run of the skeleton.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The MPI it ran under (`smpi`, `openmpi`…).
    pub mpi: String,
    /// Measured skeleton seconds.
    pub skeleton_s: f64,
    /// Predicted application seconds, by phase.
    pub predicted_s: f64,
    /// Predicted application seconds, skeleton × the recorded factor.
    pub predicted_ratio_s: f64,
    /// Per phase: name, iterations run of the application's, measured and predicted seconds.
    pub phases: Vec<RunPhase>,
}

/// One phase of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunPhase {
    /// Name.
    pub name: String,
    /// Iterations in the application.
    pub full: u64,
    /// Iterations run.
    pub run: u64,
    /// Measured seconds.
    pub seconds: f64,
    /// Predicted seconds.
    pub predicted_s: f64,
}

/// One row of a validation run: predicted against measured in a scenario.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationRow {
    /// Suite (`smpi`, `native`).
    pub suite: String,
    /// Application.
    pub case: String,
    /// Scenario.
    pub scenario: String,
    /// Its class.
    pub class: String,
    /// Predicted by phase (median), seconds.
    pub predicted_s: f64,
    /// The application's time there (median), seconds.
    pub measured_s: f64,
    /// SimGrid's replay of the full trace, where there is one.
    pub replay_s: Option<f64>,
    /// Skeleton time over the application's.
    pub length: f64,
}

impl ValidationRow {
    /// Error against the replay where there is one, else against the measured time, percent.
    pub fn error_pct(&self) -> f64 {
        let reference = self.replay_s.unwrap_or(self.measured_s);
        100.0 * (self.predicted_s / reference - 1.0)
    }
}

impl Page {
    /// A page titled `title`, made from `source`.
    pub fn new(title: &str, source: &str) -> Page {
        Page { title: title.to_owned(), source: source.to_owned(), ..Page::default() }
    }

    /// Adds what a skeleton program shows: its facts, its ranks' places, each class's loop
    /// tree, the lead class's phases on a time line, and its scaling.
    pub fn skeleton(&mut self, skel: &Skeleton, scaling: &Scaling) {
        self.facts.push(("ranks".into(), skel.n_ranks.to_string()));
        self.facts.push(("topology".into(), skel.topology.clone()));
        self.facts.push(("process classes".into(), skel.classes.len().to_string()));
        for (r, c) in skel.grid_coords.iter().enumerate() {
            let coords: Vec<String> = c.iter().map(usize::to_string).collect();
            self.coords.push(RankPlace {
                rank: r as u32,
                class: skel.class_of_rank.get(r).copied().unwrap_or(0),
                coords: format!("({})", coords.join(", ")),
            });
        }
        for (i, c) in skel.classes.iter().enumerate() {
            let mut notation = c.notation.clone();
            if notation.chars().count() > 400 {
                notation = notation.chars().take(400).collect::<String>() + " …";
            }
            self.classes.push(ClassView {
                index: i,
                ranks: ranges(&c.ranks),
                n_ranks: c.ranks.len(),
                notation,
                tree: loops::class_tree(c),
            });
        }
        let lead = mpiskel_cut::recorded::lead_class_index(skel).unwrap_or(0);
        if let Some(class) = skel.classes.get(lead) {
            let shares: Vec<(String, f64, String)> = class
                .phases
                .iter()
                .map(|p| {
                    let s = p.compute_s * p.full as f64;
                    let tip = format!(
                        "{}: {} iteration(s), {:.4} s of computation recorded",
                        p.name, p.full, s
                    );
                    (p.name.clone(), s, tip)
                })
                .collect();
            self.timeline = timeline("recorded computation of the lead class", &shares);
        }
        let pct =
            |x: f64| format!("{:.1} %", 100.0 * x / scaling.app_time_s.max(f64::MIN_POSITIVE));
        let s = scaling;
        self.scaling = vec![
            (
                "recorded application time".into(),
                format!("{:.6} s ({})", s.app_time_s, s.app_time_source),
            ),
            ("target skeleton time".into(), format!("{:.6} s ({})", s.target_s, pct(s.target_s))),
            (
                "estimated skeleton time".into(),
                format!("{:.6} s ({})", s.skeleton_estimate_s, pct(s.skeleton_estimate_s)),
            ),
            (
                "main loop".into(),
                format!(
                    "runs {} of {} iterations; {:.1} % of the recorded time",
                    s.main_run,
                    s.main_full,
                    100.0 * s.main_share
                ),
            ),
            ("factor (application / skeleton)".into(), format!("{:.3}", s.factor)),
        ];
        if s.warmup_s > 0.0 {
            self.scaling.push((
                "warm-up iteration".into(),
                format!(
                    "not run, priced as one more iteration of the main loop ({})",
                    pct(s.warmup_s)
                ),
            ));
        }
        if let Some(c) = &s.steps_cut {
            self.scaling.push((
                "time steps cut short".into(),
                format!(
                    "{} run up to a collective of all ranks, {:.1} % of their time kept or more; \
                     {} of the application's time not run, priced from the parts kept",
                    c.steps,
                    100.0 * c.least_share,
                    pct(c.removed_s)
                ),
            ));
        }
        if s.compute_removed_s > 0.0 {
            self.scaling.push((
                "computation not run".into(),
                format!("{:.6} s per rank, added back to the prediction", s.compute_removed_s),
            ));
        }
        if let Some(t) = &s.traffic {
            let bytes = if t.bytes_app > 0.0 {
                format!(", {:.1} % of the bytes", 100.0 * t.bytes_share())
            } else {
                String::new()
            };
            self.scaling.push((
                "communication run".into(),
                format!(
                    "{:.1} % of the application's MPI calls{bytes}, at their recorded sizes",
                    100.0 * t.calls_share()
                ),
            ));
        }
        if !s.note.is_empty() {
            self.notes.push(s.note.clone());
        }
    }

    /// Adds the communication matrix.
    pub fn matrix(&mut self, m: &CommMatrix) {
        self.matrix = Some(Heatmap::of(m));
    }

    /// Adds a run of the skeleton.
    pub fn run(&mut self, run: RunView) {
        self.runs.push(run);
    }
}

/// Bars for `(name, seconds, tip)` in order, each as wide as its share of 900 pixels (at
/// least one pixel); `None` when nothing took time.
fn timeline(measure: &str, parts: &[(String, f64, String)]) -> Option<Timeline> {
    let total: f64 = parts.iter().map(|p| p.1).sum();
    if total <= 0.0 {
        return None;
    }
    const WIDTH: f64 = 900.0;
    const PALETTE: [&str; 6] = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"];
    let mut x = 0.0;
    let bars = parts
        .iter()
        .enumerate()
        .map(|(i, (label, s, tip))| {
            let w = (WIDTH * s / total).max(1.0);
            let bar = Bar {
                x,
                w,
                label: label.clone(),
                colour: PALETTE[i % PALETTE.len()].to_owned(),
                tip: format!("{tip} ({:.1} %)", 100.0 * s / total),
            };
            x += w;
            bar
        })
        .collect();
    Some(Timeline { measure: measure.to_owned(), width: x, bars })
}

/// Ranks as ranges: `0-3, 8, 10-11`.
pub fn ranges(ranks: &[u32]) -> String {
    let mut v = ranks.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j > i { format!("{}-{}", v[i], v[j]) } else { v[i].to_string() });
        i = j + 1;
    }
    out.join(", ")
}

/// The page as one HTML document.
pub fn render(page: &Page) -> Result<String, ReportError> {
    let env = svg::environment()?;
    let t = env.get_template("report.html")?;
    let errors: Vec<f64> = page.validation.iter().map(ValidationRow::error_pct).collect();
    Ok(t.render(minijinja::context! { page => page, errors => errors })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_read_as_ranges() {
        assert_eq!(ranges(&[8, 0, 1, 2, 3, 10, 11]), "0-3, 8, 10-11");
        assert_eq!(ranges(&[]), "");
    }

    #[test]
    fn a_page_escapes_what_it_shows() {
        let mut p = Page::new("a <b> & c", "trace/\"x\"");
        p.notes.push("<script>alert(1)</script>".into());
        let html = render(&p).unwrap();
        assert!(html.contains("a &lt;b&gt; &amp; c"), "{html}");
        assert!(!html.contains("<script>alert(1)"), "{html}");
    }
}
