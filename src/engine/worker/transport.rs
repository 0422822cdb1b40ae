//! How a worker's requests travel: one implementation per protocol, chosen once when the
//! worker is made (the worker is generic over it), so the shared loop never asks which
//! protocol it speaks. A protocol owns its connections and what it keeps per connection; the
//! worker owns the request slots, what is sent and when, deadlines and counts.
//!
//! The functions take the whole worker rather than `&mut self`: finishing a response runs the
//! worker's shared code (record it, run hooks, send the next request), which comes back into
//! the transport to put that request on the wire. Static dispatch keeps the hot path free of
//! virtual calls; a third protocol is one more implementation.

use super::{Readable, Worker};
use crate::http::response::Captured;
use crate::stats::ErrorKind;

/// One protocol's side of a worker.
pub(super) trait Transport: Sized {
    /// Request slots it carries (one per HTTP/1.1 connection, `-m` per HTTP/2 connection).
    fn slots(&self) -> usize;
    /// The connection slot `i` travels on (its number, which picks its origin).
    fn link(&self, i: usize) -> usize;
    /// Keeps each response whole for a hook or a content check.
    fn capture(&mut self, on: bool);
    /// Slot `i` needs its connection: opens it (or, when it is up, the slot sends).
    fn open(w: &mut Worker<'_, Self>, i: usize);
    /// Puts slot `i`'s request, just started, on the wire.
    fn submit(w: &mut Worker<'_, Self>, i: usize);
    /// Slot `i`'s request failed as `kind`: counted, and the slot goes on.
    fn fail(w: &mut Worker<'_, Self>, i: usize, kind: ErrorKind);
    /// Slot `i`'s deadline passed (its connect or its request).
    fn timed_out(w: &mut Worker<'_, Self>, i: usize);
    /// Slot `i` is done with its connection (it closed, or the response said so).
    fn reopen(w: &mut Worker<'_, Self>, i: usize);
    /// Slot `i` stops (the run is draining): nothing of it is left under way.
    fn close(w: &mut Worker<'_, Self>, i: usize);
    /// A poll event on the transport's source `token`.
    fn event(w: &mut Worker<'_, Self>, token: usize, readable: Readable, writable: bool);
    /// Slot `i`'s request is a HEAD (its response has no body, whatever it announces).
    fn head_request(&mut self, i: usize, head: bool);
    /// The response just completed on slot `i`, kept whole (when capturing).
    fn captured(&self, i: usize) -> Option<&Captured>;
    /// A proxy test's keep-alive limit: slot `i` completed a response; false when its
    /// connection was replaced.
    fn count_use(w: &mut Worker<'_, Self>, i: usize, limit: u64) -> bool;
    /// Connections up now.
    fn open_connections(w: &Worker<'_, Self>) -> u64;
    /// The transport's own next deadline (connects, reconnects), if any.
    fn next_deadline(&mut self) -> Option<u64>;
    /// Handles the transport's own deadlines that passed by `now`.
    fn expire(w: &mut Worker<'_, Self>, now: u64);
    /// The run is over: counts what the connections still open hold.
    fn finish(w: &mut Worker<'_, Self>);
    /// `-n`'s last request is sent: whether the count is done, so the run may drain. HTTP/1.1
    /// sends each request once, so it is; HTTP/2 waits for the streams in flight, since a
    /// GOAWAY may refuse some unprocessed, and they go again (on a new connection) first.
    fn count_done(_w: &Worker<'_, Self>) -> bool {
        true
    }
}
