//! gRPC over strain's HTTP/2 (issue 32, being built): [`wire`] is the message framing (the
//! 5-byte length prefix) and `grpc-timeout`, [`status`] the status codes carried in the
//! `grpc-status` trailer, [`answer`] a response judged as a gRPC answer, [`call`] a run's
//! calls, [`reflection`] the server reflection protocol's messages, [`echo`] strain's own
//! service (the origin's `--grpc`).

pub mod answer;
pub mod call;
pub mod echo;
pub mod message;
pub mod reflection;
pub mod status;
pub mod wire;
