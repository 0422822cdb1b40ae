//! Documents, cache headers and the jtest-style behaviours (delay, byte rate, aborts,
//! keep-alive limits, live counters).

use super::*;

use std::io::{BufRead, BufReader};

use crate::workload::doc::Doc;

/// A client that reads responses by their framing.
pub(super) struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

/// One response as read: the head as text, the body by Content-Length.
#[derive(Debug)]
pub(super) struct Response {
    pub(super) head: String,
    pub(super) body: Vec<u8>,
}

impl Response {
    pub(super) fn status(&self) -> u16 {
        self.head[9..12].parse().expect("status code")
    }

    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

impl Client {
    pub(super) fn new(server: &Server) -> Client {
        let w = server.connect();
        Client { r: BufReader::new(w.try_clone().unwrap()), w }
    }

    pub(super) fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).unwrap();
    }

    pub(super) fn get(&mut self, path: &str) {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    }

    /// Reads one response; `head_only` for a HEAD request's.
    pub(super) fn response(&mut self, head_only: bool) -> Response {
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
        assert_eq!(respond::document(path, None).map(|_| path), want, "{target}");
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
        let mut rng = crate::rng::Rng::for_thread(seed, 0);
        (0..64).map(|_| rng.chance(0.5)).collect::<Vec<_>>()
    };
    assert_eq!(draws(1), draws(1));
    assert_ne!(draws(1), draws(2));
    let mut rng = crate::rng::Rng::for_thread(0, 1);
    assert!((0..1000).all(|_| rng.below(7) < 7));
    assert!((0..1000).all(|_| rng.chance(1.0) && !rng.chance(0.0)));
}
