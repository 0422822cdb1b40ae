//! Report output as users consume it: the JSON schema, and JSON alone on stdout with `--json -`.

use crate::harness::{strain, strain_raw, Origin};

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/result.schema.json")).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

#[test]
fn json_result_follows_the_schema() {
    let validator = schema();
    let origin = Origin::start(&[]);
    let ok = strain(&["-t", "1", "-c", "2", "-d", "300ms", "-H", "X-Test: 1", &origin.url()]);
    let closed = strain(&["-t", "1", "-c", "1", "-d", "200ms", "http://127.0.0.1:1/"]);
    for run in [&ok, &closed] {
        let json = run.json.as_ref().unwrap();
        let errors: Vec<String> = validator.iter_errors(json).map(|e| format!("{e} at {}", e.instance_path)).collect();
        assert!(errors.is_empty(), "{errors:?}\n{json:#}");
    }
    assert_eq!(ok.json.as_ref().unwrap()["config"]["headers"][0], "X-Test: 1");
    // An empty run has zeros, never NaN (which JSON cannot even carry).
    assert_eq!(closed.num("/latency_us/percentiles/99"), 0);
}

#[test]
fn golden_json_of_every_mode_and_real_rate_and_proxy_runs_follow_the_schema() {
    let validator = schema();
    let mut docs: Vec<(String, serde_json::Value)> = ["json_closed_loop.json", "json_rate.json", "json_proxy.json"]
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
            (name.to_string(), serde_json::from_str(&text).unwrap())
        })
        .collect();
    let origin = Origin::start(&[]);
    let rate = strain(&["-t", "1", "-c", "2", "-R", "200", "-d", "1s", &origin.url()]);
    let proxy = strain(&["proxy", "--hit-rate", "1", "--hotset", "5", "-t", "1", "-c", "2", "-d", "1s"]);
    docs.push(("rate run".into(), rate.json.unwrap()));
    docs.push(("proxy run".into(), proxy.json.unwrap()));
    for (name, json) in &docs {
        let errors: Vec<String> = validator.iter_errors(json).map(|e| format!("{e} at {}", e.instance_path)).collect();
        assert!(errors.is_empty(), "{name}: {errors:?}\n{json:#}");
    }
}

#[test]
fn json_to_stdout_is_alone_there() {
    let origin = Origin::start(&[]);
    let run = strain_raw(&["-t", "1", "-c", "1", "-d", "200ms", "--latency", "--json", "-", &origin.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is exactly one JSON document");
    assert!(json["requests"].as_u64().unwrap() > 0);
    // The text report went to stderr instead.
    assert!(run.stderr.contains("Latency Distribution"), "{}", run.stderr);
}

#[test]
fn text_report_has_wrk_lines() {
    let origin = Origin::start(&[]);
    let run = strain_raw(&["-t", "2", "-c", "4", "-d", "1s", "--latency", &origin.url()]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], format!("Running 1s test @ {}", origin.url()));
    assert_eq!(lines[1], "  2 threads and 4 connections");
    assert_eq!(lines[2], "  Thread Stats   Avg      Stdev     Max   +/- Stdev");
    assert!(lines[3].starts_with("    Latency   "), "{}", lines[3]);
    assert!(lines[4].starts_with("    Req/Sec   "), "{}", lines[4]);
    assert_eq!(lines[5], "  Latency Distribution");
    for (line, p) in lines[6..10].iter().zip(["50%", "75%", "90%", "99%"]) {
        assert!(line.trim_start().starts_with(p), "{line}");
    }
    assert!(lines[10].contains(" requests in 1.0"), "{}", lines[10]);
    assert!(lines[11].starts_with("Requests/sec: "), "{}", lines[11]);
    assert!(lines[12].starts_with("Transfer/sec: "), "{}", lines[12]);
    assert_eq!(lines.len(), 13, "{}", run.stdout);
}
