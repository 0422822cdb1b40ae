//! Flags of `strain sse`: the request that starts each stream and what happens when a stream
//! ends (the rest of the command line is every protocol's, [`crate::cli::flags::ProtocolCmd`]);
//! and the flags `strain origin --sse` adds.

use std::path::PathBuf;

use clap::Args;

use crate::cli::flags::ProtocolFlags;
use crate::cli::unit::OriginFlags;
use crate::cli::{units, CliError};
use crate::origin::unit::Unit;

impl ProtocolFlags for SseFlags {
    const URL_HELP: &'static str = "The stream: http://host:port/path or https://host:port/path";

    /// `-n`, `-R` and `--stages` count and start streams; the rate mode's tick does nothing here.
    fn adjust(cmd: clap::Command) -> clap::Command {
        cmd.mut_arg("requests", |a| {
            a.help("Start exactly N streams in all, then end when the last one ends (or at -d, whichever comes first)")
        })
        .mut_arg("rate", |a| {
            a.help("Start this many streams per second in total, each on a connection of its own (one due with all -c held is dropped and counted)")
        })
        .mut_arg("stages", |a| {
            a.help("Streams started per second in stages \"DURATION:RATE,...\": each ramps linearly from the previous rate (or -R, or 0) to its own; the test lasts their sum")
        })
        .mut_arg("tick", |a| a.hide(true))
    }
}

/// What starts each stream. `-n` counts streams and `-R` starts that many per second.
#[derive(Debug, Args)]
pub struct SseFlags {
    /// The request's method (POST for a chat completion that streams its answer).
    #[arg(short = 'X', long = "method", value_name = "M", default_value = "GET")]
    pub method: String,
    /// Send this as the request's body (with POST), e.g. a chat completion's JSON.
    #[arg(long = "body", value_name = "TEXT", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Send this file's bytes as the request's body.
    #[arg(long = "body-file", value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Add a header to each stream's request, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "H")]
    pub headers: Vec<String>,
    /// Do not start again a stream the server ended (the default starts it again after its
    /// retry:, with Last-Event-ID).
    #[arg(long = "no-reconnect")]
    pub no_reconnect: bool,
}

/// What `strain origin --sse` adds.
#[derive(Debug, Args)]
#[command(next_help_heading = "Server-Sent Events")]
pub struct SseOriginFlags {
    /// Serve Server-Sent Events: a request that accepts text/event-stream gets a stream of N
    /// events per second ("id: SEQ", "data: event SEQ"), after --delay; Last-Event-ID resumes
    /// after that id. Other requests are served as without it.
    #[arg(long = "sse", value_name = "N", value_parser = units::rate, conflicts_with_all = ["grpc", "replay"])]
    pub sse: Option<f64>,
    /// With --sse: end each stream after N events (0: never).
    #[arg(long = "sse-events", value_name = "N", requires = "sse")]
    pub sse_events: Option<u64>,
    /// With --sse: tell clients to wait MS milliseconds before starting an ended stream again
    /// (retry:).
    #[arg(long = "sse-retry", value_name = "MS", requires = "sse")]
    pub sse_retry: Option<u64>,
    /// With --sse: each event's data, in bytes (at least its "event SEQ").
    #[arg(long = "sse-size", value_name = "BYTES", value_parser = units::count, requires = "sse")]
    pub sse_size: Option<usize>,
}

impl OriginFlags for SseOriginFlags {
    fn unit(self, _shared: &crate::cli::unit::Shared) -> Result<Option<std::sync::Arc<dyn Unit>>, CliError> {
        let Some(per_s) = self.sse else { return Ok(None) };
        if per_s <= 0.0 {
            return Err(CliError::Usage("--sse gives events per second per stream: above 0".into()));
        }
        Ok(Some(std::sync::Arc::new(super::origin::SseConfig {
            per_s,
            events: self.sse_events.unwrap_or(0),
            retry_ms: self.sse_retry,
            size: self.sse_size.unwrap_or(0),
        })))
    }
}
