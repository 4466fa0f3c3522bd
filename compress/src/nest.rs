//! The loop-nest program: what compression hands out.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// A symbol of the input sequence. What it stands for is the caller's business.
pub type Sym = u32;

/// Statistics of the weights (e.g. compute-gap durations) of every input position folded into
/// one program position.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of input positions folded here.
    pub n: u64,
    /// Their mean weight.
    pub mean: f64,
    /// Smallest weight.
    pub min: f64,
    /// Largest weight.
    pub max: f64,
    /// Standard deviation (population).
    pub std: f64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Acc {
    n: u64,
    sum: f64,
    sumsq: f64,
    min: f64,
    max: f64,
}

impl Acc {
    pub(crate) fn add(&mut self, w: f64) {
        if self.n == 0 {
            self.min = w;
            self.max = w;
        } else {
            self.min = self.min.min(w);
            self.max = self.max.max(w);
        }
        self.n += 1;
        self.sum += w;
        self.sumsq += w * w;
    }

    pub(crate) fn stats(&self) -> Stats {
        let n = self.n.max(1) as f64;
        let mean = self.sum / n;
        Stats {
            n: self.n,
            mean,
            min: self.min,
            max: self.max,
            std: (self.sumsq / n - mean * mean).max(0.0).sqrt(),
        }
    }
}

/// One element of a loop-nest program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    /// One input symbol, with the statistics of the weights of the positions it stands for.
    Sym {
        /// The symbol.
        sym: Sym,
        /// Weight statistics (absent when compressing without weights).
        stats: Option<Stats>,
    },
    /// `body` repeated `count` times.
    Loop {
        /// Number of iterations (≥ 2).
        count: u64,
        /// The loop body.
        body: Vec<Node>,
    },
    /// Time steps of different kinds: iteration `i` runs `kinds[schedule[i]]` (see
    /// [`crate::find_steps`]). The loop an irregular time-step loop becomes.
    Steps {
        /// The kind of each iteration, in order.
        schedule: Vec<u32>,
        /// The body of each kind.
        kinds: Vec<Vec<Node>>,
    },
    /// Inside a loop body: `body` runs only in the iteration `when` names.
    Guard {
        /// Which iteration of the enclosing loop.
        when: When,
        /// What runs then.
        body: Vec<Node>,
    },
}

/// The iteration a [`Node::Guard`] runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// The first iteration only.
    First,
    /// The last iteration only.
    Last,
}

impl When {
    fn runs(self, iteration: u64, count: u64) -> bool {
        match self {
            When::First => iteration == 0,
            When::Last => iteration + 1 == count,
        }
    }
}

fn seq_len(nodes: &[Node]) -> u64 {
    nodes.iter().map(Node::expanded_len).sum()
}

/// Symbols in one iteration of a loop body, without its guarded parts.
pub(crate) fn regular_len(body: &[Node]) -> u64 {
    body.iter().filter(|n| !matches!(n, Node::Guard { .. })).map(Node::expanded_len).sum()
}

impl Node {
    /// Number of input symbols this node expands to.
    pub fn expanded_len(&self) -> u64 {
        match self {
            Node::Sym { .. } => 1,
            Node::Loop { count, body } => {
                count * regular_len(body) + (seq_len(body) - regular_len(body))
            }
            Node::Steps { schedule, kinds } => {
                let lens: Vec<u64> = kinds.iter().map(|k| seq_len(k)).collect();
                schedule.iter().map(|&k| lens[k as usize]).sum()
            }
            // Counted once; only meaningful inside a loop, which accounts for it.
            Node::Guard { body, .. } => seq_len(body),
        }
    }

    /// Number of symbols written in the program: 1 per symbol, 1 per loop plus its body.
    pub fn program_len(&self) -> u64 {
        match self {
            Node::Sym { .. } => 1,
            Node::Loop { body, .. } | Node::Guard { body, .. } => {
                1 + body.iter().map(Node::program_len).sum::<u64>()
            }
            Node::Steps { kinds, .. } => {
                1 + kinds.iter().flatten().map(Node::program_len).sum::<u64>()
            }
        }
    }

    /// Iterations of a loop (`Loop` or `Steps`); `None` for other nodes.
    pub fn iterations(&self) -> Option<u64> {
        match self {
            Node::Loop { count, .. } => Some(*count),
            Node::Steps { schedule, .. } => Some(schedule.len() as u64),
            _ => None,
        }
    }

    /// For a `Steps` node, how many steps of each kind it holds (indexed by kind); empty for
    /// other nodes. O(steps).
    pub fn step_counts(&self) -> Vec<u64> {
        let Node::Steps { schedule, kinds } = self else { return Vec::new() };
        let mut counts = vec![0u64; kinds.len()];
        for &k in schedule {
            counts[k as usize] += 1;
        }
        counts
    }
}

/// A loop-nest program: a sequence of symbols and loops that expands to the input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopNest {
    /// The top-level sequence.
    pub items: Vec<Node>,
}

/// Figures describing how well a nest compresses its input.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NestReport {
    /// Length of the input.
    pub input_len: u64,
    /// Input positions inside some loop.
    pub covered: u64,
    /// `covered / input_len` (1 for empty input).
    pub coverage: f64,
    /// Symbols written in the program ([`Node::program_len`] summed).
    pub compressed_len: u64,
    /// `input_len / compressed_len`.
    pub ratio: f64,
}

/// Fewest calls in the body of a main loop of two iterations: a short sequence that happens to
/// repeat once (NPB EP's two closing reductions) is no evidence of an iterating program; a
/// longer one (two sweeps of a wavefront) is.
pub const MAIN_LOOP_PAIR_MIN_BODY: u64 = 4;

/// Index, among `items`, of the main loop: the top-level loop (or time-step loop) covering the
/// most input positions, of at least three iterations, or of two whose body holds at least
/// [`MAIN_LOOP_PAIR_MIN_BODY`] calls. `None` for a program without one.
pub fn main_loop_index(items: &[Node]) -> Option<usize> {
    let iterating = |n: &Node| match n.iterations() {
        Some(k) if k >= 3 => true,
        Some(2) => n.expanded_len() >= 2 * MAIN_LOOP_PAIR_MIN_BODY,
        _ => false,
    };
    items
        .iter()
        .enumerate()
        .filter(|(_, n)| iterating(n))
        .max_by_key(|(_, n)| n.expanded_len())
        .map(|(i, _)| i)
}

impl LoopNest {
    /// The symbol sequence the program stands for.
    pub fn expand(&self) -> Vec<Sym> {
        let mut out =
            Vec::with_capacity(self.items.iter().map(Node::expanded_len).sum::<u64>() as usize);
        fn go(nodes: &[Node], out: &mut Vec<Sym>, iteration: u64, count: u64) {
            for n in nodes {
                match n {
                    Node::Sym { sym, .. } => out.push(*sym),
                    Node::Loop { count, body } => {
                        for i in 0..*count {
                            go(body, out, i, *count);
                        }
                    }
                    Node::Steps { schedule, kinds } => {
                        for (i, &k) in schedule.iter().enumerate() {
                            go(&kinds[k as usize], out, i as u64, schedule.len() as u64);
                        }
                    }
                    Node::Guard { when, body } => {
                        if when.runs(iteration, count) {
                            go(body, out, iteration, count);
                        }
                    }
                }
            }
        }
        go(&self.items, &mut out, 0, 1);
        out
    }

    /// Coverage and compression figures.
    pub fn report(&self) -> NestReport {
        let input_len: u64 = self.items.iter().map(Node::expanded_len).sum();
        let covered: u64 =
            self.items.iter().filter(|n| n.iterations().is_some()).map(Node::expanded_len).sum();
        let compressed_len: u64 = self.items.iter().map(Node::program_len).sum();
        NestReport {
            input_len,
            covered,
            coverage: if input_len == 0 { 1.0 } else { covered as f64 / input_len as f64 },
            compressed_len,
            ratio: if compressed_len == 0 { 1.0 } else { input_len as f64 / compressed_len as f64 },
        }
    }

    /// The top-level loop (or time-step loop) covering the most input positions: the main loop.
    /// See [`main_loop_index`].
    pub fn main_loop(&self) -> Option<&Node> {
        main_loop_index(&self.items).map(|i| &self.items[i])
    }

    /// The program in the notation of Xu & Subhlok (2008, §3): runs of plain symbols as their
    /// count, loops as `(body)^count`, elements joined by ` + `; e.g. `(13 + (4)^3 + 12)^200`.
    /// A part of a body that runs only in the first or last iteration is written
    /// `[first: …]`/`[last: …]`; time steps of several kinds `{24 ×230 | 36 ×12}^242` (each
    /// kind's body and how many steps are of that kind).
    pub fn notation(&self) -> String {
        notation(&self.items)
    }

    /// For each input position, the `Sym` node (numbered in pre-order) that stands for it: every
    /// iteration of a loop walks its body with the same numbers.
    pub fn leaf_of_position(&self) -> Vec<usize> {
        fn ids(nodes: &[Node], next: &mut usize, out: &mut Vec<usize>, iteration: u64, count: u64) {
            for n in nodes {
                match n {
                    Node::Sym { .. } => {
                        out.push(*next);
                        *next += 1;
                    }
                    Node::Loop { count, body } => {
                        let start = *next;
                        for i in 0..*count {
                            *next = start;
                            ids(body, next, out, i, *count);
                        }
                        *next = start + leaf_count(body);
                    }
                    Node::Steps { schedule, kinds } => {
                        let start = *next;
                        let mut offset = Vec::with_capacity(kinds.len());
                        let mut at = start;
                        for k in kinds {
                            offset.push(at);
                            at += leaf_count(k);
                        }
                        for (i, &k) in schedule.iter().enumerate() {
                            *next = offset[k as usize];
                            ids(&kinds[k as usize], next, out, i as u64, schedule.len() as u64);
                        }
                        *next = at;
                    }
                    Node::Guard { when, body } => {
                        if when.runs(iteration, count) {
                            ids(body, next, out, iteration, count);
                        } else {
                            *next += leaf_count(body);
                        }
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(usize::try_from(seq_len(&self.items)).unwrap_or(0));
        ids(&self.items, &mut 0, &mut out, 0, 1);
        out
    }

    /// Attaches weight statistics: `weights[i]` belongs to input position `i`. Every program
    /// position gets the statistics of the input positions it stands for.
    ///
    /// # Panics
    /// If `weights` is not as long as the expansion.
    pub fn attach_weights(&mut self, weights: &[f64]) {
        fn set(nodes: &mut [Node], accs: &[Acc], k: &mut usize) {
            for n in nodes {
                match n {
                    Node::Sym { stats, .. } => {
                        *stats = Some(accs[*k].stats());
                        *k += 1;
                    }
                    Node::Loop { body, .. } | Node::Guard { body, .. } => set(body, accs, k),
                    Node::Steps { kinds, .. } => {
                        for body in kinds {
                            set(body, accs, k);
                        }
                    }
                }
            }
        }
        let order = self.leaf_of_position();
        let n_nodes = leaf_count(&self.items);
        assert_eq!(order.len(), weights.len(), "one weight per input position");
        let mut accs = vec![Acc::default(); n_nodes];
        for (id, w) in order.into_iter().zip(weights) {
            accs[id].add(*w);
        }
        set(&mut self.items, &accs, &mut 0);
    }
}

fn notation(nodes: &[Node]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut plain = 0u64;
    for n in nodes {
        match n {
            Node::Sym { .. } => plain += 1,
            Node::Loop { count, body } => {
                if plain > 0 {
                    parts.push(plain.to_string());
                    plain = 0;
                }
                let mut s = String::new();
                let _ = write!(s, "({})^{count}", notation(body));
                parts.push(s);
            }
            Node::Steps { schedule, kinds } => {
                if plain > 0 {
                    parts.push(plain.to_string());
                    plain = 0;
                }
                let cases: Vec<String> = kinds
                    .iter()
                    .zip(&n.step_counts())
                    .map(|(k, c)| format!("{} ×{c}", notation(k)))
                    .collect();
                parts.push(format!("{{{}}}^{}", cases.join(" | "), schedule.len()));
            }
            Node::Guard { when, body } => {
                if plain > 0 {
                    parts.push(plain.to_string());
                    plain = 0;
                }
                let w = match when {
                    When::First => "first",
                    When::Last => "last",
                };
                parts.push(format!("[{w}: {}]", notation(body)));
            }
        }
    }
    if plain > 0 {
        parts.push(plain.to_string());
    }
    parts.join(" + ")
}

/// Number of `Sym` nodes in `nodes`, loops' bodies counted once.
pub fn leaf_count(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match n {
            Node::Sym { .. } => 1,
            Node::Loop { body, .. } | Node::Guard { body, .. } => leaf_count(body),
            Node::Steps { kinds, .. } => kinds.iter().map(|k| leaf_count(k)).sum(),
        })
        .sum()
}
