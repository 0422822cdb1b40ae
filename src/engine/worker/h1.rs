//! HTTP/1.1: each slot is a connection of its own. A request is written whole, its response
//! read and framed in place; keep-alive connections go on, others are replaced.

use super::*;
use crate::http::response::{Captured, ResponseParser};

/// A worker's HTTP/1.1 connections, one per slot.
pub(super) struct Http1 {
    conns: Vec<Conn>,
}

/// One HTTP/1.1 connection.
struct Conn {
    /// The socket, absent while closed.
    stream: Option<Stream>,
    /// Response framing in progress.
    parser: ResponseParser,
    /// Bytes of the current request written so far.
    written: usize,
    /// Connect failures in a row, for the retry backoff.
    failures: u32,
    /// Opened, and not yet proven accepted by the server (no response yet): counts against the
    /// worker's window of connections being opened.
    opening: bool,
    /// Responses completed on this connection (for a proxy test's `--keepalive`).
    uses: u64,
}

impl Http1 {
    /// `conns` closed connections.
    pub(super) fn new(conns: usize) -> Http1 {
        let conn =
            || Conn { stream: None, parser: ResponseParser::new(), written: 0, failures: 0, opening: false, uses: 0 };
        Http1 { conns: (0..conns).map(|_| conn()).collect() }
    }
}

impl Transport for Http1 {
    fn slots(&self) -> usize {
        self.conns.len()
    }

    fn link(&self, i: usize) -> usize {
        i
    }

    fn capture(&mut self, on: bool) {
        if on {
            for c in &mut self.conns {
                c.parser.set_capture(true);
            }
        }
    }

    /// Opens (or reopens) connection `i`.
    fn open(w: &mut Worker<'_, Self>, i: usize) {
        let now = w.clock.now_us();
        let result = w.connect(i, i);
        let c = &mut w.transport.conns[i];
        let s = &mut w.slots[i];
        s.bump();
        c.parser.reset();
        c.uses = 0;
        match result {
            Ok(stream) => {
                c.stream = Some(stream);
                s.state = State::Connecting;
                c.opening = true;
                w.opening.started();
                w.due.deadlines.push(Deadline {
                    at_us: now + w.plan.timeout_us,
                    conn: i as u32,
                    generation: s.generation,
                });
            }
            Err(e) => w.connect_failed(i, connect_cause(&e), e.to_string()),
        }
    }

    fn submit(w: &mut Worker<'_, Self>, i: usize) {
        w.transport.conns[i].written = 0;
        w.write(i);
    }

    /// Counts a failed request and replaces the connection.
    fn fail(w: &mut Worker<'_, Self>, i: usize, kind: ErrorKind) {
        w.failed(i, kind);
        Self::reopen(w, i);
    }

    fn timed_out(w: &mut Worker<'_, Self>, i: usize) {
        if w.slots[i].state == State::Connecting {
            w.connect_failed(i, ConnectCause::TimedOut, "connect timed out".to_string());
        } else {
            Self::fail(w, i, ErrorKind::Timeout);
        }
    }

    /// Closes connection `i` and, unless the test is over, opens a new one in its slot.
    fn reopen(w: &mut Worker<'_, Self>, i: usize) {
        Self::close(w, i);
        if let When::Arrivals(a) = &mut w.when {
            // Arriving connections are not replaced: the slot waits for the next arrival.
            a.free.push(i as u32);
        } else if !w.draining {
            w.opening.queue.push_back(i as u32);
            w.open_queued();
        }
    }

    /// Closes connection `i`, leaving its slot empty.
    fn close(w: &mut Worker<'_, Self>, i: usize) {
        let c = &mut w.transport.conns[i];
        // Dropping the stream closes its fd, which takes it out of epoll (it is never dup'ed):
        // no `epoll_ctl` per close, which counts when every response closes its connection.
        c.stream = None;
        if c.opening {
            // Not `opened`: a closing slot must not start another connect from inside `close`.
            c.opening = false;
            w.opening.ended();
        }
        let s = &mut w.slots[i];
        s.state = State::Closed;
        s.bump();
    }

    fn event(w: &mut Worker<'_, Self>, i: usize, readable: Readable, writable: bool) {
        let Some(s) = w.slots.get(i) else { return };
        match s.state {
            State::Closed => {}
            State::Connecting => w.connecting_event(i, writable),
            State::Writing => {
                if writable {
                    w.write(i);
                }
                if readable != Readable::No && w.slots[i].state != State::Closed {
                    w.read(i, readable);
                }
            }
            State::Reading | State::Idle | State::Delayed => {
                if readable != Readable::No {
                    w.read(i, readable);
                }
            }
        }
    }

    fn head_request(&mut self, i: usize, head: bool) {
        if let Some(c) = self.conns.get_mut(i) {
            c.parser.set_head_request(head);
        }
    }

    fn captured(&self, i: usize) -> Option<&Captured> {
        self.conns.get(i)?.parser.captured()
    }

    fn count_use(w: &mut Worker<'_, Self>, i: usize, limit: u64) -> bool {
        let c = &mut w.transport.conns[i];
        c.uses += 1;
        if limit > 0 && c.uses >= limit {
            Self::reopen(w, i);
            return false;
        }
        true
    }

    fn open_connections(w: &Worker<'_, Self>) -> u64 {
        w.slots.iter().filter(|s| !matches!(s.state, State::Closed | State::Connecting)).count() as u64
    }

    fn next_deadline(&mut self) -> Option<u64> {
        None
    }

    fn expire(_: &mut Worker<'_, Self>, _: u64) {}

    fn finish(_: &mut Worker<'_, Self>) {}
}

impl Worker<'_, Http1> {
    /// Connection `i` proved the server took it (or sends nothing at once): its place in the
    /// opening window goes on.
    fn conn_opened(&mut self, i: usize) {
        if std::mem::take(&mut self.transport.conns[i].opening) {
            self.opened();
        }
    }

    /// An event on a connecting socket: connected (the first request goes out), still
    /// connecting, or failed.
    fn connecting_event(&mut self, i: usize, writable: bool) {
        let c = &mut self.transport.conns[i];
        let Some(stream) = c.stream.as_mut() else { return };
        match stream.poll_connect(writable) {
            Ok(true) => {
                c.failures = 0;
                self.meter.rec.connections += 1;
                self.next_request(i);
                if !self.slots[i].in_flight() {
                    // Nothing sent at once (rate mode, a delay): a response cannot prove it.
                    self.conn_opened(i);
                }
            }
            Ok(false) => {}
            Err(e) => self.connect_failed(i, connect_cause(&e), e.to_string()),
        }
    }

    /// Counts a failed connect and schedules the slot's retry (arrivals: frees the slot).
    fn connect_failed(&mut self, i: usize, cause: ConnectCause, why: String) {
        self.count_connect_error(i, cause, why);
        self.conn_opened(i);
        let c = &mut self.transport.conns[i];
        c.stream = None;
        c.failures = c.failures.saturating_add(1);
        let failures = c.failures;
        let s = &mut self.slots[i];
        s.state = State::Closed;
        s.bump();
        if let When::Arrivals(a) = &mut self.when {
            a.free.push(i as u32);
            return;
        }
        let backoff = retry_backoff_us(failures);
        self.due.timers.push(Reverse((self.clock.now_us() + backoff, i as u32, s.generation)));
    }

    /// Writes what is left of the request; moves to Reading once all of it is on the wire.
    fn write(&mut self, i: usize) {
        let req = self.requests.bytes(i);
        let c = &mut self.transport.conns[i];
        let Some(stream) = c.stream.as_mut() else { return };
        while c.written < req.len() {
            match stream.write(&req[c.written..]) {
                Ok(0) => return Http1::fail(self, i, ErrorKind::Write),
                Ok(n) => c.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Http1::fail(self, i, ErrorKind::Write),
            }
        }
        match stream.flush() {
            Ok(true) => self.slots[i].state = State::Reading,
            Ok(false) => {}
            Err(_) => Http1::fail(self, i, ErrorKind::Write),
        }
    }

    /// Reads until the socket is drained, completing responses as they end.
    fn read(&mut self, i: usize, how: Readable) {
        // The buffer is lent out for the loop so the connection and recorder stay borrowable.
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(stream) = self.transport.conns[i].stream.as_mut() {
            match stream.read(&mut buf) {
                Ok(0) => {
                    self.closed_by_peer(i);
                    break;
                }
                Ok(n) => {
                    self.meter.rec.bytes += n as u64;
                    // A plain socket that returned less than asked is drained for now: epoll will
                    // report the next arrival, so the extra read that would see EAGAIN is skipped.
                    // Not when the event also said the peer closed: that FIN will not be
                    // reported again, so read on to see it.
                    let drained = n < buf.len() && stream.short_read_drains() && how != Readable::UntilEof;
                    if !self.consume(i, &buf[..n]) || drained {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) if matches!(self.slots[i].state, State::Idle | State::Delayed) => {
                    // A reset on a connection with nothing in flight loses nothing: it is the
                    // same as the close in `closed_by_peer`.
                    Http1::reopen(self, i);
                    break;
                }
                Err(_) => {
                    Http1::fail(self, i, ErrorKind::Read);
                    break;
                }
            }
        }
        self.buf = buf;
    }

    /// Feeds bytes to connection `i`'s parser, completing responses; false when the
    /// connection was closed or replaced.
    fn consume(&mut self, i: usize, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            match self.slots[i].state {
                // The run is draining and closed the connection after its last response: what
                // follows answers nothing that was sent, so no request failed.
                State::Closed => return false,
                State::Reading => {}
                _ => {
                    // Bytes nobody asked for (or a response before the request was written):
                    // the server is not speaking HTTP/1 request-response.
                    Http1::fail(self, i, ErrorKind::Parse);
                    return false;
                }
            }
            self.first_byte(i);
            let c = &mut self.transport.conns[i];
            let Ok(fed) = c.parser.feed(data) else {
                Http1::fail(self, i, ErrorKind::Parse);
                return false;
            };
            data = &data[fed.used..];
            let Some(done) = fed.complete else {
                if self.requests.aborts(i) && !c.parser.is_idle() {
                    // --client-abort-rate: walk away mid-response, as a browser does.
                    self.meter.rec.aborted += 1;
                    Http1::reopen(self, i);
                    return false;
                }
                continue;
            };
            self.conn_opened(i);
            let s = &mut self.slots[i];
            s.pending = s.pending.saturating_sub(1);
            if s.pending > 0 {
                // A pipelined response: counted now, timed with the last one of its write.
                self.meter.rec.counted(done.status);
                if !self.run_response_hook(i, done.status) {
                    return false;
                }
                continue;
            }
            if !self.completed(i, done.status, done.keep_alive) {
                return false;
            }
        }
        self.slots[i].state != State::Closed
    }

    fn closed_by_peer(&mut self, i: usize) {
        if matches!(self.slots[i].state, State::Idle | State::Delayed) {
            // A server may close a kept-alive connection it considers idle; nothing was lost.
            Http1::reopen(self, i);
        } else if let Some(done) = self.transport.conns[i].parser.finish_on_close() {
            self.record(i, done.status);
            Http1::reopen(self, i);
        } else {
            // The request in flight is lost, as wrk counts it.
            Http1::fail(self, i, ErrorKind::Read);
        }
    }
}
