//! The time-driven half of a worker: what happens because the clock moved rather than a
//! socket — paced sends and their timer, connection arrivals, deadlines, reconnects, rate
//! samples, interval cuts and the drain at the end.

use super::*;

/// Interval bookkeeping: the current interval's histogram and the totals at its start.
pub(super) struct Ival {
    pub(super) every_us: u64,
    pub(super) next_at_us: u64,
    pub(super) start_us: u64,
    pub(super) index: u32,
    pub(super) latency_us: hdrhistogram::Histogram<u64>,
    pub(super) ttfb_us: hdrhistogram::Histogram<u64>,
    pub(super) base: (u64, u64, u64, u64),
    pub(super) base_bytes: u64,
    pub(super) base_errors: [u64; crate::stats::ErrorKind::COUNT],
    pub(super) base_status_errors: u64,
    pub(super) tx: Sender<Snapshot>,
}

impl Worker<'_> {
    /// Sends this thread's measurements of the interval ending now and starts the next one.
    pub(super) fn cut_interval(&mut self, now: u64) {
        let open = self.conns.iter().filter(|c| !matches!(c.state, State::Closed | State::Connecting)).count() as u64;
        let totals =
            (self.rec.requests, self.rec.errors.iter().sum::<u64>(), self.rec.pacing.late, self.rec.connections);
        let Some(iv) = self.interval.as_mut() else { return };
        let snap = Snapshot {
            index: iv.index,
            start_us: iv.start_us,
            end_us: now,
            latency_us: iv.latency_us.clone(),
            ttfb_us: iv.ttfb_us.clone(),
            bytes: self.rec.bytes - iv.base_bytes,
            requests: totals.0 - iv.base.0,
            errors: totals.1 - iv.base.1,
            errors_by_kind: {
                let mut d = self.rec.errors;
                for (a, b) in d.iter_mut().zip(iv.base_errors) {
                    *a -= b;
                }
                d
            },
            status_errors: self.rec.status_errors - iv.base_status_errors,
            late: totals.2 - iv.base.2,
            open,
            connects: totals.3 - iv.base.3,
        };
        // The coordinator only goes away when the run is over.
        let _ = iv.tx.send(snap);
        iv.latency_us.reset();
        iv.ttfb_us.reset();
        iv.base = totals;
        iv.base_bytes = self.rec.bytes;
        iv.base_errors = self.rec.errors;
        iv.base_status_errors = self.rec.status_errors;
        iv.index += 1;
        iv.start_us = now;
        iv.next_at_us += iv.every_us;
        while iv.next_at_us <= now {
            iv.next_at_us += iv.every_us;
        }
    }

    /// The earliest moment something is due: end, rate sample, deadline or retry.
    pub(super) fn next_wake(&mut self, now: u64) -> u64 {
        let conns = &self.conns;
        let deadline = self.deadlines.next(|d| live(conns, d)).unwrap_or(u64::MAX);
        let retry = self.timers.peek().map_or(u64::MAX, |r| r.0 .0);
        let end = if self.draining { u64::MAX } else { self.end_us };
        let cut = self.interval.as_ref().map_or(u64::MAX, |iv| iv.next_at_us);
        let arrival = match &self.arrivals {
            Some(a) if !self.draining => a.next_due().unwrap_or(u64::MAX),
            _ => u64::MAX,
        };
        // Connections still to open are opened on the next turn, without sleeping.
        let open = if !self.to_open.is_empty() && self.connecting < self.max_connecting && !self.draining {
            now
        } else {
            u64::MAX
        };
        end.min(cut)
            .min(arrival)
            .min(self.sample_at_us)
            .min(deadline)
            .min(retry)
            .min(self.next_send())
            .min(open)
            .max(now)
    }

    /// When the next paced request can go out: its due time, if a connection is free for it.
    pub(super) fn next_send(&self) -> u64 {
        match &self.pacer {
            Some(p) if !self.idle.is_empty() && !self.draining => p.next_due().unwrap_or(u64::MAX),
            _ => u64::MAX,
        }
    }

    /// Wakes the loop exactly when the next paced request is due (epoll only sleeps whole ms).
    pub(super) fn arm_timer(&mut self, now: u64) {
        let due = self.next_send();
        if let Some(t) = self.timer.as_mut() {
            if due != u64::MAX && due > now {
                // A timer that cannot be set leaves the millisecond poll as the fallback.
                let _ = t.arm(due, now);
            }
        }
    }

    /// `--new-conn-rate`: opens the connections that have arrived, in free slots; an arrival
    /// that finds every slot busy is counted and dropped (the client side is saturated).
    pub(super) fn arrive(&mut self, now: u64) {
        if self.draining {
            return;
        }
        while let Some(due) = self.arrivals.as_ref().and_then(|a| a.next_due()) {
            if due > now {
                return;
            }
            if let Some(a) = self.arrivals.as_mut() {
                a.take();
            }
            match self.free.pop() {
                Some(i) => self.open(i as usize),
                None => self.rec.arrivals_dropped += 1,
            }
        }
    }

    /// Rate mode: sends every request that has come due, on free connections.
    pub(super) fn dispatch(&mut self, now: u64) {
        if self.draining {
            return;
        }
        loop {
            let Some(due) = self.pacer.as_ref().and_then(|p| p.next_due()) else { return };
            if due > now {
                self.starved = false;
                return;
            }
            let Some(i) = self.idle.pop() else {
                self.starved = true;
                return;
            };
            let i = i as usize;
            if self.conns[i].state != State::Idle {
                continue;
            }
            if let Some(p) = self.pacer.as_mut() {
                p.take();
            }
            self.send(i, due);
        }
    }

    /// At the end of the test (or when it is stopped early), requests already sent are still
    /// waited for (up to their timeout), so the count strain reports is the count the server
    /// answered; connections with nothing in flight close now.
    pub(super) fn start_drain(&mut self) {
        self.draining = true;
        self.timers.clear();
        self.to_open.clear();
        if let Some(p) = &self.pacer {
            // A run stopped early never meant to send what was due after the stop.
            self.rec.pacing.unsent = p.left_before(self.clock.now_us().min(self.end_us));
        }
        for i in 0..self.conns.len() {
            if matches!(self.conns[i].state, State::Connecting | State::Closed | State::Idle | State::Delayed) {
                self.close(i);
            }
        }
    }

    /// Connections with a request written (or being written) and no complete response yet.
    pub(super) fn in_flight(&self) -> usize {
        self.conns.iter().filter(|c| matches!(c.state, State::Writing | State::Reading)).count()
    }

    pub(super) fn sample_rate(&mut self, now: u64) {
        let interval_us = RATE_SAMPLE_MS * 1000;
        let elapsed_us = now - (self.sample_at_us - interval_us);
        let done = self.rec.requests - self.sample_requests;
        self.rec.rate_sample(done * 1_000_000 / elapsed_us.max(1));
        self.sample_requests = self.rec.requests;
        self.sample_at_us = now + interval_us;
    }

    pub(super) fn expire(&mut self, now: u64) {
        loop {
            let conns = &self.conns;
            let Some(d) = self.deadlines.pop_expired(now, |d| live(conns, d)) else { return };
            let i = d.conn as usize;
            if self.conns[i].state == State::Connecting {
                self.connect_failed(i, ConnectCause::TimedOut, "connect timed out".to_string());
            } else {
                self.fail(i, ErrorKind::Timeout);
            }
        }
    }
}
