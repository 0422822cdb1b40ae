//! JSON lines with each kind of time, bodies, keys and bad lines, read into exact records.

use super::*;

use crate::replay::read::testing::{h, AT_US};

/// Every item of `text`, or the reader's error.
fn items(text: &str) -> Result<Vec<Item>, ReadError> {
    crate::replay::read::testing::items(&crate::replay::read::Format::JsonLines, text.as_bytes())
}

#[test]
fn each_time_form_body_and_key_reads_exactly() {
    let text = concat!(
        r#"{"method":"POST","url":"http://a.test/p","header":{"X-B":["1","2"],"A-First":["z"]},"body":"aGVsbG8=","time":"2026-11-26T11:52:58.25+01:00","session":"s1","connection":"c9","client":"192.0.2.1"}"#,
        "\n\n   \r\n",
        r#"{"url":"http://a.test/g","time":1795690378.123456}"#,
        "\r\n",
        r#"{"method":"DELETE","url":"/x","time":"1795690378.5","body":""}"#,
        "\n",
        r#"{"method":"GET","url":"/y","time":1795690379}"#,
    );
    let want = vec![
        Ok(Record {
            start_us: AT_US + 250_000,
            method: "POST".into(),
            target: "http://a.test/p".into(),
            headers: vec![h("X-B", "1"), h("X-B", "2"), h("A-First", "z")],
            body: Body::Bytes(b"hello".to_vec()),
            client: Some("192.0.2.1".into()),
            connection: Some("c9".into()),
            session: Some("s1".into()),
            line: 1,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US + 123_456,
            method: "GET".into(),
            target: "http://a.test/g".into(),
            line: 4,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US + 500_000,
            method: "DELETE".into(),
            target: "/x".into(),
            line: 5,
            ..Record::default()
        }),
        Ok(Record {
            start_us: AT_US + 1_000_000,
            method: "GET".into(),
            target: "/y".into(),
            line: 6,
            ..Record::default()
        }),
    ];
    assert_eq!(items(text).unwrap(), want);
}

#[test]
fn a_bad_line_is_a_bad_record_naming_what_is_wrong() {
    let text = [
        r#"{"url":"/a","time":"2026-11-26T10:52:58Z"}"#,
        r#"{"url":"/b"}"#,
        r#"{"time":"2026-11-26T10:52:58Z","method":"GET"}"#,
        r#"{"url":"/c","time":"last tuesday"}"#,
        r#"{"url":"/d","time":-5}"#,
        r#"{"url":"/e","time":1795690378,"body":"not base64!"}"#,
        r#"{"url":"/f","time":1795690378,"header":{"X":"not a list"}}"#,
        r#"{"url": "/g", "#,
        r#"{"url":"/h","time":1795690378}"#,
    ]
    .join("\n");
    let got = items(&text).unwrap();
    let bad = |line, why: &str| Err(BadRecord::unmatched(line, why));
    assert_eq!(
        got[0],
        Ok(Record { start_us: AT_US, method: "GET".into(), target: "/a".into(), line: 1, ..Record::default() })
    );
    assert_eq!(got[1], bad(2, "no time"));
    assert_eq!(got[2], bad(3, "no url"));
    assert_eq!(got[3], bad(4, "time 'last tuesday' is neither RFC 3339 nor Unix seconds"));
    assert_eq!(got[4], bad(5, "time -5 is not Unix seconds"));
    assert_eq!(got[5], bad(6, "the body is not base64"));
    assert!(
        matches!(&got[6], Err(BadRecord { line: 7, why, .. }) if why.starts_with("not a JSON target: invalid type")),
        "{:?}",
        got[6]
    );
    assert!(
        matches!(&got[7], Err(BadRecord { line: 8, why, .. }) if why.starts_with("not a JSON target: EOF")),
        "{:?}",
        got[7]
    );
    assert_eq!(
        got[8],
        Ok(Record { start_us: AT_US, method: "GET".into(), target: "/h".into(), line: 9, ..Record::default() })
    );
    assert_eq!(got.len(), 9);
}

#[test]
fn reading_stops_when_the_sink_breaks() {
    let text = "{\"url\":\"/a\",\"time\":1}\n{\"url\":\"/b\",\"time\":2}\n";
    let mut seen = Vec::new();
    read(&mut text.as_bytes(), &mut |item| {
        seen.push(item);
        ControlFlow::Break(())
    })
    .unwrap();
    assert_eq!(
        seen,
        [Ok(Record { start_us: 1_000_000, method: "GET".into(), target: "/a".into(), line: 1, ..Record::default() })]
    );
}

#[test]
fn a_file_whose_first_line_is_not_an_object_is_malformed() {
    for not_jsonl in ["\n127.0.0.1 - - [26/Nov/2026:10:52:58 +0000] \"GET / HTTP/1.1\" 200 5\n", "[{\"url\":\"/\"}]\n"]
    {
        let got = items(not_jsonl);
        assert!(
            matches!(got, Err(ReadError::Malformed(ref m)) if m.contains("line 2") || m.contains("line 1")),
            "{got:?}"
        );
    }
    assert_eq!(items("\n\n").unwrap(), []);
}
