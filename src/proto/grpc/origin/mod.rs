//! The origin's gRPC service (`--grpc`): `strain.echo.v1.Echo` (see `echo.proto`) and server
//! reflection, over the origin's HTTP/2 (h2c and, with TLS, h2), so demos and tests need no
//! other server. It is a unit of the origin ([`Unit::streams`]): the HTTP/2 driver turns its
//! session's streamed mode on and hands every stream but `/_strain/stats` here: [`Calls`]'s
//! `start` checks the request is a gRPC call
//! (else 415 or 405), finds its method (else UNIMPLEMENTED, Trailers-Only) and may fail it on
//! purpose (`--status CODE:SHARE`, dealt from a per-thread [`deck`]); each [`call`] then takes
//! its messages as DATA arrives and makes its replies, which `pump` pushes when they are due
//! (the origin's `--delay` and service time, through the worker's timers) and as the stream
//! takes them. Calls, statuses and messages are the unit's [`counters`].
//!
//! Reflection and UNIMPLEMENTED answers are never delayed or failed on purpose: only the echo
//! methods stand in for the service under test. A failing call ends at once, Trailers-Only.

mod call;
pub mod counters;
pub mod deck;
mod reflect;

use std::sync::Arc;
use std::time::Instant;

use call::{Call, Pumped};
use counters::Method;
use deck::Deck;
use reflect::Reflection;

use crate::grpc::echo;
use crate::grpc::reflection::PATHS;
use crate::grpc::status::Code;
use crate::grpc::wire::Encoding;
use crate::h2::{Event, RequestHead, Session};
use crate::origin::unit::{Serve, Streams, Unit};
use crate::origin::OriginError;

/// The origin's gRPC service (`strain origin --grpc`).
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcConfig {
    /// Serve server reflection (`grpc.reflection.v1` and `v1alpha`).
    pub reflection: bool,
    /// Shares of echo calls that end with a status other than OK, each code once, the shares
    /// summing to at most 1 (`--status CODE:SHARE`).
    pub fail: Vec<(Code, f64)>,
}

impl Default for GrpcConfig {
    fn default() -> Self {
        GrpcConfig { reflection: true, fail: Vec::new() }
    }
}

/// The gRPC service as the origin serves it, fixed at start: a unit of the origin.
#[derive(Debug, Clone)]
pub struct GrpcService(Arc<GrpcSite>);

impl GrpcService {
    /// The service `config` asks for; refused if its shares are not shares (see
    /// [`GrpcSite::new`]).
    pub fn new(config: &GrpcConfig) -> Result<GrpcService, OriginError> {
        Ok(GrpcService(Arc::new(GrpcSite::new(config)?)))
    }
}

impl Unit for GrpcService {
    fn counters(&self) -> &'static [&'static str] {
        &counters::NAMES
    }

    fn streams(&self) -> Option<Box<dyn Streams>> {
        Some(Box::new(Calls { site: self.0.clone(), live: Vec::new() }))
    }

    fn per_thread(&self) -> Option<Box<dyn std::any::Any + Send>> {
        Some(Box::new(Deck::new(&self.0.shares)))
    }

    fn timed(&self) -> bool {
        // Replies wait only for `--delay` or a service time, which time connections anyway.
        false
    }

    fn summary(&self, counts: &[u64]) -> String {
        counters::line(counts)
    }
}

/// The service's routes and answers, shared by every connection.
#[derive(Debug)]
struct GrpcSite {
    /// Each echo method's path, and what it is.
    routes: Vec<(String, Method)>,
    /// `None` with `--no-reflection`.
    reflection: Option<Reflection>,
    /// Shares of calls that fail on purpose, for each thread's deck.
    shares: Vec<(Code, f64)>,
}

impl GrpcSite {
    /// Compiles `echo.proto` and checks the shares (each in (0, 1], not OK, each code once,
    /// summing to at most 1).
    fn new(config: &GrpcConfig) -> Result<GrpcSite, OriginError> {
        let mut total = 0.0;
        for (i, &(code, share)) in config.fail.iter().enumerate() {
            let invalid =
                |why: &str| Err(OriginError::Invalid(format!("gRPC status share {}: {why}", code.canonical())));
            if code == Code::Ok {
                return invalid("OK is not a failure");
            }
            // Written so that NaN fails too.
            if !(share > 0.0 && share <= 1.0) {
                return invalid(&format!("{share} is not a share above 0 and at most 1"));
            }
            if config.fail[..i].iter().any(|(c, _)| *c == code) {
                return invalid("given twice");
            }
            total += share;
        }
        if total > 1.0 + 1e-9 {
            return Err(OriginError::Invalid(format!("gRPC status shares sum to {total}, above 1")));
        }
        let file = echo::descriptor().map_err(|e| OriginError::Invalid(format!("echo.proto: {e}")))?;
        let mut routes = Vec::new();
        for service in file.services() {
            for m in service.methods() {
                let method = match (m.is_client_streaming(), m.is_server_streaming()) {
                    (false, false) => Method::Unary,
                    (false, true) => Method::ServerStream,
                    (true, false) => Method::ClientStream,
                    (true, true) => Method::Bidi,
                };
                routes.push((format!("/{}/{}", service.full_name(), m.name()), method));
            }
        }
        let reflection = config.reflection.then(|| Reflection::new(&file));
        Ok(GrpcSite { routes, reflection, shares: config.fail.clone() })
    }

    /// What a call to `path` asks for.
    fn route(&self, path: &[u8]) -> Method {
        if let Some((_, method)) = self.routes.iter().find(|(p, _)| p.as_bytes() == path) {
            return *method;
        }
        if self.reflection.is_some() && PATHS.iter().any(|p| p.as_bytes() == path) {
            return Method::Reflection;
        }
        Method::Unknown
    }
}

/// The gRPC calls of one connection.
#[derive(Debug)]
struct Calls {
    site: Arc<GrpcSite>,
    live: Vec<Call>,
}

impl Streams for Calls {
    /// Answers at once (not a gRPC call, an unknown method, a failure on purpose) or starts
    /// the call.
    fn start(&mut self, stream: i32, head: &RequestHead, session: &mut Session, serve: &mut Serve<'_, '_>) {
        if !is_grpc(head.header(b"content-type")) || head.method != b"POST" {
            let status: &[u8] = if is_grpc(head.header(b"content-type")) { b"405" } else { b"415" };
            let fields: [(&[u8], &[u8]); 2] = [(b":status", status), (b"content-type", b"text/plain")];
            let body = b"strain origin --grpc: gRPC calls only (POST, content-type application/grpc)\n".to_vec();
            if session.submit_response(stream, &fields, body).is_ok() {
                serve.count(counters::REFUSED, 1);
            }
            return;
        }
        let method = self.site.route(&head.path);
        serve.count(counters::calls(method), 1);
        let failure = match method {
            Method::Unknown => {
                Some((Code::Unimplemented, format!("unknown method {}", String::from_utf8_lossy(&head.path))))
            }
            Method::Reflection => None,
            _ => draw(serve).map(|code| (code, "failed on purpose (strain origin --status)".into())),
        };
        let mut call = Call::new(stream, method);
        // A request compressed in an encoding the origin does not read is refused, as gRPC says.
        let encoding = Encoding::named(head.header(b"grpc-encoding").unwrap_or(b""));
        let failure = match encoding {
            Encoding::Other => Some((Code::Unimplemented, "grpc-encoding: the origin reads identity and gzip".into())),
            _ => failure,
        };
        call.request_encoding(encoding);
        if let Some((code, message)) = failure {
            call.fail(code, message);
        }
        // A call failed already ends now, before its request arrives.
        let ends = !call.idle();
        self.live.push(call);
        if ends {
            self.pump_one(self.live.len() - 1, session, serve);
        }
    }

    fn event(&mut self, event: Event, session: &mut Session, serve: &mut Serve<'_, '_>, now: Option<Instant>) {
        let stream = match &event {
            Event::Body { stream, .. } | Event::End { stream } | Event::Closed { stream, .. } => *stream,
            _ => return,
        };
        let Some(i) = self.live.iter().position(|c| c.stream == stream) else { return };
        match event {
            Event::Body { data, .. } => self.live[i].data(&data, &self.site, serve, now),
            Event::End { .. } => self.live[i].client_ended(serve, now),
            // Closed before its status went: the client reset it.
            _ => {
                self.live.swap_remove(i);
                serve.count(counters::status(Code::Cancelled), 1);
                return;
            }
        }
        self.pump_one(i, session, serve);
    }

    /// Pushes what every call has ready; returns when a reply is next due.
    fn pump(&mut self, session: &mut Session, serve: &mut Serve<'_, '_>) -> Option<Instant> {
        let mut next = None;
        let mut i = 0;
        while i < self.live.len() {
            if self.live[i].idle() {
                i += 1;
                continue;
            }
            match self.pump_one(i, session, serve) {
                Some(Some(due)) => next = Some(next.map_or(due, |n: Instant| n.min(due))),
                Some(None) => {}
                // Removed: the call now at `i` is another.
                None => continue,
            }
            i += 1;
        }
        next
    }
}

impl Calls {
    /// Pumps call `i`: `Some` with when it is next due if it goes on, `None` if it ended and
    /// was removed.
    fn pump_one(&mut self, i: usize, session: &mut Session, serve: &mut Serve<'_, '_>) -> Option<Option<Instant>> {
        let code = match self.live[i].pump(session, serve) {
            Pumped::Waiting(due) => return Some(due),
            Pumped::Ended(code) => {
                // Answered: a request of the test, as over any protocol.
                serve.answered();
                code
            }
            Pumped::Gone => Code::Cancelled,
        };
        serve.count(counters::status(code), 1);
        self.live.swap_remove(i);
        None
    }
}

/// The status the next call ends with on purpose, from this thread's deck.
fn draw(serve: &mut Serve<'_, '_>) -> Option<Code> {
    let (deck, rng) = serve.state::<Deck>()?;
    deck.draw(rng)
}

/// Whether a `content-type` is gRPC's (`application/grpc`, `+proto` or with parameters).
fn is_grpc(content_type: Option<&[u8]>) -> bool {
    let Some(ct) = content_type else { return false };
    let Some(rest) = ct.strip_prefix(b"application/grpc") else { return false };
    rest.is_empty() || rest.starts_with(b"+proto") || rest.starts_with(b";")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_content_types() {
        let rows: [(Option<&[u8]>, bool); 7] = [
            (Some(b"application/grpc"), true),
            (Some(b"application/grpc+proto"), true),
            (Some(b"application/grpc; charset=utf-8"), true),
            (Some(b"application/grpc+json"), false),
            (Some(b"application/grpcx"), false),
            (Some(b"text/plain"), false),
            (None, false),
        ];
        for (ct, want) in rows {
            assert_eq!(is_grpc(ct), want, "{ct:?}");
        }
    }

    #[test]
    fn routes_come_from_the_proto_and_shares_are_checked() {
        let config = GrpcConfig { reflection: true, fail: Vec::new() };
        let site = GrpcSite::new(&config).unwrap();
        let rows: [(&[u8], Method); 6] = [
            (b"/strain.echo.v1.Echo/Unary", Method::Unary),
            (b"/strain.echo.v1.Echo/ServerStream", Method::ServerStream),
            (b"/strain.echo.v1.Echo/ClientStream", Method::ClientStream),
            (b"/strain.echo.v1.Echo/Bidi", Method::Bidi),
            (b"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", Method::Reflection),
            (b"/strain.echo.v1.Echo/Nope", Method::Unknown),
        ];
        for (path, method) in rows {
            assert_eq!(site.route(path), method, "{}", String::from_utf8_lossy(path));
        }
        let off = GrpcSite::new(&GrpcConfig { reflection: false, fail: Vec::new() }).unwrap();
        assert_eq!(off.route(PATHS[0].as_bytes()), Method::Unknown);
        for (fail, ok) in [
            (vec![(Code::NotFound, 0.5), (Code::Aborted, 0.5)], true),
            (vec![(Code::NotFound, 0.6), (Code::Aborted, 0.5)], false),
            (vec![(Code::Ok, 0.1)], false),
            (vec![(Code::NotFound, 0.0)], false),
            (vec![(Code::NotFound, f64::NAN)], false),
            (vec![(Code::NotFound, 0.1), (Code::NotFound, 0.1)], false),
        ] {
            assert_eq!(GrpcSite::new(&GrpcConfig { reflection: true, fail: fail.clone() }).is_ok(), ok, "{fail:?}");
        }
    }
}
