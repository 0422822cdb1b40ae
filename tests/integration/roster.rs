//! Issue 40, point 4: strain against a roster of real HTTP servers, each with its default
//! settings (beyond a loopback port, an access log and a small static site): nginx, Apache httpd
//! (event MPM), Caddy, HAProxy (in front of `strain origin`), h2o, Node's `http` and `http2`
//! (tests/servers/node-http) and Go's `net/http` (tests/servers/go-http, built by
//! scripts/roster-servers.sh). Every protocol a server speaks (HTTP/1.1, h2 by ALPN, h2c, and
//! HTTP/3 on Caddy) runs strain's main modes (closed loop, `-R`, `-n`, `--targets` with HEAD,
//! a POST, 204, 304, chunked and `Connection: close` answers), and strain's counts must equal
//! the server's own access log, status by status, with no error. Then what each server does
//! its own way: keep-alive limits (nginx's 1,000 with a GOAWAY on h2, Apache's 100), Node's
//! idle timeout under a low rate, a stream limit below `-m`, and `100 Continue`.
//! docs/COMPATIBILITY.md is the matrix these tests keep.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use crate::harness::{args, free_port, self_signed, signal_group, strain, wait_listening, Origin, Run};

/// The static file's modification time (2017-07-14 02:40:00 UTC), fixed so that every server
/// answers 304 to this `If-Modified-Since`: nginx wants the exact date by default.
const MODIFIED_S: u64 = 1_500_000_000;
const IF_MODIFIED: &str = "If-Modified-Since: Fri, 14 Jul 2017 02:40:00 GMT";

/// One line of a server's access log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    status: u16,
    method: String,
    path: String,
    /// `HTTP/1.1`, `HTTP/2` or `HTTP/3`, however the server spells it.
    proto: String,
}

/// How a server writes its access log.
#[derive(Clone, Copy)]
enum LogFormat {
    /// `STATUS METHOD PATH PROTO`, the format each server here is told to write.
    Words,
    /// Caddy's JSON lines.
    CaddyJson,
}

/// The protocols strain speaks to a server.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Proto {
    H1,
    /// h2 chosen by ALPN over TLS.
    H2,
    /// h2c with prior knowledge.
    H2c,
    H3,
}

impl Proto {
    fn flags(self) -> &'static str {
        match self {
            Proto::H1 => "",
            Proto::H2 => "--http2 -k",
            Proto::H2c => "--http2",
            Proto::H3 => "--http3 -k",
        }
    }

    fn logged(self) -> &'static str {
        match self {
            Proto::H1 => "HTTP/1.1",
            Proto::H2 | Proto::H2c => "HTTP/2",
            Proto::H3 => "HTTP/3",
        }
    }
}

/// The paths of a server's site, each answering one way.
struct Site {
    /// The small static file (HAProxy: the origin's fixed body).
    index: &'static str,
    /// A path and header that give a 304.
    not_modified: (&'static str, &'static str),
    /// A path answered without a length (chunked over HTTP/1.1), and the header that asks it.
    chunked: (&'static str, &'static str),
    /// A path answered with `Connection: close` over HTTP/1.1, where the server can be told to.
    close: Option<&'static str>,
    /// A path answered 204.
    no_content: &'static str,
    /// A path that takes a POST's body (and answers `100 Continue` to a client that waits, on
    /// the servers that read it).
    post: &'static str,
}

/// The site every server but HAProxy serves (from files, or as files would be).
const FILES: Site = Site {
    index: "/index.html",
    not_modified: ("/index.html", IF_MODIFIED),
    chunked: ("/chunked.txt", "Accept-Encoding: gzip"),
    close: Some("/close"),
    no_content: "/nocontent",
    post: "/post",
};

/// A real server on loopback, in its own process group, killed with it on drop.
struct Server {
    name: &'static str,
    child: Child,
    dir: tempfile::TempDir,
    log: PathBuf,
    format: LogFormat,
    /// Base URLs (scheme, host and port) of each protocol the server speaks.
    bases: Vec<(Proto, String)>,
    site: Site,
    /// HAProxy's origin, stopped after it.
    origin: Option<Origin>,
}

/// A new temporary directory the servers' unprivileged workers can read (nginx, Apache and h2o
/// drop root), with the static site in `www`: `index.html` and `close` (13 bytes, modified at
/// [`MODIFIED_S`]) and `chunked.txt` (64 KiB of hex digits: compressed, it still spans several
/// of Apache's buffers, so none of the servers knows its length up front); and its path as the
/// servers' configurations name it.
pub(crate) fn site_dir() -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(MODIFIED_S);
    for name in ["index.html", "close"] {
        std::fs::write(www.join(name), "hello roster\n").unwrap();
        std::fs::File::options().write(true).open(www.join(name)).unwrap().set_modified(modified).unwrap();
    }
    let mut x: u64 = 40;
    let text: String = (0..65_536)
        .map(|i| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            if i % 64 == 63 {
                '\n'
            } else {
                char::from_digit(((x >> 33) % 16) as u32, 16).unwrap()
            }
        })
        .collect();
    std::fs::write(www.join("chunked.txt"), text).unwrap();
    let path = dir.path().display().to_string();
    (dir, path)
}

/// Starts `command` in its own process group, its chatter into `server.out` in `dir`.
pub(crate) fn spawn(command: &mut Command, dir: &Path) -> Child {
    let out = std::fs::File::create(dir.join("server.out")).unwrap();
    command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"))
}

/// Waits until something accepts on each of `ports` on loopback.
pub(crate) fn listening(ports: &[u16]) {
    for &port in ports {
        wait_listening(([127, 0, 0, 1], port).into());
    }
}

/// Starts nginx from `dir` with `http` as the rest of its `http` block.
pub(crate) fn start_nginx(dir: &Path, http: &str) -> Child {
    let d = dir.display();
    let conf = format!(
        "pid {d}/nginx.pid; error_log {d}/error.log;\n\
         events {{ }}\n\
         http {{\n\
           client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;\n\
           uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;\n\
           {http}\
         }}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let (prefix, errors, file) = (format!("{d}/"), format!("{d}/error.log"), format!("{d}/nginx.conf"));
    spawn(Command::new("nginx").args(["-p", &prefix, "-e", &errors, "-c", &file, "-g", "daemon off;"]), dir)
}

/// Starts Apache httpd (event MPM) from `dir` with `modules` loaded and `conf` after what every
/// configuration here begins with.
pub(crate) fn start_apache(dir: &Path, modules: &[&str], conf: &str) -> Child {
    let d = dir.display();
    let modules: String = ["mpm_event", "authz_core"]
        .iter()
        .chain(modules)
        .map(|m| format!("LoadModule {m}_module /usr/lib/apache2/modules/mod_{m}.so\n"))
        .collect();
    let head = format!(
        "ServerRoot {d}\nServerName localhost\nPidFile {d}/httpd.pid\nErrorLog {d}/error.log\n\
         Mutex file:{d}\nUser www-data\nGroup www-data\n{modules}"
    );
    std::fs::write(dir.join("httpd.conf"), head + conf).unwrap();
    spawn(Command::new("apache2").args(["-f", &format!("{d}/httpd.conf"), "-DFOREGROUND"]), dir)
}

/// Starts Caddy from `dir` with `config` as its Caddyfile.
pub(crate) fn start_caddy(dir: &Path, config: &str) -> Child {
    std::fs::write(dir.join("Caddyfile"), config).unwrap();
    spawn(
        Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config", &format!("{}/Caddyfile", dir.display())])
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir)
            .env("XDG_CONFIG_HOME", dir),
        dir,
    )
}

fn base(scheme: &str, port: u16) -> String {
    format!("{scheme}://127.0.0.1:{port}")
}

/// The base URLs of HTTP/1.1 on `h1`, h2 by ALPN on `tls` and h2c on `h2c` (often `h1`).
fn bases(h1: u16, tls: u16, h2c: u16) -> Vec<(Proto, String)> {
    vec![(Proto::H1, base("http", h1)), (Proto::H2, base("https", tls)), (Proto::H2c, base("http", h2c))]
}

impl Server {
    /// `name`, started as `child` with its site in `dir`, once it listens on `ports`: the
    /// defaults are an access log of [`LogFormat::Words`] in `dir` and no origin.
    fn started(
        name: &'static str,
        child: Child,
        dir: tempfile::TempDir,
        ports: &[u16],
        bases: Vec<(Proto, String)>,
        site: Site,
    ) -> Server {
        // Built before the wait, so that a server that never listens is killed all the same.
        let server = Server {
            name,
            child,
            log: dir.path().join("access.log"),
            dir,
            format: LogFormat::Words,
            bases,
            site,
            origin: None,
        };
        listening(ports);
        server
    }

    fn nginx() -> Server {
        let (dir, d) = site_dir();
        let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
        let [h1, tls, h2c, streams8] = [free_port(), free_port(), free_port(), free_port()];
        let site = "root www; \
             location = /nocontent { return 204; } \
             location = /post { return 200 \"posted\\n\"; } \
             location = /close { keepalive_timeout 0; } \
             location = /chunked.txt { gzip on; gzip_types text/plain; }";
        let http = format!(
            "types {{ text/html html; text/plain txt; }}\n\
             log_format roster '$status $request_method $request_uri $server_protocol';\n\
             access_log {d}/access.log roster;\n\
             server {{ listen 127.0.0.1:{h1}; {site} }}\n\
             server {{ listen 127.0.0.1:{tls} ssl http2; ssl_certificate {cert}; ssl_certificate_key {key}; {site} }}\n\
             server {{ listen 127.0.0.1:{h2c} http2; {site} }}\n\
             server {{ listen 127.0.0.1:{streams8} http2; http2_max_concurrent_streams 8; keepalive_requests 100; {site} }}\n"
        );
        let child = start_nginx(dir.path(), &http);
        let mut bases = bases(h1, tls, h2c);
        // The last allows 8 streams at once and 100 a connection (see the nginx test).
        bases.push((Proto::H2c, base("http", streams8)));
        Server::started("nginx", child, dir, &[h1, tls, h2c, streams8], bases, FILES)
    }

    fn apache() -> Server {
        let (dir, d) = site_dir();
        let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
        let [h1, tls] = [free_port(), free_port()];
        let modules = [
            "mime",
            "dir",
            "http2",
            "ssl",
            "socache_shmcb",
            "rewrite",
            "setenvif",
            "filter",
            "deflate",
            "reflector",
            "lua",
        ];
        // h2c and h2 are off unless named in Protocols; everything else is Apache's default
        // (KeepAlive On, MaxKeepAliveRequests 100, KeepAliveTimeout 5).
        let conf = format!(
            "TypesConfig /etc/mime.types\n\
             Listen 127.0.0.1:{h1}\nListen 127.0.0.1:{tls}\n\
             DocumentRoot {d}/www\nProtocols h2c http/1.1\n\
             LogFormat \"%>s %m %U %H\" roster\nCustomLog {d}/access.log roster\n\
             SetEnvIf Request_URI ^/close$ nokeepalive\n\
             RewriteEngine on\nRewriteRule ^/nocontent$ - [R=204]\n\
             LuaMapHandler ^/chunked$ {d}/chunked.lua\n\
             <Location /post>\n  SetHandler reflector\n</Location>\n\
             <VirtualHost 127.0.0.1:{tls}>\n  SSLEngine on\n  SSLCertificateFile {cert}\n  \
             SSLCertificateKeyFile {key}\n  Protocols h2 http/1.1\n  \
             RewriteEngine on\n  RewriteRule ^/nocontent$ - [R=204]\n</VirtualHost>\n"
        );
        // A static file goes out with its length even compressed (mod_deflate's output is
        // measured whole); a handler that flushes midway is chunked.
        let lua = "function handle(r)\n  r.content_type = \"text/plain\"\n  r:puts(\"hello \")\n  r:flush()\n  \
                   r:puts(\"chunked\\n\")\n  return apache2.OK\nend\n";
        std::fs::write(dir.path().join("chunked.lua"), lua).unwrap();
        let child = start_apache(dir.path(), &modules, &conf);
        let site = Site { chunked: ("/chunked", ""), ..FILES };
        Server::started("apache", child, dir, &[h1, tls], bases(h1, tls, h1), site)
    }

    fn caddy() -> Server {
        let (dir, d) = site_dir();
        let (cert, key) = self_signed(dir.path(), &["localhost", "127.0.0.1"]);
        let [h1, tls] = [free_port(), free_port()];
        // h2c is off unless named; its QUIC side picks a certificate by SNI, which strain sends
        // for a host name only, hence `localhost` in the HTTP/3 URL.
        let config = format!(
            "{{\n\tadmin off\n\tauto_https off\n\tdefault_sni localhost\n\tservers {{\n\t\tprotocols h1 h2 h2c h3\n\t}}\n}}\n\
             (site) {{\n\tbind 127.0.0.1\n\troot * {d}/www\n\theader /close Connection close\n\
             \trespond /nocontent 204\n\trespond /post \"posted\" 200\n\tencode gzip\n\tfile_server\n\
             \tlog {{\n\t\toutput file {d}/access.log\n\t\tformat json\n\t}}\n}}\n\
             http://127.0.0.1:{h1} {{\n\timport site\n}}\n\
             https://localhost:{tls}, https://127.0.0.1:{tls} {{\n\ttls {cert} {key}\n\timport site\n}}\n"
        );
        let child = start_caddy(dir.path(), &config);
        let mut bases = bases(h1, tls, h1);
        bases.push((Proto::H3, format!("https://localhost:{tls}")));
        let mut caddy = Server::started("caddy", child, dir, &[h1, tls], bases, FILES);
        caddy.format = LogFormat::CaddyJson;
        // HTTP/3 is served once the whole configuration is.
        let start = Instant::now();
        let said = || std::fs::read_to_string(caddy.dir.path().join("server.out")).unwrap_or_default();
        while !said().contains("serving initial configuration") {
            assert!(start.elapsed() < Duration::from_secs(10), "caddy did not start: {}", said());
            thread::sleep(Duration::from_millis(20));
        }
        caddy
    }

    fn haproxy() -> Server {
        // A conditional request for a document gets 304 half the time unless told always.
        let origin = Origin::start(&["-t", "1", "--ims-not-modified", "1"]);
        let (dir, d) = site_dir();
        let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
        let pem = format!("{d}/both.pem");
        let both = std::fs::read_to_string(&cert).unwrap() + &std::fs::read_to_string(&key).unwrap();
        std::fs::write(&pem, both).unwrap();
        let [h1, tls] = [free_port(), free_port()];
        // HAProxy logs through syslog unless told `stdout` (into server.out here); its clear
        // frontend takes h2c by the preface on its own. `timeout`s are required settings, and
        // `dontlognull` (in Debian's own haproxy.cfg) keeps connections that sent nothing, as
        // the probe that waits for the port, out of the log. Its stats socket says how many
        // lines its logger dropped (see `dropped_logs`).
        let conf = format!(
            "global\n  log stdout format raw local0\n  stats socket {d}/stats.sock\n\
             defaults\n  mode http\n  log global\n  option dontlognull\n  log-format \"%ST %HM %HP %HV\"\n\
               timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
             frontend site\n  bind 127.0.0.1:{h1}\n  bind 127.0.0.1:{tls} ssl crt {pem} alpn h2,http/1.1\n\
               http-request return status 204 if {{ path /nocontent }}\n\
               http-request set-var(txn.close) bool(true) if {{ path /close }}\n\
               http-after-response set-header Connection close if {{ var(txn.close) -m bool }}\n\
               compression algo gzip\n  compression type text/plain\n\
               default_backend origin\n\
             backend origin\n  server origin {}\n",
            origin.addr
        );
        std::fs::write(dir.path().join("haproxy.cfg"), conf).unwrap();
        let child = spawn(Command::new("haproxy").args(["-f", &format!("{d}/haproxy.cfg"), "-db"]), dir.path());
        let site = Site {
            index: "/",
            // The origin's documents carry an ETag; `/close` and `/post` get its fixed body.
            not_modified: ("/d/1/100", "If-None-Match: \"1-100\""),
            chunked: ("/chunked", "Accept-Encoding: gzip"),
            ..FILES
        };
        let mut haproxy = Server::started("haproxy", child, dir, &[h1, tls], bases(h1, tls, h1), site);
        haproxy.log = haproxy.dir.path().join("server.out");
        haproxy.origin = Some(origin);
        haproxy
    }

    fn h2o() -> Server {
        let (dir, d) = site_dir();
        let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
        let [h1, tls] = [free_port(), free_port()];
        // h2o's file handler takes no POST and makes no 204: its mruby handlers do. No OCSP
        // stapling for a self-signed certificate.
        let conf = format!(
            "listen:\n  host: 127.0.0.1\n  port: {h1}\n\
             listen:\n  host: 127.0.0.1\n  port: {tls}\n  ssl:\n    certificate-file: {cert}\n    key-file: {key}\n    ocsp-update-interval: 0\n\
             error-log: {d}/error.log\n\
             access-log:\n  path: {d}/access.log\n  format: \"%s %m %U %H\"\n\
             hosts:\n  default:\n    paths:\n\
             \x20     /nocontent:\n        mruby.handler: |\n          Proc.new do |env| [204, {{}}, []] end\n\
             \x20     /post:\n        mruby.handler: |\n          Proc.new do |env| [200, {{}}, [env[\"rack.input\"].read]] end\n\
             \x20     /chunked.txt:\n        file.file: {d}/www/chunked.txt\n        compress: ON\n\
             \x20     /:\n        file.dir: {d}/www\n"
        );
        std::fs::write(dir.path().join("h2o.conf"), conf).unwrap();
        let child = spawn(Command::new("h2o").args(["-c", &format!("{d}/h2o.conf")]), dir.path());
        let site = Site { close: None, ..FILES };
        Server::started("h2o", child, dir, &[h1, tls], bases(h1, tls, h1), site)
    }

    fn node() -> Server {
        let (dir, d) = site_dir();
        let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
        let [h1, h2c, tls] = [free_port(), free_port(), free_port()];
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/node-http/server.js");
        let ports = [h1, h2c, tls].map(|p| p.to_string());
        let child = spawn(
            Command::new("node").arg(script).args(&ports).args([&cert, &key, &format!("{d}/access.log")]),
            dir.path(),
        );
        let site = Site { chunked: ("/chunked", ""), ..FILES };
        Server::started("node", child, dir, &[h1, h2c, tls], bases(h1, tls, h2c), site)
    }

    fn go() -> Server {
        let bin = std::env::var("STRAIN_TEST_GO_HTTP").ok().filter(|p| Path::new(p).exists()).unwrap_or_else(|| {
            panic!("STRAIN_TEST_GO_HTTP does not name the Go server: run scripts/test.sh (scripts/roster-servers.sh builds it)")
        });
        let (dir, d) = site_dir();
        let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
        let [h1, tls] = [free_port(), free_port()];
        let child = spawn(
            Command::new(bin).args([
                &format!("-listen=127.0.0.1:{h1}"),
                &format!("-tls=127.0.0.1:{tls}"),
                &format!("-cert={cert}"),
                &format!("-key={key}"),
                &format!("-log={d}/access.log"),
            ]),
            dir.path(),
        );
        let site = Site { chunked: ("/chunked", ""), ..FILES };
        Server::started("go", child, dir, &[h1, tls], bases(h1, tls, h1), site)
    }

    /// The base URL of `proto` (the first, when the server has several).
    fn base(&self, proto: Proto) -> &str {
        &self.bases.iter().find(|(p, _)| *p == proto).unwrap_or_else(|| panic!("{}: no {proto:?}", self.name)).1
    }

    /// Every complete line of the access log so far.
    fn entries(&self) -> Vec<Entry> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        complete.lines().filter_map(|l| parse(self.format, l)).collect()
    }

    /// Log lines the server counted as dropped: HAProxy's `DroppedLogs` (its logger drops a
    /// line rather than wait when its threads contend for it, a few in 30,000 under a closed
    /// loop here), read from its stats socket; 0 for the others, which never drop one.
    fn dropped_logs(&self) -> u64 {
        use std::io::{Read, Write};
        let socket = self.dir.path().join("stats.sock");
        let Ok(mut s) = std::os::unix::net::UnixStream::connect(&socket) else { return 0 };
        s.write_all(b"show info\n").unwrap();
        let mut info = String::new();
        s.read_to_string(&mut info).unwrap();
        let dropped = info.lines().find_map(|l| l.strip_prefix("DroppedLogs: "));
        dropped.unwrap_or_else(|| panic!("no DroppedLogs in {info}")).trim().parse().unwrap()
    }

    /// The log's entries after the first `before`, once those and the lines dropped since
    /// `dropped` reach `want` (a server may log a moment after its answer left), and a little
    /// longer, so that one too many shows; and how many were dropped.
    fn entries_after(&self, before: usize, dropped: u64, want: u64) -> (Vec<Entry>, u64) {
        let start = Instant::now();
        let seen = || (self.entries().len() - before) as u64 + self.dropped_logs() - dropped;
        while seen() < want && start.elapsed() < Duration::from_secs(5) {
            thread::sleep(Duration::from_millis(20));
        }
        thread::sleep(Duration::from_millis(100));
        (self.entries().split_off(before), self.dropped_logs() - dropped)
    }

    /// Runs strain with `line` and `proto`'s flags (against `url` unless `line` names
    /// targets), and asserts what every run here must: exit 0, no error of any kind, every
    /// request sent answered, and the access log holding exactly the requests strain counted
    /// (with those the server says it dropped from its log), over `proto`, with the same
    /// statuses. The entries are returned whole unless the server dropped some.
    fn run(&self, proto: Proto, line: &str, url: &str) -> (Run, Vec<Entry>) {
        let (before, dropped) = (self.entries().len(), self.dropped_logs());
        let flags = format!("{} {line}", proto.flags());
        let mut a = args(&flags);
        if !url.is_empty() {
            a.push(url);
        }
        let run = strain(&a);
        let what = format!("{} {proto:?} `{flags}` {url}", self.name);
        assert_eq!(run.code, 0, "{what}\n{}\n{}", run.stdout, run.stderr);
        let j = run.json.as_ref().unwrap();
        for kind in ["connect", "read", "write", "timeout", "parse", "status", "content"] {
            assert_eq!(j["errors"][kind].as_u64().unwrap_or(0), 0, "{what}: {kind} errors\n{}", run.stdout);
        }
        let requests = run.num("/requests");
        assert_eq!(run.num("/sent"), requests, "{what}: every request sent was answered\n{}", run.stdout);
        let (entries, dropped) = self.entries_after(before, dropped, requests);
        let logged = entries.len() as u64 + dropped;
        assert_eq!(
            logged, requests,
            "{what}: the server's log counts strain's requests ({dropped} dropped)\n{}",
            run.stdout
        );
        let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
        for e in &entries {
            *statuses.entry(e.status.to_string()).or_default() += 1;
        }
        let counted: BTreeMap<String, u64> =
            j["status"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap())).collect();
        if dropped == 0 {
            assert_eq!(counted, statuses, "{what}: statuses");
        } else {
            assert!(statuses.iter().all(|(k, n)| counted.get(k).is_some_and(|c| c >= n)), "{what}: {statuses:?}");
        }
        assert!(entries.iter().all(|e| e.proto == proto.logged()), "{what}: all over {}: {entries:?}", proto.logged());
        // The matrix's row, seen with --nocapture (docs/COMPATIBILITY.md).
        eprintln!("roster: {what}: {requests} requests = {logged} logged ({dropped} dropped), statuses {counted:?}");
        (run, entries)
    }

    /// [`Server::modes`] over each protocol the server speaks, in the order of its bases.
    fn every_mode(&self) {
        let mut protos: Vec<Proto> = self.bases.iter().map(|(proto, _)| *proto).collect();
        protos.dedup();
        for proto in protos {
            self.modes(proto);
        }
    }

    /// strain's main modes over `proto`: a closed loop, a rate, exactly N, and a targets file
    /// that asks for every kind of answer the site gives, each counted as the server logged it.
    fn modes(&self, proto: Proto) {
        let index = format!("{}{}", self.base(proto), self.site.index);
        let (run, _) = self.run(proto, "-c 10 -d 1s", &index);
        assert!(run.num("/requests") > 100, "{}: {}", self.name, run.stdout);
        let (run, _) = self.run(proto, "-R 500 -d 1s", &index);
        // Sends that fell behind on a busy machine go late or unsent, never uncounted: every
        // one of the 500 due is answered (and logged, as run checked) or counted unsent.
        let accounted = run.num("/rate/sent") + run.num("/rate/unsent");
        assert_eq!(accounted, 500, "{}: {}", self.name, run.stdout);
        let (run, _) = self.run(proto, "-n 1000", &index);
        assert_eq!(run.num("/requests"), 1000);
        self.targets(proto);
    }

    /// A targets file (vegeta's format) of GET, HEAD, a 304, a 204, a chunked answer, a
    /// `Connection: close` answer and a POST with a body; each target goes 50 times.
    fn targets(&self, proto: Proto) {
        let base = self.base(proto);
        let s = &self.site;
        if proto == Proto::H1 {
            // The site answers as the matrix says it does (those requests logged before strain's).
            let (before, dropped) = (self.entries().len(), self.dropped_logs());
            let chunked = head(base, s.chunked.0, s.chunked.1);
            assert!(chunked.contains("\r\ntransfer-encoding: chunked\r\n"), "{}: {chunked}", self.name);
            if let Some(close) = s.close {
                let closed = head(base, close, "");
                // Apache's says `Connection: Upgrade, close` (it offers h2c).
                let says = closed.lines().find_map(|l| l.strip_prefix("connection:"));
                assert!(says.is_some_and(|v| v.contains("close")), "{}: {closed}", self.name);
            }
            self.entries_after(before, dropped, 1 + s.close.is_some() as u64);
        }
        let body = self.dir.path().join("body.txt");
        std::fs::write(&body, "name=roster&n=1").unwrap();
        let mut targets: Vec<(&str, &str, &str, u16)> = vec![
            ("GET", s.index, "", 200),
            ("HEAD", s.index, "", 200),
            ("GET", s.not_modified.0, s.not_modified.1, 304),
            ("GET", s.no_content, "", 204),
            ("GET", s.chunked.0, s.chunked.1, 200),
            ("POST", s.post, "Content-Type: application/x-www-form-urlencoded", 200),
        ];
        if let Some(close) = s.close {
            targets.push(("GET", close, "", 200));
        }
        let mut file = String::new();
        for (method, path, header, _) in &targets {
            file += &format!("{method} {base}{path}\n");
            if !header.is_empty() {
                file += &format!("{header}\n");
            }
            if *method == "POST" {
                file += &format!("@{}\n", body.display());
            }
            file += "\n";
        }
        let path = self.dir.path().join(format!("targets-{proto:?}.txt"));
        std::fs::write(&path, file).unwrap();
        let n = 50 * targets.len();
        let (run, entries) = self.run(proto, &format!("-n {n} --targets {}", path.display()), "");
        assert_eq!(run.num("/requests"), n as u64);
        let entries_len = entries.len();
        let mut got: BTreeMap<(String, String, u16), u64> = BTreeMap::new();
        for e in entries {
            *got.entry((e.method, e.path, e.status)).or_default() += 1;
        }
        let mut want: BTreeMap<(String, String, u16), u64> = BTreeMap::new();
        for (method, path, _, status) in targets {
            *want.entry((method.to_string(), path.to_string(), status)).or_default() += 50;
        }
        if entries_len == n {
            assert_eq!(got, want, "{} {proto:?}: each target 50 times, as the server logged them", self.name);
        } else {
            assert!(got.iter().all(|(k, g)| want.get(k).is_some_and(|w| w >= g)), "{} {proto:?}: {got:?}", self.name);
        }
    }

    /// A POST with `Expect: 100-continue` (strain sends its body at once, as curl does after a
    /// second): servers that read the body answer `100 Continue` first, which is no response.
    fn continues(&self) {
        let url = format!("{}{}", self.base(Proto::H1), self.site.post);
        let line = "-X POST --body name=roster -H Expect:100-continue -c 2 -t 1 -n 200";
        let (_, entries) = self.run(Proto::H1, line, &url);
        assert!(entries.iter().all(|e| e.method == "POST" && e.status == 200), "{}: {entries:?}", self.name);
    }

    /// Over HTTP/1.1, `-n` beyond a keep-alive limit of `limit` requests per connection: the
    /// server closes each connection after its last answer and strain opens the next (Apache's
    /// `Connection: Upgrade` on every answer, offering h2c, is no close).
    fn keepalive_limit(&self, limit: u64) {
        let url = format!("{}{}", self.base(Proto::H1), self.site.index);
        let n = 5 * limit / 2;
        let (run, _) = self.run(Proto::H1, &format!("-c 2 -t 1 -n {n}"), &url);
        // At least 3 connections, and no more than the limit asks: each was kept until it.
        let opened = run.num("/connections_opened");
        assert!((3..=n / limit + 2).contains(&opened), "{}: {opened} connections\n{}", self.name, run.stdout);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Its workers (nginx, Apache, h2o) go with it.
        signal_group(self.child.id(), "KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(self.origin.take());
    }
}

/// The head of the response to a GET of `path` with `header` (if not empty) over HTTP/1.1 on a
/// connection of its own, lowercased.
fn head(base: &str, path: &str, header: &str) -> String {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://").parse().unwrap();
    let mut s = crate::harness::connect(addr);
    let header = if header.is_empty() { String::new() } else { format!("{header}\r\n") };
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{header}\r\n").as_bytes()).unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap() == 1 {
        seen.push(byte[0]);
    }
    String::from_utf8_lossy(&seen).to_lowercase()
}

/// A log line as an [`Entry`]; HAProxy logs an HTTP/2 request's path as the full URL.
fn parse(format: LogFormat, line: &str) -> Option<Entry> {
    let (status, method, path, proto) = match format {
        LogFormat::Words => {
            let w: Vec<&str> = line.split_whitespace().collect();
            let [status, method, path, proto] = w[..] else { return None };
            (status.parse().ok()?, method.to_string(), path.to_string(), proto.to_string())
        }
        LogFormat::CaddyJson => {
            let v: serde_json::Value = serde_json::from_str(line).ok()?;
            let r = &v["request"];
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (v["status"].as_u64()? as u16, s("method"), s("uri"), s("proto"))
        }
    };
    let path = match path.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/".to_string(), |i| rest[i..].to_string()),
        None => path,
    };
    let proto = proto.trim_end_matches(".0").to_string();
    Some(Entry { status, method, path, proto })
}

#[test]
fn nginx_counts_equal_its_access_log() {
    let nginx = Server::nginx();
    nginx.every_mode();
    // keepalive_requests 1000 by default: a connection closed after its 1,000th answer.
    nginx.keepalive_limit(1000);
    // ... and over h2 a GOAWAY after the 1,000th stream; streams beyond it go again.
    let url = format!("{}/index.html", nginx.base(Proto::H2));
    let (run, _) = nginx.run(Proto::H2, "-m 4 -c 2 -t 1 -n 2500", &url);
    assert!(run.num("/http2/goaways") >= 2, "{}", run.stdout);
    // SETTINGS_MAX_CONCURRENT_STREAMS 8 below strain's -m 16: nghttp2 holds the other 8
    // requests unsent, and no stream is refused. With a GOAWAY every 100 requests, the held ones
    // go again on the next connection when nginx closes this one (they were counted read errors,
    // 8 at a time, before strain kept the GOAWAY's last stream id).
    let url = format!("{}/index.html", nginx.bases.last().unwrap().1);
    let (run, _) = nginx.run(Proto::H2c, "-m 16 -c 2 -t 1 -n 2000", &url);
    assert_eq!(run.json.as_ref().unwrap()["http2"]["resets"], serde_json::json!({}), "{}", run.stdout);
    assert!(run.num("/http2/goaways") >= 15, "{}", run.stdout);
    assert_eq!(run.num("/requests"), 2000);
}

#[test]
fn apache_counts_equal_its_access_log() {
    let apache = Server::apache();
    apache.every_mode();
    // MaxKeepAliveRequests 100 by default.
    apache.keepalive_limit(100);
    apache.continues();
}

#[test]
fn caddy_counts_equal_its_access_log() {
    let caddy = Server::caddy();
    caddy.every_mode();
}

#[test]
fn haproxy_counts_equal_its_log() {
    let haproxy = Server::haproxy();
    haproxy.every_mode();
    haproxy.continues();
}

#[test]
fn h2o_counts_equal_its_access_log() {
    let h2o = Server::h2o();
    h2o.every_mode();
    h2o.continues();
}

#[test]
fn node_counts_equal_its_log() {
    let node = Server::node();
    node.every_mode();
    node.continues();
    // Node ends a kept connection idle for its keepAliveTimeout, 5 s (and the socket timeout
    // it arms, 1 s more): at 0.15 request/s over one connection the second request, at 6.67 s,
    // finds it closed. strain sees the close while idle and opens another: no error, both
    // answered. (At 1 request/s over two connections, as a user would try first, strain reuses
    // one of them every second and the other has never answered a request, so Node closes
    // neither.)
    let url = format!("{}/index.html", node.base(Proto::H1));
    let (run, _) = node.run(Proto::H1, "-R 0.15 -c 1 -t 1 -d 7s", &url);
    assert_eq!((run.num("/requests"), run.num("/connections_opened")), (2, 2), "{}", run.stdout);
}

#[test]
fn go_counts_equal_its_log() {
    let go = Server::go();
    go.every_mode();
    go.continues();
}
