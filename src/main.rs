//! `mpiskel`: turn the traces of an MPI application into a performance skeleton.
//!
//! This binary glues the stage crates together; each subcommand lives in its own module.

mod build;
mod check;
mod compress;
mod docs;
mod export;
mod inspect;
mod logicalize;
mod progress;
mod record;
mod report;
mod run;
mod simulate;
mod synth;
mod validate;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Turn the execution traces of an MPI application into a performance skeleton.
///
/// Record an application once with `mpiskel trace`, make its skeleton with `mpiskel build`, run
/// the skeleton anywhere with `mpiskel run` (or its own run.sh) to predict the application's
/// time there. `mpiskel check` measures a skeleton against its trace on a panel of modelled
/// platforms; `mpiskel inspect` shows traces and skeletons; `logicalize` and `compress` run
/// single stages. `mpiskel retune` fits a skeleton's computation to a new machine;
/// `mpiskel validate` measures predictions across platforms; `mpiskel simulate` predicts a
/// trace's or a skeleton's time on a modelled cluster without running it; `mpiskel export --ti`
/// writes a trace for SimGrid to replay; `mpiskel synth` writes a synthetic trace at any scale;
/// `mpiskel report` writes one HTML page about a trace, a skeleton or a validation run;
/// `mpiskel man` and `mpiskel completions` write the manual pages and shell completions.
#[derive(Debug, Parser)]
#[command(
    name = "mpiskel",
    version,
    propagate_version = true,
    arg_required_else_help = true,
    after_help = "Examples:
  mpiskel trace -o app.trace -- mpirun -np 16 ./app input.dat
  mpiskel build app.trace -o app.skel
  mpiskel run app.skel                                  # here, with OpenMPI
  mpiskel run app.skel --mpi smpi --platform cluster.xml  # on a simulated cluster
  mpiskel simulate app.trace --platform cluster.xml      # what-if, without running anything
  cd app.skel && make && ./run.sh                       # anywhere else, without mpiskel
  mpiskel report app.skel -o app.html

Each command's --help has its own examples. Exit codes: 0 success; 1 the work failed (a bad
input, a failed run, a program that could deadlock, a validation target missed); 2 a usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Trace(record::TraceArgs),
    Inspect(inspect::InspectArgs),
    Logicalize(logicalize::LogicalizeArgs),
    Compress(compress::CompressArgs),
    Build(build::BuildArgs),
    Check(check::CheckArgs),
    Run(run::RunCommand),
    Export(export::ExportArgs),
    Tracer(record::TracerArgs),
    Validate(validate::ValidateArgs),
    Retune(validate::RetuneArgs),
    Simulate(simulate::SimulateArgs),
    Synth(synth::SynthArgs),
    Report(report::ReportArgs),
    Man(docs::ManArgs),
    Completions(docs::CompletionsArgs),
}

/// Exit codes: 0 success; 1 the work failed (bad input, failed run); 2 usage error (clap).
/// Output into a closed pipe (`mpiskel simulate … | head -1`) ends the process quietly, with the
/// status a process killed by SIGPIPE reports (128 + 13), as Unix tools end there; `print!`
/// panics on it otherwise. Every other panic keeps the default report.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.starts_with("failed printing to stdout") && text.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Trace(a) => record::trace(a),
        Command::Inspect(a) => inspect::inspect(a),
        Command::Logicalize(a) => logicalize::run(a),
        Command::Compress(a) => compress::compress(a),
        Command::Build(a) => build::build(a),
        Command::Run(a) => run::run(a),
        Command::Export(a) => export::export(a),
        Command::Tracer(a) => record::tracer(a),
        Command::Validate(a) => validate::validate(a),
        Command::Simulate(a) => simulate::run(a),
        Command::Check(a) => check::run(a),
        Command::Retune(a) => validate::retune(a),
        Command::Synth(a) => synth::synth(a),
        Command::Report(a) => report::report(a),
        Command::Man(a) => docs::man(a, Cli::command()),
        Command::Completions(a) => docs::completions(a, Cli::command()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
