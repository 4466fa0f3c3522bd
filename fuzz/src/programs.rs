//! Random SPMD programs, executed into the traces the tracer would have written for them.
//!
//! A program is a set-up, a main loop and a finish, each a list of motifs drawn from what MPI
//! codes do: shifts and halo exchanges (blocking, non-blocking, paired synchronous sends,
//! `MPI_PROC_NULL` at open boundaries, messages to self), polling loops that test a request
//! until it completes, probes, every kind of collective on `MPI_COMM_WORLD` or on communicators
//! split off it, non-blocking collectives, and a master that serves its workers with
//! `MPI_ANY_SOURCE`. Loops nest; an inner loop may run a different number of times at each
//! iteration of the outer one, and message sizes may change from iteration to iteration. Every
//! generated program is correct MPI that cannot block, even with every send synchronous: each
//! motif pairs its calls so (receives posted before the sends they wait for, paired exchanges
//! ordered by parity).
//!
//! Executing a program writes, for every rank, the events of its calls with their payloads as
//! the native tracer records them (actual sources of wildcard receives, completed requests,
//! communicator members), and compute gaps that vary from rank to rank and call to call.
//!
//! Cost: linear in the number of events generated, which [`MAX_CALLS`] bounds (one program in
//! ten; [`MAX_CALLS_SMALL`] the others).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use mpiskel_trace::model::world_members;
use mpiskel_trace::{
    CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, RankTrace, RequestId, Wildcards,
    Work,
};

use crate::rng::Rng;

/// About the most calls a rank of a large generated program makes (one in ten): loops of
/// hundreds of iterations around a few motifs.
pub const MAX_CALLS: u64 = 3_000;

/// About the most calls a rank of the other programs makes: enough for loops of tens of
/// iterations, few enough to run a million programs through the pipeline in an hour.
pub const MAX_CALLS_SMALL: u64 = 400;

/// A generated program: its traces and a one-line description of its shape.
#[derive(Debug, Clone)]
pub struct Generated {
    /// One trace per rank, in rank order.
    pub ranks: Vec<RankTrace>,
    /// The program's shape, e.g. `8 ranks: set-up [bcast] · 20 × [shift+1 isend, allreduce]`.
    pub shape: String,
}

/// How a point-to-point exchange is written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// `MPI_Sendrecv`, with `MPI_PROC_NULL` past an open boundary.
    Sendrecv,
    /// `MPI_Irecv`, `MPI_Isend`, `MPI_Waitall`.
    Nonblocking,
    /// `MPI_Irecv`, blocking `MPI_Send`, `MPI_Wait`.
    RecvFirst,
    /// `MPI_Irecv`, `MPI_Isend`, then `MPI_Test` on the receive until it completes.
    Polling,
    /// `MPI_Isend`, `MPI_Probe`, `MPI_Recv`, `MPI_Wait`.
    Probe,
}

/// One communication or computation pattern, executed by every rank.
#[derive(Debug, Clone)]
enum Motif {
    /// Compute only, about `ns` on every rank.
    Compute { ns: u64 },
    /// Every rank sends to `rank + k` and receives from `rank - k`.
    Shift { k: u32, periodic: bool, mode: Mode, bytes: u64, tag: i32 },
    /// Ranks `2i` and `2i + 1` exchange with synchronous sends, the even one sending first.
    Pairs { bytes: u64 },
    /// A halo exchange on a `px × py` grid; with `stride` s > 1, a multigrid's coarse level
    /// (periodic): only the ranks at multiples of s along each dimension longer than s take
    /// part, exchanging with those s ranks away; the others skip it.
    Halo { px: u32, py: u32, periodic: bool, stride: u32, bytes: u64 },
    /// A collective on `MPI_COMM_WORLD` (`comm` 0) or on the `comm`-th communicator split off.
    Coll { op: Op, comm: usize, root: u32, bytes: u64 },
    /// Rank 0 answers `tasks` requests of each other rank in any order.
    Workers { tasks: u32, bytes: u64 },
}

#[derive(Debug, Clone)]
enum Item {
    Motif(Motif),
    /// A loop running between `lo` and `hi` times (drawn at each execution); with `vary`,
    /// message sizes change with the iteration.
    Loop {
        lo: u64,
        hi: u64,
        vary: bool,
        body: Vec<Item>,
    },
}

/// A communicator split off `MPI_COMM_WORLD`: per rank, its id there and its members.
#[derive(Debug, Clone)]
struct Split {
    id: Vec<CommId>,
    members: Vec<Arc<[Rank]>>,
}

struct RankState {
    trace: RankTrace,
    clock: u64,
    gap: u64,
    next_request: u32,
    next_comm: u32,
}

struct Machine<'r> {
    rng: &'r mut Rng,
    ranks: Vec<RankState>,
    splits: Vec<Split>,
    /// Per-rank compute speed factor (imbalance).
    speed: Vec<f64>,
    work: bool,
}

/// Generates one program from `rng` and executes it.
pub fn program(rng: &mut Rng) -> Generated {
    let large = rng.chance(0.1);
    let n = if large {
        *rng.pick(&[9u32, 12, 16, 16, 24, 32])
    } else {
        *rng.pick(&[1u32, 2, 2, 3, 4, 4, 4, 5, 6, 7, 8, 8])
    };
    let max_calls = if large { MAX_CALLS } else { MAX_CALLS_SMALL };
    let grid = grid_of(rng, n);
    let mut shape = format!("{n} ranks:");
    let n_splits = if n >= 2 && rng.chance(0.3) { rng.range(1, 2) as usize } else { 0 };
    let setup: Vec<Item> =
        (0..rng.below(3)).map(|_| Item::Motif(motif(rng, n, grid, n_splits))).collect();
    let body_len = rng.range(1, 4);
    let mut body: Vec<Item> =
        (0..body_len).map(|_| Item::Motif(motif(rng, n, grid, n_splits))).collect();
    if rng.chance(0.35) {
        let lo = rng.range(1, 6);
        let hi = if rng.chance(0.5) { lo } else { lo + rng.range(1, 4) };
        let inner: Vec<Item> =
            (0..rng.range(1, 2)).map(|_| Item::Motif(motif(rng, n, grid, n_splits))).collect();
        let at = rng.below(body.len() as u64 + 1) as usize;
        body.insert(at, Item::Loop { lo, hi, vary: rng.chance(0.3), body: inner });
    }
    let per_iteration = calls(&body).max(1);
    let most = (max_calls / per_iteration).max(1);
    let iterations = (*rng.pick(&[1u64, 2, 3, 4, 5, 6, 8, 10, 20, 25, 40, 60, 100])).min(most);
    let lo = if rng.chance(0.15) { iterations.saturating_sub(2).max(1) } else { iterations };
    let main = Item::Loop { lo, hi: iterations, vary: rng.chance(0.2), body };
    let finish: Vec<Item> =
        (0..rng.below(3)).map(|_| Item::Motif(motif(rng, n, grid, n_splits))).collect();
    describe(&mut shape, "set-up", &setup);
    describe(&mut shape, "main", std::slice::from_ref(&main));
    describe(&mut shape, "finish", &finish);

    let work = rng.chance(0.3);
    let imbalance = rng.chance(0.3);
    let speed = (0..n).map(|_| if imbalance { 0.7 + 0.6 * unit(rng) } else { 1.0 }).collect();
    let ranks = (0..n)
        .map(|r| {
            let mut comms = BTreeMap::new();
            comms.insert(CommId::WORLD, world_members(n));
            comms.insert(CommId::SELF, Arc::from(vec![Rank(r)]));
            RankState {
                trace: RankTrace {
                    rank: Rank(r),
                    info: RankInfo {
                        n_ranks: n,
                        host: Some(format!("node{}", r / 4)),
                        pid: Some(1000 + r),
                        mpi_library: Some("generated".into()),
                        start_unix_ns: None,
                        clock: "CLOCK_MONOTONIC".into(),
                        has_instructions: work,
                        has_cpu_time: work,
                    },
                    events: Vec::new(),
                    trailing_gap_ns: 0,
                    comms,
                    record_counts: BTreeMap::new(),
                    unrecorded: Default::default(),
                },
                clock: 0,
                gap: 0,
                next_request: 0,
                next_comm: 2,
            }
        })
        .collect();
    let mut m = Machine { rng, ranks, splits: Vec::new(), speed, work };
    for r in 0..n as usize {
        m.compute(r, 200_000);
        m.call(r, Op::Init, Payload::None);
    }
    for _ in 0..n_splits {
        m.split();
    }
    for item in setup.iter().chain(std::iter::once(&main)).chain(&finish) {
        m.item(item, 0);
    }
    for r in 0..n as usize {
        m.compute(r, 50_000);
        m.call(r, Op::Finalize, Payload::None);
    }
    let ranks = m.ranks.into_iter().map(|s| s.trace).collect();
    Generated { ranks, shape }
}

fn unit(rng: &mut Rng) -> f64 {
    rng.below(1 << 20) as f64 / (1u64 << 20) as f64
}

/// A `px × py` factorization of `n` with both sides ≥ 2, if `n` has one (drawn among them).
fn grid_of(rng: &mut Rng, n: u32) -> Option<(u32, u32)> {
    let sides: Vec<u32> = (2..n).filter(|d| n % d == 0 && n / d >= 2).collect();
    (!sides.is_empty()).then(|| {
        let px = *rng.pick(&sides);
        (px, n / px)
    })
}

fn motif(rng: &mut Rng, n: u32, grid: Option<(u32, u32)>, n_splits: usize) -> Motif {
    let bytes = *rng.pick(&[0u64, 8, 64, 1024, 4096, 65_536, 1 << 20]);
    match rng.below(9) {
        0 => Motif::Compute { ns: rng.range(1_000, 5_000_000) },
        1..=3 => {
            let k = if rng.chance(0.1) { 0 } else { rng.range(1, (n as u64).clamp(1, 3)) as u32 };
            let mode = *rng.pick(&[
                Mode::Sendrecv,
                Mode::Nonblocking,
                Mode::RecvFirst,
                Mode::Polling,
                Mode::Probe,
            ]);
            let tag = rng.below(4) as i32;
            Motif::Shift { k, periodic: rng.chance(0.6), mode, bytes, tag }
        }
        4 if n >= 2 => Motif::Pairs { bytes },
        5 if grid.is_some() => {
            let (px, py) = grid.unwrap_or((1, n));
            // A coarse level where a dimension is long enough for one.
            let stride = if (px > 2 || py > 2) && rng.chance(0.3) { 2 } else { 1 };
            Motif::Halo { px, py, periodic: stride > 1 || rng.chance(0.5), stride, bytes }
        }
        6 if n >= 2 && rng.chance(0.5) => Motif::Workers { tasks: rng.range(1, 3) as u32, bytes },
        _ => {
            let op = *rng.pick(&[
                Op::Barrier,
                Op::Bcast,
                Op::Reduce,
                Op::Allreduce,
                Op::Allreduce,
                Op::Scan,
                Op::Gather,
                Op::Scatter,
                Op::Allgather,
                Op::Allgatherv,
                Op::Alltoall,
                Op::Alltoallv,
                Op::Iallreduce,
                Op::Ibcast,
            ]);
            let comm =
                if n_splits > 0 && rng.chance(0.4) { rng.range(1, n_splits as u64) } else { 0 };
            Motif::Coll { op, comm: comm as usize, root: rng.below(n as u64) as u32, bytes }
        }
    }
}

/// About how many calls one execution of `items` makes per rank.
fn calls(items: &[Item]) -> u64 {
    items
        .iter()
        .map(|i| match i {
            Item::Motif(Motif::Compute { .. }) => 0,
            Item::Motif(Motif::Halo { .. }) => 9,
            Item::Motif(Motif::Workers { tasks, .. }) => 2 * *tasks as u64 * 8,
            Item::Motif(Motif::Shift { mode: Mode::Polling, .. }) => 8,
            Item::Motif(_) => 4,
            Item::Loop { hi, body, .. } => hi * calls(body),
        })
        .sum()
}

fn describe(out: &mut String, what: &str, items: &[Item]) {
    fn one(i: &Item) -> String {
        match i {
            Item::Motif(m) => match m {
                Motif::Compute { .. } => "compute".into(),
                Motif::Shift { k, periodic, mode, .. } => {
                    format!("shift+{k}{} {mode:?}", if *periodic { "" } else { " open" })
                }
                Motif::Pairs { .. } => "pairs".into(),
                Motif::Halo { px, py, periodic, stride, .. } => {
                    let coarse =
                        if *stride > 1 { format!(" level {stride}") } else { String::new() };
                    format!("halo {px}x{py}{}{coarse}", if *periodic { "" } else { " open" })
                }
                Motif::Coll { op, comm, .. } => {
                    format!(
                        "{}{}",
                        op.name(),
                        if *comm > 0 { format!("@split{comm}") } else { String::new() }
                    )
                }
                Motif::Workers { tasks, .. } => format!("workers×{tasks}"),
            },
            Item::Loop { lo, hi, vary, body } => {
                let n = if lo == hi { format!("{hi}") } else { format!("{lo}..{hi}") };
                let v = if *vary { " varying" } else { "" };
                format!("{n}{v} × [{}]", body.iter().map(one).collect::<Vec<_>>().join(", "))
            }
        }
    }
    if !items.is_empty() {
        let _ = write!(out, " {what} {}", items.iter().map(one).collect::<Vec<_>>().join(", "));
    }
}

/// A completed receive, with what the completion revealed.
fn received(q: RequestId, source: u32, tag: i32, bytes: u64) -> Completed {
    Completed { request: Some(q), source: Some(Rank(source)), tag: Some(tag), bytes: Some(bytes) }
}

/// A completed send or collective.
fn sent(q: RequestId) -> Completed {
    Completed { request: Some(q), source: None, tag: None, bytes: None }
}

fn p2p(peer: Peer, tag: i32, bytes: u64, request: Option<RequestId>) -> Payload {
    Payload::P2p { peer, tag, bytes, comm: CommId::WORLD, request, wildcards: Wildcards::default() }
}

impl Machine<'_> {
    fn compute(&mut self, r: usize, ns: u64) {
        let jitter = 0.9 + 0.2 * unit(self.rng);
        self.ranks[r].gap += (ns as f64 * jitter * self.speed[r]) as u64;
    }

    fn call(&mut self, r: usize, op: Op, payload: Payload) {
        let duration = self.rng.range(300, 30_000);
        let s = &mut self.ranks[r];
        let enter = s.clock + s.gap;
        let gap = s.gap;
        s.trace.events.push(Event {
            op,
            enter_ns: enter,
            exit_ns: enter + duration,
            gap_ns: gap,
            gap_work: self.work.then_some(Work::Instructions(gap * 2)),
            gap_cpu_ns: self.work.then_some(gap),
            gap_polls: 0,
            payload,
        });
        s.clock = enter + duration;
        s.gap = 0;
    }

    fn request(&mut self, r: usize) -> RequestId {
        let s = &mut self.ranks[r];
        s.next_request += 1;
        RequestId(s.next_request)
    }

    fn n(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// `MPI_Comm_split` of `MPI_COMM_WORLD` by a colour of every rank.
    fn split(&mut self) {
        let n = self.n();
        let colors = self.rng.range(1, 3) as u32;
        let reverse = self.rng.chance(0.3);
        let mut members: BTreeMap<u32, Vec<Rank>> = BTreeMap::new();
        for r in 0..n {
            members.entry(r % colors).or_default().push(Rank(r));
        }
        if reverse {
            members.values_mut().for_each(|m| m.reverse());
        }
        let lists: BTreeMap<u32, Arc<[Rank]>> =
            members.into_iter().map(|(c, m)| (c, Arc::from(m))).collect();
        let mut split = Split { id: Vec::new(), members: Vec::new() };
        for r in 0..n as usize {
            let color = r as u32 % colors;
            let id = CommId(self.ranks[r].next_comm);
            self.ranks[r].next_comm += 1;
            let key = if reverse { -(r as i32) } else { r as i32 };
            self.compute(r, 20_000);
            self.call(
                r,
                Op::CommSplit,
                Payload::Comm {
                    parent: CommId::WORLD,
                    created: Some(id),
                    color: Some(color as i32),
                    key: Some(key),
                    cart: None,
                },
            );
            self.ranks[r].trace.comms.insert(id, lists[&color].clone());
            split.id.push(id);
            split.members.push(lists[&color].clone());
        }
        self.splits.push(split);
    }

    fn item(&mut self, item: &Item, iteration: u64) {
        match item {
            Item::Motif(m) => self.motif(m, iteration),
            Item::Loop { lo, hi, vary, body } => {
                let times = self.rng.range(*lo, *hi);
                for i in 0..times {
                    for b in body {
                        self.item(b, if *vary { i } else { iteration });
                    }
                }
            }
        }
    }

    fn motif(&mut self, m: &Motif, iteration: u64) {
        let n = self.n();
        let grow = |b: u64| b * (1 + iteration % 3);
        match *m {
            Motif::Compute { ns } => (0..n as usize).for_each(|r| self.compute(r, ns)),
            Motif::Shift { k, periodic, mode, bytes, tag } => {
                let bytes = grow(bytes);
                let peer = |r: u32, d: i64| {
                    let p = r as i64 + d;
                    if periodic {
                        Some(p.rem_euclid(n as i64) as u32)
                    } else {
                        (0..n as i64).contains(&p).then_some(p as u32)
                    }
                };
                for r in 0..n {
                    let (dest, src) = (peer(r, k as i64), peer(r, -(k as i64)));
                    self.exchange(r as usize, dest, src, mode, bytes, tag);
                }
            }
            Motif::Pairs { bytes } => {
                let bytes = grow(bytes);
                for r in 0..n - n % 2 {
                    let (ru, other) = (r as usize, Peer::Rank(Rank(r ^ 1)));
                    self.compute(ru, 30_000);
                    let send = (Op::Ssend, p2p(other, 7, bytes, None));
                    let recv = (Op::Recv, p2p(other, 7, bytes, None));
                    let (a, b) = if r % 2 == 0 { (send, recv) } else { (recv, send) };
                    self.call(ru, a.0, a.1);
                    self.call(ru, b.0, b.1);
                }
            }
            Motif::Halo { px, py, periodic, stride, bytes } => {
                let bytes = grow(bytes);
                let s = i64::from(stride);
                // Along a dimension no longer than the stride, or that it does not divide,
                // nobody is exchanged with.
                let along = |p: u32| if p > stride && p % stride == 0 { s } else { 0 };
                let (sx, sy) = (along(px), along(py));
                for r in 0..n {
                    let (x, y) = ((r % px) as i64, (r / px) as i64);
                    if (sx > 0 && x % sx != 0) || (sy > 0 && y % sy != 0) {
                        continue;
                    }
                    let at = |dx: i64, dy: i64| {
                        let (a, b) = (x + dx, y + dy);
                        if periodic {
                            Some(
                                (a.rem_euclid(px as i64) + px as i64 * b.rem_euclid(py as i64))
                                    as u32,
                            )
                        } else {
                            ((0..px as i64).contains(&a) && (0..py as i64).contains(&b))
                                .then(|| (a + px as i64 * b) as u32)
                        }
                    };
                    let dirs: Vec<(i64, i64, i32)> =
                        [(sx, 0, 0), (-sx, 0, 1), (0, sy, 2), (0, -sy, 3)]
                            .into_iter()
                            .filter(|&(dx, dy, _)| dx != 0 || dy != 0)
                            .collect();
                    let ru = r as usize;
                    self.compute(ru, 100_000);
                    let mut done = Vec::new();
                    // Receive from the neighbour opposite each direction, tagged by direction.
                    for &(dx, dy, tag) in &dirs {
                        if let Some(src) = at(-dx, -dy) {
                            let q = self.request(ru);
                            self.call(
                                ru,
                                Op::Irecv,
                                p2p(Peer::Rank(Rank(src)), tag, bytes, Some(q)),
                            );
                            done.push(received(q, src, tag, bytes));
                        }
                    }
                    for &(dx, dy, tag) in &dirs {
                        if let Some(dest) = at(dx, dy) {
                            let q = self.request(ru);
                            self.call(
                                ru,
                                Op::Isend,
                                p2p(Peer::Rank(Rank(dest)), tag, bytes, Some(q)),
                            );
                            done.push(sent(q));
                        }
                    }
                    if !done.is_empty() {
                        let n_given = done.len() as u32;
                        self.call(
                            ru,
                            Op::Waitall,
                            Payload::Completion { n_given, completed: done },
                        );
                    }
                }
            }
            Motif::Coll { op, comm, root, bytes } => self.collective(op, comm, root, grow(bytes)),
            Motif::Workers { tasks, bytes } => self.workers(tasks, grow(bytes)),
        }
    }

    /// One rank's part of a shift: send to `dest`, receive from `src` (either may be past an
    /// open boundary).
    fn exchange(
        &mut self,
        r: usize,
        dest: Option<u32>,
        src: Option<u32>,
        mode: Mode,
        bytes: u64,
        tag: i32,
    ) {
        self.compute(r, 80_000);
        let rank = |p: Option<u32>| p.map_or(Peer::Null, |p| Peer::Rank(Rank(p)));
        match mode {
            Mode::Sendrecv => self.call(
                r,
                Op::Sendrecv,
                Payload::SendRecv {
                    dest: rank(dest),
                    send_tag: tag,
                    send_bytes: bytes,
                    source: rank(src),
                    recv_tag: tag,
                    recv_bytes: if src.is_some() { bytes } else { 0 },
                    comm: CommId::WORLD,
                },
            ),
            Mode::Nonblocking | Mode::Polling => {
                let mut done = Vec::new();
                let mut recv = None;
                if let Some(s) = src {
                    let q = self.request(r);
                    self.call(r, Op::Irecv, p2p(rank(src), tag, bytes, Some(q)));
                    recv = Some(received(q, s, tag, bytes));
                }
                if dest.is_some() {
                    let q = self.request(r);
                    self.call(r, Op::Isend, p2p(rank(dest), tag, bytes, Some(q)));
                    done.push(sent(q));
                }
                if let (Mode::Polling, Some(c)) = (mode, &recv) {
                    let polls = self.rng.range(0, 6);
                    for _ in 0..polls {
                        self.compute(r, 2_000);
                        self.call(
                            r,
                            Op::Test,
                            Payload::Completion { n_given: 1, completed: vec![] },
                        );
                    }
                    self.call(
                        r,
                        Op::Test,
                        Payload::Completion { n_given: 1, completed: vec![c.clone()] },
                    );
                    recv = None;
                }
                done.extend(recv);
                if !done.is_empty() {
                    let n_given = done.len() as u32;
                    self.call(r, Op::Waitall, Payload::Completion { n_given, completed: done });
                }
            }
            Mode::RecvFirst => {
                let q = src.map(|s| {
                    let q = self.request(r);
                    self.call(r, Op::Irecv, p2p(rank(src), tag, bytes, Some(q)));
                    (q, s)
                });
                if dest.is_some() {
                    self.call(r, Op::Send, p2p(rank(dest), tag, bytes, None));
                }
                if let Some((q, s)) = q {
                    self.call(
                        r,
                        Op::Wait,
                        Payload::Completion {
                            n_given: 1,
                            completed: vec![received(q, s, tag, bytes)],
                        },
                    );
                }
            }
            Mode::Probe => {
                let q = dest.map(|_| {
                    let q = self.request(r);
                    self.call(r, Op::Isend, p2p(rank(dest), tag, bytes, Some(q)));
                    q
                });
                if src.is_some() {
                    self.call(r, Op::Probe, p2p(rank(src), tag, bytes, None));
                    self.call(r, Op::Recv, p2p(rank(src), tag, bytes, None));
                }
                if let Some(q) = q {
                    self.call(
                        r,
                        Op::Wait,
                        Payload::Completion { n_given: 1, completed: vec![sent(q)] },
                    );
                }
            }
        }
    }

    fn collective(&mut self, op: Op, comm: usize, root: u32, bytes: u64) {
        let n = self.n() as usize;
        for r in 0..n {
            let (id, members) = match comm.checked_sub(1).and_then(|i| self.splits.get(i)) {
                Some(s) => (s.id[r], s.members[r].clone()),
                None => (CommId::WORLD, world_members(n as u32)),
            };
            let m = members.len() as u64;
            let me = members.iter().position(|x| x.0 == r as u32).unwrap_or(0) as u64;
            let root_rank = members[root as usize % members.len()];
            let at_root = root_rank.0 == r as u32;
            let counts = |f: &dyn Fn(u64) -> u64| Some((0..m).map(f).collect::<Vec<u64>>());
            let (send, recv, send_counts, recv_counts) = match op {
                Op::Barrier => (0, 0, None, None),
                Op::Reduce => (bytes, if at_root { bytes } else { 0 }, None, None),
                Op::Gather => (bytes, if at_root { bytes * m } else { 0 }, None, None),
                Op::Scatter => (if at_root { bytes * m } else { 0 }, bytes, None, None),
                Op::Allgather => (bytes, bytes * m, None, None),
                Op::Alltoall => (bytes * m, bytes * m, None, None),
                Op::Allgatherv => {
                    let c = counts(&|i| bytes * (i + 1));
                    (bytes * (me + 1), c.as_ref().map_or(0, |c| c.iter().sum()), None, c)
                }
                Op::Alltoallv => {
                    let s = counts(&|j| bytes * (1 + (me + j) % 3));
                    let v = counts(&|i| bytes * (1 + (i + me) % 3));
                    let sum = |c: &Option<Vec<u64>>| c.as_ref().map_or(0, |c| c.iter().sum());
                    (sum(&s), sum(&v), s, v)
                }
                _ => (bytes, bytes, None, None),
            };
            let rooted =
                matches!(op, Op::Bcast | Op::Ibcast | Op::Reduce | Op::Gather | Op::Scatter);
            let request = matches!(op, Op::Iallreduce | Op::Ibcast).then(|| self.request(r));
            self.compute(r, 60_000);
            self.call(
                r,
                op,
                Payload::Collective {
                    comm: id,
                    root: rooted.then_some(root_rank),
                    send_bytes: send,
                    recv_bytes: recv,
                    send_counts: send_counts.map(Into::into),
                    recv_counts: recv_counts.map(Into::into),
                    request,
                },
            );
            if let Some(q) = request {
                self.compute(r, 40_000);
                let c = sent(q);
                self.call(r, Op::Wait, Payload::Completion { n_given: 1, completed: vec![c] });
            }
        }
    }

    /// Rank 0 receives `tasks` reports from each other rank with `MPI_ANY_SOURCE`, in an order
    /// drawn at random, and answers each.
    fn workers(&mut self, tasks: u32, bytes: u64) {
        let n = self.n();
        let mut order: Vec<u32> =
            (1..n).flat_map(|w| std::iter::repeat_n(w, tasks as usize)).collect();
        self.rng.shuffle(&mut order);
        for w in 1..n as usize {
            for _ in 0..tasks {
                self.compute(w, 300_000);
                self.call(w, Op::Send, p2p(Peer::Rank(Rank(0)), 1, bytes, None));
                self.call(w, Op::Recv, p2p(Peer::Rank(Rank(0)), 2, 8, None));
            }
        }
        for w in order {
            self.compute(0, 5_000);
            let payload = Payload::P2p {
                peer: Peer::Rank(Rank(w)),
                tag: 1,
                bytes,
                comm: CommId::WORLD,
                request: None,
                wildcards: Wildcards { source: true, tag: false },
            };
            self.call(0, Op::Recv, payload);
            self.call(0, Op::Send, p2p(Peer::Rank(Rank(w)), 2, 8, None));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_valid_traces_of_every_size() {
        let mut sizes = std::collections::BTreeSet::new();
        for seed in 0..300 {
            let g = program(&mut Rng::new(seed));
            sizes.insert(g.ranks.len());
            mpiskel_trace::validate::validate("generated".as_ref(), &g.ranks)
                .unwrap_or_else(|e| panic!("seed {seed} ({}): {e}", g.shape));
            for t in &g.ranks {
                assert!(t.events.len() as u64 <= 4 * MAX_CALLS, "seed {seed}: {}", t.events.len());
                assert_eq!(t.events.first().map(|e| e.op), Some(Op::Init));
                assert_eq!(t.events.last().map(|e| e.op), Some(Op::Finalize));
            }
        }
        assert!(sizes.len() >= 10, "{sizes:?}");
    }

    #[test]
    fn a_seed_makes_the_same_program() {
        let (a, b) = (program(&mut Rng::new(42)), program(&mut Rng::new(42)));
        assert_eq!(a.shape, b.shape);
        assert_eq!(a.ranks, b.ranks);
    }
}
