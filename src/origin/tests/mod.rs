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
        // (The HTTP/2 preface is no longer malformed: it switches to HTTP/2, see `h2.rs`.)
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

mod documents;
mod grpc;
mod pages;
mod service;
