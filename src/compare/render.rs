//! The text, JSON and HTML of a [`Comparison`]: one row per metric, starting with its name,
//! with both values, the change, its confidence interval, the p-value and the verdict word;
//! then what the verdicts rest on and, when undecided, what would decide them. Pure: the CLI
//! decides where it goes.

use std::fmt::Write;

use super::{Comparison, Evidence, Metric, Row, Verdict};
use crate::report::html::esc;
use crate::result::RunDoc;

/// The verdict in words, in the metric's own direction.
pub fn verdict_words(metric: Metric, verdict: Verdict) -> &'static str {
    match (verdict, metric) {
        (Verdict::Same, _) => "no change",
        (Verdict::Inconclusive, _) => "inconclusive",
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

/// A change: percent, or percentage points for the error rate.
fn change(metric: Metric, v: Option<f64>) -> String {
    let unit = if metric == Metric::ErrorRate { "pt" } else { "%" };
    v.map_or_else(|| "n/a".to_string(), |c| format!("{c:+.1}{unit}"))
}

fn ci(r: &Row) -> String {
    let unit = if r.metric == Metric::ErrorRate { "pt" } else { "%" };
    r.ci_pct.map_or_else(|| "n/a".to_string(), |(lo, hi)| format!("[{lo:+.1}{unit}, {hi:+.1}{unit}]"))
}

/// A row's cells, as the text and the page show them: metric, base, new, change, interval,
/// p, verdict.
fn cells(r: &Row) -> [String; 7] {
    [
        r.metric.name().to_string(),
        value(r.metric, r.base),
        value(r.metric, r.new),
        change(r.metric, r.change_pct),
        ci(r),
        format!("{:.4}", r.p_value),
        verdict_words(r.metric, r.verdict).to_string(),
    ]
}

fn line(out: &mut String, r: &Row) {
    let flag = if r.regression { "  REGRESSION" } else { "" };
    let [metric, base, new, change, ci, p, verdict] = cells(r);
    let _ = writeln!(out, "  {metric:<11} {base:>12} {new:>12} {change:>9} {ci:>22} {p:>8}  {verdict}{flag}");
}

/// The one-line verdict of the whole comparison.
pub fn summary(c: &Comparison) -> String {
    if c.regressed() {
        let worse: Vec<&str> = c.metrics.iter().filter(|r| r.regression).map(|r| r.metric.name()).collect();
        format!("REGRESSION: {} worse beyond {}%", worse.join(", "), c.fail_on_regression_pct)
    } else if c.inconclusive() {
        let open: Vec<&str> =
            c.metrics.iter().filter(|r| r.verdict == Verdict::Inconclusive).map(|r| r.metric.name()).collect();
        format!("INCONCLUSIVE: {} undecided", open.join(", "))
    } else {
        format!("no regression beyond {}%", c.fail_on_regression_pct)
    }
}

/// The text report.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = match c.evidence {
        Evidence::Runs => writeln!(
            out,
            "Comparing {} base runs with {} new runs: each run is one sample (the spread between runs is the noise)",
            c.base_runs, c.new_runs
        ),
        Evidence::OneRun => writeln!(
            out,
            "Comparing {} base run(s) ({} intervals) with {} new run(s) ({} intervals): with one run a side strain \
             cannot tell a change from run-to-run noise, so only a change beyond that noise counts",
            c.base_runs, c.base_samples, c.new_runs, c.new_samples
        ),
    };
    let _ = writeln!(
        out,
        "  {:<11} {:>12} {:>12} {:>9} {:>22} {:>8}  verdict",
        "metric", "base", "new", "change", "99% CI", "p"
    );
    for r in &c.metrics {
        line(&mut out, r);
    }
    match c.evidence {
        Evidence::Runs => {
            let _ = writeln!(
                out,
                "Values are geometric means of the runs' values (error rate: the mean); slower or faster when the 99% \
                 CI excludes 0 and the change is beyond {}% (error rate: {} points); no change when the 90% CI lies \
                 within it",
                c.fail_on_regression_pct,
                super::ERROR_RATE_POINTS * 100.0
            );
            for r in c.metrics.iter().filter(|r| r.verdict == Verdict::Inconclusive) {
                if let Some(n) = r.runs_needed {
                    let _ =
                        writeln!(out, "  {}: about {n} runs a side would decide it (--rounds {n})", r.metric.name());
                }
            }
        }
        Evidence::OneRun => {
            let noise: Vec<String> = Metric::ALL[..4]
                .iter()
                .map(|m| format!("{} {}%", m.name(), super::ONE_RUN_NOISE_PCT[*m as usize]))
                .collect();
            let _ = writeln!(
                out,
                "Values are medians of the per-interval values; a change counts when Mann-Whitney's p is below {} and \
                 it is beyond the run-to-run noise measured for strain ({}); for a verdict on smaller changes give \
                 several runs a side, or let `strain compare URL_A URL_B` run them",
                super::ALPHA,
                noise.join(", ")
            );
        }
    }
    let _ = writeln!(out, "Verdict: {}", summary(c));
    out
}

/// The JSON report: the verdicts and every run they rest on (base side first).
pub fn json(c: &Comparison, runs: &[(String, RunDoc)]) -> String {
    super::doc::CompareDoc::new(c, runs).to_json()
}

/// The HTML page: the verdict table first, then every run of both sides overlaid.
pub fn html(c: &Comparison, runs: &[(String, RunDoc)]) -> String {
    let mut table = String::new();
    let class = if c.regressed() {
        "fail"
    } else if c.inconclusive() {
        "open"
    } else {
        "pass"
    };
    let _ = writeln!(
        table,
        "<section class=\"answer {class}\" data-verdict=\"{class}\"><h2 class=\"{class}\">{}</h2>",
        esc(&summary(c))
    );
    table.push_str(
        "<table><tr><th>metric</th><th>base</th><th>new</th><th>change</th><th>99% CI</th><th>p</th><th>verdict</th></tr>\n",
    );
    for r in &c.metrics {
        let cells = cells(r);
        let _ = write!(table, "<tr data-metric=\"{}\" data-verdict=\"{}\">", cells[0], cells[6]);
        for cell in &cells {
            let _ = write!(table, "<td>{}</td>", esc(cell));
        }
        table.push_str("</tr>\n");
    }
    let _ = writeln!(
        table,
        "</table><p>{} base and {} new runs; the verdict rests on {}.</p></section>",
        c.base_runs,
        c.new_runs,
        match c.evidence {
            Evidence::Runs => "the spread between runs",
            Evidence::OneRun => "one run a side, against the run-to-run noise measured for strain",
        }
    );
    // Many runs are coloured by side (base, new); a few keep a colour each.
    let base = c.base_runs;
    let colours = (0..runs.len()).map(|i| if runs.len() > 8 { usize::from(i >= base) } else { i }).collect();
    let o = crate::report::html::Overlay { results: runs, colours };
    crate::report::html::render_page("strain: comparison", &o, &table)
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
            runs_needed: None,
        };
        let mut out = String::new();
        line(&mut out, &r);
        assert_eq!(
            out,
            "  p99               1.00ms       2.00ms   +100.0%      [+90.0%, +110.0%]   0.0001  slower  REGRESSION\n"
        );
    }
}
