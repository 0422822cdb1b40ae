//! What a WebSocket run counts besides messages answered and errors: upgrades and their time,
//! upgrades refused by status, connections the server closed by close code, connections lost
//! by cause, and messages and payload bytes each way. The type is also a result's `websocket`
//! section: its serde form is the document's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::h3::Handshakes;

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

/// Round trips completed and their time, as [`Handshakes`] keeps them; a result writes the
/// count, the mean and the largest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "PongTimes", from = "PongTimes")]
pub struct RoundTrips(pub Handshakes);

impl super::Tally for RoundTrips {
    fn tally(&mut self, other: &RoundTrips) {
        self.0.tally(&other.0);
    }
}

/// [`RoundTrips`] as a result writes them.
#[derive(Serialize, Deserialize)]
struct PongTimes {
    count: u64,
    mean_us: f64,
    max_us: u64,
}

impl From<RoundTrips> for PongTimes {
    fn from(r: RoundTrips) -> PongTimes {
        PongTimes { count: r.0.count, mean_us: r.0.mean_us(), max_us: r.0.us_max }
    }
}

impl From<PongTimes> for RoundTrips {
    fn from(t: PongTimes) -> RoundTrips {
        let us_sum = (t.mean_us * t.count as f64).round() as u64;
        RoundTrips(Handshakes { count: t.count, us_sum, us_max: t.max_us })
    }
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
        pub pongs: RoundTrips,
    }
}
