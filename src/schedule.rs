//! Pacing, as pure arithmetic: when request `k` of a run should start.
//!
//! A [`Schedule`] is a list of stages, each ramping linearly from the previous stage's rate to
//! its own (k6's ramping arrival rate); a constant rate is one flat stage. The cumulative number
//! of requests due by time `t` is the integral of the rate, so request `k` is due at the `t`
//! where that integral reaches `k`. The engine asks [`Schedule::due_us`] for its requests; nothing
//! here knows about threads, sockets or clocks, which is what makes it testable by table.

use std::time::Duration;

/// One stage: ramp linearly to `rate_per_s` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the stage lasts.
    pub duration: Duration,
    /// The rate reached at the end of the stage, requests per second.
    pub rate_per_s: f64,
}

/// A stage with its precomputed start time, start rate and requests due before it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    start_s: f64,
    len_s: f64,
    from: f64,
    to: f64,
    before: f64,
}

/// A rate schedule over the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    segments: Vec<Segment>,
    total_s: f64,
    total_requests: f64,
}

impl Schedule {
    /// A constant rate for `duration`.
    pub fn constant(rate_per_s: f64, duration: Duration) -> Schedule {
        Schedule::stages(rate_per_s, &[Stage { duration, rate_per_s }])
    }

    /// Stages starting from `start_rate` (0 for a ramp from nothing).
    pub fn stages(start_rate: f64, stages: &[Stage]) -> Schedule {
        let mut segments = Vec::with_capacity(stages.len());
        let (mut t, mut rate, mut before) = (0.0, start_rate, 0.0);
        for s in stages {
            let len_s = s.duration.as_secs_f64();
            segments.push(Segment { start_s: t, len_s, from: rate, to: s.rate_per_s, before });
            before += (rate + s.rate_per_s) / 2.0 * len_s;
            t += len_s;
            rate = s.rate_per_s;
        }
        Schedule { segments, total_s: t, total_requests: before }
    }

    /// Total length of the schedule.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.total_s)
    }

    /// When each stage ends, in seconds from the start.
    pub fn stage_ends_s(&self) -> Vec<f64> {
        self.segments.iter().map(|s| s.start_s + s.len_s).collect()
    }

    /// Requests due over the whole schedule.
    pub fn total_requests(&self) -> f64 {
        self.total_requests
    }

    /// The intended rate at `t_s` seconds.
    pub fn rate_at(&self, t_s: f64) -> f64 {
        for seg in &self.segments {
            if t_s < seg.start_s + seg.len_s {
                if seg.len_s == 0.0 {
                    return seg.to;
                }
                let f = ((t_s - seg.start_s) / seg.len_s).clamp(0.0, 1.0);
                return seg.from + (seg.to - seg.from) * f;
            }
        }
        self.segments.last().map_or(0.0, |s| s.to)
    }

    /// Requests due by `t_s` seconds (the integral of the rate).
    pub fn due_by(&self, t_s: f64) -> f64 {
        for seg in &self.segments {
            let tau = t_s - seg.start_s;
            if tau < seg.len_s {
                let tau = tau.max(0.0);
                return seg.before + seg.from * tau + (seg.to - seg.from) * tau * tau / (2.0 * seg.len_s);
            }
        }
        self.total_requests
    }

    /// When request `k` (0-based) is due, in microseconds from the start; `None` past the end.
    pub fn due_us(&self, k: u64) -> Option<u64> {
        // Request k is due when k requests have come due before it: request 0 at the start.
        let target = k as f64;
        if target >= self.total_requests {
            return None;
        }
        let seg = self.segments.iter().rev().find(|s| s.before <= target)?;
        let m = target - seg.before;
        let (a, b, d) = (seg.from, seg.to, seg.len_s);
        // Solve a*tau + (b-a)*tau^2/(2d) = m for tau in the stage; the form below stays exact
        // when a = 0 (a ramp from nothing) and when a = b (flat).
        let disc = a * a + 2.0 * (b - a) * m / d;
        let tau = if m == 0.0 { 0.0 } else { 2.0 * m / (a + disc.max(0.0).sqrt()) };
        if !tau.is_finite() {
            return None;
        }
        Some(((seg.start_s + tau.min(d)) * 1e6).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64, rate: f64) -> Stage {
        Stage { duration: Duration::from_secs_f64(secs), rate_per_s: rate }
    }

    #[test]
    fn constant_rates() {
        // (rate, duration s, k, due µs)
        let rows = [
            (1000.0, 10.0, 0, Some(0)),     // the first request goes at the start
            (1000.0, 10.0, 1, Some(1_000)), // then one every millisecond
            (1000.0, 10.0, 9_999, Some(9_999_000)),
            (1000.0, 10.0, 10_000, None), // 10 s at 1000/s is 10,000 requests: no 10,001st
            (0.5, 10.0, 1, Some(2_000_000)), // half a request a second: every 2 s
            (0.5, 10.0, 5, None),
            (3.0, 1.0, 2, Some(666_667)), // rounding to the nearest microsecond
        ];
        for (rate, secs, k, want) in rows {
            let sched = Schedule::constant(rate, Duration::from_secs_f64(secs));
            assert_eq!(sched.due_us(k), want, "rate {rate} k {k}");
        }
    }

    #[test]
    fn ramps_and_steps() {
        // 0 -> 1000/s over 10 s, then flat 1000/s for 10 s: 5,000 requests in the ramp.
        let sched = Schedule::stages(0.0, &[s(10.0, 1000.0), s(10.0, 1000.0)]);
        assert_eq!(sched.total_requests(), 15_000.0);
        let rows = [
            (0, Some(0)),
            // k = 50 t^2 in the ramp: request 50 at 1 s, 1250 at 5 s, 5000 at 10 s.
            (50, Some(1_000_000)),
            (1_250, Some(5_000_000)),
            (5_000, Some(10_000_000)),
            (5_001, Some(10_001_000)), // then one per millisecond
            (14_999, Some(19_999_000)),
            (15_000, None),
        ];
        for (k, want) in rows {
            assert_eq!(sched.due_us(k), want, "k {k}");
        }
        // A step is a zero-length stage: 100/s for 1 s, then at once 1000/s for 1 s.
        let step = Schedule::stages(100.0, &[s(1.0, 100.0), s(0.0, 1000.0), s(1.0, 1000.0)]);
        assert_eq!(step.total_requests(), 1100.0);
        assert_eq!(step.due_us(99), Some(990_000));
        assert_eq!(step.due_us(100), Some(1_000_000));
        assert_eq!(step.due_us(101), Some(1_001_000));
        assert_eq!(step.rate_at(0.5), 100.0);
        assert_eq!(step.rate_at(1.5), 1000.0);
        // Ramping down to zero: 100 -> 0 over 2 s is 100 requests, the last one just before 2 s.
        let down = Schedule::stages(100.0, &[s(2.0, 0.0)]);
        assert_eq!(down.due_us(0), Some(0));
        assert!(down.due_us(99).unwrap() < 2_000_000);
        assert_eq!(down.due_us(100), None);
    }

    #[test]
    fn due_times_are_increasing_and_match_the_integral() {
        let sched = Schedule::stages(10.0, &[s(3.0, 5000.0), s(0.0, 200.0), s(2.0, 200.0), s(4.0, 0.0)]);
        let mut last = 0;
        let mut k = 0;
        while let Some(t) = sched.due_us(k) {
            assert!(t >= last, "k {k}: {t} < {last}");
            // Requests due by that time is k, to within a microsecond's worth.
            let due = sched.due_by(t as f64 / 1e6);
            assert!((due - k as f64).abs() < 0.01 + sched.rate_at(t as f64 / 1e6) * 1e-6, "k {k}: {due}");
            last = t;
            k += 1;
        }
        assert_eq!(k as f64, sched.total_requests().ceil());
    }
}
