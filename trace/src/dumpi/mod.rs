//! SST DUMPI traces (the MPI tracer of Sandia's SST; Janssen et al. 2010): a `<prefix>.meta`
//! text file and one binary `<prefix>-NNNN.bin` per rank, read from the layout sst-dumpi's
//! libundumpi defines (`dumpi/common/io.c`, `iodefs.h`, `funcs.c`). Fields are big-endian; the
//! last 64 bytes of a rank file index its parts (datatype sizes, counter labels, header, body,
//! footer); the body is a sequence of records, each a 16-bit call label (`labels.rs`), a mask
//! of what the record holds (statuses, thread, processor and wall times as 16-bit seconds past
//! an offset and 32-bit nanoseconds, hardware counters), then the call's arguments
//! (`calls.rs`).
//!
//! DUMPI writes handles as the run numbered them; this reader turns them into mpiskel's model:
//! communicators (2 world, 3 self, user ones from 4, reused after a free) and requests
//! (reused by the application) become per-rank ids that are never reused; peers and roots, given
//! as ranks of their communicator, become world ranks; counts times the sizes of their
//! datatypes (from the file's own table) become bytes. Communicators made by `MPI_Comm_dup`,
//! `MPI_Comm_split`, `MPI_Comm_create` (with groups from `MPI_Comm_group`, `MPI_Group_incl`
//! and `MPI_Group_excl`), `MPI_Cart_create` and `MPI_Cart_sub` get their members from every
//! rank's records together (`comms.rs`).
//!
//! Calls mpiskel does not model but DUMPI records (`MPI_Comm_rank`, `MPI_Type_*`, …) are read
//! past, their time left to the computation around them. A record holds no length it could be
//! skipped by, so a call whose layout this reader does not know stops the read with an error
//! naming the call, the file, the rank and the byte.
//!
//! # Complexity
//! Linear in the bytes of the rank files, which are read in parallel; communicators in
//! O(ranks × communicator-making calls).

mod calls;
mod comms;
mod cursor;
mod labels;
mod raw;

use cursor::Cursor;
pub use cursor::Version;
use raw::{RawRank, Record};

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Result, TraceError};
use crate::model::{
    world_members, CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, RankTrace,
    RequestId, Wildcards,
};
use calls::{Args, Status, ANY, COMM_NULL, REQUEST_NULL};

/// The first eight bytes of a DUMPI rank file (and of its index record).
pub const MAGIC: u64 = 0xffaa_dd44_554d_5049;

/// The mark before a DUMPI footer's call counts.
const FOOT_MAGIC: u64 = 0xf007_fee7;

/// Whether `text` is a DUMPI `.meta` file: lines `key=value` naming `numprocs` and `fileprefix`.
pub fn is_meta(text: &str) -> bool {
    let keys: Vec<&str> = text.lines().filter_map(|l| l.split_once('=')).map(|(k, _)| k).collect();
    keys.contains(&"numprocs") && keys.contains(&"fileprefix")
}

/// Reads the DUMPI trace whose `.meta` file is `meta`: every rank file it names, in parallel.
pub fn read_dumpi(meta: &Path) -> Result<Vec<RankTrace>> {
    let text = std::fs::read_to_string(meta).map_err(|e| TraceError::io(meta, e))?;
    let get = |key: &str| text.lines().find_map(|l| l.split_once('=').filter(|(k, _)| *k == key));
    let not = |reason: String| TraceError::NotATrace { path: meta.to_path_buf(), reason };
    let n_ranks: u32 = get("numprocs")
        .and_then(|(_, v)| v.trim().parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| not("DUMPI meta file without a positive numprocs=".into()))?;
    let prefix = get("fileprefix")
        .map(|(_, v)| v.trim().to_owned())
        .filter(|p| !p.is_empty() && !p.contains('/'))
        .ok_or_else(|| not("DUMPI meta file without a plain fileprefix=".into()))?;
    let dir = meta.parent().unwrap_or(Path::new("."));
    crate::progress::start(u64::from(n_ranks));
    let raw = (0..n_ranks)
        .into_par_iter()
        .map(|r| {
            let file = dir.join(rank_file_name(&prefix, r));
            if !file.is_file() {
                return Err(TraceError::NotATrace {
                    path: file,
                    reason: format!("missing: {} says the run has {n_ranks} ranks", meta.display()),
                });
            }
            let raw = read_rank(&file, Rank(r));
            crate::progress::rank_read();
            raw
        })
        .collect::<Result<Vec<_>>>()?;
    let members = comms::resolve(meta, &raw)?;
    raw.into_par_iter().zip(members.into_par_iter()).map(|(r, m)| build(r, m, n_ranks)).collect()
}

/// The file name of rank `r` of a DUMPI trace with `prefix`.
pub fn rank_file_name(prefix: &str, r: u32) -> String {
    format!("{prefix}-{r:04}.bin")
}

/// The sum of `sizes`, at most `u64::MAX`.
fn saturating_sum(sizes: &[u64]) -> u64 {
    sizes.iter().fold(0u64, |a, &b| a.saturating_add(b))
}

/// Sizes of the predefined datatypes (`dumpi_native_datatypes`), for traces older than the
/// table of sizes (version 0.6.6): an LP64 machine's.
const DEFAULT_SIZES: [u32; 28] =
    [0, 0, 1, 1, 1, 1, 4, 2, 2, 4, 4, 8, 8, 4, 8, 16, 8, 8, 8, 1, 0, 0, 8, 12, 16, 6, 8, 32];

fn read_rank(path: &Path, rank: Rank) -> Result<RawRank> {
    let b = std::fs::read(path).map_err(|e| TraceError::io(path, e))?;
    let mut c = Cursor { b: &b, pos: 0, path, rank, sizes: &[] };
    if b.len() < 8 + 64 || c.u64()? != MAGIC {
        return Err(c.err(0, "not a DUMPI rank file (no DUMPI magic at byte 0)"));
    }
    let index = read_index(&mut c)?;
    // Header: version, start time, host, user (mesh coordinates not needed).
    c.pos = index.header;
    let version = Version([c.u8()?, c.u8()?, c.u8()?]);
    let start_s = c.u64()?;
    let host = c.string()?;
    // Datatype sizes.
    let sizes: Vec<u32> = match index.sizes {
        Some(at) => {
            c.pos = at;
            let n = c.length(4)?;
            (0..n).map(|_| c.u32()).collect::<Result<_>>()?
        }
        None => DEFAULT_SIZES.to_vec(),
    };
    // Hardware counters per record: as many as the label section names.
    let counters = match index.perf_labels {
        Some(at) => {
            c.pos = at;
            c.length(2)?
        }
        None => 0,
    };
    let mut c = Cursor { b: &b, pos: index.body, path, rank, sizes: &sizes };
    let cpu_offset = u64::from(c.u32()?);
    let wall_offset = u64::from(c.u32()?);
    let mut records = Vec::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut clock = Clocks::default();
    loop {
        if c.pos >= index.header.min(b.len()) {
            break;
        }
        let offset = c.pos;
        let label = c.u16()?;
        if label == labels::END_OF_STREAM {
            break;
        }
        let mask = c.u8()?;
        if mask & 0x40 != 0 {
            c.u16()?; // thread
        }
        let times = |c: &mut Cursor<'_>, off: u64| -> Result<(u64, u64)> {
            let a = u64::from(c.u16()?) + off;
            let an = u64::from(c.u32()?);
            let z = u64::from(c.u16()?) + off;
            let zn = u64::from(c.u32()?);
            if an >= 1_000_000_000 || zn >= 1_000_000_000 {
                return Err(c.err(offset, "a time's nanoseconds are 10^9 or more"));
            }
            Ok((a * 1_000_000_000 + an, z * 1_000_000_000 + zn))
        };
        let cpu = if mask & 0x04 != 0 { Some(times(&mut c, cpu_offset)?) } else { None };
        let wall = if mask & 0x08 != 0 { Some(times(&mut c, wall_offset)?) } else { None };
        if mask & 0x80 != 0 {
            c.u8()?;
            c.skip(counters * 16)?;
        }
        let Some(args) = calls::read_args(&mut c, label, mask, version)? else {
            let name = labels::NAMES.get(label as usize).copied().unwrap_or("an unknown call");
            return Err(c.err(
                offset,
                format!("{name} (label {label}): this reader does not know its record's layout"),
            ));
        };
        let Some(wall) = wall else {
            return Err(c.err(offset, "the record has no wall-clock times (traced without them?)"));
        };
        let (enter_ns, exit_ns) = clock.wall(wall);
        let cpu = cpu.map(|t| clock.cpu(t));
        if exit_ns < enter_ns {
            return Err(c.err(offset, "the call ends before it begins"));
        }
        if let Some(name) = labels::NAMES.get(label as usize) {
            *counts.entry((*name).to_owned()).or_default() += 1;
        }
        records.push(Record { label, offset: offset as u64, enter_ns, exit_ns, cpu, args });
    }
    let start_unix_ns = start_s.checked_mul(1_000_000_000).filter(|_| start_s > 0);
    Ok(RawRank {
        path: path.to_path_buf(),
        rank,
        host: Some(host).filter(|h| !h.is_empty()),
        start_unix_ns,
        records,
        counts,
    })
}

/// Times made relative to the first record, with the 16-bit seconds unwrapped: a run longer
/// than 18 hours wraps them, which shows as a time that runs back by most of 65,536 s.
#[derive(Debug, Default)]
struct Clocks {
    wall0: Option<u64>,
    wall_last: u64,
    wall_wraps: u64,
    cpu_last: u64,
    cpu_wraps: u64,
}

const WRAP_NS: u64 = 65_536 * 1_000_000_000;

fn unwrap(t: u64, last: &mut u64, wraps: &mut u64) -> u64 {
    let mut v = t + *wraps * WRAP_NS;
    if v + WRAP_NS / 2 < *last {
        *wraps += 1;
        v += WRAP_NS;
    }
    *last = v;
    v
}

impl Clocks {
    fn wall(&mut self, (a, z): (u64, u64)) -> (u64, u64) {
        let a = unwrap(a, &mut self.wall_last, &mut self.wall_wraps);
        let z = unwrap(z, &mut self.wall_last, &mut self.wall_wraps);
        let t0 = *self.wall0.get_or_insert(a);
        (a.saturating_sub(t0), z.saturating_sub(t0))
    }

    fn cpu(&mut self, (a, z): (u64, u64)) -> (u64, u64) {
        let a = unwrap(a, &mut self.cpu_last, &mut self.cpu_wraps);
        (a, unwrap(z, &mut self.cpu_last, &mut self.cpu_wraps))
    }
}

/// Where a rank file's parts are.
struct Index {
    sizes: Option<usize>,
    perf_labels: Option<usize>,
    header: usize,
    body: usize,
}

/// Reads the index at the end of the file, as libundumpi does: the newest layout has eight
/// 64-bit fields (magic, datatype sizes, addresses, counter labels, header, body, footer,
/// key-values); older ones lack the first of those and start with the magic later.
fn read_index(c: &mut Cursor<'_>) -> Result<Index> {
    let len = c.b.len();
    c.pos = len - 64;
    let mut magic = c.u64()?;
    let mut sizes = 0;
    let mut perf = 0;
    if magic == MAGIC {
        sizes = c.u64()?;
    } else {
        magic = c.u64()?;
    }
    if magic == MAGIC {
        c.u64()?; // function addresses
    } else {
        magic = c.u64()?;
    }
    if magic == MAGIC {
        perf = c.u64()?;
    } else {
        magic = c.u64()?;
    }
    if magic != MAGIC {
        return Err(
            c.err(len - 64, "the index at the end of the file has no DUMPI magic (cut short?)")
        );
    }
    let header = c.u64()?;
    let body = c.u64()?;
    let footer = c.u64()?;
    let place = |c: &Cursor<'_>, at: u64, what: &str| -> Result<usize> {
        usize::try_from(at).ok().filter(|&a| a < len).ok_or_else(|| {
            c.err(len - 64, format!("the index puts the {what} at byte {at}, past the end"))
        })
    };
    let opt = |c: &Cursor<'_>, at: u64, what: &str| -> Result<Option<usize>> {
        if at == 0 {
            Ok(None)
        } else {
            place(c, at, what).map(Some)
        }
    };
    let at_foot = place(c, footer, "footer")?;
    let here = c.pos;
    c.pos = at_foot;
    if c.u64()? != FOOT_MAGIC {
        return Err(c.err(at_foot, "the footer has no DUMPI footer magic"));
    }
    c.pos = here;
    Ok(Index {
        sizes: opt(c, sizes, "datatype sizes")?,
        perf_labels: opt(c, perf, "counter labels")?,
        header: place(c, header, "header")?,
        body: place(c, body, "body")?,
    })
}

/// A rank's communicators and requests while its records become events: DUMPI handles to
/// the model's ids.
struct Handles {
    comms: HashMap<u16, (CommId, Arc<[Rank]>)>,
    members: BTreeMap<CommId, Arc<[Rank]>>,
    next_comm: u32,
    /// Open requests: DUMPI handle → id, communicator handle, whether a receive.
    requests: HashMap<u32, (RequestId, u16, bool)>,
    next_request: u32,
}

/// Makes rank `r`'s events, its handles translated with what [`comms::resolve`] found for it.
fn build(r: RawRank, m: comms::RankComms, n_ranks: u32) -> Result<RankTrace> {
    let RawRank { path, rank, host, start_unix_ns, records, counts } = r;
    let world = world_members(n_ranks);
    let own: Arc<[Rank]> = Arc::from([rank]);
    let mut h = Handles {
        comms: [
            (calls::COMM_WORLD, (CommId::WORLD, world.clone())),
            (calls::COMM_SELF, (CommId::SELF, own.clone())),
        ]
        .into_iter()
        .collect(),
        members: [(CommId::WORLD, world), (CommId::SELF, own)].into_iter().collect(),
        next_comm: 2,
        requests: HashMap::new(),
        next_request: 0,
    };
    let has_cpu = records.iter().all(|rec| rec.cpu.is_some());
    let mut events = Vec::with_capacity(records.len());
    let (mut last_exit, mut last_cpu) = (0u64, None::<u64>);
    for (k, rec) in records.iter().enumerate() {
        let at = Site { path: &path, rank, offset: rec.offset };
        let Some(op) = op_of(rec.label) else { continue };
        let payload = payload(&mut h, &m, k, rec, &at)?;
        let gap_cpu_ns = match (rec.cpu, last_cpu) {
            (Some((a, _)), Some(z)) => Some(a.saturating_sub(z)),
            (Some(_), None) => Some(0),
            _ => None,
        };
        events.push(Event {
            op,
            enter_ns: rec.enter_ns,
            exit_ns: rec.exit_ns,
            gap_ns: rec.enter_ns.saturating_sub(last_exit),
            gap_work: None,
            gap_cpu_ns: gap_cpu_ns.filter(|_| has_cpu),
            gap_polls: 0,
            payload,
        });
        last_exit = rec.exit_ns;
        last_cpu = rec.cpu.map(|(_, z)| z);
    }
    crate::resolve::resolve_any_source(&mut events);
    Ok(RankTrace {
        rank,
        info: RankInfo {
            n_ranks,
            host,
            start_unix_ns,
            clock: "DUMPI wall clock".into(),
            has_cpu_time: has_cpu,
            ..RankInfo::default()
        },
        events,
        trailing_gap_ns: 0,
        comms: h.members,
        record_counts: counts,
        unrecorded: Default::default(),
    })
}

/// Where a record is, for errors.
struct Site<'a> {
    path: &'a Path,
    rank: Rank,
    offset: u64,
}

impl Site<'_> {
    fn err(&self, reason: String) -> TraceError {
        TraceError::Corrupt {
            path: self.path.to_path_buf(),
            rank: Some(self.rank),
            offset: self.offset,
            reason,
        }
    }
}

impl Handles {
    fn comm(&self, c: u16, at: &Site<'_>) -> Result<(CommId, Arc<[Rank]>)> {
        self.comms
            .get(&c)
            .cloned()
            .ok_or_else(|| at.err(format!("communicator {c} is not defined here")))
    }

    /// Rank `r` of communicator `c` as a world rank.
    fn world(&self, c: u16, r: i32, what: &str, at: &Site<'_>) -> Result<Rank> {
        let (_, members) = self.comm(c, at)?;
        usize::try_from(r).ok().and_then(|i| members.get(i)).copied().ok_or_else(|| {
            at.err(format!(
                "{what} {r} is not a rank of communicator {c} ({} members)",
                members.len()
            ))
        })
    }

    /// A peer as given to a call: `MPI_ANY_SOURCE` (receives), `MPI_PROC_NULL` (any other
    /// negative value), or a rank of `c`.
    fn peer(&self, c: u16, r: i32, recv: bool, at: &Site<'_>) -> Result<Peer> {
        if recv && r == ANY {
            Ok(Peer::Any)
        } else if r < 0 {
            Ok(Peer::Null)
        } else {
            let what = if recv { "source" } else { "destination" };
            self.world(c, r, what, at).map(Peer::Rank)
        }
    }

    fn open(&mut self, handle: u32, comm: u16, recv: bool) -> RequestId {
        self.next_request += 1;
        let id = RequestId(self.next_request);
        self.requests.insert(handle, (id, comm, recv));
        id
    }
}

/// The payload of record `k` of a rank; makes the communicators and requests it starts.
fn payload(
    h: &mut Handles,
    m: &comms::RankComms,
    k: usize,
    rec: &Record,
    at: &Site<'_>,
) -> Result<Payload> {
    Ok(match &rec.args {
        Args::Lifecycle
        | Args::Other
        | Args::CommGroup { .. }
        | Args::GroupSelect { .. }
        | Args::GroupFree { .. } => Payload::None,
        Args::Send { bytes, dest, tag, comm, request } => {
            let (id, _) = h.comm(*comm, at)?;
            let peer = h.peer(*comm, *dest, false, at)?;
            let request = request.map(|q| h.open(q, *comm, false));
            Payload::P2p {
                peer,
                tag: *tag,
                bytes: *bytes,
                comm: id,
                request,
                wildcards: Wildcards::default(),
            }
        }
        Args::Recv { bytes, source, tag, comm, request, status } => {
            let (id, _) = h.comm(*comm, at)?;
            let wildcards = Wildcards { source: *source == ANY, tag: *tag == ANY };
            let mut peer = h.peer(*comm, *source, true, at)?;
            let (mut tag, mut bytes) = (*tag, *bytes);
            if let Some(s) = status.filter(|s| s.source >= 0 && peer != Peer::Null) {
                peer = Peer::Rank(h.world(*comm, s.source, "status source", at)?);
                tag = s.tag.unwrap_or(tag);
                bytes = u64::try_from(s.bytes).unwrap_or(bytes);
            }
            let request = request.map(|q| h.open(q, *comm, true));
            Payload::P2p { peer, tag, bytes, comm: id, request, wildcards }
        }
        Args::SendRecv { send, dest, send_tag, recv, source, recv_tag, comm, status } => {
            let (id, _) = h.comm(*comm, at)?;
            let mut src = h.peer(*comm, *source, true, at)?;
            let mut recv_tag = *recv_tag;
            if let Some(s) = status.filter(|s| s.source >= 0 && src != Peer::Null) {
                src = Peer::Rank(h.world(*comm, s.source, "status source", at)?);
                recv_tag = s.tag.unwrap_or(recv_tag);
            }
            Payload::SendRecv {
                dest: h.peer(*comm, *dest, false, at)?,
                send_tag: *send_tag,
                send_bytes: *send,
                source: src,
                recv_tag,
                recv_bytes: *recv,
                comm: id,
            }
        }
        Args::Probe { source, tag, comm, found, status } => {
            let (id, _) = h.comm(*comm, at)?;
            let wildcards = Wildcards { source: *source == ANY, tag: *tag == ANY };
            let mut peer = h.peer(*comm, *source, true, at)?;
            let (mut tag, mut bytes) = (*tag, 0);
            if let Some(s) = status.filter(|s| *found && s.source >= 0) {
                peer = Peer::Rank(h.world(*comm, s.source, "status source", at)?);
                tag = s.tag.unwrap_or(tag);
                bytes = u64::try_from(s.bytes).unwrap_or(0);
            }
            Payload::P2p { peer, tag, bytes, comm: id, request: None, wildcards }
        }
        Args::Complete { given, done } => completion(h, given, done, at)?,
        Args::Collective { comm, root, send, recv, send_counts, recv_counts } => {
            let (id, members) = h.comm(*comm, at)?;
            let n = members.len() as u64;
            let me = members.iter().position(|&x| x == at.rank);
            let root_world = root.map(|r| h.world(*comm, r, "root", at)).transpose()?;
            let is_root = root.is_some_and(|r| usize::try_from(r).ok() == me);
            // Saturating: a size beyond any real buffer is refused, naming the call, by the
            // whole-run check (`crate::validate`), not wrapped round.
            let (mut s, mut v) = (*send, *recv);
            match rec.label {
                labels::GATHER if is_root => v = v.saturating_mul(n),
                labels::SCATTER if is_root => s = s.saturating_mul(n),
                labels::REDUCE if !is_root => v = 0,
                labels::ALLGATHER => v = v.saturating_mul(n),
                labels::ALLTOALL => {
                    s = s.saturating_mul(n);
                    v = v.saturating_mul(n);
                }
                _ => {}
            }
            if let Some(c) = send_counts {
                s = saturating_sum(c);
            }
            if let Some(c) = recv_counts {
                v = saturating_sum(c);
            }
            Payload::Collective {
                comm: id,
                root: root_world,
                send_bytes: s,
                recv_bytes: v,
                send_counts: send_counts.clone().map(Into::into),
                recv_counts: recv_counts.clone().map(Into::into),
                request: None,
            }
        }
        Args::CommDup { old, new }
        | Args::CommSplit { old, new, .. }
        | Args::CommCreate { old, new, .. }
        | Args::CartCreate { old, new, .. }
        | Args::CartSub { old, new, .. } => {
            let (parent, _) = h.comm(*old, at)?;
            let (mut created, mut cart) = (None, None);
            if *new != COMM_NULL {
                let (members, c) = m.created(k).cloned().ok_or_else(|| {
                    at.err("the communicator this call made has no members".into())
                })?;
                let id = CommId(h.next_comm);
                h.next_comm += 1;
                h.comms.insert(*new, (id, members.clone()));
                h.members.insert(id, members);
                (created, cart) = (Some(id), c);
            }
            let (color, key) = match &rec.args {
                Args::CommSplit { color, key, .. } => (Some(*color), Some(*key)),
                _ => (None, None),
            };
            Payload::Comm { parent, created, color, key, cart: cart.map(Box::new) }
        }
        Args::CommFree { comm } => {
            let (parent, _) = h.comm(*comm, at)?;
            if *comm != calls::COMM_WORLD && *comm != calls::COMM_SELF {
                h.comms.remove(comm);
            }
            Payload::Comm { parent, created: None, color: None, key: None, cart: None }
        }
    })
}

/// The payload of a completion of the requests `given`, of which `done` (index, status)
/// completed; the requests it completes are closed.
fn completion(
    h: &mut Handles,
    given: &[u32],
    done: &[(usize, Option<Status>)],
    at: &Site<'_>,
) -> Result<Payload> {
    let mut completed = Vec::with_capacity(done.len());
    for &(i, status) in done {
        let q = given[i];
        if q == REQUEST_NULL {
            continue;
        }
        let Some((id, comm, recv)) = h.requests.remove(&q) else {
            // Started by a call the reader does not model (a persistent request).
            completed.push(Completed { request: None, source: None, tag: None, bytes: None });
            continue;
        };
        let mut c = Completed { request: Some(id), source: None, tag: None, bytes: None };
        if let Some(s) = status.filter(|s: &Status| recv && s.source >= 0) {
            c.source = Some(h.world(comm, s.source, "status source", at)?);
            c.tag = s.tag;
            c.bytes = u64::try_from(s.bytes).ok();
        }
        completed.push(c);
    }
    Ok(Payload::Completion { n_given: given.len() as u32, completed })
}

/// The model's operation for a call label, where the model has one.
fn op_of(label: u16) -> Option<Op> {
    use labels::*;
    Some(match label {
        INIT => Op::Init,
        FINALIZE => Op::Finalize,
        SEND => Op::Send,
        BSEND => Op::Bsend,
        SSEND => Op::Ssend,
        RSEND => Op::Rsend,
        ISEND => Op::Isend,
        IBSEND => Op::Isend,
        ISSEND => Op::Issend,
        IRSEND => Op::Irsend,
        RECV => Op::Recv,
        IRECV => Op::Irecv,
        SENDRECV => Op::Sendrecv,
        SENDRECV_REPLACE => Op::SendrecvReplace,
        PROBE => Op::Probe,
        IPROBE => Op::Iprobe,
        WAIT => Op::Wait,
        WAITALL => Op::Waitall,
        WAITANY => Op::Waitany,
        WAITSOME => Op::Waitsome,
        TEST => Op::Test,
        TESTALL => Op::Testall,
        TESTANY => Op::Testany,
        TESTSOME => Op::Testsome,
        BARRIER => Op::Barrier,
        BCAST => Op::Bcast,
        REDUCE => Op::Reduce,
        ALLREDUCE => Op::Allreduce,
        SCAN => Op::Scan,
        GATHER => Op::Gather,
        GATHERV => Op::Gatherv,
        SCATTER => Op::Scatter,
        SCATTERV => Op::Scatterv,
        ALLGATHER => Op::Allgather,
        ALLGATHERV => Op::Allgatherv,
        ALLTOALL => Op::Alltoall,
        ALLTOALLV => Op::Alltoallv,
        REDUCE_SCATTER => Op::ReduceScatter,
        COMM_SPLIT => Op::CommSplit,
        COMM_DUP => Op::CommDup,
        COMM_CREATE => Op::CommCreate,
        CART_CREATE => Op::CartCreate,
        CART_SUB => Op::CartSub,
        COMM_FREE => Op::CommFree,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_constants_name_their_calls() {
        use labels::*;
        for (label, name) in [
            (SEND, "MPI_Send"),
            (ISEND, "MPI_Isend"),
            (WAITALL, "MPI_Waitall"),
            (ALLTOALLV, "MPI_Alltoallv"),
            (COMM_SPLIT, "MPI_Comm_split"),
            (CART_SUB, "MPI_Cart_sub"),
            (INIT, "MPI_Init"),
            (FINALIZE, "MPI_Finalize"),
            (ADDRESS, "MPI_Address"),
            (ERRHANDLER_CREATE, "MPI_Errhandler_create"),
        ] {
            assert_eq!(NAMES[label as usize], name);
        }
    }

    #[test]
    fn wrapped_seconds_run_on() {
        let mut c = Clocks::default();
        assert_eq!(c.wall((65_535 * 1_000_000_000, 65_535 * 1_000_000_000 + 5)), (0, 5));
        // The next call's seconds wrapped to 0: 65,536 s later, not 65,535 s earlier.
        let (a, _) = c.wall((10, 20));
        assert_eq!(a, 1_000_000_000 + 10);
    }

    #[test]
    fn meta_files_are_recognised_by_their_keys() {
        assert!(is_meta("hostname=x\nnumprocs=4\nfileprefix=run\n"));
        assert!(!is_meta("numprocs=4\n"));
        assert!(!is_meta("0 init\n0 send 1 8\n"));
    }
}
