//! HTTP/1 codec shared by the load generator and the origin server, and requests as the
//! multiplexed protocols' field lists.
//!
//! Split by role, as hyper does: [`request`] renders request heads once per run, [`response`]
//! parses response heads and frames their bodies incrementally, [`body`] holds the framing both
//! sides use; [`fields`] turns those HTTP/1 requests into HTTP/2's and HTTP/3's fields. Nothing here touches a socket: callers feed bytes and get positions back, so the
//! same code runs over plain TCP and TLS, in the client and in `origin/`.

pub mod body;
pub mod date;
pub mod fields;
pub mod request;
pub mod request_head;
pub mod response;

#[cfg(test)]
pub(crate) mod fuzz;

use body::BodyKind;

/// Why a peer's bytes are not valid HTTP/1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The head does not parse (status line, header syntax).
    #[error("malformed message head")]
    Head,
    /// The head (or a chunked body's trailer section) is larger than we accept.
    #[error("message head too large")]
    HeadTooLarge,
    /// A Content-Length header that is not a number, or two that disagree.
    #[error("invalid Content-Length")]
    ContentLength,
    /// A request's Transfer-Encoding does not end in chunked: its length cannot be known.
    #[error("unsupported Transfer-Encoding")]
    TransferEncoding,
    /// A response with both Transfer-Encoding and Content-Length (RFC 9112 6.3: "ought to be
    /// handled as an error"; wrk refuses it too).
    #[error("both Transfer-Encoding and Content-Length")]
    BothLengths,
    /// A chunk-size line, chunk terminator or trailer line is malformed.
    #[error("malformed chunk size")]
    ChunkSize,
    /// A body kept for a script or a content check is larger than we keep.
    #[error("body too large to keep")]
    BodyTooLarge,
}

/// Largest response or request head accepted, in bytes.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most header fields parsed in one head.
pub const MAX_HEADERS: usize = 100;

/// Reads the framing-relevant headers of a parsed head.
pub(crate) struct Framing {
    pub content_length: Option<u64>,
    /// A Transfer-Encoding field is present (whatever it says, Content-Length no longer counts).
    pub transfer_encoding: bool,
    /// The final transfer coding is chunked.
    pub chunked: bool,
    pub close: bool,
    pub keep_alive: bool,
}

impl Framing {
    /// How a request's body is delimited (RFC 9112 6.3): chunked wins over a length, and any
    /// other final coding leaves the length unknowable, which the server must reject.
    pub(crate) fn request_body(&self) -> Result<BodyKind, ParseError> {
        match (self.transfer_encoding, self.chunked, self.content_length) {
            (true, true, _) => Ok(BodyKind::Chunked),
            (true, false, _) => Err(ParseError::TransferEncoding),
            (false, _, Some(n)) => Ok(BodyKind::Length(n)),
            (false, _, None) => Ok(BodyKind::Empty),
        }
    }

    /// Both Transfer-Encoding and Content-Length: the shape of request smuggling or response
    /// splitting. A server may frame the request by Transfer-Encoding but must not reuse the
    /// connection (RFC 9112 6.1); a client refuses such a response.
    pub(crate) fn ambiguous(&self) -> bool {
        self.transfer_encoding && self.content_length.is_some()
    }
}

/// Extracts Content-Length, Transfer-Encoding and Connection tokens from header fields.
pub(crate) fn framing(headers: &[httparse::Header<'_>]) -> Result<Framing, ParseError> {
    let mut f =
        Framing { content_length: None, transfer_encoding: false, chunked: false, close: false, keep_alive: false };
    for h in headers {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let v = content_length(h.value).ok_or(ParseError::ContentLength)?;
            if f.content_length.is_some_and(|old| old != v) {
                return Err(ParseError::ContentLength);
            }
            f.content_length = Some(v);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            f.transfer_encoding = true;
            // Fields combine into one list and only the last coding decides framing:
            // "gzip, chunked" is chunked, "chunked, gzip" is not. Empty list elements are allowed.
            for token in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii).filter(|t| !t.is_empty()) {
                f.chunked = token.eq_ignore_ascii_case(b"chunked");
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in h.value.split(|&b| b == b',') {
                let t = token.trim_ascii();
                f.close |= t.eq_ignore_ascii_case(b"close");
                f.keep_alive |= t.eq_ignore_ascii_case(b"keep-alive");
            }
        }
    }
    Ok(f)
}

/// A Content-Length value: decimal digits only (`str::parse` would also take a `+` sign, which
/// another parser on the path may read differently), within 64 bits.
fn content_length(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| match b {
        b'0'..=b'9' => n.checked_mul(10)?.checked_add(u64::from(b - b'0')),
        _ => None,
    })
}

/// True if the blank line that ends a head may be in `buf` now that the bytes from `new` on
/// have arrived. Callers that receive a head a few bytes at a time parse it again only when
/// this says so, which keeps a trickled head linear instead of quadratic.
///
/// A head ends with a line that has content (its start line or last field; a stray CR counts,
/// so that a head with one is parsed and refused), a line end (LF or CRLF), then an empty
/// line. Empty lines alone do not count: they may come before a start line, and a peer sending
/// nothing else would make every read parse all of them again.
pub(crate) fn may_end_head(buf: &[u8], new: usize) -> bool {
    // The first LF of the pattern is at most 2 bytes before `new` ("\n\r" + the new "\n").
    let from = new.saturating_sub(2);
    (from..buf.len()).any(|i| {
        let (before, after) = (&buf[..i], &buf[i + 1..]);
        buf[i] == b'\n'
            && (after.starts_with(b"\n") || after.starts_with(b"\r\n"))
            && matches!(before.strip_suffix(b"\r").unwrap_or(before).last(), Some(&b) if b != b'\n')
    })
}

/// Appends `n` in decimal without allocating (response heads are written on the hot path).
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends the first `max` of `bytes` to `out` as text: printable ASCII as it is, `\r` `\n`
/// `\t` `\\` (and `"` when `quote`) escaped, every other byte `\xNN`; true when some were left
/// out. What a trace shows of a message and what a fuzz failure prints to paste back are the
/// same escape.
pub(crate) fn escape_into(out: &mut String, bytes: &[u8], max: usize, quote: bool) -> bool {
    use std::fmt::Write as _;
    for &b in bytes.iter().take(max) {
        match b {
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\\' => out.push_str("\\\\"),
            b'"' if quote => out.push_str("\\\""),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    bytes.len() > max
}
