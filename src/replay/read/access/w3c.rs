//! W3C extended log files (the W3C working draft "Extended Log File Format"): `#` directives,
//! of which `#Fields:` names the columns of the lines after it, until the next `#Fields:` (IIS
//! writes the directives again when it restarts). Written by IIS (space-separated, a space in a
//! value written `+`, `time-taken` in milliseconds) and the AWS CloudFront standard log
//! (tab-separated, values URL-encoded, `time-taken` in seconds as the draft says).

use std::borrow::Cow;

use super::fields::{Escape, Field, Flaw, Span, Values, When};
use crate::replay::read::time::w3c_us;
use crate::replay::record::Record;

/// What a column holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Column {
    /// `date`, `YYYY-MM-DD` in UTC.
    Date,
    /// `time`, `HH:MM:SS` in UTC: when the transaction completed (the draft; CloudFront says so too).
    Time,
    /// A field read as a text layout's is.
    Value(Field),
    /// `cs(Name)`: a request header.
    Header(String),
}

/// A W3C log's columns, from its latest `#Fields:` line (none before the first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Columns {
    /// The columns, in order.
    columns: Vec<Column>,
    /// `#Software: Microsoft Internet Information Services`: `+` for a space, milliseconds.
    iis: bool,
    /// The date of a log without a `date` column (`#Date:`).
    date: Option<String>,
    /// There is a `cs-method` column (else every request is a GET).
    method_recorded: bool,
}

impl Columns {
    /// The columns of a log whose first lines are `lines`, if it is a W3C log (its `#Fields:`
    /// line comes before its first entry).
    pub(super) fn detect(lines: &[&str]) -> Option<Columns> {
        let mut columns = Columns::default();
        for line in lines.iter().take_while(|l| l.starts_with('#')) {
            columns.directive(line);
        }
        (!columns.columns.is_empty()).then_some(columns)
    }

    /// Reads a `#` directive: `#Fields:`, `#Software:` and `#Date:` change how the lines after
    /// it are read; the others (`#Version:`, `#Remark:`…) say nothing a replay needs.
    pub(super) fn directive(&mut self, line: &str) {
        let Some((name, value)) = line.strip_prefix('#').and_then(|l| l.split_once(':')) else { return };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "software" => self.iis = value.starts_with("Microsoft Internet Information Services"),
            "date" => self.date = value.split_whitespace().next().map(str::to_owned),
            "fields" => {
                let names: Vec<&str> = value.split_whitespace().collect();
                let viewer_host = names.iter().any(|n| n.eq_ignore_ascii_case("x-host-header"));
                self.columns = names.iter().map(|n| column(n, viewer_host)).collect();
                self.method_recorded = self.columns.contains(&Column::Value(Field::Method));
            }
            _ => {}
        }
    }

    /// The record an entry line holds, or why it has none.
    pub(super) fn record(&self, line: &str, number: u64) -> Result<Record, Flaw> {
        if self.columns.is_empty() {
            return Err("no #Fields: line before it".into());
        }
        let line = line.trim_end();
        // CloudFront separates with tabs, IIS with spaces (a value's own spaces written `+`).
        let separator = if line.contains('\t') { '\t' } else { ' ' };
        let count = line.split(separator).count();
        if count != self.columns.len() {
            let why = format!("{count} fields where #Fields: names {}", self.columns.len());
            return Err(if count < self.columns.len() { Flaw::short(why) } else { why.into() });
        }
        let (mut date, mut time) = (self.date.as_deref(), None);
        let mut values = Values::default();
        for (column, value) in self.columns.iter().zip(line.split(separator)) {
            match column {
                Column::Date => date = Some(value),
                Column::Time => time = Some(value),
                Column::Value(Field::Duration(_)) => {
                    let span = if self.iis { Span::Millis } else { Span::SecondsFraction };
                    values.take(&Field::Duration(span), value, Escape::None)?;
                }
                Column::Value(field) => values.take(field, value, Escape::None)?,
                Column::Header(_) if value == "-" => {}
                Column::Header(name) => values.header(name, &self.decode(value)),
            }
        }
        if let (Some(date), Some(time)) = (date, time) {
            let us = w3c_us(date, time).ok_or_else(|| format!("bad time {date:?} {time:?}"))?;
            values.stamp(us, !time.contains('.'), When::End);
        }
        values.finish(number, self.method_recorded)
    }

    /// A header's value as the client sent it: IIS writes a space as `+`, CloudFront
    /// URL-encodes (`%20`).
    fn decode<'a>(&self, value: &'a str) -> Cow<'a, str> {
        if self.iis {
            return if value.contains('+') { Cow::Owned(value.replace('+', " ")) } else { Cow::Borrowed(value) };
        }
        if !value.contains('%') {
            return Cow::Borrowed(value);
        }
        let b = value.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while let Some(&c) = b.get(i) {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(byte) if c == b'%' => {
                    out.push(byte);
                    i += 3;
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        Cow::Owned(String::from_utf8_lossy(&out).into_owned())
    }
}

/// What the column a `#Fields:` line names holds; `viewer_host` says there is CloudFront's
/// `x-host-header` (the Host the client sent), whose `cs(Host)` is the distribution's own name.
fn column(name: &str, viewer_host: bool) -> Column {
    let lower = name.to_ascii_lowercase();
    let field = match lower.as_str() {
        "date" => return Column::Date,
        "time" => return Column::Time,
        "time-taken" => Field::Duration(Span::Millis),
        "c-ip" => Field::Client,
        "cs-method" => Field::Method,
        "cs-uri-stem" => Field::Path,
        "cs-uri-query" => Field::Query,
        "cs-uri" => Field::Url,
        "sc-status" => Field::Status,
        "sc-bytes" => Field::MessageBytes,
        "cs-host" | "x-host-header" => Field::Host,
        "cs(host)" if viewer_host => Field::Opaque,
        "cs(content-length)" => Field::ContentLength,
        _ => match name.strip_prefix("cs(").and_then(|n| n.strip_suffix(')')) {
            Some(header) => return Column::Header(header.to_owned()),
            None => Field::Opaque,
        },
    };
    Column::Value(field)
}
