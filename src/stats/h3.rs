//! What an HTTP/3 run counts besides requests and errors: handshakes, packets, resets and
//! connection closes by code, GOAWAYs and retries. The type is also a result's `http3` section:
//! its serde form is the document's, so the names a result writes are read back by the same
//! definitions that write them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Tally;

named! {
    /// Why a QUIC handshake failed (the engine tells which: `engine::transport::h3::handshake`).
    pub enum HandshakeFailure {
        /// No datagram came back before the timeout.
        NoAnswer,
        /// The server answered but the handshake did not finish in time.
        Timeout,
        /// An ICMP port unreachable: nothing listens on the UDP port.
        PortUnreachable,
        /// The certificate was not trusted.
        Certificate,
        /// The server speaks no HTTP/3 (ALPN).
        Alpn,
        /// No QUIC version in common.
        Version,
        /// Any other reason the handshake ended.
        Other,
    }
}

by_name! {
    /// Failed handshakes, a count per cause.
    pub struct HandshakeFailures(HandshakeFailure, fallback HandshakeFailure::Other);
}

/// Handshakes completed and their time. A result writes the mean where this keeps the sum (the
/// sum comes back from it to within a microsecond).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "HandshakeTimes", from = "HandshakeTimes")]
pub struct Handshakes {
    /// How many.
    pub count: u64,
    /// Their time added up, microseconds.
    pub us_sum: u64,
    /// The longest, microseconds.
    pub us_max: u64,
}

impl Handshakes {
    /// One more, which took `us` microseconds.
    pub fn add(&mut self, us: u64) {
        self.count += 1;
        self.us_sum += us;
        self.us_max = self.us_max.max(us);
    }

    /// Their mean time, microseconds (0 without any).
    pub fn mean_us(&self) -> f64 {
        if self.count > 0 {
            self.us_sum as f64 / self.count as f64
        } else {
            0.0
        }
    }
}

impl Tally for Handshakes {
    fn tally(&mut self, other: &Handshakes) {
        self.count.tally(&other.count);
        self.us_sum.tally(&other.us_sum);
        self.us_max = self.us_max.max(other.us_max);
    }
}

/// [`Handshakes`] as a result writes them.
#[derive(Serialize, Deserialize)]
struct HandshakeTimes {
    handshakes: u64,
    handshake_mean_us: f64,
    handshake_max_us: u64,
}

impl From<Handshakes> for HandshakeTimes {
    fn from(h: Handshakes) -> HandshakeTimes {
        HandshakeTimes { handshakes: h.count, handshake_mean_us: h.mean_us(), handshake_max_us: h.us_max }
    }
}

impl From<HandshakeTimes> for Handshakes {
    fn from(t: HandshakeTimes) -> Handshakes {
        // `as` saturates: a mean no real run has stays a large sum, not a panic.
        let us_sum = (t.handshake_mean_us * t.handshakes as f64).round() as u64;
        Handshakes { count: t.handshakes, us_sum, us_max: t.handshake_max_us }
    }
}

counts! {
    /// HTTP/3 counts of one thread, or merged; in a result, written field by field in this order.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct H3Counts {
        /// Handshakes completed, and their time.
        #[serde(flatten)]
        pub handshakes: Handshakes,
        /// Handshakes that failed, by cause.
        pub handshake_failures: HandshakeFailures,
        /// QUIC packets sent (quiche's count).
        pub packets_sent: u64,
        /// Packets declared lost.
        pub packets_lost: u64,
        /// Packets sent again.
        pub packets_retransmitted: u64,
        /// Streams the server reset, by HTTP/3 error code; written by code name.
        #[serde(with = "by_code_name")]
        pub resets: BTreeMap<u64, u64>,
        /// Connections closed other than by the client (or by a protocol error), by error code;
        /// written by code name.
        #[serde(with = "by_code_name")]
        pub closes: BTreeMap<u64, u64>,
        /// Connections ended by the idle timeout.
        pub idle_timeouts: u64,
        /// GOAWAY frames received.
        pub goaways: u64,
        /// Requests the server did not process (above a GOAWAY's id, or H3_REQUEST_REJECTED),
        /// sent again; their latency runs from the first attempt.
        pub retried: u64,
        /// HTTP/3 protocol errors found in what the server sent.
        pub protocol_errors: u64,
    }
}

impl H3Counts {
    /// A handshake finished after `us` microseconds.
    pub fn handshake(&mut self, us: u64) {
        self.handshakes.add(us);
    }

    /// A connection's packet counts, when it ends.
    pub fn packets(&mut self, s: &quiche::Stats) {
        self.packets_sent += s.sent as u64;
        self.packets_lost += s.lost as u64;
        self.packets_retransmitted += s.retrans as u64;
    }

    /// The server reset a stream with `code`.
    pub fn reset(&mut self, code: u64) {
        *self.resets.entry(code).or_default() += 1;
    }

    /// A connection closed with `code`.
    pub fn closed(&mut self, code: u64) {
        *self.closes.entry(code).or_default() += 1;
    }
}

mod by_code_name {
    //! Counts by HTTP/3 or QUIC error code as a result writes them: by code name. A name this
    //! strain does not know is read as a code no real one uses, so its count still adds up.

    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{code_of, named_codes};
    use crate::stats::Tally;

    /// Writes the counts by code name.
    pub fn serialize<S: Serializer>(counts: &BTreeMap<u64, u64>, s: S) -> Result<S::Ok, S::Error> {
        named_codes(counts).serialize(s)
    }

    /// Reads counts by code name back by code.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u64, u64>, D::Error> {
        let mut counts = BTreeMap::new();
        for (name, n) in BTreeMap::<String, u64>::deserialize(d)? {
            counts.entry(code_of(&name).unwrap_or(u64::MAX)).or_insert(0).tally(&n);
        }
        Ok(counts)
    }
}

/// The error codes reports name: HTTP/3's (RFC 9114 8.1) and the QUIC transport's that a
/// server sends; others are written in hex.
const CODE_NAMES: [(u64, &str); 22] = [
    (0x0, "NO_ERROR"),
    (0x1, "INTERNAL_ERROR"),
    (0x2, "CONNECTION_REFUSED"),
    (0x3, "FLOW_CONTROL_ERROR"),
    (0xa, "PROTOCOL_VIOLATION"),
    (0x100, "H3_NO_ERROR"),
    (0x101, "H3_GENERAL_PROTOCOL_ERROR"),
    (0x102, "H3_INTERNAL_ERROR"),
    (0x103, "H3_STREAM_CREATION_ERROR"),
    (0x104, "H3_CLOSED_CRITICAL_STREAM"),
    (0x105, "H3_FRAME_UNEXPECTED"),
    (0x106, "H3_FRAME_ERROR"),
    (0x107, "H3_EXCESSIVE_LOAD"),
    (0x108, "H3_ID_ERROR"),
    (0x109, "H3_SETTINGS_ERROR"),
    (0x10a, "H3_MISSING_SETTINGS"),
    (0x10b, "H3_REQUEST_REJECTED"),
    (0x10c, "H3_REQUEST_CANCELLED"),
    (0x10d, "H3_REQUEST_INCOMPLETE"),
    (0x10e, "H3_MESSAGE_ERROR"),
    (0x10f, "H3_CONNECT_ERROR"),
    (0x110, "H3_VERSION_FALLBACK"),
];

/// Counts by code, by code name instead (as results and their pages name them).
pub fn named_codes(counts: &BTreeMap<u64, u64>) -> BTreeMap<String, u64> {
    counts.iter().map(|(code, n)| (code_name(*code), *n)).collect()
}

/// The name of an HTTP/3 error code or a QUIC transport one, as reports show it.
pub fn code_name(code: u64) -> String {
    match CODE_NAMES.iter().find(|(c, _)| *c == code) {
        Some((_, name)) => name.to_string(),
        None => format!("0x{code:x}"),
    }
}

/// The code [`code_name`] names `name` (a name or hex), if any.
pub fn code_of(name: &str) -> Option<u64> {
    match name.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => CODE_NAMES.iter().find(|(_, n)| *n == name).map(|(c, _)| *c),
    }
}

/// Times (round trips, the waits for a first event) as [`Handshakes`] keeps them; a result
/// writes the count, the mean and the largest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "PongTimes", from = "PongTimes")]
pub struct Times(pub Handshakes);

impl super::Tally for Times {
    fn tally(&mut self, other: &Times) {
        self.0.tally(&other.0);
    }
}

/// [`Times`] as a result writes them.
#[derive(Serialize, Deserialize)]
struct PongTimes {
    count: u64,
    mean_us: f64,
    max_us: u64,
}

impl From<Times> for PongTimes {
    fn from(r: Times) -> PongTimes {
        PongTimes { count: r.0.count, mean_us: r.0.mean_us(), max_us: r.0.us_max }
    }
}

impl From<PongTimes> for Times {
    fn from(t: PongTimes) -> Times {
        let us_sum = (t.mean_us * t.count as f64).round() as u64;
        Times(Handshakes { count: t.count, us_sum, us_max: t.max_us })
    }
}

/// HTTP/3's section: its lines after wrk's and its table.
impl super::section::Counts for H3Counts {
    const KEY: &'static str = "http3";
    const TITLE: &'static str = "HTTP/3";
    const CAPTION: &'static str = "Packets lost are QUIC's count; their frames were sent again.";

    /// Streams per connection, handshake time, packets lost and sent again; then, when anything
    /// went wrong, resets and closes by code, GOAWAYs, idle timeouts and failed handshakes by
    /// cause.
    fn text(&self, spoken: &super::section::Spoken, out: &mut String) {
        use std::fmt::Write as _;
        let h = self;
        let handshake = match h.handshakes.count {
            0 => "no handshake completed".to_string(),
            n => format!("handshake {} ({n})", super::units::mean_max(&h.handshakes)),
        };
        let _ = writeln!(
            out,
            "HTTP/3 (h3): {} streams per connection; {handshake}; packets {} sent, {} lost, {} retransmitted",
            spoken.streams_per_connection, h.packets_sent, h.packets_lost, h.packets_retransmitted
        );
        let named = |m: &BTreeMap<u64, u64>| match m.is_empty() {
            true => "none".to_string(),
            false => m.iter().map(|(c, n)| format!("{} {n}", code_name(*c))).collect::<Vec<_>>().join(", "),
        };
        let failed: Vec<String> =
            h.handshake_failures.seen().map(|(cause, n)| format!("{} {n}", cause.name().replace('_', " "))).collect();
        let troubled = !h.resets.is_empty() || !h.closes.is_empty() || h.goaways > 0 || h.idle_timeouts > 0;
        if troubled || !failed.is_empty() || h.protocol_errors > 0 {
            let _ = writeln!(
                out,
                "HTTP/3 resets: {}; closes: {}; GOAWAY {} ({} requests sent again); idle timeouts {}; protocol errors {}; failed handshakes: {}",
                named(&h.resets),
                named(&h.closes),
                h.goaways,
                h.retried,
                h.idle_timeouts,
                h.protocol_errors,
                if failed.is_empty() { "none".to_string() } else { failed.join(", ") }
            );
        }
    }

    fn figures(&self, spoken: &super::section::Spoken) -> Vec<super::section::Figure> {
        use super::units::{by_name, grouped};
        let h = self;
        let count = |n: u64| grouped(n as f64, 0);
        let ms = |us: f64| format!("{:.2} ms", us / 1000.0);
        vec![
            ("streams per connection", "streams", spoken.streams_per_connection.to_string()),
            (
                "handshakes (mean, max)",
                "handshakes",
                format!(
                    "{} ({}, {})",
                    count(h.handshakes.count),
                    ms(h.handshakes.mean_us()),
                    ms(h.handshakes.us_max as f64)
                ),
            ),
            ("failed handshakes, by cause", "handshake_failures", by_name(&h.handshake_failures.named())),
            ("packets sent", "packets_sent", count(h.packets_sent)),
            (
                "packets lost (retransmitted)",
                "packets_lost",
                format!("{} ({})", count(h.packets_lost), count(h.packets_retransmitted)),
            ),
            ("streams reset, by code", "resets", by_name(&named_codes(&h.resets))),
            ("connections closed, by code", "closes", by_name(&named_codes(&h.closes))),
            ("idle timeouts", "idle_timeouts", count(h.idle_timeouts)),
            ("GOAWAYs (requests sent again)", "goaways", format!("{} ({})", count(h.goaways), count(h.retried))),
            ("protocol errors", "h3_protocol_errors", count(h.protocol_errors)),
        ]
    }
}
