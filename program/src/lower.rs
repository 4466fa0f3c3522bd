//! A class's loop nest lowered to phases: the leaves of the nest, the loops around each, and
//! the statements of every phase.

use mpiskel_compress::{LoopNest, Node};
use mpiskel_logicalize::ProcessClass;

use super::*;

/// One compute block of a class program as recorded: its mean, the distribution its durations
/// are drawn from, its per-rank factors, the failed polls made after it, and the wall time
/// beyond it until the call after it returns (the means over the ranks and executions of the
/// leaf; 0 where the trace holds no call times), and of that wall time the part the ranks spent
/// off the processor during the block (0 where the trace holds no processor times).
#[derive(Debug, Clone, Copy)]
pub(super) struct Gap {
    pub(super) seconds: f64,
    pub(super) dist: Option<usize>,
    pub(super) factors: Option<usize>,
    pub(super) polls: f64,
    pub(super) wait: f64,
    pub(super) off: f64,
}

/// Numbers every `Sym` node of a nest in pre-order (the numbering
/// [`LoopNest::leaf_of_position`] uses).
pub(super) fn leaves(nodes: &[Node], out: &mut Vec<Node>) {
    for n in nodes {
        match n {
            Node::Sym { .. } => out.push(n.clone()),
            Node::Loop { body, .. } | Node::Guard { body, .. } => leaves(body, out),
            Node::Steps { kinds, .. } => kinds.iter().for_each(|k| leaves(k, out)),
        }
    }
}

/// A loop around a leaf: its count, the depth of its variable (0: the phase's loop), and the
/// leaves it holds (`lo..hi`).
#[derive(Debug, Clone, Copy)]
pub(super) struct LoopSpan {
    pub(super) count: u64,
    pub(super) depth: usize,
    pub(super) lo: usize,
    pub(super) hi: usize,
}

/// For every leaf (pre-order), the loops around it, outermost first.
pub(super) fn leaf_loops(items: &[Node]) -> Vec<Vec<LoopSpan>> {
    fn walk(nodes: &[Node], depth: usize, stack: &mut Vec<LoopSpan>, out: &mut Vec<Vec<LoopSpan>>) {
        for n in nodes {
            match n {
                Node::Sym { .. } => out.push(stack.clone()),
                Node::Loop { count, body } => {
                    let lo = out.len();
                    let hi = lo + mpiskel_compress::leaf_count(body);
                    stack.push(LoopSpan { count: *count, depth, lo, hi });
                    walk(body, depth + 1, stack, out);
                    stack.pop();
                }
                Node::Steps { schedule, kinds } => {
                    let lo = out.len();
                    let hi =
                        lo + kinds.iter().map(|k| mpiskel_compress::leaf_count(k)).sum::<usize>();
                    let count = schedule.len() as u64;
                    stack.push(LoopSpan { count, depth, lo, hi });
                    for k in kinds {
                        walk(k, depth + 1, stack, out);
                    }
                    stack.pop();
                }
                Node::Guard { body, .. } => walk(body, depth, stack, out),
            }
        }
    }
    let mut out = Vec::new();
    walk(items, 0, &mut Vec::new(), &mut out);
    out
}

/// Per leaf of one class's nest: the program positions it stands for.
#[derive(Debug)]
pub struct LeafMap {
    /// The program positions of each leaf.
    pub positions: Positions,
    /// The leaf of each program position.
    pub leaf_of: Vec<usize>,
}

/// The positions of each leaf, in one flat list with a start per leaf: a class of millions of
/// calls that fold into no loop has a leaf per call, and a list of its own per leaf would cost
/// an allocation and 56 bytes each, 16 bytes so.
#[derive(Debug)]
pub struct Positions {
    starts: Vec<usize>,
    flat: Vec<usize>,
}

impl Positions {
    /// Number of leaves.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Whether there is no leaf.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The positions of `leaf`, ascending.
    pub fn get(&self, leaf: usize) -> Option<&[usize]> {
        let (&a, &b) = (self.starts.get(leaf)?, self.starts.get(leaf + 1)?);
        Some(&self.flat[a..b])
    }

    /// The positions of each leaf in order.
    pub fn iter(&self) -> impl Iterator<Item = &[usize]> + '_ {
        self.starts.windows(2).map(|w| &self.flat[w[0]..w[1]])
    }
}

impl std::ops::Index<usize> for Positions {
    type Output = [usize];

    fn index(&self, leaf: usize) -> &[usize] {
        &self.flat[self.starts[leaf]..self.starts[leaf + 1]]
    }
}

/// The leaves of `nest` (of `n_leaves` leaves) and the program positions each stands for.
pub fn leaf_map(nest: &LoopNest, n_leaves: usize) -> LeafMap {
    let leaf_of = nest.leaf_of_position();
    // Counted first, then placed: one list for all leaves.
    let mut starts = vec![0usize; n_leaves + 1];
    for &l in &leaf_of {
        starts[l + 1] += 1;
    }
    for i in 0..n_leaves {
        starts[i + 1] += starts[i];
    }
    let mut next = starts.clone();
    let mut flat = vec![0usize; leaf_of.len()];
    for (p, &l) in leaf_of.iter().enumerate() {
        flat[next[l]] = p;
        next[l] += 1;
    }
    LeafMap { positions: Positions { starts, flat }, leaf_of }
}

/// Splits a class's nest into phases: each top-level loop is one, straight-line runs between
/// them are one each.
///
/// `stretches` are the class's parts of stretches cut short (`mpiskel_trace::stretch`):
/// positions `from..to` and the scale of each. A phase begins and ends at each, and the phases
/// inside take its scale; a top-level loop across one of their ends is refused (`Err` with the
/// stretch's index in `stretches`).
pub(super) fn phases_of(
    items: &[Node],
    calls: &[Option<Call>],
    gaps: &[Gap],
    class: &ProcessClass,
    stretches: &[(u64, u64, f64)],
) -> Result<Vec<Phase>, usize> {
    let main = mpiskel_compress::main_loop_index(items);
    let mut phases = Vec::new();
    let mut leaf = 0usize;
    let mut pos = 0u64;
    let mut straight: Vec<Stmt> = Vec::new();
    let mut straight_from = 0u64;
    let mut n_loops = 0;
    let total = class.ops.len() as u64;
    let flush = |straight: &mut Vec<Stmt>, from: u64, to: u64, phases: &mut Vec<Phase>| {
        if straight.is_empty() {
            return;
        }
        let body = std::mem::take(straight);
        let name = if phases.is_empty() {
            "setup".to_owned()
        } else if to == total {
            "finish".to_owned()
        } else {
            format!("step_{}", phases.len())
        };
        let origin = format!("calls {}–{} of the class program", from + 1, to);
        phases.push(Phase::new(name, 1, false, body, origin, (from, to)));
    };
    // The stretch across whose end a node of `len` positions at `pos` lies, if any.
    let across = |pos: u64, len: u64| {
        stretches
            .iter()
            .position(|&(a, b, _)| (pos < a && a < pos + len) || (pos < b && b < pos + len))
    };
    let at_end = |pos: u64| stretches.iter().any(|&(a, b, _)| a == pos || b == pos);
    // An untimed warm-up iteration of the main loop is a phase of its own, which the skeleton
    // may skip ([`mpiskel_cut::warmup`]).
    let warm = main.and_then(|m| super::warm_iteration::find(items, m));
    for (i, node) in items.iter().enumerate() {
        if let Some(w) = warm.as_ref().filter(|w| w.start == i) {
            flush(&mut straight, straight_from, pos, &mut phases);
            let span: u64 = items[w.clone()].iter().map(Node::expanded_len).sum();
            let mut body = Vec::new();
            lower(&items[w.clone()], 1, 0, calls, gaps, &mut leaf, &mut body);
            let origin = format!(
                "calls {}–{} of the class program: one iteration of the main loop before it",
                pos + 1,
                pos + span
            );
            phases.push(Phase::new(WARMUP.to_owned(), 1, false, body, origin, (pos, pos + span)));
            pos += span;
            straight_from = pos;
        }
        if warm.as_ref().is_some_and(|w| w.contains(&i)) {
            continue;
        }
        if let Some(s) = across(pos, node.expanded_len()) {
            return Err(s);
        }
        if at_end(pos) {
            flush(&mut straight, straight_from, pos, &mut phases);
            straight_from = pos;
        }
        match node {
            Node::Loop { count, body } => {
                flush(&mut straight, straight_from, pos, &mut phases);
                let span = node.expanded_len();
                let mut stmts = Vec::new();
                lower(body, 1, 0, calls, gaps, &mut leaf, &mut stmts);
                n_loops += 1;
                let name = if Some(i) == main {
                    "main_loop".to_owned()
                } else {
                    format!("loop_{n_loops}")
                };
                let origin = format!(
                    "calls {}–{} of the class program: ({})^{count}",
                    pos + 1,
                    pos + span,
                    mpiskel_compress::LoopNest { items: body.clone() }.notation()
                );
                phases.push(Phase::new(name, *count, true, stmts, origin, (pos, pos + span)));
                pos += span;
                straight_from = pos;
            }
            Node::Steps { schedule, kinds } => {
                flush(&mut straight, straight_from, pos, &mut phases);
                let span = node.expanded_len();
                let cases: Vec<StepCase> = kinds
                    .iter()
                    .zip(&node.step_counts())
                    .map(|(k, &full)| {
                        let mut body = Vec::new();
                        lower(k, 1, 0, calls, gaps, &mut leaf, &mut body);
                        let note = LoopNest { items: k.clone() }.notation();
                        StepCase { full, run: full, body, note, scale: 1.0, cut: None }
                    })
                    .collect();
                n_loops += 1;
                let name = if Some(i) == main {
                    "main_loop".to_owned()
                } else {
                    format!("loop_{n_loops}")
                };
                let body = vec![Stmt::Steps { cases }];
                let origin = format!(
                    "calls {}–{} of the class program: {}",
                    pos + 1,
                    pos + span,
                    LoopNest { items: vec![node.clone()] }.notation()
                );
                let mut phase =
                    Phase::new(name, schedule.len() as u64, true, body, origin, (pos, pos + span));
                phase.steps = Some(StepSchedule {
                    kinds: schedule.clone(),
                    run: (0..schedule.len() as u32).collect(),
                    lens: kinds.iter().map(|k| k.iter().map(Node::expanded_len).sum()).collect(),
                });
                phases.push(phase);
                pos += span;
                straight_from = pos;
            }
            other => {
                lower(std::slice::from_ref(other), 0, 0, calls, gaps, &mut leaf, &mut straight);
                pos += other.expanded_len();
            }
        }
    }
    flush(&mut straight, straight_from, pos, &mut phases);
    for p in &mut phases {
        if let Some(&(_, _, scale)) =
            stretches.iter().find(|&&(a, b, _)| a <= p.positions.0 && p.positions.1 <= b)
        {
            p.scale = scale;
        }
    }
    Ok(phases)
}

/// Lowers nest nodes into statements; `depth` is the loop depth of the statements made and
/// `enclosing` the count of the loop around them.
pub(super) fn lower(
    nodes: &[Node],
    depth: usize,
    enclosing: u64,
    calls: &[Option<Call>],
    gaps: &[Gap],
    leaf: &mut usize,
    out: &mut Vec<Stmt>,
) {
    // The waiting of calls dropped since the last call kept, and the part of it off the
    // processor, carried to the next one.
    let (mut dropped_wait, mut dropped_off) = (0.0, 0.0);
    for n in nodes {
        match n {
            Node::Sym { .. } => {
                let Gap { seconds: g, dist, factors, polls, wait, off } = gaps[*leaf];
                if g > 0.0 {
                    // Merge with a preceding plain compute block (dropped calls leave two in a
                    // row).
                    match out.last_mut() {
                        Some(Stmt::Compute {
                            seconds,
                            dist: None,
                            factors: None,
                            leaf: merged,
                            ..
                        }) if dist.is_none() && factors.is_none() => {
                            *seconds += g;
                            *merged = None;
                        }
                        _ => out.push(Stmt::Compute {
                            seconds: g,
                            dist,
                            removed: 0.0,
                            factors,
                            replay: None,
                            keep_only: false,
                            leaf: Some(*leaf),
                            pinned: None,
                        }),
                    }
                }
                if let Some(c) = &calls[*leaf] {
                    let wait_s = wait + std::mem::take(&mut dropped_wait);
                    let off_s = (off + std::mem::take(&mut dropped_off)) as f32;
                    let polls = polls.round() as u32;
                    out.push(Stmt::Call { call: c.clone(), polls, wait_s, off_s });
                } else {
                    dropped_wait += wait;
                    dropped_off += off;
                }
                *leaf += 1;
            }
            Node::Loop { count, body } => {
                let mut b = Vec::new();
                lower(body, depth + 1, *count, calls, gaps, leaf, &mut b);
                let note = format!("({})^{count}", LoopNest { items: body.clone() }.notation());
                out.push(Stmt::Loop { depth, count: *count, body: b, note });
            }
            Node::Steps { .. } => {
                // Time steps are a phase of their own (phases_of); never nested.
                unreachable!("time steps below the top level")
            }
            Node::Guard { when, body } => {
                let mut b = Vec::new();
                lower(body, depth, enclosing, calls, gaps, leaf, &mut b);
                if !b.is_empty() {
                    out.push(Stmt::Guard {
                        when: *when,
                        depth: depth.saturating_sub(1),
                        count: enclosing,
                        body: b,
                    });
                }
            }
        }
    }
}
