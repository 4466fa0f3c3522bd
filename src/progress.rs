//! Progress on stderr. Every command that takes a while prints one line per stage done,
//! `[   1.23 s] what`, unless `--quiet`; while a stage runs, and only where stderr is a terminal,
//! an indicatif bar (ranks read, while a trace is read) or spinner shows that it is alive.
//! Logs (CI, a pipe, a file) get the lines and never a bar.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// The stages of one command.
pub struct Stages {
    t0: Instant,
    quiet: bool,
    bars: bool,
}

impl Stages {
    /// Stages timed from now; nothing printed with `quiet`.
    pub fn new(quiet: bool) -> Stages {
        Stages { t0: Instant::now(), quiet, bars: !quiet && std::io::stderr().is_terminal() }
    }

    /// Bars and spinners where stderr is a terminal, no stage lines: for commands whose
    /// output is what they print.
    pub fn bars_only() -> Stages {
        Stages { t0: Instant::now(), quiet: true, bars: std::io::stderr().is_terminal() }
    }

    /// Prints the line of a stage done (or begun).
    pub fn line(&self, what: &str) {
        if !self.quiet {
            eprintln!("[{:7.2} s] {what}", self.t0.elapsed().as_secs_f64());
        }
    }

    /// A spinner saying `what` until the returned activity is dropped.
    pub fn spinner(&self, what: &str) -> Activity {
        if !self.bars {
            return Activity::none();
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(what.to_owned());
        bar.enable_steady_tick(Duration::from_millis(120));
        Activity { bar: Some(bar), ticker: None, stop: Arc::new(AtomicBool::new(false)) }
    }

    /// A bar of the rank files read (as the trace readers count them) until the returned
    /// activity is dropped.
    pub fn reading(&self, what: &str) -> Activity {
        if !self.bars {
            return Activity::none();
        }
        // A spinner until the reader knows how many rank files there are, then a bar.
        let mut activity = self.spinner(what);
        let stop = Arc::clone(&activity.stop);
        activity.ticker = activity.bar.clone().map(|bar| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut sized = false;
                while !stop.load(Ordering::Relaxed) {
                    let (read, expected) = mpiskel_trace::progress::ranks_read();
                    if expected > 0 {
                        if !sized {
                            bar.set_style(
                                ProgressStyle::with_template(
                                    "{spinner} {msg} [{bar:30}] {pos}/{len} ranks ({elapsed})",
                                )
                                .unwrap_or_else(|_| ProgressStyle::default_bar())
                                .progress_chars("=> "),
                            );
                            sized = true;
                        }
                        bar.set_length(expected);
                        bar.set_position(read.min(expected));
                    }
                    std::thread::park_timeout(Duration::from_millis(100));
                }
            })
        });
        activity
    }
}

/// A stage running; its bar goes when it is dropped.
pub struct Activity {
    bar: Option<ProgressBar>,
    ticker: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl Activity {
    fn none() -> Activity {
        Activity { bar: None, ticker: None, stop: Arc::new(AtomicBool::new(true)) }
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl mpiskel_make::Observer for Stages {
    fn line(&self, what: &str) {
        Stages::line(self, what);
    }
    fn busy(&self, what: &str) -> mpiskel_make::Busy {
        mpiskel_make::Busy::new(self.spinner(what))
    }
    fn reading(&self, what: &str) -> mpiskel_make::Busy {
        mpiskel_make::Busy::new(Stages::reading(self, what))
    }
}
