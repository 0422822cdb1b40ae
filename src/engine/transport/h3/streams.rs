//! A slot's stream on its link: requests put on new QUIC streams, responses read back frame by
//! frame ([`frames::Reader`]), the server's control stream watched for GOAWAY; a slot given up
//! (timeout, abort) or freed; a proxy test's keep-alive limit.

use super::frames::{self, Part, Reader};
use super::{Http3, SlotStream, REQUEST_CANCELLED};
use crate::engine::transport::mux::{LinkState, Multiplexed};
use crate::engine::transport::{Host, Transport};
use crate::http::response::Captured;
use crate::net::throttle::{Throttles, Way};
use crate::stats::ErrorKind;

/// What putting a request on a stream came to.
enum Put {
    /// On the wire (what flow control held back waits in the slot's `rest`).
    Sent(u64),
    /// The server allows no more streams now: it waits for one to end.
    Blocked,
    /// The link is going away (GOAWAY) or broken: the request waits for the next connection.
    Gone,
}

/// A server-initiated unidirectional stream.
pub(super) enum PeerUni {
    /// Its type is still being read.
    Typing(Vec<u8>),
    /// The server's control stream.
    Control(Reader),
    /// QPACK's streams (unused: no dynamic table) and unknown types: read and dropped.
    Drain,
}

/// What a response's bytes came to in one read.
#[derive(Default)]
struct Read {
    /// Its final status arrived in this read.
    status: bool,
    /// Body bytes arrived.
    data: bool,
    /// The server broke HTTP/3.
    bad: Option<frames::FrameError>,
}

impl Http3 {
    /// Puts slot `i`'s request on its link as a new stream.
    pub(super) fn h3_submit(&mut self, host: &mut impl Host, i: usize) {
        let l = self.mux.of(i);
        let encode = |bytes: &[u8], authority: &str| {
            crate::http::fields::from_http1(bytes, crate::config::Scheme::Https.name(), authority)
                .and_then(|r| frames::encode_request(&r.fields, r.body.as_deref()))
        };
        let Ok(built) = self.convert_built(host, i, encode) else { return };
        match self.put(l, i, built) {
            Put::Sent(id) => {
                self.links[l].by_stream.insert(id, i as u32);
                host.written(i);
                if self.reading != Some(l) {
                    self.flush_link(host, l);
                }
            }
            Put::Blocked => self.links[l].blocked.push(i as u32),
            Put::Gone => {
                let life = &mut self.mux.life[l];
                let open = life.state == LinkState::Open;
                // No stream id was refused: those in flight finish here.
                life.goaway |= open;
                let retire = open && self.links[l].by_stream.is_empty();
                self.requeue(host, i);
                if retire {
                    self.retire_link(host, l);
                } else {
                    self.mux_open(host, i);
                }
            }
        }
    }

    /// Opens a stream on link `l` for slot `i` with `built` (the fixed request when `None`).
    fn put(&mut self, l: usize, i: usize, built: Option<Vec<u8>>) -> Put {
        let h3 = self;
        let link = &mut h3.links[l];
        let Some(conn) = link.conn.as_mut() else { return Put::Gone };
        let life = h3.mux.life[l];
        if life.state != LinkState::Open || life.goaway {
            return Put::Gone;
        }
        if conn.peer_streams_left_bidi() == 0 {
            return Put::Blocked;
        }
        let id = link.next_stream;
        let request = built.as_deref().unwrap_or(&h3.fixed);
        let (part, fin) = paced_part(link.pace.as_deref_mut(), request);
        let sent = match conn.stream_send(id, part, fin) {
            Ok(n) => {
                paid(link, n);
                n
            }
            Err(quiche::Error::Done) => 0,
            Err(quiche::Error::StreamLimit) => return Put::Blocked,
            Err(_) => return Put::Gone,
        };
        link.next_stream += 4;
        let stream = &mut h3.slots[i];
        stream.id = id;
        stream.status = 0;
        stream.capture = None;
        stream.reader.reset();
        if sent < request.len() {
            stream.rest = Some(request[sent..].to_vec());
            link.blocked.push(i as u32);
        }
        Put::Sent(id)
    }

    /// Retries link `l`'s requests that waited for a stream or for flow control.
    fn unblock(&mut self, host: &mut impl Host, l: usize) {
        let waiting = std::mem::take(&mut self.links[l].blocked);
        for i in waiting {
            let i = i as usize;
            if !host.state(i).in_flight() {
                continue;
            }
            let Some(rest) = self.slots[i].rest.take() else {
                // It waited for a stream: it goes out now, or waits again.
                self.h3_submit(host, i);
                continue;
            };
            let h3 = &mut *self;
            let link = &mut h3.links[l];
            let id = h3.slots[i].id;
            let Some(conn) = link.conn.as_mut() else { return };
            let (part, fin) = paced_part(link.pace.as_deref_mut(), &rest);
            let sent = conn.stream_send(id, part, fin);
            if let Ok(n) = sent {
                paid(link, n);
            }
            match sent {
                Ok(n) if n == rest.len() => {}
                Ok(n) => {
                    h3.slots[i].rest = Some(rest[n..].to_vec());
                    link.blocked.push(i as u32);
                }
                Err(quiche::Error::Done) => {
                    h3.slots[i].rest = Some(rest);
                    link.blocked.push(i as u32);
                }
                Err(quiche::Error::StreamStopped(code)) => self.stream_reset(host, l, id, code),
                Err(_) => self.stream_reset(host, l, id, 0x102),
            }
        }
    }

    /// Reads every stream of link `l` that has something to read.
    pub(super) fn read_streams(&mut self, host: &mut impl Host, l: usize) {
        self.reading = Some(l);
        let mut ids = std::mem::take(&mut self.readable);
        if let Some(conn) = self.links[l].conn.as_ref() {
            ids.extend(conn.readable());
        }
        for &id in &ids {
            match id & 0x3 {
                0 => self.read_response(host, l, id),
                3 => self.read_uni(host, l, id),
                _ => {}
            }
            if !self.mux.is_open(l) {
                break;
            }
        }
        ids.clear();
        self.readable = ids;
        self.reading = None;
        if self.mux.is_open(l) {
            self.unblock(host, l);
            if self.mux.life[l].goaway && self.links[l].by_stream.is_empty() {
                self.retire_link(host, l);
                self.settle(host);
            }
        }
    }

    /// Reads request stream `id` of link `l`: its response's frames, its end or its reset.
    fn read_response(&mut self, host: &mut impl Host, l: usize, id: u64) {
        let slot = self.links[l].by_stream.get(&id).copied();
        loop {
            let link = &mut self.links[l];
            let Some(conn) = link.conn.as_mut() else { return };
            // A slow reader takes its budget's worth; the rest waits in quiche, and QUIC's flow
            // control holds the server back, until the link's wake.
            let allowed = match link.pace.as_deref_mut().map(|p| p.allowance(Way::Read)) {
                None => self.buf.len(),
                Some(Some(n)) => n.min(self.buf.len()),
                Some(None) => return,
            };
            let (n, fin) = match conn.stream_recv(id, &mut self.buf[..allowed]) {
                Ok(r) => r,
                Err(quiche::Error::StreamReset(code)) => return self.stream_reset(host, l, id, code),
                Err(_) => return,
            };
            if let Some(p) = link.pace.as_deref_mut() {
                p.spend(Way::Read, n);
            }
            // A stream given up on (a timeout, an abort) is only drained.
            let Some(i) = slot.map(|i| i as usize) else { continue };
            let read = feed(&mut self.slots[i], self.mux.capture, &self.buf[..n]);
            if read.bad.is_some() || (fin && self.slots[i].reader.end().is_err()) {
                self.counts.protocol_errors += 1;
                return self.h3_fail(host, i, ErrorKind::Parse);
            }
            if read.status {
                host.first_bytes(i, crate::engine::transport::Part::Head);
            }
            if read.data && host.aborts(i) {
                // --client-abort-rate: walk away once the body starts.
                host.aborted();
                self.abandon(host, l, i);
                return self.settle(host);
            }
            if fin {
                return self.stream_finished(host, l, id, i);
            }
        }
    }

    /// Reads the server's unidirectional stream `id`: its control stream's GOAWAY; the rest
    /// is dropped.
    fn read_uni(&mut self, host: &mut impl Host, l: usize, id: u64) {
        let mut goaway = None;
        let mut broken = false;
        loop {
            let link = &mut self.links[l];
            let Some(conn) = link.conn.as_mut() else { return };
            let (n, fin) = match conn.stream_recv(id, &mut self.buf) {
                Ok(r) => r,
                Err(_) => break,
            };
            let uni = link.uni.entry(id).or_insert_with(|| PeerUni::Typing(Vec::new()));
            let mut input = &self.buf[..n];
            if let PeerUni::Typing(head) = uni {
                head.extend_from_slice(input);
                let Some((ty, len)) = frames::varint(head) else { continue };
                let rest = head.split_off(len);
                *uni = match ty {
                    frames::CONTROL_STREAM => PeerUni::Control(Reader::control()),
                    _ => PeerUni::Drain,
                };
                if let PeerUni::Control(r) = uni {
                    broken |= r
                        .feed(&rest, &mut |p| {
                            if let Part::GoAway(g) = p {
                                goaway = Some(g)
                            }
                        })
                        .is_err();
                }
                input = &[];
            }
            if let PeerUni::Control(r) = uni {
                broken |= r
                    .feed(input, &mut |p| {
                        if let Part::GoAway(g) = p {
                            goaway = Some(g)
                        }
                    })
                    .is_err();
                // The control stream lives as long as the connection (RFC 9114 6.2.1).
                broken |= fin;
            }
        }
        if let Some(g) = goaway {
            self.goaway(host, l, g);
        }
        if broken {
            self.counts.protocol_errors += 1;
            if let Some(conn) = self.links[l].conn.as_mut() {
                // H3_CLOSED_CRITICAL_STREAM or H3_FRAME_UNEXPECTED: the connection ends.
                let _ = conn.close(true, 0x104, b"");
            }
        }
    }

    /// Stream `id` of link `l` ended: slot `i`'s response is complete.
    fn stream_finished(&mut self, host: &mut impl Host, l: usize, id: u64, i: usize) {
        self.links[l].by_stream.remove(&id);
        let status = self.slots[i].status;
        if status == 0 {
            // Ended without a final status: not a response.
            self.counts.protocol_errors += 1;
            host.failed(i, ErrorKind::Parse);
            host.next_request(i);
            return self.settle(host);
        }
        self.link_opened(host, l);
        self.count_link_use(host, i);
        host.completed(i, status, true, self.slots[i].capture.as_deref());
        self.settle(host);
    }

    /// The server reset (or stopped) stream `id` of link `l` with `code`.
    fn stream_reset(&mut self, host: &mut impl Host, l: usize, id: u64, code: u64) {
        let Some(i) = self.links[l].by_stream.remove(&id) else { return };
        let i = i as usize;
        self.slots[i].rest = None;
        // H3_REQUEST_REJECTED: not processed, so it goes again (RFC 9114 4.1.1).
        if code == 0x10b {
            self.requeue(host, i);
            self.counts.retried += 1;
            self.mux_open(host, i);
            return self.settle(host);
        }
        host.failed(i, ErrorKind::Reset);
        self.counts.reset(code);
        host.next_request(i);
        self.settle(host);
    }

    /// The server's GOAWAY with id `id`: streams at or above it were not processed and go
    /// again on the next connection; the link takes no new stream.
    fn goaway(&mut self, host: &mut impl Host, l: usize, id: u64) {
        self.counts.goaways += 1;
        self.mux.life[l].goaway = true;
        let link = &mut self.links[l];
        link.refused_from = Some(id);
        let refused: Vec<(u64, u32)> = link.by_stream.iter().filter(|(&s, _)| s >= id).map(|(&s, &i)| (s, i)).collect();
        for (s, i) in refused {
            self.links[l].by_stream.remove(&s);
            self.counts.retried += 1;
            self.requeue(host, i as usize);
        }
    }

    /// Cancels slot `i`'s stream on link `l` both ways and frees the slot (nothing is counted
    /// here).
    fn abandon(&mut self, host: &mut impl Host, l: usize, i: usize) {
        let id = self.slots[i].id;
        self.slots[i].rest = None;
        let link = &mut self.links[l];
        if link.by_stream.remove(&id).is_some() {
            if let Some(conn) = link.conn.as_mut() {
                let _ = conn.stream_shutdown(id, quiche::Shutdown::Read, REQUEST_CANCELLED);
                let _ = conn.stream_shutdown(id, quiche::Shutdown::Write, REQUEST_CANCELLED);
            }
        }
        link.blocked.retain(|&s| s as usize != i);
        self.free_slot(host, i);
    }

    /// Slot `i` gives up its request (a timeout, or a failure of its own): the stream is
    /// cancelled and the slot goes on; the link stays.
    pub(super) fn h3_fail(&mut self, host: &mut impl Host, i: usize, kind: ErrorKind) {
        let l = self.mux.of(i);
        if host.state(i).in_flight() {
            host.failed(i, kind);
            self.abandon(host, l, i);
            self.settle(host);
            if self.reading != Some(l) {
                self.flush_link(host, l);
            }
            return;
        }
        self.free_slot(host, i);
    }
}

/// The part of `request` a slow sender may put on its stream now (all of it otherwise), and
/// whether that ends the stream. A spent budget sends nothing and sets the link's wake; the
/// rest waits in the slot's `rest` as flow control's would.
fn paced_part<'r>(pace: Option<&mut Throttles>, request: &'r [u8]) -> (&'r [u8], bool) {
    let allowed = match pace.map(|p| p.allowance(Way::Write)) {
        None => request.len(),
        Some(n) => n.unwrap_or(0).min(request.len()),
    };
    (&request[..allowed], allowed == request.len())
}

/// `n` bytes of a request went on link `l`'s stream: a slow sender's budget pays for them.
fn paid(link: &mut super::Link, n: usize) {
    if let Some(p) = link.pace.as_deref_mut() {
        p.spend(Way::Write, n);
    }
}

/// Feeds `input` to `stream`'s response reader: its status from the first final HEADERS, its
/// fields and body kept when `capture`.
fn feed(stream: &mut SlotStream, capture: bool, input: &[u8]) -> Read {
    let mut read = Read::default();
    let SlotStream { reader, status, capture: kept, .. } = stream;
    let result = reader.feed(input, &mut |part| match part {
        // Informational responses (1xx) come first; trailers after the body are not read.
        Part::Headers(block) if *status == 0 => match frames::status(block) {
            Ok(s) if s < 200 => {}
            Ok(s) => {
                *status = s;
                read.status = true;
                if capture {
                    match frames::decode(block) {
                        Ok(headers) => *kept = Some(Box::new(Captured { headers, body: Vec::new() })),
                        Err(e) => read.bad = Some(e),
                    }
                }
            }
            Err(e) => read.bad = Some(e),
        },
        Part::Headers(_) => {}
        Part::Data(_) if *status == 0 => read.bad = Some(frames::FrameError("DATA before the response's HEADERS")),
        Part::Data(d) => {
            read.data = true;
            if let Some(c) = kept.as_mut() {
                c.body.extend_from_slice(d);
            }
        }
        Part::GoAway(_) => {}
    });
    if let Err(e) = result {
        read.bad.get_or_insert(e);
    }
    read
}
