//! The tuning constants the skeletons' runtimes share with the emitter and the simulator, in one
//! table ([`SHARED`]). Each is defined once, in the module of the mechanism it tunes; the
//! runtimes (`skeletons/mpiskel_rt*.{h,c}`, `skeletons/rust/rt/`) hold
//! `@NAME@` where its value goes, and [`fill`] writes the values in as a skeleton folder is
//! written, so that a runtime can never run with another value than the one the build and the
//! simulator priced it with.
//!
//! | name | value | defined in | what it tunes |
//! |---|---|---|---|
//! | `KEEP_SHARE` | 0.05 | [`mpiskel_cut::compute_cut::KEEP_SHARE`] | share of a block cut to a short part that still runs |
//! | `KEEP_MIN` | 5e-5 s | [`mpiskel_cut::compute_cut::KEEP_MIN`] | seconds of such a block that always run |
//! | `FIRST_LONGER` | 1.25 | [`mpiskel_cut::replay::FIRST_APART`] | a first iteration this many times longer than the others' mean is priced apart |
//! | `QUANTILES` | 12 | [`mpiskel_program::spread::QUANTILES`] | quantiles kept per compute distribution |
//! | `QUANTILE_PROBABILITIES` | 0 … 1 | [`mpiskel_program::spread::QUANTILE_PROBABILITIES`] | their probabilities, between which the runtime interpolates |

/// Every constant the runtimes share, by the name their `@NAME@` placeholders use, with its
/// value as the runtimes' source spells it (Rust's shortest round-trip form of the number).
pub fn shared() -> Vec<(&'static str, String)> {
    let number = |x: f64| format!("{x:?}");
    let list: Vec<String> =
        mpiskel_program::spread::QUANTILE_PROBABILITIES.iter().map(|&p| number(p)).collect();
    vec![
        ("KEEP_SHARE", number(mpiskel_cut::compute_cut::KEEP_SHARE)),
        ("KEEP_MIN", number(mpiskel_cut::compute_cut::KEEP_MIN)),
        ("FIRST_LONGER", number(mpiskel_cut::replay::FIRST_APART)),
        ("QUANTILES", mpiskel_program::spread::QUANTILES.to_string()),
        ("QUANTILE_PROBABILITIES", list.join(", ")),
    ]
}

/// The names of [`shared`], for the documentation and the tests.
pub const SHARED: [&str; 5] =
    ["KEEP_SHARE", "KEEP_MIN", "FIRST_LONGER", "QUANTILES", "QUANTILE_PROBABILITIES"];

/// `runtime` with every `@NAME@` of [`shared`] replaced by its value.
pub fn fill(runtime: &str) -> String {
    let mut out = runtime.to_owned();
    for (name, value) in shared() {
        out = out.replace(&format!("@{name}@"), &value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_runtime_gets_every_value_and_no_placeholder_is_left() {
        let mut runtimes: Vec<&str> = crate::c::RUNTIME.iter().map(|(_, text)| *text).collect();
        runtimes.extend(crate::rust::RUNTIME.iter().map(|(_, text)| *text));
        for name in SHARED {
            let placeholder = format!("@{name}@");
            assert!(runtimes.iter().any(|r| r.contains(&placeholder)), "{name} is used");
        }
        for r in &runtimes {
            let filled = fill(r);
            for name in SHARED {
                assert!(!filled.contains(&format!("@{name}@")), "{name} left in a runtime");
            }
        }
        assert!(fill(crate::c::RUNTIME[2].1).contains("#define SK_KEEP_SHARE 0.05\n"));
        assert!(fill(crate::rust::RUNTIME[0].1).contains("const KEEP_MIN: f64 = 5e-5;"));
        assert_eq!(
            shared().iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            SHARED,
            "the table and its names agree"
        );
    }
}
