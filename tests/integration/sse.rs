//! Issue 42, point 7: `strain sse` against `strain origin --sse` and a real Server-Sent Events
//! server (Python's aiohttp, tests/servers/python-sse/sse_aiohttp.py): events counted exactly,
//! streams ended and started again with `Last-Event-ID` after `retry:`, `-n` counting streams,
//! `-R` starting them (and those it cannot, said), a capacity search of streams started, an
//! OpenAI-style POST ending in `[DONE]`, every output, and bad input refused in one line.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::harness::{args, signal, strain, strain_raw, Origin};
use crate::origin_grpc::stats;

/// The aiohttp server: `per_s` events a second, `count` a stream (0: endless); stopped on drop.
struct Aiohttp {
    child: Child,
    port: u16,
}

impl Aiohttp {
    fn start(per_s: u32, count: u32) -> Aiohttp {
        let python = std::env::var("STRAIN_TEST_PY_GRPC").ok().filter(|p| Path::new(p).exists()).unwrap_or_else(|| {
            panic!("STRAIN_TEST_PY_GRPC does not name the venv's Python: run scripts/test.sh (it installs aiohttp)")
        });
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/python-sse/sse_aiohttp.py");
        let port = crate::harness::free_port();
        let mut child = Command::new(python)
            .args([script, &port.to_string(), &per_s.to_string(), &count.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the aiohttp server");
        let mut first = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
        assert_eq!(first.trim(), "ready", "the server said {first:?}");
        Aiohttp { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Stops it; what it counted: (streams, events).
    fn stop(mut self) -> (u64, u64) {
        signal(self.child.id(), "TERM");
        let mut line = String::new();
        BufReader::new(self.child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let _ = self.child.wait();
        let n: Vec<u64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        assert_eq!(n.len(), 2, "the server said {line:?}");
        (n[0], n[1])
    }
}

impl Drop for Aiohttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `strain sse find-max` with the SLO `p99<300ms`, `connections`, one thread, steps from `start`
/// after a 500 ms warm-up, and `rest` (the step length, --max, result files) against `url`.
fn sse_find_max(connections: &str, start: &str, rest: &[&str], url: &str) -> crate::harness::Run {
    let mut a = vec!["sse", "find-max", "--slo", "p99<300ms", "-c", connections, "-t", "1", "--start", start];
    a.extend(["--warmup", "500ms"]);
    a.extend_from_slice(rest);
    a.push(url);
    strain_raw(&a)
}

#[test]
fn streams_end_and_resume_with_last_event_id_and_n_counts_streams() {
    // Five events a stream, then the stream ends; the client waits retry: 50 ms and asks again
    // with the last id, and the origin goes on from it.
    let origin = Origin::start(&args("--sse 200 --sse-events 5 --sse-retry 50"));
    let run = strain(&args(&format!("sse -c 4 -n 12 {}", origin.url_of("/events"))));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\n  60 events in "), "{}", run.stdout);
    assert!(run.stdout.contains("\nEvents/sec: "), "{}", run.stdout);
    run.assert_nums(&[
        ("/requests", 60),
        ("/sse/streams", 12),
        ("/sse/ended", 12),
        // Each slot's first stream starts fresh; its next two resume.
        ("/sse/resumed", 8),
        ("/sse/events", 60),
        ("/sse/first_event/count", 12),
        ("/errors/timeout", 0),
    ]);
    assert_eq!(run.json.as_ref().unwrap()["protocol"], "sse");
    let s = stats(origin.addr);
    // Resumed streams went on from the id they named: the origin's ids reached 5 x 3 per slot
    // (its events are the client's exactly).
    assert_eq!((s["sse_streams"].as_u64(), s["sse_events"].as_u64()), (Some(12), Some(60)), "{s}");
    crate::websocket::follows_the_schema(&run);
}

#[test]
fn events_arrive_at_the_origins_rate_and_their_gaps_are_the_latency() {
    let origin = Origin::start(&args("--sse 20"));
    let run = strain(&args(&format!("sse -c 5 -d 2s --latency {}", origin.url_of("/events"))));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events = run.num("/requests");
    // 5 streams x 20 a second x 2 s, give or take each stream's first and last.
    assert!((190..=210).contains(&events), "{events} events\n{}", run.stdout);
    // Every gap but each stream's first (its time to first event) is the origin's 50 ms.
    let p50 = run.num("/latency_us/percentiles/50");
    assert!((45_000..=55_000).contains(&p50), "p50 {p50} us");
    assert!(run.stdout.contains("SSE latency: each event's is the gap since the one before it"), "{}", run.stdout);
    assert_eq!(run.num("/sse/streams"), 5);
    assert_eq!(run.num("/sse/ended"), 0);
    // Nothing was refused and every stream opened: the lines that say otherwise are absent.
    for absent in ["SSE streams still opening", "SSE streams refused"] {
        assert!(!run.stdout.contains(absent), "{absent}\n{}", run.stdout);
    }
}

#[test]
fn r_starts_streams_at_its_rate() {
    // One event a stream: each stream ends at once, and -R 40 starts the next when due.
    let origin = Origin::start(&args("--sse 100 --sse-events 1"));
    let run = strain(&args(&format!("sse -c 20 -R 40 -d 2s {}", origin.url_of("/events"))));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let streams = run.num("/sse/streams");
    assert!((70..=90).contains(&streams), "{streams} streams in 2 s at 40/s");
    assert_eq!(run.num("/requests"), run.num("/sse/events"));
    assert_eq!(run.num("/rate/dropped"), 0, "{}", run.stdout);
    assert!(!run.stdout.contains("Arrivals dropped"), "{}", run.stdout);
    // Stages ramp the streams started: 0 to 20 a second over 1 s, then 20 to 40: 10 + 30.
    let run = strain(&args(&format!("sse -c 20 --stages 1s:20,1s:40 {}", origin.url_of("/events"))));
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_nums(&[("/sse/streams", 40), ("/sse/events", 40), ("/rate/dropped", 0)]);
    // Three events a stream, 50 ms apart: each holds its connection a little over 100 ms, so
    // two connections start at most 20 a second; of the 80 due, the rest arrive to find both
    // held, and are said, not queued.
    let origin = Origin::start(&args("--sse 20 --sse-events 3"));
    let run = strain(&args(&format!("sse -c 2 -R 40 -d 2s {}", origin.url_of("/events"))));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (streams, dropped) = (run.num("/sse/streams"), run.num("/rate/dropped"));
    assert!((20..=44).contains(&streams), "{streams} streams\n{}", run.stdout);
    assert!(
        (72..=80).contains(&(streams + dropped)),
        "{streams} started and {dropped} dropped of 80 due\n{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("Arrivals dropped: {dropped} streams came due with all 2 connections busy")),
        "{}",
        run.stdout
    );
}

#[test]
fn find_max_searches_the_streams_started_and_names_the_connection_limit() {
    let _alone = crate::harness::exclusive();
    // A stream is three events 50 ms apart (about 100 ms); four connections start about 40 a
    // second. The search doubles from 7: 7, 14 and 28 a second pass with every stream started;
    // at 56 streams arrive to find all four held, and the search names -c as the limit.
    let origin = Origin::start(&args("--sse 20 --sse-events 3"));
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = (dir.path().join("s.json"), dir.path().join("s.html"));
    let url = origin.url_of("/events");
    let files = ["--json", json.to_str().unwrap(), "--html", html.to_str().unwrap()];
    let run = sse_find_max("4", "7", &[&["--step-duration", "3s"][..], &files].concat(), &url);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("Max rate: at least 28 streams/s (strain reached its own limit above it)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Connection limit: streams arrived to find all 4 connections holding one"),
        "{}",
        run.stdout
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["config"]["rate_of"], "streams");
    assert_eq!(doc["answer"]["limit"]["kind"], "connections", "{}", doc["answer"]);
    let steps = doc["steps"].as_array().unwrap();
    let targets: Vec<f64> = steps.iter().map(|s| s["target_per_s"].as_f64().unwrap()).collect();
    assert_eq!(targets, [7.0, 14.0, 28.0, 56.0]);
    for step in &steps[..3] {
        assert_eq!(step["verdict"], "pass", "{step}");
        // Every stream due was started: 3 s at the target, give or take the one at the edge.
        let (target, started) =
            (step["target_per_s"].as_f64().unwrap(), step["result"]["sse"]["streams"].as_f64().unwrap());
        assert!((started - 3.0 * target).abs() <= 2.0, "{started} streams at {target}/s");
        assert_eq!(step["result"]["rate"]["dropped"], 0, "{step}");
    }
    assert!(steps[3]["result"]["rate"]["dropped"].as_u64().unwrap() >= 20, "{}", steps[3]["result"]["rate"]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Target rate (streams/s)") && page.contains("</b> streams/s"), "the page names streams");
    // With connections to spare, the same rates pass up to --max, and no limit is named.
    let run = sse_find_max("40", "7", &["--max", "14", "--step-duration", "2s"], &url);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("Max rate: at least 14 streams/s: the SLO held at --max"), "{}", run.stdout);
    assert!(!run.stdout.contains("Connection limit"), "{}", run.stdout);
}

#[test]
fn a_real_aiohttp_server_streams_and_an_openai_style_post_ends_in_done() {
    let server = Aiohttp::start(200, 20);
    let run = strain(&args(&format!("sse -c 3 -n 3 {}", server.url("/events"))));
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_nums(&[("/requests", 60), ("/sse/streams", 3), ("/sse/ended", 3), ("/sse/events", 60)]);
    let body = r#"{"model":"strain-test","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let post = strain(&["sse", "-c", "2", "-n", "4", "-X", "POST", "--body", body, &server.url("/chat")]);
    assert_eq!(post.code, 0, "{}", post.stderr);
    post.assert_nums(&[("/requests", 32), ("/sse/streams", 4), ("/sse/done", 4), ("/sse/events", 32)]);
    // The server counts what it wrote: every event was read.
    assert_eq!(server.stop(), (7, 92));
}

#[test]
fn a_stream_the_server_has_finished_stops_at_204_as_an_eventsource_does() {
    // Twenty events, then the stream ends; asked again with the last id, the server has nothing
    // more and answers 204 No Content: the stream is not asked again, and the run ends.
    let server = Aiohttp::start(0, 20);
    let run = strain(&args(&format!("sse -c 2 -d 5s {}", server.url("/events"))));
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_nums(&[("/requests", 40), ("/sse/streams", 2), ("/sse/resumed", 2), ("/sse/refused/204", 2)]);
    assert!(run.elapsed.as_secs_f64() < 4.0, "ended when every stream stopped, not at -d: {:?}", run.elapsed);
    assert!(run.stdout.contains("SSE streams refused: 204 2"), "{}", run.stdout);
}

#[test]
fn each_arrival_is_a_new_client_of_a_real_server_that_finishes_its_streams() {
    // Three events a stream, 50 ms apart, then the server ends it. Each stream -R starts is a
    // new EventSource: it asks from the start (no Last-Event-ID, so never the 204 of a stream
    // already read) and its slot is free once the stream ends, for the next arrival.
    let server = Aiohttp::start(20, 3);
    let run = strain(&args(&format!("sse -c 10 -t 1 -R 20 -d 2s {}", server.url("/events"))));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let streams = run.num("/sse/streams");
    assert!((38..=40).contains(&streams), "{streams} streams in 2 s at 20/s\n{}", run.stdout);
    assert_eq!(run.num("/sse/resumed"), 0, "{}", run.stdout);
    assert_eq!(run.num("/rate/dropped"), 0, "{}", run.stdout);
    assert!(run.json.as_ref().unwrap()["sse"]["refused"].as_object().is_none_or(|r| r.is_empty()), "{}", run.stdout);
    // A stream still under way at the end has read some of its three.
    let events = run.num("/sse/events");
    assert!(events <= 3 * streams && events + 6 >= 3 * streams, "{events} events of {streams} streams");
    // A search of streams started passes each step against the same server.
    let find = sse_find_max("20", "10", &["--max", "20", "--step-duration", "2s"], &server.url("/events"));
    assert_eq!(find.code, 0, "{}\n{}", find.stdout, find.stderr);
    assert!(find.stdout.contains("Max rate: at least 20 streams/s: the SLO held at --max"), "{}", find.stdout);
}

#[test]
fn what_is_not_an_event_stream_is_counted_and_said() {
    // strain's origin without --sse answers 200 text/plain; with --status 404, 404.
    let plain = Origin::start(&[]);
    let run = strain(&args(&format!("sse -c 2 -d 1s {}", plain.url())));
    assert!(run.num("/sse/not_event_stream") >= 2, "{}", run.stdout);
    assert_eq!(run.num("/requests"), 0);
    assert!(run.stdout.contains("not text/event-stream: "), "{}", run.stdout);
    let missing = Origin::start(&args("--status 404"));
    let run = strain(&args(&format!("sse -c 2 -d 1s {}", missing.url())));
    assert!(run.num("/sse/refused/404") >= 2, "{}", run.stdout);
    assert!(run.stdout.contains("Status codes: 404"), "{}", run.stdout);
}

#[test]
fn streams_still_opening_at_the_end_are_said() {
    // A listener whose queue of one is full and that never accepts: the other streams'
    // connects are still under way when the run ends, and the result says so.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into()).unwrap();
    socket.listen(0).unwrap();
    let addr = socket.local_addr().unwrap().as_socket().unwrap();
    let run = strain(&args(&format!("sse -c 4 -t 1 -d 1s -T 2s http://{addr}/")));
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_nums(&[("/requests", 0), ("/sse/streams", 0)]);
    let opening = run.num("/sse/opening");
    assert!((1..=4).contains(&opening), "{opening}\n{}", run.stdout);
    assert!(run.stdout.contains(&format!("SSE streams still opening at the end: {opening}")), "{}", run.stdout);
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_sent() {
    let origin = Origin::start(&args("--sse 10"));
    let url = origin.url_of("/events");
    let cases: [(&[&str], &str); 5] = [
        (&["sse"], "required arguments were not provided"),
        (&["sse", "ws://127.0.0.1:1/"], "a WebSocket server is loaded with strain ws"),
        (&["sse", "-X", "G T", &url], "invalid method 'G T': expected a word such as GET or POST"),
        (&["sse", "-n", "5", "--stages", "1s:10", &url], "'--requests <N>' cannot be used with '--stages <LIST>'"),
        (&["sse", "find-max", "--stages", "1s:10", "--slo", "p99<1s", &url], "unexpected argument '--stages'"),
    ];
    for (line, said) in cases {
        let run = strain_raw(line);
        assert_eq!(run.code, 2, "{line:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{line:?}: {}", run.stderr);
        assert!(run.stderr.contains(said), "{line:?}: {}", run.stderr);
    }
    assert_eq!(stats(origin.addr)["sse_streams"].as_u64(), Some(0), "nothing was sent");
    let run = strain_raw(&["origin", "--sse-events", "3"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--sse"), "{}", run.stderr);
}

#[test]
fn the_html_page_merge_and_compare_carry_an_sse_run() {
    let origin = Origin::start(&args("--sse 50"));
    let dir = tempfile::tempdir().unwrap();
    let part = |i: u32| {
        let json = dir.path().join(format!("p{i}.json"));
        let run = strain(&args(&format!("sse -c 4 -d 1s --segment {i}/2 {}", origin.url_of("/events"))));
        assert_eq!(run.code, 0, "{}", run.stderr);
        std::fs::write(&json, serde_json::to_vec(run.json.as_ref().unwrap()).unwrap()).unwrap();
        (json, run.num("/sse/events"))
    };
    let ((a, na), (b, nb)) = (part(0), part(1));
    let merged = dir.path().join("m.json");
    let run = strain_raw(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "--json", merged.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(m["sse"]["events"].as_u64(), Some(na + nb), "{}", m["sse"]);
    assert_eq!(m["protocol"], "sse");
    assert!(run.stdout.contains(" events in "), "{}", run.stdout);
    let html = dir.path().join("r.html");
    let run = strain_raw(&["report", a.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    for said in
        ["Server-Sent Events", "data-metric=\"sse_events\"", "events/s", "Events per second", "Share of events (%)"]
    {
        assert!(page.contains(said), "the page lacks {said:?}");
    }
    let run = strain_raw(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(run.code == 0 || run.code == 98 || run.code == 97, "{}", run.stderr);
}
