//! Byte rates per connection: the origin's `--byte-rate` and the client's slow readers and
//! senders (`--read-rate`, `--write-rate`) spend the same budget. A throttled client
//! connection stops reading or writing when its budget is spent and is woken by a timer when
//! it refills: a slow connection costs a timer entry, never a spin.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The smallest budget a slow rate refills at once: below it a connection at 1 KB/s would
/// wake twenty times a second for 50 bytes; this way it wakes four times for 256.
const MIN_SLICE: u64 = 256;

/// A per-connection byte rate: a budget of one slice (a twentieth of a second's worth, at
/// least [`MIN_SLICE`] bytes or the whole rate) that refills a slice's time after it was last
/// refilled, so the average never exceeds the rate and bursts never exceed a slice.
#[derive(Debug)]
pub struct Throttle {
    slice: usize,
    every: Duration,
    budget: usize,
    refill: Option<Instant>,
}

impl Throttle {
    /// A throttle of `rate` bytes per second (above 0).
    pub fn new(rate: u64) -> Self {
        let rate = rate.max(1);
        let slice = (rate / 20).max(MIN_SLICE.min(rate));
        let every = Duration::from_secs_f64(slice as f64 / rate as f64);
        Throttle { slice: usize::try_from(slice).unwrap_or(usize::MAX), every, budget: 0, refill: None }
    }

    /// Bytes that may be moved now, or when more may be.
    pub fn allowance(&mut self, now: Instant) -> Result<usize, Instant> {
        if self.budget == 0 {
            if let Some(at) = self.refill.filter(|&at| now < at) {
                return Err(at);
            }
            self.budget = self.slice;
            self.refill = Some(now + self.every);
        }
        Ok(self.budget)
    }

    /// `n` bytes were moved.
    pub fn spend(&mut self, n: usize) {
        self.budget = self.budget.saturating_sub(n);
    }
}

/// A direction of a connection a throttle holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Way {
    /// Reading (a slow reader).
    Read,
    /// Writing (a slow sender).
    Write,
}

/// A thread's throttled connections waiting for their budgets, earliest first: the worker
/// waits no longer than the first and then hands each due one a poll event of its own.
#[derive(Debug, Clone, Default)]
pub struct Wakes(Rc<RefCell<BinaryHeap<Reverse<Wake>>>>);

/// When a connection (its poll token) may go on, and which way.
type Wake = (Instant, usize, Way);

impl Wakes {
    /// When the first waiting connection may go on.
    pub fn next(&self) -> Option<Instant> {
        self.0.borrow().peek().map(|Reverse((at, _, _))| *at)
    }

    /// A connection (its poll token) whose budget came back by `now`, and which way.
    pub fn pop_due(&self, now: Instant) -> Option<(usize, Way)> {
        let mut heap = self.0.borrow_mut();
        match heap.peek() {
            Some(Reverse((at, _, _))) if *at <= now => heap.pop().map(|Reverse((_, token, way))| (token, way)),
            _ => None,
        }
    }

    fn push(&self, at: Instant, token: usize, way: Way) {
        self.0.borrow_mut().push(Reverse((at, token, way)));
    }
}

/// The slow client's rates in bytes per second (`None`: as fast as the socket goes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rates {
    /// `--read-rate`.
    pub read: Option<u64>,
    /// `--write-rate`.
    pub write: Option<u64>,
}

impl Rates {
    /// Neither way is throttled.
    pub fn none(self) -> bool {
        self.read.is_none() && self.write.is_none()
    }

    /// The receive buffer a slow reader asks for: about a second of its rate (at least 4 KiB,
    /// at most 256 KiB), so the server's bytes wait in the server's buffers, as they do for a
    /// slow reader far away, not in a large local one that makes the reader look fast.
    pub fn recv_buffer(self) -> Option<usize> {
        self.read.map(|r| usize::try_from(r.clamp(4096, 256 * 1024)).unwrap_or(256 * 1024))
    }
}

/// One connection's throttles and where it waits for them.
#[derive(Debug)]
pub struct Throttles {
    rates: Rates,
    read: Option<Throttle>,
    write: Option<Throttle>,
    /// When a wake is already waiting, per way: one entry per refill, never one per try.
    waiting: [Option<Instant>; 2],
    token: usize,
    wakes: Wakes,
}

impl Throttles {
    /// `rates` for the connection polled as `token`, woken through `wakes`.
    pub fn new(rates: Rates, token: usize, wakes: Wakes) -> Throttles {
        Throttles {
            rates,
            read: rates.read.map(Throttle::new),
            write: rates.write.map(Throttle::new),
            waiting: [None, None],
            token,
            wakes,
        }
    }

    /// Bytes `way` may move now (`usize::MAX` when it is not throttled), or `None` when its
    /// budget is spent: the wake is set.
    pub fn allowance(&mut self, way: Way) -> Option<usize> {
        let now = Instant::now();
        let t = match way {
            Way::Read => self.read.as_mut(),
            Way::Write => self.write.as_mut(),
        };
        let Some(t) = t else { return Some(usize::MAX) };
        match t.allowance(now) {
            Ok(n) => Some(n),
            Err(at) => {
                let waiting = &mut self.waiting[way as usize];
                if waiting.is_none_or(|w| w <= now) {
                    *waiting = Some(at);
                    self.wakes.push(at, self.token, way);
                }
                None
            }
        }
    }

    /// `n` bytes went `way`.
    pub fn spend(&mut self, way: Way, n: usize) {
        let t = match way {
            Way::Read => self.read.as_mut(),
            Way::Write => self.write.as_mut(),
        };
        if let Some(t) = t {
            t.spend(n);
        }
    }

    /// The receive buffer the connection asks for ([`Rates::recv_buffer`]).
    pub fn recv_buffer(&self) -> Option<usize> {
        self.rates.recv_buffer()
    }

    /// Whether `way` is throttled.
    pub fn limits(&self, way: Way) -> bool {
        match way {
            Way::Read => self.read.is_some(),
            Way::Write => self.write.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_rate_refills_in_slices_of_at_least_256_bytes() {
        let mut t = Throttle::new(1000);
        let now = Instant::now();
        assert_eq!(t.allowance(now), Ok(256));
        t.spend(256);
        let at = t.allowance(now).unwrap_err();
        assert_eq!(at - now, Duration::from_millis(256));
        assert_eq!(t.allowance(at), Ok(256));
        // A rate below the floor refills its whole second at once.
        assert_eq!(Throttle::new(100).allowance(now), Ok(100));
        // A fast one a twentieth of a second's worth.
        assert_eq!(Throttle::new(1_000_000).allowance(now), Ok(50_000));
    }

    #[test]
    fn a_spent_budget_sets_one_wake_until_it_passes() {
        let wakes = Wakes::default();
        let mut p = Throttles::new(Rates { read: Some(1000), write: None }, 7, wakes.clone());
        assert_eq!(p.allowance(Way::Write), Some(usize::MAX));
        assert_eq!(p.allowance(Way::Read), Some(256));
        p.spend(Way::Read, 256);
        assert_eq!(p.allowance(Way::Read), None);
        assert_eq!(p.allowance(Way::Read), None);
        let at = wakes.next().unwrap();
        assert_eq!(wakes.pop_due(at - Duration::from_millis(1)), None);
        assert_eq!(wakes.pop_due(at), Some((7, Way::Read)));
        assert_eq!(wakes.pop_due(at), None);
    }
}
