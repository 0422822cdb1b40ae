//! What the readers' tests share: every item a format reads from some text, a header pair,
//! and the instant their records are written at.

use std::ops::ControlFlow;

use super::{read, Format, Item, ReadError};

/// 2026-11-26T10:52:58Z in microseconds since the epoch.
pub(super) const AT_US: i64 = 1_795_690_378_000_000;

/// Every item `format` reads from `text`, or the reader's error.
pub(super) fn items(format: &Format, text: &[u8]) -> Result<Vec<Item>, ReadError> {
    let mut out = Vec::new();
    read(format, &mut &text[..], &mut |item| {
        out.push(item);
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

/// A header field as records hold it.
pub(super) fn h(name: &str, value: &str) -> (String, String) {
    (name.to_string(), value.to_string())
}
