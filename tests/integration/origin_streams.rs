//! What `strain origin` does alike over HTTP/2 and HTTP/3, where each request is a stream of a
//! shared connection: origin_h2.rs and origin_h3.rs run these with their protocol's origin
//! (`start`: `--tls --http3` for HTTP/3) and client flags (`--http2`, `--http3 -k`). Each
//! returns the run for the protocol's own checks.

use std::ops::RangeInclusive;

use crate::harness::{exclusive, load, Origin, Run};

/// A delay of `delay_ms` on every response, and 2 connections of 4 streams for a second:
/// no response comes sooner than the delay, the requests made are within `requests` (eight at a
/// time, not the two that one response at a time per connection would give), and the origin
/// served exactly those.
pub fn delay_holds_each_stream(
    start: fn(&[&str]) -> Origin,
    client: &str,
    delay_ms: u64,
    requests: RangeInclusive<u64>,
) -> Run {
    let origin = start(&["-t", "1", "--delay", &format!("{delay_ms}ms")]);
    let run = load(&format!("{client} -m 4 -c 2 -t 1 -d 1s"), &origin.url());
    let min_ms = run.num("/latency_us/min") as f64 / 1000.0;
    assert!(min_ms >= delay_ms as f64, "min latency {min_ms} ms");
    let made = run.num("/requests");
    assert!(requests.contains(&made), "{made} requests\n{}", run.stdout);
    assert_eq!(origin.stop().requests, made);
    run
}

/// 8 workers of 4 ms serve 2,000 requests/s: 8 connections of 8 streams for 3 s hold that rate
/// within 5%, and the origin served exactly what strain counted.
pub fn known_capacity_holds(start: fn(&[&str]) -> Origin, client: &str) -> Run {
    let _alone = exclusive();
    let origin = start(&["-t", "2", "--service-time", "4ms", "--workers", "8"]);
    let run = load(&format!("{client} -m 8 -c 8 -t 1 -d 3s"), &origin.url());
    let rate = run.json.as_ref().and_then(|j| j["requests_per_s"].as_f64()).unwrap();
    assert!((rate - 2000.0).abs() <= 100.0, "{rate} requests/s, expected 2000 ± 5%");
    assert_eq!(origin.stop().requests, run.num("/requests"));
    run
}

/// A stall of 500 ms, `at` after the origin starts, under 2 connections of 4 streams for
/// 1.5 s: the longest wait is the stall's, and every stream it held was answered after it.
pub fn stall_holds_streams(start: fn(&[&str]) -> Origin, client: &str, at: &str) -> Run {
    // The stall is timed from the origin's start: the load must not wait for another test.
    let _alone = exclusive();
    let origin = start(&["-t", "1", "--stall-at", at, "--stall-for", "500ms"]);
    let run = load(&format!("{client} -m 4 -c 2 -t 1 -d 1500ms"), &origin.url());
    let max_ms = run.num("/latency_us/max") as f64 / 1000.0;
    assert!((400.0..1000.0).contains(&max_ms), "max latency {max_ms} ms");
    assert_eq!(origin.stop().requests, run.num("/requests"));
    run
}
