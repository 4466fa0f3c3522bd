//! Collectives as the point-to-point messages of their usual algorithms, chosen as SimGrid
//! 3.32's default selector chooses them (the selector the NPB fixtures' replays used):
//!
//! | call | algorithm |
//! |---|---|
//! | Barrier | linear: everyone to rank 0, rank 0 back to everyone |
//! | Bcast | binomial tree (MPICH's) |
//! | Reduce | linear: everyone to the root at once |
//! | Allreduce | Reduce to rank 0, then Bcast |
//! | Alltoall | Open MPI 4's decision by ranks and block size ([`alltoall_algorithm`]): Bruck, linear (every pair at once) or pairwise |
//! | Alltoallv, Alltoallw | linear: every pair at once |
//! | Allgather(v) | linear: every pair at once |
//! | Gather(v), Scatter(v) | linear, through the root |
//! | Scan, Exscan | linear: every rank to every higher rank |
//! | Reduce_scatter(_block) | Reduce to rank 0, then Scatterv |
//!
//! Each schedule is what one rank does, in comm ranks: sends and receives on requests, and waits.
//! Non-blocking collectives take the schedule of their blocking form. [`Selector::Ompi`] follows
//! Open MPI 4's decision instead, as SimGrid's `ompi` selector does.

use mpiskel_trace::Op;

/// One step of a rank's part in a collective.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollStep {
    /// Start sending `bytes` to comm rank `to` on local request `req`.
    Send {
        /// Destination, a comm rank.
        to: usize,
        /// Tag (one per algorithm, as MPI libraries keep collectives' tags apart).
        tag: i64,
        /// Payload bytes.
        bytes: u64,
        /// Local request number.
        req: usize,
    },
    /// Start receiving from comm rank `from` on local request `req`.
    Recv {
        /// Source, a comm rank.
        from: usize,
        /// Tag.
        tag: i64,
        /// Local request number.
        req: usize,
    },
    /// Wait for these local requests.
    Wait(Vec<usize>),
}

/// A rank's call, as the schedules need it.
#[derive(Debug, Clone, Copy)]
pub struct CollCall<'a> {
    /// The operation.
    pub op: Op,
    /// This rank's comm rank.
    pub me: usize,
    /// Communicator size.
    pub size: usize,
    /// Root as a comm rank (0 where there is none).
    pub root: usize,
    /// Bytes this rank sends (for v variants, the sum).
    pub send_bytes: u64,
    /// Bytes this rank receives.
    pub recv_bytes: u64,
    /// Per-peer send sizes of v variants.
    pub send_counts: Option<&'a [u64]>,
    /// Per-peer receive sizes of v variants.
    pub recv_counts: Option<&'a [u64]>,
    /// Which library's choice of algorithms.
    pub selector: Selector,
}

/// Whose choice of collective algorithms to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Selector {
    /// SimGrid's default selector (`smpi/coll-selector:default`).
    #[default]
    Default,
    /// Open MPI 4's fixed decision (`smpi/coll-selector:ompi`), with the binomial broadcast
    /// (`smpi/bcast:default`): barrier by recursive doubling, linear or Bruck; allreduce by
    /// recursive doubling, Rabenseifner, or a ring; reduce up a binary tree.
    Ompi,
}

const TAG_BARRIER: i64 = -1;
const TAG_BCAST: i64 = -2;
const TAG_REDUCE: i64 = -3;
const TAG_ALLTOALL: i64 = -4;
const TAG_ALLTOALLV: i64 = -5;
const TAG_ALLGATHER: i64 = -6;
const TAG_GATHER: i64 = -7;
const TAG_SCATTER: i64 = -8;
const TAG_SCAN: i64 = -9;
const TAG_ALLREDUCE: i64 = -10;

struct Builder {
    steps: Vec<CollStep>,
    reqs: usize,
}

impl Builder {
    fn isend(&mut self, to: usize, tag: i64, bytes: u64) -> usize {
        let req = self.reqs;
        self.reqs += 1;
        self.steps.push(CollStep::Send { to, tag, bytes, req });
        req
    }
    fn irecv(&mut self, from: usize, tag: i64) -> usize {
        let req = self.reqs;
        self.reqs += 1;
        self.steps.push(CollStep::Recv { from, tag, req });
        req
    }
    fn wait(&mut self, reqs: Vec<usize>) {
        if !reqs.is_empty() {
            self.steps.push(CollStep::Wait(reqs));
        }
    }
    fn send(&mut self, to: usize, tag: i64, bytes: u64) {
        let r = self.isend(to, tag, bytes);
        self.wait(vec![r]);
    }
    fn recv(&mut self, from: usize, tag: i64) {
        let r = self.irecv(from, tag);
        self.wait(vec![r]);
    }
    /// MPI_Sendrecv; a rank with itself copies, in no time.
    fn sendrecv(&mut self, me: usize, to: usize, tag: i64, bytes: u64, from: usize) {
        if to == me && from == me {
            return;
        }
        let s = self.isend(to, tag, bytes);
        let r = self.irecv(from, tag);
        self.wait(vec![s, r]);
    }

    fn barrier(&mut self, me: usize, p: usize) {
        if me > 0 {
            self.send(0, TAG_BARRIER, 0);
            self.recv(0, TAG_BARRIER);
        } else {
            let rs: Vec<usize> = (1..p).map(|i| self.irecv(i, TAG_BARRIER)).collect();
            self.wait(rs);
            let ss: Vec<usize> = (1..p).map(|i| self.isend(i, TAG_BARRIER, 0)).collect();
            self.wait(ss);
        }
    }

    fn bcast(&mut self, me: usize, p: usize, root: usize, bytes: u64) {
        let rel = (me + p - root) % p;
        let mut mask = 1;
        while mask < p {
            if rel & mask != 0 {
                self.recv((me + p - mask) % p, TAG_BCAST);
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < p {
                self.send((me + mask) % p, TAG_BCAST, bytes);
            }
            mask >>= 1;
        }
    }

    fn reduce(&mut self, me: usize, p: usize, root: usize, bytes: u64) {
        if me != root {
            self.send(root, TAG_REDUCE, bytes);
        } else {
            let rs: Vec<usize> =
                (0..p).filter(|&i| i != root).map(|i| self.irecv(i, TAG_REDUCE)).collect();
            self.wait(rs);
        }
    }

    fn alltoall(&mut self, me: usize, p: usize, block: u64) {
        match alltoall_algorithm(p, block) {
            Alltoall::Bruck => {
                // log2(P) rounds, each sending the blocks whose index has that bit set.
                let mut pof2 = 1;
                while pof2 < p {
                    let n = (1..p).filter(|b| b & pof2 != 0).count() as u64;
                    self.sendrecv(
                        me,
                        (me + pof2) % p,
                        TAG_ALLTOALL,
                        n * block,
                        (me + p - pof2) % p,
                    );
                    pof2 *= 2;
                }
            }
            Alltoall::Linear => {
                let mut reqs = Vec::with_capacity(2 * p);
                let mut i = (me + 1) % p;
                while i != me {
                    reqs.push(self.irecv(i, TAG_ALLTOALL));
                    i = (i + 1) % p;
                }
                let mut i = (me + p - 1) % p;
                while i != me {
                    reqs.push(self.isend(i, TAG_ALLTOALL, block));
                    i = (i + p - 1) % p;
                }
                self.wait(reqs);
            }
            Alltoall::Pairwise if p.is_power_of_two() => {
                for i in 0..p {
                    self.sendrecv(me, me ^ i, TAG_ALLTOALL, block, me ^ i);
                }
            }
            Alltoall::Pairwise => {
                for i in 0..p {
                    self.sendrecv(me, (me + i) % p, TAG_ALLTOALL, block, (me + p - i) % p);
                }
            }
        }
    }

    /// Open MPI's recursive-doubling barrier: pairs at distance 1, 2, 4 … of the largest
    /// power of two, the others folded in before and after.
    fn barrier_rdb(&mut self, me: usize, p: usize) {
        let mut adj = 1;
        while adj <= p {
            adj <<= 1;
        }
        adj >>= 1;
        if adj != p {
            if me >= adj {
                self.sendrecv(me, me - adj, TAG_BARRIER, 0, me - adj);
            } else if me < p - adj {
                self.recv(me + adj, TAG_BARRIER);
            }
        }
        if me < adj {
            let mut mask = 1;
            while mask < adj {
                let remote = me ^ mask;
                mask <<= 1;
                if remote < adj {
                    self.sendrecv(me, remote, TAG_BARRIER, 0, remote);
                }
            }
        }
        if adj != p && me < p - adj {
            self.send(me + adj, TAG_BARRIER, 0);
        }
    }

    /// Bruck's barrier: ⌈log2 P⌉ rounds to rank + 2^k, from rank − 2^k.
    fn barrier_bruck(&mut self, me: usize, p: usize) {
        let mut d = 1;
        while d < p {
            self.sendrecv(me, (me + d) % p, TAG_BARRIER, 0, (me + p - d) % p);
            d <<= 1;
        }
    }

    /// The largest power of two ≤ p, and how many ranks are left over.
    fn pof2(p: usize) -> (usize, usize) {
        let mut pof2 = 1;
        while pof2 <= p {
            pof2 <<= 1;
        }
        pof2 >>= 1;
        (pof2, p - pof2)
    }

    /// Folds the ranks beyond the largest power of two into their neighbours; the rank's
    /// number among the power of two, or `None` for a rank that waits for the result.
    fn fold_in(&mut self, me: usize, rem: usize, bytes: u64) -> Option<usize> {
        if me < 2 * rem {
            if me % 2 == 0 {
                self.send(me + 1, TAG_ALLREDUCE, bytes);
                None
            } else {
                self.recv(me - 1, TAG_ALLREDUCE);
                Some(me / 2)
            }
        } else {
            Some(me - rem)
        }
    }

    fn fold_out(&mut self, me: usize, rem: usize, bytes: u64) {
        if me < 2 * rem {
            if me % 2 == 1 {
                self.send(me - 1, TAG_ALLREDUCE, bytes);
            } else {
                self.recv(me + 1, TAG_ALLREDUCE);
            }
        }
    }

    /// Recursive-doubling allreduce (MPICH's, SimGrid's `allreduce__rdb`).
    fn allreduce_rdb(&mut self, me: usize, p: usize, bytes: u64) {
        let (pof2, rem) = Self::pof2(p);
        if let Some(newrank) = self.fold_in(me, rem, bytes) {
            let mut mask = 1;
            while mask < pof2 {
                let nd = newrank ^ mask;
                let dst = if nd < rem { nd * 2 + 1 } else { nd + rem };
                self.sendrecv(me, dst, TAG_ALLREDUCE, bytes, dst);
                mask <<= 1;
            }
        }
        self.fold_out(me, rem, bytes);
    }

    /// Rabenseifner's allreduce: a reduce-scatter by recursive halving, then an allgather by
    /// recursive doubling (SimGrid's `allreduce__rab_rdb`), on `count` elements of `elem` bytes.
    fn allreduce_rab(&mut self, me: usize, p: usize, count: u64, elem: u64) {
        let bytes = count * elem;
        let (pof2, rem) = Self::pof2(p);
        if let Some(newrank) = self.fold_in(me, rem, bytes) {
            let per = count / pof2 as u64;
            let cnt = |i: usize| if i + 1 < pof2 { per } else { count - per * (pof2 as u64 - 1) };
            let sum = |a: usize, b: usize| (a..b).map(cnt).sum::<u64>() * elem;
            let (mut send_idx, mut recv_idx, mut last_idx) = (0usize, 0usize, pof2);
            let mut mask = 1;
            while mask < pof2 {
                let nd = newrank ^ mask;
                let dst = if nd < rem { nd * 2 + 1 } else { nd + rem };
                let send_bytes = if newrank < nd {
                    send_idx = recv_idx + pof2 / (mask * 2);
                    sum(send_idx, last_idx)
                } else {
                    recv_idx = send_idx + pof2 / (mask * 2);
                    sum(send_idx, recv_idx)
                };
                self.sendrecv(me, dst, TAG_ALLREDUCE, send_bytes, dst);
                send_idx = recv_idx;
                mask <<= 1;
                if mask < pof2 {
                    last_idx = recv_idx + pof2 / mask;
                }
            }
            mask >>= 1;
            while mask > 0 {
                let nd = newrank ^ mask;
                let dst = if nd < rem { nd * 2 + 1 } else { nd + rem };
                let send_bytes = if newrank < nd {
                    if mask != pof2 / 2 {
                        last_idx += pof2 / (mask * 2);
                    }
                    recv_idx = send_idx + pof2 / (mask * 2);
                    sum(send_idx, recv_idx)
                } else {
                    recv_idx = send_idx - pof2 / (mask * 2);
                    sum(send_idx, last_idx)
                };
                self.sendrecv(me, dst, TAG_ALLREDUCE, send_bytes, dst);
                if newrank > nd {
                    send_idx = recv_idx;
                }
                mask >>= 1;
            }
        }
        self.fold_out(me, rem, bytes);
    }

    /// Ring allreduce (SimGrid's `allreduce__lr`): a ring reduce-scatter and a ring allgather
    /// of P − 1 steps each, the remainder of the division by P reduced again after.
    fn allreduce_ring(&mut self, me: usize, p: usize, count: u64, elem: u64, sel: Selector) {
        if count < p as u64 {
            self.reduce(me, p, 0, count * elem);
            self.bcast(me, p, 0, count * elem);
            return;
        }
        let block = count / p as u64 * elem;
        for _ in 0..2 * (p - 1) {
            self.sendrecv(me, (me + 1) % p, TAG_ALLREDUCE, block, (me + p - 1) % p);
        }
        let rest = count % p as u64;
        if rest > 0 {
            self.allreduce(me, p, rest, elem, sel);
        }
    }

    /// An allreduce as `sel` chooses it.
    fn allreduce(&mut self, me: usize, p: usize, count: u64, elem: u64, sel: Selector) {
        let bytes = count * elem;
        match sel {
            Selector::Default => {
                self.reduce(me, p, 0, bytes);
                self.bcast(me, p, 0, bytes);
            }
            Selector::Ompi => match ompi_allreduce(p, bytes) {
                OmpiAllreduce::Rdb => self.allreduce_rdb(me, p, bytes),
                OmpiAllreduce::Rabenseifner => self.allreduce_rab(me, p, count, elem),
                OmpiAllreduce::Ring => self.allreduce_ring(me, p, count, elem, sel),
                OmpiAllreduce::SegmentedRing if count < p as u64 => {
                    self.allreduce_rdb(me, p, bytes)
                }
                OmpiAllreduce::SegmentedRing => self.allreduce_ring(me, p, count, elem, sel),
                OmpiAllreduce::ReduceBcast => {
                    self.reduce_ompi(me, p, 0, bytes);
                    self.bcast(me, p, 0, bytes);
                }
            },
        }
    }

    /// Open MPI's reduce up a binary tree (`reduce__ompi_binary`, one segment of up to 32 KiB
    /// at a time): each rank waits for its children in order, then sends to its parent.
    fn reduce_ompi(&mut self, me: usize, p: usize, root: usize, bytes: u64) {
        let (parent, children) = ompi_tree(2, p, root, me);
        let seg = 32 * 1024u64;
        let segments = bytes.div_ceil(seg).max(1);
        for s in 0..segments {
            let this = if s + 1 == segments { bytes - seg * (segments - 1) } else { seg };
            if !children.is_empty() {
                let rs: Vec<usize> = children.iter().map(|&c| self.irecv(c, TAG_REDUCE)).collect();
                for r in rs {
                    self.wait(vec![r]);
                }
            }
            if let Some(parent) = parent {
                self.send(parent, TAG_REDUCE, this);
            }
        }
    }

    /// Every pair at once: receives from everyone else, then sends to everyone else.
    fn all_pairs(&mut self, me: usize, p: usize, tag: i64, send: impl Fn(usize) -> u64) {
        let mut reqs: Vec<usize> =
            (0..p).filter(|&i| i != me).map(|i| self.irecv(i, tag)).collect();
        for i in (0..p).filter(|&i| i != me) {
            reqs.push(self.isend(i, tag, send(i)));
        }
        self.wait(reqs);
    }

    fn scatter(&mut self, me: usize, p: usize, root: usize, size_to: impl Fn(usize) -> u64) {
        if me != root {
            self.recv(root, TAG_SCATTER);
        } else {
            let ss: Vec<usize> = (0..p)
                .filter(|&i| i != root)
                .map(|i| self.isend(i, TAG_SCATTER, size_to(i)))
                .collect();
            self.wait(ss);
        }
    }
}

/// The algorithms of an all-to-all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alltoall {
    /// Every pair at once (Open MPI's "linear" and "linear_sync", "two_proc").
    Linear,
    /// P steps, one partner each (`rank xor i` where P is a power of two).
    Pairwise,
    /// Bruck's log2(P) rounds of combined blocks.
    Bruck,
}

/// Open MPI 4's fixed decision for an all-to-all of `block` bytes per pair on `p` ranks, as
/// SimGrid 3.32 follows it (`alltoall__ompi`, the default selector's choice).
pub fn alltoall_algorithm(p: usize, block: u64) -> Alltoall {
    use Alltoall::{Bruck as B, Linear as L, Pairwise as W};
    // (upper bound of block bytes, algorithm), first match wins; the last entry has no bound.
    let table: &[(u64, Alltoall)] = match p {
        0..=2 => &[
            (2, W),
            (4, L),
            (16, W),
            (64, L),
            (256, W),
            (4096, L),
            (32768, W),
            (262144, L),
            (1048576, L),
            (u64::MAX, W),
        ],
        3..=7 => &[(8192, L), (16384, L), (65536, L), (524288, L), (1048576, W), (u64::MAX, L)],
        8..=15 => &[(u64::MAX, L)],
        16..=31 => &[(4, L), (512, B), (u64::MAX, L)],
        32..=63 => &[(512, B), (u64::MAX, L)],
        64..=127 => &[(1024, B), (262144, L), (u64::MAX, W)],
        128..=255 => &[(1024, B), (262144, L), (u64::MAX, W)],
        256..=511 => &[(1024, B), (32768, L), (u64::MAX, W)],
        512..=1023 => &[(512, B), (262144, L), (u64::MAX, W)],
        1024..=2047 => &[(512, B), (u64::MAX, L)],
        2048..=4095 => &[(1024, B), (u64::MAX, L)],
        _ => &[(2048, B), (u64::MAX, L)],
    };
    table.iter().find(|(ub, _)| block < *ub).map(|x| x.1).unwrap_or(L)
}

/// Open MPI 4's allreduce algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OmpiAllreduce {
    /// Reduce to rank 0, then broadcast ("basic linear", "nonoverlapping").
    ReduceBcast,
    /// Recursive doubling.
    Rdb,
    /// Ring reduce-scatter and allgather.
    Ring,
    /// The segmented ring (recursive doubling below one element per rank).
    SegmentedRing,
    /// Rabenseifner's reduce-scatter and allgather.
    Rabenseifner,
}

/// Open MPI 4's fixed decision for a commutative allreduce of `bytes` on `p` ranks
/// (`allreduce__ompi`).
pub fn ompi_allreduce(p: usize, bytes: u64) -> OmpiAllreduce {
    use OmpiAllreduce::{Rabenseifner as Rab, Rdb, ReduceBcast as Rb, Ring, SegmentedRing as Seg};
    let table: &[(u64, OmpiAllreduce)] = match p {
        0..=3 => &[
            (8, Ring),
            (4096, Rdb),
            (8192, Ring),
            (16384, Rdb),
            (65536, Ring),
            (262144, Seg),
            (u64::MAX, Rab),
        ],
        4..=7 => &[(16, Ring), (8192, Rdb), (u64::MAX, Rab)],
        8..=15 => &[(8192, Rdb), (u64::MAX, Rab)],
        16..=31 => &[(64, Seg), (4096, Rdb), (u64::MAX, Rab)],
        32..=63 => &[(128, Seg), (u64::MAX, Rab)],
        64..=127 => &[(262144, Rdb), (u64::MAX, Rab)],
        128..=255 => &[(131072, Rb), (262144, Rdb), (u64::MAX, Rab)],
        256..=511 => &[(4096, Rb), (u64::MAX, Rab)],
        512..=2047 => &[(2048, Rb), (16384, Rdb), (u64::MAX, Rab)],
        2048..=4095 => &[(2048, Rb), (4096, Seg), (16384, Rdb), (u64::MAX, Rab)],
        _ => &[(2048, Rb), (16384, Seg), (32768, Rdb), (u64::MAX, Rab)],
    };
    table.iter().find(|(ub, _)| bytes < *ub).map(|x| x.1).unwrap_or(Rab)
}

/// The element size an allreduce of `bytes` most likely has (the trace keeps bytes only).
fn element_size(bytes: u64) -> u64 {
    match bytes {
        0 => 1,
        b if b % 8 == 0 => 8,
        b if b % 4 == 0 => 4,
        _ => 1,
    }
}

/// Open MPI's k-ary tree rooted at `root` (`ompi_coll_tuned_topo_build_tree`): rank `me`'s
/// parent (none for the root) and children.
pub fn ompi_tree(fanout: usize, p: usize, root: usize, me: usize) -> (Option<usize>, Vec<usize>) {
    let shifted = (me + p - root) % p;
    let pown = |l: u32| fanout.pow(l);
    // The level of the node: the first level whose cumulated count passes it.
    let (mut level, mut num) = (0u32, 0usize);
    while num <= shifted {
        num += pown(level);
        level += 1;
    }
    let level = level - 1;
    let delta = pown(level);
    let mut children = Vec::new();
    for i in 0..fanout {
        let child = shifted + delta * (i + 1);
        if child >= p {
            break;
        }
        children.push((child + root) % p);
    }
    if shifted == 0 {
        return (None, children);
    }
    let limit = (pown(level) - 1) / (fanout - 1);
    let mut parent = shifted;
    if parent < fanout {
        parent = 0;
    } else {
        while parent >= limit {
            parent -= delta / fanout;
        }
    }
    (Some((parent + root) % p), children)
}

/// The steps of one rank's part in a collective call.
pub fn schedule(c: &CollCall) -> (Vec<CollStep>, usize) {
    let mut b = Builder { steps: Vec::new(), reqs: 0 };
    let (me, p, root) = (c.me, c.size.max(1), c.root);
    let per = |total: u64| if p > 0 { total / p as u64 } else { 0 };
    let count = |v: Option<&[u64]>, i: usize, fallback: u64| {
        v.and_then(|v| v.get(i).copied()).unwrap_or(fallback)
    };
    if p > 1 {
        let ompi = c.selector == Selector::Ompi;
        match c.op {
            Op::Barrier | Op::Ibarrier if ompi => match p {
                0..=3 => b.barrier_rdb(me, p),
                4..=7 => b.barrier(me, p),
                8..=63 => b.barrier_rdb(me, p),
                _ => b.barrier_bruck(me, p),
            },
            Op::Barrier | Op::Ibarrier => b.barrier(me, p),
            Op::Bcast | Op::Ibcast => b.bcast(me, p, root, c.send_bytes.max(c.recv_bytes)),
            Op::Reduce | Op::Ireduce if ompi => b.reduce_ompi(me, p, root, c.send_bytes),
            Op::Reduce | Op::Ireduce => b.reduce(me, p, root, c.send_bytes),
            Op::Allreduce | Op::Iallreduce => {
                let elem = element_size(c.send_bytes);
                b.allreduce(me, p, c.send_bytes / elem, elem, c.selector);
            }
            Op::Alltoall | Op::Ialltoall => b.alltoall(me, p, per(c.send_bytes)),
            Op::Alltoallv | Op::Ialltoallv | Op::Alltoallw | Op::Ialltoallw => {
                let fallback = per(c.send_bytes);
                b.all_pairs(me, p, TAG_ALLTOALLV, |i| count(c.send_counts, i, fallback))
            }
            Op::Allgather | Op::Iallgather | Op::Allgatherv | Op::Iallgatherv => {
                b.all_pairs(me, p, TAG_ALLGATHER, |_| c.send_bytes)
            }
            Op::Gather | Op::Igather | Op::Gatherv | Op::Igatherv => {
                if me != root {
                    b.send(root, TAG_GATHER, c.send_bytes);
                } else {
                    let rs: Vec<usize> =
                        (0..p).filter(|&i| i != root).map(|i| b.irecv(i, TAG_GATHER)).collect();
                    b.wait(rs);
                }
            }
            Op::Scatter | Op::Iscatter | Op::Scatterv | Op::Iscatterv => {
                let fallback = per(c.send_bytes);
                b.scatter(me, p, root, |i| count(c.send_counts, i, fallback))
            }
            Op::Scan | Op::Iscan | Op::Exscan | Op::Iexscan => {
                let mut reqs: Vec<usize> = (0..me).map(|i| b.irecv(i, TAG_SCAN)).collect();
                for i in me + 1..p {
                    reqs.push(b.isend(i, TAG_SCAN, c.send_bytes));
                }
                b.wait(reqs);
            }
            Op::ReduceScatter
            | Op::IreduceScatter
            | Op::ReduceScatterBlock
            | Op::IreduceScatterBlock => {
                b.reduce(me, p, 0, c.send_bytes);
                let fallback = per(c.send_bytes);
                b.scatter(me, p, 0, |i| count(c.recv_counts, i, fallback));
            }
            _ => {}
        }
    }
    (b.steps, b.reqs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: Op, me: usize, size: usize, bytes: u64) -> CollCall<'static> {
        CollCall {
            op,
            me,
            size,
            root: 0,
            send_bytes: bytes,
            recv_bytes: bytes,
            send_counts: None,
            recv_counts: None,
            selector: Selector::Default,
        }
    }

    fn peers(steps: &[CollStep]) -> Vec<String> {
        steps
            .iter()
            .map(|s| match s {
                CollStep::Send { to, bytes, .. } => format!("s{to}:{bytes}"),
                CollStep::Recv { from, .. } => format!("r{from}"),
                CollStep::Wait(r) => format!("w{}", r.len()),
            })
            .collect()
    }

    #[test]
    fn a_binomial_broadcast_receives_from_its_parent_then_sends_to_its_children() {
        let (s, _) = schedule(&call(Op::Bcast, 4, 16, 8));
        assert_eq!(peers(&s), ["r0", "w1", "s6:8", "w1", "s5:8", "w1"]);
        let (s, _) = schedule(&call(Op::Bcast, 0, 16, 8));
        assert_eq!(peers(&s), ["s8:8", "w1", "s4:8", "w1", "s2:8", "w1", "s1:8", "w1"]);
    }

    #[test]
    fn alltoall_picks_bruck_linear_or_ring_by_block_size() {
        // 16 ranks of 4-byte blocks: Bruck, 4 rounds of 8 blocks.
        let (s, _) = schedule(&call(Op::Alltoall, 3, 16, 64));
        assert_eq!(peers(&s).iter().filter(|x| x.starts_with('s')).count(), 4);
        assert_eq!(peers(&s)[0], "s4:32");
        // 8 ranks of 1 KB: linear, 7 receives and 7 sends, one wait.
        let (s, n) = schedule(&call(Op::Alltoall, 0, 8, 8 * 1024));
        assert_eq!((s.len(), n), (15, 14));
        // 16 ranks of 32 KB: linear too; at 256 KB on 64 ranks, pairwise (rank xor i).
        assert_eq!(alltoall_algorithm(16, 32768), Alltoall::Linear);
        let (s, _) = schedule(&call(Op::Alltoall, 5, 64, 64 * 262144));
        let p = peers(&s);
        assert_eq!(p.iter().filter(|x| x.starts_with('w')).count(), 63);
        assert_eq!(&p[..3], ["s4:262144", "r4", "w2"]);
    }

    #[test]
    fn open_mpi_trees_and_allreduces_follow_its_decision() {
        // Open MPI's binary tree on 8 ranks rooted at 0: 0 → 1, 2; 1 → 3, 5; 2 → 4, 6; 3 → 7.
        assert_eq!(ompi_tree(2, 8, 0, 0), (None, vec![1, 2]));
        assert_eq!(ompi_tree(2, 8, 0, 1), (Some(0), vec![3, 5]));
        assert_eq!(ompi_tree(2, 8, 0, 3), (Some(1), vec![7]));
        assert_eq!(ompi_tree(2, 8, 0, 6), (Some(2), vec![]));
        // Rooted elsewhere, the same shape shifted.
        assert_eq!(ompi_tree(2, 8, 5, 5), (None, vec![6, 7]));
        assert_eq!(ompi_allreduce(16, 8), OmpiAllreduce::SegmentedRing);
        assert_eq!(ompi_allreduce(16, 4116), OmpiAllreduce::Rabenseifner);
        assert_eq!(ompi_allreduce(8, 40), OmpiAllreduce::Rdb);
        let mut c = call(Op::Allreduce, 3, 16, 8);
        c.selector = Selector::Ompi;
        // One double on 16 ranks: recursive doubling, four exchanges.
        let (s, _) = schedule(&c);
        assert_eq!(
            peers(&s),
            ["s2:8", "r2", "w2", "s1:8", "r1", "w2", "s7:8", "r7", "w2", "s11:8", "r11", "w2"]
        );
        let mut b = call(Op::Barrier, 5, 9, 0);
        b.selector = Selector::Ompi;
        // Nine ranks: rank 5 pairs with 4, 7 and 1 (rank 8 folds into rank 0 first).
        let (s, _) = schedule(&b);
        let sends: Vec<String> = peers(&s).into_iter().filter(|x| x.starts_with('s')).collect();
        assert_eq!(sends, ["s4:0", "s7:0", "s1:0"]);
    }

    #[test]
    fn allreduce_is_a_linear_reduce_to_zero_then_a_broadcast() {
        let (s, _) = schedule(&call(Op::Allreduce, 0, 4, 8));
        assert_eq!(peers(&s), ["r1", "r2", "r3", "w3", "s2:8", "w1", "s1:8", "w1"]);
        let (s, _) = schedule(&call(Op::Allreduce, 3, 4, 8));
        assert_eq!(peers(&s), ["s0:8", "w1", "r2", "w1"]);
        assert!(schedule(&call(Op::Allreduce, 0, 1, 8)).0.is_empty());
    }
}
