//! HTTP/1 codec shared by the load generator and the origin server.
//!
//! Split by role, as hyper does: [`request`] renders request heads once per run, [`response`]
//! parses response heads and frames their bodies incrementally, [`body`] holds the framing both
//! sides use. Nothing here touches a socket: callers feed bytes and get positions back, so the
//! same code runs over plain TCP and TLS, in the client and in `origin/`.

pub mod body;
pub mod date;
pub mod request;
pub mod response;

/// Why a peer's bytes are not valid HTTP/1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The head does not parse (status line, header syntax).
    #[error("malformed message head")]
    Head,
    /// The head is larger than we accept.
    #[error("message head too large")]
    HeadTooLarge,
    /// A Content-Length header that is not a number, or two that disagree.
    #[error("invalid Content-Length")]
    ContentLength,
    /// A chunk-size line or chunk terminator is malformed.
    #[error("malformed chunk size")]
    ChunkSize,
}

/// Largest response or request head accepted, in bytes.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most header fields parsed in one head.
pub const MAX_HEADERS: usize = 100;

/// Reads the framing-relevant headers of a parsed head.
pub(crate) struct Framing {
    pub content_length: Option<u64>,
    pub chunked: bool,
    pub close: bool,
    pub keep_alive: bool,
}

/// Extracts Content-Length, chunked and Connection tokens from header fields.
pub(crate) fn framing(headers: &[httparse::Header<'_>]) -> Result<Framing, ParseError> {
    let mut f = Framing { content_length: None, chunked: false, close: false, keep_alive: false };
    for h in headers {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or(ParseError::ContentLength)?;
            if f.content_length.is_some_and(|old| old != v) {
                return Err(ParseError::ContentLength);
            }
            f.content_length = Some(v);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // Only the last coding decides framing; "gzip, chunked" is still chunked.
            f.chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
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

fn last_token(v: &[u8]) -> &[u8] {
    v.rsplit(|&b| b == b',').next().unwrap_or(v).trim_ascii()
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
