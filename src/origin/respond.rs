//! What the server answers, decided once at start: the pre-rendered fixed responses, and the
//! rules and header rendering for documents (`/d/<id>/<len>`, see [`crate::workload::doc`]).
//!
//! Fixed responses are rendered whole at start, so serving one is queueing a slice. Document
//! heads vary with the document and are rendered per request straight into the connection's
//! output buffer, with hand-written number and date formatting instead of `format!` (the same
//! dates as [`Doc::last_modified`], without its `String`), so a document costs no allocation
//! either.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::recording::{Recording, UNMATCHED_BODY};
use super::service::Pool;
use super::tls::Pem;
use super::{ContentType, OriginConfig, OriginError, Pages, Reply, BODY_PATTERN};
use crate::http::request_head::Persist;
use crate::rng::Rng;
use crate::workload::doc::{Doc, Extension};
use crate::workload::page::{Document, Page, MAX_REFS};

/// How long a client may remember that HTTP/3 is served (`Alt-Svc`'s `ma`): a day, the
/// RFC 7838 default and what most servers send.
const ALT_SVC_MAX_AGE_S: u32 = 86_400;
/// `Connection` header lines, indexed by [`Persist`].
const CONNECTION: [&[u8]; 3] = [b"", b"Connection: keep-alive\r\n", b"Connection: close\r\n"];

/// Everything that shapes responses, fixed for the server's life.
#[derive(Debug)]
pub(super) struct Site {
    /// Answers to every path that is not a document.
    pub(super) fixed: Responses,
    /// Fixed responses are `200 OK` (and counted as such).
    pub(super) fixed_ok: bool,
    /// The fixed response over HTTP/2.
    pub(super) h2_fixed: H2Fixed,
    /// The whole `Cache-Control` line of document responses.
    cache_control: Vec<u8>,
    content_type: &'static [u8],
    pub(super) ims_not_modified: f64,
    pub(super) abort_rate: f64,
    /// Responses per connection; 0 is unlimited.
    pub(super) keepalive: u64,
    /// Wait before each response; `None` when zero.
    pub(super) delay: Option<Duration>,
    /// The workers every request of the test waits for; `None` without a service time.
    service: Option<Pool>,
    /// Bytes per second per connection; `None` is unlimited.
    pub(super) byte_rate: Option<u64>,
    /// See [`OriginConfig::header_timeout`]; zero is taken as none.
    pub(super) header_timeout: Option<Duration>,
    /// See [`OriginConfig::send_timeout`]; zero is taken as none.
    pub(super) send_timeout: Option<Duration>,
    /// Connections speak TLS with this configuration.
    pub(super) tls: Option<super::tls::ServerTls>,
    /// The same certificate and key as PEM, for HTTP/3.
    pub(super) pem: Option<Pem>,
    /// The `Alt-Svc` line that advertises HTTP/3, or nothing (see [`Site::advertise_h3`]).
    alt_svc: Vec<u8>,
    /// With `--replay`: every request but the counters' is answered from this.
    pub(super) recording: Option<Arc<Recording>>,
    /// The units served beside HTTP (WebSocket's echo), each with where its counters start.
    pub(super) units: Vec<Served>,
    /// Documents vary on this request header.
    pub(super) vary: Option<crate::workload::alternates::Vary>,
    /// Whole pages, when they are on.
    pub(super) pages: Option<Pages>,
}

impl Site {
    pub(super) fn new(config: &OriginConfig) -> Result<Self, OriginError> {
        for (name, p) in [("ims_not_modified", config.ims_not_modified), ("abort_rate", config.abort_rate)] {
            // Written so that NaN fails too.
            if !(0.0..=1.0).contains(&p) {
                return Err(OriginError::Invalid(format!("{name} must be between 0 and 1, not {p}")));
            }
        }
        if config.byte_rate == Some(0) {
            return Err(OriginError::Invalid("byte_rate must be above 0 (None is unlimited)".into()));
        }
        for (name, n) in [("embed", config.pages.embed), ("links", config.pages.links)] {
            if n > MAX_REFS {
                return Err(OriginError::Invalid(format!("{name} must be at most {MAX_REFS} per page, not {n}")));
            }
        }
        let mut cache_control = if config.no_cache {
            b"Cache-Control: no-cache\r\n".to_vec()
        } else {
            format!("Cache-Control: max-age={}\r\n", config.max_age.as_secs()).into_bytes()
        };
        if let Some(vary) = config.vary {
            cache_control.extend_from_slice(format!("Vary: {}\r\n", vary.name()).as_bytes());
        }
        let fixed = Responses::new(config, b"")?;
        let h2_fixed = fixed.h2();
        let (tls, pem) = config.tls.as_deref().map(super::tls::server_config).transpose()?.unzip();
        Ok(Site {
            fixed,
            h2_fixed,
            // With a recording there is no fixed response: recorded 200s count themselves.
            fixed_ok: config.status == 200 && config.replay.is_none(),
            cache_control,
            content_type: config.content_type.mime().as_bytes(),
            ims_not_modified: config.ims_not_modified,
            abort_rate: config.abort_rate,
            keepalive: config.keepalive,
            delay: (!config.delay.is_zero()).then_some(config.delay),
            service: config.service.as_ref().map(Pool::new).transpose()?,
            byte_rate: config.byte_rate,
            header_timeout: config.header_timeout.filter(|t| !t.is_zero()),
            send_timeout: config.send_timeout.filter(|t| !t.is_zero()),
            tls,
            pem,
            alt_svc: Vec::new(),
            recording: config.replay.clone(),
            units: units(config)?,
            vary: config.vary,
            pages: config.pages.on().then_some(config.pages),
        })
    }

    /// Makes every response say that HTTP/3 is served on UDP `port` of the same host (RFC 7838),
    /// so a browser or curl tries it; the fixed responses are rendered again with the line.
    pub(super) fn advertise_h3(&mut self, port: u16, config: &OriginConfig) -> Result<(), OriginError> {
        self.alt_svc = format!("Alt-Svc: h3=\":{port}\"; ma={ALT_SVC_MAX_AGE_S}\r\n").into_bytes();
        self.fixed = Responses::new(config, &self.alt_svc)?;
        self.h2_fixed = self.fixed.h2();
        Ok(())
    }

    /// Some output may have to wait for the clock, so connections need timers.
    pub(super) fn timed(&self) -> bool {
        // A unit's driver may wake by the clock (an event stream's next event).
        self.answers_wait() || self.byte_rate.is_some() || self.units.iter().any(|(u, _)| u.timed())
    }

    /// Answers wait after their request arrives (a delay or a service time), so arrivals are
    /// timed.
    pub(super) fn answers_wait(&self) -> bool {
        self.delay.is_some() || self.service.is_some()
    }

    /// When the answer to a request of the test that arrived at `arrived` may start.
    pub(super) fn due(&self, arrived: Instant, rng: &mut Rng) -> Instant {
        let delayed = self.delay.and_then(|d| arrived.checked_add(d)).unwrap_or(arrived);
        match &self.service {
            Some(pool) => pool.admit(arrived, rng).max(delayed),
            None => delayed,
        }
    }

    /// Appends the head of a document response: `200` with the body's length and type, or
    /// `304` with only the validators and caching rules.
    pub(super) fn doc_head(&self, out: &mut Vec<u8>, not_modified: bool, document: Document, persist: Persist) {
        if not_modified {
            out.extend_from_slice(b"HTTP/1.1 304 Not Modified\r\n");
        } else {
            out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: ");
            crate::http::push_u64(out, document.len());
            out.extend_from_slice(b"\r\nContent-Type: ");
            out.extend_from_slice(match document {
                Document::Plain(_) => self.content_type,
                Document::Object(_) => ContentType::Jpeg.mime().as_bytes(),
                Document::Page(_) => ContentType::Html.mime().as_bytes(),
            });
            out.extend_from_slice(b"\r\n");
        }
        let doc = document.doc();
        out.extend_from_slice(&self.cache_control);
        out.extend_from_slice(b"Last-Modified: ");
        crate::http::date::write(doc.last_modified_secs(), out);
        out.extend_from_slice(b"\r\nETag: \"");
        crate::http::push_u64(out, doc.id);
        out.push(b'-');
        crate::http::push_u64(out, doc.len);
        out.extend_from_slice(b"\"\r\n");
        out.extend_from_slice(&self.alt_svc);
        out.extend_from_slice(CONNECTION[persist as usize]);
        out.extend_from_slice(b"\r\n");
    }

    /// Appends the head of the `/_strain/stats` answer, a JSON body of `len` bytes.
    pub(super) fn stats_head(&self, out: &mut Vec<u8>, len: usize, persist: Persist) {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: ");
        crate::http::push_u64(out, len as u64);
        out.extend_from_slice(b"\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n");
        out.extend_from_slice(&self.alt_svc);
        out.extend_from_slice(CONNECTION[persist as usize]);
        out.extend_from_slice(b"\r\n");
    }
}

impl Site {
    /// Appends the head of recorded answer `index` (see [`Recording`]).
    pub(super) fn recorded_head(&self, out: &mut Vec<u8>, index: u32, persist: Persist) {
        if let Some(recording) = &self.recording {
            out.extend_from_slice(recording.head(index));
        }
        self.end_head(out, persist);
    }

    /// Appends the head of the `404` to a request no record matches.
    pub(super) fn unmatched_head(&self, out: &mut Vec<u8>, persist: Persist) {
        out.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nContent-Length: ");
        crate::http::push_u64(out, UNMATCHED_BODY.len() as u64);
        out.extend_from_slice(b"\r\nContent-Type: text/plain\r\nCache-Control: no-store\r\n");
        self.end_head(out, persist);
    }

    /// The fields every per-request head ends with, and the blank line.
    fn end_head(&self, out: &mut Vec<u8>, persist: Persist) {
        out.extend_from_slice(&self.alt_svc);
        out.extend_from_slice(CONNECTION[persist as usize]);
        out.extend_from_slice(b"\r\n");
    }
}

impl ContentType {
    /// The media type sent in `Content-Type`.
    pub fn mime(self) -> &'static str {
        match self {
            ContentType::Html => "text/html",
            ContentType::Jpeg => "image/jpeg",
            ContentType::Text => "text/plain",
        }
    }
}

/// The fixed response as HTTP/2 fields (converted once) and a body every stream shares.
#[derive(Debug)]
pub(super) struct H2Fixed {
    pub(super) fields: Vec<(Vec<u8>, Vec<u8>)>,
    pub(super) body: Arc<[u8]>,
}

/// Every fixed response the server can send, rendered once at start.
#[derive(Debug)]
pub(super) struct Responses {
    /// Indexed by `Persist`.
    full: [Vec<u8>; 3],
    /// Length of the head within each of `full`.
    head_len: [usize; 3],
    pub(super) bad_request: Vec<u8>,
}

impl Responses {
    /// The responses `config` asks for, each with `extra` (whole header lines) in its head.
    fn new(config: &OriginConfig, extra: &[u8]) -> Result<Self, OriginError> {
        if !(200..=999).contains(&config.status) {
            return Err(OriginError::Status(config.status));
        }
        // 204 and 304 never carry a body; sending one would desynchronise every client.
        let bodiless = matches!(config.status, 204 | 304);
        let body: Vec<u8> =
            if bodiless { Vec::new() } else { BODY_PATTERN.iter().copied().cycle().take(config.body_size).collect() };
        let render = |persist: Persist| {
            let mut head =
                format!("HTTP/1.1 {} {}\r\n", config.status, crate::http::response::reason(config.status)).into_bytes();
            if !bodiless {
                head.extend_from_slice(
                    format!("Content-Length: {}\r\nContent-Type: text/plain\r\n", body.len()).as_bytes(),
                );
            }
            head.extend_from_slice(extra);
            head.extend_from_slice(CONNECTION[persist as usize]);
            head.extend_from_slice(b"\r\n");
            let head_len = head.len();
            let mut full = head;
            full.extend_from_slice(&body);
            (full, head_len)
        };
        let (keep, keep_len) = render(Persist::KeepAlive);
        let (keep10, keep10_len) = render(Persist::KeepAlive10);
        let (close, close_len) = render(Persist::Close);
        let bad_request = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec();
        Ok(Responses { full: [keep, keep10, close], head_len: [keep_len, keep10_len, close_len], bad_request })
    }

    /// The keep-alive response's head as HTTP/2 fields, and its body.
    fn h2(&self) -> H2Fixed {
        let (full, head_len) = (&self.full[Persist::KeepAlive as usize], self.head_len[Persist::KeepAlive as usize]);
        let mut head = full[..head_len].to_vec();
        let fields = crate::http::fields::response_fields(&mut head)
            .into_iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        H2Fixed { fields, body: full[head_len..].into() }
    }

    pub(super) fn get(&self, reply: Reply) -> &[u8] {
        let i = reply.persist as usize;
        let full = &self.full[i];
        if reply.head_only {
            &full[..self.head_len[i]]
        } else {
            full
        }
    }
}

/// A document's path as its body embeds it: the request target without a query, and without
/// the scheme and authority of an absolute-form target (`http://host/d/1/2`).
pub(super) fn doc_path(target: &str) -> &str {
    let path = crate::http::request::origin_form(target);
    // A plain byte loop: request paths are short, and `str::find` costs more to set up than
    // this costs to run on the benchmark's `/`.
    match path.bytes().position(|b| b == b'?') {
        Some(i) => &path[..i],
        None => path,
    }
}

/// The document a path names, and with `pages` on, how it is served; checked cheaply first:
/// most non-document paths (`/`) do not end in a digit or a document's extension, so the
/// fixed-response fast path does not pay for a full parse, and without pages a document pays
/// for nothing more.
pub(super) fn document(path: &str, pages: Option<Pages>) -> Option<Document> {
    let last = *path.as_bytes().last()?;
    if !(last.is_ascii_digit() || (path.len() > 4 && matches!(last, b'l' | b'g' | b'/'))) {
        return None;
    }
    let doc = Doc::parse(path)?;
    Some(match pages {
        None => Document::Plain(doc),
        Some(pages) => match Extension::of(path) {
            Extension::Html => Document::Page(Page::new(doc, pages.embed, pages.links)),
            Extension::Jpeg => Document::Object(doc),
            Extension::None | Extension::Slash => Document::Plain(doc),
        },
    })
}

/// The units `config` serves, each with where its counters start; refused if they keep more
/// counters than there are.
fn units(config: &OriginConfig) -> Result<Vec<Served>, OriginError> {
    let mut base = 0;
    let mut out = Vec::new();
    for (index, u) in config.units.iter().enumerate() {
        out.push((u.clone(), super::unit::Place { base, index }));
        base += u.counters().len();
    }
    if base > super::live::UNIT_COUNTERS {
        return Err(OriginError::Invalid(format!(
            "the units served keep {base} counters, at most {}",
            super::live::UNIT_COUNTERS
        )));
    }
    Ok(out)
}

/// A unit served, and its place (where its counters start).
pub(super) type Served = (std::sync::Arc<dyn super::unit::Unit>, super::unit::Place);
