//! What a request is answered, decided in one place for HTTP/1.1, HTTP/2 and HTTP/3: which
//! response (the fixed one, a document or its `304`, the counters, or with `--replay` a recorded
//! one or the `404` for a request no record matches), how much of its body goes
//! out and whether it is cut short, and how it is counted. The random choices (a `304` by chance
//! for a conditional request, then the abort and where it cuts) are drawn here and only here, in
//! one order, so a seed gives the same answers over every protocol. Each protocol only frames a
//! [`Decision`] (an aborted HTTP/1 response closes its connection, an HTTP/2 or HTTP/3 one resets
//! its stream) and counts it with [`Tally::count`] once it has gone out.

use super::live::Counters;
use super::recording::UNMATCHED_BODY;
use super::respond::{doc_path, document, Site};
use super::{Ctx, STATS_PATH};
use crate::http::request_head::Persist;
use crate::workload::alternates::keyed;
use crate::workload::page::Document;

/// What a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Anything else: the fixed response.
    Fixed,
    /// A document; `conditional` if the request carried a validator.
    Doc { doc: Document, conditional: bool },
    /// The counters ([`STATS_PATH`]).
    Stats,
    /// With `--replay`: the recorded answer of this index.
    Recorded(u32),
    /// With `--replay`: no record matches.
    Unmatched,
}

impl Kind {
    /// What a document path (see [`doc_path`]) asks for of `site`; `conditional` is asked
    /// only of documents, so a fixed response pays for no validator lookup.
    pub(super) fn of(site: &Site, path: &str, conditional: impl FnOnce() -> bool) -> Kind {
        match document(path, site.pages) {
            Some(doc) => Kind::Doc { doc, conditional: conditional() },
            None if path == STATS_PATH => Kind::Stats,
            None => Kind::Fixed,
        }
    }

    /// What a request for `target` (whose document path is `path`) asks of `site`: as
    /// [`Kind::of`], or with `--replay` its recorded answer (found by its `uuid` header, which
    /// only then is looked for) or [`Kind::Unmatched`]; the counters either way.
    pub(super) fn ask<'h>(
        site: &Site,
        target: &str,
        path: &str,
        conditional: impl FnOnce() -> bool,
        uuid: impl FnOnce() -> Option<&'h [u8]>,
    ) -> Kind {
        match &site.recording {
            None => Kind::of(site, path, conditional),
            Some(_) if path == STATS_PATH => Kind::Stats,
            Some(recording) => recording.find(target, uuid).map_or(Kind::Unmatched, Kind::Recorded),
        }
    }
}

/// A request kept past its head until it is answered (HTTP/2, HTTP/3, an h2c upgrade).
#[derive(Debug)]
pub(super) struct Request {
    pub(super) kind: Kind,
    /// HEAD: the head only.
    pub(super) head_only: bool,
    /// The document path, for documents; empty otherwise (only a document's body is made
    /// from its path).
    pub(super) path: Box<str>,
}

impl Request {
    /// A request for `kind` at document path `path`.
    pub(super) fn new(kind: Kind, head_only: bool, path: &str) -> Request {
        let path = if let Kind::Doc { .. } = kind { path.into() } else { Box::default() };
        Request { kind, head_only, path }
    }

    /// The request for `target`, whose header fields `field` finds by their lower-case name.
    pub(super) fn parse<'h>(
        site: &Site,
        target: &str,
        head_only: bool,
        field: impl Fn(&[u8]) -> Option<&'h [u8]>,
    ) -> Request {
        let path = doc_path(target);
        let conditional = || field(b"if-modified-since").is_some() || field(b"if-none-match").is_some();
        let kind = Kind::ask(site, target, path, conditional, || field(b"uuid"));
        match (site.vary, &kind) {
            (Some(vary), Kind::Doc { .. }) => {
                let keyed = keyed(path, field(vary.lower()).unwrap_or_default());
                Request { kind, head_only, path: keyed.into() }
            }
            _ => Request::new(kind, head_only, path),
        }
    }
}

/// Which response a [`Decision`] sends.
#[derive(Debug)]
pub(super) enum Content {
    /// The fixed response, whose head each protocol has pre-rendered.
    Fixed,
    /// A document: `200` with its body, or `304` without.
    Doc { doc: Document, not_modified: bool },
    /// The counters as JSON.
    Stats(Vec<u8>),
    /// A recorded answer: its index in [`Site::recording`], and its status.
    Recorded { index: u32, status: u16 },
    /// `404`: no record matches.
    Unmatched,
}

/// One request's answer, made by [`decide`]; the protocols frame it and nothing more.
#[derive(Debug)]
pub(super) struct Decision {
    pub(super) content: Content,
    /// Body bytes to send: the body's length, 0 for HEAD and `304`, or where it is cut.
    pub(super) end: u64,
    /// The body stops at `end`, short of its announced length, and the response is aborted.
    pub(super) cut: bool,
}

impl Decision {
    /// Nothing follows the head: the response ends with it.
    pub(super) fn bodiless(&self) -> bool {
        self.end == 0 && !self.cut
    }

    /// Appends the HTTP/1 head of an answer rendered per request (a document or the counters;
    /// HTTP/2 and HTTP/3 turn it into fields). The fixed response's head was rendered once at
    /// start for each protocol, so nothing is appended for it.
    pub(super) fn head(&self, site: &Site, persist: Persist, out: &mut Vec<u8>) {
        match &self.content {
            Content::Fixed => {}
            Content::Doc { doc, not_modified } => site.doc_head(out, *not_modified, *doc, persist),
            Content::Stats(json) => site.stats_head(out, json.len(), persist),
            Content::Recorded { index, .. } => site.recorded_head(out, *index, persist),
            Content::Unmatched => site.unmatched_head(out, persist),
        }
    }

    /// The body of an answer whose bytes live as long as the server (a recorded one, the
    /// unmatched `404`'s), up to [`Decision::end`]; `None` for the others.
    pub(super) fn kept_body<'s>(&self, site: &'s Site) -> Option<&'s [u8]> {
        let body = match self.content {
            Content::Recorded { index, .. } => site.recording.as_deref()?.body(index),
            Content::Unmatched => UNMATCHED_BODY,
            _ => return None,
        };
        body.get(..self.end as usize)
    }

    /// How the answer counts once it has gone out.
    pub(super) fn tally(&self) -> Tally {
        match self.content {
            Content::Fixed => Tally::Fixed,
            Content::Doc { not_modified: true, .. } => Tally::NotModified,
            Content::Doc { .. } => Tally::Ok { aborted: self.cut },
            Content::Stats(_) => Tally::Uncounted,
            Content::Recorded { status, .. } => Tally::Recorded { status },
            Content::Unmatched => Tally::Unmatched,
        }
    }
}

/// Decides the answer to a request for `kind`, drawing its random choices from the thread's
/// generator.
pub(super) fn decide(kind: Kind, head_only: bool, ctx: &mut Ctx<'_>) -> Decision {
    let site = ctx.site;
    let (content, len) = match kind {
        Kind::Fixed => (Content::Fixed, site.h2_fixed.body.len() as u64),
        Kind::Doc { doc, conditional } => {
            let not_modified = conditional && ctx.rng.chance(site.ims_not_modified);
            (Content::Doc { doc, not_modified }, if not_modified { 0 } else { doc.len() })
        }
        Kind::Recorded(index) => match site.recording.as_deref() {
            Some(recording) => {
                let status = recording.status(index);
                (Content::Recorded { index, status }, recording.body(index).len() as u64)
            }
            // Only a recording makes this kind.
            None => (Content::Unmatched, UNMATCHED_BODY.len() as u64),
        },
        Kind::Unmatched => (Content::Unmatched, UNMATCHED_BODY.len() as u64),
        Kind::Stats => {
            // Serialising plain numbers cannot fail; an empty body would be the harmless fallback.
            let json = serde_json::to_vec(&ctx.live.snapshot()).unwrap_or_default();
            let len = json.len() as u64;
            (Content::Stats(json), len)
        }
    };
    let len = if head_only { 0 } else { len };
    // Only a document body with bytes to send is cut; the abort is not even drawn otherwise,
    // which keeps a seed's later choices where they were.
    let cut = matches!(content, Content::Doc { .. }) && len > 0 && ctx.rng.chance(site.abort_rate);
    let end = if cut { ctx.rng.below(len) } else { len };
    Decision { content, end, cut }
}

/// How an answer that went out is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tally {
    /// Not a request of the test (`/_strain/stats`).
    Uncounted,
    /// The fixed response: only a request; its share of `ok` is worked out when counters are
    /// read.
    Fixed,
    /// A document's `200`; `aborted` if its body was cut short.
    Ok { aborted: bool },
    /// A document's `304`.
    NotModified,
    /// A recorded answer with this status.
    Recorded { status: u16 },
    /// The `404` to a request no record matches.
    Unmatched,
}

impl Tally {
    /// Counts the answer in this thread's counters.
    #[inline]
    pub(super) fn count(self, counters: &Counters) {
        match self {
            Tally::Uncounted => return,
            Tally::Fixed => {}
            Tally::Ok { aborted } => {
                counters.doc_ok.add(1);
                if aborted {
                    counters.aborted.add(1);
                }
            }
            Tally::NotModified => counters.not_modified.add(1),
            Tally::Recorded { status } => {
                counters.recorded.add(1);
                match status {
                    200 => counters.doc_ok.add(1),
                    304 => counters.not_modified.add(1),
                    _ => {}
                }
            }
            Tally::Unmatched => counters.unmatched.add(1),
        }
        // The status before the request, so a live reader never sees a document before its
        // status (see `Counters::snapshot`).
        counters.requests.add(1);
    }
}
