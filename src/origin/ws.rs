//! The origin's WebSocket echo (`strain origin --ws`): a GET that asks to upgrade is answered
//! `101`, and from then on every message comes back as it came (after `--delay`), pings are
//! answered, and a close is returned; after `--ws-close-after N` messages the server closes
//! with 1000, and `--ws-drop-rate` drops a share of connections without a close. Broadcasts
//! (`--ws-broadcast`) are queued by the worker's timer through [`WsConn::push`].
//!
//! permessage-deflate is agreed with no context taken over either way, so a compressed message
//! stands alone and is echoed as it arrived, compressed, without inflating it.

use std::collections::VecDeque;
use std::io;
use std::time::Instant;

use super::config::WsConfig;
use super::link::{Got, Link, Next};
use super::live::Counters;
use super::tls::ServerStream;
use super::Ctx;
use crate::http::request_head::WsAsk;
use crate::proto::ws::frame::{self, Item, Limits, Parser};

/// Largest message echoed; a bigger one closes the connection with 1009 (message too big).
const MAX_MESSAGE: u64 = 16 * 1024 * 1024;

/// An upgrade the origin accepted: its `101` head, and what followed the request.
#[derive(Debug)]
pub(super) struct Accepted {
    head: Vec<u8>,
    deflate: bool,
    /// Bytes after the request (frames sent before the `101` arrived).
    pub(super) rest: Vec<u8>,
}

impl Accepted {
    /// The answer to `ask` under `config`.
    pub(super) fn new(ask: &WsAsk<'_>, config: &WsConfig, rest: &[u8]) -> Accepted {
        let mut head = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n",
            crate::proto::ws::handshake::accept(ask.key)
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
        Accepted { head: head.into_bytes(), deflate: ask.deflate, rest: rest.to_vec() }
    }
}

/// What [`WsConn::drive`] leaves the connection in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WsNext {
    /// Wait for the socket.
    Wait,
    /// Close it now.
    Close,
}

/// One WebSocket connection's state.
pub(super) struct WsConn {
    parser: Parser,
    limits: Limits,
    /// The message being read (kept whole to echo).
    message: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
    /// Messages echoed on this connection.
    echoed: u64,
    /// Close after this many messages (0: never).
    close_after: u64,
    /// A close was sent: the connection ends once it is written.
    closing: bool,
    /// `--delay`: echoes held until their time, in order.
    held: VecDeque<(Instant, Vec<u8>)>,
}

impl WsConn {
    /// The connection after `accepted`, its `101` queued.
    pub(super) fn new(accepted: &Accepted, config: &WsConfig) -> Box<WsConn> {
        Box::new(WsConn {
            parser: Parser::default(),
            limits: Limits { masked: true, rsv1: accepted.deflate, max_frame: MAX_MESSAGE },
            message: Vec::new(),
            out: accepted.head.clone(),
            pos: 0,
            echoed: 0,
            close_after: config.close_after,
            closing: false,
            held: VecDeque::new(),
        })
    }

    /// Makes all the progress the socket allows on a WebSocket connection: write, read, echo
    /// (held echoes go out when due: [`super::conn::Conn::wake`] says when).
    pub(super) fn drive(&mut self, link: &mut Link, buf: &mut [u8], ctx: &mut Ctx<'_>) -> Next {
        let ws = self;
        loop {
            link.wake = if ctx.site.delay.is_some() { ws.release(Instant::now()) } else { None };
            if ws.flush(&mut link.stream, ctx.counters) == WsNext::Close {
                return Next::Close;
            }
            if ws.backed_up() || !link.readable {
                return Next::Wait;
            }
            match link.read_some(buf, ctx.counters) {
                Got::Eof | Got::Failed => return Next::Close,
                Got::Nothing => {}
                Got::Data(n) => {
                    if ws.receive(&mut buf[..n], ctx) == WsNext::Close {
                        return Next::Close;
                    }
                }
            }
        }
    }

    /// Takes bytes read from the client: echoes its messages (or holds them for `--delay`),
    /// answers pings and closes.
    pub(super) fn receive(&mut self, data: &mut [u8], ctx: &mut Ctx<'_>) -> WsNext {
        let counters = ctx.counters;
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
                    if ctx.site.ws.as_ref().is_some_and(|w| ctx.rng.chance(w.drop_rate)) {
                        return WsNext::Close;
                    }
                    match ctx.site.delay {
                        Some(delay) => {
                            let mut framed = Vec::with_capacity(self.message.len() + 10);
                            frame::write_frame(&mut framed, opcode, compressed, &self.message, None);
                            self.held.push_back((Instant::now() + delay, framed));
                        }
                        None => frame::write_frame(&mut self.out, opcode, compressed, &self.message, None),
                    }
                    self.message.clear();
                    counters.ws_messages.add(1);
                    self.echoed += 1;
                    if self.close_after > 0 && self.echoed >= self.close_after {
                        return self.close(1000);
                    }
                }
                Item::Control { opcode } => {
                    let payload = self.parser.control_payload();
                    match opcode {
                        frame::PING => frame::write_frame(&mut self.out, frame::PONG, false, &payload, None),
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
        WsNext::Wait
    }

    /// Queues a close frame with `code` (after the echoes still held); the connection ends once
    /// it is written.
    fn close(&mut self, code: u16) -> WsNext {
        for (_, framed) in self.held.drain(..) {
            self.out.extend_from_slice(&framed);
        }
        frame::write_frame(&mut self.out, frame::CLOSE, false, &code.to_be_bytes(), None);
        self.closing = true;
        WsNext::Wait
    }

    /// Queues a text message of the server's own (a broadcast), unless the connection closes.
    pub(super) fn push(&mut self, text: &[u8]) {
        if !self.closing {
            frame::write_frame(&mut self.out, frame::TEXT, false, text, None);
        }
    }

    /// Moves the held echoes that are due to the output; when the next one is due.
    pub(super) fn release(&mut self, now: Instant) -> Option<Instant> {
        while let Some((due, _)) = self.held.front() {
            if *due > now {
                return Some(*due);
            }
            if let Some((_, framed)) = self.held.pop_front() {
                self.out.extend_from_slice(&framed);
            }
        }
        None
    }

    /// Output the client has not taken is queued past [`MAX_PENDING`](super::output::MAX_PENDING):
    /// reading waits, so a client that sends and never reads cannot grow the queue.
    pub(super) fn backed_up(&self) -> bool {
        self.out.len() - self.pos > super::output::MAX_PENDING
    }

    /// Writes what is queued: `Close` once a close is out, or the socket failed.
    pub(super) fn flush(&mut self, stream: &mut ServerStream, counters: &Counters) -> WsNext {
        while self.pos < self.out.len() {
            match io::Write::write(stream, &self.out[self.pos..]) {
                Ok(0) => return WsNext::Close,
                Ok(n) => {
                    counters.bytes_written.add(n as u64);
                    self.pos += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return WsNext::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return WsNext::Close,
            }
        }
        self.out.clear();
        self.pos = 0;
        if stream.flush_pending().is_err() || self.closing {
            return WsNext::Close;
        }
        WsNext::Wait
    }
}
