//! gRPC as a unit: its calls as a workload that judges its own answers (by `grpc-status` and
//! the messages), its counts (its section of a result), its command line and the origin's
//! echo service. Calls ride HTTP/2's transport, so it has no transport
//! of its own; its wire (schemas, messages, framing, status) is [`crate::grpc`].

pub mod calls;
pub mod counts;
pub mod cli;
pub mod flags;
pub mod origin;

use crate::stats::section::Kind;

/// `strain grpc`.
pub static COMMAND: crate::cli::unit::Command<flags::CallFlags, flags::GrpcOriginFlags> = crate::cli::unit::Command::new(
    "grpc",
    "Load a gRPC service: unary and streaming calls, results by gRPC status, latency corrected in rate mode (--call pkg.Service/Method URL)",
);

/// Its section of a result.
pub const KINDS: &[Kind] = &[Kind::of::<counts::GrpcSection>()];
