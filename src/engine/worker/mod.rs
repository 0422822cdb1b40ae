//! A worker thread's event loop: this file is the loop and what it keeps, [`Core`] (the
//! request slots, deadlines, counters, everything but the protocol's connections), which the
//! protocol sees only as the `Host` handle (`host.rs`). How a slot's request travels is its [`Transport`]'s (`engine::transport`),
//! what is sent is [`requests::Requests`]'s, when it is sent [`schedule::When`]'s, what is
//! counted [`meter::Meter`]'s, and how connections are opened `connect.rs`'s. Every mode and
//! the protocol are settled when the worker is made, so the loop never asks which combination
//! of options is on.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

mod behind;
mod browse;
mod connect;
mod host;
mod meter;
mod redirect;
mod requests;
mod schedule;

pub use requests::thread_script;

use crate::config::{Protocol, Scheme};
use crate::engine::clock::Clock;
use crate::engine::deadlines::{Deadline, Deadlines};
use crate::engine::slot::{Slot, State};
use crate::engine::trace::{Answer, Exchange, Tracer};
use crate::engine::transport::{Op, Readable, Transport};
use crate::engine::{EngineError, Plan, RequestSource};
use crate::net::throttle::{Wakes, Way};
use crate::script::{ScriptError, ThreadScript};
use crate::stats::ErrorKind;
use crate::stats::Recorder;
use connect::Opening;
use meter::Meter;
use requests::Requests;
use schedule::When;

/// Events taken from one `epoll_wait`.
const EVENTS_PER_POLL: usize = 1024;
/// Longest sleep in `epoll_wait`, so a stop request is seen promptly.
const MAX_POLL_WAIT_US: u64 = 100_000;

/// One thread's share of the load, over transport `T`: the protocol's connections, and
/// everything else the thread keeps, which the protocol sees only through its handle.
struct Worker<'a, T: Transport> {
    transport: T,
    core: Core<'a>,
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
    pub series: crate::stats::interval::SeriesSink,
}

/// Runs thread `share.index`'s share of the load over `transport`, with the script state
/// [`thread_script`] made for it: the engine's HTTP transports and a unit's
/// [`Launch`](crate::engine::Launch) alike.
pub fn drive<T: Transport>(
    plan: &Plan,
    stop: &AtomicBool,
    share: Share,
    script: Option<ThreadScript>,
    transport: T,
) -> Result<WorkerOutput, EngineError> {
    Worker::new(plan, stop, share, script, transport)?.run()
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
        let core = Core::new(plan, stop, share, script, transport.slots(), |slot| transport.link(slot))?;
        transport.capture(core.captures());
        Ok(Worker { transport, core })
    }

    /// Runs until the end time or the stop flag; returns what was measured.
    fn run(mut self) -> Result<WorkerOutput, EngineError> {
        let mut events = Events::with_capacity(EVENTS_PER_POLL);
        self.core.begin();
        loop {
            let now = self.core.now_us();
            if self.stop_requested() {
                break;
            }
            // The end of the duration, or the last of -n's requests answered (one refused
            // unprocessed goes again first, on a new connection if need be), or -n's server gone.
            let counted = ((self.core.budget_spent() || self.core.replay_done())
                && self.transport.count_done(&self.core))
                || self.transport.done();
            let stuck = self.core.stuck(now);
            if stuck {
                // Deadlines that passed while this thread was not running fire first, so the
                // run ends with their cause ("timed out", "no QUIC answer"), not with none.
                self.expire(now);
            }
            if (now >= self.core.end_us() || counted || stuck) && !self.core.is_draining() {
                if !counted && !stuck {
                    self.core.send_due_before_end();
                    self.transport.settle(&mut self.core);
                }
                self.core.start_drain();
                self.transport.drain(&mut self.core);
                self.transport.settle(&mut self.core);
            }
            if self.core.is_draining() && self.core.in_flight_now() == 0 {
                break;
            }
            self.turn(now);
            self.transport.flush(&mut self.core);
            let wake = self.core.next_wake(now, self.transport.next_deadline());
            let wait = Duration::from_micros(wake.saturating_sub(now).min(MAX_POLL_WAIT_US));
            if let Err(e) = self.core.poll(&mut events, Some(wait)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(EngineError::Poll(e));
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    self.core.timer_fired();
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
                self.transport.event(&mut self.core, ev.token().0, readable, ev.is_writable() || ev.is_error());
                self.transport.settle(&mut self.core);
            }
        }
        Ok(self.finish())
    }

    /// Ctrl-C: ends the load like the end of the duration does (requests in flight are still
    /// waited for, so the totals add up; a second Ctrl-C exits at once). True when this
    /// thread's own script failed: its hooks must not run again, so the loop ends now.
    fn stop_requested(&mut self) -> bool {
        if !self.core.stop_set() {
            return false;
        }
        if self.core.script_failed_here() {
            return true;
        }
        if !self.core.is_draining() {
            self.core.start_drain();
            self.transport.drain(&mut self.core);
            self.transport.settle(&mut self.core);
        }
        false
    }

    /// What one loop turn does before it polls: whatever time made due.
    fn turn(&mut self, now: u64) {
        self.expire(now);
        let (t, c) = (&mut self.transport, &mut self.core);
        if !c.plan.slow.rates.none() {
            // A throttled connection whose budget came back goes on as if the socket said so:
            // reading until it would block (so a close waiting behind the data is seen), or
            // writing.
            while let Some((token, way)) = c.wakes.pop_due(Instant::now()) {
                match way {
                    Way::Read => t.event(c, token, Readable::UntilEof, false),
                    Way::Write => t.event(c, token, Readable::No, true),
                }
                t.settle(c);
            }
        }
        c.retry_due(now);
        t.settle(c);
        t.open_queued(c);
        t.settle(c);
        c.sample(now);
        if c.cut_due(now) {
            let open = t.open_connections(c);
            c.cut_interval(now, open, t.live());
        }
        if c.warm_due(now) {
            let open = t.open_connections(c);
            c.end_warmup(now, open, t.live());
            t.restart_counts();
        }
        c.arrive(now);
        t.settle(c);
        c.dispatch(now);
        t.settle(c);
        c.arm_timer(now);
    }

    /// Fires the protocol's and the slots' deadlines that passed by `now`.
    fn expire(&mut self, now: u64) {
        let (t, c) = (&mut self.transport, &mut self.core);
        t.expire(c, now);
        t.settle(c);
        while let Some(i) = c.pop_expired(now) {
            t.timed_out(c, i);
            t.settle(c);
        }
    }

    /// The run is over: the last interval, the counts the connections hold, the output.
    fn finish(mut self) -> WorkerOutput {
        // The last interval runs to the end of the drain, so no sliver of an interval is left.
        let now = self.core.now_us();
        let open = self.transport.open_connections(&self.core);
        self.core.cut_interval(now, open, self.transport.live());
        self.transport.finish(&mut self.core);
        if let Some(counts) = self.transport.counts() {
            self.core.meter.rec.sections.add(counts);
        }
        let rec = &mut self.core.meter.rec;
        if let Some(counts) = self.core.requests.counts(&rec.ttfb_us) {
            rec.sections.add(counts);
        }
        if let Some(r) = self.core.redirects.as_mut() {
            rec.sections.add(Box::new(r.take_counts()));
        }
        self.core.finish(now)
    }
}

/// Poll token of the pacing timer (a transport's sources use their index).
const TIMER: Token = Token(usize::MAX - 1);

/// Everything a worker keeps but its protocol's connections.
struct Core<'a> {
    plan: &'a Plan,
    stop: &'a AtomicBool,
    poll: Poll,
    clock: Clock,
    end_us: u64,
    /// Past the end: no new requests; in-flight ones may still finish (or time out).
    draining: bool,
    /// The request slots; a slot's index names it to the transport.
    slots: Vec<Slot>,
    /// What comes due by time alone.
    due: Due,
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
    addrs: Vec<SocketAddr>,
    /// Each slot's connection number (which picks its origin), as the transport numbers them.
    link_of: Vec<u32>,
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
    /// What the worker asked of the protocol and it has not yet done.
    ops: VecDeque<Op>,
    /// `--follow-redirects`: where each slot's chain is.
    redirects: Option<redirect::Redirects>,
    /// `--read-rate`, `--write-rate`: connections waiting for their budgets.
    wakes: Wakes,
    /// `--trace`, `--trace-file`: this thread's side of the trace.
    trace: Option<Box<Tracer>>,
}

/// Slots waiting for a time.
struct Due {
    /// Each slot's request or connect deadline.
    deadlines: Deadlines,
    /// A reconnect after a failed connect (state Closed) or a script's `delay()` (state
    /// Delayed): (at_us, slot, generation).
    timers: BinaryHeap<Reverse<(u64, u32, u32)>>,
}

impl<'a> Core<'a> {
    /// The core of a worker with `slots` slots, slot `i` on the transport's connection
    /// `link(i)`.
    fn new(
        plan: &'a Plan,
        stop: &'a AtomicBool,
        share: Share,
        script: Option<ThreadScript>,
        slots: usize,
        link: impl Fn(usize) -> usize,
    ) -> Result<Core<'a>, EngineError> {
        let Share { index, start, warm, end, series, requests: budget, .. } = share;
        let clock = Clock::new(start);
        let poll = Poll::new().map_err(EngineError::Poll)?;
        let addrs = match &plan.send {
            RequestSource::Script(s) => vec![s.setups.get(index).and_then(|s| s.addr).unwrap_or(plan.addr())],
            _ => plan.origins.iter().map(|o| o.addr).collect(),
        };
        let (requests, pipeline) = Requests::new(plan, index, slots, script)?;
        let when = When::new(plan, index, slots, &poll)?;
        let paced = matches!(when, When::Paced(_));
        let meter = Meter::new(&clock, warm, series, paced, requests.first_timed().is_some());
        Ok(Core {
            plan,
            stop,
            poll,
            clock,
            // A paced run of -n requests sends them all, however long its connections take
            // to open: its schedule's length is not a deadline.
            end_us: if paced && plan.span.open_ended { u64::MAX } else { clock.at(end) },
            draining: false,
            slots: (0..slots).map(|_| Slot::new()).collect(),
            due: Due { deadlines: Deadlines::new(slots), timers: BinaryHeap::new() },
            meter,
            requests,
            pipeline,
            when,
            opening: Opening::new(slots, plan.threads),
            addrs,
            link_of: (0..slots).map(|i| link(i) as u32).collect(),
            index,
            script_error: None,
            budget,
            progress: (0, 0),
            ops: VecDeque::new(),
            redirects: redirect::Redirects::new(plan.follow_redirects, slots),
            wakes: Wakes::default(),
            trace: plan.trace.as_ref().map(|shared| {
                let protocol = plan.protocol.name(if plan.https() { Scheme::Https } else { Scheme::Http });
                let links = (0..slots).map(&link).max().map_or(0, |l| l + 1);
                let tracer = Tracer::new(shared.clone(), index, protocol, plan.https(), slots, links);
                Box::new(if plan.send.streaming().is_some() { tracer.streamed() } else { tracer })
            }),
        })
    }

    /// Whether responses are kept whole (for a hook, a content check, or a redirect's
    /// `Location`).
    fn captures(&self) -> bool {
        self.requests.captures() || self.redirects.is_some() || self.trace.is_some()
    }

    /// Slot `i`'s exchange ended as `answer`: traced, when the run is. A unit's answers are
    /// messages, which it traces itself ([`Core::trace_with`]).
    fn trace(&mut self, i: usize, answer: Answer) {
        if self.trace.is_some()
            && !(matches!(self.plan.protocol, Protocol::Unit(_)) && matches!(answer, Answer::Response(..)))
        {
            self.trace_with(i, None, answer);
        }
    }

    /// Slot `i`'s exchange of `request` (the slot's own when `None`) ended as `answer`.
    fn trace_with(&mut self, i: usize, request: Option<&[u8]>, answer: Answer) {
        let Some(t) = self.trace.as_deref_mut() else { return };
        let hop = self.redirects.as_ref().and_then(|r| r.request(i));
        let request = request.or(hop).or_else(|| self.requests.built(i)).unwrap_or_else(|| self.requests.bytes(i));
        // A judged workload's fixed exchange (a gRPC call) is the plan's first request.
        let request = if request.is_empty() { &self.plan.request } else { request };
        let ex = Exchange {
            slot: i,
            link: self.link_of[i] as usize,
            request,
            sent_us: self.slots[i].sent_us,
            now_us: self.clock.now_us(),
            recorded: self.requests.recorded(i),
        };
        t.ended(&ex, answer);
        t.sending(i);
    }

    /// Load starts: every slot's connection is queued to open (an arriving connection opens
    /// when it arrives), or, when a script stopped in `init`, the run drains at once.
    fn begin(&mut self) {
        // The clock started before the threads were set up: -n's patience starts now.
        self.progress.1 = self.now_us();
        if let When::Paced(p) = &mut self.when {
            // Behind is measured from here: the first sample, and the run delay's base.
            p.behind.woke(self.clock.now_us());
        }
        if self.requests.lua().is_some_and(|s| s.stop_requested()) {
            self.start_drain();
        } else if !matches!(self.when, When::Arrivals(_)) {
            self.opening.queue.extend(0..self.slots.len() as u32);
        }
    }

    /// Now, in clock microseconds.
    fn now_us(&self) -> u64 {
        self.clock.now_us()
    }

    /// When sending stops.
    fn end_us(&self) -> u64 {
        self.end_us
    }

    /// Whether the run is draining.
    fn is_draining(&self) -> bool {
        self.draining
    }

    /// Whether Ctrl-C (or the end of the run elsewhere) asked this thread to stop.
    fn stop_set(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether this thread's own script failed.
    fn script_failed_here(&self) -> bool {
        self.script_error.is_some()
    }

    /// `-n`: every request of this thread was started (and with whole pages, every page's
    /// objects too).
    fn budget_spent(&self) -> bool {
        self.budget == Some(0) && self.requests.settled()
    }

    /// Every paced request this thread had was taken: a replay whose reader has ended, or
    /// the schedule of an open-ended (`-n`) run.
    fn replay_done(&self) -> bool {
        let When::Paced(p) = &self.when else { return false };
        let taken = match &p.pacer {
            schedule::Source::Replay(f) => f.done(),
            schedule::Source::Schedule(s) => self.plan.span.open_ended && s.next_due().is_none(),
        };
        taken && p.held.iter().all(|h| h.is_empty())
    }

    /// Waits for poll events, at most `wait`.
    fn poll(&mut self, events: &mut Events, wait: Option<std::time::Duration>) -> std::io::Result<()> {
        // A paced thread notes the time it spends away from its poll, to tell its own lateness
        // from a wait for a connection (two clock reads a turn; none in closed loop).
        if let When::Paced(p) = &mut self.when {
            p.behind.polling(self.clock.now_us());
        }
        let polled = self.poll.poll(events, wait);
        if let When::Paced(p) = &mut self.when {
            p.behind.woke(self.clock.now_us());
        }
        polled
    }

    /// The pacing timer fired.
    fn timer_fired(&mut self) {
        if let When::Paced(p) = &mut self.when {
            p.timer.fired();
        }
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

    /// The run is over (its last interval cut, the protocol's counts in): what the thread
    /// hands back.
    fn finish(mut self, now: u64) -> WorkerOutput {
        let rec = &mut self.meter.rec;
        if rec.rate_samples.is_empty() && rec.requests > 0 {
            // A run shorter than one sampling interval still gets a real Req/Sec row.
            rec.rate_sample(rec.requests * 1_000_000 / now.max(1));
        }
        let globals = self.requests.lua().map(|s| s.globals()).unwrap_or_default();
        let (cpu, waited) = self.meter.used();
        WorkerOutput { rec: self.meter.rec, globals, script_error: self.script_error, cpu, waited }
    }

    /// Asks the protocol for `op` (done when the protocol settles).
    fn ask(&mut self, op: Op) {
        self.ops.push_back(op);
    }

    /// Pops the next slot whose request deadline passed by `now`.
    fn pop_expired(&mut self, now: u64) -> Option<usize> {
        let slots = &self.slots;
        self.due.deadlines.pop_expired(now, |d| live(slots, d)).map(|d| d.conn as usize)
    }

    /// Records the response that just completed on slot `i`.
    fn record_response(&mut self, i: usize, status: u16) {
        let now = self.clock.now_us();
        let s = &self.slots[i];
        let (latency, uncorrected) = if matches!(self.when, When::Paced(_)) {
            (now.saturating_sub(s.intended_us), Some(now.saturating_sub(s.sent_us)))
        } else {
            (now.saturating_sub(s.sent_us), None)
        };
        self.record_answer(Some(status), latency, uncorrected);
        if let Some(k) = self.requests.target_of(i) {
            self.meter.rec.target_done(k, latency);
        }
    }

    /// Records an answer in the run's and the interval's histograms: its status if it had
    /// one, its latency, and in rate mode (`uncorrected`) its latency from the actual send.
    pub(super) fn record_answer(&mut self, status: Option<u16>, latency: u64, uncorrected: Option<u64>) {
        let clamp = |us: u64| us.clamp(1, crate::stats::MAX_LATENCY_US);
        self.meter.rec.answered(status, latency, uncorrected);
        if let (Some(u), Some(h)) = (uncorrected, self.meter.interval.uncorrected_us.as_mut()) {
            h.saturating_record(clamp(u));
        }
        self.meter.interval.latency_us.saturating_record(clamp(latency));
    }

    /// Sets slot `i`'s request deadline from now.
    fn set_deadline(&mut self, i: usize) {
        let at_us = self.clock.now_us() + self.plan.timeout_us;
        self.due.deadlines.push(Deadline { at_us, conn: i as u32, generation: self.slots[i].generation });
    }
}

/// Whether a deadline still applies to its slot.
fn live(slots: &[Slot], d: &Deadline) -> bool {
    slots.get(d.conn as usize).is_some_and(|s| {
        s.generation == d.generation && matches!(s.state, State::Connecting | State::Writing | State::Reading)
    })
}
