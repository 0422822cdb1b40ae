//! `strain origin --service-time T --workers N`: a server whose capacity is known exactly
//! (N/T requests/s, latency T below it), measured by the real load generator.

use crate::harness::{exclusive, strain, strain_raw, Origin, Run};

/// Requests/s of a run, from its JSON.
fn rate(run: &Run) -> f64 {
    run.json.as_ref().and_then(|j| j["requests_per_s"].as_f64()).unwrap_or_else(|| panic!("no rate: {}", run.stderr))
}

/// A latency field of a run in milliseconds, from its JSON.
fn latency_ms(run: &Run, pointer: &str) -> f64 {
    let json = run.json.as_ref().unwrap_or_else(|| panic!("no JSON: {}", run.stderr));
    let us = json.pointer(pointer).and_then(|v| v.as_f64()).unwrap_or_else(|| panic!("no {pointer} in {json}"));
    us / 1000.0
}

/// Asserts `got` is within `pct` percent of `want`.
fn near(what: &str, got: f64, want: f64, pct: f64) {
    assert!((got - want).abs() <= want * pct / 100.0, "{what}: {got:.1}, expected {want} ± {pct}%");
}

/// Runs strain against `origin` with the flags in `line`.
fn load(origin: &Origin, line: &str) -> Run {
    let url = origin.url();
    let mut args = crate::harness::args(line);
    args.push(&url);
    let run = strain(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run
}

#[test]
fn closed_loop_saturates_at_workers_over_service_time() {
    let _alone = exclusive();
    // Two origin threads: the workers are shared across them.
    let origin = Origin::start(&["-t", "2", "--service-time", "4ms", "--workers", "8"]);
    let run = load(&origin, "-t 1 -c 32 -d 3s");
    near("requests/s", rate(&run), 2000.0, 5.0);
    assert_eq!(run.num("/errors/timeout"), 0);
    let requests = run.num("/requests");
    assert_eq!(origin.stop().requests, requests);
}

#[test]
fn below_capacity_latency_is_the_service_time() {
    let _alone = exclusive();
    let origin = Origin::start(&["-t", "2", "--service-time", "4ms", "--workers", "8"]);
    let run = load(&origin, "-t 1 -R 500 -c 16 -d 3s");
    let p50 = latency_ms(&run, "/latency_us/percentiles/50");
    assert!((4.0..=5.5).contains(&p50), "p50 {p50} ms");
}

#[test]
fn one_worker_queues_every_connection() {
    let _alone = exclusive();
    let origin = Origin::start(&["-t", "2", "--service-time", "10ms"]);
    let run = load(&origin, "-t 1 -c 16 -d 3s");
    near("requests/s", rate(&run), 100.0, 5.0);
    // Each request waits for the 15 ahead of it and its own 10 ms.
    near("mean latency (ms)", latency_ms(&run, "/latency_us/mean"), 160.0, 15.0);
}

#[test]
fn exponential_service_times_keep_the_mean_capacity() {
    let _alone = exclusive();
    let origin = Origin::start(&[
        "-t",
        "2",
        "--service-time",
        "5ms",
        "--workers",
        "4",
        "--service-time-dist",
        "exp",
        "--seed",
        "3",
    ]);
    let run = load(&origin, "-t 1 -c 32 -d 3s");
    near("requests/s", rate(&run), 800.0, 8.0);
}

#[test]
fn bad_service_flags_are_usage_errors() {
    for (line, flag) in [
        ("--workers 0 --service-time 1ms", "--workers"),
        ("--service-time 0", "--service-time"),
        ("--workers 8", "--workers"),
    ] {
        let mut argv = vec!["origin", "--listen", "127.0.0.1:0"];
        argv.extend(crate::harness::args(line));
        let run = strain_raw(&argv);
        assert_eq!(run.code, 2, "{line}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{line}: {}", run.stderr);
        assert!(run.stderr.starts_with(&format!("strain: {flag} ")), "{line}: {}", run.stderr);
    }
}
