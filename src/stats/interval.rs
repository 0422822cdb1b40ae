//! The live time series: each worker cuts a [`Snapshot`] every interval and sends it to the
//! coordinating thread, which merges the threads' snapshots of one interval into an
//! [`IntervalRow`]. One message per thread per interval: nothing shared per request.

use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Where a worker sends its interval snapshots, and takes spent histograms back from.
#[derive(Debug, Clone)]
pub struct SeriesSink {
    /// The interval's length.
    pub every: Duration,
    /// The coordinating thread's end.
    pub tx: Sender<Snapshot>,
    /// Histograms the coordinating thread is done with.
    pub spares: Spares,
}

/// Most histograms kept for reuse: a few per thread cover the intervals in flight.
const MAX_SPARES: usize = 64;

/// Interval latency histograms the coordinating thread is done with, handed back for the
/// workers' next cuts, instead of a fresh ~190 KiB histogram per thread per cut that another
/// thread frees into the worker's arena, where such blocks fragmented a soak's memory
/// (docs/benchmarks.md, "Soak after the series fix").
#[derive(Debug, Clone, Default)]
pub struct Spares(Arc<Mutex<Vec<Histogram<u64>>>>);

impl Spares {
    /// An empty histogram with `like`'s bounds: a spare cleared, or a new one.
    pub fn take_like(&self, like: &Histogram<u64>) -> Histogram<u64> {
        if like.high() < crate::stats::MAX_LATENCY_US {
            return Histogram::new_from(like);
        }
        let spare = self.0.lock().ok().and_then(|mut v| v.pop());
        match spare {
            Some(mut h) if (h.low(), h.high(), h.sigfig()) == (like.low(), like.high(), like.sigfig()) => {
                h.reset();
                h
            }
            _ => Histogram::new_from(like),
        }
    }

    /// Hands `h` back, if it is a full-range latency histogram (the small placeholders of
    /// untimed things are not worth keeping).
    pub fn give(&self, h: Histogram<u64>) {
        if h.high() < crate::stats::MAX_LATENCY_US {
            return;
        }
        if let Ok(mut v) = self.0.lock() {
            if v.len() < MAX_SPARES {
                v.push(h);
            }
        }
    }

    /// Hands back the histograms of snapshots that were merged.
    pub fn give_parts(&self, parts: Vec<Snapshot>) {
        for p in parts {
            self.give(p.latency_us);
            self.give(p.ttfb_us);
            if let Some(u) = p.uncorrected_us {
                self.give(u);
            }
        }
    }
}

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
    /// Rate mode: latency from the actual send (`latency_us` is from the intended send).
    pub uncorrected_us: Option<Histogram<u64>>,
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
    /// Requests sent in the interval.
    pub sent: u64,
    /// HTTP/2: GOAWAY frames received in the interval.
    pub goaways: u64,
    /// HTTP/2: requests refused after a GOAWAY and sent again in the interval.
    pub retried: u64,
    /// Connections open at the end of the interval.
    pub open: u64,
    /// New connections established in the interval.
    pub connects: u64,
    /// Responses completed in the interval by status code, codes with none left out (a few
    /// entries, where the recorder's array has a thousand).
    pub status: Vec<(u16, u64)>,
    /// A judging workload's answers completed in the interval by outcome (gRPC's calls by
    /// status), outcomes with none left out.
    pub outcomes: Vec<(String, u64)>,
}

/// All threads' measurements over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
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
    /// Requests sent (each ends as a response or one error; absent in results of strain 0.x
    /// before it was kept per interval).
    #[serde(default)]
    pub sent: u64,
    /// HTTP/2: GOAWAY frames received (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub goaways: u64,
    /// HTTP/2: requests refused after a GOAWAY and sent again (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: u64,
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
    /// A judging workload's answers completed in the interval by outcome: gRPC's calls by
    /// status, named as the result's `grpc.codes` (the key is gRPC's, the one such workload,
    /// as results have written it).
    #[serde(default, rename = "grpc", skip_serializing_if = "BTreeMap::is_empty")]
    pub outcomes: BTreeMap<String, u64>,
    /// The interval's whole latency histogram (HdrHistogram V2, deflated, base64), so `strain
    /// merge` adds intervals exactly and a report can draw or join rows from it. Set on the
    /// result's rows once the load is over (a row shown live comes with its histogram);
    /// absent in results of strain 0.x that wrote it for segmented runs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<String>,
}

/// An interval's latency histograms, as an observer sees them.
#[derive(Debug, Clone, Copy)]
pub struct Latencies<'a> {
    /// Latency of the interval's responses (from when each was due, in rate mode).
    pub corrected: &'a Histogram<u64>,
    /// Rate mode: the same from when each was actually sent.
    pub uncorrected: Option<&'a Histogram<u64>>,
}

/// Serde: a count of zero is left out.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Snapshot {
    /// Rate mode: the threads' uncorrected histograms of one interval, added up (taken out of
    /// the snapshots, so nothing is copied); `None` in closed loop.
    /// The others stay in their snapshots, to be handed back ([`Spares::give_parts`]).
    pub fn take_uncorrected(parts: &mut [Snapshot]) -> Option<Histogram<u64>> {
        let mut first = parts.iter_mut().find_map(|p| p.uncorrected_us.take())?;
        for h in parts.iter().filter_map(|p| p.uncorrected_us.as_ref()) {
            let _ = first.add(h);
        }
        Some(first)
    }
}

impl IntervalRow {
    /// Merges the threads' snapshots of one interval (all with the same index); no snapshot
    /// merges into an empty row.
    pub fn merge(parts: &mut [Snapshot], target_per_s: Option<f64>) -> (IntervalRow, Histogram<u64>) {
        // The first thread's histograms become the interval's, the others are added to them:
        // a row costs no copy of a ~190 KiB histogram. (The threads' first-byte histograms share
        // their bounds, small where nothing is timed.)
        let unused = crate::stats::unused_histogram;
        let (mut h, mut ttfb) = match parts.first_mut() {
            Some(p) => (std::mem::replace(&mut p.latency_us, unused()), std::mem::replace(&mut p.ttfb_us, unused())),
            None => (crate::stats::latency_histogram(), unused()),
        };
        let (mut requests, mut errors, mut late, mut open, mut connects, mut bytes) = (0, 0, 0, 0, 0, 0);
        let (mut sent, mut goaways, mut retried) = (0, 0, 0);
        let mut status_errors = 0;
        let mut by_kind = [0u64; crate::stats::ErrorKind::COUNT];
        let mut status: BTreeMap<u16, u64> = BTreeMap::new();
        let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
        let (mut start, mut end) = (u64::MAX, 0);
        for (i, p) in parts.iter().enumerate() {
            for &(code, n) in &p.status {
                *status.entry(code).or_default() += n;
            }
            for (name, n) in &p.outcomes {
                *outcomes.entry(name.clone()).or_default() += n;
            }
            if i > 0 {
                let _ = h.add(&p.latency_us);
                let _ = ttfb.add(&p.ttfb_us);
            }
            bytes += p.bytes;
            requests += p.requests;
            errors += p.errors;
            status_errors += p.status_errors;
            for (a, b) in by_kind.iter_mut().zip(p.errors_by_kind) {
                *a += b;
            }
            late += p.late;
            sent += p.sent;
            goaways += p.goaways;
            retried += p.retried;
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
            sent,
            goaways,
            retried,
            bytes_per_s: per_s(bytes as f64),
            ttfb_mean_us: if ttfb.is_empty() { 0.0 } else { ttfb.mean() },
            ttfb_p99_us: if ttfb.is_empty() { 0 } else { ttfb.value_at_quantile(0.99) },
            status: status.into_iter().map(|(code, n)| (code.to_string(), n)).collect(),
            outcomes,
            latency_histogram: None,
        };
        (row, h)
    }

    /// The row covering `rows`, consecutive intervals of one run, whose latency histograms
    /// added up are `merged` (a progress line of several short rows, a chart's point of a long
    /// run). Exact: counts and the status and error maps summed, rates over the whole length,
    /// mean and percentiles from `merged` (the max, the same, from the rows), connections open
    /// at the end of the last row, the target weighted by time. Two fields cannot be: the first
    /// byte's mean is weighted by responses and its p99 is the rows' largest (an upper bound; the
    /// rows keep no first-byte histogram). The row carries no encoded histogram: `merged` is it.
    /// No rows make an empty row.
    pub fn combine(rows: &[IntervalRow], merged: &Histogram<u64>) -> IntervalRow {
        let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
            return IntervalRow::merge(&mut [], None).0;
        };
        let start_s = first.start_s;
        let length_s = (last.start_s + last.length_s - start_s).max(0.0);
        // Rows may come from a file: a sum saturates rather than overflows.
        let sum = |f: fn(&IntervalRow) -> u64| rows.iter().fold(0u64, |a, r| a.saturating_add(f(r)));
        let add_maps = |f: fn(&IntervalRow) -> &BTreeMap<String, u64>| {
            let mut total: BTreeMap<String, u64> = BTreeMap::new();
            for (k, n) in rows.iter().flat_map(f) {
                let slot = total.entry(k.clone()).or_default();
                *slot = slot.saturating_add(*n);
            }
            total
        };
        let per_s = |n: f64| if length_s > 0.0 { n / length_s } else { 0.0 };
        let requests = sum(|r| r.requests);
        // The target is a rate over time: each row's counts for as long as it lasted.
        let targeted: Vec<(f64, f64)> =
            rows.iter().filter_map(|r| r.target_per_s.map(|t| (t, r.length_s.max(0.0)))).collect();
        let targeted_s: f64 = targeted.iter().map(|(_, l)| l).sum();
        let target_per_s = (!targeted.is_empty()).then(|| match targeted_s > 0.0 {
            true => targeted.iter().map(|(t, l)| t * l).sum::<f64>() / targeted_s,
            false => targeted.iter().map(|(t, _)| t).sum::<f64>() / targeted.len() as f64,
        });
        let ttfb_weighted: f64 = rows.iter().map(|r| r.ttfb_mean_us * r.requests as f64).sum();
        let at = |q: f64| if merged.is_empty() { 0 } else { merged.value_at_quantile(q) };
        IntervalRow {
            start_s,
            length_s,
            target_per_s,
            achieved_per_s: per_s(requests as f64),
            requests,
            mean_us: if merged.is_empty() { 0.0 } else { merged.mean() },
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            max_us: rows.iter().map(|r| r.max_us).max().unwrap_or(0),
            errors: sum(|r| r.errors),
            status_errors: sum(|r| r.status_errors),
            errors_by_kind: add_maps(|r| &r.errors_by_kind),
            open_connections: last.open_connections,
            new_connections: sum(|r| r.new_connections),
            late: sum(|r| r.late),
            sent: sum(|r| r.sent),
            goaways: sum(|r| r.goaways),
            retried: sum(|r| r.retried),
            bytes_per_s: per_s(rows.iter().map(|r| r.bytes_per_s * r.length_s).sum()),
            ttfb_mean_us: if requests > 0 { ttfb_weighted / requests as f64 } else { 0.0 },
            ttfb_p99_us: rows.iter().map(|r| r.ttfb_p99_us).max().unwrap_or(0),
            status: add_maps(|r| &r.status),
            outcomes: add_maps(|r| &r.outcomes),
            latency_histogram: None,
        }
    }

    /// Whether this row ends a group of rows that started at `start_s` and is to cover `span`:
    /// its end reaches the next multiple of `span` from the start of load. Rows are cut on a
    /// grid from the start, a little late and never early, so groups of rows shorter than `span`
    /// end where the grid of `span` does (rows as long or longer each end their own).
    pub fn closes_span(&self, start_s: f64, span: Duration) -> bool {
        // Whole microseconds, as the rows were cut: 0.2 + 0.8 must reach 1.0. (A float cast
        // saturates, and NaN is 0.)
        let us = |s: f64| (s * 1e6).round().max(0.0) as u64;
        let span_us = span.as_micros().clamp(1, u128::from(u64::MAX)) as u64;
        us(self.start_s + self.length_s) / span_us > us(start_s) / span_us
    }

    /// `rows`, consecutive as a result keeps them, joined into rows of about `span` (see
    /// [`IntervalRow::closes_span`]; the last may be shorter) with [`IntervalRow::combine`], each
    /// with its histogram. `None` when a row has no readable histogram (results of strain 0.x
    /// that kept them only for segments): their percentiles could not be joined exactly.
    pub fn join(rows: &[IntervalRow], span: Duration) -> Option<Vec<IntervalRow>> {
        let mut joined = Vec::new();
        let mut merged = crate::stats::latency_histogram();
        let mut from = 0;
        for (i, row) in rows.iter().enumerate() {
            let h = crate::stats::codec::decode_histogram(row.latency_histogram.as_deref()?)?;
            merged.add(&h).ok()?;
            if row.closes_span(rows[from].start_s, span) || i + 1 == rows.len() {
                let mut one = IntervalRow::combine(&rows[from..=i], &merged);
                one.latency_histogram = Some(crate::stats::codec::encode_histogram(&merged));
                joined.push(one);
                merged.reset();
                from = i + 1;
            }
        }
        Some(joined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_handed_back_is_taken_again_cleared_and_small_ones_are_not_kept() {
        let spares = Spares::default();
        let mut h = crate::stats::latency_histogram();
        h.record(1_234).unwrap();
        let counts = h.distinct_values();
        spares.give(h);
        spares.give(crate::stats::unused_histogram());
        assert_eq!(spares.0.lock().unwrap().len(), 1);
        let like = crate::stats::latency_histogram();
        let again = spares.take_like(&like);
        assert_eq!((again.len(), again.high(), again.distinct_values()), (0, like.high(), counts));
        assert!(spares.0.lock().unwrap().is_empty());
        // None left: a new one; a small one is never taken from the spares.
        assert_eq!(spares.take_like(&like).high(), like.high());
        spares.give(again);
        assert_eq!(spares.take_like(&crate::stats::unused_histogram()).high(), crate::stats::unused_histogram().high());
        assert_eq!(spares.0.lock().unwrap().len(), 1);
        for _ in 0..MAX_SPARES + 3 {
            spares.give(crate::stats::latency_histogram());
        }
        assert_eq!(spares.0.lock().unwrap().len(), MAX_SPARES);
    }

    #[test]
    fn no_snapshot_merges_into_an_empty_row() {
        let (row, h) = IntervalRow::merge(&mut [], Some(5.0));
        assert_eq!((row.start_s, row.length_s, row.requests, row.p99_us, row.errors), (0.0, 0.0, 0, 0, 0));
        assert_eq!(row.target_per_s, Some(5.0));
        assert!(h.is_empty());
    }

    /// One thread's snapshot of the interval `[start_us, end_us)` that recorded `latencies`, each
    /// answered `200` but the last (`503`), with 10 bytes each, `open` connections at its end.
    fn snapshot(index: u32, start_us: u64, end_us: u64, latencies: &[u64], open: u64) -> Snapshot {
        let mut h = crate::stats::latency_histogram();
        for &v in latencies {
            h.record(v).unwrap();
        }
        let n = latencies.len() as u64;
        let mut errors_by_kind = [0; crate::stats::ErrorKind::COUNT];
        errors_by_kind[crate::stats::ErrorKind::Read as usize] = 1;
        Snapshot {
            uncorrected_us: None,
            index,
            start_us,
            end_us,
            latency_us: h,
            ttfb_us: crate::stats::unused_histogram(),
            bytes: 10 * n,
            requests: n,
            errors: 1,
            errors_by_kind,
            status_errors: 1,
            late: 2,
            sent: 0,
            goaways: 0,
            retried: 0,
            open,
            connects: 1,
            status: vec![(200, n - 1), (503, 1)],
            outcomes: Vec::new(),
        }
    }

    #[test]
    fn consecutive_rows_combine_exactly() {
        // Three rows of 200, 200 and 100 ms (cut a few microseconds late), at three targets.
        let parts = [
            (snapshot(0, 0, 200_004, &[100, 200, 300, 400], 3), Some(100.0)),
            (snapshot(1, 200_004, 400_002, &[1_000, 2_000], 4), Some(100.0)),
            (snapshot(2, 400_002, 500_000, &[50, 60, 70, 80_000], 5), Some(400.0)),
        ];
        let mut merged = crate::stats::latency_histogram();
        let mut whole = crate::stats::latency_histogram();
        let mut rows = Vec::new();
        for (snap, target) in &parts {
            let (row, h) = IntervalRow::merge(&mut [snap.clone()], *target);
            merged.add(&h).unwrap();
            whole.add(&snap.latency_us).unwrap();
            rows.push(row);
        }
        let r = IntervalRow::combine(&rows, &merged);
        assert_eq!((r.start_s, r.length_s), (0.0, 0.5));
        assert_eq!((r.requests, r.errors, r.status_errors, r.late, r.new_connections), (10, 6, 3, 6, 3));
        assert!((r.achieved_per_s - 20.0).abs() < 1e-9, "{}", r.achieved_per_s);
        assert!((r.bytes_per_s - 200.0).abs() < 1e-6, "{}", r.bytes_per_s);
        // Time-weighted: 100/s for 0.400002 s and 400/s for 0.099998 s.
        let want = (100.0 * 0.400_002 + 400.0 * 0.099_998) / 0.5;
        assert!((r.target_per_s.unwrap() - want).abs() < 1e-9, "{:?}", r.target_per_s);
        // Latency as if one histogram had recorded all ten.
        let p = |q: f64| whole.value_at_quantile(q);
        assert_eq!((r.p50_us, r.p90_us, r.p99_us, r.max_us), (p(0.5), p(0.9), p(0.99), whole.max()));
        assert_eq!(r.mean_us, whole.mean());
        assert_eq!(r.open_connections, 5);
        let map = |pairs: &[(&str, u64)]| pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect::<BTreeMap<_, _>>();
        assert_eq!(r.status, map(&[("200", 7), ("503", 3)]));
        assert_eq!(r.errors_by_kind, map(&[("read", 3), ("status", 3)]));
        // No target anywhere stays none; no rows is an empty row.
        let untargeted: Vec<IntervalRow> =
            rows.iter().cloned().map(|r| IntervalRow { target_per_s: None, ..r }).collect();
        assert_eq!(IntervalRow::combine(&untargeted, &merged).target_per_s, None);
        assert_eq!(IntervalRow::combine(&[], &merged).requests, 0);
    }

    #[test]
    fn groups_close_where_the_runs_time_passes_a_whole_span() {
        let row =
            |start_s: f64, length_s: f64| IntervalRow { start_s, length_s, ..IntervalRow::merge(&mut [], None).0 };
        let second = Duration::from_secs(1);
        // (group's start, row's start and length, span, closes)
        let cases = [
            // 200 ms rows cut late: the fifth reaches 1 s.
            (0.0, 0.600_003, 0.200_001, second, false),
            (0.0, 0.800_004, 0.200_002, second, true),
            // Cut exactly on time, whose float sum falls short of 1.0.
            (0.0, 0.7, 0.3, second, true),
            (1.000_006, 1.800_001, 0.199_990, second, false),
            (1.000_006, 1.800_001, 0.200_002, second, true),
            // A row as long as the span, or longer, ends its own group.
            (3.000_002, 3.000_002, 1.000_001, second, true),
            (0.0, 0.0, 2.0, second, true),
            // The drain's short last row ends past the last whole second.
            (9.000_001, 9.800_002, 0.250_000, second, true),
            // Half-second groups.
            (0.0, 0.4, 0.1, Duration::from_millis(500), true),
        ];
        for (from, start, length, span, want) in cases {
            assert_eq!(row(start, length).closes_span(from, span), want, "{from} {start}+{length} {span:?}");
        }
    }

    #[test]
    fn rows_join_into_whole_seconds_with_their_histograms() {
        // Ten 200 ms rows and the drain's 50 ms, each with 2 responses.
        let mut rows: Vec<IntervalRow> = (0..11u32)
            .map(|i| {
                let (start, end) = (u64::from(i) * 200_000 + 3, (u64::from(i) * 200_000 + 200_003).min(2_050_000));
                let (mut row, h) =
                    IntervalRow::merge(&mut [snapshot(i, start, end, &[100, 1_000 * u64::from(i + 1)], 1)], None);
                row.latency_histogram = Some(crate::stats::codec::encode_histogram(&h));
                row
            })
            .collect();
        let joined = IntervalRow::join(&rows, Duration::from_secs(1)).unwrap();
        assert_eq!(joined.iter().map(|r| r.requests).collect::<Vec<_>>(), vec![10, 10, 2]);
        assert_eq!(joined[1].max_us, crate::stats::latency_histogram().highest_equivalent(10_000));
        let second = crate::stats::codec::decode_histogram(joined[1].latency_histogram.as_deref().unwrap()).unwrap();
        assert_eq!(second.len(), 10);
        assert_eq!(joined[2].start_s + joined[2].length_s, 2.05);
        // Without every histogram the percentiles could not be joined.
        rows[4].latency_histogram = None;
        assert!(IntervalRow::join(&rows, Duration::from_secs(1)).is_none());
    }

    #[test]
    fn threads_status_counts_add_up_by_code() {
        let part = |status: Vec<(u16, u64)>| Snapshot {
            uncorrected_us: None,
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
            sent: 0,
            goaways: 0,
            retried: 0,
            open: 0,
            connects: 0,
            status,
            outcomes: Vec::new(),
        };
        let (row, _) = IntervalRow::merge(&mut [part(vec![(200, 7), (404, 1)]), part(vec![(200, 2), (503, 4)])], None);
        let want: BTreeMap<String, u64> =
            [("200".to_string(), 9), ("404".to_string(), 1), ("503".to_string(), 4)].into_iter().collect();
        assert_eq!(row.status, want);
    }
}
