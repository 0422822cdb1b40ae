//! One segment's result read back into the values strain measured: a [`Recorder`], its
//! interval rows as [`Snapshot`]s (so [`crate::stats::interval::IntervalRow::merge`] adds them
//! as it adds threads), and what the checks compare. The document is read typed
//! ([`RunDoc`]); a value out of range (a count beyond any real run, a bad histogram) is an
//! error naming the file and the field, never a panic.

use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use serde_json::Value;

use super::MergeError;
use crate::config::Segment;
use crate::result::{ResultError, RunDoc};
use crate::stats::interval::Snapshot;
use crate::stats::{latency_histogram, unused_histogram, ConnectCause, ErrorKind, Recorder, STATUS_SLOTS};

/// A result, parsed as far as merging needs.
#[derive(Debug, Clone)]
pub struct Part {
    /// Where it came from (a file name, or `stdin result 2`).
    pub name: String,
    /// The document.
    pub doc: RunDoc,
    /// Which share of the test it is (0/1 for an unsplit run).
    pub segment: Segment,
    /// When its measured load started.
    pub started: SystemTime,
    /// Its measured wall time, drain included.
    pub elapsed: Duration,
    /// Its warm-up, which its interval offsets count from the start of load.
    pub warmup: Duration,
    /// Its counters and whole histograms.
    pub recorder: Recorder,
    /// Its worker threads.
    pub threads: usize,
}

/// The largest count a result may hold: 2^40 (a million requests/s for twelve days). Larger
/// ones are not measurements, and refusing them keeps the sums of [`super::MAX_RESULTS`]
/// results far from overflowing.
const MAX_COUNT: u64 = 1 << 40;

/// Checks a value read from result `name` at `field`: `ok` or an error naming both.
fn valid<T>(name: &str, field: &str, v: Option<T>) -> Result<T, MergeError> {
    v.ok_or_else(|| MergeError::Field { name: name.into(), field: field.into() })
}

/// A count of result `name`, refused above [`MAX_COUNT`].
fn count(name: &str, field: &str, n: u64) -> Result<u64, MergeError> {
    valid(name, field, Some(n).filter(|n| *n <= MAX_COUNT))
}

fn seconds(name: &str, field: &str, s: f64) -> Result<Duration, MergeError> {
    valid(name, field, Duration::try_from_secs_f64(s).ok())
}

/// Adds a histogram written by `report::json::encode_histogram` into `into`.
fn add_histogram(name: &str, text: &str, into: &mut Histogram<u64>, field: &str) -> Result<(), MergeError> {
    let h = valid(name, field, crate::report::json::decode_histogram(text))?;
    into.add(&h).map_err(|_| MergeError::Field { name: name.into(), field: field.into() })
}

impl Part {
    /// Reads one result document.
    pub fn read(name: String, value: Value) -> Result<Part, MergeError> {
        // The sections' counts are read whole by their own types: every number in them is
        // checked as written, against MAX_COUNT, so a count added to a type is checked too.
        let too_large = crate::stats::section::keys().find_map(|key| {
            let at = format!("/{key}");
            above(value.pointer(&at)?, at)
        });
        let doc = RunDoc::from_value(value).map_err(|e| match e {
            ResultError::Other(_) => MergeError::NotAResult { name: name.clone() },
            e => MergeError::Result { name: name.clone(), why: e.to_string() },
        })?;
        if let Some(field) = too_large {
            return Err(MergeError::Field { name, field });
        }
        let n = name.as_str();
        let segment = match doc.segment {
            None => Segment::default(),
            Some(s) if s.index < s.count => Segment { index: s.index, count: s.count },
            Some(_) => return Err(MergeError::Field { name, field: "/segment".into() }),
        };
        let recorder = recorder(n, &doc)?;
        let threads = usize::try_from(count(n, "/config/threads", doc.config.threads as u64)?).unwrap_or(usize::MAX);
        Ok(Part {
            started: valid(n, "/started", humantime::parse_rfc3339_weak(&doc.started).ok())?,
            elapsed: seconds(n, "/duration_s", doc.duration_s)?,
            warmup: seconds(n, "/config/warmup_s", doc.config.warmup_s)?,
            segment,
            recorder,
            threads,
            name,
            doc,
        })
    }

    /// The target URL.
    pub fn url(&self) -> &str {
        &self.doc.config.url
    }

    /// The interval rows as snapshots with their target rates, each placed at `start_us` from
    /// `origin` on the wall clock, rounded to whole intervals of `interval_us` (segments start
    /// at the same instant to the millisecond, and each cuts its rows a few microseconds apart).
    pub fn snapshots(&self, origin: SystemTime, interval_us: u64) -> Result<Vec<(Snapshot, Option<f64>)>, MergeError> {
        let n = self.name.as_str();
        let load_start = self.started.checked_sub(self.warmup).unwrap_or(self.started);
        // Offsets before the origin can only come from a forced merge of different tests.
        let offset_us = load_start.duration_since(origin).unwrap_or_default().as_micros() as f64;
        let mut out = Vec::with_capacity(self.doc.intervals.len());
        for (i, row) in self.doc.intervals.iter().enumerate() {
            let at = |f: &str| format!("/intervals/{i}/{f}");
            let start_us = seconds(n, &at("start_s"), row.start_s)?.as_micros() as f64 + offset_us;
            let length_us = seconds(n, &at("length_s"), row.length_s)?.as_micros() as u64;
            let index = (start_us / interval_us.max(1) as f64).round();
            let start_us = (index as u64).saturating_mul(interval_us);
            let mut latency_us = latency_histogram();
            let h =
                row.latency_histogram.as_deref().ok_or_else(|| MergeError::NoIntervalHistograms { name: n.into() })?;
            add_histogram(n, h, &mut latency_us, &at("latency_histogram"))?;
            let status_errors = count(n, &at("status_errors"), row.status_errors)?;
            let mut errors_by_kind = [0; ErrorKind::COUNT];
            for kind in ErrorKind::ALL {
                errors_by_kind[kind as usize] =
                    row.errors_by_kind.get(kind.name()).copied().unwrap_or(0).min(MAX_COUNT);
            }
            let mut status = Vec::with_capacity(row.status.len());
            for (code, responses) in &row.status {
                let field = at(&format!("status/{code}"));
                let code = valid(n, &field, code.parse::<u16>().ok().filter(|c| usize::from(*c) < STATUS_SLOTS))?;
                status.push((code, count(n, &field, *responses)?));
            }
            let mut outcomes = Vec::with_capacity(row.outcomes.len());
            for (name, answers) in &row.outcomes {
                outcomes.push((name.clone(), count(n, &at(&format!("grpc/{name}")), *answers)?));
            }
            let snap = Snapshot {
                uncorrected_us: None,
                index: u32::try_from(index as u64).unwrap_or(u32::MAX),
                start_us,
                end_us: start_us.saturating_add(length_us),
                latency_us,
                ttfb_us: unused_histogram(),
                bytes: ((row.bytes_per_s * length_us as f64 / 1e6).round() as u64).min(MAX_COUNT),
                requests: count(n, &at("requests"), row.requests)?,
                errors: count(n, &at("errors"), row.errors)?.saturating_sub(status_errors),
                errors_by_kind,
                status_errors,
                late: count(n, &at("late"), row.late)?,
                sent: count(n, &at("sent"), row.sent)?,
                goaways: count(n, &at("goaways"), row.goaways)?,
                retried: count(n, &at("retried"), row.retried)?,
                open: count(n, &at("open_connections"), row.open_connections)?,
                connects: count(n, &at("new_connections"), row.new_connections)?,
                status,
                outcomes,
            };
            out.push((snap, row.target_per_s));
        }
        Ok(out)
    }
}

/// The counters and whole histograms of result `n`.
fn recorder(n: &str, doc: &RunDoc) -> Result<Recorder, MergeError> {
    let mut r = Recorder::new();
    r.sent = count(n, "/sent", doc.sent)?;
    r.requests = count(n, "/requests", doc.requests)?;
    r.bytes = count(n, "/bytes", doc.bytes)?;
    r.connections = count(n, "/connections_opened", doc.connections_opened)?;
    let e = &doc.errors;
    for (kind, v) in [
        (ErrorKind::Connect, e.connect),
        (ErrorKind::Read, e.read),
        (ErrorKind::Write, e.write),
        (ErrorKind::Timeout, e.timeout),
        (ErrorKind::Parse, e.parse),
        (ErrorKind::Content, e.content),
        (ErrorKind::Reset, e.reset),
    ] {
        r.errors[kind as usize] = count(n, &format!("/errors/{}", kind.name()), v)?;
    }
    for cause in ConnectCause::ALL {
        let field = format!("/errors/connect_causes/{}", cause.name());
        r.connect_causes[cause as usize] =
            count(n, &field, valid(n, &field, e.connect_causes.get(cause.name()).copied())?)?;
    }
    for (code, v) in &doc.status {
        let field = format!("/status/{code}");
        let slot = valid(n, &field, code.parse::<usize>().ok().and_then(|c| r.status.get_mut(c)))?;
        *slot = count(n, &field, *v)?;
        if code.parse::<usize>().is_ok_and(|c| c > 399) {
            r.status_errors += *slot;
        }
    }
    add_histogram(n, &doc.latency_histogram, &mut r.latency_us, "/latency_histogram")?;
    if let Some(h) = &doc.uncorrected_latency_histogram {
        add_histogram(n, h, &mut r.uncorrected_us, "/uncorrected_latency_histogram")?;
    }
    if let Some(rate) = &doc.rate {
        let p = &mut r.pacing;
        p.sent = count(n, "/rate/sent", rate.sent)?;
        p.late = count(n, "/rate/late", rate.late)?;
        p.late_no_connection = count(n, "/rate/late_no_connection", rate.late_no_connection)?;
        p.late_connecting = count(n, "/rate/late_connecting", rate.late_connecting)?;
        p.late_max_us = count(n, "/rate/late_max_us", rate.late_max_us)?;
        p.unsent = count(n, "/rate/unsent", rate.unsent)?;
        r.arrivals_dropped = count(n, "/rate/dropped", rate.dropped.unwrap_or(0))?;
        // The file keeps the mean; the sum it came from is back to within a microsecond.
        p.late_sum_us = ((rate.late_mean_us * p.late as f64).round() as u64).min(MAX_COUNT << 10);
        p.late_generator_sum_us =
            ((rate.late_own_mean_us * p.late_generator() as f64).round() as u64).min(MAX_COUNT << 10);
    }
    // The protocols' counts are read by their own types, and checked in `Part::read`. A
    // section no type of this build reads (a newer strain's, or a library caller's that did not
    // install the units) cannot be added: refused rather than kept as the first segment's.
    if let Some((_, s)) = doc.sections.iter().find(|(_, s)| !crate::stats::section::readable(s.key())) {
        return Err(MergeError::Result {
            name: n.into(),
            why: format!("its {} counts are of a kind this strain cannot add up", s.key()),
        });
    }
    r.sections = doc.sections.sections();
    Ok(r)
}

/// The JSON pointer of the first number in `v` (at `at`) above [`MAX_COUNT`].
fn above(v: &Value, at: String) -> Option<String> {
    match v {
        Value::Number(x) => x.as_f64().is_none_or(|x| x > MAX_COUNT as f64).then_some(at),
        Value::Object(m) => m.iter().find_map(|(k, v)| above(v, format!("{at}/{k}"))),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, v)| above(v, format!("{at}/{i}"))),
        _ => None,
    }
}
