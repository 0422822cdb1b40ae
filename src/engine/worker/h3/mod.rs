//! HTTP/3 over QUIC: a worker's QUIC connections ("links") carry its request slots as streams,
//! `-m` per link, as over HTTP/2: slot `i` rides link `i / m`. quiche is sans-IO: strain owns
//! the UDP socket of each link, feeds it the datagrams that arrive, sends the datagrams it
//! makes, and calls it back when its timer (loss detection, acknowledgements, idle) is due.
//!
//! One connected UDP socket per link: the kernel hands each link its own datagrams (no
//! connection-id lookup in strain), an ICMP "port unreachable" comes back as a refused
//! `recv`, and `--source-addr` applies per link as over TCP.
//!
//! A timeout resets its stream (H3_REQUEST_CANCELLED) and keeps the connection. A GOAWAY stops
//! new streams on the link; the streams at or above its id were not processed and go again on
//! the next connection (counted as retried). A connection that closes fails its streams in
//! flight and is replaced.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;

use super::links::{LinkState, Links};
use super::*;
use crate::engine::QuicSetup;
use crate::http::response::Captured;

mod batch;
mod frames;
mod handshake;
mod streams;
mod transport;

/// Largest UDP payload strain sends or accepts (quiche's examples' value: it fits the
/// 1,500-byte Ethernet MTU with IPv6 and a tunnel's headers).
const MAX_DATAGRAM: usize = 1350;
/// QUIC idle timeout: a connection that hears nothing this long is over.
const IDLE_TIMEOUT_MS: u64 = 30_000;
/// H3_REQUEST_CANCELLED: a stream the client gives up on (RFC 9114 8.1).
const REQUEST_CANCELLED: u64 = 0x10c;
/// H3_NO_ERROR: the connection ends cleanly at the end of the run.
const NO_ERROR: u64 = 0x100;

/// One QUIC connection: what the protocol keeps of it (the rest is in [`Links`]).
pub(super) struct Link {
    socket: Option<mio::net::UdpSocket>,
    conn: Option<quiche::Connection>,
    /// Its addresses, for quiche's receive information.
    local: SocketAddr,
    peer: SocketAddr,
    /// The next request stream's id (client-initiated bidirectional: 0, 4, 8, ...).
    next_stream: u64,
    /// The server's unidirectional streams (control, QPACK), by id.
    uni: HashMap<u64, streams::PeerUni>,
    /// Streams in flight: stream id -> slot.
    by_stream: HashMap<u64, u32>,
    /// Slots whose request waits for the connection to take it (stream limit or flow
    /// control): retried after each read.
    blocked: Vec<u32>,
    /// The server's GOAWAY id: streams at or above it were not processed.
    refused_from: Option<u64>,
    /// When its handshake started, in clock microseconds.
    started_us: u64,
    /// Its QUIC timer's key in [`Http3::timers`], if set.
    timer: Option<u64>,
}

impl Link {
    fn new() -> Link {
        let any = SocketAddr::from(([0, 0, 0, 0], 0));
        Link {
            socket: None,
            conn: None,
            local: any,
            peer: any,
            next_stream: 0,
            uni: HashMap::new(),
            by_stream: HashMap::new(),
            blocked: Vec::new(),
            refused_from: None,
            started_us: 0,
            timer: None,
        }
    }
}

/// A worker's links, what they share, and what each slot's stream holds.
pub(super) struct Http3 {
    /// When links open, back off and are replaced; which slots go again.
    mux: Links,
    links: Vec<Link>,
    /// Per slot: its stream.
    slots: Vec<SlotStream>,
    /// Responses are kept whole for a hook or a content check.
    capture: bool,
    /// The request every slot sends, as it goes on its stream (frames, encoded once).
    fixed: Vec<u8>,
    /// The QUIC client configuration of this thread.
    config: quiche::Config,
    /// Stream ids being read (kept for its capacity).
    readable: Vec<u64>,
    /// The server name (SNI and certificate check).
    host: String,
    /// The link being read: sends made while its events are handled wait for one flush.
    reading: Option<usize>,
    /// Every link's QUIC timer, (at, link): one entry per link, moved when quiche moves it.
    /// quiche's timers go earlier and later as packets come and go, so the slot deadlines'
    /// list (which needs setting order to be expiry order) cannot hold them; a set keyed by
    /// time keeps one entry per link, which a heap with stale entries would not.
    timers: BTreeSet<(u64, u32)>,
    /// Datagrams being written, one every [`MAX_DATAGRAM`] bytes.
    out: Vec<u8>,
}

/// What a slot's current stream holds.
#[derive(Default)]
struct SlotStream {
    /// The stream carrying the current request.
    id: u64,
    /// The current response's status, once its headers arrived.
    status: u16,
    /// The request's bytes still to be written (flow control), when they did not fit at once.
    rest: Option<Vec<u8>>,
    /// The response's frames, as they are read.
    reader: frames::Reader,
    /// The response just completed, kept whole for a hook or a content check.
    capture: Option<Box<Captured>>,
}

impl Http3 {
    /// `count` links of `streams` slots each, sending `fixed`, set up by `quic`.
    pub(in crate::engine::worker) fn new(
        count: usize,
        streams: usize,
        fixed: &crate::h2::H2Request,
        quic: &QuicSetup,
    ) -> Result<Http3, EngineError> {
        let streams = streams.max(1);
        let encoded = frames::encode_request(&fixed.fields, fixed.body.as_deref()).map_err(EngineError::Quic)?;
        Ok(Http3 {
            mux: Links::new(count, streams),
            links: (0..count).map(|_| Link::new()).collect(),
            slots: (0..count * streams).map(|_| SlotStream::default()).collect(),
            capture: false,
            fixed: encoded,
            config: handshake::client_config(quic.insecure, streams)?,
            readable: Vec::new(),
            host: quic.host.clone(),
            reading: None,
            timers: BTreeSet::new(),
            out: vec![0; MAX_DATAGRAM * batch::BATCH],
        })
    }

    /// The next handshake deadline, reconnect or QUIC timer.
    pub(super) fn next_deadline(&mut self) -> Option<u64> {
        let timer = self.timers.first().map(|t| t.0);
        [self.mux.next_deadline(), timer].into_iter().flatten().min()
    }

    /// Sets link `l`'s QUIC timer from quiche's, replacing the one it had.
    fn set_timer(&mut self, l: usize, now: u64) {
        let link = &mut self.links[l];
        if let Some(at) = link.timer.take() {
            self.timers.remove(&(at, l as u32));
        }
        let Some(after) = link.conn.as_ref().and_then(|c| c.timeout()) else { return };
        let at = now + after.as_micros() as u64;
        link.timer = Some(at);
        self.timers.insert((at, l as u32));
    }
}

impl Worker<'_, Http3> {
    /// Opens link `l`: a UDP socket connected to its origin and a QUIC handshake.
    pub(super) fn connect_h3_link(&mut self, l: usize) {
        let now = self.clock.now_us();
        let peer = self.addrs[l % self.addrs.len()];
        let mut socket = match handshake::udp_socket(peer, self.source(l)) {
            Ok(s) => s,
            Err(e) => return self.link_connect_failed(l, ConnectCause::of_io(&e), e.to_string()),
        };
        if let Err(e) = self.poll.registry().register(&mut socket, Token(l), Interest::READABLE | Interest::WRITABLE) {
            return self.link_connect_failed(l, ConnectCause::Other, e.to_string());
        }
        let local = socket.local_addr().unwrap_or(peer);
        let h3 = &mut self.transport;
        let conn = match handshake::connect(&h3.host, local, peer, &mut h3.config) {
            Ok(c) => c,
            Err(e) => return self.link_connect_failed(l, ConnectCause::Other, e),
        };
        let link = &mut h3.links[l];
        link.socket = Some(socket);
        link.conn = Some(conn);
        link.local = local;
        link.peer = peer;
        link.refused_from = None;
        link.started_us = now;
        self.link_connecting(l, now);
        self.flush_link(l);
    }

    /// A poll event on link `l`'s socket.
    pub(super) fn link_event(&mut self, l: usize, readable: bool, writable: bool) {
        if self.transport.mux.life.get(l).is_none_or(|k| k.state == LinkState::Closed) {
            return;
        }
        if readable {
            self.read_link(l);
        } else if writable {
            self.flush_link(l);
        }
    }

    /// Link `l`'s handshake is done: HTTP/3 starts on it and its slots send.
    fn link_up(&mut self, l: usize) {
        let now = self.clock.now_us();
        let h3 = &mut self.transport;
        let link = &mut h3.links[l];
        let Some(conn) = link.conn.as_mut() else { return };
        // The client's control stream (the first client-initiated unidirectional one, id 2)
        // opens with its SETTINGS and stays open as long as the connection.
        if let Err(e) = conn.stream_send(2, &frames::CONTROL_PREFACE, false) {
            return self.link_connect_failed(l, ConnectCause::Other, format!("HTTP/3 did not start: {e}"));
        }
        link.next_stream = 0;
        link.uni.clear();
        h3.mux.life[l].failures = 0;
        let took = now.saturating_sub(link.started_us);
        self.meter.rec.connections += 1;
        self.meter.rec.h3.handshake(took);
        h3.reading = Some(l);
        self.start_slots(l);
        self.transport.reading = None;
    }

    /// Sends what link `l`'s connection has to send, then sets its timer.
    pub(super) fn flush_link(&mut self, l: usize) {
        use std::os::fd::AsRawFd;
        let h3 = &mut self.transport;
        let link = &mut h3.links[l];
        let (Some(conn), Some(socket)) = (link.conn.as_mut(), link.socket.as_ref()) else { return };
        let fd = socket.as_raw_fd();
        let mut lens = [0usize; batch::BATCH];
        let mut n = 0;
        loop {
            let done = match conn.send(&mut h3.out[n * MAX_DATAGRAM..(n + 1) * MAX_DATAGRAM]) {
                Ok((len, _)) => {
                    lens[n] = len;
                    n += 1;
                    false
                }
                Err(_) => true,
            };
            if n == batch::BATCH || (done && n > 0) {
                // A full socket buffer loses the datagrams that did not go, and QUIC's loss
                // recovery sends their frames again, as for datagrams lost on the way.
                let _ = batch::send_batch(fd, &h3.out, MAX_DATAGRAM, &lens[..n]);
                n = 0;
            }
            if done {
                break;
            }
        }
        let now = self.clock.now_us();
        self.transport.set_timer(l, now);
        if self.transport.links[l].conn.as_ref().is_some_and(|c| c.is_closed()) {
            self.link_closed(l);
        }
    }

    /// Reads every datagram waiting on link `l`, then handles what its connection made of them.
    pub(super) fn read_link(&mut self, l: usize) {
        use std::os::fd::AsRawFd;
        let mut refused = None;
        let mut lens = [0usize; batch::BATCH];
        'batches: loop {
            let h3 = &mut self.transport;
            let link = &mut h3.links[l];
            let (Some(conn), Some(socket)) = (link.conn.as_mut(), link.socket.as_ref()) else { return };
            let got = match batch::recv_batch(socket.as_raw_fd(), &mut self.buf, &mut lens) {
                Ok(0) => break,
                Ok(got) => got,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    refused = Some(handshake::Failure::PortUnreachable);
                    break;
                }
                Err(_) => break,
            };
            let info = quiche::RecvInfo { from: link.peer, to: link.local };
            for (k, &len) in lens[..got].iter().enumerate() {
                self.meter.rec.bytes += len as u64;
                let datagram = &mut self.buf[k * batch::SLOT..k * batch::SLOT + len];
                if conn.recv(datagram, info) == Err(quiche::Error::UnknownVersion) {
                    refused = Some(handshake::Failure::Version);
                    break 'batches;
                }
            }
            if got < batch::BATCH {
                break;
            }
        }
        if let Some(why) = refused {
            return self.handshake_failed(l, why);
        }
        let established = self.transport.links[l].conn.as_ref().is_some_and(|c| c.is_established());
        if self.transport.mux.life[l].state == LinkState::Connecting && established {
            self.link_up(l);
        }
        if self.transport.mux.life[l].state == LinkState::Open {
            self.read_streams(l);
        }
        if self.transport.mux.life[l].state != LinkState::Closed {
            self.flush_link(l);
        }
    }

    /// Link `l`'s connection is closed (by either side, or idle): its streams in flight fail
    /// (or, above a GOAWAY's id, go again) and it is replaced. Before the handshake finished it
    /// is a failed connect, by cause.
    pub(super) fn link_closed(&mut self, l: usize) {
        let link = &self.transport.links[l];
        let Some(conn) = link.conn.as_ref() else { return };
        if self.transport.mux.life[l].state == LinkState::Connecting {
            let why = handshake::Failure::of(conn);
            return self.handshake_failed(l, why);
        }
        let counts = &mut self.meter.rec.h3;
        let timed_out = conn.is_timed_out();
        if timed_out {
            counts.idle_timeouts += 1;
        } else if let Some(e) = conn.peer_error().or(conn.local_error()) {
            counts.closed(e.error_code);
        }
        let refused_from = link.refused_from;
        let lost: Vec<(u64, u32)> = self.transport.links[l].by_stream.drain().collect();
        for (id, i) in lost {
            let i = i as usize;
            if refused_from.is_some_and(|g| id >= g) {
                self.meter.rec.h3.retried += 1;
                self.requeue(i);
                continue;
            }
            self.failed(i, if timed_out { ErrorKind::Timeout } else { ErrorKind::Read });
            let s = &mut self.slots[i];
            s.state = State::Closed;
            s.bump();
        }
        self.retire_link(l);
    }

    /// Link `l`'s handshake failed for `why`: counted by cause, and the link tries again.
    pub(super) fn handshake_failed(&mut self, l: usize, why: handshake::Failure) {
        let waiting: Vec<u32> = self.transport.links[l].by_stream.drain().map(|(_, i)| i).collect();
        for i in waiting {
            self.requeue(i as usize);
        }
        self.meter.rec.h3.handshake_failures[why] += 1;
        let link = &self.transport.links[l];
        let timeout = Duration::from_micros(self.plan.timeout_us);
        let mut line = why.describe(link.peer, timeout);
        // A cause strain has no words for is named by the code the connection closed with.
        let closed = link.conn.as_ref().and_then(|c| c.local_error().or(c.peer_error()));
        if let Some(e) = closed.filter(|_| why == handshake::Failure::Other) {
            let reason = String::from_utf8_lossy(&e.reason);
            line.push_str(&format!(
                " ({} 0x{:x}{}{reason})",
                if e.is_app { "application error" } else { "QUIC error" },
                e.error_code,
                if reason.is_empty() { "" } else { ": " }
            ));
        }
        self.link_connect_failed(l, why.cause(), line);
    }

    /// Counts what link `l`'s connection sent, lost and sent again.
    fn count_packets(&mut self, l: usize) {
        if let Some(conn) = self.transport.links[l].conn.as_ref() {
            self.meter.rec.h3.packets(&conn.stats());
        }
    }

    /// Ends the links still open at the end of the run (CONNECTION_CLOSE with H3_NO_ERROR, so
    /// the server does not wait out its idle timeout) and counts their packets.
    pub(super) fn finish_links(&mut self) {
        for l in 0..self.transport.links.len() {
            let h3 = &mut self.transport;
            let link = &mut h3.links[l];
            if let (Some(conn), Some(socket)) = (link.conn.as_mut(), link.socket.as_ref()) {
                let _ = conn.close(true, NO_ERROR, b"");
                if let Ok((n, _)) = conn.send(&mut h3.out) {
                    let _ = socket.send(&h3.out[..n]);
                }
            }
            self.count_packets(l);
        }
    }

    /// Drops link `l`'s connection and socket, counting its packets first.
    pub(super) fn drop_h3_link(&mut self, l: usize) {
        self.count_packets(l);
        let h3 = &mut self.transport;
        let link = &mut h3.links[l];
        if let Some(at) = link.timer.take() {
            h3.timers.remove(&(at, l as u32));
        }
        if let Some(mut s) = link.socket.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        link.conn = None;
        link.uni.clear();
        link.by_stream.clear();
        link.blocked.clear();
    }

    /// Runs the QUIC timers that came due.
    pub(super) fn expire_timers(&mut self, now: u64) {
        while let Some(&(at, l)) = self.transport.timers.first() {
            if at > now {
                break;
            }
            self.transport.timers.pop_first();
            let link = &mut self.transport.links[l as usize];
            link.timer = None;
            if let Some(conn) = link.conn.as_mut() {
                conn.on_timeout();
                self.flush_link(l as usize);
            }
        }
    }
}
