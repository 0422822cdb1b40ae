//! What a WebSocket run counts besides messages answered and errors: upgrades and their time,
//! upgrades refused by status, connections the server closed by close code, connections lost
//! by cause, and messages and payload bytes each way. The type is also a result's `websocket`
//! section: its serde form is the document's, and it says how the reports show it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::config::Speech;
use crate::stats::named::{by_name, named};
use crate::stats::section::{Answers, Counts, Figure, Spoken};
use crate::stats::units::{binary, by_name, count_mean_max, grouped, mean_max, messages};
use crate::stats::{counts, Handshakes, Times};

named! {
    /// How a WebSocket connection was lost (other than by the client, at the end of the run).
    pub enum WsDrop {
        /// The server sent a close frame (its code is counted in `closes`).
        Closed,
        /// The server ended the TCP connection without a close frame.
        Eof,
        /// A read or write failed (reset, broken pipe).
        Reset,
        /// The server broke the protocol (bad frames, a message too large).
        Protocol,
        /// No echo within `--timeout`: the connection is replaced so that later echoes match.
        Timeout,
    }
}

by_name! {
    /// Connections lost, a count per cause.
    pub struct WsDrops(WsDrop, fallback WsDrop::Reset);
}

counts! {
    /// WebSocket counts of one thread, or merged; in a result, written field by field in this
    /// order.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct WsCounts {
        /// Upgrades completed (`101` checked), and their time from the request to the `101`.
        #[serde(flatten)]
        pub handshakes: Handshakes,
        /// Upgrades the server answered with another status, by status.
        pub upgrades_refused: BTreeMap<u16, u64>,
        /// Connections the server closed, by the close frame's code (1005: none given).
        pub closes: BTreeMap<u16, u64>,
        /// Connections lost, by cause.
        pub drops: WsDrops,
        /// Messages sent.
        pub messages_sent: u64,
        /// Messages received (echoes and any other).
        pub messages_received: u64,
        /// Payload bytes sent (as framed: compressed when compressed).
        pub bytes_sent: u64,
        /// Payload bytes received (inflated when compressed).
        pub bytes_received: u64,
        /// Messages received when none was awaited (server push, broadcasts).
        pub unsolicited: u64,
        /// Pings from the server answered with a pong.
        pub pings_answered: u64,
        /// `--ping`: pings sent.
        pub pings_sent: u64,
        /// `--ping`: their pongs, and the round trips' time.
        pub pongs: Times,
    }
}

/// A WebSocket run's answers: the messages that answered one sent (or, listening, arrived).
static MESSAGES: Answers = Answers {
    singular: "message",
    plural: "messages",
    title: "Messages",
    status: "upgrades, closes by code",
    errors: "timeout: no echo (listening only: no message) within --timeout; read: a connection lost.",
    failed: "Non-2xx or 3xx responses",
};

impl Counts for WsCounts {
    const KEY: &'static str = "websocket";
    const TITLE: &'static str = "WebSocket";
    const CAPTION: &'static str = "Messages lost with their connection also appear over time among the errors.";
    const SPEECH: Option<Speech> = Some(super::SPEECH);

    fn answers() -> Option<&'static Answers> {
        Some(&MESSAGES)
    }

    /// After wrk's lines: upgrades and their time, messages and payload bytes each way; then,
    /// when anything went wrong, refused upgrades by status, closes by code and lost
    /// connections by cause.
    fn text(&self, spoken: &Spoken, out: &mut String) {
        let w = self;
        let upgrades = match w.handshakes.count {
            0 => "no upgrade completed".to_string(),
            n => format!("{n} upgrades, {}", mean_max(&w.handshakes)),
        };
        let _ = writeln!(
            out,
            "WebSocket ({}): {upgrades}; messages {} sent ({}B), {} received ({}B), {} unsolicited; pings answered {}",
            spoken.protocol,
            w.messages_sent,
            binary(w.bytes_sent as f64),
            w.messages_received,
            binary(w.bytes_received as f64),
            w.unsolicited,
            w.pings_answered
        );
        let listed = |m: &BTreeMap<u16, u64>| match m.is_empty() {
            true => "none".to_string(),
            false => m.iter().map(|(c, n)| format!("{c} \u{d7}{n}")).collect::<Vec<_>>().join(", "),
        };
        if w.messages_sent == 0 && w.messages_received > 0 {
            let _ = writeln!(
                out,
                "WebSocket listening only: each message's latency is the gap since the one before it on its connection (the first: since the upgrade)"
            );
        }
        if w.pings_sent > 0 {
            let p = &w.pongs.0;
            let _ = writeln!(
                out,
                "WebSocket pings: {} sent, {} answered; round trip {}",
                w.pings_sent,
                p.count,
                mean_max(p)
            );
        }
        let drops: Vec<String> = w.drops.seen().map(|(why, n)| format!("{} {n}", why.name())).collect();
        if !w.upgrades_refused.is_empty() || !w.closes.is_empty() || !drops.is_empty() {
            let _ = writeln!(
                out,
                "WebSocket upgrades refused: {}; closed by the server: {}; connections lost: {}",
                listed(&w.upgrades_refused),
                listed(&w.closes),
                if drops.is_empty() { "none".to_string() } else { drops.join(", ") }
            );
        }
    }

    fn figures(&self, spoken: &Spoken) -> Vec<Figure> {
        let w = self;
        vec![
            ("protocol", "ws_protocol", spoken.protocol.clone()),
            ("upgrades (mean, max)", "ws_handshakes", count_mean_max(&w.handshakes)),
            ("upgrades refused, by status", "ws_refused", by_name(&w.upgrades_refused)),
            ("closed by the server, by code", "ws_closes", by_name(&w.closes)),
            ("connections lost, by cause", "ws_drops", by_name(&w.drops.named())),
            ("messages sent (mean size)", "ws_sent", messages(w.messages_sent, w.bytes_sent)),
            ("messages received (mean size)", "ws_received", messages(w.messages_received, w.bytes_received)),
            ("unsolicited messages", "ws_unsolicited", grouped(w.unsolicited as f64, 0)),
            ("pongs (mean, max round trip)", "ws_pongs", count_mean_max(&w.pongs.0)),
        ]
    }

    /// What the server said of a run of messages: its upgrades and its close codes.
    fn said(&self) -> Option<String> {
        let closes = self.closes.iter().map(|(k, v)| format!("{k}: {}", grouped(*v as f64, 0)));
        let closes = closes.collect::<Vec<_>>().join(", ");
        let closes = if closes.is_empty() { "none".to_string() } else { closes };
        Some(format!("{} upgrades; closes {closes}", grouped(self.handshakes.count as f64, 0)))
    }
}
