//! One case through the whole pipeline, as `mpiskel build` runs it: the reader boundary's check,
//! poll folding, logicalization, loop nests, the program IR, scaling, the deadlock check, both
//! back ends — and the invariants every stage owes its caller.
//!
//! A stage may refuse its input with an error; that is an [`Outcome::Refused`], not a failure.
//! A [`Violation`] is a broken promise: a back end that fails on a checked program, an emitted
//! program that the checker, run again on what was emitted, finds can block, a checked program
//! whose simulation (`mpiskel simulate` of the skeleton, as it stands for the application and
//! as it runs) leaves ranks stuck, a scaling with a figure that is not a finite positive
//! number, or a correct program (one [`crate::programs`] generated, unmutated) that is refused.
//! Panics are caught by the caller
//! ([`crate::campaign`]).

use std::path::Path;

use mpiskel_cut::pipeline::{make, PipelineError};
use mpiskel_emit::c::Meta;
use mpiskel_program::instantiate::instantiate;
use mpiskel_trace::{RankTrace, TraceFormat, TraceSet};

/// What became of a case that broke no promise.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A stage refused the input with an error.
    Refused {
        /// The stage: `read`, `program` or `check`.
        stage: &'static str,
        /// Its message.
        reason: String,
    },
    /// The reader accepted the input, and the campaign reads only (`--read-only`).
    Read {
        /// Calls read over all ranks.
        events: u64,
    },
    /// A checked skeleton was rendered in C and Rust.
    Built {
        /// Operations the deadlock check executed over all ranks.
        operations: usize,
        /// The skeleton's expected time as a share of the application's (0 when the
        /// application's time is 0).
        length: f64,
    },
}

/// A promise a stage broke.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Violation(pub String);

/// Runs `ranks`, said to have been read from `path`, through every stage. `correct`: the input
/// is a correct program, which must give a skeleton; `rust`: render the Rust back end too (it
/// takes about half a case's time).
pub fn run(
    path: &Path,
    ranks: Vec<RankTrace>,
    correct: bool,
    rust: bool,
) -> Result<Outcome, Violation> {
    if let Err(e) = mpiskel_trace::validate::validate(path, &ranks) {
        return refused(correct, "read", e.to_string());
    }
    let mut set =
        TraceSet { path: path.to_path_buf(), format: TraceFormat::Native, ranks, meta: None };
    set.fold_polls();
    built(&set, correct, rust)
}

/// Runs a trace set that its reader accepted through every stage after reading.
pub fn built(set: &TraceSet, correct: bool, rust: bool) -> Result<Outcome, Violation> {
    let mut lt = mpiskel_logicalize::logicalize(set);
    let app_time = set.app_time_s();
    let b = match make(&mut lt, app_time, "the trace", None, true) {
        Ok(b) => b,
        Err(e @ PipelineError::Build(_)) => return refused(correct, "program", e.to_string()),
        Err(e @ PipelineError::Deadlock(_)) => return refused(correct, "check", e.to_string()),
    };
    let s = &b.scaling;
    let figures = [
        ("target", s.target_s),
        ("estimate", s.skeleton_estimate_s),
        ("factor", s.factor),
        ("compute removed", s.compute_removed_s + 1.0),
        ("main share", s.main_share + 1.0),
        ("compute shrink", s.compute_shrink + 1.0),
    ];
    if app_time > 0.0 {
        if let Some((what, v)) = figures.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(Violation(format!(
                "scaling {what} is {v} for an application of {app_time} s"
            )));
        }
    }
    let meta = Meta {
        name: "fuzz".into(),
        trace: path_text(set),
        version: "0".into(),
        fidelity: Vec::new(),
    };
    mpiskel_emit::c::render(&b.skeleton, &b.scaling, &meta)
        .map_err(|e| Violation(format!("the C back end failed on a checked program: {e}")))?;
    if rust {
        mpiskel_emit::rust::render(&b.skeleton, &b.scaling, &meta).map_err(|e| {
            Violation(format!("the Rust back end failed on a checked program: {e}"))
        })?;
    }
    let (programs, _) = instantiate(&b.skeleton);
    if let Some(d) = mpiskel_program::check(&programs) {
        return Err(Violation(format!("the emitted program can block: {d}")));
    }
    simulated(&b.skeleton, "")?;
    let length = if app_time > 0.0 { s.skeleton_estimate_s / app_time } else { 0.0 };
    stretches_cut(set, &lt, &b, app_time, &meta)?;
    Ok(Outcome::Built { operations: b.check.operations, length })
}

/// Where `b` is over its target, made again with the stretches `mpiskel build` would cut by
/// time (`mpiskel_trace::stretch`; kept down to two calls per rank, so that short programs are
/// cut too): making it may fail (the build keeps `b` then), but a program it makes renders and
/// cannot block.
fn stretches_cut(
    set: &TraceSet,
    lt: &mpiskel_logicalize::LogicalTrace,
    b: &mpiskel_cut::pipeline::Built,
    app_time: f64,
    meta: &Meta,
) -> Result<(), Violation> {
    // Two calls per rank at least: generated programs are short.
    let cuts = mpiskel_cut::stretches::choose_keeping(
        lt,
        (&b.skeleton, &b.scaling),
        set.stretches(),
        app_time,
        2,
    );
    if cuts.is_empty() {
        return Ok(());
    }
    let mut again = set.clone();
    let cut = again.cut_stretches(&cuts);
    again.drop_local_calls();
    let mut lt = mpiskel_logicalize::logicalize(&again);
    lt.stretches = cut;
    let Ok(b) = make(&mut lt, app_time, "the trace", None, true) else {
        return Ok(());
    };
    mpiskel_emit::c::render(&b.skeleton, &b.scaling, meta).map_err(|e| {
        Violation(format!("the C back end failed on a program with stretches cut: {e}"))
    })?;
    let (programs, _) = instantiate(&b.skeleton);
    if let Some(d) = mpiskel_program::check(&programs) {
        return Err(Violation(format!("a program with stretches cut can block: {d}")));
    }
    simulated(&b.skeleton, " with stretches cut")?;
    Ok(())
}

/// The checked `skel`, simulated on a cluster of one host per rank as `mpiskel simulate` runs a
/// skeleton folder (the program as it stands for the application, which runs more iterations
/// of the cut loops than the skeleton, and the skeleton as it runs): no rank may be left stuck.
fn simulated(skel: &mpiskel_program::Skeleton, what: &str) -> Result<(), Violation> {
    use mpiskel_simulate::engine::{simulate, Options};
    use mpiskel_simulate::platform::{ClusterSpec, Platform};
    use mpiskel_simulate::skeleton::{lower, lower_as_run};
    let n = skel.n_ranks as usize;
    let platform = Platform::cluster(&ClusterSpec {
        name: "fuzz".into(),
        host_names: (0..n).map(|h| format!("node-{h}")).collect(),
        speed: 1e9,
        cores: 1,
        bandwidth: 1.25e9,
        latency: 1e-6,
        split_duplex: true,
        fatpipe: false,
        backbone: None,
        loopback: (1e11, 1e-7),
    });
    let placement: Vec<usize> = (0..n).collect();
    let opts = Options { fast_forward: false, ..Options::default() };
    for (how, lowered) in
        [("as it stands", lower(skel, 0, false)), ("as it runs", lower_as_run(skel, 0, 1.0))]
    {
        let sim = simulate(&lowered.traces, &platform, &placement, &opts).map_err(|e| {
            Violation(format!("simulating a checked program{what} {how} failed: {e}"))
        })?;
        if let Some(s) = sim.stuck.first() {
            return Err(Violation(format!(
                "a checked program{what}, simulated {how}, leaves rank {} stuck in call {} ({}), \
                 {} ranks in all",
                s.rank,
                s.call,
                s.op,
                sim.stuck.len()
            )));
        }
    }
    Ok(())
}

fn path_text(set: &TraceSet) -> String {
    set.path.display().to_string()
}

fn refused(correct: bool, stage: &'static str, reason: String) -> Result<Outcome, Violation> {
    if correct {
        return Err(Violation(format!("a correct program was refused at {stage}: {reason}")));
    }
    Ok(Outcome::Refused { stage, reason })
}
