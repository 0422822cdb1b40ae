//! One counter with a single writer that any thread may read while the server runs: the
//! origin's live counters, its own and its units', are made of it.

use std::sync::atomic::{AtomicU64, Ordering};

/// One counter with a single writer.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`; only the owning thread may call this.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        // Single writer: no read-modify-write needed, and readers only need each value whole.
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
