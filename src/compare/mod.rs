//! `strain compare BASE NEW`: is the new build slower? Reads strain result JSONs (one or several
//! per side), turns each run's interval series into per-interval samples, and judges throughput,
//! p50, p90, p99 and the error rate with a Mann-Whitney U test and a bootstrap confidence
//! interval ([`stats`]); [`render`] prints the text and JSON. The CLI (`cli/compare.rs`) reads
//! the files and maps a significant regression to its exit code. Method and reasons:
//! docs/COMPARE.md.

pub mod render;
pub mod stats;

use serde::Serialize;

use crate::rng::Rng;
use stats::Statistic;

/// Significance level of the Mann-Whitney test: a change is significant when p is below this.
pub const ALPHA: f64 = 0.01;

/// Fewer samples than this on a side and the verdict is "too few intervals"; with 5 + 5 the
/// smallest possible exact p is 2/252 = 0.008, just under [`ALPHA`].
pub const MIN_SAMPLES: usize = 6;

/// Seed of the bootstrap, so a comparison prints the same interval every time.
const BOOTSTRAP_SEED: u64 = 0x5EED_C0A1;

/// Why a result file cannot be compared; the CLI makes each a usage error.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a result this strain reads.
    #[error("{path}: {why}")]
    NotResult {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// The run has no interval left once warm-up, the partial last and short intervals are dropped.
    #[error("{path} has no usable intervals (the first and last are skipped; run longer or use a shorter --interval)")]
    NoIntervals {
        /// The file.
        path: String,
    },
}

/// One interval of a run, as read from the JSON.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Length in seconds.
    pub length_s: f64,
    /// Completed requests per second.
    pub achieved_per_s: f64,
    /// Latency percentiles, microseconds.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Responses completed.
    pub requests: f64,
    /// Errors of every kind, status errors included.
    pub errors: f64,
    /// Responses with a status above 399.
    pub status_errors: f64,
}

impl Interval {
    /// Failed requests as a share of requests: failures over responses plus lost requests
    /// (status errors are responses, so they are not added twice); 0 when nothing happened.
    fn error_rate(&self) -> f64 {
        let all = self.requests + (self.errors - self.status_errors).max(0.0);
        if all > 0.0 {
            self.errors / all
        } else {
            0.0
        }
    }
}

/// Parses one strain result JSON into its interval series.
pub fn parse_result(path: &str, text: &str) -> Result<Vec<Interval>, CompareError> {
    let doc = crate::result::RunDoc::parse(text)
        .map_err(|e| CompareError::NotResult { path: path.to_string(), why: e.to_string() })?;
    Ok(doc
        .intervals
        .iter()
        .map(|r| Interval {
            length_s: r.length_s,
            achieved_per_s: r.achieved_per_s,
            p50_us: r.p50_us as f64,
            p90_us: r.p90_us as f64,
            p99_us: r.p99_us as f64,
            requests: r.requests as f64,
            errors: r.errors as f64,
            status_errors: r.status_errors as f64,
        })
        .collect())
}

/// The intervals that count as samples: without the first (warm-up: connections opening,
/// caches filling) and the last (cut short by the end of the run, and draining), and without any
/// shorter than half the usual length (their rates and percentiles rest on too few requests).
pub fn usable(rows: &[Interval]) -> Vec<Interval> {
    if rows.len() < 3 {
        return Vec::new();
    }
    let inner = &rows[1..rows.len() - 1];
    let lengths: Vec<f64> = inner.iter().map(|r| r.length_s).filter(|l| l.is_finite()).collect();
    let nominal = Statistic::Median.of(&lengths);
    inner.iter().filter(|r| r.length_s >= nominal / 2.0 && r.length_s > 0.0).copied().collect()
}

/// What is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Completed requests per second: lower is slower.
    Throughput,
    /// Median latency (corrected in rate mode): higher is slower.
    P50,
    /// 90th percentile latency.
    P90,
    /// 99th percentile latency.
    P99,
    /// Failed requests as a share: higher is worse.
    ErrorRate,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 5] = [Metric::Throughput, Metric::P50, Metric::P90, Metric::P99, Metric::ErrorRate];

    /// The name in the text report.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::ErrorRate => "error rate",
        }
    }

    /// This metric's sample from one interval.
    fn sample(self, r: &Interval) -> f64 {
        match self {
            Metric::Throughput => r.achieved_per_s,
            Metric::P50 => r.p50_us,
            Metric::P90 => r.p90_us,
            Metric::P99 => r.p99_us,
            Metric::ErrorRate => r.error_rate(),
        }
    }

    /// How one side's samples are summed up.
    fn statistic(self) -> Statistic {
        match self {
            Metric::ErrorRate => Statistic::Mean,
            _ => Statistic::Median,
        }
    }

    /// True when a higher value is better.
    fn higher_is_better(self) -> bool {
        self == Metric::Throughput
    }
}

/// What the test says about one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better (faster, or fewer errors).
    Better,
    /// Significantly worse (slower, or more errors).
    Worse,
    /// No significant change.
    Same,
    /// Too few intervals on a side to decide.
    TooFew,
}

/// One metric compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The metric.
    pub metric: Metric,
    /// The base side's statistic (median of the intervals; mean for the error rate).
    pub base: f64,
    /// The new side's statistic.
    pub new: f64,
    /// The change from base to new in percent; null when the base is 0.
    pub change_pct: Option<f64>,
    /// 95% bootstrap confidence interval of the change, percent; null when the base is 0.
    pub ci_pct: Option<(f64, f64)>,
    /// The Mann-Whitney U test's two-sided p-value.
    pub p_value: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// True when the verdict is worse: a significant change beyond the allowed percentage.
    pub regression: bool,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Usable intervals on the base side (all its files together).
    pub base_samples: usize,
    /// Usable intervals on the new side.
    pub new_samples: usize,
    /// The allowed regression, percent (`--fail-on-regression`).
    pub fail_on_regression_pct: f64,
    /// One row per metric.
    pub metrics: Vec<Row>,
}

impl Comparison {
    /// True when a metric regressed significantly by more than the allowed percentage.
    pub fn regressed(&self) -> bool {
        self.metrics.iter().any(|r| r.regression)
    }

    /// True when a side has too few intervals to decide.
    pub fn too_few(&self) -> bool {
        self.base_samples < MIN_SAMPLES || self.new_samples < MIN_SAMPLES
    }
}

/// Compares two sides, each the usable intervals of its runs pooled.
pub fn compare(base: &[Interval], new: &[Interval], fail_on_regression_pct: f64) -> Comparison {
    let too_few = base.len() < MIN_SAMPLES || new.len() < MIN_SAMPLES;
    let metrics = Metric::ALL
        .iter()
        .map(|&metric| {
            let a: Vec<f64> = base.iter().map(|r| metric.sample(r)).collect();
            let b: Vec<f64> = new.iter().map(|r| metric.sample(r)).collect();
            // Each metric gets its own generator, so adding a metric does not move the others.
            let mut rng = Rng::for_thread(BOOTSTRAP_SEED, metric as usize);
            judge(metric, &a, &b, too_few, fail_on_regression_pct, &mut rng)
        })
        .collect();
    Comparison { base_samples: base.len(), new_samples: new.len(), fail_on_regression_pct, metrics }
}

/// One metric's row from its two samples.
fn judge(metric: Metric, a: &[f64], b: &[f64], too_few: bool, allowed_pct: f64, rng: &mut Rng) -> Row {
    let stat = metric.statistic();
    let (base, new) = (stat.of(a), stat.of(b));
    let change_pct = (base != 0.0).then(|| (new / base - 1.0) * 100.0);
    let ci_pct = stats::bootstrap_change_pct(a, b, stat, rng);
    let p_value = stats::mann_whitney(a, b).map_or(1.0, |t| t.p);
    // Significant: the rank test rejects "same distribution" and the interval of the change
    // excludes 0 (when there is one), so the verdict and the printed interval never disagree.
    let significant = p_value < ALPHA && ci_pct.is_none_or(|(lo, hi)| lo > 0.0 || hi < 0.0) && new != base;
    // Intervals of one run share that run's conditions (CPU frequency, neighbours, page cache),
    // so two runs of the same build differ by a few percent with a tiny p-value: the allowed
    // change is also the smallest one that counts, and the whole confidence interval must lie
    // beyond it. From a base of 0 (no errors before) any significant rise counts.
    let large = match ci_pct {
        Some((lo, hi)) => lo > allowed_pct || hi < -allowed_pct,
        None => change_pct.is_none_or(|c| c.abs() > allowed_pct),
    };
    let worse = (new < base) == metric.higher_is_better();
    let verdict = match (too_few, significant && large, worse) {
        (true, _, _) => Verdict::TooFew,
        (false, false, _) => Verdict::Same,
        (false, true, true) => Verdict::Worse,
        (false, true, false) => Verdict::Better,
    };
    Row { metric, base, new, change_pct, ci_pct, p_value, verdict, regression: verdict == Verdict::Worse }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rate: f64, p50: f64, errors: f64) -> Interval {
        Interval {
            length_s: 1.0,
            achieved_per_s: rate,
            p50_us: p50,
            p90_us: p50 * 2.0,
            p99_us: p50 * 3.0,
            requests: rate,
            errors,
            status_errors: 0.0,
        }
    }

    /// A side of `n` intervals around `rate` and `p50`, with a small deterministic wobble.
    fn side(n: usize, rate: f64, p50: f64, errors: f64) -> Vec<Interval> {
        (0..n).map(|i| row(rate + (i % 5) as f64 * 10.0, p50 + (i % 3) as f64, errors)).collect()
    }

    #[test]
    fn usable_skips_first_last_and_short_intervals() {
        let mut rows = side(6, 1000.0, 100.0, 0.0);
        rows[2].length_s = 0.4;
        let kept = usable(&rows);
        assert_eq!(kept.len(), 3);
        assert_eq!(kept, vec![rows[1], rows[3], rows[4]]);
        assert!(usable(&rows[..2]).is_empty());
    }

    #[test]
    fn verdicts_follow_each_metrics_direction() {
        let base = side(12, 1000.0, 100.0, 0.0);
        // Same series: nothing changes, nothing regresses.
        let same = compare(&base, &base, 5.0);
        assert!(same.metrics.iter().all(|r| r.verdict == Verdict::Same && !r.regression), "{same:?}");
        assert!(!same.regressed());
        // 20% less throughput, twice the latency, errors appear.
        let worse = compare(&base, &side(12, 800.0, 200.0, 5.0), 5.0);
        let verdicts: Vec<Verdict> = worse.metrics.iter().map(|r| r.verdict).collect();
        assert_eq!(verdicts, vec![Verdict::Worse; 5]);
        assert!(worse.regressed());
        let t = &worse.metrics[0];
        assert_eq!((t.base, t.new), (1015.0, 815.0));
        assert!((t.change_pct.unwrap() - (815.0 / 1015.0 - 1.0) * 100.0).abs() < 1e-9);
        assert_eq!(worse.metrics[4].change_pct, None);
        // The other way round everything is better, and better is never a regression.
        let better = compare(&side(12, 800.0, 200.0, 5.0), &base, 5.0);
        assert!(better.metrics.iter().all(|r| r.verdict == Verdict::Better && !r.regression), "{better:?}");
    }

    #[test]
    fn a_significant_change_below_the_allowed_one_is_no_change() {
        let base = side(12, 1000.0, 100.0, 0.0);
        let c = compare(&base, &side(12, 1000.0, 103.0, 0.0), 5.0);
        assert!(c.metrics[1].p_value < ALPHA, "{c:?}");
        assert_eq!(c.metrics[1].verdict, Verdict::Same);
        assert!(!c.metrics[1].regression && !c.regressed());
        assert!(compare(&base, &side(12, 1000.0, 103.0, 0.0), 1.0).regressed());
    }

    #[test]
    fn too_few_intervals_decide_nothing() {
        let c = compare(&side(4, 1000.0, 100.0, 0.0), &side(12, 500.0, 900.0, 0.0), 5.0);
        assert!(c.too_few() && !c.regressed());
        assert!(c.metrics.iter().all(|r| r.verdict == Verdict::TooFew));
    }

    #[test]
    fn parse_rejects_what_is_not_a_result() {
        let golden =
            std::fs::read_to_string(format!("{}/tests/golden/json_closed_loop.json", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        let rows = parse_result("a.json", &golden).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].error_rate(), 3.0 / 502.0);
        let newer = golden.replace("\"schema_version\": 1", "\"schema_version\": 2");
        for (text, why) in [
            ("nope", "expected ident"),
            ("{}", "not a strain result or search"),
            (r#"{"schema_version": 1, "intervals": [{}]}"#, "missing field"),
            (newer.as_str(), "result schema_version 2 is not supported (this strain reads 1)"),
        ] {
            let e = parse_result("a.json", text).unwrap_err().to_string();
            assert!(e.starts_with("a.json: ") && e.contains(why), "{e}");
        }
    }
}
