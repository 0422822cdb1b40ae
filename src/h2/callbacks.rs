//! nghttp2's callbacks into Rust. Each one only appends to the session's [`Inbox`] (reached
//! through nghttp2's `user_data` pointer) or fills a body's frame within its bounds, so none
//! can touch the session re-entrantly and none can panic across the C frames.

use std::ffi::{c_int, c_void};

use libnghttp2_sys as ng;

use super::events::{Event, Inbox, RequestHead, MAX_REQUEST_HEADER_BYTES};

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
        } else if inbox.capture {
            inbox.captured.entry(stream).or_default().headers.push((name.to_vec(), value.to_vec()));
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
    if inbox.server && ends && (hd.type_ == ng::NGHTTP2_HEADERS as u8 || hd.type_ == ng::NGHTTP2_DATA as u8) {
        if let Some(head) = inbox.partial.remove(&hd.stream_id) {
            inbox.events.push(Event::Request { stream: hd.stream_id, head });
        }
    }
    0
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
    if !inbox.server {
        inbox.events.push(Event::Data { stream, len });
        if inbox.capture {
            let body = std::slice::from_raw_parts(data, len);
            inbox.captured.entry(stream).or_default().body.extend_from_slice(body);
        }
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
    inbox.stalled.remove(&stream);
    inbox.partial.remove(&stream);
    inbox.events.push(Event::Closed { stream, code });
    0
}

pub(super) unsafe extern "C" fn read_body(
    _s: *mut ng::nghttp2_session,
    stream: i32,
    buf: *mut u8,
    length: usize,
    flags: *mut u32,
    _source: *mut ng::nghttp2_data_source,
    user: *mut c_void,
) -> ng::nghttp2_ssize {
    let inbox = inbox(user);
    let Some(i) = inbox.bodies.iter().position(|b| b.0 == stream) else {
        *flags |= ng::NGHTTP2_DATA_FLAG_EOF;
        return 0;
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
