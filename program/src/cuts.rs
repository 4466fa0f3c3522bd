//! What the cuts leave in the program: the recorded durations a cut loop's compute blocks
//! replay ([`Replay`], chosen by [`mpiskel_cut::replay`]) and what cutting a kind of time step short
//! did ([`StepCut`], by [`mpiskel_cut::step_cut`]). Data only: the program's IR holds them and the
//! back ends and the simulator read them; the modules that choose them import the IR, not the
//! other way round.

use serde::{Deserialize, Serialize};

/// The recorded durations one compute block replays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The class whose program holds the block.
    pub class: usize,
    /// The loop's iterations in the application.
    pub full: u64,
    /// The application's iterations replayed (0-based), in the order the skeleton runs them.
    pub iterations: Vec<u64>,
    /// Executions of the block per iteration the skeleton runs (inner loops; of a cut inner
    /// loop, in the iterations of it that run).
    pub per_iteration: u64,
    /// Seconds of the recording machine: one row per execution (the replayed iterations'
    /// executions in order), one column per rank of the class (ascending).
    pub seconds: Vec<Vec<f64>>,
    /// Leading rows that replay the loop's first iteration as recorded, unscaled (see
    /// [`mpiskel_cut::replay::FIRST_APART`]); a skeleton that runs more iterations than the table holds starts
    /// again after them.
    #[serde(default)]
    pub first_rows: usize,
    /// The factor the recorded values were scaled by: the loop's recorded computation over all
    /// its iterations, in every class, over that of the iterations replayed (× `full / run`),
    /// one factor for all the loop's replayed blocks so that the pattern across ranks and
    /// classes stays.
    pub scale: f64,
    /// Whether the "loop" is the steps of one kind of a time-step loop (`full`: that kind's
    /// steps in the application; `iterations`: which of them, counted among that kind's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steps: bool,
}

impl Replay {
    /// What one iteration of the table's loop is, for the emitted comments.
    pub fn unit(&self) -> &'static str {
        if self.steps {
            "step"
        } else {
            "iteration"
        }
    }

    /// The loop whose iterations it replays, for the emitted comments: `of 0-9` or `of the 12
    /// steps of this kind`.
    pub fn of_what(&self) -> String {
        if self.steps {
            format!("of the {} steps of this kind", self.full)
        } else {
            format!("of 0-{}", self.full.saturating_sub(1))
        }
    }
}

/// What cutting one kind's step short did ([`super::StepCase::cut`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepCut {
    /// Calls of the whole step.
    pub calls: u64,
    /// Calls of the part the skeleton runs.
    pub kept_calls: u64,
    /// Bytes the whole step sends.
    pub bytes: f64,
    /// The part ends with this collective of all ranks of the step (counted from 1).
    pub collective: u64,
    /// The step's recorded time over the part's: what the kind's time is multiplied by for the
    /// rest of the step (included in [`StepCase::scale`]).
    pub factor: f64,
}
