//! One side of a comparison read from its runs' results: each run's values of the compared
//! metrics (the whole run's percentiles and rate) and its usable intervals; and whether two
//! results are of the same test at all.

use crate::result::RunDoc;

use super::{CompareError, Metric};

/// One interval of a run, as read from the JSON.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Length in seconds.
    pub length_s: f64,
    /// Completed requests per second.
    pub achieved_per_s: f64,
    /// Latency percentiles, microseconds.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Responses completed.
    pub requests: f64,
    /// Errors of every kind, status errors included.
    pub errors: f64,
    /// Responses with a status above 399.
    pub status_errors: f64,
}

impl Interval {
    /// Failed requests as a share of requests: failures over responses plus lost requests
    /// (status errors are responses, so they are not added twice); 0 when nothing happened.
    pub(super) fn error_rate(&self) -> f64 {
        share(self.errors, self.status_errors, self.requests)
    }
}

/// Failures over responses plus failures that were not responses.
fn share(errors: f64, status_errors: f64, requests: f64) -> f64 {
    let all = requests + (errors - status_errors).max(0.0);
    if all > 0.0 {
        errors / all
    } else {
        0.0
    }
}

/// One run's values of the compared metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunValues {
    /// Per [`Metric`], in its order: requests/s, p50, p90, p99 (µs), error rate.
    pub values: [f64; 5],
}

impl RunValues {
    /// The run's value of `metric`.
    pub fn value(&self, metric: Metric) -> f64 {
        self.values[metric as usize]
    }

    /// A run's values from its result.
    pub fn of(doc: &RunDoc) -> RunValues {
        let at = |k: &str| doc.latency_us.at(k).unwrap_or(0) as f64;
        let e = &doc.errors;
        let errors = e.connect + e.read + e.write + e.timeout + e.parse + e.status + e.content + e.reset;
        RunValues {
            values: [
                doc.requests_per_s,
                at("50"),
                at("90"),
                at("99"),
                share(errors as f64, e.status as f64, doc.requests as f64),
            ],
        }
    }
}

/// One side: its runs' values, and their usable intervals pooled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Side {
    /// Each run's values.
    pub runs: Vec<RunValues>,
    /// Every run's usable intervals (see [`usable`]).
    pub intervals: Vec<Interval>,
}

impl Side {
    /// A side of these results.
    pub fn of<'a>(docs: impl IntoIterator<Item = &'a RunDoc>) -> Side {
        let mut side = Side::default();
        for doc in docs {
            side.push(doc);
        }
        side
    }

    /// Adds a run.
    pub fn push(&mut self, doc: &RunDoc) {
        self.runs.push(RunValues::of(doc));
        self.intervals.extend(usable(&intervals(doc)));
    }
}

/// Reads one strain result JSON (named `path` in errors).
pub fn parse_result(path: &str, text: &str) -> Result<RunDoc, CompareError> {
    RunDoc::parse(text).map_err(|e| CompareError::NotResult { path: path.to_string(), why: e.to_string() })
}

/// A run's interval series.
pub fn intervals(doc: &RunDoc) -> Vec<Interval> {
    doc.intervals
        .iter()
        .map(|r| Interval {
            length_s: r.length_s,
            achieved_per_s: r.achieved_per_s,
            p50_us: r.p50_us as f64,
            p90_us: r.p90_us as f64,
            p99_us: r.p99_us as f64,
            requests: r.requests as f64,
            errors: r.errors as f64,
            status_errors: r.status_errors as f64,
        })
        .collect()
}

/// The intervals that count as samples: without the first (warm-up: connections opening,
/// caches filling) and the last (cut short by the end of the run, and draining), and without any
/// shorter than half the usual length (their rates and percentiles rest on too few requests).
pub fn usable(rows: &[Interval]) -> Vec<Interval> {
    if rows.len() < 3 {
        return Vec::new();
    }
    let inner = &rows[1..rows.len() - 1];
    let lengths: Vec<f64> = inner.iter().map(|r| r.length_s).filter(|l| l.is_finite()).collect();
    let nominal = super::Statistic::Median.of(&lengths);
    inner.iter().filter(|r| r.length_s >= nominal / 2.0 && r.length_s > 0.0).copied().collect()
}

/// What makes two results of different tests, named for a message: the URL (unless
/// `allow_url`), the mode, the rate, connections, duration, protocol; `None` when they are
/// alike.
pub fn mismatch(a: &RunDoc, b: &RunDoc, allow_url: bool) -> Option<String> {
    let mode = |d: &RunDoc| match (&d.replay, &d.rate) {
        (Some(_), _) => "replay",
        (None, Some(_)) => "rate mode",
        (None, None) => "closed loop",
    };
    let rate = |d: &RunDoc| d.rate.as_ref().map_or(0.0, |r| r.target_per_s);
    let measured = |d: &RunDoc| d.config.duration_s.unwrap_or(d.duration_s) - d.config.warmup_s;
    let differ = |x: f64, y: f64| (x - y).abs() > 1e-6 * x.abs().max(y.abs()).max(1.0);
    if !allow_url && a.config.url != b.config.url {
        return Some(format!("URL ({} and {})", a.config.url, b.config.url));
    }
    if mode(a) != mode(b) {
        return Some(format!("mode ({} and {})", mode(a), mode(b)));
    }
    if differ(rate(a), rate(b)) {
        return Some(format!("rate ({}/s and {}/s)", rate(a), rate(b)));
    }
    if a.config.connections != b.config.connections {
        return Some(format!("connections ({} and {})", a.config.connections, b.config.connections));
    }
    // A replay's length is its recording's: the same recording at the same pace is like.
    if let (Some(x), Some(y)) = (&a.replay, &b.replay) {
        let what = |r: &crate::result::ReplayDoc| (r.note.requests, r.note.span_us, r.note.loops);
        if what(x) != what(y) || differ(x.note.speed, y.note.speed) {
            return Some(format!(
                "recording ({} requests over {} µs at {}x and {} requests over {} µs at {}x)",
                x.note.requests, x.note.span_us, x.note.speed, y.note.requests, y.note.span_us, y.note.speed
            ));
        }
    } else if differ(measured(a), measured(b)) {
        return Some(format!("duration ({}s and {}s)", measured(a), measured(b)));
    }
    if a.protocol != b.protocol {
        return Some(format!("protocol ({} and {})", a.protocol, b.protocol));
    }
    None
}
