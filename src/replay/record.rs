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
    /// Only the size was recorded (`$request_length`-style fields, a `content: size:`): the
    /// bytes are not in the file.
    Size(u64),
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

/// A record that does not parse: where it is and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    /// The line (or entry), 1-based.
    pub line: u64,
    /// What is wrong, in a few words.
    pub why: String,
}
