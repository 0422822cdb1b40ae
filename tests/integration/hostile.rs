//! Issue 40, point 5: bad peers stay contained. Each test here runs the real binary against a
//! small hostile server written for it (WebSocket over raw TCP, HTTP/2 and gRPC framed by hand,
//! h2c with prior knowledge), where a known few connections or calls misbehave one way. The
//! bad one costs only that connection or call, is counted by its cause in the JSON result, and
//! the rest of the run goes on: the others keep being answered, the process exits 0 on time,
//! and nothing panics.
//!
//! The servers are written from the RFCs rather than with strain's own framing code, so a
//! mistake shared by both sides could not hide here.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use base64::Engine as _;

use crate::harness::{args, strain, temp_file, FakeServer, Run};

/// Start-up and exit of a debug binary on a busy machine, beyond the run's own bound.
const SLACK: Duration = Duration::from_secs(3);

/// The run exited normally, said nothing about a panic, took at most `bound` (plus slack),
/// and its result follows the published schema.
fn assert_contained(run: &Run, bound: Duration) {
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(run.elapsed < bound + SLACK, "took {:?}", run.elapsed);
    let doc = run.json.as_ref().unwrap_or_else(|| panic!("no JSON: {}", run.stderr));
    let errors: Vec<String> =
        crate::harness::schema().iter_errors(doc).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// Server threads finish what they count a moment after strain closes their sockets.
fn settled(counter: &AtomicU64) -> u64 {
    thread::sleep(Duration::from_millis(200));
    counter.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------------------------
// WebSocket (RFC 6455)
// ---------------------------------------------------------------------------------------------

/// `Sec-WebSocket-Accept` for `key` (section 4.2.2), computed here rather than by strain.
fn ws_accept(key: &str) -> String {
    let mut ctx = boring::sha::Sha1::new();
    ctx.update(key.as_bytes());
    ctx.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(ctx.finish())
}

/// Reads the upgrade request and answers `101` with the right accept value; false when the
/// request did not come whole.
fn ws_upgrade(s: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) if head.len() < 16 * 1024 => head.push(byte[0]),
            _ => return false,
        }
    }
    let text = String::from_utf8_lossy(&head);
    let key = text.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim().eq_ignore_ascii_case("sec-websocket-key").then(|| value.trim().to_string())
    });
    let Some(key) = key else { return false };
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        ws_accept(&key)
    );
    s.write_all(answer.as_bytes()).is_ok()
}

/// One frame from the client: (fin and opcode byte, payload unmasked); None at the end.
fn ws_read_frame(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 2];
    s.read_exact(&mut h).ok()?;
    let len = match h[1] & 0x7F {
        126 => {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).ok()?;
            u64::from(u16::from_be_bytes(b))
        }
        127 => {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).ok()?;
            u64::from_be_bytes(b)
        }
        n => u64::from(n),
    };
    // Clients always mask (section 5.3); strain's messages here are a few bytes.
    if h[1] & 0x80 == 0 || len > 1 << 20 {
        return None;
    }
    let mut key = [0u8; 4];
    s.read_exact(&mut key).ok()?;
    let mut payload = vec![0u8; len as usize];
    s.read_exact(&mut payload).ok()?;
    for (j, b) in payload.iter_mut().enumerate() {
        *b ^= key[j % 4];
    }
    Some((h[0], payload))
}

/// A server frame: `first` is the fin/opcode byte, `mask` masks it (which a server must not).
fn ws_frame(first: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut f = vec![first];
    let m = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => f.push(m | n as u8),
        n => {
            f.push(m | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    let mut body = payload.to_vec();
    if let Some(k) = mask {
        f.extend_from_slice(&k);
        for (j, b) in body.iter_mut().enumerate() {
            *b ^= k[j % 4];
        }
    }
    f.extend_from_slice(&body);
    f
}

/// A WebSocket server that answers the first message it is sent with `bad` instead of the
/// echo; every other message, on that connection's replacement too, is echoed.
struct HostileWs {
    server: FakeServer,
    upgrades: Arc<AtomicU64>,
    /// Echoes sent, and those sent on connections opened after the load's first `conns`.
    echoes: Arc<AtomicU64>,
    replacement_echoes: Arc<AtomicU64>,
}

impl HostileWs {
    /// `conns`: strain's `-c`. Its connections are accepted as numbers 1 to `conns` (number 0
    /// is the upgrade strain checks before the load and closes at once), so a later number is
    /// a replacement.
    fn start(bad: Vec<u8>, conns: usize) -> HostileWs {
        let (upgrades, echoes, replacement_echoes) = Default::default();
        let (up, echoed, replaced): (Arc<AtomicU64>, Arc<AtomicU64>, Arc<AtomicU64>) =
            (Arc::clone(&upgrades), Arc::clone(&echoes), Arc::clone(&replacement_echoes));
        let misbehaved = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let server = FakeServer::start(move |mut s, n| {
            if !ws_upgrade(&mut s) {
                return;
            }
            up.fetch_add(1, Ordering::Relaxed);
            while let Some((first, payload)) = ws_read_frame(&mut s) {
                match first & 0x0F {
                    0x8 => {
                        // The client's close, answered with the same code.
                        let _ = s.write_all(&ws_frame(0x88, &payload[..payload.len().min(2)], None));
                        return;
                    }
                    0x9 => {
                        let _ = s.write_all(&ws_frame(0x8A, &payload, None));
                    }
                    0xA => {}
                    _ if !misbehaved.swap(true, Ordering::Relaxed) => {
                        let _ = s.write_all(&bad);
                        // Held open: the client is the one that must give the connection up.
                        while matches!(s.read(&mut [0u8; 512]), Ok(k) if k > 0) {}
                        return;
                    }
                    _ => {
                        if s.write_all(&ws_frame(first, &payload, None)).is_err() {
                            return;
                        }
                        echoed.fetch_add(1, Ordering::Relaxed);
                        if n > conns {
                            replaced.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        });
        HostileWs { server, upgrades, echoes, replacement_echoes }
    }
}

/// `strain ws -c 4` for a second against a server whose first connection sends `bad`: that
/// connection alone is dropped for `protocol`, its message fails as a parse error, it is
/// replaced, and the other connections and the replacement go on echoing.
fn ws_bad_frame_is_one_protocol_drop(what: &str, bad: Vec<u8>) {
    const CONNS: usize = 4;
    let server = HostileWs::start(bad, CONNS);
    let url = format!("ws://{}/", server.server.addr);
    let run = strain(&[&["ws"], &args("-c 4 -t 1 -d 1s -T 1s")[..], &[&url]].concat());
    assert_contained(&run, Duration::from_secs(2));
    let w = &run.json.as_ref().unwrap()["websocket"];
    let drops = w["drops"].as_object().unwrap();
    assert_eq!(drops.len(), 1, "{what}: only the bad connection was lost: {w}");
    run.assert_nums(&[
        ("/websocket/drops/protocol", 1),
        ("/websocket/handshakes", CONNS as u64 + 1),
        ("/errors/parse", 1),
        ("/errors/read", 0),
        ("/errors/write", 0),
        ("/errors/timeout", 0),
    ]);
    // strain's check before the load, its connections, and the one replacement.
    assert_eq!(settled(&server.upgrades), CONNS as u64 + 2, "{what}: the bad connection was replaced once");
    assert!(w["closes"].as_object().unwrap().is_empty(), "{what}: the server closed none: {w}");
    let answered = run.num("/requests");
    assert!(answered >= 100, "{what}: the good connections went on: {}", run.stdout);
    // Only echoes count as answers; one may still be on its way when the run stops.
    let echoed = server.echoes.load(Ordering::Relaxed);
    assert!(answered <= echoed && echoed <= answered + CONNS as u64, "{what}: {answered} answered, {echoed} echoed");
    assert!(server.replacement_echoes.load(Ordering::Relaxed) > 0, "{what}: the replacement was answered too");
}

#[test]
fn a_websocket_frame_with_a_reserved_opcode_loses_only_its_connection() {
    ws_bad_frame_is_one_protocol_drop("opcode 0x3", ws_frame(0x83, b"strain", None));
}

#[test]
fn a_masked_websocket_frame_from_the_server_loses_only_its_connection() {
    ws_bad_frame_is_one_protocol_drop("masked", ws_frame(0x81, b"strain", Some([1, 2, 3, 4])));
}

#[test]
fn a_websocket_ping_over_125_bytes_loses_only_its_connection() {
    ws_bad_frame_is_one_protocol_drop("ping of 126 bytes", ws_frame(0x89, &[b'p'; 126], None));
}

// ---------------------------------------------------------------------------------------------
// HTTP/2 (RFC 9113), h2c with prior knowledge
// ---------------------------------------------------------------------------------------------

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;
const INTERNAL_ERROR: u32 = 0x2;
const REFUSED_STREAM: u32 = 0x7;

fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A header block of `fields`, each a literal without indexing and with a new name, no
/// Huffman (RFC 7541 6.2.2): the plainest HPACK, which any decoder must take.
fn hpack(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in fields {
        block.push(0);
        for s in [name, value] {
            // One-byte lengths: every field here is short.
            assert!(s.len() < 127);
            block.push(s.len() as u8);
            block.extend_from_slice(s.as_bytes());
        }
    }
    block
}

/// A whole header block in one HEADERS frame.
fn h2_headers(stream: u32, fields: &[(&str, &str)], end_stream: bool) -> Vec<u8> {
    let flags = END_HEADERS | if end_stream { END_STREAM } else { 0 };
    h2_frame(HEADERS, flags, stream, &hpack(fields))
}

/// `200` with a two-byte body.
fn h2_ok(stream: u32) -> Vec<u8> {
    [
        h2_headers(stream, &[(":status", "200"), ("content-length", "2")], false),
        h2_frame(DATA, END_STREAM, stream, b"ok"),
    ]
    .concat()
}

fn h2_reset(stream: u32, code: u32) -> Vec<u8> {
    h2_frame(RST_STREAM, 0, stream, &code.to_be_bytes())
}

fn h2_goaway(last_stream: u32, code: u32) -> Vec<u8> {
    h2_frame(GOAWAY, 0, 0, &[last_stream.to_be_bytes(), code.to_be_bytes()].concat())
}

/// What a server does after a request.
enum Then {
    /// Reads on.
    Go,
    /// Ends its side (FIN, after what it wrote), reads what the client still sends until it
    /// closes, and stops.
    Close,
}

/// Serves an h2c connection: the preface and settings exchanged, pings answered, the
/// connection's window kept open, and `request` called with each stream whose request has
/// ended (what it writes is the answer), until the client goes or `request` says to close.
fn serve_h2(mut s: TcpStream, mut request: impl FnMut(&mut TcpStream, u32) -> Then) {
    // A window update and the answer after it go as two writes: Nagle would hold the answer
    // for the client's delayed ACK (40 ms a call).
    let _ = s.set_nodelay(true);
    let mut preface = [0u8; 24];
    if s.read_exact(&mut preface).is_err() || &preface != b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" {
        return;
    }
    if s.write_all(&h2_frame(SETTINGS, 0, 0, &[])).is_err() {
        return;
    }
    loop {
        let mut head = [0u8; 9];
        if s.read_exact(&mut head).is_err() {
            return;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7FFF_FFFF;
        let mut payload = vec![0u8; len];
        if s.read_exact(&mut payload).is_err() {
            return;
        }
        let answered = match kind {
            SETTINGS if flags & ACK == 0 => s.write_all(&h2_frame(SETTINGS, ACK, 0, &[])).is_ok(),
            PING if flags & ACK == 0 => s.write_all(&h2_frame(PING, ACK, 0, &payload)).is_ok(),
            // The request's header block is taken whole and unread: nothing here depends on it.
            HEADERS | DATA if flags & END_STREAM != 0 => {
                if kind == DATA && len > 0 {
                    let _ = s.write_all(&h2_frame(WINDOW_UPDATE, 0, 0, &(len as u32).to_be_bytes()));
                }
                match request(&mut s, stream) {
                    Then::Go => true,
                    Then::Close => {
                        let _ = s.shutdown(Shutdown::Write);
                        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                        while matches!(s.read(&mut [0u8; 4096]), Ok(n) if n > 0) {}
                        return;
                    }
                }
            }
            DATA if len > 0 => s.write_all(&h2_frame(WINDOW_UPDATE, 0, 0, &(len as u32).to_be_bytes())).is_ok(),
            GOAWAY => return,
            _ => true,
        };
        if !answered {
            return;
        }
    }
}

/// `strain --http2` with the flags in `line` against `server`.
fn h2_load(line: &str, server: &FakeServer) -> Run {
    let url = server.url();
    strain(&[&["--http2"], &args(line)[..], &[&url]].concat())
}

#[test]
fn an_http2_reset_storm_is_counted_by_code_and_the_run_goes_on() {
    // Of every four requests the server takes (over all connections), the second is refused
    // and the fourth reset as an internal error: half the requests, 100 of each code.
    let taken = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&taken);
    let server = FakeServer::start(move |s, _| {
        serve_h2(s, |s, stream| {
            let answer = match counter.fetch_add(1, Ordering::Relaxed) % 4 {
                1 => h2_reset(stream, REFUSED_STREAM),
                3 => h2_reset(stream, INTERNAL_ERROR),
                _ => h2_ok(stream),
            };
            let _ = s.write_all(&answer);
            Then::Go
        })
    });
    let run = h2_load("-c 2 -m 8 -t 1 -n 400 -d 10s -T 2s", &server);
    assert_contained(&run, Duration::from_secs(10));
    run.assert_nums(&[
        ("/sent", 400),
        ("/requests", 200),
        ("/status/200", 200),
        ("/http2/resets/REFUSED_STREAM", 100),
        ("/http2/resets/INTERNAL_ERROR", 100),
        ("/errors/reset", 200),
        ("/http2/goaways", 0),
        ("/http2/retried", 0),
        ("/http2/protocol_errors", 0),
        ("/errors/read", 0),
        ("/errors/timeout", 0),
        ("/connections_opened", 2),
    ]);
    assert_eq!(settled(&taken), 400);
    assert_eq!(server.connections(), 2, "no connection was lost to the resets");
}

/// Requests each connection of the GOAWAY server answers before it goes away.
const GOAWAY_AFTER: u64 = 30;

#[test]
fn an_http2_goaway_mid_load_retries_what_it_refused_and_the_run_goes_on() {
    // Each connection answers 30 requests; at the next one it sends GOAWAY naming the last
    // stream it answered and ends its side. The streams above it were not processed: the
    // client must send them again on a new connection, so the server answers each of the
    // 400 requests exactly once, over 14 connections (13 GOAWAYs, 30 x 13 = 390, then 10).
    let (answered, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (served, unserved) = (Arc::clone(&answered), Arc::clone(&refused));
    let server = FakeServer::start(move |s, _| {
        let (mut here, mut last) = (0, 0);
        serve_h2(s, |s, stream| {
            if here == GOAWAY_AFTER {
                unserved.fetch_add(1, Ordering::Relaxed);
                let _ = s.write_all(&h2_goaway(last, 0));
                return Then::Close;
            }
            let _ = s.write_all(&h2_ok(stream));
            served.fetch_add(1, Ordering::Relaxed);
            (here, last) = (here + 1, stream);
            Then::Go
        })
    });
    let run = h2_load("-c 1 -m 8 -t 1 -n 400 -d 10s -T 2s", &server);
    assert_contained(&run, Duration::from_secs(10));
    run.assert_nums(&[
        ("/requests", 400),
        ("/status/200", 400),
        ("/http2/goaways", 13),
        ("/connections_opened", 14),
        ("/errors/read", 0),
        ("/errors/write", 0),
        ("/errors/timeout", 0),
        ("/errors/parse", 0),
        ("/http2/protocol_errors", 0),
    ]);
    assert_eq!(settled(&answered), 400, "each request answered once");
    let retried = run.num("/http2/retried");
    let refused = refused.load(Ordering::Relaxed);
    assert!(retried >= refused && refused >= 13, "{retried} retried, {refused} refused unprocessed");
    // A request sent again is still one request sent.
    assert_eq!(run.num("/sent"), 400, "{}", run.stdout);
}

// ---------------------------------------------------------------------------------------------
// gRPC over h2c
// ---------------------------------------------------------------------------------------------

/// The schema of the gRPC tests here: a unary method and a client-streaming one, a message of
/// one string.
const NOTE_PROTO: &str = "syntax = \"proto3\";\npackage hostile;\n\
    service Echo { rpc Say (Note) returns (Note); rpc Gather (stream Note) returns (Note); }\n\
    message Note { string text = 1; }\n";

/// A gRPC message framed by hand: its flag byte, the length it claims, and its bytes.
fn grpc_message(flag: u8, claimed: u32, message: &[u8]) -> Vec<u8> {
    [&[flag][..], &claimed.to_be_bytes(), message].concat()
}

/// The Note `{"text":"x"}`: field 1, length 1, "x".
const NOTE: &[u8] = &[0x0a, 0x01, b'x'];

/// A whole gRPC answer on `stream`: headers, `body` in one DATA, and `trailers`.
fn grpc_answer(stream: u32, body: &[u8], trailers: &[(&str, &str)]) -> Vec<u8> {
    [
        h2_headers(stream, &[(":status", "200"), ("content-type", "application/grpc")], false),
        h2_frame(DATA, 0, stream, body),
        h2_headers(stream, trailers, true),
    ]
    .concat()
}

/// Calls of the gRPC runs, and how often a call is answered badly.
const CALLS: u64 = 200;
const BAD_EVERY: u64 = 10;

/// `strain grpc -n 200 -c 2` against a server that answers every tenth call it takes with
/// `bad` and the others well. Asserts what every such run shares (the server took each call
/// once, on the same two connections; the run ended well) and returns it.
fn grpc_with_bad_answers(bad: fn(u32) -> Vec<u8>) -> Run {
    grpc_calls_with_bad_answers("hostile.Echo/Say", "", bad)
}

/// [`grpc_with_bad_answers`] calling `method` with the extra flags in `line`.
fn grpc_calls_with_bad_answers(method: &str, line: &str, bad: fn(u32) -> Vec<u8>) -> Run {
    let taken = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&taken);
    let server = FakeServer::start(move |s, _| {
        serve_h2(s, |s, stream| {
            let answer = match counter.fetch_add(1, Ordering::Relaxed) % BAD_EVERY {
                3 => bad(stream),
                _ => grpc_answer(stream, &grpc_message(0, NOTE.len() as u32, NOTE), &[("grpc-status", "0")]),
            };
            let _ = s.write_all(&answer);
            Then::Go
        })
    });
    let (_dir, proto) = temp_file("note.proto", NOTE_PROTO);
    let url = format!("http://{}", server.addr);
    let mut a = vec!["grpc", "--call", method, "--proto", &proto, "-D", r#"{"text":"x"}"#];
    a.extend(args("-c 2 -t 1 -n 200 -d 10s -T 2s"));
    a.extend(args(line));
    a.push(&url);
    let run = strain(&a);
    assert_contained(&run, Duration::from_secs(10));
    assert_eq!(settled(&taken), CALLS, "each call was made once");
    assert_eq!(server.connections(), 2, "no connection was lost to a bad answer");
    run.assert_nums(&[
        ("/sent", CALLS),
        ("/connections_opened", 2),
        ("/grpc/http_errors", 0),
        ("/http2/protocol_errors", 0),
        ("/errors/read", 0),
        ("/errors/timeout", 0),
    ]);
    run
}

/// The bad answers said OK over messages that were not well framed: each such call is an OK
/// status with bad messages, a failed call of the run, and none of its messages is counted.
fn assert_bad_messages(run: &Run) {
    let bad = CALLS / BAD_EVERY;
    run.assert_nums(&[
        ("/requests", CALLS),
        ("/grpc/codes/ok", CALLS),
        ("/grpc/bad_messages", bad),
        ("/grpc/missing_status", 0),
        ("/grpc/messages_received", CALLS - bad),
        ("/errors/status", bad),
        ("/errors/parse", 0),
    ]);
    assert!(run.stdout.contains(&format!("no grpc-status 0, bad messages {bad}")), "{}", run.stdout);
}

#[test]
fn a_grpc_length_prefix_past_the_data_fails_only_its_call() {
    // The prefix claims 100 bytes; the stream ends after 3.
    let run = grpc_with_bad_answers(|stream| grpc_answer(stream, &grpc_message(0, 100, NOTE), &[("grpc-status", "0")]));
    assert_bad_messages(&run);
}

#[test]
fn a_grpc_message_flag_of_2_fails_only_its_call() {
    let run = grpc_with_bad_answers(|stream| {
        grpc_answer(stream, &grpc_message(2, NOTE.len() as u32, NOTE), &[("grpc-status", "0")])
    });
    assert_bad_messages(&run);
}

#[test]
fn grpc_trailers_without_a_status_fail_only_their_call() {
    let run = grpc_with_bad_answers(|stream| {
        grpc_answer(stream, &grpc_message(0, NOTE.len() as u32, NOTE), &[("x-hostile", "no status")])
    });
    let bad = CALLS / BAD_EVERY;
    run.assert_nums(&[("/grpc/missing_status", bad), ("/grpc/bad_messages", 0), ("/grpc/codes/ok", CALLS - bad)]);
    run.assert_nums(&[("/requests", CALLS), ("/grpc/messages_received", CALLS), ("/errors/status", bad)]);
    assert!(run.stdout.contains(&format!("no grpc-status {bad}, bad messages 0")), "{}", run.stdout);
}

#[test]
fn a_grpc_length_prefix_past_the_data_fails_only_its_client_streaming_call() {
    // Client-streaming replies are read as they arrive, not from a whole captured body: the
    // same truncated message must be caught there too (it was counted a good call before).
    let run = grpc_calls_with_bad_answers("hostile.Echo/Gather", "--stream-messages 2", |stream| {
        grpc_answer(stream, &grpc_message(0, 100, NOTE), &[("grpc-status", "0")])
    });
    let bad = CALLS / BAD_EVERY;
    // `requests` counts the replies of streaming calls: the bad ones brought none whole.
    run.assert_nums(&[
        ("/requests", CALLS - bad),
        ("/grpc/codes/ok", CALLS),
        ("/grpc/bad_messages", bad),
        ("/grpc/missing_status", 0),
        ("/grpc/messages_sent", 2 * CALLS),
        ("/grpc/messages_received", CALLS - bad),
        ("/errors/status", bad),
        ("/errors/parse", 0),
    ]);
}

#[test]
fn a_grpc_message_flag_of_2_fails_only_its_client_streaming_call() {
    // Read as it arrives, the flag is refused at once: the call's stream is reset before its
    // trailers and the connection goes on. It is one failed call, a bad message, and not a
    // parse error besides (it was counted twice in the run's errors before).
    let run = grpc_calls_with_bad_answers("hostile.Echo/Gather", "--stream-messages 2", |stream| {
        grpc_answer(stream, &grpc_message(2, NOTE.len() as u32, NOTE), &[("grpc-status", "0")])
    });
    let bad = CALLS / BAD_EVERY;
    run.assert_nums(&[
        ("/requests", CALLS - bad),
        ("/grpc/codes/ok", CALLS - bad),
        ("/grpc/bad_messages", bad),
        ("/grpc/missing_status", 0),
        ("/grpc/messages_received", CALLS - bad),
        ("/errors/status", bad),
        ("/errors/parse", 0),
    ]);
    assert!(!run.stdout.contains("Socket errors"), "{}", run.stdout);
}
