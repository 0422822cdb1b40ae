//! The find-max page (`find-max --html`, `strain report SEARCH.json`): a capacity search's answer
//! in sentences, its latency-vs-rate curve (and, when the search overshot far past the answer,
//! the same curve from the knee to the first fail, where the SLO is decided), and its steps in
//! the order they ran. It draws with the run page's `chart`, so both pages look alike.

use std::fmt::Write;

use super::axis::{latency, latency_unit, Axis};
use super::chart::{self, colour, Frame, Line};
use super::{esc, head, tail};
use crate::report::units::rate;
use crate::report::units::time_us;
use crate::result::find_max::{Answer, FindMaxDoc, StepDoc, StepFigures};
use crate::verdict::Threshold;

/// A capacity search (`find-max --json`) as one page: the answer, the latency-vs-rate curves
/// with the highest passing rate marked, and the steps.
pub fn render_find_max(doc: &FindMaxDoc) -> String {
    let mut out = head("strain: find-max");
    let slo: Vec<&str> = doc.config.slo.iter().map(String::as_str).collect();
    let steps = &doc.steps;
    let verdicts: Vec<(f64, &str)> = steps.iter().map(|s| (s.figures.target_per_s, s.verdict.as_str())).collect();
    let _ = writeln!(
        out,
        "<section class=\"answer {}\" data-verdict=\"{0}\"><p class=\"line\">{}</p></section>\n<p class=\"meta\"><code>{}</code><br>SLO: <b>{}</b>; {} connections, {} thread(s)</p>",
        if doc.max_rate.is_some() { "pass" } else { "fail" },
        search_answer(doc.max_rate, &doc.answer, &verdicts, doc.config.noun()),
        esc(&doc.config.url),
        esc(&slo.join(", ")),
        doc.config.connections,
        doc.config.threads,
    );
    let mut sorted: Vec<&StepDoc> = steps.iter().collect();
    sorted.sort_by(|x, y| x.figures.target_per_s.total_cmp(&y.figures.target_per_s));
    // Steps that measured strain's own limit say nothing about the service's curve.
    sorted.retain(|s| !s.verdict.ends_with("_limit"));
    let max_rate = doc.max_rate;
    let marks: Vec<f64> = max_rate.into_iter().collect();
    out.push_str("<div class=\"grid\">\n");
    out.push_str(&curve_chart("Latency by target rate", &curves(&sorted, &slo), &marks, doc.config.noun()));
    // Steps far past the answer stretch the latency axis until the part of the curve where the
    // SLO is decided lies flat at the bottom, and doubling squeezes it into the right edge: that
    // part again, from the knee (where latency turns up) to the first fail, on its own scale.
    if let Some(fail) = doc.answer.first_fail {
        let knee = doc.answer.knee.map(|k| k.rate).filter(|k| max_rate.is_some_and(|m| *k <= m));
        let from = knee.unwrap_or(0.0);
        let near: Vec<&StepDoc> =
            sorted.iter().copied().filter(|s| (from..=fail).contains(&s.figures.target_per_s)).collect();
        if near.len() >= 2 && near.len() < sorted.len() {
            out.push('\n');
            out.push_str(&curve_chart(
                "From the knee to the first fail",
                &curves(&near, &slo),
                &marks,
                doc.config.noun(),
            ));
        }
    }
    out.push_str("\n</div>\n<table><tr><th>step</th><th>target/s</th><th>achieved/s</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>errors</th><th>late</th><th style=\"text-align:left\">verdict</th></tr>\n");
    for (i, s) in steps.iter().enumerate() {
        let t = |us: u64| time_us(us as f64);
        let verdict = s.verdict.as_str();
        // Which terms failed, as the text report says it.
        let failed: Vec<&str> = s.slo.iter().filter(|o| !o.passed).map(|o| o.expr.as_str()).collect();
        let why =
            if verdict == "slo" && !failed.is_empty() { format!(": {}", failed.join(", ")) } else { String::new() };
        let f = &s.figures;
        let target = f.target_per_s;
        // The answer's own step stands out, so the table reads with the sentence above it.
        let row = if max_rate == Some(target) { " style=\"font-weight:bold\"" } else { "" };
        let _ = writeln!(
            out,
            "<tr{row}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\" style=\"text-align:left\">{}</td></tr>",
            i + 1,
            rate(target),
            rate(f.achieved_per_s),
            t(f.p50_us),
            t(f.p90_us),
            t(f.p99_us),
            t(f.max_us),
            f.errors,
            f.late,
            if verdict == "pass" { "pass" } else { "fail" },
            esc(&format!("{verdict}{why}")),
        );
    }
    out.push_str("</table>\n");
    tail(&mut out);
    out
}

/// A latency-by-rate chart in a panel; the dotted line is the max rate.
fn curve_chart(title: &str, lines: &[Line], marks: &[f64], noun: &str) -> String {
    let max_x = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).fold(0.0, f64::max);
    let min_x = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).fold(f64::MAX, f64::min);
    let max_y = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    let (unit, size) = latency_unit(max_y);
    let f = Frame {
        title,
        x: Axis::linear(
            if min_x < f64::MAX { min_x.min(0.0) } else { 0.0 },
            max_x,
            &format!("Target rate ({noun}/s)"),
            1.0,
        ),
        y: Axis::linear(0.0, max_y, &format!("Latency ({unit})"), size),
        marks: marks.to_vec(),
        x_tip: &|r| format!("{} {noun}/s", rate(r)),
        y_tip: &latency,
    };
    let caption = if marks.is_empty() { "" } else { "Dotted line: the max rate." };
    format!("<figure class=\"panel\">{}<figcaption>{caption}</figcaption></figure>\n", chart::lines(&f, lines))
}

/// p50, p90 and p99 (µs) over `steps` (sorted by rate), and each latency bound of the SLO as a
/// level line across them.
fn curves(steps: &[&StepDoc], slo: &[&str]) -> Vec<Line> {
    let curve = |field: fn(&StepFigures) -> u64| -> Vec<(f64, f64)> {
        steps.iter().map(|s| (s.figures.target_per_s, field(&s.figures) as f64)).collect()
    };
    type Pick = fn(&StepFigures) -> u64;
    let lines: [(&str, usize, Pick); 3] =
        [("p50", 0, |s| s.p50_us), ("p90", 1, |s| s.p90_us), ("p99", 2, |s| s.p99_us)];
    let mut series: Vec<Line> = lines.into_iter().map(|(k, c, f)| Line::new(k, colour(c), curve(f))).collect();
    let p99 = curve(|s| s.p99_us);
    let Some((x0, x1)) = p99.first().zip(p99.last()).map(|(a, b)| (a.0, b.0)) else {
        return series;
    };
    for term in slo {
        let bound = Threshold::parse(term).ok().filter(|t| t.metric.is_latency());
        if let Some(t) = bound {
            let points = vec![(x0, t.limit), (x1, t.limit)];
            series.push(Line::new(*term, colour(7), points).dashed("6 3"));
        }
    }
    series
}

/// A search's answer in sentences, as the text report words it; the max rate is marked for
/// tests. `verdicts` are the steps' (target, verdict).
fn search_answer(max_rate: Option<f64>, a: &Answer, verdicts: &[(f64, &str)], noun: &str) -> String {
    let limit = a.limit.as_ref().map(|l| l.kind.as_str());
    let mut out = match max_rate {
        None => "Max rate: <b data-metric=\"max_rate\">none</b>: no rate tried met the SLO".to_string(),
        Some(r) => {
            let (before, after) = match (a.end.as_str(), limit) {
                ("max_passed", _) => ("at least ", ": the SLO held at --max".to_string()),
                (_, Some(kind)) => ("at least ", format!(" (strain reached its own {} limit above it)", esc(kind))),
                _ => ("", " meets the SLO".to_string()),
            };
            format!("Max rate: {before}<b data-metric=\"max_rate\">{}</b> {noun}/s{after}", rate(r))
        }
    };
    if let Some(f) = a.first_fail {
        let terms = &a.failed_terms;
        // A step that fell behind failed with no term: say so rather than show empty brackets.
        let why = if terms.is_empty() {
            verdicts.iter().find(|(t, _)| *t == f).map_or("failed", |(_, v)| *v).to_string()
        } else {
            terms.join(", ")
        };
        let _ = write!(out, "<br>First fail: {} {noun}/s ({})", rate(f), esc(&why));
    }
    if let Some(k) = a.knee {
        let _ = write!(out, "<br>Knee: latency turns up at {} {noun}/s ({})", rate(k.rate), time_us(k.latency_us));
    }
    let _ = write!(out, "<br>The search ended: {}", esc(&a.end.replace('_', " ")));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_search_answer_reads_as_the_text_report_does() {
        use crate::result::find_max::{Answer, Knee, Limit};
        let answer = |end: &str, first_fail: Option<f64>, terms: &[&str]| Answer {
            end: end.into(),
            max_rate: None,
            first_fail,
            failed_terms: terms.iter().map(|t| t.to_string()).collect(),
            knee: None,
            limit: None,
        };
        let behind = [(2125.0, "behind")];
        let converged =
            Answer { knee: Some(Knee { rate: 2000.0, latency_us: 9815.0 }), ..answer("converged", Some(2125.0), &[]) };
        let limit = Limit { kind: "connections".into(), late_share: None, cpu_share: None, suggest_connections: None };
        let rows = [
            // Converged, the first fail fell behind (no SLO term to name).
            (
                Some(2062.5),
                converged,
                "Max rate: <b data-metric=\"max_rate\">2,062</b> requests/s meets the SLO<br>First fail: 2,125 requests/s (behind)\
                 <br>Knee: latency turns up at 2,000 requests/s (9.81ms)<br>The search ended: converged",
            ),
            // The SLO held at --max.
            (
                Some(4000.0),
                answer("max_passed", None, &[]),
                "Max rate: at least <b data-metric=\"max_rate\">4,000</b> requests/s: the SLO held at --max<br>The search ended: max passed",
            ),
            // strain's own limit came first; the fail names its terms.
            (
                Some(900.0),
                Answer { limit: Some(limit), ..answer("limit", Some(1000.0), &["p99<1ms", "errors<1"]) },
                "Max rate: at least <b data-metric=\"max_rate\">900</b> requests/s (strain reached its own connections limit above it)\
                 <br>First fail: 1,000 requests/s (p99&lt;1ms, errors&lt;1)<br>The search ended: limit",
            ),
            // Nothing passed.
            (
                None,
                answer("nothing_passed", Some(1.0), &["p99<1us"]),
                "Max rate: <b data-metric=\"max_rate\">none</b>: no rate tried met the SLO<br>First fail: 1 requests/s (p99&lt;1us)\
                 <br>The search ended: nothing passed",
            ),
        ];
        for (max_rate, a, want) in rows {
            assert_eq!(super::search_answer(max_rate, &a, &behind, "requests"), want);
        }
    }
}
