//! Ctrl-C and SIGTERM sent to a real run: the load stops, requests in flight are waited for,
//! and the full summary and JSON come out; a second Ctrl-C exits at once.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::faults_conn::assert_accounted;
use crate::harness::{bin, finish, read_head, signal, FakeServer, Origin, Run};

/// Starts strain in the background with `--json FILE` in `dir`.
fn spawn(args: &[&str], dir: &tempfile::TempDir) -> Child {
    Command::new(bin())
        .args(args)
        .arg("--json")
        .arg(dir.path().join("out.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strain")
}

/// Waits for the child and reads the JSON it wrote, if any.
fn wait(child: Child, start: Instant, dir: &tempfile::TempDir) -> Run {
    let mut run = finish(child, start);
    if let Ok(text) = std::fs::read_to_string(dir.path().join("out.json")) {
        run.json = Some(serde_json::from_str(&text).unwrap());
    }
    run
}

#[test]
fn ctrl_c_or_sigterm_mid_run_stops_the_load_and_prints_the_full_summary() {
    for sig in ["INT", "TERM"] {
        let origin = Origin::start(&["-t", "1"]);
        let url = origin.url();
        let dir = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let child = spawn(&["-t", "2", "-c", "8", "-d", "30s", "--latency", &url], &dir);
        thread::sleep(Duration::from_millis(800));
        let signalled = Instant::now();
        signal(child.id(), sig);
        let run = wait(child, start, &dir);
        let stopped = signalled.elapsed();
        let served = origin.stop();

        assert_accounted(&run);
        // Nothing was in flight for long: the stop takes a poll interval or two, not the timeout.
        assert!(stopped < Duration::from_millis(1000), "SIG{sig}: stopped after {stopped:?}");
        let requests = run.num("/requests");
        assert!(requests > 100, "SIG{sig}: {requests} requests");
        // Requests in flight at the signal were waited for: strain counted what the origin answered.
        assert_eq!(served.requests, requests, "SIG{sig}");
        assert_eq!(run.num("/sent"), requests, "SIG{sig}");
        // The full text report, with the count the JSON has.
        assert!(run.stdout.starts_with("Running 30s test @ "), "{}", run.stdout);
        for part in
            ["  Latency Distribution\n", &format!("  {requests} requests in "), "Requests/sec:", "Transfer/sec:"]
        {
            assert!(run.stdout.contains(part), "SIG{sig}: no {part:?} in\n{}", run.stdout);
        }
        let secs = run.json.as_ref().and_then(|j| j["duration_s"].as_f64()).unwrap();
        assert!((0.7..2.0).contains(&secs), "SIG{sig}: the run measured {secs} s");
    }
}

/// Reads the request and holds the connection, unanswered, until the client goes.
fn hold(mut s: TcpStream) {
    read_head(&mut s);
    let mut sink = [0u8; 64];
    while matches!(std::io::Read::read(&mut s, &mut sink), Ok(n) if n > 0) {}
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    let server = FakeServer::serving(hold);
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let mut child = spawn(&["-t", "1", "-c", "2", "-d", "30s", "-T", "20s", &server.url()], &dir);
    thread::sleep(Duration::from_millis(600));
    signal(child.id(), "INT");
    // The first Ctrl-C waits for the two requests in flight, which would take the 20 s timeout.
    thread::sleep(Duration::from_millis(400));
    assert!(child.try_wait().unwrap().is_none(), "the first Ctrl-C did not wait for requests in flight");
    let second = Instant::now();
    signal(child.id(), "INT");
    let run = wait(child, start, &dir);
    assert!(second.elapsed() < Duration::from_millis(500), "exit took {:?}", second.elapsed());
    assert_eq!(run.code, 130, "{}", run.stderr);
    assert!(run.stdout.starts_with("Running 30s test @ "), "{}", run.stdout);
    assert!(!run.stdout.contains("requests in"), "{}", run.stdout);
    assert!(run.json.is_none());
}
