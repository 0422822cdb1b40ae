//! Access logs: nginx `log_format`, Apache `LogFormat` and Apache Traffic Server `%<field>`
//! layouts, compiled once ([`dialect`]) into the text between fields and the fields, then
//! matched against each line as it is read: a line is split where the next text is found,
//! and its values become a record ([`fields`]). No regex: a layout is a sequence of
//! literals, so `str::find` is all the matching there is (a release build read 1.4 µs a
//! combined line and 0.7 µs a squid line, records built, on a 2-core dev VM).
//!
//! The layouts servers write by default are built in and detected from the first lines
//! ([`detect`]): the text ones here and in [`balancer`], JSON lines ([`json`]), and W3C
//! extended logs, whose `#Fields:` line names their columns ([`w3c`]).
mod balancer;
#[cfg(test)]
mod detect_tests;
mod dialect;
mod fields;
mod json;
#[cfg(test)]
mod tests;
mod w3c;

use std::io::{BufRead, ErrorKind, Read};
use std::ops::ControlFlow;

use self::dialect::{Dialect, COMBINED, COMMON, SQUID, SQUID_NATIVE, VHOST_COMBINED};
use self::fields::{quote, Escape, Field, Flaw, Values};
use super::{Item, ReadError};
use crate::replay::record::{BadKind, BadRecord, Record};

/// The longest line read: a longer one is a bad record, skipped without being held.
const MAX_LINE_BYTES: usize = 1 << 20;

/// The most fields a layout's values are split into on the stack (longer layouts use the heap).
const INLINE_SLOTS: usize = 32;

/// How many of a log's first non-empty lines detection tries each layout on.
const DETECT_LINES: usize = 200;

/// A log line's layout, compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFormat {
    /// What the layout is called in messages.
    name: Name,
    /// How its lines are read.
    kind: Kind,
}

/// How a log's lines are read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// Text between fields, and the fields.
    Text(Layout),
    /// One JSON object a line.
    Json(json::Schema),
    /// W3C extended: the columns a `#Fields:` line names.
    W3c(w3c::Columns),
}

/// A text layout: the text before the first field, and each field with the text after it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    /// The text before the first field.
    lead: String,
    /// The fields, each with the text after it.
    slots: Vec<Slot>,
    /// How values are escaped.
    escape: Escape,
    /// The layout has a method or a request line (else every request is a GET).
    method_recorded: bool,
    /// Fields after the last one are ignored (combined followed by `$request_time`, an upstream
    /// time, a host…; a newer load balancer's fields).
    rest_ignored: bool,
    /// A syslog header (`Feb  6 12:14:14 host haproxy[14389]: `) may come before the layout.
    syslog: bool,
}

/// A layout's name: a preset's, or the dialect it was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    /// A built-in layout, by the name `--format` takes (`combined`, `haproxy`…).
    Preset(&'static str),
    /// A format the user gave.
    Dialect(Dialect),
}

/// One field of a layout and the text that ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    /// What the field holds.
    field: Field,
    /// The field as the layout wrote it (`$status`, `%>s`), for errors.
    label: String,
    /// The field is between quotes in a dialect that escapes quotes: it ends at the first
    /// quote that is not escaped, whatever text it holds.
    quoted: bool,
    /// The spaces the value always has, skipped before looking for the text after it.
    spaces: u8,
    /// The value is right-aligned in this many columns (Squid's `%6tr`): its padding is skipped.
    pad: u8,
    /// The text after the field, up to the next field (empty after the last one).
    after: String,
}

/// The built-in layouts, in the order detection tries them: when several read a log's first
/// lines equally well, the first wins, so a layout comes before the looser ones that would
/// also read its lines (`vhost_combined` reads as combined with the wrong client; combined as
/// `combined+`; Squid's padded lines as ATS's squid.log with its fields empty).
pub(super) const PRESETS: [&str; 13] = [
    "vhost_combined",
    "combined",
    "combined+",
    "common",
    "squid-native",
    "squid",
    "elb",
    "alb",
    "envoy",
    "haproxy",
    "caddy",
    "traefik",
    // Only by name: detection reads a W3C log's columns from its `#Fields:` line.
    "w3c",
];

impl LogFormat {
    /// The combined log format, nginx's and Apache's default.
    pub fn combined() -> LogFormat {
        text("combined", dialect::compile_layout(Dialect::Apache, COMBINED))
    }

    /// The common log format (combined without referer and user agent).
    pub fn common() -> LogFormat {
        text("common", dialect::compile_layout(Dialect::Apache, COMMON))
    }

    /// Apache Traffic Server's squid.log layout.
    pub fn squid() -> LogFormat {
        text("squid", dialect::compile_layout(Dialect::Ats, SQUID))
    }

    /// A built-in layout by its name (`combined`, `vhost_combined`, `haproxy`, `caddy`…; see
    /// [`PRESETS`]), in any case.
    fn preset(name: &str) -> Option<LogFormat> {
        let name = PRESETS.into_iter().find(|p| p.eq_ignore_ascii_case(name.trim()))?;
        Some(match name {
            "combined" => LogFormat::combined(),
            "common" => LogFormat::common(),
            "squid" => LogFormat::squid(),
            "vhost_combined" => text(name, dialect::compile_layout(Dialect::Apache, VHOST_COMBINED)),
            // nginx's packaged `main` (combined and `"$http_x_forwarded_for"`), Traefik's CLF
            // (combined, then a count, the router, the server and a duration) and any
            // combined with more after it.
            "combined+" => {
                text(name, Layout { rest_ignored: true, ..dialect::compile_layout(Dialect::Apache, COMBINED) })
            }
            "squid-native" => text(name, dialect::builtin_layout(SQUID_NATIVE, Escape::None)),
            "elb" => text(name, balancer::elb()),
            "alb" => text(name, balancer::alb()),
            "envoy" => text(name, balancer::envoy()),
            "haproxy" => text(name, balancer::haproxy()),
            "caddy" => LogFormat { name: Name::Preset(name), kind: Kind::Json(json::Schema::Caddy) },
            "traefik" => LogFormat { name: Name::Preset(name), kind: Kind::Json(json::Schema::Traefik) },
            _ => LogFormat { name: Name::Preset(name), kind: Kind::W3c(w3c::Columns::default()) },
        })
    }

    /// A preset's name (`combined`, `common`, `squid`…) or a layout pasted from a config: nginx
    /// `log_format`, Apache `LogFormat` or ATS `%<field>`, told apart by their syntax.
    pub fn parse(spec: &str) -> Result<LogFormat, String> {
        dialect::parse(spec)
    }

    /// The layout's name for the run header (`combined`, `nginx log_format`…).
    pub fn describe(&self) -> String {
        match self.name {
            Name::Preset(name) => name.to_owned(),
            Name::Dialect(Dialect::Nginx) => "nginx log_format".to_owned(),
            Name::Dialect(Dialect::Apache) => "Apache LogFormat".to_owned(),
            Name::Dialect(Dialect::Ats) => "ATS log format".to_owned(),
        }
    }

    /// The record `line` holds (its number is `number`), or why it has none.
    fn record(&self, line: &str, number: u64) -> Result<Record, Flaw> {
        match &self.kind {
            Kind::Text(layout) => layout.record(line, number).map_err(|at| match at {
                Mismatch::Value(flaw) => flaw,
                Mismatch::At(label, at) => Flaw::short(self.mismatch(label, at, line)),
            }),
            Kind::Json(schema) => schema.record(line, number),
            Kind::W3c(columns) => columns.record(line, number),
        }
    }

    /// Why a line does not match: the field where it stopped matching, the text there, and the
    /// start of the line.
    fn mismatch(&self, label: &str, at: &str, line: &str) -> String {
        let name = self.describe();
        if at.len() == line.len() {
            return format!("does not match the {name} layout at {label}: {}", quote(line));
        }
        format!("does not match the {name} layout at {label}: {} in {}", quote(at), quote(line))
    }

    /// Reads a line that is not a record but says how the next ones are written (W3C's
    /// `#Fields:`); false for any other line.
    fn directive(&mut self, line: &str) -> bool {
        match &mut self.kind {
            Kind::W3c(columns) if line.starts_with('#') => {
                columns.directive(line);
                true
            }
            _ => false,
        }
    }
}

/// A built-in text layout under its name.
fn text(name: &'static str, layout: Layout) -> LogFormat {
    LogFormat { name: Name::Preset(name), kind: Kind::Text(layout) }
}

/// Where a line left a text layout.
enum Mismatch<'a> {
    /// At this field (its label), the line going on with this text.
    At(&'a str, &'a str),
    /// The line is split, but a value is not what its field holds, or there is no request.
    Value(Flaw),
}

impl Layout {
    /// The record `line` holds, or where it does not match.
    fn record<'a>(&'a self, line: &'a str, number: u64) -> Result<Record, Mismatch<'a>> {
        let body = if self.syslog { after_syslog_header(line) } else { line };
        let first = self.slots.first().map_or("", |s| s.label.as_str());
        let mut rest = body.strip_prefix(self.lead.as_str()).ok_or(Mismatch::At(first, body))?;
        // The whole line is split before any value is read: a line in another layout is
        // reported as that, not as the first value that happens not to parse. The values are
        // held on the stack for any layout but a very long one: no allocation a line.
        let (mut inline, mut heap) = ([""; INLINE_SLOTS], Vec::new());
        let raw: &mut [&str] = match inline.get_mut(..self.slots.len()) {
            Some(raw) => raw,
            None => {
                heap.resize(self.slots.len(), "");
                &mut heap
            }
        };
        for (i, (slot, out)) in self.slots.iter().zip(raw.iter_mut()).enumerate() {
            let last = i + 1 == self.slots.len();
            let (value, tail) = slot.split(rest, last, self.rest_ignored).ok_or(Mismatch::At(&slot.label, rest))?;
            *out = value;
            rest = tail;
        }
        let mut values = Values::default();
        for (slot, &value) in self.slots.iter().zip(raw.iter()) {
            values.take(&slot.field, value, self.escape).map_err(|why| Mismatch::Value(why.into()))?;
        }
        values.finish(number, self.method_recorded).map_err(Mismatch::Value)
    }
}

/// What follows a syslog header: RFC 3164's (`Feb  6 12:14:14 host haproxy[14389]: `, maybe
/// after a `<134>` priority), which ends at the program's `[pid]: `; RFC 5424's (`<134>1
/// 2026-11-26T10:52:58.655+00:00 host haproxy 14389 - - `), seven fields, the last the
/// structured data HAProxy writes as `-`; or a priority alone (HAProxy's `format short`).
/// The line itself if it has none.
fn after_syslog_header(line: &str) -> &str {
    let body = match line.strip_prefix('<').and_then(|l| l.split_once('>')) {
        Some((priority, rest)) if !priority.is_empty() && priority.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => line,
    };
    if let Some(rest) = body.strip_prefix("1 ") {
        return rest.splitn(7, ' ').nth(6).unwrap_or(body);
    }
    let head = body.find('"').map_or(body, |q| body.get(..q).unwrap_or(body));
    match head.find("]: ") {
        Some(i) => body.get(i + 3..).unwrap_or(body),
        None => body,
    }
}

impl Slot {
    /// This field's value at the start of `rest`, and what follows the text after it; `last`
    /// says it is the layout's last field, which runs to the end of the line unless the rest
    /// is ignored, when it ends at the next space.
    fn split<'a>(&self, rest: &'a str, last: bool, rest_ignored: bool) -> Option<(&'a str, &'a str)> {
        if last && rest_ignored {
            let end = match (self.quoted, self.after.is_empty()) {
                (true, _) => closing_quote(rest)?,
                (false, false) => rest.find(self.after.as_str())?,
                (false, true) => rest.find([' ', '\t']).unwrap_or(rest.len()),
            };
            let (value, tail) = rest.split_at_checked(end)?;
            let tail = tail.strip_prefix(self.after.as_str())?;
            return (tail.is_empty() || tail.starts_with([' ', '\t'])).then_some((value, ""));
        }
        if last {
            // Spaces at the end of a line are no part of any layout.
            let after = self.after.trim_end();
            let end = match self.quoted {
                true => closing_quote(rest)?,
                false => rest.trim_end().len().checked_sub(after.len())?,
            };
            let (value, tail) = rest.split_at_checked(end)?;
            return (tail.trim_end() == after).then_some((value, ""));
        }
        let end = if self.quoted {
            closing_quote(rest)?
        } else if self.pad > 0 {
            let value = rest.len() - rest.trim_start_matches(' ').len();
            let end = value + rest.get(value..)?.find(self.after.as_str())?;
            if end < usize::from(self.pad) {
                return None;
            }
            let (value, tail) = rest.split_at_checked(end)?;
            return Some((value.trim_start_matches(' '), tail.strip_prefix(self.after.as_str())?));
        } else if self.spaces > 0 && rest.strip_prefix('-').is_some_and(|r| r.starts_with(self.after.as_str())) {
            // A spaced field with no value: its spaces are not there to skip.
            1
        } else {
            let from = skip_spaces(rest, self.spaces);
            from + rest.get(from..)?.find(self.after.as_str())?
        };
        let (value, tail) = rest.split_at_checked(end)?;
        Some((value, tail.strip_prefix(self.after.as_str())?))
    }
}

/// Where the quoted value at the start of `s` ends: at its first quote not escaped by a
/// backslash (nginx writes a quote as `\x22`, Apache as `\"`).
fn closing_quote(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Where the search for a field's end starts: past the first `spaces` spaces of `s`.
fn skip_spaces(s: &str, spaces: u8) -> usize {
    let mut from = 0;
    for _ in 0..spaces {
        match s.get(from..).and_then(|r| r.find(' ')) {
            Some(i) => from += i + 1,
            None => break,
        }
    }
    from
}

/// The layout a log is written in, from its first bytes (`head`, maybe cut mid-line): a W3C
/// log by its `#Fields:` line; else the built-in layout that reads the most of the first
/// non-empty lines, a line that holds no request (a `-`, a TLS handshake) counting as read,
/// then the most records, then the first in [`PRESETS`]. Several lines, not the first alone:
/// a log may open with junk, and one line cannot tell combined from `combined+`.
pub fn detect(head: &str) -> Option<LogFormat> {
    let head = head.strip_prefix('\u{feff}').unwrap_or(head);
    let mut lines: Vec<&str> =
        head.split('\n').map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty()).collect();
    // A head cut mid-line ends in a piece of a line.
    if !head.ends_with('\n') && lines.len() > 1 {
        lines.pop();
    }
    lines.truncate(DETECT_LINES);
    if let Some(columns) = w3c::Columns::detect(&lines) {
        return Some(LogFormat { name: Name::Preset("w3c"), kind: Kind::W3c(columns) });
    }
    let mut best: Option<((usize, usize), LogFormat)> = None;
    for format in PRESETS.into_iter().filter_map(LogFormat::preset) {
        let (mut read, mut records) = (0, 0);
        for (i, line) in lines.iter().enumerate() {
            match format.record(line, i as u64 + 1) {
                Ok(_) => (read, records) = (read + 1, records + 1),
                Err(flaw) if flaw.kind != BadKind::Unmatched => read += 1,
                Err(_) => {}
            }
        }
        if read > 0 && best.as_ref().is_none_or(|(score, _)| (read, records) > *score) {
            best = Some(((read, records), format));
        }
    }
    best.map(|(_, format)| format)
}

/// Reads an access log in `layout`, a line at a time: each non-empty line is a record or a
/// bad record, given to `sink` until it breaks.
pub fn read(
    layout: &LogFormat,
    input: &mut dyn BufRead,
    sink: &mut dyn FnMut(Item) -> ControlFlow<()>,
) -> Result<(), ReadError> {
    let mut layout = layout.clone();
    let mut buf = Vec::new();
    let mut number = 0u64;
    loop {
        buf.clear();
        // Bounded, so a file with no newlines is not read whole into memory.
        if (&mut *input).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        number += 1;
        let item = if buf.len() > MAX_LINE_BYTES && !buf.ends_with(b"\n") {
            skip_line(input)?;
            Err(BadRecord::unmatched(number, format!("line longer than {MAX_LINE_BYTES} bytes")))
        } else {
            // A client can put any bytes in a log: show them as U+FFFD rather than lose the line.
            // `from_utf8` first: it checks ASCII a word at a time, the lossy walk a byte at a
            // time (a tenth of reading a combined log), and nearly every log is valid.
            let text = match std::str::from_utf8(&buf) {
                Ok(text) => std::borrow::Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(&buf),
            };
            let mut text = text.trim_end_matches(['\n', '\r']);
            if number == 1 {
                text = text.strip_prefix('\u{feff}').unwrap_or(text);
            }
            if text.trim().is_empty() || layout.directive(text) {
                continue;
            }
            // The last line of a file with no newline after it, in no layout: its writer
            // stopped mid-line.
            let cut = !buf.ends_with(b"\n");
            layout.record(text, number).map_err(|flaw| match flaw.kind {
                BadKind::Unmatched if cut && flaw.short => {
                    BadRecord::skipped(number, BadKind::Truncated, format!("cut off: {}", flaw.why))
                }
                BadKind::Unmatched => BadRecord::unmatched(number, flaw.why),
                kind => BadRecord::skipped(number, kind, flaw.why),
            })
        };
        if sink(item).is_break() {
            return Ok(());
        }
    }
}

/// Reads past the rest of the current line.
fn skip_line(input: &mut dyn BufRead) -> Result<(), ReadError> {
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = available.len();
                input.consume(n);
            }
        }
    }
}
