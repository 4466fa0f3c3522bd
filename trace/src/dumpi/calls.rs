//! The arguments of one DUMPI record, as sst-dumpi's per-call readers lay them out
//! (`dumpi/common/funcs.c`): 32-bit integers, 16-bit communicator, datatype and group handles,
//! 8-bit operations, arrays as a 32-bit length and their values, statuses as a 32-bit count and
//! per status its size, source, cancelled and error flags and (from version 0.6.3) tag.
//!
//! Every length is checked against the bytes left before anything is allocated for it.
//!
//! # Complexity
//! Linear in the record's bytes.

use super::cursor::{Cursor, Version};
use super::labels::*;
use crate::error::Result;

/// `MPI_COMM_NULL` as DUMPI writes it.
pub const COMM_NULL: u16 = 1;
/// `MPI_COMM_WORLD` as DUMPI writes it.
pub const COMM_WORLD: u16 = 2;
/// `MPI_COMM_SELF` as DUMPI writes it.
pub const COMM_SELF: u16 = 3;
/// `MPI_REQUEST_NULL` as DUMPI writes it.
pub const REQUEST_NULL: u32 = 1;
/// `MPI_ANY_SOURCE` and `MPI_ANY_TAG` as DUMPI writes them.
pub const ANY: i32 = -1;

/// What an `MPI_Status` recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Bytes received.
    pub bytes: i32,
    /// Source, a rank of the call's communicator.
    pub source: i32,
    /// The tag (`None` before version 0.6.3, which did not record it).
    pub tag: Option<i32>,
}

/// How one block of a collective is sized: elements times the datatype's size, in bytes.
pub type Bytes = u64;

/// A call's arguments, with element counts already multiplied by their datatype's size.
#[derive(Debug, Clone, PartialEq)]
pub enum Args {
    /// Init, Finalize: nothing.
    Lifecycle,
    /// A send of any mode; `request` for the non-blocking ones.
    Send { bytes: Bytes, dest: i32, tag: i32, comm: u16, request: Option<u32> },
    /// A receive; `request` for Irecv, `status` for Recv.
    Recv {
        bytes: Bytes,
        source: i32,
        tag: i32,
        comm: u16,
        request: Option<u32>,
        status: Option<Status>,
    },
    /// Sendrecv and Sendrecv_replace.
    SendRecv {
        send: Bytes,
        dest: i32,
        send_tag: i32,
        recv: Bytes,
        source: i32,
        recv_tag: i32,
        comm: u16,
        status: Option<Status>,
    },
    /// Probe (`found` always) and Iprobe.
    Probe { source: i32, tag: i32, comm: u16, found: bool, status: Option<Status> },
    /// Wait*, Test*: the requests given and which of them completed (indices into `given`),
    /// with their statuses where recorded.
    Complete { given: Vec<u32>, done: Vec<(usize, Option<Status>)> },
    /// A collective: one block's bytes on each side (or per-member blocks for the `v`
    /// variants), the root as a rank of the communicator.
    Collective {
        comm: u16,
        root: Option<i32>,
        send: Bytes,
        recv: Bytes,
        send_counts: Option<Vec<Bytes>>,
        recv_counts: Option<Vec<Bytes>>,
    },
    /// Comm_dup.
    CommDup { old: u16, new: u16 },
    /// Comm_split.
    CommSplit { old: u16, color: i32, key: i32, new: u16 },
    /// Comm_create from a group.
    CommCreate { old: u16, group: u16, new: u16 },
    /// Cart_create.
    CartCreate { old: u16, dims: Vec<i32>, periods: Vec<i32>, new: u16 },
    /// Cart_sub.
    CartSub { old: u16, remain: Vec<i32>, new: u16 },
    /// Comm_free.
    CommFree { comm: u16 },
    /// Comm_group.
    CommGroup { comm: u16, group: u16 },
    /// Group_incl (`exclude` false) and Group_excl.
    GroupSelect { group: u16, ranks: Vec<i32>, exclude: bool, new: u16 },
    /// Group_free.
    GroupFree { group: u16 },
    /// A call mpiskel does not model: read past, its time left to the computation around it.
    Other,
}

/// Reads the arguments of a record labelled `label` (its header already read); `mask` is the
/// record's mask (whether statuses were recorded). `None` for a label whose layout this
/// reader does not know.
pub(super) fn read_args(
    c: &mut Cursor<'_>,
    label: u16,
    mask: u8,
    v: Version,
) -> Result<Option<Args>> {
    if let Some(args) = point_to_point_args(c, label, mask, v)? {
        return Ok(Some(args));
    }
    if let Some(args) = collective_args(c, label)? {
        return Ok(Some(args));
    }
    other_args(c, label, mask, v)
}

/// [`read_args`] of the point-to-point calls, probes and completions.
fn point_to_point_args(
    c: &mut Cursor<'_>,
    label: u16,
    mask: u8,
    v: Version,
) -> Result<Option<Args>> {
    let st = |c: &mut Cursor<'_>| statuses(c, mask, v);
    let args = match label {
        SEND | BSEND | SSEND | RSEND | ISEND | IBSEND | ISSEND | IRSEND => {
            let count = c.i32()?;
            let dt = c.u16()?;
            let (dest, tag, comm) = (c.i32()?, c.i32()?, c.u16()?);
            let blocking = matches!(label, SEND | BSEND | SSEND | RSEND);
            let request = if blocking { None } else { Some(c.u32()?) };
            Args::Send { bytes: c.bytes(count, dt)?, dest, tag, comm, request }
        }
        RECV | IRECV => {
            let count = c.i32()?;
            let dt = c.u16()?;
            let (source, tag, comm) = (c.i32()?, c.i32()?, c.u16()?);
            let bytes = c.bytes(count, dt)?;
            if label == RECV {
                let status = st(c)?.into_iter().next();
                Args::Recv { bytes, source, tag, comm, request: None, status }
            } else {
                Args::Recv { bytes, source, tag, comm, request: Some(c.u32()?), status: None }
            }
        }
        SENDRECV => {
            let (count, dt) = (c.i32()?, c.u16()?);
            let (dest, send_tag) = (c.i32()?, c.i32()?);
            let send = c.bytes(count, dt)?;
            let (count, dt) = (c.i32()?, c.u16()?);
            let (source, recv_tag, comm) = (c.i32()?, c.i32()?, c.u16()?);
            let recv = c.bytes(count, dt)?;
            let status = st(c)?.into_iter().next();
            Args::SendRecv { send, dest, send_tag, recv, source, recv_tag, comm, status }
        }
        SENDRECV_REPLACE => {
            let (count, dt) = (c.i32()?, c.u16()?);
            let bytes = c.bytes(count, dt)?;
            let (dest, send_tag, source, recv_tag) = (c.i32()?, c.i32()?, c.i32()?, c.i32()?);
            let comm = c.u16()?;
            let status = st(c)?.into_iter().next();
            Args::SendRecv {
                send: bytes,
                dest,
                send_tag,
                recv: bytes,
                source,
                recv_tag,
                comm,
                status,
            }
        }
        IPROBE | PROBE => {
            let (source, tag, comm) = (c.i32()?, c.i32()?, c.u16()?);
            let found = if label == IPROBE { c.i32()? != 0 } else { true };
            let status = st(c)?.into_iter().next();
            Args::Probe { source, tag, comm, found, status }
        }
        WAIT => {
            let r = c.u32()?;
            let status = st(c)?.into_iter().next();
            Args::Complete { given: vec![r], done: vec![(0, status)] }
        }
        TEST => {
            let r = c.u32()?;
            let flag = c.i32()?;
            let status = st(c)?.into_iter().next();
            let done = if flag != 0 { vec![(0, status)] } else { Vec::new() };
            Args::Complete { given: vec![r], done }
        }
        WAITANY | TESTANY => {
            let _count = c.i32()?;
            let given = c.u32_array()?;
            let index = c.i32()?;
            let flag = if label == TESTANY { c.i32()? != 0 } else { true };
            let status = st(c)?.into_iter().next();
            let done = usize::try_from(index)
                .ok()
                .filter(|&i| flag && i < given.len())
                .map(|i| vec![(i, status)])
                .unwrap_or_default();
            Args::Complete { given, done }
        }
        WAITALL | TESTALL => {
            let _count = c.i32()?;
            let given = c.u32_array()?;
            let flag = if label == TESTALL { c.i32()? != 0 } else { true };
            let statuses = st(c)?;
            let done = if flag {
                (0..given.len()).map(|i| (i, statuses.get(i).copied())).collect()
            } else {
                Vec::new()
            };
            Args::Complete { given, done }
        }
        WAITSOME | TESTSOME => {
            let _count = c.i32()?;
            let given = c.u32_array()?;
            let _outcount = c.i32()?;
            let indices = c.i32_array()?;
            let statuses = st(c)?;
            let done = indices
                .iter()
                .enumerate()
                .filter_map(|(k, &i)| {
                    let i = usize::try_from(i).ok().filter(|&i| i < given.len())?;
                    Some((i, statuses.get(k).copied()))
                })
                .collect();
            Args::Complete { given, done }
        }
        _ => return Ok(None),
    };
    Ok(Some(args))
}

/// [`read_args`] of the collectives.
fn collective_args(c: &mut Cursor<'_>, label: u16) -> Result<Option<Args>> {
    let args = match label {
        BARRIER => Args::Collective {
            comm: c.u16()?,
            root: None,
            send: 0,
            recv: 0,
            send_counts: None,
            recv_counts: None,
        },
        BCAST => {
            let (count, dt, root, comm) = (c.i32()?, c.u16()?, c.i32()?, c.u16()?);
            let b = c.bytes(count, dt)?;
            coll(comm, Some(root), b, b)
        }
        REDUCE => {
            let (count, dt, _op, root, comm) = (c.i32()?, c.u16()?, c.u8()?, c.i32()?, c.u16()?);
            let b = c.bytes(count, dt)?;
            coll(comm, Some(root), b, b)
        }
        ALLREDUCE | SCAN => {
            let (count, dt, _op, comm) = (c.i32()?, c.u16()?, c.u8()?, c.u16()?);
            let b = c.bytes(count, dt)?;
            coll(comm, None, b, b)
        }
        GATHER | SCATTER => {
            // Gather: this rank's rank, its send block, root, comm, and at the root the receive
            // block; Scatter the same with send and receive swapped.
            let me = c.i32()?;
            let (count, dt, root, comm) = (c.i32()?, c.u16()?, c.i32()?, c.u16()?);
            let mine = c.bytes(count, dt)?;
            let other = if me == root {
                let (count, dt) = (c.i32()?, c.u16()?);
                c.bytes(count, dt)?
            } else {
                0
            };
            if label == GATHER {
                coll(comm, Some(root), mine, other)
            } else {
                coll(comm, Some(root), other, mine)
            }
        }
        GATHERV => {
            let (me, _size, count, dt, root, comm) =
                (c.i32()?, c.i32()?, c.i32()?, c.u16()?, c.i32()?, c.u16()?);
            let send = c.bytes(count, dt)?;
            let counts = if me == root {
                let counts = c.i32_array()?;
                let _displs = c.i32_array()?;
                Some(counts)
            } else {
                None
            };
            let rdt = c.u16()?;
            let recv_counts = counts.map(|v| c.all_bytes(&v, rdt)).transpose()?;
            Args::Collective {
                comm,
                root: Some(root),
                send,
                recv: 0,
                send_counts: None,
                recv_counts,
            }
        }
        SCATTERV => {
            let (me, _size, sdt, count, rdt, root, comm) =
                (c.i32()?, c.i32()?, c.u16()?, c.i32()?, c.u16()?, c.i32()?, c.u16()?);
            let recv = c.bytes(count, rdt)?;
            let send_counts = if me == root {
                let counts = c.i32_array()?;
                let _displs = c.i32_array()?;
                Some(c.all_bytes(&counts, sdt)?)
            } else {
                None
            };
            Args::Collective {
                comm,
                root: Some(root),
                send: 0,
                recv,
                send_counts,
                recv_counts: None,
            }
        }
        ALLGATHER | ALLTOALL => {
            let (sc, sdt, rc, rdt, comm) = (c.i32()?, c.u16()?, c.i32()?, c.u16()?, c.u16()?);
            coll(comm, None, c.bytes(sc, sdt)?, c.bytes(rc, rdt)?)
        }
        ALLGATHERV => {
            let (_size, sc, sdt) = (c.i32()?, c.i32()?, c.u16()?);
            let counts = c.i32_array()?;
            let _displs = c.i32_array()?;
            let (rdt, comm) = (c.u16()?, c.u16()?);
            let send = c.bytes(sc, sdt)?;
            let recv_counts = Some(c.all_bytes(&counts, rdt)?);
            Args::Collective { comm, root: None, send, recv: 0, send_counts: None, recv_counts }
        }
        ALLTOALLV => {
            let _size = c.i32()?;
            let sc = c.i32_array()?;
            let _sd = c.i32_array()?;
            let sdt = c.u16()?;
            let rc = c.i32_array()?;
            let _rd = c.i32_array()?;
            let (rdt, comm) = (c.u16()?, c.u16()?);
            let send_counts = Some(c.all_bytes(&sc, sdt)?);
            let recv_counts = Some(c.all_bytes(&rc, rdt)?);
            Args::Collective { comm, root: None, send: 0, recv: 0, send_counts, recv_counts }
        }
        REDUCE_SCATTER => {
            let _size = c.i32()?;
            let counts = c.i32_array()?;
            let (dt, _op, comm) = (c.u16()?, c.u8()?, c.u16()?);
            let v = c.all_bytes(&counts, dt)?;
            let total = v.iter().fold(0u64, |a, &b| a.saturating_add(b));
            Args::Collective {
                comm,
                root: None,
                send: total,
                recv: 0,
                send_counts: None,
                recv_counts: Some(v),
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(args))
}

/// [`read_args`] of the communicator, group, topology, datatype and other calls.
fn other_args(c: &mut Cursor<'_>, label: u16, mask: u8, v: Version) -> Result<Option<Args>> {
    let st = |c: &mut Cursor<'_>| statuses(c, mask, v);
    let args = match label {
        COMM_DUP => Args::CommDup { old: c.u16()?, new: c.u16()? },
        COMM_CREATE => Args::CommCreate { old: c.u16()?, group: c.u16()?, new: c.u16()? },
        COMM_SPLIT => {
            Args::CommSplit { old: c.u16()?, color: c.i32()?, key: c.i32()?, new: c.u16()? }
        }
        COMM_FREE => Args::CommFree { comm: c.u16()? },
        COMM_GROUP => Args::CommGroup { comm: c.u16()?, group: c.u16()? },
        GROUP_INCL | GROUP_EXCL => {
            let group = c.u16()?;
            let _count = c.i32()?;
            let ranks = c.i32_array()?;
            Args::GroupSelect { group, ranks, exclude: label == GROUP_EXCL, new: c.u16()? }
        }
        GROUP_FREE => Args::GroupFree { group: c.u16()? },
        CART_CREATE => {
            let (old, _ndim) = (c.u16()?, c.i32()?);
            let dims = c.i32_array()?;
            let periods = c.i32_array()?;
            let _reorder = c.i32()?;
            Args::CartCreate { old, dims, periods, new: c.u16()? }
        }
        CART_SUB => {
            let (_ndim, old) = (c.i32()?, c.u16()?);
            let remain = c.i32_array()?;
            Args::CartSub { old, remain, new: c.u16()? }
        }
        INIT => {
            let argc = c.i32()?;
            if !v.at_least(0, 6, 2) {
                c.i32()?;
            }
            for _ in 0..argc.max(0) {
                c.skip_array(1)?;
            }
            Args::Lifecycle
        }
        FINALIZE => Args::Lifecycle,
        // Calls read past, by the size of what follows their header.
        WTIME | WTICK => Args::Other,
        BUFFER_ATTACH | BUFFER_DETACH | ADDRESS | INITIALIZED => skip(c, 4)?,
        KEYVAL_CREATE | KEYVAL_FREE | ERRHANDLER_CREATE | ERRHANDLER_FREE => skip(c, 2)?,
        REQUEST_FREE | CANCEL => {
            c.skip(4)?;
            Args::Other
        }
        GET_COUNT | GET_ELEMENTS => {
            st(c)?;
            c.skip(2 + 4)?;
            Args::Other
        }
        TEST_CANCELLED => {
            st(c)?;
            c.skip(4)?;
            Args::Other
        }
        TYPE_CONTIGUOUS => skip(c, 4 + 2 + 2)?,
        TYPE_VECTOR | TYPE_HVECTOR => skip(c, 4 * 3 + 2 + 2)?,
        TYPE_INDEXED | TYPE_HINDEXED => {
            c.skip(4)?;
            c.skip_array(4)?;
            c.skip_array(4)?;
            skip(c, 2 + 2)?
        }
        TYPE_STRUCT => {
            c.skip(4)?;
            c.skip_array(4)?;
            if v.at_least(0, 6, 9) {
                c.skip_array(4)?;
            } else {
                c.skip(4)?;
            }
            c.skip_array(2)?;
            skip(c, 2)?
        }
        TYPE_EXTENT | TYPE_SIZE | TYPE_LB | TYPE_UB => skip(c, 2 + 4)?,
        TYPE_COMMIT | TYPE_FREE => skip(c, 2)?,
        PACK | UNPACK => skip(c, 4 * 4 + 2 + 2)?,
        PACK_SIZE => skip(c, 4 + 2 + 2 + 4)?,
        OP_CREATE => skip(c, 4 + 1)?,
        OP_FREE => skip(c, 1)?,
        GROUP_SIZE | GROUP_RANK => skip(c, 2 + 4)?,
        GROUP_TRANSLATE_RANKS => {
            c.skip(2 + 4)?;
            c.skip_array(4)?;
            c.skip(2)?;
            c.skip_array(4)?;
            Args::Other
        }
        GROUP_COMPARE | COMM_COMPARE => skip(c, 2 + 2 + 1)?,
        GROUP_UNION | GROUP_INTERSECTION | GROUP_DIFFERENCE => skip(c, 2 * 3)?,
        COMM_SIZE | COMM_RANK | COMM_TEST_INTER => skip(c, 2 + 4)?,
        TOPO_TEST => skip(c, 2 + 1)?,
        DIMS_CREATE => {
            c.skip(4 + 4)?;
            c.skip_array(4)?;
            c.skip_array(4)?;
            Args::Other
        }
        CARTDIM_GET => skip(c, 2 + 4)?,
        CART_GET => {
            c.skip(4 + 2 + 4)?;
            c.skip_array(4)?;
            c.skip_array(4)?;
            if v.at_least(0, 6, 8) {
                c.skip_array(4)?;
            } else {
                c.skip(4)?;
            }
            Args::Other
        }
        CART_RANK => {
            c.skip(4 + 2)?;
            c.skip_array(4)?;
            skip(c, 4)?
        }
        CART_COORDS => {
            c.skip(4 + 2 + 4 + 4)?;
            c.skip_array(4)?;
            Args::Other
        }
        CART_SHIFT => skip(c, 2 + 4 * 4)?,
        GET_PROCESSOR_NAME => {
            c.skip_array(1)?;
            skip(c, 4)?
        }
        GET_VERSION | ERROR_CLASS => skip(c, 4 + 4)?,
        ERROR_STRING => {
            c.skip(4)?;
            c.skip_array(1)?;
            skip(c, 4)?
        }
        ABORT => skip(c, 2 + 4)?,
        ATTR_PUT | ATTR_DELETE => skip(c, 2 + 4)?,
        ATTR_GET => skip(c, 2 + 4 + 4)?,
        ERRHANDLER_SET | ERRHANDLER_GET => skip(c, 2 + 2)?,
        FUNCTION_ENTER | FUNCTION_EXIT => skip(c, 8)?,
        _ => return Ok(None),
    };
    Ok(Some(args))
}

fn skip(c: &mut Cursor<'_>, n: usize) -> Result<Args> {
    c.skip(n)?;
    Ok(Args::Other)
}

fn coll(comm: u16, root: Option<i32>, send: Bytes, recv: Bytes) -> Args {
    Args::Collective { comm, root, send, recv, send_counts: None, recv_counts: None }
}

/// The statuses of a record, if its mask says they were recorded.
fn statuses(c: &mut Cursor<'_>, mask: u8, v: Version) -> Result<Vec<Status>> {
    if mask & 0b11 == 0 {
        return Ok(Vec::new());
    }
    let with_tag = v.at_least(0, 6, 3);
    let n = c.length(if with_tag { 14 } else { 10 })?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let (bytes, source) = (c.i32()?, c.i32()?);
        let (_cancelled, _error) = (c.u8()?, c.u8()?);
        let tag = if with_tag { Some(c.i32()?) } else { None };
        out.push(Status { bytes, source, tag });
    }
    Ok(out)
}
