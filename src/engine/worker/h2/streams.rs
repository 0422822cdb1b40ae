//! A slot's stream on its link: the session's events turned into completions, resets and
//! retries; a slot given up (timeout, abort) or freed; a proxy test's keep-alive limit.

use super::*;

impl Worker<'_, Http2> {
    /// Turns link `l`'s session events into completions; false when the link went away.
    pub(super) fn handle_events(&mut self, l: usize) -> bool {
        let links = &mut self.transport;
        let Some(session) = links.links[l].session.as_mut() else { return false };
        let mut events = std::mem::take(&mut links.events);
        events.append(session.events());
        links.reading = Some(l);
        // A GOAWAY holds for the whole batch: a response completed before it in the batch must
        // not start a stream the server has already said it will refuse.
        if events.iter().any(|e| matches!(e, Event::GoAway { .. })) {
            links.mux.life[l].goaway = true;
        }
        for e in events.drain(..) {
            match e {
                Event::Status { stream, status } => {
                    if let Some(&i) = self.transport.links[l].by_stream.get(&stream) {
                        self.transport.slots[i as usize].status = status;
                        self.first_byte(i as usize);
                    }
                }
                Event::Data { stream, .. } => {
                    // --client-abort-rate: walk away once the body starts.
                    let Some(&i) = self.transport.links[l].by_stream.get(&stream) else { continue };
                    if self.requests.aborts(i as usize) {
                        self.meter.rec.aborted += 1;
                        self.abandon(l, i as usize);
                    }
                }
                Event::Closed { stream, code } => self.stream_closed(l, stream, code),
                Event::GoAway { .. } => self.meter.rec.h2.goaways += 1,
                Event::Request { .. } => {}
            }
        }
        let links = &mut self.transport;
        links.events = events;
        links.reading = None;
        if links.mux.life[l].goaway && links.links[l].by_stream.is_empty() {
            self.retire_link(l);
            return false;
        }
        true
    }

    /// Stream `stream` of link `l` ended with `code`.
    pub(super) fn stream_closed(&mut self, l: usize, stream: i32, code: u32) {
        let links = &mut self.transport;
        let goaway = links.mux.life[l].goaway;
        // A stream this side reset (a timeout) was already let go of.
        let Some(i) = links.links[l].by_stream.remove(&stream) else { return };
        let i = i as usize;
        match code {
            0 if self.transport.slots[i].status != 0 => {
                self.link_opened(l);
                let captured = self.transport.links[l].session.as_mut().and_then(|s| s.take_captured(stream));
                let slot = &mut self.transport.slots[i];
                slot.capture = captured.map(Box::new);
                let status = slot.status;
                self.completed(i, status, true);
            }
            0 => {
                // Ended without a final status: not a response.
                self.failed(i, ErrorKind::Parse);
                self.next_request(i);
            }
            REFUSED_STREAM if goaway => {
                // Not processed: it goes again on the next connection.
                self.requeue(i);
                self.meter.rec.h2.retried += 1;
            }
            code => {
                self.failed(i, ErrorKind::Reset);
                self.meter.rec.h2.resets[(code as usize).min(crate::stats::H2_RESET_SLOTS - 1)] += 1;
                self.next_request(i);
            }
        }
    }

    /// Resets slot `i`'s stream on link `l` and frees the slot (nothing is counted here).
    pub(super) fn abandon(&mut self, l: usize, i: usize) {
        let id = self.transport.slots[i].id;
        let link = &mut self.transport.links[l];
        link.by_stream.remove(&id);
        if let Some(s) = link.session.as_mut() {
            s.reset(id, CANCEL);
            s.take_captured(id);
        }
        self.free_slot(i);
    }

    /// Slot `i` gives up its request (a timeout, or a failure of its own): the stream is reset
    /// and the slot goes on; the link stays.
    pub(super) fn h2_fail(&mut self, i: usize, kind: ErrorKind) {
        let l = self.transport.mux.of(i);
        let in_flight = matches!(self.slots[i].state, State::Writing | State::Reading);
        if in_flight {
            self.failed(i, kind);
            self.abandon(l, i);
            self.flush_link(l);
            return;
        }
        self.free_slot(i);
    }
}
