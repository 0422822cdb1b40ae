//! Issue 9, defect 2: many connections. Connections open in a bounded window interleaved with
//! serving, so requests flow at once, the duration holds, and connect failures say their cause.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{exclusive, strain, strain_raw, FakeServer, Nginx};

/// Requests in wrk's "N requests in T" line.
fn wrk_requests(text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.trim().strip_suffix(" read").and_then(|l| l.split(" requests in ").next()?.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no request count in wrk's output:\n{text}"))
}

#[test]
fn nineteen_thousand_connections_match_wrk_without_connect_errors() {
    let _alone = exclusive();
    // wrk does not raise its own open-file limit; it inherits ours.
    rlimit::increase_nofile_limit(u64::MAX).unwrap();
    let nginx = Nginx::start("location / { return 200 \"hello\\n\"; access_log off; }", false);
    let url = format!("http://127.0.0.1:{}/", nginx.port);
    let wrk = Command::new("wrk")
        .args(["-t2", "-c19000", "-d3s", &url])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("wrk is installed by the test command (apt-get install -y wrk)");
    let wrk_text = String::from_utf8_lossy(&wrk.stdout).to_string();
    let wrk_total = wrk_requests(&wrk_text);
    let start = Instant::now();
    let run = strain(&["-t", "2", "-c", "19000", "-d", "3s", "--interval", "500ms", &url]);
    let took = start.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.num("/errors/connect"), 0, "{}\nwrk:\n{wrk_text}", run.stdout);
    assert!(
        run.num("/requests") >= wrk_total,
        "strain {} < wrk {wrk_total}\n{}\nwrk:\n{wrk_text}",
        run.num("/requests"),
        run.stdout
    );
    // Requests flow from the start, while the rest of the connections open.
    let first = &run.json.as_ref().unwrap()["intervals"][0];
    assert!(first["requests"].as_u64().unwrap() > 0, "{first}");
    // The duration holds: at most duration + timeout, plus process start and exit.
    assert!(took < Duration::from_millis(5_500), "{took:?}");
    assert!(run.elapsed < Duration::from_millis(5_500), "{:?}", run.elapsed);
}

#[test]
fn refused_connects_are_reported_by_cause() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let run = strain(&["-t", "1", "-c", "2", "-d", "300ms", &format!("http://127.0.0.1:{port}/")]);
    let connect = run.num("/errors/connect");
    assert!(connect >= 2, "{:?}", run.json);
    assert_eq!(run.num("/errors/connect_causes/refused"), connect);
    assert_eq!(run.num("/errors/connect_causes/address_not_available"), 0);
    assert!(run.stdout.contains(&format!("  Connect errors: refused {connect}\n")), "{}", run.stdout);
}

#[test]
fn source_addresses_are_taken_in_turn() {
    // The first four connections' source addresses.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    let server = FakeServer::start(move |mut s, n| {
        if n < 4 {
            kept.lock().unwrap().push(s.peer_addr().unwrap().ip().to_string());
        }
        // Read one request, then close, so each slot reconnects at most a few times.
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf);
    });
    let addr = server.addr;
    let run = strain(&[
        "-t",
        "1",
        "-c",
        "4",
        "-d",
        "300ms",
        "-T",
        "200ms",
        "--source-addr",
        "127.0.0.2",
        "--source-addr",
        "127.0.0.3",
        &format!("http://{addr}/"),
    ]);
    let mut peers = seen.lock().unwrap().clone();
    peers.sort();
    assert_eq!(peers, ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"], "{}", run.stderr);
}

#[test]
fn a_source_address_that_cannot_be_used_is_a_usage_error() {
    for (source, why) in [("::1", "is IPv4"), ("192.0.2.1", "address")] {
        let run = strain_raw(&["-t", "1", "-c", "1", "-d", "1s", "--source-addr", source, "http://127.0.0.1:1/"]);
        assert_eq!(run.code, 2, "{source}: {}", run.stderr);
        assert!(
            run.stderr.starts_with(&format!("strain: cannot connect from source address {source}: "))
                && run.stderr.contains(why),
            "{}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}

#[test]
fn more_connections_than_open_files_is_a_usage_error() {
    let limit = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap().1;
    let too_many = (limit + 1).to_string();
    let run = strain_raw(&["-t", "1", "-c", &too_many, "-d", "1s", "http://127.0.0.1:1/"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with(&format!("strain: {too_many} connections need more open files than this process may have")),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1);
}
