//! What a unit ([`crate::proto`]) adds to the origin: after a request it answers (WebSocket's
//! upgrade), the connection is the unit's, driven by its own [`Driver`] for the rest of its
//! life. The origin names no unit: it asks each one it serves whether it takes a request, and
//! drives what it is given through [`Io`], the connection and the few things of the server a
//! driver may use (the delay, random numbers, its counters).
//!
//! A unit may also serve HTTP/2's streams ([`Unit::streams`], gRPC's calls): every stream of an
//! HTTP/2 connection but the stats' is then handed to its [`Streams`], which answers on the
//! connection's session; the HTTP/2 driver keeps the connection, its keep-alive limit and its
//! timers.

use std::any::Any;
use std::io;
use std::time::{Duration, Instant};

use super::link::{Got, Link, Next};
use super::output::MAX_PENDING;
use super::Ctx;
use crate::h2::{Event, RequestHead, Session};
use crate::rng::Rng;

/// A unit's side of the origin, settled when the server starts.
pub trait Unit: Send + Sync + std::fmt::Debug {
    /// The names of the counters its drivers keep (at most 32 in all units), as the stats
    /// answer writes them: a name with dots is written nested (`grpc.calls.unary`).
    fn counters(&self) -> &'static [&'static str];
    /// Takes over the connection of `asked` if it is a request this unit answers.
    fn claim(&self, _asked: &Asked<'_>) -> Option<Box<dyn Driver>> {
        None
    }
    /// With it, an HTTP/2 connection's streams (but the stats') are this unit's.
    fn streams(&self) -> Option<Box<dyn Streams>> {
        None
    }
    /// Each server thread's own state of the unit, which [`Serve::state`] lends.
    fn per_thread(&self) -> Option<Box<dyn Any + Send>> {
        None
    }
    /// Its connections may wait for the clock even when answers do not (an event stream's
    /// next event).
    fn timed(&self) -> bool {
        true
    }
    /// How often each connection it holds is pushed a message of the server's own.
    fn push_every(&self) -> Option<Duration> {
        None
    }
    /// What `strain origin` says at the end, from its counters' totals (in their order).
    fn summary(&self, counts: &[u64]) -> String;
}

/// The HTTP/2 streams of one connection, as a unit serves them.
pub trait Streams: Send {
    /// A request's head has arrived on `stream`.
    fn start(&mut self, stream: i32, head: &RequestHead, session: &mut Session, serve: &mut Serve<'_, '_>);
    /// A streamed event of the session's (DATA, the client's end, a stream closed); `arrived`
    /// is when, if answers wait.
    fn event(&mut self, event: Event, session: &mut Session, serve: &mut Serve<'_, '_>, arrived: Option<Instant>);
    /// Submits what is ready; returns when something is next due.
    fn pump(&mut self, session: &mut Session, serve: &mut Serve<'_, '_>) -> Option<Instant>;
}

/// Where a unit's counters start, and which unit it is (for its per-thread state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub(super) base: usize,
    pub(super) index: usize,
}

/// A request a unit may take: its head as sent, and what followed it.
pub struct Asked<'a> {
    /// The whole request head, its last empty line included.
    pub head: &'a [u8],
    /// Its method.
    pub method: &'a str,
    /// Its request target.
    pub target: &'a str,
    /// It is HTTP/1.0.
    pub http10: bool,
    /// Bytes the client sent after the head.
    pub rest: &'a [u8],
}

/// A connection a unit took over.
pub trait Driver: Send {
    /// Makes all the progress the socket and the clock allow.
    fn drive(&mut self, io: &mut Io<'_, '_>) -> Next;
    /// Queues the server's own message number `seq` (see [`Unit::push_every`]); the
    /// connection is driven next.
    fn push(&mut self, _seq: u64, _serve: &mut Serve<'_, '_>) {}
}

/// What a driver works with: its connection, the thread's read buffer, and the server.
pub struct Io<'a, 'r> {
    link: &'a mut Link,
    /// Where reads land.
    pub buf: &'a mut [u8],
    /// The server's side.
    pub serve: Serve<'a, 'r>,
}

/// The server as a driver sees it.
pub struct Serve<'a, 'r> {
    ctx: &'a mut Ctx<'r>,
    place: Place,
}

/// What [`Io::read`] gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// This many bytes, at the start of [`Io::buf`].
    Data(usize),
    /// Nothing now.
    Nothing,
    /// The client is gone or finished sending.
    Gone,
}

impl<'a, 'r> Io<'a, 'r> {
    /// The handle of a unit's connection, for the unit at `place`.
    pub(super) fn new(link: &'a mut Link, buf: &'a mut [u8], ctx: &'a mut Ctx<'r>, place: Place) -> Self {
        Io { link, buf, serve: Serve::new(ctx, place) }
    }

    /// The socket may have bytes to read.
    pub fn readable(&self) -> bool {
        self.link.readable
    }

    /// One read into [`Io::buf`], counted.
    pub fn read(&mut self) -> Read {
        match self.link.read_some(self.buf, self.serve.ctx.counters) {
            Got::Data(n) => Read::Data(n),
            Got::Nothing => Read::Nothing,
            Got::Eof | Got::Failed => Read::Gone,
        }
    }

    /// Writes what `out` holds; `Err` when the socket failed.
    pub fn flush(&mut self, out: &mut Outbox) -> Result<(), Broken> {
        while out.pos < out.bytes.len() {
            match io::Write::write(&mut self.link.stream, &out.bytes[out.pos..]) {
                Ok(0) => return Err(Broken),
                Ok(n) => {
                    self.serve.ctx.counters.bytes_written.add(n as u64);
                    out.pos += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(Broken),
            }
        }
        out.bytes.clear();
        out.pos = 0;
        self.link.stream.flush_pending().map_err(|_| Broken)
    }

    /// Drives the connection again at `at` even without an event.
    pub fn wake_at(&mut self, at: Option<Instant>) {
        self.link.wake = at;
    }
}

impl<'a, 'r> Serve<'a, 'r> {
    /// The server as the unit at `place` sees it.
    pub(super) fn new(ctx: &'a mut Ctx<'r>, place: Place) -> Self {
        Serve { ctx, place }
    }

    /// When the answer to a request of the test that arrived at `arrived` may start (after
    /// `--delay` and the service time).
    pub fn due(&mut self, arrived: Instant) -> Instant {
        self.ctx.site.due(arrived, &mut self.ctx.rng)
    }

    /// The thread's random numbers.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.ctx.rng
    }

    /// This thread's state of the unit ([`Unit::per_thread`]), if it is a `T`, and the
    /// thread's random numbers beside it.
    pub fn state<T: 'static>(&mut self) -> Option<(&mut T, &mut Rng)> {
        let state = self.ctx.units.get_mut(self.place.index)?.as_mut()?.downcast_mut()?;
        Some((state, &mut self.ctx.rng))
    }

    /// Counts an exchange answered as a request of the test (over any protocol).
    pub fn answered(&self) {
        self.ctx.counters.requests.add(1);
    }

    /// The site's `--delay` before each answer, if any.
    pub fn delay(&self) -> Option<Duration> {
        self.ctx.site.delay
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.ctx.rng.chance(p)
    }

    /// Adds `n` to the unit's counter `i` (in the order [`Unit::counters`] names them).
    pub fn count(&self, i: usize, n: u64) {
        if let Some(c) = self.ctx.counters.units.get(self.place.base + i) {
            c.add(n);
        }
    }
}

/// The connection's socket failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Broken;

/// Output a driver queued, and how much of it is written.
#[derive(Debug, Default)]
pub struct Outbox {
    /// The bytes, from [`Outbox::pending`]'s start on not yet written.
    pub bytes: Vec<u8>,
    pos: usize,
}

impl Outbox {
    /// Output queued with `bytes` first.
    pub fn with(bytes: Vec<u8>) -> Outbox {
        Outbox { bytes, pos: 0 }
    }

    /// Bytes not yet written.
    pub fn pending(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// More than the server queues for a client that does not read: reading waits, so a
    /// client that sends and never reads cannot grow the queue.
    pub fn backed_up(&self) -> bool {
        self.pending() > MAX_PENDING
    }
}
