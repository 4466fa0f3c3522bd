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
mod text;

use std::fmt::Write as _;

use minijinja::value::merge_maps;
use minijinja::{context, AutoEscape, Environment, Value};

use serde::Serialize;

use mpiskel_cut::scale::Scaling;
use mpiskel_program::Skeleton;
pub(crate) use text::{
    comm_name, iterations_text, message_tag_name, phase_comment, ranks_text, seconds, tag_stem,
};

const SKELETON_C: &str = include_str!("../../../templates/skeleton.c.j2");
const MAKEFILE: &str = include_str!("../../../templates/Makefile.j2");
const RUN_SH: &str = include_str!("../../../templates/run.sh.j2");
const JOB_SLURM: &str = include_str!("../../../templates/job.slurm.j2");
const README: &str = include_str!("../../../templates/README.md.j2");
/// The runtime copied into every skeleton, by file name: the header skeletons include, the
/// state its two sources share, and the sources (computation; phases, prediction and report).
pub const RUNTIME: [(&str, &str); 4] = [
    ("mpiskel_rt.h", include_str!("../../../skeletons/mpiskel_rt.h")),
    ("mpiskel_rt_internal.h", include_str!("../../../skeletons/mpiskel_rt_internal.h")),
    ("mpiskel_rt.c", include_str!("../../../skeletons/mpiskel_rt.c")),
    ("mpiskel_rt_report.c", include_str!("../../../skeletons/mpiskel_rt_report.c")),
];
/// The runtime's sources, compiled with every skeleton's program.
pub const RUNTIME_SOURCES: [&str; 2] = ["mpiskel_rt.c", "mpiskel_rt_report.c"];

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
    pub fidelity: Vec<mpiskel_cut::fidelity::PanelRow>,
}

/// The template context of the fidelity panel: `fidelity` (rows of formatted figures, empty
/// where the build did not check) and `fidelity_summary` (one sentence).
pub fn fidelity_context(rows: &[mpiskel_cut::fidelity::PanelRow]) -> Value {
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
    context! { fidelity => table, fidelity_summary => mpiskel_cut::fidelity::describe(rows) }
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
    files.extend(RUNTIME.iter().map(|(path, text)| File {
        path: (*path).into(),
        contents: crate::constants::fill(text),
        executable: false,
    }));
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
