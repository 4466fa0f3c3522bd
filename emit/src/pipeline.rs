//! The whole construction, from a logical trace to a checked, scaled program: loop nests per
//! class, the program IR, scaling, instantiation and the deadlock check.

use std::time::Instant;

use mpiskel_compress::LoopNest;
use mpiskel_logicalize::LogicalTrace;
use serde::{Deserialize, Serialize};

use crate::deadlock::{check, Deadlock};
use crate::instantiate::instantiate;
use crate::program::{build, BuildError, Skeleton};
use crate::scale::{cut_compute, scale, uncut, Scaling};

/// What the deadlock check did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// Ranks executed.
    pub ranks: usize,
    /// Operations executed over all ranks.
    pub operations: usize,
    /// Seconds it took.
    pub seconds: f64,
}

/// A checked skeleton program.
#[derive(Debug, Clone)]
pub struct Built {
    /// The program.
    pub skeleton: Skeleton,
    /// How it was scaled.
    pub scaling: Scaling,
    /// The loop nest of each class.
    pub nests: Vec<LoopNest>,
    /// The deadlock check.
    pub check: CheckSummary,
    /// Seconds per stage: nests, build, check.
    pub stage_seconds: Vec<(String, f64)>,
}

/// Why no skeleton could be made.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The IR could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The program can block forever; it is not emitted.
    #[error("refusing to emit a program that can deadlock: {0}")]
    Deadlock(Deadlock),
}

pub use crate::timesteps::nests_of;

/// Builds, scales and checks the skeleton of `lt` for `target_s` seconds, given the recorded
/// application time; `compute_cut`: whether compute blocks may lose time when cutting loops is
/// not enough ([`crate::scale::cut_compute`]).
pub fn make(
    lt: &LogicalTrace,
    app_time_s: f64,
    app_time_source: &str,
    target_s: f64,
    compute_cut: bool,
) -> Result<Built, PipelineError> {
    let mut stage_seconds = Vec::new();
    let t = Instant::now();
    let nests = nests_of(lt);
    stage_seconds.push(("loop nests".to_owned(), t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let mut skeleton = build(lt, &nests)?;
    let scaling = scale(&mut skeleton, app_time_s, app_time_source, target_s);
    stage_seconds.push(("program".to_owned(), t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let (mut programs, mut reused) = instantiate(&skeleton);
    let mut scaling = scaling;
    if let Some(d) = check(&programs) {
        // Classes whose loop nests do not correspond (one class's main loop is not another's)
        // may lose their partners when the main loop is cut: try the program uncut.
        let cut = skeleton.classes.iter().flat_map(|c| &c.phases).any(|p| p.run < p.full);
        if !cut {
            return Err(PipelineError::Deadlock(d));
        }
        uncut(
            &mut skeleton,
            &mut scaling,
            "not cut: with the main loop cut, some ranks would wait for messages that ranks of \
             other classes no longer send",
        );
        (programs, reused) = instantiate(&skeleton);
        if let Some(d) = check(&programs) {
            return Err(PipelineError::Deadlock(d));
        }
    }
    if compute_cut {
        cut_compute(&mut skeleton, &mut scaling);
    }
    skeleton.reused_slots = reused.into_iter().collect();
    let operations = programs.iter().map(Vec::len).sum();
    let seconds = t.elapsed().as_secs_f64();
    stage_seconds.push(("deadlock check".to_owned(), seconds));
    Ok(Built {
        check: CheckSummary { ranks: programs.len(), operations, seconds },
        skeleton,
        scaling,
        nests,
        stage_seconds,
    })
}
