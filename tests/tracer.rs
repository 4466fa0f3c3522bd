//! The PMPI tracer against real MPI: every fixture program is traced under OpenMPI and MPICH,
//! and each rank's recorded calls are compared with what the program's own parameters imply.
//!
//! Each program has a model here that lists, per rank, the calls the program makes in order
//! (operation, peer or root as a world rank, bytes). Deterministic programs are compared call by
//! call; where the order or number of calls depends on timing (ANY_SOURCE receives, Test loops),
//! the comparison is by counts and by the multiset of peers.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use mpiskel_trace::{Op, OpClass, Payload, Peer, Rank, RankTrace, ReadOptions, TraceSet};
use support::{scratch, trace_program, Lib};

/// One call as the models describe it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Call {
    op: Op,
    /// Peer of a point-to-point call; root of a rooted collective.
    peer: Option<Peer>,
    /// Bytes of a point-to-point call.
    bytes: Option<u64>,
}

fn c(op: Op) -> Call {
    Call { op, peer: None, bytes: None }
}
fn p2p(op: Op, peer: Peer, bytes: u64) -> Call {
    Call { op, peer: Some(peer), bytes: Some(bytes) }
}
fn rooted(op: Op, root: u32) -> Call {
    Call { op, peer: Some(Peer::Rank(Rank(root))), bytes: None }
}
fn rk(r: usize) -> Peer {
    Peer::Rank(Rank(r as u32))
}

/// The calls of a recorded rank in the models' terms.
fn observed(rt: &RankTrace) -> Vec<Call> {
    rt.events
        .iter()
        .map(|e| match &e.payload {
            Payload::P2p { peer, bytes, .. } => p2p(e.op, *peer, *bytes),
            Payload::Collective { root: Some(r), .. } => rooted(e.op, r.0),
            _ => c(e.op),
        })
        .collect()
}

fn open(dir: &std::path::Path) -> TraceSet {
    let set = TraceSet::open(dir, &ReadOptions::default()).expect("trace reads");
    assert!(set.meta.is_some(), "meta.json written");
    set
}

/// Every request started is completed exactly once, and every completion names a started one.
fn check_requests(rt: &RankTrace) {
    let mut open = BTreeSet::new();
    for (i, e) in rt.events.iter().enumerate() {
        match &e.payload {
            Payload::P2p { request: Some(r), .. }
            | Payload::Collective { request: Some(r), .. } => {
                assert!(open.insert(*r), "rank {}: request {r:?} started twice", rt.rank);
            }
            Payload::Completion { completed, .. } => {
                for done in completed {
                    let r = done.request.unwrap_or_else(|| {
                        panic!("rank {}: event {i}: unknown request completed", rt.rank)
                    });
                    assert!(
                        open.remove(&r),
                        "rank {}: event {i} completes {r:?}, which is not pending",
                        rt.rank
                    );
                }
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "rank {}: requests never completed: {open:?}", rt.rank);
}

fn check_exact(set: &TraceSet, model: &[Vec<Call>]) {
    assert_eq!(set.n_ranks(), model.len(), "number of ranks");
    for (rt, want) in set.ranks.iter().zip(model) {
        check_requests(rt);
        let got = observed(rt);
        if got != *want {
            let first =
                got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
            panic!(
                "rank {}: {} calls recorded, {} expected; first difference at call {first}: got {:?}, want {:?}",
                rt.rank,
                got.len(),
                want.len(),
                got.get(first),
                want.get(first)
            );
        }
    }
}

fn counts(calls: &[Call]) -> BTreeMap<Op, usize> {
    let mut m = BTreeMap::new();
    for call in calls {
        *m.entry(call.op).or_insert(0) += 1;
    }
    m
}

fn sorted(mut v: Vec<Call>) -> Vec<Call> {
    v.sort();
    v
}

// ---- models ---------------------------------------------------------------------------------

/// One blocking ring exchange: even ranks send right first, odd ranks receive from the left first.
fn ring_step(r: usize, right: usize, left: usize, bytes: u64) -> [Call; 2] {
    let send = p2p(Op::Send, rk(right), bytes);
    let recv = p2p(Op::Recv, rk(left), bytes);
    if r % 2 == 0 {
        [send, recv]
    } else {
        [recv, send]
    }
}

fn model_ring(n: usize, iters: usize, bytes: u64) -> Vec<Vec<Call>> {
    (0..n)
        .map(|r| {
            let (right, left) = ((r + 1) % n, (r + n - 1) % n);
            let mut v = vec![c(Op::Init)];
            for _ in 0..iters {
                v.extend(ring_step(r, right, left, bytes));
            }
            v.push(c(Op::Finalize));
            v
        })
        .collect()
}

/// Row-major Cartesian neighbours of `r` along `d`: (lower, higher).
fn cart_shift(dims: &[usize], periodic: bool, r: usize, d: usize) -> (Peer, Peer) {
    let mut coords = vec![0; dims.len()];
    let mut rest = r;
    for k in (0..dims.len()).rev() {
        coords[k] = rest % dims[k];
        rest /= dims[k];
    }
    let rank_of = |cs: &[usize]| cs.iter().zip(dims).fold(0, |acc, (c, n)| acc * n + c);
    let step = |delta: isize| {
        let x = coords[d] as isize + delta;
        let n = dims[d] as isize;
        if !(0..n).contains(&x) && !periodic {
            return Peer::Null;
        }
        let mut cs = coords.clone();
        cs[d] = x.rem_euclid(n) as usize;
        rk(rank_of(&cs))
    };
    (step(-1), step(1))
}

fn model_halo(dims: &[usize], periodic: bool, iters: usize, bytes: u64) -> Vec<Vec<Call>> {
    let n: usize = dims.iter().product();
    (0..n)
        .map(|r| {
            let shifts: Vec<_> =
                (0..dims.len()).map(|d| cart_shift(dims, periodic, r, d)).collect();
            let mut v = vec![c(Op::Init), c(Op::CartCreate)];
            for _ in 0..iters {
                for (lo, hi) in &shifts {
                    v.push(p2p(Op::Irecv, *lo, bytes));
                    v.push(p2p(Op::Irecv, *hi, bytes));
                }
                for (lo, hi) in &shifts {
                    v.push(p2p(Op::Isend, *hi, bytes));
                    v.push(p2p(Op::Isend, *lo, bytes));
                }
                v.push(c(Op::Waitall));
            }
            v.extend([c(Op::Allreduce), c(Op::Finalize)]);
            v
        })
        .collect()
}

fn model_wavefront(px: usize, py: usize, iters: usize, bytes: u64) -> Vec<Vec<Call>> {
    (0..px * py)
        .map(|r| {
            let (row, col) = (r / py, r % py);
            let north = (row > 0).then(|| r - py);
            let south = (row + 1 < px).then(|| r + py);
            let west = (col > 0).then(|| r - 1);
            let east = (col + 1 < py).then(|| r + 1);
            let recv = |p: usize| p2p(Op::Recv, rk(p), bytes);
            let send = |p: usize| p2p(Op::Send, rk(p), bytes);
            let mut v = vec![c(Op::Init)];
            for it in 0..iters {
                v.extend(north.map(recv));
                v.extend(west.map(recv));
                v.extend(south.map(send));
                v.extend(east.map(send));
                v.extend(south.map(recv));
                v.extend(east.map(recv));
                v.extend(north.map(send));
                v.extend(west.map(send));
                for phase in 0..2 {
                    let first = col % 2 == phase;
                    let partner = if first { east } else { west };
                    if let Some(p) = partner {
                        if first {
                            v.extend([send(p), recv(p)]);
                        } else {
                            v.extend([recv(p), send(p)]);
                        }
                    }
                }
                if it % 5 == 4 {
                    v.push(c(Op::Allreduce));
                }
            }
            v.push(c(Op::Finalize));
            v
        })
        .collect()
}

fn model_collectives(n: usize, iters: usize) -> Vec<Vec<Call>> {
    (0..n)
        .map(|_| {
            let mut v = vec![c(Op::Init)];
            for it in 0..iters {
                let root = (it % n) as u32;
                v.extend([
                    c(Op::Barrier),
                    rooted(Op::Bcast, root),
                    rooted(Op::Reduce, (root + 1) % n as u32),
                ]);
                v.extend([c(Op::Allreduce), c(Op::Scan), c(Op::Exscan)]);
                v.extend([rooted(Op::Gather, root), rooted(Op::Gatherv, root)]);
                v.extend([rooted(Op::Scatter, root), rooted(Op::Scatterv, root)]);
                v.extend([c(Op::Allgather), c(Op::Allgatherv), c(Op::Alltoall), c(Op::Alltoallv)]);
                v.extend([c(Op::Alltoallw), c(Op::ReduceScatter), c(Op::ReduceScatterBlock)]);
                v.extend([c(Op::Ibarrier), rooted(Op::Ibcast, root), rooted(Op::Ireduce, root)]);
                v.extend([c(Op::Iallreduce), c(Op::Iallgather), c(Op::Ialltoall), c(Op::Waitall)]);
            }
            v.push(c(Op::Finalize));
            v
        })
        .collect()
}

fn model_subcomm(px: usize, py: usize, iters: usize) -> Vec<Vec<Call>> {
    (0..px * py)
        .map(|r| {
            let row = r / py;
            let even = r % 2 == 0;
            let mut v = vec![c(Op::Init), c(Op::CartCreate), c(Op::CommSplit), c(Op::CommSplit)];
            v.extend([c(Op::CartSub), c(Op::CommDup), c(Op::CommCreate)]);
            for _ in 0..iters {
                v.push(rooted(Op::Bcast, (row * py) as u32));
                v.push(c(Op::Allreduce));
                v.push(rooted(Op::Reduce, (row * py + py - 1) as u32));
                v.push(c(Op::Barrier));
                if even {
                    v.push(c(Op::Allreduce));
                }
            }
            let frees = if even { 6 } else { 5 };
            v.extend(std::iter::repeat_n(c(Op::CommFree), frees));
            v.push(c(Op::Finalize));
            v
        })
        .collect()
}

fn model_ring_f(n: usize, iters: usize) -> Vec<Vec<Call>> {
    let bytes = 128 * 8;
    (0..n)
        .map(|r| {
            let (right, left) = ((r + 1) % n, (r + n - 1) % n);
            let mut v = vec![c(Op::Init)];
            for _ in 0..iters {
                v.push(p2p(Op::Irecv, rk(left), bytes));
                v.push(p2p(Op::Irecv, rk(right), bytes));
                v.push(p2p(Op::Isend, rk(right), bytes));
                v.push(p2p(Op::Isend, rk(left), bytes));
                v.push(c(Op::Waitall));
                v.extend(ring_step(r, right, left, bytes));
                v.push(c(Op::Allreduce));
            }
            v.extend([rooted(Op::Bcast, 0), c(Op::Barrier), c(Op::Finalize)]);
            v
        })
        .collect()
}

/// `persistent.c`: a ring step by `MPI_Ibsend` (recorded as `Isend`) and a persistent receive,
/// a halo exchange by four persistent requests started together, and a last `Waitall` on the
/// inactive requests that completes nothing.
fn model_persistent(n: usize, iters: usize) -> Vec<Vec<Call>> {
    let halo = 256 * 8;
    (0..n)
        .map(|r| {
            let (right, left) = (rk((r + 1) % n), rk((r + n - 1) % n));
            let mut v = vec![c(Op::Init)];
            for _ in 0..iters {
                v.extend([p2p(Op::Isend, right, 8), p2p(Op::Irecv, left, 8), c(Op::Waitall)]);
                v.extend([p2p(Op::Irecv, left, halo), p2p(Op::Irecv, right, halo)]);
                v.extend([p2p(Op::Isend, right, halo), p2p(Op::Isend, left, halo)]);
                v.push(c(Op::Waitall));
            }
            v.extend([c(Op::Waitall), c(Op::Finalize)]);
            v
        })
        .collect()
}

/// `persistent.f90`: persistent requests started together (`MPI_Startall`) and one by one
/// (`MPI_Start`) from Fortran.
fn model_persistent_f(n: usize, iters: usize) -> Vec<Vec<Call>> {
    let bytes = 64 * 8;
    (0..n)
        .map(|r| {
            let (right, left) = (rk((r + 1) % n), rk((r + n - 1) % n));
            let mut v = vec![c(Op::Init)];
            for _ in 0..iters {
                v.extend([p2p(Op::Irecv, left, bytes), p2p(Op::Isend, right, bytes)]);
                v.push(c(Op::Waitall));
                v.extend([p2p(Op::Irecv, right, bytes), p2p(Op::Isend, left, bytes)]);
                v.push(c(Op::Waitall));
            }
            v.push(c(Op::Finalize));
            v
        })
        .collect()
}

/// `manycomms.c`: `ndup` duplicates of `MPI_COMM_WORLD` kept alive, a node-local communicator
/// (`MPI_Comm_split_type`, recorded as the `Comm_split` it equals) and a ring made of the first
/// duplicate; each iteration a Barrier on every duplicate, an Allreduce on the node and a Bcast
/// from rank 0 on the ring.
fn model_manycomms(n: usize, ndup: usize, iters: usize) -> Vec<Vec<Call>> {
    (0..n)
        .map(|_| {
            let mut v = vec![c(Op::Init)];
            v.extend(std::iter::repeat_n(c(Op::CommDup), ndup));
            v.extend([c(Op::CommSplit), c(Op::CartCreate)]);
            for _ in 0..iters {
                v.extend(std::iter::repeat_n(c(Op::Barrier), ndup));
                v.extend([c(Op::Allreduce), rooted(Op::Bcast, 0)]);
            }
            v.extend(std::iter::repeat_n(c(Op::CommFree), ndup + 2));
            v.push(c(Op::Finalize));
            v
        })
        .collect()
}

/// `nbcoll.f90`: the non-blocking collectives from Fortran, on a node-local communicator
/// (`MPI_Comm_split_type`) and on `MPI_COMM_WORLD`.
fn model_nbcoll_f(n: usize, iters: usize) -> Vec<Vec<Call>> {
    (0..n)
        .map(|_| {
            let mut v = vec![c(Op::Init), c(Op::CommSplit)];
            for _ in 0..iters {
                v.extend([rooted(Op::Igather, 0), rooted(Op::Iscatter, 0), c(Op::Waitall)]);
                for op in [Op::Iallgather, Op::Iallgatherv, Op::Ialltoall, Op::Ialltoallv] {
                    v.extend([c(op), c(Op::Wait)]);
                }
                v.extend([rooted(Op::Ireduce, 0), c(Op::Wait)]);
                v.extend([rooted(Op::Igatherv, 0), c(Op::Wait)]);
                v.extend([rooted(Op::Iscatterv, 0), c(Op::Wait)]);
                v.extend([c(Op::Iscan), c(Op::Wait)]);
            }
            v.extend([c(Op::CommFree), c(Op::Finalize)]);
            v
        })
        .collect()
}

fn model_callrate(n: usize, iters: usize, bytes: u64) -> Vec<Vec<Call>> {
    (0..n)
        .map(|r| {
            let p = rk(r ^ 1);
            let mut v = vec![c(Op::Init)];
            for it in 0..iters {
                v.extend([p2p(Op::Irecv, p, bytes), p2p(Op::Isend, p, bytes), c(Op::Waitall)]);
                if it % 100 == 99 {
                    v.push(c(Op::Allreduce));
                }
            }
            v.push(c(Op::Finalize));
            v
        })
        .collect()
}

// ---- tests ----------------------------------------------------------------------------------

fn run_ring(lib: Lib) {
    let dir = scratch(&format!("ring-{}", lib.name()));
    trace_program(lib, 4, "ring", &["12", "1024"], &dir);
    let set = open(&dir);
    check_exact(&set, &model_ring(4, 12, 1024));
    // Compute gaps are real: the program computes before every exchange.
    assert!(set.ranks.iter().all(|r| r.compute_ns() > 0));
}

fn run_halo(lib: Lib, dims: &[usize], periodic: bool, name: &str) {
    let dir = scratch(&format!("{name}-{}", lib.name()));
    let spec = dims.iter().map(ToString::to_string).collect::<Vec<_>>().join("x");
    trace_program(
        lib,
        dims.iter().product(),
        "halo",
        &[&spec, if periodic { "1" } else { "0" }, "6", "4096"],
        &dir,
    );
    let set = open(&dir);
    check_exact(&set, &model_halo(dims, periodic, 6, 4096));
    // Cart_create records the topology the program declared.
    for rt in &set.ranks {
        let e = rt.events.iter().find(|e| e.op == Op::CartCreate).unwrap();
        let Payload::Comm { cart: Some(cart), .. } = &e.payload else {
            panic!("no Cartesian info")
        };
        assert_eq!(cart.dims, dims.iter().map(|&d| d as u32).collect::<Vec<_>>());
        assert_eq!(cart.periods, vec![periodic; dims.len()]);
    }
    // The Cartesian communicator is defined with its members.
    for rt in &set.ranks {
        let Payload::P2p { comm, .. } =
            &rt.events.iter().find(|e| e.op == Op::Isend).unwrap().payload
        else {
            unreachable!()
        };
        assert_eq!(rt.members(*comm).unwrap().len(), set.n_ranks());
    }
}

fn run_wavefront(lib: Lib) {
    let dir = scratch(&format!("wavefront-{}", lib.name()));
    trace_program(lib, 6, "wavefront", &["2", "3", "10", "2048"], &dir);
    check_exact(&open(&dir), &model_wavefront(2, 3, 10, 2048));
}

fn run_collectives(lib: Lib) {
    let dir = scratch(&format!("collectives-{}", lib.name()));
    trace_program(lib, 4, "collectives", &["3", "64"], &dir);
    let set = open(&dir);
    check_exact(&set, &model_collectives(4, 3));
    // Sizes: Alltoall of 64 doubles to each of 4 ranks; Gatherv's root receives 4 × 64 doubles.
    for rt in &set.ranks {
        for e in &rt.events {
            if let Payload::Collective { send_bytes, recv_bytes, recv_counts, root, .. } =
                &e.payload
            {
                match e.op {
                    Op::Alltoall | Op::Alltoallv | Op::Alltoallw => {
                        assert_eq!((*send_bytes, *recv_bytes), (4 * 64 * 8, 4 * 64 * 8), "{}", e.op)
                    }
                    Op::Gatherv if *root == Some(rt.rank) => {
                        assert_eq!(recv_counts.as_deref(), Some(&[512, 512, 512, 512][..]))
                    }
                    Op::Bcast => assert_eq!(*send_bytes, 64 * 8),
                    _ => {}
                }
            }
        }
    }
}

fn run_subcomm(lib: Lib) {
    let dir = scratch(&format!("subcomm-{}", lib.name()));
    trace_program(lib, 6, "subcomm", &["2", "3", "4"], &dir);
    let set = open(&dir);
    check_exact(&set, &model_subcomm(2, 3, 4));
    for rt in &set.ranks {
        let r = rt.rank.0;
        let comm_of = |op: Op| match &rt.events.iter().find(|e| e.op == op).unwrap().payload {
            Payload::Collective { comm, .. } => *comm,
            _ => unreachable!(),
        };
        let row: Vec<Rank> = (0..3).map(|c| Rank(r / 3 * 3 + c)).collect();
        let col: Vec<Rank> = (0..2).map(|k| Rank(k * 3 + r % 3)).collect();
        assert_eq!(
            rt.members(comm_of(Op::Bcast)).unwrap(),
            &row[..],
            "row communicator of rank {r}"
        );
        assert_eq!(
            rt.members(comm_of(Op::Allreduce)).unwrap(),
            &col[..],
            "column communicator of rank {r}"
        );
        assert_eq!(rt.members(comm_of(Op::Reduce)).unwrap(), &row[..], "Cart_sub row of rank {r}");
    }
}

fn run_anysource(lib: Lib) {
    let (n, iters, bytes) = (4, 8, 512u64);
    let dir = scratch(&format!("anysource-{}", lib.name()));
    trace_program(lib, n, "anysource", &["8", "512"], &dir);
    let set = open(&dir);
    for rt in &set.ranks {
        check_requests(rt);
    }
    // Workers: three sends to rank 0 per iteration, in order.
    for (w, rt) in set.ranks.iter().enumerate().skip(1) {
        let mut want = vec![c(Op::Init)];
        for _ in 0..iters {
            want.extend(std::iter::repeat_n(p2p(Op::Send, rk(0), bytes * w as u64), 3));
        }
        want.push(c(Op::Finalize));
        assert_eq!(observed(rt), want, "worker {w}");
    }
    // Master: the actual sources of ANY_SOURCE receives, as a multiset.
    let master = observed(&set.ranks[0]);
    let by_op = |op: Op| sorted(master.iter().filter(|k| k.op == op).cloned().collect());
    let each_worker = |op: Op, times: usize| {
        sorted(
            (1..n)
                .flat_map(|w| std::iter::repeat_n(p2p(op, rk(w), bytes * w as u64), times))
                .collect(),
        )
    };
    assert_eq!(by_op(Op::Recv), each_worker(Op::Recv, 2 * iters));
    assert_eq!(
        by_op(Op::Irecv),
        each_worker(Op::Irecv, iters),
        "Irecv sources resolved from Waitall"
    );
    assert_eq!(by_op(Op::Probe), each_worker(Op::Probe, iters));
    assert_eq!(counts(&master)[&Op::Waitall], iters);
    // The wildcard is kept beside the actual source: Recv with tag 1, Irecv and Probe were
    // posted with MPI_ANY_SOURCE; the Recv after the Probe names its source.
    for e in &set.ranks[0].events {
        if let Payload::P2p { wildcards, tag, .. } = &e.payload {
            let want = match e.op {
                Op::Recv => *tag == 1,
                Op::Irecv | Op::Probe => true,
                _ => false,
            };
            assert_eq!(wildcards.source, want, "{} tag {tag}", e.op);
            assert!(!wildcards.tag);
        }
    }
}

fn run_p2pmodes(lib: Lib) {
    let (n, iters, bytes) = (4, 5, 1000u64);
    let dir = scratch(&format!("p2pmodes-{}", lib.name()));
    trace_program(lib, n, "p2pmodes", &["5", "1000"], &dir);
    let set = open(&dir);
    for rt in &set.ranks {
        check_requests(rt);
        let r = rt.rank.0 as usize;
        let (partner, low) = (r ^ 1, r < (r ^ 1));
        let got = observed(rt);
        let k = counts(&got);
        let exact: &[(Op, usize)] = if low {
            &[
                (Op::Ssend, 1),
                (Op::Bsend, 1),
                (Op::Rsend, 1),
                (Op::Send, 1),
                (Op::Recv, 0),
                (Op::Wait, 0),
            ]
        } else {
            &[
                (Op::Ssend, 0),
                (Op::Bsend, 0),
                (Op::Rsend, 0),
                (Op::Send, 0),
                (Op::Recv, 3),
                (Op::Wait, 1),
            ]
        };
        let common = [
            (Op::Barrier, 2),
            (Op::Issend, 1),
            (Op::Irsend, 1),
            (Op::Isend, 2),
            (Op::Waitany, 2),
            (Op::Sendrecv, 1),
            (Op::SendrecvReplace, 1),
            (Op::Irecv, if low { 4 } else { 5 }),
        ];
        for (op, per_iter) in exact.iter().chain(&common) {
            assert_eq!(k.get(op).copied().unwrap_or(0), per_iter * iters, "rank {r}: {op}");
        }
        // Loops whose trip count depends on timing: at least once per iteration.
        for op in [Op::Waitsome, Op::Test, Op::Testall, Op::Testany, Op::Testsome] {
            assert!(
                k.get(&op).copied().unwrap_or(0) >= iters,
                "rank {r}: {op} at least {iters} times"
            );
        }
        assert_eq!(k.get(&Op::Iprobe).copied().unwrap_or(0) >= iters, !low, "rank {r}: Iprobe");
        // Every point-to-point call goes to or comes from the partner, with the program's size.
        for call in got.iter().filter(|k| matches!(k.op.class(), OpClass::Send | OpClass::Recv)) {
            assert_eq!(call.peer, Some(rk(partner)), "rank {r}: {call:?}");
            assert_eq!(call.bytes, Some(bytes), "rank {r}: {call:?}");
        }
        for e in &rt.events {
            if let Payload::SendRecv { dest, source, send_bytes, recv_bytes, .. } = &e.payload {
                assert_eq!(
                    (*dest, *source, *send_bytes, *recv_bytes),
                    (rk(partner), rk(partner), bytes, bytes)
                );
            }
        }
    }
}

fn run_fortran_ring(lib: Lib) {
    let dir = scratch(&format!("ring_f-{}", lib.name()));
    trace_program(lib, 4, "ring_f", &["7"], &dir);
    check_exact(&open(&dir), &model_ring_f(4, 7));
}

fn run_persistent(lib: Lib) {
    let dir = scratch(&format!("persistent-{}", lib.name()));
    trace_program(lib, 4, "persistent", &["6", "10"], &dir);
    check_exact(&open(&dir), &model_persistent(4, 6));
}

fn run_fortran_persistent(lib: Lib) {
    let dir = scratch(&format!("persistent_f-{}", lib.name()));
    trace_program(lib, 4, "persistent_f", &["5"], &dir);
    check_exact(&open(&dir), &model_persistent_f(4, 5));
}

/// Every communicator the ranks use is the one the program made: each of the 40 duplicates and
/// the ring has every rank, and so has the node-local communicator on this one machine. The
/// tracer's table of communicators grows past 16 and 32 entries while a creation is recorded.
fn run_manycomms(lib: Lib) {
    let (n, ndup, iters) = (4usize, 40usize, 3usize);
    let dir = scratch(&format!("manycomms-{}", lib.name()));
    trace_program(lib, n, "manycomms", &[&ndup.to_string(), &iters.to_string()], &dir);
    let set = open(&dir);
    check_exact(&set, &model_manycomms(n, ndup, iters));
    let all: Vec<Rank> = (0..n as u32).map(Rank).collect();
    for rt in &set.ranks {
        let mut comms = BTreeSet::new();
        for e in &rt.events {
            if let Payload::Collective { comm, .. } = &e.payload {
                comms.insert(*comm);
                assert_eq!(rt.members(*comm).unwrap(), &all[..], "rank {}: {}", rt.rank.0, e.op);
            }
        }
        // The 40 duplicates, the node and the ring: each a communicator of its own.
        assert_eq!(comms.len(), ndup + 2, "rank {}", rt.rank.0);
    }
}

fn run_fortran_nbcoll(lib: Lib) {
    let dir = scratch(&format!("nbcoll_f-{}", lib.name()));
    let file = scratch(&format!("nbcoll_f-file-{}", lib.name())).join("data");
    trace_program(lib, 4, "nbcoll_f", &["3", file.to_str().unwrap()], &dir);
    let set = open(&dir);
    check_exact(&set, &model_nbcoll_f(4, 3));
    set.ranks.iter().for_each(check_requests);
    // Its one-sided and MPI-IO calls are counted, not recorded.
    let want = [
        ("File_close", 1),
        ("File_open", 1),
        ("File_write_at", 1),
        ("Get", 3),
        ("Put", 3),
        ("Win_fence", 6),
        ("Win_lock", 3),
        ("Win_unlock", 3),
    ];
    for rt in &set.ranks {
        assert_eq!(unrecorded_calls(rt), want.map(|(k, n)| (k.to_owned(), n)).to_vec());
        assert_eq!(rt.unrecorded["Put"].bytes, 3 * 32 * 8, "rank {}", rt.rank.0);
        assert_eq!(rt.unrecorded["File_write_at"].bytes, 32 * 8, "rank {}", rt.rank.0);
    }
    // The file the Fortran program named, trailing blanks and all, is the one written.
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 4 * 32 * 8);
}

/// `fileio.c`: its Allreduces are recorded, its MPI-IO calls counted with the bytes they read
/// and wrote.
fn run_fileio(lib: Lib) {
    let (n, iters, bytes) = (4usize, 5u64, 32768u64);
    let dir = scratch(&format!("fileio-{}", lib.name()));
    let file = scratch(&format!("fileio-file-{}", lib.name())).join("data");
    let args = [file.to_str().unwrap(), &iters.to_string(), &bytes.to_string()];
    trace_program(lib, n, "fileio", &args, &dir);
    let set = open(&dir);
    let model: Vec<Vec<Call>> = (0..n)
        .map(|_| {
            let mut v = vec![c(Op::Init)];
            v.extend(std::iter::repeat_n(c(Op::Allreduce), iters as usize));
            v.push(c(Op::Finalize));
            v
        })
        .collect();
    check_exact(&set, &model);
    let want =
        [("File_close", 1), ("File_open", 1), ("File_read_at", 1), ("File_write_at_all", iters)];
    for rt in &set.ranks {
        assert_eq!(unrecorded_calls(rt), want.map(|(k, n)| (k.to_owned(), n)).to_vec());
        assert_eq!(rt.unrecorded["File_write_at_all"].bytes, iters * bytes);
        assert_eq!(rt.unrecorded["File_read_at"].bytes, bytes);
    }
    assert_eq!(std::fs::metadata(&file).unwrap().len(), iters * bytes * n as u64);
}

/// The calls of each kind `rt` counts without recording them.
fn unrecorded_calls(rt: &RankTrace) -> Vec<(String, u64)> {
    rt.unrecorded.iter().map(|(k, u)| (k.clone(), u.calls)).collect()
}

/// `onesided.c`: its two-sided calls are recorded (a Sendrecv around the ring, the Wait of each
/// MPI_Rget, an Allreduce), its one-sided ones counted by kind with the bytes they move.
fn run_onesided(lib: Lib) {
    let (n, iters, bytes) = (4usize, 6u64, 4096u64);
    let dir = scratch(&format!("onesided-{}", lib.name()));
    trace_program(lib, n, "onesided", &[&iters.to_string(), &bytes.to_string()], &dir);
    let set = open(&dir);
    let model: Vec<Vec<Call>> = (0..n)
        .map(|_| {
            let mut v = vec![c(Op::Init)];
            for _ in 0..iters {
                v.extend([c(Op::Sendrecv), c(Op::Wait), c(Op::Allreduce)]);
            }
            v.push(c(Op::Finalize));
            v
        })
        .collect();
    check_exact(&set, &model);
    let want = [
        ("Accumulate", iters),
        ("Get", iters),
        ("Put", 2 * iters),
        ("Rget", iters),
        ("Win_fence", 2 * iters),
        ("Win_lock", iters),
        ("Win_lock_all", iters),
        ("Win_unlock", iters),
        ("Win_unlock_all", iters),
    ];
    for rt in &set.ranks {
        assert_eq!(unrecorded_calls(rt), want.map(|(k, n)| (k.to_owned(), n)).to_vec());
        let u = &rt.unrecorded;
        assert_eq!(u["Put"].bytes, 2 * iters * bytes, "rank {}", rt.rank.0);
        assert_eq!(u["Get"].bytes, iters * bytes);
        assert_eq!(u["Accumulate"].bytes, iters * 8);
        assert_eq!(u["Win_fence"].bytes, 0);
        assert!(u.values().all(|k| k.ns > 0), "rank {}: {u:?}", rt.rank.0);
    }
}

fn run_callrate(lib: Lib) {
    let dir = scratch(&format!("callrate-{}", lib.name()));
    trace_program(lib, 2, "callrate", &["250", "8", "1"], &dir);
    check_exact(&open(&dir), &model_callrate(2, 250, 8));
}

fn run_irregular(lib: Lib) {
    let (n, iters) = (8usize, 5usize);
    let dir = scratch(&format!("irregular-{}", lib.name()));
    trace_program(lib, n, "irregular", &["5"], &dir);
    let set = open(&dir);
    let targets = |r: usize| [(r * r + 1) % n, (3 * r + 2) % n];
    for rt in &set.ranks {
        check_requests(rt);
        let r = rt.rank.0 as usize;
        let calls = observed(rt);
        let sends: Vec<Call> = targets(r)
            .into_iter()
            .filter(|&t| t != r)
            .flat_map(|t| std::iter::repeat_n(p2p(Op::Isend, rk(t), 8), iters))
            .collect();
        assert_eq!(
            sorted(calls.iter().filter(|k| k.op == Op::Isend).cloned().collect()),
            sorted(sends),
            "rank {r}"
        );
        // Receives from ANY_SOURCE resolve to exactly the ranks that target this one.
        let senders: Vec<Call> = (0..n)
            .flat_map(|s| targets(s).into_iter().filter(move |&t| t == r && t != s).map(move |_| s))
            .flat_map(|s| std::iter::repeat_n(p2p(Op::Irecv, rk(s), 8), iters))
            .collect();
        assert_eq!(
            sorted(calls.iter().filter(|k| k.op == Op::Irecv).cloned().collect()),
            sorted(senders),
            "rank {r}"
        );
        assert_eq!(counts(&calls)[&Op::Waitall], iters);
    }
}

macro_rules! both_libraries {
    ($($name:ident => $body:expr;)*) => {
        mod openmpi {
            use super::*;
            $( #[test] fn $name() { let lib = Lib::OpenMpi; $body(lib) } )*
        }
        mod mpich {
            use super::*;
            $( #[test] fn $name() { let lib = Lib::Mpich; $body(lib) } )*
        }
    };
}

both_libraries! {
    ring_blocking => run_ring;
    halo_2d_periodic_4x4 => |lib| run_halo(lib, &[4, 4], true, "halo2d-periodic");
    halo_2d_open_4x4 => |lib| run_halo(lib, &[4, 4], false, "halo2d-open");
    halo_3d_periodic_2x2x2 => |lib| run_halo(lib, &[2, 2, 2], true, "halo3d");
    wavefront_2x3 => run_wavefront;
    collectives_all_kinds => run_collectives;
    subcommunicators => run_subcomm;
    any_source => run_anysource;
    p2p_modes_and_completions => run_p2pmodes;
    fortran_ring => run_fortran_ring;
    buffered_and_persistent_requests => run_persistent;
    fortran_persistent_requests => run_fortran_persistent;
    call_heavy_exchange => run_callrate;
    many_communicators_and_node_local_ones => run_manycomms;
    fortran_non_blocking_collectives => run_fortran_nbcoll;
    one_sided_calls_are_counted => run_onesided;
    file_io_calls_are_counted => run_fileio;
    irregular_partners => run_irregular;
}

/// `mpiskel trace` stopped by SIGTERM while the application runs stops the launcher (and with
/// it every rank), removes the folder it was recording into, writes no trace, and exits with
/// 128 + 15 — under both MPI libraries.
#[test]
fn an_interrupted_trace_leaves_nothing_behind() {
    for lib in [Lib::OpenMpi, Lib::Mpich] {
        let bin = support::fixture_bin(lib).join("timestep");
        let dir = scratch(&format!("interrupted-trace-{}", lib.name()));
        let out = dir.join("long.trace");
        let _guard = support::mpi_lock();
        let mut cmd = support::mpiskel();
        // A run of minutes, stopped after a second or two.
        cmd.args(["trace", "--force", "-o"]).arg(&out).arg("--");
        cmd.args(lib.mpirun(2)).arg(&bin).args(["1000000", "10", "25", "300"]);
        cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let recording = || {
            std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().contains(".recording-"))
        };
        let start = std::time::Instant::now();
        while !recording() && start.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(recording(), "{}: the recording folder never appeared", lib.name());
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(128 + 15), "{}", lib.name());
        assert!(
            !recording() && !out.exists(),
            "{}: something was left in {}",
            lib.name(),
            dir.display()
        );
        // No rank of the application is left running.
        let mut left = true;
        for _ in 0..100 {
            let ps = std::process::Command::new("pgrep").arg("-f").arg(&bin).output().unwrap();
            left = !ps.stdout.is_empty();
            if !left {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(!left, "{}: ranks of {} still run", lib.name(), bin.display());
    }
}

/// The seconds callrate measured itself (rank 0, from after `MPI_Init` to before `MPI_Finalize`).
fn own_seconds(out: &std::process::Output) -> f64 {
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("seconds="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("callrate printed no seconds:\n{text}"))
}

/// `--time-only` records `MPI_Init` and `MPI_Finalize` only; the time between them is the
/// program's own (within a millisecond and 5 %); `inspect` says so and `build` refuses the trace.
#[test]
fn time_only_records_the_programs_own_time() {
    for lib in [Lib::OpenMpi, Lib::Mpich] {
        let dir = scratch(&format!("time-only-{}", lib.name()));
        let out = support::trace_program_with(
            lib,
            2,
            "callrate",
            &["20000", "8", "2"],
            &dir,
            &["--time-only"],
        );
        let own = own_seconds(&out);
        let set = open(&dir);
        assert!(set.meta.as_ref().unwrap().time_only);
        for rt in &set.ranks {
            let ops: Vec<Op> = rt.events.iter().map(|e| e.op).collect();
            assert_eq!(ops, [Op::Init, Op::Finalize], "{}: rank {}", lib.name(), rt.rank);
        }
        let app = set.app_time_s();
        assert!(
            (app - own).abs() <= 1e-3 + 0.05 * own,
            "{}: the trace's time {app} s is not the program's own {own} s",
            lib.name()
        );
        let mut inspect = support::mpiskel();
        inspect.arg("inspect").arg(&dir);
        let text = String::from_utf8(inspect.output().unwrap().stdout).unwrap();
        assert!(text.contains("recorded with --time-only"), "{text}");
        let mut build = support::mpiskel();
        build.arg("build").arg(&dir).arg("-o").arg(dir.with_extension("skel"));
        let b = build.output().unwrap();
        assert!(!b.status.success());
        assert!(String::from_utf8_lossy(&b.stderr).contains("--time-only"));
    }
}

/// By default (and with `--cpu-time`, its old spelling) every gap's processor time is recorded,
/// none exceeds its wall time, short gaps (the clock is not read for them) count whole, and the
/// tracer's own time is out of the timeline: the traced program's time is below what the
/// program measured itself, which includes the tracer's work. `--wall-time` records none.
#[test]
fn cpu_time_stays_within_the_gaps_and_the_tracers_own_time_is_left_out() {
    for (lib, options) in [(Lib::OpenMpi, &[][..]), (Lib::Mpich, &["--cpu-time"][..])] {
        let dir = scratch(&format!("cpu-time-{}", lib.name()));
        let out =
            support::trace_program_with(lib, 2, "callrate", &["20000", "8", "1"], &dir, options);
        let own = own_seconds(&out);
        let set = open(&dir);
        let mut short = 0;
        for rt in &set.ranks {
            for e in &rt.events {
                let cpu = e.gap_cpu_ns.expect("every gap's processor time is recorded");
                assert!(
                    cpu <= e.gap_ns,
                    "{}: rank {}: {cpu} ns of {}",
                    lib.name(),
                    rt.rank,
                    e.gap_ns
                );
                if e.gap_ns < 5_000 && cpu == e.gap_ns {
                    short += 1;
                }
            }
        }
        assert!(short > 1000, "{}: only {short} short gaps counted whole", lib.name());
        let app = set.app_time_s();
        assert!(app < own, "{}: traced time {app} s, the program's own {own} s", lib.name());
    }
    let dir = scratch("wall-time");
    support::trace_program_with(
        Lib::OpenMpi,
        2,
        "callrate",
        &["200", "8", "1"],
        &dir,
        &["--wall-time"],
    );
    let set = open(&dir);
    assert!(
        set.ranks.iter().all(|rt| !rt.info.has_cpu_time),
        "--wall-time records no processor time"
    );
    assert!(set.ranks.iter().flat_map(|rt| &rt.events).all(|e| e.gap_cpu_ns.is_none()));
}

/// The tracer hides, at every call, the least of its own time that falls between two calls (one
/// clock read and a call, measured at `MPI_Init`). That must never take away time the program
/// spent: `callrate` spins 40 µs of wall time (reading `MPI_Wtime`) after each `MPI_Waitall`, and
/// every gap that ends the spin is recorded as at least 40 µs (less 0.1 µs of the clocks' jitter).
#[test]
fn the_tracers_hidden_floor_never_takes_the_programs_time() {
    let spin_ns = 40_000u64;
    for lib in [Lib::OpenMpi, Lib::Mpich] {
        let dir = scratch(&format!("floor-{}", lib.name()));
        support::trace_program_with(lib, 2, "callrate", &["300", "8", "0", "40"], &dir, &[]);
        let set = open(&dir);
        for rt in &set.ranks {
            let mut after_spin = 0;
            for w in rt.events.windows(2) {
                if w[0].op == Op::Waitall {
                    after_spin += 1;
                    assert!(
                        w[1].gap_ns + 100 >= spin_ns,
                        "{}: rank {}: a {spin_ns} ns spin before MPI_{} recorded as {} ns",
                        lib.name(),
                        rt.rank,
                        w[1].op,
                        w[1].gap_ns
                    );
                }
            }
            assert_eq!(after_spin, 300, "{}: rank {}", lib.name(), rt.rank);
        }
    }
}

/// With `--cpu-time`, a compute block after a polling loop records the processor time it took.
/// The polling program (4 ranks on this machine's 2 cores) computes `WORK × (1 + (rank +
/// iteration) mod 3) / 2` thousand operations before the first send of each iteration, then polls
/// its receives: ranks that poll on one core hand it to each other at every poll, in intervals
/// too short for the tracer to read the clock. Estimated as spent on the processor, they used to
/// drift ahead of the clock, and the drift came out of the next block read (3.4 ms recorded for a
/// 12 ms block). Per unit of work, no block's processor time now falls below 0.6 of the median
/// over all blocks and ranks (the drift left 0.28), nor above twice it: the tests beside this one
/// share the cores, and their cache traffic can slow one block by a third or more.
#[test]
fn cpu_time_of_a_block_after_polls_is_the_work_it_did() {
    let (iters, work) = (30usize, 3000u64);
    let dir = scratch("cpu-time-polling");
    support::trace_program_with(
        Lib::OpenMpi,
        4,
        "polling",
        &[&iters.to_string(), "4096", &work.to_string()],
        &dir,
        &["--cpu-time"],
    );
    let set = open(&dir);
    let mut per_unit = Vec::new();
    for rt in &set.ranks {
        let r = rt.rank.0 as usize;
        // The first send of each iteration follows the block.
        let firsts = rt.events.iter().filter(|e| e.op == Op::Isend).step_by(2);
        for (it, e) in firsts.enumerate() {
            let units = (1 + (r + it) % 3) as f64;
            let cpu = e.gap_cpu_ns.expect("--cpu-time records every gap's processor time");
            per_unit.push((r, it, cpu as f64 / units));
        }
        assert_eq!(per_unit.iter().filter(|p| p.0 == r).count(), iters, "rank {r}");
    }
    let mut sorted: Vec<f64> = per_unit.iter().map(|p| p.2).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    assert!(median > 0.0);
    let off: Vec<_> = per_unit
        .iter()
        .filter(|p| !(0.6..=2.0).contains(&(p.2 / median)))
        .map(|p| format!("rank {} iteration {}: {:.2} of the median", p.0, p.1, p.2 / median))
        .collect();
    assert!(off.is_empty(), "{} blocks off: {off:?}", off.len());
}

/// A trace records the load beside its run (`meta.json`'s `node_load`): traced while two
/// processes spin on this machine's 2 cores, the polling program's run had a large share of the
/// node's processor time taken by others, `inspect` shows it and `build` says what it means for
/// the skeleton.
/// Builds the trace at `dir` into `<dir>.skel` and returns what `build` said (its notes).
fn build_notes(dir: &std::path::Path) -> String {
    let skel = dir.with_extension("skel");
    let build =
        support::mpiskel().args(["build", "--force"]).arg(dir).arg("-o").arg(&skel).output();
    let build = build.unwrap();
    let notes = String::from_utf8_lossy(&build.stderr).into_owned();
    assert!(build.status.success(), "{notes}");
    notes
}

#[test]
fn a_trace_records_the_load_beside_its_run() {
    struct Spinners(Vec<std::process::Child>);
    impl Drop for Spinners {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let dir = scratch("node-load");
    let spinners = Spinners(
        (0..2)
            .map(|_| {
                std::process::Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .expect("sh")
            })
            .collect(),
    );
    support::trace_program_with(
        Lib::OpenMpi,
        4,
        "polling",
        &["30", "4096", "3000"],
        &dir,
        &["--cpu-time"],
    );
    drop(spinners);
    let set = open(&dir);
    let load = set.meta.as_ref().and_then(|m| m.node_load).expect("node_load recorded");
    assert!(load.processors >= 1, "{load:?}");
    // Two spinners beside 4 ranks on 2 cores hold about a third of the node or more.
    assert!(load.others > 0.15 && load.others <= 1.0, "{load:?}");
    assert!((0.0..=1.0).contains(&load.steal), "{load:?}");
    let inspect = support::mpiskel().arg("inspect").arg(&dir).output().unwrap();
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(text.contains("load     while it ran, other processes took"), "{text}");
    let notes = build_notes(&dir);
    assert!(notes.contains("while the application was traced, other processes took"), "{notes}");
    // One run of 4 ranks on fewer processors: build points to a trace of several runs.
    if load.processors < 4 {
        assert!(notes.contains("`mpiskel trace --runs 3` keeps the run of median time"), "{notes}");
    }
}

#[test]
fn several_runs_keep_the_trace_of_median_time() {
    let dir = scratch("median-run");
    support::trace_program_with(Lib::OpenMpi, 4, "ring", &[], &dir, &["--runs", "3"]);
    let set = open(&dir);
    let meta = set.meta.as_ref().expect("meta.json");
    let times = &meta.runs_app_s;
    assert_eq!(times.len(), 3, "{meta:?}");
    let kept = meta.kept_run.expect("kept_run");
    // The run kept is the middle one by time, and it is the trace in the directory.
    let below = times.iter().filter(|&&t| t < times[kept]).count();
    let above = times.iter().filter(|&&t| t > times[kept]).count();
    assert!(below <= 1 && above <= 1, "{times:?}, kept {kept}");
    assert!((set.app_time_s() - times[kept]).abs() < 1e-9, "{} vs {times:?}", set.app_time_s());
    // The other runs' folders are gone.
    let parent = dir.parent().unwrap();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let left: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&format!(".{name}.recording")))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let inspect = support::mpiskel().arg("inspect").arg(&dir).output().unwrap();
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(text.contains("runs     3 recorded"), "{text}");
    assert!(text.contains(&format!("this is run {}, the median", kept + 1)), "{text}");
    // A trace of several runs needs no advice to take several.
    let notes = build_notes(&dir);
    assert!(!notes.contains("--runs 3"), "{notes}");
    // Zero runs is refused before anything runs.
    let zero = support::mpiskel()
        .args(["trace", "--runs", "0", "-o"])
        .arg(dir.with_extension("zero"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(!zero.status.success());
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--runs"));
}

/// Threads in MPI at the same time (`fixtures/programs/threads.c`: MPI_THREAD_MULTIPLE, two
/// threads each making 200 MPI_Allreduce on a duplicate of MPI_COMM_WORLD of its own, as
/// PT-Scotch folds its graphs): every call of both threads is recorded, whole, on every rank.
/// (A call counted as nested in whatever call another thread was in lost 15 to 199 of the 200
/// on one of the two communicators.) The gaps carry processor time, each thread's by its own
/// clock: summed over a rank's calls, at most what two threads can have in the rank's span.
/// The trace builds.
#[test]
fn calls_of_threads_in_mpi_at_once_are_all_recorded() {
    for lib in [Lib::OpenMpi, Lib::Mpich] {
        let dir = scratch(&format!("threads-{}", lib.name()));
        trace_program(lib, 4, "threads", &["200", "20"], &dir);
        let set = open(&dir);
        for rt in &set.ranks {
            assert!(rt.info.has_cpu_time, "{}: rank {}: gaps of two threads", lib.name(), rt.rank);
            let cpu: u64 = rt.events.iter().filter_map(|e| e.gap_cpu_ns).sum();
            let span = rt.events.last().map_or(0, |e| e.exit_ns);
            assert!(
                cpu > 0 && cpu <= 2 * span,
                "{}: rank {}: {cpu} ns of processor time in a span of {span} ns",
                lib.name(),
                rt.rank
            );
            let mut per_comm: BTreeMap<u32, usize> = BTreeMap::new();
            for e in &rt.events {
                if let (Op::Allreduce, Payload::Collective { comm, .. }) = (e.op, &e.payload) {
                    *per_comm.entry(comm.0).or_default() += 1;
                }
            }
            let counts: Vec<usize> = per_comm.values().copied().collect();
            assert_eq!(counts, [200, 200], "{}: rank {}: {per_comm:?}", lib.name(), rt.rank);
        }
        let skel = dir.with_extension("skel");
        let out = support::mpiskel()
            .args(["build", "-q", "--force", "--no-check"])
            .arg(&dir)
            .arg("-o")
            .arg(&skel)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The (peer, bytes) of a rank's sends or receives (`class`) that neighbourhood collectives made
/// (tag 32767), sorted.
fn neighbour_messages(rt: &mpiskel_trace::RankTrace, class: OpClass) -> Vec<(Peer, u64)> {
    let mut got: Vec<(Peer, u64)> = rt
        .events
        .iter()
        .filter(|e| e.op.class() == class)
        .filter_map(|e| match &e.payload {
            Payload::P2p { peer, bytes, tag: 32767, .. } => Some((*peer, *bytes)),
            _ => None,
        })
        .collect();
    got.sort();
    got
}

/// The neighbourhood collectives from Fortran (`fixtures/programs/neighbors.f90`: on a periodic
/// Cartesian ring of four, an `MPI_Neighbor_alltoall`, an `MPI_Ineighbor_allgather`, an
/// `MPI_Neighbor_allgatherv` and an `MPI_Ineighbor_alltoallv` per step) are recorded as the
/// messages they make under both libraries: OpenMPI's Fortran layer calls the PMPI entry points,
/// so the tracer defines the Fortran ones too.
#[test]
fn neighbourhood_collectives_from_fortran_are_recorded() {
    let (steps, count) = (4usize, 64u64);
    for lib in [Lib::OpenMpi, Lib::Mpich] {
        let dir = scratch(&format!("neighbors_f-{}", lib.name()));
        trace_program(lib, 4, "neighbors_f", &[&steps.to_string(), &count.to_string()], &dir);
        let set = open(&dir);
        for rt in &set.ranks {
            check_requests(rt);
            let r = rt.rank.0 as usize;
            let (left, right) = (rk((r + 3) % 4), rk((r + 1) % 4));
            let mut want = Vec::new();
            for _ in 0..steps {
                for b in [8 * count, 4, 8 * count, 8 * count] {
                    want.extend([(left, b), (right, b)]);
                }
            }
            want.sort();
            for class in [OpClass::Send, OpClass::Recv] {
                let got = neighbour_messages(rt, class);
                assert_eq!(got, want, "{}: rank {r}: {class:?}", lib.name());
            }
        }
    }
}

/// Neighbourhood collectives (`fixtures/programs/neighbors.c`: a halo over a distributed graph
/// of the ring neighbours one and two away, blocking and not, and a gather over a periodic
/// Cartesian ring) are recorded as the messages they make, tag 32767: every request is
/// completed, and each rank sends to and receives from its neighbours the program's sizes.
#[test]
fn neighbourhood_collectives_are_recorded_as_their_messages() {
    let (steps, bytes) = (10usize, 8192u64);
    for lib in [Lib::OpenMpi, Lib::Mpich] {
        let dir = scratch(&format!("neighbors-{}", lib.name()));
        trace_program(lib, 4, "neighbors", &[&steps.to_string(), &bytes.to_string(), "50"], &dir);
        let set = open(&dir);
        for rt in &set.ranks {
            check_requests(rt);
            let r = rt.rank.0 as usize;
            let at = |d: usize| rk((r + d) % 4);
            // Per step: the graph's halo, its non-blocking exchange, the ring's gather.
            let mut want = Vec::new();
            for _ in 0..steps {
                for (d, b) in [(3, bytes), (1, bytes), (2, bytes / 2), (2, bytes / 2)] {
                    want.push((at(d), b));
                }
                for d in [3, 1, 2, 2] {
                    want.push((at(d), 64));
                }
                for d in [3, 1] {
                    want.push((at(d), 4));
                }
            }
            want.sort();
            for class in [OpClass::Send, OpClass::Recv] {
                let got = neighbour_messages(rt, class);
                assert_eq!(got, want, "{}: rank {r}: {class:?}", lib.name());
            }
        }
        let skel = dir.with_extension("skel");
        let out = support::mpiskel()
            .args(["build", "-q", "--force"])
            .arg(&dir)
            .arg("-o")
            .arg(&skel)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
