//! The merged, read-only result of a run, from which every report is rendered.

use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

use super::{ErrorKind, Recorder};

/// Shape of a set of samples, as wrk's `Thread Stats` rows show it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distribution {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1), as wrk computes it.
    pub stdev: f64,
    /// Share of samples within one standard deviation of the mean, in percent.
    pub within_stdev_pct: f64,
}

impl Distribution {
    /// Describes a histogram; all zeros when it is empty (never NaN).
    pub fn of(h: &Histogram<u64>) -> Distribution {
        let count = h.len();
        if count == 0 {
            return Distribution { count: 0, min: 0, max: 0, mean: 0.0, stdev: 0.0, within_stdev_pct: 0.0 };
        }
        let mean = h.mean();
        let mut sum_sq = 0.0;
        for v in h.iter_recorded() {
            let x = h.median_equivalent(v.value_iterated_to()) as f64;
            sum_sq += (x - mean).powi(2) * v.count_at_value() as f64;
        }
        let stdev = if count > 1 { (sum_sq / (count - 1) as f64).sqrt() } else { 0.0 };
        let (lo, hi) = (mean - stdev, mean + stdev);
        let within: u64 = h
            .iter_recorded()
            .filter(|v| {
                let x = h.median_equivalent(v.value_iterated_to()) as f64;
                x >= lo && x <= hi
            })
            .map(|v| v.count_at_value())
            .sum();
        Distribution {
            count,
            min: h.min(),
            max: h.max(),
            mean,
            stdev,
            within_stdev_pct: within as f64 * 100.0 / count as f64,
        }
    }
}

/// A finished run: merged measurements plus what is needed to put them in context.
#[derive(Debug, Clone)]
pub struct Summary {
    /// All threads' measurements added up.
    pub total: Recorder,
    /// Wall time from the start of load to its end.
    pub elapsed: Duration,
    /// When the load started.
    pub started: SystemTime,
}

impl Summary {
    /// Merges the threads' recorders (into the first: a fresh total's histograms would be
    /// most of the memory a run's end takes).
    pub fn new(recorders: Vec<Recorder>, elapsed: Duration, started: SystemTime) -> Summary {
        let mut all = recorders.into_iter();
        let mut total = all.next().unwrap_or_default();
        total.widen();
        for r in all {
            total.merge(&r);
        }
        Summary { total, elapsed, started }
    }

    /// Latency of completed requests, in microseconds.
    pub fn latency(&self) -> Distribution {
        Distribution::of(&self.total.latency_us)
    }

    /// Per-thread request rate samples.
    pub fn thread_rate(&self) -> Distribution {
        Distribution::of(&self.total.rate_samples)
    }

    /// Latency at percentile `p` (0-100), in microseconds; 0 when nothing completed.
    pub fn latency_percentile_us(&self, p: f64) -> u64 {
        if self.total.latency_us.is_empty() {
            return 0;
        }
        self.total.latency_us.value_at_percentile(p)
    }

    /// Completed requests per second of wall time.
    pub fn requests_per_s(&self) -> f64 {
        per_second(self.total.requests, self.elapsed)
    }

    /// Streams started per second of wall time, when the run's rate is of streams.
    pub fn started_per_s(&self) -> Option<f64> {
        self.total.sections.iter().find_map(|s| s.started()).map(|n| per_second(n, self.elapsed))
    }

    /// Bytes read per second of wall time.
    pub fn bytes_per_s(&self) -> f64 {
        per_second(self.total.bytes, self.elapsed)
    }

    /// Errors of one kind.
    pub fn errors(&self, kind: ErrorKind) -> u64 {
        self.total.errors[kind as usize]
    }

    /// Responses with a status above 399 (wrk's "Non-2xx or 3xx responses"); in a run whose
    /// protocol judges its answers (gRPC), those that failed (whatever their HTTP status).
    pub fn status_errors(&self) -> u64 {
        match self.total.sections.iter().find_map(|s| s.failed()) {
            Some(failed) => failed,
            None => self.total.status[400..].iter().sum(),
        }
    }

    /// (status code, count) for every status seen, in code order.
    pub fn status_counts(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.total.status.iter().enumerate().filter(|(_, &n)| n > 0).map(|(code, &n)| (code as u16, n))
    }
}

fn per_second(n: u64, elapsed: Duration) -> f64 {
    let s = elapsed.as_secs_f64();
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_matches_hand_arithmetic() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000, 3).unwrap();
        for v in [100, 200, 300, 400] {
            h.record(v).unwrap();
        }
        let d = Distribution::of(&h);
        assert_eq!((d.count, d.min, d.max), (4, 100, 400));
        assert!((d.mean - 250.0).abs() < 1e-9);
        // Sample stdev of 100..400 step 100 is sqrt(50000/3).
        assert!((d.stdev - (50000.0f64 / 3.0).sqrt()).abs() < 1e-9);
        // 200 and 300 lie within 250 +/- 129.1.
        assert!((d.within_stdev_pct - 50.0).abs() < 1e-9);
    }

    #[test]
    fn empty_distribution_is_zero_not_nan() {
        let h = Histogram::<u64>::new_with_bounds(1, 1000, 3).unwrap();
        let d = Distribution::of(&h);
        assert_eq!(d, Distribution { count: 0, min: 0, max: 0, mean: 0.0, stdev: 0.0, within_stdev_pct: 0.0 });
    }
}
