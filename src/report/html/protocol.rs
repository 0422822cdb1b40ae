//! The protocol tables of a run page: what each protocol's section (HTTP/2's, HTTP/3's, a
//! unit's) counted, a row per figure and a column per result (figures down, results across: a panel stays narrow however many
//! figures there are).

use std::fmt::Write;

use super::{esc, Overlay};
use crate::result::RunDoc;
use crate::stats::section::Figure;

/// The protocols' tables: one per section any result has, a row per figure.
pub(super) fn units<'a>(o: &Overlay<'a>) -> String {
    let mut keys: Vec<&str> = Vec::new();
    for (_, d) in o.results {
        for (_, s) in d.sections.iter() {
            if !keys.contains(&s.key()) {
                keys.push(s.key());
            }
        }
    }
    let mut out = String::new();
    for key in keys {
        let of = |d: &'a RunDoc| d.sections.iter().find(|(_, s)| s.key() == key);
        let docs: Vec<(&String, Vec<Figure>)> =
            o.results.iter().filter_map(|(l, d)| of(d).map(|(p, s)| (l, s.figures(p)))).collect();
        let Some((_, first)) = o.results.iter().find_map(|(_, d)| of(d)) else { continue };
        let _ = write!(
            out,
            "<figure class=\"panel\" data-panel=\"{}\"><h3>{}</h3><table><tr><th></th>",
            esc(key),
            esc(first.title())
        );
        for (label, _) in &docs {
            let _ = write!(out, "<th>{}</th>", esc(label));
        }
        out.push_str("</tr>");
        for (r, (name, metric, _)) in docs.first().map_or(&[][..], |(_, f)| f.as_slice()).iter().enumerate() {
            let _ = write!(out, "<tr><td>{name}</td>");
            for (_, figures) in &docs {
                let value = figures.get(r).map_or("-", |f| f.2.as_str());
                let _ = write!(out, "<td data-metric=\"{metric}\">{}</td>", esc(value));
            }
            out.push_str("</tr>");
        }
        let _ = writeln!(out, "</table><figcaption>{}</figcaption></figure>", esc(first.caption()));
    }
    out
}

/// A table's row: its figure's name, the metric it is tagged with, how it is written.
pub(super) type Row<T> = (&'static str, &'static str, fn(&T) -> String);

/// A protocol's panel: a row per figure (its name, the metric it is tagged with, how it is
/// written), a column per result.
pub(super) fn table<T>(panel: &str, title: &str, docs: &[(&String, &T)], rows: &[Row<T>], caption: &str) -> String {
    let mut out = format!("<figure class=\"panel\" data-panel=\"{panel}\"><h3>{title}</h3><table><tr><th></th>");
    for (label, _) in docs {
        let _ = write!(out, "<th>{}</th>", esc(label));
    }
    out.push_str("</tr>");
    for (name, metric, figure) in rows {
        let _ = write!(out, "<tr><td>{name}</td>");
        for (_, h) in docs {
            let _ = write!(out, "<td data-metric=\"{metric}\">{}</td>", esc(&figure(h)));
        }
        out.push_str("</tr>");
    }
    let _ = writeln!(out, "</table><figcaption>{caption}</figcaption></figure>");
    out
}
