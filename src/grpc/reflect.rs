//! The schema from the server itself, through gRPC server reflection, before any load starts:
//! one blocking HTTP/2 connection (h2c with prior knowledge for `http://`, TLS with ALPN `h2`
//! for `https://`), driven through strain's nghttp2 session with a deadline. It asks
//! `list_services` and `file_containing_symbol` for the called service in one stream (every
//! question sent at once with END_STREAM: the server answers each in order, and a one-shot
//! client needs no more), first on `grpc.reflection.v1`, then on `v1alpha` when the server has
//! no v1; then asks by file name for any import the answers lacked, and builds the pool with
//! [`schema::from_files`].
//!
//! It sits apart from the engine on purpose: it runs once, so plain blocking sockets and
//! simple code beat the event loop's machinery.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use prost::Message as _;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::DescriptorPool;

use super::reflection::{self, Answer, Ask, ErrorAnswer, Request, Response};
use super::schema::{self, listing, SchemaError};
use super::status::Code;
use super::wire::{self, Decoder};
use crate::h2::{Event, H2Error, Session, Settings};
use crate::net::tls::{self, Blocking, TlsError, TlsSetup};

/// Rounds of `file_by_filename` questions for imports the answers lacked (each round can only
/// reveal imports one level deeper; real servers send every import in the first answer).
const MAX_ROUNDS: usize = 8;

/// Why the server's schema could not be had (each one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReflectError {
    /// The TCP connection failed (refused, unreachable, timed out).
    #[error("reflection: cannot connect to {addr}: {reason}")]
    Connect {
        /// The server.
        addr: SocketAddr,
        /// The I/O error.
        reason: String,
    },
    /// The TLS handshake failed, or the server would not speak HTTP/2.
    #[error("reflection: {0}")]
    Tls(String),
    /// The server did not answer within the deadline.
    #[error("reflection: {addr} did not answer within {}", humantime::format_duration(*.after))]
    Timeout {
        /// The server.
        addr: SocketAddr,
        /// The deadline.
        after: Duration,
    },
    /// The connection broke, or HTTP/2 failed.
    #[error("reflection: {0}")]
    Protocol(String),
    /// Neither reflection version is served.
    #[error(
        "{addr} has no gRPC reflection service (UNIMPLEMENTED on grpc.reflection.v1 and v1alpha); \
         give the schema with --proto or --protoset"
    )]
    NoReflection {
        /// The server.
        addr: SocketAddr,
    },
    /// The server does not list the called service.
    #[error("the server has no service {service:?}; {}", listing("it lists", known))]
    NotOnServer {
        /// The service called.
        service: String,
        /// What the server lists, sorted.
        known: Vec<String>,
    },
    /// The reflection call ended with a gRPC error.
    #[error("reflection: the call failed with {}{}", .code, if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    Status {
        /// The status code's canonical name (or the number, when not a code).
        code: String,
        /// `grpc-message`.
        message: String,
    },
    /// The server answered a question with an error.
    #[error("reflection: asked for {asked}, the server answered {code}: {message}")]
    Answer {
        /// The question.
        asked: String,
        /// The status code's canonical name (or its number).
        code: String,
        /// Its message.
        message: String,
    },
    /// The answers do not make a schema.
    #[error("{0}")]
    Schema(SchemaError),
}

impl From<H2Error> for ReflectError {
    fn from(e: H2Error) -> Self {
        ReflectError::Protocol(e.to_string())
    }
}

/// Asks the server at `addr` for the schema of `service` (`pkg.Service`): `authority` is the
/// `:authority` to send, `tls` the client setup for `https://` (offering ALPN `h2`, as
/// `TlsSetup::new(host, insecure, &[b"h2"])` makes it), `timeout` the deadline for it all.
pub fn fetch(
    addr: SocketAddr,
    authority: &str,
    tls: Option<&TlsSetup>,
    service: &str,
    timeout: Duration,
) -> Result<DescriptorPool, ReflectError> {
    let deadline = Instant::now() + timeout;
    let mut client = Client {
        conn: Conn::open(addr, tls, timeout)?,
        session: Session::client(Settings::default())?,
        addr,
        timeout,
        deadline,
        authority: authority.to_string(),
        scheme: if tls.is_some() { "https" } else { "http" },
    };
    client.session.set_capture(true);
    let first = [Ask::ListServices(String::new()), Ask::FileContainingSymbol(service.to_string())];
    let mut found = None;
    for path in reflection::PATHS {
        if let Some(answers) = client.ask(path, &first)? {
            found = Some((path, answers));
            break;
        }
    }
    let Some((path, answers)) = found else { return Err(ReflectError::NoReflection { addr }) };
    let mut listed = Vec::new();
    let mut files = Vec::new();
    let mut refused = None;
    for (asked, answer) in answers {
        match answer {
            Answer::Services(list) => listed.extend(list.service.into_iter().map(|s| s.name)),
            Answer::Files(f) => files.extend(f.file_descriptor_proto),
            Answer::Error(e) => refused = refused.or(Some((asked, e))),
            // Not asked for: a server's answer to another question is ignored.
            Answer::ExtensionNumbers(_) => {}
        }
    }
    if !listed.iter().any(|s| s == service) {
        listed.sort();
        return Err(ReflectError::NotOnServer { service: service.to_string(), known: listed });
    }
    if let Some((asked, e)) = refused {
        return Err(answer_error(&asked, &e));
    }
    for _ in 0..MAX_ROUNDS {
        let missing = missing_imports(&files);
        if missing.is_empty() {
            break;
        }
        let asks: Vec<Ask> = missing.into_iter().map(Ask::FileByFilename).collect();
        let answers = client.ask(path, &asks)?.ok_or_else(|| ReflectError::Protocol(format!("{path} vanished")))?;
        for (asked, answer) in answers {
            match answer {
                Answer::Files(f) => files.extend(f.file_descriptor_proto),
                Answer::Error(e) => return Err(answer_error(&asked, &e)),
                Answer::Services(_) | Answer::ExtensionNumbers(_) => {}
            }
        }
    }
    schema::from_files(&files, "the server's reflection answers").map_err(ReflectError::Schema)
}

fn answer_error(asked: &Ask, e: &ErrorAnswer) -> ReflectError {
    let asked = match asked {
        Ask::FileByFilename(f) => format!("file {f}"),
        Ask::FileContainingSymbol(s) => format!("symbol {s}"),
        Ask::ListServices(_) => "the services".to_string(),
        Ask::FileContainingExtension(_) | Ask::AllExtensionNumbersOfType(_) => "an extension".to_string(),
    };
    ReflectError::Answer { asked, code: code_name(e.error_code), message: e.error_message.clone() }
}

fn code_name(code: i32) -> String {
    usize::try_from(code).ok().and_then(|c| Code::ALL.get(c)).map_or(code.to_string(), |c| c.canonical())
}

/// Files the answers import but did not send (the well-known types excepted: strain has them).
fn missing_imports(files: &[Vec<u8>]) -> Vec<String> {
    let decoded: Vec<FileDescriptorProto> =
        files.iter().filter_map(|b| FileDescriptorProto::decode(b.as_slice()).ok()).collect();
    let wkt = DescriptorPool::global();
    let mut missing: Vec<String> = decoded
        .iter()
        .flat_map(|f| f.dependency.iter())
        .filter(|d| !decoded.iter().any(|f| f.name() == d.as_str()) && wkt.get_file_by_name(d).is_none())
        .cloned()
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

/// One connection's state.
struct Client {
    conn: Conn,
    session: Session,
    addr: SocketAddr,
    timeout: Duration,
    deadline: Instant,
    authority: String,
    scheme: &'static str,
}

impl Client {
    /// Asks `asks` on one stream to `path`; each answer beside its question. `None`: the
    /// server does not serve `path` (UNIMPLEMENTED, or HTTP 404).
    fn ask(&mut self, path: &str, asks: &[Ask]) -> Result<Option<Vec<(Ask, Answer)>>, ReflectError> {
        let mut body = Vec::new();
        for ask in asks {
            let request = Request { host: String::new(), ask: Some(ask.clone()) };
            wire::frame(&request.encode_to_vec(), &mut body);
        }
        let fields: [(&[u8], &[u8]); 8] = [
            (b":method", b"POST"),
            (b":scheme", self.scheme.as_bytes()),
            (b":authority", self.authority.as_bytes()),
            (b":path", path.as_bytes()),
            (b"content-type", b"application/grpc"),
            (b"grpc-accept-encoding", wire::ACCEPTED.as_bytes()),
            (b"te", b"trailers"),
            (b"user-agent", concat!("strain/", env!("CARGO_PKG_VERSION")).as_bytes()),
        ];
        let stream = self.session.submit_request(&fields, Some(body))?;
        let (http, reset) = self.run(stream)?;
        let captured = self.session.take_captured(stream).unwrap_or_default();
        if let Some(code) = reset.filter(|c| *c != 0) {
            return Err(ReflectError::Protocol(format!(
                "the server reset the stream ({})",
                crate::h2::code_name(code)
            )));
        }
        let header = |name: &[u8]| captured.headers.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_slice());
        let status = header(b"grpc-status");
        if http == Some(404) || status.and_then(Code::of_trailer) == Some(Code::Unimplemented) {
            return Ok(None);
        }
        if http != Some(200) {
            let http = http.map_or("none".to_string(), |s| s.to_string());
            return Err(ReflectError::Protocol(format!("{path} answered HTTP status {http}, not 200")));
        }
        match status.map(|s| (s, Code::of_trailer(s))) {
            Some((_, Some(Code::Ok))) => {}
            Some((raw, code)) => {
                let code = code.map_or_else(|| String::from_utf8_lossy(raw).into_owned(), Code::canonical);
                let message = percent_decoded(header(b"grpc-message").unwrap_or_default());
                return Err(ReflectError::Status { code, message });
            }
            None => return Err(ReflectError::Protocol(format!("{path} answered without a grpc-status"))),
        }
        let mut responses = Vec::new();
        let mut bad = None;
        let mut decoder = Decoder::new(wire::MAX_MESSAGE);
        // Servers may compress the answers (grpcio gzips them even unasked).
        decoder.encoding(wire::Encoding::of_fields(&captured.headers));
        let framing = decoder.feed(&captured.body, &mut |m| match Response::decode(m) {
            Ok(r) => responses.push(r),
            Err(e) => bad = bad.take().or(Some(e.to_string())),
        });
        framing.and_then(|()| decoder.finish()).map_err(|e| ReflectError::Protocol(format!("the answers: {e}")))?;
        if let Some(e) = bad {
            return Err(ReflectError::Protocol(format!("an answer does not decode: {e}")));
        }
        if responses.len() != asks.len() {
            return Err(ReflectError::Protocol(format!("{} questions got {} answers", asks.len(), responses.len())));
        }
        Ok(Some(asks.iter().cloned().zip(responses).filter_map(|(ask, r)| r.answer.map(|a| (ask, a))).collect()))
    }

    /// Sends and receives until `stream` closes: its HTTP status and its close code.
    fn run(&mut self, stream: i32) -> Result<(Option<u16>, Option<u32>), ReflectError> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut http = None;
        loop {
            out.clear();
            self.session.output(&mut out)?;
            if !out.is_empty() {
                self.conn.set_timeout(self.remaining()?).map_err(|e| self.io_error(e))?;
                self.conn.write_all(&out).map_err(|e| self.io_error(e))?;
            }
            let mut closed = None;
            for event in self.session.events().drain(..) {
                match event {
                    Event::Status { stream: s, status } if s == stream => http = Some(status),
                    Event::Closed { stream: s, code } if s == stream => closed = Some(code),
                    _ => {}
                }
            }
            if closed.is_some() {
                return Ok((http, closed));
            }
            self.conn.set_timeout(self.remaining()?).map_err(|e| self.io_error(e))?;
            let n = self.conn.read(&mut buf).map_err(|e| self.io_error(e))?;
            if n == 0 {
                let why = format!("the server closed the connection before answering{}", self.hint());
                return Err(ReflectError::Protocol(why));
            }
            self.session.receive(&buf[..n]).map_err(|e| ReflectError::Protocol(format!("{e}{}", self.hint())))?;
        }
    }

    /// A server that never sent HTTP/2's SETTINGS may speak only HTTP/1.1.
    fn hint(&self) -> &'static str {
        match (self.session.peer_spoke(), self.scheme) {
            (true, _) => "",
            (false, "http") => " (it spoke no HTTP/2: http:// means h2c with prior knowledge)",
            (false, _) => " (it spoke no HTTP/2)",
        }
    }

    fn remaining(&self) -> Result<Duration, ReflectError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReflectError::Timeout { addr: self.addr, after: self.timeout });
        }
        Ok(left)
    }

    fn io_error(&self, e: io::Error) -> ReflectError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                ReflectError::Timeout { addr: self.addr, after: self.timeout }
            }
            _ => match e.get_ref().and_then(|inner| inner.downcast_ref::<TlsError>()) {
                Some(t) => ReflectError::Tls(t.to_string()),
                None => ReflectError::Protocol(format!("connection to {}: {e}{}", self.addr, self.hint())),
            },
        }
    }
}

/// `grpc-message` is percent-encoded (gRPC's HTTP/2 protocol document); undone leniently.
fn percent_decoded(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = raw
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (raw[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A blocking connection, plain or TLS.
struct Conn(Blocking);

impl Conn {
    fn open(addr: SocketAddr, setup: Option<&TlsSetup>, timeout: Duration) -> Result<Conn, ReflectError> {
        let connect_error = |e: io::Error| ReflectError::Connect { addr, reason: e.to_string() };
        let sock = TcpStream::connect_timeout(&addr, timeout).map_err(connect_error)?;
        sock.set_nodelay(true).map_err(connect_error)?;
        let Some(setup) = setup else { return Ok(Conn(Blocking::Plain(sock))) };
        sock.set_read_timeout(Some(timeout)).map_err(connect_error)?;
        sock.set_write_timeout(Some(timeout)).map_err(connect_error)?;
        let conn = tls::handshake_blocking(sock, setup).map_err(|e| {
            match e.get_ref().and_then(|i| i.downcast_ref::<TlsError>()) {
                Some(t) => ReflectError::Tls(t.to_string()),
                None if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    ReflectError::Timeout { addr, after: timeout }
                }
                None => ReflectError::Tls(format!("TLS handshake with {addr}: {e}")),
            }
        })?;
        if conn.alpn() != Some(b"h2") {
            return Err(ReflectError::Tls(format!("{addr} did not agree to HTTP/2 by ALPN, which gRPC needs")));
        }
        Ok(Conn(conn))
    }

    fn set_timeout(&self, d: Duration) -> io::Result<()> {
        self.0.socket().set_read_timeout(Some(d))?;
        self.0.socket().set_write_timeout(Some(d))
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Conn {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.write(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests;
