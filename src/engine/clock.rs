//! Monotonic microseconds since the run's start: one `u64` per timestamp, cheap to compare and
//! store in per-request state.

use std::time::Instant;

/// A monotonic clock counting microseconds from a fixed origin.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose zero is `origin`.
    pub fn new(origin: Instant) -> Clock {
        Clock { origin }
    }

    /// Microseconds since the origin (0 before it).
    #[inline]
    pub fn now_us(&self) -> u64 {
        self.origin.elapsed().as_micros() as u64
    }

    /// Microseconds from the origin to `t` (0 when `t` is earlier).
    pub fn at(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_micros() as u64
    }
}
