//! Issue 22: live metrics, checked by a real Prometheus (Debian's `prometheus`, installed by the
//! test command) scraping strain every second, or receiving its remote writes: the totals it
//! stores equal the run's JSON exactly, the rate over the steady part is the target's, the
//! histogram's p99 lies in the bucket of strain's own, every query of the shipped dashboard
//! returns data, and bad input fails cleanly.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::harness::{args, finish, free_port, signal, spawn, strain, strain_raw, wait_listening, Origin};

/// A Prometheus on loopback with its own data directory.
struct Prometheus {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl Prometheus {
    /// Scrapes `targets` (host:port) every second, and takes remote writes.
    fn start(dir: &Path, targets: &[String]) -> Prometheus {
        let port = free_port();
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: strain\n    \
             scrape_interval: 1s\n    static_configs:\n      - targets: [{}]\n",
            list.join(", ")
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let mut p = Prometheus { child: None, port, dir: dir.to_path_buf() };
        p.spawn();
        p
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", self.dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", self.dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--web.enable-remote-write-receiver")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus is not installed: run scripts/test.sh (it installs it)");
        self.child = Some(child);
        let start = Instant::now();
        while get(self.port, "/-/ready").is_none_or(|(code, _)| code != 200) {
            assert!(start.elapsed() < Duration::from_secs(30), "prometheus did not start: {}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal(c.id(), "TERM");
            let _ = c.wait();
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    fn push_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    /// An instant query's result vector.
    fn query(&self, q: &str) -> Vec<Value> {
        let (code, body) = get(self.port, &format!("/api/v1/query?query={}", encode(q))).expect("prometheus answers");
        assert_eq!(code, 200, "{q}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// One series' value, by a query that selects exactly one.
    fn value(&self, q: &str) -> f64 {
        let r = self.query(q);
        assert_eq!(r.len(), 1, "{q}: {r:?}");
        r[0]["value"][1].as_str().unwrap().parse().unwrap()
    }

    /// Each series' samples over [from, to] (seconds since the epoch) by a range query.
    fn range(&self, q: &str, from: f64, to: f64) -> Vec<(f64, f64)> {
        let path = format!("/api/v1/query_range?query={}&start={from:.3}&end={to:.3}&step=0.5", encode(q));
        let (code, body) = get(self.port, &path).unwrap();
        assert_eq!(code, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        let series = &v["data"]["result"][0]["values"];
        series
            .as_array()
            .map(|a| a.iter().map(|p| (p[0].as_f64().unwrap(), p[1].as_str().unwrap().parse().unwrap())).collect())
            .unwrap_or_default()
    }

    /// Waits until the last value of series `q` is `want` (a scrape or a write may land a moment
    /// after the run; once strain has gone, Prometheus marks its series stale, so the last
    /// value is read over a range).
    fn settle(&self, q: &str, want: f64) -> f64 {
        let start = Instant::now();
        loop {
            let r = self.query(&format!("last_over_time({q}[2m])"));
            let got = r.first().and_then(|s| s["value"][1].as_str()?.parse().ok()).unwrap_or(f64::NAN);
            if got == want || start.elapsed() > Duration::from_secs(15) {
                return got;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A GET on loopback: (status, body).
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    // Prometheus answers queries chunked.
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_string() };
    Some((code, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Percent-encodes a query.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus's buckets, as strain exports them.
const BUCKETS: [f64; 19] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0,
    60.0,
];

fn bucket_of(seconds: f64) -> usize {
    BUCKETS.iter().position(|le| seconds <= *le).unwrap_or(BUCKETS.len())
}

/// The run's totals by label as Prometheus stored them equal its JSON's.
fn totals_match(p: &Prometheus, run: &str, json: &Value) {
    for (code, n) in json["status"].as_object().unwrap() {
        let q = format!("strain_requests_total{{run=\"{run}\",status=\"{code}\"}}");
        assert_eq!(p.settle(&q, n.as_f64().unwrap()), n.as_f64().unwrap(), "{q}");
    }
    let errors = &json["errors"];
    for kind in ["connect", "read", "write", "timeout", "parse", "status"] {
        let q = format!("strain_errors_total{{run=\"{run}\",kind=\"{kind}\"}}");
        let want = errors[kind].as_f64().unwrap();
        assert_eq!(p.settle(&q, want), want, "{q}");
    }
    let q = format!("strain_sent_total{{run=\"{run}\"}}");
    assert_eq!(p.settle(&q, json["sent"].as_f64().unwrap()), json["sent"].as_f64().unwrap(), "{q}");
}

#[test]
fn prometheus_scrapes_a_run_and_stores_its_exact_totals_and_the_dashboard_queries_return_data() {
    let _alone = crate::harness::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let origin = Origin::start(&["-t", "1"]);
    let mport = free_port();
    let mut prom = Prometheus::start(dir.path(), &[format!("127.0.0.1:{mport}")]);
    let line = format!(
        "-t 1 -c 8 -R 1000 -d 14s --interval 100ms --metrics-listen 127.0.0.1:{mport} --metrics-linger 3s --tag run=scrape"
    );
    let run = strain(&[&args(&line)[..], &[&origin.url()]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("strain:"), "{}", run.stderr);
    let json = run.json.as_ref().unwrap();
    totals_match(&prom, "scrape", json);
    // The rate over the steady part is the target's, within 2%: from the scrapes' own
    // timestamps (Prometheus starts scraping a few seconds after it starts), the first scrape
    // after load began to the last before it ended.
    let raw = prom.query("strain_requests_total{run=\"scrape\",status=\"200\"}[2m]");
    let samples: Vec<(f64, f64)> = raw[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_str().unwrap().parse().unwrap()))
        .collect();
    let total = json["requests"].as_f64().unwrap();
    let steady: Vec<&(f64, f64)> = samples.iter().filter(|(_, v)| *v > 0.0 && *v < total).collect();
    let (&&(t0, v0), &&(t1, v1)) = (steady.first().unwrap(), steady.last().unwrap());
    assert!(t1 - t0 >= 5.0, "too few scrapes in the run: {samples:?}");
    let rate = (v1 - v0) / (t1 - t0);
    assert!((rate - 1000.0).abs() <= 20.0, "{rate}/s from {samples:?}");
    // Rate mode: the uncorrected histogram beside the corrected one, every response in both.
    let count = "strain_request_duration_uncorrected_seconds_count{run=\"scrape\"}";
    assert_eq!(prom.settle(count, total), total, "{count}");
    // The histogram's p99 lies in the bucket of strain's own p99 (or the next).
    let p99 = prom.value("histogram_quantile(0.99, sum by (le) (last_over_time(strain_request_duration_seconds_bucket{run=\"scrape\"}[2m])))");
    let own = json["latency_us"]["percentiles"]["99"].as_f64().unwrap() / 1e6;
    assert!(bucket_of(p99).abs_diff(bucket_of(own)) <= 1, "prometheus p99 {p99} s, strain's {own} s");
    // Every query of the dashboard returns data.
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut queries = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$run", "scrape")
                .replace("$segment", ".*")
                .replace("$__rate_interval", "4s");
            let r: Vec<(f64, f64)> = prom.range(&expr, t0, t1);
            assert!(!r.is_empty(), "no data for {expr}");
            queries += 1;
        }
    }
    assert!(queries >= 8, "{queries} queries");
    prom.stop();
}

#[test]
fn remote_write_survives_a_receiver_restart_and_its_totals_arrive() {
    let _alone = crate::harness::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let origin = Origin::start(&["-t", "1"]);
    let mut prom = Prometheus::start(dir.path(), &[]);
    let json = dir.path().join("r.json");
    let (push, out) = (prom.push_url(), json.display().to_string());
    let child = spawn(
        &[
            &args("-t 1 -c 4 -R 500 -d 8s --quiet --tag run=push")[..],
            &["--metrics-push", &push, "--json", &out, &origin.url()],
        ]
        .concat(),
    );
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    // The receiver goes away for 3 s; strain keeps loading.
    prom.stop();
    std::thread::sleep(Duration::from_secs(3));
    prom.spawn();
    let run = finish(child, start);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["requests"], 4000, "the load went on at its rate");
    totals_match(&prom, "push", &doc);
    // What was lost while it was down is said, in one line (plus the first failure's warning).
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("strain:")).collect();
    assert!(lines.iter().any(|l| l.contains("samples dropped while the receiver was unreachable")), "{}", run.stderr);
    assert!(lines.len() <= 2, "{}", run.stderr);
}

#[test]
fn three_segments_tagged_sum_to_their_merged_result() {
    let _alone = crate::harness::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let origin = Origin::start(&["-t", "1"]);
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let prom = Prometheus::start(dir.path(), &ports.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>());
    let at = humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_millis(1500)).to_string();
    let url = origin.url();
    let start = Instant::now();
    let children: Vec<(PathBuf, Child)> = (0..3)
        .map(|i| {
            let path = dir.path().join(format!("s{i}.json"));
            let (segment, listen, out) =
                (format!("{i}/3"), format!("127.0.0.1:{}", ports[i]), path.display().to_string());
            let own = ["--segment", &segment, "--start-at", &at, "--metrics-listen", &listen, "--json", &out, &url];
            let child =
                spawn(&[&own[..], &args("-c 6 -t 1 -R 900 -d 4s --quiet --tag run=seg --metrics-linger 3s")].concat());
            (path, child)
        })
        .collect();
    let files: Vec<String> = children
        .into_iter()
        .map(|(path, child)| {
            let run = finish(child, start);
            assert_eq!(run.code, 0, "{}", run.stderr);
            path.display().to_string()
        })
        .collect();
    let merged = dir.path().join("m.json");
    let run = strain_raw(
        &[&["merge"][..], &files.iter().map(String::as_str).collect::<Vec<_>>(), &["--json", merged.to_str().unwrap()]]
            .concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let total = m["requests"].as_f64().unwrap();
    let sum = "sum(last_over_time(strain_requests_total{run=\"seg\"}[2m]))";
    let start = Instant::now();
    while prom.query(sum).first().and_then(|s| s["value"][1].as_str()?.parse::<f64>().ok()) != Some(total) {
        assert!(start.elapsed() < Duration::from_secs(15), "{:?} != {total}", prom.query(sum));
        std::thread::sleep(Duration::from_millis(250));
    }
    // Each segment is its own series.
    assert_eq!(prom.query("last_over_time(strain_sent_total{run=\"seg\"}[2m])").len(), 3);
    assert_eq!(prom.query("last_over_time(strain_sent_total{run=\"seg\",segment=\"2\"}[2m])").len(), 1);
}

#[test]
fn bad_metrics_input_fails_cleanly_and_an_absent_receiver_does_not_stop_the_run() {
    let origin = Origin::start(&["-t", "1"]);
    // An address in use: one line, exit 2, nothing sent.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let run = strain_raw(&["-n", "10", "--metrics-listen", &addr.to_string(), &origin.url()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.starts_with(&format!("strain: cannot listen for metrics on {addr}: ")), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1);
    assert_eq!(origin.stop().requests, 0, "nothing was sent");
    // A malformed tag.
    let origin = Origin::start(&["-t", "1"]);
    let run = strain_raw(&["-n", "10", "--tag", "no-equals", &origin.url()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("invalid tag 'no-equals': expected key=value"), "{}", run.stderr);
    // An unreachable receiver: the run goes on, one warning line.
    let closed = free_port();
    let run = strain(&[
        "-n",
        "300",
        "-c",
        "2",
        "--metrics-push",
        &format!("http://127.0.0.1:{closed}/api/v1/write"),
        &origin.url(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.num("/requests"), 300);
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].starts_with(&format!("strain: metrics push to http://127.0.0.1:{closed}/api/v1/write failed")),
        "{}",
        run.stderr
    );
    // An https receiver is refused before any load.
    let run = strain_raw(&["-n", "10", "--metrics-push", "https://127.0.0.1:1/api/v1/write", &origin.url()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    // /metrics answers while a run goes on, in both formats; other paths are 404.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let child = spawn(&["-d", "3s", "-c", "2", "-t", "1", "--quiet", "--metrics-listen", &listen, &origin.url()]);
    let start = Instant::now();
    wait_listening(([127, 0, 0, 1], port).into());
    std::thread::sleep(Duration::from_millis(500));
    let (code, text) = get(port, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert!(text.contains("# TYPE strain_requests_total counter") && text.contains("strain_in_flight "), "{text}");
    assert_eq!(get(port, "/other").unwrap().0, 404);
    let om = openmetrics(port);
    assert!(om.contains("# TYPE strain_requests counter") && om.ends_with("# EOF\n"), "{om}");
    let run = finish(child, start);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// `/metrics` asked for OpenMetrics.
fn openmetrics(port: u16) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.contains("Content-Type: application/openmetrics-text"), "{out}");
    out.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// Runs strain with the flags in `line` and then `own` (which serve metrics on `port` and write
/// the JSON to `json`), scraping `/metrics` every 100 ms until the JSON is written and once more
/// while it lingers: the run and every scrape (the last has the totals).
pub fn scraped(line: &str, own: &[&str], port: u16, json: &Path) -> (crate::harness::Run, Vec<String>) {
    let child = spawn(&[&args(line)[..], own].concat());
    let start = Instant::now();
    wait_listening(([127, 0, 0, 1], port).into());
    let mut scrapes = Vec::new();
    while let Some((200, text)) = get(port, "/metrics") {
        scrapes.push(text);
        if json.exists() {
            std::thread::sleep(Duration::from_millis(200));
            if let Some((200, text)) = get(port, "/metrics") {
                scrapes.push(text);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (finish(child, start), scrapes)
}

/// The value of the first sample of `scrape` whose line starts with `name`.
fn sample(scrape: &str, name: &str) -> f64 {
    let line = scrape.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {scrape}"));
    line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn http2_goaways_and_retries_are_counted_live() {
    // The origin closes each h2c connection with a GOAWAY after 50 responses.
    let origin = Origin::start(&["-t", "1", "--keepalive", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("h2.json");
    let port = free_port();
    let (listen, out) = (format!("127.0.0.1:{port}"), json.display().to_string());
    let own = ["--metrics-listen", &listen, "--json", &out, &origin.url()];
    let (run, scrapes) = scraped("--http2 -m 4 -c 2 -t 1 -n 1000 --quiet --metrics-linger 3s", &own, port, &json);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The last scrape while it lingers has the totals.
    let last = scrapes.last().map_or("", String::as_str);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let goaways = doc["http2"]["goaways"].as_u64().unwrap();
    assert!(goaways >= 15, "{goaways}");
    let value = |name: &str| sample(last, name) as u64;
    assert_eq!(value("strain_http2_goaways_total"), goaways);
    assert_eq!(value("strain_http2_retried_total"), doc["http2"]["retried"].as_u64().unwrap());
    assert_eq!((value("strain_requests_total"), doc["requests"].as_u64().unwrap()), (1000, 1000));
}

#[test]
fn a_replay_is_exported_live_with_its_recorded_rate_as_the_target() {
    let origin = Origin::start(&["-t", "1"]);
    let dir = tempfile::tempdir().unwrap();
    // 600 requests recorded at 300/s (2 s).
    let lines = crate::harness::even_recording(600, 300, |_| "/m".into());
    let file = dir.path().join("r.jsonl");
    std::fs::write(&file, lines).unwrap();
    let json = dir.path().join("r.json");
    let port = free_port();
    let (listen, out, file) = (format!("127.0.0.1:{port}"), json.display().to_string(), file.display().to_string());
    let own = ["--metrics-listen", &listen, "--json", &out, &file, &origin.url()];
    let (run, scrapes) = scraped("replay -c 4 -t 1 --quiet --metrics-linger 3s", &own, port, &json);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(scrapes.last().map(|s| sample(s, "strain_requests_total")), Some(600.0));
    // While it ran, the target was the recording's rate (the gauge goes when the run ends).
    let target_seen = scrapes.iter().any(|s| {
        s.lines()
            .filter(|l| l.starts_with("strain_target_requests_per_second"))
            .any(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| (v - 300.0).abs() <= 3.0))
    });
    assert!(target_seen, "no target of 300/s while it ran");
}
