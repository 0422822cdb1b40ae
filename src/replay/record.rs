//! One recorded request, as every format reads it: when it started, what was asked, the keys
//! that tie it to a client or a connection, and the response recorded with it (when the format
//! holds one, for `strain origin --replay`).

/// A request read from a recording.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// When the request started, microseconds since the Unix epoch. A format that writes the
    /// end time and the duration gives the end minus the duration here.
    pub start_us: i64,
    /// The time was written to the whole second only (`$time_local`, `%t`): the timing spreads
    /// a second's requests evenly over it.
    pub whole_second: bool,
    /// The method, as recorded (`GET`).
    pub method: String,
    /// The request target: origin-form (`/path?query`) or an absolute URL (`https://host/path`).
    pub target: String,
    /// Request header fields as recorded, in order (a log's `$host`, `$http_user_agent`…).
    pub headers: Vec<(String, String)>,
    /// The request body.
    pub body: Body,
    /// The client's address (`$remote_addr`, `%h`, `chi`), a `--sessions client` key.
    pub client: Option<String>,
    /// The connection's id (nginx `$connection`, HAR's `connection`), a `--sessions connection` key.
    pub connection: Option<String>,
    /// The session's id (a Proxy Verifier session's index, HAR's `pageref`), a `--sessions session` key.
    pub session: Option<String>,
    /// The response recorded with the request, when the format holds one.
    pub response: Option<Response>,
    /// Where the record is in its file: the line (logs, JSON lines) or the entry's number
    /// (HAR, Proxy Verifier), 1-based, for error messages.
    pub line: u64,
}

/// A recorded request or response body.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Body {
    /// No body.
    #[default]
    None,
    /// The bytes, as recorded.
    Bytes(Vec<u8>),
    /// Only the size was recorded (`$request_length`-style fields): the bytes are not in the
    /// file, and are sent only with `--synthetic-body`.
    Size(u64),
    /// A size the format itself means as a body of that many bytes, generated (Proxy
    /// Verifier's `content: size:`, which Proxy Verifier fills so).
    Generate(u64),
}

/// A recorded response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields, in order.
    pub headers: Vec<(String, String)>,
    /// The body (or only its size).
    pub body: Body,
}

/// A record that is no request strain can send: where it is, why, and what kind of flaw it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    /// The line (or entry), 1-based.
    pub line: u64,
    /// What is wrong, in a few words.
    pub why: String,
    /// Whether the record is in its format at all.
    pub kind: BadKind,
}

/// What is wrong with a record. A record in its format that holds no request is skipped and
/// counted by cause (every internet-facing server logs scanners and junk); a line in no
/// layout is a bad line, allowed up to a share of the file (see `replay::BadLines`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BadKind {
    /// The line matches no layout the reader knows (or the entry is not of its format).
    Unmatched,
    /// In its layout, but its request is `-` or empty: nothing was asked.
    NoRequest,
    /// In its layout, but its request is not `METHOD TARGET VERSION` (a TLS handshake or a
    /// scanner's bytes sent to a plain port, binary junk logged as `\xHH`).
    NotHttp,
    /// The file's last line, cut off mid-record (its writer stopped).
    Truncated,
    /// An entry whose fields cannot be read, even leniently (HAR, Proxy Verifier).
    Unreadable,
}

impl BadRecord {
    /// A line in no layout.
    pub fn unmatched(line: u64, why: impl Into<String>) -> BadRecord {
        BadRecord { line, why: why.into(), kind: BadKind::Unmatched }
    }

    /// A record in its format that holds no request, for `kind`'s reason.
    pub fn skipped(line: u64, kind: BadKind, why: impl Into<String>) -> BadRecord {
        BadRecord { line, why: why.into(), kind }
    }
}
