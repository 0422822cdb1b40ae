//! HTTP/3 as a worker's transport: each trait call routes a slot to its link.

use super::*;
use crate::engine::worker::links::Multiplexed;

impl Transport for Http3 {
    fn slots(&self) -> usize {
        self.slots.len()
    }

    fn link(&self, i: usize) -> usize {
        self.mux.of(i)
    }

    fn capture(&mut self, on: bool) {
        self.capture = on;
    }

    fn open(w: &mut Worker<'_, Self>, i: usize) {
        w.mux_open(i);
    }

    fn submit(w: &mut Worker<'_, Self>, i: usize) {
        w.h3_submit(i);
    }

    fn fail(w: &mut Worker<'_, Self>, i: usize, kind: ErrorKind) {
        w.h3_fail(i, kind);
    }

    /// A stream's deadline passed (a link's handshake deadline is the link's own): the stream
    /// is cancelled and the connection kept.
    fn timed_out(w: &mut Worker<'_, Self>, i: usize) {
        w.h3_fail(i, ErrorKind::Timeout);
    }

    /// The slot goes on; its link stays.
    fn reopen(w: &mut Worker<'_, Self>, i: usize) {
        w.free_slot(i);
    }

    fn close(w: &mut Worker<'_, Self>, i: usize) {
        let s = &mut w.slots[i];
        s.state = State::Closed;
        s.bump();
    }

    fn event(w: &mut Worker<'_, Self>, l: usize, readable: Readable, writable: bool) {
        w.link_event(l, readable != Readable::No, writable);
    }

    /// Each request is framed from its fields, HEAD included.
    fn head_request(&mut self, _: usize, _: bool) {}

    fn captured(&self, i: usize) -> Option<&Captured> {
        self.slots.get(i)?.capture.as_deref()
    }

    fn count_use(w: &mut Worker<'_, Self>, i: usize, limit: u64) -> bool {
        w.count_link_use(i, limit)
    }

    fn open_connections(w: &Worker<'_, Self>) -> u64 {
        w.transport.mux.open() as u64
    }

    fn next_deadline(&mut self) -> Option<u64> {
        Http3::next_deadline(self)
    }

    fn expire(w: &mut Worker<'_, Self>, now: u64) {
        w.expire_links(now);
        w.expire_timers(now);
    }

    /// As over HTTP/2: a GOAWAY may refuse streams in flight, which go again first.
    fn count_done(w: &Worker<'_, Self>) -> bool {
        w.streams_done()
    }

    fn finish(w: &mut Worker<'_, Self>) {
        w.finish_links();
    }
}

impl Multiplexed for Http3 {
    fn links(&self) -> &Links {
        &self.mux
    }

    fn links_mut(&mut self) -> &mut Links {
        &mut self.mux
    }

    fn busy(&self, l: usize) -> bool {
        !self.links[l].by_stream.is_empty()
    }

    fn forget(&mut self, i: usize) {
        self.slots[i].rest = None;
    }

    fn connect_link(w: &mut Worker<'_, Self>, l: usize) {
        w.connect_h3_link(l);
    }

    fn drop_link(w: &mut Worker<'_, Self>, l: usize) {
        w.drop_h3_link(l);
    }

    fn connect_timed_out(w: &mut Worker<'_, Self>, l: usize) {
        let conn = w.transport.links[l].conn.as_ref();
        let why = conn.map_or(handshake::Failure::NoAnswer, handshake::Failure::timed_out);
        w.handshake_failed(l, why);
    }
}
