//! Real caching proxies on loopback (Apache Traffic Server and nginx), started by the tests from
//! private directories, for `strain proxy`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::harness::{free_port, wait_listening};

/// A private Apache Traffic Server.
pub struct Ats {
    child: Child,
    _dir: tempfile::TempDir,
    pub port: u16,
}

/// What the ATS instance does with requests.
pub enum AtsMode {
    /// Reverse proxy mapping its own address to the origin's.
    Reverse { origin_port: u16 },
    /// Forward proxy (absolute-form requests).
    Forward,
}

fn ats_bin() -> &'static str {
    for p in ["/usr/bin/traffic_server", "/usr/sbin/traffic_server"] {
        if Path::new(p).exists() {
            return p;
        }
    }
    panic!("Apache Traffic Server is not installed: run `bash scripts/test.sh` (it installs trafficserver)");
}

impl Ats {
    /// Starts ATS with a 128 MB disk cache and waits until it answers its stats page.
    pub fn start(mode: AtsMode) -> Ats {
        let bin = ats_bin();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for sub in ["etc", "cache", "var", "run", "log"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let root = d.display().to_string();
        let runroot = format!(
            "prefix: {root}\nexec_prefix: /usr\nbindir: /usr/bin\nsbindir: /usr/sbin\nsysconfdir: {root}/etc\n\
             datadir: {root}/cache\nlibdir: /usr/lib/trafficserver\nlibexecdir: /usr/lib/trafficserver/modules\n\
             localstatedir: {root}/var\nruntimedir: {root}/run\nlogdir: {root}/log\ncachedir: {root}/cache\n"
        );
        std::fs::write(d.join("runroot.yaml"), runroot).unwrap();
        let status =
            Command::new("cp").args(["-r", "/etc/trafficserver/body_factory"]).arg(d.join("etc")).status().unwrap();
        assert!(status.success());
        for empty in [
            "cache.config",
            "hosting.config",
            "parent.config",
            "socks.config",
            "splitdns.config",
            "ssl_multicert.config",
            "volume.config",
            "sni.yaml",
            "strategies.yaml",
            "logging.yaml",
        ] {
            std::fs::write(d.join("etc").join(empty), "").unwrap();
        }
        let port = free_port();
        let (remap_required, remap) = match mode {
            AtsMode::Reverse { origin_port } => {
                (1, format!("map http://127.0.0.1:{port}/ http://127.0.0.1:{origin_port}/\n"))
            }
            AtsMode::Forward => (0, String::new()),
        };
        let records = format!(
            "CONFIG proxy.config.admin.user_id STRING #-1\n\
             CONFIG proxy.config.http.server_ports STRING {port}:ipv4:ip-in=127.0.0.1\n\
             CONFIG proxy.config.url_remap.remap_required INT {remap_required}\n\
             CONFIG proxy.config.http.wait_for_cache INT 2\n\
             CONFIG proxy.config.cache.ram_cache.size INT 16777216\n\
             CONFIG proxy.config.cache.min_average_object_size INT 1024\n\
             CONFIG proxy.config.http.insert_response_via_str INT 2\n\
             CONFIG proxy.config.crash_log_helper STRING NULL\n\
             CONFIG proxy.config.raw_stat_sync_interval_ms INT 200\n\
             CONFIG proxy.config.log.max_secs_per_buffer INT 1\n\
             CONFIG proxy.config.log.periodic_tasks_interval INT 1\n\
             CONFIG proxy.config.exec_thread.autoconfig INT 0\n\
             CONFIG proxy.config.exec_thread.limit INT 2\n\
             CONFIG proxy.config.diags.debug.enabled INT 0\n"
        );
        std::fs::write(d.join("etc/records.config"), records).unwrap();
        std::fs::write(d.join("etc/remap.config"), remap).unwrap();
        std::fs::write(d.join("etc/storage.config"), format!("{root}/cache/cache.db 128M\n")).unwrap();
        std::fs::File::create(d.join("cache/cache.db")).unwrap().set_len(128 << 20).unwrap();
        std::fs::write(
            d.join("etc/ip_allow.yaml"),
            "ip_allow:\n  - apply: in\n    ip_addrs: 127.0.0.1\n    action: allow\n  - apply: in\n    ip_addrs: 0/0\n    action: deny\n",
        )
        .unwrap();
        std::fs::write(d.join("etc/plugin.config"), "stats_over_http.so\n").unwrap();
        let out = d.join("log/stdout.log").display().to_string();
        let child = Command::new("setsid")
            .arg(bin)
            .arg(format!("--run-root={root}"))
            .args(["--bind_stdout", &out, "--bind_stderr", &out])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn traffic_server");
        let ats = Ats { child, _dir: dir, port };
        ats.wait_ready();
        ats
    }

    fn wait_ready(&self) {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        wait_listening(addr);
        // The stats page is answered by ATS itself, once the cache is up.
        let start = Instant::now();
        loop {
            if let Some(body) = http_get(addr, "/_stats") {
                if body.contains("proxy.process") {
                    return;
                }
            }
            assert!(start.elapsed() < Duration::from_secs(20), "ATS did not come up");
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Ats {
    fn drop(&mut self) {
        // setsid made it a process group leader: stop the group.
        crate::harness::signal_group(self.child.id(), "KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking GET for small pages; `None` on any failure.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n", addr.port()).as_bytes(),
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text)
}
