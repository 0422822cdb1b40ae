//! Issue 10: one run is one library call, and it can be called in a loop in one process (as a
//! capacity search will): each call returns a typed result whose counts match what the
//! in-process origin served.

use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use strain::config::{Settings, Target};
use strain::origin::OriginConfig;
use strain::run::{run, Observer, OriginPlacement, RunConfig, RunResult, Workload};
use strain::schedule::Schedule;
use strain::verdict::{Checks, Threshold};

/// Counts what the run reports as it goes.
#[derive(Default)]
struct Seen {
    started: u32,
    rows: u32,
    finished: u32,
    aborted: Vec<String>,
}

impl Observer for Seen {
    fn started(&mut self) {
        self.started += 1;
    }
    fn interval(
        &mut self,
        _row: &strain::stats::interval::IntervalRow,
        _h: strain::stats::interval::Latencies<'_>,
        proxy: Option<&strain::run::proxy::ProxyRow>,
    ) {
        assert!(proxy.is_none());
        self.rows += 1;
    }
    fn aborting(&mut self, t: &Threshold) {
        self.aborted.push(t.text.clone());
    }
    fn finished(&mut self, _result: &strain::run::RunResult) {
        self.finished += 1;
    }
}

/// A load of `connections` over `threads` for `duration` against strain's origin, in this
/// process with one thread, on a loopback port of its own; the caller sets the rest.
fn on_loopback(threads: usize, connections: usize, duration: Duration) -> (Settings, OriginPlacement) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut load = Settings::new(Target::parse(&format!("http://{addr}/")).unwrap());
    load.threads = threads;
    load.connections = connections;
    load.duration = duration;
    let origin = OriginPlacement::InProcess { listener, config: OriginConfig { threads: 1, ..Default::default() } };
    (load, origin)
}

/// Runs `load` against `origin` with `checks` as one library call, watched by a [`Seen`]; the
/// run succeeded.
fn watched(load: Settings, origin: OriginPlacement, checks: Checks) -> (RunResult, Seen) {
    let load = load.build().unwrap();
    let stop = AtomicBool::new(false);
    let mut seen = Seen::default();
    let result = run(RunConfig { load, workload: Workload::Url, origin, checks }, &stop, &mut seen).unwrap();
    assert!(result.succeeded(), "{:?}", result.failure);
    (result, seen)
}

#[test]
fn runs_are_library_calls_in_a_loop() {
    // Exact counts of a paced run: no other load may starve it.
    let _alone = crate::harness::exclusive();
    for rate in [200.0, 400.0] {
        let (mut load, origin) = on_loopback(1, 4, Duration::from_secs(1));
        load.interval = Some(Duration::from_millis(250));
        load.schedule = Some(Schedule::constant(rate, load.duration));
        let (result, seen) = watched(load, origin, Checks::default());
        assert_eq!(result.summary.total.requests, rate as u64);
        assert_eq!(result.origin_served.unwrap().requests, rate as u64);
        assert_eq!((seen.started, seen.finished), (1, 1));
        assert_eq!(seen.rows as usize, result.series.len());
        assert!(result.series.len() >= 4, "{:?}", result.series.len());
    }
}

#[test]
fn a_warm_up_is_load_but_not_measured() {
    // Exact counts of a paced run: no other load may starve it (timing tests hold the lock too).
    let _alone = crate::harness::exclusive();
    let (mut load, origin) = on_loopback(2, 4, Duration::from_secs(2));
    load.warmup = Duration::from_secs(1);
    load.interval = Some(Duration::from_millis(250));
    load.schedule = Some(Schedule::constant(400.0, load.duration));
    let (result, seen) = watched(load, origin, Checks::default());
    // The origin answered the whole schedule; the result holds the second after the warm-up
    // (a request in flight at the mark counts in the measured part).
    let t = &result.summary.total;
    assert_eq!(result.origin_served.unwrap().requests, 800, "{:?}", t.pacing);
    assert!((399..=401).contains(&t.requests), "{}", t.requests);
    assert_eq!(t.sent, t.requests + t.errors.iter().sum::<u64>());
    assert!(t.connections >= 4, "the connections opened while warming up still count: {}", t.connections);
    let elapsed = result.summary.elapsed.as_secs_f64();
    assert!((0.95..1.5).contains(&elapsed), "{elapsed}");
    // The observer saw the warm-up's rows; the series holds only the measured ones.
    assert!(result.series.iter().all(|r| r.start_s >= 1.0), "{:?}", result.series.first());
    assert!(seen.rows as usize >= result.series.len() + 4, "{} rows, {} kept", seen.rows, result.series.len());
    assert_eq!(result.series.iter().map(|r| r.requests).sum::<u64>(), t.requests);
    assert_eq!(result.thread_cpu.len(), 2);
}

#[test]
fn a_library_caller_gets_the_verdicts_and_the_abort() {
    // Issue 18: thresholds are part of what run() is given and returns, not the printer's.
    let (mut load, origin) = on_loopback(1, 2, Duration::from_secs(10));
    load.interval = Some(Duration::from_millis(100));
    let checks = Checks {
        thresholds: vec![Threshold::parse("errors<1").unwrap(), Threshold::parse("max<1us").unwrap()],
        abort_on_fail: true,
    };
    let started = std::time::Instant::now();
    let (result, seen) = watched(load, origin, checks);
    // No response takes under a microsecond: the first interval's max ends the 10 s run.
    assert_eq!(seen.aborted, vec!["max<1us".to_string()]);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let verdicts: Vec<(&str, bool)> = result.outcomes.iter().map(|o| (o.threshold.text.as_str(), o.passed)).collect();
    assert_eq!(verdicts, vec![("errors<1", true), ("max<1us", false)]);
    assert_eq!(result.outcomes[0].measured, Some(0.0));
}
