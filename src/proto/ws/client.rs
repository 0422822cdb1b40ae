//! WebSocket: each slot is a connection of its own, upgraded from HTTP/1.1, carrying one
//! message at a time. A send is one masked frame; the next message from the server answers it
//! (echoes match in order), and other messages are counted as unsolicited. The upgrade is part
//! of opening the connection: the slot stays connecting, under the connect deadline, until the
//! server's `101` is checked, and its time is counted on its own.

use std::collections::VecDeque;
use std::io::{self, Write as _};
use std::sync::Arc;

use super::counts::{WsCounts, WsDrop};
use super::deflate::Inflater;
use super::frame::{self, Item, Limits, Parser};
use super::handshake::{self, HandshakeError};
use super::{Mode, WsLoad, ID_LEN};
use crate::engine::{write_out, Dialed, HeldSlot, Host, Pace, Part, PerSlot, ReadEnd, Readable, State, Transport};
use crate::net::stream::{Made, Stream};

/// Bytes of a message `--trace` shows.
const TRACED: usize = 512;
use crate::rng::Rng;
use crate::stats::{ConnectCause, ErrorKind};

/// Bytes read per `read` call; one buffer serves every connection of the thread.
const READ_BUFFER: usize = 64 * 1024;
/// Largest message accepted from a server; a larger one is a protocol error.
const MAX_MESSAGE: u64 = 64 * 1024 * 1024;
/// A close frame with code 1000, masked with a zero key (the payload shows as it is).
const GOODBYE: [u8; 8] = [0x88, 0x82, 0, 0, 0, 0, 0x03, 0xE8];

/// A worker's WebSocket connections, one per slot.
pub struct WebSocket {
    conns: Vec<Conn>,
    load: Arc<WsLoad>,
    buf: Vec<u8>,
    /// Masking keys and upgrade keys.
    rng: Rng,
    /// Where a compressed message is inflated (and dropped).
    scratch: Vec<u8>,
    /// `--connect-rate`: connects opened at a pace.
    pace: Pace,
    /// `--ping`: when each open connection pings next (connection, its generation), in due
    /// order (every connection pings at the same period, so a queue keeps the order).
    pings: VecDeque<(u64, usize, u32)>,
    /// `--match`: the high half of this thread's ids (random, so threads and runs differ) and
    /// the count that makes the low half.
    id_base: u64,
    ids: u64,
    /// What the connections counted since measuring started.
    counts: WsCounts,
}

/// Where a connection is in its life.
#[derive(Debug, PartialEq, Eq)]
enum Phase {
    /// TCP (and TLS) connecting.
    Tcp,
    /// The upgrade request is going out and the `101` is awaited.
    Upgrade {
        /// The key sent, to check the accept value against.
        key: String,
        /// When the request started going out, clock microseconds.
        since_us: u64,
    },
    /// Upgraded: messages flow.
    Open,
}

/// One WebSocket connection.
struct Conn {
    /// The socket, connect failures and the place in the opening window (proven by the
    /// server's `101`).
    dial: Dialed,
    phase: Phase,
    /// Bytes to write (the upgrade request, then frames), from `written` on not yet written.
    out: Vec<u8>,
    written: usize,
    /// The `101` head as it arrives.
    head: Vec<u8>,
    parser: Parser,
    limits: Limits,
    /// The server agreed to permessage-deflate: messages go compressed, and compressed ones
    /// are inflated.
    inflater: Option<Inflater>,
    /// A compressed message's bytes as they arrive.
    compressed: Vec<u8>,
    /// Which connection of the slot this is (a ping due for an earlier one is dropped).
    generation: u32,
    /// `--ping`: when the ping awaiting its pong went out.
    ping_sent_us: Option<u64>,
    /// `--match`: the id of the message awaiting its answer, and the head of the message
    /// being read (as much of it as an id takes).
    awaiting: [u8; ID_LEN],
    head_of_message: Vec<u8>,
    /// `--trace`: the first bytes of the message coming in.
    traced: Vec<u8>,
}

impl Conn {
    /// Drops the socket; an upgraded connection says goodbye first (a close frame, 1000, if
    /// the socket takes it at once), so the server counts a close, not a lost connection.
    fn goodbye(&mut self) {
        if let (Some(stream), Phase::Open) = (self.dial.stream.as_mut(), &self.phase) {
            if self.written == self.out.len() {
                let _ = stream.write(&GOODBYE);
                let _ = stream.flush();
            }
        }
        self.dial.stream = None;
        self.phase = Phase::Tcp;
    }

    fn new() -> Conn {
        Conn {
            dial: Dialed::default(),
            phase: Phase::Tcp,
            out: Vec::new(),
            written: 0,
            head: Vec::new(),
            parser: Parser::default(),
            limits: Limits { masked: false, rsv1: false, max_frame: MAX_MESSAGE },
            inflater: None,
            compressed: Vec::new(),
            generation: 0,
            ping_sent_us: None,
            awaiting: [0; ID_LEN],
            head_of_message: Vec::new(),
            traced: Vec::new(),
        }
    }
}

impl WebSocket {
    /// `conns` closed connections sending `load`'s message; `thread` (of `threads`) seeds the
    /// keys and takes its share of the connect rate.
    pub fn new(conns: usize, load: Arc<WsLoad>, thread: usize, threads: usize) -> WebSocket {
        WebSocket {
            pace: Pace::new(load.connect_rate, threads),
            pings: VecDeque::new(),
            ids: 0,
            id_base: 0,
            counts: WsCounts::default(),
            conns: (0..conns).map(|_| Conn::new()).collect(),
            load,
            buf: vec![0; READ_BUFFER],
            // Keys need only differ between runs and threads, not be secret: a load generator
            // is not the browser the mask protects proxies from.
            rng: Rng::for_thread(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
                thread,
            ),
            scratch: Vec::new(),
        }
        .with_id_base()
    }

    /// Draws this thread's id base from its generator.
    fn with_id_base(mut self) -> WebSocket {
        self.id_base = self.rng.next_u64() << 32;
        self
    }
}

impl Transport for WebSocket {
    fn slots(&self) -> usize {
        self.conns.len()
    }

    fn open(&mut self, host: &mut impl Host, i: usize) {
        if self.pace.admit(host.now(), i) {
            self.connect(host, i);
        }
    }

    fn submit(&mut self, host: &mut impl Host, i: usize) {
        if self.load.mode == Mode::Listen {
            // Nothing goes out: the slot awaits the server's next message.
            host.written(i);
            return;
        }
        let mask = (self.rng.next_u64() as u32).to_ne_bytes();
        let c = &mut self.conns[i];
        if c.written == c.out.len() {
            c.out.clear();
            c.written = 0;
        }
        let opcode = if self.load.binary { frame::BINARY } else { frame::TEXT };
        let payload: &[u8] = match (self.load.mode, &c.inflater) {
            (Mode::Match, _) => {
                // The id, a space, the payload: one message whose head names it.
                let id = self.id_base | (self.ids & 0xFFFF_FFFF);
                self.ids += 1;
                let _ = write!(&mut c.awaiting[..], "{id:016x}");
                self.scratch.clear();
                self.scratch.extend_from_slice(&c.awaiting);
                self.scratch.push(b' ');
                self.scratch.extend_from_slice(&self.load.payload);
                &self.scratch
            }
            (_, Some(_)) => &self.load.deflated,
            (_, None) => &self.load.payload,
        };
        frame::write_frame(&mut c.out, opcode, c.inflater.is_some(), payload, Some(mask));
        self.counts.messages_sent += 1;
        self.counts.bytes_sent += payload.len() as u64;
        self.write_slot(host, i);
    }

    fn timed_out(&mut self, host: &mut impl Host, i: usize) {
        if host.state(i) == State::Connecting {
            self.connect_failed(host, i, ConnectCause::TimedOut, "connect timed out".to_string());
        } else if self.load.mode != Mode::Echo {
            // Nothing can be taken for the wrong answer: the connection stays.
            host.failed(i, ErrorKind::Timeout);
            host.free(i, true);
            self.settle(host);
        } else {
            // A late echo would answer the next message: the connection goes.
            self.counts.drops[WsDrop::Timeout] += 1;
            host.failed(i, ErrorKind::Timeout);
            self.reopen(host, i);
        }
    }

    fn reopen(&mut self, host: &mut impl Host, i: usize) {
        self.close(host, i);
        if self.load.reconnect {
            host.replace(i);
        }
        self.settle(host);
    }

    /// Closes connection `i` (with a goodbye), leaving its slot empty.
    fn close(&mut self, host: &mut impl Host, i: usize) {
        self.conns[i].goodbye();
        self.hang_up(host, i);
    }

    fn event(&mut self, host: &mut impl Host, i: usize, readable: Readable, writable: bool) {
        self.slot_event(host, i, readable, writable);
    }

    fn open_connections(&self, _host: &impl Host) -> u64 {
        self.conns.iter().filter(|c| c.dial.stream.is_some() && c.phase == Phase::Open).count() as u64
    }

    fn next_deadline(&mut self) -> Option<u64> {
        let open = self.pace.next_deadline();
        [open, self.pings.front().map(|p| p.0)].into_iter().flatten().min()
    }

    fn expire(&mut self, host: &mut impl Host, now: u64) {
        while let Some(i) = self.pace.due(now) {
            self.connect(host, i);
        }
        while let Some(&(due, i, generation)) = self.pings.front() {
            if due > now {
                break;
            }
            self.pings.pop_front();
            if self.conns[i].generation == generation && self.conns[i].phase == Phase::Open {
                self.ping(host, i);
            }
        }
    }

    /// Listening only, a slot awaits the server's next message, which it never asked for: at
    /// the end of the run it is let go, not counted as sent nor waited for until its timeout.
    fn drain(&mut self, host: &mut impl Host) {
        if self.load.mode != Mode::Listen {
            return;
        }
        for i in 0..self.conns.len() {
            if host.state(i) == State::Reading {
                host.unsend(i);
                self.close(host, i);
            }
        }
    }

    /// The slots' states are left for the worker to count what was in flight.
    fn finish(&mut self, _host: &mut impl Host) {
        for c in &mut self.conns {
            c.goodbye();
        }
    }

    fn counts(&mut self) -> Option<Box<dyn crate::stats::section::Section>> {
        Some(Box::new(std::mem::take(&mut self.counts)))
    }

    fn restart_counts(&mut self) {
        self.counts = WsCounts::default();
    }
}

impl PerSlot for WebSocket {
    fn dialed(&mut self, i: usize) -> &mut Dialed {
        &mut self.conns[i].dial
    }

    /// Handles frames in `data`; false when the connection was closed or replaced.
    fn take(&mut self, host: &mut impl Host, i: usize, data: &mut [u8]) -> bool {
        let mut pos = 0;
        loop {
            let c = &mut self.conns[i];
            if c.dial.stream.is_none() {
                return false;
            }
            let item = match c.parser.next(data, &mut pos, c.limits) {
                Ok(item) => item,
                Err(_) => {
                    self.drop_conn(host, i, WsDrop::Protocol, ErrorKind::Parse);
                    return false;
                }
            };
            match item {
                Item::Need => return true,
                Item::Data { at, n } => {
                    if self.load.mode == Mode::Match && c.head_of_message.len() < ID_LEN {
                        let take = n.min(ID_LEN - c.head_of_message.len());
                        c.head_of_message.extend_from_slice(&data[at..at + take]);
                    }
                    if host.tracing() && c.traced.len() < TRACED {
                        let take = n.min(TRACED - c.traced.len());
                        c.traced.extend_from_slice(&data[at..at + take]);
                    }
                    if c.parser.compressed_message() {
                        // Only a compressed message's bytes are kept, to inflate at its end.
                        c.compressed.extend_from_slice(&data[at..at + n]);
                    }
                    if host.state(i) == State::Reading {
                        host.first_bytes(i, Part::Head);
                    }
                }
                Item::End { compressed, len, .. } => {
                    let bytes = if compressed {
                        let Some(inflater) = c.inflater.as_mut() else { return false };
                        let inflated = inflater.message(&c.compressed, MAX_MESSAGE as usize, &mut self.scratch);
                        c.compressed.clear();
                        match inflated {
                            Ok(n) => n as u64,
                            Err(_) => {
                                self.drop_conn(host, i, WsDrop::Protocol, ErrorKind::Parse);
                                return false;
                            }
                        }
                    } else {
                        c.compressed.clear();
                        len
                    };
                    let c = &mut self.conns[i];
                    let answers = self.load.mode != Mode::Match || c.head_of_message == c.awaiting;
                    c.head_of_message.clear();
                    let awaited = answers && host.state(i) == State::Reading;
                    self.counts.messages_received += 1;
                    self.counts.bytes_received += bytes;
                    self.counts.unsolicited += u64::from(!awaited);
                    if host.tracing() {
                        let traced = std::mem::take(&mut c.traced);
                        host.trace_message(i, &traced, bytes);
                    }
                    if awaited {
                        let went_on = host.completed(i, 200, true, None);
                        self.settle(host);
                        if !went_on {
                            return false;
                        }
                    }
                }
                Item::Control { opcode } => {
                    let payload = c.parser.control_payload();
                    match opcode {
                        frame::PING => {
                            let mask = (self.rng.next_u64() as u32).to_ne_bytes();
                            let c = &mut self.conns[i];
                            if c.written == c.out.len() {
                                c.out.clear();
                                c.written = 0;
                            }
                            frame::write_frame(&mut c.out, frame::PONG, false, &payload, Some(mask));
                            self.counts.pings_answered += 1;
                            if !self.flush_out(i) {
                                self.drop_conn(host, i, WsDrop::Reset, ErrorKind::Write);
                                return false;
                            }
                        }
                        frame::PONG => {
                            // A pong names its ping by the clock it carries; unsolicited ones
                            // (a server's heartbeat) are ignored.
                            let c = &mut self.conns[i];
                            if let Some(sent) = c.ping_sent_us.filter(|s| payload == s.to_be_bytes()) {
                                c.ping_sent_us = None;
                                self.counts.pongs.0.add(host.now().saturating_sub(sent));
                            }
                        }
                        frame::CLOSE => {
                            *self.counts.closes.entry(frame::close_code(&payload)).or_default() += 1;
                            // The close is answered by `close`'s goodbye as the connection goes.
                            self.drop_conn(host, i, WsDrop::Closed, ErrorKind::Read);
                            return false;
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    fn read_buffer(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl HeldSlot for WebSocket {
    /// An event while connecting: TCP (and TLS) done, the upgrade written, the `101` read.
    fn opening_event(&mut self, host: &mut impl Host, i: usize, readable: Readable, writable: bool) {
        if self.conns[i].dial.stream.is_none() {
            return;
        }
        if self.conns[i].phase == Phase::Tcp {
            if !self.poll_connected(host, i, writable) {
                return;
            }
            let key = handshake::key(&mut self.rng);
            let c = &mut self.conns[i];
            c.out = self.load.offer.request(&key);
            c.written = 0;
            c.phase = Phase::Upgrade { key, since_us: host.now() };
        }
        if !self.flush_out(i) {
            return self.connect_failed(
                host,
                i,
                ConnectCause::Other,
                "the WebSocket upgrade could not be written".into(),
            );
        }
        if readable != Readable::No || writable {
            self.read_upgrade(host, i);
        }
    }

    /// Writes what is left; the slot awaits its echo once its message is all on the wire.
    fn write_slot(&mut self, host: &mut impl Host, i: usize) {
        if !self.flush_out(i) {
            return self.drop_conn(host, i, WsDrop::Reset, ErrorKind::Write);
        }
        let c = &self.conns[i];
        if c.written == c.out.len() && host.state(i) == State::Writing {
            host.written(i);
        }
    }

    /// Reads until the socket is drained, handing frames to `take`.
    fn read_slot(&mut self, host: &mut impl Host, i: usize, how: Readable) {
        match self.read_drained(host, i, how) {
            ReadEnd::Paused => {}
            ReadEnd::Eof => self.drop_conn(host, i, WsDrop::Eof, ErrorKind::Read),
            ReadEnd::Failed => self.drop_conn(host, i, WsDrop::Reset, ErrorKind::Read),
        }
    }
}

impl WebSocket {
    /// Starts connection `i` now.
    fn connect(&mut self, host: &mut impl Host, i: usize) {
        let c = &mut self.conns[i];
        c.phase = Phase::Tcp;
        c.out.clear();
        c.written = 0;
        c.head.clear();
        c.parser = Parser::default();
        c.compressed.clear();
        c.generation = c.generation.wrapping_add(1);
        c.ping_sent_us = None;
        self.dial(host, i);
    }

    /// Sends connection `i` a ping (its payload the clock, so a pong names its ping) unless the
    /// last is still unanswered; its next ping is queued.
    fn ping(&mut self, host: &mut impl Host, i: usize) {
        let now = host.now();
        let mask = (self.rng.next_u64() as u32).to_ne_bytes();
        let c = &mut self.conns[i];
        if let Some(every) = self.load.ping_us {
            self.pings.push_back((now + every, i, c.generation));
        }
        if c.ping_sent_us.is_some() {
            return;
        }
        c.ping_sent_us = Some(now);
        if c.written == c.out.len() {
            c.out.clear();
            c.written = 0;
        }
        frame::write_frame(&mut c.out, frame::PING, false, &now.to_be_bytes(), Some(mask));
        self.counts.pings_sent += 1;
        if !self.flush_out(i) {
            self.drop_conn(host, i, WsDrop::Reset, ErrorKind::Write);
        }
    }

    /// Loses connection `i` for `why`: the message in flight (if any) fails as `kind`, and the
    /// connection is replaced unless `--no-reconnect`.
    fn drop_conn(&mut self, host: &mut impl Host, i: usize, why: WsDrop, kind: ErrorKind) {
        self.counts.drops[why] += 1;
        if host.state(i).in_flight() {
            host.failed(i, kind);
        }
        self.reopen(host, i);
    }


    /// Reads the answer to the upgrade; once it is whole and checked the connection is made.
    fn read_upgrade(&mut self, host: &mut impl Host, i: usize) {
        let mut buf = std::mem::take(&mut self.buf);
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.dial.stream.as_mut() else { break };
            let n = match stream.read(&mut buf) {
                Ok(0) => {
                    self.connect_failed(host, i, ConnectCause::Other, "closed during the WebSocket upgrade".into());
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.connect_failed(host, i, ConnectCause::Other, e.to_string());
                    break;
                }
            };
            host.read_bytes(n);
            c.head.extend_from_slice(&buf[..n]);
            let Phase::Upgrade { key, since_us } = &c.phase else { break };
            match handshake::answer(&c.head, key, &self.load.offer) {
                Ok(None) => continue,
                Ok(Some((agreed, len))) => {
                    // Kept for the trace until the connection counts as made, so the exchange
                    // shows how it was opened.
                    let traced = host.tracing().then(|| (c.out.clone(), c.head[..len].to_vec()));
                    self.counts.handshakes.add(host.now().saturating_sub(*since_us));
                    c.phase = Phase::Open;
                    c.dial.failures = 0;
                    if let Some(every) = self.load.ping_us {
                        self.pings.push_back((host.now() + every, i, c.generation));
                    }
                    c.limits.rsv1 = agreed.deflate.is_some();
                    c.inflater = agreed.deflate.map(|d| Inflater::new(d.server_no_context_takeover));
                    let mut rest = c.head.split_off(len);
                    // An idle connection keeps no buffer: the head's and the request's room go
                    // (at 10,000 held connections they are most of what strain holds for each).
                    c.head = Vec::new();
                    if c.written == c.out.len() {
                        c.out = Vec::new();
                        c.written = 0;
                    }
                    host.connection_made(i, || Made::Tcp(c.dial.stream.as_ref().and_then(Stream::tls_began)));
                    if let Some((request, head)) = traced {
                        host.trace_upgrade(i, Some(&request), &head);
                    }
                    // The `101` proves the server took the connection, whatever it sends next:
                    // a listen-only connection to a server that never speaks first must free
                    // its place in the opening window too, or the window closes at 512.
                    self.conn_opened(host, i);
                    host.next_request(i);
                    self.settle(host);
                    if !rest.is_empty() {
                        self.take(host, i, &mut rest);
                    }
                    break;
                }
                Err(e) => {
                    if let HandshakeError::Refused(status) = e {
                        *self.counts.upgrades_refused.entry(status).or_default() += 1;
                    }
                    self.connect_failed(host, i, ConnectCause::Other, e.to_string());
                    break;
                }
            }
        }
        self.buf = buf;
    }

    /// Writes what is queued on connection `i`; false if the socket failed.
    fn flush_out(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        let Some(stream) = c.dial.stream.as_mut() else { return true };
        write_out(stream, &c.out, &mut c.written)
    }



}

#[cfg(test)]
mod tests {
    #[test]
    fn a_connection_is_small() {
        // What each of 10,000 held connections costs before its buffers: kept in view, since
        // issue 34 bounds a held idle connection at 1 KB in all.
        let size = std::mem::size_of::<super::Conn>();
        assert!(size <= 400, "{size} bytes");
    }
}
