//! `--trace N` and `--trace-file F`: the exchanges themselves, for finding a problem. The first
//! N exchanges of the run, and the first of each status or error kind not seen before, go to
//! stderr as curl's `-v` shows them (`>` sent, `<` received, frames by name over HTTP/2 and
//! HTTP/3); every exchange goes to the file as a JSON line. The threads share the count and
//! the kinds seen; each keeps what it knows of its own exchanges (when each connection was
//! made, when each response's first byte came). Off, none of this exists: the worker holds no
//! tracer and responses are not kept whole for it.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use crate::config::TraceSpec;
use crate::http::response::Captured;
use crate::net::stream::Made;
use crate::stats::ErrorKind;
use std::time::Instant;

/// Header fields as names and values.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Body bytes a trace shows.
const BODY_SHOWN: usize = 512;

/// How a connection was made, when the exchange opened it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectTiming {
    /// The TCP connect, microseconds.
    pub tcp_us: Option<u64>,
    /// The TLS (or QUIC) handshake after it, microseconds.
    pub handshake_us: Option<u64>,
}

/// What one exchange is, as a protocol's side reports it beside the worker's own knowledge.
pub enum Answer<'a> {
    /// A response: its status and, kept whole, its fields and body.
    Response(u16, Option<&'a Captured>),
    /// A call or stream that ended with `status` and these fields (gRPC's trailers included).
    Ended(u16, &'a Captured),
    /// The request failed.
    Failed(ErrorKind),
    /// An upgrade's answer: the response head as it came (a WebSocket's `101`).
    Upgraded(&'a [u8]),
    /// A message of a unit's (a WebSocket's) that arrived: its first bytes, and its size.
    Message(&'a [u8], u64),
}

impl Answer<'_> {
    /// The status and the fields kept, or the failure.
    fn parts(&self) -> Result<(u16, Option<&Captured>), ErrorKind> {
        match *self {
            Answer::Response(s, c) => Ok((s, c)),
            Answer::Ended(s, c) => Ok((s, Some(c))),
            Answer::Upgraded(head) => Ok((head_status(head), None)),
            // Messages are one kind: the first N of them are shown, not each.
            Answer::Message(..) => Ok((0, None)),
            Answer::Failed(k) => Err(k),
        }
    }
}

/// What the threads share: the count, the kinds seen, the file.
#[derive(Debug)]
pub struct Shared {
    shown: u64,
    seq: AtomicU64,
    printed: AtomicU64,
    seen: Mutex<HashSet<Kind>>,
    file: Option<Mutex<std::io::BufWriter<std::fs::File>>>,
}

/// Why the trace file cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the trace file {path}: {source}")]
pub struct TraceFileError {
    /// The file.
    pub path: String,
    /// Why.
    pub source: std::io::Error,
}

impl Shared {
    /// The run's trace, its file created (emptied) now; `None` when nothing is traced.
    pub fn open(spec: &TraceSpec) -> Result<Option<Arc<Shared>>, TraceFileError> {
        if spec.off() {
            return Ok(None);
        }
        let file = match &spec.file {
            None => None,
            Some(path) => {
                let f = std::fs::File::create(path)
                    .map_err(|source| TraceFileError { path: path.display().to_string(), source })?;
                Some(Mutex::new(std::io::BufWriter::new(f)))
            }
        };
        Ok(Some(Arc::new(Shared {
            shown: spec.shown,
            seq: AtomicU64::new(0),
            printed: AtomicU64::new(0),
            seen: Mutex::new(HashSet::new()),
            file,
        })))
    }

    /// Writes what the file holds so far (the run is over).
    pub fn flush(&self) {
        if let Some(f) = &self.file {
            if let Ok(mut f) = f.lock() {
                let _ = f.flush();
            }
        }
    }

    /// Whether an exchange of `kind` is printed: one of the first N, or the first of its kind.
    /// A thread asks the shared set only for a kind it has not seen itself (`local`), and
    /// stops counting once N are out, so a long traced run takes no lock nor shared counter per
    /// exchange.
    fn print(&self, kind: Kind, local: &mut HashSet<Kind>) -> bool {
        if self.shown == 0 {
            return false;
        }
        let new_kind = local.insert(kind) && self.seen.lock().map(|mut s| s.insert(kind)).unwrap_or(false);
        let first = self.printed.load(Ordering::Relaxed) < self.shown
            && self.printed.fetch_add(1, Ordering::Relaxed) < self.shown;
        first || new_kind
    }
}

/// What makes an exchange's kind: its status, or its failure's kind (above every status).
type Kind = u32;

impl Answer<'_> {
    /// The kind of the exchange this answer ends.
    fn kind(&self) -> Kind {
        match self.parts() {
            Ok((status, _)) => Kind::from(status),
            Err(k) => (1 << 16) | k as Kind,
        }
    }
}

/// A thread's side of the trace.
pub struct Tracer {
    shared: Arc<Shared>,
    thread: usize,
    protocol: &'static str,
    scheme: &'static str,
    /// Per slot: when its response's first byte came, clock microseconds (0: not yet).
    first_us: Vec<u64>,
    /// Per connection: how it was made, until its first exchange shows it.
    made: Vec<Option<ConnectTiming>>,
    /// Per connection: when its connect started.
    dialed: Vec<Option<Instant>>,
    /// The kinds this thread has seen (the shared set is asked only for others).
    seen: HashSet<Kind>,
    /// The request body streams (gRPC streaming calls): HTTP/2 sends no Content-Length.
    streamed: bool,
}

/// One exchange as the worker knows it.
pub struct Exchange<'a> {
    /// The slot.
    pub slot: usize,
    /// Its connection.
    pub link: usize,
    /// The request as HTTP/1 bytes.
    pub request: &'a [u8],
    /// When it was sent, and now, clock microseconds.
    pub sent_us: u64,
    /// Now.
    pub now_us: u64,
    /// The recorded line it replays, if it does.
    pub recorded: Option<&'a str>,
}

impl Tracer {
    /// Thread `thread`'s tracer for `slots` slots on `links` connections.
    pub fn new(
        shared: Arc<Shared>,
        thread: usize,
        protocol: &'static str,
        https: bool,
        slots: usize,
        links: usize,
    ) -> Tracer {
        Tracer {
            shared,
            thread,
            protocol,
            scheme: if https { "https" } else { "http" },
            first_us: vec![0; slots],
            made: vec![None; links],
            dialed: vec![None; links],
            seen: HashSet::new(),
            streamed: false,
        }
    }

    /// Requests whose body streams, as gRPC's streaming calls do: shown without the
    /// Content-Length of their first message, which the HTTP/2 transport drops.
    pub fn streamed(mut self) -> Tracer {
        self.streamed = true;
        self
    }

    /// Connection `link` starts its connect.
    pub fn dialing(&mut self, link: usize) {
        if let Some(d) = self.dialed.get_mut(link) {
            *d = Some(Instant::now());
        }
    }

    /// Connection `link` was made, as `made` says.
    pub fn connected(&mut self, link: usize, made: Made) {
        let now = Instant::now();
        let us = |d: std::time::Duration| d.as_micros() as u64;
        let dialed = self.dialed.get(link).copied().flatten();
        let timing = match made {
            Made::Quic(took) => ConnectTiming { tcp_us: None, handshake_us: Some(took) },
            Made::Tcp(tls) => {
                let tcp_end = tls.unwrap_or(now);
                ConnectTiming {
                    tcp_us: dialed.map(|d| us(tcp_end.saturating_duration_since(d))),
                    handshake_us: tls.map(|t| us(now.saturating_duration_since(t))),
                }
            }
        };
        if let Some(m) = self.made.get_mut(link) {
            *m = Some(timing);
        }
    }

    /// Slot `i`'s response began at `now_us`.
    pub fn first_byte(&mut self, i: usize, now_us: u64) {
        if let Some(f) = self.first_us.get_mut(i) {
            if *f == 0 {
                *f = now_us.max(1);
            }
        }
    }

    /// Slot `i` sends a new request: its first byte is still to come.
    pub fn sending(&mut self, i: usize) {
        if let Some(f) = self.first_us.get_mut(i) {
            *f = 0;
        }
    }

    /// An exchange ended as `answer`: printed when it is one of the first or of a new kind,
    /// written to the file when there is one.
    pub fn ended(&mut self, ex: &Exchange, answer: Answer) {
        let print = self.shared.print(answer.kind(), &mut self.seen);
        if !print && self.shared.file.is_none() {
            return;
        }
        let seq = self.shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let made = self.made.get_mut(ex.link).and_then(Option::take);
        let first = self.first_us.get(ex.slot).copied().filter(|&f| f > 0);
        // An upgrade was not sent as the slot's request: its times are the connection's.
        let timed = !matches!(answer, Answer::Upgraded(_));
        let t = Timing {
            made,
            first_byte_us: first.filter(|_| timed).map(|f| f.saturating_sub(ex.sent_us)),
            last_byte_us: (timed && answer.parts().is_ok()).then(|| ex.now_us.saturating_sub(ex.sent_us)),
        };
        if print {
            let text = self.text(seq, ex, &answer, &t);
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
        if let Some(f) = &self.shared.file {
            let line = self.json(seq, ex, &answer, &t);
            if let Ok(mut f) = f.lock() {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }

    /// The exchange as curl's `-v` shows one.
    fn text(&self, seq: u64, ex: &Exchange, answer: &Answer, t: &Timing) -> String {
        let mut out =
            format!("strain: trace #{seq} (thread {}, connection {}, {})\n", self.thread, ex.link, self.protocol);
        if let Some(line) = ex.recorded {
            let _ = writeln!(out, "  recorded: {}", escape(line.as_bytes(), 1_000));
        }
        if let Some(m) = t.made {
            let _ = writeln!(out, "  {}", m.describe(self.protocol));
        }
        if let Answer::Message(shown, bytes) = answer {
            let _ = writeln!(out, "< message, {bytes} bytes: {}", escape(shown, usize::MAX));
            let _ = writeln!(out, "  {}", t.describe());
            return out;
        }
        let framed = matches!(self.protocol, "h2" | "h2c" | "h3");
        match (framed, self.fields(ex.request)) {
            (true, Some((fields, body))) => {
                let end = if body == 0 { " (END_STREAM)" } else { "" };
                let _ = writeln!(out, "> HEADERS{end}");
                for (n, v) in &fields {
                    let _ = writeln!(out, ">   {}: {}", escape(n, 200), escape(v, 2_000));
                }
                if body > 0 {
                    let _ = writeln!(out, "> DATA {body} bytes (END_STREAM)");
                }
            }
            _ => {
                let head_end = find_head_end(ex.request);
                let head = &ex.request[..head_end];
                for line in head.strip_suffix(b"\r\n\r\n").unwrap_or(head).split(|&b| b == b'\n') {
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    let _ = writeln!(out, "> {}", escape(line, 2_000));
                }
                let body = ex.request.len() - head_end;
                if body > 0 {
                    let _ = writeln!(out, "> [{body} body bytes]");
                }
            }
        }
        match answer.parts() {
            Err(kind) => {
                let _ = writeln!(out, "  failed: {}", kind.name());
            }
            Ok(_) if matches!(answer, Answer::Upgraded(_)) => {
                let Answer::Upgraded(head) = answer else { unreachable!() };
                for line in head.strip_suffix(b"\r\n\r\n").unwrap_or(head).split(|&b| b == b'\n') {
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    let _ = writeln!(out, "< {}", escape(line, 2_000));
                }
            }
            Ok((status, captured)) => {
                let has_status = captured.is_some_and(|c| c.headers.iter().any(|(n, _)| n == b":status"));
                if framed {
                    let _ = writeln!(out, "< HEADERS");
                    if !has_status {
                        let _ = writeln!(out, "<   :status: {status}");
                    }
                } else {
                    let _ = writeln!(out, "< HTTP/1.1 {status}");
                }
                if let Some(c) = captured {
                    for (n, v) in &c.headers {
                        let sep = if framed { "<   " } else { "< " };
                        let _ = writeln!(out, "{sep}{}: {}", escape(n, 200), escape(v, 2_000));
                    }
                    if framed && !c.body.is_empty() {
                        let _ = writeln!(out, "< DATA {} bytes", c.body.len());
                    } else if !framed {
                        let _ = writeln!(out, "<");
                    }
                    if !c.body.is_empty() {
                        let shown = c.body.len().min(BODY_SHOWN);
                        let _ = writeln!(out, "< {}", escape(&c.body[..shown], usize::MAX));
                        if shown < c.body.len() {
                            let _ = writeln!(out, "  [{} of {} body bytes shown]", shown, c.body.len());
                        }
                    }
                }
            }
        }
        let _ = writeln!(out, "  {}", t.describe());
        out
    }

    /// The exchange as one JSON line.
    fn json(&self, seq: u64, ex: &Exchange, answer: &Answer, t: &Timing) -> String {
        let pairs = |fields: &[(Vec<u8>, Vec<u8>)]| {
            fields.iter().map(|(n, v)| serde_json::json!([text(n), text(v)])).collect::<Vec<_>>()
        };
        let head_end = find_head_end(ex.request);
        let mut doc = serde_json::json!({
            "seq": seq,
            "thread": self.thread,
            "connection": ex.link,
            "protocol": self.protocol,
            "request": text(&ex.request[..head_end]),
            "request_body_bytes": ex.request.len() - head_end,
            "connect_us": t.made.and_then(|m| m.tcp_us),
            "handshake_us": t.made.and_then(|m| m.handshake_us),
            "first_byte_us": t.first_byte_us,
            "last_byte_us": t.last_byte_us,
        });
        if let Some(line) = ex.recorded {
            doc["recorded"] = serde_json::json!(line);
        }
        match answer.parts() {
            Err(kind) => doc["error"] = serde_json::json!(kind.name()),
            Ok((status, captured)) => {
                if status != 0 {
                    doc["status"] = serde_json::json!(status);
                }
                match answer {
                    Answer::Upgraded(head) => doc["response"] = serde_json::json!(text(head)),
                    Answer::Message(shown, bytes) => {
                        doc["message_bytes"] = serde_json::json!(bytes);
                        doc["message"] = serde_json::json!(text(shown));
                    }
                    _ => {}
                }
                if let Some(c) = captured {
                    doc["headers"] = serde_json::json!(pairs(&c.headers));
                    doc["body_bytes"] = serde_json::json!(c.body.len());
                    doc["body"] = serde_json::json!(text(&c.body[..c.body.len().min(BODY_SHOWN)]));
                }
            }
        }
        let mut line = doc.to_string();
        line.push('\n');
        line
    }

    /// The request as HTTP/2 and HTTP/3 send it: its fields, and its body's length.
    fn fields(&self, request: &[u8]) -> Option<(Fields, usize)> {
        let mut r = crate::http::fields::from_http1(request, self.scheme, "").ok()?;
        if self.streamed {
            r.fields.retain(|(name, _)| name != b"content-length");
        }
        let body = r.body.as_ref().map_or(0, Vec::len);
        Some((r.fields, body))
    }
}

/// The timings of one exchange.
struct Timing {
    made: Option<ConnectTiming>,
    first_byte_us: Option<u64>,
    last_byte_us: Option<u64>,
}

impl Timing {
    fn describe(&self) -> String {
        let ms = |us: Option<u64>| us.map_or("-".to_string(), |u| format!("{:.3} ms", u as f64 / 1000.0));
        format!("first byte {}, last byte {} (from the send)", ms(self.first_byte_us), ms(self.last_byte_us))
    }
}

impl ConnectTiming {
    fn describe(&self, protocol: &str) -> String {
        let ms = |us: u64| format!("{:.3} ms", us as f64 / 1000.0);
        match (self.tcp_us, self.handshake_us) {
            (Some(t), Some(h)) => format!("new connection: connect {}, TLS {}", ms(t), ms(h)),
            (Some(t), None) => format!("new connection: connect {}", ms(t)),
            (None, Some(h)) if protocol == "h3" => format!("new connection: QUIC handshake {}", ms(h)),
            (None, Some(h)) => format!("new connection: handshake {}", ms(h)),
            (None, None) => "new connection".to_string(),
        }
    }
}

/// The status of a raw HTTP/1 response head (0 when it has none).
fn head_status(head: &[u8]) -> u16 {
    head.get(9..12).and_then(|d| std::str::from_utf8(d).ok()).and_then(|d| d.parse().ok()).unwrap_or(0)
}

/// Where the request's head ends (its body starts).
fn find_head_end(request: &[u8]) -> usize {
    request.windows(4).position(|w| w == b"\r\n\r\n").map_or(request.len(), |p| p + 4)
}

/// `bytes` for a JSON string: as they are when they are UTF-8 (JSON escapes them itself),
/// else [`escape`]d.
fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => escape(bytes, usize::MAX),
    }
}

/// `bytes` as text: printable ASCII as it is, `\r` `\n` `\t` `\\` escaped, the rest `\xNN`;
/// at most `max` bytes, then `...`.
pub fn escape(bytes: &[u8], max: usize) -> String {
    let mut out = String::with_capacity(bytes.len().min(max));
    if crate::http::escape_into(&mut out, bytes, max, false) {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_control_bytes_are_escaped() {
        assert_eq!(escape(b"ok\r\n\x00\xff\\", usize::MAX), "ok\\r\\n\\x00\\xff\\\\");
        assert_eq!(escape(b"abcdef", 3), "abc...");
    }

    #[test]
    fn the_first_n_and_each_new_kind_are_printed() {
        let shared = Shared::open(&TraceSpec { shown: 2, file: None }).unwrap().unwrap();
        let timeout = Answer::Failed(ErrorKind::Timeout).kind();
        let mut local = HashSet::new();
        let printed: Vec<bool> =
            [200, 200, 200, 404, 404, timeout, 200].iter().map(|&k| shared.print(k, &mut local)).collect();
        assert_eq!(printed, [true, true, false, true, false, true, false]);
        assert!(Shared::open(&TraceSpec::default()).unwrap().is_none());
    }
}
