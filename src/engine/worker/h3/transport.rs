//! HTTP/3 as a worker's transport: each trait call routes a slot to its link.

use super::*;

impl Transport for Http3 {
    fn slots(&self) -> usize {
        self.slots.len()
    }

    fn link(&self, i: usize) -> usize {
        i / self.streams
    }

    fn capture(&mut self, on: bool) {
        self.capture = on;
    }

    fn open(w: &mut Worker<'_, Self>, i: usize) {
        w.h3_open(i);
    }

    fn submit(w: &mut Worker<'_, Self>, i: usize) {
        w.h3_submit(i);
    }

    fn fail(w: &mut Worker<'_, Self>, i: usize, kind: ErrorKind) {
        w.h3_fail(i, kind);
    }

    /// A stream's deadline passed (a link's handshake deadline is the link's own): the stream
    /// is reset and the connection kept.
    fn timed_out(w: &mut Worker<'_, Self>, i: usize) {
        w.h3_fail(i, ErrorKind::Timeout);
    }

    /// The slot goes on; its link stays.
    fn reopen(w: &mut Worker<'_, Self>, i: usize) {
        w.h3_free(i);
    }

    fn close(w: &mut Worker<'_, Self>, i: usize) {
        let s = &mut w.slots[i];
        s.state = State::Closed;
        s.bump();
    }

    fn event(w: &mut Worker<'_, Self>, l: usize, readable: Readable, writable: bool) {
        w.link_event(l, readable != Readable::No, writable);
    }

    /// quiche frames each request from its fields, HEAD included.
    fn head_request(&mut self, _: usize, _: bool) {}

    fn captured(&self, i: usize) -> Option<&Captured> {
        self.slots.get(i)?.capture.as_deref()
    }

    fn count_use(w: &mut Worker<'_, Self>, i: usize, limit: u64) -> bool {
        w.h3_count_use(i, limit)
    }

    fn open_connections(w: &Worker<'_, Self>) -> u64 {
        w.transport.open() as u64
    }

    fn next_deadline(&mut self) -> Option<u64> {
        Http3::next_deadline(self)
    }

    fn expire(w: &mut Worker<'_, Self>, now: u64) {
        w.expire_links(now);
    }

    /// As over HTTP/2: a GOAWAY may refuse streams in flight, which go again first.
    fn count_done(w: &Worker<'_, Self>) -> bool {
        w.in_flight() == 0 && !w.transport.slots.iter().any(|s| s.retry)
    }

    fn finish(w: &mut Worker<'_, Self>) {
        w.finish_links();
    }
}
