//! What a test has done so far, added up from its interval rows (and, at the end, the figures
//! only the whole result has), as the samples of Prometheus metric families. Counters only
//! grow: a capacity search's steps add into the same tally.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::Tags;
use crate::run::RunResult;
use crate::stats::interval::{IntervalRow, Latencies};
use crate::stats::ErrorKind;

/// Upper bounds of the latency histogram's buckets, seconds: 1, 2.5 and 5 of each decade from
/// 100 µs to 60 s (the usual Prometheus layout, so dashboards' `histogram_quantile` reads it).
pub const BUCKETS_S: [f64; 19] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0,
    60.0,
];

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only grows.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Cumulative buckets, sum and count.
    Histogram,
}

/// One sample: a series name (with `_total`, `_bucket`… as exposed), its labels, its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The series' name.
    pub name: String,
    /// Its labels, sorted by name, the run's tags among them.
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: f64,
}

/// A metric family: its name (without suffixes), help, type and samples.
#[derive(Debug, Clone)]
pub struct Family {
    /// The name, without `_total` for counters.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Its samples.
    pub samples: Vec<Sample>,
}

/// Makes a sample's labels: the tags and the given pairs, sorted.
type Labeller<'a> = dyn Fn(&[(&str, &str)]) -> Vec<(String, String)> + 'a;

/// A latency histogram in Prometheus's buckets.
#[derive(Debug, Clone, Default)]
struct Buckets {
    /// Responses per bucket (not cumulative), the last one above every bound.
    counts: [u64; BUCKETS_S.len() + 1],
    /// Sum of the latencies, microseconds.
    sum_us: u128,
    /// Responses.
    count: u64,
}

impl Buckets {
    /// Adds an interval's histogram (microseconds).
    fn add(&mut self, h: &Histogram<u64>) {
        for v in h.iter_recorded() {
            let us = h.highest_equivalent(v.value_iterated_to());
            let n = v.count_at_value();
            let slot = BUCKETS_S.iter().position(|le| us as f64 <= le * 1e6).unwrap_or(BUCKETS_S.len());
            self.counts[slot] += n;
            self.sum_us += u128::from(h.median_equivalent(v.value_iterated_to())) * u128::from(n);
            self.count += n;
        }
    }
}

/// What a test has done so far.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Responses by status code.
    requests: BTreeMap<String, u64>,
    /// Errors by kind (every kind present, so `rate()` has a series from the start).
    errors: BTreeMap<String, u64>,
    /// Latency (corrected in rate mode).
    latency: Buckets,
    /// Rate mode: latency from the actual send.
    uncorrected: Option<Buckets>,
    /// Rate mode: the target now.
    target_per_s: Option<f64>,
    /// Sends more than 1 ms late.
    late: u64,
    /// Requests sent.
    sent: u64,
    /// Sends due but never made (known at the end).
    unsent: u64,
    /// Connections open at the last row's end.
    open: u64,
    /// Connections opened.
    opened: u64,
    /// Bytes read.
    bytes: u64,
    /// Proxy tests: responses the proxy served from its cache, requests the origin answered,
    /// and the last interval's hit ratio.
    hits: u64,
    origin_requests: u64,
    hit_ratio: Option<f64>,
    /// Proxy tests: the last interval's time to first byte, p99, microseconds.
    first_byte_p99_us: Option<u64>,
    /// HTTP/2: GOAWAYs and requests sent again (per row), streams reset by code (at the end).
    goaways: u64,
    resets: BTreeMap<String, u64>,
    retried: u64,
    /// gRPC: calls by status.
    grpc: BTreeMap<String, u64>,
    /// find-max: the step's target, and steps by verdict.
    step_target: Option<f64>,
    steps: BTreeMap<String, u64>,
    /// Rows before this many seconds from the start are warm-up: shown live, not counted.
    warmup_s: f64,
}

impl Tally {
    /// An empty tally; rows starting before `warmup_s` are not counted (as the result does not).
    pub fn new(warmup_s: f64) -> Tally {
        let kinds = ErrorKind::ALL.iter().map(|k| k.name()).chain(["status"]);
        Tally {
            requests: BTreeMap::new(),
            errors: kinds.map(|k| (k.to_string(), 0)).collect(),
            latency: Buckets::default(),
            uncorrected: None,
            target_per_s: None,
            late: 0,
            sent: 0,
            unsent: 0,
            open: 0,
            opened: 0,
            bytes: 0,
            hits: 0,
            origin_requests: 0,
            hit_ratio: None,
            first_byte_p99_us: None,
            goaways: 0,
            resets: BTreeMap::new(),
            retried: 0,
            grpc: BTreeMap::new(),
            step_target: None,
            steps: BTreeMap::new(),
            warmup_s,
        }
    }

    /// Sets where the warm-up ends for the next run (a capacity search's step).
    pub fn set_warmup(&mut self, warmup_s: f64) {
        self.warmup_s = warmup_s;
    }

    /// Adds one interval row, its latency histogram and, in proxy tests, what the origin saw.
    pub fn add_row(&mut self, row: &IntervalRow, latency: Latencies<'_>, proxy: Option<&crate::result::ProxyRow>) {
        self.open = row.open_connections;
        self.target_per_s = row.target_per_s;
        // Warm-up rows start before its end by a little (a tick); the first measured one at it.
        if row.start_s + 1e-3 < self.warmup_s {
            return;
        }
        for (code, n) in &row.status {
            *self.requests.entry(code.clone()).or_default() += n;
        }
        for (kind, n) in &row.errors_by_kind {
            *self.errors.entry(kind.clone()).or_default() += n;
        }
        for (code, n) in &row.outcomes {
            *self.grpc.entry(code.clone()).or_default() += n;
        }
        self.latency.add(latency.corrected);
        if let Some(u) = latency.uncorrected {
            self.uncorrected.get_or_insert_with(Buckets::default).add(u);
        }
        self.late += row.late;
        self.sent += row.sent;
        self.goaways += row.goaways;
        self.retried += row.retried;
        self.opened += row.new_connections;
        self.bytes += (row.bytes_per_s * row.length_s).round() as u64;
        if let Some(p) = proxy {
            if let Some(origin) = p.origin_requests {
                self.origin_requests += origin;
                self.hits += row.requests.saturating_sub(origin);
            }
            self.hit_ratio = p.hit_ratio.or(self.hit_ratio);
            self.first_byte_p99_us = Some(p.first_byte_p99_us);
        }
    }

    /// Takes what only the whole result knows: unsent sends, HTTP/2's resets by code.
    pub fn finish(&mut self, result: &RunResult) {
        let t = &result.summary.total;
        self.unsent += t.pacing.unsent;
        for (code, n) in t
            .sections
            .get::<crate::stats::H2Counts>()
            .map(|h| crate::stats::h2_named_resets(&h.resets))
            .unwrap_or_default()
        {
            *self.resets.entry(code.to_string()).or_default() += n;
        }
        self.open = 0;
        self.target_per_s = None;
    }

    /// A capacity search's step starts at `target` requests/s.
    pub fn step_started(&mut self, target: f64) {
        self.step_target = Some(target);
    }

    /// A step ended with `verdict`.
    pub fn step_ended(&mut self, verdict: &str) {
        *self.steps.entry(verdict.to_string()).or_default() += 1;
    }

    /// Every family with its samples, each labelled with `tags`.
    pub fn families(&self, tags: &Tags) -> Vec<Family> {
        let m = Maker { tags };
        let with = |extra: &[(&str, &str)]| m.labels(extra);
        let mut out = vec![
            Family {
                name: "strain_requests",
                help: "Responses completed, by status code.",
                kind: Kind::Counter,
                samples: m.by("strain_requests_total", "status", &self.requests),
            },
            Family {
                name: "strain_errors",
                help: "Failed requests by kind (status: responses above 399).",
                kind: Kind::Counter,
                samples: m.by("strain_errors_total", "kind", &self.errors),
            },
            histogram(
                "strain_request_duration_seconds",
                "Response latency (corrected for coordinated omission in rate mode: from when each request was due).",
                &self.latency,
                &with,
            ),
            m.counter("strain_late", "Sends more than 1 ms after their intended time (rate mode).", self.late),
            m.counter("strain_unsent", "Sends due but never made: the run was stopped (rate mode).", self.unsent),
            m.counter("strain_connections_opened", "Connections established.", self.opened),
            m.counter("strain_bytes_received", "Bytes read.", self.bytes),
            m.gauge("strain_connections_open", "Connections open.", self.open as f64),
        ];
        out.push(m.counter("strain_sent", "Requests sent: each ends as a response or an error.", self.sent));
        // A sent request is in flight until it ends as a response or as one of these errors
        // (connect errors never sent one; status errors are responses).
        let ended: u64 = self.requests.values().sum::<u64>()
            + ["read", "write", "parse", "timeout", "reset"].iter().filter_map(|k| self.errors.get(*k)).sum::<u64>();
        let in_flight = self.sent.saturating_sub(ended) as f64;
        out.push(m.gauge("strain_in_flight", "Requests sent and not yet answered or failed.", in_flight));
        if let Some(u) = &self.uncorrected {
            out.push(histogram(
                "strain_request_duration_uncorrected_seconds",
                "Rate mode: response latency from when each request was actually sent.",
                u,
                &with,
            ));
        }
        if let Some(t) = self.target_per_s {
            out.push(m.gauge("strain_target_requests_per_second", "The rate asked for now (rate mode).", t));
        }
        self.mode_families(&m, &mut out);
        out
    }

    /// The families of proxy tests, HTTP/2 and capacity searches, when they apply.
    fn mode_families(&self, m: &Maker<'_>, out: &mut Vec<Family>) {
        if let Some(h) = self.hit_ratio {
            out.push(m.gauge(
                "strain_proxy_hit_ratio",
                "Share of responses served without the origin, last interval.",
                h,
            ));
            out.push(m.counter(
                "strain_proxy_origin_requests",
                "Requests the origin answered (proxy tests).",
                self.origin_requests,
            ));
        }
        if let Some(fb) = self.first_byte_p99_us {
            out.push(m.gauge(
                "strain_proxy_first_byte_p99_seconds",
                "Time to first byte, p99 of the last interval.",
                fb as f64 / 1e6,
            ));
        }
        if self.goaways > 0 || !self.resets.is_empty() || self.retried > 0 {
            out.push(m.counter("strain_http2_goaways", "HTTP/2 GOAWAY frames received.", self.goaways));
            out.push(m.counter(
                "strain_http2_retried",
                "HTTP/2 requests refused after a GOAWAY and sent again.",
                self.retried,
            ));
            out.push(Family {
                name: "strain_http2_resets",
                help: "HTTP/2 streams the server reset, by error code.",
                kind: Kind::Counter,
                samples: m.by("strain_http2_resets_total", "code", &self.resets),
            });
        }
        if !self.grpc.is_empty() {
            out.push(Family {
                name: "strain_grpc_calls",
                help: "gRPC calls completed, by the status they ended with.",
                kind: Kind::Counter,
                samples: m.by("strain_grpc_calls_total", "code", &self.grpc),
            });
        }
        if let Some(t) = self.step_target {
            out.push(m.gauge(
                "strain_find_max_step_target_requests_per_second",
                "The capacity search's current step.",
                t,
            ));
            out.push(Family {
                name: "strain_find_max_steps",
                help: "Capacity search steps ended, by verdict.",
                kind: Kind::Counter,
                samples: m.by("strain_find_max_steps_total", "verdict", &self.steps),
            });
        }
    }
}

/// Makes samples labelled with a run's tags.
struct Maker<'a> {
    tags: &'a Tags,
}

impl Maker<'_> {
    /// The tags and `extra`, sorted.
    fn labels(&self, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut l: Vec<(String, String)> = self.tags.0.clone();
        l.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        l.sort();
        l
    }

    /// One unlabelled sample.
    fn one(&self, name: &str, value: f64) -> Sample {
        Sample { name: name.to_string(), labels: self.labels(&[]), value }
    }

    /// A sample per key of `map`, labelled `label`.
    fn by(&self, name: &str, label: &str, map: &BTreeMap<String, u64>) -> Vec<Sample> {
        map.iter()
            .map(|(k, v)| Sample { name: name.to_string(), labels: self.labels(&[(label, k)]), value: *v as f64 })
            .collect()
    }

    /// A counter family of one sample.
    fn counter(&self, name: &'static str, help: &'static str, value: u64) -> Family {
        Family { name, help, kind: Kind::Counter, samples: vec![self.one(&format!("{name}_total"), value as f64)] }
    }

    /// A gauge family of one sample.
    fn gauge(&self, name: &'static str, help: &'static str, value: f64) -> Family {
        Family { name, help, kind: Kind::Gauge, samples: vec![self.one(name, value)] }
    }
}

/// A latency histogram family.
fn histogram(name: &'static str, help: &'static str, b: &Buckets, with: &Labeller) -> Family {
    let mut samples = Vec::with_capacity(BUCKETS_S.len() + 3);
    let mut cumulative = 0;
    for (i, le) in BUCKETS_S.iter().map(|b| format_le(*b)).chain(["+Inf".to_string()]).enumerate() {
        cumulative += b.counts[i];
        samples.push(Sample { name: format!("{name}_bucket"), labels: with(&[("le", &le)]), value: cumulative as f64 });
    }
    samples.push(Sample { name: format!("{name}_sum"), labels: with(&[]), value: b.sum_us as f64 / 1e6 });
    samples.push(Sample { name: format!("{name}_count"), labels: with(&[]), value: b.count as f64 });
    Family { name, help, kind: Kind::Histogram, samples }
}

/// A bucket bound as Prometheus writes it (`0.0001`, `1`, `2.5`).
fn format_le(le: f64) -> String {
    let s = format!("{le}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(start_s: f64, status: &[(&str, u64)], late: u64) -> IntervalRow {
        let (mut r, _) = IntervalRow::merge(&mut [], None);
        r.start_s = start_s;
        r.length_s = 1.0;
        r.status = status.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        r.requests = status.iter().map(|s| s.1).sum();
        r.late = late;
        r.sent = r.requests + 1;
        r
    }

    #[test]
    fn rows_add_up_and_warm_up_rows_do_not_count() {
        let mut t = Tally::new(1.0);
        let mut h = crate::stats::latency_histogram();
        h.record_n(800, 3).unwrap();
        h.record_n(30_000, 1).unwrap();
        let l = Latencies { corrected: &h, uncorrected: Some(&h) };
        t.add_row(&row(0.0, &[("200", 50)], 9), l, None);
        t.add_row(&row(1.0, &[("200", 7), ("404", 1)], 2), l, None);
        t.add_row(&row(2.0, &[("200", 3)], 0), l, None);
        let fams = t.families(&Tags(vec![("run".into(), "a".into())]));
        let get = |name: &str, label: Option<(&str, &str)>| -> f64 {
            fams.iter()
                .flat_map(|f| &f.samples)
                .find(|s| s.name == name && label.is_none_or(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v)))
                .unwrap_or_else(|| panic!("{name}"))
                .value
        };
        assert_eq!(get("strain_requests_total", Some(("status", "200"))), 10.0);
        assert_eq!(get("strain_requests_total", Some(("status", "404"))), 1.0);
        assert_eq!(get("strain_late_total", None), 2.0);
        // Each measured row sent one more than it answered: two in flight.
        assert_eq!((get("strain_sent_total", None), get("strain_in_flight", None)), (13.0, 2.0));
        assert_eq!(get("strain_errors_total", Some(("kind", "timeout"))), 0.0);
        // Two measured rows of 4 responses: 6 at 800 µs (bucket le=0.001), 2 at 30 ms (0.05).
        assert_eq!(get("strain_request_duration_seconds_bucket", Some(("le", "0.0005"))), 0.0);
        assert_eq!(get("strain_request_duration_seconds_bucket", Some(("le", "0.001"))), 6.0);
        assert_eq!(get("strain_request_duration_seconds_bucket", Some(("le", "0.025"))), 6.0);
        assert_eq!(get("strain_request_duration_seconds_bucket", Some(("le", "0.05"))), 8.0);
        assert_eq!(get("strain_request_duration_seconds_bucket", Some(("le", "+Inf"))), 8.0);
        assert_eq!(get("strain_request_duration_seconds_count", None), 8.0);
        // Rate mode: the uncorrected histogram beside it.
        assert_eq!(get("strain_request_duration_uncorrected_seconds_bucket", Some(("le", "0.001"))), 6.0);
        // Every sample carries the tag.
        assert!(fams.iter().flat_map(|f| &f.samples).all(|s| s.labels.contains(&("run".into(), "a".into()))));
        assert_eq!(format_le(0.0001), "0.0001");
        assert_eq!(format_le(60.0), "60.0");
    }
}
