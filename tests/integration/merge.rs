//! `strain merge` (issue 14): one test split over three processes with `--segment I/N` and
//! `--start-at`, merged back into the result one process would have written.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::harness::{bin, exclusive, finish, schema, strain, strain_raw, Origin, Run};

/// The whole test's rate and length: 6,000 requests.
const RATE: u64 = 3000;
const SECONDS: u64 = 2;

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs the three segments of `-R 3000 -d 2s -c 9 -t 1` against `url` in parallel, all starting
/// 1.5 s from now; returns their result files.
fn run_segments(url: &str, dir: &Path) -> Vec<PathBuf> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let at = humantime::format_rfc3339_millis(UNIX_EPOCH + now + Duration::from_millis(1500)).to_string();
    let (rate, duration) = (RATE.to_string(), format!("{SECONDS}s"));
    let start = Instant::now();
    let children: Vec<(PathBuf, std::process::Child)> = (0..3)
        .map(|i| {
            let path = dir.join(format!("s{i}.json"));
            let segment = format!("{i}/3");
            let child = Command::new(bin())
                .args(["--segment", &segment, "--start-at", &at, "-c", "9", "-t", "1", "-R", &rate, "-d", &duration])
                .args(["--quiet", "--json", path.to_str().unwrap(), url])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (path, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(path, child)| {
            let run = finish(child, start);
            assert_eq!(run.code, 0, "{}", run.stderr);
            path
        })
        .collect()
}

/// `strain merge -` with `input` on standard input.
fn merge_stdin(input: &[u8], extra: &[&str]) -> Run {
    let mut child = Command::new(bin())
        .args(["merge", "-"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    finish(child, Instant::now())
}

#[test]
fn three_segments_merge_into_the_one_test_the_origin_served() {
    let _alone = exclusive();
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let dir = tempfile::tempdir().unwrap();
    let parts = run_segments(&url, dir.path());
    let served = origin.stop();
    let files: Vec<&str> = parts.iter().map(|p| p.to_str().unwrap()).collect();

    let merged_path = dir.path().join("m.json");
    let mut args = vec!["merge"];
    args.extend(&files);
    let html = dir.path().join("m.html");
    args.extend(["--json", merged_path.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    let run = strain_raw(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    let m = read_json(&merged_path);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"), "{}", &page[..page.len().min(300)]);
    // The merge page is the run page, titled as merged; `strain report` draws it again from the JSON.
    assert!(page.contains("<h1>strain: merged result</h1>") && page.contains("Latency heatmap"));
    let again = dir.path().join("again.html");
    let redraw = strain_raw(&["report", merged_path.to_str().unwrap(), "-o", again.to_str().unwrap()]);
    assert_eq!(redraw.code, 0, "{}", redraw.stderr);
    assert!(std::fs::read_to_string(&again).unwrap().contains("<h1>strain: merged result</h1>"));
    let errors: Vec<String> = schema().iter_errors(&m).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:?}");

    // Counts: exactly what the origin answered, and the schedule's 6,000 within 0.5%.
    let requests = m["requests"].as_u64().unwrap();
    assert_eq!(requests, served.requests);
    assert_eq!(m["sent"].as_u64().unwrap(), requests);
    let planned = RATE * SECONDS;
    assert!(requests.abs_diff(planned) * 200 <= planned, "{requests} of {planned}");
    let segments: Vec<serde_json::Value> = parts.iter().map(|p| read_json(p)).collect();
    assert_eq!(requests, segments.iter().map(|s| s["requests"].as_u64().unwrap()).sum::<u64>());
    assert_eq!(m["connections_opened"], 9);
    assert_eq!(m["config"]["connections"], 9);
    assert_eq!(m["config"]["threads"], 3);
    assert!(m.get("segment").is_none());

    // The rate: the whole test's target, sent within 1% of it over the schedule's 2 s.
    assert_eq!(m["rate"]["target_per_s"], 3000.0);
    let sent_per_s = m["rate"]["sent"].as_f64().unwrap() / SECONDS as f64;
    assert!((sent_per_s - 3000.0).abs() <= 30.0, "sent {sent_per_s}/s");
    let duration_s = m["duration_s"].as_f64().unwrap();
    assert!((SECONDS as f64..SECONDS as f64 + 0.5).contains(&duration_s), "{duration_s}");
    let per_s = m["requests_per_s"].as_f64().unwrap();
    assert!((per_s - requests as f64 / duration_s).abs() < 1e-6);

    // Intervals aligned by wall clock: the 2 s test's forty 50 ms rows (a row a segment missed
    // comes from the others), two seconds of about 3,000, adding up to the total, status by
    // status too.
    let rows = m["intervals"].as_array().unwrap();
    assert!((38..=41).contains(&rows.len()), "{rows:#?}");
    for row in rows {
        let start = row["start_s"].as_f64().unwrap();
        assert_eq!(start, (start / 0.05).round() * 50_000.0 / 1e6, "{row}");
        let target = row["target_per_s"].as_f64().unwrap();
        assert!((target - 3000.0).abs() < 1e-6, "{row}");
    }
    for s in 0..2 {
        let second = rows.iter().filter(|r| r["start_s"].as_f64().unwrap().floor() as u64 == s);
        let n: u64 = second.map(|r| r["requests"].as_u64().unwrap()).sum();
        assert!(n.abs_diff(3000) <= 60, "second {s}: {n}");
    }
    assert_eq!(rows.iter().map(|r| r["requests"].as_u64().unwrap()).sum::<u64>(), requests);
    assert_eq!(rows.iter().map(|r| r["status"]["200"].as_u64().unwrap_or(0)).sum::<u64>(), requests);

    // wrk's text, for the whole test.
    assert!(
        run.stdout.starts_with(&format!("Running 2s test @ {url}\n  3 threads and 9 connections\n")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  Thread Stats   Avg      Stdev     Max   +/- Stdev\n"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("\n  {requests} requests in ")), "{}", run.stdout);
    assert!(run.stdout.contains("\nRequests/sec: "), "{}", run.stdout);

    // The same results concatenated on standard input, pretty and one a line.
    let mut stream = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        let text = if i == 1 { serde_json::to_string(s).unwrap() } else { serde_json::to_string_pretty(s).unwrap() };
        stream.extend(text.as_bytes());
        stream.extend(b"\n\n");
    }
    let piped = merge_stdin(&stream, &["--json", "-"]);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    let p: serde_json::Value = serde_json::from_str(&piped.stdout).unwrap();
    for key in ["requests", "bytes", "latency_us", "uncorrected_latency_us", "rate", "intervals", "latency_histogram"] {
        assert_eq!(p[key], m[key], "{key}");
    }
    // The text went to stderr, since stdout carried the JSON.
    assert!(piped.stderr.starts_with("Running 2s test @ "), "{}", piped.stderr);

    // A threshold is judged on the merged p99: exit 99 exactly when it is 1 ms or more.
    let p99 = m["latency_us"]["percentiles"]["99"].as_u64().unwrap();
    let judged = merge_stdin(&stream, &["--threshold", "p99<1ms", "--json", "-"]);
    assert_eq!(judged.code, if p99 < 1000 { 0 } else { 99 }, "p99 {p99}us: {}", judged.stderr);
    let j: serde_json::Value = serde_json::from_str(&judged.stdout).unwrap();
    assert_eq!(j["thresholds"][0]["passed"], p99 < 1000);
    assert_eq!(j["thresholds"][0]["value"], p99 as f64);
}

#[test]
fn a_segment_given_twice_is_refused_unless_forced() {
    let origin = Origin::start(&["-t", "1"]);
    let seg = strain(&["--segment", "0/2", "-c", "2", "-t", "1", "-R", "200", "-d", "500ms", &origin.url()]);
    assert_eq!(seg.code, 0, "{}", seg.stderr);
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    std::fs::write(&a, seg.json.as_ref().unwrap().to_string()).unwrap();
    let a = a.to_str().unwrap();

    let refused = strain_raw(&["merge", a, a]);
    assert_eq!(refused.code, 2);
    assert_eq!(refused.stdout, "");
    assert_eq!(refused.stderr, format!("strain: {a} and {a} are both segment 0 of 2 (--force merges them anyway)\n"));

    let forced = strain_raw(&["merge", a, a, "--force", "--json", "-"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    let m: serde_json::Value = serde_json::from_str(&forced.stdout).unwrap();
    assert_eq!(m["requests"].as_u64().unwrap(), 2 * seg.num("/requests"));
    assert_eq!(m["latency_us"]["percentiles"], seg.json.as_ref().unwrap()["latency_us"]["percentiles"]);
}
