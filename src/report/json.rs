//! The JSON result: everything the text shows and more, for machines.
//!
//! Its shape is pinned by `schema/result.schema.json`; a test validates real output against it.
//! Bump [`SCHEMA_VERSION`] when a field changes meaning or disappears (adding fields does not).

use serde::Serialize;

use crate::config::{Config, Protocol};
use crate::run::proxy::{ProxyResult, ProxyRow};
use crate::run::RunResult;
use crate::stats::interval::IntervalRow;
use crate::stats::{ConnectCause, Distribution, ErrorKind, Summary};
use crate::verdict::Outcome;

/// Version of the JSON layout.
pub const SCHEMA_VERSION: u32 = 1;
/// Latency percentiles written to JSON, with their key names.
const PERCENTILES: [(&str, f64); 7] =
    [("50", 50.0), ("75", 75.0), ("90", 90.0), ("99", 99.0), ("99.9", 99.9), ("99.99", 99.99), ("100", 100.0)];

#[derive(Serialize)]
struct Result<'a> {
    schema_version: u32,
    strain_version: &'static str,
    config: ConfigOut<'a>,
    started: String,
    duration_s: f64,
    /// Requests written; each ends as one of `requests`, a read, write or parse error, or a
    /// timeout.
    sent: u64,
    requests: u64,
    bytes: u64,
    requests_per_s: f64,
    bytes_per_s: f64,
    connections_opened: u64,
    errors: Errors,
    status: std::collections::BTreeMap<String, u64>,
    latency_us: Latency,
    /// Latency from the actual send; equal to `latency_us` in closed loop.
    uncorrected_latency_us: Latency,
    thread_requests_per_s: Spread,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<Rate>,
    /// The live time series, one row per interval.
    intervals: &'a [IntervalRow],
    /// Proxy tests: the hit ratio and what the origin saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy: Option<ProxyOut<'a>>,
    /// `--threshold` rules and how they came out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    thresholds: Vec<ThresholdOut<'a>>,
    /// The whole latency histogram (corrected in rate mode): HdrHistogram V2, deflated, base64.
    latency_histogram: String,
    /// Rate mode: the uncorrected one, the same way.
    #[serde(skip_serializing_if = "Option::is_none")]
    uncorrected_latency_histogram: Option<String>,
    /// Rate mode: when each stage ends, seconds from the start.
    #[serde(skip_serializing_if = "Option::is_none")]
    stage_ends_s: Option<Vec<f64>>,
    /// The command line (absent for a library call).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    command: &'a [String],
    /// CPUs of the machine that ran the test.
    host_cores: usize,
    /// Segmented runs: which share of the test this is.
    #[serde(skip_serializing_if = "Option::is_none")]
    segment: Option<SegmentOut>,
    /// `--start-at`: when every segment was to start (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    start_at: Option<String>,
    /// The protocol spoken: `http/1.1`, `h2` (TLS) or `h2c`.
    protocol: &'static str,
    /// HTTP/2 runs: the protocol and what it counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    http2: Option<Http2Out>,
    /// CPU seconds each worker thread used while measuring (a thread near `duration_s` was the
    /// generator's limit).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    thread_cpu_s: Vec<f64>,
}

pub use crate::stats::codec::{decode_histogram, encode_histogram};

#[derive(Serialize)]
struct SegmentOut {
    index: u32,
    count: u32,
}

#[derive(Serialize)]
struct Http2Out {
    /// `h2` (TLS, ALPN) or `h2c` (prior knowledge).
    protocol: &'static str,
    streams_per_connection: u32,
    /// Header bytes received: decoded, and as sent (HPACK).
    header_bytes: u64,
    header_frame_bytes: u64,
    /// Streams the server reset, by error code name.
    resets: std::collections::BTreeMap<&'static str, u64>,
    goaways: u64,
    /// Requests refused unprocessed after a GOAWAY and sent again.
    retried: u64,
    protocol_errors: u64,
    /// Requests whose body waited for the server's flow-control window.
    flow_control_stalls: u64,
}

#[derive(Serialize)]
struct ThresholdOut<'a> {
    expr: &'a str,
    passed: bool,
    /// In the metric's unit: microseconds, a share from 0 to 1, a count or requests/s.
    value: Option<f64>,
}

#[derive(Serialize)]
struct ProxyOut<'a> {
    hit_ratio: Option<f64>,
    origin_requests: Option<u64>,
    origin_connections: Option<u64>,
    aborted: u64,
    arrivals_dropped: u64,
    content_failures: &'a [String],
    first_byte_us: Latency,
    intervals: &'a [ProxyRow],
}

#[derive(Serialize)]
struct Rate {
    target_per_s: f64,
    sent: u64,
    late: u64,
    late_no_connection: u64,
    late_mean_us: f64,
    late_max_us: u64,
    unsent: u64,
}

#[derive(Serialize)]
struct ConfigOut<'a> {
    url: &'a str,
    connections: usize,
    threads: usize,
    duration_s: f64,
    timeout_s: f64,
    headers: Vec<String>,
    insecure: bool,
    /// Load before measuring started, part of `duration_s`.
    #[serde(skip_serializing_if = "is_zero")]
    warmup_s: f64,
}

fn is_zero_count(v: &u64) -> bool {
    *v == 0
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

#[derive(Serialize)]
struct Errors {
    connect: u64,
    read: u64,
    write: u64,
    timeout: u64,
    parse: u64,
    status: u64,
    content: u64,
    #[serde(skip_serializing_if = "is_zero_count")]
    reset: u64,
    /// Connect errors by cause; they sum to `connect`.
    connect_causes: std::collections::BTreeMap<&'static str, u64>,
}

#[derive(Serialize)]
struct Spread {
    min: u64,
    mean: f64,
    stdev: f64,
    max: u64,
    within_stdev_pct: f64,
}

#[derive(Serialize)]
struct Latency {
    #[serde(flatten)]
    spread: Spread,
    percentiles: std::collections::BTreeMap<&'static str, u64>,
}

/// A latency histogram as JSON (spread and percentiles), for sections built elsewhere.
fn latency(h: &hdrhistogram::Histogram<u64>) -> Latency {
    let at = |p: f64| if h.is_empty() { 0 } else { h.value_at_percentile(p) };
    Latency {
        spread: spread(&Distribution::of(h)),
        percentiles: PERCENTILES.iter().map(|&(k, p)| (k, at(p))).collect(),
    }
}

fn spread(d: &Distribution) -> Spread {
    Spread { min: d.min, mean: d.mean, stdev: d.stdev, max: d.max, within_stdev_pct: d.within_stdev_pct }
}

/// Renders a run's result as pretty JSON, with its thresholds' outcomes and the command line
/// that asked for it.
pub fn render_result(result: &RunResult, config: &Config, command: &[String]) -> String {
    let cpu: Vec<f64> = result.thread_cpu.iter().map(|d| d.as_secs_f64()).collect();
    let run = Run { protocol: result.protocol, intervals: &result.series, proxy: result.proxy.as_ref(), command };
    render_with(&result.summary, config, run, &result.outcomes, cpu)
}

/// What a run adds to its summary in the JSON.
struct Run<'a> {
    protocol: Protocol,
    intervals: &'a [IntervalRow],
    proxy: Option<&'a ProxyResult>,
    command: &'a [String],
}

/// Renders the result as pretty JSON, with the interval series.
pub fn render(summary: &Summary, config: &Config, protocol: Protocol, intervals: &[IntervalRow]) -> String {
    render_with(summary, config, Run { protocol, intervals, proxy: None, command: &[] }, &[], Vec::new())
}

/// Renders the result, with a `proxy` section for proxy tests.
fn render_with(summary: &Summary, config: &Config, run: Run, thresholds: &[Outcome], thread_cpu_s: Vec<f64>) -> String {
    let Run { protocol, intervals, proxy, command } = run;
    let t = &summary.total;
    let r = Result {
        schema_version: SCHEMA_VERSION,
        strain_version: env!("CARGO_PKG_VERSION"),
        config: ConfigOut {
            url: &config.target.url,
            connections: config.connections,
            threads: config.threads,
            duration_s: config.duration.as_secs_f64(),
            timeout_s: config.timeout.as_secs_f64(),
            headers: config.headers.iter().map(|h| format!("{}: {}", h.name, h.value)).collect(),
            insecure: config.insecure,
            warmup_s: config.warmup.as_secs_f64(),
        },
        started: humantime::format_rfc3339_millis(summary.started).to_string(),
        duration_s: summary.elapsed.as_secs_f64(),
        sent: t.sent,
        requests: t.requests,
        bytes: t.bytes,
        requests_per_s: summary.requests_per_s(),
        bytes_per_s: summary.bytes_per_s(),
        connections_opened: t.connections,
        errors: Errors {
            connect: summary.errors(ErrorKind::Connect),
            read: summary.errors(ErrorKind::Read),
            write: summary.errors(ErrorKind::Write),
            timeout: summary.errors(ErrorKind::Timeout),
            parse: summary.errors(ErrorKind::Parse),
            status: summary.status_errors(),
            content: summary.errors(ErrorKind::Content),
            reset: summary.errors(ErrorKind::Reset),
            connect_causes: ConnectCause::ALL.iter().map(|c| (c.name(), t.connect_causes[*c as usize])).collect(),
        },
        status: summary.status_counts().map(|(code, n)| (code.to_string(), n)).collect(),
        latency_us: latency(&t.latency_us),
        uncorrected_latency_us: latency(if config.schedule.is_some() { &t.uncorrected_us } else { &t.latency_us }),
        thread_requests_per_s: spread(&summary.thread_rate()),
        rate: config.schedule.as_ref().map(|s| {
            let p = &t.pacing;
            Rate {
                target_per_s: s.total_requests() / s.duration().as_secs_f64().max(1e-9) * config.segment_fraction(),
                sent: p.sent,
                late: p.late,
                late_no_connection: p.late_no_connection,
                late_mean_us: if p.late > 0 { p.late_sum_us as f64 / p.late as f64 } else { 0.0 },
                late_max_us: p.late_max_us,
                unsent: p.unsent,
            }
        }),
        intervals,
        proxy: proxy.map(|p| ProxyOut {
            hit_ratio: p.hit_ratio,
            origin_requests: p.origin.map(|o| o.requests),
            origin_connections: p.origin.map(|o| o.connections),
            aborted: t.aborted,
            arrivals_dropped: t.arrivals_dropped,
            content_failures: &t.content_failures,
            first_byte_us: latency(&t.ttfb_us),
            intervals: &p.rows,
        }),
        thresholds: thresholds
            .iter()
            .map(|o| ThresholdOut { expr: &o.threshold.text, passed: o.passed, value: o.measured })
            .collect(),
        latency_histogram: encode_histogram(&t.latency_us),
        uncorrected_latency_histogram: config.schedule.as_ref().map(|_| encode_histogram(&t.uncorrected_us)),
        stage_ends_s: config.schedule.as_ref().map(|s| s.stage_ends_s()),
        command,
        host_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        thread_cpu_s,
        segment: config
            .segment
            .is_split()
            .then_some(SegmentOut { index: config.segment.index, count: config.segment.count }),
        start_at: config.start_at.map(|t| humantime::format_rfc3339_millis(t).to_string()),
        protocol: protocol.name(config.target.scheme),
        http2: match protocol {
            Protocol::Http1 => None,
            Protocol::Http2 { streams } => {
                let h = &t.h2;
                Some(Http2Out {
                    protocol: protocol.name(config.target.scheme),
                    streams_per_connection: streams,
                    header_bytes: h.header_bytes,
                    header_frame_bytes: h.header_frame_bytes,
                    resets: h
                        .resets
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| **n > 0)
                        .map(|(code, n)| (crate::h2::code_name(code as u32), *n))
                        .collect(),
                    goaways: h.goaways,
                    retried: h.retried,
                    protocol_errors: h.protocol_errors,
                    flow_control_stalls: h.flow_control_stalls,
                })
            }
        },
    };
    // Serializing plain structs with string keys cannot fail.
    let mut s = serde_json::to_string_pretty(&r).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{check_golden, fixed};
    use crate::run::proxy::OriginCounts;

    /// Two interval rows with every field set.
    fn rows() -> Vec<IntervalRow> {
        (0u32..2)
            .map(|i| IntervalRow {
                start_s: f64::from(i) * 5.0,
                length_s: 5.0,
                target_per_s: None,
                achieved_per_s: 100.0 + f64::from(i),
                requests: 500 + u64::from(i),
                mean_us: 450.5,
                p50_us: 120,
                p90_us: 900,
                p99_us: 2_500,
                max_us: 1_500_000,
                errors: 3,
                status_errors: 1,
                errors_by_kind: [("read", 2), ("status", 1)].into_iter().collect(),
                open_connections: 100,
                new_connections: 100 * (1 - u64::from(i)),
                late: 0,
                bytes_per_s: 129_000.0,
                ttfb_mean_us: 0.0,
                ttfb_p99_us: 0,
                latency_histogram: None,
            })
            .collect()
    }

    /// The JSON with the machine's core count replaced, so the goldens hold on any machine.
    fn portable(json: String) -> String {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        json.replace(&format!("\"host_cores\": {cores}\n"), "\"host_cores\": 2\n")
    }

    #[test]
    fn closed_loop_json_matches_golden_file() {
        let (summary, config) = fixed();
        check_golden("json_closed_loop.json", &portable(render(&summary, &config, Protocol::Http1, &rows())));
    }

    #[test]
    fn histograms_survive_the_json() {
        let (summary, _) = fixed();
        let h = &summary.total.latency_us;
        let back = decode_histogram(&encode_histogram(h)).unwrap();
        assert_eq!(
            (back.len(), back.max(), back.value_at_quantile(0.99)),
            (h.len(), h.max(), h.value_at_quantile(0.99))
        );
        assert!(decode_histogram("not base64!").is_none());
    }

    #[test]
    fn rate_mode_json_matches_golden_file() {
        let (mut summary, mut config) = fixed();
        config.schedule = Some(crate::plan::Schedule::constant(100.0, config.duration));
        summary.total.pacing = crate::report::fixed_pacing();
        let mut rows = rows();
        for r in &mut rows {
            r.target_per_s = Some(100.0);
            r.late = 20;
        }
        check_golden("json_rate.json", &portable(render(&summary, &config, Protocol::Http1, &rows)));
    }

    #[test]
    fn proxy_json_matches_golden_file() {
        let (mut summary, config) = fixed();
        summary.total.aborted = 2;
        summary.total.content_error("asked for /d/1/3: length 4, expected 3".into());
        let _ = summary.total.ttfb_us.record(300);
        let proxy = ProxyResult {
            origin: Some(OriginCounts { requests: 100, connections: 4 }),
            hit_ratio: Some(0.9),
            rows: (0u32..2)
                .map(|i| ProxyRow {
                    start_s: f64::from(i) * 5.0,
                    origin_requests: Some(50),
                    origin_new_connections: Some(2 * (1 - u64::from(i))),
                    hit_ratio: Some(0.9),
                    first_byte_mean_us: 300.0,
                    first_byte_p99_us: 300,
                })
                .collect(),
        };
        check_golden(
            "json_proxy.json",
            &portable(render_with(
                &summary,
                &config,
                Run { protocol: Protocol::Http1, intervals: &rows(), proxy: Some(&proxy), command: &[] },
                &[],
                Vec::new(),
            )),
        );
    }
}
