//! gRPC over strain's HTTP/2 (issue 32, being built): [`wire`] is the message framing (the
//! 5-byte length prefix) and `grpc-timeout`, [`status`] the status codes carried in the
//! `grpc-status` trailer, [`reflection`] the server reflection protocol's messages. [`schema`]
//! settles the descriptors a run speaks (`--proto`, `--protoset` or a server's reflection) and
//! finds the called method in them.

pub mod encode;
#[cfg(test)]
mod fixture;
pub mod json;
pub mod message;
pub mod reflect;
pub mod reflection;
pub mod schema;
pub mod status;
pub mod template;
pub mod wire;
