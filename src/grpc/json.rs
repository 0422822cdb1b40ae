//! A request message from protobuf's canonical JSON mapping (prost-reflect's serde support,
//! unknown fields denied), with errors that name the field at fault: prost-reflect's own say
//! only what went wrong (`invalid digit found in string`), not where, so on failure the JSON is
//! walked beside the message type to find the first field that does not fit on its own, and
//! the reason is said in the field's terms (`field "lo.latitude": expected a 32-bit integer,
//! got "abc"`).

use prost_reflect::{DeserializeOptions, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value};

/// JSON that does not fit the message type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misfit {
    /// The path of the field at fault in the JSON's names (`lo.latitude`, `points[2]`,
    /// `labels["k"]`); `None` when it is the message as a whole.
    pub field: Option<String>,
    /// What is wrong, in one line.
    pub reason: String,
}

impl std::fmt::Display for Misfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "field {field:?}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// `json` as a message of type `desc`.
pub fn message(desc: &MessageDescriptor, json: &Value) -> Result<DynamicMessage, Misfit> {
    let message = fits(desc, json).map_err(|whole| {
        if !is_well_known(desc) && !json.is_object() {
            return Misfit {
                field: None,
                reason: format!("expected an object (a {} message), got {}", desc.full_name(), shown(json)),
            };
        }
        locate(desc, json, "").unwrap_or(Misfit { field: None, reason: whole })
    })?;
    match outside_closed_enum(&message, "") {
        Some(misfit) => Err(misfit),
        None => Ok(message),
    }
}

/// The first enum value in `m` that a closed enum does not have: prost-reflect takes any
/// number for any enum, but a closed enum's (proto2's, or an edition's `enum_type = CLOSED`)
/// are only its own values.
fn outside_closed_enum(m: &DynamicMessage, path: &str) -> Option<Misfit> {
    for (field, value) in m.fields() {
        let here =
            if path.is_empty() { field.json_name().to_string() } else { format!("{path}.{}", field.json_name()) };
        let found = match value {
            prost_reflect::Value::List(items) => {
                items.iter().enumerate().find_map(|(i, v)| outside(&field.kind(), v, &format!("{here}[{i}]")))
            }
            prost_reflect::Value::Map(entries) => {
                let kind = field.kind();
                let value_kind = kind.as_message().map(|e| e.map_entry_value_field().kind());
                entries.iter().find_map(|(k, v)| outside(value_kind.as_ref()?, v, &format!("{here}[{k:?}]")))
            }
            v => outside(&field.kind(), v, &here),
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

fn outside(kind: &Kind, value: &prost_reflect::Value, here: &str) -> Option<Misfit> {
    match (kind, value) {
        (Kind::Enum(e), prost_reflect::Value::EnumNumber(n))
            if e.get_value(*n).is_none() && crate::grpc::editions::enum_is_closed(e) =>
        {
            let names: Vec<String> = e.values().map(|v| v.name().to_string()).collect();
            Some(leaf(
                here.to_string(),
                format!("{n} is none of closed enum {}'s values ({})", e.full_name(), names.join(", ")),
            ))
        }
        (Kind::Message(_), prost_reflect::Value::Message(inner)) => outside_closed_enum(inner, here),
        _ => None,
    }
}

fn fits(desc: &MessageDescriptor, json: &Value) -> Result<DynamicMessage, String> {
    DynamicMessage::deserialize_with_options(desc.clone(), json, &DeserializeOptions::new()).map_err(|e| e.to_string())
}

/// The well-known types have JSON forms of their own (a Timestamp is a string): their errors
/// are prost-reflect's, at the field that holds one.
fn is_well_known(desc: &MessageDescriptor) -> bool {
    desc.full_name().starts_with("google.protobuf.")
}

/// The first field of `json` (an object for `desc`) that does not fit alone.
fn locate(desc: &MessageDescriptor, json: &Value, path: &str) -> Option<Misfit> {
    if is_well_known(desc) {
        return None;
    }
    for (key, value) in json.as_object()? {
        let here = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
        // Extensions (`[pkg.ext]`) are prost-reflect's to judge, whole.
        if key.starts_with('[') {
            continue;
        }
        let Some(field) = desc.get_field_by_json_name(key).or_else(|| desc.get_field_by_name(key)) else {
            let names: Vec<String> = desc.fields().map(|f| f.json_name().to_string()).collect();
            let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return Some(Misfit {
                field: Some(here),
                reason: format!("no such field in {} (its fields: {names})", desc.full_name()),
            });
        };
        let alone = |v: &Value| fits(desc, &Value::Object(Map::from_iter([(key.clone(), v.clone())])));
        if let Err(whole) = alone(value) {
            return Some(in_field(&field, value, here, whole, &alone));
        }
    }
    None
}

/// Why `value` does not fit `field` (it does not, alone): inside a list, a map or a message
/// when it is one, else at `here`.
fn in_field(
    field: &FieldDescriptor,
    value: &Value,
    here: String,
    whole: String,
    alone: &dyn Fn(&Value) -> Result<DynamicMessage, String>,
) -> Misfit {
    let kind = field.kind();
    if field.is_map() {
        let Some(entries) = value.as_object() else {
            return leaf(here, format!("expected an object (a map), got {}", shown(value)));
        };
        let entry = kind.as_message().cloned();
        for (k, v) in entries {
            let one = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
            let Err(why) = alone(&one) else { continue };
            let at = format!("{here}[{k:?}]");
            let Some(entry) = &entry else { return leaf(at, why) };
            let key_kind = entry.map_entry_key_field().kind();
            if !key_fits(&key_kind, k) {
                return leaf(at, format!("the key is not {}", expected(&key_kind)));
            }
            return within(&entry.map_entry_value_field().kind(), v, at, why);
        }
        return leaf(here, whole);
    }
    if field.is_list() {
        let Some(items) = value.as_array() else {
            return leaf(here, format!("expected a list, got {}", shown(value)));
        };
        for (i, item) in items.iter().enumerate() {
            if let Err(why) = alone(&Value::Array(vec![item.clone()])) {
                return within(&kind, item, format!("{here}[{i}]"), why);
            }
        }
        return leaf(here, whole);
    }
    within(&kind, value, here, whole)
}

/// Why `value` is not a `kind`: a message's own misfit inside it, else the kind expected.
fn within(kind: &Kind, value: &Value, here: String, why: String) -> Misfit {
    match kind {
        Kind::Message(m) if is_well_known(m) => leaf(here, format!("not a {}: {why}", m.full_name())),
        Kind::Message(m) if value.is_object() => locate(m, value, &here).unwrap_or_else(|| leaf(here, why)),
        Kind::Bytes if value.is_string() => leaf(here, why),
        _ => leaf(here, format!("expected {}, got {}", expected(kind), shown(value))),
    }
}

fn leaf(field: String, reason: String) -> Misfit {
    Misfit { field: Some(field), reason }
}

/// What a field of `kind` takes in JSON.
fn expected(kind: &Kind) -> String {
    match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => "a 32-bit integer".into(),
        Kind::Uint32 | Kind::Fixed32 => "an unsigned 32-bit integer".into(),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => "a 64-bit integer (a number or a decimal string)".into(),
        Kind::Uint64 | Kind::Fixed64 => "an unsigned 64-bit integer (a number or a decimal string)".into(),
        Kind::Float | Kind::Double => "a number (or \"NaN\", \"Infinity\", \"-Infinity\")".into(),
        Kind::Bool => "true or false".into(),
        Kind::String => "a string".into(),
        Kind::Bytes => "base64 text".into(),
        Kind::Enum(e) => {
            let names: Vec<String> = e.values().map(|v| v.name().to_string()).collect();
            format!("one of {}'s values ({}) or a number", e.full_name(), names.join(", "))
        }
        Kind::Message(m) => format!("an object (a {} message)", m.full_name()),
    }
}

/// Whether a JSON object key reads as a map key of `kind` (JSON keys are always strings).
fn key_fits(kind: &Kind, key: &str) -> bool {
    match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => key.parse::<i32>().is_ok(),
        Kind::Uint32 | Kind::Fixed32 => key.parse::<u32>().is_ok(),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => key.parse::<i64>().is_ok(),
        Kind::Uint64 | Kind::Fixed64 => key.parse::<u64>().is_ok(),
        Kind::Bool => key == "true" || key == "false",
        _ => true,
    }
}

/// A JSON value as the user wrote it, cut short.
fn shown(value: &Value) -> String {
    const MAX: usize = 40;
    let text = value.to_string();
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests;
