//! Flags of `strain grpc`: the method called, where its schema comes from, and the messages
//! sent. The rest of the command line is every protocol's ([`crate::cli::flags::ProtocolCmd`]).

use std::path::PathBuf;

use clap::Args;

use crate::cli::flags::{ProtocolCmd, ProtocolFlags, StreamsFlag};
use crate::cli::units::{self, Dur};

/// Flags of `strain grpc`: a run, or (as a subcommand) a capacity search or an A/B
/// comparison of the same calls.
pub type GrpcFlags = ProtocolCmd<CallFlags>;

impl ProtocolFlags for CallFlags {
    const URL_HELP: &'static str = "The server: http://host:port (h2c) or https://host:port (h2 over TLS)";
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
    /// Calls in flight per connection.
    #[command(flatten)]
    pub streams: StreamsFlag,
    /// Client-streaming and bidi calls: how long each stream sends, then it ends.
    #[arg(long = "stream-duration", value_name = "T", value_parser = units::dur)]
    pub stream_duration: Option<Dur>,
}
