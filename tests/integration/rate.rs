//! Rate mode (-R, --stages): the rate is held from the first second, every short run prints real
//! numbers, and the live series is in the JSON.

use crate::harness::{strain, Origin};

#[test]
fn fixed_rate_is_held_every_second_and_in_total() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let run = strain(&["-t", "2", "-c", "20", "-d", "5s", "-R", "2000", &url]);
    let served = origin.stop();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = run.num("/requests");
    // The plan holds exactly 10,000 requests; all were sent and answered.
    assert_eq!(requests, 10_000, "{:?}", run.json.as_ref().map(|j| &j["rate"]));
    assert_eq!(served.requests, requests);
    assert_eq!(run.num("/rate/unsent"), 0);
    let json = run.json.as_ref().unwrap();
    let rows = json["intervals"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{rows:?}");
    // Every whole second after the first is within 1% of the target.
    for row in &rows[1..] {
        let n = row["requests"].as_u64().unwrap() as f64;
        let len = row["length_s"].as_f64().unwrap();
        assert!((n / len - 2000.0).abs() <= 20.0, "{row}");
        assert_eq!(row["target_per_s"].as_f64().unwrap().round(), 2000.0, "{row}");
    }
    // One progress line per second on stderr.
    assert_eq!(run.stderr.lines().filter(|l| l.contains("target     2000/s")).count(), 5, "{}", run.stderr);
}

#[test]
fn short_runs_and_tiny_rates_print_real_numbers() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    for secs in ["1s", "2s", "5s"] {
        let run = strain(&["-t", "2", "-c", "4", "-d", secs, "-R", "100", "--latency", &url]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!run.stdout.contains("nan") && !run.stdout.contains("inf"), "{}", run.stdout);
        let req_sec: Vec<&str> = run.stdout.lines().filter(|l| l.trim_start().starts_with("Req/Sec")).collect();
        assert_eq!(req_sec.len(), 1);
        assert!(!req_sec[0].contains(" 0.00 "), "{}", req_sec[0]);
        let want = 100 * secs.trim_end_matches('s').parse::<u64>().unwrap();
        assert_eq!(run.num("/requests"), want, "{secs}");
    }
    // Half a request per second on two threads: requests at 0 s and 2 s of a 3 s run.
    let run = strain(&["-t", "2", "-c", "2", "-d", "3s", "-R", "0.5", &url]);
    assert_eq!(run.num("/requests"), 2);
    origin.stop();
}

#[test]
fn stages_ramp_and_step() {
    let origin = Origin::start(&["-t", "1"]);
    // 0 -> 1000/s over 1 s (500 requests), then a step to 2000/s for 1 s (2000 requests).
    let run = strain(&["-t", "1", "-c", "10", "--stages", "1s:1000,0s:2000,1s:2000", &origin.url()]);
    let served = origin.stop();
    assert_eq!(run.num("/requests"), 2500);
    assert_eq!(served.requests, 2500);
    assert!(run.stdout.starts_with("Running 2s test @ "), "{}", run.stdout);
}
