//! The HTML report: one self-contained page per result kind (a run, several runs overlaid, a
//! comparison, a capacity search), drawn here as SVG from the result documents, so `--html` on
//! a run and `strain report` on saved results draw the same page. Why SVG from Rust rather than
//! an embedded chart library: a few kilobytes instead of hundreds, nothing to license or
//! update, sharp at any zoom and in print, and testable by reading the DOM. The one inline
//! script (hover tooltips) is allowed by its hash; a Content-Security-Policy forbids anything
//! else, so the page makes no request and renders the same offline or mailed.
//!
//! Layout: [`axis`] (1-2-5 ticks, units, thousands separators), [`chart`] (lines, stacked
//! areas, heatmap), [`series`] (the rows a page draws), `summary` (the answer and summary
//! blocks), `panels` (the run page's charts), `search` (the find-max page).

use std::fmt::Write;

use crate::result::RunDoc;
use crate::stats::section::Answers;

pub mod axis;
pub mod chart;
mod find_max;
mod panels;
mod protocol;
mod replay;
pub mod series;
mod summary;

pub use find_max::render_find_max;

/// The page's style: light and dark themes, a two-column grid on wide screens, print.
const STYLE: &str = include_str!("page.css");
/// The page's script: hover tooltips.
const SCRIPT: &str = include_str!("page.js");

/// Escapes text for HTML and SVG.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The page's head, its policy allowing the inline style and this one script only, and the
/// opening of its body with the title.
fn head(title: &str) -> String {
    let hash = crate::b64::encode(&boring::sha::sha256(SCRIPT.as_bytes()));
    let mut out = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{hash}'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>",
        t = esc(title)
    );
    out
}

/// The results a page draws: label, result and the colour index of each.
pub struct Overlay<'a> {
    /// (label, result), in the order given.
    pub results: &'a [(String, RunDoc)],
    /// Each result's colour (a comparison colours by side when it has many runs).
    pub colours: Vec<usize>,
}

impl<'a> Overlay<'a> {
    /// One colour per result.
    pub fn new(results: &'a [(String, RunDoc)]) -> Overlay<'a> {
        Overlay { results, colours: (0..results.len()).collect() }
    }

    pub(crate) fn colour(&self, i: usize) -> &'static str {
        chart::colour(self.colours.get(i).copied().unwrap_or(i))
    }

    pub(crate) fn single(&self) -> bool {
        self.results.len() == 1
    }

    /// What every result counts: a unit's answers when all results count the same (a
    /// WebSocket run's messages), else requests.
    pub(crate) fn counted(&self) -> &'static Answers {
        let mut each = self.results.iter().map(|(_, d)| d.sections.answers());
        match each.next() {
            Some(first) if each.all(|a| a == first) => first,
            _ => &Answers::REQUESTS,
        }
    }

    /// What a latency was timed for, many and capitalised: HTTP's responses, or a unit's
    /// answers (a WebSocket run's messages).
    pub(crate) fn timed(&self) -> (&'static str, &'static str) {
        match self.counted() {
            a if a.plural == Answers::REQUESTS.plural => ("responses", "Responses"),
            a => (a.plural, a.title),
        }
    }
}

/// The end of a page: the script, then the closing tags.
fn tail(out: &mut String) {
    let _ = writeln!(out, "<script>{SCRIPT}</script></body></html>");
}

/// What ran: each result's command and setting, in its colour.
fn meta(o: &Overlay) -> String {
    let mut out = String::new();
    for (i, (label, d)) in o.results.iter().enumerate() {
        let command = d.command.join(" ");
        let shown = if command.is_empty() { d.config.url.as_str() } else { command.as_str() };
        let name = if o.results.len() == 1 {
            String::new()
        } else {
            format!("<b style=\"color:{}\">{}</b>: ", chart::colour(o.colours[i]), esc(label))
        };
        let _ = writeln!(
            out,
            "<p class=\"meta\">{name}<code>{}</code><br>strain {}, {} cores, started {}, {} connections, {} threads, {}</p>",
            esc(shown),
            esc(&d.strain_version),
            d.host_cores,
            esc(&d.started),
            d.config.connections,
            d.config.threads,
            esc(&d.protocol),
        );
    }
    out
}

/// Results (label, result) as one page: one run, or several overlaid.
pub fn render(results: &[(String, RunDoc)]) -> String {
    let merged = results.len() == 1 && results[0].1.command.get(1).is_some_and(|c| c == "merge");
    let title = match results.len() {
        1 if merged => "strain: merged result".to_string(),
        1 => "strain: run report".to_string(),
        n => format!("strain: {n} results overlaid"),
    };
    render_page(&title, &Overlay::new(results), "")
}

/// A page titled `title` over `o`'s results that opens with `verdict` (HTML: a comparison's
/// table) instead of the thresholds block when one is given.
pub fn render_page(title: &str, o: &Overlay, verdict: &str) -> String {
    let mut out = head(title);
    if verdict.is_empty() {
        out.push_str(&summary::answer(o));
    } else {
        out.push_str(verdict);
    }
    out.push_str(&meta(o));
    out.push_str(&summary::summary(o));
    out.push_str(&summary::targets(o));
    out.push_str(&panels::panels(o));
    tail(&mut out);
    out
}
