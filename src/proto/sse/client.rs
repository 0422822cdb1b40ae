//! Server-Sent Events: each slot holds one stream on a connection of its own. Its request is
//! the slot's first request; every event answers the wait before it, so an event's latency is
//! the gap since the one before it on its stream (the first: since the request went out). A
//! stream the server ends is started again after its `retry:` (with `Last-Event-ID` when it
//! named one), unless `--no-reconnect`; `-n` counts the streams started. `-R` is the engine's,
//! connections arriving: each arrival is a new client, gone (its slot free) when its stream
//! ends.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::counts::SseCounts;
use super::event::EventParser;
use super::SseLoad;
use crate::engine::{write_out, Dialed, HeldSlot, Host, PerSlot, ReadEnd, Readable, State, Transport};
use crate::http::body::{BodyDecoder, BodyKind};
use crate::stats::{ConnectCause, ErrorKind};

/// Bytes read per `read` call; one buffer serves every stream of the thread.
const READ_BUFFER: usize = 64 * 1024;
/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Longest line or event accepted from a server; a longer one loses its stream.
const MAX_EVENT: usize = 1 << 20;
/// The wait before a refused or failed stream is asked again, when the server named none.
const REFUSED_RETRY_US: u64 = 1_000_000;

/// A worker's streams, one per slot.
pub struct Sse {
    conns: Vec<Conn>,
    load: Arc<SseLoad>,
    buf: Vec<u8>,
    /// A stream's body without its chunk framing.
    body: Vec<u8>,
    /// Slots whose stream starts again at its time (`retry:`).
    retrying: BinaryHeap<Reverse<(u64, usize)>>,
    /// `-n`: streams this thread may still start.
    left: Option<u64>,
    counts: SseCounts,
}

/// Where a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// TCP (and TLS) connecting.
    Tcp,
    /// The request is going out, or its answer's head is awaited.
    Head,
    /// Events flow.
    Events,
}

/// One stream's connection.
struct Conn {
    dial: Dialed,
    phase: Phase,
    /// The request, from `written` on not yet written.
    out: Vec<u8>,
    written: usize,
    /// The answer's head as it arrives.
    head: Vec<u8>,
    body: BodyDecoder,
    /// The event reader; it keeps the last event id and `retry:` across the stream's restarts.
    events: EventParser,
    /// When the stream's request went out, until its first event.
    asked_us: Option<u64>,
    /// The server said `204 No Content`: the stream is not started again (as an EventSource
    /// stops).
    stopped: bool,
}

impl Conn {
    fn new() -> Conn {
        Conn {
            dial: Dialed::default(),
            phase: Phase::Tcp,
            out: Vec::new(),
            written: 0,
            head: Vec::new(),
            body: BodyDecoder::Done,
            events: EventParser::with_limit(MAX_EVENT),
            asked_us: None,
            stopped: false,
        }
    }
}

impl Sse {
    /// `conns` closed streams of `load`; `thread` (of `threads`) takes its share of `-R`
    /// and `-n`.
    pub fn new(conns: usize, load: Arc<SseLoad>, thread: usize, threads: usize) -> Sse {
        let threads = threads.max(1);
        let left = load.streams.map(|n| n / threads as u64 + u64::from((thread as u64) < n % threads as u64));
        Sse {
            conns: (0..conns).map(|_| Conn::new()).collect(),
            load,
            buf: vec![0; READ_BUFFER],
            body: Vec::new(),
            retrying: BinaryHeap::new(),
            left,
            counts: SseCounts::default(),
        }
    }

    /// Starts stream `i`'s connection now, unless `-n`'s streams are all started.
    fn connect(&mut self, host: &mut impl Host, i: usize) {
        if self.left == Some(0) {
            return;
        }
        let c = &mut self.conns[i];
        c.phase = Phase::Tcp;
        c.out.clear();
        c.written = 0;
        c.head.clear();
        c.asked_us = None;
        if host.arriving() {
            // An arrival is a new client: a fresh EventSource, with no id to resume from and
            // not stopped by the one before it in this slot.
            c.events = EventParser::with_limit(MAX_EVENT);
            c.stopped = false;
        } else {
            c.events.restart();
        }
        self.dial(host, i);
    }


    /// Writes what is queued on stream `i`; false if the socket failed.
    fn flush_out(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        let Some(stream) = c.dial.stream.as_mut() else { return true };
        write_out(stream, &c.out, &mut c.written)
    }




    /// The server ended stream `i` (or its connection): the wait under way is let go, not
    /// counted, and the stream starts again after its `retry:`.
    fn ended(&mut self, host: &mut impl Host, i: usize) {
        if self.conns[i].phase != Phase::Events {
            return self.lose(host, i, ErrorKind::Read);
        }
        self.counts.ended += 1;
        if host.state(i).in_flight() {
            host.unsend(i);
        }
        let retry_us = self.conns[i].events.retry_ms().map_or(0, |ms| ms.saturating_mul(1000));
        self.again(host, i, retry_us);
    }

    /// Loses stream `i`: the wait under way fails as `kind`, and the stream starts again after
    /// its `retry:` (a second, if the server named none).
    fn lose(&mut self, host: &mut impl Host, i: usize, kind: ErrorKind) {
        if host.state(i).in_flight() {
            host.failed(i, kind);
        }
        let retry_us = self.conns[i].events.retry_ms().map_or(REFUSED_RETRY_US, |ms| ms.saturating_mul(1000));
        self.again(host, i, retry_us);
    }

    /// Closes stream `i` and starts it again in `after_us` (unless `--no-reconnect`); an
    /// arriving stream's client is done, and its slot free for the next arrival at once.
    fn again(&mut self, host: &mut impl Host, i: usize, after_us: u64) {
        self.close(host, i);
        if host.arriving() {
            host.replace(i);
        } else if self.load.reconnect && self.left != Some(0) && !self.conns[i].stopped {
            if after_us == 0 {
                host.replace(i);
            } else {
                self.retrying.push(Reverse((host.now() + after_us, i)));
            }
        }
        self.settle(host);
    }
}

/// The answer's head in `buf`, if whole: its length, status, body framing, and whether it is
/// an event stream; `Err` if it is not HTTP.
#[allow(clippy::type_complexity)]
fn head(buf: &[u8]) -> Result<Option<(usize, u16, BodyKind, bool)>, ()> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut headers);
    let len = match r.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(()),
    };
    let field = |name: &str| r.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value);
    let chunked = field("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().windows(7).any(|w| w == b"chunked"));
    let length = field("content-length").and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<u64>().ok());
    let kind = match (chunked, length) {
        (true, _) => BodyKind::Chunked,
        (false, Some(n)) => BodyKind::Length(n),
        (false, None) => BodyKind::UntilClose,
    };
    let event_stream = field("content-type").is_some_and(|v| {
        v.split(|&b| b == b';').next().is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"text/event-stream"))
    });
    Ok(Some((len, r.code.unwrap_or(0), kind, event_stream)))
}

impl Transport for Sse {
    fn slots(&self) -> usize {
        self.conns.len()
    }

    fn open(&mut self, host: &mut impl Host, i: usize) {
        self.connect(host, i);
    }

    fn submit(&mut self, host: &mut impl Host, i: usize) {
        let c = &mut self.conns[i];
        if c.phase != Phase::Head || !c.out.is_empty() {
            // The stream is up: the slot awaits its next event.
            host.written(i);
            return;
        }
        if !c.events.last_id().is_empty() {
            self.counts.resumed += 1;
        }
        c.out = self.load.request(c.events.last_id());
        c.written = 0;
        if let Some(left) = self.left.as_mut() {
            *left = left.saturating_sub(1);
        }
        self.write_slot(host, i);
    }

    fn timed_out(&mut self, host: &mut impl Host, i: usize) {
        match (host.state(i), self.conns[i].phase) {
            (State::Connecting, _) => self.connect_failed(host, i, ConnectCause::TimedOut, "connect timed out".into()),
            (_, Phase::Events) => {
                // No event within the timeout: the wait fails, the stream stays.
                host.failed(i, ErrorKind::Timeout);
                host.free(i, true);
                self.settle(host);
            }
            _ => self.lose(host, i, ErrorKind::Timeout),
        }
    }

    fn reopen(&mut self, host: &mut impl Host, i: usize) {
        // A refused stream's answer said to close: it is asked again after a while.
        let retry_us = self.conns[i].events.retry_ms().map_or(REFUSED_RETRY_US, |ms| ms.saturating_mul(1000));
        self.again(host, i, retry_us);
    }

    fn close(&mut self, host: &mut impl Host, i: usize) {
        self.conns[i].phase = Phase::Tcp;
        self.hang_up(host, i);
    }

    fn event(&mut self, host: &mut impl Host, i: usize, readable: Readable, writable: bool) {
        self.slot_event(host, i, readable, writable);
    }

    fn open_connections(&self, _host: &impl Host) -> u64 {
        self.conns.iter().filter(|c| c.dial.stream.is_some() && c.phase == Phase::Events).count() as u64
    }

    fn next_deadline(&mut self) -> Option<u64> {
        self.retrying.peek().map(|r| r.0 .0)
    }

    fn expire(&mut self, host: &mut impl Host, now: u64) {
        while let Some(&Reverse((due, i))) = self.retrying.peek() {
            if due > now {
                break;
            }
            self.retrying.pop();
            if !host.draining() {
                host.replace(i);
            }
        }
        self.settle(host);
    }

    /// A slot awaits the server's next event, which it never asked for: at the end of the run
    /// it is let go, not counted as sent nor waited for until its timeout.
    fn drain(&mut self, host: &mut impl Host) {
        self.retrying.clear();
        // A stream whose request went out is waited for as any request is; these never got
        // as far as sending it, and the drain lets them go.
        let opening = self.conns.iter().filter(|c| c.dial.stream.is_some() && c.phase == Phase::Tcp);
        self.counts.opening += opening.count() as u64;
        for i in 0..self.conns.len() {
            if host.state(i) == State::Reading && self.conns[i].phase == Phase::Events {
                host.unsend(i);
                self.close(host, i);
            }
        }
    }

    fn finish(&mut self, _host: &mut impl Host) {}

    fn counts(&mut self) -> Option<Box<dyn crate::stats::section::Section>> {
        Some(Box::new(std::mem::take(&mut self.counts)))
    }

    fn restart_counts(&mut self) {
        self.counts = SseCounts::default();
    }

    /// `-n`'s streams are all started and all over, or the server stopped every one (204).
    fn done(&self) -> bool {
        let idle = self.retrying.is_empty() && self.conns.iter().all(|c| c.dial.stream.is_none());
        idle && (self.left == Some(0) || !self.conns.is_empty() && self.conns.iter().all(|c| c.stopped))
    }
}

impl PerSlot for Sse {
    fn dialed(&mut self, i: usize) -> &mut Dialed {
        &mut self.conns[i].dial
    }

    /// Takes bytes of stream `i`: its answer's head, then its events; false when the stream
    /// is gone.
    fn take(&mut self, host: &mut impl Host, i: usize, data: &mut [u8]) -> bool {
        let mut data: &[u8] = data;
        if self.conns[i].phase == Phase::Head {
            let c = &mut self.conns[i];
            let before = c.head.len();
            c.head.extend_from_slice(data);
            let Some((len, status, kind, event_stream)) = (match head(&c.head) {
                Ok(h) => h,
                Err(()) => {
                    self.lose(host, i, ErrorKind::Parse);
                    return false;
                }
            }) else {
                if c.head.len() > MAX_HEAD {
                    self.lose(host, i, ErrorKind::Parse);
                    return false;
                }
                return true;
            };
            data = &data[len - before..];
            if host.tracing() {
                host.trace_upgrade(i, None, &c.head[..len]);
            }
            c.head = Vec::new();
            if status == 204 {
                // No Content: the server has no more for this stream, which stops (as an
                // EventSource does); nothing was answered.
                *self.counts.refused.entry(status).or_default() += 1;
                c.stopped = !host.arriving();
                host.unsend(i);
                self.again(host, i, 0);
                return false;
            }
            if status != 200 {
                // What the server said is its answer, counted with its status.
                *self.counts.refused.entry(status).or_default() += 1;
                host.completed(i, status, false, None);
                self.settle(host);
                return false;
            }
            if !event_stream {
                self.counts.not_event_stream += 1;
                self.lose(host, i, ErrorKind::Parse);
                return false;
            }
            self.counts.streams += 1;
            c.phase = Phase::Events;
            c.body = BodyDecoder::new(kind);
        }
        let mut body = std::mem::take(&mut self.body);
        body.clear();
        let c = &mut self.conns[i];
        let fed = c.body.feed_into(data, Some(&mut body));
        let done = c.body.is_done();
        let (mut events, mut bytes, mut finished) = (0u64, 0u64, 0u64);
        let comments = c.events.comments();
        let read = c.events.feed(&body, |e| {
            events += 1;
            bytes += e.data.len() as u64;
            finished += u64::from(e.data == b"[DONE]");
        });
        self.counts.comments += c.events.comments() - comments;
        self.body = body;
        if fed.is_err() || read.is_err() {
            self.lose(host, i, ErrorKind::Parse);
            return false;
        }
        self.counts.events += events;
        self.counts.data_bytes += bytes;
        self.counts.done += finished;
        for _ in 0..events {
            if host.state(i) != State::Reading {
                // Draining, or a timeout let the wait go: the event is counted, not timed.
                continue;
            }
            if let Some(asked) = self.conns[i].asked_us.take() {
                self.counts.first_event.0.add(host.now().saturating_sub(asked));
            }
            let went_on = host.completed(i, 200, true, None);
            self.settle(host);
            if !went_on || self.conns[i].dial.stream.is_none() {
                return false;
            }
        }
        if done {
            self.ended(host, i);
            return false;
        }
        true
    }

    fn read_buffer(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl HeldSlot for Sse {
    /// An event while connecting: once TCP (and TLS) is up, the stream's request is the slot's
    /// first request.
    fn opening_event(&mut self, host: &mut impl Host, i: usize, _readable: Readable, writable: bool) {
        if self.poll_connected(host, i, writable) {
            self.conns[i].phase = Phase::Head;
            self.made(host, i);
            self.conn_opened(host, i);
            host.next_request(i);
            self.settle(host);
        }
    }

    /// Writes what is left of the request; the slot awaits the first event once it is out.
    fn write_slot(&mut self, host: &mut impl Host, i: usize) {
        if !self.flush_out(i) {
            return self.lose(host, i, ErrorKind::Write);
        }
        let c = &mut self.conns[i];
        if c.written == c.out.len() && host.state(i) == State::Writing {
            c.asked_us = Some(host.now());
            host.written(i);
        }
    }

    /// Reads until the socket is drained.
    fn read_slot(&mut self, host: &mut impl Host, i: usize, how: Readable) {
        match self.read_drained(host, i, how) {
            ReadEnd::Paused => {}
            ReadEnd::Eof => self.ended(host, i),
            ReadEnd::Failed => self.lose(host, i, ErrorKind::Read),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answers_head_says_its_framing_and_type() {
        let h = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\ndata";
        assert_eq!(head(h), Ok(Some((h.len() - 4, 200, BodyKind::Chunked, true))));
        let h = b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nContent-Type: text/plain\r\n\r\n";
        assert_eq!(head(h), Ok(Some((h.len(), 404, BodyKind::Length(9), false))));
        assert_eq!(head(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"), Ok(None));
        assert_eq!(head(b"SSH-2.0-OpenSSH\r\n\r\n"), Err(()));
    }

    #[test]
    fn an_idle_stream_holds_little() {
        // At 10,000 held streams, what each keeps besides its socket (the bound is
        // 1 KB a stream, kernel buffers aside).
        let size = std::mem::size_of::<Conn>();
        assert!(size <= 400, "{size} bytes");
    }
}
