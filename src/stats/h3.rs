//! What an HTTP/3 run counts besides requests and errors: handshakes, packets, resets and
//! connection closes by code, GOAWAYs and retries.

use std::collections::BTreeMap;
use std::ops::{Index, IndexMut};

named! {
    /// Why a QUIC handshake failed (the engine tells which: `engine::worker::h3::handshake`).
    pub enum HandshakeFailure {
        /// No datagram came back before the timeout.
        NoAnswer = "no_answer",
        /// The server answered but the handshake did not finish in time.
        Timeout = "timeout",
        /// An ICMP port unreachable: nothing listens on the UDP port.
        Refused = "port_unreachable",
        /// The certificate was not trusted.
        Certificate = "certificate",
        /// The server speaks no HTTP/3 (ALPN).
        Alpn = "alpn",
        /// No QUIC version in common.
        Version = "version",
        /// Any other reason the handshake ended.
        Other = "other",
    }
}

/// Failed handshakes, a count per cause: a flat array the engine adds to without hashing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandshakeFailures([u64; HandshakeFailure::COUNT]);

impl HandshakeFailures {
    /// The causes seen and their counts, in report order.
    pub fn seen(&self) -> impl Iterator<Item = (HandshakeFailure, u64)> + '_ {
        HandshakeFailure::ALL.into_iter().map(|c| (c, self[c])).filter(|(_, n)| *n > 0)
    }

    /// The causes seen by name, in the names' order (as results write them).
    pub fn named(&self) -> BTreeMap<&'static str, u64> {
        self.seen().map(|(c, n)| (c.name(), n)).collect()
    }
}

impl Index<HandshakeFailure> for HandshakeFailures {
    type Output = u64;

    fn index(&self, cause: HandshakeFailure) -> &u64 {
        &self.0[cause as usize]
    }
}

impl IndexMut<HandshakeFailure> for HandshakeFailures {
    fn index_mut(&mut self, cause: HandshakeFailure) -> &mut u64 {
        &mut self.0[cause as usize]
    }
}

/// HTTP/3 counts of one thread, or merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct H3Counts {
    /// Handshakes completed, their summed and longest time (microseconds).
    pub handshakes: u64,
    /// Summed handshake time, microseconds.
    pub handshake_us_sum: u64,
    /// Longest handshake, microseconds.
    pub handshake_us_max: u64,
    /// Handshakes that failed, by cause.
    pub handshake_failures: HandshakeFailures,
    /// QUIC packets sent, declared lost, and retransmitted (quiche's counts).
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Packets sent again.
    pub packets_retransmitted: u64,
    /// Streams the server reset, by HTTP/3 error code.
    pub resets: BTreeMap<u64, u64>,
    /// Connections closed other than by the client, by error code.
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

impl H3Counts {
    /// A handshake finished after `us` microseconds.
    pub fn handshake(&mut self, us: u64) {
        self.handshakes += 1;
        self.handshake_us_sum += us;
        self.handshake_us_max = self.handshake_us_max.max(us);
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

    /// Adds another thread's counts.
    pub fn merge(&mut self, o: &H3Counts) {
        self.handshakes += o.handshakes;
        self.handshake_us_sum += o.handshake_us_sum;
        self.handshake_us_max = self.handshake_us_max.max(o.handshake_us_max);
        for (a, b) in self.handshake_failures.0.iter_mut().zip(o.handshake_failures.0) {
            *a += b;
        }
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.packets_retransmitted += o.packets_retransmitted;
        for (code, n) in &o.resets {
            *self.resets.entry(*code).or_default() += n;
        }
        for (code, n) in &o.closes {
            *self.closes.entry(*code).or_default() += n;
        }
        self.idle_timeouts += o.idle_timeouts;
        self.goaways += o.goaways;
        self.retried += o.retried;
        self.protocol_errors += o.protocol_errors;
    }
}

/// The name of an HTTP/3 error code (RFC 9114 8.1) or a QUIC transport one, as reports show it.
pub fn code_name(code: u64) -> String {
    let h3 = [
        "H3_NO_ERROR",
        "H3_GENERAL_PROTOCOL_ERROR",
        "H3_INTERNAL_ERROR",
        "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM",
        "H3_FRAME_UNEXPECTED",
        "H3_FRAME_ERROR",
        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",
        "H3_SETTINGS_ERROR",
        "H3_MISSING_SETTINGS",
        "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",
        "H3_REQUEST_INCOMPLETE",
        "H3_MESSAGE_ERROR",
        "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK",
    ];
    match code {
        0x100..=0x110 => h3[(code - 0x100) as usize].to_string(),
        0x0 => "NO_ERROR".into(),
        0x1 => "INTERNAL_ERROR".into(),
        0x2 => "CONNECTION_REFUSED".into(),
        0x3 => "FLOW_CONTROL_ERROR".into(),
        0xa => "PROTOCOL_VIOLATION".into(),
        code => format!("0x{code:x}"),
    }
}
