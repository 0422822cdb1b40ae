//! Flags of `strain grpc`: the method called, where its schema comes from, and the messages
//! sent.

use std::path::PathBuf;

use clap::Args;

use super::{ConnectFlags, RunFlags};
use crate::cli::units::{self, Dur};

/// Flags of `strain grpc`: a run, or (as a subcommand) a capacity search or an A/B
/// comparison of the same calls.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct GrpcFlags {
    /// A capacity search or an A/B comparison instead of one run.
    #[command(subcommand)]
    pub mode: Option<GrpcMode>,
    /// The method, its schema, and the messages sent.
    #[command(flatten)]
    pub call: CallFlags,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// Calls in flight per connection.
    #[command(flatten)]
    pub streams: super::StreamsFlag,
    /// Duration, -n, -R, stages; segments, text, progress, thresholds, result files, metrics.
    #[command(flatten)]
    pub run: RunFlags,
    /// The server: http://host:port (h2c) or https://host:port (h2 over TLS).
    #[arg(value_name = "URL", required = true)]
    pub url: Option<String>,
}

/// What `strain grpc` runs besides one load.
#[derive(Debug, clap::Subcommand)]
pub enum GrpcMode {
    /// Find the highest call rate the service sustains under its SLO (a capacity search).
    #[command(name = "find-max")]
    FindMax(Box<GrpcFindMaxFlags>),
    /// Is the new build slower? Run the same calls against URL_A and URL_B, interleaved.
    Compare(Box<GrpcCompareFlags>),
}

/// Flags of `strain grpc find-max`.
#[derive(Debug, Args)]
pub struct GrpcFindMaxFlags {
    /// The method, its schema, and the messages sent.
    #[command(flatten)]
    pub call: CallFlags,
    /// The SLO, the rates tried, each step's length.
    #[command(flatten)]
    pub search: super::FindMaxOptions,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// Calls in flight per connection.
    #[command(flatten)]
    pub streams: super::StreamsFlag,
    /// JSON and HTML of the search.
    #[command(flatten)]
    pub files: super::ResultFiles,
    /// Live metrics for Prometheus.
    #[command(flatten)]
    pub metrics: super::MetricsFlags,
    /// The server.
    #[arg(value_name = "URL")]
    pub url: String,
}

/// Flags of `strain grpc compare`.
#[derive(Debug, Args)]
pub struct GrpcCompareFlags {
    /// The method, its schema, and the messages sent.
    #[command(flatten)]
    pub call: CallFlags,
    /// Rounds, warm-up, preparation commands.
    #[command(flatten)]
    pub runner: super::RunnerFlags,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// Calls in flight per connection.
    #[command(flatten)]
    pub streams: super::StreamsFlag,
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

/// The called method, its schema and the messages: every `strain grpc` mode takes them.
#[derive(Debug, Args)]
pub struct CallFlags {
    /// The method to call: pkg.Service/Method (or pkg.Service.Method).
    // An Option only so that `strain grpc <COMMAND>` reads: each mode requires it.
    #[arg(long = "call", value_name = "METHOD", required = true)]
    pub call: Option<String>,
    /// A .proto file with the service (repeatable), compiled at start (no protoc needed).
    #[arg(long = "proto", value_name = "FILE")]
    pub protos: Vec<PathBuf>,
    /// Where the .proto files' imports are looked for (repeatable; the files' own folders are
    /// searched too).
    #[arg(long = "import-path", value_name = "DIR")]
    pub import_paths: Vec<PathBuf>,
    /// A compiled FileDescriptorSet (protoc --descriptor_set_out --include_imports).
    #[arg(long = "protoset", value_name = "FILE", conflicts_with = "protos")]
    pub protoset: Option<PathBuf>,
    /// The request message in protobuf's JSON mapping; an array is sent round-robin. String
    /// fields may hold templates, filled per call: {{uuid}}, {{rand:N}}, {{now}}, {{unix_ms}},
    /// and the call's number, {{ n }}.
    #[arg(short = 'D', long = "data", value_name = "JSON")]
    pub data: Option<String>,
    /// Request messages, one JSON message per line, sent round-robin.
    #[arg(long = "data-file", value_name = "FILE", conflicts_with = "data")]
    pub data_file: Option<PathBuf>,
    /// Request messages in binary, each prefixed with its length as a varint (protobuf's
    /// delimited form), sent round-robin.
    #[arg(long = "data-bin", value_name = "FILE", conflicts_with_all = ["data", "data_file"])]
    pub data_bin: Option<PathBuf>,
    /// Send this metadata with every call, "key: value" (repeatable).
    #[arg(short = 'M', long = "metadata", value_name = "KV")]
    pub metadata: Vec<String>,
    /// Each call's deadline, sent as grpc-timeout (the server gives up after it).
    #[arg(long = "deadline", value_name = "T", value_parser = units::dur)]
    pub deadline: Option<Dur>,
    /// Count an OK answer whose messages do not decode as the method's output type as an error.
    #[arg(long = "check")]
    pub check: bool,
    /// Compress each request message with gzip (sent with grpc-encoding) and offer gzip for the
    /// replies (grpc-accept-encoding). A reply compressed unasked is read either way.
    #[arg(long = "compress", value_name = "ENCODING", value_parser = ["gzip", "identity"])]
    pub compress: Option<String>,
    /// Client-streaming and bidi calls: messages per second each stream sends, on an absolute
    /// schedule (each reply's latency runs from its message's due time) [default: a bidi
    /// stream sends its next message when a reply arrives; a client stream sends all at once].
    #[arg(long = "stream-rate", value_name = "N", value_parser = units::rate)]
    pub stream_rate: Option<f64>,
    /// Client-streaming and bidi calls: messages each stream sends, then it ends [default: 10
    /// without --stream-duration].
    #[arg(long = "stream-messages", value_name = "N", value_parser = units::count)]
    pub stream_messages: Option<usize>,
    /// Client-streaming and bidi calls: how long each stream sends, then it ends.
    #[arg(long = "stream-duration", value_name = "T", value_parser = units::dur)]
    pub stream_duration: Option<Dur>,
}
