//! The find-max page (`find-max --html`, `strain report SEARCH.json`): a capacity search's answer
//! in sentences, its latency-vs-rate curve (and, when the search overshot far past the answer,
//! the same curve from the knee to the first fail, where the SLO is decided), and its steps in
//! the order they ran. It draws with the run page's `chart`, so both pages look alike.

use std::fmt::Write;

use serde_json::Value;

use super::{chart, esc, head, Series, COLOURS};
use crate::report::search::rate;
use crate::report::units::time_us;
use crate::verdict::Threshold;

/// A capacity search (`find-max --json`) as one page: the answer, the latency-vs-rate curves
/// with the highest passing rate marked, and the steps.
pub fn render_search(doc: &Value) -> String {
    let mut out = head("strain find-max");
    let slo = strings(&doc["config"]["slo"]);
    let steps = doc["steps"].as_array().map_or(&[][..], Vec::as_slice);
    let _ = writeln!(
        out,
        "<p><code>{}</code><br>SLO: <b>{}</b>; {} connections, {} thread(s)</p>\n<p>{}</p>",
        esc(doc["config"]["url"].as_str().unwrap_or("")),
        esc(&slo.join(", ")),
        doc["config"]["connections"].as_u64().unwrap_or(0),
        doc["config"]["threads"].as_u64().unwrap_or(0),
        search_answer(doc, steps),
    );
    let mut sorted: Vec<&Value> = steps.iter().collect();
    sorted.sort_by(|x, y| {
        x["target_per_s"].as_f64().unwrap_or(0.0).total_cmp(&y["target_per_s"].as_f64().unwrap_or(0.0))
    });
    // Steps that measured strain's own limit say nothing about the service's curve.
    sorted.retain(|s| !s["verdict"].as_str().is_some_and(|v| v.ends_with("_limit")));
    let max_rate = doc["max_rate"].as_f64();
    let marks: Vec<f64> = max_rate.into_iter().collect();
    out.push_str("<div class=\"charts\">\n");
    out.push_str(&chart(
        "Latency by target rate, requests/s (dotted line: max rate)",
        &curves(&sorted, &slo),
        &marks,
        &rate,
        &tick_ms,
        None,
    ));
    // Steps far past the answer stretch the latency axis until the part of the curve where the
    // SLO is decided lies flat at the bottom, and doubling squeezes it into the right edge: that
    // part again, from the knee (where latency turns up) to the first fail, on its own scale.
    if let Some(fail) = doc["answer"]["first_fail"].as_f64() {
        let knee = doc["answer"]["knee"]["rate"].as_f64().filter(|k| max_rate.is_some_and(|m| *k <= m));
        let from = knee.unwrap_or(0.0);
        let near: Vec<&Value> = sorted
            .iter()
            .copied()
            .filter(|s| s["target_per_s"].as_f64().is_some_and(|t| (from..=fail).contains(&t)))
            .collect();
        if near.len() >= 2 && near.len() < sorted.len() {
            out.push('\n');
            out.push_str(&chart(
                "From the knee to the first fail: latency by target rate, requests/s",
                &curves(&near, &slo),
                &marks,
                &rate,
                &tick_ms,
                None,
            ));
        }
    }
    out.push_str("\n</div>\n<table><tr><th>step</th><th>target/s</th><th>achieved/s</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>errors</th><th>late</th><th style=\"text-align:left\">verdict</th></tr>\n");
    for (i, s) in steps.iter().enumerate() {
        let t = |k: &str| s[k].as_f64().map_or_else(|| "-".into(), time_us);
        let verdict = s["verdict"].as_str().unwrap_or("?");
        // Which terms failed, as the text report says it.
        let failed: Vec<&str> = s["slo"].as_array().map_or_else(Vec::new, |o| {
            o.iter().filter(|o| o["passed"] == false).filter_map(|o| o["expr"].as_str()).collect()
        });
        let why =
            if verdict == "slo" && !failed.is_empty() { format!(": {}", failed.join(", ")) } else { String::new() };
        let target = s["target_per_s"].as_f64().unwrap_or(0.0);
        // The answer's own step stands out, so the table reads with the sentence above it.
        let row = if max_rate == Some(target) { " style=\"font-weight:bold\"" } else { "" };
        let _ = writeln!(
            out,
            "<tr{row}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\" style=\"text-align:left\">{}</td></tr>",
            i + 1,
            rate(target),
            rate(s["achieved_per_s"].as_f64().unwrap_or(0.0)),
            t("p50_us"),
            t("p90_us"),
            t("p99_us"),
            t("max_us"),
            s["errors"].as_u64().unwrap_or(0),
            s["late"].as_u64().unwrap_or(0),
            if verdict == "pass" { "pass" } else { "fail" },
            esc(&format!("{verdict}{why}")),
        );
    }
    out.push_str("</table></body></html>\n");
    out
}

/// p50, p90 and p99 (ms) over `steps` (sorted by rate), and each latency bound of the SLO as a
/// level line across them.
fn curves(steps: &[&Value], slo: &[&str]) -> Vec<Series> {
    let curve = |field: &str| -> Vec<(f64, f64)> {
        steps.iter().filter_map(|s| Some((s["target_per_s"].as_f64()?, s[field].as_f64()? / 1000.0))).collect()
    };
    let mut series: Vec<Series> = [("p50", COLOURS[2], "4 2"), ("p90", COLOURS[0], "2 2"), ("p99", COLOURS[1], "")]
        .into_iter()
        .map(|(k, c, d)| Series { name: k.into(), colour: c, dash: d, width: 2.0, points: curve(&format!("{k}_us")) })
        .collect();
    let Some((x0, x1)) = curve("p99_us").first().zip(curve("p99_us").last()).map(|(a, b)| (a.0, b.0)) else {
        return series;
    };
    for term in slo {
        let bound = Threshold::parse(term).ok().filter(|t| t.metric.is_latency());
        if let Some(t) = bound {
            let y = t.limit / 1000.0;
            let points = vec![(x0, y), (x1, y)];
            series.push(Series { name: term.to_string(), colour: "#999999", dash: "6 3", width: 1.0, points });
        }
    }
    series
}

/// A search's answer in sentences, as the text report words it; the max rate is marked for tests.
fn search_answer(doc: &Value, steps: &[Value]) -> String {
    let a = &doc["answer"];
    let limit = a["limit"]["kind"].as_str();
    let mut out = match doc["max_rate"].as_f64() {
        None => "Max rate: <b data-metric=\"max_rate\">none</b>: no rate tried met the SLO".to_string(),
        Some(r) => {
            let (before, after) = match (a["end"].as_str(), limit) {
                (Some("max_passed"), _) => ("at least ", ": the SLO held at --max".to_string()),
                (_, Some(kind)) => ("at least ", format!(" (strain reached its own {} limit above it)", esc(kind))),
                _ => ("", " meets the SLO".to_string()),
            };
            format!("Max rate: {before}<b data-metric=\"max_rate\">{}</b> requests/s{after}", rate(r))
        }
    };
    if let Some(f) = a["first_fail"].as_f64() {
        let terms = strings(&a["failed_terms"]);
        // A step that fell behind failed with no term: say so rather than show empty brackets.
        let why = if terms.is_empty() {
            steps
                .iter()
                .find(|s| s["target_per_s"].as_f64() == Some(f))
                .and_then(|s| s["verdict"].as_str())
                .unwrap_or("failed")
                .to_string()
        } else {
            terms.join(", ")
        };
        let _ = write!(out, "<br>First fail: {} requests/s ({})", rate(f), esc(&why));
    }
    if let (Some(r), Some(us)) = (a["knee"]["rate"].as_f64(), a["knee"]["latency_us"].as_f64()) {
        let _ = write!(out, "<br>Knee: latency turns up at {} requests/s ({})", rate(r), time_us(us));
    }
    let _ = write!(out, "<br>The search ended: {}", esc(&a["end"].as_str().unwrap_or("?").replace('_', " ")));
    out
}

/// The strings of a JSON array (none when it is not one).
fn strings(v: &Value) -> Vec<&str> {
    v.as_array().map_or_else(Vec::new, |t| t.iter().filter_map(Value::as_str).collect())
}

/// A latency axis tick in milliseconds, to three digits: ticks are a quarter of the top, not
/// measurements, so `834.42ms` would claim a precision that is not there.
fn tick_ms(v: f64) -> String {
    match v {
        v if v <= 0.0 => "0".into(),
        v if v >= 1_000.0 => format!("{:.2}s", v / 1_000.0),
        v if v >= 100.0 => format!("{v:.0}ms"),
        v if v >= 10.0 => format!("{v:.1}ms"),
        v if v >= 1.0 => format!("{v:.2}ms"),
        v => format!("{:.0}us", v * 1_000.0),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_search_answer_reads_as_the_text_report_does() {
        let behind = [json!({"target_per_s": 2125.0, "verdict": "behind"})];
        let rows = [
            // Converged, the first fail fell behind (no SLO term to name).
            (
                json!({"max_rate": 2062.5, "answer": {"end": "converged", "first_fail": 2125.0, "failed_terms": [],
                    "knee": {"rate": 2000.0, "latency_us": 9815.0}}}),
                "Max rate: <b data-metric=\"max_rate\">2,062</b> requests/s meets the SLO<br>First fail: 2,125 requests/s (behind)\
                 <br>Knee: latency turns up at 2,000 requests/s (9.81ms)<br>The search ended: converged",
            ),
            // The SLO held at --max.
            (
                json!({"max_rate": 4000.0, "answer": {"end": "max_passed"}}),
                "Max rate: at least <b data-metric=\"max_rate\">4,000</b> requests/s: the SLO held at --max<br>The search ended: max passed",
            ),
            // strain's own limit came first; the fail names its terms.
            (
                json!({"max_rate": 900.0, "answer": {"end": "limit", "first_fail": 1000.0, "failed_terms": ["p99<1ms", "errors<1"],
                    "limit": {"kind": "connections"}}}),
                "Max rate: at least <b data-metric=\"max_rate\">900</b> requests/s (strain reached its own connections limit above it)\
                 <br>First fail: 1,000 requests/s (p99&lt;1ms, errors&lt;1)<br>The search ended: limit",
            ),
            // Nothing passed.
            (
                json!({"max_rate": null, "answer": {"end": "nothing_passed", "first_fail": 1.0, "failed_terms": ["p99<1us"]}}),
                "Max rate: <b data-metric=\"max_rate\">none</b>: no rate tried met the SLO<br>First fail: 1 requests/s (p99&lt;1us)\
                 <br>The search ended: nothing passed",
            ),
        ];
        for (doc, want) in rows {
            assert_eq!(super::search_answer(&doc, &behind), want);
        }
    }

    #[test]
    fn latency_ticks_have_three_digits_at_most() {
        let rows =
            [(0.0, "0"), (0.25, "250us"), (2.5, "2.50ms"), (20.86, "20.9ms"), (834.42, "834ms"), (1_250.0, "1.25s")];
        for (v, s) in rows {
            assert_eq!(super::tick_ms(v), s);
        }
    }
}
