//! Protobuf editions (`edition = "2023"`, `"2024"`), read by lowering: an editions file's
//! descriptor becomes the proto3 (or proto2) descriptor that puts the same bytes on the wire and
//! reads the same JSON, which is what prost-reflect and protox read (neither reads editions
//! yet: protox issue 31). Each feature that changes the wire or the JSON mapping is resolved
//! (edition defaults, then file, message, oneof and field options, each overriding the one
//! above) and said the older way:
//! - `field_presence`: EXPLICIT is a proto3 `optional` (a synthetic oneof), IMPLICIT a plain
//!   proto3 field, LEGACY_REQUIRED the `required` label;
//! - `repeated_field_encoding`: an explicit `packed` on every packable repeated field;
//! - `message_encoding = DELIMITED`: the field becomes a group (tag-delimited on the wire);
//! - `enum_type` and `utf8_validation`: prost-reflect has no notion of either, so the resolved
//!   features are written onto each field's and enum's options, where [`enum_is_closed`] (a
//!   JSON number that names no value of a closed enum is refused) and [`string_is_verified`]
//!   (`--check` decodes an unverified string as bytes) read them.
//!
//! A file lowers to proto3 unless it defines an enum whose first value is not zero (only a
//! closed enum may): proto3 cannot say that, so such a file lowers to proto2, where an
//! IMPLICIT field keeps presence (a zero set explicitly goes on the wire; nothing else changes).
//!
//! Why lowering rather than another crate: no maintained Rust crate reads editions, and
//! lowering keeps prost-reflect's JSON mapping and encoder, which the rest of gRPC is built on.
//! `.proto` text in editions is read through [`source`], which says it in proto2's grammar for
//! protox's parser.

pub mod source;

use prost_reflect::{DescriptorPool, DynamicMessage, EnumDescriptor, FieldDescriptor, Kind, MessageDescriptor, Value};

/// `Edition` numbers (descriptor.proto).
const EDITION_2023: i32 = 1000;
const EDITION_2024: i32 = 1001;

/// `FieldDescriptorProto.Label` and `.Type` numbers.
const LABEL_REQUIRED: i32 = 2;
const LABEL_REPEATED: i32 = 3;
const TYPE_STRING: i32 = 9;
const TYPE_GROUP: i32 = 10;
const TYPE_MESSAGE: i32 = 11;
const TYPE_BYTES: i32 = 12;

/// `FeatureSet` values (descriptor.proto), those strain reads.
mod value {
    pub const EXPLICIT: i32 = 1;
    pub const LEGACY_REQUIRED: i32 = 3;
    pub const OPEN: i32 = 1;
    pub const CLOSED: i32 = 2;
    pub const PACKED: i32 = 1;
    /// `utf8_validation`'s other value, NONE, is 3 in descriptor.proto today and was 1 in the
    /// copy prost-reflect (and so protox) carries: anything but VERIFY is read as NONE.
    pub const VERIFY: i32 = 2;
    pub const LENGTH_PREFIXED: i32 = 1;
    pub const DELIMITED: i32 = 2;
    pub const ALLOW: i32 = 1;
}

/// The features that change the wire or the JSON mapping, resolved for one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Features {
    field_presence: i32,
    enum_type: i32,
    repeated_field_encoding: i32,
    utf8_validation: i32,
    message_encoding: i32,
    json_format: i32,
}

/// The `FeatureSet` fields, in the order of [`Features`]'s.
const NAMES: [&str; 6] =
    ["field_presence", "enum_type", "repeated_field_encoding", "utf8_validation", "message_encoding", "json_format"];

impl Features {
    /// An edition's defaults: 2024 changed none of these.
    fn of_edition(edition: i32) -> Result<Features, String> {
        match edition {
            EDITION_2023 | EDITION_2024 => Ok(Features {
                field_presence: value::EXPLICIT,
                enum_type: value::OPEN,
                repeated_field_encoding: value::PACKED,
                utf8_validation: value::VERIFY,
                message_encoding: value::LENGTH_PREFIXED,
                json_format: value::ALLOW,
            }),
            0 => Err("an editions file that names no edition".into()),
            n => Err(format!("edition {} (strain reads editions 2023 and 2024)", edition_name(n))),
        }
    }

    fn fields_mut(&mut self) -> [&mut i32; 6] {
        [
            &mut self.field_presence,
            &mut self.enum_type,
            &mut self.repeated_field_encoding,
            &mut self.utf8_validation,
            &mut self.message_encoding,
            &mut self.json_format,
        ]
    }

    /// These features with those set in `element`'s options (`options.features`) over them.
    fn under(mut self, element: &DynamicMessage) -> Features {
        if let Some(set) = features_of(element) {
            for (name, field) in NAMES.iter().zip(self.fields_mut()) {
                if set.has_field_by_name(name) {
                    if let Some(Value::EnumNumber(n)) = set.get_field_by_name(name).as_deref() {
                        *field = *n;
                    }
                }
            }
        }
        self
    }

    /// Writes these features, whole, as `element`'s `options.features` (both made when absent).
    fn write_onto(mut self, element: &mut DynamicMessage) {
        let Some(Value::Message(options)) = element.get_field_by_name_mut("options") else { return };
        let Some(Value::Message(set)) = options.get_field_by_name_mut("features") else { return };
        for (name, field) in NAMES.iter().zip(self.fields_mut()) {
            set.set_field_by_name(name, Value::EnumNumber(*field));
        }
    }
}

/// An edition's name as descriptor.proto spells it, for errors.
fn edition_name(n: i32) -> String {
    match n {
        998 => "PROTO2".into(),
        999 => "PROTO3".into(),
        1000 => "2023".into(),
        1001 => "2024".into(),
        n => format!("number {n}"),
    }
}

/// `element`'s `options.features`, when set.
fn features_of(element: &DynamicMessage) -> Option<DynamicMessage> {
    if !element.has_field_by_name("options") {
        return None;
    }
    let options = element.get_field_by_name("options")?;
    let options = options.as_message()?;
    if !options.has_field_by_name("features") {
        return None;
    }
    options.get_field_by_name("features")?.as_message().cloned()
}

fn int(m: &DynamicMessage, name: &str) -> i32 {
    match m.get_field_by_name(name).as_deref() {
        Some(Value::EnumNumber(n) | Value::I32(n)) => *n,
        _ => 0,
    }
}

fn text(m: &DynamicMessage, name: &str) -> String {
    m.get_field_by_name(name).and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The messages of a repeated field of `m`, to change in place.
fn each<'a>(m: &'a mut DynamicMessage, name: &str) -> impl Iterator<Item = &'a mut DynamicMessage> {
    let list = match m.get_field_by_name_mut(name) {
        Some(Value::List(list)) => list.as_mut_slice(),
        _ => &mut [],
    };
    list.iter_mut().filter_map(|v| match v {
        Value::Message(m) => Some(m),
        _ => None,
    })
}

fn each_ref(m: &DynamicMessage, name: &str) -> Vec<DynamicMessage> {
    match m.get_field_by_name(name).as_deref() {
        Some(Value::List(list)) => list.iter().filter_map(|v| v.as_message().cloned()).collect(),
        _ => Vec::new(),
    }
}

/// The descriptor of `google.protobuf.NAME`, from prost-reflect's own copy of descriptor.proto
/// (it knows `edition` and `features`, which prost-types' structs drop).
fn descriptor_type(pool: &DescriptorPool, name: &str) -> Result<MessageDescriptor, String> {
    pool.get_message_by_name(&format!("google.protobuf.{name}")).ok_or_else(|| format!("no google.protobuf.{name}"))
}

/// `bytes`, a serialized editions `FileDescriptorProto`, lowered to its proto3 (or proto2)
/// equivalent, serialized; custom options and everything else kept as they are.
pub fn lower(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let pool = DescriptorPool::global();
    let file_type = descriptor_type(&pool, "FileDescriptorProto")?;
    let mut file = DynamicMessage::decode(file_type, bytes).map_err(|e| format!("not a FileDescriptorProto ({e})"))?;
    let top = Features::of_edition(int(&file, "edition"))?.under(&file);
    let package = text(&file, "package");
    let mut lowering = Lowering {
        proto3: !each_ref(&file, "enum_type").iter().chain(nested_enums(&file).iter()).any(starts_above_zero),
        maps: Vec::new(),
        oneof: descriptor_type(&pool, "OneofDescriptorProto")?,
    };
    for m in each_ref(&file, "message_type") {
        lowering.find_maps(&m, &package);
    }
    for m in each(&mut file, "message_type") {
        lowering.message(m, top);
    }
    for f in each(&mut file, "extension") {
        lowering.field(f, top, None);
    }
    for e in each(&mut file, "enum_type") {
        lowering.enumeration(e, top);
    }
    file.set_field_by_name("syntax", Value::String(if lowering.proto3 { "proto3" } else { "proto2" }.into()));
    file.clear_field_by_name("edition");
    Ok(prost::Message::encode_to_vec(&file))
}

/// Every enum defined inside the file's messages, at any depth.
fn nested_enums(file: &DynamicMessage) -> Vec<DynamicMessage> {
    fn walk(m: &DynamicMessage, out: &mut Vec<DynamicMessage>) {
        out.extend(each_ref(m, "enum_type"));
        for n in each_ref(m, "nested_type") {
            walk(&n, out);
        }
    }
    let mut out = Vec::new();
    for m in each_ref(file, "message_type") {
        walk(&m, &mut out);
    }
    out
}

/// An enum whose first value is not zero (which proto3 forbids).
fn starts_above_zero(e: &DynamicMessage) -> bool {
    each_ref(e, "value").first().is_some_and(|v| int(v, "number") != 0)
}

/// One file's lowering.
struct Lowering {
    /// The file lowers to proto3 (else proto2).
    proto3: bool,
    /// Map entry types' full names (`.pkg.Outer.ThingsEntry`): their fields keep their form.
    maps: Vec<String>,
    /// `OneofDescriptorProto`, for the synthetic oneofs.
    oneof: MessageDescriptor,
}

impl Lowering {
    /// Notes the map entry types among `m` (in `scope`, a package or message name) and its
    /// nested types.
    fn find_maps(&mut self, m: &DynamicMessage, scope: &str) {
        let name = if scope.is_empty() { text(m, "name") } else { format!("{scope}.{}", text(m, "name")) };
        let is_map = m
            .get_field_by_name("options")
            .and_then(|o| o.as_message().and_then(|o| o.get_field_by_name("map_entry").and_then(|v| v.as_bool())))
            .unwrap_or(false);
        if is_map {
            self.maps.push(format!(".{name}"));
        }
        for n in each_ref(m, "nested_type") {
            self.find_maps(&n, &name);
        }
    }

    fn message(&mut self, m: &mut DynamicMessage, above: Features) {
        let here = above.under(m);
        let oneofs: Vec<Features> = each_ref(m, "oneof_decl").iter().map(|o| here.under(o)).collect();
        let mut names: Vec<String> = each_ref(m, "field").iter().map(|f| text(f, "name")).collect();
        names.extend(each_ref(m, "oneof_decl").iter().map(|o| text(o, "name")));
        let mut synthetic = Vec::new();
        let first_synthetic = oneofs.len() as i32;
        for f in each(m, "field") {
            let in_oneof = f.has_field_by_name("oneof_index");
            let scope = if in_oneof { oneofs.get(int(f, "oneof_index") as usize).copied() } else { None };
            if let Some(name) = self.field(f, scope.unwrap_or(here), Some(in_oneof)) {
                // proto3's `optional`: the field alone in a oneof of its own, after the real ones.
                let mut oneof_name = format!("_{name}");
                while names.contains(&oneof_name) {
                    oneof_name.insert(0, 'X');
                }
                names.push(oneof_name.clone());
                f.set_field_by_name("oneof_index", Value::I32(first_synthetic + synthetic.len() as i32));
                synthetic.push(oneof_name);
            }
        }
        for name in synthetic {
            let mut oneof = DynamicMessage::new(self.oneof.clone());
            oneof.set_field_by_name("name", Value::String(name));
            if let Some(Value::List(list)) = m.get_field_by_name_mut("oneof_decl") {
                list.push(Value::Message(oneof));
            }
        }
        for f in each(m, "extension") {
            self.field(f, here, None);
        }
        for n in each(m, "nested_type") {
            self.message(n, here);
        }
        for e in each(m, "enum_type") {
            self.enumeration(e, here);
        }
    }

    /// Lowers field `f` under `above`; `in_oneof` is `None` for an extension. The field's name
    /// when it becomes proto3 `optional` and needs a synthetic oneof.
    fn field(&mut self, f: &mut DynamicMessage, above: Features, in_oneof: Option<bool>) -> Option<String> {
        let here = above.under(f);
        let (label, ty) = (int(f, "label"), int(f, "type"));
        let type_name = text(f, "type_name");
        let is_map = self.maps.contains(&type_name);
        here.write_onto(f);
        if ty == TYPE_MESSAGE && here.message_encoding == value::DELIMITED && !is_map {
            f.set_field_by_name("type", Value::EnumNumber(TYPE_GROUP));
        }
        if label == LABEL_REPEATED {
            if packable(ty) {
                if let Some(Value::Message(options)) = f.get_field_by_name_mut("options") {
                    options.set_field_by_name("packed", Value::Bool(here.repeated_field_encoding == value::PACKED));
                }
            }
            return None;
        }
        if here.field_presence == value::LEGACY_REQUIRED {
            f.set_field_by_name("label", Value::EnumNumber(LABEL_REQUIRED));
            return None;
        }
        let has_presence_anyway = matches!(ty, TYPE_MESSAGE | TYPE_GROUP) || in_oneof == Some(true);
        if !self.proto3 || has_presence_anyway || here.field_presence != value::EXPLICIT {
            return None;
        }
        f.set_field_by_name("proto3_optional", Value::Bool(true));
        // An extension has presence without a oneof.
        in_oneof.map(|_| text(f, "name"))
    }

    fn enumeration(&mut self, e: &mut DynamicMessage, above: Features) {
        above.under(e).write_onto(e);
    }
}

/// Scalars and enums, which a repeated field may pack.
fn packable(ty: i32) -> bool {
    !matches!(ty, 0 | TYPE_STRING | TYPE_GROUP | TYPE_MESSAGE | TYPE_BYTES)
}

/// The resolved value of feature `name` written on an element's options by [`lower`], if any.
fn written(options: &DynamicMessage, name: &str) -> Option<i32> {
    if !options.has_field_by_name("features") {
        return None;
    }
    let set = options.get_field_by_name("features")?;
    let set = set.as_message()?;
    set.has_field_by_name(name).then(|| int(set, name))
}

/// Whether `e` is closed: a number that names none of its values is not one of it. A lowered
/// editions enum says so in its features; otherwise proto2's enums are closed, proto3's open.
pub fn enum_is_closed(e: &EnumDescriptor) -> bool {
    match written(&e.options(), "enum_type") {
        Some(v) => v == value::CLOSED,
        None => e.parent_file().syntax() == prost_reflect::Syntax::Proto2,
    }
}

/// Whether string field `f`'s bytes must be UTF-8 (proto3's, and editions' by default);
/// proto2's and `utf8_validation = NONE`'s may be any bytes.
pub fn string_is_verified(f: &FieldDescriptor) -> bool {
    match written(&f.options(), "utf8_validation") {
        Some(v) => v == value::VERIFY,
        None => f.parent_file().syntax() == prost_reflect::Syntax::Proto3,
    }
}

/// `output` as `--check` decodes it: the same type, unless it reaches a string field whose bytes
/// need not be UTF-8, which prost-reflect would refuse; then the same type from a copy of its
/// files where such fields are bytes.
pub fn checked(output: &MessageDescriptor) -> MessageDescriptor {
    let mut unverified: Vec<(String, i32)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut todo = vec![output.clone()];
    while let Some(m) = todo.pop() {
        if seen.iter().any(|s| s == m.full_name()) {
            continue;
        }
        seen.push(m.full_name().to_string());
        for f in m.fields() {
            match f.kind() {
                Kind::String if !string_is_verified(&f) => {
                    unverified.push((m.full_name().to_string(), f.number() as i32))
                }
                Kind::Message(inner) => todo.push(inner),
                _ => {}
            }
        }
    }
    if unverified.is_empty() {
        return output.clone();
    }
    let mut files: Vec<_> = output.parent_pool().file_descriptor_protos().cloned().collect();
    for file in &mut files {
        let package = file.package().to_string();
        for m in &mut file.message_type {
            as_bytes(m, &package, &unverified);
        }
    }
    let set = prost_reflect::prost_types::FileDescriptorSet { file: files };
    DescriptorPool::from_file_descriptor_set(set)
        .ok()
        .and_then(|pool| pool.get_message_by_name(output.full_name()))
        .unwrap_or_else(|| output.clone())
}

/// Makes the `unverified` (message, field number) string fields in `m` and its nested types bytes.
fn as_bytes(m: &mut prost_reflect::prost_types::DescriptorProto, scope: &str, unverified: &[(String, i32)]) {
    let name = if scope.is_empty() { m.name().to_string() } else { format!("{scope}.{}", m.name()) };
    for f in &mut m.field {
        if unverified.iter().any(|(msg, n)| *msg == name && *n == f.number()) {
            f.set_type(prost_reflect::prost_types::field_descriptor_proto::Type::Bytes);
        }
    }
    for n in &mut m.nested_type {
        as_bytes(n, &name, unverified);
    }
}

#[cfg(test)]
mod tests;
