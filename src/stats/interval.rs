//! The live time series: each worker cuts a [`Snapshot`] every interval and sends it to the
//! coordinating thread, which merges the threads' snapshots of one interval into an
//! [`IntervalRow`]. One message per thread per interval: nothing shared per request.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

/// One thread's measurements over one interval.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Interval number from the start (0-based).
    pub index: u32,
    /// Interval bounds in microseconds from the start (the last one may be short).
    pub start_us: u64,
    /// End of the interval.
    pub end_us: u64,
    /// Latency of responses completed in the interval (corrected in rate mode).
    pub latency_us: Histogram<u64>,
    /// Time to first byte of responses in the interval (proxy tests; empty otherwise).
    pub ttfb_us: Histogram<u64>,
    /// Bytes read in the interval.
    pub bytes: u64,
    /// Responses completed in the interval.
    pub requests: u64,
    /// Errors of every kind in the interval.
    pub errors: u64,
    /// The same, by kind (in [`crate::stats::ErrorKind::ALL`] order).
    pub errors_by_kind: [u64; crate::stats::ErrorKind::COUNT],
    /// Responses in the interval with a status above 399.
    pub status_errors: u64,
    /// Late sends in the interval.
    pub late: u64,
    /// Connections open at the end of the interval.
    pub open: u64,
    /// New connections established in the interval.
    pub connects: u64,
    /// Responses completed in the interval by status code, codes with none left out (a few
    /// entries, where the recorder's array has a thousand).
    pub status: Vec<(u16, u64)>,
}

/// All threads' measurements over one interval.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct IntervalRow {
    /// Seconds from the start to the interval's start.
    pub start_s: f64,
    /// Length in seconds.
    pub length_s: f64,
    /// Intended requests per second (rate mode), else null.
    pub target_per_s: Option<f64>,
    /// Completed requests per second.
    pub achieved_per_s: f64,
    /// Responses completed.
    pub requests: u64,
    /// Mean latency of the interval, microseconds.
    pub mean_us: f64,
    /// Latency percentiles and max of the interval, microseconds.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Largest.
    pub max_us: u64,
    /// Errors of every kind, responses with a status above 399 included.
    pub errors: u64,
    /// Responses with a status above 399 (also in `errors`, as `status` in `errors_by_kind`).
    pub status_errors: u64,
    /// Errors by kind, named.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Connections open at the end.
    pub open_connections: u64,
    /// Connections established during the interval.
    pub new_connections: u64,
    /// Requests sent more than a millisecond late.
    pub late: u64,
    /// Bytes read per second.
    pub bytes_per_s: f64,
    /// Mean time to first byte, microseconds (proxy tests).
    pub ttfb_mean_us: f64,
    /// 99th percentile time to first byte, microseconds (proxy tests).
    pub ttfb_p99_us: u64,
    /// Responses completed in the interval by status code, named as the result's top-level
    /// `status` (absent in results of strain 0.x before per-interval status counts). Over the
    /// measured rows each code adds up to the top-level count.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub status: BTreeMap<String, u64>,
    /// The interval's whole latency histogram (HdrHistogram V2, deflated, base64), so `strain
    /// merge` adds intervals exactly and a report can draw or join rows from it;
    /// absent in results of strain 0.x that wrote it for segmented runs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<String>,
}

impl IntervalRow {
    /// Merges the threads' snapshots of one interval (all with the same index); no snapshot
    /// merges into an empty row.
    pub fn merge(parts: &[Snapshot], target_per_s: Option<f64>) -> (IntervalRow, Histogram<u64>) {
        let empty = || crate::stats::Recorder::new().latency_us;
        let mut h = parts.first().map_or_else(empty, |p| p.latency_us.clone());
        h.reset();
        // The threads' first-byte histograms share their bounds (small where nothing is timed).
        let mut ttfb = parts.first().map_or_else(empty, |p| p.ttfb_us.clone());
        ttfb.reset();
        let (mut requests, mut errors, mut late, mut open, mut connects, mut bytes) = (0, 0, 0, 0, 0, 0);
        let mut status_errors = 0;
        let mut by_kind = [0u64; crate::stats::ErrorKind::COUNT];
        let mut status: BTreeMap<u16, u64> = BTreeMap::new();
        let (mut start, mut end) = (u64::MAX, 0);
        for p in parts {
            for &(code, n) in &p.status {
                *status.entry(code).or_default() += n;
            }
            let _ = h.add(&p.latency_us);
            let _ = ttfb.add(&p.ttfb_us);
            bytes += p.bytes;
            requests += p.requests;
            errors += p.errors;
            status_errors += p.status_errors;
            for (a, b) in by_kind.iter_mut().zip(p.errors_by_kind) {
                *a += b;
            }
            late += p.late;
            open += p.open;
            connects += p.connects;
            start = start.min(p.start_us);
            end = end.max(p.end_us);
        }
        let start = start.min(end);
        let length_s = (end.saturating_sub(start)) as f64 / 1e6;
        let at = |q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) };
        let per_s = |n: f64| if length_s > 0.0 { n / length_s } else { 0.0 };
        let row = IntervalRow {
            start_s: start as f64 / 1e6,
            length_s,
            target_per_s,
            achieved_per_s: per_s(requests as f64),
            requests,
            mean_us: if h.is_empty() { 0.0 } else { h.mean() },
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            max_us: if h.is_empty() { 0 } else { h.max() },
            errors: errors + status_errors,
            status_errors,
            errors_by_kind: crate::stats::ErrorKind::ALL
                .iter()
                .map(|k| k.name().to_string())
                .zip(by_kind)
                .chain([("status".to_string(), status_errors)])
                .filter(|(_, n)| *n > 0)
                .collect(),
            open_connections: open,
            new_connections: connects,
            late,
            bytes_per_s: per_s(bytes as f64),
            ttfb_mean_us: if ttfb.is_empty() { 0.0 } else { ttfb.mean() },
            ttfb_p99_us: if ttfb.is_empty() { 0 } else { ttfb.value_at_quantile(0.99) },
            status: status.into_iter().map(|(code, n)| (code.to_string(), n)).collect(),
            latency_histogram: None,
        };
        (row, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_snapshot_merges_into_an_empty_row() {
        let (row, h) = IntervalRow::merge(&[], Some(5.0));
        assert_eq!((row.start_s, row.length_s, row.requests, row.p99_us, row.errors), (0.0, 0.0, 0, 0, 0));
        assert_eq!(row.target_per_s, Some(5.0));
        assert!(h.is_empty());
    }

    #[test]
    fn threads_status_counts_add_up_by_code() {
        let part = |status: Vec<(u16, u64)>| Snapshot {
            index: 0,
            start_us: 0,
            end_us: 1_000_000,
            latency_us: crate::stats::latency_histogram(),
            ttfb_us: crate::stats::unused_histogram(),
            bytes: 0,
            requests: status.iter().map(|(_, n)| n).sum(),
            errors: 0,
            errors_by_kind: [0; crate::stats::ErrorKind::COUNT],
            status_errors: 0,
            late: 0,
            open: 0,
            connects: 0,
            status,
        };
        let (row, _) = IntervalRow::merge(&[part(vec![(200, 7), (404, 1)]), part(vec![(200, 2), (503, 4)])], None);
        let want: BTreeMap<String, u64> =
            [("200".to_string(), 9), ("404".to_string(), 1), ("503".to_string(), 4)].into_iter().collect();
        assert_eq!(row.status, want);
    }
}
