//! The one generator of the workspace's Rust code: SplitMix64 (Steele, Lea & Flood, OOPSLA
//! 2014), 64 bits of state, one addition and a mix per draw, the same numbers for the same state
//! on every machine. Synthetic traces, the compute cut's deterministic samples, the simulator's
//! draws and the fuzzer's cases use it. (The skeletons' runtimes draw with their own xorshift64*,
//! which the simulator mirrors where it prices a skeleton as it runs.)

/// Advances `state` by one draw and returns its 64 random bits.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The top 53 of 64 random bits as a number uniform in [0, 1).
pub fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A SplitMix64 generator over its own state.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }

    /// A number uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        unit(self.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first outputs of SplitMix64 from state 0, as its reference implementation gives them.
    #[test]
    fn the_first_draws_are_the_reference_ones() {
        let mut g = SplitMix64(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn a_unit_draw_lies_in_zero_to_one() {
        assert_eq!(unit(0), 0.0);
        assert!(unit(u64::MAX) < 1.0);
    }
}
