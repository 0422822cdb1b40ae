//! The socket side of an origin connection, whatever protocol it speaks: the stream, its
//! readiness, the byte rate and the timers, which every protocol's driver reads and writes
//! through, and what a driver tells the event loop.

use std::io::{self, Read};
use std::time::{Duration, Instant};

use super::live::Counters;
use super::tls::ServerStream;
use crate::net::throttle::Throttle;

/// Why `Conn::expired` says a connection is to be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expiry {
    /// Lingering after our close took too long.
    Linger,
    /// A request head did not arrive whole within the header timeout.
    Header,
    /// The client read none of our output within the send timeout.
    Send,
}

/// What the event loop should do with the connection after `Conn::drive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Keep it and wait for the next event (or its timer, see `Conn::wake`).
    Wait,
    /// Drop it.
    Close,
}

/// The socket side of a connection, whatever protocol it speaks: what every driver reads,
/// writes and arms timers through.
pub(super) struct Link {
    pub(super) stream: ServerStream,
    /// The socket may have unread bytes. Edge-triggered readiness is reported once, so this
    /// remembers it across the times reading is paused for output.
    pub(super) readable: bool,
    pub(super) throttle: Option<Throttle>,
    /// When the output, now waiting for the clock, can move again.
    pub(super) wake: Option<Instant>,
    /// Since when the socket has taken none of the queued output (the client is not reading).
    pub(super) write_stalled: Option<Instant>,
}

impl Link {
    /// The send timeout has passed with none of our output taken.
    pub(super) fn send_expired(&self, now: Instant, timeout: Option<Duration>) -> bool {
        over(self.write_stalled, timeout, now)
    }
}

/// `since` is at least `limit` ago.
pub(super) fn over(since: Option<Instant>, limit: Option<Duration>, now: Instant) -> bool {
    since.zip(limit).is_some_and(|(since, limit)| now.saturating_duration_since(since) >= limit)
}

/// What one read of a client's socket gave.
pub(super) enum Got {
    /// Bytes, at the start of the buffer.
    Data(usize),
    /// Nothing now (the socket is drained, or the read was interrupted).
    Nothing,
    /// The client has finished sending.
    Eof,
    /// The socket failed.
    Failed,
}

impl Link {
    /// One read into `buf`, counted; `readable` is cleared once the socket is drained for now. A
    /// short read means the socket buffer was emptied: it is taken as drained, saving the read
    /// that would return WouldBlock (tokio does the same); bytes arriving later raise a new edge.
    pub(super) fn read_some(&mut self, buf: &mut [u8], counters: &Counters) -> Got {
        match self.stream.read(buf) {
            Ok(0) => {
                self.readable = false;
                Got::Eof
            }
            Ok(n) => {
                counters.bytes_read.add(n as u64);
                if n < buf.len() && self.stream.short_read_drains() {
                    self.readable = false;
                }
                Got::Data(n)
            }
            Err(e) => match e.kind() {
                io::ErrorKind::WouldBlock => {
                    self.readable = false;
                    Got::Nothing
                }
                io::ErrorKind::Interrupted => Got::Nothing,
                _ => Got::Failed,
            },
        }
    }
}
