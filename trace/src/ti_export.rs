//! Writing any trace as a SimGrid time-independent trace (Casanova et al. 2015), so that
//! SimGrid can replay it (`smpirun … -replay trace.txt`) on any platform it models.
//!
//! One action file per rank (`rank<r>.txt`, lines `<r> <action> <arguments…>` in the syntax
//! SimGrid 3.32 writes and [`crate::ti`] reads) and an index `trace.txt` naming them. Sizes
//! are written in bytes (datatype 6, `MPI_BYTE`); the computation before each call becomes a
//! `compute` action of its recorded flops, or of its time at a given flop rate; `MPI_Sendrecv`
//! becomes the `isend`, `irecv` and two `wait`s it stands for (SimGrid 3.32's replayer does not
//! know the `sendrecv` it writes); a request's
//! completion becomes one `wait <src> <dst> <tag>` per request it completed, in the order MPI
//! reported them (a `Waitany` or `Test` that completed nothing writes nothing). What the format
//! cannot say is refused, naming the rank and call: collectives on a communicator that does not
//! hold every rank in world order (the format has no communicators; a duplicate of the world
//! or a Cartesian grid over it is the world to it), non-blocking collectives, `MPI_Alltoallw`,
//! and receives whose source no completion revealed. Calls to or from `MPI_PROC_NULL` do nothing and are
//! left out.
//!
//! # Complexity
//! Linear in the events.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Result, TraceError};
use crate::model::{CommId, Event, Op, OpClass, Payload, Peer, Rank, RankTrace, RequestId, Work};

/// SimGrid's datatype id of `MPI_BYTE`.
const BYTE: u32 = 6;

/// Writes `ranks` (as read from `source`) into the folder `dir` as a SimGrid time-independent
/// trace, computation at `flops_per_second` where the trace recorded no flops; returns the index
/// file's path. Files are written under temporary names and renamed once all are complete.
pub fn write_ti(
    source: &Path,
    ranks: &[RankTrace],
    dir: &Path,
    flops_per_second: f64,
) -> Result<PathBuf> {
    let texts = ranks
        .iter()
        .map(|t| actions(source, t, ranks.len() as u32, flops_per_second))
        .collect::<Result<Vec<String>>>()?;
    std::fs::create_dir_all(dir).map_err(|e| TraceError::io(dir, e))?;
    let mut index = String::new();
    let mut written = Vec::new();
    for (t, text) in ranks.iter().zip(&texts) {
        let name = format!("rank{}.txt", t.rank);
        let part = dir.join(format!(".{name}.part"));
        std::fs::write(&part, text).map_err(|e| TraceError::io(&part, e))?;
        written.push((part, dir.join(&name)));
        let _ = writeln!(index, "{name}");
    }
    let part = dir.join(".trace.txt.part");
    std::fs::write(&part, index).map_err(|e| TraceError::io(&part, e))?;
    written.push((part, dir.join("trace.txt")));
    for (from, to) in &written {
        std::fs::rename(from, to).map_err(|e| TraceError::io(to, e))?;
    }
    Ok(dir.join("trace.txt"))
}

/// One rank's action lines.
fn actions(source: &Path, t: &RankTrace, n_ranks: u32, flops_per_second: f64) -> Result<String> {
    let r = t.rank;
    let mut out = String::new();
    // Requests still open: id → (source, destination, tag) of their wait line.
    let mut open: HashMap<RequestId, (Rank, Rank, i32)> = HashMap::new();
    let mut first = true;
    for (k, e) in t.events.iter().enumerate() {
        let refuse = |reason: &str| TraceError::Invalid {
            path: source.to_path_buf(),
            rank: r,
            event: Some(k as u64),
            reason: format!(
                "{} cannot be written as a SimGrid time-independent trace: {reason}",
                e.op
            ),
        };
        let flops = match e.gap_work {
            Some(Work::Flops(f)) => f,
            _ => e.gap_ns as f64 * 1e-9 * flops_per_second,
        };
        if flops >= 1.0 && !first {
            let _ = writeln!(out, "{r} compute {}", flops.round());
        }
        let lines = lines(e, t, n_ranks, &mut open).map_err(refuse)?;
        if lines.is_empty() {
            continue;
        }
        if first && e.op != Op::Init {
            // A trace that starts without Init: SimGrid's replayer needs one first.
            let _ = writeln!(out, "{r} init");
        }
        for l in &lines {
            let _ = writeln!(out, "{r} {l}");
        }
        if first {
            let _ = writeln!(out, "{r} comm_size {n_ranks}");
            first = false;
        }
    }
    if first {
        let _ = writeln!(out, "{r} init\n{r} comm_size {n_ranks}");
    }
    if t.events.last().is_none_or(|e| e.op != Op::Finalize) {
        let _ = writeln!(out, "{r} finalize");
    }
    Ok(out)
}

/// The action lines of one call (none for calls that write nothing), or why it cannot be
/// written. `n` is the size of `MPI_COMM_WORLD`, the only communicator of collectives here.
fn lines(
    e: &Event,
    t: &RankTrace,
    n: u32,
    open: &mut HashMap<RequestId, (Rank, Rank, i32)>,
) -> std::result::Result<Vec<String>, &'static str> {
    const ANY: &str = "a receive from MPI_ANY_SOURCE whose source no completion revealed";
    let me = t.rank;
    let n64 = u64::from(n.max(1));
    let line = match (&e.op, &e.payload) {
        (Op::Init | Op::InitThread, _) => "init".to_owned(),
        (Op::Finalize, _) => "finalize".to_owned(),
        (Op::Probe | Op::Iprobe, _) => return Ok(Vec::new()),
        (op, Payload::P2p { peer, tag, bytes, request, .. }) => {
            let p = match peer {
                Peer::Rank(p) => *p,
                Peer::Null => return Ok(Vec::new()),
                Peer::Any => return Err(ANY),
            };
            let recv = op.class() == OpClass::Recv;
            let name = match (recv, request.is_some()) {
                (false, false) => "send",
                (false, true) => "isend",
                (true, false) => "recv",
                (true, true) => "irecv",
            };
            if let Some(q) = request {
                let (src, dst) = if recv { (p, me) } else { (me, p) };
                open.insert(*q, (src, dst, *tag));
            }
            format!("{name} {p} {tag} {bytes} {BYTE}")
        }
        (_, Payload::Completion { completed, .. }) => {
            return Ok(completed
                .iter()
                .filter_map(|c| open.remove(&c.request?))
                .map(|(s, d, tag)| format!("wait {s} {d} {tag}"))
                .collect());
        }
        // SimGrid 3.32 writes `sendrecv` but its replayer does not know it: the send and the
        // receive run as MPI_Sendrecv runs them, started together and both waited for.
        (_, Payload::SendRecv { dest, send_tag, send_bytes, source, recv_tag, recv_bytes, .. }) => {
            let mut v = Vec::new();
            let mut waits = Vec::new();
            if let Peer::Rank(d) = dest {
                v.push(format!("isend {d} {send_tag} {send_bytes} {BYTE}"));
                waits.push(format!("wait {me} {d} {send_tag}"));
            }
            match source {
                Peer::Rank(s) => {
                    v.push(format!("irecv {s} {recv_tag} {recv_bytes} {BYTE}"));
                    waits.push(format!("wait {s} {me} {recv_tag}"));
                }
                Peer::Null => {}
                Peer::Any => return Err(ANY),
            }
            v.extend(waits);
            return Ok(v);
        }
        (
            op,
            Payload::Collective {
                comm,
                root,
                send_bytes: s,
                recv_bytes: v,
                send_counts,
                recv_counts,
                request,
            },
        ) => {
            if request.is_some() {
                return Err("the format has no non-blocking collectives");
            }
            // A communicator of every rank in world order (a duplicate, a Cartesian grid
            // without reordering) is MPI_COMM_WORLD to the replay.
            let whole = t.members(*comm).is_some_and(|m| {
                m.len() == n as usize && m.iter().enumerate().all(|(i, r)| r.0 as usize == i)
            });
            if *comm != CommId::WORLD && !whole {
                return Err("the format has collectives on all ranks (MPI_COMM_WORLD) only");
            }
            let root = root.map_or(0, |r| r.0);
            let is_root = root == me.0;
            let list = |v: &Option<crate::model::Counts>| -> String {
                let zeros = vec![0; n as usize];
                let v: &[u64] = v.as_deref().unwrap_or(&zeros);
                v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
            };
            match op {
                Op::Barrier => "barrier".to_owned(),
                Op::Bcast => format!("bcast {s} {root} {BYTE}"),
                Op::Reduce => format!("reduce {s} 0 {root} {BYTE}"),
                Op::Allreduce => format!("allreduce {s} 0 {BYTE}"),
                Op::Scan => format!("scan {s} 0 {BYTE}"),
                Op::Exscan => format!("exscan {s} 0 {BYTE}"),
                // Counts per member: the format multiplies them by the communicator's size.
                Op::Alltoall => format!("alltoall {} {} {BYTE} {BYTE}", s / n64, v / n64),
                Op::Allgather => format!("allgather {s} {} {BYTE} {BYTE}", v / n64),
                Op::Gather => {
                    let per = if is_root { v / n64 } else { *s };
                    format!("gather {s} {per} {root} {BYTE} {BYTE}")
                }
                Op::Scatter => {
                    let per = if is_root { s / n64 } else { *v };
                    format!("scatter {per} {v} {root} {BYTE} {BYTE}")
                }
                Op::Alltoallv => format!(
                    "alltoallv {s} {} {v} {} {BYTE} {BYTE}",
                    list(send_counts),
                    list(recv_counts)
                ),
                Op::Gatherv => format!("gatherv {s} {} {root} {BYTE} {BYTE}", list(recv_counts)),
                Op::Allgatherv => format!("allgatherv {s} {} {BYTE} {BYTE}", list(recv_counts)),
                Op::Scatterv => format!("scatterv {} {v} {root} {BYTE} {BYTE}", list(send_counts)),
                Op::ReduceScatter => format!("reducescatter {} 0 {BYTE}", list(recv_counts)),
                _ => return Err("the format has no such collective"),
            }
        }
        // Communicator calls: the format has none; point-to-point calls on any communicator
        // name world ranks, as here.
        _ => return Ok(Vec::new()),
    };
    Ok(vec![line])
}
