//! Issue 12: what `strain find-max` writes. One real search against an origin of known capacity
//! (8 workers x 4 ms = 2,000 requests/s) runs once per test binary and is shared with the HTML
//! tests, since a search is the slowest thing the suite does.

use std::sync::OnceLock;

use serde_json::Value;

use crate::harness::{exclusive, schema_file, strain_raw, Origin};

/// Each step's measured time, seconds (`--step-duration`).
pub const STEP_S: f64 = 1.0;
/// Each step's warm-up, seconds (`--warmup`).
pub const WARMUP_S: f64 = 0.5;

/// What one search wrote: its `--json` text and its `--html` page.
pub struct Search {
    pub json_text: String,
    pub json: Value,
    pub html: String,
}

/// The one search of this test binary, run on first use.
pub fn search() -> &'static Search {
    static ONE: OnceLock<Search> = OnceLock::new();
    ONE.get_or_init(|| {
        // The answer depends on the origin keeping its pace: nothing else may load the cores.
        let _alone = exclusive();
        let origin = Origin::start(&["--service-time", "4ms", "--workers", "8"]);
        let dir = tempfile::tempdir().unwrap();
        let (json_path, html_path) = (dir.path().join("f.json"), dir.path().join("f.html"));
        let run = strain_raw(&[
            "find-max",
            &origin.url(),
            "--slo",
            "p99<100ms",
            "--start",
            "1000",
            "--max",
            "4000",
            "--precision",
            "5%",
            "--step-duration",
            &format!("{}ms", STEP_S * 1000.0),
            "--warmup",
            &format!("{}ms", WARMUP_S * 1000.0),
            "--json",
            json_path.to_str().unwrap(),
            "--html",
            html_path.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let json_text = std::fs::read_to_string(&json_path).unwrap();
        let json = serde_json::from_str(&json_text).unwrap();
        Search { json_text, json, html: std::fs::read_to_string(&html_path).unwrap() }
    })
}

/// find-max's schema, with the result schema its steps refer to registered under its `$id`, so
/// the relative `$ref` resolves without any network.
pub fn validator() -> jsonschema::Validator {
    let result = schema_file("result.schema.json");
    let id = result["$id"].as_str().unwrap().to_string();
    jsonschema::options()
        .with_resource(id, jsonschema::Resource::from_contents(result).unwrap())
        .build(&schema_file("find-max.schema.json"))
        .unwrap()
}

/// Every way `doc` breaks the schema, one line each.
pub fn violations(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| format!("{e} at {}", e.instance_path)).collect()
}

#[test]
fn find_max_json_follows_its_schema_and_finds_the_origins_capacity() {
    let s = search();
    let v = validator();
    let errors = violations(&v, &s.json);
    assert!(errors.is_empty(), "{errors:?}\n{}", s.json_text);
    assert_eq!(s.json["kind"], "find-max");
    let max = s.json["max_rate"].as_f64().expect("max_rate is a number");
    assert!((1_800.0..=2_300.0).contains(&max), "max_rate {max}, capacity 2,000");
    assert_eq!(s.json["answer"]["max_rate"], s.json["max_rate"]);
    let steps = s.json["steps"].as_array().unwrap();
    assert!(steps.len() >= 3, "{}", s.json_text);
    for (i, step) in steps.iter().enumerate() {
        let r = &step["result"];
        assert_eq!(r["config"]["warmup_s"].as_f64(), Some(WARMUP_S), "step {i}");
        // The warm-up is not measured; a step past capacity also waits a little for its last
        // responses.
        let d = r["duration_s"].as_f64().unwrap();
        assert!((STEP_S * 0.95..=STEP_S * 1.2).contains(&d), "step {i} measured {d} s");
    }
}

/// A change to a valid document.
type Edit = fn(&mut Value);

#[test]
fn find_max_schema_checks_each_steps_result_and_our_own_layout() {
    let s = search();
    let v = validator();
    // Each edit breaks one rule; the first proves the step's `$ref` is followed, not skipped.
    let edits: [(&str, Edit); 5] = [
        ("a step's result without requests", |d| {
            d["steps"][0]["result"].as_object_mut().unwrap().remove("requests");
        }),
        ("an unknown verdict", |d| d["steps"][0]["verdict"] = "maybe".into()),
        ("an unknown end", |d| d["answer"]["end"] = "bored".into()),
        ("max_rate as text", |d| d["max_rate"] = "2,000".into()),
        ("a key of our own layout we never write", |d| d["answer"]["extra"] = 1.into()),
    ];
    for (what, edit) in edits {
        let mut doc = s.json.clone();
        edit(&mut doc);
        assert!(!violations(&v, &doc).is_empty(), "{what} passed the schema");
    }
    // No rate met the SLO: max_rate is null, and that is valid.
    let mut none = s.json.clone();
    none["max_rate"] = Value::Null;
    none["answer"]["max_rate"] = Value::Null;
    none["answer"]["end"] = "nothing_passed".into();
    assert_eq!(violations(&v, &none), Vec::<String>::new());
}
