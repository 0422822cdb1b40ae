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

pub use access::{detect, LogFormat};

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
