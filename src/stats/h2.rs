//! What an HTTP/2 run counts besides requests and errors: stream resets by code, GOAWAYs,
//! retried requests, protocol errors, flow-control stalls and header compression. The type is
//! also a result's `http2` section: its serde form is the document's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use std::fmt::Write as _;

use super::section::{Counts, Figure, Spoken};
use super::units::{binary, grouped};
use crate::h2::code_name;

counts! {
    /// HTTP/2 counts of one thread, or merged; in a result, written field by field in this order.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct H2Counts {
        /// Header bytes received, decoded (names and values).
        pub header_bytes: u64,
        /// The same headers as sent (compressed by HPACK).
        pub header_frame_bytes: u64,
        /// Streams the server reset, by HTTP/2 error code (0x0 to 0xd; others in the last slot);
        /// written by code name, only the codes seen.
        #[serde(with = "reset_names")]
        pub resets: [u64; RESET_SLOTS],
        /// GOAWAY frames received (each replaced its connection).
        pub goaways: u64,
        /// Requests the server refused unprocessed after a GOAWAY (streams above its last stream
        /// id), sent again on a new connection; their latency runs from the first attempt.
        pub retried: u64,
        /// Connections ended by an HTTP/2 protocol error (their requests count as parse errors).
        pub protocol_errors: u64,
        /// Requests whose body waited for the server's flow-control window (absent from results
        /// written before it was counted).
        #[serde(default)]
        pub flow_control_stalls: u64,
    }
}

/// Reset slots: the codes HTTP/2 names, and one for the rest.
pub const RESET_SLOTS: usize = 15;

/// The resets seen, by code name (as results and reports name them).
pub fn named_resets(resets: &[u64; RESET_SLOTS]) -> BTreeMap<&'static str, u64> {
    resets.iter().enumerate().filter(|(_, n)| **n > 0).map(|(code, n)| (code_name(code as u32), *n)).collect()
}

mod reset_names {
    //! The reset counts as a result writes them: by code name, only the codes seen; a name
    //! this strain does not know is read into the last slot.

    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{named_resets, RESET_SLOTS};
    use crate::h2::code_of;
    use crate::stats::Tally;

    /// Writes the resets seen by code name.
    pub fn serialize<S: Serializer>(resets: &[u64; RESET_SLOTS], s: S) -> Result<S::Ok, S::Error> {
        named_resets(resets).serialize(s)
    }

    /// Reads resets by code name back into their slots.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; RESET_SLOTS], D::Error> {
        let mut resets = [0u64; RESET_SLOTS];
        for (name, n) in BTreeMap::<String, u64>::deserialize(d)? {
            let slot = code_of(&name).map_or(RESET_SLOTS - 1, |c| (c as usize).min(RESET_SLOTS - 1));
            resets[slot].tally(&n);
        }
        Ok(resets)
    }
}

/// HTTP/2's section: its lines after wrk's (so scripts that parse wrk's text still find
/// theirs) and its table.
impl Counts for H2Counts {
    const KEY: &'static str = "http2";
    const TITLE: &'static str = "HTTP/2";
    const CAPTION: &'static str = "Stream resets also appear over time among the errors (kind reset).";

    /// The protocol, streams per connection, header compression as h2load reports it, and what
    /// the server reset or refused.
    fn text(&self, spoken: &Spoken, out: &mut String) {
        let h = self;
        let savings = if h.header_bytes > 0 {
            format!(
                "; headers {}B received as {}B (space savings {:.2}%)",
                binary(h.header_bytes as f64),
                binary(h.header_frame_bytes as f64),
                (1.0 - h.header_frame_bytes as f64 / h.header_bytes as f64) * 100.0
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "HTTP/2 ({}): {} streams per connection{savings}",
            spoken.protocol, spoken.streams_per_connection
        );
        let resets: Vec<String> = named_resets(&h.resets).iter().map(|(code, n)| format!("{code} {n}")).collect();
        if !resets.is_empty() || h.goaways > 0 || h.protocol_errors > 0 || h.flow_control_stalls > 0 {
            let _ = writeln!(
                out,
                "HTTP/2 resets: {}; GOAWAY {} ({} requests sent again); protocol errors {}; flow-control stalls {}",
                if resets.is_empty() { "none".to_string() } else { resets.join(", ") },
                h.goaways,
                h.retried,
                h.protocol_errors,
                h.flow_control_stalls
            );
        }
    }

    fn figures(&self, spoken: &Spoken) -> Vec<Figure> {
        let h = self;
        let count = |n: u64| grouped(n as f64, 0);
        let compression = if h.header_bytes > 0 {
            format!("{:.0}% saved", 100.0 * (1.0 - h.header_frame_bytes as f64 / h.header_bytes as f64))
        } else {
            "-".into()
        };
        vec![
            ("protocol", "h2_protocol", spoken.protocol.clone()),
            ("streams per connection", "streams", spoken.streams_per_connection.to_string()),
            ("GOAWAYs received", "goaways", count(h.goaways)),
            ("requests sent again after a GOAWAY", "retried", count(h.retried)),
            ("connections ended by protocol errors", "protocol_errors", count(h.protocol_errors)),
            ("bodies that waited for flow control", "stalls", count(h.flow_control_stalls)),
            ("streams reset, by code", "resets", super::units::by_name(&named_resets(&h.resets))),
            ("header compression", "compression", compression),
        ]
    }
}
