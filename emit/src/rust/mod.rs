//! The Rust back end: renders a [`Skeleton`] as a Cargo project whose `src/main.rs` uses the
//! `mpi` crate (rsmpi), from the same program IR as the C back end.
//!
//! The program is built as tokens with `quote!` (identifiers by `format_ident!`, numbers as
//! unsuffixed literals), parsed into a `syn::File` and printed by `prettyplease`. Comments inside
//! function bodies travel as `__note!("…");` statements and become `// …` lines after printing.
//!
//! Non-blocking calls need their buffers to outlive their requests, which rsmpi enforces with
//! scopes. Each scope is the smallest part of a phase that completes every request it starts:
//! one iteration of the phase's loop where possible ([`scope_level`], in `scope.rs`), otherwise the whole phase.
//! Requests sit in numbered slots as in the C skeleton (`req[k]`). A receive uses its slot's own
//! buffer, kept from scope to scope (a scope holds it once); a slot restarted within one scope,
//! and non-blocking collectives, take a fresh buffer from a bump arena emptied after the scope. rsmpi has no process for `MPI_PROC_NULL`: a call toward a
//! missing neighbour is skipped, which is what MPI does with it.
//!
//! The parts: `scope.rs` (where each phase's requests live), `tokens.rs` (statements and calls
//! as tokens), `main_rs.rs` (the file: constants, one function per class, `main`),
//! `topology.rs` (communicators and neighbours in the `Kit`), `tables.rs` (tables of ranks and
//! blocks), `comments.rs` (comments placed in bodies and the file laid out).
//!
//! # Complexity
//! O(size of the program).

mod comments;
mod main_rs;
mod scope;
mod tables;
mod tokens;
mod topology;

use minijinja::context;
use minijinja::value::merge_maps;

use crate::c::{render_templates, scaling_context, File, Meta, RenderError};
use mpiskel_cut::scale::Scaling;
use mpiskel_program::Skeleton;

pub use scope::{needs_program_scope, scope_level, self_contained, ScopeLevel};

/// The runtime module copied into every Rust skeleton as `src/rt/`, by path in the skeleton:
/// the options, the kernel and the compute blocks; the phases' timing, prediction and report;
/// the requests, buffers and calls.
pub const RUNTIME: [(&str, &str); 3] = [
    ("src/rt/mod.rs", include_str!("../../../skeletons/rust/rt/mod.rs")),
    ("src/rt/report.rs", include_str!("../../../skeletons/rust/rt/report.rs")),
    ("src/rt/calls.rs", include_str!("../../../skeletons/rust/rt/calls.rs")),
];
const CARGO_TOML: &str = include_str!("../../../templates/rust/Cargo.toml.j2");
const CARGO_LOCK: &str = include_str!("../../../templates/rust/Cargo.lock.j2");
const README: &str = include_str!("../../../templates/rust/README.md.j2");
const RUN_SH: &str = include_str!("../../../templates/rust/run.sh.j2");
const JOB_SLURM: &str = include_str!("../../../templates/rust/job.slurm.j2");

/// Versions of the crates the emitted project depends on (those it was tested with).
pub const CRATES: [(&str, &str); 4] =
    [("mpi", "0.8.2"), ("bumpalo", "3.20.3"), ("bytemuck", "1.25.2"), ("cpu-time", "1.0.0")];

/// Renders the Cargo project of the skeleton.
pub fn render(skel: &Skeleton, scaling: &Scaling, meta: &Meta) -> Result<Vec<File>, RenderError> {
    let main = main_rs::main_rs(skel, scaling, meta)?;
    let package = package_name(&meta.name);
    let templates = [
        ("Cargo.toml", CARGO_TOML),
        ("Cargo.lock", CARGO_LOCK),
        ("README.md", README),
        ("run.sh", RUN_SH),
        ("job.slurm", JOB_SLURM),
    ];
    let ctx = context! {
        name => meta.name,
        package => package,
        trace => meta.trace,
        version => meta.version,
        n_ranks => skel.n_ranks,
        crates => CRATES.iter().map(|(n, v)| context! { name => n, version => v }).collect::<Vec<_>>(),
        ..merge_maps([scaling_context(scaling, &skel.matching), crate::c::fidelity_context(&meta.fidelity)]),
    };
    let mut files = render_templates(&templates, &ctx)?;
    files.push(File { path: "src/main.rs".into(), contents: main, executable: false });
    files.extend(RUNTIME.iter().map(|(path, text)| File {
        path: (*path).into(),
        contents: crate::constants::fill(text),
        executable: false,
    }));
    Ok(files)
}

/// The Cargo package (and binary) name of a skeleton: `skeleton-bt-w-16`.
pub fn package_name(name: &str) -> String {
    let mut s = String::from("skeleton-");
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    s.trim_end_matches('-').to_owned()
}

/// The skeleton's `src/main.rs` alone (for snapshots and inspection).
pub fn source(files: &[File]) -> &str {
    files.iter().find(|f| f.path == "src/main.rs").map_or("", |f| f.contents.as_str())
}
