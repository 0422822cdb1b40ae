//! gRPC over strain's HTTP/2 (issue 32, being built): [`wire`] is the message framing (the
//! 5-byte length prefix) and `grpc-timeout`, [`status`] the status codes carried in the
//! `grpc-status` trailer, [`answer`] a response judged as a gRPC answer, [`call`] a run's
//! calls, [`reflection`] the server reflection protocol's messages, [`echo`] strain's own
//! service (the origin's `--grpc`). [`schema`] settles the descriptors a run speaks
//! (`--proto`, `--protoset` or a server's reflection) and finds the called method in them;
//! [`message`] reads the request messages ([`json`], [`template`]) and [`encode`] writes them.

pub mod answer;
pub mod call;
pub mod echo;
pub mod encode;
#[cfg(test)]
mod fixture;
pub mod json;
pub mod message;
pub mod reflection;
pub mod schema;
pub mod status;
pub mod template;
pub mod wire;
