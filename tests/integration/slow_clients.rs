//! Slow and odd clients (`--read-rate`, `--write-rate`, `--drop-after-length`) against real
//! servers: 2,000 slow readers holding nginx and Apache Traffic Server, every byte a completed
//! slow read took matching nginx's log, senders that dribble, connections dropped after
//! Content-Length, every protocol throttled alike, and bad rates refused.

use std::time::Duration;

use crate::harness::{load, strain, strain_at, strain_under, Nginx, Origin, Run};
use crate::proxies::{http_get, Ats, AtsMode};

/// A 100 KB file under nginx's root, `/doc`.
const DOC: usize = 100_000;

/// nginx serving its private directory, with `$bytes_sent` (and more) per response logged to
/// `slow.log`.
fn nginx_with_doc(h2: bool) -> Nginx {
    let log = "log_format slow '$status $bytes_sent $request_length $request_time $connection_requests';";
    let body = "root .; access_log slow.log slow; keepalive_requests 100000;";
    let nginx = if h2 { Nginx::start_h2(log, body, false) } else { Nginx::start_http1(log, body, false) };
    std::fs::write(nginx.dir.path().join("doc"), vec![b'x'; DOC]).unwrap();
    std::fs::write(nginx.dir.path().join("small"), vec![b'y'; 20_000]).unwrap();
    nginx
}

/// The slow log's lines, split in fields.
fn slow_log(nginx: &Nginx) -> Vec<Vec<String>> {
    nginx.file("slow.log").lines().map(|l| l.split(' ').map(str::to_string).collect()).collect()
}

/// strain's user and system CPU seconds for `line` against `url`, through /usr/bin/time.
fn timed(line: &str, url: &str) -> (Run, f64) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cpu").display().to_string();
    let mut args: Vec<&str> = line.split_whitespace().collect();
    args.push(url);
    let run = strain_under(&["/usr/bin/time", "-f", "%U %S", "-o", &out], &args);
    let cpu: f64 = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .split(' ')
        .map(|s| s.parse::<f64>().unwrap())
        .sum();
    (run, cpu)
}

/// 2,000 connections reading a 100 KB document at 1 KB/s for 10 s: what the rate allows is
/// read, each connection is held open for the whole run (no response can finish: it would
/// take 100 s), and strain spends little CPU on it, since a waiting connection is a timer.
fn assert_slow_readers(run: &Run, cpu: f64, what: &str) {
    assert_eq!(run.code, 0, "{what}: {}\n{}", run.stdout, run.stderr);
    let read = run.num("/bytes");
    // 2,000 x (256 B at once + 1,000 B/s for the 10 s): the rate, not the server, sets it.
    let allowed = 2_000.0 * (256.0 + 1_000.0 * 10.0);
    let share = read as f64 / allowed;
    assert!((0.85..=1.02).contains(&share), "{what}: read {read} B, {share:.3} of the rate's {allowed}");
    assert_eq!(run.num("/connections_opened"), 2_000, "{what}: {}", run.stdout);
    assert_eq!(run.num("/errors/timeout"), 2_000, "{what}: every response still coming at the end");
    assert_eq!(run.num("/requests"), 0, "{what}");
    assert!(cpu < 2.0, "{what}: strain took {cpu:.2} s of CPU for 2,000 slow readers over 10 s");
}

#[test]
fn two_thousand_slow_readers_hold_nginx_and_ats() {
    let line = "--read-rate 1k -c 2000 -t 1 -d 10s -T 10s";
    let mut nginx = nginx_with_doc(false);
    let (run, cpu) = timed(line, &format!("{}doc", nginx.url()));
    nginx.stop();
    assert_slow_readers(&run, cpu, "nginx");
    // nginx logs each response it gave up on when strain closed it: what it wrote covers
    // every byte strain read, and no more than the socket buffers between them hold.
    let log = slow_log(&nginx);
    assert_eq!(log.len(), 2_000, "one line per connection");
    let sent: u64 = log.iter().map(|l| l[1].parse::<u64>().unwrap()).sum();
    let read = run.num("/bytes");
    assert!(sent >= read, "nginx sent {sent} B, strain read {read} B");
    // nginx counts what it handed its kernel: the rest of each document waits in the socket
    // buffers between them, never more than the document.
    assert!(log.iter().all(|l| l[0] == "200"), "{log:?}");
    assert!(sent / 2_000 <= DOC as u64 + 300, "nginx sent {sent} B");

    // Through Apache Traffic Server in front of strain's origin: ATS holds the 2,000 slow
    // clients; what it counts as sent to them covers what strain read.
    let origin = Origin::start(&["-t", "1"]);
    let ats = Ats::start(AtsMode::Reverse { origin_port: origin.addr.port() });
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], ats.port));
    let (run, cpu) = timed(line, &format!("http://127.0.0.1:{}/d/1/{DOC}", ats.port));
    assert_slow_readers(&run, cpu, "ATS");
    std::thread::sleep(Duration::from_millis(600));
    let stats = http_get(addr, "/_stats").unwrap();
    let sent = ats_stat(&stats, "proxy.process.http.user_agent_response_document_total_size")
        + ats_stat(&stats, "proxy.process.http.user_agent_response_header_total_size");
    let read = run.num("/bytes");
    assert!(sent >= read, "ATS sent {sent} B, strain read {read} B");
    assert!((sent - read) / 2_000 < 256 * 1024, "ATS sent {sent} B, strain read {read} B");
    drop(ats);
    origin.stop();
}

/// A counter of ATS's stats page.
fn ats_stat(stats: &str, name: &str) -> u64 {
    let at = stats.find(&format!("\"{name}\"")).unwrap_or_else(|| {
        let names: Vec<&str> = stats.split('"').filter(|s| s.contains("user_agent")).collect();
        panic!("no {name} in {names:?}")
    });
    stats[at..].split('"').nth(3).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} is not a number"))
}

#[test]
fn a_slow_read_that_completes_reads_every_byte_nginx_sent() {
    for h2 in [false, true] {
        let mut nginx = nginx_with_doc(h2);
        let proto = if h2 { "--http2 " } else { "" };
        // 20 KB at 20 KB/s: a second per response, the time spent reading in its latency.
        let run = load(&format!("{proto}--read-rate 20k -c 20 -t 1 -d 3s -T 5s"), &format!("{}small", nginx.url()));
        nginx.stop();
        let j = run.json.as_ref().unwrap();
        assert_eq!(j["errors"]["timeout"], 0, "{}", run.stdout);
        let log = slow_log(&nginx);
        let sent: u64 = log.iter().map(|l| l[1].parse::<u64>().unwrap()).sum();
        assert_eq!(log.len() as u64, run.num("/requests"), "h2 {h2}: {}", run.stdout);
        if !h2 {
            // HTTP/2's own frames are not in $bytes_sent; over HTTP/1.1 it is every byte.
            assert_eq!(sent, run.num("/bytes"), "h2 {h2}");
        }
        let p50 = run.num("/latency_us/percentiles/50");
        assert!((900_000..1_300_000).contains(&p50), "h2 {h2}: p50 {p50} us for 20 KB at 20 KB/s");
    }
}

#[test]
fn a_slow_sender_dribbles_its_headers_and_body() {
    // nginx reads a request's whole body before it passes it on (to strain's origin here), so
    // its log times how long the body took to arrive.
    let origin = Origin::start(&["-t", "1"]);
    let log = "log_format slow '$status $bytes_sent $request_length $request_time $connection_requests';";
    let body = format!("access_log slow.log slow; location / {{ proxy_pass http://{}; }}", origin.addr);
    let mut nginx = Nginx::start_http1(log, &body, false);
    // 3,000 bytes of body and ~150 of headers at 2 KB/s: about 1.3 s on the wire, which
    // nginx sees as the request's time, and strain as its latency.
    let payload = "b".repeat(3_000);
    let run = load(&format!("--write-rate 2k -c 2 -t 1 -n 4 -T 5s -X POST --body {payload}"), &nginx.url());
    nginx.stop();
    let log = slow_log(&nginx);
    assert_eq!(log.len(), 4, "{log:?}");
    for l in &log {
        assert_eq!(l[0], "200", "{l:?}");
        let length: u64 = l[2].parse().unwrap();
        assert!(length > 3_000, "{l:?}");
        let took: f64 = l[3].parse().unwrap();
        assert!(took >= 1.0, "nginx read the request in {took} s: {l:?}");
    }
    assert!(run.num("/latency_us/percentiles/50") >= 1_000_000, "{}", run.stdout);
    origin.stop();
}

#[test]
fn drop_after_length_closes_each_connection_nginx_would_keep() {
    for h2 in [false, true] {
        let mut nginx = nginx_with_doc(h2);
        let proto = if h2 { "--http2 " } else { "" };
        let run = load(&format!("{proto}--drop-after-length -n 200 -c 4 -t 1"), &format!("{}small", nginx.url()));
        nginx.stop();
        assert_eq!(run.num("/requests"), 200);
        // A connection retired once -n's 200 are sent is not replaced, nor opened later if it
        // was queued before. One whose connect had already started when another slot sent the
        // last requests closes unused: at most one a slot (CI saw 201 and 203 of -c 4).
        let opened = run.num("/connections_opened");
        assert!((200..=204).contains(&opened), "h2 {h2}: {opened} connections for 200 requests");
        let log = slow_log(&nginx);
        assert_eq!(log.len(), 200);
        assert!(log.iter().all(|l| l[4] == "1"), "h2 {h2}: a connection carried more than one request");
    }
    // Without it nginx keeps them: four connections carry the 200.
    let mut nginx = nginx_with_doc(false);
    let run = load("-n 200 -c 4 -t 1", &format!("{}small", nginx.url()));
    nginx.stop();
    assert_eq!(run.num("/connections_opened"), 4);
}

#[test]
fn every_protocol_reads_at_its_rate() {
    // 4 connections at 10 KB/s for 2 s read at most 4 x 21,000 bytes (slices of 500 bytes,
    // the first at once), over HTTP/1.1 and HTTP/2 over TLS, HTTP/3, WebSocket and
    // Server-Sent Events alike, where each could read far more.
    let cap = 4 * (10_000 * 2 + 1_000);
    let within = |what: &str, run: &Run| {
        let read = run.num("/bytes") as usize;
        assert!(read <= cap && read > cap * 3 / 4, "{what}: read {read} B, the rate allows {cap}: {}", run.stdout);
    };
    let origin = Origin::start(&["-t", "1", "--tls", "--http3"]);
    let url = format!("https://localhost:{}/d/1/1000000", origin.addr.port());
    for proto in ["--http1.1", "--http2"] {
        let run = strain_at(&format!("{proto} -k --read-rate 10k -c 4 -t 1 -d 2s -T 2s"), &url);
        within(proto, &run);
    }
    // HTTP/3's bytes are the datagrams': QUIC's own framing, and each stream's window (the
    // read rate's worth) that the server may fill ahead of the reader.
    let run = strain_at("--http3 -k --read-rate 10k -c 4 -t 1 -d 2s -T 2s", &url);
    let read = run.num("/bytes") as usize;
    let window = 4 * 10_000;
    assert!(read <= (cap + window) * 21 / 20 && read > cap * 3 / 4, "h3: read {read} B: {}", run.stdout);
    origin.stop();
    let origin = Origin::start(&["-t", "1", "--ws", "--ws-broadcast", "2000", "--sse", "1000", "--sse-size", "100"]);
    let ws = format!("ws://{}/", origin.addr);
    let run = strain(&["ws", "--listen-only", "--read-rate", "10k", "-c", "4", "-t", "1", "-d", "2s", &ws]);
    within("ws", &run);
    let run = strain(&["sse", "--read-rate", "10k", "-c", "4", "-t", "1", "-d", "2s", &origin.url()]);
    within("sse", &run);
    origin.stop();
}

#[test]
fn a_rate_of_nothing_is_refused_and_nothing_is_sent() {
    let origin = Origin::start(&["-t", "1"]);
    for (flag, value) in [("--read-rate", "0"), ("--write-rate", "fast"), ("--read-rate", "-1k")] {
        let run = crate::harness::strain_raw(&[&format!("{flag}={value}"), "-d", "1s", &origin.url()]);
        assert_eq!(run.code, 2, "{flag} {value}: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(
            lines[0]
                .contains(&format!("'{value}' is not a byte rate (bytes per second above 0, like 1k, 10kB/s or 1M)")),
            "{}",
            run.stderr
        );
    }
    assert_eq!(origin.stop().requests, 0);
}
