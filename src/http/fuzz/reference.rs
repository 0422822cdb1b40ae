//! The second, independent parser the fuzzers compare strain's against.
//!
//! Written to be obviously right rather than fast: it sees a connection's whole input at once
//! (the peer closed after the last byte), splits heads into lines, checks each line against
//! the RFC 9110/9112 grammar, and frames bodies by RFC 9112 6.3 in its order. It shares no code
//! with strain's parsers (no httparse, no state machine), only the limits, which are part of
//! what strain promises. Where strain deliberately accepts more than the grammar, the rule is
//! copied here with its reason, so every other disagreement is a bug on one side:
//! - empty lines before a start line are skipped (RFC 9112 2.2, robustness);
//! - a line may end in a bare LF (RFC 9112 2.2);
//! - a request target may hold UTF-8 (httparse takes it; nothing here depends on the target);
//! - a status line may omit the reason phrase and its space;
//! - chunk extensions and trailer lines are skipped unread.

use crate::http::body::{MAX_CHUNK_LINE, MAX_TRAILERS};
use crate::http::{MAX_HEADERS, MAX_HEAD_BYTES};

/// How a whole input ended for the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Every message is complete (bytes after one that closes the connection are ignored).
    Clean,
    /// The input stops inside a message valid so far; `in_head` while its head is unfinished.
    Partial { in_head: bool },
    /// A message is malformed; `head_unfinished` when its head had not ended, so a parser that
    /// waits for the end of a head before judging it has not seen the fault yet.
    Invalid { head_unfinished: bool },
}

/// One header field, owned.
pub(crate) type Field = (Vec<u8>, Vec<u8>);

/// A framed response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Response {
    pub status: u16,
    pub keep_alive: bool,
    /// Offset in the input just after the response.
    pub end: usize,
    pub fields: Vec<Field>,
    /// The body without transfer framing.
    pub body: Vec<u8>,
}

/// What a server owes a request stream, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// `100 Continue` before the body of a request that expects it.
    Continue,
    /// The answer to a complete request; `persist` 0 keep-alive, 1 HTTP/1.0 keep-alive, 2 close.
    Answer { persist: u8, head_only: bool },
    /// `400 Bad Request`, after which the connection closes.
    Bad,
}

/// Frames a response stream answering requests that were all HEAD (`head_request`) or not.
pub(crate) fn responses(input: &[u8], head_request: bool) -> (Vec<Response>, End) {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        if pos == input.len() {
            return (out, End::Clean);
        }
        let (head, (version, status)) = match head(&input[pos..], status_line) {
            Ok(parsed) => parsed,
            Err(end) => return (out, end),
        };
        // Both framings "ought to be handled as an error" (RFC 9112 6.3); a client has no
        // reason to take the risk.
        let Some(f) = framing(&head.fields).filter(|f| !f.both) else {
            return (out, End::Invalid { head_unfinished: false });
        };
        let body_at = pos + head.len;
        if (100..200).contains(&status) && status != 101 {
            // Interim: no body, the final response follows.
            pos = body_at;
            continue;
        }
        let rest = &input[body_at..];
        let body = if head_request || matches!(status, 101 | 204 | 304) {
            Body::Done(0, Vec::new())
        } else if let Some(chunked) = f.chunked {
            if chunked {
                dechunk(rest)
            } else {
                Body::UntilClose
            }
        } else if let Some(n) = f.length {
            if rest.len() as u64 >= n {
                Body::Done(n as usize, rest[..n as usize].to_vec())
            } else {
                Body::Partial
            }
        } else {
            Body::UntilClose
        };
        let mut keep_alive = !f.close && (version == 1 || f.keep_alive) && status != 101;
        let (len, body) = match body {
            Body::Done(len, content) => (len, content),
            // The input ends where the server closed.
            Body::UntilClose => {
                keep_alive = false;
                (rest.len(), rest.to_vec())
            }
            Body::Partial => return (out, End::Partial { in_head: false }),
            Body::Invalid => return (out, End::Invalid { head_unfinished: false }),
        };
        pos = body_at + len;
        let fields = head.fields.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
        out.push(Response { status, keep_alive, end: pos, fields, body });
        if !keep_alive {
            return (out, End::Clean);
        }
    }
}

/// What a server owes the request stream `input`.
pub(crate) fn requests(input: &[u8]) -> (Vec<Event>, End) {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        if pos == input.len() {
            return (out, End::Clean);
        }
        let (head, (method, version)) = match head(&input[pos..], request_line) {
            Ok(parsed) => parsed,
            Err(end) => {
                if let End::Invalid { .. } = end {
                    out.push(Event::Bad);
                }
                return (out, end);
            }
        };
        let bad = |mut out: Vec<Event>| {
            out.push(Event::Bad);
            (out, End::Invalid { head_unfinished: false })
        };
        let Some(f) = framing(&head.fields) else { return bad(out) };
        let rest = &input[pos + head.len..];
        let (body, empty) = match (f.chunked, f.length) {
            // A request whose length cannot be known is refused (RFC 9112 6.3).
            (Some(false), _) => return bad(out),
            (Some(true), _) => (dechunk(rest), false),
            (None, Some(n)) if rest.len() as u64 >= n => (Body::Done(n as usize, Vec::new()), n == 0),
            (None, Some(_)) => (Body::Partial, false),
            (None, None) => (Body::Done(0, Vec::new()), true),
        };
        if version == 1 && !empty && f.expect_continue {
            out.push(Event::Continue);
        }
        let len = match body {
            Body::Done(len, _) => len,
            Body::Partial => return (out, End::Partial { in_head: false }),
            Body::Invalid | Body::UntilClose => return bad(out),
        };
        let persist = if f.close || f.both || (version == 0 && !f.keep_alive) {
            2
        } else if version == 0 {
            1
        } else {
            0
        };
        out.push(Event::Answer { persist, head_only: method == b"HEAD" });
        if persist == 2 {
            return (out, End::Clean);
        }
        pos += head.len + len;
    }
}

/// A head cut into its fields.
struct Head<'a> {
    fields: Vec<(&'a [u8], &'a [u8])>,
    /// Bytes from the message's first byte to just after the blank line.
    len: usize,
}

/// Splits the head at the front of `input`; `start_line` reads its first line.
fn head<'a, T>(input: &'a [u8], start_line: fn(&'a [u8]) -> Option<T>) -> Result<(Head<'a>, T), End> {
    let mut lines = Vec::new();
    let mut pos = 0;
    let mut ended = false;
    while let Some(n) = input[pos..].iter().position(|&b| b == b'\n') {
        let raw = &input[pos..pos + n];
        pos += n + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.is_empty() {
            if lines.is_empty() {
                continue;
            }
            ended = true;
            break;
        }
        lines.push(line);
    }
    let invalid = Err(End::Invalid { head_unfinished: !ended });
    let size = if ended { pos } else { input.len() };
    if size > MAX_HEAD_BYTES || lines.len() > MAX_HEADERS + 1 {
        return invalid;
    }
    if lines.iter().any(|l| l.contains(&b'\r')) {
        return invalid;
    }
    let Some((&start, field_lines)) = lines.split_first() else {
        // Only empty lines so far.
        return Err(End::Partial { in_head: true });
    };
    let Some(started) = start_line(start) else { return invalid };
    let mut fields = Vec::new();
    for line in field_lines {
        match field(line) {
            Some(f) => fields.push(f),
            None => return invalid,
        }
    }
    if !ended {
        // The last, unfinished line is not judged: strain's parser may refuse it already.
        return Err(End::Partial { in_head: true });
    }
    Ok((Head { fields, len: pos }, started))
}

/// RFC 9110 5.6.2 token characters.
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `HTTP/1.x SP 3DIGIT [SP reason]`: the minor version and the status code.
fn status_line(line: &[u8]) -> Option<(u8, u16)> {
    let rest = line.strip_prefix(b"HTTP/1.")?;
    let (&minor, rest) = rest.split_first()?;
    let version = match minor {
        b'0' => 0,
        b'1' => 1,
        _ => return None,
    };
    let rest = rest.strip_prefix(b" ")?;
    if rest.len() < 3 || !rest[..3].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let status = rest[..3].iter().fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    let reason_ok = match &rest[3..] {
        [] => true,
        [b' ', reason @ ..] => {
            reason.iter().all(|&b| b == b'\t' || b == b' ' || (0x21..=0x7e).contains(&b) || b >= 0x80)
        }
        _ => false,
    };
    reason_ok.then_some((version, status))
}

/// `method SP target SP HTTP/1.x`: the method and the minor version.
fn request_line(line: &[u8]) -> Option<(&[u8], u8)> {
    let mut parts = line.splitn(3, |&b| b == b' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if method.is_empty() || !method.iter().all(|&b| tchar(b)) {
        return None;
    }
    let target_ok = |b: u8| (0x21..=0x7e).contains(&b) || b >= 0x80;
    if target.is_empty() || !target.iter().all(|&b| target_ok(b)) || std::str::from_utf8(target).is_err() {
        return None;
    }
    match version {
        b"HTTP/1.0" => Some((method, 0)),
        b"HTTP/1.1" => Some((method, 1)),
        _ => None,
    }
}

/// `name ":" OWS value OWS`, the value trimmed.
fn field(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&b| b == b':')?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| tchar(b)) {
        return None;
    }
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    let value = &value[start..end];
    value.iter().all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b) || b >= 0x80).then_some((name, value))
}

/// What the fields say about framing and the connection.
struct Fields {
    /// The agreed Content-Length.
    length: Option<u64>,
    /// With Transfer-Encoding: whether its final coding is chunked.
    chunked: Option<bool>,
    /// Both Transfer-Encoding and Content-Length.
    both: bool,
    close: bool,
    keep_alive: bool,
    expect_continue: bool,
}

/// Reads the framing fields; `None` when Content-Length is invalid.
fn framing(fields: &[(&[u8], &[u8])]) -> Option<Fields> {
    let named =
        |name: &'static str| fields.iter().filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|f| f.1);
    let mut length = None;
    for value in named("content-length") {
        if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = std::str::from_utf8(value).ok()?.parse::<u64>().ok()?;
        if length.is_some_and(|m| m != n) {
            return None;
        }
        length = Some(n);
    }
    let list = |name: &'static str| -> Vec<Vec<u8>> {
        named(name)
            .flat_map(|v| v.split(|&b| b == b','))
            .map(|t| t.trim_ascii().to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect()
    };
    let codings = list("transfer-encoding");
    let has_te = named("transfer-encoding").next().is_some();
    let chunked = has_te.then(|| codings.last().is_some_and(|c| c == b"chunked"));
    let connection = list("connection");
    Some(Fields {
        length,
        chunked,
        both: has_te && length.is_some(),
        close: connection.iter().any(|t| t == b"close"),
        keep_alive: connection.iter().any(|t| t == b"keep-alive"),
        expect_continue: named("expect").any(|v| v.eq_ignore_ascii_case(b"100-continue")),
    })
}

/// A body's extent in the bytes after its head.
enum Body {
    /// Complete: its length on the wire and its content.
    Done(usize, Vec<u8>),
    /// Runs to the end of the input.
    UntilClose,
    Partial,
    Invalid,
}

/// Decodes a chunked body at the front of `input`.
fn dechunk(input: &[u8]) -> Body {
    let mut content = Vec::new();
    let mut pos = 0;
    loop {
        let Some(n) = input[pos..].iter().position(|&b| b == b'\n') else {
            return if size_line(&input[pos..], false).is_some() { Body::Partial } else { Body::Invalid };
        };
        let Some(size) = size_line(&input[pos..pos + n], true) else { return Body::Invalid };
        pos += n + 1;
        if size == 0 {
            break;
        }
        if ((input.len() - pos) as u64) < size {
            return Body::Partial;
        }
        content.extend_from_slice(&input[pos..pos + size as usize]);
        pos += size as usize;
        match &input[pos..] {
            [b'\n', ..] => pos += 1,
            [b'\r', b'\n', ..] => pos += 2,
            [] | [b'\r'] => return Body::Partial,
            _ => return Body::Invalid,
        }
    }
    // The trailer section: lines up to an empty one, at most MAX_TRAILERS bytes in all.
    let start = pos;
    loop {
        let Some(n) = input[pos..].iter().position(|&b| b == b'\n') else {
            let tail = &input[pos..];
            let tail = tail.strip_suffix(b"\r").unwrap_or(tail);
            let fits = input.len() - start <= MAX_TRAILERS as usize;
            return if fits && !tail.contains(&b'\r') { Body::Partial } else { Body::Invalid };
        };
        let raw = &input[pos..pos + n];
        pos += n + 1;
        if pos - start > MAX_TRAILERS as usize {
            return Body::Invalid;
        }
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.contains(&b'\r') {
            return Body::Invalid;
        }
        if line.is_empty() {
            return Body::Done(pos, content);
        }
    }
}

/// A chunk-size line without its LF (`complete`) or the start of one: its size when valid so
/// far. The size is 1 to 16 hex digits; then whitespace, and an extension after `;`.
fn size_line(line: &[u8], complete: bool) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return (!complete && line.is_empty()).then_some(0);
    }
    if digits > 16 || line.len() - digits > MAX_CHUNK_LINE as usize {
        return None;
    }
    let size = u64::from_str_radix(std::str::from_utf8(&line[..digits]).ok()?, 16).ok()?;
    let rest = &line[digits..];
    let rest = rest.strip_suffix(b"\r").unwrap_or(rest);
    if rest.contains(&b'\r') {
        return None;
    }
    let ws = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    (rest[ws..].is_empty() || rest[ws] == b';').then_some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_frames_known_streams() {
        // Table rows: input, HEAD, statuses, end.
        let rows: &[(&[u8], bool, &[u16], End)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 204 No\r\n\r\n", false, &[200, 204], End::Clean),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", false, &[200], End::Clean),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhi", false, &[], End::Partial { in_head: false }),
            (b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", false, &[], End::Invalid { head_unfinished: false }),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 6\r\nhello\r\n0\r\n\r\n", false, &[], End::Invalid { head_unfinished: false }),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc", false, &[200], End::Clean),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n0\r\n\r\n", false, &[], End::Invalid { head_unfinished: false }),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true, &[200], End::Clean),
            (b"HTTP/1.1 2", false, &[], End::Partial { in_head: true }),
        ];
        for (input, head, statuses, end) in rows {
            let (got, got_end) = responses(input, *head);
            let got: Vec<u16> = got.iter().map(|r| r.status).collect();
            assert_eq!((&got[..], got_end), (*statuses, *end), "{}", String::from_utf8_lossy(input));
        }
        let (events, end) =
            requests(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nxHEAD / HTTP/1.0\r\n\r\n");
        let answer = |persist, head_only| Event::Answer { persist, head_only };
        assert_eq!((events, end), (vec![Event::Continue, answer(0, false), answer(2, true)], End::Clean));
    }
}
