//! A schema the gRPC modules' tests share: every field shape a request can have (nested,
//! repeated and map messages, enums, bytes, well-known types, a oneof, a proto2 group).

use prost_reflect::{DescriptorPool, MessageDescriptor};

/// The main file.
pub const REQ: &str = r#"syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "old.proto";

enum Color { RED = 0; GREEN = 1; }

message Point {
  int32 latitude = 1;
  int32 longitude = 2;
  string label = 3;
}

message Req {
  Point lo = 1;
  repeated Point points = 2;
  map<string, Point> places = 3;
  map<int32, string> names = 4;
  Color color = 5;
  string name = 6;
  repeated string tags = 7;
  bytes blob = 8;
  google.protobuf.Timestamp at = 9;
  google.protobuf.StringValue note = 10;
  oneof pick { string a = 11; int64 b = 12; }
  repeated int32 counts = 13;
  old.Legacy legacy = 14;
}

service Svc { rpc Call(Req) returns (Point); }
"#;

/// A proto2 file, for a group.
pub const OLD: &str = r#"syntax = "proto2";
package old;
message Legacy {
  optional group Item = 1 { optional string text = 2; }
  optional string id = 3;
}
"#;

/// The compiled schema, compiled once: descriptors compare equal only within one pool.
pub fn pool() -> DescriptorPool {
    static POOL: std::sync::OnceLock<DescriptorPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("req.proto"), REQ).unwrap();
        std::fs::write(dir.path().join("old.proto"), OLD).unwrap();
        super::schema::compile(&[dir.path().join("req.proto")], &[]).unwrap()
    })
    .clone()
}

/// A message type of the schema.
pub fn message(name: &str) -> MessageDescriptor {
    pool().get_message_by_name(name).unwrap()
}
