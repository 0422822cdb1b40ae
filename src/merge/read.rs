//! One segment's result JSON read back into the values strain measured: a [`Recorder`], its
//! interval rows as [`Snapshot`]s (so [`crate::stats::interval::IntervalRow::merge`] adds them
//! as it adds threads), and what the checks compare. Every field is looked up by name and a
//! missing or malformed one is an error naming the file and the field, never a panic.

use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use serde_json::Value;

use super::MergeError;
use crate::config::Segment;
use crate::stats::interval::Snapshot;
use crate::stats::{ConnectCause, ErrorKind, Recorder};

/// A result, parsed as far as merging needs.
#[derive(Debug, Clone)]
pub struct Part {
    /// Where it came from (a file name, or `stdin result 2`).
    pub name: String,
    /// The document as written.
    pub doc: Value,
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

/// A count that may be absent (zero), capped at [`MAX_COUNT`].
fn capped(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0).min(MAX_COUNT)
}

/// A field of `doc`, or an error naming it.
fn field<'a>(name: &str, doc: &'a Value, pointer: &str) -> Result<&'a Value, MergeError> {
    doc.pointer(pointer).ok_or_else(|| MergeError::Field { name: name.into(), field: pointer.into() })
}

fn count(name: &str, doc: &Value, pointer: &str) -> Result<u64, MergeError> {
    field(name, doc, pointer)?
        .as_u64()
        .filter(|n| *n <= MAX_COUNT)
        .ok_or_else(|| MergeError::Field { name: name.into(), field: pointer.into() })
}

fn seconds(name: &str, doc: &Value, pointer: &str) -> Result<Duration, MergeError> {
    field(name, doc, pointer)?
        .as_f64()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| MergeError::Field { name: name.into(), field: pointer.into() })
}

fn instant(name: &str, doc: &Value, pointer: &str) -> Result<SystemTime, MergeError> {
    field(name, doc, pointer)?
        .as_str()
        .and_then(|s| humantime::parse_rfc3339_weak(s).ok())
        .ok_or_else(|| MergeError::Field { name: name.into(), field: pointer.into() })
}

/// Adds a histogram written by `report::json::encode_histogram` into `into`.
fn add_histogram(name: &str, text: &Value, into: &mut Histogram<u64>, pointer: &str) -> Result<(), MergeError> {
    let bad = || MergeError::Field { name: name.into(), field: pointer.into() };
    let h = text.as_str().and_then(crate::report::json::decode_histogram).ok_or_else(bad)?;
    into.add(&h).map_err(|_| bad())
}

impl Part {
    /// Reads one result document.
    pub fn read(name: String, doc: Value) -> Result<Part, MergeError> {
        let n = name.as_str();
        if doc.get("schema_version").is_none() || doc.get("intervals").is_none() {
            return Err(MergeError::NotAResult { name });
        }
        let segment = match doc.get("segment") {
            None => Segment::default(),
            Some(_) => {
                let index = u32::try_from(count(n, &doc, "/segment/index")?);
                let total = u32::try_from(count(n, &doc, "/segment/count")?);
                match (index, total) {
                    (Ok(index), Ok(count)) if index < count => Segment { index, count },
                    _ => return Err(MergeError::Field { name, field: "/segment".into() }),
                }
            }
        };
        let mut r = Recorder::new();
        r.sent = count(n, &doc, "/sent")?;
        r.requests = count(n, &doc, "/requests")?;
        r.bytes = count(n, &doc, "/bytes")?;
        r.connections = count(n, &doc, "/connections_opened")?;
        for kind in ErrorKind::ALL {
            // `reset` is written only when non-zero.
            r.errors[kind as usize] = match doc.pointer(&format!("/errors/{}", kind.name())) {
                None if kind == ErrorKind::Reset => 0,
                _ => count(n, &doc, &format!("/errors/{}", kind.name()))?,
            };
        }
        for cause in ConnectCause::ALL {
            r.connect_causes[cause as usize] = count(n, &doc, &format!("/errors/connect_causes/{}", cause.name()))?;
        }
        let status = field(n, &doc, "/status")?
            .as_object()
            .ok_or_else(|| MergeError::Field { name: name.clone(), field: "/status".into() })?;
        for (code, v) in status {
            let bad = || MergeError::Field { name: name.clone(), field: format!("/status/{code}") };
            let code: usize = code.parse().map_err(|_| bad())?;
            let slot = r.status.get_mut(code).ok_or_else(bad)?;
            *slot = v.as_u64().filter(|n| *n <= MAX_COUNT).ok_or_else(bad)?;
            if code > 399 {
                r.status_errors += *slot;
            }
        }
        add_histogram(n, field(n, &doc, "/latency_histogram")?, &mut r.latency_us, "/latency_histogram")?;
        if let Some(h) = doc.get("uncorrected_latency_histogram") {
            add_histogram(n, h, &mut r.uncorrected_us, "/uncorrected_latency_histogram")?;
        }
        if doc.get("rate").is_some() {
            let p = &mut r.pacing;
            p.sent = count(n, &doc, "/rate/sent")?;
            p.late = count(n, &doc, "/rate/late")?;
            p.late_no_connection = count(n, &doc, "/rate/late_no_connection")?;
            p.late_max_us = count(n, &doc, "/rate/late_max_us")?;
            p.unsent = count(n, &doc, "/rate/unsent")?;
            let mean = field(n, &doc, "/rate/late_mean_us")?.as_f64().unwrap_or(0.0);
            // The file keeps the mean; the sum it came from is back to within a microsecond.
            p.late_sum_us = ((mean * p.late as f64).round() as u64).min(MAX_COUNT << 10);
        }
        if doc.get("http2").is_some() {
            read_h2(n, &doc, &mut r.h2)?;
        }
        let threads = usize::try_from(count(n, &doc, "/config/threads")?).unwrap_or(usize::MAX);
        let warmup = match doc.pointer("/config/warmup_s") {
            None => Duration::ZERO,
            Some(_) => seconds(n, &doc, "/config/warmup_s")?,
        };
        Ok(Part {
            started: instant(n, &doc, "/started")?,
            elapsed: seconds(n, &doc, "/duration_s")?,
            warmup,
            segment,
            recorder: r,
            threads,
            name,
            doc,
        })
    }

    /// The target URL.
    pub fn url(&self) -> &str {
        self.doc.pointer("/config/url").and_then(Value::as_str).unwrap_or("")
    }

    /// The interval rows as snapshots with their target rates, each placed at `start_us` from
    /// `origin` on the wall clock, rounded to whole intervals of `interval_us` (segments start
    /// at the same instant to the millisecond, and each cuts its rows a few microseconds apart).
    pub fn snapshots(&self, origin: SystemTime, interval_us: u64) -> Result<Vec<(Snapshot, Option<f64>)>, MergeError> {
        let n = self.name.as_str();
        let rows = field(n, &self.doc, "/intervals")?
            .as_array()
            .ok_or_else(|| MergeError::Field { name: n.into(), field: "/intervals".into() })?;
        let load_start = self.started.checked_sub(self.warmup).unwrap_or(self.started);
        // Offsets before the origin can only come from a forced merge of different tests.
        let offset_us = load_start.duration_since(origin).unwrap_or_default().as_micros() as f64;
        let empty = Recorder::new();
        let mut out = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let at = |f: &str| format!("/intervals/{i}/{f}");
            let start_us = seconds(n, &self.doc, &at("start_s"))?.as_micros() as f64 + offset_us;
            let length_us = seconds(n, &self.doc, &at("length_s"))?.as_micros() as u64;
            let index = (start_us / interval_us.max(1) as f64).round();
            let start_us = (index as u64).saturating_mul(interval_us);
            let mut latency_us = empty.latency_us.clone();
            let h = row.get("latency_histogram").ok_or_else(|| MergeError::NoIntervalHistograms { name: n.into() })?;
            add_histogram(n, h, &mut latency_us, &at("latency_histogram"))?;
            let status_errors = count(n, &self.doc, &at("status_errors"))?;
            let mut errors_by_kind = [0; ErrorKind::COUNT];
            for kind in ErrorKind::ALL {
                errors_by_kind[kind as usize] = capped(row["errors_by_kind"].get(kind.name()));
            }
            let bytes_per_s = row["bytes_per_s"].as_f64().unwrap_or(0.0);
            let snap = Snapshot {
                index: u32::try_from(index as u64).unwrap_or(u32::MAX),
                start_us,
                end_us: start_us.saturating_add(length_us),
                latency_us,
                ttfb_us: empty.ttfb_us.clone(),
                bytes: ((bytes_per_s * length_us as f64 / 1e6).round() as u64).min(MAX_COUNT),
                requests: count(n, &self.doc, &at("requests"))?,
                errors: count(n, &self.doc, &at("errors"))?.saturating_sub(status_errors),
                errors_by_kind,
                status_errors,
                late: count(n, &self.doc, &at("late"))?,
                open: count(n, &self.doc, &at("open_connections"))?,
                connects: count(n, &self.doc, &at("new_connections"))?,
            };
            out.push((snap, row["target_per_s"].as_f64()));
        }
        Ok(out)
    }
}

/// The HTTP/2 counters; resets come back from their code names.
fn read_h2(n: &str, doc: &Value, h2: &mut crate::stats::H2Counts) -> Result<(), MergeError> {
    h2.header_bytes = count(n, doc, "/http2/header_bytes")?;
    h2.header_frame_bytes = count(n, doc, "/http2/header_frame_bytes")?;
    h2.goaways = count(n, doc, "/http2/goaways")?;
    h2.retried = count(n, doc, "/http2/retried")?;
    h2.protocol_errors = count(n, doc, "/http2/protocol_errors")?;
    h2.flow_control_stalls = capped(doc.pointer("/http2/flow_control_stalls"));
    if let Some(resets) = doc.pointer("/http2/resets").and_then(Value::as_object) {
        for (code_name, v) in resets {
            let slot = (0..h2.resets.len()).find(|&c| crate::h2::code_name(c as u32) == code_name);
            let last = h2.resets.len() - 1;
            h2.resets[slot.unwrap_or(last)] += capped(Some(v));
        }
    }
    Ok(())
}
