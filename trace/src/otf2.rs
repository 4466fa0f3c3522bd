//! OTF2 traces (the Open Trace Format 2 of Score-P; Eschweiler et al. 2012), read through the
//! reference library that Debian packages (`libotf2-trace-dev`): a small C program built
//! against it on first use ([`OTF2_DUMP_C`], cached like the tracer) reads the global and
//! local definitions and the merged event stream and writes them as lines of text, which this
//! module turns into the model.
//!
//! An MPI call is an `Enter`/`Leave` pair of the region named for it (`MPI_Isend`) with the MPI
//! records made inside it: `MpiSend`/`MpiIsend`, `MpiRecv`, `MpiIrecvRequest` (the receive's
//! source, tag and size arrive with its completion, `MpiIrecv`, which fills them in),
//! `MpiIsendComplete`, `MpiRequestTest`, `MpiCollectiveEnd` (root, bytes sent and received).
//! Ranks are the positions of the locations in the MPI locations group; communicators' members
//! come from their groups (ranks of `MPI_COMM_WORLD`); peers and roots, given as ranks of their
//! communicator, become world ranks; times are clock ticks made nanoseconds after the start of
//! each rank's first call (a call whose times run backwards is refused). Calls without MPI
//! records (`MPI_Comm_rank`; non-blocking collectives and the waits that end them, which Score-P
//! records as regions only) are read past, their time left
//! to the computation around them; every MPI region is counted in the rank's record counts.
//!
//! # Complexity
//! Linear in the events; the library's own reading is linear in the trace's bytes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use crate::error::{Result, TraceError};
use crate::model::{
    world_members, CommId, Completed, Event, Op, Payload, Peer, Rank, RankInfo, RankTrace,
    RequestId, Wildcards,
};

/// The C source of the program that dumps an OTF2 trace through libotf2.
pub const OTF2_DUMP_C: &str = include_str!("../otf2/otf2_dump.c");

/// Whether the file at `path` starts as an OTF2 anchor file does (two bytes, then `OTF2`).
pub fn is_anchor(path: &Path) -> bool {
    let mut head = [0u8; 6];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| &head[2..6] == b"OTF2")
}

/// The anchor file in `dir`: `traces.otf2`, or the only `*.otf2` file.
pub fn anchor_in(dir: &Path) -> Option<PathBuf> {
    let t = dir.join("traces.otf2");
    if t.is_file() && is_anchor(&t) {
        return Some(t);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "otf2") && is_anchor(p))
        .collect();
    (v.len() == 1).then(|| v.remove(0))
}

/// Builds the dump program into the cache (or reuses the one built from the same source).
fn dumper() -> Result<PathBuf> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in OTF2_DUMP_C.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let dir = crate::tracer::cache_dir();
    let exe = dir.join(format!("mpiskel-otf2-dump-{h:016x}"));
    if exe.is_file() {
        // (A program a linker left without its execute bits, built beside another, runs.)
        executable(&exe)?;
        return Ok(exe);
    }
    let fail = |reason: String| TraceError::NotATrace { path: exe.clone(), reason };
    std::fs::create_dir_all(&dir).map_err(|e| TraceError::io(&dir, e))?;
    let src = dir.join(format!("otf2_dump-{h:016x}.c"));
    std::fs::write(&src, OTF2_DUMP_C).map_err(|e| TraceError::io(&src, e))?;
    let flags = Command::new("pkg-config").args(["--cflags", "--libs", "otf2"]).output();
    let flags = match flags {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => {
            return Err(fail(
                "reading OTF2 needs libotf2 (Debian: apt-get install libotf2-trace-dev) and \
                 pkg-config"
                    .into(),
            ))
        }
    };
    // One temporary file per build: threads of one process that build it at once must not
    // share one, which a linker writes before it makes it executable.
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".mpiskel-otf2-dump-{h:016x}.{}.{n}.tmp", std::process::id()));
    let out = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&tmp)
        .arg(&src)
        .args(flags.split_whitespace())
        .output()
        .map_err(|e| fail(format!("cannot run cc to build the OTF2 reader: {e}")))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(format!(
            "building the OTF2 reader failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    executable(&tmp)?;
    std::fs::rename(&tmp, &exe).map_err(|e| TraceError::io(&exe, e))?;
    Ok(exe)
}

/// Makes `path` executable by everyone who may read it (mode 755).
fn executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path).map_err(|e| TraceError::io(path, e))?.permissions().mode();
    if mode & 0o111 != 0o111 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| TraceError::io(path, e))?;
    }
    Ok(())
}

/// Reads the OTF2 trace whose anchor file is `anchor`.
pub fn read_otf2(anchor: &Path) -> Result<Vec<RankTrace>> {
    let text = dump_text(anchor)?;
    parse(anchor, &text)
}

/// The text the dump program ([`OTF2_DUMP_C`]) writes for the OTF2 trace at `anchor`: what
/// libotf2 read of its definitions and events, one record per line. A trace libotf2 refuses
/// (or a dump program that fails in any way) is refused with the program's message.
pub fn dump_text(anchor: &Path) -> Result<String> {
    let exe = dumper()?;
    let tmp = std::env::temp_dir().join(format!(
        "mpiskel-otf2-{}-{:?}.txt",
        std::process::id(),
        std::thread::current().id()
    ));
    let out =
        Command::new(&exe).arg(anchor).arg(&tmp).output().map_err(|e| TraceError::io(&exe, e))?;
    let text = std::fs::read_to_string(&tmp);
    let _ = std::fs::remove_file(&tmp);
    if !out.status.success() {
        return Err(TraceError::NotATrace {
            path: anchor.to_path_buf(),
            reason: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    text.map_err(|e| TraceError::io(&tmp, e))
}

/// Turns the dump program's text for the trace at `anchor` ([`dump_text`]) into every rank's
/// calls; the second half of [`read_otf2`], apart so that it can be given any text (the
/// reader's fuzz target mutates real dumps). Text that does not describe a trace is refused,
/// naming the anchor, the rank and the line.
pub fn read_dump(anchor: &Path, text: &str) -> Result<Vec<RankTrace>> {
    parse(anchor, text)
}

/// One MPI record inside a call.
#[derive(Debug, Clone, Copy)]
enum Rec {
    Send { peer: u32, comm: u32, tag: u32, bytes: u64, req: Option<u64> },
    Recv { peer: u32, comm: u32, tag: u32, bytes: u64 },
    IrecvRequest(u64),
    IsendComplete(u64),
    IrecvComplete { peer: u32, comm: u32, tag: u32, bytes: u64, req: u64 },
    Test,
    Collective { comm: u32, root: u32, sent: u64, received: u64 },
}

/// A location's call in progress.
#[derive(Debug, Default)]
struct Loc {
    depth: usize,
    name: String,
    enter: u64,
    recs: Vec<Rec>,
}

/// The definitions the dump gave.
#[derive(Debug, Default)]
struct Defs {
    ticks: u64,
    offset: u64,
    strings: HashMap<u32, String>,
    regions: HashMap<u32, u32>,
    groups: HashMap<u32, (char, Vec<u64>)>,
    comms: BTreeMap<u32, u32>,
}

fn parse(anchor: &Path, text: &str) -> Result<Vec<RankTrace>> {
    let bad = |line: usize, reason: String| TraceError::Corrupt {
        path: anchor.to_path_buf(),
        rank: None,
        offset: line as u64,
        reason: format!("record {line} of libotf2's reading: {reason}"),
    };
    let mut d = Defs::default();
    // Event records, kept as lines and split one at a time (a vector per record was most of
    // the reading's time).
    let mut events: Vec<(usize, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        let num =
            |s: &str| s.parse::<u64>().map_err(|_| bad(i + 1, format!("{s:?} is not a number")));
        match kind {
            "S" => {
                let (id, s) = rest.split_once(' ').unwrap_or((rest, ""));
                d.strings.insert(num(id)? as u32, s.to_owned());
            }
            "C" | "R" | "G" | "M" | "L" => {
                let f: Vec<u64> = rest
                    .split_whitespace()
                    .filter(|w| w.len() != 1 || w.as_bytes()[0].is_ascii_digit())
                    .map(num)
                    .collect::<Result<_>>()?;
                let at = |k: usize| {
                    f.get(k).copied().ok_or_else(|| bad(i + 1, "a field is missing".into()))
                };
                match kind {
                    "C" => (d.ticks, d.offset) = (at(0)?, at(1)?),
                    "R" => {
                        d.regions.insert(at(0)? as u32, at(1)? as u32);
                    }
                    "G" => {
                        let t = rest
                            .split_whitespace()
                            .nth(1)
                            .and_then(|w| w.chars().next())
                            .unwrap_or('O');
                        d.groups
                            .insert(at(0)? as u32, (t, f.get(2..).unwrap_or_default().to_vec()));
                    }
                    "M" => {
                        d.comms.insert(at(0)? as u32, at(1)? as u32);
                    }
                    _ => {}
                }
            }
            _ => events.push((i + 1, line)),
        }
    }
    if d.ticks == 0 {
        return Err(bad(0, "no clock properties (ticks per second)".into()));
    }
    // Ranks: the MPI locations group, in rank order.
    let locations: Vec<u64> =
        d.groups.values().find(|(t, _)| *t == 'L').map(|(_, m)| m.clone()).ok_or_else(|| {
            bad(0, "no group of MPI locations: not a trace of an MPI program".into())
        })?;
    let n = locations.len() as u32;
    let rank_of: HashMap<u64, u32> =
        locations.iter().enumerate().map(|(i, &l)| (l, i as u32)).collect();
    let world = world_members(n);
    let members = comm_members(&d, n, &rank_of, &world, &bad)?;
    let mut st: Vec<Loc> = (0..n).map(|_| Loc::default()).collect();
    let mut b: Vec<Builder> = (0..n).map(|r| Builder::new(Rank(r), n)).collect();
    // Each rank's communicators besides the world and itself: O(Σ members).
    for (&c, m) in &members {
        if let Some(m) = m.as_ref().filter(|m| !Arc::ptr_eq(m, &world)) {
            for r in m.iter() {
                if let Some(x) = b.get_mut(r.0 as usize) {
                    x.comms.insert(c, (CommId(c.saturating_add(2)), m.clone()));
                }
            }
        }
    }
    let mut f: Vec<&str> = Vec::new();
    for &(line, record) in &events {
        f.clear();
        f.extend(record.split_ascii_whitespace());
        let f = &f;
        let field = |k: usize| -> Result<u64> {
            f.get(k)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(line, "a field is missing".into()))
        };
        let loc = field(1)?;
        let Some(&r) = rank_of.get(&loc) else { continue };
        let t = field(2)?;
        let s = &mut st[r as usize];
        let ns = |t: u64| {
            ((u128::from(t.saturating_sub(d.offset)) * 1_000_000_000) / u128::from(d.ticks)) as u64
        };
        match f[0] {
            "E" | "X" => {
                let name = d
                    .regions
                    .get(&(field(3)? as u32))
                    .and_then(|sid| d.strings.get(sid))
                    .map(String::as_str)
                    .unwrap_or("");
                let mpi = name.starts_with("MPI_");
                if f[0] == "E" && mpi {
                    if s.depth == 0 {
                        (s.name, s.enter, s.recs) = (name.to_owned(), t, Vec::new());
                    }
                    s.depth += 1;
                } else if f[0] == "X" && mpi && s.depth > 0 {
                    s.depth -= 1;
                    if s.depth == 0 {
                        let recs = std::mem::take(&mut s.recs);
                        let (enter, exit) = (ns(s.enter), ns(t));
                        let name = std::mem::take(&mut s.name);
                        b[r as usize]
                            .call(&name, enter, exit, &recs, &members)
                            .map_err(|why| bad(line, format!("rank {r}: {name}: {why}")))?;
                    }
                }
            }
            k => {
                let Some(rec) = event_record(k, &field, &|why| bad(line, why))? else { continue };
                s.recs.push(rec);
            }
        }
    }
    Ok(b.into_iter().map(Builder::finish).collect())
}

/// The members of every communicator of `d`, as world ranks of a run of `n` (`None`: the rank's
/// own, for self groups; `world` itself for the world's).
fn comm_members(
    d: &Defs,
    n: u32,
    rank_of: &HashMap<u64, u32>,
    world: &Arc<[Rank]>,
    bad: &dyn Fn(usize, String) -> TraceError,
) -> Result<BTreeMap<u32, Option<Arc<[Rank]>>>> {
    let mut members: BTreeMap<u32, Option<Arc<[Rank]>>> = BTreeMap::new();
    for (&c, &g) in &d.comms {
        let m = match d.groups.get(&g) {
            Some(('S', _)) => None,
            Some(('R', ranks)) => {
                if ranks.iter().any(|&r| r >= u64::from(n)) {
                    return Err(bad(
                        0,
                        format!("communicator {c} names a rank past the {n} of the run"),
                    ));
                }
                let v: Vec<Rank> = ranks.iter().map(|&r| Rank(r as u32)).collect();
                Some(
                    if v.iter().enumerate().all(|(i, r)| r.0 as usize == i) && v.len() == n as usize
                    {
                        world.clone()
                    } else {
                        Arc::from(v)
                    },
                )
            }
            Some((_, locs)) => {
                Some(locs.iter().filter_map(|l| rank_of.get(l).map(|&r| Rank(r))).collect())
            }
            None => return Err(bad(0, format!("communicator {c} has an undefined group {g}"))),
        };
        members.insert(c, m);
    }
    Ok(members)
}

/// The record of kind `k` of an event line (`field`: its numbers), `None` for one that adds
/// nothing.
fn event_record(
    k: &str,
    field: &dyn Fn(usize) -> Result<u64>,
    bad: &dyn Fn(String) -> TraceError,
) -> Result<Option<Rec>> {
    let u32f = |i: usize| field(i).map(|v| v as u32);
    let rec = match k {
        "s" => {
            Rec::Send { peer: u32f(3)?, comm: u32f(4)?, tag: u32f(5)?, bytes: field(6)?, req: None }
        }
        "i" => Rec::Send {
            peer: u32f(3)?,
            comm: u32f(4)?,
            tag: u32f(5)?,
            bytes: field(6)?,
            req: Some(field(7)?),
        },
        "r" => Rec::Recv { peer: u32f(3)?, comm: u32f(4)?, tag: u32f(5)?, bytes: field(6)? },
        "j" => Rec::IrecvComplete {
            peer: u32f(3)?,
            comm: u32f(4)?,
            tag: u32f(5)?,
            bytes: field(6)?,
            req: field(7)?,
        },
        "I" => Rec::IsendComplete(field(3)?),
        "q" => Rec::IrecvRequest(field(3)?),
        "t" => Rec::Test,
        "x" => return Ok(None),
        "c" => {
            Rec::Collective { comm: u32f(4)?, root: u32f(5)?, sent: field(6)?, received: field(7)? }
        }
        other => return Err(bad(format!("unknown record kind {other:?}"))),
    };
    Ok(Some(rec))
}

/// One rank's events as they are made.
struct Builder {
    rank: Rank,
    n: u32,
    events: Vec<Event>,
    last_exit: Option<u64>,
    /// OTF2 request id → the model's id and the index of the call that started it.
    open: HashMap<u64, (RequestId, usize)>,
    next_request: u32,
    counts: BTreeMap<String, u64>,
    /// The communicators this rank belongs to besides the world and itself.
    comms: HashMap<u32, (CommId, Arc<[Rank]>)>,
}

/// A collective's bytes as the model counts them (this rank's buffers), from Score-P's counts
/// (`scorep_mpi_coll_bytes_*`: what the rank sends to and receives from all members, so that an
/// `MPI_Allreduce` of B bytes on N ranks counts N·B each way and a broadcast's root sends N·B).
fn buffer_bytes(
    op: Op,
    m: &[Rank],
    me: Rank,
    root: Option<Rank>,
    sent: u64,
    received: u64,
) -> (u64, u64) {
    let n = m.len().max(1) as u64;
    let pos = m.iter().position(|&r| r == me).unwrap_or(0) as u64;
    let is_root = root == Some(me);
    match op {
        Op::Bcast => (received, received),
        Op::Reduce => (sent, if is_root { sent } else { 0 }),
        Op::Allreduce => (sent / n, received / n),
        Op::Allgather => (sent / n, received),
        Op::Scan => (received / (pos + 1), received / (pos + 1)),
        Op::Exscan => {
            let b = received.checked_div(pos).unwrap_or(sent / (n - pos - 1).max(1));
            (b, b)
        }
        Op::ReduceScatter | Op::ReduceScatterBlock => (sent, received / n),
        // Gather, Scatter, the all-to-alls and the v variants: the same totals.
        _ => (sent, received),
    }
}

/// The model's operation for an MPI region name.
fn op_of(name: &str) -> Option<Op> {
    static BY_NAME: std::sync::OnceLock<HashMap<&'static str, Op>> = std::sync::OnceLock::new();
    let n = name.strip_prefix("MPI_")?;
    BY_NAME.get_or_init(|| Op::ALL.iter().map(|&op| (op.name(), op)).collect()).get(n).copied()
}

impl Builder {
    fn new(rank: Rank, n: u32) -> Builder {
        Builder {
            rank,
            n,
            events: Vec::new(),
            last_exit: None,
            open: HashMap::new(),
            next_request: 0,
            counts: BTreeMap::new(),
            comms: HashMap::new(),
        }
    }

    fn comm(
        &self,
        members: &BTreeMap<u32, Option<Arc<[Rank]>>>,
        c: u32,
    ) -> std::result::Result<(CommId, Arc<[Rank]>), String> {
        match members.get(&c) {
            Some(None) => Ok((CommId::SELF, Arc::from([self.rank]))),
            Some(Some(m)) if Arc::ptr_eq(m, &world_members(self.n)) => {
                Ok((CommId::WORLD, m.clone()))
            }
            Some(Some(_)) => self
                .comms
                .get(&c)
                .cloned()
                .ok_or_else(|| format!("communicator {c} does not hold this rank")),
            None => Err(format!("communicator {c} is not defined")),
        }
    }

    fn world(m: &[Rank], r: u32, what: &str) -> std::result::Result<Rank, String> {
        m.get(r as usize).copied().ok_or_else(|| {
            format!("{what} {r} is not a rank of its communicator ({} members)", m.len())
        })
    }

    fn call(
        &mut self,
        name: &str,
        enter: u64,
        exit: u64,
        recs: &[Rec],
        members: &BTreeMap<u32, Option<Arc<[Rank]>>>,
    ) -> std::result::Result<(), String> {
        *self.counts.entry(name.to_owned()).or_default() += 1;
        if exit < enter || self.events.last().is_some_and(|e| enter < e.exit_ns) {
            return Err("its times run backwards".into());
        }
        let Some(op) = op_of(name) else { return Ok(()) };
        let p2p = |peer: Peer, tag: u32, bytes: u64, comm: CommId, request: Option<RequestId>| {
            Payload::P2p {
                peer,
                tag: tag as i32,
                bytes,
                comm,
                request,
                wildcards: Wildcards::default(),
            }
        };
        let index = self.events.len();
        let payload = match op.class() {
            crate::OpClass::Lifecycle => Payload::None,
            crate::OpClass::Send => {
                let Some(Rec::Send { peer, comm, tag, bytes, req }) =
                    recs.iter().find(|r| matches!(r, Rec::Send { .. })).copied()
                else {
                    return Ok(());
                };
                let (id, m) = self.comm(members, comm)?;
                let request = req.map(|q| {
                    self.next_request += 1;
                    let rid = RequestId(self.next_request);
                    self.open.insert(q, (rid, index));
                    rid
                });
                p2p(Peer::Rank(Self::world(&m, peer, "destination")?), tag, bytes, id, request)
            }
            crate::OpClass::Recv => match recs
                .iter()
                .find(|r| matches!(r, Rec::Recv { .. } | Rec::IrecvRequest(_)))
                .copied()
            {
                Some(Rec::Recv { peer, comm, tag, bytes }) => {
                    let (id, m) = self.comm(members, comm)?;
                    p2p(Peer::Rank(Self::world(&m, peer, "source")?), tag, bytes, id, None)
                }
                Some(Rec::IrecvRequest(q)) => {
                    self.next_request += 1;
                    let rid = RequestId(self.next_request);
                    self.open.insert(q, (rid, index));
                    // Source, tag and size arrive with the completion.
                    p2p(Peer::Any, 0, 0, CommId::WORLD, Some(rid))
                }
                _ => return Ok(()),
            },
            crate::OpClass::SendRecv => {
                let send = recs.iter().find_map(|r| match *r {
                    Rec::Send { peer, comm, tag, bytes, .. } => Some((peer, comm, tag, bytes)),
                    _ => None,
                });
                let recv = recs.iter().find_map(|r| match *r {
                    Rec::Recv { peer, comm, tag, bytes } => Some((peer, comm, tag, bytes)),
                    _ => None,
                });
                let (Some((dp, dc, dt, db)), Some((sp, _, st, sb))) = (send, recv) else {
                    return Ok(());
                };
                let (id, m) = self.comm(members, dc)?;
                Payload::SendRecv {
                    dest: Peer::Rank(Self::world(&m, dp, "destination")?),
                    send_tag: dt as i32,
                    send_bytes: db,
                    source: Peer::Rank(Self::world(&m, sp, "source")?),
                    recv_tag: st as i32,
                    recv_bytes: sb,
                    comm: id,
                }
            }
            crate::OpClass::Completion => {
                let Some(p) = self.completion(recs, members)? else { return Ok(()) };
                p
            }
            crate::OpClass::Collective => {
                let Some(Rec::Collective { comm, root, sent, received }) =
                    recs.iter().find(|r| matches!(r, Rec::Collective { .. })).copied()
                else {
                    return Ok(());
                };
                let (id, m) = self.comm(members, comm)?;
                let root =
                    if root >= u32::MAX - 2 { None } else { Some(Self::world(&m, root, "root")?) };
                let (send_bytes, recv_bytes) =
                    buffer_bytes(op, &m, self.rank, root, sent, received);
                Payload::Collective {
                    comm: id,
                    root,
                    send_bytes,
                    recv_bytes,
                    send_counts: None,
                    recv_counts: None,
                    request: None,
                }
            }
            // Probes and communicator calls: Score-P records no MPI event for them.
            crate::OpClass::Probe | crate::OpClass::Comm => return Ok(()),
        };
        let gap_ns = enter.saturating_sub(self.last_exit.unwrap_or(enter));
        self.last_exit = Some(exit);
        self.events.push(Event {
            op,
            enter_ns: enter,
            exit_ns: exit,
            gap_ns,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload,
        });
        Ok(())
    }

    /// The payload of a completion call whose records are `recs`: the requests it completed
    /// (a receive's source, tag and size set on its start), `None` where Score-P recorded none.
    fn completion(
        &mut self,
        recs: &[Rec],
        members: &BTreeMap<u32, Option<Arc<[Rank]>>>,
    ) -> std::result::Result<Option<Payload>, String> {
        let mut completed = Vec::new();
        let mut tests = 0u32;
        for r in recs {
            match *r {
                Rec::IsendComplete(q) => {
                    if let Some((rid, _)) = self.open.remove(&q) {
                        completed.push(Completed {
                            request: Some(rid),
                            source: None,
                            tag: None,
                            bytes: None,
                        });
                    }
                }
                Rec::IrecvComplete { peer, comm, tag, bytes, req } => {
                    let Some((rid, at)) = self.open.remove(&req) else { continue };
                    let (id, m) = self.comm(members, comm)?;
                    let src = Self::world(&m, peer, "source")?;
                    if let Some(Payload::P2p { peer: p, tag: t, bytes: b, comm: c, .. }) =
                        self.events.get_mut(at).map(|e| &mut e.payload)
                    {
                        (*p, *t, *b, *c) = (Peer::Rank(src), tag as i32, bytes, id);
                    }
                    completed.push(Completed {
                        request: Some(rid),
                        source: Some(src),
                        tag: Some(tag as i32),
                        bytes: Some(bytes),
                    });
                }
                Rec::Test => tests += 1,
                _ => {}
            }
        }
        if completed.is_empty() && tests == 0 {
            // A wait on what Score-P did not record (a non-blocking collective).
            return Ok(None);
        }
        Ok(Some(Payload::Completion {
            n_given: (completed.len() as u32).max(tests).max(1),
            completed,
        }))
    }

    fn finish(self) -> RankTrace {
        let mut comms: BTreeMap<CommId, Arc<[Rank]>> = self.comms.into_values().collect();
        comms.insert(CommId::WORLD, world_members(self.n));
        comms.insert(CommId::SELF, Arc::from([self.rank]));
        // Times after the rank's first call began.
        let t0 = self.events.first().map_or(0, |e| e.enter_ns);
        let mut events = self.events;
        for e in &mut events {
            e.enter_ns = e.enter_ns.saturating_sub(t0);
            e.exit_ns = e.exit_ns.saturating_sub(t0);
        }
        // Receives whose completion never came stay from MPI_ANY_SOURCE.
        for e in &mut events {
            if let Payload::P2p { peer: Peer::Any, wildcards, .. } = &mut e.payload {
                wildcards.source = true;
            }
        }
        RankTrace {
            rank: self.rank,
            info: RankInfo { n_ranks: self.n, clock: "OTF2 clock".into(), ..RankInfo::default() },
            events,
            trailing_gap_ns: 0,
            comms,
            record_counts: self.counts,
            unrecorded: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Definitions of a 2-rank run: clock, the MPI_Send region, locations, groups, world.
    const DEFS: &str = "C 1000000000 0\nS 1 MPI_Send\nS 2 MPI_Recv\nR 7 1\nR 8 2\n\
                        L 0 4\nL 1 4\nG 0 L 2 0 1\nG 1 R 2 0 1\nM 0 1\n";

    #[test]
    fn a_send_becomes_a_call_to_its_peer_as_a_world_rank() {
        let text = format!(
            "{DEFS}E 0 100 7\ns 0 110 1 0 5 64\nX 0 120 7\nE 1 100 8\nr 1 130 0 0 5 64\nX 1 140 8\n"
        );
        let ranks = parse(Path::new("t.otf2"), &text).unwrap();
        let e = &ranks[0].events[0];
        assert_eq!((e.op, e.enter_ns, e.exit_ns), (Op::Send, 0, 20));
        assert!(matches!(
            e.payload,
            Payload::P2p { peer: Peer::Rank(Rank(1)), tag: 5, bytes: 64, .. }
        ));
        assert_eq!(ranks[1].events[0].op, Op::Recv);
    }

    #[test]
    fn times_that_run_backwards_are_refused_not_subtracted() {
        // Found by fuzzing: a mutated event file whose second call starts before the first ends.
        let text = format!("{DEFS}E 0 500 7\ns 0 510 1 0 5 64\nX 0 520 7\nE 0 100 7\nX 0 90 7\n");
        let e = parse(Path::new("t.otf2"), &text).unwrap_err().to_string();
        assert!(e.contains("t.otf2") && e.contains("backwards"), "{e}");
    }
}
