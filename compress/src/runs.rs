//! Finding runs (maximal tandem repeats) in a symbol sequence.
//!
//! A *run* of period `p` is a maximal interval `s[start..end)` with `s[i] == s[i + p]` for every
//! `i` in `start..end - p`, at least two periods long (`end - start ≥ 2p`).
//!
//! [`runs`] uses the sampling argument of Main and Lorentz (*An O(n log n) algorithm for finding
//! all repetitions in a string*, J. Algorithms 5, 1984), as presented by Crochemore, Hancart and
//! Lecroq (*Algorithms on Strings*, 2007, §9): a run of period `p` contains two positions `kp`
//! and `kp + p` for some `k`, so it is found by computing, at every multiple `i` of `p`, the
//! longest common extension of `i` and `i + p` forwards and backwards; the run exists exactly
//! when the two extensions add up to at least `p`. Extensions are computed with Karp–Rabin
//! fingerprints (mod 2^61 − 1) and galloping search, and every reported run is verified symbol by
//! symbol, so a fingerprint collision can never produce a wrong run.
//!
//! # Complexity
//! Σ_p n/p = O(n log n) samples; each sample costs O(1) unless `s[i] == s[i+p]`, then
//! O(log L) for an extension of length L. O(n) memory. Runs of period `p` found for a
//! non-primitive `p` (a multiple of a shorter period) are reported too; callers that process
//! periods in increasing order skip them as overlaps.

use crate::nest::Sym;

/// A maximal repetition `s[start..end)` of period `period` (`end - start ≥ 2 · period`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Run {
    /// Period.
    pub period: usize,
    /// First position.
    pub start: usize,
    /// One past the last position.
    pub end: usize,
}

const MOD: u64 = (1 << 61) - 1;

fn mulmod(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    let lo = (p as u64) & MOD;
    let hi = (p >> 61) as u64;
    let r = lo + hi;
    if r >= MOD {
        r - MOD
    } else {
        r
    }
}

/// Prefix fingerprints for O(1) substring comparison.
struct Fingerprints {
    pre: Vec<u64>,
    pow: Vec<u64>,
}

impl Fingerprints {
    fn new(s: &[Sym]) -> Self {
        const BASE: u64 = 0x1f3d_5b79_a2c4_e681 % MOD;
        let mut pre = Vec::with_capacity(s.len() + 1);
        let mut pow = Vec::with_capacity(s.len() + 1);
        pre.push(0);
        pow.push(1);
        for &c in s {
            // Spread symbols over the field so that small ids do not correlate.
            let v = (u64::from(c).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 4) % MOD;
            let h = mulmod(*pre.last().expect("non-empty"), BASE) + v;
            pre.push(if h >= MOD { h - MOD } else { h });
            pow.push(mulmod(*pow.last().expect("non-empty"), BASE));
        }
        Fingerprints { pre, pow }
    }

    /// Fingerprint of `s[i..i+len)`.
    fn get(&self, i: usize, len: usize) -> u64 {
        let a = self.pre[i + len];
        let b = mulmod(self.pre[i], self.pow[len]);
        if a >= b {
            a - b
        } else {
            a + MOD - b
        }
    }

    fn eq(&self, i: usize, j: usize, len: usize) -> bool {
        self.get(i, len) == self.get(j, len)
    }
}

/// Largest `l ≤ limit` with `ok(l)` true, where `ok` is monotone (true up to some length).
fn gallop(limit: usize, ok: impl Fn(usize) -> bool) -> usize {
    let mut lo = 0; // ok(lo) holds
    let mut step = 1;
    while lo < limit {
        let probe = (lo + step).min(limit);
        if ok(probe) {
            lo = probe;
            step *= 2;
        } else {
            // answer in [lo, probe)
            let mut hi = probe;
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if ok(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
    }
    lo
}

/// Every run of `s`, by increasing period, then position.
pub fn runs(s: &[Sym]) -> Vec<Run> {
    let mut search = RunSearch::new(s);
    search.periods(1..s.len() / 2 + 1)
}

/// A run search over one sequence, period range by period range (the fingerprints are built
/// once).
pub(crate) struct RunSearch<'a> {
    s: &'a [Sym],
    fp: Fingerprints,
}

impl<'a> RunSearch<'a> {
    pub(crate) fn new(s: &'a [Sym]) -> Self {
        RunSearch { s, fp: Fingerprints::new(s) }
    }

    /// The runs whose period lies in `periods`, by increasing period, then position.
    pub(crate) fn periods(&mut self, periods: std::ops::Range<usize>) -> Vec<Run> {
        let (s, fp) = (self.s, &self.fp);
        let n = s.len();
        let mut out = Vec::new();
        for p in periods.start.max(1)..periods.end.min(n / 2 + 1) {
            let mut i = 0;
            while i + p < n {
                let j = i + p;
                if s[i] != s[j] {
                    i += p;
                    continue;
                }
                let f = gallop(n - j, |l| fp.eq(i, j, l));
                let b = gallop(i, |l| fp.eq(i - l, j - l, l));
                if f + b >= p {
                    let (start, end) = verified(s, p, i - b, j + f);
                    if end - start >= 2 * p {
                        out.push(Run { period: p, start, end });
                    }
                    // The next sample that can start another run of period p.
                    let next = end.saturating_sub(p).div_ceil(p) * p;
                    i = next.max(i + p);
                } else {
                    i += p;
                }
            }
        }
        out
    }
}

/// Checks a run symbol by symbol (guarding against fingerprint collisions) and returns the
/// true maximal extent around the sample.
fn verified(s: &[Sym], p: usize, start: usize, end: usize) -> (usize, usize) {
    if (start..end - p).all(|k| s[k] == s[k + p]) {
        return (start, end);
    }
    // Collision: recompute directly from the middle of the claimed run.
    let mid = (start + end - p) / 2;
    let mut a = mid;
    while a > 0 && s[a - 1] == s[a - 1 + p] {
        a -= 1;
    }
    let mut e = mid;
    while e + p < s.len() && s[e] == s[e + p] {
        e += 1;
    }
    (a, e + p)
}

/// Every run, by direct comparison: O(n²). The reference for tests and the exact mode.
pub fn runs_naive(s: &[Sym]) -> Vec<Run> {
    let n = s.len();
    let mut out = Vec::new();
    for p in 1..=n / 2 {
        let mut i = 0;
        while i + p < n {
            if s[i] != s[i + p] {
                i += 1;
                continue;
            }
            let start = i;
            while i + p < n && s[i] == s[i + p] {
                i += 1;
            }
            let end = i + p;
            if end - start >= 2 * p {
                out.push(Run { period: p, start, end });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The sampled search finds exactly the runs of the quadratic reference.
        #[test]
        fn sampling_finds_every_run(s in prop::collection::vec(0u32..3, 0..80)) {
            let mut a = runs(&s);
            let mut b = runs_naive(&s);
            a.sort();
            b.sort();
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn simple_runs() {
        let s = [1, 2, 1, 2, 1, 2, 3];
        assert_eq!(runs(&s), vec![Run { period: 2, start: 0, end: 6 }]);
        assert!(runs(&[1, 2, 3, 4]).is_empty());
    }
}
