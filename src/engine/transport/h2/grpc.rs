//! gRPC calls whose requests stream (client streaming, bidi) on HTTP/2: each slot's call is
//! a stream whose body is pushed a message at a time on an absolute schedule from the call's
//! start (`--stream-rate`), as Nighthawk's gRPC streams send; a bidi reply is matched to its
//! message in order and its latency runs from when that message was due, so a server that
//! stalls shows in every message it held up, not only in the first. The session runs in
//! streamed mode: a reply's bytes come as they arrive and its trailers as fields.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::grpc::call::Streaming;
use crate::grpc::wire::{Decoder, Encoding, MAX_MESSAGE};

/// One slot's call under way.
#[derive(Debug)]
pub(super) struct Call {
    /// The stream carrying it.
    pub(super) id: i32,
    /// When it started, clock microseconds.
    start_us: u64,
    /// Messages written.
    sent: u64,
    /// When the next message is due, from `start_us`.
    next_us: u64,
    /// The body has ended (END_STREAM queued).
    ended: bool,
    /// Messages awaiting their reply: when each was due and when it was written.
    awaiting: VecDeque<(u64, u64)>,
    /// The reply's messages, as their bytes arrive.
    decoder: Decoder,
    /// The reply's header blocks (headers, then trailers).
    pub(super) fields: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A whole reply: when its message was due and written, and its size.
pub(super) type Reply = (u64, u64, u64);

/// What a call asks of the link, after it was given time or a reply.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// Messages to push, in order (framed).
    pub(super) push: Vec<usize>,
    /// The body ends after them.
    pub(super) end: bool,
}

/// The streamed calls of a worker's slots, and when each next sends.
pub(super) struct Streams {
    pub(super) plan: Streaming,
    /// Per slot: its call, if one is under way.
    pub(super) calls: Vec<Option<Call>>,
    /// (due, slot, stream id): the next message of each paced call.
    due: BinaryHeap<Reverse<(u64, u32, i32)>>,
    /// Messages pushed so far by this thread (the next goes round-robin).
    turn: usize,
}

impl Call {
    /// What came of the reply's last message when it never came whole: empty when the reply
    /// ended between messages.
    pub(super) fn cut_short(&self) -> &[u8] {
        self.decoder.unfinished()
    }
}

impl Streams {
    /// Calls of `slots` slots, sending as `plan` says.
    pub(super) fn new(plan: Streaming, slots: usize) -> Streams {
        Streams { plan, calls: (0..slots).map(|_| None).collect(), due: BinaryHeap::new(), turn: 0 }
    }

    /// Slot `i` started a call on stream `id` at `now`: what it sends at once.
    pub(super) fn start(&mut self, i: usize, id: i32, now: u64) -> Outcome {
        let call = Call {
            id,
            start_us: now,
            sent: 0,
            next_us: 0,
            ended: false,
            awaiting: VecDeque::new(),
            decoder: Decoder::new(MAX_MESSAGE),
            fields: Vec::new(),
        };
        if let Some(c) = self.calls.get_mut(i) {
            *c = Some(call);
        }
        self.pump(i, now)
    }

    /// The messages slot `i`'s call owes by `now`: those due on its schedule, or (unpaced) the
    /// next one a reply made room for, or all of a client stream's at once.
    fn pump(&mut self, i: usize, now: u64) -> Outcome {
        let mut out = Outcome::default();
        let (plan, turn) = (&self.plan, &mut self.turn);
        let Some(Some(call)) = self.calls.get_mut(i) else { return out };
        if call.ended {
            return out;
        }
        loop {
            // Paced, a stream's time is its schedule's; unpaced (a bidi stream waiting on each
            // reply), the time it has run.
            let at_us = if plan.every_us > 0 { call.next_us } else { now.saturating_sub(call.start_us) };
            if plan.done(call.sent, at_us) {
                call.ended = true;
                out.end = true;
                break;
            }
            let due = call.start_us + call.next_us;
            let paced = plan.every_us > 0;
            let unpaced_bidi_waits = !paced && plan.bidi && !call.awaiting.is_empty();
            if (paced && due > now) || unpaced_bidi_waits {
                break;
            }
            out.push.push(*turn % plan.framed.len().max(1));
            *turn += 1;
            if !plan.bidi {
                // One reply answers the whole stream: only its last message's times matter.
                call.awaiting.clear();
            }
            call.awaiting.push_back((due.min(now), now));
            call.sent += 1;
            call.next_us += plan.every_us;
        }
        if !call.ended && plan.every_us > 0 {
            self.due.push(Reverse((call.start_us + call.next_us, i as u32, call.id)));
        }
        out
    }

    /// When the next paced message is due, if any.
    pub(super) fn next_due(&mut self) -> Option<u64> {
        while let Some(&Reverse((at, i, id))) = self.due.peek() {
            if self.live(i as usize, id) {
                return Some(at);
            }
            self.due.pop();
        }
        None
    }

    /// The slots with a message due by `now`, each with what it sends.
    pub(super) fn expired(&mut self, now: u64) -> Vec<(usize, Outcome)> {
        let mut out = Vec::new();
        while let Some(&Reverse((at, i, id))) = self.due.peek() {
            if at > now {
                break;
            }
            self.due.pop();
            if self.live(i as usize, id) {
                out.push((i as usize, self.pump(i as usize, now)));
            }
        }
        out
    }

    fn live(&self, i: usize, id: i32) -> bool {
        matches!(self.calls.get(i), Some(Some(c)) if c.id == id && !c.ended)
    }

    /// Reply bytes for slot `i`'s call arrived at `now`: each whole message's (due, written)
    /// times and size; then what the call sends next (an unpaced bidi call's next message).
    /// `Err` when the bytes are not gRPC messages.
    pub(super) fn reply(&mut self, i: usize, data: &[u8], now: u64) -> Result<(Vec<Reply>, Outcome), ()> {
        let bidi = self.plan.bidi;
        let Some(Some(call)) = self.calls.get_mut(i) else { return Ok((Vec::new(), Outcome::default())) };
        let mut replies = Vec::new();
        let awaiting = &mut call.awaiting;
        if !call.decoder.knows_encoding() {
            // The reply's headers came before its first bytes.
            call.decoder.encoding(Encoding::of_fields(&call.fields));
        }
        let fed = call.decoder.feed(data, &mut |m| {
            // A client stream's one reply answers the last message (the stream's end).
            let times = if bidi { awaiting.pop_front() } else { awaiting.pop_back() };
            let (due, sent) = times.unwrap_or((now, now));
            replies.push((due, sent, m.len() as u64));
        });
        if fed.is_err() {
            return Err(());
        }
        Ok((replies, self.pump(i, now)))
    }

    /// The run is over: every call still sending sends no more (its body ends now, so the
    /// server answers what it has and the drain waits for no schedule); the slots ended.
    pub(super) fn end_all(&mut self) -> Vec<usize> {
        self.due.clear();
        let mut ended = Vec::new();
        for (i, call) in self.calls.iter_mut().enumerate() {
            if let Some(c) = call.as_mut().filter(|c| !c.ended) {
                c.ended = true;
                ended.push(i);
            }
        }
        ended
    }

    /// Slot `i`'s call is over (ended, reset or lost): what it kept.
    pub(super) fn take(&mut self, i: usize) -> Option<Call> {
        self.calls.get_mut(i)?.take()
    }

    /// Slot `i`'s call, if under way.
    pub(super) fn call(&mut self, i: usize) -> Option<&mut Call> {
        self.calls.get_mut(i)?.as_mut()
    }
}
