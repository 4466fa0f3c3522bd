//! Scaling decisions on small synthetic programs (SimGrid time-independent traces written here,
//! no MPI needed): how many iterations of which loop run, when computation is cut instead, and
//! that what comes out is checked deadlock-free.

use std::path::{Path, PathBuf};

use mpiskel_cut::pipeline::make;
use mpiskel_program::Stmt;
use mpiskel_trace::{ReadOptions, TraceSet};

/// Writes a TI trace of `n` ranks whose rank `r` runs `body(r)` (action lines without the rank)
/// into `dir`; returns the index file.
fn ti_trace(dir: &Path, n: u32, body: impl Fn(u32) -> Vec<String>) -> PathBuf {
    mpiskel_trace::ti::write_actions(dir, n, body).unwrap()
}

/// A ring exchange of `bytes` after `flops` of computation, `iterations` times (each iteration
/// possibly with an inner loop of `inner` exchanges).
fn ring(n: u32, iterations: u32, inner: u32, flops: u64) -> impl Fn(u32) -> Vec<String> {
    move |r| {
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut v = vec!["compute 2000000".to_owned()];
        for _ in 0..iterations {
            for _ in 0..inner {
                v.push(format!("compute {flops}"));
                v.push(format!("irecv {prev} 0 512"));
                v.push(format!("isend {next} 0 512"));
                v.push("waitall".into());
            }
            v.push("compute 100000".into());
            v.push("allreduce 1 1".into());
        }
        v
    }
}

/// Builds the skeleton of the trace at `path` for `target_s` seconds of an application that ran
/// `app_s` seconds.
fn built(path: &Path, app_s: f64, target_s: f64) -> mpiskel_cut::pipeline::Built {
    built_for(path, app_s, Some(target_s))
}

/// The same for `target_s` seconds, or the default target.
fn built_for(path: &Path, app_s: f64, target_s: Option<f64>) -> mpiskel_cut::pipeline::Built {
    let set = TraceSet::open(path, &ReadOptions::default()).unwrap();
    let mut lt = mpiskel_logicalize::logicalize(&set);
    make(&mut lt, app_s, "given", target_s, true).unwrap()
}

#[test]
fn the_default_target_is_a_twentyfourth_for_a_main_loop_of_twenty_iterations_or_more() {
    let dir = tempfile::tempdir().unwrap();
    // 200 iterations of 1 ms after a 2 ms set-up.
    let path = ti_trace(dir.path(), 4, ring(4, 200, 1, 1_000_000));
    let b = built_for(&path, 0.2, None);
    let s = &b.scaling;
    assert_eq!(s.main_full, 200);
    assert!((s.target_s - 0.2 / 24.0).abs() < 1e-12, "{s:?}");
    assert!(s.main_run >= 4 && s.skeleton_estimate_s <= 0.2 / 20.0, "{s:?}");
    assert!(s.note.is_empty(), "{s:?}");
    // 19 iterations: a twelfth.
    let path = ti_trace(dir.path(), 4, ring(4, 19, 1, 10_000_000));
    let s = built_for(&path, 0.19, None).scaling;
    assert_eq!(s.main_full, 19);
    assert!((s.target_s - 0.19 / 12.0).abs() < 1e-12, "{s:?}");
}

/// Without a loop to run a sample of, computation alone is cut, and can be cut for a
/// twenty-fourth: a twelfth exactly left the parts that run whole (its communication) no room on
/// slower platforms (NPB EP W: 0.084–0.089 of SimGrid's replay).
#[test]
fn a_program_without_loops_is_cut_for_a_twentyfourth() {
    let dir = tempfile::tempdir().unwrap();
    // 100 ms of computation between two reductions, as EP does.
    let path = ti_trace(dir.path(), 4, |r| {
        vec![
            "compute 1000000".into(),
            "allreduce 8 1".into(),
            format!("compute {}", 100_000_000 + 1_000_000 * u64::from(r)),
            "allreduce 8 1".into(),
            "reduce 16 1".into(),
        ]
    });
    let s = built_for(&path, 0.105, None).scaling;
    assert!(s.main_full <= 1, "{s:?}");
    assert!((s.target_s - 0.105 / 24.0).abs() < 1e-12, "{s:?}");
    assert!(s.skeleton_estimate_s <= 0.105 / 20.0, "{s:?}");
    assert!(s.compute_removed_s > 0.09, "{s:?}");
}

#[test]
fn the_default_target_keeps_iterations_to_sample_as_far_as_a_twelfth_allows() {
    let dir = tempfile::tempdir().unwrap();
    // 100 iterations of 1 ms after a 4 ms set-up: at a twenty-fourth of the run, one iteration
    // would fit; at a twelfth, four.
    let path = ti_trace(dir.path(), 4, |r| {
        let mut v = ring(4, 100, 1, 1_000_000)(r);
        v[0] = "compute 4000000".into();
        v.insert(1, "bcast 64".into());
        v
    });
    let b = built_for(&path, 0.104, None);
    assert_eq!(b.scaling.main_full, 100);
    assert_eq!(b.scaling.main_run, 4, "{:?}", b.scaling);
    // A target given is a target: one iteration.
    let b = built_for(&path, 0.104, Some(0.104 / 24.0));
    assert_eq!(b.scaling.main_run, 1, "{:?}", b.scaling);
}

#[test]
fn a_main_loop_of_many_iterations_is_cut_to_the_target() {
    let dir = tempfile::tempdir().unwrap();
    // 200 iterations of 1 ms: about 0.2 s.
    let path = ti_trace(dir.path(), 4, ring(4, 200, 1, 1_000_000));
    let b = built(&path, 0.2, 0.2 / 12.0);
    let s = &b.scaling;
    assert_eq!(s.main_full, 200);
    assert!(s.main_run >= 1 && s.main_run < 200 / 10, "{s:?}");
    assert!(s.skeleton_estimate_s <= s.target_s * 1.1, "{s:?}");
    assert_eq!(b.check.ranks, 4);
    // Given a target longer than the application, nothing is cut.
    let b = built(&path, 0.2, 1.0);
    assert_eq!(b.scaling.main_run, 200);
    assert_eq!(b.scaling.compute_removed_s, 0.0);
}

/// [`ring`] whose compute blocks of `flops` take five times as long on one rank in about one
/// execution of twelve (a heavy tail, as NPB FT's).
fn spread_ring(n: u32, iterations: u32, flops: u64) -> impl Fn(u32) -> Vec<String> {
    move |r| {
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut v = vec!["compute 2000000".to_owned()];
        for i in 0..iterations {
            let slow = (r * 7 + i * 5) % 12 == 0;
            v.push(format!("compute {}", if slow { 5 * flops } else { flops }));
            v.push(format!("irecv {prev} 0 512"));
            v.push(format!("isend {next} 0 512"));
            v.push("waitall".into());
            v.push(format!("compute {}", if (r * 3 + i) % 12 == 5 { 5 * flops } else { flops }));
            v.push("allreduce 1 1".into());
        }
        v
    }
}

#[test]
fn a_main_loop_of_few_long_iterations_runs_as_many_as_its_spread_needs() {
    let dir = tempfile::tempdir().unwrap();
    // 6 iterations of 20 ms, every rank alike each time: one iteration stands for all six.
    let path = ti_trace(dir.path(), 4, ring(4, 6, 1, 20_000_000));
    let b = built(&path, 0.12, 0.01);
    let s = &b.scaling;
    assert_eq!((s.main_full, s.main_run, s.main_needed), (6, 1, 1), "{s:?}");
    assert!(s.compute_removed_s > 0.0, "{s:?}");
    // The same with a heavy tail: one iteration standing for six would weigh an odd draw six
    // times, so all six run and computation is cut instead.
    let dir = tempfile::tempdir().unwrap();
    let path = ti_trace(dir.path(), 4, spread_ring(4, 6, 10_000_000));
    let b = built(&path, 0.14, 0.01);
    let s = &b.scaling;
    assert_eq!((s.main_full, s.main_run, s.main_needed), (6, 6, 6), "{s:?}");
    assert!(s.compute_removed_s > 0.0, "{s:?}");
    assert!(s.skeleton_estimate_s < 0.14 * 0.75, "{s:?}");
}

#[test]
fn few_outer_iterations_of_a_long_inner_loop_cut_both_loops() {
    let dir = tempfile::tempdir().unwrap();
    // 3 iterations of 100 inner exchanges of 0.2 ms.
    let path = ti_trace(dir.path(), 4, ring(4, 3, 100, 200_000));
    let b = built(&path, 0.06, 0.005);
    let s = &b.scaling;
    assert_eq!((s.main_full, s.main_run), (3, 1), "{s:?}");
    let main = b.skeleton.classes[0].phases.iter().find(|p| p.name == "main_loop").unwrap();
    let inner = main.inner.expect("the inner loop is cut");
    assert_eq!(inner.full, 100);
    assert!(inner.run >= 8 && inner.run < 100, "{inner:?}");
}

#[test]
fn a_program_without_a_loop_loses_computation_only() {
    let dir = tempfile::tempdir().unwrap();
    // One long computation, then two reductions (as NPB EP).
    let path = ti_trace(dir.path(), 4, |_| {
        ["compute 100000000", "allreduce 1 1", "compute 1000", "allreduce 1 1"]
            .map(String::from)
            .to_vec()
    });
    let b = built(&path, 0.1, 0.1 / 12.0);
    let s = &b.scaling;
    assert!(b.skeleton.classes[0].phases.iter().all(|p| p.name != "main_loop"));
    assert!(s.compute_removed_s > 0.08, "{s:?}");
    assert!(s.skeleton_estimate_s < 0.1 / 4.0, "{s:?}");
}

#[test]
fn a_skeleton_over_its_target_says_which_parts_hold_it_up() {
    let dir = tempfile::tempdir().unwrap();
    let whole_compute = |path: &Path, app_s: f64| {
        let set = TraceSet::open(path, &ReadOptions::default()).unwrap();
        let mut lt = mpiskel_logicalize::logicalize(&set);
        make(&mut lt, app_s, "given", None, false).unwrap().scaling
    };
    // Six iterations of 2 × 5 ms with a heavy tail, every compute block run whole: a loop of so
    // few iterations whose durations spread so widely runs whole.
    let path = ti_trace(dir.path(), 4, spread_ring(4, 6, 5_000_000));
    let s = whole_compute(&path, 0.07);
    assert_eq!((s.main_run, s.main_full), (6, 6), "{s:?}");
    assert!(s.note.contains("the main loop runs all its 6 iterations"), "{s:?}");
    // A set-up of 40 ms before 100 iterations of 1 ms, run whole (no compute cut): the set-up
    // alone is over a twelfth.
    let path = ti_trace(dir.path(), 4, |r| {
        let mut v = ring(4, 100, 1, 1_000_000)(r);
        v[0] = "compute 40000000".into();
        v.insert(1, "bcast 64".into());
        v
    });
    let s = whole_compute(&path, 0.14);
    assert!(s.note.contains("the parts outside the main loop (set-up, finish) take"), "{s:?}");
    // Within its target: no note.
    let path = ti_trace(dir.path(), 4, ring(4, 200, 1, 1_000_000));
    assert!(built_for(&path, 0.2, None).scaling.note.is_empty());
}

/// A skeleton keeps every message at its recorded size: the share of the application's calls
/// and bytes it runs is counted (every loop at the skeleton's and the application's
/// iterations), and where that share is over the target the build says so, although its
/// estimate (computation only, for a trace without call times) is within it.
#[test]
fn the_communication_a_skeleton_keeps_is_counted_and_named_when_it_is_over_the_target() {
    let dir = tempfile::tempdir().unwrap();
    // Three iterations of 10 ms of computation and a 1 MB all-to-all, as NPB FT's: each
    // iteration's all-to-all runs whatever computation is cut.
    let few = ti_trace(dir.path(), 4, |_| {
        let mut v = vec!["compute 1000000".to_owned()];
        for _ in 0..3 {
            v.push("compute 10000000".into());
            v.push("alltoall 131072 131072".into());
        }
        v
    });
    let s = built_for(&few, 0.031, None).scaling;
    let t = s.traffic.clone().expect("traffic counted");
    assert_eq!((t.calls_app, t.bytes_app), (12.0, 12.0 * 131072.0 * 8.0), "{t:?}");
    assert!(t.calls_run >= 4.0 && t.bytes_share() >= 1.0 / 3.0, "{t:?}");
    assert!(s.skeleton_estimate_s <= s.target_s * 1.1, "{s:?}");
    assert!(s.note.contains("if communication takes most of it"), "{s:?}");
    assert!(s.note.contains("of the bytes they send"), "{s:?}");
    // Two hundred iterations of a ring exchange, 8 run: 4 % of the calls and bytes, within a
    // twenty-fourth; no note.
    let dir = tempfile::tempdir().unwrap();
    let long = ti_trace(dir.path(), 4, ring(4, 200, 1, 1_000_000));
    let s = built_for(&long, 0.2, None).scaling;
    let t = s.traffic.clone().expect("traffic counted");
    let run = s.main_run as f64 / 200.0;
    assert_eq!(t.calls_app, 4.0 * 200.0 * 4.0, "{t:?}");
    assert!((t.calls_share() - run).abs() < 0.01, "{t:?} vs {run}");
    assert!(s.note.is_empty(), "{s:?}");
}

/// A block after which point-to-point calls pass a value along and then every rank meets in a
/// collective (NPB IS's verification: each rank sorts its own keys, hands one to its neighbour,
/// then all reduce) is cut to a short part on every rank as one right before the collective is:
/// the collective waits for the rank that computed longest either way.
#[test]
fn a_block_before_a_hand_off_and_a_reduction_is_cut_on_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4;
    let path = ti_trace(dir.path(), n, move |r| {
        let mut v = ring(n, 100, 1, 1_000_000)(r);
        let (left, right) = ((r + n - 1) % n, (r + 1) % n);
        v.push(format!("compute {}", 2_000_000 * u64::from(r + 1)));
        v.push(format!("irecv {left} 3 4"));
        v.push(format!("send {right} 3 4"));
        v.push(format!("wait {left} {r} 3"));
        v.push("reduce 1 1 0".into());
        v
    });
    let b = built_for(&path, 0.12, None);
    let finish = b.skeleton.classes.iter().flat_map(|c| &c.phases).filter(|p| p.name == "finish");
    let mut kept = 0;
    for p in finish {
        for st in &p.body {
            if let mpiskel_program::Stmt::Compute { keep_only: true, seconds, .. } = st {
                assert!(*seconds >= 1e-3, "the long block is the one cut: {seconds}");
                kept += 1;
            }
        }
    }
    assert!(kept >= 1, "the block before the hand-off is cut on every rank: {:?}", b.scaling);
}

/// A set-up loop of two exchanges of whole faces (large messages), then a main loop of 50
/// iterations of small ones, as NPB LU's right-hand side before and after its warm-up: with the
/// main loop at one iteration the set-up's bytes are over the target, and the set-up loop runs
/// once (priced as its two), while the computation cut is made as before.
#[test]
fn a_set_up_loop_that_holds_the_bytes_runs_once_when_communication_is_over_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4;
    let path = ti_trace(dir.path(), n, |r| {
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut v = vec!["compute 1000000".to_owned()];
        for _ in 0..2 {
            v.push("compute 80000".into());
            v.push(format!("irecv {prev} 0 4000000"));
            v.push(format!("isend {next} 0 4000000"));
            v.push("waitall".into());
        }
        v.push("barrier".into());
        v.push("allreduce 1 1".into());
        for _ in 0..50 {
            v.push("compute 200000".into());
            v.push(format!("irecv {prev} 0 512"));
            v.push(format!("isend {next} 0 512"));
            v.push("waitall".into());
            v.push("allreduce 1 1".into());
        }
        v
    });
    let b = built_for(&path, 0.0115, None);
    // Every class's loops other than the main one, as (name, run, full).
    let loops: Vec<(&str, u64, u64)> = b
        .skeleton
        .classes
        .iter()
        .flat_map(|c| &c.phases)
        .filter(|p| p.is_loop && p.name != "main_loop")
        .map(|p| (p.name.as_str(), p.run, p.full))
        .collect();
    assert!(
        !loops.is_empty() && loops.iter().all(|&(_, run, full)| run == 1 && full == 2),
        "{loops:?} {}",
        b.scaling.note
    );
    let t = b.scaling.traffic.as_ref().unwrap();
    // Both set-up exchanges would be 8 MB of the 8.05 MB the application sends per rank.
    assert!(t.bytes_share() < 0.6, "{t:?}");
    // The program that runs was checked: every rank runs to completion.
    assert_eq!(b.check.ranks, n as usize);
}

/// An open chain whose every step is an inner loop of three exchanges after 30 µs of
/// computation, then a report to rank 0 (so rank 0's program differs from the others'):
/// blocks under the part a cut block keeps, inside an inner loop, at places whose index differs
/// between the classes. Once the main loop runs the fewest iterations it can, they are what is
/// left to cut, and they are cut on every rank alike.
#[test]
fn short_blocks_in_inner_loops_are_cut_alike_in_every_class_when_nothing_else_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4;
    let chain = |r: u32| {
        let mut v = vec!["compute 20000".to_owned(), "allreduce 1 1".to_owned()];
        for _ in 0..6 {
            for _ in 0..3 {
                v.push("compute 30000".into());
                if r > 0 {
                    v.push(format!("irecv {} 0 64", r - 1));
                }
                if r + 1 < n {
                    v.push(format!("isend {} 0 64", r + 1));
                }
                v.push("waitall".into());
            }
            // Rank 0 collects a report from every other rank.
            if r == 0 {
                v.extend((1..n).map(|q| format!("irecv {q} 1 8")));
            } else {
                v.push("isend 0 1 8".into());
            }
            v.push("waitall".into());
            v.push("allreduce 1 1".into());
        }
        v
    };
    let path = ti_trace(dir.path(), n, chain);
    // 20 µs of set-up and 6 × 3 × 30 µs of steps: one step is a sixth of the run, the target a
    // twelfth.
    let b = built(&path, 0.00056, 0.00056 / 12.0);
    let s = &b.scaling;
    assert_eq!((s.main_full, s.main_run), (6, 1), "{s:?}");
    assert!(b.skeleton.classes.len() > 1, "rank 0 is a class of its own");
    assert!(s.skeleton_estimate_s <= s.target_s * (1.0 + 1e-9), "{s:?}");
    // Every class loses the same seconds from its inner loop's block.
    let inner_removed: Vec<f64> = b
        .skeleton
        .classes
        .iter()
        .map(|c| {
            let main = c.phases.iter().find(|p| p.name == "main_loop").expect("a main loop");
            let mut removed = Vec::new();
            fn walk(body: &[Stmt], depth: usize, out: &mut Vec<f64>) {
                for st in body {
                    match st {
                        Stmt::Compute { removed, .. } if depth > 0 => out.push(*removed),
                        Stmt::Loop { body, .. } => walk(body, depth + 1, out),
                        _ => {}
                    }
                }
            }
            walk(&main.body, 0, &mut removed);
            assert_eq!(removed.len(), 1, "one block in the inner loop: {removed:?}");
            removed[0]
        })
        .collect();
    assert!(inner_removed[0] > 0.0 && inner_removed[0] < 30e-6, "{inner_removed:?} {s:?}");
    assert!(inner_removed.iter().all(|&r| r == inner_removed[0]), "{inner_removed:?}");
    assert_eq!(b.check.ranks, n as usize);
}

#[test]
fn the_part_a_cut_block_keeps_to_be_timed_is_cut_too_when_nothing_else_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4;
    // Six steps of 200–208 µs of computation and a ring exchange: alike enough that one step
    // stands for six, and each block cut to keep the 50 µs a timer needs.
    let path = ti_trace(dir.path(), n, |r| {
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut v = vec!["compute 20000".to_owned()];
        for i in 0..6 {
            v.push(format!("compute {}", 200_000 + ((r * 7 + i * 3) % 5) * 2_000));
            v.push(format!("irecv {prev} 0 512"));
            v.push(format!("isend {next} 0 512"));
            v.push("waitall".into());
            v.push("allreduce 1 1".into());
        }
        v
    });
    let b = built(&path, 0.001248, 0.00001);
    let s = &b.scaling;
    assert_eq!((s.main_full, s.main_run), (6, 1), "{s:?}");
    let main = b.skeleton.classes[0].phases.iter().find(|p| p.name == "main_loop").unwrap();
    let removed: Vec<f64> = main
        .body
        .iter()
        .filter_map(|st| match st {
            Stmt::Compute { removed, .. } => Some(*removed),
            _ => None,
        })
        .collect();
    // Every rank skips the same seconds: all but 5 % of the shortest duration the block's
    // distribution holds for the lightest rank (about 200 µs), less than any execution lasts,
    // and more than the cut that keeps 50 µs to time.
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0] > 200e-6 - 50e-6 + 1e-6, "{removed:?} {s:?}");
    assert!(removed[0] < 200e-6, "{removed:?}");
    assert!(s.skeleton_estimate_s < 40e-6, "{s:?}");
    assert_eq!(b.check.ranks, n as usize);
}

/// A time-step loop of `steps` steps whose step `i` rebuilds (a longer step with an allgather and
/// larger messages) where `rebuild(i)`, after `setup_flops` of set-up.
fn time_steps(
    n: u32,
    steps: u32,
    setup_flops: u64,
    rebuild: impl Fn(u32) -> bool + Copy,
) -> impl Fn(u32) -> Vec<String> {
    move |r| {
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut v = vec![format!("compute {setup_flops}"), "bcast 64".to_owned()];
        for i in 0..steps {
            if rebuild(i) {
                v.push("compute 1500000".into());
                v.push("allgather 16 16".into());
                v.push(format!("irecv {prev} 1 4096"));
                v.push(format!("isend {next} 1 4096"));
                v.push("waitall".into());
            }
            v.push("compute 1000000".into());
            v.push(format!("irecv {prev} 0 512"));
            v.push(format!("isend {next} 0 512"));
            v.push("waitall".into());
            v.push("allreduce 8 1".into());
        }
        v
    }
}

/// The steps of a time-step loop stand for all the steps of their kind: with the default target,
/// each kind runs at least four of its steps as far as a twelfth of the run allows, so that one
/// step's recorded durations are not the whole sample of a kind; the choice of the fold is the
/// one the target alone makes, and a target given is a target.
#[test]
fn each_kind_of_time_step_runs_several_steps_as_far_as_a_twelfth_allows() {
    let dir = tempfile::tempdir().unwrap();
    // 200 steps of 1 ms, one in five or so rebuilding (2.5 ms) at steps no period describes,
    // after 5 ms of set-up: a twenty-fourth of the run leaves room for three steps, a twelfth
    // for four of each kind.
    let rebuild = |i: u32| (i.wrapping_mul(2_654_435_761) >> 11) % 5 == 0;
    let path = ti_trace(dir.path(), 4, time_steps(4, 200, 5_000_000, rebuild));
    let rebuilds = (0..200).filter(|&i| rebuild(i)).count() as f64;
    let app_s = 0.005 + 0.2 + 0.0015 * rebuilds;
    let b = built_for(&path, app_s, None);
    let s = &b.scaling;
    let main = b.skeleton.classes[0].main_loop().unwrap();
    let notation = &b.skeleton.classes[0].notation;
    let steps = main.steps.as_ref().unwrap_or_else(|| panic!("not folded into steps: {notation}"));
    let mut per_kind = std::collections::BTreeMap::<u32, (usize, usize)>::new();
    for &k in &steps.kinds {
        per_kind.entry(k).or_default().0 += 1;
    }
    for &i in &steps.run {
        per_kind.entry(steps.kinds[i as usize]).or_default().1 += 1;
    }
    assert!(per_kind.len() >= 2, "{per_kind:?}");
    for (kind, &(all, ran)) in &per_kind {
        assert!(ran >= all.min(4), "kind {kind}: {ran} of its {all} steps run ({per_kind:?})");
    }
    assert!(s.skeleton_estimate_s <= app_s / 12.0 * (1.0 + 1e-9), "{s:?}");
    assert!(s.skeleton_estimate_s > s.target_s, "{s:?}");
    assert!(s.note.contains("each kind of step at least 4 times"), "{}", s.note);
    // A target given is a target: fewer steps, each kind at least once.
    let b = built_for(&path, app_s, Some(app_s / 24.0));
    let main = b.skeleton.classes[0].main_loop().unwrap();
    let given = main.steps.as_ref().unwrap();
    assert!(given.run.len() < steps.run.len(), "{:?}", b.scaling);
    let kinds: std::collections::BTreeSet<u32> =
        given.run.iter().map(|&i| given.kinds[i as usize]).collect();
    assert_eq!(kinds.len(), per_kind.len(), "{:?}", b.scaling);
    assert!(b.scaling.skeleton_estimate_s <= b.scaling.target_s * (1.0 + 1e-9), "{:?}", b.scaling);
}

/// The trace at `path` as if each of its `MPI_Waitall`s had waited `wait_ns` (every later call
/// of the rank that much later): a trace with call times, as a native one.
fn waiting(path: &Path, wait_ns: u64) -> TraceSet {
    let mut set = TraceSet::open(path, &ReadOptions::default()).unwrap();
    for rt in &mut set.ranks {
        let mut shift = 0;
        for e in &mut rt.events {
            e.enter_ns += shift;
            e.exit_ns += shift;
            if e.op == mpiskel_trace::Op::Waitall {
                e.exit_ns += wait_ns;
                shift += wait_ns;
            }
        }
    }
    set
}

/// Where the trace recorded how long calls took, the recorded time is split by wall time: a
/// main loop that mostly waits stands for most of the run, and runs as many iterations as the
/// target holds (split by computation, the set-up's 10 ms of computation against the loop's
/// 50 ms priced the rest of the program at a sixth of the run, over the target, and the loop ran
/// the fewest iterations it could). A trace without call times is split by computation, as
/// Xu & Subhlok (2008, §4) do.
#[test]
fn the_recorded_time_is_split_by_wall_time_where_the_trace_has_call_times() {
    let dir = tempfile::tempdir().unwrap();
    // A 10 ms set-up, then 1,000 iterations of 50 µs of computation and 500 µs of waiting.
    let path = ti_trace(dir.path(), 4, |r| {
        let mut v = ring(4, 1000, 1, 50_000)(r);
        v[0] = "compute 10000000".into();
        v.insert(1, "bcast 64".into());
        v.retain(|a| a != "compute 100000");
        v
    });
    let app_s = 0.56;
    let by_compute = {
        let mut lt = mpiskel_logicalize::logicalize(
            &TraceSet::open(&path, &ReadOptions::default()).unwrap(),
        );
        assert!(!lt.call_times);
        make(&mut lt, app_s, "given", None, true).unwrap().scaling
    };
    let by_time = {
        let mut lt = mpiskel_logicalize::logicalize(&waiting(&path, 500_000));
        assert!(lt.call_times);
        make(&mut lt, app_s, "given", None, true).unwrap().scaling
    };
    assert_eq!((by_compute.main_full, by_time.main_full), (1000, 1000));
    assert!((by_compute.main_share - 50.0 / 60.0).abs() < 0.01, "{by_compute:?}");
    assert!((by_time.main_share - 550.0 / 560.0).abs() < 0.01, "{by_time:?}");
    // (23.3 ms − 10 ms) / 0.55 ms: 24 iterations.
    assert!((20..=26).contains(&by_time.main_run), "{by_time:?}");
    assert!(by_compute.main_run <= 4, "{by_compute:?}");
    assert!(by_time.skeleton_estimate_s <= by_time.target_s * 1.1, "{by_time:?}");
}

/// A set-up loop of many short iterations runs whole where the other loops are cut: one
/// iteration of it, timed and priced at all of them, would count whatever delays that one
/// iteration (a rank descheduled for a scheduler tick) once per iteration left out, for a saving
/// within the slack of the target. A set-up loop of long iterations is still cut.
#[test]
fn a_set_up_loop_of_many_short_iterations_runs_whole_where_the_other_loops_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4;
    let path = ti_trace(dir.path(), n, |r| {
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut v = vec!["compute 1000000".to_owned()];
        // 80 iterations of 1 µs of computation.
        for _ in 0..80 {
            v.push("compute 1000".into());
            v.push(format!("irecv {prev} 0 512"));
            v.push(format!("isend {next} 0 512"));
            v.push("waitall".into());
        }
        v.push("barrier".into());
        // 20 iterations of 5 ms: 100 ms in all.
        for _ in 0..20 {
            v.push("compute 5000000".into());
            v.push(format!("irecv {prev} 0 1024"));
            v.push(format!("isend {next} 0 1024"));
            v.push("waitall".into());
        }
        v.push("barrier".into());
        // The main loop: 100 iterations of 4 ms.
        for _ in 0..100 {
            v.push("compute 4000000".into());
            v.push(format!("irecv {prev} 0 2048"));
            v.push(format!("isend {next} 0 2048"));
            v.push("waitall".into());
            v.push("allreduce 1 1".into());
        }
        v
    });
    let b = built_for(&path, 0.502, None);
    let loops: Vec<(u64, u64)> = b
        .skeleton
        .classes
        .iter()
        .flat_map(|c| &c.phases)
        .filter(|p| p.is_loop && p.name != "main_loop")
        .map(|p| (p.run, p.full))
        .collect();
    assert!(loops.contains(&(80, 80)), "{loops:?} {}", b.scaling.note);
    assert!(loops.iter().any(|&(run, full)| full == 20 && run <= 2), "{loops:?}");
    assert!(!loops.iter().any(|&(run, full)| full == 80 && run < 80), "{loops:?}");
    assert_eq!(b.check.ranks, n as usize);
}

/// The floor of a skeleton's communication asked again after loops are cut, from the counts of
/// its phases made once (`traffic::FloorOfRuns`, what the cut of loops for traffic asks after
/// each cut tried), is the floor counted anew.
#[test]
fn the_floor_of_communication_from_counts_made_once_is_the_floor_counted_anew() {
    let dir = tempfile::tempdir().unwrap();
    // Set-up loops of 30 exchanges before a main loop of 40.
    let n = 4;
    let body = move |r: u32| {
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut v = vec!["compute 2000000".to_owned()];
        for size in [64, 4096, 512] {
            for _ in 0..30 {
                v.push("compute 1000".into());
                v.push(format!("irecv {prev} 0 {size}"));
                v.push(format!("isend {next} 0 {size}"));
                v.push("waitall".into());
            }
            v.push("barrier".into());
        }
        v.extend(ring(n, 40, 1, 100_000)(r));
        v
    };
    let path = ti_trace(dir.path(), n, body);
    let b = built_for(&path, 1.0, None);
    let mut skel = b.skeleton.clone();
    let counts = mpiskel_cut::traffic::FloorOfRuns::new(&skel);
    assert_eq!(counts.floor(&skel), mpiskel_cut::traffic::traffic(&skel).floor());
    let mut cut = 0;
    for c in &mut skel.classes {
        for p in c.phases.iter_mut().filter(|p| p.is_loop && p.full > 2) {
            p.run = if p.run == p.full { 2 } else { p.full };
            cut += 1;
        }
    }
    assert!(cut >= 3, "{}", b.skeleton.classes[0].notation);
    let anew = mpiskel_cut::traffic::traffic(&skel).floor();
    assert!((counts.floor(&skel) - anew).abs() <= 1e-12 * anew.max(1.0), "{anew}");
    assert_ne!(anew, mpiskel_cut::traffic::traffic(&b.skeleton).floor());
}

/// A refused run of loop cuts names as suspects the cuts that change what some rank ran before
/// the check stopped, and a lone suspect is tried alone: two classes, one of which makes a loop
/// (`b`) that the other does not, before two loops both make (`a`, `c`). A check that refuses
/// `b` cut stops rank 0 in the phase after it and rank 1 in its first phase: only `b` changed
/// what they ran, so it is tried alone and refused, and `a` and `c` pass together: three
/// checks. A check that says nothing of where it stopped halves the run instead (four); one
/// that named `a` or `c` a suspect too would as well.
#[test]
fn a_cut_that_changes_nothing_a_rank_ran_before_the_check_stopped_is_not_a_suspect() {
    use mpiskel_cut::cut_runs::Stopped;
    use mpiskel_program::{ClassProgram, Phase, Skeleton};
    let dir = tempfile::tempdir().unwrap();
    let base = built(&ti_trace(dir.path(), 2, ring(2, 20, 1, 1_000_000)), 1.0, 0.1).skeleton;
    let phase = |name: &str, full: u64| Phase {
        name: name.into(),
        full,
        run: full,
        is_loop: full > 1,
        body: Vec::new(),
        inner: None,
        steps: None,
        skipped: None,
        ..base.classes[0].phases[0].clone()
    };
    let mut skel = base.clone();
    skel.class_of_rank = vec![0, 1];
    skel.classes = vec![
        ClassProgram {
            ranks: vec![0],
            phases: vec![phase("b", 5), phase("a", 4), phase("c", 3)],
            notation: String::new(),
        },
        ClassProgram {
            ranks: vec![1],
            phases: vec![phase("step", 1), phase("a", 4), phase("c", 3)],
            notation: String::new(),
        },
    ];
    let cuts: Vec<(String, u64, f64)> =
        [("b", 4, 3.0), ("a", 3, 2.0), ("c", 2, 1.0)].map(|(n, d, s)| (n.into(), d, s)).into();
    let cut_b = |s: &Skeleton| s.classes[0].phases[0].run < s.classes[0].phases[0].full;
    let search = |says_where: bool| {
        let (mut skel, mut checks) = (skel.clone(), 0);
        let made = mpiskel_cut::scale::cut_loops_in_runs(
            &mut skel,
            0,
            &cuts,
            &|_, _| true,
            &mut |s| {
                checks += 1;
                let stopped: Stopped = vec![Some(1), Some(0)];
                if cut_b(s) {
                    Err(says_where.then_some(stopped))
                } else {
                    Ok(())
                }
            },
            usize::MAX,
        );
        let runs: Vec<Vec<u64>> =
            skel.classes.iter().map(|c| c.phases.iter().map(|p| p.run).collect()).collect();
        (made.kept, runs, checks)
    };
    let (kept, runs, checks) = search(true);
    assert_eq!(kept, 2);
    assert_eq!(runs, vec![vec![5, 1, 1], vec![1, 1, 1]]);
    assert_eq!(checks, 3);
    let (kept, runs_halved, checks) = search(false);
    assert_eq!((kept, runs_halved), (2, runs));
    assert_eq!(checks, 4);
}

/// Where the trace holds each gap's processor time and the ranks spent part of a gap off the
/// processor (more ranks than cores), the computation the cut takes out of a block takes that
/// time with it: the skeleton's estimate falls by the wall time removed, as for the same program
/// traced on cores of its own, while the computation not run is counted in processor seconds.
/// (Counted by its processor time alone, the removed block left its descheduled half in the
/// estimate: GROMACS's set-up on 4 ranks and 2 cores, an estimate twice the skeleton's run.)
#[test]
fn computation_cut_out_takes_the_time_its_ranks_spent_off_the_processor_with_it() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 0 reads the input for 200 ms, the others 10 ms, before a broadcast; then 200
    // iterations of a ring exchange after 1 ms of computation.
    let path = ti_trace(dir.path(), 4, |r| {
        let mut v = ring(4, 200, 1, 1_000_000)(r);
        v[0] = if r == 0 { "compute 200000000" } else { "compute 10000000" }.into();
        v.insert(1, "bcast 64".into());
        v
    });
    let own = waiting(&path, 100_000);
    // The same run with every gap half on the processor, half off it.
    let mut shared = own.clone();
    for rt in &mut shared.ranks {
        rt.info.has_cpu_time = true;
        for e in &mut rt.events {
            e.gap_cpu_ns = Some(e.gap_ns / 2);
        }
    }
    let app_s = own.app_time_s();
    let scaling = |set: &TraceSet| {
        let mut lt = mpiskel_logicalize::logicalize(set);
        assert!(lt.call_times);
        make(&mut lt, app_s, "given", None, true).unwrap().scaling
    };
    let (a, b) = (scaling(&own), scaling(&shared));
    assert_eq!((a.main_full, a.main_run), (b.main_full, b.main_run), "{a:?}\n{b:?}");
    // Rank 0's block runs a short part: 190 ms of computation, 95 ms of processor time.
    assert!(a.compute_removed_s > 0.15, "{a:?}");
    assert!(
        (b.compute_removed_s - a.compute_removed_s / 2.0).abs() < 0.01 * a.compute_removed_s,
        "{a:?}\n{b:?}"
    );
    let (ea, eb) = (a.skeleton_estimate_s, b.skeleton_estimate_s);
    assert!((eb - ea).abs() < 0.02 * ea, "estimates {ea} (own cores) and {eb} (shared)");
}

/// Two ranks whose set-ups differ before the same barrier (rank 0 sends twelve messages in a
/// loop and then takes one answer; rank 1 answers after the fifth), so that their phases do
/// not correspond by name, then a main loop of many iterations that runs one: the long block
/// each computes before the barrier that ends the set-up is cut alike on both, by the seconds
/// the shorter of the two can lose.
#[test]
fn blocks_before_the_same_collective_of_all_ranks_are_cut_where_the_classes_differ_around_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = ti_trace(dir.path(), 2, |r| {
        let mut v = Vec::new();
        if r == 0 {
            for _ in 0..12 {
                v.push("compute 10000".to_owned());
                v.push("send 1 0 512".into());
            }
            v.push("recv 1 1 8".into());
        } else {
            for i in 0..12 {
                v.push("compute 10000".to_owned());
                v.push("recv 0 0 512".into());
                if i == 4 {
                    v.push("send 0 1 8".into());
                }
            }
        }
        // The set-up's long block, a tenth longer on rank 1.
        v.push(format!("compute {}", 20_000_000_000 + 2_000_000_000 * u64::from(r)));
        v.push("barrier".into());
        for _ in 0..100 {
            v.push("compute 10000000".into());
            v.push(format!("sendrecv 64 {} 64 {}", 1 - r, 1 - r));
            v.push("allreduce 1 1".into());
        }
        v
    });
    let b = built_for(&path, 23.5, None);
    // Per class: the long block's recorded and removed seconds, and its phase's name.
    let long: Vec<(f64, f64, String)> = b
        .skeleton
        .classes
        .iter()
        .map(|c| {
            c.phases
                .iter()
                .flat_map(|p| p.body.iter().map(move |s| (p, s)))
                .find_map(|(p, s)| match s {
                    Stmt::Compute { seconds, removed, .. } if *seconds > 0.1 => {
                        Some((*seconds, *removed, p.name.clone()))
                    }
                    _ => None,
                })
                .unwrap()
        })
        .collect();
    assert_eq!(long.len(), 2, "{long:?}");
    assert_ne!(long[0].2, long[1].2, "the classes' phases differ: {long:?}");
    assert!(long[0].1 > 0.5 * long[0].0, "the block is cut: {long:?} {:?}", b.scaling);
    assert_eq!(long[0].1, long[1].1, "by the same seconds on both: {long:?}");
    assert!(long[0].1 < long[0].0.min(long[1].0), "{long:?}");
}
