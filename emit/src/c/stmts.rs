//! Statements and calls of the program IR as C lines (the grammar of calls is code, not
//! layout): loops, guards, compute blocks, and every MPI call with its peers, tags, buffers and
//! request slots.

use mpiskel_compress::When;
use mpiskel_trace::Op;

use super::text::{message_tag_name, seconds, tag_stem};
use mpiskel_program::{Call, Completion, Element, Peer, Skeleton, SlotRef, Stmt};

pub(super) struct Names<'a> {
    pub(super) skel: &'a Skeleton,
    pub(super) comm_names: Vec<String>,
}

impl Names<'_> {
    pub(super) fn peer(&self, p: &Peer) -> String {
        match p {
            Peer::Dir(i) => format!("nbr[{}]", self.skel.directions[*i].ident),
            Peer::Null => "MPI_PROC_NULL".into(),
            Peer::Any => "MPI_ANY_SOURCE".into(),
            Peer::Rank(r) => r.to_string(),
            Peer::Only { dir, table } => format!(
                "(present[{table}][me] ? nbr[{}] : MPI_PROC_NULL)",
                self.skel.directions[*dir].ident
            ),
        }
    }

    pub(super) fn tag(&self, t: i32) -> String {
        if t < 0 {
            return "MPI_ANY_TAG".into();
        }
        if let Some((traced, _)) = self.skel.message_tags.iter().find(|m| m.1 == t) {
            return message_tag_name(*traced);
        }
        self.skel
            .directions
            .iter()
            .find(|d| d.tag == t)
            .map_or_else(|| t.to_string(), |d| format!("TAG_{}", tag_stem(&d.ident)))
    }

    /// The count of a send: its bytes, or this rank's entry of its size table.
    /// A compute block's seconds, times this rank's factor where the block has a table.
    pub(super) fn times(seconds: &str, factors: Option<usize>) -> String {
        factors
            .map_or_else(|| seconds.to_owned(), |t| format!("{seconds} * compute_factor[{t}][me]"))
    }

    pub(super) fn bytes(bytes: u64, sizes: Option<usize>) -> String {
        sizes.map_or_else(|| bytes.to_string(), |t| format!("send_size[{t}][me]"))
    }

    pub(super) fn loop_var(depth: usize) -> String {
        if depth == 0 {
            "it".into()
        } else {
            format!("i{depth}")
        }
    }

    pub(super) fn call(&self, c: &Call) -> String {
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

    pub(super) fn call_only(&self, c: &Call) -> String {
        match c {
            Call::Send { op, to, tag, bytes, slot, sizes } => {
                let req = slot.map_or(String::new(), |s| format!(", {}", slot_expr(&s)));
                // A non-blocking send made buffered is `MPI_Ibsend`.
                let name = if *op == Op::Bsend && slot.is_some() { "Ibsend" } else { op.name() };
                format!(
                    "MPI_{name}(sbuf, {}, MPI_BYTE, {}, {}, world{req});",
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
            Call::Complete { how, slots, traced } => completion(*how, slots, *traced),
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
                let (element, count) = Element::of(*bytes);
                let ty = element.mpi_name();
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

    pub(super) fn stmts(&self, body: &[Stmt], out: &mut Vec<String>, indent: usize) {
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
                        "{} s on average, as recorded in {} of the {} {}",
                        seconds(*x),
                        r.iterations.len(),
                        r.full,
                        if r.steps { "steps of this kind" } else { "iterations" }
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
                Stmt::Compute { seconds: x, dist: None, factors, keep_only: true, .. } => {
                    out.push(format!(
                        "{pad}sk_compute_keep({}); /* every rank runs a short part; the most any \
                         rank skips is added to the prediction */",
                        Self::times(&seconds(*x), *factors)
                    ));
                }
                Stmt::Compute { seconds: x, dist: Some(d), factors, keep_only: true, .. } => {
                    let what = "every rank runs a short part of its draw; the most any rank \
                                skips is added to the prediction";
                    out.push(match factors {
                        None => format!(
                            "{pad}sk_compute_drawn_keep({d}); /* {} s on average: {what} */",
                            seconds(*x)
                        ),
                        Some(t) => format!(
                            "{pad}sk_compute_drawn_scaled_keep({d}, compute_factor[{t}][me]); /* {} \
                             s on average, times this rank's factor: {what} */",
                            seconds(*x)
                        ),
                    });
                }
                Stmt::Compute { seconds: x, dist: None, removed, factors, pinned, .. }
                    if *removed > 0.0 =>
                {
                    let f =
                        if factors.is_some() { "sk_compute_less_whole" } else { "sk_compute_less" };
                    let why = pinned.map(|p| format!("{}; ", p.note())).unwrap_or_default();
                    out.push(format!(
                        "{pad}{f}({}, {}); /* {why}{} s of it are not run but added to the \
                         prediction */",
                        Self::times(&seconds(*x), *factors),
                        seconds(*removed),
                        seconds(*removed)
                    ));
                }
                Stmt::Compute { seconds: x, dist: None, factors, pinned: Some(p), .. } => {
                    out.push(format!(
                        "{pad}sk_compute({}); /* {} */",
                        Self::times(&seconds(*x), *factors),
                        p.note()
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
                Stmt::Call { call, polls, .. } => {
                    if *polls > 0 {
                        out.push(format!(
                            "{pad}sk_polls({polls}, world); /* failed polls of the application \
                             before the call that follows */"
                        ));
                    }
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
pub(super) fn slot_expr(s: &SlotRef) -> String {
    if s.ring > 1 {
        format!("&req[{} + {}]", s.base, Names::loop_var(s.depth))
    } else {
        format!("&req[{}]", s.base)
    }
}

/// The C of a completion of `slots` (`how`), traced as `traced`.
fn completion(how: Completion, slots: &[u32], traced: Op) -> String {
    let note = match traced {
        Op::Test | Op::Testall | Op::Testany | Op::Testsome if how != Completion::Poll => {
            format!(" /* MPI_{traced} completed these in the trace */")
        }
        _ => String::new(),
    };
    let contiguous = slots.windows(2).all(|w| w[1] == w[0] + 1);
    let first = slots.first().copied().unwrap_or(0);
    let n = slots.len();
    match how {
        // A wait that completed nothing had no request to wait for: the same empty
        // wait, which costs nothing in any MPI (a progress poll in its place costs
        // SimGrid's simulated probe time, which grows with each probe that finds
        // nothing).
        Completion::Poll if traced.is_wait() => {
            format!("sk_wait_none(); /* MPI_{traced} had no request to complete in the trace */")
        }
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
            let f = if how == Completion::Any { "sk_waitany" } else { "sk_waitsome" };
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
