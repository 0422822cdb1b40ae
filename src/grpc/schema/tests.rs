use std::path::PathBuf;

use prost::Message as _;

use super::*;

/// A schema with every streaming kind, a local import and a well-known type.
const GEO: &str = r#"syntax = "proto3";
package geo;
import "google/protobuf/empty.proto";
import "common/point.proto";

service Atlas {
  rpc Locate(common.Point) returns (Place);
  rpc Trace(common.Point) returns (stream Place);
  rpc Upload(stream common.Point) returns (google.protobuf.Empty);
  rpc Chat(stream Place) returns (stream Place);
}

message Place {
  string name = 1;
  common.Point at = 2;
}
"#;

const POINT: &str = r#"syntax = "proto3";
package common;
message Point {
  int32 latitude = 1;
  int32 longitude = 2;
}
"#;

/// Writes `files` (relative name, text) under a fresh directory.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn geo_pool() -> DescriptorPool {
    let dir = tree(&[("geo.proto", GEO), ("common/point.proto", POINT)]);
    compile(&[dir.path().join("geo.proto")], &[]).unwrap()
}

#[test]
fn a_compiled_proto_gives_each_method_its_path_types_and_kind() {
    let pool = geo_pool();
    assert_eq!(services(&pool), ["geo.Atlas"]);
    let table = [
        ("geo.Atlas/Locate", "/geo.Atlas/Locate", "common.Point", "geo.Place", MethodKind::Unary),
        ("geo.Atlas.Trace", "/geo.Atlas/Trace", "common.Point", "geo.Place", MethodKind::ServerStreaming),
        (
            "/geo.Atlas/Upload",
            "/geo.Atlas/Upload",
            "common.Point",
            "google.protobuf.Empty",
            MethodKind::ClientStreaming,
        ),
        ("geo.Atlas/Chat", "/geo.Atlas/Chat", "geo.Place", "geo.Place", MethodKind::Bidi),
    ];
    for (call, path, input, output, kind) in table {
        let m = find_method(&pool, call).unwrap();
        assert_eq!(
            (m.path.as_str(), m.input.full_name(), m.output.full_name(), m.kind),
            (path, input, output, kind),
            "{call}"
        );
    }
}

#[test]
fn import_paths_come_first_and_a_relative_proto_works_alone() {
    let dir = tree(&[("protos/geo.proto", GEO), ("shared/common/point.proto", POINT)]);
    let pool = compile(&[dir.path().join("protos/geo.proto")], &[dir.path().join("shared")]).unwrap();
    assert!(find_method(&pool, "geo.Atlas/Locate").is_ok());
    // grpcurl's way: the proto named below an import path.
    let paths = [dir.path().join("protos"), dir.path().join("shared")];
    let pool = compile(&[PathBuf::from("geo.proto")], &paths).unwrap();
    assert!(find_method(&pool, "geo.Atlas/Locate").is_ok());
    let err = compile(&[dir.path().join("protos/geo.proto")], &[]).unwrap_err();
    assert_eq!(err.to_string(), "geo.proto:4:1: import 'common/point.proto' not found");
}

#[test]
fn a_proto_that_does_not_compile_names_its_file_line_and_column() {
    let table: [(&str, &str); 3] = [
        // A syntax error (the parser's span).
        ("syntax = \"proto3\";\nmessage A {\n  int32 x = 1\n}\n", "bad.proto:4:1: expected ';' or '[', but found '}'"),
        // A type that does not exist (the checker's span).
        (
            "syntax = \"proto3\";\npackage p;\nmessage A {\n    Missing m = 1;\n}\n",
            "bad.proto:4:5: name 'Missing' is not defined",
        ),
        // Two fields with one number.
        (
            "syntax = \"proto3\";\nmessage A {\n  int32 x = 1;\n  int32 y = 1;\n}\n",
            "bad.proto:4:13: field number '1' is already used",
        ),
    ];
    for (text, want) in table {
        let dir = tree(&[("bad.proto", text)]);
        let err = compile(&[dir.path().join("bad.proto")], &[]).unwrap_err();
        assert_eq!(err.to_string(), want);
    }
    assert_eq!(
        compile(&[PathBuf::from("/nonexistent/x.proto")], &[]).unwrap_err().to_string(),
        "--proto /nonexistent/x.proto: cannot read it: No such file or directory (os error 2)"
    );
}

/// The pool's files as a protoset, only those `keep` accepts.
fn protoset(pool: &DescriptorPool, keep: impl Fn(&str) -> bool) -> Vec<u8> {
    let file = pool.files().filter(|f| keep(f.name())).map(|f| f.file_descriptor_proto().clone()).collect();
    prost_reflect::prost_types::FileDescriptorSet { file }.encode_to_vec()
}

#[test]
fn a_protoset_round_trips_and_may_leave_out_the_well_known_types() {
    let pool = geo_pool();
    let dir = tempfile::tempdir().unwrap();
    for (name, keep) in
        [("all.pb", &(|_: &str| true) as &dyn Fn(&str) -> bool), ("own.pb", &|n| !n.starts_with("google/"))]
    {
        let path = dir.path().join(name);
        std::fs::write(&path, protoset(&pool, keep)).unwrap();
        let back = from_protoset(&path).unwrap();
        let m = find_method(&back, "geo.Atlas/Upload").unwrap();
        assert_eq!(m.output.full_name(), "google.protobuf.Empty", "{name}");
        assert_eq!(m.input.fields().map(|f| f.name().to_string()).collect::<Vec<_>>(), ["latitude", "longitude"]);
    }
}

#[test]
fn a_bad_protoset_says_why_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pb");
    let err = from_protoset(&missing).unwrap_err().to_string();
    assert!(err.starts_with(&format!("--protoset {}: cannot read it: ", missing.display())), "{err}");
    let junk = dir.path().join("junk.pb");
    std::fs::write(&junk, b"syntax = \"proto3\";\n").unwrap();
    let err = from_protoset(&junk).unwrap_err().to_string();
    assert!(err.starts_with(&format!("--protoset {}: not a binary FileDescriptorSet (", junk.display())), "{err}");
    assert!(!err.contains('\n'), "{err}");
    let empty = dir.path().join("empty.pb");
    std::fs::write(&empty, b"").unwrap();
    assert_eq!(
        from_protoset(&empty).unwrap_err().to_string(),
        format!("--protoset {}: not a binary FileDescriptorSet (it holds no files)", empty.display())
    );
    // Without the file it imports (and that is no well-known type).
    let own = dir.path().join("own.pb");
    std::fs::write(&own, protoset(&geo_pool(), |n| n == "geo.proto")).unwrap();
    assert_eq!(
        from_protoset(&own).unwrap_err().to_string(),
        format!("--protoset {}: geo.proto imports common/point.proto, which is missing", own.display())
    );
}

/// Each file of the pool serialized, as a reflection answer carries it.
fn serialized(pool: &DescriptorPool) -> Vec<Vec<u8>> {
    pool.files().map(|f| f.file_descriptor_proto().encode_to_vec()).collect()
}

#[test]
fn reflection_files_come_in_any_order_with_repeats() {
    let mut files = serialized(&geo_pool());
    files.reverse();
    let again = files.clone();
    files.extend(again);
    let pool = from_files(&files, "the server's answers").unwrap();
    assert_eq!(services(&pool), ["geo.Atlas"]);
    assert_eq!(find_method(&pool, "geo.Atlas/Chat").unwrap().kind, MethodKind::Bidi);
    // Without google/protobuf/empty.proto: the built-in copy stands in.
    let own: Vec<Vec<u8>> = serialized(&geo_pool()).into_iter().rev().take(2).collect();
    assert_eq!(own.len(), 2);
    let pool = from_files(&own, "the server's answers").unwrap();
    assert_eq!(find_method(&pool, "geo.Atlas/Upload").unwrap().output.full_name(), "google.protobuf.Empty");
    assert_eq!(
        from_files(&[b"\xff\xff".to_vec()], "the server's answers").unwrap_err().to_string(),
        "the server's answers: file 1 is not a FileDescriptorProto (failed to decode Protobuf message: invalid varint)"
    );
}

#[test]
fn an_unknown_service_or_method_lists_what_there_is() {
    let pool = geo_pool();
    let err = |call| find_method(&pool, call).unwrap_err().to_string();
    assert_eq!(err("geo.Atlass/Locate"), "no service \"geo.Atlass\" in the schema; it has: geo.Atlas");
    assert_eq!(err("geo.Atlas/Find"), "service geo.Atlas has no method \"Find\"; it has: Locate, Trace, Upload, Chat");
    assert_eq!(err("Locate"), "--call \"Locate\": expected the method as PKG.Service/Method");
    let empty = DescriptorPool::new();
    assert_eq!(find_method(&empty, "a.B/C").unwrap_err().to_string(), "no service \"a.B\" in the schema; it has none");
}

#[test]
fn calls_split_at_the_last_slash_or_dot() {
    let table: [(&str, Option<(&str, &str)>); 9] = [
        ("pkg.Svc/M", Some(("pkg.Svc", "M"))),
        ("pkg.Svc.M", Some(("pkg.Svc", "M"))),
        ("/pkg.Svc/M", Some(("pkg.Svc", "M"))),
        ("a.b.Svc/M", Some(("a.b.Svc", "M"))),
        ("Svc/M", Some(("Svc", "M"))),
        // Nothing on one side, or a slash inside the service.
        ("pkg.Svc/", None),
        ("/M", None),
        ("a/b/M", None),
        ("M", None),
    ];
    for (call, want) in table {
        assert_eq!(split_call(call).ok(), want, "{call}");
    }
}
