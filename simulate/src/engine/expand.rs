//! Each call of a trace as the simulator's steps: compute, sends and receives with their
//! requests, waits, and collectives as their schedule of messages
//! ([`crate::collectives::schedule`]).

use mpiskel_trace::CommId;

use super::*;

impl Sim<'_> {
    /// The context and members of communicator `comm` of rank `r`, as its call `i` names it.
    fn ctx_of(&self, r: usize, i: usize, comm: CommId) -> Result<(u32, Arc<[Rank]>)> {
        let e = &self.traces[r].events[i];
        self.ranks[r]
            .comms
            .get(&comm.0)
            .cloned()
            .ok_or_else(|| trace_err(r, i, e, format!("communicator {comm} is not defined")))
    }

    /// The steps of rank `r`'s call `i`.
    pub(super) fn expand(&mut self, r: usize, i: usize) -> Result<()> {
        let traces = self.traces;
        let e = &traces[r].events[i];
        let flops = match e.gap_work {
            Some(Work::Flops(f)) => f,
            // Processor time where the trace has it: the simulation shares the cores itself.
            _ => e.gap_cpu_ns.unwrap_or(e.gap_ns) as f64 * 1e-9 * self.opts.trace_speed,
        };
        if flops > 0.0 {
            self.ranks[r].steps.push_back(Step::Compute(flops));
        }
        let n = self.traces.len() as u32;
        let world = |p: Peer| -> Result<Option<u32>> {
            match p {
                Peer::Rank(x) if x.0 < n => Ok(Some(x.0)),
                Peer::Rank(x) => Err(trace_err(r, i, e, format!("peer {x} of a run of {n} ranks"))),
                Peer::Any | Peer::Null => Ok(None),
            }
        };
        match (&e.payload, e.op) {
            (Payload::P2p { .. }, op) => self.expand_p2p(r, i, op, &world)?,
            (Payload::SendRecv { dest, send_tag, send_bytes, source, recv_tag, comm, .. }, _) => {
                let me = Some(r as u32);
                let (to, from) = (world(*dest)?, world(*source)?);
                if to == me && from == me {
                    return Ok(());
                }
                let (ctx, _) = self.ctx_of(r, i, *comm)?;
                let ctx = ctx * 2;
                let mut wait = Vec::new();
                if let Some(to) = to {
                    let req = self.new_req();
                    let s = Step::Send {
                        to,
                        tag: i64::from(*send_tag),
                        ctx,
                        bytes: *send_bytes,
                        req,
                        sync: false,
                    };
                    self.ranks[r].steps.push_back(s);
                    wait.push(req);
                }
                if *source != Peer::Null {
                    let req = self.new_req();
                    let tag = (*recv_tag >= 0).then_some(i64::from(*recv_tag));
                    self.ranks[r].steps.push_back(Step::Recv { from, tag, ctx, req });
                    wait.push(req);
                }
                self.ranks[r].steps.push_back(Step::Wait(wait));
            }
            (Payload::Completion { completed, .. }, _) => {
                let rs = &mut self.ranks[r];
                let reqs: Vec<u32> = completed
                    .iter()
                    .filter_map(|c| c.request.and_then(|id| rs.user_reqs.remove(&id)))
                    .flatten()
                    .collect();
                if !reqs.is_empty() {
                    rs.steps.push_back(Step::Wait(reqs));
                }
            }
            (Payload::Collective { .. }, op) => self.expand_collective(r, i, op)?,
            (Payload::None | Payload::Comm { .. }, _) => {}
        }
        Ok(())
    }

    /// The steps of rank `r`'s point-to-point call `i` (`op`): `world` gives a peer's world
    /// rank.
    fn expand_p2p(
        &mut self,
        r: usize,
        i: usize,
        op: Op,
        world: &dyn Fn(Peer) -> Result<Option<u32>>,
    ) -> Result<()> {
        let e = &self.traces[r].events[i];
        let Payload::P2p { peer, tag, bytes, comm, request, wildcards } = &e.payload else {
            return Ok(());
        };
        let (ctx, _) = self.ctx_of(r, i, *comm)?;
        let ctx = ctx * 2;
        match op {
            Op::Send | Op::Ssend | Op::Rsend | Op::Bsend | Op::Isend | Op::Issend | Op::Irsend => {
                let Some(to) = world(*peer)? else { return Ok(()) };
                let req = self.new_req();
                let sync = matches!(op, Op::Ssend | Op::Issend);
                let s = Step::Send { to, tag: i64::from(*tag), ctx, bytes: *bytes, req, sync };
                self.ranks[r].steps.push_back(s);
                if matches!(op, Op::Isend | Op::Issend | Op::Irsend) {
                    if let Some(id) = request {
                        self.ranks[r].user_reqs.insert(*id, vec![req]);
                    }
                } else if op != Op::Bsend {
                    // A buffered send returns once its message is copied out, whatever
                    // its size; the others wait for it to leave.
                    self.ranks[r].steps.push_back(Step::Wait(vec![req]));
                }
            }
            Op::Recv | Op::Irecv => {
                if *peer == Peer::Null {
                    return Ok(());
                }
                let from =
                    if wildcards.source && *peer == Peer::Any { None } else { world(*peer)? };
                if from.is_none() && *peer != Peer::Any {
                    return Ok(());
                }
                let tag = (!(wildcards.tag && *tag < 0)).then_some(i64::from(*tag));
                let req = self.new_req();
                self.ranks[r].steps.push_back(Step::Recv { from, tag, ctx, req });
                if op == Op::Irecv {
                    if let Some(id) = request {
                        self.ranks[r].user_reqs.insert(*id, vec![req]);
                    }
                } else {
                    self.ranks[r].steps.push_back(Step::Wait(vec![req]));
                }
            }
            _ => {} // probes take no time here
        }
        Ok(())
    }

    /// The steps of rank `r`'s collective call `i` (`op`), as its schedule of messages.
    fn expand_collective(&mut self, r: usize, i: usize, op: Op) -> Result<()> {
        let e = &self.traces[r].events[i];
        let Payload::Collective {
            comm,
            root,
            send_bytes,
            recv_bytes,
            send_counts,
            recv_counts,
            request,
        } = &e.payload
        else {
            return Ok(());
        };
        let (ctx, members) = self.ctx_of(r, i, *comm)?;
        let me = members.iter().position(|m| m.0 as usize == r).ok_or_else(|| {
            trace_err(r, i, e, format!("rank {r} is not a member of communicator {comm}"))
        })?;
        let root = match root {
            Some(w) => members.iter().position(|m| m == w).ok_or_else(|| {
                trace_err(r, i, e, format!("root {w} is not a member of communicator {comm}"))
            })?,
            None => 0,
        };
        let call = CollCall {
            op,
            me,
            size: members.len(),
            root,
            send_bytes: *send_bytes,
            recv_bytes: *recv_bytes,
            send_counts: send_counts.as_deref(),
            recv_counts: recv_counts.as_deref(),
            selector: self.opts.selector,
        };
        let (steps, n) = schedule(&call);
        let base = self.reqs.len() as u32;
        for _ in 0..n {
            self.new_req();
        }
        let ctx = ctx * 2 + 1;
        let w = |c: usize| members[c].0;
        let rs = &mut self.ranks[r];
        // A non-blocking collective starts all its messages at once and waits for none of
        // them: its rank goes on (the others' messages reach it as they would, a probe loop
        // beside it keeps receiving), and the wait for its request waits for all of them. The
        // rounds of its algorithm then overlap where they would follow each other: an
        // approximation of its time, never a wait the program did not make.
        let mut started = Vec::new();
        for s in steps {
            let step = match s {
                CollStep::Send { to, tag, bytes, req } => {
                    Step::Send { to: w(to), tag, ctx, bytes, req: base + req as u32, sync: false }
                }
                CollStep::Recv { from, tag, req } => {
                    Step::Recv { from: Some(w(from)), tag: Some(tag), ctx, req: base + req as u32 }
                }
                CollStep::Wait(_) if request.is_some() => continue,
                CollStep::Wait(q) => Step::Wait(q.into_iter().map(|x| base + x as u32).collect()),
            };
            if let Step::Send { req, .. } | Step::Recv { req, .. } = step {
                started.push(req);
            }
            rs.steps.push_back(step);
        }
        if let Some(id) = request {
            rs.user_reqs.insert(*id, started);
        }
        Ok(())
    }
}
