//! One gRPC call on the origin, from its head to its status: request messages are taken out of
//! the stream's DATA as they arrive, each method makes its replies (the echo methods' rules are
//! in `echo.proto`; reflection answers each question), and the replies wait in the call until
//! they are due and the stream has room, so a delay never holds the thread and a client that
//! reads slowly never makes the origin queue without bound. The status goes last: in trailers
//! after the replies, or alone (Trailers-Only) when there were none.

use std::collections::VecDeque;
use std::time::Instant;

use prost::Message;

use crate::origin::unit::Serve;
use super::counters::{self, Method};
use super::GrpcSite;
use crate::grpc::echo::{EchoReply, EchoRequest, MAX_REPLY_SIZE};
use crate::grpc::reflection;
use crate::grpc::status::Code;
use crate::grpc::wire::{Decoder, FrameError, MAX_MESSAGE, PREFIX};
use crate::h2::Session;

/// Bytes of replies the session may hold for one call before more are pushed: enough to keep
/// a stream's window busy, and a bound on what a client that stops reading leaves queued.
const HIGH_WATER: usize = 256 * 1024;
/// Bytes of replies a call may hold (made, not yet pushed) before it fails RESOURCE_EXHAUSTED:
/// a bidi client sending much faster than it reads (or than `--delay` lets replies go).
const MAX_HELD: usize = 16 * 1024 * 1024;

/// What [`Call::pump`] left the call as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pumped {
    /// Going on; its next reply is due then (`None`: when the client or the stream moves).
    Waiting(Option<Instant>),
    /// Ended with this status, which has been submitted.
    Ended(Code),
    /// Its stream is gone (reset by the client): it can send nothing more.
    Gone,
}

/// One call in progress.
#[derive(Debug)]
pub(super) struct Call {
    pub(super) stream: i32,
    pub(super) method: Method,
    decoder: Decoder,
    /// Requests received whole.
    received: u32,
    /// Unary and ServerStream: the request; ClientStream: the last one so far.
    request: Option<EchoRequest>,
    /// Replies made, framed, with when each may go (`None`: at once), in order.
    replies: VecDeque<(Option<Instant>, Vec<u8>)>,
    /// Bytes in `replies`.
    held: usize,
    /// ServerStream: replies still to make (made one at a time as the stream takes them).
    left: u64,
    /// The next reply's sequence number.
    sequence: u64,
    /// When the last reply made may go: none goes before the one ahead of it.
    last_due: Option<Instant>,
    /// The status to end with once every reply is out; `None` while the call goes on.
    end: Option<(Code, String)>,
    /// The response's headers are submitted (so the status goes as trailers).
    headers_sent: bool,
}

impl Call {
    /// A call to `method` on `stream`.
    pub(super) fn new(stream: i32, method: Method) -> Call {
        Call {
            stream,
            method,
            decoder: Decoder::new(MAX_MESSAGE),
            received: 0,
            request: None,
            replies: VecDeque::new(),
            held: 0,
            left: 0,
            sequence: 0,
            last_due: None,
            end: None,
            headers_sent: false,
        }
    }

    /// Says how the request's messages are compressed (its `grpc-encoding`).
    pub(super) fn request_encoding(&mut self, encoding: crate::grpc::wire::Encoding) {
        self.decoder.encoding(encoding);
    }

    /// Nothing to send until the client sends more or ends.
    pub(super) fn idle(&self) -> bool {
        self.replies.is_empty() && self.left == 0 && self.end.is_none()
    }

    /// Takes a piece of the request stream's DATA; `now` is when it arrived, if replies wait.
    pub(super) fn data(&mut self, data: &[u8], site: &GrpcSite, serve: &mut Serve<'_, '_>, now: Option<Instant>) {
        if self.end.is_some() {
            return;
        }
        // Out of the call while it feeds, so each message can go to the call as it comes.
        let mut decoder = std::mem::replace(&mut self.decoder, Decoder::new(0));
        let fed = decoder.feed(data, &mut |m| {
            serve.count(counters::RECEIVED, 1);
            self.message(m, site, serve, now);
        });
        self.decoder = decoder;
        if let Err(e) = fed {
            let code = if matches!(e, FrameError::TooLong(_)) { Code::ResourceExhausted } else { Code::Internal };
            self.fail(code, e.to_string());
        }
    }

    /// One request message.
    fn message(&mut self, bytes: &[u8], site: &GrpcSite, serve: &mut Serve<'_, '_>, now: Option<Instant>) {
        if self.end.is_some() {
            return;
        }
        self.received += 1;
        if self.method == Method::Reflection {
            let Some(reflection) = site.reflection.as_ref() else { return };
            match reflection::Request::decode(bytes) {
                Ok(request) => self.reply(None, &reflection.answer(request)),
                Err(e) => self.fail(Code::InvalidArgument, format!("not a reflection request: {e}")),
            }
            return;
        }
        let request = match EchoRequest::decode(bytes) {
            Ok(r) => r,
            Err(e) => return self.fail(Code::InvalidArgument, format!("not an EchoRequest: {e}")),
        };
        if request.reply_size > MAX_REPLY_SIZE {
            return self.fail(Code::InvalidArgument, format!("reply_size is over {MAX_REPLY_SIZE}"));
        }
        match self.method {
            Method::Unary | Method::ServerStream if self.received > 1 => {
                self.fail(Code::Internal, "more than one request message on a call that takes one".into());
            }
            Method::Bidi => {
                let reply = echo(&request, self.sequence, self.received);
                self.sequence += 1;
                let due = self.due(now, serve);
                self.reply(due, &reply);
            }
            _ => self.request = Some(request),
        }
    }

    /// The client has ended its side; `now` as for [`Call::data`].
    pub(super) fn client_ended(&mut self, serve: &mut Serve<'_, '_>, now: Option<Instant>) {
        if self.end.is_some() {
            return;
        }
        if let Err(e) = self.decoder.finish() {
            return self.fail(Code::Internal, e.to_string());
        }
        let request = self.request.take();
        match (self.method, request) {
            (Method::Unary | Method::ServerStream, None) => {
                return self.fail(Code::Internal, "no request message on a call that takes one".into());
            }
            (Method::Unary, Some(request)) => {
                let due = self.due(now, serve);
                self.reply(due, &echo(&request, 0, self.received));
            }
            (Method::ServerStream, Some(request)) => {
                self.left =
                    u64::from(if request.count == 0 { crate::defaults::GRPC_STREAM_COUNT } else { request.count });
                self.request = Some(request);
                self.last_due = now;
            }
            (Method::ClientStream, request) => {
                let request = request.unwrap_or_default();
                let due = self.due(now, serve);
                self.reply(due, &echo(&request, 0, self.received));
            }
            _ => {}
        }
        self.end = Some((Code::Ok, String::new()));
    }

    /// Ends the call with `code` as soon as possible: replies not yet sent are dropped.
    pub(super) fn fail(&mut self, code: Code, message: String) {
        self.replies.clear();
        self.held = 0;
        self.left = 0;
        self.end = Some((code, message));
    }

    /// When a reply made now, for a request that arrived at `now`, may go: after the delay or
    /// service time, and never before the reply ahead of it.
    fn due(&mut self, now: Option<Instant>, serve: &mut Serve<'_, '_>) -> Option<Instant> {
        let due = now.map(|at| serve.due(at)).map(|d| self.last_due.map_or(d, |l| l.max(d)));
        self.last_due = due;
        due
    }

    /// Queues a reply, framed.
    fn reply(&mut self, due: Option<Instant>, message: &impl Message) {
        let framed = framed(message);
        self.held += framed.len();
        self.replies.push_back((due, framed));
        if self.held > MAX_HELD {
            self.fail(
                Code::ResourceExhausted,
                "replies held past 16 MiB: the client sends faster than it reads".into(),
            );
        }
    }

    /// Pushes the replies that are due while the stream has room, then the status once every
    /// reply is out.
    pub(super) fn pump(&mut self, session: &mut Session, serve: &mut Serve<'_, '_>) -> Pumped {
        let mut now = None;
        loop {
            if self.replies.is_empty() && self.left > 0 {
                self.next_streamed(serve);
            }
            let Some(&(due, _)) = self.replies.front() else { break };
            if let Some(due) = due {
                if due > *now.get_or_insert_with(Instant::now) {
                    return Pumped::Waiting(Some(due));
                }
            }
            if session.queued(self.stream) >= HIGH_WATER {
                return Pumped::Waiting(None);
            }
            if !self.headers_sent {
                if session.submit_response_streamed(self.stream, &HEADERS).is_err() {
                    return Pumped::Gone;
                }
                self.headers_sent = true;
            }
            let Some((_, framed)) = self.replies.pop_front() else { break };
            self.held -= framed.len();
            if session.push_body(self.stream, &framed).is_err() {
                return Pumped::Gone;
            }
            serve.count(counters::SENT, 1);
        }
        let Some((code, message)) = &self.end else { return Pumped::Waiting(None) };
        let code = *code;
        let status = [b'0' + (code as u8) / 10, b'0' + (code as u8) % 10];
        let status = if status[0] == b'0' { &status[1..] } else { &status[..] };
        let message = percent_encoded(message);
        let sent = if self.headers_sent {
            let trailers: [(&[u8], &[u8]); 2] = [(b"grpc-status", status), (b"grpc-message", &message)];
            session.end_with_trailers(self.stream, &trailers[..if message.is_empty() { 1 } else { 2 }])
        } else {
            let only: [(&[u8], &[u8]); 4] = [
                (b":status", b"200"),
                (b"content-type", b"application/grpc"),
                (b"grpc-status", status),
                (b"grpc-message", &message),
            ];
            session.submit_response(self.stream, &only[..if message.is_empty() { 3 } else { 4 }], Vec::new())
        };
        if sent.is_err() {
            return Pumped::Gone;
        }
        Pumped::Ended(code)
    }

    /// ServerStream: makes the next reply, due a delay after the one before it.
    fn next_streamed(&mut self, serve: &mut Serve<'_, '_>) {
        let Some(request) = self.request.take() else {
            self.left = 0;
            return;
        };
        let reply = echo(&request, self.sequence, self.received);
        self.request = Some(request);
        self.sequence += 1;
        self.left -= 1;
        let due = self.last_due.map(|at| serve.due(at));
        self.last_due = due;
        self.reply(due, &reply);
    }
}

/// The headers of a response with messages.
const HEADERS: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"content-type", b"application/grpc")];

/// The echo of `request`: its message, its payload or `reply_size` bytes.
fn echo(request: &EchoRequest, sequence: u64, received: u32) -> EchoReply {
    let payload = if request.reply_size > 0 {
        crate::origin::BODY_PATTERN.iter().copied().cycle().take(request.reply_size as usize).collect()
    } else {
        request.payload.clone()
    };
    EchoReply { message: request.message.clone(), payload, sequence, received }
}

/// `message` encoded and framed (uncompressed), in one buffer.
fn framed(message: &impl Message) -> Vec<u8> {
    let len = message.encoded_len();
    let mut out = Vec::with_capacity(PREFIX + len);
    out.push(0);
    // Replies are at most MAX_REPLY_SIZE and a few fields, far below 4 GiB.
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    message.encode_raw(&mut out);
    out
}

/// `grpc-message`'s encoding: bytes outside printable ASCII, and `%`, as `%XX`.
pub(super) fn percent_encoded(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for &b in text.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_framed_and_percent_encoded() {
        let reply = EchoReply { message: "hi".into(), payload: Vec::new(), sequence: 1, received: 1 };
        let f = framed(&reply);
        assert_eq!(&f[..PREFIX], [0, 0, 0, 0, reply.encoded_len() as u8]);
        assert_eq!(EchoReply::decode(&f[PREFIX..]).unwrap(), reply);
        assert_eq!(percent_encoded("a b%c\n\u{e9}"), b"a b%25c%0A%C3%A9");
    }

    #[test]
    fn replies_echo_or_are_sized() {
        let request = EchoRequest { message: "m".into(), payload: vec![1, 2], count: 0, reply_size: 0 };
        assert_eq!(
            echo(&request, 3, 4),
            EchoReply { message: "m".into(), payload: vec![1, 2], sequence: 3, received: 4 }
        );
        let sized = EchoRequest { reply_size: 20, ..request };
        assert_eq!(echo(&sized, 0, 1).payload, b"hello, world\nhello, ");
    }
}
