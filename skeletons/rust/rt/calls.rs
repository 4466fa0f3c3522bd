//! The requests of non-blocking calls and their buffers, and the MPI calls that a skeleton makes
//! through more than one call of the `mpi` crate.

use bumpalo::Bump;
use mpi::collective::SystemOperation;
use mpi::request::{LocalScope, Request, StaticScope};
use mpi::topology::{CartesianCommunicator, Rank};
use mpi::traits::*;


/// The receive buffer of the blocking calls: doubles, seen as bytes too (as the C skeleton's
/// one `rbuf` serves both), so that the skeleton touches as much memory as the C one.
#[derive(Debug)]
pub struct Buffers {
    data: Vec<f64>,
}

impl Buffers {
    /// A buffer of at least `bytes` bytes, written now, as the C skeleton's memset does: zeroed
    /// memory would only be mapped at its first use, inside a timed phase.
    pub fn new(bytes: usize) -> Buffers {
        Buffers { data: vec![1.0; bytes.div_ceil(8)] }
    }

    /// The buffer's bytes.
    pub fn recv(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.data)
    }

    /// The buffer's doubles.
    pub fn reals(&mut self) -> &mut [f64] {
        &mut self.data
    }

    /// The buffer's four-byte words.
    pub fn words(&mut self) -> &mut [u32] {
        bytemuck::cast_slice_mut(&mut self.data)
    }
}

/// Where non-blocking calls get their receive buffers. Each request slot has a buffer of its
/// own, kept from scope to scope, that a receive in that slot uses the first time the slot is
/// started within a scope; later starts of the slot in the same scope (and collectives) take a
/// fresh buffer from a bump arena, all released together ([`reset`]) once the scope has ended.
#[derive(Debug)]
pub struct Pool {
    bump: Bump,
    slots: Vec<Vec<u8>>,
}

impl Pool {
    /// A pool whose slot `k` has a buffer of `slot_bytes[k]` bytes (written now, outside any
    /// timed phase).
    pub fn new(slot_bytes: &[usize]) -> Pool {
        Pool { bump: Bump::new(), slots: slot_bytes.iter().map(|&n| vec![1; n]).collect() }
    }
}

/// Gives the pool's arena one chunk of `bytes` bytes, written once, so that the scope using it
/// neither allocates nor maps fresh pages while it is timed.
pub fn reserve(pool: &mut Pool, bytes: usize) {
    pool.bump = Bump::with_capacity(bytes);
    pool.bump.alloc_slice_fill_copy(bytes, 1u8);
    pool.bump.reset();
}

/// Empties the pool for the next scope, keeping its memory: a pool that needed several chunks
/// is replaced by one chunk as large, so that a loop's scopes stop allocating (and faulting in
/// fresh pages) after the first iteration.
pub fn reset(pool: &mut Pool) {
    let used = pool.bump.allocated_bytes();
    pool.bump.reset();
    if pool.bump.allocated_bytes() < used {
        pool.bump = Bump::with_capacity(used);
    }
}

/// A started non-blocking call.
#[derive(Debug)]
pub enum Pending<'p, 's> {
    /// On bytes (point-to-point, broadcasts, gathers …).
    Bytes(Request<'p, [u8], &'s LocalScope<'p>>),
    /// On doubles (reductions).
    Reals(Request<'p, [f64], &'s LocalScope<'p>>),
    /// On four-byte words (reductions).
    Words(Request<'p, [u32], &'s LocalScope<'p>>),
    /// A barrier.
    Barrier(Request<'static, (), StaticScope>),
}

impl<'p, 's> From<Request<'p, [u8], &'s LocalScope<'p>>> for Pending<'p, 's> {
    fn from(r: Request<'p, [u8], &'s LocalScope<'p>>) -> Self {
        Pending::Bytes(r)
    }
}

impl<'p, 's> From<Request<'p, [f64], &'s LocalScope<'p>>> for Pending<'p, 's> {
    fn from(r: Request<'p, [f64], &'s LocalScope<'p>>) -> Self {
        Pending::Reals(r)
    }
}

impl<'p, 's> From<Request<'p, [u32], &'s LocalScope<'p>>> for Pending<'p, 's> {
    fn from(r: Request<'p, [u32], &'s LocalScope<'p>>) -> Self {
        Pending::Words(r)
    }
}

impl From<Request<'static, ()>> for Pending<'_, '_> {
    fn from(r: Request<'static, ()>) -> Self {
        Pending::Barrier(r)
    }
}

impl Pending<'_, '_> {
    /// Completes the request if it is done; gives it back otherwise.
    fn test(self) -> Result<(), Self> {
        match self {
            Pending::Bytes(r) => r.test().map(drop).map_err(Pending::Bytes),
            Pending::Reals(r) => r.test().map(drop).map_err(Pending::Reals),
            Pending::Words(r) => r.test().map(drop).map_err(Pending::Words),
            Pending::Barrier(r) => r.test().map(drop).map_err(Pending::Barrier),
        }
    }

    fn wait(self) {
        match self {
            Pending::Bytes(r) => r.wait_without_status(),
            Pending::Reals(r) => r.wait_without_status(),
            Pending::Words(r) => r.wait_without_status(),
            Pending::Barrier(r) => r.wait_without_status(),
        }
    }

    /// The raw request, taken out of its scope's count.
    ///
    /// # Safety
    /// The request must be completed (`MPI_Wait…`) before its buffer's lifetime `'p` ends.
    unsafe fn into_raw(self) -> mpi::ffi::MPI_Request {
        match self {
            Pending::Bytes(r) => r.into_raw().0,
            Pending::Reals(r) => r.into_raw().0,
            Pending::Words(r) => r.into_raw().0,
            Pending::Barrier(r) => r.into_raw().0,
        }
    }
}

/// The request slots of one scope: slot `k` holds the request of the `k`-th non-blocking call
/// of the program (as `req[k]` in the C skeleton). An empty slot is `MPI_REQUEST_NULL`.
#[derive(Debug)]
pub struct Requests<'p, 's> {
    scope: &'s LocalScope<'p>,
    pool: &'p Bump,
    /// Each slot's own receive buffer, until a receive in the slot takes it.
    own: Vec<Option<&'p mut [u8]>>,
    slots: Vec<Option<Pending<'p, 's>>>,
}

/// Runs `f` with `n` empty request slots whose receive buffers come from `pool`; every request
/// still pending when `f` returns is waited for. Call [`reset`] afterwards to reuse the pool.
pub fn scoped<'p, R>(pool: &'p mut Pool, n: usize, f: impl for<'s> FnOnce(&mut Requests<'p, 's>) -> R) -> R {
    let Pool { bump, slots } = pool;
    let bump: &'p Bump = bump;
    let own = slots.iter_mut().map(|b| Some(b.as_mut_slice())).collect();
    mpi::request::scope(|scope: &LocalScope<'p>| {
        let mut req = Requests { scope, pool: bump, own, slots: (0..n).map(|_| None).collect() };
        let r = f(&mut req);
        for p in req.slots.drain(..).flatten() {
            p.wait();
        }
        r
    })
}

impl<'p, 's> Requests<'p, 's> {
    /// The scope requests are registered with.
    pub fn scope(&self) -> &'s LocalScope<'p> {
        self.scope
    }

    /// The receive buffer of `n` bytes for a receive in slot `k`: the slot's own the first time
    /// in this scope, a fresh one after.
    pub fn recv_buf(&mut self, k: usize, n: usize) -> &'p mut [u8] {
        match self.own.get_mut(k).and_then(Option::take) {
            Some(b) if b.len() >= n => &mut b[..n],
            _ => self.fresh(n),
        }
    }

    /// A fresh receive buffer of `n` bytes.
    pub fn bytes(&self, n: usize) -> &'p mut [u8] {
        self.fresh(n)
    }

    /// A fresh receive buffer of `n` doubles.
    pub fn reals(&self, n: usize) -> &'p mut [f64] {
        self.fresh(n)
    }

    /// A fresh receive buffer of `n` four-byte words.
    pub fn words(&self, n: usize) -> &'p mut [u32] {
        self.fresh(n)
    }

    /// A fresh receive buffer of `n` elements.
    pub fn fresh<T: Copy + Default>(&self, n: usize) -> &'p mut [T] {
        self.pool.alloc_slice_fill_copy(n, T::default())
    }

    /// Keeps request `r` in slot `k`; a request still pending there is waited for first.
    pub fn put(&mut self, k: usize, r: impl Into<Pending<'p, 's>>) {
        if let Some(old) = self.slots[k].take() {
            old.wait();
        }
        self.slots[k] = Some(r.into());
    }

    /// Waits for the requests in `slots` together, with one `MPI_Waitall` as the C skeleton
    /// does (rsmpi's request collections hold requests on one buffer type only, so the raw
    /// requests are passed to MPI directly).
    pub fn wait(&mut self, slots: &[usize]) {
        let mut raw: Vec<mpi::ffi::MPI_Request> =
            slots.iter().filter_map(|&k| self.slots[k].take())
                // SAFETY: `MPI_Waitall` below completes every request before this returns, while
                // their buffers (borrowed for `'p`) are alive.
                .map(|p| unsafe { p.into_raw() })
                .collect();
        match raw.len() {
            0 => {}
            n => {
                let n = i32::try_from(n).expect("fewer requests than i32::MAX");
                // SAFETY: `raw` holds `n` valid requests; statuses are ignored.
                unsafe {
                    mpi::ffi::MPI_Waitall(n, raw.as_mut_ptr(), mpi::ffi::RSMPI_STATUSES_IGNORE);
                }
            }
        }
    }

    /// Waits for any one of the requests in `slots` (`MPI_Waitany` in the C skeleton; rsmpi's
    /// `wait_any` needs requests on sized buffers, so this tests them in turn until one is done).
    pub fn wait_any(&mut self, slots: &[usize]) {
        while slots.iter().any(|&k| self.slots[k].is_some()) {
            for &k in slots {
                if let Some(p) = self.slots[k].take() {
                    match p.test() {
                        Ok(()) => return,
                        Err(p) => self.slots[k] = Some(p),
                    }
                }
            }
        }
    }

    /// Waits until at least one of the requests in `slots` completes, and collects every one
    /// that has (`MPI_Waitsome`).
    pub fn wait_some(&mut self, slots: &[usize]) {
        self.wait_any(slots);
        for &k in slots {
            if let Some(p) = self.slots[k].take() {
                if let Err(p) = p.test() {
                    self.slots[k] = Some(p);
                }
            }
        }
    }
}

/// `MPI_Reduce` of `send` (sum) onto `root` of `comm`.
pub fn reduce<T: Equivalence>(comm: &impl Communicator, root: Rank, send: &[T], recv: &mut [T]) {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        p.reduce_into_root(send, recv, SystemOperation::sum());
    } else {
        p.reduce_into(send, SystemOperation::sum());
    }
}

/// `MPI_Gather` of `send` to `root` of `comm` (into the first `send.len()` × members bytes of
/// `recv`).
pub fn gather(comm: &impl Communicator, root: Rank, send: &[u8], recv: &mut [u8]) {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        let all = send.len() * comm.size() as usize;
        p.gather_into_root(send, &mut recv[..all]);
    } else {
        p.gather_into(send);
    }
}

/// `MPI_Scatter` of `recv.len()` bytes per member from `root` of `comm` (out of the first
/// `recv.len()` × members bytes of `send`).
pub fn scatter(comm: &impl Communicator, root: Rank, send: &[u8], recv: &mut [u8]) {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        let all = recv.len() * comm.size() as usize;
        p.scatter_into_root(&send[..all], recv);
    } else {
        p.scatter_into(recv);
    }
}

/// `MPI_Allgather` of `send` over `comm`.
pub fn all_gather(comm: &impl Communicator, send: &[u8], recv: &mut [u8]) {
    let n = send.len() * comm.size() as usize;
    comm.all_gather_into(send, &mut recv[..n]);
}

/// `MPI_Alltoall` of `n` bytes per member over `comm`.
pub fn all_to_all(comm: &impl Communicator, n: usize, send: &[u8], recv: &mut [u8]) {
    let all = n * comm.size() as usize;
    comm.all_to_all_into(&send[..all], &mut recv[..all]);
}

/// `MPI_Reduce_scatter_block` (sum) of `n` elements per member over `comm`.
pub fn reduce_scatter_block<T: Equivalence>(comm: &impl Communicator, n: usize, send: &[T], recv: &mut [T]) {
    comm.reduce_scatter_block_into(&send[..n * comm.size() as usize], &mut recv[..n], SystemOperation::sum());
}

/// `MPI_Sendrecv`; a missing side (toward `MPI_PROC_NULL`) leaves the other half alone.
pub fn sendrecv<D: Destination, S: Source>(
    to: Option<D>,
    send: &[u8],
    send_tag: mpi::Tag,
    from: Option<S>,
    recv: &mut [u8],
    recv_tag: mpi::Tag,
) {
    match (to, from) {
        (Some(to), Some(from)) => {
            mpi::point_to_point::send_receive_into_with_tags(send, &to, send_tag, recv, &from, recv_tag);
        }
        (Some(to), None) => to.send_with_tag(send, send_tag),
        (None, Some(from)) => {
            from.receive_into_with_tag(recv, recv_tag);
        }
        (None, None) => {}
    }
}

/// `MPI_Ireduce` of `send` (sum) onto `root` of `comm`, into a fresh buffer on the root.
pub fn ireduce<'p, 's, T>(req: &Requests<'p, 's>, comm: &impl Communicator, root: Rank, send: &'p [T]) -> Pending<'p, 's>
where
    T: Equivalence + Copy + Default,
    Request<'p, [T], &'s LocalScope<'p>>: Into<Pending<'p, 's>>,
{
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        p.immediate_reduce_into_root(req.scope(), send, req.fresh(send.len()), SystemOperation::sum()).into()
    } else {
        p.immediate_reduce_into(req.scope(), send, SystemOperation::sum()).into()
    }
}

/// `MPI_Igather` of `send` to `root` of `comm`.
pub fn igather<'p, 's>(req: &Requests<'p, 's>, comm: &impl Communicator, root: Rank, send: &'p [u8]) -> Pending<'p, 's> {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        let recv = req.bytes(send.len() * comm.size() as usize);
        p.immediate_gather_into_root(req.scope(), send, recv).into()
    } else {
        p.immediate_gather_into(req.scope(), send).into()
    }
}

/// `MPI_Iscatter` of `n` bytes per member from `root` of `comm`.
pub fn iscatter<'p, 's>(
    req: &Requests<'p, 's>,
    comm: &impl Communicator,
    root: Rank,
    send: &'p [u8],
    n: usize,
) -> Pending<'p, 's> {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        p.immediate_scatter_into_root(req.scope(), &send[..n * comm.size() as usize], req.bytes(n)).into()
    } else {
        p.immediate_scatter_into(req.scope(), req.bytes(n)).into()
    }
}

/// `MPI_Iallgather` of `send` over `comm`.
pub fn iall_gather<'p, 's>(req: &Requests<'p, 's>, comm: &impl Communicator, send: &'p [u8]) -> Pending<'p, 's> {
    let recv = req.bytes(send.len() * comm.size() as usize);
    comm.immediate_all_gather_into(req.scope(), send, recv).into()
}

/// `MPI_Ialltoall` of `n` bytes per member over `comm`.
pub fn iall_to_all<'p, 's>(req: &Requests<'p, 's>, comm: &impl Communicator, send: &'p [u8], n: usize) -> Pending<'p, 's> {
    let all = n * comm.size() as usize;
    comm.immediate_all_to_all_into(req.scope(), &send[..all], req.bytes(all)).into()
}

/// `MPI_Ireduce_scatter_block` (sum) of `n` elements per member over `comm`.
pub fn ireduce_scatter_block<'p, 's, T>(
    req: &Requests<'p, 's>,
    comm: &impl Communicator,
    send: &'p [T],
    n: usize,
) -> Pending<'p, 's>
where
    T: Equivalence + Copy + Default,
    Request<'p, [T], &'s LocalScope<'p>>: Into<Pending<'p, 's>>,
{
    let all = n * comm.size() as usize;
    comm.immediate_reduce_scatter_block_into(req.scope(), &send[..all], req.fresh(n), SystemOperation::sum()).into()
}

/// The rank at `offset` from this one in the Cartesian grid (`None` past an open edge).
pub fn cart_neighbour(cart: &CartesianCommunicator, offset: &[i32]) -> Option<Rank> {
    let layout = cart.get_layout();
    let mut coords = layout.coords.clone();
    for (k, c) in coords.iter_mut().enumerate() {
        let mut x = *c + offset[k];
        let d = layout.dims[k];
        if x < 0 || x >= d {
            if !layout.periods[k] {
                return None;
            }
            x = x.rem_euclid(d);
        }
        *c = x;
    }
    Some(cart.coordinates_to_rank(&coords))
}
