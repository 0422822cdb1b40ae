//! Server-Sent Events (`text/event-stream`, the HTML standard's section 9.2) as a unit: its
//! wire (the event stream's reader, [`event`]), its client transport, its counts, its origin
//! stream and its command line. The questions are WebSocket listen-only's: how many held
//! streams, how fast events arrive, the time to the first event and between events.

pub mod cli;
pub mod client;
pub mod counts;
pub mod event;
pub mod flags;
pub mod origin;

use crate::config::{Paces, Speech};
use crate::engine::Carried;

/// `strain sse`, and `strain origin --sse`.
pub static COMMAND: crate::cli::unit::Command<flags::SseFlags, flags::SseOriginFlags> = crate::cli::unit::Command::new(
    "sse",
    "Load a Server-Sent Events stream: -c held streams (GET, or -X POST --body), each event's latency the gap since the one before it (the first: since the request), streams started again after retry: with Last-Event-ID",
);

/// Its section of a result.
pub const KINDS: &[crate::stats::section::Kind] = &[crate::stats::section::Kind::of::<counts::SseCounts>()];

/// The protocol's name in results, over TCP and TLS.
pub const SPEECH: Speech = Speech { plain: "sse", tls: "sse", paces: Paces::Streams };

/// A Server-Sent Events load, settled before the threads start.
#[derive(Debug, Clone)]
pub struct SseLoad {
    /// The request line's method (`GET`, or `POST` for a completion).
    pub method: String,
    /// The request target.
    pub path: String,
    /// The `Host` header's value.
    pub host: String,
    /// Headers added to each request (`-H`).
    pub headers: Vec<(String, String)>,
    /// The request's body, if any.
    pub body: Option<Vec<u8>>,
    /// A stream the server ends is started again (`--no-reconnect`: it is not).
    pub reconnect: bool,
    /// Streams started in all (`-n`); `None`: no limit.
    pub streams: Option<u64>,
}

impl SseLoad {
    /// The request that starts a stream; `last_id` when it resumes one.
    pub fn request(&self, last_id: &[u8]) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\nHost: {}\r\n", self.method, self.path, self.host).into_bytes();
        let has = |name: &str| self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        if !has("accept") {
            out.extend_from_slice(b"Accept: text/event-stream\r\n");
        }
        if !has("cache-control") {
            out.extend_from_slice(b"Cache-Control: no-cache\r\n");
        }
        for (name, value) in &self.headers {
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        if !last_id.is_empty() {
            out.extend_from_slice(b"Last-Event-ID: ");
            out.extend_from_slice(last_id);
            out.extend_from_slice(b"\r\n");
        }
        if let Some(body) = &self.body {
            if !has("content-type") {
                out.extend_from_slice(b"Content-Type: application/json\r\n");
            }
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            out.extend_from_slice(body);
        } else {
            out.extend_from_slice(b"\r\n");
        }
        out
    }
}

impl Carried for SseLoad {
    type Transport = client::Sse;

    fn transport(load: std::sync::Arc<SseLoad>, conns: usize, index: usize, threads: usize) -> client::Sse {
        client::Sse::new(conns, load, index, threads)
    }
}
