//! Whole pages (`--fullpage`, `--follow`, `--same-host`, `--max-depth`): against nginx serving
//! a hand-written site, whose access log holds every page and object exactly; through Apache
//! Traffic Server as a forward proxy in front of strain's origin, whose pages name their
//! objects; and the flags a whole-page run refuses.

use std::collections::BTreeMap;

use crate::harness::{exclusive, free_port, load, strain_raw, Nginx, Origin};
use crate::proxies::{Ats, AtsMode};

/// The site: three pages, their objects (a style sheet, a script, images by `src` and by
/// `srcset`, one missing), links between them, and references to another host, which a
/// direct run does not fetch.
const INDEX: &str = "<!DOCTYPE html><html><head><link rel=\"stylesheet\" href=\"/css/site.css\">\
    <script src=\"js/app.js\"></script></head><body>\
    <img src=\"/img/a.jpeg\" alt=\"\"><img srcset=\"/img/b.jpeg 1x, /img/b2.jpeg 2x\" alt=\"\">\
    <img src=\"http://127.0.0.2:9/cdn/c.jpeg\" alt=\"\">\
    <a href=\"/a.html\">a</a> <a href=\"b.html\">b</a> <a href=\"http://127.0.0.2:9/x.html\">away</a>\
    </body></html>";
const A: &str = "<html><body><img src=\"/img/a.jpeg\"><img src=\"/img/d.jpeg\">\
    <a href=\"/index.html\">home</a></body></html>";
const B: &str = "<html><body><img src=\"/img/e.jpeg\"><img src=\"/img/missing.jpeg\">\
    <a href=\"/a.html\">a</a><a href=\"/index.html#top\">home</a></body></html>";

/// What each page embeds that is on the site.
fn objects(page: &str) -> &'static [&'static str] {
    match page {
        "/index.html" => &["/css/site.css", "/js/app.js", "/img/a.jpeg", "/img/b.jpeg"],
        "/a.html" => &["/img/a.jpeg", "/img/d.jpeg"],
        "/b.html" => &["/img/e.jpeg", "/img/missing.jpeg"],
        _ => &[],
    }
}

/// nginx serving the site from its directory, logging `METHOD URI STATUS` to `site.log`.
fn site(h2: bool) -> Nginx {
    let http = "log_format site '$request_method $uri $status';";
    let body = "access_log site.log site; root site;";
    let nginx = if h2 { Nginx::start_h2(http, body, false) } else { Nginx::start_http1(http, body, false) };
    let root = nginx.dir.path().join("site");
    for (path, text) in [
        ("index.html", INDEX),
        ("a.html", A),
        ("b.html", B),
        ("css/site.css", "body{}"),
        ("js/app.js", "1;"),
        ("img/a.jpeg", "a"),
        ("img/b.jpeg", "bb"),
        ("img/d.jpeg", "ddd"),
        ("img/e.jpeg", "eeee"),
    ] {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    nginx
}

/// The log's lines, counted.
fn logged(nginx: &Nginx) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in nginx.file("site.log").lines() {
        *out.entry(line.to_string()).or_default() += 1;
    }
    out
}

#[test]
fn every_page_and_object_reaches_nginx_exactly() {
    for (h2, line) in [(false, "-n 20 -c 6 -t 1"), (true, "--http2 -n 40 -c 12 -t 2")] {
        let mut nginx = site(h2);
        let run = load(&format!("--fullpage {line}"), &format!("{}index.html", nginx.url()));
        nginx.stop();
        let pages = if h2 { 40 } else { 20 };
        let mut want = BTreeMap::from([("GET /index.html 200".to_string(), pages)]);
        for o in objects("/index.html") {
            want.insert(format!("GET {o} 200"), pages);
        }
        assert_eq!(logged(&nginx), want, "h2 {h2}: {}", run.stdout);
        run.assert_nums(&[
            ("/requests", pages * 5),
            ("/status/200", pages * 5),
            ("/pages/loaded", pages),
            ("/pages/failed", 0),
            ("/pages/objects", pages * 4),
            ("/pages/objects_failed", 0),
            ("/pages/followed", 0),
            ("/pages/elsewhere", pages),
        ]);
        let header = format!("Running {pages}-page test @ ");
        assert!(run.stdout.starts_with(&header), "{}", run.stdout);
        let said =
            format!("  Pages: {pages} loaded, 0 failed; 4.0 objects per page; {pages} references to other hosts");
        assert!(run.stdout.contains(&said), "{}", run.stdout);
        assert!(run.stdout.contains("  Page load: mean "), "{}", run.stdout);
        let j = run.json.as_ref().unwrap();
        assert!(j["pages"]["load"]["p99_us"].as_u64().unwrap() >= j["pages"]["load"]["p50_us"].as_u64().unwrap());
        let errors: Vec<String> = crate::harness::schema().iter_errors(j).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}

#[test]
fn links_are_followed_to_the_depth_and_the_log_adds_up() {
    let mut nginx = site(false);
    let run = load("--fullpage --follow --max-depth 2 -n 30 -c 6 -t 1", &format!("{}index.html", nginx.url()));
    nginx.stop();
    let log = logged(&nginx);
    let n = |line: &str| log.get(line).copied().unwrap_or(0);
    let page = |p: &str| n(&format!("GET {p} 200"));
    let (index, a, b) = (page("/index.html"), page("/a.html"), page("/b.html"));
    // One browser: a starting page, then two links, ten times over; b's links go to a or home.
    assert_eq!(index + a + b, 30, "{log:?}");
    assert!(index >= 10 && a > 0 && b > 0, "{log:?}");
    // Every page's objects, as many times as the page was loaded.
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for (p, times) in [("/index.html", index), ("/a.html", a), ("/b.html", b)] {
        *want.entry(format!("GET {p} 200")).or_default() += times;
        for o in objects(p) {
            let status = if o.contains("missing") { 404 } else { 200 };
            *want.entry(format!("GET {o} {status}")).or_default() += times;
        }
    }
    want.retain(|_, v| *v > 0);
    assert_eq!(log, want);
    let objects = 4 * index + 2 * a + 2 * b;
    run.assert_nums(&[
        ("/requests", 30 + objects),
        ("/status/404", b),
        ("/pages/loaded", 30),
        ("/pages/objects", objects),
        ("/pages/objects_failed", b),
        ("/pages/followed", 20),
    ]);
}

/// A GET of `path` from `addr` (one connection, closed after): the body, binary or not.
fn get(addr: std::net::SocketAddr, path: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let at = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    all.split_off(at)
}

/// The paths a generated page names in `attr="..."` (strain's origin writes them plainly).
fn named(page: &[u8], attr: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(page);
    text.split(&format!("{attr}=\"")).skip(1).map(|rest| rest.split('"').next().unwrap().to_string()).collect()
}

#[test]
fn a_site_generated_by_strains_origin_is_loaded_from_nginx_exactly() {
    // strain's origin writes the site: pages of 3 objects and 2 links each, fixed by their
    // ids; every page within two links of the first, and every object they embed, is saved
    // into nginx's root under its own path.
    let origin = Origin::start(&["--embed", "3", "--links", "2"]);
    let mut nginx = site(false);
    let root = nginx.dir.path().join("site");
    let (mut embeds, mut frontier) = (BTreeMap::new(), vec!["/d/1/6000.html".to_string()]);
    for _ in 0..3 {
        let mut next = Vec::new();
        for page in std::mem::take(&mut frontier) {
            if embeds.contains_key(&page) {
                continue;
            }
            let body = get(origin.addr, &page);
            let objects = named(&body, "src");
            assert_eq!(objects.len(), 3, "{page}");
            for path in objects.iter().chain([&page]) {
                let file = root.join(path.trim_start_matches('/'));
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, if path == &page { body.clone() } else { get(origin.addr, path) }).unwrap();
            }
            next.extend(named(&body, "href"));
            embeds.insert(page, objects);
        }
        frontier = next;
    }
    origin.stop();
    // One browser follows links two deep from the first page, ten times over.
    let run = load("--fullpage --follow --max-depth 2 -n 30 -c 6 -t 1", &format!("{}d/1/6000.html", nginx.url()));
    nginx.stop();
    let log = logged(&nginx);
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for (page, objects) in &embeds {
        let times = log.get(&format!("GET {page} 200")).copied().unwrap_or(0);
        for path in objects.iter().chain([page]) {
            *want.entry(format!("GET {path} 200")).or_default() += times;
        }
    }
    want.retain(|_, n| *n > 0);
    assert_eq!(log, want, "every page and each of its objects, as often as the page was loaded");
    assert!(log["GET /d/1/6000.html 200"] >= 10, "{log:?}");
    run.assert_nums(&[("/pages/loaded", 30), ("/pages/objects", 90), ("/pages/followed", 20), ("/requests", 120)]);
}

#[test]
fn a_page_that_fails_is_counted_and_nothing_is_fetched_for_it() {
    let mut nginx = site(false);
    let run = load("--fullpage -n 8 -c 6 -t 1", &format!("{}nope.html", nginx.url()));
    nginx.stop();
    assert_eq!(logged(&nginx), BTreeMap::from([("GET /nope.html 404".to_string(), 8)]));
    run.assert_nums(&[("/requests", 8), ("/pages/loaded", 0), ("/pages/failed", 8), ("/pages/objects", 0)]);
}

#[test]
fn through_a_forward_proxy_a_page_and_its_objects_are_cached_once() {
    let _alone = exclusive();
    let origin_port = free_port();
    let ats = Ats::start(AtsMode::Forward);
    // Four pages, ten objects each (the in-process origin's default with --fullpage), one
    // browser: every document reaches the origin once, then ATS serves it.
    let run = crate::proxy::through(
        origin_port,
        ats.port,
        None,
        "--form forward --fullpage --hit-rate 1 --hotset 4 -n 40 -c 6 -t 1 --check-content",
    );
    run.assert_nums(&[
        ("/requests", 440),
        ("/status/200", 440),
        ("/errors/content", 0),
        ("/pages/loaded", 40),
        ("/pages/objects", 400),
        ("/proxy/origin_requests", 44),
    ]);
}

#[test]
fn whole_pages_refuse_what_they_cannot_do() {
    let url = "http://127.0.0.1:9/";
    for (args, said) in [
        (vec!["--fullpage", "-R", "10", url], "--fullpage loads pages in closed loop, as browsers do"),
        (vec!["--fullpage", "-X", "POST", url], "--fullpage GETs pages and their objects"),
        (vec!["--fullpage", "-s", "x.lua", url], "--fullpage builds its own requests"),
        (vec!["--follow", url], "--fullpage"),
        (vec!["--fullpage", "--max-depth", "2", url], "--follow"),
        (vec!["--fullpage", "--follow", "--max-depth", "-1", url], "--max-depth"),
        (vec!["proxy", "--fullpage", "--request-extension", "jpeg"], "--fullpage asks for .html pages"),
        (vec!["proxy", "--fullpage", "--new-conn-rate", "5"], "it cannot be combined with --new-conn-rate"),
        (vec!["proxy", "--fullpage", "--find-max", "--slo", "p99<1s"], "a capacity search paces requests"),
    ] {
        let run = strain_raw(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(lines[0].starts_with("strain: ") && lines[0].contains(said), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}: nothing is sent: {}", run.stdout);
    }
}
