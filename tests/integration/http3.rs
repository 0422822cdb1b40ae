//! Issue 23: HTTP/3 over QUIC (`--http3`) against a real HTTP/3 server (Caddy): counts equal the
//! server's log in every mode, streams multiplexed on few connections, a stall corrected as over
//! HTTP/1 and HTTP/2, handshake failures in one line, and loss and delay in a namespace the
//! test makes itself.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::caddy::Caddy;
use crate::harness::{args, exclusive, load, script, strain, strain_at, strain_raw, Run};

const HELLO: &str = "respond \"hello\" 200";

/// The run exited 0 with no error of any kind, and every request sent was answered; nothing
/// went wrong, so no cause is named (docs/DIAGNOSES.md).
fn assert_clean(run: &Run) {
    let errors = ["connect", "read", "write", "timeout", "parse", "status", "content"];
    crate::harness::assert_clean(run, &errors, &["HTTP/3 resets:", "Connect errors:"]);
}

#[test]
fn closed_loop_and_rate_counts_equal_caddys_log() {
    let caddy = Caddy::start(HELLO);
    let url = caddy.url("/");
    let run = strain_at("--http3 -k -t 2 -c 4 -d 1s", &url);
    assert_clean(&run);
    let done = run.num("/requests");
    assert!(done > 100, "{}", run.stdout);
    assert_eq!(caddy.h3_requests(), done);
    let j = run.json.as_ref().unwrap();
    assert_eq!(j["protocol"], "h3");
    assert_eq!(j["http3"]["handshakes"], 4, "{}", j["http3"]);
    let schema = crate::harness::schema();
    assert!(schema.is_valid(j), "{:?}", schema.iter_errors(j).map(|e| e.to_string()).collect::<Vec<_>>());
    assert!(run.stdout.contains("HTTP/3 (h3): 1 streams per connection; handshake "), "{}", run.stdout);

    let run = load("--http3 -k -t 1 -c 4 -R 1000 -d 3s", &url);
    // Every request strain counts, Caddy logged. A clean-clone CI run with other tests'
    // servers on both cores left one send due in the run's last milliseconds unsent (alone:
    // none): 0.5 % is allowed, as for HTTP/2's rate.
    let (requests, unsent) = (run.num("/requests"), run.num("/rate/unsent"));
    assert!((2_985..=3_000).contains(&requests), "{requests} of 3,000 planned (0.5%)");
    assert!(requests + unsent <= 3_000 && unsent <= 15, "{unsent} unsent");
    assert_eq!(caddy.h3_requests(), done + requests);
}

#[test]
fn streams_are_multiplexed_on_few_connections() {
    let caddy = Caddy::start(HELLO);
    let run = load("--http3 -k -t 1 -c 2 -m 10 -n 5000", &caddy.url("/"));
    assert_eq!(run.num("/requests"), 5000);
    let log = caddy.requests();
    assert_eq!(log.len(), 5000);
    assert!(log.iter().all(|r| r.0 == "HTTP/3.0"));
    // Two QUIC connections on the thread's one UDP socket: one client port carried all 5,000.
    let ports: BTreeSet<&String> = log.iter().map(|r| &r.3).collect();
    assert_eq!(ports.len(), 1, "{ports:?}");
    let j = run.json.as_ref().unwrap();
    assert_eq!(j["http3"]["handshakes"], 2, "{}", j["http3"]);
    assert_eq!(j["http3"]["streams_per_connection"], 10);
}

#[test]
fn each_thread_and_source_address_has_one_udp_socket() {
    // A thread's connections from one local address share a socket: 2 threads x 2 source
    // addresses are 4 client (address, port) pairs for 8 connections, each address used.
    let caddy = Caddy::start(HELLO);
    let url = caddy.url("/").replace("localhost", "127.0.0.1");
    let run = load("--http3 -k -t 2 -c 8 -n 800 --source-addr 127.0.0.2 --source-addr 127.0.0.3", &url);
    assert_eq!(run.num("/requests"), 800);
    let j = run.json.as_ref().unwrap();
    assert_eq!(j["http3"]["handshakes"], 8, "{}", j["http3"]);
    let clients = caddy.clients();
    assert_eq!(clients.len(), 800);
    let pairs: BTreeSet<&(String, String)> = clients.iter().collect();
    assert_eq!(pairs.len(), 4, "{pairs:?}");
    let ips: BTreeSet<&str> = clients.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(ips, BTreeSet::from(["127.0.0.2", "127.0.0.3"]));
}

#[test]
fn a_stall_is_corrected_over_http3_as_over_http1() {
    let _alone = exclusive();
    // The rate tests' stall, over HTTP/3 to strain's origin: 2,000 req/s for 12 s while the
    // origin stalls 2 s at 4 s (the timeout is above the stall). Measured from when each
    // request should have been sent, 10% wait at least 0.8 s and 1% at least 1.88 s, plus the
    // time the origin takes to answer the 4,000 that waited: over HTTP/3 this test build's
    // origin answers about 25,000 a second, which adds up to 0.2 s near the p90 (0.9 s by
    // that arithmetic) and under 20 ms at the p99. The debug build on two busy cores drains at
    // half that speed (p90 1.08-1.10 s seen; 1.23 s on a slower machine), so the p90's bound
    // above is 1.3 s: an uncorrected or doubly counted stall still falls far outside it.
    let origin =
        crate::harness::Origin::start(&["-t", "1", "--stall-at", "4s", "--stall-for", "2s", "--tls", "--http3"]);
    let run = strain_at("--http3 -k -m 10 -t 2 -c 5 -d 12s -R 2000 -T 5s", &origin.url());
    let served = origin.stop();
    assert_clean(&run);
    assert_eq!(run.num("/requests"), 24_000);
    assert_eq!(served.requests, 24_000);
    let p90 = run.num("/latency_us/percentiles/90") as f64;
    let p99 = run.num("/latency_us/percentiles/99") as f64;
    assert!((720_000.0..=1_300_000.0).contains(&p90), "corrected p90 {p90} µs");
    assert!((p99 - 1_880_000.0).abs() <= 188_000.0, "corrected p99 {p99} µs");
    // Measured from the actual send, the stall all but vanishes.
    let u90 = run.num("/uncorrected_latency_us/percentiles/90");
    assert!(u90 < 100_000, "uncorrected p90 {u90}");
}

#[test]
fn a_server_that_closes_its_connections_is_counted_by_code() {
    // strain's origin stopped mid-run closes its QUIC connections with H3_NO_ERROR; the
    // requests in flight fail, and the reconnects meet a closed port.
    let origin = crate::harness::Origin::start(&["-t", "1", "--tls", "--http3"]);
    let url = origin.url();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json").display().to_string();
    let mut a = args("--http3 -k -c 2 -t 1 -d 2s -T 500ms --json");
    a.extend([out.as_str(), &url]);
    let child = crate::harness::spawn(&a);
    let start = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(700));
    let served = origin.stop();
    let run = crate::harness::finish(child, start);
    let text = std::fs::read_to_string(&out).unwrap_or_else(|_| panic!("{}\n{}", run.stdout, run.stderr));
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    let h3 = &j["http3"];
    // Both links connected; the origin closes both, but a link that sends (a reconnect's
    // request, an acknowledgement) after the origin exited can meet the port's ICMP error before
    // it reads the close waiting in its socket (seen in 1 run of 6): one close at least.
    assert_eq!(h3["handshakes"], 2, "{h3}");
    assert!((1..=2).contains(&h3["closes"]["H3_NO_ERROR"].as_u64().unwrap_or(0)), "{h3}");
    assert!(h3["handshake_failures"]["port_unreachable"].as_u64().unwrap_or(0) >= 1, "{h3}");
    // Every request the origin answered was counted, and none twice.
    assert!(served.requests >= j["requests"].as_u64().unwrap(), "{} vs {}", served.requests, j["requests"]);
}

#[test]
fn method_body_scripts_and_targets_go_over_http3() {
    let caddy = Caddy::start(HELLO);
    load("--http3 -k -t 1 -c 2 -n 100 -X POST --body hello", &caddy.url("/post"));
    let log = caddy.requests();
    assert_eq!(log.iter().filter(|r| r.1 == "POST" && r.2 == "/post" && r.0 == "HTTP/3.0").count(), 100);

    // A wrk script: request() picks the path, response() counts what came back.
    let (_d, lua) = script(
        "local n = 0\nrequest = function() n = n + 1; return wrk.format('GET', '/s/' .. (n % 2)) end\n\
         local seen = 0\nresponse = function(status, headers, body) if status == 200 and body == 'hello' then seen = seen + 1 end end\n\
         done = function() end",
    );
    let url = caddy.url("/");
    let run = strain(&["--http3", "-k", "-t", "1", "-c", "1", "-m", "4", "-n", "200", "-s", &lua, &url]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let log = caddy.requests();
    assert_eq!(log.iter().filter(|r| r.2 == "/s/0").count(), 100);
    assert_eq!(log.iter().filter(|r| r.2 == "/s/1").count(), 100);

    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets.txt");
    let (a_url, b_url) = (caddy.url("/a"), caddy.url("/b"));
    std::fs::write(&targets, format!("GET {a_url}\n\nGET {b_url}\n")).unwrap();
    let t = targets.display().to_string();
    let run = strain(&["--http3", "-k", "-t", "1", "-c", "2", "-n", "300", "--targets", &t]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let log = caddy.requests();
    assert_eq!(log.iter().filter(|r| r.2 == "/a").count(), 150);
    assert_eq!(log.iter().filter(|r| r.2 == "/b").count(), 150);
}

#[test]
fn find_max_thresholds_and_html_work_over_http3() {
    let caddy = Caddy::start(HELLO);
    let url = caddy.url("/");
    let search =
        "find-max --http3 -k -c 4 -t 1 --slo p99<1s --start 200 --max 400 --warmup 100ms --step-duration 500ms";
    let run = load(search, &url);
    let steps = run.json.as_ref().unwrap()["steps"].as_array().unwrap().clone();
    assert!(!steps.is_empty() && steps.iter().all(|s| s["result"]["protocol"] == "h3"), "{}", run.stdout);

    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("run.html").display().to_string();
    let run = strain_at(
        &format!("--http3 -k -c 2 -t 1 -d 1s --threshold p99<1s --threshold rps>1000000 --html {html}"),
        &url,
    );
    assert_eq!(run.code, 99, "{}\n{}", run.stdout, run.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-panel=\"http3\""));
}

#[test]
fn a_proxy_test_loads_caddy_as_a_reverse_proxy_over_http3() {
    // Caddy terminates HTTP/3 and forwards to strain's in-process origin over HTTP/1.1, with no
    // cache.
    let origin_port = crate::harness::free_port();
    let caddy = Caddy::start(&format!("reverse_proxy 127.0.0.1:{origin_port}"));
    crate::proxy::assert_passed_through_tls(origin_port, caddy.port, "--http3 -m 4", "h3");
}

#[test]
fn segments_merge_and_live_metrics_work_over_http3() {
    // Two segments of `-R 1000 -d 2s` in parallel, each with its metrics endpoint; their merge
    // is the one test Caddy served, and each endpoint's request total is its segment's.
    let caddy = Caddy::start(HELLO);
    let url = caddy.url("/");
    let dir = tempfile::tempdir().unwrap();
    let start = std::time::Instant::now();
    let children: Vec<(String, String, std::process::Child)> = (0..2)
        .map(|i| {
            let out = dir.path().join(format!("s{i}.json")).display().to_string();
            let listen = format!("127.0.0.1:{}", crate::harness::free_port());
            let segment = format!("{i}/2");
            let own = ["--segment", &segment, "--metrics-listen", &listen, "--metrics-linger", "3s", "--json", &out];
            let mut a = args("--http3 -k -t 1 -c 2 -R 1000 -d 2s --quiet");
            a.extend(own);
            a.push(&url);
            let child = crate::harness::spawn(&a);
            (out.clone(), listen.clone(), child)
        })
        .collect();
    // The endpoints linger after the load: their totals are final by then.
    std::thread::sleep(Duration::from_millis(2800).saturating_sub(start.elapsed()));
    let scraped: Vec<u64> = children.iter().map(|(_, listen, _)| scrape_total(listen)).collect();
    let mut files = Vec::new();
    for ((out, _, child), scraped) in children.into_iter().zip(scraped) {
        let run = crate::harness::finish(child, start);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(scraped, j["requests"].as_u64().unwrap());
        files.push(out);
    }
    let merged = dir.path().join("m.json").display().to_string();
    let run = strain_raw(&["merge", &files[0], &files[1], "--json", &merged]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    // Exactly what Caddy answered; the schedule's 2,000 within 0.5%, as over TCP (segments
    // started apart by a busy machine may leave a request of the schedule unsent).
    let requests = m["requests"].as_u64().unwrap();
    assert!(requests.abs_diff(2000) <= 10, "{requests}");
    assert_eq!(m["protocol"], "h3");
    // -c 2 is the whole test's: a connection for each segment.
    assert_eq!(m["http3"]["handshakes"], 2, "{}", m["http3"]);
    assert_eq!(caddy.h3_requests(), requests);
    let schema = crate::harness::schema();
    assert!(schema.is_valid(&m), "{:?}", schema.iter_errors(&m).map(|e| e.to_string()).collect::<Vec<_>>());
}

/// `strain_requests_total` summed over its series, scraped once from `addr`'s `/metrics`.
fn scrape_total(addr: &str) -> u64 {
    use std::io::{Read, Write};
    let mut s = crate::harness::connect(addr.parse().unwrap());
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines()
        .filter(|l| l.starts_with("strain_requests_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[test]
fn an_untrusted_certificate_fails_without_insecure() {
    let caddy = Caddy::start(HELLO);
    let url = caddy.url("/");
    let run = strain(&["--http3", "-n", "10", "-c", "1", "-t", "1", &url]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let line = run.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.contains("TLS certificate rejected in the QUIC handshake") && line.contains("--insecure"), "{line}");
    assert!(run.num("/http3/handshake_failures/certificate") >= 1);
    assert_eq!(caddy.h3_requests(), 0);
}

#[test]
fn a_closed_or_silent_udp_port_says_no_quic_answer() {
    // Nothing on the port: the kernel's ICMP port unreachable comes back at once.
    let port = crate::harness::free_port();
    let url = format!("https://localhost:{port}/");
    let run = strain_raw(&["--http3", "-n", "10", "-T", "1s", "-c", "1", "-t", "1", &url]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let want = format!("no QUIC answer from 127.0.0.1:{port} (ICMP port unreachable); is UDP port {port} open?");
    assert!(run.stderr.trim().ends_with(&want), "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1);
    // A socket that takes every datagram and answers none: the handshake times out.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let url = format!("https://localhost:{port}/");
    let run = strain_raw(&["--http3", "-n", "10", "-T", "1s", "-c", "1", "-t", "1", &url]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let want = format!("no QUIC answer from 127.0.0.1:{port} within 1s; is UDP port {port} open?");
    assert!(run.stderr.trim().ends_with(&want), "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
}

#[test]
fn http3_needs_https_and_tcp_flags_are_refused() {
    let run = strain_raw(&["--http3", "-n", "1", "http://127.0.0.1:9/"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("HTTP/3 runs over QUIC, which is always encrypted: give an https:// URL"),
        "{}",
        run.stderr
    );
    let run = strain_raw(&["--http3", "--http2", "-n", "1", "https://127.0.0.1:9/"]);
    assert_eq!(run.code, 2);
    let run = strain_raw(&["-m", "4", "-n", "1", "https://127.0.0.1:9/"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("-m (streams per connection) needs --http2 or --http3"), "{}", run.stderr);
}

#[test]
fn loss_and_delay_keep_counts_exact() {
    let _alone = exclusive();
    // This machine's kernel has no netem (sch_netem is not built), so the loss and delay are
    // made by a relay on loopback: every datagram, either way, waits 20 ms and 1% are dropped.
    let caddy = Caddy::start(HELLO);
    let relay = LossyRelay::start(caddy.port, Duration::from_millis(20), 0.01);
    let url = format!("https://localhost:{}/", relay.port);
    // Caddy routes by the authority, port included: it names Caddy's own.
    let host = format!("Host: localhost:{}", caddy.port);
    let mut a = args("--http3 -k -t 1 -c 4 -m 4 -n 2000 -T 10s -H");
    a.extend([host.as_str(), &url]);
    let run = strain(&a);
    assert_clean(&run);
    assert_eq!(run.num("/requests"), 2000);
    assert_eq!(caddy.h3_requests(), 2000);
    // A request needs a round trip at least (40 ms); a lost packet costs a probe timeout more.
    let p50 = run.num("/latency_us/percentiles/50");
    let p99 = run.num("/latency_us/percentiles/99");
    assert!((40_000..120_000).contains(&p50), "p50 {p50}");
    assert!(p99 < 1_000_000, "p99 {p99}");
    let h3 = &run.json.as_ref().unwrap()["http3"];
    assert!(h3["packets_lost"].as_u64().unwrap() > 0, "{h3}");
    assert!(relay.dropped() > 0);
}

/// A UDP relay on loopback that delays every datagram by a fixed time and drops a share of
/// them, both ways: a link with loss and latency between strain and a server.
struct LossyRelay {
    /// Where clients send.
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// One datagram on its way: when it is due, the socket it leaves by, and where to (a
/// connected socket's peer when `None`).
type Queued = (std::time::Instant, std::sync::Arc<std::net::UdpSocket>, Option<std::net::SocketAddr>, Vec<u8>);

impl LossyRelay {
    fn start(server_port: u16, delay: Duration, loss: f64) -> LossyRelay {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::{mpsc, Arc};
        let front = Arc::new(std::net::UdpSocket::bind("127.0.0.1:0").unwrap());
        front.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let port = front.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel::<Queued>();
        let mut threads = Vec::new();
        // The sender: the delay is the same for every datagram, so they leave in the order
        // they came.
        let done = stop.clone();
        threads.push(std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let Ok((due, socket, to, data)) = rx.recv_timeout(Duration::from_millis(50)) else { continue };
                std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
                let _ = match to {
                    Some(to) => socket.send_to(&data, to),
                    None => socket.send(&data),
                };
            }
        }));
        let (done, lost) = (stop.clone(), dropped.clone());
        threads.push(std::thread::spawn(move || {
            // A fixed seed: the same datagrams are dropped in every run of the test.
            let mut seed = 0x9e37_79b9_7f4a_7c15u64;
            let mut drop_one = move || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed % 1_000_000) as f64 / 1_000_000.0 < loss
            };
            let mut backs: std::collections::HashMap<std::net::SocketAddr, Arc<std::net::UdpSocket>> =
                Default::default();
            let mut buf = vec![0u8; 65536];
            while !done.load(Ordering::Relaxed) {
                let Ok((n, from)) = front.recv_from(&mut buf) else { continue };
                if drop_one() {
                    lost.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let back = backs.entry(from).or_insert_with(|| {
                    // A socket of its own toward the server for each client address, and a
                    // thread that brings the server's datagrams back to that client.
                    let back = Arc::new(std::net::UdpSocket::bind("127.0.0.1:0").unwrap());
                    back.connect(("127.0.0.1", server_port)).unwrap();
                    back.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                    let (b, f, tx, done, lost) = (back.clone(), front.clone(), tx.clone(), done.clone(), lost.clone());
                    std::thread::spawn(move || {
                        let mut buf = vec![0u8; 65536];
                        let mut i = 0u64;
                        while !done.load(Ordering::Relaxed) {
                            let Ok(n) = b.recv(&mut buf) else { continue };
                            i += 1;
                            // Every hundredth datagram back is dropped: 1% the other way.
                            if i % ((1.0 / loss) as u64).max(1) == 0 {
                                lost.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                            let _ =
                                tx.send((std::time::Instant::now() + delay, f.clone(), Some(from), buf[..n].to_vec()));
                        }
                    });
                    back
                });
                let _ = tx.send((std::time::Instant::now() + delay, back.clone(), None, buf[..n].to_vec()));
            }
        }));
        LossyRelay { port, stop, dropped, threads }
    }

    /// Datagrams dropped so far, both ways.
    fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for LossyRelay {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
