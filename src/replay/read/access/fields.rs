//! What each field of a log line means, and how a line's values become one [`Record`]: the
//! three dialects ([`super::dialect`]) name their fields differently but mean the same few
//! things, so the values are gathered into [`Values`] and turned into a record once.

use std::borrow::Cow;

use crate::replay::read::time::{clf_time, days_from_civil, epoch_seconds_us, rfc3339_us};
use crate::replay::record::{BadKind, Body, Record, Response};

/// The longest field value an error message quotes, in characters.
const QUOTE_CHARS: usize = 40;

/// Why a line gives no record: it is in no layout ([`BadKind::Unmatched`]), or it is in the
/// layout but holds no request to send (a `-`, a TLS handshake, a scanner's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Flaw {
    /// What kind of flaw.
    pub(super) kind: BadKind,
    /// Why, in a few words.
    pub(super) why: String,
    /// The line ended before its layout did: cut off, if it is the file's last.
    pub(super) short: bool,
}

impl From<String> for Flaw {
    fn from(why: String) -> Flaw {
        Flaw { kind: BadKind::Unmatched, why, short: false }
    }
}

impl From<&str> for Flaw {
    fn from(why: &str) -> Flaw {
        Flaw::from(why.to_owned())
    }
}

impl Flaw {
    /// A line in its layout with no request in it, for `kind`'s reason.
    pub(super) fn skipped(kind: BadKind, why: impl Into<String>) -> Flaw {
        Flaw { kind, why: why.into(), short: false }
    }

    /// A line in no layout that ended before its layout did.
    pub(super) fn short(why: impl Into<String>) -> Flaw {
        Flaw { kind: BadKind::Unmatched, why: why.into(), short: true }
    }
}

/// How a layout's writer escapes bytes in its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Escape {
    /// Backslash escapes (`\xHH`, `\"`): nginx, Apache. A quoted field ends at its first bare quote.
    Backslash,
    /// HAProxy's `#HH` (a `"` or `#` in a value is always written so).
    Hash,
    /// None: ATS, Envoy and the AWS load balancers write values as they are.
    None,
}

/// What a field of the layout holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Field {
    /// A field replay has no use for (`$remote_user`, `%l`, `crc`…): matched, then dropped.
    Opaque,
    /// A point in time, and whether it is when the request started or ended.
    Time(Clock, When),
    /// The sub-second part of a whole-second time (Apache `%{msec_frac}t`), times this many µs.
    Fraction(i64),
    /// How long the request took.
    Duration(Span),
    /// The request line (`GET /p?q HTTP/1.1`).
    RequestLine,
    /// The method.
    Method,
    /// The target as the client sent it (nginx `$request_uri`).
    RequestUri,
    /// The path without the query (`$uri`, `%U`, `cqup`).
    Path,
    /// The query, with its `?` (Apache `%q`) or without (nginx `$args`).
    Query,
    /// nginx `$uri$is_args$args` written together: a path and its query.
    PathQuery,
    /// A URL that may be absolute (ATS `pquc`).
    Url,
    /// The host the request was for, when it is not the Host header itself (`$host`, `%v`).
    Host,
    /// A request header.
    Header(String),
    /// The request's Content-Length (`$content_length`, `%{Content-Length}i`, `cqcl`).
    ContentLength,
    /// The client's address.
    Client,
    /// The client's address and port, `address:port` (IPv6 too: split at the last colon).
    ClientPort,
    /// The connection's id (nginx `$connection`).
    Connection,
    /// The response status.
    Status,
    /// The response body's size.
    BodyBytes,
    /// The response's size with its headers (ATS `psql`), used when the body's is not recorded.
    MessageBytes,
}

/// How a time is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Clock {
    /// `26/Nov/2026:10:52:58 +0000`, brackets allowed.
    Clf,
    /// RFC 3339 / ISO 8601 (`2026-11-26T10:52:58+00:00`).
    Iso8601,
    /// Unix seconds, whole.
    Seconds,
    /// Unix seconds with a fraction (`1795690378.123`).
    SecondsFraction,
    /// Unix milliseconds.
    Millis,
    /// Unix microseconds.
    Micros,
    /// Unix seconds in hexadecimal (ATS `cqth`).
    HexSeconds,
    /// An Apache `%{format}t` strftime format.
    Strftime(String),
}

/// Which end of the request a time marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum When {
    /// When the request arrived.
    Start,
    /// When the response was done (nginx writes its line then).
    End,
}

/// How a duration is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Span {
    /// Seconds with a fraction (nginx `$request_time`, ATS `ttmsf`).
    SecondsFraction,
    /// Whole seconds (Apache `%T`).
    Seconds,
    /// Milliseconds (ATS `ttms`, Apache `%{ms}T`).
    Millis,
    /// Milliseconds in hexadecimal (ATS `ttmsh`).
    HexMillis,
    /// Microseconds (Apache `%D`).
    Micros,
}

/// A time read from a line.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    us: i64,
    whole_second: bool,
    when: When,
}

impl Stamp {
    /// How good a time it is for a replay: a finer one first, then a start over an end (the
    /// end less a duration is a start only as well as both were measured).
    fn rank(&self) -> (bool, bool) {
        (!self.whole_second, self.when == When::Start)
    }
}

/// One line's field values, gathered in layout order, before they make a record.
#[derive(Debug, Default)]
pub(super) struct Values<'a> {
    time: Option<Stamp>,
    fraction_us: Option<i64>,
    duration_us: Option<i64>,
    request_line: Option<Cow<'a, str>>,
    /// The layout's request field was there, written as nothing (`-`, `""`).
    no_request: bool,
    method: Option<Cow<'a, str>>,
    request_uri: Option<Cow<'a, str>>,
    path: Option<Cow<'a, str>>,
    query: Option<Cow<'a, str>>,
    url: Option<Cow<'a, str>>,
    host: Option<Cow<'a, str>>,
    headers: Vec<(String, String)>,
    content_length: Option<u64>,
    client: Option<Cow<'a, str>>,
    connection: Option<Cow<'a, str>>,
    status: Option<u16>,
    body_bytes: Option<u64>,
    message_bytes: Option<u64>,
}

impl<'a> Values<'a> {
    /// Takes one field's value as written, escaped the layout's way.
    pub(super) fn take(&mut self, field: &Field, raw: &'a str, escape: Escape) -> Result<(), String> {
        if matches!(field, Field::Opaque) {
            return Ok(());
        }
        let value = match escape {
            Escape::Backslash => unescape(raw),
            Escape::Hash => unescape_hash(raw),
            Escape::None => Cow::Borrowed(raw),
        };
        // A `-` is how every dialect writes "no value"; Apache's `%q` writes nothing instead.
        if value == "-" || value.is_empty() {
            self.no_request |= matches!(field, Field::RequestLine | Field::RequestUri | Field::Url);
            return Ok(());
        }
        match field {
            Field::Opaque => {}
            Field::Time(clock, when) => {
                let (us, whole_second) = clock.parse(&value).ok_or_else(|| format!("bad time {}", quote(&value)))?;
                self.stamp(us, whole_second, *when);
            }
            Field::Fraction(scale_us) => {
                let n = digits(&value).ok_or_else(|| format!("bad time fraction {}", quote(&value)))?;
                self.fraction_us = i64::try_from(n).ok().and_then(|n| n.checked_mul(*scale_us));
            }
            Field::Duration(span) => {
                let us = span.parse(&value).ok_or_else(|| format!("bad duration {}", quote(&value)))?;
                self.duration_us.get_or_insert(us);
            }
            Field::RequestLine => self.request_line = Some(value),
            Field::Method => self.method = Some(value),
            Field::RequestUri => self.request_uri = Some(value),
            Field::Path | Field::PathQuery => self.path = Some(value),
            Field::Query => self.query = Some(value),
            Field::Url => self.url = Some(value),
            Field::Host => self.host = Some(value),
            Field::Header(name) => self.headers.push((name.clone(), value.into_owned())),
            Field::ContentLength => {
                self.content_length =
                    Some(digits(&value).ok_or_else(|| format!("bad content length {}", quote(&value)))?)
            }
            Field::Client => self.client = Some(value),
            Field::ClientPort => {
                let address = match value.rsplit_once(':') {
                    Some((address, port)) if port.bytes().all(|b| b.is_ascii_digit()) => address,
                    _ => &value,
                };
                let address = address.trim_start_matches('[').trim_end_matches(']');
                self.client = Some(Cow::Owned(address.to_owned()));
            }
            Field::Connection => self.connection = Some(value),
            // HAProxy's `-1`: no response came.
            Field::Status if value == "-1" => {}
            Field::Status => {
                let status = digits(&value).and_then(|n| u16::try_from(n).ok());
                self.status = Some(status.ok_or_else(|| format!("bad status {}", quote(&value)))?);
            }
            Field::BodyBytes | Field::MessageBytes => {
                let n = digits(&value).ok_or_else(|| format!("bad size {}", quote(&value)))?;
                if *field == Field::BodyBytes {
                    self.body_bytes = Some(n);
                } else {
                    self.message_bytes = Some(n);
                }
            }
        }
        Ok(())
    }

    /// A time read apart from a field (W3C's date and time columns); of two times, the better
    /// for a replay is kept (see [`Stamp::rank`]).
    pub(super) fn stamp(&mut self, us: i64, whole_second: bool, when: When) {
        let stamp = Stamp { us, whole_second, when };
        if self.time.is_none_or(|t| t.rank() < stamp.rank()) {
            self.time = Some(stamp);
        }
    }

    /// How long the request took, in µs (a JSON log's number).
    pub(super) fn duration(&mut self, us: i64) {
        self.duration_us.get_or_insert(us);
    }

    /// The response's status and body size (a JSON log's numbers).
    pub(super) fn response(&mut self, status: Option<u16>, body_bytes: Option<u64>) {
        self.status = status.or(self.status);
        self.body_bytes = body_bytes.or(self.body_bytes);
    }

    /// A request header, as recorded.
    pub(super) fn header(&mut self, name: &str, value: &str) {
        self.headers.push((name.to_owned(), value.to_owned()));
    }

    /// The record the values make; `method_recorded` says the layout has a method or request line
    /// (without one, every request is a GET).
    pub(super) fn finish(self, line: u64, method_recorded: bool) -> Result<Record, Flaw> {
        let stamp = self.time.ok_or("no time")?;
        let (mut start_us, mut whole_second) = (stamp.us, stamp.whole_second);
        if let (Some(frac), true) = (self.fraction_us, whole_second) {
            start_us = start_us.saturating_add(frac);
            whole_second = false;
        }
        // A line written when the request ended: its start is the end less the duration (with no
        // duration recorded, the end is the best start there is).
        if let (When::End, Some(duration)) = (stamp.when, self.duration_us) {
            start_us = start_us.saturating_sub(duration);
        }
        let requested = match &self.request_line {
            Some(line) => Some(split_request_line(line)?),
            None => None,
        };
        let method = match (self.method.as_deref(), requested) {
            (Some(m), _) | (None, Some((m, _))) => m.to_owned(),
            (None, None) if !method_recorded => "GET".to_owned(),
            (None, None) => return Err(Flaw::skipped(BadKind::NoRequest, "no request (-)")),
        };
        let target = match self.target(requested.map(|(_, t)| t)) {
            Some(target) => target,
            None if self.no_request || method_recorded => {
                return Err(Flaw::skipped(BadKind::NoRequest, "no request target (-)"))
            }
            None => return Err("no request target".into()),
        };
        let mut headers = self.headers;
        if let Some(host) = self.host {
            if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
                headers.insert(0, ("Host".to_owned(), host.into_owned()));
            }
        }
        let body = sized(self.content_length);
        // ATS logs status 0 for a transaction that never got a response (the client went away).
        let response = self.status.filter(|&s| s != 0).map(|status| Response {
            status,
            headers: vec![],
            body: sized(self.body_bytes.or(self.message_bytes)),
        });
        Ok(Record {
            start_us,
            whole_second,
            method,
            target,
            headers,
            body,
            client: self.client.map(Cow::into_owned),
            connection: self.connection.map(Cow::into_owned),
            session: None,
            response,
            line,
        })
    }

    /// The target: as sent (`$request_uri`, the request line) over the path rebuilt from its parts
    /// over a URL, so a target is origin-form unless only an absolute URL was recorded.
    fn target(&self, from_line: Option<&str>) -> Option<String> {
        if let Some(uri) = self.request_uri.as_deref().or(from_line) {
            return Some(uri.to_owned());
        }
        if let Some(path) = self.path.as_deref() {
            // ATS writes a path without its leading slash.
            let slash = if path.starts_with('/') { "" } else { "/" };
            let query = self.query.as_deref().map(|q| q.strip_prefix('?').unwrap_or(q));
            return Some(match query {
                Some(query) if !query.is_empty() => format!("{slash}{path}?{query}"),
                _ => format!("{slash}{path}"),
            });
        }
        self.url.as_deref().map(str::to_owned)
    }
}

impl Clock {
    /// Microseconds since the epoch of a value written this way, and whether it was written to
    /// the whole second only (a CLF or ISO 8601 time may have a fraction: HAProxy's `%tr`,
    /// Envoy's `%START_TIME%`, the AWS load balancers').
    fn parse(&self, value: &str) -> Option<(i64, bool)> {
        Some(match self {
            Clock::Clf => clf_time(value)?,
            Clock::Iso8601 => (rfc3339_us(value)?, !value.contains('.')),
            Clock::Seconds => (epoch_seconds_us(value)?, true),
            Clock::SecondsFraction => (epoch_seconds_us(value)?, false),
            Clock::Millis => (i64::try_from(digits(value)?).ok()?.checked_mul(1000)?, false),
            Clock::Micros => (i64::try_from(digits(value)?).ok()?, false),
            Clock::HexSeconds => (hex(value)?.checked_mul(1_000_000)?, true),
            Clock::Strftime(format) => (strftime_us(format, value)?, true),
        })
    }
}

impl Span {
    /// Microseconds of a duration written this way.
    fn parse(self, value: &str) -> Option<i64> {
        match self {
            Span::SecondsFraction => epoch_seconds_us(value),
            Span::Seconds => i64::try_from(digits(value)?).ok()?.checked_mul(1_000_000),
            Span::Millis => i64::try_from(digits(value)?).ok()?.checked_mul(1000),
            Span::HexMillis => hex(value)?.checked_mul(1000),
            Span::Micros => i64::try_from(digits(value)?).ok(),
        }
    }
}

/// A recorded size as a body: only its size is known, and nothing is no body.
fn sized(bytes: Option<u64>) -> Body {
    match bytes {
        Some(n) if n > 0 => Body::Size(n),
        _ => Body::None,
    }
}

/// The method and target of `METHOD TARGET HTTP/x.y` (RFC 9112's request line; HTTP/0.9's
/// `GET /path` too). Anything else was no HTTP request (a TLS handshake or a scanner's bytes on
/// a plain port, junk the server logged as `\xHH`); `- - -` (Envoy, the AWS load balancers)
/// and nothing at all are no request.
pub(super) fn split_request_line(line: &str) -> Result<(&str, &str), Flaw> {
    // Stops at the first byte of any real request: a log's every line comes here.
    if line.bytes().all(|b| b == b' ' || b == b'-') {
        return Err(Flaw::skipped(BadKind::NoRequest, "no request (-)"));
    }
    let not_http = || Flaw::skipped(BadKind::NotHttp, format!("not an HTTP request line: {}", quote(line)));
    let (method, rest) = line.split_once(' ').ok_or_else(not_http)?;
    let (target, version) = match rest.rsplit_once(' ') {
        Some((target, version)) => (target, Some(version)),
        None => (rest, None),
    };
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    let version_ok = match version {
        Some(v) => v.strip_prefix("HTTP/").is_some_and(|n| {
            n.bytes().next().is_some_and(|b| b.is_ascii_digit()) && n.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        }),
        // HTTP/0.9 had GET alone, and no version.
        None => method == "GET",
    };
    // RFC 9112's four forms of the target: origin (`/p`), absolute (`http://h/p`), authority
    // (`host:port`, CONNECT's) and asterisk (`*`, OPTIONS's); none holds a space or a control.
    let target_ok = !target.is_empty()
        && !target.bytes().any(|b| b <= b' ' || b == 0x7f)
        && (target.starts_with('/')
            || target == "*"
            || method == "CONNECT"
            || target.split_once("://").is_some_and(|(scheme, _)| {
                !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
            }));
    if method.is_empty() || !method.bytes().all(token) || !version_ok || !target_ok {
        return Err(not_http());
    }
    Ok((method, target))
}

/// A value shortened and quoted for an error message.
pub(super) fn quote(value: &str) -> String {
    let mut shown: String = value.chars().take(QUOTE_CHARS).collect();
    if shown.len() < value.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

/// The digits of `s` as a number (all of `s` must be ASCII digits).
pub(super) fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The hexadecimal digits of `s` as a number.
fn hex(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    i64::from_str_radix(s, 16).ok()
}

/// A value with nginx's and Apache's escapes undone: `\xHH` (nginx writes `"` as `\x22`, and
/// every byte outside ASCII this way), `\"`, `\\`, `\n`-style controls and JSON's `\uHHHH`.
/// The bytes are read back as UTF-8, lossily: a log may hold any bytes a client sent.
pub(super) fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('\\') {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let (bytes, used): (Vec<u8>, usize) = match b.get(i + 1) {
            Some(b'x') => match b.get(i + 2..i + 4).and_then(hex_bytes) {
                Some(n) => (vec![n as u8], 4),
                None => (vec![c], 1),
            },
            Some(b'u') => match b.get(i + 2..i + 6).and_then(hex_bytes).and_then(char::from_u32) {
                Some(ch) => (ch.to_string().into_bytes(), 6),
                None => (vec![c], 1),
            },
            Some(&e @ (b'"' | b'\\' | b'/')) => (vec![e], 2),
            Some(b'n') => (vec![b'\n'], 2),
            Some(b't') => (vec![b'\t'], 2),
            Some(b'r') => (vec![b'\r'], 2),
            Some(b'b') => (vec![0x08], 2),
            Some(b'f') => (vec![0x0c], 2),
            Some(b'v') => (vec![0x0b], 2),
            _ => (vec![c], 1),
        };
        out.extend_from_slice(&bytes);
        i += used;
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// A value with HAProxy's `#HH` escapes undone (it writes `"`, `#` and bytes outside
/// printable ASCII so in a request line and captured headers).
pub(super) fn unescape_hash(s: &str) -> Cow<'_, str> {
    if !s.contains('#') {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match b.get(i + 1..i + 3).and_then(hex_bytes) {
            Some(n) if c == b'#' => {
                out.push(n as u8);
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

/// Hexadecimal digits (all of them) as a number.
fn hex_bytes(b: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(b).ok()?;
    u32::from_str_radix(s, 16).ok().filter(|_| b.iter().all(u8::is_ascii_hexdigit))
}

/// The strftime conversions `%{format}t` may use here; `%e`, `%c` and the like pad with
/// spaces or depend on the locale, so a line could not be split on them.
const STRFTIME: &[u8] = b"YmdHMSbhzyTFs%";

/// The spaces a time in strftime `format` contains, or why the format cannot be read back.
pub(super) fn strftime_spaces(format: &str) -> Result<u8, String> {
    let mut spaces = 0u8;
    let mut chars = format.bytes();
    while let Some(c) = chars.next() {
        match c {
            b' ' => spaces = spaces.saturating_add(1),
            b'%' => match chars.next() {
                Some(conv) if STRFTIME.contains(&conv) => {}
                Some(conv) => {
                    return Err(format!(
                        "strftime conversion %{} in %{{{format}}}t cannot be read back (use %Y %m %d %H %M %S %b %z %T %F %s)",
                        char::from(conv)
                    ))
                }
                None => return Err(format!("%{{{format}}}t ends in a lone %")),
            },
            _ => {}
        }
    }
    Ok(spaces)
}

/// Microseconds since the epoch of `value` written with strftime `format` (UTC unless the
/// format has `%z`: a server's local zone is not in its log).
fn strftime_us(format: &str, value: &str) -> Option<i64> {
    let (mut year, mut month, mut day, mut h, mut m, mut s) = (1970i64, 1u32, 1u32, 0u32, 0u32, 0u32);
    let (mut offset_s, mut epoch) = (0i64, None);
    let mut v = value.as_bytes();
    let mut f = format.as_bytes();
    while let Some((&c, rest)) = f.split_first() {
        f = rest;
        if c != b'%' {
            v = v.strip_prefix(&[c])?;
            continue;
        }
        let (&conv, rest) = f.split_first()?;
        f = rest;
        match conv {
            b'Y' => year = i64::from(take_num(&mut v, 4)?),
            b'y' => year = 2000 + i64::from(take_num(&mut v, 2)?),
            b'm' => month = take_num(&mut v, 2)?,
            b'd' => day = take_num(&mut v, 2)?,
            b'H' => h = take_num(&mut v, 2)?,
            b'M' => m = take_num(&mut v, 2)?,
            b'S' => s = take_num(&mut v, 2)?,
            b'T' => (h, m, s) = (take_num(&mut v, 2)?, colon(&mut v, 2)?, colon(&mut v, 2)?),
            b'F' => {
                year = i64::from(take_num(&mut v, 4)?);
                (month, day) = (dash(&mut v)?, dash(&mut v)?);
            }
            b'b' | b'h' => {
                let (name, rest) = v.split_at_checked(3)?;
                let index = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(name))?;
                month = u32::try_from(index).ok()? + 1;
                v = rest;
            }
            b'z' => {
                let sign = match v.first()? {
                    b'+' => 1,
                    b'-' => -1,
                    _ => return None,
                };
                v = v.get(1..)?;
                let hhmm = take_num(&mut v, 4)?;
                offset_s = sign * i64::from(hhmm / 100 * 3600 + hhmm % 100 * 60);
            }
            b's' => epoch = Some(i64::from(take_num(&mut v, 12)?)),
            b'%' => v = v.strip_prefix(b"%")?,
            _ => return None,
        }
    }
    if !v.is_empty() {
        return None;
    }
    if let Some(secs) = epoch {
        return secs.checked_mul(1_000_000);
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + i64::from(h * 3600 + m * 60 + s) - offset_s;
    secs.checked_mul(1_000_000)
}

/// strftime's `%b`, in the C locale servers log in.
const MONTHS: [&[u8]; 12] =
    [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];

/// Up to `max` leading digits of `v` (at least one) as a number, consumed.
fn take_num(v: &mut &[u8], max: usize) -> Option<u32> {
    let n = v.iter().take(max).take_while(|b| b.is_ascii_digit()).count();
    let (num, rest) = v.split_at_checked(n)?;
    let value = std::str::from_utf8(num).ok()?.parse().ok()?;
    *v = rest;
    Some(value)
}

/// `:` then a number of up to `max` digits.
fn colon(v: &mut &[u8], max: usize) -> Option<u32> {
    *v = v.strip_prefix(b":")?;
    take_num(v, max)
}

/// `-` then a two-digit number.
fn dash(v: &mut &[u8]) -> Option<u32> {
    *v = v.strip_prefix(b"-")?;
    take_num(v, 2)
}
