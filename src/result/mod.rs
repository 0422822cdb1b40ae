//! The result documents strain writes and reads back, as types: one run's result
//! ([`RunDoc`], `--json`, pinned by `schema/result.schema.json`) and a capacity search's
//! ([`find_max::FindMaxDoc`], `find-max --json`, `schema/find-max.schema.json`). Writers build
//! them from what ran (`report::json`, `report::search`); `compare`, `merge` and the HTML pages
//! read them typed. Reading tolerates fields it does not know (a newer strain may add some) and
//! refuses a document whose `schema_version` this build does not read, in one line naming it.

pub mod find_max;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::stats::interval::IntervalRow;

/// Version of the JSON layout. Bump it when a field changes meaning or disappears (adding
/// fields does not).
pub const SCHEMA_VERSION: u32 = 1;

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// Not JSON, or a field missing or of the wrong type.
    #[error("{0}")]
    Malformed(String),
    /// Written by a strain whose layout this one does not read.
    #[error("{kind} schema_version {found} is not supported (this strain reads {SCHEMA_VERSION})")]
    Version {
        /// Which document.
        kind: &'static str,
        /// The version it has.
        found: u64,
    },
    /// JSON, but not the document asked for.
    #[error("not {0}")]
    Other(&'static str),
}

/// The fields every document strain writes starts with, read before the rest.
#[derive(Deserialize)]
struct Probe {
    schema_version: Option<serde_json::Value>,
    kind: Option<String>,
    intervals: Option<serde::de::IgnoredAny>,
}

/// What kind of document a text holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One run's result.
    Run,
    /// A capacity search.
    FindMax,
    /// A comparison (`compare --json`).
    Compare,
}

/// The kind of document `text` is, its version checked.
pub fn kind_of(text: &str) -> Result<Kind, ResultError> {
    checked(serde_json::from_str(text).map_err(malformed)?)
}

/// The kind of document a probe found, its version checked.
fn checked(probe: Probe) -> Result<Kind, ResultError> {
    let kind = match (probe.kind.as_deref(), &probe.intervals) {
        (Some("find-max"), _) => Kind::FindMax,
        (Some("compare"), _) => Kind::Compare,
        (_, Some(_)) => Kind::Run,
        _ => return Err(ResultError::Other("a strain result, search or comparison (--json)")),
    };
    let name = match kind {
        Kind::FindMax => "find-max",
        Kind::Compare => "compare",
        Kind::Run => "result",
    };
    match probe.schema_version.as_ref().and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => Ok(kind),
        Some(v) => Err(ResultError::Version { kind: name, found: v }),
        None => Err(ResultError::Malformed("no schema_version".into())),
    }
}

fn malformed(e: serde_json::Error) -> ResultError {
    ResultError::Malformed(e.to_string())
}

/// One run's result, as `--json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDoc {
    /// The layout's version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The strain that wrote it.
    pub strain_version: String,
    /// The load.
    pub config: ConfigDoc,
    /// When measuring started (RFC 3339).
    pub started: String,
    /// Measured wall time, drain included.
    pub duration_s: f64,
    /// Requests written; each ends as one of `requests`, a read, write or parse error, or a
    /// timeout.
    pub sent: u64,
    /// Responses completed.
    pub requests: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Bytes read per second.
    pub bytes_per_s: f64,
    /// Connections established.
    pub connections_opened: u64,
    /// Errors by kind.
    pub errors: Errors,
    /// Responses by status code.
    pub status: BTreeMap<String, u64>,
    /// Latency (corrected in rate mode).
    pub latency_us: Latency,
    /// Latency from the actual send; equal to `latency_us` in closed loop.
    pub uncorrected_latency_us: Latency,
    /// Per-thread request rate samples.
    pub thread_requests_per_s: Spread,
    /// Rate mode: the target and how sends kept to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// The live time series, one row per interval.
    pub intervals: Vec<IntervalRow>,
    /// Proxy tests: the hit ratio and what the origin saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyDoc>,
    /// `--threshold` rules and how they came out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdDoc>,
    /// The whole latency histogram (corrected in rate mode): HdrHistogram V2, deflated, base64.
    pub latency_histogram: String,
    /// Rate mode: the uncorrected one, the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_latency_histogram: Option<String>,
    /// Rate mode: when each stage ends, seconds from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_ends_s: Option<Vec<f64>>,
    /// The command line (absent for a library call).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// CPUs of the machine that ran the test.
    pub host_cores: usize,
    /// Segmented runs: which share of the test this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentDoc>,
    /// `--start-at`: when every segment was to start (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// The protocol spoken: `http/1.1`, `h2` (TLS), `h2c`, `h3`, `ws` or `wss`.
    #[serde(default = "http1")]
    pub protocol: String,
    /// The protocols' sections, each under its key: `http2` and `http3` (resets, GOAWAYs,
    /// handshakes, packets), a unit's (`websocket`: upgrades, closes by code, messages each
    /// way; `sse`: streams and events; `grpc`: calls by status, messages each way), each how
    /// it was spoken (but gRPC's, which the run's `protocol` says) and then its counts.
    #[serde(flatten)]
    pub sections: crate::stats::section::Written,
    /// CPU seconds each worker thread used while measuring.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_cpu_s: Vec<f64>,
    /// `--targets`: each target's responses and latency, in the file's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetDoc>,
    /// The server ran on this machine on CPUs strain's threads used too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_cpus: Option<crate::net::host::SharedCpus>,
    /// `strain replay`: what was replayed, and how closely the replay kept to the recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayDoc>,
}

/// A replay: the recording, the replay's pace, how far behind schedule sends fell, and what
/// was skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayDoc {
    /// What was replayed (files, formats, one pass's requests and span, speed, loops).
    #[serde(flatten)]
    pub note: crate::replay::ReplayNote,
    /// The recording's mean rate, requests/s.
    pub recorded_rate_per_s: f64,
    /// Requests this process's reader handed to its threads.
    pub queued: u64,
    /// Passes begun.
    pub passes: u32,
    /// How long after its due time each request was written, microseconds.
    pub lag_us: LagDoc,
    /// What one pass skipped, and why, and records out of order beyond the window.
    pub counts: crate::replay::reader::Counts,
    /// The paths (without their query) with the most requests, most first.
    #[serde(default)]
    pub paths: Vec<PathDoc>,
    /// The first lines in no layout strain reads, `file:line: why`.
    #[serde(default)]
    pub bad_lines: Vec<String>,
}

/// One path of a replay: its requests and their latency (corrected).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathDoc {
    /// The path, without its query.
    pub path: String,
    /// Responses completed.
    pub requests: u64,
    /// Their mean latency, microseconds.
    pub latency_mean_us: f64,
    /// The largest.
    pub latency_max_us: u64,
    /// Requests that failed.
    pub errors: u64,
}

/// Send lag percentiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LagDoc {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

/// One target of a targets file: what it is and how it was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetDoc {
    /// Its method.
    pub method: String,
    /// Its URL.
    pub url: String,
    /// Responses completed.
    pub requests: u64,
    /// Their mean latency (corrected in rate mode), microseconds.
    pub latency_mean_us: f64,
    /// The largest.
    pub latency_max_us: u64,
    /// Requests that failed (timeouts, resets, broken connections).
    #[serde(default)]
    pub errors: u64,
}

fn http1() -> String {
    "http/1.1".into()
}

impl RunDoc {
    /// Reads a run's result from its JSON.
    pub fn parse(text: &str) -> Result<RunDoc, ResultError> {
        match kind_of(text)? {
            Kind::Run => serde_json::from_str(text).map_err(malformed),
            Kind::FindMax => Err(ResultError::Other("a run's result (this is a find-max search)")),
            Kind::Compare => Err(ResultError::Other("a run's result (this is a comparison)")),
        }
    }

    /// Reads a run's result from a JSON value (one of several in a stream).
    pub fn from_value(value: serde_json::Value) -> Result<RunDoc, ResultError> {
        match checked(Probe::deserialize(&value).map_err(malformed)?)? {
            Kind::Run => RunDoc::deserialize(value).map_err(malformed),
            Kind::FindMax => Err(ResultError::Other("a run's result (this is a find-max search)")),
            Kind::Compare => Err(ResultError::Other("a run's result (this is a comparison)")),
        }
    }

    /// The document as `--json` writes it: pretty, ending in a newline.
    pub fn to_json(&self) -> String {
        // Plain structs with string keys always serialize.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Every error counted, responses with a status above 399 included.
    pub fn error_total(&self) -> u64 {
        self.errors.by_kind().iter().map(|(_, n)| n).sum()
    }
}

/// The load a result was measured under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigDoc {
    /// Target URL.
    pub url: String,
    /// Connections (of the whole test, for a segment).
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// Load time asked for, warm-up included; `None` for a run of `-n` requests without one.
    pub duration_s: Option<f64>,
    /// `-n`: requests the whole test sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Request timeout.
    pub timeout_s: f64,
    /// Extra headers, `Name: value`.
    pub headers: Vec<String>,
    /// Certificates not checked.
    pub insecure: bool,
    /// The request's method, when not GET.
    #[serde(default = "get", skip_serializing_if = "is_get")]
    pub method: String,
    /// The request body's size, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<u64>,
    /// Load before measuring started, part of `duration_s`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_s: f64,
}

fn get() -> String {
    "GET".into()
}

fn is_get(m: &String) -> bool {
    m == "GET"
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_count(v: &u64) -> bool {
    *v == 0
}

/// Errors by kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Errors {
    /// Failed connects.
    pub connect: u64,
    /// Reads that failed or ended before the response did.
    pub read: u64,
    /// Writes that failed.
    pub write: u64,
    /// Requests without a response within the timeout.
    pub timeout: u64,
    /// Responses that were not HTTP.
    pub parse: u64,
    /// Responses with a status above 399.
    pub status: u64,
    /// Proxy tests: bodies that did not match their URL.
    pub content: u64,
    /// HTTP/2 streams the server reset.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub reset: u64,
    /// Connect errors by cause; they sum to `connect`.
    pub connect_causes: BTreeMap<String, u64>,
}

impl Errors {
    /// Each kind's count, named as the interval rows name them.
    pub fn by_kind(&self) -> [(&'static str, u64); 8] {
        [
            ("connect", self.connect),
            ("read", self.read),
            ("write", self.write),
            ("timeout", self.timeout),
            ("parse", self.parse),
            ("status", self.status),
            ("content", self.content),
            ("reset", self.reset),
        ]
    }
}

/// A distribution's spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stdev: f64,
    /// Largest.
    pub max: u64,
    /// Share of values within one standard deviation of the mean, percent.
    pub within_stdev_pct: f64,
}

/// A latency distribution: its spread and percentiles (keys "50" … "99.99", "100").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Its spread.
    #[serde(flatten)]
    pub spread: Spread,
    /// Value at each percentile, microseconds.
    pub percentiles: BTreeMap<String, u64>,
}

impl Latency {
    /// The value at percentile `key` ("50", "99.9", "100"…), if written.
    pub fn at(&self, key: &str) -> Option<u64> {
        self.percentiles.get(key).copied()
    }
}

/// Rate mode: the target and how sends kept to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Requests per second asked for (this segment's share).
    pub target_per_s: f64,
    /// Requests sent on schedule or late.
    pub sent: u64,
    /// Sent more than a millisecond late.
    pub late: u64,
    /// Late for want of a free connection (strain's own thread kept up).
    pub late_no_connection: u64,
    /// Of those, late because their connection was still being opened (absent from results
    /// written before it was counted).
    #[serde(default)]
    pub late_connecting: u64,
    /// Mean lateness of the late ones.
    pub late_mean_us: f64,
    /// Largest lateness.
    pub late_max_us: u64,
    /// Of the late ones strain's own thread delayed, the mean delay it added (absent from
    /// results written before it was kept).
    #[serde(default)]
    pub late_own_mean_us: f64,
    /// Due but never sent (the run was stopped).
    pub unsent: u64,
    /// A rate of streams: those that arrived to find every connection holding one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
}

/// Proxy tests: the hit ratio and what the origin saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProxyDoc {
    /// Share of responses the proxy served without the origin.
    pub hit_ratio: Option<f64>,
    /// Requests the origin answered.
    pub origin_requests: Option<u64>,
    /// Connections the origin accepted.
    pub origin_connections: Option<u64>,
    /// Responses abandoned mid-body on purpose.
    pub aborted: u64,
    /// Arrivals dropped with every connection busy.
    pub arrivals_dropped: u64,
    /// The first content mismatches, explained.
    pub content_failures: Vec<String>,
    /// Time to first byte.
    pub first_byte_us: Latency,
    /// Per interval.
    pub intervals: Vec<ProxyRow>,
}

/// One interval of a proxy test: what the origin saw, and the hit ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProxyRow {
    /// Seconds from the start to the interval's start.
    pub start_s: f64,
    /// Requests the origin answered in the interval (`None`: its counters could not be read).
    pub origin_requests: Option<u64>,
    /// Connections the origin accepted in the interval.
    pub origin_new_connections: Option<u64>,
    /// The interval's hit ratio (`None` without successful responses or origin counters).
    pub hit_ratio: Option<f64>,
    /// Mean time to first byte, microseconds.
    pub first_byte_mean_us: f64,
    /// 99th percentile time to first byte, microseconds.
    pub first_byte_p99_us: u64,
}

/// A `--threshold` rule and how it came out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdDoc {
    /// The rule as written.
    pub expr: String,
    /// Whether it held.
    pub passed: bool,
    /// In the metric's unit: microseconds, a share from 0 to 1, a count or requests/s.
    pub value: Option<f64>,
}

/// Which share of a segmented test a result is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SegmentDoc {
    /// This segment, from 0.
    pub index: u32,
    /// Of how many.
    pub count: u32,
}

#[cfg(test)]
mod tests;
