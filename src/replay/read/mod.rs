//! Reading recordings: each format turns its file into [`Record`]s, pushed to a sink one at a
//! time as they are read, so a 1 GB log never sits in memory. gzip files are read through a
//! decoder; the format is detected from the first bytes, or chosen with `--format`.

mod access;
mod har;
mod jsonl;
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
                format!("unknown format {other:?}: combined, common, squid, har, jsonl or verifier (a log's own layout: --log-format)")
            }),
        }
    }
}

/// An RFC 3339 time (`--from`, `--to`), microseconds since the epoch.
pub fn instant_us(s: &str) -> Option<i64> {
    time::rfc3339_us(s)
}

/// The format of a recording whose first bytes (decompressed) are `head`.
pub fn detect(head: &[u8]) -> Option<Format> {
    detect_structured(head).or_else(|| {
        let text = String::from_utf8_lossy(head);
        let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        access::detect(line).map(Format::Log)
    })
}

/// Stub until the structured readers land.
pub fn detect_structured(_head: &[u8]) -> Option<Format> {
    None
}
