//! One accepted connection: reading and parsing requests, queueing responses, writing them when
//! they are due and as fast as allowed, and closing politely.
//!
//! Output is a queue of parts handed to one `writev`. Fixed responses are slices of the
//! pre-rendered [`Responses`](super::respond::Responses), never copied: a pipeline of requests
//! becomes a list of slices, and a partial write only advances the front one. Document heads and
//! small bodies are rendered into one per-connection buffer that keeps its memory between
//! requests; large bodies are generated a chunk at a time as the socket takes them, so a
//! 5 MB document never exists whole. Requests are answered once their body has been skipped, so
//! a response never overtakes the request it answers; a delayed response holds back everything
//! after it, so pipelined answers keep their order.
//!
//! What a client can make a connection hold is bounded: a head is at most `MAX_HEAD_BYTES`,
//! queued output at most [`MAX_PENDING`], and a head must arrive whole within the header timeout
//! once it has begun, and queued output must be taken by the client within the send timeout
//! (the worker's sweep closes connections that break either; an idle keep-alive connection is
//! left alone, as a paced load generator keeps some idle for long).

use std::io::{self, IoSlice, Read, Write};
use std::mem::{self, MaybeUninit};
use std::net::Shutdown;
use std::time::{Duration, Instant};

use mio::net::TcpStream;

use super::live::Counters;
use super::output::{Output, Stream, Throttle};
use super::respond::{doc_path, document, Site};
use super::{Ctx, Kind, Persist, Reply, CONTINUE, STATS_PATH};
use crate::http::body::{BodyDecoder, BodyKind};
use crate::http::{framing, may_end_head, ParseError, MAX_HEADERS, MAX_HEAD_BYTES};
use crate::workload::doc::Doc;

/// Queued output beyond which requests are left unparsed and reading stops until the client
/// takes some; a client that pipelines without reading cannot make us queue without bound.
const MAX_PENDING: usize = 256 * 1024;
/// Slices handed to one `writev`.
pub(super) const MAX_IOV: usize = 64;
/// How long a closing connection waits for the client to finish sending.
const LINGER: Duration = Duration::from_secs(2);
/// Most bytes discarded while lingering before giving up on the client.
const MAX_LINGER_BYTES: u64 = 1024 * 1024;
/// Document bodies up to this size are rendered with their head; larger ones are streamed.
const INLINE_BODY: u64 = 8 * 1024;
/// Bytes of a streamed body generated at a time.
pub(super) const CHUNK: u64 = 64 * 1024;
/// What a queued streamed body counts toward [`MAX_PENDING`]: the memory it will hold.
pub(super) const BODY_COST: usize = CHUNK as usize;
/// An output buffer larger than this is freed when it empties instead of kept for reuse, so
/// idle connections hold little memory.
pub(super) const KEEP_BUF: usize = 16 * 1024;
/// Written bytes at the front of the output buffer are dropped once there are this many and
/// they are at least half of it.
pub(super) const COMPACT_AT: usize = 64 * 1024;

/// Why [`Conn::expired`] says a connection is to be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expiry {
    /// Lingering after our close took too long.
    Linger,
    /// A request head did not arrive whole within the header timeout.
    Header,
    /// The client read none of our output within the send timeout.
    Send,
}

/// What the event loop should do with the connection after [`Conn::drive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Keep it and wait for the next event (or its timer, see [`Conn::wake`]).
    Wait,
    /// Drop it.
    Close,
}

/// Whether a closing connection drains what the client may still send before closing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linger {
    /// The client has finished sending: close at once.
    No,
    /// We closed after a complete request (`Connection: close`, the keep-alive limit): linger
    /// only if input is already waiting. A client that read the close sends nothing more, and
    /// closing at once saves a wake-up per connection under churn.
    IfUnread,
    /// We refused a request the client may still be sending: always linger.
    Always,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Serving requests.
    Open,
    /// No more requests are read; close once the output is flushed, lingering as `linger` says.
    Closing { linger: Linger },
    /// Our side is shut; reading and discarding until the client closes or time runs out.
    Lingering { until: Instant, discarded: u64 },
}

/// One client connection owned by one worker thread.
pub(super) struct Conn<'r> {
    stream: TcpStream,
    parser: RequestParser,
    out: Output<'r>,
    /// The socket may have unread bytes. Edge-triggered readiness is reported once, so this
    /// remembers it across the times reading is paused for output.
    readable: bool,
    /// The client has finished sending; close once everything it asked is answered.
    eof: bool,
    state: State,
    /// Responses sent, for the keep-alive limit.
    served: u64,
    throttle: Option<Throttle>,
    /// When the output, now waiting for the clock, can move again.
    wake: Option<Instant>,
    /// Since when the socket has taken none of the queued output (the client is not reading).
    write_stalled: Option<Instant>,
    /// Identifies this connection in timers that outlive it (its slot may be reused).
    pub(super) generation: u64,
    /// The earliest timer the event loop has set for this connection and not yet fired.
    pub(super) armed: Option<Instant>,
}

impl<'r> Conn<'r> {
    /// A connection that has just been accepted and registered.
    pub(super) fn new(stream: TcpStream, byte_rate: Option<u64>, generation: u64) -> Self {
        Conn {
            stream,
            parser: RequestParser::default(),
            out: Output::default(),
            // The first event after registration reports what is there; assuming readable
            // costs at most one read that would block.
            readable: true,
            eof: false,
            state: State::Open,
            served: 0,
            throttle: byte_rate.map(Throttle::new),
            wake: None,
            write_stalled: None,
            generation,
            armed: None,
        }
    }

    /// Records a readiness edge for reading.
    pub(super) fn set_readable(&mut self) {
        self.readable = true;
    }

    /// Why the connection should just be dropped now, if it should: it lingered too long, a
    /// request head has been arriving for longer than the header timeout (slowloris), or the
    /// client has taken none of our output for longer than the send timeout.
    pub(super) fn expired(&self, now: Instant, site: &Site) -> Option<Expiry> {
        let over = |since: Option<Instant>, limit: Option<Duration>| {
            since.zip(limit).is_some_and(|(since, limit)| now.saturating_duration_since(since) >= limit)
        };
        match self.state {
            State::Lingering { until, .. } if now >= until => Some(Expiry::Linger),
            State::Lingering { .. } => None,
            _ if over(self.write_stalled, site.send_timeout) => Some(Expiry::Send),
            State::Open if over(self.parser.head_since, site.header_timeout) => Some(Expiry::Header),
            _ => None,
        }
    }

    /// When to drive this connection again even without an event: its output waits for a
    /// response delay or the byte rate.
    pub(super) fn wake(&self) -> Option<Instant> {
        self.wake
    }

    /// Makes all the progress the socket and the clock allow: write, read, answer, repeat.
    pub(super) fn drive(&mut self, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Next {
        self.wake = None;
        loop {
            if !self.out.is_empty() && self.flush(ctx.counters).is_err() {
                return Next::Close;
            }
            match self.state {
                State::Open => {}
                State::Closing { linger } => {
                    if !self.out.is_empty() {
                        return Next::Wait;
                    }
                    match linger {
                        Linger::No => return Next::Close,
                        Linger::IfUnread => match self.stream.read(buf) {
                            // Nothing unread, so closing sends FIN, not RST.
                            Ok(0) => return Next::Close,
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Close,
                            Ok(n) => ctx.counters.bytes_read.add(n as u64),
                            Err(_) => return Next::Close,
                        },
                        Linger::Always => {}
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
                State::Lingering { .. } => return self.discard(buf, ctx.counters),
            }
            if self.out.pending > MAX_PENDING {
                return Next::Wait;
            }
            if self.parser.backlog {
                // Requests read earlier and left unparsed while the output was full.
                let due = ctx.site.delay.map(|d| Instant::now() + d);
                let mut answer = Answer { ctx: &mut *ctx, out: &mut self.out, served: &mut self.served, due };
                if let Some(linger) = self.parser.resume(&mut answer).linger() {
                    self.state = State::Closing { linger };
                }
                continue;
            }
            if self.eof {
                // The client has finished sending; answer what it asked, then close.
                self.state = State::Closing { linger: Linger::No };
                continue;
            }
            if !self.readable {
                return Next::Wait;
            }
            match self.stream.read(buf) {
                Ok(0) => {
                    self.readable = false;
                    self.eof = true;
                }
                Ok(n) => {
                    ctx.counters.bytes_read.add(n as u64);
                    // A short read means the socket buffer was emptied: treat it as drained
                    // and save the read that would return WouldBlock (tokio does the same).
                    // Bytes arriving later raise a new edge, so nothing is missed.
                    if n < buf.len() {
                        self.readable = false;
                    }
                    let due = ctx.site.delay.map(|d| Instant::now() + d);
                    let mut answer = Answer { ctx: &mut *ctx, out: &mut self.out, served: &mut self.served, due };
                    if let Some(linger) = self.parser.feed(&buf[..n], &mut answer).linger() {
                        self.state = State::Closing { linger };
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

    /// Writes queued output until done, the socket is full, or the clock holds it back (then
    /// [`Conn::wake`] says until when).
    fn flush(&mut self, counters: &Counters) -> io::Result<()> {
        while !self.out.is_empty() {
            // The clock is read only when a delay or the byte rate needs it.
            let mut now = None;
            if let Some(due) = self.out.front_due() {
                let t = *now.get_or_insert_with(Instant::now);
                if t < due {
                    self.wake = Some(due);
                    return Ok(());
                }
                self.out.pop_due();
                continue;
            }
            let mut limit = usize::MAX;
            if let Some(throttle) = &mut self.throttle {
                match throttle.allowance(*now.get_or_insert_with(Instant::now)) {
                    Ok(n) => limit = n,
                    Err(at) => {
                        self.wake = Some(at);
                        return Ok(());
                    }
                }
            }
            self.out.prepare();
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let count = self.out.slices(&mut iov, limit, now);
            if count == 0 {
                // Cannot happen (the front always has bytes); never spin on it.
                debug_assert!(false, "nothing to write");
                return Ok(());
            }
            match self.stream.write_vectored(&iov[..count]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.write_stalled = None;
                    counters.bytes_written.add(n as u64);
                    self.out.advance(n);
                    if let Some(throttle) = &mut self.throttle {
                        throttle.spend(n);
                    }
                }
                Err(e) => match e.kind() {
                    // The writable edge will call us again.
                    io::ErrorKind::WouldBlock => {
                        self.write_stalled.get_or_insert_with(Instant::now);
                        return Ok(());
                    }
                    io::ErrorKind::Interrupted => {}
                    _ => return Err(e),
                },
            }
        }
        Ok(())
    }

    /// Reads and drops input while lingering.
    fn discard(&mut self, buf: &mut [u8], counters: &Counters) -> Next {
        let State::Lingering { until, mut discarded } = self.state else { return Next::Close };
        loop {
            match self.stream.read(buf) {
                Ok(0) => return Next::Close,
                Ok(n) => {
                    counters.bytes_read.add(n as u64);
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

/// Whether the connection continues after a batch of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The last answer closes the connection; input after it is ignored.
    Close,
    /// A request was refused (400) and the connection closes; the client may still be sending.
    Reject,
}

impl Flow {
    /// How the connection closes, if it does.
    fn linger(self) -> Option<Linger> {
        match self {
            Flow::Continue => None,
            Flow::Close => Some(Linger::IfUnread),
            Flow::Reject => Some(Linger::Always),
        }
    }
}

/// Everything answering a request touches.
struct Answer<'a, 'r> {
    ctx: &'a mut Ctx<'r>,
    out: &'a mut Output<'r>,
    served: &'a mut u64,
    /// When responses to this batch of input may start: the configured delay after it arrived.
    due: Option<Instant>,
}

impl Answer<'_, '_> {
    /// Queues the answer to one request; `path` is the document path for documents.
    #[inline(always)]
    fn answer(&mut self, reply: Reply, path: &str) -> Flow {
        let site = self.ctx.site;
        if reply.kind == Kind::Fixed && site.keepalive == 0 && self.due.is_none() {
            // The benchmark path: one counter and one slice of a pre-rendered response. The
            // fixed responses' share of `ok` is worked out when counters are read.
            self.ctx.counters.requests.add(1);
            self.out.push(site.fixed.get(reply));
            return if reply.persist == Persist::Close { Flow::Close } else { Flow::Continue };
        }
        self.answer_any(reply, path)
    }

    /// [`Answer::answer`] for everything but the plainest fixed response.
    #[inline(never)]
    fn answer_any(&mut self, mut reply: Reply, path: &str) -> Flow {
        let site = self.ctx.site;
        if let Kind::Stats = reply.kind {
            // Not a request of the test: uncounted, undelayed, outside the keep-alive limit.
            self.stats(reply);
            return if reply.persist == Persist::Close { Flow::Close } else { Flow::Continue };
        }
        *self.served += 1;
        if *self.served == site.keepalive {
            reply.persist = Persist::Close;
        }
        if let Some(at) = self.due {
            self.out.push_due(at);
        }
        let aborted = match reply.kind {
            Kind::Doc { doc, conditional } => self.document(reply, doc, conditional, path),
            _ => {
                self.out.push(site.fixed.get(reply));
                false
            }
        };
        // Counted last, so a live reader never sees a document before its status (see
        // `Counters::snapshot`).
        self.ctx.counters.requests.add(1);
        if aborted || reply.persist == Persist::Close {
            Flow::Close
        } else {
            Flow::Continue
        }
    }

    /// Queues a document response; true if it is cut short (the connection must close).
    fn document(&mut self, reply: Reply, doc: Doc, conditional: bool, path: &str) -> bool {
        let site = self.ctx.site;
        let counters = self.ctx.counters;
        let mark = self.out.buf().len();
        if conditional && self.ctx.rng.chance(site.ims_not_modified) {
            site.doc_head(self.out.buf(), true, doc, reply.persist);
            self.out.commit(mark);
            counters.not_modified.add(1);
            return false;
        }
        counters.doc_ok.add(1);
        site.doc_head(self.out.buf(), false, doc, reply.persist);
        if reply.head_only || doc.len == 0 {
            self.out.commit(mark);
            return false;
        }
        let cut = self.ctx.rng.chance(site.abort_rate).then(|| self.ctx.rng.below(doc.len));
        let end = cut.unwrap_or(doc.len);
        if end <= INLINE_BODY {
            let buf = self.out.buf();
            buf.reserve(end as usize);
            doc.body_range(path, 0, end, buf);
            self.out.commit(mark);
        } else {
            self.out.commit(mark);
            self.out.push_body(Stream { doc, path: path.into(), next: 0, end });
        }
        if cut.is_some() {
            counters.aborted.add(1);
        }
        cut.is_some()
    }

    /// Queues the `/_strain/stats` answer: the server's counters as JSON.
    fn stats(&mut self, reply: Reply) {
        // Serialising plain numbers cannot fail; an empty body would be the harmless fallback.
        let json = serde_json::to_vec(&self.ctx.live.snapshot()).unwrap_or_default();
        let mark = self.out.buf().len();
        let buf = self.out.buf();
        self.ctx.site.stats_head(buf, json.len(), reply.persist);
        if !reply.head_only {
            buf.extend_from_slice(&json);
        }
        self.out.commit(mark);
    }
}

/// Request parsing state kept between reads.
#[derive(Default)]
struct RequestParser {
    /// Bytes of a head split across reads, or requests left unparsed while the output was
    /// full; empty and unallocated in the common case, where heads are parsed straight from
    /// the read buffer.
    partial: Vec<u8>,
    /// `partial` may hold complete requests: parse it before reading more.
    backlog: bool,
    /// Body of the current request still being skipped.
    body: Option<BodyDecoder>,
    /// The answer owed to the current request, sent once its body has been skipped.
    reply: Option<Reply>,
    /// The document path of `reply`, kept (with its capacity) across reads.
    path: String,
    /// When the head now in `partial` began to arrive; `None` when no head is incomplete. Only
    /// a read that ends inside a head reads the clock, which a benchmark client's never does.
    head_since: Option<Instant>,
}

/// A parsed request head.
struct Head<'a> {
    len: usize,
    body: BodyKind,
    reply: Reply,
    expect_continue: bool,
    /// The document path, for documents.
    path: &'a str,
}

impl RequestParser {
    /// Notes that `partial` ends with an incomplete head; `new` if that head is not the one
    /// noted before (an earlier one was completed in the meantime).
    fn head_started(&mut self, new: bool) {
        if self.backlog {
            // Complete requests held back by our own full output: not the client's slowness.
            self.head_since = None;
        } else if new || self.head_since.is_none() {
            self.head_since = Some(Instant::now());
        }
    }

    /// Answers every request completed by `data`, as far as the output has room.
    fn feed(&mut self, data: &[u8], answer: &mut Answer<'_, '_>) -> Flow {
        debug_assert!(!self.backlog, "reading with requests still unparsed");
        if self.partial.is_empty() {
            return match self.consume(data, answer) {
                Ok((used, flow)) => {
                    if flow == Flow::Continue && used < data.len() {
                        self.partial.extend_from_slice(&data[used..]);
                        self.head_started(true);
                    }
                    flow
                }
                Err(_) => bad_request(answer),
            };
        }
        let searched = self.partial.len();
        self.partial.extend_from_slice(data);
        // Re-parsing the whole head on every read would be quadratic for a client that sends
        // it a few bytes at a time: parse only once the blank line ending it may be there.
        if !may_end_head(&self.partial, searched) {
            if self.partial.len() > MAX_HEAD_BYTES {
                return bad_request(answer);
            }
            return Flow::Continue;
        }
        self.consume_partial(answer)
    }

    /// Answers requests left unparsed while the output was full.
    fn resume(&mut self, answer: &mut Answer<'_, '_>) -> Flow {
        self.backlog = false;
        self.consume_partial(answer)
    }

    fn consume_partial(&mut self, answer: &mut Answer<'_, '_>) -> Flow {
        let mut buf = mem::take(&mut self.partial);
        match self.consume(&buf, answer) {
            Ok((used, flow)) => {
                if flow == Flow::Continue && used < buf.len() {
                    buf.drain(..used);
                    self.partial = buf;
                    self.head_started(used > 0);
                } else {
                    self.head_since = None;
                }
                flow
            }
            Err(_) => bad_request(answer),
        }
    }

    /// Parses heads and skips bodies in `input`; returns the bytes used. Unused bytes are the
    /// start of a head that is not complete yet, or requests held back because the output is
    /// full (then `backlog` is set).
    fn consume(&mut self, input: &[u8], answer: &mut Answer<'_, '_>) -> Result<(usize, Flow), ParseError> {
        let mut i = 0;
        loop {
            if let Some(body) = &mut self.body {
                i += body.feed(&input[i..])?;
                if !body.is_done() {
                    return Ok((i, Flow::Continue));
                }
                self.body = None;
                if let Some(reply) = self.reply.take() {
                    let path = mem::take(&mut self.path);
                    let flow = answer.answer(reply, &path);
                    self.path = path;
                    if flow == Flow::Close {
                        return Ok((i, Flow::Close));
                    }
                }
            }
            if i == input.len() {
                return Ok((i, Flow::Continue));
            }
            if answer.out.pending > MAX_PENDING {
                self.backlog = true;
                return Ok((i, Flow::Continue));
            }
            let Some(head) = parse_head(&input[i..])? else {
                if input.len() - i > MAX_HEAD_BYTES {
                    return Err(ParseError::HeadTooLarge);
                }
                return Ok((i, Flow::Continue));
            };
            if head.len > MAX_HEAD_BYTES {
                // Its end arrived in a later read than the limit was crossed in.
                return Err(ParseError::HeadTooLarge);
            }
            i += head.len;
            let body = BodyDecoder::new(head.body);
            if body.is_done() {
                if answer.answer(head.reply, head.path) == Flow::Close {
                    return Ok((i, Flow::Close));
                }
                continue;
            }
            if head.expect_continue {
                answer.out.push(CONTINUE);
            }
            self.body = Some(body);
            self.reply = Some(head.reply);
            if let Kind::Doc { .. } = head.reply.kind {
                self.path.clear();
                self.path.push_str(head.path);
            }
        }
    }
}

/// Queues the 400 answer; the connection closes after it.
fn bad_request(answer: &mut Answer<'_, '_>) -> Flow {
    let site = answer.ctx.site;
    answer.ctx.counters.bad_requests.add(1);
    answer.out.push(&site.fixed.bad_request);
    Flow::Reject
}

/// Parses one request head; `None` when more bytes are needed.
fn parse_head(input: &[u8]) -> Result<Option<Head<'_>>, ParseError> {
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
    let head_only = req.method == Some("HEAD");
    let body = f.request_body()?;
    let persist = if f.close || f.ambiguous() || (http10 && !f.keep_alive) {
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
    let path = doc_path(req.path.unwrap_or("/"));
    let kind = match document(path) {
        Some(doc) => {
            let conditional = req.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("if-modified-since") || h.name.eq_ignore_ascii_case("if-none-match")
            });
            Kind::Doc { doc, conditional }
        }
        None if path == STATS_PATH => Kind::Stats,
        None => Kind::Fixed,
    };
    Ok(Some(Head { len, body, reply: Reply { persist, head_only, kind }, expect_continue, path }))
}

#[cfg(test)]
mod fuzz;
