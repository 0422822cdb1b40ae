//! Whole pages (`OriginConfig::pages`, `strain origin --embed --links`): `.html` documents are
//! HTML pages naming exactly the objects and links `page_refs` says, `.jpeg` objects are
//! images, everything else about documents is as without; over HTTP/1.1 and HTTP/2.

use super::documents::{Client, Response};
use super::*;
use crate::h2::{Event, Session, Settings};
use crate::workload::doc::Doc;
use crate::workload::page::{extract, page_refs, Page};

fn pages(embed: u32, links: u32) -> OriginConfig {
    OriginConfig { threads: 1, pages: Pages { embed, links }, ..OriginConfig::default() }
}

fn get(c: &mut Client, path: &str) -> Response {
    c.get(path);
    c.response(false)
}

/// What a page at `path` of `server` names, as absolute URLs.
fn absolute(server: &Server, paths: &[String]) -> Vec<String> {
    paths.iter().map(|p| format!("http://{}{p}", server.addr)).collect()
}

#[test]
fn a_page_is_html_with_its_objects_and_links() {
    let server = Server::start(pages(5, 7));
    let mut c = Client::new(&server);
    let path = "/d/42/20000.html";
    let r = get(&mut c, path);
    assert_eq!(r.status(), 200);
    assert_eq!(r.header("content-type"), Some("text/html"));
    assert_eq!(r.header("content-length"), Some("20000"));
    assert_eq!(r.body.len(), 20_000);
    // The validators and caching rules of any document.
    let doc = Doc { id: 42, len: 20_000 };
    assert_eq!(r.header("last-modified"), Some(doc.last_modified().as_str()));
    assert_eq!(r.header("etag"), Some("\"42-20000\""));
    assert_eq!(r.header("cache-control"), Some("max-age=3600"));
    let text = std::str::from_utf8(&r.body).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>") && text.ends_with("</body></html>\n"));
    assert_eq!((text.matches("<img ").count(), text.matches("<a ").count()), (5, 7));
    let found = extract(&format!("http://{}{path}", server.addr), &r.body);
    let named = page_refs(42, 5, 7);
    assert_eq!(found.embeds, absolute(&server, &named.embeds));
    assert_eq!(found.links, absolute(&server, &named.links));
    assert_eq!(Page::new(doc, 5, 7).check(path, &r.body), Ok(()));

    // A HEAD says the same length, and the next response follows at once.
    c.send(format!("HEAD {path} HTTP/1.1\r\n\r\n").as_bytes());
    let head = c.response(true);
    assert_eq!((head.header("content-length"), head.header("content-type")), (Some("20000"), Some("text/html")));
    // A page too small for its markup is the smallest that holds it, and says how long.
    let r = get(&mut c, "/d/3/10.html");
    let small = Page::new(Doc { id: 3, len: 10 }, 5, 7);
    assert_eq!(r.header("content-length"), Some(small.len().to_string().as_str()));
    assert!(small.len() > 10);
    assert_eq!(small.check("/d/3/10.html", &r.body), Ok(()));
    assert_eq!(extract("http://h/d/3/10.html", &r.body).links.len(), 7);
    // A large page goes out in chunks, as any large document does.
    let big = "/d/9/300000.html";
    let r = get(&mut c, big);
    assert_eq!(Page::new(Doc { id: 9, len: 300_000 }, 5, 7).check(big, &r.body), Ok(()));
    drop(c);
    let stats = server.stop();
    assert_eq!((stats.requests, stats.ok), (4, 4));
}

#[test]
fn objects_are_images_and_other_documents_are_as_without_pages() {
    let server = Server::start(pages(3, 0));
    let mut c = Client::new(&server);
    let page = get(&mut c, "/d/1/5000.html");
    for url in page_refs(1, 3, 0).embeds {
        let r = get(&mut c, &url);
        assert_eq!(r.header("content-type"), Some("image/jpeg"), "{url}");
        let doc = Doc::parse(&url).unwrap();
        assert_eq!(r.header("content-length"), Some(doc.len.to_string().as_str()));
        assert_eq!(doc.check(&url, &r.body), Ok(()), "{url}");
    }
    assert!(!page.body.is_empty());
    // Neither .html nor .jpeg: the configured type and the document's own body.
    for path in ["/d/1/100", "/d/1/100/"] {
        let r = get(&mut c, path);
        assert_eq!(r.header("content-type"), Some("text/plain"), "{path}");
        assert_eq!(Doc { id: 1, len: 100 }.check(path, &r.body), Ok(()), "{path}");
    }
    drop(c);
    server.stop();

    // Without pages, .html and .jpeg are plain documents of the configured type.
    let server = Server::start(OriginConfig { threads: 1, ..OriginConfig::default() });
    let mut c = Client::new(&server);
    for path in ["/d/1/100.html", "/d/1/100.jpeg"] {
        let r = get(&mut c, path);
        assert_eq!(r.header("content-type"), Some("text/plain"), "{path}");
        assert_eq!(Doc { id: 1, len: 100 }.check(path, &r.body), Ok(()), "{path}");
    }
    drop(c);
    server.stop();
}

#[test]
fn the_same_page_names_the_same_references_from_any_origin() {
    // Two servers with other seeds and threads: the same bytes for the same page.
    let a = Server::start(OriginConfig { seed: 1, ..pages(10, 10) });
    let b = Server::start(OriginConfig { seed: 2, threads: 2, ..pages(10, 10) });
    let path = "/d/123456/8000.html";
    let from_a = get(&mut Client::new(&a), path).body;
    let again = get(&mut Client::new(&a), path).body;
    let from_b = get(&mut Client::new(&b), path).body;
    assert_eq!(from_a, again);
    assert_eq!(from_a, from_b);
    let (ra, rb) = (extract("http://h/", &from_a), extract("http://h/", &from_b));
    assert_eq!(ra, rb);
    assert_eq!((ra.embeds.len(), ra.links.len()), (10, 10));
    // Another page names others.
    let other = extract("http://h/", &get(&mut Client::new(&a), "/d/123457/8000.html").body);
    assert!(other.embeds.iter().all(|e| !ra.embeds.contains(e)));
    a.stop();
    b.stop();
}

#[test]
fn conditional_requests_and_alternates_work_on_pages() {
    let config =
        OriginConfig { ims_not_modified: 1.0, vary: Some(crate::workload::alternates::Vary::UserAgent), ..pages(2, 2) };
    let server = Server::start(config);
    let mut c = Client::new(&server);
    c.send(b"GET /d/5/3000.html HTTP/1.1\r\nIf-Modified-Since: Wed, 01 Jan 2020 00:00:05 GMT\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.status(), 304);
    assert_eq!(r.header("content-length"), None);
    // Each alternate's page holds its own key, in the comment.
    c.send(b"GET /d/5/3000.html HTTP/1.1\r\nUser-Agent: curl/8.11.0\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("content-type"), Some("text/html"));
    let text = String::from_utf8(r.body).unwrap();
    assert!(text.contains("<!--/d/5/3000.html [curl/8.11.0]\n"), "{text}");
    drop(c);
    let stats = server.stop();
    assert_eq!((stats.not_modified, stats.ok), (1, 1));
}

#[test]
fn pages_over_http2() {
    let server = Server::start(pages(4, 4));
    let socket = server.connect();
    socket.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut socket = socket;
    let mut session = Session::client(Settings::default()).unwrap();
    session.set_streamed(true);
    let path = "/d/77/100000.html";
    let fields = [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", path)];
    let id = session.submit_request_streamed(&fields).unwrap();
    session.end_body(id).unwrap();
    let (mut fields, mut body, mut closed) = (Vec::new(), Vec::new(), None);
    let deadline = Instant::now() + TIMEOUT;
    let mut buf = vec![0u8; 64 * 1024];
    while closed.is_none() {
        assert!(Instant::now() < deadline, "stream unfinished");
        let mut out = Vec::new();
        session.output(&mut out).unwrap();
        socket.write_all(&out).unwrap();
        match socket.read(&mut buf) {
            Ok(0) => panic!("the server closed"),
            Ok(n) => session.receive(&buf[..n]).unwrap(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("{e}"),
        }
        for event in std::mem::take(session.events()) {
            match event {
                Event::Fields { stream, fields: f } if stream == id => fields.extend(f),
                Event::Body { stream, data } if stream == id => body.extend(data),
                Event::Closed { stream, code } if stream == id => closed = Some(code),
                _ => {}
            }
        }
    }
    assert_eq!(closed, Some(0));
    let field = |name: &str| fields.iter().find(|(n, _)| n == name.as_bytes()).map(|(_, v)| v.clone());
    assert_eq!(field("content-type").as_deref(), Some(&b"text/html"[..]));
    assert_eq!(Page::new(Doc { id: 77, len: 100_000 }, 4, 4).check(path, &body), Ok(()));
    drop(socket);
    server.stop();
}

#[test]
fn bad_page_counts_are_refused() {
    for pages in [Pages { embed: 101, links: 0 }, Pages { embed: 0, links: 1000 }] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let config = OriginConfig { pages, ..OriginConfig::default() };
        let err = run(listener, &config, &AtomicBool::new(true)).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, OriginError::Invalid(_)) && text.contains("at most 100 per page"), "{text}");
    }
    // On the command line: the flag, the value and the range, before anything listens.
    let rows = [
        (["--embed", "101"], "101 per page: give 0 (off) to 100"),
        (["--links", "5000"], "5000 per page: give 0 (off) to 100"),
        (["--embed", "1.5"], "not a whole number"),
        (["--links", "many"], "not a whole number"),
    ];
    for (args, want) in rows {
        let argv = ["strain", "origin", "--listen", "127.0.0.1:0"].into_iter().chain(args);
        match crate::cli::run(argv, &[]) {
            Err(crate::cli::CliError::Usage(msg)) => {
                assert!(msg.contains(args[0]) && msg.contains(want), "{args:?}: {msg}")
            }
            other => panic!("{args:?}: {other:?}"),
        }
    }
}
