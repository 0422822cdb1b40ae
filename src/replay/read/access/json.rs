//! JSON access logs, one object a line: Caddy's (`"logger":"http.log.access"`, the request as
//! an object) and Traefik's (`"RequestMethod"`, `"RequestPath"`, `"StartUTC"`…). Each line's
//! values go through [`Values`] as a text layout's do, so a record means the same whatever
//! wrote it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::fields::{quote, Escape, Field, Flaw, Values, When};
use crate::replay::read::time::rfc3339_us;
use crate::replay::record::{BadKind, Record};

/// How Caddy and Traefik write a header value they were told to leave out of the log (Caddy's
/// Cookie and Authorization unless `log_credentials`; Traefik's `redact` mode): it is not the
/// value the client sent, so it is not sent again.
const REDACTED: &str = "REDACTED";

/// Which server's JSON a log holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Schema {
    /// Caddy's `log` directive, `format json` (its default).
    Caddy,
    /// Traefik's access log, `format: json`.
    Traefik,
}

impl Schema {
    /// The record `line` holds, or why it has none.
    pub(super) fn record(self, line: &str, number: u64) -> Result<Record, Flaw> {
        match self {
            Schema::Caddy => caddy(line, number),
            Schema::Traefik => traefik(line, number),
        }
    }
}

/// One line of Caddy's log (zap's JSON encoder): `ts` is when the entry was written, the
/// response done, and `duration` how long the request took, in seconds (Caddy's default
/// `duration_format`).
#[derive(Deserialize)]
struct CaddyLine<'a> {
    #[serde(borrow)]
    logger: Option<Cow<'a, str>>,
    ts: Option<Value>,
    #[serde(borrow)]
    request: Option<CaddyRequest<'a>>,
    duration: Option<f64>,
    status: Option<u64>,
    size: Option<u64>,
}

/// Caddy's `request` object.
#[derive(Deserialize)]
struct CaddyRequest<'a> {
    #[serde(borrow)]
    remote_ip: Option<Cow<'a, str>>,
    #[serde(borrow)]
    client_ip: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    host: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
    headers: Option<Headers>,
}

/// Go's `http.Header` as JSON (`{"Name": ["value", …]}`), in the order written.
struct Headers(Vec<(String, Vec<String>)>);

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Headers, D::Error> {
        /// Reads the object's members in order.
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of header fields")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
                let mut out = Vec::new();
                while let Some((name, values)) = map.next_entry::<String, OneOrMany>()? {
                    out.push((name, values.0));
                }
                Ok(Headers(out))
            }
        }
        d.deserialize_map(Members)
    }
}

/// A header's values: an array of strings, or one string.
struct OneOrMany(Vec<String>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OneOrMany, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => OneOrMany(vec![s]),
            Value::Array(items) => OneOrMany(items.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()),
            _ => OneOrMany(vec![]),
        })
    }
}

/// A Caddy log line: an access entry is a record; an entry of another logger (Caddy writes its
/// own messages to the same output unless told otherwise) holds no request.
fn caddy(line: &str, number: u64) -> Result<Record, Flaw> {
    let entry: CaddyLine = serde_json::from_str(line).map_err(not_json)?;
    let logger = entry.logger.as_deref().ok_or("not a Caddy log entry (no \"logger\")")?;
    let Some(request) = entry.request.as_ref().filter(|_| logger.starts_with("http.log.access")) else {
        return Err(Flaw::skipped(BadKind::NoRequest, format!("no request (a {} entry)", quote(logger))));
    };
    let mut values = Values::default();
    let end_us = match &entry.ts {
        Some(Value::Number(n)) => n.as_f64().and_then(seconds_us),
        Some(Value::String(s)) => rfc3339_us(s),
        _ => None,
    };
    let end_us = end_us.ok_or_else(|| format!("bad time {}", quote(&entry.ts.unwrap_or(Value::Null).to_string())))?;
    values.stamp(end_us, false, When::End);
    if let Some(us) = entry.duration.and_then(seconds_us) {
        values.duration(us);
    }
    let text = [
        (Field::Method, &request.method),
        (Field::RequestUri, &request.uri),
        (Field::Host, &request.host),
        (Field::Client, if request.client_ip.is_some() { &request.client_ip } else { &request.remote_ip }),
    ];
    for (field, value) in &text {
        if let Some(value) = value {
            values.take(field, value, Escape::None)?;
        }
    }
    if let Some(Headers(headers)) = &request.headers {
        for (name, list) in headers {
            for value in list.iter().filter(|v| *v != REDACTED) {
                header(&mut values, name, value)?;
            }
        }
    }
    numbers(&mut values, entry.status, entry.size)?;
    values.finish(number, true)
}

/// A header field, or the body's size when it is Content-Length.
fn header<'a>(values: &mut Values<'a>, name: &str, value: &'a str) -> Result<(), String> {
    if name.eq_ignore_ascii_case("content-length") {
        values.take(&Field::ContentLength, value, Escape::None)
    } else {
        values.header(name, value);
        Ok(())
    }
}

/// The status and the response body's size.
fn numbers(values: &mut Values, status: Option<u64>, size: Option<u64>) -> Result<(), String> {
    let status = status.map(|s| u16::try_from(s).map_err(|_| format!("bad status {s}"))).transpose()?;
    values.response(status, size);
    Ok(())
}

/// Why a line is not a JSON object; one that ends mid-object is short (cut off, if last).
fn not_json(e: serde_json::Error) -> Flaw {
    let why = format!("not a JSON object: {e}");
    if e.is_eof() {
        Flaw::short(why)
    } else {
        why.into()
    }
}

/// Seconds as a float, in microseconds.
fn seconds_us(s: f64) -> Option<i64> {
    let us = (s * 1e6).round();
    (us.is_finite() && us.abs() < 9.0e18).then_some(us as i64)
}

/// A Traefik access log line (its documentation's "JSON format" fields): `StartUTC` is when
/// the request started, `RequestPath` the target as sent, headers kept in the log are
/// `request_<Name>`. A JSON object without Traefik's start time is not in its layout.
fn traefik(line: &str, number: u64) -> Result<Record, Flaw> {
    let entry: serde_json::Map<String, Value> = serde_json::from_str(line).map_err(not_json)?;
    let str_of = |key: &str| entry.get(key).and_then(Value::as_str);
    let start = str_of("StartUTC")
        .or_else(|| str_of("StartLocal"))
        .ok_or("not a Traefik access log entry (no \"StartUTC\")")?;
    let start_us = rfc3339_us(start).ok_or_else(|| format!("bad time {}", quote(start)))?;
    let mut values = Values::default();
    values.stamp(start_us, !start.contains('.'), When::Start);
    for (field, key) in [
        (Field::Method, "RequestMethod"),
        (Field::RequestUri, "RequestPath"),
        (Field::Host, "RequestHost"),
        (Field::Client, "ClientHost"),
    ] {
        if let Some(value) = str_of(key) {
            values.take(&field, value, Escape::None)?;
        }
    }
    for (key, value) in &entry {
        if let (Some(name), Some(value)) = (key.strip_prefix("request_"), value.as_str()) {
            if value != REDACTED {
                header(&mut values, name, value)?;
            }
        }
    }
    let number_of = |key: &str| entry.get(key).and_then(Value::as_u64);
    numbers(&mut values, number_of("DownstreamStatus"), number_of("DownstreamContentSize"))?;
    // `Duration` is in nanoseconds; with the start recorded, it is not needed for the time.
    if let Some(ns) = number_of("Duration") {
        values.duration(i64::try_from(ns / 1000).unwrap_or(i64::MAX));
    }
    values.finish(number, true)
}
