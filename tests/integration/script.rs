//! wrk Lua scripts, one behaviour each, asserted on what the server saw and what `done()` printed.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::harness::{script, strain, strain_raw, Origin, RecordingServer};

/// The number after `key=` in a line that `done()` printed.
fn printed(out: &str, key: &str) -> u64 {
    let at = out.find(&format!("{key}=")).unwrap_or_else(|| panic!("no {key}= in {out}"));
    out[at + key.len() + 1..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn static_post_with_json_body() {
    let server = RecordingServer::start();
    let (_d, path) = script(
        r#"
wrk.method = "POST"
wrk.body = '{"name":"strain"}'
wrk.headers["Content-Type"] = "application/json"
function done(summary) io.write("requests=" .. summary.requests .. "\n") end
"#,
    );
    let run = strain(&["-t", "1", "-c", "2", "-d", "300ms", "-s", &path, &server.url()]);
    let seen = server.seen();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(printed(&run.stdout, "requests") as usize, seen.len());
    assert!(seen.len() > 10);
    for r in &seen {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/"));
        assert_eq!(r.body, br#"{"name":"strain"}"#);
        assert_eq!(r.header("Content-Type"), Some("application/json"));
        assert_eq!(r.header("Content-Length"), Some("17"));
        assert_eq!(r.header("Host"), Some(server.addr.to_string().as_str()));
    }
}

#[test]
fn counter_in_the_path() {
    let server = RecordingServer::start();
    let (_d, path) = script(
        r#"
local n = 0
function request()
  n = n + 1
  return wrk.format(nil, "/item/" .. n)
end
"#,
    );
    let run = strain(&["-t", "1", "-c", "3", "-d", "300ms", "-s", &path, &server.url()]);
    let seen = server.seen();
    assert_eq!(run.num("/requests") as usize, seen.len());
    let paths: BTreeSet<String> = seen.iter().map(|r| r.path.clone()).collect();
    let want: BTreeSet<String> = (1..=seen.len()).map(|i| format!("/item/{i}")).collect();
    // Each counter value exactly once, from 1 (compared by difference: the sets are large).
    let missing: Vec<&String> = want.difference(&paths).take(5).collect();
    let extra: Vec<&String> = paths.difference(&want).take(5).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing {missing:?}, unexpected {extra:?}");
}

#[test]
fn token_from_a_response_is_sent_on_later_requests() {
    let server = RecordingServer::start();
    let (_d, path) = script(
        r#"
local token = nil
function request()
  if token == nil then return wrk.format("GET", "/login") end
  return wrk.format("GET", "/api", { ["Authorization"] = "Bearer " .. token })
end
function response(status, headers, body)
  if headers["X-Token"] then token = headers["X-Token"] end
end
"#,
    );
    let run = strain(&["-t", "1", "-c", "1", "-d", "300ms", "-s", &path, &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let seen = server.seen();
    assert_eq!(seen[0].path, "/login");
    assert!(seen.len() > 10);
    for r in &seen[1..] {
        assert_eq!(r.path, "/api");
        // The server answers /login with "X-Token: tok6".
        assert_eq!(r.header("Authorization"), Some("Bearer tok6"));
    }
}

#[test]
fn pipelining_three_requests_per_write() {
    let server = RecordingServer::start();
    let (_d, path) = script(
        r#"
init = function(args)
  local r = {}
  for i = 1, 3 do r[i] = wrk.format(nil, "/p" .. i) end
  req = table.concat(r)
end
function request() return req end
"#,
    );
    let run = strain(&["-t", "1", "-c", "2", "-d", "300ms", "-s", &path, &server.url()]);
    let seen = server.seen();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = run.num("/requests");
    assert_eq!(requests as usize, seen.len());
    assert_eq!(requests % 3, 0);
    // Each write carried /p1 /p2 /p3 in order on one connection.
    for conn in 0..2 {
        let paths: Vec<&str> = seen.iter().filter(|r| r.conn == conn).map(|r| r.path.as_str()).collect();
        for triple in paths.chunks(3) {
            assert_eq!(triple, ["/p1", "/p2", "/p3"]);
        }
    }
    // One latency sample per write, not per response.
    let json = run.json.as_ref().unwrap();
    assert_eq!(json["status"]["200"].as_u64(), Some(requests));
}

#[test]
fn random_delay_bounds_the_rate() {
    let origin = Origin::start(&["-t", "1"]);
    let (_d, path) = script("function delay() return math.random(20, 30) end\n");
    let run = strain(&["-t", "1", "-c", "1", "-d", "1s", "-s", &path, &origin.url()]);
    let served = origin.stop();
    let requests = run.num("/requests");
    assert_eq!(served.requests, requests);
    // One connection waiting 20-30 ms before each request: 33 to 50 requests in a second.
    assert!((30..=51).contains(&requests), "{requests}");
}

#[test]
fn setup_numbers_threads_and_done_reads_their_counters() {
    let origin = Origin::start(&["-t", "1"]);
    let (_d, path) = script(
        r#"
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end
function init(args) responses = 0 end
function response(status, headers, body) responses = responses + 1 end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do
    io.write(string.format("thread%d=%d\n", t:get("id"), t:get("responses")))
    total = total + t:get("responses")
  end
  io.write(string.format("total=%d summary=%d\n", total, summary.requests))
end
"#,
    );
    let run = strain(&["-t", "3", "-c", "3", "-d", "500ms", "-s", &path, &origin.url()]);
    let served = origin.stop();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let per: Vec<u64> = (1..=3).map(|i| printed(&run.stdout, &format!("thread{i}"))).collect();
    assert!(per.iter().all(|&n| n > 0), "{per:?}");
    assert_eq!(per.iter().sum::<u64>(), printed(&run.stdout, "total"));
    assert_eq!(printed(&run.stdout, "total"), printed(&run.stdout, "summary"));
    assert_eq!(printed(&run.stdout, "summary"), served.requests);
}

#[test]
fn done_prints_the_same_percentiles_as_the_report() {
    let origin = Origin::start(&["-t", "1"]);
    let (_d, path) = script(
        r#"
function done(summary, latency, requests)
  for _, p in ipairs({ 50, 90, 99 }) do
    io.write(string.format("p%d=%d\n", p, latency:percentile(p)))
  end
  io.write(string.format("max=%d min=%d\n", latency.max, latency.min))
  local v, n = latency(1)
  io.write(string.format("first=%d count=%d bracket=%d\n", v, n, latency[1]))
end
"#,
    );
    let run = strain(&["-t", "1", "-c", "2", "-d", "300ms", "-s", &path, &origin.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for p in ["50", "90", "99"] {
        assert_eq!(printed(&run.stdout, &format!("p{p}")), run.num(&format!("/latency_us/percentiles/{p}")), "p{p}");
    }
    assert_eq!(printed(&run.stdout, "max"), run.num("/latency_us/max"));
    assert_eq!(printed(&run.stdout, "min"), run.num("/latency_us/min"));
    assert_eq!(printed(&run.stdout, "first"), printed(&run.stdout, "bracket"));
    assert!(printed(&run.stdout, "count") >= 1);
}

#[test]
fn thread_stop_after_n_responses_ends_the_run_early() {
    let origin = Origin::start(&["-t", "1"]);
    let (_d, path) = script(
        r#"
function init(args) n = 0 end
function response() n = n + 1; if n == 50 then wrk.thread:stop() end end
"#,
    );
    let run = strain(&["-t", "2", "-c", "2", "-d", "20s", "-s", &path, &origin.url()]);
    let served = origin.stop();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(5), "took {:?}", run.elapsed);
    // Each thread stopped at its 50th response (one connection each, nothing else in flight).
    assert_eq!(run.num("/requests"), 100);
    assert_eq!(served.requests, 100);
}

#[test]
fn lookup_and_connect_choose_an_address() {
    let origin = Origin::start(&["-t", "1"]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (_d, path) = script(&format!(
        r#"
function setup(thread)
  for _, port in ipairs({{ {closed}, {good} }}) do
    for _, addr in ipairs(wrk.lookup("127.0.0.1", port)) do
      if wrk.connect(addr) then
        thread.addr = addr
        return
      end
    end
  end
end
function done() io.write("chose=ok\n") end
"#,
        good = origin.addr.port()
    ));
    // The URL names a closed port; setup moves every thread to the one that accepts.
    let url = format!("http://127.0.0.1:{closed}/");
    let run = strain(&["-t", "2", "-c", "2", "-d", "300ms", "-s", &path, &url]);
    let served = origin.stop();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.num("/errors/connect"), 0);
    assert!(served.requests > 0);
    assert_eq!(served.requests, run.num("/requests"));
}

#[test]
fn a_script_that_does_not_load_stops_before_any_load() {
    let server = RecordingServer::start();
    let (_d, path) = script("function request(\n  return 1\nend\n");
    let run = strain_raw(&["-d", "1s", "-s", &path, &server.url()]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with(&format!("strain: {path}:2: ")), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(server.seen().is_empty());
    let missing = strain_raw(&["-s", "/nonexistent.lua", &server.url()]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("cannot read script /nonexistent.lua"), "{}", missing.stderr);
}

#[test]
fn a_runtime_error_is_reported_once_and_the_run_ends_with_its_summary() {
    let origin = Origin::start(&["-t", "1"]);
    let (_d, path) = script("function response(status)\n  local t = nil\n  return t.field\nend\n");
    let run = strain(&["-t", "2", "-c", "4", "-d", "10s", "-s", &path, &origin.url()]);
    origin.stop();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(3), "took {:?}", run.elapsed);
    assert_eq!(run.stderr.matches("script error in response()").count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(&format!("{path}:3: attempt to index")), "{}", run.stderr);
    assert!(run.stderr.contains("stack traceback:"), "{}", run.stderr);
    assert!(run.stdout.contains("Requests/sec:"), "{}", run.stdout);
    assert!(run.json.is_some());
}

#[test]
fn a_script_under_rate_mode() {
    let server = RecordingServer::start();
    let (_d, path) = script("local n = 0\nfunction request() n = n + 1; return wrk.format(nil, '/r/' .. n) end\n");
    let run = strain(&["-t", "2", "-c", "4", "-d", "2s", "-R", "200", "-s", &path, &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let seen = server.seen();
    assert_eq!(seen.len(), 400);
    assert_eq!(run.num("/requests"), 400);
    assert!(seen.iter().all(|r| r.path.starts_with("/r/")));
}

#[test]
fn a_script_changes_nothing_in_the_counts() {
    let origin = Origin::start(&["--status", "503", "-t", "1"]);
    let (_d, path) = script("-- a script that does nothing\n");
    let plain = strain(&["-t", "1", "-c", "2", "-d", "300ms", &origin.url()]);
    let scripted = strain(&["-t", "1", "-c", "2", "-d", "300ms", "-s", &path, &origin.url()]);
    for run in [&plain, &scripted] {
        let requests = run.num("/requests");
        assert_eq!(run.num("/status/503"), requests);
        assert_eq!(run.num("/errors/status"), requests);
        assert!(run.stdout.contains(&format!("Non-2xx or 3xx responses: {requests}")));
    }
    let keys =
        |r: &crate::harness::Run| r.json.as_ref().unwrap().as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&plain), keys(&scripted));
}
