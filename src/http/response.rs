//! Incremental response parser: the client feeds whatever a read returned and learns where each
//! response ends, without copying bytes except for a head that straddles two reads.

use super::body::{BodyDecoder, BodyKind};
use super::{framing, may_end_head, ParseError, MAX_HEADERS, MAX_HEAD_BYTES};

/// Largest body kept for a script's `response()` or a content check; a larger one is an error
/// rather than memory the server decides.
pub const MAX_CAPTURED_BODY: usize = 64 * 1024 * 1024;

/// What the parser learned about a response once it is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Complete {
    /// Status code of the final (non-1xx) response.
    pub status: u16,
    /// Whether the connection may carry another request afterwards.
    pub keep_alive: bool,
}

/// The result of one [`ResponseParser::feed`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fed {
    /// Bytes of the input that were used.
    pub used: usize,
    /// Set when a response ended within those bytes.
    pub complete: Option<Complete>,
}

#[derive(Debug)]
enum Phase {
    Head,
    Body { status: u16, keep_alive: bool },
}

/// Parses a stream of responses on one connection.
#[derive(Debug)]
pub struct ResponseParser {
    phase: Phase,
    body: BodyDecoder,
    /// Bytes of a head split across reads; empty (and unallocated) in the common case.
    partial: Vec<u8>,
    /// The request being answered was HEAD: its response has no body whatever the headers say.
    head_request: bool,
    /// Headers and body of the current response, kept only when a script reads responses.
    capture: Option<Box<Captured>>,
}

/// A response's header fields and decoded body, for a script's `response()` hook.
#[derive(Debug, Default)]
pub struct Captured {
    /// Header fields in order, as sent.
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// The body without transfer framing.
    pub body: Vec<u8>,
}

/// A kept body's buffer larger than this is freed rather than reused for the next response, so
/// one large response does not pin its memory to the connection.
const KEEP_CAPTURE: usize = 1024 * 1024;

impl Captured {
    /// Empties both parts for the next response.
    fn clear(&mut self) {
        self.headers.clear();
        if self.body.capacity() > KEEP_CAPTURE {
            self.body = Vec::new();
        } else {
            self.body.clear();
        }
    }
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    /// A parser waiting for a response head.
    pub fn new() -> Self {
        ResponseParser {
            phase: Phase::Head,
            body: BodyDecoder::Done,
            partial: Vec::new(),
            head_request: false,
            capture: None,
        }
    }

    /// Forgets any response in progress (the connection was replaced).
    pub fn reset(&mut self) {
        self.phase = Phase::Head;
        self.body = BodyDecoder::Done;
        self.partial.clear();
        if let Some(c) = self.capture.as_mut() {
            c.clear();
        }
    }

    /// Marks whether the responses that follow answer HEAD requests.
    pub fn set_head_request(&mut self, head: bool) {
        self.head_request = head;
    }

    /// Keeps each response's headers and body from now on.
    pub fn set_capture(&mut self, on: bool) {
        self.capture = on.then(Box::default);
    }

    /// The headers and body of the response that just completed (when capturing).
    pub fn captured(&self) -> Option<&Captured> {
        self.capture.as_deref()
    }

    /// Bytes held between reads (a partial head, a kept response): what the fuzz tests bound.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        let kept = self.capture.as_ref().map_or(0, |c| {
            c.body.len() + c.headers.iter().map(|(name, value)| name.len() + value.len()).sum::<usize>()
        });
        self.partial.len() + kept
    }

    /// True when no byte of a response has been seen since the last one ended.
    pub fn is_idle(&self) -> bool {
        matches!(self.phase, Phase::Head) && self.partial.is_empty()
    }

    /// Consumes bytes up to the end of at most one response.
    pub fn feed(&mut self, data: &[u8]) -> Result<Fed, ParseError> {
        let mut used = 0;
        if let Phase::Head = self.phase {
            match self.parse_head(data)? {
                Some(n) => used = n,
                None => return Ok(Fed { used: data.len(), complete: None }),
            }
        }
        let Phase::Body { status, keep_alive } = self.phase else {
            // A 1xx interim response was skipped; the caller feeds the rest again.
            return Ok(Fed { used, complete: None });
        };
        let sink = self.capture.as_mut().map(|c| &mut c.body);
        let kept = sink.is_some();
        used += self.body.feed_into(&data[used..], sink)?;
        if kept && self.capture.as_ref().is_some_and(|c| c.body.len() > MAX_CAPTURED_BODY) {
            return Err(ParseError::BodyTooLarge);
        }
        if self.body.is_done() {
            self.phase = Phase::Head;
            return Ok(Fed { used, complete: Some(Complete { status, keep_alive }) });
        }
        Ok(Fed { used, complete: None })
    }

    /// Tells the parser the peer closed; returns the response that closing completes, if any.
    pub fn finish_on_close(&mut self) -> Option<Complete> {
        match (&self.phase, &self.body) {
            (Phase::Body { status, .. }, BodyDecoder::UntilClose) => {
                let status = *status;
                self.phase = Phase::Head;
                self.body = BodyDecoder::Done;
                Some(Complete { status, keep_alive: false })
            }
            _ => None,
        }
    }

    /// Parses a head from `data` (plus any saved partial head). Returns bytes of `data` used
    /// when the head completed, `None` when more bytes are needed.
    fn parse_head(&mut self, data: &[u8]) -> Result<Option<usize>, ParseError> {
        let saved = self.partial.len();
        if saved > 0 {
            self.partial.extend_from_slice(data);
            // A head trickling in a few bytes per read is parsed again only when its end may
            // have arrived; parsing it whole every time would be quadratic.
            if !may_end_head(&self.partial, saved) {
                if self.partial.len() > MAX_HEAD_BYTES {
                    return Err(ParseError::HeadTooLarge);
                }
                return Ok(None);
            }
        }
        let buf: &[u8] = if saved > 0 { &self.partial } else { data };
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let len = match resp.parse(buf) {
            // The limit holds however the head was split across reads.
            Ok(httparse::Status::Complete(len)) if len > MAX_HEAD_BYTES => return Err(ParseError::HeadTooLarge),
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_HEAD_BYTES {
                    return Err(ParseError::HeadTooLarge);
                }
                if saved == 0 {
                    self.partial.extend_from_slice(data);
                }
                return Ok(None);
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
            Err(_) => return Err(ParseError::Head),
        };
        let status = resp.code.ok_or(ParseError::Head)?;
        let f = framing(resp.headers)?;
        if f.ambiguous() {
            return Err(ParseError::BothLengths);
        }
        let http11 = resp.version == Some(1);
        // After 101 the connection no longer speaks HTTP/1.
        let keep_alive = !f.close && (http11 || f.keep_alive) && status != 101;
        // RFC 9112 6.3, in its order.
        let kind = if (100..200).contains(&status) && status != 101 {
            None
        } else if self.head_request || status == 204 || status == 304 || status == 101 {
            Some(BodyKind::Empty)
        } else if f.chunked {
            Some(BodyKind::Chunked)
        } else if f.transfer_encoding {
            // Another final coding: the body runs until the server closes.
            Some(BodyKind::UntilClose)
        } else if let Some(n) = f.content_length {
            Some(BodyKind::Length(n))
        } else {
            Some(BodyKind::UntilClose)
        };
        let used = len - saved;
        if let Some(c) = self.capture.as_mut() {
            c.clear();
            c.headers.extend(resp.headers.iter().map(|h| (h.name.as_bytes().to_vec(), h.value.to_vec())));
        }
        self.partial.clear();
        match kind {
            // Interim response: stay in Head and let the caller feed what follows.
            None => {}
            Some(kind) => {
                self.body = BodyDecoder::new(kind);
                self.phase = Phase::Body { status, keep_alive: keep_alive && kind != BodyKind::UntilClose };
            }
        }
        Ok(Some(used))
    }
}

/// The reason phrase of `status` a server writes on its status line.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        // The reason phrase is informational; clients must not depend on it.
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step`, returning every completed response and the last error.
    fn parse_all(input: &[u8], step: usize, head: bool) -> (Vec<Complete>, Option<ParseError>) {
        let mut p = ResponseParser::new();
        p.set_head_request(head);
        let mut done = Vec::new();
        for piece in input.chunks(step) {
            let mut rest = piece;
            while !rest.is_empty() {
                match p.feed(rest) {
                    Ok(fed) => {
                        rest = &rest[fed.used..];
                        done.extend(fed.complete);
                    }
                    Err(e) => return (done, Some(e)),
                }
            }
        }
        done.extend(p.finish_on_close());
        (done, None)
    }

    fn ok(status: u16, keep_alive: bool) -> Complete {
        Complete { status, keep_alive }
    }

    #[test]
    fn responses_complete_at_every_split() {
        let rows: &[(&[u8], bool, Vec<Complete>)] = &[
            // Two pipelined keep-alive responses by length.
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 No\r\nContent-Length: 0\r\n\r\n",
                false,
                vec![ok(200, true), ok(404, true)],
            ),
            // Chunked with trailers, then Connection: close.
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n",
                false,
                vec![ok(200, false)],
            ),
            // HTTP/1.0 without keep-alive closes; with it, stays open.
            (b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false, vec![ok(200, false)]),
            (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", false, vec![ok(200, true)]),
            // No length: the body runs to close.
            (b"HTTP/1.1 200 OK\r\n\r\nuntil close", false, vec![ok(200, false)]),
            // 100 Continue is skipped; 204 and 304 have no body despite a length.
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", false, vec![ok(204, true)]),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false, vec![ok(304, true)]),
            // Transfer-Encoding without chunked last: the body runs to close.
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc", false, vec![ok(200, false)]),
            // After 101 the connection does not speak HTTP/1 any more.
            (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", false, vec![ok(101, false)]),
            // Interim responses of any kind are skipped; a blank line before a head is too.
            (b"HTTP/1.1 103 Early Hints\r\nLink: <a>\r\n\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, vec![ok(200, true)]),
            // A HEAD response carries a length but no body.
            (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", true, vec![ok(200, true), ok(200, true)]),
        ];
        for (input, head, want) in rows {
            for step in 1..=input.len() {
                let (got, err) = parse_all(input, step, *head);
                assert_eq!(err, None, "step {step}: {}", String::from_utf8_lossy(input));
                assert_eq!(&got, want, "step {step}: {}", String::from_utf8_lossy(input));
            }
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let rows: &[(&[u8], ParseError)] = &[
            (b"HTTP/1.1 2x0 OK\r\n\r\n", ParseError::Head),
            (b"SSH-2.0-OpenSSH\r\n\r\n", ParseError::Head),
            (b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n", ParseError::ContentLength),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", ParseError::ContentLength),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", ParseError::ChunkSize),
            // Found by fuzzing: lengths Rust's integer parsing takes but HTTP does not.
            (b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", ParseError::ContentLength),
            (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", ParseError::ContentLength),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n", ParseError::ContentLength),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello", ParseError::ContentLength),
            // Both framings, whichever comes first.
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                ParseError::BothLengths,
            ),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 1\r\n\r\nx", ParseError::BothLengths),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", ParseError::ChunkSize),
        ];
        for (input, want) in rows {
            let (_, err) = parse_all(input, input.len(), false);
            assert_eq!(err, Some(*want), "{}", String::from_utf8_lossy(input));
        }
        // Found by fuzzing: a stray CR ending the last field hid the end of the head from a
        // parser fed in pieces, which then waited for more instead of refusing it.
        let stray = b"HTTP/1.1 500 x\r\nTransfer-Encoding: \r\r\n\r\nabc";
        for step in 1..stray.len() {
            assert_eq!(parse_all(stray, step, false).1, Some(ParseError::Head), "step {step}");
        }
        let huge = [b'a'; MAX_HEAD_BYTES + 10];
        let mut head = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        head.extend_from_slice(&huge);
        assert_eq!(parse_all(&head, 4096, false).1, Some(ParseError::HeadTooLarge));
        // Found by fuzzing: the same oversized head arriving complete in one read was accepted.
        head.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_all(&head, head.len(), false).1, Some(ParseError::HeadTooLarge));
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("H{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(parse_all(&many, many.len(), false).1, Some(ParseError::HeadTooLarge));
    }

    #[test]
    fn empty_lines_trickling_in_are_refused_in_linear_time() {
        // Found by fuzzing: each CRLF made a possible head end, so every read parsed all the
        // empty lines before it again (20 s in a debug build for 64 KiB, now milliseconds).
        let mut p = ResponseParser::new();
        let started = std::time::Instant::now();
        let crlf = b"\r\n".repeat(MAX_HEAD_BYTES / 2 + 1);
        let err = crlf.chunks(1).find_map(|b| p.feed(b).err());
        assert_eq!(err, Some(ParseError::HeadTooLarge));
        assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
        // Empty lines before a head are still skipped.
        assert_eq!(
            parse_all(b"\r\n\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1, false),
            (vec![ok(200, true)], None)
        );
    }

    #[test]
    fn a_kept_body_is_bounded() {
        let mut p = ResponseParser::new();
        p.set_capture(true);
        let fed = p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n").unwrap();
        assert_eq!(fed.complete, None);
        let read = vec![b'x'; 64 * 1024];
        let mut total = 0;
        let err = loop {
            match p.feed(&read) {
                Ok(fed) => total += fed.used,
                Err(e) => break e,
            }
            assert!(total <= MAX_CAPTURED_BODY, "kept {total} bytes");
        };
        assert_eq!(err, ParseError::BodyTooLarge);
        assert!(p.held_bytes() <= MAX_HEAD_BYTES + MAX_CAPTURED_BODY + read.len(), "{}", p.held_bytes());
        // The connection is replaced: the memory goes with the response.
        p.reset();
        assert_eq!(p.held_bytes(), 0);
        // Without capture the same body is only counted, never kept.
        let mut p = ResponseParser::new();
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n").unwrap();
        for _ in 0..(MAX_CAPTURED_BODY / read.len() + 1) {
            p.feed(&read).unwrap();
        }
        assert_eq!(p.held_bytes(), 0);
    }

    #[test]
    fn a_huge_header_block_is_refused_holding_a_bounded_amount() {
        // 1 MB of header fields, in 4 KiB reads, never ending: refused once past the limit.
        let mut p = ResponseParser::new();
        let mut block = b"HTTP/1.1 200 OK\r\n".to_vec();
        while block.len() < 1 << 20 {
            block.extend_from_slice(b"X-Filler: 0123456789abcdef\r\n");
        }
        let mut err = None;
        for read in block.chunks(4096) {
            match p.feed(read) {
                Ok(_) => assert!(p.held_bytes() <= MAX_HEAD_BYTES + read.len()),
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        assert_eq!(err, Some(ParseError::HeadTooLarge));
    }
}
