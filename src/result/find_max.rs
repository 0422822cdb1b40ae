//! A capacity search's document (`find-max --json`, `schema/find-max.schema.json`): the
//! answer, the search's settings, and every step with its full run result.

use serde::{Deserialize, Serialize};

use super::{kind_of, malformed, Kind, ResultError, RunDoc};

/// A capacity search, as `find-max --json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMaxDoc {
    /// The layout's version ([`super::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The strain that wrote it.
    pub strain_version: String,
    /// Always `find-max`.
    pub kind: String,
    /// The highest rate that met the SLO, requests/s (null when none did).
    pub max_rate: Option<f64>,
    /// How the search ended and what it found.
    pub answer: Answer,
    /// The search's settings.
    pub config: FindMaxSettings,
    /// The probe's achieved rate, when the search started with one.
    pub probe_per_s: Option<f64>,
    /// Every step, in the order run.
    pub steps: Vec<StepDoc>,
    /// The command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// CPUs of the machine that ran the search.
    pub host_cores: usize,
    /// The server ran on this machine on CPUs strain's threads used too, in every step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_cpus: Option<crate::net::host::SharedCpus>,
}

impl FindMaxDoc {
    /// Reads a search from its JSON.
    pub fn parse(text: &str) -> Result<FindMaxDoc, ResultError> {
        match kind_of(text)? {
            Kind::FindMax => serde_json::from_str(text).map_err(malformed),
            Kind::Run => Err(ResultError::Other("a find-max search (this is a run's result)")),
            Kind::Compare => Err(ResultError::Other("a find-max search (this is a comparison)")),
        }
    }

    /// The document as `find-max --json` writes it: pretty, ending in a newline.
    pub fn to_json(&self) -> String {
        // Plain structs with string keys always serialize.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// How a search ended and what it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// Why it ended: `converged`, `max_passed`, `nothing_passed`, `limit`, `step_budget`,
    /// `stopped`.
    pub end: String,
    /// The highest rate that met the SLO.
    pub max_rate: Option<f64>,
    /// The lowest rate that failed it.
    pub first_fail: Option<f64>,
    /// The SLO terms that failed there.
    pub failed_terms: Vec<String>,
    /// Where latency started to climb.
    pub knee: Option<Knee>,
    /// What limited the search other than the server.
    pub limit: Option<Limit>,
}

/// Where latency started to climb.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The rate, requests/s.
    pub rate: f64,
    /// Its latency, microseconds.
    pub latency_us: f64,
}

/// A limit of the generator or of the connections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// `generator` or `connections`.
    pub kind: String,
    /// Share of sends that were late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_share: Option<f64>,
    /// The generator threads' CPU share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
    /// Connections that would do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggest_connections: Option<usize>,
}

/// A search's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMaxSettings {
    /// Target URL.
    pub url: String,
    /// Connections.
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// The SLO terms.
    pub slo: Vec<String>,
    /// First rate tried, if given.
    pub start: Option<f64>,
    /// Highest rate tried, if given.
    pub max: Option<f64>,
    /// Relative precision the search converges to.
    pub precision: f64,
    /// Warm-up of each step.
    pub warmup_s: f64,
    /// Measured length of each step.
    pub step_s: f64,
    /// Processes watched (`--watch-pid`).
    pub watch_pids: Vec<u32>,
    /// What the rates count when not requests: `streams` (`strain sse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_of: Option<String>,
}

impl FindMaxSettings {
    /// What the rates count: `requests`, `streams`.
    pub fn noun(&self) -> &str {
        self.rate_of.as_deref().unwrap_or("requests")
    }
}

/// One step of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepDoc {
    /// Its rate and what it measured.
    #[serde(flatten)]
    pub figures: StepFigures,
    /// `pass`, `slo`, `behind`, `generator_limit` or `connection_limit`.
    pub verdict: String,
    /// Each SLO term and how it came out.
    pub slo: Vec<super::ThresholdDoc>,
    /// The generator threads' CPU share.
    pub cpu_share: f64,
    /// The watched processes over the step.
    pub watched: Vec<Watched>,
    /// The step's whole run result. Written with its keys sorted, as versions before the typed
    /// document wrote it, so a search's JSON stays byte-compatible.
    #[serde(serialize_with = "sorted")]
    pub result: RunDoc,
}

/// A step's rate and what it measured: the search judges a step ([`crate::find_max::step::Step`]
/// holds this) by the figures its document writes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepFigures {
    /// The rate asked for, requests/s.
    pub target_per_s: f64,
    /// Completed requests per second while measuring.
    pub achieved_per_s: f64,
    /// Corrected latency percentiles and maximum, microseconds.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Largest.
    pub max_us: u64,
    /// Failed requests (lost, status above 399, wrong content).
    pub errors: u64,
    /// Requests sent more than a millisecond late.
    pub late: u64,
}

/// One watched process over one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Watched {
    /// The process id.
    pub pid: u32,
    /// CPU time over wall time, in percent (100 per busy core); `None` if it could not be read.
    pub cpu_pct: Option<f64>,
    /// Resident memory at the end of the step, bytes.
    pub rss_bytes: Option<u64>,
}

/// Serializes `doc` with its object keys in sorted order.
fn sorted<S: serde::Serializer>(doc: &RunDoc, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(doc).map_err(serde::ser::Error::custom)?.serialize(s)
}
