//! What HTTP/2 and HTTP/3 share: a worker's connections ("links") each carry `-m` request
//! slots as streams, slot `i` on link `i / m`. How a link connects, sends and reads is its
//! protocol's ([`Multiplexed`]); when it opens, how failed connects back off, how a link that
//! goes away is replaced, how a request the server never processed goes again on the next
//! connection, and how the worker's calls route to a slot's link are the same for both, and
//! are written here once: [`Multiplexed`]'s provided methods, and one [`Transport`] for every
//! multiplexed protocol.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Host, Readable, Transport};
use crate::engine::deadlines::{Deadline, Deadlines};
use crate::engine::slot::State;
use crate::script::ScriptError;
use crate::stats::{ConnectCause, ErrorKind};

/// Where a link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// No connection.
    Closed,
    /// Its connect (TCP and TLS, or the QUIC handshake) is under way.
    Connecting,
    /// Up.
    Open,
}

/// What every link keeps, whatever its protocol.
#[derive(Debug, Clone, Copy)]
pub struct Life {
    /// Where it is.
    pub state: LinkState,
    /// Bumped on every connect and close, so old deadlines and reconnects no longer apply.
    pub generation: u32,
    /// Failed connects in a row, for the backoff.
    pub failures: u32,
    /// Counted in the worker's opening window until its first response.
    pub opening: bool,
    /// It takes no new stream (the server's GOAWAY, or a client keep-alive limit); replaced
    /// once its streams end.
    pub goaway: bool,
    /// Responses completed on this connection (for a proxy test's `--keepalive`).
    pub uses: u64,
}

/// The links' shared bookkeeping.
pub struct Links {
    /// Slots per link (`-m`).
    pub streams: usize,
    /// Per link.
    pub life: Vec<Life>,
    /// Per slot: its request was refused unprocessed and goes again on the next connection.
    retry: Vec<bool>,
    /// Connect deadlines, one per link.
    deadlines: Deadlines,
    /// Reconnects after a failed connect, with backoff: (at, link, generation).
    retries: BinaryHeap<Reverse<(u64, u32, u32)>>,
    /// Responses are kept whole for a hook or a content check.
    pub capture: bool,
}

impl Links {
    /// `count` closed links of `streams` slots each.
    pub fn new(count: usize, streams: usize) -> Links {
        let closed =
            Life { state: LinkState::Closed, generation: 0, failures: 0, opening: false, goaway: false, uses: 0 };
        Links {
            streams,
            life: vec![closed; count],
            retry: vec![false; count * streams],
            deadlines: Deadlines::new(count),
            retries: BinaryHeap::new(),
            capture: false,
        }
    }

    /// Links with a connection up.
    pub fn open(&self) -> usize {
        self.life.iter().filter(|l| l.state == LinkState::Open).count()
    }

    /// The next connect deadline or reconnect.
    pub fn next_deadline(&mut self) -> Option<u64> {
        let retry = self.retries.peek().map(|r| r.0 .0);
        let life = &self.life;
        let connect = self.deadlines.next(|d| connecting(life, d));
        [retry, connect].into_iter().flatten().min()
    }

    /// Slot `i`'s link.
    pub fn of(&self, i: usize) -> usize {
        i / self.streams
    }

    /// The slots link `l` carries.
    pub fn slots_of(&self, l: usize) -> std::ops::Range<usize> {
        l * self.streams..(l + 1) * self.streams
    }

    /// Whether link `l` is up.
    pub fn is_open(&self, l: usize) -> bool {
        self.life.get(l).is_some_and(|k| k.state == LinkState::Open)
    }
}

/// A protocol whose links carry slots as streams: what it must say of itself, and (provided)
/// what every such protocol does alike.
pub trait Multiplexed: Sized {
    /// The shared bookkeeping.
    fn links(&self) -> &Links;
    /// The same, to change.
    fn links_mut(&mut self) -> &mut Links;
    /// Streams in flight on link `l`.
    fn busy(&self, l: usize) -> bool;
    /// Slot `i`'s request is let go before it was answered: what the protocol holds of it
    /// (bytes not yet written) goes.
    fn forget(&mut self, _i: usize) {}
    /// Starts link `l`'s connection.
    fn connect_link(&mut self, host: &mut impl Host, l: usize);
    /// Drops link `l`'s connection and what the protocol keeps of it (after counting it).
    fn drop_link(&mut self, host: &mut impl Host, l: usize);
    /// Link `l`'s connect deadline passed.
    fn connect_timed_out(&mut self, host: &mut impl Host, l: usize);
    /// Puts slot `i`'s request on its link as a new stream.
    fn submit_stream(&mut self, host: &mut impl Host, i: usize);
    /// Slot `i` gives up its request (a timeout, or a failure of its own): the stream is
    /// reset and the slot goes on; the link stays.
    fn fail(&mut self, host: &mut impl Host, i: usize, kind: ErrorKind);
    /// A poll event on link `l`.
    fn link_event(&mut self, host: &mut impl Host, l: usize, readable: Readable, writable: bool);
    /// The run is over: counts what the links still open hold.
    fn finish_links(&mut self, host: &mut impl Host);
    /// The loop turn is about to wait: what it queued to send goes out.
    fn flush_out(&mut self, _host: &mut impl Host) {}
    /// The protocol's own next timer (QUIC's), if any.
    fn next_timer(&mut self) -> Option<u64> {
        None
    }
    /// What the protocol counts (its section of the result).
    type Counts: crate::stats::section::Counts;
    /// Its counts so far, to add to.
    fn own_counts(&mut self) -> &mut Self::Counts;
    /// What the protocol counted, handed over at the end.
    fn counts(&mut self) -> Option<Box<dyn crate::stats::section::Section>> {
        Some(Box::new(std::mem::take(self.own_counts())))
    }
    /// Measuring starts: its counts start again.
    fn restart_counts(&mut self) {
        *self.own_counts() = Self::Counts::default();
    }
    /// Its GOAWAYs and retries so far.
    fn live(&self) -> super::Live;
    /// Runs the protocol's own timers that came due.
    fn expire_timers(&mut self, _host: &mut impl Host, _now: u64) {}

    /// Slot `i` wants to send: opens its link if it is closed, or starts the slot if it is up.
    fn mux_open(&mut self, host: &mut impl Host, i: usize) {
        let links = self.links();
        let l = links.of(i);
        match links.life[l].state {
            // A link going away takes no new stream: the slot waits for its replacement.
            LinkState::Open if links.life[l].goaway => {}
            LinkState::Open => {
                if host.state(i) == State::Closed {
                    self.slot_ready(host, i);
                }
            }
            LinkState::Connecting => {}
            // Queued while -n's count lasted, it may have been sent meanwhile on other links.
            LinkState::Closed if self.link_needed(host, l) => self.connect_link(host, l),
            LinkState::Closed => {}
        }
    }

    /// Whether link `l` has anything to carry: requests left of -n's count, or a refused
    /// request of its own to send again.
    fn link_needed(&self, host: &impl Host, l: usize) -> bool {
        !host.spent() || self.links().slots_of(l).any(|i| self.links().retry[i])
    }

    /// Link `l`'s connect started: its deadline, its place in the opening window.
    fn link_connecting(&mut self, host: &mut impl Host, l: usize) {
        let at_us = host.now() + host.timeout_us();
        let links = self.links_mut();
        let life = &mut links.life[l];
        life.generation = life.generation.wrapping_add(1);
        life.state = LinkState::Connecting;
        life.opening = true;
        life.goaway = false;
        let generation = life.generation;
        links.deadlines.push(Deadline { at_us, conn: l as u32, generation });
        host.opening_started();
    }

    /// Link `l` is up: its slots send; when none sends at once (rate mode), a response cannot
    /// prove the server took it, so its place in the opening window goes on now.
    fn start_slots(&mut self, host: &mut impl Host, l: usize) {
        let life = &mut self.links_mut().life[l];
        life.state = LinkState::Open;
        life.uses = 0;
        for i in self.links().slots_of(l) {
            if host.state(i) == State::Closed {
                self.slot_ready(host, i);
            }
        }
        // The sends asked for are made before asking whether any stream is in flight.
        Transport::settle(self, host);
        if !self.busy(l) {
            self.link_opened(host, l);
        }
    }

    /// Slot `i`'s link is up and the slot is free: a request the server refused unprocessed
    /// goes again (as first planned); otherwise the slot takes its next request.
    fn slot_ready(&mut self, host: &mut impl Host, i: usize) {
        if std::mem::take(&mut self.links_mut().retry[i]) && !host.draining() {
            host.resend(i);
        } else {
            host.next_request(i);
        }
    }

    /// Slot `i`'s request never reached a server that took it: it is not counted as sent and
    /// goes again, as first planned, once the slot's link is up (see `slot_ready`).
    fn requeue(&mut self, host: &mut impl Host, i: usize) {
        self.links_mut().retry[i] = true;
        self.forget(i);
        host.unsend(i);
    }

    /// Slot `i` is free: it sends again if its link is up, else waits for it.
    fn free_slot(&mut self, host: &mut impl Host, i: usize) {
        let links = self.links();
        let up = links.is_open(links.of(i));
        host.free(i, up);
    }

    /// A response completed on slot `i`'s link: a proxy test's keep-alive limit makes the link
    /// take no new stream after `--keepalive` responses (it is replaced once its streams end).
    fn count_link_use(&mut self, host: &impl Host, i: usize) {
        let limit = host.keepalive_limit();
        let links = self.links_mut();
        let l = links.of(i);
        let life = &mut links.life[l];
        life.uses += 1;
        if limit > 0 && life.uses >= limit {
            life.goaway = true;
        }
    }

    /// Slot `i`'s request as a script or a proxy test built it (HTTP/1 bytes), converted by
    /// `convert` for its link's authority; `None` for the fixed request. `Err` when it cannot be
    /// converted: the slot stops, it is not counted as sent, and the run ends with the error.
    fn convert_built<R>(
        &mut self,
        host: &mut impl Host,
        i: usize,
        convert: impl FnOnce(&[u8], &str) -> Result<R, String>,
    ) -> Result<Option<R>, ()> {
        let l = self.links().of(i);
        let Some(bytes) = host.built(i) else { return Ok(None) };
        match convert(bytes, &host.peer(l).to_string()) {
            Ok(r) => Ok(Some(r)),
            Err(why) => {
                host.unsend(i);
                host.fail_run(ScriptError::Runtime { hook: "request", message: why });
                Err(())
            }
        }
    }

    /// Whether `-n`'s count is done: no stream in flight and no refused request waiting.
    fn streams_done(&self, host: &impl Host) -> bool {
        host.in_flight() == 0 && !self.links().retry.iter().any(|&r| r)
    }

    /// Closes link `l` (its streams are done or lost) and, unless the run is over, opens a new
    /// connection in its place.
    fn retire_link(&mut self, host: &mut impl Host, l: usize) {
        self.close_link(host, l);
        let slots = self.links().slots_of(l);
        for i in slots.clone() {
            if host.state(i) == State::Idle {
                host.close_slot(i);
            }
        }
        // A closed slot stands for the link in the opening queue; when none is closed, the
        // link reopens when one of its slots next sends. Once -n's count is sent, only a
        // request to send again needs it.
        let needed = !host.draining() && self.link_needed(host, l);
        let closed = slots.into_iter().find(|&i| host.state(i) == State::Closed);
        if let Some(i) = closed.filter(|_| needed) {
            host.queue_open(i);
        }
    }

    /// Closes link `l`: the protocol drops its connection, and the link is closed.
    fn close_link(&mut self, host: &mut impl Host, l: usize) {
        self.drop_link(host, l);
        let life = &mut self.links_mut().life[l];
        life.state = LinkState::Closed;
        life.generation = life.generation.wrapping_add(1);
        if std::mem::take(&mut life.opening) {
            host.opening_ended();
        }
    }

    /// Link `l` proved the server took it: its place in the opening window goes on.
    fn link_opened(&mut self, host: &mut impl Host, l: usize) {
        if std::mem::take(&mut self.links_mut().life[l].opening) {
            host.opened();
        }
    }

    /// Link `l`'s connect failed: counted, closed, and tried again after a backoff.
    fn link_connect_failed(&mut self, host: &mut impl Host, l: usize, cause: ConnectCause, why: String) {
        host.connect_failed(l, cause, why);
        self.close_link(host, l);
        let now = host.now();
        let links = self.links_mut();
        let life = &mut links.life[l];
        life.failures = life.failures.saturating_add(1);
        let backoff = super::retry_backoff_us(life.failures);
        let generation = life.generation;
        links.retries.push(Reverse((now + backoff, l as u32, generation)));
    }

    /// Reconnects the links whose backoff ended and fails the connects whose time ran out.
    fn expire_links(&mut self, host: &mut impl Host, now: u64) {
        while let Some(&Reverse((at, l, generation))) = self.links().retries.peek() {
            if at > now {
                break;
            }
            let links = self.links_mut();
            links.retries.pop();
            let life = links.life[l as usize];
            if life.generation == generation && life.state == LinkState::Closed && !host.draining() {
                self.connect_link(host, l as usize);
            }
        }
        loop {
            let links = self.links_mut();
            let life = &links.life;
            let Some(d) = links.deadlines.pop_expired(now, |d| connecting(life, d)) else { return };
            self.connect_timed_out(host, d.conn as usize);
        }
    }
}

/// Whether a connect deadline still applies to its link.
fn connecting(life: &[Life], d: &Deadline) -> bool {
    life.get(d.conn as usize).is_some_and(|k| k.generation == d.generation && k.state == LinkState::Connecting)
}

/// Every multiplexed protocol as a worker's transport: each call routes a slot to its link.
impl<P: Multiplexed> Transport for P {
    fn slots(&self) -> usize {
        self.links().retry.len()
    }

    fn link(&self, i: usize) -> usize {
        self.links().of(i)
    }

    fn capture(&mut self, on: bool) {
        self.links_mut().capture = on;
    }

    fn open(&mut self, host: &mut impl Host, i: usize) {
        self.mux_open(host, i);
    }

    fn submit(&mut self, host: &mut impl Host, i: usize) {
        self.submit_stream(host, i);
    }

    /// A stream's deadline passed (a link's connect deadline is the link's own): the stream
    /// is reset and the connection kept.
    fn timed_out(&mut self, host: &mut impl Host, i: usize) {
        self.fail(host, i, ErrorKind::Timeout);
    }

    /// The slot goes on; its link stays.
    fn reopen(&mut self, host: &mut impl Host, i: usize) {
        self.free_slot(host, i);
    }

    fn close(&mut self, host: &mut impl Host, i: usize) {
        host.close_slot(i);
    }

    fn event(&mut self, host: &mut impl Host, l: usize, readable: Readable, writable: bool) {
        self.link_event(host, l, readable, writable);
    }

    /// The protocol frames each request from its fields, HEAD included.
    fn head_request(&mut self, _: usize, _: bool) {}

    fn open_connections(&self, _: &impl Host) -> u64 {
        self.links().open() as u64
    }

    fn next_deadline(&mut self) -> Option<u64> {
        let timer = self.next_timer();
        [self.links_mut().next_deadline(), timer].into_iter().flatten().min()
    }

    fn expire(&mut self, host: &mut impl Host, now: u64) {
        self.expire_links(host, now);
        self.expire_timers(host, now);
    }

    fn count_done(&self, host: &impl Host) -> bool {
        self.streams_done(host)
    }

    fn finish(&mut self, host: &mut impl Host) {
        self.finish_links(host);
    }

    fn counts(&mut self) -> Option<Box<dyn crate::stats::section::Section>> {
        Multiplexed::counts(self)
    }

    fn restart_counts(&mut self) {
        Multiplexed::restart_counts(self);
    }

    fn live(&self) -> super::Live {
        Multiplexed::live(self)
    }

    fn flush(&mut self, host: &mut impl Host) {
        self.flush_out(host);
    }
}
