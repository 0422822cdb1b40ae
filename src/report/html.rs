//! The HTML report: one self-contained page (no script, no request to any host: a
//! Content-Security-Policy forbids them) with SVG charts drawn here, from result JSON documents,
//! so `--html` on a run and `strain report` on saved results draw the same page, several results
//! overlaid. Why SVG from Rust rather than an embedded chart library: a few kilobytes instead of
//! hundreds, nothing to license or update, and the page renders the same offline or mailed.

use std::fmt::Write;

use crate::result::{IntervalRow, RunDoc};

use super::json::decode_histogram;
use super::units::time_us;

mod search;
pub use search::render_search;

/// Colours of the results, in order (a result keeps its colour in every chart).
const COLOURS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];
/// Chart size in SVG units.
const W: f64 = 720.0;
const H: f64 = 260.0;
/// Plot margins: left, right, top (above the legend rows), bottom.
const ML: f64 = 64.0;
const MR: f64 = 30.0;
const MT: f64 = 30.0;
const MB: f64 = 30.0;
/// Height of one legend row.
const ROW: f64 = 14.0;
/// The spectrum's last percentile (99.999%) as 1/(1-p) on a log axis.
const SPECTRUM_MAX_X: f64 = 5.0;

/// One line of a chart.
struct Series {
    name: String,
    colour: &'static str,
    dash: &'static str,
    width: f64,
    points: Vec<(f64, f64)>,
}

/// Escapes text for HTML and SVG.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A line chart; `x_label` formats an x tick, `y_label` a y tick; `marks` are vertical lines.
fn chart(
    title: &str,
    series: &[Series],
    marks: &[f64],
    x_label: &dyn Fn(f64) -> String,
    y_label: &dyn Fn(f64) -> String,
    x_range: Option<(f64, f64)>,
) -> String {
    let (x0, x1, y1, any) = bounds(series, x_range);
    let shown: Vec<&Series> = series.iter().filter(|s| !s.points.is_empty()).collect();
    let (places, rows) = legend(&shown);
    let top = MT + ROW * rows;
    let px = |x: f64| ML + (x - x0) / (x1 - x0) * (W - ML - MR);
    let py = |y: f64| H - MB - y / y1 * (H - top - MB);
    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{t}\"><text x=\"{ML}\" y=\"18\" class=\"title\">{t}</text>",
        t = esc(title)
    );
    if !any {
        let _ = write!(out, "<text x=\"{:.1}\" y=\"{:.1}\" class=\"legend\">none</text>", W / 2.0, H / 2.0);
    }
    // A fixed x range is the spectrum's: one tick per decade of 1/(1-p) (0%, 90%, 99%, ...).
    let x_steps = if x_range.is_some() { (x1 - x0).round().max(1.0) } else { 4.0 };
    for i in 0..=(x_steps as u32) {
        let fx = x0 + (x1 - x0) * f64::from(i) / x_steps;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" class=\"xtick\">{}</text>",
            px(fx),
            H - MB + 16.0,
            esc(&x_label(fx))
        );
    }
    for i in 0..=4 {
        let fy = y1 * f64::from(i) / 4.0;
        let _ = write!(
            out,
            "<line x1=\"{ML}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{}\" y=\"{:.1}\" class=\"ytick\">{}</text>",
            W - MR,
            ML - 6.0,
            py(fy) + 4.0,
            esc(&y_label(fy)),
            y = py(fy),
        );
    }
    for &m in marks.iter().filter(|m| **m > x0 && **m < x1) {
        let _ =
            write!(out, "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{}\" class=\"mark\"/>", H - MB, x = px(m));
    }
    for (s, &(lx, ly)) in shown.iter().zip(&places) {
        let path: String = s
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(
            out,
            "<polyline points=\"{path}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"{w}\" stroke-dasharray=\"{d}\"/>\
             <line x1=\"{lx:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{c}\" stroke-width=\"{w}\" stroke-dasharray=\"{d}\"/>\
             <text x=\"{:.1}\" y=\"{ly:.1}\" class=\"legend\">{}</text>",
            lx + 18.0,
            ly - 4.0,
            ly - 4.0,
            lx + 22.0,
            esc(&s.name),
            c = s.colour,
            w = s.width,
            d = s.dash,
        );
    }
    out.push_str("</svg>");
    out
}

/// The axes' ranges (x0, x1, y1) and whether there is any point to draw.
fn bounds(series: &[Series], x_range: Option<(f64, f64)>) -> (f64, f64, f64, bool) {
    let all = series.iter().flat_map(|s| s.points.iter()).filter(|(x, y)| x.is_finite() && y.is_finite());
    let (mut x0, mut x1, mut y1, mut any) = (f64::MAX, f64::MIN, 0.0f64, false);
    for &(x, y) in all {
        (x0, x1, y1, any) = (x0.min(x), x1.max(x), y1.max(y), true);
    }
    if let Some((a, b)) = x_range {
        (x0, x1) = (a, b);
    } else if !any {
        (x0, x1) = (0.0, 1.0);
    } else if x0 >= x1 {
        x1 = x0 + 1.0;
    }
    (x0, x1, if y1 > 0.0 { y1 * 1.08 } else { 1.0 }, any)
}

/// Where each legend entry goes: entries flow in rows under the title, and the plot starts
/// below them; returns the places and the number of rows.
fn legend(shown: &[&Series]) -> (Vec<(f64, f64)>, f64) {
    let mut places = Vec::with_capacity(shown.len());
    let (mut lx, mut row) = (ML, 0.0);
    for s in shown {
        let width = 30.0 + 6.2 * s.name.chars().count() as f64;
        if lx + width > W - MR && lx > ML {
            (lx, row) = (ML, row + 1.0);
        }
        places.push((lx, 32.0 + row * ROW));
        lx += width;
    }
    (places, row + 1.0)
}

/// The middle of each interval, with a value from its row (rows without one are left out).
fn over_time(rows: &[IntervalRow], value: impl Fn(&IntervalRow) -> Option<f64>, scale: f64) -> Vec<(f64, f64)> {
    rows.iter().filter_map(|r| Some((r.start_s + r.length_s / 2.0, value(r)? * scale))).collect()
}

/// A proxy test's rows over time, each at its interval's start (its rows carry no length).
fn proxy_over_time(d: &RunDoc, value: impl Fn(&crate::result::ProxyRow) -> Option<f64>, scale: f64) -> Vec<(f64, f64)> {
    let rows = d.proxy.as_ref().map_or(&[][..], |p| p.intervals.as_slice());
    rows.iter().filter_map(|r| Some((r.start_s, value(r)? * scale))).collect()
}

/// The percentile spectrum of an encoded histogram: x = log10(1 / (1 - p)), y = milliseconds.
fn spectrum(encoded: Option<&str>) -> Vec<(f64, f64)> {
    let Some(h) = encoded.and_then(decode_histogram) else { return Vec::new() };
    if h.is_empty() {
        return Vec::new();
    }
    h.iter_quantiles(4)
        .map(|v| (v.quantile_iterated_to(), v.value_iterated_to() as f64 / 1000.0))
        .filter(|(q, _)| *q < 0.999_999)
        .map(|(q, ms)| ((1.0 / (1.0 - q)).log10().min(SPECTRUM_MAX_X), ms))
        .collect()
}

/// Milliseconds as a tick label.
fn ms(v: f64) -> String {
    time_us(v * 1000.0)
}

/// A row's value to draw.
type Field<T> = fn(&T) -> u64;

/// A series maker: result index, label, document.
type Make<'a> = &'a dyn Fn(usize, &String, &RunDoc) -> Vec<Series>;

/// Renders results (label, result) as one page.
pub fn render(results: &[(String, RunDoc)]) -> String {
    render_with_header(results, "")
}

/// Renders results as one page that opens with `header` (HTML, e.g. a comparison's verdict).
pub fn render_with_header(results: &[(String, RunDoc)], header: &str) -> String {
    let secs = |v: f64| format!("{v:.1}s");
    let count = |v: f64| if v < 10.0 { format!("{v:.1}") } else { format!("{v:.0}") };
    let series =
        |make: Make| -> Vec<Series> { results.iter().enumerate().flat_map(|(i, (l, d))| make(i, l, d)).collect() };
    let marks: Vec<f64> = results.iter().flat_map(|(_, d)| d.stage_ends_s.clone().unwrap_or_default()).collect();
    let named = |l: &String, what: &str| if results.len() > 1 { format!("{l} {what}") } else { what.to_string() };
    let mut charts = Vec::new();
    let rate = series(&|i, l, d| rate_series(i, l, d, &named));
    charts.push(chart("Requests per second", &rate, &marks, &secs, &count, None));
    let latency = series(&|i, l, d| {
        let lines: [(Field<IntervalRow>, &str, &'static str, f64); 4] = [
            (|r| r.p50_us, "p50", "2 3", 1.0),
            (|r| r.p90_us, "p90", "6 3", 1.2),
            (|r| r.p99_us, "p99", "", 2.0),
            (|r| r.max_us, "max", "1 4", 1.0),
        ];
        lines
            .iter()
            .map(|&(f, n, dash, width)| Series {
                name: named(l, n),
                colour: colour(i),
                dash,
                width,
                points: over_time(&d.intervals, |r| Some(f(r) as f64), 0.001),
            })
            .collect()
    });
    charts.push(chart("Latency over time (ms; stage boundaries marked)", &latency, &marks, &secs, &ms, None));
    let errors = series(&|i, l, d| error_series(i, l, d, &named));
    charts.push(chart("Errors per interval, by kind", &errors, &marks, &secs, &count, None));
    let spectra = series(&|i, l, d| spectrum_series(i, l, d, &named));
    charts.push(chart(
        "Latency by percentile (ms; x is 1/(1-p))",
        &spectra,
        &[],
        &pct,
        &ms,
        Some((0.0, SPECTRUM_MAX_X)),
    ));
    if results.iter().any(|(_, d)| d.proxy.is_some()) {
        let hit = series(&|i, l, d| {
            let points = proxy_over_time(d, |r| r.hit_ratio, 1.0);
            vec![Series { name: named(l, "hit ratio"), colour: colour(i), dash: "", width: 2.0, points }]
        });
        charts.push(chart("Hit ratio per interval", &hit, &marks, &secs, &|v| format!("{v:.2}"), None));
        let fb = series(&|i, l, d| {
            vec![
                Series {
                    name: named(l, "first byte p99"),
                    colour: colour(i),
                    dash: "4 2",
                    width: 1.5,
                    points: proxy_over_time(d, |r| Some(r.first_byte_p99_us as f64), 0.001),
                },
                Series {
                    name: named(l, "full response p99"),
                    colour: colour(i),
                    dash: "",
                    width: 2.0,
                    points: over_time(&d.intervals, |r| Some(r.p99_us as f64), 0.001),
                },
            ]
        });
        charts.push(chart("First byte and full response, p99 (ms)", &fb, &marks, &secs, &ms, None));
    }
    page(results, &charts, header)
}

/// Result `i`'s colour.
fn colour(i: usize) -> &'static str {
    COLOURS[i % COLOURS.len()]
}

/// A percentile's tick label from x = log10(1 / (1 - p)).
fn pct(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    if x < 0.5 {
        "0%".to_string()
    } else {
        format!("{}%", (p * 1000.0).round() / 1000.0)
    }
}

/// Achieved requests per second, and the target in rate mode.
fn rate_series(i: usize, l: &String, d: &RunDoc, named: &dyn Fn(&String, &str) -> String) -> Vec<Series> {
    let mut s = vec![Series {
        name: named(l, "achieved"),
        colour: colour(i),
        dash: "",
        width: 2.0,
        points: over_time(&d.intervals, |r| Some(r.achieved_per_s), 1.0),
    }];
    let target = over_time(&d.intervals, |r| r.target_per_s, 1.0);
    if !target.is_empty() {
        s.push(Series { name: named(l, "target"), colour: colour(i), dash: "6 4", width: 1.0, points: target });
    }
    s
}

/// One line per error kind seen in any interval.
fn error_series(i: usize, l: &String, d: &RunDoc, named: &dyn Fn(&String, &str) -> String) -> Vec<Series> {
    let rows = &d.intervals;
    let mut kinds: Vec<&String> = rows.iter().flat_map(|r| r.errors_by_kind.keys()).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .iter()
        .enumerate()
        .map(|(k, kind)| Series {
            name: named(l, kind),
            colour: COLOURS[(i + k + 1) % COLOURS.len()],
            dash: if k % 2 == 0 { "" } else { "4 2" },
            width: 1.5,
            points: over_time(rows, |r| Some(r.errors_by_kind.get(*kind).copied().unwrap_or(0) as f64), 1.0),
        })
        .collect()
}

/// The latency spectrum, and the uncorrected one in rate mode.
fn spectrum_series(i: usize, l: &String, d: &RunDoc, named: &dyn Fn(&String, &str) -> String) -> Vec<Series> {
    let corrected = d.uncorrected_latency_histogram.is_some();
    let mut s = vec![Series {
        name: named(l, if corrected { "corrected" } else { "latency" }),
        colour: colour(i),
        dash: "",
        width: 2.0,
        points: spectrum(Some(&d.latency_histogram)),
    }];
    if let Some(u) = &d.uncorrected_latency_histogram {
        s.push(Series {
            name: named(l, "uncorrected"),
            colour: colour(i),
            dash: "5 3",
            width: 1.2,
            points: spectrum(Some(u)),
        });
    }
    s
}

/// The page's head and style, and its heading.
fn head(title: &str) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
    );
    let _ = writeln!(
        out,
        "<title>{t}</title><style>\
         body{{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1500px}}\
         table{{border-collapse:collapse;margin:8px 0 16px}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}\
         th:first-child,td:first-child{{text-align:left}}code{{font-size:12px}}\
         .charts{{display:flex;flex-wrap:wrap;gap:12px}}.chart{{width:700px;border:1px solid #ddd;background:#fff}}\
         .title{{font-weight:bold;font-size:13px}}.legend,.xtick,.ytick{{font-size:11px;fill:#444}}.ytick{{text-anchor:end}}\
         .xtick{{text-anchor:middle}}.grid{{stroke:#eee}}.mark{{stroke:#999;stroke-dasharray:2 3}}\
         .fail{{color:#b00}}.pass{{color:#070}}\
         </style></head><body><h1>{t}</h1>",
        t = esc(title)
    );
    out
}

/// `--targets` runs: each target's responses and latency.
fn targets_table(out: &mut String, results: &[(String, RunDoc)]) {
    if results.iter().all(|(_, d)| d.targets.is_empty()) {
        return;
    }
    out.push_str(
        "<table><tr><th>result</th><th>target</th><th>requests</th><th>errors</th><th>mean</th><th>max</th></tr>\n",
    );
    for (label, d) in results {
        for t in &d.targets {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{} {}</td><td data-metric=\"target_requests\">{}</td><td data-metric=\"target_errors\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(label),
                esc(&t.method),
                esc(&t.url),
                t.requests,
                t.errors,
                time_us(t.latency_mean_us),
                time_us(t.latency_max_us as f64),
            );
        }
    }
    out.push_str("</table>\n");
}

/// The page around the charts: what ran, the summary table, status codes.
fn page(results: &[(String, RunDoc)], charts: &[String], header: &str) -> String {
    let mut out = head("strain report");
    out.push_str(header);
    for (i, (label, d)) in results.iter().enumerate() {
        let command = d.command.join(" ");
        let _ = writeln!(
            out,
            "<p><b style=\"color:{}\">{}</b>: <code>{}</code><br>strain {}, {} cores, started {}, {} connections, {} threads</p>",
            colour(i),
            esc(label),
            esc(if command.is_empty() { &d.config.url } else { &command }),
            esc(&d.strain_version),
            d.host_cores,
            esc(&d.started),
            d.config.connections,
            d.config.threads,
        );
    }
    out.push_str(
        "<table><tr><th>result</th><th>requests</th><th>requests/s</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th>\
         <th>max</th><th>errors</th><th>hit ratio</th><th>status codes</th></tr>\n",
    );
    for (label, d) in results {
        let p = |k: &str| d.latency_us.at(k).map_or_else(|| "-".into(), |v| time_us(v as f64));
        let errors = d.error_total();
        let status = d.status.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ");
        let hit = d.proxy.as_ref().and_then(|p| p.hit_ratio).map_or_else(|| "-".into(), |h| format!("{h:.3}"));
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td data-metric=\"requests\">{}</td><td data-metric=\"requests_per_s\">{:.2}</td>\
             <td>{}</td><td>{}</td><td data-metric=\"p99\">{}</td><td>{}</td><td>{}</td><td data-metric=\"errors\">{errors}</td>\
             <td>{hit}</td><td>{}</td></tr>",
            esc(label),
            d.requests,
            d.requests_per_s,
            p("50"),
            p("90"),
            p("99"),
            p("99.9"),
            p("100"),
            esc(&status),
        );
    }
    out.push_str("</table>\n");
    targets_table(&mut out, results);
    out.push_str("<div class=\"charts\">\n");
    for c in charts {
        out.push_str(c);
        out.push('\n');
    }
    out.push_str("</div></body></html>\n");
    out
}
