//! A body whose bytes are not all known when its stream starts (a gRPC stream's messages): the
//! owner pushes bytes as they are ready and ends it, with END_STREAM or with trailers, and the
//! data callback takes them a frame at a time, telling nghttp2 to wait (a deferred DATA) while
//! none are queued. Kept apart from [`super::body::Body`], whose length is known up front, so
//! the fixed and document bodies of the benchmarked paths stay as they were.

use super::nv::Fields;

/// How a [`Pipe`] ends once its queued bytes are out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum End {
    /// Not yet: more bytes may come.
    Open,
    /// END_STREAM on the last DATA frame.
    Stream,
    /// A trailers HEADERS frame (with END_STREAM) after the last DATA frame.
    Trailers(Fields),
}

/// One stream's pushed bytes, and how it ends.
#[derive(Debug)]
pub(super) struct Pipe {
    /// Pushed bytes, sent up to `sent`.
    bytes: Vec<u8>,
    sent: usize,
    pub(super) end: End,
}

/// Front bytes already sent past which pushing compacts the buffer, so a long stream's buffer
/// does not grow with everything it ever sent.
const COMPACT_AT: usize = 64 * 1024;

impl Pipe {
    /// An open pipe with nothing queued.
    pub(super) fn new() -> Pipe {
        Pipe { bytes: Vec::new(), sent: 0, end: End::Open }
    }

    /// Bytes pushed and not yet taken by nghttp2.
    pub(super) fn queued(&self) -> usize {
        self.bytes.len() - self.sent
    }

    /// Queues `data` behind what is there.
    pub(super) fn push(&mut self, data: &[u8]) {
        if self.sent == self.bytes.len() {
            self.bytes.clear();
            self.sent = 0;
        } else if self.sent >= COMPACT_AT {
            self.bytes.drain(..self.sent);
            self.sent = 0;
        }
        self.bytes.extend_from_slice(data);
    }

    /// Copies the next queued bytes into `out` (as many as fit); returns how many.
    pub(super) fn take(&mut self, out: &mut [u8]) -> usize {
        let n = self.queued().min(out.len());
        out[..n].copy_from_slice(&self.bytes[self.sent..self.sent + n]);
        self.sent += n;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_out_in_order_across_pushes_and_compaction() {
        let mut p = Pipe::new();
        let mut want = Vec::new();
        let mut got = Vec::new();
        let mut buf = [0u8; 7000];
        for i in 0..100u8 {
            let chunk = vec![i; 1000 + usize::from(i)];
            p.push(&chunk);
            want.extend_from_slice(&chunk);
            let n = p.take(&mut buf);
            got.extend_from_slice(&buf[..n]);
        }
        while p.queued() > 0 {
            let n = p.take(&mut buf);
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, want);
        assert_eq!(p.take(&mut buf), 0);
    }
}
