//! Issue 40: `strain ws` holds 10,000 connections against WebSocket servers that are not strain's,
//! each with its default settings: gorilla/websocket's echo example, Python's `websockets` and
//! Node's `ws`. Listening only (the server never speaks first: before the fix a connection that
//! heard nothing never left the window of connections being opened, so the run stopped at 512),
//! and echoing with pings. strain's counts of upgraded and alive connections are exact, and the
//! server's own count of connections open at once reaches 10,000: the count it prints (Python,
//! Node), and the sockets its process holds, read from /proc while the run goes on (all three).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use serde_json::Value;

use crate::harness::Run;
use crate::websocket::{follows_the_schema, section, ws, Server};

/// Connections held in every run here.
const HELD: u64 = 10_000;

/// Samples how many sockets process `pid` holds, every 50 ms, until stopped; the most seen.
struct SocketWatch {
    stop: Arc<AtomicBool>,
    most: thread::JoinHandle<u64>,
}

impl SocketWatch {
    fn start(pid: u32) -> SocketWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        // What the server holds idle (its listener, an event loop's own socket pair), once it
        // has let go of an earlier run's connections.
        let mut before = sockets(pid);
        for _ in 0..100 {
            thread::sleep(Duration::from_millis(100));
            let now = sockets(pid);
            if now == before && now < 10 {
                break;
            }
            before = now;
        }
        let most = thread::spawn(move || {
            let mut most = before;
            while !stopped.load(Ordering::Relaxed) {
                most = most.max(sockets(pid));
                thread::sleep(Duration::from_millis(50));
            }
            most - before
        });
        SocketWatch { stop, most }
    }

    /// The most sockets seen at once, less those held before the run.
    fn connections(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.most.join().unwrap()
    }
}

/// The sockets process `pid` holds now.
fn sockets(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return 0 };
    dir.filter_map(Result::ok)
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:")))
        .count() as u64
}

/// Asserts `run` upgraded exactly [`HELD`] connections, lost none, and held them all.
fn held_them_all(run: &Run) {
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    follows_the_schema(run);
    let w = section(run);
    assert_eq!(w["handshakes"].as_u64(), Some(HELD), "{}", run.stdout);
    assert_eq!(w["drops"], serde_json::json!({}), "{}", run.stdout);
    assert_eq!(w["closes"], serde_json::json!({}), "{}", run.stdout);
    // A connect that fails (Python's backlog of 100 overflowing on a loaded machine) is
    // counted and retried: what must be exact is the upgrades made and the connections held.
    assert_eq!(
        (run.num("/errors/read"), run.num("/errors/write"), run.num("/errors/parse")),
        (0, 0, 0),
        "{}",
        run.stdout
    );
    // The upgrades take the first second or two (Python's are the slowest); from the first
    // row that holds them all, every row but the drain's holds them all.
    let rows: Vec<u64> = run.json.as_ref().unwrap()["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["open_connections"].as_u64().unwrap_or(0))
        .collect();
    let first = rows.iter().position(|&n| n == HELD).unwrap_or_else(|| panic!("never all open: {rows:?}"));
    assert!(first + 2 < rows.len(), "all open only at the end: {rows:?}");
    assert!(rows[first..rows.len() - 1].iter().all(|&n| n == HELD), "{rows:?}");
}

/// Runs `line` against `server`'s `path`, watching its sockets: the run, and the most
/// connections the server held at once.
fn against(server: &Server, path: &str, line: &str) -> (Run, u64) {
    let watch = SocketWatch::start(server.pid());
    let run = ws(line, &format!("ws://127.0.0.1:{}{path}", server.port));
    (run, watch.connections())
}

const LISTEN: &str = "-c 10000 -t 2 -d 6s --listen-only --interval 1s";
/// 1,000 messages a second in all, and a ping on every connection each second: the messages
/// and pings each way, not the connections, vary here.
const ECHO_AND_PING: &str = "-c 10000 -t 2 -d 6s -R 1000 --ping 1s --interval 1s";
/// Python's asyncio listens with a backlog of 100 (Go's and Node's take 4,096 and 511): with
/// strain's 512 connections opening at once some SYNs wait for the kernel's 1 s retry and
/// then their upgrade, past the default 2 s connect deadline (counted as connect timeouts, and
/// retried). A user holding 10,000 on such a server gives the upgrades longer, as here, and
/// the run too: its 10,000 upgrades take 4-5 s on a quiet machine, 8 s while other tests
/// load both cores (CI), so the run is long enough to hold them all for several rows after.
/// Echoing and pinging while it upgrades, a slower machine's Python took 14 s for them: that
/// run is longer still.
const PYTHON_LISTEN: &str = "-c 10000 -t 2 -d 15s --listen-only --interval 1s -T 5s";
const PYTHON_ECHO_AND_PING: &str = "-c 10000 -t 2 -d 25s -R 1000 --ping 1s --interval 1s -T 5s";

/// Asserts the echo run's messages and pings: every message sent was echoed, and `echoed` (the
/// server's count, when it keeps one) is strain's count.
fn echoed_and_ponged(run: &Run, echoed: Option<u64>) {
    let w = section(run);
    let (sent, received) = (w["messages_sent"].as_u64().unwrap(), w["messages_received"].as_u64().unwrap());
    assert!(sent >= 4_000, "{}", run.stdout);
    assert_eq!(received, run.num("/requests"), "{w}");
    assert!(sent - received <= 10, "{sent} sent, {received} echoed: {}", run.stdout);
    if let Some(echoed) = echoed {
        assert!(echoed >= received && echoed <= sent, "server {echoed}, strain {sent} sent, {received} received");
    }
    let (pings, pongs) = (w["pings_sent"].as_u64().unwrap(), w["pongs"]["count"].as_u64().unwrap());
    // Each connection pings once a second from its upgrade on: about 5 rounds of 10,000.
    assert!(pings >= 3 * HELD, "{w}");
    assert!(pongs <= pings && pongs + HELD >= pings, "{w}");
}

/// The counts a server printed: the most open at once is [`HELD`], and so are the upgrades
/// (strain's check before the load is one more), but for connects strain gave up on (`-T`
/// passed: counted as connect errors and opened again) that the server, slow under load, took
/// and upgraded after all: never more than those (CI saw 10,005; a loaded run here 10,019 for
/// 64 connect timeouts).
fn server_held_them_all(run: &Run, counts: &Value) {
    let upgrades = counts["connections"].as_u64().unwrap();
    let given_up = run.num("/errors/connect");
    assert!((HELD + 1..=HELD + 1 + given_up).contains(&upgrades), "{counts}\n{}", run.stdout);
    assert_eq!(counts["peak_open"].as_u64(), Some(HELD), "{counts}");
}

#[test]
fn gorilla_holds_ten_thousand_listening_and_echoing() {
    let _alone = crate::harness::exclusive();
    let server = Server::gorilla_echo();
    let (run, most) = against(&server, "/echo", LISTEN);
    held_them_all(&run);
    assert_eq!(most, HELD, "gorilla held {most} at once");
    assert_eq!(section(&run)["messages_received"].as_u64(), Some(0));
    let (run, most) = against(&server, "/echo", ECHO_AND_PING);
    held_them_all(&run);
    assert_eq!(most, HELD, "gorilla held {most} at once");
    echoed_and_ponged(&run, None);
}

#[test]
fn python_websockets_holds_ten_thousand_listening() {
    let _alone = crate::harness::exclusive();
    let server = Server::python(&[]);
    let (run, most) = against(&server, "/", PYTHON_LISTEN);
    held_them_all(&run);
    assert_eq!(most, HELD, "websockets held {most} at once");
    let counts = server.counts();
    server_held_them_all(&run, &counts);
    assert_eq!(counts["messages"].as_u64(), Some(0), "{counts}");
}

#[test]
fn python_websockets_holds_ten_thousand_echoing() {
    let _alone = crate::harness::exclusive();
    let server = Server::python(&[]);
    let (run, most) = against(&server, "/", PYTHON_ECHO_AND_PING);
    held_them_all(&run);
    assert_eq!(most, HELD, "websockets held {most} at once");
    let counts = server.counts();
    server_held_them_all(&run, &counts);
    echoed_and_ponged(&run, counts["messages"].as_u64());
}

#[test]
fn node_ws_holds_ten_thousand_listening_and_echoing() {
    let _alone = crate::harness::exclusive();
    let server = Server::node();
    let (run, most) = against(&server, "/", LISTEN);
    held_them_all(&run);
    assert_eq!(most, HELD, "ws held {most} at once");
    let (run, most) = against(&server, "/", ECHO_AND_PING);
    held_them_all(&run);
    assert_eq!(most, HELD, "ws held {most} at once");
    let counts = server.counts();
    // Two runs of 10,000, each with its check before the load.
    assert_eq!(counts["connections"].as_u64(), Some(2 * (HELD + 1)), "{counts}");
    assert_eq!(counts["peak_open"].as_u64(), Some(HELD), "{counts}");
    echoed_and_ponged(&run, counts["messages"].as_u64());
}
