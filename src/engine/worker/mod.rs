//! A worker thread's event loop: its request slots, its deadlines, its counters. This file is
//! the loop; how a slot's request travels is its [`transport::Transport`]'s (HTTP/1.1 in
//! `h1.rs`, HTTP/2 in `h2/`, HTTP/3 in `h3/`), what is sent is [`requests::Requests`]'s, when it is sent
//! [`schedule::When`]'s, what is counted [`meter::Meter`]'s, and how connections are opened
//! `connect.rs`'s. Every mode and the protocol are settled when the worker is made, so the loop
//! never asks which combination of options is on.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

mod connect;
mod h1;
mod h2;
mod h3;
mod links;
mod meter;
mod requests;
mod schedule;
mod slot;
mod transport;

pub use requests::thread_script;

use crate::engine::clock::Clock;
use crate::engine::deadlines::{Deadline, Deadlines};
use crate::engine::pacer::Pacer;
use crate::engine::proxy::ProxyClient;
use crate::engine::timer::Timer;
use crate::engine::{EngineError, Plan, SendPlan, WhenPlan, WirePlan};
use crate::net::stream::{ConnectError, Stream};
use crate::script::{ScriptError, ThreadScript};
use crate::stats::interval::Snapshot;
use crate::stats::{ConnectCause, ErrorKind, Recorder};
use connect::{connect_cause, retry_backoff_us, Opening};
use meter::Meter;
use requests::Requests;
use schedule::When;
use slot::{Slot, State};
use transport::Transport;

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
/// Poll token of the pacing timer (a transport's sources use their index).
const TIMER: Token = Token(usize::MAX - 1);

/// One thread's share of the load, over transport `T`.
struct Worker<'a, T: Transport> {
    plan: &'a Plan,
    stop: &'a AtomicBool,
    poll: Poll,
    clock: Clock,
    end_us: u64,
    /// Past the end: no new requests; in-flight ones may still finish (or time out).
    draining: bool,
    /// The request slots; a slot's index names it to the transport.
    slots: Vec<Slot>,
    /// The connections, and what the protocol keeps about each.
    transport: T,
    /// What comes due by time alone.
    due: Due,
    /// One read buffer for every connection of the thread: responses are parsed in place and
    /// bodies skipped, never stored.
    buf: Vec<u8>,
    /// The counters.
    meter: Meter,
    /// What is sent, and the script's hooks.
    requests: Requests<'a>,
    /// Responses expected per write (a script may pipeline several requests in one).
    pipeline: u32,
    /// When it is sent.
    when: When<'a>,
    /// Connections waiting to be opened and the window of those being opened.
    opening: Opening,
    /// The address of each origin this thread loads (a script's `setup` may choose the one).
    addrs: Vec<std::net::SocketAddr>,
    /// This thread's index, to spread its connections over `--source-addr` addresses.
    index: usize,
    /// The first script error; it ends the run.
    script_error: Option<ScriptError>,
    /// `-n`: requests this thread may still start.
    budget: Option<u64>,
    /// `-n`: the last time anything moved (a response, a failed request, a connection made),
    /// and the count it was at: a run whose server cannot be reached at all ends after a
    /// whole `--timeout` of nothing, instead of retrying connects until its long duration.
    progress: (u64, u64),
}

/// Slots waiting for a time.
struct Due {
    /// Each slot's request or connect deadline.
    deadlines: Deadlines,
    /// A reconnect after a failed connect (state Closed) or a script's `delay()` (state
    /// Delayed): (at_us, slot, generation).
    timers: BinaryHeap<Reverse<(u64, u32, u32)>>,
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

impl WorkerOutput {
    /// A worker that measured nothing, ended by `script_error` if any.
    pub fn empty(script_error: Option<ScriptError>) -> WorkerOutput {
        WorkerOutput {
            rec: Recorder::new(),
            globals: Vec::new(),
            script_error,
            cpu: Duration::ZERO,
            waited: Duration::ZERO,
        }
    }
}

/// Where a worker runs in the whole: its index, connections, time span and interval feed.
pub struct Share {
    /// Thread index.
    pub index: usize,
    /// Connections it keeps.
    pub conns: usize,
    /// `-n`: requests it sends before it ends.
    pub requests: Option<u64>,
    /// When load starts.
    pub start: Instant,
    /// When the warm-up ends (`start` without one).
    pub warm: Instant,
    /// When sending stops.
    pub end: Instant,
    /// Interval length and where its snapshots go.
    pub series: (Duration, Sender<Snapshot>),
}

/// Runs thread `share.index`'s share of the load over the protocol the plan settled, with
/// the script state [`thread_script`] made for it.
pub fn run(
    plan: &Plan,
    stop: &AtomicBool,
    share: Share,
    script: Option<ThreadScript>,
) -> Result<WorkerOutput, EngineError> {
    match &plan.wire {
        WirePlan::Http1 => {
            let transport = h1::Http1::new(share.conns);
            Worker::new(plan, stop, share, script, transport)?.run()
        }
        WirePlan::Http2 { streams, fixed } => {
            let transport = h2::Http2::new(share.conns, *streams, fixed.clone());
            Worker::new(plan, stop, share, script, transport)?.run()
        }
        WirePlan::Http3 { streams, fixed, quic } => {
            let transport = h3::Http3::new(share.conns, *streams, fixed, quic)?;
            Worker::new(plan, stop, share, script, transport)?.run()
        }
    }
}

impl<'a, T: Transport> Worker<'a, T> {
    /// A worker for its share of the load.
    fn new(
        plan: &'a Plan,
        stop: &'a AtomicBool,
        share: Share,
        script: Option<ThreadScript>,
        mut transport: T,
    ) -> Result<Worker<'a, T>, EngineError> {
        let Share { index, start, warm, end, series, requests: budget, .. } = share;
        let clock = Clock::new(start);
        let poll = Poll::new().map_err(EngineError::Poll)?;
        let addrs = match &plan.send {
            SendPlan::Script(s) => vec![s.setups.get(index).and_then(|s| s.addr).unwrap_or(plan.addr())],
            _ => plan.origins.iter().map(|o| o.addr).collect(),
        };
        let slots = transport.slots();
        let (requests, pipeline) = Requests::new(plan, index, slots, script)?;
        transport.capture(requests.captures());
        let when = When::new(plan, index, slots, &poll)?;
        let paced = matches!(when, When::Paced(_));
        let meter = Meter::new(&clock, warm, series, paced, requests.times_first_bytes());
        Ok(Worker {
            plan,
            stop,
            poll,
            clock,
            end_us: clock.at(end),
            draining: false,
            slots: (0..slots).map(|_| Slot::new()).collect(),
            transport,
            due: Due { deadlines: Deadlines::new(slots), timers: BinaryHeap::new() },
            buf: vec![0; READ_BUFFER],
            meter,
            requests,
            pipeline,
            when,
            opening: Opening::new(slots, plan.threads),
            addrs,
            index,
            script_error: None,
            budget,
            progress: (0, 0),
        })
    }

    /// Runs until the end time or the stop flag; returns what was measured.
    fn run(mut self) -> Result<WorkerOutput, EngineError> {
        let mut events = Events::with_capacity(EVENTS_PER_POLL);
        if self.requests.lua().is_some_and(|s| s.stop_requested()) {
            self.start_drain();
        } else if !matches!(self.when, When::Arrivals(_)) {
            // Arriving connections open as they arrive (see `arrive`).
            self.opening.queue.extend(0..self.slots.len() as u32);
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
            // The end of the duration, or the last of -n's requests answered (one refused
            // unprocessed goes again first, on a new connection if need be), or -n's server gone.
            let counted = self.budget == Some(0) && T::count_done(&self);
            if (now >= self.end_us || counted || self.stuck(now)) && !self.draining {
                self.start_drain();
            }
            if self.draining && self.in_flight() == 0 {
                break;
            }
            self.turn(now);
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
                T::event(&mut self, ev.token().0, readable, ev.is_writable() || ev.is_error());
            }
        }
        Ok(self.finish())
    }

    /// `-n` only: nothing has moved for a whole `--timeout` (connects keep failing).
    fn stuck(&mut self, now: u64) -> bool {
        if self.budget.is_none() {
            return false;
        }
        let rec = &self.meter.rec;
        let failed: u64 = rec.errors.iter().sum::<u64>() - rec.errors[ErrorKind::Connect as usize];
        let count = rec.requests + rec.connections + failed;
        if count != self.progress.0 {
            self.progress = (count, now);
            return false;
        }
        // A grace of one poll wait past the timeout lets the connect deadlines set just after
        // the last progress fire first, so the run ends with their cause ("timed out", "no
        // QUIC answer") rather than with no attempt finished.
        now.saturating_sub(self.progress.1) > self.plan.timeout_us + MAX_POLL_WAIT_US
    }

    /// What one loop turn does before it polls: whatever time made due.
    fn turn(&mut self, now: u64) {
        self.expire(now);
        self.retry_due(now);
        self.open_queued();
        if now >= self.meter.sample_at_us {
            self.meter.sample_rate(now);
        }
        if now >= self.meter.interval.next_at_us && self.meter.interval.next_at_us < self.end_us {
            self.cut_interval(now);
        }
        if self.meter.warm_at_us.is_some_and(|w| now >= w) {
            self.end_warmup(now);
        }
        self.arrive(now);
        self.dispatch(now);
        self.arm_timer(now);
    }

    /// The run is over: the last interval, the counts the connections hold, the output.
    fn finish(mut self) -> WorkerOutput {
        // The last interval runs to the end of the drain, so no sliver of an interval is left.
        let now = self.clock.now_us();
        self.cut_interval(now);
        let rec = &mut self.meter.rec;
        if rec.rate_samples.is_empty() && rec.requests > 0 {
            // A run shorter than one sampling interval still gets a real Req/Sec row.
            rec.rate_sample(rec.requests * 1_000_000 / now.max(1));
        }
        T::finish(&mut self);
        let globals = self.requests.lua().map(|s| s.globals()).unwrap_or_default();
        let (cpu, waited) = self.meter.used();
        WorkerOutput { rec: self.meter.rec, globals, script_error: self.script_error, cpu, waited }
    }

    /// Records the response that just completed on slot `i`.
    fn record(&mut self, i: usize, status: u16) {
        let now = self.clock.now_us();
        let s = &self.slots[i];
        let rec = &mut self.meter.rec;
        let latency = if matches!(self.when, When::Paced(_)) {
            let (corrected, uncorrected) = (now.saturating_sub(s.intended_us), now.saturating_sub(s.sent_us));
            rec.paced_response(status, corrected, uncorrected);
            if let Some(u) = self.meter.interval.uncorrected_us.as_mut() {
                u.saturating_record(uncorrected.clamp(1, crate::stats::MAX_LATENCY_US));
            }
            corrected
        } else {
            let latency = now.saturating_sub(s.sent_us);
            rec.response(status, latency);
            latency
        };
        self.meter.interval.latency_us.saturating_record(latency.clamp(1, crate::stats::MAX_LATENCY_US));
        if let Some(k) = self.requests.target_of(i) {
            self.meter.rec.target_done(k, latency);
        }
    }
}

/// What a poll event says about reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Readable {
    /// Nothing to read.
    No,
    /// Data arrived.
    Yes,
    /// The peer closed (or the socket failed): read until end of stream or error.
    UntilEof,
}

/// Whether a deadline still applies to its slot.
fn live(slots: &[Slot], d: &Deadline) -> bool {
    slots.get(d.conn as usize).is_some_and(|s| {
        s.generation == d.generation && matches!(s.state, State::Connecting | State::Writing | State::Reading)
    })
}
