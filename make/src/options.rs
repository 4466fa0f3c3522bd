//! What a build is asked for: the trace, the folder, the language and the options of
//! `mpiskel build`.

use std::path::{Path, PathBuf};

/// Languages of the skeleton.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// C, built with mpicc (a folder with skeleton.c, the runtime and a Makefile).
    C,
    /// Rust with the `mpi` crate (rsmpi), built with cargo (a Cargo project).
    Rust,
}

impl Lang {
    /// The name `skeleton.json` records.
    pub fn name(self) -> &'static str {
        match self {
            Lang::C => "c",
            Lang::Rust => "rust",
        }
    }
}

/// What to build (`mpiskel build`'s options).
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The trace (any format [`TraceSet::open`] reads).
    pub trace: PathBuf,
    /// The skeleton folder to write.
    pub output: PathBuf,
    /// Seconds the skeleton should run on the recording machine (`None`: the default of
    /// [`mpiskel_cut::scale`]).
    pub target_time: Option<f64>,
    /// Run every compute block whole, even when the skeleton is then over its target.
    pub whole_compute: bool,
    /// Language of the skeleton.
    pub lang: Lang,
    /// Replace `output` if it exists.
    pub force: bool,
    /// The application's run time, seconds, if known better than the trace tells.
    pub app_time: Option<f64>,
    /// Skeleton name (`None`: [`default_name`] of the trace).
    pub name: Option<String>,
    /// For SimGrid traces: compute speed in flop/s.
    pub flops: f64,
    /// Refuse calls nothing matches and programs that rely on buffered sends.
    pub strict: bool,
    /// The platform the application's time is judged on (a SimGrid cluster file or
    /// mpiskel's TOML), and where its ranks ran there: the build simulates the application and
    /// the skeleton on it ([`platform_times`]) and takes their ratio as the factor.
    pub platform: Option<PathBuf>,
    /// With `platform`: the hostfile placing the ranks (SMPI's format).
    pub hostfile: Option<PathBuf>,
    /// Check the skeleton's fidelity on the panel of platforms ([`crate::policy`]) and keep
    /// the candidate it chooses (`mpiskel build --no-check`: false).
    pub check: bool,
    /// The largest error a kept skeleton may show on the panel, as a share
    /// ([`mpiskel_cut::fidelity::DEFAULT_MAX_ERROR`]).
    pub max_error: f64,
}

impl BuildOptions {
    /// A build of `trace` into `output` with every other option at its default.
    pub fn new(trace: &Path, output: &Path) -> BuildOptions {
        BuildOptions {
            trace: trace.to_path_buf(),
            output: output.to_path_buf(),
            target_time: None,
            whole_compute: false,
            lang: Lang::C,
            force: false,
            app_time: None,
            name: None,
            flops: 1e9,
            strict: false,
            platform: None,
            hostfile: None,
            check: true,
            max_error: mpiskel_cut::fidelity::DEFAULT_MAX_ERROR,
        }
    }
}
