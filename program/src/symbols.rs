//! A process class's logical program as the symbols loop discovery works on.
//!
//! Each call becomes a symbol determined by its operation and the arguments that shape its
//! communication: direction(s), tag class, size, communicator, root, and for completions how
//! many requests were given and completed. Compute gaps are not symbols: they travel as weights
//! (the class's mean, seconds) beside the symbol of the call that follows them.
//!
//! # Complexity
//! O(n) hash look-ups for a program of n calls.

use std::collections::HashMap;

use mpiskel_compress::Sym;
use mpiskel_logicalize::{LogicalComm, LogicalPeer, ProcessClass};
use mpiskel_trace::OpClass;
use serde::Serialize;

/// What one symbol stands for, for people.
#[derive(Debug, Clone, Serialize)]
pub struct SymbolInfo {
    /// The symbol.
    pub sym: Sym,
    /// The operation and its shaping arguments, e.g. `Isend EAST tag#0 4096 B World`.
    pub text: String,
}

/// A sequence of symbols with the compute gap (seconds) before each, and their legend.
#[derive(Debug)]
pub struct Symbolized {
    /// One symbol per call.
    pub symbols: Vec<Sym>,
    /// Compute gap before each call, seconds.
    pub gaps_s: Vec<f64>,
    /// What each symbol stands for.
    pub legend: Vec<SymbolInfo>,
    /// Each call's shape: its symbol without the sizes (what stays the same from one time step
    /// of an irregular loop to the next).
    pub shapes: Vec<Sym>,
    /// Per shape: whether it is a collective over every rank (the same in every class; the
    /// best anchor for time steps).
    pub shape_is_world_collective: Vec<bool>,
}

/// A process class's logical program as symbols, with the mean compute gap before each call.
pub fn symbolize_class(class: &ProcessClass) -> Symbolized {
    let mut by_key: HashMap<String, Sym> = HashMap::new();
    let mut legend = Vec::new();
    let mut symbols = Vec::with_capacity(class.ops.len());
    let mut shape_key: HashMap<String, Sym> = HashMap::new();
    let mut shapes = Vec::with_capacity(class.ops.len());
    let mut shape_is_world_collective = Vec::new();
    let mut gaps_s = Vec::with_capacity(class.ops.len());
    let name = |p: &Option<LogicalPeer>| match p {
        Some(LogicalPeer::Dir(d)) => format!(" {}", d.name),
        Some(LogicalPeer::Null) => " NULL".into(),
        Some(LogicalPeer::Any) => " ANY".into(),
        Some(LogicalPeer::Exception(r)) => format!(" rank {r}"),
        None => String::new(),
    };
    for (i, op) in class.ops.iter().enumerate() {
        let k = &op.key;
        // A receive from any source (or right after a probe of any source) is one symbol
        // whatever arrived, and whatever its size.
        let any = takes_from_any_source(&class.ops, i);
        // The symbol: operation, direction(s), tag class, sizes, communicator, root, counts.
        let text = match k.op.class() {
            OpClass::Send | OpClass::Recv | OpClass::Probe if any => {
                format!("{} ANY tag#{} {:?}", k.op, op.tag_class, k.comm)
            }
            OpClass::Send | OpClass::Recv | OpClass::Probe => {
                format!("{}{} tag#{} {} B {:?}", k.op, name(&k.peer), op.tag_class, k.bytes, k.comm)
            }
            OpClass::SendRecv => format!(
                "{}{}{} tag#{} {}/{} B",
                k.op,
                name(&k.peer),
                name(&k.source),
                op.tag_class,
                k.bytes,
                k.recv_bytes
            ),
            OpClass::Completion => format!("{} {}/{}", k.op, k.done, k.given),
            OpClass::Collective => format!(
                "{} {:?}{} {} B",
                k.op,
                k.comm,
                k.root.as_ref().map_or(String::new(), |r| format!(" root {r:?}")),
                k.bytes
            ),
            _ => format!("{} {:?}", k.op, k.comm),
        };
        // Ranks that skip the call (guarded folding) make it a call of its own.
        let skip = if op.absent.is_empty() {
            String::new()
        } else {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            op.absent.hash(&mut h);
            format!(" ({} ranks skip, set {:08x})", op.absent.len(), h.finish() as u32)
        };
        // The shape: the same without sizes.
        let shape = match k.op.class() {
            OpClass::Send | OpClass::Recv | OpClass::Probe if !any => {
                format!("{}{} tag#{} {:?}", k.op, name(&k.peer), op.tag_class, k.comm)
            }
            OpClass::SendRecv => {
                format!("{}{}{} tag#{}", k.op, name(&k.peer), name(&k.source), op.tag_class)
            }
            OpClass::Collective => format!(
                "{} {:?}{}",
                k.op,
                k.comm,
                k.root.as_ref().map_or(String::new(), |r| format!(" root {r:?}"))
            ),
            _ => text.clone(),
        } + &skip;
        let text = text + &skip;
        let next_shape = shape_key.len() as Sym;
        let world = k.op.class() == OpClass::Collective && k.comm == LogicalComm::World;
        shapes.push(*shape_key.entry(shape).or_insert_with(|| {
            shape_is_world_collective.push(world);
            next_shape
        }));
        let next = by_key.len() as Sym;
        let sym = *by_key.entry(text.clone()).or_insert_with(|| {
            legend.push(SymbolInfo { sym: next, text });
            next
        });
        symbols.push(sym);
        gaps_s.push(op.gap.mean_s);
    }
    Symbolized { symbols, gaps_s, legend, shapes, shape_is_world_collective }
}

/// Whether call `i` of `ops` takes its message from any source: posted with `MPI_ANY_SOURCE`,
/// or a receive right after a probe of any source that found its message (the same source; a
/// probe that found nothing says nothing of the receive after it). The program makes such a
/// receive from any source (`assemble::probed_any_source`); the two must agree, or calls the
/// program makes from one source fold with calls from another (MUMPS: five receives from
/// two ranks, each after a probe that found nothing, made as five from the first).
pub fn takes_from_any_source(ops: &[mpiskel_logicalize::LogicalOp], i: usize) -> bool {
    let k = &ops[i].key;
    k.any_source
        || (k.op.class() == OpClass::Recv
            && i > 0
            && ops[i - 1].key.op.class() == OpClass::Probe
            && ops[i - 1].key.any_source
            && ops[i - 1].key.peer == k.peer)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mpiskel_logicalize::{Direction, LogicalOp, OpKey};
    use mpiskel_trace::Op;

    use super::*;

    /// A `MPI_Sendrecv_replace` with the rank `offset` away, of the tag class `tag_class`.
    fn swap(offset: i64, tag_class: i32) -> LogicalOp {
        let dir = LogicalPeer::Dir(Direction::new(format!("{offset:+}"), vec![offset]));
        let mut key = OpKey::bare(Op::SendrecvReplace);
        (key.peer, key.source, key.bytes, key.recv_bytes) =
            (Some(dir.clone()), Some(dir), 4096, 4096);
        LogicalOp {
            key: Arc::new(key),
            completes: Default::default(),
            gap: Default::default(),
            tag_class,
            traced_tag: tag_class,
            gap_samples: Default::default(),
            rank_bytes: Default::default(),
            absent: Default::default(),
        }
    }

    /// Swaps with the same partner under two tags are two calls: folded into one, the skeleton
    /// would send the second under the first's tag (where it keeps the traced tags), and a
    /// partner whose rounds fold otherwise would wait for it (Quantum ESPRESSO's pairwise
    /// exchanges: rank 0 swaps with rank 1 under tags 1 and 2, with rank 2 under 3 and 4).
    #[test]
    fn swaps_with_one_partner_under_two_tags_are_two_symbols() {
        let class = ProcessClass {
            ranks: vec![0],
            folded: vec![],
            representative: 0,
            ops: vec![swap(1, 0), swap(2, 1), swap(1, 2), swap(2, 3)],
        };
        let s = symbolize_class(&class);
        assert_eq!(s.symbols.len(), 4);
        assert!(s.symbols[0] != s.symbols[2] && s.symbols[1] != s.symbols[3], "{:?}", s.legend);
        assert!(s.shapes[0] != s.shapes[2], "{:?}", s.shapes);
        // The same tag again is the same call.
        let again = ProcessClass { ops: vec![swap(1, 0), swap(1, 0)], ..class };
        let s = symbolize_class(&again);
        assert_eq!(s.symbols[0], s.symbols[1]);
    }

    /// A call `op` with `peer` (`None`: any source, unresolved), posted with `MPI_ANY_SOURCE`
    /// where `any`.
    fn p2p(op: Op, peer: Option<i64>, any: bool) -> LogicalOp {
        let mut key = OpKey::bare(op);
        key.peer = Some(match peer {
            Some(o) => LogicalPeer::Dir(Direction::new(format!("{o:+}"), vec![o])),
            None => LogicalPeer::Any,
        });
        key.any_source = any;
        key.bytes = 64;
        LogicalOp { key: Arc::new(key), ..swap(0, 0) }
    }

    /// A receive after a probe of any source takes from any source only where the probe found
    /// its message: after a probe that found nothing it is the receive it was, and receives
    /// from two sources stay two calls (MUMPS: five receives from two ranks, each after a probe
    /// that found nothing, folded and made as five from the first rank).
    #[test]
    fn a_receive_after_a_probe_that_found_nothing_keeps_its_source() {
        let class = |ops| ProcessClass { ranks: vec![0], folded: vec![], representative: 0, ops };
        let failed = class(vec![
            p2p(Op::Iprobe, None, true),
            p2p(Op::Recv, Some(2), false),
            p2p(Op::Iprobe, None, true),
            p2p(Op::Recv, Some(3), false),
        ]);
        assert!(!takes_from_any_source(&failed.ops, 1));
        let s = symbolize_class(&failed);
        assert_ne!(s.symbols[1], s.symbols[3], "{:?}", s.legend);
        // A probe that found the receive's message: the receive takes from any source.
        let found = class(vec![p2p(Op::Iprobe, Some(2), true), p2p(Op::Recv, Some(2), false)]);
        assert!(takes_from_any_source(&found.ops, 1));
    }
}
