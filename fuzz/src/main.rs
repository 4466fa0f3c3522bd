//! `mpiskel-fuzz`: runs a fuzzing campaign and prints its figures.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Parser;
use mpiskel_fuzz::campaign::{run, Config, Report, Target};

/// Fuzz mpiskel's readers and pipeline: random MPI programs and real traces, mutated, through
/// every stage, checking that each returns a result or an error and never panics, hangs or
/// emits a program that can block.
///
/// Exits with 0 when the campaign found nothing, 1 when it found panics or broken promises
/// (each listed with the seed that makes it again), 3 on a hang.
///
/// Examples:
///   mpiskel-fuzz pipeline --cases 1000000
///   mpiskel-fuzz native --cases 100000 --json
///   mpiskel-fuzz ti --corpus ../shared/fixtures/public/simgrid-ti/ti_traces_32_1.index.txt
///   mpiskel-fuzz dumpi --cases 100000
///   mpiskel-fuzz otf2 --cases 10000
///   mpiskel-fuzz otf2-dump --read-only --cases 10000000
///   mpiskel-fuzz dumpi --read-only --cases 10000000
///   mpiskel-fuzz pipeline --seed 4711 --cases 1 --verbose
#[derive(Debug, Parser)]
#[command(name = "mpiskel-fuzz", version, verbatim_doc_comment)]
struct Args {
    /// What to fuzz: `pipeline` (generated programs mutated as events, through every stage),
    /// `native` (generated programs as native rank files, mutated as bytes), `ti` (real
    /// SimGrid time-independent traces, mutated as text), `dumpi` (real SST DUMPI traces,
    /// mutated as bytes), `otf2` (real OTF2 traces, mutated as bytes, read through libotf2) or
    /// `otf2-dump` (the libotf2 dump program's text of real OTF2 traces, mutated as bytes and
    /// turned into the model in process, as the OTF2 reader does after libotf2).
    #[arg(value_enum)]
    target: Target,
    /// Number of cases.
    #[arg(long, default_value_t = 10_000)]
    cases: u64,
    /// Seed of the first case (case i is made from seed + i alone).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Seconds after which a case counts as hung.
    #[arg(long, default_value_t = 30.0)]
    hang_after: f64,
    /// Real traces for the `ti` target (index files or single action files), the `dumpi`
    /// target (`.meta` files) or the `otf2` and `otf2-dump` targets (anchor files); repeatable. Default: for
    /// `ti` the SimGrid samples and the small NPB traces of `../shared/fixtures` (or
    /// `$MPISKEL_SHARED/fixtures`), for `dumpi` and `otf2` the DUMPI and OTF2 traces there.
    #[arg(long, value_name = "FILE")]
    corpus: Vec<PathBuf>,
    /// Pipeline cases whose seed is a multiple of N also go through the Rust back end, which
    /// takes about half of a case's time (1: every case; the reader targets render both
    /// back ends always).
    #[arg(long, value_name = "N", default_value_t = 1)]
    rust_every: u64,
    /// Print every case's shape, mutations and outcome.
    #[arg(long)]
    verbose: bool,
    /// Reader targets (native, ti, dumpi, otf2, otf2-dump): read each mutated trace as `mpiskel build`
    /// opens it (whole-run check, poll folding, local calls) and stop there: the readers alone,
    /// at many more cases per second than through the whole pipeline.
    #[arg(long)]
    read_only: bool,
    /// Write the input of case `--seed` into DIR instead of running a campaign: for `pipeline`
    /// a native trace directory, for `ti`, `dumpi` and `otf2` the mutated trace's files (to run
    /// `mpiskel` on it).
    #[arg(long, value_name = "DIR")]
    write: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn fixtures() -> PathBuf {
    let shared = std::env::var_os("MPISKEL_SHARED").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("..").join("shared")
    });
    shared.join("fixtures")
}

fn default_dumpi_corpus() -> Vec<PathBuf> {
    let d = fixtures().join("public").join("dumpi");
    let mut out = vec![
        d.join("sst-dumpi-testtrace").join("testtrace.meta"),
        d.join("sst-macro-testbgp").join("testbgp.meta"),
    ];
    out.retain(|p| p.is_file());
    out
}

fn default_otf2_corpus() -> Vec<PathBuf> {
    let d = fixtures().join("public").join("otf2");
    let mut out = vec![
        d.join("pipit-ping-pong").join("traces.otf2"),
        d.join("sst-macro-mpi-coverage").join("traces.otf2"),
    ];
    out.retain(|p| p.is_file());
    out
}

fn default_corpus() -> Vec<PathBuf> {
    let f = fixtures();
    let ti = f.join("public").join("simgrid-ti");
    let mut out = vec![ti.join("ti_traces_32_1.index.txt")];
    if let Ok(rd) = std::fs::read_dir(ti.join("replay-examples")) {
        let mut files: Vec<PathBuf> = rd.filter_map(|e| Some(e.ok()?.path())).collect();
        files.sort();
        out.extend(files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "txt")));
    }
    for npb in ["ep.W.16", "ft.W.16", "is.W.16", "bt.S.4", "lu.S.4"] {
        out.push(f.join("npb").join(npb).join("trace.txt"));
    }
    out.retain(|p| p.is_file());
    out
}

fn print(r: &Report) {
    println!(
        "{:?}: {} cases ({} mutated) in {:.1} s, {:.0} cases/s",
        r.target,
        r.cases,
        r.mutated,
        r.seconds,
        r.cases as f64 / r.seconds.max(1e-9)
    );
    let refused: Vec<String> = r.refused.iter().map(|(k, v)| format!("{v} at {k}")).collect();
    println!(
        "  built {}; read (read-only) {}; refused {}",
        r.built,
        r.read,
        if refused.is_empty() { "none".into() } else { refused.join(", ") }
    );
    println!(
        "  panics {}, broken promises {}, hangs {}; slowest case {:.1} ms (seed {}); largest input {} B; peak memory {:.0} MB",
        r.panic_count,
        r.violation_count,
        r.hangs,
        r.slowest_ms.0,
        r.slowest_ms.1,
        r.largest_input,
        r.peak_rss as f64 / 1e6
    );
    if r.correct_built > 0 {
        println!(
            "  correct programs built {}: skeleton median {:.3} of the run; {} over a twelfth (longest: seed {})",
            r.correct_built, r.correct_median_length, r.correct_over_target.0, r.correct_over_target.1
        );
    }
    for (place, f) in &r.panics {
        println!("  panic at {place} (seed {}): {}", f.seed, f.what);
    }
    for v in &r.violations {
        println!("  broken promise (seed {}): {}\n    case: {}", v.seed, v.what, v.case);
    }
}

fn main() -> Result<ExitCode> {
    let a = Args::parse();
    anyhow::ensure!(
        a.hang_after > 0.0 && a.hang_after.is_finite(),
        "--hang-after must be a positive number"
    );
    let corpus = match a.target {
        Target::Ti if a.corpus.is_empty() => default_corpus(),
        Target::Dumpi if a.corpus.is_empty() => default_dumpi_corpus(),
        Target::Otf2 | Target::Otf2Dump if a.corpus.is_empty() => default_otf2_corpus(),
        _ => a.corpus.clone(),
    };
    if let Some(dir) = &a.write {
        if matches!(a.target, Target::Ti | Target::Dumpi | Target::Otf2) {
            let (open, case) =
                mpiskel_fuzz::campaign::write_corpus_case(a.target, a.seed, &corpus, dir)?;
            println!("{}: {case}", open.display());
            return Ok(ExitCode::SUCCESS);
        }
        let (ranks, case, _) = mpiskel_fuzz::campaign::pipeline_case(a.seed);
        std::fs::create_dir_all(dir)?;
        mpiskel_fuzz::campaign::write_native_dir(dir, &ranks)?;
        println!("{}: {case}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let cfg = Config {
        target: a.target,
        cases: a.cases,
        seed: a.seed,
        jobs: a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        hang_after: Duration::from_secs_f64(a.hang_after),
        corpus,
        rust_every: a.rust_every,
        verbose: a.verbose,
        read_only: a.read_only,
    };
    let r = run(&cfg)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print(&r);
    }
    Ok(if r.clean() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
