//! A workload that judges its own answers (gRPC: a call by its `grpc-status` and its
//! messages, a reset by the status it stands for). The engine knows it only through these two
//! traits: the run's part, shared by the threads, and each thread's, asked by its worker as it
//! asks any workload for bytes. Its counts go into the recorder the worker hands it.

use crate::engine::transport::Part;
use crate::engine::Plan;
use crate::http::response::Captured;
use crate::stats::Recorder;

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

/// A thread's part: the request each slot sends now, and how its answers are judged.
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
    /// judged and counted in `rec`.
    fn judge(&self, i: usize, status: u16, captured: Option<&Captured>, rec: &mut Recorder);

    /// A streamed exchange ended with HTTP `status` and `trailers` (its answers were counted
    /// as they came): judged and counted in `rec`.
    fn judge_stream(&self, status: u16, trailers: &Captured, rec: &mut Recorder);

    /// A streamed exchange's request message of `bytes` went out.
    fn sent(&self, bytes: u64, rec: &mut Recorder);

    /// A streamed exchange's answer message of `bytes` arrived.
    fn received(&self, bytes: u64, rec: &mut Recorder);

    /// A streamed exchange's answers were not well framed.
    fn broken(&self, rec: &mut Recorder);

    /// Slot `i`'s exchange, `elapsed_us` after it was sent, was reset by the server with
    /// HTTP/2 error `code`: counted as the answer the reset stands for. False when a reset is
    /// no answer here (it is then a failed request).
    fn reset(&self, i: usize, code: u32, elapsed_us: u64, rec: &mut Recorder) -> bool;
}
