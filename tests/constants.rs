//! Every tuning constant the skeletons' runtimes use has one definition: the runtimes
//! (`skeletons/`) take each from the emitter's table (`emit/src/constants.rs`) through an
//! `@NAME@` placeholder, and the value itself is defined once in the workspace's sources.

mod support;

use support::root;

/// The Rust constants the runtimes' values come from, by the runtimes' names.
const SOURCES: [(&str, &str); 5] = [
    ("KEEP_SHARE", "KEEP_SHARE"),
    ("KEEP_MIN", "KEEP_MIN"),
    ("FIRST_LONGER", "FIRST_APART"),
    ("QUANTILES", "QUANTILES"),
    ("QUANTILE_PROBABILITIES", "QUANTILE_PROBABILITIES"),
];

fn sources(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if !p.ends_with("target") && !p.ends_with(".git") && !p.ends_with("fixtures") {
                sources(&p, out);
            }
        } else if matches!(p.extension().and_then(|x| x.to_str()), Some("rs" | "c" | "h" | "j2")) {
            out.push((p.clone(), std::fs::read_to_string(&p).unwrap_or_default()));
        }
    }
}

#[test]
fn every_constant_the_runtimes_use_has_one_definition() {
    let root = root();
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 100, "{} source files", files.len());
    assert_eq!(
        mpiskel_emit::constants::SHARED,
        SOURCES.map(|(name, _)| name),
        "this test knows every shared constant"
    );
    for (name, source) in SOURCES {
        // In the runtimes, the definition takes the table's value.
        let runtime_defs: Vec<(String, String)> = files
            .iter()
            .filter(|(p, _)| p.starts_with(root.join("skeletons")))
            .flat_map(|(p, text)| {
                text.lines()
                    .filter(|l| {
                        l.contains(&format!("#define SK_{name} "))
                            || l.contains(&format!("const {name}:"))
                    })
                    .map(|l| (p.display().to_string(), l.to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (p, l) in &runtime_defs {
            assert!(l.contains(&format!("@{name}@")), "{p}: {l}: a value of its own");
        }
        // In the workspace's Rust, the value is defined once.
        let defs: Vec<String> = files
            .iter()
            .filter(|(p, _)| p.extension().is_some_and(|x| x == "rs"))
            .filter(|(p, _)| !p.starts_with(root.join("skeletons")))
            .flat_map(|(p, text)| {
                text.lines()
                    .filter(|l| l.trim_start().starts_with(&format!("pub const {source}:")))
                    .map(|l| format!("{}: {l}", p.display()))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(defs.len(), 1, "{source} defined {} times: {defs:#?}", defs.len());
    }
    // The C runtime takes the probabilities where it interpolates between them.
    let c = std::fs::read_to_string(root.join("skeletons/mpiskel_rt.c")).unwrap();
    assert!(c.contains("{@QUANTILE_PROBABILITIES@}"));
}
