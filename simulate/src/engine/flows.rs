//! Messages as the simulator moves them: a send or receive posted and matched (MPI's
//! non-overtaking order per source, tag and context), and a matched message started as a flow
//! over its route, latency first.

use super::*;

impl Sim<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn post_send(
        &mut self,
        src: u32,
        dst: u32,
        tag: i64,
        ctx: u32,
        bytes: u64,
        req: u32,
        sync: bool,
    ) {
        let eager = !sync && bytes < self.opts.model.eager_threshold;
        if eager {
            self.complete(req);
        }
        let q = self.queues.entry((dst, ctx)).or_default();
        match q.match_send(src, tag) {
            Some(p) => self.start_flow(src, dst, bytes, p.req, if eager { NONE } else { req }),
            None => {
                q.posted += 1;
                let s = PendingSend { src, tag, bytes, req, sync: !eager };
                q.sends.entry(src).or_default().push_back((q.posted, s));
            }
        }
    }

    pub(super) fn post_recv(
        &mut self,
        me: u32,
        from: Option<u32>,
        tag: Option<i64>,
        ctx: u32,
        req: u32,
    ) {
        let q = self.queues.entry((me, ctx)).or_default();
        match q.match_recv(from, tag) {
            Some(s) => self.start_flow(s.src, me, s.bytes, req, if s.sync { s.req } else { NONE }),
            None => {
                q.posted += 1;
                let p = PendingRecv { tag, req };
                match from {
                    Some(f) => q.recvs.entry(f).or_default().push_back((q.posted, p)),
                    None => q.any_recvs.push_back((q.posted, p)),
                }
            }
        }
    }

    pub(super) fn start_flow(
        &mut self,
        src: u32,
        dst: u32,
        bytes: u64,
        recv_req: u32,
        send_req: u32,
    ) {
        self.messages += 1;
        self.bytes += bytes;
        let m = &self.opts.model;
        let (hs, hd) = (self.placement[src as usize], self.placement[dst as usize]);
        let route = self.platform.route(hs, hd);
        let size = (bytes + m.envelope) as f64;
        let links = &self.platform.links;
        let lat_sum: f64 = route.links().iter().map(|&l| links[l].latency).sum();
        let latency = lat_sum * m.latency_factor.at(size);
        let mut penalty = lat_sum;
        if m.weight_s > 0.0 {
            penalty += route.links().iter().map(|&l| m.weight_s / links[l].bandwidth).sum::<f64>();
        }
        if lat_sum <= 0.0 {
            penalty = 1.0;
        }
        let mut bound =
            route.links().iter().map(|&l| links[l].bandwidth).fold(f64::INFINITY, f64::min);
        if m.tcp_gamma > 0.0 && lat_sum > 0.0 {
            bound = bound.min(m.tcp_gamma / (2.0 * lat_sum));
        }
        let mut uses = [(0usize, 0f64); MAX_USES];
        let mut n = 0;
        for &l in route.links() {
            uses[n] = (l, 1.0);
            n += 1;
        }
        if m.crosstraffic > 0.0 {
            for &l in self.platform.route(hd, hs).links() {
                match uses[..n].iter_mut().find(|u| u.0 == l) {
                    Some(u) => u.1 += m.crosstraffic,
                    None => {
                        uses[n] = (l, m.crosstraffic);
                        n += 1;
                    }
                }
            }
        }
        let uses = &uses[..n];
        let act = Act {
            kind: ActKind::Flow { recv_req, send_req },
            remaining: size,
            factor: m.bandwidth_factor.at(size),
            rate: 0.0,
            last: self.now,
            start: self.now,
            penalty,
        };
        self.new_act(uses, penalty, bound, act, latency);
    }
}
