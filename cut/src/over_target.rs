//! Why a skeleton stays over its target, in words for its note: the parts that hold it there
//! (loops that run whole, steps sampled by kind or family, stretches cut short, loop cuts not
//! tried for the checks' budget).

use mpiskel_trace::stretch::StretchCut;

use crate::scale::{Scaling, MIN_INNER, MIN_SAMPLED};

/// Why loops that could be cut run whole: the deadlock checks of the cuts reached their budget.
fn untried(n: u64) -> String {
    format!(
        "{n} loop cuts were not tried: checking that each leaves no rank waiting took the \
         deadlock checks' budget ({:.1} million operations per search)",
        crate::cut_runs::CHECKED_OPERATIONS as f64 / 1e6
    )
}

/// How a time-step main loop's steps were sampled.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Steps {
    /// By kind: every kind runs.
    Kinds,
    /// By family ([`crate::families`]): `kinds` kinds of `families` families.
    Pooled { kinds: usize, families: usize },
}

/// Which parts hold a skeleton over its target, or "" if it is within it (10 % over counts as
/// within: the estimate is one).
///
/// Communication counts apart: a skeleton sends every message at its recorded size, so where
/// it runs more of the application's calls or bytes than the target's share, it is over the
/// target wherever communication takes most of the time, whatever its estimate (which counts
/// computation only for a trace without call times).
///
/// Stretches cut short (`stretches`) count at the part they keep, and where they hold the
/// skeleton over its target, the note says why they keep that much: at least
/// [`crate::stretches::MIN_KEPT_CALLS`] calls per rank each.
pub(crate) fn over_target(
    s: &Scaling,
    sampled: bool,
    steps: Option<Steps>,
    stretches: &[StretchCut],
) -> String {
    let pct = |x: f64| 100.0 * x / s.app_time_s;
    let kept_s: f64 = stretches.iter().map(|c| c.span_s - c.removed_s()).sum();
    let removed_s: f64 = stretches.iter().map(StretchCut::removed_s).sum();
    let why_kept = || {
        format!(
            "the {} stretches cut short keep {:.1} %, at least {} calls per rank each (a shorter \
             sample sets their pace by chance)",
            stretches.len(),
            pct(kept_s),
            crate::stretches::MIN_KEPT_CALLS
        )
    };
    let floor = s
        .traffic
        .as_ref()
        .filter(|t| {
            s.app_time_s > 0.0
                && t.floor() * s.app_time_s > s.target_s * (1.0 + crate::scale::TARGET_SLACK)
        })
        .map(|t| t.describe());
    if s.skeleton_estimate_s <= s.target_s * (1.0 + crate::scale::TARGET_SLACK) {
        return floor.map_or_else(String::new, |f| {
            let mut kept =
                if stretches.is_empty() { String::new() } else { format!("; {}", why_kept()) };
            if s.cuts_untried > 0 {
                kept = format!("{kept}; {}", untried(s.cuts_untried));
            }
            format!(
                "over the target ({:.1} % of the application's time) if communication takes \
                 most of it: {f}{kept}",
                pct(s.target_s)
            )
        });
    }
    let rest = (1.0 - s.main_share) * s.app_time_s - s.warmup_s - removed_s;
    let mut parts = Vec::new();
    if rest >= s.target_s {
        let warmup =
            if s.warmup_s > 0.0 { ", a warm-up iteration of the main loop left out" } else { "" };
        parts.push(if stretches.is_empty() {
            format!(
                "the parts outside the main loop (set-up, finish{warmup}) take {:.1} % and run \
                 whole but for what their compute blocks could lose",
                pct(rest)
            )
        } else {
            format!(
                "{}; the other parts outside the main loop (set-up, finish{warmup}) take {:.1} % \
                 and run whole but for their loops' cuts and what their compute blocks could lose",
                why_kept(),
                pct((rest - kept_s).max(0.0))
            )
        });
    }
    if s.main_full > 1 && s.main_run == s.main_full && s.main_full <= MIN_INNER {
        parts.push(format!(
            "the main loop runs all its {} iterations: the compute durations its iterations draw \
             spread so widely that fewer would not predict the application within 2 %",
            s.main_full
        ));
    } else if s.main_full > s.main_run && s.main_full <= MIN_INNER && s.main_needed > 1 {
        parts.push(format!(
            "the main loop runs {} of its {} iterations, as many as the spread of the compute \
             durations they draw needs, {:.1} % of the time each",
            s.main_run,
            s.main_full,
            pct(s.main_share * s.app_time_s / s.main_full as f64)
        ));
    } else if s.main_full > s.main_run && (s.main_run == 1 || sampled && s.main_run <= MIN_SAMPLED)
    {
        let why = if s.main_run > 1 {
            format!(
                "up to {MIN_SAMPLED}, as many as fit in a twelfth of the application's time, so \
                 that the compute durations they draw average out"
            )
        } else {
            "the fewest it can".to_owned()
        };
        parts.push(format!(
            "the main loop runs {} of its {} iterations ({why}), {:.1} % of the time each",
            s.main_run,
            s.main_full,
            pct(s.main_share * s.app_time_s / s.main_full as f64)
        ));
    } else if let (Some(Steps::Kinds), true, true) = (steps, sampled, s.main_full > s.main_run) {
        parts.push(format!(
            "the main loop runs {} of its {} time steps: each kind of step at least \
             {MIN_SAMPLED} times (every step of a kind with fewer), as far as they fit in a \
             twelfth of the application's time, so that the durations the steps of a kind \
             replay average out",
            s.main_run, s.main_full
        ));
    } else if let (Some(Steps::Pooled { kinds, families }), true) =
        (steps, s.main_full > s.main_run)
    {
        parts.push(format!(
            "the main loop runs {} of its {} time steps: they are of {kinds} kinds, too many to \
             run one of each, and of {families} families (kinds that make the same calls, their \
             largest messages of one size), each of which runs at least one step, up to \
             {MIN_SAMPLED} as far as they fit in a twelfth of the application's time; the kinds \
             of a family that run stand for those that do not, by their recorded time",
            s.main_run, s.main_full
        ));
    }
    if let Some(c) = &s.steps_cut {
        parts.push(format!(
            "the time steps cut short keep {:.1} % of their time or more: at least {} calls each \
             (a shorter sample sets their pace by chance), and enough time that a scheduler \
             tick, multiplied by the kind's scale, stays within {:.0} % of the application's \
             time",
            100.0 * c.least_share,
            crate::step_cut::MIN_KEPT_CALLS,
            100.0 * crate::sampling::PRECISION
        ));
    }
    if parts.is_empty() {
        parts.push("the loops left run whole and their compute blocks are too short to cut".into());
    }
    if s.cuts_untried > 0 {
        parts.push(untried(s.cuts_untried));
    }
    if let Some(f) = floor {
        parts.push(format!("if communication takes most of the time, {f}"));
    }
    format!(
        "over the target ({:.1} % of the application's time against {:.1} %): {}",
        pct(s.skeleton_estimate_s),
        pct(s.target_s),
        parts.join("; ")
    )
}
