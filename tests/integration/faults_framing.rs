//! The framing half of the fault suite: tiny TCP servers that each get one thing about message
//! framing wrong, and the real binary against them. For every fault: the failures land in the
//! expected category (wrk's connect/read/write/timeout/status, plus strain's parse, which the
//! text report adds to read as wrk does), nothing panics, the run ends within duration plus
//! timeout, and the totals add up: every request the server received was answered, failed or
//! timed out.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::harness::{bin, exclusive, finish, read_head, send, strain, FakeServer, Run};

/// Test length and request timeout of every run here.
const DURATION: Duration = Duration::from_millis(800);
const TIMEOUT: Duration = Duration::from_millis(700);
/// Scheduling slack on top of duration plus timeout on a busy two-core machine.
const SLACK: Duration = Duration::from_millis(900);

/// A fake server that answers every request head it reads with `answer`, counting heads.
struct Faulty {
    server: FakeServer,
    heads: Arc<AtomicU64>,
}

impl Faulty {
    fn start(answer: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> Faulty {
        let heads = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&heads);
        let server = FakeServer::start(move |mut s, _| {
            while read_head(&mut s) {
                seen.fetch_add(1, Ordering::Relaxed);
                answer(&mut s);
            }
        });
        Faulty { server, heads }
    }

    /// A server that sends `bytes` for every request.
    fn replying(bytes: &'static [u8]) -> Faulty {
        Faulty::start(move |s| send(s, bytes))
    }

    fn url(&self) -> String {
        self.server.url()
    }

    /// Requests received; read once strain has exited and the server threads caught up.
    fn heads(&self) -> u64 {
        thread::sleep(Duration::from_millis(100));
        self.heads.load(Ordering::Relaxed)
    }
}

/// The arguments of every run: one thread, `conns` connections, [`DURATION`], [`TIMEOUT`].
fn args(url: &str, conns: &str) -> Vec<String> {
    let (d, t) = (format!("{}ms", DURATION.as_millis()), format!("{}ms", TIMEOUT.as_millis()));
    ["-t", "1", "-c", conns, "-d", &d, "-T", &t, url].iter().map(|s| s.to_string()).collect()
}

fn run(server: &Faulty) -> Run {
    let args = args(&server.url(), "3");
    strain(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The properties every fault shares; returns the failures counted in `category`.
fn check(run: &Run, server: &Faulty, category: &str) -> u64 {
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(run.elapsed < DURATION + TIMEOUT + SLACK, "took {:?}", run.elapsed);
    let failed: u64 = ["read", "write", "parse", "timeout"].iter().map(|k| run.num(&format!("/errors/{k}"))).sum();
    let answered = run.num("/requests");
    assert_eq!(server.heads(), answered + failed, "received = answered + failed: {:?}", run.json);
    let counted = run.num(&format!("/errors/{category}"));
    assert_eq!(counted, failed, "every failure is a {category} error: {:?}", run.json);
    counted
}

/// Asserts every request failed as a parse error, shown as read in wrk's text line.
fn all_parse_errors(server: Faulty) {
    let run = run(&server);
    let parse = check(&run, &server, "parse");
    assert!(parse >= 3, "{:?}", run.json);
    assert_eq!(run.num("/requests"), 0);
    assert!(run.stdout.contains(&format!("read {parse},")), "{}", run.stdout);
    // A connection that carried a bad response is never used again.
    let connections = server.server.connections();
    assert!((parse..=parse + 3).contains(&connections), "{connections} connections for {parse} failures");
}

/// Asserts every request was answered `200` and nothing failed; returns the run and the count.
fn all_answered_ok(server: &Faulty, at_least: u64) -> (Run, u64) {
    let run = run(server);
    assert_eq!(check(&run, server, "parse"), 0, "{:?}", run.json);
    let answered = run.num("/requests");
    assert!(answered >= at_least, "{:?}", run.json);
    assert_eq!(run.num("/status/200"), answered);
    (run, answered)
}

#[test]
fn content_length_overflow_negative_or_disagreeing_is_a_parse_error() {
    for reply in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\nx"[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nx",
        b"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy",
    ] {
        all_parse_errors(Faulty::replying(reply));
    }
}

#[test]
fn chunk_size_overflow_is_a_parse_error() {
    all_parse_errors(Faulty::replying(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nx\r\n0\r\n\r\n",
    ));
}

#[test]
fn transfer_encoding_with_content_length_is_a_parse_error() {
    // RFC 9112 6.3: such a message "ought to be handled as an error" (it is how responses are
    // split and requests smuggled); wrk refuses it too (a read error there).
    all_parse_errors(Faulty::replying(
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ));
}

#[test]
fn a_body_longer_than_declared_fails_the_next_response() {
    // "llo" is taken as the start of the next response, which it cannot be.
    let server = Faulty::replying(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhello");
    let run = run(&server);
    let parse = check(&run, &server, "parse");
    let answered = run.num("/requests");
    // Each connection answers once, then fails once.
    assert!(answered >= 3, "{:?}", run.json);
    assert!(answered.abs_diff(parse) <= 3, "{answered} answered, {parse} failed");
}

#[test]
fn interim_responses_are_skipped_and_latency_runs_to_the_final_one() {
    const HOLD: Duration = Duration::from_millis(40);
    let server = Faulty::start(|s| {
        send(s, b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n");
        thread::sleep(HOLD);
        send(s, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
    // Counted once each: every request received is one response, with the final status.
    let (run, _) = all_answered_ok(&server, 10);
    let min_us = run.num("/latency_us/min");
    assert!(min_us >= HOLD.as_micros() as u64, "latency {min_us} us stops at an interim response");
}

/// Runs strain against `server` alone and returns the run and the peak resident memory of
/// the strain process in KiB (from /proc, sampled while it runs).
fn run_measuring_memory(server: &Faulty) -> (Run, u64) {
    let _alone = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let mut args = args(&server.url(), "3");
    args.extend(["--json".to_string(), json.display().to_string()]);
    let start = Instant::now();
    let child = Command::new(bin())
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let sampler = thread::spawn(move || {
        let mut peak = 0;
        while let Ok(text) = std::fs::read_to_string(&status) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok());
            match hwm {
                Some(kib) => peak = peak.max(kib),
                // A zombie has no memory lines left.
                None => break,
            }
            thread::sleep(Duration::from_millis(5));
        }
        peak
    });
    let mut run = finish(child, start);
    let text = std::fs::read_to_string(&json).unwrap();
    run.json = Some(serde_json::from_str(&text).unwrap());
    (run, sampler.join().unwrap())
}

/// Peak memory a run may reach while a server streams a head without end (the whole stream
/// would be 3 connections times [`ENDLESS_CAP`] if it were kept).
const MEMORY_LIMIT_KIB: u64 = 32 * 1024;
/// Bytes one connection of the endless-head server sends at most.
const ENDLESS_CAP: usize = 64 << 20;

/// Sends `line` after `first` over and over, until the client goes away or the cap is reached.
fn endless(s: &mut TcpStream, first: &[u8], line: &[u8]) {
    let mut block = first.to_vec();
    while block.len() < 64 * 1024 {
        block.extend_from_slice(line);
    }
    let mut sent = 0;
    while sent < ENDLESS_CAP && s.write_all(&block).is_ok() {
        sent += block.len();
    }
    // Drain what the client may still send so it sees a clean close.
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let _ = s.read(&mut [0; 1024]);
}

#[test]
fn oversized_heads_are_parse_errors_with_bounded_memory() {
    let huge_block =
        Faulty::start(|s| endless(s, b"HTTP/1.1 200 OK\r\n", b"X-Filler: 0123456789abcdefghijklmnopqrstuvwxyz\r\n"));
    let many_fields = Faulty::start(|s| endless(s, b"HTTP/1.1 200 OK\r\n", b"a:\r\n"));
    let long_status = Faulty::start(|s| endless(s, b"HTTP/1.1 200 ", b"status reason without end "));
    for server in [huge_block, many_fields, long_status] {
        let (run, peak_kib) = run_measuring_memory(&server);
        let parse = check(&run, &server, "parse");
        assert!(parse >= 3, "{:?}", run.json);
        assert_eq!(run.num("/requests"), 0);
        assert!(peak_kib < MEMORY_LIMIT_KIB, "strain peaked at {peak_kib} KiB");
    }
}

#[test]
fn a_one_megabyte_header_block_and_100000_fields_are_parse_errors() {
    // Whole heads of the sizes the issue names, each ending properly.
    fn head_of(line: &[u8], count: usize) -> &'static [u8] {
        let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..count {
            head.extend_from_slice(line);
        }
        head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        Box::leak(head.into_boxed_slice())
    }
    all_parse_errors(Faulty::replying(head_of(&[b"X-Big: ".as_slice(), &[b'v'; 1 << 20], b"\r\n"].concat(), 1)));
    all_parse_errors(Faulty::replying(head_of(b"a: b\r\n", 100_000)));
}
