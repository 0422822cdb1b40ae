//! A record made into the request strain sends: the URL's server in place of the recorded one
//! (its Host too, unless `--keep-host`), only the methods allowed, the recorded body (or as
//! many bytes as were recorded, with `--synthetic-body`), `-H` added and `--drop-header`
//! removed. Hop-by-hop fields go: they described the recorded connection, not this one.

use super::record::{Body, Record};
use crate::config::Target;
use crate::http::request::{self, Header};

/// How records become requests.
#[derive(Debug, Clone)]
pub struct Rewrite {
    /// The URL argument: its scheme, host and port replace the recorded ones; `None` sends
    /// each record to the server it names.
    pub base: Option<Target>,
    /// `--keep-host`: the recorded Host header goes as it was.
    pub keep_host: bool,
    /// The methods replayed, upper case (`GET` and `HEAD` unless `--methods` names others).
    pub methods: Vec<String>,
    /// `--synthetic-body`: a body the file holds only the size of is sent as that many bytes.
    pub synthetic_body: bool,
    /// `-H`: added to every request (replacing a recorded field of the same name).
    pub headers: Vec<Header>,
    /// `--drop-header`, lower case.
    pub drop: Vec<String>,
}

/// Why a record is not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Its method is not among those replayed.
    Method,
    /// It had a body the file does not hold (and no `--synthetic-body`).
    Body,
}

/// A request ready to send: HTTP/1 bytes, the server (index into the origins), and its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The request, as HTTP/1.1 bytes.
    pub bytes: Vec<u8>,
    /// Which server it goes to.
    pub origin: u16,
}

/// Fields that describe the recorded connection or are recomputed for the body sent.
pub(crate) const HOP_BY_HOP: [&str; 8] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade", "content-length", "trailer"];

impl Rewrite {
    /// The server a record goes to: the URL argument's, or the one it names (its absolute
    /// URL's, else its Host header's over plain HTTP).
    pub fn server(&self, r: &Record) -> Option<Target> {
        if let Some(base) = &self.base {
            return Some(base.clone());
        }
        if r.target.contains("://") {
            return Target::parse(&r.target).ok();
        }
        let host = r.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host"))?;
        Target::parse(&format!("http://{}/", host.1.trim())).ok()
    }

    /// Whether `r` is sent with a body made up at its recorded size.
    pub fn generates(&self, r: &Record) -> bool {
        matches!(r.body, Body::Generate(_)) || (self.synthetic_body && matches!(r.body, Body::Size(_)))
    }

    /// Why `r` is not sent, if it is not (the scan counts these without building requests).
    pub fn skip(&self, r: &Record) -> Option<Skip> {
        let method = r.method.trim();
        if !self.methods.iter().any(|m| m.eq_ignore_ascii_case(method)) {
            return Some(Skip::Method);
        }
        matches!(r.body, Body::Size(_) if !self.synthetic_body).then_some(Skip::Body)
    }

    /// The request for `r`, going to server `origin` (`server` is what [`Rewrite::server`] gave).
    pub fn render(&self, r: &Record, server: &Target, origin: u16) -> Result<Rendered, Skip> {
        if let Some(skip) = self.skip(r) {
            return Err(skip);
        }
        let method = r.method.trim();
        let synthetic;
        let body: Option<&[u8]> = match &r.body {
            Body::None => None,
            Body::Bytes(b) => Some(b),
            Body::Size(n) | Body::Generate(n) if self.generates(r) => {
                synthetic = vec![b'x'; usize::try_from(*n).unwrap_or(0)];
                Some(&synthetic)
            }
            Body::Size(_) | Body::Generate(_) => return Err(Skip::Body),
        };
        let path = match request::origin_form(&r.target) {
            "" => "/".to_string(),
            p => p.to_string(),
        };
        let recorded_host =
            r.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host")).map(|(_, v)| v.trim().to_string()).or_else(
                || r.target.contains("://").then(|| Target::parse(&r.target).ok().map(|t| t.host_header())).flatten(),
            );
        let host = match (&self.base, self.keep_host, recorded_host) {
            (None, _, Some(h)) | (Some(_), true, Some(h)) => h,
            _ => server.host_header(),
        };
        let mut headers: Vec<Header> = r
            .headers
            .iter()
            .filter(|(n, _)| {
                let n = n.to_ascii_lowercase();
                n != "host" && !HOP_BY_HOP.contains(&n.as_str()) && !self.drop.contains(&n)
            })
            .filter(|(n, _)| !self.headers.iter().any(|h| h.name.eq_ignore_ascii_case(n)))
            .map(|(n, v)| Header { name: n.clone(), value: v.trim().to_string() })
            .collect();
        headers.extend(self.headers.iter().filter(|h| !self.drop.contains(&h.name.to_ascii_lowercase())).cloned());
        Ok(Rendered { bytes: request::render(method, &path, &host, &headers, body), origin })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(base: Option<&str>) -> Rewrite {
        Rewrite {
            base: base.map(|u| Target::parse(u).unwrap()),
            keep_host: false,
            methods: vec!["GET".into(), "HEAD".into()],
            synthetic_body: false,
            headers: vec![Header { name: "X-Replay".into(), value: "1".into() }],
            drop: vec!["cookie".into()],
        }
    }

    fn record(method: &str, target: &str, headers: &[(&str, &str)], body: Body) -> Record {
        Record {
            method: method.into(),
            target: target.into(),
            headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            body,
            ..Record::default()
        }
    }

    #[test]
    fn the_url_replaces_the_server_and_its_host() {
        let w = rewrite(Some("http://127.0.0.1:8080/"));
        let r = record(
            "GET",
            "https://shop.example/a?b=1",
            &[("Host", "shop.example"), ("Cookie", "s=1"), ("Connection", "close"), ("Accept", "*/*")],
            Body::None,
        );
        let server = w.server(&r).unwrap();
        let out = w.render(&r, &server, 0).unwrap();
        assert_eq!(
            String::from_utf8(out.bytes).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\nX-Replay: 1\r\n\r\n"
        );
        let keep = Rewrite { keep_host: true, ..w.clone() };
        let out = keep.render(&r, &server, 0).unwrap();
        assert!(String::from_utf8(out.bytes).unwrap().starts_with("GET /a?b=1 HTTP/1.1\r\nHost: shop.example\r\n"));
    }

    #[test]
    fn methods_and_bodies_are_kept_or_skipped_as_asked() {
        let w = rewrite(Some("http://127.0.0.1:8080/"));
        let server = w.server(&Record::default()).unwrap();
        let post = record("POST", "/up", &[], Body::Bytes(b"abc".to_vec()));
        assert_eq!(w.render(&post, &server, 0), Err(Skip::Method));
        let posts = Rewrite { methods: vec!["POST".into()], ..w.clone() };
        let out = String::from_utf8(posts.render(&post, &server, 0).unwrap().bytes).unwrap();
        assert!(out.ends_with("Content-Length: 3\r\n\r\nabc"), "{out}");
        let sized = record("POST", "/up", &[], Body::Size(4));
        assert_eq!(posts.render(&sized, &server, 0), Err(Skip::Body));
        let synthetic = Rewrite { synthetic_body: true, ..posts };
        let out = String::from_utf8(synthetic.render(&sized, &server, 0).unwrap().bytes).unwrap();
        assert!(out.ends_with("Content-Length: 4\r\n\r\nxxxx"), "{out}");
    }

    #[test]
    fn without_a_url_each_record_names_its_server() {
        let w = rewrite(None);
        let abs = record("GET", "https://cdn.example:8443/x.js", &[], Body::None);
        assert_eq!(w.server(&abs).unwrap().origin(), "https://cdn.example:8443");
        let hosted = record("GET", "/x", &[("Host", "api.example")], Body::None);
        assert_eq!(w.server(&hosted).unwrap().origin(), "http://api.example:80");
        assert!(w.server(&record("GET", "/x", &[], Body::None)).is_none());
    }
}
