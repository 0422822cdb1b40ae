//! HTTP/2, shared by the load engine and the origin: sessions through nghttp2
//! ([`session`]), the sans-IO C library h2load is built on, so framing, HPACK, flow control
//! and the protocol's error handling are nghttp2's and strain owns only the I/O around them.

mod body;
mod callbacks;
mod events;
mod nv;
mod pipe;
pub mod session;

pub use session::{code_name, code_of, Body, Event, Fields, H2Error, RequestHead, Session, Settings, Source};
