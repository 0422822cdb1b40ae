//! What a session tells its owner: the [`Event`]s on its streams, the request heads the server
//! side received, and the [`Inbox`] nghttp2's callbacks fill (plain data, shared by the
//! callbacks, which write it, and the session, which drains it).

use crate::ids::{IdMap, IdSet};

use super::body::Body;
use super::pipe::Pipe;
use crate::http::response::Captured;

pub use super::nv::Fields;

/// A request as the server side received it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestHead {
    /// `:method`.
    pub method: Vec<u8>,
    /// `:path`.
    pub path: Vec<u8>,
    /// `:authority`.
    pub authority: Vec<u8>,
    /// The regular header fields, lowercase names.
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
}

impl RequestHead {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice())
    }
}

/// What happened on the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Client: the final response status of `stream` (1xx responses are skipped).
    Status {
        /// The stream.
        stream: i32,
        /// The status code.
        status: u16,
    },
    /// DATA arrived on `stream`.
    Data {
        /// The stream.
        stream: i32,
        /// Bytes of body.
        len: usize,
    },
    /// `stream` is closed: `code` 0 when it completed, else the RST_STREAM (or GOAWAY) code.
    Closed {
        /// The stream.
        stream: i32,
        /// HTTP/2 error code.
        code: u32,
    },
    /// The peer will take no stream above `last_stream`.
    GoAway {
        /// The last stream the peer processes.
        last_stream: i32,
        /// Why.
        code: u32,
    },
    /// Server: a complete request on `stream` (its body, if any, was counted and dropped).
    Request {
        /// The stream.
        stream: i32,
        /// Method, path, authority and headers.
        head: RequestHead,
    },
    /// Server, streamed: the headers of a request on `stream`, its body still to come (see
    /// [`Session::set_streamed`](super::Session::set_streamed)).
    Head {
        /// The stream.
        stream: i32,
        /// Method, path, authority and headers.
        head: RequestHead,
    },
    /// Streamed: a piece of `stream`'s body as it arrived (a request's on the server, a
    /// response's on the client, which then gets no [`Event::Data`]).
    Body {
        /// The stream.
        stream: i32,
        /// The bytes of one DATA frame.
        data: Vec<u8>,
    },
    /// Client, streamed: a header block of `stream`'s response, its headers or its trailers
    /// (the pseudo-headers aside: `:status` comes as [`Event::Status`]).
    Fields {
        /// The stream.
        stream: i32,
        /// The block's fields.
        fields: Fields,
    },
    /// Streamed: the peer has ended its side of `stream` (END_STREAM); on the server the
    /// response may still be under way.
    End {
        /// The stream.
        stream: i32,
    },
}

/// Most header bytes the server side keeps of one request (name + value sums): beyond it the
/// stream is reset, so a peer cannot grow memory with endless headers.
pub(super) const MAX_REQUEST_HEADER_BYTES: usize = 64 * 1024;

/// What the callbacks leave for the session's owner.
#[derive(Debug, Default)]
pub struct Inbox {
    /// Events in the order they happened; the owner drains them.
    pub events: Vec<Event>,
    /// Header block bytes received in HEADERS frames (compressed), for the savings figure.
    pub header_frame_bytes: u64,
    /// The same headers decoded: name and value lengths.
    pub header_bytes: u64,
    /// Request bodies still being sent, by stream: (stream, body, bytes sent).
    pub(super) bodies: Vec<(i32, Body, u64)>,
    /// Bodies pushed as they are made, by stream (see [`Pipe`]).
    pub(super) pipes: Vec<(i32, Pipe)>,
    /// Report streams as they arrive ([`Event::Head`], [`Event::Body`], [`Event::Fields`],
    /// [`Event::End`]) rather than as [`Event::Request`] and [`Event::Data`].
    pub(super) streamed: bool,
    /// Client, streamed: the fields of header blocks still arriving, by stream.
    pub(super) fields: IdMap<i32, Fields>,
    /// This side is the server.
    pub(super) server: bool,
    /// Server: requests whose headers are arriving.
    pub(super) partial: IdMap<i32, RequestHead>,
    /// Client: keep each response's headers and body (for a script's `response()` or a
    /// content check) until [`Session::take_captured`].
    pub(super) capture: bool,
    pub(super) captured: IdMap<i32, Captured>,
    /// The peer's SETTINGS arrived: it speaks HTTP/2 (every endpoint's first frame).
    pub peer_settings: bool,
    /// Streams whose body waited for the peer's flow-control window (counted once each).
    pub(super) stalled: IdSet<i32>,
    /// How many streams ever did.
    pub flow_stalls: u64,
}
