//! A replay file modelled on Proxy Verifier's own examples (`doctest/example_replay.yaml`, a
//! Traffic Dump file, the HTTP/2 frames form), in YAML and in JSON, read into exact records.

use super::*;
use crate::replay::read::{detect_structured, Format};

use crate::replay::read::testing::{h, AT_US};

/// Every item of `text`, or the reader's error.
fn items(text: &str) -> Result<Vec<Item>, ReadError> {
    crate::replay::read::testing::items(&crate::replay::read::Format::Verifier, text.as_bytes())
}

/// Two sessions: HTTP/1.1 with Traffic Dump's times, then HTTP/2 with none.
const REPLAY: &str = r#"meta:
    version: '1.0'

sessions:

# HTTP/1.1 over TCP; times as Traffic Dump writes them.
- connection-time: 1795690378000000000
  protocol: [ { name: tcp }, {name: ip} ]

  transactions:
  - start-time: 1795690378000250999
    uuid: first-request
    client-request:
      method: POST
      url: /pictures/flower.jpeg
      version: '1.1'
      headers:
        encoding: esc_json
        fields:
        - [ Host, www.example.com ]
        - [ Content-Type, image/jpeg ]
        - [ Content-Length, '399' ]
        - [ uuid, first-request ]
      # No content node: the Content-Length says the size.

    proxy-request:
      url:
      - [ path, { value: flower.jpeg, as: contains } ]
      headers:
        fields:
        - [ Content-Length, { value: '399', as: present } ]

    server-response:
        status: 200
        reason: OK
        headers:
          fields:
          - [ Date, "Sat, 16 Mar 2019 03:11:36 GMT" ]
          - [ Content-Type, image/jpeg ]
          - [ Transfer-Encoding, chunked ]
        content:
          size: 3432

    proxy-response:
      status: 200
      headers:
        fields:
        - [ Transfer-Encoding, { value: chunked, as: equal } ]

  # No start-time: the session's connection-time.
  - client-request:
      method: PUT
      url: http://example.com/config?x=1
      version: '1.1'
      headers:
        fields:
        - [ Host, example.com ]
        - [ uuid, 2 ]
      content:
        encoding: uri
        data: key=a%20b%2
    server-response:
      status: 404
      reason: Not Found
      headers:
        fields:
        - [ Content-Type, text/yaml ]
        - [ Content-Length, 12 ]
      content:
        encoding: plain
        data: |
          ### Heading
    proxy-response:
      status: 404

# HTTP/2 over TLS, no times: spaced after the record before.
- protocol:
  - name: http
    version: 2
  - name: tls
    sni: test_sni
  - name: tcp
  - name: ip

  transactions:
  - client-request:
      headers:
        fields:
        - [ :method, POST ]
        - [ :scheme, https ]
        - [ :authority, www.example.com ]
        - [ :path, /pictures/flower.jpeg ]
        - [ Content-Type, image/jpeg ]
        - [ uuid, second-request ]
      content:
        size: 399
    server-response:
      headers:
        fields:
        - [ :status, 200 ]
        - [ Date, "Sat, 16 Mar 2019 03:11:36 GMT" ]
      content:
        size: 3432
    proxy-response:
      status: 200

  - client-request:
      frames:
      - HEADERS:
          headers:
            fields:
            - [ :method, GET ]
            - [ :path, /b ]
            - [ uuid, 4 ]
      - RST_STREAM:
          error-code: STREAM_CLOSED
    server-response:
      frames:
      - HEADERS:
          headers:
            fields:
            - [ :status, 200 ]
      - DATA:
          content:
            encoding: plain
            data: server_
      - DATA:
          content:
            data: test
            size: 4
    proxy-response:
      status: 200
"#;

/// The records of [`REPLAY`], in time order.
fn expected() -> Vec<Item> {
    let mut items = in_file_order();
    items.sort_by_key(|i| i.as_ref().map(|r| r.start_us).unwrap_or(i64::MIN));
    items
}

/// The records of [`REPLAY`], in file order.
fn in_file_order() -> Vec<Item> {
    vec![
        Ok(Record {
            start_us: AT_US + 250,
            method: "POST".into(),
            target: "/pictures/flower.jpeg".into(),
            headers: vec![
                h("Host", "www.example.com"),
                h("Content-Type", "image/jpeg"),
                h("Content-Length", "399"),
                h("uuid", "first-request"),
            ],
            body: Body::Generate(399),
            session: Some("1".into()),
            response: Some(Response {
                status: 200,
                headers: vec![
                    h("Date", "Sat, 16 Mar 2019 03:11:36 GMT"),
                    h("Content-Type", "image/jpeg"),
                    h("Transfer-Encoding", "chunked"),
                ],
                body: Body::Generate(3432),
            }),
            line: 1,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US,
            method: "PUT".into(),
            target: "http://example.com/config?x=1".into(),
            headers: vec![h("Host", "example.com"), h("uuid", "2")],
            body: Body::Bytes(b"key=a b%2".to_vec()),
            session: Some("1".into()),
            response: Some(Response {
                status: 404,
                headers: vec![h("Content-Type", "text/yaml"), h("Content-Length", "12")],
                body: Body::Bytes(b"### Heading\n".to_vec()),
            }),
            line: 2,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US + UNTIMED_SPACING_US,
            method: "POST".into(),
            target: "https://www.example.com/pictures/flower.jpeg".into(),
            headers: vec![h("Content-Type", "image/jpeg"), h("uuid", "second-request")],
            body: Body::Generate(399),
            session: Some("2".into()),
            response: Some(Response {
                status: 200,
                headers: vec![h("Date", "Sat, 16 Mar 2019 03:11:36 GMT")],
                body: Body::Generate(3432),
            }),
            line: 3,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US + 2 * UNTIMED_SPACING_US,
            method: "GET".into(),
            target: "/b".into(),
            headers: vec![h("uuid", "4")],
            session: Some("2".into()),
            response: Some(Response { status: 200, headers: vec![], body: Body::Bytes(b"server_test".to_vec()) }),
            line: 4,
            ..Record::default()
        }),
    ]
}

/// [`REPLAY`] as JSON, keys and values as the YAML has them.
fn replay_json() -> String {
    let doc: Value = serde_saphyr::from_str(REPLAY).unwrap();
    serde_json::to_string_pretty(&doc).unwrap()
}

#[test]
fn yaml_replay_file_reads_into_exact_records() {
    assert_eq!(items(REPLAY).unwrap(), expected());
}

#[test]
fn json_replay_file_reads_as_its_yaml() {
    let json = replay_json();
    assert!(json.starts_with('{'), "{json}");
    assert_eq!(items(&json).unwrap(), expected());
}

#[test]
fn a_file_without_any_time_is_spaced_in_order_from_zero() {
    let text = "sessions:\n- transactions:\n  - client-request: {method: GET, url: /a}\n  \
                - client-request: {method: GET, url: /b}\n- transactions:\n  - client-request: {method: GET, url: /c}\n";
    let starts: Vec<_> = items(text).unwrap().into_iter().map(|i| i.map(|r| (r.start_us, r.session))).collect();
    let s = |n: &str| Some(n.to_string());
    assert_eq!(starts, [Ok((0, s("1"))), Ok((1_000, s("1"))), Ok((2_000, s("2")))]);
}

#[test]
fn a_transaction_that_cannot_be_read_is_skipped_and_counted_and_reading_goes_on() {
    let text = r#"
sessions:
- start-time: soon
  transactions:
  - client-request: {method: GET, url: /a}
- transactions:
  - client-request: {url: /b}
  - client-request: {method: GET}
  - proxy-response: {status: 200}
  - client-request: {method: GET, url: /c, headers: {fields: [[a, b, c, d]]}}
  - client-request: {method: GET, url: /d, content: {encoding: base64, data: eA==}}
  - client-request: {method: GET, url: /e}
    server-response: {status: 2000}
  - client-request: {method: GET, url: /f}
    server-response: {reason: OK}
  - client-request: {method: GET, url: /g, headers: {fields: [[a, ~]]}}
  - client-request: {method: GET, url: /h, headers: {fields: [[a, {value: {x: 1}}]]}}
  - client-request: {method: GET, url: /i, delay: 15}
  - client-request: {method: GET, url: /j, frames: [{PUSH_PROMISE: {}}]}
  - just text
- just text
- {protocol: []}
- transactions:
  - start-time: 1795690378000000000
    client-request: {method: GET, url: /z}
"#;
    let got = items(text).unwrap();
    let skipped = |line, why: &str| Err(BadRecord::skipped(line, BadKind::Unreadable, why));
    let last = Record {
        start_us: AT_US,
        method: "GET".into(),
        target: "/z".into(),
        session: Some("5".into()),
        line: 14,
        ..Record::default()
    };
    assert_eq!(
        got,
        [
            skipped(1, "session 1: start-time \"soon\" is not a count of nanoseconds"),
            skipped(2, "client-request has no method"),
            skipped(3, "client-request has no url"),
            skipped(4, "no client-request"),
            skipped(5, r#"client-request: field ["a","b","c","d"] is not [name, value] or [name, value, rule]"#),
            skipped(6, "client-request: content encoding 'base64' is not known"),
            skipped(7, "server-response: status '2000' is not an HTTP status"),
            skipped(8, "server-response: no status"),
            skipped(9, r#"client-request: field ["a",null] has a value that is no text"#),
            skipped(10, r#"client-request: field ["a",{"value":{"x":1}}] has a value that is no text"#),
            skipped(11, "client-request: delay '15' is not a number and a unit (s, ms or us)"),
            skipped(12, "client-request: frame 'PUSH_PROMISE' is not HEADERS, DATA, RST_STREAM or GOAWAY"),
            skipped(13, "the transaction is not a map"),
            skipped(14, "session 3 is not a map"),
            skipped(14, "session 4 has no transactions list"),
            Ok(last),
        ]
    );
}

/// The records of `text`, which must all be readable.
fn records(text: &str) -> Vec<Record> {
    items(text).unwrap().into_iter().map(|i| i.unwrap_or_else(|bad| panic!("{bad:?}"))).collect()
}

#[test]
fn a_field_with_a_list_of_values_is_sent_once_per_value_in_order() {
    let text = r#"
sessions:
- transactions:
  - client-request:
      method: GET
      url: /a
      headers:
        fields:
        - [ x-test-duplicate-combined, [ first, second ] ]
        - [ x-test-duplicate-separate, first ]
        - [ x-test-duplicate-separate, second ]
        - [ Accept, [ text/html, 1, true ] ]
        - [ Host, example.com, equal ]
        - [ uuid, 1 ]
    server-response:
      status: 200
      headers:
        fields:
        - [ Set-Cookie, [ a=1, b=2 ] ]
"#;
    let got = records(text);
    assert_eq!(
        got[0].headers,
        [
            h("x-test-duplicate-combined", "first"),
            h("x-test-duplicate-combined", "second"),
            h("x-test-duplicate-separate", "first"),
            h("x-test-duplicate-separate", "second"),
            h("Accept", "text/html"),
            h("Accept", "1"),
            h("Accept", "true"),
            h("Host", "example.com"),
            h("uuid", "1"),
        ]
    );
    let response = got[0].response.as_ref().unwrap();
    assert_eq!(response.headers, [h("Set-Cookie", "a=1"), h("Set-Cookie", "b=2")]);
}

#[test]
fn an_all_block_adds_its_fields_to_its_transactions_request_and_response() {
    // As Proxy Verifier's http2_to_http2.yaml: `all` sits beside client-request, and its
    // fields are merged after each message's own.
    let text = r#"
sessions:
- transactions:
  - all:
      headers:
        fields:
        - [ uuid, 1 ]
    client-request:
      method: GET
      url: /a
      headers:
        fields:
        - [ Accept, '*/*' ]
    server-response:
      status: 200
      headers:
        fields:
        - [ Content-Type, text/plain ]
  - all: { headers: { fields: [ [ uuid, 2 ], [ x-both, [ a, b ] ] ] } }
    client-request: { method: GET, url: /b }
  - client-request: { method: GET, url: /c }
"#;
    let got = records(text);
    assert_eq!(got[0].headers, [h("Accept", "*/*"), h("uuid", "1")]);
    assert_eq!(got[0].response.as_ref().unwrap().headers, [h("Content-Type", "text/plain"), h("uuid", "1")]);
    assert_eq!(got[1].headers, [h("uuid", "2"), h("x-both", "a"), h("x-both", "b")]);
    assert_eq!(got[2].headers, [], "an all block is its own transaction's only");
}

#[test]
fn frames_give_the_head_and_the_body_of_an_http2_message() {
    let text = r#"
sessions:
- protocol: [ { name: http, version: 2 }, { name: tls, sni: test_sni }, { name: tcp }, { name: ip } ]
  transactions:
  # HEADERS and two DATA frames: the parts in order.
  - client-request:
      frames:
      - HEADERS:
          headers:
            fields:
            - [ :method, POST ]
            - [ :scheme, https ]
            - [ :authority, example.data.com ]
            - [ :path, /a/path ]
            - [ uuid, 1 ]
      - DATA: { content: { encoding: plain, data: client_data_1 } }
      - DATA: { content: { encoding: uri, data: "%5F2" } }
    server-response:
      frames:
      - HEADERS: { headers: { fields: [ [ :status, 200 ] ] } }
      - DATA: { content: { size: 3432 } }
  # A HEADERS frame and the message's own content, as client-side-delay.yaml has it; the
  # nodes beside the frames are not the head.
  - client-request:
      method: GET
      url: /ignored
      frames:
      - HEADERS:
          headers:
            fields:
            - [ :method, POST ]
            - [ :path, /b ]
            - [ :authority, b.test ]
      - RST_STREAM: { error-code: CANCEL, delay: 1s }
      content: { size: 399 }
  # DATA frames and no HEADERS frame: the head is the message's own.
  - client-request:
      method: PUT
      url: /c
      headers: { fields: [ [ uuid, 3 ] ] }
      content: { data: not sent }
      frames:
      - data: { content: { size: 2 } }
      - DATA: { content: { size: 3 } }
      - GOAWAY: { error-code: NO_ERROR }
"#;
    let got = records(text);
    let row = |r: &Record| (r.method.clone(), r.target.clone(), r.headers.clone(), r.body.clone());
    assert_eq!(
        row(&got[0]),
        (
            "POST".into(),
            "https://example.data.com/a/path".into(),
            vec![h("uuid", "1")],
            Body::Bytes(b"client_data_1_2".to_vec())
        )
    );
    assert_eq!(got[0].response, Some(Response { status: 200, headers: vec![], body: Body::Generate(3432) }));
    assert_eq!(row(&got[1]), ("POST".into(), "/b".into(), vec![h("Host", "b.test")], Body::Generate(399)));
    assert_eq!(row(&got[2]), ("PUT".into(), "/c".into(), vec![h("uuid", "3")], Body::Generate(5)));
}

#[test]
fn delays_move_a_request_and_the_rest_of_its_session_later() {
    // Proxy Verifier waits a session's delay before its connection and a client-request's
    // before its request; a session's transactions go in order, sessions side by side.
    let text = r#"
sessions:
- delay: 250 ms
  transactions:
  - client-request: { delay: 250000us, method: GET, url: /a1 }
  - client-request: { method: GET, url: /a2 }
  - client-request: { delay: 1 s, method: GET, url: /a3 }
- delay: 1s
  transactions:
  - client-request: { delay: 1000ms, method: GET, url: /b1 }
  - client-request: { delay: 17000 us, method: GET, url: /b2 }
- transactions:
  - client-request: { method: GET, url: /c1 }
- start-time: 1795690378000000000
  transactions:
  - client-request: { delay: 2s, method: GET, url: /d1 }
  - start-time: 1795690379000000000
    client-request: { method: GET, url: /d2 }
"#;
    let got: Vec<_> = records(text).into_iter().map(|r| (r.target, r.start_us)).collect();
    let at = |t: &str, us: i64| (t.to_string(), us);
    let ms = 1_000;
    // Untimed: 1 ms apart in file order before delays; the records come in time order.
    assert_eq!(
        got,
        [
            at("/c1", 5 * ms),
            at("/a1", 500 * ms),
            at("/a2", ms + 500 * ms),
            at("/a3", 2 * ms + 1_500 * ms),
            at("/b1", 3 * ms + 2_000 * ms),
            at("/b2", 4 * ms + 2_017 * ms),
            at("/d1", AT_US + 2_000 * ms),
            at("/d2", AT_US + 3_000 * ms),
        ]
    );
}

#[test]
fn anchors_aliases_and_merge_keys_are_resolved() {
    // ATS's and Proxy Verifier's replay files keep shared nodes under meta and merge them in.
    let text = r#"
meta:
  version: "1.0"
  blocks:
  - base_request: &base_request
      version: "1.1"
      method: GET
      headers:
        fields: &base_fields
        - [ Host, example.com ]
        - [ Accept, "*/*" ]
  - ok: &ok_response
      status: 200
      reason: OK
      content: { size: 16 }

sessions:
- transactions:
  - client-request:
      <<: *base_request
      url: /one
    server-response: *ok_response
  - client-request:
      <<: *base_request
      method: HEAD
      url: /two
      headers:
        fields: *base_fields
    server-response:
      <<: *ok_response
      status: 304
"#;
    let got = records(text);
    let fields = vec![h("Host", "example.com"), h("Accept", "*/*")];
    assert_eq!((got[0].method.as_str(), got[0].target.as_str(), &got[0].headers), ("GET", "/one", &fields));
    assert_eq!(got[0].response, Some(Response { status: 200, headers: vec![], body: Body::Generate(16) }));
    assert_eq!((got[1].method.as_str(), got[1].target.as_str(), &got[1].headers), ("HEAD", "/two", &fields));
    assert_eq!(got[1].response.as_ref().map(|r| r.status), Some(304));
}

#[test]
fn verification_forms_are_read_and_not_sent() {
    let text = r#"
sessions:
- transactions:
  - client-request:
      method: GET
      url: /a?q=3
      headers:
        fields:
        - [ Host, { value: example.com, as: equal } ]
        - [ X-Pair, { value: [ a, b ], as: includes } ]
        - [ X-Absent, { as: absent } ]
        - [ uuid, 1 ]
    proxy-request:
      protocol: [ { name: http, version: 2 } ]
      url:
      - [ path, { value: /a, as: equal } ]
      - [ query, { value: 3, as: contains } ]
      - [ fragment, { as: absent } ]
      method: [ { value: GET, as: equal } ]
      expect: absent
      headers:
        fields:
        - [ :method, { value: GET, as: equal } ]
        - [ Host, { value: EXAMPLE.COM, as: equal, case: ignore } ]
        - [ X-Forwarded-For, { value: a, not: prefix } ]
        - [ x-dup, { value: [ one, two ], as: equal } ]
      content: { verify: { value: abc, as: contains } }
    server-response:
      status: 200
      headers:
        fields:
        - [ Set-Cookie, { value: ABCD, as: equal } ]
    proxy-response:
      status: 200
      headers:
        fields:
        - [ Set-Cookie, { value: ABCD, as: equal } ]
        - [ X-Not-A-Header, { value: Whatever, as: absent } ]
      content: { verify: { as: absent } }
"#;
    let got = records(text);
    // In a client-request a rule's value is still the field sent, as Proxy Verifier adds it.
    assert_eq!(got[0].headers, [h("Host", "example.com"), h("X-Pair", "a"), h("X-Pair", "b"), h("uuid", "1")]);
    assert_eq!(got[0].target, "/a?q=3");
    assert_eq!(got[0].body, Body::None);
    assert_eq!(
        got[0].response,
        Some(Response { status: 200, headers: vec![h("Set-Cookie", "ABCD")], body: Body::None })
    );
}

#[test]
fn a_body_given_only_by_its_size_is_generated_at_that_size() {
    let text = r#"
sessions:
- transactions:
  - client-request: { method: POST, url: /size, content: { encoding: plain, size: 402 } }
  - client-request:
      method: POST
      url: /length
      headers: { fields: [ [ Content-Length, '399' ] ] }
  - client-request:
      method: POST
      url: /empty
      headers: { fields: [ [ Content-Length, "0" ] ] }
      content: { encoding: plain, size: 0 }
  - client-request: { method: POST, url: /data-wins, content: { size: 6, data: CACHED } }
  - client-request:
      method: POST
      url: /data-and-length
      headers: { fields: [ [ Content-Length, '9' ] ] }
      content: { data: abc }
    server-response: { status: 200, content: { size: 3432 } }
"#;
    let got: Vec<_> = records(text).into_iter().map(|r| (r.target, r.body)).collect();
    let row = |t: &str, b: Body| (t.to_string(), b);
    assert_eq!(
        got,
        [
            row("/size", Body::Generate(402)),
            row("/length", Body::Generate(399)),
            row("/empty", Body::None),
            row("/data-wins", Body::Bytes(b"CACHED".to_vec())),
            row("/data-and-length", Body::Bytes(b"abc".to_vec())),
        ]
    );
}

#[test]
fn a_marked_or_utf16_file_reads_as_utf8() {
    let mut utf16 = vec![0xFF, 0xFE];
    for unit in REPLAY.encode_utf16() {
        utf16.extend(unit.to_le_bytes());
    }
    let bom = format!("\u{feff}{REPLAY}");
    for bytes in [bom.as_bytes(), &utf16] {
        let got = crate::replay::read::testing::items(&Format::Verifier, bytes).unwrap();
        assert_eq!(got, expected());
        assert_eq!(detect_structured(&bytes[..bytes.len().min(200)]), Some(Format::Verifier));
    }
}

#[test]
fn reading_stops_when_the_sink_breaks() {
    let mut seen = Vec::new();
    read(&mut REPLAY.as_bytes(), &mut |item| {
        seen.push(item);
        ControlFlow::Break(())
    })
    .unwrap();
    assert_eq!(seen, expected()[..1]);
}

#[test]
fn a_file_that_is_not_a_replay_file_is_malformed() {
    for not_replay in
        ["meta:\n  version: '1.0'\n", "sessions: [unclosed\n", "{\"sessions\": ", "- a\n- b\n", "sessions: 3\n"]
    {
        let got = items(not_replay);
        assert!(matches!(got, Err(ReadError::Malformed(_))), "{not_replay}: {got:?}");
    }
    assert_eq!(items("sessions: []\n").unwrap(), []);
}

#[test]
fn detect_structured_tells_each_format_apart() {
    let json = replay_json();
    let har = "\u{feff}{\n  \"log\": {\n    \"version\": \"1.2\",\n    \"entries\": [{\"request\": {\"url\": \"/";
    let rows: &[(&str, &[u8], Option<Format>)] = &[
        ("YAML replay file", REPLAY.as_bytes(), Some(Format::Verifier)),
        ("YAML cut short", &REPLAY.as_bytes()[..40], Some(Format::Verifier)),
        ("JSON replay file", json.as_bytes(), Some(Format::Verifier)),
        ("JSON replay file cut inside meta", &json.as_bytes()[..12], Some(Format::Verifier)),
        ("Traffic Dump key order", b"{\"x\": {\"sessions\": 1}, \"sessions\": [", Some(Format::Verifier)),
        ("HAR cut short", har.as_bytes(), Some(Format::Har)),
        ("HAR with log after a comment key", b"{\"comment\": \"a \\\"log\\\"\", \"log\": {", Some(Format::Har)),
        ("JSON lines", b"{\"url\":\"/a\",\"time\":1}\n{\"url\":\"/b\"", Some(Format::JsonLines)),
        ("nginx log", b"192.0.2.1 - - [26/Nov/2026:10:52:58 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl\"\n", None),
        ("YAML of something else", b"apiVersion: v1\nkind: Pod\n", None),
        ("JSON of something else", b"{\"name\": \"x\", \"items\": [{\"log\": 1}]}", None),
        ("empty", b"", None),
    ];
    for (what, head, want) in rows {
        assert_eq!(detect_structured(head), *want, "{what}");
    }
}

#[test]
fn no_cut_of_a_replay_file_panics() {
    // A file cut anywhere is an error or fewer transactions, never a panic.
    let json = replay_json();
    for text in [REPLAY, json.as_str()] {
        for end in (0..text.len()).filter(|&i| text.is_char_boundary(i)).step_by(2) {
            let _ = items(&text[..end]);
        }
    }
}
