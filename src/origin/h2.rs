//! HTTP/2 on the origin's connections: a connection whose first bytes are the HTTP/2 preface
//! (h2c with prior knowledge) is handed from [`super::conn`] to this driver for the rest of its
//! life. It feeds an nghttp2 server [`Session`] and answers every request with the answer
//! [`decide`] gives every protocol (the fixed response, documents with their cache headers, 304s
//! and aborts, the counters), counted by the same [`Tally`](super::decision::Tally), so load
//! tests and proxy tests read the same figures over any protocol.
//!
//! The head of a response is rendered as HTTP/1's ([`Decision::head`](super::decision::Decision))
//! and turned into HTTP/2 fields ([`crate::http::fields::response_fields`]), so the protocols cannot drift
//! apart; the fixed response is converted once at start and its body shared by every stream.
//! What differs is the protocol's own: a response held by `--delay` or a service time waits in
//! this driver (not in the connection's output, which would hold back every stream behind it)
//! and is submitted when due, woken by the worker's timer heap; the keep-alive limit becomes a
//! GOAWAY after the N-th stream, later streams being refused (the client retries them); an
//! aborted document sends its head and part of its body, then resets its stream instead of
//! cutting the connection. Document bodies are made a frame at a time as nghttp2 sends them, so
//! a huge one never exists whole. The byte rate holds the connection's bytes, frames and all.
//!
//! With a unit that serves HTTP/2's streams (gRPC's, [`Unit::streams`]) the session reports
//! streams as they arrive (its streamed mode) and every stream but the counters' goes to the
//! unit's [`Streams`], which the same release step pumps, so a call's replies wait for their
//! time on the same timers as a held answer.
//!
//! [`Unit::streams`]: super::unit::Unit::streams

use std::io::{self, Write};
use std::mem;
use std::time::Instant;

use super::decision::{decide, Content, Kind, Request};
use super::link::{Got, Link, Next};
use super::requests::Upgrade;
use super::respond::{doc_path, Site};
use super::unit::{Place, Serve, Streams};
use super::{Ctx, STATS_PATH};
use crate::h2::{Body, Event, RequestHead, Session, Settings, Source};
use crate::http::request_head::Persist;
use crate::workload::page::Document;

/// What a client sends first on a prior-knowledge HTTP/2 connection (RFC 9113, section 3.4).
pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Bytes of output taken from the session before they are written: large bodies are framed as
/// the socket takes them, not all at once.
pub(super) const OUT_LIMIT: usize = 64 * 1024;
/// The answer to an `Upgrade: h2c` request, before the server's first frame.
const SWITCHING: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
/// RST_STREAM and GOAWAY codes used here.
const NO_ERROR: u32 = 0x0;
const REFUSED_STREAM: u32 = 0x7;

/// Whether the first bytes read on a connection are HTTP/2's: the start of the preface, at least
/// `PRI` (no HTTP/1 method begins so, and nghttp2 checks the rest). A client that sends its first
/// one or two bytes alone is taken for HTTP/1; no real client does.
pub(super) fn is_preface(first: &[u8]) -> bool {
    let k = first.len().min(PREFACE.len());
    k >= 3 && first[..k] == PREFACE[..k]
}

/// A request as this driver keeps it until it is answered.
#[derive(Debug)]
struct Ask {
    stream: i32,
    request: Request,
}

/// The HTTP/2 state of one connection.
pub(super) struct H2Conn {
    pub(super) session: Session,
    /// Bytes taken from the session, written from `pos`.
    pub(super) out: Vec<u8>,
    pub(super) pos: usize,
    /// Answers waiting for their due time, with it.
    held: Vec<(Instant, Ask)>,
    /// Requests of the test taken on this connection, for the keep-alive limit.
    served: u64,
    /// After the keep-alive limit's GOAWAY: streams above this one are refused.
    refuse_above: Option<i32>,
    /// A rendered HTTP/1 head, reused.
    scratch: Vec<u8>,
    /// A unit's streams (gRPC's calls), which take every stream but the counters', with
    /// the unit's place.
    streams: Option<(Box<dyn Streams>, Place)>,
}

impl H2Conn {
    /// A server session whose SETTINGS are queued.
    pub(super) fn new(site: &Site) -> Option<Box<H2Conn>> {
        Some(H2Conn::with(Session::server(Settings::default()).ok()?, Vec::new(), site))
    }

    /// The state around `session`, with `out` to be written before the session's bytes.
    fn with(mut session: Session, out: Vec<u8>, site: &Site) -> Box<H2Conn> {
        // A unit's streams are read as they arrive (a streaming call's messages, before its end).
        let streams = site.units.iter().find_map(|(u, place)| Some((u.streams()?, *place)));
        session.set_streamed(streams.is_some());
        Box::new(H2Conn {
            session,
            out,
            pos: 0,
            held: Vec::new(),
            served: 0,
            refuse_above: None,
            scratch: Vec::new(),
            streams,
        })
    }

    /// The HTTP/2 state of a connection upgraded by `upgrade` (its `101` queued first), the
    /// request answered as stream 1 and the bytes after it taken; `None` if the settings are
    /// malformed or the session fails, and the connection must close.
    pub(super) fn upgraded(upgrade: Upgrade, ctx: &mut Ctx<'_>) -> Option<Box<H2Conn>> {
        let settings = crate::b64::decode_url(std::str::from_utf8(&upgrade.settings).ok()?)?;
        let session = Session::server_upgrade(Settings::default(), &settings, upgrade.request.head_only).ok()?;
        let mut h2 = H2Conn::with(session, SWITCHING.to_vec(), ctx.site);
        let ask = Ask { stream: 1, request: upgrade.request };
        let arrived = ctx.site.answers_wait().then(Instant::now);
        h2.take(ask, arrived, ctx);
        (upgrade.rest.is_empty() || h2.receive(&upgrade.rest, ctx)).then_some(h2)
    }

    /// Makes all the progress the socket and the clock allow on an HTTP/2 connection: submit the
    /// answers that are due, write, read, answer, repeat. One loop, a line over the usual
    /// length: writing and reading take turns until the socket or the session stops them, and
    /// each half's exits are the other's.
    pub(super) fn drive(&mut self, link: &mut Link, buf: &mut [u8], ctx: &mut Ctx<'_>) -> Next {
        let h2 = self;
        if link.stream.flush_pending().is_err() {
            return Next::Close;
        }
        loop {
            link.wake = h2.release(ctx);
            if h2.pos == h2.out.len() {
                h2.out.clear();
                h2.pos = 0;
                if h2.session.output_upto(&mut h2.out, OUT_LIMIT).is_err() {
                    return Next::Close;
                }
            }
            if h2.pos < h2.out.len() {
                let mut limit = h2.out.len() - h2.pos;
                if let Some(throttle) = &mut link.throttle {
                    match throttle.allowance(Instant::now()) {
                        Ok(n) => limit = limit.min(n),
                        // Reading waits too, as for a full socket.
                        Err(at) => {
                            link.wake = Some(link.wake.map_or(at, |w| w.min(at)));
                            return Next::Wait;
                        }
                    }
                }
                match link.stream.write(&h2.out[h2.pos..h2.pos + limit]) {
                    Ok(0) => return Next::Close,
                    Ok(n) => {
                        link.write_stalled = None;
                        ctx.counters.bytes_written.add(n as u64);
                        h2.pos += n;
                        if let Some(throttle) = &mut link.throttle {
                            throttle.spend(n);
                        }
                        continue;
                    }
                    Err(e) => match e.kind() {
                        // Reading waits too: a client that sends and never reads must not make
                        // the session queue answers without bound. The writable edge resumes.
                        io::ErrorKind::WouldBlock => {
                            link.write_stalled.get_or_insert_with(Instant::now);
                            return Next::Wait;
                        }
                        io::ErrorKind::Interrupted => continue,
                        _ => return Next::Close,
                    },
                }
            }
            if h2.session.is_done() {
                return Next::Close;
            }
            if !link.readable {
                return Next::Wait;
            }
            match link.read_some(buf, ctx.counters) {
                // The client has finished; streams it left open cannot be answered.
                Got::Eof | Got::Failed => return Next::Close,
                Got::Nothing => {}
                Got::Data(n) => {
                    if !h2.receive(&buf[..n], ctx) {
                        // Send the GOAWAY nghttp2 queued for the error, if the socket takes it.
                        let mut out = Vec::new();
                        if h2.session.output(&mut out).is_ok() && h2.pos == h2.out.len() {
                            let _ = link.stream.write(&out);
                        }
                        return Next::Close;
                    }
                }
            }
        }
    }

    /// Takes bytes read from the client and answers (or holds) the requests they complete;
    /// false if the session failed (malformed input), and the connection must close.
    pub(super) fn receive(&mut self, data: &[u8], ctx: &mut Ctx<'_>) -> bool {
        if self.session.receive(data).is_err() {
            return false;
        }
        let arrived = ctx.site.answers_wait().then(Instant::now);
        let mut events = mem::take(self.session.events());
        for event in events.drain(..) {
            match event {
                Event::Request { stream, head } => self.request(stream, &head, arrived, ctx),
                Event::Head { stream, head } => self.call(stream, &head, ctx),
                event => {
                    if let Some((streams, place)) = self.streams.as_mut() {
                        streams.event(event, &mut self.session, &mut Serve::new(ctx, *place), arrived);
                    }
                }
            }
        }
        // Give the vector back (its capacity), keeping anything queued meanwhile.
        let fresh = self.session.events();
        events.append(fresh);
        mem::swap(fresh, &mut events);
        true
    }

    fn request(&mut self, stream: i32, head: &RequestHead, arrived: Option<Instant>, ctx: &mut Ctx<'_>) {
        if self.refuse_above.is_some_and(|last| stream > last) {
            self.session.reset(stream, REFUSED_STREAM);
            return;
        }
        let target = std::str::from_utf8(&head.path).unwrap_or("/");
        let request = Request::parse(ctx.site, target, head.method == b"HEAD", |name| head.header(name));
        self.take(Ask { stream, request }, arrived, ctx);
    }

    /// With a unit's streams, a request's head: the counters' request is answered as without
    /// it, any other goes to the unit (within the keep-alive limit, as a request of the test).
    fn call(&mut self, stream: i32, head: &RequestHead, ctx: &mut Ctx<'_>) {
        if doc_path(std::str::from_utf8(&head.path).unwrap_or("/")) == STATS_PATH {
            self.request(stream, head, None, ctx);
            return;
        }
        if self.refuse_above.is_some_and(|last| stream > last) {
            self.session.reset(stream, REFUSED_STREAM);
            return;
        }
        self.count_served(stream, ctx);
        if let Some((streams, place)) = self.streams.as_mut() {
            streams.start(stream, head, &mut self.session, &mut Serve::new(ctx, *place));
        }
    }

    /// Counts a request of the test against the keep-alive limit; the one that reaches it
    /// sends the GOAWAY.
    fn count_served(&mut self, stream: i32, ctx: &Ctx<'_>) {
        self.served += 1;
        if self.served == ctx.site.keepalive {
            self.session.go_away_after(stream, NO_ERROR);
            self.refuse_above = Some(stream);
        }
    }

    /// Answers a request now, or holds it until it is due.
    fn take(&mut self, ask: Ask, arrived: Option<Instant>, ctx: &mut Ctx<'_>) {
        let stream = ask.stream;
        if ask.request.kind == Kind::Stats {
            // Not a request of the test: uncounted, undelayed, outside the keep-alive limit.
            self.answer(&ask, ctx);
            return;
        }
        self.count_served(stream, ctx);
        match arrived {
            Some(at) => {
                let due = ctx.site.due(at, &mut ctx.rng);
                self.held.push((due, ask));
            }
            None => self.answer(&ask, ctx),
        }
    }

    /// Submits the answers whose time has come, and what a unit's streams have due and
    /// room for; returns when the next one is due.
    pub(super) fn release(&mut self, ctx: &mut Ctx<'_>) -> Option<Instant> {
        let next = self.release_held(ctx);
        match self.streams.as_mut() {
            None => next,
            Some((streams, place)) => match (next, streams.pump(&mut self.session, &mut Serve::new(ctx, *place))) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// Submits the held answers whose time has come; returns when the next one is due.
    fn release_held(&mut self, ctx: &mut Ctx<'_>) -> Option<Instant> {
        if self.held.is_empty() {
            return None;
        }
        let now = Instant::now();
        let mut next = None;
        let mut i = 0;
        // Few answers wait at once (at most the streams the client may open), so a scan is
        // cheaper than a heap; due times of one connection are mostly in order anyway.
        while i < self.held.len() {
            let due = self.held[i].0;
            if due <= now {
                let (_, ask) = self.held.remove(i);
                self.answer(&ask, ctx);
            } else {
                next = Some(next.map_or(due, |n: Instant| n.min(due)));
                i += 1;
            }
        }
        next
    }

    /// Submits the decided answer to one request and counts it. A stream the client has reset
    /// meanwhile takes no answer and is not counted.
    fn answer(&mut self, ask: &Ask, ctx: &mut Ctx<'_>) {
        let site = ctx.site;
        let decision = decide(ask.request.kind, ask.request.head_only, ctx);
        let tally = decision.tally();
        self.scratch.clear();
        decision.head(site, Persist::KeepAlive, &mut self.scratch);
        let (fixed, bodiless, end) = (matches!(decision.content, Content::Fixed), decision.bodiless(), decision.end);
        let body = match decision.content {
            _ if bodiless => Body::Owned(Vec::new()),
            Content::Fixed => Body::Shared(site.h2_fixed.body.clone()),
            Content::Doc { doc, .. } => {
                let source = Box::new(DocBody { doc, path: ask.request.path.clone(), scratch: Vec::new() });
                // A cut body is announced whole; the stream is reset once `end` bytes are out.
                Body::Made { source, len: doc.len(), cut: end }
            }
            Content::Stats(json) => Body::Owned(json),
            Content::Recorded { index, .. } => match site.recording.as_deref().map(|r| r.shared_body(index)) {
                Some((bytes, len)) if len == bytes.len() as u64 => Body::Shared(bytes),
                // A prefix of the filler, copied a frame at a time.
                Some((bytes, len)) => Body::Made { source: Box::new(Prefix(bytes)), len, cut: len },
                None => Body::Owned(Vec::new()),
            },
            Content::Unmatched => Body::Owned(decision.kept_body(site).unwrap_or_default().to_vec()),
        };
        let submitted = if fixed {
            self.session.submit_response(ask.stream, &site.h2_fixed.fields, body)
        } else {
            let fields = crate::http::fields::response_fields(&mut self.scratch);
            self.session.submit_response(ask.stream, &fields, body)
        };
        if submitted.is_ok() {
            tally.count(ctx.counters);
        }
    }
}

/// The front of a shared buffer (a recorded body's filler), copied a frame at a time.
struct Prefix(std::sync::Arc<[u8]>);

impl Source for Prefix {
    fn fill(&mut self, offset: u64, out: &mut [u8]) {
        // Never past the buffer, so this cannot panic inside nghttp2's callback.
        let from = usize::try_from(offset).unwrap_or(usize::MAX).min(self.0.len());
        let n = out.len().min(self.0.len() - from);
        out[..n].copy_from_slice(&self.0[from..from + n]);
    }
}

/// A document's body, made a frame at a time as nghttp2 sends it.
struct DocBody {
    doc: Document,
    path: Box<str>,
    /// One frame's bytes, reused.
    scratch: Vec<u8>,
}

impl Source for DocBody {
    fn fill(&mut self, offset: u64, out: &mut [u8]) {
        self.scratch.clear();
        self.doc.body_range(&self.path, offset, offset.saturating_add(out.len() as u64), &mut self.scratch);
        // Never more than asked, so this cannot panic inside nghttp2's callback.
        let n = self.scratch.len().min(out.len());
        out[..n].copy_from_slice(&self.scratch[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_head_becomes_fields() {
        let mut head =
            b"HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=60\r\nETag: \"1-2\"\r\nConnection: close\r\n\r\n"
                .to_vec();
        let fields = crate::http::fields::response_fields(&mut head);
        let want: [(&[u8], &[u8]); 3] =
            [(b":status", b"304"), (b"cache-control", b"max-age=60"), (b"etag", b"\"1-2\"")];
        assert_eq!(fields, want);
    }

    #[test]
    fn only_the_preface_switches() {
        let rows: [(&[u8], bool); 6] = [
            (PREFACE, true),
            (b"PRI * HTTP/2.0\r\n", true),
            (b"PRI", true),
            // Too short to tell: HTTP/1.
            (b"PR", false),
            (b"POST / HTTP/1.1\r\n", false),
            (b"GET / HTTP/1.1\r\n\r\n", false),
        ];
        for (first, h2) in rows {
            assert_eq!(is_preface(first), h2, "{:?}", String::from_utf8_lossy(first));
        }
    }
}
