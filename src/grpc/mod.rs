//! gRPC over strain's HTTP/2 (issue 32, being built): [`wire`] is the message framing (the
//! 5-byte length prefix) and `grpc-timeout`, [`status`] the status codes carried in the
//! `grpc-status` trailer, [`reflection`] the server reflection protocol's messages, [`echo`]
//! strain's own service (the origin's `--grpc`).

pub mod echo;
pub mod reflection;
pub mod status;
pub mod wire;
