//! The origin's event streams (`strain origin --sse N`): a request that accepts
//! `text/event-stream` is answered `200` with a chunked stream of N events per second (each
//! `id: SEQ` and `data: event SEQ`, padded to `--sse-size`), the first after `--delay`.
//! `Last-Event-ID` resumes after that id; `--sse-events` ends each stream after so many, and
//! `--sse-retry` says how long a client waits before starting it again.

use std::time::{Duration, Instant};

use crate::http::request_head::fields;
use crate::origin::unit::{Asked, Driver, Io, Outbox, Read, Unit};
use crate::origin::Next;

/// The origin's event streams, as `strain origin --sse` sets them.
#[derive(Debug, Clone, PartialEq)]
pub struct SseConfig {
    /// Events per second on each stream.
    pub per_s: f64,
    /// Events after which a stream ends (0: never).
    pub events: u64,
    /// `retry:` sent first, milliseconds.
    pub retry_ms: Option<u64>,
    /// Each event's data at least this many bytes.
    pub size: usize,
}

/// The counters the streams keep, as the stats answer names them.
const COUNTERS: &[&str] = &["sse_streams", "sse_events"];
const STREAMS: usize = 0;
const EVENTS: usize = 1;

/// Events written at once at most, for a stream whose client fell behind its schedule.
const MAX_BURST: u64 = 1000;

impl Unit for SseConfig {
    fn counters(&self) -> &'static [&'static str] {
        COUNTERS
    }

    fn claim(&self, asked: &Asked<'_>) -> Option<Box<dyn Driver>> {
        let accepts = fields(asked.head, b"accept")
            .any(|v| v.split(|&b| b == b',').any(|t| t.trim_ascii().starts_with(b"text/event-stream")));
        if !accepts {
            return None;
        }
        let last = fields(asked.head, b"last-event-id").next().and_then(|v| std::str::from_utf8(v).ok()?.parse().ok());
        Some(Box::new(Stream::new(self.clone(), last.unwrap_or(0))))
    }

    fn summary(&self, counts: &[u64]) -> String {
        let n = |i: usize| counts.get(i).copied().unwrap_or(0);
        format!("SSE streams {}, events sent {}", n(STREAMS), n(EVENTS))
    }
}

/// One stream.
struct Stream {
    config: SseConfig,
    out: Outbox,
    /// The last id sent.
    seq: u64,
    /// Events sent on this stream.
    sent: u64,
    /// When the first event is due (set on the first drive: after `--delay`).
    start: Option<Instant>,
    /// The stream has ended: the connection closes once the output is written.
    ended: bool,
}

impl Stream {
    /// A stream resuming after id `last`, its head queued.
    fn new(config: SseConfig, last: u64) -> Stream {
        let mut head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        if let Some(ms) = config.retry_ms {
            chunk(&mut head, format!("retry: {ms}\n\n").as_bytes());
        }
        Stream { config, out: Outbox::with(head), seq: last, sent: 0, start: None, ended: false }
    }

    /// Queues the events due by `now`; when the next is due.
    fn due(&mut self, now: Instant, io: &mut Io<'_, '_>) -> Option<Instant> {
        let start = *self.start.get_or_insert_with(|| now + io.serve.delay().unwrap_or_default());
        let every = Duration::from_secs_f64(1.0 / self.config.per_s);
        let mut burst = 0;
        loop {
            if self.ended {
                return None;
            }
            let at = start + every.mul_f64(self.sent as f64);
            if at > now || burst == MAX_BURST {
                return Some(at.max(now));
            }
            self.seq += 1;
            self.sent += 1;
            burst += 1;
            let mut data = format!("event {}", self.seq);
            let pad = self.config.size.saturating_sub(data.len());
            data.extend(std::iter::repeat_n('.', pad));
            chunk(&mut self.out.bytes, format!("id: {}\ndata: {data}\n\n", self.seq).as_bytes());
            io.serve.count(EVENTS, 1);
            if self.config.events > 0 && self.sent >= self.config.events {
                self.out.bytes.extend_from_slice(b"0\r\n\r\n");
                self.ended = true;
            }
        }
    }
}

/// Appends `data` as one chunk.
fn chunk(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

impl Driver for Stream {
    fn drive(&mut self, io: &mut Io<'_, '_>) -> Next {
        if self.start.is_none() {
            io.serve.count(STREAMS, 1);
        }
        let wake = self.due(Instant::now(), io);
        io.wake_at(wake);
        if io.flush(&mut self.out).is_err() || (self.ended && self.out.pending() == 0) {
            return Next::Close;
        }
        // What the client sends now is not read for meaning, only to see it leave.
        while io.readable() && !self.out.backed_up() {
            match io.read() {
                Read::Gone => return Next::Close,
                Read::Nothing => break,
                Read::Data(_) => {}
            }
        }
        Next::Wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_framed() {
        let mut out = Vec::new();
        chunk(&mut out, b"id: 1\ndata: event 1\n\n");
        assert_eq!(out, b"15\r\nid: 1\ndata: event 1\n\n\r\n");
    }
}
