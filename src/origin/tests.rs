//! End-to-end tests over loopback: a real server thread, `std` clients, exact bytes.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::*;

const TIMEOUT: Duration = Duration::from_secs(10);
const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nhello, world\n";
const OK_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\n";
const OK_CLOSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nhello, world\n";
const OK_KEEP10: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\n\r\nhello, world\n";
const BAD: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

struct Server {
    addr: SocketAddr,
    shutdown: Arc<AtomicBool>,
    handle: JoinHandle<Result<OriginStats, OriginError>>,
}

impl Server {
    fn start(config: OriginConfig) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let shutdown = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&shutdown);
        let handle = thread::spawn(move || run(listener, &config, &flag));
        Server { addr, shutdown, handle }
    }

    fn default() -> Server {
        Server::start(OriginConfig { threads: 2, ..OriginConfig::default() })
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).expect("connect");
        s.set_read_timeout(Some(TIMEOUT)).expect("read timeout");
        s.set_write_timeout(Some(TIMEOUT)).expect("write timeout");
        s
    }

    fn stop(self) -> OriginStats {
        self.shutdown.store(true, Ordering::Relaxed);
        let started = Instant::now();
        let stats = self.handle.join().expect("server thread").expect("server result");
        assert!(started.elapsed() < Duration::from_secs(2), "shutdown noticed late");
        stats
    }
}

fn read_exact(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    s.read_exact(&mut buf).expect("read response");
    buf
}

/// Reads until the server closes; fails on timeout.
fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read until close");
    buf
}

/// Asserts nothing more arrives for a short while (the connection stays open and quiet).
fn assert_quiet(s: &mut TcpStream) {
    s.set_read_timeout(Some(Duration::from_millis(100))).expect("read timeout");
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("expected silence, got {other:?}"),
    }
    s.set_read_timeout(Some(TIMEOUT)).expect("read timeout");
}

#[test]
fn get_gets_exact_response_and_connection_stays_open() {
    let server = Server::default();
    let mut c = server.connect();
    for _ in 0..3 {
        c.write_all(GET).unwrap();
        assert_eq!(read_exact(&mut c, OK.len()), OK);
    }
    assert_quiet(&mut c);
    drop(c);
    let stats = server.stop();
    assert_eq!((stats.connections, stats.requests), (1, 3));
    assert_eq!(stats.bytes_read, 3 * GET.len() as u64);
    assert_eq!(stats.bytes_written, 3 * OK.len() as u64);
}

#[test]
fn head_has_no_body() {
    let server = Server::default();
    let mut c = server.connect();
    c.write_all(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_exact(&mut c, OK_HEAD.len()), OK_HEAD);
    // The next response starts right after the head: no stray body bytes in between.
    c.write_all(GET).unwrap();
    assert_eq!(read_exact(&mut c, OK.len()), OK);
    assert_eq!(server.stop().requests, 2);
}

#[test]
fn pipelined_requests_get_all_responses() {
    let server = Server::default();
    let mut c = server.connect();
    c.write_all(&GET.repeat(3)).unwrap();
    assert_eq!(read_exact(&mut c, 3 * OK.len()), OK.repeat(3));
    assert_quiet(&mut c);
    assert_eq!(server.stop().requests, 3);
}

#[test]
fn deep_pipeline_with_slow_reader_is_answered_in_full() {
    // Enough output to exceed the pending bound and the socket buffers, so reading pauses
    // and resumes on writable edges.
    let server = Server::start(OriginConfig { body_size: 1000, threads: 1, ..OriginConfig::default() });
    let mut c = server.connect();
    let n = 5000;
    let mut reader = c.try_clone().unwrap();
    let writer = thread::spawn(move || {
        c.write_all(&GET.repeat(n)).unwrap();
        c
    });
    thread::sleep(Duration::from_millis(200));
    let response_len = OK_HEAD.len() - b"13\r\n".len() + b"1000\r\n".len() + 1000;
    let all = read_exact(&mut reader, n * response_len);
    let _c = writer.join().unwrap();
    assert!(all.starts_with(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n"));
    assert_quiet(&mut reader);
    assert_eq!(server.stop().requests, n as u64);
}

#[test]
fn large_body_survives_partial_writes() {
    let size = 8 * 1024 * 1024;
    let server = Server::start(OriginConfig { body_size: size, threads: 1, ..OriginConfig::default() });
    let mut c = server.connect();
    c.write_all(&GET.repeat(2)).unwrap();
    thread::sleep(Duration::from_millis(100));
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nContent-Type: text/plain\r\n\r\n");
    for _ in 0..2 {
        assert_eq!(read_exact(&mut c, head.len()), head.as_bytes());
        let body = read_exact(&mut c, size);
        assert!(body.chunks(13).all(|piece| b"hello, world\n".starts_with(piece)));
    }
    let stats = server.stop();
    assert_eq!(stats.bytes_written, 2 * (head.len() + size) as u64);
}

#[test]
fn request_split_byte_by_byte() {
    let server = Server::default();
    let mut c = server.connect();
    c.set_nodelay(true).unwrap();
    let req = b"GET /some/path?q=1 HTTP/1.1\r\nHost: x\r\nUser-Agent: test\r\n\r\n";
    for b in req.iter() {
        c.write_all(std::slice::from_ref(b)).unwrap();
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(read_exact(&mut c, OK.len()), OK);
    // A head split after a complete one, with a CRLF-only line ending in between.
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HT").unwrap();
    thread::sleep(Duration::from_millis(20));
    c.write_all(b"TP/1.1\n\n").unwrap();
    assert_eq!(read_exact(&mut c, 2 * OK.len()), OK.repeat(2));
    assert_eq!(server.stop().requests, 3);
}

#[test]
fn request_bodies_are_skipped() {
    let server = Server::default();
    let mut c = server.connect();
    c.write_all(b"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\nGET / HTTP/").unwrap();
    assert_eq!(read_exact(&mut c, OK.len()), OK);
    let chunked =
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nGET /\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n";
    c.write_all(chunked).unwrap();
    assert_eq!(read_exact(&mut c, OK.len()), OK);
    // A body split across writes, followed by a pipelined request in the same write.
    c.write_all(b"PUT / HTTP/1.1\r\nContent-Length: 6\r\n\r\nabc").unwrap();
    thread::sleep(Duration::from_millis(20));
    c.write_all(b"def").unwrap();
    c.write_all(GET).unwrap();
    assert_eq!(read_exact(&mut c, 2 * OK.len()), OK.repeat(2));
    assert_quiet(&mut c);
    assert_eq!(server.stop().requests, 4);
}

#[test]
fn expect_continue_gets_100_before_the_answer() {
    let server = Server::default();
    let mut c = server.connect();
    c.write_all(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n").unwrap();
    assert_eq!(read_exact(&mut c, CONTINUE.len()), CONTINUE);
    c.write_all(b"body").unwrap();
    assert_eq!(read_exact(&mut c, OK.len()), OK);
    server.stop();
}

#[test]
fn connection_close_closes_after_response() {
    let server = Server::default();
    let mut c = server.connect();
    c.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    assert_eq!(read_to_close(&mut c), OK_CLOSE);
    // Requests pipelined after the closing one are not answered.
    let mut c = server.connect();
    c.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(read_to_close(&mut c), OK_CLOSE);
    let stats = server.stop();
    assert_eq!((stats.connections, stats.requests), (2, 2));
}

#[test]
fn http10_closes_unless_keep_alive() {
    let server = Server::default();
    let mut c = server.connect();
    c.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(read_to_close(&mut c), OK_CLOSE);
    let mut c = server.connect();
    c.write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").unwrap();
    assert_eq!(read_exact(&mut c, OK_KEEP10.len()), OK_KEEP10);
    c.write_all(b"HEAD / HTTP/1.0\r\n\r\n").unwrap();
    let head_close = &OK_CLOSE[..OK_CLOSE.len() - 13];
    assert_eq!(read_to_close(&mut c), head_close);
    let stats = server.stop();
    assert_eq!((stats.connections, stats.requests), (2, 3));
}

#[test]
fn malformed_requests_get_400_and_close() {
    let server = Server::default();
    let bad: &[&[u8]] = &[
        b"garbage\r\n\r\n",
        b"\x00\xff\xfe binary junk \r\n\r\n",
        b"GET / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
        b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
    ];
    for (i, req) in bad.iter().enumerate() {
        let mut c = server.connect();
        c.write_all(req).unwrap();
        assert_eq!(read_to_close(&mut c), BAD, "case {i}");
    }
    // A valid request before the garbage is still answered.
    let mut c = server.connect();
    c.write_all(b"GET / HTTP/1.1\r\n\r\nnonsense\r\n\r\n").unwrap();
    assert_eq!(read_to_close(&mut c), [OK, BAD].concat());
    let stats = server.stop();
    assert_eq!((stats.connections, stats.requests), (bad.len() as u64 + 1, 1));
}

#[test]
fn oversized_heads_get_400() {
    let server = Server::default();
    // One read's worth at a time, with no blank line ever arriving.
    let mut c = server.connect();
    let mut req = b"GET / HTTP/1.1\r\nX: ".to_vec();
    req.resize(crate::http::MAX_HEAD_BYTES + 100, b'a');
    c.write_all(&req).unwrap();
    assert_eq!(read_to_close(&mut c), BAD);
    // More header fields than accepted.
    let mut c = server.connect();
    let mut req = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..crate::http::MAX_HEADERS + 1 {
        req.extend_from_slice(format!("H{i}: v\r\n").as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    c.write_all(&req).unwrap();
    assert_eq!(read_to_close(&mut c), BAD);
    server.stop();
}

#[test]
fn random_input_never_kills_the_server() {
    let server = Server::default();
    // xorshift: deterministic, no dependency.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabet: &[u8] = b"GET POST HTTP/1.1\r\n:0123456789abcdef;chunked Content-Length Transfer-Encoding \x00\xff";
    for _ in 0..50 {
        let mut c = server.connect();
        let len = (next() % 400) as usize;
        let junk: Vec<u8> = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
        let _ = c.write_all(&junk);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        // Either an answer and close, or just close: both end in bounded time.
        let _ = c.read_to_end(&mut sink);
    }
    let mut c = server.connect();
    c.write_all(GET).unwrap();
    assert_eq!(read_exact(&mut c, OK.len()), OK);
    server.stop();
}

#[test]
fn shutdown_returns_exact_totals_over_many_connections() {
    let server = Server::start(OriginConfig { threads: 4, ..OriginConfig::default() });
    let clients: Vec<_> = (0..8)
        .map(|i| {
            let mut c = server.connect();
            thread::spawn(move || {
                for _ in 0..(10 + i) {
                    c.write_all(GET).unwrap();
                    assert_eq!(read_exact(&mut c, OK.len()), OK);
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let stats = server.stop();
    let requests: u64 = (0..8).map(|i| 10 + i).sum();
    assert_eq!(stats.connections, 8);
    assert_eq!(stats.requests, requests);
    assert_eq!(stats.bytes_read, requests * GET.len() as u64);
    assert_eq!(stats.bytes_written, requests * OK.len() as u64);
}

#[test]
fn configured_status_and_body_size() {
    let server = Server::start(OriginConfig { body_size: 30, threads: 1, status: 503, ..OriginConfig::default() });
    let mut c = server.connect();
    c.write_all(GET).unwrap();
    let expected = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 30\r\nContent-Type: text/plain\r\n\r\nhello, world\nhello, world\nhell";
    assert_eq!(read_exact(&mut c, expected.len()), expected);
    server.stop();

    let server = Server::start(OriginConfig { body_size: 30, threads: 1, status: 204, ..OriginConfig::default() });
    let mut c = server.connect();
    c.write_all(&GET.repeat(2)).unwrap();
    let expected = b"HTTP/1.1 204 No Content\r\n\r\n";
    assert_eq!(read_exact(&mut c, 2 * expected.len()), expected.repeat(2));
    assert_quiet(&mut c);
    server.stop();
}

#[test]
fn invalid_status_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let config = OriginConfig { status: 100, ..OriginConfig::default() };
    let err = run(listener, &config, &AtomicBool::new(true)).unwrap_err();
    assert!(matches!(err, OriginError::Status(100)), "{err}");
}

#[test]
fn default_config_body_is_13_bytes() {
    let config = OriginConfig::default();
    assert_eq!((config.body_size, config.status), (13, 200));
    assert_eq!((config.stall_at, config.stall_for), (None, Duration::ZERO));
    assert!(config.threads >= 1);
}

fn stalling(at_ms: u64, for_ms: u64) -> OriginConfig {
    OriginConfig {
        threads: 2,
        stall_at: Some(Duration::from_millis(at_ms)),
        stall_for: Duration::from_millis(for_ms),
        ..OriginConfig::default()
    }
}

fn sleep_until(t: Instant) {
    thread::sleep(t.saturating_duration_since(Instant::now()));
}

#[test]
fn stall_holds_answers_until_it_ends_then_answers_in_order() {
    // The server's clock starts after this one, so its stall is [200, 700] ms or later here:
    // nothing that waited can be answered before 700 ms by this clock.
    let t0 = Instant::now();
    let server = Server::start(stalling(200, 500));
    let mut early = server.connect();
    let mut held = server.connect();
    early.write_all(GET).unwrap();
    assert_eq!(read_exact(&mut early, OK.len()), OK);
    assert!(t0.elapsed() < Duration::from_millis(200), "answered late: {:?}", t0.elapsed());

    // During the stall: a pipelined pair on an open connection, one more request on it later,
    // and a connection made during the stall.
    sleep_until(t0 + Duration::from_millis(300));
    held.write_all(&GET.repeat(2)).unwrap();
    sleep_until(t0 + Duration::from_millis(400));
    held.write_all(b"HEAD / HTTP/1.1\r\n\r\n").unwrap();
    let mut late = server.connect();
    late.write_all(GET).unwrap();
    assert_quiet(&mut late);

    let want = [OK, OK, OK_HEAD].concat();
    assert_eq!(read_exact(&mut held, want.len()), want, "answers out of order");
    let at = t0.elapsed();
    assert!(at >= Duration::from_millis(700), "answered during the stall: {at:?}");
    assert!(at < Duration::from_millis(1700), "answered long after the stall: {at:?}");
    assert_eq!(read_exact(&mut late, OK.len()), OK);
    assert!(t0.elapsed() >= Duration::from_millis(700));

    // After the stall, answers are immediate again.
    let sent = Instant::now();
    early.write_all(GET).unwrap();
    assert_eq!(read_exact(&mut early, OK.len()), OK);
    assert!(sent.elapsed() < Duration::from_millis(200), "answered late: {:?}", sent.elapsed());
    assert_quiet(&mut held);

    let stats = server.stop();
    assert_eq!((stats.connections, stats.requests), (3, 6));
}

#[test]
fn shutdown_is_noticed_during_a_stall() {
    let server = Server::start(stalling(0, 60_000));
    let mut c = server.connect();
    c.write_all(GET).unwrap();
    assert_quiet(&mut c);
    // `stop` asserts that the threads end promptly; nothing was answered, so nothing counts.
    let stats = server.stop();
    assert_eq!((stats.connections, stats.requests), (1, 0));
}

#[test]
fn stall_windows() {
    let start = Instant::now();
    let ms = Duration::from_millis;
    // stall_at and stall_for, and the window they give from the start; all in ms.
    type Row = (Option<u64>, u64, Option<(u64, u64)>);
    let rows: &[Row] =
        &[(None, 500, None), (Some(200), 0, None), (Some(200), 500, Some((200, 700))), (Some(0), 10, Some((0, 10)))];
    for &(at, length, want) in rows {
        let config = OriginConfig { stall_at: at.map(ms), stall_for: ms(length), ..OriginConfig::default() };
        let got = Stall::new(start, &config).map(|s| (s.from - start, s.until - start));
        assert_eq!(got, want.map(|(a, b)| (ms(a), ms(b))), "{at:?} {length}");
    }
    // Beyond what an Instant holds: no stall rather than a panic.
    let config = OriginConfig { stall_at: Some(Duration::MAX), stall_for: ms(1), ..OriginConfig::default() };
    assert_eq!(Stall::new(start, &config), None);

    // The poll wakes at the end of the stall, and not later than usual otherwise.
    let stall = Stall { from: start + ms(200), until: start + ms(700) };
    let rows: &[(u64, Duration)] =
        &[(0, POLL_TIMEOUT), (200, POLL_TIMEOUT), (650, ms(50)), (699, ms(1)), (700, POLL_TIMEOUT)];
    for &(now, want) in rows {
        assert_eq!(stall.poll_timeout(start + ms(now)), want, "{now}");
    }
}

// ---- Documents, cache headers and the jtest-style behaviours ----

use std::io::{BufRead, BufReader};

use crate::workload::doc::Doc;

/// A client that reads responses by their framing.
struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

/// One response as read: the head as text, the body by Content-Length.
#[derive(Debug)]
struct Response {
    head: String,
    body: Vec<u8>,
}

impl Response {
    fn status(&self) -> u16 {
        self.head[9..12].parse().expect("status code")
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

impl Client {
    fn new(server: &Server) -> Client {
        let w = server.connect();
        Client { r: BufReader::new(w.try_clone().unwrap()), w }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).unwrap();
    }

    fn get(&mut self, path: &str) {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    }

    /// Reads one response; `head_only` for a HEAD request's.
    fn response(&mut self, head_only: bool) -> Response {
        let mut head = String::new();
        while !head.ends_with("\r\n\r\n") {
            let n = self.r.read_line(&mut head).expect("read head");
            assert!(n > 0, "closed inside a head: {head:?}");
        }
        let mut r = Response { head, body: Vec::new() };
        if !head_only && r.status() != 304 {
            let len: usize = r.header("content-length").expect("content-length").parse().unwrap();
            r.body = vec![0; len];
            self.r.read_exact(&mut r.body).expect("read body");
        }
        r
    }

    /// Everything until the server closes.
    fn rest(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        self.r.read_to_end(&mut rest).expect("read until close");
        rest
    }
}

fn docs(threads: usize) -> OriginConfig {
    OriginConfig { threads, ..OriginConfig::default() }
}

/// The head a document response has with the default options.
fn doc_head(id: u64, len: u64, extra: &str) -> String {
    let date = Doc { id, len }.last_modified();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nContent-Type: text/plain\r\nCache-Control: max-age=3600\r\n\
         Last-Modified: {date}\r\nETag: \"{id}-{len}\"\r\n{extra}\r\n"
    )
}

#[test]
fn http_dates_match_the_calendar() {
    // Checked against `date -u -d @SECS`.
    let rows = [
        (1_577_836_800, "Wed, 01 Jan 2020 00:00:00 GMT"),
        (1_577_836_807, "Wed, 01 Jan 2020 00:00:07 GMT"),
        (1_583_020_800, "Sun, 01 Mar 2020 00:00:00 GMT"),
        (1_609_459_200, "Fri, 01 Jan 2021 00:00:00 GMT"),
        (1_712_345_678, "Fri, 05 Apr 2024 19:34:38 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (4_102_444_800, "Fri, 01 Jan 2100 00:00:00 GMT"),
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
    ];
    for (secs, want) in rows {
        let mut out = Vec::new();
        crate::http::date::write(secs, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), want, "{secs}");
    }
}

#[test]
fn last_modified_agrees_with_the_workload() {
    // Clients send `Doc::last_modified` in If-Modified-Since; the origin must say the same.
    let server = Server::start(docs(1));
    let mut c = Client::new(&server);
    for id in [0, 61, 86_400, 1 << 40, 251_824_463_999, 251_824_464_000, u64::MAX] {
        c.get(&format!("/d/{id}/1"));
        let doc = Doc { id, len: 1 };
        assert_eq!(c.response(false).header("last-modified"), Some(doc.last_modified().as_str()), "{id}");
    }
    drop(c);
    server.stop();
}

#[test]
fn document_paths_are_recognised() {
    let rows = [
        ("/d/1/2", Some("/d/1/2")),
        ("/site/d/1/2?x=1", Some("/site/d/1/2")),
        ("http://example.com/d/1/2?q", Some("/d/1/2")),
        ("HTTPS://example.com:8443/p/d/9/9", Some("/p/d/9/9")),
        ("/", None),
        ("/d/1/x", None),
        ("http://example.com", None),
    ];
    for (target, want) in rows {
        let path = respond::doc_path(target);
        assert_eq!(respond::document(path).map(|_| path), want, "{target}");
    }
}

#[test]
fn documents_have_exact_bodies() {
    let server = Server::start(docs(2));
    let mut c = Client::new(&server);
    // Lengths around the inline limit, shorter than the path, empty, and streamed.
    let paths = ["/d/0/0", "/d/1/1", "/d/7/4", "/d/42/64", "/d/3/8192", "/d/3/8193", "/d/99/70000", "/site/a/d/5/300"];
    for path in paths {
        c.get(path);
        let r = c.response(false);
        assert_eq!(r.status(), 200, "{path}");
        let doc = Doc::parse(path).unwrap();
        assert_eq!(r.body, doc.body(path), "{path}");
        assert_eq!(doc.check(path, &r.body), Ok(()));
    }
    // The query is not part of the body; an absolute-form target's path is.
    c.get("/d/5/300?x=1&y=2");
    assert_eq!(c.response(false).body, Doc { id: 5, len: 300 }.body("/d/5/300"));
    c.get("http://origin.test/d/6/50");
    assert_eq!(c.response(false).body, Doc { id: 6, len: 50 }.body("/d/6/50"));
    // Pipelined, mixed with the fixed response, in order.
    c.send(
        format!("{}GET /d/8/20000 HTTP/1.1\r\n\r\nGET /d/9/10 HTTP/1.1\r\n\r\n", std::str::from_utf8(GET).unwrap())
            .as_bytes(),
    );
    assert_eq!(c.response(false).body, b"hello, world\n");
    assert_eq!(c.response(false).body, Doc { id: 8, len: 20000 }.body("/d/8/20000"));
    assert_eq!(c.response(false).body, Doc { id: 9, len: 10 }.body("/d/9/10"));
    // A request body split across reads: the answer still embeds the path.
    c.send(b"POST /d/4/100 HTTP/1.1\r\nContent-Length: 6\r\n\r\nabc");
    thread::sleep(Duration::from_millis(20));
    c.send(b"def");
    assert_eq!(c.response(false).body, Doc { id: 4, len: 100 }.body("/d/4/100"));
    drop(c);
    let stats = server.stop();
    assert_eq!((stats.requests, stats.ok, stats.not_modified, stats.aborted), (14, 14, 0, 0));
}

#[test]
fn five_megabyte_document_is_streamed() {
    let server = Server::start(docs(1));
    let mut c = Client::new(&server);
    let path = "/d/12345/5000000";
    // Twice, pipelined, so the second waits behind the first's chunks.
    c.send(format!("GET {path} HTTP/1.1\r\n\r\nGET {path} HTTP/1.1\r\n\r\n").as_bytes());
    let doc = Doc::parse(path).unwrap();
    let want = doc.body(path);
    let mut head_len = 0;
    for _ in 0..2 {
        let r = c.response(false);
        assert_eq!(r.head, doc_head(12345, 5_000_000, ""));
        assert!(r.body == want, "5 MB body differs: {:?}", doc.check(path, &r.body));
        head_len = r.head.len();
    }
    drop(c);
    let stats = server.stop();
    assert_eq!(stats.bytes_written, 2 * (head_len as u64 + 5_000_000));
}

#[test]
fn document_headers_are_exact() {
    let server = Server::start(docs(1));
    let mut c = Client::new(&server);
    c.get("/d/7/20");
    assert_eq!(c.response(false).head, doc_head(7, 20, ""));
    c.send(b"HEAD /d/7/20 HTTP/1.1\r\n\r\n");
    assert_eq!(c.response(true).head, doc_head(7, 20, ""));
    c.send(b"GET /d/7/20 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(c.response(false).head, doc_head(7, 20, "Connection: keep-alive\r\n"));
    c.send(b"GET /d/7/20 HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response(false).head, doc_head(7, 20, "Connection: close\r\n"));
    server.stop();

    let config = OriginConfig {
        threads: 1,
        no_cache: true,
        content_type: ContentType::Html,
        max_age: Duration::from_secs(60),
        ..OriginConfig::default()
    };
    let server = Server::start(config);
    let mut c = Client::new(&server);
    c.get("/d/86400/5");
    let want = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/html\r\nCache-Control: no-cache\r\n\
                Last-Modified: Thu, 02 Jan 2020 00:00:00 GMT\r\nETag: \"86400-5\"\r\n\r\n";
    assert_eq!(c.response(false).head, want);
    server.stop();

    let config = OriginConfig {
        threads: 1,
        content_type: ContentType::Jpeg,
        max_age: Duration::from_secs(60),
        ..OriginConfig::default()
    };
    let server = Server::start(config);
    let mut c = Client::new(&server);
    c.get("/d/1/5");
    let r = c.response(false);
    assert_eq!(r.header("content-type"), Some("image/jpeg"));
    assert_eq!(r.header("cache-control"), Some("max-age=60"));
    server.stop();
}

#[test]
fn conditional_requests_get_304_by_probability() {
    let ims = "If-Modified-Since: Wed, 01 Jan 2020 00:00:00 GMT";
    let inm = "If-None-Match: \"3-40\"";
    let server = Server::start(OriginConfig { threads: 1, ims_not_modified: 1.0, ..OriginConfig::default() });
    let mut c = Client::new(&server);
    let not_modified = "HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=3600\r\n\
                        Last-Modified: Wed, 01 Jan 2020 00:00:03 GMT\r\nETag: \"3-40\"\r\n\r\n";
    for header in [ims, inm] {
        c.send(format!("GET /d/3/40 HTTP/1.1\r\n{header}\r\n\r\n").as_bytes());
        assert_eq!(c.response(false).head, not_modified);
    }
    // Not conditional, or not a document: the full answer.
    c.get("/d/3/40");
    assert_eq!(c.response(false).status(), 200);
    c.send(format!("GET / HTTP/1.1\r\n{ims}\r\n\r\n").as_bytes());
    assert_eq!(c.response(false).body, b"hello, world\n");
    // Nothing follows a 304: the next response starts right after its head.
    c.send(format!("GET /d/3/40 HTTP/1.1\r\n{ims}\r\n\r\nGET /d/3/40 HTTP/1.1\r\n\r\n").as_bytes());
    assert_eq!(c.response(false).head, not_modified);
    assert_eq!(c.response(false).body, Doc { id: 3, len: 40 }.body("/d/3/40"));
    drop(c);
    let stats = server.stop();
    assert_eq!((stats.requests, stats.ok, stats.not_modified), (6, 3, 3));

    let server = Server::start(OriginConfig { threads: 1, ims_not_modified: 0.0, ..OriginConfig::default() });
    let mut c = Client::new(&server);
    c.send(format!("GET /d/3/40 HTTP/1.1\r\n{ims}\r\n{inm}\r\n\r\n").as_bytes());
    assert_eq!(c.response(false).status(), 200);
    drop(c);
    assert_eq!(server.stop().not_modified, 0);
}

#[test]
fn about_half_of_conditional_requests_get_304_by_default() {
    let server = Server::start(OriginConfig { threads: 1, seed: 7, ..OriginConfig::default() });
    assert_eq!(OriginConfig::default().ims_not_modified, 0.5);
    let mut c = Client::new(&server);
    let req = "GET /d/1/10 HTTP/1.1\r\nIf-None-Match: \"1-10\"\r\n\r\n".repeat(100);
    let mut not_modified = 0;
    for _ in 0..10 {
        c.send(req.as_bytes());
        for _ in 0..100 {
            if c.response(false).status() == 304 {
                not_modified += 1;
            }
        }
    }
    // Binomial(1000, 0.5): the standard deviation is about 16.
    assert!((430..=570).contains(&not_modified), "{not_modified} of 1000");
    drop(c);
    let stats = server.stop();
    assert_eq!((stats.requests, stats.not_modified, stats.ok), (1000, not_modified, 1000 - not_modified));
}

#[test]
fn delay_holds_every_response() {
    let delay = Duration::from_millis(200);
    let server = Server::start(OriginConfig { threads: 1, delay, ..OriginConfig::default() });
    let mut c = Client::new(&server);
    for _ in 0..2 {
        let sent = Instant::now();
        c.get("/d/1/100");
        assert_eq!(c.response(false).status(), 200);
        let took = sent.elapsed();
        assert!(took >= delay && took < delay + Duration::from_millis(400), "answered after {took:?}");
    }
    // Pipelined requests arrive together, so they wait once, together, and stay in order.
    let sent = Instant::now();
    c.send(&[GET, b"GET /d/2/20000 HTTP/1.1\r\n\r\n", GET].concat());
    assert_eq!(c.response(false).body, b"hello, world\n");
    assert_eq!(c.response(false).body, Doc { id: 2, len: 20000 }.body("/d/2/20000"));
    assert_eq!(c.response(false).body, b"hello, world\n");
    let took = sent.elapsed();
    assert!(took >= delay && took < delay + Duration::from_millis(400), "answered after {took:?}");
    // Other connections are not held up by a waiting one.
    let mut slow = Client::new(&server);
    slow.get("/");
    let mut other = Client::new(&server);
    let sent = Instant::now();
    other.get("/");
    other.response(false);
    slow.response(false);
    assert!(sent.elapsed() < delay + Duration::from_millis(400));
    drop((c, slow, other));
    assert_eq!(server.stop().requests, 7);
}

#[test]
fn byte_rate_throttles_each_connection() {
    let server = Server::start(OriginConfig { threads: 1, byte_rate: Some(200_000), ..OriginConfig::default() });
    let mut c = Client::new(&server);
    let sent = Instant::now();
    c.get("/d/1/100000");
    let r = c.response(false);
    let took = sent.elapsed();
    assert_eq!(r.body, Doc { id: 1, len: 100_000 }.body("/d/1/100000"));
    // 100 KB at 200 KB/s is half a second; the first slice goes at once.
    assert!(took >= Duration::from_millis(450) && took < Duration::from_secs(2), "took {took:?}");
    // A second connection gets its own rate, at the same time.
    let mut a = Client::new(&server);
    let mut b = Client::new(&server);
    let sent = Instant::now();
    a.get("/d/2/50000");
    b.get("/d/3/50000");
    assert_eq!(a.response(false).body.len(), 50_000);
    assert_eq!(b.response(false).body.len(), 50_000);
    let took = sent.elapsed();
    assert!(took >= Duration::from_millis(200) && took < Duration::from_millis(1500), "took {took:?}");
    drop((c, a, b));
    server.stop();
}

#[test]
fn abort_rate_one_cuts_every_body_and_closes() {
    let server = Server::start(OriginConfig { threads: 2, abort_rate: 1.0, ..OriginConfig::default() });
    let mut aborted = 0;
    for path in ["/d/1/1", "/d/2/100", "/d/3/8192", "/d/4/70000"] {
        let doc = Doc::parse(path).unwrap();
        let mut c = Client::new(&server);
        // The pipelined request after it is never answered.
        c.send(format!("GET {path} HTTP/1.1\r\n\r\nGET {path} HTTP/1.1\r\n\r\n").as_bytes());
        let mut head = String::new();
        while !head.ends_with("\r\n\r\n") {
            c.r.read_line(&mut head).unwrap();
        }
        assert_eq!(head, doc_head(doc.id, doc.len, ""));
        let body = c.rest();
        assert!((body.len() as u64) < doc.len, "{path}: {} bytes", body.len());
        assert!(doc.body(path).starts_with(&body), "{path}: not a prefix");
        aborted += 1;
    }
    // Nothing to cut: empty bodies, HEAD, and the fixed response.
    let mut c = Client::new(&server);
    c.get("/d/5/0");
    assert_eq!(c.response(false).status(), 200);
    c.send(b"HEAD /d/5/10 HTTP/1.1\r\n\r\n");
    c.response(true);
    c.get("/");
    assert_eq!(c.response(false).body, b"hello, world\n");
    drop(c);
    let stats = server.stop();
    assert_eq!((stats.requests, stats.ok, stats.aborted), (aborted + 3, aborted + 3, aborted));
}

#[test]
fn keepalive_closes_after_the_nth_response() {
    let server = Server::start(OriginConfig { threads: 1, keepalive: 3, ..OriginConfig::default() });
    // Pipelined: three answers, the third says close; the rest is ignored.
    let mut c = server.connect();
    c.write_all(&GET.repeat(5)).unwrap();
    assert_eq!(read_to_close(&mut c), [OK, OK, OK_CLOSE].concat());
    // One at a time, with documents.
    let mut c = Client::new(&server);
    for i in 0..3 {
        c.get("/d/1/10");
        let r = c.response(false);
        assert_eq!(r.header("connection"), (i == 2).then_some("close"), "response {i}");
    }
    assert_eq!(c.rest(), b"");
    // The stats answer is not one of the N.
    let mut c = Client::new(&server);
    c.get("/");
    c.get("/_strain/stats");
    c.get("/");
    c.get("/");
    c.response(false);
    c.response(false);
    c.response(false);
    assert_eq!(c.response(false).header("connection"), Some("close"));
    assert_eq!(c.rest(), b"");
    let stats = server.stop();
    assert_eq!((stats.connections, stats.requests), (3, 9));
}

#[test]
fn stats_endpoint_reports_counters_and_is_not_counted() {
    let server = Server::start(OriginConfig { threads: 2, ims_not_modified: 1.0, ..OriginConfig::default() });
    let mut c = Client::new(&server);
    c.get("/");
    c.response(false);
    c.get("/d/1/10");
    c.response(false);
    c.send(b"GET /d/1/10 HTTP/1.1\r\nIf-Modified-Since: x\r\n\r\n");
    c.response(false);
    // Another connection, possibly on the other thread, sees the totals.
    let mut s = Client::new(&server);
    s.get("/_strain/stats");
    let r = s.response(false);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let json: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let n = |k: &str| json[k].as_u64().unwrap_or_else(|| panic!("no {k} in {json}"));
    assert_eq!((n("connections"), n("requests"), n("ok"), n("not_modified"), n("aborted")), (2, 3, 2, 1, 0));
    assert!(n("bytes_read") > 0 && n("bytes_written") > 0);
    // HEAD and a query work too, and are not counted either.
    s.send(b"HEAD /_strain/stats?now HTTP/1.1\r\n\r\n");
    let head = s.response(true);
    assert_eq!(head.status(), 200);
    drop((c, s));
    let stats = server.stop();
    assert_eq!((stats.connections, stats.requests, stats.ok, stats.not_modified), (2, 3, 2, 1));
    assert_eq!(stats.bytes_read, n("bytes_read") + b"HEAD /_strain/stats?now HTTP/1.1\r\n\r\n".len() as u64);
}

#[test]
fn live_counters_are_readable_while_serving() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let live = OriginLive::new();
    let shutdown = AtomicBool::new(false);
    let config = OriginConfig { threads: 2, ..OriginConfig::default() };
    thread::scope(|s| {
        let server = s.spawn(|| run_live(listener, &config, &shutdown, &live));
        // A failed assertion must still stop the server, or the scope would wait forever.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let stop = Stop(&shutdown);
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        for _ in 0..5 {
            c.write_all(GET).unwrap();
            assert_eq!(read_exact(&mut c, OK.len()), OK);
        }
        // The server counts a write after it returns, which can be after the client has read
        // it: wait a moment for the last one.
        let want = (1, 5, 5, 5 * OK.len() as u64);
        let started = Instant::now();
        let got = loop {
            let now = live.snapshot();
            let got = (now.connections, now.requests, now.ok, now.bytes_written);
            if got == want || started.elapsed() > Duration::from_secs(2) {
                break got;
            }
            thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(got, want);
        drop(stop);
        let total = server.join().unwrap().unwrap();
        assert_eq!(total, live.snapshot());
    });
    // One server per OriginLive.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let err = run_live(listener, &config, &AtomicBool::new(true), &live).unwrap_err();
    assert!(matches!(err, OriginError::LiveInUse), "{err}");
}

#[test]
fn out_of_range_options_are_refused() {
    let bad = [
        OriginConfig { abort_rate: 1.5, ..OriginConfig::default() },
        OriginConfig { ims_not_modified: -0.1, ..OriginConfig::default() },
        OriginConfig { ims_not_modified: f64::NAN, ..OriginConfig::default() },
        OriginConfig { byte_rate: Some(0), ..OriginConfig::default() },
    ];
    for config in bad {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let err = run(listener, &config, &AtomicBool::new(true)).unwrap_err();
        assert!(matches!(err, OriginError::Invalid(_)), "{err}");
    }
}

#[test]
fn deep_pipeline_of_documents_is_answered_in_order() {
    // More output than the pending bound, so parsing pauses and resumes with requests
    // already read; small (rendered) and large (streamed) bodies interleave.
    let server = Server::start(docs(1));
    let mut c = Client::new(&server);
    let n = 600;
    let paths: Vec<String> = (0..n).map(|i| format!("/d/{i}/{}", if i % 50 == 0 { 100_000 } else { 3000 })).collect();
    let reqs: String = paths.iter().map(|p| format!("GET {p} HTTP/1.1\r\n\r\n")).collect();
    let mut w = c.w.try_clone().unwrap();
    let writer = thread::spawn(move || w.write_all(reqs.as_bytes()).unwrap());
    thread::sleep(Duration::from_millis(200));
    for path in &paths {
        let r = c.response(false);
        assert_eq!(Doc::parse(path).unwrap().check(path, &r.body), Ok(()), "{path}");
    }
    writer.join().unwrap();
    assert_quiet(&mut c.w);
    drop(c);
    assert_eq!(server.stop().requests, n as u64);
}

#[test]
fn random_choices_repeat_with_the_seed() {
    let draws = |seed| {
        let mut rng = rng::Rng::new(seed, 0);
        (0..64).map(|_| rng.chance(0.5)).collect::<Vec<_>>()
    };
    assert_eq!(draws(1), draws(1));
    assert_ne!(draws(1), draws(2));
    let mut rng = rng::Rng::new(0, 1);
    assert!((0..1000).all(|_| rng.below(7) < 7));
    assert!((0..1000).all(|_| rng.chance(1.0) && !rng.chance(0.0)));
}
