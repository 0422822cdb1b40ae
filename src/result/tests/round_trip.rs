//! Every kind of document strain writes, built through its real encoder from realistic values,
//! is read back and written again: the same text, and reading that gives an equal value. Where
//! a document carries a measured type whole (HTTP/2's and HTTP/3's counts, a find-max step's
//! figures), the value read back equals the one measured.

use crate::stats::{H2Counts, H3Counts};
use std::fmt::Debug;
use std::time::Duration;

use super::golden;
use crate::compare::doc::CompareDoc;
use crate::config::{Config, Protocol, Segment, Target};
use crate::find_max::step::{Step, Verdict};
use crate::find_max::{bisect::End, Answer, FindMaxConfig, FindMaxResult, FindMaxSpec};
use crate::report::fixed;
use crate::result::find_max::FindMaxDoc;
use crate::result::{ResultError, RunDoc};
use crate::stats::interval::IntervalRow;
use crate::stats::{HandshakeFailure, Summary};
use crate::verdict::Threshold;

/// Reads `text`, writes what it read: the same text, which reads back equal.
fn round_trip<T: PartialEq + Debug>(
    text: &str,
    read: impl Fn(&str) -> Result<T, ResultError>,
    write: impl Fn(&T) -> String,
) -> T {
    let doc = read(text).unwrap();
    let again = write(&doc);
    assert_eq!(again, text);
    assert_eq!(read(&again).unwrap(), doc);
    doc
}

fn run_trip(text: &str) -> RunDoc {
    round_trip(text, RunDoc::parse, RunDoc::to_json)
}

/// The golden closed-loop run's two interval rows, each with its histogram.
fn rows() -> Vec<IntervalRow> {
    RunDoc::parse(&golden("json_closed_loop.json")).unwrap().intervals
}

/// The golden summary and an https target, with HTTP/2's counts of a troubled run.
fn http2_run() -> (Summary, Config) {
    let (mut summary, config) = fixed();
    let config = on(&config, "https://127.0.0.1:8443/");
    let mut h = crate::stats::H2Counts::default();
    h.resets[0x7] = 3;
    h.resets[0x8] = 1;
    h.resets[crate::stats::H2_RESET_SLOTS - 1] = 2;
    (h.goaways, h.retried, h.protocol_errors, h.flow_control_stalls) = (2, 5, 1, 4);
    (h.header_frame_bytes, h.header_bytes) = (12_000, 48_000);
    summary.total.sections.add(Box::new(h));
    (summary, config)
}

/// The golden summary and an https target, with HTTP/3's counts of a troubled run.
fn http3_run() -> (Summary, Config) {
    let (mut summary, config) = fixed();
    let config = on(&config, "https://127.0.0.1:8443/");
    let mut h = crate::stats::H3Counts::default();
    for us in [900, 1_200, 15_001] {
        h.handshake(us);
    }
    h.handshake_failures[HandshakeFailure::NoAnswer] = 1;
    h.handshake_failures[HandshakeFailure::PortUnreachable] = 2;
    (h.packets_sent, h.packets_lost, h.packets_retransmitted) = (10_000, 12, 11);
    // Named codes, and ones written in hex.
    for code in [0x10c, 0x10c, 0x10b, 0x33] {
        h.reset(code);
    }
    for code in [0x0, 0x101, 0x1f] {
        h.closed(code);
    }
    (h.idle_timeouts, h.goaways, h.retried, h.protocol_errors) = (1, 1, 4, 1);
    summary.total.sections.add(Box::new(h));
    (summary, config)
}

/// `config` with its target at `url`.
fn on(config: &Config, url: &str) -> Config {
    let mut s = config.to_settings();
    s.target = Target::parse(url).unwrap();
    s.build().unwrap()
}

fn render(run: &(Summary, Config), protocol: Protocol) -> String {
    crate::report::json::render(&run.0, &run.1, protocol, &rows())
}

#[test]
fn runs_closed_loop_and_rate_mode_round_trip() {
    // The goldens are what the real encoder writes for these summaries (report::json's tests).
    for name in ["json_closed_loop.json", "json_rate.json"] {
        run_trip(&golden(name));
    }
}

#[test]
fn a_proxy_run_round_trips() {
    let doc = run_trip(&golden("json_proxy.json"));
    assert!(doc.proxy.is_some_and(|p| p.intervals.len() == 2 && p.origin_requests == Some(100)));
}

#[test]
fn runs_with_http2_and_http3_round_trip_to_the_counts_measured() {
    let (h2, h3) = (http2_run(), http3_run());
    let doc = run_trip(&render(&h2, Protocol::Http2 { streams: 10 }));
    let (spoken, counts) = doc.sections.get::<H2Counts>().unwrap();
    let want = h2.0.total.sections.get::<H2Counts>().unwrap();
    assert_eq!((spoken.protocol.as_str(), spoken.streams_per_connection, counts), ("h2", 10, want));
    let doc = run_trip(&render(&h3, Protocol::Http3 { streams: 4 }));
    // The document writes the handshakes' mean (5,700.33 µs here); the sum comes back from it.
    let (spoken, counts) = doc.sections.get::<H3Counts>().unwrap();
    let want = h3.0.total.sections.get::<H3Counts>().unwrap();
    assert_eq!((spoken.protocol.as_str(), spoken.streams_per_connection, counts), ("h3", 4, want));
}

#[test]
fn a_grpc_run_round_trips_to_the_counts_measured() {
    use crate::grpc::counts::{GrpcCode, GrpcCounts};
    use crate::proto::grpc::counts::GrpcSection;
    crate::proto::install();
    let (mut summary, config) = http2_run();
    let mut g = GrpcCounts::default();
    (g.codes[GrpcCode::Ok], g.codes[GrpcCode::NotFound], g.codes[GrpcCode::DeadlineExceeded]) = (90, 7, 3);
    (g.http_errors, g.missing_status, g.bad_messages) = (2, 1, 4);
    (g.messages_sent, g.messages_received, g.message_bytes_sent, g.message_bytes_received) = (103, 300, 1_030, 9_000);
    let mut first = summary.total.ttfb_us.clone();
    for us in [100, 250, 4_000] {
        first.saturating_record(us);
    }
    summary.total.sections.add(Box::new(GrpcSection::new(g, Some(&first))));
    let doc = run_trip(&render(&(summary.clone(), config), Protocol::Http2 { streams: 10 }));
    let (_, read) = doc.sections.get::<GrpcSection>().unwrap();
    assert_eq!(read.counts, g);
    // The histogram's resolution at 4 ms: a microsecond.
    assert!(read.first_message_us.as_ref().is_some_and(|l| (4_000..=4_001).contains(&l.spread.max)));
    // Its failures are the run's status errors.
    assert_eq!(doc.errors.status, 7 + 3 + 2 + 1 + 4);
}

#[test]
fn a_merged_run_round_trips() {
    let segments: Vec<(String, serde_json::Value)> = (0..2)
        .map(|index| {
            let mut run = http3_run();
            let mut s = run.1.to_settings();
            s.segment = Segment { index, count: 2 };
            run.1 = s.build().unwrap();
            (format!("s{index}.json"), serde_json::from_str(&render(&run, Protocol::Http3 { streams: 4 })).unwrap())
        })
        .collect();
    let m = crate::merge::merge(segments, false).unwrap();
    let doc = run_trip(&crate::report::json::render(&m.summary, &m.config, m.protocol, &m.series));
    let merged = m.summary.total.sections.get::<H3Counts>().unwrap();
    assert_eq!(doc.sections.get::<H3Counts>().unwrap().1, merged);
    assert_eq!(merged.handshakes.count, 6);
}

#[test]
fn a_comparison_round_trips() {
    let (a, b) =
        (RunDoc::parse(&golden("json_closed_loop.json")).unwrap(), RunDoc::parse(&golden("json_rate.json")).unwrap());
    let side = |d: &RunDoc| crate::compare::Side::of([d]);
    let c = crate::compare::compare(&side(&a), &side(&b), crate::compare::Rule::fixed(5.0));
    let text = CompareDoc::new(&c, &[("base".into(), a), ("new".into(), b)]).to_json();
    let doc = round_trip(&text, CompareDoc::parse, CompareDoc::to_json);
    assert_eq!(doc.comparison, c);
}

/// A run that measured `summary` over the golden rows, on one thread.
fn measured(summary: Summary) -> crate::run::RunResult {
    crate::run::RunResult {
        protocol: Protocol::Http1,
        summary,
        series: rows(),
        addr: "127.0.0.1:8080".parse().unwrap(),
        proxy: None,
        origin_served: None,
        failure: None,
        outcomes: Vec::new(),
        thread_cpu: vec![Duration::from_millis(300)],
        thread_waited: vec![Duration::ZERO],
        shared_cpus: None,
        replay: None,
    }
}

/// A step of the golden run at `rate`, paced (late sends) or not.
fn step(rate: f64, paced: bool, slo: &[Threshold], baseline_us: Option<f64>) -> Step {
    let (mut summary, _) = fixed();
    if paced {
        summary.total.pacing = crate::report::fixed_pacing();
    }
    let result = measured(summary);
    let watched = vec![crate::find_max::watch::Watched { pid: 4242, cpu_pct: Some(85.5), rss_bytes: None }];
    Step::judge(rate, result, slo, 100, baseline_us, watched)
}

#[test]
fn a_find_max_search_round_trips_to_the_steps_measured() {
    let slo: Vec<Threshold> = ["p99<100ms", "errors<1%"].iter().map(|t| Threshold::parse(t).unwrap()).collect();
    let steps = vec![step(100.0, false, &slo, None), step(200.0, true, &slo, Some(500.0))];
    let spec = FindMaxSpec {
        slo,
        start: Some(100.0),
        max: None,
        precision: 0.1,
        warmup: Duration::from_secs(1),
        step: Duration::from_secs(5),
        probe: Duration::from_secs(2),
        watch: vec![4242],
    };
    let config = FindMaxConfig::new(fixed().1, crate::run::Workload::Url, spec).unwrap();
    let answer = Answer {
        end: End::Converged,
        max_rate: Some(100.0),
        first_fail: Some(200.0),
        failed_terms: vec!["p99<100ms".into()],
        knee: Some((150.0, 2_500.0)),
        limit: Some(Verdict::Connections { suggest: 400 }),
    };
    let search = FindMaxResult { probe_per_s: Some(410.5), steps, answer };
    let text = crate::report::find_max::json(&config, &search, &["strain".into(), "find-max".into()]);
    let doc = round_trip(&text, FindMaxDoc::parse, FindMaxDoc::to_json);
    let figures: Vec<_> = search.steps.iter().map(|s| s.figures).collect();
    assert_eq!(doc.steps.iter().map(|s| s.figures).collect::<Vec<_>>(), figures);
}

#[test]
fn a_replay_round_trips_to_what_was_replayed() {
    let (summary, config) = fixed();
    let note = crate::replay::ReplayNote {
        files: vec![crate::replay::reader::FileDoc { path: "access.log.gz".into(), format: "combined".into() }],
        requests: 12_480,
        span_us: 600_000_000,
        speed: 2.5,
        loops: Some(2),
    };
    let mut s = config.to_settings();
    s.replay = Some(note.clone());
    let config = s.build().unwrap();
    let counts = crate::replay::reader::Counts {
        records: 13_000,
        bad: 3,
        outside: 0,
        skipped_method: 500,
        skipped_body: 17,
        late_in_file: 4,
        no_request: 5,
        not_http: 6,
        truncated: 1,
        unreadable: 2,
        generated_body: 9,
    };
    let mut result = measured(summary);
    let bad_lines = vec!["a.log:7: does not match the combined layout at \"x\"".to_string()];
    result.replay = Some(crate::replay::reader::Fed {
        queued: 24_960,
        loops: 2,
        counts,
        paths: vec!["/a".into()],
        bad_lines: bad_lines.clone(),
    });
    let text = crate::report::json::document(&result, &config, &[]).to_json();
    let doc = run_trip(&text).replay.unwrap();
    assert_eq!((doc.note, doc.queued, doc.passes, doc.counts, doc.bad_lines), (note, 24_960, 2, counts, bad_lines));
    assert!(RunDoc::parse(&text).unwrap().rate.is_some());
}
