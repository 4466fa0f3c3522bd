//! The native trace format: one binary file per rank, written by the PMPI tracer (C) and by
//! [`NativeWriter`], read by [`NativeReader`]. The layout is specified in `trace/FORMAT.md`;
//! the constants here and in `trace/tracer/mpiskel_tracer.c` must agree with it.
//!
//! Both sides stream: the writer buffers records and writes them in large blocks, the reader
//! decodes one event at a time from a buffered source and never holds the file in memory.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Result, TraceError};
use crate::model::{
    Cart, CommId, Completed, Event, Op, OpClass, Payload, Peer, Rank, RankInfo, RankTrace,
    RequestId, Unrecorded, Wildcards, Work,
};
use crate::polls::{PollFolder, PollFolding};
use crate::validate::EventCheck;

/// First eight bytes of every native trace file.
pub const MAGIC: &[u8; 8] = b"MPISKTR\0";
/// Last eight bytes of a complete native trace file.
pub const END_MAGIC: &[u8; 8] = b"MPISKEND";
/// The format version this build writes and reads.
pub const VERSION: u16 = 4;
/// The largest run the readers accept: rank counts above it are taken for corruption (each rank
/// holds the world communicator's member list).
pub const MAX_RANKS: u32 = 1 << 22;

/// File name of rank `r` inside a trace directory.
pub fn rank_file_name(rank: Rank) -> String {
    format!("rank-{}.mpt", rank.0)
}

const FLAG_INSTRUCTIONS: u16 = 1;
const FLAG_CPU_TIME: u16 = 2;
const TAG_EVENT: u8 = 0x01;
const TAG_COMM: u8 = 0x02;
const TAG_UNRECORDED: u8 = 0x03;
const TAG_FOOTER: u8 = 0xFF;
const CLOCK_MONOTONIC: u8 = 1;
const CLOCK_SIMULATED: u8 = 2;

const PEER_ANY: i64 = -1;
const PEER_NULL: i64 = -2;

fn encode_peer(p: Peer) -> i64 {
    match p {
        Peer::Rank(r) => i64::from(r.0),
        Peer::Any => PEER_ANY,
        Peer::Null => PEER_NULL,
    }
}

// ---------------------------------------------------------------------------------------------
// Writer

/// Writes one rank's native trace, streaming.
///
/// Call [`NativeWriter::comm`] before the first event that uses a communicator other than
/// `MPI_COMM_WORLD`/`MPI_COMM_SELF`, [`NativeWriter::event`] for each call, and
/// [`NativeWriter::finish`] at the end; a writer dropped without `finish` leaves a file that
/// readers report as incomplete.
#[derive(Debug)]
pub struct NativeWriter<W: Write> {
    out: io::BufWriter<W>,
    info_flags: u16,
    last_exit: u64,
    n_events: u64,
    scratch: Vec<u8>,
}

impl<W: Write> NativeWriter<W> {
    /// Writes the header for `rank`.
    pub fn new(inner: W, rank: Rank, info: &RankInfo) -> io::Result<Self> {
        let mut out = io::BufWriter::with_capacity(1 << 20, inner);
        let flags = if info.has_instructions { FLAG_INSTRUCTIONS } else { 0 }
            | if info.has_cpu_time { FLAG_CPU_TIME } else { 0 };
        let mut h = Vec::with_capacity(64);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&rank.0.to_le_bytes());
        h.extend_from_slice(&info.n_ranks.to_le_bytes());
        h.push(if info.clock == "simulated" { CLOCK_SIMULATED } else { CLOCK_MONOTONIC });
        h.extend_from_slice(&0u64.to_le_bytes());
        h.extend_from_slice(&info.start_unix_ns.unwrap_or(0).to_le_bytes());
        h.extend_from_slice(&info.pid.unwrap_or(0).to_le_bytes());
        put_str(&mut h, info.host.as_deref().unwrap_or(""));
        put_str(&mut h, info.mpi_library.as_deref().unwrap_or(""));
        out.write_all(&h)?;
        Ok(NativeWriter { out, info_flags: flags, last_exit: 0, n_events: 0, scratch: Vec::new() })
    }

    /// Defines communicator `id` by its members (world ranks in communicator rank order).
    pub fn comm(&mut self, id: CommId, members: &[Rank]) -> io::Result<()> {
        let b = &mut self.scratch;
        b.clear();
        b.push(TAG_COMM);
        put_uvar(b, u64::from(id.0));
        put_uvar(b, members.len() as u64);
        for m in members {
            put_uvar(b, u64::from(m.0));
        }
        self.out.write_all(b)
    }

    /// Appends one event. Its `gap_ns` is ignored: the format derives it from the previous
    /// event's exit (`enter_ns` must not precede it).
    pub fn event(&mut self, e: &Event) -> io::Result<()> {
        if e.enter_ns < self.last_exit || e.exit_ns < e.enter_ns {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "event times go backwards"));
        }
        let b = &mut self.scratch;
        b.clear();
        b.push(TAG_EVENT);
        b.push(e.op.code());
        put_uvar(b, e.enter_ns - self.last_exit);
        put_uvar(b, e.exit_ns - e.enter_ns);
        if self.info_flags & FLAG_INSTRUCTIONS != 0 {
            // 0 means "not counted" for this gap; counts are stored + 1.
            let w = match e.gap_work {
                Some(Work::Instructions(n)) => n.saturating_add(1),
                _ => 0,
            };
            put_uvar(b, w);
        }
        if self.info_flags & FLAG_CPU_TIME != 0 {
            put_uvar(b, e.gap_cpu_ns.unwrap_or(e.enter_ns - self.last_exit));
        }
        encode_payload(b, e.op, &e.payload)
            .map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
        self.last_exit = e.exit_ns;
        self.n_events += 1;
        self.out.write_all(b)
    }

    /// Appends the count of calls of one kind that were not recorded (`name` without `MPI_`).
    pub fn unrecorded(&mut self, name: &str, u: &Unrecorded) -> io::Result<()> {
        let b = &mut self.scratch;
        b.clear();
        b.push(TAG_UNRECORDED);
        put_str(b, name);
        put_uvar(b, u.calls);
        put_uvar(b, u.bytes);
        put_uvar(b, u.ns);
        self.out.write_all(b)
    }

    /// Writes the footer and flushes; returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        let b = &mut self.scratch;
        b.clear();
        b.push(TAG_FOOTER);
        put_uvar(b, self.n_events);
        b.extend_from_slice(END_MAGIC);
        self.out.write_all(b)?;
        self.out.into_inner().map_err(io::IntoInnerError::into_error)
    }
}

/// Writes a whole rank trace to `path`, atomically: into a temporary file of a unique name beside
/// it, renamed into place when complete (two writers never share the temporary file).
pub fn write_rank_file(path: &Path, trace: &RankTrace) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let write = || -> io::Result<()> {
        let tmp =
            tempfile::Builder::new().prefix(".mpiskel-rank").suffix(".tmp").tempfile_in(dir)?;
        let mut w = NativeWriter::new(tmp.as_file(), trace.rank, &trace.info)?;
        for (id, members) in &trace.comms {
            if *id != CommId::WORLD && *id != CommId::SELF {
                w.comm(*id, members)?;
            }
        }
        for e in &trace.events {
            w.event(e)?;
        }
        for (name, u) in &trace.unrecorded {
            w.unrecorded(name, u)?;
        }
        w.finish()?.sync_all()?;
        tmp.persist(path).map(drop).map_err(|e| e.error)
    };
    // A failed write's temporary file is removed when it is dropped.
    write().map_err(|e| TraceError::io(path, e))
}

/// A request as the format stores it: 0 for none, so that id 0 cannot be written.
fn put_request(b: &mut Vec<u8>, r: Option<RequestId>) -> Result<(), String> {
    match r {
        Some(RequestId(0)) => Err("request id 0 (ids start at 1)".into()),
        r => {
            put_uvar(b, r.map_or(0, |r| u64::from(r.0)));
            Ok(())
        }
    }
}

fn encode_payload(b: &mut Vec<u8>, op: Op, p: &Payload) -> Result<(), String> {
    match (op.class(), p) {
        (OpClass::Lifecycle, Payload::None) => {}
        (
            OpClass::Send | OpClass::Recv | OpClass::Probe,
            Payload::P2p { peer, tag, bytes, comm, request, wildcards },
        ) => {
            put_svar(b, encode_peer(*peer));
            put_svar(b, i64::from(*tag));
            put_uvar(b, *bytes);
            put_uvar(b, u64::from(comm.0));
            put_request(b, *request)?;
            b.push(u8::from(wildcards.source) | (u8::from(wildcards.tag) << 1));
        }
        (
            OpClass::SendRecv,
            Payload::SendRecv { dest, send_tag, send_bytes, source, recv_tag, recv_bytes, comm },
        ) => {
            put_svar(b, encode_peer(*dest));
            put_svar(b, i64::from(*send_tag));
            put_uvar(b, *send_bytes);
            put_svar(b, encode_peer(*source));
            put_svar(b, i64::from(*recv_tag));
            put_uvar(b, *recv_bytes);
            put_uvar(b, u64::from(comm.0));
        }
        (OpClass::Completion, Payload::Completion { n_given, completed }) => {
            put_uvar(b, u64::from(*n_given));
            put_uvar(b, completed.len() as u64);
            for c in completed {
                put_request(b, c.request)?;
                match (c.source, c.tag, c.bytes) {
                    (Some(s), Some(t), Some(n)) => {
                        b.push(1);
                        put_uvar(b, u64::from(s.0));
                        put_svar(b, i64::from(t));
                        put_uvar(b, n);
                    }
                    _ => b.push(0),
                }
            }
        }
        (
            OpClass::Collective,
            Payload::Collective {
                comm,
                root,
                send_bytes,
                recv_bytes,
                send_counts,
                recv_counts,
                request,
            },
        ) => {
            put_uvar(b, u64::from(comm.0));
            put_svar(b, root.map_or(-1, |r| i64::from(r.0)));
            put_uvar(b, *send_bytes);
            put_uvar(b, *recv_bytes);
            let mask = u8::from(send_counts.is_some()) | (u8::from(recv_counts.is_some()) << 1);
            b.push(mask);
            for counts in [send_counts, recv_counts].into_iter().flatten() {
                put_uvar(b, counts.len() as u64);
                for c in counts {
                    put_uvar(b, *c);
                }
            }
            put_request(b, *request)?;
        }
        (OpClass::Comm, Payload::Comm { parent, created, color, key, cart }) => {
            put_uvar(b, u64::from(parent.0));
            put_uvar(b, created.map_or(0, |c| u64::from(c.0) + 1));
            match (color, key, cart) {
                (Some(c), Some(k), _) => {
                    b.push(1);
                    put_svar(b, i64::from(*c));
                    put_svar(b, i64::from(*k));
                }
                (_, _, Some(cart)) if cart.dims.len() == cart.periods.len() => {
                    b.push(2);
                    put_uvar(b, cart.dims.len() as u64);
                    for (d, p) in cart.dims.iter().zip(&cart.periods) {
                        put_uvar(b, u64::from(*d));
                        b.push(u8::from(*p));
                    }
                }
                _ => b.push(0),
            }
        }
        _ => return Err(format!("payload {p:?} does not fit operation {op}")),
    }
    Ok(())
}

fn put_uvar(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn put_svar(b: &mut Vec<u8>, v: i64) {
    put_uvar(b, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_uvar(b, s.len() as u64);
    b.extend_from_slice(s.as_bytes());
}

// ---------------------------------------------------------------------------------------------
// Reader

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
