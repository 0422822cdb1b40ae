//! The request messages of a gRPC run, loaded and encoded before any load starts, and the
//! check of a response's message (`--check`). The engine uses it like this:
//!
//! ```text
//! let messages = Messages::from_json(&method.input, r#"{"name": "req-{{n}}"}"#)?; // or
//! //  Messages::from_json_lines(&input, path)?, Messages::from_binary(&input, path)?,
//! //  Messages::empty(&input) (no --data: one empty message)
//! // Per call: message `k` round-robin (k counts calls), rendered for call number `call`.
//! match messages.fixed(k) {
//!     Some(bytes) => frame(bytes, &mut body),           // encoded once at load
//!     None => {
//!         scratch.clear();
//!         messages.render(k, call, &mut rng, &mut scratch); // templated strings filled in
//!         frame(&scratch, &mut body);
//!     }
//! }
//! ```
//!
//! Every check happens at load: JSON that does not fit the input type, an unknown placeholder
//! or a binary message that does not decode is an error naming where, and [`Messages::render`]
//! cannot fail. A message without placeholders is encoded once ([`Messages::fixed`]); one with
//! them is kept in `encode`'s pieces and re-encodes only its templated strings.
//! The placeholders are [`template`](super::template)'s.

use std::path::Path;

use prost_reflect::{DynamicMessage, MessageDescriptor};

use super::encode::{self, Encoding};
use super::json::{self, Misfit};
use super::template::Context;
use crate::rng::Rng;

/// Where in the input a message is (for errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// `--data`'s one message.
    Data,
    /// Element `n` (1-based) of `--data`'s JSON array.
    Element(usize),
    /// Line `line` (1-based) of a `--data-file`.
    Line {
        /// The file.
        path: String,
        /// The line.
        line: usize,
    },
    /// Message `n` (1-based) of a `--data-bin` file.
    Binary {
        /// The file.
        path: String,
        /// The message.
        n: usize,
    },
}

impl std::fmt::Display for Place {
    /// The prefix of an error line: empty, or `message 2: `, `data.jsonl:3: `.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Data => Ok(()),
            Place::Element(n) => write!(f, "message {n}: "),
            Place::Line { path, line } => write!(f, "{path}:{line}: "),
            Place::Binary { path, n } => write!(f, "{path}: message {n}: "),
        }
    }
}

/// Why the request messages could not be loaded (each one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Not JSON at all.
    #[error("{at}invalid JSON: {reason}")]
    Syntax {
        /// Which message.
        at: Place,
        /// serde_json's error, with its line and column.
        reason: String,
    },
    /// JSON that does not fit the input type, or a string with a bad placeholder.
    #[error("{at}{misfit}")]
    Misfit {
        /// Which message.
        at: Place,
        /// The field at fault and why.
        misfit: Misfit,
    },
    /// A binary message that is not one of the input type, or not delimited.
    #[error("{at}{reason}")]
    Binary {
        /// Which message.
        at: Place,
        /// Why.
        reason: String,
    },
    /// A data file cannot be read.
    #[error("{path}: cannot read it: {reason}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// No message at all: an empty array or file.
    #[error("{0}: no messages in it")]
    Empty(String),
}

/// The messages a run sends, in order (calls take them round-robin).
#[derive(Debug, Clone)]
pub struct Messages {
    /// Never empty.
    list: Vec<Encoding>,
}

impl Messages {
    /// `--data`: one message in protobuf's JSON mapping, or a JSON array of several. (A message
    /// whose own JSON form is an array, `google.protobuf.ListValue`, goes inside an array.)
    pub fn from_json(input: &MessageDescriptor, json: &str) -> Result<Messages, MessageError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| MessageError::Syntax { at: Place::Data, reason: e.to_string() })?;
        let list = match value {
            serde_json::Value::Array(items) => {
                let list: Vec<Encoding> = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        load(input, item).map_err(|misfit| MessageError::Misfit { at: Place::Element(i + 1), misfit })
                    })
                    .collect::<Result<_, _>>()?;
                if list.is_empty() {
                    return Err(MessageError::Empty("the --data array".into()));
                }
                list
            }
            one => vec![load(input, &one).map_err(|misfit| MessageError::Misfit { at: Place::Data, misfit })?],
        };
        Ok(Messages { list })
    }

    /// `--data-file`: JSON lines, one message per line; blank lines are skipped.
    pub fn from_json_lines(input: &MessageDescriptor, path: &Path) -> Result<Messages, MessageError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| MessageError::Read { path: shown.clone(), reason: e.to_string() })?;
        let mut list = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = Place::Line { path: shown.clone(), line: i + 1 };
            let value: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| MessageError::Syntax { at: at.clone(), reason: e.to_string() })?;
            list.push(load(input, &value).map_err(|misfit| MessageError::Misfit { at, misfit })?);
        }
        if list.is_empty() {
            return Err(MessageError::Empty(shown));
        }
        Ok(Messages { list })
    }

    /// `--data-bin`: binary messages, each prefixed by its length as a varint (protobuf's
    /// delimited form: Java's `writeDelimitedTo`, Go's `protodelim`). A lone message needs its
    /// prefix too: a bare message cannot be told apart from a delimited stream in general, so
    /// strain reads every file one way and a bare message fails (it rarely parses as prefixed
    /// messages of the input type). Placeholders are not read in binary messages: each is sent
    /// as its bytes.
    pub fn from_binary(input: &MessageDescriptor, path: &Path) -> Result<Messages, MessageError> {
        let shown = path.display().to_string();
        let bytes =
            std::fs::read(path).map_err(|e| MessageError::Read { path: shown.clone(), reason: e.to_string() })?;
        let mut rest = bytes.as_slice();
        let mut list = Vec::new();
        while !rest.is_empty() {
            let at = Place::Binary { path: shown.clone(), n: list.len() + 1 };
            let bad = |reason: String| MessageError::Binary { at: at.clone(), reason };
            let hint = "(--data-bin takes messages each prefixed by its length as a varint)";
            let len = prost::encoding::decode_varint(&mut rest).map_err(|_| bad(format!("no length prefix {hint}")))?;
            let Some(message) = usize::try_from(len).ok().and_then(|n| rest.get(..n)) else {
                return Err(bad(format!("its prefix says {len} bytes but {} are left {hint}", rest.len())));
            };
            check(input, message).map_err(bad)?;
            list.push(Encoding::Fixed(message.to_vec()));
            rest = &rest[message.len()..];
        }
        if list.is_empty() {
            return Err(MessageError::Empty(shown));
        }
        Ok(Messages { list })
    }

    /// No `--data`: one empty message (all fields at their defaults: zero bytes).
    pub fn empty(_input: &MessageDescriptor) -> Messages {
        Messages { list: vec![Encoding::Fixed(Vec::new())] }
    }

    /// How many messages there are (at least one).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Never true: a `Messages` holds at least one message.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Message `k % len`'s encoding when it never changes; `None` when it has placeholders
    /// (then [`Messages::render`] it).
    pub fn fixed(&self, k: usize) -> Option<&[u8]> {
        match self.list.get(k % self.list.len().max(1))? {
            Encoding::Fixed(bytes) => Some(bytes),
            Encoding::Pieces(_) => None,
        }
    }

    /// Whether no message has placeholders (every call's body can be framed at load).
    pub fn all_fixed(&self) -> bool {
        self.list.iter().all(|m| matches!(m, Encoding::Fixed(_)))
    }

    /// Appends message `k % len`'s encoding to `out`, its placeholders filled in for call
    /// number `call` (`{{n}}`) with `rng` (`{{uuid}}`, `{{rand:N}}`) and the clock.
    pub fn render(&self, k: usize, call: u64, rng: &mut Rng, out: &mut Vec<u8>) {
        match self.list.get(k % self.list.len().max(1)) {
            Some(Encoding::Fixed(bytes)) => out.extend_from_slice(bytes),
            Some(Encoding::Pieces(pieces)) => {
                let mut cx = Context::new(call, rng);
                encode::write(pieces, &mut cx, out);
            }
            None => {}
        }
    }
}

/// One JSON message, parsed and encoded.
fn load(input: &MessageDescriptor, json: &serde_json::Value) -> Result<Encoding, Misfit> {
    encode::encoding(json::message(input, json)?)
}

/// `--check`: whether `bytes` decode as a message of type `output`; the error says why, in
/// one line.
pub fn check(output: &MessageDescriptor, bytes: &[u8]) -> Result<(), String> {
    match DynamicMessage::decode(output.clone(), bytes) {
        Ok(_) => Ok(()),
        Err(e) => {
            let text = e.to_string().replace('\n', " ");
            // prost's lead-in says nothing the line does not already say.
            let why = text.strip_prefix("failed to decode Protobuf message: ").unwrap_or(&text);
            Err(format!("not a {}: {why}", output.full_name()))
        }
    }
}

#[cfg(test)]
mod tests;
