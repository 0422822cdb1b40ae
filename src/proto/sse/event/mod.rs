//! The `text/event-stream` format (WHATWG HTML, 9.2.6 "Interpreting an event stream"), parsed
//! incrementally from whatever chunks the socket hands over.
//!
//! By hand rather than through a crate: the load generator's hot path reads events out of the
//! thread's read buffer and only counts and times them, so the parser owes no allocation per
//! event. Its buffers (data, type, id) are reused from one event to the next, and only a line cut
//! by the end of a read is carried over to the next [`EventParser::feed`]. It works on bytes, not
//! decoded text: the field names are ASCII, and strain measures payloads rather than showing them,
//! so invalid UTF-8 passes through where a browser would put U+FFFD. Std only, so it builds and
//! tests on its own (`rustc --edition 2021 --test event.rs`).

use std::fmt;

/// The UTF-8 byte order mark, which the stream may open with once.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// The default cap, in bytes, on one line and on one event's data.
pub const DEFAULT_LIMIT: usize = 1 << 20;

/// One dispatched event, borrowing the parser's buffers for the length of the callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event` field's value; empty means the default type, "message".
    pub event_type: &'a [u8],
    /// The `data` lines joined with '\n', without the newline after the last one.
    pub data: &'a [u8],
    /// The last event ID at dispatch (an `id` field anywhere in the event's block counts).
    pub last_id: &'a [u8],
}

impl<'a> Event<'a> {
    /// The type a browser dispatches the event under: "message" when no `event` field named one.
    pub fn kind(&self) -> &'a [u8] {
        if self.event_type.is_empty() {
            b"message"
        } else {
            self.event_type
        }
    }
}

/// A line, or one event's data, longer than the parser's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    /// The limit that was exceeded, in bytes.
    pub limit: usize,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an event-stream line or event is over the {} byte limit", self.limit)
    }
}

impl std::error::Error for TooLong {}

/// An incremental `text/event-stream` parser for one event source, across its reconnections.
#[derive(Debug, Clone)]
pub struct EventParser {
    /// The line not yet ended when the last feed ran out (at the stream's start, also the BOM
    /// bytes seen so far, until the third byte tells whether they were one).
    line: Vec<u8>,
    /// The data buffer: each `data` value followed by '\n'.
    data: Vec<u8>,
    /// The event type buffer.
    event_type: Vec<u8>,
    /// The last event ID buffer, which dispatching does not clear: it outlives events and
    /// reconnections, since a reconnecting client sends it as `Last-Event-ID`.
    last_id: Vec<u8>,
    retry_ms: Option<u64>,
    comments: u64,
    limit: usize,
    /// No byte of the stream decided yet, so a BOM may still come.
    at_start: bool,
    /// The last feed ended on CR: a LF opening the next one belongs to the same line end.
    after_cr: bool,
    /// Over the limit once: the rest of the stream cannot be resynchronised, so every later
    /// feed fails too, until [`EventParser::restart`].
    failed: bool,
}

impl Default for EventParser {
    fn default() -> Self {
        EventParser::with_limit(DEFAULT_LIMIT)
    }
}

impl EventParser {
    /// A parser capping lines and event data at [`DEFAULT_LIMIT`] bytes.
    pub fn new() -> EventParser {
        EventParser::default()
    }

    /// A parser capping one line, and one event's data, at `max` bytes each.
    pub fn with_limit(max: usize) -> EventParser {
        EventParser {
            line: Vec::new(),
            data: Vec::new(),
            event_type: Vec::new(),
            last_id: Vec::new(),
            retry_ms: None,
            comments: 0,
            limit: max,
            at_start: true,
            after_cr: false,
            failed: false,
        }
    }

    /// Parses the next chunk of the stream, calling `out` for each event it completes; the count.
    pub fn feed(&mut self, mut bytes: &[u8], mut out: impl FnMut(Event<'_>)) -> Result<usize, TooLong> {
        if self.failed {
            return Err(TooLong { limit: self.limit });
        }
        if self.at_start {
            bytes = self.skip_bom(bytes);
        }
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        let mut dispatched = 0;
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            // Checked before the line is looked at, so whether a stream fails never depends on
            // where its reads happened to split it.
            if self.line.len() + end > self.limit {
                return Err(self.fail());
            }
            dispatched += if self.line.is_empty() {
                self.line_done(&bytes[..end], &mut out)?
            } else {
                // Moved out and back so the line can be read while the fields are written; the
                // Vec keeps its allocation for the next partial line.
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..end]);
                let done = self.line_done(&line, &mut out);
                line.clear();
                self.line = line;
                done?
            };
            let cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        if self.line.len() + bytes.len() > self.limit {
            return Err(self.fail());
        }
        self.line.extend_from_slice(bytes);
        Ok(dispatched)
    }

    /// Readies the parser for the next response of the same source: the last event ID, the
    /// retry and the comment count carry over, as they do for a reconnecting browser.
    pub fn restart(&mut self) {
        self.line.clear();
        self.data.clear();
        self.event_type.clear();
        self.at_start = true;
        self.after_cr = false;
        self.failed = false;
    }

    /// Whether the stream ending now would drop something: a line not ended, or data not dispatched.
    pub fn is_mid_event(&self) -> bool {
        !self.data.is_empty() || (!self.line.is_empty() && !self.at_start)
    }

    /// The last event ID the stream set (empty when none, or when an `id` field cleared it).
    pub fn last_id(&self) -> &[u8] {
        &self.last_id
    }

    /// The reconnection time the stream asked for most recently, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Comment lines seen: servers send them as keep-alives, which no event shows.
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// The limit on one line and on one event's data, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The rest of `bytes` after any part of a leading BOM, which may arrive split across feeds.
    fn skip_bom<'b>(&mut self, bytes: &'b [u8]) -> &'b [u8] {
        for (i, &b) in bytes.iter().enumerate() {
            // The BOM bytes matched so far wait in `line`; on a mismatch they are simply the
            // start of the first line, as they were on the wire.
            if BOM.get(self.line.len()) != Some(&b) {
                self.at_start = false;
                return &bytes[i..];
            }
            self.line.push(b);
            if self.line.len() == BOM.len() {
                self.line.clear();
                self.at_start = false;
                return &bytes[i + 1..];
            }
        }
        &[]
    }

    /// Acts on one whole line (without its line end); the number of events it dispatched.
    fn line_done(&mut self, line: &[u8], out: &mut impl FnMut(Event<'_>)) -> Result<usize, TooLong> {
        if line.is_empty() {
            return Ok(self.dispatch(out));
        }
        if line[0] == b':' {
            self.comments += 1;
            return Ok(0);
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                // Many short data lines can add up to more than any one line: the data buffer
                // has its own cap, or a server could grow it without ever sending a blank line.
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(self.fail());
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.event_type.clear();
                self.event_type.extend_from_slice(value);
            }
            // An ID with NUL is ignored: it could not be sent back in a `Last-Event-ID` header.
            b"id" if !value.contains(&0) => {
                self.last_id.clear();
                self.last_id.extend_from_slice(value);
            }
            b"retry" => self.retry_ms = digits(value).or(self.retry_ms),
            _ => {}
        }
        Ok(0)
    }

    /// Ends the current block at a blank line; 1 when it made an event.
    fn dispatch(&mut self, out: &mut impl FnMut(Event<'_>)) -> usize {
        // A block without a `data` line (only `event`, `id` or `retry`) is no event, but its
        // type must not leak into the next block.
        let dispatched = match self.data.split_last() {
            Some((_, data)) => {
                out(Event { event_type: &self.event_type, data, last_id: &self.last_id });
                1
            }
            None => 0,
        };
        self.data.clear();
        self.event_type.clear();
        dispatched
    }

    /// Marks the stream failed and drops what it buffered, which is what the limit protects.
    fn fail(&mut self) -> TooLong {
        self.failed = true;
        self.line.clear();
        self.data.clear();
        self.event_type.clear();
        TooLong { limit: self.limit }
    }
}

/// A `retry` value: ASCII digits only (else the field is ignored), saturating rather than
/// wrapping, since a huge value still means "wait a long time".
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value
        .iter()
        .try_fold(0u64, |ms, &b| b.is_ascii_digit().then(|| ms.saturating_mul(10).saturating_add(u64::from(b - b'0'))))
}

#[cfg(test)]
mod tests;
