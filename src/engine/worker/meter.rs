//! A worker's counters: the recorder, the current interval's histograms and the totals it is
//! measured against, the `Req/Sec` samples, the warm-up's end and the thread's CPU use.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use crate::engine::clock::Clock;
use crate::engine::transport::Live;
use crate::stats::interval::{SeriesSink, Snapshot, Spares};
use crate::stats::{latency_histogram, unused_histogram, Recorder, RATE_SAMPLE_MS, STATUS_SLOTS};

/// Everything a worker counts.
pub(super) struct Meter {
    /// The run's measurements.
    pub(super) rec: Recorder,
    /// The live time series.
    pub(super) interval: Ival,
    /// When the next `Req/Sec` sample is taken, and the responses at the last one.
    pub(super) sample_at_us: u64,
    sample_requests: u64,
    /// When the warm-up ends and measuring starts; `None` once measuring (or with no warm-up).
    pub(super) warm_at_us: Option<u64>,
    /// This thread's CPU time and run-queue wait when measuring started.
    cpu_at_start: Duration,
    waited_at_start: Duration,
    /// Rate mode: the uncorrected latency is kept too.
    paced: bool,
    /// Proxy tests: first bytes are timed.
    first_bytes: bool,
}

impl Meter {
    /// Counters for a worker whose warm-up ends at `warm`, cutting intervals into `series`.
    pub(super) fn new(clock: &Clock, warm: Instant, series: SeriesSink, paced: bool, first_bytes: bool) -> Meter {
        Meter {
            rec: Recorder::for_run(paced, first_bytes),
            interval: Ival::new(series, first_bytes, paced),
            sample_at_us: RATE_SAMPLE_MS * 1000,
            sample_requests: 0,
            warm_at_us: Some(clock.at(warm)).filter(|w| *w > 0),
            cpu_at_start: thread_cpu(),
            waited_at_start: thread_waited(),
            paced,
            first_bytes,
        }
    }

    /// CPU time used and run-queue wait since measuring started.
    pub(super) fn used(&self) -> (Duration, Duration) {
        (thread_cpu().saturating_sub(self.cpu_at_start), thread_waited().saturating_sub(self.waited_at_start))
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

    /// Sends the interval ending `now`, with `open` connections, and starts the next one.
    /// (`outcomes`: a judging workload's answers so far by outcome.)
    pub(super) fn cut(&mut self, now: u64, open: u64, live: Live, outcomes: &[(&'static str, u64)]) {
        let now_totals = Totals::of(&self.rec, live);
        self.interval.cut(now, open, now_totals, &self.rec.status, outcomes);
    }

    /// Ends the warm-up (its last interval already cut): everything measured so far is
    /// dropped but the connections (so a run whose connections all opened while warming up
    /// still shows that it connected); `in_flight` requests count as sent in the measured part,
    /// so every sent request still ends as exactly one outcome.
    pub(super) fn end_warmup(&mut self, now: u64, in_flight: u64) {
        let mut fresh = Recorder::for_run(self.paced, self.first_bytes);
        fresh.connections = self.rec.connections;
        fresh.first_connect_error = self.rec.first_connect_error.take();
        fresh.sent = in_flight;
        self.rec = fresh;
        // The protocol's own counts start again with the recorder's.
        self.interval.base = Totals::of(&self.rec, Live::default());
        self.interval.status_base.fill(0);
        self.interval.outcome_base.clear();
        self.sample_requests = 0;
        self.sample_at_us = now + RATE_SAMPLE_MS * 1000;
        self.cpu_at_start = thread_cpu();
        self.waited_at_start = thread_waited();
        self.warm_at_us = None;
    }
}

/// The recorder's running totals that an interval is measured against.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Totals {
    requests: u64,
    bytes: u64,
    errors: [u64; crate::stats::ErrorKind::COUNT],
    status_errors: u64,
    late: u64,
    sent: u64,
    connections: u64,
    goaways: u64,
    retried: u64,
}

impl Totals {
    fn of(rec: &Recorder, live: Live) -> Totals {
        Totals {
            requests: rec.requests,
            bytes: rec.bytes,
            errors: rec.errors,
            status_errors: rec.status_errors,
            late: rec.pacing.late,
            sent: rec.sent,
            connections: rec.connections,
            goaways: live.goaways,
            retried: live.retried,
        }
    }
}

/// Interval bookkeeping: the current interval's histograms and the totals at its start.
pub(super) struct Ival {
    every_us: u64,
    pub(super) next_at_us: u64,
    pub(super) start_us: u64,
    index: u32,
    pub(super) latency_us: hdrhistogram::Histogram<u64>,
    pub(super) ttfb_us: hdrhistogram::Histogram<u64>,
    /// Rate mode: latency from the actual send, for the live metrics beside the corrected.
    pub(super) uncorrected_us: Option<hdrhistogram::Histogram<u64>>,
    base: Totals,
    /// The recorder's status counts at the interval's start: a cut sends the difference, so
    /// counting a response stays one array increment (8 KB copied per interval, not per
    /// request).
    status_base: Box<[u64; STATUS_SLOTS]>,
    /// A judging workload's answers by outcome at the interval's start.
    outcome_base: Vec<(&'static str, u64)>,
    tx: Sender<Snapshot>,
    /// Histograms handed back, taken for the next interval instead of new ones.
    spares: Spares,
}

impl Ival {
    /// Intervals of `feed.every`, sent to `feed.tx`; `ttfb` when first bytes are timed (proxy
    /// tests), `paced` when latency is also kept from the actual send (rate mode).
    fn new(feed: SeriesSink, ttfb: bool, paced: bool) -> Ival {
        let SeriesSink { every, tx, spares } = feed;
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
            uncorrected_us: paced.then(latency_histogram),
            base: Totals::default(),
            status_base: Box::new([0; STATUS_SLOTS]),
            outcome_base: Vec::new(),
            tx,
            spares,
        }
    }

    /// Sends the interval ending `now` (totals `then`, status counts `status`) and starts the
    /// next one.
    fn cut(
        &mut self,
        now: u64,
        open: u64,
        then: Totals,
        status: &[u64; STATUS_SLOTS],
        outcomes: &[(&'static str, u64)],
    ) {
        let was = self.base;
        let mut errors_by_kind = then.errors;
        for (a, b) in errors_by_kind.iter_mut().zip(was.errors) {
            *a -= b;
        }
        let status_delta = status
            .iter()
            .zip(self.status_base.iter())
            .enumerate()
            .filter(|(_, (now, was))| now > was)
            .map(|(code, (now, was))| (code as u16, now - was))
            .collect();
        self.status_base.copy_from_slice(status);
        let base = &self.outcome_base;
        let was_of = |name: &str| base.iter().find(|(n, _)| *n == name).map_or(0, |o| o.1);
        let outcome_delta = outcomes
            .iter()
            .filter(|(name, n)| *n > was_of(name))
            .map(|(name, n)| (name.to_string(), n - was_of(name)))
            .collect();
        self.outcome_base.clear();
        self.outcome_base.extend_from_slice(outcomes);
        // These histograms go and empty ones of the same size take their place (spares the
        // coordinator handed back, cleared), rather than a copy going: no ~190 KiB copied per
        // cut on the worker.
        let fresh = (self.spares.take_like(&self.latency_us), self.spares.take_like(&self.ttfb_us));
        let latency_us = std::mem::replace(&mut self.latency_us, fresh.0);
        let ttfb_us = std::mem::replace(&mut self.ttfb_us, fresh.1);
        let spares = &self.spares;
        let uncorrected_us = self.uncorrected_us.as_mut().map(|u| std::mem::replace(u, spares.take_like(u)));
        let snap = Snapshot {
            index: self.index,
            start_us: self.start_us,
            end_us: now,
            latency_us,
            uncorrected_us,
            ttfb_us,
            bytes: then.bytes - was.bytes,
            requests: then.requests - was.requests,
            errors: errors_by_kind.iter().sum(),
            errors_by_kind,
            status_errors: then.status_errors - was.status_errors,
            late: then.late - was.late,
            sent: then.sent.saturating_sub(was.sent),
            goaways: then.goaways.saturating_sub(was.goaways),
            retried: then.retried.saturating_sub(was.retried),
            open,
            connects: then.connections - was.connections,
            status: status_delta,
            outcomes: outcome_delta,
        };
        // The coordinator only goes away when the run is over.
        let _ = self.tx.send(snap);
        self.base = then;
        self.index += 1;
        self.start_us = now;
        self.next_at_us += self.every_us;
        while self.next_at_us <= now {
            self.next_at_us += self.every_us;
        }
    }
}

/// Time the calling thread has spent ready to run but waiting for a CPU (the run-queue wait in
/// `/proc/thread-self/schedstat`; zero where the kernel does not keep it). A generator thread
/// that is busy or waiting for a CPU all the time is at its limit, even when a shared machine
/// gives it only part of a core.
fn thread_waited() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| super::behind::run_delay_ns(&s))
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// CPU time the calling thread has used (zero if the clock cannot be read).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_sends_the_status_counts_since_the_last_one() {
        let (tx, rx) = std::sync::mpsc::channel();
        let feed = SeriesSink { every: Duration::from_millis(100), tx, spares: Spares::default() };
        let mut ival = Ival::new(feed, false, false);
        let mut status = Box::new([0u64; STATUS_SLOTS]);
        status[200] = 5;
        status[404] = 1;
        ival.cut(100_000, 1, Totals::default(), &status, &[]);
        status[200] += 3;
        status[503] = 2;
        ival.cut(200_000, 1, Totals::default(), &status, &[]);
        // Nothing new: nothing sent, not even zeros.
        ival.cut(300_000, 1, Totals::default(), &status, &[]);
        let sent: Vec<Vec<(u16, u64)>> = rx.try_iter().map(|s| s.status).collect();
        assert_eq!(sent, vec![vec![(200, 5), (404, 1)], vec![(200, 3), (503, 2)], vec![]]);
    }
}
