//! The manifest builder's values, the strain arguments it refuses, and the YAML quoting.

use std::time::{Duration, SystemTime};

use clap::Parser;

use super::yaml::{self, quote, Y};
use super::{is_quantity, Job};
use crate::cli::flags::{Cli, Command, K8sJobFlags};
use crate::cli::CliError;

/// 2023-11-14T22:13:20.5Z: half a second past, so the start is rounded up.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_500)
}

fn flags(args: &[&str]) -> K8sJobFlags {
    let cli = Cli::try_parse_from(["strain", "k8s-job"].iter().chain(args)).expect("flags parse");
    match cli.command {
        Some(Command::K8sJob(f)) => f.0,
        other => panic!("not k8s-job: {other:?}"),
    }
}

fn job(args: &[&str]) -> Result<Job, CliError> {
    Job::from_flags(&flags(args), now())
}

/// The tree as JSON, to read values by pointer.
fn json(y: &Y) -> serde_json::Value {
    match y {
        Y::Str(s) => s.as_str().into(),
        Y::Int(n) => (*n).into(),
        Y::Bool(b) => (*b).into(),
        Y::List(l) => l.iter().map(json).collect(),
        Y::Map(m) => m.iter().map(|(k, v)| (k.to_string(), json(v))).collect::<serde_json::Map<_, _>>().into(),
    }
}

#[test]
fn manifest_values() {
    let j = job(&[
        "--segments",
        "3",
        "--image",
        "r.example/strain:1",
        "--name",
        "load-1",
        "--",
        "-c",
        "50",
        "-d",
        "10s",
        "http://svc:8080/",
    ])
    .unwrap();
    let m = json(&j.tree());
    let at = |p: &str| m.pointer(p).unwrap_or_else(|| panic!("no {p} in {m}")).clone();
    assert_eq!(at("/apiVersion"), "batch/v1");
    assert_eq!(at("/kind"), "Job");
    assert_eq!(at("/metadata/name"), "load-1");
    assert_eq!(at("/metadata/labels/app.kubernetes.io~1name"), "strain");
    assert_eq!(at("/metadata/labels/app.kubernetes.io~1instance"), "load-1");
    assert_eq!(at("/spec/completionMode"), "Indexed");
    assert_eq!(at("/spec/completions"), 3);
    assert_eq!(at("/spec/parallelism"), 3);
    assert_eq!(at("/spec/backoffLimit"), 0);
    // 30 s delay + 10 s test + 2 s timeout + 120 s slack.
    assert_eq!(at("/spec/activeDeadlineSeconds"), 162);
    assert_eq!(at("/spec/ttlSecondsAfterFinished"), 86_400);
    let pod = "/spec/template/spec";
    assert_eq!(at("/spec/template/metadata/labels/app.kubernetes.io~1instance"), "load-1");
    assert_eq!(at(&format!("{pod}/restartPolicy")), "Never");
    let term = format!("{pod}/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/0");
    assert_eq!(at(&format!("{term}/weight")), 100);
    assert_eq!(at(&format!("{term}/podAffinityTerm/topologyKey")), "kubernetes.io/hostname");
    assert_eq!(at(&format!("{term}/podAffinityTerm/labelSelector/matchLabels/app.kubernetes.io~1instance")), "load-1");
    let c = format!("{pod}/containers/0");
    assert_eq!(at(&format!("{c}/image")), "r.example/strain:1");
    assert_eq!(
        at(&format!("{c}/args")),
        serde_json::json!([
            "-c",
            "50",
            "-d",
            "10s",
            "http://svc:8080/",
            "--segments",
            "3",
            "--start-at",
            "2023-11-14T22:13:51Z",
            "--json",
            "-"
        ])
    );
    assert_eq!(
        at(&format!("{c}/resources")),
        serde_json::json!({"requests": {"cpu": "2", "memory": "512Mi"}, "limits": {"memory": "512Mi"}})
    );
    assert_eq!(j.start_at_text(), "2023-11-14T22:13:51Z");
}

#[test]
fn segment_flags_go_before_the_script_arguments() {
    let j = job(&[
        "--segments",
        "2",
        "--image",
        "i",
        "--start-delay",
        "1m",
        "--",
        "-s",
        "s.lua",
        "http://h/",
        "--",
        "a",
        "--json",
    ])
    .unwrap();
    let expect = [
        "-s",
        "s.lua",
        "http://h/",
        "--segments",
        "2",
        "--start-at",
        "2023-11-14T22:14:21Z",
        "--json",
        "-",
        "--",
        "a",
        "--json",
    ];
    assert_eq!(j.args(), expect);
}

#[test]
fn deadline_covers_stages_and_timeout() {
    let j = job(&[
        "--segments",
        "1",
        "--image",
        "i",
        "--",
        "--stages",
        "10s:100,20s:200",
        "-T",
        "5s",
        "-R",
        "1",
        "http://h/",
    ])
    .unwrap();
    // 30 s delay + 30 s of stages + 5 s timeout + 120 s slack.
    assert_eq!(json(&j.tree()).pointer("/spec/activeDeadlineSeconds"), Some(&185.into()));
}

#[test]
fn odd_arguments_are_quoted_and_survive() {
    let j = job(&["--segments", "1", "--image", "i", "--", "-H", "X: \"y\"", "-H", "Y: a # b\\", "http://h/?q=1&r=#x"])
        .unwrap();
    let text = j.manifest();
    assert!(text.contains(r#"        - "X: \"y\""#), "{text}");
    assert!(text.contains(r#"        - "Y: a # b\\""#), "{text}");
    assert!(text.contains(r#"        - "http://h/?q=1&r=#x""#), "{text}");
    assert!(text.is_ascii());
}

#[test]
fn refusals() {
    let rows: &[(&[&str], &str)] = &[
        // (k8s-job arguments, start of the one-line error)
        (&["--segments", "0", "--image", "i", "--", "http://h/"], "--segments must be at least 1"),
        (&["--segments", "100001", "--image", "i", "--", "http://h/"], "--segments must be at most 100000"),
        (
            &["--segments", "2", "--image", "i", "--name", "Load", "--", "http://h/"],
            "--name 'Load' is not a DNS-1123 label",
        ),
        (&["--segments", "2", "--image", "i", "--name=-x", "--", "http://h/"], "--name '-x' is not"),
        (&["--segments", "2", "--image", "i", "--name", "a_b", "--", "http://h/"], "--name 'a_b' is not"),
        (&["--segments", "2", "--image", "i", "--name", "", "--", "http://h/"], "--name '' is not"),
        (&["--segments", "2", "--image", "a b", "--", "http://h/"], "--image 'a b' is not"),
        (
            &["--segments", "2", "--image", "i", "--start-delay", "0s", "--", "http://h/"],
            "--start-delay must be above 0",
        ),
        (
            &["--segments", "2", "--image", "i", "--cpu", "two", "--", "http://h/"],
            "--cpu 'two' is not a Kubernetes quantity",
        ),
        (&["--segments", "2", "--image", "i", "--memory=-1Gi", "--", "http://h/"], "--memory '-1Gi' is not"),
        (&["--segments", "2", "--image", "i"], "give the load after --"),
        (&["--segments", "2", "--image", "i", "--", "-c", "5"], "the strain arguments after --: "),
        (
            &["--segments", "2", "--image", "i", "--", "--json", "r.json", "http://h/"],
            "--json is not allowed after k8s-job's --",
        ),
        (&["--segments", "2", "--image", "i", "--", "--json=-", "http://h/"], "--json is not allowed"),
        (&["--segments", "2", "--image", "i", "--", "--segments", "4", "http://h/"], "--segments is not allowed"),
        (&["--segments", "2", "--image", "i", "--", "--segment", "1/4", "http://h/"], "--segment is not allowed"),
        (&["--segments", "2", "--image", "i", "--", "--start-at=0", "http://h/"], "--start-at is not allowed"),
        (&["--segments", "2", "--image", "i", "--", "--html", "r.html", "http://h/"], "--html is not allowed"),
        (
            &["--segments", "2", "--image", "i", "--", "--threshold", "p99<1s", "http://h/"],
            "--threshold is not allowed",
        ),
        (&["--segments", "2", "--image", "i", "--", "origin"], "k8s-job runs a load on a URL"),
        (&["--segments", "2", "--image", "i", "--", "ftp://h/"], "invalid URL"),
    ];
    for (args, want) in rows {
        match job(args) {
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.starts_with(want), "{args:?}: {msg}");
                assert!(!msg.contains('\n'), "{args:?}: {msg}");
            }
            Ok(j) => panic!("{args:?} accepted: {:?}", j.args()),
        }
    }
}

#[test]
fn quantities() {
    for ok in ["2", "0.5", "1500m", "512Mi", "2Gi", "1e3", "1E-2", "+1", ".5", "10k"] {
        assert!(is_quantity(ok), "{ok}");
    }
    for bad in ["", "two", "-1", "1..5", "1Gb", "m", "1e", "1 Gi", "1mi"] {
        assert!(!is_quantity(bad), "{bad}");
    }
}

#[test]
fn quoting() {
    let rows = [
        ("plain", r#""plain""#),
        ("X: \"y\"", r#""X: \"y\"""#),
        ("a\\b", r#""a\\b""#),
        ("line\nbreak\ttab\rcr", r#""line\nbreak\ttab\rcr""#),
        // DEL, a C1 control and YAML's own line separators are not printable YAML.
        ("\u{7f}\u{85}\u{2028}", r#""\u007F\u0085\u2028""#),
        ("é", r#""\u00E9""#),
        // Outside the BMP: YAML's 8-digit escape, not a JSON surrogate pair.
        ("😀", r#""\U0001F600""#),
        ("yes", r#""yes""#),
        ("", r#""""#),
    ];
    for (raw, quoted) in rows {
        assert_eq!(quote(raw), quoted, "{raw:?}");
    }
}

#[test]
fn yaml_layout() {
    let tree = Y::map([
        ("a", Y::Int(1)),
        ("b.c/d", Y::map([("e", Y::Bool(true)), ("f", Y::List(vec![]))])),
        ("list", Y::List(vec![Y::map([("x", Y::str("1")), ("y", Y::List(vec![Y::str("z")]))]), Y::str("w")])),
        ("empty", Y::map([])),
    ]);
    let mut out = String::new();
    yaml::write(&mut out, &tree);
    let want =
        "a: 1\n\"b.c/d\":\n  e: true\n  f: []\nlist:\n  - x: \"1\"\n    y:\n      - \"z\"\n  - \"w\"\nempty: {}\n";
    assert_eq!(out, want);
}

#[test]
fn a_load_that_serves_metrics_gets_scrape_annotations_and_its_port() {
    let j = job(&["--segments", "3", "--image", "i", "--", "--metrics-listen", "0.0.0.0:9464", "http://svc/"]).unwrap();
    let m = json(&j.tree());
    let pod = &m["spec"]["template"];
    assert_eq!(pod["metadata"]["annotations"]["prometheus.io/scrape"], "true");
    assert_eq!(pod["metadata"]["annotations"]["prometheus.io/port"], "9464");
    assert_eq!(pod["metadata"]["annotations"]["prometheus.io/path"], "/metrics");
    assert_eq!(pod["spec"]["containers"][0]["ports"][0]["containerPort"], 9464);
    // Without metrics, neither.
    let plain = json(&job(&["--segments", "3", "--image", "i", "--", "http://svc/"]).unwrap().tree());
    assert!(plain["spec"]["template"]["metadata"]["annotations"].is_null());
    assert!(plain["spec"]["template"]["spec"]["containers"][0]["ports"].is_null());
    // Loopback or a port the system picks cannot be scraped in a pod.
    for addr in ["127.0.0.1:9464", "0.0.0.0:0"] {
        let e = job(&["--segments", "3", "--image", "i", "--", "--metrics-listen", addr, "http://svc/"]).err().unwrap();
        assert!(e.to_string().contains("cannot be scraped in a pod: listen on 0.0.0.0:PORT"), "{e}");
    }
}
