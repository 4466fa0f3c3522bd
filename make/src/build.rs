//! A skeleton folder from a trace: the whole pipeline — read the trace, fold its polling loops,
//! leave out local calls, find the topology and the classes, make the checked, scaled program
//! ([`mpiskel_cut::pipeline`]), render it in C or Rust — and the folder written under a
//! temporary name and renamed into place when complete.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use mpiskel_cut::pipeline::{make, make_planned, make_strict, Built, PipelineError, Plan};
use mpiskel_emit::c::{render, Meta};
use mpiskel_emit::document::{self, SkeletonDocument};
use mpiskel_logicalize::LogicalTrace;
use mpiskel_simulate::fidelity::Panel;
use mpiskel_simulate::platform::Platform;
use mpiskel_trace::local::LocalCalls;
use mpiskel_trace::polls::PollFolding;
use mpiskel_trace::stretch::Stretch;
use mpiskel_trace::{ReadOptions, TiOptions, TraceSet};

use crate::error::{bail, ensure, Context, Error, Result};
use crate::harness;
use crate::observe::Observer;
pub use crate::options::{BuildOptions, Lang};
use crate::policy::unchecked;

/// A skeleton folder written.
#[derive(Debug)]
pub struct BuildOutcome {
    /// What the folder's `skeleton.json` holds.
    pub document: SkeletonDocument,
    /// What the user should know of the choices made (calls left out, sends buffered, parts not
    /// run), one sentence each.
    pub notes: Vec<String>,
}

/// Requests the trace's completions complete whose start it does not hold, over all ranks: those
/// of no id (a tracer that records the completion but not the start) and those of an id no call
/// before started. O(calls).
fn completed_unstarted(set: &TraceSet) -> u64 {
    use mpiskel_trace::Payload;
    let mut n = 0;
    for rank in &set.ranks {
        let mut started = std::collections::HashSet::new();
        for e in &rank.events {
            match &e.payload {
                Payload::P2p { request: Some(q), .. }
                | Payload::Collective { request: Some(q), .. } => {
                    started.insert(*q);
                }
                Payload::Completion { completed, .. } => {
                    let unstarted = |c: &&mpiskel_trace::Completed| {
                        c.request.is_none_or(|q| !started.contains(&q))
                    };
                    n += completed.iter().filter(unstarted).count() as u64;
                }
                _ => {}
            }
        }
    }
    n
}

/// The note on requests completed whose start the trace does not hold.
fn describe_unstarted(n: u64) -> String {
    format!(
        "{n} requests the trace's waits and tests complete were started by calls it does not \
         hold (calls its tracer does not record, such as MPI_Rget or MPI_Imrecv): their \
         messages are not in the skeleton, which predicts the application without them"
    )
}

/// The notes on the calls `set` counts but does not record
/// ([`mpiskel_trace::RankTrace::unrecorded`]) for an application of `app_time_s`: one on its
/// one-sided calls and one on its MPI-IO calls, each where it made some. O(ranks × kinds).
fn describe_unrecorded(set: &TraceSet, app_time_s: f64) -> Vec<String> {
    let all = mpiskel_trace::summary::unrecorded(set);
    let (io, one_sided): (Vec<_>, Vec<_>) =
        all.iter().partition(|(k, _)| mpiskel_trace::summary::is_file_io(k));
    let groups = [
        (one_sided, "one-sided calls", "moved", "a network"),
        (io, "MPI-IO calls", "read or written", "a file system"),
    ];
    let ranks = set.n_ranks().max(1) as f64;
    let mut notes = Vec::new();
    for (mut kinds, what, moved, where_) in groups {
        let calls: u64 = kinds.iter().map(|(_, u)| u.calls).sum();
        if calls == 0 {
            continue;
        }
        kinds.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then(a.0.cmp(b.0)));
        let shown: Vec<String> =
            kinds.iter().take(4).map(|(k, u)| format!("MPI_{k} {}", u.calls)).collect();
        let more = if kinds.len() > 4 { ", …" } else { "" };
        let mib = kinds.iter().map(|(_, u)| u.bytes).sum::<u64>() as f64 / (1024.0 * 1024.0);
        let per_rank_s = kinds.iter().map(|(_, u)| u.ns).sum::<u64>() as f64 * 1e-9 / ranks;
        let share = if app_time_s > 0.0 { 100.0 * per_rank_s / app_time_s } else { 0.0 };
        notes.push(format!(
            "the application made {calls} {what} that the trace counts but does not record \
             ({}{more}; {mib:.1} MiB {moved}; {per_rank_s:.6} s inside them per rank on \
             average, {share:.1} % of the application's time): the skeleton does not make \
             them, and their time stays in the computation before the next recorded call, so \
             the prediction counts it as computation and does not follow {where_} that is \
             faster or slower for them",
            shown.join(", "),
        ));
    }
    notes
}

/// Builds the skeleton of `o.trace` into the folder `o.output`.
///
/// Fails, writing nothing, on a trace that holds no calls, on a program that can deadlock
/// ([`Error::Deadlock`], with the blocked ranks named) and on bad options.
pub fn build(o: &BuildOptions, observer: &dyn Observer) -> Result<BuildOutcome> {
    let name = checked_name(o)?;
    // A platform that cannot be read fails before the trace is read.
    let platform = match &o.platform {
        Some(p) => Some((p, mpiskel_simulate::platform::Platform::open(p)?)),
        None => None,
    };
    let mut notes = Vec::new();
    let opts = ReadOptions { ti: TiOptions { flops_per_second: o.flops } };
    let (mut set, polls) = read(o, &opts, &mut notes, observer)?;
    let local_calls = if o.strict { LocalCalls::default() } else { set.drop_local_calls() };
    // Collectives that threads made on copies of the world, in rank 0's order on every rank: as
    // they were, one thread per rank could not finish them.
    if !o.strict {
        let aligned = set.align_collectives();
        if aligned.calls_moved > 0 {
            notes.push(document::describe_aligned(&aligned));
        }
    }
    // The stretches between collectives of all ranks, found before the calls are freed: the
    // trace is read again only where some are to be cut.
    let stretches = if o.strict { Vec::new() } else { set.stretches() };
    // Where the note on local calls stands: a stretch cut replaces it (it leaves out more).
    let mut local_note = None;
    if local_calls.calls() > 0 || local_calls.unmatched_sendrecv > 0 {
        local_note = Some(notes.len());
        notes.push(document::describe_local(&local_calls, set.app_time_s(), set.n_ranks()));
    }
    // The application on the fidelity panel, simulated while its calls are at hand: every
    // candidate skeleton is held to these times ([`crate::policy`]).
    let trace_calls: u64 = set.ranks.iter().map(|r| r.events.len() as u64).sum();
    let fidelity = if o.check {
        panel_of(o, platform.as_ref().map(|(_, pf)| pf), &set, &mut notes, observer)?
    } else {
        None
    };
    observer.line(&format!("{} ranks read; finding the topology", set.n_ranks()));
    let (app_time, source) = match o.app_time {
        Some(t) => (t, "given with --app-time".to_owned()),
        None => (
            set.app_time_s(),
            "span of the slowest rank from MPI_Init to MPI_Finalize in the trace".to_owned(),
        ),
    };
    // The calls themselves go into the logical trace, each rank's freed once translated: their
    // memory is not held while the skeleton is made.
    let lt = {
        let _busy = observer.busy("finding the topology and the process classes");
        mpiskel_logicalize::logicalize_owned(set)
    };
    crate::memory::release();
    observer.line(&format!(
        "topology: {}; {} process classes",
        lt.topology_name(),
        lt.classes.len()
    ));
    let (mut built, mut lt, local_calls) =
        make_program(o, &opts, lt, (stretches, local_calls), (app_time, &source), observer)?;
    if !lt.stretches.is_empty() {
        if let Some(i) = local_note {
            notes.remove(i);
        }
        if local_calls.calls() > 0 || local_calls.unmatched_sendrecv > 0 {
            notes.push(document::describe_local(&local_calls, app_time, lt.n_ranks));
        }
        notes.push(document::describe_stretches(&lt.stretches, app_time));
    }
    observer.line(&format!(
        "program checked: {} operations over {} ranks run to completion",
        built.check.operations, built.check.ranks
    ));
    // The one decision: the candidates measured on the panel, one kept.
    let mut checked = None;
    if let Some((panel, app)) = &fidelity {
        let check = crate::policy::Check { panel, app, bound: o.max_error };
        let _busy = observer.busy("checking the skeleton's fidelity on the panel");
        if o.strict {
            match check.rows(&built) {
                Ok(rows) => checked = Some((rows, None)),
                Err(e) => notes.push(unchecked(&e)),
            }
        } else {
            let goal = crate::policy::Goal {
                app_time_s: app_time,
                source: &source,
                target_s: o.target_time,
                compute_cut: !o.whole_compute,
                trace_calls,
            };
            match crate::policy::search(&mut lt, built, goal, &check, observer) {
                Ok(kept) => {
                    built = kept.built;
                    notes.extend(crate::policy::describe(&kept.decision));
                    checked = Some((kept.rows, Some(kept.decision)));
                }
                Err((default, e)) => {
                    built = *default;
                    notes.push(unchecked(&e));
                }
            }
        }
    }
    if let Some((platform, pf)) = &platform {
        crate::aim::aim(
            o,
            (platform, pf),
            &mut built,
            &mut lt,
            (app_time, &source),
            fidelity.as_ref(),
            &mut checked,
            &mut notes,
            observer,
        )?;
    }
    let meta = Meta {
        name,
        trace: o.trace.display().to_string(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        fidelity: checked.as_ref().map(|(rows, _)| rows.clone()).unwrap_or_default(),
    };
    let files = match o.lang {
        Lang::C => render(&built.skeleton, &built.scaling, &meta),
        Lang::Rust => mpiskel_emit::rust::render(&built.skeleton, &built.scaling, &meta),
    }
    .map_err(|e| Error::Render(e.to_string()))?;
    let mut doc = SkeletonDocument::new(&built, &lt, &meta, o.lang.name(), polls, local_calls);
    if let Some((rows, decision)) = checked {
        doc.fidelity = rows;
        doc.fidelity_decision = decision;
    }
    write_folder(&o.output, &files, &serde_json::to_string_pretty(&doc)?, o.force)?;
    observer.line(&format!("wrote {}", o.output.display()));
    describe_built(&built, &mut notes);
    Ok(BuildOutcome { document: doc, notes })
}

/// The options checked before anything is read; the skeleton's name.
fn checked_name(o: &BuildOptions) -> Result<String> {
    ensure!(o.flops > 0.0 && o.flops.is_finite(), "--flops must be a positive number");
    ensure!(o.max_error > 0.0 && o.max_error.is_finite(), "--max-error must be a positive number");
    if let Some(t) = o.target_time {
        ensure!(t > 0.0 && t.is_finite(), "--target-time must be a positive number");
    }
    if let Some(t) = o.app_time {
        ensure!(t > 0.0 && t.is_finite(), "--app-time must be a positive number");
    }
    if o.output.exists() && !o.force {
        bail!("{} exists; use --force to replace it", o.output.display());
    }
    let name = o.name.clone().unwrap_or_else(|| default_name(&o.trace));
    ensure!(
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
        "skeleton name {name:?}: use letters, digits, '.', '_' and '-' (--name)"
    );
    Ok(name)
}

/// The trace of `o` read, its polling loops folded, with the notes on how it was recorded
/// pushed on `notes`.
fn read(
    o: &BuildOptions,
    opts: &ReadOptions,
    notes: &mut Vec<String>,
    observer: &dyn Observer,
) -> Result<(TraceSet, PollFolding)> {
    observer.line(&format!("reading {}", o.trace.display()));
    let (set, polls) = {
        let _busy = observer.reading("reading");
        TraceSet::open_folded(&o.trace, opts)?
    };
    if set.meta.as_ref().is_some_and(|m| m.time_only) {
        bail!(
            "{} holds only the application's time (recorded with `mpiskel trace --time-only`), \
             not its calls; trace the run without --time-only to build a skeleton",
            o.trace.display()
        );
    }
    if polls.any() {
        observer.line(&document::describe_polls(&polls));
    }
    if let Some(note) =
        set.meta.as_ref().and_then(|m| m.node_load).and_then(|l| crate::load::describe(&l))
    {
        notes.push(note);
    }
    if let Some(note) = set.meta.as_ref().and_then(crate::load::describe_single_run) {
        notes.push(note);
    }
    if let Some(note) =
        set.meta.as_ref().and_then(|m| crate::load::describe_outside_mpi(m, set.app_time_s()))
    {
        notes.push(note);
    }
    if let Some(note) = mpiskel_trace::off_processor::off_processor(&set)
        .and_then(|off| crate::load::describe_off_processor(&off, set.app_time_s()))
    {
        notes.push(note);
    }
    notes.extend(describe_unrecorded(&set, set.app_time_s()));
    let unstarted = completed_unstarted(&set);
    if unstarted > 0 {
        notes.push(describe_unstarted(unstarted));
    }
    Ok((set, polls))
}

/// The fidelity panel around the reference of `o`, with the application simulated on it while
/// its calls are at hand; `None` (with a note) where the trace cannot be simulated.
fn panel_of(
    o: &BuildOptions,
    platform: Option<&Platform>,
    set: &TraceSet,
    notes: &mut Vec<String>,
    observer: &dyn Observer,
) -> Result<Option<(Panel, Vec<f64>)>> {
    let reference = match platform {
        Some(pf) => Some((
            pf.clone(),
            mpiskel_simulate::platform::placement(pf, o.hostfile.as_deref(), set.n_ranks())?,
        )),
        None => None,
    };
    let panel = mpiskel_simulate::fidelity::Panel::around(reference, set.n_ranks(), o.flops);
    let _busy = observer.busy("simulating the application on the fidelity panel");
    match mpiskel_simulate::fidelity::app_times(&set.ranks, &panel) {
        Ok(app) => Ok(Some((panel, app))),
        Err(e) => {
            notes.push(format!(
                "the fidelity check did not run: the application's trace could not be simulated \
                 ({e}); the skeleton's prediction is not checked"
            ));
            Ok(None)
        }
    }
}

/// The checked, cut program made from the logical trace `lt` of `o` (read again where its
/// stretches between collectives of all ranks are cut short): with the logical trace it was made
/// from and the local calls left out of it.
fn make_program(
    o: &BuildOptions,
    opts: &ReadOptions,
    lt: LogicalTrace,
    (stretches, local_calls): (Vec<Stretch>, LocalCalls),
    (app_time, source): (f64, &str),
    observer: &dyn Observer,
) -> Result<(Built, LogicalTrace, LocalCalls)> {
    // The loop nests, found once. Before the program is made whole and checked, a look at it
    // (`Plan::program`: cut as far as any reach allows, unchecked): where the stretches between
    // collectives of all ranks that fold into no loop would be cut from it, they are cut
    // first, and a program of millions of calls that fold into no loop is not made whole,
    // checked and thrown away (ABySS, 3.7 million calls: 2.2 GB and 126 s, of which the
    // program made with its stretches cut took 6 s).
    let mut plan = (!o.strict).then(|| {
        let _busy = observer.busy("finding loops");
        let plan = Plan::of(&lt);
        crate::memory::release();
        plan
    });
    let mut whole = Some(lt);
    let mut early_cuts = None;
    if let Some((plan, lt)) = plan.as_ref().zip(whole.as_ref()).filter(|_| !stretches.is_empty()) {
        let look = {
            let _busy = observer.busy("looking at the program before it is made");
            plan.program(lt, app_time, source, o.target_time, !o.whole_compute)
        };
        if let Ok((program, scaling)) = look {
            let cuts = mpiskel_cut::stretches::choose(
                lt,
                (&program, &scaling),
                stretches.clone(),
                app_time,
            );
            if !cuts.is_empty() {
                early_cuts = Some((cuts, scaling.skeleton_estimate_s));
            }
        }
    }
    let mut early = None;
    if let Some((cuts, estimate)) = early_cuts {
        // Neither the whole trace's logical form nor its loop nests are held while the cut one
        // is made: they are made again where the cut fails.
        (whole, plan) = (None, None);
        early = by_stretches(o, opts, cuts, estimate, (app_time, source), observer)?;
    }
    Ok(match early {
        Some(made) => made,
        None => {
            let mut lt = match whole {
                Some(lt) => lt,
                None => {
                    let _busy = observer.reading("reading again");
                    let (mut set, _) = TraceSet::open_folded(&o.trace, opts)?;
                    set.drop_local_calls();
                    set.align_collectives();
                    mpiskel_logicalize::logicalize_owned(set)
                }
            };
            let made = {
                let _busy = observer.busy("finding loops, cutting them and checking the program");
                let (app, target, compute) = (app_time, o.target_time, !o.whole_compute);
                match plan {
                    Some(plan) => make_planned(&mut lt, plan, app, source, target, compute),
                    None if o.strict => make_strict(&mut lt, app, source, target, compute),
                    None => make(&mut lt, app, source, target, compute),
                }
            };
            let built = match made {
                Ok(b) => b,
                Err(PipelineError::Deadlock(d)) => {
                    return Err(Error::Deadlock {
                        output: o.output.clone(),
                        report: d.to_string(),
                        strict: o.strict,
                    })
                }
                Err(e) => return Err(e.into()),
            };
            // Over its target with stretches between collectives of all ranks that fold into
            // no loop: made again from the trace with those stretches cut short.
            let cuts = if o.strict {
                Vec::new()
            } else {
                let program = (&built.skeleton, &built.scaling);
                mpiskel_cut::stretches::choose(&lt, program, stretches, app_time)
            };
            let estimate = built.scaling.skeleton_estimate_s;
            match by_stretches(o, opts, cuts, estimate, (app_time, source), observer)? {
                Some(made) => made,
                None => (built, lt, local_calls),
            }
        }
    })
}

/// The notes on what the build of `built` did to the program, pushed on `notes`.
fn describe_built(built: &Built, notes: &mut Vec<String>) {
    let s = &built.scaling;
    if built.pinned_any_source > 0 {
        notes.push(document::describe_pinned(built.pinned_any_source));
    }
    if built.buffered_sends > 0 {
        notes.push(document::describe_buffered(built.buffered_sends, built.buffered_nonblocking));
    }
    if built.traced_tags > 0 {
        notes.push(document::describe_traced_tags(built.traced_tags));
    }
    if !s.note.is_empty() {
        notes.push(s.note.clone());
    }
    if s.warmup_s > 0.0 {
        notes.push(format!(
            "the warm-up iteration before the main loop (one iteration of it, {:.1} % of the \
             time) is not run; the skeleton prices it as one more iteration of the main loop",
            100.0 * s.warmup_s / s.app_time_s
        ));
    }
    if let Some(c) = &s.steps_cut {
        notes.push(document::describe_steps_cut(c, s.app_time_s));
    }
    if s.compute_removed_s > 0.0 {
        notes.push(format!(
            "{:.6} s of computation per rank are not run; the skeleton adds their time back to \
             its prediction",
            s.compute_removed_s
        ));
    }
    if s.compute_shrink < 1.0 {
        notes.push(format!(
            "blocks without drawn deviations also run only {:.1} % of what they keep on each \
             rank, the rest added back",
            100.0 * s.compute_shrink
        ));
    }
}

/// The program made again from the trace of `o`, read anew, with the stretches between
/// collectives of all ranks `cuts` ([`mpiskel_cut::stretches::choose`]) cut short
/// ([`mpiskel_trace::stretch`]): with its logical trace and the local calls left out (those the
/// cut left without a partner included). `None` where nothing is cut, the program cannot be
/// made so, or its estimate is not under `shortest`, that of the program made (or looked at,
/// [`Plan::program`]) from the whole trace.
///
/// The program made with the stretches cut may fold otherwise than the whole trace's: stretches
/// that it held in loops it cut (steps of a time-step loop it left out) can run whole in it.
/// Where it is still over its target, the stretches it would cut are cut as well, once, and the
/// shorter program kept (ABySS on 2 ranks: two stretches of 1.5 s that one trace's first
/// program left out as time steps, and the other traces' cut short). The first program is not
/// held while the trace is read again for the second (both at once were ABySS's peak, 1.03 GB
/// for 3.7 M calls): where the second is not shorter, the first is made again.
fn by_stretches(
    o: &BuildOptions,
    opts: &ReadOptions,
    cuts: Vec<(mpiskel_trace::stretch::Stretch, f64)>,
    shortest: f64,
    app: (f64, &str),
    observer: &dyn Observer,
) -> Result<Option<(Built, mpiskel_logicalize::LogicalTrace, LocalCalls)>> {
    let Some(first) = cut_round(o, opts, &cuts, shortest, app, true, observer)? else {
        return Ok(None);
    };
    if first.more.is_empty() {
        return Ok(Some(first.made));
    }
    let estimate = first.made.0.scaling.skeleton_estimate_s;
    let mut all = cuts.clone();
    all.extend(first.more);
    all.sort_by_key(|(st, _)| st.index);
    drop(first.made);
    if let Some(second) = cut_round(o, opts, &all, estimate, app, false, observer)? {
        return Ok(Some(second.made));
    }
    observer.line("the first cut is shorter: made again");
    Ok(cut_round(o, opts, &cuts, shortest, app, false, observer)?.map(|r| r.made))
}

/// What one round of [`by_stretches`] made.
struct CutRound {
    /// The program, its logical trace and the local calls left out.
    made: (Built, mpiskel_logicalize::LogicalTrace, LocalCalls),
    /// The stretches still whole that this program would cut, as the whole trace has them.
    more: Vec<(mpiskel_trace::stretch::Stretch, f64)>,
}

/// The program made from the trace of `o`, read anew, with the stretches `cuts` cut short
/// ([`by_stretches`]); with `look_further`, the stretches it would cut as well. `None` where the
/// cuts do not apply, or the program cannot be made or is not under `shortest`.
fn cut_round(
    o: &BuildOptions,
    opts: &ReadOptions,
    cuts: &[(mpiskel_trace::stretch::Stretch, f64)],
    shortest: f64,
    (app_time, source): (f64, &str),
    look_further: bool,
    observer: &dyn Observer,
) -> Result<Option<CutRound>> {
    if cuts.is_empty() {
        return Ok(None);
    }
    // What was freed before (the whole trace's logical form, or the program of the round
    // before) is given back first: the trace read again cannot use it.
    crate::memory::release();
    // Read again as for the first build, the trace has the same stretches.
    let (mut set, _) = {
        let _busy = observer.reading("reading again");
        TraceSet::open_folded(&o.trace, opts)?
    };
    let mut local = set.drop_local_calls();
    set.align_collectives();
    let again = set.stretches();
    if !cuts.iter().all(|(c, _)| again.contains(c)) {
        return Ok(None);
    }
    let cut = set.cut_stretches(cuts);
    if cut.iter().any(|c| c.kept_s <= 0.0) {
        return Ok(None);
    }
    local.add(&set.drop_local_calls());
    observer.line(&format!(
        "{} stretches between collectives of all ranks fold into no loop: cut short, to {} of \
         their {} calls",
        cut.len(),
        cut.iter().map(|c| c.kept_calls).sum::<u64>(),
        cut.iter().map(|c| c.calls).sum::<u64>()
    ));
    let after = set.stretches();
    let mut lt_cut = {
        let _busy = observer.busy("finding the topology and the process classes again");
        mpiskel_logicalize::logicalize_owned(set)
    };
    crate::memory::release();
    lt_cut.stretches = cut;
    let made = {
        let _busy = observer.busy("finding loops, cutting them and checking the program again");
        make(&mut lt_cut, app_time, source, o.target_time, !o.whole_compute)
    };
    let b = match made {
        Ok(b) if b.scaling.skeleton_estimate_s < shortest => b,
        Ok(_) => return Ok(None),
        Err(e) => {
            observer.line(&format!("the stretches are not cut: {e}"));
            return Ok(None);
        }
    };
    // The stretches this program would cut that are still whole, as the trace read anew has
    // them (their event ranges are those of the uncut trace).
    let more: Vec<_> = if look_further {
        mpiskel_cut::stretches::choose(&lt_cut, (&b.skeleton, &b.scaling), after, app_time)
            .into_iter()
            .filter(|(st, _)| cuts.iter().all(|(c, _)| c.index != st.index))
            .filter_map(|(st, keep)| {
                again.iter().find(|a| a.index == st.index).map(|a| (a.clone(), keep))
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Some(CutRound { made: (b, lt_cut, local), more }))
}

/// The skeleton name a trace gives by default: its folder's name (without `.trace`), in the
/// letters a C string and a file stem allow.
pub fn default_name(trace: &Path) -> String {
    let p = if trace.is_file() { trace.parent().unwrap_or(trace) } else { trace };
    let stem = p
        .canonicalize()
        .ok()
        .and_then(|c| c.file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "skeleton".into());
    let s: String = stem
        .trim_end_matches(".trace")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .collect();
    if s.is_empty() {
        "skeleton".into()
    } else {
        s
    }
}

/// Writes the folder under a temporary name beside `dir`, then renames it into place.
fn write_folder(dir: &Path, files: &[mpiskel_emit::c::File], doc: &str, force: bool) -> Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let base =
        dir.file_name().map_or_else(|| "skeleton".into(), |f| f.to_string_lossy().into_owned());
    let tmp = parent.join(format!(".{base}.tmp-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).ok();
    }
    // Interrupted, or failing, the half-written folder goes.
    harness::install_signal_handler()?;
    let guard = harness::TempPath::register(&tmp)?;
    std::fs::create_dir(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let write = || -> Result<()> {
        for f in files {
            let path = tmp.join(&f.path);
            if let Some(p) = path.parent() {
                std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
            }
            let mut out = std::fs::File::create(&path)
                .with_context(|| format!("writing {}", path.display()))?;
            out.write_all(f.contents.as_bytes())?;
            if f.executable {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
            }
        }
        std::fs::write(tmp.join("skeleton.json"), doc)
            .with_context(|| format!("writing {}", tmp.join("skeleton.json").display()))?;
        Ok(())
    };
    if let Err(e) = write() {
        std::fs::remove_dir_all(&tmp).ok();
        return Err(e);
    }
    if dir.exists() {
        if !force {
            std::fs::remove_dir_all(&tmp).ok();
            bail!("{} exists; use --force to replace it", dir.display());
        }
        let old = parent.join(format!(".{base}.old-{}", std::process::id()));
        std::fs::rename(dir, &old).with_context(|| format!("moving {} aside", dir.display()))?;
        std::fs::rename(&tmp, dir).with_context(|| format!("renaming to {}", dir.display()))?;
        std::fs::remove_dir_all(&old).ok();
    } else {
        std::fs::rename(&tmp, dir).with_context(|| format!("renaming to {}", dir.display()))?;
    }
    guard.keep();
    Ok(())
}
