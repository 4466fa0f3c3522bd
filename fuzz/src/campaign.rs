//! Campaigns: many cases of one target, on every core, with panics caught, hangs watched and
//! the figures BENCHMARKS.md records.
//!
//! Five targets:
//! - **pipeline**: a random program ([`crate::programs`]), mutated at the event level in most
//!   cases ([`crate::mutate::events`]), through every stage ([`crate::pipeline::run`]);
//! - **native**: the same programs written in the native format, a rank file's bytes mutated
//!   ([`crate::mutate::bytes`]) — sometimes a file missing or a single rank file given — and
//!   read as `mpiskel` reads a trace path; what the reader accepts goes on through the pipeline;
//! - **ti**: SimGrid time-independent traces from a corpus of real files (an index and its
//!   action files, or one action file with every rank), mutated and read the same way;
//! - **dumpi**: SST DUMPI traces from a corpus of real ones (a `.meta` file and its rank
//!   files), a file's bytes mutated and read the same way;
//! - **otf2**: OTF2 traces from a corpus of real ones (the anchor, global and per-location
//!   definitions and events), one file's bytes mutated and read through libotf2 the same way;
//! - **otf2-dump**: the second half of the OTF2 reader alone, in process: the text the libotf2
//!   dump program writes for each real OTF2 trace of the corpus (made once, at the start),
//!   mutated as bytes and turned into the model as `mpiskel` turns the dump program's text
//!   ([`mpiskel_trace::otf2::read_dump`]), then read and built the same way. libotf2 runs in
//!   a process of its own in the reader, so this half is the only OTF2 code in `mpiskel`'s
//!   process; at about a hundred cases a second through libotf2, it is how a campaign reaches
//!   millions of cases.
//!
//! Case `i` of a campaign started at seed `s` is made from seed `s + i` alone, so
//! `mpiskel-fuzz TARGET --seed S --cases 1 --verbose` makes any case again.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mpiskel_trace::{NativeWriter, RankTrace, ReadOptions, TraceSet};
use serde::Serialize;

use crate::mutate;
use crate::pipeline::{self, Outcome, Violation};
use crate::programs::program;
use crate::rng::Rng;

/// What a campaign exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Generated programs, mutated as events, through every stage.
    Pipeline,
    /// Generated programs written as native rank files, mutated as bytes, read and built.
    Native,
    /// Real SimGrid time-independent traces, mutated as text, read and built.
    Ti,
    /// Real SST DUMPI traces, mutated as bytes, read and built.
    Dumpi,
    /// Real OTF2 traces, mutated as bytes, read and built.
    Otf2,
    /// The libotf2 dump program's text of real OTF2 traces, mutated as bytes, turned into
    /// the model as the OTF2 reader does, read and built.
    Otf2Dump,
}

/// How to run a campaign.
#[derive(Debug, Clone)]
pub struct Config {
    /// What to exercise.
    pub target: Target,
    /// Number of cases.
    pub cases: u64,
    /// Seed of case 0.
    pub seed: u64,
    /// Worker threads.
    pub jobs: usize,
    /// A case running longer than this is a hang: the campaign stops and names it.
    pub hang_after: Duration,
    /// The real traces the `ti` target mutates (index files or single action files), the
    /// `dumpi` target (`.meta` files) or the `otf2` target (anchor files).
    pub corpus: Vec<PathBuf>,
    /// Pipeline cases whose seed is a multiple of this also go through the Rust back end (1:
    /// every case; 0: none); the reader targets always render both back ends.
    pub rust_every: u64,
    /// Print each case's shape, mutations and outcome.
    pub verbose: bool,
    /// Reader targets: read each mutated trace (and check the whole run, fold polls and find
    /// local calls, as `mpiskel build` does on opening it) and stop there, without the rest of
    /// the pipeline: the readers alone, at many more cases per second.
    pub read_only: bool,
}

/// One broken promise or panic, with the seed that makes it again.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Seed of the case.
    pub seed: u64,
    /// The program's shape and the mutations applied.
    pub case: String,
    /// The panic message and place, or the violation.
    pub what: String,
}

/// The figures of a campaign.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// What was exercised.
    pub target: Target,
    /// Cases run.
    pub cases: u64,
    /// Seed of case 0.
    pub seed: u64,
    /// Cases that were mutated.
    pub mutated: u64,
    /// Cases that gave a checked skeleton in C and Rust.
    pub built: u64,
    /// Cases the reader accepted (`--read-only` campaigns, which stop there).
    #[serde(default)]
    pub read: u64,
    /// Correct programs (unmutated, pipeline target) that gave a skeleton.
    pub correct_built: u64,
    /// Of those, the ones whose skeleton is longer than the default target allows (a twelfth
    /// of the application's time, 10 % over counted as within), with the seed of the longest.
    pub correct_over_target: (u64, u64),
    /// Median length of their skeletons, as a share of the application's time.
    pub correct_median_length: f64,
    /// Cases refused, by stage (`read`, `program`, `check`).
    pub refused: BTreeMap<String, u64>,
    /// Panics, by place; the first case of each.
    pub panics: BTreeMap<String, Failure>,
    /// Total panics.
    pub panic_count: u64,
    /// Broken promises (the first 20).
    pub violations: Vec<Failure>,
    /// Total broken promises.
    pub violation_count: u64,
    /// Cases that ran past the hang limit: always 0 in a report, since the campaign stops the
    /// process at the first one, naming it.
    pub hangs: u64,
    /// Wall-clock seconds of the campaign.
    pub seconds: f64,
    /// Lengths of the correct programs' skeletons (for the median).
    #[serde(skip)]
    lengths: Vec<f32>,
    /// The longest correct program's skeleton: its length and seed.
    #[serde(skip)]
    longest: (f64, u64),
    /// The slowest case, milliseconds, and its seed.
    pub slowest_ms: (f64, u64),
    /// Largest input of a case, bytes.
    pub largest_input: u64,
    /// Peak resident memory of the process over the campaign, bytes (`VmHWM`).
    pub peak_rss: u64,
}

impl Report {
    /// Whether the campaign found nothing.
    pub fn clean(&self) -> bool {
        self.panic_count == 0 && self.violation_count == 0 && self.hangs == 0
    }
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Whether panics are reported with the places in mpiskel's code they passed (`--verbose`).
static BACKTRACES: AtomicBool = AtomicBool::new(false);

/// The last panic of any thread: a panic inside a rayon worker of a stage reaches the case's
/// thread as a panic of its own, without the hook having run there.
static ANY_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// What one case did.
struct CaseResult {
    case: String,
    mutated: bool,
    input_bytes: u64,
    result: Result<Outcome, Violation>,
}

/// Runs a campaign.
pub fn run(cfg: &Config) -> anyhow::Result<Report> {
    let corpus = match cfg.target {
        Target::Ti => load_corpus(&cfg.corpus)?,
        Target::Dumpi => load_dumpi_corpus(&cfg.corpus)?,
        Target::Otf2 => load_otf2_corpus(&cfg.corpus)?,
        Target::Otf2Dump => load_otf2_dump_corpus(&cfg.corpus)?,
        _ => Vec::new(),
    };
    BACKTRACES.store(cfg.verbose, Ordering::Relaxed);
    catch_panics();
    let report = Mutex::new(Report {
        target: cfg.target,
        cases: 0,
        seed: cfg.seed,
        mutated: 0,
        built: 0,
        read: 0,
        correct_built: 0,
        correct_over_target: (0, cfg.seed),
        correct_median_length: 0.0,
        lengths: Vec::new(),
        longest: (0.0, cfg.seed),
        refused: BTreeMap::new(),
        panics: BTreeMap::new(),
        panic_count: 0,
        violations: Vec::new(),
        violation_count: 0,
        hangs: 0,
        seconds: 0.0,
        slowest_ms: (0.0, cfg.seed),
        largest_input: 0,
        peak_rss: 0,
    });
    let next = AtomicU64::new(0);
    let started = Instant::now();
    let jobs = cfg.jobs.max(1);
    // Per worker: the seed it runs and when it started it (ms since the campaign started + 1;
    // 0 when idle).
    let running: Vec<(AtomicU64, AtomicU64)> =
        (0..jobs).map(|_| (AtomicU64::new(0), AtomicU64::new(0))).collect();
    std::thread::scope(|s| {
        for w in 0..jobs {
            let (next, report, running, corpus) = (&next, &report, &running, &corpus);
            s.spawn(move || {
                // In memory where the machine has a tmpfs (each case writes its files).
                let shm = Path::new("/dev/shm");
                let builder = || tempfile::Builder::new().prefix("mpiskel-fuzz").to_owned();
                let dir = shm
                    .is_dir()
                    .then(|| builder().tempdir_in(shm).ok())
                    .flatten()
                    .or_else(|| builder().tempdir().ok());
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= cfg.cases {
                        break;
                    }
                    let seed = cfg.seed.wrapping_add(i);
                    let t = Instant::now();
                    running[w].0.store(seed, Ordering::Relaxed);
                    running[w].1.store(started.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
                    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                        let rust = cfg.rust_every > 0 && seed % cfg.rust_every == 0;
                        let modes = (rust, cfg.read_only);
                        one(cfg.target, seed, modes, dir.as_ref().map(|d| d.path()), corpus)
                    }));
                    running[w].1.store(0, Ordering::Relaxed);
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    let mut r = report.lock().unwrap_or_else(|e| e.into_inner());
                    r.cases += 1;
                    if ms > r.slowest_ms.0 {
                        r.slowest_ms = (ms, seed);
                    }
                    match outcome {
                        Ok(c) => record(&mut r, seed, c, cfg.verbose),
                        Err(_) => {
                            let what = LAST_PANIC
                                .with(|p| p.borrow_mut().take())
                                .or_else(|| ANY_PANIC.lock().ok()?.take())
                                .unwrap_or_default();
                            let place = what.split('\t').next().unwrap_or_default().to_owned();
                            if cfg.verbose {
                                println!("{seed}: PANIC {what}");
                            }
                            r.panic_count += 1;
                            r.panics.entry(place).or_insert(Failure {
                                seed,
                                case: String::new(),
                                what: what.replace('\t', ": "),
                            });
                        }
                    }
                }
            });
        }
        // The watchdog.
        s.spawn(|| {
            loop {
                std::thread::sleep(Duration::from_millis(200));
                let now = started.elapsed().as_millis() as u64 + 1;
                for (seed, since) in &running {
                    let since = since.load(Ordering::Relaxed);
                    if since > 0 && now - since > cfg.hang_after.as_millis() as u64 {
                        // A hung case never returns: name it and stop the process.
                        let seed = seed.load(Ordering::Relaxed);
                        eprintln!(
                            "hang: {:?} case {seed} ran past {:?}; run it again with \
                             `mpiskel-fuzz {:?} --seed {seed} --cases 1 --verbose`",
                            cfg.target, cfg.hang_after, cfg.target
                        );
                        std::process::exit(3);
                    }
                }
                if running.iter().all(|(_, t)| t.load(Ordering::Relaxed) == 0)
                    && next.load(Ordering::Relaxed) >= cfg.cases
                {
                    break;
                }
            }
        });
    });
    let _ = panic::take_hook();
    let mut r = report.into_inner().unwrap_or_else(|e| e.into_inner());
    r.seconds = started.elapsed().as_secs_f64();
    r.correct_over_target.1 = r.longest.1;
    r.lengths.sort_by(f32::total_cmp);
    r.correct_median_length = r.lengths.get(r.lengths.len() / 2).map_or(0.0, |&x| f64::from(x));
    r.peak_rss = peak_rss();
    Ok(r)
}

/// Panics are reported by the campaign, with their place (and with `BACKTRACES` the frames of
/// mpiskel's own code), instead of printed.
fn catch_panics() {
    panic::set_hook(Box::new(|info| {
        let place =
            info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let mut what = format!("{place}\t{msg}");
        if BACKTRACES.load(Ordering::Relaxed) {
            // The frames of mpiskel's own code, innermost first.
            let bt = std::backtrace::Backtrace::force_capture().to_string();
            let ours: Vec<&str> = bt
                .lines()
                .map(str::trim)
                .filter(|l| {
                    l.starts_with("at ") && !l.contains("/rustc/") && !l.contains("/.cargo/")
                })
                .take(6)
                .collect();
            what.push_str(&format!(" [{}]", ours.join("; ")));
        }
        *ANY_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(what.clone());
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(what));
    }));
}

fn record(r: &mut Report, seed: u64, c: CaseResult, verbose: bool) {
    r.mutated += u64::from(c.mutated);
    r.largest_input = r.largest_input.max(c.input_bytes);
    if verbose {
        println!("{seed}: {}\n  -> {:?}", c.case, c.result);
    }
    match c.result {
        Ok(Outcome::Built { length, .. }) => {
            r.built += 1;
            if !c.mutated && r.target == Target::Pipeline {
                r.correct_built += 1;
                r.lengths.push(length as f32);
                if length > r.longest.0 {
                    r.longest = (length, seed);
                }
                if length > 1.1 / 12.0 {
                    r.correct_over_target.0 += 1;
                }
            }
        }
        Ok(Outcome::Read { .. }) => r.read += 1,
        Ok(Outcome::Refused { stage, .. }) => *r.refused.entry(stage.to_owned()).or_default() += 1,
        Err(v) => {
            r.violation_count += 1;
            if r.violations.len() < 20 {
                r.violations.push(Failure { seed, case: c.case, what: v.0 });
            }
        }
    }
}

/// The traces of case `seed` of the pipeline target, its description, and whether it was
/// mutated.
pub fn pipeline_case(seed: u64) -> (Vec<RankTrace>, String, bool) {
    let mut rng = Rng::new(seed);
    let g = program(&mut rng);
    let mut ranks = g.ranks;
    let mutated = rng.chance(0.7);
    let mut case = g.shape;
    if mutated {
        let m = mutate::events(&mut rng, &mut ranks, 4);
        case = format!("{case}; mutated: {}", m.join(", "));
        if rng.chance(0.8) {
            mutate::retime(&mut ranks);
            case.push_str(", times set in order");
        }
    }
    (ranks, case, mutated)
}

/// Writes `ranks` as a native trace directory `dir` (which must exist).
pub fn write_native_dir(dir: &Path, ranks: &[RankTrace]) -> std::io::Result<()> {
    for t in ranks {
        std::fs::write(dir.join(mpiskel_trace::native::rank_file_name(t.rank)), write_native(t)?)?;
    }
    Ok(())
}

/// One case of `target` from `seed`.
fn one(
    target: Target,
    seed: u64,
    (rust, read_only): (bool, bool),
    dir: Option<&Path>,
    corpus: &[Corpus],
) -> CaseResult {
    match target {
        Target::Pipeline => {
            let (ranks, case, mutated) = pipeline_case(seed);
            let input_bytes = ranks.iter().map(|t| t.events.len() as u64 * 48).sum();
            let result = pipeline::run(Path::new("generated"), ranks, !mutated, rust);
            CaseResult { case, mutated, input_bytes, result }
        }
        Target::Native => native_case(&mut Rng::new(seed), dir, read_only),
        Target::Ti | Target::Dumpi | Target::Otf2 => {
            corpus_case(&mut Rng::new(seed), dir, corpus, read_only)
        }
        Target::Otf2Dump => dump_case(&mut Rng::new(seed), corpus, read_only),
    }
}

/// An `otf2-dump` case: a corpus dump's bytes mutated, turned into the model as the OTF2 reader
/// turns the dump program's text, then read (and built) as a trace.
fn dump_case(rng: &mut Rng, corpus: &[Corpus], read_only: bool) -> CaseResult {
    let c = rng.pick(corpus);
    let other = &rng.pick(corpus).files[0].1;
    let mut b = c.files[0].1.clone();
    let m = mutate::bytes(rng, &mut b, other, 6);
    let case = format!("{}: {}", c.name, m.join(", "));
    let input_bytes = b.len() as u64;
    let anchor = &c.open;
    let result = (|| {
        // The reader reads the dump as UTF-8 text: other bytes are refused there.
        let Ok(text) = std::str::from_utf8(&b) else {
            return Ok(Outcome::Refused { stage: "read", reason: "not UTF-8".into() });
        };
        let ranks = match mpiskel_trace::otf2::read_dump(anchor, text) {
            Ok(r) => r,
            Err(e) => return refused_at_read(&e),
        };
        if let Err(e) = mpiskel_trace::validate::validate(anchor, &ranks) {
            return refused_at_read(&e);
        }
        let mut set = TraceSet {
            path: anchor.clone(),
            format: mpiskel_trace::TraceFormat::Otf2,
            ranks,
            meta: None,
        };
        if read_only {
            return Ok(opened(set));
        }
        set.fold_polls();
        pipeline::built(&set, false, true)
    })();
    CaseResult { case, mutated: true, input_bytes, result }
}

/// The dump program's text of every OTF2 trace of `paths` (anchor files), made once.
fn load_otf2_dump_corpus(paths: &[PathBuf]) -> anyhow::Result<Vec<Corpus>> {
    let mut out = Vec::new();
    for p in paths {
        let text = mpiskel_trace::otf2::dump_text(p)
            .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        let files = vec![(PathBuf::from("dump.txt"), text.into_bytes())];
        out.push(Corpus { name: p.display().to_string(), files, open: p.clone() });
    }
    anyhow::ensure!(
        !out.is_empty(),
        "the otf2-dump target needs a corpus of real OTF2 traces (--corpus)"
    );
    Ok(out)
}

fn io_violation(what: &str, e: impl std::fmt::Display) -> Violation {
    Violation(format!("the campaign could not {what}: {e}"))
}

fn write_native(t: &RankTrace) -> std::io::Result<Vec<u8>> {
    let mut w = NativeWriter::new(Vec::new(), t.rank, &t.info)?;
    for (id, members) in &t.comms {
        if id.0 > 1 {
            w.comm(*id, members)?;
        }
    }
    for e in &t.events {
        w.event(e)?;
    }
    w.finish()
}

fn native_case(rng: &mut Rng, dir: Option<&Path>, read_only: bool) -> CaseResult {
    let g = program(rng);
    let mut case = g.shape.clone();
    let result = (|| {
        let dir = dir.ok_or_else(|| io_violation("make a scratch folder", "none"))?;
        clear(dir).map_err(|e| io_violation("clear its scratch folder", e))?;
        let mut files = Vec::new();
        for t in &g.ranks {
            files.push(write_native(t).map_err(|e| io_violation("write a generated trace", e))?);
        }
        let k = rng.below(files.len() as u64) as usize;
        let other = files[(k + 1) % files.len()].clone();
        let m = mutate::bytes(rng, &mut files[k], &other, 6);
        case = format!("{case}; rank {k}: {}", m.join(", "));
        let mut missing = None;
        if files.len() > 1 && rng.chance(0.05) {
            missing = Some(rng.below(files.len() as u64) as usize);
            case.push_str("; a rank file missing");
        }
        for (r, b) in files.iter().enumerate() {
            if Some(r) != missing {
                let name = mpiskel_trace::native::rank_file_name(mpiskel_trace::Rank(r as u32));
                std::fs::write(dir.join(name), b)
                    .map_err(|e| io_violation("write a rank file", e))?;
            }
        }
        let path = if rng.chance(0.1) {
            case.push_str("; one rank file given");
            dir.join(mpiskel_trace::native::rank_file_name(mpiskel_trace::Rank(k as u32)))
        } else {
            dir.to_path_buf()
        };
        if read_only {
            read(&path)
        } else {
            read_and_build(&path, false)
        }
    })();
    let input_bytes = g.ranks.iter().map(|t| t.events.len() as u64 * 16).sum();
    CaseResult { case, mutated: true, input_bytes, result }
}

/// Opens `path` as `mpiskel build` does (the whole-run check, poll folding, local calls) and
/// stops there.
fn read(path: &Path) -> Result<Outcome, Violation> {
    match TraceSet::open(path, &ReadOptions::default()) {
        Ok(set) => Ok(opened(set)),
        Err(e) => refused_at_read(&e),
    }
}

/// What `mpiskel build` does to a trace it opened before anything else (poll folding, local
/// calls), and the events left.
fn opened(mut set: TraceSet) -> Outcome {
    set.fold_polls();
    set.drop_local_calls();
    let events = set.ranks.iter().map(|r| r.events.len() as u64).sum();
    Outcome::Read { events }
}

/// A reader's refusal; a message too long to read is a broken promise.
fn refused_at_read(e: &mpiskel_trace::TraceError) -> Result<Outcome, Violation> {
    let msg = e.to_string();
    if msg.len() > 2_000 {
        return Err(Violation(format!("an error message of {} bytes", msg.len())));
    }
    Ok(Outcome::Refused { stage: "read", reason: msg })
}

/// Opens `path` as `mpiskel build` does; what the reader accepts goes through the pipeline
/// (`correct`: as a correct program, which must give a skeleton).
pub fn read_and_build(path: &Path, correct: bool) -> Result<Outcome, Violation> {
    let mut set = match TraceSet::open(path, &ReadOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            let refusal = refused_at_read(&e)?;
            if correct {
                return Err(Violation(format!("a correct program was refused at read: {e}")));
            }
            return Ok(refusal);
        }
    };
    set.fold_polls();
    pipeline::built(&set, correct, true)
}

/// A real trace: its files (path relative to the trace's folder, bytes) and the file to open.
#[derive(Debug)]
struct Corpus {
    name: String,
    files: Vec<(PathBuf, Vec<u8>)>,
    open: PathBuf,
}

/// Reads every trace of `paths` (an index file and the action files it names, or one action
/// file) into memory.
fn load_corpus(paths: &[PathBuf]) -> anyhow::Result<Vec<Corpus>> {
    let mut out = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        let base = p.parent().unwrap_or(Path::new("."));
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
        let open = PathBuf::from(p.file_name().unwrap_or_default());
        let mut files = vec![(open.clone(), text.clone().into_bytes())];
        if !mpiskel_trace::ti::is_action_line(first) {
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let bytes = std::fs::read(base.join(line))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", base.join(line).display()))?;
                files.push((PathBuf::from(line), bytes));
            }
        }
        out.push(Corpus { name: p.display().to_string(), files, open });
    }
    anyhow::ensure!(!out.is_empty(), "the ti target needs a corpus of real traces (--corpus)");
    Ok(out)
}

/// Reads every DUMPI trace of `paths` (`.meta` files and the rank files they name) into memory.
fn load_dumpi_corpus(paths: &[PathBuf]) -> anyhow::Result<Vec<Corpus>> {
    let mut out = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        let value = |key: &str| {
            text.lines().find_map(|l| l.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
        };
        let n: u32 = value("numprocs").and_then(|v| v.trim().parse().ok()).unwrap_or(0);
        let prefix = value("fileprefix").unwrap_or_default().trim();
        anyhow::ensure!(n > 0 && !prefix.is_empty(), "{}: not a DUMPI .meta file", p.display());
        let base = p.parent().unwrap_or(Path::new("."));
        let open = PathBuf::from(p.file_name().unwrap_or_default());
        let mut files = vec![(open.clone(), text.clone().into_bytes())];
        for r in 0..n {
            let name = mpiskel_trace::dumpi::rank_file_name(prefix, r);
            let bytes = std::fs::read(base.join(&name))
                .map_err(|e| anyhow::anyhow!("{}: {e}", base.join(&name).display()))?;
            files.push((PathBuf::from(name), bytes));
        }
        out.push(Corpus { name: p.display().to_string(), files, open });
    }
    anyhow::ensure!(!out.is_empty(), "the dumpi target needs a corpus of real traces (--corpus)");
    Ok(out)
}

/// Reads every OTF2 trace of `paths` (anchor files, and the definition and event files beside
/// them) into memory.
fn load_otf2_corpus(paths: &[PathBuf]) -> anyhow::Result<Vec<Corpus>> {
    let mut out = Vec::new();
    for p in paths {
        let base = p.parent().unwrap_or(Path::new("."));
        let open = PathBuf::from(p.file_name().unwrap_or_default());
        let mut files = Vec::new();
        let mut dirs = vec![PathBuf::new()];
        while let Some(rel) = dirs.pop() {
            let rd = std::fs::read_dir(base.join(&rel))
                .map_err(|e| anyhow::anyhow!("{}: {e}", base.join(&rel).display()))?;
            let mut entries: Vec<PathBuf> = rd.filter_map(|e| Some(e.ok()?.path())).collect();
            entries.sort();
            for e in entries {
                let name = rel.join(e.file_name().unwrap_or_default());
                if e.is_dir() {
                    dirs.push(name);
                } else if e.extension().is_some_and(|x| x == "otf2" || x == "def" || x == "evt") {
                    let bytes = std::fs::read(&e)
                        .map_err(|err| anyhow::anyhow!("{}: {err}", e.display()))?;
                    files.push((name, bytes));
                }
            }
        }
        anyhow::ensure!(files.iter().any(|(f, _)| *f == open), "{}: not found", p.display());
        out.push(Corpus { name: p.display().to_string(), files, open });
    }
    anyhow::ensure!(!out.is_empty(), "the otf2 target needs a corpus of real traces (--corpus)");
    Ok(out)
}

/// A real trace of the corpus, one of its files' bytes mutated, read and built.
fn corpus_case(
    rng: &mut Rng,
    dir: Option<&Path>,
    corpus: &[Corpus],
    read_only: bool,
) -> CaseResult {
    let c = rng.pick(corpus);
    let mut case = c.name.clone();
    let mut input_bytes = 0;
    let result = (|| {
        let dir = dir.ok_or_else(|| io_violation("make a scratch folder", "none"))?;
        let (what, bytes) = write_mutated(rng, c, dir)?;
        case = format!("{case}; {what}");
        input_bytes = bytes;
        if read_only {
            read(&dir.join(&c.open))
        } else {
            read_and_build(&dir.join(&c.open), false)
        }
    })();
    CaseResult { case, mutated: true, input_bytes, result }
}

/// Writes trace `c` into `dir` (emptied first) with one of its files' bytes mutated; returns
/// the mutations and the bytes written.
fn write_mutated(rng: &mut Rng, c: &Corpus, dir: &Path) -> Result<(String, u64), Violation> {
    let k = rng.below(c.files.len() as u64) as usize;
    let other = &c.files[rng.below(c.files.len() as u64) as usize].1;
    let mut b = c.files[k].1.clone();
    let m = mutate::bytes(rng, &mut b, other, 6);
    let what = format!("{}: {}", c.files[k].0.display(), m.join(", "));
    let input_bytes = c.files.iter().map(|f| f.1.len() as u64).sum::<u64>() + b.len() as u64
        - c.files[k].1.len() as u64;
    clear(dir).map_err(|e| io_violation("clear its scratch folder", e))?;
    for (i, (rel, bytes)) in c.files.iter().enumerate() {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_violation("make a folder", e))?;
        }
        let bytes = if i == k { &b } else { bytes };
        std::fs::write(&path, bytes).map_err(|e| io_violation("write a trace file", e))?;
    }
    Ok((what, input_bytes))
}

/// Writes the input of case `seed` of a reader target over the real traces `corpus` (`.meta`,
/// index or anchor files, as for a campaign) into `dir`, to reproduce it outside the campaign;
/// returns the file to open and what was mutated.
pub fn write_corpus_case(
    target: Target,
    seed: u64,
    corpus: &[PathBuf],
    dir: &Path,
) -> anyhow::Result<(PathBuf, String)> {
    let corpus = match target {
        Target::Ti => load_corpus(corpus)?,
        Target::Dumpi => load_dumpi_corpus(corpus)?,
        Target::Otf2 => load_otf2_corpus(corpus)?,
        Target::Otf2Dump => {
            anyhow::bail!("otf2-dump cases are dumps, not trace files: run the case with --verbose")
        }
        Target::Pipeline | Target::Native => anyhow::bail!("{target:?} cases are not real traces"),
    };
    let mut rng = Rng::new(seed);
    let c = rng.pick(&corpus);
    std::fs::create_dir_all(dir)?;
    let (what, _) = write_mutated(&mut rng, c, dir).map_err(|v| anyhow::anyhow!("{v}"))?;
    Ok((dir.join(&c.open), format!("{}; {what}", c.name)))
}

fn clear(dir: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            std::fs::remove_dir_all(&p)?;
        } else {
            std::fs::remove_file(&p)?;
        }
    }
    Ok(())
}

/// The process's peak resident memory in bytes (`VmHWM` of `/proc/self/status`; 0 elsewhere).
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}
