//! What a Server-Sent Events run counts besides its events and errors: streams opened, ended
//! and refused (by status), answers that were not an event stream, the events' data bytes,
//! comments, `data: [DONE]` markers, streams resumed with `Last-Event-ID`, and the time to each
//! stream's first event. The type is also a result's `sse` section.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::config::Speech;
use crate::stats::section::{Answers, Counts, Figure, Spoken};
use crate::stats::units::{binary, by_name, count_mean_max, grouped, mean_max};
use crate::stats::{counts, Times};

counts! {
    /// Server-Sent Events counts of one thread, or merged; in a result, written field by field
    /// in this order.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct SseCounts {
        /// Streams the server accepted (`200`, `text/event-stream`).
        pub streams: u64,
        /// Streams the server ended (each is started again, after its `retry:`).
        pub ended: u64,
        /// Answers with another status, by status.
        pub refused: BTreeMap<u16, u64>,
        /// `200` answers that were not `text/event-stream`.
        pub not_event_stream: u64,
        /// Events received (each answers the wait before it).
        pub events: u64,
        /// Their data, in bytes.
        pub data_bytes: u64,
        /// Comment lines (keep-alives).
        pub comments: u64,
        /// `data: [DONE]` events (the end of an OpenAI-style completion).
        pub done: u64,
        /// Streams started again with `Last-Event-ID`.
        pub resumed: u64,
        /// Streams still connecting when the run ended: a server slow to accept shows here
        /// (absent from results written before).
        #[serde(default)]
        pub opening: u64,
        /// The time from each stream's request to its first event.
        pub first_event: Times,
    }
}

/// A stream's answers: its events.
static EVENTS: Answers = Answers {
    singular: "event",
    plural: "events",
    title: "Events",
    status: "streams, refusals by status",
    errors: "timeout: no event within --timeout; read: a stream lost mid-event.",
    failed: "Non-2xx or 3xx responses",
};

impl Counts for SseCounts {
    const KEY: &'static str = "sse";
    const TITLE: &'static str = "Server-Sent Events";
    const CAPTION: &'static str = "A stream the server ends is started again; its events' gaps are the run's latency.";
    const SPEECH: Option<Speech> = Some(super::SPEECH);

    fn answers() -> Option<&'static Answers> {
        Some(&EVENTS)
    }

    fn started(&self) -> Option<u64> {
        Some(self.streams)
    }

    /// After wrk's lines: streams, events and their data, the time to the first event; then,
    /// when any, what was refused.
    fn text(&self, _spoken: &Spoken, out: &mut String) {
        let first = match self.first_event.0.count {
            0 => "no first event".to_string(),
            _ => format!("first event {}", mean_max(&self.first_event.0)),
        };
        let _ = writeln!(
            out,
            "SSE: {} streams, {} ended, {} resumed with Last-Event-ID; {} events ({}B of data), {} comments, {} [DONE]; {first}",
            self.streams,
            self.ended,
            self.resumed,
            self.events,
            binary(self.data_bytes as f64),
            self.comments,
            self.done
        );
        let _ = writeln!(
            out,
            "SSE latency: each event's is the gap since the one before it on its stream (the first: since the request)"
        );
        if self.opening > 0 {
            let _ = writeln!(out, "SSE streams still opening at the end: {}", self.opening);
        }
        if !self.refused.is_empty() || self.not_event_stream > 0 {
            let _ = writeln!(
                out,
                "SSE streams refused: {}; not text/event-stream: {}",
                by_name(&self.refused),
                self.not_event_stream
            );
        }
    }

    fn figures(&self, spoken: &Spoken) -> Vec<Figure> {
        vec![
            ("protocol", "sse_protocol", spoken.protocol.clone()),
            ("streams (ended, resumed)", "sse_streams", {
                let g = |n: u64| grouped(n as f64, 0);
                format!("{} ({}, {})", g(self.streams), g(self.ended), g(self.resumed))
            }),
            ("refused, by status", "sse_refused", by_name(&self.refused)),
            ("still opening at the end", "sse_opening", grouped(self.opening as f64, 0)),
            ("not text/event-stream", "sse_not_event_stream", grouped(self.not_event_stream as f64, 0)),
            ("events (data)", "sse_events", format!("{} ({}B)", grouped(self.events as f64, 0), binary(self.data_bytes as f64))),
            ("comments", "sse_comments", grouped(self.comments as f64, 0)),
            ("[DONE] markers", "sse_done", grouped(self.done as f64, 0)),
            ("first event (mean, max)", "sse_first_event", count_mean_max(&self.first_event.0)),
        ]
    }

    fn said(&self) -> Option<String> {
        let refused = if self.refused.is_empty() { "none".to_string() } else { by_name(&self.refused) };
        Some(format!("{} streams; refused {refused}", grouped(self.streams as f64, 0)))
    }
}
