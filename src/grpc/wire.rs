//! gRPC's framing on an HTTP/2 stream: each message is a 1-byte compressed flag, a 4-byte
//! big-endian length and the message; a deadline goes as `grpc-timeout` (at most eight digits
//! and a unit). The decoder takes a stream's DATA as it arrives, in any pieces.

use std::time::Duration;

/// Bytes before each message.
pub const PREFIX: usize = 5;

/// The largest message strain accepts from a server unless told otherwise (gRPC's own default
/// limit for received messages).
pub const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// Appends `message` to `out`, framed (uncompressed).
pub fn frame(message: &[u8], out: &mut Vec<u8>) {
    out.reserve(PREFIX + message.len());
    out.push(0);
    // A message past 4 GiB cannot be framed; strain's messages are the user's, a few KiB.
    out.extend_from_slice(&u32::try_from(message.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(message);
}

/// Why a stream's DATA is not a well-framed message sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A message says it is compressed; strain asks for none (it sends no `grpc-accept-encoding`).
    #[error("a compressed message, though none was asked for")]
    Compressed,
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
}

impl Decoder {
    /// A decoder refusing messages over `limit` bytes.
    pub fn new(limit: usize) -> Decoder {
        Decoder { held: Vec::new(), limit }
    }

    /// Takes `data`; gives `each` every message it completes (its length, and its bytes).
    pub fn feed(&mut self, data: &[u8], each: &mut dyn FnMut(&[u8])) -> Result<(), FrameError> {
        self.held.extend_from_slice(data);
        let mut at = 0;
        while let Some(head) = self.held.get(at..at + PREFIX) {
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            match head[0] {
                0 => {}
                1 => return Err(FrameError::Compressed),
                f => return Err(FrameError::Flag(f)),
            }
            if len > self.limit {
                return Err(FrameError::TooLong(len));
            }
            let Some(message) = self.held.get(at + PREFIX..at + PREFIX + len) else { break };
            each(message);
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
