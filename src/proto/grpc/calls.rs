//! gRPC calls as a workload that judges its own answers ([`crate::engine::judged`]): which
//! message each slot's call sends, and how a call's answer is judged and counted (its
//! `grpc-status`, its messages, a reset's status). The worker reaches this only through those
//! traits.

use hdrhistogram::Histogram;

use crate::engine::judged::{Judge, Judged};
use crate::engine::{Part, Plan};
use crate::grpc::call::{CallSetup, Streaming};
use crate::grpc::status::Code;
use crate::http::response::Captured;
use crate::stats::section::Section;
use crate::grpc::counts::GrpcCounts;

impl Judged for CallSetup {
    fn thread<'a>(&'a self, plan: &Plan, index: usize, slots: usize) -> Box<dyn Judge + 'a> {
        Box::new(Called::new(self, plan, index, slots))
    }

    fn first(&self) -> Option<&[u8]> {
        self.fixed(0)
    }

    fn streaming(&self) -> Option<&Streaming> {
        self.streaming.as_ref()
    }
}

/// gRPC calls: the message each slot's call sends now, and this thread's place in the
/// sequence of calls (position `j` sends message `j mod len`; thread `t` of segment `s` takes
/// position `s + N t`, then every `N T`-th, as a targets file's requests are taken, so an
/// array of messages is sent round-robin exactly over the run).
struct Called<'a> {
    plan: &'a CallSetup,
    /// Per slot: the position of its current call.
    position: Vec<u64>,
    /// Per slot: its current call's request, when its message has templates.
    bytes: Vec<Vec<u8>>,
    /// Per slot: its current call's message size.
    sizes: Vec<u64>,
    next: u64,
    stride: u64,
    rng: crate::rng::Rng,
    /// The thread's counts.
    counts: GrpcCounts,
}

impl<'a> Called<'a> {
    /// Thread `index`'s calls of `calls` over `slots` slots.
    fn new(calls: &'a CallSetup, plan: &Plan, index: usize, slots: usize) -> Called<'a> {
        let n = plan.segment.count.max(1) as u64;
        Called {
            plan: calls,
            position: vec![0; slots],
            bytes: vec![Vec::new(); slots],
            sizes: vec![calls.size(0); slots],
            next: u64::from(plan.segment.index) + n * index as u64,
            stride: n * plan.threads.max(1) as u64,
            rng: crate::rng::Rng::for_thread(u64::from(plan.segment.index).wrapping_mul(0x9e37_79b9), index),
            counts: GrpcCounts::default(),
        }
    }
}

impl Judge for Called<'_> {
    /// Slot `i`'s current request when it is not the one every call sends.
    fn built(&self, i: usize) -> Option<&[u8]> {
        if self.plan.single() {
            return None;
        }
        let k = *self.position.get(i)? as usize;
        self.plan.fixed(k).or_else(|| self.bytes.get(i).map(Vec::as_slice))
    }

    /// A server-streaming call's first message is timed (its headers may come long before).
    fn first_timed(&self) -> Option<Part> {
        self.plan.server_streams.then_some(Part::Body)
    }

    /// Takes slot `i`'s next call: its position, and its message rendered when it has
    /// templates.
    fn build(&mut self, i: usize) {
        let j = self.next;
        self.next += self.stride;
        if let Some(p) = self.position.get_mut(i) {
            *p = j;
        }
        if self.plan.single() {
            return;
        }
        let size = match (self.plan.fixed(j as usize), self.bytes.get_mut(i)) {
            (None, Some(buf)) => self.plan.render(j as usize, j, &mut self.rng, buf),
            _ => self.plan.size(j as usize),
        };
        if let Some(s) = self.sizes.get_mut(i) {
            *s = size;
        }
    }

    /// A message of `bytes` went out (without its prefix): every call's messages are counted
    /// here, a unary call's when it is answered, a streamed call's as it goes.
    fn sent(&mut self, bytes: u64) {
        self.counts.sent(bytes);
    }

    fn received(&mut self, bytes: u64) {
        self.counts.received(bytes);
    }

    fn broken(&mut self) {
        self.counts.bad_messages += 1;
    }

    /// Slot `i`'s call answered: its message counted as sent and the call judged.
    fn judge(&mut self, i: usize, status: u16, captured: Option<&Captured>) -> bool {
        self.sent(self.sizes.get(i).copied().unwrap_or(0));
        crate::grpc::answer::judge(status, captured, self.plan.check.as_ref(), &mut self.counts).ok()
    }

    fn judge_stream(&mut self, status: u16, trailers: &Captured) -> bool {
        crate::grpc::answer::judge(status, Some(trailers), None, &mut self.counts).ok()
    }

    /// A reset ends a call with the status it stands for (DEADLINE_EXCEEDED once its deadline
    /// passed).
    fn reset(&mut self, i: usize, code: u32, elapsed_us: u64) -> Option<bool> {
        let passed = self.plan.deadline_us.is_some_and(|d| elapsed_us >= d);
        let status = Code::of_reset(code, passed);
        // A streamed call's messages were counted as they were sent.
        if self.plan.streaming.is_none() {
            self.sent(self.sizes.get(i).copied().unwrap_or(0));
        }
        self.counts.codes[status] += 1;
        Some(status == Code::Ok)
    }

    fn outcomes(&self, out: &mut Vec<(&'static str, u64)>) {
        out.extend(self.counts.codes.seen().map(|(code, n)| (code.name(), n)));
    }

    fn restart_counts(&mut self) {
        self.counts = GrpcCounts::default();
    }

    fn counts(&self, first: &Histogram<u64>) -> Box<dyn Section> {
        let first = self.plan.server_streams.then_some(first);
        Box::new(super::counts::GrpcSection::new(self.counts, first))
    }
}
