//! The built-in origin server: a small, fast HTTP/1.1 keep-alive server that also speaks HTTP/2
//! (h2c by prior knowledge or Upgrade, see `h2.rs`) and, with [`OriginConfig::tls`], HTTPS with
//! ALPN `h2` and `http/1.1` (`tls.rs`); and the origin half of a cache or proxy test rig (the
//! jtest origin of Apache Traffic Server, in spirit). A connection's first bytes decide its
//! protocol once; after that each protocol has its own driver, which frames the same answers,
//! decided and counted in one place (`decision.rs`). With [`OriginConfig::http3`] it also serves
//! HTTP/3 over QUIC on the UDP port of the same number (`h3/`, on the first thread's event loop)
//! and says so in `Alt-Svc` over TCP. The units of [`crate::proto`] it serves ([`unit`]) take
//! the requests they answer (WebSocket's upgrades, SSE's streams) or, for gRPC, every HTTP/2
//! stream but the counters'; over HTTP/1.1 (an h2c upgrade's first request too) gRPC's origin
//! answers as without it.
//!
//! It owns everything between an already bound listener and the totals it returns: accepting,
//! parsing requests, writing responses, closing. The binary calls [`run`] for `strain origin`
//! and its demo target (after raising the file limit and binding the address), and the tests
//! call it to get a server they control; [`run_live`] also lets a client in the same process
//! read the counters while it serves, and `GET /_strain/stats` gives them, as JSON, to a client
//! in another process.
//!
//! Two kinds of answer (or, with [`OriginConfig::replay`], a third instead of both: each
//! request's recorded response, found by its `uuid` header or its URL, see `recording.rs`):
//! - A document path, `/d/<id>/<len>` (see [`crate::workload::doc`]), gets that document: a
//!   body of exactly `len` bytes derived from the path, with `Cache-Control`, `Last-Modified`
//!   and `ETag` fixed per document, `304 Not Modified` for some conditional requests, and
//!   optionally a cut-short body ([`OriginConfig::abort_rate`]). With [`OriginConfig::pages`],
//!   a `.html` document is an HTML page embedding `.jpeg` objects and linking to other pages
//!   (see [`crate::workload::page`]), made by range like any body.
//! - Any other path gets one fixed response, rendered once at start, so per request the server
//!   only parses a head, skips a body and queues a slice. Benchmarks use this path.
//!
//! Every response can wait a fixed delay before its first byte, and every connection can be
//! held to a byte rate; both are timer-driven (see below), never sleeps. A known capacity
//! (`--service-time T --workers N`, see `service.rs`) is the same kind of wait: each request
//! of the test holds one of N workers shared by all threads for T, so the server does exactly
//! N/T requests per second.
//!
//! The shape mirrors the load generator's engine so the two are comparable on one machine:
//! one `mio` event loop per thread, no shared state on the request path. Every thread
//! registers its own clone of the listening socket and accepts until the backlog is empty;
//! whichever thread wins an `accept` owns that connection for its whole life, so there is no
//! hand-off between threads and no lock. Counters live in per-thread blocks that only their
//! thread writes (see `live.rs`). Sockets are edge-triggered and registered once for both
//! directions, which keeps the number of `epoll_ctl` calls at one per connection. Connections
//! whose output waits for the clock (a delay, the byte rate) are woken by a per-thread min-heap
//! of deadlines that sets the poll timeout; only those connections have entries in it.
//!
//! For coordinated-omission tests the server can stall once ([`OriginConfig::stall_at`]): for
//! a while it answers nothing, then everything that waited, in order. A stalled thread still
//! accepts (a paused server's kernel completes handshakes too) and still polls, so it notices
//! shutdown and wakes when the stall ends; it just leaves every connection alone, then drives
//! all of them once. Edge-triggered readiness reported during the stall is not lost: resuming
//! treats every connection as readable and writable.

mod config;
mod conn;
mod counter;
mod decision;
mod h2;
mod h3;
mod link;
mod listen;
mod live;
mod output;
mod recording;
mod requests;
mod respond;
mod service;
#[cfg(test)]
mod tests;
mod tls;
pub mod unit;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

use crate::http::request_head::Persist;
use crate::rng::Rng;
pub use config::{ContentType, OriginConfig, Pages, Service, ServiceDist};
use conn::Conn;
use decision::Kind;
use link::Expiry;
pub use link::Next;
pub use listen::Listener;
use listen::ThreadListener;
use live::Counters;
pub use live::{OriginLive, UnitCounts};
pub use recording::{MatchKey, Recording, RecordingError, MAX_FILLER};
use respond::Site;
pub use tls::TlsSource;

/// What the server saw, summed over its threads. Requests to `/_strain/stats` are not
/// counted as requests, but their connections and bytes are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OriginStats {
    /// Connections accepted.
    pub connections: u64,
    /// Requests answered (complete heads, bodies skipped); malformed requests are not counted.
    pub requests: u64,
    /// `200 OK` responses: documents (cut ones too) and fixed responses when the status is 200.
    pub ok: u64,
    /// `304 Not Modified` responses.
    pub not_modified: u64,
    /// Document responses cut short on purpose ([`OriginConfig::abort_rate`]).
    pub aborted: u64,
    /// Bytes read from clients.
    pub bytes_read: u64,
    /// Bytes written to clients.
    pub bytes_written: u64,
    /// Malformed or oversized requests, answered `400` and closed.
    pub bad_requests: u64,
    /// Connections closed because a request head did not arrive whole in time.
    pub header_timeouts: u64,
    /// Connections closed because the client took none of the output in time.
    pub send_timeouts: u64,
    /// Requests answered with a recorded response (`--replay`).
    pub recorded: u64,
    /// Requests no recorded response matched, answered `404` (`--replay`).
    pub unmatched: u64,
    /// The units' counters (`ws_upgrades`, `ws_messages`, `ws_broadcasts` with `--ws`; with
    /// `--grpc`, `grpc.calls.unary` and the rest, written nested: a call counts in `requests`
    /// once its status has gone out).
    #[serde(flatten)]
    pub units: live::UnitCounts,
}

impl OriginStats {
    fn merge(&mut self, other: &OriginStats) {
        self.connections += other.connections;
        self.requests += other.requests;
        self.ok += other.ok;
        self.not_modified += other.not_modified;
        self.aborted += other.aborted;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.bad_requests += other.bad_requests;
        self.header_timeouts += other.header_timeouts;
        self.send_timeouts += other.send_timeouts;
        self.recorded += other.recorded;
        self.unmatched += other.unmatched;
        self.units.merge(&other.units);
    }
}

/// Why the origin server could not start or keep running.
#[derive(Debug, thiserror::Error)]
pub enum OriginError {
    /// The configured status code cannot be a final response.
    #[error("invalid status code {0}: must be between 200 and 999")]
    Status(u16),
    /// Another option is out of range.
    #[error("invalid origin option: {0}")]
    Invalid(String),
    /// The [`OriginLive`] was already used by a server.
    #[error("these live counters already belong to a server")]
    LiveInUse,
    /// The listener could not be switched to non-blocking mode.
    #[error("cannot make listener non-blocking: {0}")]
    Nonblocking(io::Error),
    /// A per-thread clone of the listener could not be made.
    #[error("cannot clone listener: {0}")]
    CloneListener(io::Error),
    /// A poll instance could not be created.
    #[error("cannot create poll instance: {0}")]
    Poll(io::Error),
    /// The listener could not be registered with a poll instance.
    #[error("cannot register listener: {0}")]
    Register(io::Error),
    /// A server thread could not be started.
    #[error("cannot spawn server thread: {0}")]
    Spawn(io::Error),
    /// Waiting for events failed.
    #[error("cannot poll for events: {0}")]
    Wait(io::Error),
    /// The TLS certificate or key could not be made or read.
    #[error("{0}")]
    Tls(String),
    /// HTTP/3 could not start (its UDP socket, its TLS).
    #[error("{0}")]
    Quic(String),
    /// A server thread panicked (a bug).
    #[error("a server thread panicked")]
    Panicked,
}

/// Serves until `shutdown` becomes true; returns the totals.
pub fn run(
    listener: impl Into<Listener>,
    config: &OriginConfig,
    shutdown: &AtomicBool,
) -> Result<OriginStats, OriginError> {
    run_live(listener, config, shutdown, &OriginLive::new())
}

/// Serves until `shutdown` becomes true, keeping `live` current meanwhile; returns the totals.
/// `live` must be new: one server per [`OriginLive`].
pub fn run_live(
    listener: impl Into<Listener>,
    config: &OriginConfig,
    shutdown: &AtomicBool,
    live: &OriginLive,
) -> Result<OriginStats, OriginError> {
    let mut site = Site::new(config)?;
    let stall = Stall::new(Instant::now(), config);
    let threads = config.threads.max(1);
    let (listener, udp) = listener.into().split_udp();
    if matches!(listener, Listener::Unix(_)) && site.tls.is_some() {
        return Err(OriginError::Tls("a Unix-domain socket serves plain HTTP: drop --tls".into()));
    }
    let mut quic = if config.http3 { Some(h3::Quic::start(&listener, udp, &mut site, config)?) } else { None };
    listener.set_nonblocking().map_err(OriginError::Nonblocking)?;
    let names = site.units.iter().flat_map(|(u, _)| u.counters().iter().copied()).collect();
    let counters = live.claim(threads, site.fixed_ok, names)?;
    // Everything that can fail at start is done here, before any thread runs, so a failure
    // returns at once instead of after the caller's shutdown.
    let mut workers = Vec::new();
    for (i, counters) in counters.iter().enumerate() {
        let mut listener = listener.for_thread().map_err(OriginError::CloneListener)?;
        let poll = Poll::new().map_err(OriginError::Poll)?;
        listener.register(poll.registry(), LISTENER).map_err(OriginError::Register)?;
        // The first thread owns HTTP/3 (see `h3.rs` for why one).
        let mut quic = quic.take();
        if let Some(q) = quic.as_mut() {
            q.register(poll.registry(), QUIC).map_err(OriginError::Register)?;
        }
        let units = site.units.iter().map(|(u, _)| u.per_thread()).collect();
        let ctx = Ctx { site: &site, counters, live, rng: Rng::for_thread(config.seed, i), units };
        workers.push(Worker::new(poll, listener, ctx, stall, quic));
    }
    drop(listener);

    // Set when one thread fails, so the others stop too instead of serving until shutdown.
    let failed = AtomicBool::new(false);
    thread::scope(|s| {
        let mut first_error = None;
        let mut handles = Vec::new();
        for (i, worker) in workers.into_iter().enumerate() {
            let failed = &failed;
            let spawned = thread::Builder::new().name(format!("origin-{i}")).spawn_scoped(s, move || {
                let _guard = FailOnPanic(failed);
                let result = worker.run(shutdown, failed);
                if result.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                result
            });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    first_error = Some(OriginError::Spawn(e));
                    break;
                }
            }
        }
        for handle in handles {
            match handle.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(_) => {
                    first_error.get_or_insert(OriginError::Panicked);
                }
            }
        }
        // Every writer has stopped: the sum is exact.
        first_error.map_or_else(|| Ok(live.snapshot()), Err)
    })
}

/// Stops the other threads when this one unwinds; a panicking thread never returns its error.
struct FailOnPanic<'a>(&'a AtomicBool);

impl Drop for FailOnPanic<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Repeated to fill the body; the default body is exactly one copy.
pub const BODY_PATTERN: &[u8] = b"hello, world\n";
/// Token of the listener; connection `i` uses `Token(i + 1)`.
const LISTENER: Token = Token(0);
/// Token of HTTP/3's UDP socket, beyond any connection's.
const QUIC: Token = Token(usize::MAX);
/// Longest wait for events, which bounds how late `shutdown` is noticed.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);
/// How often lingering connections are checked for their deadline.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// Per-thread read buffer; large enough for a deep pipeline of small requests in one read.
const READ_BUF: usize = 64 * 1024;
/// Events taken per poll.
const EVENTS: usize = 1024;
/// The path (any query aside) answered with the counters as JSON.
const STATS_PATH: &str = "/_strain/stats";

/// Answered before the body of a request that asked `Expect: 100-continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Which response a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reply {
    persist: Persist,
    /// HEAD: the head only.
    head_only: bool,
    kind: Kind,
}

/// What one thread's connections share: the rules, where to count, the random choices.
struct Ctx<'r> {
    site: &'r Site,
    counters: &'r Counters,
    /// All threads' counters, for the stats answer.
    live: &'r OriginLive,
    rng: Rng,
    /// Each unit's state of this thread ([`unit::Unit::per_thread`]), in the units' order.
    units: Vec<Option<Box<dyn std::any::Any + Send>>>,
}

/// The one window during which the server answers nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stall {
    from: Instant,
    until: Instant,
}

impl Stall {
    /// The window `config` asks for, counted from `started`; none if it is empty or beyond
    /// what an `Instant` can hold.
    fn new(started: Instant, config: &OriginConfig) -> Option<Stall> {
        let from = started.checked_add(config.stall_at?)?;
        let until = from.checked_add(config.stall_for)?;
        (until > from).then_some(Stall { from, until })
    }

    /// How long to wait for events: no later than the end of the stall while in it.
    fn poll_timeout(&self, now: Instant) -> Duration {
        if now >= self.from && now < self.until {
            POLL_TIMEOUT.min(self.until - now)
        } else {
            POLL_TIMEOUT
        }
    }
}

/// A deadline in a worker's timer heap: (when, connection slot, connection generation).
type Timer = Reverse<(Instant, usize, u64)>;

/// One thread's event loop and the connections it accepted.
struct Worker<'r> {
    poll: Poll,
    listener: ThreadListener,
    ctx: Ctx<'r>,
    /// Slab indexed by token - 1; `free` lists the empty slots.
    conns: Vec<Option<Conn<'r>>>,
    free: Vec<usize>,
    /// Connections whose output waits for the clock, earliest first. An entry whose
    /// generation no longer matches its slot's connection is stale and ignored.
    timers: BinaryHeap<Timer>,
    /// Generation of the next accepted connection.
    next_generation: u64,
    /// Accept failed with something other than WouldBlock (e.g. out of descriptors). The
    /// listener is edge-triggered, so the backlog would not be reported again until a new
    /// connection arrives: retry after every poll instead.
    accept_stalled: bool,
    /// The stall still to come or under way; `None` once it is over or if there is none.
    stall: Option<Stall>,
    /// HTTP/3's socket and connections, on the one thread that serves them.
    quic: Option<h3::Quic>,
    /// A unit's pushes (`--ws-broadcast`): when every connection of the unit next gets a
    /// message, how often, and the message's number.
    broadcast: Option<(Instant, Duration, u64)>,
}

impl<'r> Worker<'r> {
    fn new(poll: Poll, listener: ThreadListener, ctx: Ctx<'r>, stall: Option<Stall>, quic: Option<h3::Quic>) -> Self {
        Worker {
            poll,
            listener,
            ctx,
            conns: Vec::new(),
            free: Vec::new(),
            timers: BinaryHeap::new(),
            next_generation: 0,
            accept_stalled: false,
            stall,
            quic,
            broadcast: None,
        }
    }

    fn run(mut self, shutdown: &AtomicBool, failed: &AtomicBool) -> Result<(), OriginError> {
        let mut events = Events::with_capacity(EVENTS);
        let mut buf = vec![0u8; READ_BUF];
        let mut last_sweep = Instant::now();
        if let Some(every) = self.ctx.site.units.iter().find_map(|(u, _)| u.push_every()) {
            self.broadcast = Some((last_sweep + every, every, 0));
        }
        while !shutdown.load(Ordering::Relaxed) && !failed.load(Ordering::Relaxed) {
            // Without a stall or timers, this and the checks after the poll are all it costs.
            let mut timeout = match &self.stall {
                None => POLL_TIMEOUT,
                Some(stall) => stall.poll_timeout(Instant::now()),
            };
            if let Some(Reverse((at, _, _))) = self.timers.peek() {
                // mio rounds up to whole milliseconds, so this never wakes early and spins.
                timeout = timeout.min(at.saturating_duration_since(Instant::now()));
            }
            if let Some(at) = self.quic_timer() {
                timeout = timeout.min(at.saturating_duration_since(Instant::now()));
            }
            if let Some((at, _, _)) = self.broadcast {
                timeout = timeout.min(at.saturating_duration_since(Instant::now()));
            }
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(OriginError::Wait(e));
            }
            if let Some(stall) = self.stall {
                if self.stalled(stall, &mut buf) {
                    if events.iter().any(|e| e.token() == LISTENER) || self.accept_stalled {
                        self.accept();
                    }
                    continue;
                }
            }
            for event in events.iter() {
                // One batch can hold a thousand connections each taking megabytes of body
                // (a client that stopped reading has large socket buffers to fill): seconds of
                // writing that a stop must not wait for.
                if shutdown.load(Ordering::Relaxed) {
                    break;
                }
                match event.token() {
                    LISTENER => self.accept(),
                    QUIC => self.quic_ready(event.is_readable(), event.is_writable()),
                    Token(t) => self.ready(t - 1, event, &mut buf),
                }
            }
            if self.accept_stalled {
                self.accept();
            }
            if !self.timers.is_empty() {
                self.fire_timers(&mut buf);
            }
            if let Some(quic) = self.quic.as_mut() {
                quic.fire_timers(&mut self.ctx);
            }
            if self.broadcast.is_some_and(|(at, _, _)| Instant::now() >= at) {
                self.broadcast(&mut buf);
            }
            let now = Instant::now();
            if now.duration_since(last_sweep) >= SWEEP_EVERY {
                last_sweep = now;
                self.sweep(now);
            }
        }
        if let Some(quic) = self.quic.as_mut() {
            quic.close_all(&mut self.ctx);
        }
        Ok(())
    }

    /// When HTTP/3 next needs the thread: its earliest timer, unless a stall holds everything
    /// (its timers would wake the loop for nothing until the stall ends).
    fn quic_timer(&self) -> Option<Instant> {
        let at = self.quic.as_ref()?.next_timer()?;
        let now = Instant::now();
        let held = self.stall.is_some_and(|s| now >= s.from && now < s.until);
        (!held).then_some(at)
    }

    /// A readiness event on HTTP/3's socket.
    fn quic_ready(&mut self, readable: bool, writable: bool) {
        if let Some(quic) = self.quic.as_mut() {
            quic.ready(readable, writable, &mut self.ctx);
        }
    }

    /// True while the stall holds every connection; once it is over, answers everything that
    /// waited and forgets the stall.
    fn stalled(&mut self, stall: Stall, buf: &mut [u8]) -> bool {
        let now = Instant::now();
        if now < stall.from {
            return false;
        }
        if now < stall.until {
            return true;
        }
        self.stall = None;
        // Readiness seen during the stall was dropped: drive every connection as if it had
        // just become readable and writable. Within a connection, answers keep their order.
        for idx in 0..self.conns.len() {
            let Some(conn) = self.conns[idx].as_mut() else { continue };
            conn.set_readable();
            let next = conn.drive(buf, &mut self.ctx);
            self.settle(idx, next);
        }
        self.quic_ready(true, true);
        false
    }

    /// Pushes every unit connection of the thread the next message (a WebSocket broadcast); a
    /// thread that fell behind sends one and goes on from now, rather than a burst.
    fn broadcast(&mut self, buf: &mut [u8]) {
        let Some((at, every, seq)) = self.broadcast else { return };
        let now = Instant::now();
        self.broadcast = Some(((at + every).max(now), every, seq + 1));
        for idx in 0..self.conns.len() {
            let Some(conn) = self.conns[idx].as_mut() else { continue };
            if let Some(next) = conn.push(seq, buf, &mut self.ctx) {
                self.settle(idx, next);
            }
        }
    }

    fn accept(&mut self) {
        self.accept_stalled = false;
        loop {
            let idx = match self.free.pop() {
                Some(i) => i,
                None => {
                    self.conns.push(None);
                    self.conns.len() - 1
                }
            };
            match self.listener.accept(self.poll.registry(), Token(idx + 1), self.ctx.site.tls.as_ref()) {
                Ok(None) => {
                    self.free.push(idx);
                    continue;
                }
                Ok(Some(stream)) => {
                    self.conns[idx] = Some(Conn::new(stream, self.ctx.site.byte_rate, self.next_generation));
                    self.next_generation += 1;
                    self.ctx.counters.connections.add(1);
                }
                Err(e) => {
                    self.free.push(idx);
                    match e.kind() {
                        io::ErrorKind::WouldBlock => return,
                        // The client gave up before we got to it; the next one may be fine.
                        io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::ConnectionReset => continue,
                        _ => {
                            self.accept_stalled = true;
                            return;
                        }
                    }
                }
            }
        }
    }

    fn ready(&mut self, idx: usize, event: &mio::event::Event, buf: &mut [u8]) {
        let Some(Some(conn)) = self.conns.get_mut(idx) else { return };
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            conn.set_readable();
        }
        let next = conn.drive(buf, &mut self.ctx);
        self.settle(idx, next);
    }

    /// Drives the connections whose deadline has come.
    fn fire_timers(&mut self, buf: &mut [u8]) {
        let now = Instant::now();
        while let Some(&Reverse((at, idx, generation))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(Some(conn)) = self.conns.get_mut(idx) else { continue };
            if conn.generation != generation {
                continue;
            }
            if conn.armed == Some(at) {
                conn.armed = None;
            }
            let next = conn.drive(buf, &mut self.ctx);
            self.settle(idx, next);
        }
    }

    /// After a drive: closes the connection, or makes sure a timer will drive it again if its
    /// output waits for the clock. A connection has at most one entry per deadline it asked
    /// for, and only a deadline earlier than the one pending adds another.
    fn settle(&mut self, idx: usize, next: Next) {
        if let Next::Close = next {
            self.close(idx);
            return;
        }
        if !self.ctx.site.timed() {
            return;
        }
        let Some(Some(conn)) = self.conns.get_mut(idx) else { return };
        if let Some(at) = conn.wake() {
            if conn.armed.is_none_or(|armed| at < armed) {
                conn.armed = Some(at);
                self.timers.push(Reverse((at, idx, conn.generation)));
            }
        }
    }

    /// Closes connections that lingered past their deadline, whose request head is late, or
    /// whose client has stopped reading.
    fn sweep(&mut self, now: Instant) {
        let site = self.ctx.site;
        for idx in 0..self.conns.len() {
            let Some(expiry) = self.conns[idx].as_ref().and_then(|c| c.expired(now, site)) else { continue };
            match expiry {
                Expiry::Linger => {}
                Expiry::Header => self.ctx.counters.header_timeouts.add(1),
                Expiry::Send => self.ctx.counters.send_timeouts.add(1),
            }
            self.close(idx);
        }
    }

    fn close(&mut self, idx: usize) {
        // Dropping the stream closes its descriptor, which also removes it from the poll set.
        if self.conns[idx].take().is_some() {
            self.free.push(idx);
        }
    }
}
