//! One client connection's state. Plain data: the worker drives the transitions.

use crate::http::response::ResponseParser;
use crate::net::stream::Stream;

/// Where a connection is in its cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No socket: waiting to reconnect after a failure.
    Closed,
    /// TCP connect (and TLS handshake) in progress.
    Connecting,
    /// Connected with nothing in flight, waiting for a paced request to come due.
    Idle,
    /// Connected, waiting out a script's `delay()` before the next request.
    Delayed,
    /// Part of the request is still to be written.
    Writing,
    /// The request is written; waiting for its response.
    Reading,
}

/// A connection slot; its index in the worker's table is its poll token.
#[derive(Debug)]
pub struct Conn {
    /// The socket, absent while closed.
    pub stream: Option<Stream>,
    /// Cycle position.
    pub state: State,
    /// Response framing in progress.
    pub parser: ResponseParser,
    /// When the current request's first byte was written, in clock microseconds.
    pub sent_us: u64,
    /// When the current request should have been written (equal to `sent_us` in closed loop).
    pub intended_us: u64,
    /// Bytes of the current request written so far.
    pub written: usize,
    /// Bumped on every request and every reconnect, so old deadlines and retries can tell they
    /// no longer apply.
    pub generation: u32,
    /// Connect failures in a row, for the retry backoff.
    pub failures: u32,
    /// Responses still expected for the current write (more than one when pipelining).
    pub pending: u32,
    /// The current request, when a script or a proxy test builds each one.
    pub req: Vec<u8>,
    /// Proxy tests: what the current request asked for.
    pub sent: crate::engine::proxy::Sent,
    /// Responses completed on this connection (for `--keepalive`).
    pub uses: u64,
    /// The current response's first byte has arrived.
    pub first_byte: bool,
    /// Opened, and not yet proven accepted by the server (no response yet): counts against the
    /// worker's window of connections being opened.
    pub opening: bool,
    /// HTTP/2: the stream carrying the current request.
    pub stream_id: i32,
    /// HTTP/2: the current response's status, once its headers arrived.
    pub status: u16,
    /// HTTP/2: the request was refused unprocessed (GOAWAY) and goes again on the next
    /// connection.
    pub retry: bool,
    /// HTTP/2: the response just completed, kept whole for a hook or a content check.
    pub capture: Option<Box<crate::http::response::Captured>>,
}

impl Conn {
    /// A closed slot.
    pub fn new() -> Conn {
        Conn {
            stream: None,
            state: State::Closed,
            parser: ResponseParser::new(),
            sent_us: 0,
            intended_us: 0,
            written: 0,
            generation: 0,
            failures: 0,
            pending: 1,
            req: Vec::new(),
            sent: Default::default(),
            uses: 0,
            first_byte: false,
            opening: false,
            stream_id: 0,
            status: 0,
            retry: false,
            capture: None,
        }
    }
}
