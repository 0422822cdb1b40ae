//! The per-thread recorder: plain counters and histograms owned by one worker.

use hdrhistogram::Histogram;

use super::{ErrorKind, MAX_LATENCY_US, SIGNIFICANT_DIGITS};

/// Status codes are three digits, so a flat array indexes them without hashing.
const STATUS_SLOTS: usize = 1000;

/// Everything one worker thread measured.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Latency of each completed request, in microseconds.
    pub latency_us: Histogram<u64>,
    /// The thread's request rate, sampled every [`super::RATE_SAMPLE_MS`].
    pub rate_samples: Histogram<u64>,
    /// Responses received complete.
    pub requests: u64,
    /// Bytes read from the server (after TLS decryption).
    pub bytes: u64,
    /// Failed requests and connects by kind.
    pub errors: [u64; ErrorKind::COUNT],
    /// Responses by status code.
    pub status: Box<[u64; STATUS_SLOTS]>,
    /// Connections established (TCP connected and, for TLS, handshaken).
    pub connections: u64,
    /// The first connect failure, kept to explain a run where nothing connected.
    pub first_connect_error: Option<String>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder {
            latency_us: new_histogram(MAX_LATENCY_US),
            rate_samples: new_histogram(u32::MAX as u64),
            requests: 0,
            bytes: 0,
            errors: [0; ErrorKind::COUNT],
            status: Box::new([0; STATUS_SLOTS]),
            connections: 0,
            first_connect_error: None,
        }
    }

    /// Records a complete response.
    #[inline]
    pub fn response(&mut self, status: u16, latency_us: u64) {
        self.requests += 1;
        self.latency_us.saturating_record(latency_us.clamp(1, MAX_LATENCY_US));
        if let Some(slot) = self.status.get_mut(status as usize) {
            *slot += 1;
        }
    }

    /// Counts a failure.
    #[inline]
    pub fn error(&mut self, kind: ErrorKind) {
        self.errors[kind as usize] += 1;
    }

    /// Counts a connect failure, keeping the first explanation.
    pub fn connect_error(&mut self, why: impl FnOnce() -> String) {
        self.error(ErrorKind::Connect);
        if self.first_connect_error.is_none() {
            self.first_connect_error = Some(why());
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
        self.requests += other.requests;
        self.bytes += other.bytes;
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
    }
}

fn new_histogram(high: u64) -> Histogram<u64> {
    // Bounds are constants known to be valid.
    Histogram::new_with_bounds(1, high, SIGNIFICANT_DIGITS).expect("constant histogram bounds are valid")
}
