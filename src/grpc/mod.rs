//! gRPC over strain's HTTP/2. The wire: [`wire`] is the message framing (the 5-byte length
//! prefix) and `grpc-timeout`, [`status`] the status codes carried in the `grpc-status`
//! trailer, [`answer`] a response judged as a gRPC answer. The schema, settled before any load:
//! [`schema`] compiles `--proto` files, reads a `--protoset` or a server's reflection answers
//! into a descriptor pool (files in protobuf editions lowered by [`editions`]) and finds the
//! called method in it; [`reflect`] asks a server for those
//! answers over the protocol whose messages [`reflection`] defines. The requests, also loaded
//! before any load: [`message`] holds the messages a run sends (from `--data` JSON via [`json`],
//! JSON lines or delimited binary), each encoded once, or in pieces when its strings hold
//! [`template`] placeholders, so a call re-encodes only those; [`call`] makes them a run's calls.
//! [`echo`] is strain's own service (the origin's `--grpc`).

pub mod answer;
pub mod call;
pub mod counts;
pub mod echo;
pub mod editions;
mod encode;
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
