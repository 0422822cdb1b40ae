//! `strain origin` over HTTP/2 (h2c with prior knowledge): strain's own client and nghttp2's
//! h2load against it, with the origin's served counts, documents and 304s, delays and a known
//! capacity, the keep-alive limit as GOAWAY, aborts as resets, and malformed input.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::{args, load, run_program, self_signed, Origin, Run};
use crate::origin_streams;

/// Runs h2load with the flags in `line` against `url`.
fn h2load(line: &str, url: &str) -> Run {
    let mut a = args(line);
    a.push(url);
    let run = run_program("h2load", &a);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

/// The number before `what` in h2load's summary (`100 succeeded`, `(100000) data`).
fn h2load_count(run: &Run, what: &str) -> u64 {
    let at = run.stdout.find(what).unwrap_or_else(|| panic!("no {what:?} in {}", run.stdout));
    let before = run.stdout[..at].trim_end().trim_end_matches(')');
    let digits: String = before.chars().rev().take_while(char::is_ascii_digit).collect();
    digits.chars().rev().collect::<String>().parse().unwrap_or_else(|_| panic!("no count before {what:?}"))
}

/// The numbers before each of `whats` in h2load's summary (see [`h2load_count`]).
fn h2load_counts<const N: usize>(run: &Run, whats: [&str; N]) -> [u64; N] {
    whats.map(|what| h2load_count(run, what))
}

#[test]
fn strains_http2_counts_equal_what_the_origin_served() {
    let origin = Origin::start(&["-t", "2"]);
    let run = load("--http2 -m 10 -c 4 -t 1 -d 2s", &origin.url());
    let j = run.json.as_ref().unwrap();
    assert_eq!(j["sent"], j["requests"], "{}", run.stdout);
    assert_eq!(j["errors"]["read"], 0, "{}", run.stdout);
    assert_eq!(j["http2"]["protocol"], "h2c");
    let served = origin.stop();
    assert_eq!(served.requests, run.num("/requests"));
    assert_eq!(served.connections, 4, "one connection each, kept");
    assert!(served.requests > 1000, "{}", run.stdout);
}

#[test]
fn documents_over_h2_have_their_length_and_conditional_requests_get_304s() {
    let origin = Origin::start(&["-t", "1", "--ims-not-modified", "1"]);
    let url = origin.url_of("/d/1/1000");
    let run = h2load("-n 100 -c 2 -m 5", &url);
    assert_eq!(h2load_counts(&run, ["succeeded", "data"]), [100, 100 * 1000], "{}", run.stdout);
    // A large document (several DATA frames, above the output limit) arrives whole.
    let big = origin.url_of("/d/2/300000");
    let run = h2load("-n 4 -c 1 -m 2", &big);
    assert_eq!(h2load_counts(&run, ["succeeded", "data"]), [4, 4 * 300_000], "{}", run.stdout);
    // Every conditional request is answered 304, without a body.
    let run = h2load("-n 50 -c 1 -m 5 -H if-none-match:\"1-1000\"", &url);
    assert!(run.stdout.contains("status codes: 0 2xx, 50 3xx"), "{}", run.stdout);
    assert_eq!(h2load_count(&run, "data"), 0, "{}", run.stdout);
    assert_eq!(origin.stop().requests, 154);
}

#[test]
fn stats_answer_over_h2_and_are_not_counted() {
    let origin = Origin::start(&["-t", "1"]);
    let run = h2load("-n 20 -c 1 -m 4", &origin.url());
    assert_eq!(h2load_count(&run, "succeeded"), 20, "{}", run.stdout);
    let stats = origin.url_of("/_strain/stats");
    let run = run_program("nghttp", &[stats.as_str()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json: serde_json::Value =
        serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    assert_eq!(json["requests"], 20);
    assert_eq!(json["ok"], 20);
    assert_eq!(origin.stop().requests, 20);
}

#[test]
fn a_delay_holds_each_stream_not_the_connection() {
    // Eight streams at a time, each answered after 100 ms: about 80 requests in a second.
    origin_streams::delay_holds_each_stream(Origin::start, "--http2", 100, 60..=100);
}

#[test]
fn a_known_capacity_holds_over_h2() {
    let run = origin_streams::known_capacity_holds(Origin::start, "--http2");
    assert_eq!(run.num("/errors/timeout"), 0);
}

#[test]
fn the_keepalive_limit_is_a_goaway_and_the_client_sends_the_rest_again() {
    let origin = Origin::start(&["-t", "1", "--keepalive", "50"]);
    let run = load("--http2 -m 8 -c 2 -t 1 -d 1s", &origin.url());
    let j = run.json.as_ref().unwrap();
    assert_eq!(j["sent"], j["requests"], "{}", run.stdout);
    let requests = run.num("/requests");
    assert!(run.num("/http2/goaways") > 0, "{}", run.stdout);
    let served = origin.stop();
    assert_eq!(served.requests, requests);
    // Exactly 50 per connection, but for the ones open at the end.
    assert!(served.connections >= requests / 50, "{} connections for {requests}", served.connections);
    assert!(served.connections <= requests / 50 + 2, "{} connections for {requests}", served.connections);
}

#[test]
fn an_aborted_document_resets_its_stream_and_keeps_the_connection() {
    let origin = Origin::start(&["-t", "1", "--abort-rate", "1"]);
    let run = h2load("-n 20 -c 1 -m 4", &origin.url_of("/d/3/5000"));
    assert_eq!(h2load_counts(&run, ["failed", "succeeded"]), [20, 0], "{}", run.stdout);
    // Each broke off after its head and part of its body, as a cut HTTP/1 response does.
    assert!(run.stdout.contains("status codes: 20 2xx"), "{}", run.stdout);
    let data = h2load_count(&run, "data");
    assert!(data > 0 && data < 20 * 5000, "{data} bytes of body\n{}", run.stdout);
    let served = origin.stop();
    assert_eq!(served.requests, 20);
    assert_eq!(served.connections, 1, "resets, not closed connections");
}

/// Sends `bytes` on a new connection to `origin` and reads until it closes: true if it closed
/// within two seconds.
fn closes_after(origin: &Origin, bytes: &[u8]) -> bool {
    let mut s = TcpStream::connect(origin.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(bytes).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            // A reset is a close too.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn malformed_http2_closes_that_connection_and_the_origin_serves_on() {
    let origin = Origin::start(&["-t", "1"]);
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let mut garbage = preface.to_vec();
    garbage.extend_from_slice(b"this is not a frame, not even close to one\r\n\r\n");
    assert!(closes_after(&origin, &garbage), "garbage after the preface");
    // A SETTINGS frame, then HEADERS for stream 1 whose block indexes past both tables.
    let mut bad_hpack = preface.to_vec();
    bad_hpack.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    bad_hpack.extend_from_slice(&[0, 0, 3, 1, 0x05, 0, 0, 0, 1, 0xff, 0xff, 0x7f]);
    assert!(closes_after(&origin, &bad_hpack), "bad HPACK");
    // A preface cut short by garbage.
    assert!(closes_after(&origin, b"PRI * HTTP/9.9\r\n\r\n"), "a bad preface");
    let run = load("--http2 -m 4 -c 2 -t 1 -d 500ms", &origin.url());
    assert!(run.num("/requests") > 100, "{}", run.stdout);
    assert_eq!(origin.stop().requests, run.num("/requests"));
}

#[test]
fn an_h2c_upgrade_answers_101_and_the_request_as_stream_1() {
    let origin = Origin::start(&["-t", "1"]);
    let doc = origin.url_of("/d/4/1000");
    // nghttp -u upgrades on its first request, then asks the rest as further streams.
    let root = origin.url();
    let run = run_program("nghttp", &["-u", "-s", doc.as_str(), root.as_str()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("  1 ") && run.stdout.contains(" 200 "), "{}", run.stdout);
    let run = run_program("nghttp", &["-u", "-v", doc.as_str()]);
    assert!(run.stdout.contains("HTTP/1.1 101 Switching Protocols"), "{}", run.stdout);
    assert!(run.stdout.contains("recv DATA frame <length=1000, flags=0x01, stream_id=1>"), "{}", run.stdout);
    // An upgrade behind a pipelined request is ignored: both answered over HTTP/1.1.
    let upgrade = "GET / HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: \r\n\r\n";
    let mut s = TcpStream::connect(origin.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(format!("GET / HTTP/1.1\r\n\r\n{upgrade}").as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.windows(13).filter(|w| w == b"hello, world\n").count() < 2 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got.windows(15).filter(|w| w == b"HTTP/1.1 200 OK").count(), 2, "{}", String::from_utf8_lossy(&got));
    // Settings that are not base64url end the connection.
    let bad = upgrade.replace("HTTP2-Settings: ", "HTTP2-Settings: !!");
    assert!(closes_after(&origin, bad.as_bytes()), "bad HTTP2-Settings");
    // Three through nghttp (its first run asked two) and two over HTTP/1.1; the request with
    // bad settings was never answered.
    assert_eq!(origin.stop().requests, 5);
}

#[test]
fn tls_serves_h2_and_http1_by_alpn_with_a_certificate_made_at_start() {
    let origin = Origin::start(&["-t", "1", "--tls"]);
    let url = origin.url();
    let h2 = load("--http2 -k -m 4 -c 2 -t 1 -d 1s", &url);
    assert_eq!(h2.json.as_ref().unwrap()["http2"]["protocol"], "h2");
    let h1 = load("--http1.1 -k -c 2 -t 1 -d 1s", &url);
    assert_eq!(h1.json.as_ref().unwrap()["protocol"], "http/1.1");
    for run in [&h2, &h1] {
        let j = run.json.as_ref().unwrap();
        assert_eq!(j["sent"], j["requests"], "{}", run.stdout);
        assert!(run.num("/requests") > 100, "{}", run.stdout);
    }
    // A large document over TLS and HTTP/2: many records and DATA frames, every byte there.
    let doc = origin.url_of("/d/7/300000");
    let run = h2load("-n 10 -c 2 -m 2", &doc);
    assert!(run.stdout.contains("Application protocol: h2"), "{}", run.stdout);
    assert_eq!(h2load_counts(&run, ["succeeded", "data"]), [10, 10 * 300_000], "{}", run.stdout);
    // Plain HTTP where a TLS ClientHello belongs closes that connection only.
    assert!(closes_after(&origin, b"GET / HTTP/1.1\r\n\r\n"), "not TLS");
    let served = origin.stop();
    assert_eq!(served.requests, h2.num("/requests") + h1.num("/requests") + 10);
    assert_eq!(served.connections, 2 + 2 + 2 + 1);
}

#[test]
fn tls_takes_a_certificate_and_key_from_pem_files() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path(), &["localhost"]);
    let origin = Origin::start(&["-t", "1", "--tls", "--cert", &cert, "--key", &key]);
    let run = load("-k -c 1 -t 1 -d 300ms", &origin.url());
    assert_eq!(origin.stop().requests, run.num("/requests"));
    // A key file that holds no key is refused before the server says it listens.
    let bad =
        crate::harness::strain_raw(&["origin", "--listen", "127.0.0.1:0", "--tls", "--cert", &cert, "--key", &cert]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert_eq!(bad.stdout, "");
    assert!(bad.stderr.starts_with("strain: cannot read a private key from "), "{}", bad.stderr);
}

#[test]
fn a_huge_document_is_made_as_it_is_sent() {
    let origin = Origin::start(&["-t", "1"]);
    // 100 GB: a client that gives up after a moment must not have made the origin hold it.
    let url = origin.url_of("/d/1/100000000000");
    let run = load("--http2 -m 1 -c 1 -t 1 -d 300ms -T 300ms", &url);
    assert_eq!(run.num("/errors/timeout"), 1, "{}", run.stdout);
    let status = std::fs::read_to_string(format!("/proc/{}/status", origin.pid())).unwrap();
    let rss_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    assert!(rss_kb < 64 * 1024, "origin RSS {rss_kb} kB");
    let run = load("--http2 -m 2 -c 1 -t 1 -d 300ms", &origin.url());
    assert!(run.num("/requests") > 10, "{}", run.stdout);
}

#[test]
fn the_byte_rate_holds_over_h2() {
    let origin = Origin::start(&["-t", "1", "--byte-rate", "200000"]);
    // 100 kB of document at 200 kB/s: half a second, not less.
    let url = origin.url_of("/d/5/100000");
    let run = h2load("-n 1 -c 1", &url);
    assert_eq!(h2load_count(&run, "succeeded"), 1, "{}", run.stdout);
    let ms = run.elapsed.as_secs_f64() * 1000.0;
    assert!((450.0..1500.0).contains(&ms), "{ms} ms");
}

#[test]
fn a_stall_holds_h2_streams_and_answers_them_after() {
    let run = origin_streams::stall_holds_streams(Origin::start, "--http2", "300ms");
    let j = run.json.as_ref().unwrap();
    assert_eq!(j["sent"], j["requests"], "{}", run.stdout);
}
