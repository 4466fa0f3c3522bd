//! The C back end: renders a [`Skeleton`] as one SPMD C program plus its folder (Makefile,
//! run script, Slurm job, README), through the minijinja templates in `templates/`, and ships
//! the runtime from `skeletons/`. Everything is embedded in the binary.
//!
//! Statements are turned into C lines here (the grammar of calls is code, not layout); the
//! templates lay out the file: declarations, set-up, one function per phase, the class dispatch
//! and the report.
//!
//! # Complexity
//! O(size of the program).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use minijinja::{context, AutoEscape, Environment};
use mpiskel_compress::When;
use mpiskel_trace::Op;
use serde::Serialize;

use crate::program::{Call, Comm, Completion, Layout, Peer, Skeleton, SlotRef, Stmt};
use crate::scale::Scaling;

const SKELETON_C: &str = include_str!("../../templates/skeleton.c.j2");
const MAKEFILE: &str = include_str!("../../templates/Makefile.j2");
const RUN_SH: &str = include_str!("../../templates/run.sh.j2");
const JOB_SLURM: &str = include_str!("../../templates/job.slurm.j2");
const README: &str = include_str!("../../templates/README.md.j2");
/// The runtime header copied into every skeleton.
pub const RUNTIME_H: &str = include_str!("../../skeletons/mpiskel_rt.h");
/// The runtime source copied into every skeleton.
pub const RUNTIME_C: &str = include_str!("../../skeletons/mpiskel_rt.c");

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

#[derive(Serialize)]
struct DirCtx {
    ident: String,
    comment: String,
}

#[derive(Serialize)]
struct TagCtx {
    name: String,
    value: i32,
}

#[derive(Serialize)]
struct CommCtx {
    name: String,
    comment: String,
}

#[derive(Serialize)]
struct TableCtx {
    name: String,
    comment: String,
    lines: Vec<String>,
}

#[derive(Serialize)]
struct PhaseCtx {
    name: String,
    fn_name: String,
    comment: String,
    is_loop: bool,
    is_main: bool,
    full: u64,
    run: u64,
    lines: Vec<String>,
    /// Lines before the phase's function (a time-step loop's table of kinds).
    pre_lines: Vec<String>,
    /// Index of its timer.
    timer: usize,
}

/// A timed part: a phase, or a cut inner loop within one (`parent` ≥ 0).
#[derive(Serialize)]
struct TimerCtx {
    name: String,
    full: u64,
    run: u64,
    parent: i64,
    /// For a cut inner loop: its iterations run per iteration of the parent (0 for the kinds
    /// of a time-step loop, whose counts are fixed).
    inner_run: u64,
    /// 1 where the first iteration replays the application's first, to be counted once.
    first_apart: u8,
    /// Warm-up iterations skipped that this phase prices ([`crate::warmup`]).
    warmup: u64,
}

#[derive(Serialize)]
struct ClassCtx {
    timers: Vec<TimerCtx>,
    id: usize,
    prefix: String,
    n_ranks: usize,
    ranks_text: String,
    notation: String,
    phases: Vec<PhaseCtx>,
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

struct Names<'a> {
    skel: &'a Skeleton,
    comm_names: Vec<String>,
}

impl Names<'_> {
    fn peer(&self, p: &Peer) -> String {
        match p {
            Peer::Dir(i) => format!("nbr[{}]", self.skel.directions[*i].ident),
            Peer::Null => "MPI_PROC_NULL".into(),
            Peer::Any => "MPI_ANY_SOURCE".into(),
            Peer::Rank(r) => r.to_string(),
        }
    }

    fn tag(&self, t: i32) -> String {
        if t < 0 {
            return "MPI_ANY_TAG".into();
        }
        if let Some((traced, _)) = self.skel.message_tags.iter().find(|m| m.1 == t) {
            return format!("TAG_MSG{traced}");
        }
        self.skel
            .directions
            .iter()
            .find(|d| d.tag == t)
            .map_or_else(|| t.to_string(), |d| format!("TAG_{}", tag_stem(&d.ident)))
    }

    /// The count of a send: its bytes, or this rank's entry of its size table.
    /// A compute block's seconds, times this rank's factor where the block has a table.
    fn times(seconds: &str, factors: Option<usize>) -> String {
        factors
            .map_or_else(|| seconds.to_owned(), |t| format!("{seconds} * compute_factor[{t}][me]"))
    }

    fn bytes(bytes: u64, sizes: Option<usize>) -> String {
        sizes.map_or_else(|| bytes.to_string(), |t| format!("send_size[{t}][me]"))
    }

    fn loop_var(depth: usize) -> String {
        if depth == 0 {
            "it".into()
        } else {
            format!("i{depth}")
        }
    }

    fn call(&self, c: &Call) -> String {
        let reused = |slot: &Option<SlotRef>| {
            slot.filter(|s| {
                self.skel.reused_slots.iter().any(|r| (s.base..s.base + s.ring).contains(r))
            })
            .map_or(String::new(), |s| {
                format!(
                    "MPI_Wait({}, MPI_STATUS_IGNORE); /* may still be pending */\n",
                    slot_expr(&s)
                )
            })
        };
        let pre = match c {
            Call::Send { slot, .. } | Call::Recv { slot, .. } | Call::Collective { slot, .. } => {
                reused(slot)
            }
            _ => String::new(),
        };
        pre + &self.call_only(c)
    }

    fn call_only(&self, c: &Call) -> String {
        match c {
            Call::Send { op, to, tag, bytes, slot, sizes } => {
                let req = slot.map_or(String::new(), |s| format!(", {}", slot_expr(&s)));
                format!(
                    "MPI_{}(sbuf, {}, MPI_BYTE, {}, {}, world{req});",
                    op.name(),
                    Self::bytes(*bytes, *sizes),
                    self.peer(to),
                    self.tag(*tag)
                )
            }
            Call::Recv { from, tag, bytes, count, offset, slot, .. } => {
                let ring = slot.filter(|s| s.ring > 1).map_or(String::new(), |s| {
                    format!(" + (size_t){} * {}", Names::loop_var(s.depth), count.div_ceil(8) * 8)
                });
                let buf = if *offset == 0 && ring.is_empty() {
                    "rbuf".to_owned()
                } else {
                    format!("rbuf + {offset}{ring}")
                };
                let note = if count != bytes {
                    format!(" /* {bytes} B in the trace; room for the channel's largest */")
                } else {
                    String::new()
                };
                let (f, last) = match slot {
                    Some(s) => ("Irecv", slot_expr(s)),
                    None => ("Recv", "MPI_STATUS_IGNORE".to_owned()),
                };
                format!(
                    "MPI_{f}({buf}, {count}, MPI_BYTE, {}, {}, world, {last});{note}",
                    self.peer(from),
                    self.tag(*tag)
                )
            }
            Call::SendRecv { to, tag, bytes, from, recv_tag, count, sizes } => format!(
                "MPI_Sendrecv(sbuf, {}, MPI_BYTE, {}, {}, rbuf, {count}, MPI_BYTE, {}, {}, world, MPI_STATUS_IGNORE);",
                Self::bytes(*bytes, *sizes),
                self.peer(to),
                self.tag(*tag),
                self.peer(from),
                self.tag(*recv_tag)
            ),
            Call::Probe { from, tag } => {
                format!("sk_iprobe({}, {}, world);", self.peer(from), self.tag(*tag))
            }
            Call::Complete { how, slots, traced } => {
                let note = match traced {
                    Op::Test | Op::Testall | Op::Testany | Op::Testsome
                        if *how != Completion::Poll =>
                    {
                        format!(" /* MPI_{traced} completed these in the trace */")
                    }
                    _ => String::new(),
                };
                let contiguous = slots.windows(2).all(|w| w[1] == w[0] + 1);
                let first = slots.first().copied().unwrap_or(0);
                let n = slots.len();
                match how {
                    Completion::Poll => {
                        format!("sk_poll(world); /* MPI_{traced} completed nothing in the trace */")
                    }
                    Completion::All if n == 1 => {
                        format!("MPI_Wait(&req[{first}], MPI_STATUS_IGNORE);{note}")
                    }
                    Completion::All if contiguous => {
                        format!("MPI_Waitall({n}, &req[{first}], sk_statuses({n}));{note}")
                    }
                    Completion::All => format!(
                        "sk_waitall(req, {n}, (const int[]){{{}}});{note}",
                        slots.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                    ),
                    Completion::Any | Completion::Some => {
                        let f = if *how == Completion::Any { "sk_waitany" } else { "sk_waitsome" };
                        if contiguous {
                            format!("{f}(&req[{first}], {n});{note}")
                        } else {
                            // Not consecutive: wait for them one by one, in order.
                            format!(
                                "sk_waitall(req, {n}, (const int[]){{{}}}); /* MPI_{traced} over scattered requests */",
                                slots.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                            )
                        }
                    }
                }
            }
            Call::Collective { op, traced, comm, root, bytes, slot } => {
                let cm = &self.comm_names[*comm];
                let blocking_name = traced.name().strip_prefix('I').unwrap_or(traced.name());
                let note = if slot.is_some() {
                    if !blocking_name.eq_ignore_ascii_case(op.name()) {
                        format!(" /* MPI_{traced} in the trace */")
                    } else {
                        String::new()
                    }
                } else if traced != op {
                    format!(" /* MPI_{traced} in the trace */")
                } else {
                    String::new()
                };
                let root = root.unwrap_or(0);
                let (count, ty) =
                    if bytes % 8 == 0 { (bytes / 8, "MPI_DOUBLE") } else { (*bytes, "MPI_UNSIGNED_CHAR") };
                let s = match op {
                    Op::Barrier => format!("MPI_Barrier({cm});"),
                    Op::Bcast => format!("MPI_Bcast(rbuf, {bytes}, MPI_BYTE, {root}, {cm});"),
                    Op::Reduce => {
                        format!("MPI_Reduce(sbuf, rbuf, {count}, {ty}, MPI_SUM, {root}, {cm});")
                    }
                    Op::Allreduce => {
                        format!("MPI_Allreduce(sbuf, rbuf, {count}, {ty}, MPI_SUM, {cm});")
                    }
                    Op::Scan => format!("MPI_Scan(sbuf, rbuf, {count}, {ty}, MPI_SUM, {cm});"),
                    Op::Exscan => format!("MPI_Exscan(sbuf, rbuf, {count}, {ty}, MPI_SUM, {cm});"),
                    Op::Gather => format!(
                        "MPI_Gather(sbuf, {bytes}, MPI_BYTE, rbuf, {bytes}, MPI_BYTE, {root}, {cm});"
                    ),
                    Op::Scatter => format!(
                        "MPI_Scatter(sbuf, {bytes}, MPI_BYTE, rbuf, {bytes}, MPI_BYTE, {root}, {cm});"
                    ),
                    Op::Allgather => format!(
                        "MPI_Allgather(sbuf, {bytes}, MPI_BYTE, rbuf, {bytes}, MPI_BYTE, {cm});"
                    ),
                    Op::Alltoall => format!(
                        "MPI_Alltoall(sbuf, {bytes}, MPI_BYTE, rbuf, {bytes}, MPI_BYTE, {cm});"
                    ),
                    Op::ReduceScatterBlock => format!(
                        "MPI_Reduce_scatter_block(sbuf, rbuf, {count}, {ty}, MPI_SUM, {cm});"
                    ),
                    other => format!("/* MPI_{other}: not reproduced */"),
                };
                // The non-blocking form: MPI_Ibcast(…, &req[k]).
                let s = match slot {
                    Some(r) if s.starts_with("MPI_") => {
                        let body = s.trim_end_matches(");");
                        let name = &body[4..];
                        let lower = name[..1].to_lowercase() + &name[1..];
                        format!("MPI_I{lower}, {});", slot_expr(r))
                    }
                    _ => s,
                };
                s + &note
            }
        }
    }

    fn stmts(&self, body: &[Stmt], out: &mut Vec<String>, indent: usize) {
        let pad = "    ".repeat(indent);
        for s in body {
            match s {
                Stmt::Compute { seconds: x, replay: Some(t), removed, .. } => {
                    let r = &self.skel.replays[*t];
                    let value = format!(
                        "replay_{t}[sk_replay_row({t}, {}, {})][class_column[me]]",
                        r.seconds.len(),
                        r.first_rows
                    );
                    let what = format!(
                        "{} s on average, as recorded in {} of the {} iterations",
                        seconds(*x),
                        r.iterations.len(),
                        r.full
                    );
                    out.push(if *removed > 0.0 {
                        format!(
                            "{pad}sk_compute_as_recorded_less({value}, {}); /* {what}, of which {} s \
                             are not run but added to the prediction */",
                            seconds(*removed),
                            seconds(*removed)
                        )
                    } else {
                        format!("{pad}sk_compute_as_recorded({value}); /* {what} */")
                    });
                }
                Stmt::Compute { seconds: x, dist: None, removed, factors, .. }
                    if *removed > 0.0 =>
                {
                    let f =
                        if factors.is_some() { "sk_compute_less_whole" } else { "sk_compute_less" };
                    out.push(format!(
                        "{pad}{f}({}, {}); /* {} s of it are not run but added to the \
                         prediction */",
                        Self::times(&seconds(*x), *factors),
                        seconds(*removed),
                        seconds(*removed)
                    ));
                }
                Stmt::Compute { seconds: x, dist: None, factors, .. } => {
                    out.push(format!("{pad}sk_compute({});", Self::times(&seconds(*x), *factors)));
                }
                Stmt::Compute { seconds: x, dist: Some(d), removed, factors: None, .. }
                    if *removed > 0.0 =>
                {
                    out.push(format!(
                        "{pad}sk_compute_drawn_less({d}, {}); /* {} s on average, of which {} s \
                         are not run but added to the prediction */",
                        seconds(*removed),
                        seconds(*x),
                        seconds(*removed)
                    ));
                }
                Stmt::Compute { seconds: x, dist: Some(d), removed, factors: Some(t), .. }
                    if *removed > 0.0 =>
                {
                    out.push(format!(
                        "{pad}sk_compute_drawn_scaled_less({d}, compute_factor[{t}][me], {}); /* {} \
                         s on average, times this rank's factor, of which {} s are not run but \
                         added to the prediction */",
                        seconds(*removed),
                        seconds(*x),
                        seconds(*removed)
                    ));
                }
                Stmt::Compute { seconds: x, dist: Some(d), factors: None, .. } => out.push(
                    format!("{pad}sk_compute_drawn({d}); /* {} s on average */", seconds(*x)),
                ),
                Stmt::Compute { seconds: x, dist: Some(d), factors: Some(t), .. } => {
                    out.push(format!(
                        "{pad}sk_compute_drawn_scaled({d}, compute_factor[{t}][me]); /* {} s on \
                         average, times this rank's factor */",
                        seconds(*x)
                    ))
                }
                Stmt::Call { call } => {
                    out.extend(self.call(call).lines().map(|l| format!("{pad}{l}")));
                }
                Stmt::Loop { depth, count, body, note } => {
                    let v = Self::loop_var(*depth);
                    out.push(format!("{pad}/* {note} */"));
                    out.push(format!("{pad}for (int {v} = 0; {v} < {count}; {v}++) {{"));
                    self.stmts(body, out, indent + 1);
                    out.push(format!("{pad}}}"));
                }
                // Rendered by its phase (each step's kind is in the phase's table).
                Stmt::Steps { .. } => {}
                Stmt::Guard { when, depth, body, count } => {
                    let v = Self::loop_var(*depth);
                    let cond = match when {
                        When::First => format!("{v} == 0"),
                        When::Last if *depth == 0 => format!("{v} == run - 1"),
                        When::Last => format!("{v} == {} - 1", count),
                    };
                    let what = match when {
                        When::First => "first",
                        When::Last => "last",
                    };
                    out.push(format!("{pad}if ({cond}) {{ /* only in the {what} iteration */"));
                    self.stmts(body, out, indent + 1);
                    out.push(format!("{pad}}}"));
                }
            }
        }
    }
}

/// `&req[3]`, or `&req[3 + i1]` for a ring.
fn slot_expr(s: &SlotRef) -> String {
    if s.ring > 1 {
        format!("&req[{} + {}]", s.base, Names::loop_var(s.depth))
    } else {
        format!("&req[{}]", s.base)
    }
}

/// What a phase's comment says: where it came from, its iterations, calls and computation.
pub(crate) fn phase_comment(p: &crate::program::Phase) -> String {
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

/// Renders the skeleton folder.
pub fn render(skel: &Skeleton, scaling: &Scaling, meta: &Meta) -> Result<Vec<File>, RenderError> {
    let grid_dims = skel.grid_coords.first().map_or(0, Vec::len);
    let comm_names: Vec<String> = skel.comms.iter().map(|c| comm_name(c, grid_dims).0).collect();
    let names = Names { skel, comm_names: comm_names.clone() };

    // Directions and tags.
    let directions: Vec<DirCtx> = skel
        .directions
        .iter()
        .map(|d| DirCtx {
            ident: d.ident.clone(),
            comment: if d.name != d.ident {
                format!("{} (offset {:?})", d.name, d.offset)
            } else if d.offset.is_empty() {
                String::new()
            } else {
                format!("offset {:?}", d.offset)
            },
        })
        .collect();
    let mut tags: BTreeMap<i32, String> = BTreeMap::new();
    for d in &skel.directions {
        tags.entry(d.tag).or_insert_with(|| format!("TAG_{}", tag_stem(&d.ident)));
    }
    for (traced, t) in &skel.message_tags {
        tags.insert(*t, format!("TAG_MSG{traced}"));
    }
    let tags: Vec<TagCtx> = tags.into_iter().map(|(value, name)| TagCtx { name, value }).collect();

    // Set-up lines.
    let mut setup = Vec::new();
    let mut neighbour_table = Vec::new();
    let mut color_tables = Vec::new();
    let world_comment;
    match &skel.layout {
        Layout::Cartesian { dims, periods } => {
            world_comment = "the Cartesian communicator of the topology".to_owned();
            let nd = dims.len();
            let list = |v: Vec<String>| v.join(", ");
            setup.push(format!(
                "int dims[{nd}] = {{{}}}, periods[{nd}] = {{{}}};",
                list(dims.iter().map(usize::to_string).collect()),
                list(periods.iter().map(|p| if *p { "1" } else { "0" }.to_owned()).collect())
            ));
            setup.push(format!(
                "MPI_Cart_create(MPI_COMM_WORLD, {nd}, dims, periods, 0, &world); /* ranks keep their order */"
            ));
            // Moves along one dimension come from MPI_Cart_shift, in pairs where both exist.
            let mut done = vec![false; skel.directions.len()];
            for (i, d) in skel.directions.iter().enumerate() {
                if done[i] {
                    continue;
                }
                let nonzero: Vec<(usize, i64)> =
                    d.offset.iter().copied().enumerate().filter(|(_, o)| *o != 0).collect();
                if d.offset.is_empty() || nonzero.is_empty() {
                    setup.push(format!("nbr[{}] = rank;", d.ident));
                    done[i] = true;
                    continue;
                }
                if let [(k, o)] = nonzero[..] {
                    if o.abs() == 1 {
                        let back = skel.directions.iter().position(|e| {
                            e.offset
                                .iter()
                                .enumerate()
                                .all(|(j, &x)| if j == k { x == -o } else { x == 0 })
                                && !e.offset.is_empty()
                        });
                        let (minus, plus) = if o > 0 { (back, Some(i)) } else { (Some(i), back) };
                        if let Some(b) = back {
                            done[b] = true;
                        }
                        done[i] = true;
                        let name = |x: Option<usize>| {
                            x.map_or_else(
                                || "&unused".to_owned(),
                                |j| format!("&nbr[{}]", skel.directions[j].ident),
                            )
                        };
                        if back.is_none() && !setup.iter().any(|l| l == "int unused;") {
                            setup.insert(1, "int unused;".into());
                        }
                        setup.push(format!(
                            "MPI_Cart_shift(world, {k}, 1, {}, {});",
                            name(minus),
                            name(plus)
                        ));
                        continue;
                    }
                }
                done[i] = true;
                let off: Vec<String> =
                    (0..nd).map(|k| d.offset.get(k).copied().unwrap_or(0).to_string()).collect();
                setup.push(format!(
                    "nbr[{}] = sk_cart_neighbour(world, {nd}, (const int[]){{{}}});",
                    d.ident,
                    off.join(", ")
                ));
            }
        }
        Layout::Table { neighbours } => {
            world_comment = "MPI_COMM_WORLD".to_owned();
            setup.push("world = MPI_COMM_WORLD;".into());
            setup.push("for (int d = 0; d < N_DIRECTIONS; d++) {".into());
            setup.push(
                "    nbr[d] = neighbours[rank][d] < 0 ? MPI_PROC_NULL : neighbours[rank][d];"
                    .into(),
            );
            setup.push("}".into());
            for row in neighbours {
                neighbour_table.push(format!(
                    "{{{}}},",
                    row.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Layout::None => {
            world_comment = "MPI_COMM_WORLD".to_owned();
            setup.push("world = MPI_COMM_WORLD;".into());
        }
    }
    // Sub-communicators.
    let mut comms = Vec::new();
    for c in &skel.comms {
        let (name, comment) = comm_name(c, grid_dims);
        match c {
            Comm::World | Comm::SelfComm => continue,
            Comm::Slice { free } => {
                if matches!(skel.layout, Layout::Cartesian { .. }) {
                    let remain: Vec<&str> =
                        (0..grid_dims).map(|k| if free.contains(&k) { "1" } else { "0" }).collect();
                    setup.push(format!(
                        "MPI_Cart_sub(world, (const int[]){{{}}}, &{name});",
                        remain.join(", ")
                    ));
                } else {
                    let table = format!("{name}_color");
                    let colors: Vec<usize> = skel
                        .grid_coords
                        .iter()
                        .map(|c| {
                            (0..c.len())
                                .filter(|k| !free.contains(k))
                                .fold(0, |a, k| a * 1000 + c[k])
                        })
                        .collect();
                    color_tables.push(TableCtx {
                        name: table.clone(),
                        comment: format!("Which {name} each rank belongs to."),
                        lines: table_lines(&colors, 16),
                    });
                    setup.push(format!(
                        "MPI_Comm_split(MPI_COMM_WORLD, {table}[rank], rank, &{name});"
                    ));
                }
            }
            Comm::Strided { size, stride: 1 } => {
                setup
                    .push(format!("MPI_Comm_split(MPI_COMM_WORLD, rank / {size}, rank, &{name});"));
            }
            Comm::Strided { size, stride } => {
                setup.push(format!(
                    "MPI_Comm_split(MPI_COMM_WORLD, rank / {} * {stride} + rank % {stride}, rank, &{name});",
                    size * stride
                ));
            }
        }
        comms.push(CommCtx { name, comment });
    }

    // Classes and phases.
    let multi = skel.classes.len() > 1;
    let classes: Vec<ClassCtx> = skel
        .classes
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let prefix = if multi { format!("c{ci}_") } else { String::new() };
            let mut timers = Vec::new();
            let phases = c
                .phases
                .iter()
                .map(|p| {
                    let timer = timers.len();
                    timers.push(TimerCtx {
                        name: p.name.clone(),
                        full: p.full,
                        run: p.run,
                        warmup: p.warmup,
                        parent: -1,
                        inner_run: 0,
                        first_apart: u8::from(crate::replay::replays_first(&p.body, &skel.replays)),
                    });
                    let mut lines = Vec::new();
                    let mut pre_lines = Vec::new();
                    if let (Some(steps), [Stmt::Steps { cases }]) = (&p.steps, p.body.as_slice())
                    {
                        let table = format!("{prefix}{}_kind", p.name);
                        let kinds = steps.run_kinds();
                        pre_lines.push(String::new());
                        pre_lines.push(format!(
                            "/* The kind of each time step {} runs: {} of the application's {},\n * \
                             chosen so that every kind runs. */",
                            p.name,
                            kinds.len(),
                            steps.kinds.len()
                        ));
                        pre_lines.push(format!(
                            "static const unsigned char {table}[{}] = {{",
                            kinds.len()
                        ));
                        pre_lines.extend(table_lines(&kinds, 24).into_iter().map(|l| format!("    {l}")));
                        pre_lines.push("};".into());
                        let first = timers.len();
                        for (k, case) in cases.iter().enumerate() {
                            timers.push(TimerCtx {
                                name: format!("{}.kind{k}", p.name),
                                full: case.full,
                                run: case.run,
                                parent: timer as i64,
                                inner_run: 0,
                                first_apart: 0,
                                warmup: 0,
                            });
                        }
                        lines.push(
                            "double t_step = MPI_Wtime(); /* each kind of step is timed on its own */"
                                .into(),
                        );
                        lines.push(format!("switch ({table}[it]) {{"));
                        for (k, case) in cases.iter().enumerate() {
                            lines.push(format!(
                                "case {k}: /* {} of the application's steps are of this kind, {} run: {} */",
                                case.full, case.run, case.note
                            ));
                            names.stmts(&case.body, &mut lines, 1);
                            lines.push("    break;".into());
                        }
                        lines.push("}".into());
                        lines.push(format!("sk_phase_add({first} + {table}[it], MPI_Wtime() - t_step);"));
                    }
                    for (i, st) in p.body.iter().enumerate().filter(|_| p.steps.is_none()) {
                        match p.inner {
                            Some(ic) if ic.index == i => {
                                let sub = timers.len();
                                timers.push(TimerCtx {
                                    name: format!("{}.inner", p.name),
                                    full: p.full * ic.full,
                                    run: p.run * ic.run,
                                    parent: timer as i64,
                                    inner_run: ic.run,
                                    first_apart: 0,
                                    warmup: 0,
                                });
                                lines.push(format!(
                                    "double t_inner = MPI_Wtime(); /* the inner loop runs {} of its {} iterations, timed on its own (its first apart) */",
                                    ic.run, ic.full
                                ));
                                match st {
                                    // Its first iteration is timed apart (`sk_inner_first`).
                                    Stmt::Loop { depth, count, body, note } => {
                                        let v = Names::loop_var(*depth);
                                        lines.push(format!("/* {note} */"));
                                        lines.push(format!("for (int {v} = 0; {v} < {count}; {v}++) {{"));
                                        names.stmts(body, &mut lines, 1);
                                        lines.push(format!(
                                            "    if ({v} == 0) sk_inner_first({sub}, MPI_Wtime() - t_inner);"
                                        ));
                                        lines.push("}".into());
                                    }
                                    _ => names.stmts(std::slice::from_ref(st), &mut lines, 0),
                                }
                                lines.push(format!("sk_phase_add({sub}, MPI_Wtime() - t_inner);"));
                            }
                            _ => names.stmts(std::slice::from_ref(st), &mut lines, 0),
                        }
                    }
                    let comment = phase_comment(p);
                    PhaseCtx {
                        fn_name: format!("{prefix}{}", p.name),
                        name: p.name.clone(),
                        comment,
                        is_loop: p.is_loop,
                        // A time-step loop runs the steps of its table.
                        is_main: p.name == "main_loop" && p.steps.is_none(),
                        pre_lines,
                        full: p.full,
                        run: p.run,
                        lines,
                        timer,
                    }
                })
                .collect();
            ClassCtx {
                timers,
                id: ci,
                prefix,
                n_ranks: c.ranks.len(),
                ranks_text: if multi { ranks_text(&c.ranks) } else { String::new() },
                notation: c.notation.clone(),
                phases,
            }
        })
        .collect();

    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let templates = [
        ("skeleton.c", SKELETON_C),
        ("Makefile", MAKEFILE),
        ("run.sh", RUN_SH),
        ("job.slurm", JOB_SLURM),
        ("README.md", README),
    ];
    for (name, src) in templates {
        env.add_template(name, src).map_err(|source| RenderError::new(name, source))?;
    }
    let ctx = context! {
        name => meta.name,
        trace => meta.trace,
        version => meta.version,
        n_ranks => skel.n_ranks,
        topology => skel.topology,
        classes => classes,
        n_classes => skel.classes.len(),
        class_table => table_lines(&skel.class_of_rank, 16),
        neighbour_table => neighbour_table,
        color_tables => color_tables,
        directions => directions,
        tags => tags,
        message_tags => !skel.message_tags.is_empty(),
        n_slots => skel.n_slots,
        world_comment => world_comment,
        comms => comms,
        setup => setup,
        send_bytes => skel.send_bytes,
        recv_bytes => skel.recv_bytes,
        distributions => skel
            .distributions
            .iter()
            .map(|d| format!(
                "{{{}}},",
                d.q.iter().map(|x| seconds(*x)).collect::<Vec<_>>().join(", ")
            ))
            .collect::<Vec<_>>(),
        quantiles => crate::program::QUANTILES,
        size_tables => skel
            .size_tables
            .iter()
            .map(|t| table_lines(&t.iter().map(u64::to_string).collect::<Vec<_>>(), 16))
            .collect::<Vec<_>>(),
        compute_factors => skel
            .compute_factors
            .iter()
            .map(|t| table_lines(&t.iter().map(|f| format!("{f:.4}")).collect::<Vec<_>>(), 8))
            .collect::<Vec<_>>(),
        send_buffer => skel.send_buffer,
        replays => skel.replays.iter().map(|r| {
            let class = &skel.classes[r.class];
            let rows = r.seconds.len();
            let cols = class.ranks.len();
            let of = if r.per_iteration > 1 {
                format!(", {} executions each", r.per_iteration)
            } else {
                String::new()
            };
            context! {
                rows => rows,
                cols => cols,
                comment => format!(
                    "class {} (ranks {}): the application's iteration{} {} of 0-{}{of}; recorded \
                     values{} × {:.4}",
                    r.class,
                    ranks_text(&class.ranks),
                    if r.iterations.len() > 1 { "s" } else { "" },
                    iterations_text(&r.iterations),
                    r.full.saturating_sub(1),
                    if r.first_rows > 0 { " (the first iteration's as they are, the others'" } else { "" },
                    r.scale
                ) + if r.first_rows > 0 { ")" } else { "" },
                lines => r.seconds.iter().map(|row| format!(
                    "{{{}}},",
                    row.iter().map(|x| format!("{x:.4e}")).collect::<Vec<_>>().join(", ")
                )).collect::<Vec<_>>(),
            }
        }).collect::<Vec<_>>(),
        class_columns => {
            let mut col = vec![0usize; skel.n_ranks as usize];
            for c in &skel.classes {
                for (i, &r) in c.ranks.iter().enumerate() {
                    if let Some(x) = col.get_mut(r as usize) {
                        *x = i;
                    }
                }
            }
            table_lines(&col, 16)
        },
        rank_weights => if skel.rank_weight.iter().any(|w| (w - 1.0).abs() > 0.005) {
            table_lines(&skel.rank_weight.iter().map(|w| format!("{w:.4}")).collect::<Vec<_>>(), 8)
        } else {
            Vec::new()
        },
        ..scaling_context(scaling, &skel.matching),
    };
    let mut files = Vec::new();
    for (name, _) in templates {
        let t = env.get_template(name).map_err(|source| RenderError::new(name, source))?;
        let mut text = t.render(&ctx).map_err(|source| RenderError::new(name, source))?;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        files.push(File {
            path: name.to_owned(),
            contents: text,
            executable: name.ends_with(".sh") || name.ends_with(".slurm"),
        });
    }
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
