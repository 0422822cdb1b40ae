//! HAR 1.2 (a browser's or a proxy's recording): each of `log.entries` becomes a [`Record`]
//! with the response recorded beside it.
//!
//! A capture can run to gigabytes, so the file is streamed: serde walks the top-level object
//! and `log` key by key (`entries` may come before or after `pages` and the rest) and hands
//! over `entries` one element at a time. A UTF-8 byte-order mark is dropped and UTF-16 (with
//! its mark) is decoded as it streams ([`text`]). JSON that does not parse ends the file as
//! [`ReadError::Malformed`], since nothing after a syntax error can be trusted.
//!
//! Every tool writes HAR its own way, so each entry is read as a JSON value and its fields
//! leniently, wherever their meaning is still clear: a value that is not a string is its text
//! (a form parameter's object value, as WebPageTest and chrome-har write, is its JSON), a size
//! of -1 or of no number is "not known", `httpVersion`, `timings` and the other fields a replay
//! does not need are not looked at, and a status 0 or one that is no HTTP status is an entry
//! without a response. Entries out of order are given as they come (the walk puts them back in
//! time order). An entry that still has no time, method or URL, or a body whose encoding cannot
//! be undone, is skipped and counted as unreadable with its number and reason
//! ([`BadKind::Unreadable`]); the next one is still read.

use std::fmt;
use std::io::BufRead;
use std::ops::ControlFlow;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::time::rfc3339_us;
use super::{Item, ReadError};
use crate::replay::record::{BadKind, BadRecord, Body, Record, Response};

#[cfg(test)]
mod tests;
mod text;

pub(super) use text::utf8_head;

/// Reads a HAR file, giving each entry to `sink` as soon as it is parsed.
pub fn read(input: &mut dyn BufRead, sink: &mut dyn FnMut(Item) -> ControlFlow<()>) -> Result<(), ReadError> {
    let mut walk = Walk { sink, entries: 0, saw_entries: false, stopped: false };
    let mut input = text::utf8_reader(input)?;
    let mut de = serde_json::Deserializer::from_reader(&mut input);
    let parsed = FileSeed(&mut walk).deserialize(&mut de).and_then(|()| de.end());
    // A sink that breaks ends the walk with an error only to unwind serde; it is no failure.
    if walk.stopped {
        return Ok(());
    }
    match parsed {
        Err(e) if e.is_io() => Err(ReadError::Io(e.into())),
        Err(e) => Err(ReadError::Malformed(format!("not a HAR file: {e}"))),
        Ok(()) if !walk.saw_entries => Err(ReadError::Malformed("not a HAR file: no log.entries".into())),
        Ok(()) => Ok(()),
    }
}

/// What the walk over the file carries between the nested visitors.
struct Walk<'s> {
    /// Where each entry goes.
    sink: &'s mut dyn FnMut(Item) -> ControlFlow<()>,
    /// Entries read so far (the next one's number minus one).
    entries: u64,
    /// Whether `log.entries` was found.
    saw_entries: bool,
    /// Whether the sink asked to stop.
    stopped: bool,
}

/// The top-level object: only `log` is looked into.
struct FileSeed<'w, 's>(&'w mut Walk<'s>);

impl<'de> DeserializeSeed<'de> for FileSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FileSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a HAR object with a \"log\"")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "log" {
                map.next_value_seed(LogSeed(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The `log` object: only `entries` is looked into; `pages`, `creator`… are skipped unread.
struct LogSeed<'w, 's>(&'w mut Walk<'s>);

impl<'de> DeserializeSeed<'de> for LogSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LogSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a HAR log object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "entries" {
                self.0.saw_entries = true;
                map.next_value_seed(EntriesSeed(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The `entries` array, handed to the sink one entry at a time.
struct EntriesSeed<'w, 's>(&'w mut Walk<'s>);

impl<'de> DeserializeSeed<'de> for EntriesSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EntriesSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of HAR entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(value) = seq.next_element::<Value>()? {
            self.0.entries += 1;
            let line = self.0.entries;
            let item = record(&value, line).map_err(|why| BadRecord::skipped(line, BadKind::Unreadable, why));
            if (self.0.sink)(item).is_break() {
                self.0.stopped = true;
                return Err(de::Error::custom("the reader was stopped"));
            }
        }
        Ok(())
    }
}

/// A field's value as text: a string as it is, a number or a boolean as written, an object
/// or a list as its JSON text, keys in order of name (WebPageTest and chrome-har write a JSON
/// body's parameters as objects); `None` for null or nothing.
fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A size: a whole number of bytes, or `None` for HAR's -1 ("not known") and anything that is
/// no size at all.
fn size(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => {
            n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as u64))
        }
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A `headers` list as (name, value) pairs, in order: an item without a name is left out, a
/// value that is not a string is its text (null is empty).
fn fields(v: Option<&Value>) -> Vec<(String, String)> {
    let Some(Value::Array(list)) = v else { return Vec::new() };
    list.iter()
        .filter_map(|f| Some((text(f.get("name"))?, text(f.get("value")).unwrap_or_default())))
        .filter(|(name, _)| !name.is_empty())
        .collect()
}

/// The record of entry number `line`; the reason it cannot be read otherwise.
fn record(entry: &Value, line: u64) -> Result<Record, String> {
    if !entry.is_object() {
        return Err("the entry is not an object".into());
    }
    let started = text(entry.get("startedDateTime")).ok_or("no startedDateTime")?;
    let start_us = rfc3339_us(&started).ok_or_else(|| format!("startedDateTime '{started}' is not RFC 3339"))?;
    let request = entry.get("request").filter(|r| r.is_object()).ok_or("no request object")?;
    let (method, target, headers) = request_line(request)?;
    let body = request_body(request.get("postData"), size(request.get("bodySize")))?;
    Ok(Record {
        start_us,
        whole_second: false,
        method,
        target,
        headers,
        body,
        client: None,
        // Chromium writes the connection's id as a string; other writers use a port number.
        connection: text(entry.get("connection")).filter(|c| !c.is_empty()),
        session: text(entry.get("pageref")).filter(|p| !p.is_empty()),
        response: entry.get("response").and_then(response),
        line,
    })
}

/// A request's method, target and header fields.
type RequestLine = (String, String, Vec<(String, String)>);

/// The method, the target and the header fields of `request`. HTTP/2 and HTTP/3 captures list
/// the pseudo-header fields among the headers: `:method`, `:scheme`, `:authority` and
/// `:path` are the request line's parts (and win over `method` and `url`, as they are what was
/// sent), and no pseudo-header is kept as a field, since a replay over HTTP/1 must not send
/// one. A target without a scheme and an authority keeps `:authority` as its Host.
fn request_line(request: &Value) -> Result<RequestLine, String> {
    let mut method = text(request.get("method")).unwrap_or_default().trim().to_string();
    let url = text(request.get("url")).unwrap_or_default();
    let (mut scheme, mut authority, mut path) = split_url(url.trim());
    let mut headers = Vec::new();
    let mut host_at = None;
    for (name, value) in fields(request.get("headers")) {
        match name.as_str() {
            ":method" => method = value,
            ":scheme" => scheme = Some(value),
            ":authority" => {
                host_at = Some(headers.len());
                authority = Some(value);
            }
            ":path" => path = value,
            n if n.starts_with(':') => {}
            _ => headers.push((name, value)),
        }
    }
    if method.is_empty() {
        return Err("request has no method".into());
    }
    let target = match (scheme, authority) {
        (Some(s), Some(a)) if !s.is_empty() && !a.is_empty() => format!("{s}://{a}{path}"),
        (_, authority) => {
            let has_host = headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host"));
            if let (Some(a), false) = (authority.filter(|a| !a.is_empty()), has_host) {
                headers.insert(host_at.unwrap_or(0), ("Host".into(), a));
            }
            path
        }
    };
    if target.is_empty() {
        return Err("request has no url".into());
    }
    Ok((method, target, headers))
}

/// An URL's scheme, authority, and the rest (path, query, fragment); a URL that is no
/// absolute one is all path.
fn split_url(url: &str) -> (Option<String>, Option<String>, String) {
    let Some((scheme, rest)) = url.split_once("://") else { return (None, None, url.to_string()) };
    if scheme.is_empty() || !scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) {
        return (None, None, url.to_string());
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    (Some(scheme.to_string()), Some(authority.to_string()), path.to_string())
}

/// The request body: `postData.text` (base64 when `encoding` says so), else its `params`
/// url-encoded (the HAR spec keeps them for url-encoded forms, decoded), else only
/// `bodySize` when the body was sent but not kept.
fn request_body(post: Option<&Value>, body_size: Option<u64>) -> Result<Body, String> {
    let bytes = match post {
        Some(post) => match text(post.get("text")).filter(|t| !t.is_empty()) {
            Some(t) => decoded(t, text(post.get("encoding")).as_deref(), "request.postData")?,
            None => form_urlencoded(post.get("params")),
        },
        None => Vec::new(),
    };
    Ok(match (bytes.is_empty(), body_size) {
        (false, _) => Body::Bytes(bytes),
        (true, Some(n)) if n > 0 => Body::Size(n),
        (true, _) => Body::None,
    })
}

/// `text` as bytes: base64-decoded when `encoding` is `base64`, else as written.
fn decoded(text: String, encoding: Option<&str>, what: &str) -> Result<Vec<u8>, String> {
    match encoding.map(str::trim) {
        None | Some("") => Ok(text.into_bytes()),
        Some(e) if e.eq_ignore_ascii_case("base64") => {
            crate::b64::decode(&text).ok_or_else(|| format!("{what}.text is not base64"))
        }
        Some(other) => Err(format!("{what}.encoding '{other}' is not known")),
    }
}

/// Form parameters as `application/x-www-form-urlencoded`: each `name`, and `=value` when it
/// has one (a value that is not a string is its text, an object its JSON).
fn form_urlencoded(params: Option<&Value>) -> Vec<u8> {
    let Some(Value::Array(params)) = params else { return Vec::new() };
    let mut out = Vec::new();
    for p in params {
        let Some(name) = text(p.get("name")) else { continue };
        if !out.is_empty() {
            out.push(b'&');
        }
        form_escape(&mut out, &name);
        if let Some(value) = text(p.get("value")) {
            out.push(b'=');
            form_escape(&mut out, &value);
        }
    }
    out
}

/// Appends `s` escaped as the URL standard's form serializer does: `*-._` and alphanumerics
/// as they are, a space as `+`, every other byte as `%XX`.
fn form_escape(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(b),
            b' ' => out.push(b'+'),
            _ => out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]),
        }
    }
}

/// The recorded response, for `strain origin --replay`; `None` when there was none: status 0
/// (what browsers write for a request blocked, aborted or never answered), or a status that
/// is no HTTP status. A body whose text cannot be decoded is kept by its size, as one the
/// capture did not keep.
fn response(r: &Value) -> Option<Response> {
    let status = match r.get("status")? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    let status = status.and_then(|s| u16::try_from(s).ok()).filter(|s| (100..=999).contains(s))?;
    let content = r.get("content");
    let kept = content.and_then(|c| {
        let t = text(c.get("text")).filter(|t| !t.is_empty())?;
        decoded(t, text(c.get("encoding")).as_deref(), "response.content").ok()
    });
    let body = match (kept, content.and_then(|c| size(c.get("size")))) {
        (Some(bytes), _) => Body::Bytes(bytes),
        (None, Some(n)) if n > 0 => Body::Size(n),
        _ => Body::None,
    };
    let headers = fields(r.get("headers")).into_iter().filter(|(n, _)| !n.starts_with(':')).collect();
    Some(Response { status, headers, body })
}
