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

/// The records of [`REPLAY`].
fn expected() -> Vec<Item> {
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
            body: Body::Size(399),
            session: Some("1".into()),
            response: Some(Response {
                status: 200,
                headers: vec![
                    h("Date", "Sat, 16 Mar 2019 03:11:36 GMT"),
                    h("Content-Type", "image/jpeg"),
                    h("Transfer-Encoding", "chunked"),
                ],
                body: Body::Size(3432),
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
            body: Body::Size(399),
            session: Some("2".into()),
            response: Some(Response {
                status: 200,
                headers: vec![h("Date", "Sat, 16 Mar 2019 03:11:36 GMT")],
                body: Body::Size(3432),
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
fn a_bad_transaction_is_a_bad_record_and_reading_goes_on() {
    let text = r#"
sessions:
- start-time: soon
  transactions:
  - client-request: {method: GET, url: /a}
- transactions:
  - client-request: {url: /b}
  - client-request: {method: GET}
  - proxy-response: {status: 200}
  - client-request: {method: GET, url: /c, headers: {fields: [[a, b, c]]}}
  - client-request: {method: GET, url: /d, content: {encoding: base64, data: eA==}}
  - client-request: {method: GET, url: /e}
    server-response: {status: 2000}
  - client-request: {method: GET, url: /f}
    server-response: {reason: OK}
- just text
- {protocol: []}
- transactions:
  - start-time: 1795690378000000000
    client-request: {method: GET, url: /g}
"#;
    let got = items(text).unwrap();
    let bad = |line, why: &str| Err(BadRecord::unmatched(line, why));
    assert_eq!(got[0], bad(1, "session 1: start-time \"soon\" is not a count of nanoseconds"));
    assert_eq!(got[1], bad(2, "client-request has no method"));
    assert_eq!(got[2], bad(3, "client-request has no url"));
    assert_eq!(got[3], bad(4, "no client-request"));
    assert!(
        matches!(&got[4], Err(BadRecord { line: 5, why, .. }) if why.starts_with("not a transaction: invalid length 3")),
        "{:?}",
        got[4]
    );
    assert_eq!(got[5], bad(6, "client-request: content encoding 'base64' is not known"));
    assert_eq!(got[6], bad(7, "server-response: status '2000' is not an HTTP status"));
    assert_eq!(got[7], bad(8, "server-response: no status"));
    assert_eq!(got[8], bad(9, "session 3 is not a map"));
    assert_eq!(got[9], bad(9, "session 4 has no transactions list"));
    let last = Record {
        start_us: AT_US,
        method: "GET".into(),
        target: "/g".into(),
        session: Some("5".into()),
        line: 9,
        ..Record::default()
    };
    assert_eq!(got[10], Ok(last));
    assert_eq!(got.len(), 11);
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
