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
use std::net::Shutdown;
use std::time::{Duration, Instant};

use super::h2::{self, H2Conn};
use super::live::Counters;
use super::output::{Output, Throttle, MAX_IOV, MAX_PENDING};
use super::requests::{Answer, Flow, RequestParser};
use super::respond::Site;
use super::tls::ServerStream;
use super::ws::{WsConn, WsNext};
use super::Ctx;

/// How long a closing connection waits for the client to finish sending.
const LINGER: Duration = Duration::from_secs(2);
/// Most bytes discarded while lingering before giving up on the client.
const MAX_LINGER_BYTES: u64 = 1024 * 1024;

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
    pub(super) stream: ServerStream,
    parser: RequestParser,
    out: Output<'r>,
    /// The socket may have unread bytes. Edge-triggered readiness is reported once, so this
    /// remembers it across the times reading is paused for output.
    pub(super) readable: bool,
    /// Nothing has been read yet: the first bytes decide between HTTP/1 and HTTP/2.
    fresh: bool,
    /// The HTTP/2 state, once the client has sent the preface; `None` for HTTP/1.
    pub(super) h2: Option<Box<H2Conn>>,
    /// The WebSocket state, once the connection was upgraded (`--ws`).
    ws: Option<Box<WsConn>>,
    /// The client has finished sending; close once everything it asked is answered.
    eof: bool,
    state: State,
    /// Responses sent, for the keep-alive limit.
    served: u64,
    pub(super) throttle: Option<Throttle>,
    /// When the output, now waiting for the clock, can move again.
    pub(super) wake: Option<Instant>,
    /// Since when the socket has taken none of the queued output (the client is not reading).
    pub(super) write_stalled: Option<Instant>,
    /// Identifies this connection in timers that outlive it (its slot may be reused).
    pub(super) generation: u64,
    /// The earliest timer the event loop has set for this connection and not yet fired.
    pub(super) armed: Option<Instant>,
}

impl<'r> Conn<'r> {
    /// A connection that has just been accepted and registered.
    pub(super) fn new(stream: ServerStream, byte_rate: Option<u64>, generation: u64) -> Self {
        Conn {
            stream,
            parser: RequestParser::default(),
            out: Output::default(),
            // The first event after registration reports what is there; assuming readable
            // costs at most one read that would block.
            readable: true,
            fresh: true,
            h2: None,
            ws: None,
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
        if self.h2.is_some() {
            return self.drive_h2(buf, ctx);
        }
        if self.ws.is_some() {
            return self.drive_ws(buf, ctx);
        }
        self.wake = None;
        if self.stream.flush_pending().is_err() {
            return Next::Close;
        }
        loop {
            if !self.out.is_empty() && self.flush(ctx.counters).is_err() {
                return Next::Close;
            }
            match self.state {
                State::Open => {}
                State::Closing { linger } => match self.close_step(linger, buf, ctx) {
                    Some(next) => return next,
                    None => continue,
                },
                State::Lingering { .. } => return self.discard(buf, ctx.counters),
            }
            if self.out.pending > MAX_PENDING {
                return Next::Wait;
            }
            if self.parser.backlog {
                // Requests read earlier and left unparsed while the output was full.
                let arrived = ctx.site.answers_wait().then(Instant::now);
                let mut answer = Answer { ctx: &mut *ctx, out: &mut self.out, served: &mut self.served, arrived };
                match self.parser.resume(&mut answer) {
                    Flow::Upgrade => return self.upgrade_to_h2(buf, ctx),
                    Flow::WebSocket => return self.upgrade_to_ws(buf, ctx),
                    flow => {
                        if let Some(linger) = flow.linger() {
                            self.state = State::Closing { linger };
                        }
                    }
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
            if let Some(next) = self.read_step(buf, ctx) {
                return next;
            }
        }
    }

    /// Closing: once the output is out, close, or half-close and linger. `None`: go on driving
    /// (the connection now lingers).
    fn close_step(&mut self, linger: Linger, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Option<Next> {
        if !self.out.is_empty() {
            return Some(Next::Wait);
        }
        match linger {
            Linger::No => return Some(Next::Close),
            Linger::IfUnread => match self.stream.read(buf) {
                // Nothing unread, so closing sends FIN, not RST.
                Ok(0) => return Some(Next::Close),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(Next::Close),
                Ok(n) => ctx.counters.bytes_read.add(n as u64),
                Err(_) => return Some(Next::Close),
            },
            Linger::Always => {}
        }
        // Closing with unread input makes the kernel send RST, which can destroy the response
        // before the client reads it. Send FIN instead and drain what the client still sends,
        // as nginx's lingering close does.
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return Some(Next::Close);
        }
        self.state = State::Lingering { until: Instant::now() + LINGER, discarded: 0 };
        None
    }

    /// One read and what it asks for. `Some`: driving ends here (closed, or the connection
    /// became HTTP/2); `None`: go on.
    fn read_step(&mut self, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Option<Next> {
        match read_some(&mut self.stream, &mut self.readable, buf, ctx.counters) {
            Got::Eof => self.eof = true,
            Got::Data(n) => {
                if self.fresh {
                    self.fresh = false;
                    if h2::is_preface(&buf[..n]) {
                        return Some(self.switch_to_h2(n, buf, ctx));
                    }
                }
                let arrived = ctx.site.answers_wait().then(Instant::now);
                let mut answer = Answer { ctx: &mut *ctx, out: &mut self.out, served: &mut self.served, arrived };
                match self.parser.feed(&buf[..n], &mut answer) {
                    Flow::Upgrade => return Some(self.upgrade_to_h2(buf, ctx)),
                    Flow::WebSocket => return Some(self.upgrade_to_ws(buf, ctx)),
                    flow => {
                        if let Some(linger) = flow.linger() {
                            self.state = State::Closing { linger };
                        }
                    }
                }
            }
            Got::Nothing => {}
            Got::Failed => return Some(Next::Close),
        }
        None
    }

    /// Hands the connection to the HTTP/2 driver, with the first `n` bytes of `buf` read.
    #[cold]
    fn switch_to_h2(&mut self, n: usize, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Next {
        let Some(mut h2) = H2Conn::new(ctx.site) else { return Next::Close };
        if !h2.receive(&buf[..n], ctx) {
            return Next::Close;
        }
        self.h2 = Some(h2);
        self.drive_h2(buf, ctx)
    }

    /// Answers `101 Switching Protocols` to the request the parser holds and continues as
    /// HTTP/2, with that request as stream 1.
    #[cold]
    fn upgrade_to_h2(&mut self, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Next {
        let Some(upgrade) = self.parser.upgrade.take() else { return Next::Close };
        let Some(h2) = H2Conn::upgraded(*upgrade, ctx) else { return Next::Close };
        self.h2 = Some(h2);
        self.drive_h2(buf, ctx)
    }

    /// Answers `101 Switching Protocols` to the WebSocket upgrade the parser holds and goes on
    /// echoing its messages.
    #[cold]
    fn upgrade_to_ws(&mut self, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Next {
        let (Some(accepted), Some(config)) = (self.parser.websocket.take(), ctx.site.ws.as_ref()) else {
            return Next::Close;
        };
        let mut ws = WsConn::new(&accepted, config);
        let mut rest = accepted.rest;
        if ws.receive(&mut rest, ctx) == WsNext::Close {
            return Next::Close;
        }
        self.ws = Some(ws);
        self.drive_ws(buf, ctx)
    }

    /// Queues a broadcast on a WebSocket connection and writes it; false if it is not one.
    pub(super) fn push_ws(&mut self, text: &[u8], buf: &mut [u8], ctx: &mut Ctx<'r>) -> Option<Next> {
        self.ws.as_deref_mut()?.push(text);
        ctx.counters.ws_broadcasts.add(1);
        Some(self.drive_ws(buf, ctx))
    }

    /// Makes all the progress the socket allows on a WebSocket connection: write, read, echo
    /// (held echoes go out when due: [`Conn::wake`] says when).
    fn drive_ws(&mut self, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Next {
        let Some(ws) = self.ws.as_deref_mut() else { return Next::Close };
        loop {
            self.wake = if ctx.site.delay.is_some() { ws.release(Instant::now()) } else { None };
            if ws.flush(&mut self.stream, ctx.counters) == WsNext::Close {
                return Next::Close;
            }
            if ws.backed_up() || !self.readable {
                return Next::Wait;
            }
            match read_some(&mut self.stream, &mut self.readable, buf, ctx.counters) {
                Got::Eof | Got::Failed => return Next::Close,
                Got::Nothing => {}
                Got::Data(n) => {
                    if ws.receive(&mut buf[..n], ctx) == WsNext::Close {
                        return Next::Close;
                    }
                }
            }
        }
    }

    /// Makes all the progress the socket and the clock allow on an HTTP/2 connection: submit the
    /// answers that are due, write, read, answer, repeat. One loop, a line over the usual
    /// length: writing and reading take turns until the socket or the session stops them, and
    /// each half's exits are the other's.
    fn drive_h2(&mut self, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Next {
        let Some(h2) = self.h2.as_deref_mut() else { return Next::Close };
        if self.stream.flush_pending().is_err() {
            return Next::Close;
        }
        loop {
            self.wake = h2.release(ctx);
            if h2.pos == h2.out.len() {
                h2.out.clear();
                h2.pos = 0;
                if h2.session.output_upto(&mut h2.out, h2::OUT_LIMIT).is_err() {
                    return Next::Close;
                }
            }
            if h2.pos < h2.out.len() {
                let mut limit = h2.out.len() - h2.pos;
                if let Some(throttle) = &mut self.throttle {
                    match throttle.allowance(Instant::now()) {
                        Ok(n) => limit = limit.min(n),
                        // Reading waits too, as for a full socket.
                        Err(at) => {
                            self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
                            return Next::Wait;
                        }
                    }
                }
                match self.stream.write(&h2.out[h2.pos..h2.pos + limit]) {
                    Ok(0) => return Next::Close,
                    Ok(n) => {
                        self.write_stalled = None;
                        ctx.counters.bytes_written.add(n as u64);
                        h2.pos += n;
                        if let Some(throttle) = &mut self.throttle {
                            throttle.spend(n);
                        }
                        continue;
                    }
                    Err(e) => match e.kind() {
                        // Reading waits too: a client that sends and never reads must not make
                        // the session queue answers without bound. The writable edge resumes.
                        io::ErrorKind::WouldBlock => {
                            self.write_stalled.get_or_insert_with(Instant::now);
                            return Next::Wait;
                        }
                        io::ErrorKind::Interrupted => continue,
                        _ => return Next::Close,
                    },
                }
            }
            if h2.session.is_done() {
                return Next::Close;
            }
            if !self.readable {
                return Next::Wait;
            }
            match read_some(&mut self.stream, &mut self.readable, buf, ctx.counters) {
                // The client has finished; streams it left open cannot be answered.
                Got::Eof | Got::Failed => return Next::Close,
                Got::Nothing => {}
                Got::Data(n) => {
                    if !h2.receive(&buf[..n], ctx) {
                        // Send the GOAWAY nghttp2 queued for the error, if the socket takes it.
                        let mut out = Vec::new();
                        if h2.session.output(&mut out).is_ok() && h2.pos == h2.out.len() {
                            let _ = self.stream.write(&out);
                        }
                        return Next::Close;
                    }
                }
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

/// What one read of a client's socket gave.
enum Got {
    /// Bytes, at the start of the buffer.
    Data(usize),
    /// Nothing now (the socket is drained, or the read was interrupted).
    Nothing,
    /// The client has finished sending.
    Eof,
    /// The socket failed.
    Failed,
}

/// One read into `buf`, counted; `readable` is cleared once the socket is drained for now. A
/// short read means the socket buffer was emptied: it is taken as drained, saving the read that
/// would return WouldBlock (tokio does the same); bytes arriving later raise a new edge.
fn read_some(stream: &mut ServerStream, readable: &mut bool, buf: &mut [u8], counters: &Counters) -> Got {
    match stream.read(buf) {
        Ok(0) => {
            *readable = false;
            Got::Eof
        }
        Ok(n) => {
            counters.bytes_read.add(n as u64);
            if n < buf.len() && stream.short_read_drains() {
                *readable = false;
            }
            Got::Data(n)
        }
        Err(e) => match e.kind() {
            io::ErrorKind::WouldBlock => {
                *readable = false;
                Got::Nothing
            }
            io::ErrorKind::Interrupted => Got::Nothing,
            _ => Got::Failed,
        },
    }
}

impl Flow {
    /// How the connection closes, if it does.
    fn linger(self) -> Option<Linger> {
        match self {
            Flow::Continue => None,
            Flow::Close => Some(Linger::IfUnread),
            Flow::Reject => Some(Linger::Always),
            // Handled before asking.
            Flow::Upgrade | Flow::WebSocket => None,
        }
    }
}
