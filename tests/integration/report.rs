//! Report output as users consume it: the JSON schema, and JSON alone on stdout with `--json -`.

use crate::harness::{schema, strain, strain_raw, Origin};

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

/// A result file as a newer strain might write it: `version`, and fields this one does not know.
fn golden_as(dir: &std::path::Path, name: &str, version: u64) -> String {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/json_closed_loop.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["schema_version"] = version.into();
    doc["added_later"] = serde_json::json!({"by": "a newer strain"});
    doc["intervals"][0]["added_later"] = 1.into();
    doc["config"]["added_later"] = "x".into();
    let path = dir.join(name);
    std::fs::write(&path, doc.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn results_with_unknown_fields_are_read_and_other_versions_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    let page = page.to_str().unwrap();
    // Fields this strain does not know are ignored.
    let known = golden_as(dir.path(), "known.json", 1);
    let run = strain_raw(&["report", &known, "-o", page]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(std::fs::read_to_string(page).unwrap().contains("<td data-metric=\"requests\">1,007</td>"));
    // A layout this strain does not read: one line naming the file and the version, exit 2,
    // from every command that reads results.
    let newer = golden_as(dir.path(), "newer.json", 7);
    let search = dir.path().join("search.json");
    std::fs::write(&search, r#"{"schema_version": 3, "kind": "find-max", "steps": []}"#).unwrap();
    let search = search.to_str().unwrap();
    let merged = dir.path().join("merged.json");
    let merged = merged.to_str().unwrap();
    let cases: [(Vec<&str>, String); 4] = [
        (
            vec!["report", &newer, "-o", page],
            format!("{newer}: result schema_version 7 is not supported (this strain reads 1)"),
        ),
        (
            vec!["report", search, "-o", page],
            format!("{search}: find-max schema_version 3 is not supported (this strain reads 1)"),
        ),
        (
            vec!["compare", &newer, &known],
            format!("{newer}: result schema_version 7 is not supported (this strain reads 1)"),
        ),
        (
            vec!["merge", &newer, "--json", merged],
            format!("{newer}: result schema_version 7 is not supported (this strain reads 1)"),
        ),
    ];
    for (args, want) in cases {
        let run = strain_raw(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr, format!("strain: {want}\n"), "{args:?}");
    }
}

#[test]
fn an_unwritable_output_path_is_refused_before_anything_is_sent() {
    let server = crate::harness::FakeServer::serving(|_| {});
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let good = golden_as(dir.path(), "good.json", 1);
    let nowhere = "/no/such/dir/out";
    let a_dir = dir.path().to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, String)> = [
        (vec!["-d", "5s", &url, "--json", "/no/such/dir/out.json"], format!("{nowhere}.json")),
        (vec!["-d", "5s", &url, "--html", "/no/such/dir/out.html"], format!("{nowhere}.html")),
        (vec!["-d", "5s", &url, "--hdr-log", "/no/such/dir/out.hlog"], format!("{nowhere}.hlog")),
        (vec!["-R", "100", "-d", "5s", &url, "--json", &a_dir], a_dir.clone()),
        (vec!["find-max", "--slo", "p99<1s", &url, "--json", "/no/such/dir/out.json"], format!("{nowhere}.json")),
        (vec!["report", &good, "-o", "/no/such/dir/out.html"], format!("{nowhere}.html")),
        (vec!["compare", &good, &good, "--json", "/no/such/dir/out.json"], format!("{nowhere}.json")),
        (vec!["merge", &good, "--json", "/no/such/dir/out.json"], format!("{nowhere}.json")),
    ]
    .into_iter()
    .map(|(a, p)| (a.into_iter().map(String::from).collect(), p))
    .collect();
    for (args, path) in cases {
        let run = strain_raw(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        let why = if path == a_dir { "it is a directory".to_string() } else { "No such file or directory".to_string() };
        assert!(run.stderr.starts_with(&format!("strain: cannot write {path}: {why}")), "{args:?}: {}", run.stderr);
        assert!(run.elapsed < std::time::Duration::from_secs(1), "{args:?}: {:?}", run.elapsed);
    }
    // Nothing was sent: not one connection reached the server.
    assert_eq!(server.connections(), 0);
}

#[test]
fn a_result_file_is_replaced_whole() {
    let origin = Origin::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    std::fs::write(&json, "an older result").unwrap();
    let run = strain_raw(&["-t", "1", "-c", "1", "-d", "200ms", &origin.url(), "--json", json.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.starts_with("{\n  \"schema_version\": 1,"), "{text}");
    // No temporary file is left beside it.
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["out.json"]);
}

#[test]
fn the_text_lists_status_codes_when_some_are_not_2xx_or_3xx() {
    let origin = Origin::start(&["--status", "404"]);
    let run = strain_raw(&["-t", "1", "-c", "1", "-d", "200ms", &origin.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let n = run.stdout.lines().find_map(|l| l.strip_prefix("  Non-2xx or 3xx responses: ")).unwrap();
    let count: u64 = n.parse().unwrap();
    let grouped = count
        .to_string()
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(",");
    // wrk's lines as wrk writes them, then the codes, after Transfer/sec.
    let lines: Vec<&str> = run.stdout.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("Transfer/sec:")).unwrap();
    assert_eq!(lines[at + 1], format!("Status codes: 404 \u{d7}{grouped}"), "{}", run.stdout);
    // All 2xx: no such line.
    let ok = Origin::start(&[]);
    let run = strain_raw(&["-t", "1", "-c", "1", "-d", "200ms", &ok.url()]);
    assert!(!run.stdout.contains("Status codes"), "{}", run.stdout);
}
