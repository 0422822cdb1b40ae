//! The random choices the origin makes (which conditional requests get 304, which responses are
//! cut and where): SplitMix64, one generator per thread, so no state is shared and a seed
//! repeats a run's choices for the same requests on the same threads.

/// A SplitMix64 generator.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// The generator of server thread `thread` for `seed`; threads get unrelated streams.
    pub(crate) fn new(seed: u64, thread: usize) -> Self {
        let mut rng = Rng(seed ^ (thread as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        // One step mixes the seed, so seeds 0, 1, 2 do not start with similar outputs.
        rng.next_u64();
        rng
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `p`; draws nothing when `p` is 0, so a feature that is off does not
    /// shift the choices of the others.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        // 53 random bits as a float in [0, 1): exact, and `p == 1` is always true.
        let unit = (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        unit < p
    }

    /// A number in `[0, n)`; `n` must be above 0.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        // Multiply-shift (Lemire) instead of `%`: no division, negligible bias for our ranges.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}
