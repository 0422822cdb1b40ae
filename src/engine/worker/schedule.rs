//! The time-driven half of a worker: what happens because the clock moved rather than a
//! socket — when requests go out ([`When`]: closed loop, paced sends on a timer, connection
//! arrivals), deadlines, rate samples, interval cuts and the drain at the end.

use mio::{Interest, Poll};

use super::{live, Core, TIMER};
use crate::engine::feed::Feed;
use crate::engine::pacer::Pacer;
use crate::engine::slot::{Slot, State};
use crate::engine::timer::Timer;
use crate::engine::transport::{Live, Op};
use crate::engine::{EngineError, Plan, Timing};
use crate::stats::Waited;

/// When this thread sends, settled when the worker is made.
// One per worker thread, so its size costs nothing; boxing the paced variant would cost a
// pointer chase on every paced send.
#[allow(clippy::large_enum_variant)]
pub(super) enum When<'a> {
    /// Each connection sends again as soon as its response completes.
    ClosedLoop,
    /// Closed loop over several servers (a targets file's): each request, in the sequence's
    /// order, goes as soon as a connection to its own server is free (per origin, those
    /// free now), so the targets' mix stays exact; a slow server holds the others back, as
    /// it does a pool of workers taking targets in turn (vegeta's).
    Ordered(Vec<Vec<u32>>),
    /// Requests come due on this thread's share of a schedule.
    Paced(Paced<'a>),
    /// Connections arrive on a schedule, each sending at once; at most `-c` open.
    Arrivals(Arrivals<'a>),
}

/// Rate mode: the schedule, the connections free to take a due request, and the timer that
/// wakes the loop when one is due.
pub(super) struct Paced<'a> {
    pub(super) pacer: Source<'a>,
    /// Per origin (one but with targets on several servers), its free connections.
    pub(super) idle: Vec<Vec<u32>>,
    pub(super) timer: Timer,
    /// Per slot: when it came free, to tell why a late send waited.
    free: Vec<Free>,
    /// A replay with `--sessions`: per slot, its sessions' requests that came due while it
    /// was busy, sent in order as it comes free.
    pub(super) held: Vec<std::collections::VecDeque<Held>>,
    /// How far this thread was behind, to tell why a late send waited.
    pub(super) behind: super::behind::Behind,
}

/// A session's request waiting for its busy slot.
#[derive(Clone)]
pub(super) struct Held {
    /// When it was due, clock microseconds.
    pub(super) due: u64,
    /// Its path number.
    pub(super) path: u16,
    /// The request.
    pub(super) bytes: Vec<u8>,
    /// Where it was recorded, when the run is traced.
    pub(super) note: Option<Box<str>>,
}

/// Where a paced thread's due times come from.
pub(super) enum Source<'a> {
    /// Its share of a rate schedule.
    Schedule(Pacer<'a>),
    /// Its share of a replay.
    Replay(Feed),
}

impl Source<'_> {
    /// When the next request is due, if one is at hand.
    #[inline]
    pub(super) fn next_due(&self) -> Option<u64> {
        match self {
            Source::Schedule(p) => p.next_due(),
            Source::Replay(f) => f.next_due(),
        }
    }

    /// Takes the next request; its due time.
    #[inline]
    pub(super) fn take(&mut self) -> Option<u64> {
        match self {
            Source::Schedule(p) => p.take(),
            Source::Replay(f) => f.take(),
        }
    }

    /// The server the next request goes to, when the source says (a replay's requests do).
    fn next_origin(&self) -> Option<usize> {
        match self {
            Source::Schedule(_) => None,
            Source::Replay(f) => Some(f.next_origin()),
        }
    }

    /// Requests due before `end_us` never taken.
    fn left_before(&mut self, end_us: u64) -> u64 {
        match self {
            Source::Schedule(p) => p.left_before(end_us),
            Source::Replay(f) => f.left_before(end_us),
        }
    }
}

/// When a slot came free for a due request, to tell a late send's cause: was a connection
/// free at its due time? The loop sleeps through a due time when no connection is free (there
/// is nothing to send on), so the answer comes from when the slot it goes on came free.
#[derive(Debug, Clone, Copy, Default)]
struct Free {
    /// When the slot came free, clock microseconds.
    free_us: u64,
    /// When it would have come free had strain's thread not been slow to send its previous
    /// request: that response would have come back that much sooner. A generator that fell
    /// behind and then used every connection for its backlog made them busy itself; this
    /// keeps that from reading as "no connection was free".
    ideal_us: u64,
    /// How long strain's thread took to send the slot's current request once it was due and
    /// the slot was free (its reaction alone: the previous send's is not carried on, or one
    /// slow turn would mark every later send of a connection-bound backlog as strain's).
    react_us: u64,
    /// When its connection opened (clock microseconds): a request due before that waited
    /// while connections were being opened, however many responses the slot carried since
    /// (a backlog built while every connection was opening drains through them).
    opened_us: u64,
}

impl<'a> Paced<'a> {
    /// Paced sends from `pacer` over `conns` slots, woken by `timer`.
    fn new(pacer: Source<'a>, plan: &Plan, conns: usize, timer: Timer) -> Paced<'a> {
        Paced {
            pacer,
            idle: (0..plan.origins.len()).map(|_| Vec::with_capacity(conns)).collect(),
            timer,
            free: vec![Free::default(); conns],
            held: vec![std::collections::VecDeque::new(); conns],
            behind: super::behind::Behind::default(),
        }
    }

    /// Requests held for busy session slots.
    fn held_count(&self) -> u64 {
        self.held.iter().map(|h| h.len() as u64).sum()
    }

    /// Slot `i` came free at `now` (`opened`: its connection has just opened) and joins
    /// origin `o`'s free slots.
    fn release(&mut self, o: usize, i: usize, now: u64, opened: bool) {
        if let Some(f) = self.free.get_mut(i) {
            let react = if opened { 0 } else { f.react_us };
            let opened_us = if opened { now } else { f.opened_us };
            *f = Free { free_us: now, ideal_us: now.saturating_sub(react), react_us: 0, opened_us };
        }
        if let Some(idle) = self.idle.get_mut(o) {
            idle.push(i as u32);
        }
    }

    /// Why the request due at `due_us`, written at `now` on slot `i` (just taken from origin
    /// `o`'s free slots), waited: strain's thread (it was behind for most of the wait, or took
    /// long to send once a connection was free), or no connection.
    fn waited(&mut self, o: usize, i: usize, due_us: u64, now: u64, slots: &[Slot]) -> Waited {
        let Some(&taken) = self.free.get(i) else { return Waited::Generator(now.saturating_sub(due_us)) };
        // The free list is a stack: its bottom has been free longest, maybe since before the
        // due time even when the slot taken from its top came free after it.
        let longest = self.idle.get(o).and_then(|v| v.first()).map(|&b| b as usize).filter(|&b| {
            slots.get(b).is_some_and(|s| s.state == State::Idle)
                && self.free.get(b).is_some_and(|f| f.ideal_us < taken.ideal_us)
        });
        let first = longest.and_then(|b| self.free.get(b).copied()).unwrap_or(taken);
        let lag = now.saturating_sub(due_us.max(first.ideal_us));
        if let Some(f) = self.free.get_mut(i) {
            f.react_us = now.saturating_sub(due_us.max(taken.free_us));
        }
        let late = crate::stats::LATE_SEND_US;
        if lag > late {
            Waited::Generator(lag)
        } else if due_us < first.opened_us {
            // Opening connections keeps the thread busy too, but what the send waited for
            // was its connection.
            Waited::Connecting
        } else {
            let behind = self.behind.since(due_us, now);
            if behind.saturating_mul(2) > now.saturating_sub(due_us).max(2 * late) {
                Waited::Generator(behind)
            } else {
                Waited::Busy
            }
        }
    }
}

/// Arriving connections: their schedule and the slots free for them.
pub(super) struct Arrivals<'a> {
    pub(super) pacer: Pacer<'a>,
    pub(super) free: Vec<u32>,
}

impl<'a> When<'a> {
    /// This thread's timing, with its timer registered on `poll` in rate mode.
    pub(super) fn new(plan: &'a Plan, index: usize, conns: usize, poll: &Poll) -> Result<When<'a>, EngineError> {
        Ok(match &plan.when {
            Timing::ClosedLoop if plan.origins.len() > 1 => {
                When::Ordered((0..plan.origins.len()).map(|_| Vec::with_capacity(conns)).collect())
            }
            Timing::ClosedLoop => When::ClosedLoop,
            Timing::Paced { schedule, tick_us } => {
                let timer = Timer::new().map_err(EngineError::Poll)?;
                poll.registry()
                    .register(&mut mio::unix::SourceFd(&timer.raw_fd()), TIMER, Interest::READABLE)
                    .map_err(EngineError::Poll)?;
                let pacer = Pacer::new(schedule, share_index(plan, index), share_stride(plan), *tick_us);
                When::Paced(Paced::new(Source::Schedule(pacer), plan, conns, timer))
            }
            Timing::Replay { queues, tick_us, .. } => {
                let timer = Timer::new().map_err(EngineError::Poll)?;
                poll.registry()
                    .register(&mut mio::unix::SourceFd(&timer.raw_fd()), TIMER, Interest::READABLE)
                    .map_err(EngineError::Poll)?;
                // Each worker takes its own queue once, as it starts.
                let rx = queues.get(index).and_then(|q| q.lock().ok().and_then(|mut q| q.take()));
                let (_, empty) = std::sync::mpsc::channel();
                When::Paced(Paced::new(
                    Source::Replay(Feed::new(rx.unwrap_or(empty), *tick_us, plan.span.duration.as_micros() as u64)),
                    plan,
                    conns,
                    timer,
                ))
            }
            Timing::Arrivals(schedule) => When::Arrivals(Arrivals {
                pacer: Pacer::new(schedule, share_index(plan, index), share_stride(plan), 0),
                free: (0..conns as u32).rev().collect(),
            }),
        })
    }
}

/// Request `k` of the whole schedule belongs to segment `k mod N`, and within it to thread
/// `(k div N) mod T`: thread `t` of segment `s` takes `s + N t`, then every `N T`-th. The N
/// processes' threads together send exactly the one schedule.
fn share_index(plan: &Plan, thread: usize) -> usize {
    plan.segment.index as usize + plan.segment.count.max(1) as usize * thread
}

/// See [`share_index`].
fn share_stride(plan: &Plan) -> usize {
    plan.segment.count.max(1) as usize * plan.threads
}

impl Core<'_> {
    /// Slot `i` is free for a paced request (rate mode), or for the sequence's next request
    /// (several servers in closed loop): it waits in its origin's free list.
    pub(super) fn park(&mut self, i: usize) {
        let o = self.link_of[i] as usize % self.addrs.len();
        let opened = !self.slots[i].in_flight();
        self.slots[i].state = State::Idle;
        match &mut self.when {
            When::Paced(p) => p.release(o, i, self.clock.now_us(), opened),
            When::Ordered(idle) => idle[o].push(i as u32),
            When::ClosedLoop | When::Arrivals(_) => {}
        }
    }

    /// Records a paced send of slot `i`, due at `due_us` and written at `now`.
    pub(super) fn paced_send(&mut self, i: usize, due_us: u64, now: u64) {
        let o = self.link_of[i] as usize % self.addrs.len();
        if let When::Paced(p) = &mut self.when {
            let waited = p.waited(o, i, due_us, now, &self.slots);
            self.meter.rec.pacing.sent(now.saturating_sub(due_us), waited);
            self.meter.rec.lag_us.saturating_record(now.saturating_sub(due_us));
        }
    }

    /// Sends this thread's measurements of the interval ending now (`open` connections up)
    /// and starts the next one.
    pub(super) fn cut_interval(&mut self, now: u64, open: u64, live: Live) {
        let mut outcomes = Vec::new();
        self.requests.outcomes(&mut outcomes);
        self.meter.cut(now, open, live, &outcomes);
    }

    /// Whether the current interval is due to be cut.
    pub(super) fn cut_due(&self, now: u64) -> bool {
        now >= self.meter.interval.next_at_us && self.meter.interval.next_at_us < self.end_us
    }

    /// Whether the warm-up ends now.
    pub(super) fn warm_due(&self, now: u64) -> bool {
        self.meter.warm_at_us.is_some_and(|w| now >= w)
    }

    /// Takes a `Req/Sec` sample when one is due.
    pub(super) fn sample(&mut self, now: u64) {
        if now >= self.meter.sample_at_us {
            self.meter.sample_rate(now);
        }
    }

    /// Ends the warm-up (`open` connections up): its last interval is cut and the counts start
    /// again (see `Meter::end_warmup`).
    pub(super) fn end_warmup(&mut self, now: u64, open: u64, live: Live) {
        if self.meter.interval.start_us < now {
            self.cut_interval(now, open, live);
        }
        let in_flight = self.in_flight_now() as u64 * u64::from(self.pipeline);
        self.meter.end_warmup(now, in_flight);
        self.requests.restart_counts();
        if let Some(r) = self.redirects.as_mut() {
            r.restart_counts();
        }
    }

    /// The earliest moment something is due: end, rate sample, deadline or retry, or the
    /// transport's own (`transport`).
    pub(super) fn next_wake(&mut self, now: u64, transport: Option<u64>) -> u64 {
        let slots = &self.slots;
        let deadline = self.due.deadlines.next(|d| live(slots, d)).unwrap_or(u64::MAX);
        let retry = self.due.timers.peek().map_or(u64::MAX, |r| r.0 .0);
        let end = if self.draining { u64::MAX } else { self.end_us };
        // No interval is cut past the end (`cut_due`): a cut time left behind must not wake a
        // drain that waits on long calls (gRPC streams) in a loop that never sleeps.
        let cut = if self.meter.interval.next_at_us < self.end_us { self.meter.interval.next_at_us } else { u64::MAX };
        let arrival = match &self.when {
            When::Arrivals(a) if !self.draining => a.pacer.next_due().unwrap_or(u64::MAX),
            _ => u64::MAX,
        };
        // A replay whose reader is behind looks again in a millisecond.
        let starved = match &self.when {
            When::Paced(Paced { pacer: Source::Replay(f), .. }) if f.starved() && !self.draining => now + 1_000,
            _ => u64::MAX,
        };
        // Connections still to open are opened on the next turn, without sleeping.
        let open = if self.opening.can_open() && !self.draining { now } else { u64::MAX };
        let transport = transport.unwrap_or(u64::MAX);
        let throttled = self.wakes.next().map_or(u64::MAX, |at| self.clock.at(at));
        end.min(cut)
            .min(throttled)
            .min(transport)
            .min(self.meter.warm_at_us.unwrap_or(u64::MAX))
            .min(arrival)
            .min(self.meter.sample_at_us)
            .min(deadline)
            .min(retry)
            .min(self.next_send())
            .min(starved)
            .min(open)
            .max(now)
    }

    /// When the next paced request can go out: its due time, if a connection is free for it.
    pub(super) fn next_send(&self) -> u64 {
        match &self.when {
            When::Paced(p)
                if !self.draining
                    && p.idle
                        .get(p.pacer.next_origin().unwrap_or_else(|| self.requests.next_origin()))
                        .is_some_and(|v| !v.is_empty()) =>
            {
                p.pacer.next_due().unwrap_or(u64::MAX)
            }
            _ => u64::MAX,
        }
    }

    /// Wakes the loop exactly when the next paced request is due (epoll only sleeps whole ms).
    pub(super) fn arm_timer(&mut self, now: u64) {
        let due = self.next_send();
        if let When::Paced(p) = &mut self.when {
            if due != u64::MAX && due > now {
                // A timer that cannot be set leaves the millisecond poll as the fallback.
                let _ = p.timer.arm(due, now);
            }
        }
    }

    /// `--new-conn-rate`: opens the connections that have arrived, in free slots; an arrival
    /// that finds every slot busy is counted and dropped (the client side is saturated).
    pub(super) fn arrive(&mut self, now: u64) {
        if self.draining {
            return;
        }
        loop {
            let When::Arrivals(a) = &mut self.when else { return };
            match a.pacer.next_due() {
                Some(due) if due <= now => {
                    a.pacer.take();
                }
                _ => return,
            }
            match a.free.pop() {
                Some(i) => self.ask(Op::Open(i)),
                None => self.meter.rec.arrivals_dropped += 1,
            }
        }
    }

    /// Rate mode: sends every request that has come due, on free connections; several
    /// servers in closed loop: sends the sequence's next requests while their servers have a
    /// connection free.
    pub(super) fn dispatch(&mut self, now: u64) {
        if self.draining {
            return;
        }
        loop {
            let o = self.requests.next_origin();
            let (i, due) = match &mut self.when {
                When::Paced(p) => {
                    if let Source::Replay(f) = &mut p.pacer {
                        f.refill();
                    }
                    let o = p.pacer.next_origin().unwrap_or(o);
                    let Some(due) = p.pacer.next_due() else { return };
                    if due > now {
                        return;
                    }
                    let session = match &p.pacer {
                        Source::Replay(f) => f.next_slot().filter(|&s| s < self.slots.len()),
                        Source::Schedule(_) => None,
                    };
                    if let (Some(s), Source::Replay(f)) = (session, &mut p.pacer) {
                        // A session's request goes on its own slot: now if it is free, else
                        // once its earlier requests are answered.
                        f.take();
                        let free = p.idle.get(o).and_then(|v| v.iter().position(|&k| k as usize == s));
                        match free.filter(|_| self.slots[s].state == State::Idle && p.held[s].is_empty()) {
                            Some(at) => {
                                if let Some(v) = p.idle.get_mut(o) {
                                    v.swap_remove(at);
                                }
                                self.requests.load(s, f.taken(), f.taken_path(), f.taken_note());
                                (s as u32, due)
                            }
                            None => {
                                p.held[s].push_back(Held {
                                    due,
                                    path: f.taken_path(),
                                    bytes: f.taken().to_vec(),
                                    note: f.taken_note().map(Into::into),
                                });
                                continue;
                            }
                        }
                    } else {
                        // The request waits for a connection to its own server.
                        let Some(i) = p.idle.get_mut(o).and_then(Vec::pop) else { return };
                        if self.slots[i as usize].state != State::Idle {
                            continue;
                        }
                        p.pacer.take();
                        if let Source::Replay(f) = &p.pacer {
                            self.requests.load(i as usize, f.taken(), f.taken_path(), f.taken_note());
                        }
                        (i, due)
                    }
                }
                When::Ordered(idle) => {
                    let Some(i) = idle.get_mut(o).and_then(Vec::pop) else { return };
                    if self.slots[i as usize].state != State::Idle {
                        continue;
                    }
                    (i, now)
                }
                When::ClosedLoop | When::Arrivals(_) => return,
            };
            self.send(i as usize, due);
            if self.draining {
                return;
            }
        }
    }

    /// The duration is up: paced requests due before its end go out on the connections free
    /// now. A thread woken a little after the end (a busy machine wakes it late) would
    /// otherwise count its last due requests as unsent though connections were free for them.
    pub(super) fn send_due_before_end(&mut self) {
        if matches!(self.when, When::Paced(_)) {
            self.dispatch(self.end_us.saturating_sub(1));
        }
    }

    /// At the end of the test (or when it is stopped early), requests already sent are still
    /// waited for (up to their timeout), so the count strain reports is the count the server
    /// answered; connections with nothing in flight close now.
    pub(super) fn start_drain(&mut self) {
        self.draining = true;
        self.due.timers.clear();
        self.opening.queue.clear();
        if let When::Paced(p) = &mut self.when {
            // A run stopped early never meant to send what was due after the stop; one that
            // sent its -n count left nothing unsent.
            if self.budget != Some(0) {
                let held = p.held_count();
                self.meter.rec.pacing.unsent = p.pacer.left_before(self.clock.now_us().min(self.end_us)) + held;
            }
        }
        for i in 0..self.slots.len() {
            if !self.slots[i].in_flight() {
                self.ask(Op::Close(i as u32));
            }
        }
    }

    /// Connections with a request written (or being written) and no complete response yet.
    pub(super) fn in_flight_now(&self) -> usize {
        self.slots.iter().filter(|s| s.in_flight()).count()
    }
}
