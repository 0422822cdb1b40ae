//! The session against itself: a client and a server session pumped into each other.

use super::*;

/// A client and a server session, both with the default settings.
fn sessions() -> (Session, Session) {
    (Session::client(Settings::default()).unwrap(), Session::server(Settings::default()).unwrap())
}

/// Moves every byte each side has to send to the other until both are quiet.
fn pump(a: &mut Session, b: &mut Session) {
    for _ in 0..20 {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        a.output(&mut x).unwrap();
        b.output(&mut y).unwrap();
        if x.is_empty() && y.is_empty() {
            return;
        }
        b.receive(&x).unwrap();
        a.receive(&y).unwrap();
    }
}

#[test]
fn a_client_and_a_server_exchange_requests_and_responses() {
    let (mut c, mut s) = sessions();
    let req: [(&[u8], &[u8]); 5] =
        [(b":method", b"POST"), (b":scheme", b"http"), (b":authority", b"h"), (b":path", b"/a?b"), (b"x-k", b"v")];
    let id = c.submit_request(&req, Some(b"hello".to_vec())).unwrap();
    assert_eq!(id, 1);
    pump(&mut c, &mut s);
    let got: Vec<Event> = s.events().drain(..).collect();
    let head = got
        .iter()
        .find_map(|e| match e {
            Event::Request { stream: 1, head } => Some(head.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (head.method.as_slice(), head.path.as_slice(), head.authority.as_slice()),
        (&b"POST"[..], &b"/a?b"[..], &b"h"[..])
    );
    assert_eq!(head.header(b"x-k"), Some(&b"v"[..]));
    let fields: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"content-type", b"text/plain")];
    s.submit_response(1, &fields, vec![b'x'; 100_000]).unwrap();
    pump(&mut c, &mut s);
    let events: Vec<Event> = c.events().drain(..).collect();
    assert_eq!(events.first(), Some(&Event::Status { stream: 1, status: 200 }));
    let body: usize = events.iter().map(|e| if let Event::Data { len, .. } = e { *len } else { 0 }).sum();
    assert_eq!(body, 100_000);
    assert_eq!(events.last(), Some(&Event::Closed { stream: 1, code: 0 }));
    let (compressed, decoded) = c.header_bytes();
    assert!(compressed > 0 && decoded > compressed, "{compressed} {decoded}");
}

/// Any bytes do: the client side only counts them.
struct Counting;

impl Source for Counting {
    fn fill(&mut self, _offset: u64, out: &mut [u8]) {
        out.fill(b'x');
    }
}

#[test]
fn a_made_body_is_sent_whole_or_cut_with_a_reset() {
    let (mut c, mut s) = sessions();
    let req: [(&[u8], &[u8]); 4] =
        [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"h"), (b":path", b"/")];
    let (a, b) = (c.submit_request(&req, None).unwrap(), c.submit_request(&req, None).unwrap());
    pump(&mut c, &mut s);
    let fields: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"content-length", b"70000")];
    s.submit_response(a, &fields, Body::Made { source: Box::new(Counting), len: 70_000, cut: 70_000 }).unwrap();
    s.submit_response(b, &fields, Body::Made { source: Box::new(Counting), len: 70_000, cut: 20_000 }).unwrap();
    pump(&mut c, &mut s);
    let events: Vec<Event> = c.events().drain(..).collect();
    let body = |id| -> usize {
        events
            .iter()
            .map(|e| {
                if let Event::Data { stream, len } = e {
                    if *stream == id {
                        *len
                    } else {
                        0
                    }
                } else {
                    0
                }
            })
            .sum()
    };
    assert_eq!((body(a), body(b)), (70_000, 20_000));
    assert!(events.contains(&Event::Closed { stream: a, code: 0 }), "{events:?}");
    assert!(events.contains(&Event::Closed { stream: b, code: 0x2 }), "{events:?}");
}

#[test]
fn the_url_request_submits() {
    let bytes = crate::http::request::render("GET", "/", "127.0.0.1:1", &[], None);
    let r = crate::http::fields::from_http1(&bytes, "http", "x").unwrap();
    let mut c = Session::client(Settings::default()).unwrap();
    assert_eq!(c.submit_request(&r.fields, r.body.clone()), Ok(1), "{r:?}");
}

#[test]
fn a_body_waiting_for_the_peers_window_is_counted_once() {
    let mut c = Session::client(Settings::default()).unwrap();
    let req: [(&[u8], &[u8]); 4] =
        [(b":method", b"POST"), (b":scheme", b"http"), (b":authority", b"h"), (b":path", b"/")];
    c.submit_request(&req, Some(vec![b'x'; 200_000])).unwrap();
    let mut out = Vec::new();
    c.output(&mut out).unwrap();
    assert_eq!(c.flow_stalls(), 1, "the first 65,535 bytes used the whole window");
    // The peer's SETTINGS_INITIAL_WINDOW_SIZE = 0, then more output: still the same stream.
    c.receive(&[0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0]).unwrap();
    c.output(&mut out).unwrap();
    assert_eq!(c.flow_stalls(), 1);
}

#[test]
fn a_reset_stream_closes_with_its_code_and_garbage_fails_the_session() {
    let (mut c, mut s) = sessions();
    let req: [(&[u8], &[u8]); 4] =
        [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"h"), (b":path", b"/")];
    let id = c.submit_request(&req, None).unwrap();
    pump(&mut c, &mut s);
    s.reset(id, 0x7);
    pump(&mut c, &mut s);
    assert_closed(&mut c, id, 0x7);
    assert_eq!(code_name(0x7), "REFUSED_STREAM");
    let mut s2 = Session::server(Settings::default()).unwrap();
    assert!(s2.receive(b"GET / HTTP/1.1\r\n\r\n").is_err(), "not the HTTP/2 preface");
}

/// Takes every event `session` holds, and gives those of stream `id`.
fn take(session: &mut Session, id: i32) -> Vec<Event> {
    session
        .events()
        .drain(..)
        .filter(|e| match e {
            Event::Status { stream, .. }
            | Event::Data { stream, .. }
            | Event::Closed { stream, .. }
            | Event::Request { stream, .. }
            | Event::Head { stream, .. }
            | Event::Body { stream, .. }
            | Event::Fields { stream, .. }
            | Event::End { stream } => *stream == id,
            Event::GoAway { .. } => false,
        })
        .collect()
}

/// Asserts that `session` holds the event of stream `id` closing with `code`.
#[track_caller]
fn assert_closed(session: &mut Session, id: i32, code: u32) {
    let closed = Event::Closed { stream: id, code };
    assert!(session.events().contains(&closed), "{:?}", session.events());
}

/// The bytes of every [`Event::Body`] among `events`, joined.
fn body_of(events: &[Event]) -> Vec<u8> {
    events.iter().flat_map(|e| if let Event::Body { data, .. } = e { data.clone() } else { Vec::new() }).collect()
}

const POST: [(&[u8], &[u8]); 5] = [
    (b":method", b"POST"),
    (b":scheme", b"http"),
    (b":authority", b"h"),
    (b":path", b"/pkg.S/M"),
    (b"content-type", b"application/grpc"),
];

#[test]
fn a_streamed_request_body_arrives_in_pieces_and_ends_later() {
    let (mut c, mut s) = sessions();
    s.set_streamed(true);
    let id = c.submit_request_streamed(&POST).unwrap();
    pump(&mut c, &mut s);
    let got = take(&mut s, id);
    let [Event::Head { head, .. }] = got.as_slice() else { panic!("{got:?}") };
    assert_eq!(
        (head.path.as_slice(), head.header(b"content-type")),
        (&b"/pkg.S/M"[..], Some(&b"application/grpc"[..]))
    );
    // Each push goes out when the session is next pumped, not before the end.
    c.push_body(id, b"hello ").unwrap();
    pump(&mut c, &mut s);
    c.push_body(id, b"wor").unwrap();
    c.push_body(id, b"ld").unwrap();
    pump(&mut c, &mut s);
    let got = take(&mut s, id);
    assert_eq!(body_of(&got), b"hello world");
    assert!(!got.contains(&Event::End { stream: id }), "{got:?}");
    assert_eq!(c.queued(id), 0);
    // A large piece crosses frames; the end follows the last byte.
    c.push_body(id, &vec![b'x'; 40_000]).unwrap();
    c.end_body(id).unwrap();
    assert!(c.push_body(id, b"late").is_err(), "the body is ended");
    pump(&mut c, &mut s);
    let got = take(&mut s, id);
    assert_eq!(body_of(&got).len(), 40_000);
    assert_eq!(got.last(), Some(&Event::End { stream: id }), "{:?}", got.last());
    // The server answers; the stream closes on both sides.
    let fields: [(&[u8], &[u8]); 1] = [(b":status", b"200")];
    s.submit_response(id, &fields, b"ok".to_vec()).unwrap();
    pump(&mut c, &mut s);
    assert_closed(&mut c, id, 0);
}

#[test]
fn a_plain_server_still_gets_a_streamed_request_whole() {
    let (mut c, mut s) = sessions();
    let id = c.submit_request_streamed(&POST).unwrap();
    c.push_body(id, b"abc").unwrap();
    pump(&mut c, &mut s);
    assert!(!s.events().iter().any(|e| matches!(e, Event::Request { .. })), "{:?}", s.events());
    c.end_body(id).unwrap();
    pump(&mut c, &mut s);
    let got = take(&mut s, id);
    assert!(matches!(got.as_slice(), [Event::Request { .. }]), "{got:?}");
}

#[test]
fn a_streamed_response_sends_its_pieces_then_trailers() {
    let (mut c, mut s) = sessions();
    c.set_streamed(true);
    s.set_streamed(true);
    let id = c.submit_request(&POST, Some(b"q".to_vec())).unwrap();
    pump(&mut c, &mut s);
    let head: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"content-type", b"application/grpc")];
    s.submit_response_streamed(id, &head).unwrap();
    s.push_body(id, b"one").unwrap();
    pump(&mut c, &mut s);
    // Nothing queued: the body waits (deferred) without ending the stream.
    let got = take(&mut c, id);
    assert_eq!(
        got,
        [
            Event::Status { stream: id, status: 200 },
            Event::Fields { stream: id, fields: vec![(b"content-type".to_vec(), b"application/grpc".to_vec())] },
            Event::Body { stream: id, data: b"one".to_vec() },
        ]
    );
    s.push_body(id, &vec![b'y'; 100_000]).unwrap();
    assert!(s.queued(id) >= 100_000);
    let trailers: [(&[u8], &[u8]); 2] = [(b"grpc-status", b"0"), (b"grpc-message", b"")];
    s.end_with_trailers(id, &trailers).unwrap();
    assert!(s.end_body(id).is_err(), "already ended");
    pump(&mut c, &mut s);
    let got = take(&mut c, id);
    assert_eq!(body_of(&got).len(), 100_000);
    let tail = &got[got.len() - 3..];
    assert_eq!(
        tail,
        [
            Event::Fields {
                stream: id,
                fields: vec![(b"grpc-status".to_vec(), b"0".to_vec()), (b"grpc-message".to_vec(), Vec::new())]
            },
            Event::End { stream: id },
            Event::Closed { stream: id, code: 0 },
        ]
    );
    assert_eq!(s.queued(id), 0);
    assert!(s.push_body(id, b"x").is_err(), "a closed stream has no body");
}

#[test]
fn trailers_right_after_the_headers_follow_an_empty_data_frame() {
    let (mut c, mut s) = sessions();
    c.set_streamed(true);
    let id = c.submit_request(&POST, None).unwrap();
    pump(&mut c, &mut s);
    let head: [(&[u8], &[u8]); 1] = [(b":status", b"200")];
    s.submit_response_streamed(id, &head).unwrap();
    pump(&mut c, &mut s);
    let trailers: [(&[u8], &[u8]); 1] = [(b"grpc-status", b"5")];
    s.end_with_trailers(id, &trailers).unwrap();
    pump(&mut c, &mut s);
    let got = take(&mut c, id);
    assert_eq!(body_of(&got), b"");
    assert!(got.contains(&Event::Fields { stream: id, fields: vec![(b"grpc-status".to_vec(), b"5".to_vec())] }));
    assert_eq!(got.last(), Some(&Event::Closed { stream: id, code: 0 }), "{got:?}");
}

#[test]
fn a_trailers_only_response_is_one_header_block_that_ends_the_stream() {
    let (mut c, mut s) = sessions();
    c.set_streamed(true);
    s.set_streamed(true);
    // The server answers before the client has finished sending.
    let id = c.submit_request_streamed(&POST).unwrap();
    pump(&mut c, &mut s);
    let only: [(&[u8], &[u8]); 4] = [
        (b":status", b"200"),
        (b"content-type", b"application/grpc"),
        (b"grpc-status", b"12"),
        (b"grpc-message", b"unknown method"),
    ];
    s.submit_response(id, &only, Vec::new()).unwrap();
    let mut wire = Vec::new();
    s.output(&mut wire).unwrap();
    // One frame: HEADERS (type 1) with END_STREAM (0x1) and END_HEADERS (0x4).
    let len = u32::from_be_bytes([0, wire[0], wire[1], wire[2]]) as usize;
    assert_eq!((wire[3], wire[4], wire.len()), (1, 0x5, 9 + len));
    c.receive(&wire).unwrap();
    let got = take(&mut c, id);
    assert_eq!(
        got,
        [
            Event::Status { stream: id, status: 200 },
            Event::Fields {
                stream: id,
                fields: vec![
                    (b"content-type".to_vec(), b"application/grpc".to_vec()),
                    (b"grpc-status".to_vec(), b"12".to_vec()),
                    (b"grpc-message".to_vec(), b"unknown method".to_vec()),
                ]
            },
            Event::End { stream: id },
        ]
    );
    // The client ends its side; the stream closes.
    c.end_body(id).unwrap();
    pump(&mut c, &mut s);
    assert_closed(&mut c, id, 0);
}

#[test]
fn a_reset_stream_drops_its_pushed_body() {
    let (mut c, mut s) = sessions();
    s.set_streamed(true);
    let id = c.submit_request_streamed(&POST).unwrap();
    c.push_body(id, b"abc").unwrap();
    pump(&mut c, &mut s);
    let head: [(&[u8], &[u8]); 1] = [(b":status", b"200")];
    s.submit_response_streamed(id, &head).unwrap();
    s.push_body(id, b"def").unwrap();
    c.reset(id, 0x8);
    pump(&mut c, &mut s);
    assert_closed(&mut s, id, 0x8);
    assert!(s.push_body(id, b"more").is_err());
    assert_eq!(s.queued(id), 0);
}

#[test]
fn a_pushed_body_waits_for_the_peers_window() {
    let mut c = Session::client(Settings { window: 65_535, ..Settings::default() }).unwrap();
    let mut s = Session::server(Settings::default()).unwrap();
    c.set_streamed(true);
    let id = c.submit_request(&POST, None).unwrap();
    pump(&mut c, &mut s);
    let head: [(&[u8], &[u8]); 1] = [(b":status", b"200")];
    s.submit_response_streamed(id, &head).unwrap();
    s.push_body(id, &vec![b'z'; 300_000]).unwrap();
    let mut wire = Vec::new();
    s.output(&mut wire).unwrap();
    assert_eq!(s.queued(id), 300_000 - 65_535, "one window's worth goes out");
    c.receive(&wire).unwrap();
    s.end_body(id).unwrap();
    pump(&mut c, &mut s);
    let got = take(&mut c, id);
    assert_eq!(body_of(&got).len(), 300_000);
    assert_eq!(got.last(), Some(&Event::Closed { stream: id, code: 0 }), "{:?}", got.last());
}
