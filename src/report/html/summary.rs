//! The blocks a run page opens with: the answer (thresholds ✓/✗ with the measured values, or
//! one sentence on how the run went), the summary table (one row per result), and the targets
//! of a `--targets` run.

use std::fmt::Write;

use super::axis::{latency, per_second};
use super::{esc, Overlay};
use crate::report::text::threshold_value;
use crate::report::units::grouped;
use crate::result::RunDoc;
use crate::verdict::Threshold;

/// The answer: each result's thresholds ✓/✗ with the measured values, or a line saying how
/// it went; `class` of the block is pass, fail or (nothing judged) none.
pub fn answer(o: &Overlay) -> String {
    let judged = o.results.iter().any(|(_, d)| !d.thresholds.is_empty());
    let failed = o.results.iter().any(|(_, d)| d.thresholds.iter().any(|t| !t.passed));
    let class = match (judged, failed) {
        (_, true) => "fail",
        (true, false) => "pass",
        _ => "none",
    };
    let mut out = format!("<section class=\"answer {class}\" data-verdict=\"{class}\">");
    if judged {
        let (all, bad) = o
            .results
            .iter()
            .flat_map(|(_, d)| &d.thresholds)
            .fold((0, 0), |(a, b), t| (a + 1, b + usize::from(!t.passed)));
        let _ = write!(
            out,
            "<h2 class=\"{class}\">{}</h2>",
            if bad == 0 {
                format!("Passed: all {all} thresholds held")
            } else {
                format!("Failed: {bad} of {all} thresholds")
            }
        );
    }
    for (i, (label, d)) in o.results.iter().enumerate() {
        if !o.single() {
            let _ = write!(out, "<h3 style=\"color:{}\">{}</h3>", o.colour(i), esc(label));
        }
        let _ = write!(out, "<p class=\"line\">{}</p>", esc(&one_line(d)));
        if !d.thresholds.is_empty() {
            out.push_str("<ul class=\"checks\">");
            for t in &d.thresholds {
                let value = match (Threshold::parse(&t.expr), t.value) {
                    (Ok(th), Some(v)) => threshold_value(th.metric, v),
                    (_, Some(v)) => format!("{v}"),
                    (_, None) => "no value".into(),
                };
                let (mark, c) = if t.passed { ("✓", "pass") } else { ("✗", "fail") };
                let _ = write!(
                    out,
                    "<li class=\"{c}\" data-threshold=\"{}\" data-passed=\"{}\">{mark} <b>{}</b>: {}</li>",
                    esc(&t.expr),
                    t.passed,
                    esc(&t.expr),
                    esc(&value)
                );
            }
            out.push_str("</ul>");
        }
    }
    out.push_str("</section>\n");
    out
}

/// How a run went, in one sentence.
fn one_line(d: &RunDoc) -> String {
    let mut s = format!(
        "{} {} in {:.1} s: {}",
        grouped(d.requests as f64, 0),
        d.sections.answers().plural,
        d.duration_s,
        per_second(d.requests_per_s)
    );
    if let Some(r) = &d.rate {
        let _ = write!(s, " (target {})", per_second(r.target_per_s));
    }
    if let Some(p99) = d.latency_us.at("99") {
        let _ = write!(s, ", p99 {}", latency(p99 as f64));
    }
    let errors = d.error_total();
    let _ = match errors {
        0 => write!(s, ", no errors"),
        n => write!(s, ", {} errors ({:.2}%)", grouped(n as f64, 0), 100.0 * n as f64 / d.sent.max(1) as f64),
    };
    if let Some(r) = d.rate.as_ref().filter(|r| r.late > 0 || r.unsent > 0) {
        let _ = write!(s, ", {} late and {} unsent sends", grouped(r.late as f64, 0), grouped(r.unsent as f64, 0));
    }
    s
}

/// The summary table: one row per result.
pub fn summary(o: &Overlay) -> String {
    let rate_mode = o.results.iter().any(|(_, d)| d.rate.is_some());
    let proxy = o.results.iter().any(|(_, d)| d.proxy.is_some());
    let noun = o.counted().plural;
    let mut out = format!("<table class=\"summary\"><tr><th>result</th><th>{noun}</th><th>{noun}/s</th>");
    if rate_mode {
        out.push_str("<th>target/s</th><th>late</th><th>unsent</th>");
    }
    out.push_str("<th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>errors</th><th class=\"l\">errors by kind</th>");
    if proxy {
        out.push_str("<th>hit ratio</th>");
    }
    let answers = o.counted().status;
    let _ = writeln!(out, "<th class=\"l\">{answers}</th><th>protocol</th></tr>");
    for (i, (label, d)) in o.results.iter().enumerate() {
        let p = |k: &str| d.latency_us.at(k).map_or_else(|| "-".into(), |v| latency(v as f64));
        let _ = write!(
            out,
            "<tr><td><b style=\"color:{}\">{}</b></td><td data-metric=\"requests\">{}</td><td data-metric=\"requests_per_s\">{}</td>",
            o.colour(i),
            esc(label),
            grouped(d.requests as f64, 0),
            grouped(d.requests_per_s, 2),
        );
        if rate_mode {
            match &d.rate {
                Some(r) => {
                    let _ = write!(
                        out,
                        "<td data-metric=\"target_per_s\">{}</td><td data-metric=\"late\">{}</td><td data-metric=\"unsent\">{}</td>",
                        grouped(r.target_per_s, 0),
                        grouped(r.late as f64, 0),
                        grouped(r.unsent as f64, 0)
                    );
                }
                None => out.push_str("<td>-</td><td>-</td><td>-</td>"),
            }
        }
        let kinds: Vec<(&str, u64)> = d.errors.by_kind().into_iter().filter(|(_, n)| *n > 0).collect();
        let _ = write!(
            out,
            "<td>{}</td><td>{}</td><td data-metric=\"p99\">{}</td><td>{}</td><td>{}</td><td data-metric=\"errors\">{}</td><td class=\"l\">{}</td>",
            p("50"),
            p("90"),
            p("99"),
            p("99.9"),
            p("100"),
            grouped(d.error_total() as f64, 0),
            if kinds.is_empty() { "none".to_string() } else { esc(&kinds.iter().map(|(k, n)| format!("{k} {}", grouped(*n as f64, 0))).collect::<Vec<_>>().join(", ")) }
        );
        if proxy {
            let hit = d.proxy.as_ref().and_then(|p| p.hit_ratio).map_or_else(|| "-".into(), |h| format!("{h:.3}"));
            let _ = write!(out, "<td data-metric=\"hit_ratio\">{hit}</td>");
        }
        // A unit's answers other than responses (WebSocket's messages): what the server said
        // is the unit's to tell (its upgrades and close codes).
        let status = match d.sections.iter().find_map(|(_, s)| s.said()) {
            Some(said) => said,
            None => {
                d.status.iter().map(|(k, v)| format!("{k}: {}", grouped(*v as f64, 0))).collect::<Vec<_>>().join(", ")
            }
        };
        let _ = writeln!(
            out,
            "<td class=\"l\">{}</td><td data-metric=\"protocol\">{}</td></tr>",
            esc(&status),
            esc(&d.protocol)
        );
    }
    out.push_str("</table>\n");
    out
}

/// `--targets` runs: each target's responses and latency.
pub fn targets(o: &Overlay) -> String {
    if o.results.iter().all(|(_, d)| d.targets.is_empty()) {
        return String::new();
    }
    let mut out = String::from(
        "<table><tr><th>result</th><th>target</th><th>requests</th><th>errors</th><th>mean</th><th>max</th></tr>\n",
    );
    for (label, d) in o.results {
        for t in &d.targets {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"l\">{} {}</td><td data-metric=\"target_requests\">{}</td><td data-metric=\"target_errors\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(label),
                esc(&t.method),
                esc(&t.url),
                t.requests,
                t.errors,
                latency(t.latency_mean_us),
                latency(t.latency_max_us as f64),
            );
        }
    }
    out.push_str("</table>\n");
    out
}
