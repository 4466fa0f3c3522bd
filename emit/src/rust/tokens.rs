//! Statements and calls of the program IR as tokens (`quote!`): one method per kind of
//! statement and MPI call, over the skeleton's communicators, directions and tags.

use mpiskel_compress::When;
use mpiskel_trace::Op;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::comments::{idents_of, note};
use super::scope::{scope_level, uses_var, ScopeLevel};
use crate::c::{message_tag_name, phase_comment, seconds, tag_stem};
use mpiskel_program::{Call, Completion, Element, Peer, Phase, Skeleton, SlotRef, Stmt};

pub(super) fn float(x: f64) -> Literal {
    seconds(x).parse().unwrap_or_else(|_| Literal::f64_unsuffixed(x))
}

pub(super) fn int(x: u64) -> Literal {
    Literal::u64_unsuffixed(x)
}

pub(super) fn doc(text: &str) -> TokenStream {
    let lines = text.lines().map(|l| format!(" {l}"));
    quote! { #(#[doc = #lines])* }
}

pub(super) fn loop_var(depth: usize) -> proc_macro2::Ident {
    if depth == 0 {
        format_ident!("it")
    } else {
        format_ident!("i{}", depth)
    }
}

pub(super) struct Gen<'a> {
    pub(super) skel: &'a Skeleton,
    /// Field of `Kit` for each communicator of the program.
    pub(super) comms: Vec<TokenStream>,
}

impl Gen<'_> {
    pub(super) fn tag(&self, t: i32) -> TokenStream {
        if t < 0 {
            return quote! { rt::ANY_TAG };
        }
        if let Some((traced, _)) = self.skel.message_tags.iter().find(|m| m.1 == t) {
            let id = format_ident!("{}", message_tag_name(*traced));
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
    pub(super) fn with_peer(&self, peer: &Peer, body: TokenStream) -> TokenStream {
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
            Peer::Only { dir, table } => {
                let d = format_ident!("{}", self.skel.directions[*dir].ident);
                let t = Literal::usize_unsuffixed(*table);
                quote! {
                    if PRESENT[#t][k.all.rank() as usize] {
                        if let Some(p) = k.at(#d) { #body }
                    }
                }
            }
        }
    }

    pub(super) fn slot(s: &SlotRef) -> TokenStream {
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
    pub(super) fn factor(t: usize) -> TokenStream {
        let t = Literal::usize_unsuffixed(t);
        quote! { COMPUTE_FACTOR[#t][k.all.rank() as usize] }
    }

    /// A compute block's seconds, times this rank's factor where the block has a table.
    pub(super) fn times(x: f64, factors: Option<usize>) -> TokenStream {
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
    pub(super) fn bytes(bytes: u64, sizes: Option<usize>) -> TokenStream {
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

    pub(super) fn call(&self, c: &Call) -> TokenStream {
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
                    (Some(s), false) if *op == Op::Bsend => {
                        let s = Self::slot(s);
                        quote! { req.put(#s, p.immediate_buffered_send_with_tag(req.scope(), &k.sbuf()[..#n], #t)); }
                    }
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
                            Peer::Only { dir, table } => {
                                let d = format_ident!("{}", self.skel.directions[*dir].ident);
                                let t = Literal::usize_unsuffixed(*table);
                                quote! {
                                    if PRESENT[#t][k.all.rank() as usize] { k.at(#d) } else { None }
                                }
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
                    // As in the C back end: a wait that completed nothing had no request.
                    Completion::Poll if traced.is_wait() => {
                        let n =
                            note(&format!("MPI_{traced} had no request to complete in the trace"));
                        quote! { #n sk.wait_none(); }
                    }
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
                self.collective(*op, *traced, *comm, *root, *bytes, slot.as_ref())
            }
        }
    }

    /// A collective call (blocking, or non-blocking into `slot`), on communicator `comm`.
    fn collective(
        &self,
        op: Op,
        traced: Op,
        comm: usize,
        root: Option<u32>,
        bytes: u64,
        slot: Option<&SlotRef>,
    ) -> TokenStream {
        let cm = &self.comms[comm];
        let root = Literal::u32_unsuffixed(root.unwrap_or(0));
        let n = int(bytes);
        // Reductions run on the widest elements that divide the size (see `Element`).
        let (element, count) = Element::of(bytes);
        let r = int(count);
        let (sb, rb, fresh) = match element {
            Element::Double => {
                (quote! { k.sreal() }, quote! { b.reals() }, quote! { req.reals(#r) })
            }
            Element::Word => (quote! { k.sword() }, quote! { b.words() }, quote! { req.words(#r) }),
            Element::Byte => (quote! { k.sbuf() }, quote! { b.recv() }, quote! { req.bytes(#r) }),
        };
        let sum = quote! { SystemOperation::sum() };
        let blocking = match op {
            Op::Barrier => Some(quote! { #cm.barrier(); }),
            Op::Bcast => {
                Some(quote! { #cm.process_at_rank(#root).broadcast_into(&mut b.recv()[..#n]); })
            }
            Op::Reduce => Some(quote! { rt::reduce(&#cm, #root, &#sb[..#r], &mut #rb[..#r]); }),
            Op::Allreduce => {
                Some(quote! { #cm.all_reduce_into(&#sb[..#r], &mut #rb[..#r], #sum); })
            }
            Op::Scan => Some(quote! { #cm.scan_into(&#sb[..#r], &mut #rb[..#r], #sum); }),
            Op::Exscan => {
                Some(quote! { #cm.exclusive_scan_into(&#sb[..#r], &mut #rb[..#r], #sum); })
            }
            Op::Gather => Some(quote! { rt::gather(&#cm, #root, &k.sbuf()[..#n], b.recv()); }),
            Op::Scatter => {
                Some(quote! { rt::scatter(&#cm, #root, k.sbuf(), &mut b.recv()[..#n]); })
            }
            Op::Allgather => Some(quote! { rt::all_gather(&#cm, &k.sbuf()[..#n], b.recv()); }),
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
                if op == Op::Bcast {
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

    /// A block that replays table `t` (`x` seconds on average, `removed` of them not run).
    fn replayed(&self, x: f64, t: usize, removed: f64) -> TokenStream {
        let r = &self.skel.replays[t];
        let cut = if removed > 0.0 {
            format!(", of which {} s are not run but added to the prediction", seconds(removed))
        } else {
            String::new()
        };
        let n = note(&format!(
            "{} s on average, as recorded in {} of the {} {}{cut}",
            seconds(x),
            r.iterations.len(),
            r.full,
            if r.steps { "steps of this kind" } else { "iterations" }
        ));
        let table = format_ident!("REPLAY_{}", t);
        let t = Literal::usize_unsuffixed(t);
        let column = quote! { CLASS_COLUMN[k.all.rank() as usize] };
        let again = Literal::usize_unsuffixed(r.first_rows);
        if removed > 0.0 {
            let rm = float(removed);
            quote! { #n sk.compute_replayed_less(#t, &#table, #again, #column, #rm); }
        } else {
            quote! { #n sk.compute_replayed(#t, &#table, #again, #column); }
        }
    }

    pub(super) fn stmts(&self, body: &[Stmt]) -> TokenStream {
        let mut out = TokenStream::new();
        for s in body {
            out.extend(match s {
                Stmt::Compute { seconds: x, replay: Some(t), removed, .. } => {
                    self.replayed(*x, *t, *removed)
                }
                Stmt::Compute { seconds: x, dist: None, factors, keep_only: true, .. } => {
                    let n = note(
                        "every rank runs a short part; the most any rank skips is added to the \
                         prediction",
                    );
                    let x = Self::times(*x, *factors);
                    quote! { #n sk.compute_keep(#x); }
                }
                Stmt::Compute { seconds: x, dist: Some(d), factors, keep_only: true, .. } => {
                    let d = Literal::usize_unsuffixed(*d);
                    match factors {
                        None => {
                            let n = note(&format!(
                                "{} s on average: every rank runs a short part of its draw; the \
                                 most any rank skips is added to the prediction",
                                seconds(*x)
                            ));
                            quote! { #n sk.compute_drawn_keep(#d); }
                        }
                        Some(t) => {
                            let n = note(&format!(
                                "{} s on average, times this rank's factor: every rank runs a \
                                 short part of its draw; the most any rank skips is added to the \
                                 prediction",
                                seconds(*x)
                            ));
                            let f = Self::factor(*t);
                            quote! { #n sk.compute_drawn_scaled_keep(#d, #f); }
                        }
                    }
                }
                Stmt::Compute { seconds: x, dist: None, removed, factors, pinned, .. }
                    if *removed > 0.0 =>
                {
                    let why = pinned.map(|p| format!("{}; ", p.note())).unwrap_or_default();
                    let n = note(&format!(
                        "{why}{} s of it are not run but added to the prediction",
                        seconds(*removed)
                    ));
                    let (x, r) = (Self::times(*x, *factors), float(*removed));
                    if factors.is_some() {
                        quote! { #n sk.compute_less_whole(#x, #r); }
                    } else {
                        quote! { #n sk.compute_less(#x, #r); }
                    }
                }
                Stmt::Compute { seconds: x, dist: None, factors, pinned: Some(p), .. } => {
                    let n = note(&p.note());
                    let x = Self::times(*x, *factors);
                    quote! { #n sk.compute(#x); }
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
                Stmt::Call { call, polls, .. } => {
                    let c = self.call(call);
                    if *polls > 0 {
                        let n =
                            note("failed polls of the application before the call that follows");
                        let p = int(u64::from(*polls));
                        quote! { #n sk.polls(&k.world, #p); #c }
                    } else {
                        c
                    }
                }
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

    /// A time-step loop's table and its count of the steps of each kind (before the loop), and
    /// one step of the kind the table gives (its body).
    fn steps_loop(
        &self,
        steps: &mpiskel_program::StepSchedule,
        cases: &[mpiskel_program::StepCase],
        sub_timer: usize,
    ) -> (TokenStream, TokenStream) {
        let kinds: Vec<Literal> =
            steps.run_kinds().iter().map(|&k| Literal::u8_unsuffixed(k as u8)).collect();
        let n = Literal::usize_unsuffixed(kinds.len());
        let every = if cases.iter().any(|c| c.run == 0) {
            "every family of kinds runs"
        } else {
            "every kind runs"
        };
        let table = note(&format!(
            "the kind of each time step this loop runs: {} of the application's {}, chosen so \
             that {every}; each kind is timed on its own",
            kinds.len(),
            steps.kinds.len()
        ));
        let arms: Vec<_> = cases
            .iter()
            .enumerate()
            .filter(|(_, c)| c.run > 0)
            .map(|(k, c)| {
                let family = c.pricing();
                let n = note(&format!(
                    "{} of the application's steps are of this kind, {} run{family}: {}",
                    c.full, c.run, c.note
                ));
                (Literal::u8_unsuffixed(k as u8), n, self.stmts(&c.body))
            })
            .collect();
        let first = Literal::usize_unsuffixed(sub_timer);
        let n_kinds = Literal::usize_unsuffixed(cases.len());
        let again = note("more steps than the table's read it over again");
        let head = quote! {
            #table
            const KIND: [u8; #n] = [#(#kinds),*];
            #again
            sk.steps_count(#first, #n_kinds, &KIND, run);
        };
        // One kind runs (a family sampled once): its body, without a match.
        let (kind, steps) = match arms.as_slice() {
            [(_, n, b)] => (quote! { KIND[0] }, quote! { #n #b }),
            _ => {
                let arms = arms.iter().map(|(k, n, b)| quote! { #k => { #n #b } });
                (
                    quote! { KIND[it as usize % #n] },
                    quote! {
                        match KIND[it as usize % #n] {
                            #(#arms)*
                            _ => {}
                        }
                    },
                )
            }
        };
        let body = quote! {
            let t_step = sk.part_begin();
            #steps
            sk.phase_add(#first + usize::from(#kind), mpi::time() - t_step);
        };
        (head, body)
    }

    /// A phase's function.
    pub(super) fn phase(
        &self,
        prefix: &str,
        p: &Phase,
        sub_timer: usize,
        program_scope: bool,
    ) -> TokenStream {
        let name = format_ident!("{}{}", prefix, p.name);
        let comment = phase_comment(p);
        let d = doc(&comment);
        let mut body = TokenStream::new();
        // Before the loop: a time-step loop's table, and its count of the steps of each kind.
        let mut head = TokenStream::new();
        if let (Some(steps), [Stmt::Steps { cases }]) = (&p.steps, p.body.as_slice()) {
            let (h, b) = self.steps_loop(steps, cases, sub_timer);
            head.extend(h);
            body.extend(b);
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
                        let t_inner = sk.part_begin();
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
                    quote! { #head for it in 0..run { #s #end } }
                }
                ScopeLevel::Phase => {
                    let s = scoped(quote! { for it in 0..run { #body #end } });
                    quote! { #head #s }
                }
                ScopeLevel::None => quote! { #head for it in 0..run { #body #end } },
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
