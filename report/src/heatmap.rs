//! The communication matrix as a heatmap: binned to at most [`HEATMAP_CELLS`] cells per side,
//! each cell coloured by its bytes (logarithmic) and with its hover text, for the page and for
//! [`crate::svg::heatmap_svg`].
//!
//! # Complexity
//! O(pairs) to bin and colour.

use mpiskel_logicalize::CommMatrix;
use serde::Serialize;

/// Most cells per side of the heatmap: larger matrices are binned (bytes summed per bin).
pub const HEATMAP_CELLS: usize = 128;

/// Side of the heatmap, pixels.
const HEATMAP_PX: usize = 512;

/// The communication matrix, binned, with its colours worked out.
#[derive(Debug, Clone, Serialize)]
pub struct Heatmap {
    /// Ranks.
    pub ranks: usize,
    /// Ranks per cell.
    pub bin: usize,
    /// Cells per side.
    pub cells: usize,
    /// Pixels per cell.
    pub px: usize,
    /// Pixels per side.
    pub size: usize,
    /// The cells with traffic.
    pub filled: Vec<Cell>,
    /// Most bytes in one cell.
    pub max_bytes: u64,
    /// Point-to-point bytes in all.
    pub total_bytes: u64,
    /// Collective calls per operation.
    pub collectives: Vec<(String, u64)>,
}

impl Heatmap {
    /// The matrix binned into at most [`HEATMAP_CELLS`] cells per side, with each cell's colour
    /// (logarithmic in bytes) and hover text.
    pub fn of(m: &CommMatrix) -> Heatmap {
        let n = m.n.max(1);
        let cells = n.min(HEATMAP_CELLS);
        let bin = n.div_ceil(cells);
        let mut grid = vec![(0u64, 0u64); cells * cells];
        for (&(s, d), t) in &m.pairs {
            let g = &mut grid[(s as usize / bin) * cells + d as usize / bin];
            g.0 += t.bytes;
            g.1 += t.messages;
        }
        let max = grid.iter().map(|g| g.0).max().unwrap_or(0);
        let px = (HEATMAP_PX / cells).max(1);
        let name = |i: usize| {
            if bin == 1 {
                format!("rank {i}")
            } else {
                format!("ranks {}-{}", i * bin, ((i + 1) * bin).min(n) - 1)
            }
        };
        let filled = grid
            .iter()
            .enumerate()
            .filter(|(_, g)| g.0 > 0 || g.1 > 0)
            .map(|(i, &(bytes, msgs))| {
                let (row, col) = (i / cells, i % cells);
                Cell {
                    x: col * px,
                    y: row * px,
                    colour: colour(bytes, max),
                    tip: format!(
                        "{} → {}: {} bytes in {} messages",
                        name(row),
                        name(col),
                        bytes,
                        msgs
                    ),
                }
            })
            .collect();
        Heatmap {
            ranks: n,
            bin,
            cells,
            px,
            size: px * cells,
            filled,
            max_bytes: max,
            total_bytes: m.pairs.values().map(|t| t.bytes).sum(),
            collectives: m.collectives.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        }
    }
}

/// One cell of the heatmap.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Column (receiver bin), pixels.
    pub x: usize,
    /// Row (sender bin), pixels.
    pub y: usize,
    /// Fill colour.
    pub colour: String,
    /// Hover text.
    pub tip: String,
}

/// A colour from white to dark blue for `bytes` of `max`, on a logarithmic scale.
fn colour(bytes: u64, max: u64) -> String {
    if bytes == 0 {
        return "#f2f2f2".into();
    }
    let t = ((bytes as f64).ln_1p() / (max.max(1) as f64).ln_1p()).clamp(0.05, 1.0);
    let c = |lo: f64, hi: f64| (lo + (hi - lo) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", c(222.0, 8.0), c(235.0, 48.0), c(247.0, 107.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_darken_with_bytes_and_nothing_is_pale() {
        assert_eq!(colour(0, 100), "#f2f2f2");
        assert!(colour(100, 100) < colour(1, 100), "{} {}", colour(100, 100), colour(1, 100));
    }
}
