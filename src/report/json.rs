//! The JSON result: everything the text shows and more, for machines.
//!
//! Builds the [`RunDoc`] a run's result is written as (its shape is the `result` module's,
//! pinned by `schema/result.schema.json`; a test validates real output against it).

use crate::config::{Config, Protocol};
use crate::result::{ConfigDoc, Errors, Latency, ProxyDoc, Rate, RunDoc, SegmentDoc, Spread, TargetDoc, ThresholdDoc};
use crate::run::proxy::ProxyResult;
use crate::run::RunResult;
use crate::stats::interval::IntervalRow;
use crate::stats::section::Written;
use crate::stats::{ConnectCause, Distribution, ErrorKind, Summary};
use crate::verdict::Outcome;

pub use crate::result::SCHEMA_VERSION;
pub use crate::stats::codec::{decode_histogram, encode_histogram};

/// Latency percentiles written to JSON, with their key names.
const PERCENTILES: [(&str, f64); 7] =
    [("50", 50.0), ("75", 75.0), ("90", 90.0), ("99", 99.0), ("99.9", 99.9), ("99.99", 99.99), ("100", 100.0)];

/// A latency histogram as JSON (spread and percentiles).
pub fn latency(h: &hdrhistogram::Histogram<u64>) -> Latency {
    let at = |p: f64| if h.is_empty() { 0 } else { h.value_at_percentile(p) };
    Latency {
        spread: spread(&Distribution::of(h)),
        percentiles: PERCENTILES.iter().map(|&(k, p)| (k.to_string(), at(p))).collect(),
    }
}

fn spread(d: &Distribution) -> Spread {
    Spread { min: d.min, mean: d.mean, stdev: d.stdev, max: d.max, within_stdev_pct: d.within_stdev_pct }
}

/// A run's result as its document, with its thresholds' outcomes and the command line that
/// asked for it.
pub fn document(result: &RunResult, config: &Config, command: &[String]) -> RunDoc {
    let cpu: Vec<f64> = result.thread_cpu.iter().map(|d| d.as_secs_f64()).collect();
    let run = Run { protocol: result.protocol, intervals: &result.series, proxy: result.proxy.as_ref(), command };
    let mut doc = document_with(&result.summary, config, run, &result.outcomes, cpu);
    doc.shared_cpus = result.shared_cpus.clone();
    doc.replay = config.replay.as_ref().zip(result.replay.as_ref()).map(|(note, fed)| {
        let lag = &result.summary.total.lag_us;
        let at = |q: f64| if lag.is_empty() { 0 } else { lag.value_at_quantile(q) };
        crate::result::ReplayDoc {
            note: note.clone(),
            recorded_rate_per_s: note.recorded_rate(),
            queued: fed.queued,
            passes: fed.loops,
            lag_us: crate::result::LagDoc {
                p50: at(0.5),
                p99: at(0.99),
                max: if lag.is_empty() { 0 } else { lag.max() },
            },
            counts: fed.counts,
            paths: top_paths(&result.summary, fed, TOP_PATHS_JSON),
            bad_lines: fed.bad_lines.clone(),
        }
    });
    doc
}

/// Paths a replay's JSON lists.
pub const TOP_PATHS_JSON: usize = 50;

/// A replay's `n` paths with the most requests (failures count too), most first.
pub fn top_paths(summary: &Summary, fed: &crate::replay::reader::Fed, n: usize) -> Vec<crate::result::PathDoc> {
    let mut paths: Vec<crate::result::PathDoc> = summary
        .total
        .targets
        .iter()
        .zip(&fed.paths)
        .filter(|(c, _)| c.requests + c.errors > 0)
        .map(|(c, path)| crate::result::PathDoc {
            path: path.clone(),
            requests: c.requests,
            latency_mean_us: if c.requests > 0 { c.latency_sum_us as f64 / c.requests as f64 } else { 0.0 },
            latency_max_us: c.latency_max_us,
            errors: c.errors,
        })
        .collect();
    paths.sort_by(|a, b| (b.requests + b.errors).cmp(&(a.requests + a.errors)).then_with(|| a.path.cmp(&b.path)));
    paths.truncate(n);
    paths
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
    document_with(summary, config, Run { protocol, intervals, proxy: None, command: &[] }, &[], Vec::new()).to_json()
}

/// The document of a summary and what the run adds to it.
fn document_with(
    summary: &Summary,
    config: &Config,
    run: Run,
    thresholds: &[Outcome],
    thread_cpu_s: Vec<f64>,
) -> RunDoc {
    let Run { protocol, intervals, proxy, command } = run;
    let t = &summary.total;
    let paced = config.paced();
    RunDoc {
        schema_version: SCHEMA_VERSION,
        strain_version: env!("CARGO_PKG_VERSION").to_string(),
        config: config_doc(config),
        started: humantime::format_rfc3339_millis(summary.started).to_string(),
        duration_s: summary.elapsed.as_secs_f64(),
        sent: t.sent,
        requests: t.requests,
        bytes: t.bytes,
        requests_per_s: summary.requests_per_s(),
        bytes_per_s: summary.bytes_per_s(),
        connections_opened: t.connections,
        errors: errors(summary),
        status: summary.status_counts().map(|(code, n)| (code.to_string(), n)).collect(),
        latency_us: latency(&t.latency_us),
        uncorrected_latency_us: latency(if paced { &t.uncorrected_us } else { &t.latency_us }),
        thread_requests_per_s: spread(&summary.thread_rate()),
        rate: rate(summary, config),
        intervals: intervals.to_vec(),
        proxy: proxy.map(|p| proxy_doc(summary, p)),
        thresholds: thresholds
            .iter()
            .map(|o| ThresholdDoc { expr: o.threshold.text.clone(), passed: o.passed, value: o.measured })
            .collect(),
        latency_histogram: encode_histogram(&t.latency_us),
        uncorrected_latency_histogram: paced.then(|| encode_histogram(&t.uncorrected_us)),
        stage_ends_s: config.schedule.as_ref().map(|s| s.stage_ends_s()),
        command: command.to_vec(),
        host_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        thread_cpu_s,
        segment: config
            .segment
            .is_split()
            .then_some(SegmentDoc { index: config.segment.index, count: config.segment.count }),
        start_at: config.start_at.map(|t| humantime::format_rfc3339_millis(t).to_string()),
        protocol: protocol.name(config.target.scheme).to_string(),
        sections: Written::of(&summary.total.sections, |_| crate::report::text::spoken(protocol, config)),
        targets: targets(summary, config),
        shared_cpus: None,
        replay: None,
    }
}

fn targets(summary: &Summary, config: &Config) -> Vec<TargetDoc> {
    let counts = &summary.total.targets;
    config
        .targets
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let c = counts.get(k).copied().unwrap_or_default();
            TargetDoc {
                method: t.method.clone(),
                url: t.target.url.clone(),
                requests: c.requests,
                latency_mean_us: if c.requests > 0 { c.latency_sum_us as f64 / c.requests as f64 } else { 0.0 },
                latency_max_us: c.latency_max_us,
                errors: c.errors,
            }
        })
        .collect()
}

fn config_doc(config: &Config) -> ConfigDoc {
    ConfigDoc {
        url: config.target.url.clone(),
        connections: config.connections,
        threads: config.threads,
        duration_s: config.time_bound.then_some(config.duration.as_secs_f64()),
        requests: config.requests,
        timeout_s: config.timeout.as_secs_f64(),
        headers: config.headers.iter().map(|h| format!("{}: {}", h.name, h.value)).collect(),
        insecure: config.insecure,
        method: config.method.clone(),
        body_bytes: config.body.as_ref().map(|b| b.len() as u64),
        warmup_s: config.warmup.as_secs_f64(),
    }
}

fn errors(summary: &Summary) -> Errors {
    let causes = &summary.total.connect_causes;
    Errors {
        connect: summary.errors(ErrorKind::Connect),
        read: summary.errors(ErrorKind::Read),
        write: summary.errors(ErrorKind::Write),
        timeout: summary.errors(ErrorKind::Timeout),
        parse: summary.errors(ErrorKind::Parse),
        status: summary.status_errors(),
        content: summary.errors(ErrorKind::Content),
        reset: summary.errors(ErrorKind::Reset),
        connect_causes: ConnectCause::ALL.iter().map(|c| (c.name().to_string(), causes[*c as usize])).collect(),
    }
}

fn rate(summary: &Summary, config: &Config) -> Option<Rate> {
    let target = match (&config.schedule, &config.replay) {
        (Some(s), _) => s.total_requests() / s.duration().as_secs_f64().max(1e-9),
        (None, Some(r)) => r.recorded_rate() * r.speed,
        (None, None) => return None,
    };
    Some({
        let p = &summary.total.pacing;
        Rate {
            target_per_s: target * config.segment_fraction(),
            sent: p.sent,
            late: p.late,
            late_no_connection: p.late_no_connection,
            late_connecting: p.late_connecting,
            late_mean_us: if p.late > 0 { p.late_sum_us as f64 / p.late as f64 } else { 0.0 },
            late_max_us: p.late_max_us,
            late_own_mean_us: p.late_generator_mean_us(),
            unsent: p.unsent,
            dropped: (config.paces() == crate::config::Paces::Streams).then_some(summary.total.arrivals_dropped),
        }
    })
}

fn proxy_doc(summary: &Summary, p: &ProxyResult) -> ProxyDoc {
    let t = &summary.total;
    ProxyDoc {
        hit_ratio: p.hit_ratio,
        origin_requests: p.origin.map(|o| o.requests),
        origin_connections: p.origin.map(|o| o.connections),
        aborted: t.aborted,
        arrivals_dropped: t.arrivals_dropped,
        content_failures: t.content_failures.clone(),
        first_byte_us: latency(&t.ttfb_us),
        intervals: p.rows.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{check_golden, fixed, paced};
    use crate::run::proxy::{OriginCounts, ProxyRow};

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
                errors_by_kind: [("read".to_string(), 2), ("status".to_string(), 1)].into_iter().collect(),
                open_connections: 100,
                new_connections: 100 * (1 - u64::from(i)),
                late: 0,
                sent: 0,
                goaways: 0,
                retried: 0,
                bytes_per_s: 129_000.0,
                ttfb_mean_us: 0.0,
                ttfb_p99_us: 0,
                status: [("200".to_string(), 499 + u64::from(i)), ("404".to_string(), 1)].into_iter().collect(),
                outcomes: Default::default(),
                latency_histogram: Some(encode_histogram(&{
                    let mut h = crate::stats::latency_histogram();
                    for v in [120, 900, 2_500, 1_500_000] {
                        let _ = h.record(v);
                    }
                    h
                })),
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
        let (mut summary, config) = fixed();
        let config = paced(&config);
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
            &portable(
                document_with(
                    &summary,
                    &config,
                    Run { protocol: Protocol::Http1, intervals: &rows(), proxy: Some(&proxy), command: &[] },
                    &[],
                    Vec::new(),
                )
                .to_json(),
            ),
        );
    }
}
