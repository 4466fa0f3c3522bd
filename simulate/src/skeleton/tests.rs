use super::*;
use crate::engine::{simulate_marked, Options};
use crate::platform::{ClusterSpec, Platform};
use mpiskel_program::instantiate;
use mpiskel_program::Stmt;

/// Two ranks exchanging `bytes` in a ring every iteration of a main loop of 100 that the
/// skeleton cuts to `run`, each iteration computing 1 ms first.
fn ring(run: u64, bytes: u64) -> Skeleton {
    let doc = serde_json::json!({
        "n_ranks": 2, "topology": "ring", "layout": {"type": "table", "neighbours": [[1], [0]]},
        "directions": [{"name": "NEXT", "ident": "NEXT", "offset": [1], "tag": 1, "recv_tag": 1}],
        "comms": [{"type": "world"}],
        "classes": [{"ranks": [0, 1], "notation": "(3)^100", "phases": [{
            "name": "main_loop", "full": 100, "run": run, "is_loop": true,
            "origin": "test", "compute_s": 0.001, "calls": 3,
            "body": [
                {"stmt": "compute", "seconds": 0.001, "dist": null},
                {"stmt": "call", "call": {"call": "recv", "op": "Irecv", "from": {"dir": 0},
                    "tag": 1, "bytes": bytes, "count": bytes, "offset": 0,
                    "slot": {"base": 0, "ring": 1, "depth": 0}}},
                {"stmt": "call", "call": {"call": "send", "op": "Send", "to": {"dir": 0},
                    "tag": 1, "bytes": bytes, "slot": null}},
                {"stmt": "call", "call": {"call": "complete", "how": "all", "slots": [0],
                    "traced": "Wait"}}
            ]}]}],
        "class_of_rank": [0, 0], "grid_coords": [], "n_slots": 1, "send_bytes": bytes,
        "recv_bytes": bytes, "matching": {"global_pairs": 2, "balanced": 0,
            "local_sends": 0, "local_recvs": 0, "local_policy": ""}
    });
    serde_json::from_value(doc).unwrap()
}

fn cluster() -> Platform {
    Platform::cluster(&ClusterSpec {
        name: "t".into(),
        host_names: vec!["a".into(), "b".into()],
        speed: 1e9,
        cores: 1,
        bandwidth: 1e8,
        latency: 1e-5,
        split_duplex: true,
        fatpipe: false,
        backbone: None,
        loopback: (1e11, 1e-7),
    })
}

fn predict(skel: &Skeleton, whole: bool) -> (Priced, Lowered) {
    priced(lower(skel, 0, whole))
}

fn priced(lowered: Lowered) -> (Priced, Lowered) {
    let opts = Options { fast_forward: false, ..Options::default() };
    let (sim, times) =
        simulate_marked(&lowered.traces, &cluster(), &[0, 1], &opts, &lowered.marks, None).unwrap();
    assert!(sim.stuck.is_empty());
    let ends: Vec<f64> = sim.ranks.iter().map(|r| r.end_s).collect();
    (price(&lowered, &times, &ends), lowered)
}

#[test]
fn a_cut_loop_runs_a_few_iterations_and_prices_the_rest_at_their_pace() {
    let skel = ring(2, 100_000);
    let (whole, all) = predict(&skel, true);
    assert_eq!(all.traces[0].events.len(), 300);
    let (quick, cut) = predict(&skel, false);
    // Two iterations run by the skeleton, and as many more simulated to settle and set a
    // pace: the first few and the last.
    let main = &cut.phases[0][0];
    let expected: Vec<u64> = (0..2 + WARM + WINDOW).chain([99]).collect();
    assert_eq!(main.simulated.as_ref().unwrap().0, expected);
    assert_eq!(cut.traces[0].events.len(), 3 * (2 + WARM + WINDOW + 1) as usize);
    // Each iteration: 1 ms of computation, then 100 kB each way at 100 MB/s.
    assert!(whole.predicted_s > 0.1 + 100.0 * 0.001, "{}", whole.predicted_s);
    let r = quick.predicted_s / whole.predicted_s - 1.0;
    assert!(
        r.abs() < 1e-3,
        "{} against every iteration's {}",
        quick.predicted_s,
        whole.predicted_s
    );
    assert_eq!(quick.phases[0].full, 100);
    assert_eq!(quick.phases[0].simulated, 2 + WARM + WINDOW + 1);
}

#[test]
fn a_skeleton_that_runs_more_iterations_than_the_window_simulates_them_all() {
    let (_, cut) = predict(&ring(40, 8), false);
    let (positions, _) = cut.phases[0][0].simulated.clone().unwrap();
    assert_eq!(positions.len(), 40 + (WARM + WINDOW + 1) as usize);
    assert_eq!(positions.last(), Some(&99));
    let (_, whole) = predict(&ring(100, 8), false);
    assert!(whole.phases[0][0].simulated.is_none());
}

#[test]
fn loops_cut_alike_that_differ_between_classes_leave_out_as_many_iterations() {
    // Rank 0 exchanges in a loop of 3 and then 4 times more; rank 1 in a loop of 7. The
    // skeleton cut both by 2 (1 and 5 iterations run: 5 exchanges each). Simulated, each
    // loop must leave out as many iterations as well, or rank 1 waits for an exchange that
    // rank 0 does not make (6 of its 7 iterations against all 3 of rank 0's).
    let mut skel = ring(1, 8);
    let mut second = skel.classes[0].clone();
    skel.classes[0].phases[0].full = 3;
    let body = skel.classes[0].phases[0].body.clone();
    let mut straight = skel.classes[0].phases[0].clone();
    straight.name = "step_2".into();
    (straight.full, straight.run, straight.is_loop) = (1, 1, false);
    straight.body = body.iter().cycle().take(4 * body.len()).cloned().collect();
    skel.classes[0].phases.push(straight);
    (second.phases[0].full, second.phases[0].run) = (7, 5);
    second.ranks = vec![1];
    skel.classes[0].ranks = vec![0];
    skel.classes.push(second);
    skel.class_of_rank = vec![0, 1];
    let (_, cut) = predict(&skel, false);
    let exchanges =
        |r: usize| cut.traces[r].events.iter().filter(|e| e.op == mpiskel_trace::Op::Send).count();
    assert_eq!((exchanges(0), exchanges(1)), (7, 7));
}

#[test]
fn as_it_runs_a_skeleton_makes_only_its_own_iterations_and_computes_what_it_keeps() {
    let mut skel = ring(2, 100_000);
    // Each iteration's block: 1 ms, of which 0.6 ms are cut.
    let main = &mut skel.classes[0].phases[0];
    if let Some(Stmt::Compute { removed, .. }) = main.body.first_mut() {
        *removed = 0.0006;
    }
    let (own, lowered) = priced(lower_as_run(&skel, 0, 1.0));
    assert_eq!(lowered.traces[0].events.len(), 3 * 2);
    assert_eq!((own.phases[0].full, own.phases[0].simulated), (2, 2));
    // Two of the application's hundred iterations, each 0.6 ms of computation short.
    let (app, _) = predict(&skel, false);
    let expected = app.predicted_s * 2.0 / 100.0 - 2.0 * 0.0006;
    let r = own.predicted_s / expected - 1.0;
    assert!(r.abs() < 0.02, "{} against {expected}", own.predicted_s);
    // A shrunk fixed block runs that share of what it keeps.
    let (shrunk, _) = priced(lower_as_run(&skel, 0, 0.5));
    let d = own.predicted_s - shrunk.predicted_s;
    assert!((d - 2.0 * 0.0002).abs() < 1e-6, "{d}");
}

/// Simulated marks of `lowered` on the test cluster.
fn marks(lowered: &Lowered) -> (Vec<Vec<f64>>, Vec<f64>) {
    let opts = Options { fast_forward: false, ..Options::default() };
    let (sim, times) =
        simulate_marked(&lowered.traces, &cluster(), &[0, 1], &opts, &lowered.marks, None).unwrap();
    (times, sim.ranks.iter().map(|r| r.end_s).collect())
}

/// The share by which a skeleton's prediction grows when its cut blocks wait for messages
/// their computation hid: none where the block comes before the exchange, about the
/// message's transfer less what the block keeps where the block runs while it arrives.
#[test]
fn a_cut_block_that_hid_a_message_makes_the_prediction_wait_for_it() {
    let exposure_of = |skel: &Skeleton| {
        let (cut, whole) = (lower_as_run(skel, 0, 1.0), lower_as_run_uncut(skel, 0));
        let ((ct, ce), (wt, we)) = (marks(&cut), marks(&whole));
        // The computation not run is counted per phase, scaled to the application's.
        assert!((cut.phases[0][0].removed_s - 4.0 * 0.0008).abs() < 1e-9);
        assert_eq!(cut.phases[0][0].scale, 25.0);
        assert_eq!(whole.phases[0][0].removed_s, 0.0);
        exposure((&cut, &ct, &ce), (&whole, &wt, &we))
    };
    // 50 kB at 100 MB/s: 0.5 ms on the wire, sent eagerly; 1 ms blocks, 0.8 ms of them cut.
    let mut skel = ring(4, 50_000);
    if let Some(Stmt::Compute { removed, .. }) = skel.classes[0].phases[0].body.first_mut() {
        *removed = 0.0008;
    }
    let before = exposure_of(&skel);
    assert!(before.abs() < 0.005, "computing before the exchange hides nothing: {before}");
    // The block between the send and the wait: the message arrives while it runs.
    skel.classes[0].phases[0].body.swap(0, 2);
    skel.classes[0].phases[0].body.swap(0, 1);
    let during = exposure_of(&skel);
    // Whole, the wait is hidden; cut to 0.2 ms, the rest of the transfer is waited for: at
    // most the 0.8 ms cut, of iterations of about 1 ms.
    assert!(during > 0.15 && during <= 0.8, "{during}");
}

/// Rank 0's loop sends to rank 1 in its first iteration only (a guard); rank 1 receives it
/// before its own loop. The skeleton runs one iteration of four, first and last at once,
/// and the deadlock check passes it so. Lowered with that one iteration, it must make the
/// first iteration's send: counted at the application's last position, the send was left
/// out and rank 1 waited for it.
#[test]
fn a_loop_lowered_to_one_iteration_runs_its_first_iteration_guards() {
    let loop_of = |body: serde_json::Value| {
        serde_json::json!({"name": "main_loop", "full": 4, "run": 1, "is_loop": true,
            "origin": "test", "compute_s": 0.001, "calls": 1, "body": body})
    };
    let compute = serde_json::json!({"stmt": "compute", "seconds": 0.001, "dist": null});
    let doc = serde_json::json!({
        "n_ranks": 2, "topology": "ring", "layout": {"type": "table", "neighbours": [[1], [0]]},
        "directions": [{"name": "NEXT", "ident": "NEXT", "offset": [1], "tag": 1, "recv_tag": 1}],
        "comms": [{"type": "world"}],
        "classes": [
            {"ranks": [0], "notation": "(2)^4", "phases": [loop_of(serde_json::json!([
                {"stmt": "guard", "when": "first", "depth": 0, "count": 0, "body": [
                    {"stmt": "call", "call": {"call": "send", "op": "Send", "to": {"dir": 0},
                        "tag": 1, "bytes": 8, "slot": null}}]},
                compute]))]},
            {"ranks": [1], "notation": "1 (1)^4", "phases": [
                {"name": "setup", "full": 1, "run": 1, "is_loop": false, "origin": "test",
                    "compute_s": 0.0, "calls": 1, "body": [
                    {"stmt": "call", "call": {"call": "recv", "op": "Recv", "from": {"dir": 0},
                        "tag": 1, "bytes": 8, "count": 8, "offset": 0, "slot": null}}]},
                loop_of(serde_json::json!([compute]))]}
        ],
        "class_of_rank": [0, 1], "grid_coords": [], "n_slots": 0, "send_bytes": 8,
        "recv_bytes": 8, "matching": {"global_pairs": 1, "balanced": 0,
            "local_sends": 0, "local_recvs": 0, "local_policy": ""}
    });
    let skel: Skeleton = serde_json::from_value(doc).unwrap();
    let (programs, _) = instantiate::instantiate(&skel);
    assert!(mpiskel_program::check(&programs).is_none());
    let one = lower_with(&skel, 0, false, None, false);
    let sends = one.traces[0].events.iter().filter(|e| e.op == Op::Send).count();
    assert_eq!(sends, 1, "the first iteration's send is made");
    assert!(runs_through(&one.traces));
    let (_, lowered) = priced(one);
    assert_eq!(lowered.phases[0][0].simulated, Some((vec![3], vec![0])));
}
