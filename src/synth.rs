//! `mpiskel synth`: a synthetic trace at any scale.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{ensure, Result};
use clap::{Args, ValueEnum};
use mpiskel_trace::synth::{self, Pattern, Spec};

/// The communication pattern of each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PatternArg {
    /// Halo exchange on a periodic 1-D grid (a ring).
    Stencil1d,
    /// Halo exchange on a periodic 2-D grid.
    Stencil2d,
    /// Halo exchange on a periodic 3-D grid.
    Stencil3d,
    /// Down and up a binary tree rooted at rank 0.
    Tree,
    /// One MPI_Alltoall over every rank.
    Alltoall,
}

/// Write a synthetic trace in the native format: a program of the shape real codes take, at any
/// number of ranks, for trying mpiskel at scale where no recorded trace exists.
///
/// Each rank runs --iterations steps: a compute block (--compute-us, scaled by 1 + --noise × u,
/// u uniform in [−1, 1)), then the pattern's calls; optionally an 8-byte MPI_Allreduce every
/// --allreduce-every steps and an MPI_Alltoall every --alltoall-every steps. --irregular makes
/// message sizes drift by up to ±25 % from step to step. Times are made up (a call takes 2 µs
/// plus 1 ns per 4 bytes); the same options give the same files. The folder is written under a
/// temporary name and renamed when every rank file is complete.
///
/// Examples:
///   mpiskel synth -o halo.16k --ranks 16384 --iterations 440        # 3-D halo, 100 M calls
///   mpiskel synth -o tree.1k --pattern tree --ranks 1024 --iterations 200 --irregular
///   mpiskel build halo.16k -o halo.skel
#[derive(Debug, Args)]
#[command(
    verbatim_doc_comment,
    about = "Write a synthetic trace of the shape real codes take, at any number of ranks."
)]
pub struct SynthArgs {
    /// The folder to write (must not exist, unless --force).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Number of ranks.
    #[arg(long, default_value_t = 64)]
    ranks: u32,
    /// The communication pattern of each step.
    #[arg(long, value_enum, default_value_t = PatternArg::Stencil3d)]
    pattern: PatternArg,
    /// Steps each rank runs.
    #[arg(long, default_value_t = 100)]
    iterations: u32,
    /// Bytes per message (per destination for all-to-alls).
    #[arg(long, default_value_t = 8192)]
    bytes: u64,
    /// Computation per step, microseconds.
    #[arg(long, value_name = "US", default_value_t = 200.0)]
    compute_us: f64,
    /// Relative noise of each compute block (0.05: ±5 %).
    #[arg(long, default_value_t = 0.05)]
    noise: f64,
    /// Message sizes drift from step to step (±25 %), as when particles migrate.
    #[arg(long)]
    irregular: bool,
    /// An 8-byte MPI_Allreduce every this many steps (0: never).
    #[arg(long, value_name = "K", default_value_t = 1)]
    allreduce_every: u32,
    /// An MPI_Alltoall every this many steps (0: never).
    #[arg(long, value_name = "K", default_value_t = 0)]
    alltoall_every: u32,
    /// Seed of the compute noise.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Replace DIR if it exists.
    #[arg(long)]
    force: bool,
    /// Print what was written as JSON (trace, ranks, calls, bytes).
    #[arg(long)]
    json: bool,
}

pub fn synth(a: SynthArgs) -> Result<ExitCode> {
    ensure!(a.ranks > 0, "--ranks must be at least 1");
    ensure!(a.compute_us >= 0.0 && a.compute_us.is_finite(), "--compute-us must be ≥ 0");
    ensure!((0.0..=1.0).contains(&a.noise), "--noise must be between 0 and 1");
    if a.output.exists() {
        ensure!(a.force, "{} exists; use --force to replace it", a.output.display());
        std::fs::remove_dir_all(&a.output)?;
    }
    let pattern = match a.pattern {
        PatternArg::Stencil1d => Pattern::Stencil { dims: 1 },
        PatternArg::Stencil2d => Pattern::Stencil { dims: 2 },
        PatternArg::Stencil3d => Pattern::Stencil { dims: 3 },
        PatternArg::Tree => Pattern::Tree,
        PatternArg::Alltoall => Pattern::AllToAll,
    };
    let spec = Spec {
        ranks: a.ranks,
        pattern,
        iterations: a.iterations,
        bytes: a.bytes,
        compute_ns: (a.compute_us * 1e3).round() as u64,
        noise: a.noise,
        irregular: a.irregular,
        allreduce_every: a.allreduce_every,
        alltoall_every: a.alltoall_every,
        seed: a.seed,
    };
    let w = synth::write(&a.output, &spec)?;
    let shape = match pattern {
        Pattern::Stencil { dims } => {
            let s = synth::grid_shape(a.ranks, dims);
            format!(
                " on a periodic {} grid",
                s.iter().map(u32::to_string).collect::<Vec<_>>().join("×")
            )
        }
        _ => String::new(),
    };
    if a.json {
        let doc = serde_json::json!({
            "trace": a.output,
            "ranks": w.ranks,
            "calls": w.events,
            "bytes": w.file_bytes,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{}: {} ranks{shape}, {} calls, {:.1} MB",
        a.output.display(),
        w.ranks,
        w.events,
        w.file_bytes as f64 / 1e6
    );
    Ok(ExitCode::SUCCESS)
}
