//! How a worker opens connections, whatever the protocol: a queue of slots whose connection is
//! to be opened and a window of connections being opened (see [`OPENING_WINDOW`]), and the
//! reconnects and delayed sends whose time has come.

use std::cmp::Reverse;
use std::collections::VecDeque;

use super::Core;
use crate::engine::slot::State;

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

/// Slots waiting for their connection to be opened, and the window of connections being opened.
pub(super) struct Opening {
    /// Slots to open, in order.
    pub(super) queue: VecDeque<u32>,
    /// Connections being opened now.
    connecting: usize,
    /// How many may be: this thread's share of [`OPENING_WINDOW`].
    max: usize,
    /// When the current round of opening started (its time is [`OPEN_BUDGET_US`]).
    round_us: u64,
}

impl Opening {
    /// A window for `slots` slots on one of `threads` threads.
    pub(super) fn new(slots: usize, threads: usize) -> Opening {
        Opening {
            queue: VecDeque::with_capacity(slots),
            connecting: 0,
            max: (OPENING_WINDOW / threads.max(1)).max(MIN_OPENING_PER_THREAD),
            round_us: 0,
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

    /// The next queued slot to open now, if the window has room and this round's time lasts
    /// (`start` begins a round at `now`); slots that are no longer closed were opened already
    /// and are passed over.
    pub(super) fn next(
        &mut self,
        start: bool,
        now: u64,
        draining: bool,
        closed: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        if start {
            self.round_us = now;
        }
        while self.connecting < self.max && !draining {
            if now.saturating_sub(self.round_us) > OPEN_BUDGET_US {
                // The loop comes back at once (see next_wake) after serving what is ready.
                return None;
            }
            let i = self.queue.pop_front()? as usize;
            if closed(i) {
                return Some(i);
            }
        }
        None
    }
}

impl Core<'_> {
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
}
