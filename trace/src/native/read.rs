//! The native format's reader: one event at a time from a buffered source, every error
//! naming the file, the rank and the byte offset; a file without its footer is incomplete.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Result, TraceError};
use crate::model::{
    Cart, CommId, Completed, Event, Op, OpClass, Payload, Peer, Rank, RankInfo, RankTrace,
    RequestId, Unrecorded, Wildcards, Work,
};
use crate::polls::{PollFolder, PollFolding};
use crate::validate::EventCheck;

use super::*;

/// A buffered byte source that knows its offset in the file.
struct Source<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
    base: u64,
}

impl<R: Read> Source<R> {
    fn new(inner: R) -> Self {
        Source { inner, buf: vec![0; 1 << 16].into_boxed_slice(), pos: 0, len: 0, base: 0 }
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The next byte, `Ok(None)` at end of file.
    #[inline]
    fn byte(&mut self) -> io::Result<Option<u8>> {
        if self.pos == self.len {
            self.base += self.len as u64;
            self.pos = 0;
            self.len = loop {
                match self.inner.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            };
            if self.len == 0 {
                return Ok(None);
            }
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(Some(b))
    }
}

/// Why a decode step stopped.
enum Stop {
    Eof,
    Io(io::Error),
    Bad(String),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

type Dec<T> = std::result::Result<T, Stop>;

impl<R: Read> Source<R> {
    fn u8(&mut self) -> Dec<u8> {
        self.byte()?.ok_or(Stop::Eof)
    }

    fn bytes<const N: usize>(&mut self) -> Dec<[u8; N]> {
        let mut a = [0; N];
        for x in &mut a {
            *x = self.u8()?;
        }
        Ok(a)
    }

    #[inline]
    fn uvar(&mut self) -> Dec<u64> {
        // Fast path: a whole varint is in the buffer.
        if self.len - self.pos >= 10 {
            let buf = &self.buf[self.pos..self.pos + 10];
            let mut v = 0u64;
            for (i, &b) in buf.iter().enumerate() {
                if i == 9 && b > 1 {
                    return Err(Stop::Bad("varint overflows 64 bits".into()));
                }
                v |= u64::from(b & 0x7F) << (7 * i);
                if b & 0x80 == 0 {
                    self.pos += i + 1;
                    return Ok(v);
                }
            }
            return Err(Stop::Bad("varint longer than 10 bytes".into()));
        }
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(Stop::Bad("varint overflows 64 bits".into()));
            }
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Stop::Bad("varint longer than 10 bytes".into()))
    }

    fn svar(&mut self) -> Dec<i64> {
        let u = self.uvar()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    fn u32var(&mut self, what: &str) -> Dec<u32> {
        let v = self.uvar()?;
        u32::try_from(v).map_err(|_| Stop::Bad(format!("{what} {v} does not fit 32 bits")))
    }

    fn i32var(&mut self, what: &str) -> Dec<i32> {
        let v = self.svar()?;
        i32::try_from(v).map_err(|_| Stop::Bad(format!("{what} {v} does not fit 32 bits")))
    }

    fn string(&mut self, what: &str) -> Dec<String> {
        let n = self.uvar()?;
        if n > 4096 {
            return Err(Stop::Bad(format!("{what} is {n} bytes long (at most 4096 allowed)")));
        }
        let mut s = Vec::with_capacity(n as usize);
        for _ in 0..n {
            s.push(self.u8()?);
        }
        String::from_utf8(s).map_err(|_| Stop::Bad(format!("{what} is not UTF-8")))
    }
}

/// The header of a native trace file.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The rank that wrote the file.
    pub rank: Rank,
    /// Facts from the header.
    pub info: RankInfo,
}

/// One item of a native trace, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A communicator definition.
    Comm(CommId, Vec<Rank>),
    /// An MPI call.
    Event(Event),
    /// Calls of one kind counted but not recorded (written before the footer): the name
    /// without `MPI_`, and what was counted.
    Unrecorded(String, Unrecorded),
}

/// Streams the items of one native trace file.
///
/// Iteration yields items until the footer; a file that ends before its footer yields
/// [`TraceError::Incomplete`], any malformed byte [`TraceError::Corrupt`], both with the offset.
#[derive(Debug)]
pub struct NativeReader<R> {
    src: SourceDbg<R>,
    path: PathBuf,
    header: Header,
    last_exit: u64,
    n_events: u64,
    done: bool,
}

/// `Source` wrapper so `NativeReader` can derive `Debug` without exposing the buffer.
struct SourceDbg<R>(Source<R>);

impl<R> std::fmt::Debug for SourceDbg<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source").field("offset", &(self.0.base + self.0.pos as u64)).finish()
    }
}

impl NativeReader<File> {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|e| TraceError::io(path, e))?;
        NativeReader::new(f, path)
    }
}

impl<R: Read> NativeReader<R> {
    /// Reads the header from `inner`; `path` is used in errors.
    pub fn new(inner: R, path: &Path) -> Result<Self> {
        let mut src = Source::new(inner);
        let path = path.to_path_buf();
        let header = read_header(&mut src).map_err(|stop| match stop {
            Stop::Eof => TraceError::Incomplete {
                path: path.clone(),
                rank: None,
                offset: src.offset(),
                events: 0,
            },
            Stop::Io(e) => TraceError::io(&path, e),
            Stop::Bad(reason) if reason == "magic" => TraceError::BadMagic { path: path.clone() },
            Stop::Bad(reason) if reason.starts_with("version ") => TraceError::UnsupportedVersion {
                path: path.clone(),
                version: reason[8..].parse().unwrap_or(0),
                supported: VERSION,
            },
            Stop::Bad(reason) => {
                TraceError::Corrupt { path: path.clone(), rank: None, offset: src.offset(), reason }
            }
        })?;
        Ok(NativeReader {
            src: SourceDbg(src),
            path,
            header,
            last_exit: 0,
            n_events: 0,
            done: false,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    fn next_item(&mut self) -> Dec<Option<Item>> {
        let src = &mut self.src.0;
        let tag = match src.byte()? {
            None => return Err(Stop::Eof),
            Some(t) => t,
        };
        match tag {
            TAG_EVENT => {
                let code = src.u8()?;
                let op = Op::from_code(code)
                    .ok_or_else(|| Stop::Bad(format!("unknown operation code {code}")))?;
                let gap = src.uvar()?;
                let dur = src.uvar()?;
                let gap_work = if self.header.info.has_instructions {
                    match src.uvar()? {
                        0 => None,
                        n => Some(Work::Instructions(n - 1)),
                    }
                } else {
                    None
                };
                let gap_cpu_ns =
                    if self.header.info.has_cpu_time { Some(src.uvar()?) } else { None };
                let payload = decode_payload(src, op)?;
                let enter_ns = self
                    .last_exit
                    .checked_add(gap)
                    .ok_or_else(|| Stop::Bad("timestamp overflows 64 bits".into()))?;
                let exit_ns = enter_ns
                    .checked_add(dur)
                    .ok_or_else(|| Stop::Bad("timestamp overflows 64 bits".into()))?;
                self.last_exit = exit_ns;
                self.n_events += 1;
                Ok(Some(Item::Event(Event {
                    op,
                    enter_ns,
                    exit_ns,
                    gap_ns: gap,
                    gap_work,
                    gap_cpu_ns,
                    gap_polls: 0,
                    payload,
                })))
            }
            TAG_COMM => {
                let id = src.u32var("communicator id")?;
                let n = src.uvar()?;
                if n > 1 << 24 {
                    return Err(Stop::Bad(format!("communicator of {n} members")));
                }
                let mut members = Vec::with_capacity(n.min(4096) as usize);
                for _ in 0..n {
                    members.push(Rank(src.u32var("member rank")?));
                }
                Ok(Some(Item::Comm(CommId(id), members)))
            }
            TAG_UNRECORDED => {
                let name = src.string("unrecorded call")?;
                let (calls, bytes, ns) = (src.uvar()?, src.uvar()?, src.uvar()?);
                Ok(Some(Item::Unrecorded(name, Unrecorded { calls, bytes, ns })))
            }
            TAG_FOOTER => {
                let n = src.uvar()?;
                let end: [u8; 8] = src.bytes()?;
                if &end != END_MAGIC {
                    return Err(Stop::Bad("footer magic is wrong".into()));
                }
                if n != self.n_events {
                    return Err(Stop::Bad(format!(
                        "footer counts {n} events but the file holds {}",
                        self.n_events
                    )));
                }
                if src.byte()?.is_some() {
                    return Err(Stop::Bad("bytes after the footer".into()));
                }
                Ok(None)
            }
            t => Err(Stop::Bad(format!("unknown record tag 0x{t:02x}"))),
        }
    }
}

impl<R: Read> Iterator for NativeReader<R> {
    type Item = Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let start = self.src.0.offset();
        let r = self.next_item();
        let rank = Some(self.header.rank);
        match r {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(stop) => {
                self.done = true;
                Some(Err(match stop {
                    Stop::Eof => TraceError::Incomplete {
                        path: self.path.clone(),
                        rank,
                        offset: start,
                        events: self.n_events,
                    },
                    Stop::Io(e) => TraceError::io(&self.path, e),
                    Stop::Bad(reason) => {
                        TraceError::Corrupt { path: self.path.clone(), rank, offset: start, reason }
                    }
                }))
            }
        }
    }
}

fn read_header<R: Read>(src: &mut Source<R>) -> Dec<Header> {
    let magic: [u8; 8] = src.bytes()?;
    if &magic != MAGIC {
        return Err(Stop::Bad("magic".into()));
    }
    let version = u16::from_le_bytes(src.bytes()?);
    // Version 3 is version 4 without unrecorded-call records, version 2 version 3 without
    // processor times.
    if !(2..=VERSION).contains(&version) {
        return Err(Stop::Bad(format!("version {version}")));
    }
    let flags = u16::from_le_bytes(src.bytes()?);
    let rank = u32::from_le_bytes(src.bytes()?);
    let n_ranks = u32::from_le_bytes(src.bytes()?);
    if rank >= n_ranks {
        return Err(Stop::Bad(format!("rank {rank} is not below the number of ranks {n_ranks}")));
    }
    if n_ranks > MAX_RANKS {
        return Err(Stop::Bad(format!(
            "{n_ranks} ranks: more than the {MAX_RANKS} this build reads"
        )));
    }
    let clock = match src.u8()? {
        CLOCK_MONOTONIC => "CLOCK_MONOTONIC",
        CLOCK_SIMULATED => "simulated",
        c => return Err(Stop::Bad(format!("unknown clock id {c}"))),
    };
    let _start_mono = u64::from_le_bytes(src.bytes()?);
    let start_unix = u64::from_le_bytes(src.bytes()?);
    let pid = u32::from_le_bytes(src.bytes()?);
    let host = src.string("host name")?;
    let library = src.string("MPI library")?;
    let nonempty = |s: String| if s.is_empty() { None } else { Some(s) };
    Ok(Header {
        rank: Rank(rank),
        info: RankInfo {
            n_ranks,
            host: nonempty(host),
            pid: (pid != 0).then_some(pid),
            mpi_library: nonempty(library),
            start_unix_ns: (start_unix != 0).then_some(start_unix),
            clock: clock.to_owned(),
            has_instructions: flags & FLAG_INSTRUCTIONS != 0,
            has_cpu_time: flags & FLAG_CPU_TIME != 0,
        },
    })
}

fn decode_peer(v: i64) -> Dec<Peer> {
    match v {
        PEER_ANY => Ok(Peer::Any),
        PEER_NULL => Ok(Peer::Null),
        r if (0..=i64::from(u32::MAX)).contains(&r) => Ok(Peer::Rank(Rank(r as u32))),
        r => Err(Stop::Bad(format!("invalid peer {r}"))),
    }
}

fn request(v: u64) -> Dec<Option<RequestId>> {
    match v {
        0 => Ok(None),
        v => u32::try_from(v)
            .map(|r| Some(RequestId(r)))
            .map_err(|_| Stop::Bad(format!("request id {v} does not fit 32 bits"))),
    }
}

fn decode_payload<R: Read>(s: &mut Source<R>, op: Op) -> Dec<Payload> {
    Ok(match op.class() {
        OpClass::Lifecycle => Payload::None,
        OpClass::Send | OpClass::Recv | OpClass::Probe => Payload::P2p {
            peer: decode_peer(s.svar()?)?,
            tag: s.i32var("tag")?,
            bytes: s.uvar()?,
            comm: CommId(s.u32var("communicator id")?),
            request: request(s.uvar()?)?,
            wildcards: match s.u8()? {
                w if w < 4 => Wildcards { source: w & 1 != 0, tag: w & 2 != 0 },
                w => return Err(Stop::Bad(format!("invalid wildcard flags {w}"))),
            },
        },
        OpClass::SendRecv => Payload::SendRecv {
            dest: decode_peer(s.svar()?)?,
            send_tag: s.i32var("tag")?,
            send_bytes: s.uvar()?,
            source: decode_peer(s.svar()?)?,
            recv_tag: s.i32var("tag")?,
            recv_bytes: s.uvar()?,
            comm: CommId(s.u32var("communicator id")?),
        },
        OpClass::Completion => {
            let n_given = s.u32var("request count")?;
            let n = s.uvar()?;
            if n > u64::from(n_given) {
                return Err(Stop::Bad(format!("{n} requests completed out of {n_given} given")));
            }
            let mut completed = Vec::with_capacity(n.min(1024) as usize);
            for _ in 0..n {
                let request = request(s.uvar()?)?;
                let c = match s.u8()? {
                    0 => Completed { request, source: None, tag: None, bytes: None },
                    1 => Completed {
                        request,
                        source: Some(Rank(s.u32var("source rank")?)),
                        tag: Some(s.i32var("tag")?),
                        bytes: Some(s.uvar()?),
                    },
                    b => return Err(Stop::Bad(format!("invalid completion kind {b}"))),
                };
                completed.push(c);
            }
            Payload::Completion { n_given, completed }
        }
        OpClass::Collective => {
            let comm = CommId(s.u32var("communicator id")?);
            let root = match s.svar()? {
                -1 => None,
                r => match decode_peer(r)? {
                    Peer::Rank(r) => Some(r),
                    _ => return Err(Stop::Bad(format!("invalid root {r}"))),
                },
            };
            let send_bytes = s.uvar()?;
            let recv_bytes = s.uvar()?;
            let mask = s.u8()?;
            if mask > 3 {
                return Err(Stop::Bad(format!("invalid count mask {mask}")));
            }
            let mut counts = |present: bool| -> Dec<Option<Vec<u64>>> {
                if !present {
                    return Ok(None);
                }
                let n = s.uvar()?;
                if n > 1 << 24 {
                    return Err(Stop::Bad(format!("count list of {n} entries")));
                }
                (0..n).map(|_| s.uvar()).collect::<Dec<Vec<_>>>().map(Some)
            };
            let send_counts = counts(mask & 1 != 0)?;
            let recv_counts = counts(mask & 2 != 0)?;
            let request = request(s.uvar()?)?;
            Payload::Collective {
                comm,
                root,
                send_bytes,
                recv_bytes,
                send_counts: send_counts.map(Into::into),
                recv_counts: recv_counts.map(Into::into),
                request,
            }
        }
        OpClass::Comm => {
            let parent = CommId(s.u32var("communicator id")?);
            let created = match s.uvar()? {
                0 => None,
                c => Some(CommId(
                    u32::try_from(c - 1)
                        .map_err(|_| Stop::Bad(format!("communicator id {c} too large")))?,
                )),
            };
            let (color, key, cart) = match s.u8()? {
                0 => (None, None, None),
                1 => (Some(s.i32var("colour")?), Some(s.i32var("key")?), None),
                2 => {
                    let n = s.uvar()?;
                    if n > 64 {
                        return Err(Stop::Bad(format!("Cartesian topology of {n} dimensions")));
                    }
                    let mut cart = Cart { dims: Vec::new(), periods: Vec::new() };
                    for _ in 0..n {
                        cart.dims.push(s.u32var("dimension")?);
                        cart.periods.push(match s.u8()? {
                            0 => false,
                            1 => true,
                            b => return Err(Stop::Bad(format!("invalid periodicity {b}"))),
                        });
                    }
                    (None, None, Some(cart))
                }
                b => return Err(Stop::Bad(format!("invalid communicator marker {b}"))),
            };
            Payload::Comm { parent, created, color, key, cart: cart.map(Box::new) }
        }
    })
}

/// Reads one native rank file completely.
pub fn read_rank_file(path: &Path) -> Result<RankTrace> {
    let reader = NativeReader::open(path)?;
    collect_rank(reader)
}

/// Reads one rank file with its polling loops folded as it is read ([`crate::polls`]): the
/// rank as [`read_rank_file`] then [`crate::polls::fold_polls`] make it, without holding the
/// failed polls (a rank of HPC Challenge on 2 ranks records 34 million). The events folded
/// away are checked as [`crate::validate::validate`] checks every event, with their positions
/// in the file.
pub fn read_rank_file_folded(path: &Path) -> Result<(RankTrace, PollFolding)> {
    let reader = NativeReader::open(path)?;
    let mut folding = Folding {
        folder: PollFolder::default(),
        check: EventCheck::new(path, reader.header().rank, reader.header().info.n_ranks),
        read: 0,
    };
    let mut t = collect(reader, Some(&mut folding))?;
    let Folding { folder, check, .. } = folding;
    check.finish(&t.comms)?;
    let mut tail = Vec::new();
    let mut stats = folder.finish(&mut tail);
    t.events.extend(tail);
    crate::resolve::resolve_any_source(&mut t.events);
    stats.add_partial(crate::completions::fold_completions(&mut t));
    t.events.shrink_to_fit();
    Ok((t, stats))
}

/// Folding polls while a rank is read: the folder, the checks of the events read, and how
/// many were.
struct Folding<'a> {
    folder: PollFolder,
    check: EventCheck<'a>,
    read: usize,
}

/// Collects a reader into a [`RankTrace`]; fills in the actual source of `MPI_ANY_SOURCE`
/// receives from their completions.
pub fn collect_rank<R: Read>(reader: NativeReader<R>) -> Result<RankTrace> {
    let mut t = collect(reader, None)?;
    crate::resolve::resolve_any_source(&mut t.events);
    // Grown by doubling: keep only what the events need.
    t.events.shrink_to_fit();
    Ok(t)
}

/// The rank `reader` reads, its events passed through `folding` where given (whose folder
/// may still hold a run of polls at the end).
fn collect<R: Read>(
    reader: NativeReader<R>,
    mut folding: Option<&mut Folding>,
) -> Result<RankTrace> {
    let Header { rank, info } = reader.header().clone();
    let mut comms = BTreeMap::new();
    comms.insert(CommId::WORLD, crate::model::world_members(info.n_ranks));
    comms.insert(CommId::SELF, Arc::from([rank]));
    let mut events = Vec::new();
    let mut unrecorded = BTreeMap::new();
    // Counted by operation code, named once at the end.
    let mut per_code = [0u64; 256];
    for item in reader {
        match item? {
            Item::Comm(id, members) => {
                comms.insert(id, members.into());
            }
            Item::Unrecorded(name, u) => {
                unrecorded.insert(name, u);
            }
            Item::Event(e) => {
                per_code[usize::from(e.op.code())] += 1;
                match folding.as_deref_mut() {
                    Some(f) => {
                        f.check.event(f.read, &e, None)?;
                        f.read += 1;
                        f.folder.push(e, &mut events);
                    }
                    None => events.push(e),
                }
            }
        }
    }
    let record_counts: BTreeMap<String, u64> = Op::ALL
        .iter()
        .filter(|op| per_code[usize::from(op.code())] > 0)
        .map(|op| (op.name().to_owned(), per_code[usize::from(op.code())]))
        .collect();
    Ok(RankTrace { rank, info, events, trailing_gap_ns: 0, comms, record_counts, unrecorded })
}
