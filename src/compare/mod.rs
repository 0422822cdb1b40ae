//! `strain compare`: is the new build slower? Each side is one or more runs (saved result
//! JSONs, or runs the A/B runner in [`ab`] makes itself). The run is the unit of evidence: two
//! runs of one build differ by more than their intervals suggest (CPU placement, frequency, a
//! neighbour), so with several runs a side each metric is judged on the per-run values (Welch's
//! t interval of the mean log ratio, [`stats`]); with one run a side the interval series can
//! only show a change far beyond the run-to-run noise measured here ([`ONE_RUN_NOISE_PCT`]),
//! and anything less is inconclusive. [`render`] prints the text, JSON ([`doc`]) and HTML. Method,
//! reasons and measured error rates: docs/COMPARE.md.

pub mod ab;
pub mod doc;
pub mod render;
pub mod runs;
pub mod stats;

use serde::{Deserialize, Serialize};

use crate::rng::Rng;
pub use runs::{mismatch, Side};
use stats::{Statistic, Welch};

/// Significance level of a change: a metric is called faster or slower only when the
/// `1 - ALPHA` interval of its change excludes 0 (two-sided, so a false "slower" has at most
/// `ALPHA / 2` per metric).
pub const ALPHA: f64 = 0.01;

/// Level of the equivalence test (two one-sided tests): "no change" when the `1 - 2 x`
/// interval (90%) lies within the allowed change.
pub const EQUIVALENCE_ALPHA: f64 = 0.05;

/// Fewer usable intervals than this in a one-run side and the interval test cannot decide;
/// with 5 + 5 the smallest possible exact p is 2/252 = 0.008, just under [`ALPHA`].
pub const MIN_SAMPLES: usize = 6;

/// Error rates are compared in percentage points: a change smaller than this (0.1 point) is
/// no change.
pub const ERROR_RATE_POINTS: f64 = 0.001;

/// Run-to-run noise measured on the shared 2-core machine (docs/COMPARE.md): the largest
/// change between two runs of the same server, per metric, in 200 A/A pairs on a quiet
/// machine (bench/compare.py, 2026-11-25: 9.8%, 12.2%, 10.5%, 94.6%) and 40 on a busy one
/// (2026-11-23: throughput -58%, that is x0.42, p50 +21%, p90 +26%, p99 +1440%), as a rise
/// (a fall to x0.42 is the same distance as a rise of 140%), rounded up. With one run a side
/// a change is called only beyond this.
pub const ONE_RUN_NOISE_PCT: [f64; 4] = [140.0, 30.0, 40.0, 1500.0];

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
    /// Two results are not of the same test.
    #[error("{0}")]
    Mismatch(String),
}

/// What is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    fn sample(self, r: &runs::Interval) -> f64 {
        match self {
            Metric::Throughput => r.achieved_per_s,
            Metric::P50 => r.p50_us,
            Metric::P90 => r.p90_us,
            Metric::P99 => r.p99_us,
            Metric::ErrorRate => r.error_rate(),
        }
    }

    /// How one run's intervals are summed up.
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

    /// Throughput and latency change by ratios (compared as logs, reported in percent); the
    /// error rate by percentage points.
    fn is_ratio(self) -> bool {
        self != Metric::ErrorRate
    }
}

/// What the evidence says about one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Better beyond the allowed change (faster, or fewer errors).
    Better,
    /// Worse beyond the allowed change (slower, or more errors).
    Worse,
    /// Any change is within the allowed one.
    Same,
    /// The evidence cannot tell: too few runs or intervals, or noise too large for the
    /// allowed change.
    Inconclusive,
}

/// What the verdicts rest on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// Several runs a side: the spread between runs.
    Runs,
    /// One run on a side: its intervals, against the run-to-run noise known beforehand.
    OneRun,
}

/// How a comparison judges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The smallest change that counts, percent (`--fail-on-regression`).
    pub allowed_pct: f64,
    /// Looks at the data a sequential comparison may take (`--rounds auto`): each gets
    /// `ALPHA / looks` (and the same share of the equivalence level), so the error rates hold
    /// over the whole sequence (Bonferroni). 1 for a fixed number of runs.
    pub looks: u32,
}

impl Rule {
    /// A rule for a fixed number of runs.
    pub fn fixed(allowed_pct: f64) -> Rule {
        Rule { allowed_pct, looks: 1 }
    }
}

/// One metric compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The metric.
    pub metric: Metric,
    /// The base side's value: the geometric mean of its runs' values (one run: the median of
    /// its intervals; the error rate: the mean).
    pub base: f64,
    /// The new side's value.
    pub new: f64,
    /// The change from base to new: percent, or percentage points for the error rate; null
    /// from a base of 0.
    pub change_pct: Option<f64>,
    /// Its confidence interval (99%), in the same unit.
    pub ci_pct: Option<(f64, f64)>,
    /// The test's two-sided p-value: Welch's over runs, Mann-Whitney's over one run's
    /// intervals.
    pub p_value: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// True when the verdict is worse.
    pub regression: bool,
    /// Inconclusive over several runs: about how many runs a side would decide it at the
    /// noise seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_needed: Option<u32>,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Runs on the base side.
    pub base_runs: usize,
    /// Runs on the new side.
    pub new_runs: usize,
    /// Usable intervals on the base side (all its runs together).
    pub base_samples: usize,
    /// Usable intervals on the new side.
    pub new_samples: usize,
    /// What the verdicts rest on.
    pub evidence: Evidence,
    /// The allowed change, percent (`--fail-on-regression`).
    pub fail_on_regression_pct: f64,
    /// One row per metric.
    pub metrics: Vec<Row>,
}

impl Comparison {
    /// True when a metric is worse beyond the allowed change.
    pub fn regressed(&self) -> bool {
        self.metrics.iter().any(|r| r.regression)
    }

    /// True when a metric could not be decided.
    pub fn inconclusive(&self) -> bool {
        self.metrics.iter().any(|r| r.verdict == Verdict::Inconclusive)
    }
}

/// Compares the base side with the new one under `rule`.
pub fn compare(base: &Side, new: &Side, rule: Rule) -> Comparison {
    let evidence = if base.runs.len() >= 2 && new.runs.len() >= 2 { Evidence::Runs } else { Evidence::OneRun };
    let metrics = Metric::ALL
        .iter()
        .map(|&metric| match evidence {
            Evidence::Runs => over_runs(metric, base, new, rule),
            Evidence::OneRun => {
                // Each metric gets its own generator, so adding a metric does not move the others.
                let mut rng = Rng::for_thread(BOOTSTRAP_SEED, metric as usize);
                over_intervals(metric, base, new, rule, &mut rng)
            }
        })
        .collect();
    Comparison {
        base_runs: base.runs.len(),
        new_runs: new.runs.len(),
        base_samples: base.intervals.len(),
        new_samples: new.intervals.len(),
        evidence,
        fail_on_regression_pct: rule.allowed_pct,
        metrics,
    }
}

/// The allowed change on the scale a metric is compared on.
fn allowed(metric: Metric, allowed_pct: f64) -> f64 {
    if metric.is_ratio() {
        (1.0 + allowed_pct / 100.0).ln()
    } else {
        ERROR_RATE_POINTS
    }
}

/// A change on the compared scale, as reported: percent or percentage points.
fn reported(metric: Metric, d: f64) -> f64 {
    if metric.is_ratio() {
        d.exp_m1() * 100.0
    } else {
        d * 100.0
    }
}

/// The verdict for a change `d` (new - base, on the compared scale) beyond `allowed`, with
/// `worse` whether `d` points the bad way.
fn called(d: f64, worse: bool) -> Verdict {
    match (d == 0.0, worse) {
        (true, _) => Verdict::Same,
        (false, true) => Verdict::Worse,
        (false, false) => Verdict::Better,
    }
}

/// Several runs a side: Welch's interval over the per-run values (logs for ratios).
fn over_runs(metric: Metric, base: &Side, new: &Side, rule: Rule) -> Row {
    let scale = |v: f64| if metric.is_ratio() { v.max(f64::MIN_POSITIVE).ln() } else { v };
    let a: Vec<f64> = base.runs.iter().map(|r| scale(r.value(metric))).collect();
    let b: Vec<f64> = new.runs.iter().map(|r| scale(r.value(metric))).collect();
    let back = |x: &[f64]| {
        let m = Statistic::Mean.of(x);
        if metric.is_ratio() {
            m.exp()
        } else {
            m
        }
    };
    let (base_v, new_v) = (back(&a), back(&b));
    let delta = allowed(metric, rule.allowed_pct);
    let looks = f64::from(rule.looks.max(1));
    let mut row = Row {
        metric,
        base: base_v,
        new: new_v,
        change_pct: None,
        ci_pct: None,
        p_value: 1.0,
        verdict: Verdict::Inconclusive,
        regression: false,
        runs_needed: None,
    };
    let Some(w) = Welch::of(&a, &b) else { return row };
    let worse = (w.diff < 0.0) == metric.higher_is_better();
    let (lo, hi) = w.interval(ALPHA / looks);
    let (elo, ehi) = w.interval(2.0 * EQUIVALENCE_ALPHA / looks);
    row.p_value = stats::t_p_value(w);
    if metric.is_ratio() || base_v > 0.0 || new_v > 0.0 {
        row.change_pct = Some(reported(metric, w.diff));
        row.ci_pct = Some((reported(metric, lo), reported(metric, hi)));
    }
    row.verdict = if (lo > 0.0 || hi < 0.0) && w.diff.abs() > delta {
        called(w.diff, worse)
    } else if elo > -delta && ehi < delta {
        Verdict::Same
    } else {
        Verdict::Inconclusive
    };
    if row.verdict == Verdict::Inconclusive {
        row.runs_needed = runs_needed(w, base.runs.len(), new.runs.len(), delta);
    }
    row.regression = row.verdict == Verdict::Worse;
    row
}

/// About how many runs a side would decide an inconclusive metric, if the runs vary as they
/// did: enough for the interval to clear the allowed change on the side the estimate is on.
fn runs_needed(w: Welch, na: usize, nb: usize, delta: f64) -> Option<u32> {
    let sd = w.se / (1.0 / na as f64 + 1.0 / nb as f64).sqrt();
    let (z, margin) = if w.diff.abs() < delta {
        (stats::t_quantile(1e6, 1.0 - EQUIVALENCE_ALPHA), delta - w.diff.abs())
    } else {
        (stats::t_quantile(1e6, 1.0 - ALPHA / 2.0), w.diff.abs())
    };
    let n = 2.0 * (z * sd / margin).powi(2);
    (n.is_finite() && margin > 0.0).then(|| n.ceil().clamp(2.0, 10_000.0) as u32)
}

/// One run on a side: the intervals' Mann-Whitney test for the direction, and a change only
/// when it is beyond the run-to-run noise known beforehand.
fn over_intervals(metric: Metric, base: &Side, new: &Side, rule: Rule, rng: &mut Rng) -> Row {
    let stat = metric.statistic();
    let a: Vec<f64> = base.intervals.iter().map(|r| metric.sample(r)).collect();
    let b: Vec<f64> = new.intervals.iter().map(|r| metric.sample(r)).collect();
    let (base_v, new_v) = (stat.of(&a), stat.of(&b));
    let p_value = stats::mann_whitney(&a, &b).map_or(1.0, |t| t.p);
    let enough = a.len() >= MIN_SAMPLES && b.len() >= MIN_SAMPLES;
    let (change_pct, ci_pct, d, noise) = if metric.is_ratio() {
        let change = (base_v != 0.0).then(|| (new_v / base_v - 1.0) * 100.0);
        let noise = (1.0 + ONE_RUN_NOISE_PCT[metric as usize].max(rule.allowed_pct) / 100.0).ln();
        let d = if base_v > 0.0 && new_v > 0.0 { (new_v / base_v).ln() } else { 0.0 };
        (change, stats::bootstrap_change_pct(&a, &b, stat, rng), d, noise)
    } else {
        let d = new_v - base_v;
        (Some(d * 100.0), None, d, ERROR_RATE_POINTS)
    };
    let worse = (d < 0.0) == metric.higher_is_better();
    // The change's whole confidence interval must clear the noise band, not only its point
    // estimate: when a run's intervals spread, the medians alone can cross the band by chance
    // (the same server's p90 was once called +45 % slower, its interval starting at +4 %).
    let clears = ci_pct.is_none_or(|(lo, hi)| {
        let near = if d > 0.0 { lo } else { hi };
        (near > 0.0) == (d > 0.0) && (1.0 + near / 100.0).max(f64::MIN_POSITIVE).ln().abs() > noise
    });
    let verdict = if base_v == new_v && !metric.is_ratio() {
        // The same error rate (no errors on either side): nothing to tell apart.
        Verdict::Same
    } else if enough && p_value < ALPHA / f64::from(rule.looks.max(1)) && d.abs() > noise && clears {
        called(d, worse)
    } else {
        Verdict::Inconclusive
    };
    Row {
        metric,
        base: base_v,
        new: new_v,
        change_pct,
        ci_pct,
        p_value,
        verdict,
        regression: verdict == Verdict::Worse,
        runs_needed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::runs::{Interval, RunValues};
    use super::*;

    fn interval(rate: f64, p50: f64, errors: f64) -> Interval {
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

    /// One run of `n` intervals around `rate` and `p50`, with a small deterministic wobble.
    fn one_run(n: usize, rate: f64, p50: f64) -> Side {
        let intervals: Vec<Interval> =
            (0..n).map(|i| interval(rate + (i % 5) as f64 * 10.0, p50 + (i % 3) as f64, 0.0)).collect();
        Side { runs: vec![RunValues { values: [rate, p50, p50 * 2.0, p50 * 3.0, 0.0] }], intervals }
    }

    /// Runs whose values are `rate` and `p50` times each factor (the run-to-run noise).
    fn runs(rate: f64, p50: f64, factors: &[f64]) -> Side {
        let runs = factors
            .iter()
            .map(|f| RunValues { values: [rate / f, p50 * f, p50 * 2.0 * f, p50 * 3.0 * f, 0.0] })
            .collect();
        Side { runs, intervals: Vec::new() }
    }

    /// A standard normal draw (Box-Muller).
    fn normal(rng: &mut Rng) -> f64 {
        let (u, v) = (rng.unit().max(1e-300), rng.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    fn verdicts(c: &Comparison) -> Vec<Verdict> {
        c.metrics.iter().map(|r| r.verdict).collect()
    }

    #[test]
    fn usable_skips_first_last_and_short_intervals() {
        let mut rows: Vec<Interval> = (0..6).map(|i| interval(1000.0 + f64::from(i), 100.0, 0.0)).collect();
        rows[2].length_s = 0.4;
        let kept = runs::usable(&rows);
        assert_eq!(kept, vec![rows[1], rows[3], rows[4]]);
        assert!(runs::usable(&rows[..2]).is_empty());
    }

    #[test]
    fn several_runs_a_side_are_judged_by_their_spread() {
        let noise = [1.0, 1.02, 0.99, 1.01, 0.98];
        let base = runs(1000.0, 100.0, &noise);
        use Verdict::*;
        // (new side, allowed %, verdicts for throughput, p50, p90, p99, error rate)
        let rows: [(Side, f64, [Verdict; 5]); 5] = [
            // The same runs: every change is inside the allowed 5%.
            (runs(1000.0, 100.0, &noise), 5.0, [Same, Same, Same, Same, Same]),
            // 25% slower: latency up by 25%, throughput down by a fifth.
            (runs(800.0, 125.0, &noise), 5.0, [Worse, Worse, Worse, Worse, Same]),
            // And 25% faster.
            (runs(1250.0, 80.0, &noise), 5.0, [Better, Better, Better, Better, Same]),
            // 3% slower, within 5%: a real change, but not one that counts; within 2% it is
            // not yet shown beyond 2% either (3% +- the spread), so undecided.
            (runs(1000.0 / 1.03, 103.0, &noise), 5.0, [Same, Same, Same, Same, Same]),
            (runs(1000.0 / 1.03, 103.0, &noise), 2.0, [Inconclusive, Inconclusive, Inconclusive, Inconclusive, Same]),
        ];
        for (new, allowed, want) in rows {
            let c = compare(&base, &new, Rule::fixed(allowed));
            assert_eq!(c.evidence, Evidence::Runs);
            assert_eq!(verdicts(&c), want, "{c:#?}");
            assert_eq!(c.regressed(), want.contains(&Worse));
        }
        // Geometric means, the change in percent and its interval.
        let c = compare(&base, &runs(800.0, 125.0, &noise), Rule::fixed(5.0));
        let p50 = &c.metrics[1];
        assert!((p50.change_pct.unwrap() - 25.0).abs() < 1e-9, "{p50:?}");
        let (lo, hi) = p50.ci_pct.unwrap();
        assert!(lo > 20.0 && hi < 30.0, "{p50:?}");
        assert!(p50.p_value < 1e-4);
    }

    #[test]
    fn noisy_runs_are_inconclusive_and_say_how_many_runs_would_decide() {
        let base = runs(1000.0, 100.0, &[1.0, 1.2, 0.85, 1.1, 0.9]);
        let new = runs(1000.0, 100.0, &[1.15, 0.9, 1.0, 0.8, 1.1]);
        let c = compare(&base, &new, Rule::fixed(5.0));
        assert!(c.inconclusive() && !c.regressed(), "{c:#?}");
        let need = c.metrics[1].runs_needed.unwrap();
        assert!((20..200).contains(&need), "{need}");
        // A sequential look has its share of the error rate: a wider interval.
        let once = compare(&base, &runs(1000.0, 120.0, &[1.0, 1.02, 0.99, 1.01, 0.98]), Rule::fixed(5.0));
        let of_ten =
            compare(&base, &runs(1000.0, 120.0, &[1.0, 1.02, 0.99, 1.01, 0.98]), Rule { allowed_pct: 5.0, looks: 10 });
        let width = |c: &Comparison| c.metrics[1].ci_pct.map(|(lo, hi)| hi - lo).unwrap();
        assert!(width(&of_ten) > width(&once));
    }

    #[test]
    fn one_run_a_side_calls_only_changes_beyond_the_known_noise() {
        use Verdict::*;
        let base = one_run(12, 1000.0, 100.0);
        // (new run, verdicts): twice the latency is beyond p50's and p90's noise bounds, not
        // p99's (1500%); half the throughput is within its own (a fall to x0.42 was seen).
        let rows: [(Side, [Verdict; 5]); 5] = [
            (one_run(12, 1000.0, 100.0), [Inconclusive, Inconclusive, Inconclusive, Inconclusive, Same]),
            (one_run(12, 1000.0, 110.0), [Inconclusive, Inconclusive, Inconclusive, Inconclusive, Same]),
            (one_run(12, 500.0, 200.0), [Inconclusive, Worse, Worse, Inconclusive, Same]),
            (one_run(12, 200.0, 2000.0), [Worse, Worse, Worse, Worse, Same]),
            // Too few intervals decide nothing, however large the change.
            (one_run(4, 500.0, 900.0), [Inconclusive, Inconclusive, Inconclusive, Inconclusive, Same]),
        ];
        for (new, want) in rows {
            let c = compare(&base, &new, Rule::fixed(5.0));
            assert_eq!(c.evidence, Evidence::OneRun);
            assert_eq!(verdicts(&c), want, "{c:#?}");
        }
    }

    #[test]
    fn errors_compare_in_points() {
        let mut base = runs(1000.0, 100.0, &[1.0, 1.01, 0.99]);
        let mut new = base.clone();
        for (i, r) in new.runs.iter_mut().enumerate() {
            r.values[4] = 0.02 + i as f64 * 0.001;
        }
        let c = compare(&base, &new, Rule::fixed(5.0));
        let e = &c.metrics[4];
        assert_eq!(e.verdict, Verdict::Worse, "{e:?}");
        assert!((e.change_pct.unwrap() - 2.1).abs() < 1e-9, "{e:?}");
        // Errors under 0.1 point either way are no change.
        for r in base.runs.iter_mut() {
            r.values[4] = 0.0002;
        }
        assert_eq!(compare(&base, &base, Rule::fixed(5.0)).metrics[4].verdict, Verdict::Same);
    }

    #[test]
    fn false_alarms_and_detection_on_simulated_run_to_run_noise() {
        // Each run's values scatter by 10% (log-normal), as runs on a shared machine do:
        // comparing the same server must rarely say slower, and 25% slower must be seen.
        let mut rng = Rng::new(42);
        let side = |rng: &mut Rng, shift: f64, sd: f64| {
            let f: Vec<f64> = (0..5).map(|_| shift * (sd * normal(rng)).exp()).collect();
            runs(1000.0, 100.0, &f)
        };
        let trials = 2000;
        let (mut false_alarms, mut detected) = (0, 0);
        for _ in 0..trials {
            let (a, b) = (side(&mut rng, 1.0, 0.1), side(&mut rng, 1.0, 0.1));
            false_alarms += usize::from(compare(&a, &b, Rule::fixed(5.0)).regressed());
            let (a, b) = (side(&mut rng, 1.0, 0.05), side(&mut rng, 1.25, 0.05));
            detected += usize::from(compare(&a, &b, Rule::fixed(5.0)).metrics[1].verdict == Verdict::Worse);
        }
        // Per metric at most ALPHA / 2; four correlated metrics stay near that.
        assert!(false_alarms * 100 <= trials, "{false_alarms} of {trials}");
        assert!(detected * 100 >= trials * 95, "{detected} of {trials}");
    }

    #[test]
    fn parse_rejects_what_is_not_a_result() {
        let golden =
            std::fs::read_to_string(format!("{}/tests/golden/json_closed_loop.json", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        let doc = runs::parse_result("a.json", &golden).unwrap();
        let rows = runs::intervals(&doc);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].error_rate(), 3.0 / 502.0);
        let newer = golden.replace("\"schema_version\": 1", "\"schema_version\": 2");
        for (text, why) in [
            ("nope", "expected ident"),
            ("{}", "not a strain result, search or comparison"),
            (r#"{"schema_version": 1, "intervals": [{}]}"#, "missing field"),
            (newer.as_str(), "result schema_version 2 is not supported (this strain reads 1)"),
        ] {
            let e = runs::parse_result("a.json", text).unwrap_err().to_string();
            assert!(e.starts_with("a.json: ") && e.contains(why), "{e}");
        }
    }

    #[test]
    fn results_of_different_tests_are_named() {
        let golden =
            std::fs::read_to_string(format!("{}/tests/golden/json_closed_loop.json", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        let a = runs::parse_result("a.json", &golden).unwrap();
        let mut b = a.clone();
        assert_eq!(mismatch(&a, &b, false), None);
        b.config.url = "http://other:1/".into();
        assert!(mismatch(&a, &b, false).unwrap().starts_with("URL ("));
        assert_eq!(mismatch(&a, &b, true), None);
        let mut c = a.clone();
        c.config.connections += 1;
        assert_eq!(
            mismatch(&a, &c, false).unwrap(),
            format!("connections ({} and {})", a.config.connections, c.config.connections)
        );
        let mut d = a.clone();
        d.config.duration_s = d.config.duration_s.map(|s| s + 1.0);
        assert!(mismatch(&a, &d, false).unwrap().starts_with("duration ("));
        let mut e = a.clone();
        e.protocol = "h2".into();
        assert_eq!(mismatch(&a, &e, false).unwrap(), format!("protocol ({} and h2)", a.protocol));
    }
}
