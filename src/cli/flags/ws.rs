//! Flags of `strain ws`: the message sent, what the upgrade offers, and what happens to a lost
//! connection.

use std::path::PathBuf;

use clap::Args;

use super::{ConnectFlags, RunFlags};

/// Flags of `strain ws`: one load of WebSocket messages, or (as a subcommand) a capacity
/// search or an A/B comparison of the same messages.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct WsFlags {
    /// A capacity search or an A/B comparison instead of one run.
    #[command(subcommand)]
    pub mode: Option<WsMode>,
    /// The message and the upgrade.
    #[command(flatten)]
    pub ws: WsMessageFlags,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// Duration, -n, -R (messages per second in total), stages; text, progress, thresholds,
    /// result files, metrics.
    #[command(flatten)]
    pub run: RunFlags,
    /// The server: ws://host:port/path or wss://host:port/path.
    #[arg(value_name = "URL", required = true)]
    pub url: Option<String>,
}

/// What `strain ws` runs besides one load.
#[derive(Debug, clap::Subcommand)]
pub enum WsMode {
    /// Find the highest message rate the server sustains under its SLO (a capacity search).
    #[command(name = "find-max")]
    FindMax(Box<WsFindMaxFlags>),
    /// Is the new build slower? Send the same messages to URL_A and URL_B, interleaved.
    Compare(Box<WsCompareFlags>),
}

/// Flags of `strain ws find-max`.
#[derive(Debug, Args)]
pub struct WsFindMaxFlags {
    /// The message and the upgrade.
    #[command(flatten)]
    pub ws: WsMessageFlags,
    /// The SLO, the rates tried, each step's length.
    #[command(flatten)]
    pub search: super::FindMaxOptions,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// JSON and HTML of the search.
    #[command(flatten)]
    pub files: super::ResultFiles,
    /// Live metrics for Prometheus.
    #[command(flatten)]
    pub metrics: super::MetricsFlags,
    /// The server: ws://host:port/path or wss://host:port/path.
    #[arg(value_name = "URL")]
    pub url: String,
}

/// Flags of `strain ws compare`.
#[derive(Debug, Args)]
pub struct WsCompareFlags {
    /// The message and the upgrade.
    #[command(flatten)]
    pub ws: WsMessageFlags,
    /// Rounds, warm-up, preparation commands.
    #[command(flatten)]
    pub runner: super::RunnerFlags,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// Duration and rate of each run.
    #[command(flatten)]
    pub length: super::LengthFlags,
    /// JSON and HTML of the comparison.
    #[command(flatten)]
    pub files: super::ResultFiles,
    /// Fail (exit 98) when B is slower than A by more than this many percent.
    #[arg(long = "fail-on-regression", value_name = "PCT", default_value_t = crate::defaults::FAIL_ON_REGRESSION_PCT)]
    pub fail_on_regression: f64,
    /// The base build's server.
    #[arg(value_name = "URL_A")]
    pub a: String,
    /// The new build's server.
    #[arg(value_name = "URL_B")]
    pub b: String,
}

/// What each connection's upgrade asks for and what each message is.
#[derive(Debug, Args)]
pub struct WsMessageFlags {
    /// Send this text as every message (default: "strain").
    #[arg(long = "message", value_name = "TEXT", conflicts_with_all = ["message_file", "message_size"])]
    pub message: Option<String>,
    /// Send this file's bytes as every message, in a binary frame.
    #[arg(long = "message-file", value_name = "FILE", conflicts_with = "message_size")]
    pub message_file: Option<PathBuf>,
    /// Send N bytes as every message, in a binary frame.
    #[arg(long = "message-size", value_name = "BYTES", value_parser = crate::cli::units::count)]
    pub message_size: Option<usize>,
    /// Offer this subprotocol in the upgrade (repeatable); the server must choose one.
    #[arg(long = "subprotocol", value_name = "NAME")]
    pub subprotocols: Vec<String>,
    /// Offer permessage-deflate: where the server agrees, messages go compressed.
    #[arg(long = "deflate")]
    pub deflate: bool,
    /// Do not replace a connection the server closed or lost (the default replaces it).
    #[arg(long = "no-reconnect")]
    pub no_reconnect: bool,
    /// Messages per second on each connection, on an absolute schedule (-R N x connections in
    /// total; one message is in flight per connection, so a rate above one per echo time is
    /// counted late).
    #[arg(long = "rate-per-conn", value_name = "N", value_parser = crate::cli::units::rate)]
    pub rate_per_conn: Option<f64>,
    /// Open connections at N per second (all at once by default); replacements too.
    #[arg(long = "connect-rate", value_name = "N", value_parser = crate::cli::units::rate)]
    pub connect_rate: Option<f64>,
    /// Ping every connection every T and measure the pong's round trip.
    #[arg(long = "ping", value_name = "T", value_parser = crate::cli::units::dur)]
    pub ping: Option<crate::cli::units::Dur>,
    /// Put an id in each message (16 hex digits and a space before the payload) and take only
    /// a message that starts with it as its answer: for servers that also send other messages
    /// (chat rooms, fan-out), which are counted as unsolicited.
    #[arg(long = "match", conflicts_with_all = ["deflate", "listen_only"])]
    pub match_ids: bool,
    /// Send nothing: hold the connections and count what the server sends (push, fan-out);
    /// each message's latency is the gap since the one before it on its connection, and a gap
    /// longer than --timeout counts as a timeout.
    #[arg(long = "listen-only", conflicts_with_all = ["message", "message_file", "message_size", "rate_per_conn"])]
    pub listen_only: bool,
    /// Add a header to the upgrade request, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "H")]
    pub headers: Vec<String>,
}
