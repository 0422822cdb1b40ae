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

use std::io;

use super::mux::{LinkState, Links, Multiplexed};
use super::{connect_cause, Host, Readable, Transport};
use crate::config::Scheme;
use crate::h2::{Event, Session, Settings};
use crate::http::fields::FieldRequest;
use crate::http::response::Captured;
use crate::ids::IdMap;
use crate::net::stream::{Made, Stream};
use crate::stats::{ConnectCause, ErrorKind, H2Counts};

mod grpc;
mod streams;

/// Bytes read per `read` call, one buffer for every link of the thread.
const READ_BUFFER: usize = 64 * 1024;
/// RST_STREAM code of a stream the client gives up on.
const CANCEL: u32 = 0x8;
/// RST_STREAM code of a stream the server did not process.
const REFUSED_STREAM: u32 = 0x7;

/// One HTTP/2 connection: what the protocol keeps of it (the rest is in [`Links`]).
struct Link {
    stream: Option<Stream>,
    session: Option<Session>,
    /// Bytes the session produced, from `out_at` on not yet written.
    out: Vec<u8>,
    out_at: usize,
    /// Streams in flight: stream id -> slot.
    by_stream: IdMap<i32, u32>,
    /// The server has sent valid HTTP/2: until then the connection is not counted as made,
    /// and its end is a failed connect (a server that does not speak h2c closes or answers
    /// in HTTP/1).
    confirmed: bool,
    /// The last stream the server said it processes, once it sent a GOAWAY.
    goaway_last: Option<i32>,
}

impl Link {
    fn new() -> Link {
        Link {
            stream: None,
            session: None,
            out: Vec::new(),
            out_at: 0,
            by_stream: IdMap::default(),
            confirmed: false,
            goaway_last: None,
        }
    }
}

/// A worker's links, what they share, and what each slot's stream holds.
pub struct Http2 {
    /// When links open, back off and are replaced; which slots go again.
    mux: Links,
    links: Vec<Link>,
    /// Per slot: its stream.
    slots: Vec<SlotStream>,
    /// The request every slot sends.
    fixed: FieldRequest,
    /// The link being read: sends made while its events are handled wait for one flush.
    reading: Option<usize>,
    /// Events taken out of a session while they are handled (kept for its capacity).
    events: Vec<Event>,
    /// One read buffer for every link: what a read brings is handed to the session at once.
    buf: Vec<u8>,
    /// gRPC calls whose requests stream: their messages, sent on their schedules.
    grpc: Option<grpc::Streams>,
    /// What HTTP/2 counted since measuring started (the result's `http2` section).
    counts: H2Counts,
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
    pub fn new(count: usize, streams: usize, fixed: FieldRequest) -> Http2 {
        let streams = streams.max(1);
        Http2 {
            mux: Links::new(count, streams),
            links: (0..count).map(|_| Link::new()).collect(),
            slots: (0..count * streams).map(|_| SlotStream::default()).collect(),
            fixed,
            reading: None,
            events: Vec::new(),
            buf: vec![0; READ_BUFFER],
            grpc: None,
            counts: H2Counts::default(),
        }
    }

    /// Makes each slot's request a gRPC call whose messages stream as `plan` says.
    pub fn with_streams(mut self, plan: crate::grpc::call::Streaming) -> Http2 {
        // The body's length is the stream's, unknown when it starts: a Content-Length (the
        // one-message request's) would contradict the DATA that follows.
        self.fixed.fields.retain(|(name, _)| name != b"content-length");
        self.grpc = Some(grpc::Streams::new(plan, self.slots.len()));
        self
    }
}

impl Multiplexed for Http2 {
    type Counts = H2Counts;

    fn own_counts(&mut self) -> &mut H2Counts {
        &mut self.counts
    }

    fn live(&self) -> super::Live {
        super::Live { goaways: self.counts.goaways, retried: self.counts.retried }
    }

    fn links(&self) -> &Links {
        &self.mux
    }

    fn links_mut(&mut self) -> &mut Links {
        &mut self.mux
    }

    fn busy(&self, l: usize) -> bool {
        !self.links[l].by_stream.is_empty()
    }

    /// Opens link `l`: a TCP (and TLS) connection to its origin.
    fn connect_link(&mut self, host: &mut impl Host, l: usize) {
        match host.connect(l, l) {
            Ok(s) => {
                self.links[l].stream = Some(s);
                self.link_connecting(host, l);
            }
            Err(e) => self.link_connect_failed(host, l, connect_cause(&e), e.to_string()),
        }
    }

    /// Drops link `l`'s connection and session, counting its headers first.
    fn drop_link(&mut self, _host: &mut impl Host, l: usize) {
        self.count_headers(l);
        let link = &mut self.links[l];
        link.stream = None;
        link.session = None;
        link.by_stream.clear();
        link.out.clear();
        link.out_at = 0;
    }

    fn connect_timed_out(&mut self, host: &mut impl Host, l: usize) {
        self.link_connect_failed(host, l, ConnectCause::TimedOut, "connect timed out".into());
    }

    fn submit_stream(&mut self, host: &mut impl Host, i: usize) {
        self.h2_submit(host, i);
    }

    fn fail(&mut self, host: &mut impl Host, i: usize, kind: ErrorKind) {
        self.h2_fail(host, i, kind);
    }

    /// A poll event on link `l`.
    fn link_event(&mut self, host: &mut impl Host, l: usize, readable: Readable, writable: bool) {
        let Some(&life) = self.mux.life.get(l) else { return };
        let link = &mut self.links[l];
        match life.state {
            LinkState::Closed => {}
            LinkState::Connecting => {
                let Some(stream) = link.stream.as_mut() else { return };
                match stream.poll_connect(writable) {
                    Ok(true) => self.link_up(host, l),
                    Ok(false) => {}
                    Err(e) => self.link_connect_failed(host, l, connect_cause(&e), e.to_string()),
                }
            }
            LinkState::Open => {
                if writable {
                    self.flush_link(host, l);
                }
                if readable != Readable::No {
                    self.read_link(host, l, readable);
                }
            }
        }
    }

    /// Counts what the links still open received (at the end of the run).
    fn finish_links(&mut self, _host: &mut impl Host) {
        for l in 0..self.links.len() {
            self.count_headers(l);
        }
    }

    fn next_timer(&mut self) -> Option<u64> {
        self.grpc.as_mut()?.next_due()
    }

    /// gRPC streams' messages that came due go out, each link written once; once the run is
    /// over (-d, Ctrl-C) streams stop sending rather than run their course.
    fn expire_timers(&mut self, host: &mut impl Host, now: u64) {
        let Some(streams) = self.grpc.as_mut() else { return };
        let due: Vec<(usize, grpc::Outcome)> = if host.draining() {
            streams.end_all().into_iter().map(|i| (i, grpc::Outcome { push: Vec::new(), end: true })).collect()
        } else {
            streams.expired(now)
        };
        let mut links: Vec<usize> = due.iter().map(|(i, _)| self.mux.of(*i)).collect();
        for (i, outcome) in &due {
            self.stream_send(host, *i, outcome);
        }
        links.sort_unstable();
        links.dedup();
        for l in links {
            self.flush_link(host, l);
        }
    }
}

impl Http2 {
    /// Link `l` connected: its session starts and its slots send.
    fn link_up(&mut self, host: &mut impl Host, l: usize) {
        let link = &mut self.links[l];
        if host.https() && link.stream.as_ref().and_then(|s| s.alpn()) != Some(b"h2".as_slice()) {
            let why = "the server did not choose HTTP/2 (ALPN h2); drop --http2 for HTTP/1.1".to_string();
            return self.link_connect_failed(host, l, ConnectCause::Tls, why);
        }
        let mut session = match Session::client(Settings::default()) {
            Ok(s) => s,
            Err(e) => return self.link_connect_failed(host, l, ConnectCause::Other, e.to_string()),
        };
        session.set_capture(self.mux.capture);
        session.set_streamed(self.grpc.is_some());
        link.session = Some(session);
        link.confirmed = false;
        link.goaway_last = None;
        link.out.clear();
        link.out_at = 0;
        // The slots' first requests go into the session together, then out in one write.
        self.reading = Some(l);
        self.start_slots(host, l);
        self.settle(host);
        self.reading = None;
        self.flush_link(host, l);
    }

    /// Puts slot `i`'s request on its link as a new stream.
    fn h2_submit(&mut self, host: &mut impl Host, i: usize) {
        let l = self.mux.of(i);
        let scheme = Scheme::of_tls(host.https()).name();
        // A streamed call's messages come from its stream plan: every call has the same head.
        let converted = match self.grpc {
            Some(_) => None,
            None => {
                let Ok(converted) = self.convert_built(host, i, |bytes, authority| {
                    crate::http::fields::from_http1(bytes, scheme, authority)
                }) else {
                    return;
                };
                converted
            }
        };
        let link = &mut self.links[l];
        let life = &mut self.mux.life[l];
        let request = converted.as_ref().unwrap_or(&self.fixed);
        let submitted = match (&mut link.session, life.state, life.goaway) {
            (Some(session), LinkState::Open, false) if self.grpc.is_some() => {
                session.submit_request_streamed(&request.fields).ok()
            }
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
            self.requeue(host, i);
            if retire {
                self.retire_link(host, l);
            } else {
                self.mux_open(host, i);
            }
            return;
        };
        link.by_stream.insert(id, i as u32);
        let stream = &mut self.slots[i];
        stream.id = id;
        stream.status = 0;
        host.written(i);
        if let Some(streams) = self.grpc.as_mut() {
            let outcome = streams.start(i, id, host.now());
            self.stream_send(host, i, &outcome);
        }
        if self.reading != Some(l) {
            self.flush_link(host, l);
        }
    }

    /// Writes what link `l`'s session has to send.
    fn flush_link(&mut self, host: &mut impl Host, l: usize) {
        let link = &mut self.links[l];
        let (Some(session), Some(stream)) = (link.session.as_mut(), link.stream.as_mut()) else { return };
        if link.out_at == link.out.len() {
            link.out.clear();
            link.out_at = 0;
        }
        if session.output(&mut link.out).is_err() {
            return self.link_failed(host, l, ErrorKind::Parse);
        }
        while link.out_at < link.out.len() {
            match stream.write(&link.out[link.out_at..]) {
                Ok(0) => return self.link_failed(host, l, ErrorKind::Write),
                Ok(n) => link.out_at += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.link_failed(host, l, ErrorKind::Write),
            }
        }
        if stream.flush().is_err() {
            return self.link_failed(host, l, ErrorKind::Write);
        }
        if session.is_done() && !self.mux.life[l].goaway {
            // nghttp2 ended the connection itself (a protocol, compression or flow-control
            // error by the server) and its GOAWAY is out: the streams in flight are lost.
            if link.confirmed {
                self.counts.protocol_errors += 1;
            }
            self.link_failed(host, l, ErrorKind::Parse);
        }
    }

    /// Reads link `l` until drained, handling what its session makes of the bytes.
    fn read_link(&mut self, host: &mut impl Host, l: usize, how: Readable) {
        let mut buf = std::mem::take(&mut self.buf);
        loop {
            let link = &mut self.links[l];
            let (Some(stream), Some(session)) = (link.stream.as_mut(), link.session.as_mut()) else { break };
            match stream.read(&mut buf) {
                Ok(0) => {
                    self.link_failed(host, l, ErrorKind::Read);
                    break;
                }
                Ok(n) => {
                    let drained = n < buf.len() && stream.short_read_drains() && how != Readable::UntilEof;
                    host.read_bytes(n);
                    if session.receive(&buf[..n]).is_err() {
                        if link.confirmed {
                            self.counts.protocol_errors += 1;
                        }
                        self.link_failed(host, l, ErrorKind::Parse);
                        break;
                    }
                    if !link.confirmed && session.peer_spoke() {
                        link.confirmed = true;
                        self.mux.life[l].failures = 0;
                        host.connection_made(l, || Made::Tcp(stream.tls_began()));
                    }
                    if !self.handle_events(host, l) || drained {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.link_failed(host, l, ErrorKind::Read);
                    break;
                }
            }
        }
        self.buf = buf;
        if self.mux.is_open(l) {
            self.flush_link(host, l);
        }
    }

    /// Link `l` failed: every stream in flight on it is lost as `kind`, and it is replaced.
    /// Before the server spoke HTTP/2 it is a failed connect instead: its requests were never
    /// taken, so they wait for the next connection.
    fn link_failed(&mut self, host: &mut impl Host, l: usize, kind: ErrorKind) {
        if !self.links[l].confirmed {
            let waiting: Vec<u32> = self.links[l].by_stream.drain().map(|(_, i)| i).collect();
            for i in waiting {
                self.requeue(host, i as usize);
            }
            let why = if host.https() {
                "the connection ended before the server spoke HTTP/2"
            } else {
                "the server did not answer in HTTP/2 (h2c with prior knowledge); drop --http2 for HTTP/1.1"
            };
            return self.link_connect_failed(host, l, ConnectCause::Other, why.to_string());
        }
        // After a GOAWAY, streams above its last one were never processed (nghttp2 may still
        // hold them unsent, waiting for the server's stream limit): they go again, as refused
        // ones do, when the server then closes the connection.
        let last = self.links[l].goaway_last.unwrap_or(i32::MAX);
        let lost: Vec<(i32, u32)> = self.links[l].by_stream.drain().collect();
        for (id, i) in lost {
            if id > last {
                self.requeue(host, i as usize);
                self.counts.retried += 1;
            } else {
                host.failed(i as usize, kind);
                host.close_slot(i as usize);
            }
        }
        self.retire_link(host, l);
    }

    /// Adds link `l`'s header byte counts to the recorder (when its session ends).
    fn count_headers(&mut self, l: usize) {
        let counts = self.links[l].session.as_ref().map(|s| (s.header_bytes(), s.flow_stalls()));
        if let Some(((compressed, decoded), stalls)) = counts {
            self.counts.header_frame_bytes += compressed;
            self.counts.header_bytes += decoded;
            self.counts.flow_control_stalls += stalls;
        }
    }
}
