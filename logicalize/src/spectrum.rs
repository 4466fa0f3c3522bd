//! The graph-spectrum test (Xu & Subhlok 2008, §2, step 2): isomorphic graphs have the same adjacency
//! eigenvalues, so a candidate whose spectrum differs is not a match.
//!
//! Up to [`DENSE_LIMIT`] nodes the eigenvalues are computed (nalgebra's symmetric eigensolver,
//! O(n³)). Beyond that a dense solve is out of reach (16,384 nodes would take hours), and the
//! test compares spectral moments instead: tr(A^k) = Σ λ^k for k = 2, 3, 4, which count closed
//! walks (2 × edges, 6 × triangles, and walks of length four) and are computed from the sparse
//! graph in O(n · degree²). Equal spectra imply equal moments, so the test stays a necessary
//! condition; it is weaker, and the isomorphism test that follows is exact.

use nalgebra::DMatrix;

use crate::graph::Graph;

/// Largest graph whose eigenvalues are computed densely.
pub const DENSE_LIMIT: usize = 1024;

/// Sorted adjacency eigenvalues (dense; O(n³)).
pub fn eigenvalues(g: &Graph) -> Vec<f64> {
    let n = g.n();
    let mut a = DMatrix::<f64>::zeros(n, n);
    for v in 0..n {
        for &u in g.neighbors(v) {
            a[(v, u as usize)] = 1.0;
        }
    }
    let mut ev: Vec<f64> = a.symmetric_eigenvalues().iter().copied().collect();
    ev.sort_by(f64::total_cmp);
    ev
}

/// tr(A²), tr(A³), tr(A⁴).
pub fn moments(g: &Graph) -> [u64; 3] {
    let n = g.n();
    let mut common = vec![0u64; n];
    let mut touched = Vec::new();
    let (mut m2, mut m3, mut m4) = (0u64, 0u64, 0u64);
    for v in 0..n {
        m2 += g.degree(v) as u64;
        // common[w] = (A²)_{vw} = number of common neighbours of v and w.
        for &u in g.neighbors(v) {
            for &w in g.neighbors(u as usize) {
                if common[w as usize] == 0 {
                    touched.push(w as usize);
                }
                common[w as usize] += 1;
            }
        }
        for &u in g.neighbors(v) {
            m3 += common[u as usize];
        }
        for &w in &touched {
            m4 += common[w] * common[w];
            common[w] = 0;
        }
        touched.clear();
    }
    [m2, m3, m4]
}

/// Whether two graphs pass the spectrum test; `observed` holds the observed graph's eigenvalues
/// when it is small enough to have them.
pub fn same_spectrum(observed: &Graph, observed_ev: Option<&[f64]>, candidate: &Graph) -> bool {
    match observed_ev {
        Some(ev) => {
            let other = eigenvalues(candidate);
            let tol = 1e-6 * (observed.n() as f64).max(1.0);
            ev.len() == other.len() && ev.iter().zip(&other).all(|(a, b)| (a - b).abs() <= tol)
        }
        None => moments(observed) == moments(candidate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(n: u32) -> Graph {
        Graph::from_edges(n as usize, (0..n).map(|v| (v, (v + 1) % n)))
    }

    fn star(n: u32) -> Graph {
        Graph::from_edges(n as usize, (1..n).map(|v| (0, v)))
    }

    #[test]
    fn a_ring_has_the_eigenvalues_of_a_cycle() {
        // λ_k = 2 cos(2πk/n).
        let n = 8;
        let mut want: Vec<f64> = (0..n)
            .map(|k| 2.0 * (2.0 * std::f64::consts::PI * k as f64 / n as f64).cos())
            .collect();
        want.sort_by(f64::total_cmp);
        let got = eigenvalues(&ring(n));
        assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-9), "{got:?}");
    }

    #[test]
    fn moments_are_the_power_sums_of_the_eigenvalues() {
        for g in [ring(7), star(6), Graph::from_edges(4, [(0, 1), (1, 2), (2, 0), (2, 3)])] {
            let ev = eigenvalues(&g);
            let m = moments(&g);
            for (k, &mk) in m.iter().enumerate() {
                let sum: f64 = ev.iter().map(|l| l.powi(k as i32 + 2)).sum();
                assert!((sum - mk as f64).abs() < 1e-6, "tr(A^{}) = {mk}, Σλ^k = {sum}", k + 2);
            }
        }
    }

    #[test]
    fn graphs_with_the_same_edges_count_but_other_shapes_fail_the_test() {
        // A 6-ring and two triangles: both 2-regular with 6 edges, different spectra.
        let two_triangles = Graph::from_edges(6, [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)]);
        let r = ring(6);
        let ev = eigenvalues(&r);
        assert!(!same_spectrum(&r, Some(&ev), &two_triangles));
        assert!(!same_spectrum(&r, None, &two_triangles), "moments count the triangles");
        let (shuffled, _) = r.shuffled(3);
        assert!(same_spectrum(&r, Some(&ev), &shuffled));
        assert!(same_spectrum(&r, None, &shuffled));
    }
}
