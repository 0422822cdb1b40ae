//! A workload that judges its own answers (gRPC: a call by its `grpc-status` and its
//! messages, a reset by the status it stands for). The engine knows it only through these two
//! traits: the run's part, shared by the threads, and each thread's, asked by its worker as it
//! asks any workload for bytes. It keeps its own counts and hands them over as a section.

use hdrhistogram::Histogram;

use crate::engine::transport::Part;
use crate::engine::Plan;
use crate::http::response::Captured;
use crate::stats::section::Section;

/// The run's part: what every thread's is made from.
pub trait Judged: Send + Sync + std::fmt::Debug {
    /// Thread `index`'s part over `slots` slots.
    fn thread<'a>(&'a self, plan: &Plan, index: usize, slots: usize) -> Box<dyn Judge + 'a>;

    /// The request every exchange sends, when they all send the same one (HTTP/1 bytes).
    fn first(&self) -> Option<&[u8]>;

    /// How each exchange streams its requests, when they stream (client-streaming calls).
    fn streaming(&self) -> Option<&crate::grpc::call::Streaming> {
        None
    }
}

/// A thread's part: the request each slot sends now, how its answers are judged, and its
/// counts of them (its section of the result).
pub trait Judge {
    /// Slot `i`'s current request when it is not the one every exchange sends.
    fn built(&self, i: usize) -> Option<&[u8]>;

    /// Takes slot `i`'s next exchange.
    fn build(&mut self, i: usize);

    /// Which part of an answer's arrival is timed as its first bytes, if any.
    fn first_timed(&self) -> Option<Part> {
        None
    }

    /// Slot `i`'s exchange answered with HTTP `status` and `captured` (kept whole for it):
    /// judged and counted; whether it succeeded.
    fn judge(&mut self, i: usize, status: u16, captured: Option<&Captured>) -> bool;

    /// A streamed exchange ended with HTTP `status` and `trailers` (its answers were counted
    /// as they came): judged and counted; whether it succeeded.
    fn judge_stream(&mut self, status: u16, trailers: &Captured) -> bool;

    /// A streamed exchange's request message of `bytes` went out.
    fn sent(&mut self, bytes: u64);

    /// A streamed exchange's answer message of `bytes` arrived.
    fn received(&mut self, bytes: u64);

    /// A streamed exchange's answers were not well framed.
    fn broken(&mut self);

    /// Slot `i`'s exchange, `elapsed_us` after it was sent, was reset by the server with
    /// HTTP/2 error `code`: counted as the answer the reset stands for, and whether that
    /// succeeded; `None` when a reset is no answer here (it is then a failed request).
    fn reset(&mut self, i: usize, code: u32, elapsed_us: u64) -> Option<bool>;

    /// The answers judged so far by outcome (gRPC's calls by status), named as the result
    /// names them, for the intervals; outcomes with none may be left out.
    fn outcomes(&self, out: &mut Vec<(&'static str, u64)>);

    /// Measuring starts (the warm-up is over): the counts start again.
    fn restart_counts(&mut self);

    /// The counts, as the result's section, when the run is over; `first` holds the times to
    /// the answers' first bytes, when [`Judge::first_timed`] asked for them.
    fn counts(&self, first: &Histogram<u64>) -> Box<dyn Section>;
}
