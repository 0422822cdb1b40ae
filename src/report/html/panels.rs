//! The run page's panels: throughput against the target, latency percentiles (linear or log),
//! the latency heatmap, the distribution and the percentile spectrum, status codes, errors (only
//! when there are some), connections, and the panels of rate mode, proxy tests and HTTP/2 when
//! the result has them. Several results overlay, one colour each.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::axis::{latency, latency_unit, per_second, time_unit, Axis};
use super::chart::{self, colour, Column, Frame, Layer, Line};
use super::series::{buckets, edge, PageRows};
use super::{esc, Overlay};
use crate::report::units::grouped;
use crate::stats::codec::decode_histogram;
use crate::stats::interval::IntervalRow;
use crate::stats::section::Answers;

/// What every over-time panel shares: the rows, the time axis and the stage marks.
struct Timeline {
    rows: Vec<PageRows>,
    span: (f64, f64),
    unit: (&'static str, f64),
    marks: Vec<f64>,
}

impl Timeline {
    fn of(o: &Overlay) -> Timeline {
        let rows: Vec<PageRows> = o.results.iter().map(|(_, d)| PageRows::of(d)).collect();
        let end = rows.iter().flat_map(|r| r.rows.last()).map(|r| r.start_s + r.length_s).fold(0.0, f64::max);
        // The last stage's end is the schedule's end, no boundary (a constant rate is one stage;
        // the drain after it may run past it).
        let ends = o.results.iter().flat_map(|(_, d)| match d.stage_ends_s.as_deref() {
            Some([inner @ .., _last]) => inner.to_vec(),
            _ => Vec::new(),
        });
        let marks = ends.filter(|m| *m > 0.0 && *m < end).collect();
        Timeline { rows, span: (0.0, end.max(0.001)), unit: time_unit(end), marks }
    }

    fn axis(&self) -> Axis {
        Axis::span(self.span.0, self.span.1, &format!("Time ({})", self.unit.0), self.unit.1)
    }

    /// The middle of each of result `i`'s rows.
    fn middles(&self, i: usize) -> Vec<f64> {
        self.rows[i].rows.iter().map(|r| r.start_s + r.length_s / 2.0).collect()
    }

    /// Each result's (middle of row, value) pairs.
    fn points(&self, i: usize, value: impl Fn(&IntervalRow) -> Option<f64>) -> Vec<(f64, f64)> {
        self.rows[i].rows.iter().filter_map(|r| Some((r.start_s + r.length_s / 2.0, value(r)?))).collect()
    }
}

/// A log latency axis's unit: the one of its geometric middle, so neither end needs many
/// zeros (10 µs to 10 s reads 0.01 to 10,000 ms).
fn log_unit(lo_us: f64, hi_us: f64) -> (&'static str, f64) {
    latency_unit((lo_us.max(1.0) * hi_us.max(1.0)).sqrt())
}

/// The keys of a per-row map (status codes, error kinds) seen in any row, sorted.
fn keys(rows: &[IntervalRow], map: fn(&IntervalRow) -> &BTreeMap<String, u64>) -> Vec<&String> {
    let mut keys: Vec<&String> = rows.iter().flat_map(|r| map(r).keys()).collect();
    keys.sort();
    keys.dedup();
    keys
}

/// A time tooltip header.
fn at_time(t: f64) -> String {
    format!("at {} s", grouped(t, if t < 10.0 { 2 } else { 1 }))
}

/// A count in a tooltip.
fn count(v: f64) -> String {
    grouped(v, 0)
}

/// A panel around a chart, with a caption when there is something to say.
fn panel(chart: &str, caption: &str) -> String {
    if caption.is_empty() {
        format!("<figure class=\"panel\">{chart}</figure>\n")
    } else {
        format!("<figure class=\"panel\">{chart}<figcaption>{}</figcaption></figure>\n", esc(caption))
    }
}

/// The largest y of `lines` (gaps left out).
fn top(lines: &[Line]) -> f64 {
    lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).filter(|v| v.is_finite()).fold(0.0, f64::max)
}

/// Every panel of the run page, in reading order.
pub fn panels(o: &Overlay) -> String {
    let tl = Timeline::of(o);
    let stages = !tl.marks.is_empty();
    let stage_note = if stages { "Dotted lines: stage boundaries." } else { "" };
    let mut out = String::from("<div class=\"grid\">\n");
    out.push_str(&throughput(o, &tl, stage_note));
    out.push_str(&percentiles(o, &tl, stage_note));
    for (i, (label, _)) in o.results.iter().enumerate() {
        out.push_str(&heatmap(o, &tl, i, label));
    }
    let whole = histograms(o);
    out.push_str(&distribution(o, &whole));
    out.push_str(&spectrum(o, &whole));
    for (i, (label, _)) in o.results.iter().enumerate() {
        out.push_str(&status(o, &tl, i, label));
    }
    out.push_str(&errors(o, &tl));
    out.push_str(&connections(o, &tl));
    if o.results.iter().any(|(_, d)| d.rate.is_some()) {
        out.push_str(&late(o, &tl));
    }
    if o.results.iter().any(|(_, d)| d.proxy.is_some()) {
        out.push_str(&proxy(o, &tl));
    }
    out.push_str(&super::protocol::units(o));
    out.push_str(&super::replay::replay(o));
    out.push_str("</div>\n");
    out
}

/// A series' name: the role alone for one result, else the label too.
fn named(o: &Overlay, i: usize, role: &str) -> String {
    if o.single() {
        role.to_string()
    } else {
        format!("{} {role}", o.results[i].0)
    }
}

/// A line's colour: by role for one result (`role` indexes the palette), by result otherwise.
fn tint(o: &Overlay, i: usize, role: usize) -> &'static str {
    if o.single() {
        colour(role)
    } else {
        o.colour(i)
    }
}

/// A line's dashes: solid for one result; by role otherwise.
fn dash(o: &Overlay, role: usize) -> &'static str {
    const DASHES: [&str; 4] = ["", "6 3", "2 3", "8 3 2 3"];
    if o.single() {
        ""
    } else {
        DASHES[role % DASHES.len()]
    }
}

fn throughput(o: &Overlay, tl: &Timeline, note: &str) -> String {
    let mut lines = Vec::new();
    for i in 0..o.results.len() {
        // A replay's target is the recording's rate (at the replay's speed), row by row.
        let (achieved, target_name) = match o.results[i].1.replay {
            Some(_) => ("replayed", "recorded"),
            None => ("achieved", "target"),
        };
        lines.push(
            Line::new(named(o, i, achieved), tint(o, i, 0), tl.points(i, |r| Some(r.achieved_per_s)))
                .dashed(dash(o, 0)),
        );
        let target = tl.points(i, |r| r.target_per_s);
        if !target.is_empty() {
            let mut l = Line::new(named(o, i, target_name), tint(o, i, 1), target).dashed(if o.single() {
                "6 3"
            } else {
                dash(o, 1)
            });
            l.width = 1.4;
            lines.push(l);
        }
    }
    let f = Frame {
        title: "Throughput",
        x: tl.axis(),
        y: Axis::linear(0.0, top(&lines), &format!("{} per second", o.counted().title), 1.0),
        marks: tl.marks.clone(),
        x_tip: &at_time,
        y_tip: &per_second,
    };
    panel(&chart::lines(&f, &lines), note)
}

fn percentiles(o: &Overlay, tl: &Timeline, note: &str) -> String {
    type Pick = fn(&IntervalRow) -> u64;
    let roles: [(&str, Pick); 4] =
        [("p50", |r| r.p50_us), ("p90", |r| r.p90_us), ("p99", |r| r.p99_us), ("max", |r| r.max_us)];
    let mut lines = Vec::new();
    for i in 0..o.results.len() {
        for (k, (role, pick)) in roles.iter().enumerate() {
            // No response in an interval (a stall) leaves a gap rather than a line across it.
            let pts = tl.points(i, |r| Some(if r.requests > 0 { pick(r) as f64 } else { f64::NAN }));
            lines.push(Line::new(named(o, i, role), tint(o, i, k), pts).dashed(dash(o, k)));
        }
    }
    let max = top(&lines);
    let low = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold(f64::MAX, f64::min);
    let (unit, size) = latency_unit(max);
    let title = format!("Latency ({unit})");
    let log_low = if low < f64::MAX { low } else { 1.0 };
    let (log_unit_name, log_size) = log_unit(log_low, max.max(1.0));
    let log_title = format!("Latency ({log_unit_name})");
    let lin = Frame {
        title: "Latency percentiles over time",
        x: tl.axis(),
        y: Axis::linear(0.0, max, &title, size),
        marks: tl.marks.clone(),
        x_tip: &at_time,
        y_tip: &latency,
    };
    let log = Frame { y: Axis::log(log_low, max.max(1.0), &log_title, log_size), ..lin.clone() };
    let id = "pct";
    let body = format!(
        "<div class=\"switch\"><input type=\"radio\" name=\"{id}\" id=\"{id}-lin\" class=\"l\" checked><label for=\"{id}-lin\">linear</label>\
         <input type=\"radio\" name=\"{id}\" id=\"{id}-log\" class=\"g\"><label for=\"{id}-log\">log</label>\
         <div class=\"lin\">{}</div><div class=\"log\">{}</div></div>",
        chart::lines(&lin, &lines),
        chart::lines(&log, &lines)
    );
    panel(&body, note)
}

fn heatmap(o: &Overlay, tl: &Timeline, i: usize, label: &str) -> String {
    let rows = &tl.rows[i];
    let columns: Vec<Column> = rows
        .rows
        .iter()
        .zip(&rows.histograms)
        .map(|(r, h)| Column {
            span: (r.start_s, r.start_s + r.length_s),
            cells: h.as_ref().map(buckets).unwrap_or_default(),
        })
        .collect();
    let used: Vec<usize> = columns.iter().flat_map(|c| c.cells.iter().map(|x| x.0)).collect();
    let title = if o.single() { "Latency heatmap".to_string() } else { format!("Latency heatmap: {label}") };
    let (Some(&lo), Some(&hi)) = (used.iter().min(), used.iter().max()) else {
        return format!(
            "<figure class=\"panel note\"><p>{}: no latency recorded per interval</p></figure>\n",
            esc(&title)
        );
    };
    let (unit, size) = log_unit(edge(lo), edge(hi + 1));
    let edges: Vec<f64> = (0..=hi + 1).map(edge).collect();
    let f = Frame {
        title: &title,
        x: tl.axis(),
        y: Axis::log(edge(lo), edge(hi + 1), &format!("Latency ({unit})"), size),
        marks: tl.marks.clone(),
        x_tip: &at_time,
        y_tip: &latency,
    };
    let tip = |b: usize| format!("{} to {}", latency(edge(b)), latency(edge(b + 1)));
    let many = o.timed().0;
    let caption = if rows.per_column > 1 {
        format!("Each column is {} intervals; colour: {many} per cell (log scale).", rows.per_column)
    } else {
        format!("Each column is one interval; colour: {many} per cell (log scale).")
    };
    panel(&chart::heatmap(&f, &columns, &edges, &tip), &caption)
}

/// Each result's whole latency histogram, and the uncorrected one in rate mode.
fn histograms(o: &Overlay) -> Vec<Whole> {
    let mut out = Vec::new();
    for (i, (_, d)) in o.results.iter().enumerate() {
        let corrected = d.uncorrected_latency_histogram.is_some();
        if let Some(h) = decode_histogram(&d.latency_histogram).filter(|h| !h.is_empty()) {
            out.push((i, if corrected { "corrected" } else { "latency" }, h));
        }
        if let Some(h) = d.uncorrected_latency_histogram.as_deref().and_then(decode_histogram).filter(|h| !h.is_empty())
        {
            out.push((i, "uncorrected", h));
        }
    }
    out
}

/// A result's whole latency histogram: (result, role, histogram).
type Whole = (usize, &'static str, hdrhistogram::Histogram<u64>);

fn distribution(o: &Overlay, hs: &[Whole]) -> String {
    let mut lines = Vec::new();
    let (mut lo, mut hi) = (usize::MAX, 0);
    for (k, (i, role, h)) in hs.iter().enumerate() {
        let cells = buckets(h);
        let total = h.len().max(1) as f64;
        lo = lo.min(cells.first().map_or(lo, |c| c.0));
        hi = hi.max(cells.last().map_or(hi, |c| c.0));
        // A step outline: each bucket's share as a flat top across the bucket.
        let mut pts = Vec::new();
        for &(b, n) in &cells {
            let share = 100.0 * n as f64 / total;
            pts.push((edge(b), share));
            pts.push((edge(b + 1), share));
        }
        let role_k = if *role == "uncorrected" { 1 } else { 0 };
        let mut l = Line::new(named(o, *i, role), tint(o, *i, k), pts).dashed(dash(o, role_k));
        l.fill = true;
        l.width = 1.4;
        lines.push(l);
    }
    if lines.is_empty() {
        return String::new();
    }
    let (unit, size) = log_unit(edge(lo), edge(hi + 1));
    let (many, title) = o.timed();
    let f = Frame {
        title: "Latency distribution",
        x: Axis::log(edge(lo), edge(hi + 1), &format!("Latency ({unit})"), size),
        y: Axis::linear(0.0, top(&lines), &format!("Share of {many} (%)"), 1.0),
        marks: Vec::new(),
        x_tip: &latency,
        y_tip: &|v| format!("{v:.2}%"),
    };
    panel(&chart::lines(&f, &lines), &format!("{title} by latency, five buckets per decade."))
}

/// The spectrum's last percentile (99.999%) as log10(1/(1-p)).
const SPECTRUM_MAX_X: f64 = 5.0;

fn spectrum(o: &Overlay, hs: &[Whole]) -> String {
    let mut lines = Vec::new();
    for (k, (i, role, h)) in hs.iter().enumerate() {
        let pts: Vec<(f64, f64)> = h
            .iter_quantiles(4)
            .map(|v| (v.quantile_iterated_to(), v.value_iterated_to() as f64))
            .filter(|(q, _)| *q < 0.999_999)
            .map(|(q, us)| ((1.0 / (1.0 - q)).log10().min(SPECTRUM_MAX_X), us))
            .collect();
        let role_k = if *role == "uncorrected" { 1 } else { 0 };
        lines.push(Line::new(named(o, *i, role), tint(o, *i, k), pts).dashed(dash(o, role_k)));
    }
    if lines.is_empty() {
        return String::new();
    }
    let (unit, size) = latency_unit(top(&lines));
    let mut x = Axis::span(0.0, SPECTRUM_MAX_X, "Percentile", 1.0);
    x.ticks = (0..=SPECTRUM_MAX_X as u32).map(f64::from).collect();
    x.kind = "pct";
    let f = Frame {
        title: "Latency by percentile",
        x,
        y: Axis::linear(0.0, top(&lines), &format!("Latency ({unit})"), size),
        marks: Vec::new(),
        x_tip: &|x| format!("p{}", (100_000.0 * (1.0 - 10f64.powf(-x))).round() / 1000.0),
        y_tip: &latency,
    };
    let caption = match hs.iter().any(|h| h.1 == "uncorrected") {
        false => String::new(),
        true => format!(
            "Corrected: from when each {} was due (coordinated omission); uncorrected: from when it was sent.",
            o.counted().singular
        ),
    };
    panel(&chart::lines(&f, &lines), &caption)
}

/// Status codes in the order drawn, each with its colour: 2xx greens and blues, 3xx sky, 4xx
/// orange and yellow, 5xx vermillion and purple.
fn status_colour(code: &str, nth_in_class: usize) -> &'static str {
    let class: &[&str] = match code.as_bytes().first() {
        Some(b'2') => &["#009E73", "#0072B2"],
        Some(b'3') => &["#56B4E9", "#999999"],
        Some(b'4') => &["#E69F00", "#F0E442"],
        Some(b'5') => &["#D55E00", "#CC79A7"],
        _ => &["#999999"],
    };
    class[nth_in_class % class.len()]
}

fn status(o: &Overlay, tl: &Timeline, i: usize, label: &str) -> String {
    // A unit's answers other than responses (WebSocket's messages) have strain's own mark for
    // a status: what the server said is in the unit's table.
    if o.results[i].1.sections.answers() != &Answers::REQUESTS {
        return String::new();
    }
    let rows = &tl.rows[i].rows;
    let codes = keys(rows, |r| &r.status);
    if codes.is_empty() {
        return String::new();
    }
    let xs = tl.middles(i);
    let mut seen = [0usize; 10];
    let layers: Vec<Layer> = codes
        .iter()
        .map(|code| {
            let class = code.bytes().next().map_or(0, |b| usize::from(b.saturating_sub(b'0')).min(9));
            let c = status_colour(code, seen[class]);
            seen[class] += 1;
            Layer {
                name: code.to_string(),
                colour: c,
                values: rows
                    .iter()
                    .map(|r| r.status.get(*code).copied().unwrap_or(0) as f64 / r.length_s.max(1e-9))
                    .collect(),
            }
        })
        .collect();
    let title = if o.single() { "Status codes".to_string() } else { format!("Status codes: {label}") };
    let f = Frame {
        title: &title,
        x: tl.axis(),
        y: Axis::linear(0.0, chart::stack_height(&layers), "Responses per second", 1.0),
        marks: tl.marks.clone(),
        x_tip: &at_time,
        y_tip: &per_second,
    };
    panel(&chart::stacked(&f, &xs, &layers), "")
}

fn errors(o: &Overlay, tl: &Timeline) -> String {
    if o.results.iter().all(|(_, d)| d.error_total() == 0) {
        return "<figure class=\"panel note\" data-panel=\"errors\"><p>Errors: no errors</p></figure>\n".into();
    }
    let mut out = String::new();
    for (i, (label, doc)) in o.results.iter().enumerate() {
        let rows = &tl.rows[i].rows;
        let kinds = keys(rows, |r| &r.errors_by_kind);
        if kinds.is_empty() {
            if !o.single() {
                let _ = writeln!(
                    out,
                    "<figure class=\"panel note\" data-panel=\"errors\"><p>Errors, {}: no errors</p></figure>",
                    esc(label)
                );
            }
            continue;
        }
        let xs = tl.middles(i);
        let layers: Vec<Layer> = kinds
            .iter()
            .enumerate()
            .map(|(k, kind)| Layer {
                name: kind.to_string(),
                colour: colour(k + 3),
                values: rows.iter().map(|r| r.errors_by_kind.get(*kind).copied().unwrap_or(0) as f64).collect(),
            })
            .collect();
        let title = if o.single() { "Errors by kind".to_string() } else { format!("Errors by kind: {label}") };
        let f = Frame {
            title: &title,
            x: tl.axis(),
            y: Axis::count(chart::stack_height(&layers), "Errors per interval"),
            marks: tl.marks.clone(),
            x_tip: &at_time,
            y_tip: &count,
        };
        // What status and timeout mean is the run's answers' (a gRPC call that did not end
        // OK, an echo not had).
        let status = doc.sections.answers().errors;
        out.push_str(&panel(&chart::stacked(&f, &xs, &layers), status));
    }
    out
}

fn connections(o: &Overlay, tl: &Timeline) -> String {
    let mut lines = Vec::new();
    for i in 0..o.results.len() {
        lines.push(
            Line::new(named(o, i, "open"), tint(o, i, 0), tl.points(i, |r| Some(r.open_connections as f64)))
                .dashed(dash(o, 0)),
        );
        let new = tl.points(i, |r| Some(r.new_connections as f64));
        if new.iter().any(|p| p.1 > 0.0) {
            lines.push(Line::new(named(o, i, "opened in the interval"), tint(o, i, 1), new).dashed(dash(o, 1)));
        }
    }
    let f = Frame {
        title: "Connections",
        x: tl.axis(),
        y: Axis::count(top(&lines), "Connections"),
        marks: tl.marks.clone(),
        x_tip: &at_time,
        y_tip: &count,
    };
    panel(&chart::lines(&f, &lines), "")
}

fn late(o: &Overlay, tl: &Timeline) -> String {
    let mut lines = Vec::new();
    let mut unsent = Vec::new();
    for (i, (label, d)) in o.results.iter().enumerate() {
        let Some(r) = &d.rate else { continue };
        lines.push(
            Line::new(named(o, i, "late sends"), tint(o, i, 3), tl.points(i, |r| Some(r.late as f64)))
                .dashed(dash(o, 0)),
        );
        let who = if o.single() { String::new() } else { format!("{label}: ") };
        unsent.push(format!(
            "{who}{} sent, {} late ({} strain's own with a connection free, {} for want of a free connection, {} of them while connections were being opened), {} unsent at the stop",
            grouped(r.sent as f64, 0),
            grouped(r.late as f64, 0),
            grouped(r.late.saturating_sub(r.late_no_connection) as f64, 0),
            grouped(r.late_no_connection as f64, 0),
            grouped(r.late_connecting as f64, 0),
            grouped(r.unsent as f64, 0)
        ));
    }
    let f = Frame {
        title: "Late sends (rate mode)",
        x: tl.axis(),
        y: Axis::count(top(&lines), "Sends over 1 ms late per interval"),
        marks: tl.marks.clone(),
        x_tip: &at_time,
        y_tip: &count,
    };
    panel(&chart::lines(&f, &lines), &(unsent.join("; ") + "."))
}

fn proxy(o: &Overlay, tl: &Timeline) -> String {
    let mut hit = Vec::new();
    let mut fb = Vec::new();
    for (i, (_, d)) in o.results.iter().enumerate() {
        let Some(p) = &d.proxy else { continue };
        hit.push(
            Line::new(
                named(o, i, "hit ratio"),
                tint(o, i, 2),
                p.intervals.iter().filter_map(|r| Some((r.start_s, r.hit_ratio?))).collect(),
            )
            .dashed(dash(o, 0)),
        );
        fb.push(
            Line::new(
                named(o, i, "first byte p99"),
                tint(o, i, 0),
                p.intervals.iter().map(|r| (r.start_s, r.first_byte_p99_us as f64)).collect(),
            )
            .dashed(dash(o, 0)),
        );
        fb.push(
            Line::new(
                named(o, i, "full response p99"),
                tint(o, i, 1),
                tl.points(i, |r| (r.requests > 0).then_some(r.p99_us as f64)),
            )
            .dashed(dash(o, 1)),
        );
    }
    let f = Frame {
        title: "Hit ratio",
        x: tl.axis(),
        y: Axis::linear(0.0, 1.0, "Share of responses from the cache", 1.0),
        marks: tl.marks.clone(),
        x_tip: &at_time,
        y_tip: &|v| format!("{v:.3}"),
    };
    let mut out = panel(&chart::lines(&f, &hit), "");
    let (unit, size) = latency_unit(top(&fb));
    let f = Frame {
        title: "First byte and full response, p99",
        x: tl.axis(),
        y: Axis::linear(0.0, top(&fb), &format!("Latency ({unit})"), size),
        marks: tl.marks.clone(),
        x_tip: &at_time,
        y_tip: &latency,
    };
    out.push_str(&panel(&chart::lines(&f, &fb), ""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::RunDoc;

    #[test]
    fn only_inner_stage_ends_are_boundaries() {
        let golden =
            std::fs::read_to_string(format!("{}/tests/golden/json_rate.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let mut d = RunDoc::parse(&golden).unwrap();
        // The drain ran past the schedule's end: its end is still no boundary.
        let last = d.intervals.len() - 1;
        d.intervals[last].length_s += 0.5;
        let end = d.intervals[last].start_s + d.intervals[last].length_s;
        let mut marks = |ends: Option<Vec<f64>>| {
            d.stage_ends_s = ends;
            let results = [("r".to_string(), d.clone())];
            Timeline::of(&Overlay::new(&results)).marks
        };
        assert_eq!(marks(None), Vec::<f64>::new());
        assert_eq!(marks(Some(vec![end - 0.5])), Vec::<f64>::new());
        assert_eq!(marks(Some(vec![end / 2.0, end - 0.5])), vec![end / 2.0]);
    }
}
