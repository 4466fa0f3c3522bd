//! The skeleton's `src/main.rs`: constants, tables, the topology's `Kit`, one function per
//! process class, and `main`. Each part is made by a function of its own; [`main_rs`] puts them
//! together and keeps only the constants and imports the program uses.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::comments::{format_file, idents_of, note, uses_ident, NOTES};
use super::scope::{needs_program_scope, pool_bytes, scope_level, self_contained, ScopeLevel};
use super::tables::{replay_tables, slot_bytes, tables};
use super::tokens::{doc, int, Gen};
use super::topology::{communicators, directions, sub_communicators, Consts, KitParts};
use crate::c::{ranks_text, Meta, RenderError};
use mpiskel_cut::scale::Scaling;
use mpiskel_program::{Skeleton, Stmt};

/// The skeleton's `src/main.rs`.
pub(super) fn main_rs(
    skel: &Skeleton,
    scaling: &Scaling,
    meta: &Meta,
) -> Result<String, RenderError> {
    NOTES.with(|v| v.borrow_mut().clear());
    let mut kit = KitParts::default();
    let comms = communicators(skel, &mut kit);
    let dir_consts = directions(skel, &mut kit);
    sub_communicators(skel, &mut kit);
    let gen = Gen { skel, comms };
    let multi = skel.classes.len() > 1;
    let nd = skel.directions.len();

    // Classes and phases.
    let any_program_scope = skel.classes.iter().any(|c| needs_program_scope(&c.phases));
    let program_pool_pass = if any_program_scope {
        quote! { &mut program_pool }
    } else {
        quote! {}
    };
    let mut functions = TokenStream::new();
    let mut dispatch = Vec::new();
    for ci in 0..skel.classes.len() {
        let (f, arm) = class_program(skel, &gen, ci, any_program_scope, &program_pool_pass);
        functions.extend(f);
        dispatch.push(arm);
    }
    let (has_dists, has_weights) = tables(skel, &mut kit.tables);
    replay_tables(skel, &mut kit.tables);
    let slot_bytes_arg = slot_bytes(skel, &mut kit.tables);

    let uses_rank = kit.setup.to_string().contains("[rank]");
    let rank_line = if uses_rank {
        quote! { let rank = all.rank() as usize; }
    } else {
        quote! {}
    };
    let at_method = at_method(nd);

    let sb = Literal::u64_unsuffixed(skel.send_bytes.max(8));
    let rb = Literal::u64_unsuffixed(skel.recv_bytes.max(8));
    let name = &meta.name;
    let (factor, app) = (six_places(scaling.factor), six_places(scaling.app_time_s));
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
    let (universe_mut, attach, detach) = buffered_sends(skel);
    let settings = runtime_settings(scaling, has_dists, has_weights, skel.processor_time);

    let program_pool_let = if any_program_scope {
        quote! { let mut program_pool = Pool::new(&[]); }
    } else {
        quote! {}
    };

    let header = header(skel, scaling, meta);
    let header_lines =
        header.lines().map(|l| if l.is_empty() { String::new() } else { format!(" {l}") });
    let KitItems { dir_consts, main_full_const, send_const, send_field, send_init, kit_impl } =
        kit_items(&functions, &kit, at_method, dir_consts, main_full, sb);
    let KitParts { fields: kit_fields, init: kit_init, setup, tables } = kit;

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
            #settings
            #body_dispatch
            #detach
            sk.report(&k.all, NAME, FACTOR, APP_TIME);
        }
    };
    let imports = imports(&items);
    // The tables hold recorded numbers, some of which fall near a constant clippy knows (a
    // duration of 1.04719 s is not π/3).
    let file = quote! {
        #(#![doc = #header_lines])*
        #![allow(clippy::approx_constant)]

        mod rt;

        #(#imports)*

        #items
    };
    format_file("src/main.rs", file)
}

/// `x` as a literal of six decimal places.
fn six_places(x: f64) -> Literal {
    format!("{x:.6}").parse::<Literal>().unwrap_or_else(|_| Literal::f64_unsuffixed(x))
}

/// The kit's method that finds the process in a direction, where there are directions (`nd`).
fn at_method(nd: usize) -> TokenStream {
    if nd == 0 {
        return quote! {};
    }
    quote! {
        #[doc = " The process in direction `d`, if there is one."]
        fn at(&self, d: usize) -> Option<Process<'_>> {
            self.nbr[d].map(|r| self.world.process_at_rank(r))
        }
    }
}

/// What `main` sets in the runtime before the class runs: the compute distributions, the
/// ranks' weights, the share cut blocks run.
fn runtime_settings(
    scaling: &Scaling,
    has_dists: bool,
    has_weights: bool,
    processor_time: bool,
) -> TokenStream {
    let set_processor_time = if processor_time {
        let n = note(
            "the compute blocks are processor time: the prediction is held to what the node's \
             processors could run",
        );
        quote! {
            #n
            sk.set_processor_time();
        }
    } else {
        quote! {}
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
    quote! {
        #set_dists
        #set_weights
        #set_shrink
        #set_processor_time
    }
}

/// One class's program function and its arm of `main`'s dispatch.
fn class_program(
    skel: &Skeleton,
    gen: &Gen<'_>,
    ci: usize,
    any_program_scope: bool,
    program_pool_pass: &TokenStream,
) -> (TokenStream, TokenStream) {
    let class = &skel.classes[ci];
    let multi = skel.classes.len() > 1;
    let mut functions = TokenStream::new();
    let prefix = if multi { format!("c{ci}_") } else { String::new() };
    let program_scope = needs_program_scope(&class.phases);
    let PhaseCalls { timers, calls, runs, mut reserve, reserve_fixed } =
        phase_calls(skel, gen, &prefix, &class.phases, program_scope, &mut functions);
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
        let n2 =
            note("the buffers of the program-wide request scope, reserved before the clock starts");
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
    // Where the classes' phases differ, blocks cut to a short part on every rank restore the
    // most any rank skipped in the phase of the same name.
    let names: Vec<Vec<String>> =
        skel.classes.iter().map(|c| crate::timers::timer_names(&c.phases)).collect();
    let keep_slots = match crate::timers::keep_slots(skel, &names) {
        Some((slots, n)) => {
            let slots = slots[ci].iter().map(|&s| Literal::usize_unsuffixed(s));
            let n = Literal::usize_unsuffixed(n);
            let c = note("the slot of each phase among the names of all classes' phases");
            quote! { #c sk.keep_slots(&[#(#slots),*], #n); }
        }
        None => quote! {},
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
            #keep_slots
            #calls
        }
    });
    let ci = Literal::usize_unsuffixed(ci);
    (functions, quote! { #ci => #program(&k, &mut sk, &mut b, &mut pool, #program_pool_pass), })
}

/// What a class's phases put in its program function: the phase timers, the code that sets
/// their iteration counts, the calls of the phases' functions (each defined in `functions`), and
/// what they take from the program-wide pool.
#[derive(Default)]
struct PhaseCalls {
    timers: Vec<TokenStream>,
    calls: TokenStream,
    runs: TokenStream,
    reserve: Vec<TokenStream>,
    reserve_fixed: u64,
}

/// The phases of one class: their functions go to `functions`.
fn phase_calls(
    skel: &Skeleton,
    gen: &Gen<'_>,
    prefix: &str,
    phases: &[mpiskel_program::Phase],
    program_scope: bool,
    functions: &mut TokenStream,
) -> PhaseCalls {
    let mut timers = Vec::new();
    let mut calls = TokenStream::new();
    let mut runs = TokenStream::new();
    // What the phases under the program-wide scope take from its pool: reserved (and
    // written) before the clock starts, so that the timed run neither allocates nor faults.
    let mut reserve = Vec::new();
    let mut reserve_fixed = 0;
    for p in phases {
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
        let mut timer_expr = if mpiskel_cut::replay::replays_first(&p.body, &skel.replays) {
            quote! { Phase::new(#name, #full, #run).first_apart() }
        } else {
            quote! { Phase::new(#name, #full, #run) }
        };
        if p.warmup > 0 {
            let w = int(p.warmup);
            timer_expr = quote! { #timer_expr.warmup(#w) };
        }
        if p.scale != 1.0 {
            let x = Literal::f64_unsuffixed((p.scale * 1e6).round() / 1e6);
            timer_expr = quote! { #timer_expr.stretch(#x) };
        }
        timers.push(timer_expr);
        let mut sub = 0;
        if let (Some(_), [Stmt::Steps { cases }]) = (&p.steps, p.body.as_slice()) {
            sub = timers.len();
            let t = Literal::usize_unsuffixed(timer);
            for (k, c) in cases.iter().enumerate() {
                let (n, f, r) = (format!("{}.kind{k}", p.name), int(c.full), int(c.run));
                if c.scale == 1.0 {
                    timers.push(quote! { Phase::inner(#n, #f, #r, #t) });
                } else {
                    // It stands for the kinds of its family that do not run, or the rest of
                    // its step cut short, too.
                    let x = Literal::f64_unsuffixed((c.scale * 1e6).round() / 1e6);
                    timers.push(quote! { Phase::inner(#n, #f, #r, #t).stretch(#x) });
                }
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
        if p.name == "main_loop" {
            let t = Literal::usize_unsuffixed(timer);
            // The main loop's iterations (a time-step loop's steps) may be changed with
            // --iterations.
            let set = if p.steps.is_some() {
                quote! { sk.steps_run(#run, #full) }
            } else {
                quote! { sk.main_run(#run, #full, MAIN_FULL) }
            };
            runs = {
                let mut r = quote! { phases[#t].run = #set; };
                r.extend(runs);
                r
            };
        }
        functions.extend(gen.phase(prefix, p, sub, outer));
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
        calls.extend(quote! { sk.phase_begin(#t); #f(k, sk, b, #extra #run); sk.phase_end(#t); });
    }
    PhaseCalls { timers, calls, runs, reserve, reserve_fixed }
}

/// Whether `main` needs a mutable universe, and the attaching and detaching of the buffer of
/// buffered sends.
fn buffered_sends(skel: &Skeleton) -> (TokenStream, TokenStream, TokenStream) {
    match skel.send_buffer {
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
    }
}

/// The file's header comment.
fn header(skel: &Skeleton, scaling: &Scaling, meta: &Meta) -> String {
    let name = &meta.name;
    let multi = skel.classes.len() > 1;
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
    header
}

/// The constants and the `Kit` parts that depend on what the functions name.
struct KitItems {
    dir_consts: TokenStream,
    main_full_const: TokenStream,
    send_const: TokenStream,
    send_field: TokenStream,
    send_init: TokenStream,
    kit_impl: TokenStream,
}

/// The constants the functions name (directions, tags, `MAIN_FULL`, the send buffer) and the
/// `Kit` methods they call.
fn kit_items(
    functions: &TokenStream,
    kit: &KitParts,
    at_method: TokenStream,
    dir_consts: Consts,
    main_full: Literal,
    sb: Literal,
) -> KitItems {
    let mut used = functions.clone();
    used.extend(kit.setup.clone());
    used.extend(at_method.clone());
    used.extend(kit.fields.iter().cloned());
    let used = idents_of(&used);
    let dir_consts: TokenStream = dir_consts
        .into_iter()
        .filter(|(id, _)| id == "N_DIRECTIONS" || used.contains(&id.to_string()))
        .map(|(_, t)| t)
        .collect();
    let in_functions = idents_of(functions);
    let main_full_const = if in_functions.contains("MAIN_FULL") {
        quote! {
            #[doc = " Iterations of the main loop in the application (the lead class's)."]
            const MAIN_FULL: i64 = #main_full;
        }
    } else {
        quote! {}
    };
    let (uses_sbuf, uses_sreal, uses_sword) = (
        in_functions.contains("sbuf"),
        in_functions.contains("sreal"),
        in_functions.contains("sword"),
    );
    let send_const = if uses_sbuf || uses_sreal || uses_sword {
        quote! {
            #[doc = " Bytes of the send buffer."]
            const SEND_BYTES: usize = #sb;
        }
    } else {
        quote! {}
    };
    // One send buffer of doubles, seen as bytes too (as the C skeleton's one `sbuf` serves both).
    let (send_field, send_init) = if uses_sbuf || uses_sreal || uses_sword {
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
    if uses_sword {
        kit_methods.extend(quote! {
            #[doc = " The send buffer's four-byte words."]
            fn sword(&self) -> &[u32] {
                bytemuck::cast_slice(&self.send)
            }
        });
    }
    let kit_impl = if kit_methods.is_empty() {
        quote! {}
    } else {
        quote! { impl Kit { #kit_methods } }
    };
    KitItems { dir_consts, main_full_const, send_const, send_field, send_init, kit_impl }
}

/// The `use` lines of what the program names.
fn imports(items: &TokenStream) -> Vec<TokenStream> {
    let in_items = idents_of(items);
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
    vec![
        op,
        quote! { use mpi::topology::{#(#topology),*}; },
        quote! { use mpi::traits::*; },
        tag,
        quote! { use rt::{#(#rt_names),*}; },
    ]
}
