//! Issue 32: `strain origin --grpc` against a gRPC client that is not strain's: Python's grpcio
//! (tests/servers/python-grpc/client.py, in the venv scripts/test.sh makes and names in
//! STRAIN_TEST_PY_GRPC). Each of the four echo methods with exact message counts, reflection
//! through grpcio-reflection's client (v1alpha) and on v1's path, UNIMPLEMENTED without
//! reflection and for unknown methods, shares of failed calls, the delay in latency, TLS, and
//! the origin's own counts against what the client saw. The flags' misuses are refused.

use std::net::SocketAddr;
use std::path::Path;

use serde_json::{json, Value};

use crate::harness::{run_program, self_signed, strain_raw, Origin};
use crate::proxies::http_get;

/// The venv's Python, which has grpcio, grpcio-reflection and grpcio-tools.
fn python() -> String {
    let set = std::env::var("STRAIN_TEST_PY_GRPC").ok().filter(|p| Path::new(p).exists());
    set.unwrap_or_else(|| {
        panic!("STRAIN_TEST_PY_GRPC does not name a Python with grpcio: run scripts/test.sh (it makes target/grpc-venv and sets it)")
    })
}

/// Runs the client against `target` with `args`; its JSON.
fn client(target: &str, args: &[&str]) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/python-grpc/client.py");
    let run = run_program(&python(), &[&[script, target], args].concat());
    assert_eq!(run.code, 0, "client.py {args:?}: {}\n{}", run.stdout, run.stderr);
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// The origin's counters, from `/_strain/stats` (over HTTP/1.1, which `--grpc` still answers).
pub fn stats(addr: SocketAddr) -> Value {
    let page = http_get(addr, "/_strain/stats").expect("the stats page");
    let body = page.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {page}"))
}

/// A `--grpc` origin with `extra` flags, and its host:port.
fn grpc_origin(extra: &[&str]) -> (Origin, String) {
    let origin = Origin::start(&[&["--grpc"], extra].concat());
    let target = origin.addr.to_string();
    (origin, target)
}

/// The statuses the origin counted that are not zero.
pub fn statuses(stats: &Value) -> Value {
    let all = stats["grpc"]["statuses"].as_object().expect("statuses");
    Value::Object(all.iter().filter(|(_, n)| n.as_u64() != Some(0)).map(|(k, v)| (k.clone(), v.clone())).collect())
}

#[test]
fn each_method_echoes_with_exact_counts_and_the_origin_counts_the_same() {
    let (origin, target) = grpc_origin(&["-t", "2"]);
    let got = client(&target, &["methods", "--count", "7", "--messages", "5", "--reply-size", "1000"]);
    for method in ["unary", "server_stream", "client_stream", "bidi"] {
        assert_eq!(got[method]["status"], "OK", "{method}: {got}");
        let replies = got[method]["replies"].as_array().unwrap();
        assert!(replies.iter().all(|r| r["payload_len"] == 1000), "{method}: {got}");
    }
    let sequences = |method: &str| -> Vec<u64> {
        got[method]["replies"].as_array().unwrap().iter().map(|r| r["sequence"].as_u64().unwrap()).collect()
    };
    assert_eq!(sequences("unary"), [0]);
    assert_eq!(sequences("server_stream"), (0..7).collect::<Vec<_>>());
    assert_eq!(sequences("client_stream"), [0]);
    assert_eq!(sequences("bidi"), (0..5).collect::<Vec<_>>());
    assert_eq!(got["client_stream"]["replies"][0]["received"], 5);
    assert_eq!(got["client_stream"]["replies"][0]["message"], "c4");
    assert_eq!(got["bidi"]["replies"][4]["received"], 5);

    let s = stats(origin.addr);
    let calls = json!({"unary": 1, "server_stream": 1, "client_stream": 1, "bidi": 1, "reflection": 0, "unknown": 0});
    assert_eq!(s["grpc"]["calls"], calls);
    assert_eq!(statuses(&s), json!({"OK": 4}));
    // Requests: 1 + 1 + 5 + 5; replies: 1 + 7 + 1 + 5, as the client counted them.
    assert_eq!((s["grpc"]["messages_received"].as_u64(), s["grpc"]["messages_sent"].as_u64()), (Some(12), Some(14)));
    let sent: usize = ["unary", "server_stream", "client_stream", "bidi"]
        .iter()
        .map(|m| got[m]["replies"].as_array().unwrap().len())
        .sum();
    assert_eq!(sent, 14);
    assert_eq!(origin.stop().requests, 4);
}

#[test]
fn reflection_lists_the_services_and_finds_echo_proto_on_v1_and_v1alpha() {
    let (_origin, target) = grpc_origin(&["-t", "1"]);
    let got = client(&target, &["reflect"]);
    let services = json!([
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "strain.echo.v1.Echo"
    ]);
    let alpha = &got["v1alpha"];
    assert_eq!(alpha["services"], services);
    for symbol in ["strain.echo.v1.Echo", "strain.echo.v1.Echo.Bidi", "strain.echo.v1.EchoRequest"] {
        assert_eq!(alpha["files"][symbol], "echo.proto", "{got}");
    }
    let streaming: Vec<(String, bool, bool)> = alpha["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m[0].as_str().unwrap().to_string(), m[1].as_bool().unwrap(), m[2].as_bool().unwrap()))
        .collect();
    let want =
        [("Unary", false, false), ("ServerStream", false, true), ("ClientStream", true, false), ("Bidi", true, true)];
    assert_eq!(streaming, want.map(|(n, c, s)| (n.to_string(), c, s)));
    assert_eq!(alpha["unknown"], "KeyError");
    assert_eq!(
        got["v1"],
        json!({"services": services, "file_of_symbol": "echo.proto", "file_by_name": "echo.proto", "unknown_error_code": 5})
    );
}

#[test]
fn without_reflection_and_for_unknown_methods_calls_are_unimplemented() {
    let (origin, target) = grpc_origin(&["-t", "1", "--no-reflection"]);
    for path in [
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        "/strain.echo.v1.Echo/Nope",
        "/other.Service/Unary",
    ] {
        let got = client(&target, &["call", path]);
        assert_eq!(got["status"], "UNIMPLEMENTED", "{path}: {got}");
    }
    let s = stats(origin.addr);
    assert_eq!(s["grpc"]["calls"]["unknown"], 4);
    assert_eq!(statuses(&s), json!({"UNIMPLEMENTED": 4}));
}

#[test]
fn status_shares_fail_exactly_their_share_of_calls() {
    let (origin, target) =
        grpc_origin(&["-t", "1", "--seed", "7", "--status", "5:0.1", "--status", "UNAVAILABLE:0.05"]);
    // Two whole decks of 100 on the one thread: exact counts.
    let got = client(&target, &["unary", "200"]);
    assert_eq!(got["statuses"], json!({"OK": 170, "NOT_FOUND": 20, "UNAVAILABLE": 10}));
    let s = stats(origin.addr);
    assert_eq!(statuses(&s), got["statuses"]);
    assert_eq!(s["grpc"]["calls"]["unary"], 200);
    // A failed call gets no reply.
    assert_eq!(s["grpc"]["messages_sent"], 170);
}

#[test]
fn the_delay_holds_each_reply() {
    let (_origin, target) = grpc_origin(&["-t", "1", "--delay", "80ms"]);
    let got = client(&target, &["unary", "5"]);
    let (min, max) = (got["latency_ms"]["min"].as_f64().unwrap(), got["latency_ms"]["max"].as_f64().unwrap());
    assert!(min >= 80.0 && max < 80.0 + 500.0, "{got}");
    let (_origin, target) = grpc_origin(&["-t", "1"]);
    let got = client(&target, &["unary", "5"]);
    assert!(got["latency_ms"]["max"].as_f64().unwrap() < 80.0, "without a delay: {got}");
}

#[test]
fn grpc_is_served_over_tls_too() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
    let (origin, target) = grpc_origin(&["-t", "1", "--tls", "--cert", &cert, "--key", &key]);
    assert!(origin.url().starts_with("https://"), "{}", origin.url());
    let got = client(&target, &["--tls-ca", &cert, "methods"]);
    for method in ["unary", "server_stream", "client_stream", "bidi"] {
        assert_eq!(got[method]["status"], "OK", "{method}: {got}");
    }
    assert_eq!(got["server_stream"]["replies"].as_array().unwrap().len(), 10, "count 0 means 10");
    let served = origin.stop();
    assert_eq!(served.requests, 4);
}

#[test]
fn the_grpc_flags_misused_are_refused() {
    let rows: [(&[&str], &str); 7] = [
        (&["--status", "5:0.1"], "needs --grpc"),
        (&["--no-reflection"], "--grpc"),
        (&["--grpc", "--status", "503"], "CODE:SHARE"),
        (&["--grpc", "--status", "OK:0.1"], "OK"),
        (&["--grpc", "--status", "5:0.6", "--status", "14:0.6"], "above 1"),
        (&["--grpc", "--status", "5:0.1", "--status", "NOT_FOUND:0.1"], "twice"),
        (&["--grpc", "--body-size", "10"], "--body-size"),
    ];
    for (flags, says) in rows {
        let run = strain_raw(&[&["origin", "--listen", "127.0.0.1:0"], flags].concat());
        assert_eq!(run.code, 2, "{flags:?}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains(says), "{flags:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{flags:?}: {}", run.stdout);
    }
}
