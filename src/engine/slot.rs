//! A request slot: where one request of the worker is in its cycle, whatever carries it (an
//! HTTP/1.1 connection of its own, or a stream of an HTTP/2 or HTTP/3 connection). Plain data: the worker
//! drives the transitions; what a protocol keeps per connection is its transport's.

/// Where a slot is in its cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Nothing under way: its connection is closed (or, over HTTP/2, the slot waits for its
    /// connection to be up).
    Closed,
    /// Its connection's TCP connect (and TLS handshake) is in progress.
    Connecting,
    /// Connected with nothing in flight, waiting for a paced request to come due.
    Idle,
    /// Connected, waiting out a script's `delay()` before the next request.
    Delayed,
    /// Part of the request is still to be written.
    Writing,
    /// The request is written; waiting for its response.
    Reading,
}

impl State {
    /// A request is written (or being written) and its response not complete.
    pub fn in_flight(self) -> bool {
        matches!(self, State::Writing | State::Reading)
    }
}

/// One request slot; its index in the worker's table names it to the transport.
#[derive(Debug)]
pub struct Slot {
    /// Cycle position.
    pub state: State,
    /// The current response's first byte has arrived.
    pub first_byte: bool,
    /// Bumped on every request and every reconnect, so old deadlines and retries can tell they
    /// no longer apply.
    pub generation: u32,
    /// Responses still expected for the current write (more than one when pipelining).
    pub pending: u32,
    /// When the current request's first byte was written, in clock microseconds.
    pub sent_us: u64,
    /// When the current request should have been written (equal to `sent_us` in closed loop).
    pub intended_us: u64,
}

impl Slot {
    /// A closed slot.
    pub fn new() -> Slot {
        Slot { state: State::Closed, first_byte: false, generation: 0, pending: 1, sent_us: 0, intended_us: 0 }
    }

    /// The slot moves on: deadlines and retries set before no longer apply.
    pub fn bump(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// A request is written (or being written) and its response not complete.
    pub fn in_flight(&self) -> bool {
        self.state.in_flight()
    }
}
