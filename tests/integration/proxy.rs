//! `strain proxy` against real caching proxies: hit ratio, content checks, forms.

use crate::harness::{args, exclusive, free_port, strain, Nginx, Run};
use crate::proxies::{Ats, AtsMode};

/// Mean of the per-interval hit ratios of the intervals starting `skip_s` seconds in or later.
fn steady_hit_ratio(run: &Run, skip_s: f64) -> f64 {
    let rows = run.json.as_ref().unwrap()["proxy"]["intervals"].as_array().unwrap().clone();
    let later = rows.iter().filter(|r| r["start_s"].as_f64().is_some_and(|s| s >= skip_s - 1e-3));
    let vals: Vec<f64> = later.filter_map(|r| r["hit_ratio"].as_f64()).collect();
    assert!(!vals.is_empty(), "{rows:?}");
    vals.iter().sum::<f64>() / vals.len() as f64
}

/// Runs `strain proxy` with the flags in `line`, expecting exit 0.
fn proxy(line: &str) -> Run {
    let run = strain(&[&["proxy"], &args(line)[..]].concat());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

/// Runs `strain proxy` with the flags in `line` and its origin on `origin_port`, through the
/// proxy on `proxy_port`, expecting exit 0. `urls_name`, when given, is the port URLs name (a
/// reverse proxy's clients name the proxy); otherwise URLs name the origin.
pub fn through(origin_port: u16, proxy_port: u16, urls_name: Option<u16>, line: &str) -> Run {
    let named = urls_name.map(|port| format!("--origin 127.0.0.1:{port} ")).unwrap_or_default();
    proxy(&format!("--listen 127.0.0.1:{origin_port} --proxy 127.0.0.1:{proxy_port} {named}{line}"))
}

/// Runs `strain proxy` with the flags in `line` through a private ATS, alone on the machine:
/// a reverse proxy (`reverse`, addressed by its own name: URLs name it, and it maps them to the
/// origin) or a forward one. More than `min` requests were answered, each a 200 with its own
/// document.
fn through_ats(reverse: bool, line: &str, min: u64) -> Run {
    let _alone = exclusive();
    let origin_port = free_port();
    let ats = Ats::start(if reverse { AtsMode::Reverse { origin_port } } else { AtsMode::Forward });
    let run = through(origin_port, ats.port, reverse.then_some(ats.port), line);
    let requests = run.num("/requests");
    assert!(requests > min, "{}", run.stdout);
    assert_eq!(run.num("/status/200"), requests, "{}", run.stdout);
    assert_eq!(run.num("/errors/content"), 0, "{}", run.stdout);
    run
}

/// A proxy test through a reverse proxy on `proxy_port` that ends TLS, speaks the protocol of
/// `flags` (`--http2 -m 4`, `--http3 -m 4`) to strain and passes every request on to the origin
/// on `origin_port` over HTTP/1.1, caching nothing: the run speaks `protocol`, every body is its
/// document, and every request reached the origin.
pub fn assert_passed_through_tls(origin_port: u16, proxy_port: u16, flags: &str, protocol: &str) {
    let line = format!("--proxy-tls -k {flags} -c 2 -t 1 -d 1s --check-content --hit-rate 0.5 --hotset 20");
    let run = through(origin_port, proxy_port, None, &line);
    let j = run.json.as_ref().unwrap();
    assert_eq!(j["protocol"], protocol);
    assert_eq!(j["errors"]["content"], 0, "every body was its document: {}", run.stdout);
    let requests = j["requests"].as_u64().unwrap();
    assert!(requests > 100, "{}", run.stdout);
    let origin = j["proxy"]["origin_requests"].as_u64().unwrap();
    assert!(origin + 8 >= requests && origin <= requests + 8, "origin {origin}, client {requests}");
}

#[test]
fn ats_reverse_proxy_holds_the_asked_hit_ratio_with_correct_content() {
    let line = "--hit-rate 0.9 --hotset 1000 --doc-size 1000 --check-content -t 1 -c 20 -d 8s";
    let run = through_ats(true, line, 5_000);
    assert_eq!(run.num("/errors/read") + run.num("/errors/parse") + run.num("/errors/timeout"), 0);
    // Once the hot set is warm (the first seconds), 90% of requests never reach the origin.
    let hit = steady_hit_ratio(&run, 3.0);
    assert!((hit - 0.90).abs() <= 0.03, "steady hit ratio {hit}");
    // Over the whole run, warm-up included, the ratio is a little lower.
    let overall = run.json.as_ref().unwrap()["proxy"]["hit_ratio"].as_f64().unwrap();
    assert!((0.80..=0.93).contains(&overall), "overall hit ratio {overall}");
    assert!(run.stdout.contains("  Proxy: hit ratio 0."), "{}", run.stdout);
}

#[test]
fn ats_with_no_hot_set_passes_every_request_to_the_origin() {
    let run = through_ats(true, "--hit-rate 0 --doc-size 200 --check-content -t 1 -c 10 -d 3s", 500);
    assert_eq!(run.num("/proxy/origin_requests"), run.num("/requests"));
}

#[test]
fn ats_forward_proxy_with_absolute_urls() {
    let run = through_ats(false, "--form forward --hit-rate 0.5 --hotset 50 --check-content -t 1 -c 10 -d 3s", 500);
    let requests = run.num("/requests");
    // Hits happened: the origin saw fewer requests than the client sent.
    assert!(run.num("/proxy/origin_requests") < requests * 7 / 10, "{:?}", run.json.as_ref().map(|j| &j["proxy"]));
}

fn nginx_cache(origin_port: u16, key: &str) -> Nginx {
    // The cache zone lives inside nginx's private directory: `proxy_cache_path` is relative to -p.
    Nginx::start_with_http(
        "proxy_cache_path cache keys_zone=testcache:1m max_size=64m;",
        &format!(
            "location / {{ proxy_pass http://127.0.0.1:{origin_port}; proxy_cache testcache; proxy_cache_valid 200 10m; \
             proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_cache_key {key}; \
             add_header X-Cache $upstream_cache_status always; }}"
        ),
    )
}

#[test]
fn extensions_and_extra_headers_reach_the_origin_through_nginx() {
    let origin_port = free_port();
    let mut nginx = Nginx::start_with_http(
        "proxy_cache_path cache keys_zone=testcache:1m max_size=64m;\n\
         log_format seen '$request_uri $http_x_request_id $http_traceparent $http_x_extra_4';",
        &format!(
            "location / {{ access_log seen.log seen; proxy_pass http://127.0.0.1:{origin_port}; \
             proxy_cache testcache; proxy_cache_valid 200 10m; proxy_http_version 1.1; \
             proxy_set_header Connection \"\"; }}"
        ),
    );
    let line = "--request-extension jpeg --extra-headers 30 --hit-rate 0.5 --hotset 50 --check-content -t 1 -c 4 -d 1s";
    let run = through(origin_port, nginx.port, None, line);
    nginx.stop();
    let requests = run.num("/requests");
    assert!(requests > 100, "{}", run.stdout);
    assert_eq!((run.num("/status/200"), run.num("/errors/content")), (requests, 0), "{}", run.stdout);
    let log = nginx.file("seen.log");
    let lines: Vec<Vec<&str>> = log.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(lines.len() as u64, requests, "nginx logged every request");
    let mut ids = std::collections::BTreeSet::new();
    for fields in &lines {
        assert!(fields[0].starts_with("/d/") && fields[0].ends_with(".jpeg"), "{fields:?}");
        assert_eq!(fields[1].len(), 36, "{fields:?}");
        assert!(fields[2].starts_with("00-") && fields[2].len() == 55, "{fields:?}");
        assert!((16..=64).contains(&fields[3].len()), "X-Extra-4 {fields:?}");
        ids.insert(fields[1]);
    }
    assert_eq!(ids.len(), lines.len(), "a new X-Request-Id on every request");
}

#[test]
fn a_head_too_large_for_nginx_is_refused_and_counted() {
    let origin_port = free_port();
    let nginx = nginx_cache(origin_port, "$scheme$proxy_host$request_uri");
    // 1,000 fields of about 40 bytes each: past nginx's 32 KiB for a request head.
    let run = through(origin_port, nginx.port, None, "--extra-headers 1000 -t 1 -c 2 -n 20");
    assert_eq!(run.num("/requests"), 20, "{}", run.stdout);
    assert_eq!(run.num("/status/400"), 20, "{}", run.stdout);
    assert_eq!(run.num("/proxy/origin_requests"), 0, "{}", run.stdout);
}

#[test]
fn ats_keeps_every_alternate_and_serves_each_its_own() {
    // One connection: two misses of one (URL, variant) at once would both reach the origin.
    let line = "--alternates 3 --hit-rate 1 --hotset 20 --doc-size 1000 --check-content -t 1 -c 1 -d 2s";
    let run = through_ats(true, line, 1_000);
    // Each of the 20 URLs in each of its 3 variants reached the origin once; every other
    // request was a hit on the right alternate.
    assert_eq!(run.num("/proxy/origin_requests"), 60, "{}", run.stdout);
}

#[test]
fn a_cache_that_ignores_vary_is_caught_serving_the_wrong_alternate() {
    let origin_port = free_port();
    let nginx = Nginx::start_with_http(
        "proxy_cache_path cache keys_zone=testcache:1m max_size=64m;",
        &format!(
            "location / {{ proxy_pass http://127.0.0.1:{origin_port}; proxy_cache testcache; \
             proxy_cache_valid 200 10m; proxy_ignore_headers Vary; proxy_http_version 1.1; \
             proxy_set_header Connection \"\"; }}"
        ),
    );
    let line =
        "--alternates 4 --vary accept-language --hit-rate 1 --hotset 10 --doc-size 200 --check-content -t 1 -c 2 -d 1s";
    let run = through(origin_port, nginx.port, None, line);
    let (requests, content) = (run.num("/requests"), run.num("/errors/content"));
    // One variant cached per URL: about three requests in four get another one's body.
    assert!(content * 10 > requests * 6 && content * 10 < requests * 9, "{content} of {requests}");
    assert!(run.stdout.contains("    asked for /d/"), "{}", run.stdout);
    assert!(run.stdout.contains("body belongs to /d/"), "{}", run.stdout);
}

#[test]
fn nginx_cache_serves_correct_content() {
    let origin_port = free_port();
    let nginx = nginx_cache(origin_port, "$scheme$proxy_host$request_uri");
    let run = through(origin_port, nginx.port, None, "--hit-rate 0.8 --hotset 100 --check-content -t 1 -c 8 -d 2s");
    assert!(run.num("/requests") > 200);
    assert_eq!(run.num("/errors/content"), 0, "{}", run.stdout);
    assert!(run.num("/proxy/origin_requests") < run.num("/requests"));
}

#[test]
fn a_cache_keyed_on_the_host_alone_is_caught_by_content_checks() {
    let origin_port = free_port();
    let nginx = nginx_cache(origin_port, "$host");
    let line = "--hit-rate 0.5 --hotset 100 --doc-size 300 --check-content -t 1 -c 4 -d 1s";
    let run = through(origin_port, nginx.port, None, line);
    let content = run.num("/errors/content");
    // Every path gets the first object cached: nearly every response is the wrong document.
    assert!(content > run.num("/requests") / 2, "{content} of {}", run.num("/requests"));
    assert!(run.stdout.contains(&format!("  Content errors: {content}\n    asked for /d/")), "{}", run.stdout);
    assert!(run.stdout.contains("body belongs to /d/"), "{}", run.stdout);
}

#[test]
fn if_modified_since_gets_304s_counted_as_successes() {
    let run = proxy("--ims-rate 1 --ims-not-modified 1 --hit-rate 1 --hotset 10 -t 1 -c 2 -d 1s");
    let requests = run.num("/requests");
    assert!(requests > 100);
    assert_eq!(run.num("/status/304"), requests);
    assert_eq!(run.num("/errors/status") + run.num("/errors/read") + run.num("/errors/content"), 0);
    assert!(!run.stdout.contains("Non-2xx"), "{}", run.stdout);
}

#[test]
fn aborts_on_both_sides_come_in_the_asked_share_without_stalling() {
    // The client walks away from 20% of responses mid-body.
    let run =
        proxy("--client-abort-rate 0.2 --doc-size 100000 --hit-rate 1 --hotset 10 --check-content -t 1 -c 8 -d 2s");
    let (done, aborted) = (run.num("/requests"), run.num("/proxy/aborted"));
    let share = aborted as f64 / (done + aborted) as f64;
    assert!((share - 0.2).abs() < 0.05, "{aborted} aborted of {}", done + aborted);
    assert_eq!(run.num("/errors/content") + run.num("/errors/read"), 0);
    assert!(run.elapsed < std::time::Duration::from_secs(5), "{:?}", run.elapsed);
    // The origin cuts 10% of bodies short: the client counts them as read errors.
    let run = proxy("--abort-rate 0.1 --doc-size 20000 --hit-rate 1 --hotset 10 --check-content -t 1 -c 4 -d 2s");
    let (done, cut) = (run.num("/requests"), run.num("/errors/read"));
    // The progress lines name the kind of error.
    assert!(run.stderr.lines().any(|l| l.contains("errors ") && l.contains(" read ")), "{}", run.stderr);
    let share = cut as f64 / (done + cut) as f64;
    assert!((share - 0.1).abs() < 0.04, "{cut} cut of {}", done + cut);
    assert_eq!(run.num("/errors/content"), 0);
    assert!(run.elapsed < std::time::Duration::from_secs(5), "{:?}", run.elapsed);
}

#[test]
fn client_and_origin_in_separate_processes() {
    use crate::harness::Origin;
    let origin = Origin::start(&["-t", "1"]);
    let run = proxy(&format!(
        "--client-only --origin {} --hit-rate 0.5 --hotset 20 --check-content -t 1 -c 2 -d 1s",
        origin.addr
    ));
    let served = origin.stop();
    let requests = run.num("/requests");
    // With no proxy between them the origin answers everything, and the client read its
    // counters over HTTP: hit ratio 0.
    assert_eq!(served.requests, requests);
    assert_eq!(run.num("/proxy/origin_requests"), requests);
    assert_eq!(run.json.as_ref().unwrap()["proxy"]["hit_ratio"].as_f64(), Some(0.0));
    assert!(run.stdout.contains("  Proxy: hit ratio 0.000: 0 of "), "{}", run.stdout);
    // An origin whose counters cannot be read (nginx has no /_strain/stats): no hit ratio is
    // made up.
    let nginx = crate::harness::Nginx::start("location / { return 200 'ok'; }", false);
    let run = proxy(&format!("--client-only --origin 127.0.0.1:{} --hotset 20 -t 1 -c 2 -d 500ms", nginx.port));
    assert!(run.stdout.contains("  Proxy: the origin's counters could not be read; no hit ratio\n"), "{}", run.stdout);
    assert_eq!(run.json.as_ref().unwrap()["proxy"]["hit_ratio"], serde_json::Value::Null);
}

#[test]
fn proxy_mode_rejects_bad_values_in_one_line() {
    for (args, want) in [
        (vec!["proxy", "--hit-rate", "1.5"], "'1.5' is not a probability between 0 and 1"),
        (vec!["proxy", "--client-only"], "--client-only needs --origin HOST:PORT"),
        (vec!["proxy", "--zipf", "0"], "--zipf takes an exponent above 0"),
        (vec!["proxy", "--urls", "/nonexistent/urls.txt"], "cannot read /nonexistent/urls.txt"),
        (vec!["proxy", "--extra-headers", "1001"], "1001 extra headers: at most 1000"),
        (vec!["proxy", "--alternates", "0"], "0 alternates: give 1 to 100"),
        (vec!["proxy", "--vary", "cookie"], "invalid value 'cookie' for '--vary <HEADER>'"),
        (vec!["proxy", "--request-extension", "gif"], "invalid value 'gif' for '--request-extension <EXT>'"),
    ] {
        let run = crate::harness::strain_raw(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn dumped_urls_replay_with_check_content() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    let dump =
        crate::harness::strain_raw(&args(&format!("proxy --dump-urls {} --dump-count 50 --hotset 5", list.display())));
    assert_eq!(dump.code, 0, "{}", dump.stderr);
    let text = std::fs::read_to_string(&list).unwrap();
    assert_eq!(text.lines().count(), 50);
    assert!(text.lines().all(|l| l.starts_with("http://") && l.contains("/d/")), "{text}");
    let run = proxy(&format!("--urls {} --check-content -t 1 -c 2 -d 500ms", list.display()));
    assert!(run.num("/requests") > 50);
    assert_eq!(run.num("/errors/content"), 0);
}

#[test]
fn new_connections_arrive_at_the_asked_rate() {
    let _alone = exclusive();
    // 200 connections a second for 2 s, one request each (the default with --new-conn-rate).
    let run = proxy("--new-conn-rate 200 --hit-rate 1 --hotset 10 -t 2 -c 50 -d 2s");
    run.assert_nums(&[
        ("/proxy/arrivals_dropped", 0),
        ("/connections_opened", 400),
        ("/requests", 400),
        ("/proxy/origin_connections", 400),
    ]);
}

#[test]
fn proxy_mode_holds_a_rate_and_a_keepalive_limit() {
    let _alone = exclusive();
    let run = proxy("-R 500 --keepalive 10 --hit-rate 1 --hotset 10 -t 1 -c 5 -d 2s");
    run.assert_nums(&[("/requests", 1000), ("/proxy/origin_requests", 1000)]);
    // Ten requests per client connection: about a hundred connections in all.
    let opened = run.num("/connections_opened");
    assert!((100..=106).contains(&opened), "{opened}");
}

/// Issue 9, defect 3: a proxy that answers every request with 500 hits nothing; the errors show.
#[test]
fn proxy_answering_500_has_no_hit_ratio_and_counts_status_errors() {
    let broken = Nginx::start("location / { return 500; }", false);
    let origin_port = free_port();
    let run = through(origin_port, broken.port, Some(broken.port), "--hit-rate 0.9 -t 1 -c 4 -d 2s --interval 1s");
    let requests = run.num("/requests");
    assert!(requests > 100, "{}", run.stdout);
    let json = run.json.as_ref().unwrap();
    assert_eq!(json["proxy"]["hit_ratio"], serde_json::Value::Null, "{json}");
    assert_eq!(run.num("/proxy/origin_requests"), 0);
    assert!(
        run.stdout.contains(&format!(
            "  Proxy: no successful responses ({requests} of {requests} had an error status), so no hit ratio"
        )),
        "{}",
        run.stdout
    );
    let rows = json["proxy"]["intervals"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["hit_ratio"].is_null()), "{rows:?}");
    let series = json["intervals"].as_array().unwrap();
    let status_errors: u64 = series.iter().map(|r| r["status_errors"].as_u64().unwrap()).sum();
    assert_eq!(status_errors, requests, "{series:?}");
    // The live line counts them as errors and never claims a hit.
    let live: Vec<&str> = run.stderr.lines().filter(|l| l.contains(" ops ")).collect();
    assert!(!live.is_empty(), "{}", run.stderr);
    for l in live {
        assert!(l.contains("hit     ?") && l.contains(" status ") && !l.contains("errors 0"), "{l}");
    }
}
