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
//! The generator, the C runtime and this file agree on every constant: the same kernel, the same
//! calibration, the same random generator seeded by rank, the same report.

// Every skeleton ships the whole runtime and uses the part its program needs.
#![allow(dead_code)]

use std::io::Write as _;

use bumpalo::Bump;
use mpi::collective::SystemOperation;
use mpi::request::{LocalScope, Request, StaticScope};
use mpi::topology::{CartesianCommunicator, Rank};
use mpi::traits::*;

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

    /// Synchronises all ranks and starts the clock.
    pub fn start(&mut self, world: &impl Communicator, phases: &[Phase]) {
        self.phases = phases.to_vec();
        world.barrier();
        self.t0 = mpi::time();
    }

    /// Iterations phase `i` runs.
    pub fn run_of(&self, i: usize) -> i64 {
        self.phases[i].run
    }

    /// Starts timing phase `i`.
    pub fn phase_begin(&mut self, i: usize) {
        self.current = Some(i);
        self.begun = mpi::time();
        let p = &self.phases[i];
        if p.parent.is_none() && p.name == "main_loop" && self.main_entry.is_none() {
            self.main_entry = Some(self.begun - self.t0);
        }
    }

    /// Stops timing phase `i`.
    pub fn phase_end(&mut self, i: usize) {
        self.phases[i].seconds += mpi::time() - self.begun;
        self.current = None;
    }

    /// Ends iteration `it` of the phase being timed: the first one's time is kept, to be counted
    /// once (it absorbs the ranks' different arrival at the loop, which the application waited
    /// for once, not in every iteration).
    pub fn iteration_end(&mut self, it: i64) {
        if it == 0 {
            if let Some(i) = self.current {
                let t = mpi::time() - self.begun;
                self.phases[i].first.get_or_insert(t);
            }
        }
    }

    /// Begins a part of the phase being timed that is timed as a phase of its own (a kind of
    /// time step, a cut inner loop): marks the computation run and cut so far, which
    /// [`Runtime::phase_add`] moves to the part's phase, whose iterations scale it. Returns
    /// the time.
    pub fn part_begin(&mut self) -> f64 {
        let mark = self.current.map(|c| {
            let p = &self.phases[c];
            (p.ran, p.cut)
        });
        self.parts.push(mark);
        mpi::time()
    }

    /// Adds seconds to phase `i` (the part begun last, timed inside its phase), and moves the
    /// computation the part ran and cut to phase `i`.
    pub fn phase_add(&mut self, i: usize, seconds: f64) {
        self.phases[i].seconds += seconds;
        let Some(Some((ran, cut))) = self.parts.pop() else { return };
        let Some(c) = self.current.filter(|&c| c != i) else { return };
        let d = self.phases[c].ran - ran;
        self.phases[c].ran -= d;
        self.phases[i].ran += d;
        for (k, mark) in cut.iter().enumerate() {
            let d = self.phases[c].cut[k] - mark;
            self.phases[c].cut[k] -= d;
            self.phases[i].cut[k] += d;
        }
    }

    /// Adds the seconds of an inner loop's first iteration (timed inside its phase) to phase
    /// `i`'s first: the loop around it ran it once per iteration, and so did the application.
    pub fn inner_first(&mut self, i: usize, seconds: f64) {
        *self.phases[i].first.get_or_insert(0.0) += seconds;
    }

    /// Predicted application seconds of phase `i`: its own time (less its timed inner loops)
    /// plus the removed computation at the pace of the part that ran, scaled by its iterations;
    /// plus each inner loop's time scaled by the inner loop's. A cut loop without timed inner
    /// loops that ran two iterations or more counts its first iteration once and scales the
    /// others where the first replays the application's first (its compute blocks replay it)
    /// or is over [`FIRST_LONGER`] times the mean of the others: the first waited for the ranks
    /// that reached the loop last, which the application did once.
    fn predicted(&self, i: usize) -> f64 {
        self.predicted_unscaled(i) * self.phases[i].stretch
    }

    /// [`Runtime::predicted`] without the phase's [`Phase::stretch`].
    fn predicted_unscaled(&self, i: usize) -> f64 {
        let pace = self.pace();
        let p = &self.phases[i];
        let (mut own, mut inner, mut children) = (p.seconds, 0.0, 0);
        for (j, q) in self.phases.iter().enumerate() {
            if q.parent == Some(i) {
                own -= q.seconds;
                inner += self.predicted(j);
                children += 1;
            }
        }
        if p.run <= 0 {
            return inner;
        }
        let scale = p.full as f64 / p.run as f64;
        // A cut inner loop: each iteration of the loop around it began it once in the
        // application too, so its first iterations count once per outer iteration and the rest
        // are scaled. A first inner iteration waits where the others do not — a pipelined
        // sweep's fill, until the wave reaches the rank — and scaled with the rest, that wait
        // would count as often as the iterations cut (NPB LU S on 16 ranks at 10 µs links).
        if let (Some(o), Some(first)) = (p.parent.map(|o| &self.phases[o]), p.first) {
            if children == 0 && o.run > 0 && p.run >= 2 * o.run && p.full > p.run {
                let others = (own - first) / (p.run - o.run) as f64;
                return first * o.full as f64 / o.run as f64
                    + others * (p.full - o.full) as f64
                    + p.restored(pace) * scale;
            }
        }
        let predicted = match p.first {
            Some(first) if children == 0 && p.parent.is_none() && p.run >= 2 && p.full > p.run => {
                let others = (own - first) / (p.run - 1) as f64;
                if p.first_apart || first > FIRST_LONGER * others {
                    return first + others * (p.full - 1) as f64 + p.restored(pace) * scale;
                }
                (own + p.restored(pace)) * scale
            }
            _ => (own + p.restored(pace)) * scale + inner,
        };
        // A rank that reached the main loop before the last one waited for it in the iterations
        // it ran, as the application did once, in its first: that wait is counted once, not
        // scaled (the panels of an LU factorization start where the longest set-up ends). The
        // last rank to arrive keeps its whole time, and the prediction is the slowest rank's.
        match self.main_entry {
            Some(entry)
                if p.parent.is_none()
                    && p.name == "main_loop"
                    && p.full > p.run
                    && self.main_latest > entry =>
            {
                let wait = (self.main_latest - entry).min(p.seconds / p.run as f64);
                predicted - wait * (scale - 1.0)
            }
            _ => predicted,
        }
    }

    /// Seconds this rank adds to its prediction where the compute blocks are processor time
    /// ([`Runtime::set_processor_time`]) and its node holds more ranks than processors (the union
    /// of their CPU affinities, or a cgroup's quota): the application's computation on the node could not
    /// have run faster than its processors allow.
    /// - Each rank restores the computation it did not run at the pace its kept parts ran;
    ///   those parts are short and run between messages, mostly while the other ranks
    ///   communicate, so they are not descheduled as the application's whole blocks were (a
    ///   task farm of three workers and a master on two cores: every worker restores at pace
    ///   1.0, and the prediction misses the 40 % the workers lost to each other). The removed
    ///   processor seconds of the node's ranks take at least their sum over the processors: a
    ///   rank that restores less is raised to that.
    /// - A loop's sampled iterations can meet fewer ranks computing at once than the
    ///   application's steady state did: all the computation the prediction stands for, run
    ///   and removed, in the application's iterations, takes at least the node's sum over its
    ///   processors, and the prediction is raised to that.
    fn cores_floor(&mut self, world: &impl Communicator, by_phase: f64) -> f64 {
        if !self.processor_time {
            return 0.0;
        }
        let (mut mine, mut restored, pace) = ([0.0f64; 2], 0.0, self.pace());
        for p in self.phases.iter().filter(|p| p.run > 0) {
            let scale = p.full as f64 / p.run as f64 * p.stretch;
            mine[0] += p.ran * self.cpu_per_asked * scale;
            if p.cut[0] > 0.0 {
                let cpu_per_s = if p.cut[1] > 0.0 { p.cut[3] / p.cut[1] } else { self.cpu_per_asked };
                mine[1] += p.cut[0] * cpu_per_s * scale;
                restored += p.restored(pace) * scale;
            }
        }
        let node = world.split_shared(0);
        let least = cores(&node);
        let mut sum = [0.0f64; 2];
        node.all_reduce_into(&mine[..], &mut sum[..], SystemOperation::sum());
        self.node = (node.size(), least, sum[0], sum[1]);
        if f64::from(node.size()) <= least {
            return 0.0;
        }
        let extra = (sum[1] / least - restored).max(0.0);
        extra + ((sum[0] + sum[1]) / least - (by_phase + extra)).max(0.0)
    }

    /// Phases where blocks ran only a short part on every rank ([`Runtime::compute_keep`])
    /// restore, on every rank, the most any rank restores there. Every rank takes part.
    fn gather_keep(&mut self, world: &impl Communicator) {
        let mut any = 0i32;
        world.all_reduce_into(&i32::from(self.keep_any), &mut any, SystemOperation::max());
        if any == 0 || self.phases.is_empty() {
            return;
        }
        let n = self.keep_slots.as_ref().map_or(self.phases.len(), |s| s.1);
        let slot = |i: usize| self.keep_slots.as_ref().map_or(i, |s| s.0[i]);
        let (mut mine, pace) = (vec![0.0f64; n], self.pace());
        for (i, p) in self.phases.iter().enumerate() {
            if p.keep {
                let at = slot(i);
                mine[at] = mine[at].max(p.restored(pace));
            }
        }
        let mut most = vec![0.0f64; n];
        world.all_reduce_into(&mine[..], &mut most[..], SystemOperation::max());
        let slots: Vec<usize> = (0..self.phases.len()).map(slot).collect();
        for (p, at) in self.phases.iter_mut().zip(slots) {
            let m = most[at];
            if m > 0.0 {
                p.keep = true;
                p.keep_most = Some(m);
            }
        }
    }

    /// Where the classes have different phases: the slot of each of this class's phases among
    /// all classes' phase names, `n` slots in all; [`Runtime::compute_keep`]'s phases are
    /// gathered by slot.
    pub fn keep_slots(&mut self, slots: &[usize], n: usize) {
        if slots.len() == self.phases.len() && slots.iter().all(|&s| s < n) {
            self.keep_slots = Some((slots.to_vec(), n));
        }
    }

    /// Gathers the times and prints the report on rank 0. `factor`: application time /
    /// skeleton time expected on the recording machine (the single-ratio prediction).
    pub fn report(&mut self, world: &impl Communicator, name: &str, factor: f64, recorded_app_s: f64) {
        let total = mpi::time() - self.t0;
        wait_for_all(world);
        let mut latest = -1.0;
        world.all_reduce_into(&self.main_entry.unwrap_or(-1.0), &mut latest, SystemOperation::max());
        self.main_latest = latest;
        self.gather_keep(world);
        let top = || (0..self.phases.len()).filter(|&i| self.phases[i].parent.is_none());
        let mut by_phase: f64 = top().map(|i| self.predicted(i)).sum();
        // A skipped warm-up iteration ran, in the application, before ranks met again (a
        // barrier, a norm): it cost every rank the slowest rank's iteration.
        let warm: f64 = top()
            .filter(|&i| self.phases[i].warmup > 0 && self.phases[i].full > 0)
            .map(|i| {
                let p = &self.phases[i];
                p.warmup as f64 * self.predicted(i) / p.full as f64
            })
            .sum();
        let mut warm_most = 0.0;
        world.all_reduce_into(&warm, &mut warm_most, SystemOperation::max());
        by_phase += warm_most;
        by_phase += self.cores_floor(world, by_phase);
        let mine = [total, by_phase];
        let root = world.process_at_rank(0);
        if world.rank() != 0 {
            root.reduce_into(&mine[..], SystemOperation::max());
            return;
        }
        let mut most = [0.0; 2];
        root.reduce_into_root(&mine[..], &mut most[..], SystemOperation::max());
        let ratio = most[0] * factor;
        println!(
            "mpiskel {name}: skeleton {} s on {} ranks; predicted application time {} s (by phase), {} s (x{}); recorded {} s",
            g(most[0], 6),
            world.size(),
            g(most[1], 6),
            g(ratio, 6),
            g(factor, 4),
            g(recorded_app_s, 6)
        );
        let pace = self.pace();
        let phases: Vec<String> = self
            .phases
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let warm = if p.warmup > 0 && p.parent.is_none() { warm_most } else { 0.0 };
                format!(
                    "{{\"name\":\"{}\",\"full\":{},\"run\":{},\"warmup\":{},\"seconds\":{},\"restored_s\":{},\"predicted_s\":{}}}",
                    p.name,
                    p.full,
                    p.run,
                    p.warmup,
                    g(p.seconds, 9),
                    g(p.restored(pace), 9),
                    g(self.predicted(i) + warm, 9)
                )
            })
            .collect();
        // Rank 0's node, where the prediction was held to its processors' capacity.
        let node = match self.node {
            (0, ..) => String::new(),
            (ranks, cores, computed, removed) => format!(
                "\"node\":{{\"ranks\":{ranks},\"cores\":{},\"computed_s\":{},\"removed_s\":{}}},",
                g(cores, 6),
                g(computed, 9),
                g(removed, 9)
            ),
        };
        let json = format!(
            "{{\"kind\":\"mpiskel-skeleton-run\",\"skeleton\":\"{name}\",\"ranks\":{},\"skeleton_s\":{},\"predicted_s\":{},\"predicted_ratio_s\":{},\"factor\":{},\"recorded_app_s\":{},\"smpi\":false,\"compute_rate\":{},{}\"phases\":[{}]}}",
            world.size(),
            g(most[0], 9),
            g(most[1], 9),
            g(ratio, 9),
            g(factor, 9),
            g(recorded_app_s, 9),
            g(self.rate, 6),
            node,
            phases.join(",")
        );
        println!("MPISKEL_REPORT {json}");
        let _ = std::io::stdout().flush();
        if let Some(path) = &self.report_file {
            if let Err(e) = std::fs::write(path, json + "\n") {
                eprintln!("mpiskel: cannot write the report to {path}: {e}");
            }
        }
    }
}

/// `x` with `digits` significant digits, as C's `%.{digits}g` prints it (without exponent
/// for ordinary magnitudes).
fn g(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x.is_finite() { "0".into() } else { "null".into() };
    }
    let exp = x.abs().log10().floor() as i32;
    if exp < -4 || exp >= digits as i32 {
        let s = format!("{:.*e}", digits - 1, x);
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
        return format!("{m}e{e}");
    }
    let decimals = (digits as i32 - 1 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// The receive buffer of the blocking calls: doubles, seen as bytes too (as the C skeleton's
/// one `rbuf` serves both), so that the skeleton touches as much memory as the C one.
#[derive(Debug)]
pub struct Buffers {
    data: Vec<f64>,
}

impl Buffers {
    /// A buffer of at least `bytes` bytes, written now, as the C skeleton's memset does: zeroed
    /// memory would only be mapped at its first use, inside a timed phase.
    pub fn new(bytes: usize) -> Buffers {
        Buffers { data: vec![1.0; bytes.div_ceil(8)] }
    }

    /// The buffer's bytes.
    pub fn recv(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.data)
    }

    /// The buffer's doubles.
    pub fn reals(&mut self) -> &mut [f64] {
        &mut self.data
    }

    /// The buffer's four-byte words.
    pub fn words(&mut self) -> &mut [u32] {
        bytemuck::cast_slice_mut(&mut self.data)
    }
}

/// Where non-blocking calls get their receive buffers. Each request slot has a buffer of its
/// own, kept from scope to scope, that a receive in that slot uses the first time the slot is
/// started within a scope; later starts of the slot in the same scope (and collectives) take a
/// fresh buffer from a bump arena, all released together ([`reset`]) once the scope has ended.
#[derive(Debug)]
pub struct Pool {
    bump: Bump,
    slots: Vec<Vec<u8>>,
}

impl Pool {
    /// A pool whose slot `k` has a buffer of `slot_bytes[k]` bytes (written now, outside any
    /// timed phase).
    pub fn new(slot_bytes: &[usize]) -> Pool {
        Pool { bump: Bump::new(), slots: slot_bytes.iter().map(|&n| vec![1; n]).collect() }
    }
}

/// Processors the ranks of `node` may run on: the union of their CPU affinities (each rank may
/// be bound to a core of its own: its mask alone would count one; read from `Cpus_allowed` in
/// `/proc/self/status`), less the least CPU quota of their cgroups and the cgroups' parents
/// (cgroup v2's `cpu.max`, v1's `cpu.cfs_quota_us` over `cpu.cfs_period_us`), which may be a
/// fraction of one.
fn cores(node: &impl Communicator) -> f64 {
    const WORDS: usize = 16;
    let mut mine = [0u64; WORDS];
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(mask) = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed:")) {
        // Comma-separated 32-bit words in hex, the most significant first.
        let words: Vec<u64> =
            mask.trim().split(',').filter_map(|w| u64::from_str_radix(w, 16).ok()).collect();
        for (k, w) in words.iter().rev().enumerate().filter(|(k, _)| k / 2 < WORDS) {
            mine[k / 2] |= w << (32 * (k % 2));
        }
    }
    let mut all = [0u64; WORDS];
    node.all_reduce_into(&mine[..], &mut all[..], SystemOperation::bitwise_or());
    let mut cores = all.iter().map(|w| w.count_ones()).sum::<u32>() as f64;
    if cores <= 0.0 {
        cores = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
    }
    let quota = quota().unwrap_or(cores);
    let mut least = 0.0;
    node.all_reduce_into(&quota, &mut least, SystemOperation::min());
    cores.min(least).max(1e-3)
}

/// The least CPU quota, in processors, of this process's cgroups and their parents.
fn quota() -> Option<f64> {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
    let quota_in = |dir: &std::path::Path| -> Option<f64> {
        if let Some(max) = read(dir.join("cpu.max")) {
            let mut f = max.split_whitespace();
            let (q, p) = (f.next()?.parse::<f64>().ok()?, f.next()?.parse::<f64>().ok()?);
            return (q > 0.0 && p > 0.0).then(|| q / p);
        }
        let q: f64 = read(dir.join("cpu.cfs_quota_us"))?.trim().parse().ok()?;
        let p: f64 = read(dir.join("cpu.cfs_period_us"))?.trim().parse().ok()?;
        (q > 0.0 && p > 0.0).then(|| q / p)
    };
    let mut least: Option<f64> = None;
    for line in read("/proc/self/cgroup".into())?.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctrl, at) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or("/"));
        let roots: &[&str] = if ctrl.is_empty() {
            &["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        } else if ctrl.split(',').any(|c| c == "cpu") {
            &["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"]
        } else {
            continue;
        };
        for root in roots {
            let root = std::path::Path::new(root);
            let mut dir = root.join(at.trim_start_matches('/'));
            loop {
                if let Some(q) = quota_in(&dir) {
                    least = Some(least.map_or(q, |l: f64| l.min(q)));
                }
                if dir == root || !dir.pop() || !dir.starts_with(root) {
                    break;
                }
            }
        }
    }
    least
}

/// Gives the pool's arena one chunk of `bytes` bytes, written once, so that the scope using it
/// neither allocates nor maps fresh pages while it is timed.
pub fn reserve(pool: &mut Pool, bytes: usize) {
    pool.bump = Bump::with_capacity(bytes);
    pool.bump.alloc_slice_fill_copy(bytes, 1u8);
    pool.bump.reset();
}

/// Empties the pool for the next scope, keeping its memory: a pool that needed several chunks
/// is replaced by one chunk as large, so that a loop's scopes stop allocating (and faulting in
/// fresh pages) after the first iteration.
pub fn reset(pool: &mut Pool) {
    let used = pool.bump.allocated_bytes();
    pool.bump.reset();
    if pool.bump.allocated_bytes() < used {
        pool.bump = Bump::with_capacity(used);
    }
}

/// A started non-blocking call.
#[derive(Debug)]
pub enum Pending<'p, 's> {
    /// On bytes (point-to-point, broadcasts, gathers …).
    Bytes(Request<'p, [u8], &'s LocalScope<'p>>),
    /// On doubles (reductions).
    Reals(Request<'p, [f64], &'s LocalScope<'p>>),
    /// On four-byte words (reductions).
    Words(Request<'p, [u32], &'s LocalScope<'p>>),
    /// A barrier.
    Barrier(Request<'static, (), StaticScope>),
}

impl<'p, 's> From<Request<'p, [u8], &'s LocalScope<'p>>> for Pending<'p, 's> {
    fn from(r: Request<'p, [u8], &'s LocalScope<'p>>) -> Self {
        Pending::Bytes(r)
    }
}

impl<'p, 's> From<Request<'p, [f64], &'s LocalScope<'p>>> for Pending<'p, 's> {
    fn from(r: Request<'p, [f64], &'s LocalScope<'p>>) -> Self {
        Pending::Reals(r)
    }
}

impl<'p, 's> From<Request<'p, [u32], &'s LocalScope<'p>>> for Pending<'p, 's> {
    fn from(r: Request<'p, [u32], &'s LocalScope<'p>>) -> Self {
        Pending::Words(r)
    }
}

impl From<Request<'static, ()>> for Pending<'_, '_> {
    fn from(r: Request<'static, ()>) -> Self {
        Pending::Barrier(r)
    }
}

impl Pending<'_, '_> {
    /// Completes the request if it is done; gives it back otherwise.
    fn test(self) -> Result<(), Self> {
        match self {
            Pending::Bytes(r) => r.test().map(drop).map_err(Pending::Bytes),
            Pending::Reals(r) => r.test().map(drop).map_err(Pending::Reals),
            Pending::Words(r) => r.test().map(drop).map_err(Pending::Words),
            Pending::Barrier(r) => r.test().map(drop).map_err(Pending::Barrier),
        }
    }

    fn wait(self) {
        match self {
            Pending::Bytes(r) => r.wait_without_status(),
            Pending::Reals(r) => r.wait_without_status(),
            Pending::Words(r) => r.wait_without_status(),
            Pending::Barrier(r) => r.wait_without_status(),
        }
    }

    /// The raw request, taken out of its scope's count.
    ///
    /// # Safety
    /// The request must be completed (`MPI_Wait…`) before its buffer's lifetime `'p` ends.
    unsafe fn into_raw(self) -> mpi::ffi::MPI_Request {
        match self {
            Pending::Bytes(r) => r.into_raw().0,
            Pending::Reals(r) => r.into_raw().0,
            Pending::Words(r) => r.into_raw().0,
            Pending::Barrier(r) => r.into_raw().0,
        }
    }
}

/// The request slots of one scope: slot `k` holds the request of the `k`-th non-blocking call
/// of the program (as `req[k]` in the C skeleton). An empty slot is `MPI_REQUEST_NULL`.
#[derive(Debug)]
pub struct Requests<'p, 's> {
    scope: &'s LocalScope<'p>,
    pool: &'p Bump,
    /// Each slot's own receive buffer, until a receive in the slot takes it.
    own: Vec<Option<&'p mut [u8]>>,
    slots: Vec<Option<Pending<'p, 's>>>,
}

/// Runs `f` with `n` empty request slots whose receive buffers come from `pool`; every request
/// still pending when `f` returns is waited for. Call [`reset`] afterwards to reuse the pool.
pub fn scoped<'p, R>(pool: &'p mut Pool, n: usize, f: impl for<'s> FnOnce(&mut Requests<'p, 's>) -> R) -> R {
    let Pool { bump, slots } = pool;
    let bump: &'p Bump = bump;
    let own = slots.iter_mut().map(|b| Some(b.as_mut_slice())).collect();
    mpi::request::scope(|scope: &LocalScope<'p>| {
        let mut req = Requests { scope, pool: bump, own, slots: (0..n).map(|_| None).collect() };
        let r = f(&mut req);
        for p in req.slots.drain(..).flatten() {
            p.wait();
        }
        r
    })
}

impl<'p, 's> Requests<'p, 's> {
    /// The scope requests are registered with.
    pub fn scope(&self) -> &'s LocalScope<'p> {
        self.scope
    }

    /// The receive buffer of `n` bytes for a receive in slot `k`: the slot's own the first time
    /// in this scope, a fresh one after.
    pub fn recv_buf(&mut self, k: usize, n: usize) -> &'p mut [u8] {
        match self.own.get_mut(k).and_then(Option::take) {
            Some(b) if b.len() >= n => &mut b[..n],
            _ => self.fresh(n),
        }
    }

    /// A fresh receive buffer of `n` bytes.
    pub fn bytes(&self, n: usize) -> &'p mut [u8] {
        self.fresh(n)
    }

    /// A fresh receive buffer of `n` doubles.
    pub fn reals(&self, n: usize) -> &'p mut [f64] {
        self.fresh(n)
    }

    /// A fresh receive buffer of `n` four-byte words.
    pub fn words(&self, n: usize) -> &'p mut [u32] {
        self.fresh(n)
    }

    /// A fresh receive buffer of `n` elements.
    pub fn fresh<T: Copy + Default>(&self, n: usize) -> &'p mut [T] {
        self.pool.alloc_slice_fill_copy(n, T::default())
    }

    /// Keeps request `r` in slot `k`; a request still pending there is waited for first.
    pub fn put(&mut self, k: usize, r: impl Into<Pending<'p, 's>>) {
        if let Some(old) = self.slots[k].take() {
            old.wait();
        }
        self.slots[k] = Some(r.into());
    }

    /// Waits for the requests in `slots` together, with one `MPI_Waitall` as the C skeleton
    /// does (rsmpi's request collections hold requests on one buffer type only, so the raw
    /// requests are passed to MPI directly).
    pub fn wait(&mut self, slots: &[usize]) {
        let mut raw: Vec<mpi::ffi::MPI_Request> =
            slots.iter().filter_map(|&k| self.slots[k].take())
                // SAFETY: `MPI_Waitall` below completes every request before this returns, while
                // their buffers (borrowed for `'p`) are alive.
                .map(|p| unsafe { p.into_raw() })
                .collect();
        match raw.len() {
            0 => {}
            n => {
                let n = i32::try_from(n).expect("fewer requests than i32::MAX");
                // SAFETY: `raw` holds `n` valid requests; statuses are ignored.
                unsafe {
                    mpi::ffi::MPI_Waitall(n, raw.as_mut_ptr(), mpi::ffi::RSMPI_STATUSES_IGNORE);
                }
            }
        }
    }

    /// Waits for any one of the requests in `slots` (`MPI_Waitany` in the C skeleton; rsmpi's
    /// `wait_any` needs requests on sized buffers, so this tests them in turn until one is done).
    pub fn wait_any(&mut self, slots: &[usize]) {
        while slots.iter().any(|&k| self.slots[k].is_some()) {
            for &k in slots {
                if let Some(p) = self.slots[k].take() {
                    match p.test() {
                        Ok(()) => return,
                        Err(p) => self.slots[k] = Some(p),
                    }
                }
            }
        }
    }

    /// Waits until at least one of the requests in `slots` completes, and collects every one
    /// that has (`MPI_Waitsome`).
    pub fn wait_some(&mut self, slots: &[usize]) {
        self.wait_any(slots);
        for &k in slots {
            if let Some(p) = self.slots[k].take() {
                if let Err(p) = p.test() {
                    self.slots[k] = Some(p);
                }
            }
        }
    }
}

/// `MPI_Reduce` of `send` (sum) onto `root` of `comm`.
pub fn reduce<T: Equivalence>(comm: &impl Communicator, root: Rank, send: &[T], recv: &mut [T]) {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        p.reduce_into_root(send, recv, SystemOperation::sum());
    } else {
        p.reduce_into(send, SystemOperation::sum());
    }
}

/// `MPI_Gather` of `send` to `root` of `comm` (into the first `send.len()` × members bytes of
/// `recv`).
pub fn gather(comm: &impl Communicator, root: Rank, send: &[u8], recv: &mut [u8]) {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        let all = send.len() * comm.size() as usize;
        p.gather_into_root(send, &mut recv[..all]);
    } else {
        p.gather_into(send);
    }
}

/// `MPI_Scatter` of `recv.len()` bytes per member from `root` of `comm` (out of the first
/// `recv.len()` × members bytes of `send`).
pub fn scatter(comm: &impl Communicator, root: Rank, send: &[u8], recv: &mut [u8]) {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        let all = recv.len() * comm.size() as usize;
        p.scatter_into_root(&send[..all], recv);
    } else {
        p.scatter_into(recv);
    }
}

/// `MPI_Allgather` of `send` over `comm`.
pub fn all_gather(comm: &impl Communicator, send: &[u8], recv: &mut [u8]) {
    let n = send.len() * comm.size() as usize;
    comm.all_gather_into(send, &mut recv[..n]);
}

/// `MPI_Alltoall` of `n` bytes per member over `comm`.
pub fn all_to_all(comm: &impl Communicator, n: usize, send: &[u8], recv: &mut [u8]) {
    let all = n * comm.size() as usize;
    comm.all_to_all_into(&send[..all], &mut recv[..all]);
}

/// `MPI_Reduce_scatter_block` (sum) of `n` elements per member over `comm`.
pub fn reduce_scatter_block<T: Equivalence>(comm: &impl Communicator, n: usize, send: &[T], recv: &mut [T]) {
    comm.reduce_scatter_block_into(&send[..n * comm.size() as usize], &mut recv[..n], SystemOperation::sum());
}

/// `MPI_Sendrecv`; a missing side (toward `MPI_PROC_NULL`) leaves the other half alone.
pub fn sendrecv<D: Destination, S: Source>(
    to: Option<D>,
    send: &[u8],
    send_tag: mpi::Tag,
    from: Option<S>,
    recv: &mut [u8],
    recv_tag: mpi::Tag,
) {
    match (to, from) {
        (Some(to), Some(from)) => {
            mpi::point_to_point::send_receive_into_with_tags(send, &to, send_tag, recv, &from, recv_tag);
        }
        (Some(to), None) => to.send_with_tag(send, send_tag),
        (None, Some(from)) => {
            from.receive_into_with_tag(recv, recv_tag);
        }
        (None, None) => {}
    }
}

/// `MPI_Ireduce` of `send` (sum) onto `root` of `comm`, into a fresh buffer on the root.
pub fn ireduce<'p, 's, T>(req: &Requests<'p, 's>, comm: &impl Communicator, root: Rank, send: &'p [T]) -> Pending<'p, 's>
where
    T: Equivalence + Copy + Default,
    Request<'p, [T], &'s LocalScope<'p>>: Into<Pending<'p, 's>>,
{
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        p.immediate_reduce_into_root(req.scope(), send, req.fresh(send.len()), SystemOperation::sum()).into()
    } else {
        p.immediate_reduce_into(req.scope(), send, SystemOperation::sum()).into()
    }
}

/// `MPI_Igather` of `send` to `root` of `comm`.
pub fn igather<'p, 's>(req: &Requests<'p, 's>, comm: &impl Communicator, root: Rank, send: &'p [u8]) -> Pending<'p, 's> {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        let recv = req.bytes(send.len() * comm.size() as usize);
        p.immediate_gather_into_root(req.scope(), send, recv).into()
    } else {
        p.immediate_gather_into(req.scope(), send).into()
    }
}

/// `MPI_Iscatter` of `n` bytes per member from `root` of `comm`.
pub fn iscatter<'p, 's>(
    req: &Requests<'p, 's>,
    comm: &impl Communicator,
    root: Rank,
    send: &'p [u8],
    n: usize,
) -> Pending<'p, 's> {
    let p = comm.process_at_rank(root);
    if comm.rank() == root {
        p.immediate_scatter_into_root(req.scope(), &send[..n * comm.size() as usize], req.bytes(n)).into()
    } else {
        p.immediate_scatter_into(req.scope(), req.bytes(n)).into()
    }
}

/// `MPI_Iallgather` of `send` over `comm`.
pub fn iall_gather<'p, 's>(req: &Requests<'p, 's>, comm: &impl Communicator, send: &'p [u8]) -> Pending<'p, 's> {
    let recv = req.bytes(send.len() * comm.size() as usize);
    comm.immediate_all_gather_into(req.scope(), send, recv).into()
}

/// `MPI_Ialltoall` of `n` bytes per member over `comm`.
pub fn iall_to_all<'p, 's>(req: &Requests<'p, 's>, comm: &impl Communicator, send: &'p [u8], n: usize) -> Pending<'p, 's> {
    let all = n * comm.size() as usize;
    comm.immediate_all_to_all_into(req.scope(), &send[..all], req.bytes(all)).into()
}

/// `MPI_Ireduce_scatter_block` (sum) of `n` elements per member over `comm`.
pub fn ireduce_scatter_block<'p, 's, T>(
    req: &Requests<'p, 's>,
    comm: &impl Communicator,
    send: &'p [T],
    n: usize,
) -> Pending<'p, 's>
where
    T: Equivalence + Copy + Default,
    Request<'p, [T], &'s LocalScope<'p>>: Into<Pending<'p, 's>>,
{
    let all = n * comm.size() as usize;
    comm.immediate_reduce_scatter_block_into(req.scope(), &send[..all], req.fresh(n), SystemOperation::sum()).into()
}

/// The rank at `offset` from this one in the Cartesian grid (`None` past an open edge).
pub fn cart_neighbour(cart: &CartesianCommunicator, offset: &[i32]) -> Option<Rank> {
    let layout = cart.get_layout();
    let mut coords = layout.coords.clone();
    for (k, c) in coords.iter_mut().enumerate() {
        let mut x = *c + offset[k];
        let d = layout.dims[k];
        if x < 0 || x >= d {
            if !layout.periods[k] {
                return None;
            }
            x = x.rem_euclid(d);
        }
        *c = x;
    }
    Some(cart.coordinates_to_rank(&coords))
}

/// Waits until every rank has finished its program, without taking the processor: a rank that
/// finishes early would otherwise poll in the report's first reduction, and where ranks
/// outnumber cores take the cores from the ranks still running; in the application it was in
/// `MPI_Finalize`, where Open MPI waits by sleeping between polls.
fn wait_for_all(world: &impl Communicator) {
    let mut pending = world.immediate_barrier();
    loop {
        match pending.test() {
            Ok(_) => return,
            Err(p) => pending = p,
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}
