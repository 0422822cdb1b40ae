//! Every error category, provoked for real.

use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use crate::harness::{read_head, strain, FakeServer, Origin};

#[test]
fn closed_port_counts_connect_errors_and_says_nothing_connected() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let run = strain(&["-t", "1", "-c", "2", "-d", "1s", &format!("http://127.0.0.1:{port}/")]);
    // Nothing was measured: the run failed (exit code 1), and the report is still printed.
    assert_eq!(run.code, 1);
    assert!(run.num("/errors/connect") >= 2, "{:?}", run.json);
    assert_eq!(run.num("/requests"), 0);
    assert!(run.stdout.contains("  Socket errors: connect "), "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!("no connection to 127.0.0.1:{port} succeeded")) && run.stderr.contains("refused"),
        "{}",
        run.stderr
    );
    // The run went on for its duration, retrying, and no nan reached the report.
    assert!(run.elapsed >= Duration::from_millis(950), "{:?}", run.elapsed);
    assert!(!run.stdout.contains("nan"), "{}", run.stdout);
}

#[test]
fn server_closing_mid_body_counts_read_errors() {
    let server = FakeServer::answering_once(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part of it");
    let run = strain(&["-t", "1", "-c", "2", "-d", "500ms", &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.num("/errors/read") > 10, "{:?}", run.json);
    assert_eq!(run.num("/requests"), 0);
    assert!(run.stdout.contains("  Socket errors: connect 0, read "), "{}", run.stdout);
}

fn never_answer(mut s: TcpStream) {
    read_head(&mut s);
    std::thread::sleep(Duration::from_secs(6));
}

#[test]
fn silent_server_counts_timeouts_and_the_run_ends_on_time() {
    let server = FakeServer::serving(never_answer);
    let run = strain(&["-t", "1", "-c", "3", "-d", "1500ms", "-T", "400ms", &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Three connections time out about every 400 ms.
    let timeouts = run.num("/errors/timeout");
    assert!((6..=15).contains(&timeouts), "{timeouts} timeouts");
    assert_eq!(run.num("/requests"), 0);
    // Duration plus at most one timeout for requests in flight at the end.
    assert!(run.elapsed < Duration::from_millis(1500 + 400 + 600), "took {:?}", run.elapsed);
    assert!(run.stdout.contains(", timeout "), "{}", run.stdout);
}

#[test]
fn status_500_is_counted_as_non_2xx() {
    let (run, served) = Origin::start(&["--status", "500"]).run_then_stop(&["-t", "1", "-c", "2", "-d", "500ms"]);
    let requests = run.num("/requests");
    assert_eq!(served.requests, requests);
    assert_eq!(run.num("/status/500"), requests);
    assert_eq!(run.num("/errors/status"), requests);
    assert!(run.stdout.contains(&format!("  Non-2xx or 3xx responses: {requests}\n")), "{}", run.stdout);
}

#[test]
fn malformed_responses_are_parse_errors_not_panics() {
    let bad_status_line: &[u8] = b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n";
    let bad_chunk_size = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n";
    for response in [bad_status_line, bad_chunk_size] {
        let server = FakeServer::answering_each(response);
        let run = strain(&["-t", "1", "-c", "2", "-d", "500ms", &server.url()]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let parse = run.num("/errors/parse");
        assert!(parse > 10, "{:?}", run.json);
        assert_eq!(run.num("/requests"), 0);
        // wrk's text line counts them as read errors.
        assert!(run.stdout.contains(&format!("read {parse},")), "{}", run.stdout);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}
