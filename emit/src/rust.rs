//! The Rust back end: renders a [`Skeleton`] as a Cargo project whose `src/main.rs` uses the
//! `mpi` crate (rsmpi), from the same program IR as the C back end.
//!
//! The program is built as tokens with `quote!` (identifiers by `format_ident!`, numbers as
//! unsuffixed literals), parsed into a `syn::File` and printed by `prettyplease`. Comments inside
//! function bodies travel as `__note!("…");` statements and become `// …` lines after printing.
//!
//! Non-blocking calls need their buffers to outlive their requests, which rsmpi enforces with
//! scopes. Each scope is the smallest part of a phase that completes every request it starts:
//! one iteration of the phase's loop where possible ([`scope_level`]), otherwise the whole phase.
//! Requests sit in numbered slots as in the C skeleton (`req[k]`). A receive uses its slot's own
//! buffer, kept from scope to scope (a scope holds it once); a slot restarted within one scope,
//! and non-blocking collectives, take a fresh buffer from a bump arena emptied after the scope. rsmpi has no process for `MPI_PROC_NULL`: a call toward a
//! missing neighbour is skipped, which is what MPI does with it.
//!
//! # Complexity
//! O(size of the program).

use std::collections::BTreeSet;

use minijinja::{context, AutoEscape, Environment};
use mpiskel_compress::When;
use mpiskel_trace::Op;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use crate::c::{
    comm_name, phase_comment, ranks_text, scaling_context, seconds, tag_stem, File, Meta,
    RenderError,
};
use crate::program::{Call, Comm, Completion, Layout, Peer, Phase, Skeleton, SlotRef, Stmt};
use crate::scale::Scaling;

/// The runtime module copied into every Rust skeleton as `src/rt.rs`.
pub const RUNTIME_RS: &str = include_str!("../../skeletons/rust/rt.rs");
const CARGO_TOML: &str = include_str!("../../templates/rust/Cargo.toml.j2");
const CARGO_LOCK: &str = include_str!("../../templates/rust/Cargo.lock.j2");
const README: &str = include_str!("../../templates/rust/README.md.j2");
const RUN_SH: &str = include_str!("../../templates/rust/run.sh.j2");
const JOB_SLURM: &str = include_str!("../../templates/rust/job.slurm.j2");

/// Versions of the crates the emitted project depends on (those it was tested with).
pub const CRATES: [(&str, &str); 4] =
    [("mpi", "0.8.2"), ("bumpalo", "3.20.3"), ("bytemuck", "1.25.2"), ("cpu-time", "1.0.0")];

/// Where a phase's requests live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeLevel {
    /// The phase starts no non-blocking call.
    None,
    /// One scope per iteration: every request an iteration starts completes in it.
    Iteration,
    /// One scope around the whole phase.
    Phase,
}

/// Where `phase`'s requests can be scoped: per iteration when every slot started in one
/// iteration is completed later in the same iteration (a guard's starts count only if the guard
/// completes them itself), otherwise around the phase.
pub fn scope_level(phase: &Phase) -> ScopeLevel {
    let mut started = BTreeSet::new();
    let mut pending = BTreeSet::new();
    simulate(&phase.body, &mut started, &mut pending);
    if started.is_empty() {
        ScopeLevel::None
    } else if pending.is_empty() {
        ScopeLevel::Iteration
    } else {
        ScopeLevel::Phase
    }
}

fn slots_of(s: &SlotRef) -> impl Iterator<Item = u32> {
    s.base..s.base + s.ring.max(1)
}

fn simulate(body: &[Stmt], started: &mut BTreeSet<u32>, pending: &mut BTreeSet<u32>) {
    for s in body {
        match s {
            Stmt::Call { call } => match call {
                Call::Send { slot: Some(r), .. }
                | Call::Recv { slot: Some(r), .. }
                | Call::Collective { slot: Some(r), .. } => {
                    for k in slots_of(r) {
                        started.insert(k);
                        pending.insert(k);
                    }
                }
                Call::Complete { how: Completion::All, slots, .. } => {
                    for k in slots {
                        pending.remove(k);
                    }
                }
                // Completes at least one; the others may stay pending.
                Call::Complete { how: Completion::Any | Completion::Some, slots, .. }
                    if slots.len() == 1 =>
                {
                    pending.remove(&slots[0]);
                }
                _ => {}
            },
            Stmt::Loop { body, .. } => simulate(body, started, pending),
            // One case runs per iteration: what any of them leaves pending stays pending.
            Stmt::Steps { cases } => {
                for c in cases {
                    let mut inner = pending.clone();
                    simulate(&c.body, started, &mut inner);
                    pending.extend(inner);
                }
            }
            Stmt::Guard { body, .. } => {
                let mut inner = BTreeSet::new();
                simulate(body, started, &mut inner);
                pending.extend(inner);
            }
            Stmt::Compute { .. } => {}
        }
    }
}

/// Whether loop variable `depth` is read in `body` (by a ring slot or a guard).
fn uses_var(body: &[Stmt], depth: usize) -> bool {
    body.iter().any(|s| match s {
        Stmt::Call { call } => match call {
            Call::Send { slot: Some(r), .. }
            | Call::Recv { slot: Some(r), .. }
            | Call::Collective { slot: Some(r), .. } => r.ring > 1 && r.depth == depth,
            _ => false,
        },
        Stmt::Loop { body, .. } => uses_var(body, depth),
        // The phase's variable picks the kind.
        Stmt::Steps { cases } => depth == 0 || cases.iter().any(|c| uses_var(&c.body, depth)),
        Stmt::Guard { depth: d, body, .. } => *d == depth || uses_var(body, depth),
        Stmt::Compute { .. } => false,
    })
}

fn float(x: f64) -> Literal {
    seconds(x).parse().unwrap_or_else(|_| Literal::f64_unsuffixed(x))
}

fn int(x: u64) -> Literal {
    Literal::u64_unsuffixed(x)
}

thread_local! {
    /// Texts of the comments of the file being generated, by number.
    static NOTES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A `// text` comment at this point of a function body: `__note!(N);` until printed.
fn note(text: &str) -> TokenStream {
    let n = NOTES.with(|v| {
        let mut v = v.borrow_mut();
        v.push(text.to_owned());
        v.len() - 1
    });
    let n = Literal::usize_unsuffixed(n);
    quote! { __note!(#n); }
}

fn doc(text: &str) -> TokenStream {
    let lines = text.lines().map(|l| format!(" {l}"));
    quote! { #(#[doc = #lines])* }
}

fn loop_var(depth: usize) -> proc_macro2::Ident {
    if depth == 0 {
        format_ident!("it")
    } else {
        format_ident!("i{}", depth)
    }
}

struct Gen<'a> {
    skel: &'a Skeleton,
    /// Field of `Kit` for each communicator of the program.
    comms: Vec<TokenStream>,
}

impl Gen<'_> {
    fn tag(&self, t: i32) -> TokenStream {
        if t < 0 {
            return quote! { rt::ANY_TAG };
        }
        if let Some((traced, _)) = self.skel.message_tags.iter().find(|m| m.1 == t) {
            let id = format_ident!("TAG_MSG{}", *traced as u32);
            return quote! { #id };
        }
        match self.skel.directions.iter().find(|d| d.tag == t) {
            Some(d) => {
                let id = format_ident!("TAG_{}", tag_stem(&d.ident));
                quote! { #id }
            }
            None => {
                let l = Literal::i32_unsuffixed(t);
                quote! { #l }
            }
        }
    }

    /// The process of `peer` bound to `p`, then `body`; `None` when the peer is `MPI_PROC_NULL`
    /// (the call is skipped).
    fn with_peer(&self, peer: &Peer, body: TokenStream) -> TokenStream {
        match peer {
            Peer::Dir(i) => {
                let d = format_ident!("{}", self.skel.directions[*i].ident);
                quote! { if let Some(p) = k.at(#d) { #body } }
            }
            Peer::Rank(r) => {
                let r = Literal::u32_unsuffixed(*r);
                quote! { let p = k.world.process_at_rank(#r); #body }
            }
            Peer::Any => quote! { let p = k.world.any_process(); #body },
            Peer::Null => note("toward MPI_PROC_NULL: nothing to do"),
        }
    }

    fn slot(s: &SlotRef) -> TokenStream {
        let base = Literal::u32_unsuffixed(s.base);
        if s.ring > 1 {
            let v = loop_var(s.depth);
            if s.base == 0 {
                quote! { #v }
            } else {
                quote! { #base + #v }
            }
        } else {
            quote! { #base }
        }
    }

    /// This rank's entry of compute factor table `t`.
    fn factor(t: usize) -> TokenStream {
        let t = Literal::usize_unsuffixed(t);
        quote! { COMPUTE_FACTOR[#t][k.all.rank() as usize] }
    }

    /// A compute block's seconds, times this rank's factor where the block has a table.
    fn times(x: f64, factors: Option<usize>) -> TokenStream {
        let x = float(x);
        match factors {
            Some(t) => {
                let f = Self::factor(t);
                quote! { #x * #f }
            }
            None => quote! { #x },
        }
    }

    /// The length of a send: its bytes, or this rank's entry of its size table.
    fn bytes(bytes: u64, sizes: Option<usize>) -> TokenStream {
        match sizes {
            Some(t) => {
                let t = Literal::usize_unsuffixed(t);
                quote! { SEND_SIZE[#t][k.all.rank() as usize] }
            }
            None => {
                let n = int(bytes);
                quote! { #n }
            }
        }
    }

    fn call(&self, c: &Call) -> TokenStream {
        match c {
            Call::Send { op, to, tag, bytes, slot, sizes } => {
                let n = Self::bytes(*bytes, *sizes);
                let t = self.tag(*tag);
                let sync = matches!(op, Op::Ssend | Op::Issend);
                let body = match (slot, sync) {
                    (None, false) if *op == Op::Bsend => {
                        quote! { p.buffered_send_with_tag(&k.sbuf()[..#n], #t); }
                    }
                    (None, false) => quote! { p.send_with_tag(&k.sbuf()[..#n], #t); },
                    (None, true) => quote! { p.synchronous_send_with_tag(&k.sbuf()[..#n], #t); },
                    (Some(s), false) => {
                        let s = Self::slot(s);
                        quote! { req.put(#s, p.immediate_send_with_tag(req.scope(), &k.sbuf()[..#n], #t)); }
                    }
                    (Some(s), true) => {
                        let s = Self::slot(s);
                        quote! { req.put(#s, p.immediate_synchronous_send_with_tag(req.scope(), &k.sbuf()[..#n], #t)); }
                    }
                };
                self.with_peer(to, body)
            }
            Call::Recv { from, tag, bytes, count, offset, slot, .. } => {
                let n = int(*count);
                let t = self.tag(*tag);
                let body = match slot {
                    None => {
                        let (a, b) = (int(*offset), int(offset + count));
                        quote! { p.receive_into_with_tag(&mut b.recv()[#a..#b], #t); }
                    }
                    Some(s) => {
                        let s = Self::slot(s);
                        quote! {
                            let buf = req.recv_buf(#s, #n);
                            req.put(#s, p.immediate_receive_into_with_tag(req.scope(), buf, #t));
                        }
                    }
                };
                let mut out = self.with_peer(from, body);
                if count != bytes {
                    out = quote! { #out };
                    let n =
                        note(&format!("{bytes} B in the trace; room for the channel's largest"));
                    out = quote! { #n #out };
                }
                out
            }
            Call::SendRecv { to, tag, bytes, from, recv_tag, count, sizes } => {
                let (n, m) = (Self::bytes(*bytes, *sizes), int(*count));
                let (st, rtag) = (self.tag(*tag), self.tag(*recv_tag));
                match (to, from) {
                    (Peer::Null, Peer::Null) => {
                        note("MPI_Sendrecv between MPI_PROC_NULLs: nothing to do")
                    }
                    (Peer::Null, _) => self.call(&Call::Recv {
                        op: Op::Recv,
                        from: from.clone(),
                        tag: *recv_tag,
                        bytes: *count,
                        count: *count,
                        offset: 0,
                        slot: None,
                    }),
                    (_, Peer::Null) => self.call(&Call::Send {
                        op: Op::Send,
                        to: to.clone(),
                        tag: *tag,
                        bytes: *bytes,
                        slot: None,
                        sizes: *sizes,
                    }),
                    _ => {
                        let side = |peer: &Peer| match peer {
                            Peer::Dir(i) => {
                                let d = format_ident!("{}", self.skel.directions[*i].ident);
                                quote! { k.at(#d) }
                            }
                            Peer::Rank(r) => {
                                let r = Literal::u32_unsuffixed(*r);
                                quote! { Some(k.world.process_at_rank(#r)) }
                            }
                            _ => quote! { Some(k.world.any_process()) },
                        };
                        let (to, from) = (side(to), side(from));
                        quote! { rt::sendrecv(#to, &k.sbuf()[..#n], #st, #from, &mut b.recv()[..#m], #rtag); }
                    }
                }
            }
            Call::Probe { from, tag } => {
                let t = self.tag(*tag);
                self.with_peer(from, quote! { p.immediate_probe_with_tag(#t); })
            }
            Call::Complete { how, slots, traced } => {
                let ks = slots.iter().map(|s| Literal::u32_unsuffixed(*s));
                let list = quote! { &[#(#ks),*] };
                let mut out = match how {
                    Completion::Poll => {
                        let n = note(&format!("MPI_{traced} completed nothing in the trace"));
                        quote! { #n k.world.any_process().immediate_probe(); }
                    }
                    Completion::All => quote! { req.wait(#list); },
                    Completion::Any => quote! { req.wait_any(#list); },
                    Completion::Some => quote! { req.wait_some(#list); },
                };
                if matches!(traced, Op::Test | Op::Testall | Op::Testany | Op::Testsome)
                    && *how != Completion::Poll
                {
                    let n = note(&format!("MPI_{traced} completed these in the trace"));
                    out = quote! { #n #out };
                }
                out
            }
            Call::Collective { op, traced, comm, root, bytes, slot } => {
                let cm = &self.comms[*comm];
                let root = Literal::u32_unsuffixed(root.unwrap_or(0));
                let n = int(*bytes);
                let (reals, r) = if bytes % 8 == 0 {
                    let r = int(bytes / 8);
                    (true, quote! { #r })
                } else {
                    (false, quote! { #n })
                };
                let (sb, rb, fresh) = if reals {
                    (quote! { k.sreal() }, quote! { b.reals() }, quote! { req.reals(#r) })
                } else {
                    (quote! { k.sbuf() }, quote! { b.recv() }, quote! { req.bytes(#r) })
                };
                let sum = quote! { SystemOperation::sum() };
                let blocking = match op {
                    Op::Barrier => Some(quote! { #cm.barrier(); }),
                    Op::Bcast => Some(
                        quote! { #cm.process_at_rank(#root).broadcast_into(&mut b.recv()[..#n]); },
                    ),
                    Op::Reduce => {
                        Some(quote! { rt::reduce(&#cm, #root, &#sb[..#r], &mut #rb[..#r]); })
                    }
                    Op::Allreduce => {
                        Some(quote! { #cm.all_reduce_into(&#sb[..#r], &mut #rb[..#r], #sum); })
                    }
                    Op::Scan => Some(quote! { #cm.scan_into(&#sb[..#r], &mut #rb[..#r], #sum); }),
                    Op::Exscan => {
                        Some(quote! { #cm.exclusive_scan_into(&#sb[..#r], &mut #rb[..#r], #sum); })
                    }
                    Op::Gather => {
                        Some(quote! { rt::gather(&#cm, #root, &k.sbuf()[..#n], b.recv()); })
                    }
                    Op::Scatter => {
                        Some(quote! { rt::scatter(&#cm, #root, k.sbuf(), &mut b.recv()[..#n]); })
                    }
                    Op::Allgather => {
                        Some(quote! { rt::all_gather(&#cm, &k.sbuf()[..#n], b.recv()); })
                    }
                    Op::Alltoall => Some(quote! { rt::all_to_all(&#cm, #n, k.sbuf(), b.recv()); }),
                    Op::ReduceScatterBlock => {
                        Some(quote! { rt::reduce_scatter_block(&#cm, #r, #sb, &mut #rb[..#r]); })
                    }
                    _ => None,
                };
                let Some(blocking) = blocking else {
                    return note(&format!("MPI_{op}: not reproduced"));
                };
                let out = match slot {
                    None => blocking,
                    Some(s) => {
                        let s = Self::slot(s);
                        let start = match op {
                            Op::Barrier => quote! { #cm.immediate_barrier() },
                            Op::Bcast => {
                                quote! { #cm.process_at_rank(#root).immediate_broadcast_into(req.scope(), buf) }
                            }
                            Op::Reduce => quote! { rt::ireduce(req, &#cm, #root, &#sb[..#r]) },
                            Op::Allreduce => {
                                quote! { #cm.immediate_all_reduce_into(req.scope(), &#sb[..#r], #fresh, #sum) }
                            }
                            Op::Scan => {
                                quote! { #cm.immediate_scan_into(req.scope(), &#sb[..#r], #fresh, #sum) }
                            }
                            Op::Exscan => {
                                quote! { #cm.immediate_exclusive_scan_into(req.scope(), &#sb[..#r], #fresh, #sum) }
                            }
                            Op::Gather => quote! { rt::igather(req, &#cm, #root, &k.sbuf()[..#n]) },
                            Op::Scatter => quote! { rt::iscatter(req, &#cm, #root, k.sbuf(), #n) },
                            Op::Allgather => quote! { rt::iall_gather(req, &#cm, &k.sbuf()[..#n]) },
                            Op::Alltoall => quote! { rt::iall_to_all(req, &#cm, k.sbuf(), #n) },
                            _ => quote! { rt::ireduce_scatter_block(req, &#cm, #sb, #r) },
                        };
                        if *op == Op::Bcast {
                            // The slot's own buffer, as for a receive.
                            quote! {
                                let buf = req.recv_buf(#s, #n);
                                req.put(#s, #start);
                            }
                        } else {
                            quote! { req.put(#s, #start); }
                        }
                    }
                };
                let blocking_name = traced.name().strip_prefix('I').unwrap_or(traced.name());
                let differs = if slot.is_some() {
                    !blocking_name.eq_ignore_ascii_case(op.name())
                } else {
                    traced != op
                };
                if differs {
                    let n = note(&format!("MPI_{traced} in the trace"));
                    quote! { #n #out }
                } else {
                    out
                }
            }
        }
    }

    fn stmts(&self, body: &[Stmt]) -> TokenStream {
        let mut out = TokenStream::new();
        for s in body {
            out.extend(match s {
                Stmt::Compute { seconds: x, replay: Some(t), removed, .. } => {
                    let r = &self.skel.replays[*t];
                    let cut = if *removed > 0.0 {
                        format!(
                            ", of which {} s are not run but added to the prediction",
                            seconds(*removed)
                        )
                    } else {
                        String::new()
                    };
                    let n = note(&format!(
                        "{} s on average, as recorded in {} of the {} iterations{cut}",
                        seconds(*x),
                        r.iterations.len(),
                        r.full
                    ));
                    let table = format_ident!("REPLAY_{}", *t);
                    let t = Literal::usize_unsuffixed(*t);
                    let column = quote! { CLASS_COLUMN[k.all.rank() as usize] };
                    let again = Literal::usize_unsuffixed(r.first_rows);
                    if *removed > 0.0 {
                        let rm = float(*removed);
                        quote! { #n sk.compute_replayed_less(#t, &#table, #again, #column, #rm); }
                    } else {
                        quote! { #n sk.compute_replayed(#t, &#table, #again, #column); }
                    }
                }
                Stmt::Compute { seconds: x, dist: None, removed, factors, .. }
                    if *removed > 0.0 =>
                {
                    let n = note(&format!(
                        "{} s of it are not run but added to the prediction",
                        seconds(*removed)
                    ));
                    let (x, r) = (Self::times(*x, *factors), float(*removed));
                    if factors.is_some() {
                        quote! { #n sk.compute_less_whole(#x, #r); }
                    } else {
                        quote! { #n sk.compute_less(#x, #r); }
                    }
                }
                Stmt::Compute { seconds: x, dist: None, factors, .. } => {
                    let x = Self::times(*x, *factors);
                    quote! { sk.compute(#x); }
                }
                Stmt::Compute { seconds: x, dist: Some(d), removed, factors, .. }
                    if *removed > 0.0 =>
                {
                    let times = if factors.is_some() { ", times this rank's factor" } else { "" };
                    let n = note(&format!(
                        "{} s on average{times}, of which {} s are not run but added to the \
                         prediction",
                        seconds(*x),
                        seconds(*removed)
                    ));
                    let (d, r) = (Literal::usize_unsuffixed(*d), float(*removed));
                    match factors {
                        Some(t) => {
                            let f = Self::factor(*t);
                            quote! { #n sk.compute_drawn_scaled_less(#d, #f, #r); }
                        }
                        None => quote! { #n sk.compute_drawn_less(#d, #r); },
                    }
                }
                Stmt::Compute { seconds: x, dist: Some(d), factors, .. } => {
                    let times = if factors.is_some() { ", times this rank's factor" } else { "" };
                    let n = note(&format!("{} s on average{times}", seconds(*x)));
                    let d = Literal::usize_unsuffixed(*d);
                    match factors {
                        Some(t) => {
                            let f = Self::factor(*t);
                            quote! { #n sk.compute_drawn_scaled(#d, #f); }
                        }
                        None => quote! { #n sk.compute_drawn(#d); },
                    }
                }
                Stmt::Call { call } => self.call(call),
                Stmt::Loop { depth, count, body, note: text } => {
                    let v =
                        if uses_var(body, *depth) { loop_var(*depth) } else { format_ident!("_") };
                    let n = note(text);
                    let c = int(*count);
                    let inner = self.stmts(body);
                    quote! { #n for #v in 0..#c { #inner } }
                }
                Stmt::Guard { when, depth, count, body } => {
                    let v = loop_var(*depth);
                    let cond = match when {
                        When::First => quote! { #v == 0 },
                        When::Last if *depth == 0 => quote! { #v == run - 1 },
                        When::Last => {
                            let c = int(*count);
                            quote! { #v == #c - 1 }
                        }
                    };
                    let what = match when {
                        When::First => "first",
                        When::Last => "last",
                    };
                    let n = note(&format!("only in the {what} iteration"));
                    let inner = self.stmts(body);
                    quote! { if #cond { #n #inner } }
                }
                // Rendered by its phase (each step's kind is in the phase's table).
                Stmt::Steps { .. } => TokenStream::new(),
            });
        }
        out
    }

    /// A phase's function.
    fn phase(&self, prefix: &str, p: &Phase, sub_timer: usize, program_scope: bool) -> TokenStream {
        let name = format_ident!("{}{}", prefix, p.name);
        let comment = phase_comment(p);
        let d = doc(&comment);
        let mut body = TokenStream::new();
        if let (Some(steps), [Stmt::Steps { cases }]) = (&p.steps, p.body.as_slice()) {
            let kinds: Vec<Literal> =
                steps.run_kinds().iter().map(|&k| Literal::u8_unsuffixed(k as u8)).collect();
            let n = Literal::usize_unsuffixed(kinds.len());
            let table = note(&format!(
                "the kind of each time step this loop runs: {} of the application's {}, chosen so \
                 that every kind runs; each kind is timed on its own",
                kinds.len(),
                steps.kinds.len()
            ));
            let arms = cases.iter().enumerate().map(|(k, c)| {
                let k = Literal::u8_unsuffixed(k as u8);
                let n = note(&format!(
                    "{} of the application's steps are of this kind, {} run: {}",
                    c.full, c.run, c.note
                ));
                let b = self.stmts(&c.body);
                quote! { #k => { #n #b } }
            });
            let first = Literal::usize_unsuffixed(sub_timer);
            body.extend(quote! {
                #table
                const KIND: [u8; #n] = [#(#kinds),*];
                let t_step = mpi::time();
                match KIND[it as usize] {
                    #(#arms)*
                    _ => {}
                }
                sk.phase_add(#first + usize::from(KIND[it as usize]), mpi::time() - t_step);
            });
        }
        for (i, st) in p.body.iter().enumerate().filter(|_| p.steps.is_none()) {
            match p.inner {
                Some(ic) if ic.index == i => {
                    let n = note(&format!(
                        "the inner loop runs {} of its {} iterations, timed on its own (its first apart)",
                        ic.run, ic.full
                    ));
                    // Its first iteration is timed apart (`Runtime::inner_first`).
                    let inner = match st {
                        Stmt::Loop { depth, count, body: lb, note: text } => {
                            let v = loop_var(*depth);
                            let ln = note(text);
                            let c = int(*count);
                            let b = self.stmts(lb);
                            quote! {
                                #ln
                                for #v in 0..#c {
                                    #b
                                    if #v == 0 {
                                        sk.inner_first(#sub_timer, mpi::time() - t_inner);
                                    }
                                }
                            }
                        }
                        _ => self.stmts(std::slice::from_ref(st)),
                    };
                    body.extend(quote! {
                        #n
                        let t_inner = mpi::time();
                        #inner
                        sk.phase_add(#sub_timer, mpi::time() - t_inner);
                    });
                }
                _ => body.extend(self.stmts(std::slice::from_ref(st))),
            }
        }
        let n_slots = Literal::u32_unsuffixed(self.skel.n_slots);
        // Under a program-wide scope the requests come from the caller.
        let level = if program_scope { ScopeLevel::None } else { scope_level(p) };
        let scoped = |inner: TokenStream| {
            quote! {
                rt::scoped(pool, #n_slots, |req| { #inner });
                rt::reset(pool);
            }
        };
        let arg = |name: &str, used: bool| {
            if used {
                format_ident!("{}", name)
            } else {
                format_ident!("_{}", name)
            }
        };
        let in_body = idents_of(&body);
        let k_arg = arg("k", in_body.contains("k"));
        let sk_arg = arg("sk", p.is_loop || in_body.contains("sk"));
        let b_arg = arg("b", in_body.contains("b"));
        let (life, k_ty, extra) = if program_scope {
            let r = arg("req", in_body.contains("req"));
            (quote! { <'p> }, quote! { &'p Kit }, quote! { #r: &mut Requests<'p, '_>, })
        } else if level != ScopeLevel::None {
            (quote! {}, quote! { &Kit }, quote! { pool: &mut Pool, })
        } else {
            (quote! {}, quote! { &Kit }, quote! {})
        };
        let (run_arg, body) = if p.is_loop {
            let end = quote! { sk.iteration_end(it); };
            let looped = match level {
                ScopeLevel::Iteration => {
                    let s = scoped(body);
                    quote! { for it in 0..run { #s #end } }
                }
                ScopeLevel::Phase => scoped(quote! { for it in 0..run { #body #end } }),
                ScopeLevel::None => quote! { for it in 0..run { #body #end } },
            };
            (quote! { run: i64 }, looped)
        } else {
            (quote! {}, if level == ScopeLevel::None { body } else { scoped(body) })
        };
        quote! {
            #d
            fn #name #life(#k_arg: #k_ty, #sk_arg: &mut Runtime, #b_arg: &mut Buffers, #extra #run_arg) {
                #body
            }
        }
    }
}

/// Whether a class's requests must live in one scope for its whole program: some phase
/// completes a request another phase started.
pub fn needs_program_scope(phases: &[Phase]) -> bool {
    phases.iter().any(|p| {
        let (mut started, mut completed) = (BTreeSet::new(), BTreeSet::new());
        collect(&p.body, &mut started, &mut completed);
        !completed.is_subset(&started)
    })
}

fn collect(body: &[Stmt], started: &mut BTreeSet<u32>, completed: &mut BTreeSet<u32>) {
    for s in body {
        match s {
            Stmt::Call { call } => match call {
                Call::Send { slot: Some(r), .. }
                | Call::Recv { slot: Some(r), .. }
                | Call::Collective { slot: Some(r), .. } => started.extend(slots_of(r)),
                Call::Complete { how, slots, .. } if *how != Completion::Poll => {
                    completed.extend(slots.iter().copied())
                }
                _ => {}
            },
            Stmt::Loop { body, .. } | Stmt::Guard { body, .. } => collect(body, started, completed),
            Stmt::Steps { cases } => {
                cases.iter().for_each(|c| collect(&c.body, started, completed));
            }
            Stmt::Compute { .. } => {}
        }
    }
}

/// Bytes one execution of `body` takes from the pool (fresh buffers of non-blocking receives and
/// collectives, with room for alignment); communicator sizes are bounded by `n_ranks`.
fn pool_bytes(body: &[Stmt], n_ranks: u64) -> u64 {
    body.iter()
        .map(|s| match s {
            Stmt::Call { call } => match call {
                Call::Recv { slot: Some(_), count, .. } => count + 16,
                Call::Collective { op, bytes, slot: Some(_), .. } => {
                    16 + match op {
                        Op::Gather | Op::Allgather | Op::Alltoall => bytes * n_ranks,
                        Op::Barrier => 0,
                        _ => *bytes,
                    }
                }
                _ => 0,
            },
            Stmt::Loop { count, body, .. } => count * pool_bytes(body, n_ranks),
            Stmt::Guard { body, .. } => pool_bytes(body, n_ranks),
            Stmt::Steps { cases } => {
                cases.iter().map(|c| pool_bytes(&c.body, n_ranks)).max().unwrap_or(0)
            }
            Stmt::Compute { .. } => 0,
        })
        .sum()
}

/// The largest count each slot's non-blocking receives post.
fn slot_counts(body: &[Stmt], out: &mut [u64]) {
    for s in body {
        match s {
            Stmt::Call { call: Call::Recv { slot: Some(r), count, .. } }
            | Stmt::Call {
                call: Call::Collective { op: Op::Bcast, slot: Some(r), bytes: count, .. },
            } => {
                for k in slots_of(r) {
                    if let Some(b) = out.get_mut(k as usize) {
                        *b = (*b).max(*count);
                    }
                }
            }
            Stmt::Loop { body, .. } | Stmt::Guard { body, .. } => slot_counts(body, out),
            _ => {}
        }
    }
}

/// Whether a phase of a class under a program-wide scope can still scope its own requests, one
/// loop iteration at a time: it completes only requests it started, and each iteration
/// completes all it started (or it starts and completes none).
pub fn self_contained(p: &Phase) -> bool {
    let (mut started, mut completed) = (BTreeSet::new(), BTreeSet::new());
    collect(&p.body, &mut started, &mut completed);
    completed.is_subset(&started) && scope_level(p) != ScopeLevel::Phase
}

/// Renders the Cargo project of the skeleton.
pub fn render(skel: &Skeleton, scaling: &Scaling, meta: &Meta) -> Result<Vec<File>, RenderError> {
    let main = main_rs(skel, scaling, meta)?;
    let package = package_name(&meta.name);
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let templates = [
        ("Cargo.toml", CARGO_TOML),
        ("Cargo.lock", CARGO_LOCK),
        ("README.md", README),
        ("run.sh", RUN_SH),
        ("job.slurm", JOB_SLURM),
    ];
    for (name, src) in templates {
        env.add_template(name, src).map_err(|source| RenderError::new(name, source))?;
    }
    let ctx = context! {
        name => meta.name,
        package => package,
        trace => meta.trace,
        version => meta.version,
        n_ranks => skel.n_ranks,
        crates => CRATES.iter().map(|(n, v)| context! { name => n, version => v }).collect::<Vec<_>>(),
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
            executable: name.ends_with(".sh"),
        });
    }
    files.push(File { path: "src/main.rs".into(), contents: main, executable: false });
    files.push(File { path: "src/rt.rs".into(), contents: RUNTIME_RS.into(), executable: false });
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

fn main_rs(skel: &Skeleton, scaling: &Scaling, meta: &Meta) -> Result<String, RenderError> {
    NOTES.with(|v| v.borrow_mut().clear());
    let grid_dims = skel.grid_coords.first().map_or(0, Vec::len);
    let cartesian = matches!(skel.layout, Layout::Cartesian { .. });
    let mut kit_fields = Vec::new();
    let mut kit_init = Vec::new();
    let mut setup = TokenStream::new();
    let mut tables = TokenStream::new();
    let n = skel.n_ranks;
    let n_lit = Literal::u32_unsuffixed(n);

    // Communicators.
    let comms: Vec<TokenStream> = skel
        .comms
        .iter()
        .map(|c| match c {
            Comm::World => quote! { k.world },
            Comm::SelfComm => quote! { k.self_comm },
            other => {
                let id = format_ident!("{}", comm_name(other, grid_dims).0);
                quote! { k.#id }
            }
        })
        .collect();
    let world_ty = if cartesian {
        quote! { CartesianCommunicator }
    } else {
        quote! { SimpleCommunicator }
    };
    let world_doc =
        doc(if cartesian { "The Cartesian communicator of the topology." } else { "All ranks." });
    kit_fields.push(quote! { #world_doc world: #world_ty, });
    match &skel.layout {
        Layout::Cartesian { dims, periods } => {
            let dims = dims.iter().map(|d| Literal::usize_unsuffixed(*d));
            let periods = periods.iter();
            setup.extend(quote! {
                let world = all
                    .create_cartesian_communicator(&[#(#dims),*], &[#(#periods),*], false)
                    .expect("the skeleton runs on exactly as many ranks as its grid has cells");
            });
        }
        _ => setup.extend(quote! { let world = SimpleCommunicator::world(); }),
    }
    kit_init.push(quote! { world, });
    if skel.comms.contains(&Comm::SelfComm) {
        kit_fields.push(quote! { #[doc = " This rank alone."] self_comm: SimpleCommunicator, });
        kit_init.push(quote! { self_comm: SimpleCommunicator::self_comm(), });
    }

    // Directions and neighbours.
    let nd = skel.directions.len();
    // Constants of directions and tags, each kept only if the program names it.
    let mut dir_consts: Vec<(proc_macro2::Ident, TokenStream)> = Vec::new();
    if nd > 0 {
        for (i, d) in skel.directions.iter().enumerate() {
            let id = format_ident!("{}", d.ident);
            let i = Literal::usize_unsuffixed(i);
            let comment = if d.name != d.ident {
                format!("{} (offset {:?})", d.name, d.offset)
            } else if d.offset.is_empty() {
                String::new()
            } else {
                format!("offset {:?}", d.offset)
            };
            let dd = if comment.is_empty() {
                quote! {}
            } else {
                doc(&comment)
            };
            dir_consts.push((id.clone(), quote! { #dd const #id: usize = #i; }));
        }
        let ndl = Literal::usize_unsuffixed(nd);
        dir_consts
            .push((format_ident!("N_DIRECTIONS"), quote! { const N_DIRECTIONS: usize = #ndl; }));
        let mut seen = BTreeSet::new();
        for d in &skel.directions {
            if seen.insert(d.tag) {
                let id = format_ident!("TAG_{}", tag_stem(&d.ident));
                let v = Literal::i32_unsuffixed(d.tag);
                dir_consts.push((id.clone(), quote! { const #id: Tag = #v; }));
            }
        }
        for (traced, t) in &skel.message_tags {
            let id = format_ident!("TAG_MSG{}", *traced as u32);
            let v = Literal::i32_unsuffixed(*t);
            let d = doc(&format!(
                "Messages that receives from any source take, traced with tag {traced}."
            ));
            dir_consts.push((id.clone(), quote! { #d const #id: Tag = #v; }));
        }
        kit_fields.push(quote! {
            #[doc = " Rank in each direction; `None` where there is none."]
            nbr: [Option<Rank>; N_DIRECTIONS],
        });
        kit_init.push(quote! { nbr, });
        match &skel.layout {
            Layout::Cartesian { dims, .. } => {
                let nd_grid = dims.len();
                setup.extend(quote! { let mut nbr = [None; N_DIRECTIONS]; });
                let mut done = vec![false; nd];
                for (i, d) in skel.directions.iter().enumerate() {
                    if done[i] {
                        continue;
                    }
                    done[i] = true;
                    let id = format_ident!("{}", d.ident);
                    let nonzero: Vec<(usize, i64)> =
                        d.offset.iter().copied().enumerate().filter(|(_, o)| *o != 0).collect();
                    if nonzero.is_empty() {
                        setup.extend(quote! { nbr[#id] = Some(world.rank()); });
                        continue;
                    }
                    if let [(kd, o)] = nonzero[..] {
                        if o.abs() == 1 {
                            let back = skel.directions.iter().position(|e| {
                                !e.offset.is_empty()
                                    && e.offset.iter().enumerate().all(|(j, &x)| {
                                        if j == kd {
                                            x == -o
                                        } else {
                                            x == 0
                                        }
                                    })
                            });
                            if let Some(bk) = back {
                                done[bk] = true;
                            }
                            let slot = |x: Option<usize>| match x {
                                Some(j) => {
                                    let id = format_ident!("{}", skel.directions[j].ident);
                                    quote! { nbr[#id] }
                                }
                                None => quote! { _ },
                            };
                            let (minus, plus) = if o > 0 {
                                (slot(back), slot(Some(i)))
                            } else {
                                (slot(Some(i)), slot(back))
                            };
                            let kd = Literal::usize_unsuffixed(kd);
                            setup.extend(quote! { (#minus, #plus) = world.shift(#kd, 1); });
                            continue;
                        }
                    }
                    let off = (0..nd_grid)
                        .map(|k| Literal::i64_unsuffixed(d.offset.get(k).copied().unwrap_or(0)));
                    setup.extend(quote! { nbr[#id] = rt::cart_neighbour(&world, &[#(#off),*]); });
                }
            }
            Layout::Table { neighbours } => {
                let rows = neighbours.iter().map(|row| {
                    let v = row.iter().map(|x| Literal::i64_unsuffixed(*x));
                    quote! { [#(#v),*] }
                });
                tables.extend(quote! {
                    #[doc = " Neighbour of each rank in each direction (-1: none)."]
                    const NEIGHBOURS: [[i32; N_DIRECTIONS]; #n_lit] = [#(#rows),*];
                });
                setup.extend(quote! {
                    let nbr = NEIGHBOURS[rank].map(|r| (r >= 0).then_some(r));
                });
            }
            Layout::None => setup.extend(quote! { let nbr = [None; N_DIRECTIONS]; }),
        }
    }

    // Sub-communicators.
    for c in &skel.comms {
        let (name, comment) = comm_name(c, grid_dims);
        let id = format_ident!("{}", name);
        let d = doc(&format!("{}.", capitalise(&comment)));
        match c {
            Comm::World | Comm::SelfComm => continue,
            Comm::Slice { free } if cartesian => {
                let keep = (0..grid_dims).map(|k| free.contains(&k));
                setup.extend(quote! { let #id = world.subgroup(&[#(#keep),*]); });
                kit_fields.push(quote! { #d #id: CartesianCommunicator, });
            }
            Comm::Slice { free } => {
                let table = format_ident!("{}_COLOR", name.to_uppercase());
                let colors = skel.grid_coords.iter().map(|c| {
                    let v =
                        (0..c.len()).filter(|k| !free.contains(k)).fold(0, |a, k| a * 1000 + c[k]);
                    Literal::usize_unsuffixed(v)
                });
                let td = doc(&format!("Which {name} each rank belongs to."));
                tables.extend(quote! { #td const #table: [i32; #n_lit] = [#(#colors),*]; });
                setup.extend(quote! {
                    let #id = all
                        .split_by_color_with_key(Color::with_value(#table[rank]), all.rank())
                        .expect("every rank has a colour");
                });
                kit_fields.push(quote! { #d #id: SimpleCommunicator, });
            }
            Comm::Strided { size, stride: 1 } => {
                let s = Literal::usize_unsuffixed(*size);
                setup.extend(quote! {
                    let #id = all
                        .split_by_color_with_key(Color::with_value(all.rank() / #s), all.rank())
                        .expect("every rank has a colour");
                });
                kit_fields.push(quote! { #d #id: SimpleCommunicator, });
            }
            Comm::Strided { size, stride } => {
                let (block, st) =
                    (Literal::usize_unsuffixed(size * stride), Literal::usize_unsuffixed(*stride));
                setup.extend(quote! {
                    let #id = all
                        .split_by_color_with_key(Color::with_value(all.rank() / #block * #st + all.rank() % #st), all.rank())
                        .expect("every rank has a colour");
                });
                kit_fields.push(quote! { #d #id: SimpleCommunicator, });
            }
        }
        kit_init.push(quote! { #id, });
    }

    let gen = Gen { skel, comms };
    let multi = skel.classes.len() > 1;

    // Classes and phases.
    let any_program_scope = skel.classes.iter().any(|c| needs_program_scope(&c.phases));
    let program_pool_pass = if any_program_scope {
        quote! { &mut program_pool }
    } else {
        quote! {}
    };
    let mut functions = TokenStream::new();
    let mut dispatch = Vec::new();
    for (ci, class) in skel.classes.iter().enumerate() {
        let prefix = if multi { format!("c{ci}_") } else { String::new() };
        let mut timers = Vec::new();
        let mut calls = TokenStream::new();
        let mut runs = TokenStream::new();
        let program_scope = needs_program_scope(&class.phases);
        // What the phases under the program-wide scope take from its pool: reserved (and
        // written) before the clock starts, so that the timed run neither allocates nor faults.
        let mut reserve = Vec::new();
        let mut reserve_fixed = 0;
        for p in &class.phases {
            // Under a program-wide scope, the phases that need it use it; the others scope
            // their own requests per iteration, with a pool of their own.
            let outer = program_scope && !self_contained(p);
            let timer = timers.len();
            if outer {
                let per = pool_bytes(&p.body, u64::from(skel.n_ranks));
                let t = Literal::usize_unsuffixed(timer);
                if p.is_loop && per > 0 {
                    let per = int(per);
                    reserve.push(quote! { #per * phases[#t].run as usize });
                } else {
                    reserve_fixed += per;
                }
            }
            let (name, full, run) = (p.name.clone(), int(p.full), int(p.run));
            let mut timer_expr = if crate::replay::replays_first(&p.body, &skel.replays) {
                quote! { Phase::new(#name, #full, #run).first_apart() }
            } else {
                quote! { Phase::new(#name, #full, #run) }
            };
            if p.warmup > 0 {
                let w = int(p.warmup);
                timer_expr = quote! { #timer_expr.warmup(#w) };
            }
            timers.push(timer_expr);
            let mut sub = 0;
            if let (Some(_), [Stmt::Steps { cases }]) = (&p.steps, p.body.as_slice()) {
                sub = timers.len();
                let t = Literal::usize_unsuffixed(timer);
                for (k, c) in cases.iter().enumerate() {
                    let (n, f, r) = (format!("{}.kind{k}", p.name), int(c.full), int(c.run));
                    timers.push(quote! { Phase::inner(#n, #f, #r, #t) });
                }
            }
            if let Some(ic) = p.inner {
                sub = timers.len();
                let (n, f, r) =
                    (format!("{}.inner", p.name), int(p.full * ic.full), int(p.run * ic.run));
                let t = Literal::usize_unsuffixed(timer);
                timers.push(quote! { Phase::inner(#n, #f, #r, #t) });
                let s = Literal::usize_unsuffixed(sub);
                let ir = int(ic.run);
                runs.extend(quote! { phases[#s].run = phases[#t].run * #ir; });
            }
            if p.name == "main_loop" && p.steps.is_none() {
                let t = Literal::usize_unsuffixed(timer);
                // The main loop's iteration count may be changed with --iterations.
                runs = {
                    let mut r = quote! { phases[#t].run = sk.main_run(#run, #full, MAIN_FULL); };
                    r.extend(runs);
                    r
                };
            }
            functions.extend(gen.phase(&prefix, p, sub, outer));
            let f = format_ident!("{}{}", prefix, p.name);
            let t = Literal::usize_unsuffixed(timer);
            let extra = if outer {
                quote! { req, }
            } else if scope_level(p) != ScopeLevel::None {
                quote! { pool, }
            } else {
                quote! {}
            };
            let run = if p.is_loop {
                quote! { sk.run_of(#t) }
            } else {
                quote! {}
            };
            calls.extend(
                quote! { sk.phase_begin(#t); #f(k, sk, b, #extra #run); sk.phase_end(#t); },
            );
        }
        let program = format_ident!("{}program", prefix);
        let d = doc(&if multi {
            format!(
                "Class {ci} ({} ranks: {}): {}",
                class.ranks.len(),
                ranks_text(&class.ranks),
                class.notation
            )
        } else {
            format!("The program of every rank: {}", class.notation)
        });
        let mutable = if runs.is_empty() {
            quote! {}
        } else {
            quote! { mut }
        };
        let (prelude, calls) = if program_scope {
            let n_slots = Literal::u32_unsuffixed(skel.n_slots);
            let n = note(
                "requests stay pending from one phase to the next: one scope for the whole program",
            );
            let n2 = note(
                "the buffers of the program-wide request scope, reserved before the clock starts",
            );
            if reserve_fixed > 0 || reserve.is_empty() {
                let f = int(reserve_fixed);
                reserve.insert(0, quote! { #f });
            }
            (
                quote! {
                    #n2
                    rt::reserve(program_pool, #(#reserve)+*);
                },
                quote! {
                    #n
                    rt::scoped(program_pool, #n_slots, |req| { #calls });
                },
            )
        } else {
            (quote! {}, calls)
        };
        let pool_arg = if uses_ident(&calls, "pool") {
            quote! { pool }
        } else {
            quote! { _pool }
        };
        let program_pool_arg = if !any_program_scope {
            quote! {}
        } else if program_scope {
            quote! { program_pool: &mut Pool }
        } else {
            quote! { _program_pool: &mut Pool }
        };
        functions.extend(quote! {
            #d
            fn #program(k: &Kit, sk: &mut Runtime, b: &mut Buffers, #pool_arg: &mut Pool, #program_pool_arg) {
                let #mutable phases = [#(#timers),*];
                #runs
                #prelude
                sk.start(&k.all, &phases);
                #calls
            }
        });
        let ci = Literal::usize_unsuffixed(ci);
        dispatch
            .push(quote! { #ci => #program(&k, &mut sk, &mut b, &mut pool, #program_pool_pass), });
    }

    // Tables.
    if multi {
        let v = skel.class_of_rank.iter().map(|c| Literal::usize_unsuffixed(*c as usize));
        tables.extend(quote! {
            #[doc = " Process class of each rank: ranks of one class run the same program."]
            const CLASS_OF_RANK: [usize; #n_lit] = [#(#v),*];
        });
    }
    let has_dists = !skel.distributions.is_empty();
    if has_dists {
        let rows = skel.distributions.iter().map(|d| {
            let q = d.q.iter().map(|x| float(*x));
            quote! { [#(#q),*] }
        });
        let nd = Literal::usize_unsuffixed(skel.distributions.len());
        let d = doc(
            "Compute blocks whose recorded durations spread across ranks. Each execution draws its\n\
             duration from the recorded distribution (quantiles in seconds: minimum, 1, 5, 10, 25, 50,\n\
             75, 90, 95, 99, 99.9 %, maximum), so that the slowest rank of a step is as slow as in the\n\
             application.",
        );
        tables.extend(quote! { #d static GAP_DIST: [[f64; rt::QUANTILES]; #nd] = [#(#rows),*]; });
    }
    let has_weights = skel.rank_weight.iter().any(|w| (w - 1.0).abs() > 0.005);
    if has_weights {
        let v = skel.rank_weight.iter().map(|w| {
            let s = format!("{w:.4}");
            s.parse::<Literal>().unwrap_or_else(|_| Literal::f64_unsuffixed(*w))
        });
        let d = doc(
            "How much each rank computes relative to its class's average (1 = the average), as\n\
             recorded: every compute block of the rank is scaled by it.",
        );
        tables.extend(quote! { #d static RANK_WEIGHT: [f64; #n_lit] = [#(#v),*]; });
    }

    if !skel.size_tables.is_empty() {
        let rows = skel.size_tables.iter().map(|t| {
            let v = t.iter().map(|&b| Literal::usize_unsuffixed(b as usize));
            quote! { [#(#v),*] }
        });
        let nt = Literal::usize_unsuffixed(skel.size_tables.len());
        let d = doc(
            "Bytes each rank sends where the ranks of its class send different sizes (an uneven\n\
             decomposition): SEND_SIZE[table][rank], as recorded (a loop's mean over its iterations).",
        );
        tables.extend(quote! { #d static SEND_SIZE: [[usize; #n_lit]; #nt] = [#(#rows),*]; });
    }
    if !skel.compute_factors.is_empty() {
        let rows = skel.compute_factors.iter().map(|t| {
            let v = t.iter().map(|&f| float(f));
            quote! { [#(#v),*] }
        });
        let nt = Literal::usize_unsuffixed(skel.compute_factors.len());
        let d = doc(
            "Where the ranks of a class compute differently at one block beyond their weights\n\
             (each rank's mean there over its weight times the class's mean, as recorded): each\n\
             rank's factor, COMPUTE_FACTOR[table][rank].",
        );
        tables.extend(quote! { #d static COMPUTE_FACTOR: [[f64; #n_lit]; #nt] = [#(#rows),*]; });
    }
    for (t, r) in skel.replays.iter().enumerate() {
        let class = &skel.classes[r.class];
        let rows = r.seconds.iter().map(|row| {
            let v = row.iter().map(|&x| float(x));
            quote! { [#(#v),*] }
        });
        let (nr, nc) = (
            Literal::usize_unsuffixed(r.seconds.len()),
            Literal::usize_unsuffixed(class.ranks.len()),
        );
        let name = format_ident!("REPLAY_{t}");
        let mut text = String::new();
        if t == 0 {
            text.push_str(
                "Compute blocks replayed as recorded. Where who computes longest changes from one\n\
                 iteration to the next (a load that rotates over the ranks, a pipeline), durations\n\
                 drawn independently per rank would lose it; these blocks run the durations the ranks\n\
                 recorded in the iterations the skeleton runs, taken evenly from the application's,\n\
                 the same iterations on every rank, and scaled so that their mean is the block's over\n\
                 the whole loop. REPLAY_T[execution][column]: seconds; an execution per row, in the\n\
                 order the skeleton runs them (a run of more iterations starts over); a column per\n\
                 rank of the class, in the order of CLASS_COLUMN.\n\n",
            );
        }
        let of = if r.per_iteration > 1 {
            format!(", {} executions each", r.per_iteration)
        } else {
            String::new()
        };
        text.push_str(&format!(
            "Class {} (ranks {}): the application's iteration{} {} of 0-{}{of}; recorded\n\
             values{} × {:.4}{}.",
            r.class,
            crate::c::ranks_text(&class.ranks),
            if r.iterations.len() > 1 { "s" } else { "" },
            crate::c::iterations_text(&r.iterations),
            r.full.saturating_sub(1),
            if r.first_rows > 0 { " (the first iteration's as they are, the others'" } else { "" },
            r.scale,
            if r.first_rows > 0 { ")" } else { "" }
        ));
        let d = doc(&text);
        tables.extend(quote! { #d static #name: [[f64; #nc]; #nr] = [#(#rows),*]; });
    }
    if !skel.replays.is_empty() {
        let mut col = vec![0usize; skel.n_ranks as usize];
        for c in &skel.classes {
            for (i, &r) in c.ranks.iter().enumerate() {
                if let Some(x) = col.get_mut(r as usize) {
                    *x = i;
                }
            }
        }
        let v = col.iter().map(|&c| Literal::usize_unsuffixed(c));
        let d = doc("Each rank's column in the replay tables of its class: its place among the class's ranks.");
        tables.extend(quote! { #d static CLASS_COLUMN: [usize; #n_lit] = [#(#v),*]; });
    }
    let uses_rank = setup.to_string().contains("[rank]");
    let rank_line = if uses_rank {
        quote! { let rank = all.rank() as usize; }
    } else {
        quote! {}
    };
    let at_method = if nd > 0 {
        quote! {
            #[doc = " The process in direction `d`, if there is one."]
            fn at(&self, d: usize) -> Option<Process<'_>> {
                self.nbr[d].map(|r| self.world.process_at_rank(r))
            }
        }
    } else {
        quote! {}
    };

    let sb = Literal::u64_unsuffixed(skel.send_bytes.max(8));
    let rb = Literal::u64_unsuffixed(skel.recv_bytes.max(8));
    let name = &meta.name;
    let factor = format!("{:.6}", scaling.factor)
        .parse::<Literal>()
        .unwrap_or_else(|_| Literal::f64_unsuffixed(scaling.factor));
    let app = format!("{:.6}", scaling.app_time_s)
        .parse::<Literal>()
        .unwrap_or_else(|_| Literal::f64_unsuffixed(scaling.app_time_s));
    let main_full = int(scaling.main_full);
    let body_dispatch = if multi {
        quote! {
            match CLASS_OF_RANK[k.all.rank() as usize] {
                #(#dispatch)*
                _ => unreachable!("every rank has a class"),
            }
        }
    } else {
        quote! { program(&k, &mut sk, &mut b, &mut pool, #program_pool_pass); }
    };
    let set_dists = if has_dists {
        quote! { sk.set_distributions(&GAP_DIST); }
    } else {
        quote! {}
    };
    let set_weights = if has_weights {
        quote! { sk.set_rank_weight(&RANK_WEIGHT, k.all.rank()); }
    } else {
        quote! {}
    };
    let (universe_mut, attach, detach) = match skel.send_buffer {
        Some(b) => {
            let n = note(&format!(
                "some sends are buffered: the run completed them before their receives were \
                 posted, and the program relies on it; at most {} bytes in {} messages per rank \
                 for {} iteration{} of the main loop",
                b.bytes,
                b.messages,
                b.main_run,
                if b.main_run == 1 { "" } else { "s" }
            ));
            let (bytes, messages) = (int(b.bytes), int(b.messages));
            let run = Literal::i64_unsuffixed(b.main_run as i64);
            let d = note("returns once every buffered message has left");
            (
                quote! { mut },
                quote! {
                    #n
                    universe.set_buffer_size(sk.send_buffer(#bytes, #messages, #run));
                },
                quote! {
                    #d
                    universe.detach_buffer();
                },
            )
        }
        None => (quote! {}, quote! {}, quote! {}),
    };
    let set_shrink = if scaling.compute_shrink < 1.0 {
        let f: f64 = format!("{:.4}", scaling.compute_shrink).parse().unwrap_or(1.0);
        let n = note(
            "cut blocks run this share of what they keep; the rest is added to the prediction",
        );
        quote! {
            #n
            sk.set_compute_shrink(#f);
        }
    } else {
        quote! {}
    };

    // Each request slot's own receive buffer: the largest count a receive in it posts.
    let mut slot_bytes = vec![0u64; skel.n_slots as usize];
    for c in &skel.classes {
        for p in &c.phases {
            slot_counts(&p.body, &mut slot_bytes);
        }
    }
    let slot_bytes_arg = if slot_bytes.iter().any(|&b| b > 0) {
        let n = Literal::usize_unsuffixed(slot_bytes.len());
        let v = slot_bytes.iter().map(|b| int(*b));
        tables.extend(quote! {
            #[doc = " Bytes of each request slot's own receive buffer (0: the slot receives nothing)."]
            static SLOT_BYTES: [usize; #n] = [#(#v),*];
        });
        quote! { &SLOT_BYTES }
    } else {
        quote! { &[] }
    };
    let program_pool_let = if any_program_scope {
        quote! { let mut program_pool = Pool::new(&[]); }
    } else {
        quote! {}
    };
    let mut header = format!(
        "Performance skeleton of {name}, generated by mpiskel {}.\n\n\
         Trace:     {}\n\
         Ranks:     {}; topology: {}\n",
        meta.version, meta.trace, skel.n_ranks, skel.topology
    );
    for (ci, c) in skel.classes.iter().enumerate() {
        let ranks = if multi { format!(": {}", ranks_text(&c.ranks)) } else { String::new() };
        header.push_str(&format!("Class {ci} ({} ranks{ranks}): {}\n", c.ranks.len(), c.notation));
    }
    header.push_str(&format!(
        "Scaling:   main loop runs {} of {} iterations; recorded application\n\
         time {:.6} s, expected skeleton time {:.6} s (factor {:.6}).\n",
        scaling.main_run,
        scaling.main_full,
        scaling.app_time_s,
        scaling.skeleton_estimate_s,
        scaling.factor
    ));
    if scaling.compute_removed_s > 0.0 {
        header.push_str(&format!(
            "Compute:   {:.6} s of computation per rank not run, its time added back to\n\
             the prediction (`compute_less`).\n",
            scaling.compute_removed_s
        ));
    }
    header.push_str(
        "\nThe report at the end gives the predicted application time two ways: each phase's measured\n\
         time x (full iterations / iterations run), and the whole run x the factor above.\n\
         Build with `cargo build --release` (MPICC=... or MPI_PKG_CONFIG=... chooses the MPI library),\n\
         run with ./run.sh; see README.md.",
    );
    let header_lines =
        header.lines().map(|l| if l.is_empty() { String::new() } else { format!(" {l}") });

    let mut used = functions.clone();
    used.extend(setup.clone());
    used.extend(at_method.clone());
    used.extend(kit_fields.iter().cloned());
    let used = idents_of(&used);
    let dir_consts: TokenStream = dir_consts
        .into_iter()
        .filter(|(id, _)| id == "N_DIRECTIONS" || used.contains(&id.to_string()))
        .map(|(_, t)| t)
        .collect();
    let in_functions = idents_of(&functions);
    let main_full_const = if in_functions.contains("MAIN_FULL") {
        quote! {
            #[doc = " Iterations of the main loop in the application (the lead class's)."]
            const MAIN_FULL: i64 = #main_full;
        }
    } else {
        quote! {}
    };
    let (uses_sbuf, uses_sreal) = (in_functions.contains("sbuf"), in_functions.contains("sreal"));
    let send_const = if uses_sbuf || uses_sreal {
        quote! {
            #[doc = " Bytes of the send buffer."]
            const SEND_BYTES: usize = #sb;
        }
    } else {
        quote! {}
    };
    // One send buffer of doubles, seen as bytes too (as the C skeleton's one `sbuf` serves both).
    let (send_field, send_init) = if uses_sbuf || uses_sreal {
        (
            quote! { #[doc = " Sent from (doubles; `sbuf()` gives its bytes)."] send: Vec<f64>, },
            quote! { send: vec![1.0; SEND_BYTES.div_ceil(8)], },
        )
    } else {
        (quote! {}, quote! {})
    };
    let mut kit_methods = at_method;
    if uses_sbuf {
        kit_methods.extend(quote! {
            #[doc = " The send buffer's bytes."]
            fn sbuf(&self) -> &[u8] {
                bytemuck::cast_slice(&self.send)
            }
        });
    }
    if uses_sreal {
        kit_methods.extend(quote! {
            #[doc = " The send buffer's doubles."]
            fn sreal(&self) -> &[f64] {
                &self.send
            }
        });
    }
    let kit_impl = if kit_methods.is_empty() {
        quote! {}
    } else {
        quote! { impl Kit { #kit_methods } }
    };
    let items = quote! {
        #[doc = " Name of the skeleton in its report."]
        const NAME: &str = #name;
        #[doc = " Application time / skeleton time expected on the recording machine."]
        const FACTOR: f64 = #factor;
        #[doc = " The application's recorded time, seconds."]
        const APP_TIME: f64 = #app;
        #main_full_const
        #send_const
        #[doc = " Bytes of the receive buffer of blocking calls."]
        const RECV_BYTES: usize = #rb;

        #dir_consts
        #tables

        #[doc = " Communicators, neighbours and send buffers, made once."]
        struct Kit {
            #[doc = " `MPI_COMM_WORLD`."]
            all: SimpleCommunicator,
            #(#kit_fields)*
            #send_field
        }

        #kit_impl

        #[doc = " Makes the communicators and neighbours of the topology, and the send buffers."]
        fn make_topology(all: SimpleCommunicator) -> Kit {
            #rank_line
            #setup
            Kit {
                #(#kit_init)*
                #send_init
                all,
            }
        }

        #functions

        fn main() {
            let #universe_mut universe = mpi::initialize().expect("MPI could not be initialised");
            let mut sk = Runtime::init(&universe.world());
            let k = make_topology(universe.world());
            #attach
            let mut b = Buffers::new(RECV_BYTES);
            let mut pool = Pool::new(#slot_bytes_arg);
            #program_pool_let
            #set_dists
            #set_weights
            #set_shrink
            #body_dispatch
            #detach
            sk.report(&k.all, NAME, FACTOR, APP_TIME);
        }
    };
    // Import what the program uses.
    let in_items = idents_of(&items);
    let topology: Vec<proc_macro2::Ident> =
        ["CartesianCommunicator", "Color", "Process", "Rank", "SimpleCommunicator"]
            .iter()
            .filter(|n| in_items.contains(**n))
            .map(|n| format_ident!("{}", n))
            .collect();
    let op = if in_items.contains("SystemOperation") {
        quote! { use mpi::collective::SystemOperation; }
    } else {
        quote! {}
    };
    let tag = if in_items.contains("Tag") {
        quote! { use mpi::Tag; }
    } else {
        quote! {}
    };
    let rt_names: Vec<proc_macro2::Ident> = ["Buffers", "Phase", "Pool", "Requests", "Runtime"]
        .iter()
        .filter(|n| in_items.contains(**n))
        .map(|n| format_ident!("{}", n))
        .collect();
    let file = quote! {
        #(#![doc = #header_lines])*

        mod rt;

        #op
        use mpi::topology::{#(#topology),*};
        use mpi::traits::*;
        #tag
        use rt::{#(#rt_names),*};

        #items
    };
    format_file("src/main.rs", file)
}

/// Lays out a generated Rust file. Tokens that do not parse are a bug of this back end:
/// reported, never written.
fn format_file(name: &str, tokens: proc_macro2::TokenStream) -> Result<String, RenderError> {
    let parsed = syn::parse2::<syn::File>(tokens)
        .map_err(|e| RenderError::Unparsable { file: name.into(), error: e.to_string() })?;
    Ok(notes_to_comments(&layout(&prettyplease::unparse(&parsed))))
}

/// Spacing prettyplease leaves to the caller: a blank line between top-level items (consecutive
/// `const`s without documentation stay together), after the module header and the imports; and
/// arrays of plain numbers packed several to a line.
fn layout(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let is_number = |l: &str| {
        let t = l.trim().trim_end_matches(',');
        !t.is_empty()
            && t.chars().all(|c| c.is_ascii_digit() || "-+.e_".contains(c))
            && l.trim().ends_with(',')
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        // A run of numbers, one per line: pack them.
        if is_number(line) {
            let pad = &line[..line.len() - line.trim_start().len()];
            let mut j = i;
            let mut row = String::new();
            while j < lines.len() && is_number(lines[j]) {
                let t = lines[j].trim();
                if !row.is_empty() && pad.len() + row.len() + 1 + t.len() > 96 {
                    out.push(format!("{pad}{row}"));
                    row.clear();
                }
                if !row.is_empty() {
                    row.push(' ');
                }
                row.push_str(t);
                j += 1;
            }
            out.push(format!("{pad}{row}"));
            i = j;
            continue;
        }
        let top = !line.starts_with(' ') && !line.is_empty();
        if top && !out.is_empty() {
            let prev = out.last().map(String::as_str).unwrap_or("");
            let starts_item = line.starts_with("///")
                || line.starts_with("fn ")
                || line.starts_with("struct ")
                || line.starts_with("impl ")
                || line.starts_with("static ")
                || line.starts_with("mod ")
                || (line.starts_with("use ") && !prev.starts_with("use "))
                || (line.starts_with("const ")
                    && !prev.starts_with("const ")
                    && !prev.starts_with("///"));
            let after_header = prev.starts_with("//!") && !line.starts_with("//!");
            let in_doc = prev.starts_with("///");
            if (starts_item || after_header) && !in_doc && !prev.is_empty() {
                out.push(String::new());
            }
        }
        out.push(line.to_owned());
        i += 1;
    }
    out.join("\n") + "\n"
}

/// Every identifier that occurs in `ts`: one walk answers any number of [`uses_ident`]
/// questions about a large stream.
fn idents_of(ts: &TokenStream) -> std::collections::HashSet<String> {
    fn walk(ts: TokenStream, out: &mut std::collections::HashSet<String>) {
        for t in ts {
            match t {
                proc_macro2::TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = std::collections::HashSet::new();
    walk(ts.clone(), &mut out);
    out
}

/// Whether the identifier `name` occurs in `ts`.
fn uses_ident(ts: &TokenStream, name: &str) -> bool {
    ts.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Group(g) => uses_ident(&g.stream(), name),
        _ => false,
    })
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Turns the `__note!(N);` statements into `// …` comments.
fn notes_to_comments(text: &str) -> String {
    let notes = NOTES.with(|v| std::mem::take(&mut *v.borrow_mut()));
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let t = line.trim_start();
        let id = t.strip_prefix("__note!(").and_then(|r| r.strip_suffix(");"));
        if let Some(text) = id.and_then(|n| n.parse::<usize>().ok()).and_then(|n| notes.get(n)) {
            let pad = &line[..line.len() - t.len()];
            out.push_str(pad);
            out.push_str("// ");
            out.push_str(text);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_code_that_does_not_parse_is_an_error() {
        let bad: proc_macro2::TokenStream = "fn main() { let = 1; }".parse().unwrap();
        let e = format_file("src/main.rs", bad).unwrap_err();
        assert!(matches!(e, RenderError::Unparsable { .. }));
        assert!(e.to_string().starts_with("src/main.rs: the generated code does not parse"), "{e}");
        let good: proc_macro2::TokenStream = "fn main() { let x = 1; }".parse().unwrap();
        assert!(format_file("src/main.rs", good).unwrap().contains("let x = 1;"));
    }
}
