//! `strain replay` on recordings that real software wrote (`../shared/realtraffic`: HAR from
//! browsers and capture proxies, Proxy Verifier files from its own tests and from Apache
//! Traffic Server's, nginx and Apache access logs with scanner junk, a vegeta targets file):
//! each file a user would expect to replay does, with exit 0, the origin answering exactly what
//! strain says it sent, every record read, and the replay's counts adding up (records = sent +
//! each cause of a skip + those outside the window); each file that cannot be replayed is one
//! line that says why and what to do, exit 2, nothing sent.

use std::path::{Path, PathBuf};

use crate::harness::{strain, Origin};

/// The shared corpus, beside the checkout.
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/realtraffic");

/// The records each file holds, as the corpus's README counts them.
const RECORDS: &[(&str, u64)] = &[
    ("har/haralyzer-cnn-firebug.har", 145),
    ("har/harviewer-ie11.fiddler.har", 11),
    ("har/mitmproxy-charles.har", 1),
    ("har/mitmproxy-chrome.har", 3),
    ("har/mitmproxy-firefox.har", 14),
    ("har/mitmproxy-insomnia.har", 1),
    ("har/mitmproxy-postdata.har", 1),
    ("har/mitmproxy-safari.har", 19),
    ("har/mitmproxy-with-bom.har", 1),
    ("har/pagexray-case-sensitive-protocol.har", 169),
    ("har/pagexray-http2-firefox.har", 10),
    ("proxy_verifier/ats-header_rewrite_bundle.replay.yaml", 80),
    ("proxy_verifier/ats-malformed_chunked_header.replay.yaml", 15),
    ("proxy_verifier/pv-client-side-delay.yaml", 3),
    ("proxy_verifier/pv-http2_to_http2.yaml", 5),
    ("proxy_verifier/pv-traffic_dump-file1.json", 3),
];

/// The counts under `/replay/counts` that are records not sent, each for its cause.
const SKIPS: &[&str] = &["bad", "no_request", "not_http", "truncated", "unreadable", "skipped_method", "skipped_body"];

/// Every HAR and Proxy Verifier file of the corpus.
fn corpus_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["har", "proxy_verifier"] {
        let dir = Path::new(CORPUS).join(dir);
        let listed = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        files.extend(listed.map(|entry| entry.unwrap().path()));
    }
    files.sort();
    files
}

/// Replays `file` against a fresh origin (POST too: three files hold nothing else); asserts
/// exit 0, the origin's count equal to strain's sent, and counts that add up. Returns the
/// JSON's `/replay/counts` and sent.
fn replay(file: &Path) -> (serde_json::Value, u64) {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let path = file.display().to_string();
    let line = ["replay", "--speed", "1000", "--max-gap", "100ms", "-c", "4", "-t", "1", "--methods", "GET,HEAD,POST"];
    let run = strain(&[&line[..], &[&path, &url]].concat());
    let served = origin.stop();
    assert_eq!(run.code, 0, "{path}\n{}\n{}", run.stdout, run.stderr);
    let sent = run.num("/sent");
    assert_eq!(served.requests, sent, "{path}: the origin answered what strain sent\n{}", run.stdout);
    let counts = run.json.as_ref().unwrap()["replay"]["counts"].clone();
    let count = |name: &str| counts[name].as_u64().unwrap_or_else(|| panic!("{path}: no counts.{name} in {counts}"));
    let skipped: u64 = SKIPS.iter().map(|name| count(name)).sum();
    assert_eq!(count("records"), sent + skipped + count("outside"), "{path}: {counts}");
    (counts, sent)
}

#[test]
fn every_recording_replays_and_its_counts_add_up() {
    let files = corpus_files();
    let named: Vec<PathBuf> = RECORDS.iter().map(|(name, _)| Path::new(CORPUS).join(name)).collect();
    assert_eq!(files, named, "the corpus holds the files this test knows");
    for (file, (name, records)) in files.iter().zip(RECORDS) {
        let (counts, sent) = replay(file);
        assert_eq!(counts["records"], *records, "{name}: {counts}");
        // Every record of a real file is read: none unreadable, none in no layout.
        assert_eq!((&counts["unreadable"], &counts["bad"]), (&0.into(), &0.into()), "{name}: {counts}");
        assert!(sent > 0, "{name}: {counts}");
    }
}

#[test]
fn access_logs_replay_their_requests_and_count_the_junk() {
    // (file, records, sent, skipped as no request, skipped as not HTTP).
    let logs: [(&str, u64, u64, u64, u64); 2] = [
        // nginx lines assembled for Filebeat's tests, in combined with more fields after it;
        // one holds an empty request ("").
        ("beats-nginx-test.log", 7, 6, 1, 0),
        // nginx in front of calibre-web, IPv6 clients.
        ("crowdsec-calibre-web-ipv6.log", 16, 16, 0, 0),
    ];
    for (name, records, sent_want, no_request, not_http) in logs {
        let (counts, sent) = replay(&Path::new(CORPUS).join("access_logs").join(name));
        let got = (counts["records"].as_u64(), sent, counts["no_request"].as_u64(), counts["not_http"].as_u64());
        assert_eq!(got, (Some(records), sent_want, Some(no_request), Some(not_http)), "{name}: {counts}");
    }
}

#[test]
fn files_with_nothing_to_replay_say_why_in_one_line() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let cases = [
        // Every line a TLS handshake or a scanner's bytes sent to a plain port, logged as 400.
        ("access_logs/crowdsec-apache2-malformed.log", "no request to replay (11 not an HTTP request line skipped)"),
        ("access_logs/crowdsec-nginx-http-malformed.log", "no request to replay (12 not an HTTP request line skipped)"),
        // Requests without times: not a recording.
        (
            "vegeta/ddtrace-php-vegeta-request-targets.txt",
            "a vegeta targets file has no times to replay at: load it with strain --targets",
        ),
        // A POST alone, and replay sends GET and HEAD unless told.
        (
            "har/mitmproxy-postdata.har",
            "(1 with a method not replayed (POST) skipped): replay them with --methods GET,HEAD,POST",
        ),
    ];
    for (name, want) in cases {
        let path = Path::new(CORPUS).join(name).display().to_string();
        let run = crate::harness::strain_raw(&["replay", &path, &url]);
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        let line = run.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{name}: {line}");
        assert!(line.starts_with(&format!("strain: {path}")) && line.contains(want), "{name}: {line}");
    }
    assert_eq!(origin.stop().requests, 0);
}

#[test]
fn proxy_verifier_size_only_bodies_are_generated() {
    // Both files give their POST bodies by size alone (content: size, or a Content-Length),
    // which Proxy Verifier fills with generated bytes: sent, and counted as generated.
    for name in ["pv-client-side-delay.yaml", "pv-traffic_dump-file1.json"] {
        let (counts, sent) = replay(&Path::new(CORPUS).join("proxy_verifier").join(name));
        assert_eq!((counts["generated_body"].as_u64(), sent), (Some(3), 3), "{name}: {counts}");
    }
}

#[test]
fn a_utf16_har_replays_as_its_utf8_original() {
    // The Fiddler capture (UTF-8 with a byte-order mark), written again as UTF-16 with its mark
    // as Windows tools also save it.
    let original = Path::new(CORPUS).join("har/harviewer-ie11.fiddler.har");
    let text = std::fs::read_to_string(&original).unwrap();
    let text = text.trim_start_matches('\u{feff}');
    let dir = tempfile::tempdir().unwrap();
    let (_, want) = replay(&original);
    for (name, big_endian) in [("le.har", false), ("be.har", true)] {
        let mut bytes = if big_endian { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
        for unit in text.encode_utf16() {
            bytes.extend(if big_endian { unit.to_be_bytes() } else { unit.to_le_bytes() });
        }
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let (counts, sent) = replay(&file);
        assert_eq!((sent, &counts["records"]), (want, &11.into()), "{name}: {counts}");
    }
}
