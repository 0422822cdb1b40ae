//! Maps and sets keyed by a protocol's stream ids, hashed with one multiply.
//!
//! A request over HTTP/2 or HTTP/3 inserts and removes its stream id a few times; std's
//! SipHash, made to resist keys chosen by an attacker, cost about 1.3 % of strain's CPU at
//! `--http2 -m 10` (perf). Stream ids are chosen by strain or are a peer's own increasing
//! counters, and a peer that picked colliding ids would slow only its own test.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A map from stream id.
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
/// A set of stream ids.
pub type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

/// Fibonacci hashing of an integer key: the multiply spreads its low bits into the top ones,
/// which hashbrown's control bytes use.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_i32(&mut self, n: i32) {
        self.write_u64(n as u32 as u64);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_every_id_apart() {
        let mut m: IdMap<i32, u32> = IdMap::default();
        for id in (1..20_001).step_by(2) {
            m.insert(id, id as u32 * 3);
        }
        assert_eq!(m.len(), 10_000);
        assert!((1..20_001).step_by(2).all(|id| m.remove(&id) == Some(id as u32 * 3)));
        assert!(m.is_empty());
        let s: IdSet<u64> = [0u64, 4, 8, u64::MAX].into_iter().collect();
        assert!(s.contains(&u64::MAX) && !s.contains(&1));
    }
}
