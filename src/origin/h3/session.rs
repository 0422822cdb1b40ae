//! One QUIC connection's HTTP/3: requests taken from quiche's events and answered with what
//! [`decide`] gives every protocol (the fixed response, documents with their cache headers, 304s
//! and aborts, the counters), counted by the same [`Tally`](super::super::decision::Tally).
//!
//! Heads are rendered as HTTP/1's ([`Decision::head`]) and turned into fields by
//! [`crate::http::fields::response_fields`], so the three protocols cannot drift apart. What differs is
//! HTTP/3's own:
//! - quiche takes a response's head or body only as far as flow control and the congestion
//!   window allow, so an answer it has not taken whole waits in `sending` and is pushed again
//!   after every read and timer of its connection, oldest first (bodies are made a chunk at a
//!   time as quiche takes them, never whole);
//! - an answer held by `--delay` or a service time waits in `held` and is taken when due (the
//!   connection's timer covers the earliest);
//! - the keep-alive limit is a GOAWAY after the N-th request (later streams are rejected with
//!   H3_REQUEST_REJECTED, which the client sends again elsewhere);
//! - an aborted document's stream is reset once its head and the body up to the cut have been
//!   handed to the socket ([`Session::reset_cut`]): resetting at once would discard them unsent;
//! - `--byte-rate` holds the bodies of a connection's responses (QUIC's own frames, heads and
//!   acknowledgements go at once: holding those would stall the connection, not pace it).

use std::mem;
use std::time::Instant;

use quiche::h3::{Event, Header, HeaderRef, NameValue};

use super::super::decision::{decide, Content, Decision, Kind, Request};
use super::super::respond::Site;
use super::super::Ctx;
use crate::http::request_head::Persist;
use crate::net::throttle::Throttle;

/// H3_INTERNAL_ERROR: an aborted document's stream is reset with it, as HTTP/2 resets with
/// INTERNAL_ERROR (RFC 9114 8.1).
pub(super) const INTERNAL_ERROR: u64 = 0x102;
/// H3_REQUEST_REJECTED: a request after the keep-alive limit's GOAWAY was not processed and may
/// be sent again.
const REQUEST_REJECTED: u64 = 0x10b;
/// H3_MESSAGE_ERROR: a request without `:method` or `:path` (a malformed message).
const MESSAGE_ERROR: u64 = 0x10e;
/// Most body bytes made for one `send_body`.
const CHUNK: usize = 64 * 1024;
/// The distance between two client-initiated bidirectional stream ids (RFC 9000 2.1).
const STREAM_STEP: u64 = 4;

/// A request kept until it is answered.
#[derive(Debug)]
struct Ask {
    stream: u64,
    request: Request,
}

/// An answer quiche has not taken whole, decided when it was due.
#[derive(Debug)]
struct Sending {
    stream: u64,
    decision: Decision,
    /// The document path, for documents.
    path: Box<str>,
    head_sent: bool,
    /// Body bytes taken so far.
    offset: u64,
}

/// Where an answer stands after a push.
enum Step {
    /// Taken whole (or cut, its reset pending).
    Done,
    /// quiche has no room for more now.
    Blocked,
    /// The stream is gone (reset or stopped by the client): nothing more to send.
    Gone,
}

/// The HTTP/3 state of one QUIC connection.
pub(super) struct Session {
    h3: quiche::h3::Connection,
    /// Answers waiting for their due time, with it.
    held: Vec<(Instant, Ask)>,
    /// Answers in order, waiting for room.
    sending: Vec<Sending>,
    /// Cut streams to reset once what they sent is out.
    resets: Vec<u64>,
    /// Reset streams quiche's HTTP/3 layer still holds (see [`Session::forget_reset`]).
    releasing: Vec<u64>,
    /// Requests of the test on this connection, for the keep-alive limit.
    served: u64,
    /// After the keep-alive limit: the GOAWAY's id (streams from it on are refused), and
    /// whether the frame is out yet (the control stream may lack room).
    goaway: Option<(u64, bool)>,
    /// The byte rate's budget, with `--byte-rate`.
    throttle: Option<Throttle>,
    /// When the byte rate lets bodies move again, while it holds them.
    wake: Option<Instant>,
    /// A rendered HTTP/1 head or a body chunk, reused.
    scratch: Vec<u8>,
}

impl Session {
    /// HTTP/3 on an established connection (its control and QPACK streams are opened).
    pub(super) fn new(
        conn: &mut quiche::Connection,
        config: &quiche::h3::Config,
        byte_rate: Option<u64>,
    ) -> Option<Session> {
        let h3 = quiche::h3::Connection::with_transport(conn, config).ok()?;
        Some(Session {
            h3,
            held: Vec::new(),
            sending: Vec::new(),
            resets: Vec::new(),
            releasing: Vec::new(),
            served: 0,
            goaway: None,
            throttle: byte_rate.map(Throttle::new),
            wake: None,
            scratch: Vec::new(),
        })
    }

    /// Takes the connection's HTTP/3 events: requests are answered (or held), request bodies
    /// read and dropped, streams the client reset forgotten.
    pub(super) fn events(&mut self, conn: &mut quiche::Connection, fixed: &[Header], ctx: &mut Ctx<'_>) {
        let arrived = ctx.site.answers_wait().then(Instant::now);
        loop {
            match self.h3.poll(conn) {
                Ok((stream, Event::Headers { list, .. })) => self.request(conn, stream, &list, arrived, fixed, ctx),
                Ok((stream, Event::Data)) => self.drain(conn, stream),
                Ok((stream, Event::Reset(_))) => self.forget(stream),
                Ok((_, Event::Finished | Event::GoAway | Event::PriorityUpdate)) => {}
                // Done, or an HTTP/3 error for which quiche has closed the connection.
                Err(_) => return,
            }
        }
    }

    /// One request's head: refused, or taken.
    fn request(
        &mut self,
        conn: &mut quiche::Connection,
        stream: u64,
        list: &[Header],
        arrived: Option<Instant>,
        fixed: &[Header],
        ctx: &mut Ctx<'_>,
    ) {
        if self.goaway.is_some_and(|(last, _)| stream >= last) {
            self.refuse(conn, stream, REQUEST_REJECTED);
            return;
        }
        if !list.iter().any(|h| h.name().starts_with(b":")) {
            // No pseudo-header: the trailers of a request already taken.
            return;
        }
        let field = |name: &[u8]| list.iter().find(|h| h.name() == name).map(|h| h.value());
        let target = field(b":path").and_then(|p| std::str::from_utf8(p).ok());
        let (Some(method), Some(target)) = (field(b":method"), target) else {
            ctx.counters.bad_requests.add(1);
            self.refuse(conn, stream, MESSAGE_ERROR);
            return;
        };
        let request = Request::parse(ctx.site, target, method == b"HEAD", field);
        self.take(conn, Ask { stream, request }, arrived, fixed, ctx);
    }

    /// Answers a request now, or holds it until it is due.
    fn take(
        &mut self,
        conn: &mut quiche::Connection,
        ask: Ask,
        arrived: Option<Instant>,
        fixed: &[Header],
        ctx: &mut Ctx<'_>,
    ) {
        if ask.request.kind == Kind::Stats {
            // Not a request of the test: uncounted, undelayed, outside the keep-alive limit.
            return self.answer(conn, ask, fixed, ctx);
        }
        self.served += 1;
        if self.served == ctx.site.keepalive {
            // Streams below the id are answered; the client sends later ones again elsewhere.
            self.goaway = Some((ask.stream + STREAM_STEP, false));
            self.send_goaway(conn);
        }
        match arrived {
            Some(at) => {
                let due = ctx.site.due(at, &mut ctx.rng);
                self.held.push((due, ask));
            }
            None => self.answer(conn, ask, fixed, ctx),
        }
    }

    /// Sends the keep-alive limit's GOAWAY if it is not out yet.
    fn send_goaway(&mut self, conn: &mut quiche::Connection) {
        if let Some((last, false)) = self.goaway {
            let sent = self.h3.send_goaway(conn, last).is_ok();
            self.goaway = Some((last, sent));
        }
    }

    /// Takes the answers whose time has come.
    pub(super) fn release(&mut self, conn: &mut quiche::Connection, fixed: &[Header], ctx: &mut Ctx<'_>) {
        if self.held.is_empty() {
            return;
        }
        let now = Instant::now();
        // Few answers wait at once (at most the streams the client may open), so a scan is
        // cheaper than a heap; one connection's due times are mostly in order anyway.
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].0 <= now {
                let (_, ask) = self.held.remove(i);
                self.answer(conn, ask, fixed, ctx);
            } else {
                i += 1;
            }
        }
    }

    /// When the next held answer is due, or the byte rate lets bodies move again.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.held.iter().map(|(due, _)| *due).chain(self.wake).min()
    }

    /// Decides one request's answer and hands it to quiche, as far as it takes it.
    fn answer(&mut self, conn: &mut quiche::Connection, ask: Ask, fixed: &[Header], ctx: &mut Ctx<'_>) {
        let decision = decide(ask.request.kind, ask.request.head_only, ctx);
        let mut s = Sending { stream: ask.stream, decision, path: ask.request.path, head_sent: false, offset: 0 };
        // Behind answers still waiting, this one waits too: answers go out in order.
        if !self.sending.is_empty() || matches!(self.step(conn, &mut s, fixed, ctx), Step::Blocked) {
            self.sending.push(s);
        }
    }

    /// Pushes the answers that wait for room (oldest first) and a GOAWAY that did not fit.
    pub(super) fn progress(&mut self, conn: &mut quiche::Connection, fixed: &[Header], ctx: &mut Ctx<'_>) {
        self.send_goaway(conn);
        self.forget_reset(conn);
        self.wake = None;
        if self.sending.is_empty() {
            return;
        }
        let mut waiting = mem::take(&mut self.sending);
        waiting.retain_mut(|s| matches!(self.step(conn, s, fixed, ctx), Step::Blocked));
        self.sending = waiting;
    }

    /// Hands quiche as much of one answer as it takes.
    fn step(&mut self, conn: &mut quiche::Connection, s: &mut Sending, fixed: &[Header], ctx: &mut Ctx<'_>) -> Step {
        let (end, cut) = (s.decision.end, s.decision.cut);
        if !s.head_sent {
            match self.head(conn, s, fixed, ctx.site) {
                Ok(()) => s.head_sent = true,
                Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::Done) => return Step::Blocked,
                Err(_) => return Step::Gone,
            }
            // Counted once quiche took the head: a stream the client resets before is not.
            s.decision.tally().count(ctx.counters);
        }
        match self.body(conn, s, end, cut, ctx.site) {
            Step::Done if cut => {
                self.resets.push(s.stream);
                Step::Done
            }
            step => step,
        }
    }

    /// Sends an answer's head, with FIN when no body follows.
    fn head(
        &mut self,
        conn: &mut quiche::Connection,
        s: &Sending,
        fixed: &[Header],
        site: &Site,
    ) -> quiche::h3::Result<()> {
        let fin = s.decision.bodiless();
        if let Content::Fixed = s.decision.content {
            return self.h3.send_response(conn, s.stream, fixed, fin);
        }
        self.scratch.clear();
        s.decision.head(site, Persist::KeepAlive, &mut self.scratch);
        let fields = crate::http::fields::response_fields(&mut self.scratch);
        let headers: Vec<HeaderRef<'_>> = fields.iter().map(|(n, v)| HeaderRef::new(n, v)).collect();
        self.h3.send_response(conn, s.stream, &headers, fin)
    }

    /// Sends an answer's body up to `end` as far as quiche and the byte rate take it, with FIN
    /// at the end unless it is `cut`.
    fn body(&mut self, conn: &mut quiche::Connection, s: &mut Sending, end: u64, cut: bool, site: &Site) -> Step {
        while s.offset < end {
            let room = match conn.stream_capacity(s.stream) {
                Ok(0) => return Step::Blocked,
                Ok(n) => n,
                Err(_) => return Step::Gone,
            };
            let allowed = match self.throttle.as_mut().map(|t| t.allowance(Instant::now())) {
                None => usize::MAX,
                Some(Ok(n)) => n,
                Some(Err(at)) => {
                    self.wake = Some(at);
                    return Step::Blocked;
                }
            };
            let from = s.offset;
            let want = (end - from).min(room.min(CHUNK).min(allowed) as u64);
            let fin = !cut && from + want == end;
            let body: &[u8] = match &s.decision.content {
                Content::Fixed => &site.h2_fixed.body[from as usize..(from + want) as usize],
                Content::Stats(json) => &json[from as usize..(from + want) as usize],
                Content::Recorded { .. } | Content::Unmatched => {
                    let kept = s.decision.kept_body(site).unwrap_or_default();
                    kept.get(from as usize..(from + want) as usize).unwrap_or_default()
                }
                Content::Doc { doc, .. } => {
                    self.scratch.clear();
                    doc.body_range(&s.path, from, from + want, &mut self.scratch);
                    &self.scratch
                }
            };
            match self.h3.send_body(conn, s.stream, body, fin) {
                Ok(n) => {
                    s.offset += n as u64;
                    if let Some(t) = self.throttle.as_mut() {
                        t.spend(n);
                    }
                }
                Err(quiche::h3::Error::Done) => return Step::Blocked,
                Err(_) => return Step::Gone,
            }
            if s.offset < from + want {
                return Step::Blocked;
            }
        }
        Step::Done
    }

    /// Resets the cut streams whose bytes have been handed to the socket; true if there were
    /// any (their RESET_STREAM frames then wait to be sent).
    pub(super) fn reset_cut(&mut self, conn: &mut quiche::Connection) -> bool {
        let any = !self.resets.is_empty();
        for stream in self.resets.drain(..) {
            // The request has ended, so only the response's direction is reset.
            let _ = conn.stream_shutdown(stream, quiche::Shutdown::Write, INTERNAL_ERROR);
            self.releasing.push(stream);
        }
        any
    }

    /// Makes quiche's HTTP/3 layer forget the streams this side reset once QUIC is done with
    /// them. It drops a stream's state when a write finds the stream finished, or the QUIC
    /// stream gone, which a stream reset here never meets by itself: every aborted document
    /// would stay for the connection's life (hundreds of bytes each, measured). Once QUIC has
    /// let the stream go (its reset acknowledged), an empty final write of the head or the
    /// body, whichever is next on it, fails and so drops the state; before, it could send.
    /// (Streams the client resets are dropped by quiche as it reports them.)
    fn forget_reset(&mut self, conn: &mut quiche::Connection) {
        let h3 = &mut self.h3;
        self.releasing.retain(|&stream| {
            if conn.stream_capacity(stream).is_ok() {
                return true;
            }
            let _ = h3.send_body(conn, stream, &[], true);
            let _ = h3.send_response(conn, stream, &[] as &[Header], true);
            false
        });
    }

    /// Reads and drops a request body.
    fn drain(&mut self, conn: &mut quiche::Connection, stream: u64) {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = self.h3.recv_body(conn, stream, &mut buf) {
            if n == 0 {
                break;
            }
        }
    }

    /// Resets both directions of a request not taken with `code`; a stream already gone is no
    /// error.
    fn refuse(&mut self, conn: &mut quiche::Connection, stream: u64, code: u64) {
        let _ = conn.stream_shutdown(stream, quiche::Shutdown::Write, code);
        let _ = conn.stream_shutdown(stream, quiche::Shutdown::Read, code);
        self.releasing.push(stream);
    }

    /// The client reset a stream: whatever was still to be sent on it is dropped, uncounted if
    /// it had not started.
    fn forget(&mut self, stream: u64) {
        self.held.retain(|(_, ask)| ask.stream != stream);
        self.sending.retain(|s| s.stream != stream);
    }
}
