//! What every validation suite does before it measures: pick the cases and scenarios asked
//! for by name, build each trace's skeleton, write its files whole. The suites ([`crate::smpi`],
//! [`crate::native`], the retuning runs of each) and their driver ([`crate::suite`]) import
//! this module; it imports none of them.

use std::path::{Path, PathBuf};

use crate::error::{Context, Result};
use mpiskel_make::build::{build, BuildOptions};
use mpiskel_make::observe::Quiet;

/// Builds the C skeleton of `trace` into `dir` (replacing it).
pub fn build_skeleton(trace: &Path, dir: &Path) -> Result<()> {
    build_skeleton_on(trace, dir, None)
}

/// [`build_skeleton`], its factor simulated on `platform` (the platform file and the hostfile
/// where the application ran; see [`mpiskel_make::build::platform_times`]).
pub fn build_skeleton_on(
    trace: &Path,
    dir: &Path,
    platform: Option<&(PathBuf, PathBuf)>,
) -> Result<()> {
    let mut o = BuildOptions::new(trace, dir);
    o.force = true;
    if let Some((file, hostfile)) = platform {
        o.platform = Some(file.clone());
        o.hostfile = Some(hostfile.clone());
    }
    build(&o, &Quiet)
        .map(drop)
        .with_context(|| format!("building the skeleton of {}", trace.display()))
}

/// The entries of `all` named in `names`, in that order (all of them when none are named).
pub fn pick<T: Clone>(
    all: &[T],
    names: &[String],
    name: impl Fn(&T) -> &str,
    what: &str,
) -> Result<Vec<T>> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    names
        .iter()
        .map(|n| {
            all.iter().find(|x| name(x) == n).cloned().with_context(|| {
                let known: Vec<&str> = all.iter().map(&name).collect();
                format!("unknown {what} {n:?} (known: {})", known.join(", "))
            })
        })
        .collect()
}

/// Writes `text` to `path` atomically (see [`mpiskel_trace::atomic`]).
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    mpiskel_trace::atomic::write(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_are_picked_by_name_in_the_order_given() {
        let all = ["ref", "bw5MBps", "lat10x"];
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(pick(&all, &[], |s| s, "x").unwrap(), all);
        assert_eq!(pick(&all, &names(&["lat10x", "ref"]), |s| s, "x").unwrap(), ["lat10x", "ref"]);
        let e = pick(&all, &names(&["fast"]), |s| s, "SimGrid scenario").unwrap_err().to_string();
        assert_eq!(e, "unknown SimGrid scenario \"fast\" (known: ref, bw5MBps, lat10x)");
    }
}
