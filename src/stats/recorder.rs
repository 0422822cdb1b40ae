//! The per-thread recorder: plain counters and histograms owned by one worker.

use hdrhistogram::Histogram;

use super::{ErrorKind, MAX_LATENCY_US, SIGNIFICANT_DIGITS};

/// Status codes are three digits, so a flat array indexes them without hashing.
pub const STATUS_SLOTS: usize = 1000;

/// Everything one worker thread measured.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Latency of each completed request, in microseconds. In rate mode it runs from when the
    /// request should have been sent (corrected for coordinated omission).
    pub latency_us: Histogram<u64>,
    /// In rate mode, latency from when the request was actually written (uncorrected).
    pub uncorrected_us: Histogram<u64>,
    /// How paced requests kept to their schedule.
    pub pacing: Pacing,
    /// Paced sends: how long after its due time each request was written, microseconds (two
    /// significant digits: the replay's lag percentiles need no more, and it stays small).
    pub lag_us: Histogram<u64>,
    /// Proxy tests: time to the first byte of each response, microseconds.
    pub ttfb_us: Histogram<u64>,
    /// Proxy tests: responses the client abandoned mid-body on purpose.
    pub aborted: u64,
    /// The first few content mismatches, explained.
    pub content_failures: Vec<String>,
    /// `--new-conn-rate`: arrivals dropped because every connection slot was busy.
    pub arrivals_dropped: u64,
    /// The thread's request rate, sampled every [`super::RATE_SAMPLE_MS`].
    pub rate_samples: Histogram<u64>,
    /// Requests written (or being written): each ends as a response, a failure or a timeout.
    pub sent: u64,
    /// Responses received complete.
    pub requests: u64,
    /// Bytes read from the server (after TLS decryption).
    pub bytes: u64,
    /// Failed requests and connects by kind.
    pub errors: [u64; ErrorKind::COUNT],
    /// Responses by status code.
    pub status: Box<[u64; STATUS_SLOTS]>,
    /// Responses with a status above 399, kept apart so intervals can count them cheaply.
    pub status_errors: u64,
    /// Connections established (TCP connected and, for TLS, handshaken).
    pub connections: u64,
    /// The first connect failure, kept to explain a run where nothing connected.
    pub first_connect_error: Option<String>,
    /// Connect failures by cause (in [`ConnectCause::ALL`] order); they sum to the connect errors.
    pub connect_causes: [u64; ConnectCause::COUNT],
    /// The protocols' own counts (HTTP/2's, HTTP/3's, a unit's), a section each.
    pub sections: super::section::Sections,
    /// `--targets`: responses and latency per target, in the file's order.
    pub targets: Vec<TargetCount>,
}

/// One target's responses and their latency (the run's own latency kind: corrected in rate
/// mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetCount {
    /// Responses completed.
    pub requests: u64,
    /// Their latencies added up, microseconds.
    pub latency_sum_us: u64,
    /// The largest.
    pub latency_max_us: u64,
    /// Requests that failed (timeouts, resets, broken connections; not connects, which carry
    /// no request).
    pub errors: u64,
}

named! {
    /// Why a connect failed: the causes that call for different remedies.
    pub enum ConnectCause {
        /// No local address and port left for the target (EADDRNOTAVAIL): the local port range
        /// is used up, TIME_WAIT included.
        AddressNotAvailable,
        /// Nothing listens there (ECONNREFUSED), or the listener's queue is full.
        Refused,
        /// No answer within `--timeout` (or the kernel gave up: ETIMEDOUT).
        TimedOut,
        /// The TLS handshake failed.
        Tls,
        /// Anything else (reset, unreachable, out of file descriptors).
        Other,
    }
}

impl ConnectCause {
    /// The name used in the text report.
    pub fn words(self) -> &'static str {
        match self {
            ConnectCause::AddressNotAvailable => "address not available",
            ConnectCause::Refused => "refused",
            ConnectCause::TimedOut => "timed out",
            ConnectCause::Tls => "TLS",
            ConnectCause::Other => "other",
        }
    }

    /// The cause of an OS error from `connect`.
    pub fn of_io(e: &std::io::Error) -> ConnectCause {
        match e.raw_os_error() {
            Some(libc::EADDRNOTAVAIL) => ConnectCause::AddressNotAvailable,
            Some(libc::ECONNREFUSED) => ConnectCause::Refused,
            Some(libc::ETIMEDOUT) => ConnectCause::TimedOut,
            _ => ConnectCause::Other,
        }
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder::for_run(true, true)
    }

    /// An empty recorder for a worker: the uncorrected latency is kept only when requests
    /// are `paced`, first bytes only when timed (`first_bytes`). A full-range histogram is
    /// ~190 KiB whose every page is written when it is made, so the ones a run never records
    /// into are the smallest possible.
    pub fn for_run(paced: bool, first_bytes: bool) -> Recorder {
        let sized = |used: bool| if used { latency_histogram() } else { unused_histogram() };
        Recorder {
            latency_us: latency_histogram(),
            uncorrected_us: sized(paced),
            pacing: Pacing::default(),
            lag_us: if paced { lag_histogram() } else { unused_histogram() },
            ttfb_us: sized(first_bytes),
            aborted: 0,
            content_failures: Vec::new(),
            arrivals_dropped: 0,
            rate_samples: new_histogram(u32::MAX as u64),
            sent: 0,
            requests: 0,
            bytes: 0,
            errors: [0; ErrorKind::COUNT],
            status: Box::new([0; STATUS_SLOTS]),
            status_errors: 0,
            connections: 0,
            first_connect_error: None,
            connect_causes: [0; ConnectCause::COUNT],
            sections: super::section::Sections::default(),
            targets: Vec::new(),
        }
    }

    /// Gives the histograms a worker never recorded into (see [`Recorder::for_run`]) the full
    /// range, so a total prints as one made whole (wrk2's listing shows a histogram's layout).
    pub fn widen(&mut self) {
        for h in [&mut self.uncorrected_us, &mut self.ttfb_us] {
            if h.high() < MAX_LATENCY_US {
                *h = latency_histogram();
            }
        }
    }

    /// Counts a failed request to target `k`.
    pub fn target_failed(&mut self, k: usize) {
        if k >= self.targets.len() {
            self.targets.resize(k + 1, TargetCount::default());
        }
        self.targets[k].errors += 1;
    }

    /// Counts a response to target `k` (its first one grows the table, once per target).
    #[inline]
    pub fn target_done(&mut self, k: usize, latency_us: u64) {
        if k >= self.targets.len() {
            self.targets.resize(k + 1, TargetCount::default());
        }
        let t = &mut self.targets[k];
        t.requests += 1;
        t.latency_sum_us = t.latency_sum_us.saturating_add(latency_us);
        t.latency_max_us = t.latency_max_us.max(latency_us);
    }

    /// Records a complete response.
    #[inline]
    pub fn response(&mut self, status: u16, latency_us: u64) {
        self.answered(Some(status), latency_us, None);
    }

    /// Counts a response whose latency is recorded with another (pipelining).
    #[inline]
    pub fn counted(&mut self, status: u16) {
        self.requests += 1;
        self.status_errors += u64::from(status > 399);
        if let Some(slot) = self.status.get_mut(status as usize) {
            *slot += 1;
        }
    }

    /// Records a complete paced response: corrected and uncorrected latency.
    #[inline]
    pub fn paced_response(&mut self, status: u16, corrected_us: u64, uncorrected_us: u64) {
        self.answered(Some(status), corrected_us, Some(uncorrected_us));
    }

    /// Records a complete answer: its status when it had one (a gRPC call its server reset
    /// has none), its latency, and in rate mode its latency from the actual send.
    #[inline]
    pub fn answered(&mut self, status: Option<u16>, latency_us: u64, uncorrected_us: Option<u64>) {
        match status {
            Some(status) => self.counted(status),
            None => self.requests += 1,
        }
        self.latency_us.saturating_record(latency_us.clamp(1, MAX_LATENCY_US));
        if let Some(u) = uncorrected_us {
            self.uncorrected_us.saturating_record(u.clamp(1, MAX_LATENCY_US));
        }
    }

    /// Counts a failure.
    #[inline]
    pub fn error(&mut self, kind: ErrorKind) {
        self.errors[kind as usize] += 1;
    }

    /// Counts a connect failure by cause, keeping the first explanation.
    pub fn connect_error(&mut self, cause: ConnectCause, why: impl FnOnce() -> String) {
        self.error(ErrorKind::Connect);
        self.connect_causes[cause as usize] += 1;
        if self.first_connect_error.is_none() {
            self.first_connect_error = Some(why());
        }
    }

    /// Counts a body that was not the document asked for, keeping the first few explanations.
    pub fn content_error(&mut self, why: String) {
        self.error(ErrorKind::Content);
        if self.content_failures.len() < MAX_CONTENT_FAILURES {
            self.content_failures.push(why);
        }
    }

    /// Records one rate sample (requests per second over the last interval).
    pub fn rate_sample(&mut self, per_s: u64) {
        self.rate_samples.saturating_record(per_s);
    }

    /// Adds another thread's measurements into this one.
    pub fn merge(&mut self, other: &Recorder) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.latency_us.add(&other.latency_us);
        let _ = self.rate_samples.add(&other.rate_samples);
        let _ = self.uncorrected_us.add(&other.uncorrected_us);
        self.pacing.merge(&other.pacing);
        if self.lag_us.high() < other.lag_us.high() {
            self.lag_us = lag_histogram();
        }
        let _ = self.lag_us.add(&other.lag_us);
        let _ = self.ttfb_us.add(&other.ttfb_us);
        self.aborted += other.aborted;
        self.arrivals_dropped += other.arrivals_dropped;
        for f in &other.content_failures {
            if self.content_failures.len() < MAX_CONTENT_FAILURES {
                self.content_failures.push(f.clone());
            }
        }
        self.sent += other.sent;
        self.requests += other.requests;
        self.bytes += other.bytes;
        self.status_errors += other.status_errors;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        for (a, b) in self.status.iter_mut().zip(other.status.iter()) {
            *a += b;
        }
        self.connections += other.connections;
        if self.first_connect_error.is_none() {
            self.first_connect_error.clone_from(&other.first_connect_error);
        }
        for (a, b) in self.connect_causes.iter_mut().zip(other.connect_causes) {
            *a += b;
        }
        self.sections.tally(&other.sections);
        if self.targets.len() < other.targets.len() {
            self.targets.resize(other.targets.len(), TargetCount::default());
        }
        for (a, b) in self.targets.iter_mut().zip(&other.targets) {
            a.requests += b.requests;
            a.latency_sum_us += b.latency_sum_us;
            a.latency_max_us = a.latency_max_us.max(b.latency_max_us);
            a.errors += b.errors;
        }
    }
}

/// Content mismatches kept with their explanation (the rest are only counted).
pub const MAX_CONTENT_FAILURES: usize = 5;

/// Lateness above this is a late send: it is more than the timer's own resolution.
pub const LATE_SEND_US: u64 = 1_000;

/// What a send waited for between its due time and its write (it matters only when late).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// A connection was free at its due time, the thread took more than [`LATE_SEND_US`]
    /// after one came free, or it was behind (away from its poll or waiting for a CPU) for
    /// over half the wait: the generator's own delay, with how much of the wait was its own
    /// (µs: all of it when a connection was free at the due time).
    Generator(u64),
    /// Every connection was under way when it came due.
    Busy,
    /// The connection it went on was still being opened when it came due.
    Connecting,
}

/// How well the generator kept to its rate schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pacing {
    /// Requests written, in rate mode.
    pub sent: u64,
    /// Requests written more than [`LATE_SEND_US`] after their intended time.
    pub late: u64,
    /// Of those, requests that found no free connection when they came due (every one was
    /// under way, or still being opened), while strain's own thread kept up.
    pub late_no_connection: u64,
    /// Of those, requests whose connection was still being opened (connect, TLS, or a
    /// reconnect) when they came due.
    pub late_connecting: u64,
    /// Total lateness of late requests, microseconds.
    pub late_sum_us: u64,
    /// The delay strain's own thread added to the late sends it is blamed for
    /// ([`Waited::Generator`]): a send that waited 300 ms behind busy connections and then 2 ms
    /// for the thread adds 2 ms.
    pub late_generator_sum_us: u64,
    /// Worst lateness, microseconds.
    pub late_max_us: u64,
    /// Requests that came due before the end but were never sent.
    pub unsent: u64,
}

impl Pacing {
    /// Records one send `late_us` after its intended time, and why it waited.
    #[inline]
    pub fn sent(&mut self, late_us: u64, waited: Waited) {
        self.sent += 1;
        if late_us > LATE_SEND_US {
            self.late += 1;
            self.late_sum_us += late_us;
            self.late_max_us = self.late_max_us.max(late_us);
            self.late_connecting += u64::from(waited == Waited::Connecting);
            match waited {
                Waited::Generator(own_us) => self.late_generator_sum_us += own_us.min(late_us),
                Waited::Busy | Waited::Connecting => self.late_no_connection += 1,
            }
        }
    }

    /// Late sends with a connection free at their due time: strain's own thread was behind.
    pub fn late_generator(&self) -> u64 {
        self.late.saturating_sub(self.late_no_connection)
    }

    /// The mean delay strain's own thread added to the late sends it is blamed for,
    /// microseconds (0 when none were).
    pub fn late_generator_mean_us(&self) -> f64 {
        match self.late_generator() {
            0 => 0.0,
            n => self.late_generator_sum_us as f64 / n as f64,
        }
    }

    fn merge(&mut self, o: &Pacing) {
        self.sent += o.sent;
        self.late += o.late;
        self.late_no_connection += o.late_no_connection;
        self.late_connecting += o.late_connecting;
        self.late_sum_us += o.late_sum_us;
        self.late_generator_sum_us += o.late_generator_sum_us;
        self.late_max_us = self.late_max_us.max(o.late_max_us);
        self.unsent += o.unsent;
    }
}

/// An empty latency histogram: 1 µs to [`MAX_LATENCY_US`].
pub fn latency_histogram() -> Histogram<u64> {
    new_histogram(MAX_LATENCY_US)
}

/// An empty send-lag histogram: 1 µs to [`MAX_LATENCY_US`], two significant digits.
pub fn lag_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 2).unwrap_or_else(|_| unused_histogram())
}

/// The smallest histogram, for a series nothing is recorded into (others add into it fine).
pub fn unused_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 2, 1).unwrap_or_else(|_| latency_histogram())
}

fn new_histogram(high: u64) -> Histogram<u64> {
    // Bounds are constants known to be valid.
    Histogram::new_with_bounds(1, high, SIGNIFICANT_DIGITS).expect("constant histogram bounds are valid")
}
