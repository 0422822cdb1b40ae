//! How a worker opens connections: a queue of slots to open and a window of connections being
//! opened (see [`OPENING_WINDOW`]), retries with backoff, and connect failures by cause.

use super::*;

impl Worker<'_> {
    /// Connection `i` is no longer being opened (answered, idle, or gone): its place in the
    /// window goes to the next queued connection.
    pub(super) fn opened(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.opening {
            c.opening = false;
            self.connecting -= 1;
            self.open_queued();
        }
    }

    /// Opens queued connections while fewer than this thread's share of [`OPENING_WINDOW`] are
    /// being opened.
    pub(super) fn open_queued(&mut self) {
        let start = self.clock.now_us();
        while self.connecting < self.max_connecting && !self.draining {
            if self.clock.now_us().saturating_sub(start) > OPEN_BUDGET_US {
                // The loop comes back at once (see next_wake) after serving what is ready.
                return;
            }
            let Some(i) = self.to_open.pop_front() else { return };
            // A slot is queued only while closed; one that moved on since was opened already.
            if self.conns[i as usize].state == State::Closed {
                self.open(i as usize);
            }
        }
    }

    /// Opens (or reopens) connection `i` (over HTTP/2: slot `i`'s link).
    pub(super) fn open(&mut self, i: usize) {
        if let Wire::H2(_) = self.wire {
            return self.h2_open(i);
        }
        let now = self.clock.now_us();
        let sources = &self.plan.source_addrs;
        let source = (!sources.is_empty()).then(|| sources[(i + self.index) % sources.len()]);
        let result = Stream::connect(self.addr, source, self.plan.tls.as_ref()).and_then(|mut s| {
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
                c.opening = true;
                self.connecting += 1;
                let d = Deadline { at_us: now + self.plan.timeout_us, conn: i as u32, generation: c.generation };
                self.deadlines.push(d);
            }
            Err(e) => self.connect_failed(i, connect_cause(&e), e.to_string()),
        }
    }

    /// An event on a connecting socket: connected (the first request goes out), still
    /// connecting, or failed.
    pub(super) fn connecting_event(&mut self, i: usize, writable: bool) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else { return };
        match stream.poll_connect(writable) {
            Ok(true) => {
                c.failures = 0;
                self.rec.connections += 1;
                self.next_request(i);
                if !matches!(self.conns[i].state, State::Writing | State::Reading) {
                    // Nothing sent at once (rate mode, a delay): a response cannot prove it.
                    self.opened(i);
                }
            }
            Ok(false) => {}
            Err(e) => self.connect_failed(i, connect_cause(&e), e.to_string()),
        }
    }

    /// Counts a failed connect and schedules the slot's retry (arrivals: frees the slot).
    pub(super) fn connect_failed(&mut self, i: usize, cause: ConnectCause, why: String) {
        let addr = self.addr;
        self.rec.connect_error(cause, || format!("connect to {addr} failed: {why}"));
        self.opened(i);
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        c.generation = c.generation.wrapping_add(1);
        c.failures = c.failures.saturating_add(1);
        if let When::Arrivals(a) = &mut self.when {
            a.free.push(i as u32);
            return;
        }
        let backoff = retry_backoff_us(c.failures);
        self.timers.push(Reverse((self.clock.now_us() + backoff, i as u32, c.generation)));
    }

    /// Reconnects and delayed sends whose time has come.
    pub(super) fn retry_due(&mut self, now: u64) {
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
                State::Closed => self.to_open.push_back(i),
                State::Delayed => self.send(i as usize, at),
                _ => {}
            }
        }
    }

    /// Closes connection `i` and, unless the test is over, opens a new one in its slot (over
    /// HTTP/2 the slot just goes on).
    pub(super) fn reopen(&mut self, i: usize) {
        if let Wire::H2(_) = self.wire {
            return self.h2_free(i);
        }
        self.close(i);
        if let When::Arrivals(a) = &mut self.when {
            // Arriving connections are not replaced: the slot waits for the next arrival.
            a.free.push(i as u32);
        } else if !self.draining {
            self.to_open.push_back(i as u32);
            self.open_queued();
        }
    }

    /// Closes connection `i`, leaving its slot empty.
    pub(super) fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        // Dropping the stream closes its fd, which takes it out of epoll (it is never dup'ed):
        // no `epoll_ctl` per close, which counts when every response closes its connection.
        c.stream = None;
        c.state = State::Closed;
        if c.opening {
            // Not `opened`: a closing slot must not start another connect from inside `close`.
            c.opening = false;
            self.connecting -= 1;
        }
        c.generation = c.generation.wrapping_add(1);
    }
}

/// The wait before the next connect after `failures` failures in a row (at least 1): doubling
/// from [`RETRY_MIN_US`] up to [`RETRY_MAX_US`].
pub(super) fn retry_backoff_us(failures: u32) -> u64 {
    (RETRY_MIN_US << failures.saturating_sub(1).min(16)).min(RETRY_MAX_US)
}

/// The cause of a failed connect, for the report.
pub(super) fn connect_cause(e: &ConnectError) -> ConnectCause {
    match e {
        ConnectError::Io(io) => ConnectCause::of_io(io),
        ConnectError::Tls(_) | ConnectError::ClosedInHandshake => ConnectCause::Tls,
    }
}
