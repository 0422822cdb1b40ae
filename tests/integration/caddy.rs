//! Caddy (Debian's, installed by the test command) as a real HTTP/3 server: it serves h1, h2 and
//! h3 on one port number (TCP and UDP), with a certificate for `localhost` made here, and
//! writes a JSON access log whose lines name the protocol (`"proto":"HTTP/3.0"`). Its QUIC side
//! picks its certificate by SNI, which a client sends only for a host name: `default_sni` lets
//! `https://127.0.0.1:PORT` (no SNI) in too.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// A Caddy server on `localhost:port`, stopped on drop.
pub struct Caddy {
    child: Child,
    dir: tempfile::TempDir,
    /// Its port, TCP and UDP.
    pub port: u16,
}

/// The caddy binary, installed by `.ci/run`.
fn caddy_bin() -> PathBuf {
    let p = PathBuf::from("/usr/bin/caddy");
    assert!(p.exists(), "caddy is not installed: run `bash .ci/run` (it installs it) or `apt-get install -y caddy`");
    p
}

impl Caddy {
    /// Caddy answering every request with `site` (Caddyfile directives), on loopback.
    pub fn start(site: &str) -> Caddy {
        let port = crate::harness::free_port();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (cert, key) = crate::harness::self_signed(d, &["localhost"]);
        let config = format!(
            "{{\n\tadmin off\n\tdefault_sni localhost\n\tauto_https off\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n\
             https://localhost:{port}, https://127.0.0.1:{port} {{\n\ttls {cert} {key}\n\t{site}\n\tlog {{\n\t\toutput file {d}/access.log\n\t\tformat json\n\t}}\n}}\n",
            d = d.display()
        );
        std::fs::write(d.join("Caddyfile"), config).unwrap();
        let log = std::fs::File::create(d.join("caddy.log")).unwrap();
        let child = Command::new(caddy_bin())
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(d.join("Caddyfile"))
            .env("HOME", d)
            .env("XDG_DATA_HOME", d)
            .env("XDG_CONFIG_HOME", d)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start caddy");
        let caddy = Caddy { child, dir, port };
        let start = Instant::now();
        while !caddy.log_text().contains("serving initial configuration") {
            assert!(start.elapsed() < Duration::from_secs(10), "caddy did not start: {}", caddy.log_text());
            thread::sleep(Duration::from_millis(20));
        }
        caddy
    }

    /// Its URL for `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("caddy.log")).unwrap_or_default()
    }

    /// The access log's entries once it stops growing: (protocol, method, uri, remote port).
    pub fn requests(&self) -> Vec<(String, String, String, String)> {
        let s = |v: &serde_json::Value, k: &str| v["request"][k].as_str().unwrap_or_default().to_string();
        self.entries().iter().map(|v| (s(v, "proto"), s(v, "method"), s(v, "uri"), s(v, "remote_port"))).collect()
    }

    /// Each request's client address and port, once the access log stops growing.
    pub fn clients(&self) -> Vec<(String, String)> {
        let s = |v: &serde_json::Value, k: &str| v["request"][k].as_str().unwrap_or_default().to_string();
        self.entries().iter().map(|v| (s(v, "remote_ip"), s(v, "remote_port"))).collect()
    }

    fn entries(&self) -> Vec<serde_json::Value> {
        let path = self.dir.path().join("access.log");
        let mut last = usize::MAX;
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.len() == last {
                return text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            }
            last = text.len();
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// Requests Caddy served over HTTP/3.
    pub fn h3_requests(&self) -> u64 {
        self.requests().iter().filter(|r| r.0 == "HTTP/3.0").count() as u64
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
