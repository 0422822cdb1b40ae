//! Counters that can be read while the server runs.
//!
//! Each event-loop thread owns one [`Counters`] block and is its only writer, so an update is a
//! relaxed load and store (plain moves on x86), not a locked read-modify-write; the blocks are
//! padded to their own cache lines so a reader or a neighbour never bounces the writer's line.
//! A reader sums the blocks: the total is exact once the threads have stopped and at most a few
//! updates stale while they run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

pub(super) use super::counter::Counter;
use super::grpc::stats::GrpcCounters;
use super::{OriginError, OriginStats};

/// One thread's counters, on cache lines of their own (128 bytes: adjacent-line prefetch pairs
/// 64-byte lines on x86).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(super) struct Counters {
    pub(super) connections: Counter,
    pub(super) requests: Counter,
    /// `200` answers to documents and recorded `200`s; without a recording, fixed responses
    /// are `requests` minus these and `not_modified`.
    pub(super) doc_ok: Counter,
    pub(super) not_modified: Counter,
    pub(super) aborted: Counter,
    pub(super) bytes_read: Counter,
    pub(super) bytes_written: Counter,
    pub(super) bad_requests: Counter,
    pub(super) header_timeouts: Counter,
    pub(super) send_timeouts: Counter,
    /// Answers from the recording (`--replay`).
    pub(super) recorded: Counter,
    /// `404`s to requests no record matched (`--replay`).
    pub(super) unmatched: Counter,
    /// WebSocket upgrades accepted (`--ws`).
    pub(super) ws_upgrades: Counter,
    /// WebSocket messages echoed (`--ws`).
    pub(super) ws_messages: Counter,
    /// WebSocket broadcasts sent, one per connection each time (`--ws-broadcast`).
    pub(super) ws_broadcasts: Counter,
    /// The gRPC service's (`--grpc`); after the others, off the lines the HTTP paths touch.
    pub(super) grpc: GrpcCounters,
}

impl Counters {
    /// This thread's totals; `fixed_ok` says whether fixed responses count as `ok`, `grpc`
    /// whether the gRPC service is served.
    fn snapshot(&self, fixed_ok: bool, grpc: bool) -> OriginStats {
        // A document's status is counted before the request, so while the thread runs the
        // difference can only be too small, never wrap.
        let requests = self.requests.get();
        let doc_ok = self.doc_ok.get();
        let not_modified = self.not_modified.get();
        // With a recording there is no fixed response (and `fixed_ok` is false).
        let fixed = requests.saturating_sub(doc_ok + not_modified);
        OriginStats {
            connections: self.connections.get(),
            requests,
            ok: doc_ok + if fixed_ok { fixed } else { 0 },
            not_modified,
            aborted: self.aborted.get(),
            bytes_read: self.bytes_read.get(),
            bytes_written: self.bytes_written.get(),
            bad_requests: self.bad_requests.get(),
            header_timeouts: self.header_timeouts.get(),
            send_timeouts: self.send_timeouts.get(),
            recorded: self.recorded.get(),
            unmatched: self.unmatched.get(),
            ws_upgrades: self.ws_upgrades.get(),
            ws_messages: self.ws_messages.get(),
            ws_broadcasts: self.ws_broadcasts.get(),
            grpc: grpc.then(|| self.grpc.snapshot()),
        }
    }
}

/// The counters of one running origin server, readable from any thread while it serves (for a
/// load generator in the same process). Pass it to [`super::run_live`]; one server per value.
#[derive(Debug, Default)]
pub struct OriginLive {
    /// One block per server thread, made when the server starts.
    threads: OnceLock<Box<[Counters]>>,
    claimed: AtomicBool,
    /// Fixed responses are `200 OK`: counting them is left to [`OriginLive::snapshot`], which
    /// spares the fast path a counter.
    fixed_ok: AtomicBool,
    /// The server serves gRPC, so the totals have its counts.
    grpc: AtomicBool,
}

impl OriginLive {
    /// Counters for a server that has not started yet (all zero until it does).
    pub fn new() -> Self {
        OriginLive::default()
    }

    /// The totals so far, summed over the server's threads.
    pub fn snapshot(&self) -> OriginStats {
        let mut total = OriginStats::default();
        for counters in self.threads.get().map(|t| &t[..]).unwrap_or_default() {
            let (fixed_ok, grpc) = (self.fixed_ok.load(Ordering::Relaxed), self.grpc.load(Ordering::Relaxed));
            total.merge(&counters.snapshot(fixed_ok, grpc));
        }
        total
    }

    /// Makes the blocks for a server with `threads` threads whose fixed responses are (or are
    /// not) `200 OK`, and which serves gRPC or not; fails if a server already has them.
    pub(super) fn claim(&self, threads: usize, fixed_ok: bool, grpc: bool) -> Result<&[Counters], OriginError> {
        if self.claimed.swap(true, Ordering::Relaxed) {
            return Err(OriginError::LiveInUse);
        }
        self.fixed_ok.store(fixed_ok, Ordering::Relaxed);
        self.grpc.store(grpc, Ordering::Relaxed);
        Ok(self.threads.get_or_init(|| (0..threads).map(|_| Counters::default()).collect()))
    }
}
