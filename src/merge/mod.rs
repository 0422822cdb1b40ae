//! `strain merge`: the results of one test's segments (`--segment I/N`) added back into the
//! result one process would have written. Pure: parsing, the checks that the results are one
//! test's, and the merge; `cli/merge.rs` reads the inputs and prints.
//!
//! Exactness comes from the histograms the segments write (whole run and every interval):
//! adding HdrHistograms loses nothing, so merged percentiles are those of one histogram that
//! recorded every request. Counters are summed. Two things are rebuilt approximately, because
//! a result does not carry them: `Req/Sec` per thread (from each segment's interval rates, so
//! its mean is right and its spread is that of intervals, not of 100 ms samples), and a staged
//! rate schedule (kept as its average rate, so `rate.target_per_s` is exact but the stage
//! ends are lost).

mod read;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::config::{Config, Protocol, ProtocolChoice, Settings, Target};
use crate::schedule::Schedule;
use crate::stats::interval::{IntervalRow, Snapshot};
use crate::stats::{Recorder, Summary};
pub use read::Part;

/// Most results one merge takes (a test split over more processes than this is not a test
/// one machine's report describes).
pub const MAX_RESULTS: usize = 4096;

/// Why results cannot be merged; every message names the results concerned.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Text that is not JSON where a result should start.
    #[error("{name}: not JSON at line {line}, column {column}: {why}")]
    Parse {
        /// The input.
        name: String,
        /// Where, 1-based.
        line: usize,
        /// Where in the line, 1-based.
        column: usize,
        /// What the parser said.
        why: String,
    },
    /// JSON that is not a run's result.
    #[error("{name} is not a strain result (--json)")]
    NotAResult {
        /// The input.
        name: String,
    },
    /// Segments whose settings make no test (an HTTP/3 one of an http:// URL): hand-made,
    /// since every run's settings were checked before it ran.
    #[error("{name}: its settings make no test: {why}")]
    Settings {
        /// The input.
        name: String,
        /// What the check said.
        why: String,
    },
    /// A result from an incompatible version, or with a field missing or of the wrong type.
    #[error("{name}: {why}")]
    Result {
        /// The input.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A field's value is out of range.
    #[error("{name}: missing or malformed field {field}")]
    Field {
        /// The input.
        name: String,
        /// JSON pointer of the field.
        field: String,
    },
    /// Interval rows without histograms cannot be added exactly.
    #[error("{name} has no interval histograms: an older strain kept them only in a segment's result (run it with --segment I/N)")]
    NoIntervalHistograms {
        /// The input.
        name: String,
    },
    /// Nothing to merge.
    #[error("no results to merge")]
    Empty,
    /// More results than one test is split into.
    #[error("{count} results: at most {MAX_RESULTS} can be merged")]
    TooMany {
        /// How many were given.
        count: usize,
    },
    /// The results describe different tests.
    #[error("{first} and {other} are different tests: {what} {a} vs {b} (--force merges them anyway)")]
    Different {
        /// What differs.
        what: &'static str,
        /// The first result.
        first: String,
        /// Its value.
        a: String,
        /// The result that differs.
        other: String,
        /// Its value.
        b: String,
    },
    /// Two results are the same segment.
    #[error("{first} and {other} are both segment {index} of {count} (--force merges them anyway)")]
    Duplicate {
        /// The segment.
        index: u32,
        /// Of how many.
        count: u32,
        /// The first result with it.
        first: String,
        /// The second.
        other: String,
    },
    /// Segments are missing.
    #[error("segments {missing} of {count} are missing (given: {given}; --force merges what is there)")]
    Missing {
        /// The missing indexes, comma-separated.
        missing: String,
        /// Of how many.
        count: u32,
        /// The results given.
        given: String,
    },
}

/// The merged test: what one run's reports are rendered from.
#[derive(Debug)]
pub struct Merged {
    /// Every segment's measurements added up.
    pub summary: Summary,
    /// The interval rows, aligned by wall clock and added.
    pub series: Vec<IntervalRow>,
    /// The whole test, as one process would have run it (its threads are every segment's).
    pub config: Config,
    /// The protocol the segments spoke.
    pub protocol: Protocol,
    /// CPU seconds of every segment's worker threads, in input order.
    pub thread_cpu: Vec<Duration>,
    /// Some results were proxy tests, whose `proxy` section (hit ratio, origin counts) is not
    /// merged: a hit ratio measured at one origin by several clients is not a sum.
    pub proxy_dropped: bool,
    /// A segment whose server shared its CPUs (the first such, in input order).
    pub shared_cpus: Option<crate::net::host::SharedCpus>,
    /// Replays: the segments' replay sections together (see `replay` below).
    pub replay: Option<crate::result::ReplayDoc>,
}

/// The replay sections of a replay's segments as one: requests handed out added up; the
/// recording, its counts (each segment reads all of it) and its passes the first's; each path's
/// requests added; the send-lag percentiles the worst segment's (an upper bound: the segments'
/// histograms are not in their results).
fn replay(parts: &[Part]) -> Option<crate::result::ReplayDoc> {
    let docs: Vec<&crate::result::ReplayDoc> = parts.iter().filter_map(|p| p.doc.replay.as_ref()).collect();
    let mut whole = (*docs.first()?).clone();
    whole.queued = docs.iter().map(|d| d.queued).sum();
    whole.passes = docs.iter().map(|d| d.passes).max().unwrap_or(0);
    whole.lag_us.p50 = docs.iter().map(|d| d.lag_us.p50).max().unwrap_or(0);
    whole.lag_us.p99 = docs.iter().map(|d| d.lag_us.p99).max().unwrap_or(0);
    whole.lag_us.max = docs.iter().map(|d| d.lag_us.max).max().unwrap_or(0);
    let mut paths: BTreeMap<&str, crate::result::PathDoc> = BTreeMap::new();
    for p in docs.iter().flat_map(|d| &d.paths) {
        let e = paths.entry(&p.path).or_insert_with(|| crate::result::PathDoc {
            path: p.path.clone(),
            requests: 0,
            latency_mean_us: 0.0,
            latency_max_us: 0,
            errors: 0,
        });
        let n = e.requests + p.requests;
        if n > 0 {
            e.latency_mean_us =
                (e.latency_mean_us * e.requests as f64 + p.latency_mean_us * p.requests as f64) / n as f64;
        }
        e.requests = n;
        e.errors += p.errors;
        e.latency_max_us = e.latency_max_us.max(p.latency_max_us);
    }
    let mut paths: Vec<crate::result::PathDoc> = paths.into_values().collect();
    paths.sort_by(|a, b| (b.requests + b.errors).cmp(&(a.requests + a.errors)).then_with(|| a.path.cmp(&b.path)));
    paths.truncate(crate::report::json::TOP_PATHS_JSON);
    whole.paths = paths;
    Some(whole)
}

/// Splits `text` (one result, or results concatenated as `cat` or `kubectl logs` give them,
/// pretty or one a line) into documents named `name`, or `name (result 1)`, `name (result 2)`
/// ... when there are several. A line that does not start a JSON document is text between
/// results (`kubectl logs` shows a pod's stderr, where a run writes its report when `--json -`
/// takes stdout) and is skipped; a document that starts but does not parse is an error naming
/// its line. Returns the documents and the number of lines skipped.
pub fn parse_stream(name: &str, text: &str) -> Result<(Vec<(String, Value)>, usize), MergeError> {
    let mut out = Vec::new();
    let (mut at, mut skipped) = (0, 0);
    while at < text.len() {
        let rest = &text[at..];
        let trimmed = rest.trim_start();
        if trimmed.is_empty() {
            break;
        }
        let start = at + (rest.len() - trimmed.len());
        if !trimmed.starts_with('{') {
            // Not a result: skip to the end of this line.
            skipped += 1;
            at = text[start..].find('\n').map_or(text.len(), |n| start + n + 1);
            continue;
        }
        let mut docs = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match docs.next() {
            Some(Ok(doc)) => {
                out.push(doc);
                at = start + docs.byte_offset();
            }
            Some(Err(e)) => {
                let line = text[..start].matches('\n').count() + e.line();
                let column = if e.line() == 1 {
                    start - text[..start].rfind('\n').map_or(0, |n| n + 1) + e.column()
                } else {
                    e.column()
                };
                return Err(MergeError::Parse { name: name.into(), line, column, why: e.to_string() });
            }
            None => break,
        }
    }
    let many = out.len() > 1;
    let docs = out
        .into_iter()
        .enumerate()
        .map(|(i, d)| (if many { format!("{name} (result {})", i + 1) } else { name.to_string() }, d))
        .collect();
    Ok((docs, skipped))
}

/// Checks that `parts` are the segments of one test, each once: same URL, connections,
/// duration and segment count, no segment twice and none missing.
pub fn check(parts: &[Part]) -> Result<(), MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    for p in &parts[1..] {
        // Shown as JSON shows them (a URL in quotes), "none" when absent.
        let same = |what: &'static str, a: Option<Value>, b: Option<Value>| {
            if a == b {
                return Ok(());
            }
            let show = |v: Option<Value>| v.map_or_else(|| "none".to_string(), |v| v.to_string());
            Err(MergeError::Different {
                what,
                first: first.name.clone(),
                a: show(a),
                other: p.name.clone(),
                b: show(b),
            })
        };
        let (x, y) = (&first.doc, &p.doc);
        same("URL", Some(x.config.url.clone().into()), Some(y.config.url.clone().into()))?;
        if p.segment.count != first.segment.count {
            return Err(MergeError::Different {
                what: "segment count",
                first: first.name.clone(),
                a: first.segment.count.to_string(),
                other: p.name.clone(),
                b: p.segment.count.to_string(),
            });
        }
        same("connections", Some(x.config.connections.into()), Some(y.config.connections.into()))?;
        same("duration", x.config.duration_s.map(Into::into), y.config.duration_s.map(Into::into))?;
        same("requests", x.config.requests.map(Into::into), y.config.requests.map(Into::into))?;
        let rate = |d: &crate::result::RunDoc| d.rate.as_ref().map(|r| r.target_per_s.into());
        same("rate", rate(x), rate(y))?;
    }
    let count = first.segment.count;
    let mut seen: BTreeMap<u32, &Part> = BTreeMap::new();
    for p in parts {
        if let Some(before) = seen.insert(p.segment.index, p) {
            return Err(MergeError::Duplicate {
                index: p.segment.index,
                count,
                first: before.name.clone(),
                other: p.name.clone(),
            });
        }
    }
    let missing: Vec<String> = (0..count).filter(|i| !seen.contains_key(i)).map(|i| i.to_string()).collect();
    if !missing.is_empty() {
        let given: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
        return Err(MergeError::Missing { missing: missing.join(", "), count, given: given.join(", ") });
    }
    Ok(())
}

/// Merges named result documents (after [`check`], unless `force`).
pub fn merge(docs: Vec<(String, Value)>, force: bool) -> Result<Merged, MergeError> {
    if docs.len() > MAX_RESULTS {
        return Err(MergeError::TooMany { count: docs.len() });
    }
    let parts = docs.into_iter().map(|(name, doc)| Part::read(name, doc)).collect::<Result<Vec<_>, _>>()?;
    if !force {
        check(&parts)?;
    }
    let first = parts.first().ok_or(MergeError::Empty)?;
    let origin =
        parts.iter().map(|p| p.started.checked_sub(p.warmup).unwrap_or(p.started)).min().unwrap_or(first.started);
    let started = parts.iter().map(|p| p.started).min().unwrap_or(first.started);
    let end = parts.iter().filter_map(|p| p.started.checked_add(p.elapsed)).max().unwrap_or(started);
    let recorders: Vec<Recorder> = parts.iter().map(|p| p.recorder.clone()).collect();
    let mut summary = Summary::new(recorders, end.duration_since(started).unwrap_or_default(), started);
    let interval_us = interval_us(parts.iter().map(|p| &p.doc));
    // Each merged row: the segments' snapshots that land in it, and their targets added.
    let mut by_index: BTreeMap<u32, (Vec<Snapshot>, Option<f64>)> = BTreeMap::new();
    for p in &parts {
        for (snap, target) in p.snapshots(origin, interval_us)? {
            let (snaps, sum) = by_index.entry(snap.index).or_default();
            snaps.push(snap);
            *sum = match (*sum, target) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
    }
    let mut series = Vec::with_capacity(by_index.len());
    for (mut snaps, target) in by_index.into_values() {
        let (mut row, h) = IntervalRow::merge(&mut snaps, target);
        row.latency_histogram = Some(crate::report::json::encode_histogram(&h));
        series.push(row);
    }
    rate_samples(&parts, &mut summary.total);
    let config = whole_config(&parts, Duration::from_micros(interval_us))?;
    let thread_cpu = parts
        .iter()
        .flat_map(|p| p.doc.thread_cpu_s.iter())
        .filter_map(|s| Duration::try_from_secs_f64(*s).ok())
        .collect();
    let proxy_dropped = parts.iter().any(|p| p.doc.proxy.is_some());
    // The segments spoke what their JSON names (merging refuses results of different tests).
    let protocol = match config.protocol {
        ProtocolChoice::Exactly(protocol) => protocol,
        ProtocolChoice::Negotiate => Protocol::Http1,
    };
    let shared_cpus = parts.iter().find_map(|p| p.doc.shared_cpus.clone());
    let replay = replay(&parts);
    Ok(Merged { summary, series, config, protocol, thread_cpu, proxy_dropped, shared_cpus, replay })
}

/// Length of the series' intervals: the first full row's, rounded to 10 ms (the shortest
/// interval allowed), since a row is cut a few microseconds after its due time.
fn interval_us<'a>(docs: impl Iterator<Item = &'a crate::result::RunDoc>) -> u64 {
    let lengths: Vec<f64> = docs.filter_map(|d| d.intervals.first()).map(|r| r.length_s).collect();
    let s = lengths.iter().copied().fold(0.0f64, f64::max);
    let us = ((s * 100.0).round() * 10_000.0) as u64;
    if us == 0 {
        crate::config::DEFAULT_INTERVAL.as_micros() as u64
    } else {
        us
    }
}

/// `Req/Sec` per thread, rebuilt from each segment's intervals: every thread of a segment is
/// taken to have run at the segment's rate over its threads, once per rate sample.
fn rate_samples(parts: &[Part], total: &mut Recorder) {
    total.rate_samples.reset();
    for p in parts {
        let threads = p.threads.max(1) as u64;
        for r in &p.doc.intervals {
            let (per_s, length_s) = (r.achieved_per_s, r.length_s);
            let samples =
                ((length_s * 1000.0 / crate::stats::RATE_SAMPLE_MS as f64).round() as u64).saturating_mul(threads);
            let _ = total.rate_samples.record_n((per_s / threads as f64).round() as u64, samples);
        }
    }
}

/// The whole test as one process would run it: the first result's settings, the threads of
/// every segment, no segment, and the rate schedule at its whole-test average.
fn whole_config(parts: &[Part], interval: Duration) -> Result<Config, MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    let n = first.name.as_str();
    let bad = |field: &str| MergeError::Field { name: n.into(), field: field.into() };
    let doc = &first.doc;
    let mut config = Settings::new(Target::parse(first.url()).map_err(|_| bad("/config/url"))?);
    config.connections = doc.config.connections;
    config.threads = parts.iter().map(|p| p.threads).fold(0, usize::saturating_add).max(1);
    let secs = |s: f64, field: &str| Duration::try_from_secs_f64(s).map_err(|_| bad(field));
    // A run of -n requests has no duration asked for: the longest segment's is what ran.
    let longest = parts.iter().map(|p| p.doc.duration_s).fold(0.0, f64::max);
    config.duration = secs(doc.config.duration_s.unwrap_or(longest), "/config/duration_s")?;
    config.time_bound = doc.config.duration_s.is_some();
    config.requests = doc.config.requests;
    config.timeout = secs(doc.config.timeout_s, "/config/timeout_s")?;
    config.warmup = first.warmup;
    config.insecure = doc.config.insecure;
    config.method = doc.config.method.clone();
    config.headers = doc
        .config
        .headers
        .iter()
        .filter_map(|h| h.split_once(": "))
        .map(|(name, value)| crate::http::request::Header { name: name.into(), value: value.into() })
        .collect();
    if let Some((spoken, _)) = doc.sections.get::<crate::stats::H2Counts>() {
        config.protocol = ProtocolChoice::Exactly(Protocol::Http2 { streams: spoken.streams_per_connection });
    }
    if let Some((spoken, _)) = doc.sections.get::<crate::stats::H3Counts>() {
        config.protocol = ProtocolChoice::Exactly(Protocol::Http3 { streams: spoken.streams_per_connection });
    }
    if let Some(speech) = crate::stats::section::speech(&doc.protocol) {
        config.protocol = ProtocolChoice::Exactly(Protocol::Unit(speech));
    }
    config.start_at = doc.start_at.as_deref().and_then(|s| humantime::parse_rfc3339_weak(s).ok());
    if let Some(target) = doc.rate.as_ref().map(|r| r.target_per_s) {
        let count = f64::from(first.segment.count.max(1));
        config.schedule = Some(Schedule::constant(target * count, config.duration));
    }
    config.interval = Some(interval);
    config.build().map_err(|e| MergeError::Settings { name: n.into(), why: e.to_string() })
}
