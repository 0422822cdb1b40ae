//! Structure-aware generation of near-valid HTTP/1 message streams, and byte-level mutation.
//!
//! Purely random bytes almost never get past a status line, so messages are built from their
//! grammar with the choices that matter to framing drawn at random: header counts and sizes up
//! to and past the limits, Content-Length and Transfer-Encoding in every combination (valid,
//! signed, overflowing, repeated, disagreeing), chunk sizes around the limits with extensions
//! and trailers, interim responses, CRLF or bare LF. Half of the streams are then damaged a few
//! bytes at a time, so the parsers also see everything one edit away from valid.

use crate::http::body::{MAX_CHUNK_LINE, MAX_TRAILERS};
use crate::http::{MAX_HEADERS, MAX_HEAD_BYTES};
use crate::rng::Rng;

/// Picks one element of a non-empty slice.
pub(crate) fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[rng.below(items.len() as u64) as usize]
}

/// A number in `[lo, hi]`.
fn between(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    lo + rng.below(hi - lo + 1)
}

/// Sizes worth trying for a limit `n`: just under, at, just over.
fn around(rng: &mut Rng, n: u64) -> u64 {
    (n + between(rng, 0, 4)).saturating_sub(2)
}

/// How one message says where its body ends.
#[derive(Debug, Clone, Copy)]
enum Frame {
    None,
    Length,
    Chunked,
    /// A Transfer-Encoding that does not end in chunked.
    OtherCoding,
    Both,
}

/// Writes a response stream of one to three responses (with interim ones) to `out`.
pub(crate) fn responses(rng: &mut Rng, out: &mut Vec<u8>) {
    for _ in 0..between(rng, 1, 3) {
        if rng.chance(0.15) {
            let code = pick(rng, &["100 Continue", "103 Early Hints", "102 Processing"]);
            let eol = eol(rng);
            out.extend_from_slice(format!("HTTP/1.1 {code}{eol}").as_bytes());
            if rng.chance(0.5) {
                out.extend_from_slice(format!("Link: </style.css>; rel=preload{eol}").as_bytes());
            }
            out.extend_from_slice(eol.as_bytes());
        }
        let version = if rng.chance(0.8) { "HTTP/1.1" } else { "HTTP/1.0" };
        let status = pick(
            rng,
            &[
                "200 OK",
                "204 No Content",
                "304 Not Modified",
                "404 Not Found",
                "500 x y",
                "200",
                "101 Switching",
                "206 Partial",
            ],
        );
        let eol = eol(rng);
        let start = out.len();
        out.extend_from_slice(format!("{version} {status}{eol}").as_bytes());
        message_rest(rng, out, start, eol);
    }
}

/// Writes a request stream of one to three requests to `out`.
pub(crate) fn requests(rng: &mut Rng, out: &mut Vec<u8>) {
    for _ in 0..between(rng, 1, 3) {
        let method = pick(rng, &["GET", "GET", "HEAD", "POST", "PUT", "OPTIONS"]);
        let target = pick(rng, &["/", "/index.html?a=b", "*", "http://h.test/x", "/%20"]);
        let version = if rng.chance(0.85) { "HTTP/1.1" } else { "HTTP/1.0" };
        let eol = eol(rng);
        let start = out.len();
        out.extend_from_slice(format!("{method} {target} {version}{eol}").as_bytes());
        if rng.chance(0.7) {
            out.extend_from_slice(format!("Host: h.test{eol}").as_bytes());
        }
        if rng.chance(0.15) {
            out.extend_from_slice(format!("Expect: 100-continue{eol}").as_bytes());
        }
        message_rest(rng, out, start, eol);
    }
}

fn eol(rng: &mut Rng) -> &'static str {
    if rng.chance(0.9) {
        "\r\n"
    } else {
        "\n"
    }
}

/// Header fields, the blank line and a body framed one of the ways a peer may frame it; the
/// message's start line begins at `start` in `out`.
fn message_rest(rng: &mut Rng, out: &mut Vec<u8>, start: usize, eol: &str) {
    let frame = *pick(
        rng,
        &[Frame::None, Frame::Length, Frame::Length, Frame::Chunked, Frame::Chunked, Frame::OtherCoding, Frame::Both],
    );
    let len = match rng.below(1000) {
        0 => 70_000,
        1..=150 => *pick(rng, &[0, 1, 255, 4096]),
        _ => rng.below(40),
    };
    let mut fields: Vec<String> = Vec::new();
    match frame {
        Frame::None => {}
        Frame::Length => fields.push(content_length(rng, len)),
        Frame::Chunked => fields.push(transfer_encoding(rng, true)),
        Frame::OtherCoding => fields.push(transfer_encoding(rng, false)),
        Frame::Both => {
            fields.push(content_length(rng, len));
            fields.push(transfer_encoding(rng, true));
        }
    }
    if rng.chance(0.3) {
        let value = pick(rng, &["close", "keep-alive", "Keep-Alive, Upgrade", "upgrade, close", ""]);
        fields.push(format!("Connection: {value}"));
    }
    fields.extend(filler(rng));
    shuffle(rng, &mut fields);
    for f in &fields {
        out.extend_from_slice(f.as_bytes());
        out.extend_from_slice(eol.as_bytes());
    }
    if rng.chance(0.001) {
        // One more field that takes the head to about its limit.
        let head = out.len() - start;
        let pad = around(rng, MAX_HEAD_BYTES as u64).saturating_sub((head + 7 + 2 * eol.len()) as u64);
        out.extend_from_slice(format!("X-Big: {}{eol}", "b".repeat(pad as usize)).as_bytes());
    }
    out.extend_from_slice(eol.as_bytes());
    match frame {
        Frame::Chunked | Frame::Both => chunked(rng, out, eol),
        // A length body, or bytes that run until close; sometimes too many or too few.
        _ => {
            let n = match rng.below(10) {
                0 => len.saturating_sub(1),
                1 => len + 3,
                _ => len,
            };
            out.extend((0..n).map(|i| b"abcdefgh\r\n"[(i % 10) as usize]));
        }
    }
}

/// A Content-Length field for `len`, mostly right, sometimes in a shape that must be refused
/// or that a lax parser reads differently.
fn content_length(rng: &mut Rng, len: u64) -> String {
    let name = pick(rng, &["Content-Length", "content-length", "CONTENT-LENGTH"]);
    let value = match rng.below(24) {
        0 => format!("+{len}"),
        1 => format!("-{len}"),
        2 => "18446744073709551616".to_string(),
        3 => u64::MAX.to_string(),
        4 => format!("{len}, {len}"),
        5 => format!("{len}\r\n{name}: {}", len + 1),
        6 => format!("{len}\r\n{name}: {len}"),
        7 => format!("0{len}"),
        8 => format!(" {len} "),
        9 => format!("{len}x"),
        _ => len.to_string(),
    };
    format!("{name}: {value}")
}

/// A Transfer-Encoding field, final coding chunked or not, as one field or two.
fn transfer_encoding(rng: &mut Rng, chunked: bool) -> String {
    let value = if chunked {
        pick(
            rng,
            &["chunked", "chunked", "Chunked", "gzip, chunked", "gzip,chunked,", "gzip\r\nTransfer-Encoding: chunked"],
        )
    } else {
        pick(rng, &["gzip", "chunked, gzip", "identity", "", "chunked\r\nTransfer-Encoding: gzip"])
    };
    format!("Transfer-Encoding: {value}")
}

/// Unrelated header fields: usually a few, sometimes around the count and size limits.
fn filler(rng: &mut Rng) -> Vec<String> {
    let count = match rng.below(100) {
        0 => around(rng, MAX_HEADERS as u64),
        1..=5 => rng.below(30),
        _ => rng.below(5),
    };
    let mut fields: Vec<String> =
        (0..count).map(|i| format!("X-F{i}: {}", "v".repeat(rng.below(20) as usize))).collect();
    if rng.chance(0.1) {
        fields.push(pick(rng, &["X-Tab:\tv\t", "X-Empty:", "X-Obs: caf\u{e9}", "X-Colon: a:b"]).to_string());
    }
    fields
}

/// A chunked body: chunks of sizes around interesting points, extensions, trailers.
fn chunked(rng: &mut Rng, out: &mut Vec<u8>, eol: &str) {
    for _ in 0..rng.below(4) {
        let size = match rng.below(100) {
            0..=9 => around(rng, 16),
            10 => around(rng, 4096),
            _ => between(rng, 1, 20),
        };
        let mut line = match rng.below(6) {
            0 => format!("{size:X}"),
            1 => format!("000{size:x}"),
            _ => format!("{size:x}"),
        };
        if rng.chance(0.002) {
            // The line after the digits (";", the extension, any CR) around its limit.
            line.push(';');
            line.push_str(&"e".repeat(around(rng, MAX_CHUNK_LINE as u64 - eol.len() as u64) as usize));
        } else if rng.chance(0.1) {
            let ext: &&str = pick(rng, &[";a=b", " ;a", ";q=\"x y\"", "  ", "\t"]);
            line.push_str(ext);
        }
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(eol.as_bytes());
        out.extend((0..size).map(|i| b"0123456789"[(i % 10) as usize]));
        out.extend_from_slice(eol.as_bytes());
    }
    let last = pick(rng, &["0", "0", "00", "0;end", "0000000000000000", "00000000000000000"]);
    out.extend_from_slice(last.as_bytes());
    out.extend_from_slice(eol.as_bytes());
    if rng.chance(0.2) {
        out.extend_from_slice(format!("X-Trailer: t{eol}").as_bytes());
    }
    if rng.chance(0.002) {
        // "X: ", the value and two line ends: the section around its limit.
        let size = around(rng, MAX_TRAILERS as u64 - 3 - 2 * eol.len() as u64) as usize;
        out.extend_from_slice(format!("X: {}{eol}", "t".repeat(size)).as_bytes());
    }
    out.extend_from_slice(eol.as_bytes());
}

fn shuffle<T>(rng: &mut Rng, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

/// Bytes and snippets that steer mutations toward framing decisions.
const DICTIONARY: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r",
    b"\r\n\r\n",
    b"Content-Length: 5\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Connection: close\r\n",
    b"0\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n",
    b"GET / HTTP/1.1\r\n",
    b"ffffffffffffffff",
    b"99999999999999999999",
    b";",
    b":",
    b",",
    b" ",
    b"\t",
    b"\0",
    b"\xff",
];

/// Damages `data` with one to four random edits.
pub(crate) fn mutate(rng: &mut Rng, data: &mut Vec<u8>) {
    for _ in 0..between(rng, 1, 4) {
        let at = rng.below(data.len() as u64 + 1) as usize;
        match rng.below(7) {
            0 if at < data.len() => data[at] ^= 1 << rng.below(8),
            1 if at < data.len() => data[at] = rng.below(256) as u8,
            2 if at < data.len() => {
                let n = (rng.below(4) as usize + 1).min(data.len() - at);
                data.drain(at..at + n);
            }
            3 => {
                let snippet = pick(rng, DICTIONARY);
                data.splice(at..at, snippet.iter().copied());
            }
            4 if at < data.len() => {
                // Repeat a short stretch (a header line, a chunk).
                let n = (rng.below(32) as usize + 1).min(data.len() - at);
                let copy = data[at..at + n].to_vec();
                data.splice(at..at, copy);
            }
            5 => data.truncate(at),
            _ => {
                let hex = *pick(rng, b"019afF-+");
                data.insert(at, hex);
            }
        }
    }
}
