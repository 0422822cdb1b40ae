//! A gRPC load's calls, settled before the threads start: each call is an HTTP/2 POST to the
//! method's path whose body is one framed message, so every mode strain has for HTTP/2
//! (closed loop, `-R`, stages, `-n`, `-m`, segments) carries gRPC unchanged. A call's request is
//! kept in strain's HTTP/1 form, as every other request is, and made HTTP/2 fields by the
//! transport; a message that never changes is encoded, framed and rendered once.

use prost_reflect::MessageDescriptor;

use super::message::Messages;
use super::schema::{Method, MethodKind};
use super::wire;
use crate::http::request::Header;

/// The fields every gRPC request carries besides the user's metadata.
pub fn protocol_headers() -> Vec<Header> {
    [
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("user-agent", concat!("strain/", env!("CARGO_PKG_VERSION"))),
    ]
    .into_iter()
    .map(|(name, value)| Header { name: name.into(), value: value.into() })
    .collect()
}

/// How a call whose requests stream (client streaming, bidi) sends its messages: on an
/// absolute schedule from the call's start, each reply's latency measured from when its
/// message was due.
#[derive(Debug, Clone)]
pub struct Streaming {
    /// The request messages, framed, sent in turn.
    pub framed: Vec<Vec<u8>>,
    /// Microseconds between a stream's messages (`--stream-rate`); 0: a bidi stream sends its
    /// next message when the last one's reply arrives, a client stream sends all at once.
    pub every_us: u64,
    /// Messages a stream sends before it ends (`--stream-messages`).
    pub messages: Option<u64>,
    /// How long a stream sends before it ends (`--stream-duration`), microseconds.
    pub duration_us: Option<u64>,
    /// The server answers each message (bidi); otherwise once, when the stream ends.
    pub bidi: bool,
}

impl Streaming {
    /// Whether a stream that sent `sent` messages, the next due at `next_us` after its start,
    /// is done sending.
    pub fn done(&self, sent: u64, next_us: u64) -> bool {
        self.messages.is_some_and(|n| sent >= n) || self.duration_us.is_some_and(|d| next_us >= d)
    }
}

/// How a client-streaming or bidi call is asked to send (`--stream-rate`,
/// `--stream-messages`, `--stream-duration`).
#[derive(Debug, Clone, Default)]
pub struct StreamAsk {
    /// Messages per second each stream sends.
    pub rate: Option<f64>,
    /// Messages each stream sends, then it ends.
    pub messages: Option<usize>,
    /// How long each stream sends, then it ends.
    pub duration: Option<std::time::Duration>,
}

impl Streaming {
    /// How `method`'s streams send `messages` as `ask` says; `None` for a call whose request is
    /// one message. Stream settings on such a call are refused rather than ignored.
    pub fn for_method(
        ask: &StreamAsk,
        method: &Method,
        messages: &Messages,
        encoding: wire::Encoding,
    ) -> Result<Option<Streaming>, String> {
        let asked = ask.rate.is_some() || ask.messages.is_some() || ask.duration.is_some();
        let bidi = match method.kind {
            MethodKind::Bidi => true,
            MethodKind::ClientStreaming => false,
            MethodKind::Unary | MethodKind::ServerStreaming if asked => {
                return Err(format!(
                    "--stream-rate, --stream-messages and --stream-duration are for calls whose requests stream; {} takes one request",
                    method.path
                ))
            }
            MethodKind::Unary | MethodKind::ServerStreaming => return Ok(None),
        };
        if !messages.all_fixed() {
            return Err("templates are not sent on streams yet: give fixed messages".into());
        }
        let framed = (0..messages.len().max(1))
            .filter_map(|k| messages.fixed(k))
            .map(|m| {
                let mut out = Vec::new();
                wire::frame_as(m, encoding, &mut out);
                out
            })
            .collect();
        if !bidi && ask.rate.is_none() && ask.messages.is_none() && ask.duration.is_some() {
            return Err("an unpaced client stream sends all its messages at once: give --stream-messages, or --stream-rate with --stream-duration".into());
        }
        let every_us = ask.rate.map_or(0, |r| (1e6 / r).round().max(1.0) as u64);
        let duration_us = ask.duration.map(|d| d.as_micros() as u64);
        let count = ask.messages.map(|n| n as u64).or(if duration_us.is_none() { Some(10) } else { None });
        Ok(Some(Streaming { framed, every_us, messages: count, duration_us, bidi }))
    }
}

/// What a gRPC run sends and how it judges the answers.
pub struct CallSetup {
    /// The request head without its length: method, path, Host, headers.
    head: Vec<u8>,
    /// The messages, sent in turn (call `k` sends message `k mod len`).
    messages: Messages,
    /// Each message's whole request, when it never changes.
    fixed: Vec<Option<Vec<u8>>>,
    /// Each such message's size (without its prefix, before compression).
    sizes: Vec<u64>,
    /// How each request message is compressed (`--compress`).
    encoding: wire::Encoding,
    /// `--check`: answers must decode as this type (the method's output).
    pub check: Option<MessageDescriptor>,
    /// Client streaming and bidi: how each call's messages are sent.
    pub streaming: Option<Streaming>,
    /// The server answers with a stream of messages: the first one's time is kept.
    pub server_streams: bool,
    /// `--deadline`, microseconds: a stream the server cancels after it is the deadline's.
    pub deadline_us: Option<u64>,
    /// The method's path, `/pkg.Service/Method`.
    pub path: String,
}

impl std::fmt::Debug for CallSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallSetup").field("messages", &self.fixed.len()).field("check", &self.check.is_some()).finish()
    }
}

impl CallSetup {
    /// Calls to `path` at `host` with `headers` (the protocol's and the user's, with
    /// `grpc-encoding` when `encoding` compresses), sending `messages` in turn.
    pub fn new(
        path: &str,
        host: &str,
        headers: &[Header],
        messages: Messages,
        check: Option<MessageDescriptor>,
        encoding: wire::Encoding,
    ) -> CallSetup {
        let mut head = crate::http::request::render("POST", path, host, headers, None);
        // render() ends the head; a call's length goes before the blank line.
        head.truncate(head.len() - 2);
        let mut plan = CallSetup {
            head,
            messages,
            fixed: Vec::new(),
            sizes: Vec::new(),
            encoding,
            check,
            streaming: None,
            server_streams: false,
            deadline_us: None,
            path: path.to_string(),
        };
        plan.sizes =
            (0..plan.messages.len().max(1)).map(|k| plan.messages.fixed(k).map_or(0, |m| m.len() as u64)).collect();
        plan.fixed = (0..plan.messages.len().max(1))
            .map(|k| {
                let m = plan.messages.fixed(k)?;
                let mut out = Vec::new();
                plan.frame_request(m, &mut out);
                Some(out)
            })
            .collect();
        plan
    }

    /// Sets the calls' deadline (sent as `grpc-timeout`).
    pub fn deadline(mut self, deadline: Option<std::time::Duration>) -> CallSetup {
        self.deadline_us = deadline.map(|d| d.as_micros() as u64);
        self
    }

    /// Says the server answers each call with a stream of messages.
    pub fn server_streaming(mut self, on: bool) -> CallSetup {
        self.server_streams = on;
        self
    }

    /// Makes each call a stream of messages sent as `streaming` says.
    pub fn streamed(mut self, streaming: Streaming) -> CallSetup {
        self.streaming = Some(streaming);
        self
    }

    /// How many messages are sent in turn.
    pub fn len(&self) -> usize {
        self.fixed.len()
    }

    /// Whether there are no messages (never: a call without `--data` sends an empty message).
    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty()
    }

    /// Whether every call sends the same request.
    pub fn single(&self) -> bool {
        self.fixed.len() == 1 && self.fixed[0].is_some()
    }

    /// Call `k`'s request when it never changes.
    pub fn fixed(&self, k: usize) -> Option<&[u8]> {
        self.fixed.get(k % self.fixed.len().max(1))?.as_deref()
    }

    /// Call `k`'s message size (without its prefix) when it never changes.
    pub fn size(&self, k: usize) -> u64 {
        self.sizes.get(k % self.sizes.len().max(1)).copied().unwrap_or(0)
    }

    /// Renders call `k`'s request (its templates filled for call number `call`) into `out`;
    /// returns its message's size.
    pub fn render(&self, k: usize, call: u64, rng: &mut crate::rng::Rng, out: &mut Vec<u8>) -> u64 {
        out.clear();
        if let Some(fixed) = self.fixed(k) {
            out.extend_from_slice(fixed);
            return self.size(k);
        }
        let mut message = Vec::new();
        self.messages.render(k, call, rng, &mut message);
        self.frame_request(&message, out);
        message.len() as u64
    }

    /// The request carrying `message`, framed.
    fn frame_request(&self, message: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        let mut framed = Vec::with_capacity(wire::PREFIX + message.len());
        wire::frame_as(message, self.encoding, &mut framed);
        out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", framed.len()).as_bytes());
        out.extend_from_slice(&framed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_a_post_with_one_framed_message() {
        let headers = protocol_headers();
        let input = crate::grpc::fixture::message("t.Req");
        let messages = Messages::from_json(&input, r#"{"name": "hi"}"#).unwrap();
        let plan = CallSetup::new("/a.B/C", "h:1", &headers, messages, None, wire::Encoding::Identity);
        assert!(plan.single());
        let req = plan.fixed(7).unwrap();
        let text = String::from_utf8_lossy(req);
        assert!(
            text.starts_with("POST /a.B/C HTTP/1.1\r\nHost: h:1\r\ncontent-type: application/grpc\r\nte: trailers\r\n")
        );
        // Field 6 (name), length-delimited: 0x32, 2, "hi".
        assert!(req.ends_with(b"Content-Length: 9\r\n\r\n\x00\x00\x00\x00\x04\x32\x02hi"), "{text}");
        assert_eq!(plan.size(3), 4);
        let fields = crate::http::fields::from_http1(req, "http", "h:1").unwrap();
        assert_eq!(fields.body.as_deref(), Some(&b"\x00\x00\x00\x00\x04\x32\x02hi"[..]));
        assert!(fields.fields.iter().any(|(n, v)| n == b"te" && v == b"trailers"));
    }
}
