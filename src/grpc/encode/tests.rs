use super::*;
use crate::grpc::{fixture, json};
use crate::rng::Rng;

fn parsed(json: &str) -> DynamicMessage {
    json::message(&fixture::message("t.Req"), &serde_json::from_str(json).unwrap()).unwrap()
}

/// `json`'s encoding rendered for `call` at 2023-11-14T22:13:20.123Z.
fn rendered(json: &str, call: u64) -> Vec<u8> {
    let Encoding::Pieces(pieces) = encoding(parsed(json)).unwrap() else { panic!("{json}: no placeholders found") };
    let mut rng = Rng::new(3);
    let mut cx = Context::at(call, &mut rng, 1_700_000_000_123);
    let want = len(&pieces, &mut cx);
    let mut out = Vec::new();
    write(&pieces, &mut cx, &mut out);
    assert_eq!(out.len(), want, "{json}: the length said before writing");
    out
}

#[test]
fn a_message_without_placeholders_is_its_plain_encoding() {
    let json = r#"{"lo": {"latitude": 1}, "name": "x}}", "tags": ["a", "b"], "places": {"k": {"label": "l"}},
        "legacy": {"item": {"text": "t"}}}"#;
    let Encoding::Fixed(bytes) = encoding(parsed(json)).unwrap() else { panic!("fixed") };
    assert_eq!(bytes, parsed(json).encode_to_vec());
    // Escapes resolve at load and leave the message fixed.
    let Encoding::Fixed(bytes) = encoding(parsed(r#"{"name": "{{{{n}}", "tags": ["{{{{"]}"#)).unwrap() else {
        panic!("fixed")
    };
    assert_eq!(bytes, parsed(r#"{"name": "{{n}}", "tags": ["{{"]}"#).encode_to_vec());
}

#[test]
fn placeholders_at_any_depth_render_to_the_plain_encoding_of_the_filled_in_message() {
    // (template, the same message filled in for call 10 at the fixed time); no maps here, so
    // even the field order is the canonical one and the bytes must match exactly.
    let table: [(&str, &str); 8] = [
        (r#"{"name": "req-{{n}}"}"#, r#"{"name": "req-10"}"#),
        (
            r#"{"lo": {"latitude": 5, "label": "at {{now}}"}, "color": "GREEN", "counts": [1, 2]}"#,
            r#"{"lo": {"latitude": 5, "label": "at 2023-11-14T22:13:20.123Z"}, "color": "GREEN", "counts": [1, 2]}"#,
        ),
        (
            r#"{"points": [{"label": "a"}, {"label": "{{n}}", "longitude": 3}, {}], "name": "x"}"#,
            r#"{"points": [{"label": "a"}, {"label": "10", "longitude": 3}, {}], "name": "x"}"#,
        ),
        (r#"{"tags": ["a", "{{unix_ms}}", "{{{{"]}"#, r#"{"tags": ["a", "1700000000123", "{{"]}"#),
        (r#"{"note": "n={{n}}"}"#, r#"{"note": "n=10"}"#),
        (r#"{"a": "{{n}}{{n}}"}"#, r#"{"a": "1010"}"#),
        // A proto2 group, framed by keys.
        (r#"{"legacy": {"item": {"text": "{{n}}"}, "id": "i"}}"#, r#"{"legacy": {"item": {"text": "10"}, "id": "i"}}"#),
        (
            r#"{"blob": "AAE=", "lo": {"label": "{{n}}"}, "at": "2024-01-01T00:00:00Z", "b": "7"}"#,
            r#"{"blob": "AAE=", "lo": {"label": "10"}, "at": "2024-01-01T00:00:00Z", "b": "7"}"#,
        ),
    ];
    for (template, filled) in table {
        assert_eq!(rendered(template, 10), parsed(filled).encode_to_vec(), "{template}");
    }
}

#[test]
fn enclosing_length_prefixes_follow_the_rendered_strings() {
    let json = r#"{"points": [{"label": "{{n}}"}], "places": {"b": {"label": "{{n}}"}, "a": {"latitude": 1}}}"#;
    let desc = fixture::message("t.Req");
    for call in [0, 9, 10, 99_999, u64::MAX] {
        let back = DynamicMessage::decode(desc.clone(), rendered(json, call).as_slice()).unwrap();
        let filled = json.replace("{{n}}", &call.to_string());
        assert_eq!(back, parsed(&filled), "call {call}");
    }
    // A label of 200 characters needs a two-byte length prefix, and so does its point.
    let long = format!(r#"{{"lo": {{"label": "{}{{{{n}}}}"}}}}"#, "x".repeat(200));
    let back = DynamicMessage::decode(desc, rendered(&long, 5).as_slice()).unwrap();
    assert_eq!(back, parsed(&long.replace("{{n}}", "5")));
}

#[test]
fn a_bad_placeholder_names_its_field() {
    let table: [(&str, &str); 4] = [
        (r#"{"name": "{{id}}"}"#, "name"),
        (r#"{"points": [{}, {"label": "{{x"}]}"#, "points[1].label"),
        (r#"{"places": {"home": {"label": "{{rand:0}}"}}}"#, r#"places["home"].label"#),
        (r#"{"names": {"7": "{{ nn }}"}}"#, r#"names["7"]"#),
    ];
    for (json, field) in table {
        let misfit = encoding(parsed(json)).unwrap_err();
        assert_eq!(misfit.field.as_deref(), Some(field), "{json}");
    }
    assert_eq!(
        encoding(parsed(r#"{"lo": {"label": "{{id}}"}}"#)).unwrap_err().to_string(),
        "field \"lo.label\": unknown template {{id}} (known: {{n}}, {{uuid}}, {{rand:N}}, {{now}}, {{unix_ms}}; \
         {{{{ is a literal {{)"
    );
}

#[test]
fn fixed_fields_around_a_placeholder_stay_encoded_in_runs() {
    let json = r#"{"lo": {"latitude": 1}, "color": "GREEN", "name": "{{n}}", "tags": ["a", "b"], "counts": [3]}"#;
    let Encoding::Pieces(pieces) = encoding(parsed(json)).unwrap() else { panic!() };
    let shape: Vec<&str> = pieces
        .iter()
        .map(|p| match p {
            Piece::Bytes(_) => "bytes",
            Piece::Text { .. } => "text",
            Piece::Message { .. } => "message",
        })
        .collect();
    assert_eq!(shape, ["bytes", "text", "bytes"]);
}
