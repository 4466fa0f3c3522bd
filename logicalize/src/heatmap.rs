//! A picture of the communication matrix: an SVG heatmap a user can open in a browser.
//!
//! Row = sender, column = receiver, colour = bytes on a logarithmic scale (white: nothing).
//! Matrices larger than 512 ranks are binned into 512 × 512 cells (bytes summed per bin).

use std::fmt::Write as _;

use crate::matrix::CommMatrix;

const MAX_CELLS: usize = 512;

/// The SVG document.
pub fn heatmap_svg(m: &CommMatrix, title: &str) -> String {
    let n = m.n.max(1);
    let cells = n.min(MAX_CELLS);
    let bin = n.div_ceil(cells);
    let mut grid = vec![0u64; cells * cells];
    for (&(s, d), t) in &m.pairs {
        grid[(s as usize / bin) * cells + d as usize / bin] += t.bytes;
    }
    let max = grid.iter().copied().max().unwrap_or(0).max(1) as f64;
    let px = (640 / cells).max(1);
    let size = px * cells;
    let (left, top) = (60, 40);
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">"#,
        size + left + 20,
        size + top + 40
    );
    let _ = writeln!(o, r#"<title>{}</title>"#, escape(title));
    let _ = writeln!(o, r#"<text x="{left}" y="20">{}</text>"#, escape(title));
    let _ = writeln!(
        o,
        r##"<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="#fff" stroke="#999"/>"##
    );
    for (i, &b) in grid.iter().enumerate() {
        if b == 0 {
            continue;
        }
        let level = ((b as f64).ln_1p() / max.ln_1p()).clamp(0.0, 1.0);
        // From light yellow (little) to dark red (most).
        let (r, g, bl) =
            (255.0 - 100.0 * level, 230.0 * (1.0 - level) + 20.0, 120.0 * (1.0 - level));
        let (y, x) = (i / cells, i % cells);
        let _ = writeln!(
            o,
            r#"<rect x="{}" y="{}" width="{px}" height="{px}" fill="rgb({:.0},{:.0},{:.0})"><title>{} → {}: {} bytes</title></rect>"#,
            left + x * px,
            top + y * px,
            r,
            g,
            bl,
            y * bin,
            x * bin,
            b
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{left}" y="{}">receiver → (rank{})</text>"#,
        top + size + 20,
        if bin > 1 { format!(", {bin} per cell") } else { String::new() }
    );
    let _ = writeln!(
        o,
        r#"<text x="14" y="{}" transform="rotate(-90 14 {})">sender ↓</text>"#,
        top + size / 2,
        top + size / 2
    );
    o.push_str("</svg>\n");
    o
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
