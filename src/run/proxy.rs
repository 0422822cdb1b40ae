//! A proxy test's view of its origin: the origin's request and connection counters (from this
//! process, or from a remote `strain origin`'s `/_strain/stats`), read once per interval, give
//! each interval's hit ratio and the run's.

use std::time::Duration;

use crate::origin::OriginLive;
use crate::stats::interval::IntervalRow;
use crate::stats::Recorder;

/// Where the origin's counters come from.
pub enum OriginView<'a> {
    /// The origin in this process.
    Local(&'a OriginLive),
    /// A `strain origin` elsewhere, asked over HTTP (`host:port`).
    Remote(String),
}

/// The origin's request and connection counts so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub struct OriginCounts {
    /// Requests answered.
    pub requests: u64,
    /// Connections accepted.
    pub connections: u64,
}

impl OriginCounts {
    /// What was counted since `earlier`.
    fn since(self, earlier: OriginCounts) -> OriginCounts {
        OriginCounts {
            requests: self.requests.saturating_sub(earlier.requests),
            connections: self.connections.saturating_sub(earlier.connections),
        }
    }
}

impl OriginView<'_> {
    /// Reads the counters now; `None` when a remote origin does not answer.
    pub fn counts(&self) -> Option<OriginCounts> {
        match self {
            OriginView::Local(live) => {
                let s = live.snapshot();
                Some(OriginCounts { requests: s.requests, connections: s.connections })
            }
            OriginView::Remote(addr) => remote_counts(addr),
        }
    }
}

/// `GET /_strain/stats` from a remote origin (bounded to half a second).
fn remote_counts(addr: &str) -> Option<OriginCounts> {
    use std::io::{Read, Write};
    use std::net::ToSocketAddrs;
    let limit = Duration::from_millis(500);
    let sock = addr.to_socket_addrs().ok()?.next()?;
    let mut s = std::net::TcpStream::connect_timeout(&sock, limit).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    s.write_all(format!("GET /_strain/stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut text = String::new();
    s.take(64 * 1024).read_to_string(&mut text).ok()?;
    let body = text.split_once("\r\n\r\n")?.1;
    // The origin's stats page has more fields; these two are read.
    serde_json::from_str(body).ok()
}

/// Hit ratio measured from request counts: the share of successful client responses the origin
/// never saw. Error responses do not count: a proxy that answers everything with 500 has hit
/// nothing, and without a successful response there is no ratio at all.
pub fn hit_ratio(successes: u64, origin_requests: u64) -> Option<f64> {
    // Counters read a moment apart can put a few more requests at the origin than answers at the
    // client in one interval: a ratio below 0 is that skew, not a measurement.
    (successes > 0).then(|| (1.0 - origin_requests as f64 / successes as f64).clamp(0.0, 1.0))
}

pub use crate::result::ProxyRow;

/// A proxy test's totals.
#[derive(Debug, Clone)]
pub struct ProxyResult {
    /// What the origin saw over the run (`None`: its counters could not be read).
    pub origin: Option<OriginCounts>,
    /// The run's hit ratio.
    pub hit_ratio: Option<f64>,
    /// One row per interval.
    pub rows: Vec<ProxyRow>,
}

/// Reads the origin's counters at the start, at every interval and at the end.
pub struct ProxyTracker<'a> {
    view: OriginView<'a>,
    /// Rows starting before this are warm-up: shown, then dropped from the totals.
    warm_s: f64,
    start: Option<OriginCounts>,
    last: Option<OriginCounts>,
    rows: Vec<ProxyRow>,
}

impl<'a> ProxyTracker<'a> {
    /// Starts tracking; the counters are read now. The first `warmup` of the run is not counted.
    pub fn new(view: OriginView<'a>, warmup: std::time::Duration) -> ProxyTracker<'a> {
        let start = view.counts();
        ProxyTracker { view, warm_s: warmup.as_secs_f64(), start, last: start, rows: Vec::new() }
    }

    /// The proxy columns of an interval that just ended.
    pub fn interval(&mut self, row: &IntervalRow) -> ProxyRow {
        let now = self.view.counts();
        let delta = now.zip(self.last).map(|(n, l)| n.since(l));
        if now.is_some() {
            self.last = now;
        }
        let proxy_row = ProxyRow {
            start_s: row.start_s,
            origin_requests: delta.map(|d| d.requests),
            origin_new_connections: delta.map(|d| d.connections),
            hit_ratio: delta.and_then(|d| hit_ratio(row.requests - row.status_errors, d.requests)),
            first_byte_mean_us: row.ttfb_mean_us,
            first_byte_p99_us: row.ttfb_p99_us,
        };
        if row.start_s < self.warm_s {
            // The totals start where the measured part does.
            self.start = now.or(self.start);
        } else {
            self.rows.push(proxy_row.clone());
        }
        proxy_row
    }

    /// The run's totals, given the client's.
    pub fn finish(self, client: &Recorder) -> ProxyResult {
        let origin = self.view.counts().zip(self.start).map(|(n, s)| n.since(s));
        ProxyResult {
            origin,
            hit_ratio: origin.and_then(|o| hit_ratio(client.requests - client.status_errors, o.requests)),
            rows: self.rows,
        }
    }
}
