//! The C back end: renders a [`Skeleton`] as one SPMD C program plus its folder (Makefile,
//! run script, Slurm job, README), through the minijinja templates in `templates/`, and ships
//! the runtime from `skeletons/`. Everything is embedded in the binary.
//!
//! Statements are turned into C lines here (the grammar of calls is code, not layout); the
//! templates lay out the file: declarations, set-up, one function per phase, the class dispatch
//! and the report.
//!
//! The parts: `stmts.rs` (statements and calls as C lines), `context.rs` (what the templates
//! are given: directions, tags, set-up lines, communicators, classes and phases, tables).
//!
//! # Complexity
//! O(size of the program).

mod context;
mod stmts;

use std::fmt::Write as _;

use minijinja::value::merge_maps;
use minijinja::{context, AutoEscape, Environment, Value};

use serde::Serialize;

use crate::program::{Comm, Skeleton};
use crate::scale::Scaling;

const SKELETON_C: &str = include_str!("../../../templates/skeleton.c.j2");
const MAKEFILE: &str = include_str!("../../../templates/Makefile.j2");
const RUN_SH: &str = include_str!("../../../templates/run.sh.j2");
const JOB_SLURM: &str = include_str!("../../../templates/job.slurm.j2");
const README: &str = include_str!("../../../templates/README.md.j2");
/// The runtime header copied into every skeleton.
pub const RUNTIME_H: &str = include_str!("../../../skeletons/mpiskel_rt.h");
/// The runtime source copied into every skeleton.
pub const RUNTIME_C: &str = include_str!("../../../skeletons/mpiskel_rt.c");

/// An error rendering a skeleton: a bug of mpiskel's templates or back ends, reported rather
/// than written as if it were a skeleton.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A template failed (reported with its line).
    #[error("template {name}: {error}")]
    Template {
        /// The template.
        name: String,
        /// What failed.
        error: minijinja::Error,
    },
    /// The generated source does not parse.
    #[error("{file}: the generated code does not parse ({error}); this is a bug of mpiskel")]
    Unparsable {
        /// The file.
        file: String,
        /// The parser's message.
        error: String,
    },
}

impl RenderError {
    pub(crate) fn new(name: &str, source: minijinja::Error) -> RenderError {
        RenderError::Template { name: name.to_owned(), error: source }
    }
}

/// What the back end needs besides the program.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    /// Skeleton name (a C string and a file stem), e.g. `bt.W.16`.
    pub name: String,
    /// Where the trace was.
    pub trace: String,
    /// mpiskel's version.
    pub version: String,
    /// The fidelity check's panel, the reference first (empty: not checked); the README
    /// summarizes it.
    pub fidelity: Vec<crate::fidelity::PanelRow>,
}

/// The template context of the fidelity panel: `fidelity` (rows of formatted figures, empty
/// where the build did not check) and `fidelity_summary` (one sentence).
pub fn fidelity_context(rows: &[crate::fidelity::PanelRow]) -> Value {
    let table: Vec<Value> = rows
        .iter()
        .map(|r| {
            context! {
                platform => r.platform,
                app_s => format!("{:.6}", r.app_s),
                skeleton_s => format!("{:.6}", r.skeleton_s),
                predicted_s => format!("{:.6}", r.predicted_s),
                error => format!("{:+.2} %", r.error_pct),
            }
        })
        .collect();
    context! { fidelity => table, fidelity_summary => crate::fidelity::describe(rows) }
}

/// A file of the skeleton folder.
#[derive(Debug, Clone)]
pub struct File {
    /// Path relative to the folder.
    pub path: String,
    /// Contents.
    pub contents: String,
    /// Whether it is executable.
    pub executable: bool,
}

/// Seconds as a C literal with six significant digits.
pub(crate) fn seconds(s: f64) -> String {
    format!("{s:.5e}")
}

/// Ranks as short text: `0-3, 8, 12-15`.
pub(crate) fn ranks_text(ranks: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        parts.push(if j > i { format!("{}-{}", ranks[i], ranks[j]) } else { ranks[i].to_string() });
        i = j + 1;
    }
    parts.join(", ")
}

/// Iteration numbers as short text, the first and last few of a long list: `7, 22, 37, 52` or
/// `2, 7, 12, …, 992, 997 (200 in all)`.
pub(crate) fn iterations_text(its: &[u64]) -> String {
    let show = |xs: &[u64]| xs.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    if its.len() <= 8 {
        show(its)
    } else {
        format!("{}, …, {} ({} in all)", show(&its[..3]), show(&its[its.len() - 2..]), its.len())
    }
}

/// Numbers `values` eight to a line, for C array initialisers.
fn table_lines<T: ToString>(values: &[T], per_line: usize) -> Vec<String> {
    values
        .chunks(per_line)
        .map(|c| c.iter().map(T::to_string).collect::<Vec<_>>().join(", ") + ",")
        .collect()
}

/// What a phase's comment says: where it came from, its iterations, calls and computation.
pub(crate) fn phase_comment(p: &crate::program::Phase) -> String {
    let text = phase_text(p);
    if p.scale == 1.0 {
        return text;
    }
    format!(
        "{text} Part of a stretch between two collectives of all ranks that folds into no loop, \
         cut short: its time, times {:.4}, stands for its calls and the stretch's calls that \
         the skeleton does not run.",
        p.scale
    )
}

fn phase_text(p: &crate::program::Phase) -> String {
    if p.is_loop {
        let warmup = if p.warmup > 0 {
            format!(
                "; the warm-up iteration this skeleton skips counts as {} more of its iterations, \
                 at the slowest rank's mean",
                p.warmup
            )
        } else {
            String::new()
        };
        format!(
            "{}: {}; runs {} of {} iterations ({} calls and {} s of computation each){warmup}.",
            p.name,
            p.origin,
            p.run,
            p.full,
            p.calls,
            seconds(p.compute_s)
        )
    } else if p.skipped.is_some() {
        format!(
            "{}: {}; skipped: the main loop's prediction counts it as one more of its \
             iterations, and only the {} s of computation it had beyond one runs here.",
            p.name,
            p.origin,
            seconds(p.compute_s)
        )
    } else {
        format!(
            "{}: {} ({} calls, {} s of computation).",
            p.name,
            p.origin,
            p.calls,
            seconds(p.compute_s)
        )
    }
}

pub(crate) fn tag_stem(ident: &str) -> String {
    if ident.starts_with("CHILD") {
        "CHILD".into()
    } else {
        ident.to_owned()
    }
}

pub(crate) fn comm_name(c: &Comm, grid_dims: usize) -> (String, String) {
    match c {
        Comm::World => ("world".into(), "all ranks".into()),
        Comm::SelfComm => ("MPI_COMM_SELF".into(), String::new()),
        Comm::Slice { free } if grid_dims == 2 && free == &[1] => {
            ("row_comm".into(), "this rank's row of the grid".into())
        }
        Comm::Slice { free } if grid_dims == 2 && free == &[0] => {
            ("column_comm".into(), "this rank's column of the grid".into())
        }
        Comm::Slice { free } => (
            format!(
                "slice_{}_comm",
                free.iter().map(usize::to_string).collect::<Vec<_>>().join("")
            ),
            format!("the ranks that differ from this one only along dimensions {free:?}"),
        ),
        Comm::Strided { size, stride: 1 } => {
            (format!("block{size}_comm"), format!("consecutive blocks of {size} ranks"))
        }
        Comm::Strided { size, stride } => (
            format!("group{size}_stride{stride}_comm"),
            format!("groups of {size} ranks spaced {stride} apart"),
        ),
    }
}

/// A Slurm time limit: ten times the expected run, at least ten minutes.
/// The template variables both languages take from the scaling and the matching report: loop
/// counts, times, factor, set-up removed, target, Slurm time limit.
pub(crate) fn scaling_context<M: serde::Serialize>(
    scaling: &Scaling,
    matching: &M,
) -> minijinja::Value {
    context! {
        main_run => scaling.main_run,
        main_full => scaling.main_full,
        app_time => format!("{:.6}", scaling.app_time_s),
        app_time_source => scaling.app_time_source,
        skeleton_estimate => format!("{:.6}", scaling.skeleton_estimate_s),
        factor => format!("{:.6}", scaling.factor),
        compute_removed => if scaling.compute_removed_s > 0.0 {
            seconds(scaling.compute_removed_s)
        } else {
            String::new()
        },
        target => format!("{:.6}", scaling.target_s),
        compute_shrink => if scaling.compute_shrink < 1.0 {
            format!("{:.4}", scaling.compute_shrink)
        } else {
            String::new()
        },
        slurm_time => slurm_time(scaling.skeleton_estimate_s),
        matching => matching,
    }
}

pub(crate) fn slurm_time(estimate_s: f64) -> String {
    let s = (estimate_s * 10.0).clamp(600.0, 99.0 * 3600.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The templates' environment: blocks trimmed, no escaping (the files are code), every name a
/// template uses must be given.
fn environment(
    templates: &[(&'static str, &'static str)],
) -> Result<Environment<'static>, RenderError> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for &(name, src) in templates {
        env.add_template(name, src).map_err(|source| RenderError::new(name, source))?;
    }
    Ok(env)
}

/// Renders each of `templates` with `ctx` into a file of the folder (ending in a newline; run
/// scripts and Slurm jobs executable).
pub(crate) fn render_templates(
    templates: &[(&'static str, &'static str)],
    ctx: &Value,
) -> Result<Vec<File>, RenderError> {
    let env = environment(templates)?;
    let mut files = Vec::new();
    for &(name, _) in templates {
        let t = env.get_template(name).map_err(|source| RenderError::new(name, source))?;
        let mut text = t.render(ctx).map_err(|source| RenderError::new(name, source))?;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        files.push(File {
            path: name.to_owned(),
            contents: text,
            executable: name.ends_with(".sh") || name.ends_with(".slurm"),
        });
    }
    Ok(files)
}

/// The lines of C beyond which the program is compiled without optimization. GCC's time at
/// -O1 grows faster than the lines of a function, and a long skeleton's phases are functions
/// of hundreds of thousands of lines: Quantum ESPRESSO's program of 275,608 lines took
/// 10 min 50 s at -O1 here, its 761,170-line one 105 s at -O0. The program is a sequence of
/// calls into MPI and the runtime (itself optimized), so -O0 costs a few instructions a call.
pub const LARGE_PROGRAM_LINES: usize = 100_000;

/// The optimization level the program `skeleton.c` is compiled at (`-O1`, or `-O0` where it has
/// more than [`LARGE_PROGRAM_LINES`] lines), by the folder's Makefile and by `mpiskel run`.
pub fn program_opt(source: &str) -> &'static str {
    if source.lines().count() > LARGE_PROGRAM_LINES {
        "-O0"
    } else {
        "-O1"
    }
}

/// Renders the skeleton folder.
pub fn render(skel: &Skeleton, scaling: &Scaling, meta: &Meta) -> Result<Vec<File>, RenderError> {
    let templates = [
        ("Makefile", MAKEFILE),
        ("run.sh", RUN_SH),
        ("job.slurm", JOB_SLURM),
        ("README.md", README),
    ];
    let ctx = merge_maps([
        context! { name => meta.name, trace => meta.trace, version => meta.version },
        fidelity_context(&meta.fidelity),
        context::program(skel),
        scaling_context(scaling, &skel.matching),
    ]);
    let mut files = render_templates(&[("skeleton.c", SKELETON_C)], &ctx)?;
    let lines = files[0].contents.lines().count();
    let opt = program_opt(&files[0].contents);
    let ctx = merge_maps([ctx, context! { program_lines => lines, program_opt => opt }]);
    files.extend(render_templates(&templates, &ctx)?);
    files.push(File { path: "mpiskel_rt.h".into(), contents: RUNTIME_H.into(), executable: false });
    files.push(File { path: "mpiskel_rt.c".into(), contents: RUNTIME_C.into(), executable: false });
    Ok(files)
}

/// The skeleton's C source alone (for snapshots and inspection).
pub fn source(files: &[File]) -> &str {
    files.iter().find(|f| f.path == "skeleton.c").map_or("", |f| f.contents.as_str())
}

/// A one-line summary of a class's phases, e.g. `start(1) + main_loop(20/200) + finish(1)`.
pub fn phase_summary(skel: &Skeleton, class: usize) -> String {
    let mut s = String::new();
    for (i, p) in skel.classes[class].phases.iter().enumerate() {
        if i > 0 {
            s.push_str(" + ");
        }
        let _ = write!(s, "{}({}/{})", p.name, p.run, p.full);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_of_more_than_the_large_lines_is_compiled_without_optimization() {
        let lines = |n: usize| "MPI_Barrier(MPI_COMM_WORLD);\n".repeat(n);
        assert_eq!(program_opt(&lines(LARGE_PROGRAM_LINES)), "-O1");
        assert_eq!(program_opt(&lines(LARGE_PROGRAM_LINES + 1)), "-O0");
    }
}
