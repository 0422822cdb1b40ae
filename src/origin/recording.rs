//! `strain origin --replay FILE`: the responses recorded in a Proxy Verifier file or a HAR,
//! read once at start into a table the origin answers from (the server half of Proxy Verifier,
//! with `strain replay` as the client half).
//!
//! A request finds its answer by a key: its `uuid` header (Proxy Verifier's convention, so a
//! proxy between client and origin may rewrite anything else), or with [`MatchKey::Url`] its
//! target's path and query. Several records with one key are answered in recorded order, one
//! per request, and the last keeps answering once they are used up: a URL fetched twice in a
//! HAR gets its two recorded answers, and a request asked again (a proxy's retry, a test's
//! second look) still gets one. That order is shared by every thread through one atomic
//! cursor per key, the only shared state; a key with one record needs not even that.
//!
//! Each answer is rendered once here: its HTTP/1 head (status line, `Content-Length` of the
//! body the origin sends, the recorded fields without the hop-by-hop ones) and its body, the
//! recorded bytes or, for a body recorded only by its size, a prefix of one filler buffer as
//! long as the largest such size. The decision (`decision.rs`) picks an answer by index; each
//! protocol frames it as it frames the origin's other answers.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::BODY_PATTERN;
use crate::http::response::reason;
use crate::replay::read::{self, Format};
use crate::replay::record::{Body, Record};
use crate::replay::render::HOP_BY_HOP;

/// The largest body recorded by size only that is served; the filler is made whole at start.
pub const MAX_FILLER: u64 = 1 << 30;
/// The answer to a request that matches no record (after `404 Not Found`).
pub(super) const UNMATCHED_BODY: &[u8] = b"strain origin: no recorded response matched this request\n";

/// What ties a request to its recorded response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MatchKey {
    /// The `uuid` header's value, as Proxy Verifier's client sends and its server matches.
    #[default]
    Uuid,
    /// The request target's path and query (an absolute recorded URL reduced to them).
    Url,
}

/// Why a recording cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file could not be opened, its format not told, or it does not parse.
    #[error("{0}")]
    Read(String),
    /// The format holds requests only.
    #[error("{path}: {format} holds no responses (--replay takes a Proxy Verifier file or a HAR)")]
    NoResponses {
        /// The file.
        path: String,
        /// Its format's name.
        format: String,
    },
    /// A record cannot be served.
    #[error("{path}:{line}: {why}")]
    Bad {
        /// The file.
        path: String,
        /// The record's line or entry, 1-based.
        line: u64,
        /// Why.
        why: String,
    },
    /// No record has both a response and a key.
    #[error("{path}: {why}")]
    Empty {
        /// The file.
        path: String,
        /// What is missing.
        why: String,
    },
}

/// One recorded answer, ready to frame.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// The HTTP/1 head up to the fields the origin adds per response (`Connection`, `Alt-Svc`)
    /// and the blank line.
    head: Box<[u8]>,
    body: Payload,
}

/// A recorded body.
#[derive(Debug, Clone)]
enum Payload {
    /// The recorded bytes.
    Bytes(Arc<[u8]>),
    /// This many bytes of the filler.
    Filler(u64),
}

/// The answers of one key, in recorded order.
#[derive(Debug)]
struct Slot {
    answers: Box<[u32]>,
    /// Requests answered from this key so far.
    next: AtomicU64,
}

/// The recorded responses, by key.
#[derive(Debug)]
pub struct Recording {
    key: MatchKey,
    answers: Vec<Answer>,
    slots: HashMap<Box<[u8]>, Slot>,
    /// [`BODY_PATTERN`] repeated to the largest body recorded by size.
    filler: Arc<[u8]>,
    /// Records with a response but no key (no `uuid` header), left out.
    pub unkeyed: u64,
}

impl Recording {
    /// Reads the recording at `path` (its format detected from its first bytes).
    pub fn read(path: &Path, key: MatchKey) -> Result<Recording, RecordingError> {
        let name = path.display().to_string();
        let format = crate::replay::walk::detect(path).map_err(|e| RecordingError::Read(e.to_string()))?;
        if !matches!(format, Format::Verifier | Format::Har) {
            return Err(RecordingError::NoResponses { path: name, format: format.name() });
        }
        let mut input = crate::replay::walk::open(path).map_err(|e| RecordingError::Read(e.to_string()))?;
        let mut records = Vec::new();
        let mut bad = None;
        read::read(&format, &mut input, &mut |item| match item {
            Ok(record) => {
                records.push(record);
                ControlFlow::Continue(())
            }
            Err(b) => {
                bad = Some(b);
                ControlFlow::Break(())
            }
        })
        .map_err(|e| RecordingError::Read(format!("{name}: {e}")))?;
        if let Some(b) = bad {
            return Err(RecordingError::Bad { path: name, line: b.line, why: b.why });
        }
        Recording::of(records, key, format == Format::Har).map_err(|(line, why)| match line {
            Some(line) => RecordingError::Bad { path: name.clone(), line, why },
            None => RecordingError::Empty { path: name.clone(), why },
        })
    }

    /// The table of `records`' responses; `decoded` when bodies were recorded decoded (HAR's
    /// `content.text`), so a recorded `Content-Encoding` would lie about them. Fails with the
    /// record's line, or with none when nothing can be served.
    pub fn of(records: Vec<Record>, key: MatchKey, decoded: bool) -> Result<Recording, (Option<u64>, String)> {
        let mut answers = Vec::new();
        let mut keyed: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        let (mut responses, mut unkeyed, mut filler) = (0u64, 0u64, 0u64);
        for record in records {
            let Some(response) = record.response else { continue };
            responses += 1;
            let Some(k) = record_key(&record.target, &record.headers, key) else {
                unkeyed += 1;
                continue;
            };
            if response.status < 200 {
                return Err((Some(record.line), format!("status {} is not a final response", response.status)));
            }
            let body = match response.body {
                _ if bodiless(response.status) => Payload::Bytes(Arc::from(&[][..])),
                Body::None => Payload::Bytes(Arc::from(&[][..])),
                Body::Bytes(b) => Payload::Bytes(b.into()),
                Body::Size(n) | Body::Generate(n) if n > MAX_FILLER => {
                    return Err((
                        Some(record.line),
                        format!("a body of {n} bytes is more than strain serves ({MAX_FILLER})"),
                    ))
                }
                Body::Size(n) | Body::Generate(n) => {
                    filler = filler.max(n);
                    Payload::Filler(n)
                }
            };
            let len = match &body {
                Payload::Bytes(b) => b.len() as u64,
                Payload::Filler(n) => *n,
            };
            let head = render_head(response.status, &response.headers, len, decoded);
            let index =
                u32::try_from(answers.len()).map_err(|_| (Some(record.line), "too many records".to_string()))?;
            answers.push(Answer { status: response.status, head, body });
            keyed.entry(k.into_bytes().into_boxed_slice()).or_default().push(index);
        }
        if answers.is_empty() {
            let why = match (responses, key) {
                (0, _) => "no recorded response to serve".to_string(),
                (_, MatchKey::Uuid) => {
                    format!("none of its {responses} recorded responses has a uuid header to match (--replay-key url matches by URL)")
                }
                (_, MatchKey::Url) => "no recorded response has a URL".to_string(),
            };
            return Err((None, why));
        }
        let slots = keyed
            .into_iter()
            .map(|(k, v)| (k, Slot { answers: v.into_boxed_slice(), next: AtomicU64::new(0) }))
            .collect();
        let filler: Arc<[u8]> = BODY_PATTERN.iter().copied().cycle().take(filler as usize).collect();
        Ok(Recording { key, answers, slots, filler, unkeyed })
    }

    /// Recorded answers served.
    pub fn len(&self) -> usize {
        self.answers.len()
    }

    /// Whether there is none (never, for a table built by [`Recording::of`]).
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    /// The answer to a request for `target` (as sent) whose `uuid` header `uuid` gives; `None`
    /// when no record matches. Takes the key's next answer.
    pub(super) fn find<'h>(&self, target: &str, uuid: impl FnOnce() -> Option<&'h [u8]>) -> Option<u32> {
        let key: &[u8] = match self.key {
            MatchKey::Uuid => uuid()?.trim_ascii(),
            MatchKey::Url => crate::http::request::origin_form(target).as_bytes(),
        };
        let slot = self.slots.get(key)?;
        let k = match slot.answers.len() {
            1 => 0,
            n => usize::try_from(slot.next.fetch_add(1, Ordering::Relaxed)).unwrap_or(usize::MAX).min(n - 1),
        };
        slot.answers.get(k).copied()
    }

    /// Answer `i`'s status.
    pub(super) fn status(&self, i: u32) -> u16 {
        self.answers[i as usize].status
    }

    /// Answer `i`'s head, without the origin's own fields and the blank line.
    pub(super) fn head(&self, i: u32) -> &[u8] {
        &self.answers[i as usize].head
    }

    /// Answer `i`'s body.
    pub(super) fn body(&self, i: u32) -> &[u8] {
        match &self.answers[i as usize].body {
            Payload::Bytes(b) => b,
            Payload::Filler(n) => &self.filler[..*n as usize],
        }
    }

    /// Answer `i`'s body as a shared buffer and the length taken from its front.
    pub(super) fn shared_body(&self, i: u32) -> (Arc<[u8]>, u64) {
        match &self.answers[i as usize].body {
            Payload::Bytes(b) => (b.clone(), b.len() as u64),
            Payload::Filler(n) => (self.filler.clone(), *n),
        }
    }
}

/// Whether a response with `status` carries no body (RFC 9110, 6.4.1).
fn bodiless(status: u16) -> bool {
    matches!(status, 204 | 304)
}

/// The key a record is found by; `None` when it has none.
fn record_key(target: &str, headers: &[(String, String)], key: MatchKey) -> Option<String> {
    match key {
        MatchKey::Uuid => headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("uuid"))
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty()),
        MatchKey::Url => Some(crate::http::request::origin_form(target).to_string()),
    }
}

/// The head of a recorded response with a body of `len` bytes: its status, `Content-Length`
/// (none for 204 and 304), then the recorded fields but the hop-by-hop ones, HTTP/2 and HTTP/3
/// pseudo-headers, and fields that cannot be written on a line (a name that is not a token, a
/// value with CR, LF or NUL). `decoded` drops `Content-Encoding` too.
fn render_head(status: u16, headers: &[(String, String)], len: u64, decoded: bool) -> Box<[u8]> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status)).into_bytes();
    if !bodiless(status) {
        head.extend_from_slice(format!("Content-Length: {len}\r\n").as_bytes());
    }
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        let token =
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b));
        let writable = !value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0));
        if !token || !writable || HOP_BY_HOP.contains(&lower.as_str()) || (decoded && lower == "content-encoding") {
            continue;
        }
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.trim().as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::record::Response;

    fn record(line: u64, target: &str, uuid: Option<&str>, status: u16, body: Body) -> Record {
        let headers = uuid.map(|u| vec![("uuid".to_string(), u.to_string())]).unwrap_or_default();
        let response = Response {
            status,
            headers: vec![
                ("Content-Length".into(), "999".into()),
                ("Connection".into(), "keep-alive".into()),
                ("X-Recorded".into(), line.to_string()),
            ],
            body,
        };
        Record { line, target: target.into(), headers, response: Some(response), ..Record::default() }
    }

    fn text(r: &Recording, i: u32) -> (String, String) {
        (String::from_utf8_lossy(r.head(i)).into(), String::from_utf8_lossy(r.body(i)).into())
    }

    #[test]
    fn heads_drop_hop_by_hop_fields_and_say_the_length_sent() {
        let r =
            Recording::of(vec![record(1, "/a", Some("u1"), 200, Body::Bytes(b"abc".to_vec()))], MatchKey::Uuid, false)
                .unwrap();
        let i = r.find("/a", || Some(&b" u1 "[..])).unwrap();
        assert_eq!(text(&r, i), ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Recorded: 1\r\n".into(), "abc".into()));
    }

    #[test]
    fn rows() {
        // Each row: records (line, target, uuid, status, body), the key, then requests (target,
        // uuid) and the line of the record each gets (None: unmatched).
        type Row = (Vec<Record>, MatchKey, Vec<(&'static str, Option<&'static str>, Option<u64>)>);
        let rows: Vec<Row> = vec![
            // By uuid: the path does not matter; no uuid, or an unknown one, matches nothing.
            (
                vec![record(1, "/a", Some("u1"), 200, Body::None), record(2, "/b", Some("u2"), 404, Body::None)],
                MatchKey::Uuid,
                vec![("/x", Some("u2"), Some(2)), ("/a", None, None), ("/a", Some("u3"), None)],
            ),
            // By URL: an absolute recorded URL is its path and query; the query counts.
            (
                vec![
                    record(1, "http://example.com/a?q=1", None, 200, Body::None),
                    record(2, "/a", None, 301, Body::None),
                ],
                MatchKey::Url,
                vec![("/a?q=1", None, Some(1)), ("/a", Some("u1"), Some(2)), ("/a?q=2", None, None)],
            ),
            // One key recorded three times: in order, then the last again.
            (
                vec![
                    record(1, "/a", None, 200, Body::None),
                    record(2, "/a", None, 304, Body::None),
                    record(3, "/a", None, 200, Body::None),
                ],
                MatchKey::Url,
                vec![("/a", None, Some(1)), ("/a", None, Some(2)), ("/a", None, Some(3)), ("/a", None, Some(3))],
            ),
        ];
        for (records, key, requests) in rows {
            let r = Recording::of(records, key, false).unwrap();
            for (target, uuid, want) in requests {
                let got = r.find(target, || uuid.map(str::as_bytes)).map(|i| {
                    let head = String::from_utf8_lossy(r.head(i)).to_string();
                    head.split("X-Recorded: ").nth(1).unwrap().trim().parse::<u64>().unwrap()
                });
                assert_eq!(got, want, "{target} {uuid:?}");
            }
        }
    }

    #[test]
    fn sized_bodies_are_filler_and_bodiless_statuses_have_none() {
        let records = vec![
            record(1, "/a", Some("u1"), 200, Body::Size(30)),
            record(2, "/b", Some("u2"), 200, Body::Size(5)),
            record(3, "/c", Some("u3"), 304, Body::Size(5)),
        ];
        let r = Recording::of(records, MatchKey::Uuid, false).unwrap();
        let filler: Vec<u8> = BODY_PATTERN.iter().copied().cycle().take(30).collect();
        assert_eq!(r.body(r.find("", || Some(&b"u1"[..])).unwrap()), &filler[..]);
        assert_eq!(r.body(r.find("", || Some(&b"u2"[..])).unwrap()), &filler[..5]);
        let i = r.find("", || Some(&b"u3"[..])).unwrap();
        assert_eq!(text(&r, i), ("HTTP/1.1 304 Not Modified\r\nX-Recorded: 3\r\n".into(), String::new()));
    }

    #[test]
    fn what_cannot_be_served_is_refused() {
        let no_response = Record { line: 1, target: "/".into(), ..Record::default() };
        let err = Recording::of(vec![no_response], MatchKey::Uuid, false).unwrap_err();
        assert_eq!(err, (None, "no recorded response to serve".to_string()));
        let err = Recording::of(vec![record(1, "/", None, 200, Body::None)], MatchKey::Uuid, false).unwrap_err();
        assert!(err.1.contains("uuid"), "{err:?}");
        let err = Recording::of(vec![record(4, "/", Some("u"), 100, Body::None)], MatchKey::Uuid, false).unwrap_err();
        assert_eq!(err.0, Some(4));
    }

    #[test]
    fn a_decoded_body_loses_its_content_encoding() {
        let mut rec = record(1, "/a", None, 200, Body::Bytes(b"x".to_vec()));
        rec.response.as_mut().unwrap().headers.push(("Content-Encoding".into(), "gzip".into()));
        rec.response.as_mut().unwrap().headers.push((":status".into(), "200".into()));
        let r = Recording::of(vec![rec.clone()], MatchKey::Url, true).unwrap();
        assert!(!String::from_utf8_lossy(r.head(0)).contains("Content-Encoding"));
        assert!(!String::from_utf8_lossy(r.head(0)).contains(":status"));
        let r = Recording::of(vec![rec], MatchKey::Url, false).unwrap();
        assert!(String::from_utf8_lossy(r.head(0)).contains("Content-Encoding: gzip"));
    }
}
