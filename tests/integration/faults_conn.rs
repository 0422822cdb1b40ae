//! The connection-level fault suite: servers written here, each misbehaving one way. For each,
//! the expected error category is counted, nothing panics, the run ends within duration plus
//! timeout, and the totals add up: every request sent was answered, failed or timed out.

use std::io::Read;
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use crate::harness::{exclusive, free_port, read_head, script, send, strain, strain_at, FakeServer, Origin, Run};

/// Start-up and exit of a debug binary on a busy machine, beyond duration plus timeout.
const SLACK: Duration = Duration::from_millis(1200);

/// The run exited normally and every request it sent is accounted for.
pub fn assert_accounted(run: &Run) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let lost: u64 = ["read", "write", "parse", "timeout"].iter().map(|k| run.num(&format!("/errors/{k}"))).sum();
    assert_eq!(run.num("/sent"), run.num("/requests") + lost, "{}", pretty(run));
}

/// The run took no longer than its duration plus one timeout (plus process start-up).
pub fn assert_on_time(run: &Run, duration: Duration, timeout: Duration) {
    assert!(run.elapsed < duration + timeout + SLACK, "took {:?}", run.elapsed);
}

/// Runs strain with one thread, `connections`, duration `d`, timeout `t` and `extra` flags
/// against a `server` that answers nothing whole: the run accounts for every request, ends on
/// time, and counted none answered.
fn none_answered(server: &FakeServer, connections: u32, d: Duration, t: Duration, extra: &str) -> Run {
    let line = format!("-t 1 -c {connections} -d {}ms -T {}ms {extra}", d.as_millis(), t.as_millis());
    let run = strain_at(&line, &server.url());
    assert_accounted(&run);
    assert_on_time(&run, d, t);
    assert_eq!(run.num("/requests"), 0);
    run
}

/// The counters of a run's JSON, for failure messages.
fn pretty(run: &Run) -> String {
    let j = run.json.as_ref().map(|j| {
        let pick = |k: &str| j.get(k).cloned().unwrap_or_default();
        serde_json::json!({"sent": pick("sent"), "requests": pick("requests"), "errors": pick("errors"),
            "connections_opened": pick("connections_opened")})
    });
    format!("{j:?}")
}

/// Sets `SO_LINGER` to zero, so closing the socket sends RST instead of FIN.
fn linger_zero(s: &TcpStream) {
    socket2::SockRef::from(s).set_linger(Some(Duration::ZERO)).expect("setsockopt(SO_LINGER)");
}

fn reset_mid_body(mut s: TcpStream) {
    if read_head(&mut s) {
        send(&mut s, b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nthe first part of the body");
        linger_zero(&s);
    }
}

#[test]
fn a_close_in_the_headers_or_a_reset_in_the_body_is_a_read_error() {
    let (d, t) = (Duration::from_millis(600), Duration::from_secs(1));
    let close_mid_headers = FakeServer::answering_once(b"HTTP/1.1 200 OK\r\nContent-Len");
    for server in [close_mid_headers, FakeServer::serving(reset_mid_body)] {
        let run = none_answered(&server, 4, d, t, "");
        let read = run.num("/errors/read");
        assert!(read > 20, "{}", pretty(&run));
        // Every request was lost the same way; each one cost its connection.
        assert_eq!(read, run.num("/sent"), "{}", pretty(&run));
        assert!(run.num("/connections_opened") >= read, "{}", pretty(&run));
    }
}

/// A HTTP/1.0 body with no length, larger than the client's read buffer: it ends at close.
const CLOSE_DELIMITED_BODY: usize = 150_000;
const HTTP10_HEAD: &[u8] = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n";

#[test]
fn close_delimited_http10_bodies_are_whole_responses() {
    let mut response = HTTP10_HEAD.to_vec();
    response.resize(HTTP10_HEAD.len() + CLOSE_DELIMITED_BODY, b'x');
    let server = FakeServer::answering_once(&response);
    let run = strain(&["-t", "1", "-c", "4", "-d", "600ms", &server.url()]);
    assert_accounted(&run);
    let requests = run.num("/requests");
    assert!(requests > 20, "{}", pretty(&run));
    assert_eq!(run.num("/sent"), requests);
    assert_eq!(run.num("/status/200"), requests);
    assert_eq!(run.num("/bytes"), requests * (HTTP10_HEAD.len() + CLOSE_DELIMITED_BODY) as u64);
    assert!(run.num("/connections_opened") >= requests);
}

/// Writes a response one byte a second; the client times out long before it is whole.
fn one_byte_per_second(mut s: TcpStream) {
    if read_head(&mut s) {
        for b in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" {
            if std::io::Write::write_all(&mut s, &[*b]).is_err() {
                return;
            }
            thread::sleep(Duration::from_secs(1));
        }
    }
}

/// Accepts and holds the connection without reading a byte.
fn never_read(s: TcpStream) {
    thread::sleep(Duration::from_secs(4));
    drop(s);
}

/// Reads the request and never answers.
fn never_answer(mut s: TcpStream) {
    read_head(&mut s);
    let mut sink = [0u8; 64];
    // Until the client gives up (read timeout of the raw server: 5 s).
    while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
}

#[test]
fn slow_deaf_and_silent_servers_time_requests_out() {
    let (d, t) = (Duration::from_millis(1500), Duration::from_millis(400));
    for handler in [one_byte_per_second as fn(TcpStream), never_read, never_answer] {
        let run = none_answered(&FakeServer::serving(handler), 3, d, t, "");
        // Three connections, each timing out about every 400 ms for 1.5 s, and the last ones
        // sent before the end.
        let timeouts = run.num("/errors/timeout");
        assert!((6..=15).contains(&timeouts), "{}", pretty(&run));
        assert_eq!(timeouts, run.num("/sent"), "{}", pretty(&run));
    }
}

#[test]
fn a_request_the_server_never_reads_times_out_while_being_written() {
    // 4 MB per request is more than loopback buffers hold, so the write itself stalls.
    let (_dir, path) = script("wrk.method = 'POST'\nwrk.body = string.rep('x', 4 * 1024 * 1024)\n");
    let server = FakeServer::serving(never_read);
    let run = none_answered(&server, 2, Duration::from_secs(1), Duration::from_millis(300), &format!("-s {path}"));
    assert!(run.num("/errors/timeout") >= 4, "{}", pretty(&run));
    assert_eq!(run.num("/errors/write"), 0, "{}", pretty(&run));
}

/// Connections per second the churn run must at least reach to count as churn. The speed
/// itself (10k+ a second with the release build, beside wrk's) is the benchmark's to measure
/// (`bench/connections.py --churn`): this debug build shares two cores with the origin and the
/// other tests, so the test asserts that nothing is lost at a high rate, not how high.
const CHURN_PER_S: f64 = 4_000.0;

/// One churn run: every response closes its connection. Returns connections opened per second.
fn churn() -> f64 {
    // Short: every connection leaves a TIME_WAIT entry for 60 s, and ports 32768-60999 are
    // all there is (loopback reuses them only once they are a second old).
    let (run, served) =
        Origin::start(&["-t", "1", "--keepalive", "1"]).run_then_stop(&["-t", "1", "-c", "48", "-d", "2s"]);
    assert_accounted(&run);
    for kind in ["connect", "read", "write", "timeout", "parse", "status"] {
        assert_eq!(run.num(&format!("/errors/{kind}")), 0, "{kind}: {}", pretty(&run));
    }
    let requests = run.num("/requests");
    let opened = run.num("/connections_opened");
    // One request per connection; a connection still opening at the end carried none.
    assert!((requests..=requests + 48).contains(&opened), "{}", pretty(&run));
    assert_eq!(served.requests, requests);
    let secs = run.json.as_ref().and_then(|j| j["duration_s"].as_f64()).unwrap();
    opened as f64 / secs
}

#[test]
fn connection_close_on_every_response_churns_thousands_of_connections_per_second_losing_nothing() {
    let _alone = exclusive();
    // Connection set-up is kernel work that other processes on the machine compete for: a
    // second run forgives one disturbed by them, never a slow strain.
    let first = churn();
    if first < CHURN_PER_S {
        let second = churn();
        assert!(second >= CHURN_PER_S, "only {first:.0} then {second:.0} connections/s");
    }
}

#[test]
fn a_server_restart_costs_connect_errors_then_the_run_continues() {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let first = Origin::start_on(&listen, &["-t", "1"]);
    let url = first.url();
    let load =
        thread::spawn(move || strain(&["-t", "1", "-c", "4", "-d", "3s", "-T", "1s", "--interval", "250ms", &url]));
    thread::sleep(Duration::from_millis(1000));
    let before = first.stop();
    thread::sleep(Duration::from_millis(700));
    let second = Origin::start_on(&listen, &["-t", "1"]);
    let run = load.join().unwrap();
    let after = second.stop();

    assert_accounted(&run);
    assert_on_time(&run, Duration::from_secs(3), Duration::from_secs(1));
    assert!(before.requests > 100 && after.requests > 100, "{before:?} {after:?}");
    // The stop may cut a response the origin had counted, but strain never counts one more.
    let requests = run.num("/requests");
    let served = before.requests + after.requests;
    assert!((served.saturating_sub(4)..=served).contains(&requests), "{requests} vs {served}");
    // While nothing listened, every connect was refused and retried.
    assert!(run.num("/errors/connect") >= 4, "{}", pretty(&run));
    assert!(run.num("/connections_opened") >= 8, "{}", pretty(&run));
    // The series shows the outage and the recovery: a quiet interval, then answers again.
    let rows = run.json.as_ref().unwrap()["intervals"].as_array().unwrap().clone();
    let counts: Vec<u64> = rows.iter().map(|r| r["requests"].as_u64().unwrap()).collect();
    let quiet = counts.iter().position(|&n| n == 0).unwrap_or_else(|| panic!("no outage in {counts:?}"));
    assert!(counts[..quiet].iter().any(|&n| n > 0), "{counts:?}");
    assert!(counts[quiet..].iter().any(|&n| n > 0), "no recovery in {counts:?}");
}
