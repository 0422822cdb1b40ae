//! The rows a page draws from a result's interval series: every row of a short run, and for a
//! long one consecutive rows combined (exactly: counts added, histograms merged) so a page
//! stays light, with each row's latency histogram turned into the heatmap's buckets.

use hdrhistogram::Histogram;

use crate::result::RunDoc;
use crate::stats::codec::decode_histogram;
use crate::stats::interval::IntervalRow;

/// Most columns a page draws over time: a 1-hour run at 1 s rows is combined 15 to 1.
pub const MAX_COLUMNS: usize = 240;
/// Heatmap buckets per decade of latency (edges 1, 1.6, 2.5, 4, 6.3 × 10^k).
pub const PER_DECADE: f64 = 5.0;

/// A result's rows as the page draws them, with their histograms where the result has them.
pub struct PageRows {
    /// The rows, combined when there were more than [`MAX_COLUMNS`].
    pub rows: Vec<IntervalRow>,
    /// Each row's latency histogram (`None` for results written without them).
    pub histograms: Vec<Option<Histogram<u64>>>,
    /// How many of the result's rows each drawn row covers.
    pub per_column: usize,
}

impl PageRows {
    /// The rows of `d` to draw.
    pub fn of(d: &RunDoc) -> PageRows {
        let per_column = d.intervals.len().div_ceil(MAX_COLUMNS).max(1);
        let mut rows = Vec::with_capacity(d.intervals.len() / per_column + 1);
        let mut histograms = Vec::with_capacity(rows.capacity());
        for group in d.intervals.chunks(per_column) {
            let hist = merged(group);
            let row = match (&hist, group) {
                (_, [one]) => one.clone(),
                (Some(h), _) => IntervalRow::combine(group, h),
                (None, _) => IntervalRow::combine(group, &crate::stats::latency_histogram()),
            };
            rows.push(row);
            histograms.push(hist);
        }
        PageRows { rows, histograms, per_column }
    }
}

/// The rows' histograms added up; `None` when a row has none.
fn merged(rows: &[IntervalRow]) -> Option<Histogram<u64>> {
    let mut out: Option<Histogram<u64>> = None;
    for r in rows {
        let h = decode_histogram(r.latency_histogram.as_deref()?)?;
        match out.as_mut() {
            None => out = Some(h),
            Some(o) => {
                o.add(&h).ok()?;
            }
        }
    }
    out
}

/// The heatmap bucket of a latency in microseconds (bucket 0 starts at 1 µs).
pub fn bucket(us: u64) -> usize {
    ((us.max(1) as f64).log10() * PER_DECADE).floor() as usize
}

/// A bucket's lower edge in microseconds.
pub fn edge(b: usize) -> f64 {
    10f64.powf(b as f64 / PER_DECADE)
}

/// A histogram's counts by heatmap bucket, sparse and in bucket order.
pub fn buckets(h: &Histogram<u64>) -> Vec<(usize, u64)> {
    let mut out: Vec<(usize, u64)> = Vec::new();
    for v in h.iter_recorded() {
        let b = bucket(v.value_iterated_to());
        match out.last_mut() {
            Some((last, n)) if *last == b => *n += v.count_at_value(),
            _ => out.push((b, v.count_at_value())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_fifths_of_a_decade() {
        // (latency µs, bucket)
        let rows = [(1, 0), (9, 4), (10, 5), (15, 5), (16, 6), (1_000, 15), (2_400, 16), (2_600, 17), (1_000_000, 30)];
        for (us, b) in rows {
            assert_eq!(bucket(us), b, "{us}");
        }
        assert!((edge(5) - 10.0).abs() < 1e-9 && (edge(15) - 1000.0).abs() < 1e-6);
        let mut h = crate::stats::latency_histogram();
        for us in [100, 110, 120, 5_000, 5_100] {
            h.record(us).unwrap();
        }
        assert_eq!(buckets(&h), vec![(10, 3), (18, 2)]);
    }
}
