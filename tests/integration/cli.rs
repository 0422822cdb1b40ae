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
        (&["ftp://127.0.0.1/"], "only http://, https://, ws:// and wss:// are supported"),
        (&["http://127.0.0.1:99999/"], "invalid port"),
        (&["--no-such-flag", "http://127.0.0.1:1/"], "unexpected argument '--no-such-flag'"),
        (
            &["--latncy", "http://127.0.0.1:1/"],
            "strain: unexpected argument '--latncy' found (tip: a similar argument exists: '--latency')",
        ),
        (&["find-max"], "strain: the following required arguments were not provided: <URL>"),
        (&["report", "a.json"], "strain: the following required arguments were not provided: --output <FILE.html>"),
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
    // The version names the commit it was built from (this is a git checkout).
    let commit = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().unwrap();
    let commit = String::from_utf8(commit.stdout).unwrap();
    let run = strain_raw(&["-v"]);
    let want = format!("strain {} ({})", env!("CARGO_PKG_VERSION"), commit.trim());
    assert_eq!((run.code, run.stdout.trim()), (0, want.as_str()));
}

/// A protocol's command offers only the flags that do something for it: gRPC is always HTTP/2,
/// a WebSocket always upgraded HTTP/1.1 with one message at a time.
#[test]
fn a_protocol_command_offers_only_its_own_flags() {
    let flags = |argv: &[&str]| {
        let run = strain_raw(argv);
        assert_eq!(run.code, 0, "{argv:?}: {}", run.stderr);
        run.stdout
            .split_whitespace()
            .filter(|w| w.starts_with('-'))
            .map(|w| w.trim_end_matches(',').to_owned())
            .collect::<Vec<_>>()
    };
    for argv in [&["grpc", "--help"][..], &["grpc", "find-max", "--help"], &["grpc", "compare", "--help"]] {
        let offered = flags(argv);
        for gone in ["--http1.1", "--http2", "--http3"] {
            assert!(!offered.iter().any(|f| f == gone), "{argv:?} offers {gone}");
        }
        for kept in ["--call", "--max-streams", "--unix-socket", "--connections"] {
            assert!(offered.iter().any(|f| f == kept), "{argv:?} lacks {kept}");
        }
    }
    for argv in [&["ws", "--help"][..], &["ws", "find-max", "--help"], &["ws", "compare", "--help"]] {
        let offered = flags(argv);
        for gone in ["--http1.1", "--http2", "--http3", "--max-streams", "-m"] {
            assert!(!offered.iter().any(|f| f == gone), "{argv:?} offers {gone}");
        }
        assert!(offered.iter().any(|f| f == "--unix-socket"), "{argv:?}");
    }
    // Server-Sent Events: -n, -R and --stages are its streams', and the rate mode's tick,
    // which does nothing for it, is not offered.
    let offered = flags(&["sse", "--help"]);
    for gone in ["--http2", "--http3", "--max-streams", "--tick"] {
        assert!(!offered.iter().any(|f| f == gone), "sse offers {gone}");
    }
    assert!(offered.iter().any(|f| f == "--stages"), "sse lacks --stages");
    let help = strain_raw(&["sse", "--help"]).stdout;
    assert!(help.contains("Start exactly N streams in all") && help.contains("Start this many streams per second"));
    assert!(help.contains("Streams started per second in stages"));
    for argv in [&["--help"][..], &["find-max", "--help"], &["replay", "--help"], &["compare", "--help"]] {
        let offered = flags(argv);
        for kept in ["--http1.1", "--http2", "--http3", "--max-streams"] {
            assert!(offered.iter().any(|f| f == kept), "{argv:?} lacks {kept}");
        }
    }
}

#[test]
fn bare_strain_says_how_to_start() {
    let run = strain_raw::<&str>(&[]);
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let first: Vec<&str> = run.stderr.lines().take(3).collect();
    assert_eq!(first, ["strain: give a URL to load, or a command", "", "Usage: strain [OPTIONS] <URL>"]);
    for common in ["strain demo", "strain -c 100 -d 30s URL", "strain find-max --slo 'p99<100ms' URL", "strain --help"]
    {
        assert!(run.stderr.contains(common), "{common}: {}", run.stderr);
    }
}

#[test]
fn completions_parse_and_the_man_page_renders() {
    let dir = tempfile::tempdir().unwrap();
    for (shell, check) in [("bash", vec!["bash", "-n"]), ("zsh", vec![]), ("fish", vec![])] {
        let run = strain_raw(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains("find-max") && run.stdout.contains("--latency"), "{shell}");
        if let [program, flag] = check.as_slice() {
            let path = dir.path().join(format!("strain.{shell}"));
            std::fs::write(&path, &run.stdout).unwrap();
            let ok = Command::new(program).arg(flag).arg(&path).status().unwrap();
            assert!(ok.success(), "{shell} rejects its completion script");
        }
    }
    let run = strain_raw(&["man"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = dir.path().join("strain.1");
    std::fs::write(&page, &run.stdout).unwrap();
    let shown = Command::new("man").arg("-l").arg(&page).env("MANPAGER", "cat").env("COLUMNS", "100").output().unwrap();
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    // man justifies lines: compare with the spaces collapsed.
    let text = String::from_utf8_lossy(&shown.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("NAME strain - HTTP load generator"), "{text}");
    assert!(text.contains("--connections"), "{text}");
    // A reader gone before the output is written (`strain completions zsh | head -1`) ends it,
    // not in a panic.
    for what in [&["completions", "zsh"][..], &["man"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let shown = Command::new(bin()).args(what).stdout(writer).env("RUST_BACKTRACE", "0").output().unwrap();
        assert_eq!(shown.status.code(), Some(0), "{what:?}: {}", String::from_utf8_lossy(&shown.stderr));
        assert_eq!(String::from_utf8_lossy(&shown.stderr), "", "{what:?}");
    }
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
