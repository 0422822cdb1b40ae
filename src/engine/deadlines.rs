//! Request and connect deadlines as a FIFO queue.
//!
//! Every deadline is "start + the one --timeout", and starts are pushed in time order, so the
//! queue is always sorted and needs no heap. An entry carries the connection's generation; when
//! the connection has moved on (response arrived, reconnected), the entry is stale and simply
//! dropped when it reaches the front. Steady state allocates nothing: the ring buffer keeps its
//! capacity.

use std::collections::VecDeque;

/// One pending deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// When it expires, in clock microseconds.
    pub at_us: u64,
    /// The connection it belongs to.
    pub conn: u32,
    /// The connection's generation when it was set.
    pub generation: u32,
}

/// Deadlines in expiry order.
#[derive(Debug, Default)]
pub struct Deadlines {
    queue: VecDeque<Deadline>,
}

impl Deadlines {
    /// Adds a deadline; `at_us` must not be earlier than any already queued.
    pub fn push(&mut self, d: Deadline) {
        debug_assert!(self.queue.back().is_none_or(|b| b.at_us <= d.at_us));
        self.queue.push_back(d);
    }

    /// Removes and returns the front deadline if `live` says it still matters and it has
    /// expired by `now_us`; stale front entries are discarded on the way.
    pub fn pop_expired(&mut self, now_us: u64, live: impl Fn(&Deadline) -> bool) -> Option<Deadline> {
        while let Some(front) = self.queue.front() {
            if !live(front) {
                self.queue.pop_front();
            } else if front.at_us <= now_us {
                return self.queue.pop_front();
            } else {
                return None;
            }
        }
        None
    }

    /// The earliest live deadline, dropping stale ones in front of it.
    pub fn next(&mut self, live: impl Fn(&Deadline) -> bool) -> Option<u64> {
        while let Some(front) = self.queue.front() {
            if live(front) {
                return Some(front.at_us);
            }
            self.queue.pop_front();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(at_us: u64, conn: u32, generation: u32) -> Deadline {
        Deadline { at_us, conn, generation }
    }

    #[test]
    fn expired_live_entries_come_out_in_order_and_stale_ones_vanish() {
        let mut q = Deadlines::default();
        for x in [d(10, 0, 1), d(20, 1, 1), d(30, 0, 2), d(40, 2, 1)] {
            q.push(x);
        }
        // Connection 0 has moved to generation 2: its first entry is stale.
        let live = |x: &Deadline| !(x.conn == 0 && x.generation == 1);
        assert_eq!(q.next(live), Some(20));
        assert_eq!(q.pop_expired(15, live), None);
        assert_eq!(q.pop_expired(35, live), Some(d(20, 1, 1)));
        assert_eq!(q.pop_expired(35, live), Some(d(30, 0, 2)));
        assert_eq!(q.pop_expired(35, live), None);
        assert_eq!(q.next(|_| false), None);
    }
}
