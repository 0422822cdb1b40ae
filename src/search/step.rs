//! One step of a capacity search, judged: did the service meet its SLO at this rate, and if
//! not, was it the service or the generator? Pure: it reads a [`RunResult`] and the earlier
//! steps' baseline, nothing else.
//!
//! The generator's own limits are told apart from the service's by where requests waited:
//! - sent late although a connection was free: strain's thread did not get to it in time (its
//!   CPU, or the machine's) — the generator's limit;
//! - its busiest worker thread used nearly all of a core — the generator's limit;
//! - sent late because every connection was busy, while the service answered as fast as it did
//!   at lower rates: more connections would have carried the rate — `-c`'s limit. When the
//!   service's own latency grew instead, the requests were queued in the service: its limit.

use crate::run::RunResult;
use crate::verdict::{Metric, Outcome, Threshold};

use super::watch::Watched;

/// Late sends above this share of a step's sends say who fell behind (a few late sends are
/// scheduling noise on a shared machine).
pub const LATE_SHARE: f64 = 0.02;
/// A worker thread busy for this share of the step was saturated.
pub const CPU_SATURATED: f64 = 0.9;
/// A step falling this far below its target rate fails (the 95%).
pub const ACHIEVED_SHARE: f64 = 0.95;
/// The service counts as "as fast as at lower rates" within this factor of its fastest step.
pub const SLOWDOWN: f64 = 2.0;

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
    /// The rate asked for, requests/s.
    pub target: f64,
    /// Completed requests per second while measuring.
    pub achieved: f64,
    /// Corrected latency percentiles and maximum, microseconds.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Largest.
    pub max_us: u64,
    /// Failed requests (lost, status above 399, wrong content).
    pub errors: u64,
    /// Requests sent more than a millisecond late.
    pub late: u64,
    /// Each SLO term judged, in the order given.
    pub outcomes: Vec<Outcome>,
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
        result: RunResult,
        slo: &[Threshold],
        connections: usize,
        baseline_us: Option<f64>,
        watched: Vec<Watched>,
    ) -> Step {
        let s = &result.summary;
        let outcomes: Vec<Outcome> = slo.iter().map(|t| t.judge(&result)).collect();
        let elapsed = s.elapsed.as_secs_f64();
        let cpu_share =
            result.thread_cpu.iter().map(|c| c.as_secs_f64() / elapsed.max(1e-9)).fold(0.0, f64::max).min(1.0);
        let achieved = s.requests_per_s();
        let p = &s.total.pacing;
        let share = |n: u64| if p.sent == 0 { 0.0 } else { n as f64 / p.sent as f64 };
        let late_share = share(p.late - p.late_no_connection);
        let service_us = crate::stats::Distribution::of(&s.total.uncorrected_us).mean;
        let verdict = if outcomes.iter().all(|o| o.passed) && achieved >= ACHIEVED_SHARE * target {
            Verdict::Pass
        } else if late_share > LATE_SHARE || cpu_share >= CPU_SATURATED {
            Verdict::Generator { late_share, cpu_share }
        } else if share(p.late_no_connection) > LATE_SHARE && baseline_us.is_some_and(|b| service_us <= SLOWDOWN * b) {
            Verdict::Connections { suggest: suggest_connections(target, slo, connections) }
        } else if outcomes.iter().any(|o| !o.passed) {
            Verdict::Slo
        } else {
            Verdict::Behind
        };
        let errors = crate::verdict::failed(s);
        let latency = |q: f64| s.latency_percentile_us(q);
        Step {
            target,
            achieved,
            p50_us: latency(50.0),
            p90_us: latency(90.0),
            p99_us: latency(99.0),
            max_us: s.latency().max,
            errors,
            late: p.late,
            outcomes,
            verdict,
            cpu_share,
            watched,
            result,
        }
    }

    /// The mean service latency (from the actual send), microseconds; the next steps'
    /// baseline.
    pub fn service_mean_us(&self) -> f64 {
        crate::stats::Distribution::of(&self.result.summary.total.uncorrected_us).mean
    }
}

/// Connections that carry `rate` even when every request takes the SLO's latency bound
/// (Little's law), and at least twice the current ones.
pub fn suggest_connections(rate: f64, slo: &[Threshold], connections: usize) -> usize {
    let bound_s = slo
        .iter()
        .filter(|t| matches!(t.metric, Metric::Percentile(_) | Metric::Max | Metric::Mean))
        .map(|t| t.limit / 1e6)
        .fold(0.0, f64::max);
    ((rate * bound_s).ceil() as usize).max(connections * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggested_connections_cover_the_rate_at_the_latency_bound() {
        let slo: Vec<Threshold> =
            ["p99<100ms", "errors<1%", "max<250ms"].iter().map(|t| Threshold::parse(t).unwrap()).collect();
        assert_eq!(suggest_connections(16_000.0, &slo, 100), 4_000);
        assert_eq!(suggest_connections(100.0, &slo, 100), 200);
    }
}
