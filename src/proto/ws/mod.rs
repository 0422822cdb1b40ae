//! WebSocket (RFC 6455) as a unit: its wire (frames read and written in place, the opening
//! handshake, permessage-deflate, RFC 7692), its client transport, and its counts. The
//! origin's echo server speaks the same wire.

pub mod cli;
pub mod client;
pub mod counts;
pub mod deflate;
pub mod flags;
pub mod frame;
pub mod handshake;
pub mod origin;

use crate::config::{Paces, Speech};
use crate::engine::Carried;
use handshake::Offer;

/// A WebSocket load, settled before the threads start: the upgrade offered and the message
/// every send carries.
#[derive(Debug, Clone)]
pub struct WsLoad {
    /// What each connection's upgrade asks for.
    pub offer: Offer,
    /// The message's payload.
    pub payload: Vec<u8>,
    /// The payload as one permessage-deflate message, sent where the server agreed to it (each
    /// message is compressed without context, so it is the same bytes every time).
    pub deflated: Vec<u8>,
    /// Binary frames (else text).
    pub binary: bool,
    /// A lost connection is replaced (`--no-reconnect`: it is not).
    pub reconnect: bool,
    /// Connections opened per second in all (`--connect-rate`); `None`: all at once.
    pub connect_rate: Option<f64>,
    /// Each connection pings every this many microseconds (`--ping`).
    pub ping_us: Option<u64>,
    /// How a message and its answer are paired.
    pub mode: Mode,
}

/// What a connection sends and what answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Each message is answered by the next message from the server (an echo, in order).
    Echo,
    /// Each message starts with an id of 16 hex digits and a space; only a message that starts
    /// with the same id answers it, the rest are counted as unsolicited (`--match`).
    Match,
    /// Nothing is sent: each message from the server counts, timed from the one before it on
    /// its connection (`--listen-only`).
    Listen,
}

/// `strain ws`, and `strain origin --ws`.
pub static COMMAND: crate::cli::unit::Command<flags::WsMessageFlags, flags::WsOriginFlags> = crate::cli::unit::Command::new(
    "ws",
    "Load a WebSocket server: -c upgraded connections, each sending a message and awaiting its echo (or at -R messages/s in total), echo latency corrected in rate mode (ws:// or wss:// URL)",
);

/// Its section of a result.
pub const KINDS: &[crate::stats::section::Kind] = &[crate::stats::section::Kind::of::<counts::WsCounts>()];

/// WebSocket's names: `ws` over TCP, `wss` over TLS.
pub const SPEECH: Speech = Speech { plain: "ws", tls: "wss", paces: Paces::Requests };

/// Bytes of a `--match` id at the head of a message: 16 hex digits.
pub const ID_LEN: usize = 16;

impl WsLoad {
    /// A load sending `payload` (binary or text) after upgrades that ask what `offer` asks.
    pub fn new(offer: Offer, payload: Vec<u8>, binary: bool, reconnect: bool) -> WsLoad {
        let mut deflated = Vec::new();
        if offer.deflate {
            deflate::Deflater::default().message(&payload, &mut deflated);
        }
        WsLoad { offer, payload, deflated, binary, reconnect, connect_rate: None, ping_us: None, mode: Mode::Echo }
    }
}

impl Carried for WsLoad {
    type Transport = client::WebSocket;

    fn transport(load: std::sync::Arc<WsLoad>, conns: usize, index: usize, threads: usize) -> client::WebSocket {
        client::WebSocket::new(conns, load, index, threads)
    }
}
