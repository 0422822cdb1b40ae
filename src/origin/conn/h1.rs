//! HTTP/1 on an origin connection: reading and parsing requests, queueing responses, writing
//! them when they are due and as fast as allowed, and closing politely.
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

use crate::origin::h2;
use crate::origin::link::{over, Expiry, Got, Link, Next};
use crate::origin::live::Counters;
use crate::origin::output::{Output, MAX_IOV, MAX_PENDING};
use crate::origin::requests::{Answer, Flow, RequestParser, Upgrade};
use crate::origin::respond::Site;
use crate::origin::Ctx;

/// How long a closing connection waits for the client to finish sending.
const LINGER: Duration = Duration::from_secs(2);
/// Most bytes discarded while lingering before giving up on the client.
const MAX_LINGER_BYTES: u64 = 1024 * 1024;

/// The protocol an HTTP/1 connection turns into, with what the new driver starts from.
pub(super) enum Switch {
    /// The first bytes read, this many at the start of the buffer, are HTTP/2's preface.
    Preface(usize),
    /// The request asked `Upgrade: h2c`.
    H2c(Box<Upgrade>),
    /// A unit took the request: its driver, and the unit's place.
    Unit(Box<dyn crate::origin::unit::Driver>, crate::origin::unit::Place),
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

/// The HTTP/1 state of one connection.
pub(super) struct H1Conn<'r> {
    parser: RequestParser,
    out: Output<'r>,
    /// Nothing has been read yet: the first bytes decide between HTTP/1 and HTTP/2.
    fresh: bool,
    /// The client has finished sending; close once everything it asked is answered.
    eof: bool,
    state: State,
    /// Responses sent, for the keep-alive limit.
    served: u64,
}

impl Default for H1Conn<'_> {
    fn default() -> Self {
        H1Conn {
            parser: RequestParser::default(),
            out: Output::default(),
            fresh: true,
            eof: false,
            state: State::Open,
            served: 0,
        }
    }
}

impl<'r> H1Conn<'r> {
    /// Why the connection should be dropped now (see [`super::Conn::expired`]).
    pub(super) fn expired(&self, link: &Link, now: Instant, site: &Site) -> Option<Expiry> {
        match self.state {
            State::Lingering { until, .. } if now >= until => Some(Expiry::Linger),
            State::Lingering { .. } => None,
            _ if link.send_expired(now, site.send_timeout) => Some(Expiry::Send),
            State::Open if over(self.parser.head_since, site.header_timeout, now) => Some(Expiry::Header),
            _ => None,
        }
    }

    /// Makes all the progress the socket and the clock allow: write, read, answer, repeat;
    /// `Err` when the connection turns into another protocol.
    pub(super) fn drive(&mut self, link: &mut Link, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Result<Next, Switch> {
        link.wake = None;
        if link.stream.flush_pending().is_err() {
            return Ok(Next::Close);
        }
        loop {
            if !self.out.is_empty() && self.flush(link, ctx.counters).is_err() {
                return Ok(Next::Close);
            }
            match self.state {
                State::Open => {}
                State::Closing { linger } => match self.close_step(link, linger, buf, ctx) {
                    Some(next) => return Ok(next),
                    None => continue,
                },
                State::Lingering { .. } => return Ok(self.discard(link, buf, ctx.counters)),
            }
            if self.out.pending > MAX_PENDING {
                return Ok(Next::Wait);
            }
            if self.parser.backlog {
                // Requests read earlier and left unparsed while the output was full.
                let arrived = ctx.site.answers_wait().then(Instant::now);
                let mut answer = Answer { ctx: &mut *ctx, out: &mut self.out, served: &mut self.served, arrived };
                let flow = self.parser.resume(&mut answer);
                self.follow(flow)?;
                continue;
            }
            if self.eof {
                // The client has finished sending; answer what it asked, then close.
                self.state = State::Closing { linger: Linger::No };
                continue;
            }
            if !link.readable {
                return Ok(Next::Wait);
            }
            if let Some(next) = self.read_step(link, buf, ctx)? {
                return Ok(next);
            }
        }
    }

    /// Goes on as the parser's `flow` says: closing, or switching protocols.
    fn follow(&mut self, flow: Flow) -> Result<(), Switch> {
        match flow {
            Flow::Upgrade => match self.parser.upgrade.take() {
                Some(upgrade) => return Err(Switch::H2c(upgrade)),
                None => self.state = State::Closing { linger: Linger::No },
            },
            Flow::Unit => match self.parser.claimed.take() {
                Some((driver, place)) => return Err(Switch::Unit(driver, place)),
                None => self.state = State::Closing { linger: Linger::No },
            },
            flow => {
                if let Some(linger) = flow.linger() {
                    self.state = State::Closing { linger };
                }
            }
        }
        Ok(())
    }

    /// Closing: once the output is out, close, or half-close and linger. `None`: go on driving
    /// (the connection now lingers).
    fn close_step(&mut self, link: &mut Link, linger: Linger, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Option<Next> {
        if !self.out.is_empty() {
            return Some(Next::Wait);
        }
        match linger {
            Linger::No => return Some(Next::Close),
            Linger::IfUnread => match link.stream.read(buf) {
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
        if link.stream.shutdown(Shutdown::Write).is_err() {
            return Some(Next::Close);
        }
        self.state = State::Lingering { until: Instant::now() + LINGER, discarded: 0 };
        None
    }

    /// One read and what it asks for. `Ok(Some)`: driving ends here (closed); `Err`: the
    /// connection turns into another protocol; `Ok(None)`: go on.
    fn read_step(&mut self, link: &mut Link, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Result<Option<Next>, Switch> {
        match link.read_some(buf, ctx.counters) {
            Got::Eof => self.eof = true,
            Got::Data(n) => {
                if self.fresh {
                    self.fresh = false;
                    if h2::is_preface(&buf[..n]) {
                        return Err(Switch::Preface(n));
                    }
                }
                let arrived = ctx.site.answers_wait().then(Instant::now);
                let mut answer = Answer { ctx: &mut *ctx, out: &mut self.out, served: &mut self.served, arrived };
                let flow = self.parser.feed(&buf[..n], &mut answer);
                self.follow(flow)?;
            }
            Got::Nothing => {}
            Got::Failed => return Ok(Some(Next::Close)),
        }
        Ok(None)
    }

    /// Writes queued output until done, the socket is full, or the clock holds it back (then
    /// [`super::Conn::wake`] says until when).
    fn flush(&mut self, link: &mut Link, counters: &Counters) -> io::Result<()> {
        while !self.out.is_empty() {
            // The clock is read only when a delay or the byte rate needs it.
            let mut now = None;
            if let Some(due) = self.out.front_due() {
                let t = *now.get_or_insert_with(Instant::now);
                if t < due {
                    link.wake = Some(due);
                    return Ok(());
                }
                self.out.pop_due();
                continue;
            }
            let mut limit = usize::MAX;
            if let Some(throttle) = &mut link.throttle {
                match throttle.allowance(*now.get_or_insert_with(Instant::now)) {
                    Ok(n) => limit = n,
                    Err(at) => {
                        link.wake = Some(at);
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
            match link.stream.write_vectored(&iov[..count]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    link.write_stalled = None;
                    counters.bytes_written.add(n as u64);
                    self.out.advance(n);
                    if let Some(throttle) = &mut link.throttle {
                        throttle.spend(n);
                    }
                }
                Err(e) => match e.kind() {
                    // The writable edge will call us again.
                    io::ErrorKind::WouldBlock => {
                        link.write_stalled.get_or_insert_with(Instant::now);
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
    fn discard(&mut self, link: &mut Link, buf: &mut [u8], counters: &Counters) -> Next {
        let State::Lingering { until, mut discarded } = self.state else { return Next::Close };
        loop {
            match link.stream.read(buf) {
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

impl Flow {
    /// How the connection closes, if it does.
    fn linger(self) -> Option<Linger> {
        match self {
            Flow::Continue => None,
            Flow::Close => Some(Linger::IfUnread),
            Flow::Reject => Some(Linger::Always),
            // Handled before asking.
            Flow::Upgrade | Flow::Unit => None,
        }
    }
}
