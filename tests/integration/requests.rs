//! Requests from flags (issue 19): -X, --body and --body-file against real nginx, whose access
//! log (method, path, Content-Length, request length, status) is the truth.

use crate::harness::{args, exclusive, script, strain, strain_raw, temp_file, Nginx};

/// Logs every request's method, path, Content-Length header, whole length and status.
const LOG: &str = "log_format reqs '$request_method $uri $http_content_length $request_length $status';";

fn nginx(h2: bool) -> Nginx {
    let server = "access_log requests.log reqs; location / { return 200 \"ok\\n\"; }";
    if h2 {
        Nginx::start_h2(LOG, server, false)
    } else {
        Nginx::start_with_http(LOG, server)
    }
}

/// (method, path, Content-Length, request length, status) of each request nginx logged.
fn logged(nginx: &mut Nginx) -> Vec<(String, String, String, u64, u16)> {
    nginx.stop();
    let text = std::fs::read_to_string(nginx.dir.path().join("requests.log")).unwrap_or_default();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].into(), f[1].into(), f[2].into(), f[3].parse().unwrap(), f[4].parse().unwrap())
        })
        .collect()
}

#[test]
fn method_and_body_flags_reach_the_server_as_given() {
    let _alone = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.bin");
    let bytes: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    let file = file.to_str().unwrap().to_string();
    // (flags, method nginx saw, Content-Length it saw)
    let rows: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["-X", "POST", "--body", "hello", "-H", "Content-Type: text/plain"], "POST", "5"),
        (vec!["-X", "put", "--body-file", &file], "PUT", "1000"),
        (vec!["-X", "DELETE"], "DELETE", "-"),
        (vec!["--body", "{\"a\":1}"], "GET", "7"),
        (vec!["-X", "HEAD"], "HEAD", "-"),
    ];
    for (flags, method, length) in rows {
        let mut nginx = nginx(false);
        let url = format!("http://127.0.0.1:{}/api", nginx.port);
        let mut a = vec!["-t", "1", "-c", "2", "-d", "300ms"];
        a.extend(flags.iter().copied());
        a.push(&url);
        let run = strain(&a);
        assert_eq!(run.code, 0, "{flags:?}: {}", run.stderr);
        let requests = run.num("/requests");
        assert!(requests > 10, "{flags:?}: {requests}");
        let log = logged(&mut nginx);
        assert_eq!(log.len() as u64, requests, "{flags:?}: every response strain counted is one nginx logged");
        for (m, path, cl, _, status) in &log {
            assert_eq!((m.as_str(), path.as_str(), cl.as_str(), *status), (method, "/api", length, 200), "{flags:?}");
        }
        // The body went whole: the request's length is its head plus the body.
        let lengths: std::collections::BTreeSet<u64> = log.iter().map(|r| r.3).collect();
        assert_eq!(lengths.len(), 1, "{flags:?}: {lengths:?}");
        if method != "HEAD" {
            assert_eq!(run.json.as_ref().unwrap()["config"]["method"].as_str().unwrap_or("GET"), method);
        }
    }
}

#[test]
fn a_posted_body_holds_a_rate_and_goes_over_http2() {
    let _alone = exclusive();
    for h2 in [false, true] {
        let mut nginx = nginx(h2);
        let url = format!("http://127.0.0.1:{}/", nginx.port);
        let mut a = args("-t 1 -c 4 -R 200 -d 1s -X POST --body 0123456789");
        if h2 {
            a.push("--http2");
        }
        a.push(&url);
        let run = strain(&a);
        assert_eq!(run.code, 0, "h2 {h2}: {}", run.stderr);
        assert_eq!(run.num("/requests"), 200, "h2 {h2}");
        let log = logged(&mut nginx);
        assert_eq!(log.len(), 200, "h2 {h2}");
        assert!(log.iter().all(|r| r.0 == "POST" && r.2 == "10" && r.4 == 200), "h2 {h2}: {:?}", &log[..3]);
    }
}

#[test]
fn bad_request_flags_are_refused_in_one_line_and_nothing_is_sent() {
    let (_dir, lua) = script("request = function() return wrk.format() end");
    let rows: &[(&[&str], &str)] = &[
        (&["-s", &lua, "--body", "x"], "the argument '--script <FILE>' cannot be used with '--body <STRING>'"),
        (&["-s", &lua, "-X", "POST"], "the argument '--script <FILE>' cannot be used with '--method <M>'"),
        (
            &["--body", "x", "--body-file", "f"],
            "the argument '--body <STRING>' cannot be used with '--body-file <FILE>'",
        ),
        (&["-X", "GET /x"], "invalid method 'GET /x': expected a word such as GET or POST"),
        (&["--body-file", "/no/such/body"], "cannot read /no/such/body: No such file or directory"),
    ];
    for (flags, want) in rows {
        let mut a = flags.to_vec();
        a.push("http://127.0.0.1:1/");
        let run = strain_raw(&a);
        assert_eq!(run.code, 2, "{flags:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{flags:?}: {}", run.stderr);
        assert!(run.stderr.starts_with(&format!("strain: {want}")), "{flags:?}: {}", run.stderr);
    }
}

#[test]
fn minus_n_sends_exactly_n_requests_in_every_mode() {
    let _alone = exclusive();
    // (flags, requests the server must see)
    let rows: &[(&str, u64)] = &[
        ("-n 1 -c 10", 1),
        ("-n 7 -t 3 -c 3", 7),
        ("-n 1000 -t 2 -c 10", 1000),
        ("-n 1000 -R 2000 -c 10", 1000),
        ("-n 300 -R 1000 -d 100ms -c 10", 100),
        ("-n 1000000 -d 300ms -c 2", 0),
        ("-n 500 -c 4 --http2 -m 5", 500),
        ("-n 10 -t 1 -c 3 --segment 0/3", 4),
        ("-n 10 -t 1 -c 3 --segment 2/3", 3),
    ];
    for (flags, want) in rows {
        let mut nginx = nginx(flags.contains("--http2"));
        let url = format!("http://127.0.0.1:{}/", nginx.port);
        let mut a = args(flags);
        a.push(&url);
        let start = std::time::Instant::now();
        let run = strain(&a);
        assert_eq!(run.code, 0, "{flags}: {}", run.stderr);
        let log = logged(&mut nginx);
        if *want == 0 {
            // -d came first: the run ended at its duration, with every request accounted for.
            assert!(start.elapsed() < std::time::Duration::from_secs(3), "{flags}");
            assert_eq!(log.len() as u64, run.num("/requests"), "{flags}");
            continue;
        }
        assert_eq!(run.num("/requests"), *want, "{flags}: {}", run.stdout);
        assert_eq!(run.num("/sent"), *want, "{flags}");
        assert_eq!(log.len() as u64, *want, "{flags}: nginx saw");
    }
}

#[test]
fn a_unix_socket_carries_http1_and_http2_in_every_mode() {
    let _alone = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("nginx.sock");
    let sock = sock.to_str().unwrap().to_string();
    for (h2, flags, want) in [
        (false, "-t 1 -c 4 -n 100", 100),
        (false, "-t 2 -c 4 -R 200 -d 1s", 200),
        (false, "-t 1 -c 2 -n 50 -X POST --body hello", 50),
        (true, "-t 1 -c 2 -m 4 -n 100 --http2", 100),
    ] {
        let _ = std::fs::remove_file(&sock);
        let server = format!(
            "listen unix:{sock}{}; access_log requests.log reqs; location / {{ return 200 \"ok\\n\"; }}",
            if h2 { " http2" } else { "" }
        );
        let mut nginx = if h2 { Nginx::start_h2(LOG, &server, false) } else { Nginx::start_with_http(LOG, &server) };
        // The URL names Host and path; the port is nobody's.
        let mut a = args(flags);
        a.extend(["--unix-socket", sock.as_str(), "http://svc.test:1/api"]);
        let run = strain(&a);
        assert_eq!(run.code, 0, "{flags}: {}", run.stderr);
        assert_eq!(run.num("/requests"), want, "{flags}: {}", run.stdout);
        let log = logged(&mut nginx);
        assert_eq!(log.len() as u64, want, "{flags}");
        assert!(log.iter().all(|r| r.1 == "/api" && r.4 == 200), "{flags}");
    }
    // Nothing listens there: connect errors that name the socket, exit 1.
    let run = strain_raw(&["-t", "1", "-c", "1", "-d", "200ms", "--unix-socket", "/no/such.sock", "http://svc.test/"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "no connection to /no/such.sock succeeded: connect to /no/such.sock failed: No such file or directory"
        ),
        "{}",
        run.stderr
    );
    let run = strain_raw(&["--unix-socket", "/tmp/x.sock", "https://svc.test/"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "strain: --unix-socket speaks plain HTTP: give an http:// URL (it names Host and path)\n");
}

#[test]
fn the_origin_serves_on_a_unix_socket() {
    use std::io::{BufRead, BufReader, Read};
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("origin.sock");
    let sock = sock.to_str().unwrap().to_string();
    let listen = format!("unix:{sock}");
    // `strain origin` on the socket, its stdout piped.
    let spawn = || {
        std::process::Command::new(crate::harness::bin())
            .args(["origin", "--listen", &listen, "-t", "1"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut origin = spawn();
    let mut out = BufReader::new(origin.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert_eq!(first.trim(), format!("strain origin listening on {listen}"));
    for flags in ["-t 1 -c 4 -n 300", "-t 1 -c 2 -m 3 -n 200 --http2", "-t 1 -c 2 -n 100 -X POST --body abc"] {
        let mut a = args(flags);
        a.extend(["--unix-socket", sock.as_str(), "http://svc.test/"]);
        let run = strain(&a);
        assert_eq!(run.code, 0, "{flags}: {}", run.stderr);
        assert_eq!(run.num("/errors/connect") + run.num("/errors/read") + run.num("/errors/parse"), 0, "{flags}");
    }
    crate::harness::signal(origin.id(), "INT");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(origin.wait().unwrap().success());
    assert!(rest.starts_with("strain origin served 600 requests on 8 connections"), "{rest}");
    // The socket file is gone, so the next origin can bind it.
    assert!(!std::path::Path::new(&sock).exists());
    // A socket left by a killed server is replaced; a live one, or another file, is one clear line.
    let stale = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let run = strain_raw(&["origin", "--listen", &listen]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, format!("strain: cannot listen on {listen}: another server is listening there\n"));
    drop(stale);
    let mut origin = spawn();
    let mut first = String::new();
    BufReader::new(origin.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert_eq!(first, format!("strain origin listening on {listen}\n"));
    let _ = origin.kill();
    let _ = origin.wait();
    let _ = std::fs::remove_file(&sock);
    std::fs::write(&sock, "").unwrap();
    let run = strain_raw(&["origin", "--listen", &listen]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        format!("strain: cannot listen on {listen}: a file that is not a socket is there (strain leaves it alone)\n")
    );
}

#[test]
fn a_targets_file_goes_round_robin_exactly() {
    let _alone = exclusive();
    let (dir, body) = temp_file("thing.json", "{\"a\":1}");
    let mut nginx = nginx(false);
    let base = format!("http://127.0.0.1:{}", nginx.port);
    // Five targets, vegeta's HTTP format.
    let http = dir.path().join("targets.txt");
    std::fs::write(
        &http,
        format!(
            "# five targets\nGET {base}/one\n\nPOST {base}/two\nContent-Type: application/json\n@{body}\n\n\
             DELETE {base}/three\n\nGET {base}/four\nX-A: 1\n\nPUT {base}/five\n"
        ),
    )
    .unwrap();
    let run = strain(&args(&format!("-t 2 -c 4 -n 1000 --targets {}", http.display())));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let log = logged(&mut nginx);
    assert_eq!(log.len(), 1000);
    let mut seen = std::collections::BTreeMap::new();
    for (m, path, cl, _, status) in &log {
        assert_eq!(*status, 200);
        *seen.entry((m.clone(), path.clone(), cl.clone())).or_insert(0) += 1;
    }
    let want: std::collections::BTreeMap<_, _> = [
        ("GET", "/one", "-"),
        ("POST", "/two", "7"),
        ("DELETE", "/three", "-"),
        ("GET", "/four", "-"),
        ("PUT", "/five", "-"),
    ]
    .into_iter()
    .map(|(m, p, c)| ((m.to_string(), p.to_string(), c.to_string()), 200))
    .collect();
    assert_eq!(seen, want, "exactly 200 each, round-robin");
    // The JSON and the text count each target.
    let targets = run.json.as_ref().unwrap()["targets"].as_array().unwrap().clone();
    assert_eq!(targets.len(), 5);
    assert!(targets.iter().all(|t| t["requests"] == 200), "{targets:?}");
    assert_eq!(targets[1]["method"], "POST");
    // JSON lines, vegeta's other format; a random order with a seed is the same twice.
    let mut nginx = crate::requests::nginx(false);
    let base = format!("http://127.0.0.1:{}", nginx.port);
    let jsonl = dir.path().join("targets.jsonl");
    std::fs::write(
        &jsonl,
        format!(
            "{{\"method\":\"POST\",\"url\":\"{base}/p\",\"header\":{{\"X-B\":[\"2\"]}},\"body\":\"aGVsbG8=\"}}\n\
             {{\"method\":\"GET\",\"url\":\"{base}/g\"}}\n"
        ),
    )
    .unwrap();
    let counts = |run: &crate::harness::Run| -> Vec<u64> {
        run.json.as_ref().unwrap()["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["requests"].as_u64().unwrap())
            .collect()
    };
    let a = strain(&args(&format!("-t 1 -c 1 -n 101 --targets {} --targets-order random --seed 7", jsonl.display())));
    let b = strain(&args(&format!("-t 1 -c 1 -n 101 --targets {} --targets-order random --seed 7", jsonl.display())));
    assert_eq!(counts(&a), counts(&b));
    assert_eq!(counts(&a).iter().sum::<u64>(), 101);
    // And the HTML page.
    let html = dir.path().join("page.html");
    let run = strain(&args(&format!("-t 1 -c 1 -n 10 --targets {} --html {}", jsonl.display(), html.display())));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<td data-metric=\"target_requests\">5</td>").count(), 2, "{page}");
    let log = logged(&mut nginx);
    assert_eq!(log.len(), 212);
    assert!(log.iter().all(|r| (r.0 == "POST" && r.1 == "/p" && r.2 == "5") || (r.0 == "GET" && r.1 == "/g")));
}

#[test]
fn a_bad_targets_file_is_one_line_and_nothing_is_sent() {
    let server = crate::harness::FakeServer::serving(|_| {});
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let bad_line = write("bad.txt", &format!("GET {url}\nno colon\n"));
    let two_hosts = write("two.txt", &format!("GET {url}\n\nGET http://127.0.0.2:9/\n"));
    let two_schemes = write("schemes.txt", &format!("GET {url}\n\nGET https://127.0.0.2:9/\n"));
    let rows = [
        (
            vec!["--targets", &bad_line],
            format!("{bad_line}:2: expected a header 'Name: value' or '@body', found 'no colon'"),
        ),
        (
            vec!["--targets", &two_hosts, "-t", "2", "-c", "3"],
            "the targets name 2 servers: each thread needs a connection to each (-c at least 4 with -t 2)".into(),
        ),
        (
            vec!["--targets", &two_hosts, "-c", "2", "-t", "1", "--segment", "0/2"],
            "the targets name 2 servers: each thread needs a connection to each (-c at least 4 with -t 1 and 2 segments)"
                .into(),
        ),
        (
            vec!["--targets", &two_hosts, "-c", "2", "-t", "1", "--unix-socket", "/tmp/x.sock"],
            "--unix-socket reaches one server; the targets name 2".into(),
        ),
        (
            vec!["--targets", &two_schemes, "-c", "2", "-t", "1"],
            format!("the targets mix {} and https://127.0.0.2:9: one scheme", url.trim_end_matches('/')),
        ),
        (
            vec!["http://127.0.0.3:9/", "--targets", &two_hosts, "-c", "2", "-t", "1"],
            "no target is on http://127.0.0.3:9 (the URL's server)".into(),
        ),
        (vec!["--targets", "/no/such/targets"], "cannot read /no/such/targets".to_string()),
        (vec!["--targets", &bad_line, "-X", "POST"], "cannot be used with".to_string()),
    ];
    for (a, want) in rows {
        let run = strain_raw(&a);
        assert_eq!(run.code, 2, "{a:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{a:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("strain: ") && run.stderr.contains(&want), "{a:?}: {}", run.stderr);
    }
    assert_eq!(server.connections(), 0);
}

/// Real vegeta, built by the test command (scripts/test.sh) into target/go-bin.
fn vegeta() -> std::path::PathBuf {
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/go-bin/vegeta");
    let path = std::env::var_os("STRAIN_TEST_VEGETA").map_or(built, std::path::PathBuf::from);
    assert!(path.exists(), "{} is missing: scripts/test.sh builds it", path.display());
    path
}

/// (method, path) -> requests, from one nginx's log.
fn per_path(nginx: &mut Nginx) -> std::collections::BTreeMap<(String, String), u64> {
    let mut seen = std::collections::BTreeMap::new();
    for (m, path, _, _, status) in logged(nginx) {
        assert_eq!(status, 200);
        *seen.entry((m, path)).or_insert(0) += 1;
    }
    seen
}

#[test]
fn targets_on_two_hosts_go_round_robin_as_vegeta_sends_them() {
    let _alone = exclusive();
    let (dir, body) = temp_file("body.txt", "hello");
    // Five targets on two servers, request lines one after another as vegeta allows.
    let file = dir.path().join("targets.txt");
    let run_on_both = |h2: bool, what: &dyn Fn(&str) -> (i32, String)| {
        let (mut a, mut b) = (nginx(h2), nginx(h2));
        let (ua, ub) = (format!("http://127.0.0.1:{}", a.port), format!("http://127.0.0.1:{}", b.port));
        std::fs::write(
            &file,
            format!(
                "GET {ua}/one\nPOST {ub}/two\n@{body}\n\nGET {ua}/three\nX-A: 1\n\nDELETE {ub}/four\nGET {ua}/five\n"
            ),
        )
        .unwrap();
        let (code, err) = what(file.to_str().unwrap());
        assert_eq!(code, 0, "{err}");
        (per_path(&mut a), per_path(&mut b))
    };
    let want_a: std::collections::BTreeMap<_, _> = [("GET", "/five"), ("GET", "/one"), ("GET", "/three")]
        .map(|(m, p)| ((m.to_string(), p.to_string()), 200))
        .into();
    let want_b: std::collections::BTreeMap<_, _> =
        [("DELETE", "/four"), ("POST", "/two")].map(|(m, p)| ((m.to_string(), p.to_string()), 200)).into();
    // strain, closed loop and at a rate, over HTTP/1.1 and HTTP/2: 1,000 requests, 200 each.
    for flags in ["-t 2 -c 4 -n 1000", "-t 2 -c 4 -n 1000 -R 2000", "-t 1 -c 2 -n 1000 --http2 -m 4"] {
        let (a, b) = run_on_both(flags.contains("http2"), &|f| {
            let run = strain(&args(&format!("{flags} --targets {f}")));
            (run.code, run.stderr)
        });
        assert_eq!((&a, &b), (&want_a, &want_b), "{flags}");
    }
    // Real vegeta, the same file: 500/s for 2 s is 1,000 requests, and the same counts.
    let (a, b) = run_on_both(false, &|f| {
        let out = std::process::Command::new(vegeta())
            .args(["attack", "-targets", f, "-rate", "500/1s", "-duration", "2s", "-output", "/dev/null"])
            .output()
            .unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
    });
    assert_eq!((&a, &b), (&want_a, &want_b), "vegeta");
}

#[test]
fn a_targets_failed_requests_are_counted_against_it() {
    // nginx's 444 closes the connection without a response: each /drop request fails.
    let server = "access_log requests.log reqs; location /drop { return 444; } location / { return 200 \"ok\\n\"; }";
    let mut nginx = Nginx::start_with_http(LOG, server);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("targets.txt");
    let base = format!("http://127.0.0.1:{}", nginx.port);
    std::fs::write(&file, format!("GET {base}/ok\nGET {base}/drop\n")).unwrap();
    let run = strain(&args(&format!("-t 1 -c 2 -n 100 --targets {}", file.display())));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let targets = run.json.as_ref().unwrap()["targets"].as_array().unwrap().clone();
    let got: Vec<(u64, u64)> =
        targets.iter().map(|t| (t["requests"].as_u64().unwrap(), t["errors"].as_u64().unwrap())).collect();
    assert_eq!(got, [(50, 0), (0, 50)]);
    assert!(run.stdout.contains("         0        50"), "{}", run.stdout);
    assert_eq!(logged(&mut nginx).len(), 100);
}

#[test]
fn minus_n_against_a_closed_port_ends_after_the_timeout() {
    let port = crate::harness::free_port();
    let start = std::time::Instant::now();
    let run = strain_raw(&["-t", "1", "-c", "2", "-n", "10", "-T", "500ms", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(start.elapsed() < std::time::Duration::from_secs(3), "{:?}", start.elapsed());
}

#[test]
fn a_large_body_file_arrives_whole_over_http_and_https_closed_loop_and_paced() {
    // Plain HTTP/1.1 sends a body this large by reference from a memory file (sendfile); TLS
    // encrypts it from memory. nginx's WebDAV PUT stores each body: the stored file must be the
    // body, byte for byte, and every request nginx logged must have carried all of it.
    let _alone = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.bin");
    let bytes: Vec<u8> = (0..(1u32 << 20) + 3).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    let body = file.to_str().unwrap();
    // wrk's way: the body read by the script, sent as the fixed request.
    let (_lua_dir, lua) = script(&format!(
        "wrk.method = \"PUT\"\nlocal f = io.open(\"{body}\", \"rb\")\nwrk.body = f:read(\"*a\")\nf:close()\n"
    ));
    let put = format!("-X PUT --body-file {body}");
    let scripted = format!("-s {lua}");
    let rows = [
        (false, "-t 2 -c 4 -d 500ms", &put),
        (false, "-t 1 -c 2 -R 40 -d 1s", &put),
        (false, "-t 1 -c 2 -d 500ms", &scripted),
        (true, "-t 1 -c 2 -d 500ms", &put),
    ];
    for (tls, flags, how) in rows {
        // nginx's workers (nobody, under a root master) store the bodies: a directory they may write.
        let store = tempfile::tempdir().unwrap();
        std::fs::set_permissions(store.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let server = format!(
            "access_log requests.log reqs; client_max_body_size 4m; client_body_temp_path {0}; \
             location / {{ root {0}; dav_methods PUT; }}",
            store.path().display()
        );
        let mut nginx = Nginx::start_http1(LOG, &server, tls);
        let url = format!("{}up.bin", nginx.url());
        let mut a = args(flags);
        a.extend(args(how));
        a.extend(["-k", &url]);
        let run = strain(&a);
        assert_eq!(run.code, 0, "{flags}: {}", run.stderr);
        let requests = run.num("/requests");
        assert!(requests >= 10, "{flags}: {requests}");
        let log = logged(&mut nginx);
        assert_eq!(log.len() as u64, requests, "{flags}: every response strain counted is one nginx logged");
        let head = log[0].3 - bytes.len() as u64;
        for (m, path, cl, length, status) in &log {
            assert_eq!((m.as_str(), path.as_str()), ("PUT", "/up.bin"), "{flags}");
            assert_eq!(cl.parse::<usize>().unwrap(), bytes.len(), "{flags}");
            assert!(matches!(status, 201 | 204), "{flags}: {status}");
            assert_eq!(*length, head + bytes.len() as u64, "{flags}: the whole body came");
        }
        assert!(head < 200, "{flags}: {head}");
        let stored = std::fs::read(store.path().join("up.bin")).unwrap();
        assert!(stored == bytes, "{flags}: the stored body differs from the file sent");
    }
}
