//! HAR files as Chromium writes them, read into exact records.

use super::*;

use crate::replay::read::testing::{h, AT_US};
use crate::replay::read::Format;

/// Every item of `text`, or the reader's error.
fn items(text: &str) -> Result<Vec<Item>, ReadError> {
    crate::replay::read::testing::items(&crate::replay::read::Format::Har, text.as_bytes())
}

/// The `pages` list of the captures below.
const PAGES: &str = r#"[{"startedDateTime": "2026-11-26T10:52:57.900Z", "id": "page_1",
    "title": "https://shop.test/", "pageTimings": {"onContentLoad": 120.5, "onLoad": 300.1}}]"#;

/// Four entries as Chromium's DevTools exports them (h2, so pseudo-headers in the list).
const ENTRIES: &str = r#"[
  {
    "_initiator": {"type": "script"}, "_priority": "High", "_resourceType": "fetch",
    "cache": {}, "connection": "443021", "pageref": "page_1",
    "request": {
      "method": "POST", "url": "https://shop.test/api/cart?x=1", "httpVersion": "http/2.0",
      "headers": [
        {"name": ":authority", "value": "shop.test"}, {"name": ":method", "value": "POST"},
        {"name": ":path", "value": "/api/cart?x=1"}, {"name": ":scheme", "value": "https"},
        {"name": "content-type", "value": "application/octet-stream"},
        {"name": "user-agent", "value": "Mozilla/5.0"}
      ],
      "queryString": [{"name": "x", "value": "1"}], "cookies": [], "headersSize": -1, "bodySize": 4,
      "postData": {"mimeType": "application/octet-stream", "text": "AAEC/w==", "encoding": "base64"}
    },
    "response": {
      "status": 200, "statusText": "", "httpVersion": "http/2.0",
      "headers": [{"name": "content-type", "value": "application/json"}, {"name": "server", "value": "o"}],
      "cookies": [], "content": {"size": 8, "mimeType": "application/json", "text": "eyJvayI6MX0=",
      "encoding": "base64"}, "redirectURL": "", "headersSize": -1, "bodySize": 28, "_transferSize": 120
    },
    "serverIPAddress": "192.0.2.7", "startedDateTime": "2026-11-26T10:52:58.123Z", "time": 31.2,
    "timings": {"blocked": 1, "dns": -1, "ssl": -1, "connect": -1, "send": 0.1, "wait": 30, "receive": 0.1}
  },
  {
    "connection": "443021", "pageref": "page_1",
    "request": {
      "method": "PUT", "url": "https://shop.test/api/cart/7", "httpVersion": "http/2.0",
      "headers": [{"name": ":method", "value": "PUT"}, {"name": "content-type", "value": "application/json"}],
      "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 9,
      "postData": {"mimeType": "application/json", "text": "{\"qty\":2}"}
    },
    "response": {"status": 204, "statusText": "", "httpVersion": "http/2.0", "headers": [], "cookies": [],
      "content": {"size": 0, "mimeType": "x-unknown"}, "redirectURL": "", "headersSize": -1, "bodySize": 0},
    "startedDateTime": "2026-11-26T11:52:58.5+01:00", "time": 12, "timings": {}
  },
  {
    "request": {"method": "GET", "url": "http://img.test/a.png", "httpVersion": "HTTP/1.1",
      "headers": [{"name": "Host", "value": "img.test"}], "queryString": [], "cookies": [],
      "headersSize": 40, "bodySize": 0},
    "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": [], "cookies": [],
      "content": {"size": 5120, "mimeType": "image/png"}, "redirectURL": "", "headersSize": 30, "bodySize": 5120},
    "startedDateTime": "2026-11-26T10:52:59Z", "time": 3, "timings": {}
  },
  {
    "connection": 8080,
    "request": {"method": "POST", "url": "http://a.test/upload", "httpVersion": "HTTP/1.1",
      "headers": [], "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 42},
    "response": {"status": 0, "statusText": "", "httpVersion": "", "headers": [], "cookies": [],
      "content": {"size": 0}, "redirectURL": "", "headersSize": -1, "bodySize": -1, "_error": "net::ERR_FAILED"},
    "startedDateTime": "2026-11-26T10:53:00Z", "time": 0, "timings": {}
  }
]"#;

/// The records of [`ENTRIES`].
fn expected() -> Vec<Item> {
    vec![
        Ok(Record {
            start_us: AT_US + 123_000,
            method: "POST".into(),
            target: "https://shop.test/api/cart?x=1".into(),
            headers: vec![h("content-type", "application/octet-stream"), h("user-agent", "Mozilla/5.0")],
            body: Body::Bytes(vec![0, 1, 2, 255]),
            connection: Some("443021".into()),
            session: Some("page_1".into()),
            response: Some(Response {
                status: 200,
                headers: vec![h("content-type", "application/json"), h("server", "o")],
                body: Body::Bytes(b"{\"ok\":1}".to_vec()),
            }),
            line: 1,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US + 500_000,
            method: "PUT".into(),
            target: "https://shop.test/api/cart/7".into(),
            headers: vec![h("content-type", "application/json")],
            body: Body::Bytes(b"{\"qty\":2}".to_vec()),
            connection: Some("443021".into()),
            session: Some("page_1".into()),
            response: Some(Response { status: 204, headers: vec![], body: Body::None }),
            line: 2,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US + 1_000_000,
            method: "GET".into(),
            target: "http://img.test/a.png".into(),
            headers: vec![h("Host", "img.test")],
            response: Some(Response { status: 200, headers: vec![], body: Body::Size(5120) }),
            line: 3,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US + 2_000_000,
            method: "POST".into(),
            target: "http://a.test/upload".into(),
            body: Body::Size(42),
            connection: Some("8080".into()),
            line: 4,
            ..Record::default()
        }),
    ]
}

#[test]
fn chromium_capture_reads_into_exact_records() {
    let har = format!(
        r#"{{"log": {{"version": "1.2", "creator": {{"name": "WebInspector", "version": "537.36"}},
            "pages": {PAGES}, "entries": {ENTRIES}}}}}"#
    );
    assert_eq!(items(&har).unwrap(), expected());
}

#[test]
fn entries_may_come_before_or_after_the_other_keys() {
    let before = format!(r#"{{"log": {{"entries": {ENTRIES}, "pages": {PAGES}, "version": "1.2"}}, "x": [1]}}"#);
    let after = format!(r#"{{"x": {{"log": 1}}, "log": {{"pages": {PAGES}, "comment": "", "entries": {ENTRIES}}}}}"#);
    assert_eq!(items(&before).unwrap(), expected());
    assert_eq!(items(&after).unwrap(), expected());
}

#[test]
fn post_data_params_are_url_encoded_when_there_is_no_text() {
    let har = r#"{"log": {"entries": [{"startedDateTime": "2026-11-26T10:52:58Z",
        "request": {"method": "POST", "url": "http://a.test/f", "headers": [], "bodySize": 20,
          "postData": {"mimeType": "application/x-www-form-urlencoded",
            "params": [{"name": "q", "value": "a b&c"}, {"name": "flag"}, {"name": "é", "value": "1"}]}}}]}}"#;
    let got = items(har).unwrap();
    let Ok(record) = &got[0] else { panic!("{got:?}") };
    assert_eq!(record.body, Body::Bytes(b"q=a+b%26c&flag&%C3%A9=1".to_vec()));
    assert_eq!(record.response, None);
}

#[test]
fn an_entry_that_cannot_be_read_is_skipped_and_counted_and_reading_goes_on() {
    let good = r#"{"startedDateTime": "2026-11-26T10:52:58Z", "request": {"method": "GET", "url": "http://a.test/"}}"#;
    let har = format!(
        r#"{{"log": {{"entries": [{good},
            {{"request": {{"method": "GET", "url": "http://a.test/"}}}},
            {{"startedDateTime": "yesterday", "request": {{"method": "GET", "url": "http://a.test/"}}}},
            {{"startedDateTime": "2026-11-26T10:52:58Z", "request": {{"method": "POST", "url": "http://a.test/",
              "postData": {{"text": "%%%", "encoding": "base64"}}}}}},
            {{"startedDateTime": "2026-11-26T10:52:58Z", "request": {{"method": "POST", "url": "http://a.test/",
              "postData": {{"text": "x", "encoding": "rot13"}}}}}},
            "an entry", 7, null,
            {{"startedDateTime": "2026-11-26T10:52:58Z"}},
            {{"startedDateTime": "2026-11-26T10:52:58Z", "request": {{"url": "http://a.test/"}}}},
            {{"startedDateTime": "2026-11-26T10:52:58Z", "request": {{"method": "GET", "url": ""}}}},
            {good}]}}}}"#
    );
    let got = items(&har).unwrap();
    let ok = |line| {
        Ok(Record { start_us: AT_US, method: "GET".into(), target: "http://a.test/".into(), line, ..Record::default() })
    };
    let skipped = |line, why: &str| Err(BadRecord::skipped(line, BadKind::Unreadable, why));
    assert_eq!(
        got,
        [
            ok(1),
            skipped(2, "no startedDateTime"),
            skipped(3, "startedDateTime 'yesterday' is not RFC 3339"),
            skipped(4, "request.postData.text is not base64"),
            skipped(5, "request.postData.encoding 'rot13' is not known"),
            skipped(6, "the entry is not an object"),
            skipped(7, "the entry is not an object"),
            skipped(8, "the entry is not an object"),
            skipped(9, "no request object"),
            skipped(10, "request has no method"),
            skipped(11, "request has no url"),
            ok(12),
        ]
    );
}

/// One entry at 10:52:58Z + `ms`, its request and response objects given as JSON.
fn entry(ms: u32, request: &str, response: &str) -> String {
    format!(
        r#"{{"startedDateTime": "2026-11-26T10:52:58.{ms:03}Z", "time": 1, "request": {request}, "response": {response}}}"#
    )
}

/// The records of a HAR holding `entries`.
fn records(entries: &[String]) -> Vec<Record> {
    let har = format!(r#"{{"log": {{"version": "1.2", "entries": [{}]}}}}"#, entries.join(","));
    items(&har).unwrap().into_iter().map(|i| i.unwrap_or_else(|bad| panic!("{bad:?}"))).collect()
}

#[test]
fn a_byte_order_mark_and_utf16_are_read_as_utf8() {
    let har = format!(
        r#"{{"log": {{"version": "1.2", "creator": {{"name": "Fiddler", "version": "4.6.2.2"}},
            "pages": {PAGES}, "entries": {ENTRIES}}}}}"#
    );
    let utf16 = |big_endian: bool| {
        let mut out = if big_endian { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
        for unit in har.encode_utf16() {
            out.extend(if big_endian { unit.to_be_bytes() } else { unit.to_le_bytes() });
        }
        out
    };
    let bom = format!("\u{feff}{har}").into_bytes();
    for (what, bytes) in [("UTF-8 with a mark", bom), ("UTF-16LE", utf16(false)), ("UTF-16BE", utf16(true))] {
        let got = crate::replay::read::testing::items(&Format::Har, &bytes).unwrap();
        assert_eq!(got, expected(), "{what}");
        let head = &bytes[..bytes.len().min(301)];
        assert_eq!(crate::replay::read::detect_structured(head), Some(Format::Har), "{what}");
    }
}

#[test]
fn form_parameters_whose_value_is_an_object_are_its_json_text() {
    // chrome-har and WebPageTest write a JSON body's members as params, objects and all. The
    // object's JSON has its keys in order of name (serde_json's map keeps no other).
    let request = r#"{"method": "POST", "url": "https://a.test/track", "httpVersion": "h2",
        "headers": [{"name": "content-type", "value": "application/json"}], "bodySize": 213,
        "postData": {"mimeType": "application/json", "params": [
          {"name": "type", "value": "FETCH"}, {"name": "current", "value": {"sid": false, "n": 0}},
          {"name": "list", "value": [1, "a"]}, {"name": "n", "value": 2.5}, {"name": "flag", "value": null},
          {"value": "no name"}]}}"#;
    let got = records(&[entry(0, request, r#"{"status": 204}"#)]);
    assert_eq!(
        got[0].body,
        Body::Bytes(
            b"type=FETCH&current=%7B%22n%22%3A0%2C%22sid%22%3Afalse%7D&list=%5B1%2C%22a%22%5D&n=2.5&flag".to_vec()
        )
    );
}

#[test]
fn unusual_values_are_read_leniently() {
    let get = |version: &str| {
        format!(
            r#"{{"method": "GET", "url": "https://a.test/{version}", "httpVersion": "{version}",
                "headers": [{{"name": "x-n", "value": 7}}, {{"name": "x-null", "value": null}}, {{"value": "nameless"}}],
                "cookies": [], "queryString": [], "headersSize": -1, "bodySize": -1}}"#
        )
    };
    let entries = [
        // Sizes of -1 (not known), an empty httpVersion, empty timings.
        entry(
            0,
            &get(""),
            r#"{"status": 200, "httpVersion": "", "headers": [], "content": {"size": -1, "mimeType": ""},
                "bodySize": -1, "headersSize": -1}"#,
        )
        .replace(r#""time": 1"#, r#""time": -1, "timings": {}"#),
        // h3 and a version no one knows; a status written as a string; no timings at all.
        entry(1, &get("h3"), r#"{"status": "304", "headers": [{"name": ":status", "value": "304"}]}"#),
        entry(2, &get("HTTP/9"), r#"{"status": 200, "content": {"size": 1.0, "text": "x", "encoding": "rot13"}}"#),
        // Status 0 (blocked, never answered) and a status that is none: no response.
        entry(3, &get("HTTP/1.1"), r#"{"status": 0, "content": {"size": 0}}"#),
        entry(4, &get("HTTP/1.1"), r#"{"status": -1}"#),
        entry(5, &get("HTTP/1.1"), r#"null"#).replace(r#""time": 1"#, r#""connection": 443, "pageref": 2"#),
    ];
    let got = records(&entries);
    let headers = vec![h("x-n", "7"), h("x-null", "")];
    for (i, r) in got.iter().enumerate() {
        assert_eq!((r.method.as_str(), &r.headers, &r.body), ("GET", &headers, &Body::None), "{i}");
    }
    let statuses: Vec<_> = got.iter().map(|r| r.response.as_ref().map(|r| (r.status, r.body.clone()))).collect();
    assert_eq!(
        statuses,
        [Some((200, Body::None)), Some((304, Body::None)), Some((200, Body::Size(1))), None, None, None]
    );
    assert_eq!(got[1].response.as_ref().map(|r| r.headers.len()), Some(0), "no :status field");
    assert_eq!((got[5].connection.as_deref(), got[5].session.as_deref()), (Some("443"), Some("2")));
    assert_eq!(got[2].target, "https://a.test/HTTP/9");
}

#[test]
fn pseudo_headers_are_the_request_line_and_never_fields() {
    let pseudo = |method: &str, url: &str, fields: &str| {
        format!(r#"{{"method": "{method}", "url": "{url}", "httpVersion": "h3", "headers": [{fields}]}}"#)
    };
    let f = |name: &str, value: &str| format!(r#"{{"name": "{name}", "value": "{value}"}}"#);
    let entries = [
        // As Chrome writes h2 and h3: the pseudo-headers agree with method and url.
        pseudo(
            "GET",
            "https://a.test/p?q=1",
            &[
                f(":method", "GET"),
                f(":authority", "a.test"),
                f(":scheme", "https"),
                f(":path", "/p?q=1"),
                f("accept", "*/*"),
            ]
            .join(","),
        ),
        // What went on the wire wins over the url's parts.
        pseudo(
            "GET",
            "https://a.test/old",
            &[f(":method", "POST"), f(":path", "/new?x"), f(":authority", "b.test:8443")].join(","),
        ),
        // No url: the pseudo-headers make the whole target.
        pseudo(
            "",
            "",
            &[f(":method", "PUT"), f(":scheme", "http"), f(":authority", "c.test"), f(":path", "/c")].join(","),
        ),
        // A relative url and an :authority without a scheme: the authority is the Host.
        pseudo("GET", "/d", &[f("accept", "*/*"), f(":authority", "d.test"), f("x", "1")].join(",")),
        // An :authority beside a Host field keeps the recorded Host; :protocol and others are dropped.
        pseudo(
            "GET",
            "/e",
            &[f("Host", "e.test"), f(":authority", "other.test"), f(":protocol", "websocket")].join(","),
        ),
    ];
    let entries: Vec<String> = entries.iter().map(|r| entry(0, r, r#"{"status": 200}"#)).collect();
    let got: Vec<_> = records(&entries).into_iter().map(|r| (r.method, r.target, r.headers)).collect();
    let row = |m: &str, t: &str, headers: Vec<(String, String)>| (m.to_string(), t.to_string(), headers);
    assert_eq!(
        got,
        [
            row("GET", "https://a.test/p?q=1", vec![h("accept", "*/*")]),
            row("POST", "https://b.test:8443/new?x", vec![]),
            row("PUT", "http://c.test/c", vec![]),
            row("GET", "/d", vec![h("accept", "*/*"), h("Host", "d.test"), h("x", "1")]),
            row("GET", "/e", vec![h("Host", "e.test")]),
        ]
    );
}

#[test]
fn entries_out_of_order_are_read_as_they_come() {
    // Firebug writes entries in the order requests finished; the walk sorts them by time.
    let get = |path: &str| format!(r#"{{"method": "GET", "url": "http://a.test/{path}"}}"#);
    let entries = [entry(900, &get("c"), "{}"), entry(0, &get("a"), "{}"), entry(450, &get("b"), "{}")];
    let got: Vec<_> = records(&entries).into_iter().map(|r| (r.start_us - AT_US, r.target, r.line)).collect();
    let row = |us, t: &str, line| (us, t.to_string(), line);
    assert_eq!(
        got,
        [row(900_000, "http://a.test/c", 1), row(0, "http://a.test/a", 2), row(450_000, "http://a.test/b", 3)]
    );
}

#[test]
fn reading_stops_when_the_sink_breaks() {
    let har = format!(r#"{{"log": {{"entries": {ENTRIES}, "pages": "this is never read"}}}}"#);
    let mut seen = Vec::new();
    let done = read(&mut har.as_bytes(), &mut |item| {
        seen.push(item);
        ControlFlow::Break(())
    });
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(seen, expected()[..1]);
}

#[test]
fn a_file_that_is_not_har_is_malformed() {
    for not_har in [
        "",
        "GET / HTTP/1.1",
        "[1, 2]",
        r#"{"log": {"version": "1.2", "pages": []}}"#,
        r#"{"other": {"entries": []}}"#,
        r#"{"log": {"entries": {}}}"#,
        r#"{"log": {"entries": []}} trailing"#,
    ] {
        let got = items(not_har);
        assert!(matches!(got, Err(ReadError::Malformed(_))), "{not_har}: {got:?}");
    }
    // A capture cut short gives what it held, then says it is cut.
    let cut = format!(r#"{{"log": {{"entries": {}"#, &ENTRIES[..ENTRIES.find("\n  },").unwrap_or(0) + 4]);
    let mut seen = 0;
    let got = read(&mut cut.as_bytes(), &mut |_| {
        seen += 1;
        ControlFlow::Continue(())
    });
    assert!(matches!(got, Err(ReadError::Malformed(_))), "{got:?}");
    assert_eq!(seen, 1);
    // An empty list is a HAR with nothing in it.
    assert_eq!(items(r#"{"log": {"entries": []}}"#).unwrap(), []);
}

#[test]
fn no_cut_of_a_capture_panics() {
    // A capture cut anywhere (a writer stopped, a download cut) is an error or fewer entries,
    // never a panic; in UTF-16 too, cut inside a code unit or a surrogate pair.
    let har = format!(r#"{{"log": {{"pages": {PAGES}, "entries": {ENTRIES}}}}}"#);
    let mut utf16 = vec![0xFF, 0xFE];
    for unit in har.encode_utf16() {
        utf16.extend(unit.to_le_bytes());
    }
    for bytes in [har.as_bytes(), &utf16] {
        for end in (0..bytes.len()).step_by(3) {
            let _ = crate::replay::read::testing::items(&Format::Har, &bytes[..end]);
            let _ = crate::replay::read::detect_structured(&bytes[..end]);
        }
    }
}
