//! `--trace N` and `--trace-file F` against real servers: what nginx said to a request it
//! answers 404, the first of each new status, HTTP/2's and HTTP/3's frames by name, TLS
//! times, a gRPC call's status and trailers, a WebSocket's upgrade and first message, a
//! failure's kind, every exchange as a JSON line, and bad values refused.

use crate::harness::{load, strain, strain_at, strain_raw, Nginx, Origin};

/// The trace blocks of a run's stderr.
fn blocks(stderr: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in stderr.lines() {
        if line.starts_with("strain: trace #") {
            out.push(String::new());
        }
        if let Some(b) = out.last_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    out
}

fn site(h2: bool, tls: bool) -> Nginx {
    let body = "location = /missing { return 404 \"no such page\\n\"; } location = /ok { return 200 \"fine\\n\"; }";
    if h2 {
        Nginx::start_h2("", body, tls)
    } else {
        Nginx::start_http1("", body, tls)
    }
}

#[test]
fn a_404_shows_what_nginx_said() {
    let mut nginx = site(false, false);
    let run = load("--trace 1 -n 50 -c 2 -t 1", &format!("{}missing", nginx.url()));
    nginx.stop();
    assert!(run.stdout.contains("Status codes: 404 ×50"), "{}", run.stdout);
    let b = blocks(&run.stderr);
    assert_eq!(b.len(), 1, "one exchange asked for, no new kind after it: {}", run.stderr);
    let t = &b[0];
    assert!(t.starts_with("strain: trace #1 (thread 0, connection "), "{t}");
    for line in [
        "  new connection: connect ",
        "> GET /missing HTTP/1.1\n",
        &format!("> Host: 127.0.0.1:{}\n", nginx.port),
        "< HTTP/1.1 404\n",
        "< Server: nginx/",
        "< Content-Type: text/plain\n",
        "< Content-Length: 13\n",
        "<\n< no such page\\n\n",
        "  first byte ",
    ] {
        assert!(t.contains(line), "{line:?} in {t}");
    }
}

#[test]
fn the_first_of_each_new_status_is_shown_too() {
    let mut nginx = site(false, false);
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets");
    std::fs::write(&targets, format!("GET {0}ok\n\nGET {0}missing\n", nginx.url())).unwrap();
    let run = load(&format!("--trace 1 -n 40 -c 1 -t 1 --targets {}", targets.display()), &nginx.url());
    nginx.stop();
    let b = blocks(&run.stderr);
    assert_eq!(b.len(), 2, "{}", run.stderr);
    assert!(b[0].contains("< HTTP/1.1 200\n") && b[1].contains("< HTTP/1.1 404\n"), "{}", run.stderr);
    assert!(b[1].contains("> GET /missing HTTP/1.1\n"), "{}", b[1]);
}

#[test]
fn http2_and_http3_show_their_frames_by_name_and_tls_its_time() {
    let mut nginx = site(true, true);
    let run = load("--http2 -k --trace 1 -n 5 -c 1 -t 1", &format!("{}missing", nginx.url()));
    nginx.stop();
    let b = blocks(&run.stderr);
    assert_eq!(b.len(), 1, "{}", run.stderr);
    for line in [
        "(thread 0, connection 0, h2)\n",
        "  new connection: connect ",
        " ms, TLS ",
        "> HEADERS (END_STREAM)\n",
        ">   :method: GET\n",
        ">   :scheme: https\n",
        ">   :path: /missing\n",
        "< HEADERS\n",
        "<   :status: 404\n",
        "<   server: nginx",
        "< DATA 13 bytes\n",
        "< no such page\\n\n",
    ] {
        assert!(b[0].contains(line), "{line:?} in {}", b[0]);
    }
    let origin = Origin::start(&["-t", "1", "--tls", "--http3"]);
    let run = load("--http3 -k --trace 1 -n 3 -c 1 -t 1", &format!("https://localhost:{}/d/1/600", origin.addr.port()));
    origin.stop();
    let b = blocks(&run.stderr);
    for line in [
        "(thread 0, connection 0, h3)\n",
        "  new connection: QUIC handshake ",
        "<   :status: 200\n",
        "< DATA 600 bytes\n",
        "  [512 of 600 body bytes shown]\n",
    ] {
        assert!(b[0].contains(line), "{line:?} in {}", b[0]);
    }
    assert_eq!(b[0].matches(":status").count(), 1, "{}", b[0]);
}

#[test]
fn grpc_websocket_and_a_failure_show_what_is_theirs() {
    let origin = Origin::start(&["-t", "1", "--grpc", "--status", "UNAVAILABLE:1"]);
    let run = strain(&[
        "grpc",
        "--call",
        "strain.echo.v1.Echo/Unary",
        "-D",
        "{\"message\":\"hi\"}",
        "--trace",
        "1",
        "-n",
        "3",
        "-c",
        "1",
        "-t",
        "1",
        &origin.url(),
    ]);
    origin.stop();
    let b = blocks(&run.stderr);
    assert_eq!(b.len(), 1, "{}", run.stderr);
    for line in [
        ">   :path: /strain.echo.v1.Echo/Unary\n",
        ">   content-type: application/grpc\n",
        "<   grpc-status: 14\n",
        "<   grpc-message: failed on purpose",
    ] {
        assert!(b[0].contains(line), "{line:?} in {}", b[0]);
    }
    // A unary call's one message has a Content-Length on the wire; a stream's messages have none.
    assert!(b[0].contains(">   content-length: "), "{}", b[0]);
    let origin = Origin::start(&["-t", "1", "--grpc"]);
    let run = strain(&[
        "grpc",
        "--call",
        "strain.echo.v1.Echo/ClientStream",
        "-D",
        "{\"message\":\"hi\"}",
        "--stream-rate",
        "20",
        "--stream-duration",
        "200ms",
        "--trace",
        "1",
        "-n",
        "1",
        "-c",
        "1",
        "-t",
        "1",
        &origin.url(),
    ]);
    origin.stop();
    let b = blocks(&run.stderr);
    assert_eq!(b.len(), 1, "{}", run.stderr);
    assert!(b[0].contains(">   :path: /strain.echo.v1.Echo/ClientStream\n"), "{}", b[0]);
    assert!(!b[0].contains("content-length"), "{}", b[0]);

    let origin = Origin::start(&["-t", "1", "--ws"]);
    let run = strain(&["ws", "--trace", "2", "-n", "3", "-c", "1", "-t", "1", &format!("ws://{}/", origin.addr)]);
    origin.stop();
    let b = blocks(&run.stderr);
    assert_eq!(b.len(), 2, "{}", run.stderr);
    assert!(
        b[0].contains("> Upgrade: websocket\n") && b[0].contains("< HTTP/1.1 101 Switching Protocols\n"),
        "{}",
        b[0]
    );
    assert!(b[1].contains("< message, 6 bytes: strain\n"), "{}", b[1]);

    let origin = Origin::start(&["-t", "1", "--delay", "300ms"]);
    let run = strain_at("--trace 1 -n 2 -c 1 -t 1 -T 100ms", &origin.url());
    origin.stop();
    let b = blocks(&run.stderr);
    assert!(b[0].contains("  failed: timeout\n") && b[0].contains("last byte -"), "{}", run.stderr);
}

#[test]
fn the_trace_file_holds_every_exchange_as_a_json_line() {
    let mut nginx = site(false, false);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.jsonl");
    let run = load(&format!("--trace-file {} -n 30 -c 2 -t 1", file.display()), &format!("{}ok", nginx.url()));
    nginx.stop();
    assert!(blocks(&run.stderr).is_empty(), "--trace-file alone prints nothing: {}", run.stderr);
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 30);
    let mut seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=30).collect::<Vec<_>>());
    assert_eq!(lines.iter().filter(|l| l["connect_us"].is_u64()).count(), 2, "two connections opened");
    for l in &lines {
        assert_eq!(l["status"], 200);
        assert_eq!(l["body"], "fine\n");
        assert_eq!(l["protocol"], "http/1.1");
        assert!(l["request"].as_str().unwrap().starts_with("GET /ok HTTP/1.1\r\nHost: 127.0.0.1:"), "{l}");
        assert!(l["first_byte_us"].as_u64().unwrap() <= l["last_byte_us"].as_u64().unwrap(), "{l}");
        assert!(l["headers"].as_array().unwrap().iter().any(|h| h[0] == "Server"), "{l}");
    }
}

#[test]
fn bad_trace_values_are_refused_and_nothing_is_sent() {
    let origin = Origin::start(&["-t", "1"]);
    let run = strain_raw(&["--trace", "-1", "-d", "1s", &origin.url()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.lines().next().unwrap().contains("'-1' is not a whole number"), "{}", run.stderr);
    let run = strain_raw(&["--trace-file", "/nonexistent/dir/trace.jsonl", "-d", "1s", &origin.url()]);
    assert_ne!(run.code, 0);
    let said: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("strain: ")).collect();
    assert_eq!(
        said,
        ["strain: cannot write the trace file /nonexistent/dir/trace.jsonl: No such file or directory (os error 2)"],
        "{}",
        run.stderr
    );
    assert_eq!(origin.stop().requests, 0);
}

#[test]
fn a_replayed_request_shows_its_recorded_line() {
    let log = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/realtraffic/access_logs/beats-nginx-test.log");
    let origin = Origin::start(&["-t", "1"]);
    let run = strain(&[
        "replay",
        "--speed",
        "1000",
        "--max-gap",
        "100ms",
        "-c",
        "1",
        "-t",
        "1",
        "--trace",
        "2",
        log,
        &origin.url(),
    ]);
    origin.stop();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let b = blocks(&run.stderr);
    assert!(b[0].contains(&format!("  recorded: {log}:1: GET /ocelot\n")), "{}", b[0]);
    assert!(b[0].contains("> GET /ocelot HTTP/1.1\n"), "{}", b[0]);
    // Put back in time order: line 3 was recorded in the same second as line 1, line 2 months later.
    assert!(b[1].contains(&format!("  recorded: {log}:3: GET /ocelot\n")), "{}", b[1]);
}

#[test]
fn a_session_request_held_for_its_connection_shows_its_recorded_line() {
    // One client's three requests due together: the second and third wait for the first's answer
    // (50 ms), held for the session's connection.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sessions.log");
    let lines = ["GET /a", "GET /b", "GET /c"].map(|r| format!("1700000000.000 0.001 10.0.0.1 \"{r} HTTP/1.1\"\n"));
    std::fs::write(&log, lines.concat()).unwrap();
    let log = log.to_str().unwrap();
    let origin = Origin::start(&["-t", "1", "--service-time", "50ms", "--workers", "4"]);
    let run = strain(&[
        "replay",
        "--sessions",
        "client",
        "--log-format",
        "$msec $request_time $remote_addr \"$request\"",
        "-c",
        "2",
        "-t",
        "1",
        "--trace",
        "3",
        log,
        &origin.url(),
    ]);
    origin.stop();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let b = blocks(&run.stderr);
    assert_eq!(b.len(), 3, "{}", run.stderr);
    for (k, path) in ["/a", "/b", "/c"].iter().enumerate() {
        assert!(b[k].contains(&format!("  recorded: {log}:{}: GET {path}\n", k + 1)), "{}", b[k]);
        assert!(b[k].contains(&format!("> GET {path} HTTP/1.1\n")), "{}", b[k]);
    }
}
