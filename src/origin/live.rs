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
    /// The units' counters (WebSocket's upgrades, echoes, broadcasts; gRPC's calls by method
    /// and status), in the units' order; after the others, off the lines the HTTP paths touch.
    pub(super) units: [Counter; UNIT_COUNTERS],
}

impl Counters {
    /// This thread's totals; `fixed_ok` says whether fixed responses count as `ok`.
    fn snapshot(&self, fixed_ok: bool, units: &[&'static str]) -> OriginStats {
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
            units: UnitCounts::new(units, |i| self.units[i].get()),
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
    /// The names of the units' counters.
    units: OnceLock<Vec<&'static str>>,
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
            let fixed_ok = self.fixed_ok.load(Ordering::Relaxed);
            let units = self.units.get().map_or(&[][..], |u| &u[..]);
            total.merge(&counters.snapshot(fixed_ok, units));
        }
        total
    }

    /// Makes the blocks for a server with `threads` threads whose fixed responses are (or are
    /// not) `200 OK`, whose units keep the counters `units`; fails if a server already has them.
    pub(super) fn claim(
        &self,
        threads: usize,
        fixed_ok: bool,
        units: Vec<&'static str>,
    ) -> Result<&[Counters], OriginError> {
        if self.claimed.swap(true, Ordering::Relaxed) {
            return Err(OriginError::LiveInUse);
        }
        let _ = self.units.set(units);
        self.fixed_ok.store(fixed_ok, Ordering::Relaxed);
        Ok(self.threads.get_or_init(|| (0..threads).map(|_| Counters::default()).collect()))
    }
}

/// Counters the units of one origin share (a unit uses as many as it names, in turn).
pub(super) const UNIT_COUNTERS: usize = 32;

/// The units' counters of one origin, by the names they gave (written flat, beside the
/// server's own, in the stats answer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitCounts {
    names: [&'static str; UNIT_COUNTERS],
    counts: [u64; UNIT_COUNTERS],
}

impl UnitCounts {
    /// The counters `names` (in the units' order) with these counts.
    pub(super) fn new(names: &[&'static str], counts: impl Fn(usize) -> u64) -> UnitCounts {
        let mut c = UnitCounts::default();
        for (i, name) in names.iter().take(UNIT_COUNTERS).enumerate() {
            c.names[i] = name;
            c.counts[i] = counts(i);
        }
        c
    }

    /// The count called `name`, if a unit keeps it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.names.iter().position(|n| !n.is_empty() && *n == name).map(|i| self.counts[i])
    }

    /// Adds another thread's.
    pub(super) fn merge(&mut self, other: &UnitCounts) {
        for i in 0..UNIT_COUNTERS {
            if self.names[i].is_empty() {
                self.names[i] = other.names[i];
            }
            self.counts[i] += other.counts[i];
        }
    }
}

impl serde::Serialize for UnitCounts {
    /// Flat by name, but a name with dots nested by its parts (`grpc.calls.unary` is
    /// `{"grpc": {"calls": {"unary": N}}}`), in the order the units name them.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        use serde_json::{Map, Value};
        let mut tree = Map::new();
        for (name, n) in self.names.iter().zip(self.counts).filter(|(name, _)| !name.is_empty()) {
            let mut parts = name.split('.').peekable();
            let mut at = &mut tree;
            while let Some(part) = parts.next() {
                if parts.peek().is_none() {
                    at.insert(part.to_string(), Value::from(n));
                    break;
                }
                let next = at.entry(part).or_insert_with(|| Value::Object(Map::new()));
                // A name that is also a group's (not given by any unit) keeps the count.
                let Value::Object(inner) = next else { break };
                at = inner;
            }
        }
        let mut map = s.serialize_map(Some(tree.len()))?;
        for (k, v) in &tree {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
