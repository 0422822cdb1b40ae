//! Whole pages (`--fullpage`; jtest's -l, -F and -J): a thread's slots in groups of
//! [`Browse::CONNECTIONS`], each group a browser. A browser asks for a page on one of its
//! slots; once the page is in, the objects it embeds are queued and the browser's slots fetch
//! them in parallel, each taking the next as it comes free. The page is loaded when its last
//! object ends: its load time runs from the page's send. The browser then goes on to a page
//! the last one links to (`--follow`, up to `--max-depth` links from where it started), or to
//! a new page. A slot with nothing to fetch waits on its open connection until its browser
//! has work again ([`Browsing::ended`] says which slots to wake).
//!
//! A page's references are read from its HTML ([`extract`]), whatever served it: strain's
//! origin with `--embed`, nginx, any site. Only those on the page's host are fetched (the
//! connections go there), but through a forward proxy, which reaches any host, unless
//! `--same-host`.

use std::collections::VecDeque;
use std::ops::Range;

use hdrhistogram::Histogram;
use url::Url;

use crate::config::Browse;
use crate::engine::proxy::{Form, ProxyClient, Sent};
use crate::engine::{PageSetup, PageSource};
use crate::http::response::Captured;
use crate::rng::Rng;
use crate::stats::section::Section;
use crate::stats::{PageCounts, PagesSection};
use crate::workload::page::extract;

/// What a slot fetches now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    /// Nothing.
    Free,
    /// Its browser's page.
    Page,
    /// One of the page's objects.
    Object,
}

/// What a slot that is free to send gets from its browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Claim {
    /// Nothing yet: it waits idle.
    Wait,
    /// A new page (counted against `-n`).
    Page,
    /// An object of the page being loaded.
    Object,
}

/// Where a browser's new pages come from, and how its requests are written.
enum Source<'a> {
    /// The URL's page: its request is the template of every other (headers and all).
    Site { start: &'a [u8], tls: bool },
    /// A proxy test's documents.
    Proxy(ProxyClient<'a>),
}

/// A page being loaded.
#[derive(Debug)]
struct Load {
    /// Its URL, which its references resolve against.
    url: Url,
    /// When its request was sent, clock µs.
    started_us: u64,
    /// Its own request has not ended yet.
    page_pending: bool,
    /// Objects not yet fetched, as absolute URLs.
    queue: VecDeque<Url>,
    /// Objects being fetched.
    in_flight: u32,
}

/// One browser: the page it loads, and where it goes next.
#[derive(Debug, Default)]
struct Browser {
    load: Option<Load>,
    /// The link it follows next.
    next: Option<Url>,
    /// Links followed since its starting page.
    depth: u32,
}

/// A thread's browsers, and what each slot fetches.
pub(super) struct Browsing<'a> {
    browse: Browse,
    source: Source<'a>,
    /// The origin the connections go to, as a URL (its scheme, host and port).
    home: Url,
    browsers: Vec<Browser>,
    /// Per slot: what it fetches, its request's bytes, and what a proxy test's asked for.
    work: Vec<Work>,
    bytes: Vec<Vec<u8>>,
    sent: Vec<Sent>,
    rng: Rng,
    counts: PageCounts,
    times: Histogram<u64>,
}

impl<'a> Browsing<'a> {
    /// Thread `index`'s browsers over its `slots` slots, `request` being the URL's request.
    pub(super) fn new(setup: &'a PageSetup, request: &'a [u8], tls: bool, index: usize, slots: usize) -> Browsing<'a> {
        let (source, home, seed) = match &setup.source {
            PageSource::Site => (Source::Site { start: request, tls }, url_of(request, tls), 1),
            PageSource::Proxy(p) => {
                let client = ProxyClient::for_thread(p, index);
                (Source::Proxy(client), Url::parse(&format!("http://{}/", p.origin)).ok(), p.workload.seed)
            }
        };
        Browsing {
            browse: setup.browse,
            source,
            // The URL parsed when the run was prepared; a Host that is no URL's host loads
            // every page without its references.
            home: home.unwrap_or_else(|| Url::parse("http://invalid./").expect("a constant URL parses")),
            browsers: (0..slots.div_ceil(Browse::CONNECTIONS)).map(|_| Browser::default()).collect(),
            work: vec![Work::Free; slots],
            bytes: vec![Vec::new(); slots],
            sent: vec![Sent::default(); slots],
            rng: Rng::for_thread(seed, index),
            counts: PageCounts::default(),
            times: crate::stats::latency_histogram(),
        }
    }

    /// Slot `i`'s request bytes.
    pub(super) fn request(&self, i: usize) -> Option<&[u8]> {
        self.bytes.get(i).map(Vec::as_slice)
    }

    /// What a proxy test's request on slot `i` asked for (for its content check and abort).
    pub(super) fn sent(&self, i: usize) -> Option<&Sent> {
        self.sent.get(i)
    }

    /// The proxy test's client, in a proxy test.
    pub(super) fn proxy(&self) -> Option<&ProxyClient<'a>> {
        match &self.source {
            Source::Proxy(c) => Some(c),
            Source::Site { .. } => None,
        }
    }

    /// Whether no browser has a page under way (with `-n`'s pages all started, the run ends).
    pub(super) fn settled(&self) -> bool {
        self.browsers.iter().all(|b| b.load.is_none())
    }

    /// The slots of slot `i`'s browser.
    fn group(&self, i: usize) -> Range<usize> {
        let first = i / Browse::CONNECTIONS * Browse::CONNECTIONS;
        first..(first + Browse::CONNECTIONS).min(self.work.len())
    }

    /// Slot `i` is free to send at `now`: its browser's next object, or a new page when it has
    /// none under way and `may_start` (`-n` has pages left). The request is then ready.
    pub(super) fn claim(&mut self, i: usize, now: u64, may_start: bool) -> Claim {
        if self.work.get(i).is_some_and(|&w| w != Work::Free) {
            // Its request was given up without an answer (an abort, a connection lost while
            // it was written): it ended for the page as a failure.
            self.ended(i, None, None, now);
        }
        let Some(b) = self.browsers.get_mut(i / Browse::CONNECTIONS) else { return Claim::Wait };
        if let Some(load) = &mut b.load {
            let Some(object) = load.queue.pop_front() else { return Claim::Wait };
            load.in_flight += 1;
            self.work[i] = Work::Object;
            self.write(i, &object, false);
            return Claim::Object;
        }
        if !may_start {
            return Claim::Wait;
        }
        let next = b.next.take();
        let followed = next.is_some();
        let url = match (next, &mut self.source) {
            (Some(link), _) => {
                self.counts.followed += 1;
                self.write(i, &link, true);
                Some(link)
            }
            (None, Source::Site { start, tls }) => {
                self.bytes[i].clear();
                self.bytes[i].extend_from_slice(start);
                url_of(start, *tls)
            }
            (None, Source::Proxy(client)) => {
                self.sent[i] = client.build(&mut self.bytes[i]);
                // A page is checked by its references, not as a plain document's body.
                self.sent[i].doc = None;
                url_of(&self.bytes[i], false)
            }
        };
        let b = &mut self.browsers[i / Browse::CONNECTIONS];
        if !followed {
            b.depth = 0;
        }
        let url = url.unwrap_or_else(|| self.home.clone());
        b.load = Some(Load { url, started_us: now, page_pending: true, queue: VecDeque::new(), in_flight: 0 });
        self.work[i] = Work::Page;
        Claim::Page
    }

    /// Writes slot `i`'s request for `url` (a page when `page`), which is reachable.
    fn write(&mut self, i: usize, url: &Url, page: bool) {
        let out = &mut self.bytes[i];
        match &mut self.source {
            Source::Site { start, tls } => {
                // The URL's request (its headers) sent to another path, as a GET without a body.
                // (A reachable URL always has one; the page again is the harmless fallback.)
                *out = super::redirect::next_request(start, 303, url.as_str(), *tls).unwrap_or_else(|| start.to_vec());
            }
            Source::Proxy(client) => {
                let authority = match url.port() {
                    Some(port) => format!("{}:{port}", url.host_str().unwrap_or("")),
                    None => url.host_str().unwrap_or("").to_string(),
                };
                let path = match url.query() {
                    Some(q) => format!("{}?{q}", url.path()),
                    None => url.path().to_string(),
                };
                self.sent[i] = client.build_at(&authority, &path, out);
                if page {
                    self.sent[i].doc = None;
                }
            }
        }
    }

    /// Whether a reference can be fetched over this run's connections: on the origin, or on
    /// any http host through a forward proxy (but with `--same-host`).
    fn reachable(&self, url: &Url) -> bool {
        let forward = matches!(&self.source, Source::Proxy(c) if c.form() == Form::Forward);
        url.origin() == self.home.origin() || (forward && !self.browse.same_host && url.scheme() == "http")
    }

    /// Slot `i`'s request ended at `now`: answered with `status` (`captured`, its body, when
    /// kept), or failed (`None`). Returns the slots to wake when the page's objects were
    /// queued (slot `i` sends again on its own).
    pub(super) fn ended(
        &mut self,
        i: usize,
        status: Option<u16>,
        captured: Option<&Captured>,
        now: u64,
    ) -> Option<Range<usize>> {
        let work = std::mem::replace(self.work.get_mut(i)?, Work::Free);
        let bi = i / Browse::CONNECTIONS;
        match work {
            Work::Free => None,
            Work::Object => {
                self.counts.objects += 1;
                self.counts.objects_failed += u64::from(status.is_none_or(|s| s >= 400));
                let load = self.browsers.get_mut(bi)?.load.as_mut()?;
                load.in_flight = load.in_flight.saturating_sub(1);
                self.finish_if_done(bi, now);
                None
            }
            Work::Page => {
                let ok = status.is_some_and(|s| (200..300).contains(&s) || s == 304);
                if !ok {
                    self.counts.failed += 1;
                    let b = self.browsers.get_mut(bi)?;
                    (b.load, b.next, b.depth) = (None, None, 0);
                    return None;
                }
                let body = captured.map_or(&[][..], |c| c.body.as_slice());
                let url = self.browsers.get(bi)?.load.as_ref()?.url.clone();
                let refs = if body.is_empty() { Default::default() } else { extract(url.as_str(), body) };
                let parse = |s: &String| Url::parse(s).ok();
                let (embeds, elsewhere): (Vec<Url>, Vec<Url>) =
                    refs.embeds.iter().filter_map(parse).partition(|u| self.reachable(u));
                let links: Vec<Url> = refs.links.iter().filter_map(parse).filter(|u| self.reachable(u)).collect();
                self.counts.elsewhere += elsewhere.len() as u64;
                let follow = self.browse.follow && !links.is_empty();
                let pick = if follow { self.rng.below(links.len() as u64) as usize } else { 0 };
                let b = self.browsers.get_mut(bi)?;
                let load = b.load.as_mut()?;
                load.page_pending = false;
                load.queue.extend(embeds);
                let queued = !load.queue.is_empty();
                if follow && b.depth < self.browse.max_depth {
                    b.next = links.into_iter().nth(pick);
                    b.depth += 1;
                } else {
                    (b.next, b.depth) = (None, 0);
                }
                self.finish_if_done(bi, now);
                queued.then(|| self.group(i))
            }
        }
    }

    /// Browser `bi`'s page is loaded once its own request and every object have ended.
    fn finish_if_done(&mut self, bi: usize, now: u64) {
        let Some(b) = self.browsers.get_mut(bi) else { return };
        let done = b.load.as_ref().is_some_and(|l| !l.page_pending && l.queue.is_empty() && l.in_flight == 0);
        if let Some(load) = b.load.take_if(|_| done) {
            self.counts.loaded += 1;
            let took = now.saturating_sub(load.started_us).clamp(1, crate::stats::MAX_LATENCY_US);
            self.times.saturating_record(took);
        }
    }

    /// Measuring starts: the counts start again.
    pub(super) fn restart_counts(&mut self) {
        self.counts = PageCounts::default();
        self.times.reset();
    }

    /// What was counted, as the result's `pages` section.
    pub(super) fn section(&self) -> Box<dyn Section> {
        Box::new(PagesSection::new(self.counts.clone(), &self.times))
    }
}

/// The absolute URL `request` asks for: its target when absolute (to a forward proxy), else
/// its `Host` and path over `tls` or not.
fn url_of(request: &[u8], tls: bool) -> Option<Url> {
    let line = request.split(|&b| b == b'\r').next()?;
    let target = std::str::from_utf8(line.split(|&b| b == b' ').nth(1)?).ok()?;
    if target.contains("://") {
        return Url::parse(target).ok();
    }
    let host = std::str::from_utf8(crate::http::request_head::header(request, b"host")?).ok()?;
    Url::parse(&format!("{}://{host}{target}", if tls { "https" } else { "http" })).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::proxy::ProxySetup;

    const START: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Test: 1\r\n\r\n";
    const PAGE: &[u8] = b"<html><img src=\"/a.png\"><img src=\"b.jpg\"><img src=\"http://cdn.example/c.js\">\
        <a href=\"/next.html\">n</a><a href=\"http://elsewhere.example/\">x</a></html>";

    fn site(browse: Browse) -> PageSetup {
        PageSetup { browse, source: PageSource::Site }
    }

    fn text(b: &Browsing, i: usize) -> String {
        String::from_utf8(b.request(i).unwrap().to_vec()).unwrap()
    }

    fn page(body: &[u8]) -> Captured {
        Captured { headers: vec![], body: body.to_vec() }
    }

    #[test]
    fn a_page_then_its_objects_over_the_browser_slots() {
        let setup = site(Browse { follow: false, same_host: false, max_depth: 3 });
        let mut b = Browsing::new(&setup, START, false, 0, 8);
        assert_eq!(b.browsers.len(), 2, "6 slots a browser");
        assert_eq!(b.claim(0, 100, true), Claim::Page);
        assert_eq!(text(&b, 0), String::from_utf8(START.to_vec()).unwrap());
        assert_eq!(b.claim(1, 100, true), Claim::Wait, "the page is not in yet");
        assert_eq!(b.claim(6, 100, true), Claim::Page, "the other browser starts its own");
        // The page names two objects here and one elsewhere.
        assert_eq!(b.ended(0, Some(200), Some(&page(PAGE)), 1_000), Some(0..6));
        assert_eq!(b.counts.elsewhere, 1);
        assert_eq!(b.claim(1, 1_000, true), Claim::Object);
        assert_eq!(text(&b, 1), "GET /a.png HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Test: 1\r\n\r\n");
        assert_eq!(b.claim(0, 1_000, true), Claim::Object);
        assert!(text(&b, 0).starts_with("GET /b.jpg HTTP/1.1\r\n"), "{}", text(&b, 0));
        assert_eq!(b.claim(2, 1_000, true), Claim::Wait, "both objects are taken");
        assert_eq!(b.ended(1, Some(200), None, 2_000), None);
        assert!(!b.settled());
        assert_eq!(b.ended(0, Some(404), None, 5_000), None);
        assert_eq!((b.counts.loaded, b.counts.objects, b.counts.objects_failed), (1, 2, 1));
        assert!((4_900..4_910).contains(&b.times.max()), "from the page's send to its last object");
        // Without -n's pages left, the browser waits.
        assert_eq!(b.claim(0, 6_000, false), Claim::Wait);
        b.ended(6, None, None, 6_000);
        assert_eq!(b.counts.failed, 1);
        assert!(b.settled());
    }

    #[test]
    fn links_are_followed_to_the_depth_then_the_browser_starts_again() {
        let setup = site(Browse { follow: true, same_host: true, max_depth: 2 });
        let mut b = Browsing::new(&setup, START, false, 0, 1);
        // Each page links to the other (a link to the page itself is not one) and elsewhere.
        let links =
            b"<a href=\"/next.html\">n</a><a href=\"/index.html\">i</a><a href=\"http://elsewhere.example/x\">x</a>";
        let mut seen = Vec::new();
        for _ in 0..6 {
            assert_eq!(b.claim(0, 0, true), Claim::Page);
            seen.push(text(&b, 0).split(' ').nth(1).unwrap().to_string());
            b.ended(0, Some(200), Some(&page(links)), 10);
        }
        assert_eq!(seen, ["/index.html", "/next.html", "/index.html", "/index.html", "/next.html", "/index.html"]);
        assert_eq!((b.counts.loaded, b.counts.followed), (6, 4));
    }

    #[test]
    fn through_a_forward_proxy_other_hosts_are_reached_but_with_same_host() {
        let proxy = |same_host| PageSetup {
            browse: Browse { follow: false, same_host, max_depth: 0 },
            source: PageSource::Proxy(ProxySetup {
                form: Form::Forward,
                origin: "127.0.0.1:9".into(),
                ..crate::engine::proxy::tests::setup(Form::Forward)
            }),
        };
        for same_host in [false, true] {
            let setup = proxy(same_host);
            let mut b = Browsing::new(&setup, b"", false, 0, 6);
            assert_eq!(b.claim(0, 0, true), Claim::Page);
            assert!(text(&b, 0).starts_with("GET http://127.0.0.1:9/d/"), "{}", text(&b, 0));
            assert!(b.sent(0).unwrap().doc.is_none(), "a page is not checked as a plain document");
            let body = b"<img src=\"/d/7/100.jpeg\"><img src=\"http://cdn.example/d/8/10.jpeg\">";
            b.ended(0, Some(200), Some(&page(body)), 10);
            let mut asked = Vec::new();
            while b.claim(asked.len(), 10, true) == Claim::Object {
                asked.push(text(&b, asked.len()).lines().take(2).collect::<Vec<_>>().join(" | "));
            }
            let mut want = vec!["GET http://127.0.0.1:9/d/7/100.jpeg HTTP/1.1 | Host: 127.0.0.1:9".to_string()];
            if !same_host {
                want.push("GET http://cdn.example/d/8/10.jpeg HTTP/1.1 | Host: cdn.example".into());
            }
            assert_eq!(asked, want, "same host: {same_host}");
            assert_eq!(b.counts.elsewhere, u64::from(same_host));
        }
    }
}
