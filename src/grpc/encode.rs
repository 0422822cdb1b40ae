//! A request message's encoding, made once at load. A message without placeholders is its
//! bytes. A message with some is kept as pieces: runs of fields encoded at load, the templated
//! strings with their field keys, and the messages that enclose them (whose length prefixes
//! change with the strings'). A render then writes the fixed bytes as they are and encodes only
//! the templated strings and the length prefixes above them: no `DynamicMessage` per call.
//!
//! Protobuf parsers take a message's fields in any order, and a repeated field's elements in
//! the order they come; so a templated field is cut out where it stands and its neighbours stay
//! encoded in runs, the elements of a list keep their order, and a map's fixed entries go
//! before its templated ones (a map has no order).
//!
//! Placeholders are read in string fields at any depth, list elements and map values included;
//! never in map keys, bytes, or a `google.protobuf.Any`'s packed message (already bytes).

use prost::encoding::{encode_varint, encoded_len_varint};
use prost::Message as _;
use prost_reflect::{DynamicMessage, FieldDescriptor, MapKey, ReflectMessage, Value};

use super::json::Misfit;
use super::template::{Context, Template};

/// A message ready to send.
#[derive(Debug, Clone)]
pub enum Encoding {
    /// It never changes: its bytes.
    Fixed(Vec<u8>),
    /// It has placeholders: its pieces.
    Pieces(Vec<Piece>),
}

/// A piece of a templated message's encoding.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Fields encoded at load.
    Bytes(Vec<u8>),
    /// A string field with placeholders: its key (field number, length-delimited) and text.
    Text {
        /// The field's key.
        key: Vec<u8>,
        /// Its text.
        text: Template,
    },
    /// A message field that holds placeholders somewhere inside.
    Message {
        /// The field's key.
        key: Vec<u8>,
        /// A proto2 group's end key (a group is framed by keys, not by a length prefix).
        end: Option<Vec<u8>>,
        /// Its own pieces.
        pieces: Vec<Piece>,
    },
}

/// What a part of a message became: unchanged (escapes resolved), or pieces.
enum Built<T> {
    Fixed(T),
    Pieces(Vec<Piece>),
}

/// `message`'s encoding; a misfit names a string whose placeholders do not parse.
pub fn encoding(message: DynamicMessage) -> Result<Encoding, Misfit> {
    Ok(match built_message(message, "")? {
        Built::Fixed(m) => Encoding::Fixed(m.encode_to_vec()),
        Built::Pieces(pieces) => Encoding::Pieces(pieces),
    })
}

fn built_message(mut message: DynamicMessage, path: &str) -> Result<Built<DynamicMessage>, Misfit> {
    let desc = message.descriptor();
    // What stays in `message` are its extensions and unknown fields, written last.
    let fields: Vec<(FieldDescriptor, Value)> = message.take_fields().collect();
    let mut built = Vec::with_capacity(fields.len());
    for (field, value) in fields {
        let here =
            if path.is_empty() { field.json_name().to_string() } else { format!("{path}.{}", field.json_name()) };
        built.push((built_field(&field, value, &here)?, field));
    }
    if built.iter().all(|(b, _)| matches!(b, Built::Fixed(_))) {
        for (b, field) in built {
            if let Built::Fixed(value) = b {
                set(&mut message, &field, value)?;
            }
        }
        return Ok(Built::Fixed(message));
    }
    let mut pieces = Vec::new();
    let mut run = DynamicMessage::new(desc.clone());
    for (b, field) in built {
        match b {
            Built::Fixed(value) => set(&mut run, &field, value)?,
            Built::Pieces(more) => {
                push_bytes(&mut pieces, std::mem::replace(&mut run, DynamicMessage::new(desc.clone())).encode_to_vec());
                pieces.extend(more);
            }
        }
    }
    push_bytes(&mut pieces, run.encode_to_vec());
    push_bytes(&mut pieces, message.encode_to_vec());
    Ok(Built::Pieces(pieces))
}

/// One field's value (a list element or a map value stands for its field too: each is encoded
/// under the field's key).
fn built_field(field: &FieldDescriptor, value: Value, path: &str) -> Result<Built<Value>, Misfit> {
    Ok(match value {
        Value::String(s) => {
            let text =
                Template::parse(&s).map_err(|e| Misfit { field: Some(path.to_string()), reason: e.to_string() })?;
            match text.fixed() {
                Some(s) => Built::Fixed(Value::String(s)),
                None => Built::Pieces(vec![Piece::Text { key: key(field.number(), LEN), text }]),
            }
        }
        Value::Message(m) => match built_message(m, path)? {
            Built::Fixed(m) => Built::Fixed(Value::Message(m)),
            Built::Pieces(pieces) => Built::Pieces(vec![nested(field, pieces)]),
        },
        Value::List(items) => built_list(field, items, path)?,
        Value::Map(entries) => built_map(field, entries, path)?,
        other => Built::Fixed(other),
    })
}

fn built_list(field: &FieldDescriptor, items: Vec<Value>, path: &str) -> Result<Built<Value>, Misfit> {
    let mut built = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        built.push(built_field(field, item, &format!("{path}[{i}]"))?);
    }
    if built.iter().all(|b| matches!(b, Built::Fixed(_))) {
        let items = built.into_iter().filter_map(|b| if let Built::Fixed(v) = b { Some(v) } else { None });
        return Ok(Built::Fixed(Value::List(items.collect())));
    }
    let mut pieces = Vec::new();
    for b in built {
        match b {
            // Strings and messages are never packed: each element is its own keyed field.
            Built::Fixed(v) => push_bytes(&mut pieces, alone(field, Value::List(vec![v]))?),
            Built::Pieces(more) => pieces.extend(more),
        }
    }
    Ok(Built::Pieces(pieces))
}

fn built_map(
    field: &FieldDescriptor,
    entries: std::collections::HashMap<MapKey, Value>,
    path: &str,
) -> Result<Built<Value>, Misfit> {
    let Some(entry) = field.kind().as_message().cloned() else {
        return Ok(Built::Fixed(Value::Map(entries)));
    };
    let value_field = entry.map_entry_value_field();
    // Sorted, so a templated map's pieces come out the same on every load.
    let mut entries: Vec<(MapKey, Value)> = entries.into_iter().collect();
    entries.sort_by(|a, b| map_key_order(&a.0, &b.0));
    let mut fixed = std::collections::HashMap::new();
    let mut templated = Vec::new();
    for (k, v) in entries {
        let here = match &k {
            MapKey::String(s) => format!("{path}[{s:?}]"),
            other => format!("{path}[\"{}\"]", map_key_text(other)),
        };
        match built_field(&value_field, v, &here)? {
            Built::Fixed(v) => {
                fixed.insert(k, v);
            }
            Built::Pieces(value) => {
                let mut key_only = DynamicMessage::new(entry.clone());
                set(&mut key_only, &entry.map_entry_key_field(), Value::from(k))?;
                let mut pieces = vec![Piece::Bytes(key_only.encode_to_vec())];
                pieces.extend(value);
                templated.push(nested(field, pieces));
            }
        }
    }
    if templated.is_empty() {
        return Ok(Built::Fixed(Value::Map(fixed)));
    }
    let mut pieces = Vec::new();
    if !fixed.is_empty() {
        push_bytes(&mut pieces, alone(field, Value::Map(fixed))?);
    }
    pieces.extend(templated);
    Ok(Built::Pieces(pieces))
}

fn map_key_order(a: &MapKey, b: &MapKey) -> std::cmp::Ordering {
    match (a, b) {
        (MapKey::String(a), MapKey::String(b)) => a.cmp(b),
        (MapKey::I32(a), MapKey::I32(b)) => a.cmp(b),
        (MapKey::I64(a), MapKey::I64(b)) => a.cmp(b),
        (MapKey::U32(a), MapKey::U32(b)) => a.cmp(b),
        (MapKey::U64(a), MapKey::U64(b)) => a.cmp(b),
        (MapKey::Bool(a), MapKey::Bool(b)) => a.cmp(b),
        _ => std::cmp::Ordering::Equal,
    }
}

fn map_key_text(k: &MapKey) -> String {
    match k {
        MapKey::Bool(v) => v.to_string(),
        MapKey::I32(v) => v.to_string(),
        MapKey::I64(v) => v.to_string(),
        MapKey::U32(v) => v.to_string(),
        MapKey::U64(v) => v.to_string(),
        MapKey::String(v) => v.clone(),
    }
}

/// A message field's piece: length-delimited, or a proto2 group between its two keys.
fn nested(field: &FieldDescriptor, pieces: Vec<Piece>) -> Piece {
    if field.is_group() {
        Piece::Message { key: key(field.number(), START_GROUP), end: Some(key(field.number(), END_GROUP)), pieces }
    } else {
        Piece::Message { key: key(field.number(), LEN), end: None, pieces }
    }
}

/// `value` encoded as field `field` of an otherwise empty message.
fn alone(field: &FieldDescriptor, value: Value) -> Result<Vec<u8>, Misfit> {
    let mut m = DynamicMessage::new(field.parent_message().clone());
    set(&mut m, field, value)?;
    Ok(m.encode_to_vec())
}

/// Sets a value taken out of a message of the same type (so it fits; the check is
/// prost-reflect's, which would otherwise panic).
fn set(m: &mut DynamicMessage, field: &FieldDescriptor, value: Value) -> Result<(), Misfit> {
    m.try_set_field(field, value).map_err(|e| Misfit {
        field: Some(field.json_name().to_string()),
        reason: format!("cannot be re-encoded: {e}"),
    })
}

/// Appends `bytes` to the last piece when that is bytes too.
fn push_bytes(pieces: &mut Vec<Piece>, bytes: Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    match pieces.last_mut() {
        Some(Piece::Bytes(last)) => last.extend_from_slice(&bytes),
        _ => pieces.push(Piece::Bytes(bytes)),
    }
}

/// Wire types (protobuf encoding: the low three bits of a key).
const LEN: u32 = 2;
const START_GROUP: u32 = 3;
const END_GROUP: u32 = 4;

fn key(number: u32, wire_type: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(5);
    encode_varint(u64::from(number) << 3 | u64::from(wire_type), &mut out);
    out
}

/// Bytes [`write`] will write for `pieces` with `cx`.
pub fn len(pieces: &[Piece], cx: &mut Context<'_>) -> usize {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Bytes(b) => b.len(),
            Piece::Text { key, text } => {
                let n = text.len(cx);
                key.len() + encoded_len_varint(n as u64) + n
            }
            Piece::Message { key, end: Some(end), pieces } => key.len() + len(pieces, cx) + end.len(),
            Piece::Message { key, end: None, pieces } => {
                let n = len(pieces, cx);
                key.len() + encoded_len_varint(n as u64) + n
            }
        })
        .sum()
}

/// Appends `pieces`' encoding for `cx`'s call to `out`.
pub fn write(pieces: &[Piece], cx: &mut Context<'_>, out: &mut Vec<u8>) {
    for p in pieces {
        match p {
            Piece::Bytes(b) => out.extend_from_slice(b),
            Piece::Text { key, text } => {
                out.extend_from_slice(key);
                encode_varint(text.len(cx) as u64, out);
                text.write(cx, out);
            }
            Piece::Message { key, end, pieces } => {
                out.extend_from_slice(key);
                match end {
                    Some(end) => {
                        write(pieces, cx, out);
                        out.extend_from_slice(end);
                    }
                    None => {
                        encode_varint(len(pieces, cx) as u64, out);
                        write(pieces, cx, out);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
