//! The session against itself: a client and a server session pumped into each other.

use super::*;

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
    let mut c = Session::client(Settings::default()).unwrap();
    let mut s = Session::server(Settings::default()).unwrap();
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
    let mut c = Session::client(Settings::default()).unwrap();
    let mut s = Session::server(Settings::default()).unwrap();
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
    let mut c = Session::client(Settings::default()).unwrap();
    let mut s = Session::server(Settings::default()).unwrap();
    let req: [(&[u8], &[u8]); 4] =
        [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"h"), (b":path", b"/")];
    let id = c.submit_request(&req, None).unwrap();
    pump(&mut c, &mut s);
    s.reset(id, 0x7);
    pump(&mut c, &mut s);
    assert!(c.events().contains(&Event::Closed { stream: id, code: 0x7 }), "{:?}", c.events());
    assert_eq!(code_name(0x7), "REFUSED_STREAM");
    let mut s2 = Session::server(Settings::default()).unwrap();
    assert!(s2.receive(b"GET / HTTP/1.1\r\n\r\n").is_err(), "not the HTTP/2 preface");
}
