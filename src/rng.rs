//! The one random-number generator: SplitMix64, small, fast and seedable, one per thread so no
//! state is shared. The proxy workload picks URLs with it, the origin decides 304s and aborts
//! with it, the fuzzer makes inputs with it; a seed repeats a run's choices.

/// A SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator starting at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The generator of thread `thread` for `seed`: threads get unrelated streams, and one step
    /// mixes the seed so seeds 0, 1, 2 do not start with similar outputs.
    pub fn for_thread(seed: u64, thread: usize) -> Rng {
        let mut rng = Rng(seed ^ (thread as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// A float in [0, 1): 53 random bits, exact.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`; draws nothing when `p` is 0, so a feature that is off does not
    /// shift the choices of the others (`p == 1` is always true).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// A number in `[0, n)`; `n` must be above 0.
    pub fn below(&mut self, n: u64) -> u64 {
        // Multiply-shift (Lemire) instead of `%`: no division, negligible bias for our ranges.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// SplitMix64's finaliser: a well-spread hash of a 64-bit value.
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
