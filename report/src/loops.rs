//! The loop nest of one class program as a tree, with each node's share of the application's
//! computation and of the bytes it sends.
//!
//! Every statement counts as often as the application executed it: a phase's body times its
//! iterations, a loop's body times its count on top, a guarded statement once per execution
//! of the loop around it, a time step's case as many times as the application had steps of
//! that kind. Runs of calls and compute blocks between loops become one leaf each, named by
//! the calls they hold.
//!
//! # Complexity
//! O(statements) per class.

use std::collections::BTreeMap;

use mpiskel_program::{Call, ClassProgram, Phase, Stmt};
use serde::Serialize;

/// One node of a class's loop tree.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    /// What it is: `main_loop ×50 (runs 1)`, `loop ×25`, `6 calls: MPI_Irecv ×2, …`.
    pub label: String,
    /// The loop in Xu & Subhlok's (2008, §3) notation, for loops.
    pub notation: String,
    /// Recorded computation over all its executions in the application, seconds.
    pub compute_s: f64,
    /// Bytes it sends over all its executions in the application.
    pub bytes: f64,
    /// Its share of the class's computation, percent.
    pub compute_pct: f64,
    /// Its share of the class's bytes sent, percent.
    pub bytes_pct: f64,
    /// Calls over all its executions.
    pub calls: f64,
    /// Its statements (empty for a leaf).
    pub children: Vec<Node>,
}

/// The tree of one class: a node per phase, in order, with shares of the class's totals.
pub fn class_tree(class: &ClassProgram) -> Vec<Node> {
    let mut nodes: Vec<Node> = class.phases.iter().map(phase_node).collect();
    let compute: f64 = nodes.iter().map(|n| n.compute_s).sum();
    let bytes: f64 = nodes.iter().map(|n| n.bytes).sum();
    for n in &mut nodes {
        shares(n, compute, bytes);
    }
    nodes
}

fn shares(n: &mut Node, compute: f64, bytes: f64) {
    n.compute_pct = if compute > 0.0 { 100.0 * n.compute_s / compute } else { 0.0 };
    n.bytes_pct = if bytes > 0.0 { 100.0 * n.bytes / bytes } else { 0.0 };
    for c in &mut n.children {
        shares(c, compute, bytes);
    }
}

fn phase_node(p: &Phase) -> Node {
    let label = if p.is_loop {
        let warm = if p.warmup > 0 {
            format!(", {} warm-up priced as iterations", p.warmup)
        } else {
            String::new()
        };
        format!("{} ×{} (the skeleton runs {}{warm})", p.name, p.full, p.run)
    } else if p.name == mpiskel_program::WARMUP {
        format!("{} (one iteration of the main loop, not run: priced as one more of it)", p.name)
    } else {
        p.name.clone()
    };
    let mut body = p.skipped.clone().unwrap_or_else(|| p.body.clone());
    // A cut inner loop counts its iterations in the application.
    if let Some(ic) = p.inner.filter(|_| p.skipped.is_none()) {
        if let Some(Stmt::Loop { count, .. }) = body.get_mut(ic.index) {
            *count = ic.full;
        }
    }
    let children = walk(&body, p.full as f64, 1.0);
    sum(label, String::new(), children)
}

fn sum(label: String, notation: String, children: Vec<Node>) -> Node {
    Node {
        label,
        notation,
        compute_s: children.iter().map(|c| c.compute_s).sum(),
        bytes: children.iter().map(|c| c.bytes).sum(),
        calls: children.iter().map(|c| c.calls).sum(),
        compute_pct: 0.0,
        bytes_pct: 0.0,
        children,
    }
}

/// The nodes of `stmts`, each executed `times` times in the application; `outer`: how many
/// times the loop around them ran whole (a guard runs once per run of that loop).
fn walk(stmts: &[Stmt], times: f64, outer: f64) -> Vec<Node> {
    let mut out = Vec::new();
    let mut run = Straight::default();
    for st in stmts {
        match st {
            Stmt::Compute { seconds, .. } => run.compute_s += seconds * times,
            Stmt::Call { call, .. } => run.add(call, times),
            Stmt::Loop { count, body, note, .. } => {
                run.flush(&mut out);
                let count = *count as f64;
                let children = walk(body, times * count, times);
                out.push(sum(format!("loop ×{count}"), note.clone(), children));
            }
            Stmt::Guard { when, body, .. } => {
                run.flush(&mut out);
                let children = walk(body, outer, outer);
                let which = format!("{when:?}").to_lowercase();
                out.push(sum(format!("only in the {which} iteration"), String::new(), children));
            }
            Stmt::Steps { cases } => {
                run.flush(&mut out);
                for (k, case) in cases.iter().enumerate() {
                    let n = case.full as f64;
                    let children = walk(&case.body, n, n);
                    out.push(sum(
                        format!(
                            "step kind {k}: {} steps (the skeleton runs {})",
                            case.full, case.run
                        ),
                        case.note.clone(),
                        children,
                    ));
                }
            }
        }
    }
    run.flush(&mut out);
    out
}

/// Calls and computation between two loops.
#[derive(Default)]
struct Straight {
    ops: BTreeMap<&'static str, f64>,
    n: usize,
    calls: f64,
    compute_s: f64,
    bytes: f64,
}

impl Straight {
    fn add(&mut self, call: &Call, times: f64) {
        let (name, bytes) = match call {
            Call::Send { op, bytes, .. } => (op.name(), *bytes),
            Call::Recv { op, .. } => (op.name(), 0),
            Call::SendRecv { bytes, .. } => ("Sendrecv", *bytes),
            Call::Probe { .. } => ("Iprobe", 0),
            Call::Complete { traced, .. } => (traced.name(), 0),
            Call::Collective { traced, bytes, .. } => (traced.name(), *bytes),
        };
        *self.ops.entry(name).or_default() += 1.0;
        self.n += 1;
        self.calls += times;
        self.bytes += bytes as f64 * times;
    }

    fn flush(&mut self, out: &mut Vec<Node>) {
        if self.n == 0 && self.compute_s == 0.0 {
            return;
        }
        let label = if self.n == 0 {
            "computation".to_owned()
        } else {
            let ops: Vec<String> =
                self.ops.iter().map(|(op, k)| format!("MPI_{op} ×{k}")).collect();
            format!("{} call{}: {}", self.n, if self.n == 1 { "" } else { "s" }, ops.join(", "))
        };
        out.push(Node {
            label,
            notation: String::new(),
            compute_s: self.compute_s,
            bytes: self.bytes,
            calls: self.calls,
            compute_pct: 0.0,
            bytes_pct: 0.0,
            children: Vec::new(),
        });
        *self = Straight::default();
    }
}
