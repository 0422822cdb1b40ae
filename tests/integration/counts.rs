//! What strain counts equals what the server saw, exactly.

use crate::harness::{strain, Nginx, Origin};

#[test]
fn origin_sees_exactly_the_requests_strain_reports() {
    let (run, served) = Origin::start(&["--body-size", "100"]).run_then_stop(&["-t", "2", "-c", "20", "-d", "2s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = run.num("/requests");
    assert!(requests > 1000, "only {requests} requests");
    assert_eq!(served.requests, requests);
    assert_eq!(served.connections, 20);
    assert_eq!(run.num("/connections_opened"), 20);
    // Every byte the origin wrote was read, and nothing else.
    assert_eq!(run.num("/bytes"), served.bytes_out);
    assert_eq!(run.num("/status/200"), requests);
    assert_eq!(run.num("/errors/read") + run.num("/errors/timeout") + run.num("/errors/parse"), 0);
    // The text report shows the same count.
    assert!(run.stdout.contains(&format!("  {requests} requests in ")), "{}", run.stdout);
}

#[test]
fn nginx_sees_exactly_the_requests_strain_reports() {
    let mut nginx = Nginx::start("keepalive_requests 1000000; location / { return 200 \"hello world\\n\"; }", false);
    let (run, log) = nginx.run_then_stop("-t 2 -c 10 -d 2s");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(log.len() as u64, run.num("/requests"));
    assert!(log.iter().all(|&(status, _)| status == 200));
    let bytes: u64 = log.iter().map(|&(_, b)| b).sum();
    assert_eq!(run.num("/bytes"), bytes);
}

#[test]
fn server_closing_connections_does_not_stop_the_run() {
    // nginx closes every connection after 7 requests with `Connection: close`.
    let mut nginx = Nginx::start("keepalive_requests 7; location / { return 200 \"ok\\n\"; }", false);
    let (run, log) = nginx.run_then_stop("-t 1 -c 4 -d 1s");
    let requests = run.num("/requests");
    assert_eq!(log.len() as u64, requests);
    assert_eq!(run.num("/errors/read"), 0);
    // Each connection carried at most 7 requests.
    assert!(run.num("/connections_opened") >= requests / 7, "{:?}", run.json);
}

#[test]
fn http10_close_after_each_response_is_followed() {
    // A HTTP/1.0-style close is exercised through nginx elsewhere; here the header path.
    let (run, served) =
        Origin::start(&[]).run_then_stop(&["-t", "1", "-c", "2", "-d", "1s", "-H", "Connection: close"]);
    let requests = run.num("/requests");
    assert!(requests > 100);
    assert_eq!(run.num("/errors/read") + run.num("/errors/timeout") + run.num("/errors/connect"), 0, "{:?}", run.json);
    assert_eq!(served.requests, requests);
    // Connections still connecting when the test ended were closed before use.
    let opened = run.num("/connections_opened");
    assert!((opened..=opened + 2).contains(&served.connections), "{served:?} vs {opened}");
}

#[test]
fn chunked_and_read_to_close_bodies_complete() {
    use crate::harness::FakeServer;
    // Chunked with an extension and a trailer: 83 bytes per response, all on kept-alive connections.
    let server = FakeServer::answering_each(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nT: 1\r\n\r\n",
    );
    let run = strain(&["-t", "1", "-c", "2", "-d", "300ms", &server.url()]);
    let requests = run.num("/requests");
    assert!(requests > 100, "{:?}", run.json);
    assert_eq!(run.num("/bytes"), requests * 83);
    assert_eq!(run.num("/connections_opened"), 2);
    assert_eq!(run.num("/errors/read") + run.num("/errors/parse"), 0);

    // No length: each response ends at close, and the connection is replaced.
    let server = FakeServer::answering_once(b"HTTP/1.0 200 OK\r\n\r\nthe body ends when the connection does");
    let run = strain(&["-t", "1", "-c", "2", "-d", "300ms", &server.url()]);
    let requests = run.num("/requests");
    assert!(requests > 20, "{:?}", run.json);
    assert_eq!(run.num("/bytes"), requests * 57);
    assert_eq!(run.num("/errors/read") + run.num("/errors/parse"), 0);
    assert!(run.num("/connections_opened") >= requests);
}
