//! Request heads, the server side of the codec: one head parsed from the start of a buffer into
//! what a server needs to frame and answer it (body framing, connection persistence, HEAD,
//! `Expect: 100-continue`, the target, whether it carries a validator). The origin keeps only
//! what it answers; the framing rules are the ones [`super::framing`] applies to responses too.

use std::mem::MaybeUninit;

use super::body::BodyKind;
use super::{framing, ParseError, MAX_HEADERS, MAX_HEAD_BYTES};

/// How the response tells the client about the connection's future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persist {
    /// HTTP/1.1 default: no Connection header, stay open.
    KeepAlive = 0,
    /// HTTP/1.0 with `Connection: keep-alive`: must be confirmed, or the client closes.
    KeepAlive10 = 1,
    /// `Connection: close`, and close after the response.
    Close = 2,
}

/// A parsed request head, borrowing its target from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHead<'a> {
    /// Bytes of the head, blank line included.
    pub len: usize,
    /// How the body is delimited.
    pub body: BodyKind,
    /// Whether the connection stays open after the response.
    pub persist: Persist,
    /// A HEAD request: the response has no body.
    pub head_only: bool,
    /// `Expect: 100-continue` (HTTP/1.1 only).
    pub expect_continue: bool,
    /// The request target as sent.
    pub target: &'a str,
    /// It carries `If-Modified-Since` or `If-None-Match`.
    pub conditional: bool,
    /// The `HTTP2-Settings` value (base64url) of an `Upgrade: h2c` request (HTTP/1.1 only).
    pub h2c_settings: Option<&'a [u8]>,
    /// The method.
    pub method: &'a str,
    /// It is HTTP/1.0.
    pub http10: bool,
}

/// Parses one request head from the start of `input`; `None` when more bytes are needed.
pub fn parse(input: &[u8]) -> Result<Option<RequestHead<'_>>, ParseError> {
    // Uninitialised header slots spare a 3 KiB memset per request.
    let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(input, &mut headers) {
        // The limit holds however the head was split across reads.
        Ok(httparse::Status::Complete(len)) if len > MAX_HEAD_BYTES => return Err(ParseError::HeadTooLarge),
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
        Err(_) => return Err(ParseError::Head),
    };
    let f = framing(req.headers)?;
    let http10 = req.version == Some(0);
    let persist = if f.close || f.ambiguous() || (http10 && !f.keep_alive) {
        Persist::Close
    } else if http10 {
        Persist::KeepAlive10
    } else {
        Persist::KeepAlive
    };
    let has = |name: &str| req.headers.iter().any(|h| h.name.eq_ignore_ascii_case(name));
    let expect_continue = !http10
        && req.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("expect") && h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue")
        });
    Ok(Some(RequestHead {
        len,
        body: f.request_body()?,
        persist,
        head_only: req.method == Some("HEAD"),
        expect_continue,
        target: req.path.unwrap_or("/"),
        conditional: has("if-modified-since") || has("if-none-match"),
        h2c_settings: if http10 { None } else { upgrade_h2c(req.headers) },
        method: req.method.unwrap_or("GET"),
        http10,
    }))
}

/// The value of the first field called `name` (ASCII, lowercase) in a complete request head,
/// trimmed; `None` if there is none. A scan of the head's lines, for the rare caller that needs
/// a field [`parse`] does not keep (the origin's `--replay` looks for `uuid`).
pub fn header<'a>(head: &'a [u8], name: &'a [u8]) -> Option<&'a [u8]> {
    fields(head, name).next()
}

/// The values of every field called `name` (ASCII, lowercase) in a complete request head, in
/// order, trimmed: for a unit that reads fields [`parse`] does not keep.
pub fn fields<'a>(head: &'a [u8], name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    head.split(|&b| b == b'\n')
        .skip(1)
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .take_while(|l| !l.is_empty())
        .filter_map(move |line| {
            let colon = line.iter().position(|&b| b == b':')?;
            line[..colon].eq_ignore_ascii_case(name).then(|| line[colon + 1..].trim_ascii())
        })
}

/// The `HTTP2-Settings` value when the headers ask to upgrade to h2c (RFC 7540, section 3.2).
fn upgrade_h2c<'a>(headers: &[httparse::Header<'a>]) -> Option<&'a [u8]> {
    // Looked for first: almost no request has it, so the common case is one pass.
    let settings = headers.iter().find(|h| h.name.eq_ignore_ascii_case("http2-settings"))?.value;
    let upgrade = headers.iter().find(|h| h.name.eq_ignore_ascii_case("upgrade"))?.value;
    upgrade.split(|&b| b == b',').any(|p| p.trim_ascii().eq_ignore_ascii_case(b"h2c")).then_some(settings.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_found_in_a_head() {
        let head = b"GET / HTTP/1.1\r\nHost: x\r\nUUID:  ab-1 \r\nuuid: second\r\n\r\n";
        // Each row: the head, the name, the value found.
        type Row<'a> = (&'a [u8], &'a [u8], Option<&'a [u8]>);
        let rows: [Row<'_>; 4] = [
            (head, b"uuid", Some(b"ab-1")),
            (head, b"host", Some(b"x")),
            (head, b"cookie", None),
            // The request line is not a field, and nothing after the blank line is.
            (b"uuid: / HTTP/1.1\n\nuuid: body", b"uuid", None),
        ];
        for (head, name, want) in rows {
            assert_eq!(header(head, name), want, "{:?}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn heads_parse_into_framing_and_persistence() {
        let h = parse(b"GET /d/1/10 HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\"\r\n\r\nrest").unwrap().unwrap();
        assert_eq!((h.len, h.target, h.conditional, h.persist), (53, "/d/1/10", true, Persist::KeepAlive));
        let h = parse(b"HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.head_only, h.persist, h.body), (true, Persist::KeepAlive10, BodyKind::Empty));
        let h = parse(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.expect_continue, h.body), (true, BodyKind::Length(3)));
        assert_eq!(parse(b"GET / HTTP/1.1\r\nHost:"), Ok(None));
        let h = parse(b"GET / HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n");
        assert_eq!(h.unwrap().unwrap().h2c_settings, Some(&b"AAMAAABkAAQAAP__"[..]));
        let h = parse(b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nHTTP2-Settings: AAMA\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.h2c_settings, h.method), (None, "GET"), "not h2c");
        assert_eq!(parse(b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), Err(ParseError::TransferEncoding));
    }
}
