//! A server of known capacity (`--service-time T --workers N`): every request of the test holds
//! one of N workers for a service time T, and requests beyond N wait their turn, first come
//! first served across all connections and all event-loop threads. Capacity is then exactly
//! N/T requests per second and, below it, latency is T: what a capacity search needs to check
//! itself against.
//!
//! No thread sleeps for a request. The workers are only the instants at which each becomes free
//! (a min-heap); admitting a request computes when it will be done, and the connection's output
//! waits for that instant with the same timer machinery as `--delay` (see `output.rs`'s `Due`).
//! [`requests`](super::requests) calls [`Pool::admit`] once per request of the test.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{OriginError, Service, ServiceDist};
use crate::rng::Rng;

/// The N workers of a [`Service`], shared by every event-loop thread.
#[derive(Debug)]
pub(super) struct Pool {
    time: Duration,
    dist: ServiceDist,
    /// One lock per request, held for a heap pop and push: even at 20,000 requests/s that is a
    /// few percent of one core's time under the lock, so threads rarely meet on it, and a
    /// single queue is what makes the order first come first served across threads.
    queue: Mutex<Queue>,
}

impl Pool {
    /// The pool `service` describes; refuses a zero service time or no workers.
    pub(super) fn new(service: &Service) -> Result<Pool, OriginError> {
        if service.time.is_zero() {
            return Err(OriginError::Invalid("service time must be above 0".into()));
        }
        if service.workers == 0 {
            return Err(OriginError::Invalid("service workers must be at least 1".into()));
        }
        Ok(Pool { time: service.time, dist: service.dist, queue: Mutex::new(Queue::new(service.workers)) })
    }

    /// When the answer to a request that arrived at `arrived` may start: once a worker has
    /// served it. Exponential times come from the thread's generator (seeded by `--seed`), so
    /// with them on, the 304 and abort choices that share it come out differently.
    pub(super) fn admit(&self, arrived: Instant, rng: &mut Rng) -> Instant {
        // Drawn before locking, so the lock is held for the heap alone.
        let time = match self.dist {
            ServiceDist::Fixed => self.time,
            ServiceDist::Exp => exp_sample(self.time, rng),
        };
        // A poisoned lock only means another thread panicked between a pop and a push; the heap
        // is still a valid heap (possibly one worker short), so serving on is safe.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).admit(arrived, time)
    }
}

/// The workers as the instants they become free: the pure queue behind [`Pool`].
#[derive(Debug)]
pub(super) struct Queue {
    workers: u32,
    /// When each busy-or-once-busy worker is free again, earliest first; fewer than `workers`
    /// entries means some worker has never worked and is free now.
    free_at: BinaryHeap<Reverse<Instant>>,
}

impl Queue {
    pub(super) fn new(workers: u32) -> Queue {
        // Capacity for the heap to grow into; a huge worker count just allocates as it fills.
        Queue { workers, free_at: BinaryHeap::with_capacity(workers.min(1024) as usize) }
    }

    /// Gives a request that arrived at `arrived` the earliest free worker for `time`; returns
    /// when it is done.
    pub(super) fn admit(&mut self, arrived: Instant, time: Duration) -> Instant {
        let start = if self.free_at.len() < self.workers as usize {
            arrived
        } else {
            match self.free_at.pop() {
                Some(Reverse(free)) => free.max(arrived),
                None => arrived,
            }
        };
        // Beyond what an Instant holds only for service times no test could wait for.
        let done = start.checked_add(time).unwrap_or(start);
        self.free_at.push(Reverse(done));
        done
    }
}

/// A service time drawn from the exponential distribution with mean `mean` (inverse transform).
fn exp_sample(mean: Duration, rng: &mut Rng) -> Duration {
    // `unit` is in [0, 1), so `1 - u` is in (0, 1] and its logarithm finite and at most 0;
    // `abs` rather than negation keeps -0.0 out of the conversion.
    let scale = (1.0 - rng.unit()).ln().abs();
    Duration::try_from_secs_f64(mean.as_secs_f64() * scale).unwrap_or(mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn admit_queues_first_come_first_served() {
        let t0 = Instant::now();
        let mut queue = Queue::new(2);
        // (arrival, done), both in ms after t0.
        let rows = [
            (0, 10),  // a free worker
            (0, 10),  // the other free worker
            (0, 20),  // waits for the first to finish at 10
            (5, 20),  // waits for the second, also done at 10
            (30, 40), // both idle again: served at once
        ];
        for (arrival, done) in rows {
            assert_eq!(queue.admit(t0 + ms(arrival), ms(10)), t0 + ms(done), "arrival at {arrival} ms");
        }
    }

    #[test]
    fn a_late_arrival_reported_out_of_order_starts_no_earlier_than_it_arrived() {
        let t0 = Instant::now();
        let mut queue = Queue::new(1);
        assert_eq!(queue.admit(t0 + ms(50), ms(10)), t0 + ms(60));
        // Another thread read its request earlier but took the lock later: it still waits for
        // the worker.
        assert_eq!(queue.admit(t0 + ms(40), ms(10)), t0 + ms(70));
    }

    #[test]
    fn exponential_samples_have_the_mean() {
        let mean = ms(5);
        let mut rng = Rng::new(7);
        let n = 100_000;
        let total: f64 = (0..n).map(|_| exp_sample(mean, &mut rng).as_secs_f64()).sum();
        let ratio = total / n as f64 / mean.as_secs_f64();
        assert!((ratio - 1.0).abs() < 0.02, "mean is {ratio} of T");
    }
}
