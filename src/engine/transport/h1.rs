//! HTTP/1.1: each slot is a connection of its own. A request is written whole, its response
//! read and framed in place; keep-alive connections go on, others are replaced.

use std::io;

use super::{Dialed, Host, Part, PerSlot, ReadEnd, Readable, Transport};
use crate::engine::slot::State;
use crate::http::response::ResponseParser;
use crate::stats::{ConnectCause, ErrorKind};

/// Bytes read per `read` call; one buffer serves every connection of the thread, since
/// responses are parsed in place and bodies skipped, never stored.
const READ_BUFFER: usize = 64 * 1024;

/// A worker's HTTP/1.1 connections, one per slot.
pub struct Http1 {
    conns: Vec<Conn>,
    buf: Vec<u8>,
}

/// One HTTP/1.1 connection.
struct Conn {
    /// The socket, connect failures and the place in the opening window (proven by the first
    /// response).
    dial: Dialed,
    /// Response framing in progress.
    parser: ResponseParser,
    /// Bytes of the current request written so far.
    written: usize,
    /// Responses completed on this connection (for a proxy test's `--keepalive`).
    uses: u64,
}

impl Http1 {
    /// `conns` closed connections.
    pub fn new(conns: usize) -> Http1 {
        let conn = || Conn { dial: Dialed::default(), parser: ResponseParser::new(), written: 0, uses: 0 };
        Http1 { conns: (0..conns).map(|_| conn()).collect(), buf: vec![0; READ_BUFFER] }
    }
}

impl Transport for Http1 {
    fn slots(&self) -> usize {
        self.conns.len()
    }

    fn capture(&mut self, on: bool) {
        if on {
            for c in &mut self.conns {
                c.parser.set_capture(true);
            }
        }
    }

    /// Opens (or reopens) connection `i`, unless -n's count was all sent since it was queued.
    fn open(&mut self, host: &mut impl Host, i: usize) {
        if host.spent() {
            return;
        }
        let c = &mut self.conns[i];
        c.parser.reset();
        c.uses = 0;
        self.dial(host, i);
    }

    fn submit(&mut self, host: &mut impl Host, i: usize) {
        self.conns[i].written = 0;
        self.write(host, i);
    }

    fn timed_out(&mut self, host: &mut impl Host, i: usize) {
        if host.state(i) == State::Connecting {
            self.connect_failed(host, i, ConnectCause::TimedOut, "connect timed out".to_string());
        } else {
            self.fail(host, i, ErrorKind::Timeout);
        }
    }

    /// Closes connection `i` and, unless the test is over, opens a new one in its slot.
    fn reopen(&mut self, host: &mut impl Host, i: usize) {
        self.close(host, i);
        host.replace(i);
        self.settle(host);
    }

    /// Closes connection `i`, leaving its slot empty.
    fn close(&mut self, host: &mut impl Host, i: usize) {
        self.hang_up(host, i);
    }

    fn event(&mut self, host: &mut impl Host, i: usize, readable: Readable, writable: bool) {
        if i >= self.conns.len() {
            return;
        }
        match host.state(i) {
            State::Closed => {}
            State::Connecting => self.connecting_event(host, i, writable),
            State::Writing => {
                if writable {
                    self.write(host, i);
                }
                if readable != Readable::No && host.state(i) != State::Closed {
                    self.read(host, i, readable);
                }
            }
            State::Reading | State::Idle | State::Delayed => {
                if readable != Readable::No {
                    self.read(host, i, readable);
                }
            }
        }
    }

    fn head_request(&mut self, i: usize, head: bool) {
        if let Some(c) = self.conns.get_mut(i) {
            c.parser.set_head_request(head);
        }
    }

    fn open_connections(&self, host: &impl Host) -> u64 {
        (0..self.conns.len()).filter(|&i| !matches!(host.state(i), State::Closed | State::Connecting)).count() as u64
    }

    fn next_deadline(&mut self) -> Option<u64> {
        None
    }

    fn expire(&mut self, _: &mut impl Host, _: u64) {}

    fn finish(&mut self, _: &mut impl Host) {}
}

impl PerSlot for Http1 {
    fn dialed(&mut self, i: usize) -> &mut Dialed {
        &mut self.conns[i].dial
    }

    #[inline]
    fn take(&mut self, host: &mut impl Host, i: usize, data: &mut [u8]) -> bool {
        self.consume(host, i, data)
    }

    fn read_buffer(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Http1 {
    /// Counts a failed request and replaces the connection.
    fn fail(&mut self, host: &mut impl Host, i: usize, kind: ErrorKind) {
        host.failed(i, kind);
        self.reopen(host, i);
    }

    /// An event on a connecting socket: connected (the first request goes out), still
    /// connecting, or failed.
    fn connecting_event(&mut self, host: &mut impl Host, i: usize, writable: bool) {
        if self.poll_connected(host, i, writable) {
            self.made(host, i);
            host.next_request(i);
            self.settle(host);
            if !host.state(i).in_flight() {
                // Nothing sent at once (rate mode, a delay): a response cannot prove it.
                self.conn_opened(host, i);
            }
        }
    }

    /// Writes what is left of the request; the slot reads once all of it is on the wire.
    fn write(&mut self, host: &mut impl Host, i: usize) {
        let req = host.request(i);
        let pages = host.request_pages(i);
        let c = &mut self.conns[i];
        let Some(stream) = c.dial.stream.as_mut() else { return };
        while c.written < req.len() {
            let sent = match pages.and_then(|p| stream.send_pages(p, c.written)) {
                Some(sent) => sent,
                None => stream.write(&req[c.written..]),
            };
            match sent {
                Ok(0) => return self.fail(host, i, ErrorKind::Write),
                Ok(n) => c.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail(host, i, ErrorKind::Write),
            }
        }
        match stream.flush() {
            Ok(true) => host.written(i),
            Ok(false) => {}
            Err(_) => self.fail(host, i, ErrorKind::Write),
        }
    }

    /// Reads until the socket is drained, completing responses as they end.
    fn read(&mut self, host: &mut impl Host, i: usize, how: Readable) {
        match self.read_drained(host, i, how) {
            ReadEnd::Paused => {}
            ReadEnd::Eof => self.closed_by_peer(host, i),
            // A reset on a connection with nothing in flight loses nothing: it is the same as
            // the close in `closed_by_peer`.
            ReadEnd::Failed if matches!(host.state(i), State::Idle | State::Delayed) => self.reopen(host, i),
            ReadEnd::Failed => self.fail(host, i, ErrorKind::Read),
        }
    }

    /// Feeds bytes to connection `i`'s parser, completing responses; false when the
    /// connection was closed or replaced.
    fn consume(&mut self, host: &mut impl Host, i: usize, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            match host.state(i) {
                // The run is draining and closed the connection after its last response: what
                // follows answers nothing that was sent, so no request failed.
                State::Closed => return false,
                State::Reading => {}
                _ => {
                    // Bytes nobody asked for (or a response before the request was written):
                    // the server is not speaking HTTP/1 request-response.
                    self.fail(host, i, ErrorKind::Parse);
                    return false;
                }
            }
            host.first_bytes(i, Part::Head);
            // Bytes of a response prove the server took the connection: its place in the
            // opening window goes on now, not when the response is complete, which for a slow
            // reader (or a long body) may be many seconds later.
            self.conn_opened(host, i);
            let c = &mut self.conns[i];
            let Ok(fed) = c.parser.feed(data) else {
                self.fail(host, i, ErrorKind::Parse);
                return false;
            };
            data = &data[fed.used..];
            let Some(done) = fed.complete else {
                if host.aborts(i) && !c.parser.is_idle() {
                    // --client-abort-rate: walk away mid-response, as a browser does.
                    host.aborted();
                    self.reopen(host, i);
                    return false;
                }
                continue;
            };
            let c = &mut self.conns[i];
            // A pipelined response before its write's last: counted now, timed with the last.
            if let Some(go_on) = host.pipelined(i, done.status, c.parser.captured()) {
                self.settle(host);
                if !go_on {
                    return false;
                }
                continue;
            }
            // A proxy test's keep-alive limit: the connection is replaced after its last use.
            c.uses += 1;
            let limit = host.keepalive_limit();
            let keep = done.keep_alive && !(limit > 0 && c.uses >= limit);
            let went_on = host.completed(i, done.status, keep, c.parser.captured());
            self.settle(host);
            if !went_on {
                return false;
            }
        }
        host.state(i) != State::Closed
    }

    fn closed_by_peer(&mut self, host: &mut impl Host, i: usize) {
        if matches!(host.state(i), State::Idle | State::Delayed) {
            // A server may close a kept-alive connection it considers idle; nothing was lost.
            self.reopen(host, i);
        } else if let Some(done) = self.conns[i].parser.finish_on_close() {
            host.record(i, done.status);
            self.reopen(host, i);
        } else {
            // The request in flight is lost, as wrk counts it.
            self.fail(host, i, ErrorKind::Read);
        }
    }
}
