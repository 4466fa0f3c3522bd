use super::*;

/// `setupstep` (`fixtures/traces`) offers two nest choices, and the first is over its
/// target: it is the shortest so far while the second is made, and the one kept. Kept
/// whole, or made again as a large program would be, it is the same program.
#[test]
fn the_shortest_choice_made_again_is_the_one_kept_whole() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/traces/setupstep");
    let set = mpiskel_trace::TraceSet::open(&path, &mpiskel_trace::ReadOptions::default()).unwrap();
    let lt = mpiskel_logicalize::logicalize(&set);
    let choices = Choices::of(&lt);
    assert_eq!(choices.nests.len(), 2);
    let goal = |kept_statements| Goal {
        app_time_s: 0.1,
        app_time_source: "given",
        target_s: None,
        shorter_by: 0.0,
        compute_cut: true,
        buffer: true,
        tags: Tags::Channels,
        kept_statements,
        main_run: None,
    };
    let kept = make_once(&lt, &choices, &goal(KEPT_STATEMENTS), true).unwrap();
    assert!(statements(&kept.skeleton) > 0);
    assert!(kept.scaling.skeleton_estimate_s > kept.scaling.target_s, "{:?}", kept.scaling);
    let again = make_once(&lt, &choices, &goal(0), true).unwrap();
    assert_eq!(kept.skeleton, again.skeleton);
    assert_eq!(kept.scaling, again.scaling);
}

/// The look at a program before it is made ([`Plan::program`]), cut as far as any reach
/// cuts and checked nowhere, picks the stretches to cut that the program made from the
/// same loop nests picks (`shuffle` has two, the others none), keeping as much of each.
#[test]
fn a_look_at_the_program_picks_the_stretches_the_program_made_picks() {
    for name in ["shuffle", "suite", "setupstep", "ring", "scf", "irregular"] {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/traces").join(name);
        let read = mpiskel_trace::ReadOptions::default();
        let set = mpiskel_trace::TraceSet::open(&path, &read).unwrap();
        let stretches = set.stretches();
        let app = set.app_time_s();
        let mut lt = mpiskel_logicalize::logicalize(&set);
        let plan = Plan::of(&lt);
        let (program, scaling) = plan.program(&lt, app, "span", None, true).unwrap();
        let picked = |lt: &LogicalTrace, program, scaling| {
            crate::stretches::choose(lt, (program, scaling), stretches.clone(), app)
                .into_iter()
                .map(|(st, keep)| (st.index, format!("{keep:.9}")))
                .collect::<Vec<_>>()
        };
        let looked = picked(&lt, &program, &scaling);
        let built = make_planned(&mut lt, plan, app, "span", None, true).unwrap();
        assert_eq!(looked, picked(&lt, &built.skeleton, &built.scaling), "{name}");
        assert_eq!(looked.len(), if name == "shuffle" { 2 } else { 0 }, "{name}");
    }
}

/// Receives made wildcard receives (`ring`'s, with their sources resolved) are pinned
/// in place, each distinct call once, and given their wildcard back as they were.
#[test]
fn sources_pinned_in_place_are_given_back_as_they_were() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/traces/ring");
    let set = mpiskel_trace::TraceSet::open(&path, &mpiskel_trace::ReadOptions::default()).unwrap();
    let mut lt = mpiskel_logicalize::logicalize(&set);
    let mut wildcard = 0;
    for op in lt.classes.iter_mut().flat_map(|c| c.ops.iter_mut()) {
        let resolved = !matches!(op.key.peer, Some(mpiskel_logicalize::LogicalPeer::Any) | None);
        if op.key.op.class() == mpiskel_trace::OpClass::Recv && resolved {
            std::sync::Arc::make_mut(&mut op.key).any_source = true;
            wildcard += 1;
        }
    }
    assert!(wildcard > 0);
    let before = format!("{:?}", lt.classes);
    let pinned = PinnedSources::pin(&mut lt);
    assert_eq!(pinned.len(), wildcard);
    assert!(lt.classes.iter().flat_map(|c| &c.ops).all(|op| !op.key.any_source));
    pinned.restore(&mut lt);
    assert_eq!(format!("{:?}", lt.classes), before);
}

/// `make_running` runs the main loop's iterations asked, however many its target would keep,
/// each class dropping the same number.
#[test]
fn a_main_loop_runs_the_iterations_asked() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/traces/halo3d-2x2x2");
    let set = mpiskel_trace::TraceSet::open(&path, &mpiskel_trace::ReadOptions::default()).unwrap();
    let mut lt = mpiskel_logicalize::logicalize(&set);
    let default = make(&mut lt, 10.0, "given", None, true).unwrap();
    let full = default.scaling.main_full;
    assert!(full > 3 && default.scaling.main_run < full, "{:?}", default.scaling);
    for k in [1, 3, full] {
        let built = make_running(&mut lt, 10.0, "given", None, true, k).unwrap();
        assert_eq!(built.scaling.main_run, k);
        for c in &built.skeleton.classes {
            let main = c.main_loop().unwrap();
            assert_eq!(main.full - main.run, full - k, "each class drops as many");
        }
    }
}
