//! Measurements: a hot per-thread [`Recorder`] the engine writes to on every response, and a cold
//! [`Summary`] made once after the threads join.
//!
//! Nothing here is shared between threads while the test runs: each worker owns its recorder,
//! and merging happens after the join, so recording is a few adds and one histogram bucket.

#[macro_use]
pub(crate) mod named;
#[macro_use]
mod tally;
pub mod codec;
mod h2;
mod h3;
pub mod interval;
mod pages;
mod recorder;
mod redirects;
pub mod section;
pub mod series;
mod summary;
pub mod units;

pub use h2::{named_resets as h2_named_resets, H2Counts, RESET_SLOTS as H2_RESET_SLOTS};
pub use h3::{
    code_name as h3_code_name, named_codes as h3_named_codes, H3Counts, HandshakeFailure, HandshakeFailures,
    Handshakes, Times,
};
pub use pages::{LoadTimes, PageCounts, PagesSection};
pub use recorder::{
    latency_histogram, unused_histogram, ConnectCause, Pacing, Recorder, TargetCount, Waited, LATE_SEND_US,
    MAX_CONTENT_FAILURES, STATUS_SLOTS,
};
pub use redirects::RedirectCounts;
pub use summary::{Distribution, Summary};
pub(crate) use tally::counts;
pub use tally::{tally_times, Tally};

/// Highest latency the histograms track: one hour, in microseconds.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;
/// Significant decimal digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;
/// How often each thread samples its request rate for the `Req/Sec` row (as wrk does).
pub const RATE_SAMPLE_MS: u64 = 100;

named! {
    /// Why a request failed, in wrk's categories plus `Parse` for malformed responses.
    pub enum ErrorKind {
        /// A connect was refused, failed, or timed out (TLS handshake failures included).
        Connect,
        /// A read failed or the peer closed before the response was complete.
        Read,
        /// A write failed.
        Write,
        /// No complete response within `--timeout`.
        Timeout,
        /// The response was not valid HTTP/1 (bad status line, bad chunk size).
        Parse,
        /// A body was not the document its URL names (`--check-content`).
        Content,
        /// HTTP/2: the server reset the stream (RST_STREAM) before the response was complete.
        Reset,
    }
}
