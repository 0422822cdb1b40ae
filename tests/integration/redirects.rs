//! `--follow-redirects N` against nginx: a chain is one request (one answer, the last one),
//! its hops counted apart; redirects to another host, past N or without a Location are the
//! answer; a POST becomes a GET after 303; over HTTP/1.1 and HTTP/2. nginx's access log holds
//! every hop exactly.

use crate::harness::{load, Nginx};

/// A chain `/a` -> 301 -> `/b` -> 302 (a relative Location) -> `/c` -> 200, and the redirects
/// that are not followed: to another host, and without a Location.
const SITE: &str = "absolute_redirect on; \
    location = /a { return 301 /b; } \
    location = /b { return 302 c; } \
    location = /c { return 200 \"done\\n\"; } \
    location = /away { return 302 http://127.0.0.2:9/c; } \
    location = /bare { return 302; } \
    location = /form { return 303 /c; }";

/// The log's lines with their method, path and status.
const LOG: &str = "log_format hops '$request_method $uri $status';";

fn hops(nginx: &Nginx) -> Vec<String> {
    nginx.file("hops.log").lines().map(str::to_string).collect()
}

fn site(h2: bool) -> Nginx {
    let body = format!("access_log hops.log hops; {SITE}");
    if h2 {
        Nginx::start_h2(LOG, &body, false)
    } else {
        Nginx::start_http1(LOG, &body, false)
    }
}

#[test]
fn a_chain_is_one_request_and_its_hops_are_counted() {
    for h2 in [false, true] {
        let mut nginx = site(h2);
        let proto = if h2 { "--http2 " } else { "" };
        let run = load(&format!("{proto}--follow-redirects 3 -n 200 -c 4 -t 1"), &format!("{}a", nginx.url()));
        nginx.stop();
        let j = run.json.as_ref().unwrap();
        assert_eq!((j["requests"].as_u64(), j["status"]["200"].as_u64()), (Some(200), Some(200)), "{}", run.stdout);
        assert_eq!(j["status"].as_object().unwrap().len(), 1, "only the chains' last answers: {}", j["status"]);
        assert_eq!(j["redirects"]["followed"], 400, "{}", j["redirects"]);
        assert_eq!(j["redirects"]["chains"], 200, "{}", j["redirects"]);
        assert!(run.stdout.contains("  Redirects: 400 followed in 200 chains\n"), "{}", run.stdout);
        let errors: Vec<String> = crate::harness::schema().iter_errors(j).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        let log = hops(&nginx);
        for line in ["GET /a 301", "GET /b 302", "GET /c 200"] {
            assert_eq!(log.iter().filter(|l| *l == line).count(), 200, "{line} (h2 {h2})");
        }
        assert_eq!(log.len(), 600);
    }
}

#[test]
fn redirects_not_followed_are_the_answer() {
    let mut nginx = site(false);
    let url = nginx.url();
    // Off, as in wrk: the redirect is the answer.
    let run = load("-n 20 -c 2 -t 1", &format!("{url}a"));
    assert_eq!(run.num("/status/301"), 20, "{}", run.stdout);
    assert!(run.json.as_ref().unwrap().get("redirects").is_none());
    // One hop allowed of two.
    let run = load("--follow-redirects 1 -n 20 -c 2 -t 1", &format!("{url}a"));
    assert_eq!((run.num("/status/302"), run.num("/redirects/too_many")), (20, 20), "{}", run.stdout);
    assert_eq!((run.num("/redirects/followed"), run.num("/redirects/chains")), (20, 20));
    // Another host; no Location.
    let run = load("--follow-redirects 5 -n 10 -c 1 -t 1", &format!("{url}away"));
    assert_eq!((run.num("/status/302"), run.num("/redirects/elsewhere")), (10, 10), "{}", run.stdout);
    assert!(run.stdout.contains("; 10 to another host, not followed"), "{}", run.stdout);
    let run = load("--follow-redirects 5 -n 10 -c 1 -t 1", &format!("{url}bare"));
    assert_eq!((run.num("/status/302"), run.num("/redirects/no_location")), (10, 10), "{}", run.stdout);
    // A POST answered 303 is followed with a GET.
    let run = load("--follow-redirects 1 -X POST --body x=1 -n 10 -c 1 -t 1", &format!("{url}form"));
    assert_eq!(run.num("/status/200"), 10, "{}", run.stdout);
    nginx.stop();
    let log = hops(&nginx);
    assert_eq!(log.iter().filter(|l| *l == "POST /form 303").count(), 10, "{log:?}");
    assert_eq!(log.iter().filter(|l| *l == "GET /c 200").count(), 10, "{log:?}");
}

/// A chain's latency runs from its first request to its last answer: two hops of a recorded
/// site (`strain origin --replay`) each held 40 ms take at least 80 ms.
#[test]
fn a_chains_latency_is_the_whole_chain() {
    let entry = |path: &str, status: u16, location: &str| {
        format!(
            r#"{{"startedDateTime": "2026-11-30T10:00:00.000Z", "time": 1,
              "request": {{"method": "GET", "url": "http://site.test{path}", "httpVersion": "HTTP/1.1", "headers": [], "bodySize": 0}},
              "response": {{"status": {status}, "httpVersion": "HTTP/1.1",
                "headers": [{{"name": "Location", "value": "{location}"}}, {{"name": "Content-Length", "value": "0"}}],
                "content": {{"size": 0, "mimeType": "text/plain", "text": ""}}}}}}"#
        )
    };
    let har = format!(
        r#"{{"log": {{"version": "1.2", "creator": {{"name": "test", "version": "1"}}, "entries": [{}, {}]}}}}"#,
        entry("/a", 302, "/c"),
        entry("/c", 200, "")
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("site.har");
    std::fs::write(&file, har).unwrap();
    let file = file.display().to_string();
    let origin =
        crate::harness::Origin::start(&["-t", "1", "--replay", &file, "--replay-key", "url", "--delay", "40ms"]);
    let run = load("--follow-redirects 2 -n 10 -c 2 -t 1", &origin.url_of("/a"));
    let j = run.json.as_ref().unwrap();
    assert_eq!((run.num("/status/200"), run.num("/redirects/chains")), (10, 10), "{}", run.stdout);
    let min_ms = j["latency_us"]["min"].as_f64().unwrap() / 1000.0;
    assert!((80.0..200.0).contains(&min_ms), "min latency {min_ms} ms: {}", run.stdout);
}
