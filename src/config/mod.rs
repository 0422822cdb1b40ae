//! The resolved test: what the engine runs, with every option settled and checked.
//!
//! `cli/` builds a [`Config`] from flags; the engine and reports read it and never see the flag
//! parser. Defaults are in [`crate::defaults`].

use std::time::Duration;

use crate::http::request::Header;
use crate::schedule::Schedule;

use crate::defaults::{AUTO_INTERVAL_ROWS, COUNT_INTERVAL, MIN_INTERVAL};

pub mod replay;
mod target;
pub use crate::defaults::{
    CONNECTIONS as DEFAULT_CONNECTIONS, DURATION as DEFAULT_DURATION, INTERVAL as DEFAULT_INTERVAL,
    THREADS as DEFAULT_THREADS, TICK as DEFAULT_TICK, TIMEOUT as DEFAULT_TIMEOUT,
};
pub use target::{Scheme, Target};

/// Why a URL or option cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The URL does not parse or uses an unsupported scheme.
    #[error("invalid URL '{url}': {why}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Any other option that is out of range.
    #[error("{0}")]
    Invalid(String),
}

/// Which share of a test this process runs (`--segment I/N`): its connections, and every
/// N-th request of the rate schedule, so N processes together are the one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// This share, from 0.
    pub index: u32,
    /// How many shares the test is split into.
    pub count: u32,
}

impl Default for Segment {
    fn default() -> Self {
        Segment { index: 0, count: 1 }
    }
}

impl Segment {
    /// This segment's share of `total` (the remainder goes to the first segments: 10 over 3 is
    /// 4, 3, 3).
    pub fn share(&self, total: usize) -> usize {
        let n = self.count.max(1) as usize;
        total / n + usize::from((self.index as usize) < total % n)
    }

    /// Whether the test is split at all.
    pub fn is_split(&self) -> bool {
        self.count > 1
    }
}

/// Which HTTP the load asks for. The run settles it, once, into the [`Protocol`] it speaks
/// (`engine::prepare`): the same rule for every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// https: offer h2 and http/1.1 by ALPN and speak what the server picks; http: HTTP/1.1.
    #[default]
    Negotiate,
    /// This one whatever the server prefers (`--http1.1`, `--http2`: h2 by ALPN on https
    /// URLs, h2c with prior knowledge on http URLs; `--http3`: https URLs only; a unit's).
    Exactly(Protocol),
}

/// How a unit's protocol is named, over plain TCP and over TLS (`ws`, `wss`), and what its
/// rate paces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Speech {
    /// Over plain TCP.
    pub plain: &'static str,
    /// Over TLS.
    pub tls: &'static str,
    /// What `-R` paces.
    pub paces: Paces,
}

/// What a load's rate (`-R`) paces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paces {
    /// Requests sent on held connections (wrk2's `-R`), their latency corrected.
    Requests,
    /// Streams started, each on a connection of its own held while it lasts: connections
    /// arrive on the schedule, and one that finds every slot busy is dropped and counted.
    Streams,
}

impl Paces {
    /// What the rate counts, in a sentence: `requests`, `streams`.
    pub fn noun(self) -> &'static str {
        match self {
            Paces::Requests => "requests",
            Paces::Streams => "streams",
        }
    }
}

impl ProtocolChoice {
    /// Requests in flight per connection asked for with `-m`, if the choice has streams.
    pub fn streams(self) -> Option<u32> {
        match self {
            ProtocolChoice::Exactly(Protocol::Http2 { streams } | Protocol::Http3 { streams }) => Some(streams),
            _ => None,
        }
    }
}

/// Which HTTP a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// HTTP/1.1: one request in flight per connection, as wrk.
    #[default]
    Http1,
    /// HTTP/2: `streams` requests in flight per connection.
    Http2 {
        /// Requests in flight per connection (h2load's `-m`).
        streams: u32,
    },
    /// HTTP/3 over QUIC: `streams` requests in flight per connection.
    Http3 {
        /// Requests in flight per connection (`-m`).
        streams: u32,
    },
    /// A unit's own protocol over HTTP/1.1 connections (`strain ws`: each connection upgraded,
    /// a message in flight).
    Unit(Speech),
}

impl Protocol {
    /// The protocol as reports name it: `http/1.1`, `h2` (HTTP/2 over TLS), `h2c`, `h3`, `ws`
    /// or `wss`.
    pub fn name(self, scheme: Scheme) -> &'static str {
        match (self, scheme) {
            (Protocol::Http1, _) => "http/1.1",
            (Protocol::Http2 { .. }, Scheme::Https) => "h2",
            (Protocol::Http2 { .. }, Scheme::Http) => "h2c",
            (Protocol::Http3 { .. }, _) => "h3",
            (Protocol::Unit(speech), Scheme::Https) => speech.tls,
            (Protocol::Unit(speech), Scheme::Http) => speech.plain,
        }
    }

    /// Requests in flight per connection: 1 over HTTP/1.1, `-m` over HTTP/2 and HTTP/3.
    pub fn streams(self) -> u32 {
        match self {
            Protocol::Http1 | Protocol::Unit(_) => 1,
            Protocol::Http2 { streams } | Protocol::Http3 { streams } => streams.max(1),
        }
    }
}

/// How a slow or odd client treats its connections (every protocol over TCP and QUIC alike).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slow {
    /// `--read-rate`, `--write-rate`: bytes per second per connection.
    pub rates: crate::net::throttle::Rates,
    /// `--drop-after-length`: a connection is closed once a response's Content-Length is in.
    pub drop_after_length: bool,
}

/// How whole pages are loaded (`--fullpage`): each group of [`Browse::CONNECTIONS`] slots is a
/// browser that asks for a page, then for every object it embeds over its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Browse {
    /// `--follow`: the next page is one the last page links to (up to `max_depth` links from
    /// where it started); otherwise every page is a new one.
    pub follow: bool,
    /// `--same-host`: references are fetched from the page's host only, even through a
    /// forward proxy, which could reach others.
    pub same_host: bool,
    /// `--max-depth`: links followed from a starting page before the browser starts again.
    pub max_depth: u32,
}

impl Browse {
    /// A browser's connections to one host, as browsers keep (RFC 9112 leaves it open; every
    /// major browser uses 6).
    pub const CONNECTIONS: usize = 6;
    /// Links followed from a starting page by default.
    pub const DEFAULT_DEPTH: u32 = 3;
}

/// What `--trace` and `--trace-file` ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceSpec {
    /// `--trace N`: exchanges printed on stderr (and the first of each new kind).
    pub shown: u64,
    /// `--trace-file F`: every exchange as a JSON line.
    pub file: Option<std::path::PathBuf>,
}

impl TraceSpec {
    /// Nothing is traced.
    pub fn off(&self) -> bool {
        self.shown == 0 && self.file.is_none()
    }
}

/// One request of a targets file (`--targets`, read by `workload::targets`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRequest {
    /// Its method.
    pub method: String,
    /// Its URL, parsed once when the file is read (`target.url` as written).
    pub target: Target,
    /// Its headers, in order.
    pub headers: Vec<crate::http::request::Header>,
    /// Its body.
    pub body: Option<Vec<u8>>,
}

/// A load test as it is being set: every setting, open to change, checked only by
/// [`Settings::build`], which makes the [`Config`] the engine takes.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The server and path under test.
    pub target: Target,
    /// Connections kept open in total.
    pub connections: usize,
    /// Worker threads; connections are split evenly across them.
    pub threads: usize,
    /// How long to send load.
    pub duration: Duration,
    /// `duration` was asked for (`-d`, `--stages`), not a bound strain set itself on a run
    /// of `-n` requests: the header and the JSON say only what was asked.
    pub time_bound: bool,
    /// The first part of `duration` that is load but not measured (connections open, caches and
    /// queues settle); zero measures from the start.
    pub warmup: Duration,
    /// How long a request may wait for its complete response.
    pub timeout: Duration,
    /// Redirects to the same host followed as part of one request (0: none, as wrk).
    pub follow_redirects: u32,
    /// `--targets`: the requests sent in turn (or at random) instead of the URL's.
    pub targets: Vec<TargetRequest>,
    /// `--targets-order random`: the seed of the order; `None`: round-robin.
    pub targets_random: Option<u64>,
    /// `--unix-socket`: connect to this Unix-domain socket (the URL gives Host and path).
    pub unix_socket: Option<std::path::PathBuf>,
    /// `-n`: requests the whole test sends (every segment's together), then it ends.
    pub requests: Option<u64>,
    /// The request's method.
    pub method: String,
    /// The request's body, sent as it is with a Content-Length.
    pub body: Option<Vec<u8>>,
    /// Extra request headers, in order.
    pub headers: Vec<Header>,
    /// Skip TLS certificate verification.
    pub insecure: bool,
    /// HTTP/1.1, HTTP/2, or what the server picks by ALPN.
    pub protocol: ProtocolChoice,
    /// The share of the test this process runs.
    pub segment: Segment,
    /// Start the load at this wall-clock instant (all segments of a test together).
    pub start_at: Option<std::time::SystemTime>,
    /// Constant-rate (or staged) pacing; `None` is closed loop, as fast as responses allow.
    pub schedule: Option<Schedule>,
    /// `--interval`: length of the time series' rows (the series is always kept; printing it
    /// is the caller's choice); `None` chooses it from the run's length (see
    /// [`Config::series_interval`]).
    pub interval: Option<Duration>,
    /// Rate mode: sends due within one tick go out together at its end.
    pub tick: Duration,
    /// Local addresses to connect from, taken in turn (empty: the kernel's choice).
    pub source_addrs: Vec<std::net::IpAddr>,
    /// A slow or odd client: read and write rates, closing after Content-Length.
    pub slow: Slow,
    /// `--trace N`, `--trace-file F`: the exchanges shown.
    pub trace: TraceSpec,
    /// `--fullpage`: the URL is a page, loaded whole with what it embeds (`-n` counts pages).
    pub pages: Option<Browse>,
    /// `strain replay`: what is replayed (its requests come from the recordings, paced by
    /// their times, not by `schedule`).
    pub replay: Option<replay::ReplayNote>,
}

/// The time series' interval when `--interval` is not given, for a run measured for `length`:
/// [`DEFAULT_INTERVAL`] (1 s) when that makes at least [`AUTO_INTERVAL_ROWS`] (40) rows, else the
/// longest of 500, 200, 100, 50, 20 ms that does, else [`MIN_INTERVAL`] (10 ms), so a short run
/// still draws as a curve. A closed-loop run bounded by a count (`count_bound`, `-n`) may end any
/// time before `length`: at most [`COUNT_INTERVAL`] (100 ms).
pub fn auto_interval(length: Duration, count_bound: bool) -> Duration {
    // 1-2-5 steps, longest first: row times stay round numbers and divide a second.
    const STEPS_MS: [u64; 6] = [500, 200, 100, 50, 20, 10];
    let fits = |step: Duration| length >= step * AUTO_INTERVAL_ROWS;
    let by_length = if fits(DEFAULT_INTERVAL) {
        DEFAULT_INTERVAL
    } else {
        STEPS_MS.iter().map(|&ms| Duration::from_millis(ms)).find(|&s| fits(s)).unwrap_or(MIN_INTERVAL)
    };
    let chosen = if count_bound { by_length.min(COUNT_INTERVAL) } else { by_length };
    chosen.max(MIN_INTERVAL)
}

/// Most requests in flight at once over HTTP/2 (connections × streams): each one keeps a slot
/// of request state.
pub const MAX_STREAM_SLOTS: usize = 1_000_000;

/// A load test whose settings were checked together ([`Settings::build`]), and cannot change
/// since: its settings are read through it (it dereferences to them), and a variation of it
/// (a capacity search's step) is built again from [`Config::to_settings`].
#[derive(Debug, Clone)]
pub struct Config(Settings);

impl std::ops::Deref for Config {
    type Target = Settings;

    fn deref(&self) -> &Settings {
        &self.0
    }
}

impl Config {
    /// Its settings, to build a variation of it.
    pub fn to_settings(&self) -> Settings {
        self.0.clone()
    }
}

impl Settings {
    /// wrk's defaults for `target`.
    pub fn new(target: Target) -> Settings {
        Settings {
            target,
            connections: DEFAULT_CONNECTIONS,
            threads: DEFAULT_THREADS,
            duration: DEFAULT_DURATION,
            time_bound: true,
            warmup: Duration::ZERO,
            timeout: DEFAULT_TIMEOUT,
            follow_redirects: 0,
            requests: None,
            unix_socket: None,
            targets: Vec::new(),
            targets_random: None,
            method: "GET".to_string(),
            body: None,
            headers: Vec::new(),
            insecure: false,
            protocol: ProtocolChoice::Negotiate,
            segment: Segment::default(),
            start_at: None,
            schedule: None,
            interval: None,
            tick: DEFAULT_TICK,
            source_addrs: Vec::new(),
            slow: Slow::default(),
            trace: Default::default(),
            pages: None,
            replay: None,
        }
    }

    /// Requests are sent at set times (a rate, stages, a replay), so latency is corrected.
    pub fn paced(&self) -> bool {
        self.schedule.is_some() && self.paces() == Paces::Requests || self.replay.is_some()
    }

    /// What the rate paces (a unit's may be streams started).
    pub fn paces(&self) -> Paces {
        match self.protocol {
            ProtocolChoice::Exactly(Protocol::Unit(speech)) => speech.paces,
            _ => Paces::Requests,
        }
    }

    /// Length of the time series' rows: `--interval`, else [`auto_interval`] of the measured
    /// length (the duration without the warm-up, whose rows are not kept). Every segment of a
    /// test has the same config, so they cut the same intervals.
    pub fn series_interval(&self) -> Duration {
        let count_bound = self.requests.is_some() && !self.paced();
        self.interval.unwrap_or_else(|| auto_interval(self.duration.saturating_sub(self.warmup), count_bound))
    }

    /// The load test these settings make, once their combination is checked: the one place a
    /// [`Config`] is made.
    pub fn build(self) -> Result<Config, ConfigError> {
        self.check()?;
        Ok(Config(self))
    }

    /// Checks the combination of options.
    fn check(&self) -> Result<(), ConfigError> {
        let invalid = |s: &str| Err(ConfigError::Invalid(s.to_string()));
        if self.threads == 0 {
            return invalid("threads must be at least 1");
        }
        if self.connections == 0 {
            return invalid("connections must be at least 1");
        }
        if self.unix_socket.is_some() && self.target.scheme == Scheme::Https {
            return invalid("--unix-socket speaks plain HTTP: give an http:// URL (it names Host and path)");
        }
        if self.unix_socket.is_some() && !self.source_addrs.is_empty() {
            return invalid("--source-addr is for TCP: it cannot be used with --unix-socket");
        }
        if self.segment.count == 0 || self.segment.index >= self.segment.count {
            return Err(ConfigError::Invalid(format!(
                "segment {}/{} does not exist: the index runs from 0 to the count - 1",
                self.segment.index, self.segment.count
            )));
        }
        if self.segment_connections() < self.threads {
            return Err(ConfigError::Invalid(if self.segment.is_split() {
                format!(
                    "segment {}/{} gets {} of the {} connections, fewer than its threads ({}): use fewer threads or more connections",
                    self.segment.index,
                    self.segment.count,
                    self.segment_connections(),
                    self.connections,
                    self.threads
                )
            } else {
                format!(
                    "connections ({}) must be at least threads ({}): each thread needs a connection",
                    self.connections, self.threads
                )
            }));
        }
        if self.duration.is_zero() {
            return invalid("duration must be greater than zero");
        }
        if let ProtocolChoice::Exactly(Protocol::Http3 { .. }) = self.protocol {
            if self.target.scheme != Scheme::Https {
                return invalid("HTTP/3 runs over QUIC, which is always encrypted: give an https:// URL");
            }
            if self.unix_socket.is_some() {
                return invalid("--unix-socket speaks TCP: it cannot be used with --http3");
            }
        }
        if let Some(streams) = self.protocol.streams() {
            if streams == 0 {
                return invalid("streams per connection (-m) must be at least 1");
            }
            if self.connections.saturating_mul(streams as usize) > MAX_STREAM_SLOTS {
                return Err(ConfigError::Invalid(format!(
                    "{} connections x {streams} streams is more than {MAX_STREAM_SLOTS} requests in flight",
                    self.connections
                )));
            }
        }
        self.check_origins()?;
        if self.warmup >= self.duration {
            return invalid("the warm-up must be shorter than the duration it is part of");
        }
        if self.timeout.is_zero() {
            return invalid("timeout must be greater than zero");
        }
        if self.interval.is_some_and(|i| i < MIN_INTERVAL) {
            return invalid("interval must be at least 10ms");
        }
        if self.pages.is_some() {
            self.check_pages()?;
        }
        Ok(())
    }

    /// `--fullpage`: a browser's GETs, in closed loop, of the URL's pages.
    fn check_pages(&self) -> Result<(), ConfigError> {
        let invalid = |s: &str| Err(ConfigError::Invalid(s.to_string()));
        if self.schedule.is_some() {
            return invalid(
                "--fullpage loads pages in closed loop, as browsers do: it cannot be combined with -R or --stages",
            );
        }
        if !self.targets.is_empty() {
            return invalid("--fullpage loads the URL's page and what it names: it cannot be combined with --targets");
        }
        if self.method != "GET" || self.body.is_some() {
            return invalid("--fullpage GETs pages and their objects: it cannot be combined with -X or a body");
        }
        if self.replay.is_some() {
            return invalid("--fullpage cannot be combined with a replay");
        }
        Ok(())
    }

    /// The servers the run connects to: the URL's, then each other one a targets file names, in
    /// the file's order (one server without targets). Targets whose URL does not parse belong
    /// to the URL's server (they were checked when the file was read).
    pub fn origins(&self) -> Vec<Target> {
        let mut origins = vec![self.target.clone()];
        for t in &self.targets {
            if !origins.iter().any(|o| o.same_origin(&t.target)) {
                origins.push(t.target.clone());
            }
        }
        origins
    }

    /// Which of [`Config::origins`] each target is on.
    pub fn target_origins(&self) -> Vec<u16> {
        let origins = self.origins();
        // Every target's origin is among them: origins() is made of the targets.
        let of = |t: &Target| origins.iter().position(|o| o.same_origin(t)).unwrap_or(0);
        self.targets.iter().map(|t| of(&t.target) as u16).collect()
    }

    /// Targets on several servers: one scheme, none missing the URL's server, a connection
    /// per server on every thread, TCP.
    fn check_origins(&self) -> Result<(), ConfigError> {
        if self.targets.is_empty() {
            return Ok(());
        }
        let origins = self.origins();
        let on_url = self.targets.iter().any(|t| t.target.same_origin(&self.target));
        if !on_url {
            return Err(ConfigError::Invalid(format!(
                "no target is on {} (the URL's server): give a URL of one of the targets' servers, or none",
                self.target.origin()
            )));
        }
        if let Some(other) = origins.iter().find(|o| o.scheme != self.target.scheme) {
            return Err(ConfigError::Invalid(format!(
                "the targets mix {} and {}: one scheme (http or https) per run",
                self.target.origin(),
                other.origin()
            )));
        }
        let n = origins.len();
        if n > 1 && self.unix_socket.is_some() {
            return Err(ConfigError::Invalid(format!(
                "--unix-socket reaches one server; the targets name {n} ({} and {})",
                origins[0].origin(),
                origins[1].origin()
            )));
        }
        if n > 1 && self.segment_connections() < n * self.threads {
            return Err(ConfigError::Invalid(format!(
                "the targets name {n} servers: each thread needs a connection to each (-c at least {} with -t {}{})",
                n * self.threads * self.segment.count.max(1) as usize,
                self.threads,
                if self.segment.is_split() { format!(" and {} segments", self.segment.count) } else { String::new() }
            )));
        }
        Ok(())
    }

    /// This process's connections: its segment's share of the test's.
    pub fn segment_connections(&self) -> usize {
        self.segment.share(self.connections)
    }

    /// Connections owned by thread `index` of this process (the remainder goes to the first
    /// threads).
    pub fn connections_for(&self, index: usize) -> usize {
        let c = self.segment_connections();
        c / self.threads + usize::from(index < c % self.threads)
    }

    /// `-n`: the requests thread `index` of this process sends (the test's count split exactly
    /// over segments, then threads).
    pub fn requests_for(&self, index: usize) -> Option<u64> {
        let mine = self.segment.share(usize::try_from(self.requests?).unwrap_or(usize::MAX)) as u64;
        let t = self.threads.max(1) as u64;
        Some(mine / t + u64::from((index as u64) < mine % t))
    }

    /// The share of the rate schedule this process sends, as a fraction (1 unsplit).
    pub fn segment_fraction(&self) -> f64 {
        1.0 / f64::from(self.segment.count.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_like_wrk() {
        // (url, host, port, explicit, path, Host header)
        let rows = [
            ("http://127.0.0.1:8080", "127.0.0.1", 8080, true, "/", "127.0.0.1:8080"),
            ("http://localhost/", "localhost", 80, false, "/", "localhost"),
            ("HTTPS://example.com/a/b?x=1&y", "example.com", 443, false, "/a/b?x=1&y", "example.com"),
            ("http://[::1]:9000/p", "::1", 9000, true, "/p", "[::1]:9000"),
            ("http://[::1]", "::1", 80, false, "/", "[::1]"),
            ("http://h?q=1", "h", 80, false, "/?q=1", "h"),
            ("http://h/p#frag", "h", 80, false, "/p", "h"),
            // wrk sends the path as written: no normalisation.
            ("http://h/a/../b", "h", 80, false, "/a/../b", "h"),
        ];
        for (url, host, port, explicit, path, hh) in rows {
            let t = Target::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(
                (t.host.as_str(), t.port, t.explicit_port, t.path.as_str()),
                (host, port, explicit, path),
                "{url}"
            );
            assert_eq!(t.host_header(), hh, "{url}");
        }
    }

    #[test]
    fn a_target_at_another_path_is_the_url_a_user_would_write() {
        for (url, path, want) in [
            (
                "http://127.0.0.1:50051",
                "/helloworld.Greeter/SayHello",
                "http://127.0.0.1:50051/helloworld.Greeter/SayHello",
            ),
            ("https://[::1]:8443/", "/a.B/C", "https://[::1]:8443/a.B/C"),
            ("http://h/old?q", "/new", "http://h/new"),
        ] {
            let t = Target::parse(url).unwrap().at_path(path);
            assert_eq!(t, Target::parse(want).unwrap(), "{url}");
        }
    }

    #[test]
    fn bad_urls_say_why() {
        let rows = [
            ("localhost:8080", "it must start with http:// or https://"),
            ("ftp://h/", "only http://, https://, ws:// and wss:// are supported"),
            ("http://", "missing host"),
            ("http://:80/", "missing host"),
            ("http://h:0/", "invalid port"),
            ("http://h:99999/", "invalid port"),
            ("http://h:x/", "invalid port"),
            ("http://[::1/", "unclosed '[' in IPv6 address"),
            ("http://[zz]/", "invalid IPv6 address"),
            ("http://::1/", "IPv6 addresses must be in brackets"),
            ("http://u@h/", "user information in the URL is not supported"),
            ("http://h/a b", "spaces and control characters must be percent-encoded"),
        ];
        for (url, why) in rows {
            assert_eq!(Target::parse(url), Err(ConfigError::Url { url: url.into(), why }), "{url}");
        }
    }

    #[test]
    fn segment_shares_add_up_to_the_whole() {
        for n in 1..=16u32 {
            for total in [1usize, 3, 10, 19_000, 100_003] {
                let sum: usize = (0..n).map(|i| Segment { index: i, count: n }.share(total)).sum();
                assert_eq!(sum, total, "{total} over {n}");
            }
        }
        let shares: Vec<usize> = (0..3).map(|i| Segment { index: i, count: 3 }.share(10)).collect();
        assert_eq!(shares, vec![4, 3, 3]);
    }

    #[test]
    fn auto_interval_cuts_a_run_into_at_least_40_round_rows() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs_f64;
        // (measured length, bounded by a count, interval)
        let rows = [
            // 40 s and more: whole seconds, as before the choice was automatic.
            (s(3600.0), false, ms(1000)),
            (s(40.0), false, ms(1000)),
            // Just short of 40 s: the next step down gives 79 rows.
            (s(39.9), false, ms(500)),
            (s(20.0), false, ms(500)),
            (s(19.99), false, ms(200)),
            // wrk's default 10 s: 50 rows.
            (s(10.0), false, ms(200)),
            (s(8.0), false, ms(200)),
            (s(4.0), false, ms(100)),
            (s(2.0), false, ms(50)),
            (s(1.0), false, ms(20)),
            (s(0.4), false, ms(10)),
            // Shorter runs get fewer rows rather than rows under 10 ms.
            (s(0.1), false, ms(10)),
            (Duration::ZERO, false, ms(10)),
            // -n in closed loop: 100 ms however long it may go, less when it cannot go long.
            (s(24.0 * 3600.0), true, ms(100)),
            (s(10.0), true, ms(100)),
            (s(2.0), true, ms(50)),
        ];
        for (length, count_bound, want) in rows {
            assert_eq!(auto_interval(length, count_bound), want, "{length:?} count-bound {count_bound}");
        }
    }

    #[test]
    fn the_interval_given_wins_and_the_warmup_is_not_counted() {
        let mut c = Settings::new(Target::parse("http://h/").unwrap());
        c.duration = Duration::from_secs(50);
        assert_eq!(c.series_interval(), Duration::from_secs(1));
        c.warmup = Duration::from_secs(20);
        assert_eq!(c.series_interval(), Duration::from_millis(500));
        c.interval = Some(Duration::from_millis(250));
        assert_eq!(c.series_interval(), Duration::from_millis(250));
        // -n at a rate ends on schedule: its length counts.
        c.interval = None;
        c.requests = Some(1000);
        assert_eq!(c.series_interval(), Duration::from_millis(100));
        c.schedule = Some(Schedule::constant(100.0, c.duration));
        assert_eq!(c.series_interval(), Duration::from_millis(500));
    }

    #[test]
    fn connections_split_evenly() {
        let mut c = Settings::new(Target::parse("http://h/").unwrap());
        c.connections = 10;
        c.threads = 3;
        let split: Vec<usize> = (0..3).map(|i| c.connections_for(i)).collect();
        assert_eq!(split, vec![4, 3, 3]);
        c.connections = 1;
        assert!(c.build().is_err());
    }
}
