//! Flags of `strain grpc`: the method called, where its schema comes from, and the messages
//! sent. The rest of the command line is every protocol's ([`crate::cli::flags::ProtocolCmd`]).

use std::path::PathBuf;

use std::sync::Arc;

use clap::Args;

use super::origin::{GrpcConfig, GrpcService};
use crate::cli::unit::{OriginFlags, Shared};
use crate::cli::CliError;
use crate::grpc::status::Code;
use crate::origin::unit::Unit;

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

/// What `strain origin --grpc` adds.
#[derive(Debug, Args)]
#[command(next_help_heading = "gRPC")]
pub struct GrpcOriginFlags {
    /// Serve gRPC instead of HTTP over HTTP/2 (h2c, and h2 with --tls): the echo service
    /// strain.echo.v1.Echo (unary, server, client and bidi streaming; see echo.proto) with
    /// server reflection. --delay holds each reply; --status CODE:SHARE fails a share of calls.
    #[arg(long = "grpc", conflicts_with_all = REFUSES)]
    pub grpc: bool,
    /// With --grpc: serve no reflection (its calls get UNIMPLEMENTED, as for an unknown method).
    #[arg(long = "no-reflection", requires = "grpc")]
    pub no_reflection: bool,
}

/// What `origin --grpc` refuses: a recording, HTTP/3, and the flags that shape the fixed
/// response or documents, which gRPC calls do not get.
const REFUSES: [&str; 8] =
    ["replay", "http3", "body_size", "max_age", "no_cache", "ims_not_modified", "abort_rate", "content_type"];

impl OriginFlags for GrpcOriginFlags {
    fn unit(self, shared: &Shared) -> Result<Option<Arc<dyn Unit>>, CliError> {
        let usage = |msg: String| Err(CliError::Usage(msg));
        if !self.grpc {
            if shared.status_shares().next().is_some() {
                return usage("--status CODE:SHARE needs --grpc".into());
            }
            return Ok(None);
        }
        if let Some(code) = shared.status_codes().next() {
            return usage(format!(
                "with --grpc, --status is CODE:SHARE (a gRPC status and its share of calls, e.g. UNAVAILABLE:0.05), not {code}"
            ));
        }
        let mut fail: Vec<(Code, f64)> = Vec::new();
        for (code, share) in shared.status_shares() {
            let code = status_code(code).map_err(CliError::Usage)?;
            if code == Code::Ok {
                return usage("--status OK:SHARE: give the statuses calls fail with; the rest end OK".into());
            }
            if fail.iter().any(|(c, _)| *c == code) {
                return usage(format!("--status gives {} twice", code.canonical()));
            }
            fail.push((code, share));
        }
        let total: f64 = fail.iter().map(|(_, s)| s).sum();
        if total > 1.0 + 1e-9 {
            return usage(format!("the --status shares sum to {total}, above 1"));
        }
        let config = GrpcConfig { reflection: !self.no_reflection, fail };
        let service = GrpcService::new(&config).map_err(|e| CliError::Usage(e.to_string()))?;
        Ok(Some(Arc::new(service)))
    }
}

/// A gRPC status by number (0 to 16) or by name, as gRPC writes it or in lower case.
fn status_code(text: &str) -> Result<Code, String> {
    let by_number = text.parse::<usize>().ok().and_then(|n| Code::ALL.get(n).copied());
    by_number
        .or_else(|| Code::from_name(&text.to_ascii_lowercase()))
        .ok_or_else(|| format!("'{text}' is not a gRPC status (0 to 16, or a name such as UNAVAILABLE)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_a_number_or_a_name() {
        let rows = [
            ("5", Some(Code::NotFound)),
            ("UNAVAILABLE", Some(Code::Unavailable)),
            ("deadline_exceeded", Some(Code::DeadlineExceeded)),
            ("17", None),
            ("NOPE", None),
        ];
        for (text, want) in rows {
            assert_eq!(status_code(text).ok(), want, "{text}");
        }
    }
}
