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

use super::links::{LinkState, Links};
use super::*;
use crate::h2::{Event, Session, Settings};
use crate::http::fields::FieldRequest;
use crate::http::response::Captured;

mod streams;
mod transport;
/// RST_STREAM code of a stream the client gives up on.
const CANCEL: u32 = 0x8;
/// RST_STREAM code of a stream the server did not process.
const REFUSED_STREAM: u32 = 0x7;

/// One HTTP/2 connection: what the protocol keeps of it (the rest is in [`Links`]).
pub(super) struct Link {
    stream: Option<Stream>,
    session: Option<Session>,
    /// Bytes the session produced, from `out_at` on not yet written.
    out: Vec<u8>,
    out_at: usize,
    /// Streams in flight: stream id -> slot.
    by_stream: HashMap<i32, u32>,
    /// The server has sent valid HTTP/2: until then the connection is not counted as made,
    /// and its end is a failed connect (a server that does not speak h2c closes or answers
    /// in HTTP/1).
    confirmed: bool,
}

impl Link {
    pub(super) fn new() -> Link {
        Link { stream: None, session: None, out: Vec::new(), out_at: 0, by_stream: HashMap::new(), confirmed: false }
    }
}

/// A worker's links, what they share, and what each slot's stream holds.
pub(super) struct Http2 {
    /// When links open, back off and are replaced; which slots go again.
    mux: Links,
    links: Vec<Link>,
    /// Per slot: its stream.
    slots: Vec<SlotStream>,
    /// Responses are kept whole for a hook or a content check.
    capture: bool,
    /// The request every slot sends.
    fixed: FieldRequest,
    /// The link being read: sends made while its events are handled wait for one flush.
    reading: Option<usize>,
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
    /// The response just completed, kept whole for a hook or a content check.
    capture: Option<Box<Captured>>,
}

impl Http2 {
    /// `count` links of `streams` slots each, sending `fixed`.
    pub(in crate::engine::worker) fn new(count: usize, streams: usize, fixed: FieldRequest) -> Http2 {
        let streams = streams.max(1);
        Http2 {
            mux: Links::new(count, streams),
            links: (0..count).map(|_| Link::new()).collect(),
            slots: (0..count * streams).map(|_| SlotStream::default()).collect(),
            capture: false,
            fixed,
            reading: None,
            events: Vec::new(),
        }
    }
}

impl Worker<'_, Http2> {
    /// Opens link `l`: a TCP (and TLS) connection to its origin.
    pub(super) fn connect_h2_link(&mut self, l: usize) {
        let now = self.clock.now_us();
        match self.connect(l, l) {
            Ok(s) => {
                self.transport.links[l].stream = Some(s);
                self.link_connecting(l, now);
            }
            Err(e) => self.link_connect_failed(l, connect_cause(&e), e.to_string()),
        }
    }

    /// A poll event on link `l`.
    pub(super) fn link_event(&mut self, l: usize, readable: Readable, writable: bool) {
        let Some(&life) = self.transport.mux.life.get(l) else { return };
        let link = &mut self.transport.links[l];
        match life.state {
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
        let mut session = match Session::client(Settings::default()) {
            Ok(s) => s,
            Err(e) => return self.link_connect_failed(l, ConnectCause::Other, e.to_string()),
        };
        session.set_capture(links.capture);
        link.session = Some(session);
        link.confirmed = false;
        link.out.clear();
        link.out_at = 0;
        links.reading = Some(l);
        self.start_slots(l);
        self.transport.reading = None;
        self.flush_link(l);
    }

    /// Puts slot `i`'s request on its link as a new stream.
    pub(super) fn h2_submit(&mut self, i: usize) {
        let l = self.transport.mux.of(i);
        let scheme = crate::config::Scheme::of_tls(self.plan.https()).name();
        let Ok(converted) =
            self.convert_built(i, |bytes, authority| crate::http::fields::from_http1(bytes, scheme, authority))
        else {
            return;
        };
        let links = &mut self.transport;
        let link = &mut links.links[l];
        let life = &mut links.mux.life[l];
        let request = converted.as_ref().unwrap_or(&links.fixed);
        let submitted = match (&mut link.session, life.state, life.goaway) {
            (Some(session), LinkState::Open, false) => {
                session.submit_request(&request.fields, request.body.clone()).ok()
            }
            _ => None,
        };
        let Some(id) = submitted else {
            // The link is going away (or its stream ids ran out): the request waits for the
            // next connection, not sent yet.
            life.goaway |= life.state == LinkState::Open;
            let retire = life.goaway && link.by_stream.is_empty();
            self.requeue(i);
            if retire {
                self.retire_link(l);
            } else {
                self.mux_open(i);
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
        if session.is_done() && !links.mux.life[l].goaway {
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
                        links.mux.life[l].failures = 0;
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
        if self.transport.mux.life.get(l).is_some_and(|k| k.state == LinkState::Open) {
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

    /// Drops link `l`'s connection and session, counting its headers first.
    pub(super) fn drop_h2_link(&mut self, l: usize) {
        self.count_headers(l);
        let link = &mut self.transport.links[l];
        link.stream = None;
        link.session = None;
        link.by_stream.clear();
        link.out.clear();
        link.out_at = 0;
    }
}
