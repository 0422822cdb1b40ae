//! gRPC's framing on an HTTP/2 stream: each message is a 1-byte compressed flag, a 4-byte
//! big-endian length and the message; a deadline goes as `grpc-timeout` (at most eight digits
//! and a unit). The decoder takes a stream's DATA as it arrives, in any pieces, and inflates a
//! message compressed with the encoding its response named (`grpc-encoding`): strain offers
//! gzip (`grpc-accept-encoding`) and sends it with `--compress gzip`, and reads a reply
//! compressed unasked either way.

use std::io::{Read, Write};
use std::time::Duration;

/// Bytes before each message.
pub const PREFIX: usize = 5;

/// The largest message strain accepts from a server unless told otherwise (gRPC's own default
/// limit for received messages).
pub const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// The encodings strain offers in `grpc-accept-encoding`.
pub const ACCEPTED: &str = "gzip";

/// How a message body is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// Not compressed.
    #[default]
    Identity,
    /// gzip (RFC 1952).
    Gzip,
    /// One strain did not offer.
    Other,
}

impl Encoding {
    /// The encoding a `grpc-encoding` value names.
    pub fn named(value: &[u8]) -> Encoding {
        match value {
            b"identity" | b"" => Encoding::Identity,
            b"gzip" => Encoding::Gzip,
            _ => Encoding::Other,
        }
    }

    /// The encoding a response's header fields name (identity when none does).
    pub fn of_fields<N: AsRef<[u8]>, V: AsRef<[u8]>>(fields: &[(N, V)]) -> Encoding {
        fields
            .iter()
            .find(|(n, _)| n.as_ref() == b"grpc-encoding")
            .map_or(Encoding::Identity, |(_, v)| Encoding::named(v.as_ref()))
    }
}

/// Appends `message` to `out`, framed (uncompressed).
pub fn frame(message: &[u8], out: &mut Vec<u8>) {
    frame_as(message, Encoding::Identity, out);
}

/// Appends `message` to `out`, framed, compressed with `encoding` (gzip; identity as it is).
pub fn frame_as(message: &[u8], encoding: Encoding, out: &mut Vec<u8>) {
    let gzipped;
    let (flag, body) = match encoding {
        Encoding::Gzip => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            // Writing to a Vec cannot fail.
            let _ = gz.write_all(message);
            gzipped = gz.finish().unwrap_or_default();
            (1, gzipped.as_slice())
        }
        Encoding::Identity | Encoding::Other => (0, message),
    };
    out.reserve(PREFIX + body.len());
    out.push(flag);
    // A message past 4 GiB cannot be framed; strain's messages are the user's, a few KiB.
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(body);
}

/// Why a stream's DATA is not a well-framed message sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A message says it is compressed, but its response named no encoding strain offered.
    #[error("a compressed message in an encoding strain did not offer")]
    Compressed,
    /// A compressed message does not inflate.
    #[error("a compressed message that does not inflate")]
    Corrupt,
    /// A flag byte other than 0 or 1.
    #[error("a message flag of {0}, not 0 or 1")]
    Flag(u8),
    /// A message longer than the limit.
    #[error("a message of {0} bytes, over the limit")]
    TooLong(usize),
    /// The stream ended inside a message.
    #[error("the stream ended inside a message")]
    Truncated,
}

/// Messages out of a stream's DATA, as it arrives.
#[derive(Debug, Default)]
pub struct Decoder {
    held: Vec<u8>,
    limit: usize,
    /// The response's `grpc-encoding`, once its headers are known.
    encoding: Option<Encoding>,
    /// A compressed message, inflated.
    inflated: Vec<u8>,
}

impl Decoder {
    /// A decoder refusing messages over `limit` bytes.
    pub fn new(limit: usize) -> Decoder {
        Decoder { held: Vec::new(), limit, encoding: None, inflated: Vec::new() }
    }

    /// Says the response's encoding, once its headers are known.
    pub fn encoding(&mut self, encoding: Encoding) {
        self.encoding = Some(encoding);
    }

    /// Whether the response's encoding is known yet.
    pub fn knows_encoding(&self) -> bool {
        self.encoding.is_some()
    }

    /// Takes `data`; gives `each` every message it completes (its length, and its bytes).
    pub fn feed(&mut self, data: &[u8], each: &mut dyn FnMut(&[u8])) -> Result<(), FrameError> {
        self.held.extend_from_slice(data);
        let mut at = 0;
        while let Some(head) = self.held.get(at..at + PREFIX) {
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            let compressed = match head[0] {
                0 => false,
                1 if self.encoding == Some(Encoding::Gzip) => true,
                1 => return Err(FrameError::Compressed),
                f => return Err(FrameError::Flag(f)),
            };
            if len > self.limit {
                return Err(FrameError::TooLong(len));
            }
            let Some(message) = self.held.get(at + PREFIX..at + PREFIX + len) else { break };
            if compressed {
                // The limit holds for what the message inflates to, as gRPC's own does.
                self.inflated.clear();
                let mut inflating = flate2::read::GzDecoder::new(message).take(self.limit as u64 + 1);
                match inflating.read_to_end(&mut self.inflated) {
                    Ok(n) if n > self.limit => return Err(FrameError::TooLong(n)),
                    Ok(_) => each(&self.inflated),
                    Err(_) => return Err(FrameError::Corrupt),
                }
            } else {
                each(message);
            }
            at += PREFIX + len;
        }
        self.held.drain(..at);
        Ok(())
    }

    /// The bytes of a message begun and not yet whole: empty between messages. Fed to a new
    /// decoder, they end it inside a message again, as [`Decoder::finish`] refuses.
    pub fn unfinished(&self) -> &[u8] {
        &self.held
    }

    /// The stream ended: an error if it ended inside a message.
    pub fn finish(&self) -> Result<(), FrameError> {
        if self.held.is_empty() {
            Ok(())
        } else {
            Err(FrameError::Truncated)
        }
    }
}

/// `grpc-timeout`'s value for `d`: the finest unit whose count fits in eight digits (the spec's
/// limit), rounded up so a deadline is never shorter than asked.
pub fn timeout(d: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let ns = d.as_nanos();
    for (unit, per) in [("n", 1u128), ("u", 1_000), ("m", 1_000_000), ("S", 1_000_000_000), ("M", 60_000_000_000)] {
        let n = ns.div_ceil(per);
        if n <= MAX {
            return format!("{n}{unit}");
        }
    }
    format!("{}H", ns.div_ceil(3_600_000_000_000).min(MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_unfinished_is_the_message_cut_short() {
        let mut wire = Vec::new();
        frame(b"whole", &mut wire);
        frame(b"cut short", &mut wire);
        let cut = &wire[..wire.len() - 1];
        let mut d = Decoder::new(MAX_MESSAGE);
        d.feed(cut, &mut |_| {}).unwrap();
        assert_eq!(d.unfinished(), &cut[PREFIX + 5..]);
        assert_eq!(d.finish(), Err(FrameError::Truncated));
        let mut again = Decoder::new(MAX_MESSAGE);
        let mut seen = 0;
        again.feed(d.unfinished(), &mut |_| seen += 1).unwrap();
        assert_eq!((seen, again.finish()), (0, Err(FrameError::Truncated)));
        d.feed(&wire[wire.len() - 1..], &mut |_| {}).unwrap();
        assert!(d.unfinished().is_empty());
    }

    #[test]
    fn messages_come_out_whole_whatever_the_pieces() {
        let mut wire = Vec::new();
        for m in [&b"hello"[..], b"", b"world!"] {
            frame(m, &mut wire);
        }
        assert_eq!(&wire[..PREFIX], [0, 0, 0, 0, 5]);
        // Byte by byte, and all at once: the same messages.
        for step in [1, 3, wire.len()] {
            let mut d = Decoder::new(MAX_MESSAGE);
            let mut got: Vec<Vec<u8>> = Vec::new();
            for piece in wire.chunks(step) {
                d.feed(piece, &mut |m| got.push(m.to_vec())).unwrap();
            }
            d.finish().unwrap();
            assert_eq!(got, [b"hello".to_vec(), Vec::new(), b"world!".to_vec()], "step {step}");
        }
    }

    #[test]
    fn bad_framing_is_named() {
        let feed = |bytes: &[u8], limit| Decoder::new(limit).feed(bytes, &mut |_| {});
        assert_eq!(feed(&[1, 0, 0, 0, 1, 9], 10), Err(FrameError::Compressed));
        assert_eq!(feed(&[7, 0, 0, 0, 0], 10), Err(FrameError::Flag(7)));
        assert_eq!(feed(&[0, 0, 0, 0, 11], 10), Err(FrameError::TooLong(11)));
        let mut d = Decoder::new(10);
        d.feed(&[0, 0, 0, 0, 3, 1], &mut |_| {}).unwrap();
        assert_eq!(d.finish(), Err(FrameError::Truncated));
    }

    #[test]
    fn gzip_messages_go_both_ways_within_the_limit() {
        let message = b"strain strain strain strain strain strain".repeat(10);
        let mut wire = Vec::new();
        frame_as(&message, Encoding::Gzip, &mut wire);
        assert_eq!(wire[0], 1);
        assert!(wire.len() < PREFIX + message.len(), "compressed: {} bytes", wire.len());
        // Read as gzip once the response says so; refused without it.
        let mut d = Decoder::new(MAX_MESSAGE);
        d.encoding(Encoding::of_fields(&[(&b"grpc-encoding"[..], &b"gzip"[..])]));
        let mut got = Vec::new();
        d.feed(&wire, &mut |m| got.push(m.to_vec())).unwrap();
        assert_eq!(got, std::slice::from_ref(&message));
        assert_eq!(Decoder::new(MAX_MESSAGE).feed(&wire, &mut |_| {}), Err(FrameError::Compressed));
        let mut other = Decoder::new(MAX_MESSAGE);
        other.encoding(Encoding::named(b"snappy"));
        assert_eq!(other.feed(&wire, &mut |_| {}), Err(FrameError::Compressed));
        // The limit is on what a message inflates to; bytes that are not gzip are named.
        let mut small = Decoder::new(100);
        small.encoding(Encoding::Gzip);
        assert_eq!(small.feed(&wire, &mut |_| {}), Err(FrameError::TooLong(101)));
        let mut corrupt = Decoder::new(MAX_MESSAGE);
        corrupt.encoding(Encoding::Gzip);
        assert_eq!(corrupt.feed(&[1, 0, 0, 0, 3, 1, 2, 3], &mut |_| {}), Err(FrameError::Corrupt));
        // Identity frames as before.
        let mut plain = Vec::new();
        frame_as(b"x", Encoding::Identity, &mut plain);
        assert_eq!(plain, [0, 0, 0, 0, 1, b'x']);
    }

    #[test]
    fn timeouts_fit_eight_digits_and_never_shorten_the_deadline() {
        assert_eq!(timeout(Duration::from_millis(100)), "100000u");
        assert_eq!(timeout(Duration::from_millis(99)), "99000000n");
        assert_eq!(timeout(Duration::from_secs(1)), "1000000u");
        assert_eq!(timeout(Duration::from_secs(30)), "30000000u");
        assert_eq!(timeout(Duration::from_secs(100)), "100000m");
        assert_eq!(timeout(Duration::from_nanos(1_500)), "1500n");
        assert_eq!(timeout(Duration::from_secs(200_000)), "200000S");
        assert_eq!(timeout(Duration::from_secs(365 * 86_400 * 1000)), "8760000H");
    }
}
