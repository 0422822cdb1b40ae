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

impl ProxyRow {
    /// The proxy columns of consecutive rows joined, `client` being the same rows' client side
    /// (joined by [`IntervalRow::combine`]): the origin's counts summed (unknown if any row's
    /// is), the hit ratio of the summed counts (when any row's origin count is unknown, the mean
    /// of the known ratios), the first byte's mean weighted by responses and its p99 the rows'
    /// largest (an upper bound, as `combine` takes it).
    pub fn combine(rows: &[ProxyRow], client: &[IntervalRow]) -> ProxyRow {
        let total = |f: fn(&ProxyRow) -> Option<u64>| rows.iter().try_fold(0u64, |a, r| Some(a.saturating_add(f(r)?)));
        let origin_requests = total(|r| r.origin_requests);
        let successes = client.iter().fold(0u64, |a, r| a.saturating_add(r.requests.saturating_sub(r.status_errors)));
        let known: Vec<f64> = rows.iter().filter_map(|r| r.hit_ratio).collect();
        let hit_ratio = match origin_requests {
            Some(origin) => hit_ratio(successes, origin),
            None => (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64),
        };
        let responses = client.iter().map(|r| r.requests as f64).sum::<f64>();
        let weighted: f64 = rows.iter().zip(client).map(|(p, c)| p.first_byte_mean_us * c.requests as f64).sum();
        ProxyRow {
            start_s: rows.first().map_or(0.0, |r| r.start_s),
            origin_requests: origin_requests.filter(|_| !rows.is_empty()),
            origin_new_connections: total(|r| r.origin_new_connections).filter(|_| !rows.is_empty()),
            hit_ratio,
            first_byte_mean_us: if responses > 0.0 { weighted / responses } else { 0.0 },
            first_byte_p99_us: rows.iter().map(|r| r.first_byte_p99_us).max().unwrap_or(0),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A client row of `requests` responses, `status_errors` of them errors.
    fn client(requests: u64, status_errors: u64) -> IntervalRow {
        IntervalRow { requests, status_errors, ..IntervalRow::merge(&mut [], None).0 }
    }

    /// A proxy row with these origin requests, hit ratio and first-byte mean and p99.
    fn proxy(start_s: f64, origin: Option<u64>, hit: Option<f64>, ttfb: (f64, u64)) -> ProxyRow {
        ProxyRow {
            start_s,
            origin_requests: origin,
            origin_new_connections: origin.map(|_| 1),
            hit_ratio: hit,
            first_byte_mean_us: ttfb.0,
            first_byte_p99_us: ttfb.1,
        }
    }

    #[test]
    fn joined_proxy_rows_take_the_hit_ratio_of_their_summed_counts() {
        let clients = [client(100, 0), client(300, 100)];
        // 100 and 200 successes; the origin saw 50 and 10: 1 - 60 / 300.
        let rows = [proxy(0.0, Some(50), Some(0.5), (100.0, 900)), proxy(0.5, Some(10), Some(0.95), (200.0, 400))];
        let p = ProxyRow::combine(&rows, &clients);
        assert_eq!((p.start_s, p.origin_requests, p.origin_new_connections), (0.0, Some(60), Some(2)));
        assert_eq!(p.hit_ratio, Some(0.8));
        // Weighted by responses: (100 x 100 + 200 x 300) / 400.
        assert_eq!((p.first_byte_mean_us, p.first_byte_p99_us), (175.0, 900));
        // An unread origin count leaves the counts unknown and the ratio the mean of those known.
        let rows = [proxy(0.0, None, None, (0.0, 0)), proxy(0.5, Some(10), Some(0.95), (0.0, 0))];
        let p = ProxyRow::combine(&rows, &clients);
        assert_eq!((p.origin_requests, p.hit_ratio), (None, Some(0.95)));
        let p = ProxyRow::combine(&[], &[]);
        assert_eq!((p.origin_requests, p.hit_ratio), (None, None));
    }
}
