//! The native format's writer: records buffered and written in large blocks, the footer
//! written last so that a file cut short is known as incomplete.

use std::io::{self, Write};
use std::path::Path;

use crate::error::{Result, TraceError};
use crate::model::{
    CommId, Event, Op, OpClass, Payload, Peer, Rank, RankInfo, RankTrace, RequestId, Unrecorded,
    Work,
};

use super::*;

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
