//! What the C templates are given: directions and tags, the set-up lines of the topology (the
//! Cartesian communicator and neighbours, or a table), the sub-communicators, each class's
//! timers and phases as lines of C, and the tables of ranks and blocks.

use std::collections::BTreeMap;

use minijinja::{context, Value};
use serde::Serialize;

use super::stmts::Names;
use super::text::{
    comm_name, iterations_text, message_tag_name, phase_comment, ranks_text, seconds, table_lines,
    tag_stem,
};
use mpiskel_program::{Comm, Layout, Phase, Skeleton, Stmt};

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
    /// Lines at the start of the phase's function, before its loop (a time-step loop counts
    /// the steps of each kind it runs).
    head_lines: Vec<String>,
    /// A main loop of time steps, whose steps `--iterations` sets.
    steps_run: bool,
    /// Index of its timer.
    timer: usize,
    /// Its [`Phase::scale`] as C, where it is not 1 (a part of a stretch cut short).
    scale: Option<String>,
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
    /// Warm-up iterations skipped that this phase prices ([`mpiskel_cut::warmup`]).
    warmup: u64,
    /// For a kind of time step that stands for kinds of its family the skeleton does not run,
    /// or for the rest of its step cut short ([`mpiskel_program::StepCase::scale`]): its scale
    /// as C; `None` where it is 1.
    scale: Option<String>,
    /// What the scale stands for, for the comment beside it.
    stands_for: &'static str,
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
    /// The slot of each timer among all classes' timer names, where blocks run a short part on
    /// every rank and the classes' phases differ (empty elsewhere; see
    /// [`crate::timers::keep_slots`]).
    keep_slots: Vec<usize>,
}

/// Everything the templates need of the program.
pub(super) fn program(skel: &Skeleton) -> Value {
    let grid_dims = skel.grid_coords.first().map_or(0, Vec::len);
    let comm_names: Vec<String> = skel.comms.iter().map(|c| comm_name(c, grid_dims).0).collect();
    let names = Names { skel, comm_names };
    let (directions, tags) = directions_and_tags(skel);
    let mut topo = topology(skel);
    let comms = sub_communicators(skel, &mut topo);
    let Topology { setup, neighbour_table, color_tables, world_comment } = topo;
    let mut classes = classes(skel, &names);
    let timer_names: Vec<Vec<String>> =
        classes.iter().map(|c| c.timers.iter().map(|t| t.name.clone()).collect()).collect();
    let mut keep_slots_n = 0;
    if let Some((slots, n)) = crate::timers::keep_slots(skel, &timer_names) {
        keep_slots_n = n;
        for (c, s) in classes.iter_mut().zip(slots) {
            c.keep_slots = s;
        }
    }
    context! {
        keep_slots_n => keep_slots_n,
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
        all_tags => skel.all_tags,
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
        quantiles => mpiskel_program::QUANTILES,
        size_tables => skel
            .size_tables
            .iter()
            .map(|t| table_lines(&t.iter().map(u64::to_string).collect::<Vec<_>>(), 16))
            .collect::<Vec<_>>(),
        presence_tables => skel
            .presence_tables
            .iter()
            .map(|t| {
                table_lines(&t.iter().map(|&b| u8::from(b).to_string()).collect::<Vec<_>>(), 32)
            })
            .collect::<Vec<_>>(),
        compute_factors => skel
            .compute_factors
            .iter()
            .map(|t| table_lines(&t.iter().map(|f| format!("{f:.4}")).collect::<Vec<_>>(), 8))
            .collect::<Vec<_>>(),
        send_buffer => skel.send_buffer,
        processor_time => skel.processor_time,
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
                    "class {} (ranks {}): the application's {}{} {} {}{of}; recorded \
                     values{} × {:.4}",
                    r.class,
                    ranks_text(&class.ranks),
                    r.unit(),
                    if r.iterations.len() > 1 { "s" } else { "" },
                    iterations_text(&r.iterations),
                    r.of_what(),
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
    }
}

/// The constants of directions (with their offsets) and of tags.
fn directions_and_tags(skel: &Skeleton) -> (Vec<DirCtx>, Vec<TagCtx>) {
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
    // (Where every message carries its traced tag's, the directions' are not used.)
    for d in skel.directions.iter().filter(|_| !skel.all_tags) {
        tags.entry(d.tag).or_insert_with(|| format!("TAG_{}", tag_stem(&d.ident)));
    }
    for (traced, t) in &skel.message_tags {
        tags.insert(*t, message_tag_name(*traced));
    }
    let tags: Vec<TagCtx> = tags.into_iter().map(|(value, name)| TagCtx { name, value }).collect();

    (directions, tags)
}

/// The set-up of the topology: its lines, the table of neighbours or colours, and what the
/// `world` communicator is.
struct Topology {
    setup: Vec<String>,
    neighbour_table: Vec<String>,
    color_tables: Vec<TableCtx>,
    world_comment: String,
}

/// The world communicator and each rank's neighbours.
fn topology(skel: &Skeleton) -> Topology {
    let mut setup = Vec::new();
    let mut neighbour_table = Vec::new();
    let color_tables = Vec::new();
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
    Topology { setup, neighbour_table, color_tables, world_comment }
}

/// The sub-communicators: their set-up lines go to `topo`.
fn sub_communicators(skel: &Skeleton, topo: &mut Topology) -> Vec<CommCtx> {
    let grid_dims = skel.grid_coords.first().map_or(0, Vec::len);
    let Topology { setup, color_tables, .. } = topo;
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
            Comm::Groups { colours, .. } => {
                let table = format!("{name}_color");
                color_tables.push(TableCtx {
                    name: table.clone(),
                    comment: format!(
                        "Which of {name}'s groups each rank belongs to (a rank in none of them \
                         has one of its own)."
                    ),
                    lines: table_lines(colours, 16),
                });
                setup
                    .push(format!("MPI_Comm_split(MPI_COMM_WORLD, {table}[rank], rank, &{name});"));
            }
        }
        comms.push(CommCtx { name, comment });
    }

    comms
}

/// Each class: its timers and phases.
fn classes(skel: &Skeleton, names: &Names<'_>) -> Vec<ClassCtx> {
    let multi = skel.classes.len() > 1;
    skel.classes
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let prefix = if multi { format!("c{ci}_") } else { String::new() };
            let mut timers = Vec::new();
            let phases =
                c.phases.iter().map(|p| phase_ctx(skel, names, &prefix, p, &mut timers)).collect();
            ClassCtx {
                timers,
                id: ci,
                prefix,
                n_ranks: c.ranks.len(),
                ranks_text: if multi { ranks_text(&c.ranks) } else { String::new() },
                notation: c.notation.clone(),
                phases,
                keep_slots: Vec::new(),
            }
        })
        .collect()
}

/// One phase: its timers (the phase's, and its kinds' or inner loop's) go to `timers`.
fn phase_ctx(
    skel: &Skeleton,
    names: &Names<'_>,
    prefix: &str,
    p: &Phase,
    timers: &mut Vec<TimerCtx>,
) -> PhaseCtx {
    let timer = timers.len();
    timers.push(TimerCtx {
        name: p.name.clone(),
        full: p.full,
        run: p.run,
        warmup: p.warmup,
        scale: None,
        stands_for: "",
        parent: -1,
        inner_run: 0,
        first_apart: u8::from(mpiskel_cut::replay::replays_first(&p.body, &skel.replays)),
    });
    let (lines, pre_lines, head_lines) = match (&p.steps, p.body.as_slice()) {
        (Some(steps), [Stmt::Steps { cases }]) => {
            time_steps(names, prefix, p, steps, cases, timer, timers)
        }
        (Some(_), _) => (Vec::new(), Vec::new(), Vec::new()),
        (None, _) => (body_lines(names, p, timer, timers), Vec::new(), Vec::new()),
    };
    let comment = phase_comment(p);
    PhaseCtx {
        fn_name: format!("{prefix}{}", p.name),
        name: p.name.clone(),
        comment,
        is_loop: p.is_loop,
        // A time-step loop runs the steps of its table.
        is_main: p.name == "main_loop" && p.steps.is_none(),
        steps_run: p.name == "main_loop" && !head_lines.is_empty(),
        pre_lines,
        head_lines,
        full: p.full,
        run: p.run,
        lines,
        timer,
        scale: (p.scale != 1.0).then(|| format!("{:.6}", p.scale)),
    }
}

/// A time-step loop's body: a `switch` on the table of the kinds of step it runs (written
/// before the function), each kind timed on its own; and the line before its loop that counts
/// the steps of each kind where `--iterations` reads the table over again.
fn time_steps(
    names: &Names<'_>,
    prefix: &str,
    p: &Phase,
    steps: &mpiskel_program::StepSchedule,
    cases: &[mpiskel_program::StepCase],
    timer: usize,
    timers: &mut Vec<TimerCtx>,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut pre_lines = Vec::new();
    let table = format!("{prefix}{}_kind", p.name);
    let kinds = steps.run_kinds();
    pre_lines.push(String::new());
    let every = if cases.iter().any(|c| c.run == 0) {
        "every family of kinds runs"
    } else {
        "every kind runs"
    };
    pre_lines.push(format!(
        "/* The kind of each time step {} runs: {} of the application's {},\n * \
         chosen so that {every}. */",
        p.name,
        kinds.len(),
        steps.kinds.len()
    ));
    pre_lines.push(format!("static const unsigned char {table}[{}] = {{", kinds.len()));
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
            scale: (case.scale != 1.0).then(|| format!("{:.6}", case.scale)),
            stands_for: match case.cut {
                Some(cut) if case.scale != cut.factor => {
                    "the rest of its step, cut short, and the kinds of its family that do not run"
                }
                Some(_) => "the rest of its step, cut short",
                None => "the kinds of its family that do not run",
            },
        });
    }
    lines.push(
        "double t_step = sk_part_begin(); /* each kind of step is timed on its own */".into(),
    );
    let rows = kinds.len();
    lines.push(format!("switch ({table}[it % {rows}]) {{"));
    for (k, case) in cases.iter().enumerate() {
        if case.run == 0 {
            // Never run: a kind of a family whose other kinds stand for it.
            continue;
        }
        let family = case.pricing();
        lines.push(format!(
            "case {k}: /* {} of the application's steps are of this kind, {} run{family}: {} */",
            case.full, case.run, case.note
        ));
        names.stmts(&case.body, &mut lines, 1);
        lines.push("    break;".into());
    }
    lines.push("}".into());
    lines.push(format!("sk_phase_add({first} + {table}[it % {rows}], MPI_Wtime() - t_step);"));
    let head = format!(
        "sk_steps_count({first}, {}, {table}, {rows}, run); /* more steps than the table's read it over again */",
        cases.len()
    );
    (lines, pre_lines, vec![head])
}

/// The body of a phase whose statements are not time steps: a cut inner loop, if any, timed
/// on its own with its first iteration apart.
fn body_lines(
    names: &Names<'_>,
    p: &Phase,
    timer: usize,
    timers: &mut Vec<TimerCtx>,
) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, st) in p.body.iter().enumerate() {
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
                    scale: None,
                    stands_for: "",
                });
                lines.push(format!(
                    "double t_inner = sk_part_begin(); /* the inner loop runs {} of its {} iterations, timed on its own (its first apart) */",
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
    lines
}
