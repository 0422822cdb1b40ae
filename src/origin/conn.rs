//! One accepted connection: reading and parsing requests, queueing the pre-rendered responses,
//! writing them, and closing politely.
//!
//! Responses are queued as slices of the thread's pre-rendered [`Responses`], never copied: a
//! pipeline of requests becomes a list of slices handed to one `writev`, and a partial write
//! only advances the front slice. Requests are answered once their body has been skipped, so a
//! response never overtakes the request it answers.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::mem::{self, MaybeUninit};
use std::net::Shutdown;
use std::time::{Duration, Instant};

use mio::net::TcpStream;

use super::{OriginStats, Persist, Reply, Responses, CONTINUE};
use crate::http::body::{BodyDecoder, BodyKind};
use crate::http::{framing, ParseError, MAX_HEADERS, MAX_HEAD_BYTES};

/// Queued output beyond which reading stops until the client takes some; a client that
/// pipelines without reading cannot make us queue without bound.
const MAX_PENDING: usize = 256 * 1024;
/// Slices handed to one `writev`.
const MAX_IOV: usize = 64;
/// How long a closing connection waits for the client to finish sending.
const LINGER: Duration = Duration::from_secs(2);
/// Most bytes discarded while lingering before giving up on the client.
const MAX_LINGER_BYTES: u64 = 1024 * 1024;

/// What the event loop should do with the connection after [`Conn::drive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Keep it and wait for the next event.
    Wait,
    /// Drop it.
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Serving requests.
    Open,
    /// No more requests are read; close once the output is flushed. `linger` is set when we,
    /// not the client, decided to close, so the client may still be sending.
    Closing { linger: bool },
    /// Our side is shut; reading and discarding until the client closes or time runs out.
    Lingering { until: Instant, discarded: u64 },
}

/// One client connection owned by one worker thread.
pub(super) struct Conn<'r> {
    stream: TcpStream,
    responses: &'r Responses,
    parser: RequestParser,
    out: Output<'r>,
    /// The socket may have unread bytes. Edge-triggered readiness is reported once, so this
    /// remembers it across the times reading is paused for output.
    readable: bool,
    state: State,
}

impl<'r> Conn<'r> {
    /// A connection that has just been accepted and registered.
    pub(super) fn new(stream: TcpStream, responses: &'r Responses) -> Self {
        Conn {
            stream,
            responses,
            parser: RequestParser::default(),
            out: Output::default(),
            // The first event after registration reports what is there; assuming readable
            // costs at most one read that would block.
            readable: true,
            state: State::Open,
        }
    }

    /// Records a readiness edge for reading.
    pub(super) fn set_readable(&mut self) {
        self.readable = true;
    }

    /// True when the connection has lingered too long and should just be dropped.
    pub(super) fn linger_expired(&self, now: Instant) -> bool {
        matches!(self.state, State::Lingering { until, .. } if now >= until)
    }

    /// Makes all the progress the socket allows: write, read, answer, repeat.
    pub(super) fn drive(&mut self, buf: &mut [u8], stats: &mut OriginStats) -> Next {
        loop {
            if !self.out.is_empty() && self.flush(stats).is_err() {
                return Next::Close;
            }
            match self.state {
                State::Open => {}
                State::Closing { linger } => {
                    if !self.out.is_empty() {
                        return Next::Wait;
                    }
                    if !linger {
                        return Next::Close;
                    }
                    // Closing with unread input makes the kernel send RST, which can destroy
                    // the response before the client reads it. Send FIN instead and drain what
                    // the client still sends, as nginx's lingering close does.
                    if self.stream.shutdown(Shutdown::Write).is_err() {
                        return Next::Close;
                    }
                    self.state = State::Lingering { until: Instant::now() + LINGER, discarded: 0 };
                    continue;
                }
                State::Lingering { .. } => return self.discard(buf, stats),
            }
            if !self.readable || self.out.pending > MAX_PENDING {
                return Next::Wait;
            }
            match self.stream.read(buf) {
                Ok(0) => {
                    // The client has finished sending; answer what it asked, then close.
                    self.readable = false;
                    self.state = State::Closing { linger: false };
                }
                Ok(n) => {
                    stats.bytes_read += n as u64;
                    // A short read means the socket buffer was emptied: treat it as drained
                    // and save the read that would return WouldBlock (tokio does the same).
                    // Bytes arriving later raise a new edge, so nothing is missed.
                    if n < buf.len() {
                        self.readable = false;
                    }
                    let flow = self.parser.feed(&buf[..n], self.responses, &mut self.out, &mut stats.requests);
                    if let Flow::Close = flow {
                        self.state = State::Closing { linger: true };
                    }
                }
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock => self.readable = false,
                    io::ErrorKind::Interrupted => {}
                    _ => return Next::Close,
                },
            }
        }
    }

    /// Writes queued output until done or the socket is full.
    fn flush(&mut self, stats: &mut OriginStats) -> io::Result<()> {
        while !self.out.is_empty() {
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let mut count = 0;
            for (slot, slice) in iov.iter_mut().zip(self.out.queue.iter()) {
                *slot = IoSlice::new(slice);
                count += 1;
            }
            match self.stream.write_vectored(&iov[..count]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    stats.bytes_written += n as u64;
                    self.out.advance(n);
                }
                Err(e) => match e.kind() {
                    // The writable edge will call us again.
                    io::ErrorKind::WouldBlock => return Ok(()),
                    io::ErrorKind::Interrupted => {}
                    _ => return Err(e),
                },
            }
        }
        Ok(())
    }

    /// Reads and drops input while lingering.
    fn discard(&mut self, buf: &mut [u8], stats: &mut OriginStats) -> Next {
        let State::Lingering { until, mut discarded } = self.state else { return Next::Close };
        loop {
            match self.stream.read(buf) {
                Ok(0) => return Next::Close,
                Ok(n) => {
                    stats.bytes_read += n as u64;
                    discarded += n as u64;
                    if discarded > MAX_LINGER_BYTES {
                        return Next::Close;
                    }
                    self.state = State::Lingering { until, discarded };
                }
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock => return Next::Wait,
                    io::ErrorKind::Interrupted => {}
                    _ => return Next::Close,
                },
            }
        }
    }
}

/// Responses waiting to be written, as slices of the pre-rendered responses.
#[derive(Default)]
struct Output<'r> {
    queue: VecDeque<&'r [u8]>,
    /// Bytes in `queue`.
    pending: usize,
}

impl<'r> Output<'r> {
    fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    fn push(&mut self, bytes: &'r [u8]) {
        // An empty slice would make a write of zero bytes look like a dead socket.
        if !bytes.is_empty() {
            self.pending += bytes.len();
            self.queue.push_back(bytes);
        }
    }

    /// Drops `n` written bytes from the front.
    fn advance(&mut self, mut n: usize) {
        self.pending = self.pending.saturating_sub(n);
        while let Some(front) = self.queue.front_mut() {
            if n < front.len() {
                *front = &front[n..];
                return;
            }
            n -= front.len();
            self.queue.pop_front();
        }
    }
}

/// Whether the connection continues after a batch of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The last answer closes the connection; input after it is ignored.
    Close,
}

/// Request parsing state kept between reads.
#[derive(Default)]
struct RequestParser {
    /// Bytes of a head split across reads; empty and unallocated in the common case, where
    /// heads are parsed straight from the read buffer.
    partial: Vec<u8>,
    /// Body of the current request still being skipped.
    body: Option<BodyDecoder>,
    /// The answer owed to the current request, sent once its body has been skipped.
    reply: Option<Reply>,
}

/// A parsed request head.
struct Head {
    len: usize,
    body: BodyKind,
    reply: Reply,
    expect_continue: bool,
}

impl RequestParser {
    /// Answers every request completed by `data`.
    fn feed<'r>(&mut self, data: &[u8], responses: &'r Responses, out: &mut Output<'r>, requests: &mut u64) -> Flow {
        if self.partial.is_empty() {
            return match self.consume(data, responses, out, requests) {
                Ok((used, flow)) => {
                    if flow == Flow::Continue && used < data.len() {
                        self.partial.extend_from_slice(&data[used..]);
                    }
                    flow
                }
                Err(_) => bad_request(responses, out),
            };
        }
        let searched = self.partial.len().saturating_sub(2);
        self.partial.extend_from_slice(data);
        // Re-parsing the whole head on every read would be quadratic for a client that sends
        // it a few bytes at a time: parse only once the blank line ending it may be there.
        if !may_end_head(&self.partial[searched..]) {
            if self.partial.len() > MAX_HEAD_BYTES {
                return bad_request(responses, out);
            }
            return Flow::Continue;
        }
        let mut buf = mem::take(&mut self.partial);
        match self.consume(&buf, responses, out, requests) {
            Ok((used, flow)) => {
                if flow == Flow::Continue && used < buf.len() {
                    buf.drain(..used);
                    self.partial = buf;
                }
                flow
            }
            Err(_) => bad_request(responses, out),
        }
    }

    /// Parses heads and skips bodies in `input`; returns the bytes used. Unused bytes are the
    /// start of a head that is not complete yet.
    fn consume<'r>(
        &mut self,
        input: &[u8],
        responses: &'r Responses,
        out: &mut Output<'r>,
        requests: &mut u64,
    ) -> Result<(usize, Flow), ParseError> {
        let mut i = 0;
        loop {
            if let Some(body) = &mut self.body {
                i += body.feed(&input[i..])?;
                if !body.is_done() {
                    return Ok((i, Flow::Continue));
                }
                self.body = None;
            }
            if let Some(reply) = self.reply.take() {
                out.push(responses.get(reply));
                *requests += 1;
                if reply.persist == Persist::Close {
                    return Ok((i, Flow::Close));
                }
            }
            if i == input.len() {
                return Ok((i, Flow::Continue));
            }
            let Some(head) = parse_head(&input[i..])? else {
                if input.len() - i > MAX_HEAD_BYTES {
                    return Err(ParseError::HeadTooLarge);
                }
                return Ok((i, Flow::Continue));
            };
            i += head.len;
            let body = BodyDecoder::new(head.body);
            if !body.is_done() {
                if head.expect_continue {
                    out.push(CONTINUE);
                }
                self.body = Some(body);
            }
            self.reply = Some(head.reply);
        }
    }
}

/// Queues the 400 answer; the connection closes after it.
fn bad_request<'r>(responses: &'r Responses, out: &mut Output<'r>) -> Flow {
    out.push(&responses.bad_request);
    Flow::Close
}

/// True if `bytes` may contain the blank line that ends a head (LF, optional CR, LF).
fn may_end_head(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w == b"\n\n") || bytes.windows(3).any(|w| w == b"\n\r\n")
}

/// Parses one request head; `None` when more bytes are needed.
fn parse_head(input: &[u8]) -> Result<Option<Head>, ParseError> {
    // Uninitialised header slots spare a 3 KiB memset per request.
    let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(input, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
        Err(_) => return Err(ParseError::Head),
    };
    let f = framing(req.headers)?;
    let http10 = req.version == Some(0);
    let head_only = req.method == Some("HEAD");
    let body = match (f.chunked, f.content_length) {
        (true, _) => BodyKind::Chunked,
        (false, Some(n)) => BodyKind::Length(n),
        (false, None) => BodyKind::Empty,
    };
    // Both lengths at once is the shape of a smuggling attempt; chunked wins (RFC 9112 6.3),
    // but the connection must not be reused afterwards.
    let ambiguous = f.chunked && f.content_length.is_some();
    let persist = if f.close || ambiguous || (http10 && !f.keep_alive) {
        Persist::Close
    } else if http10 {
        Persist::KeepAlive10
    } else {
        Persist::KeepAlive
    };
    let expect_continue = !http10
        && req.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("expect") && h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue")
        });
    Ok(Some(Head { len, body, reply: Reply { persist, head_only }, expect_continue }))
}
