//! `strain origin --tls --http3`: HTTP/3 over QUIC on the UDP port of the TCP port's number,
//! driven by strain's own HTTP/3 client (`--http3 -k`): exact counts in the origin's totals and
//! `/_strain/stats`, documents with the length, cache headers and bytes HTTP/1.1 gives them,
//! 304s, delays, a known capacity, the byte rate, a stall, aborts as stream resets, the
//! keep-alive limit as GOAWAY, `Alt-Svc` over TCP, garbage datagrams, and `--http3` refused
//! without `--tls`.

use std::net::UdpSocket;
use std::time::Duration;

use crate::harness::{load, run_program, script, self_signed, strain_raw, Origin, Run};
use crate::origin_streams;

/// The origin started with `extra` after `--tls --http3`.
fn origin(extra: &[&str]) -> Origin {
    let mut flags = vec!["--tls", "--http3"];
    flags.extend_from_slice(extra);
    Origin::start(&flags)
}

/// curl over TCP (HTTP/1.1 unless `flags` say otherwise), certificate unchecked.
fn curl(flags: &[&str], url: &str) -> String {
    let mut a = vec!["-k", "-s", "--max-time", "5"];
    a.extend_from_slice(flags);
    a.push(url);
    let run = run_program("curl", &a);
    assert_eq!(run.code, 0, "curl {a:?}: {}", run.stderr);
    run.stdout
}

/// The origin's counters, read over HTTP/1.1.
fn stats(origin: &Origin) -> serde_json::Value {
    let text = curl(&["--http1.1"], &origin.url_of("/_strain/stats"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Every error count of the run is zero, and every request sent was answered.
fn assert_clean(run: &Run) {
    let j = run.json.as_ref().unwrap();
    for kind in ["connect", "read", "write", "timeout", "parse", "status", "reset"] {
        assert_eq!(j["errors"][kind].as_u64().unwrap_or(0), 0, "{kind}: {}", run.stdout);
    }
    assert_eq!(j["sent"], j["requests"], "{}", run.stdout);
    assert_eq!(j["protocol"], "h3", "{}", run.stdout);
}

#[test]
fn counts_over_http3_equal_the_origins_totals_and_stats() {
    let origin = origin(&["-t", "2"]);
    let run = load("--http3 -k -n 1000 -c 4 -m 10 -t 1", &origin.url());
    assert_clean(&run);
    assert_eq!(run.num("/requests"), 1000);
    assert_eq!(run.json.as_ref().unwrap()["status"]["200"], 1000);
    assert_eq!(run.num("/http3/handshakes"), 4, "{}", run.stdout);
    let live = stats(&origin);
    assert_eq!(live["requests"], 1000, "{live}");
    assert_eq!(live["ok"], 1000, "{live}");
    let served = origin.stop();
    assert_eq!(served.requests, 1000);
    // Four QUIC connections, and the TCP one that read the stats.
    assert_eq!(served.connections, 5);
}

#[test]
fn documents_over_http3_are_what_http1_serves_and_conditional_ones_get_304s() {
    let origin = origin(&["-t", "1", "--ims-not-modified", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // The first response's head and body to files, and every body's length.
    let (_s, lua) = script(&format!(
        "local n = 0\n\
         function response(status, headers, body)\n\
           n = n + 1\n\
           if n == 1 then\n\
             local f = io.open('{d}/head.txt', 'w')\n\
             f:write(status, '\\n')\n\
             for _, k in ipairs({{'content-length', 'content-type', 'cache-control', 'last-modified', 'etag', 'alt-svc'}}) do\n\
               f:write(k, ': ', headers[k] or '-', '\\n')\n\
             end\n\
             f:close()\n\
             local b = io.open('{d}/body.bin', 'wb'); b:write(body); b:close()\n\
           end\n\
           local l = io.open('{d}/lengths.txt', 'a'); l:write(#body, '\\n'); l:close()\n\
         end\n"
    ));
    let doc = origin.url_of("/d/7/1000");
    load(&format!("--http3 -k -n 10 -c 1 -m 2 -t 1 -s {lua}"), &doc);
    let head = std::fs::read_to_string(dir.path().join("head.txt")).unwrap();
    let h1 = curl(&["--http1.1", "-D", "-"], &doc).to_ascii_lowercase();
    for line in head.lines().skip(1) {
        let line = line.to_ascii_lowercase();
        assert!(h1.contains(&format!("{line}\r\n")), "{line:?} over HTTP/3; HTTP/1.1 said:\n{h1}");
    }
    assert_eq!(head.lines().next(), Some("200"), "{head}");
    assert!(head.contains(&format!("alt-svc: h3=\":{}\"; ma=86400", origin.addr.port())), "{head}");
    let body = std::fs::read(dir.path().join("body.bin")).unwrap();
    assert_eq!(body, curl(&["--http1.1"], &doc).into_bytes(), "the same bytes as over HTTP/1.1");
    let lengths = std::fs::read_to_string(dir.path().join("lengths.txt")).unwrap();
    assert_eq!(lengths, "1000\n".repeat(10));

    // A large document: many DATA frames and flow-control windows, every byte there.
    std::fs::remove_file(dir.path().join("lengths.txt")).unwrap();
    load(&format!("--http3 -k -n 6 -c 2 -m 2 -t 1 -s {lua}"), &origin.url_of("/d/8/3000000"));
    let lengths = std::fs::read_to_string(dir.path().join("lengths.txt")).unwrap();
    assert_eq!(lengths, "3000000\n".repeat(6));

    // Every conditional request is answered 304, without a body.
    let run = load("--http3 -k -n 20 -c 1 -m 4 -t 1 -H If-None-Match:\"7-1000\"", &doc);
    assert_eq!(run.json.as_ref().unwrap()["status"]["304"], 20, "{}", run.stdout);
    let live = stats(&origin);
    assert_eq!(live["not_modified"], 20, "{live}");
    // The script's 16, the 20 conditional ones, curl's two over HTTP/1.1.
    assert_eq!(origin.stop().requests, 16 + 20 + 2);
}

#[test]
fn a_certificate_from_pem_files_serves_http3_too() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path(), &["localhost"]);
    let origin = origin(&["-t", "1", "--cert", &cert, "--key", &key]);
    let run = load("--http3 -k -n 50 -c 1 -t 1", &origin.url());
    assert_clean(&run);
    assert_eq!(origin.stop().requests, 50);
}

#[test]
fn a_delay_holds_each_stream_not_the_connection() {
    // Eight streams at a time, each answered after 20 ms: at most 400 requests in a second.
    let run = origin_streams::delay_holds_each_stream(origin, "--http3 -k", 20, 200..=410);
    assert_clean(&run);
    let p50_us = run.num("/latency_us/percentiles/50");
    assert!(p50_us >= 20_000, "p50 {p50_us} µs");
}

#[test]
fn a_known_capacity_holds_over_http3() {
    assert_clean(&origin_streams::known_capacity_holds(origin, "--http3 -k"));
}

#[test]
fn the_byte_rate_holds_over_http3() {
    let origin = origin(&["-t", "1", "--byte-rate", "200000"]);
    // 100 kB of document at 200 kB/s: half a second, not less.
    let run = load("--http3 -k -n 1 -c 1 -t 1", &origin.url_of("/d/5/100000"));
    assert_clean(&run);
    let ms = run.num("/latency_us/max") as f64 / 1000.0;
    assert!((450.0..1500.0).contains(&ms), "{ms} ms");
}

#[test]
fn a_stall_holds_http3_streams_and_answers_them_after() {
    assert_clean(&origin_streams::stall_holds_streams(origin, "--http3 -k", "500ms"));
}

#[test]
fn aborted_documents_reset_their_streams_and_count_as_failures() {
    let origin = origin(&["-t", "1", "--abort-rate", "1"]);
    let run = load("--http3 -k -n 100 -c 2 -m 4 -t 1", &origin.url_of("/d/3/5000"));
    let j = run.json.as_ref().unwrap();
    // Every document was cut (its head and part of its body sent) and its stream reset.
    assert_eq!(j["errors"]["reset"], 100, "{}", run.stdout);
    assert_eq!(run.num("/requests"), 0, "{}", run.stdout);
    assert_eq!(j["http3"]["resets"]["H3_INTERNAL_ERROR"], 100, "{}", j["http3"]);
    assert!(run.num("/bytes") > 100 * 1000, "bodies were sent before the cuts: {}", run.stdout);
    let live = stats(&origin);
    assert_eq!(live["aborted"], 100, "{live}");
    assert_eq!(live["requests"], 100, "{live}");
    let served = origin.stop();
    // Two QUIC connections kept (resets, not closes), and the one that read the stats.
    assert_eq!(served.connections, 3);
}

#[test]
fn the_keepalive_limit_is_a_goaway_and_the_client_sends_the_rest_again() {
    let origin = origin(&["-t", "1", "--keepalive", "50"]);
    let run = load("--http3 -k -n 1000 -c 2 -m 8 -t 1", &origin.url());
    assert_clean(&run);
    assert_eq!(run.num("/requests"), 1000);
    assert!(run.num("/http3/goaways") >= 18, "{}", run.stdout);
    let served = origin.stop();
    assert_eq!(served.requests, 1000);
    // 50 requests per connection, but for the last ones.
    assert!((20..=22).contains(&served.connections), "{} connections", served.connections);
}

#[test]
fn alt_svc_advertises_http3_over_http1_and_h2() {
    let origin = origin(&["-t", "1"]);
    let want = format!("alt-svc: h3=\":{}\"; ma=86400\r\n", origin.addr.port());
    for version in ["--http1.1", "--http2"] {
        let head = curl(&[version, "-I"], &origin.url()).to_ascii_lowercase();
        assert!(head.contains(&want), "{version}: {head}");
        let head = curl(&[version, "-D", "-", "-o", "/dev/null"], &origin.url_of("/d/1/10")).to_ascii_lowercase();
        assert!(head.contains(&want), "{version}: {head}");
    }
    drop(origin);
    // Without --http3, nothing is advertised.
    let plain = Origin::start(&["-t", "1", "--tls"]);
    let head = curl(&["--http1.1", "-I"], &plain.url()).to_ascii_lowercase();
    assert!(!head.contains("alt-svc"), "{head}");
}

/// A generator of test bytes (xorshift), so garbage is the same in every run.
fn garbage(seed: &mut u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed as u8
        })
        .collect()
}

/// A QUIC long-header Initial (version `version`) with random ids and a random payload,
/// padded to `len` bytes.
fn initial(seed: &mut u64, version: u32, len: usize) -> Vec<u8> {
    let mut d = vec![0xc0];
    d.extend_from_slice(&version.to_be_bytes());
    d.push(8);
    d.extend(garbage(seed, 8));
    d.push(8);
    d.extend(garbage(seed, 8));
    // No token; a two-byte length of the rest.
    d.push(0);
    let rest = len - d.len() - 2;
    d.extend_from_slice(&(0x4000 | rest as u16).to_be_bytes());
    d.extend(garbage(seed, rest));
    d
}

#[test]
fn garbage_datagrams_open_nothing_and_the_origin_serves_on() {
    let origin = origin(&["-t", "1"]);
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    for i in 0..300 {
        let len = 1 + (i * 37) % 1400;
        udp.send_to(&garbage(&mut seed, len), origin.addr).unwrap();
        // Initials of QUIC v1 that do not decrypt, short and long enough.
        udp.send_to(&initial(&mut seed, 1, 100 + i % 1300), origin.addr).unwrap();
    }
    // A version the origin does not speak gets a version negotiation (version 0) listing v1.
    // Sent again until answered: the burst above may still fill the origin's socket buffer.
    udp.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let probe = initial(&mut seed, 0x1a2a_3a4a, 1200);
    let mut buf = [0u8; 1500];
    let n = (0..20)
        .find_map(|_| {
            udp.send_to(&probe, origin.addr).unwrap();
            let (n, _) = udp.recv_from(&mut buf).ok()?;
            (buf[1..5] == [0, 0, 0, 0]).then_some(n)
        })
        .expect("a version negotiation");
    assert!(buf[..n].windows(4).any(|w| w == [0, 0, 0, 1]), "{:x?}", &buf[..n]);
    let run = load("--http3 -k -n 500 -c 2 -m 4 -t 1", &origin.url());
    assert_clean(&run);
    let served = origin.stop();
    assert_eq!(served.requests, 500);
    assert_eq!(served.connections, 2, "garbage opened connections");
}

#[test]
fn http3_without_tls_or_its_udp_port_is_refused_in_one_line() {
    let run = strain_raw(&["origin", "--listen", "127.0.0.1:0", "--http3"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("strain: ") && run.stderr.contains("--tls"), "{}", run.stderr);
    // The UDP port of the same number is taken.
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let run = strain_raw(&["origin", "--listen", &listen, "--tls", "--http3"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with(&format!("strain: cannot listen on UDP {listen} for HTTP/3: ")), "{}", run.stderr);
}

#[test]
fn unused_connections_are_held_past_the_idle_timeout_by_pings() {
    // 2 requests a second over 4 connections leave most of them without a stream for the whole
    // 40 s: past QUIC's 30 s idle timeout they stay open (a PING each 15 s unused), as TCP
    // connections do, instead of idling out and being opened again.
    let origin = origin(&["-t", "1"]);
    let run = load("--http3 -k -R 2 -c 4 -m 1 -t 1 -d 40s", &origin.url());
    assert_clean(&run);
    assert_eq!(run.num("/requests"), 80, "{}", run.stdout);
    assert_eq!(run.num("/http3/idle_timeouts"), 0, "{}", run.stdout);
    assert_eq!(run.num("/http3/handshakes"), 4, "{}", run.stdout);
    assert_eq!(origin.stop().connections, 4);
}
