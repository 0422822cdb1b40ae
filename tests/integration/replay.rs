//! `strain replay`: real nginx records a known irregular pattern of requests in its access
//! logs, and replaying each log against another nginx reproduces the same requests in the same
//! shape; HAR bodies arrive byte-exact; a stall shows in the corrected percentiles; bad input
//! is one line, exit 2, and nothing sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::harness::{even_recording, exclusive, recording, strain, temp_file, Nginx, Origin};

/// The recorded pattern: (milliseconds from the start, method, target). Bursts and silences,
/// several paths, HEADs and POSTs.
fn pattern() -> Vec<(u64, &'static str, String)> {
    let mut p = Vec::new();
    for k in 0..15 {
        p.push((0, "GET", format!("/a?i={k}")));
    }
    for k in 0..5 {
        p.push((400 + 40 * k, "HEAD", "/b".to_string()));
    }
    for k in 0..20 {
        let (method, path) = if k % 4 == 3 { ("POST", format!("/d?n={k}")) } else { ("GET", format!("/c?x={k}")) };
        p.push((1200, method, path));
    }
    for k in 0..3 {
        p.push((1700 + 30 * k, "GET", "/a".to_string()));
    }
    p
}

/// Sends `pattern` to `port` over 8 keep-alive connections, each request at its time.
fn play(port: u16, pattern: &[(u64, &str, String)]) {
    let mut conns: Vec<(TcpStream, BufReader<TcpStream>)> = (0..8)
        .map(|_| {
            let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            // Each request goes in one segment, now: no Nagle wait behind a delayed ACK.
            s.set_nodelay(true).unwrap();
            let r = BufReader::new(s.try_clone().unwrap());
            (s, r)
        })
        .collect();
    let start = Instant::now();
    for (k, (at, method, target)) in pattern.iter().enumerate() {
        let due = start + Duration::from_millis(*at);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let (s, r) = &mut conns[k % 8];
        let body = if *method == "POST" { "hello" } else { "" };
        let request =
            format!("{method} {target} HTTP/1.1\r\nHost: shop.test\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        s.write_all(request.as_bytes()).unwrap();
        // Each answer is read whole before the connection is used again.
        let mut length = 0;
        loop {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        if *method != "HEAD" {
            let mut b = vec![0; length];
            r.read_exact(&mut b).unwrap();
        }
    }
}

/// An nginx that answers every method with `ok` and logs each request in `logs` (name,
/// layout) to files in its directory.
fn logging_nginx(logs: &[(&str, &str)]) -> Nginx {
    let formats: String = logs.iter().map(|(name, layout)| format!("log_format {name} '{layout}';\n")).collect();
    let files: String = logs.iter().map(|(name, _)| format!("access_log {name}.log {name};")).collect();
    Nginx::start_with_http(&formats, &format!("{files} location / {{ return 200 \"ok\\n\"; }}"))
}

/// Each line's request start (`$msec - $request_time`, µs) and request line, from a log in
/// the layout `$msec $request_time ... "$request"`.
fn starts(log: &str) -> Vec<(i64, String)> {
    let mut v: Vec<(i64, String)> = log
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let end: f64 = f.next().unwrap().parse().unwrap();
            let took: f64 = f.next().unwrap().parse().unwrap();
            let request = l.split('"').nth(1).unwrap().to_string();
            (((end - took) * 1e6) as i64, request)
        })
        .collect();
    v.sort();
    v
}

/// Offsets from the first, µs.
fn offsets(v: &[(i64, String)]) -> Vec<i64> {
    v.iter().map(|(t, _)| t - v[0].0).collect()
}

/// The request lines, sorted.
fn requests(v: &[(i64, String)]) -> Vec<String> {
    let mut r: Vec<String> = v.iter().map(|(_, q)| q.clone()).collect();
    r.sort();
    r
}

/// Per-bucket counts of `offsets` (µs), buckets of `width_us`.
fn shape(offsets: &[i64], width_us: i64) -> Vec<usize> {
    let mut b = vec![0; (offsets.iter().max().copied().unwrap_or(0) / width_us + 1) as usize];
    for o in offsets {
        b[(o / width_us) as usize] += 1;
    }
    b
}

/// Asserts the requests `seen` went at the offsets `want` (µs, in order): each within 15 ms
/// (the 1 ms tick, a connection being opened, the debug build), and the same count in every
/// bucket of `width` but for requests due that close to a bucket's edge.
fn assert_shape(want: &[i64], seen: &[(i64, String)], width: i64, label: &str) {
    // The first request may go a little late (its connection being opened): the replay is
    // held against the recording from the median difference, not from its first request.
    let mut got = offsets(seen);
    let mut diffs: Vec<i64> = want.iter().zip(&got).map(|(w, g)| g - w).collect();
    diffs.sort();
    let shift = diffs[diffs.len() / 2];
    got.iter_mut().for_each(|g| *g = (*g - shift).max(0));
    let worst = want.iter().zip(&got).map(|(w, g)| (w - g).abs()).max().unwrap();
    assert!(worst < 15_000, "{label}: worst {worst} µs\nwant {want:?}\ngot  {got:?}");
    let (a, b) = (shape(want, width), shape(&got, width));
    let moved: usize = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).sum();
    // Only a request due within the worst lateness of a bucket's edge may cross it.
    let edge = want.iter().filter(|&&o| o % width > width - worst - 1 || o % width < worst + 1).count();
    assert!(moved <= 2 * edge, "{label}: per-{width}µs shape {a:?} vs {b:?} ({edge} near an edge)");
}

const TIMING: &str = "$msec $request_time $connection \"$request\"";

/// Records the pattern with nginx: its combined and timing logs.
fn record() -> (String, String, tempfile::TempDir) {
    let mut recorder = logging_nginx(&[("combined2", "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\""), ("timing", TIMING)]);
    play(recorder.port, &pattern());
    recorder.stop();
    let read = |name: &str| std::fs::read_to_string(recorder.dir.path().join(name)).unwrap();
    let (combined, timing) = (read("combined2.log"), read("timing.log"));
    let keep = tempfile::tempdir().unwrap();
    std::fs::write(keep.path().join("combined.log"), &combined).unwrap();
    std::fs::write(keep.path().join("timing.log"), &timing).unwrap();
    (combined, timing, keep)
}

/// Replays `file` with `flags` against a fresh logging nginx; what that nginx saw.
fn replay(file: &str, flags: &[&str]) -> (crate::harness::Run, Vec<(i64, String)>) {
    let mut target = logging_nginx(&[("seen", "$msec $request_time \"$request\"")]);
    let url = target.url();
    let mut a = vec!["replay", "-t", "2", "-c", "32", "--methods", "GET,HEAD,POST"];
    a.extend(flags);
    a.extend([file, url.as_str()]);
    let run = strain(&a);
    target.stop();
    let seen = std::fs::read_to_string(target.dir.path().join("seen.log")).unwrap();
    let seen: Vec<(i64, String)> = seen
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let end: f64 = f.next().unwrap().parse().unwrap();
            let took: f64 = f.next().unwrap().parse().unwrap();
            (((end - took) * 1e6) as i64, l.split('"').nth(1).unwrap().to_string())
        })
        .collect();
    let mut seen = seen;
    seen.sort();
    (run, seen)
}

#[test]
fn nginx_logs_replay_the_same_requests_in_the_same_shape() {
    let _alone = exclusive();
    let (combined, timing, dir) = record();
    let recorded = starts(&timing);
    assert_eq!(recorded.len(), pattern().len());
    let timing_file = dir.path().join("timing.log").display().to_string();
    for speed in [1.0, 4.0] {
        let s = speed.to_string();
        let (run, seen) = replay(&timing_file, &["--log-format", TIMING, "--speed", &s]);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        assert_eq!(requests(&seen), requests(&recorded), "speed {speed}");
        // Each request went when it was due: the recorded offsets over the speed, within a
        // few milliseconds (the 1 ms tick, a connection being opened, the debug build).
        let want: Vec<i64> = offsets(&recorded).iter().map(|o| (*o as f64 / speed) as i64).collect();
        // The shape per 100 ms of the replay (400 ms of the recording at --speed 4).
        assert_shape(&want, &seen, 100_000, &format!("speed {speed}"));
        let j = run.json.as_ref().unwrap();
        assert_eq!(j["replay"]["requests"], recorded.len());
        assert_eq!(j["replay"]["counts"]["records"], recorded.len());
        assert_eq!(j["sent"], recorded.len());
        assert_eq!(j["requests"], recorded.len());
        assert!(run.stdout.contains(&format!("at {speed}x")), "{}", run.stdout);
    }
    // The combined log has whole seconds: its requests are spread over their second, so the
    // shape per second is the recording's.
    let combined_file = dir.path().join("combined.log").display().to_string();
    let (run, seen) = replay(&combined_file, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(requests(&seen), requests(&recorded));
    assert_eq!(run.json.as_ref().unwrap()["replay"]["files"][0]["format"], "combined");
    let seconds: Vec<i64> = combined
        .lines()
        .map(|l| {
            let t = l.split('[').nth(1).unwrap().split(']').next().unwrap();
            let hms: Vec<i64> = t.split(' ').next().unwrap().split(':').skip(1).map(|x| x.parse().unwrap()).collect();
            hms[0] * 3600 + hms[1] * 60 + hms[2]
        })
        .collect();
    // Spread as the replay spreads them: the i-th of a second's n at i/n of it.
    let first = *seconds.iter().min().unwrap();
    let mut want = Vec::new();
    for s in first..=*seconds.iter().max().unwrap() {
        let n = seconds.iter().filter(|&&x| x == s).count() as i64;
        want.extend((0..n).map(|i| (s - first) * 1_000_000 + i * 1_000_000 / n));
    }
    assert_shape(&want, &seen, 1_000_000, "combined");
}

/// A HAR as a browser writes it, with a binary POST body (base64) and a text PUT body.
fn har(base: &str) -> String {
    format!(
        r#"{{"log": {{"version": "1.2", "creator": {{"name": "test", "version": "1"}},
  "pages": [],
  "entries": [
    {{"startedDateTime": "2026-11-26T10:00:00.000Z", "time": 5,
      "request": {{"method": "POST", "url": "{base}upload?k=1", "httpVersion": "HTTP/1.1",
        "headers": [{{"name": "Content-Type", "value": "application/octet-stream"}}],
        "postData": {{"mimeType": "application/octet-stream", "text": "AAEC/f7/aGk=", "encoding": "base64"}},
        "bodySize": 8}},
      "response": {{"status": 200, "headers": [], "content": {{"size": 2, "text": "ok"}}}}}},
    {{"startedDateTime": "2026-11-26T10:00:00.100Z", "time": 5,
      "request": {{"method": "PUT", "url": "{base}doc/7", "httpVersion": "HTTP/1.1",
        "headers": [{{"name": "Content-Type", "value": "text/plain"}}],
        "postData": {{"mimeType": "text/plain", "text": "line one\nline \"two\""}}, "bodySize": 19}},
      "response": {{"status": 200, "headers": [], "content": {{"size": 2, "text": "ok"}}}}}},
    {{"startedDateTime": "2026-11-26T10:00:00.200Z", "time": 5,
      "request": {{"method": "GET", "url": "{base}page", "httpVersion": "HTTP/1.1", "headers": [], "bodySize": 0}},
      "response": {{"status": 200, "headers": [], "content": {{"size": 2, "text": "ok"}}}}}}
  ]}}}}"#
    )
}

/// nginx's `\xHH` escapes in a logged body, decoded.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).unwrap());
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

#[test]
fn har_bodies_arrive_byte_exact() {
    // nginx reads the body to pass it on, so it can log it (non-printable bytes as \xHH).
    let origin = Origin::start(&[]);
    let formats = "log_format body '$request_method $uri $content_length \"$request_body\"';";
    let server = format!(
        "access_log body.log body; client_body_buffer_size 64k; location / {{ proxy_pass http://{}; }}",
        origin.addr
    );
    let mut nginx = Nginx::start_with_http(formats, &server);
    let (_dir, file) = temp_file("browse.har", &har("https://shop.test/"));
    let url = nginx.url();
    let run = strain(&["replay", "-c", "2", "--methods", "GET,POST,PUT", &file, &url]);
    nginx.stop();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let log = std::fs::read_to_string(nginx.dir.path().join("body.log")).unwrap();
    let mut lines: Vec<(String, String, String, Vec<u8>)> = log
        .lines()
        .map(|l| {
            let mut f = l.splitn(4, ' ');
            let (m, u, n) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            let body = f.next().unwrap().trim_matches('"');
            (m.to_string(), u.to_string(), n.to_string(), if body == "-" { Vec::new() } else { unescape(body) })
        })
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            ("GET".into(), "/page".into(), "-".into(), Vec::new()),
            ("POST".into(), "/upload".into(), "8".into(), vec![0, 1, 2, 0xfd, 0xfe, 0xff, b'h', b'i']),
            ("PUT".into(), "/doc/7".into(), "19".into(), b"line one\nline \"two\"".to_vec()),
        ]
    );
    assert_eq!(run.json.as_ref().unwrap()["replay"]["files"][0]["format"], "har");
}

#[test]
fn a_stall_shows_in_the_corrected_percentiles() {
    let _alone = exclusive();
    // 500 requests/s for 4 s; the origin stalls 1 s at 1 s. Requests due in the stall wait up
    // to 1 s from when they were due; from when they were sent, far less.
    let origin = Origin::start(&["-t", "1", "--stall-at", "1s", "--stall-for", "1s"]);
    let (_dir, file) = temp_file("r.jsonl", &even_recording(2000, 500, |k| format!("/r?{k}")));
    let url = origin.url();
    let run = strain(&["replay", "-t", "1", "-c", "20", "-T", "3s", &file, &url]);
    let served = origin.stop();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.num("/requests"), 2000);
    assert_eq!(served.requests, 2000);
    let p99 = run.num("/latency_us/percentiles/99");
    let u99 = run.num("/uncorrected_latency_us/percentiles/99");
    assert!(p99 > 700_000, "corrected p99 {p99}");
    assert!(u99 < p99 / 2, "uncorrected p99 {u99} vs corrected {p99}");
    // Every connection waited on the stalled server: the sends fell behind, and say why.
    assert!(run.num("/replay/lag_us/max") > 500_000);
    // Looks like strain falling behind, but is not: the requests due in the stall (500, less the
    // 20 in flight when it began) waited for a connection, as in rate mode, and say so.
    let (late, waited) = (run.num("/rate/late"), run.num("/rate/late_no_connection"));
    assert!(waited >= 440 && waited * 2 > late, "late {late}, no connection {waited}");
    // strain's own late sends are a connection free and the thread woken over 1 ms after the due
    // time: the machine's, not the stall's (the other way round is
    // diagnoses::a_replay_strain_cannot_keep_up_with_names_itself). A release build stays under
    // the share at which find-max blames the generator; a debug build beside its debug origin on
    // a 2-vCPU VM was woken late for up to 6.7% of its sends, so only the release build is held
    // to it.
    let own_share = (late - waited) as f64 / 2000.0;
    if !cfg!(debug_assertions) {
        assert!(own_share <= strain::find_max::step::LATE_SHARE, "late {late}, no connection {waited}");
    }
}

#[test]
fn a_high_rate_replay_keeps_its_schedule_with_exact_counts() {
    let _alone = exclusive();
    // 100,000 requests recorded at 20,000/s (5 s). A debug build and its debug origin need
    // most of a core each at that rate, so in one (the test command's) it is 50,000 at
    // 10,000/s: on a 2-vCPU VM, with other tests' servers and Chromium beside them, 20,000/s
    // fell 2.4 s behind.
    let rate = if cfg!(debug_assertions) { 10_000 } else { 20_000 };
    let n = rate * 5;
    let origin = Origin::start(&["-t", "1"]);
    let (_dir, file) = temp_file("fast.jsonl", &even_recording(n, rate, |k| format!("/r?{k}")));
    let url = origin.url();
    let run = strain(&["replay", "-t", "1", "-c", "50", &file, &url]);
    let served = origin.stop();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run.assert_nums(&[("/requests", n), ("/sent", n), ("/replay/queued", n), ("/rate/unsent", 0)]);
    assert_eq!(served.requests, n);
    let j = run.json.as_ref().unwrap();
    let took = j["duration_s"].as_f64().unwrap();
    assert!((4.9..6.5).contains(&took), "took {took} s for a 5 s recording");
    crate::harness::schema().validate(j).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_sent() {
    let origin = Origin::start(&[]);
    let url = origin.url();
    let (_d1, unknown) = temp_file("notes.txt", "hello there\nthis is no log\n");
    let (_d2, bad) = temp_file(
        "access.log",
        "127.0.0.1 - - [26/Nov/2026:10:00:00 +0000] \"GET /a HTTP/1.1\" 200 2 \"-\" \"curl\"\n\
         127.0.0.1 - - [26/Nov/2026:10:00:01 +0000] \"GET /b HTTP/1.1\" 200 2 \"-\" \"curl\"\n\
         this line is broken\n\
         127.0.0.1 - - [26/Nov/2026:10:00:02 +0000] \"GET /c HTTP/1.1\" 200 2 \"-\" \"curl\"\n",
    );
    let (_d3, posts) = temp_file("posts.jsonl", "{\"time\": 1, \"method\": \"POST\", \"url\": \"http://x/p\"}\n");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec![unknown.as_str()], format!("{unknown}: unknown format")),
        (vec!["/nonexistent/x.log"], "cannot read /nonexistent/x.log".into()),
        // One line in four in no layout: over the 1% a replay goes on with.
        (
            vec![bad.as_str()],
            format!(
                "1 of 4 records (25.0%) are in no layout strain reads, over the 1% a replay goes on with: {bad}:3: "
            ),
        ),
        (vec!["--strict", bad.as_str()], format!("{bad}:3: does not match the combined layout")),
        (
            vec![posts.as_str()],
            format!("{posts}: no request to replay (1 with a method not replayed (POST) skipped): replay them with --methods GET,HEAD,POST"),
        ),
        (vec!["--format", "nope", bad.as_str()], "unknown format \"nope\"".into()),
        (vec!["--log-format", "%Z %h", bad.as_str()], "invalid --log-format".into()),
        // Said before the recordings are read: the missing file is not reached.
        (vec!["--json", "/nonexistent/out.json", "/nonexistent/x.log"], "cannot write /nonexistent/out.json".into()),
    ];
    for (args, want) in cases {
        let mut a = vec!["replay"];
        a.extend(&args);
        a.push(&url);
        let run = crate::harness::strain_raw(&a);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        let line = run.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{args:?}: {line}");
        assert!(line.starts_with("strain: ") && line.contains(&want), "{args:?}: {line}");
    }
    // --skip-bad counts the broken line and replays the rest.
    let run = strain(&["replay", "--skip-bad", "--speed", "10", &bad, &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_nums(&[("/requests", 3), ("/replay/counts/bad", 1), ("/replay/counts/records", 4)]);
    assert!(run.stdout.contains("skipped: 1 of 4 records read: 1 in no layout strain reads"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("      {bad}:3: does not match")), "{}", run.stdout);
    assert_eq!(origin.stop().requests, 3);
}

#[test]
fn a_few_bad_lines_are_counted_and_shown_and_strict_refuses_them() {
    // 150 requests, one line in no layout (under 1% of 153 read), an empty request, and a last
    // line cut off by its writer (no newline).
    let line = |s: usize| {
        format!("127.0.0.1 - - [26/Nov/2026:10:00:{:02} +0000] \"GET /r{s} HTTP/1.1\" 200 2 \"-\" \"curl\"\n", s % 60)
    };
    let mut log: String = (0..70).map(line).collect();
    log.push_str("this line is in no layout\n");
    log.extend((70..150).map(line));
    log.push_str("127.0.0.1 - - [26/Nov/2026:10:00:59 +0000] \"-\" 400 0 \"-\" \"-\"\n");
    log.push_str("127.0.0.1 - - [26/Nov/2026:10:00:59 +0000] \"GET /cut HT");
    let (_dir, file) = temp_file("access.log", &log);
    let html = format!("{file}.html");
    let origin = Origin::start(&[]);
    let url = origin.url();
    let run = strain(&["replay", "--speed", "100", "--html", &html, &file, &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_nums(&[
        ("/requests", 150),
        ("/replay/counts/records", 153),
        ("/replay/counts/bad", 1),
        ("/replay/counts/no_request", 1),
        ("/replay/counts/truncated", 1),
    ]);
    let bad = format!("{file}:71: does not match the combined layout");
    assert!(run.json.as_ref().unwrap()["replay"]["bad_lines"][0].as_str().unwrap().starts_with(&bad), "{}", run.stdout);
    assert!(
        run.stdout.contains("skipped: 3 of 153 records read: 1 with no request (\"-\"), 1 cut off at the end of the file, 1 in no layout strain reads"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(&format!("      {bad}")), "{}", run.stdout);
    // The HTML page's Replay table says the same.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-panel=\"replay\""), "no Replay table");
    assert!(page.contains("1 cut off at the end of the file"), "the causes on the page");
    assert_eq!(origin.stop().requests, 150);
    // --strict: the first record that is no whole request stops it before any load.
    let origin = Origin::start(&[]);
    let strict = crate::harness::strain_raw(&["replay", "--strict", &file, &origin.url()]);
    assert_eq!(strict.code, 2, "{}", strict.stderr);
    assert!(strict.stderr.trim().starts_with(&format!("strain: {file}:71: ")), "{}", strict.stderr);
    assert_eq!(origin.stop().requests, 0);
}

#[test]
fn sessions_keep_their_order_on_their_own_connection() {
    // Six clients, each with its own connection, five requests each, interleaved in time.
    let mut recorder = logging_nginx(&[("timing", TIMING)]);
    let mut conns: Vec<(TcpStream, BufReader<TcpStream>)> = (0..6)
        .map(|_| {
            let s = TcpStream::connect(("127.0.0.1", recorder.port)).unwrap();
            let r = BufReader::new(s.try_clone().unwrap());
            (s, r)
        })
        .collect();
    for k in 0..5 {
        for (c, (s, r)) in conns.iter_mut().enumerate() {
            write!(s, "GET /s{c}/{k} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            let mut head = String::new();
            while head != "\r\n" {
                head.clear();
                r.read_line(&mut head).unwrap();
            }
            let mut ok = [0u8; 3];
            r.read_exact(&mut ok).unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(conns);
    recorder.stop();
    let log = recorder.dir.path().join("timing.log").display().to_string();
    let mut target = logging_nginx(&[("conn", "$connection $connection_requests \"$request\"")]);
    let url = target.url();
    let run = strain(&["replay", "-t", "2", "-c", "8", "--log-format", TIMING, "--sessions", "connection", &log, &url]);
    target.stop();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.num("/requests"), 30);
    let seen = std::fs::read_to_string(target.dir.path().join("conn.log")).unwrap();
    // Per recorded client: the replay connection each of its requests came on, and where.
    let mut by_client: std::collections::BTreeMap<String, Vec<(u64, u64, u64)>> = Default::default();
    for l in seen.lines() {
        let mut f = l.splitn(3, ' ');
        let conn: u64 = f.next().unwrap().parse().unwrap();
        let nth: u64 = f.next().unwrap().parse().unwrap();
        let path = l.split('"').nth(1).unwrap().split(' ').nth(1).unwrap();
        let mut p = path.trim_start_matches("/s").split('/');
        let (client, k) = (p.next().unwrap().to_string(), p.next().unwrap().parse().unwrap());
        by_client.entry(client).or_default().push((k, conn, nth));
    }
    assert_eq!(by_client.len(), 6);
    for (client, mut reqs) in by_client {
        reqs.sort();
        let conns: std::collections::BTreeSet<u64> = reqs.iter().map(|r| r.1).collect();
        assert_eq!(conns.len(), 1, "client {client} went on several connections: {reqs:?}");
        assert!(reqs.windows(2).all(|w| w[0].2 < w[1].2), "client {client} out of order: {reqs:?}");
    }
}

#[test]
fn segments_replay_their_shares_and_merge_into_the_whole() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let (dir, file) = temp_file("r.jsonl", &even_recording(900, 600, |k| format!("/p{}?k={k}", k % 3)));
    let parts: Vec<String> = (0..3)
        .map(|i| {
            let out = dir.path().join(format!("s{i}.json")).display().to_string();
            let seg = format!("{i}/3");
            let run = crate::harness::strain_raw(&[
                "replay",
                "-t",
                "1",
                "-c",
                "4",
                "--segment",
                &seg,
                "--json",
                &out,
                &file,
                &url,
            ]);
            assert_eq!(run.code, 0, "{}", run.stderr);
            out
        })
        .collect();
    let served = origin.stop();
    assert_eq!(served.requests, 900);
    let merged = dir.path().join("m.json").display().to_string();
    let mut a = vec!["merge", "--json", merged.as_str()];
    a.extend(parts.iter().map(String::as_str));
    let run = crate::harness::strain_raw(&a);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(m["requests"], 900);
    assert_eq!(m["replay"]["queued"], 900);
    assert_eq!(m["replay"]["requests"], 900);
    let paths: Vec<(String, u64)> = m["replay"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["path"].as_str().unwrap().to_string(), p["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(paths, [("/p0".to_string(), 300), ("/p1".to_string(), 300), ("/p2".to_string(), 300)]);
    crate::harness::schema().validate(&m).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn two_replays_of_one_log_are_compared_and_the_text_names_the_paths() {
    // An A/A comparison of one run a side, as compare advises: alone, the origin and strain
    // pinned apart, and the origin 1 ms slow as in compare's own A/A test. A sub-millisecond
    // p50 moved 31% and once 40% (228 to 319 us) on a loaded CI machine even alone, beyond the
    // 30% one-run floor; against a 1 ms service that jitter is under 10%.
    let _alone = exclusive();
    let origin = Origin::start_pinned("1", &["-t", "1", "--delay", "1ms"]);
    let url = origin.url();
    let (dir, file) = temp_file("r.jsonl", &even_recording(600, 400, |k| format!("/p{}?k={k}", k % 4)));
    let results: Vec<String> = ["a", "b"]
        .iter()
        .map(|name| {
            let out = dir.path().join(format!("{name}.json")).display().to_string();
            let run = crate::harness::run_program(
                "taskset",
                &["-c", "0", crate::harness::bin(), "replay", "-t", "1", "-c", "4", "--json", &out, &file, &url],
            );
            assert_eq!(run.code, 0, "{}", run.stderr);
            out
        })
        .collect();
    let text = crate::harness::strain_raw(&["replay", "-t", "1", "-c", "4", "--speed", "4", &file, &url]);
    origin.stop();
    // wrk's text goes to stderr when the JSON is on stdout; here there is none.
    assert!(text.stdout.contains("top paths (of 4):"), "{}", text.stdout);
    for p in ["/p0", "/p1", "/p2", "/p3"] {
        assert!(
            text.stdout.lines().any(|l| l.trim_start().starts_with(p) && l.contains(" 150 ")),
            "{p}: {}",
            text.stdout
        );
    }
    let cmp = crate::harness::strain_raw(&["compare", &results[0], &results[1]]);
    // Two replays of one log against one server: no regression (inconclusive or pass).
    assert!(cmp.code == 0 || cmp.code == 97, "{}\n{}", cmp.stdout, cmp.stderr);
    assert!(cmp.stdout.contains("Verdict"), "{}", cmp.stdout);
}

#[test]
fn a_replay_speaks_http2() {
    let mut nginx = Nginx::start_h2("", "location / { return 200 \"ok\\n\"; }", false);
    let url = nginx.url();
    let (_dir, file) = temp_file("r.jsonl", &even_recording(300, 1000, |k| format!("/p{}?k={k}", k % 3)));
    let run = strain(&["replay", "--http2", "-m", "4", "-t", "1", "-c", "2", &file, &url]);
    let (_, log) = (nginx.stop(), nginx.access_log());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.json.as_ref().unwrap()["protocol"], "h2c");
    assert_eq!(run.num("/requests"), 300);
    assert_eq!(log.len(), 300);
}

#[test]
fn windows_loops_gaps_and_rates_shape_the_replay() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    // Ten requests a second apart, then one more after a 60 s silence.
    let mut offsets: Vec<u64> = (0..10).map(|s| s * 1_000_000).collect();
    offsets.push(69_000_000);
    let (_dir, file) =
        temp_file("r.jsonl", &recording(offsets.into_iter().enumerate().map(|(k, o)| (o, format!("/t{k}")))));
    let go = |extra: &[&str]| {
        let mut a = vec!["replay", "-t", "1", "-c", "2"];
        a.extend(extra);
        a.extend([file.as_str(), url.as_str()]);
        let run = strain(&a);
        assert_eq!(run.code, 0, "{extra:?}: {}", run.stderr);
        run
    };
    // A window: from 2 s to 5 s into the recording, at 10x: three requests over 0.2 s.
    let run = go(&["--from", "2s", "--to", "5s", "--speed", "10"]);
    // Two before the window, and the first past it (the file is read no further).
    run.assert_nums(&[("/requests", 3), ("/replay/requests", 3), ("/replay/counts/outside", 3)]);
    // The silence cut to 2 s (the 1 s gaps stay) and three passes at 20x: 33 requests, each
    // pass 11 s of recording in 0.55 s.
    let run = go(&["--max-gap", "2s", "--loop", "3", "--speed", "20"]);
    run.assert_nums(&[("/requests", 33), ("/replay/passes", 3), ("/replay/span_us", 11_000_000)]);
    let took = run.json.as_ref().unwrap()["duration_s"].as_f64().unwrap();
    assert!((1.5..3.0).contains(&took), "three passes of 11 s at 20x took {took} s");
    // -R: the gaps scaled so the mean is 50/s: 11 requests (10 gaps) over 0.2 s.
    let run = go(&["-R", "50", "--max-gap", "1s"]);
    let speed = run.json.as_ref().unwrap()["replay"]["speed"].as_f64().unwrap();
    assert!((speed - 50.0 * 10.0 / 10.0).abs() < 1e-9, "speed {speed}");
    run.assert_nums(&[("/requests", 11)]);
    origin.stop();
}

#[test]
fn a_gzipped_log_is_read_directly_and_thresholds_judge_the_replay() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let lines: String = (0..40)
        .map(|k| {
            format!(
                "10.0.0.{} - - [26/Nov/2026:10:00:{:02} +0000] \"GET /g/{k} HTTP/1.1\" 200 2 \"-\" \"curl/8\"\n",
                k % 3,
                k / 10
            )
        })
        .collect();
    let (dir, log) = temp_file("access.log", &lines);
    let gz = std::process::Command::new("gzip").arg("-k").arg(&log).status().unwrap();
    assert!(gz.success());
    let gz = dir.path().join("access.log.gz").display().to_string();
    // Four seconds of recording at 8x; one threshold passes, one cannot.
    let run = strain(&[
        "replay",
        "-t",
        "1",
        "-c",
        "4",
        "--speed",
        "8",
        "--threshold",
        "late<50%",
        "--threshold",
        "p99<1us",
        &gz,
        &url,
    ]);
    assert_eq!(run.code, 99, "{}\n{}", run.stdout, run.stderr);
    run.assert_nums(&[("/requests", 40), ("/replay/counts/records", 40)]);
    let j = run.json.as_ref().unwrap();
    assert_eq!(j["replay"]["files"][0]["format"], "combined");
    let passed: Vec<bool> =
        j["thresholds"].as_array().unwrap().iter().map(|t| t["passed"].as_bool().unwrap()).collect();
    assert_eq!(passed, [true, false]);
    assert_eq!(origin.stop().requests, 40);
}
