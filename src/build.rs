//! `mpiskel build`: trace → logical trace → loop nests → checked, scaled program → skeleton
//! folder.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use mpiskel_make::build::{build as build_folder, BuildOptions};

use crate::progress::Stages;

/// Build the performance skeleton of a traced application.
///
/// Runs the whole pipeline: reads the trace, finds the topology and the process classes
/// (`mpiskel logicalize`), the loop nest of every class (`mpiskel compress`), builds one SPMD
/// program, cuts its main loop so that it runs about --target-time, executes every rank's
/// program abstractly to prove it cannot deadlock, and writes the skeleton folder. Still over
/// the target with long runs of calls that fold into no loop between two collectives of all
/// ranks (stretches), it makes the skeleton again from the trace with those stretches cut:
/// each rank keeps its first calls, as large a share of its own work in the stretch (a call and
/// the failed polls folded into it) as the target leaves, and the part kept is timed and scaled
/// to the whole stretch.
///
///   skeleton.c, mpiskel_rt*.{c,h}            the program and its runtime
///   Makefile                                  make (MPICC=...), make smpi (SimGrid)
///   run.sh, job.slurm                         run with mpirun or under Slurm
///   README.md                                 for whoever runs it elsewhere
///   skeleton.json                             provenance: trace, topology, loop nests,
///                                             matching, scaling, the program itself
///
/// With --lang rust, a Cargo project making the same MPI calls, with the mpi crate (rsmpi):
///
///   src/main.rs, src/rt/                      the program and its runtime
///   Cargo.toml, Cargo.lock                    the crates, pinned to the versions tested
///   run.sh, job.slurm, README.md, skeleton.json
///
/// The folder is written under a temporary name and renamed when complete; an existing DIR is
/// only replaced with --force.
///
/// Examples:
///   mpiskel build halo.trace -o halo.skel
///   mpiskel build bt.W.16/trace.txt -o bt.skel --target-time 0.05
///   mpiskel build bt.W.16/trace.txt -o bt.skel --platform ref.xml --hostfile hostfile_1perhost.txt
///   mpiskel build app.trace -o app.skel --force && mpiskel run app.skel
///   mpiskel build halo.trace --lang rust -o halo-rs && mpiskel run halo-rs
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct BuildArgs {
    /// The trace (a directory written by `mpiskel trace`, a SimGrid time-independent trace, or
    /// an SST DUMPI trace: its `.meta` file or the folder holding it).
    trace: PathBuf,
    /// The skeleton folder to write.
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Seconds the skeleton should run on the recording machine [default: the shorter of 60 s
    /// and a twelfth of the application's time — a twenty-fourth where the main loop has 20
    /// iterations or more, or where there is no loop to sample and computation alone is cut —
    /// so that it stays under a tenth (a twentieth) where the platform slows the parts that run
    /// whole more than the rest].
    #[arg(long, value_name = "SECONDS")]
    target_time: Option<f64>,
    /// Run every compute block whole, even when the skeleton is then over its target. By
    /// default, when the loops are cut as far as they go (or cannot be cut) and the skeleton is
    /// still over, every rank skips the same seconds of the long compute blocks (set-up, steps
    /// between loops, the bodies of loops of a few long iterations, a program without loops) and
    /// adds their time, at the pace of the part it runs, back to the prediction; if that is not
    /// enough, the blocks without drawn deviations run the same share of what they keep on every
    /// rank, each rank adding its own remainder back.
    #[arg(long, alias = "whole-setup")]
    whole_compute: bool,
    /// Language of the skeleton.
    #[arg(long, value_enum, default_value_t = Lang::C)]
    lang: Lang,
    /// Replace DIR if it exists.
    #[arg(long)]
    force: bool,
    /// The application's run time, seconds, if known better than the trace tells (the trace
    /// gives the span from MPI_Init to MPI_Finalize of the slowest rank).
    #[arg(long, value_name = "SECONDS")]
    app_time: Option<f64>,
    /// Skeleton name (default: the trace's folder name).
    #[arg(long)]
    name: Option<String>,
    /// For SimGrid traces: compute speed in flop/s.
    #[arg(long, value_name = "FLOP/S", default_value_t = 1e9)]
    flops: f64,
    /// Refuse a trace that holds point-to-point calls nothing matches (a receive cancelled
    /// after nothing came, a send never received), as the deadlock check would, and a program
    /// that finishes only if the MPI library buffers some of its blocking sends. By default
    /// such calls are local (Xu & Subhlok 2008, §4): they are left out, their time stays in
    /// the computation before the next call; and sends the run completed before their receives
    /// were posted, where the program relies on it, become buffered sends (`MPI_Bsend`). The
    /// build says what it left out or buffered. With --strict, no stretch is cut either (that
    /// cut leaves out the messages that cross it).
    #[arg(long)]
    strict: bool,
    /// The platform the application ran on (a SimGrid platform file with one <cluster>, or
    /// mpiskel's TOML; see `mpiskel simulate`): the build simulates there the application and
    /// the skeleton as it runs, and records their ratio as the factor (and their times as the
    /// application's and the expected skeleton's). For a trace without call times (SimGrid's
    /// time-independent format), whose own span is its computation alone, this is what makes
    /// the factor count the messages. Compute blocks count there as their recorded seconds
    /// times --flops flops (a SimGrid trace's own flops).
    #[arg(long, value_name = "FILE")]
    platform: Option<PathBuf>,
    /// With --platform: where the ranks ran (SMPI's hostfile format).
    #[arg(long, value_name = "FILE", requires = "platform")]
    hostfile: Option<PathBuf>,
    /// Skip the fidelity check. By default every build simulates the application's trace and
    /// the skeleton, as it runs and priced by its own runtime's formula, on a panel of six
    /// modelled platforms (the --platform given, else a cluster inferred from the trace: one
    /// host per rank, 10 Gb/s, 1 µs, the recorded compute speed; and its what-ifs: bandwidth
    /// ÷10 and ÷100, latency ×10, processors at half speed, four ranks to a host); where the
    /// skeleton's worst error is over --max-error, it measures the other candidates the cuts
    /// propose (other loop nests, longer targets, computation whole) and keeps the shortest
    /// within the bound, else the most faithful. The panel is written to skeleton.json
    /// (`fidelity`) and printed.
    #[arg(long)]
    no_check: bool,
    /// The largest error, in percent, the kept skeleton may show on any platform of the panel.
    #[arg(long, value_name = "PERCENT", default_value_t = 100.0 * mpiskel_cut::fidelity::DEFAULT_MAX_ERROR)]
    max_error: f64,
    /// No progress lines on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// Print what was built as JSON (the folder, ranks, topology, classes, main loop, recorded
    /// and expected skeleton time, factor, notes) instead of the summary line and notes.
    #[arg(long)]
    json: bool,
}

/// Languages of the skeleton.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// C, built with mpicc (a folder with skeleton.c, the runtime and a Makefile).
    C,
    /// Rust with the `mpi` crate (rsmpi), built with cargo (a Cargo project).
    Rust,
}

impl From<Lang> for mpiskel_make::Lang {
    fn from(l: Lang) -> Self {
        match l {
            Lang::C => mpiskel_make::Lang::C,
            Lang::Rust => mpiskel_make::Lang::Rust,
        }
    }
}

pub fn build(a: BuildArgs) -> Result<ExitCode> {
    let o = BuildOptions {
        trace: a.trace.clone(),
        output: a.output.clone(),
        target_time: a.target_time,
        whole_compute: a.whole_compute,
        lang: a.lang.into(),
        force: a.force,
        app_time: a.app_time,
        name: a.name.clone(),
        flops: a.flops,
        strict: a.strict,
        platform: a.platform.clone(),
        hostfile: a.hostfile.clone(),
        check: !a.no_check,
        max_error: a.max_error / 100.0,
    };
    let done = build_folder(&o, &Stages::new(a.quiet))?;
    let d = &done.document;
    let s = &d.scaling;
    if a.json {
        let summary = serde_json::json!({
            "skeleton": a.output,
            "ranks": d.n_ranks,
            "topology": d.topology,
            "classes": d.classes.len(),
            "main_run": s.main_run,
            "main_full": s.main_full,
            "recorded_s": s.app_time_s,
            "skeleton_estimate_s": s.skeleton_estimate_s,
            "factor": s.factor,
            "fidelity": d.fidelity,
            "fidelity_decision": d.fidelity_decision,
            "notes": done.notes,
        });
        println!("{}", serde_json::to_string_pretty(&summary)?);
        return Ok(ExitCode::SUCCESS);
    }
    for note in &done.notes {
        eprintln!("note: {note}");
    }
    if !d.fidelity.is_empty() {
        eprintln!("fidelity: {}", mpiskel_cut::fidelity::describe(&d.fidelity));
        eprint!("{}", mpiskel_cut::fidelity::table(&d.fidelity));
    }
    let (app, skeleton) = if a.platform.is_some() {
        ("application on the platform", "skeleton there")
    } else {
        ("recorded", "skeleton")
    };
    println!(
        "{}: {} ranks, {}, {} classes; main loop {} of {} iterations; {app} {:.4} s, {skeleton} ≈ {:.4} s (×{:.3})",
        a.output.display(),
        d.n_ranks,
        d.topology,
        d.classes.len(),
        s.main_run,
        s.main_full,
        s.app_time_s,
        s.skeleton_estimate_s,
        s.factor
    );
    Ok(ExitCode::SUCCESS)
}
