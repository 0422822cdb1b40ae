//! What HTTP/2 and HTTP/3 share: a worker's connections ("links") each carry `-m` request
//! slots as streams, slot `i` on link `i / m`. How a link connects, sends and reads is its
//! protocol's; when it opens, how failed connects back off, how a link that goes away is
//! replaced, and how a request the server never processed goes again on the next connection
//! are the same for both, and are written here once.

use super::*;

/// Where a link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LinkState {
    Closed,
    /// Its connect (TCP and TLS, or the QUIC handshake) is under way.
    Connecting,
    Open,
}

/// What every link keeps, whatever its protocol.
#[derive(Debug, Clone, Copy)]
pub(super) struct Life {
    pub(super) state: LinkState,
    /// Bumped on every connect and close, so old deadlines and reconnects no longer apply.
    pub(super) generation: u32,
    /// Failed connects in a row, for the backoff.
    pub(super) failures: u32,
    /// Counted in the worker's opening window until its first response.
    pub(super) opening: bool,
    /// It takes no new stream (the server's GOAWAY, or a client keep-alive limit); replaced
    /// once its streams end.
    pub(super) goaway: bool,
    /// Responses completed on this connection (for a proxy test's `--keepalive`).
    pub(super) uses: u64,
}

/// The links' shared bookkeeping.
pub(super) struct Links {
    /// Slots per link (`-m`).
    pub(super) streams: usize,
    /// Per link.
    pub(super) life: Vec<Life>,
    /// Per slot: its request was refused unprocessed and goes again on the next connection.
    pub(super) retry: Vec<bool>,
    /// Connect deadlines, one per link.
    pub(super) deadlines: Deadlines,
    /// Reconnects after a failed connect, with backoff: (at, link, generation).
    pub(super) retries: BinaryHeap<Reverse<(u64, u32, u32)>>,
}

impl Links {
    /// `count` closed links of `streams` slots each.
    pub(super) fn new(count: usize, streams: usize) -> Links {
        let closed =
            Life { state: LinkState::Closed, generation: 0, failures: 0, opening: false, goaway: false, uses: 0 };
        Links {
            streams,
            life: vec![closed; count],
            retry: vec![false; count * streams],
            deadlines: Deadlines::new(count),
            retries: BinaryHeap::new(),
        }
    }

    /// Links with a connection up.
    pub(super) fn open(&self) -> usize {
        self.life.iter().filter(|l| l.state == LinkState::Open).count()
    }

    /// The next connect deadline or reconnect.
    pub(super) fn next_deadline(&mut self) -> Option<u64> {
        let retry = self.retries.peek().map(|r| r.0 .0);
        let life = &self.life;
        let connect = self.deadlines.next(|d| connecting(life, d));
        [retry, connect].into_iter().flatten().min()
    }

    /// Slot `i`'s link.
    pub(super) fn of(&self, i: usize) -> usize {
        i / self.streams
    }

    /// The slots link `l` carries.
    pub(super) fn slots_of(&self, l: usize) -> std::ops::Range<usize> {
        l * self.streams..(l + 1) * self.streams
    }
}

/// A protocol whose links carry slots as streams.
pub(super) trait Multiplexed: Transport {
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
    fn connect_link(w: &mut Worker<'_, Self>, l: usize);
    /// Drops link `l`'s connection and what the protocol keeps of it (after counting it).
    fn drop_link(w: &mut Worker<'_, Self>, l: usize);
    /// Link `l`'s connect deadline passed.
    fn connect_timed_out(w: &mut Worker<'_, Self>, l: usize);
}

impl<T: Multiplexed> Worker<'_, T> {
    /// Slot `i` wants to send: opens its link if it is closed, or starts the slot if it is up.
    pub(super) fn mux_open(&mut self, i: usize) {
        let links = self.transport.links();
        let life = links.life[links.of(i)];
        match life.state {
            // A link going away takes no new stream: the slot waits for its replacement.
            LinkState::Open if life.goaway => {}
            LinkState::Open => {
                if self.slots[i].state == State::Closed {
                    self.slot_ready(i);
                }
            }
            LinkState::Connecting => {}
            LinkState::Closed => T::connect_link(self, links.of(i)),
        }
    }

    /// Link `l`'s connect started: its deadline, its place in the opening window.
    pub(super) fn link_connecting(&mut self, l: usize, now: u64) {
        let timeout = self.plan.timeout_us;
        let links = self.transport.links_mut();
        let life = &mut links.life[l];
        life.generation = life.generation.wrapping_add(1);
        life.state = LinkState::Connecting;
        life.opening = true;
        life.goaway = false;
        let generation = life.generation;
        links.deadlines.push(Deadline { at_us: now + timeout, conn: l as u32, generation });
        self.opening.started();
    }

    /// Link `l` is up: its slots send; when none sends at once (rate mode), a response cannot
    /// prove the server took it, so its place in the opening window goes on now.
    pub(super) fn start_slots(&mut self, l: usize) {
        let life = &mut self.transport.links_mut().life[l];
        life.state = LinkState::Open;
        life.uses = 0;
        for i in self.transport.links().slots_of(l) {
            if self.slots[i].state == State::Closed {
                self.slot_ready(i);
            }
        }
        if !self.transport.busy(l) {
            self.link_opened(l);
        }
    }

    /// Slot `i`'s link is up and the slot is free: a request the server refused unprocessed
    /// goes again (as first planned); otherwise the slot takes its next request.
    pub(super) fn slot_ready(&mut self, i: usize) {
        if std::mem::take(&mut self.transport.links_mut().retry[i]) && !self.draining {
            let s = &mut self.slots[i];
            s.bump();
            s.state = State::Writing;
            self.meter.rec.sent += 1;
            let at_us = self.clock.now_us() + self.plan.timeout_us;
            self.due.deadlines.push(Deadline { at_us, conn: i as u32, generation: s.generation });
            T::submit(self, i);
        } else {
            self.next_request(i);
        }
    }

    /// Slot `i`'s request never reached a server that took it: it is not counted as sent and
    /// goes again, as first planned, once the slot's link is up (see [`Worker::slot_ready`]).
    pub(super) fn requeue(&mut self, i: usize) {
        self.transport.links_mut().retry[i] = true;
        self.transport.forget(i);
        let s = &mut self.slots[i];
        s.state = State::Closed;
        s.bump();
        self.meter.rec.sent = self.meter.rec.sent.saturating_sub(1);
    }

    /// Slot `i` is free: it sends again if its link is up, else waits for it.
    pub(super) fn free_slot(&mut self, i: usize) {
        let links = self.transport.links();
        let up = links.life[links.of(i)].state == LinkState::Open;
        let s = &mut self.slots[i];
        s.bump();
        if up && !self.draining {
            self.next_request(i);
        } else {
            s.state = State::Closed;
        }
    }

    /// A proxy test's keep-alive limit: after `limit` responses the link takes no new stream
    /// and is replaced once its streams end. True: slot `i` may go on.
    pub(super) fn count_link_use(&mut self, i: usize, limit: u64) -> bool {
        let links = self.transport.links_mut();
        let l = links.of(i);
        let life = &mut links.life[l];
        life.uses += 1;
        if limit > 0 && life.uses >= limit {
            life.goaway = true;
        }
        true
    }

    /// Slot `i`'s request as a script or a proxy test built it (HTTP/1 bytes), converted by
    /// `convert` for its link's authority; `None` for the fixed request. `Err` when it cannot be
    /// converted: the slot stops, it is not counted as sent, and the run ends with the error.
    pub(super) fn convert_built<R>(
        &mut self,
        i: usize,
        convert: impl FnOnce(&[u8], &str) -> Result<R, String>,
    ) -> Result<Option<R>, ()> {
        let l = self.transport.links().of(i);
        let Some(bytes) = self.requests.built(i) else { return Ok(None) };
        match convert(bytes, &self.addrs[l % self.addrs.len()].to_string()) {
            Ok(r) => Ok(Some(r)),
            Err(why) => {
                self.meter.rec.sent = self.meter.rec.sent.saturating_sub(1);
                let s = &mut self.slots[i];
                s.state = State::Closed;
                s.bump();
                self.script_failed(ScriptError::Runtime { hook: "request", message: why });
                Err(())
            }
        }
    }

    /// Whether `-n`'s count is done: no stream in flight and no refused request waiting.
    pub(super) fn streams_done(&self) -> bool {
        self.in_flight() == 0 && !self.transport.links().retry.iter().any(|&r| r)
    }

    /// Closes link `l` (its streams are done or lost) and, unless the run is over, opens a new
    /// connection in its place.
    pub(super) fn retire_link(&mut self, l: usize) {
        self.close_link(l);
        let slots = self.transport.links().slots_of(l);
        for i in slots.clone() {
            if self.slots[i].state == State::Idle {
                self.slots[i].state = State::Closed;
            }
        }
        // A closed slot stands for the link in the opening queue; when none is closed, the
        // link reopens when one of its slots next sends.
        let closed = slots.into_iter().find(|&i| self.slots[i].state == State::Closed);
        if let Some(i) = closed.filter(|_| !self.draining) {
            self.opening.queue.push_back(i as u32);
            self.open_queued();
        }
    }

    /// Closes link `l`: the protocol drops its connection, and the link is closed.
    pub(super) fn close_link(&mut self, l: usize) {
        T::drop_link(self, l);
        let life = &mut self.transport.links_mut().life[l];
        life.state = LinkState::Closed;
        life.generation = life.generation.wrapping_add(1);
        if std::mem::take(&mut life.opening) {
            self.opening.ended();
        }
    }

    /// Link `l` proved the server took it: its place in the opening window goes on.
    pub(super) fn link_opened(&mut self, l: usize) {
        if std::mem::take(&mut self.transport.links_mut().life[l].opening) {
            self.opened();
        }
    }

    /// Link `l`'s connect failed: counted, closed, and tried again after a backoff.
    pub(super) fn link_connect_failed(&mut self, l: usize, cause: ConnectCause, why: String) {
        self.count_connect_error(l, cause, why);
        self.close_link(l);
        let now = self.clock.now_us();
        let links = self.transport.links_mut();
        let life = &mut links.life[l];
        life.failures = life.failures.saturating_add(1);
        let backoff = retry_backoff_us(life.failures);
        let generation = life.generation;
        links.retries.push(Reverse((now + backoff, l as u32, generation)));
    }

    /// Reconnects the links whose backoff ended and fails the connects whose time ran out.
    pub(super) fn expire_links(&mut self, now: u64) {
        while let Some(&Reverse((at, l, generation))) = self.transport.links().retries.peek() {
            if at > now {
                break;
            }
            let links = self.transport.links_mut();
            links.retries.pop();
            let life = links.life[l as usize];
            if life.generation == generation && life.state == LinkState::Closed && !self.draining {
                T::connect_link(self, l as usize);
            }
        }
        loop {
            let links = self.transport.links_mut();
            let life = &links.life;
            let Some(d) = links.deadlines.pop_expired(now, |d| connecting(life, d)) else { return };
            T::connect_timed_out(self, d.conn as usize);
        }
    }
}

/// Whether a connect deadline still applies to its link.
fn connecting(life: &[Life], d: &Deadline) -> bool {
    life.get(d.conn as usize).is_some_and(|k| k.generation == d.generation && k.state == LinkState::Connecting)
}
