//! Thresholds: pass/fail rules on a run's result, in k6's style (`p99<200ms`, `errors<0.1%`,
//! `rps>=9900`), for CI. Parsing and evaluation are pure: `report::text::outcome` prints the
//! outcomes, the CLI turns a failure into exit code 99, and a capacity search uses the same
//! rules as its SLO.

use std::fmt;

use crate::stats::interval::IntervalRow;
use crate::stats::{ErrorKind, Summary};

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A latency percentile (corrected in rate mode), microseconds.
    Percentile(f64),
    /// The largest latency, microseconds.
    Max,
    /// The mean latency, microseconds.
    Mean,
    /// Failed requests (lost, or answered above 399) as a share of all requests; with `%`.
    ErrorRate,
    /// Failed requests, counted.
    Errors,
    /// Completed requests per second.
    Rps,
    /// A proxy test's measured hit ratio (0 to 1).
    HitRatio,
    /// Rate mode: requests sent more than 1 ms late, as a share of those sent; with `%`.
    LateRate,
    /// Rate mode: late requests, counted.
    Late,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Metric {
    /// Whether it measures latency (a percentile, the maximum or the mean), in microseconds.
    pub fn is_latency(self) -> bool {
        matches!(self, Metric::Percentile(_) | Metric::Max | Metric::Mean)
    }
}

impl Op {
    fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Op::Lt => measured < limit,
            Op::Le => measured <= limit,
            Op::Gt => measured > limit,
            Op::Ge => measured >= limit,
        }
    }
}

/// A kind of run some thresholds need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// `late` is measured only against a rate schedule.
    RateMode,
    /// `hit_ratio` is measured only in a proxy test.
    ProxyTest,
}

impl fmt::Display for Needs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Needs::RateMode => "rate mode (-R or --stages)",
            Needs::ProxyTest => "a proxy test (strain proxy)",
        })
    }
}

/// One rule, as written and as understood.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as the user wrote it.
    pub text: String,
    /// What it measures.
    pub metric: Metric,
    /// How it compares.
    pub op: Op,
    /// The limit, in the metric's unit (microseconds, a share 0-1, a count, requests/s).
    pub limit: f64,
}

/// Why an expression is not a threshold; it names the offending part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid threshold '{text}': {why}")]
pub struct ThresholdError {
    /// The expression.
    pub text: String,
    /// What is wrong, naming the part.
    pub why: String,
}

/// Splits `expr` at its comparison: (left, op, right).
fn split_op(expr: &str) -> Option<(&str, Op, &str)> {
    for (sym, op) in [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)] {
        if let Some(i) = expr.find(sym) {
            return Some((&expr[..i], op, &expr[i + sym.len()..]));
        }
    }
    None
}

/// A duration with its unit (us, ms, s, m), in microseconds.
fn duration_us(s: &str) -> Option<f64> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        _ => return None,
    };
    Some(n * scale).filter(|v| v.is_finite() && *v >= 0.0)
}

impl Threshold {
    /// Its limit, in microseconds, when it caps latency from above (`p99<100ms`, `max<=1s`,
    /// `mean<5ms`).
    pub fn latency_cap_us(&self) -> Option<f64> {
        (self.metric.is_latency() && matches!(self.op, Op::Lt | Op::Le)).then_some(self.limit)
    }

    /// Parses one expression.
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let bad = |why: String| ThresholdError { text: text.to_string(), why };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (left, op, right) = split_op(&compact)
            .ok_or_else(|| bad("no comparison: write one of <, <=, >, >= between a metric and a limit".into()))?;
        if right.is_empty() {
            return Err(bad(format!("'{left}' has no limit after the comparison")));
        }
        let percent = right.strip_suffix('%');
        let number = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
        let latency = |metric: Metric| {
            duration_us(right)
                .map(|limit| (metric, limit))
                .ok_or_else(|| bad(format!("'{right}' is not a duration (write e.g. 200ms, 1s, 500us)")))
        };
        let share = |rate: Metric, count: Metric| match percent {
            Some(p) => number(p)
                .filter(|v| *v <= 100.0)
                .map(|v| (rate, v / 100.0))
                .ok_or_else(|| bad(format!("'{right}' is not a percentage from 0% to 100%"))),
            None => number(right)
                .map(|v| (count, v))
                .ok_or_else(|| bad(format!("'{right}' is not a count or a percentage"))),
        };
        let (metric, limit) = match left {
            "max" => latency(Metric::Max)?,
            "mean" | "avg" => latency(Metric::Mean)?,
            "errors" => share(Metric::ErrorRate, Metric::Errors)?,
            "late" => share(Metric::LateRate, Metric::Late)?,
            "rps" => (Metric::Rps, number(right).ok_or_else(|| bad(format!("'{right}' is not a rate in requests/s")))?),
            "hit_ratio" => (
                Metric::HitRatio,
                number(right)
                    .filter(|v| *v <= 1.0)
                    .ok_or_else(|| bad(format!("'{right}' is not a ratio from 0 to 1")))?,
            ),
            l => {
                let p = l
                    .strip_prefix("p(")
                    .and_then(|r| r.strip_suffix(')'))
                    .or_else(|| l.strip_prefix('p'))
                    .and_then(number)
                    .filter(|p| *p > 0.0 && *p <= 100.0)
                    .ok_or_else(|| {
                        bad(format!(
                            "unknown metric '{l}' (use p50, p(99.9), max, mean, errors, rps, hit_ratio or late)"
                        ))
                    })?;
                latency(Metric::Percentile(p))?
            }
        };
        Ok(Threshold { text: text.trim().to_string(), metric, op, limit })
    }

    /// What kind of run this threshold needs, if not any.
    pub fn needs(&self) -> Option<Needs> {
        match self.metric {
            Metric::Late | Metric::LateRate => Some(Needs::RateMode),
            Metric::HitRatio => Some(Needs::ProxyTest),
            _ => None,
        }
    }

    /// The measured value, if the result has one: from the run's `summary`, and the hit ratio
    /// a proxy test measured.
    pub fn measure(&self, s: &Summary, hit_ratio: Option<f64>) -> Option<f64> {
        let latency = s.latency();
        Some(match self.metric {
            Metric::Percentile(p) => s.latency_percentile_us(p) as f64,
            Metric::Max => latency.max as f64,
            Metric::Mean => latency.mean,
            Metric::Errors => failed(s) as f64,
            Metric::ErrorRate => {
                let all = s.total.requests + lost(s);
                if all == 0 {
                    return None;
                }
                failed(s) as f64 / all as f64
            }
            Metric::Rps => s.requests_per_s(),
            Metric::HitRatio => hit_ratio?,
            Metric::Late => s.total.pacing.late as f64,
            Metric::LateRate => {
                let p = &s.total.pacing;
                if p.sent == 0 {
                    return None;
                }
                p.late as f64 / p.sent as f64
            }
        })
    }

    /// Judges a result (see [`Threshold::measure`]): the measured value and whether the rule
    /// holds (no value never holds).
    pub fn judge(&self, s: &Summary, hit_ratio: Option<f64>) -> Outcome {
        let measured = self.measure(s, hit_ratio);
        Outcome { threshold: self.clone(), measured, passed: measured.is_some_and(|m| self.op.holds(m, self.limit)) }
    }
}

/// Requests lost without a response (read, write, parse errors and timeouts).
fn lost(s: &Summary) -> u64 {
    [ErrorKind::Read, ErrorKind::Write, ErrorKind::Parse, ErrorKind::Timeout, ErrorKind::Reset]
        .iter()
        .map(|k| s.errors(*k))
        .sum()
}

/// Failed requests: lost ones, those answered with a status above 399, and wrong bodies.
pub fn failed(s: &Summary) -> u64 {
    lost(s) + s.status_errors() + s.errors(ErrorKind::Content)
}

/// A threshold judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The rule.
    pub threshold: Threshold,
    /// What was measured (`None`: nothing to measure, e.g. no requests).
    pub measured: Option<f64>,
    /// Whether it holds.
    pub passed: bool,
}

/// The pass/fail rules a run is judged by, and whether to stop it once one must fail.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    /// `--threshold` rules, judged on the result.
    pub thresholds: Vec<Threshold>,
    /// `--abort-on-fail`: stop the run as soon as a threshold can no longer pass.
    pub abort_on_fail: bool,
}

/// What the interval rows so far add up to, so that `--abort-on-fail` can see a threshold fail
/// before the run ends. Only upper bounds that can only grow are judged early: the largest
/// latency, and counts of failed or late requests (as shares, against the planned total in rate
/// mode, which the final denominator cannot exceed).
#[derive(Debug, Default)]
pub struct Budget {
    max_us: u64,
    failed: u64,
    late: u64,
    planned: Option<f64>,
}

impl Budget {
    /// An empty budget for the test `config` describes (its settings, a search's step's as
    /// measured too).
    pub fn new(config: &crate::config::Settings) -> Budget {
        let share = config.segment_fraction();
        Budget { planned: config.schedule.as_ref().map(|s| s.total_requests() * share), ..Budget::default() }
    }

    /// Adds an interval; returns the first threshold that can no longer pass.
    pub fn add<'t>(&mut self, row: &IntervalRow, thresholds: &'t [Threshold]) -> Option<&'t Threshold> {
        self.max_us = self.max_us.max(row.max_us);
        self.failed += row.errors_by_kind.iter().filter(|(k, _)| **k != "connect").map(|(_, n)| n).sum::<u64>();
        self.late += row.late;
        thresholds.iter().find(|t| {
            let so_far = match (t.metric, self.planned) {
                (Metric::Max, _) => self.max_us as f64,
                (Metric::Errors, _) => self.failed as f64,
                (Metric::Late, _) => self.late as f64,
                (Metric::ErrorRate, Some(n)) if n > 0.0 => self.failed as f64 / n,
                (Metric::LateRate, Some(n)) if n > 0.0 => self.late as f64 / n,
                _ => return false,
            };
            matches!(t.op, Op::Lt | Op::Le) && !t.op.holds(so_far, t.limit)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_parse_into_metric_op_and_limit() {
        let rows: &[(&str, Metric, Op, f64)] = &[
            ("p99<200ms", Metric::Percentile(99.0), Op::Lt, 200_000.0),
            ("p(99.9)<1s", Metric::Percentile(99.9), Op::Lt, 1_000_000.0),
            ("p50<=20ms", Metric::Percentile(50.0), Op::Le, 20_000.0),
            ("max<2s", Metric::Max, Op::Lt, 2_000_000.0),
            ("mean < 500us", Metric::Mean, Op::Lt, 500.0),
            ("errors<0.1%", Metric::ErrorRate, Op::Lt, 0.001),
            ("errors<=5", Metric::Errors, Op::Le, 5.0),
            ("rps>=9900", Metric::Rps, Op::Ge, 9900.0),
            ("hit_ratio>0.85", Metric::HitRatio, Op::Gt, 0.85),
            ("late<1%", Metric::LateRate, Op::Lt, 0.01),
        ];
        for (text, metric, op, limit) in rows {
            let t = Threshold::parse(text).unwrap();
            assert_eq!((t.metric, t.op), (*metric, *op), "{text}");
            assert!((t.limit - limit).abs() < 1e-9, "{text}: {}", t.limit);
        }
    }

    #[test]
    fn bad_expressions_name_the_offending_part() {
        let rows = [
            ("p99 200ms", "no comparison"),
            ("p99<", "'p99' has no limit"),
            ("p99<200", "'200' is not a duration"),
            ("q99<1s", "unknown metric 'q99'"),
            ("p(101)<1s", "unknown metric 'p(101)'"),
            ("errors<120%", "'120%' is not a percentage"),
            ("hit_ratio>2", "'2' is not a ratio"),
            ("rps>=fast", "'fast' is not a rate"),
        ];
        for (text, why) in rows {
            let e = Threshold::parse(text).unwrap_err();
            assert!(e.to_string().starts_with(&format!("invalid threshold '{text}': ")), "{e}");
            assert!(e.why.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn budgets_fail_upper_bounds_only_once_they_are_crossed() {
        let mut config = crate::config::Settings::new(crate::config::Target::parse("http://127.0.0.1:1/").unwrap());
        config.schedule = Some(crate::schedule::Schedule::constant(100.0, std::time::Duration::from_secs(10)));
        let rules: Vec<Threshold> =
            ["p99<1ms", "max<=50ms", "errors<1%", "late<20"].iter().map(|t| Threshold::parse(t).unwrap()).collect();
        let row = |max_us: u64, errors: u64, late: u64| crate::stats::interval::IntervalRow {
            length_s: 1.0,
            target_per_s: Some(100.0),
            achieved_per_s: 100.0,
            requests: 100,
            max_us,
            errors: errors + 100,
            errors_by_kind: [("read".to_string(), errors), ("connect".to_string(), 100)].into_iter().collect(),
            late,
            ..Default::default()
        };
        let mut b = Budget::new(&config);
        // 1,000 planned: 9 failures fit under 1%, a percentile is never judged early.
        assert_eq!(b.add(&row(50_000, 9, 19), &rules), None);
        assert_eq!(b.add(&row(10, 1, 0), &rules).map(|t| t.text.as_str()), Some("errors<1%"));
        let mut b = Budget::new(&config);
        assert_eq!(b.add(&row(50_001, 0, 0), &rules).map(|t| t.text.as_str()), Some("max<=50ms"));
        let mut b = Budget::new(&config);
        assert_eq!(b.add(&row(0, 0, 20), &rules).map(|t| t.text.as_str()), Some("late<20"));
    }

    #[test]
    fn comparisons_hold_at_their_edges() {
        assert!(Op::Lt.holds(1.0, 2.0) && !Op::Lt.holds(2.0, 2.0));
        assert!(Op::Le.holds(2.0, 2.0) && !Op::Le.holds(2.1, 2.0));
        assert!(Op::Gt.holds(3.0, 2.0) && !Op::Gt.holds(2.0, 2.0));
        assert!(Op::Ge.holds(2.0, 2.0) && !Op::Ge.holds(1.9, 2.0));
    }
}
