//! Reading recordings: each format turns its file into [`Record`]s, pushed to a sink one at a
//! time as they are read, so a 1 GB log never sits in memory. gzip files are read through a
//! decoder; the format is detected from the first bytes, or chosen with `--format`.

mod access;
mod har;
mod jsonl;
#[cfg(test)]
mod testing;
mod time;
mod verifier;

use std::io::BufRead;
use std::ops::ControlFlow;

pub use access::LogFormat;

use super::record::{BadRecord, Record};

/// A recording's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// An access log (nginx, Apache or Apache Traffic Server) in the given layout.
    Log(LogFormat),
    /// HAR 1.2 (a browser's or a proxy's recording).
    Har,
    /// JSON lines: vegeta's JSON target fields plus `"time"`.
    JsonLines,
    /// A Proxy Verifier replay file (YAML or JSON).
    Verifier,
}

/// Why a recording cannot be read at all (a bad record is a [`BadRecord`], given to the sink).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// The whole file is not of its format (a HAR that is not JSON, YAML that does not parse).
    #[error("{0}")]
    Malformed(String),
}

/// What a reader gives its sink: a record, or a record that does not parse.
pub type Item = Result<Record, BadRecord>;

/// Reads `input` in `format`, giving each record to `sink` in file order; stops early when
/// the sink breaks.
pub fn read(
    format: &Format,
    input: &mut dyn BufRead,
    sink: &mut dyn FnMut(Item) -> ControlFlow<()>,
) -> Result<(), ReadError> {
    match format {
        Format::Log(layout) => access::read(layout, input, sink),
        Format::Har => har::read(input, sink),
        Format::JsonLines => jsonl::read(input, sink),
        Format::Verifier => verifier::read(input, sink),
    }
}

impl Format {
    /// The format's name in the report (`combined`, `har`…).
    pub fn name(&self) -> String {
        match self {
            Format::Log(layout) => layout.describe(),
            Format::Har => "har".into(),
            Format::JsonLines => "jsonl".into(),
            Format::Verifier => "verifier".into(),
        }
    }

    /// The format `--format` names (`--log-format` gives a log's own layout).
    pub fn parse(name: &str) -> Result<Format, String> {
        match name {
            "har" => Ok(Format::Har),
            "jsonl" | "json" => Ok(Format::JsonLines),
            "verifier" | "proxy-verifier" => Ok(Format::Verifier),
            other => LogFormat::parse(other).map(Format::Log).map_err(|_| {
                format!(
                    "unknown format {other:?}: har, jsonl, verifier or a log's layout ({}; any other: --log-format)",
                    access::PRESETS.join(", ")
                )
            }),
        }
    }
}

/// An RFC 3339 time (`--from`, `--to`), microseconds since the epoch.
pub fn instant_us(s: &str) -> Option<i64> {
    time::rfc3339_us(s)
}

/// Whether `head` opens a vegeta targets file (`GET https://host/path` lines, each a request
/// without a time): strain loads those with `--targets`, not as a recording.
pub fn is_targets(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')) else {
        return false;
    };
    let mut parts = line.split_whitespace();
    let (Some(method), Some(url), None) = (parts.next(), parts.next(), parts.next()) else { return false };
    method.bytes().all(|b| b.is_ascii_uppercase()) && (url.starts_with("http://") || url.starts_with("https://"))
}

/// The format of a recording whose first bytes (decompressed) are `head`.
pub fn detect(head: &[u8]) -> Option<Format> {
    detect_structured(head).or_else(|| access::detect(&String::from_utf8_lossy(head)).map(Format::Log))
}

/// Recognises a structured recording from its first bytes (up to 64 KiB, decompressed): HAR,
/// a Proxy Verifier replay file (YAML or JSON), or JSON lines; `None` for anything else.
pub fn detect_structured(head: &[u8]) -> Option<Format> {
    /// The keys of the top-level JSON object, as far as `json` goes: a scan that skips
    /// values by their brackets, since a 64 KiB head cuts most files mid-value.
    fn json_top_keys(json: &[u8]) -> Vec<&[u8]> {
        let (mut keys, mut depth, mut at_key, mut i) = (Vec::new(), 0usize, false, 0);
        while let Some(&b) = json.get(i) {
            match b {
                b'{' | b'[' => {
                    depth += 1;
                    at_key = depth == 1 && b == b'{';
                }
                b'}' | b']' => depth = depth.saturating_sub(1),
                b',' => at_key = depth == 1,
                b'"' => {
                    let start = i + 1;
                    i = start;
                    while let Some(&c) = json.get(i) {
                        if c == b'"' {
                            break;
                        }
                        i += if c == b'\\' { 2 } else { 1 };
                    }
                    if at_key {
                        keys.push(json.get(start..i).unwrap_or_default());
                        at_key = false;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        keys
    }
    /// The key of a top-level YAML mapping line (`sessions:`), if the line is one.
    fn yaml_top_key(line: &[u8]) -> Option<&[u8]> {
        let colon = line.iter().position(|&b| b == b':')?;
        let (key, rest) = line.split_at(colon);
        let named = !key.is_empty() && key.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        (named && rest.get(1).is_none_or(|&b| b == b' ' || b == b'\t')).then_some(key)
    }

    // Windows tools write HAR with a byte-order mark, some in UTF-16.
    let head = har::utf8_head(head);
    let text = head.trim_ascii_start();
    if text.first() == Some(&b'{') {
        let first_line = text.split(|&b| b == b'\n').next().unwrap_or(text);
        if let Ok(serde_json::Value::Object(line)) = serde_json::from_slice(first_line) {
            if line.contains_key("url") {
                return Some(Format::JsonLines);
            }
        }
        let keys = json_top_keys(text);
        if keys.contains(&b"log".as_slice()) {
            return Some(Format::Har);
        }
        return keys.iter().any(|k| *k == b"sessions" || *k == b"meta").then_some(Format::Verifier);
    }
    let mut lines = text
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii_end)
        .filter(|l| !l.is_empty() && !l.starts_with(b"#") && !l.starts_with(b"%") && *l != b"---");
    // YAML must open with a top-level key; a log line does not look like `name:` at column 0.
    let first = yaml_top_key(lines.next()?)?;
    let mut keys = std::iter::once(first).chain(lines.filter_map(yaml_top_key));
    keys.any(|k| k == b"sessions" || k == b"meta").then_some(Format::Verifier)
}
