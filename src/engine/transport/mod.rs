//! How a worker's requests travel: one [`Transport`] per protocol, chosen once when the worker
//! is made (the worker is generic over it, so the hot path has no virtual calls): HTTP/1.1
//! ([`h1`]), and HTTP/2 ([`h2`]) and HTTP/3 ([`h3`]) over what every multiplexed protocol
//! shares ([`mux`]).
//!
//! A protocol owns its connections and what it keeps per connection. It sees the worker only
//! through [`Host`], a narrow handle: the clock and the few settings it needs, its slots'
//! requests, and calls that say what happened (connected, written, answered, failed by kind, a
//! nothing of a protocol's own: it keeps its own counts). It never reaches into the worker's state, and the
//! worker's loop never asks which protocol it drives; adding a protocol is one more
//! implementation of this module's traits.
//!
//! The worker asks things of the protocol (send slot `i`, close it, open it) while it handles
//! what the protocol told it, from inside the protocol's own call. Those asks are queued as
//! [`Op`]s and the protocol carries them out ([`Transport::settle`]) right after each call
//! that can make one, so they happen where a direct call would have.

pub mod h1;
pub mod h2;
pub mod h3;
pub mod mux;
pub mod paced;

use std::net::{IpAddr, SocketAddr};

use crate::engine::slot::State;
use crate::http::response::Captured;
use crate::net::stream::{ConnectError, Made, Stream};
use crate::script::ScriptError;
use crate::stats::{ConnectCause, ErrorKind};

/// What a poll event says about reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readable {
    /// Nothing to read.
    No,
    /// Data arrived.
    Yes,
    /// The peer closed (or the socket failed): read until end of stream or error.
    UntilEof,
}

/// What the worker asks of the protocol, queued while the protocol's call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Slot `slot`'s request has started: put it on the wire (`head`: a HEAD, whose response
    /// has no body whatever it announces).
    Submit {
        /// The slot.
        slot: u32,
        /// The request is a HEAD.
        head: bool,
    },
    /// The slot stops (the run is draining, `-n` is sent): nothing of it stays under way.
    Close(u32),
    /// The slot is done with its connection (the response said so): it goes on on another.
    Reopen(u32),
    /// The slot needs its connection (an arriving connection).
    Open(u32),
    /// A place in the window of connections being opened came free: open queued slots.
    OpenQueued,
}

/// What a protocol's own counts show in each interval, while the run goes (so far).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Live {
    /// GOAWAYs received.
    pub goaways: u64,
    /// Requests the server refused unprocessed, sent again.
    pub retried: u64,
}

/// A part of a response whose first bytes a transport reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The status line or HEADERS.
    Head,
    /// The body (a streamed call's first message).
    Body,
}

/// The worker as a protocol sees it: everything a protocol may ask or say. Implemented once,
/// by the worker; a protocol takes it by name and sees nothing else of the worker.
pub trait Host {
    /// Now, in clock microseconds.
    fn now(&self) -> u64;
    /// How long a request (or a connect) may take, microseconds.
    fn timeout_us(&self) -> u64;
    /// The target speaks TLS.
    fn https(&self) -> bool;
    /// The run is over: nothing new is sent, connections are not replaced.
    fn draining(&self) -> bool;
    /// `-n`'s count is all sent (the answers may not all be in): only a request sent again needs
    /// a connection now.
    fn spent(&self) -> bool;
    /// Connections arrive on a schedule: a slot's connection is one arrival's, and the slot is
    /// freed for the next arrival when it ends ([`Host::replace`]).
    fn arriving(&self) -> bool;
    /// A proxy test's `--keepalive`: responses a connection carries before it is replaced
    /// (0: no limit).
    fn keepalive_limit(&self) -> u64;

    /// Starts a connection for source number `n`, registered for poll events as `token`.
    fn connect(&mut self, n: usize, token: usize) -> Result<Stream, ConnectError>;
    /// The address connection number `n` goes to.
    fn peer(&self, n: usize) -> SocketAddr;
    /// A slow client's throttles for the connection polled (or woken) as `token`, if the run
    /// has them: when its budget is spent it is handed an event of its own once it refills.
    fn throttles(&self, token: usize) -> Option<crate::net::throttle::Throttles>;
    /// The local address connection number `n` starts from (`--source-addr`), if set.
    fn source(&self, n: usize) -> Option<IpAddr>;
    /// The poller, for sockets a protocol opens itself (HTTP/3's UDP sockets).
    fn registry(&self) -> &mio::Registry;
    /// Connection number `token` could not be made, for `cause`.
    fn connect_failed(&mut self, token: usize, cause: ConnectCause, why: String);
    /// Connection `link` counts as made; `timing` says how long it took (asked only when the
    /// run is traced).
    fn connection_made(&mut self, link: usize, made: impl FnOnce() -> crate::net::stream::Made);
    /// The run is traced (`--trace`, `--trace-file`): a unit shows what only it sees.
    fn tracing(&self) -> bool;
    /// A unit's opening exchange (a WebSocket upgrade, an event stream's answer): the request
    /// it wrote (the slot's own when `None`) and the response head it read, traced as an
    /// exchange of slot `i`.
    fn trace_upgrade(&mut self, i: usize, request: Option<&[u8]>, head: &[u8]);
    /// A unit's message of `bytes` arrived on slot `i`, its first bytes `shown`: traced.
    fn trace_message(&mut self, i: usize, shown: &[u8], bytes: u64);
    /// A connection started opening: it takes a place in the window of connections opening.
    fn opening_started(&mut self);
    /// A connection opening is gone without proving itself: its place is free (queued slots
    /// are not opened from here).
    fn opening_ended(&mut self);
    /// A connection proved the server took it: its place in the window goes on
    /// ([`Op::OpenQueued`]).
    fn opened(&mut self);
    /// Slot `i`'s connection is to be opened when the window allows.
    fn queue_open(&mut self, i: usize);
    /// HTTP/1.1: slot `i`'s connection is gone: a new one replaces it (an arriving
    /// connection's slot waits for the next arrival instead; nothing while draining).
    fn replace(&mut self, i: usize);
    /// HTTP/1.1: slot `i`'s connect failed for the `failures`-th time in a row: it tries again
    /// after a backoff (an arriving connection's slot is freed instead).
    fn retry_connect(&mut self, i: usize, failures: u32);

    /// Where slot `i` is in its cycle.
    fn state(&self, i: usize) -> State;
    /// Slot `i`'s connection is being opened (its connect deadline is set).
    fn connecting(&mut self, i: usize);
    /// Slot `i`'s request is all on the wire: its response is awaited.
    fn written(&mut self, i: usize);
    /// Slot `i` has nothing under way and no connection.
    fn close_slot(&mut self, i: usize);
    /// Slot `i`'s request was refused unprocessed: it goes again as first planned, counted as
    /// sent again ([`Op::Submit`]).
    fn resend(&mut self, i: usize);
    /// Slot `i`'s request never reached a server that took it: not counted as sent; the slot
    /// waits, closed.
    fn unsend(&mut self, i: usize);
    /// Slot `i` is free: it takes its next request if its connection is `up`, else waits,
    /// closed.
    fn free(&mut self, i: usize, up: bool);
    /// Requests under way on every connection.
    fn in_flight(&self) -> usize;

    /// Slot `i`'s current request as HTTP/1 bytes.
    fn request(&self, i: usize) -> &[u8];
    /// Slot `i`'s current request in a memory file, to send by reference, when it is large
    /// and the same every time.
    fn request_pages(&self, i: usize) -> Option<&crate::net::pages::Pages>;
    /// Slot `i`'s current request when it is not the URL's fixed one (a script's, a proxy
    /// test's, a target's), as HTTP/1 bytes.
    fn built(&self, i: usize) -> Option<&[u8]>;
    /// Slot `i`'s response is to be walked away from once its body starts.
    fn aborts(&self, i: usize) -> bool;
    /// A request could not be made: the run ends with this error.
    fn fail_run(&mut self, error: ScriptError);

    /// Bytes read from a connection.
    fn read_bytes(&mut self, n: usize);
    /// The first bytes of `part` of slot `i`'s response arrived (the workload says which part
    /// it times).
    fn first_bytes(&mut self, i: usize, part: Part);
    /// Slot `i`'s response (the last of its write) is complete, `captured` when kept whole:
    /// recorded, hooks run; the slot goes on when `keep` (else [`Op::Reopen`]). False when the
    /// slot did not go on.
    fn completed(&mut self, i: usize, status: u16, keep: bool, captured: Option<&Captured>) -> bool;
    /// One response of slot `i`'s write is complete. `None` when it was the write's last (the
    /// caller completes it); else it is counted and hooks run, and the answer is whether the
    /// thread goes on sending.
    fn pipelined(&mut self, i: usize, status: u16, captured: Option<&Captured>) -> Option<bool>;
    /// Streamed exchanges: a message of `bytes` of slot `i`'s request went out: counted as its
    /// workload counts messages.
    fn stream_sent(&mut self, i: usize, bytes: u64);
    /// Streamed exchanges: an answer of `bytes` on slot `i` arrived for the message due at
    /// `due_us` and written at `sent_us`: recorded as a response, its latency from when it was
    /// due, and counted as its workload counts messages.
    fn stream_reply(&mut self, i: usize, due_us: u64, sent_us: u64, bytes: u64);
    /// Streamed exchanges: slot `i`'s answers were not well framed: counted as its workload
    /// counts a broken exchange (its one failure).
    fn stream_broken(&mut self, i: usize);
    /// Streamed exchanges: slot `i`'s ended with HTTP `status` and `trailers` (its headers and
    /// trailers), its answers recorded one by one: judged as its workload judges and counted;
    /// the slot goes on.
    fn stream_ended(&mut self, i: usize, status: u16, trailers: &Captured);
    /// Slot `i`'s response ended with its connection: recorded, without hooks.
    fn record(&mut self, i: usize, status: u16);
    /// Slot `i`'s request failed as `kind`.
    fn failed(&mut self, i: usize, kind: ErrorKind);
    /// The server reset slot `i`'s stream with HTTP/2 or HTTP/3 error `code` (the protocol
    /// counted it): a failed request, or an answer where the workload takes a reset as one (a
    /// gRPC call's status). The slot goes on.
    fn server_reset(&mut self, i: usize, code: u32);
    /// A response was walked away from (`--client-abort-rate`).
    fn aborted(&mut self);
    /// Slot `i` is ready for another request.
    fn next_request(&mut self, i: usize);

    /// The next thing the worker asked of the protocol, if any.
    fn take_op(&mut self) -> Option<Op>;
    /// The next queued slot whose connection may be opened now (the window has room and this
    /// turn's time for opening is not spent); starts the turn's time with `start`.
    fn next_to_open(&mut self, start: bool) -> Option<usize>;
}

/// One protocol's side of a worker.
pub trait Transport: Sized {
    /// Request slots it carries (one per HTTP/1.1 connection, `-m` per HTTP/2 or HTTP/3
    /// connection).
    fn slots(&self) -> usize;
    /// The connection slot `i` travels on (its number, which picks its origin): its own, where
    /// each slot is a connection.
    fn link(&self, i: usize) -> usize {
        i
    }
    /// Keeps each response whole for a hook or a content check (a protocol whose answers are
    /// not responses has none to keep).
    fn capture(&mut self, _on: bool) {}
    /// Slot `i` needs its connection: opens it (or, when it is up, the slot sends).
    fn open(&mut self, host: &mut impl Host, i: usize);
    /// Puts slot `i`'s request, just started, on the wire.
    fn submit(&mut self, host: &mut impl Host, i: usize);
    /// Slot `i`'s deadline passed (its connect or its request).
    fn timed_out(&mut self, host: &mut impl Host, i: usize);
    /// Slot `i` is done with its connection (it closed, or the response said so).
    fn reopen(&mut self, host: &mut impl Host, i: usize);
    /// Slot `i` stops (the run is draining): nothing of it is left under way.
    fn close(&mut self, host: &mut impl Host, i: usize);
    /// A poll event on the transport's source `token`.
    fn event(&mut self, host: &mut impl Host, token: usize, readable: Readable, writable: bool);
    /// Slot `i`'s request is a HEAD (its response has no body, whatever it announces).
    fn head_request(&mut self, _i: usize, _head: bool) {}
    /// Connections up now.
    fn open_connections(&self, host: &impl Host) -> u64;
    /// The transport's own next deadline (connects, reconnects), if any.
    fn next_deadline(&mut self) -> Option<u64>;
    /// Handles the transport's own deadlines that passed by `now`.
    fn expire(&mut self, host: &mut impl Host, now: u64);
    /// The run is over: counts what the connections still open hold.
    fn finish(&mut self, host: &mut impl Host);
    /// A unit's own counts (its section of the result), handed over when the run is over; a
    /// protocol whose counts are the worker's has none.
    fn counts(&mut self) -> Option<Box<dyn crate::stats::section::Section>> {
        None
    }
    /// Measuring starts (the warm-up is over): a unit's own counts start again.
    fn restart_counts(&mut self) {}
    /// What the protocol's own counts show in each interval, while the run goes.
    fn live(&self) -> Live {
        Live::default()
    }
    /// A unit's own count is done (Server-Sent Events' `-n` streams, all over): the run may
    /// drain.
    fn done(&self) -> bool {
        false
    }
    /// The loop turn is about to wait: what the protocol held back to send in one go goes out.
    fn flush(&mut self, _host: &mut impl Host) {}
    /// The run began to drain: a protocol whose slots wait for nothing they asked for (a
    /// listening WebSocket connection) lets them go now, rather than wait out their timeout.
    fn drain(&mut self, _host: &mut impl Host) {}
    /// `-n`'s last request is sent: whether the count is done, so the run may drain. HTTP/1.1
    /// sends each request once, so it is; a multiplexed protocol waits for the streams in
    /// flight, since a GOAWAY may refuse some unprocessed, and they go again first.
    fn count_done(&self, _host: &impl Host) -> bool {
        true
    }

    /// Carries out what the worker asked while the protocol's last call ran.
    fn settle(&mut self, host: &mut impl Host) {
        while let Some(op) = host.take_op() {
            match op {
                Op::Submit { slot, head } => {
                    self.head_request(slot as usize, head);
                    self.submit(host, slot as usize);
                }
                Op::Close(i) => self.close(host, i as usize),
                Op::Reopen(i) => self.reopen(host, i as usize),
                Op::Open(i) => self.open(host, i as usize),
                Op::OpenQueued => self.open_queued(host),
            }
        }
    }

    /// Opens queued slots' connections while the window of connections being opened has room
    /// and this turn's time for opening lasts.
    fn open_queued(&mut self, host: &mut impl Host) {
        let mut start = true;
        while let Some(i) = host.next_to_open(std::mem::take(&mut start)) {
            self.open(host, i);
        }
    }
}

/// What a transport with a connection of its own per slot (HTTP/1.1, WebSocket) keeps of
/// opening it: the socket, connect failures in a row (for the retry backoff), and whether it
/// still holds a place in the window of connections being opened (opened, not yet proven).
#[derive(Default)]
pub struct Dialed {
    /// The socket, absent while closed.
    pub stream: Option<Stream>,
    /// Connect failures in a row.
    pub failures: u32,
    /// Holds a place in the opening window.
    pub opening: bool,
}

/// How reading a slot's socket until it is drained ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEnd {
    /// Drained for now, or what was read closed or replaced the slot.
    Paused,
    /// The peer closed its side.
    Eof,
    /// The socket failed.
    Failed,
}

/// A transport whose every slot is a connection of its own: starting, proving and failing a
/// connection, and reading it, are the same for all of them, said once here.
pub trait PerSlot: Transport {
    /// Slot `i`'s connection.
    fn dialed(&mut self, i: usize) -> &mut Dialed;
    /// Takes bytes read from slot `i`; false when they closed or replaced the slot.
    fn take(&mut self, host: &mut impl Host, i: usize, data: &mut [u8]) -> bool;

    /// The thread's read buffer, lent to each read loop so the slots stay borrowable.
    fn read_buffer(&mut self) -> &mut Vec<u8>;

    /// Reads slot `i` until its socket is drained, handing each read to `take`.
    #[inline]
    fn read_drained(&mut self, host: &mut impl Host, i: usize, how: Readable) -> ReadEnd {
        let mut buf = std::mem::take(self.read_buffer());
        let end = self.read_into(host, i, how, &mut buf);
        *self.read_buffer() = buf;
        end
    }

    /// [`PerSlot::read_drained`]'s loop, over `buf`.
    #[inline]
    fn read_into(&mut self, host: &mut impl Host, i: usize, how: Readable, buf: &mut [u8]) -> ReadEnd {
        while let Some(stream) = self.dialed(i).stream.as_mut() {
            match stream.read(buf) {
                Ok(0) => return ReadEnd::Eof,
                Ok(n) => {
                    host.read_bytes(n);
                    // A plain socket that returned less than asked is drained for now: epoll will
                    // report the next arrival, so the extra read that would see EAGAIN is skipped.
                    // Not when the event also said the peer closed: that FIN will not be
                    // reported again, so read on to see it.
                    let drained = n < buf.len() && stream.short_read_drains() && how != Readable::UntilEof;
                    if !self.take(host, i, &mut buf[..n]) || drained {
                        return ReadEnd::Paused;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return ReadEnd::Paused,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return ReadEnd::Failed,
            }
        }
        ReadEnd::Paused
    }

    /// Polls slot `i`'s connect: true once TCP (and TLS) is up; a failure is counted and the
    /// slot's retry scheduled.
    fn poll_connected(&mut self, host: &mut impl Host, i: usize, writable: bool) -> bool {
        let Some(stream) = self.dialed(i).stream.as_mut() else { return false };
        match stream.poll_connect(writable) {
            Ok(up) => up,
            Err(e) => {
                self.connect_failed(host, i, connect_cause(&e), e.to_string());
                false
            }
        }
    }

    /// Slot `i`'s connection counts as made: its run of failed connects is over.
    fn made(&mut self, host: &mut impl Host, i: usize) {
        let d = self.dialed(i);
        d.failures = 0;
        host.connection_made(i, || Made::Tcp(d.stream.as_ref().and_then(Stream::tls_began)));
    }

    /// Starts slot `i`'s connection.
    fn dial(&mut self, host: &mut impl Host, i: usize) {
        match host.connect(i, i) {
            Ok(stream) => {
                let d = self.dialed(i);
                d.stream = Some(stream);
                d.opening = true;
                host.connecting(i);
            }
            Err(e) => self.connect_failed(host, i, connect_cause(&e), e.to_string()),
        }
    }

    /// Connection `i` proved the server took it (or sends nothing at once): its place in the
    /// opening window goes on.
    fn conn_opened(&mut self, host: &mut impl Host, i: usize) {
        if std::mem::take(&mut self.dialed(i).opening) {
            host.opened();
            self.settle(host);
        }
    }

    /// Counts a failed connect and schedules the slot's retry (arrivals: frees the slot).
    fn connect_failed(&mut self, host: &mut impl Host, i: usize, cause: ConnectCause, why: String) {
        host.connect_failed(i, cause, why);
        self.conn_opened(host, i);
        let d = self.dialed(i);
        d.stream = None;
        d.failures = d.failures.saturating_add(1);
        let failures = d.failures;
        host.close_slot(i);
        host.retry_connect(i, failures);
    }

    /// Drops slot `i`'s socket, leaving the slot empty; a place it held in the opening window is
    /// freed (not `opened`: a closing slot must not start another connect from inside `close`).
    fn hang_up(&mut self, host: &mut impl Host, i: usize) {
        let d = self.dialed(i);
        // Dropping the stream closes its fd, which takes it out of epoll (it is never dup'ed):
        // no `epoll_ctl` per close, which counts when every response closes its connection.
        d.stream = None;
        if std::mem::take(&mut d.opening) {
            host.opening_ended();
        }
        host.close_slot(i);
    }
}

/// A transport whose slots hold their connections and write whenever there is room
/// (WebSocket's, Server-Sent Events'): a poll event goes where the slot's state says.
pub trait HeldSlot: PerSlot {
    /// An event on slot `i`'s connection while it is being opened (TCP, TLS, an upgrade).
    fn opening_event(&mut self, host: &mut impl Host, i: usize, readable: Readable, writable: bool);
    /// Writes what slot `i`'s connection has queued.
    fn write_slot(&mut self, host: &mut impl Host, i: usize);
    /// Reads slot `i`'s connection until it is drained.
    fn read_slot(&mut self, host: &mut impl Host, i: usize, how: Readable);

    /// A poll event on slot `i`'s connection, handed to what its state waits for (a token past
    /// the slots is not a connection's, and is let go).
    fn slot_event(&mut self, host: &mut impl Host, i: usize, readable: Readable, writable: bool) {
        if i >= self.slots() {
            return;
        }
        match host.state(i) {
            State::Closed => {}
            State::Connecting => self.opening_event(host, i, readable, writable),
            _ => {
                if writable {
                    self.write_slot(host, i);
                }
                if readable != Readable::No && host.state(i) != State::Closed {
                    self.read_slot(host, i, readable);
                }
            }
        }
    }
}

/// The wait before the next connect after `failures` failures in a row (at least 1): doubling
/// from [`RETRY_MIN_US`] up to [`RETRY_MAX_US`].
pub fn retry_backoff_us(failures: u32) -> u64 {
    (RETRY_MIN_US << failures.saturating_sub(1).min(16)).min(RETRY_MAX_US)
}

/// First and largest delay before reconnecting after a failed connect: a refused port is retried
/// quickly but not in a busy loop.
const RETRY_MIN_US: u64 = 1_000;
const RETRY_MAX_US: u64 = 100_000;

/// The cause of a failed connect, for the report.
pub fn connect_cause(e: &ConnectError) -> ConnectCause {
    match e {
        ConnectError::Io(io) => ConnectCause::of_io(io),
        ConnectError::Tls(_) | ConnectError::ClosedInHandshake => ConnectCause::Tls,
    }
}
