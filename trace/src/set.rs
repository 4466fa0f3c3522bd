//! Opening a whole trace, whatever its format, told by content: a native trace directory
//! (`rank-<k>.mpt` files and `meta.json`, as `mpiskel trace` writes it), a single native rank
//! file, a SimGrid time-independent index file, a single SimGrid action file, a directory
//! holding an index named `trace.txt`, an SST DUMPI `.meta` file, an OTF2 anchor file, or a
//! directory holding one of those.

use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::dumpi;
use crate::error::{Result, TraceError};
use crate::meta::RunMeta;
use crate::model::{Rank, RankTrace};
use crate::native::{self, MAGIC};
use crate::polls::PollFolding;
use crate::ti::{self, TiOptions};

/// The on-disk format a trace was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// mpiskel's native binary format (`trace/FORMAT.md`).
    Native,
    /// SimGrid time-independent actions.
    SimgridTi,
    /// SST DUMPI binary traces.
    Dumpi,
    /// OTF2 traces (Score-P).
    Otf2,
}

/// Options for [`TraceSet::open`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadOptions {
    /// How to time SimGrid time-independent traces.
    pub ti: TiOptions,
}

/// Every rank of one recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSet {
    /// The path the trace was opened from.
    pub path: PathBuf,
    /// Its format.
    pub format: TraceFormat,
    /// One entry per rank, in rank order.
    pub ranks: Vec<RankTrace>,
    /// The run's `meta.json`, for native trace directories that have one.
    pub meta: Option<RunMeta>,
}

impl TraceSet {
    /// Opens the trace at `path`, detecting its format; rank files are read in parallel. The
    /// whole run is checked ([`crate::validate::validate`]): a single rank file of a larger run
    /// is refused.
    pub fn open(path: &Path, opts: &ReadOptions) -> Result<TraceSet> {
        let set = Self::read(path, opts)?;
        crate::validate::validate(&set.path, &set.ranks)?;
        Ok(set)
    }

    /// Opens the trace at `path` as [`TraceSet::open`] does, with every rank's polling loops
    /// folded ([`TraceSet::fold_polls`]); returns what was folded, over all ranks. Native rank
    /// files are folded as they are read ([`native::read_rank_file_folded`]): a trace of tens
    /// of millions of failed polls is never held whole.
    pub fn open_folded(path: &Path, opts: &ReadOptions) -> Result<(TraceSet, PollFolding)> {
        if path.is_dir() && holds_native_ranks(path) {
            let (set, folded) = open_native_dir(path, true)?;
            // Their events were checked as they were read.
            crate::validate::check_run(&set.path, &set.ranks, false)?;
            return Ok((set, folded));
        }
        let mut set = Self::open(path, opts)?;
        let folded = set.fold_polls();
        Ok((set, folded))
    }

    fn read(path: &Path, opts: &ReadOptions) -> Result<TraceSet> {
        let not = |reason: &str| TraceError::NotATrace {
            path: path.to_path_buf(),
            reason: reason.into(),
        };
        let meta = std::fs::metadata(path).map_err(|e| TraceError::io(path, e))?;
        if meta.is_dir() {
            if holds_native_ranks(path) {
                return open_native_dir(path, false).map(|(set, _)| set);
            }
            let index = path.join("trace.txt");
            if index.is_file() {
                return open_ti(&index, opts);
            }
            if let Some(meta) = dumpi_meta_in(path)? {
                return open_dumpi(&meta);
            }
            if let Some(anchor) = crate::otf2::anchor_in(path) {
                return open_otf2(&anchor);
            }
            return Err(not(
                "directory holds neither native rank files (rank-0.mpt …), a SimGrid index \
                 (trace.txt), a DUMPI .meta file nor an OTF2 anchor file (traces.otf2)",
            ));
        }
        let mut head = [0u8; 8];
        let n = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .map_err(|e| TraceError::io(path, e))?;
        if n == 8 && &head == MAGIC {
            let rank = native::read_rank_file(path)?;
            return Ok(TraceSet {
                path: path.to_path_buf(),
                format: TraceFormat::Native,
                ranks: vec![rank],
                meta: None,
            });
        }
        if n >= 6 && &head[2..6] == b"OTF2" {
            return open_otf2(path);
        }
        if n == 8 && u64::from_be_bytes(head) == dumpi::MAGIC {
            return Err(not(
                "a DUMPI rank file: a skeleton needs every rank; give the run's .meta file or the \
                 directory that holds it",
            ));
        }
        if !head[..n].contains(&0) && is_dumpi_meta(path) {
            return open_dumpi(path);
        }
        if let Some(kind) = archive_kind(&head[..n]) {
            return Err(not(&format!(
                "a {kind}-compressed file, not a trace: extract it first (for a tar archive: \
                 tar xf FILE) and give the trace inside"
            )));
        }
        if head[..n].contains(&0) {
            return Err(not("binary file that is not an mpiskel trace (bad magic at byte 0)"));
        }
        open_ti(path, opts)
    }

    /// Folds every rank's polling loops into the blocking completions they stand for
    /// ([`crate::polls`]), then its runs of partial completions into the `MPI_Waitall` they
    /// stand for ([`crate::completions`]); returns what was folded, over all ranks.
    pub fn fold_polls(&mut self) -> crate::polls::PollFolding {
        let mut all = crate::polls::PollFolding::default();
        for r in &mut self.ranks {
            all.add(&crate::polls::fold_polls(r));
            all.add_partial(crate::completions::fold_completions(r));
        }
        all
    }

    /// Puts the collectives that ranks made on the world and its copies in different orders
    /// (threads, each with its copy) in rank 0's order ([`crate::collective_order`]); returns
    /// what moved.
    ///
    /// Where the calls still cannot finish in one thread per rank, the collectives and sends
    /// some rank waits for are made earlier ([`crate::replayable`]), counted in
    /// [`Aligned::made_earlier`](crate::collective_order::Aligned::made_earlier).
    pub fn align_collectives(&mut self) -> crate::collective_order::Aligned {
        let mut aligned = crate::collective_order::align(&mut self.ranks);
        let earlier = crate::replayable::make_replayable(&mut self.ranks);
        if earlier.calls_moved > 0 {
            aligned.calls_moved += earlier.calls_moved;
            aligned.made_earlier = earlier.calls_moved;
            aligned.past_waits = earlier.past_waits;
            aligned.ranks.extend(earlier.ranks);
            aligned.ranks.sort_unstable();
            aligned.ranks.dedup();
        }
        aligned
    }

    /// Removes the point-to-point calls nothing in the trace matches ([`crate::local`]);
    /// returns what was removed, over all ranks.
    pub fn drop_local_calls(&mut self) -> crate::local::LocalCalls {
        crate::local::drop_local_calls(&mut self.ranks)
    }

    /// The stretches between collectives of all ranks that can be cut short
    /// ([`crate::stretch`]); none for a trace that records no call times (SimGrid's
    /// time-independent format).
    pub fn stretches(&self) -> Vec<crate::stretch::Stretch> {
        if self.format == TraceFormat::SimgridTi {
            return Vec::new();
        }
        crate::stretch::find(&self.ranks)
    }

    /// Cuts each of `cuts` (a stretch [`TraceSet::stretches`] found, and the seconds of its span
    /// whose share of each rank's work it keeps; [`crate::stretch::cut_all`]); returns what each
    /// cut did. The calls left without a partner are then removed by
    /// [`TraceSet::drop_local_calls`].
    pub fn cut_stretches(
        &mut self,
        cuts: &[(crate::stretch::Stretch, f64)],
    ) -> Vec<crate::stretch::StretchCut> {
        // All at once: the stretches' event ranges are those of the uncut trace.
        crate::stretch::cut_all(&mut self.ranks, cuts)
    }

    /// Number of ranks.
    pub fn n_ranks(&self) -> usize {
        self.ranks.len()
    }

    /// Recorded application time, seconds: the slowest rank's span from the end of its first
    /// call (`MPI_Init`) to the start of `MPI_Finalize` (or the end of its last call).
    pub fn app_time_s(&self) -> f64 {
        self.ranks.iter().map(RankTrace::app_time_s).fold(0.0, f64::max)
    }
}

fn open_otf2(anchor: &Path) -> Result<TraceSet> {
    let ranks = crate::otf2::read_otf2(anchor)?;
    Ok(TraceSet { path: anchor.to_path_buf(), format: TraceFormat::Otf2, ranks, meta: None })
}

fn open_dumpi(meta: &Path) -> Result<TraceSet> {
    let ranks = dumpi::read_dumpi(meta)?;
    Ok(TraceSet { path: meta.to_path_buf(), format: TraceFormat::Dumpi, ranks, meta: None })
}

/// Whether the small text file at `path` is a DUMPI `.meta` file.
fn is_dumpi_meta(path: &Path) -> bool {
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() < 1 << 16);
    small && std::fs::read_to_string(path).is_ok_and(|t| dumpi::is_meta(&t))
}

/// The one DUMPI `.meta` file in `dir`, if there is one.
fn dumpi_meta_in(dir: &Path) -> Result<Option<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| TraceError::io(dir, e))?;
    let mut metas: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "meta") && is_dumpi_meta(p))
        .collect();
    metas.sort();
    match metas.len() {
        0 => Ok(None),
        1 => Ok(metas.pop()),
        _ => Err(TraceError::NotATrace {
            path: dir.to_path_buf(),
            reason: format!("holds {} DUMPI .meta files: give one of them", metas.len()),
        }),
    }
}

fn open_ti(path: &Path, opts: &ReadOptions) -> Result<TraceSet> {
    let ranks = ti::read_ti(path, &opts.ti)?;
    Ok(TraceSet { path: path.to_path_buf(), format: TraceFormat::SimgridTi, ranks, meta: None })
}

/// Whether directory `dir` holds a native trace (its rank 0's file).
fn holds_native_ranks(dir: &Path) -> bool {
    dir.join(native::rank_file_name(Rank(0))).is_file()
}

/// The native trace in `dir`, its polls folded as each rank is read where `fold`, with what
/// was folded.
fn open_native_dir(dir: &Path, fold: bool) -> Result<(TraceSet, PollFolding)> {
    let first = native::NativeReader::open(&dir.join(native::rank_file_name(Rank(0))))?;
    let n_ranks = first.header().info.n_ranks;
    drop(first);
    crate::progress::start(u64::from(n_ranks));
    let ranks = (0..n_ranks)
        .into_par_iter()
        .map(|r| {
            let file = dir.join(native::rank_file_name(Rank(r)));
            if !file.is_file() {
                return Err(TraceError::NotATrace {
                    path: file,
                    reason: format!("missing: the trace has {n_ranks} ranks"),
                });
            }
            let (t, folded) = if fold {
                native::read_rank_file_folded(&file)?
            } else {
                (native::read_rank_file(&file)?, PollFolding::default())
            };
            crate::progress::rank_read();
            if t.rank != Rank(r) || t.info.n_ranks != n_ranks {
                return Err(TraceError::Corrupt {
                    path: file,
                    rank: Some(t.rank),
                    offset: 0,
                    reason: format!(
                        "header says rank {} of {}, expected rank {r} of {n_ranks}",
                        t.rank, t.info.n_ranks
                    ),
                });
            }
            Ok((t, folded))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut folded = PollFolding::default();
    let ranks = ranks
        .into_iter()
        .map(|(t, f)| {
            folded.add(&f);
            t
        })
        .collect();
    let meta_path = dir.join("meta.json");
    let meta = if meta_path.is_file() { Some(RunMeta::read(&meta_path)?) } else { None };
    Ok((TraceSet { path: dir.to_path_buf(), format: TraceFormat::Native, ranks, meta }, folded))
}

/// The compression a file's first bytes announce (gzip, bzip2, xz, zstd), if any: traces are
/// often shipped compressed, and saying so beats "bad magic".
fn archive_kind(head: &[u8]) -> Option<&'static str> {
    match head {
        [0x1f, 0x8b, ..] => Some("gzip"),
        [b'B', b'Z', b'h', ..] => Some("bzip2"),
        [0xfd, b'7', b'z', b'X', b'Z', 0, ..] => Some("xz"),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Some("zstd"),
        _ => None,
    }
}
