//! How a worker opens connections, whatever the protocol: a queue of slots whose connection is
//! to be opened and a window of connections being opened (see [`OPENING_WINDOW`]), retries with
//! backoff, and connect failures by cause.

use super::*;

/// Slots waiting for their connection to be opened, and the window of connections being opened.
pub(super) struct Opening {
    /// Slots to open, in order.
    pub(super) queue: std::collections::VecDeque<u32>,
    /// Connections being opened now.
    connecting: usize,
    /// How many may be: this thread's share of [`OPENING_WINDOW`].
    max: usize,
}

impl Opening {
    /// A window for `slots` slots on one of `threads` threads.
    pub(super) fn new(slots: usize, threads: usize) -> Opening {
        Opening {
            queue: std::collections::VecDeque::with_capacity(slots),
            connecting: 0,
            max: (OPENING_WINDOW / threads.max(1)).max(MIN_OPENING_PER_THREAD),
        }
    }

    /// A connection starts opening.
    pub(super) fn started(&mut self) {
        self.connecting += 1;
    }

    /// A connection is no longer being opened (answered, idle, or gone).
    pub(super) fn ended(&mut self) {
        self.connecting -= 1;
    }

    /// A queued slot could be opened now.
    pub(super) fn can_open(&self) -> bool {
        !self.queue.is_empty() && self.connecting < self.max
    }
}

impl<T: Transport> Worker<'_, T> {
    /// A connection that was being opened no longer is: its place in the window goes to the
    /// next queued slot.
    pub(super) fn opened(&mut self) {
        self.opening.ended();
        self.open_queued();
    }

    /// Opens queued slots' connections while fewer than this thread's share of
    /// [`OPENING_WINDOW`] are being opened.
    pub(super) fn open_queued(&mut self) {
        let start = self.clock.now_us();
        while self.opening.connecting < self.opening.max && !self.draining {
            if self.clock.now_us().saturating_sub(start) > OPEN_BUDGET_US {
                // The loop comes back at once (see next_wake) after serving what is ready.
                return;
            }
            let Some(i) = self.opening.queue.pop_front() else { return };
            // A slot is queued only while closed; one that moved on since was opened already.
            if self.slots[i as usize].state == State::Closed {
                T::open(self, i as usize);
            }
        }
    }

    /// Reconnects and delayed sends whose time has come.
    pub(super) fn retry_due(&mut self, now: u64) {
        if self.draining {
            return;
        }
        while let Some(&Reverse((at, i, generation))) = self.due.timers.peek() {
            if at > now {
                return;
            }
            self.due.timers.pop();
            let s = &self.slots[i as usize];
            if s.generation != generation {
                continue;
            }
            match s.state {
                State::Closed => self.opening.queue.push_back(i),
                State::Delayed => self.send(i as usize, at),
                _ => {}
            }
        }
    }

    /// The address a new connection of this thread starts from (`--source-addr`), by its
    /// number `n`.
    pub(super) fn source(&self, n: usize) -> Option<std::net::IpAddr> {
        let sources = &self.plan.source_addrs;
        (!sources.is_empty()).then(|| sources[(n + self.index) % sources.len()])
    }

    /// Starts a connection for source number `n`, registered with the poller as `token`; the
    /// connection numbered `token` goes to origin `token mod origins`.
    pub(super) fn connect(&mut self, n: usize, token: usize) -> Result<Stream, ConnectError> {
        let o = token % self.addrs.len();
        let mut s = match &self.plan.unix_socket {
            Some(path) => Stream::connect_unix(path)?,
            None => Stream::connect(self.addrs[o], self.source(n), self.plan.origins[o].tls.as_ref())?,
        };
        self.poll.registry().register(s.socket(), Token(token), Interest::READABLE | Interest::WRITABLE)?;
        Ok(s)
    }

    /// Counts a failed connect of the connection numbered `token`.
    pub(super) fn count_connect_error(&mut self, token: usize, cause: ConnectCause, why: String) {
        let to = match &self.plan.unix_socket {
            Some(path) => path.display().to_string(),
            None => self.addrs[token % self.addrs.len()].to_string(),
        };
        self.meter.rec.connect_error(cause, || format!("connect to {to} failed: {why}"));
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
