//! A slot's stream on its link: the session's events turned into completions, resets and
//! retries; a slot given up (timeout, abort) or freed.

use super::{Http2, CANCEL, REFUSED_STREAM};
use crate::engine::transport::mux::Multiplexed;
use crate::engine::transport::{Host, Part, Transport};
use crate::h2::Event;
use crate::stats::ErrorKind;

impl Http2 {
    /// Turns link `l`'s session events into completions; false when the link went away.
    pub(super) fn handle_events(&mut self, host: &mut impl Host, l: usize) -> bool {
        let Some(session) = self.links[l].session.as_mut() else { return false };
        let mut events = std::mem::take(&mut self.events);
        session.move_events(&mut events);
        self.reading = Some(l);
        // A GOAWAY holds for the whole batch: a response completed before it in the batch must
        // not start a stream the server has already said it will refuse.
        let goaways = events.iter().filter_map(|e| match e {
            Event::GoAway { last_stream, .. } => Some(*last_stream),
            _ => None,
        });
        if let Some(last) = goaways.chain(self.links[l].goaway_last).min() {
            self.mux.life[l].goaway = true;
            self.links[l].goaway_last = Some(last);
        }
        for e in events.drain(..) {
            match e {
                Event::Status { stream, status } => {
                    if let Some(&i) = self.links[l].by_stream.get(&stream) {
                        self.slots[i as usize].status = status;
                        host.first_bytes(i as usize, Part::Head);
                    }
                }
                Event::Data { stream, .. } => {
                    // --client-abort-rate: walk away once the body starts.
                    let Some(&i) = self.links[l].by_stream.get(&stream) else { continue };
                    host.first_bytes(i as usize, Part::Body);
                    if host.aborts(i as usize) {
                        host.aborted();
                        self.abandon(host, l, i as usize);
                        self.settle(host);
                    }
                }
                Event::Closed { stream, code } => self.stream_closed(host, l, stream, code),
                Event::GoAway { .. } => self.counts.goaways += 1,
                Event::Body { stream, data } => self.stream_reply(host, l, stream, &data),
                Event::Fields { stream, fields } => {
                    let Some(&i) = self.links[l].by_stream.get(&stream) else { continue };
                    if let Some(call) = self.grpc.as_mut().and_then(|g| g.call(i as usize)) {
                        call.fields.extend(fields);
                    }
                }
                // Server events, and the end of a reply (its stream's close follows).
                Event::Request { .. } | Event::Head { .. } | Event::End { .. } => {}
            }
        }
        self.events = events;
        self.reading = None;
        if self.mux.life[l].goaway && self.links[l].by_stream.is_empty() {
            self.retire_link(host, l);
            self.settle(host);
            return false;
        }
        true
    }

    /// Stream `stream` of link `l` ended with `code`.
    fn stream_closed(&mut self, host: &mut impl Host, l: usize, stream: i32, code: u32) {
        let goaway = self.mux.life[l].goaway;
        // A stream this side reset (a timeout) was already let go of.
        let Some(i) = self.links[l].by_stream.remove(&stream) else { return };
        let i = i as usize;
        let call = self.grpc.as_mut().and_then(|g| g.take(i));
        match code {
            0 if self.slots[i].status != 0 && call.is_some() => {
                self.link_opened(host, l);
                self.count_link_use(host, i);
                // Whole messages were counted as they came; a last one cut short goes to the
                // judge as the body, so that the call is judged badly framed, as a unary one is.
                let (headers, body) = call
                    .map(|c| {
                        let body = c.cut_short().to_vec();
                        (c.fields, body)
                    })
                    .unwrap_or_default();
                let trailers = crate::http::response::Captured { headers, body };
                host.stream_ended(i, self.slots[i].status, &trailers);
            }
            0 if self.slots[i].status != 0 => {
                self.link_opened(host, l);
                let captured = self.links[l].session.as_mut().and_then(|s| s.take_captured(stream));
                let slot = &mut self.slots[i];
                slot.capture = captured.map(Box::new);
                let status = slot.status;
                self.count_link_use(host, i);
                host.completed(i, status, true, self.slots[i].capture.as_deref());
            }
            0 => {
                // Ended without a final status: not a response.
                host.failed(i, ErrorKind::Parse);
                host.next_request(i);
            }
            REFUSED_STREAM if goaway => {
                // Not processed: it goes again on the next connection.
                self.requeue(host, i);
                self.counts.retried += 1;
            }
            code => {
                self.counts.resets[(code as usize).min(crate::stats::H2_RESET_SLOTS - 1)] += 1;
                host.server_reset(i, code);
            }
        }
        self.settle(host);
    }

    /// gRPC streams: reply bytes on `stream` of link `l`: each whole reply recorded (its
    /// latency from when its message was due), then what the call sends next.
    fn stream_reply(&mut self, host: &mut impl Host, l: usize, stream: i32, data: &[u8]) {
        let Some(&i) = self.links[l].by_stream.get(&stream) else { return };
        let i = i as usize;
        host.first_bytes(i, Part::Body);
        let Some(streams) = self.grpc.as_mut() else { return };
        match streams.reply(i, data, host.now()) {
            Ok((replies, outcome)) => {
                for (due, sent, bytes) in replies {
                    host.stream_reply(i, due, sent, bytes);
                }
                self.stream_send(host, i, &outcome);
            }
            Err(()) => {
                // The call's one failure is its bad messages (a failed call, as a unary call's
                // are): a parse error besides would count it twice in the run's errors.
                host.stream_broken(i);
                self.abandon(host, l, i);
                self.settle(host);
                self.flush_link(host, l);
            }
        }
    }

    /// Pushes the messages a call owes on its stream, and ends its body when it is done.
    pub(super) fn stream_send(&mut self, host: &mut impl Host, i: usize, outcome: &super::grpc::Outcome) {
        let l = self.mux.of(i);
        let id = self.slots[i].id;
        let (Some(session), Some(streams)) = (self.links[l].session.as_mut(), self.grpc.as_ref()) else { return };
        for &k in &outcome.push {
            let Some(framed) = streams.plan.framed.get(k) else { continue };
            if session.push_body(id, framed).is_ok() {
                host.stream_sent(i, (framed.len() - crate::grpc::wire::PREFIX) as u64);
            }
        }
        if outcome.end {
            let _ = session.end_body(id);
        }
    }

    /// Resets slot `i`'s stream on link `l` and frees the slot (nothing is counted here).
    fn abandon(&mut self, host: &mut impl Host, l: usize, i: usize) {
        if let Some(g) = self.grpc.as_mut() {
            g.take(i);
        }
        let id = self.slots[i].id;
        let link = &mut self.links[l];
        link.by_stream.remove(&id);
        if let Some(s) = link.session.as_mut() {
            s.reset(id, CANCEL);
            s.take_captured(id);
        }
        self.free_slot(host, i);
    }

    /// Slot `i` gives up its request (a timeout, or a failure of its own): the stream is reset
    /// and the slot goes on; the link stays.
    pub(super) fn h2_fail(&mut self, host: &mut impl Host, i: usize, kind: ErrorKind) {
        let l = self.mux.of(i);
        if host.state(i).in_flight() {
            host.failed(i, kind);
            self.abandon(host, l, i);
            self.settle(host);
            self.flush_link(host, l);
            return;
        }
        self.free_slot(host, i);
    }
}
