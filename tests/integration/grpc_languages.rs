//! Issue 40: `strain grpc` against gRPC servers written with other languages' gRPC libraries,
//! beside grpc-go (grpc.rs): Python's grpcio (tests/servers/python-grpc/route_guide.py) and
//! Node's @grpc/grpc-js (tests/servers/node/grpc-route-guide.js). Each serves grpc-go's
//! RouteGuide from route_guide.proto as grpc-go ships it (edition 2023), with its library's own
//! reflection: grpcio-reflection speaks v1alpha only, @grpc/reflection v1 and v1alpha and
//! describes the schema from protobufjs' reading of it. Unary, server-streaming,
//! client-streaming and bidi calls, by reflection alone and through `--proto`: strain's count of
//! OK calls and messages each way equals the server's own; and so it does when grpcio gzips its
//! replies.
//!
//! The servers count in their library's interceptors and answer `GET /counts` on an admin port
//! in grpc-go's test server's shape, so grpc_servers.rs's readers apply. scripts/test.sh
//! installs both libraries (STRAIN_TEST_PY_GRPC is the venv's Python, NODE_PATH holds the npm
//! packages of tests/servers/node/package.json).

use std::path::Path;
use std::process::Command;

use crate::grpc_servers::{count, method, protos_dir, GoGrpc};
use crate::harness::{args, strain, Run};

const GET_FEATURE: &str = "/routeguide.RouteGuide/GetFeature";
const LIST_FEATURES: &str = "/routeguide.RouteGuide/ListFeatures";
const RECORD_ROUTE: &str = "/routeguide.RouteGuide/RecordRoute";
const ROUTE_CHAT: &str = "/routeguide.RouteGuide/RouteChat";
const REFLECTION_V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const REFLECTION_V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Library {
    /// Python's grpcio.
    Grpcio,
    /// Node's @grpc/grpc-js.
    GrpcJs,
}

/// A route guide server in another language, counting as grpc-servers does.
struct Server;

impl Server {
    /// Starts `library`'s server on the editions route_guide.proto, with extra flags.
    fn start(library: Library, extra: &[&str]) -> GoGrpc {
        let root = env!("CARGO_MANIFEST_DIR");
        let proto = protos_dir().join("route_guide.proto");
        let mut command = match library {
            Library::Grpcio => {
                let python = std::env::var("STRAIN_TEST_PY_GRPC").ok().filter(|p| Path::new(p).exists());
                let python = python.unwrap_or_else(|| {
                    panic!(
                        "STRAIN_TEST_PY_GRPC does not name the venv's Python: run scripts/test.sh (it installs grpcio)"
                    )
                });
                let mut c = Command::new(python);
                c.arg(format!("{root}/tests/servers/python-grpc/route_guide.py"));
                c
            }
            Library::GrpcJs => {
                let modules = std::env::var("NODE_PATH").ok().filter(|p| Path::new(p).join("@grpc/grpc-js").exists());
                let modules = modules.unwrap_or_else(|| {
                    panic!(
                        "NODE_PATH does not hold @grpc/grpc-js: run scripts/test.sh (it installs it into target/node)"
                    )
                });
                let mut c = Command::new("node");
                c.arg(format!("{root}/tests/servers/node/grpc-route-guide.js")).env("NODE_PATH", modules);
                c
            }
        };
        command.arg("--proto").arg(&proto).args(extra);
        GoGrpc::spawn(command, &format!("{library:?}'s server"))
    }
}

/// What one run should have done: its calls, all OK, and the messages strain sent and received.
struct Want {
    calls: u64,
    sent: u64,
    received: u64,
}

/// Asserts strain's counts of `run` equal the server's own for `full_method`, and both equal
/// `want`: every call OK on both sides, strain's messages sent the server's received and the
/// other way round. Then zeroes the server's counts for the next run.
fn assert_agree(run: &Run, server: &GoGrpc, full_method: &str, want: Want) {
    assert_eq!(run.code, 0, "{full_method}: {}\n{}", run.stdout, run.stderr);
    let json = run.json.as_ref().unwrap();
    let counts = server.counts();
    let figures = method(&counts, full_method);
    let strain_saw = (run.num("/grpc/codes/ok"), run.num("/grpc/messages_sent"), run.num("/grpc/messages_received"));
    let server_saw = (count(figures, "/codes/OK"), count(figures, "/received"), count(figures, "/sent"));
    assert_eq!(
        strain_saw, server_saw,
        "{full_method}: strain's (OK, sent, received) vs the server's\n{json}\n{counts}"
    );
    assert_eq!(strain_saw, (want.calls, want.sent, want.received), "{full_method}: {json}");
    assert_eq!(count(figures, "/calls"), want.calls, "{full_method}: {counts}");
    // No other status on either side, and no call strain did not make.
    assert_eq!(json["grpc"]["codes"].as_object().map(|c| c.len()), Some(1), "{json}");
    assert_eq!(count(&counts, "/calls"), want.calls, "{counts}");
    assert_eq!(counts["codes"].as_object().map(|c| c.len()), Some(1), "{counts}");
    server.reset();
}

/// The four kinds of call against `library`'s server, the schema by reflection or from the
/// editions `.proto` (`proto`), each compared with what the server counted.
fn every_kind_of_call(library: Library, proto: bool) {
    let mut server = Server::start(library, &[]);
    let target = server.url();
    let route_guide = protos_dir().join("route_guide.proto").display().to_string();
    let run = |call: &str, data: &str, line: &str| {
        let mut a = vec!["grpc", "--call", call, "-D", data];
        if proto {
            a.extend(["--proto", &route_guide]);
        }
        a.extend(args(line));
        a.push(&target);
        strain(&a)
    };
    let point = r#"{"latitude": 3, "longitude": 4}"#;
    let unary = run("routeguide.RouteGuide/GetFeature", point, "-n 200 -c 2");
    // Before the first reset: how strain read the schema.
    let reflected = server.counts()["reflection"].clone();
    if proto {
        assert_eq!(count(&reflected, "/calls"), 0, "--proto needs no reflection: {reflected}");
    } else {
        // grpcio-reflection serves v1alpha alone: strain falls back to it.
        let version = if library == Library::Grpcio { REFLECTION_V1ALPHA } else { REFLECTION_V1 };
        assert!(count(method(&reflected, version), "/calls") > 0, "{library:?}: {reflected}");
        assert_eq!(count(&reflected, "/codes/OK"), count(&reflected, "/calls"), "{reflected}");
    }
    assert_agree(&unary, &server, GET_FEATURE, Want { calls: 200, sent: 200, received: 200 });

    // Rows 0..=2 and columns 0..=2 of the servers' 10 by 10 grid, as in grpc.rs.
    let rect = r#"{"lo": {"latitude": 400000000, "longitude": -750000000}, "hi": {"latitude": 402000000, "longitude": -748000000}}"#;
    let listed = run("routeguide.RouteGuide/ListFeatures", rect, "-n 20 -c 2");
    assert_agree(&listed, &server, LIST_FEATURES, Want { calls: 20, sent: 20, received: 20 * 9 });

    let recorded = run("routeguide.RouteGuide/RecordRoute", point, "--stream-messages 5 -n 20 -c 2");
    assert_agree(&recorded, &server, RECORD_ROUTE, Want { calls: 20, sent: 100, received: 20 });

    let note = r#"{"location": {"latitude": 1, "longitude": 2}, "message": "hi"}"#;
    let chat = run("routeguide.RouteGuide/RouteChat", note, "--stream-messages 3 -n 10 -c 2");
    assert_agree(&chat, &server, ROUTE_CHAT, Want { calls: 10, sent: 30, received: 30 });

    server.hang_up();
    assert_eq!(server.stderr_text(), "", "{library:?}");
}

#[test]
fn python_grpcio_every_kind_of_call_by_reflection() {
    every_kind_of_call(Library::Grpcio, false);
}

#[test]
fn python_grpcio_every_kind_of_call_through_the_editions_proto() {
    every_kind_of_call(Library::Grpcio, true);
}

#[test]
fn node_grpc_js_every_kind_of_call_by_reflection() {
    every_kind_of_call(Library::GrpcJs, false);
}

#[test]
fn node_grpc_js_every_kind_of_call_through_the_editions_proto() {
    every_kind_of_call(Library::GrpcJs, true);
}

/// RouteChat against grpcio serving with gzip as its default (`--compress-replies`), the schema
/// by reflection or from the `.proto`: each note is long enough that grpcio compresses its
/// answer (it sends a message uncompressed when gzip would not make it smaller), and strain
/// inflates, checks and counts every answer as the server counted it.
fn gzipped_replies(proto: bool) {
    let server = Server::start(Library::Grpcio, &["--compress-replies"]);
    let target = server.url();
    let route_guide = protos_dir().join("route_guide.proto").display().to_string();
    let note = format!(r#"{{"location": {{"latitude": 1, "longitude": 2}}, "message": "{}"}}"#, "a".repeat(1000));
    // --compress gzip offers gzip for the replies (and compresses the requests).
    let mut a = vec!["grpc", "--call", "routeguide.RouteGuide/RouteChat", "-D", &note, "--check", "--compress", "gzip"];
    if proto {
        a.extend(["--proto", &route_guide]);
    }
    a.extend(args("--stream-messages 4 -n 40 -c 4"));
    a.push(&target);
    let chat = strain(&a);
    assert_agree(&chat, &server, ROUTE_CHAT, Want { calls: 40, sent: 160, received: 160 });
    chat.assert_nums(&[("/grpc/bad_messages", 0)]);
}

#[test]
fn python_grpcio_gzipped_replies_through_the_editions_proto() {
    gzipped_replies(true);
}

#[test]
fn python_grpcio_gzipped_replies_by_reflection() {
    // grpcio gzips its reflection answers too, even unasked: strain reads them.
    gzipped_replies(false);
}
