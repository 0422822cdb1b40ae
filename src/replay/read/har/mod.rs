//! HAR 1.2 (a browser's or a proxy's recording): each of `log.entries` becomes a [`Record`]
//! with the response recorded beside it.
//!
//! A capture can run to gigabytes, so the file is streamed: serde walks the top-level object
//! and `log` key by key (`entries` may come before or after `pages` and the rest) and hands
//! over `entries` one element at a time. Each entry is read into a JSON value first and only
//! then into the typed shape, so an entry that does not fit HAR is a [`BadRecord`] and the
//! next one is still read; JSON that does not parse ends the file as
//! [`ReadError::Malformed`], since nothing after a syntax error can be trusted.

use std::fmt;
use std::io::BufRead;
use std::ops::ControlFlow;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::time::rfc3339_us;
use super::{Item, ReadError};
use crate::replay::record::{BadRecord, Body, Record, Response};

#[cfg(test)]
mod tests;

/// Reads a HAR file, giving each entry to `sink` as soon as it is parsed.
pub fn read(input: &mut dyn BufRead, sink: &mut dyn FnMut(Item) -> ControlFlow<()>) -> Result<(), ReadError> {
    let mut walk = Walk { sink, entries: 0, saw_entries: false, stopped: false };
    let mut de = serde_json::Deserializer::from_reader(input);
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
        while let Some(value) = seq.next_element::<serde_json::Value>()? {
            self.0.entries += 1;
            let line = self.0.entries;
            let item = serde_json::from_value::<Entry>(value)
                .map_err(|e| e.to_string())
                .and_then(|entry| record(entry, line))
                .map_err(|why| BadRecord::unmatched(line, why));
            if (self.0.sink)(item).is_break() {
                self.0.stopped = true;
                return Err(de::Error::custom("the reader was stopped"));
            }
        }
        Ok(())
    }
}

/// One entry, as far as a replay needs it (timings, cache and `_`-prefixed fields are skipped).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    started_date_time: String,
    request: Request,
    #[serde(default)]
    response: Option<HarResponse>,
    /// Chromium writes the connection's id as a string; other writers use a port number.
    #[serde(default, deserialize_with = "text")]
    connection: Option<String>,
    #[serde(default)]
    pageref: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Field>,
    #[serde(default)]
    post_data: Option<PostData>,
    #[serde(default)]
    body_size: Option<i64>,
}

#[derive(Deserialize)]
struct Field {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    params: Vec<Param>,
}

#[derive(Deserialize)]
struct Param {
    name: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
struct HarResponse {
    status: i64,
    #[serde(default)]
    headers: Vec<Field>,
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    size: Option<i64>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
}

/// A string or a number, as text.
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::String(s) => Ok(Some(s)),
        serde_json::Value::Number(n) => Ok(Some(n.to_string())),
        other => Err(de::Error::custom(format!("expected a string or a number, found {other}"))),
    }
}

/// The record of entry number `line`.
fn record(entry: Entry, line: u64) -> Result<Record, String> {
    let start_us = rfc3339_us(&entry.started_date_time)
        .ok_or_else(|| format!("startedDateTime '{}' is not RFC 3339", entry.started_date_time))?;
    let request = entry.request;
    let body = request_body(request.post_data, request.body_size)?;
    let response = match entry.response {
        Some(r) => response(r)?,
        None => None,
    };
    Ok(Record {
        start_us,
        whole_second: false,
        method: request.method,
        target: request.url,
        headers: fields(request.headers),
        body,
        client: None,
        connection: entry.connection,
        session: entry.pageref,
        response,
        line,
    })
}

/// Header fields in order, less HTTP/2's pseudo-headers (`:path`…): the request line and the
/// URL already say what they say, and a replay over HTTP/1 must not send them.
fn fields(headers: Vec<Field>) -> Vec<(String, String)> {
    headers.into_iter().filter(|f| !f.name.starts_with(':')).map(|f| (f.name, f.value)).collect()
}

/// The request body: `postData.text` (base64 when `encoding` says so), else its `params`
/// url-encoded, else only `bodySize` when the body was sent but not kept.
fn request_body(post: Option<PostData>, body_size: Option<i64>) -> Result<Body, String> {
    let bytes = match post {
        Some(PostData { text: Some(text), encoding, .. }) if !text.is_empty() => {
            decoded(text, encoding.as_deref(), "request.postData")?
        }
        Some(PostData { params, .. }) => form_urlencoded(&params),
        None => Vec::new(),
    };
    Ok(match (bytes.is_empty(), body_size) {
        (false, _) => Body::Bytes(bytes),
        (true, Some(n)) if n > 0 => Body::Size(n.unsigned_abs()),
        (true, _) => Body::None,
    })
}

/// `text` as bytes: base64-decoded when `encoding` is `base64`, else as written.
fn decoded(text: String, encoding: Option<&str>, what: &str) -> Result<Vec<u8>, String> {
    match encoding {
        None | Some("") => Ok(text.into_bytes()),
        Some(e) if e.eq_ignore_ascii_case("base64") => {
            crate::b64::decode(&text).ok_or_else(|| format!("{what}.text is not base64"))
        }
        Some(other) => Err(format!("{what}.encoding '{other}' is not known")),
    }
}

/// Form parameters as `application/x-www-form-urlencoded` (HAR keeps them decoded).
fn form_urlencoded(params: &[Param]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        form_escape(&mut out, &p.name);
        if let Some(value) = &p.value {
            out.push(b'=');
            form_escape(&mut out, value);
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

/// The recorded response; `None` for status 0, which browsers write when no response came
/// (blocked, aborted, failed to connect).
fn response(r: HarResponse) -> Result<Option<Response>, String> {
    if r.status == 0 {
        return Ok(None);
    }
    let status = u16::try_from(r.status)
        .ok()
        .filter(|s| (100..=999).contains(s))
        .ok_or_else(|| format!("response.status {} is not an HTTP status", r.status))?;
    let body = match r.content {
        Some(Content { text: Some(text), encoding, .. }) if !text.is_empty() => {
            Body::Bytes(decoded(text, encoding.as_deref(), "response.content")?)
        }
        Some(Content { size: Some(n), .. }) if n > 0 => Body::Size(n.unsigned_abs()),
        _ => Body::None,
    };
    Ok(Some(Response { status, headers: fields(r.headers), body }))
}
