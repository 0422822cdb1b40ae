//! The built-in origin server: a small, fast HTTP/1.1 keep-alive server that answers every
//! request with one fixed response.
//!
//! It owns everything between an already bound listener and the totals it returns: accepting,
//! parsing requests, writing responses, closing. The binary calls [`run`] for its demo target
//! (after raising the file limit and binding the address), and the tests call it to get a
//! server they control. It is deliberately not a general server: the response is rendered once
//! at start, so per request it only parses a head, skips a body and queues a slice.
//!
//! The shape mirrors the load generator's engine so the two are comparable on one machine:
//! one `mio` event loop per thread, no shared state on the request path. Every thread
//! registers its own clone of the listening socket and accepts until the backlog is empty;
//! whichever thread wins an `accept` owns that connection for its whole life, so there is no
//! hand-off between threads and no lock. Counters live in each thread and are summed after the
//! threads are joined. Sockets are edge-triggered and registered once for both directions,
//! which keeps the number of `epoll_ctl` calls at one per connection.
//!
//! For coordinated-omission tests the server can stall once ([`OriginConfig::stall_at`]): for
//! a while it answers nothing, then everything that waited, in order. A stalled thread still
//! accepts (a paused server's kernel completes handshakes too) and still polls, so it notices
//! shutdown and wakes when the stall ends; it just leaves every connection alone, then drives
//! all of them once. Edge-triggered readiness reported during the stall is not lost: resuming
//! treats every connection as readable and writable.

mod conn;
#[cfg(test)]
mod tests;

use std::io;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

use conn::{Conn, Next};

/// Options of the built-in origin server.
#[derive(Debug, Clone)]
pub struct OriginConfig {
    /// Size of the response body in bytes.
    pub body_size: usize,
    /// Event-loop threads; 0 is taken as 1.
    pub threads: usize,
    /// Status code of every response (200 to 999).
    pub status: u16,
    /// When, after [`run`] starts, the server stops answering; `None` never.
    pub stall_at: Option<Duration>,
    /// How long it answers nothing from `stall_at`; zero is no stall.
    pub stall_for: Duration,
}

impl Default for OriginConfig {
    fn default() -> Self {
        let threads = thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        OriginConfig { body_size: BODY_PATTERN.len(), threads, status: 200, stall_at: None, stall_for: Duration::ZERO }
    }
}

/// What the server saw, summed over its threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OriginStats {
    /// Connections accepted.
    pub connections: u64,
    /// Requests answered (complete heads, bodies skipped); malformed requests are not counted.
    pub requests: u64,
    /// Bytes read from clients.
    pub bytes_read: u64,
    /// Bytes written to clients.
    pub bytes_written: u64,
}

impl OriginStats {
    fn merge(&mut self, other: &OriginStats) {
        self.connections += other.connections;
        self.requests += other.requests;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
    }
}

/// Why the origin server could not start or keep running.
#[derive(Debug, thiserror::Error)]
pub enum OriginError {
    /// The configured status code cannot be a final response.
    #[error("invalid status code {0}: must be between 200 and 999")]
    Status(u16),
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
    /// A server thread panicked (a bug).
    #[error("a server thread panicked")]
    Panicked,
}

/// Serves until `shutdown` becomes true; returns the totals.
pub fn run(listener: TcpListener, config: &OriginConfig, shutdown: &AtomicBool) -> Result<OriginStats, OriginError> {
    let responses = Responses::new(config)?;
    let stall = Stall::new(Instant::now(), config);
    // O_NONBLOCK lives on the shared file description, so this covers every clone below.
    listener.set_nonblocking(true).map_err(OriginError::Nonblocking)?;
    // Everything that can fail at start is done here, before any thread runs, so a failure
    // returns at once instead of after the caller's shutdown.
    let mut workers = Vec::new();
    for _ in 0..config.threads.max(1) {
        let mut listener = mio::net::TcpListener::from_std(listener.try_clone().map_err(OriginError::CloneListener)?);
        let poll = Poll::new().map_err(OriginError::Poll)?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE).map_err(OriginError::Register)?;
        workers.push(Worker::new(poll, listener, &responses, stall));
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
        let mut total = OriginStats::default();
        for handle in handles {
            match handle.join() {
                Ok(Ok(stats)) => total.merge(&stats),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(_) => {
                    first_error.get_or_insert(OriginError::Panicked);
                }
            }
        }
        first_error.map_or(Ok(total), Err)
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
const BODY_PATTERN: &[u8] = b"hello, world\n";
/// Token of the listener; connection `i` uses `Token(i + 1)`.
const LISTENER: Token = Token(0);
/// Longest wait for events, which bounds how late `shutdown` is noticed.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);
/// How often lingering connections are checked for their deadline.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// Per-thread read buffer; large enough for a deep pipeline of small requests in one read.
const READ_BUF: usize = 64 * 1024;
/// Events taken per poll.
const EVENTS: usize = 1024;

/// Answered before the body of a request that asked `Expect: 100-continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// How the response tells the client about the connection's future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Persist {
    /// HTTP/1.1 default: no Connection header, stay open.
    KeepAlive = 0,
    /// HTTP/1.0 with `Connection: keep-alive`: must be confirmed, or the client closes.
    KeepAlive10 = 1,
    /// `Connection: close`, and close after the response.
    Close = 2,
}

/// Which pre-rendered response a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reply {
    persist: Persist,
    /// HEAD: the head only.
    head_only: bool,
}

/// Every response the server can send, rendered once at start.
#[derive(Debug)]
struct Responses {
    /// Indexed by `Persist`.
    full: [Vec<u8>; 3],
    /// Length of the head within each of `full`.
    head_len: [usize; 3],
    bad_request: Vec<u8>,
}

impl Responses {
    fn new(config: &OriginConfig) -> Result<Self, OriginError> {
        if !(200..=999).contains(&config.status) {
            return Err(OriginError::Status(config.status));
        }
        // 204 and 304 never carry a body; sending one would desynchronise every client.
        let bodiless = matches!(config.status, 204 | 304);
        let body: Vec<u8> =
            if bodiless { Vec::new() } else { BODY_PATTERN.iter().copied().cycle().take(config.body_size).collect() };
        let render = |connection: &str| {
            let mut head = format!("HTTP/1.1 {} {}\r\n", config.status, reason(config.status));
            if !bodiless {
                head.push_str(&format!("Content-Length: {}\r\nContent-Type: text/plain\r\n", body.len()));
            }
            head.push_str(connection);
            head.push_str("\r\n");
            let head_len = head.len();
            let mut full = head.into_bytes();
            full.extend_from_slice(&body);
            (full, head_len)
        };
        let (keep, keep_len) = render("");
        let (keep10, keep10_len) = render("Connection: keep-alive\r\n");
        let (close, close_len) = render("Connection: close\r\n");
        let bad_request = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec();
        Ok(Responses { full: [keep, keep10, close], head_len: [keep_len, keep10_len, close_len], bad_request })
    }

    fn get(&self, reply: Reply) -> &[u8] {
        let i = reply.persist as usize;
        let full = &self.full[i];
        if reply.head_only {
            &full[..self.head_len[i]]
        } else {
            full
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        // The reason phrase is informational; clients must not depend on it.
        _ => "Status",
    }
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

/// One thread's event loop and the connections it accepted.
struct Worker<'r> {
    poll: Poll,
    listener: mio::net::TcpListener,
    responses: &'r Responses,
    /// Slab indexed by token - 1; `free` lists the empty slots.
    conns: Vec<Option<Conn<'r>>>,
    free: Vec<usize>,
    stats: OriginStats,
    /// Accept failed with something other than WouldBlock (e.g. out of descriptors). The
    /// listener is edge-triggered, so the backlog would not be reported again until a new
    /// connection arrives: retry after every poll instead.
    accept_stalled: bool,
    /// The stall still to come or under way; `None` once it is over or if there is none.
    stall: Option<Stall>,
}

impl<'r> Worker<'r> {
    fn new(poll: Poll, listener: mio::net::TcpListener, responses: &'r Responses, stall: Option<Stall>) -> Self {
        Worker {
            poll,
            listener,
            responses,
            conns: Vec::new(),
            free: Vec::new(),
            stats: OriginStats::default(),
            accept_stalled: false,
            stall,
        }
    }

    fn run(mut self, shutdown: &AtomicBool, failed: &AtomicBool) -> Result<OriginStats, OriginError> {
        let mut events = Events::with_capacity(EVENTS);
        let mut buf = vec![0u8; READ_BUF];
        let mut last_sweep = Instant::now();
        while !shutdown.load(Ordering::Relaxed) && !failed.load(Ordering::Relaxed) {
            // Without a stall, this and the check after the poll are all it costs.
            let timeout = match &self.stall {
                None => POLL_TIMEOUT,
                Some(stall) => stall.poll_timeout(Instant::now()),
            };
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
                match event.token() {
                    LISTENER => self.accept(),
                    Token(t) => self.ready(t - 1, event, &mut buf),
                }
            }
            if self.accept_stalled {
                self.accept();
            }
            let now = Instant::now();
            if now.duration_since(last_sweep) >= SWEEP_EVERY {
                last_sweep = now;
                self.sweep(now);
            }
        }
        Ok(self.stats)
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
            if let Next::Close = conn.drive(buf, &mut self.stats) {
                self.close(idx);
            }
        }
        false
    }

    fn accept(&mut self) {
        self.accept_stalled = false;
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    // Nagle would hold a small response until the previous one is acknowledged.
                    let _ = stream.set_nodelay(true);
                    let idx = match self.free.pop() {
                        Some(i) => i,
                        None => {
                            self.conns.push(None);
                            self.conns.len() - 1
                        }
                    };
                    let interest = Interest::READABLE | Interest::WRITABLE;
                    if self.poll.registry().register(&mut stream, Token(idx + 1), interest).is_err() {
                        self.free.push(idx);
                        continue;
                    }
                    self.conns[idx] = Some(Conn::new(stream, self.responses));
                    self.stats.connections += 1;
                }
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock => return,
                    // The client gave up before we got to it; the next one may be fine.
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset => {
                        continue
                    }
                    _ => {
                        self.accept_stalled = true;
                        return;
                    }
                },
            }
        }
    }

    fn ready(&mut self, idx: usize, event: &mio::event::Event, buf: &mut [u8]) {
        let Some(Some(conn)) = self.conns.get_mut(idx) else { return };
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            conn.set_readable();
        }
        if let Next::Close = conn.drive(buf, &mut self.stats) {
            self.close(idx);
        }
    }

    /// Closes connections that lingered past their deadline.
    fn sweep(&mut self, now: Instant) {
        for idx in 0..self.conns.len() {
            if self.conns[idx].as_ref().is_some_and(|c| c.linger_expired(now)) {
                self.close(idx);
            }
        }
    }

    fn close(&mut self, idx: usize) {
        // Dropping the stream closes its descriptor, which also removes it from the poll set.
        if self.conns[idx].take().is_some() {
            self.free.push(idx);
        }
    }
}
