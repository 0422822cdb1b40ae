//! Issue 41: access logs that real servers write with their default settings replay without
//! flags. nginx (combined, and its packages' `main`), Apache httpd (Debian's `combined`,
//! `vhost_combined` and `common`), Caddy (its JSON `log`) and HAProxy (`option httplog` to
//! stdout, with its syslog header) each log a known pattern of requests and a TLS handshake
//! sent to their plain port; each log, detected, replays against `strain origin` with the same
//! count and against a recording server with the same request lines, the handshake skipped as
//! no HTTP request.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{free_port, signal_group, strain, Origin, RecordingServer};
use crate::roster::{listening, site_dir, start_apache, start_caddy, start_nginx};

/// The requests each server is sent: several paths, queries, an escaped byte and a quote.
fn pattern() -> Vec<String> {
    let mut p: Vec<String> = (0..12).map(|k| format!("/a?i={k}")).collect();
    p.extend(["/", "/b/c%20d", "/search?q=x&y=%22z%22", "/caf%C3%A9", "/a?i=0"].map(String::from));
    p.extend((0..5).map(|k| format!("/d/{k}/e.html")));
    p
}

/// The start of a TLS ClientHello, sent where plain HTTP is expected (servers log it as a 400).
/// Its random bytes hold a line feed, which ends the "request line" Apache waits for.
const TLS_HELLO: &[u8] = b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\x8f\x0a\xd1\x02";

/// Sends each request of `pattern` to `port` on a connection of its own, read to its end, then
/// (with `junk`) the TLS bytes.
fn play(port: u16, pattern: &[String], junk: bool) {
    for target in pattern {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let request = format!(
            "GET {target} HTTP/1.1\r\nHost: logs.test\r\nUser-Agent: pattern/1 (\"replay\")\r\nConnection: close\r\n\r\n"
        );
        s.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        assert!(answer.starts_with(b"HTTP/1.1 "), "{target}: {}", String::from_utf8_lossy(&answer));
    }
    if junk {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(TLS_HELLO).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    }
}

/// Waits until `log` holds at least `lines` lines (servers write after answering).
fn wait_lines(log: &Path, lines: usize) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().filter(|l| !l.trim().is_empty()).count() >= lines {
            return text;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{} has {text:?}", log.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Replays `log` (which should be detected as `layout`) against `strain origin` and a recording
/// server: strain sends every request of `pattern`, the origin counts them all, the recording
/// server sees the same request lines, and `not_http` lines were skipped as such.
fn replays_as_played(log: &Path, layout: &str, pattern: &[String], not_http: u64) {
    let file = log.display().to_string();
    let replay =
        |url: &str| strain(&["replay", "--speed", "1000", "--max-gap", "100ms", "-c", "4", "-t", "1", &file, url]);

    let origin = Origin::start(&["-t", "1"]);
    let run = replay(&origin.url());
    assert_eq!(run.code, 0, "{file}: {}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(&format!("({layout})")), "{file} not read as {layout}: {}", run.stdout);
    let sent = pattern.len() as u64;
    run.assert_nums(&[("/requests", sent), ("/replay/counts/not_http", not_http), ("/replay/counts/bad", 0)]);
    assert_eq!(origin.stop().requests, sent, "{file}");

    let recorder = RecordingServer::start();
    let run = replay(&recorder.url());
    assert_eq!(run.code, 0, "{file}: {}{}", run.stdout, run.stderr);
    let mut seen: Vec<String> = recorder.seen().into_iter().map(|s| format!("{} {}", s.method, s.path)).collect();
    let mut want: Vec<String> = pattern.iter().map(|t| format!("GET {t}")).collect();
    seen.sort();
    want.sort();
    assert_eq!(seen, want, "{file}");
}

/// Once `port` listens, plays the pattern with the TLS bytes to it; then each of `logs` (a file
/// in `dir` and the layout it should be detected as) replays as played, the handshake its one
/// line that is no HTTP request.
fn logs_replay_as_played(dir: &Path, port: u16, logs: &[(&str, &str)]) {
    listening(&[port]);
    let pattern = pattern();
    play(port, &pattern, true);
    for &(log, layout) in logs {
        let log = dir.join(log);
        wait_lines(&log, pattern.len() + 1);
        replays_as_played(&log, layout, &pattern, 1);
    }
}

/// A server process group, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        signal_group(self.0.id(), "KILL");
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn nginx_combined_and_packaged_main() {
    let (dir, d) = site_dir();
    let port = free_port();
    // `main` as nginx.org's packages define it in /etc/nginx/nginx.conf; `access_log` without
    // a format is combined.
    let http = format!(
        "log_format  main  '$remote_addr - $remote_user [$time_local] \"$request\" '\n\
                             '$status $body_bytes_sent \"$http_referer\" '\n\
                             '\"$http_user_agent\" \"$http_x_forwarded_for\"';\n\
           server {{ listen 127.0.0.1:{port}; access_log {d}/main.log main; access_log {d}/combined.log;\n\
             location / {{ return 200 \"ok\\n\"; }} }}\n"
    );
    let _nginx = Running(start_nginx(dir.path(), &http));
    logs_replay_as_played(dir.path(), port, &[("combined.log", "combined"), ("main.log", "combined+")]);
}

#[test]
fn apache_combined_vhost_combined_and_common() {
    let (dir, d) = site_dir();
    let port = free_port();
    // The LogFormat lines of Debian's apache2.conf, as they are.
    let conf = format!(
        "Listen 127.0.0.1:{port}\nDocumentRoot {d}/www\n\
         RewriteEngine on\nRewriteRule ^ - [R=200]\n\
         LogFormat \"%v:%p %h %l %u %t \\\"%r\\\" %>s %O \\\"%{{Referer}}i\\\" \\\"%{{User-Agent}}i\\\"\" vhost_combined\n\
         LogFormat \"%h %l %u %t \\\"%r\\\" %>s %O \\\"%{{Referer}}i\\\" \\\"%{{User-Agent}}i\\\"\" combined\n\
         LogFormat \"%h %l %u %t \\\"%r\\\" %>s %O\" common\n\
         CustomLog {d}/vhost.log vhost_combined\nCustomLog {d}/combined.log combined\nCustomLog {d}/common.log common\n"
    );
    let _apache = Running(start_apache(dir.path(), &["rewrite"], &conf));
    let logs = [("combined.log", "combined"), ("vhost.log", "vhost_combined"), ("common.log", "common")];
    logs_replay_as_played(dir.path(), port, &logs);
}

#[test]
fn caddy_json_log() {
    let (dir, d) = site_dir();
    let port = free_port();
    // `log` with an output file and nothing else: Caddy's default encoder there is JSON.
    let config = format!(
        "{{\n\tadmin off\n\tauto_https off\n}}\n\
         http://:{port} {{\n\tbind 127.0.0.1\n\trespond \"ok\" 200\n\tlog {{\n\t\toutput file {d}/access.log\n\t}}\n}}\n"
    );
    let _caddy = Running(start_caddy(dir.path(), &config));
    listening(&[port]);
    let pattern = pattern();
    // Go's server answers a TLS handshake on a plain port itself, without an access log entry.
    play(port, &pattern, false);
    let log = dir.path().join("access.log");
    wait_lines(&log, pattern.len());
    replays_as_played(&log, "caddy", &pattern, 0);
}

#[test]
fn haproxy_httplog_on_stdout() {
    let (dir, d) = site_dir();
    let port = free_port();
    // `log stdout` writes RFC 3164 syslog lines (`<134>Nov 29 05:55:15 haproxy[31886]: …`);
    // without `dontlognull`, a connection that sent nothing (the probe that waits for the
    // port) is logged too, as `<BADREQ>`.
    let conf = format!(
        "global\n  log stdout local0\n\
         defaults\n  mode http\n  log global\n  option httplog\n\
           timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
         frontend site\n  bind 127.0.0.1:{port}\n  http-request return status 200 content-type text/plain string ok\n"
    );
    std::fs::write(dir.path().join("haproxy.cfg"), conf).unwrap();
    let log: PathBuf = dir.path().join("access.log");
    let mut command = Command::new("haproxy");
    command
        .args(["-f", &format!("{d}/haproxy.cfg"), "-db"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.path().join("server.err")).unwrap());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let _haproxy = Running(command.spawn().expect("haproxy starts"));
    listening(&[port]);
    let pattern = pattern();
    play(port, &pattern, true);
    let text = wait_lines(&log, pattern.len() + 2);
    let not_http = text.lines().filter(|l| l.ends_with("\"<BADREQ>\"")).count() as u64;
    assert!(not_http >= 1, "{text}");
    replays_as_played(&log, "haproxy", &pattern, not_http);
}
