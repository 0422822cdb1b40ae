use super::*;
use crate::grpc::fixture;

fn misfit(json: &str) -> String {
    let value: Value = serde_json::from_str(json).unwrap();
    message(&fixture::message("t.Req"), &value).unwrap_err().to_string()
}

#[test]
fn json_that_fits_makes_the_message() {
    let json = r#"{"lo": {"latitude": 1, "longitude": -2}, "points": [{"label": "x"}], "places": {"k": {}},
        "names": {"7": "seven"}, "color": "GREEN", "name": "n", "tags": ["a"], "blob": "AAE=",
        "at": "2024-01-01T00:00:00Z", "note": "hi", "b": "9007199254740993", "counts": [1, 2],
        "legacy": {"item": {"text": "t"}, "id": "i"}}"#;
    let m = message(&fixture::message("t.Req"), &serde_json::from_str(json).unwrap()).unwrap();
    assert_eq!(m.get_field_by_name("b").unwrap().as_i64(), Some(9_007_199_254_740_993));
    let lo = m.get_field_by_name("lo").unwrap();
    assert_eq!(lo.as_message().unwrap().get_field_by_name("longitude").unwrap().as_i32(), Some(-2));
    // The proto field name works as well as the JSON name.
    let m = message(&fixture::message("t.Point"), &serde_json::json!({"label": "x", "latitude": 3})).unwrap();
    assert_eq!(m.get_field_by_name("latitude").unwrap().as_i32(), Some(3));
}

#[test]
fn a_misfit_names_the_field_path_and_what_it_takes() {
    let table: [(&str, &str); 16] = [
        // A wrong type, at depth.
        (r#"{"lo": {"latitude": "abc"}}"#, r#"field "lo.latitude": expected a 32-bit integer, got "abc""#),
        (r#"{"lo": {"latitude": 1.5}}"#, r#"field "lo.latitude": expected a 32-bit integer, got 1.5"#),
        (r#"{"name": 5}"#, r#"field "name": expected a string, got 5"#),
        // An unknown field, at the top and inside.
        (
            r#"{"nope": 1}"#,
            r#"field "nope": no such field in t.Req (its fields: lo, points, places, names, color, name, tags, blob, at, note, a, b, counts, legacy)"#,
        ),
        (
            r#"{"lo": {"lat": 1}}"#,
            r#"field "lo.lat": no such field in t.Point (its fields: latitude, longitude, label)"#,
        ),
        // A bad enum value.
        (
            r#"{"color": "BLUE"}"#,
            r#"field "color": expected one of t.Color's values (RED, GREEN) or a number, got "BLUE""#,
        ),
        // Inside lists and maps.
        (
            r#"{"points": [{}, {"longitude": true}]}"#,
            r#"field "points[1].longitude": expected a 32-bit integer, got true"#,
        ),
        (r#"{"places": {"home": {"label": []}}}"#, r#"field "places[\"home\"].label": expected a string, got []"#),
        (r#"{"names": {"x": "y"}}"#, r#"field "names[\"x\"]": the key is not a 32-bit integer"#),
        (r#"{"names": {"1": 2}}"#, r#"field "names[\"1\"]": expected a string, got 2"#),
        (r#"{"counts": 3}"#, r#"field "counts": expected a list, got 3"#),
        (r#"{"tags": ["a", null, 1]}"#, r#"field "tags[1]": expected a string, got null"#),
        // A message given something else, and the well-known types' own forms.
        (r#"{"lo": [1]}"#, r#"field "lo": expected an object (a t.Point message), got [1]"#),
        (
            r#"{"at": "yesterday"}"#,
            r#"field "at": not a google.protobuf.Timestamp: invalid rfc3339 timestamp: invalid date"#,
        ),
        (r#"{"blob": "!!"}"#, r#"field "blob": invalid base64: Invalid symbol 33, offset 0."#),
        // No one field is at fault: the message's own complaint.
        (r#"{"a": "x", "b": 1}"#, "multiple fields provided for oneof 'pick'"),
    ];
    for (json, want) in table {
        assert_eq!(misfit(json), want, "{json}");
    }
    assert_eq!(misfit("[1]"), "expected an object (a t.Req message), got [1]");
    assert_eq!(
        misfit(&format!("\"{}\"", "x".repeat(50))),
        format!("expected an object (a t.Req message), got \"{}...", "x".repeat(39))
    );
}
