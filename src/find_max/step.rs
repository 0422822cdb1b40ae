//! One step of a capacity search, judged: did the service meet its SLO at this rate, and if
//! not, was it the service or the generator? Pure: it reads a [`RunResult`] and the earlier
//! steps' baseline, nothing else.
//!
//! The generator's own limits are told apart from the service's by where requests waited,
//! measured by strain on itself, never inferred from latency (a saturated service makes
//! latency grow too):
//! - sent late because strain's thread was behind (a connection was free at the due time, or
//!   the thread took over a millisecond after one came free, or it was busy or waiting for a
//!   CPU for most of the wait; docs/DIAGNOSES.md): strain's thread did not get to it in time
//!   (its CPU, or the machine's) — the generator's limit. At a service's capacity every connection is
//!   waiting on it (Little's law fills them all), so those late sends are the service's;
//! - its busiest worker thread was busy or waiting for a CPU nearly all the step — the
//!   generator's limit (on a shared machine a thread can be at its limit with part of a core);
//! - sent late because every connection was busy, while the service answered as fast as it did
//!   at lower rates (within [`SLOWDOWN`]) and within the SLO: more connections would have
//!   carried the rate — `-c`'s limit. When the service's own latency grew instead, or broke
//!   the SLO by itself, the requests were queued in the service: its limit;
//! - a rate of streams (each holding a connection while it lasts): streams that arrived to
//!   find every connection held, while the started ones met the SLO — `-c`'s limit.

use crate::result::find_max::StepFigures;
use crate::run::RunResult;
use crate::verdict::{Metric, Threshold};

use super::watch::Watched;

/// Late sends above this share of a step's sends say who fell behind (a few late sends are
/// scheduling noise on a shared machine).
pub const LATE_SHARE: f64 = 0.02;
/// ...and above this count: one late send among six at 4 requests/s is a hiccup, not a trend.
pub const LATE_MIN: u64 = 20;
/// ...and only when strain's own delay in them was, on average, at least this share of the
/// SLO's tightest latency bound: a thread woken 2 ms late by a busy host (a VM whose CPUs are
/// taken by its host's other guests) cannot have broken a p99 of 100 ms, even for requests that
/// had waited 300 ms behind busy connections before, so the step is the service's.
pub const LATE_MATERIAL: f64 = 0.05;
/// A worker thread busy for this share of the step was saturated.
pub const CPU_SATURATED: f64 = 0.9;
/// A step falling this far below its target rate fails (the 95%).
pub const ACHIEVED_SHARE: f64 = 0.95;
/// The service counts as "as fast as at lower rates" within this factor of its fastest step.
/// A service at its capacity with `c` connections and `w` workers answers in `c / w` times its
/// service time, so a wider factor reads a service's queue as `-c`'s limit when `c` is a
/// little above `w` (measured: 4 workers of 4 ms and `-c 8` answer in 2.0x).
pub const SLOWDOWN: f64 = 1.25;

/// What a step showed.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The SLO held at this rate.
    Pass,
    /// An SLO term failed (see the outcomes).
    Slo,
    /// The service answered fewer than 95% of the target rate.
    Behind,
    /// strain could not keep the schedule: more threads or machines are needed.
    Generator {
        /// Sends late with a connection free, as a share of sends.
        late_share: f64,
        /// The busiest worker thread's CPU time as a share of the step.
        cpu_share: f64,
    },
    /// Too few connections for the rate: use `-c suggest`.
    Connections {
        /// Connections that let every request wait up to the SLO's latency bound.
        suggest: usize,
    },
}

impl Verdict {
    /// Whether the step passed.
    pub fn passed(&self) -> bool {
        *self == Verdict::Pass
    }

    /// Whether the step measured strain's limit rather than the service's.
    pub fn is_limit(&self) -> bool {
        matches!(self, Verdict::Generator { .. } | Verdict::Connections { .. })
    }

    /// Its name in the JSON and the metrics: `pass`, `slo`, `behind`, `generator_limit`,
    /// `connection_limit`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Slo => "slo",
            Verdict::Behind => "behind",
            Verdict::Generator { .. } => "generator_limit",
            Verdict::Connections { .. } => "connection_limit",
        }
    }

    /// A word for the step table.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Slo => "FAIL",
            Verdict::Behind => "FAIL (behind)",
            Verdict::Generator { .. } => "generator limit",
            Verdict::Connections { .. } => "-c limit",
        }
    }
}

/// One step: its rate, what it measured and how it was judged.
#[derive(Debug)]
pub struct Step {
    /// Its rate and what it measured, as its document writes them.
    pub figures: StepFigures,
    /// How the step came out.
    pub verdict: Verdict,
    /// The busiest worker thread's CPU time as a share of the step.
    pub cpu_share: f64,
    /// The watched processes over the step.
    pub watched: Vec<Watched>,
    /// The whole run.
    pub result: RunResult,
}

impl Step {
    /// Judges the run at `target` against `slo`; `baseline_us` is the lowest mean service
    /// latency (uncorrected) of the earlier steps.
    pub fn judge(
        target: f64,
        mut result: RunResult,
        slo: &[Threshold],
        connections: usize,
        baseline_us: Option<f64>,
        watched: Vec<Watched>,
    ) -> Step {
        // The step's run carries its SLO terms judged, in the order given.
        result.outcomes = result.judge(slo);
        let outcomes = &result.outcomes;
        let s = &result.summary;
        let elapsed = s.elapsed.as_secs_f64();
        // Busy, or ready but waiting for a CPU: either way the thread could not do more.
        let waited = |i: usize| result.thread_waited.get(i).map_or(0.0, |w| w.as_secs_f64());
        let cpu_share = result
            .thread_cpu
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_secs_f64() + waited(i)) / elapsed.max(1e-9))
            .fold(0.0, f64::max)
            .min(1.0);
        // A rate of streams is achieved by the streams started, whatever their events.
        let achieved = s.started_per_s().unwrap_or_else(|| s.requests_per_s());
        // Streams that arrived to find every connection held: more would have started them.
        let dropped = s.total.arrivals_dropped;
        let crowded = dropped >= LATE_MIN && dropped as f64 > LATE_SHARE * (dropped as f64 + achieved * elapsed);
        let p = &s.total.pacing;
        let share = |n: u64| if p.sent == 0 || n < LATE_MIN { 0.0 } else { n as f64 / p.sent as f64 };
        let late_share = share(p.late_generator());
        let material = tightest_bound_us(slo).is_none_or(|b| p.late_generator_mean_us() >= LATE_MATERIAL * b);
        let service_us = crate::stats::Distribution::of(&s.total.uncorrected_us).mean;
        let verdict = if outcomes.iter().all(|o| o.passed) && achieved >= ACHIEVED_SHARE * target {
            Verdict::Pass
        } else if (late_share > LATE_SHARE && material) || cpu_share >= CPU_SATURATED {
            Verdict::Generator { late_share, cpu_share }
        } else if share(p.late_no_connection.saturating_sub(p.late_connecting)) > LATE_SHARE
            && baseline_us.is_some_and(|b| service_us <= SLOWDOWN * b)
            && service_meets(&s.total.uncorrected_us, slo)
        {
            Verdict::Connections { suggest: suggest_connections(target, slo, connections) }
        } else if crowded && outcomes.iter().all(|o| o.passed) {
            // Each stream held its connection for about `connections / achieved` seconds.
            let hold_s = connections as f64 / achieved.max(1e-9);
            Verdict::Connections { suggest: ((target * hold_s).ceil() as usize).max(connections + 1) }
        } else if outcomes.iter().any(|o| !o.passed) {
            Verdict::Slo
        } else {
            Verdict::Behind
        };
        let errors = crate::verdict::failed(s);
        let latency = |q: f64| s.latency_percentile_us(q);
        let figures = StepFigures {
            target_per_s: target,
            achieved_per_s: achieved,
            p50_us: latency(50.0),
            p90_us: latency(90.0),
            p99_us: latency(99.0),
            max_us: s.latency().max,
            errors,
            late: p.late,
        };
        Step { figures, verdict, cpu_share, watched, result }
    }

    /// The mean service latency (from the actual send), microseconds; the next steps'
    /// baseline.
    pub fn service_mean_us(&self) -> f64 {
        crate::stats::Distribution::of(&self.result.summary.total.uncorrected_us).mean
    }
}

/// The SLO's tightest upper bound on latency (a percentile, the maximum or the mean),
/// microseconds, if it has one.
fn tightest_bound_us(slo: &[Threshold]) -> Option<f64> {
    slo.iter().filter_map(Threshold::latency_cap_us).reduce(f64::min)
}

/// Whether the service's own latency (from the actual send) meets the SLO's latency bounds: if
/// it does not, more connections would not have helped.
fn service_meets(uncorrected: &hdrhistogram::Histogram<u64>, slo: &[Threshold]) -> bool {
    if uncorrected.is_empty() {
        return false;
    }
    slo.iter().all(|t| {
        let v = match t.metric {
            Metric::Percentile(q) => uncorrected.value_at_percentile(q) as f64,
            Metric::Max => uncorrected.max() as f64,
            Metric::Mean => uncorrected.mean(),
            _ => return true,
        };
        match t.op {
            crate::verdict::Op::Lt => v < t.limit,
            crate::verdict::Op::Le => v <= t.limit,
            _ => true,
        }
    })
}

/// Connections that carry `rate` even when every request takes the SLO's latency bound
/// (Little's law), and at least twice the current ones.
pub fn suggest_connections(rate: f64, slo: &[Threshold], connections: usize) -> usize {
    let bound_s = slo.iter().filter(|t| t.metric.is_latency()).map(|t| t.limit / 1e6).fold(0.0, f64::max);
    ((rate * bound_s).ceil() as usize).max(connections * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `n` requests over 1 s: corrected latency `ms`, service latency `service_ms`,
    /// `late` late sends of which `no_conn` found no connection, the thread busy `cpu` of it.
    fn run(n: u64, ms: u64, service_ms: u64, late: u64, no_conn: u64, cpu: f64) -> RunResult {
        let mut r = crate::stats::Recorder::new();
        for _ in 0..n {
            r.paced_response(200, ms * 1000, service_ms * 1000);
        }
        // strain's own late sends were late by the wait the corrected latency shows.
        let late_generator_sum_us = (late - no_conn) * (ms - service_ms) * 1000;
        r.pacing = crate::stats::Pacing {
            sent: n,
            late,
            late_no_connection: no_conn,
            late_generator_sum_us,
            ..Default::default()
        };
        r.sent = n;
        r.connections = 10;
        RunResult {
            protocol: crate::config::Protocol::Http1,
            summary: crate::stats::Summary::new(
                vec![r],
                std::time::Duration::from_secs(1),
                std::time::SystemTime::now(),
            ),
            series: Vec::new(),
            addr: "127.0.0.1:1".parse().unwrap(),
            proxy: None,
            origin_served: None,
            failure: None,
            outcomes: Vec::new(),
            thread_cpu: vec![std::time::Duration::from_secs_f64(cpu)],
            thread_waited: vec![std::time::Duration::ZERO],
            shared_cpus: None,
            replay: None,
        }
    }

    #[test]
    fn steps_are_judged_by_where_requests_waited() {
        let slo = vec![Threshold::parse("p99<100ms").unwrap()];
        // (requests in 1 s at 1,000/s, corrected ms, service ms, late, late without a connection,
        // thread CPU, baseline service ms, verdict)
        type Row = (u64, u64, u64, u64, u64, f64, Option<f64>, &'static str);
        let rows: &[Row] = &[
            (1000, 5, 5, 0, 0, 0.3, None, "pass"),
            // Fell behind: fewer than 95% answered.
            (900, 5, 5, 0, 0, 0.3, None, "FAIL (behind)"),
            // Latency over the SLO, requests queued in the service.
            (1000, 300, 250, 900, 900, 0.3, Some(5.0), "FAIL"),
            // Late with connections free: the generator.
            (1000, 300, 5, 500, 10, 0.3, Some(5.0), "generator limit"),
            // ...but not when each was late by only 2 ms of the SLO's 100: the service's.
            (1000, 300, 298, 500, 10, 0.3, Some(5.0), "FAIL"),
            // Its thread saturated: the generator.
            (1000, 300, 5, 0, 0, 0.95, Some(5.0), "generator limit"),
            // Every connection busy, the service as fast as before: -c.
            (1000, 300, 6, 900, 900, 0.3, Some(5.0), "-c limit"),
            // ...but not without an earlier step to compare with.
            (1000, 300, 6, 900, 900, 0.3, None, "FAIL"),
            // ...nor when the service alone breaks the SLO.
            (1000, 300, 150, 900, 900, 0.3, Some(100.0), "FAIL"),
            // A few late sends are noise.
            (1000, 300, 250, 15, 0, 0.3, Some(5.0), "FAIL"),
        ];
        for (i, &(n, ms, service, late, no_conn, cpu, base, want)) in rows.iter().enumerate() {
            let step = Step::judge(
                1000.0,
                run(n, ms, service, late, no_conn, cpu),
                &slo,
                10,
                base.map(|b| b * 1000.0),
                vec![],
            );
            assert_eq!(step.verdict.word(), want, "row {i}: {:?}", step.verdict);
        }
    }

    #[test]
    fn suggested_connections_cover_the_rate_at_the_latency_bound() {
        let slo: Vec<Threshold> =
            ["p99<100ms", "errors<1%", "max<250ms"].iter().map(|t| Threshold::parse(t).unwrap()).collect();
        assert_eq!(suggest_connections(16_000.0, &slo, 100), 4_000);
        assert_eq!(suggest_connections(100.0, &slo, 100), 200);
    }
}
