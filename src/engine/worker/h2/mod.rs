//! HTTP/2: a worker's connections ("links") carry its request slots as streams, `-m` per
//! link: slot `i` rides link `i / m`. Everything about *when* a slot
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
use crate::http::response::Captured;

mod streams;
mod transport;
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
    pub(super) fn new() -> Link {
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

/// A worker's links, what they share, and what each slot's stream holds.
pub(super) struct Http2 {
    /// Slots per link (`-m`).
    streams: usize,
    links: Vec<Link>,
    /// Per slot: its stream.
    slots: Vec<SlotStream>,
    /// Responses are kept whole for a hook or a content check.
    capture: bool,
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

/// What a slot's current stream holds.
#[derive(Default)]
struct SlotStream {
    /// The stream carrying the current request.
    id: i32,
    /// The current response's status, once its headers arrived.
    status: u16,
    /// The request was refused unprocessed (GOAWAY) and goes again on the next connection.
    retry: bool,
    /// The response just completed, kept whole for a hook or a content check.
    capture: Option<Box<Captured>>,
}

impl Http2 {
    /// `count` links of `streams` slots each, sending `fixed`.
    pub(in crate::engine::worker) fn new(count: usize, streams: usize, fixed: H2Request) -> Http2 {
        let streams = streams.max(1);
        Http2 {
            streams,
            links: (0..count).map(|_| Link::new()).collect(),
            slots: (0..count * streams).map(|_| SlotStream::default()).collect(),
            capture: false,
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

impl Worker<'_, Http2> {
    /// Slot `i` wants to send: opens its link if it is closed, or starts the slot if it is up.
    pub(super) fn h2_open(&mut self, i: usize) {
        let m = self.transport.streams;
        let l = i / m;
        let goaway = self.transport.links[l].goaway;
        match self.transport.links[l].state {
            // A link going away takes no new stream: the slot waits for its replacement.
            LinkState::Open if goaway => {}
            LinkState::Open => {
                if self.slots[i].state == State::Closed {
                    self.slot_ready(i);
                }
            }
            LinkState::Connecting => {}
            LinkState::Closed => self.connect_link(l),
        }
    }

    pub(super) fn connect_link(&mut self, l: usize) {
        let now = self.clock.now_us();
        let result = self.connect(l, l);
        let timeout = self.plan.timeout_us;
        let links = &mut self.transport;
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
                self.opening.started();
            }
            Err(e) => self.link_connect_failed(l, connect_cause(&e), e.to_string()),
        }
    }

    /// A poll event on link `l`.
    pub(super) fn link_event(&mut self, l: usize, readable: Readable, writable: bool) {
        let Some(link) = self.transport.links.get_mut(l) else { return };
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
    pub(super) fn link_up(&mut self, l: usize) {
        let tls = self.plan.https();
        let links = &mut self.transport;
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
        session.set_capture(links.capture);
        link.session = Some(session);
        link.uses = 0;
        link.confirmed = false;
        link.state = LinkState::Open;
        link.out.clear();
        link.out_at = 0;
        let m = links.streams;
        links.reading = Some(l);
        for i in l * m..(l + 1) * m {
            if self.slots[i].state == State::Closed {
                self.slot_ready(i);
            }
        }
        self.transport.reading = None;
        if self.transport.links[l].by_stream.is_empty() {
            // Nothing sent at once (rate mode): a response cannot prove the server took it.
            self.link_opened(l);
        }
        self.flush_link(l);
    }

    /// Slot `i`'s link is up and the slot is free: a request the server refused unprocessed
    /// goes again (as first planned); otherwise the slot takes its next request.
    pub(super) fn slot_ready(&mut self, i: usize) {
        if std::mem::take(&mut self.transport.slots[i].retry) && !self.draining {
            let s = &mut self.slots[i];
            s.bump();
            s.state = State::Writing;
            self.meter.rec.sent += 1;
            let at_us = self.clock.now_us() + self.plan.timeout_us;
            self.due.deadlines.push(Deadline { at_us, conn: i as u32, generation: s.generation });
            self.h2_submit(i);
        } else {
            self.next_request(i);
        }
    }

    /// Puts slot `i`'s request on its link as a new stream.
    pub(super) fn h2_submit(&mut self, i: usize) {
        let m = self.transport.streams;
        let l = i / m;
        // A script's or a proxy test's request is built as HTTP/1 bytes and converted here.
        let converted = match self.requests.built(i) {
            None => None,
            Some(bytes) => {
                let scheme = if self.plan.https() { "https" } else { "http" };
                match crate::h2::from_http1(bytes, scheme, &self.addrs[l % self.addrs.len()].to_string()) {
                    Ok(r) => Some(r),
                    Err(why) => {
                        self.meter.rec.sent = self.meter.rec.sent.saturating_sub(1);
                        let s = &mut self.slots[i];
                        s.state = State::Closed;
                        s.bump();
                        return self.script_failed(ScriptError::Runtime { hook: "request", message: why });
                    }
                }
            }
        };
        let links = &mut self.transport;
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
        let stream = &mut links.slots[i];
        stream.id = id;
        stream.status = 0;
        self.slots[i].state = State::Reading;
        if !reading {
            self.flush_link(l);
        }
    }

    /// Writes what link `l`'s session has to send.
    pub(super) fn flush_link(&mut self, l: usize) {
        let links = &mut self.transport;
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
                self.meter.rec.h2.protocol_errors += 1;
            }
            self.link_failed(l, ErrorKind::Parse);
        }
    }

    /// Reads link `l` until drained, handling what its session makes of the bytes.
    pub(super) fn read_link(&mut self, l: usize, how: Readable) {
        let mut buf = std::mem::take(&mut self.buf);
        loop {
            let links = &mut self.transport;
            let link = &mut links.links[l];
            let (Some(stream), Some(session)) = (link.stream.as_mut(), link.session.as_mut()) else { break };
            match stream.read(&mut buf) {
                Ok(0) => {
                    self.link_failed(l, ErrorKind::Read);
                    break;
                }
                Ok(n) => {
                    let drained = n < buf.len() && stream.short_read_drains() && how != Readable::UntilEof;
                    self.meter.rec.bytes += n as u64;
                    if session.receive(&buf[..n]).is_err() {
                        if link.confirmed {
                            self.meter.rec.h2.protocol_errors += 1;
                        }
                        self.link_failed(l, ErrorKind::Parse);
                        break;
                    }
                    if !link.confirmed && session.peer_spoke() {
                        link.confirmed = true;
                        link.failures = 0;
                        self.meter.rec.connections += 1;
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
        if self.transport.links.get(l).is_some_and(|k| k.state == LinkState::Open) {
            self.flush_link(l);
        }
    }

    /// Link `l` failed: every stream in flight on it is lost as `kind`, and it is replaced.
    /// Before the server spoke HTTP/2 it is a failed connect instead: its requests were never
    /// taken, so they wait for the next connection.
    pub(super) fn link_failed(&mut self, l: usize, kind: ErrorKind) {
        if !self.transport.links[l].confirmed {
            let waiting: Vec<u32> = self.transport.links[l].by_stream.drain().map(|(_, i)| i).collect();
            for i in waiting {
                self.requeue(i as usize);
            }
            let why = if self.plan.https() {
                "the connection ended before the server spoke HTTP/2"
            } else {
                "the server did not answer in HTTP/2 (h2c with prior knowledge); drop --http2 for HTTP/1.1"
            };
            return self.link_connect_failed(l, ConnectCause::Other, why.to_string());
        }
        let lost: Vec<u32> = self.transport.links[l].by_stream.drain().map(|(_, i)| i).collect();
        for i in lost {
            self.failed(i as usize, kind);
            let s = &mut self.slots[i as usize];
            s.state = State::Closed;
            s.bump();
        }
        self.retire_link(l);
    }

    /// Closes link `l` (its streams are done or lost) and, unless the run is over, opens a new
    /// connection in its place.
    pub(super) fn retire_link(&mut self, l: usize) {
        self.close_link(l);
        let m = self.transport.streams;
        for i in l * m..(l + 1) * m {
            if self.slots[i].state == State::Idle {
                self.slots[i].state = State::Closed;
            }
        }
        // A closed slot stands for the link in the opening queue; when none is closed, the
        // link reopens when one of its slots next sends.
        let closed = (l * m..(l + 1) * m).find(|&i| self.slots[i].state == State::Closed);
        if let Some(i) = closed.filter(|_| !self.draining) {
            self.opening.queue.push_back(i as u32);
            self.open_queued();
        }
    }

    /// Adds link `l`'s header byte counts to the recorder (when its session ends).
    pub(super) fn count_headers(&mut self, l: usize) {
        let counts = self.transport.links[l].session.as_ref().map(|s| (s.header_bytes(), s.flow_stalls()));
        if let Some(((compressed, decoded), stalls)) = counts {
            self.meter.rec.h2.header_frame_bytes += compressed;
            self.meter.rec.h2.header_bytes += decoded;
            self.meter.rec.h2.flow_control_stalls += stalls;
        }
    }

    /// Counts what the links still open received (at the end of the run).
    pub(super) fn finish_links(&mut self) {
        for l in 0..self.transport.links.len() {
            self.count_headers(l);
        }
    }

    pub(super) fn close_link(&mut self, l: usize) {
        self.count_headers(l);
        let links = &mut self.transport;
        let link = &mut links.links[l];
        link.stream = None;
        link.session = None;
        link.state = LinkState::Closed;
        link.by_stream.clear();
        link.out.clear();
        link.out_at = 0;
        link.generation = link.generation.wrapping_add(1);
        if std::mem::take(&mut link.opening) {
            self.opening.ended();
        }
    }

    /// Link `l` proved the server took it: its place in the opening window goes on.
    pub(super) fn link_opened(&mut self, l: usize) {
        if std::mem::take(&mut self.transport.links[l].opening) {
            self.opened();
        }
    }

    pub(super) fn link_connect_failed(&mut self, l: usize, cause: ConnectCause, why: String) {
        self.count_connect_error(l, cause, why);
        self.close_link(l);
        let now = self.clock.now_us();
        let links = &mut self.transport;
        let link = &mut links.links[l];
        link.failures = link.failures.saturating_add(1);
        let backoff = retry_backoff_us(link.failures);
        let generation = link.generation;
        links.retries.push(Reverse((now + backoff, l as u32, generation)));
    }

    /// Fails the connects whose time ran out and reconnects the links whose backoff ended.
    pub(super) fn expire_links(&mut self, now: u64) {
        while let Some(&Reverse((at, l, generation))) = self.transport.retries.peek() {
            if at > now {
                break;
            }
            self.transport.retries.pop();
            let link = &self.transport.links[l as usize];
            if link.generation == generation && link.state == LinkState::Closed && !self.draining {
                self.connect_link(l as usize);
            }
        }
        loop {
            let links = &mut self.transport;
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
