//! nghttp2's callbacks into Rust. Each one only appends to the session's [`Inbox`] (reached
//! through nghttp2's `user_data` pointer) or fills a body's frame within its bounds, so none
//! can touch the session re-entrantly and none can panic across the C frames. The one call
//! back into nghttp2 is a pushed body's trailers, submitted from the data callback as nghttp2
//! documents it may be: only there is it known that the last DATA frame has been made.

use std::ffi::{c_int, c_void};

use libnghttp2_sys as ng;

use super::events::{Event, Inbox, RequestHead, MAX_REQUEST_HEADER_BYTES};
use super::nv::nv;
use super::pipe::End;

/// The inbox behind nghttp2's `user_data`.
///
/// # Safety
/// `user` must be the pointer given at session creation: a live, exclusively used `Inbox`.
unsafe fn inbox<'a>(user: *mut c_void) -> &'a mut Inbox {
    &mut *user.cast::<Inbox>()
}

pub(super) unsafe extern "C" fn on_begin_headers(
    _s: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user: *mut c_void,
) -> c_int {
    let inbox = inbox(user);
    let hd = (*frame).hd;
    if inbox.server && hd.type_ == ng::NGHTTP2_HEADERS as u8 && (*frame).headers.cat == ng::NGHTTP2_HCAT_REQUEST {
        inbox.partial.insert(hd.stream_id, RequestHead::default());
    }
    0
}

pub(super) unsafe extern "C" fn on_header(
    _s: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    name: *const u8,
    namelen: usize,
    value: *const u8,
    valuelen: usize,
    _flags: u8,
    user: *mut c_void,
) -> c_int {
    let inbox = inbox(user);
    inbox.header_bytes += (namelen + valuelen) as u64;
    let name = std::slice::from_raw_parts(name, namelen);
    let value = std::slice::from_raw_parts(value, valuelen);
    let stream = (*frame).hd.stream_id;
    if !inbox.server {
        if name == b":status" {
            let status = std::str::from_utf8(value).ok().and_then(|s| s.parse::<u16>().ok()).unwrap_or(0);
            if !(100..200).contains(&status) {
                inbox.events.push(Event::Status { stream, status });
            }
        } else {
            if inbox.capture {
                inbox.captured.entry(stream).or_default().headers.push((name.to_vec(), value.to_vec()));
            }
            if inbox.streamed && !name.starts_with(b":") {
                let fields = inbox.fields.entry(stream).or_default();
                let kept = fields.iter().map(|(n, v)| n.len() + v.len()).sum::<usize>();
                // The same bound as a request's: a server cannot grow memory with endless fields.
                if kept + namelen + valuelen > MAX_REQUEST_HEADER_BYTES {
                    inbox.fields.remove(&stream);
                    return ng::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
                }
                fields.push((name.to_vec(), value.to_vec()));
            }
        }
        return 0;
    }
    let Some(head) = inbox.partial.get_mut(&stream) else { return 0 };
    let kept = head.method.len() + head.path.len() + head.headers.iter().map(|(n, v)| n.len() + v.len()).sum::<usize>();
    if kept + namelen + valuelen > MAX_REQUEST_HEADER_BYTES {
        inbox.partial.remove(&stream);
        return ng::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    match name {
        b":method" => head.method = value.to_vec(),
        b":path" => head.path = value.to_vec(),
        b":authority" => head.authority = value.to_vec(),
        n if n.starts_with(b":") => {}
        _ => head.headers.push((name.to_vec(), value.to_vec())),
    }
    0
}

pub(super) unsafe extern "C" fn on_frame_recv(
    _s: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user: *mut c_void,
) -> c_int {
    let inbox = inbox(user);
    let hd = (*frame).hd;
    if hd.type_ == ng::NGHTTP2_HEADERS as u8 {
        inbox.header_frame_bytes += hd.length as u64;
    }
    if hd.type_ == ng::NGHTTP2_SETTINGS as u8 {
        inbox.peer_settings = true;
    }
    if hd.type_ == ng::NGHTTP2_GOAWAY as u8 {
        let g = (*frame).goaway;
        inbox.events.push(Event::GoAway { last_stream: g.last_stream_id, code: g.error_code });
    }
    let ends = hd.flags & ng::NGHTTP2_FLAG_END_STREAM as u8 != 0;
    if inbox.streamed {
        streamed_frame(inbox, frame, ends);
    } else if inbox.server && ends && (hd.type_ == ng::NGHTTP2_HEADERS as u8 || hd.type_ == ng::NGHTTP2_DATA as u8) {
        if let Some(head) = inbox.partial.remove(&hd.stream_id) {
            inbox.events.push(Event::Request { stream: hd.stream_id, head });
        }
    }
    0
}

/// A frame received in streamed mode: a request's head (server) or a header block (client) as
/// soon as it is whole, and the end of the peer's side.
///
/// # Safety
/// `frame` must be the frame nghttp2 passed to the callback.
unsafe fn streamed_frame(inbox: &mut Inbox, frame: *const ng::nghttp2_frame, ends: bool) {
    let hd = (*frame).hd;
    let stream = hd.stream_id;
    if hd.type_ == ng::NGHTTP2_HEADERS as u8 {
        if !inbox.server {
            let fields = inbox.fields.remove(&stream).unwrap_or_default();
            inbox.events.push(Event::Fields { stream, fields });
        } else if (*frame).headers.cat == ng::NGHTTP2_HCAT_REQUEST {
            if let Some(head) = inbox.partial.remove(&stream) {
                inbox.events.push(Event::Head { stream, head });
            }
        }
    } else if hd.type_ != ng::NGHTTP2_DATA as u8 {
        return;
    }
    if ends {
        inbox.events.push(Event::End { stream });
    }
}

pub(super) unsafe extern "C" fn on_data_chunk(
    _s: *mut ng::nghttp2_session,
    _flags: u8,
    stream: i32,
    data: *const u8,
    len: usize,
    user: *mut c_void,
) -> c_int {
    let inbox = inbox(user);
    // nghttp2 gives `len` bytes at `data`, valid for this call.
    if !inbox.server {
        if inbox.streamed {
            inbox.events.push(Event::Body { stream, data: std::slice::from_raw_parts(data, len).to_vec() });
        } else {
            inbox.events.push(Event::Data { stream, len });
        }
        if inbox.capture {
            let body = std::slice::from_raw_parts(data, len);
            inbox.captured.entry(stream).or_default().body.extend_from_slice(body);
        }
    } else if inbox.streamed {
        inbox.events.push(Event::Body { stream, data: std::slice::from_raw_parts(data, len).to_vec() });
    }
    0
}

pub(super) unsafe extern "C" fn on_stream_close(
    _s: *mut ng::nghttp2_session,
    stream: i32,
    code: u32,
    user: *mut c_void,
) -> c_int {
    let inbox = inbox(user);
    inbox.bodies.retain(|b| b.0 != stream);
    // Empty but on a server or a stalled upload: a length check, not a lookup, per stream.
    if !inbox.stalled.is_empty() {
        inbox.stalled.remove(&stream);
    }
    if !inbox.partial.is_empty() {
        inbox.partial.remove(&stream);
    }
    // Empty unless streamed: the plain paths pay a length check, not a lookup.
    if !inbox.pipes.is_empty() {
        inbox.pipes.retain(|p| p.0 != stream);
    }
    if !inbox.fields.is_empty() {
        inbox.fields.remove(&stream);
    }
    inbox.events.push(Event::Closed { stream, code });
    0
}

pub(super) unsafe extern "C" fn read_body(
    session: *mut ng::nghttp2_session,
    stream: i32,
    buf: *mut u8,
    length: usize,
    flags: *mut u32,
    _source: *mut ng::nghttp2_data_source,
    user: *mut c_void,
) -> ng::nghttp2_ssize {
    let inbox = inbox(user);
    let Some(i) = inbox.bodies.iter().position(|b| b.0 == stream) else {
        return read_pipe(session, inbox, stream, buf, length, flags);
    };
    let (_, body, sent) = &mut inbox.bodies[i];
    let end = body.end();
    if *sent >= end && end < body.len() {
        // A cut body: nghttp2 resets the stream with INTERNAL_ERROR.
        inbox.bodies.swap_remove(i);
        return ng::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE as ng::nghttp2_ssize;
    }
    let n = usize::try_from(end - *sent).unwrap_or(usize::MAX).min(length);
    // nghttp2 gives a buffer of `length` bytes, valid for this call.
    body.fill(*sent, std::slice::from_raw_parts_mut(buf, n));
    *sent += n as u64;
    if *sent == body.len() {
        *flags |= ng::NGHTTP2_DATA_FLAG_EOF;
        inbox.bodies.swap_remove(i);
    }
    n as ng::nghttp2_ssize
}

/// The data callback for a pushed body ([`super::pipe::Pipe`]): its queued bytes; a deferral
/// while none are queued and it is open; at its end END_STREAM, or trailers after a DATA frame
/// without it.
///
/// # Safety
/// The arguments must be those nghttp2 passed to [`read_body`].
unsafe fn read_pipe(
    session: *mut ng::nghttp2_session,
    inbox: &mut Inbox,
    stream: i32,
    buf: *mut u8,
    length: usize,
    flags: *mut u32,
) -> ng::nghttp2_ssize {
    let Some(i) = inbox.pipes.iter().position(|p| p.0 == stream) else {
        *flags |= ng::NGHTTP2_DATA_FLAG_EOF;
        return 0;
    };
    let pipe = &mut inbox.pipes[i].1;
    // nghttp2 gives a buffer of `length` bytes, valid for this call.
    let n = pipe.take(std::slice::from_raw_parts_mut(buf, length));
    if pipe.queued() > 0 {
        return n as ng::nghttp2_ssize;
    }
    match pipe.end {
        End::Open if n == 0 => return ng::NGHTTP2_ERR_DEFERRED as ng::nghttp2_ssize,
        End::Open => return n as ng::nghttp2_ssize,
        End::Stream => *flags |= ng::NGHTTP2_DATA_FLAG_EOF,
        End::Trailers(_) => *flags |= ng::NGHTTP2_DATA_FLAG_EOF | ng::NGHTTP2_DATA_FLAG_NO_END_STREAM,
    }
    let (_, pipe) = inbox.pipes.swap_remove(i);
    if let End::Trailers(fields) = pipe.end {
        let mut scratch = Vec::new();
        let nva = nv(&fields, &mut scratch);
        // nghttp2 copies the fields, and documents this call as allowed inside the callback.
        let rv = ng::nghttp2_submit_trailer(session, stream, nva.as_ptr(), nva.len());
        if rv != 0 {
            // The stream is reset with INTERNAL_ERROR rather than left without its end.
            return ng::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE as ng::nghttp2_ssize;
        }
    }
    n as ng::nghttp2_ssize
}
