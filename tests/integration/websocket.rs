//! Issue 34: `strain ws` against WebSocket servers that are not strain's (Python's
//! `websockets`, tests/servers/python-ws/echo.py; gorilla/websocket's echo example, built by
//! scripts/ws-servers.sh) and against `strain origin --ws`: message counts equal the server's,
//! closes reported by code, wss, permessage-deflate, a stall in the corrected latency, many held
//! connections, and the bad inputs refused in one line before anything is sent.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::harness::{args, self_signed, signal, strain, strain_raw, wait_listening, Origin, Run};
use crate::origin_grpc::stats;

/// A WebSocket server of the tests, stopped on drop.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
}

impl Server {
    /// Python's `websockets` echo server with `extra` flags (see echo.py).
    pub(crate) fn python(extra: &[&str]) -> Server {
        let python = std::env::var("STRAIN_TEST_PY_GRPC").ok().filter(|p| Path::new(p).exists()).unwrap_or_else(|| {
            panic!("STRAIN_TEST_PY_GRPC does not name the venv's Python: run scripts/test.sh (it installs websockets)")
        });
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/python-ws/echo.py");
        Server::saying_its_port(Command::new(python).arg(script).args(extra))
    }

    /// Node's `ws` echo server (tests/servers/node/ws-echo.js) with its default settings.
    pub(crate) fn node() -> Server {
        let modules =
            std::env::var("NODE_PATH").ok().filter(|p| Path::new(p).join("ws").exists()).unwrap_or_else(|| {
                panic!(
                    "NODE_PATH does not hold Node's ws package: run scripts/test.sh (it installs it into target/node)"
                )
            });
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/node/ws-echo.js");
        Server::saying_its_port(Command::new("node").arg(script).env("NODE_PATH", modules))
    }

    /// Spawns `command`, a server that prints `listening PORT` first and counts as JSON on SIGINT.
    fn saying_its_port(command: &mut Command) -> Server {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let mut first = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
        let port = first.trim().strip_prefix("listening ").and_then(|p| p.parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            panic!("the server said {first:?}");
        };
        Server { child, port }
    }

    /// gorilla/websocket's echo example, serving `/echo`.
    pub(crate) fn gorilla_echo() -> Server {
        let bin = std::env::var("STRAIN_TEST_WS_ECHO").ok().filter(|p| Path::new(p).exists()).unwrap_or_else(|| {
            panic!("STRAIN_TEST_WS_ECHO does not name gorilla's echo server: run scripts/test.sh (scripts/ws-servers.sh builds it)")
        });
        let port = crate::harness::free_port();
        let child = Command::new(bin)
            .arg(format!("-addr=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // It logs every message it reads.
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the echo example");
        wait_listening(([127, 0, 0, 1], port).into());
        Server { child, port }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops a server that counts (Python's, Node's); the counts it printed.
    pub(crate) fn counts(mut self) -> Value {
        signal(self.child.id(), "INT");
        let mut out = String::new();
        let _ = self.child.stdout.take().unwrap().read_to_string(&mut out);
        let _ = self.child.wait();
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `strain ws` with the flags in `line` against `url`, with its JSON.
pub(crate) fn ws(line: &str, url: &str) -> Run {
    strain(&[&["ws"], &args(line)[..], &[url]].concat())
}

/// Asserts that `run`'s result follows schema/result.schema.json.
pub(crate) fn follows_the_schema(run: &Run) {
    let doc = run.json.as_ref().unwrap_or_else(|| panic!("no JSON: {}", run.stderr));
    let errors: Vec<String> =
        crate::harness::schema().iter_errors(doc).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// The run's `websocket` section.
pub(crate) fn section(run: &Run) -> &Value {
    &run.json.as_ref().unwrap_or_else(|| panic!("no JSON: {}", run.stderr))["websocket"]
}

#[test]
fn counts_equal_the_origins_and_the_text_says_messages() {
    let origin = Origin::start(&["--ws", "-t", "1"]);
    let run = ws("-c 8 -t 2 -d 1s", &format!("ws://{}/echo", origin.addr));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let w = section(&run);
    let answered = run.num("/requests");
    assert!(answered > 100, "{}", run.stdout);
    assert_eq!((w["messages_sent"].as_u64(), w["messages_received"].as_u64()), (Some(answered), Some(answered)));
    assert_eq!((w["handshakes"].as_u64(), w["unsolicited"].as_u64()), (Some(8), Some(0)));
    assert_eq!(w["protocol"], "ws");
    let s = stats(origin.addr);
    assert_eq!(s["ws_messages"].as_u64(), Some(answered), "{s}");
    // Eight connections of the load and the one that checked the upgrade before it.
    assert_eq!(s["ws_upgrades"].as_u64(), Some(9), "{s}");
    assert!(run.stdout.starts_with(&format!("Running 1s test @ ws://{}/echo\n", origin.addr)), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("  {answered} messages in ")), "{}", run.stdout);
    assert!(run.stdout.contains("Messages/sec: "), "{}", run.stdout);
    assert!(run.stdout.contains("WebSocket (ws): 8 upgrades, "), "{}", run.stdout);
    // Nothing went wrong and messages were sent: neither the trouble line nor the listening one.
    for absent in ["WebSocket upgrades refused", "WebSocket listening only", "WebSocket pings"] {
        assert!(!run.stdout.contains(absent), "{absent}: {}", run.stdout);
    }
}

#[test]
fn counts_equal_pythons_websockets_with_permessage_deflate() {
    let server = Server::python(&[]);
    let run = ws("-c 4 -t 1 -d 1s --deflate --message-size 1000", &format!("ws://127.0.0.1:{}/", server.port));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let counts = server.counts();
    let w = section(&run).clone();
    let answered = run.num("/requests");
    assert!(answered > 50, "{}", run.stdout);
    assert_eq!(counts["messages"].as_u64(), Some(answered), "{counts}");
    // Four connections and the upgrade checked first, every one compressed.
    assert_eq!((counts["connections"].as_u64(), counts["deflate"].as_u64()), (Some(5), Some(5)), "{counts}");
    // 1,000 bytes of a repeating alphabet go compressed, and come back inflated to 1,000.
    assert_eq!(w["messages_sent"].as_u64(), Some(answered));
    assert!(w["bytes_sent"].as_u64().unwrap() < answered * 100, "{w}");
    assert_eq!(w["bytes_received"].as_u64(), Some(answered * 1000), "{w}");
}

#[test]
fn text_and_binary_messages_echo_from_gorillas_example() {
    let server = Server::gorilla_echo();
    let url = format!("ws://127.0.0.1:{}/echo", server.port);
    for line in ["-c 4 -t 1 -d 1s --message hello", "-c 4 -t 1 -d 1s --message-size 70000"] {
        let run = ws(line, &url);
        assert_eq!(run.code, 0, "{line}: {}\n{}", run.stdout, run.stderr);
        let w = section(&run);
        let answered = run.num("/requests");
        assert!(answered > 10, "{line}: {}", run.stdout);
        assert_eq!(w["messages_received"].as_u64(), Some(answered), "{line}: {w}");
        let size = if line.contains("hello") { 5 } else { 70_000 };
        assert_eq!(w["bytes_received"].as_u64(), Some(answered * size), "{line}: {w}");
        assert_eq!(run.num("/errors/read") + run.num("/errors/parse"), 0, "{line}: {}", run.stdout);
    }
}

#[test]
fn close_codes_are_reported_by_code_and_no_reconnect_keeps_them_closed() {
    let server = Server::python(&["--close-after", "20", "--close-code", "4001"]);
    let run = ws("-c 3 -t 1 -d 2s --no-reconnect", &format!("ws://127.0.0.1:{}/", server.port));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    follows_the_schema(&run);
    let w = section(&run).clone();
    assert_eq!(w["closes"], serde_json::json!({"4001": 3}), "{}", run.stdout);
    assert_eq!(w["drops"], serde_json::json!({"closed": 3}), "{}", run.stdout);
    assert_eq!(w["handshakes"].as_u64(), Some(3));
    // Each connection's 20 echoes answered; the 21st went out before the close came, and is
    // lost with the connection.
    assert_eq!((run.num("/requests"), w["messages_sent"].as_u64()), (60, Some(63)), "{}", run.stdout);
    assert_eq!(run.num("/errors/read"), 3, "{}", run.stdout);
    assert!(run.stdout.contains("closed by the server: 4001 \u{d7}3; connections lost: closed 3"), "{}", run.stdout);
    assert_eq!(server.counts()["messages"].as_u64(), Some(60));

    // Replaced by default: the origin's 1000 after 10 messages, many times over.
    let origin = Origin::start(&["--ws", "--ws-close-after", "10"]);
    let run = ws("-c 2 -t 1 -d 1s", &format!("ws://{}/", origin.addr));
    let w = section(&run);
    let closes = w["closes"]["1000"].as_u64().unwrap_or(0);
    assert!(closes > 2, "{}", run.stdout);
    // Every closed connection was replaced; at the end each slot is open or being reopened.
    let handshakes = w["handshakes"].as_u64().unwrap();
    assert!((closes..=closes + 2).contains(&handshakes), "{w}");
}

#[test]
fn wss_works() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path(), &["localhost"]);
    let origin = Origin::start_heard(&["--ws", "--tls", "--cert", &cert, "--key", &key]);
    let url = format!("wss://localhost:{}/", origin.addr.port());
    let run = ws("-c 4 -t 1 -d 1s -k", &url);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let w = section(&run).clone();
    assert_eq!((w["protocol"].as_str(), w["handshakes"].as_u64()), (Some("wss"), Some(4)), "{w}");
    // Without -k the self-signed certificate is refused, and nothing is sent.
    let refused = ws("-c 1 -t 1 -d 1s", &url);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    let exited = origin.exit();
    let said = format!("WebSocket upgrades 5, messages echoed {}, broadcasts 0;", run.num("/requests"));
    assert!(exited.stderr.contains(&said), "{said}: {}", exited.stderr);
}

#[test]
fn a_server_stall_shows_in_the_corrected_latency() {
    let origin = Origin::start(&["--ws", "-t", "1", "--stall-at", "1s", "--stall-for", "600ms"]);
    let run = ws("-c 20 -t 1 -d 3s -R 200", &format!("ws://{}/", origin.addr));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // 600 sends came due and every one was answered.
    assert_eq!(run.num("/requests"), 600, "{}", run.stdout);
    assert_eq!(stats(origin.addr)["ws_messages"].as_u64(), Some(600));
    // Messages due during the stall waited for it to end: the corrected latency holds the
    // stall, up to its whole length for the first one due.
    let max_us = run.num("/latency_us/max");
    assert!((500_000..2_000_000).contains(&max_us), "max {max_us} us: {}", run.stdout);
}

#[test]
fn bad_input_is_one_line_exit_2_and_no_message_sent() {
    // A server that does not upgrade: the status it gave.
    let origin = Origin::start(&[]);
    let run = strain_raw(&["ws", "-d", "1s", &format!("ws://{}/", origin.addr)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.trim(), "strain: the server refused the WebSocket upgrade: HTTP 200");
    assert_eq!(run.stdout, "");
    // Only the upgrade was asked.
    assert_eq!(stats(origin.addr)["requests"].as_u64(), Some(1));

    // A subprotocol the server does not speak, then one it does.
    let origin = Origin::start(&["--ws", "--ws-subprotocol", "chat"]);
    let url = format!("ws://{}/", origin.addr);
    let run = strain_raw(&["ws", "-d", "1s", "--subprotocol", "mqtt", &url]);
    assert_eq!((run.code, run.stderr.trim()), (2, "strain: the server refused the subprotocol mqtt"));
    assert_eq!(stats(origin.addr)["ws_messages"].as_u64(), Some(0));
    let run = ws("-c 1 -t 1 -d 500ms --subprotocol mqtt --subprotocol chat", &url);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let echoed = stats(origin.addr)["ws_messages"].as_u64();
    assert_eq!(echoed, Some(run.num("/requests")));

    // URLs that are not a WebSocket's, and a WebSocket's where HTTP is loaded.
    let rows: [(&[&str], &str); 4] = [
        (&["ws", &format!("http://{}/", origin.addr)], "a WebSocket URL starts with ws:// or wss://"),
        (&["ws", "ftp://127.0.0.1/"], "only http://, https://, ws:// and wss:// are supported"),
        (&[&format!("ws://{}/", origin.addr)], "a WebSocket server is loaded with strain ws"),
        (&["ws", "--http2", &url], "unexpected argument '--http2'"),
    ];
    for (argv, says) in rows {
        let run = strain_raw(argv);
        assert_eq!(run.code, 2, "{argv:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{argv:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{argv:?}: {}", run.stderr);
    }
    assert_eq!(stats(origin.addr)["ws_messages"].as_u64(), echoed);
}

#[test]
fn ten_thousand_held_connections_are_counted_exactly() {
    let _alone = crate::harness::exclusive();
    let origin = Origin::start(&["--ws", "-t", "1"]);
    // Held at 500 messages/s in total: the connections, not the messages, are the load.
    let run = ws("-c 10000 -t 2 -d 6s -R 500 --interval 1s", &format!("ws://{}/", origin.addr));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let w = section(&run);
    assert_eq!(w["handshakes"].as_u64(), Some(10_000), "{}", run.stdout);
    assert_eq!(w["drops"], serde_json::json!({}), "{}", run.stdout);
    // Alive, all of them, from the first whole interval to the last before the drain.
    let rows = run.json.as_ref().unwrap()["intervals"].as_array().cloned().unwrap_or_default();
    assert!(rows.len() >= 5, "{rows:?}");
    for row in &rows[1..rows.len() - 1] {
        assert_eq!(row["open_connections"].as_u64(), Some(10_000), "{row}");
    }
    let s = stats(origin.addr);
    assert_eq!(s["ws_upgrades"].as_u64(), Some(10_001), "{s}");
    assert_eq!(s["ws_messages"].as_u64(), Some(run.num("/requests")), "{s}");
}

#[test]
fn listen_only_counts_what_the_server_pushes_and_the_gaps() {
    let origin = Origin::start(&["--ws", "-t", "1", "--ws-broadcast", "20"]);
    let run = ws("-c 10 -t 1 -d 2s --listen-only", &format!("ws://{}/", origin.addr));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let w = section(&run);
    let received = w["messages_received"].as_u64().unwrap();
    assert_eq!((w["messages_sent"].as_u64(), received), (Some(0), run.num("/requests")), "{w}");
    // 20 a second to each of 10 connections for 2 s, less the first gap and the end.
    assert!((340..=420).contains(&received), "{}", run.stdout);
    let pushed = stats(origin.addr)["ws_broadcasts"].as_u64().unwrap();
    assert!(received <= pushed, "{received} > {pushed}");
    // The gap between pushes is 50 ms.
    let p50 = run.json.as_ref().unwrap()["latency_us"]["percentiles"]["50"].as_u64().unwrap_or(0);
    assert!((40_000..60_000).contains(&p50), "p50 {p50}: {}", run.stdout);
    assert!(run.stdout.contains("WebSocket listening only: "), "{}", run.stdout);
}

#[test]
fn listen_only_ends_at_its_duration_owing_nothing() {
    // A listening connection awaits a message it never asked for: at the end of the run it is
    // let go, not waited for until --timeout and counted as a timeout. gorilla's echo never
    // speaks first, so every connection is still listening at the end.
    let silent = Server::gorilla_echo();
    let run = ws("-c 50 -t 1 -d 1s -T 10s --listen-only", &format!("ws://127.0.0.1:{}/echo", silent.port));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.elapsed < std::time::Duration::from_secs(4), "took {:?}", run.elapsed);
    assert_eq!((run.num("/errors/timeout"), run.num("/sent"), run.num("/requests")), (0, 0, 0), "{}", run.stdout);
    // And a server that pushes: what arrived is counted, and the run still ends at -d.
    let origin = Origin::start(&["--ws", "-t", "1", "--ws-broadcast", "5"]);
    let run = ws("-c 50 -t 1 -d 1s -T 10s --listen-only", &format!("ws://{}/", origin.addr));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.elapsed < std::time::Duration::from_secs(4), "took {:?}", run.elapsed);
    assert_eq!((run.num("/errors/timeout"), run.num("/sent")), (0, run.num("/requests")), "{}", run.stdout);
}

#[test]
fn match_takes_only_its_own_answer_among_pushed_messages() {
    let origin = Origin::start(&["--ws", "-t", "1", "--ws-broadcast", "50", "--delay", "5ms"]);
    let run = ws("-c 4 -t 1 -d 1s --match --message hi", &format!("ws://{}/", origin.addr));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let w = section(&run);
    let answered = run.num("/requests");
    assert_eq!(stats(origin.addr)["ws_messages"].as_u64(), Some(answered));
    assert_eq!(w["messages_received"].as_u64(), Some(answered + w["unsolicited"].as_u64().unwrap()), "{w}");
    assert!(w["unsolicited"].as_u64().unwrap() >= 100, "{w}");
    // Each message is its id, a space and the payload: 16 + 1 + 2 bytes.
    assert_eq!(w["bytes_sent"].as_u64(), Some(w["messages_sent"].as_u64().unwrap() * 19), "{w}");
    assert_eq!(run.num("/errors/timeout"), 0, "{}", run.stdout);
    let p50 = run.json.as_ref().unwrap()["latency_us"]["percentiles"]["50"].as_u64().unwrap_or(0);
    assert!(p50 >= 5_000, "the echo waits 5 ms: p50 {p50}");
}

#[test]
fn gorillas_chat_reaches_every_listener() {
    // The listeners and the sender must overlap: no other test's load may hold the sender back.
    let _alone = crate::harness::exclusive();
    let bin = std::env::var("STRAIN_TEST_WS_CHAT").ok().filter(|p| Path::new(p).exists()).unwrap_or_else(|| {
        panic!("STRAIN_TEST_WS_CHAT does not name gorilla's chat server: run scripts/test.sh (scripts/ws-servers.sh builds it)")
    });
    let port = crate::harness::free_port();
    // The chat example serves its page from the working directory; /ws is all that is used.
    let mut chat = Command::new(bin)
        .arg(format!("-addr=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the chat example");
    wait_listening(([127, 0, 0, 1], port).into());
    let url = format!("ws://127.0.0.1:{port}/ws");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("listeners.json").display().to_string();
    let listeners = crate::harness::spawn(&[
        "ws",
        "-c",
        "8",
        "-t",
        "1",
        "-d",
        "3s",
        "-T",
        "5s",
        "--listen-only",
        "--json",
        &json,
        &url,
    ]);
    std::thread::sleep(std::time::Duration::from_millis(800));
    // One sender: every message goes to all nine connections, its own included (--match
    // takes that one as the answer; the chat joins queued messages with newlines).
    let sender = ws("-c 1 -t 1 -d 1s -R 20 --match --message hello", &url);
    let heard = crate::harness::finish(listeners, std::time::Instant::now());
    let _ = chat.kill();
    let _ = chat.wait();
    assert_eq!(sender.code, 0, "{}\n{}", sender.stdout, sender.stderr);
    assert_eq!(sender.num("/requests"), 20, "{}", sender.stdout);
    assert_eq!(heard.code, 0, "{}", heard.stderr);
    let heard: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Each listener heard all 20 messages of 22 bytes (id, space, payload), some joined into one
    // message by a newline each.
    let w = &heard["websocket"];
    let (messages, bytes) = (w["messages_received"].as_u64().unwrap(), w["bytes_received"].as_u64().unwrap());
    assert!((8..=160).contains(&messages), "{w}");
    assert_eq!(bytes, 8 * 20 * 22 + (8 * 20 - messages), "{w}");
}

#[test]
fn pings_rates_and_the_connect_rate_do_what_they_say() {
    let origin = Origin::start(&["--ws", "-t", "1"]);
    let url = format!("ws://{}/", origin.addr);
    let run = ws("-c 10 -t 1 -d 2s --rate-per-conn 20 --ping 100ms --connect-rate 20 --interval 250ms", &url);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    follows_the_schema(&run);
    let w = section(&run);
    // 20 a second on each of 10 connections for 2 s.
    assert_eq!(run.num("/sent"), 400, "{}", run.stdout);
    let (sent, pongs) = (w["pings_sent"].as_u64().unwrap(), w["pongs"]["count"].as_u64().unwrap());
    assert!(sent >= 100 && pongs + 10 >= sent && pongs <= sent, "{w}");
    // Ten connections at 20 a second take half a second to open.
    let open: Vec<u64> = run.json.as_ref().unwrap()["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["open_connections"].as_u64().unwrap_or(0))
        .collect();
    assert!(open[0] <= 6 && open[2] == 10, "{open:?}");
}

#[test]
fn dropped_connections_are_counted_and_replaced() {
    let origin = Origin::start(&["--ws", "-t", "1", "--ws-drop-rate", "2%"]);
    let run = ws("-c 4 -t 1 -d 1s", &format!("ws://{}/", origin.addr));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    follows_the_schema(&run);
    let w = section(&run);
    let drops = w["drops"]["eof"].as_u64().unwrap_or(0) + w["drops"]["reset"].as_u64().unwrap_or(0);
    assert!(drops > 5, "{w}");
    // Each lost connection lost the message it carried, and was replaced.
    assert_eq!(run.num("/errors/read"), drops, "{}", run.stdout);
    // Four at the start, and a replacement for each drop but those still opening at the end.
    let handshakes = w["handshakes"].as_u64().unwrap();
    assert!((drops..=drops + 4).contains(&handshakes), "{w}");
    assert_eq!(stats(origin.addr)["ws_messages"].as_u64(), Some(run.num("/requests")));
}

#[test]
fn find_max_searches_the_message_rate_and_names_the_connection_limit() {
    let _alone = crate::harness::exclusive();
    // Ten connections, each carrying one message at a time to an echo held 10 ms: at most
    // 1,000 a second get through, and the search says the connections are the limit.
    let origin = Origin::start(&["--ws", "-t", "1", "--delay", "10ms"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("search.json").display().to_string();
    let url = format!("ws://{}/", origin.addr);
    let line =
        ["ws", "find-max", "--slo", "p99<50ms", "-c", "10", "-t", "1", "--step-duration", "1s", "--json", &out, &url];
    let run = strain_raw(&line);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with(&format!("Searching {url} for the highest rate with p99<50ms")), "{}", run.stdout);
    assert!(run.stdout.contains("Connection limit: every one of the 10 connections was busy"), "{}", run.stdout);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let steps = doc["steps"].as_array().cloned().unwrap_or_default();
    assert!(steps.iter().any(|s| s["verdict"] == "pass"), "{doc}");
    // A search refuses a rate of its own.
    let refused = strain_raw(&["ws", "find-max", "--slo", "p99<50ms", "--rate-per-conn", "5", &url]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
}

#[test]
fn segments_merge_into_one_test_and_compare_reads_them() {
    let origin = Origin::start(&["--ws", "-t", "1"]);
    let url = format!("ws://{}/", origin.addr);
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = (0..2).map(|i| dir.path().join(format!("s{i}.json")).display().to_string()).collect();
    for (i, file) in files.iter().enumerate() {
        let segment = format!("{i}/2");
        let run = strain_raw(&[
            "ws",
            "--segment",
            &segment,
            "-c",
            "4",
            "-t",
            "1",
            "-d",
            "1s",
            "-R",
            "400",
            "--json",
            file,
            &url,
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let merged_file = dir.path().join("merged.json").display().to_string();
    let run = strain_raw(&["merge", &files[0], &files[1], "--json", &merged_file]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(" messages in "), "{}", run.stdout);
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&merged_file).unwrap()).unwrap();
    assert_eq!(m["protocol"], "ws");
    // Each segment opened its half of the four connections and held its half of 400 a second:
    // the one test's 400 in 1 s.
    let w = &m["websocket"];
    assert_eq!(w["handshakes"].as_u64(), Some(4), "{w}");
    assert_eq!((m["requests"].as_u64(), w["messages_received"].as_u64()), (Some(400), Some(400)), "{w}");
    assert_eq!(stats(origin.addr)["ws_messages"].as_u64(), Some(400));
    // Compare reads both (on a loaded machine, two segments' latencies may differ enough to
    // read as a change: 97 or 98; what matters is that they were read).
    let compared = strain_raw(&["compare", &files[0], &files[1]]);
    assert!([0, 97, 98].contains(&compared.code), "{}\n{}", compared.stdout, compared.stderr);
}

#[test]
fn stages_thresholds_and_the_html_page_carry_a_websocket_run() {
    let origin = Origin::start(&["--ws", "-t", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("run.html").display().to_string();
    let line = format!("-c 4 -t 1 --stages 1s:100,1s:300 --threshold p99<1s --threshold errors<1% --html {html}");
    let run = ws(&line, &format!("ws://{}/", origin.addr));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // The ramp from 0 to 100 a second, then to 300: 50 + 200 messages due.
    assert_eq!(run.num("/sent"), 250, "{}", run.stdout);
    assert_eq!(stats(origin.addr)["ws_messages"].as_u64(), Some(run.num("/requests")));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-panel=\"websocket\""), "no WebSocket panel");
    assert!(page.contains("<td data-metric=\"ws_handshakes\">4 ("), "the four upgrades");
    // The page speaks of messages, upgrades and close codes, never of requests or a status
    // the server did not send (issue 40).
    let answered = run.num("/requests");
    assert!(page.contains(&format!("{answered} messages in ")), "the answer line counts messages");
    assert!(page.contains("<th>messages</th><th>messages/s</th>"), "the summary's columns");
    assert!(page.contains("4 upgrades; closes none"), "the summary's upgrades and closes");
    assert!(page.contains("Messages per second"), "the throughput axis");
    // What a reader sees: the text, without the tags' metric names (`data-metric="requests"`
    // names a figure for scripts) and the tooltip script.
    let shown: String =
        page.split("data-metric=\"").map(|part| part.split_once('"').map_or(part, |(_, rest)| rest)).collect();
    let shown = shown.split("<script>").next().unwrap_or("");
    for absent in ["request", "Request", "Status codes", "200: ", "response", "Response"] {
        assert!(!shown.contains(absent), "{absent:?} on a WebSocket run's page");
    }
    assert!(shown.contains("Share of messages (%)"), "the latency distribution counts messages");
}

#[test]
fn a_websocket_run_is_exported_live() {
    let origin = Origin::start(&["--ws", "-t", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ws.json");
    let port = crate::harness::free_port();
    let (listen, out, url) =
        (format!("127.0.0.1:{port}"), json.display().to_string(), format!("ws://{}/", origin.addr));
    let own = ["--metrics-listen", &listen, "--json", &out, &url];
    let (run, scrapes) = crate::metrics::scraped("ws -c 2 -t 1 -n 500 --quiet --metrics-linger 3s", &own, port, &json);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The last scrape, while it lingers, has the totals: the 500 messages answered.
    let last = scrapes.last().map_or("", String::as_str);
    let total = last.lines().find(|l| l.starts_with("strain_requests_total")).unwrap_or_default();
    assert!(total.ends_with(" 500"), "{total}");
    assert_eq!(stats(origin.addr)["ws_messages"].as_u64(), Some(500));
}
