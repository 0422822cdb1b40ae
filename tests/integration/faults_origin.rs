//! The origin's side of the fault suite: malformed, oversized and slow clients against a real
//! `strain origin`, over raw sockets. Malformed requests get `400` and a close, a head that
//! takes too long to arrive or a response the client stops reading gets its connection closed,
//! and nothing grows without bound.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use crate::harness::{connect, Origin};

const BAD: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Reads until the server closes (a reset counts as a close); panics on the read timeout.
fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("the server did not close: {e}; read {:?}", String::from_utf8_lossy(&got)),
        }
    }
}

/// The origin's live counters, from `/_strain/stats`.
fn stats(addr: SocketAddr) -> serde_json::Value {
    let mut s = connect(addr);
    s.write_all(b"GET /_strain/stats HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    let got = read_to_close(&mut s);
    let text = String::from_utf8_lossy(&got);
    let body = &text[text.find("\r\n\r\n").map_or(0, |i| i + 4)..];
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn stat(addr: SocketAddr, name: &str) -> u64 {
    stats(addr)[name].as_u64().unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn malformed_and_oversized_requests_get_400_and_a_close() {
    let origin = Origin::start(&["-t", "1"]);
    let mut huge = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
    huge.resize(70 * 1024, b'a');
    huge.extend_from_slice(b"\r\n\r\n");
    let mut many = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..200 {
        many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not HTTP", b"HELLO THERE\r\n\r\n".to_vec()),
        ("binary", vec![0, 1, 2, 0xff, b'\r', b'\n', b'\r', b'\n']),
        ("bad version", b"GET / HTTP/9\r\n\r\n".to_vec()),
        ("space in a header name", b"GET / HTTP/1.1\r\nBad Name: v\r\n\r\n".to_vec()),
        ("bad Content-Length", b"POST / HTTP/1.1\r\nContent-Length: ten\r\n\r\n".to_vec()),
        ("bad chunk size", b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec()),
        ("head over 64 KiB", huge),
        ("too many headers", many),
    ];
    for (what, req) in &cases {
        let mut s = connect(origin.addr);
        s.write_all(req).unwrap();
        assert_eq!(String::from_utf8_lossy(&read_to_close(&mut s)), String::from_utf8_lossy(BAD), "{what}");
    }
    // A good request before a bad one on the same connection is still answered first.
    let mut s = connect(origin.addr);
    s.write_all(b"GET / HTTP/1.1\r\n\r\nNONSENSE\r\n\r\n").unwrap();
    let got = read_to_close(&mut s);
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n") && got.ends_with(BAD), "{}", String::from_utf8_lossy(&got));
    assert_eq!(stat(origin.addr, "bad_requests"), cases.len() as u64 + 1);
    // And the server still serves.
    assert_eq!(stat(origin.addr, "requests"), 1);
}

/// Sends `head` a few bytes every `every` from a thread, ignoring errors once the server has
/// closed; returns how long after the first byte the server closed.
fn trickle(addr: SocketAddr, head: &'static [u8], every: Duration) -> Duration {
    let mut s = connect(addr);
    let mut writer = s.try_clone().unwrap();
    let start = Instant::now();
    let t = thread::spawn(move || {
        for part in head.chunks(2) {
            if writer.write_all(part).is_err() {
                return;
            }
            thread::sleep(every);
        }
    });
    let got = read_to_close(&mut s);
    let took = start.elapsed();
    assert!(got.is_empty(), "a timed-out head gets no answer: {}", String::from_utf8_lossy(&got));
    t.join().unwrap();
    took
}

#[test]
fn a_head_that_arrives_too_slowly_is_cut_off_and_a_slow_client_is_not() {
    let origin = Origin::start(&["-t", "1", "--header-timeout", "500ms"]);
    // Slowloris: two bytes every 100 ms, never a complete head (it would take 3 s).
    let head: &'static [u8] = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: 1234567890123456789012\r\n\r\n";
    let took = trickle(origin.addr, head, Duration::from_millis(100));
    // The timeout, then up to one sweep (250 ms) and a poll.
    assert!((Duration::from_millis(450)..Duration::from_millis(1300)).contains(&took), "closed after {took:?}");
    assert_eq!(stat(origin.addr, "header_timeouts"), 1);

    // The timeout is per head: complete requests spread over 1.5 s, one of them split in two
    // 200 ms apart, and an idle pause longer than the timeout, are all answered.
    let mut s = connect(origin.addr);
    for i in 0..5 {
        if i == 2 {
            s.write_all(b"GET / HT").unwrap();
            thread::sleep(Duration::from_millis(200));
            s.write_all(b"TP/1.1\r\n\r\n").unwrap();
        } else {
            s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        }
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK\r\n"), "request {i}: {:?}", String::from_utf8_lossy(&buf[..n]));
        thread::sleep(Duration::from_millis(if i == 3 { 700 } else { 150 }));
    }
    assert_eq!(stat(origin.addr, "header_timeouts"), 1);
    assert_eq!(stat(origin.addr, "requests"), 5);
}

#[test]
fn a_client_that_stops_reading_is_cut_off_and_a_slow_reader_is_not() {
    let origin = Origin::start(&["-t", "1", "--send-timeout", "1s"]);
    // Asks for 5 MB and reads nothing: once the socket buffers are full, the clock runs.
    let mut deaf = connect(origin.addr);
    deaf.write_all(b"GET /d/1/5000000 HTTP/1.1\r\n\r\n").unwrap();
    thread::sleep(Duration::from_millis(1800));
    assert_eq!(stat(origin.addr, "send_timeouts"), 1);
    let got = read_to_close(&mut deaf);
    assert!(got.len() < 5_000_000, "read {} bytes", got.len());

    // Reads 1 MB 64 KiB at a time with pauses, taking longer than the timeout overall but
    // never stalling the server for long: it gets every byte.
    let mut slow = connect(origin.addr);
    slow.write_all(b"GET /d/2/1000000 HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = slow.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        thread::sleep(Duration::from_millis(60));
    }
    let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(got.len() - head_end, 1_000_000);
    assert!(start.elapsed() > Duration::from_secs(1), "not slow enough to test: {:?}", start.elapsed());
    assert_eq!(stat(origin.addr, "send_timeouts"), 1);
}

/// The origin's resident memory (kB) and open sockets (its listener and its connections).
fn footprint(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let sockets = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|link| link.to_string_lossy().starts_with("socket:"))
        .count();
    (rss_kb, sockets)
}

/// Slowloris sockets per round: enough to show a leak, far below the 20,000 descriptor limit.
const SLOW_CLIENTS: usize = 1000;

/// Opens [`SLOW_CLIENTS`] connections that each start a head and stall, waits until the origin
/// has closed every one, and returns the origin's footprint while it held them.
fn slowloris_round(origin: &Origin) -> (u64, usize) {
    let mut socks: Vec<TcpStream> = (0..SLOW_CLIENTS)
        .map(|i| {
            let mut s = connect(origin.addr);
            s.write_all(format!("GET /{i} HTTP/1.1\r\nHost: x\r\nX-Slow: ").as_bytes()).unwrap();
            s
        })
        .collect();
    let held = footprint(origin.pid());
    for s in &mut socks {
        assert!(read_to_close(s).is_empty());
    }
    held
}

/// The origin's footprint once only its listener is left (a stats connection closes when the
/// client's FIN arrives, a moment after the client has read the answer).
fn settled(origin: &Origin) -> (u64, usize) {
    let start = Instant::now();
    while footprint(origin.pid()).1 > 1 && start.elapsed() < Duration::from_secs(2) {
        thread::sleep(Duration::from_millis(20));
    }
    footprint(origin.pid())
}

#[test]
fn a_thousand_slowloris_sockets_are_reclaimed_and_nothing_grows() {
    // Long enough that all are still held when the last has connected (a connect can take a
    // 1 s SYN retransmit on a loopback crowded with TIME_WAIT entries).
    let origin = Origin::start(&["-t", "1", "--header-timeout", "3s"]);
    assert_eq!(stat(origin.addr, "header_timeouts"), 0);
    let (rss_idle, sockets_idle) = settled(&origin);
    assert_eq!(sockets_idle, 1);
    let (rss_first, held) = slowloris_round(&origin);
    assert!(held > SLOW_CLIENTS / 2, "only {held} sockets held");
    let (rss_second, _) = slowloris_round(&origin);
    assert_eq!(stat(origin.addr, "header_timeouts"), 2 * SLOW_CLIENTS as u64);
    // Every slow socket is gone, and a second round cost no more memory than the first.
    let (rss_after, sockets_after) = settled(&origin);
    assert_eq!(sockets_after, 1);
    assert!(rss_first < rss_idle + 16 * 1024, "{rss_idle} kB idle, {rss_first} kB with {SLOW_CLIENTS} slow clients");
    assert!(rss_second <= rss_first + 1024, "{rss_first} kB then {rss_second} kB: it grows");
    assert!(rss_after <= rss_second + 1024, "{rss_after} kB after");
}
