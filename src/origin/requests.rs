//! The origin's side of reading requests: an incremental parser over a connection's input that
//! skips bodies and answers each request as soon as it is complete (in order, as far as the
//! output has room) as HTTP/1 frames what [`decide`] decides (fixed response, document,
//! counters, 304s, aborts). Heads are parsed by [`crate::http::request_head`]; [`super::conn`]
//! owns the socket and hands bytes here.

use std::mem;
use std::time::Instant;

use super::decision::{decide, Content, Decision, Kind, Request, Tally};
use super::output::{Output, Stream, MAX_PENDING};
use super::respond::{doc_path, Site};
use super::{Ctx, Reply, CONTINUE};
use crate::http::body::{BodyDecoder, BodyKind};
use crate::http::request_head::{self, Persist};
use crate::http::{may_end_head, ParseError, MAX_HEAD_BYTES};

/// Document bodies up to this size are rendered with their head; larger ones are streamed.
const INLINE_BODY: u64 = 8 * 1024;

/// Whether the connection continues after a batch of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    /// The last answer closes the connection; input after it is ignored.
    Close,
    /// A request was refused (400) and the connection closes; the client may still be sending.
    Reject,
    /// A request asked to continue as h2c and nothing is queued before it: the connection
    /// switches ([`RequestParser::upgrade`] holds the request and the bytes after it).
    Upgrade,
    /// A unit the origin serves took the request (WebSocket's upgrade): the connection is
    /// its ([`RequestParser::claimed`] holds its driver).
    Unit,
}

/// A request that upgrades its connection to h2c, answered over HTTP/2 as stream 1.
#[derive(Debug)]
pub(super) struct Upgrade {
    /// `HTTP2-Settings`, still base64url.
    pub(super) settings: Vec<u8>,
    pub(super) request: Request,
    /// Bytes after the request (the client's preface may follow at once).
    pub(super) rest: Vec<u8>,
}

/// Everything answering a request touches.
pub(super) struct Answer<'a, 'r> {
    pub(super) ctx: &'a mut Ctx<'r>,
    pub(super) out: &'a mut Output<'r>,
    pub(super) served: &'a mut u64,
    /// When this batch of input was read, if answers wait after arrival (see
    /// [`Site::due`](super::respond::Site::due)); `None` keeps the fast path.
    pub(super) arrived: Option<Instant>,
}

impl Answer<'_, '_> {
    /// Queues the answer to one request; `path` is the document path for documents.
    #[inline(always)]
    fn answer(&mut self, reply: Reply, path: &str) -> Flow {
        let site = self.ctx.site;
        if reply.kind == Kind::Fixed && site.keepalive == 0 && self.arrived.is_none() {
            // The benchmark path: the fixed response needs no decision (it draws nothing), so
            // it is one slice of a pre-rendered response and its count.
            self.out.push(site.fixed.get(reply));
            Tally::Fixed.count(self.ctx.counters);
            return if reply.persist == Persist::Close { Flow::Close } else { Flow::Continue };
        }
        self.answer_any(reply, path)
    }

    /// [`Answer::answer`] for everything but the plainest fixed response.
    #[inline(never)]
    fn answer_any(&mut self, mut reply: Reply, path: &str) -> Flow {
        let site = self.ctx.site;
        // The counters are not a request of the test: undelayed, outside the keep-alive limit.
        if reply.kind != Kind::Stats {
            *self.served += 1;
            if *self.served == site.keepalive {
                reply.persist = Persist::Close;
            }
            if let Some(arrived) = self.arrived {
                let due = site.due(arrived, &mut self.ctx.rng);
                self.out.push_due(due);
            }
        }
        let decision = decide(reply.kind, reply.head_only, self.ctx);
        self.queue(&decision, reply, path);
        decision.tally().count(self.ctx.counters);
        // An aborted response is cut by closing the connection after its last byte.
        if decision.cut || reply.persist == Persist::Close {
            Flow::Close
        } else {
            Flow::Continue
        }
    }

    /// Queues a decided answer as HTTP/1: the fixed response as its pre-rendered slice, any
    /// other head rendered with its body up to [`Decision::end`] (a large document's streamed).
    fn queue(&mut self, decision: &Decision, reply: Reply, path: &str) {
        let site = self.ctx.site;
        let mark = self.out.buf().len();
        let end = decision.end;
        match &decision.content {
            Content::Fixed => self.out.push(site.fixed.get(reply)),
            Content::Recorded { .. } | Content::Unmatched => {
                decision.head(site, reply.persist, self.out.buf());
                self.out.commit(mark);
                self.out.push(decision.kept_body(site).unwrap_or_default());
            }
            Content::Stats(json) => {
                decision.head(site, reply.persist, self.out.buf());
                self.out.buf().extend_from_slice(json.get(..end as usize).unwrap_or_default());
                self.out.commit(mark);
            }
            Content::Doc { doc, .. } => {
                decision.head(site, reply.persist, self.out.buf());
                if end <= INLINE_BODY {
                    let buf = self.out.buf();
                    buf.reserve(end as usize);
                    doc.body_range(path, 0, end, buf);
                    self.out.commit(mark);
                } else {
                    self.out.commit(mark);
                    self.out.push_body(Stream { doc: *doc, path: path.into(), next: 0, end });
                }
            }
        }
    }
}

/// Request parsing state kept between reads.
#[derive(Default)]
pub(super) struct RequestParser {
    /// Bytes of a head split across reads, or requests left unparsed while the output was
    /// full; empty and unallocated in the common case, where heads are parsed straight from
    /// the read buffer.
    partial: Vec<u8>,
    /// `partial` may hold complete requests: parse it before reading more.
    pub(super) backlog: bool,
    /// Body of the current request still being skipped.
    body: Option<BodyDecoder>,
    /// The answer owed to the current request, sent once its body has been skipped.
    reply: Option<Reply>,
    /// The document path of `reply`, kept (with its capacity) across reads.
    path: String,
    /// When the head now in `partial` began to arrive; `None` when no head is incomplete. Only
    /// a read that ends inside a head reads the clock, which a benchmark client's never does.
    pub(super) head_since: Option<Instant>,
    /// The request that ended HTTP/1 ([`Flow::Upgrade`]).
    pub(super) upgrade: Option<Box<Upgrade>>,
    /// The unit's driver that ended HTTP/1 ([`Flow::Unit`]), and the unit's place.
    pub(super) claimed: Option<(Box<dyn super::unit::Driver>, super::unit::Place)>,
}

/// A parsed request head.
struct Head<'a> {
    len: usize,
    body: BodyKind,
    reply: Reply,
    expect_continue: bool,
    /// The document path, for documents.
    path: &'a str,
    /// See [`request_head::RequestHead::h2c_settings`].
    h2c: Option<&'a [u8]>,
    /// The method, the target and HTTP/1.0, for a unit to claim the request by.
    method: &'a str,
    target: &'a str,
    http10: bool,
}

impl RequestParser {
    /// Notes that `partial` ends with an incomplete head; `new` if that head is not the one
    /// noted before (an earlier one was completed in the meantime).
    fn head_started(&mut self, new: bool) {
        if self.backlog {
            // Complete requests held back by our own full output: not the client's slowness.
            self.head_since = None;
        } else if new || self.head_since.is_none() {
            self.head_since = Some(Instant::now());
        }
    }

    /// Answers every request completed by `data`, as far as the output has room.
    pub(super) fn feed(&mut self, data: &[u8], answer: &mut Answer<'_, '_>) -> Flow {
        debug_assert!(!self.backlog, "reading with requests still unparsed");
        if self.partial.is_empty() {
            return match self.consume(data, answer) {
                Ok((used, flow)) => {
                    if flow == Flow::Continue && used < data.len() {
                        self.partial.extend_from_slice(&data[used..]);
                        self.head_started(true);
                    }
                    flow
                }
                Err(_) => bad_request(answer),
            };
        }
        let searched = self.partial.len();
        self.partial.extend_from_slice(data);
        // Re-parsing the whole head on every read would be quadratic for a client that sends
        // it a few bytes at a time: parse only once the blank line ending it may be there.
        if !may_end_head(&self.partial, searched) {
            if self.partial.len() > MAX_HEAD_BYTES {
                return bad_request(answer);
            }
            return Flow::Continue;
        }
        self.consume_partial(answer)
    }

    /// Answers requests left unparsed while the output was full.
    pub(super) fn resume(&mut self, answer: &mut Answer<'_, '_>) -> Flow {
        self.backlog = false;
        self.consume_partial(answer)
    }

    fn consume_partial(&mut self, answer: &mut Answer<'_, '_>) -> Flow {
        let mut buf = mem::take(&mut self.partial);
        match self.consume(&buf, answer) {
            Ok((used, flow)) => {
                if flow == Flow::Continue && used < buf.len() {
                    buf.drain(..used);
                    self.partial = buf;
                    self.head_started(used > 0);
                } else {
                    self.head_since = None;
                }
                flow
            }
            Err(_) => bad_request(answer),
        }
    }

    /// Parses heads and skips bodies in `input`; returns the bytes used. Unused bytes are the
    /// start of a head that is not complete yet, or requests held back because the output is
    /// full (then `backlog` is set).
    fn consume(&mut self, input: &[u8], answer: &mut Answer<'_, '_>) -> Result<(usize, Flow), ParseError> {
        let mut i = 0;
        loop {
            if let Some(body) = &mut self.body {
                i += body.feed(&input[i..])?;
                if !body.is_done() {
                    return Ok((i, Flow::Continue));
                }
                self.body = None;
                if let Some(reply) = self.reply.take() {
                    let path = mem::take(&mut self.path);
                    let flow = answer.answer(reply, &path);
                    self.path = path;
                    if flow == Flow::Close {
                        return Ok((i, Flow::Close));
                    }
                }
            }
            if i == input.len() {
                return Ok((i, Flow::Continue));
            }
            if answer.out.pending > MAX_PENDING {
                self.backlog = true;
                return Ok((i, Flow::Continue));
            }
            let Some(head) = parse_head(&input[i..], answer.ctx.site)? else {
                if input.len() - i > MAX_HEAD_BYTES {
                    return Err(ParseError::HeadTooLarge);
                }
                return Ok((i, Flow::Continue));
            };
            if head.len > MAX_HEAD_BYTES {
                // Its end arrived in a later read than the limit was crossed in.
                return Err(ParseError::HeadTooLarge);
            }
            i += head.len;
            // With alternates, a document's body is made for the varying header's value.
            let keyed;
            let path = match (answer.ctx.site.vary, head.reply.kind) {
                (Some(vary), Kind::Doc { .. }) => {
                    let value = request_head::header(&input[i - head.len..i], vary.lower());
                    keyed = crate::workload::alternates::keyed(head.path, value.unwrap_or_default());
                    keyed.as_str()
                }
                _ => head.path,
            };
            let body = BodyDecoder::new(head.body);
            if let Some(settings) = head.h2c {
                // Honoured only when it is all there is to answer (what clients do: upgrade
                // on their first request); otherwise ignored, as RFC 7540 allows.
                if body.is_done() && answer.out.is_empty() && head.reply.persist != Persist::Close {
                    self.upgrade = Some(Box::new(Upgrade {
                        settings: settings.to_vec(),
                        request: Request::new(head.reply.kind, head.reply.head_only, path),
                        rest: input[i..].to_vec(),
                    }));
                    return Ok((input.len(), Flow::Upgrade));
                }
            }
            // As for h2c: only a request with nothing queued before it switches.
            if !answer.ctx.site.units.is_empty() && body.is_done() && answer.out.is_empty() {
                let asked = super::unit::Asked {
                    head: &input[i - head.len..i],
                    method: head.method,
                    target: head.target,
                    http10: head.http10,
                    rest: &input[i..],
                };
                if let Some(claimed) =
                    answer.ctx.site.units.iter().find_map(|(u, place)| Some((u.claim(&asked)?, *place)))
                {
                    self.claimed = Some(claimed);
                    return Ok((input.len(), Flow::Unit));
                }
            }
            if body.is_done() {
                if answer.answer(head.reply, path) == Flow::Close {
                    return Ok((i, Flow::Close));
                }
                continue;
            }
            if head.expect_continue {
                answer.out.push(CONTINUE);
            }
            self.body = Some(body);
            self.reply = Some(head.reply);
            if let Kind::Doc { .. } = head.reply.kind {
                self.path.clear();
                self.path.push_str(path);
            }
        }
    }
}

/// Queues the 400 answer; the connection closes after it.
fn bad_request(answer: &mut Answer<'_, '_>) -> Flow {
    let site = answer.ctx.site;
    answer.ctx.counters.bad_requests.add(1);
    answer.out.push(&site.fixed.bad_request);
    Flow::Reject
}

/// Parses one request head and decides what it asks for; `None` when more bytes are needed.
fn parse_head<'a>(input: &'a [u8], site: &Site) -> Result<Option<Head<'a>>, ParseError> {
    let Some(h) = request_head::parse(input)? else { return Ok(None) };
    let path = doc_path(h.target);
    let uuid = || request_head::header(&input[..h.len], b"uuid");
    let kind = Kind::ask(site, h.target, path, || h.conditional, uuid);
    let reply = Reply { persist: h.persist, head_only: h.head_only, kind };
    Ok(Some(Head {
        len: h.len,
        body: h.body,
        reply,
        expect_continue: h.expect_continue,
        path,
        h2c: h.h2c_settings,
        method: h.method,
        target: h.target,
        http10: h.http10,
    }))
}

#[cfg(test)]
mod fuzz;
