//! The time-driven half of a worker: what happens because the clock moved rather than a
//! socket — when requests go out ([`When`]: closed loop, paced sends on a timer, connection
//! arrivals), deadlines, rate samples, interval cuts and the drain at the end.

use super::*;
use crate::stats::{latency_histogram, unused_histogram};

/// When this thread sends, settled when the worker is made.
pub(super) enum When<'a> {
    /// Each connection sends again as soon as its response completes.
    ClosedLoop,
    /// Requests come due on this thread's share of a schedule.
    Paced(Paced<'a>),
    /// Connections arrive on a schedule, each sending at once; at most `-c` open.
    Arrivals(Arrivals<'a>),
}

/// Rate mode: the schedule, the connections free to take a due request, and the timer that
/// wakes the loop when one is due.
pub(super) struct Paced<'a> {
    pub(super) pacer: Pacer<'a>,
    pub(super) idle: Vec<u32>,
    pub(super) timer: Timer,
    /// A request came due while no connection was free.
    pub(super) starved: bool,
}

/// Arriving connections: their schedule and the slots free for them.
pub(super) struct Arrivals<'a> {
    pub(super) pacer: Pacer<'a>,
    pub(super) free: Vec<u32>,
}

impl<'a> When<'a> {
    /// This thread's timing, with its timer registered on `poll` in rate mode.
    pub(super) fn new(plan: &'a Plan, index: usize, conns: usize, poll: &Poll) -> Result<When<'a>, EngineError> {
        Ok(match &plan.when {
            WhenPlan::ClosedLoop => When::ClosedLoop,
            WhenPlan::Paced { schedule, tick_us } => {
                let timer = Timer::new().map_err(EngineError::Poll)?;
                poll.registry()
                    .register(&mut mio::unix::SourceFd(&timer.raw_fd()), TIMER, Interest::READABLE)
                    .map_err(EngineError::Poll)?;
                When::Paced(Paced {
                    pacer: Pacer::new(schedule, share_index(plan, index), share_stride(plan), *tick_us),
                    idle: Vec::with_capacity(conns),
                    timer,
                    starved: false,
                })
            }
            WhenPlan::Arrivals(schedule) => When::Arrivals(Arrivals {
                pacer: Pacer::new(schedule, share_index(plan, index), share_stride(plan), 0),
                free: (0..conns as u32).rev().collect(),
            }),
        })
    }
}

/// Request `k` of the whole schedule belongs to segment `k mod N`, and within it to thread
/// `(k div N) mod T`: thread `t` of segment `s` takes `s + N t`, then every `N T`-th. The N
/// processes' threads together send exactly the one schedule.
fn share_index(plan: &Plan, thread: usize) -> usize {
    plan.segment.index as usize + plan.segment.count.max(1) as usize * thread
}

/// See [`share_index`].
fn share_stride(plan: &Plan) -> usize {
    plan.segment.count.max(1) as usize * plan.threads
}

/// The recorder's running totals that an interval is measured against.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Totals {
    requests: u64,
    bytes: u64,
    errors: [u64; crate::stats::ErrorKind::COUNT],
    status_errors: u64,
    late: u64,
    connections: u64,
}

impl Totals {
    fn of(rec: &Recorder) -> Totals {
        Totals {
            requests: rec.requests,
            bytes: rec.bytes,
            errors: rec.errors,
            status_errors: rec.status_errors,
            late: rec.pacing.late,
            connections: rec.connections,
        }
    }
}

/// Interval bookkeeping: the current interval's histograms and the totals at its start.
pub(super) struct Ival {
    every_us: u64,
    pub(super) next_at_us: u64,
    start_us: u64,
    index: u32,
    pub(super) latency_us: hdrhistogram::Histogram<u64>,
    pub(super) ttfb_us: hdrhistogram::Histogram<u64>,
    base: Totals,
    tx: Sender<Snapshot>,
}

impl Ival {
    /// Intervals of `every`, sent to `tx`; `ttfb` when first bytes are timed (proxy tests).
    pub(super) fn new(every: Duration, tx: Sender<Snapshot>, ttfb: bool) -> Ival {
        let every_us = every.as_micros().max(1) as u64;
        // A full-range histogram is ~190 KiB, copied into every snapshot: where nothing is ever
        // recorded in it, the smallest one does.
        let ttfb_us = if ttfb { latency_histogram() } else { unused_histogram() };
        Ival {
            every_us,
            next_at_us: every_us,
            start_us: 0,
            index: 0,
            latency_us: latency_histogram(),
            ttfb_us,
            base: Totals::default(),
            tx,
        }
    }
}

impl Worker<'_> {
    /// Sends this thread's measurements of the interval ending now and starts the next one.
    pub(super) fn cut_interval(&mut self, now: u64) {
        let open = match &self.wire {
            Wire::H1 => self.conns.iter().filter(|c| !matches!(c.state, State::Closed | State::Connecting)).count(),
            Wire::H2(links) => links.open(),
        } as u64;
        let now_totals = Totals::of(&self.rec);
        let iv = &mut self.interval;
        let (then, was) = (now_totals, iv.base);
        let mut errors_by_kind = then.errors;
        for (a, b) in errors_by_kind.iter_mut().zip(was.errors) {
            *a -= b;
        }
        let snap = Snapshot {
            index: iv.index,
            start_us: iv.start_us,
            end_us: now,
            latency_us: iv.latency_us.clone(),
            ttfb_us: iv.ttfb_us.clone(),
            bytes: then.bytes - was.bytes,
            requests: then.requests - was.requests,
            errors: errors_by_kind.iter().sum(),
            errors_by_kind,
            status_errors: then.status_errors - was.status_errors,
            late: then.late - was.late,
            open,
            connects: then.connections - was.connections,
        };
        // The coordinator only goes away when the run is over.
        let _ = iv.tx.send(snap);
        iv.latency_us.reset();
        iv.ttfb_us.reset();
        iv.base = now_totals;
        iv.index += 1;
        iv.start_us = now;
        iv.next_at_us += iv.every_us;
        while iv.next_at_us <= now {
            iv.next_at_us += iv.every_us;
        }
    }

    /// Ends the warm-up: its last interval is cut and everything measured so far is dropped
    /// but the connections (so a run whose connections all opened while warming up still shows
    /// that it connected). Requests in flight now count as sent in the measured part, so every
    /// sent request still ends as exactly one outcome.
    pub(super) fn end_warmup(&mut self, now: u64) {
        if self.interval.start_us < now {
            self.cut_interval(now);
        }
        let mut fresh = self.fresh_recorder();
        fresh.connections = self.rec.connections;
        fresh.first_connect_error = self.rec.first_connect_error.take();
        fresh.sent = self.in_flight() as u64 * u64::from(self.pipeline);
        self.rec = fresh;
        self.interval.base = Totals::of(&self.rec);
        self.sample_requests = 0;
        self.sample_at_us = now + RATE_SAMPLE_MS * 1000;
        self.cpu_at_start = thread_cpu();
        self.waited_at_start = thread_waited();
        self.warm_at_us = None;
    }

    /// The earliest moment something is due: end, rate sample, deadline or retry.
    pub(super) fn next_wake(&mut self, now: u64) -> u64 {
        let conns = &self.conns;
        let deadline = self.deadlines.next(|d| live(conns, d)).unwrap_or(u64::MAX);
        let retry = self.timers.peek().map_or(u64::MAX, |r| r.0 .0);
        let end = if self.draining { u64::MAX } else { self.end_us };
        let cut = self.interval.next_at_us;
        let arrival = match &self.when {
            When::Arrivals(a) if !self.draining => a.pacer.next_due().unwrap_or(u64::MAX),
            _ => u64::MAX,
        };
        // Connections still to open are opened on the next turn, without sleeping.
        let open = if !self.to_open.is_empty() && self.connecting < self.max_connecting && !self.draining {
            now
        } else {
            u64::MAX
        };
        let link_deadline = match &mut self.wire {
            Wire::H2(links) => links.next_deadline().unwrap_or(u64::MAX),
            Wire::H1 => u64::MAX,
        };
        end.min(cut)
            .min(link_deadline)
            .min(self.warm_at_us.unwrap_or(u64::MAX))
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
        match &self.when {
            When::Paced(p) if !p.idle.is_empty() && !self.draining => p.pacer.next_due().unwrap_or(u64::MAX),
            _ => u64::MAX,
        }
    }

    /// Wakes the loop exactly when the next paced request is due (epoll only sleeps whole ms).
    pub(super) fn arm_timer(&mut self, now: u64) {
        let due = self.next_send();
        if let When::Paced(p) = &mut self.when {
            if due != u64::MAX && due > now {
                // A timer that cannot be set leaves the millisecond poll as the fallback.
                let _ = p.timer.arm(due, now);
            }
        }
    }

    /// `--new-conn-rate`: opens the connections that have arrived, in free slots; an arrival
    /// that finds every slot busy is counted and dropped (the client side is saturated).
    pub(super) fn arrive(&mut self, now: u64) {
        if self.draining {
            return;
        }
        loop {
            let When::Arrivals(a) = &mut self.when else { return };
            match a.pacer.next_due() {
                Some(due) if due <= now => {
                    a.pacer.take();
                }
                _ => return,
            }
            match a.free.pop() {
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
            let When::Paced(p) = &mut self.when else { return };
            let Some(due) = p.pacer.next_due() else { return };
            if due > now {
                p.starved = false;
                return;
            }
            let Some(i) = p.idle.pop() else {
                p.starved = true;
                return;
            };
            let i = i as usize;
            if self.conns[i].state != State::Idle {
                continue;
            }
            p.pacer.take();
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
        if let When::Paced(p) = &self.when {
            // A run stopped early never meant to send what was due after the stop.
            self.rec.pacing.unsent = p.pacer.left_before(self.clock.now_us().min(self.end_us));
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

    /// Records one `Req/Sec` sample: responses per second since the last sample.
    pub(super) fn sample_rate(&mut self, now: u64) {
        let interval_us = RATE_SAMPLE_MS * 1000;
        let elapsed_us = now - (self.sample_at_us - interval_us);
        let done = self.rec.requests - self.sample_requests;
        self.rec.rate_sample(done * 1_000_000 / elapsed_us.max(1));
        self.sample_requests = self.rec.requests;
        self.sample_at_us = now + interval_us;
    }

    /// Fails every request (or connect) whose deadline has passed.
    pub(super) fn expire(&mut self, now: u64) {
        if let Wire::H2(_) = self.wire {
            self.expire_links(now);
        }
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
