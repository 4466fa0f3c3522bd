//! The fidelity check's findings and the one decision made from them: which candidate skeleton
//! is kept.
//!
//! The deadlock check proves that a skeleton cannot hang; the fidelity check measures whether it
//! predicts. The build simulates the application's trace and each candidate skeleton — as it
//! runs, priced by its runtime's own by-phase formula — on a panel of platforms (the reference
//! and its what-ifs; `mpiskel_simulate::fidelity` makes the panel and runs it) and records, per
//! platform, a [`PanelRow`]. The cut mechanisms of [`crate::pipeline`] only propose candidates;
//! [`choose`] scores them all by one measure ([`Score`]: the largest error over the panel, then
//! the longest simulated run) and keeps the shortest within the bound, else the most faithful
//! one (the planner's rule of a cost-based query optimizer: many generators, one cost).
//!
//! This module knows nothing of simulation: it holds the data the check writes into
//! `skeleton.json` and the decision, so that the document, the report and the build share them.
//!
//! # Complexity
//! [`choose`]: O(candidates × platforms).

use serde::{Deserialize, Serialize};

/// The largest error a kept skeleton may show on any platform of the panel, as a share
/// (`mpiskel build --max-error`'s default, 2 %).
pub const DEFAULT_MAX_ERROR: f64 = 0.02;

/// One platform of the panel: the application's simulated time there, the skeleton's own
/// simulated run, what the skeleton predicts from it, and the error of that prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelRow {
    /// The platform's name (`reference`, `bandwidth/10`, …).
    pub platform: String,
    /// The application's time there: its trace simulated, seconds.
    pub app_s: f64,
    /// The skeleton's own run there, as it runs (its loops cut, its computation cut), seconds.
    pub skeleton_s: f64,
    /// What the skeleton predicts there: its runtime's by-phase formula applied to its
    /// simulated run, seconds.
    pub predicted_s: f64,
    /// `100 × (predicted_s / app_s − 1)`.
    pub error_pct: f64,
}

impl PanelRow {
    /// The row for the times given.
    pub fn new(platform: &str, app_s: f64, skeleton_s: f64, predicted_s: f64) -> PanelRow {
        let error_pct = if app_s > 0.0 { 100.0 * (predicted_s / app_s - 1.0) } else { 0.0 };
        PanelRow { platform: platform.to_owned(), app_s, skeleton_s, predicted_s, error_pct }
    }
}

/// How a candidate does on the panel: the measure [`choose`] orders candidates by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The largest |error| over the panel, percent.
    pub worst_error_pct: f64,
    /// The longest simulated skeleton run over the panel as a share of the application's time
    /// on the same platform.
    pub longest_share: f64,
    /// The skeleton's simulated run on the reference (the panel's first platform) as a share
    /// of the application's time there: what a length bound holds ([`choose`]).
    #[serde(default)]
    pub reference_share: f64,
}

impl Score {
    /// The score of a panel's rows (the worst over no rows is 0).
    pub fn of(rows: &[PanelRow]) -> Score {
        let worst_error_pct = rows.iter().map(|r| r.error_pct.abs()).fold(0.0, f64::max);
        let longest_share = rows
            .iter()
            .filter(|r| r.app_s > 0.0)
            .map(|r| r.skeleton_s / r.app_s)
            .fold(0.0, f64::max);
        let reference_share =
            rows.first().filter(|r| r.app_s > 0.0).map_or(0.0, |r| r.skeleton_s / r.app_s);
        Score { worst_error_pct, longest_share, reference_share }
    }

    /// Whether the worst error is within `bound` (a share, 0.02 for 2 %).
    pub fn within(&self, bound: f64) -> bool {
        self.worst_error_pct <= 100.0 * bound + 1e-9
    }
}

/// What the policy decided for one build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The bound the candidates were held to, percent.
    pub max_error_pct: f64,
    /// Every candidate measured, in the order they were proposed.
    pub candidates: Vec<Candidate>,
    /// Index into `candidates` of the one kept.
    pub kept: usize,
    /// Whether the kept one is within the bound, and if not what holds it back.
    pub outcome: Outcome,
    /// The length bound the candidates were held to, a share of the application's time on the
    /// reference (see [`choose`]).
    #[serde(default)]
    pub length_bound: f64,
    /// Whether the search stopped at its budget (calls simulated or walked) before every generator had proposed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
}

/// One candidate skeleton the cut mechanisms proposed, as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// What made it (`default`, `loop nests 2 of 3`, `target x4`, `every block whole`, …).
    pub name: String,
    /// Its score.
    pub score: Score,
    /// Measured only on the platform where the candidate kept at the time was worst, and off
    /// there by more than it anywhere (its score is of that platform alone): it could not be
    /// kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub screened: bool,
}

/// Whether the kept skeleton is faithful.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// Within the bound on every platform of the panel.
    Within,
    /// No candidate was within the bound: the most faithful one is kept.
    Closest {
        /// The platform of the largest error.
        platform: String,
        /// That error, percent.
        error_pct: f64,
        /// The phase whose prediction departs most from the program's own there, if one does.
        phase: Option<String>,
    },
}

/// The candidate to keep among `scores` (in the order proposed). Those whose run on the
/// reference is within `length` (a share of the application's time) come first, as long as one
/// of them is near the bound:
/// 1. the shortest (smallest [`Score::longest_share`]) within `length` and within `bound`;
/// 2. else the most faithful within `length` and within [`NEAR`] times `bound`;
/// 3. else the shortest within `bound` of any length;
/// 4. else the most faithful of all.
///
/// Errors within [`ERROR_TIE`] points count as equal (the shorter is kept); ties go to the one
/// proposed first. `None` for no candidates.
pub fn choose(scores: &[Score], bound: f64, length: f64) -> Option<usize> {
    let shortest = |among: &[usize]| {
        among.iter().fold(None::<usize>, |best, &i| match best {
            Some(b) if scores[b].longest_share <= scores[i].longest_share => Some(b),
            _ => Some(i),
        })
    };
    let most_faithful = |among: &[usize]| {
        let least = among.iter().map(|&i| scores[i].worst_error_pct).fold(f64::INFINITY, f64::min);
        let tied: Vec<usize> = among
            .iter()
            .copied()
            .filter(|&i| scores[i].worst_error_pct <= least + ERROR_TIE)
            .collect();
        shortest(&tied)
    };
    let all: Vec<usize> = (0..scores.len()).collect();
    let of = |among: &[usize], keep: &dyn Fn(&Score) -> bool| -> Vec<usize> {
        among.iter().copied().filter(|&i| keep(&scores[i])).collect()
    };
    let short = of(&all, &|s| s.reference_share <= length + 1e-12);
    shortest(&of(&short, &|s| s.within(bound)))
        .or_else(|| most_faithful(&of(&short, &|s| s.within(NEAR * bound))))
        .or_else(|| shortest(&of(&all, &|s| s.within(bound))))
        .or_else(|| most_faithful(&all))
}

/// A candidate that keeps the length bound and is within this many times the error bound is
/// kept before longer ones that are more faithful: a skeleton a little less faithful and much
/// shorter is the better trade for the user who asked for a short one (the LAMMPS development
/// set: its defaults, 4–7 % of the run, predict natively within 5 %; the longer candidates the
/// panel preferred, a third of the run, did no better), a grossly wrong one never is.
pub const NEAR: f64 = 3.0;

/// Worst errors, in points, closer than this are as faithful as each other: [`choose`] keeps the
/// shorter. The panel cannot tell them apart: its errors differ from those SimGrid's runs of
/// the same skeletons measure by 0.7 point on average (VALIDATION.md), far more than this.
pub const ERROR_TIE: f64 = 0.1;

/// One line of the panel for people: the worst error and the platforms it covers.
pub fn describe(rows: &[PanelRow]) -> String {
    let s = Score::of(rows);
    format!(
        "checked within {:.1} % on {} modelled platforms (the skeleton runs at most {:.1} % of \
         the application's time on them)",
        s.worst_error_pct,
        rows.len(),
        100.0 * s.longest_share
    )
}

/// The panel as a short table for people, one platform a line.
pub fn table(rows: &[PanelRow]) -> String {
    let mut out = format!(
        "{:<16} {:>12} {:>12} {:>12} {:>8}\n",
        "platform", "app s", "skeleton s", "predicted s", "error"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<16} {:>12.6} {:>12.6} {:>12.6} {:>+7.2}%\n",
            r.platform, r.app_s, r.skeleton_s, r.predicted_s, r.error_pct
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(worst_error_pct: f64, longest_share: f64) -> Score {
        Score { worst_error_pct, longest_share, reference_share: longest_share }
    }

    #[test]
    fn the_shortest_within_the_bound_is_kept() {
        let scores = [score(1.5, 0.08), score(0.4, 0.30), score(1.9, 0.05), score(9.0, 0.01)];
        assert_eq!(choose(&scores, 0.02, 1.0), Some(2));
    }

    #[test]
    fn with_none_within_the_most_faithful_is_kept() {
        let scores = [score(66.0, 0.01), score(3.1, 0.20), score(4.0, 0.02)];
        assert_eq!(choose(&scores, 0.02, 1.0), Some(1));
        assert_eq!(choose(&[], 0.02, 1.0), None);
    }

    #[test]
    fn ties_go_to_the_first_proposed() {
        let scores = [score(1.0, 0.1), score(0.5, 0.1)];
        assert_eq!(choose(&scores, 0.02, 1.0), Some(0));
    }

    #[test]
    fn near_the_bound_a_short_candidate_beats_a_longer_more_faithful_one() {
        // 3.7 % at a third loses to 4.2 % at a twentieth where a twelfth is the length bound.
        let scores = [score(6.9, 0.04), score(3.7, 0.33), score(4.2, 0.05)];
        assert_eq!(choose(&scores, 0.02, 1.0 / 12.0), Some(2));
        assert_eq!(choose(&scores, 0.02, 0.5), Some(1));
        // Within the bound but long: a short one near the bound is kept before it.
        let scores = [score(3.0, 0.05), score(0.5, 0.3)];
        assert_eq!(choose(&scores, 0.02, 1.0 / 12.0), Some(0));
    }

    #[test]
    fn a_grossly_wrong_candidate_is_never_kept_for_its_length() {
        // The only short candidate is off by 200 %: the shortest within the bound is kept.
        let scores = [score(200.0, 0.45), score(2.7, 0.46), score(0.01, 1.0)];
        assert_eq!(choose(&scores, 0.02, 0.45), Some(2));
        // None within: the most faithful.
        let scores = [score(200.0, 0.45), score(2.7, 0.46)];
        assert_eq!(choose(&scores, 0.02, 0.45), Some(1));
    }

    #[test]
    fn within_the_bound_the_length_bound_is_kept_where_it_can_be() {
        let scores = [score(1.9, 0.05), score(0.1, 0.5)];
        assert_eq!(choose(&scores, 0.02, 1.0 / 12.0), Some(0));
        let scores = [score(9.0, 0.05), score(1.0, 0.9), score(1.5, 0.5)];
        assert_eq!(choose(&scores, 0.02, 1.0 / 12.0), Some(2));
    }

    #[test]
    fn errors_closer_than_the_tie_keep_the_shorter() {
        let scores = [score(10.651026, 0.047), score(10.651018, 0.058), score(10.7, 0.01)];
        assert_eq!(choose(&scores, 0.02, 1.0), Some(2));
        let scores = [score(10.651026, 0.047), score(10.651018, 0.058), score(11.0, 0.01)];
        assert_eq!(choose(&scores, 0.02, 1.0), Some(0));
    }

    #[test]
    fn a_row_measures_its_error_and_a_score_its_worst() {
        let rows = [
            PanelRow::new("reference", 2.0, 0.1, 2.02),
            PanelRow::new("bandwidth/100", 10.0, 1.0, 9.5),
        ];
        assert!((rows[0].error_pct - 1.0).abs() < 1e-9);
        let s = Score::of(&rows);
        assert!((s.worst_error_pct - 5.0).abs() < 1e-9);
        assert!((s.longest_share - 0.1).abs() < 1e-12);
        assert!(!s.within(0.02) && s.within(0.05));
    }
}
