//! A worker thread's event loop: its connections, its deadlines, its recorder.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

mod schedule;

use crate::engine::clock::Clock;
use crate::engine::conn::{Conn, State};
use crate::engine::deadlines::{Deadline, Deadlines};
use crate::engine::pacer::Pacer;
use crate::engine::proxy::ProxyClient;
use crate::engine::timer::Timer;
use crate::engine::{EngineError, Plan};
use crate::net::stream::{ConnectError, Stream};
use crate::script::{ScriptError, ThreadScript};
use crate::stats::interval::Snapshot;
use crate::stats::{ErrorKind, Recorder, RATE_SAMPLE_MS};
use schedule::Ival;

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
    /// Past the end: no new requests; in-flight ones may still finish (or time out).
    draining: bool,
    sample_at_us: u64,
    sample_requests: u64,
    /// Rate mode: this thread's share of the schedule, its free connections and its timer.
    pacer: Option<Pacer<'a>>,
    idle: Vec<u32>,
    timer: Option<Timer>,
    /// A request came due while no connection was free.
    starved: bool,
    /// The live time series, when enabled.
    interval: Option<Ival>,
    /// The address this thread loads (a script's `setup` may choose it).
    addr: std::net::SocketAddr,
    /// The request written each time, unless the script builds each one.
    request: Vec<u8>,
    /// Responses expected per write (a script may pipeline several requests in one).
    pipeline: u32,
    /// This thread's Lua state, when running a script.
    script: Option<ThreadScript>,
    /// The first script error; it ends the run.
    script_error: Option<ScriptError>,
    /// The request `request()` returned when its pipeline depth was measured: sent first, so
    /// the script sees no call wasted.
    first_request: Option<Vec<u8>>,
    /// Proxy tests: this thread's document chooser.
    proxy: Option<ProxyClient<'a>>,
    /// Requests are built per send (by a script or a proxy test) into each connection's buffer.
    dynamic: bool,
    /// `--new-conn-rate`: connections arrive on this schedule instead of being kept open, and
    /// free slots wait here.
    arrivals: Option<Pacer<'a>>,
    free: Vec<u32>,
}

/// What a worker hands back when it ends.
pub struct WorkerOutput {
    /// Its measurements.
    pub rec: Recorder,
    /// Its script's globals, for `thread:get` in `done()`.
    pub globals: Vec<(String, crate::script::Value)>,
    /// The script error that ended it, if any.
    pub script_error: Option<ScriptError>,
}

impl<'a> Worker<'a> {
    /// A worker for `conns` connections, running from `start` until `end`.
    pub fn new(
        plan: &'a Plan,
        stop: &'a AtomicBool,
        index: usize,
        conns: usize,
        start: Instant,
        end: Instant,
        series: Option<(Duration, Sender<Snapshot>)>,
    ) -> Result<Worker<'a>, EngineError> {
        let clock = Clock::new(start);
        let poll = Poll::new().map_err(EngineError::Poll)?;
        let setup = plan.script.as_ref().and_then(|s| s.setups.get(index));
        let addr = setup.and_then(|s| s.addr).unwrap_or(plan.addr);
        let script = match &plan.script {
            Some(s) => Some(ThreadScript::new(&s.source, &s.url, setup.unwrap_or(&Default::default()), addr)?),
            None => None,
        };
        let request = match script.as_ref().and_then(|s| s.fixed_request()) {
            Some(fixed) => fixed.to_vec(),
            None => plan.request.clone(),
        };
        let (pipeline, first_request) = match &script {
            Some(s) => pipeline_depth(s, &request)?,
            None => (1, None),
        };
        let pacer = plan.schedule.as_ref().map(|s| Pacer::new(s, index, plan.threads, plan.tick_us));
        let timer = match pacer {
            None => None,
            Some(_) => {
                let t = Timer::new().map_err(EngineError::Poll)?;
                poll.registry()
                    .register(&mut mio::unix::SourceFd(&t.raw_fd()), TIMER, Interest::READABLE)
                    .map_err(EngineError::Poll)?;
                Some(t)
            }
        };
        Ok(Worker {
            plan,
            stop,
            poll,
            conns: (0..conns).map(|_| Conn::new()).collect(),
            deadlines: Deadlines::default(),
            timers: BinaryHeap::new(),
            buf: vec![0; READ_BUFFER],
            rec: Recorder::new(),
            clock,
            end_us: clock.at(end),
            draining: false,
            sample_at_us: RATE_SAMPLE_MS * 1000,
            sample_requests: 0,
            pacer,
            idle: Vec::with_capacity(conns),
            timer,
            starved: false,
            interval: series.map(|(every, tx)| Ival {
                every_us: every.as_micros().max(1) as u64,
                next_at_us: every.as_micros().max(1) as u64,
                start_us: 0,
                index: 0,
                latency_us: Recorder::new().latency_us,
                ttfb_us: Recorder::new().latency_us,
                base: (0, 0, 0, 0),
                base_bytes: 0,
                base_errors: [0; crate::stats::ErrorKind::COUNT],
                tx,
            }),
            addr,
            request,
            pipeline,
            dynamic: script.as_ref().is_some_and(|s| s.builds_requests()) || plan.proxy.is_some(),
            script,
            script_error: None,
            first_request,
            proxy: plan.proxy.as_ref().map(|p| ProxyClient::new(p, process_stream(index))),
            arrivals: plan.arrivals.as_ref().map(|s| Pacer::new(s, index, plan.threads, 0)),
            free: (0..conns as u32).rev().collect(),
        })
    }

    /// Runs until the end time or the stop flag; returns what was measured.
    pub fn run(mut self) -> Result<WorkerOutput, EngineError> {
        let mut events = Events::with_capacity(EVENTS_PER_POLL);
        let capture = self.script.as_ref().is_some_and(|s| s.wants_responses())
            || self.plan.proxy.as_ref().is_some_and(|p| p.check_content);
        if capture {
            for c in &mut self.conns {
                c.parser.set_capture(true);
            }
        }
        if self.script.as_ref().is_some_and(|s| s.stop_requested()) {
            self.start_drain();
        } else if self.arrivals.is_some() {
            // Connections open as they arrive (see `arrive`).
        } else {
            for i in 0..self.conns.len() {
                self.open(i);
            }
        }
        loop {
            let now = self.clock.now_us();
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            if now >= self.end_us && !self.draining {
                self.start_drain();
            }
            if self.draining && self.in_flight() == 0 {
                break;
            }
            self.expire(now);
            self.retry_due(now);
            if now >= self.sample_at_us {
                self.sample_rate(now);
            }
            if self.interval.as_ref().is_some_and(|iv| now >= iv.next_at_us && iv.next_at_us < self.end_us) {
                self.cut_interval(now);
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
                    if let Some(t) = self.timer.as_mut() {
                        t.fired();
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
        let globals = self.script.as_ref().map(|s| s.globals()).unwrap_or_default();
        Ok(WorkerOutput { rec: self.rec, globals, script_error: self.script_error })
    }

    /// A hook failed: remember the first error and end the whole run.
    fn script_failed(&mut self, e: ScriptError) {
        self.script_error.get_or_insert(e);
        self.stop.store(true, Ordering::Relaxed);
    }

    fn retry_due(&mut self, now: u64) {
        if self.draining {
            return;
        }
        while let Some(&Reverse((at, i, generation))) = self.timers.peek() {
            if at > now {
                return;
            }
            self.timers.pop();
            let c = &self.conns[i as usize];
            if c.generation != generation {
                continue;
            }
            match c.state {
                State::Closed => self.open(i as usize),
                State::Delayed => self.send(i as usize, at),
                _ => {}
            }
        }
    }

    fn on_event(&mut self, i: usize, readable: Readable, writable: bool) {
        let Some(c) = self.conns.get_mut(i) else { return };
        match c.state {
            State::Closed => {}
            State::Connecting => {
                let Some(stream) = c.stream.as_mut() else { return };
                match stream.poll_connect() {
                    Ok(true) => {
                        c.failures = 0;
                        self.rec.connections += 1;
                        self.next_request(i);
                    }
                    Ok(false) => {}
                    Err(e) => self.connect_failed(i, e.to_string()),
                }
            }
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

    /// Opens (or reopens) connection `i`.
    fn open(&mut self, i: usize) {
        let now = self.clock.now_us();
        let result = Stream::connect(self.addr, self.plan.tls.as_ref()).and_then(|mut s| {
            self.poll
                .registry()
                .register(s.socket(), Token(i), Interest::READABLE | Interest::WRITABLE)
                .map_err(ConnectError::Io)?;
            Ok(s)
        });
        let c = &mut self.conns[i];
        c.generation = c.generation.wrapping_add(1);
        c.parser.reset();
        c.uses = 0;
        match result {
            Ok(s) => {
                c.stream = Some(s);
                c.state = State::Connecting;
                let d = Deadline { at_us: now + self.plan.timeout_us, conn: i as u32, generation: c.generation };
                self.deadlines.push(d);
            }
            Err(e) => self.connect_failed(i, e.to_string()),
        }
    }

    fn connect_failed(&mut self, i: usize, why: String) {
        let addr = self.addr;
        self.rec.connect_error(|| format!("connect to {addr} failed: {why}"));
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        c.generation = c.generation.wrapping_add(1);
        c.failures = c.failures.saturating_add(1);
        if self.arrivals.is_some() {
            self.free.push(i as u32);
            return;
        }
        let backoff = (RETRY_MIN_US << (c.failures - 1).min(16)).min(RETRY_MAX_US);
        self.timers.push(Reverse((self.clock.now_us() + backoff, i as u32, c.generation)));
    }

    /// Connection `i` is ready for another request: closed loop sends it at once; rate mode
    /// parks it until a request comes due.
    fn next_request(&mut self, i: usize) {
        if self.draining {
            self.close(i);
        } else if self.pacer.is_some() {
            self.conns[i].state = State::Idle;
            self.idle.push(i as u32);
            let now = self.clock.now_us();
            self.dispatch(now);
        } else {
            let now = self.clock.now_us();
            let delay_ms = match self.script.as_ref().filter(|s| s.has_delay()).map(|s| s.delay_ms()) {
                None => 0.0,
                Some(Ok(ms)) => ms,
                Some(Err(e)) => return self.script_failed(e),
            };
            if delay_ms > 0.0 {
                let c = &mut self.conns[i];
                c.state = State::Delayed;
                c.generation = c.generation.wrapping_add(1);
                self.timers.push(Reverse((now + (delay_ms * 1000.0) as u64, i as u32, c.generation)));
            } else {
                self.send(i, now);
            }
        }
    }

    /// Starts the next request on connection `i`; it should have started at `intended_us`.
    fn send(&mut self, i: usize, intended_us: u64) {
        let now = self.clock.now_us();
        if self.pacer.is_some() {
            self.rec.pacing.sent(now.saturating_sub(intended_us), self.starved);
        }
        if let Some(p) = self.proxy.as_mut() {
            let c = &mut self.conns[i];
            c.sent = p.build(&mut c.req);
        } else if let Some(script) = self.script.as_ref().filter(|s| s.builds_requests()) {
            if let Some(first) = self.first_request.take() {
                self.conns[i].req = first;
            } else if let Err(e) = script.request(&mut self.conns[i].req) {
                return self.script_failed(e);
            }
        }
        let c = &mut self.conns[i];
        c.generation = c.generation.wrapping_add(1);
        c.sent_us = now;
        c.intended_us = intended_us.min(now);
        c.pending = self.pipeline;
        c.first_byte = false;
        if self.script.is_some() {
            // A script may send HEAD, whose responses have no body whatever they announce.
            let req = if self.dynamic { &c.req } else { &self.request };
            c.parser.set_head_request(req.starts_with(b"HEAD "));
        }
        c.written = 0;
        c.state = State::Writing;
        self.deadlines.push(Deadline { at_us: now + self.plan.timeout_us, conn: i as u32, generation: c.generation });
        self.write(i);
    }

    /// Writes what is left of the request; moves to Reading once all of it is on the wire.
    fn write(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let req = if self.dynamic { &c.req } else { &self.request };
        let Some(stream) = c.stream.as_mut() else { return };
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
            if !c.first_byte && self.proxy.is_some() {
                c.first_byte = true;
                let ttfb = self.clock.now_us().saturating_sub(c.sent_us).clamp(1, crate::stats::MAX_LATENCY_US);
                self.rec.ttfb_us.saturating_record(ttfb);
                if let Some(iv) = self.interval.as_mut() {
                    iv.ttfb_us.saturating_record(ttfb);
                }
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
            if let Some(p) = &self.proxy {
                let c = &mut self.conns[i];
                if let Some(why) = p.check(&c.sent, done.status, c.parser.captured()) {
                    self.rec.content_error(why);
                }
                c.uses += 1;
                let limit = self.plan.proxy.as_ref().map_or(0, |p| p.keepalive);
                if limit > 0 && c.uses >= limit {
                    self.reopen(i);
                    return false;
                }
            }
            if !done.keep_alive {
                self.reopen(i);
                return false;
            }
            self.next_request(i);
        }
        self.conns[i].state != State::Closed
    }

    /// Calls the script's `response()`; false when the thread must stop sending.
    fn run_response_hook(&mut self, i: usize, status: u16) -> bool {
        let Some(script) = self.script.as_ref().filter(|s| s.wants_responses()) else { return true };
        if let Err(e) = script.response(status, self.conns[i].parser.captured()) {
            self.script_failed(e);
            return false;
        }
        if script.stop_requested() && !self.draining {
            // wrk.thread:stop(): this thread sends nothing more; the run ends once all have stopped.
            self.start_drain();
        }
        true
    }

    /// Records the response that just completed on connection `i`.
    fn record(&mut self, i: usize, status: u16) {
        let now = self.clock.now_us();
        let c = &self.conns[i];
        let latency = if self.pacer.is_some() {
            let (corrected, uncorrected) = (now.saturating_sub(c.intended_us), now.saturating_sub(c.sent_us));
            self.rec.paced_response(status, corrected, uncorrected);
            corrected
        } else {
            let latency = now.saturating_sub(c.sent_us);
            self.rec.response(status, latency);
            latency
        };
        if let Some(iv) = self.interval.as_mut() {
            iv.latency_us.saturating_record(latency.clamp(1, crate::stats::MAX_LATENCY_US));
        }
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

    /// Counts a failed request and replaces the connection.
    fn fail(&mut self, i: usize, kind: ErrorKind) {
        self.rec.error(kind);
        self.reopen(i);
    }

    /// Closes connection `i` and, unless the test is over, opens a new one in its slot.
    fn reopen(&mut self, i: usize) {
        self.close(i);
        if self.arrivals.is_some() {
            // Arriving connections are not replaced: the slot waits for the next arrival.
            self.free.push(i as u32);
        } else if !self.draining {
            self.open(i);
        }
    }

    /// Closes connection `i`, leaving its slot empty.
    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            // Closing the fd removes it from epoll too; deregistering first keeps mio's view tidy.
            let _ = self.poll.registry().deregister(s.socket());
        }
        c.state = State::Closed;
        c.generation = c.generation.wrapping_add(1);
    }
}

/// Responses to expect per write: the number of requests in the script's request bytes
/// (wrk counts them once, from the first request). Returns the first built request too.
fn pipeline_depth(script: &ThreadScript, fixed: &[u8]) -> Result<(u32, Option<Vec<u8>>), EngineError> {
    let mut sample = Vec::new();
    let bytes = if script.builds_requests() {
        script.request(&mut sample)?;
        &sample
    } else {
        fixed
    };
    let n = crate::http::request::count_requests(bytes).map_err(|why| {
        EngineError::Script(ScriptError::Runtime {
            hook: "request",
            message: format!("the request is not HTTP/1: {why}"),
        })
    })?;
    let first = script.builds_requests().then(|| sample.clone());
    Ok((n.min(u32::MAX as usize) as u32, first))
}

/// A stream number for thread `index` that differs between processes too, so proxy tests run
/// from several processes never repeat each other's misses.
fn process_stream(index: usize) -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    crate::workload::gen::mix(u64::from(std::process::id()) << 32 ^ nanos) ^ index as u64
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

/// Whether a deadline still applies to its connection.
fn live(conns: &[Conn], d: &Deadline) -> bool {
    conns.get(d.conn as usize).is_some_and(|c| {
        c.generation == d.generation && matches!(c.state, State::Connecting | State::Writing | State::Reading)
    })
}
