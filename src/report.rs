//! `mpiskel report`: gathers what a trace, a skeleton folder or a validation folder shows and
//! writes it as one HTML page (`mpiskel_report`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use mpiskel_report::{Page, RunPhase, RunView, ValidationRow};
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};

use crate::progress::Stages;
use mpiskel_emit::document;

/// Write one self-contained HTML page about a trace, a skeleton or a validation run.
///
/// From a trace (any format `build` reads): the communication matrix as a heatmap with the
/// topology found and each rank's coordinates, each process class's loop nest as a tree that
/// opens and closes (each loop's share of the computation and of the bytes sent), the phases on
/// a time line and how a skeleton of it would be scaled — the analysis `build` does, without
/// writing a skeleton. From a skeleton folder: the same from its skeleton.json (the matrix
/// where its trace can still be read), plus the runs recorded beside it (report-*.json,
/// written by `mpiskel run`), predicted against measured by phase. From a validation folder
/// (results.json of `mpiskel validate`): predicted against measured per scenario, with its
/// charts. With --platform, a trace's or a skeleton's page also answers a what-if: its
/// predicted time on that modelled platform as the links' bandwidth (or --sweep's parameter)
/// changes, simulated as `mpiskel simulate --sweep` does, as a table and a chart. The page
/// needs no network and no external script; it is written under a temporary name and renamed
/// when complete.
///
/// Examples:
///   mpiskel report app.trace -o app.html
///   mpiskel report app.skel -o app-skeleton.html
///   mpiskel report validation -o validation.html
///   mpiskel report app.skel -o app.html --platform cluster.xml --sweep latency=1us,10us,100us
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReportArgs {
    /// A trace, a skeleton folder (holding skeleton.json) or a validation folder (holding
    /// results.json)
    pub input: PathBuf,
    /// The HTML file to write
    #[arg(short, long)]
    pub output: PathBuf,
    /// For SimGrid traces: compute speed in flop/s
    #[arg(long, default_value_t = 1e9)]
    pub flops: f64,
    /// Add a what-if section: the trace's or skeleton's time on this modelled platform (a
    /// SimGrid platform file with one <cluster>, or mpiskel's TOML; as `mpiskel simulate`) as one
    /// parameter sweeps
    #[arg(long, value_name = "FILE")]
    pub platform: Option<PathBuf>,
    /// With --platform: where each rank runs (SMPI's hostfile format)
    #[arg(long, value_name = "FILE", requires = "platform")]
    pub hostfile: Option<PathBuf>,
    /// With --platform: the sweep, PARAM=V,V,… (bandwidth, latency or speed; default: the
    /// platform's link bandwidth divided by 1, 2, 4, 16 and 64)
    #[arg(long, value_name = "PARAM=V,V,…", requires = "platform")]
    pub sweep: Option<String>,
    /// No progress lines on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs `mpiskel report`.
pub fn report(a: ReportArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.flops > 0.0 && a.flops.is_finite(), "--flops must be a positive number");
    anyhow::ensure!(
        a.platform.is_none() || !a.input.join("results.json").is_file(),
        "--platform: {} is a validation folder, which has no program to simulate; give a trace \
         or a skeleton folder",
        a.input.display()
    );
    let stages = Stages::new(a.quiet);
    let source = format!("{} — mpiskel {}", a.input.display(), env!("CARGO_PKG_VERSION"));
    let page = if a.input.join("results.json").is_file() {
        validation_page(&a.input, &source)?
    } else if let Some(doc) = document::read(&a.input)? {
        let mut page = Page::new(&doc.name, &source);
        page.skeleton(&doc.program, &doc.scaling);
        page.fidelity = doc.fidelity.clone();
        page.fidelity_note =
            doc.fidelity_decision.as_ref().and_then(mpiskel_make::policy::describe);
        if doc.fidelity.is_empty() {
            page.notes.push(
                "the skeleton's fidelity was not checked (built with --no-check): `mpiskel check` \
                 measures it against its trace"
                    .to_owned(),
            );
        }
        let trace = Path::new(&doc.trace);
        match trace_matrix(trace, a.flops, &stages) {
            Ok(m) => page.matrix(&m),
            Err(e) => page.notes.push(format!(
                "no communication matrix: the trace {} could not be read ({e:#})",
                trace.display()
            )),
        }
        for run in runs_in(&a.input)? {
            page.run(run);
        }
        if page.runs.is_empty() {
            page.notes.push(format!(
                "no runs recorded: `mpiskel run {}` adds its predictions to this page",
                a.input.display()
            ));
        }
        page
    } else {
        trace_page(&a.input, a.flops, &source, &stages)?
    };
    let mut page = page;
    if let Some(platform) = &a.platform {
        let _stage = stages.reading("simulating the what-if");
        page.whatif = Some(crate::simulate::what_if(
            &a.input,
            platform,
            a.hostfile.as_deref(),
            a.sweep.as_deref(),
        )?);
    }
    let html = mpiskel_report::render(&page)?;
    mpiskel_trace::atomic::write(&a.output, html.as_bytes())
        .with_context(|| format!("writing {}", a.output.display()))?;
    stages.line(&format!("wrote {}", a.output.display()));
    Ok(ExitCode::SUCCESS)
}

fn open(trace: &Path, flops: f64, stages: &Stages) -> Result<TraceSet> {
    let opts = ReadOptions { ti: TiOptions { flops_per_second: flops } };
    stages.line(&format!("reading {}", trace.display()));
    let _bar = stages.reading("reading");
    Ok(TraceSet::open(trace, &opts)?)
}

fn trace_matrix(
    trace: &Path,
    flops: f64,
    stages: &Stages,
) -> Result<mpiskel_logicalize::CommMatrix> {
    let set = open(trace, flops, stages)?;
    Ok(mpiskel_logicalize::CommMatrix::of(&set))
}

/// The analysis `build` does, kept in memory.
fn trace_page(trace: &Path, flops: f64, source: &str, stages: &Stages) -> Result<Page> {
    let mut set = open(trace, flops, stages)?;
    anyhow::ensure!(
        !set.meta.as_ref().is_some_and(|m| m.time_only),
        "{} holds only the application's time, not its calls",
        trace.display()
    );
    let polls = set.fold_polls();
    let local = set.drop_local_calls();
    set.align_collectives();
    let app_time = set.app_time_s();
    let n_ranks = set.n_ranks();
    let calls: usize = set.ranks.iter().map(|r| r.events.len()).sum();
    let mut lt = {
        let _spinner = stages.spinner("finding the topology and the process classes");
        mpiskel_logicalize::logicalize_owned(set)
    };
    let title = mpiskel_make::build::default_name(trace);
    let mut page = Page::new(&title, source);
    page.matrix(&lt.matrix);
    let made = {
        let _spinner = stages.spinner("finding loops and cutting them");
        mpiskel_cut::pipeline::make(
            &mut lt,
            app_time,
            "span of the slowest rank from MPI_Init to MPI_Finalize in the trace",
            None,
            true,
        )
    };
    match made {
        Ok(built) => page.skeleton(&built.skeleton, &built.scaling),
        Err(e) => page.notes.push(format!("no skeleton: {e}")),
    }
    page.facts.insert(0, ("calls".into(), calls.to_string()));
    if page.facts.iter().all(|(k, _)| k != "ranks") {
        page.facts.insert(0, ("ranks".into(), n_ranks.to_string()));
    }
    if polls.any() {
        page.notes.push(document::describe_polls(&polls));
    }
    if local.sends + local.receives > 0 {
        page.notes.push(document::describe_local(&local, app_time, n_ranks));
    }
    Ok(page)
}

/// The runs `mpiskel run` recorded in a skeleton folder (`report-MPI.json`), by name.
fn runs_in(dir: &Path) -> Result<Vec<RunView>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("report-") && n.ends_with(".json"))
        })
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a run report", p.display()))?;
        let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        let mpi = p
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.strip_prefix("report-"))
            .unwrap_or("run")
            .to_owned();
        let phases = v["phases"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|q| RunPhase {
                        name: q["name"].as_str().unwrap_or("?").to_owned(),
                        full: q["full"].as_u64().unwrap_or(0),
                        run: q["run"].as_u64().unwrap_or(0),
                        seconds: q["seconds"].as_f64().unwrap_or(f64::NAN),
                        predicted_s: q["predicted_s"].as_f64().unwrap_or(f64::NAN),
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(RunView {
            mpi,
            skeleton_s: f("skeleton_s"),
            predicted_s: f("predicted_s"),
            predicted_ratio_s: f("predicted_ratio_s"),
            phases,
        });
    }
    Ok(out)
}

/// Predicted against measured per scenario, from a validation folder.
fn validation_page(dir: &Path, source: &str) -> Result<Page> {
    let path = dir.join("results.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let v: mpiskel_validate::tables::Validation = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a validation run", path.display()))?;
    let mut page = Page::new("validation", source);
    page.facts.push(("measured on".into(), v.machine.clone()));
    page.facts.push(("rows".into(), v.rows.len().to_string()));
    for r in &v.rows {
        page.validation.push(ValidationRow {
            suite: r.suite.clone(),
            case: r.case.clone(),
            scenario: r.scenario.clone(),
            class: r.class.clone(),
            predicted_s: r.by_phase.median,
            measured_s: r.truth.median,
            replay_s: r.replay,
            length: r.skeleton.median / r.replay.unwrap_or(r.truth.median),
        });
    }
    for name in ["smpi.svg", "native.svg"] {
        let p = dir.join(name);
        if let Ok(svg) = std::fs::read_to_string(&p) {
            if svg.trim_start().starts_with("<svg") {
                page.charts.push(svg);
            }
        }
    }
    Ok(page)
}
