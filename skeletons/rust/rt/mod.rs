//! mpiskel runtime: what every Rust skeleton shares (the counterpart of `mpiskel_rt.c`).
//!
//! - [`Runtime::init`] parses the options and calibrates the compute kernel (well under a
//!   second);
//! - [`Runtime::compute`] busies the processor for a number of seconds of the recording machine;
//! - [`Runtime::phase_begin`] and friends time the phases of the program;
//! - [`Runtime::report`] prints one human line and one JSON record: skeleton time, per-phase
//!   times and the predicted application time;
//! - [`scoped`] runs code that starts non-blocking calls: their requests live in numbered slots
//!   ([`Requests`]) and their receive buffers in a pool that outlives the scope.
//!
//! The module holds the options, the kernel and the compute blocks; `report` times the phases,
//! predicts the application's time from them and reports it; `calls` holds the requests, buffers
//! and the calls that need more than one MPI call.
//!
//! The generator, the C runtime and this runtime agree on every constant: the same kernel, the same
//! calibration, the same random generator seeded by rank, the same report.

// Every skeleton ships the whole runtime and uses the part its program needs.
#![allow(dead_code)]

use mpi::topology::Rank;
use mpi::traits::*;

mod calls;
mod report;

pub use calls::*;

/// Quantiles per compute distribution: minimum, 1 %, 5 %, 10 %, 25 %, median, 75 %, 90 %, 95 %,
/// 99 %, 99.9 %, maximum.
pub const QUANTILES: usize = @QUANTILES@;
const LEVELS: [f64; QUANTILES] = [@QUANTILE_PROBABILITIES@];

/// The tag of a receive that accepts any tag (`MPI_ANY_TAG`).
pub const ANY_TAG: mpi::Tag = -1;

/// A first iteration this many times longer than the mean of the others waited for ranks that
/// reached the loop late; shorter, its difference is the spread of the compute durations drawn
/// (about a tenth for one iteration of NPB BT), and all iterations are averaged.
const FIRST_LONGER: f64 = @FIRST_LONGER@;

/// Share of its duration that a block cut by [`Runtime::compute_keep`] still runs.
const KEEP_SHARE: f64 = @KEEP_SHARE@;

/// Seconds of a block cut by [`Runtime::compute_keep`] that always run: enough to time. A kept
/// part shorter than this runs untimed ([`Runtime::run_kept`]).
const KEEP_MIN: f64 = @KEEP_MIN@;

/// One timed part of the program: a loop of the trace or the calls between loops.
#[derive(Debug, Clone)]
pub struct Phase {
    name: &'static str,
    /// Iterations in the application.
    full: i64,
    /// Iterations this skeleton runs.
    pub run: i64,
    seconds: f64,
    /// Computation not run (see [`Runtime::compute_less`]): seconds removed, the seconds asked
    /// of and taken by the parts that ran, whose pace prices the removed ones, and the
    /// processor seconds those parts took ([`Runtime::cores_floor`]).
    cut: [f64; 4],
    /// Seconds of computation asked (run, whole or the kept part of a cut block).
    ran: f64,
    /// For an inner loop timed on its own: its phase.
    parent: Option<usize>,
    /// Seconds of its first iteration (see [`Runtime::iteration_end`]); for an inner loop, of
    /// its first iteration in each iteration of its phase, summed ([`Runtime::inner_first`]).
    first: Option<f64>,
    /// Its first iteration replays the application's first: counted once.
    first_apart: bool,
    /// Copies of one of its iterations elsewhere in the application that the skeleton skips (an
    /// untimed warm-up iteration), each priced at the slowest rank's mean iteration.
    warmup: i64,
    /// A block of it ran only a short part ([`Runtime::compute_keep`]); once the report has
    /// gathered them, the most removed computation any rank restores here.
    keep: bool,
    keep_most: Option<f64>,
    /// What its time is multiplied by beyond its iterations ([`Phase::stretch`]).
    stretch: f64,
}

impl Phase {
    /// Seconds of removed computation added back: what was removed, at the pace the parts that
    /// ran kept over the whole phase.
    /// Where only untimed parts ran here, at `pace`: the rank's over its other phases.
    fn restored(&self, pace: f64) -> f64 {
        if let (true, Some(most)) = (self.keep, self.keep_most) {
            return most;
        }
        let [removed, kept, took, _] = self.cut;
        if kept > 0.0 {
            removed * took / kept
        } else {
            removed * pace
        }
    }

    /// A phase of `full` iterations in the application, of which the skeleton runs `run`.
    pub fn new(name: &'static str, full: i64, run: i64) -> Phase {
        Phase {
            name,
            full,
            run,
            seconds: 0.0,
            cut: [0.0; 4],
            ran: 0.0,
            parent: None,
            first: None,
            first_apart: false,
            warmup: 0,
            keep: false,
            keep_most: None,
            stretch: 1.0,
        }
    }

    /// This phase as the part the skeleton runs of a stretch between two collectives of all
    /// ranks that folds into no loop: its time, times `scale` (the stretch's recorded span over
    /// the part's), stands for the whole stretch.
    pub fn stretch(self, scale: f64) -> Phase {
        Phase { stretch: scale, ..self }
    }

    /// This phase pricing `n` skipped warm-up iterations as its own.
    pub fn warmup(self, n: i64) -> Phase {
        Phase { warmup: n, ..self }
    }

    /// This phase with its first iteration counted once: its compute blocks replay the
    /// application's first iteration in it.
    pub fn first_apart(self) -> Phase {
        Phase { first_apart: true, ..self }
    }

    /// An inner loop of phase `parent`, timed on its own.
    pub fn inner(name: &'static str, full: i64, run: i64, parent: usize) -> Phase {
        Phase { parent: Some(parent), ..Phase::new(name, full, run) }
    }
}

/// Options, the compute kernel, the timers and the report.
#[derive(Debug)]
pub struct Runtime {
    /// Kernel iterations per second of processor time on this machine.
    rate: f64,
    /// This rank's compute weight.
    weight: f64,
    /// `--compute-scale`: every compute block times this.
    scale: f64,
    /// Share of what a cut block keeps that runs (see [`Runtime::set_compute_shrink`]).
    shrink: f64,
    iterations: Option<i64>,
    report_file: Option<String>,
    state: u64,
    dists: &'static [[f64; QUANTILES]],
    sink: f64,
    phases: Vec<Phase>,
    t0: f64,
    begun: f64,
    /// When this rank began its main loop, seconds after the common start.
    main_entry: Option<f64>,
    /// When the last rank began its main loop (set by [`Runtime::report`]).
    main_latest: f64,
    /// The phase being timed.
    current: Option<usize>,
    /// Executions of each replay table run so far on this rank.
    replay_at: Vec<usize>,
    /// Some block of this rank ran only a short part ([`Runtime::compute_keep`]).
    keep_any: bool,
    /// This rank's node, once the report has asked: its ranks, the processors they may use,
    /// and the processor seconds of computation they did not run ([`Runtime::cores_floor`]).
    node: (i32, f64, f64, f64),
    /// Whether the compute blocks are processor time ([`Runtime::set_processor_time`]), and
    /// the processor seconds one asked second takes here: the recording machine's rate over
    /// this one's under `--compute-rate`, 1 otherwise.
    processor_time: bool,
    cpu_per_asked: f64,
    /// The computation run and cut in the phase being timed when each timed part began,
    /// innermost last ([`Runtime::part_begin`]).
    parts: Vec<Option<(f64, [f64; 4])>>,
    /// Each phase's slot among all classes' phase names, and their number, where the classes'
    /// phases differ ([`Runtime::keep_slots`]).
    keep_slots: Option<(Vec<usize>, usize)>,
}

impl Runtime {
    /// Reads `--iterations N` (main loop iterations), `--report FILE` (also write the JSON
    /// there), `--compute-scale X` (every compute block times X) and `--compute-rate R` (R
    /// kernel iterations per recorded second instead of calibrating: a fixed amount of work)
    /// and `--seed N` (another sequence of drawn compute durations) from the command line,
    /// seeds the generator by rank and calibrates the kernel.
    pub fn init(world: &impl Communicator) -> Runtime {
        let mut rt = Runtime {
            rate: 1e9,
            weight: 1.0,
            scale: 1.0,
            shrink: 1.0,
            iterations: None,
            report_file: None,
            state: 0x9E37_79B9_7F4A_7C15,
            dists: &[],
            sink: 0.0,
            phases: Vec::new(),
            t0: 0.0,
            begun: 0.0,
            main_entry: None,
            main_latest: -1.0,
            current: None,
            replay_at: Vec::new(),
            keep_any: false,
            node: (0, 0.0, 0.0, 0.0),
            processor_time: false,
            cpu_per_asked: 1.0,
            parts: Vec::new(),
            keep_slots: None,
        };
        let mut fixed_rate: Option<f64> = None;
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--iterations" => rt.iterations = args.next().and_then(|n| n.parse().ok()),
                "--report" => rt.report_file = args.next(),
                "--compute-scale" => {
                    rt.scale = args.next().and_then(|x| x.parse().ok()).unwrap_or(1.0);
                }
                "--compute-rate" => fixed_rate = args.next().and_then(|x| x.parse().ok()),
                "--seed" => {
                    let seed: u64 = args.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                    rt.state ^= seed.wrapping_mul(0xBF58_476D_1CE4_E5B9);
                }
                _ => {}
            }
        }
        rt.state ^= (world.rank() as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
        for _ in 0..8 {
            rt.uniform();
        }
        rt.calibrate();
        if let Some(r) = fixed_rate.filter(|&r| r > 0.0) {
            rt.cpu_per_asked = r / rt.rate;
            rt.rate = r;
        }
        rt
    }

    /// The main loop's iterations: the value built in, or as many fewer as `--iterations` asks
    /// of the class with `lead_full` iterations (every class drops the same number, so that
    /// they stay matched).
    pub fn main_run(&self, built_in: i64, full: i64, lead_full: i64) -> i64 {
        match self.iterations {
            Some(n) if n >= 1 => (full - (lead_full - n.min(lead_full))).max(1),
            _ => built_in,
        }
    }

    /// A main loop of time steps: the `built_in` steps of its table, or the `--iterations` asked
    /// (at most the application's `full`, at least the table's, so that every kind of step
    /// runs), the table read over again.
    pub fn steps_run(&self, built_in: i64, full: i64) -> i64 {
        match self.iterations {
            Some(n) if n >= 1 => n.min(full).max(built_in),
            _ => built_in,
        }
    }

    /// Sets the iterations of the phases of the `n_kinds` kinds of step (`first` onwards) to
    /// the steps of each kind among the `run` that read the table `kinds` over again.
    pub fn steps_count(&mut self, first: usize, n_kinds: usize, kinds: &[u8], run: i64) {
        if kinds.is_empty() || run == kinds.len() as i64 || self.phases.len() < first + n_kinds {
            return;
        }
        for p in &mut self.phases[first..first + n_kinds] {
            p.run = 0;
        }
        for it in 0..run.max(0) as usize {
            self.phases[first + usize::from(kinds[it % kinds.len()])].run += 1;
        }
    }

    /// Bytes of the buffer for the buffered sends (`buffered_send`): `bytes` in `messages`
    /// messages are what the skeleton sends buffered with `main_run` iterations of its main
    /// loop; more iterations (`--iterations`) need proportionally more. Each message takes
    /// room for its envelope besides (`MPI_BSEND_OVERHEAD`, under a kilobyte in the MPI
    /// libraries this runs on).
    pub fn send_buffer(&self, bytes: u64, messages: u64, main_run: i64) -> usize {
        let times = match self.iterations {
            Some(n) if n > main_run && main_run > 0 => (n + main_run - 1) / main_run,
            _ => 1,
        };
        let size = (bytes + messages * 1024) * times as u64;
        usize::try_from(size.min(i32::MAX as u64)).unwrap_or(i32::MAX as usize)
    }

    /// The compute blocks are processor time (the trace recorded it): where a node holds more
    /// ranks than processors (the union of their CPU affinities, or a cgroup's quota), the
    /// prediction is held to what the node's processors could run ([`Runtime::cores_floor`]).
    pub fn set_processor_time(&mut self) {
        self.processor_time = true;
    }

    /// Every block cut with [`Runtime::compute_less`] runs only `share` of what it keeps; the
    /// rest is added back to the prediction as its removed part is.
    pub fn set_compute_shrink(&mut self, share: f64) {
        if share > 0.0 && share <= 1.0 {
            self.shrink = share;
        }
    }

    /// Scales every compute block of this rank by `weights[rank]`.
    pub fn set_rank_weight(&mut self, weights: &[f64], rank: Rank) {
        self.weight = weights[rank as usize];
    }

    /// Registers the program's distributions of compute durations (quantiles, seconds).
    pub fn set_distributions(&mut self, dists: &'static [[f64; QUANTILES]]) {
        self.dists = dists;
    }

    /// xorshift64*: a uniform draw in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// The kernel: a dependent chain of multiply-adds, which no compiler can shorten.
    fn spin(&mut self, n: u64) {
        let mut x = std::hint::black_box(self.sink);
        for _ in 0..n {
            x = x * 0.999_999_999 + 1e-9;
        }
        self.sink = std::hint::black_box(x);
    }

    /// Kernel iterations per second of this thread's processor time (the calibration must not
    /// count the time other ranks held the core): batches grown to at least 4 ms, then five
    /// more, timed together, as the C runtime's `sk_calibrate` (the fastest of five batches is
    /// above the rate the blocks then see: 1.5–3.6 % with 4 ranks on 2 cores).
    fn calibrate(&mut self) {
        let mut n: u64 = 1 << 14;
        loop {
            let a = cpu_time::ThreadTime::now();
            self.spin(n);
            let t = a.elapsed().as_secs_f64();
            if t >= 0.004 || n > 1 << 40 {
                break;
            }
            n *= 2;
        }
        let a = cpu_time::ThreadTime::now();
        for _ in 0..5 {
            self.spin(n);
        }
        let t = a.elapsed().as_secs_f64();
        if t > 0.0 {
            self.rate = 5.0 * n as f64 / t;
        }
    }

    /// `n` polls that find nothing (`MPI_Iprobe` of any source and tag): what the application's
    /// polling loop cost before the call that follows.
    pub fn polls(&mut self, world: &impl Communicator, n: u64) {
        for _ in 0..n {
            let _ = world.any_process().immediate_probe();
        }
    }

    /// A wait that had no request to complete in the application (`MPI_Waitall` over none, as
    /// the C skeleton's `sk_wait_none`): it costs what the application's did, where a probe in
    /// its place would be a poll the application never made.
    pub fn wait_none(&self) {
        // SAFETY: `MPI_REQUEST_NULL` is a constant of the MPI library; a count of zero reads no
        // request; statuses are ignored.
        unsafe {
            let mut none = [mpi::ffi::RSMPI_REQUEST_NULL];
            mpi::ffi::MPI_Waitall(0, none.as_mut_ptr(), mpi::ffi::RSMPI_STATUSES_IGNORE);
        }
    }

    /// Busy computation for `seconds` of the recording machine (times this rank's weight).
    pub fn compute(&mut self, seconds: f64) {
        self.run_for(seconds * self.weight * self.scale);
    }

    /// Busy computation for `seconds`, weight and scale already applied.
    fn run_for(&mut self, seconds: f64) {
        if let Some(i) = self.current.filter(|_| seconds > 0.0) {
            self.phases[i].ran += seconds;
        }
        if seconds > 0.0 {
            self.spin((seconds * self.rate + 0.5) as u64);
        }
    }

    /// [`Runtime::compute`] less `removed` seconds of the recording machine, which are not run:
    /// the time they would take here, at the pace the rest of the block ran, is added to the
    /// prediction of the phase being timed, per iteration run (the compute cut; every rank
    /// removes the same).
    pub fn compute_less(&mut self, seconds: f64, removed: f64) {
        self.compute_cut(seconds, removed, self.shrink, false);
    }

    /// [`Runtime::compute_less`] whose kept part always runs whole: at a block where the ranks
    /// of a class differ beyond their weights, the slowest rank here is not the slowest
    /// elsewhere, and each rank adding back its own shrunk part would lose the waiting for this
    /// block's slowest.
    pub fn compute_less_whole(&mut self, seconds: f64, removed: f64) {
        self.compute_cut(seconds, removed, 1.0, false);
    }

    /// The pace of this rank's timed kept parts over all phases (taken over asked seconds), or 1.
    fn pace(&self) -> f64 {
        let (asked, took) =
            self.phases.iter().fold((0.0, 0.0), |(a, t), p| (a + p.cut[1], t + p.cut[2]));
        if asked > 0.0 {
            took / asked
        } else {
            1.0
        }
    }

    /// A block right before a collective of every rank, in a phase that runs once: runs only a
    /// short part of it ([`KEEP_SHARE`] of this rank's duration, at least [`KEEP_MIN`]); at the
    /// report, every rank adds back to the phase the most that any rank skipped, at the pace
    /// its kept parts ran (every rank waited for the one that computed longest). Every class has
    /// the same phases when a skeleton uses it.
    pub fn compute_keep(&mut self, seconds: f64) {
        let s = seconds * self.weight * self.scale;
        let kept = (KEEP_SHARE * s).max(KEEP_MIN);
        let Some(i) = self.current.filter(|_| kept < s) else {
            self.run_for(s);
            return;
        };
        self.run_kept(i, kept, s - kept);
        self.phases[i].keep = true;
        self.keep_any = true;
    }

    /// Runs `seconds` less `removed`, and of that only `shrink`; adds what did not run to the
    /// phase's removed computation. With `clip`, a duration shorter than `removed` runs nothing
    /// and still adds `removed`: every rank adds the same, and what counts is the slowest
    /// rank's (see [`Runtime::compute_drawn_less`]).
    fn compute_cut(&mut self, seconds: f64, removed: f64, shrink: f64, clip: bool) {
        self.cut_run(seconds * self.weight, removed, shrink, clip);
    }

    /// [`Runtime::compute_cut`] of `seconds` that hold the rank's weight already.
    fn cut_run(&mut self, seconds: f64, removed: f64, shrink: f64, clip: bool) {
        let seconds = seconds * self.scale;
        let removed = removed * self.scale;
        let kept = if clip { (seconds - removed).max(0.0) } else { seconds - removed };
        let Some(i) = self.current.filter(|_| removed > 0.0 && (kept > 0.0 || clip)) else {
            self.run_for(seconds);
            return;
        };
        // Each rank's own part shrinks by the same share, its own seconds added back.
        let (removed, kept) = (removed + kept * (1.0 - shrink), kept * shrink);
        self.run_kept(i, kept, removed);
    }

    /// Runs the `kept` seconds of a cut block and adds them, with the `removed` seconds that do
    /// not run, to phase `i`.
    /// A part shorter than [`KEEP_MIN`] runs untimed (reading the clocks would cost a good
    /// share of it): what it skipped is priced at the pace of the phase's timed parts.
    fn run_kept(&mut self, i: usize, kept: f64, removed: f64) {
        if kept < KEEP_MIN {
            self.run_for(kept);
            self.phases[i].cut[0] += removed;
            return;
        }
        let (start, cpu) = (mpi::time(), cpu_time::ThreadTime::now());
        self.run_for(kept);
        let cut = &mut self.phases[i].cut;
        cut[0] += removed;
        cut[1] += kept;
        cut[2] += mpi::time() - start;
        cut[3] += cpu.elapsed().as_secs_f64();
    }

    /// Busy computation for a duration drawn from distribution `i` (inverse CDF, linear
    /// between quantiles).
    pub fn compute_drawn(&mut self, i: usize) {
        let x = self.draw(i);
        self.compute(x);
    }

    /// [`Runtime::compute_drawn`] less `removed` seconds, as [`Runtime::compute_less`]: every
    /// rank skips the same seconds and adds them back; a draw shorter than that runs nothing.
    /// The waiting at the next point where ranks meet is for the slowest rank, whose draw the
    /// build chose `removed` to stay under but for a bias it bounds (`removal.rs` of
    /// mpiskel-emit). A drawn block is not shrunk further: the ranks' random deviations make a
    /// different rank the slowest in each execution, and only the time each rank waits for that
    /// one would tell.
    pub fn compute_drawn_less(&mut self, i: usize, removed: f64) {
        let x = self.draw(i);
        self.compute_cut(x, removed, 1.0, true);
    }

    /// Busy computation for the next duration of replay table number `t` (`rows`: one row per
    /// execution, in order, then from row `again` on again, past the rows of a first iteration
    /// replayed apart; `column`: this rank's place in its class), seconds of the recording
    /// machine as this rank recorded them (its weight is in them already).
    pub fn compute_replayed<const C: usize>(
        &mut self,
        t: usize,
        rows: &[[f64; C]],
        again: usize,
        column: usize,
    ) {
        let x = self.replayed(t, rows, again, column);
        self.run_for(x * self.scale);
    }

    /// [`Runtime::compute_replayed`] less `removed` seconds, added back as
    /// [`Runtime::compute_drawn_less`] does: every rank skips the same seconds; a recorded
    /// duration shorter than that runs nothing.
    pub fn compute_replayed_less<const C: usize>(
        &mut self,
        t: usize,
        rows: &[[f64; C]],
        again: usize,
        column: usize,
        removed: f64,
    ) {
        let x = self.replayed(t, rows, again, column);
        self.cut_run(x, removed, 1.0, true);
    }

    /// The next value of replay table `t` for `column`.
    fn replayed<const C: usize>(
        &mut self,
        t: usize,
        rows: &[[f64; C]],
        again: usize,
        column: usize,
    ) -> f64 {
        if self.replay_at.len() <= t {
            self.replay_at.resize(t + 1, 0);
        }
        let mut at = self.replay_at[t];
        self.replay_at[t] += 1;
        if at >= rows.len() {
            let again = if again < rows.len() { again } else { 0 };
            at = again + (at - again) % (rows.len() - again).max(1);
        }
        rows.get(at).and_then(|r| r.get(column)).copied().unwrap_or(0.0)
    }

    /// [`Runtime::compute_drawn`] with the draw multiplied by `factor` (this rank's factor at a
    /// block where the ranks of its class compute differently).
    pub fn compute_drawn_scaled(&mut self, i: usize, factor: f64) {
        let x = self.draw(i);
        self.compute(x * factor);
    }

    /// [`Runtime::compute_keep`] of a duration drawn from distribution `i`: a block before a
    /// collective of every rank whose ranks' durations the build draws.
    pub fn compute_drawn_keep(&mut self, i: usize) {
        let x = self.draw(i);
        self.compute_keep(x);
    }

    /// [`Runtime::compute_drawn_keep`] with the draw multiplied by `factor`.
    pub fn compute_drawn_scaled_keep(&mut self, i: usize, factor: f64) {
        let x = self.draw(i);
        self.compute_keep(x * factor);
    }

    /// [`Runtime::compute_drawn_less`] with the draw multiplied by `factor`.
    pub fn compute_drawn_scaled_less(&mut self, i: usize, factor: f64, removed: f64) {
        let x = self.draw(i);
        self.compute_cut(x * factor, removed, 1.0, true);
    }

    /// A duration drawn from distribution `i`; 0 without it.
    fn draw(&mut self, i: usize) -> f64 {
        let Some(q) = self.dists.get(i).copied() else {
            return 0.0;
        };
        let u = self.uniform();
        let mut k = 0;
        while k < QUANTILES - 2 && u >= LEVELS[k + 1] {
            k += 1;
        }
        let f = (u - LEVELS[k]) / (LEVELS[k + 1] - LEVELS[k]);
        q[k] * (1.0 - f) + q[k + 1] * f
    }
}
