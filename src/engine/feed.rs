//! A worker's share of a replay: the batches the replay's reader queues for this thread, taken
//! one request at a time as each comes due. The queue is touched once a batch; a request's
//! bytes are copied once, into its slot's buffer, when it is sent.

use std::sync::mpsc::{Receiver, TryRecvError};

use crate::replay::reader::Batch;

/// This thread's replayed requests.
pub struct Feed {
    rx: Receiver<Batch>,
    batch: Batch,
    pos: usize,
    tick_us: u64,
    /// When sending ends: the last tick's requests keep their own times, as a schedule's do.
    end_us: u64,
    /// The reader has ended and every batch is taken.
    closed: bool,
}

impl Feed {
    /// The feed of queue `rx`; due times move to the end of their `tick_us` tick, but for
    /// those of the tick that reaches `end_us`.
    pub fn new(rx: Receiver<Batch>, tick_us: u64, end_us: u64) -> Feed {
        let mut f = Feed { rx, batch: Batch::default(), pos: 0, tick_us, end_us, closed: false };
        f.refill();
        f
    }

    /// Takes the next batch once this one is used up (not between a take and its send: the
    /// taken request's bytes are this batch's).
    pub fn refill(&mut self) {
        while self.pos >= self.batch.items.len() && !self.closed {
            match self.rx.try_recv() {
                Ok(b) => {
                    self.batch = b;
                    self.pos = 0;
                }
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => self.closed = true,
            }
        }
    }

    /// When the next request is due (clock µs), if one is at hand.
    #[inline]
    pub fn next_due(&self) -> Option<u64> {
        let due = self.batch.items.get(self.pos)?.due_us;
        if self.tick_us <= 1 {
            return Some(due);
        }
        let q = due.div_ceil(self.tick_us) * self.tick_us;
        Some(if q >= self.end_us { due } else { q })
    }

    /// The server the next request goes to.
    pub fn next_origin(&self) -> usize {
        self.batch.items.get(self.pos).map_or(0, |i| usize::from(i.origin))
    }

    /// The slot the next request's session goes on (`--sessions`), if it has one.
    pub fn next_slot(&self) -> Option<usize> {
        self.batch
            .items
            .get(self.pos)
            .map(|i| i.slot)
            .filter(|&s| s != crate::replay::reader::NO_SLOT)
            .map(|s| s as usize)
    }

    /// Takes the next request; returns its due time.
    #[inline]
    pub fn take(&mut self) -> Option<u64> {
        let due = self.next_due()?;
        self.pos += 1;
        Some(due)
    }

    /// The bytes of the request last taken.
    pub fn taken(&self) -> &[u8] {
        self.pos.checked_sub(1).map_or(&[], |k| self.batch.bytes_of(k))
    }

    /// Where the request last taken was recorded, when the run is traced.
    pub fn taken_note(&self) -> Option<&str> {
        self.pos.checked_sub(1).and_then(|k| self.batch.note_of(k))
    }

    /// The path number of the request last taken.
    pub fn taken_path(&self) -> u16 {
        self.pos.checked_sub(1).and_then(|k| self.batch.items.get(k)).map_or(0, |i| i.path)
    }

    /// No request is at hand although the reader has not ended: it is behind.
    pub fn starved(&self) -> bool {
        !self.closed && self.pos >= self.batch.items.len()
    }

    /// Every request was taken and the reader has ended.
    pub fn done(&self) -> bool {
        self.closed && self.pos >= self.batch.items.len()
    }

    /// Requests due before `end_us` that were never taken (those queued now: the reader
    /// stops with the load).
    pub fn left_before(&mut self, end_us: u64) -> u64 {
        let mut n =
            self.batch.items[self.pos.min(self.batch.items.len())..].iter().filter(|i| i.due_us < end_us).count();
        while let Ok(b) = self.rx.try_recv() {
            let before = b.items.iter().filter(|i| i.due_us < end_us).count();
            n += before;
            if before < b.items.len() {
                break;
            }
        }
        n as u64
    }
}
