//! Proxy-test requests: which document each request asks for, how it asks (forward or reverse
//! form, reloads, If-Modified-Since, aborts), and whether the body that came back is that
//! document. The worker calls [`ProxyClient::build`] when it sends and [`ProxyClient::check`]
//! when a response completes; everything else is the ordinary engine.

use std::time::SystemTime;

use crate::http::response::Captured;
use crate::workload::alternates::{keyed, Vary};
use crate::workload::doc::{Doc, Extension};
use crate::workload::gen::{Generator, Rng, WorkloadConfig};

/// How the request line names the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `GET http://origin/path` to a forward proxy.
    Forward,
    /// `GET /path` with `Host: origin`, to a reverse or transparent proxy.
    Reverse,
}

/// A proxy test's request settings, shared by the threads.
#[derive(Debug, Clone)]
pub struct ProxySetup {
    /// URL choice.
    pub workload: WorkloadConfig,
    /// Request form.
    pub form: Form,
    /// `host:port` the URLs name (the origin, as the proxy should see it).
    pub origin: String,
    /// Share of requests sent with `Cache-Control: no-cache` and `Pragma: no-cache`.
    pub reload_rate: f64,
    /// Share of requests sent with `If-Modified-Since`.
    pub ims_rate: f64,
    /// Share of responses the client abandons mid-body.
    pub client_abort_rate: f64,
    /// Check every body against its URL.
    pub check_content: bool,
    /// Requests per client connection before it is replaced (0: unlimited).
    pub keepalive: u64,
    /// A URL list to cycle through instead of generated documents (paths or absolute URLs).
    pub urls: Option<Vec<String>>,
    /// Open-loop connection arrivals per second (jtest -e); `None` keeps `-c` connections open.
    pub new_conn_rate: Option<f64>,
    /// What generated documents' URLs end with (jtest -4).
    pub extension: Extension,
    /// Extra header fields on every request (jtest -n; see [`crate::workload::headers`]).
    pub extra_headers: usize,
    /// Requests spread over this many variants of each URL, asked for by this header (jtest
    /// -N and -2; see [`crate::workload::alternates`]).
    pub alternates: Option<(u32, Vary)>,
}

/// What the worker keeps about a request in flight.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sent {
    /// The document asked for, when the URL names one.
    pub doc: Option<Doc>,
    /// What its URL ended with (the origin's body starts with the path as asked).
    pub extension: Extension,
    /// The variant asked for, with alternates.
    pub variant: u32,
    /// Abandon this response once its body starts.
    pub abort: bool,
}

/// A thread's request builder.
#[derive(Debug)]
pub struct ProxyClient<'a> {
    plan: &'a ProxySetup,
    gen: Generator,
    rng: Rng,
    next_url: usize,
    path: String,
}

/// The origin-side prefix of document paths (none: `/d/<id>/<len>`).
const PREFIX: &str = "";

impl<'a> ProxyClient<'a> {
    /// A builder for thread `stream` (distinct per thread and process).
    pub fn new(plan: &'a ProxySetup, stream: u64) -> ProxyClient<'a> {
        ProxyClient {
            plan,
            gen: Generator::new(&plan.workload, stream),
            rng: Rng::new(stream.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ plan.workload.seed),
            next_url: stream as usize,
            path: String::new(),
        }
    }

    /// The builder of thread `index`, its stream differing between processes too, so proxy
    /// tests run from several processes never repeat each other's misses.
    pub fn for_thread(plan: &'a ProxySetup, index: usize) -> ProxyClient<'a> {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let stream = crate::workload::gen::mix(u64::from(std::process::id()) << 32 ^ nanos) ^ index as u64;
        ProxyClient::new(plan, stream)
    }

    /// Whether every body is checked against its URL (so responses are kept whole).
    pub fn checks_content(&self) -> bool {
        self.plan.check_content
    }

    /// Requests per connection before it is replaced (0: unlimited).
    pub fn keepalive(&self) -> u64 {
        self.plan.keepalive
    }

    /// How the request line names the document.
    pub fn form(&self) -> Form {
        self.plan.form
    }

    /// Writes the next request into `out` and says what it asked for.
    pub fn build(&mut self, out: &mut Vec<u8>) -> Sent {
        let p = self.plan;
        let extension = p.extension;
        let doc = match &p.urls {
            Some(urls) if !urls.is_empty() => {
                // A split test's segment I takes the lines congruent to I mod N.
                let (index, count) = p.workload.share;
                let mine = (urls.len() as u64).saturating_sub(index).div_ceil(count.max(1)).max(1);
                let line = (index + count.max(1) * (self.next_url as u64 % mine)) as usize;
                let url = &urls[line.min(urls.len() - 1)];
                self.next_url += 1;
                return self.build_at(&p.origin, crate::http::request::origin_form(url), out);
            }
            _ => {
                let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
                let doc = self.gen.next(now);
                self.path.clear();
                use std::fmt::Write;
                let _ = write!(self.path, "{PREFIX}/d/{}/{}{}", doc.id, doc.len, extension.suffix());
                Some(doc)
            }
        };
        self.write(&p.origin, doc, extension, out)
    }

    /// Writes a request for `path` on `authority` into `out`, as [`ProxyClient::build`] asks
    /// for a document of its own: a page's object or link (`--fullpage`), on the origin or,
    /// through a forward proxy, another host.
    pub fn build_at(&mut self, authority: &str, path: &str, out: &mut Vec<u8>) -> Sent {
        self.path.clear();
        self.path.push_str(path);
        let extension = Extension::of(path.split('?').next().unwrap_or(""));
        let doc = Doc::parse(path);
        self.write(authority, doc, extension, out)
    }

    /// Writes the request for `self.path` on `authority`, with the headers the setup adds.
    fn write(&mut self, authority: &str, doc: Option<Doc>, extension: Extension, out: &mut Vec<u8>) -> Sent {
        let p = self.plan;
        out.clear();
        out.extend_from_slice(b"GET ");
        if p.form == Form::Forward {
            out.extend_from_slice(b"http://");
            out.extend_from_slice(authority.as_bytes());
        }
        out.extend_from_slice(self.path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(authority.as_bytes());
        out.extend_from_slice(b"\r\n");
        if p.reload_rate > 0.0 && self.rng.unit() < p.reload_rate {
            out.extend_from_slice(b"Cache-Control: no-cache\r\nPragma: no-cache\r\n");
        }
        if p.ims_rate > 0.0 && self.rng.unit() < p.ims_rate {
            if let Some(d) = doc {
                out.extend_from_slice(b"If-Modified-Since: ");
                out.extend_from_slice(d.last_modified().as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        let mut variant = 0;
        if let Some((count, vary)) = p.alternates {
            variant = self.rng.below(u64::from(count)) as u32;
            out.extend_from_slice(vary.name().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(vary.value(variant).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        crate::workload::headers::extra(p.extra_headers, &mut self.rng, out);
        out.extend_from_slice(b"\r\n");
        let abort = p.client_abort_rate > 0.0 && self.rng.unit() < p.client_abort_rate;
        Sent { doc, extension, variant, abort }
    }

    /// Checks a complete response: `Some(explanation)` when a 200's body is not the document
    /// its URL names.
    pub fn check(&self, sent: &Sent, status: u16, captured: Option<&Captured>) -> Option<String> {
        let (Some(doc), Some(c)) = (sent.doc, captured) else { return None };
        if status != 200 {
            return None;
        }
        let mut path = doc.path(PREFIX) + sent.extension.suffix();
        if let Some((_, vary)) = self.plan.alternates {
            path = keyed(&path, vary.value(sent.variant).as_bytes());
        }
        doc.check(&path, &c.body).err().map(|why| format!("asked for {path}: {why}"))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A setup whose every document is 5 bytes, checked.
    pub(crate) fn setup(form: Form) -> ProxySetup {
        ProxySetup {
            workload: WorkloadConfig { hit_rate: 1.0, hotset: 1, doc_size: Some(5), ..Default::default() },
            form,
            origin: "127.0.0.1:9".into(),
            reload_rate: 0.0,
            ims_rate: 0.0,
            client_abort_rate: 0.0,
            check_content: true,
            keepalive: 0,
            urls: None,
            new_conn_rate: None,
            extension: Extension::None,
            extra_headers: 0,
            alternates: None,
        }
    }

    #[test]
    fn requests_in_both_forms() {
        let mut out = Vec::new();
        let p = setup(Form::Reverse);
        ProxyClient::new(&p, 0).build(&mut out);
        assert_eq!(String::from_utf8(out.clone()).unwrap(), "GET /d/0/5 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n");
        let p = setup(Form::Forward);
        ProxyClient::new(&p, 0).build(&mut out);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "GET http://127.0.0.1:9/d/0/5 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n"
        );
        let mut p = setup(Form::Reverse);
        (p.reload_rate, p.ims_rate) = (1.0, 1.0);
        ProxyClient::new(&p, 0).build(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /d/0/5 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nCache-Control: no-cache\r\nPragma: no-cache\r\n\
             If-Modified-Since: Wed, 01 Jan 2020 00:00:00 GMT\r\n\r\n"
        );
    }

    #[test]
    fn url_lists_cycle_and_bodies_are_checked() {
        let mut p = setup(Form::Reverse);
        p.urls = Some(vec!["http://x/d/1/3".into(), "/d/2/4".into(), "/other".into()]);
        let mut c = ProxyClient::new(&p, 0);
        let mut out = Vec::new();
        let sent: Vec<Sent> = (0..4).map(|_| c.build(&mut out)).collect();
        assert_eq!(
            sent.iter().map(|s| s.doc).collect::<Vec<_>>(),
            vec![Some(Doc { id: 1, len: 3 }), Some(Doc { id: 2, len: 4 }), None, Some(Doc { id: 1, len: 3 })]
        );
        let good = Captured { headers: vec![], body: b"/d/".to_vec() };
        let bad = Captured { headers: vec![], body: b"/d/2".to_vec() };
        assert_eq!(c.check(&sent[0], 200, Some(&good)), None);
        assert_eq!(c.check(&sent[0], 200, Some(&bad)), Some("asked for /d/1/3: length 4, expected 3".into()));
        assert_eq!(c.check(&sent[0], 304, Some(&bad)), None);
    }

    #[test]
    fn segments_take_their_lines_of_a_url_list() {
        let mut p = setup(Form::Reverse);
        p.urls = Some((0..7).map(|i| format!("/d/{i}/1")).collect());
        let mut seen = Vec::new();
        for index in 0..3 {
            p.workload.share = (index, 3);
            let mut c = ProxyClient::new(&p, 0);
            let mut out = Vec::new();
            let ids: std::collections::BTreeSet<u64> =
                (0..20).filter_map(|_| c.build(&mut out).doc.map(|d| d.id)).collect();
            assert!(ids.iter().all(|id| id % 3 == index), "segment {index}: {ids:?}");
            seen.extend(ids);
        }
        seen.sort();
        assert_eq!(seen, (0..7).collect::<Vec<u64>>(), "together, every line");
    }

    #[test]
    fn extensions_and_extra_headers_go_on_every_request() {
        let mut p = setup(Form::Reverse);
        (p.extension, p.extra_headers, p.workload.doc_size) = (Extension::Jpeg, 3, Some(40));
        let mut c = ProxyClient::new(&p, 0);
        let mut out = Vec::new();
        let sent = c.build(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("GET /d/0/40.jpeg HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-Request-Id: "), "{text}");
        assert_eq!(text.matches("\r\n").count(), 2 + 3 + 1, "{text}");
        assert!(text.contains("\r\nTraceparent: 00-") && text.contains("\r\nX-Forwarded-For: 10."), "{text}");
        // The origin's body starts with the path as asked, extension and all.
        let doc = Doc { id: 0, len: 40 };
        let good = Captured { headers: vec![], body: doc.body("/d/0/40.jpeg") };
        assert_eq!(c.check(&sent, 200, Some(&good)), None);
        let plain = Captured { headers: vec![], body: doc.body("/d/0/40") };
        assert!(c.check(&sent, 200, Some(&plain)).is_some());
        // A URL list's paths keep their own ending.
        p.urls = Some(vec!["/d/1/20/".into()]);
        let mut c = ProxyClient::new(&p, 0);
        let sent = c.build(&mut Vec::new());
        assert_eq!(sent.extension, Extension::Slash);
        let listed = Captured { headers: vec![], body: Doc { id: 1, len: 20 }.body("/d/1/20/") };
        assert_eq!(c.check(&sent, 200, Some(&listed)), None);
    }

    #[test]
    fn alternates_ask_for_a_variant_and_check_it() {
        let mut p = setup(Form::Reverse);
        (p.alternates, p.workload.doc_size) = (Some((3, Vary::AcceptLanguage)), Some(60));
        let mut c = ProxyClient::new(&p, 0);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let mut out = Vec::new();
            let sent = c.build(&mut out);
            let text = String::from_utf8(out).unwrap();
            let value = Vary::AcceptLanguage.value(sent.variant);
            assert!(text.contains(&format!("\r\nAccept-Language: {value}\r\n")), "{text}");
            seen.insert(sent.variant);
            let doc = Doc { id: 0, len: 60 };
            let right = Captured { headers: vec![], body: doc.body(&keyed("/d/0/60", value.as_bytes())) };
            assert_eq!(c.check(&sent, 200, Some(&right)), None);
            let other = Vary::AcceptLanguage.value((sent.variant + 1) % 3);
            let wrong = Captured { headers: vec![], body: doc.body(&keyed("/d/0/60", other.as_bytes())) };
            let why = c.check(&sent, 200, Some(&wrong)).expect("the wrong alternate is caught");
            assert!(why.contains(&format!("asked for /d/0/60 [{value}]")), "{why}");
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    }
}
