//! Each rank's calls translated into logical operations: peers named by their direction in the
//! topology (or kept as exceptions), communicators by their shape, keys numbered per rank.

use std::collections::{HashMap, HashSet};

use mpiskel_trace::{CommId, Payload, Peer, RankTrace, RequestId, Work};

use super::*;

/// Translates world ranks into logical peers for one rank.
pub(super) struct Namer<'a> {
    pub(super) ident: &'a Identification,
    pub(super) topo: Option<&'a Topology>,
    /// The trace's tags that label one message each ([`single_message_tags`]).
    pub(super) single_tags: &'a HashSet<i32>,
    /// The split of the groups that are not in the first one of their shape
    /// ([`groups::partitions`](super::groups::partitions)), by their members sorted.
    pub(super) parts: &'a HashMap<Vec<u32>, u32>,
}

impl Namer<'_> {
    pub(super) fn peer(&self, me: u32, p: Peer) -> LogicalPeer {
        let other = match p {
            Peer::Null => return LogicalPeer::Null,
            Peer::Any => return LogicalPeer::Any,
            Peer::Rank(r) => r.0,
        };
        if other == me {
            return LogicalPeer::Dir(Direction::new("SELF", Vec::new()));
        }
        let Some(t) = self.topo else {
            return match self.ident.structure {
                Structure::General => LogicalPeer::Dir(Direction {
                    name: format!("{:+}", i64::from(other) - i64::from(me)).into(),
                    offset: vec![i64::from(other) - i64::from(me)].into(),
                }),
                _ => LogicalPeer::Exception(other),
            };
        };
        let (a, b) = (
            self.ident.node_of_rank[me as usize] as usize,
            self.ident.node_of_rank[other as usize] as usize,
        );
        if !t.neighbors(a).contains(&b) {
            return LogicalPeer::Exception(other);
        }
        LogicalPeer::Dir(match t.kind {
            Kind::Cartesian | Kind::Moore | Kind::Bt6 => {
                // Along a dimension of two there is only "the other one".
                let offset = t.offset(a, b);
                Direction::new(direction_name(&offset), offset)
            }
            Kind::Butterfly => {
                let c = t.dims[1];
                if a / c == b / c {
                    let bit = (a % c) ^ (b % c);
                    Direction::new(format!("XOR{bit}"), vec![0, bit as i64])
                } else {
                    Direction::new("TRANSPOSE", vec![1, 1])
                }
            }
            Kind::Tree => {
                let k = t.dims[1];
                if a > 0 && b == (a - 1) / k {
                    Direction::new("PARENT", vec![-1])
                } else {
                    let i = b - k * a;
                    Direction::new(format!("CHILD{i}"), vec![i as i64])
                }
            }
            Kind::Pairs => Direction::new("PARTNER", vec![1]),
            Kind::AllToAll => {
                let n = t.n() as i64;
                let o = (b as i64 - a as i64).rem_euclid(n);
                Direction::new(format!("+{o}"), vec![o])
            }
        })
    }

    pub(super) fn comm(&self, rt: &RankTrace, comm: CommId) -> LogicalComm {
        let me = rt.rank.0;
        let Some(members) = rt.members(comm) else {
            return LogicalComm::Other { size: 0, stride: 0, part: 0 };
        };
        if members.len() == self.ident.n {
            return LogicalComm::World;
        }
        if members.len() == 1 && members[0].0 == me {
            return LogicalComm::SelfComm;
        }
        if let Some(t) =
            self.topo.filter(|t| matches!(t.kind, Kind::Cartesian | Kind::Moore | Kind::Bt6))
        {
            let mine = &self.ident.coords[me as usize];
            let d = mine.len();
            let coords: Vec<&Vec<usize>> =
                members.iter().filter_map(|m| self.ident.coords.get(m.0 as usize)).collect();
            let free: Vec<usize> =
                (0..d).filter(|&k| coords.iter().any(|c| c[k] != mine[k])).collect();
            let size: usize = free.iter().map(|&k| t.dims[k]).product();
            if size == members.len() {
                return LogicalComm::Slice { free };
            }
        }
        let mut sorted: Vec<u32> = members.iter().map(|m| m.0).collect();
        sorted.sort_unstable();
        let stride = match sorted.as_slice() {
            [a, b, ..] if sorted.windows(2).all(|w| w[1] - w[0] == b - a) => (b - a) as usize,
            [_] => 1,
            _ => 0,
        };
        let part = if self.parts.is_empty() { 0 } else { *self.parts.get(&sorted).unwrap_or(&0) };
        LogicalComm::Other { size: members.len(), stride, part }
    }

    /// The group (size, stride, members sorted) of each communicator of `rt` that is
    /// [`LogicalComm::Other`], for [`groups::partitions`](super::groups::partitions).
    pub(super) fn other_groups(&self, rt: &RankTrace) -> Vec<(usize, usize, Vec<u32>)> {
        rt.comms
            .iter()
            .filter_map(|(&c, m)| match self.comm(rt, c) {
                LogicalComm::Other { size, stride, .. } if size > 0 => {
                    let mut m: Vec<u32> = m.iter().map(|r| r.0).collect();
                    m.sort_unstable();
                    Some((size, stride, m))
                }
                _ => None,
            })
            .collect()
    }

    pub(super) fn root(&self, r: u32) -> Vec<usize> {
        self.ident.coords.get(r as usize).cloned().unwrap_or_else(|| vec![r as usize])
    }
}

/// A compute gap: seconds, and the work where the trace recorded it.
#[derive(Clone, Copy)]
pub(super) struct Gap {
    pub(super) s: f64,
    pub(super) work: Option<Work>,
    /// Failed polls folded into the call after the gap.
    pub(super) polls: u32,
    /// Wall seconds from the previous call's return to this call's: the gap and the call's
    /// own time, waiting included (0 where the trace holds no call times).
    pub(super) span: f32,
    /// Wall seconds of the gap the rank spent off the processor (descheduled where ranks share
    /// cores), where the trace recorded the gap's processor time; 0 elsewhere.
    pub(super) off: f32,
}

/// For each call of a rank, the positions of the calls whose requests it completes: one flat
/// list with a start per call (a `Vec` per call would cost 24 bytes and an allocation each).
#[derive(Default)]
pub(super) struct Links {
    pub(super) starts: Vec<u32>,
    pub(super) flat: Vec<u32>,
}

impl Links {
    pub(super) fn push(&mut self, completes: impl IntoIterator<Item = usize>) {
        self.starts.push(self.flat.len() as u32);
        self.flat.extend(completes.into_iter().map(|p| p as u32));
    }

    /// The positions completed by call `i`.
    pub(super) fn get(&self, i: usize) -> &[u32] {
        let start = self.starts[i] as usize;
        let end = self.starts.get(i + 1).map_or(self.flat.len(), |&e| e as usize);
        &self.flat[start..end]
    }
}

/// One rank's calls, logically: each call as a number into a table of distinct calls (see
/// [`Keys`]), its gap, its completion links and its (tag class, traced tag).
#[derive(Default)]
pub(super) struct Translated {
    pub(super) ids: Vec<u32>,
    pub(super) gaps: Vec<Gap>,
    pub(super) links: Links,
    pub(super) tag_classes: Vec<(i32, i32)>,
    /// The group of each communicator the rank calls that is [`LogicalComm::Other`].
    pub(super) groups: Vec<super::groups::Group>,
}

/// Distinct calls, numbered in order of first use.
#[derive(Default)]
pub(super) struct Keys {
    pub(super) table: Vec<OpKey>,
    pub(super) index: HashMap<OpKey, u32>,
}

impl Keys {
    pub(super) fn id(&mut self, k: OpKey) -> u32 {
        if let Some(&id) = self.index.get(&k) {
            return id;
        }
        let id = self.table.len() as u32;
        self.table.push(k.clone());
        self.index.insert(k, id);
        id
    }
}

/// The tags that label one message each way on every rank (at most one send and one receive
/// or probe carry it on any rank): sequence numbers, where a code numbers its messages (Quantum
/// ESPRESSO's distributed matrices: 22,000 of rank 0's 30,000 tags label one message, 7,700 a
/// send and its reply). Numbered as their own classes, every such message would be a call of
/// its own and no loop over them would fold; they are one class, [`SINGLE_MESSAGE_TAG`].
///
/// The set is the trace's, not each rank's: a message's sender and receiver must agree on its
/// class, and a tag that one rank sends once may be one that another receives from several
/// (MUMPS's ScaLAPACK grid: rank 0 sends tag 24 to two ranks, each of which receives it once).
///
/// # Complexity
/// O(n) in the calls, the ranks in parallel.
pub(super) fn single_message_tags(set: &mpiskel_trace::TraceSet) -> HashSet<i32> {
    use rayon::prelude::*;
    // Per rank: the tags it uses, and those it gives more than one message in a direction.
    let per_rank: Vec<(HashSet<i32>, HashSet<i32>)> = set
        .ranks
        .par_iter()
        .map(|rt| {
            // Per tag: sends, and receives or probes.
            let mut uses: HashMap<i32, (u32, u32)> = HashMap::new();
            for e in &rt.events {
                match &e.payload {
                    Payload::P2p { tag, .. } if *tag >= 0 => {
                        let u = uses.entry(*tag).or_default();
                        if e.op.class() == mpiskel_trace::OpClass::Send {
                            u.0 += 1;
                        } else {
                            u.1 += 1;
                        }
                    }
                    Payload::SendRecv { send_tag, recv_tag, .. } => {
                        if *send_tag >= 0 {
                            uses.entry(*send_tag).or_default().0 += 1;
                        }
                        if *recv_tag >= 0 {
                            uses.entry(*recv_tag).or_default().1 += 1;
                        }
                    }
                    _ => {}
                }
            }
            let many = uses.iter().filter(|(_, (s, r))| *s > 1 || *r > 1).map(|(t, _)| *t);
            (many.collect(), uses.into_keys().collect())
        })
        .collect();
    let many: HashSet<i32> = per_rank.iter().flat_map(|(m, _)| m.iter().copied()).collect();
    per_rank.into_iter().flat_map(|(_, used)| used).filter(|t| !many.contains(t)).collect()
}

/// Translates one rank's calls; the numbers are into the rank's own table of distinct calls
/// (returned beside), so that a rank's calls take a few bytes each, not a key each.
pub(super) fn translate(rt: &RankTrace, namer: &Namer<'_>) -> (Vec<OpKey>, Translated) {
    let me = rt.rank.0;
    let mut keys = Keys::default();
    let mut ids = Vec::with_capacity(rt.events.len());
    let mut gaps = Vec::with_capacity(rt.events.len());
    let mut links = Links { starts: Vec::with_capacity(rt.events.len()), flat: Vec::new() };
    let mut tag_classes = Vec::with_capacity(rt.events.len());
    let mut started: HashMap<RequestId, usize> = HashMap::new();
    // Tag classes, numbered in order of first use; a tag that labels one message is of the
    // class of such tags.
    let single = namer.single_tags;
    let mut tags: HashMap<i32, i32> = HashMap::new();
    let mut tag_class = |_peer: &Option<LogicalPeer>, t: i32| -> i32 {
        if t < 0 {
            return t;
        }
        if single.contains(&t) {
            return SINGLE_MESSAGE_TAG;
        }
        let next = tags.len() as i32;
        *tags.entry(t).or_insert(next)
    };
    // Each peer and communicator is named once per rank.
    let mut names: HashMap<Peer, LogicalPeer> = HashMap::new();
    let mut name = |p: Peer| names.entry(p).or_insert_with(|| namer.peer(me, p)).clone();
    let mut comms: HashMap<CommId, LogicalComm> = HashMap::new();
    let mut groups = Vec::new();
    let mut comm_of = |c: CommId| {
        comms
            .entry(c)
            .or_insert_with(|| {
                let logical = namer.comm(rt, c);
                if let (LogicalComm::Other { size, stride, part }, Some(m)) =
                    (&logical, rt.members(c))
                {
                    let mut m: Vec<u32> = m.iter().map(|r| r.0).collect();
                    m.sort_unstable();
                    groups.push((*size, *stride, *part, m));
                }
                logical
            })
            .clone()
    };
    for (i, e) in rt.events.iter().enumerate() {
        let mut k = OpKey::bare(e.op);
        let mut completes: Vec<usize> = Vec::new();
        match &e.payload {
            Payload::None => {}
            Payload::P2p { peer, tag, bytes, comm, request, wildcards } => {
                k.any_source = wildcards.source;
                k.peer = Some(name(*peer));
                k.tag = tag_class(&k.peer, *tag);
                k.bytes = *bytes;
                k.comm = comm_of(*comm);
                if let Some(r) = request {
                    started.insert(*r, i);
                }
            }
            Payload::SendRecv { dest, send_tag, send_bytes, source, recv_bytes, comm, .. } => {
                k.peer = Some(name(*dest));
                k.source = Some(name(*source));
                k.tag = tag_class(&k.peer, *send_tag);
                k.bytes = *send_bytes;
                k.recv_bytes = *recv_bytes;
                k.comm = comm_of(*comm);
            }
            Payload::Completion { n_given, completed } => {
                k.given = *n_given;
                k.done = completed.len() as u32;
                completes = completed.iter().filter_map(|c| started.remove(&c.request?)).collect();
            }
            Payload::Collective { comm, root, send_bytes, recv_bytes, request, .. } => {
                k.comm = comm_of(*comm);
                // Within a row, column or plane, the root is its position there.
                k.root = root.map(|r| match &k.comm {
                    LogicalComm::Slice { free } => {
                        let c = namer.root(r.0);
                        free.iter().filter_map(|&d| c.get(d).copied()).collect()
                    }
                    _ => namer.root(r.0),
                });
                k.bytes = *send_bytes;
                k.recv_bytes = *recv_bytes;
                if let Some(r) = request {
                    started.insert(*r, i);
                }
            }
            Payload::Comm { parent, .. } => k.comm = comm_of(*parent),
        }
        let raw = match &e.payload {
            Payload::P2p { tag, .. } => *tag,
            Payload::SendRecv { send_tag, .. } => *send_tag,
            _ => 0,
        };
        tag_classes.push((std::mem::take(&mut k.tag), raw));
        ids.push(keys.id(k));
        // The processor time where recorded: a skeleton's busy compute of that length is shared
        // (descheduled) the way the application's was.
        gaps.push(Gap {
            s: e.gap_cpu_ns.unwrap_or(e.gap_ns) as f64 * 1e-9,
            work: e.gap_work,
            polls: e.gap_polls,
            span: (e.gap_ns + e.exit_ns.saturating_sub(e.enter_ns)) as f32 * 1e-9,
            off: e.gap_cpu_ns.map_or(0.0, |cpu| e.gap_ns.saturating_sub(cpu) as f32 * 1e-9),
        });
        links.push(completes);
    }
    (keys.table, Translated { ids, gaps, links, tag_classes, groups })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiskel_trace::{Event, Op, Rank, RankInfo, TraceFormat, TraceSet, Wildcards};

    fn p2p(op: Op, peer: u32, tag: i32) -> Event {
        Event {
            op,
            enter_ns: 0,
            exit_ns: 0,
            gap_ns: 0,
            gap_work: None,
            gap_cpu_ns: None,
            gap_polls: 0,
            payload: Payload::P2p {
                peer: Peer::Rank(Rank(peer)),
                tag,
                bytes: 8,
                comm: CommId::WORLD,
                request: None,
                wildcards: Wildcards::default(),
            },
        }
    }

    /// A tag is of the one-message class only where it labels one message on every rank: rank
    /// 0 sends tag 7 to two ranks, each of which receives it once, so tag 7 is a tag like any
    /// other on all three (on the receivers alone it would have been numbered, and the
    /// receives and the sends told apart); tag 9, one message from rank 1 to rank 2, is
    /// numbered.
    #[test]
    fn a_tag_is_numbered_only_where_every_rank_gives_it_one_message() {
        let events = vec![
            vec![p2p(Op::Send, 1, 7), p2p(Op::Send, 2, 7)],
            vec![p2p(Op::Recv, 0, 7), p2p(Op::Send, 2, 9)],
            vec![p2p(Op::Recv, 0, 7), p2p(Op::Recv, 1, 9)],
        ];
        let ranks = events
            .into_iter()
            .enumerate()
            .map(|(r, events)| RankTrace {
                rank: Rank(r as u32),
                info: RankInfo { n_ranks: 3, ..RankInfo::default() },
                events,
                trailing_gap_ns: 0,
                comms: Default::default(),
                record_counts: Default::default(),
                unrecorded: Default::default(),
            })
            .collect();
        let set =
            TraceSet { path: "numbered".into(), format: TraceFormat::Native, ranks, meta: None };
        assert_eq!(single_message_tags(&set), HashSet::from([9]));
    }
}
