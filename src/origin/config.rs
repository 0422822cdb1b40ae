//! The origin's options: what it serves and how (fixed body, documents and their cache headers,
//! whole pages, delays, a modelled service capacity, byte rate, aborts, keep-alive limit,
//! timeouts, TLS, HTTP/3, the units served beside HTTP), with defaults from
//! [`crate::defaults`].

use std::str::FromStr;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::{Recording, TlsSource, BODY_PATTERN};

/// Options of the built-in origin server.
#[derive(Debug, Clone)]
pub struct OriginConfig {
    /// Size of the fixed response body (paths that are not documents), in bytes.
    pub body_size: usize,
    /// Event-loop threads; 0 is taken as 1.
    pub threads: usize,
    /// Status code of the fixed response (200 to 999); documents are always 200 or 304.
    pub status: u16,
    /// When, after the origin starts, the server stops answering; `None` never.
    pub stall_at: Option<Duration>,
    /// How long it answers nothing from `stall_at`; zero is no stall.
    pub stall_for: Duration,
    /// Freshness lifetime sent with documents, `Cache-Control: max-age=<seconds>`.
    pub max_age: Duration,
    /// Send documents with `Cache-Control: no-cache` instead of a `max-age`.
    pub no_cache: bool,
    /// Probability (0 to 1) that a document request with `If-Modified-Since` or
    /// `If-None-Match` gets `304 Not Modified` rather than the document (jtest -I).
    pub ims_not_modified: f64,
    /// Wait before the first byte of every response (jtest -w); zero is none.
    pub delay: Duration,
    /// A capacity of N workers each holding a request for a service time; `None` answers at
    /// once. With a delay too, an answer waits for whichever ends later.
    pub service: Option<Service>,
    /// Most bytes per second written on each connection (jtest -r); `None` is unlimited,
    /// `Some(0)` is refused.
    pub byte_rate: Option<u64>,
    /// Probability (0 to 1) that a document body is cut at a random point and the connection
    /// closed (jtest -G); over HTTP/2, the stream is reset instead.
    pub abort_rate: f64,
    /// Responses per connection; the last one says `Connection: close` and the server closes
    /// after it (jtest -j); over HTTP/2, a GOAWAY follows the last one. 0 is unlimited.
    pub keepalive: u64,
    /// `Content-Type` of documents.
    pub content_type: ContentType,
    /// Documents vary on this request header (jtest -2): answers say `Vary`, and each body is
    /// made for the header's value (see [`crate::workload::alternates`]).
    pub vary: Option<crate::workload::alternates::Vary>,
    /// Whole pages (jtest -l): what a document asked for as `.html` names; none by default.
    pub pages: Pages,
    /// Seed of the random choices (which responses are 304 or cut, and where).
    pub seed: u64,
    /// Longest a request head may take to arrive once it has started; the connection is
    /// closed when it runs out (slowloris clients). `None` waits forever.
    pub header_timeout: Option<Duration>,
    /// Longest the client may leave queued output untaken before the connection is closed
    /// (a client that asks and never reads). `None` waits forever.
    pub send_timeout: Option<Duration>,
    /// Serve HTTPS (ALPN `h2` and `http/1.1`) with this certificate; `None` serves plain HTTP.
    /// (Boxed: the config travels by value, and this is rarely set.)
    pub tls: Option<Box<TlsSource>>,
    /// Also serve HTTP/3 (QUIC, ALPN `h3`) on the UDP port of the TCP listener's number, with
    /// the same certificate, and advertise it with `Alt-Svc`; needs [`OriginConfig::tls`].
    pub http3: bool,
    /// Answer every request (but `/_strain/stats`) with its recorded response, or `404` when
    /// none matches; the fixed response and documents are not served.
    pub replay: Option<Arc<Recording>>,
    /// The units served beside HTTP (`--ws`: a GET asking to upgrade is answered `101` and
    /// its messages echoed); a request none takes is answered as any other.
    pub units: Vec<Arc<dyn super::unit::Unit>>,
}

impl Default for OriginConfig {
    fn default() -> Self {
        let threads = thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        OriginConfig {
            body_size: BODY_PATTERN.len(),
            threads,
            status: crate::defaults::ORIGIN_STATUS,
            stall_at: None,
            stall_for: Duration::ZERO,
            max_age: crate::defaults::MAX_AGE,
            no_cache: false,
            ims_not_modified: crate::defaults::IMS_NOT_MODIFIED,
            delay: Duration::ZERO,
            service: None,
            byte_rate: None,
            abort_rate: 0.0,
            keepalive: 0,
            content_type: ContentType::Text,
            vary: None,
            pages: Pages::default(),
            seed: 0,
            header_timeout: Some(crate::defaults::HEADER_TIMEOUT),
            send_timeout: Some(crate::defaults::SEND_TIMEOUT),
            tls: None,
            http3: false,
            replay: None,
            units: Vec::new(),
        }
    }
}

/// Whole pages (jtest -l, -F): with either count above 0, a document asked for as
/// `/d/ID/LEN.html` is an HTML page ([`crate::workload::page::Page`]) that embeds `embed` objects
/// and links to `links` pages, and one asked for as `.jpeg` is sent as `image/jpeg`; other
/// documents are as without. Each count is at most [`crate::workload::page::MAX_REFS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pages {
    /// Objects each page embeds (`<img src="/d/ID/LEN.jpeg">`).
    pub embed: u32,
    /// Pages each page links to (`<a href="/d/ID/LEN.html">`).
    pub links: u32,
}

impl Pages {
    /// Pages are served: either count is above 0.
    pub fn on(self) -> bool {
        self.embed > 0 || self.links > 0
    }
}

/// A modelled server capacity: `workers` requests served at a time, each for a service time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service {
    /// The service time, or its mean; above zero.
    pub time: Duration,
    /// Requests served at once; at least 1. (`u32` keeps the config small enough to travel by
    /// value inside `run::OriginPlacement`.)
    pub workers: u32,
    /// How service times vary.
    pub dist: ServiceDist,
}

/// The distribution of service times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ServiceDist {
    /// Every request takes exactly the service time.
    #[default]
    Fixed,
    /// Exponential with the service time as its mean (an M/M/N server under Poisson arrivals).
    Exp,
}

/// The media type of documents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ContentType {
    /// `text/html`.
    Html,
    /// `image/jpeg`.
    Jpeg,
    /// `text/plain`.
    #[default]
    Text,
}

impl FromStr for ContentType {
    type Err = String;

    /// Reads `html`, `jpeg` or `text`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "html" => Ok(ContentType::Html),
            "jpeg" => Ok(ContentType::Jpeg),
            "text" => Ok(ContentType::Text),
            _ => Err(format!("'{s}' is not a content type (html, jpeg or text)")),
        }
    }
}
