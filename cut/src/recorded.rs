//! The recorded time a program stands for: each class's weight (its computation, or its span
//! where the trace recorded call times), the class that leads the application's time, and the
//! iterations of its main loop.

use mpiskel_program::{
    compute_of, kept_compute_of, removed_wall_of, span_of, ClassProgram, Phase, Skeleton, Stmt,
};

/// Whether the recorded time is split by wall time ([`Phase::span_s`]): the trace recorded how
/// long calls took ([`Skeleton::call_times`]).
pub(crate) fn by_span(skel: &Skeleton) -> bool {
    skel.call_times
}

/// The recorded seconds of one pass over `body` that the split counts: its wall time where
/// `by_span` ([`by_span`]), its computation otherwise.
pub(crate) fn recorded_of(body: &[Stmt], by_span: bool) -> f64 {
    if by_span {
        span_of(body)
    } else {
        compute_of(body)
    }
}

/// Application seconds that recorded seconds of the lead class stand for, where the lead class
/// recorded `lead_recorded` seconds of an application of `app_time_s` (none where it recorded
/// nothing).
pub(crate) fn app_seconds(lead_recorded: f64, app_time_s: f64) -> impl Fn(f64) -> f64 {
    move |recorded| {
        if lead_recorded > 0.0 {
            recorded / lead_recorded * app_time_s
        } else {
            0.0
        }
    }
}

/// [`recorded_of`] one iteration of a phase.
pub(crate) fn recorded_phase(p: &Phase, by_span: bool) -> f64 {
    if by_span {
        p.span_s
    } else {
        p.compute_s
    }
}

/// [`recorded_of`] less the computation the computation cut takes out of `body`
/// ([`kept_compute_of`]); by span, with the time off the processor that went with it
/// ([`removed_wall_of`]).
pub(crate) fn kept_recorded(body: &[Stmt], by_span: bool) -> f64 {
    if by_span {
        (span_of(body) - removed_wall_of(body)).max(0.0)
    } else {
        kept_compute_of(body)
    }
}

/// The recorded time the application's time stands for, seconds: the wall time of the class
/// that decides the split ([`lead_class`]) where the trace recorded call times ([`by_span`]),
/// otherwise the computation of the class that computes most. A second of recorded computation
/// stands for `app_time_s / lead_recorded` seconds of the application.
pub(crate) fn lead_recorded(skel: &Skeleton) -> f64 {
    if by_span(skel) {
        return lead_class(skel).map_or(0.0, |c| split_weight(c, true).1);
    }
    skel.classes
        .iter()
        .map(|c| c.phases.iter().map(|p| p.compute_s * p.priced() as f64).sum::<f64>())
        .fold(0.0, f64::max)
}

/// The class whose loops decide every cut, by index (see [`scale`]).
pub fn lead_class_index(skel: &Skeleton) -> Option<usize> {
    let lead = lead_class(skel)?;
    skel.classes.iter().position(|c| std::ptr::eq(c, lead))
}

/// The class whose computation decides the split: its (main loop, total) weight, and its main
/// loop's iteration count if it has one.
pub(crate) fn lead(skel: &Skeleton) -> Option<((f64, f64), Option<u64>)> {
    let c = lead_class(skel)?;
    Some((split_weight(c, by_span(skel)), c.main_loop().map(|p| p.full)))
}

/// A class's (main loop, total) recorded time that the split counts: its wall time where
/// `by_span`, otherwise [`weight`].
pub(crate) fn split_weight(c: &ClassProgram, by_span: bool) -> (f64, f64) {
    if !by_span {
        return weight(c);
    }
    let of = |main: bool| -> f64 {
        c.phases
            .iter()
            .filter(|p| !main || p.name == "main_loop")
            .map(|p| p.span_s * p.priced() as f64)
            .sum()
    };
    (of(true), of(false))
}

/// A class's (main loop, total) weight: its computation, or its calls where it computed nothing.
pub(crate) fn weight(c: &ClassProgram) -> (f64, f64) {
    let total: f64 = c.phases.iter().map(|p| p.compute_s * p.priced() as f64).sum();
    let main: f64 = c
        .phases
        .iter()
        .filter(|p| p.name == "main_loop")
        .map(|p| p.compute_s * p.priced() as f64)
        .sum();
    if total > 0.0 {
        return (main, total);
    }
    let calls: f64 = c.phases.iter().map(|p| (p.calls * p.priced()) as f64).sum();
    let main_calls: f64 = c
        .phases
        .iter()
        .filter(|p| p.name == "main_loop")
        .map(|p| (p.calls * p.priced()) as f64)
        .sum();
    (main_calls, calls)
}

/// The class whose loops decide every cut: the largest by computation (by calls where nothing
/// was computed); the last of equals.
pub(crate) fn lead_class(skel: &Skeleton) -> Option<&ClassProgram> {
    skel.classes.iter().max_by(|a, b| weight(a).1.total_cmp(&weight(b).1))
}

/// Iterations of the main loop of the class that decides the split (1 without a main loop):
/// what [`default_target`] and [`Scaling::main_full`] count.
pub fn main_iterations(skel: &Skeleton) -> u64 {
    lead(skel).and_then(|(_, n)| n).unwrap_or(1)
}
