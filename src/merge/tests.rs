//! Merging results written by the real JSON renderer: exactness of the added histograms, and
//! the refusals.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use super::*;
use crate::config::Segment;
use crate::stats::interval::Snapshot;
use crate::stats::{ErrorKind, Recorder};

const URL: &str = "http://127.0.0.1:8080/";

/// Named result documents, as `merge` takes them.
type Docs = Vec<(String, Value)>;

/// Latencies spread over four orders of magnitude, deterministic.
fn latencies() -> Vec<u64> {
    let mut rng = crate::rng::Rng::new(7);
    (0..6000).map(|_| 50 + rng.next_u64() % 200_000 / (1 + rng.next_u64() % 100)).collect()
}

/// One segment's result JSON as `strain --segment index/count -R 3000 -c 9 -d 2s` writes it,
/// having recorded `values`: two one-second intervals (the first half of the values, then the
/// rest), each with its histogram.
fn segment(url: &str, index: u32, count: u32, values: &[u64]) -> Value {
    let mut rec = Recorder::new();
    for &v in values {
        rec.paced_response(200, v, v / 2 + 1);
        rec.pacing.sent(0, crate::stats::Waited::Generator(0));
    }
    rec.sent = values.len() as u64;
    rec.bytes = 100 * values.len() as u64;
    rec.connections = 3;
    let half = values.len() / 2;
    let snaps: Vec<Snapshot> = [&values[..half], &values[half..]]
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let mut h = Recorder::new().latency_us;
            for &v in *part {
                h.record(v).unwrap();
            }
            Snapshot {
                uncorrected_us: None,
                index: i as u32,
                start_us: i as u64 * 1_000_000,
                end_us: (i as u64 + 1) * 1_000_000,
                latency_us: h,
                ttfb_us: Recorder::new().ttfb_us,
                bytes: 100 * part.len() as u64,
                requests: part.len() as u64,
                errors: 0,
                errors_by_kind: [0; ErrorKind::COUNT],
                status_errors: 0,
                late: 0,
                sent: 0,
                goaways: 0,
                retried: 0,
                open: 3,
                connects: if i == 0 { 3 } else { 0 },
                status: vec![(200, part.len() as u64)],
                outcomes: Vec::new(),
            }
        })
        .collect();
    let rows: Vec<IntervalRow> = snaps
        .chunks(1)
        .map(|s| {
            let (mut row, h) = IntervalRow::merge(&mut s.to_vec(), Some(3000.0 / f64::from(count)));
            row.latency_histogram = Some(crate::report::json::encode_histogram(&h));
            row
        })
        .collect();
    let started = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let summary = Summary::new(vec![rec], Duration::from_millis(2_010), started);
    let mut config = Settings::new(Target::parse(url).unwrap());
    config.connections = 9;
    config.threads = 1;
    config.duration = Duration::from_secs(2);
    config.segment = Segment { index, count };
    config.schedule = Some(Schedule::constant(3000.0, config.duration));
    let config = config.build().unwrap();
    serde_json::from_str(&crate::report::json::render(&summary, &config, crate::config::Protocol::Http1, &rows))
        .unwrap()
}

/// `values` dealt round-robin over `count` segments, as the schedule deals requests.
fn split(values: &[u64], count: u32) -> Vec<(String, Value)> {
    (0..count)
        .map(|i| {
            let mine: Vec<u64> = values.iter().skip(i as usize).step_by(count as usize).copied().collect();
            (format!("s{i}.json"), segment(URL, i, count, &mine))
        })
        .collect()
}

fn message(docs: Vec<(String, Value)>) -> String {
    merge(docs, false).unwrap_err().to_string()
}

#[test]
fn split_histograms_merge_to_the_whole_one_exactly() {
    let values = latencies();
    let whole = merge(vec![("all.json".into(), segment(URL, 0, 1, &values))], false).unwrap();
    for n in [2, 3, 5] {
        let m = merge(split(&values, n), false).unwrap();
        let (a, b) = (&m.summary.total, &whole.summary.total);
        assert_eq!((a.requests, a.sent, a.bytes), (6000, 6000, 600_000), "{n} segments");
        assert_eq!(a.latency_us, b.latency_us, "{n} segments");
        assert_eq!(a.uncorrected_us, b.uncorrected_us, "{n} segments");
        for p in [50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(
                m.summary.latency_percentile_us(p),
                whole.summary.latency_percentile_us(p),
                "p{p}, {n} segments"
            );
        }
        assert_eq!(m.config.threads, n as usize);
        assert_eq!(m.config.connections, 9);
        assert_eq!(m.config.segment, Segment::default());
        // Each segment's rows land in the same two wall-clock intervals.
        assert_eq!(m.series.len(), 2);
        assert_eq!(m.series.iter().map(|r| r.requests).collect::<Vec<_>>(), vec![3000, 3000]);
        for r in &m.series {
            assert_eq!(r.target_per_s, Some(3000.0));
            // The segments' status counts are added too.
            assert_eq!(r.status, [("200".to_string(), 3000)].into_iter().collect());
        }
    }
}

#[test]
fn merged_result_renders_the_whole_tests_rate_and_counts() {
    let m = merge(split(&latencies(), 3), false).unwrap();
    let json: Value =
        serde_json::from_str(&crate::report::json::render(&m.summary, &m.config, m.protocol, &m.series)).unwrap();
    assert_eq!(json["rate"]["target_per_s"], 3000.0);
    assert_eq!(json["requests"], 6000);
    assert_eq!(json["status"]["200"], 6000);
    assert_eq!(json["config"]["threads"], 3);
    assert!(json.get("segment").is_none());
    let header = crate::report::text::header(&m.config);
    assert_eq!(header, format!("Running 2s test @ {URL}\n  3 threads and 9 connections\n"));
}

#[test]
fn a_result_merged_with_itself_doubles_counts_and_keeps_percentiles() {
    let one = segment(URL, 0, 1, &latencies());
    let single = merge(vec![("a.json".into(), one.clone())], false).unwrap();
    let twice = vec![("a.json".to_string(), one.clone()), ("a.json".to_string(), one)];
    assert_eq!(message(twice.clone()), "a.json and a.json are both segment 0 of 1 (--force merges them anyway)");
    let m = merge(twice, true).unwrap();
    assert_eq!(m.summary.total.requests, 2 * single.summary.total.requests);
    assert_eq!(m.summary.total.pacing.sent, 12_000);
    for p in [50.0, 99.0, 99.99] {
        assert_eq!(m.summary.latency_percentile_us(p), single.summary.latency_percentile_us(p), "p{p}");
    }
    assert_eq!(m.series.iter().map(|r| r.requests).sum::<u64>(), 12_000);
}

#[test]
fn results_of_different_tests_are_refused_naming_the_files() {
    let values = latencies();
    let rows: Vec<(&str, Docs, &str)> = vec![
        (
            // A different target.
            "url",
            vec![("a.json".into(), segment(URL, 0, 2, &values)), ("b.json".into(), segment("http://127.0.0.1:9/", 1, 2, &values))],
            "a.json and b.json are different tests: URL \"http://127.0.0.1:8080/\" vs \"http://127.0.0.1:9/\" (--force merges them anyway)",
        ),
        (
            // Split three ways and two ways.
            "count",
            vec![("a.json".into(), segment(URL, 0, 3, &values)), ("b.json".into(), segment(URL, 1, 2, &values))],
            "a.json and b.json are different tests: segment count 3 vs 2 (--force merges them anyway)",
        ),
        (
            // Segment 1 of 3 never came.
            "missing",
            vec![("a.json".into(), segment(URL, 0, 3, &values)), ("c.json".into(), segment(URL, 2, 3, &values))],
            "segments 1 of 3 are missing (given: a.json, c.json; --force merges what is there)",
        ),
        (
            // Segment 0 twice.
            "duplicate",
            vec![("a.json".into(), segment(URL, 0, 2, &values)), ("b.json".into(), segment(URL, 0, 2, &values))],
            "a.json and b.json are both segment 0 of 2 (--force merges them anyway)",
        ),
    ];
    for (what, docs, want) in rows {
        assert_eq!(message(docs.clone()), want, "{what}");
        assert!(merge(docs, true).is_ok(), "{what} with --force");
    }
}

#[test]
fn concatenated_results_split_text_between_is_skipped_and_broken_json_named_by_line() {
    let a = segment(URL, 0, 2, &[100, 200]);
    let b = segment(URL, 1, 2, &[300]);
    let text = format!("{}\n\n{}\n", serde_json::to_string_pretty(&a).unwrap(), serde_json::to_string(&b).unwrap());
    let (docs, skipped) = parse_stream("stdin", &text).unwrap();
    assert_eq!(skipped, 0);
    assert_eq!(docs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["stdin (result 1)", "stdin (result 2)"]);
    assert_eq!(merge(docs, false).unwrap().summary.total.requests, 3);
    // kubectl logs interleaves each pod's report (stderr) with its JSON (stdout).
    let logs = format!(
        "Running 2s test @ {URL}\n  1 threads and 4 connections\n{}\nRequests/sec:   1.00\n{}\n",
        serde_json::to_string_pretty(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let (docs, skipped) = parse_stream("stdin", &logs).unwrap();
    assert_eq!((docs.len(), skipped), (2, 3));
    let lines = serde_json::to_string_pretty(&a).unwrap().lines().count();
    let broken = format!("{}\n{{\"requests\": 3,\n  oops\n", serde_json::to_string_pretty(&a).unwrap());
    let err = parse_stream("stdin", &broken).unwrap_err().to_string();
    assert!(err.starts_with(&format!("stdin: not JSON at line {}", lines + 2)), "{err}");
}

#[test]
fn malformed_results_are_errors_not_panics() {
    let good = segment(URL, 0, 1, &[100]);
    let cases: Vec<(Value, &str)> = vec![
        (serde_json::json!({"hello": 1}), "x.json is not a strain result (--json)"),
        (
            {
                let mut d = good.clone();
                d["latency_histogram"] = "not base64!".into();
                d
            },
            "x.json: missing or malformed field /latency_histogram",
        ),
        (
            {
                let mut d = good.clone();
                d["duration_s"] = (-1.0).into();
                d
            },
            "x.json: missing or malformed field /duration_s",
        ),
        (
            {
                let mut d = good.clone();
                d["intervals"][0].as_object_mut().unwrap().remove("latency_histogram");
                d
            },
            "x.json has no interval histograms: an older strain kept them only in a segment's result (run it with --segment I/N)",
        ),
        (
            {
                let mut d = good.clone();
                d["status"] = serde_json::json!({"1000": 1});
                d
            },
            "x.json: missing or malformed field /status/1000",
        ),
        (
            {
                // Beyond any real run: refused, so that sums cannot overflow.
                let mut d = good.clone();
                d["requests"] = (1u64 << 41).into();
                d
            },
            "x.json: missing or malformed field /requests",
        ),
    ];
    for (doc, want) in cases {
        assert_eq!(merge(vec![("x.json".into(), doc)], true).unwrap_err().to_string(), want);
    }
}

#[test]
fn rows_align_by_wall_clock_whatever_each_segment_cut() {
    let mut docs = split(&latencies(), 3);
    // Segment 1 started 4 ms late and cut its rows 0.7 ms after the others: the same intervals.
    docs[1].1["started"] = "2027-01-15T08:00:00.004Z".into();
    docs[1].1["intervals"][1]["start_s"] = 1.0007.into();
    // Segment 2 started a whole interval late: its rows are the next ones.
    docs[2].1["started"] = "2027-01-15T08:00:01.000Z".into();
    let m = merge(docs, false).unwrap();
    let rows: Vec<(f64, u64)> = m.series.iter().map(|r| (r.start_s, r.requests)).collect();
    assert_eq!(rows, vec![(0.0, 2000), (1.0, 3000), (2.0, 1000)]);
    assert_eq!(
        m.series.iter().map(|r| r.target_per_s).collect::<Vec<_>>(),
        vec![Some(2000.0), Some(3000.0), Some(1000.0)]
    );
    // The merged run spans from the first start to the last end.
    assert_eq!(m.summary.elapsed, Duration::from_millis(3_010));
}

/// Every leaf's JSON pointer in `v`.
fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| leaves(v, format!("{at}/{k}"), out)),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, v)| leaves(v, format!("{at}/{i}"), out)),
        _ => out.push(at),
    }
}

#[test]
fn no_value_in_any_field_makes_merging_or_reporting_panic() {
    let docs = split(&latencies()[..100], 2);
    let mut pointers = Vec::new();
    leaves(&docs[0].1, String::new(), &mut pointers);
    let bad: [Value; 6] =
        [Value::Null, 1e300.into(), u64::MAX.into(), (-1e300).into(), "x".into(), "9999-12-31T23:59:59Z".into()];
    // The second row has the first one's fields.
    for ptr in pointers.iter().filter(|p| !p.starts_with("/intervals/1")) {
        for b in &bad {
            let mut mutated = docs.clone();
            *mutated[0].1.pointer_mut(ptr).unwrap() = b.clone();
            if let Ok(m) = merge(mutated, true) {
                let _ = crate::report::json::render(&m.summary, &m.config, m.protocol, &m.series);
                let _ = crate::report::text::body(&m.summary, &m.config, m.protocol, Default::default());
            }
        }
    }
}

/// `doc` as an HTTP/3 run's: an https URL and a section with every kind of count, as the real
/// encoder writes it.
fn with_http3(mut doc: Value) -> Value {
    doc["config"]["url"] = URL.replacen("http://", "https://", 1).into();
    let mut h3 = crate::stats::H3Counts::default();
    h3.handshake(900);
    h3.handshake(1_500);
    h3.handshake_failures[crate::stats::HandshakeFailure::PortUnreachable] = 2;
    h3.packets_sent = 4_000;
    h3.reset(0x10c);
    h3.closed(0x1f);
    h3.retried = 3;
    let mut section = serde_json::json!({ "protocol": "h3", "streams_per_connection": 4 });
    for (k, v) in serde_json::to_value(h3).unwrap().as_object().unwrap() {
        section[k] = v.clone();
    }
    doc["http3"] = section;
    doc
}

#[test]
fn protocol_counts_add_and_out_of_range_ones_are_refused() {
    let docs: Docs = split(&latencies()[..100], 2).into_iter().map(|(n, d)| (n, with_http3(d))).collect();
    let m = merge(docs.clone(), false).unwrap();
    let h3 = m.summary.total.sections.get::<crate::stats::H3Counts>().unwrap();
    assert_eq!((h3.handshakes.count, h3.handshakes.us_sum, h3.handshakes.us_max), (4, 4_800, 1_500));
    assert_eq!(h3.handshake_failures.named(), [("port_unreachable", 4)].into_iter().collect());
    assert_eq!((h3.packets_sent, h3.retried, h3.resets[&0x10c], h3.closes[&0x1f]), (8_000, 6, 2, 2));
    for field in ["/http3/packets_sent", "/http3/resets/H3_REQUEST_CANCELLED", "/http3/handshake_failures/other"] {
        let mut bad = docs.clone();
        let (section, key) = field.rsplit_once('/').unwrap();
        bad[0].1.pointer_mut(section).unwrap()[key] = (1u64 << 41).into();
        assert_eq!(message(bad), format!("s0.json: missing or malformed field {field}"));
    }
}

#[test]
fn a_section_no_type_reads_is_refused_not_kept_as_the_first_segments() {
    // A newer strain's protocol, or a unit a library caller did not install: it cannot be
    // added up, so a merge that kept one segment's counts would be wrong without a word.
    let docs: Docs = split(&latencies()[..100], 2)
        .into_iter()
        .map(|(n, mut d)| {
            d["pigeon"] = serde_json::json!({ "protocol": "rfc1149", "streams_per_connection": 1, "birds": 3 });
            (n, d)
        })
        .collect();
    assert_eq!(message(docs), "s0.json: its pigeon counts are of a kind this strain cannot add up");
}

#[test]
fn no_value_in_a_protocol_section_makes_merging_or_reporting_panic() {
    let docs: Docs = split(&latencies()[..100], 2).into_iter().map(|(n, d)| (n, with_http3(d))).collect();
    let mut pointers = Vec::new();
    leaves(&docs[0].1["http3"], "/http3".into(), &mut pointers);
    let bad: [Value; 5] = [Value::Null, 1e300.into(), u64::MAX.into(), (-1e300).into(), "x".into()];
    for ptr in &pointers {
        for b in &bad {
            let mut mutated = docs.clone();
            *mutated[0].1.pointer_mut(ptr).unwrap() = b.clone();
            if let Ok(m) = merge(mutated, true) {
                let _ = crate::report::json::render(&m.summary, &m.config, m.protocol, &m.series);
                let _ = crate::report::text::body(&m.summary, &m.config, m.protocol, Default::default());
            }
        }
    }
}

#[test]
fn segments_whose_settings_make_no_test_are_refused_in_one_line() {
    // An HTTP/3 section on an http:// URL: no run writes that, and the merged test is checked
    // as every test is.
    let mut docs: Docs = split(&latencies()[..100], 2).into_iter().map(|(n, d)| (n, with_http3(d))).collect();
    for (_, d) in &mut docs {
        d["config"]["url"] = URL.into();
    }
    assert_eq!(
        message(docs),
        "s0.json: its settings make no test: HTTP/3 runs over QUIC, which is always encrypted: give an https:// URL"
    );
}
