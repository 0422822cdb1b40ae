//! HAR files as Chromium writes them, read into exact records.

use super::*;

use crate::replay::read::testing::{h, AT_US};

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
fn a_broken_entry_is_a_bad_record_and_reading_goes_on() {
    let good = r#"{"startedDateTime": "2026-11-26T10:52:58Z", "request": {"method": "GET", "url": "http://a.test/"}}"#;
    let har = format!(
        r#"{{"log": {{"entries": [{good},
            {{"request": {{"method": "GET", "url": "http://a.test/"}}}},
            {{"startedDateTime": "yesterday", "request": {{"method": "GET", "url": "http://a.test/"}}}},
            {{"startedDateTime": "2026-11-26T10:52:58Z", "request": {{"method": "POST", "url": "http://a.test/",
              "postData": {{"text": "%%%", "encoding": "base64"}}}}}},
            {{"startedDateTime": "2026-11-26T10:52:58Z", "request": {{"method": "GET", "url": "http://a.test/"}},
              "response": {{"status": 70000}}}},
            {good}]}}}}"#
    );
    let got = items(&har).unwrap();
    let ok = |line| {
        Ok(Record { start_us: AT_US, method: "GET".into(), target: "http://a.test/".into(), line, ..Record::default() })
    };
    let bad = |line, why: &str| Err(BadRecord::unmatched(line, why));
    assert_eq!(got.len(), 6);
    assert_eq!(got[0], ok(1));
    assert_eq!(got[1], bad(2, "missing field `startedDateTime`"));
    assert_eq!(got[2], bad(3, "startedDateTime 'yesterday' is not RFC 3339"));
    assert_eq!(got[3], bad(4, "request.postData.text is not base64"));
    assert_eq!(got[4], bad(5, "response.status 70000 is not an HTTP status"));
    assert_eq!(got[5], ok(6));
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
