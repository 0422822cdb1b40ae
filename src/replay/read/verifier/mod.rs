//! Proxy Verifier replay files (YAML, or JSON as Traffic Dump writes them): each transaction's
//! `client-request` becomes a [`Record`], its `server-response` the recorded response.
//!
//! A replay file holds one or a few sessions and is read whole: YAML cannot be streamed by
//! serde, and these files are small. A file starting with `{` is parsed as JSON, anything
//! else as YAML (with `serde_norway`, the maintained fork of the deprecated `serde_yaml`).
//!
//! What is taken from each transaction, as Proxy Verifier's client and server use it:
//! - method and target from `method` and `url`, or for HTTP/2 and HTTP/3 from the `:method`,
//!   `:scheme`, `:authority` and `:path` pseudo-header fields (an absolute URL when scheme and
//!   authority are both there). Pseudo-headers are not kept as fields; every other field is,
//!   in order, `uuid` included, since that is how a response is matched to its request later.
//! - the body from `content`: `data` (`plain`, or `uri` percent-encoded) as bytes, only `size`
//!   as [`Body::Size`]; when `content` gives no body, a `Content-Length` field gives its size,
//!   as Proxy Verifier sizes the body it generates. The same is read from `frames` (`HEADERS` and
//!   `DATA`) when a message is written as frames.
//! - the status from `status` or the `:status` field.
//!
//! Timing: a transaction starts at its `start-time`, in nanoseconds since the epoch (the key
//! `connection-time`, which Proxy Verifier's client also reads, is taken when there is no
//! `start-time`). Without one, it starts at its session's `start-time` or `connection-time`:
//! the transactions of a session keep their file order, and the session key keeps them on
//! one connection. Without either, it starts [`UNTIMED_SPACING_US`] after the record before
//! it in the file (the first at 0), which spaces a file with no times evenly in file order,
//! as Proxy Verifier spaces untimed transactions evenly for `--rate`.
//!
//! The session key is the session's 1-based index in the file as a string (the format names
//! no session); `line` is the transaction's 1-based number across the whole file.

use std::fmt;
use std::io::BufRead;
use std::ops::ControlFlow;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{Item, ReadError};
use crate::replay::record::{BadRecord, Body, Record, Response};

#[cfg(test)]
mod tests;

/// The gap between transactions that have no time of their own nor their session's.
pub const UNTIMED_SPACING_US: i64 = 1_000;

/// Reads a Proxy Verifier replay file, giving each transaction to `sink` in file order.
pub fn read(input: &mut dyn BufRead, sink: &mut dyn FnMut(Item) -> ControlFlow<()>) -> Result<(), ReadError> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| ReadError::Malformed(format!("not a Proxy Verifier replay file: not UTF-8 ({e})")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text)
            .map_err(|e| ReadError::Malformed(format!("not a Proxy Verifier replay file: {e}")))?
    } else {
        serde_saphyr::from_str(text)
            .map_err(|e| ReadError::Malformed(format!("not a Proxy Verifier replay file: {e}")))?
    };
    let Value::Object(mut top) = doc else {
        return Err(ReadError::Malformed("not a Proxy Verifier replay file: not a map".into()));
    };
    let Some(Value::Array(sessions)) = top.remove("sessions") else {
        return Err(ReadError::Malformed("not a Proxy Verifier replay file: no sessions list".into()));
    };
    let mut walk = Walk { sink, number: 0, last_us: None };
    for (index, session) in sessions.into_iter().enumerate() {
        if walk.session(index + 1, session).is_break() {
            break;
        }
    }
    Ok(())
}

/// The reader's place in the file.
struct Walk<'s> {
    /// Where each transaction goes.
    sink: &'s mut dyn FnMut(Item) -> ControlFlow<()>,
    /// Transactions read so far (the next one's `line` minus one).
    number: u64,
    /// The start of the last record given, for spacing untimed transactions after it.
    last_us: Option<i64>,
}

impl Walk<'_> {
    /// Gives session number `index`'s transactions to the sink.
    fn session(&mut self, index: usize, session: Value) -> ControlFlow<()> {
        let key = index.to_string();
        let Value::Object(mut session) = session else {
            return self.bad(format!("session {key} is not a map"));
        };
        let Some(Value::Array(transactions)) = session.remove("transactions") else {
            return self.bad(format!("session {key} has no transactions list"));
        };
        let session_us = start_us(session.get("start-time"), session.get("connection-time"))
            .map_err(|why| format!("session {key}: {why}"));
        for txn in transactions {
            self.number += 1;
            let line = self.number;
            let item = serde_json::from_value::<Transaction>(txn)
                .map_err(|e| format!("not a transaction: {e}"))
                .and_then(|t| self.record(t, &key, &session_us, line))
                .map_err(|why| BadRecord::unmatched(line, why));
            if let Ok(r) = &item {
                self.last_us = Some(r.start_us);
            }
            (self.sink)(item)?;
        }
        ControlFlow::Continue(())
    }

    /// A bad record for something that is not a transaction, numbered as the next one would be.
    fn bad(&mut self, why: String) -> ControlFlow<()> {
        (self.sink)(Err(BadRecord::unmatched(self.number + 1, why)))
    }

    /// The record of one transaction of session `key`.
    fn record(
        &self,
        txn: Transaction,
        key: &str,
        session_us: &Result<Option<i64>, String>,
        line: u64,
    ) -> Result<Record, String> {
        let own_us = start_us(txn.start_time.as_ref(), txn.connection_time.as_ref())?;
        let start_us = match (own_us, session_us.clone()?, self.last_us) {
            (Some(t), _, _) | (None, Some(t), _) => t,
            (None, None, Some(last)) => last.saturating_add(UNTIMED_SPACING_US),
            (None, None, None) => 0,
        };
        let request = txn.client_request.ok_or("no client-request")?;
        let parts = Parts::of(request).map_err(|why| format!("client-request: {why}"))?;
        let method = parts.method.ok_or("client-request has no method")?;
        let target = parts.target.ok_or("client-request has no url")?;
        let response = match txn.server_response {
            Some(message) => Some(response(message).map_err(|why| format!("server-response: {why}"))?),
            None => None,
        };
        Ok(Record {
            start_us,
            whole_second: false,
            method,
            target,
            headers: parts.fields,
            body: parts.body,
            client: None,
            connection: None,
            session: Some(key.to_string()),
            response,
            line,
        })
    }
}

/// A `start-time` (else `connection-time`) in nanoseconds, as microseconds since the epoch.
fn start_us(start: Option<&Value>, connection: Option<&Value>) -> Result<Option<i64>, String> {
    let (name, value) = match (start, connection) {
        (Some(v), _) if !v.is_null() => ("start-time", v),
        (_, Some(v)) if !v.is_null() => ("connection-time", v),
        _ => return Ok(None),
    };
    let ns = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    let ns = ns.ok_or_else(|| format!("{name} {value} is not a count of nanoseconds"))?;
    // u64 nanoseconds / 1000 always fits an i64 of microseconds.
    Ok(Some(i64::try_from(ns / 1_000).unwrap_or(i64::MAX)))
}

/// One transaction, as far as a replay needs it (`proxy-request`, `proxy-response` and the
/// verification rules in them are skipped).
#[derive(Deserialize)]
struct Transaction {
    #[serde(rename = "client-request", default)]
    client_request: Option<Message>,
    #[serde(rename = "server-response", default)]
    server_response: Option<Message>,
    #[serde(rename = "start-time", default)]
    start_time: Option<Value>,
    #[serde(rename = "connection-time", default)]
    connection_time: Option<Value>,
}

/// A request or a response node.
#[derive(Deserialize, Default)]
struct Message {
    #[serde(default)]
    method: Option<Scalar>,
    #[serde(default)]
    url: Option<Scalar>,
    #[serde(default)]
    status: Option<Scalar>,
    #[serde(default)]
    headers: Option<Fields>,
    #[serde(default)]
    content: Option<Content>,
    /// HTTP/2 and HTTP/3 messages may be written as frames, each a one-key map
    /// (`HEADERS`, `DATA`, `RST_STREAM`, `GOAWAY`).
    #[serde(default)]
    frames: Vec<std::collections::BTreeMap<String, Frame>>,
}

/// A frame's body: `HEADERS` has `headers`, `DATA` has `content`, others neither.
#[derive(Deserialize, Default)]
struct Frame {
    #[serde(default)]
    headers: Option<Fields>,
    #[serde(default)]
    content: Option<Content>,
}

/// `headers:` with its `fields` list of `[name, value]` pairs.
#[derive(Deserialize)]
struct Fields {
    #[serde(default)]
    fields: Vec<(Scalar, Scalar)>,
}

/// `content:`: the bytes (`data`, in `encoding`) or only their `size`.
#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    data: Option<Scalar>,
    #[serde(default)]
    size: Option<Scalar>,
}

/// A YAML scalar as its text: YAML reads `[uuid, 1]` or `[:status, 200]` as numbers, and
/// Proxy Verifier takes every scalar as text.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl Visitor<'_> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a number")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }
}

/// What a message says once its pseudo-headers, frames and `Content-Length` are resolved.
struct Parts {
    method: Option<String>,
    target: Option<String>,
    status: Option<String>,
    fields: Vec<(String, String)>,
    body: Body,
}

impl Parts {
    /// Resolves `message`.
    fn of(message: Message) -> Result<Parts, String> {
        let mut all = message.headers.map(|h| h.fields).unwrap_or_default();
        let mut contents: Vec<Content> = message.content.into_iter().collect();
        for frame in message.frames.into_iter().flat_map(|f| f.into_values()) {
            all.extend(frame.headers.into_iter().flat_map(|h| h.fields));
            contents.extend(frame.content);
        }
        let (mut method, mut scheme, mut authority, mut path, mut status) = (None, None, None, None, None);
        let mut fields = Vec::with_capacity(all.len());
        for (Scalar(name), Scalar(value)) in all {
            let slot = match name.as_str() {
                ":method" => &mut method,
                ":scheme" => &mut scheme,
                ":authority" => &mut authority,
                ":path" => &mut path,
                ":status" => &mut status,
                n if n.starts_with(':') => continue,
                _ => {
                    fields.push((name, value));
                    continue;
                }
            };
            *slot = Some(value);
        }
        let target = match (message.url, scheme, authority, path) {
            (Some(Scalar(url)), ..) => Some(url),
            (None, Some(s), Some(a), Some(p)) => Some(format!("{s}://{a}{p}")),
            (None, _, _, path) => path,
        };
        let mut body = body(contents)?;
        if body == Body::None {
            // Proxy Verifier generates a body of the Content-Length when no content is given.
            let length = fields.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-length"));
            if let Some(n) = length.and_then(|(_, v)| v.trim().parse::<u64>().ok()).filter(|&n| n > 0) {
                body = Body::Size(n);
            }
        }
        Ok(Parts {
            method: message.method.map(|m| m.0).or(method),
            target,
            status: message.status.map(|s| s.0).or(status),
            fields,
            body,
        })
    }
}

/// The body of `contents` (one `content` node, or one per `DATA` frame): the bytes when every
/// part has them, else the total size; an empty body is [`Body::None`].
fn body(contents: Vec<Content>) -> Result<Body, String> {
    let mut bytes = Vec::new();
    let mut size_only = false;
    let mut size: u64 = 0;
    for c in contents {
        match (c.data, c.size) {
            (Some(Scalar(data)), _) => {
                let part = match c.encoding.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    None | Some("plain") | Some("esc_json") => data.into_bytes(),
                    Some("uri") => percent_decoded(&data),
                    Some(other) => return Err(format!("content encoding '{other}' is not known")),
                };
                size = size.saturating_add(part.len() as u64);
                bytes.extend(part);
            }
            (None, Some(Scalar(n))) => {
                let n: u64 = n.trim().parse().map_err(|_| format!("content size '{n}' is not a number"))?;
                size = size.saturating_add(n);
                size_only = true;
            }
            (None, None) => {}
        }
    }
    Ok(match (size, size_only) {
        (0, _) => Body::None,
        (n, true) => Body::Size(n),
        (_, false) => Body::Bytes(bytes),
    })
}

/// `%XX` escapes decoded (Proxy Verifier's `uri` encoding); a `%` not followed by two hex
/// digits stays as it is.
fn percent_decoded(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |at: usize| b.get(at).and_then(|&c| char::from(c).to_digit(16));
        match (b[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                // Two hex digits make at most 0xFF.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(u8::MAX));
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The recorded response of a `server-response` node.
fn response(message: Message) -> Result<Response, String> {
    let parts = Parts::of(message)?;
    let text = parts.status.ok_or("no status")?;
    let status = text
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|s| (100..=999).contains(s))
        .ok_or_else(|| format!("status '{text}' is not an HTTP status"))?;
    Ok(Response { status, headers: parts.fields, body: parts.body })
}
