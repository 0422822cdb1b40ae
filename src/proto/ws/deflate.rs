//! permessage-deflate (RFC 7692): a message's payload deflated without its last four bytes
//! (`00 00 ff ff`, a sync flush's empty block), inflated with them put back.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The tail a sync flush ends with, stripped from each compressed message.
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Why a compressed message could not be inflated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DeflateError {
    /// Not a deflate stream.
    #[error("a compressed WebSocket message is not valid deflate data")]
    Corrupt,
    /// It inflates to more than the limit.
    #[error("a compressed WebSocket message inflates past the limit")]
    TooLong,
}

/// One direction's compressor. Each message is compressed on its own (no context kept), which
/// every peer accepts whatever window it asked for.
pub struct Deflater(Compress);

impl Default for Deflater {
    fn default() -> Self {
        Deflater(Compress::new(Compression::fast(), false))
    }
}

impl Deflater {
    /// `payload` compressed as one message's, appended to `out`.
    pub fn message(&mut self, payload: &[u8], out: &mut Vec<u8>) {
        self.0.reset();
        let start = out.len();
        out.reserve(payload.len() / 2 + 64);
        let mut input = payload;
        loop {
            if out.capacity() - out.len() < 64 {
                out.reserve(out.capacity().max(64));
            }
            let before = self.0.total_in();
            // A Vec with spare room never fails to compress into: any error is ignored as a
            // stalled step, which the room check above ends.
            let _ = self.0.compress_vec(input, out, FlushCompress::Sync);
            input = &input[(self.0.total_in() - before) as usize..];
            if input.is_empty() && out.len() - start >= 4 && out[out.len() - 4..] == TAIL {
                break;
            }
        }
        out.truncate(out.len() - 4);
    }
}

/// One direction's decompressor, keeping the peer's context between messages unless told not to.
pub struct Inflater {
    inner: Decompress,
    /// Reset before each message (the peer's `no_context_takeover`).
    reset: bool,
}

impl Inflater {
    /// A decompressor; `reset`: each message stands alone.
    pub fn new(reset: bool) -> Inflater {
        Inflater { inner: Decompress::new(false), reset }
    }

    /// Inflates one whole message's `payload`; its length, at most `max`. The output is not
    /// kept (strain counts and times messages, it does not look into them).
    pub fn message(&mut self, payload: &[u8], max: usize, scratch: &mut Vec<u8>) -> Result<usize, DeflateError> {
        if self.reset {
            self.inner.reset(false);
        }
        let mut total = 0usize;
        for part in [payload, &TAIL[..]] {
            let mut input = part;
            loop {
                scratch.clear();
                scratch.reserve(16 * 1024);
                let before = self.inner.total_in();
                let status = self
                    .inner
                    .decompress_vec(input, scratch, FlushDecompress::Sync)
                    .map_err(|_| DeflateError::Corrupt)?;
                input = &input[(self.inner.total_in() - before) as usize..];
                total += scratch.len();
                if total > max {
                    return Err(DeflateError::TooLong);
                }
                if input.is_empty() && scratch.len() < scratch.capacity() || status == Status::StreamEnd {
                    break;
                }
                if scratch.is_empty() && !input.is_empty() && status == Status::BufError {
                    return Err(DeflateError::Corrupt);
                }
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_with_and_without_context() {
        let mut d = Deflater::default();
        for reset in [true, false] {
            let mut i = Inflater::new(reset);
            let mut scratch = Vec::new();
            for len in [0usize, 1, 100, 70_000] {
                let payload: Vec<u8> = (0..len).map(|k| (k % 13) as u8).collect();
                let mut out = Vec::new();
                d.message(&payload, &mut out);
                assert!(!out.ends_with(&TAIL) || out.is_empty());
                assert_eq!(i.message(&out, 1 << 20, &mut scratch), Ok(len), "len {len}");
            }
        }
    }

    #[test]
    fn the_rfc_example_inflates() {
        // RFC 7692 7.2.3.1: "Hello" compressed.
        let mut i = Inflater::new(false);
        assert_eq!(i.message(&[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], 100, &mut Vec::new()), Ok(5));
        assert_eq!(
            i.message(&[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], 4, &mut Vec::new()),
            Err(DeflateError::TooLong)
        );
        assert!(Inflater::new(true).message(&[0xff, 0xff, 0xff], 100, &mut Vec::new()).is_err());
    }
}
