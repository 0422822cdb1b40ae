use super::*;

mod round_trip;

pub(super) fn golden(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn fields_a_newer_strain_adds_are_ignored() {
    let mut v: serde_json::Value = serde_json::from_str(&golden("json_rate.json")).unwrap();
    v["added_later"] = serde_json::json!({"x": 1});
    v["intervals"][0]["added_later"] = 7.into();
    v["config"]["added_later"] = "y".into();
    let doc = RunDoc::parse(&v.to_string()).unwrap();
    assert_eq!(doc.intervals.len(), 2);
    assert_eq!(doc.to_json(), golden("json_rate.json"));
}

#[test]
fn an_unknown_version_is_refused_in_one_line() {
    let mut v: serde_json::Value = serde_json::from_str(&golden("json_closed_loop.json")).unwrap();
    v["schema_version"] = 7.into();
    let e = RunDoc::parse(&v.to_string()).unwrap_err().to_string();
    assert_eq!(e, "result schema_version 7 is not supported (this strain reads 1)");
    let e = RunDoc::from_value(v).unwrap_err().to_string();
    assert_eq!(e, "result schema_version 7 is not supported (this strain reads 1)");
}

#[test]
fn what_is_not_a_result_says_so() {
    let rows = [
        ("nope", "expected ident at line 1 column 2"),
        ("{}", "not a strain result, search or comparison (--json)"),
        (r#"{"intervals": []}"#, "no schema_version"),
        (r#"{"schema_version": 1, "intervals": []}"#, "missing field `strain_version`"),
        (r#"{"schema_version": 1, "kind": "find-max"}"#, "not a run's result (this is a find-max search)"),
        (r#"{"schema_version": 1, "kind": "compare"}"#, "not a run's result (this is a comparison)"),
    ];
    for (text, want) in rows {
        let e = RunDoc::parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
}
