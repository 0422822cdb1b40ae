//! wrk's nine example scripts, as Debian's wrk package installs them, run unchanged by wrk and
//! by strain against the same kind of loopback server; each test asserts that both show the
//! same observable behaviour (what the server saw, what the script printed, the exit code).
//! The few places where strain differs on purpose are asserted as such, with the reason.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::{exclusive, run_program, script, strain, strain_raw, RecordingServer, Run, Seen};

/// Where Debian puts wrk's example scripts (`.lua`, or `.lua.gz` when the packager compressed them).
const EXAMPLE_DIRS: [&str; 2] = ["/usr/share/doc/wrk/examples/scripts", "/usr/share/wrk/scripts"];
/// The wrk binary of Debian's package.
const WRK: &str = "/usr/bin/wrk";
/// What to do when wrk or its scripts are missing.
const INSTALL_HINT: &str = "wrk and its example scripts are needed: apt-get install wrk";

/// One example script as a plain `.lua` file (decompressed into `dir` when it is gzipped).
fn example(name: &str, dir: &Path) -> String {
    example_in(&EXAMPLE_DIRS, name, dir)
}

/// [`example`], looking in `dirs`.
fn example_in(dirs: &[&str], name: &str, dir: &Path) -> String {
    for base in dirs {
        let plain = Path::new(base).join(format!("{name}.lua"));
        if plain.exists() {
            return plain.display().to_string();
        }
        let gz = Path::new(base).join(format!("{name}.lua.gz"));
        if gz.exists() {
            let out = std::process::Command::new("gzip").arg("-dc").arg(&gz).output().expect("run gzip");
            assert!(out.status.success(), "gzip -dc {}: {}", gz.display(), String::from_utf8_lossy(&out.stderr));
            let path: PathBuf = dir.join(format!("{name}.lua"));
            std::fs::write(&path, out.stdout).unwrap();
            return path.display().to_string();
        }
    }
    panic!("{name}.lua is in none of {dirs:?}: {INSTALL_HINT}");
}

/// Runs wrk with `args`.
fn wrk<S: AsRef<str>>(args: &[S]) -> Run {
    assert!(Path::new(WRK).exists(), "{WRK} is missing: {INSTALL_HINT}");
    run_program(WRK, args)
}

/// One example run by wrk and by strain, each against its own recording server.
struct Compared {
    w: Run,
    s: Run,
    to_wrk: RecordingServer,
    to_strain: RecordingServer,
}

/// Runs the example `name` with `flags` by wrk for 1 s (its shortest run), then by strain for
/// `strain_duration`, each against a new recording server named by `host` (`127.0.0.1` or
/// `localhost`). Both must exit 0, and each tool's count must agree with what its server saw:
/// strain waits for every request it sent; wrk does not count those unanswered when it stops.
fn compare(name: &str, flags: &[&str], strain_duration: &str, host: &str) -> Compared {
    let (to_wrk, to_strain) = (RecordingServer::start(), RecordingServer::start());
    let url = |server: &RecordingServer| format!("http://{host}:{}/", server.addr.port());
    let dir = tempfile::tempdir().unwrap();
    let path = example(name, dir.path());
    let run = |duration: &str, url: &str| -> Vec<String> {
        flags.iter().copied().chain(["-d", duration, "-s", &path, url]).map(String::from).collect()
    };
    let w = wrk(&run("1s", &url(&to_wrk)));
    let s = strain(&run(strain_duration, &url(&to_strain)).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(w.code, 0, "wrk: {}", w.stderr);
    assert_eq!(s.code, 0, "strain: {}", s.stderr);
    assert!(s.stderr.is_empty(), "strain: {}", s.stderr);
    assert_eq!(reported(&s), to_strain.seen().len() as u64, "strain");
    assert!(reported(&w) <= to_wrk.seen().len() as u64, "wrk: {} reported", reported(&w));
    Compared { w, s, to_wrk, to_strain }
}

/// The count in the report's `N requests in T, B read` line.
fn reported(run: &Run) -> u64 {
    let line = run.stdout.lines().find(|l| l.contains(" requests in ")).unwrap_or_else(|| panic!("{}", run.stdout));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

/// The lines a script printed before the report's first line and after its last.
fn script_lines(out: &str) -> (Vec<&str>, Vec<&str>) {
    let lines: Vec<&str> = out.lines().collect();
    let first = lines.iter().position(|l| l.starts_with("Running ")).unwrap_or_else(|| panic!("{out}"));
    let last = lines.iter().position(|l| l.starts_with("Transfer/sec:")).unwrap_or_else(|| panic!("{out}"));
    (lines[..first].to_vec(), lines[last + 1..].to_vec())
}

/// A request's headers as sorted `name: value` lines (names lowercased): wrk's order comes from
/// a Lua table's, which nothing promises.
fn header_set(r: &Seen) -> Vec<String> {
    let mut h: Vec<String> = r.headers.iter().map(|(n, v)| format!("{}: {v}", n.to_ascii_lowercase())).collect();
    h.sort();
    h
}

#[test]
fn post_lua_sends_the_same_post_with_its_body() {
    let Compared { to_wrk, to_strain, .. } = compare("post", &["-t", "1", "-c", "1"], "300ms", "127.0.0.1");
    let (by_wrk, by_strain) = (to_wrk.seen(), to_strain.seen());
    assert!(by_wrk.len() > 10 && by_strain.len() > 10, "{} {}", by_wrk.len(), by_strain.len());
    let host = |server: &RecordingServer| format!("host: {}", server.addr);
    for (seen, server) in [(&by_wrk, &to_wrk), (&by_strain, &to_strain)] {
        for r in seen.iter() {
            assert_eq!(
                (r.method.as_str(), r.path.as_str(), r.body.as_slice()),
                ("POST", "/", &b"foo=bar&baz=quux"[..])
            );
            let want = ["content-length: 16", "content-type: application/x-www-form-urlencoded", &host(server)];
            assert_eq!(header_set(r), want, "{r:?}");
        }
    }
}

#[test]
fn auth_lua_sends_the_token_from_the_first_response() {
    let Compared { to_wrk, to_strain, .. } = compare("auth", &["-t", "1", "-c", "1"], "300ms", "127.0.0.1");
    for seen in [to_wrk.seen(), to_strain.seen()] {
        assert!(seen.len() > 10, "{}", seen.len());
        assert_eq!((seen[0].path.as_str(), seen[0].header("X-Token")), ("/authenticate", None));
        for r in &seen[1..] {
            // The recording server answers /authenticate with "X-Token: tok13".
            assert_eq!((r.method.as_str(), r.path.as_str(), r.header("X-Token")), ("GET", "/resource", Some("tok13")));
        }
    }
}

#[test]
fn counter_lua_numbers_path_and_header_alike() {
    let Compared { to_wrk, to_strain, .. } = compare("counter", &["-t", "1", "-c", "1"], "300ms", "127.0.0.1");
    // wrk spends the script's first request() on counting pipelined requests and never sends
    // it, so its paths start at /1; strain sends that request first (docs/SCRIPTING.md).
    for (seen, first) in [(to_wrk.seen(), 1), (to_strain.seen(), 0)] {
        assert!(seen.len() > 10, "{}", seen.len());
        for (k, r) in seen.iter().enumerate() {
            let n = first + k;
            assert_eq!((r.path.clone(), r.header("X-Counter")), (format!("/{n}"), Some(n.to_string().as_str())));
        }
    }
}

#[test]
fn delay_lua_waits_10_to_50_ms_before_each_request() {
    let _alone = exclusive();
    let Compared { to_wrk, to_strain, .. } = compare("delay", &["-t", "1", "-c", "1"], "1s", "127.0.0.1");
    // One connection waiting 30 ms on average (math.random(10, 50)) makes about 33 requests
    // in a second; LuaJIT's unseeded generator gives both the same delays.
    let (by_wrk, by_strain) = (to_wrk.seen().len(), to_strain.seen().len());
    for (tool, n) in [("wrk", by_wrk), ("strain", by_strain)] {
        assert!((24..=45).contains(&n), "{tool}: {n} requests");
    }
    assert!(by_wrk.abs_diff(by_strain) <= 4, "wrk {by_wrk} strain {by_strain}");
}

#[test]
fn pipeline_lua_sends_three_requests_per_write() {
    let Compared { w, s, to_wrk, to_strain } = compare("pipeline", &["-t", "1", "-c", "2"], "300ms", "127.0.0.1");
    for seen in [to_wrk.seen(), to_strain.seen()] {
        assert!(seen.len() > 30, "{}", seen.len());
        for conn in 0..2 {
            let paths: Vec<&str> = seen.iter().filter(|r| r.conn == conn).map(|r| r.path.as_str()).collect();
            assert_eq!(paths.len() % 3, 0, "conn {conn}");
            for triple in paths.chunks(3) {
                assert_eq!(triple, ["/?foo", "/?bar", "/?baz"]);
            }
        }
    }
    // Each write is one latency sample, and every response in it counts.
    assert_eq!((reported(&w) % 3, reported(&s) % 3), (0, 0));
}

#[test]
fn report_lua_prints_percentiles_as_csv_after_the_report() {
    let Compared { w, s, .. } = compare("report", &["-t", "1", "-c", "1"], "300ms", "127.0.0.1");
    let csv = |run: &Run| -> Vec<(String, u64)> {
        let (before, after) = script_lines(&run.stdout);
        assert!(before.is_empty(), "{}", run.stdout);
        assert_eq!(after.len(), 5, "{}", run.stdout);
        assert_eq!(after[0], "------------------------------");
        after[1..]
            .iter()
            .map(|l| {
                let (p, v) = l.split_once(',').unwrap_or_else(|| panic!("{l}"));
                (p.to_string(), v.parse().unwrap_or_else(|_| panic!("{l}")))
            })
            .collect()
    };
    let (by_wrk, by_strain) = (csv(&w), csv(&s));
    let labels = |rows: &[(String, u64)]| rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
    assert_eq!(labels(&by_wrk), ["50%", "90%", "99%", "99.999%"]);
    assert_eq!(labels(&by_strain), labels(&by_wrk));
    for rows in [&by_wrk, &by_strain] {
        assert!(rows[0].1 > 0 && rows.windows(2).all(|p| p[0].1 <= p[1].1), "{rows:?}");
    }
    // strain's CSV comes from the histogram its JSON reports.
    let json: Vec<u64> = ["50", "90", "99"].iter().map(|p| s.num(&format!("/latency_us/percentiles/{p}"))).collect();
    assert_eq!(by_strain[..3].iter().map(|r| r.1).collect::<Vec<_>>(), json);
}

#[test]
fn setup_lua_numbers_threads_and_reads_their_counters_back() {
    let Compared { w, s, to_wrk, to_strain } = compare("setup", &["-t", "2", "-c", "2"], "300ms", "127.0.0.1");
    // request() returns wrk.request(): the URL's plain GET.
    for server in [&to_wrk, &to_strain] {
        let host = format!("host: {}", server.addr);
        assert!(server.seen().iter().all(|r| (r.method.as_str(), r.path.as_str()) == ("GET", "/")));
        assert!(server.seen().iter().all(|r| header_set(r) == [host.as_str()] && r.body.is_empty()));
    }
    let made = |line: &str, id: u64| -> (u64, u64) {
        let words: Vec<&str> = line.split(' ').collect();
        assert_eq!(words.len(), 9, "{line}");
        assert_eq!(
            (words[0], words[1], words[2], words[4], words[5], words[6], words[8]),
            ("thread", id.to_string().as_str(), "made", "requests", "and", "got", "responses"),
            "{line}"
        );
        (words[3].parse().unwrap(), words[7].parse().unwrap())
    };
    let mut per_tool = Vec::new();
    for run in [&w, &s] {
        // init() prints before the report's first line, done() after its last.
        let (before, after) = script_lines(&run.stdout);
        assert_eq!(before, ["thread 1 created", "thread 2 created"], "{}", run.stdout);
        assert_eq!(after.len(), 2, "{}", run.stdout);
        per_tool.push([made(after[0], 1), made(after[1], 2)]);
    }
    // wrk's first thread calls request() once more than it sends (to count pipelined
    // requests), and wrk leaves requests unanswered at the end; strain sends every request it
    // builds and waits for it.
    for (requests, responses) in per_tool[0] {
        assert!(responses > 0 && requests >= responses, "wrk: {requests} {responses}");
    }
    assert!(per_tool[0][0].0 > per_tool[0][0].1, "wrk: {:?}", per_tool[0]);
    for (requests, responses) in per_tool[1] {
        assert!(responses > 0 && requests == responses, "strain: {requests} {responses}");
    }
    assert_eq!(per_tool[1][0].1 + per_tool[1][1].1, reported(&s));
}

#[test]
fn stop_lua_stops_each_thread_at_its_100th_response() {
    let Compared { w, s, to_wrk, to_strain } = compare("stop", &["-t", "2", "-c", "2"], "1s", "127.0.0.1");
    assert_eq!((reported(&w), reported(&s)), (200, 200));
    assert_eq!((to_wrk.seen().len(), to_strain.seen().len()), (200, 200));
    // wrk sleeps out its duration; strain ends when every thread has stopped.
    assert!(s.elapsed < Duration::from_millis(900), "strain took {:?}", s.elapsed);
}

#[test]
fn addr_lua_gives_each_thread_an_address_that_connects() {
    // A host name, so wrk.lookup resolves it (to the one address loopback has here).
    let Compared { w, s, to_wrk, to_strain } = compare("addr", &["-t", "2", "-c", "2"], "300ms", "localhost");
    for (run, server) in [(&w, &to_wrk), (&s, &to_strain)] {
        let line = format!("thread addr: 127.0.0.1:{}", server.addr.port());
        let (before, after) = script_lines(&run.stdout);
        assert_eq!(before, [line.as_str(), line.as_str()], "{}", run.stdout);
        assert!(after.is_empty(), "{}", run.stdout);
    }
    assert_eq!(s.num("/errors/connect"), 0);
}

/// Regression (the issue that brought these tests): a request() that fails, before any
/// connection, printed a misleading "no connection to … succeeded" line next to the error.
#[test]
fn a_failing_request_hook_prints_the_script_error_alone() {
    let server = RecordingServer::start();
    let (_d, path) = script("function request()\n  error('no request today')\nend\n");
    let run = strain_raw(&["-t", "2", "-c", "2", "-d", "1s", "-s", &path, &server.url()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let first = run.stderr.lines().next().unwrap_or_default();
    assert_eq!(first, format!("strain: script error in request(): {path}:2: no request today"));
    assert!(run.stderr.lines().skip(1).all(|l| l == "stack traceback:" || l.starts_with('\t')), "{}", run.stderr);
    assert!(server.seen().is_empty());
}

#[test]
fn a_gzipped_example_is_found_and_unpacked() {
    let packaged = tempfile::tempdir().unwrap();
    let lua = packaged.path().join("post.lua");
    std::fs::write(&lua, "wrk.method = \"POST\"\n").unwrap();
    let gzip = std::process::Command::new("gzip").arg(&lua).status().expect("run gzip");
    assert!(gzip.success() && !lua.exists());
    let unpacked = tempfile::tempdir().unwrap();
    let found = example_in(&[packaged.path().to_str().unwrap()], "post", unpacked.path());
    assert_eq!(found, unpacked.path().join("post.lua").display().to_string());
    assert_eq!(std::fs::read_to_string(&found).unwrap(), "wrk.method = \"POST\"\n");
    let missing = std::panic::catch_unwind(|| example_in(&["/nonexistent"], "post", unpacked.path()));
    let message = missing.unwrap_err().downcast::<String>().unwrap();
    assert!(message.ends_with("apt-get install wrk"), "{message}");
}
