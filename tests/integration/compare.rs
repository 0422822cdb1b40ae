//! Issue 20: `strain compare` as a regression verdict people can gate on. Saved results and
//! the A/B runner against strain's origin (`--delay` sets its latency): the same server is not
//! a regression, 1 ms vs 3 ms is, one run a side is inconclusive unless the change is far
//! beyond run-to-run noise, prepare commands run in A B B A order, results of different tests
//! are refused, too little evidence exits 97, and the HTML page opens with the verdict.

use std::path::{Path, PathBuf};

use crate::harness::{exclusive, strain_raw, Origin, Run};

/// One short load run against `url` writing its JSON to `dir/name`: 4 s in 250 ms intervals
/// gives 14 samples once the first and last are skipped.
fn run_to(dir: &Path, name: &str, load: &[&str], url: &str) -> PathBuf {
    let path = dir.join(name);
    let mut args: Vec<String> = load.iter().map(|s| s.to_string()).collect();
    for a in ["-t", "1", "-d", "4s", "--interval", "250ms", "--json", &path.display().to_string(), url] {
        args.push(a.to_string());
    }
    let run = strain_raw(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    path
}

/// `strain compare` with these arguments and `--json`, the JSON parsed into `run.json`.
fn compare(dir: &Path, args: &[&str]) -> Run {
    let out = dir.join("compare.json");
    let _ = std::fs::remove_file(&out);
    let mut all = vec!["compare".to_string(), "--json".into(), out.display().to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    let mut run = strain_raw(&all);
    if let Ok(text) = std::fs::read_to_string(&out) {
        run.json = Some(serde_json::from_str(&text).unwrap());
    }
    run
}

/// The verdict of metric `name` in a comparison's JSON.
fn verdict<'a>(run: &'a Run, name: &str) -> &'a serde_json::Value {
    let metrics = run.json.as_ref().unwrap_or_else(|| panic!("no JSON: {}", run.stderr))["metrics"].as_array().unwrap();
    metrics.iter().find(|m| m["metric"] == name).unwrap_or_else(|| panic!("no {name}"))
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// The A/B runner's load: short runs at a rate, so throughput is held and latency moves.
const AB: [&str; 10] = ["-t", "1", "-c", "8", "-R", "1000", "-d", "1s", "--warmup", "300ms"];

/// The A/B runner, `a` against `b` with `flags` and [`AB`]'s load, its JSON kept in `dir`.
fn ab(dir: &Path, a: &str, b: &str, flags: &[&str]) -> Run {
    compare(dir, &[&[a, b], flags, &AB].concat())
}

/// Origins alike but for their latency: 1 ms for the base, `slow` for the new side.
fn fast_and_slow(slow: &str) -> (Origin, Origin) {
    (Origin::start(&["-t", "1", "--delay", "1ms"]), Origin::start(&["-t", "1", "--delay", slow]))
}

#[test]
fn saved_runs_are_the_evidence_and_one_run_a_side_is_inconclusive() {
    let _alone = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let load = ["-R", "2000", "-c", "16"];
    let same = Origin::start(&["-t", "1", "--delay", "1ms"]);
    // Interleaved, so a slow spell of the shared machine lands on both sides.
    let names = ["a1.json", "b1.json", "a2.json", "b2.json"];
    let files: Vec<String> = names.iter().map(|n| p(&run_to(dir.path(), n, &load, &same.url()))).collect();
    drop(same);
    let run = compare(dir.path(), &[&files[0], &files[2], "--", &files[1], &files[3]]);
    assert!(run.code == 0 || run.code == 97, "{}\n{}", run.stdout, run.stderr);
    let json = run.json.as_ref().unwrap();
    assert_eq!((json["evidence"].as_str(), json["base_runs"].as_u64()), (Some("runs"), Some(2)), "{}", run.stdout);
    assert!(run.stdout.starts_with("Comparing 2 base runs with 2 new runs"), "{}", run.stdout);
    // At a fixed rate, throughput and errors cannot differ.
    for m in ["throughput", "error_rate"] {
        assert_eq!(verdict(&run, m)["verdict"], "same", "{m}: {}", run.stdout);
    }
    // One run a side: the same server is inconclusive (97), never a regression.
    let pair = compare(dir.path(), &[&files[0], &files[1]]);
    assert_eq!(pair.code, 97, "{}\n{}", pair.stdout, pair.stderr);
    assert_eq!(pair.json.as_ref().unwrap()["evidence"], "one_run");
    assert!(pair.stdout.contains("cannot tell a change from run-to-run noise"), "{}", pair.stdout);
    assert!(pair.stdout.ends_with("Verdict: INCONCLUSIVE: throughput, p50, p90, p99 undecided\n"), "{}", pair.stdout);
    // 1 ms against 3 ms of delay is far beyond that noise: slower, exit 98, even one a side.
    let slow = Origin::start(&["-t", "1", "--delay", "3ms"]);
    let b = run_to(dir.path(), "slow.json", &load, &slow.url());
    drop(slow);
    let run = compare(dir.path(), &["--allow-different-url", &files[0], &p(&b)]);
    assert_eq!(run.code, 98, "{}\n{}", run.stdout, run.stderr);
    let v = verdict(&run, "p50");
    assert_eq!((v["verdict"].as_str(), v["regression"].as_bool()), (Some("worse"), Some(true)), "{}", run.stdout);
    assert!(run.stdout.contains("slower  REGRESSION"), "{}", run.stdout);
    // The other way round it is faster, and faster is not a failure (the rest is undecided).
    let back = compare(dir.path(), &["--allow-different-url", &p(&b), &files[0]]);
    assert_eq!(verdict(&back, "p50")["verdict"], "better", "{}", back.stdout);
    assert_eq!(back.code, 97, "{}", back.stdout);
}

#[test]
fn the_ab_runner_finds_a_slower_build_and_keeps_its_runs() {
    let _alone = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (fast, slow) = fast_and_slow("5ms");
    let (runs, page) = (dir.path().join("runs"), dir.path().join("page.html"));
    let run =
        ab(dir.path(), &fast.url(), &slow.url(), &["--rounds", "5", "--save-runs", &p(&runs), "--html", &p(&page)]);
    assert_eq!(run.code, 98, "{}\n{}", run.stdout, run.stderr);
    // p50 moves by 4 ms of 1: decided in 5 rounds even on a busy VM, where a 1 ms origin's p50
    // wandered from 1 to 3 ms between runs (the tails of 1 s runs vary more). 8 connections
    // of 5 ms carry 1,600/s, well above the 1,000/s asked.
    assert_eq!(verdict(&run, "p50")["verdict"], "worse", "{}", run.stdout);
    assert_eq!(verdict(&run, "error_rate")["verdict"], "same", "{}", run.stdout);
    assert_eq!(run.json.as_ref().unwrap()["evidence"], "runs");
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    // Every run kept, each a result of its own: 1 s measured after a 300 ms warm-up, 1,000/s.
    let mut saved: Vec<String> =
        std::fs::read_dir(&runs).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    saved.sort();
    let want: Vec<String> = ["a", "b"].iter().flat_map(|s| (1..=5).map(move |k| format!("{s}-{k}.json"))).collect();
    assert_eq!(saved, want);
    let one: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(runs.join("b-2.json")).unwrap()).unwrap();
    assert_eq!(one["config"]["url"], slow.url());
    assert_eq!(one["config"]["warmup_s"], 0.3);
    let requests = one["requests"].as_u64().unwrap();
    assert!((990..=1010).contains(&requests), "{requests}");
    // The page opens with the verdict, in Chromium.
    let (dom, log) = crate::html::load(&page);
    assert!(!log.contains("Uncaught"), "{log}");
    let verdict_at = dom.find("data-verdict=\"fail\"").expect("no verdict heading");
    assert!(verdict_at < dom.find("<svg").unwrap(), "the verdict is not first");
    assert!(dom.contains("REGRESSION: p50"), "{dom}");
    assert!(dom.contains("<tr data-metric=\"p50\" data-verdict=\"slower\">"), "{dom}");
    assert!(dom.matches("round ").count() >= 10, "{dom}");
}

#[test]
fn an_a_a_check_is_no_regression_and_prepare_commands_run_in_order() {
    let _alone = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let origin = Origin::start(&["-t", "1", "--delay", "1ms"]);
    let url = origin.url();
    let log = dir.path().join("prepared");
    let (pa, pb) = (format!("echo a >> {}", p(&log)), format!("echo b >> {}", p(&log)));
    let run = ab(dir.path(), &url, &url, &["--rounds", "4", "--prepare-a", &pa, "--prepare-b", &pb]);
    assert!(run.code == 0 || run.code == 97, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with("Comparing 4 base runs with 4 new runs"), "{}", run.stdout);
    // A B, B A, A B, B A: each side first as often as second.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\nb\na\na\nb\nb\na\n");
    // A failing prepare command stops the comparison with one line.
    let mut args = vec![url.as_str(), url.as_str(), "--rounds", "2", "--prepare-b", "exit 3"];
    args.extend(AB);
    let run = strain_raw(&[&["compare"], args.as_slice()].concat());
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr, "strain: --prepare-b 'exit 3' failed before round 1: exit status: 3\n");
}

#[test]
fn rounds_auto_stops_once_decided() {
    let _alone = exclusive();
    let dir = tempfile::tempdir().unwrap();
    // 9 ms apart, so even the p99 of a noisy machine (whose tails spread 4 ms apart by 3x run
    // to run) is decided within the rounds.
    let (fast, slow) = fast_and_slow("10ms");
    let runs = dir.path().join("runs");
    let run =
        ab(dir.path(), &fast.url(), &slow.url(), &["--rounds", "auto", "--max-rounds", "8", "--save-runs", &p(&runs)]);
    assert_eq!(run.code, 98, "{}\n{}", run.stdout, run.stderr);
    // Decided before the most rounds (each look at its share of the error rate).
    let runs = std::fs::read_dir(&runs).unwrap().count();
    assert!((6..16).contains(&runs) && runs % 2 == 0, "{runs}: {}", run.stdout);
    let rounds = (runs / 2).to_string();
    assert!(run.stdout.starts_with(&format!("Comparing {rounds} base runs with {rounds} new runs")), "{}", run.stdout);
}

#[test]
fn bad_inputs_are_usage_errors_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        p(&path)
    };
    let not_json = write("notes.txt", "hello");
    let other = write("other.json", r#"{"name": "x"}"#);
    // Real results, from the golden file, with two and three interval rows.
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/json_closed_loop.json")).unwrap(),
    )
    .unwrap();
    let with_rows = |n: usize| {
        let mut d = golden.clone();
        let row = d["intervals"][0].clone();
        d["intervals"] = serde_json::Value::Array(vec![row; n]);
        d
    };
    let short = write("short.json", &with_rows(2).to_string());
    let good = write("good.json", &with_rows(3).to_string());
    let mut newer = with_rows(3);
    newer["schema_version"] = 9.into();
    newer["added_later"] = true.into();
    let newer = write("newer.json", &newer.to_string());
    let mut faster = with_rows(3);
    faster["rate"] = serde_json::json!({"target_per_s": 500.0, "sent": 10, "late": 0, "late_no_connection": 0, "unsent": 0, "late_mean_us": 0.0, "late_max_us": 0});
    let rated = write("rated.json", &faster.to_string());
    let mut elsewhere = with_rows(3);
    elsewhere["config"]["url"] = "http://127.0.0.1:1/".into();
    let elsewhere = write("elsewhere.json", &elsewhere.to_string());
    let missing = p(&dir.path().join("missing.json"));
    let rows: &[(Vec<&str>, &str)] = &[
        (vec![&missing, &short], "cannot read "),
        (vec![&not_json, &short], "notes.txt: expected value at line 1 column 1"),
        (vec![&good, &other], "other.json: not a strain result, search or comparison (--json)"),
        (vec![&good, &newer], "newer.json: result schema_version 9 is not supported (this strain reads 1)"),
        (vec![&good, &rated], "differ in mode (closed loop and rate mode): compare like with like, or give --force"),
        (vec![&good, &elsewhere], "differ in URL (http://127.0.0.1:8080/index.html and http://127.0.0.1:1/): compare like with like, or give --force (or --allow-different-url)"),
        (vec![&good, &good, "-c", "5"], "--connections is for the A/B runner (compare URL_A URL_B)"),
        (vec![&good, "http://127.0.0.1:1/"], "compare takes two URLs (the A/B runner) or result files"),
        (vec!["http://127.0.0.1:1/", "http://127.0.0.1:1/", "-n", "5"], "-n is not for compare"),
        (vec!["http://127.0.0.1:1/", "http://127.0.0.1:1/", "--rounds", "1"], "at least 2 rounds"),
        (vec![&short], "compare takes BASE NEW"),
        (vec![&short, &short, &short], "compare takes BASE NEW"),
    ];
    for (files, want) in rows {
        let mut args = vec!["compare"];
        args.extend(files.iter().copied());
        let run = strain_raw(&args);
        assert_eq!(run.code, 2, "{files:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{files:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("strain: ") && run.stderr.contains(want), "{files:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
    // --force compares them anyway; too few intervals (and one run a side) decide nothing: 97.
    let forced = strain_raw(&["compare", "--force", &good, &rated]);
    assert_eq!(forced.code, 97, "{}", forced.stderr);
    let short_pair = strain_raw(&["compare", &good, &short]);
    assert_eq!(short_pair.code, 97, "{}", short_pair.stderr);
    assert!(
        short_pair.stdout.contains("Comparing 1 base run(s) (1 intervals) with 1 new run(s) (0 intervals)"),
        "{}",
        short_pair.stdout
    );
}
