//! The native trace format: one binary file per rank, written by the PMPI tracer (C) and by
//! [`NativeWriter`], read by [`NativeReader`]. The layout is specified in `trace/FORMAT.md`;
//! the constants here and in `trace/tracer/mpiskel_tracer.c` must agree with it.
//!
//! Both sides stream: the writer buffers records and writes them in large blocks, the reader
//! decodes one event at a time from a buffered source and never holds the file in memory.

use crate::model::Rank;

mod read;
mod write;

pub use read::*;
pub use write::*;

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
