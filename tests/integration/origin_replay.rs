//! `strain origin --replay`: both sides of a proxy. With Apache Traffic Server between
//! `strain replay` and `strain origin --replay` and a Proxy Verifier file, every transaction is
//! answered with its recorded response: strain's status counts are the recorded statuses', the
//! origin answered each from the recording, and a raw client through the proxy gets each
//! recorded status, field and body byte. Without a proxy: `--replay-key url` over a HAR (several
//! records of one URL answered in order), unmatched requests (404, counted), HEAD, HTTP/2 and
//! HTTP/3, and what is refused (one line, exit 2).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::harness::{run_program, strain, strain_raw, temp_file, Origin, Run};
use crate::proxies::{Ats, AtsMode};

/// What the origin repeats for a body recorded by its size only.
const FILLER: &[u8] = b"hello, world\n";

/// A recorded body.
#[derive(Clone, Copy)]
enum Recorded {
    /// `data:`, the bytes.
    Data(&'static str),
    /// `size:`, filler of that length.
    Size(usize),
}

impl Recorded {
    fn bytes(self) -> Vec<u8> {
        match self {
            Recorded::Data(d) => d.as_bytes().to_vec(),
            Recorded::Size(n) => FILLER.iter().copied().cycle().take(n).collect(),
        }
    }
}

/// One recorded transaction of the Proxy Verifier file.
struct Txn {
    uuid: &'static str,
    method: &'static str,
    target: &'static str,
    request_body: Option<&'static str>,
    status: u16,
    /// Recorded response fields the origin keeps (beside `Cache-Control: no-store`, so that
    /// the proxy passes every answer through, and `X-Recorded`, the transaction's number).
    fields: &'static [(&'static str, &'static str)],
    body: Recorded,
}

/// Ten transactions: several paths (one twice, under two uuids), GET, HEAD and POST, statuses
/// 200, 201, 301 and 404, bodies given by `data:` and by `size:`.
fn transactions() -> Vec<Txn> {
    let txn = |uuid, method, target, status, fields, body| Txn {
        uuid,
        method,
        target,
        request_body: None,
        status,
        fields,
        body,
    };
    let text: &[(&str, &str)] = &[("Content-Type", "text/plain")];
    vec![
        txn("t1", "GET", "/t/1", 200, text, Recorded::Data("hello one")),
        txn("t2", "GET", "/t/2?q=a", 200, &[("Content-Type", "application/octet-stream")], Recorded::Size(5000)),
        txn(
            "t3",
            "GET",
            "/old",
            301,
            &[("Location", "http://shop.test/new"), ("Content-Type", "text/html")],
            Recorded::Data("<a href=/new>moved</a>"),
        ),
        txn("t4", "GET", "/missing", 404, text, Recorded::Data("not here")),
        txn("t5", "HEAD", "/t/5", 200, text, Recorded::Size(1234)),
        Txn {
            request_body: Some("a=1&b=2"),
            ..txn("t6", "POST", "/form", 201, &[("Location", "/form/7")], Recorded::Data("created"))
        },
        txn(
            "t7",
            "GET",
            "/api/item?id=7",
            200,
            &[("Content-Type", "application/json"), ("X-Api", "v2")],
            Recorded::Data(r#"{"id":7}"#),
        ),
        txn("t8", "GET", "/big", 200, &[("Content-Type", "application/octet-stream")], Recorded::Size(100_000)),
        txn("t9", "GET", "/t/1", 200, text, Recorded::Data("hello nine, same path")),
        txn("t10", "GET", "/gone", 404, &[], Recorded::Size(0)),
    ]
}

/// The transactions as a Proxy Verifier replay file, in the layout of Proxy Verifier's own
/// examples (Traffic Dump's): recorded `Content-Length` and `Connection` fields included.
fn verifier_file(txns: &[Txn], with_responses: bool) -> String {
    let mut y = String::from("meta:\n  version: '1.0'\n\nsessions:\n- protocol: [ { name: http, version: 1 }, { name: tcp }, { name: ip } ]\n  transactions:\n");
    for (k, t) in txns.iter().enumerate() {
        y += &format!("  - uuid: {}\n    client-request:\n      method: {}\n      url: http://shop.test{}\n      version: '1.1'\n", t.uuid, t.method, t.target);
        y += "      headers:\n        encoding: esc_json\n        fields:\n        - [ Host, shop.test ]\n";
        y += &format!("        - [ uuid, {} ]\n", t.uuid);
        if let Some(body) = t.request_body {
            y += &format!(
                "        - [ Content-Length, '{}' ]\n      content:\n        encoding: plain\n        data: '{body}'\n",
                body.len()
            );
        }
        if !with_responses {
            continue;
        }
        y += &format!("    server-response:\n      status: {}\n      reason: Recorded\n      headers:\n        encoding: esc_json\n        fields:\n", t.status);
        let length = match t.body {
            Recorded::Data(d) => d.len(),
            Recorded::Size(n) => n,
        };
        y += &format!("        - [ Content-Length, '{length}' ]\n        - [ Connection, keep-alive ]\n        - [ Cache-Control, no-store ]\n        - [ X-Recorded, '{}' ]\n", k + 1);
        for (name, value) in t.fields {
            y += &format!("        - [ {name}, '{value}' ]\n");
        }
        y += "      content:\n        encoding: plain\n";
        y += &match t.body {
            Recorded::Data(d) => format!("        data: '{d}'\n"),
            Recorded::Size(n) => format!("        size: {n}\n"),
        };
    }
    y
}

/// A response as a raw client reads it.
#[derive(Debug)]
struct Got {
    status: u16,
    /// Names lowercased.
    fields: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Got {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// One request on a connection of its own (`Connection: close`, so the body is what comes
/// before the close; a HEAD's is nothing).
fn fetch(addr: SocketAddr, method: &str, target: &str, uuid: Option<&str>, body: Option<&str>) -> Got {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(uuid) = uuid {
        req += &format!("uuid: {uuid}\r\n");
    }
    if let Some(body) = body {
        req += &format!("Content-Length: {}\r\n\r\n{body}", body.len());
    } else {
        req += "\r\n";
    }
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse(&raw)
}

/// A whole HTTP/1 response (as curl `-i` prints it too), read to its end.
fn parse(raw: &[u8]) -> Got {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| panic!("no head: {raw:?}"));
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let fields = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Got { status, fields, body: raw[end + 4..].to_vec() }
}

/// Asserts `got` is transaction `k`'s recorded response (`k` from 0; HEAD: the head only).
fn assert_recorded(got: &Got, k: usize, t: &Txn, how: &str) {
    let want = t.body.bytes();
    let what = format!("{how} {} {} ({})", t.method, t.target, t.uuid);
    assert_eq!(got.status, t.status, "{what}: {got:?}");
    assert_eq!(got.field("x-recorded"), Some((k + 1).to_string().as_str()), "{what}: {got:?}");
    assert_eq!(got.field("cache-control"), Some("no-store"), "{what}: {got:?}");
    for (name, value) in t.fields {
        assert_eq!(got.field(&name.to_ascii_lowercase()), Some(*value), "{what}: {name}");
    }
    assert_eq!(got.field("content-length"), Some(want.len().to_string().as_str()), "{what}: {got:?}");
    let body = if t.method == "HEAD" { Vec::new() } else { want };
    assert!(got.body == body, "{what}: body of {} bytes, not the recorded {}", got.body.len(), body.len());
}

/// The recorded statuses, counted as strain's JSON counts them.
fn recorded_statuses(txns: &[Txn]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for t in txns {
        *counts.entry(t.status.to_string()).or_insert(0) += 1;
    }
    counts
}

/// strain's JSON `status` counts.
fn statuses(run: &Run) -> BTreeMap<String, u64> {
    let j = run.json.as_ref().unwrap_or_else(|| panic!("no JSON: {}", run.stderr));
    let map = j["status"].as_object().unwrap_or_else(|| panic!("no status in {j}"));
    map.iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap())).filter(|(_, v)| *v > 0).collect()
}

/// The origin's exit line about the recording: (recorded, unmatched).
fn recording_counts(origin: Origin) -> (u64, u64) {
    let exited = origin.exit();
    let line = exited.stderr.lines().find(|l| l.contains("recorded ")).unwrap_or_else(|| panic!("{}", exited.stderr));
    let num = |after: &str| -> u64 {
        let rest = line.split(after).nth(1).unwrap_or_else(|| panic!("{line}"));
        rest.trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    (num("recorded "), num("unmatched "))
}

/// `strain replay` of the Proxy Verifier file `file` against `url` on one thread, every method
/// of the file replayed, with `flags` (protocol, connections).
fn replay_file(flags: &[&str], file: &str, url: &str) -> crate::harness::Run {
    let mut a = vec!["replay", "--format", "verifier", "--methods", "GET,HEAD,POST", "-t", "1"];
    a.extend(flags);
    a.extend([file, url]);
    strain(&a)
}

#[test]
fn through_traffic_server_every_response_is_the_recorded_one() {
    let txns = transactions();
    let (_dir, file) = temp_file("recorded.yaml", &verifier_file(&txns, true));
    let origin = Origin::start_heard(&["-t", "1", "--replay", &file]);
    let ats = Ats::start(AtsMode::Reverse { origin_port: origin.addr.port() });
    let proxy = SocketAddr::from(([127, 0, 0, 1], ats.port));
    let url = format!("http://{proxy}/");

    let run = replay_file(&["-c", "2"], &file, &url);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.num("/requests"), txns.len() as u64, "{}", run.stdout);
    assert_eq!(statuses(&run), recorded_statuses(&txns), "{}", run.stdout);

    // strain replay keeps no bodies: each transaction once more, through the proxy, by hand.
    for (k, t) in txns.iter().enumerate() {
        let got = fetch(proxy, t.method, t.target, Some(t.uuid), t.request_body);
        assert!(got.field("via").is_some(), "not through the proxy: {got:?}");
        assert_recorded(&got, k, t, "through ATS");
    }
    drop(ats);
    // Every request reached the origin (none served from the proxy's cache) and matched.
    assert_eq!(recording_counts(origin), (2 * txns.len() as u64, 0));
}

#[test]
fn directly_each_uuid_gets_its_recorded_response_and_head_no_body() {
    let txns = transactions();
    let (_dir, file) = temp_file("recorded.yaml", &verifier_file(&txns, true));
    let origin = Origin::start_heard(&["-t", "1", "--replay", &file]);
    for (k, t) in txns.iter().enumerate() {
        assert_recorded(&fetch(origin.addr, t.method, t.target, Some(t.uuid), t.request_body), k, t, "direct");
    }
    // HEAD on a GET's record: its head, Content-Length the recorded body's, and no body.
    let head = fetch(origin.addr, "HEAD", "/big", Some("t8"), None);
    assert_eq!((head.status, head.field("content-length"), head.body.len()), (200, Some("100000"), 0));
    // The uuid decides, not the path: /t/1 under t9 is t9's.
    assert_eq!(fetch(origin.addr, "GET", "/t/1", Some("t9"), None).body, b"hello nine, same path");
    // No uuid, or one the file does not hold: 404, said in the body, counted.
    for uuid in [None, Some("t99")] {
        let got = fetch(origin.addr, "GET", "/t/1", uuid, None);
        assert_eq!(got.status, 404, "{got:?}");
        assert!(String::from_utf8_lossy(&got.body).contains("no recorded response matched"), "{got:?}");
    }
    assert_eq!(recording_counts(origin), (txns.len() as u64 + 2, 2));
}

/// A HAR as a browser writes it: one URL fetched twice (two answers), one with a query, one
/// that never got a response (status 0).
fn har() -> String {
    let entry = |url: &str, status: u16, text: &str| {
        format!(
            r#"{{"startedDateTime": "2026-11-26T10:00:00.000Z", "time": 5,
      "request": {{"method": "GET", "url": "{url}", "httpVersion": "HTTP/1.1", "headers": [], "bodySize": 0}},
      "response": {{"status": {status}, "httpVersion": "HTTP/1.1",
        "headers": [{{"name": "Content-Type", "value": "text/plain"}}, {{"name": "Content-Length", "value": "{}"}}],
        "content": {{"size": {}, "mimeType": "text/plain", "text": "{text}"}}}}}}"#,
            text.len(),
            text.len()
        )
    };
    let entries = [
        entry("https://shop.test/a?x=1", 200, "a with x"),
        entry("https://shop.test/a", 200, "a, first"),
        entry("https://shop.test/a", 404, "a, then gone"),
        entry("https://shop.test/lost", 0, ""),
    ];
    format!(
        r#"{{"log": {{"version": "1.2", "creator": {{"name": "test", "version": "1"}}, "pages": [], "entries": [{}]}}}}"#,
        entries.join(",\n")
    )
}

#[test]
fn by_url_records_of_one_url_answer_in_order_and_the_unmatched_get_404() {
    let (_dir, file) = temp_file("browse.har", &har());
    let origin = Origin::start_heard(&["-t", "1", "--replay", &file, "--replay-key", "url"]);
    let get = |target: &str| {
        let got = fetch(origin.addr, "GET", target, None, None);
        (got.status, String::from_utf8_lossy(&got.body).to_string())
    };
    assert_eq!(get("/a?x=1"), (200, "a with x".into()));
    assert_eq!(get("/a"), (200, "a, first".into()));
    assert_eq!(get("/a"), (404, "a, then gone".into()));
    // The last record of a URL keeps answering.
    assert_eq!(get("/a"), (404, "a, then gone".into()));
    for unmatched in ["/a?x=2", "/lost"] {
        let (status, body) = get(unmatched);
        assert_eq!(status, 404, "{unmatched}");
        assert!(body.contains("no recorded response matched"), "{unmatched}: {body}");
    }
    assert_eq!(recording_counts(origin), (4, 2));
}

#[test]
fn http2_and_http3_serve_the_recorded_answers() {
    let txns = transactions();
    let (_dir, file) = temp_file("recorded.yaml", &verifier_file(&txns, true));
    // HTTP/2 (h2c by prior knowledge): curl's view of each GET is the recorded response.
    let origin = Origin::start_heard(&["-t", "1", "--replay", &file]);
    for (k, t) in txns.iter().enumerate().filter(|(_, t)| t.method == "GET") {
        let url = format!("http://{}{}", origin.addr, t.target);
        let uuid = format!("uuid: {}", t.uuid);
        let out = run_program("curl", &["-s", "-i", "--max-time", "5", "--http2-prior-knowledge", "-H", &uuid, &url]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.starts_with("HTTP/2 "), "{}", out.stdout);
        assert_recorded(&parse(out.stdout.as_bytes()), k, t, "h2");
    }
    let run = replay_file(&["--http2", "-c", "1"], &file, &origin.url());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(statuses(&run), recorded_statuses(&txns), "{}", run.stdout);
    let gets = txns.iter().filter(|t| t.method == "GET").count() as u64;
    assert_eq!(recording_counts(origin), (gets + txns.len() as u64, 0));

    // HTTP/3: strain's own client, every transaction answered with its recorded status.
    let origin = Origin::start_heard(&["-t", "1", "--tls", "--http3", "--replay", &file]);
    let run = replay_file(&["--http3", "-k", "-c", "1"], &file, &origin.url());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.json.as_ref().unwrap()["protocol"], "h3", "{}", run.stdout);
    assert_eq!(statuses(&run), recorded_statuses(&txns), "{}", run.stdout);
    assert_eq!(recording_counts(origin), (txns.len() as u64, 0));
}

#[test]
fn what_cannot_be_served_is_refused_in_one_line() {
    let txns = transactions();
    let (_d1, no_responses) = temp_file("requests.yaml", &verifier_file(&txns, false));
    let (_d2, log) =
        temp_file("access.log", "127.0.0.1 - - [26/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 2 \"-\" \"curl\"\n");
    let (_d3, recorded) = temp_file("recorded.yaml", &verifier_file(&txns, true));
    let rows: [(Vec<&str>, &str); 7] = [
        (vec!["--replay", &no_responses], "no recorded response"),
        (vec!["--replay", &log], "holds no responses"),
        (vec!["--replay", "/nonexistent/recorded.yaml"], "cannot read"),
        (vec!["--replay-key", "url"], "--replay"),
        (vec!["--replay", &recorded, "--status", "500"], "--status"),
        (vec!["--replay", &recorded, "--body-size", "10"], "--body-size"),
        (vec!["--replay", &recorded, "--max-age", "60s"], "--max-age"),
    ];
    for (flags, says) in rows {
        let run = strain_raw(&[&["origin", "--listen", "127.0.0.1:0"], &flags[..]].concat());
        assert_eq!(run.code, 2, "{flags:?}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{flags:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{flags:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{flags:?}: {}", run.stdout);
    }
}
