//! A slot's stream on its link: requests put on new streams, the connection's HTTP/3 events
//! turned into completions, resets and retries; a slot given up (timeout, abort) or freed; a
//! proxy test's keep-alive limit.

use super::*;

/// What putting a request on a stream came to.
enum Put {
    /// On the wire (its body, if any, written or waiting for flow control).
    Sent(u64),
    /// The connection cannot take a new stream now (the server's stream limit): it waits.
    Blocked,
    /// The link is going away (GOAWAY) or broken: the request waits for the next connection.
    Gone,
}

impl Worker<'_, Http3> {
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
            self.h3_submit(i);
        } else {
            self.next_request(i);
        }
    }

    /// Puts slot `i`'s request on its link as a new stream.
    pub(super) fn h3_submit(&mut self, i: usize) {
        let l = i / self.transport.streams;
        // A script's or a proxy test's request is built as HTTP/1 bytes and converted here.
        let converted = match self.requests.built(i) {
            None => None,
            Some(bytes) => {
                let authority = self.addrs[l % self.addrs.len()].to_string();
                match crate::h2::from_http1(bytes, "https", &authority) {
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
        match self.put(l, i, converted.as_ref()) {
            Put::Sent(id) => {
                let h3 = &mut self.transport;
                h3.links[l].by_stream.insert(id, i as u32);
                let stream = &mut h3.slots[i];
                stream.id = id;
                stream.status = 0;
                self.slots[i].state = State::Reading;
                if h3.reading != Some(l) {
                    self.flush_link(l);
                }
            }
            Put::Blocked => self.transport.links[l].blocked.push(i as u32),
            Put::Gone => {
                let link = &mut self.transport.links[l];
                if link.state == LinkState::Open && link.goaway.is_none() {
                    // No stream id was refused: those in flight finish here.
                    link.goaway = Some(u64::MAX);
                }
                let retire = link.by_stream.is_empty();
                self.requeue(i);
                if retire && self.transport.links[l].state == LinkState::Open {
                    self.retire_link(l);
                } else {
                    self.h3_open(i);
                }
            }
        }
    }

    /// Opens a stream on link `l` for slot `i` with `request` (the fixed one when `None`).
    fn put(&mut self, l: usize, i: usize, request: Option<&crate::h2::H2Request>) -> Put {
        let h3 = &mut self.transport;
        let link = &mut h3.links[l];
        let (Some(conn), Some(session)) = (link.conn.as_mut(), link.h3.as_mut()) else { return Put::Gone };
        if link.state != LinkState::Open || link.goaway.is_some() {
            return Put::Gone;
        }
        let converted: Vec<quiche::h3::Header>;
        let (fields, body) = match request {
            None => (&h3.fixed.0, h3.fixed.1.as_deref()),
            Some(r) => {
                converted = r.fields.iter().map(|(n, v)| quiche::h3::Header::new(n, v)).collect();
                (&converted, r.body.as_deref())
            }
        };
        let id = match session.send_request(conn, fields, body.is_none()) {
            Ok(id) => id,
            Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::TransportError(quiche::Error::StreamLimit)) => {
                return Put::Blocked
            }
            Err(_) => return Put::Gone,
        };
        if let Some(body) = body {
            let written = session.send_body(conn, id, body, true).unwrap_or(0);
            if written < body.len() {
                h3.slots[i].rest = Some(body[written..].to_vec());
                link.blocked.push(i as u32);
            }
        }
        Put::Sent(id)
    }

    /// Retries link `l`'s requests that waited for a stream or for flow control.
    fn unblock(&mut self, l: usize) {
        let waiting = std::mem::take(&mut self.transport.links[l].blocked);
        for i in waiting {
            let i = i as usize;
            if !self.slots[i].in_flight() {
                continue;
            }
            let Some(rest) = self.transport.slots[i].rest.take() else {
                // It waited for a stream: it goes out now, or waits again.
                if !self.transport.links[l].by_stream.values().any(|&s| s as usize == i) {
                    self.h3_submit(i);
                }
                continue;
            };
            let h3 = &mut self.transport;
            let link = &mut h3.links[l];
            let id = h3.slots[i].id;
            let (Some(conn), Some(session)) = (link.conn.as_mut(), link.h3.as_mut()) else { return };
            let written = session.send_body(conn, id, &rest, true).unwrap_or(0);
            if written < rest.len() {
                h3.slots[i].rest = Some(rest[written..].to_vec());
                link.blocked.push(i as u32);
            }
        }
    }

    /// Turns link `l`'s HTTP/3 events into completions, resets and retries.
    pub(super) fn handle_events(&mut self, l: usize) {
        self.transport.reading = Some(l);
        loop {
            let h3 = &mut self.transport;
            let link = &mut h3.links[l];
            let (Some(conn), Some(session)) = (link.conn.as_mut(), link.h3.as_mut()) else { break };
            let (id, event) = match session.poll(conn) {
                Ok(e) => e,
                Err(quiche::h3::Error::Done) => break,
                Err(_) => {
                    // An HTTP/3 protocol error: quiche closes the connection with its code.
                    self.meter.rec.h3.protocol_errors += 1;
                    break;
                }
            };
            match event {
                quiche::h3::Event::Headers { list, .. } => {
                    let Some(&i) = link.by_stream.get(&id) else { continue };
                    let status = status_of(&list).unwrap_or(0);
                    if status >= 200 || status == 0 {
                        let stream = &mut h3.slots[i as usize];
                        stream.status = status;
                        if h3.capture {
                            let headers = list.iter().map(|h| (h.name().to_vec(), h.value().to_vec())).collect();
                            stream.capture = Some(Box::new(Captured { headers, body: Vec::new() }));
                        }
                        self.first_byte(i as usize);
                    }
                }
                quiche::h3::Event::Data => self.read_body(l, id),
                quiche::h3::Event::Finished => self.stream_finished(l, id),
                quiche::h3::Event::Reset(code) => self.stream_reset(l, id, code),
                quiche::h3::Event::GoAway => self.goaway(l, id),
                quiche::h3::Event::PriorityUpdate => {}
            }
        }
        self.transport.reading = None;
        self.unblock(l);
        let link = &self.transport.links[l];
        if link.state == LinkState::Open && link.goaway.is_some() && link.by_stream.is_empty() {
            self.retire_link(l);
        }
    }

    /// Reads stream `id`'s body as far as it came: kept when capturing, else only counted
    /// through. A client abort (`--client-abort-rate`) walks away once the body starts.
    fn read_body(&mut self, l: usize, id: u64) {
        let i = self.transport.links[l].by_stream.get(&id).copied();
        if let Some(i) = i.filter(|&i| self.requests.aborts(i as usize)) {
            self.meter.rec.aborted += 1;
            return self.abandon(l, i as usize);
        }
        loop {
            let h3 = &mut self.transport;
            let link = &mut h3.links[l];
            let (Some(conn), Some(session)) = (link.conn.as_mut(), link.h3.as_mut()) else { return };
            let n = match session.recv_body(conn, id, &mut self.buf) {
                Ok(n) => n,
                Err(_) => return,
            };
            if let Some(c) = i.and_then(|i| h3.slots[i as usize].capture.as_mut()) {
                c.body.extend_from_slice(&self.buf[..n]);
            }
        }
    }

    /// Stream `id` of link `l` ended: its response is complete.
    fn stream_finished(&mut self, l: usize, id: u64) {
        let Some(i) = self.transport.links[l].by_stream.remove(&id) else { return };
        let i = i as usize;
        let status = self.transport.slots[i].status;
        if status == 0 {
            // Ended without a final status: not a response.
            self.failed(i, ErrorKind::Parse);
            return self.next_request(i);
        }
        self.link_opened(l);
        self.completed(i, status, true);
    }

    /// The server reset stream `id` of link `l` with `code`.
    fn stream_reset(&mut self, l: usize, id: u64, code: u64) {
        let Some(i) = self.transport.links[l].by_stream.remove(&id) else { return };
        let i = i as usize;
        // H3_REQUEST_REJECTED: not processed, so it goes again (RFC 9114 4.1.1).
        if code == 0x10b {
            self.requeue(i);
            self.meter.rec.h3.retried += 1;
            return self.h3_open(i);
        }
        self.failed(i, ErrorKind::Reset);
        self.meter.rec.h3.reset(code);
        self.next_request(i);
    }

    /// The server's GOAWAY with id `id`: streams at or above it were not processed and go
    /// again on the next connection; the link takes no new stream.
    fn goaway(&mut self, l: usize, id: u64) {
        self.meter.rec.h3.goaways += 1;
        let link = &mut self.transport.links[l];
        link.goaway = Some(id);
        let refused: Vec<(u64, u32)> = link.by_stream.iter().filter(|(&s, _)| s >= id).map(|(&s, &i)| (s, i)).collect();
        for (s, i) in refused {
            self.transport.links[l].by_stream.remove(&s);
            self.meter.rec.h3.retried += 1;
            self.requeue(i as usize);
        }
    }

    /// Slot `i`'s request never reached a server that took it: it is not counted as sent and
    /// goes again, as first planned, once the slot's link is up (see [`Worker::slot_ready`]).
    pub(super) fn requeue(&mut self, i: usize) {
        let stream = &mut self.transport.slots[i];
        stream.retry = true;
        stream.rest = None;
        let s = &mut self.slots[i];
        s.state = State::Closed;
        s.bump();
        self.meter.rec.sent = self.meter.rec.sent.saturating_sub(1);
    }

    /// Resets slot `i`'s stream on link `l` and frees the slot (nothing is counted here).
    pub(super) fn abandon(&mut self, l: usize, i: usize) {
        let id = self.transport.slots[i].id;
        self.transport.slots[i].rest = None;
        let link = &mut self.transport.links[l];
        if link.by_stream.remove(&id).is_some() {
            if let Some(conn) = link.conn.as_mut() {
                let _ = conn.stream_shutdown(id, quiche::Shutdown::Read, REQUEST_CANCELLED);
                let _ = conn.stream_shutdown(id, quiche::Shutdown::Write, REQUEST_CANCELLED);
            }
        }
        link.blocked.retain(|&s| s as usize != i);
        self.h3_free(i);
    }

    /// A proxy test's keep-alive limit over HTTP/3: after `limit` responses the link takes no
    /// new stream and is replaced once its streams end. True: slot `i` may go on.
    pub(super) fn h3_count_use(&mut self, i: usize, limit: u64) -> bool {
        let link = &mut self.transport.links[i / self.transport.streams];
        link.uses += 1;
        if limit > 0 && link.uses >= limit && link.goaway.is_none() {
            link.goaway = Some(u64::MAX);
        }
        true
    }

    /// Slot `i` gives up its request (a timeout, or a failure of its own): the stream is reset
    /// and the slot goes on; the link stays.
    pub(super) fn h3_fail(&mut self, i: usize, kind: ErrorKind) {
        let l = i / self.transport.streams;
        if self.slots[i].in_flight() {
            self.failed(i, kind);
            self.abandon(l, i);
            if self.transport.reading != Some(l) {
                self.flush_link(l);
            }
            return;
        }
        self.h3_free(i);
    }

    /// Slot `i` is free: it sends again if its link is up, else waits for it.
    pub(super) fn h3_free(&mut self, i: usize) {
        let up = self.transport.links[i / self.transport.streams].state == LinkState::Open;
        let s = &mut self.slots[i];
        s.bump();
        if up && !self.draining {
            self.next_request(i);
        } else {
            s.state = State::Closed;
        }
    }
}
