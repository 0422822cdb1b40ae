//! Issue 11, part 2: thresholds for CI. Each rule prints ✓ or ✗ with the measured value after
//! the report, lands in the JSON, and a failed one makes the exit code 99.

use std::time::Duration;

use crate::harness::{args, strain, strain_raw, Origin};

#[test]
fn passing_thresholds_exit_0_and_are_printed_and_in_the_json() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let run = strain(
        &[&args("-t 1 -c 2 -d 500ms --threshold p99<2s --threshold errors<1% --threshold rps>=1")[..], &[&url]]
            .concat(),
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("  ✓ p99<2s: "), "{}", run.stdout);
    assert!(run.stdout.contains("  ✓ errors<1%: 0.000%\n"), "{}", run.stdout);
    let rules = run.json.as_ref().unwrap()["thresholds"].as_array().unwrap().clone();
    assert_eq!(rules.len(), 3, "{rules:?}");
    assert!(rules.iter().all(|r| r["passed"] == true), "{rules:?}");
    assert_eq!(rules[1]["expr"], "errors<1%");
    assert_eq!(rules[1]["value"], 0.0);
}

#[test]
fn a_failed_threshold_exits_99_with_the_measured_value() {
    let origin = Origin::start(&["-t", "1", "--delay", "20ms"]);
    let url = origin.url();
    let run = strain(&[&args("-t 1 -c 2 -d 500ms --threshold p50<5ms --threshold max<1s")[..], &[&url]].concat());
    assert_eq!(run.code, 99, "{}\n{}", run.stdout, run.stderr);
    let line = run.stdout.lines().find(|l| l.contains("p50<5ms")).unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(line.starts_with("  ✗ p50<5ms: 2"), "{line}");
    assert!(run.stdout.contains("  ✓ max<1s: "), "{}", run.stdout);
    let rules = &run.json.as_ref().unwrap()["thresholds"];
    assert_eq!(rules[0]["passed"], false);
    assert!(rules[0]["value"].as_f64().unwrap() >= 20_000.0, "{rules}");
}

#[test]
fn abort_on_fail_stops_the_run_early_with_its_full_report() {
    let origin = Origin::start(&["-t", "1", "--delay", "30ms"]);
    let url = origin.url();
    let run = strain(
        &[&args("-t 1 -c 2 -d 10s --interval 200ms --threshold max<10ms --abort-on-fail")[..], &[&url]].concat(),
    );
    assert_eq!(run.code, 99, "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(3), "{:?}", run.elapsed);
    assert!(run.stderr.contains("strain: threshold 'max<10ms' can no longer pass: stopping the run"), "{}", run.stderr);
    assert!(run.stdout.contains("Requests/sec:") && run.stdout.contains("  ✗ max<10ms: "), "{}", run.stdout);
    assert!(run.num("/requests") > 0);
}

#[test]
fn rate_mode_late_sends_can_be_a_threshold() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let run =
        strain(&[&args("-t 1 -c 4 -R 200 -d 1s --threshold late<50% --threshold late<=1000")[..], &[&url]].concat());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("  ✓ late<50%: ") && run.stdout.contains("  ✓ late<=1000: "), "{}", run.stdout);
}

#[test]
fn a_proxy_tests_hit_ratio_can_be_a_threshold() {
    // A dry run (no proxy in between): the origin sees every request, so nothing is a hit.
    let run = strain(&args("proxy --hit-rate 1 --hotset 5 -t 1 -c 2 -d 500ms --threshold hit_ratio>0.5"));
    assert_eq!(run.code, 99, "{}", run.stderr);
    assert!(run.stdout.contains("  ✗ hit_ratio>0.5: 0.000\n"), "{}", run.stdout);
}

#[test]
fn bad_or_misplaced_thresholds_are_usage_errors_naming_the_part() {
    let rows = [
        ("p99<fast", "strain: invalid threshold 'p99<fast': 'fast' is not a duration"),
        ("q99<1s", "strain: invalid threshold 'q99<1s': unknown metric 'q99'"),
        ("late<1%", "strain: threshold 'late<1%' needs rate mode (-R or --stages)"),
        ("hit_ratio>0.9", "strain: threshold 'hit_ratio>0.9' needs a proxy test (strain proxy)"),
    ];
    for (rule, want) in rows {
        let run = strain_raw(&["-t", "1", "-c", "1", "-d", "1s", "--threshold", rule, "http://127.0.0.1:1/"]);
        assert_eq!(run.code, 2, "{rule}: {}", run.stderr);
        assert!(run.stderr.starts_with(want), "{rule}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}
