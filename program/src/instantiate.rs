//! Instantiation: every rank's skeleton program as the deadlock checker sees it — loops at the
//! counts the skeleton runs, neighbours resolved, request slots tracked.
//!
//! The program is checked exactly as it will run (every iteration it makes), which is stronger
//! than cutting loops to two iterations and affordable because a skeleton is short. Waits keep
//! only the requests still pending (a request to `MPI_PROC_NULL` or one already completed is
//! `MPI_REQUEST_NULL`); `MPI_Waitany`/`Waitsome` are taken to complete the lowest pending
//! request of their set (a possible execution: the real call returns no later); a
//! `MPI_Sendrecv` is a send and a receive started together and waited for. A buffered send
//! (`MPI_Bsend`, see [`mpiskel_cut::pipeline::make`]) is a send that returns at once and whose
//! message must still be received before the program ends (the runtime detaches its buffer
//! before `MPI_Finalize`, which waits for every buffered message to leave).
//!
//! # Complexity
//! O(ranks × calls each runs).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::deadlock::{CheckOp, Slot};
use crate::{largest_send, Call, Comm, Layout, Peer, Skeleton, SlotRef, Stmt};
use mpiskel_compress::When;
use mpiskel_trace::Op;

/// Coordinates of `rank` in a row-major grid of `dims`.
pub fn coords(rank: u32, dims: &[usize]) -> Vec<usize> {
    let mut c = vec![0; dims.len()];
    let mut rest = rank as usize;
    for k in (0..dims.len()).rev() {
        c[k] = rest % dims[k];
        rest /= dims[k];
    }
    c
}

/// The world rank in direction `d` of `rank`.
pub fn resolve(skel: &Skeleton, rank: u32, d: usize) -> Option<u32> {
    match &skel.layout {
        Layout::Cartesian { dims, periods } => {
            let mut c = coords(rank, dims);
            let off = &skel.directions[d].offset;
            if off.is_empty() {
                return Some(rank);
            }
            for k in 0..dims.len() {
                let o = off.get(k).copied().unwrap_or(0);
                let n = dims[k] as i64;
                let x = c[k] as i64 + o;
                if !(0..n).contains(&x) && !periods[k] {
                    return None;
                }
                c[k] = x.rem_euclid(n) as usize;
            }
            Some(c.iter().zip(dims).fold(0usize, |a, (x, n)| a * n + x) as u32)
        }
        Layout::Table { neighbours } => {
            let v = *neighbours.get(rank as usize)?.get(d)?;
            (v >= 0).then_some(v as u32)
        }
        Layout::None => Some(rank),
    }
}

/// The colour of rank `r` among groups of `size` ranks spaced `stride` apart.
pub fn strided_color(r: u32, size: u32, stride: u32) -> u32 {
    mpiskel_logicalize::strided_colour(r, size, stride)
}

/// Every communicator's groups, each made once for all ranks when first needed: per rank, the
/// id of its group and the group's members, shared by every member.
///
/// # Complexity
/// O(ranks) per communicator used (ranks hashed by their group), against O(ranks) per rank and
/// call when each rank lists its own group.
#[derive(Debug)]
struct Groups {
    per_comm: Vec<std::cell::OnceCell<Vec<Group>>>,
}

/// A group of a communicator: its id and its members.
type Group = (u32, Arc<[u32]>);

impl Groups {
    fn new(skel: &Skeleton) -> Groups {
        Groups { per_comm: (0..skel.comms.len()).map(|_| std::cell::OnceCell::new()).collect() }
    }

    /// The group of communicator `comm` that `rank` belongs to: (id, members), as [`members`].
    fn of(&self, skel: &Skeleton, comm: usize, rank: u32) -> Group {
        let table = self.per_comm[comm].get_or_init(|| groups_of(skel, comm));
        table[rank as usize].clone()
    }
}

/// Every rank's (group id, members) in communicator `comm`: the members' list is shared by the
/// group's ranks; ids are 0 for `MPI_COMM_WORLD`, else unique among all communicators' groups.
pub fn groups_of(skel: &Skeleton, comm: usize) -> Vec<(u32, Arc<[u32]>)> {
    let n = skel.n_ranks;
    // The key of each rank's group: members share it.
    let key = |r: u32| -> Vec<usize> {
        match &skel.comms[comm] {
            Comm::World => Vec::new(),
            Comm::SelfComm => vec![r as usize],
            Comm::Slice { free } => {
                let c = &skel.grid_coords[r as usize];
                (0..c.len()).filter(|k| !free.contains(k)).map(|k| c[k]).collect()
            }
            Comm::Strided { size, stride } => {
                vec![strided_color(r, *size as u32, *stride as u32) as usize]
            }
            Comm::Groups { colours, .. } => vec![colours[r as usize] as usize],
        }
    };
    let mut by_key: HashMap<Vec<usize>, Vec<u32>> = HashMap::new();
    let keys: Vec<Vec<usize>> = (0..n).map(key).collect();
    for (r, k) in keys.iter().enumerate() {
        by_key.entry(k.clone()).or_default().push(r as u32);
    }
    let shared: HashMap<Vec<usize>, Group> = by_key
        .into_iter()
        .map(|(k, m)| {
            let id = match &skel.comms[comm] {
                Comm::World => 0,
                _ => (comm as u32) * n + m[0],
            };
            (k, (id, Arc::from(m)))
        })
        .collect();
    keys.iter().map(|k| shared[k].clone()).collect()
}

/// The members of communicator `comm` that `rank` belongs to, and an id unique to that group.
pub fn members(skel: &Skeleton, comm: usize, rank: u32) -> (u32, Vec<u32>) {
    let n = skel.n_ranks;
    let id = |first: u32| (comm as u32) * n + first;
    match &skel.comms[comm] {
        Comm::World => (0, (0..n).collect()),
        Comm::SelfComm => (id(rank), vec![rank]),
        Comm::Slice { free } => {
            let g = &skel.grid_coords;
            let mine = &g[rank as usize];
            let m: Vec<u32> = (0..n)
                .filter(|&r| {
                    let c = &g[r as usize];
                    (0..mine.len()).all(|k| free.contains(&k) || c[k] == mine[k])
                })
                .collect();
            (id(m[0]), m)
        }
        Comm::Strided { size, stride } => {
            let color = |r: u32| strided_color(r, *size as u32, *stride as u32);
            let c = color(rank);
            let m: Vec<u32> = (0..n).filter(|&r| color(r) == c).collect();
            (id(m[0]), m)
        }
        Comm::Groups { colours, .. } => {
            let c = colours[rank as usize];
            let m: Vec<u32> = (0..n).filter(|&r| colours[r as usize] == c).collect();
            (id(m[0]), m)
        }
    }
}

struct Rank<'a> {
    skel: &'a Skeleton,
    groups: &'a Groups,
    rank: u32,
    pending: BTreeSet<u32>,
    out: Vec<CheckOp>,
    reused: BTreeSet<u32>,
    /// Pending slots of non-blocking collectives on MPI_COMM_SELF (complete where they start).
    collective: BTreeSet<u32>,
    /// Per operation of `out`: the call it came from (its address in the skeleton; 0 for waits
    /// the runtime adds).
    origin: Vec<usize>,
    /// Slots of the buffered sends made, each its own.
    buffered: Vec<Slot>,
    /// Bytes and messages of the buffered sends made.
    buffer: (u64, u64),
}

const SENDRECV_SEND: Slot = Slot::MAX - 2;
/// First slot of the buffered sends (a rank's own request slots are numbered from 0).
const BUFFERED: Slot = 1 << 31;
const SENDRECV_RECV: Slot = Slot::MAX - 1;

impl Rank<'_> {
    fn peer(&self, p: &Peer) -> Option<Option<u32>> {
        // Some(None): any source; None: MPI_PROC_NULL.
        match p {
            Peer::Dir(d) => resolve(self.skel, self.rank, *d).map(Some),
            Peer::Only { dir, table } => self.skel.presence_tables[*table][self.rank as usize]
                .then(|| resolve(self.skel, self.rank, *dir))
                .flatten()
                .map(Some),
            Peer::Null => None,
            Peer::Any => Some(None),
            Peer::Rank(r) => Some(Some(*r)),
        }
    }

    /// Starts a request in `slot`; one still pending there is completed first (as the
    /// emitted code does for the slots this finds).
    fn start(&mut self, slot: u32) {
        if !self.pending.insert(slot) {
            self.reused.insert(slot);
            self.out.push(CheckOp::Wait { slots: vec![slot] });
        }
    }

    /// A buffered send (`MPI_Bsend`, `MPI_Ibsend`): a send into a slot of its own that nobody
    /// waits for, its bytes counted in the buffer the skeleton attaches.
    fn buffered_send(&mut self, to: u32, tag: i32, bytes: u64) {
        let s = BUFFERED + self.buffered.len() as Slot;
        self.buffered.push(s);
        self.buffer.0 += bytes;
        self.buffer.1 += 1;
        // Buffered by definition, whatever its size: sent as the smallest.
        self.out.push(CheckOp::Isend { to, tag, slot: s, bytes: 0 });
    }

    fn call(&mut self, c: &Call, iters: &[(u64, u64)]) {
        let slot_of = |r: &SlotRef| {
            r.base + if r.ring > 1 { iters.get(r.depth).map_or(0, |x| x.0 as u32) } else { 0 }
        };
        match c {
            Call::Send { op, to, tag, slot, .. } => {
                let Some(Some(to)) = self.peer(to) else { return };
                let bytes = largest_send(c, &self.skel.size_tables);
                match slot {
                    // `MPI_Ibsend`: complete once started, whatever its receive does; the wait
                    // the skeleton makes for its request returns at once.
                    Some(_) if *op == Op::Bsend => self.buffered_send(to, *tag, bytes),
                    Some(s) => {
                        let s = slot_of(s);
                        self.start(s);
                        self.out.push(if *op == Op::Issend {
                            CheckOp::Issend { to, tag: *tag, slot: s }
                        } else {
                            CheckOp::Isend { to, tag: *tag, slot: s, bytes }
                        });
                    }
                    None if *op == Op::Bsend => self.buffered_send(to, *tag, bytes),
                    None if *op == Op::Ssend => self.out.push(CheckOp::Ssend { to, tag: *tag }),
                    None => self.out.push(CheckOp::Send { to, tag: *tag, bytes }),
                }
            }
            Call::Recv { from, tag, slot, .. } => {
                let Some(from) = self.peer(from) else { return };
                match slot {
                    Some(s) => {
                        let s = slot_of(s);
                        self.start(s);
                        self.out.push(CheckOp::Irecv { from, tag: *tag, slot: s });
                    }
                    None => self.out.push(CheckOp::Recv { from, tag: *tag }),
                }
            }
            Call::SendRecv { to, tag, from, recv_tag, .. } => {
                let mut slots = Vec::new();
                if let Some(Some(to)) = self.peer(to) {
                    let bytes = largest_send(c, &self.skel.size_tables);
                    self.out.push(CheckOp::Isend { to, tag: *tag, slot: SENDRECV_SEND, bytes });
                    slots.push(SENDRECV_SEND);
                }
                if let Some(from) = self.peer(from) {
                    self.out.push(CheckOp::Irecv { from, tag: *recv_tag, slot: SENDRECV_RECV });
                    slots.push(SENDRECV_RECV);
                }
                if !slots.is_empty() {
                    self.out.push(CheckOp::Wait { slots });
                }
            }
            Call::Probe { .. } => {}
            Call::Complete { how, slots, .. } => {
                let open: Vec<u32> =
                    slots.iter().copied().filter(|s| self.pending.contains(s)).collect();
                let done = how.completes(open);
                for s in &done {
                    self.pending.remove(s);
                }
                // Collectives completed where they started.
                let done: Vec<u32> =
                    done.into_iter().filter(|s| !self.collective.remove(s)).collect();
                if !done.is_empty() {
                    self.out.push(CheckOp::Wait { slots: done });
                }
            }
            Call::Collective { op, comm, slot, root, .. } => {
                let self_comm = matches!(self.skel.comms[*comm], Comm::SelfComm);
                let slot = slot.map(|s| slot_of(&s));
                if let Some(s) = slot {
                    // A restarted slot is waited for first. A non-blocking collective's wait
                    // blocks until every member has started it (on MPI_COMM_SELF: never).
                    if !self.pending.insert(s) {
                        self.reused.insert(s);
                    }
                    if self_comm {
                        self.collective.insert(s);
                    }
                }
                if self_comm {
                    return;
                }
                let (id, members) = self.groups.of(self.skel, *comm, self.rank);
                // The root is part of what the members must agree on: a rooted collective whose
                // members name different roots is erroneous in MPI and hangs in practice (a
                // mutated trace's broadcast whose root one rank changed).
                let name = match root {
                    Some(r) => format!("{} (root {r})", op.name()),
                    None => op.name().into(),
                };
                self.out.push(match slot {
                    Some(slot) => CheckOp::Icollective { comm: id, members, name, slot },
                    None => CheckOp::Collective { comm: id, members, name },
                });
            }
        }
    }

    /// Runs `body`; `iters` holds (iteration, count) of the enclosing loops by depth.
    fn run(&mut self, body: &[Stmt], iters: &mut Vec<(u64, u64)>) {
        for s in body {
            match s {
                Stmt::Compute { .. } => {}
                Stmt::Call { call, .. } => {
                    let before = self.out.len();
                    self.call(call, iters);
                    // Waits for a reused slot come first and are the runtime's.
                    let at = call as *const Call as usize;
                    for (i, op) in self.out[before..].iter().enumerate() {
                        let own = i > 0 || !matches!(op, CheckOp::Wait { .. });
                        self.origin.push(if own { at } else { 0 });
                    }
                }
                Stmt::Loop { count, body, .. } => {
                    for i in 0..*count {
                        iters.push((i, *count));
                        self.run(body, iters);
                        iters.pop();
                    }
                }
                // Run by the phase, which knows each step's kind.
                Stmt::Steps { .. } => {}
                Stmt::Guard { when, body, .. } => {
                    let &(i, n) = iters.last().expect("a guard is inside a loop");
                    let runs = match when {
                        When::First => i == 0,
                        When::Last => i + 1 == n,
                    };
                    if runs {
                        self.run(body, iters);
                    }
                }
            }
        }
    }
}

/// Every rank's program as the checker sees it, and the request slots some rank starts again
/// while a request is still pending there (the emitted code waits for it first).
pub fn instantiate(skel: &Skeleton) -> (Vec<Vec<CheckOp>>, BTreeSet<u32>) {
    let i = instantiate_traced(skel);
    (i.programs, i.reused)
}

/// Every rank's program as the checker sees it, with where each operation came from.
#[derive(Debug)]
pub struct Instantiated {
    /// Every rank's operations.
    pub programs: Vec<Vec<CheckOp>>,
    /// Request slots some rank starts again while a request is still pending there.
    pub reused: BTreeSet<u32>,
    /// Per rank and operation: the address of the [`Call`] in the skeleton it came from (0 for
    /// waits the runtime adds). Valid while the skeleton is not moved or changed.
    pub origins: Vec<Vec<usize>>,
    /// The most any rank sends buffered (`MPI_Bsend`) in one run: (bytes, messages).
    pub buffer: (u64, u64),
    /// Per rank: the position of the first operation of each of its class's phases, and last
    /// where its phases end (the waits the runtime adds follow).
    pub phase_starts: Vec<Vec<usize>>,
}

impl Instantiated {
    /// The index, among its class's phases, of the phase that the operation at `position` of
    /// `rank`'s program belongs to (the number of phases for the waits the runtime adds after
    /// them). O(log phases).
    pub fn phase_of(&self, rank: u32, position: usize) -> usize {
        let starts = &self.phase_starts[rank as usize];
        starts.partition_point(|&s| s <= position).saturating_sub(1)
    }
}

/// [`instantiate`], keeping where each operation came from.
pub fn instantiate_traced(skel: &Skeleton) -> Instantiated {
    let mut reused = BTreeSet::new();
    let mut origins = Vec::with_capacity(skel.n_ranks as usize);
    let mut buffer = (0u64, 0u64);
    let mut phase_starts = Vec::with_capacity(skel.n_ranks as usize);
    let groups = Groups::new(skel);
    let programs = (0..skel.n_ranks)
        .map(|rank| {
            let class = &skel.classes[skel.class_of_rank[rank as usize] as usize];
            let mut r = Rank {
                skel,
                groups: &groups,
                rank,
                pending: BTreeSet::new(),
                out: Vec::new(),
                reused: BTreeSet::new(),
                collective: BTreeSet::new(),
                origin: Vec::new(),
                buffered: Vec::new(),
                buffer: (0, 0),
            };
            let mut starts = Vec::with_capacity(class.phases.len() + 1);
            for p in &class.phases {
                starts.push(r.out.len());
                let mut iters = Vec::new();
                if let (Some(kinds), [Stmt::Steps { cases }]) = (p.kinds_run(), p.body.as_slice()) {
                    for (i, k) in kinds.iter().enumerate() {
                        iters.push((i as u64, kinds.len() as u64));
                        r.run(&cases[*k as usize].body, &mut iters);
                        iters.pop();
                    }
                } else if p.is_loop {
                    for i in 0..p.run {
                        iters.push((i, p.run));
                        r.run(&p.body, &mut iters);
                        iters.pop();
                    }
                } else {
                    r.run(&p.body, &mut iters);
                }
            }
            starts.push(r.out.len());
            phase_starts.push(starts);
            // The runtime completes whatever is still pending before it reports, and its
            // buffered messages leave before it ends.
            let rest: Vec<u32> = r.pending.iter().chain(&r.buffered).copied().collect();
            if !rest.is_empty() {
                r.out.push(CheckOp::Wait { slots: rest });
                r.origin.push(0);
            }
            reused.extend(r.reused);
            buffer = (buffer.0.max(r.buffer.0), buffer.1.max(r.buffer.1));
            origins.push(r.origin);
            r.out
        })
        .collect();
    Instantiated { programs, reused, origins, buffer, phase_starts }
}
