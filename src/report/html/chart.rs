//! The SVG charts every page draws with: lines (optionally filled), stacked areas and a
//! heatmap, on [`Axis`] frames with a legend and the data for hover tooltips (a `data-tip`
//! attribute the page's script reads: positions and preformatted values, so the script stays a
//! few lines and the numbers read as the page's tables do).

use std::fmt::Write;

use super::axis::Axis;
use super::esc;

/// Okabe and Ito's palette, told apart by people with any common colour-vision deficiency; it
/// reads on light and dark backgrounds alike.
pub const PALETTE: [&str; 8] = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#999999"];

/// Chart size in SVG units (the page scales it to its column).
const W: f64 = 640.0;
const H: f64 = 300.0;
/// Plot margins: left (tick labels and the axis title), right, bottom (ticks and title).
const ML: f64 = 70.0;
const MR: f64 = 28.0;
const MB: f64 = 42.0;
/// The title's baseline and the legend's first row.
const TITLE_Y: f64 = 18.0;
const LEGEND_Y: f64 = 36.0;
/// One legend row.
const ROW: f64 = 15.0;

/// `i`-th colour of the palette, wrapping.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Line {
    /// Its legend entry.
    pub name: String,
    /// Stroke colour.
    pub colour: &'static str,
    /// Stroke dashes (empty: solid).
    pub dash: &'static str,
    /// Stroke width.
    pub width: f64,
    /// Filled down to the axis, faintly (a distribution).
    pub fill: bool,
    /// (x, y) in the data's units.
    pub points: Vec<(f64, f64)>,
}

impl Line {
    /// A solid line.
    pub fn new(name: impl Into<String>, colour: &'static str, points: Vec<(f64, f64)>) -> Line {
        Line { name: name.into(), colour, dash: "", width: 1.8, fill: false, points }
    }

    /// The same, dashed.
    pub fn dashed(mut self, dash: &'static str) -> Line {
        self.dash = dash;
        self
    }
}

/// A chart's frame: title, axes, vertical marks (stage boundaries, a max rate) and how the
/// tooltip writes x and y values.
#[derive(Clone)]
pub struct Frame<'a> {
    /// The title.
    pub title: &'a str,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
    /// Vertical lines at these x values (the data's unit).
    pub marks: Vec<f64>,
    /// An x value as the tooltip's header.
    pub x_tip: &'a dyn Fn(f64) -> String,
    /// A y value in the tooltip.
    pub y_tip: &'a dyn Fn(f64) -> String,
}

/// Where the plot is, once the legend's rows are known.
struct Plot {
    top: f64,
}

impl Plot {
    fn px(&self, a: &Axis, v: f64) -> f64 {
        ML + a.frac(v) * (W - ML - MR)
    }

    fn py(&self, a: &Axis, v: f64) -> f64 {
        H - MB - a.frac(v) * (H - MB - self.top)
    }
}

/// The legend entries' places (flowing in rows under the title) and the plot's top; at least
/// `min_rows` rows are kept (the heatmap draws its colour scale there).
fn legend(names: &[(&str, &str, &str)], min_rows: f64) -> (Vec<(f64, f64)>, f64) {
    let mut places = Vec::with_capacity(names.len());
    let (mut lx, mut row) = (ML, 0.0);
    for (name, _, _) in names {
        let width = 34.0 + 6.4 * name.chars().count() as f64;
        if lx + width > W - MR && lx > ML {
            (lx, row) = (ML, row + 1.0);
        }
        places.push((lx, LEGEND_Y + row * ROW));
        lx += width;
    }
    let rows = if names.is_empty() { 0.0 } else { row + 1.0 };
    (places, LEGEND_Y + rows.max(min_rows) * ROW - 4.0 + 6.0)
}

/// Appends what `element` makes of each of `axis`'s ticks.
fn for_ticks(out: &mut String, axis: &Axis, element: impl Fn(f64) -> String) {
    for &t in &axis.ticks {
        out.push_str(&element(t));
    }
}

/// The SVG's opening, title, legend, axes, grid and marks.
fn open(f: &Frame, entries: &[(&str, &str, &str)], tip: &str, class: &str) -> (String, Plot) {
    let min_rows = if class == "heatmap" { 1.0 } else { 0.0 };
    let (places, top) = legend(entries, min_rows);
    let plot = Plot { top };
    let mut out = format!(
        "<svg class=\"chart {class}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{t}\" data-tip=\"{tip}\">\
         <text x=\"{ML}\" y=\"{TITLE_Y}\" class=\"title\">{t}</text>",
        t = esc(f.title),
        tip = esc(tip),
    );
    for ((name, colour, dash), (lx, ly)) in entries.iter().zip(&places) {
        let _ = write!(
            out,
            "<g class=\"key\"><line x1=\"{lx:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"3\" stroke-dasharray=\"{dash}\"/>\
             <text x=\"{:.1}\" y=\"{ly:.1}\" class=\"legend\">{}</text></g>",
            lx + 22.0,
            lx + 26.0,
            esc(name),
            y = ly - 4.0,
        );
    }
    let _ = write!(out, "<g class=\"axis y\" data-scale=\"{}\">", f.y.kind);
    // A grid line across the plot and the tick's value left of it.
    for_ticks(&mut out, &f.y, |t| {
        let y = plot.py(&f.y, t * f.y.divisor);
        format!(
            "<line x1=\"{ML}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"gl\"/><text x=\"{}\" y=\"{:.1}\" class=\"tick\">{}</text>",
            W - MR,
            ML - 6.0,
            y + 4.0,
            f.y.label(t)
        )
    });
    let mid = (plot.top + H - MB) / 2.0;
    let _ = write!(
        out,
        "<text class=\"atitle\" transform=\"translate(14 {mid:.1}) rotate(-90)\">{}</text></g><g class=\"axis x\" data-scale=\"{}\">",
        esc(&f.y.title),
        f.x.kind
    );
    // A short tick below the plot and its value under it.
    for_ticks(&mut out, &f.x, |t| {
        let x = plot.px(&f.x, t * f.x.divisor);
        format!(
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" class=\"axisline\"/><text x=\"{x:.1}\" y=\"{}\" class=\"tick\">{}</text>",
            H - MB,
            H - MB + 4.0,
            H - MB + 16.0,
            x_label(&f.x, t)
        )
    });
    let _ = write!(
        out,
        "<text class=\"atitle\" x=\"{:.1}\" y=\"{}\">{}</text></g><line x1=\"{ML}\" x2=\"{}\" y1=\"{b}\" y2=\"{b}\" class=\"axisline\"/>",
        (ML + W - MR) / 2.0,
        H - 6.0,
        esc(&f.x.title),
        W - MR,
        b = H - MB,
    );
    for &m in &f.marks {
        let frac = f.x.frac(m);
        if frac > 0.0 && frac < 1.0 {
            let x = plot.px(&f.x, m);
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{}\" class=\"mark\"/>",
                plot.top,
                H - MB
            );
        }
    }
    (out, plot)
}

/// An x tick's label: the spectrum's axis names percentiles, others their value.
fn x_label(a: &Axis, t: f64) -> String {
    if a.kind == "pct" {
        let p = 100.0 * (1.0 - 10f64.powf(-t));
        if t < 0.5 {
            "0%".into()
        } else {
            format!("{}%", (p * 1000.0).round() / 1000.0)
        }
    } else {
        a.label(t)
    }
}

/// The plot that `entries` leave: its x positions for the tooltip are known before drawing.
fn plot_for(entries: &[(&str, &str, &str)], min_rows: f64) -> Plot {
    Plot { top: legend(entries, min_rows).1 }
}

/// The tooltip data: for each x position (SVG units), a header and one value per series, and
/// the guide line's top and bottom.
fn tip_json(
    plot: &Plot,
    xs: &[f64],
    headers: &[String],
    names: &[&str],
    colours: &[&str],
    values: &[Vec<String>],
) -> String {
    let px: Vec<f64> = xs.iter().map(|x| (x * 10.0).round() / 10.0).collect();
    let json =
        serde_json::json!({ "px": px, "y": [plot.top, H - MB], "h": headers, "n": names, "c": colours, "v": values });
    json.to_string()
}

/// A line chart; an empty one says so in its middle.
pub fn lines(f: &Frame, series: &[Line]) -> String {
    let shown: Vec<&Line> = series.iter().filter(|s| s.points.iter().any(|p| p.1.is_finite())).collect();
    let entries: Vec<(&str, &str, &str)> = shown.iter().map(|s| (s.name.as_str(), s.colour, s.dash)).collect();
    // The tooltip follows the series with the most points; each series shows its value nearest.
    let guide = shown.iter().max_by_key(|s| s.points.len());
    let xs: Vec<f64> = guide.map(|g| g.points.iter().map(|p| p.0).collect()).unwrap_or_default();
    let values: Vec<Vec<String>> = xs
        .iter()
        .map(|&x| shown.iter().map(|s| nearest(&s.points, x).map_or_else(|| "-".into(), |y| (f.y_tip)(y))).collect())
        .collect();
    let headers: Vec<String> = xs.iter().map(|&x| (f.x_tip)(x)).collect();
    let names: Vec<&str> = shown.iter().map(|s| s.name.as_str()).collect();
    let colours: Vec<&str> = shown.iter().map(|s| s.colour).collect();
    let probe = plot_for(&entries, 0.0);
    let pxs: Vec<f64> = xs.iter().map(|&x| probe.px(&f.x, x)).collect();
    let (mut out, plot) = open(f, &entries, &tip_json(&probe, &pxs, &headers, &names, &colours, &values), "lines");
    if shown.is_empty() {
        let _ = write!(out, "<text x=\"{:.1}\" y=\"{:.1}\" class=\"empty\">no data</text>", W / 2.0, H / 2.0);
    }
    for s in &shown {
        // A point that is not a number (an interval without responses) breaks the line there.
        let runs: Vec<Vec<String>> = s
            .points
            .split(|(x, y)| !x.is_finite() || !y.is_finite())
            .filter(|run| !run.is_empty())
            .map(|run| run.iter().map(|&(x, y)| format!("{:.1},{:.1}", plot.px(&f.x, x), plot.py(&f.y, y))).collect())
            .collect();
        if s.fill {
            for (pts, run) in
                runs.iter().zip(s.points.split(|(x, y)| !x.is_finite() || !y.is_finite()).filter(|r| !r.is_empty()))
            {
                let base = H - MB;
                let _ = write!(
                    out,
                    "<polygon points=\"{:.1},{base} {} {:.1},{base}\" fill=\"{}\" class=\"area\"/>",
                    plot.px(&f.x, run[0].0),
                    pts.join(" "),
                    plot.px(&f.x, run[run.len() - 1].0),
                    s.colour
                );
            }
        }
        for pts in &runs {
            let _ = write!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-dasharray=\"{}\"/>",
                pts.join(" "),
                s.colour,
                s.width,
                s.dash
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// The y of the point of `points` nearest `x`; none where the line is broken.
fn nearest(points: &[(f64, f64)], x: f64) -> Option<f64> {
    points.iter().min_by(|a, b| (a.0 - x).abs().total_cmp(&(b.0 - x).abs())).map(|p| p.1).filter(|y| y.is_finite())
}

/// One layer of a stacked chart: a value per column.
pub struct Layer {
    /// Its legend entry.
    pub name: String,
    /// Its colour.
    pub colour: &'static str,
    /// One value per column.
    pub values: Vec<f64>,
}

/// The height of the tallest stack of `layers`.
pub fn stack_height(layers: &[Layer]) -> f64 {
    let columns = layers.iter().map(|l| l.values.len()).max().unwrap_or(0);
    (0..columns).map(|k| layers.iter().filter_map(|l| l.values.get(k)).sum::<f64>()).fold(0.0, f64::max)
}

/// Stacked areas over columns `xs` (the x of each column, the data's unit): layer over layer,
/// the first at the bottom.
pub fn stacked(f: &Frame, xs: &[f64], layers: &[Layer]) -> String {
    let entries: Vec<(&str, &str, &str)> = layers.iter().map(|l| (l.name.as_str(), l.colour, "")).collect();
    let probe = plot_for(&entries, 0.0);
    let pxs: Vec<f64> = xs.iter().map(|&x| probe.px(&f.x, x)).collect();
    let headers: Vec<String> = xs.iter().map(|&x| (f.x_tip)(x)).collect();
    let values: Vec<Vec<String>> = (0..xs.len())
        .map(|i| layers.iter().map(|l| (f.y_tip)(l.values.get(i).copied().unwrap_or(0.0))).collect())
        .collect();
    let names: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
    let colours: Vec<&str> = layers.iter().map(|l| l.colour).collect();
    let (mut out, plot) = open(f, &entries, &tip_json(&probe, &pxs, &headers, &names, &colours, &values), "stacked");
    let mut below = vec![0.0; xs.len()];
    for l in layers {
        let above: Vec<f64> = below.iter().zip(&l.values).map(|(b, v)| b + v).collect();
        let top: Vec<String> =
            xs.iter().zip(&above).map(|(&x, &y)| format!("{:.1},{:.1}", plot.px(&f.x, x), plot.py(&f.y, y))).collect();
        let bottom: Vec<String> = xs
            .iter()
            .zip(&below)
            .rev()
            .map(|(&x, &y)| format!("{:.1},{:.1}", plot.px(&f.x, x), plot.py(&f.y, y)))
            .collect();
        let _ = write!(
            out,
            "<polygon points=\"{} {}\" fill=\"{c}\" stroke=\"{c}\" class=\"layer\"/>",
            top.join(" "),
            bottom.join(" "),
            c = l.colour
        );
        below = above;
    }
    out.push_str("</svg>");
    out
}

/// Viridis in eight steps: a sequential scale that reads in grey and with colour-vision
/// deficiencies, dark for few and bright for many.
const HEAT: [&str; 8] = ["#440154", "#46327e", "#365c8d", "#277f8e", "#1fa187", "#4ac16d", "#a0da39", "#fde725"];

/// A heatmap column: its time span and the counts of its latency buckets.
pub struct Column {
    /// Start and end, the x axis's data unit.
    pub span: (f64, f64),
    /// (bucket index, count), buckets of `edges`.
    pub cells: Vec<(usize, u64)>,
}

/// A heatmap: time on x, latency buckets (edges in the y axis's data unit, one more than the
/// buckets) on y, a cell's count as its colour (log scale, eight steps); one `<g class="col">`
/// per column, so tests can count them.
pub fn heatmap(f: &Frame, columns: &[Column], edges: &[f64], bucket_tip: &dyn Fn(usize) -> String) -> String {
    let top_count = columns.iter().flat_map(|c| c.cells.iter().map(|x| x.1)).max().unwrap_or(0);
    let level = |n: u64| -> usize {
        if top_count <= 1 {
            HEAT.len() - 1
        } else {
            (((n as f64).ln_1p() / (top_count as f64).ln_1p()) * (HEAT.len() - 1) as f64).round() as usize
        }
    };
    let probe = plot_for(&[], 1.0);
    let pxs: Vec<f64> = columns.iter().map(|c| probe.px(&f.x, (c.span.0 + c.span.1) / 2.0)).collect();
    let headers: Vec<String> = columns.iter().map(|c| (f.x_tip)((c.span.0 + c.span.1) / 2.0)).collect();
    // The tooltip lists a column's buckets, slowest first, as "bucket: count".
    let values: Vec<Vec<String>> = columns
        .iter()
        .map(|c| {
            c.cells
                .iter()
                .rev()
                .map(|&(b, n)| format!("{}: {}", bucket_tip(b), crate::report::units::grouped(n as f64, 0)))
                .collect()
        })
        .collect();
    let px: Vec<f64> = pxs.iter().map(|x| (x * 10.0).round() / 10.0).collect();
    let tip = serde_json::json!({ "px": px, "y": [probe.top, H - MB], "h": headers, "l": values }).to_string();
    let (mut out, plot) = open(f, &[], &tip, "heatmap");
    let _ = write!(out, "<g class=\"cells\" data-columns=\"{}\">", columns.len());
    for c in columns {
        let (x0, x1) = (plot.px(&f.x, c.span.0), plot.px(&f.x, c.span.1));
        out.push_str("<g class=\"col\">");
        for &(b, n) in &c.cells {
            let (Some(&lo), Some(&hi)) = (edges.get(b), edges.get(b + 1)) else { continue };
            let (y0, y1) = (plot.py(&f.y, hi), plot.py(&f.y, lo));
            let _ = write!(
                out,
                "<rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"/>",
                (x1 - x0).max(0.6),
                (y1 - y0).max(0.6),
                HEAT[level(n).min(HEAT.len() - 1)]
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</g>");
    // The colour scale: few to many.
    let x = W - MR - 8.0 * 14.0 - 60.0;
    let _ = write!(out, "<text x=\"{:.1}\" y=\"{LEGEND_Y}\" class=\"legend\" text-anchor=\"end\">1</text>", x - 4.0);
    for (i, c) in HEAT.iter().enumerate() {
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{}\" width=\"14\" height=\"10\" fill=\"{c}\"/>",
            x + 14.0 * i as f64,
            LEGEND_Y - 9.0
        );
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{LEGEND_Y}\" class=\"legend\">{} per cell</text></svg>",
        x + 14.0 * HEAT.len() as f64 + 4.0,
        crate::report::units::grouped(top_count as f64, 0)
    );
    out
}
