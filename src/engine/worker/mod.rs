//! A worker thread's event loop: its connections, its deadlines, its recorder. This file is
//! the loop and the I/O of one connection (write a request, read and frame responses); what is
//! sent is [`send::Send`]'s, when it is sent [`schedule::When`]'s, and how connections are opened
//! `connect.rs`'s. Every mode is settled when the worker is made, so the loop never asks which
//! combination of options is on.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

mod connect;
mod h2;

use connect::{connect_cause, retry_backoff_us};
mod schedule;
mod send;

pub use send::thread_script;

use crate::engine::clock::Clock;
use crate::engine::conn::{Conn, State};
use crate::engine::deadlines::{Deadline, Deadlines};
use crate::engine::pacer::Pacer;
use crate::engine::proxy::ProxyClient;
use crate::engine::timer::Timer;
use crate::engine::{EngineError, Plan, SendPlan, WhenPlan};
use crate::net::stream::{ConnectError, Stream};
use crate::script::{ScriptError, ThreadScript};
use crate::stats::interval::Snapshot;
use crate::stats::{ConnectCause, ErrorKind, Recorder, RATE_SAMPLE_MS};
use h2::{Links, Wire, LINK_BASE};
use schedule::{Ival, When};
use send::Send;

/// Bytes read per `read` call; one buffer per thread serves every connection, since responses
/// are parsed in place and bodies are skipped, never stored.
const READ_BUFFER: usize = 64 * 1024;
/// Events taken from one `epoll_wait`.
const EVENTS_PER_POLL: usize = 1024;
/// Longest sleep in `epoll_wait`, so a stop request is seen promptly.
const MAX_POLL_WAIT_US: u64 = 100_000;
/// First and largest delay before reconnecting after a failed connect: a refused port is retried
/// quickly but not in a busy loop.
const RETRY_MIN_US: u64 = 1_000;
const RETRY_MAX_US: u64 = 100_000;
/// Connections being opened at once, all threads together (each thread takes its share, at
/// least [`MIN_OPENING_PER_THREAD`]): from `connect` until their first response (or,
/// when nothing is sent at once, until connected). Opening every connection in one burst keeps
/// the loop in the kernel's port search for seconds before serving anything, and overflows the
/// server's accept queue: the kernel then drops the handshake's last ACK, the client believes it
/// is connected, and the server only picks the connection up after a retransmit a second or more
/// later (connect and request timeouts that wrk, which never times out a connect, hides). The
/// TCP handshake alone does not prove the server accepted, the first response does; so the
/// window closes on it, and no more than this many connections can wait in the server's accept
/// queue: 512 stays within nginx's default backlog of 511 plus the one being accepted.
const OPENING_WINDOW: usize = 512;
/// A thread's smallest share of [`OPENING_WINDOW`].
const MIN_OPENING_PER_THREAD: usize = 16;
/// Longest time one loop turn spends opening connections. With the local port range crowded
/// (TIME_WAIT from earlier runs) one `connect` can take a millisecond of kernel port search, so
/// a turn stops opening after this and serves the connections already open before going on.
const OPEN_BUDGET_US: u64 = 2_000;
/// Poll token of the pacing timer (connections use their index).
const TIMER: Token = Token(usize::MAX - 1);

/// One thread's share of the load.
pub struct Worker<'a> {
    plan: &'a Plan,
    stop: &'a AtomicBool,
    poll: Poll,
    conns: Vec<Conn>,
    deadlines: Deadlines,
    /// Connections waiting for a time: a reconnect after a failed connect (state Closed) or a
    /// script's `delay()` (state Delayed). Entries are (at_us, conn, generation).
    timers: BinaryHeap<Reverse<(u64, u32, u32)>>,
    buf: Vec<u8>,
    rec: Recorder,
    clock: Clock,
    end_us: u64,
    /// When the warm-up ends and measuring starts; `None` once measuring (or with no warm-up).
    warm_at_us: Option<u64>,
    /// This thread's CPU time and run-queue wait when measuring started.
    cpu_at_start: Duration,
    waited_at_start: Duration,
    /// Past the end: no new requests; in-flight ones may still finish (or time out).
    draining: bool,
    sample_at_us: u64,
    sample_requests: u64,
    /// What is sent, and the script's hooks.
    send: Send<'a>,
    /// When it is sent.
    when: When<'a>,
    /// The live time series.
    interval: Ival,
    /// The address this thread loads (a script's `setup` may choose it).
    addr: std::net::SocketAddr,
    /// Responses expected per write (a script may pipeline several requests in one).
    pipeline: u32,
    /// The first script error; it ends the run.
    script_error: Option<ScriptError>,
    /// Connections waiting to be opened, how many are being opened now, and how many may be
    /// (this thread's share of [`OPENING_WINDOW`], see there).
    to_open: std::collections::VecDeque<u32>,
    connecting: usize,
    max_connecting: usize,
    /// This thread's index, to spread its connections over `--source-addr` addresses.
    index: usize,
    /// HTTP/1 connections, or HTTP/2 links carrying the slots as streams.
    wire: Wire,
}

/// What a worker hands back when it ends.
pub struct WorkerOutput {
    /// Its measurements.
    pub rec: Recorder,
    /// Its script's globals, for `thread:get` in `done()`.
    pub globals: Vec<(String, crate::script::Value)>,
    /// The script error that ended it, if any.
    pub script_error: Option<ScriptError>,
    /// CPU time the thread used while measuring.
    pub cpu: Duration,
    /// Time it waited for a CPU while measuring.
    pub waited: Duration,
}

/// Where a worker runs in the whole: its index, connections, time span and interval feed.
pub struct Share {
    /// Thread index.
    pub index: usize,
    /// Connections it keeps.
    pub conns: usize,
    /// When load starts.
    pub start: Instant,
    /// When the warm-up ends (`start` without one).
    pub warm: Instant,
    /// When sending stops.
    pub end: Instant,
    /// Interval length and where its snapshots go.
    pub series: (Duration, Sender<Snapshot>),
}

impl<'a> Worker<'a> {
    /// A worker for its share of the load, with the script state [`thread_script`] made for it.
    pub fn new(
        plan: &'a Plan,
        stop: &'a AtomicBool,
        share: Share,
        script: Option<ThreadScript>,
    ) -> Result<Worker<'a>, EngineError> {
        let Share { index, conns, start, warm, end, series } = share;
        let clock = Clock::new(start);
        let poll = Poll::new().map_err(EngineError::Poll)?;
        let addr = match &plan.send {
            SendPlan::Script(s) => s.setups.get(index).and_then(|s| s.addr).unwrap_or(plan.addr),
            _ => plan.addr,
        };
        let (send, pipeline) = Send::new(plan, index, script)?;
        let (wire, slots) = match &plan.wire {
            crate::engine::WirePlan::Http1 => (Wire::H1, conns),
            crate::engine::WirePlan::Http2 { streams, fixed } => {
                (Wire::H2(Links::new(conns, *streams, fixed.clone())), conns * streams)
            }
        };
        let conns = slots;
        let when = When::new(plan, index, conns, &poll)?;
        Ok(Worker {
            plan,
            stop,
            poll,
            conns: (0..conns).map(|_| Conn::new()).collect(),
            deadlines: Deadlines::new(conns),
            timers: BinaryHeap::new(),
            buf: vec![0; READ_BUFFER],
            rec: Recorder::for_run(
                matches!(plan.when, WhenPlan::Paced { .. }),
                matches!(plan.send, SendPlan::Proxy(_)),
            ),
            clock,
            end_us: clock.at(end),
            warm_at_us: Some(clock.at(warm)).filter(|w| *w > 0),
            cpu_at_start: thread_cpu(),
            waited_at_start: thread_waited(),
            draining: false,
            sample_at_us: RATE_SAMPLE_MS * 1000,
            sample_requests: 0,
            send,
            when,
            interval: Ival::new(series.0, series.1, matches!(plan.send, SendPlan::Proxy(_))),
            addr,
            pipeline,
            script_error: None,
            to_open: std::collections::VecDeque::with_capacity(conns),
            connecting: 0,
            max_connecting: (OPENING_WINDOW / plan.threads.max(1)).max(MIN_OPENING_PER_THREAD),
            index,
            wire,
        })
    }

    /// An empty recorder for this worker's mode.
    fn fresh_recorder(&self) -> Recorder {
        Recorder::for_run(matches!(self.when, When::Paced(_)), matches!(self.send, Send::Proxy(_)))
    }

    /// Runs until the end time or the stop flag; returns what was measured.
    pub fn run(mut self) -> Result<WorkerOutput, EngineError> {
        let mut events = Events::with_capacity(EVENTS_PER_POLL);
        if self.send.captures() {
            for c in &mut self.conns {
                c.parser.set_capture(true);
            }
        }
        if self.send.lua().is_some_and(|s| s.stop_requested()) {
            self.start_drain();
        } else if !matches!(self.when, When::Arrivals(_)) {
            // Arriving connections open as they arrive (see `arrive`).
            self.to_open.extend(0..self.conns.len() as u32);
        }
        loop {
            let now = self.clock.now_us();
            if self.stop.load(Ordering::Relaxed) {
                if self.script_error.is_some() {
                    // This thread's own script failed: its hooks must not run again.
                    break;
                }
                // Ctrl-C ends the load like the end of the duration does: requests in flight
                // are still waited for, so the totals add up (a second Ctrl-C exits at once).
                if !self.draining {
                    self.start_drain();
                }
            }
            if now >= self.end_us && !self.draining {
                self.start_drain();
            }
            if self.draining && self.in_flight() == 0 {
                break;
            }
            self.expire(now);
            self.retry_due(now);
            self.open_queued();
            if now >= self.sample_at_us {
                self.sample_rate(now);
            }
            if now >= self.interval.next_at_us && self.interval.next_at_us < self.end_us {
                self.cut_interval(now);
            }
            if self.warm_at_us.is_some_and(|w| now >= w) {
                self.end_warmup(now);
            }
            self.arrive(now);
            self.dispatch(now);
            self.arm_timer(now);
            let wake = self.next_wake(now);
            let wait = Duration::from_micros(wake.saturating_sub(now).min(MAX_POLL_WAIT_US));
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(EngineError::Poll(e));
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    if let When::Paced(p) = &mut self.when {
                        p.timer.fired();
                    }
                    continue;
                }
                let hup = ev.is_read_closed() || ev.is_error();
                let readable = if hup {
                    Readable::UntilEof
                } else if ev.is_readable() {
                    Readable::Yes
                } else {
                    Readable::No
                };
                self.on_event(ev.token().0, readable, ev.is_writable() || ev.is_error());
            }
        }
        // The last interval runs to the end of the drain, so no sliver of an interval is left.
        let now = self.clock.now_us();
        self.cut_interval(now);
        if self.rec.rate_samples.is_empty() && self.rec.requests > 0 {
            // A run shorter than one sampling interval still gets a real Req/Sec row.
            self.rec.rate_sample(self.rec.requests * 1_000_000 / now.max(1));
        }
        self.finish_links();
        let globals = self.send.lua().map(|s| s.globals()).unwrap_or_default();
        let cpu = thread_cpu().saturating_sub(self.cpu_at_start);
        let waited = thread_waited().saturating_sub(self.waited_at_start);
        Ok(WorkerOutput { rec: self.rec, globals, script_error: self.script_error, cpu, waited })
    }

    fn on_event(&mut self, i: usize, readable: Readable, writable: bool) {
        if i >= LINK_BASE {
            return self.link_event(i - LINK_BASE, readable, writable);
        }
        let Some(c) = self.conns.get(i) else { return };
        match c.state {
            State::Closed => {}
            State::Connecting => self.connecting_event(i, writable),
            State::Writing => {
                if writable {
                    self.write(i);
                }
                if readable != Readable::No && self.conns[i].state != State::Closed {
                    self.read(i, readable);
                }
            }
            State::Reading | State::Idle | State::Delayed => {
                if readable != Readable::No {
                    self.read(i, readable);
                }
            }
        }
    }

    /// Writes what is left of the request; moves to Reading once all of it is on the wire.
    fn write(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else { return };
        let req = match &self.send {
            Send::Fixed(r) => r.as_slice(),
            Send::Script(s) if !s.builds => &s.fixed,
            _ => &c.req,
        };
        while c.written < req.len() {
            match stream.write(&req[c.written..]) {
                Ok(0) => return self.fail(i, ErrorKind::Write),
                Ok(n) => c.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail(i, ErrorKind::Write),
            }
        }
        match stream.flush() {
            Ok(true) => c.state = State::Reading,
            Ok(false) => {}
            Err(_) => self.fail(i, ErrorKind::Write),
        }
    }

    /// Reads until the socket is drained, completing responses as they end.
    fn read(&mut self, i: usize, how: Readable) {
        // The buffer is lent out for the loop so the connection and recorder stay borrowable.
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(stream) = self.conns[i].stream.as_mut() {
            match stream.read(&mut buf) {
                Ok(0) => {
                    self.closed_by_peer(i);
                    break;
                }
                Ok(n) => {
                    self.rec.bytes += n as u64;
                    // A plain socket that returned less than asked is drained for now: epoll will
                    // report the next arrival, so the extra read that would see EAGAIN is skipped.
                    // Not when the event also said the peer closed: that FIN will not be
                    // reported again, so read on to see it.
                    let drained = n < buf.len() && stream.short_read_drains() && how != Readable::UntilEof;
                    if !self.consume(i, &buf[..n]) || drained {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) if matches!(self.conns[i].state, State::Idle | State::Delayed) => {
                    // A reset on a connection with nothing in flight loses nothing: it is the
                    // same as the close in `closed_by_peer`.
                    self.reopen(i);
                    break;
                }
                Err(_) => {
                    self.fail(i, ErrorKind::Read);
                    break;
                }
            }
        }
        self.buf = buf;
    }

    /// Feeds bytes to the parser; returns false when the connection was replaced or closed.
    fn consume(&mut self, i: usize, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            let c = &mut self.conns[i];
            if c.state == State::Closed {
                // The run is draining and closed the connection after its last response: what
                // follows answers nothing that was sent, so no request failed.
                return false;
            }
            if c.state != State::Reading {
                // Bytes nobody asked for (or a response before the request was written):
                // the server is not speaking HTTP/1 request-response.
                self.fail(i, ErrorKind::Parse);
                return false;
            }
            if !c.first_byte && matches!(self.send, Send::Proxy(_)) {
                c.first_byte = true;
                let ttfb = self.clock.now_us().saturating_sub(c.sent_us).clamp(1, crate::stats::MAX_LATENCY_US);
                self.rec.ttfb_us.saturating_record(ttfb);
                self.interval.ttfb_us.saturating_record(ttfb);
            }
            let fed = match c.parser.feed(data) {
                Ok(fed) => fed,
                Err(_) => {
                    self.fail(i, ErrorKind::Parse);
                    return false;
                }
            };
            data = &data[fed.used..];
            let Some(done) = fed.complete else {
                if c.sent.abort && !c.parser.is_idle() {
                    // --client-abort-rate: walk away mid-response, as a browser does.
                    self.rec.aborted += 1;
                    self.reopen(i);
                    return false;
                }
                continue;
            };
            if c.opening {
                self.opened(i);
            }
            let c = &mut self.conns[i];
            c.pending = c.pending.saturating_sub(1);
            if c.pending > 0 {
                // A pipelined response: counted now, timed with the last one of its write.
                self.rec.counted(done.status);
                if !self.run_response_hook(i, done.status) {
                    return false;
                }
                continue;
            }
            self.record(i, done.status);
            if !self.run_response_hook(i, done.status) {
                return false;
            }
            if !self.check_proxy_response(i, done.status) {
                return false;
            }
            if !done.keep_alive {
                self.reopen(i);
                return false;
            }
            self.next_request(i);
        }
        self.conns[i].state != State::Closed
    }

    /// Records the response that just completed on connection `i`.
    fn record(&mut self, i: usize, status: u16) {
        let now = self.clock.now_us();
        let c = &self.conns[i];
        let latency = if matches!(self.when, When::Paced(_)) {
            let (corrected, uncorrected) = (now.saturating_sub(c.intended_us), now.saturating_sub(c.sent_us));
            self.rec.paced_response(status, corrected, uncorrected);
            corrected
        } else {
            let latency = now.saturating_sub(c.sent_us);
            self.rec.response(status, latency);
            latency
        };
        self.interval.latency_us.saturating_record(latency.clamp(1, crate::stats::MAX_LATENCY_US));
    }

    fn closed_by_peer(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if matches!(c.state, State::Idle | State::Delayed) {
            // A server may close a kept-alive connection it considers idle; nothing was lost.
            self.reopen(i);
        } else if let Some(done) = c.parser.finish_on_close() {
            self.record(i, done.status);
            self.reopen(i);
        } else {
            // The request in flight is lost, as wrk counts it.
            self.fail(i, ErrorKind::Read);
        }
    }

    /// Counts a failed request and replaces the connection (over HTTP/2: resets the stream).
    fn fail(&mut self, i: usize, kind: ErrorKind) {
        if let Wire::H2(_) = self.wire {
            return self.h2_fail(i, kind);
        }
        self.rec.error(kind);
        self.reopen(i);
    }
}

/// What a poll event says about reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readable {
    /// Nothing to read.
    No,
    /// Data arrived.
    Yes,
    /// The peer closed (or the socket failed): read until end of stream or error.
    UntilEof,
}

/// Time the calling thread has spent ready to run but waiting for a CPU (the run-queue wait in
/// `/proc/thread-self/schedstat`; zero where the kernel does not keep it). A generator thread
/// that is busy or waiting for a CPU all the time is at its limit, even when a shared machine
/// gives it only part of a core.
pub fn thread_waited() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// CPU time the calling thread has used (zero if the clock cannot be read).
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}

/// Whether a deadline still applies to its connection.
fn live(conns: &[Conn], d: &Deadline) -> bool {
    conns.get(d.conn as usize).is_some_and(|c| {
        c.generation == d.generation && matches!(c.state, State::Connecting | State::Writing | State::Reading)
    })
}
