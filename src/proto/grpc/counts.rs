//! gRPC's section of a result (`grpc`): calls by status, answers that were not gRPC, messages
//! each way ([`GrpcCounts`], which the wire's judge fills), and for server-streaming calls the
//! time to each call's first message. It is written without how it was spoken: the run's
//! `protocol` (`h2`, `h2c`) says that already.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::result::Latency;
use crate::stats::section::{Answers, Counts, Figure, Spoken};
use crate::stats::units::{binary, by_name, grouped, messages, time_us};
use crate::grpc::counts::GrpcCounts;
use crate::stats::Tally;

/// A gRPC run's counts of one thread, or merged.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GrpcSection {
    /// Calls by status, answers that were not gRPC, messages each way.
    #[serde(flatten)]
    pub counts: GrpcCounts,
    /// Server streaming: from each call's send to its first message, microseconds (absent
    /// from a merged result, whose segments' histograms of it are not kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message_us: Option<Latency>,
    /// The times behind `first_message_us` while the run's threads are added up.
    #[serde(skip)]
    first: Option<Histogram<u64>>,
}

impl GrpcSection {
    /// `counts`, with the times to first messages in `first` when calls stream their replies.
    pub fn new(counts: GrpcCounts, first: Option<&Histogram<u64>>) -> GrpcSection {
        let first = first.filter(|h| !h.is_empty()).cloned();
        let first_message_us = first.as_ref().map(crate::report::json::latency);
        GrpcSection { counts, first_message_us, first }
    }
}

impl PartialEq for GrpcSection {
    fn eq(&self, other: &GrpcSection) -> bool {
        self.counts == other.counts && self.first_message_us == other.first_message_us
    }
}

impl Tally for GrpcSection {
    fn tally(&mut self, other: &GrpcSection) {
        self.counts.tally(&other.counts);
        let (mine, theirs) = (self.first_message_us.is_some(), other.first_message_us.is_some());
        self.first = crate::stats::tally_times(self.first.take(), mine, other.first.as_ref(), theirs);
        self.first_message_us = self.first.as_ref().map(crate::report::json::latency);
    }
}

/// A run's calls: counted as requests, each one HTTP/2 request; its failures are the calls
/// that did not end OK, whatever their HTTP status.
static CALLS: Answers = Answers {
    failed: "Non-OK calls",
    errors: "status: calls that did not end OK.",
    ..Answers::REQUESTS
};

impl Counts for GrpcSection {
    const KEY: &'static str = "grpc";
    const TITLE: &'static str = "gRPC";
    const CAPTION: &'static str = "Calls that did not end OK also appear over time among the errors (kind status).";
    const SPOKEN: bool = false;

    fn answers() -> Option<&'static Answers> {
        Some(&CALLS)
    }

    fn failed(&self) -> Option<u64> {
        Some(self.counts.failed())
    }

    /// gRPC's lines, last: calls by status (as gRPC's documents name them), the answers that
    /// were not gRPC answers at all, messages each way with their mean size, and for
    /// server-streaming calls the time to their first message.
    fn text(&self, _spoken: &Spoken, out: &mut String) {
        let g = &self.counts;
        let codes: Vec<String> = g.codes.seen().map(|(code, n)| format!("{} {n}", code.canonical())).collect();
        let codes = if codes.is_empty() { "none".to_string() } else { codes.join(", ") };
        let mean = |bytes: u64, n: u64| if n > 0 { binary(bytes as f64 / n as f64) } else { "0".into() };
        let _ = writeln!(
            out,
            "gRPC status: {codes}; messages {} sent ({}B mean), {} received ({}B mean)",
            g.messages_sent,
            mean(g.message_bytes_sent, g.messages_sent),
            g.messages_received,
            mean(g.message_bytes_received, g.messages_received)
        );
        if g.http_errors + g.missing_status + g.bad_messages > 0 {
            let _ = writeln!(
                out,
                "gRPC errors: HTTP status not 200 {}, no grpc-status {}, bad messages {}",
                g.http_errors, g.missing_status, g.bad_messages
            );
        }
        if let Some(first) = &self.first {
            let at = |q: f64| time_us(first.value_at_quantile(q) as f64);
            let _ = writeln!(
                out,
                "gRPC streams: {:.1} messages per call; first message p50 {}, p99 {}, max {} (the last is the call's latency)",
                g.messages_received as f64 / g.judged().max(1) as f64,
                at(0.5),
                at(0.99),
                time_us(first.max() as f64)
            );
        }
    }

    fn figures(&self, _spoken: &Spoken) -> Vec<Figure> {
        let g = &self.counts;
        let codes: BTreeMap<String, u64> = g.codes.seen().map(|(c, n)| (c.canonical(), n)).collect();
        vec![
            ("calls, by status", "grpc_codes", by_name(&codes)),
            ("HTTP status not 200", "grpc_http_errors", grouped(g.http_errors as f64, 0)),
            ("no grpc-status", "grpc_missing_status", grouped(g.missing_status as f64, 0)),
            ("bad messages", "grpc_bad_messages", grouped(g.bad_messages as f64, 0)),
            ("messages sent (mean size)", "grpc_sent", messages(g.messages_sent, g.message_bytes_sent)),
            ("messages received (mean size)", "grpc_received", messages(g.messages_received, g.message_bytes_received)),
        ]
    }
}
