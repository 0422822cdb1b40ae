//! The gRPC service (`OriginConfig::grpc`) end to end, with strain's own HTTP/2 session as the
//! client: the four echo methods on one connection, the statuses of bad calls, shares of calls
//! failed on purpose, the delay, reflection, and the counts the server keeps of all of it.

use prost::Message;

use super::*;
use crate::grpc::echo::{EchoReply, EchoRequest};
use crate::grpc::reflection::{self, Answer, Ask};
use crate::grpc::status::Code;
use crate::grpc::wire::{frame, Decoder, MAX_MESSAGE};
use crate::h2::{Event, Session, Settings};
use crate::proto::grpc::origin::{GrpcConfig, GrpcService};

/// What one call got back.
#[derive(Debug, Default)]
struct Outcome {
    status: u16,
    /// Every field of its header blocks (headers and trailers).
    fields: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
    /// Its stream's close code.
    closed: Option<u32>,
}

impl Outcome {
    fn field(&self, name: &str) -> Option<String> {
        self.fields.iter().find(|(n, _)| n == name.as_bytes()).map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    }

    fn grpc_status(&self) -> Option<u32> {
        self.field("grpc-status").and_then(|s| s.parse().ok())
    }

    fn messages(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut d = Decoder::new(MAX_MESSAGE);
        d.feed(&self.body, &mut |m| out.push(m.to_vec())).unwrap();
        d.finish().unwrap();
        out
    }

    fn replies(&self) -> Vec<EchoReply> {
        self.messages().iter().map(|m| EchoReply::decode(m.as_slice()).unwrap()).collect()
    }
}

/// A gRPC client connection: strain's session, streamed, over a blocking socket.
struct Client {
    socket: TcpStream,
    session: Session,
    outcomes: std::collections::HashMap<i32, Outcome>,
}

impl Client {
    fn new(server: &Server) -> Client {
        let socket = server.connect();
        socket.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut session = Session::client(Settings::default()).unwrap();
        session.set_streamed(true);
        Client { socket, session, outcomes: Default::default() }
    }

    /// Opens a call to `path` with `content_type`, sending `messages` and ending if `end`.
    fn open(&mut self, method: &str, path: &str, content_type: &str, messages: &[Vec<u8>], end: bool) -> i32 {
        let fields = [
            (":method", method),
            (":scheme", "http"),
            (":authority", "x"),
            (":path", path),
            ("content-type", content_type),
            ("te", "trailers"),
        ];
        let id = self.session.submit_request_streamed(&fields).unwrap();
        for m in messages {
            self.send(id, m);
        }
        if end {
            self.session.end_body(id).unwrap();
        }
        id
    }

    /// A call to `path` whose request is `messages`, ended.
    fn call(&mut self, path: &str, messages: &[Vec<u8>]) -> i32 {
        self.open("POST", path, "application/grpc", messages, true)
    }

    fn send(&mut self, id: i32, message: &[u8]) {
        let mut framed = Vec::new();
        frame(message, &mut framed);
        self.session.push_body(id, &framed).unwrap();
    }

    /// Writes and reads until every stream of `ids` has closed.
    fn finish(&mut self, ids: &[i32]) {
        let deadline = Instant::now() + TIMEOUT;
        let mut buf = vec![0u8; 64 * 1024];
        while !ids.iter().all(|id| self.outcomes.get(id).is_some_and(|o| o.closed.is_some())) {
            assert!(Instant::now() < deadline, "calls unfinished: {:?}", self.outcomes);
            self.step(&mut buf);
        }
    }

    /// One exchange: what the session has to send, then what arrives in a short while.
    fn step(&mut self, buf: &mut [u8]) {
        let mut out = Vec::new();
        self.session.output(&mut out).unwrap();
        self.socket.write_all(&out).unwrap();
        match self.socket.read(buf) {
            Ok(0) => panic!("the server closed"),
            Ok(n) => self.session.receive(&buf[..n]).unwrap(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("{e}"),
        }
        for event in std::mem::take(self.session.events()) {
            match event {
                Event::Status { stream, status } => self.outcomes.entry(stream).or_default().status = status,
                Event::Fields { stream, fields } => self.outcomes.entry(stream).or_default().fields.extend(fields),
                Event::Body { stream, data } => self.outcomes.entry(stream).or_default().body.extend(data),
                Event::Closed { stream, code } => self.outcomes.entry(stream).or_default().closed = Some(code),
                _ => {}
            }
        }
    }

    fn outcome(&self, id: i32) -> &Outcome {
        &self.outcomes[&id]
    }
}

fn request(message: &str, count: u32, reply_size: u32) -> Vec<u8> {
    EchoRequest { message: message.into(), payload: b"p".to_vec(), count, reply_size }.encode_to_vec()
}

fn grpc_server(threads: usize, grpc: GrpcConfig, delay: Duration) -> Server {
    let service = std::sync::Arc::new(GrpcService::new(&grpc).unwrap());
    Server::start(OriginConfig { threads, delay, units: vec![service], ..OriginConfig::default() })
}

/// The server's count `name` (`calls.unary`, `statuses.OK`, `messages_sent`).
fn count(stats: &OriginStats, name: &str) -> u64 {
    stats.units.get(&format!("grpc.{name}")).expect(name)
}

const UNARY: &str = "/strain.echo.v1.Echo/Unary";
const SERVER_STREAM: &str = "/strain.echo.v1.Echo/ServerStream";
const CLIENT_STREAM: &str = "/strain.echo.v1.Echo/ClientStream";
const BIDI: &str = "/strain.echo.v1.Echo/Bidi";

#[test]
fn the_four_methods_echo_and_the_server_counts_them() {
    let server = grpc_server(2, GrpcConfig::default(), Duration::ZERO);
    let mut c = Client::new(&server);
    let unary = c.call(UNARY, &[request("u", 0, 0)]);
    let stream = c.call(SERVER_STREAM, &[request("s", 3, 100)]);
    let defaulted = c.call(SERVER_STREAM, &[request("d", 0, 0)]);
    let client = c.call(CLIENT_STREAM, &[request("a", 0, 0), request("b", 0, 0), request("c", 0, 5)]);
    // Bidi: each reply comes before the next request is sent.
    let bidi = c.open("POST", BIDI, "application/grpc+proto", &[], false);
    let mut buf = vec![0u8; 64 * 1024];
    for k in 0..4u64 {
        c.send(bidi, &request(&format!("b{k}"), 0, 0));
        let deadline = Instant::now() + TIMEOUT;
        while c.outcomes.get(&bidi).map_or(0, |o| o.messages().len() as u64) <= k {
            assert!(Instant::now() < deadline, "no reply to bidi message {k}");
            c.step(&mut buf);
        }
    }
    c.session.end_body(bidi).unwrap();
    c.finish(&[unary, stream, defaulted, client, bidi]);

    for id in [unary, stream, defaulted, client, bidi] {
        let o = c.outcome(id);
        assert_eq!((o.status, o.grpc_status(), o.closed), (200, Some(0), Some(0)), "{o:?}");
        assert_eq!(o.field("content-type").as_deref(), Some("application/grpc"));
    }
    let reply = |message: &str, payload: &[u8], sequence, received| EchoReply {
        message: message.into(),
        payload: payload.to_vec(),
        sequence,
        received,
    };
    assert_eq!(c.outcome(unary).replies(), [reply("u", b"p", 0, 1)]);
    let streamed = c.outcome(stream).replies();
    assert_eq!(streamed.iter().map(|r| r.sequence).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(streamed.iter().all(|r| r.payload.len() == 100 && r.message == "s"));
    assert_eq!(c.outcome(defaulted).replies().len(), 10, "count 0 means 10");
    assert_eq!(c.outcome(client).replies(), [reply("c", b"hello", 0, 3)]);
    let bidi_replies = c.outcome(bidi).replies();
    assert_eq!(bidi_replies, (0..4).map(|k| reply(&format!("b{k}"), b"p", k, k as u32 + 1)).collect::<Vec<_>>());

    drop(c);
    let stats = server.stop();
    let calls = ["unary", "server_stream", "client_stream", "bidi"].map(|m| count(&stats, &format!("calls.{m}")));
    assert_eq!(calls, [1, 2, 1, 1]);
    assert_eq!((count(&stats, "statuses.OK"), stats.requests, stats.ok), (5, 5, 5));
    assert_eq!((count(&stats, "messages_received"), count(&stats, "messages_sent")), (1 + 2 + 3 + 4, 1 + 13 + 1 + 4));
}

#[test]
fn calls_that_are_not_right_get_their_status() {
    let server = grpc_server(1, GrpcConfig::default(), Duration::ZERO);
    let mut c = Client::new(&server);
    let unknown = c.call("/strain.echo.v1.Echo/Nope", &[]);
    let wrong_type = c.open("POST", UNARY, "application/json", &[b"{}".to_vec()], true);
    let get = c.open("GET", UNARY, "application/grpc", &[], true);
    let garbage = c.call(UNARY, &[vec![0xff, 0xff, 0xff]]);
    let two = c.call(UNARY, &[request("a", 0, 0), request("b", 0, 0)]);
    let none = c.call(UNARY, &[]);
    let too_big = c.call(UNARY, &[request("a", 0, 4_000_001)]);
    // A message cut short by the end of the stream.
    let cut = c.open("POST", UNARY, "application/grpc", &[], false);
    c.session.push_body(cut, &[0, 0, 0, 0, 9, 1, 2]).unwrap();
    c.session.end_body(cut).unwrap();
    let all = [unknown, wrong_type, get, garbage, two, none, too_big, cut];
    c.finish(&all);
    let got: Vec<(u16, Option<u32>)> =
        all.iter().map(|&id| (c.outcome(id).status, c.outcome(id).grpc_status())).collect();
    assert_eq!(
        got,
        [
            (200, Some(12)),
            (415, None),
            (405, None),
            (200, Some(3)),
            (200, Some(13)),
            (200, Some(13)),
            (200, Some(3)),
            (200, Some(13)),
        ]
    );
    let o = c.outcome(unknown);
    assert!(o.body.is_empty(), "Trailers-Only");
    assert_eq!(o.field("grpc-message").as_deref(), Some("unknown method /strain.echo.v1.Echo/Nope"));
    // The counters' page is still served over HTTP/2.
    let stats = c.open("GET", "/_strain/stats", "", &[], true);
    c.finish(&[stats]);
    let json: serde_json::Value = serde_json::from_slice(&c.outcome(stats).body).unwrap();
    assert_eq!(json["grpc"]["statuses"]["UNIMPLEMENTED"], 1);
    assert_eq!(json["grpc"]["statuses"]["INTERNAL"], 3);
    assert_eq!(json["grpc"]["refused"], 2);
    drop(c);
    let stats = server.stop();
    assert_eq!(stats.requests, 6, "the calls, not the refused requests");
}

#[test]
fn shares_of_calls_fail_exactly_per_deck() {
    let fail = vec![(Code::NotFound, 0.1), (Code::Unavailable, 0.05)];
    let server = grpc_server(1, GrpcConfig { reflection: true, fail }, Duration::ZERO);
    let mut c = Client::new(&server);
    let mut counts = [0u32; Code::COUNT];
    // In batches, below the server's limit on streams at once.
    for _ in 0..4 {
        let ids: Vec<i32> = (0..50).map(|_| c.call(UNARY, &[request("x", 0, 0)])).collect();
        c.finish(&ids);
        for id in ids {
            let o = c.outcome(id);
            counts[o.grpc_status().unwrap() as usize] += 1;
            if o.grpc_status() != Some(0) {
                assert!(o.body.is_empty() && o.messages().is_empty(), "Trailers-Only");
            }
        }
    }
    assert_eq!((counts[0], counts[5], counts[14]), (170, 20, 10));
    drop(c);
    let stats = server.stop();
    assert_eq!((count(&stats, "statuses.NOT_FOUND"), count(&stats, "statuses.UNAVAILABLE")), (20, 10));
    assert_eq!(count(&stats, "calls.unary"), 200);
}

#[test]
fn the_delay_holds_each_reply() {
    let delay = Duration::from_millis(60);
    let server = grpc_server(1, GrpcConfig::default(), delay);
    let mut c = Client::new(&server);
    let start = Instant::now();
    let unary = c.call(UNARY, &[request("u", 0, 0)]);
    c.finish(&[unary]);
    let took = start.elapsed();
    assert!(took >= delay && took < delay * 3, "unary took {took:?}");
    let start = Instant::now();
    let stream = c.call(SERVER_STREAM, &[request("s", 4, 0)]);
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = None;
    while c.outcomes.get(&stream).is_none_or(|o| o.closed.is_none()) {
        c.step(&mut buf);
        if first.is_none() && c.outcomes.get(&stream).is_some_and(|o| !o.body.is_empty()) {
            first = Some(start.elapsed());
        }
        assert!(start.elapsed() < TIMEOUT);
    }
    let (first, took) = (first.unwrap(), start.elapsed());
    assert_eq!(c.outcome(stream).replies().len(), 4);
    assert!(first >= delay && first < delay * 2, "first reply after {first:?}");
    assert!(took >= delay * 4 && took < delay * 6, "four replies took {took:?}");
}

#[test]
fn reflection_answers_on_both_paths_unless_it_is_off() {
    let question = |ask| reflection::Request { host: String::new(), ask: Some(ask) }.encode_to_vec();
    let server = grpc_server(1, GrpcConfig::default(), Duration::ZERO);
    let mut c = Client::new(&server);
    let ids: Vec<i32> = reflection::PATHS
        .iter()
        .map(|path| {
            let asks = [
                question(Ask::ListServices(String::new())),
                question(Ask::FileContainingSymbol("strain.echo.v1.Echo.Unary".into())),
                question(Ask::FileContainingSymbol("no.Such".into())),
            ];
            c.call(path, &asks)
        })
        .collect();
    c.finish(&ids);
    for id in ids {
        let o = c.outcome(id);
        assert_eq!(o.grpc_status(), Some(0));
        let answers: Vec<Option<Answer>> =
            o.messages().iter().map(|m| reflection::Response::decode(m.as_slice()).unwrap().answer).collect();
        assert!(matches!(&answers[0], Some(Answer::Services(s)) if s.service.len() == 3), "{answers:?}");
        assert!(matches!(&answers[1], Some(Answer::Files(f)) if f.file_descriptor_proto.len() == 1));
        assert!(matches!(&answers[2], Some(Answer::Error(e)) if e.error_code == 5));
    }
    drop(c);
    assert_eq!(count(&server.stop(), "calls.reflection"), 2);

    let server = grpc_server(1, GrpcConfig { reflection: false, fail: Vec::new() }, Duration::ZERO);
    let mut c = Client::new(&server);
    let id = c.call(reflection::PATHS[0], &[question(Ask::ListServices(String::new()))]);
    c.finish(&[id]);
    assert_eq!(c.outcome(id).grpc_status(), Some(12));
}

#[test]
fn a_call_the_client_resets_counts_as_cancelled() {
    let server = grpc_server(1, GrpcConfig::default(), Duration::from_secs(5));
    let mut c = Client::new(&server);
    let id = c.call(SERVER_STREAM, &[request("s", 3, 0)]);
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..5 {
        c.step(&mut buf);
    }
    c.session.reset(id, 0x8);
    c.finish(&[id]);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut stats = server.connect();
        stats.write_all(b"GET /_strain/stats HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
        let page = String::from_utf8(read_to_close(&mut stats)).unwrap();
        if page.contains("\"CANCELLED\":1") {
            break;
        }
        assert!(Instant::now() < deadline, "{page}");
        thread::sleep(Duration::from_millis(10));
    }
    drop(c);
    assert_eq!(server.stop().requests, 0, "a cancelled call was not answered");
}

#[test]
fn the_keepalive_limit_is_a_goaway_after_that_many_calls() {
    let config = OriginConfig {
        threads: 1,
        keepalive: 2,
        units: vec![std::sync::Arc::new(GrpcService::new(&GrpcConfig::default()).unwrap())],
        ..OriginConfig::default()
    };
    let server = Server::start(config);
    let mut c = Client::new(&server);
    let ids: Vec<i32> = (0..3).map(|_| c.call(UNARY, &[request("k", 0, 0)])).collect();
    c.finish(&ids);
    let got: Vec<(Option<u32>, Option<u32>)> =
        ids.iter().map(|&id| (c.outcome(id).grpc_status(), c.outcome(id).closed)).collect();
    assert_eq!(got, [(Some(0), Some(0)), (Some(0), Some(0)), (None, Some(0x7))], "the third is refused");
}

#[test]
fn random_messages_on_every_path_end_with_a_status_and_the_server_goes_on() {
    let server = grpc_server(1, GrpcConfig::default(), Duration::ZERO);
    let mut c = Client::new(&server);
    let mut rng = crate::rng::Rng::new(32);
    let paths = [UNARY, SERVER_STREAM, CLIENT_STREAM, BIDI, reflection::PATHS[0], "/x"];
    for _ in 0..10 {
        let ids: Vec<i32> = (0..20)
            .map(|_| {
                let path = paths[rng.below(paths.len() as u64) as usize];
                let id = c.open("POST", path, "application/grpc", &[], false);
                // A valid prefix over random bytes, or random bytes alone.
                let len = rng.below(40) as usize;
                let mut data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                if rng.chance(0.5) {
                    let mut framed = Vec::new();
                    frame(&data, &mut framed);
                    data = framed;
                }
                c.session.push_body(id, &data).unwrap();
                c.session.end_body(id).unwrap();
                id
            })
            .collect();
        c.finish(&ids);
        for id in ids {
            let o = c.outcome(id);
            assert!(o.status == 200 && o.grpc_status().is_some(), "{o:?}");
        }
    }
    let id = c.call(UNARY, &[request("still", 0, 0)]);
    c.finish(&[id]);
    assert_eq!(c.outcome(id).grpc_status(), Some(0));
}
