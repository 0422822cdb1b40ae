//! `strain origin` end to end: its jtest-style flags seen by a raw client, and its exit lines.

use std::io::{Read, Write};
use std::net::SocketAddr;

use crate::harness::{connect, strain_raw, Origin};

/// Sends `req` and reads until the server closes.
fn exchange(addr: SocketAddr, req: &[u8]) -> Vec<u8> {
    let mut s = connect(addr);
    s.write_all(req).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    got
}

#[test]
fn keepalive_closes_after_n_responses_and_exit_lines_count_statuses() {
    let origin = Origin::start_heard(&["-t", "1", "--keepalive", "2", "--ims-not-modified", "1"]);
    assert_eq!(origin.url(), format!("http://{}/", origin.addr), "its first line names a plain HTTP URL");
    // Three pipelined requests: the second answer (a 304) closes, the third is never answered.
    let req = b"GET /d/1/100 HTTP/1.1\r\nHost: o\r\n\r\n\
                GET /d/1/100 HTTP/1.1\r\nHost: o\r\nIf-Modified-Since: Wed, 01 Jan 2020 00:00:01 GMT\r\n\r\n\
                GET /d/1/100 HTTP/1.1\r\nHost: o\r\n\r\n";
    let got = exchange(origin.addr, req);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n"), "{text}");
    assert_eq!(text.matches("HTTP/1.1 ").count(), 2, "{text}");
    let second = &text[text.rfind("HTTP/1.1 ").unwrap()..];
    assert!(second.starts_with("HTTP/1.1 304 Not Modified\r\n"), "{second}");
    assert!(second.contains("\r\nConnection: close\r\n"), "{second}");
    assert!(second.ends_with("\r\n\r\n"), "a 304 has no body: {second:?}");

    let run = origin.exit();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout.trim(),
        format!("strain origin served 2 requests on 1 connections ({} bytes in, {} bytes out)", req.len(), got.len())
    );
    assert!(run.stderr.contains("strain origin: 200 1, 304 1, aborted 0\n"), "{}", run.stderr);
}

#[test]
fn abort_rate_cuts_documents_and_stats_are_served_uncounted() {
    let origin = Origin::start(&["-t", "1", "--abort-rate", "1", "--content-type", "html", "--max-age", "60"]);
    let got = exchange(origin.addr, b"GET /d/3/5000 HTTP/1.1\r\nHost: o\r\n\r\n");
    let text = String::from_utf8_lossy(&got);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.contains("\r\nContent-Length: 5000\r\nContent-Type: text/html\r\nCache-Control: max-age=60\r\n"));
    assert!(head.contains("\r\nETag: \"3-5000\""), "{head}");
    assert!(body.len() < 5000 && "/d/3/5000\n".starts_with(&body[..body.len().min(10)]), "{} bytes", body.len());

    let got = exchange(origin.addr, b"GET /_strain/stats HTTP/1.1\r\nConnection: close\r\n\r\n");
    let text = String::from_utf8(got).unwrap();
    let json: serde_json::Value = serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!((json["requests"].as_u64(), json["ok"].as_u64(), json["aborted"].as_u64()), (Some(1), Some(1), Some(1)));
    // The exit line is unchanged: the stats request is not counted.
    let served = origin.stop();
    assert_eq!((served.requests, served.connections), (1, 2));
}

#[test]
fn probabilities_out_of_range_are_refused() {
    for (flag, value) in [("--abort-rate", "1.5"), ("--ims-not-modified", "-1")] {
        let run = strain_raw(&["origin", "--listen", "127.0.0.1:0", flag, value]);
        assert_eq!(run.code, 2, "{flag}");
        assert_eq!(run.stderr, format!("strain: {flag} must be a probability between 0 and 1, not {value}\n"));
    }
    let run = strain_raw(&["origin", "--byte-rate", "0"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}
