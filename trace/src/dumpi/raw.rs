//! A DUMPI rank file as read, before its handles are translated: its records, with their
//! arguments as decoded ([`super::calls`]), and the rank's call counts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::calls::Args;
use crate::model::Rank;

/// One record as read, before handles are translated.
#[derive(Debug, Clone)]
pub(super) struct Record {
    pub(super) label: u16,
    /// Byte offset of its label in the file.
    pub(super) offset: u64,
    /// Wall-clock entry and exit, nanoseconds since the rank's first record began.
    pub(super) enter_ns: u64,
    pub(super) exit_ns: u64,
    /// Processor time at entry and exit, nanoseconds, where recorded.
    pub(super) cpu: Option<(u64, u64)>,
    pub(super) args: Args,
}

/// One rank file, read.
#[derive(Debug)]
pub(super) struct RawRank {
    pub(super) path: PathBuf,
    pub(super) rank: Rank,
    pub(super) host: Option<String>,
    pub(super) start_unix_ns: Option<u64>,
    pub(super) records: Vec<Record>,
    pub(super) counts: BTreeMap<String, u64>,
}
