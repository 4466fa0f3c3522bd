//! A rank moved through its steps: each call expanded when reached, compute and messages
//! started, waits held until their requests complete, and the marks of phases and iterations
//! timed (where the fast-forward measures the main loop's pace and skips what it stands for).

use super::*;

impl Sim<'_> {
    /// Runs rank `r` until it blocks or ends.
    pub(super) fn advance(&mut self, r: usize) -> Result<()> {
        loop {
            if self.ranks[r].state != State::Ready {
                return Ok(());
            }
            let Some(step) = self.ranks[r].steps.pop_front() else {
                let traces = self.traces;
                let rs = &self.ranks[r];
                let t = &traces[r];
                if rs.next < t.events.len() {
                    let i = rs.next;
                    self.note_marks(r, i);
                    if self.at_boundary(r, i) {
                        continue;
                    }
                    self.ranks[r].next += 1;
                    self.expand(r, i)?;
                    continue;
                }
                if rs.next == t.events.len() && t.trailing_gap_ns > 0 {
                    self.ranks[r].next += 1;
                    let f = t.trailing_gap_ns as f64 * 1e-9 * self.opts.trace_speed;
                    self.ranks[r].steps.push_back(Step::Compute(f));
                    continue;
                }
                self.note_marks(r, usize::MAX);
                let rs = &mut self.ranks[r];
                rs.state = State::Done;
                rs.end = self.now;
                return Ok(());
            };
            match step {
                Step::Compute(flops) => {
                    if flops <= 0.0 {
                        continue;
                    }
                    let host = self.ranks[r].host;
                    let speed = self.platform.hosts[host].speed;
                    self.ranks[r].state = State::Blocked;
                    let act = Act {
                        kind: ActKind::Compute { rank: r as u32 },
                        remaining: flops,
                        factor: 1.0,
                        rate: 0.0,
                        last: self.now,
                        start: self.now,
                        penalty: 1.0,
                    };
                    self.new_act(&[(self.cpu_base + host, 1.0)], 1.0, speed, act, 0.0);
                    return Ok(());
                }
                Step::Sleep(seconds) => {
                    if seconds <= 0.0 {
                        continue;
                    }
                    self.ranks[r].state = State::Blocked;
                    let act = Act {
                        kind: ActKind::Timer { rank: r as u32 },
                        remaining: 0.0,
                        factor: 1.0,
                        rate: 0.0,
                        last: self.now,
                        start: self.now,
                        penalty: 0.0,
                    };
                    let v = self.system.add_var(&[], 0.0, f64::INFINITY);
                    if self.acts.len() <= v {
                        self.acts.resize(v + 1, None);
                    }
                    self.acts[v] = Some(act);
                    self.push_event(self.now + seconds, v, false);
                    return Ok(());
                }
                Step::Send { to, tag, ctx, bytes, req, sync } => {
                    self.post_send(r as u32, to, tag, ctx, bytes, req, sync);
                }
                Step::Recv { from, tag, ctx, req } => {
                    self.post_recv(r as u32, from, tag, ctx, req);
                }
                Step::Wait(reqs) => {
                    let mut n = 0;
                    for q in reqs {
                        let rq = &mut self.reqs[q as usize];
                        if !rq.done {
                            rq.waiter = r as u32;
                            n += 1;
                        }
                    }
                    if n > 0 {
                        let rs = &mut self.ranks[r];
                        rs.waiting = n;
                        rs.state = State::Blocked;
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Notes the time of rank `r`'s marks at calls up to `i` (all of them at its end).
    pub(super) fn note_marks(&mut self, r: usize, i: usize) {
        let Some(m) = self.marks.get(r) else { return };
        let rs = &mut self.ranks[r];
        while rs.mark < m.len() && m[rs.mark] <= i {
            self.mark_times[r].push(self.now);
            rs.mark += 1;
        }
    }

    /// Notes rank `r` starting an iteration of the main loop at call `i`; decides the jump once
    /// every rank has run the warm-up and the window, and makes it. True where the rank jumped
    /// (its next call and a wait are set).
    pub(super) fn at_boundary(&mut self, r: usize, i: usize) -> bool {
        let now = self.now;
        let Some(ff) = self.ff.as_mut() else { return false };
        if ff.refused.is_some() {
            return false;
        }
        let lp = ff.plan.loops[r];
        let Some(b) = lp.iteration_at(i) else { return false };
        if ff.arrivals[r].len() != b {
            return false;
        }
        if let Some((h, m, shift)) = ff.jump {
            if b == h {
                ff.arrivals[r].push(now);
                self.ranks[r].next = lp.iteration_start(b + m);
                self.ranks[r].steps.push_back(Step::Sleep(shift));
                return true;
            }
            ff.arrivals[r].push(now);
            return false;
        }
        ff.arrivals[r].push(now);
        let (warmup, window_len) = fastforward::window(ff.plan.iterations);
        let need = warmup + window_len + 1;
        if ff.arrivals.iter().any(|a| a.len() < need) {
            return false;
        }
        // Every rank has started the iteration after the window: the pace is known.
        let (w0, w1) = (warmup, warmup + window_len);
        let n = ff.arrivals.len() as f64;
        let pace = ff.arrivals.iter().map(|a| (a[w1] - a[w0]) / window_len as f64).sum::<f64>() / n;
        let h = ff.arrivals.iter().map(Vec::len).max().unwrap_or(0);
        let total = ff.plan.iterations;
        if h + 2 > total {
            ff.refused = Some(format!(
                "the main loop's {total} iterations are too few to measure a pace and skip any"
            ));
            return false;
        }
        let m = total - 1 - h;
        // The busiest host's computation per iteration, at this platform's speed: its ranks'
        // flops over its cores (one rank per host: the slowest rank's).
        let hosts = self.platform.hosts.len();
        let per_flop: Vec<f64> = (0..self.traces.len())
            .map(|r| match self.traces[r].events.first().and_then(|e| e.gap_work) {
                Some(Work::Flops(_)) => 1.0,
                _ => self.opts.trace_speed * 1e-9,
            })
            .collect();
        let critical = |it: usize| -> f64 {
            let mut load = vec![0.0f64; hosts];
            let mut most = vec![0.0f64; hosts];
            for (r, &host) in self.placement.iter().enumerate() {
                let t = ff.plan.flops[r][it] * per_flop[r] / self.platform.hosts[host].speed;
                load[host] += t;
                most[host] = most[host].max(t);
            }
            (0..hosts)
                .map(|h| (load[h] / f64::from(self.platform.hosts[h].cores.max(1))).max(most[h]))
                .fold(0.0, f64::max)
        };
        let window: f64 = (w0..w1).map(critical).sum::<f64>() / window_len as f64;
        let skipped: f64 = (h..h + m).map(critical).sum();
        let shift = (m as f64 * pace + skipped - m as f64 * window).max(0.0);
        ff.pace = pace;
        ff.jump = Some((h, m, shift));
        false
    }
}
