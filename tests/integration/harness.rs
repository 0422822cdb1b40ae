//! Test harness: runs the real `strain` binary, its origin server, nginx, and tiny raw TCP
//! servers that misbehave on purpose. Everything binds 127.0.0.1 on port 0 (or a port just
//! freed) and every child is killed on drop, so no test can leave a server behind or hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Longest any single strain invocation may take before the test fails.
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_strain")
}

/// A finished strain process.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The `--json` file, when the run wrote one.
    pub json: Option<serde_json::Value>,
    /// strain's warning that the server shares its CPUs, taken out of `stderr`: most servers
    /// in these tests run unpinned beside strain, so most runs say it (diagnoses.rs tests it).
    pub shared_cpus_said: Vec<String>,
}

/// The words of strain's shared-CPUs warning (see [`Run::shared_cpus_said`]).
pub const SHARED_CPUS: &str = ", as strain's threads do: each takes CPU time from the other";

impl Run {
    /// A field of the JSON result, as u64.
    pub fn num(&self, pointer: &str) -> u64 {
        let json = self.json.as_ref().unwrap_or_else(|| panic!("no JSON; stderr: {}", self.stderr));
        json.pointer(pointer).and_then(|v| v.as_u64()).unwrap_or_else(|| panic!("no {pointer} in {json}"))
    }

    /// Asserts the JSON result's numbers at the pointers of `want` (as for [`Run::num`]) are
    /// its values, all named in one failure.
    pub fn assert_nums(&self, want: &[(&str, u64)]) {
        let got: Vec<(&str, u64)> = want.iter().map(|&(pointer, _)| (pointer, self.num(pointer))).collect();
        assert_eq!(got, want, "{}", self.stdout);
    }
}

/// Loads started by tests share the machine's two cores. Timing-sensitive tests hold this lock
/// exclusively (see [`exclusive`]); every other strain run holds it shared.
static LOAD: std::sync::RwLock<()> = std::sync::RwLock::new(());

thread_local! {
    static EXCLUSIVE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs the calling test alone: no other test's strain runs while the guard lives.
pub fn exclusive() -> impl Drop {
    struct Guard(#[allow(dead_code)] std::sync::RwLockWriteGuard<'static, ()>);
    impl Drop for Guard {
        fn drop(&mut self) {
            EXCLUSIVE.with(|e| e.set(false));
        }
    }
    let g = LOAD.write().unwrap_or_else(|p| p.into_inner());
    EXCLUSIVE.with(|e| e.set(true));
    Guard(g)
}

/// A command line written as one string, split at spaces (no argument here holds one).
pub fn args(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs strain with `args` plus `--json FILE`, waiting at most [`RUN_LIMIT`].
pub fn strain(args: &[&str]) -> Run {
    strain_under(&[], args)
}

/// [`strain`] started by `wrapper`, a program and its arguments that run the command line
/// after them (taskset, a shell that joins a cgroup first); strain itself when it is empty.
pub fn strain_under(wrapper: &[&str], args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("out.json").display().to_string();
    let (program, before) = match wrapper.split_first() {
        Some((program, rest)) => (*program, [rest, &[bin()]].concat()),
        None => (bin(), vec![]),
    };
    let mut run = run_program(program, &[&before, args, &["--json", &json_path]].concat());
    if let Ok(text) = std::fs::read_to_string(&json_path) {
        run.json = Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON {e}: {text}")));
    }
    run
}

/// Runs strain with the flags in `line` against `url` (see [`strain`]).
pub fn strain_at(line: &str, url: &str) -> Run {
    let mut a = args(line);
    a.push(url);
    strain(&a)
}

/// [`strain_at`], expecting exit 0.
pub fn load(line: &str, url: &str) -> Run {
    let run = strain_at(line, url);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

/// Asserts a clean run: exit 0, none of the `errors` (kinds of the JSON's `errors`) counted,
/// every request sent answered, and none of the report's lines in `absent` (the ones that name
/// a cause of trouble) printed.
pub fn assert_clean(run: &Run, errors: &[&str], absent: &[&str]) {
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let j = run.json.as_ref().unwrap();
    for kind in errors {
        assert_eq!(j["errors"][kind], 0, "{kind}: {}", run.stdout);
    }
    assert_eq!(j["sent"], j["requests"], "{}", run.stdout);
    for line in absent {
        assert!(!run.stdout.contains(line), "{line}: {}", run.stdout);
    }
}

/// Runs strain with exactly `args`.
pub fn strain_raw<S: AsRef<str>>(args: &[S]) -> Run {
    run_program(bin(), args)
}

/// Runs a load generator (strain, or a peer such as wrk) with exactly `args`, sharing the
/// machine as strain runs do (see [`exclusive`]).
pub fn run_program<S: AsRef<str>>(program: &str, args: &[S]) -> Run {
    let _shared = if EXCLUSIVE.with(|e| e.get()) { None } else { Some(LOAD.read().unwrap_or_else(|p| p.into_inner())) };
    let start = Instant::now();
    let child = Command::new(program)
        .args(args.iter().map(|s| s.as_ref()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    finish(child, start)
}

/// Starts strain with `args` as a child (no stdin, its output piped for [`finish`]).
pub fn spawn<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Child {
    Command::new(bin()).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits for a child with the run limit, collecting its output.
pub fn finish(mut child: Child, start: Instant) -> Run {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            panic!("strain ran longer than {RUN_LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let err = t_err.join().unwrap();
    let (said, stderr): (Vec<&str>, Vec<&str>) =
        err.split_inclusive('\n').partition(|l| l.starts_with("strain: ") && l.contains(SHARED_CPUS));
    Run {
        code: status.code().unwrap_or(-1),
        stdout: t_out.join().unwrap(),
        stderr: stderr.concat(),
        elapsed: start.elapsed(),
        json: None,
        shared_cpus_said: said.iter().map(|l| l.trim_end().to_string()).collect(),
    }
}

/// The number of a signal named as `kill` names it.
fn signal_number(sig: &str) -> i32 {
    match sig {
        "INT" => libc::SIGINT,
        "TERM" => libc::SIGTERM,
        "KILL" => libc::SIGKILL,
        "STOP" => libc::SIGSTOP,
        "QUIT" => libc::SIGQUIT,
        "HUP" => libc::SIGHUP,
        "CONT" => libc::SIGCONT,
        other => panic!("unknown signal {other}"),
    }
}

/// Sends a signal to a process by pid; one that has already gone is no error.
pub fn signal(pid: u32, sig: &str) {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe { libc::kill(pid as i32, signal_number(sig)) };
}

/// A port that was free a moment ago (for servers that cannot bind port 0 themselves).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Writes a new self-signed certificate for `names` and its key into `dir` (cert.pem, key.pem)
/// and returns their paths.
pub fn self_signed(dir: &Path, names: &[&str]) -> (String, String) {
    let made = strain::net::tls::self_signed(names).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert).unwrap();
    std::fs::write(&key, made.key).unwrap();
    (cert.display().to_string(), key.display().to_string())
}

/// Waits until something accepts on `addr`.
pub fn wait_listening(addr: SocketAddr) {
    let start = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(10), "nothing listens on {addr}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// `strain origin` as a child process.
pub struct Origin {
    child: Child,
    pub addr: SocketAddr,
    /// The URL it said it listens on (https:// with `--tls`).
    url: String,
    lines: BufReader<std::process::ChildStdout>,
}

/// What the origin printed on exit.
#[derive(Debug, PartialEq, Eq)]
pub struct Served {
    pub requests: u64,
    pub connections: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl Origin {
    /// Starts `strain origin --listen 127.0.0.1:0` with extra flags.
    pub fn start(extra: &[&str]) -> Origin {
        Origin::start_on("127.0.0.1:0", extra)
    }

    /// Starts the origin on `listen`.
    pub fn start_on(listen: &str, extra: &[&str]) -> Origin {
        Origin::spawn(Command::new(bin()), listen, extra, Stdio::null())
    }

    /// Starts the origin as [`Origin::start`] does, keeping what it says on stderr for
    /// [`Origin::exit`].
    pub fn start_heard(extra: &[&str]) -> Origin {
        Origin::spawn(Command::new(bin()), "127.0.0.1:0", extra, Stdio::piped())
    }

    /// Starts the origin on 127.0.0.1:0, held to `cpus` (taskset's list) from its first
    /// instruction.
    pub fn start_pinned(cpus: &str, extra: &[&str]) -> Origin {
        let mut command = Command::new("taskset");
        command.args(["-c", cpus, bin()]);
        Origin::spawn(command, "127.0.0.1:0", extra, Stdio::null())
    }

    /// Its exit lines on `stderr` are chatter in a passing test run unless a test reads them.
    fn spawn(mut command: Command, listen: &str, extra: &[&str], stderr: Stdio) -> Origin {
        let mut child = command
            .args(["origin", "--listen", listen])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn origin");
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        lines.read_line(&mut first).unwrap();
        let url = first.trim().strip_prefix("strain origin listening on ").unwrap_or_default().to_string();
        let parsed = url.trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/').parse();
        let Ok(addr) = parsed else {
            // Not left running after the test fails.
            let _ = child.kill();
            let _ = child.wait();
            panic!("origin said: {first:?}");
        };
        Origin { child, addr, url, lines }
    }

    /// The origin's process id (for /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The URL of path `/` on this origin.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The URL of `path` (from its leading `/`) on this origin.
    pub fn url_of(&self, path: &str) -> String {
        format!("{}{path}", self.url.trim_end_matches('/'))
    }

    /// Runs strain with `args` (plus `--json FILE`) against this origin's `/`, then stops the
    /// origin: the run, and what the origin served.
    pub fn run_then_stop(self, args: &[&str]) -> (Run, Served) {
        let run = strain(&[args, &[&self.url()]].concat());
        (run, self.stop())
    }

    /// Stops the origin with Ctrl-C and returns what it served.
    pub fn stop(self) -> Served {
        self.stop_by("INT").0
    }

    /// Stops the origin with signal `sig`; returns what it served and how long it took to
    /// exit after the signal.
    pub fn stop_by(self, sig: &str) -> (Served, Duration) {
        let exited = self.exit_by(sig);
        let nums: Vec<u64> = exited
            .stdout
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect();
        assert_eq!(nums.len(), 4, "origin said: {:?}", exited.stdout);
        (Served { requests: nums[0], connections: nums[1], bytes_in: nums[2], bytes_out: nums[3] }, exited.elapsed)
    }

    /// Stops the origin with Ctrl-C: its exit code, what it said on stdout after its first line,
    /// and on stderr what it said at all (kept by [`Origin::start_heard`] only).
    pub fn exit(self) -> Run {
        self.exit_by("INT")
    }

    /// Stops the origin with `sig`; `elapsed` is from the signal to its exit.
    fn exit_by(mut self, sig: &str) -> Run {
        let asked = Instant::now();
        signal(self.child.id(), sig);
        let mut stdout = String::new();
        let _ = self.lines.read_to_string(&mut stdout);
        let mut stderr = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        let status = self.child.wait().unwrap();
        let elapsed = asked.elapsed();
        Run { code: status.code().unwrap_or(-1), stdout, stderr, elapsed, json: None, shared_cpus_said: vec![] }
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private nginx on a loopback port.
pub struct Nginx {
    child: Child,
    pub dir: tempfile::TempDir,
    pub port: u16,
    tls: bool,
}

/// The nginx binary, installed by `.ci/run` (Debian's nginx-light).
fn nginx_bin() -> PathBuf {
    for p in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("nginx is not installed: run `bash .ci/run` (it installs nginx-light) or `apt-get install -y nginx-light`");
}

impl Nginx {
    /// Starts nginx with `server_body` inside `server { listen PORT ...; }`; `tls` adds `ssl`
    /// to the listen line and a self-signed certificate for 127.0.0.1.
    pub fn start(server_body: &str, tls: bool) -> Nginx {
        Nginx::start_full("", server_body, tls, false)
    }

    /// Starts nginx speaking HTTP/2 only: h2c with prior knowledge, or h2 by ALPN with `tls`.
    pub fn start_h2(http_extra: &str, server_body: &str, tls: bool) -> Nginx {
        Nginx::start_full(http_extra, server_body, tls, true)
    }

    /// Starts nginx with extra `http`-level directives (cache zones) before the server block.
    pub fn start_with_http(http_extra: &str, server_body: &str) -> Nginx {
        Nginx::start_full(http_extra, server_body, false, false)
    }

    /// nginx with `http_extra` in its http block and `server_body` in a server over HTTP/1.1,
    /// TLS or not.
    pub fn start_http1(http_extra: &str, server_body: &str, tls: bool) -> Nginx {
        Nginx::start_full(http_extra, server_body, tls, false)
    }

    fn start_full(http_extra: &str, server_body: &str, tls: bool, h2: bool) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let port = free_port();
        let mut listen = format!("127.0.0.1:{port}");
        let mut tls_lines = String::new();
        if tls {
            let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
            listen.push_str(" ssl");
            tls_lines = format!("ssl_certificate {cert}; ssl_certificate_key {key};");
        }
        if h2 {
            listen.push_str(" http2");
        }
        let conf = format!(
            "worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log; worker_rlimit_nofile 20000;\n\
             events {{ worker_connections 20000; }}\n\
             http {{\n\
               client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;\n\
               uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;\n\
               log_format bytes '$status $bytes_sent';\n\
               access_log {d}/access.log bytes;\n\
               {http_extra}\n\
               server {{ listen {listen}; {tls_lines} {server_body} }}\n\
             }}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx_bin())
            .args(["-p", &format!("{d}/"), "-e", &format!("{d}/error.log"), "-c", &format!("{d}/nginx.conf")])
            .args(["-g", "daemon off;"])
            // Its own process group, so its workers can be stopped with it (see Drop).
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // nginx reports to the error log given with -e.
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nginx");
        wait_listening(SocketAddr::from(([127, 0, 0, 1], port)));
        Nginx { child, dir, port, tls }
    }

    /// The URL of path `/` on this nginx (https:// with TLS).
    pub fn url(&self) -> String {
        format!("{}://127.0.0.1:{}/", if self.tls { "https" } else { "http" }, self.port)
    }

    /// Runs strain with the flags in `line` against this nginx's `/`, then stops nginx: the run,
    /// and the access log of everything nginx answered (see [`Nginx::access_log`]).
    pub fn run_then_stop(&mut self, line: &str) -> (Run, Vec<(u16, u64)>) {
        let run = strain_at(line, &self.url());
        self.stop();
        (run, self.access_log())
    }

    /// Lines of the access log as (status, bytes sent); nginx writes each line when the
    /// response is done, so stop or wait before reading.
    pub fn access_log(&self) -> Vec<(u16, u64)> {
        let text = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        text.lines()
            .map(|l| {
                let mut it = l.split(' ');
                (it.next().unwrap().parse().unwrap(), it.next().unwrap().parse().unwrap())
            })
            .collect()
    }

    /// A file of nginx's private directory (a log a test's `access_log NAME` wrote), as text.
    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// Stops nginx gracefully (SIGQUIT finishes open requests and flushes the log).
    pub fn stop(&mut self) {
        signal(self.child.id(), "QUIT");
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // Killing only the master would leave its workers (and their sockets) behind.
        signal_group(self.child.id(), "KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a signal to every process in the group led by `pid`; a group already gone is no error.
pub fn signal_group(pid: u32, sig: &str) {
    // SAFETY: as in `signal`; a negative pid names the process group.
    unsafe { libc::kill(-(pid as i32), signal_number(sig)) };
}

/// A fake server on loopback, the one accept loop of the tests: every connection is handed to
/// `handle` (with its number, in accept order) in a thread of its own, blocking, with a 5 s
/// read timeout so a test cannot hang on it; it counts connections and stops accepting when
/// dropped. [`RecordingServer`] and the fault servers are behaviours over it.
pub struct FakeServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    connections: Arc<AtomicU64>,
}

impl FakeServer {
    pub fn start(handle: impl Fn(TcpStream, usize) + Send + Sync + 'static) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, connections) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let (flag, accepted) = (stop.clone(), connections.clone());
        let handle = Arc::new(handle);
        thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let Ok((s, _)) = listener.accept() else {
                    thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let n = accepted.fetch_add(1, Ordering::Relaxed) as usize;
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let handle = handle.clone();
                thread::spawn(move || handle(s, n));
            }
        });
        FakeServer { addr, stop, connections }
    }

    /// A server that hands every connection to `handle` alone.
    pub fn serving(handle: fn(TcpStream)) -> FakeServer {
        FakeServer::start(move |s, _| handle(s))
    }

    /// A server that answers the first request of each connection with `response` and closes
    /// it.
    pub fn answering_once(response: &[u8]) -> FakeServer {
        let response: Arc<[u8]> = response.into();
        FakeServer::start(move |mut s, _| {
            if read_head(&mut s) {
                send(&mut s, &response);
            }
        })
    }

    /// A server that answers every request with `response`, keeping each connection.
    pub fn answering_each(response: &[u8]) -> FakeServer {
        let response: Arc<[u8]> = response.into();
        FakeServer::start(move |mut s, _| {
            while read_head(&mut s) {
                send(&mut s, &response);
            }
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads one request head (up to the blank line); false on EOF or error.
pub fn read_head(s: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => seen.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// Writes all of `data`, ignoring errors (the peer may have gone).
pub fn send(s: &mut TcpStream, data: &[u8]) {
    let _ = s.write_all(data);
}

/// One request as the recording server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Which connection it came on (accept order).
    pub conn: usize,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A keep-alive HTTP/1.1 server that records every request (pipelining included) and answers
/// `200 ok`, adding `X-Token: tok<length of the path>` to responses for paths starting with
/// /login and for /authenticate (wrk's auth.lua).
pub struct RecordingServer {
    pub addr: SocketAddr,
    seen: Arc<std::sync::Mutex<Vec<Seen>>>,
    _server: FakeServer,
}

impl RecordingServer {
    pub fn start() -> RecordingServer {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = seen.clone();
        let server = FakeServer::start(move |s, conn| serve_recorded(s, conn, &kept));
        RecordingServer { addr: server.addr, seen, _server: server }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Everything seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve_recorded(mut s: TcpStream, conn: usize, seen: &std::sync::Mutex<Vec<Seen>>) {
    // Scripts may pause between requests longer than the fake server's usual timeout.
    let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        let mut out = Vec::new();
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut req = httparse::Request::new(&mut headers);
            let Ok(httparse::Status::Complete(head)) = req.parse(&buf) else { break };
            let hs: Vec<(String, String)> = req
                .headers
                .iter()
                .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
                .collect();
            let len: usize = hs
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() < head + len {
                break;
            }
            let path = req.path.unwrap_or("").to_string();
            let method = req.method.unwrap_or("").to_string();
            seen.lock().unwrap().push(Seen {
                method,
                path: path.clone(),
                headers: hs,
                body: buf[head..head + len].to_vec(),
                conn,
            });
            let token = if path.starts_with("/login") || path == "/authenticate" {
                format!("X-Token: tok{}\r\n", path.len())
            } else {
                String::new()
            };
            out.extend_from_slice(format!("HTTP/1.1 200 OK\r\n{token}Content-Length: 2\r\n\r\nok").as_bytes());
            buf.drain(..head + len);
        }
        if !out.is_empty() && s.write_all(&out).is_err() {
            return;
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A schema file of this repository, parsed.
pub fn schema_file(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(format!("{}/schema/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The result schema's validator.
pub fn schema() -> jsonschema::Validator {
    jsonschema::validator_for(&schema_file("result.schema.json")).unwrap()
}

/// A client socket that gives up instead of hanging.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Writes a script into a temporary directory and returns (dir guard, path).
pub fn script(text: &str) -> (tempfile::TempDir, String) {
    temp_file("test.lua", text)
}

/// Writes `text` as file `name` of a new temporary directory and returns (dir guard, path).
pub fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let p = path.display().to_string();
    (dir, p)
}

/// A JSON-lines recording for `strain replay`: a GET of each `(offset_us, path)`, that many
/// microseconds after one fixed instant (written exactly, as a log writes microseconds).
pub fn recording(requests: impl IntoIterator<Item = (u64, String)>) -> String {
    const START_US: u64 = 1_795_690_000_000_000;
    requests
        .into_iter()
        .map(|(offset_us, path)| {
            let us = START_US + offset_us;
            format!("{{\"time\": {}.{:06}, \"url\": \"http://x{path}\"}}\n", us / 1_000_000, us % 1_000_000)
        })
        .collect()
}

/// A [`recording`] of `n` requests evenly at `rate` a second, request `k` to `path(k)`.
pub fn even_recording(n: u64, rate: u64, path: impl Fn(u64) -> String) -> String {
    recording((0..n).map(|k| (k * 1_000_000 / rate, path(k))))
}
