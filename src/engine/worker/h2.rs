//! A worker's HTTP/2 connections ("links"). Over HTTP/2 the worker's slots (`conns`) are
//! request slots, `-m` per link: slot `i` rides link `i / m`. Everything about *when* a slot
//! sends (closed loop, paced dispatch to any free slot, deadlines, drain) is the same code as
//! over HTTP/1; this file is only how a slot's request reaches the wire and how its end comes
//! back: submit to the link's nghttp2 session, flush, read, and turn the session's events into
//! completions, resets and retries.
//!
//! A timeout resets its stream (RST_STREAM CANCEL) and keeps the connection. A GOAWAY ends the
//! link once its streams are done; the streams the server refused unprocessed (above its last
//! stream id) are sent again on the new connection, counted as retried, their latency from the
//! first attempt. A read or protocol error fails every stream in flight on the link and
//! replaces it.

use std::collections::HashMap;

use super::*;
use crate::h2::{Event, H2Request, Session, Settings};

/// Poll tokens from here up are links (below: HTTP/1 connections).
pub(super) const LINK_BASE: usize = usize::MAX / 4;
/// RST_STREAM code of a stream the client gives up on.
const CANCEL: u32 = 0x8;
/// RST_STREAM code of a stream the server did not process.
const REFUSED_STREAM: u32 = 0x7;

/// Where a link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LinkState {
    Closed,
    Connecting,
    Open,
}

/// One HTTP/2 connection.
pub(super) struct Link {
    stream: Option<Stream>,
    session: Option<Session>,
    state: LinkState,
    /// Bytes the session produced, from `out_at` on not yet written.
    out: Vec<u8>,
    out_at: usize,
    /// Streams in flight: stream id -> slot.
    by_stream: HashMap<i32, u32>,
    generation: u32,
    failures: u32,
    /// Counted in the worker's opening window until its first response.
    opening: bool,
    /// The server sent GOAWAY (or a client keep-alive limit was reached): no new streams;
    /// replaced once its streams end.
    goaway: bool,
    /// Responses completed on this connection (for a proxy test's `--keepalive`).
    uses: u64,
    /// The server has sent valid HTTP/2: until then the connection is not counted as made,
    /// and its end is a failed connect (a server that does not speak h2c closes or answers
    /// in HTTP/1).
    confirmed: bool,
}

impl Link {
    fn new() -> Link {
        Link {
            stream: None,
            session: None,
            state: LinkState::Closed,
            out: Vec::new(),
            out_at: 0,
            by_stream: HashMap::new(),
            generation: 0,
            failures: 0,
            opening: false,
            goaway: false,
            uses: 0,
            confirmed: false,
        }
    }
}

/// A worker's links and what they share.
pub(super) struct Links {
    /// Slots per link (`-m`).
    pub(super) streams: usize,
    links: Vec<Link>,
    /// The request every slot sends.
    fixed: H2Request,
    /// The link being read: sends made while its events are handled wait for one flush.
    reading: Option<usize>,
    /// Connect deadlines, one per link.
    deadlines: Deadlines,
    /// Reconnects after a failed connect, with backoff: (at, link, generation).
    retries: std::collections::BinaryHeap<Reverse<(u64, u32, u32)>>,
    /// Events taken out of a session while they are handled (kept for its capacity).
    events: Vec<Event>,
}

impl Links {
    /// `count` links of `streams` slots each, sending `fixed`.
    pub(super) fn new(count: usize, streams: usize, fixed: H2Request) -> Links {
        Links {
            streams,
            links: (0..count).map(|_| Link::new()).collect(),
            fixed,
            reading: None,
            deadlines: Deadlines::new(count),
            retries: std::collections::BinaryHeap::new(),
            events: Vec::new(),
        }
    }

    /// Links with a connection up.
    pub(super) fn open(&self) -> usize {
        self.links.iter().filter(|l| l.state == LinkState::Open).count()
    }

    /// The next connect deadline or reconnect.
    pub(super) fn next_deadline(&mut self) -> Option<u64> {
        let retry = self.retries.peek().map(|r| r.0 .0);
        let links = &self.links;
        match (self.deadlines.next(|d| connecting(links, d)), retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// How a worker speaks to its server.
pub(super) enum Wire {
    /// Each slot is an HTTP/1.1 connection.
    H1,
    /// Slots are streams on links.
    H2(Links),
}

/// The links of an HTTP/2 worker (borrowing only its wire, so the recorder stays usable).
fn links_of(wire: &mut Wire) -> &mut Links {
    match wire {
        Wire::H2(l) => l,
        // Only HTTP/2 paths call this: the wire is settled when the worker is made.
        Wire::H1 => unreachable!("an HTTP/2 path on an HTTP/1 worker"),
    }
}

impl Worker<'_> {
    fn links(&mut self) -> &mut Links {
        links_of(&mut self.wire)
    }

    /// Slot `i` wants to send: opens its link if it is closed, or starts the slot if it is up.
    pub(super) fn h2_open(&mut self, i: usize) {
        let m = self.links().streams;
        let l = i / m;
        let goaway = self.links().links[l].goaway;
        match self.links().links[l].state {
            // A link going away takes no new stream: the slot waits for its replacement.
            LinkState::Open if goaway => {}
            LinkState::Open => {
                if self.conns[i].state == State::Closed {
                    self.slot_ready(i);
                }
            }
            LinkState::Connecting => {}
            LinkState::Closed => self.connect_link(l),
        }
    }

    fn connect_link(&mut self, l: usize) {
        let now = self.clock.now_us();
        let sources = &self.plan.source_addrs;
        let source = (!sources.is_empty()).then(|| sources[(l + self.index) % sources.len()]);
        let result = Stream::connect(self.addr, source, self.plan.tls.as_ref()).and_then(|mut s| {
            self.poll
                .registry()
                .register(s.socket(), Token(LINK_BASE + l), Interest::READABLE | Interest::WRITABLE)
                .map_err(ConnectError::Io)?;
            Ok(s)
        });
        let timeout = self.plan.timeout_us;
        let links = self.links();
        let link = &mut links.links[l];
        link.generation = link.generation.wrapping_add(1);
        match result {
            Ok(s) => {
                link.stream = Some(s);
                link.state = LinkState::Connecting;
                link.opening = true;
                link.goaway = false;
                let generation = link.generation;
                links.deadlines.push(Deadline { at_us: now + timeout, conn: l as u32, generation });
                self.connecting += 1;
            }
            Err(e) => self.link_connect_failed(l, connect_cause(&e), e.to_string()),
        }
    }

    /// A poll event on link `l`.
    pub(super) fn link_event(&mut self, l: usize, readable: Readable, writable: bool) {
        let Some(link) = self.links().links.get_mut(l) else { return };
        match link.state {
            LinkState::Closed => {}
            LinkState::Connecting => {
                let Some(stream) = link.stream.as_mut() else { return };
                match stream.poll_connect(writable) {
                    Ok(true) => self.link_up(l),
                    Ok(false) => {}
                    Err(e) => self.link_connect_failed(l, connect_cause(&e), e.to_string()),
                }
            }
            LinkState::Open => {
                if writable {
                    self.flush_link(l);
                }
                if readable != Readable::No {
                    self.read_link(l, readable);
                }
            }
        }
    }

    /// Link `l` connected: its session starts and its slots send.
    fn link_up(&mut self, l: usize) {
        let tls = self.plan.tls.is_some();
        let links = links_of(&mut self.wire);
        let link = &mut links.links[l];
        if tls && link.stream.as_ref().and_then(|s| s.alpn()) != Some(b"h2".as_slice()) {
            let why = "the server did not choose HTTP/2 (ALPN h2); drop --http2 for HTTP/1.1".to_string();
            return self.link_connect_failed(l, ConnectCause::Tls, why);
        }
        let session = match Session::client(Settings::default()) {
            Ok(s) => s,
            Err(e) => return self.link_connect_failed(l, ConnectCause::Other, e.to_string()),
        };
        let mut session = session;
        session.set_capture(self.send.captures());
        link.session = Some(session);
        link.uses = 0;
        link.confirmed = false;
        link.state = LinkState::Open;
        link.out.clear();
        link.out_at = 0;
        let m = links.streams;
        links.reading = Some(l);
        for i in l * m..(l + 1) * m {
            if self.conns[i].state == State::Closed {
                self.slot_ready(i);
            }
        }
        self.links().reading = None;
        if self.links().links[l].by_stream.is_empty() {
            // Nothing sent at once (rate mode): a response cannot prove the server took it.
            self.link_opened(l);
        }
        self.flush_link(l);
    }

    /// Slot `i`'s link is up and the slot is free: a request the server refused unprocessed
    /// goes again (as first planned); otherwise the slot takes its next request.
    fn slot_ready(&mut self, i: usize) {
        if std::mem::take(&mut self.conns[i].retry) && !self.draining {
            let c = &mut self.conns[i];
            c.generation = c.generation.wrapping_add(1);
            c.state = State::Writing;
            self.rec.sent += 1;
            let at_us = self.clock.now_us() + self.plan.timeout_us;
            self.deadlines.push(Deadline { at_us, conn: i as u32, generation: c.generation });
            self.h2_submit(i);
        } else {
            self.next_request(i);
        }
    }

    /// Puts slot `i`'s request on its link as a new stream.
    pub(super) fn h2_submit(&mut self, i: usize) {
        let m = self.links().streams;
        let l = i / m;
        // A script's or a proxy test's request is built as HTTP/1 bytes and converted here.
        let built = match &self.send {
            Send::Fixed(_) => None,
            Send::Script(s) if !s.builds => Some(&s.fixed),
            _ => Some(&self.conns[i].req),
        };
        let converted = match built {
            None => None,
            Some(bytes) => {
                let scheme = if self.plan.tls.is_some() { "https" } else { "http" };
                match crate::h2::from_http1(bytes, scheme, &self.addr.to_string()) {
                    Ok(r) => Some(r),
                    Err(why) => {
                        self.rec.sent = self.rec.sent.saturating_sub(1);
                        let c = &mut self.conns[i];
                        c.state = State::Closed;
                        c.generation = c.generation.wrapping_add(1);
                        return self.script_failed(ScriptError::Runtime { hook: "request", message: why });
                    }
                }
            }
        };
        let links = links_of(&mut self.wire);
        let link = &mut links.links[l];
        let request = converted.as_ref().unwrap_or(&links.fixed);
        let submitted = match (&mut link.session, link.state, link.goaway) {
            (Some(session), LinkState::Open, false) => {
                session.submit_request(&request.fields, request.body.clone()).ok()
            }
            _ => None,
        };
        let Some(id) = submitted else {
            // The link is going away (or its stream ids ran out): the request waits for the
            // next connection, not sent yet.
            link.goaway |= link.state == LinkState::Open;
            let retire = link.goaway && link.by_stream.is_empty();
            self.requeue(i);
            if retire {
                self.retire_link(l);
            } else {
                self.h2_open(i);
            }
            return;
        };
        link.by_stream.insert(id, i as u32);
        let reading = links.reading == Some(l);
        let c = &mut self.conns[i];
        c.stream_id = id;
        c.status = 0;
        c.state = State::Reading;
        if !reading {
            self.flush_link(l);
        }
    }

    /// Writes what link `l`'s session has to send.
    pub(super) fn flush_link(&mut self, l: usize) {
        let links = self.links();
        let link = &mut links.links[l];
        let (Some(session), Some(stream)) = (link.session.as_mut(), link.stream.as_mut()) else { return };
        if link.out_at == link.out.len() {
            link.out.clear();
            link.out_at = 0;
        }
        if session.output(&mut link.out).is_err() {
            return self.link_failed(l, ErrorKind::Parse);
        }
        while link.out_at < link.out.len() {
            match stream.write(&link.out[link.out_at..]) {
                Ok(0) => return self.link_failed(l, ErrorKind::Write),
                Ok(n) => link.out_at += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.link_failed(l, ErrorKind::Write),
            }
        }
        if stream.flush().is_err() {
            return self.link_failed(l, ErrorKind::Write);
        }
        if session.is_done() && !link.goaway {
            // nghttp2 ended the connection itself (a protocol, compression or flow-control
            // error by the server) and its GOAWAY is out: the streams in flight are lost.
            if link.confirmed {
                self.rec.h2.protocol_errors += 1;
            }
            self.link_failed(l, ErrorKind::Parse);
        }
    }

    /// Reads link `l` until drained, handling what its session makes of the bytes.
    fn read_link(&mut self, l: usize, how: Readable) {
        let mut buf = std::mem::take(&mut self.buf);
        loop {
            let links = links_of(&mut self.wire);
            let link = &mut links.links[l];
            let (Some(stream), Some(session)) = (link.stream.as_mut(), link.session.as_mut()) else { break };
            match stream.read(&mut buf) {
                Ok(0) => {
                    self.link_failed(l, ErrorKind::Read);
                    break;
                }
                Ok(n) => {
                    let drained = n < buf.len() && stream.short_read_drains() && how != Readable::UntilEof;
                    self.rec.bytes += n as u64;
                    if session.receive(&buf[..n]).is_err() {
                        if link.confirmed {
                            self.rec.h2.protocol_errors += 1;
                        }
                        self.link_failed(l, ErrorKind::Parse);
                        break;
                    }
                    if !link.confirmed && session.peer_spoke() {
                        link.confirmed = true;
                        link.failures = 0;
                        self.rec.connections += 1;
                    }
                    if !self.handle_events(l) || drained {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.link_failed(l, ErrorKind::Read);
                    break;
                }
            }
        }
        self.buf = buf;
        if self.links().links.get(l).is_some_and(|k| k.state == LinkState::Open) {
            self.flush_link(l);
        }
    }

    /// Turns link `l`'s session events into completions; false when the link went away.
    fn handle_events(&mut self, l: usize) -> bool {
        let links = self.links();
        let Some(session) = links.links[l].session.as_mut() else { return false };
        let mut events = std::mem::take(&mut links.events);
        events.append(session.events());
        links.reading = Some(l);
        // A GOAWAY holds for the whole batch: a response completed before it in the batch must
        // not start a stream the server has already said it will refuse.
        if events.iter().any(|e| matches!(e, Event::GoAway { .. })) {
            links.links[l].goaway = true;
        }
        for e in events.drain(..) {
            match e {
                Event::Status { stream, status } => {
                    if let Some(&i) = self.links().links[l].by_stream.get(&stream) {
                        let c = &mut self.conns[i as usize];
                        c.status = status;
                        if matches!(self.send, Send::Proxy(_)) {
                            let ttfb =
                                self.clock.now_us().saturating_sub(c.sent_us).clamp(1, crate::stats::MAX_LATENCY_US);
                            self.rec.ttfb_us.saturating_record(ttfb);
                            self.interval.ttfb_us.saturating_record(ttfb);
                        }
                    }
                }
                Event::Data { stream, .. } => {
                    // --client-abort-rate: walk away once the body starts.
                    let Some(&i) = self.links().links[l].by_stream.get(&stream) else { continue };
                    if self.conns[i as usize].sent.abort {
                        self.rec.aborted += 1;
                        self.abandon(l, i as usize);
                    }
                }
                Event::Closed { stream, code } => self.stream_closed(l, stream, code),
                Event::GoAway { .. } => self.rec.h2.goaways += 1,
                Event::Request { .. } => {}
            }
        }
        let links = self.links();
        links.events = events;
        links.reading = None;
        let link = &links.links[l];
        if link.goaway && link.by_stream.is_empty() {
            self.retire_link(l);
            return false;
        }
        true
    }

    /// Stream `stream` of link `l` ended with `code`.
    fn stream_closed(&mut self, l: usize, stream: i32, code: u32) {
        let links = self.links();
        let goaway = links.links[l].goaway;
        // A stream this side reset (a timeout) was already let go of.
        let Some(i) = links.links[l].by_stream.remove(&stream) else { return };
        let i = i as usize;
        match code {
            0 if self.conns[i].status != 0 => {
                if self.links().links[l].opening {
                    self.link_opened(l);
                }
                let captured = self.links().links[l].session.as_mut().and_then(|s| s.take_captured(stream));
                self.conns[i].capture = captured.map(Box::new);
                let status = self.conns[i].status;
                self.record(i, status);
                if self.run_response_hook(i, status) && self.check_proxy_response(i, status) {
                    self.next_request(i);
                }
            }
            0 => {
                // Ended without a final status: not a response.
                self.rec.error(ErrorKind::Parse);
                self.next_request(i);
            }
            REFUSED_STREAM if goaway => {
                // Not processed: it goes again on the next connection.
                self.requeue(i);
                self.rec.h2.retried += 1;
            }
            code => {
                self.rec.error(ErrorKind::Reset);
                self.rec.h2.resets[(code as usize).min(14)] += 1;
                self.next_request(i);
            }
        }
    }

    /// Slot `i`'s request never reached a server that took it: it is not counted as sent and
    /// goes again, as first planned, once the slot's link is up (see [`Worker::slot_ready`]).
    fn requeue(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.state = State::Closed;
        c.retry = true;
        c.generation = c.generation.wrapping_add(1);
        self.rec.sent = self.rec.sent.saturating_sub(1);
    }

    /// Resets slot `i`'s stream on link `l` and frees the slot (nothing is counted here).
    fn abandon(&mut self, l: usize, i: usize) {
        let id = self.conns[i].stream_id;
        let link = &mut self.links().links[l];
        link.by_stream.remove(&id);
        if let Some(s) = link.session.as_mut() {
            s.reset(id, CANCEL);
            s.take_captured(id);
        }
        self.h2_free(i);
    }

    /// A proxy test's keep-alive limit over HTTP/2: after `limit` responses the link takes no
    /// new stream and is replaced once its streams end. True: slot `i` may go on.
    pub(super) fn h2_count_use(&mut self, i: usize, limit: u64) -> bool {
        let m = self.links().streams;
        let link = &mut self.links().links[i / m];
        link.uses += 1;
        if limit > 0 && link.uses >= limit {
            link.goaway = true;
        }
        true
    }

    /// Slot `i` gives up its request (a timeout, or a failure of its own): the stream is reset
    /// and the slot goes on; the link stays.
    pub(super) fn h2_fail(&mut self, i: usize, kind: ErrorKind) {
        let m = self.links().streams;
        let l = i / m;
        let in_flight = matches!(self.conns[i].state, State::Writing | State::Reading);
        if in_flight {
            self.rec.error(kind);
            self.abandon(l, i);
            self.flush_link(l);
            return;
        }
        self.h2_free(i);
    }

    /// Slot `i` is free: it sends again if its link is up, else waits for it.
    pub(super) fn h2_free(&mut self, i: usize) {
        let m = self.links().streams;
        let up = self.links().links[i / m].state == LinkState::Open;
        let c = &mut self.conns[i];
        c.generation = c.generation.wrapping_add(1);
        if up && !self.draining {
            self.next_request(i);
        } else {
            c.state = State::Closed;
        }
    }

    /// Link `l` failed: every stream in flight on it is lost as `kind`, and it is replaced.
    /// Before the server spoke HTTP/2 it is a failed connect instead: its requests were never
    /// taken, so they wait for the next connection.
    pub(super) fn link_failed(&mut self, l: usize, kind: ErrorKind) {
        if !self.links().links[l].confirmed {
            let waiting: Vec<u32> = self.links().links[l].by_stream.drain().map(|(_, i)| i).collect();
            for i in waiting {
                self.requeue(i as usize);
            }
            let why = if self.plan.tls.is_some() {
                "the connection ended before the server spoke HTTP/2"
            } else {
                "the server did not answer in HTTP/2 (h2c with prior knowledge); drop --http2 for HTTP/1.1"
            };
            return self.link_connect_failed(l, ConnectCause::Other, why.to_string());
        }
        let lost: Vec<u32> = self.links().links[l].by_stream.drain().map(|(_, i)| i).collect();
        for i in lost {
            self.rec.error(kind);
            let c = &mut self.conns[i as usize];
            c.state = State::Closed;
            c.generation = c.generation.wrapping_add(1);
        }
        self.retire_link(l);
    }

    /// Closes link `l` (its streams are done or lost) and, unless the run is over, opens a new
    /// connection in its place.
    fn retire_link(&mut self, l: usize) {
        self.close_link(l);
        let m = self.links().streams;
        for i in l * m..(l + 1) * m {
            if self.conns[i].state == State::Idle {
                self.conns[i].state = State::Closed;
            }
        }
        // A closed slot stands for the link in the opening queue; when none is closed, the
        // link reopens when one of its slots next sends.
        let closed = (l * m..(l + 1) * m).find(|&i| self.conns[i].state == State::Closed);
        if let Some(i) = closed.filter(|_| !self.draining) {
            self.to_open.push_back(i as u32);
            self.open_queued();
        }
    }

    /// Adds link `l`'s header byte counts to the recorder (when its session ends).
    fn count_headers(&mut self, l: usize) {
        let counts = self.links().links[l].session.as_ref().map(|s| (s.header_bytes(), s.flow_stalls()));
        if let Some(((compressed, decoded), stalls)) = counts {
            self.rec.h2.header_frame_bytes += compressed;
            self.rec.h2.header_bytes += decoded;
            self.rec.h2.flow_control_stalls += stalls;
        }
    }

    /// Counts what the links still open received (at the end of the run).
    pub(super) fn finish_links(&mut self) {
        if let Wire::H2(links) = &self.wire {
            for l in 0..links.links.len() {
                self.count_headers(l);
            }
        }
    }

    fn close_link(&mut self, l: usize) {
        self.count_headers(l);
        let links = self.links();
        let link = &mut links.links[l];
        link.stream = None;
        link.session = None;
        link.state = LinkState::Closed;
        link.by_stream.clear();
        link.out.clear();
        link.out_at = 0;
        link.generation = link.generation.wrapping_add(1);
        if std::mem::take(&mut link.opening) {
            self.connecting -= 1;
        }
    }

    /// Link `l` proved the server took it: its place in the opening window goes on.
    fn link_opened(&mut self, l: usize) {
        if std::mem::take(&mut self.links().links[l].opening) {
            self.connecting -= 1;
            self.open_queued();
        }
    }

    fn link_connect_failed(&mut self, l: usize, cause: ConnectCause, why: String) {
        let addr = self.addr;
        self.rec.connect_error(cause, || format!("connect to {addr} failed: {why}"));
        self.close_link(l);
        let now = self.clock.now_us();
        let links = self.links();
        let link = &mut links.links[l];
        link.failures = link.failures.saturating_add(1);
        let backoff = retry_backoff_us(link.failures);
        let generation = link.generation;
        links.retries.push(Reverse((now + backoff, l as u32, generation)));
    }

    /// Fails the connects whose time ran out and reconnects the links whose backoff ended.
    pub(super) fn expire_links(&mut self, now: u64) {
        while let Some(&Reverse((at, l, generation))) = self.links().retries.peek() {
            if at > now {
                break;
            }
            self.links().retries.pop();
            let link = &self.links().links[l as usize];
            if link.generation == generation && link.state == LinkState::Closed && !self.draining {
                self.connect_link(l as usize);
            }
        }
        loop {
            let links = self.links();
            let all = &links.links;
            let Some(d) = links.deadlines.pop_expired(now, |d| connecting(all, d)) else { return };
            self.link_connect_failed(d.conn as usize, ConnectCause::TimedOut, "connect timed out".into());
        }
    }
}

/// Whether a connect deadline still applies to its link.
fn connecting(links: &[Link], d: &Deadline) -> bool {
    links.get(d.conn as usize).is_some_and(|k| k.generation == d.generation && k.state == LinkState::Connecting)
}
