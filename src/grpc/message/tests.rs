use std::path::PathBuf;

use prost::Message as _;

use super::*;
use crate::grpc::fixture;

fn req() -> MessageDescriptor {
    fixture::message("t.Req")
}

/// The plain encoding of `json` as a `t.Req`.
fn encoded(json: &str) -> Vec<u8> {
    json::message(&req(), &serde_json::from_str(json).unwrap()).unwrap().encode_to_vec()
}

fn rendered(m: &Messages, k: usize, call: u64) -> Vec<u8> {
    let mut out = Vec::new();
    m.render(k, call, &mut Rng::new(9), &mut out);
    out
}

fn file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn one_json_message_is_encoded_once() {
    let m = Messages::from_json(&req(), r#"{"name": "x", "lo": {"latitude": 7}}"#).unwrap();
    assert_eq!((m.len(), m.all_fixed()), (1, true));
    let want = encoded(r#"{"name": "x", "lo": {"latitude": 7}}"#);
    assert_eq!(m.fixed(0), Some(want.as_slice()));
    assert_eq!(m.fixed(5), Some(want.as_slice()));
    assert_eq!(rendered(&m, 3, 3), want);
    let empty = Messages::empty(&req());
    assert_eq!((empty.len(), empty.fixed(0)), (1, Some(&[][..])));
}

#[test]
fn a_json_array_is_sent_round_robin() {
    let m = Messages::from_json(&req(), r#"[{"name": "a"}, {"name": "b-{{n}}"}, {"name": "c"}]"#).unwrap();
    assert_eq!((m.len(), m.all_fixed()), (3, false));
    let (a, c) = (encoded(r#"{"name": "a"}"#), encoded(r#"{"name": "c"}"#));
    for k in 0..7 {
        match k % 3 {
            0 => assert_eq!(m.fixed(k), Some(a.as_slice())),
            1 => {
                assert_eq!(m.fixed(k), None);
                assert_eq!(rendered(&m, k, k as u64), encoded(&format!(r#"{{"name": "b-{k}"}}"#)));
            }
            _ => assert_eq!(m.fixed(k), Some(c.as_slice())),
        }
    }
}

#[test]
fn json_that_does_not_fit_names_the_message_and_the_field() {
    let err = |json: &str| Messages::from_json(&req(), json).unwrap_err().to_string();
    let table: [(&str, &str); 8] = [
        (r#"{"lo": {"latitude": "x"}}"#, r#"field "lo.latitude": expected a 32-bit integer, got "x""#),
        (r#"{"lo": {"lattitude": 1}}"#, r#"field "lo.lattitude": no such field in t.Point (its fields: latitude, longitude, label)"#),
        (r#"{"color": "BLUE"}"#, r#"field "color": expected one of t.Color's values (RED, GREEN) or a number, got "BLUE""#),
        (r#"[{}, {"points": [{"label": 1}]}]"#, r#"message 2: field "points[0].label": expected a string, got 1"#),
        (r#"[{}, {"name": "{{nope}}"}]"#, "message 2: field \"name\": unknown template {{nope}} (known: {{n}}, {{uuid}}, {{rand:N}}, {{now}}, {{unix_ms}}; {{{{ is a literal {{)"),
        (r#"{"name": "#, "invalid JSON: EOF while parsing a value at line 1 column 9"),
        ("[]", "the --data array: no messages in it"),
        ("7", "expected an object (a t.Req message), got 7"),
    ];
    for (json, want) in table {
        assert_eq!(err(json), want, "{json}");
    }
}

#[test]
fn json_lines_are_one_message_each_and_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "calls.jsonl", b"{\"name\": \"a\"}\n\n  \n{\"name\": \"{{n}}\"}\r\n");
    let m = Messages::from_json_lines(&req(), &path).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m.fixed(0), Some(encoded(r#"{"name": "a"}"#).as_slice()));
    assert_eq!(rendered(&m, 1, 12), encoded(r#"{"name": "12"}"#));
    let shown = |name: &str| dir.path().join(name).display().to_string();
    let bad = file(&dir, "bad.jsonl", b"{}\n\n{\"color\": 1.5}\n");
    assert_eq!(
        Messages::from_json_lines(&req(), &bad).unwrap_err().to_string(),
        format!(
            "{}:3: field \"color\": expected one of t.Color's values (RED, GREEN) or a number, got 1.5",
            shown("bad.jsonl")
        )
    );
    let broken = file(&dir, "broken.jsonl", b"{}\n{\"name\": }\n");
    assert_eq!(
        Messages::from_json_lines(&req(), &broken).unwrap_err().to_string(),
        format!("{}:2: invalid JSON: expected value at line 1 column 10", shown("broken.jsonl"))
    );
    let blank = file(&dir, "blank.jsonl", b"\n \n");
    assert_eq!(
        Messages::from_json_lines(&req(), &blank).unwrap_err().to_string(),
        format!("{}: no messages in it", shown("blank.jsonl"))
    );
    assert_eq!(
        Messages::from_json_lines(&req(), &dir.path().join("none.jsonl")).unwrap_err().to_string(),
        format!("{}: cannot read it: No such file or directory (os error 2)", shown("none.jsonl"))
    );
}

#[test]
fn binary_messages_are_length_delimited_and_checked_against_the_input_type() {
    let dir = tempfile::tempdir().unwrap();
    let jsons = [r#"{"name": "a"}"#, r#"{}"#, r#"{"lo": {"latitude": 300}, "tags": ["x"]}"#];
    let mut bytes = Vec::new();
    for json in jsons {
        json::message(&req(), &serde_json::from_str(json).unwrap())
            .unwrap()
            .encode_length_delimited(&mut bytes)
            .unwrap();
    }
    let m = Messages::from_binary(&req(), &file(&dir, "calls.bin", &bytes)).unwrap();
    assert_eq!((m.len(), m.all_fixed()), (3, true));
    for (k, json) in jsons.iter().enumerate() {
        assert_eq!(m.fixed(k), Some(encoded(json).as_slice()), "{json}");
    }
    let shown = |name: &str| dir.path().join(name).display().to_string();
    let err =
        |name: &str, bytes: &[u8]| Messages::from_binary(&req(), &file(&dir, name, bytes)).unwrap_err().to_string();
    // A bare message: its first key (field 6, length-delimited: 0x32) reads as a length of 50.
    assert_eq!(
        err("bare.bin", &encoded(r#"{"name": "hello"}"#)),
        format!(
            "{}: message 1: its prefix says 50 bytes but 6 are left \
             (--data-bin takes messages each prefixed by its length as a varint)",
            shown("bare.bin")
        )
    );
    // The second message: field 1 (a message) as a varint.
    assert_eq!(
        err("wrong.bin", &[0, 2, 0x08, 0x01]),
        format!("{}: message 2: not a t.Req: invalid wire type: Varint (expected LengthDelimited)", shown("wrong.bin"))
    );
    assert_eq!(
        err("cut.bin", &[0x80]),
        format!(
            "{}: message 1: no length prefix (--data-bin takes messages each prefixed by its length as a varint)",
            shown("cut.bin")
        )
    );
    assert_eq!(err("empty.bin", b""), format!("{}: no messages in it", shown("empty.bin")));
}

#[test]
fn templated_strings_are_filled_per_call() {
    let m = Messages::from_json(
        &req(),
        r#"{"name": "{{uuid}}", "tags": ["{{rand:12}}", "{{now}}"], "lo": {"label": "{{n}}"}}"#,
    )
    .unwrap();
    assert_eq!(m.fixed(0), None);
    let mut rng = Rng::new(1);
    let mut names = std::collections::HashSet::new();
    for call in 0..50 {
        let mut out = Vec::new();
        m.render(0, call, &mut rng, &mut out);
        let back = DynamicMessage::decode(req(), out.as_slice()).unwrap();
        let name = back.get_field_by_name("name").unwrap().as_str().unwrap().to_string();
        assert_eq!((name.len(), &name[14..15]), (36, "4"), "{name}");
        assert!(names.insert(name));
        let tags = back.get_field_by_name("tags").unwrap();
        let tags: Vec<&str> = tags.as_list().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(tags[0].len(), 12);
        assert!(tags[0].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!((tags[1].len(), &tags[1][10..11], &tags[1][23..]), (24, "T", "Z"), "{}", tags[1]);
        let lo = back.get_field_by_name("lo").unwrap();
        assert_eq!(
            lo.as_message().unwrap().get_field_by_name("label").unwrap().as_str(),
            Some(call.to_string().as_str())
        );
    }
}

#[test]
fn check_says_whether_a_response_decodes() {
    let point = fixture::message("t.Point");
    assert_eq!(check(&point, &[0x08, 0x05, 0x1a, 0x01, b'x']), Ok(()));
    assert_eq!(check(&point, &[]), Ok(()));
    assert_eq!(check(&point, &[0x1a, 0x05, b'x']), Err("not a t.Point: buffer underflow".to_string()));
    assert_eq!(
        check(&point, &[0x1a, 0x01, 0xff]),
        Err("not a t.Point: invalid string value: data is not UTF-8 encoded".to_string())
    );
}

/// Not a test of speed (nothing is asserted): prints what a render costs. Run with
/// `cargo test --release --lib grpc::message::tests::render_cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn render_cost() {
    let table = [
        ("fixed, 3 fields", r#"{"name": "hello", "lo": {"latitude": 1, "longitude": 2}, "color": "GREEN"}"#),
        ("{{n}} at the top", r#"{"name": "req-{{n}}", "lo": {"latitude": 1, "longitude": 2}, "color": "GREEN"}"#),
        ("{{n}} two deep", r#"{"points": [{"label": "{{n}}"}], "name": "hello", "tags": ["a", "b", "c"]}"#),
        ("uuid + now + rand:16", r#"{"name": "{{uuid}}", "tags": ["{{now}}", "{{rand:16}}"], "lo": {"latitude": 1}}"#),
    ];
    let mut rng = Rng::new(1);
    let mut out = Vec::with_capacity(1024);
    for (what, json) in table {
        let m = Messages::from_json(&req(), json).unwrap();
        let n = 1_000_000u64;
        let start = std::time::Instant::now();
        for call in 0..n {
            out.clear();
            m.render(0, call, &mut rng, &mut out);
            std::hint::black_box(&out);
        }
        let per = start.elapsed().as_secs_f64() / n as f64 * 1e6;
        let bytes = out.len();
        // The alternative's floor: clone the parsed message and encode it (setting the
        // templated fields would come on top).
        let parsed = json::message(&req(), &serde_json::from_str(json).unwrap()).unwrap();
        let start = std::time::Instant::now();
        for _ in 0..n / 10 {
            let copy = parsed.clone();
            out.clear();
            copy.encode(&mut out).unwrap();
            std::hint::black_box(&out);
        }
        let clone = start.elapsed().as_secs_f64() / (n / 10) as f64 * 1e6;
        println!("{what:24} {per:.3} µs per render ({bytes} bytes); clone + encode: {clone:.3} µs");
    }
}
