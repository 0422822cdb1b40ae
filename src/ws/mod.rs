//! WebSocket (RFC 6455): frames read and written in place, the opening handshake, and
//! permessage-deflate (RFC 7692). The engine's WebSocket transport and the origin's echo
//! server both speak it through this module.

pub mod deflate;
pub mod frame;
pub mod handshake;
