//! The tables of `main.rs`: each rank's class, compute distributions, weights and factors, send
//! sizes, compute blocks replayed as recorded, and each request slot's receive buffer.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::scope::slot_counts;
use super::tokens::{doc, float, int};
use mpiskel_program::Skeleton;

/// The tables of ranks: class of each rank, compute distributions, weights, send sizes,
/// compute factors. Returns whether there are distributions and weights.
pub(super) fn tables(skel: &Skeleton, tables: &mut TokenStream) -> (bool, bool) {
    let n_lit = Literal::u32_unsuffixed(skel.n_ranks);
    let multi = skel.classes.len() > 1;
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
    if !skel.presence_tables.is_empty() {
        let rows = skel.presence_tables.iter().map(|t| {
            let v = t.iter().map(|&b| {
                if b {
                    quote! { true }
                } else {
                    quote! { false }
                }
            });
            quote! { [#(#v),*] }
        });
        let nt = Literal::usize_unsuffixed(skel.presence_tables.len());
        let d = doc(
            "Where only some ranks of a class make a call (a multigrid's coarse levels): whether
             each rank makes it, PRESENT[table][rank]; the others skip it, as toward MPI_PROC_NULL.",
        );
        tables.extend(quote! { #d static PRESENT: [[bool; #n_lit]; #nt] = [#(#rows),*]; });
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
    (has_dists, has_weights)
}

/// The tables of compute blocks replayed as recorded, and each rank's column in them.
pub(super) fn replay_tables(skel: &Skeleton, tables: &mut TokenStream) {
    let n_lit = Literal::u32_unsuffixed(skel.n_ranks);
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
            "Class {} (ranks {}): the application's {}{} {} {}{of}; recorded\n\
             values{} × {:.4}{}.",
            r.class,
            crate::c::ranks_text(&class.ranks),
            r.unit(),
            if r.iterations.len() > 1 { "s" } else { "" },
            crate::c::iterations_text(&r.iterations),
            r.of_what(),
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
}

/// The table of each request slot's own receive buffer (the largest count a receive in it
/// posts), if some slot receives; the argument of `Pool::new`.
pub(super) fn slot_bytes(skel: &Skeleton, tables: &mut TokenStream) -> TokenStream {
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
    slot_bytes_arg
}
