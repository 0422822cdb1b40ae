//! grpc-go's own servers as the gRPC tests' peer: tests/servers/grpc-go, built by
//! scripts/test.sh (or `eval "$(bash scripts/grpc-servers.sh)"`), serves grpc-go's examples'
//! helloworld Greeter and RouteGuide with reflection, and answers `GET /counts` on an admin
//! port with what it saw, for a test to set beside strain's own counts. What each method does
//! with which request, and the document's shape, are told in tests/servers/grpc-go.
//!
//! The server listens on loopback port 0 and is killed on drop; its standard input is a pipe
//! held here, so it also exits when the test binary dies without dropping it.

use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long [`GoGrpc::counts`] waits for calls strain has finished to end on the server too:
/// grpc-go closes its books on a call just after the client has its answer.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

fn env_path(name: &str) -> PathBuf {
    let Some(path) = std::env::var_os(name) else {
        panic!(
            "{name} is not set: run scripts/test.sh, or `eval \"$(bash scripts/grpc-servers.sh)\"` \
             before cargo test (it builds grpc-go's test servers into target/)"
        );
    };
    PathBuf::from(path)
}

/// The grpc-servers binary.
pub fn server_bin() -> PathBuf {
    env_path("STRAIN_TEST_GRPC_SERVERS")
}

/// The directory holding helloworld.proto and route_guide.proto as grpc-go's examples ship
/// them (route_guide.proto is written in edition 2023).
pub fn protos_dir() -> PathBuf {
    env_path("STRAIN_TEST_GRPC_PROTOS")
}

/// The descriptor set compiled into the server (route_guide's file in edition 2023).
pub fn protoset() -> PathBuf {
    protos_dir().join("servers.protoset")
}

/// A grpc-servers process (or another counting gRPC server: [`GoGrpc::spawn`]).
pub struct GoGrpc {
    child: Child,
    /// Held open: the server exits when it closes.
    stdin: Option<ChildStdin>,
    stderr: std::fs::File,
    /// Where it serves gRPC (h2c, or TLS with `-self-signed` or `-tls-cert`).
    pub addr: SocketAddr,
    /// Its admin HTTP/1.1 port.
    pub admin: SocketAddr,
}

impl GoGrpc {
    /// Starts the servers on loopback port 0 with extra flags (a later `-addr` wins).
    pub fn start(args: &[&str]) -> GoGrpc {
        let mut command = Command::new(server_bin());
        command.args(["-addr", "127.0.0.1:0", "-admin", "127.0.0.1:0"]).args(args);
        GoGrpc::spawn(command, &format!("grpc-servers {args:?}"))
    }

    /// Starts `command`, a gRPC server that counts as grpc-servers does (another language's,
    /// in grpc_languages.rs): it prints `listening ADDR admin ADDR` first and answers
    /// `GET /counts` and `GET /reset` on its admin port; `name` says which in failures.
    pub fn spawn(mut command: Command, name: &str) -> GoGrpc {
        let stderr = tempfile::tempfile().unwrap();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr.try_clone().unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stdin = child.stdin.take();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let words: Vec<&str> = first.split_whitespace().collect();
        let said = match words[..] {
            ["listening", addr, "admin", admin] => addr.parse().ok().zip(admin.parse().ok()),
            _ => None,
        };
        let Some((addr, admin)) = said else {
            // Not left running after the test fails.
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} said {first:?}; stderr: {}", read_from_start(&stderr));
        };
        GoGrpc { child, stdin, stderr, addr, admin }
    }

    /// Its h2c URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What the server said on stderr so far (nothing, unless something went wrong).
    pub fn stderr_text(&self) -> String {
        read_from_start(&self.stderr)
    }

    /// Closes the server's stdin, as a test binary's death does, and waits for it to exit.
    pub fn hang_up(&mut self) {
        drop(self.stdin.take());
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < SETTLE_LIMIT, "the server outlived its stdin");
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// `/counts` once no call is active any more (see [`SETTLE_LIMIT`]).
    pub fn counts(&self) -> serde_json::Value {
        let start = Instant::now();
        loop {
            let counts = self.counts_now();
            if count(&counts, "/active") + count(&counts, "/reflection/active") == 0 {
                return counts;
            }
            if start.elapsed() > SETTLE_LIMIT {
                panic!("calls still active after {SETTLE_LIMIT:?}: {counts}; stderr: {}", self.stderr_text());
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// `/counts` as it is now, calls in flight included.
    pub fn counts_now(&self) -> serde_json::Value {
        let body = self.admin_get("/counts");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("bad /counts ({e}): {body}"))
    }

    /// Zeroes the counts.
    pub fn reset(&self) {
        self.admin_get("/reset");
    }

    /// The body of the admin port's answer to GET `path`.
    fn admin_get(&self, path: &str) -> String {
        let mut s = TcpStream::connect(self.admin).unwrap_or_else(|e| panic!("admin {}: {e}", self.admin));
        s.set_read_timeout(Some(SETTLE_LIMIT)).unwrap();
        // HTTP/1.0 so that the answer has no chunked framing to undo and ends at close.
        write!(s, "GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.admin).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        // Another library's HTTP server may answer in HTTP/1.1.
        assert!(head.contains(" 200 "), "GET {path}: {answer}; stderr: {}", self.stderr_text());
        body.to_string()
    }
}

fn read_from_start(mut file: &std::fs::File) -> String {
    let mut text = String::new();
    file.rewind().unwrap();
    let _ = file.read_to_string(&mut text);
    text
}

impl Drop for GoGrpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The number at `pointer` in a `/counts` document; 0 where the document has none (it lists
/// only the methods and status codes it saw).
pub fn count(counts: &serde_json::Value, pointer: &str) -> u64 {
    match counts.pointer(pointer) {
        None => 0,
        Some(v) => v.as_u64().unwrap_or_else(|| panic!("{pointer} is not a count in {counts}")),
    }
}

/// The figures of one method by its full name (`/helloworld.Greeter/SayHello`), for
/// [`count`]: Null when the server saw no call of it.
pub fn method<'a>(counts: &'a serde_json::Value, full_name: &str) -> &'a serde_json::Value {
    &counts["methods"][full_name]
}

#[test]
fn the_go_servers_start_and_count() {
    let mut server = GoGrpc::start(&[]);
    assert!(server.addr.ip().is_loopback() && server.admin.ip().is_loopback());
    let counts = server.counts();
    for pointer in ["/calls", "/received", "/sent", "/connections", "/reflection/calls"] {
        assert_eq!(count(&counts, pointer), 0, "{pointer}: {counts}");
    }
    assert_eq!(count(method(&counts, "/helloworld.Greeter/SayHello"), "/calls"), 0);
    server.reset();

    for file in ["helloworld.proto", "route_guide.proto"] {
        assert!(protos_dir().join(file).exists(), "{} has no {file}", protos_dir().display());
    }
    // route_guide as grpc-go ships it, in edition 2023: its descriptor set and its source
    // read as the same services.
    let route_guide = std::fs::read_to_string(protos_dir().join("route_guide.proto")).unwrap();
    assert!(route_guide.contains("edition = \"2023\";"), "route_guide.proto is no longer in editions");
    let from_set = strain::grpc::schema::from_protoset(&protoset()).unwrap();
    let from_source = strain::grpc::schema::compile(&[protos_dir().join("route_guide.proto")], &[]).unwrap();
    for pool in [&from_set, &from_source] {
        let route = pool.get_service_by_name("routeguide.RouteGuide").expect("RouteGuide");
        assert_eq!(route.methods().count(), 4);
    }
    assert_eq!(strain::grpc::schema::services(&from_set), ["helloworld.Greeter", "routeguide.RouteGuide"]);

    server.hang_up();
    assert_eq!(server.stderr_text(), "");
}
