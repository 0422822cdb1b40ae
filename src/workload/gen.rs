//! URL choice for cache tests: a share of requests (`hit_rate`) goes to a hot set of documents a
//! cache can keep; the rest are misses, documents never asked for before anywhere.
//!
//! Hot ids are a pure function of the configuration and the wall clock (the hot set drifts
//! `evolve_per_hour` times an hour), so many client processes share one hot set without talking.
//! Miss ids come from a 62-bit space seeded per process and thread, so they do not repeat.
//! Sizes are fixed per id: `doc_size`, or jtest's mix of classes and multipliers.

use super::doc::Doc;

/// Size classes of jtest's default mix and their weights in percent.
const SIZE_CLASSES: [(u64, f64); 4] = [(100, 35.0), (1_000, 50.0), (10_000, 14.0), (100_000, 1.0)];
/// Multipliers 1 to 9 of a size class and their weights in percent (jtest's).
const MULTIPLIER_WEIGHTS: [f64; 9] = [1.8, 7.3, 14.6, 19.5, 19.5, 15.6, 10.4, 5.8, 5.5];
/// Miss ids start here, far above any hot id.
const MISS_BASE: u64 = 1 << 62;

/// How URLs are chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadConfig {
    /// Share of requests that go to the hot set (jtest -z).
    pub hit_rate: f64,
    /// Documents in the hot set (jtest -Z).
    pub hotset: u64,
    /// Zipf exponent for popularity within the hot set; `None` is uniform.
    pub zipf: Option<f64>,
    /// How many times an hour the hot set is entirely replaced, gradually.
    pub evolve_per_hour: f64,
    /// Every document's size; `None` is jtest's size mix.
    pub doc_size: Option<u64>,
    /// Seed of the random choices.
    pub seed: u64,
    /// This process's share of a split test (`--segment I/N`): (I, N). With a uniform hot set
    /// it asks only for the hot ranks congruent to I mod N, so the N processes' hot sets are
    /// disjoint and together are the whole, with the same hit rate; a URL list is shared the
    /// same way. Zipf popularity keeps the one shared hot set: restricting each process to a
    /// residue class would change how often each rank is asked for.
    pub share: (u64, u64),
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            hit_rate: 0.4,
            hotset: 1000,
            zipf: None,
            evolve_per_hour: 0.0,
            doc_size: None,
            seed: 1,
            share: (0, 1),
        }
    }
}

pub use crate::rng::{mix, Rng};

/// The size of document `id` under jtest's mix: a class times a multiplier, both fixed by id.
pub fn mixed_size(id: u64) -> u64 {
    let h = mix(id ^ 0x5151_5151);
    let pick = |x: u64, weights: &mut dyn Iterator<Item = f64>| {
        let mut u = (x % 1_000_000) as f64 / 10_000.0;
        let mut i = 0;
        for w in weights {
            if u < w {
                return i;
            }
            u -= w;
            i += 1;
        }
        i - 1
    };
    let class = SIZE_CLASSES[pick(h & 0xFFFF_FFFF, &mut SIZE_CLASSES.iter().map(|c| c.1))].0;
    let mult = pick(h >> 32, &mut MULTIPLIER_WEIGHTS.iter().copied()) as u64 + 1;
    class * mult
}

/// One thread's URL chooser.
#[derive(Debug)]
pub struct Generator {
    cfg: WorkloadConfig,
    rng: Rng,
    /// Cumulative Zipf weights over hot-set ranks, when popularity is Zipf.
    zipf_cdf: Vec<f64>,
    miss_seq: u64,
    miss_stream: u64,
}

impl Generator {
    /// A generator for one thread; `stream` must differ between the threads and processes
    /// that should not repeat each other's misses.
    pub fn new(cfg: &WorkloadConfig, stream: u64) -> Generator {
        let zipf_cdf = match cfg.zipf {
            Some(alpha) if cfg.hotset > 0 => {
                let mut acc = 0.0;
                let mut cdf: Vec<f64> = (1..=cfg.hotset)
                    .map(|r| {
                        acc += 1.0 / (r as f64).powf(alpha);
                        acc
                    })
                    .collect();
                let total = acc;
                cdf.iter_mut().for_each(|c| *c /= total);
                cdf
            }
            _ => Vec::new(),
        };
        Generator {
            cfg: cfg.clone(),
            rng: Rng::new(mix(cfg.seed ^ mix(stream))),
            zipf_cdf,
            miss_seq: 0,
            miss_stream: mix(stream ^ cfg.seed.rotate_left(17)),
        }
    }

    /// The document to request at `unix_s` (seconds since the epoch, for the hot set's drift).
    pub fn next(&mut self, unix_s: f64) -> Doc {
        let hot = self.cfg.hotset > 0 && self.rng.unit() < self.cfg.hit_rate;
        let id = if hot { self.hot_id(unix_s) } else { self.miss_id() };
        Doc { id, len: self.cfg.doc_size.unwrap_or_else(|| mixed_size(id)) }
    }

    /// A member of the hot set at time `unix_s`: rank by popularity, then the window's offset.
    fn hot_id(&mut self, unix_s: f64) -> u64 {
        let n = self.cfg.hotset;
        let (index, count) = self.cfg.share;
        let rank = if self.zipf_cdf.is_empty() && count > 1 && index < n {
            // The ranks congruent to `index` mod `count`: a disjoint share of the hot set.
            let mine = (n - index).div_ceil(count);
            index + count * (self.rng.next_u64() % mine)
        } else if self.zipf_cdf.is_empty() {
            self.rng.next_u64() % n
        } else {
            let u = self.rng.unit();
            self.zipf_cdf.partition_point(|&c| c < u).min(n as usize - 1) as u64
        };
        // The window [shift, shift + n) slides one id at a time, n ids per period. Rank r is the
        // id in the window congruent to r mod n, so an id keeps its popularity while it stays.
        let shift = (unix_s.max(0.0) * self.cfg.evolve_per_hour / 3600.0 * n as f64) as u64;
        shift + (rank + n - shift % n) % n
    }

    /// Consecutive ids from a random start in a 2^62 space: never repeated within a stream,
    /// and two streams overlap only if their starts fall within a run's misses of each other.
    fn miss_id(&mut self) -> u64 {
        self.miss_seq += 1;
        MISS_BASE + (self.miss_stream.wrapping_add(self.miss_seq) & (MISS_BASE - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn hit_rate_and_hot_set_hold() {
        let cfg = WorkloadConfig { hit_rate: 0.9, hotset: 100, doc_size: Some(10), ..Default::default() };
        let mut g = Generator::new(&cfg, 7);
        let docs: Vec<Doc> = (0..100_000).map(|_| g.next(0.0)).collect();
        let hot = docs.iter().filter(|d| d.id < 100).count();
        // 90% +/- 0.5% (binomial sd is 0.1%).
        assert!((89_500..=90_500).contains(&hot), "{hot}");
        // Every hot id is used; every miss is new.
        let hot_ids: HashSet<u64> = docs.iter().filter(|d| d.id < 100).map(|d| d.id).collect();
        assert_eq!(hot_ids.len(), 100);
        let misses: Vec<u64> = docs.iter().filter(|d| d.id >= 100).map(|d| d.id).collect();
        assert_eq!(misses.iter().collect::<HashSet<_>>().len(), misses.len());
        assert!(docs.iter().all(|d| d.len == 10));
    }

    #[test]
    fn streams_share_hot_ids_but_not_misses() {
        let cfg = WorkloadConfig { hit_rate: 0.5, hotset: 10, ..Default::default() };
        let (mut a, mut b) = (Generator::new(&cfg, 1), Generator::new(&cfg, 2));
        let da: Vec<Doc> = (0..10_000).map(|_| a.next(0.0)).collect();
        let db: Vec<Doc> = (0..10_000).map(|_| b.next(0.0)).collect();
        let hot = |v: &[Doc]| v.iter().filter(|d| d.id < 10).map(|d| d.id).collect::<HashSet<_>>();
        assert_eq!(hot(&da), hot(&db));
        let miss = |v: &[Doc]| v.iter().filter(|d| d.id >= 10).map(|d| d.id).collect::<HashSet<_>>();
        assert!(miss(&da).is_disjoint(&miss(&db)));
        // Sizes are a function of the id, the same in every stream.
        for d in da.iter().filter(|d| d.id < 10) {
            assert_eq!(d.len, mixed_size(d.id));
        }
    }

    #[test]
    fn segments_ask_for_disjoint_shares_of_the_hot_set_at_the_same_hit_rate() {
        let n = 3;
        let mut union = HashSet::new();
        for i in 0..n {
            let cfg =
                WorkloadConfig { hit_rate: 0.8, hotset: 100, doc_size: Some(1), share: (i, n), ..Default::default() };
            let mut g = Generator::new(&cfg, 10 + i);
            let docs: Vec<Doc> = (0..60_000).map(|_| g.next(0.0)).collect();
            let hot: HashSet<u64> = docs.iter().filter(|d| d.id < 100).map(|d| d.id).collect();
            assert!(hot.iter().all(|id| id % n == i), "segment {i}");
            assert!(union.is_disjoint(&hot));
            union.extend(hot);
            let rate = docs.iter().filter(|d| d.id < 100).count() as f64 / docs.len() as f64;
            assert!((rate - 0.8).abs() < 0.01, "segment {i}: {rate}");
        }
        assert_eq!(union, (0..100).collect(), "together, the whole hot set");
    }

    #[test]
    fn zipf_favours_low_ranks() {
        let cfg =
            WorkloadConfig { hit_rate: 1.0, hotset: 1000, zipf: Some(1.0), doc_size: Some(1), ..Default::default() };
        let mut g = Generator::new(&cfg, 3);
        let n = 100_000;
        let first = (0..n).filter(|_| g.next(0.0).id == 0).count() as f64 / n as f64;
        // P(rank 1) = 1 / H(1000) = 0.1336.
        assert!((first - 0.1336).abs() < 0.006, "{first}");
    }

    #[test]
    fn the_hot_set_drifts_with_evolve() {
        let cfg = WorkloadConfig {
            hit_rate: 1.0,
            hotset: 100,
            evolve_per_hour: 1.0,
            doc_size: Some(1),
            ..Default::default()
        };
        let mut g = Generator::new(&cfg, 4);
        let window = |g: &mut Generator, t: f64| (0..20_000).map(|_| g.next(t).id).collect::<HashSet<u64>>();
        // At t = 0 the window is 0..100; half an hour later it is 50..150.
        assert_eq!(window(&mut g, 0.0), (0..100).collect());
        assert_eq!(window(&mut g, 1800.0), (50..150).collect());
        assert_eq!(window(&mut g, 3600.0), (100..200).collect());
    }

    #[test]
    fn size_mix_follows_jtest_weights() {
        let n = 200_000u64;
        let small = (0..n).filter(|&id| mixed_size(id) < 1_000).count() as f64 / n as f64;
        let huge = (0..n).filter(|&id| mixed_size(id) >= 100_000).count() as f64 / n as f64;
        assert!((small - 0.35).abs() < 0.01, "{small}");
        assert!((huge - 0.01).abs() < 0.002, "{huge}");
        assert!((0..n).all(|id| mixed_size(id) % 100 == 0 && mixed_size(id) <= 900_000));
    }
}
