//! Flags of the commands that serve: `strain origin`, and `strain proxy`'s own (its origin's
//! documents, the workload, the proxy); a proxy test's load flags are the shared groups in
//! [`super`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{ConnectFlags, FindMaxOptions, RunFlags};

use super::super::units::{self, Dur};
use crate::defaults;

/// How the origin serves documents: shared by `strain origin` and `strain proxy`.
#[derive(Debug, Args)]
pub struct DocumentFlags {
    /// Freshness lifetime sent with documents (Cache-Control: max-age).
    #[arg(long = "max-age", value_name = "T", default_value_t = Dur(defaults::MAX_AGE), value_parser = units::dur)]
    pub max_age: Dur,
    /// Send documents with Cache-Control: no-cache instead of a max-age.
    #[arg(long = "no-cache")]
    pub no_cache: bool,
    /// Probability (0 to 1) that a conditional document request (If-Modified-Since,
    /// If-None-Match) gets 304 Not Modified (jtest -I).
    #[arg(long = "ims-not-modified", value_name = "P", default_value_t = defaults::IMS_NOT_MODIFIED, allow_negative_numbers = true)]
    pub ims_not_modified: f64,
    /// Wait this long before the first byte of every response (jtest -w).
    #[arg(long = "delay", value_name = "T", default_value_t = Dur(Duration::ZERO), value_parser = units::dur)]
    pub delay: Dur,
    /// Write at most B bytes per second on each connection (jtest -r; suffixes k, M, G).
    #[arg(long = "byte-rate", value_name = "B", value_parser = units::count)]
    pub byte_rate: Option<usize>,
    /// Probability (0 to 1) that a document body is cut short and its connection closed
    /// (jtest -G).
    #[arg(long = "abort-rate", value_name = "P", default_value_t = 0.0, allow_negative_numbers = true)]
    pub abort_rate: f64,
    /// Content-Type of documents: html, jpeg or text.
    #[arg(long = "content-type", value_name = "TYPE", default_value = "text", value_parser = |s: &str| s.parse::<crate::origin::ContentType>())]
    pub content_type: crate::origin::ContentType,
    /// Documents vary on this request header (jtest -2 for user-agent): answers say Vary, and
    /// each body is made for the header's value, so a content check catches a cache that
    /// serves the wrong alternate.
    #[arg(long = "vary", value_name = "HEADER", value_enum)]
    pub vary: Option<VaryFlag>,
}

/// The header `--vary` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VaryFlag {
    /// User-Agent.
    UserAgent,
    /// Accept-Encoding (a proxy that normalizes it merges variants).
    AcceptEncoding,
    /// Accept-Language.
    AcceptLanguage,
}

impl VaryFlag {
    /// The workload's header.
    pub fn vary(self) -> crate::workload::alternates::Vary {
        use crate::workload::alternates::Vary;
        match self {
            VaryFlag::UserAgent => Vary::UserAgent,
            VaryFlag::AcceptEncoding => Vary::AcceptEncoding,
            VaryFlag::AcceptLanguage => Vary::AcceptLanguage,
        }
    }
}

impl DocumentFlags {
    /// Checks the values and sets them on `config`.
    pub fn apply(&self, config: &mut crate::origin::OriginConfig) -> Result<(), super::super::CliError> {
        for (flag, p) in [("--ims-not-modified", self.ims_not_modified), ("--abort-rate", self.abort_rate)] {
            if !is_probability(p) {
                return Err(super::super::CliError::Usage(format!(
                    "{flag} must be a probability between 0 and 1, not {p}"
                )));
            }
        }
        if self.byte_rate == Some(0) {
            return Err(super::super::CliError::Usage(
                "--byte-rate must be above 0 (leave it out for no limit)".into(),
            ));
        }
        config.max_age = self.max_age.0;
        config.no_cache = self.no_cache;
        config.ims_not_modified = self.ims_not_modified;
        config.delay = self.delay.0;
        config.byte_rate = self.byte_rate.map(|b| b as u64);
        config.abort_rate = self.abort_rate;
        config.content_type = self.content_type;
        config.vary = self.vary.map(VaryFlag::vary);
        Ok(())
    }
}

/// Flags of `strain origin`.
#[derive(Debug, Args)]
pub struct OriginFlags {
    /// Address to listen on (loopback unless told otherwise; port 0 picks a free one), or
    /// unix:PATH for a Unix-domain socket.
    #[arg(long = "listen", value_name = "ADDR", default_value_t = units::ListenAddr::Tcp(defaults::ORIGIN_LISTEN), value_parser = units::listen)]
    pub listen: units::ListenAddr,
    /// Size of the fixed response body (paths other than documents /d/ID/LEN), in bytes.
    #[arg(long = "body-size", value_name = "BYTES", default_value_t = crate::origin::BODY_PATTERN.len(), value_parser = units::count)]
    pub body_size: usize,
    /// Status code of the fixed response (default 200; documents are always 200 or 304). With
    /// --grpc: CODE:SHARE, the share (0 to 1) of echo calls that end with gRPC status CODE (a
    /// number or a name such as UNAVAILABLE), at once and without a reply; repeatable.
    #[arg(long = "status", value_name = "CODE", value_parser = status)]
    pub status: Vec<StatusFlag>,
    /// Stop answering at this time after start (for coordinated-omission tests)...
    #[arg(long = "stall-at", value_name = "T", value_parser = units::duration, requires = "stall_for")]
    pub stall_at: Option<Duration>,
    /// ...for this long; requests that arrive meanwhile are answered when it ends.
    #[arg(long = "stall-for", value_name = "T", value_parser = units::duration, requires = "stall_at")]
    pub stall_for: Option<Duration>,
    /// Event-loop threads (default: one per core).
    #[arg(short = 't', long = "threads", value_name = "N", value_parser = units::count)]
    pub threads: Option<usize>,
    /// Close each connection after N responses, the last saying Connection: close (jtest -j);
    /// 0 never.
    #[arg(long = "keepalive", value_name = "N", default_value = "0", value_parser = units::count)]
    pub keepalive: usize,
    /// Seed of the random choices (which responses are 304 or cut); the same seed repeats them.
    #[arg(long = "seed", value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Close a connection whose request head has not arrived whole this long after it began
    /// (slowloris clients); 0 never.
    #[arg(long = "header-timeout", value_name = "T", default_value_t = Dur(defaults::HEADER_TIMEOUT), value_parser = units::dur)]
    pub header_timeout: Dur,
    /// Close a connection whose client has taken none of its response this long (it asked and
    /// stopped reading); 0 never.
    #[arg(long = "send-timeout", value_name = "T", default_value_t = Dur(defaults::SEND_TIMEOUT), value_parser = units::dur)]
    pub send_timeout: Dur,
    /// Model a server of known capacity: every request (but /_strain/stats) holds one of
    /// --workers workers for T, the rest queue in arrival order (capacity: workers / T req/s).
    #[arg(long = "service-time", value_name = "T", value_parser = units::dur)]
    pub service_time: Option<Dur>,
    /// Requests served at once with --service-time (default: 1).
    #[arg(long = "workers", value_name = "N", value_parser = units::count)]
    pub workers: Option<usize>,
    /// How service times vary: fixed, or exp (exponential with mean T).
    #[arg(long = "service-time-dist", value_name = "DIST", value_enum, default_value_t = ServiceDistFlag::Fixed)]
    pub service_time_dist: ServiceDistFlag,
    /// Serve HTTPS, with ALPN h2 and http/1.1 (a self-signed certificate for 127.0.0.1 and
    /// localhost is made at start unless --cert and --key are given).
    #[arg(long = "tls")]
    pub tls: bool,
    /// With --tls: also serve HTTP/3 (QUIC, ALPN h3) on the UDP port of the same number, with
    /// the same certificate, and advertise it over TCP with Alt-Svc.
    #[arg(long = "http3", requires = "tls")]
    pub http3: bool,
    /// With --tls: the certificate chain, a PEM file.
    #[arg(long = "cert", value_name = "FILE", requires_all = ["tls", "key"])]
    pub cert: Option<std::path::PathBuf>,
    /// With --tls: the certificate's private key, a PEM file.
    #[arg(long = "key", value_name = "FILE", requires_all = ["tls", "cert"])]
    pub key: Option<std::path::PathBuf>,
    /// Answer each request with its recorded response (status, headers, body or body size)
    /// from FILE, a Proxy Verifier replay file or a HAR: the server side of `strain replay`.
    /// A request no record matches gets 404. The fixed response and documents are not served.
    #[arg(long = "replay", value_name = "FILE", conflicts_with_all = REPLAY_REFUSES)]
    pub replay: Option<PathBuf>,
    /// With --replay: how a request finds its recorded response: uuid (the default: its `uuid` header, as
    /// Proxy Verifier's client sends and its server matches) or url (its path and query).
    #[arg(long = "replay-key", value_name = "KEY", value_enum, requires = "replay")]
    pub replay_key: Option<ReplayKeyFlag>,
    /// Whole pages (jtest -l): a document asked for as /d/ID/LEN.html is an HTML page
    /// (text/html) that embeds N objects, <img src="/d/ID2/LEN2.jpeg">, which are served as
    /// image/jpeg; which objects, and their sizes (jtest's mix), are fixed by the page's ID.
    /// The page is LEN bytes, padded with a comment, or the smallest that holds its markup when
    /// LEN is less (Content-Length says which). 0 is off; at most 100.
    #[arg(long = "embed", value_name = "N", default_value = "0", value_parser = page_refs)]
    pub embed: u32,
    /// Whole pages (jtest -F): each .html page links to N other pages,
    /// <a href="/d/ID3/LEN3.html">, fixed by its ID as its objects are. 0 is off; at most 100.
    #[arg(long = "links", value_name = "N", default_value = "0", value_parser = page_refs)]
    pub links: u32,
    /// How documents are served.
    #[command(flatten)]
    pub documents: DocumentFlags,
}

/// One `--status` of `strain origin`: the fixed response's HTTP status, or (for a unit that
/// fails calls on purpose, with --grpc) a status and the share of calls that end with it.
#[derive(Debug, Clone, PartialEq)]
pub enum StatusFlag {
    /// `CODE`, 200 to 599.
    Http(u16),
    /// `CODE:SHARE`: the code as given (the unit reads it) and a share above 0, at most 1.
    Share(String, f64),
}

/// Parses `--status`: `CODE` (200 to 599) or `CODE:SHARE` (a share above 0 and at most 1).
pub fn status(s: &str) -> Result<StatusFlag, String> {
    let Some((code, share)) = s.split_once(':') else {
        return match s.trim().parse::<u16>() {
            Ok(n) if (200..=599).contains(&n) => Ok(StatusFlag::Http(n)),
            _ => Err(format!("'{s}' is not a status code from 200 to 599 (or, with --grpc, CODE:SHARE)")),
        };
    };
    match share.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 1.0 => Ok(StatusFlag::Share(code.trim().to_string(), p)),
        _ => Err(format!("'{share}' is not a share above 0 and at most 1")),
    }
}

/// What `origin --replay` refuses: flags that shape the fixed response or documents, which a
/// recording replaces.
const REPLAY_REFUSES: [&str; 9] =
    ["body_size", "status", "max_age", "no_cache", "ims_not_modified", "abort_rate", "content_type", "embed", "links"];

/// What `--request-extension` ends URLs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExtensionFlag {
    /// `.html`.
    Html,
    /// `.jpeg`.
    Jpeg,
    /// `/`.
    Slash,
}

impl ExtensionFlag {
    /// The workload's extension.
    pub fn extension(self) -> crate::workload::doc::Extension {
        use crate::workload::doc::Extension;
        match self {
            ExtensionFlag::Html => Extension::Html,
            ExtensionFlag::Jpeg => Extension::Jpeg,
            ExtensionFlag::Slash => Extension::Slash,
        }
    }
}

/// Parses `--embed` and `--links`: 0 (off) to [`crate::workload::page::MAX_REFS`].
fn page_refs(s: &str) -> Result<u32, String> {
    let n = units::count(s)?;
    let max = crate::workload::page::MAX_REFS;
    match u32::try_from(n) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("{n} per page: give 0 (off) to {max}")),
    }
}

/// Parses `--alternates`: 1 to [`crate::workload::alternates::MAX`].
fn alternates(s: &str) -> Result<u32, String> {
    let n = units::count(s)?;
    let max = crate::workload::alternates::MAX;
    match u32::try_from(n) {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("{n} alternates: give 1 to {max}")),
    }
}

impl ProxyFlags {
    /// The header documents vary on: --vary, or User-Agent with --alternates alone.
    pub fn vary(&self) -> Option<crate::workload::alternates::Vary> {
        let default = self.alternates.map(|_| crate::workload::alternates::Vary::UserAgent);
        self.documents.vary.map(VaryFlag::vary).or(default)
    }
}

/// Parses `--extra-headers`: a count up to [`crate::workload::headers::MAX`].
fn extra_headers(s: &str) -> Result<usize, String> {
    let n = units::count(s)?;
    if n > crate::workload::headers::MAX {
        return Err(format!("{n} extra headers: at most {}", crate::workload::headers::MAX));
    }
    Ok(n)
}

/// How `origin --replay` matches a request to a recorded response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayKeyFlag {
    /// The `uuid` header's value.
    Uuid,
    /// The request target's path and query.
    Url,
}

impl ReplayKeyFlag {
    /// The origin's key.
    pub fn key(self) -> crate::origin::MatchKey {
        match self {
            ReplayKeyFlag::Uuid => crate::origin::MatchKey::Uuid,
            ReplayKeyFlag::Url => crate::origin::MatchKey::Url,
        }
    }
}

impl OriginFlags {
    /// The fixed response's status, checked: one plain code at most (a `CODE:SHARE` is a
    /// unit's, which checks it).
    pub fn http_status(&self) -> Result<u16, super::super::CliError> {
        let mut codes = self.status_codes();
        match (codes.next(), codes.next()) {
            (None, _) => Ok(defaults::ORIGIN_STATUS),
            (Some(code), None) => Ok(code),
            _ => Err(super::super::CliError::Usage(
                "--status takes one code (several only as CODE:SHARE, with --grpc)".into(),
            )),
        }
    }

    /// The `CODE:SHARE`s of `--status`, as given.
    pub fn status_shares(&self) -> impl Iterator<Item = (&str, f64)> {
        self.status.iter().filter_map(|s| match s {
            StatusFlag::Share(code, share) => Some((code.as_str(), *share)),
            StatusFlag::Http(_) => None,
        })
    }

    /// The `--status` codes, as given.
    pub fn status_codes(&self) -> impl Iterator<Item = u16> + '_ {
        self.status.iter().filter_map(|s| match s {
            StatusFlag::Http(code) => Some(*code),
            StatusFlag::Share(..) => None,
        })
    }

    /// Where the TLS certificate comes from; `None` without --tls.
    pub fn tls(&self) -> Option<crate::origin::TlsSource> {
        if !self.tls {
            return None;
        }
        Some(match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => crate::origin::TlsSource::Pem { cert: cert.clone(), key: key.clone() },
            _ => crate::origin::TlsSource::SelfSigned,
        })
    }

    /// The service the flags ask for, checked: none without --service-time.
    pub fn service(&self) -> Result<Option<crate::origin::Service>, super::super::CliError> {
        let usage = |msg: &str| Err(super::super::CliError::Usage(msg.into()));
        let Some(time) = self.service_time else {
            return if self.workers.is_some() { usage("--workers needs --service-time") } else { Ok(None) };
        };
        if time.0.is_zero() {
            return usage("--service-time must be above 0");
        }
        let workers = self.workers.unwrap_or(defaults::SERVICE_WORKERS);
        if workers == 0 {
            return usage("--workers must be at least 1");
        }
        let Ok(workers) = u32::try_from(workers) else { return usage("--workers must be at most 4294967295") };
        let dist = match self.service_time_dist {
            ServiceDistFlag::Fixed => crate::origin::ServiceDist::Fixed,
            ServiceDistFlag::Exp => crate::origin::ServiceDist::Exp,
        };
        Ok(Some(crate::origin::Service { time: time.0, workers, dist }))
    }
}

/// How the origin's service times vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServiceDistFlag {
    /// Every request takes exactly T.
    Fixed,
    /// Exponential with mean T.
    Exp,
}

/// How requests name the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormFlag {
    /// Absolute-form URLs to a forward proxy.
    Forward,
    /// Origin-form with Host, to a reverse proxy.
    Reverse,
    /// Origin-form with Host, to a transparent proxy.
    Transparent,
}

/// Flags of `strain proxy`.
#[derive(Debug, Args)]
pub struct ProxyFlags {
    /// The proxy under test (default: the origin itself, for a dry run).
    #[arg(long = "proxy", value_name = "HOST:PORT")]
    pub proxy: Option<String>,
    /// The origin as URLs name it (default: the in-process origin's address).
    #[arg(long = "origin", value_name = "HOST:PORT")]
    pub origin: Option<String>,
    /// Request form.
    #[arg(long = "form", value_enum, default_value = "reverse")]
    pub form: FormFlag,
    /// Talk to the proxy over TLS (https; add -k for a self-signed proxy certificate).
    #[arg(long = "proxy-tls")]
    pub proxy_tls: bool,
    /// Run only the client (the origin runs elsewhere; needs --origin).
    #[arg(long = "client-only", conflicts_with = "origin_only")]
    pub client_only: bool,
    /// Run only the origin, for clients elsewhere.
    #[arg(long = "origin-only")]
    pub origin_only: bool,
    /// Where the origin listens.
    #[arg(long = "listen", value_name = "ADDR", default_value_t = defaults::PROXY_ORIGIN_LISTEN)]
    pub listen: SocketAddr,
    /// Share of requests for the hot set (jtest -z).
    #[arg(long = "hit-rate", value_name = "P", default_value_t = defaults::HIT_RATE, value_parser = probability)]
    pub hit_rate: f64,
    /// Documents in the hot set (jtest -Z).
    #[arg(long = "hotset", value_name = "N", default_value_t = defaults::HOTSET, value_parser = units::count)]
    pub hotset: usize,
    /// Zipf popularity within the hot set, with this exponent.
    #[arg(long = "zipf", value_name = "ALPHA")]
    pub zipf: Option<f64>,
    /// Replace the hot set this many times an hour, gradually.
    #[arg(long = "evolve", value_name = "R", default_value = "0")]
    pub evolve: f64,
    /// Every document's size (default: jtest's mix, 100 B to 900 KB).
    #[arg(long = "doc-size", value_name = "BYTES", value_parser = units::count)]
    pub doc_size: Option<usize>,
    /// Cycle through the URLs (or paths) in FILE instead of generated documents.
    #[arg(long = "urls", value_name = "FILE")]
    pub urls: Option<PathBuf>,
    /// Shuffle the --urls list (seeded) instead of cycling in order.
    #[arg(long = "shuffle")]
    pub shuffle: bool,
    /// Write the first N generated URLs (N = --dump-count) to FILE and exit.
    #[arg(long = "dump-urls", value_name = "FILE")]
    pub dump_urls: Option<PathBuf>,
    /// How many URLs --dump-urls writes.
    #[arg(long = "dump-count", value_name = "N", default_value_t = defaults::DUMP_COUNT, value_parser = units::count)]
    pub dump_count: usize,
    /// Seed of every random choice.
    #[arg(long = "seed", value_name = "N", default_value_t = defaults::PROXY_SEED)]
    pub seed: u64,
    /// Open new client connections at this rate per second instead of keeping -c open; each does
    /// --keepalive requests (1 when not given), with at most -c at a time (jtest -e).
    #[arg(long = "new-conn-rate", value_name = "N", value_parser = units::rate)]
    pub new_conn_rate: Option<f64>,
    /// Requests per client connection before it is replaced (jtest -k; 0 unlimited).
    #[arg(long = "keepalive", value_name = "N", default_value = "0", value_parser = units::count)]
    pub keepalive: usize,
    /// Spread requests over N variants of each URL (jtest -N), asked for by the --vary header
    /// (default user-agent, as jtest -2): a cache must keep N alternates of every URL. The
    /// hit ratio counts each (URL, variant) as its own object.
    #[arg(long = "alternates", value_name = "N", value_parser = alternates)]
    pub alternates: Option<u32>,
    /// Add N distinct header fields to every request, of the names and sizes clients and
    /// proxies add (tracing ids, forwarding, client hints, an API key; ids new each request;
    /// none that changes what a cache stores: no Cookie, Authorization, Accept-* or
    /// User-Agent); past 26 they are X-Extra-N (jtest -n; at most 1000).
    #[arg(long = "extra-headers", value_name = "N", default_value = "0", value_parser = extra_headers)]
    pub extra_headers: usize,
    /// End every generated document's URL with .html, .jpeg or a slash (jtest -4): proxies
    /// choose remap rules and cache policies by it.
    #[arg(long = "request-extension", value_name = "EXT", value_enum)]
    pub request_extension: Option<ExtensionFlag>,
    /// Share of requests sent as reloads (no-cache; jtest -W).
    #[arg(long = "reload-rate", value_name = "P", default_value = "0", value_parser = probability)]
    pub reload_rate: f64,
    /// Share of requests sent with If-Modified-Since.
    #[arg(long = "ims-rate", value_name = "P", default_value = "0", value_parser = probability)]
    pub ims_rate: f64,
    /// Share of responses abandoned mid-body (jtest -g).
    #[arg(long = "client-abort-rate", value_name = "P", default_value = "0", value_parser = probability)]
    pub client_abort_rate: f64,
    /// Check every body against its URL; a wrong one is a content error.
    #[arg(long = "check-content")]
    pub check_content: bool,
    /// Requests per origin connection before the origin closes it (jtest -j; 0 unlimited).
    #[arg(long = "origin-keepalive", value_name = "N", default_value = "0", value_parser = units::count)]
    pub origin_keepalive: usize,
    /// The in-process origin's .html documents are pages embedding N objects (as `strain
    /// origin --embed`) [default: 10 with --fullpage, else 0].
    #[arg(long = "embed", value_name = "N", value_parser = page_refs)]
    pub embed: Option<u32>,
    /// The in-process origin's pages link to N others (as `strain origin --links`)
    /// [default: 5 with --fullpage, else 0].
    #[arg(long = "links", value_name = "N", value_parser = page_refs)]
    pub links: Option<u32>,
    /// Whole pages, asked for as a browser does.
    #[command(flatten)]
    pub pages: super::PageFlags,
    /// How the in-process origin serves documents.
    #[command(flatten)]
    pub documents: DocumentFlags,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// HTTP/1.1, HTTP/2 or HTTP/3, and streams per connection.
    #[command(flatten)]
    pub http: super::HttpFlags,
    /// Length, segments, text, progress, thresholds (none with --find-max), and the result
    /// files (with --find-max: every step and the answer).
    #[command(flatten)]
    pub run: RunFlags,
    /// Search for the highest rate the proxy sustains under --slo (as `strain find-max`), which
    /// chooses each step's rate and length: the flags of a single run are refused with it.
    #[arg(long = "find-max", requires = "slo", conflicts_with_all = FIND_MAX_REFUSES)]
    pub find_max: bool,
    /// The capacity search, with --find-max.
    #[command(flatten)]
    pub search: FindMaxOptions,
}

/// What `proxy --find-max` refuses: a search chooses each step's rate and length, steps are
/// judged by `--slo`, and a step prints a line of the search's table, not a run's report.
const FIND_MAX_REFUSES: [&str; 13] = [
    "duration",
    "rate",
    "stages",
    "segment",
    "segments",
    "start_at",
    "latency",
    "uncorrected",
    "interval",
    "quiet",
    "hdr_log",
    "abort_on_fail",
    "thresholds",
];

/// Parses a probability in [0, 1].
pub fn probability(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if is_probability(p) => Ok(p),
        _ => Err(format!("'{s}' is not a probability between 0 and 1")),
    }
}

/// Whether `p` is in [0, 1] (NaN is not).
pub fn is_probability(p: f64) -> bool {
    (0.0..=1.0).contains(&p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_a_code_or_a_share() {
        let share = |code: &str, p| Some(StatusFlag::Share(code.into(), p));
        let rows: [(&str, Option<StatusFlag>); 7] = [
            ("503", Some(StatusFlag::Http(503))),
            ("199", None),
            ("5:0.1", share("5", 0.1)),
            // The code is the unit's to read.
            ("UNAVAILABLE:0.05", share("UNAVAILABLE", 0.05)),
            ("5:0", None),
            ("5:1.5", None),
            ("5:x", None),
        ];
        for (text, want) in rows {
            assert_eq!(status(text).ok(), want, "{text}");
        }
    }
}
