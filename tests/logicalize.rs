//! Logicalization of real traces: every fixture program's topology and directions, the NPB
//! structures of `../shared/fixtures/npb/README.md`, renumbered ranks, and the command line.

mod support;

use std::collections::BTreeSet;

use mpiskel_logicalize::iso::is_isomorphism;
use mpiskel_logicalize::{identify, logicalize, CommMatrix, LogicalComm, LogicalTrace, Structure};
use mpiskel_trace::{ReadOptions, TraceSet};
use support::{mpiskel, root, scratch, shared};

fn logical(path: &std::path::Path) -> LogicalTrace {
    logicalize(&TraceSet::open(path, &ReadOptions::default()).unwrap())
}

fn fixture(name: &str) -> LogicalTrace {
    logical(&root().join("fixtures/traces").join(name))
}

fn directions(l: &LogicalTrace) -> BTreeSet<String> {
    l.directions.iter().map(|d| d.name.to_string()).collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// (topology name, sorted dims, directions) of each fixture program.
#[test]
fn every_fixture_program_is_identified_with_its_topology_and_directions() {
    let cases: &[(&str, &str, &[usize], &[&str])] = &[
        ("ring", "ring of 4", &[4], &["LEFT", "RIGHT"]),
        ("ring-fortran", "ring of 4", &[4], &["LEFT", "RIGHT"]),
        ("halo2d-periodic-4x4", "4×4 torus", &[4, 4], &["NORTH", "SOUTH", "EAST", "WEST"]),
        ("halo2d-open-4x4", "4×4 grid", &[4, 4], &["NORTH", "SOUTH", "EAST", "WEST"]),
        ("halo3d-2x2x2", "hypercube 2^3", &[2, 2, 2], &["+x", "+y", "+z"]),
        ("wavefront-4x4", "4×4 grid", &[4, 4], &["NORTH", "SOUTH", "EAST", "WEST"]),
        ("anysource", "star of 4", &[3, 4], &["PARENT", "CHILD1", "CHILD2", "CHILD3"]),
        ("p2pmodes", "2 pairs (r, r xor 1)", &[4], &["PARTNER"]),
        // Two ranks exchanging: a line of two, whose only direction is "the other one".
        ("callrate", "line of 2", &[2], &["RIGHT"]),
        ("subcomm-2x3", "2×3 grid", &[2, 3], &[]),
        ("lammps-melt", "2×2 grid", &[2, 2], &["EAST", "SOUTH"]),
    ];
    for (name, topo, dims, dirs) in cases {
        let l = fixture(name);
        assert_eq!(l.topology_name(), *topo, "{name}");
        let mut got = l.topology().unwrap().dims.clone();
        got.sort_unstable();
        assert_eq!(got, dims.to_vec(), "{name}");
        assert_eq!(directions(&l), set(dirs), "{name}");
        assert_eq!(l.exceptions.calls, 0, "{name}");
    }
    let c = fixture("collectives");
    assert_eq!(c.identification.structure, Structure::NoPointToPoint, "collectives only");
    // A program with no regular structure is a general graph, never forced into a grid.
    let g = fixture("irregular");
    assert_eq!(g.identification.structure, Structure::General);
    assert!(g.identification.stages.iter().all(|s| s.candidates.is_empty()));
}

#[test]
fn edge_ranks_fold_into_the_interior_class() {
    // Non-periodic halo: edge ranks call MPI_PROC_NULL; all 16 ranks run one program.
    let l = fixture("halo2d-open-4x4");
    assert_eq!(l.classes.len(), 1);
    assert_eq!(l.classes[0].ranks.len() + l.classes[0].folded.len(), 16);
    // Wavefront: edge ranks skip calls; odd and even columns order their exchange differently.
    let w = fixture("wavefront-4x4");
    assert_eq!(w.classes.len(), 2);
    // Ring: even ranks send first, odd ranks receive first.
    assert_eq!(fixture("ring").classes.len(), 2);
}

#[test]
fn sub_communicators_are_rows_and_columns() {
    let l = fixture("subcomm-2x3");
    let comms: BTreeSet<String> =
        l.classes[0].ops.iter().map(|op| format!("{:?}", op.key.comm)).collect();
    let row = format!("{:?}", LogicalComm::Slice { free: vec![0] });
    let col = format!("{:?}", LogicalComm::Slice { free: vec![1] });
    assert!(comms.contains(&row) && comms.contains(&col), "{comms:?}");
    // Even and odd ranks differ (only even ranks use the even communicator).
    assert_eq!(l.classes.len(), 2);
}

#[test]
fn npb_structures_as_the_readme_describes() {
    let npb = |n: &str| logical(&shared().join("fixtures/npb").join(n).join("trace.txt"));
    let bt = npb("bt.S.16");
    assert_eq!(bt.topology_name(), "6-point stencil (BT/SP) on 4×4 torus");
    assert_eq!(directions(&bt), set(&["NORTH", "SOUTH", "EAST", "WEST", "NORTHEAST", "SOUTHWEST"]));
    assert_eq!(bt.classes.len(), 1);
    // Compute gaps keep their work (flops, from the time-independent trace), averaged per
    // position over the 16 ranks.
    let with_work = bt.classes[0].ops.iter().filter(|op| !op.gap.flops_mean.is_none()).count();
    assert!(with_work > bt.classes[0].ops.len() / 2, "{with_work}");
    assert!(bt.classes[0].ops.iter().all(|op| op.gap.n == 16));
    let cg = npb("cg.S.16");
    assert_eq!(cg.topology_name(), "butterfly rows + transpose on 4×4");
    assert_eq!(directions(&cg), set(&["XOR1", "XOR2", "TRANSPOSE", "SELF"]));
    assert_eq!(cg.exceptions.calls, 0);
    let lu = npb("lu.S.16");
    assert_eq!(lu.topology_name(), "4×4 grid");
    assert_eq!(directions(&lu), set(&["NORTH", "SOUTH", "EAST", "WEST"]));
    // Every stage of the decision tree is reported.
    for l in [&bt, &cg, &lu] {
        let names: Vec<&str> = l.identification.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["simple tests", "spectrum", "isomorphism"]);
    }
}

/// Ranks renumbered at random: the same topology, and a mapping that is an isomorphism.
/// NPB MG's ranks differ at the coarse levels of its V-cycle (only every second rank holds
/// points there and exchanges two planes away): on its grid with strides they fold into one
/// class whose point-to-point calls only some ranks make list the others as absent, and every
/// rank makes exactly the calls it is not absent from.
#[test]
fn a_multigrid_folds_into_one_class_with_guarded_calls() {
    let mg = logical(&shared().join("fixtures/npb/mg.S.16/trace.txt"));
    assert_eq!(mg.topology_name(), "4×2×2 grid periodic in dim 0 with strides (2,0,0)");
    assert_eq!(mg.classes.len(), 1);
    let class = &mg.classes[0];
    assert_eq!(class.ranks.len() + class.folded.len(), 16);
    let guarded: Vec<_> = class.ops.iter().filter(|op| !op.absent.is_empty()).collect();
    assert!(!guarded.is_empty());
    // No rank is absent from a collective, and no call is absent for every rank.
    for op in &guarded {
        assert_ne!(op.key.op.class(), mpiskel_trace::OpClass::Collective, "{:?}", op.key);
        assert!(op.absent.len() < 16);
    }
    // At every point-to-point position, each rank either made the call (its compute gap is
    // there) or is absent, never both; a wait only some ranks made is made by all (on requests
    // toward MPI_PROC_NULL for the others), so nobody is absent from it.
    for (i, op) in class.ops.iter().enumerate() {
        let made: BTreeSet<u32> = op.gap_samples.iter().map(|&(r, _)| r).collect();
        let absent: BTreeSet<u32> = op.absent.iter().copied().collect();
        if op.key.op.class() == mpiskel_trace::OpClass::Completion {
            assert!(absent.is_empty() && !made.is_empty(), "position {i}");
        } else {
            assert!(made.is_disjoint(&absent), "position {i}");
            assert_eq!(made.len() + absent.len(), 16, "position {i}: {made:?} {absent:?}");
        }
    }
}

#[test]
fn renumbered_fixtures_are_identified_the_same() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut traces: Vec<std::path::PathBuf> = [
        "halo2d-periodic-4x4",
        "halo2d-open-4x4",
        "wavefront-4x4",
        "ring",
        "ring-fortran",
        "halo3d-2x2x2",
        "anysource",
        "p2pmodes",
        "callrate",
        "lammps-melt",
    ]
    .iter()
    .map(|n| root().join("fixtures/traces").join(n))
    .collect();
    traces.extend(
        ["bt.S.16", "cg.S.16", "lu.S.16"]
            .iter()
            .map(|n| shared().join("fixtures/npb").join(n).join("trace.txt")),
    );
    for path in traces {
        let set = TraceSet::open(&path, &ReadOptions::default()).unwrap();
        let (g, _) = CommMatrix::of(&set).significant_graph();
        let base = identify(&g, None);
        let Structure::Topology { name, topology, .. } = &base.structure else {
            panic!("{}", path.display())
        };
        for _ in 0..5 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let (h, _) = g.shuffled(seed);
            let id = identify(&h, None);
            match &id.structure {
                Structure::Topology { name: n2, .. } => assert_eq!(n2, name, "{}", path.display()),
                other => panic!("{}: {other:?}", path.display()),
            }
            assert!(is_isomorphism(&h, &topology.graph(), &id.node_of_rank), "{}", path.display());
        }
    }
}

#[test]
fn logicalize_command_writes_the_trace_and_the_heatmap() {
    let dir = scratch("logicalize-cli");
    let (json, svg) = (dir.join("lu.logical.json"), dir.join("lu.svg"));
    let out = mpiskel()
        .arg("logicalize")
        .arg(shared().join("fixtures/npb/lu.S.16/trace.txt"))
        .arg("-o")
        .arg(&json)
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("topology       4×4 grid") && text.contains("simple tests"), "{text}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg") && picture.matches("<rect").count() > 40);
    let shown = mpiskel().arg("inspect").arg(&json).output().unwrap();
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    assert_eq!(String::from_utf8_lossy(&shown.stdout).lines().nth(1), text.lines().nth(1));
}
