//! The phases' timing, the prediction of the application's time from them, and the report.

use std::io::Write as _;

use mpi::collective::SystemOperation;
use mpi::traits::*;

use super::{Phase, Runtime, FIRST_LONGER};

impl Runtime {
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
