//! The text and JSON of a [`Comparison`]: one row per metric with both values, the change, its
//! confidence interval, the p-value and the verdict in words. Pure: the CLI decides where it goes.

use std::fmt::Write;

use super::{Comparison, Metric, Row, Verdict};

/// The verdict in words, in the metric's own direction.
pub fn verdict_words(metric: Metric, verdict: Verdict) -> &'static str {
    match (verdict, metric) {
        (Verdict::Same, _) => "no significant change",
        (Verdict::TooFew, _) => "too few intervals",
        (Verdict::Better, Metric::ErrorRate) => "fewer errors",
        (Verdict::Worse, Metric::ErrorRate) => "more errors",
        (Verdict::Better, _) => "faster",
        (Verdict::Worse, _) => "slower",
    }
}

/// A value in the metric's unit: requests/s, a latency, or a percentage.
fn value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Throughput => format!("{v:.1}/s"),
        Metric::ErrorRate => format!("{:.3}%", v * 100.0),
        _ if v >= 1_000_000.0 => format!("{:.2}s", v / 1_000_000.0),
        _ if v >= 1_000.0 => format!("{:.2}ms", v / 1_000.0),
        _ => format!("{v:.0}us"),
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |c| format!("{c:+.1}%"))
}

fn line(out: &mut String, r: &Row) {
    let ci = r.ci_pct.map_or_else(|| "n/a".to_string(), |(lo, hi)| format!("[{lo:+.1}%, {hi:+.1}%]"));
    let flag = if r.regression { "  REGRESSION" } else { "" };
    let _ = writeln!(
        out,
        "  {:<11} {:>12} {:>12} {:>8} {:>20} {:>8.4}  {}{}",
        r.metric.name(),
        value(r.metric, r.base),
        value(r.metric, r.new),
        pct(r.change_pct),
        ci,
        r.p_value,
        verdict_words(r.metric, r.verdict),
        flag
    );
}

/// The text report.
pub fn text(c: &Comparison, base_runs: usize, new_runs: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Comparing {base_runs} base run(s) ({} intervals) with {new_runs} new run(s) ({} intervals); \
         first and last interval of each run skipped",
        c.base_samples, c.new_samples
    );
    let _ = writeln!(
        out,
        "  {:<11} {:>12} {:>12} {:>8} {:>20} {:>8}  verdict",
        "metric", "base", "new", "change", "95% CI", "p"
    );
    for r in &c.metrics {
        line(&mut out, r);
    }
    let _ = writeln!(
        out,
        "Values are medians of the per-interval values (error rate: their mean); a change counts when \
         Mann-Whitney's p is below {} and its whole 95% CI is beyond {}%",
        super::ALPHA,
        c.fail_on_regression_pct
    );
    out
}

/// The JSON report.
pub fn json(c: &Comparison) -> String {
    // Serializing plain numbers, strings and options cannot fail.
    let mut s = serde_json::to_string_pretty(c).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_rows_render_in_their_units() {
        assert_eq!(value(Metric::Throughput, 1234.56), "1234.6/s");
        assert_eq!(value(Metric::P99, 950.0), "950us");
        assert_eq!(value(Metric::P99, 1500.0), "1.50ms");
        assert_eq!(value(Metric::P50, 2_500_000.0), "2.50s");
        assert_eq!(value(Metric::ErrorRate, 0.0125), "1.250%");
        let r = Row {
            metric: Metric::P99,
            base: 1000.0,
            new: 2000.0,
            change_pct: Some(100.0),
            ci_pct: Some((90.0, 110.0)),
            p_value: 0.0001,
            verdict: Verdict::Worse,
            regression: true,
        };
        let mut out = String::new();
        line(&mut out, &r);
        assert_eq!(
            out,
            "  p99               1.00ms       2.00ms  +100.0%    [+90.0%, +110.0%]   0.0001  slower  REGRESSION\n"
        );
    }
}
