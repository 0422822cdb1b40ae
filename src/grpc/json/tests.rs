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

/// A schema that uses every well-known type with a JSON form of its own, imported by name
/// alone (no --import-path: the compiler has them).
const WELL_KNOWN: &str = r#"syntax = "proto3";
package wkt;
import "google/protobuf/any.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Inner { int32 n = 1; }
message All {
  google.protobuf.Timestamp at = 1;
  google.protobuf.Duration took = 2;
  google.protobuf.Any extra = 3;
  google.protobuf.Struct doc = 4;
  google.protobuf.Value value = 5;
  google.protobuf.ListValue list = 6;
  google.protobuf.Int64Value maybe = 7;
  google.protobuf.StringValue label = 8;
  google.protobuf.BoolValue flag = 9;
  google.protobuf.BytesValue raw = 10;
  google.protobuf.FieldMask mask = 11;
}
"#;

#[test]
fn well_known_types_take_their_own_json_forms() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wkt.proto"), WELL_KNOWN).unwrap();
    let pool = crate::grpc::schema::compile(&[dir.path().join("wkt.proto")], &[]).unwrap();
    let all = pool.get_message_by_name("wkt.All").unwrap();
    let json = serde_json::json!({
        "at": "2026-11-29T05:00:00.250Z",
        "took": "1.5s",
        "extra": {"@type": "type.googleapis.com/wkt.Inner", "n": 5},
        "doc": {"a": [1, "x", null, true], "b": {"c": 2.5}},
        "value": "text",
        "list": [1, {"k": "v"}],
        "maybe": "9007199254740993",
        "label": "l",
        "flag": false,
        "raw": "AAE=",
        "mask": "a.bC,d"
    });
    let m = message(&all, &json).unwrap_or_else(|e| panic!("{e}"));
    // Back to JSON as prost-reflect writes it: the same document (the Timestamp in its
    // canonical form, 64-bit integers as strings).
    let back = serde_json::to_value(&m).unwrap();
    assert_eq!(back["at"], "2026-11-29T05:00:00.250Z");
    assert_eq!(back["took"], "1.500s");
    assert_eq!(back["extra"], serde_json::json!({"@type": "type.googleapis.com/wkt.Inner", "n": 5}));
    // (A Struct's numbers are doubles.)
    assert_eq!(back["doc"], serde_json::json!({"a": [1.0, "x", null, true], "b": {"c": 2.5}}));
    assert_eq!(
        (back["value"].clone(), back["list"].clone()),
        (json["value"].clone(), serde_json::json!([1.0, {"k": "v"}]))
    );
    assert_eq!(
        (back["maybe"].clone(), back["label"].clone(), back["flag"].clone()),
        ("9007199254740993".into(), "l".into(), false.into())
    );
    assert_eq!((back["raw"].clone(), back["mask"].clone()), ("AAE=".into(), "a.bC,d".into()));
    // The wire: a Timestamp is (seconds, nanos); an Any holds its type's URL and bytes.
    let at = m.get_field_by_name("at").unwrap();
    let at = at.as_message().unwrap();
    assert_eq!(at.get_field_by_name("nanos").unwrap().as_i32(), Some(250_000_000));
    // An Any naming a type the schema lacks is one line that names it.
    let bad = message(&all, &serde_json::json!({"extra": {"@type": "type.googleapis.com/wkt.Nope"}})).unwrap_err();
    assert!(bad.to_string().contains("wkt.Nope"), "{bad}");
    let bad = message(&all, &serde_json::json!({"at": "yesterday"})).unwrap_err();
    assert!(bad.to_string().starts_with("field \"at\": not a google.protobuf.Timestamp"), "{bad}");
}
