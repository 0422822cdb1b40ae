//! HTTP/3 over QUIC: a worker's QUIC connections ("links") carry its request slots as streams,
//! `-m` per link, as over HTTP/2: slot `i` rides link `i / m`. quiche is sans-IO: strain owns
//! the UDP sockets, feeds each connection the datagrams that arrive for it, sends the datagrams it
//! makes, and calls it back when its timer (loss detection, acknowledgements, idle) is due.
//!
//! The links of a thread share one UDP socket per local address (see [`socket`]): a loop
//! turn's datagrams of every link go out in one system call, and each datagram that comes in
//! finds its link by the connection id strain gave it.
//!
//! A timeout resets its stream (H3_REQUEST_CANCELLED) and keeps the connection. A GOAWAY stops
//! new streams on the link; the streams at or above its id were not processed and go again on
//! the next connection (counted as retried). A connection that closes fails its streams in
//! flight and is replaced.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use super::mux::{LinkState, Links, Multiplexed};
use super::{Host, Readable, Transport};
use crate::engine::{EngineError, QuicSetup};
use crate::http::response::Captured;
use crate::ids::IdMap;
use crate::net::throttle::Throttles;
use crate::stats::{ConnectCause, ErrorKind, H3Counts};

mod batch;
mod frames;
mod handshake;
mod socket;
mod streams;

/// Largest UDP payload strain sends or accepts (quiche's examples' value: it fits the
/// 1,500-byte Ethernet MTU with IPv6 and a tunnel's headers).
const MAX_DATAGRAM: usize = 1350;
/// QUIC idle timeout: a connection that hears nothing this long is over.
const IDLE_TIMEOUT_MS: u64 = 30_000;
/// An established connection with no stream in flight and nothing else timed for this long
/// pings its server: a held connection the load leaves unused (a low rate over many) stays open,
/// as a TCP one does, instead of idling out and being replaced every 30 s.
const KEEPALIVE_US: u64 = IDLE_TIMEOUT_MS * 1000 / 2;
/// H3_REQUEST_CANCELLED: a stream the client gives up on (RFC 9114 8.1).
const REQUEST_CANCELLED: u64 = 0x10c;
/// H3_NO_ERROR: the connection ends cleanly at the end of the run.
const NO_ERROR: u64 = 0x100;

/// One QUIC connection: what the protocol keeps of it (the rest is in [`Links`]).
struct Link {
    /// The shared socket it sends on, while connected.
    sock: Option<usize>,
    /// The connection id strain gave it: datagrams for it carry this id.
    scid: [u8; socket::SCID_LEN],
    conn: Option<quiche::Connection>,
    /// Its server's address (quiche's receive information takes the socket's own).
    peer: SocketAddr,
    /// The next request stream's id (client-initiated bidirectional: 0, 4, 8, ...).
    next_stream: u64,
    /// The server's unidirectional streams (control, QPACK), by id.
    uni: IdMap<u64, streams::PeerUni>,
    /// Streams in flight: stream id -> slot.
    by_stream: IdMap<u64, u32>,
    /// Slots whose request waits for the connection to take it (stream limit or flow
    /// control): retried after each read.
    blocked: Vec<u32>,
    /// The server's GOAWAY id: streams at or above it were not processed.
    refused_from: Option<u64>,
    /// When its handshake started, in clock microseconds.
    started_us: u64,
    /// Its QUIC timer's key in [`Http3::timers`], if set.
    timer: Option<u64>,
    /// The timer is the keepalive's ([`KEEPALIVE_US`]), not quiche's.
    ping: bool,
    /// A slow client's throttles: streams are read and written a budget at a time, so
    /// QUIC's flow control holds the server back as TCP's window does.
    pace: Option<Box<Throttles>>,
}

impl Link {
    fn new() -> Link {
        let any = SocketAddr::from(([0, 0, 0, 0], 0));
        Link {
            sock: None,
            scid: [0; socket::SCID_LEN],
            conn: None,
            peer: any,
            next_stream: 0,
            uni: IdMap::default(),
            by_stream: IdMap::default(),
            blocked: Vec::new(),
            refused_from: None,
            started_us: 0,
            timer: None,
            ping: false,
            pace: None,
        }
    }
}

/// A worker's links, what they share, and what each slot's stream holds.
pub struct Http3 {
    /// When links open, back off and are replaced; which slots go again.
    mux: Links,
    links: Vec<Link>,
    /// Per slot: its stream.
    slots: Vec<SlotStream>,
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
    /// The thread's sockets, and the datagrams waiting to go out.
    sockets: socket::Sockets,
    /// Datagrams read, [`batch::SLOT`] bytes each, and then the streams' bytes.
    buf: Vec<u8>,
    /// Links that received datagrams in the batch being read (kept for its capacity).
    touched: Vec<u32>,
    /// What HTTP/3 counted since measuring started (the result's `http3` section).
    counts: H3Counts,
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
    /// `count` links of `streams` slots each, sending `fixed`, set up by `quic`, each stream's
    /// window `window` when a slow reader's.
    pub fn new(
        count: usize,
        streams: usize,
        fixed: &crate::http::fields::FieldRequest,
        quic: &QuicSetup,
        window: Option<usize>,
    ) -> Result<Http3, EngineError> {
        let streams = streams.max(1);
        let encoded = frames::encode_request(&fixed.fields, fixed.body.as_deref()).map_err(EngineError::Quic)?;
        Ok(Http3 {
            mux: Links::new(count, streams),
            links: (0..count).map(|_| Link::new()).collect(),
            slots: (0..count * streams).map(|_| SlotStream::default()).collect(),
            fixed: encoded,
            config: handshake::client_config(quic.insecure, streams, window)?,
            readable: Vec::new(),
            host: quic.host.clone(),
            reading: None,
            timers: BTreeSet::new(),
            // Poll tokens below `count` are the links'; the sockets' follow.
            sockets: socket::Sockets::new(count),
            buf: vec![0; batch::SLOT * batch::BATCH],
            touched: Vec::new(),
            counts: H3Counts::default(),
        })
    }

    /// Sets link `l`'s QUIC timer from quiche's, replacing the one it had.
    fn set_timer(&mut self, l: usize, now: u64) {
        let link = &mut self.links[l];
        if let Some(at) = link.timer.take() {
            self.timers.remove(&(at, l as u32));
        }
        let Some(conn) = link.conn.as_ref() else { return };
        let Some(after) = conn.timeout().map(|t| t.as_micros() as u64) else { return };
        link.ping = after > KEEPALIVE_US && link.by_stream.is_empty() && conn.is_established() && !conn.is_draining();
        let at = now + if link.ping { KEEPALIVE_US } else { after };
        link.timer = Some(at);
        self.timers.insert((at, l as u32));
    }
}

impl Multiplexed for Http3 {
    type Counts = H3Counts;

    fn own_counts(&mut self) -> &mut H3Counts {
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

    fn forget(&mut self, i: usize) {
        self.slots[i].rest = None;
    }

    /// Opens link `l`: a QUIC handshake with its origin, on the thread's socket for its source.
    fn connect_link(&mut self, host: &mut impl Host, l: usize) {
        let now = host.now();
        let peer = host.peer(l);
        let (k, local) = match self.sockets.for_peer(host.registry(), peer, host.source(l)) {
            Ok(s) => s,
            Err(e) => return self.link_connect_failed(host, l, ConnectCause::of_io(&e), e.to_string()),
        };
        let conn = match socket::scid(l).and_then(|id| {
            self.links[l].scid = id;
            handshake::connect(&self.host, &id, local, peer, &mut self.config)
        }) {
            Ok(c) => c,
            Err(e) => return self.link_connect_failed(host, l, ConnectCause::Other, e),
        };
        let link = &mut self.links[l];
        link.sock = Some(k);
        link.conn = Some(conn);
        link.peer = peer;
        link.refused_from = None;
        link.started_us = now;
        link.pace = host.throttles(l).map(Box::new);
        self.link_connecting(host, l);
        self.flush_link(host, l);
    }

    /// Drops link `l`'s connection, counting its packets first.
    fn drop_link(&mut self, _host: &mut impl Host, l: usize) {
        self.count_packets(l);
        let link = &mut self.links[l];
        if let Some(at) = link.timer.take() {
            self.timers.remove(&(at, l as u32));
        }
        link.sock = None;
        link.conn = None;
        link.uni.clear();
        link.by_stream.clear();
        link.blocked.clear();
    }

    fn connect_timed_out(&mut self, host: &mut impl Host, l: usize) {
        let conn = self.links[l].conn.as_ref();
        let why = conn.map_or(handshake::Failure::NoAnswer, handshake::Failure::timed_out);
        self.handshake_failed(host, l, why);
    }

    fn submit_stream(&mut self, host: &mut impl Host, i: usize) {
        self.h3_submit(host, i);
    }

    fn fail(&mut self, host: &mut impl Host, i: usize, kind: ErrorKind) {
        self.h3_fail(host, i, kind);
    }

    /// A poll event on one of the thread's sockets; a token below the sockets' is a slow
    /// link's own wake (the links have no sockets of their own): its streams go on.
    fn link_event(&mut self, host: &mut impl Host, token: usize, readable: Readable, writable: bool) {
        if token < self.links.len() {
            if self.mux.is_open(token) && (readable != Readable::No || writable) {
                self.read_streams(host, token);
                self.flush_link(host, token);
            }
            return;
        }
        if let (Some(k), true) = (self.sockets.of_token(token), readable != Readable::No) {
            self.read_socket(host, k);
        }
    }

    /// The datagrams the loop turn queued go out.
    fn flush_out(&mut self, _host: &mut impl Host) {
        self.sockets.flush();
    }

    /// Ends the links still open at the end of the run (CONNECTION_CLOSE with H3_NO_ERROR, so
    /// the server does not wait out its idle timeout) and counts their packets.
    fn finish_links(&mut self, _host: &mut impl Host) {
        for l in 0..self.links.len() {
            let link = &mut self.links[l];
            if let (Some(conn), Some(k)) = (link.conn.as_mut(), link.sock) {
                let _ = conn.close(true, NO_ERROR, b"");
                self.sockets.drain(k, conn);
            }
            self.count_packets(l);
        }
        self.sockets.flush();
    }

    fn busy(&self, l: usize) -> bool {
        !self.links[l].by_stream.is_empty()
    }

    /// The next QUIC timer.
    fn next_timer(&mut self) -> Option<u64> {
        self.timers.first().map(|t| t.0)
    }

    /// Runs the QUIC timers that came due.
    fn expire_timers(&mut self, host: &mut impl Host, now: u64) {
        while let Some(&(at, l)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            let link = &mut self.links[l as usize];
            link.timer = None;
            if let Some(conn) = link.conn.as_mut() {
                if std::mem::take(&mut link.ping) {
                    let _ = conn.send_ack_eliciting();
                } else {
                    conn.on_timeout();
                }
                self.flush_link(host, l as usize);
            }
        }
    }
}

impl Http3 {
    /// Link `l`'s handshake is done: HTTP/3 starts on it and its slots send.
    fn link_up(&mut self, host: &mut impl Host, l: usize) {
        let now = host.now();
        let link = &mut self.links[l];
        let Some(conn) = link.conn.as_mut() else { return };
        // The client's control stream (the first client-initiated unidirectional one, id 2)
        // opens with its SETTINGS and stays open as long as the connection.
        if let Err(e) = conn.stream_send(2, &frames::CONTROL_PREFACE, false) {
            return self.link_connect_failed(host, l, ConnectCause::Other, format!("HTTP/3 did not start: {e}"));
        }
        link.next_stream = 0;
        link.uni.clear();
        self.mux.life[l].failures = 0;
        let took = now.saturating_sub(link.started_us);
        host.connection_made(l, || crate::net::stream::Made::Quic(took));
        self.counts.handshake(took);
        // The slots' first requests go onto streams together; the caller sends them.
        self.reading = Some(l);
        self.start_slots(host, l);
        self.settle(host);
        self.reading = None;
    }

    /// Queues what link `l`'s connection has to send (it goes out with the loop turn's other
    /// datagrams, or as soon as a batch is full), then sets its timer.
    fn flush_link(&mut self, host: &mut impl Host, l: usize) {
        let link = &mut self.links[l];
        let (Some(conn), Some(k)) = (link.conn.as_mut(), link.sock) else { return };
        self.sockets.drain(k, conn);
        self.set_timer(l, host.now());
        if self.links[l].conn.as_ref().is_some_and(|c| c.is_closed()) {
            self.link_closed(host, l);
        }
    }

    /// Reads every datagram waiting on socket `k`, each fed to the connection its id names,
    /// then handles what each connection that heard something made of them.
    fn read_socket(&mut self, host: &mut impl Host, k: usize) {
        let Some(to) = self.sockets.local(k) else { return };
        let mut lens = [0usize; batch::BATCH];
        let mut from = [None; batch::BATCH];
        let mut touched = std::mem::take(&mut self.touched);
        let mut version = Vec::new();
        let mut refused = false;
        loop {
            let got = match self.sockets.recv(k, &mut self.buf, &mut lens, &mut from) {
                Ok(0) => break,
                Ok(got) => got,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    refused = true;
                    continue;
                }
                Err(_) => break,
            };
            for (n, &len) in lens[..got].iter().enumerate() {
                host.read_bytes(len);
                let datagram = &mut self.buf[n * batch::SLOT..n * batch::SLOT + len];
                let Some((l, id)) = socket::link_of(datagram) else { continue };
                let (Some(link), Some(peer)) = (self.links.get_mut(l), from[n]) else { continue };
                // Another connection's (an earlier one of this link's, or not strain's at all).
                if link.sock != Some(k) || link.scid[..] != *id {
                    continue;
                }
                let Some(conn) = link.conn.as_mut() else { continue };
                if conn.recv(datagram, quiche::RecvInfo { from: peer, to }) == Err(quiche::Error::UnknownVersion) {
                    version.push(l as u32);
                }
                touched.push(l as u32);
            }
            if got < batch::BATCH {
                break;
            }
        }
        if refused {
            self.refused(host, k);
        }
        // Each link that heard something is handled once (a search per datagram would cost
        // links x datagrams with a thousand links).
        touched.sort_unstable();
        touched.dedup();
        for &l in &touched {
            let l = l as usize;
            if version.contains(&(l as u32)) {
                if self.mux.life[l].state == LinkState::Connecting {
                    self.handshake_failed(host, l, handshake::Failure::Version);
                }
                continue;
            }
            if self.links[l].sock != Some(k) {
                continue;
            }
            let established = self.links[l].conn.as_ref().is_some_and(|c| c.is_established());
            if self.mux.life[l].state == LinkState::Connecting && established {
                self.link_up(host, l);
            }
            if self.mux.is_open(l) {
                self.read_streams(host, l);
            }
            if self.mux.life[l].state != LinkState::Closed {
                self.flush_link(host, l);
            }
        }
        touched.clear();
        self.touched = touched;
    }

    /// Socket `k` was refused (ICMP port unreachable): the links still shaking hands with a
    /// peer its error queue names fail for that cause (with no name, all of them on `k`).
    fn refused(&mut self, host: &mut impl Host, k: usize) {
        let peers = self.sockets.refused(k);
        for l in 0..self.links.len() {
            let link = &self.links[l];
            let named = peers.is_empty() || peers.contains(&link.peer);
            if link.sock == Some(k) && named && self.mux.life[l].state == LinkState::Connecting {
                self.handshake_failed(host, l, handshake::Failure::PortUnreachable);
            }
        }
    }

    /// Link `l`'s connection is closed (by either side, or idle): its streams in flight fail
    /// (or, above a GOAWAY's id, go again) and it is replaced. Before the handshake finished it
    /// is a failed connect, by cause.
    fn link_closed(&mut self, host: &mut impl Host, l: usize) {
        let link = &self.links[l];
        let Some(conn) = link.conn.as_ref() else { return };
        if self.mux.life[l].state == LinkState::Connecting {
            let why = handshake::Failure::of(conn);
            return self.handshake_failed(host, l, why);
        }
        let timed_out = conn.is_timed_out();
        if timed_out {
            self.counts.idle_timeouts += 1;
        } else if let Some(e) = conn.peer_error().or(conn.local_error()) {
            self.counts.closed(e.error_code);
        }
        let refused_from = link.refused_from;
        let lost: Vec<(u64, u32)> = self.links[l].by_stream.drain().collect();
        for (id, i) in lost {
            let i = i as usize;
            if refused_from.is_some_and(|g| id >= g) {
                self.counts.retried += 1;
                self.requeue(host, i);
                continue;
            }
            host.failed(i, if timed_out { ErrorKind::Timeout } else { ErrorKind::Read });
            host.close_slot(i);
        }
        self.retire_link(host, l);
    }

    /// Link `l`'s handshake failed for `why`: counted by cause, and the link tries again.
    fn handshake_failed(&mut self, host: &mut impl Host, l: usize, why: handshake::Failure) {
        let waiting: Vec<u32> = self.links[l].by_stream.drain().map(|(_, i)| i).collect();
        for i in waiting {
            self.requeue(host, i as usize);
        }
        self.counts.handshake_failures[why] += 1;
        let link = &self.links[l];
        let timeout = Duration::from_micros(host.timeout_us());
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
        self.link_connect_failed(host, l, why.cause(), line);
    }

    /// Counts what link `l`'s connection sent, lost and sent again.
    fn count_packets(&mut self, l: usize) {
        if let Some(conn) = self.links[l].conn.as_ref() {
            let stats = conn.stats();
            self.counts.packets_sent += stats.sent as u64;
            self.counts.packets_lost += stats.lost as u64;
            self.counts.packets_retransmitted += stats.retrans as u64;
        }
    }
}
