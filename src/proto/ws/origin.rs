//! The origin's WebSocket echo (`strain origin --ws`): a GET that asks to upgrade is answered
//! `101`, and from then on every message comes back as it came (after `--delay`), pings are
//! answered, and a close is returned; after `--ws-close-after N` messages the server closes
//! with 1000, and `--ws-drop-rate` drops a share of connections without a close. Broadcasts
//! (`--ws-broadcast`) are queued by the origin's timer through [`Driver::push`].
//!
//! permessage-deflate is agreed with no context taken over either way, so a compressed message
//! stands alone and is echoed as it arrived, compressed, without inflating it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::frame::{self, Item, Limits, Parser};
use crate::http::request_head::fields;
use crate::origin::unit::{Asked, Driver, Io, Outbox, Read, Serve, Unit};
use crate::origin::Next;

/// The origin's WebSocket echo, as `strain origin --ws` sets it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WsConfig {
    /// Close each connection with 1000 after echoing this many messages (0: never).
    pub close_after: u64,
    /// Subprotocols accepted; the first the client offers that is here is chosen.
    pub subprotocols: Vec<String>,
    /// Messages per second sent to every connection (0: none), beside the echoes.
    pub broadcast_per_s: f64,
    /// Probability (0 to 1) that a message, instead of its echo, makes the server drop the
    /// connection without a close frame.
    pub drop_rate: f64,
}

/// The counters the echo keeps, as the stats answer names them.
const COUNTERS: &[&str] = &["ws_upgrades", "ws_messages", "ws_broadcasts"];
const UPGRADES: usize = 0;
const MESSAGES: usize = 1;
const BROADCASTS: usize = 2;

impl Unit for WsConfig {
    fn counters(&self) -> &'static [&'static str] {
        COUNTERS
    }

    fn claim(&self, asked: &Asked<'_>) -> Option<Box<dyn Driver>> {
        let ask = WsAsk::of(asked)?;
        Some(Box::new(WsConn::new(&ask, self, asked.rest)))
    }

    fn push_every(&self) -> Option<Duration> {
        (self.broadcast_per_s > 0.0)
            .then(|| Duration::from_secs_f64(1.0 / self.broadcast_per_s).max(Duration::from_micros(1)))
    }

    fn summary(&self, counts: &[u64]) -> String {
        let n = |i: usize| counts.get(i).copied().unwrap_or(0);
        format!("WebSocket upgrades {}, messages echoed {}, broadcasts {}", n(UPGRADES), n(MESSAGES), n(BROADCASTS))
    }
}

/// A WebSocket upgrade request's key, subprotocols and extensions, as sent (RFC 6455,
/// section 4.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WsAsk<'a> {
    /// `Sec-WebSocket-Key`.
    key: &'a [u8],
    /// `Sec-WebSocket-Protocol` (the first such field), if any.
    protocols: Option<&'a [u8]>,
    /// permessage-deflate is offered.
    deflate: bool,
}

impl<'a> WsAsk<'a> {
    /// What `asked` asks for, if it is a GET asking to upgrade to WebSocket.
    fn of(asked: &Asked<'a>) -> Option<WsAsk<'a>> {
        if asked.method != "GET" || asked.http10 {
            return None;
        }
        let key = fields(asked.head, b"sec-websocket-key").next()?;
        let websocket = |u: &[u8]| u.split(|&b| b == b',').any(|p| p.trim_ascii().eq_ignore_ascii_case(b"websocket"));
        if !fields(asked.head, b"upgrade").any(websocket) {
            return None;
        }
        let protocols = fields(asked.head, b"sec-websocket-protocol").next();
        let deflate = fields(asked.head, b"sec-websocket-extensions").any(|v| {
            v.split(|&b| b == b',')
                .any(|e| e.split(|&b| b == b';').next().is_some_and(|n| n.trim_ascii() == b"permessage-deflate"))
        });
        Some(WsAsk { key, protocols, deflate })
    }
}

/// Largest message echoed; a bigger one closes the connection with 1009 (message too big).
const MAX_MESSAGE: u64 = 16 * 1024 * 1024;

/// One WebSocket connection's state.
struct WsConn {
    parser: Parser,
    limits: Limits,
    /// The message being read (kept whole to echo).
    message: Vec<u8>,
    /// The `101`, then frames.
    out: Outbox,
    /// Bytes the client sent before the `101` went out, read first.
    early: Vec<u8>,
    /// Messages echoed on this connection.
    echoed: u64,
    /// Close after this many messages (0: never).
    close_after: u64,
    /// Drop a message's connection instead of echoing it, with this probability.
    drop_rate: f64,
    /// A close was sent: the connection ends once it is written.
    closing: bool,
    /// The `101` is not counted yet (it is, on the first drive).
    uncounted: bool,
    /// `--delay`: echoes held until their time, in order.
    held: VecDeque<(Instant, Vec<u8>)>,
}

impl WsConn {
    /// The connection after the upgrade `ask`, its `101` queued; `rest` followed the request.
    fn new(ask: &WsAsk<'_>, config: &WsConfig, rest: &[u8]) -> WsConn {
        let mut head = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n",
            super::handshake::accept(ask.key)
        );
        let offered = ask.protocols.map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default();
        if let Some(p) = offered.split(',').map(str::trim).find(|p| config.subprotocols.iter().any(|s| s == p)) {
            head.push_str(&format!("Sec-WebSocket-Protocol: {p}\r\n"));
        }
        if ask.deflate {
            head.push_str(
                "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n",
            );
        }
        head.push_str("\r\n");
        WsConn {
            parser: Parser::default(),
            limits: Limits { masked: true, rsv1: ask.deflate, max_frame: MAX_MESSAGE },
            message: Vec::new(),
            out: Outbox::with(head.into_bytes()),
            early: rest.to_vec(),
            echoed: 0,
            close_after: config.close_after,
            drop_rate: config.drop_rate,
            closing: false,
            uncounted: true,
            held: VecDeque::new(),
        }
    }

    /// Takes bytes read from the client: echoes its messages (or holds them for `--delay`),
    /// answers pings and closes; false when the connection is to go now.
    fn receive(&mut self, data: &mut [u8], serve: &mut Serve<'_, '_>) -> bool {
        let mut pos = 0;
        while !self.closing {
            let item = match self.parser.next(data, &mut pos, self.limits) {
                Ok(item) => item,
                Err(frame::FrameError::TooLong(_)) => return self.close(1009),
                Err(_) => return self.close(1002),
            };
            match item {
                Item::Need => break,
                Item::Data { at, n } => {
                    if self.message.len() as u64 + n as u64 > MAX_MESSAGE {
                        return self.close(1009);
                    }
                    self.message.extend_from_slice(&data[at..at + n]);
                }
                Item::End { opcode, compressed, .. } => {
                    if self.drop_rate > 0.0 && serve.chance(self.drop_rate) {
                        return false;
                    }
                    match serve.delay() {
                        Some(delay) => {
                            let mut framed = Vec::with_capacity(self.message.len() + 10);
                            frame::write_frame(&mut framed, opcode, compressed, &self.message, None);
                            self.held.push_back((Instant::now() + delay, framed));
                        }
                        None => frame::write_frame(&mut self.out.bytes, opcode, compressed, &self.message, None),
                    }
                    self.message.clear();
                    serve.count(MESSAGES, 1);
                    self.echoed += 1;
                    if self.close_after > 0 && self.echoed >= self.close_after {
                        return self.close(1000);
                    }
                }
                Item::Control { opcode } => {
                    let payload = self.parser.control_payload();
                    match opcode {
                        frame::PING => frame::write_frame(&mut self.out.bytes, frame::PONG, false, &payload, None),
                        frame::CLOSE => {
                            // Echo the client's code, as section 5.5.1 asks.
                            let code = frame::close_code(&payload);
                            return self.close(if code == 1005 { 1000 } else { code });
                        }
                        _ => {}
                    }
                }
            }
        }
        true
    }

    /// Queues a close frame with `code` (after the echoes still held); the connection ends once
    /// it is written.
    fn close(&mut self, code: u16) -> bool {
        for (_, framed) in self.held.drain(..) {
            self.out.bytes.extend_from_slice(&framed);
        }
        frame::write_frame(&mut self.out.bytes, frame::CLOSE, false, &code.to_be_bytes(), None);
        self.closing = true;
        true
    }

    /// Moves the held echoes that are due to the output; when the next one is due.
    fn release(&mut self, now: Instant) -> Option<Instant> {
        while let Some((due, _)) = self.held.front() {
            if *due > now {
                return Some(*due);
            }
            if let Some((_, framed)) = self.held.pop_front() {
                self.out.bytes.extend_from_slice(&framed);
            }
        }
        None
    }
}

impl Driver for WsConn {
    /// Write, read, echo, until the socket or the clock stops it (held echoes go out when due:
    /// the connection is woken then).
    fn drive(&mut self, io: &mut Io<'_, '_>) -> Next {
        if std::mem::take(&mut self.uncounted) {
            io.serve.count(UPGRADES, 1);
            let mut early = std::mem::take(&mut self.early);
            if !early.is_empty() && !self.receive(&mut early, &mut io.serve) {
                return Next::Close;
            }
        }
        loop {
            let due = if io.serve.delay().is_some() { self.release(Instant::now()) } else { None };
            io.wake_at(due);
            if io.flush(&mut self.out).is_err() || (self.closing && self.out.pending() == 0) {
                return Next::Close;
            }
            if self.out.backed_up() || !io.readable() {
                return Next::Wait;
            }
            match io.read() {
                Read::Gone => return Next::Close,
                Read::Nothing => {}
                Read::Data(n) => {
                    if !self.receive(&mut io.buf[..n], &mut io.serve) {
                        return Next::Close;
                    }
                }
            }
        }
    }

    /// A broadcast: a text message of the server's own, unless the connection closes.
    fn push(&mut self, seq: u64, serve: &mut Serve<'_, '_>) {
        if !self.closing {
            frame::write_frame(&mut self.out.bytes, frame::TEXT, false, format!("broadcast {seq}").as_bytes(), None);
            serve.count(BROADCASTS, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked<'a>(head: &'a [u8], method: &'a str) -> Asked<'a> {
        Asked { head, method, target: "/ws", http10: false, rest: b"" }
    }

    #[test]
    fn an_upgrade_is_read_from_its_fields() {
        let head = b"GET /ws HTTP/1.1\r\nUpgrade: WebSocket\r\nSec-WebSocket-Key: k==\r\nSec-WebSocket-Protocol: a, b\r\nSec-WebSocket-Extensions: x\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n";
        assert_eq!(WsAsk::of(&asked(head, "GET")), Some(WsAsk { key: b"k==", protocols: Some(b"a, b"), deflate: true }));
        assert_eq!(WsAsk::of(&asked(head, "POST")), None, "not a GET");
        let head = b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nHTTP2-Settings: AAMA\r\n\r\n";
        assert_eq!(WsAsk::of(&asked(head, "GET")), None, "no key");
        let head = b"GET / HTTP/1.1\r\nUpgrade: h2c\r\nSec-WebSocket-Key: k==\r\n\r\n";
        assert_eq!(WsAsk::of(&asked(head, "GET")), None, "not to WebSocket");
    }
}
