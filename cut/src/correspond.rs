//! Compute blocks at corresponding places of the classes' programs.
//!
//! Classes whose programs differ only in some calls (NPB MG's ranks at 256: the ranks that hold
//! the coarse levels of its V-cycle make exchanges the others skip) have phases of the same name
//! whose bodies differ, in length and in how compression folded them into loops (one class's
//! `(c a)^2` is another's `c a c a`). So a block's place in one class's program names another
//! block, or a call, in the next. Each phase is unrolled into the calls its body makes (every
//! loop expanded), each with the blocks that run right before it; the first class's sequence is
//! aligned with each other class's by a heaviest common subsequence of the calls (by kind,
//! operation, logical peer, tag and communicator; a pair with as many blocks before it weighs
//! more). The blocks between two pairs of aligned calls (before calls only one class makes
//! included) correspond one for one where both classes run as many. Blocks whose executions
//! correspond form one group; a group every execution of which, in every class, corresponds to an
//! execution of the group in every other class is a block every rank runs at the same places,
//! and the compute cut can take the same seconds out of it on every rank. This is Xu & Subhlok's
//! (2008, §4) matching of the processes' calls by their place in the program, applied to the
//! computation between them.
//!
//! # Complexity
//! O(n · m) time and space per other class, n and m the lengths of the unrolled phases; a phase
//! that unrolls to more than [`MAX_UNROLLED`] statements, or whose table would pass
//! [`MAX_CELLS`], is left out.

use std::collections::HashMap;

use petgraph::unionfind::UnionFind;

use mpiskel_program::{Call, Phase, Stmt};

/// Where a block sits in a phase's body: its index in each body from the phase's down through
/// the loops around it.
pub type Path = Vec<usize>;

/// Most statements a phase may unroll to.
pub const MAX_UNROLLED: usize = 20_000;

/// Most cells of one alignment table (4 bytes each).
pub const MAX_CELLS: usize = 16_000_000;

/// What two calls must share to stand at the same place of two classes' programs: the kind of
/// call and its operation, the logical peer and tag, the communicator (not the sizes, request
/// slots or buffer offsets, which classes may hold differently).
fn call_key(call: &Call) -> String {
    match call {
        Call::Send { op, to, tag, .. } => format!("send {op:?} {to:?} {tag}"),
        Call::Recv { op, from, tag, .. } => format!("recv {op:?} {from:?} {tag}"),
        Call::SendRecv { to, tag, from, recv_tag, .. } => {
            format!("sendrecv {to:?} {tag} {from:?} {recv_tag}")
        }
        Call::Probe { from, tag } => format!("probe {from:?} {tag}"),
        Call::Complete { how, traced, .. } => format!("complete {how:?} {traced:?}"),
        Call::Collective { op, comm, root, .. } => format!("collective {op:?} {comm} {root:?}"),
    }
}

/// One place of an unrolled phase: a statement other than a block (by its key), with the
/// blocks that run right before it (their paths); the last place, after the last statement,
/// has the key `end`.
type Place = (String, Vec<Path>);

/// A phase unrolled into places: each statement other than a block that it runs, every loop
/// expanded, with the blocks before it. Guards and time-step bodies stay one opaque statement.
/// `None` past [`MAX_UNROLLED`] statements.
fn unroll(body: &[Stmt]) -> Option<Vec<Place>> {
    fn go(
        body: &[Stmt],
        path: &mut Path,
        out: &mut Vec<Place>,
        gap: &mut Vec<Path>,
        n: &mut usize,
    ) -> Option<()> {
        for (i, st) in body.iter().enumerate() {
            path.push(i);
            *n += 1;
            match st {
                // (Every pass counts its statements, so a loop of many iterations ends the
                // unrolling early; an empty body has nothing to unroll.)
                Stmt::Loop { count, body, .. } if !body.is_empty() => {
                    for _ in 0..*count {
                        go(body, path, out, gap, n)?;
                    }
                }
                Stmt::Loop { .. } => {}
                Stmt::Compute { .. } => gap.push(path.clone()),
                Stmt::Call { call, .. } => out.push((call_key(call), std::mem::take(gap))),
                Stmt::Guard { .. } => out.push(("guard".into(), std::mem::take(gap))),
                Stmt::Steps { .. } => out.push(("steps".into(), std::mem::take(gap))),
            }
            path.pop();
            if *n > MAX_UNROLLED {
                return None;
            }
        }
        Some(())
    }
    let (mut out, mut gap, mut n) = (Vec::new(), Vec::new(), 0);
    go(body, &mut Vec::new(), &mut out, &mut gap, &mut n)?;
    out.push(("end".into(), gap));
    Some(out)
}

/// Index pairs of a heaviest common subsequence of the places `a` and `b`, in order: places
/// pair only with places of the same statement, and a pair whose blocks before it are as many
/// weighs more (of two calls alike, the one with as many blocks before it is the one at the same
/// place). `None` where the table would pass [`MAX_CELLS`].
fn align(a: &[(&str, usize)], b: &[(&str, usize)]) -> Option<Vec<(usize, usize)>> {
    let (n, m) = (a.len(), b.len());
    if (n + 1).saturating_mul(m + 1) > MAX_CELLS {
        return None;
    }
    let weight = |i: usize, j: usize| -> Option<u32> {
        (a[i].0 == b[j].0).then_some(if a[i].1 == b[j].1 { 2 } else { 1 })
    };
    // best[i][j]: the heaviest common subsequence of a[i..] and b[j..].
    let mut best = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let skip = best[at(i + 1, j)].max(best[at(i, j + 1)]);
            best[at(i, j)] = weight(i, j).map_or(skip, |w| skip.max(w + best[at(i + 1, j + 1)]));
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n && j < m {
        if weight(i, j).is_some_and(|w| best[at(i, j)] == w + best[at(i + 1, j + 1)]) {
            out.push((i, j));
            (i, j) = (i + 1, j + 1);
        } else if best[at(i, j)] == best[at(i + 1, j)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    Some(out)
}

/// A group of corresponding blocks: each class's blocks in it (paths into the class's phase),
/// and how many times the first class's phase body runs them in one pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Per class (the first, then `others` in order), the paths of its blocks in the group.
    pub paths: Vec<Vec<Path>>,
    /// Executions of the group's blocks in one pass over the first class's body.
    pub runs: u64,
}

/// The groups of corresponding blocks of one phase: `first` is the first class's phase, `others`
/// the phase of the same name in each other class. Blocks that do not correspond everywhere are
/// in no group.
pub fn groups(first: &Phase, others: &[&Phase]) -> Vec<Group> {
    let Some(flat0) = unroll(&first.body) else { return Vec::new() };
    let Some(flats) = others.iter().map(|p| unroll(&p.body)).collect::<Option<Vec<_>>>() else {
        return Vec::new();
    };
    let classes: Vec<&Vec<Place>> = std::iter::once(&flat0).chain(flats.iter()).collect();
    // Nodes: (class, path) of every block; union-find over them. Each execution of a block is
    // (place, index in the place's gap).
    let mut ids: HashMap<(usize, Path), usize> = HashMap::new();
    let exec: Vec<Vec<Vec<usize>>> = classes
        .iter()
        .enumerate()
        .map(|(k, places)| {
            places
                .iter()
                .map(|(_, gap)| {
                    gap.iter()
                        .map(|p| {
                            let n = ids.len();
                            *ids.entry((k, p.clone())).or_insert(n)
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let n = ids.len();
    let mut same = UnionFind::<usize>::new(n);
    let mut bad = vec![false; n];
    fn key((k, gap): &Place) -> (&str, usize) {
        (k.as_str(), gap.len())
    }
    let keys0: Vec<(&str, usize)> = flat0.iter().map(key).collect();
    for (k, places) in flats.iter().enumerate() {
        let keys: Vec<(&str, usize)> = places.iter().map(key).collect();
        let Some(pairs) = align(&keys0, &keys) else { return Vec::new() };
        // The blocks since the last pair of aligned places (those before calls only one class
        // makes included) correspond one for one where both classes ran as many; the others
        // are not everyone's.
        let (mut from0, mut from) = (0, 0);
        for (i, j) in pairs {
            let a: Vec<usize> = exec[0][from0..=i].iter().flatten().copied().collect();
            let b: Vec<usize> = exec[k + 1][from..=j].iter().flatten().copied().collect();
            if a.len() == b.len() {
                for (&x, &y) in a.iter().zip(&b) {
                    same.union(x, y);
                }
            } else {
                a.iter().chain(&b).for_each(|&x| bad[x] = true);
            }
            (from0, from) = (i + 1, j + 1);
        }
        exec[0][from0..].iter().flatten().for_each(|&x| bad[x] = true);
        exec[k + 1][from..].iter().flatten().for_each(|&x| bad[x] = true);
    }
    let mut by_root: HashMap<usize, Group> = HashMap::new();
    let mut bad_root = vec![false; n];
    let mut members: Vec<((usize, Path), usize)> = ids.into_iter().collect();
    members.sort_by(|a, b| a.0.cmp(&b.0));
    for ((k, path), id) in members {
        let r = same.find_mut(id);
        bad_root[r] |= bad[id];
        let g = by_root
            .entry(r)
            .or_insert_with(|| Group { paths: vec![Vec::new(); classes.len()], runs: 0 });
        g.paths[k].push(path);
    }
    for e in exec[0].iter().flatten() {
        let r = same.find_mut(*e);
        if let Some(g) = by_root.get_mut(&r) {
            g.runs += 1;
        }
    }
    let mut out: Vec<Group> = by_root
        .into_iter()
        .filter(|(r, g)| !bad_root[*r] && g.paths.iter().all(|p| !p.is_empty()))
        .map(|(_, g)| g)
        .collect();
    out.sort_by(|a, b| a.paths.cmp(&b.paths));
    out
}

/// The statement at `path` of `body`.
pub fn at<'a>(body: &'a [Stmt], path: &[usize]) -> Option<&'a Stmt> {
    let (&i, rest) = path.split_first()?;
    let st = body.get(i)?;
    match (st, rest) {
        (_, []) => Some(st),
        (Stmt::Loop { body, .. }, _) => at(body, rest),
        _ => None,
    }
}

/// The statement at `path` of `body`, to change.
pub fn at_mut<'a>(body: &'a mut [Stmt], path: &[usize]) -> Option<&'a mut Stmt> {
    let (&i, rest) = path.split_first()?;
    let st = body.get_mut(i)?;
    if rest.is_empty() {
        return Some(st);
    }
    match st {
        Stmt::Loop { body, .. } => at_mut(body, rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiskel_program::Stmt;

    fn block(s: f64) -> Stmt {
        Stmt::block(s)
    }

    fn barrier() -> Stmt {
        Stmt::Call {
            call: Call::Collective {
                op: mpiskel_trace::Op::Barrier,
                traced: mpiskel_trace::Op::Barrier,
                comm: 0,
                root: None,
                bytes: 0,
                slot: None,
            },
            polls: 0,
            wait_s: 0.0,
            off_s: 0.0,
        }
    }

    fn looped(count: u64, body: Vec<Stmt>) -> Stmt {
        Stmt::Loop { depth: 1, count, body, note: String::new() }
    }

    fn phase(body: Vec<Stmt>) -> Phase {
        Phase {
            name: "main_loop".into(),
            full: 4,
            run: 1,
            is_loop: true,
            body,
            origin: String::new(),
            compute_s: 0.0,
            span_s: 0.0,
            calls: 0,
            inner: None,
            steps: None,
            warmup: 0,
            skipped: None,
            scale: 1.0,
            positions: (0, 0),
        }
    }

    #[test]
    fn blocks_correspond_across_extra_calls_and_other_folds() {
        // The second class makes an extra barrier at the start, and folded the first class's
        // loop of two iterations into straight-line code: places correspond, indices do not.
        let a =
            phase(vec![block(1.0), barrier(), looped(2, vec![block(2.0), barrier()]), block(3.0)]);
        let b = phase(vec![
            barrier(),
            block(1.0),
            barrier(),
            block(2.0),
            barrier(),
            block(2.0),
            barrier(),
            block(3.0),
        ]);
        let got = groups(&a, &[&b]);
        assert_eq!(
            got,
            vec![
                Group { paths: vec![vec![vec![0]], vec![vec![1]]], runs: 1 },
                Group { paths: vec![vec![vec![2, 0]], vec![vec![3], vec![5]]], runs: 2 },
                Group { paths: vec![vec![vec![3]], vec![vec![7]]], runs: 1 },
            ]
        );
        for g in &got {
            for p in &g.paths[1] {
                assert!(matches!(at(&b.body, p), Some(Stmt::Compute { .. })));
            }
        }
    }

    #[test]
    fn a_block_only_one_class_runs_is_in_no_group() {
        // The second class computes once more before the barrier: the blocks before it do not
        // correspond one for one; the blocks after it do.
        let a = phase(vec![block(1.0), barrier(), block(2.0)]);
        let b = phase(vec![block(1.0), block(0.5), barrier(), block(2.0)]);
        let got = groups(&a, &[&b]);
        assert_eq!(got, vec![Group { paths: vec![vec![vec![2]], vec![vec![3]]], runs: 1 }]);
    }

    fn send() -> Stmt {
        Stmt::Call {
            call: Call::Send {
                op: mpiskel_trace::Op::Isend,
                to: mpiskel_program::Peer::Dir(0),
                tag: 0,
                bytes: 8,
                slot: None,
                sizes: None,
            },
            polls: 0,
            wait_s: 0.0,
            off_s: 0.0,
        }
    }

    fn recv() -> Stmt {
        Stmt::Call {
            call: Call::Recv {
                op: mpiskel_trace::Op::Irecv,
                from: mpiskel_program::Peer::Dir(1),
                tag: 0,
                bytes: 8,
                count: 8,
                offset: 0,
                slot: None,
            },
            polls: 0,
            wait_s: 0.0,
            off_s: 0.0,
        }
    }

    #[test]
    fn a_block_before_a_call_only_one_class_makes_corresponds_to_the_block_before_the_next() {
        // The end of an open chain only sends; the ranks inside receive first. Each computes
        // once per step, before its first call.
        let end = phase(vec![looped(3, vec![block(1.0), send(), barrier()])]);
        let inside = phase(vec![looped(3, vec![block(1.5), recv(), send(), barrier()])]);
        let got = groups(&end, &[&inside]);
        assert_eq!(got, vec![Group { paths: vec![vec![vec![0, 0]], vec![vec![0, 0]]], runs: 3 }]);
    }
}
