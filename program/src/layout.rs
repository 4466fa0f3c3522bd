//! Ranks and directions: C identifiers of directions, each rank's neighbour in a direction,
//! and the Cartesian layout (`MPI_Cart_create`) where the ranks lie row-major in the topology.

use mpiskel_logicalize::{Direction, Kind, LogicalTrace, Topology};

use super::*;

/// C identifier of a direction name.
pub fn ident_of(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        match c {
            '+' => s.push_str("_PLUS_"),
            '-' => s.push_str("_MINUS_"),
            c if c.is_ascii_alphanumeric() => s.push(c.to_ascii_uppercase()),
            _ => s.push('_'),
        }
    }
    let s = s.trim_matches('_').replace("__", "_");
    if s.starts_with(|c: char| c.is_ascii_digit()) || s.is_empty() {
        format!("D{s}")
    } else {
        s
    }
}

/// The channel a direction's messages travel on: a tree's children share one (a parent names
/// each child differently, a child names its parent one way).
pub(super) fn channel(name: &str) -> String {
    if name.starts_with("CHILD") {
        "CHILD".into()
    } else {
        name.into()
    }
}

/// The world rank in direction `d` of `rank`, if any.
pub fn neighbour(lt: &LogicalTrace, rank: u32, d: &Direction) -> Option<u32> {
    let n = lt.n_ranks as i64;
    if &*d.name == "SELF" {
        return Some(rank);
    }
    let Some(t) = lt.topology() else {
        // General graph: directions are rank offsets.
        let o = d.offset.first().copied()?;
        let r = i64::from(rank) + o;
        return (0..n).contains(&r).then_some(r as u32);
    };
    let ident = &lt.identification;
    let node = ident.node_of_rank.get(rank as usize).copied()? as usize;
    let target = node_in_direction(t, node, d)?;
    let rank_of_node = rank_of_node(lt);
    rank_of_node.get(target).copied()
}

pub(super) fn rank_of_node(lt: &LogicalTrace) -> Vec<u32> {
    let mut out = vec![0; lt.identification.node_of_rank.len()];
    for (r, &v) in lt.identification.node_of_rank.iter().enumerate() {
        out[v as usize] = r as u32;
    }
    out
}

pub(super) fn node_in_direction(t: &Topology, v: usize, d: &Direction) -> Option<usize> {
    let n = t.n();
    match t.kind {
        Kind::Cartesian | Kind::Moore | Kind::Bt6 => t.step(v, &d.offset),
        Kind::Butterfly => {
            let cols = t.dims[1];
            let (r, c) = (v / cols, v % cols);
            if &*d.name == "TRANSPOSE" {
                Some(c * cols + r)
            } else {
                let bit = *d.offset.get(1)? as usize;
                Some(r * cols + (c ^ bit))
            }
        }
        Kind::Tree => {
            let k = t.dims[1];
            if &*d.name == "PARENT" {
                (v > 0).then(|| (v - 1) / k)
            } else {
                let i = *d.offset.first()? as usize;
                Some(k * v + i).filter(|&u| u < n)
            }
        }
        Kind::Pairs => Some(v ^ 1).filter(|&u| u < n),
        Kind::AllToAll => Some((v + *d.offset.first()? as usize) % n),
    }
}

/// Whether the application's ranks lie row-major in a Cartesian-like topology whose
/// directions `MPI_Cart_shift` and coordinate arithmetic reach.
pub(super) fn cartesian_layout(lt: &LogicalTrace) -> Option<Layout> {
    let t = lt.topology()?;
    if !matches!(t.kind, Kind::Cartesian | Kind::Moore | Kind::Bt6) {
        return None;
    }
    let identity = lt.identification.node_of_rank.iter().enumerate().all(|(r, &v)| r == v as usize);
    identity.then(|| Layout::Cartesian {
        dims: t.dims.clone(),
        periods: t
            .dims
            .iter()
            .zip(&t.periods)
            .map(|(&d, &p)| p || d == 2)
            .chain(std::iter::repeat(false))
            .take(t.dims.len())
            .collect(),
    })
}
