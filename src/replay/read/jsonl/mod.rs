//! JSON lines: one request per line, in vegeta's JSON target fields (`method`, `url`,
//! `header` as name → list of values, `body` in base64, as `workload::targets` reads them)
//! plus `"time"` and the optional `"session"`, `"connection"` and `"client"` keys.
//!
//! `time` is RFC 3339 or Unix seconds with a fraction, as a number or a string; a number is
//! read through its shortest decimal form, which keeps the microseconds of any time of this
//! era. `method` defaults to `GET`. Lines are read one at a time; a blank line is skipped, a
//! line that does not parse is a [`BadRecord`] naming what is wrong, and a file whose first
//! line is not a JSON object is not JSON lines at all ([`ReadError::Malformed`]).

use std::fmt;
use std::io::BufRead;
use std::ops::ControlFlow;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::time::{epoch_seconds_us, rfc3339_us};
use super::{Item, ReadError};
use crate::replay::record::{BadRecord, Body, Record};

#[cfg(test)]
mod tests;

/// Reads a JSON lines recording, a line at a time.
pub fn read(input: &mut dyn BufRead, sink: &mut dyn FnMut(Item) -> ControlFlow<()>) -> Result<(), ReadError> {
    let mut buf = Vec::new();
    let mut line = 0u64;
    let mut first = true;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        line += 1;
        let text = buf.trim_ascii();
        if text.is_empty() {
            continue;
        }
        if std::mem::take(&mut first) && text.first() != Some(&b'{') {
            return Err(ReadError::Malformed(format!("not JSON lines: line {line} is not a JSON object")));
        }
        let item = record(text, line).map_err(|why| BadRecord::unmatched(line, why));
        if sink(item).is_break() {
            return Ok(());
        }
    }
}

/// One line's fields.
#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    header: Headers,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    time: Option<Time>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    connection: Option<String>,
    #[serde(default)]
    client: Option<String>,
}

/// `"time"`: text (RFC 3339 or Unix seconds) or a number of Unix seconds.
#[derive(Deserialize)]
#[serde(untagged)]
enum Time {
    Text(String),
    Seconds(serde_json::Number),
}

/// vegeta's `header` object, each value a list, flattened to fields in the file's order
/// (a map type would sort the names).
#[derive(Default)]
struct Headers(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(HeadersVisitor)
    }
}

struct HeadersVisitor;

impl<'de> Visitor<'de> for HeadersVisitor {
    type Value = Headers;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of header names to lists of values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
        let mut fields = Vec::new();
        while let Some((name, values)) = map.next_entry::<String, Vec<String>>()? {
            fields.extend(values.into_iter().map(|value| (name.clone(), value)));
        }
        Ok(Headers(fields))
    }
}

/// The record of `text`, line `line`.
fn record(text: &[u8], line: u64) -> Result<Record, String> {
    let fields: Line = serde_json::from_slice(text).map_err(|e| format!("not a JSON target: {e}"))?;
    let start_us = match fields.time.ok_or("no time")? {
        Time::Text(t) => rfc3339_us(&t)
            .or_else(|| epoch_seconds_us(&t))
            .ok_or_else(|| format!("time '{t}' is neither RFC 3339 nor Unix seconds"))?,
        Time::Seconds(n) => epoch_seconds_us(&n.to_string()).ok_or_else(|| format!("time {n} is not Unix seconds"))?,
    };
    let target = fields.url.filter(|u| !u.is_empty()).ok_or("no url")?;
    let body = match fields.body.as_deref() {
        None | Some("") => Body::None,
        Some(b) => Body::Bytes(crate::b64::decode(b).ok_or("the body is not base64")?),
    };
    Ok(Record {
        start_us,
        whole_second: false,
        method: fields.method.filter(|m| !m.is_empty()).unwrap_or_else(|| "GET".into()),
        target,
        headers: fields.header.0,
        body,
        client: fields.client,
        connection: fields.connection,
        session: fields.session,
        response: None,
        line,
    })
}
