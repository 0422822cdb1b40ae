//! Following redirects (`--follow-redirects N`): a `301`, `302`, `303`, `307` or `308` whose
//! `Location` names the host the request went to (its `Host`, and the scheme it went over) is
//! not an answer: the slot sends the request again to the new path, on the same connection
//! (or a new one if the server closed it), and the chain is one request whose latency runs
//! from its first send to its last answer. `303`, and `301`/`302` after a POST, turn the
//! request into a GET without a body, as browsers do; `307` and `308` send it as it was.
//! A redirect to another host or scheme, past N, or without a `Location` is the answer.

use crate::http::response::Captured;
use crate::stats::RedirectCounts;

/// Whether `status` is a redirect this follows.
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Per slot, where its chain is; and what was counted.
#[derive(Debug)]
pub(super) struct Redirects {
    max: u32,
    /// Hops so far in each slot's chain.
    hops: Vec<u32>,
    /// The request of each slot's next hop (empty when it is on its first).
    next: Vec<Vec<u8>>,
    counts: RedirectCounts,
}

impl Redirects {
    /// Up to `max` hops a request, for `slots` slots; `None` when off.
    pub(super) fn new(max: u32, slots: usize) -> Option<Redirects> {
        (max > 0).then(|| Redirects {
            max,
            hops: vec![0; slots],
            next: vec![Vec::new(); slots],
            counts: RedirectCounts::default(),
        })
    }

    /// Slot `i` is on a later hop of its chain: the request it sends.
    pub(super) fn request(&self, i: usize) -> Option<&[u8]> {
        self.next.get(i).filter(|b| !b.is_empty()).map(Vec::as_slice)
    }

    /// An answer with `status` (and `captured`, its head kept) came to slot `i`'s request:
    /// its hop's, or on the first hop `first`, sent over TLS or not (`tls`, asked only for a
    /// redirect). True when it is a redirect to follow, the next hop's request then ready;
    /// otherwise the chain ends with this answer.
    pub(super) fn answered(
        &mut self,
        i: usize,
        status: u16,
        captured: Option<&Captured>,
        first: &[u8],
        tls: impl FnOnce() -> bool,
    ) -> bool {
        let follow = is_redirect(status) && self.follows(i, status, captured, first, tls());
        if !follow {
            self.end(i);
        }
        follow
    }

    fn follows(&mut self, i: usize, status: u16, captured: Option<&Captured>, first: &[u8], tls: bool) -> bool {
        // The first that is not empty (nginx's `return 302` with no URL sends an empty one).
        let location = captured.and_then(|c| {
            let mut all = c.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(b"location"));
            all.find_map(|(_, v)| std::str::from_utf8(v).ok().map(str::trim).filter(|v| !v.is_empty()))
        });
        let Some(location) = location else {
            self.counts.no_location += 1;
            return false;
        };
        if self.hops.get(i).is_none_or(|&h| h >= self.max) {
            self.counts.too_many += 1;
            return false;
        }
        let hop = std::mem::take(&mut self.next[i]);
        let sent = if hop.is_empty() { first } else { &hop };
        let Some(next) = next_request(sent, status, location, tls) else {
            self.counts.elsewhere += 1;
            return false;
        };
        self.hops[i] += 1;
        self.counts.followed += 1;
        self.next[i] = next;
        true
    }

    /// Slot `i`'s chain ends (answered, or given up): counted if it had hops.
    pub(super) fn end(&mut self, i: usize) {
        if let Some(h) = self.hops.get_mut(i) {
            if *h > 0 {
                self.counts.chains += 1;
            }
            *h = 0;
            self.next[i].clear();
        }
    }

    /// What was counted, handed over at the end.
    pub(super) fn take_counts(&mut self) -> RedirectCounts {
        std::mem::take(&mut self.counts)
    }

    /// Measuring starts: the counts start again.
    pub(super) fn restart_counts(&mut self) {
        self.counts = RedirectCounts::default();
    }
}

/// The request that follows `sent` to `location`, or `None` when `location` is on another
/// host or scheme (or unreadable).
pub(super) fn next_request(sent: &[u8], status: u16, location: &str, tls: bool) -> Option<Vec<u8>> {
    let head_end = sent.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&sent[..head_end]).ok()?;
    let (line, fields) = head.split_once("\r\n")?;
    let mut parts = line.splitn(3, ' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    // The form the request named its target in: absolute (to a forward proxy) or a path.
    let (scheme, host, path) = match target.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            (scheme.to_ascii_lowercase(), authority.to_string(), path)
        }
        None => {
            let host = std::str::from_utf8(crate::http::request_head::header(&sent[..head_end], b"host")?).ok()?;
            ((if tls { "https" } else { "http" }).to_string(), host.to_string(), target)
        }
    };
    let new_path = resolve(&scheme, &host, path, location)?;
    let absolute = target.contains("://");
    let new_target = if absolute { format!("{scheme}://{host}{new_path}") } else { new_path };
    let to_get = status == 303 || (matches!(status, 301 | 302) && method == "POST");
    let mut out = Vec::with_capacity(sent.len());
    let method = if to_get && method != "HEAD" { "GET" } else { method };
    out.extend_from_slice(format!("{method} {new_target} {version}\r\n").as_bytes());
    for field in fields.split("\r\n").filter(|f| !f.is_empty()) {
        let name = field.split(':').next().unwrap_or("").trim();
        let body_field =
            ["content-length", "transfer-encoding", "content-type"].iter().any(|b| name.eq_ignore_ascii_case(b));
        if to_get && body_field {
            continue;
        }
        out.extend_from_slice(field.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !to_get {
        out.extend_from_slice(&sent[head_end..]);
    }
    Some(out)
}

/// The path `location` names, resolved against `path` (RFC 3986, section 5.2), if it is on
/// `host` over `scheme` (a default port written or not).
fn resolve(scheme: &str, host: &str, path: &str, location: &str) -> Option<String> {
    let same = |other_scheme: &str, authority: &str| {
        let default = if other_scheme == "https" { ":443" } else { ":80" };
        let bare = |a: &str| a.strip_suffix(default).unwrap_or(a).to_ascii_lowercase();
        other_scheme.eq_ignore_ascii_case(scheme) && bare(authority) == bare(host)
    };
    let (rest, other_scheme) = match location.split_once("://") {
        Some((s, rest)) if !s.contains('/') => (Some(rest), s.to_ascii_lowercase()),
        _ => match location.strip_prefix("//") {
            Some(rest) => (Some(rest), scheme.to_string()),
            None => (None, scheme.to_string()),
        },
    };
    let Some(rest) = rest else {
        if location.starts_with('/') {
            return Some(location.to_string());
        }
        // A relative reference: beside the current path's last segment (its query dropped).
        let base = path.split(['?', '#']).next().unwrap_or("/");
        let dir = &base[..base.rfind('/').map_or(0, |k| k + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        return Some(if location.is_empty() { base.to_string() } else { format!("{dir}{location}") });
    };
    let (authority, new_path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    if !same(&other_scheme, authority) {
        return None;
    }
    Some(match new_path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(sent: &str, status: u16, location: &str) -> Option<String> {
        next_request(sent.as_bytes(), status, location, false).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn locations_on_the_same_host_are_followed() {
        let get = "GET /a/b?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n";
        let rows = [
            ("/c", Some("GET /c HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n")),
            ("http://127.0.0.1:8080/d?y", Some("GET /d?y HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n")),
            ("//127.0.0.1:8080", Some("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n")),
            ("e", Some("GET /a/e HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n")),
            ("https://127.0.0.1:8080/c", None),
            ("http://127.0.0.2:8080/c", None),
            ("http://example.com/", None),
        ];
        for (location, want) in rows {
            assert_eq!(next(get, 302, location).as_deref(), want, "{location}");
        }
        // A default port, written or not.
        let plain = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";
        assert!(next(plain, 301, "http://EXAMPLE.com:80/x").is_some());
        assert!(next_request(plain.as_bytes(), 301, "https://example.com/x", true).is_some());
    }

    #[test]
    fn a_post_becomes_a_get_after_303_and_stays_after_307() {
        let post = "POST /form HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi";
        assert_eq!(next(post, 303, "/done").unwrap(), "GET /done HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(next(post, 302, "/done").unwrap(), "GET /done HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(
            next(post, 307, "/again").unwrap(),
            "POST /again HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
        );
        // A forward proxy's request keeps the absolute form.
        let forward = "GET http://origin:81/a HTTP/1.1\r\nHost: origin:81\r\n\r\n";
        assert_eq!(next(forward, 301, "/b").unwrap(), "GET http://origin:81/b HTTP/1.1\r\nHost: origin:81\r\n\r\n");
    }

    #[test]
    fn chains_are_bounded_and_counted() {
        let mut r = Redirects::new(2, 1).unwrap();
        let to = |l: &str| Captured { headers: vec![(b"Location".to_vec(), l.as_bytes().to_vec())], body: Vec::new() };
        let get = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";
        assert!(r.answered(0, 302, Some(&to("/1")), get, || false));
        assert!(r.request(0).unwrap().starts_with(b"GET /1 "));
        assert!(r.answered(0, 302, Some(&to("/2")), get, || false));
        assert!(!r.answered(0, 302, Some(&to("/3")), get, || false), "past 2");
        assert_eq!(r.request(0), None);
        assert!(!r.answered(0, 200, None, get, || false));
        assert!(!r.answered(0, 301, None, get, || false));
        assert!(!r.answered(0, 301, Some(&to("http://elsewhere/")), get, || false));
        let c = r.take_counts();
        assert_eq!((c.followed, c.chains, c.too_many, c.no_location, c.elsewhere), (2, 1, 1, 1, 1));
    }
}
