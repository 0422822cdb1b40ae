//! A connection's output queue: parts handed to one `writev`, fixed responses as borrowed
//! slices, document heads in a reused buffer, large bodies generated a chunk at a time, delayed
//! answers held in order, and an optional byte-rate throttle.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::Instant;

use crate::workload::page::Document;

/// Queued output beyond which requests are left unparsed and reading stops until the client
/// takes some; a client that pipelines without reading cannot make us queue without bound.
pub(super) const MAX_PENDING: usize = 256 * 1024;
/// Slices handed to one `writev`.
pub(super) const MAX_IOV: usize = 64;
/// Bytes of a streamed body generated at a time.
pub(super) const CHUNK: u64 = 64 * 1024;
/// What a queued streamed body counts toward [`MAX_PENDING`]: the memory it will hold.
pub(super) const BODY_COST: usize = CHUNK as usize;
/// An output buffer larger than this is freed when it empties instead of kept for reuse, so
/// idle connections hold little memory.
pub(super) const KEEP_BUF: usize = 16 * 1024;
/// Written bytes at the front of the output buffer are dropped once there are this many and
/// they are at least half of it.
pub(super) const COMPACT_AT: usize = 64 * 1024;

/// One piece of queued output.
pub(super) enum Part<'r> {
    /// Pre-rendered bytes that live as long as the server.
    Static(&'r [u8]),
    /// The next this many bytes of [`Output::buf`].
    Owned(usize),
    /// Nothing after this is written before this time (the response delay).
    Due(Instant),
    /// A large document body, generated into [`Output::chunk`] when it reaches the front.
    Body(Box<Stream>),
}

/// A document body still to be generated.
pub(super) struct Stream {
    pub(super) doc: Document,
    pub(super) path: Box<str>,
    /// Next body offset to generate.
    pub(super) next: u64,
    /// Where the body ends: its length, or the cut of an aborted response.
    pub(super) end: u64,
}

/// Responses waiting to be written.
#[derive(Default)]
pub(super) struct Output<'r> {
    queue: VecDeque<Part<'r>>,
    /// Bytes held by `queue`, a streamed body counting as [`BODY_COST`].
    pub(super) pending: usize,
    /// Rendered bytes of the `Owned` parts, in queue order, from `buf_pos`.
    buf: Vec<u8>,
    buf_pos: usize,
    /// The current piece of the front `Body`, from `chunk_pos`.
    chunk: Vec<u8>,
    chunk_pos: usize,
}

impl<'r> Output<'r> {
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub(super) fn push(&mut self, bytes: &'r [u8]) {
        // An empty slice would make a write of zero bytes look like a dead socket.
        if !bytes.is_empty() {
            self.pending += bytes.len();
            self.queue.push_back(Part::Static(bytes));
        }
    }

    pub(super) fn push_due(&mut self, at: Instant) {
        self.queue.push_back(Part::Due(at));
    }

    /// Where rendered bytes go; [`Output::commit`] queues what was appended since `mark`.
    pub(super) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Queues the bytes appended to [`Output::buf`] since it had length `mark`.
    pub(super) fn commit(&mut self, mark: usize) {
        let n = self.buf.len() - mark;
        if n > 0 {
            self.pending += n;
            self.queue.push_back(Part::Owned(n));
        }
    }

    /// Queues a body to generate; an empty one is nothing to send.
    pub(super) fn push_body(&mut self, stream: Stream) {
        if stream.next < stream.end {
            self.pending += BODY_COST;
            self.queue.push_back(Part::Body(Box::new(stream)));
        }
    }

    /// The time the front waits for, if it is a delay.
    pub(super) fn front_due(&self) -> Option<Instant> {
        match self.queue.front() {
            Some(Part::Due(at)) => Some(*at),
            _ => None,
        }
    }

    pub(super) fn pop_due(&mut self) {
        if let Some(Part::Due(_)) = self.queue.front() {
            self.queue.pop_front();
        }
    }

    /// Generates the next chunk of a body at the front once the previous one is written.
    pub(super) fn prepare(&mut self) {
        let Some(Part::Body(stream)) = self.queue.front_mut() else { return };
        if self.chunk_pos < self.chunk.len() || stream.next >= stream.end {
            return;
        }
        let to = stream.end.min(stream.next.saturating_add(CHUNK));
        self.chunk.clear();
        self.chunk_pos = 0;
        stream.doc.body_range(&stream.path, stream.next, to, &mut self.chunk);
        stream.next = to;
    }

    /// Fills `iov` from the front with at most `limit` bytes; stops at a delay that has not
    /// passed by `now` (every delay, without a `now`) and after a body's unfinished chunk.
    pub(super) fn slices<'a>(
        &'a self,
        iov: &mut [IoSlice<'a>; MAX_IOV],
        mut limit: usize,
        now: Option<Instant>,
    ) -> usize {
        let mut count = 0;
        let mut off = self.buf_pos;
        for part in self.queue.iter() {
            let bytes: &[u8] = match part {
                Part::Static(s) => s,
                Part::Owned(n) => {
                    let b = &self.buf[off..off + n];
                    off += n;
                    b
                }
                Part::Due(at) => {
                    if now.is_some_and(|now| *at <= now) {
                        continue;
                    }
                    break;
                }
                Part::Body(stream) => {
                    // Only the front body has its chunk generated, and what follows an
                    // unfinished chunk must wait for the next.
                    if count > 0 {
                        break;
                    }
                    let chunk = &self.chunk[self.chunk_pos..];
                    if stream.next < stream.end || chunk.len() >= limit {
                        iov[0] = IoSlice::new(&chunk[..chunk.len().min(limit)]);
                        return 1;
                    }
                    chunk
                }
            };
            if bytes.len() >= limit {
                iov[count] = IoSlice::new(&bytes[..limit]);
                return count + 1;
            }
            iov[count] = IoSlice::new(bytes);
            count += 1;
            limit -= bytes.len();
            if count == MAX_IOV {
                break;
            }
        }
        count
    }

    /// Drops `n` written bytes from the front.
    pub(super) fn advance(&mut self, mut n: usize) {
        while n > 0 {
            let Some(front) = self.queue.front_mut() else { break };
            match front {
                Part::Static(s) => {
                    if n < s.len() {
                        *s = &s[n..];
                        self.pending -= n;
                        break;
                    }
                    n -= s.len();
                    self.pending -= s.len();
                }
                Part::Owned(len) => {
                    if n < *len {
                        *len -= n;
                        self.buf_pos += n;
                        self.pending -= n;
                        break;
                    }
                    n -= *len;
                    self.buf_pos += *len;
                    self.pending -= *len;
                }
                // A passed delay that `slices` skipped.
                Part::Due(_) => {}
                Part::Body(stream) => {
                    let take = n.min(self.chunk.len() - self.chunk_pos);
                    self.chunk_pos += take;
                    n -= take;
                    if self.chunk_pos < self.chunk.len() || stream.next < stream.end {
                        break;
                    }
                    self.pending -= BODY_COST;
                    // A chunk's worth per connection adds up; streamed bodies are rare enough
                    // to allocate their chunk each time.
                    self.chunk = Vec::new();
                    self.chunk_pos = 0;
                }
            }
            self.queue.pop_front();
        }
        self.compact();
    }

    /// Reuses or frees the output buffer once its bytes are written.
    pub(super) fn compact(&mut self) {
        if self.buf_pos == self.buf.len() {
            if self.buf.capacity() > KEEP_BUF {
                self.buf = Vec::new();
            } else {
                self.buf.clear();
            }
            self.buf_pos = 0;
        } else if self.buf_pos >= COMPACT_AT && self.buf_pos * 2 >= self.buf.len() {
            self.buf.drain(..self.buf_pos);
            self.buf_pos = 0;
        }
    }
}
