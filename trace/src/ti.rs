//! Reader for SimGrid time-independent traces (Casanova et al., Casanova et al. 2015, §3), as SimGrid 3.32
//! writes them with `smpirun -trace-ti` and as its replay examples spell them.
//!
//! A trace is either an *index* file naming one action file per rank (line k is rank k, paths
//! relative to the index), or a single action file holding the lines of several ranks. Each
//! action line is `<rank> <action> <arguments…>`; blank lines are ignored.
//!
//! Time-independent traces record volumes, not times: `compute <flops>` becomes a compute gap of
//! `flops / rate` seconds ([`TiOptions::flops_per_second`]) and keeps its flops as
//! [`Work::Flops`]; MPI calls take no time. Message counts are in elements of the datatype
//! (default 8 bytes). `wait <src> <dst> <tag>` completes the earliest pending request with that
//! source, destination and tag; `waitall` completes all pending requests; `test` completes nothing
//! (the format does not say whether it succeeded), so a later wait completes the request.
//!
//! # Complexity
//! O(total bytes) time; one rank's events in memory at a time per worker thread.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Result, TraceError};
use crate::model::{
    CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, RankTrace, RequestId, Wildcards,
    Work,
};

/// How to turn a time-independent trace into timed events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TiOptions {
    /// Compute speed used to turn flops into seconds (default 1 Gflop/s, the speed the NPB
    /// fixtures were recorded at).
    pub flops_per_second: f64,
}

impl Default for TiOptions {
    fn default() -> Self {
        TiOptions { flops_per_second: 1e9 }
    }
}

/// Whether `first_line` (the first non-blank line of a text file) is an action line rather than
/// an index line.
pub fn is_action_line(first_line: &str) -> bool {
    let mut t = first_line.split_whitespace();
    matches!((t.next(), t.next()), (Some(r), Some(_)) if r.parse::<u32>().is_ok())
}

/// Reads a time-independent trace from an index file or a single multi-rank action file.
pub fn read_ti(path: &Path, opts: &TiOptions) -> Result<Vec<RankTrace>> {
    let text = read_text(path)?;
    let first = text.lines().find(|l| !l.trim().is_empty()).ok_or_else(|| {
        TraceError::NotATrace { path: path.to_path_buf(), reason: "the file is empty".into() }
    })?;
    if is_action_line(first) {
        return read_combined(path, &text, opts);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let files: Vec<PathBuf> =
        text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|l| dir.join(l)).collect();
    let n_ranks = u32::try_from(files.len()).map_err(|_| TraceError::NotATrace {
        path: path.to_path_buf(),
        reason: "too many ranks".into(),
    })?;
    crate::progress::start(u64::from(n_ranks));
    files
        .par_iter()
        .enumerate()
        .map(|(k, file)| {
            let rank = Rank(k as u32);
            let body = read_text(file)?;
            let lines = body.lines().enumerate().map(|(i, l)| (i as u64 + 1, l));
            let t = parse_rank(file, rank, n_ranks, lines, opts);
            crate::progress::rank_read();
            t
        })
        .collect()
}

/// Writes a time-independent trace into `dir`: rank `r`'s action lines `body(r)` (without the
/// leading rank number; `init` and `finalize` are added) into `rank<r>.txt`, and the index
/// `trace.txt` naming them, which it returns. For programs written by hand, as tests do.
pub fn write_actions(
    dir: &Path,
    n_ranks: u32,
    body: impl Fn(u32) -> Vec<String>,
) -> std::io::Result<PathBuf> {
    use std::fmt::Write as _;
    let mut index = String::new();
    for r in 0..n_ranks {
        let mut text = format!("{r} init\n");
        for line in body(r) {
            let _ = writeln!(text, "{r} {line}");
        }
        let _ = writeln!(text, "{r} finalize");
        std::fs::write(dir.join(format!("rank{r}.txt")), text)?;
        let _ = writeln!(index, "rank{r}.txt");
    }
    let path = dir.join("trace.txt");
    std::fs::write(&path, index)?;
    Ok(path)
}

/// A token as an error message quotes it: whole when short, else its first 32 characters and
/// its length, so that a bad token of megabytes does not become a message of megabytes.
fn excerpt(token: &str) -> String {
    const SHOWN: usize = 32;
    match token.char_indices().nth(SHOWN) {
        None => format!("{token:?}"),
        Some((end, _)) => format!("{:?}… ({} bytes)", &token[..end], token.len()),
    }
}

/// A text file's contents; bytes that are not UTF-8 are reported with their line and offset.
fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| TraceError::io(path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        TraceError::TiSyntax {
            path: path.to_path_buf(),
            line,
            rank: None,
            reason: format!("byte {at} (0x{:02x}) is not UTF-8 text", bytes[at]),
        }
    })
}

/// All ranks in one file: lines are grouped by their leading rank.
fn read_combined(path: &Path, text: &str, opts: &TiOptions) -> Result<Vec<RankTrace>> {
    let mut by_rank: BTreeMap<u32, Vec<(u64, &str)>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some(tok) = line.split_whitespace().next() else {
            continue;
        };
        let rank = tok.parse::<u32>().map_err(|_| TraceError::TiSyntax {
            path: path.to_path_buf(),
            line: i as u64 + 1,
            rank: None,
            reason: format!(
                "expected a rank number at the start of the line, found {}",
                excerpt(tok)
            ),
        })?;
        by_rank.entry(rank).or_default().push((i as u64 + 1, line));
    }
    // Ranks are 0..n without gaps: the k-th smallest rank number must be k.
    let n_ranks = by_rank.len() as u32;
    if let Some((missing, last)) = by_rank
        .keys()
        .enumerate()
        .find(|&(k, r)| *r != k as u32)
        .map(|(k, _)| k)
        .zip(by_rank.keys().next_back())
    {
        let reason = if by_rank.len() == 1 {
            format!(
                "holds the actions of rank {last} alone; a run needs every rank: give the index \
                 file that lists each rank's action file"
            )
        } else {
            format!("rank {missing} has no lines (ranks 0 to {last} appear)")
        };
        return Err(TraceError::NotATrace { path: path.to_path_buf(), reason });
    }
    by_rank
        .into_iter()
        .map(|(r, lines)| parse_rank(path, Rank(r), n_ranks, lines.into_iter(), opts))
        .collect()
}

/// Datatype sizes in bytes by SimGrid 3.32 datatype id (`../shared/fixtures/npb/README.md`).
fn datatype_bytes(id: u32) -> Option<u64> {
    Some(match id {
        0 | 4 | 7 | 12 | 13 | 20 | 24 | 25 | 40 | 42 | 48 => 8,
        1 | 5 | 11 | 19 | 23 | 38 | 45 | 47 => 4,
        2 | 6 | 8 | 9 | 17 | 21 => 1,
        3 | 10 | 18 | 22 | 46 => 2,
        14 | 26 | 43 => 16,
        _ => return None,
    })
}

struct Parser<'a> {
    path: &'a Path,
    rank: Rank,
    line: u64,
}

impl Parser<'_> {
    fn err(&self, reason: impl Into<String>) -> TraceError {
        TraceError::TiSyntax {
            path: self.path.to_path_buf(),
            line: self.line,
            rank: Some(self.rank),
            reason: reason.into(),
        }
    }

    fn num(&self, args: &[&str], i: usize, what: &str) -> Result<f64> {
        let s =
            args.get(i).ok_or_else(|| self.err(format!("missing argument {} ({what})", i + 1)))?;
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(self.err(format!(
                "argument {} ({what}) is not a non-negative number: {}",
                i + 1,
                excerpt(s)
            ))),
        }
    }

    fn int(&self, args: &[&str], i: usize, what: &str) -> Result<i64> {
        let s =
            args.get(i).ok_or_else(|| self.err(format!("missing argument {} ({what})", i + 1)))?;
        s.parse::<i64>().map_err(|_| {
            self.err(format!("argument {} ({what}) is not an integer: {}", i + 1, excerpt(s)))
        })
    }

    fn rank_arg(&self, args: &[&str], i: usize, n_ranks: u32, what: &str) -> Result<Rank> {
        let v = self.int(args, i, what)?;
        if v < 0 || v >= i64::from(n_ranks) {
            return Err(self.err(format!("{what} {v} is not a rank of this {n_ranks}-rank trace")));
        }
        Ok(Rank(v as u32))
    }

    /// The datatype size of optional argument `i` (8 bytes when absent).
    fn dtype(&self, args: &[&str], i: usize) -> Result<u64> {
        match args.get(i) {
            None => Ok(8),
            Some(_) => {
                let id = self.int(args, i, "datatype")?;
                u32::try_from(id)
                    .ok()
                    .and_then(datatype_bytes)
                    .ok_or_else(|| self.err(format!("unknown datatype id {id}")))
            }
        }
    }

    fn counts(&self, args: &[&str], from: usize, n: usize, what: &str) -> Result<Vec<f64>> {
        (from..from + n).map(|i| self.num(args, i, what)).collect()
    }
}

fn bytes(count: f64, size: u64) -> u64 {
    (count * size as f64).round() as u64
}

struct Pending {
    id: RequestId,
    src: Rank,
    dst: Rank,
    tag: i32,
    recv_bytes: Option<u64>,
}

fn parse_rank<'l>(
    path: &Path,
    rank: Rank,
    n_ranks: u32,
    lines: impl Iterator<Item = (u64, &'l str)>,
    opts: &TiOptions,
) -> Result<RankTrace> {
    let mut p = Parser { path, rank, line: 0 };
    let mut events: Vec<Event> = Vec::new();
    let mut record_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut now_s = 0.0f64; // simulated time
    let mut gap_s = 0.0f64;
    let mut gap_flops = 0.0f64;
    let mut pending: Vec<Pending> = Vec::new();
    let mut next_req = 1u32;
    let mut comm_size = n_ranks as usize;
    let ns = |s: f64| (s * 1e9).round() as u64;
    // One vector of tokens for every line (no allocation per line).
    let mut toks: Vec<&str> = Vec::with_capacity(16);

    for (line_no, line) in lines {
        p.line = line_no;
        toks.clear();
        toks.extend(line.split_ascii_whitespace());
        if toks.is_empty() {
            continue;
        }
        if toks.len() < 2 {
            return Err(p.err(format!("expected `<rank> <action> …`, found {}", excerpt(line))));
        }
        match toks[0].parse::<u32>() {
            Ok(r) if r == rank.0 => {}
            _ => {
                return Err(
                    p.err(format!("line belongs to rank {}, not rank {rank}", excerpt(toks[0])))
                )
            }
        }
        let action = toks[1];
        let a = &toks[2..];
        match record_counts.get_mut(action) {
            Some(n) => *n += 1,
            None => {
                record_counts.insert(action.to_owned(), 1);
            }
        }
        let (op, payload) = match action {
            "compute" => {
                let f = p.num(a, 0, "flops")?;
                gap_s += f / opts.flops_per_second;
                gap_flops += f;
                continue;
            }
            "sleep" => {
                gap_s += p.num(a, 0, "seconds")?;
                continue;
            }
            "comm_size" => {
                comm_size = p.int(a, 0, "size")?.clamp(1, 1 << 24) as usize;
                continue;
            }
            // Communicator actions carry no membership in this format; counted, not modelled.
            "comm_split" | "comm_dup" => continue,
            "init" => (Op::Init, Payload::None),
            "finalize" => (Op::Finalize, Payload::None),
            "send" | "isend" | "recv" | "irecv" | "wait" | "test" | "waitall" | "sendrecv" => {
                point_to_point_action(&p, action, a, (rank, n_ranks), &mut pending, &mut next_req)?
            }
            other => match collective_action(&p, other, a, rank, n_ranks, comm_size)? {
                Some(call) => call,
                None => return Err(p.err(format!("unknown action {}", excerpt(other)))),
            },
        };
        now_s += gap_s;
        let t = ns(now_s);
        let gap_ns = ns(gap_s);
        let gap_work = (gap_flops > 0.0).then_some(Work::Flops(gap_flops));
        events.push(Event {
            op,
            enter_ns: t,
            exit_ns: t,
            gap_ns,
            gap_work,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        });
        gap_s = 0.0;
        gap_flops = 0.0;
    }
    // The vector grew by doubling: give back what it holds beyond its events before the next
    // rank is read (a third of a large trace's memory otherwise).
    events.shrink_to_fit();
    Ok(RankTrace {
        rank,
        info: RankInfo { n_ranks, clock: "simulated".into(), ..RankInfo::default() },
        events,
        trailing_gap_ns: ns(gap_s),
        comms: [
            (CommId::WORLD, crate::model::world_members(n_ranks)),
            (CommId::SELF, Arc::from([rank])),
        ]
        .into_iter()
        .collect(),
        record_counts,
        unrecorded: Default::default(),
    })
}

/// The operation and payload of the point-to-point or completion `action` (its arguments `a`)
/// of `rank` in a run of `n_ranks`: a non-blocking call's request pushed on `pending` (numbered
/// from `next_req`), a completion's taken from it.
fn point_to_point_action(
    p: &Parser<'_>,
    action: &str,
    a: &[&str],
    (rank, n_ranks): (Rank, u32),
    pending: &mut Vec<Pending>,
    next_req: &mut u32,
) -> Result<(Op, Payload)> {
    Ok(match action {
        "send" | "isend" | "recv" | "irecv" => {
            let partner = p.rank_arg(a, 0, n_ranks, "partner")?;
            // Modern form: partner tag count [datatype]; old form: partner count.
            let (tag, count, dt) = if a.len() >= 3 {
                (p.int(a, 1, "tag")?, p.num(a, 2, "count")?, p.dtype(a, 3)?)
            } else {
                (0, p.num(a, 1, "count")?, 8)
            };
            let tag = i32::try_from(tag).map_err(|_| p.err(format!("tag {tag} out of range")))?;
            let b = bytes(count, dt);
            let nonblocking = action.starts_with('i');
            let request = nonblocking.then(|| {
                let id = RequestId(*next_req);
                *next_req += 1;
                let is_recv = action.ends_with("recv");
                let (src, dst) = if is_recv { (partner, rank) } else { (rank, partner) };
                pending.push(Pending { id, src, dst, tag, recv_bytes: is_recv.then_some(b) });
                id
            });
            let op = match action {
                "send" => Op::Send,
                "isend" => Op::Isend,
                "recv" => Op::Recv,
                _ => Op::Irecv,
            };
            (
                op,
                Payload::P2p {
                    peer: Peer::Rank(partner),
                    tag,
                    bytes: b,
                    comm: CommId::WORLD,
                    request,
                    wildcards: Wildcards::default(),
                },
            )
        }
        "wait" | "test" => {
            let idx = if a.is_empty() {
                (!pending.is_empty()).then_some(0)
            } else {
                let src = p.rank_arg(a, 0, n_ranks, "source")?;
                let dst = p.rank_arg(a, 1, n_ranks, "destination")?;
                let tag = p.int(a, 2, "tag")?;
                pending.iter().position(|q| q.src == src && q.dst == dst && i64::from(q.tag) == tag)
            };
            if action == "test" {
                // A test may or may not have completed its request; the format does not say.
                // The request stays pending: a later wait completes it.
                (
                    Op::Test,
                    Payload::Completion {
                        n_given: u32::from(idx.is_some()),
                        completed: Vec::new(),
                    },
                )
            } else {
                let idx = idx.ok_or_else(|| p.err("wait matches no pending isend/irecv"))?;
                let q = pending.remove(idx);
                (Op::Wait, Payload::Completion { n_given: 1, completed: vec![completed(&q)] })
            }
        }
        "waitall" => {
            let done: Vec<Completed> = pending.drain(..).map(|q| completed(&q)).collect();
            (Op::Waitall, Payload::Completion { n_given: done.len() as u32, completed: done })
        }
        "sendrecv" => {
            let sc = p.num(a, 0, "send count")?;
            let dst = p.rank_arg(a, 1, n_ranks, "destination")?;
            let rc = p.num(a, 2, "receive count")?;
            let src = p.rank_arg(a, 3, n_ranks, "source")?;
            let (sdt, rdt) = (p.dtype(a, 4)?, p.dtype(a, 5)?);
            (
                Op::Sendrecv,
                Payload::SendRecv {
                    dest: Peer::Rank(dst),
                    send_tag: 0,
                    send_bytes: bytes(sc, sdt),
                    source: Peer::Rank(src),
                    recv_tag: 0,
                    recv_bytes: bytes(rc, rdt),
                    comm: CommId::WORLD,
                },
            )
        }
        other => return Err(p.err(format!("unknown action {}", excerpt(other)))),
    })
}

/// The operation and payload of the collective `action` (its arguments `a`) of `rank` in a run
/// of `n_ranks` whose communicator has `comm_size` ranks; `None` for an action that is no
/// collective this reader knows.
fn collective_action(
    p: &Parser<'_>,
    action: &str,
    a: &[&str],
    rank: Rank,
    n_ranks: u32,
    comm_size: usize,
) -> Result<Option<(Op, Payload)>> {
    Ok(Some(match action {
        "barrier" => (Op::Barrier, coll(None, 0, 0)),
        "bcast" => {
            let c = p.num(a, 0, "count")?;
            let root = opt_rank(p, a, 1, n_ranks)?;
            let b = bytes(c, p.dtype(a, 2)?);
            (Op::Bcast, coll(Some(root), b, b))
        }
        "reduce" => {
            let c = p.num(a, 0, "count")?;
            p.num(a, 1, "flops")?;
            let root = opt_rank(p, a, 2, n_ranks)?;
            let b = bytes(c, p.dtype(a, 3)?);
            (Op::Reduce, coll(Some(root), b, if root == rank { b } else { 0 }))
        }
        "allreduce" | "scan" | "exscan" => {
            let c = p.num(a, 0, "count")?;
            p.num(a, 1, "flops")?;
            let b = bytes(c, p.dtype(a, 2)?);
            let op = match action {
                "allreduce" => Op::Allreduce,
                "scan" => Op::Scan,
                _ => Op::Exscan,
            };
            (op, coll(None, b, b))
        }
        "alltoall" | "allgather" => {
            let (sc, rc) = (p.num(a, 0, "send count")?, p.num(a, 1, "receive count")?);
            let (sdt, rdt) = (p.dtype(a, 2)?, p.dtype(a, 3)?);
            let n = comm_size as f64;
            let op = if action == "alltoall" { Op::Alltoall } else { Op::Allgather };
            let send = if op == Op::Alltoall { bytes(sc * n, sdt) } else { bytes(sc, sdt) };
            (op, coll(None, send, bytes(rc * n, rdt)))
        }
        "gather" | "scatter" => {
            let (sc, rc) = (p.num(a, 0, "send count")?, p.num(a, 1, "receive count")?);
            let root = opt_rank(p, a, 2, n_ranks)?;
            let (sdt, rdt) = (p.dtype(a, 3)?, p.dtype(a, 4)?);
            let n = comm_size as f64;
            let is_root = root == rank;
            if action == "gather" {
                let recv = if is_root { bytes(rc * n, rdt) } else { 0 };
                (Op::Gather, coll(Some(root), bytes(sc, sdt), recv))
            } else {
                let send = if is_root { bytes(sc * n, sdt) } else { 0 };
                (Op::Scatter, coll(Some(root), send, bytes(rc, rdt)))
            }
        }
        "alltoallv" => {
            let n = comm_size;
            p.num(a, 0, "send buffer size")?;
            let sc = p.counts(a, 1, n, "send count")?;
            p.num(a, 1 + n, "receive buffer size")?;
            let rc = p.counts(a, 2 + n, n, "receive count")?;
            let (sdt, rdt) = (p.dtype(a, 2 + 2 * n)?, p.dtype(a, 3 + 2 * n)?);
            (Op::Alltoallv, vcoll(None, Some((&sc, sdt)), Some((&rc, rdt))))
        }
        "gatherv" | "allgatherv" => {
            let n = comm_size;
            let sc = p.num(a, 0, "send count")?;
            let rc = p.counts(a, 1, n, "receive count")?;
            let (root, dts) = if action == "gatherv" {
                (Some(opt_rank(p, a, 1 + n, n_ranks)?), 2 + n)
            } else {
                (None, 1 + n)
            };
            let (sdt, rdt) = (p.dtype(a, dts)?, p.dtype(a, dts + 1)?);
            let receives = root.is_none_or(|r| r == rank);
            let mut payload = vcoll(root, None, receives.then_some((&rc, rdt)));
            if let Payload::Collective { send_bytes, .. } = &mut payload {
                *send_bytes = bytes(sc, sdt);
            }
            (if root.is_some() { Op::Gatherv } else { Op::Allgatherv }, payload)
        }
        "scatterv" => {
            let n = comm_size;
            let sc = p.counts(a, 0, n, "send count")?;
            let rc = p.num(a, n, "receive count")?;
            let root = opt_rank(p, a, n + 1, n_ranks)?;
            let (sdt, rdt) = (p.dtype(a, n + 2)?, p.dtype(a, n + 3)?);
            let mut payload = vcoll(Some(root), (root == rank).then_some((&sc, sdt)), None);
            if let Payload::Collective { recv_bytes, .. } = &mut payload {
                *recv_bytes = bytes(rc, rdt);
            }
            (Op::Scatterv, payload)
        }
        "reducescatter" => {
            let n = comm_size;
            let rc = p.counts(a, 0, n, "receive count")?;
            p.num(a, n, "flops")?;
            let dt = p.dtype(a, n + 1)?;
            let total: f64 = rc.iter().sum();
            let mine = rc.get(rank.0 as usize).copied().unwrap_or(0.0);
            let mut payload = vcoll(None, None, Some((&rc, dt)));
            if let Payload::Collective { send_bytes, recv_bytes, .. } = &mut payload {
                *send_bytes = bytes(total, dt);
                *recv_bytes = bytes(mine, dt);
            }
            (Op::ReduceScatter, payload)
        }
        _ => return Ok(None),
    }))
}

/// A collective on `MPI_COMM_WORLD` of these sizes.
fn coll(root: Option<Rank>, send: u64, recv: u64) -> Payload {
    Payload::Collective {
        comm: CommId::WORLD,
        root,
        send_bytes: send,
        recv_bytes: recv,
        send_counts: None,
        recv_counts: None,
        request: None,
    }
}

fn completed(q: &Pending) -> Completed {
    Completed {
        request: Some(q.id),
        source: q.recv_bytes.map(|_| q.src),
        tag: q.recv_bytes.map(|_| q.tag),
        bytes: q.recv_bytes,
    }
}

/// An optional root argument (0 when absent).
fn opt_rank(p: &Parser<'_>, a: &[&str], i: usize, n_ranks: u32) -> Result<Rank> {
    if a.len() > i {
        p.rank_arg(a, i, n_ranks, "root")
    } else {
        Ok(Rank(0))
    }
}

/// A collective with per-rank counts (elements × datatype size).
fn vcoll(root: Option<Rank>, send: Option<(&[f64], u64)>, recv: Option<(&[f64], u64)>) -> Payload {
    let to_bytes = |c: Option<(&[f64], u64)>| {
        c.map(|(c, dt)| c.iter().map(|&x| bytes(x, dt)).collect::<Vec<_>>())
    };
    let send_counts = to_bytes(send);
    let recv_counts = to_bytes(recv);
    Payload::Collective {
        comm: CommId::WORLD,
        root,
        send_bytes: send_counts.iter().flatten().fold(0, |a: u64, b| a.saturating_add(*b)),
        recv_bytes: recv_counts.iter().flatten().fold(0, |a: u64, b| a.saturating_add(*b)),
        send_counts: send_counts.map(Into::into),
        recv_counts: recv_counts.map(Into::into),
        request: None,
    }
}
