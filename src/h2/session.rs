//! One HTTP/2 connection's protocol state, through nghttp2's sans-IO session: bytes read from
//! the socket go in with [`Session::receive`], bytes to write come out of [`Session::output`],
//! and what happened to streams comes out as [`Event`]s. No I/O and no clock here, so the same
//! session serves the load engine's event loop and the origin's.
//!
//! nghttp2 calls back into Rust while it parses and serializes; every callback only appends to
//! the session's [`Inbox`] (reached through nghttp2's `user_data` pointer), so no callback can
//! touch the session re-entrantly, and a panic cannot cross the C frames (nothing in them can
//! panic: they push to vectors, compare bytes, and fill a body's frame within its bounds). The
//! one exception, a pushed body's trailers submitted from the data callback, is a call nghttp2
//! documents as allowed there (see `callbacks.rs`).
//!
//! Requests and responses whose bodies are known when they are submitted take the plain paths
//! here; streams whose bodies are read or made over time (gRPC's) use the streamed mode and the
//! pushed bodies of `session/streamed.rs`, which the plain paths never touch.

use std::ffi::{c_int, c_void, CStr};

use libnghttp2_sys as ng;

pub use super::body::{Body, Source};
use super::callbacks::{on_begin_headers, on_data_chunk, on_frame_recv, on_header, on_stream_close, read_body};
pub use super::events::{Event, Fields, Inbox, RequestHead};
use super::nv::nv;
use crate::http::response::Captured;

/// Room for events a session keeps between reads (a few responses' worth).
const EVENTS_KEPT: usize = 64;

/// An HTTP/2 failure of the session as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("HTTP/2: {0}")]
pub struct H2Error(pub String);

impl H2Error {
    fn lib(code: i64) -> H2Error {
        // SAFETY: nghttp2_strerror returns a static NUL-terminated string for any code.
        let text = unsafe { CStr::from_ptr(ng::nghttp2_strerror(code as c_int)) };
        H2Error(text.to_string_lossy().into_owned())
    }
}

/// HTTP/2's error codes by value (RFC 9113 7), as reports and results name them.
const CODE_NAMES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// The name of an HTTP/2 error code (RST_STREAM, GOAWAY), for reports.
pub fn code_name(code: u32) -> &'static str {
    CODE_NAMES.get(code as usize).copied().unwrap_or("UNKNOWN")
}

/// The error code a report names `name`, if HTTP/2 defines it.
pub fn code_of(name: &str) -> Option<u32> {
    CODE_NAMES.iter().position(|n| *n == name).map(|c| c as u32)
}

/// Connection settings this side announces.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Streams the peer may open towards us at once.
    pub max_concurrent_streams: u32,
    /// Flow-control window of each stream and of the connection, bytes.
    pub window: u32,
}

impl Default for Settings {
    fn default() -> Self {
        // A load generator must never be the one that stalls the flow: the largest window
        // HTTP/2 allows (2^31 - 1), as h2load's default of 2^30 - 1 intends.
        Settings { max_concurrent_streams: 100, window: (1 << 31) - 1 }
    }
}

/// An nghttp2 session and its inbox.
pub struct Session {
    raw: *mut ng::nghttp2_session,
    inbox: Box<Inbox>,
    /// Reused for each submission's name-value array (pointers into the caller's fields,
    /// valid only during the call), so a request costs no allocation here.
    nva: Vec<ng::nghttp2_nv>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("inbox", &self.inbox).finish()
    }
}

// SAFETY: a session is used by one thread at a time (it is `!Sync`: every method takes `&mut`
// or reads through the owner), nghttp2 keeps no thread-local state, and the inbox and name-value
// scratch it points into move with it. Moving one between threads (an origin worker built
// before its thread starts) is therefore sound.
unsafe impl Send for Session {}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: `raw` came from nghttp2_session_*_new and is deleted exactly once.
        unsafe { ng::nghttp2_session_del(self.raw) }
    }
}

impl Session {
    /// A client session; its connection preface and SETTINGS are queued for [`Session::output`].
    pub fn client(settings: Settings) -> Result<Session, H2Error> {
        Session::new(false, settings)
    }

    /// A server session; its SETTINGS are queued for [`Session::output`].
    pub fn server(settings: Settings) -> Result<Session, H2Error> {
        Session::new(true, settings)
    }

    /// A server session for a connection upgraded from HTTP/1.1 (h2c): `http2_settings` is the
    /// request's decoded `HTTP2-Settings`, and the request itself becomes stream 1, half
    /// closed, to be answered with [`Session::submit_response`]; `head` if it was a HEAD.
    pub fn server_upgrade(settings: Settings, http2_settings: &[u8], head: bool) -> Result<Session, H2Error> {
        let session = Session::new(true, settings)?;
        // SAFETY: a valid session; the payload is valid for the call (nghttp2 parses it into
        // the remote settings and keeps no pointer); no stream user data.
        let rv = unsafe {
            ng::nghttp2_session_upgrade2(
                session.raw,
                http2_settings.as_ptr(),
                http2_settings.len(),
                c_int::from(head),
                std::ptr::null_mut(),
            )
        };
        check(rv.into())?;
        Ok(session)
    }

    fn new(server: bool, settings: Settings) -> Result<Session, H2Error> {
        let mut inbox = Box::new(Inbox { server, ..Inbox::default() });
        let mut callbacks: *mut ng::nghttp2_session_callbacks = std::ptr::null_mut();
        let mut raw: *mut ng::nghttp2_session = std::ptr::null_mut();
        // SAFETY: plain constructor calls; every pointer passed is valid for the call, the
        // callbacks struct is freed after the session copied it, and `inbox` is boxed so the
        // user_data pointer stays valid for the session's life (the box moves with Session,
        // its heap allocation does not).
        unsafe {
            let rv = ng::nghttp2_session_callbacks_new(&mut callbacks);
            if rv != 0 {
                return Err(H2Error::lib(rv.into()));
            }
            ng::nghttp2_session_callbacks_set_on_header_callback(callbacks, Some(on_header));
            ng::nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, Some(on_begin_headers));
            ng::nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Some(on_frame_recv));
            ng::nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Some(on_data_chunk));
            ng::nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Some(on_stream_close));
            let user = (&mut *inbox as *mut Inbox).cast::<c_void>();
            let rv = if server {
                ng::nghttp2_session_server_new(&mut raw, callbacks, user)
            } else {
                ng::nghttp2_session_client_new(&mut raw, callbacks, user)
            };
            ng::nghttp2_session_callbacks_del(callbacks);
            if rv != 0 {
                return Err(H2Error::lib(rv.into()));
            }
        }
        let session = Session { raw, inbox, nva: Vec::new() };
        let entries = [
            ng::nghttp2_settings_entry {
                settings_id: ng::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS as i32,
                value: settings.max_concurrent_streams,
            },
            ng::nghttp2_settings_entry {
                settings_id: ng::NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE as i32,
                value: settings.window,
            },
            ng::nghttp2_settings_entry { settings_id: ng::NGHTTP2_SETTINGS_ENABLE_PUSH as i32, value: 0 },
        ];
        let entries = if server { &entries[..2] } else { &entries[..] };
        // SAFETY: `entries` outlives the call; nghttp2 copies them.
        let rv = unsafe {
            ng::nghttp2_submit_settings(session.raw, ng::NGHTTP2_FLAG_NONE as u8, entries.as_ptr(), entries.len())
        };
        check(rv.into())?;
        // SAFETY: a valid session; stream 0 is the connection.
        let rv = unsafe {
            ng::nghttp2_session_set_local_window_size(
                session.raw,
                ng::NGHTTP2_FLAG_NONE as u8,
                0,
                settings.window as i32,
            )
        };
        check(rv.into())?;
        Ok(session)
    }

    /// Queues a request; returns its stream id. `fields` are (name, value) pairs, pseudo-headers
    /// (`:method`, `:scheme`, `:authority`, `:path`) first, names lowercase.
    pub fn submit_request<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        fields: &[(N, V)],
        body: Option<Vec<u8>>,
    ) -> Result<i32, H2Error> {
        let nva = nv(fields, &mut self.nva);
        let provider = body.as_ref().map(|_| ng::nghttp2_data_provider2 {
            source: ng::nghttp2_data_source { ptr: std::ptr::null_mut() },
            read_callback: Some(read_body),
        });
        let prd = provider.as_ref().map_or(std::ptr::null(), |p| p as *const _);
        // SAFETY: `nva` points into `fields`, which outlive the call (nghttp2 copies names and
        // values); `prd` is null or points to `provider`, copied by nghttp2.
        let id = unsafe {
            ng::nghttp2_submit_request2(self.raw, std::ptr::null(), nva.as_ptr(), nva.len(), prd, std::ptr::null_mut())
        };
        if id < 0 {
            return Err(H2Error::lib(id.into()));
        }
        if let Some(b) = body {
            self.inbox.bodies.push((id, Body::Owned(b), 0));
        }
        Ok(id)
    }

    /// Server: queues the response to `stream`. An empty body ends the stream with the
    /// headers (one HEADERS frame with END_STREAM: gRPC's Trailers-Only response).
    pub fn submit_response<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        stream: i32,
        fields: &[(N, V)],
        body: impl Into<Body>,
    ) -> Result<(), H2Error> {
        let body = body.into();
        let nva = nv(fields, &mut self.nva);
        let provider = ng::nghttp2_data_provider2 {
            source: ng::nghttp2_data_source { ptr: std::ptr::null_mut() },
            read_callback: Some(read_body),
        };
        let prd = if body.len() == 0 { std::ptr::null() } else { &provider as *const _ };
        // SAFETY: as in `submit_request`.
        let rv = unsafe { ng::nghttp2_submit_response2(self.raw, stream, nva.as_ptr(), nva.len(), prd) };
        check(rv.into())?;
        if body.len() != 0 {
            self.inbox.bodies.push((stream, body, 0));
        }
        Ok(())
    }

    /// Resets `stream` with `code` (a timeout: CANCEL).
    pub fn reset(&mut self, stream: i32, code: u32) {
        // SAFETY: a valid session; an unknown stream is an error nghttp2 reports, not UB.
        unsafe { ng::nghttp2_submit_rst_stream(self.raw, ng::NGHTTP2_FLAG_NONE as u8, stream, code) };
    }

    /// Server: queues a GOAWAY that lets the peer's streams up to `last_stream` finish and
    /// refuses the rest (a keep-alive limit reached at `last_stream`).
    pub fn go_away_after(&mut self, last_stream: i32, code: u32) {
        // SAFETY: a valid session; nghttp2 checks `last_stream` against the streams it knows.
        unsafe {
            ng::nghttp2_submit_goaway(self.raw, ng::NGHTTP2_FLAG_NONE as u8, last_stream, code, std::ptr::null(), 0);
        }
    }

    /// Takes bytes read from the socket; events land in [`Session::events`].
    pub fn receive(&mut self, mut data: &[u8]) -> Result<(), H2Error> {
        while !data.is_empty() {
            // SAFETY: `data` is valid for its length during the call; callbacks only touch the
            // boxed inbox.
            let n = unsafe { ng::nghttp2_session_mem_recv2(self.raw, data.as_ptr(), data.len()) };
            if n < 0 {
                return Err(H2Error::lib(n as i64));
            }
            data = &data[(n as usize).min(data.len())..];
            if n == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Appends every byte the session has to send to `out`.
    pub fn output(&mut self, out: &mut Vec<u8>) -> Result<(), H2Error> {
        self.output_upto(out, usize::MAX)
    }

    /// Appends what the session has to send to `out`, stopping once `out` holds `limit`
    /// bytes or more, so a large body is produced as the socket takes it, not all at once.
    pub fn output_upto(&mut self, out: &mut Vec<u8>, limit: usize) -> Result<(), H2Error> {
        while out.len() < limit {
            let mut ptr: *const u8 = std::ptr::null();
            // SAFETY: nghttp2 sets `ptr` to its own buffer of `n` bytes, valid until the next
            // call on the session; it is copied out before that.
            let n = unsafe { ng::nghttp2_session_mem_send2(self.raw, &mut ptr) };
            if n < 0 {
                return Err(H2Error::lib(n as i64));
            }
            if n == 0 || ptr.is_null() {
                break;
            }
            // SAFETY: see above.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, n as usize) });
        }
        self.note_stalls();
        Ok(())
    }

    /// Counts the streams whose body is held back by the peer's flow-control window (the
    /// connection's or the stream's) after the session produced all it could.
    fn note_stalls(&mut self) {
        if self.inbox.bodies.is_empty() {
            return;
        }
        // SAFETY: a valid session; unknown streams give an error value, read as not stalled.
        let connection = unsafe { ng::nghttp2_session_get_remote_window_size(self.raw) };
        let inbox = &mut *self.inbox;
        for (stream, body, sent) in &inbox.bodies {
            if *sent >= body.len() || inbox.stalled.contains(stream) {
                continue;
            }
            // SAFETY: as above.
            let window = unsafe { ng::nghttp2_session_get_stream_remote_window_size(self.raw, *stream) };
            if connection <= 0 || window <= 0 {
                inbox.stalled.insert(*stream);
                inbox.flow_stalls += 1;
            }
        }
    }

    /// Whether the peer has sent its SETTINGS, i.e. speaks HTTP/2.
    pub fn peer_spoke(&self) -> bool {
        self.inbox.peer_settings
    }

    /// Streams whose body waited for the peer's flow-control window, so far.
    pub fn flow_stalls(&self) -> u64 {
        self.inbox.flow_stalls
    }

    /// Whether the session has bytes to send (a body held back by `limit` in
    /// [`Session::output_upto`], a frame queued since).
    pub fn wants_write(&self) -> bool {
        // SAFETY: a valid session.
        unsafe { ng::nghttp2_session_want_write(self.raw) != 0 }
    }

    /// Client: keep responses whole from now on (see [`Session::take_captured`]).
    pub fn set_capture(&mut self, on: bool) {
        self.inbox.capture = on;
    }

    /// The headers and body `stream` received, when capturing (once, after it closed).
    pub fn take_captured(&mut self, stream: i32) -> Option<Captured> {
        self.inbox.captured.remove(&stream)
    }

    /// Events since the last drain.
    pub fn events(&mut self) -> &mut Vec<Event> {
        &mut self.inbox.events
    }

    /// Moves the events since the last drain onto the end of `into`; the session keeps room
    /// for [`EVENTS_KEPT`] of them, not for the thousands of frames of a read after a server's
    /// stall, which each of a run's sessions would otherwise hold for the rest of the run
    /// (a long run's RSS rose by steps at each stall: issue 33's soaks).
    pub fn move_events(&mut self, into: &mut Vec<Event>) {
        let events = &mut self.inbox.events;
        into.append(events);
        if events.capacity() > EVENTS_KEPT {
            events.shrink_to(EVENTS_KEPT);
        }
    }

    /// Compressed and decoded header bytes received so far.
    pub fn header_bytes(&self) -> (u64, u64) {
        (self.inbox.header_frame_bytes, self.inbox.header_bytes)
    }

    /// Whether the session is finished (GOAWAY exchanged and no stream left, or failed).
    pub fn is_done(&self) -> bool {
        // SAFETY: a valid session.
        unsafe { ng::nghttp2_session_want_read(self.raw) == 0 && ng::nghttp2_session_want_write(self.raw) == 0 }
    }
}

fn check(rv: i64) -> Result<(), H2Error> {
    if rv < 0 {
        Err(H2Error::lib(rv))
    } else {
        Ok(())
    }
}

mod streamed;
#[cfg(test)]
mod tests;
