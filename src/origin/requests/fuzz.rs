//! The origin's request parser under fuzzing (see `http/fuzz` for the method): the real
//! [`RequestParser`] with a real [`Answer`], fed the way `Conn::drive` feeds it, and its
//! output compared byte for byte with what the reference says the stream is owed.

use std::io::IoSlice;
use std::time::Instant;

use super::*;
use crate::http::fuzz::reference::{self, Event};
use crate::http::fuzz::{ending_agrees, gen, long_run, report, run, splits, Case, Ended, Tally, SHORT_RUN};
use crate::origin::output::MAX_IOV;
use crate::origin::respond::Site;
use crate::origin::{OriginConfig, OriginLive};
use crate::rng::Rng;

/// Feeds `input` in reads of the lengths in `pieces`; returns everything the connection would
/// write and how the parser ended.
fn drive<'r>(ctx: &mut Ctx<'r>, input: &[u8], pieces: &[usize], tally: &mut Tally) -> Result<(Vec<u8>, Ended), String> {
    let mut parser = RequestParser::default();
    let mut out = Output::default();
    let mut served = 0;
    let mut written = Vec::new();
    let mut at = 0;
    let mut flow = Flow::Continue;
    for &len in pieces {
        let data = &input[at..at + len];
        at += len;
        tally.feeds += 1;
        let mut answer = Answer { ctx: &mut *ctx, out: &mut out, served: &mut served, arrived: None };
        flow = parser.feed(data, &mut answer);
        take_output(&mut out, &mut written);
        while flow == Flow::Continue && parser.backlog {
            tally.feeds += 1;
            let mut answer = Answer { ctx: &mut *ctx, out: &mut out, served: &mut served, arrived: None };
            flow = parser.resume(&mut answer);
            take_output(&mut out, &mut written);
        }
        if flow != Flow::Continue {
            // Closed after an answer, or after a refused request (400).
            break;
        }
        // Between reads the parser holds at most an unfinished head and one read.
        if parser.partial.len() > MAX_HEAD_BYTES + len {
            return Err(format!("holds {} bytes", parser.partial.len()));
        }
    }
    let ended = if written.ends_with(&ctx.site.fixed.bad_request) {
        Ended::Error
    } else if flow != Flow::Continue || (parser.partial.is_empty() && parser.body.is_none()) {
        Ended::Clean
    } else {
        Ended::Partial
    };
    Ok((written, ended))
}

/// Moves all queued output to `written`, as a socket that takes everything would.
fn take_output(out: &mut Output<'_>, written: &mut Vec<u8>) {
    while !out.is_empty() {
        out.prepare();
        let mut iov = [IoSlice::new(&[]); MAX_IOV];
        let count = out.slices(&mut iov, usize::MAX, None);
        let n: usize = iov[..count].iter().map(|s| s.len()).sum();
        for slice in &iov[..count] {
            written.extend_from_slice(slice);
        }
        out.advance(n);
    }
}

/// The bytes a server owes for `events`.
fn expected(site: &Site, events: &[Event]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for event in events {
        match *event {
            Event::Continue => bytes.extend_from_slice(CONTINUE),
            Event::Answer { persist, head_only } => {
                let persist = [Persist::KeepAlive, Persist::KeepAlive10, Persist::Close][persist as usize];
                bytes.extend_from_slice(site.fixed.get(Reply { persist, head_only, kind: Kind::Fixed }));
            }
            Event::Bad => bytes.extend_from_slice(&site.fixed.bad_request),
        }
    }
    bytes
}

/// Calls `f` with one server thread's state (default configuration).
fn with_server<R>(seed: u64, f: impl FnOnce(&mut Ctx<'_>) -> R) -> R {
    let config = OriginConfig { threads: 1, ..OriginConfig::default() };
    let site = Site::new(&config).expect("default config");
    let live = OriginLive::new();
    let counters = live.claim(1, site.fixed_ok, Vec::new()).expect("fresh counters");
    f(&mut Ctx { site: &site, counters: &counters[0], live: &live, rng: Rng::for_thread(seed, 0), units: Vec::new() })
}

/// Fuzzes inputs `indices` of run `seed` against one server's state, as one connection each.
fn fuzz(seed: u64, indices: std::ops::Range<u64>) -> Tally {
    with_server(seed, |ctx| {
        run("request", seed, indices, gen::requests, |case: Case, tally: &mut Tally| {
            let Case { mut rng, bytes } = case;
            let (events, end) = reference::requests(&bytes);
            tally.verdict(end);
            let bad = &ctx.site.fixed.bad_request[..];
            let want = expected(ctx.site, &events);
            for pieces in splits(&mut rng, bytes.len()) {
                let (got, ended) = drive(ctx, &bytes, &pieces, tally)?;
                // The fault in an unfinished head may be answered now or once the head ends.
                let early_bad =
                    matches!(end, reference::End::Partial { in_head: true }) && got == [&want[..], bad].concat();
                let late_bad = matches!(end, reference::End::Invalid { head_unfinished: true })
                    && Some(&got[..]) == want.strip_suffix(bad);
                if !(got == want && ending_agrees(ended, end) || early_bad || late_bad) {
                    return Err(format!(
                        "fed as {} pieces: wrote {} ending {ended:?}; the reference says {events:?}, ending {end:?}",
                        pieces.len(),
                        crate::http::fuzz::escape(&got)
                    ));
                }
            }
            Ok(())
        })
    })
}

#[test]
fn requests_the_fuzzers_found_wrong_get_400() {
    let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
    big.resize(MAX_HEAD_BYTES + 10, b'a');
    big.extend_from_slice(b"\r\n\r\n");
    let rows: &[&[u8]] = &[
        // A coding other than chunked last: the length is unknowable (RFC 9112 6.3).
        b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
        // Lengths Rust's integer parsing takes but HTTP does not.
        b"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx",
        b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
        // A second number after a chunk size.
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1 2\r\nx\r\n0\r\n\r\n",
        // An oversized head that arrives whole.
        &big,
    ];
    with_server(0, |ctx| {
        // Found by fuzzing: empty lines trickling in were all parsed again on every read.
        let crlf = b"\r\n".repeat(MAX_HEAD_BYTES / 2 + 1);
        let started = Instant::now();
        let (got, _) = drive(ctx, &crlf, &vec![1; crlf.len()], &mut Tally::default()).expect("properties hold");
        assert_eq!(got, ctx.site.fixed.bad_request);
        assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
        // A stray CR ending the last field hid the end of a head fed in pieces.
        let stray = b"GET / HTTP/1.1\r\nX: \r\r\n\r\n";
        let (got, _) = drive(ctx, stray, &[1; 24], &mut Tally::default()).expect("properties hold");
        assert_eq!(got, ctx.site.fixed.bad_request);
        for input in rows {
            let (got, ended) = drive(ctx, input, &[input.len()], &mut Tally::default()).expect("properties hold");
            assert_eq!(
                (got, ended),
                (ctx.site.fixed.bad_request.clone(), Ended::Error),
                "{}",
                crate::http::fuzz::escape(input)
            );
        }
    })
}

#[test]
fn request_parser_agrees_with_the_reference_on_seeded_inputs() {
    fuzz(11, 0..SHORT_RUN);
}

#[test]
#[ignore = "the long run: scripts/fuzz.sh"]
fn request_parser_long_run() {
    let (indices, seed) = long_run();
    let started = Instant::now();
    let tally = fuzz(seed, indices);
    report("request parser", seed, &tally, started.elapsed());
}
