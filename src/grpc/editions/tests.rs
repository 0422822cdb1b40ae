use prost::Message as _;
use prost_reflect::{Cardinality, DescriptorPool, DynamicMessage, Kind, Syntax};

use super::*;
use crate::grpc::schema;

/// An editions schema with every feature that changes the wire or the JSON mapping, set at
/// each level where it may be (file, message, oneof, field, enum).
const EVERYTHING: &str = r#"edition = "2023";
package ed;

option features.utf8_validation = NONE;

enum Open { OPEN_ZERO = 0; OPEN_ONE = 1; }

message Point {
  int32 x = 1;
  int32 y = 2 [features.field_presence = IMPLICIT];
  int32 z = 3 [features.field_presence = LEGACY_REQUIRED];
  repeated int32 packed = 4;
  repeated int32 expanded = 5 [features.repeated_field_encoding = EXPANDED];
  Point inner = 6 [features.message_encoding = DELIMITED];
  repeated Point inners = 7 [features.message_encoding = DELIMITED];
  map<string, Point> named = 8 [features.message_encoding = DELIMITED];
  oneof choice { string a = 9; int32 b = 10; }
  string note = 11;
  string checked = 12 [features.utf8_validation = VERIFY];
  Open open = 13;
  Closed closed = 14;
  string _x = 15;
  int64 big = 16 [default = 7];
  enum Closed {
    option features.enum_type = CLOSED;
    CLOSED_ONE = 1;
    CLOSED_TWO = 2;
  }
}

message Implicit {
  option features.field_presence = IMPLICIT;
  int32 n = 1;
  Point p = 2;
}

service Plotter {
  rpc Plot(Point) returns (Point);
}
"#;

fn pool_of(files: &[(&str, &str)]) -> DescriptorPool {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    schema::compile(&[dir.path().join(files[0].0)], &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn field(pool: &DescriptorPool, message: &str, name: &str) -> prost_reflect::FieldDescriptor {
    pool.get_message_by_name(message).unwrap().get_field_by_name(name).unwrap()
}

#[test]
fn each_feature_reads_as_it_means() {
    let pool = pool_of(&[("everything.proto", EVERYTHING)]);
    let point = "ed.Point";
    // The file has an enum whose first value is not zero only inside Point (Closed): proto2.
    assert_eq!(pool.get_file_by_name("everything.proto").unwrap().syntax(), Syntax::Proto2);
    let f = |name| field(&pool, point, name);
    // Presence: explicit by default, implicit where said, required where said.
    assert!(f("x").supports_presence());
    assert_eq!(f("z").cardinality(), Cardinality::Required);
    // Repeated scalars packed by default, expanded where said.
    assert!(f("packed").is_packed());
    assert!(!f("expanded").is_packed());
    // DELIMITED messages are groups; a map keeps its entries length-prefixed.
    assert!(f("inner").is_group());
    assert!(f("inners").is_group());
    assert!(f("named").is_map() && !f("named").is_group());
    // A real oneof stays; the default stays.
    assert_eq!(f("a").containing_oneof().unwrap().name(), "choice");
    assert_eq!(f("big").default_value(), prost_reflect::Value::I64(7));
    // UTF-8: not verified file-wide, verified where said.
    assert!(!string_is_verified(&f("note")));
    assert!(string_is_verified(&f("checked")));
    // Enums: open by default, closed where said.
    let Kind::Enum(open) = f("open").kind() else { panic!() };
    let Kind::Enum(closed) = f("closed").kind() else { panic!() };
    assert!(!enum_is_closed(&open));
    assert!(enum_is_closed(&closed));
}

#[test]
fn a_file_without_a_closed_enum_lowers_to_proto3_with_optional_for_explicit_presence() {
    let src = r#"edition = "2023";
package p3;
message M {
  int32 a = 1;
  int32 b = 2 [features.field_presence = IMPLICIT];
  M m = 3;
  oneof o { int32 c = 4; }
  oneof _a { int32 d = 5; }
}
"#;
    let pool = pool_of(&[("m.proto", src)]);
    assert_eq!(pool.get_file_by_name("m.proto").unwrap().syntax(), Syntax::Proto3);
    let m = pool.get_message_by_name("p3.M").unwrap();
    let presence: Vec<bool> =
        ["a", "b", "m", "c", "d"].iter().map(|n| m.get_field_by_name(n).unwrap().supports_presence()).collect();
    assert_eq!(presence, [true, false, true, true, true]);
    // The real oneof first, then a synthetic one per optional field (named as protoc names them).
    let oneofs: Vec<String> = m.oneofs().map(|o| o.name().to_string()).collect();
    // (`_a` is a oneof's name already, so `a`'s is `X_a`.)
    assert_eq!(oneofs, ["o", "_a", "X_a"]);
    // On the wire: an implicit zero is not sent, an explicit one is.
    let mut msg = DynamicMessage::new(m.clone());
    msg.set_field_by_name("a", prost_reflect::Value::I32(0));
    msg.set_field_by_name("b", prost_reflect::Value::I32(0));
    assert_eq!(msg.encode_to_vec(), [0x08, 0x00]);
}

#[test]
fn route_guide_as_grpc_go_ships_it_reads_as_proto3() {
    // The shape of grpc-go's examples/route_guide/routeguide/route_guide.proto: implicit
    // presence file-wide, which is proto3 exactly.
    let src = r#"edition = "2023";

option features.field_presence = IMPLICIT;
option go_package = "google.golang.org/grpc/examples/route_guide/routeguide";

package routeguide;

service RouteGuide {
  rpc GetFeature(Point) returns (Feature) {}
  rpc ListFeatures(Rectangle) returns (stream Feature) {}
  rpc RecordRoute(stream Point) returns (RouteSummary) {}
  rpc RouteChat(stream RouteNote) returns (stream RouteNote) {}
}

message Point {
  int32 latitude = 1;
  int32 longitude = 2;
}
message Rectangle { Point lo = 1; Point hi = 2; }
message Feature { string name = 1; Point location = 2; }
message RouteNote { Point location = 1; string message = 2; }
message RouteSummary { int32 point_count = 1; int32 feature_count = 2; int32 distance = 3; int32 elapsed_time = 4; }
"#;
    let pool = pool_of(&[("route_guide.proto", src)]);
    let m = schema::find_method(&pool, "routeguide.RouteGuide/RouteChat").unwrap();
    assert_eq!(m.kind, schema::MethodKind::Bidi);
    let p = pool.get_message_by_name("routeguide.Point").unwrap();
    assert!(p.fields().all(|f| !f.supports_presence()));
    assert_eq!(p.parent_file().syntax(), Syntax::Proto3);
    // JSON as ghz or grpcurl would send it, and its bytes.
    let msg = crate::grpc::json::message(&p, &serde_json::json!({"latitude": 409146138, "longitude": 0})).unwrap();
    assert_eq!(msg.encode_to_vec(), [0x08, 0x9a, 0xa6, 0x8c, 0xc3, 0x01]);
}

#[test]
fn a_closed_enum_refuses_a_number_it_has_not_and_an_open_one_takes_it() {
    let pool = pool_of(&[("everything.proto", EVERYTHING)]);
    let point = pool.get_message_by_name("ed.Point").unwrap();
    let misfit = crate::grpc::json::message(&point, &serde_json::json!({"closed": 7})).unwrap_err();
    assert_eq!(
        misfit.to_string(),
        "field \"closed\": 7 is none of closed enum ed.Point.Closed's values (CLOSED_ONE, CLOSED_TWO)"
    );
    assert!(crate::grpc::json::message(&point, &serde_json::json!({"closed": 2, "open": 7})).is_ok());
    let misfit = crate::grpc::json::message(&point, &serde_json::json!({"inners": [{}, {"closed": 3}]})).unwrap_err();
    assert_eq!(misfit.field.as_deref(), Some("inners[1].closed"));
}

#[test]
fn check_decodes_an_unverified_string_as_bytes() {
    let pool = pool_of(&[("everything.proto", EVERYTHING)]);
    let m = schema::find_method(&pool, "ed.Plotter/Plot").unwrap();
    // `note` (11) holds bytes that are not UTF-8.
    let reply = [0x5a, 0x02, 0xff, 0xfe];
    assert!(DynamicMessage::decode(m.output.clone(), &reply[..]).is_err());
    assert!(DynamicMessage::decode(m.checked.clone(), &reply[..]).is_ok());
    // `checked` (12) must be UTF-8 either way.
    let reply = [0x62, 0x02, 0xff, 0xfe];
    assert!(DynamicMessage::decode(m.checked, &reply[..]).is_err());
}

#[test]
fn reflection_and_protosets_lower_the_same_descriptor() {
    // What protoc writes for an editions file: syntax "editions", the edition, features in
    // the options; here made from strain's own compile, marked back.
    let pool = pool_of(&[("everything.proto", EVERYTHING)]);
    let compiled = pool.get_file_by_name("everything.proto").unwrap();
    assert_eq!(compiled.syntax(), Syntax::Proto2);
    // Lowering is idempotent in effect: the lowered file read again is the same schema.
    let again = schema::from_files(&[compiled.encode_to_vec()], "test").unwrap();
    let f = again.get_message_by_name("ed.Point").unwrap().get_field_by_name("inner").unwrap();
    assert!(f.is_group());
}

#[test]
fn editions_errors_point_at_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let src = "edition = \"2023\";\npackage e;\nmessage M {\n  int32 a = 1;\n  Missing b = 2;\n}\n";
    std::fs::write(dir.path().join("e.proto"), src).unwrap();
    let err = schema::compile(&[dir.path().join("e.proto")], &[]).unwrap_err().to_string();
    // Line 5, column 3: where `Missing` stands in the file as written.
    assert!(err.starts_with("e.proto:5:3: "), "{err}");
    let later = "edition = \"2030\";\nmessage M {}\n";
    std::fs::write(dir.path().join("l.proto"), later).unwrap();
    let err = schema::compile(&[dir.path().join("l.proto")], &[]).unwrap_err().to_string();
    assert!(err.contains("2030") && err.contains("2023 and 2024"), "{err}");
}

#[test]
fn a_descriptor_in_an_unknown_edition_is_one_line() {
    let mut file = DynamicMessage::new(
        DescriptorPool::global().get_message_by_name("google.protobuf.FileDescriptorProto").unwrap(),
    );
    file.set_field_by_name("name", prost_reflect::Value::String("x.proto".into()));
    file.set_field_by_name("syntax", prost_reflect::Value::String("editions".into()));
    file.set_field_by_name("edition", prost_reflect::Value::EnumNumber(99_997));
    let err = schema::from_files(&[file.encode_to_vec()], "the server's reflection answers").unwrap_err().to_string();
    assert_eq!(
        err,
        "the server's reflection answers: x.proto: edition number 99997 (strain reads editions 2023 and 2024)"
    );
}
