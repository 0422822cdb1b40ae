//! verifier recordings.

use std::io::BufRead;
use std::ops::ControlFlow;

use super::{Item, ReadError};

/// Reads a verifier recording.
pub fn read(_input: &mut dyn BufRead, _sink: &mut dyn FnMut(Item) -> ControlFlow<()>) -> Result<(), ReadError> {
    Ok(())
}
