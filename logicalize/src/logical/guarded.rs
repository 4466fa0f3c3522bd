//! Guarded folding: classes that differ only by point-to-point calls some ranks make and others
//! do not, merged into one program whose calls are guarded per rank.
//!
//! A multigrid code on a periodic grid splits into many classes by the parity of its ranks'
//! coordinates: at a coarse level only every second (fourth, …) rank holds points, and it
//! exchanges with the next such rank, two (four, …) planes away, while the others skip the
//! exchange or only hand their points over (NPB MG at 256 ranks: 18 classes, at 64 ranks one
//! per rank). The ranks still run one program with the same collectives in the same order.
//! Where the exact fold (`fold.rs`) leaves more classes than the grid's boundaries explain, the
//! remaining classes are merged pairwise: their programs are aligned by a shortest edit script
//! (Myers 1986, "An O(ND) difference algorithm and its variations", §2–3) over the calls'
//! shapes (sizes aside: they are kept per rank), and the merged program is the common
//! supersequence. A call that only one side makes is kept with the other side's ranks listed in
//! [`LogicalOp::absent`]: they make it toward `MPI_PROC_NULL`, which completes at once and
//! moves nothing. A wait only one side makes is made by every rank (the other side's on
//! requests that complete at once), and every rank computes at every block of the merged
//! program, its weight its own total over the program's, as an edge rank does (a rank's
//! computation around a call it lacks is in its next call's gap). The merge is refused — the classes stay apart — unless everything the sides
//! do not share is a point-to-point call or a wait (`MPI_Wait`/`MPI_Waitall`) of requests only
//! that side started, and every shared wait completes all it is given. A wait both sides make
//! completes the union of their requests (those of the other side's calls being `MPI_PROC_NULL`
//! requests for a rank, complete at once), so the program stays one sequence of waits and the
//! ranks' own order of completions is kept.
//!
//! This generalizes the end-node handling of Xu & Subhlok (2008, §2), where an edge rank's
//! missing neighbour is `MPI_PROC_NULL`, from the grid's boundary to any position class.
//!
//! # Complexity
//! O((N + M)·D) time and O(D²) memory per merge of programs of N and M calls that differ in D
//! edits, D at most 8,192 (beyond it the classes stay apart).

use std::collections::BTreeSet;

use mpiskel_trace::{Op, OpClass};

use super::fold::{gathered_op, GapAcc};
use super::translate::{Keys, Links, Translated};
use super::*;

/// One position of a merged program.
#[derive(Debug, Clone)]
pub(super) struct Pos {
    /// The call, as an id into the table of distinct calls.
    pub(super) id: u32,
    /// Positions (in the merged program) of the requests it completes.
    pub(super) links: Vec<u32>,
    /// Ranks that make the call toward `MPI_PROC_NULL`, ascending.
    pub(super) absent: Vec<u32>,
    /// Where the call came from: a rank and its position there (for the tag class).
    pub(super) src: (u32, usize),
}

/// A class during guarded folding: its program and, for every rank, which of its own
/// positions each program position is (`None`: the rank does not make it, or makes it as the
/// class's missing direction, which resolves to `MPI_PROC_NULL` by itself).
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) members: Vec<u32>,
    pub(super) folded: Vec<u32>,
    pub(super) prog: Vec<Pos>,
    pub(super) maps: Vec<(u32, Vec<Option<usize>>)>,
}

impl Plan {
    /// The plan of a class of the exact fold: its representative's program.
    pub(super) fn of_class(
        members: &[u32],
        folded: &[(u32, Vec<Option<usize>>)],
        rep_ids: &[u32],
        rep_links: &Links,
    ) -> Plan {
        let rep = members[0];
        let prog = rep_ids
            .iter()
            .enumerate()
            .map(|(i, &id)| Pos {
                id,
                links: rep_links.get(i).to_vec(),
                absent: Vec::new(),
                src: (rep, i),
            })
            .collect();
        let n = rep_ids.len();
        let mut maps: Vec<(u32, Vec<Option<usize>>)> =
            members.iter().map(|&r| (r, (0..n).map(Some).collect())).collect();
        maps.extend(folded.iter().cloned());
        Plan {
            members: members.to_vec(),
            folded: folded.iter().map(|(r, _)| *r).collect(),
            prog,
            maps,
        }
    }

    fn ranks(&self) -> impl Iterator<Item = u32> + '_ {
        self.maps.iter().map(|(r, _)| *r)
    }
}

/// Whether guarded folding applies: a grid with extra strides (the ranks also talk along a
/// few longer offsets, as a multigrid's coarse levels do) whose exact fold left more classes
/// than its boundaries can make (one per side and the interior along each non-periodic
/// dimension of more than two nodes: 3^d at most; 1 on a torus). Other programs keep the
/// classes of the exact fold: their classes differ by what their ranks do (a ring's even ranks
/// send first), not by which level of a hierarchy they hold.
pub(super) fn applies(topo: Option<&Topology>, classes: usize) -> bool {
    let Some(t) = topo.filter(|t| {
        matches!(t.kind, Kind::Cartesian | Kind::Moore | Kind::Bt6) && !t.strides.is_empty()
    }) else {
        return false;
    };
    let bound: usize =
        t.dims.iter().zip(&t.periods).map(|(&n, &p)| if p || n <= 2 { 1 } else { 3 }).product();
    classes > bound
}

/// What a call is for the alignment: its key with the sizes left out.
pub(super) fn shapes(keys: &Keys) -> Vec<u32> {
    let mut index: HashMap<OpKey, u32> = HashMap::new();
    keys.table
        .iter()
        .map(|k| {
            let mut s = k.clone();
            s.bytes = 0;
            s.recv_bytes = 0;
            let n = index.len() as u32;
            *index.entry(s).or_insert(n)
        })
        .collect()
}

/// The most edits a merge looks for: the search keeps every round's paths, D² four-byte
/// entries (at most 256 MB); classes further apart stay apart.
const MAX_EDITS: i64 = 8192;

/// One aligned pair of a shortest edit script: a position of `a`, of `b`, or of both.
type Pair = (Option<usize>, Option<usize>);

/// A shortest edit script between `a` and `b` (Myers 1986, the greedy forward search of §3,
/// with every round's furthest reaching paths kept for the trace back), as aligned pairs in
/// order; `None` beyond [`MAX_EDITS`] edits.
pub(super) fn diff(a: &[u32], b: &[u32]) -> Option<Vec<Pair>> {
    let (n, m) = (a.len() as i64, b.len() as i64);
    let max = n + m;
    if n.max(m) >= i64::from(i32::MAX) {
        return None;
    }
    // v[k + off] = furthest x on diagonal k.
    let off = max + 1;
    let mut v = vec![0i64; (2 * max + 3) as usize];
    let mut trace: Vec<Vec<i32>> = Vec::new();
    'search: for d in 0..=max {
        if d > MAX_EDITS {
            return None;
        }
        // The state before round d, over the diagonals it can read: [-d-1, d+1].
        let saved = &v[(off - d - 1) as usize..=(off + d + 1) as usize];
        trace.push(saved.iter().map(|&x| x as i32).collect());
        let mut k = -d;
        while k <= d {
            let i = (k + off) as usize;
            let mut x =
                if k == -d || (k != d && v[i - 1] < v[i + 1]) { v[i + 1] } else { v[i - 1] + 1 };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x >= n && y >= m {
                break 'search;
            }
            k += 2;
        }
    }
    let mut out = Vec::with_capacity(max as usize);
    let (mut x, mut y) = (n, m);
    for (d, saved) in trace.iter().enumerate().rev() {
        let d = d as i64;
        let get = |k: i64| i64::from(saved[(k + d + 1) as usize]);
        let k = x - y;
        let prev_k = if k == -d || (k != d && get(k - 1) < get(k + 1)) { k + 1 } else { k - 1 };
        let prev_x = get(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            out.push((Some((x - 1) as usize), Some((y - 1) as usize)));
            x -= 1;
            y -= 1;
        }
        if d > 0 {
            if x == prev_x {
                out.push((None, Some(prev_y as usize)));
            } else {
                out.push((Some(prev_x as usize), None));
            }
        }
        x = prev_x;
        y = prev_y;
    }
    out.reverse();
    Some(out)
}

fn all_wait(k: &OpKey) -> bool {
    matches!(k.op, Op::Wait | Op::Waitall) && k.given == k.done
}

/// Merges plan `b` into plan `a`, or `None` where they differ by more than guarded
/// point-to-point calls and their waits.
pub(super) fn merge(keys: &mut Keys, shape: &mut Vec<u32>, a: &Plan, b: &Plan) -> Option<Plan> {
    let sa: Vec<u32> = a.prog.iter().map(|p| shape[p.id as usize]).collect();
    let sb: Vec<u32> = b.prog.iter().map(|p| shape[p.id as usize]).collect();
    let pairs = diff(&sa, &sb)?;
    let mut a_to_m = vec![0u32; a.prog.len()];
    let mut b_to_m = vec![0u32; b.prog.len()];
    for (m, &(i, j)) in pairs.iter().enumerate() {
        if let Some(i) = i {
            a_to_m[i] = m as u32;
        }
        if let Some(j) = j {
            b_to_m[j] = m as u32;
        }
    }
    let a_ranks: Vec<u32> = a.ranks().collect();
    let b_ranks: Vec<u32> = b.ranks().collect();
    let union = |x: &[u32], y: &[u32]| -> Vec<u32> {
        x.iter().chain(y).copied().collect::<BTreeSet<_>>().into_iter().collect()
    };
    let mut prog = Vec::with_capacity(pairs.len());
    for &(i, j) in &pairs {
        let pos = match (i, j) {
            (Some(i), Some(j)) => {
                let (pa, pb) = (&a.prog[i], &b.prog[j]);
                let k = keys.table[pa.id as usize].clone();
                let mut links: Vec<u32> = pa.links.iter().map(|&p| a_to_m[p as usize]).collect();
                let lb: Vec<u32> = pb.links.iter().map(|&p| b_to_m[p as usize]).collect();
                let mut id = pa.id;
                if k.op.class() == OpClass::Completion {
                    let both = union(&links, &lb);
                    links.sort_unstable();
                    if both != links {
                        // A wait both sides make, of requests not all shared.
                        if !all_wait(&k) || !all_wait(&keys.table[pb.id as usize]) {
                            return None;
                        }
                        let mut w = k.clone();
                        w.op = if both.len() > 1 { Op::Waitall } else { Op::Wait };
                        w.given = both.len() as u32;
                        w.done = w.given;
                        id = keys.id(w);
                        while shape.len() < keys.table.len() {
                            // A new key: its own shape (no other call has its request count).
                            shape.push(u32::MAX - shape.len() as u32);
                        }
                    }
                    links = both;
                }
                let absent = if k.op.class() == OpClass::Completion {
                    Vec::new()
                } else {
                    union(&pa.absent, &pb.absent)
                };
                Pos { id, links, absent, src: pa.src }
            }
            (Some(i), None) => one_side(&keys.table, &a.prog[i], &a_to_m, &pairs, true, &b_ranks)?,
            (None, Some(j)) => one_side(&keys.table, &b.prog[j], &b_to_m, &pairs, false, &a_ranks)?,
            (None, None) => unreachable!("an edit script pairs at least one position"),
        };
        prog.push(pos);
    }
    // Each request completed by one wait of the merged program (sides that complete a shared
    // request at different waits would complete it twice).
    let mut completed = vec![false; prog.len()];
    for p in &prog {
        for &l in &p.links {
            if std::mem::replace(&mut completed[l as usize], true) {
                return None;
            }
        }
    }
    let remap =
        |maps: &[(u32, Vec<Option<usize>>)], side_a: bool| -> Vec<(u32, Vec<Option<usize>>)> {
            maps.iter()
                .map(|(r, map)| {
                    let m = pairs
                        .iter()
                        .map(|&(i, j)| if side_a { i } else { j }.and_then(|p| map[p]))
                        .collect();
                    (*r, m)
                })
                .collect()
        };
    let mut maps = remap(&a.maps, true);
    maps.extend(remap(&b.maps, false));
    Some(Plan {
        members: union(&a.members, &b.members),
        folded: union(&a.folded, &b.folded),
        prog,
        maps,
    })
}

/// A position only one side has: a point-to-point call the other side's ranks make toward
/// `MPI_PROC_NULL`, or a wait of requests only this side started (which the others make on
/// requests that complete at once).
fn one_side(
    table: &[OpKey],
    p: &Pos,
    to_m: &[u32],
    pairs: &[Pair],
    side_a: bool,
    others: &[u32],
) -> Option<Pos> {
    let k = &table[p.id as usize];
    let links: Vec<u32> = p.links.iter().map(|&q| to_m[q as usize]).collect();
    match k.op.class() {
        OpClass::Send | OpClass::Recv | OpClass::Probe | OpClass::SendRecv => {
            // Only a direction can be guarded (a fixed rank or any source has no table).
            let guardable = |x: &Option<LogicalPeer>| {
                matches!(x, None | Some(LogicalPeer::Dir(_) | LogicalPeer::Null))
            };
            if !guardable(&k.peer) || !guardable(&k.source) {
                return None;
            }
            let absent: BTreeSet<u32> = p.absent.iter().chain(others).copied().collect();
            Some(Pos { id: p.id, links, absent: absent.into_iter().collect(), src: p.src })
        }
        OpClass::Completion if all_wait(k) => {
            // Every request it completes must be this side's alone.
            let own = |m: u32| {
                let (i, j) = pairs[m as usize];
                if side_a {
                    j.is_none()
                } else {
                    i.is_none()
                }
            };
            links.iter().all(|&m| own(m)).then(|| Pos {
                id: p.id,
                links,
                absent: Vec::new(),
                src: p.src,
            })
        }
        _ => None,
    }
}

/// The class of a merged plan: gaps, sizes and tag classes gathered through each rank's map.
pub(super) fn build(
    plan: Plan,
    table: &[OpKey],
    shared: &[Arc<OpKey>],
    translated: &mut [Translated],
) -> ProcessClass {
    let n_ops = plan.prog.len();
    let key_bytes = |i: usize| table[plan.prog[i].id as usize].bytes;
    let tags: Vec<(i32, i32)> =
        plan.prog.iter().map(|p| translated[p.src.0 as usize].tag_classes[p.src.1]).collect();
    let mut acc: Vec<GapAcc> = (0..n_ops).map(|_| GapAcc::default()).collect();
    let mut rank_bytes: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n_ops];
    for (r, map) in &plan.maps {
        let t = std::mem::take(&mut translated[*r as usize]);
        for (i, j) in map.iter().enumerate() {
            let Some(j) = *j else { continue };
            let bytes = table[t.ids[j] as usize].bytes;
            acc[i].add(*r, t.gaps[j]);
            if bytes != key_bytes(i) {
                rank_bytes[i].push((*r, bytes));
            }
        }
    }
    let ops = plan
        .prog
        .into_iter()
        .zip(acc)
        .zip(tags)
        .zip(rank_bytes)
        .map(|(((p, a), tags), rank_bytes)| {
            let completes = p.links.iter().map(|&l| l as usize).collect();
            let key = Arc::clone(&shared[p.id as usize]);
            gathered_op(key, completes, a, tags, rank_bytes, p.absent)
        })
        .collect();
    let representative = plan.members[0];
    ProcessClass { ranks: plan.members, folded: plan.folded, representative, ops }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(a: &[u32], b: &[u32], d: usize) {
        let pairs = diff(a, b).unwrap();
        let edits = pairs.iter().filter(|(i, j)| i.is_none() || j.is_none()).count();
        assert_eq!(edits, d, "{a:?} {b:?} {pairs:?}");
        let ai: Vec<usize> = pairs.iter().filter_map(|p| p.0).collect();
        let bj: Vec<usize> = pairs.iter().filter_map(|p| p.1).collect();
        assert_eq!(ai, (0..a.len()).collect::<Vec<_>>());
        assert_eq!(bj, (0..b.len()).collect::<Vec<_>>());
        for (i, j) in pairs {
            if let (Some(i), Some(j)) = (i, j) {
                assert_eq!(a[i], b[j]);
            }
        }
    }

    #[test]
    fn shortest_edit_scripts() {
        // Beyond the bound: no script.
        let far: Vec<u32> = (0..9000).collect();
        assert!(diff(&far, &[]).is_none());
        check(&[], &[], 0);
        check(&[1, 2, 3], &[1, 2, 3], 0);
        check(&[1, 2, 3], &[], 3);
        check(&[], &[4, 5], 2);
        // Myers's example: ABCABBA against CBABAC, distance 5.
        check(&[1, 2, 3, 1, 2, 2, 1], &[3, 2, 1, 2, 1, 3], 5);
        check(&[7, 1, 1, 2, 9, 9, 3], &[1, 2, 5, 3], 5);
    }

    fn key(op: Op, dir: Option<(&str, [i64; 3])>, given: u32) -> OpKey {
        OpKey {
            op,
            peer: dir.map(|(n, o)| LogicalPeer::Dir(Direction::new(n, o.to_vec()))),
            source: None,
            tag: 0,
            bytes: 8,
            recv_bytes: 0,
            comm: LogicalComm::World,
            root: None,
            given,
            done: given,
            any_source: false,
        }
    }

    /// A plan of one rank (`rank`) running `calls` (a key and the positions it completes).
    fn plan(keys: &mut Keys, rank: u32, calls: &[(OpKey, Vec<u32>)]) -> Plan {
        let ids: Vec<u32> = calls.iter().map(|(k, _)| keys.id(k.clone())).collect();
        let mut links = Links::default();
        for (_, l) in calls {
            links.push(l.iter().map(|&p| p as usize));
        }
        Plan::of_class(&[rank], &[], &ids, &links)
    }

    #[test]
    fn classes_that_differ_by_an_exchange_merge_with_guards() {
        let mut keys = Keys::default();
        let up = Some(("+z", [0, 0, 1]));
        let up2 = Some(("+2z", [0, 0, 2]));
        // Rank 0 exchanges one plane away, rank 1 two planes away, and only rank 1 sends back.
        let a = plan(
            &mut keys,
            0,
            &[
                (key(Op::Irecv, up, 0), vec![]),
                (key(Op::Send, up, 0), vec![]),
                (key(Op::Wait, None, 1), vec![0]),
                (key(Op::Allreduce, None, 0), vec![]),
            ],
        );
        let b = plan(
            &mut keys,
            1,
            &[
                (key(Op::Irecv, up2, 0), vec![]),
                (key(Op::Send, up2, 0), vec![]),
                (key(Op::Wait, None, 1), vec![0]),
                (key(Op::Send, Some(("-z", [0, 0, -1])), 0), vec![]),
                (key(Op::Allreduce, None, 0), vec![]),
            ],
        );
        let mut shape = shapes(&keys);
        let m = merge(&mut keys, &mut shape, &a, &b).expect("they merge");
        let ops: Vec<Op> = m.prog.iter().map(|p| keys.table[p.id as usize].op).collect();
        assert_eq!(m.prog.len(), 7, "{ops:?}");
        // One wait completes both receives; each side's calls are absent for the other.
        let wait = m.prog.iter().find(|p| keys.table[p.id as usize].op == Op::Waitall).unwrap();
        assert_eq!(wait.links.len(), 2);
        assert!(wait.absent.is_empty());
        for p in &m.prog {
            let k = &keys.table[p.id as usize];
            if k.op.class() == OpClass::Collective || k.op == Op::Waitall {
                assert!(p.absent.is_empty());
            } else {
                assert_eq!(p.absent.len(), 1, "{k:?}");
            }
        }
        // Each rank is absent from exactly the point-to-point calls it has not made.
        for (r, map) in &m.maps {
            for (p, own) in m.prog.iter().zip(map) {
                let k = &keys.table[p.id as usize];
                if k.op.class() != OpClass::Completion {
                    assert_eq!(own.is_none(), p.absent.contains(r), "rank {r}: {p:?}");
                }
            }
        }
        // Every rank's own calls are where the map says.
        for (r, map) in &m.maps {
            let own = map.iter().filter(|x| x.is_some()).count();
            assert_eq!(own, if *r == 0 { 4 } else { 5 });
        }

        // Classes whose collectives differ stay apart.
        let c = plan(
            &mut keys,
            2,
            &[(key(Op::Irecv, up, 0), vec![]), (key(Op::Barrier, None, 0), vec![])],
        );
        let mut shape = shapes(&keys);
        assert!(merge(&mut keys, &mut shape, &a, &c).is_none());
    }

    #[test]
    fn only_grids_with_more_classes_than_their_boundaries_fold_guarded() {
        let strides = vec![vec![2, 0, 0], vec![0, 2, 0]];
        let mut torus = Topology::new(Kind::Cartesian, vec![8, 8, 4], vec![true; 3]);
        // Without strides (a ring's or a halo's classes): never.
        assert!(!applies(Some(&torus), 2));
        torus.strides = strides.clone();
        assert!(applies(Some(&torus), 2));
        assert!(!applies(Some(&torus), 1));
        let mut grid = Topology::new(Kind::Cartesian, vec![4, 4, 2], vec![false; 3]);
        grid.strides = strides;
        assert!(!applies(Some(&grid), 9));
        assert!(applies(Some(&grid), 10));
        let ring = Topology::new(Kind::Tree, vec![8, 2], vec![]);
        assert!(!applies(Some(&ring), 5));
        assert!(!applies(None, 5));
    }
}
