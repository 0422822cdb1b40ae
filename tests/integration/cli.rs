//! The command line: bad input gives one clear line and exit 2; Ctrl-C gives a summary.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{bin, finish, signal, strain_raw, Origin};

#[test]
fn bad_flags_and_urls_exit_2_with_one_line() {
    let rows: &[(&[&str], &str)] = &[
        (&["-c", "many", "http://127.0.0.1:1/"], "strain: invalid value 'many' for '--connections <N>'"),
        (&["-d", "10parsecs", "http://127.0.0.1:1/"], "unknown unit 'parsecs'"),
        (&["-t", "4", "-c", "2", "http://127.0.0.1:1/"], "connections (2) must be at least threads (4)"),
        (&["-c", "0", "http://127.0.0.1:1/"], "connections must be at least 1"),
        (&["-H", "NoColon", "http://127.0.0.1:1/"], "invalid header 'NoColon'"),
        (&["127.0.0.1:8080"], "invalid URL '127.0.0.1:8080': it must start with http:// or https://"),
        (&["ftp://127.0.0.1/"], "only http:// and https:// are supported"),
        (&["http://127.0.0.1:99999/"], "invalid port"),
        (&["--no-such-flag", "http://127.0.0.1:1/"], "unexpected argument '--no-such-flag'"),
        (&[], "the following required arguments were not provided"),
        (&["http://no-such-host.invalid/"], "cannot resolve 'no-such-host.invalid'"),
        (&["origin", "--listen", "nonsense"], "invalid value 'nonsense' for '--listen <ADDR>'"),
    ];
    for (args, want) in rows {
        let run = strain_raw(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("strain: "), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
}

#[test]
fn help_and_version_exit_0() {
    let run = strain_raw(&["--help"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("--connections"));
    let run = strain_raw(&["-v"]);
    assert_eq!((run.code, run.stdout.trim()), (0, format!("strain {}", env!("CARGO_PKG_VERSION")).as_str()));
}

#[test]
fn origin_port_in_use_is_a_clear_error() {
    let origin = Origin::start(&[]);
    let run = strain_raw(&["origin", "--listen", &origin.addr.to_string()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains(&format!("cannot listen on {}", origin.addr)), "{}", run.stderr);
}

#[test]
fn ctrl_c_ends_the_run_with_a_summary() {
    let origin = Origin::start(&[]);
    let start = Instant::now();
    let child = Command::new(bin())
        .args(["-t", "1", "-c", "2", "-d", "30s", &origin.url()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    signal(child.id(), "INT");
    let run = finish(child, start);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(3), "took {:?}", run.elapsed);
    assert!(run.stdout.starts_with("Running 30s test @ "), "{}", run.stdout);
    // Well under the 30 s asked for: about 0.7 s of load (more on a busy machine), in wrk's units.
    let line = run.stdout.lines().find(|l| l.contains(" requests in ")).unwrap_or_default();
    let took = line.split(" requests in ").nth(1).and_then(|r| r.split(',').next()).unwrap_or_default();
    let secs = match took.strip_suffix("ms") {
        Some(ms) => ms.parse::<f64>().unwrap() / 1000.0,
        None => took.trim_end_matches('s').parse::<f64>().unwrap(),
    };
    assert!((0.5..3.0).contains(&secs), "{line}");
    assert!(run.stdout.contains("Requests/sec: "), "{}", run.stdout);
}

#[test]
fn ipv6_loopback_literal_works() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; skipping");
        return;
    }
    let origin = Origin::start_on("[::1]:0", &[]);
    let url = format!("http://[::1]:{}/", origin.addr.port());
    let run = crate::harness::strain(&["-t", "1", "-c", "2", "-d", "300ms", &url]);
    let served = origin.stop();
    assert_eq!(served.requests, run.num("/requests"));
    assert!(served.requests > 0);
}
