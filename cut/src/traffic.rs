//! The communication a skeleton runs, against the application's: its MPI calls and the bytes
//! they send, over every rank, with every loop at the iterations the skeleton runs and at the
//! application's (the warm-up iteration the skeleton skips included in the application's).
//!
//! A skeleton keeps every message and collective at its recorded size: cutting iterations takes
//! their communication out, cutting computation does not. Where communication takes most of a
//! run (a slow network; a program of a few long collectives, as NPB FT's six iterations of an
//! all-to-all), the share of the bytes the skeleton sends is a floor under its length that no
//! compute cut lowers, and a build whose estimate counts only computation (a time-independent
//! trace records no time for its calls) would not see it. [`traffic`] measures that floor;
//! `build` names it when it is over the target.
//!
//! # Complexity
//! O(size of the program).

use serde::{Deserialize, Serialize};

use mpiskel_compress::When;
use mpiskel_program::{Call, Phase, Skeleton, Stmt};

/// MPI calls and bytes sent, by the skeleton and by the application, over every rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Traffic {
    /// Calls the application made.
    pub calls_app: f64,
    /// Calls the skeleton makes.
    pub calls_run: f64,
    /// Bytes the application sent (point-to-point payloads, and each rank's part of every
    /// collective as recorded).
    pub bytes_app: f64,
    /// Bytes the skeleton sends.
    pub bytes_run: f64,
    /// The phase whose communication in the skeleton is the largest share of the application's
    /// (by bytes where anything is sent, else by calls), and that share.
    pub heaviest_phase: String,
    /// [`Traffic::heaviest_phase`]'s share.
    pub heaviest_share: f64,
}

impl Traffic {
    /// Adds a phase's calls and bytes ([`phase_traffic`]) on each of `ranks` ranks.
    fn add(&mut self, ranks: f64, ((ac, ab), (rc, rb)): ((f64, f64), (f64, f64))) {
        self.calls_app += ranks * ac;
        self.calls_run += ranks * rc;
        self.bytes_app += ranks * ab;
        self.bytes_run += ranks * rb;
    }

    /// Share of the application's calls the skeleton makes (1 where there are none).
    pub fn calls_share(&self) -> f64 {
        share(self.calls_run, self.calls_app)
    }

    /// Share of the application's bytes the skeleton sends (1 where there are none).
    pub fn bytes_share(&self) -> f64 {
        share(self.bytes_run, self.bytes_app)
    }

    /// The larger of the two shares: the least share of the application's time the skeleton can
    /// take where communication is all of it.
    pub fn floor(&self) -> f64 {
        if self.bytes_app > 0.0 {
            self.calls_share().max(self.bytes_share())
        } else {
            self.calls_share()
        }
    }

    /// One line for a person: the shares and the phase that sends most.
    pub fn describe(&self) -> String {
        let bytes = if self.bytes_app > 0.0 {
            format!(" and {:.1} % of the bytes they send", 100.0 * self.bytes_share())
        } else {
            String::new()
        };
        let heaviest = if self.heaviest_phase.is_empty() {
            String::new()
        } else {
            format!(" ({} alone runs {:.1} %)", self.heaviest_phase, 100.0 * self.heaviest_share)
        };
        format!(
            "the skeleton makes {:.1} % of the application's MPI calls{bytes}, each at its \
             recorded size{heaviest}",
            100.0 * self.calls_share()
        )
    }
}

fn share(run: f64, app: f64) -> f64 {
    if app > 0.0 {
        run / app
    } else {
        1.0
    }
}

/// Calls and bytes of one statement list per pass; `inner` gives the count run of the
/// statement at that index (a cut inner loop) in place of its own. With `top`, the statements
/// guarded to the first or last iteration of the phase's loop are left out (they run once, not
/// per iteration; see [`phase_traffic`]).
fn pass(body: &[Stmt], inner: Option<(usize, u64)>, app: bool, top: bool) -> (f64, f64) {
    let mut calls = 0.0;
    let mut bytes = 0.0;
    for (i, s) in body.iter().enumerate() {
        let (c, b) = match s {
            Stmt::Compute { .. } => (0.0, 0.0),
            Stmt::Call { call, .. } => (1.0, sent(call)),
            Stmt::Loop { count, body, .. } => {
                let n = match inner {
                    Some((at, run)) if at == i && !app => run,
                    _ => *count,
                };
                let (c, b) = pass(body, None, app, false);
                (n as f64 * c, n as f64 * b)
            }
            Stmt::Guard { depth: 0, when: When::First | When::Last, .. } if top => (0.0, 0.0),
            Stmt::Guard { body, .. } => pass(body, None, app, false),
            Stmt::Steps { cases } => {
                // Per step of the phase: the mean over the steps of each kind.
                let n: u64 = cases.iter().map(|c| if app { c.full } else { c.run }).sum();
                let (mut c, mut b) = (0.0, 0.0);
                for case in cases {
                    let k = if app { case.full } else { case.run } as f64;
                    // A step cut short stands for the whole step in the application.
                    let (cc, bb) = match case.cut {
                        Some(cut) if app => (cut.calls as f64, cut.bytes),
                        _ => pass(&case.body, None, app, false),
                    };
                    c += k * cc;
                    b += k * bb;
                }
                if n > 0 {
                    (c / n as f64, b / n as f64)
                } else {
                    (0.0, 0.0)
                }
            }
        };
        calls += c;
        bytes += b;
    }
    (calls, bytes)
}

/// Bytes a call sends from the rank that makes it.
fn sent(call: &Call) -> f64 {
    match call {
        Call::Send { bytes, .. } | Call::SendRecv { bytes, .. } => *bytes as f64,
        Call::Collective { bytes, .. } => *bytes as f64,
        _ => 0.0,
    }
}

/// Calls and bytes of one iteration of a phase (the application's, the skeleton's) and of its
/// statements that run once: what [`phase_traffic`] scales by the iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PerIteration {
    app: (f64, f64),
    run: (f64, f64),
    once: (f64, f64),
}

impl PerIteration {
    fn of(p: &Phase) -> PerIteration {
        let guarded =
            |s: &Stmt| matches!(s, Stmt::Guard { depth: 0, when: When::First | When::Last, .. });
        let once: Vec<Stmt> = p.body.iter().filter(|s| guarded(s)).cloned().collect();
        let inner = p.inner.map(|c| (c.index, c.run));
        let app = match &p.skipped {
            Some(skipped) => pass(skipped, None, true, true),
            None => pass(&p.body, None, true, true),
        };
        PerIteration {
            app,
            run: pass(&p.body, inner, false, true),
            once: pass(&once, None, true, false),
        }
    }
}

/// Calls and bytes of a phase over all its iterations: the application's, and the skeleton's.
/// Statements guarded to the first or last iteration of the phase's loop run once.
fn phase_traffic(p: &Phase) -> ((f64, f64), (f64, f64)) {
    phase_totals(p, &PerIteration::of(p))
}

/// [`phase_traffic`] of `p` from its calls and bytes per iteration `per`.
fn phase_totals(p: &Phase, per: &PerIteration) -> ((f64, f64), (f64, f64)) {
    let ((ac, ab), (rc, rb), (oc, ob)) = (per.app, per.run, per.once);
    let full = p.full as f64;
    let run = if p.skipped.is_some() { 1.0 } else { p.run as f64 };
    // A time-step loop's body stands for one step; its counts are the steps of each kind.
    let steps = matches!(p.body.as_slice(), [Stmt::Steps { .. }]);
    let (app_n, run_n) = if steps {
        let total = |f: &dyn Fn(&mpiskel_program::StepCase) -> u64| match &p.body[0] {
            Stmt::Steps { cases } => cases.iter().map(f).sum::<u64>() as f64,
            _ => 0.0,
        };
        (total(&|c| c.full), total(&|c| c.run))
    } else {
        (full, run)
    };
    // A part of a stretch cut short stands for the stretch's calls it does not make as well.
    let app = ((app_n * ac + oc) * p.scale, (app_n * ab + ob) * p.scale);
    let skel = (run_n * rc + oc, run_n * rb + ob);
    (app, skel)
}

/// The floor of [`Traffic`] ([`Traffic::floor`]) of a skeleton whose loops run other numbers of
/// iterations than `skel`'s: each phase's calls and bytes per iteration are counted once, so
/// that each skeleton asked of costs O(phases), not O(size of the program) — a program of
/// thousands of loops, each cut tried asking it again (`pipeline::cut_for_traffic`), would
/// otherwise take minutes.
#[derive(Debug)]
pub struct FloorOfRuns {
    /// Per class, per phase: its inner cut when counted, and its counts.
    per: Vec<Vec<Counted>>,
}

/// A phase's inner cut (index, iterations run) when it was counted, and its counts.
type Counted = (Option<(usize, u64)>, PerIteration);

impl FloorOfRuns {
    /// Counts `skel`'s phases.
    pub fn new(skel: &Skeleton) -> FloorOfRuns {
        let per = skel
            .classes
            .iter()
            .map(|c| {
                c.phases
                    .iter()
                    .map(|p| (p.inner.map(|i| (i.index, i.run)), PerIteration::of(p)))
                    .collect()
            })
            .collect();
        FloorOfRuns { per }
    }

    /// [`Traffic::floor`] of `skel`: `traffic(skel).floor()`, from the counts where its phases
    /// are those counted (a phase whose inner cut differs is counted again).
    pub fn floor(&self, skel: &Skeleton) -> f64 {
        let same = self.per.len() == skel.classes.len()
            && self.per.iter().zip(&skel.classes).all(|(p, c)| p.len() == c.phases.len());
        if !same {
            return traffic(skel).floor();
        }
        let mut t = Traffic::default();
        for (c, per) in skel.classes.iter().zip(&self.per) {
            let ranks = c.ranks.len() as f64;
            for (p, (inner, counted)) in c.phases.iter().zip(per) {
                let totals = if *inner == p.inner.map(|i| (i.index, i.run)) {
                    phase_totals(p, counted)
                } else {
                    phase_traffic(p)
                };
                t.add(ranks, totals);
            }
        }
        t.floor()
    }
}

/// The communication `skel` runs against the application's, over every rank.
pub fn traffic(skel: &Skeleton) -> Traffic {
    let mut t = Traffic::default();
    let mut per_phase: Vec<(String, f64, f64)> = Vec::new();
    // Where each phase name is in `per_phase`: a program of hundreds of set-up loops has
    // thousands of phases, and this runs once per loop cut tried.
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for c in &skel.classes {
        let ranks = c.ranks.len() as f64;
        for p in &c.phases {
            let totals = phase_traffic(p);
            let (rc, rb) = totals.1;
            t.add(ranks, totals);
            match at.get(p.name.as_str()) {
                Some(&i) => {
                    per_phase[i].1 += ranks * rb;
                    per_phase[i].2 += ranks * rc;
                }
                None => {
                    at.insert(&p.name, per_phase.len());
                    per_phase.push((p.name.clone(), ranks * rb, ranks * rc));
                }
            }
        }
    }
    // The phase that runs the most: by bytes where the program sends any, else by calls.
    let by_bytes = t.bytes_app > 0.0;
    let total = if by_bytes { t.bytes_app } else { t.calls_app };
    let key = |e: &(String, f64, f64)| if by_bytes { e.1 } else { e.2 };
    if let Some((name, bytes, calls)) =
        per_phase.into_iter().max_by(|a, b| key(a).total_cmp(&key(b)))
    {
        let run = if by_bytes { bytes } else { calls };
        if total > 0.0 && run > 0.0 {
            t.heaviest_phase = name;
            t.heaviest_share = run / total;
        }
    }
    t
}
