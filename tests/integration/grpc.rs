//! `strain grpc` against grpc-go's own servers (grpc_servers.rs): strain's counts of calls,
//! statuses and messages each way equal what grpc-go saw, for unary and every streaming kind,
//! over h2c and TLS, paced with corrected latency through a stall; and bad input is one line,
//! exit 2, with nothing sent.
//!
//! The schema is the examples' files as grpc-go ships them (route_guide.proto in edition 2023),
//! through `--proto`, `--protoset` and reflection (v1, and v1alpha alone as older servers have).

use crate::grpc_servers::{count, method, protos_dir, protoset, GoGrpc};
use crate::harness::{args, exclusive, schema, strain, strain_raw, temp_file, Run};

const SAY_HELLO: &str = "/helloworld.Greeter/SayHello";
const ROUTE_CHAT: &str = "/routeguide.RouteGuide/RouteChat";
const RECORD_ROUTE: &str = "/routeguide.RouteGuide/RecordRoute";
const LIST_FEATURES: &str = "/routeguide.RouteGuide/ListFeatures";

/// The file that declares `call`'s service, as grpc-go ships it.
fn proto_of(call: &str) -> String {
    let file = if call.starts_with("helloworld.") { "helloworld.proto" } else { "route_guide.proto" };
    protos_dir().join(file).display().to_string()
}

/// The URL strain loads `server` at: h2c, or TLS when the server was started `-self-signed`.
fn url(server: &GoGrpc, tls: bool) -> String {
    format!("{}://{}", if tls { "https" } else { "http" }, server.addr)
}

/// `strain grpc --call CALL --proto FILE -D DATA` plus the flags in `line`, against `url`. The
/// message is one argument of its own so that JSON may hold spaces.
fn call_at(url: &str, call: &str, data: &str, line: &str) -> Run {
    let proto = proto_of(call);
    let mut a = vec!["grpc", "--call", call, "--proto", &proto, "-D", data];
    a.extend(args(line));
    a.push(url);
    strain(&a)
}

/// [`call_at`] over h2c, expecting exit 0.
fn call(server: &GoGrpc, call: &str, data: &str, line: &str) -> Run {
    let run = call_at(&url(server, false), call, data, line);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

/// Asserts the server's figures for `full_method` at the pointers of `want` (as for
/// [`count`]), once its calls have ended, all named in one failure.
fn assert_served(server: &GoGrpc, full_method: &str, want: &[(&str, u64)]) {
    let counts = server.counts();
    let figures = method(&counts, full_method);
    let got: Vec<(&str, u64)> = want.iter().map(|&(pointer, _)| (pointer, count(figures, pointer))).collect();
    assert_eq!(got, want, "{full_method}: {counts}");
}

/// Asserts the JSON result follows the published schema (the `grpc` section included).
fn assert_schema(run: &Run) {
    let json = run.json.as_ref().unwrap();
    let errors: Vec<String> = schema().iter_errors(json).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:?}\n{json:#}");
}

#[test]
fn unary_counts_equal_the_servers() {
    let server = GoGrpc::start(&[]);
    let run = call(&server, "helloworld.Greeter/SayHello", r#"{"name":"x"}"#, "-n 2000 -c 10");
    // A 3-byte request (field 1, length 1, "x") and a 9-byte reply ("Hello x") each call.
    run.assert_nums(&[
        ("/requests", 2000),
        ("/sent", 2000),
        ("/grpc/codes/ok", 2000),
        ("/grpc/messages_sent", 2000),
        ("/grpc/messages_received", 2000),
        ("/grpc/message_bytes_sent", 2000 * 3),
        ("/grpc/message_bytes_received", 2000 * 9),
        ("/grpc/http_errors", 0),
        ("/grpc/missing_status", 0),
        ("/grpc/bad_messages", 0),
    ]);
    assert_served(&server, SAY_HELLO, &[("/calls", 2000), ("/codes/OK", 2000), ("/received", 2000), ("/sent", 2000)]);
    assert_eq!(count(&server.counts(), "/connections"), 10, "one connection per -c");
    assert!(run.stdout.contains("gRPC status: OK 2000; messages 2000 sent"), "{}", run.stdout);
    assert!(!run.stdout.contains("Non-OK calls"), "{}", run.stdout);
}

#[test]
fn statuses_are_counted_exactly() {
    let server = GoGrpc::start(&[]);
    // The array goes round-robin over the whole run, across both threads: each name exactly
    // a quarter of the calls. `status:` names are answered Trailers-Only.
    let data = r#"[{"name":"a"},{"name":"status:5"},{"name":"status:UNAVAILABLE"},{"name":"b"}]"#;
    let run = call(&server, "helloworld.Greeter/SayHello", data, "-n 400 -t 2 -c 4");
    run.assert_nums(&[
        ("/requests", 400),
        ("/grpc/codes/ok", 200),
        ("/grpc/codes/not_found", 100),
        ("/grpc/codes/unavailable", 100),
        ("/grpc/messages_sent", 400),
        // Trailers-Only answers carry no message.
        ("/grpc/messages_received", 200),
        // Non-OK calls are the run's status errors.
        ("/errors/status", 200),
    ]);
    let codes = run.json.as_ref().unwrap()["grpc"]["codes"].as_object().unwrap().len();
    assert_eq!(codes, 3, "only the codes seen are listed: {}", run.stdout);
    assert_served(
        &server,
        SAY_HELLO,
        &[("/calls", 400), ("/codes/OK", 200), ("/codes/NotFound", 100), ("/codes/Unavailable", 100)],
    );
    assert!(run.stdout.contains("gRPC status: OK 200, NOT_FOUND 100, UNAVAILABLE 100;"), "{}", run.stdout);
    assert!(run.stdout.contains("Non-OK calls: 200"), "{}", run.stdout);
    assert_schema(&run);

    // Non-OK calls alone do not fail the run (exit 0 above); an error threshold judges them
    // like any other error: 200 of 400 fails `errors<10` (exit 99) and passes `errors<=50%`.
    let failed =
        call_at(&url(&server, false), "helloworld.Greeter/SayHello", data, "-n 400 -t 2 -c 4 --threshold errors<10");
    assert_eq!(failed.code, 99, "{}\n{}", failed.stdout, failed.stderr);
    let passed = call(&server, "helloworld.Greeter/SayHello", data, "-n 400 -t 2 -c 4 --threshold errors<=50%");
    assert_eq!(passed.num("/grpc/codes/ok"), 200);
}

#[test]
fn a_rate_is_held_through_a_stall_with_corrected_latency() {
    let _alone = exclusive();
    // The 201st call opens a 500 ms window in which every call waits for its end.
    let server = GoGrpc::start(&["-stall-after", "200", "-stall-for", "500ms"]);
    let run = call(&server, "helloworld.Greeter/SayHello", r#"{"name":"x"}"#, "-R 400 -d 3s -c 20");
    let j = run.json.as_ref().unwrap();
    let sent = run.num("/rate/sent");
    assert!((1176..=1200).contains(&sent), "{sent} of 1200 planned (2%)\n{}", run.stdout);
    assert_eq!(j["rate"]["target_per_s"], 400.0);
    // The window's 200 calls were due while all 20 connections waited in it: counted from
    // their due times they show the stall (up to ~500 ms, a sixth of the calls, so p90 too),
    // while counted from when they went out only the 20 stalled ones are slow.
    let corrected_max = run.num("/latency_us/max");
    let corrected_p90 = run.num("/latency_us/percentiles/90");
    let uncorrected_p50 = run.num("/uncorrected_latency_us/percentiles/50");
    let uncorrected_p90 = run.num("/uncorrected_latency_us/percentiles/90");
    assert!(corrected_max >= 450_000, "corrected max {corrected_max} us\n{}", run.stdout);
    assert!(corrected_p90 >= 100_000, "corrected p90 {corrected_p90} us\n{}", run.stdout);
    assert!(uncorrected_p50 < 50_000, "uncorrected p50 {uncorrected_p50} us\n{}", run.stdout);
    assert!(uncorrected_p90 < 50_000, "uncorrected p90 {uncorrected_p90} us\n{}", run.stdout);
    let requests = run.num("/requests");
    assert_eq!(run.num("/grpc/codes/ok"), requests, "{}", run.stdout);
    assert_served(&server, SAY_HELLO, &[("/calls", requests), ("/codes/OK", requests), ("/received", requests)]);
}

#[test]
fn bidi_messages_are_counted_exactly() {
    let server = GoGrpc::start(&[]);
    // 10 calls of 20 notes at 200 a second each, two at a time: about half a second. RouteChat
    // answers each note with one, so each way carries 200 messages; `requests` counts replies.
    let note = r#"{"location":{"latitude":1,"longitude":2},"message":"hi"}"#;
    let line = "--stream-rate 200 --stream-messages 20 -n 10 -c 2";
    let run = call(&server, "routeguide.RouteGuide/RouteChat", note, line);
    run.assert_nums(&[
        ("/requests", 200),
        ("/grpc/codes/ok", 10),
        ("/grpc/messages_sent", 200),
        ("/grpc/messages_received", 200),
    ]);
    assert_served(&server, ROUTE_CHAT, &[("/calls", 10), ("/codes/OK", 10), ("/received", 200), ("/sent", 200)]);
    assert_schema(&run);
}

#[test]
fn client_streaming_messages_are_counted_exactly() {
    let server = GoGrpc::start(&[]);
    let point = r#"{"latitude":400000000,"longitude":-750000000}"#;
    let run = call(&server, "routeguide.RouteGuide/RecordRoute", point, "--stream-messages 5 -n 20 -c 2");
    // Five points up, one summary down, per call.
    run.assert_nums(&[
        ("/requests", 20),
        ("/grpc/codes/ok", 20),
        ("/grpc/messages_sent", 100),
        ("/grpc/messages_received", 20),
    ]);
    assert_served(&server, RECORD_ROUTE, &[("/calls", 20), ("/codes/OK", 20), ("/received", 100), ("/sent", 20)]);
}

/// How many of grpc-servers' `side`×`side` grid features lie in the rectangle, edges included:
/// the feature in row r, column c is at (400000000 + r·1000000, -750000000 + c·1000000)
/// (newRouteGuide in tests/servers/grpc-go/services.go).
fn features_within(side: i64, (lat_lo, lon_lo): (i64, i64), (lat_hi, lon_hi): (i64, i64)) -> u64 {
    let grid =
        (0..side).flat_map(|r| (0..side).map(move |c| (400_000_000 + r * 1_000_000, -750_000_000 + c * 1_000_000)));
    grid.filter(|&(lat, lon)| (lat_lo..=lat_hi).contains(&lat) && (lon_lo..=lon_hi).contains(&lon)).count() as u64
}

#[test]
fn server_streaming_messages_are_counted_exactly() {
    let server = GoGrpc::start(&["-grid", "10"]);
    let (lo, hi) = ((402_000_000, -749_000_000), (405_000_000, -747_000_000));
    let features = features_within(10, lo, hi);
    assert_eq!(features, 4 * 3, "rows 2..=5, columns 1..=3");
    let rect = format!(
        r#"{{"lo":{{"latitude":{},"longitude":{}}},"hi":{{"latitude":{},"longitude":{}}}}}"#,
        lo.0, lo.1, hi.0, hi.1
    );
    let run = call(&server, "routeguide.RouteGuide/ListFeatures", &rect, "-n 10 -c 2");
    // One rectangle up and its features down, per call; `requests` counts calls here.
    run.assert_nums(&[
        ("/requests", 10),
        ("/grpc/codes/ok", 10),
        ("/grpc/messages_sent", 10),
        ("/grpc/messages_received", 10 * features),
    ]);
    assert_served(
        &server,
        LIST_FEATURES,
        &[("/calls", 10), ("/codes/OK", 10), ("/received", 10), ("/sent", 10 * features)],
    );
}

#[test]
fn tls_with_a_self_signed_server() {
    let server = GoGrpc::start(&["-self-signed"]);
    let https = url(&server, true);
    let run = call_at(&https, "helloworld.Greeter/SayHello", r#"{"name":"x"}"#, "-n 500 -c 4 -k");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run.assert_nums(&[("/requests", 500), ("/grpc/codes/ok", 500), ("/grpc/messages_received", 500)]);
    assert_eq!(run.json.as_ref().unwrap()["http2"]["protocol"], "h2", "h2 by ALPN");
    assert_served(&server, SAY_HELLO, &[("/calls", 500), ("/codes/OK", 500)]);

    // Without -k the certificate is refused: every connect fails, the run fails (exit 1) and
    // says how to get past it; no call reached the server.
    server.reset();
    let refused = call_at(&https, "helloworld.Greeter/SayHello", r#"{"name":"x"}"#, "-n 5 -c 1 -t 1 -d 500ms");
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("--insecure"), "{}", refused.stderr);
    assert_eq!(count(&server.counts(), "/calls"), 0);
}

/// A RouteChat run of fixed shape with `schema` naming its schema (none: reflection).
fn route_chat_with(server: &GoGrpc, schema: &[&str]) -> Run {
    let note = r#"{"location":{"latitude":1,"longitude":2},"message":"hi"}"#;
    let mut a = vec!["grpc", "--call", "routeguide.RouteGuide/RouteChat", "-D", note];
    a.extend(schema);
    a.extend(args("--stream-messages 3 -n 10 -c 2"));
    let url = url(server, false);
    a.push(&url);
    let run = strain(&a);
    assert_eq!(run.code, 0, "{schema:?}: {}\n{}", run.stdout, run.stderr);
    run
}

#[test]
fn proto_and_protoset_give_the_same_run() {
    let server = GoGrpc::start(&[]);
    let proto = proto_of("routeguide.RouteGuide/RouteChat");
    let protoset = protoset().display().to_string();
    let from_proto = route_chat_with(&server, &["--proto", &proto]);
    let from_set = route_chat_with(&server, &["--protoset", &protoset]);
    // The same messages encoded the same way: every figure of the grpc section, byte counts
    // included, is equal.
    // The counts: the time to the first message is a measurement, not a count.
    let grpc = |run: &Run| {
        let mut g = run.json.as_ref().unwrap()["grpc"].clone();
        g.as_object_mut().unwrap().remove("first_message_us");
        g
    };
    assert_eq!(grpc(&from_proto), grpc(&from_set));
    from_proto.assert_nums(&[("/grpc/codes/ok", 10), ("/grpc/messages_sent", 30), ("/grpc/messages_received", 30)]);
    assert!(from_proto.num("/grpc/message_bytes_sent") > 0);
    assert_served(&server, ROUTE_CHAT, &[("/calls", 20), ("/received", 60), ("/sent", 60)]);
}

#[test]
fn reflection_gives_the_same_run_as_a_proto() {
    // Reflection in each version a server may speak: both (grpc-go's default), and v1alpha
    // alone, as older servers have. route_guide comes as grpc-go describes it: edition 2023.
    for versions in ["both", "v1alpha"] {
        let server = GoGrpc::start(&["-reflection", versions]);
        let proto = proto_of("routeguide.RouteGuide/RouteChat");
        let from_proto = route_chat_with(&server, &["--proto", &proto]);
        let from_reflection = route_chat_with(&server, &[]);
        // The counts: the time to the first message is a measurement, not a count.
        let grpc = |run: &Run| {
            let mut g = run.json.as_ref().unwrap()["grpc"].clone();
            g.as_object_mut().unwrap().remove("first_message_us");
            g
        };
        assert_eq!(grpc(&from_proto), grpc(&from_reflection), "{versions}");
        let counts = server.counts();
        assert!(count(&counts, "/reflection/calls") >= 1, "the schema came by reflection: {counts}");
        let asked = if versions == "v1alpha" {
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
        } else {
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
        };
        assert!(count(&counts["reflection"]["methods"][asked], "/calls") >= 1, "{versions}: {counts}");
        // Reflection's calls are apart: the service's figures are the load's alone.
        assert_served(&server, ROUTE_CHAT, &[("/calls", 20), ("/received", 60), ("/sent", 60)]);
    }

    // The brief's form: a unary method with no schema flag at all.
    let server = GoGrpc::start(&[]);
    let hello =
        strain_raw(&["grpc", "--call", "helloworld.Greeter/SayHello", "-n", "100", "-c", "2", &url(&server, false)]);
    assert_eq!(hello.code, 0, "{}\n{}", hello.stdout, hello.stderr);
    assert_served(&server, SAY_HELLO, &[("/calls", 100), ("/codes/OK", 100)]);
}

#[test]
fn every_kind_of_call_on_the_editions_route_guide_by_reflection() {
    // Issue 40: grpc-go's route_guide in edition 2023, its schema by reflection alone: unary,
    // server-streaming, client-streaming and bidi calls, and the messages each way equal what
    // the server counted.
    let server = GoGrpc::start(&[]);
    let target = url(&server, false);
    let run = |call: &str, data: &str, line: &str| {
        let mut a = vec!["grpc", "--call", call, "-D", data];
        a.extend(args(line));
        a.push(&target);
        let run = strain(&a);
        assert_eq!(run.code, 0, "{call}: {}\n{}", run.stdout, run.stderr);
        run
    };
    let point = r#"{"latitude": 3, "longitude": 4}"#;
    let unary = run("routeguide.RouteGuide/GetFeature", point, "-n 200 -c 2");
    unary.assert_nums(&[("/grpc/codes/ok", 200), ("/grpc/messages_sent", 200), ("/grpc/messages_received", 200)]);
    assert_served(&server, "/routeguide.RouteGuide/GetFeature", &[("/calls", 200), ("/received", 200), ("/sent", 200)]);
    server.reset();
    let rect = r#"{"lo": {"latitude": 400000000, "longitude": -750000000}, "hi": {"latitude": 402000000, "longitude": -748000000}}"#;
    let listed = run("routeguide.RouteGuide/ListFeatures", rect, "-n 20 -c 2");
    let each = features_within(10, (400_000_000, -750_000_000), (402_000_000, -748_000_000));
    assert_eq!(each, 9);
    listed.assert_nums(&[("/grpc/codes/ok", 20), ("/grpc/messages_received", 20 * each)]);
    assert_served(&server, LIST_FEATURES, &[("/calls", 20), ("/received", 20), ("/sent", 20 * each)]);
    server.reset();
    let recorded = run("routeguide.RouteGuide/RecordRoute", point, "--stream-messages 5 -n 20 -c 2");
    recorded.assert_nums(&[("/grpc/codes/ok", 20), ("/grpc/messages_sent", 100), ("/grpc/messages_received", 20)]);
    assert_served(&server, RECORD_ROUTE, &[("/calls", 20), ("/received", 100), ("/sent", 20)]);
    server.reset();
    let note = r#"{"location": {"latitude": 1, "longitude": 2}, "message": "hi"}"#;
    let chat = run("routeguide.RouteGuide/RouteChat", note, "--stream-messages 3 -n 10 -c 2");
    chat.assert_nums(&[("/grpc/codes/ok", 10), ("/grpc/messages_sent", 30), ("/grpc/messages_received", 30)]);
    assert_served(&server, ROUTE_CHAT, &[("/calls", 10), ("/received", 30), ("/sent", 30)]);
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_sent() {
    let server = GoGrpc::start(&[]);
    let hello = proto_of("helloworld.Greeter/SayHello");
    // A rpc line without its `;`, on line 5; the error points at where the parser gave up.
    let (_broken_dir, broken) = temp_file(
        "broken.proto",
        "syntax = \"proto3\";\npackage helloworld;\n\nservice Greeter {\n  rpc SayHello (HelloRequest) returns (HelloReply)\n}\n\
         message HelloRequest { string name = 1; }\nmessage HelloReply { string message = 1; }\n",
    );
    let missing = broken.replace("broken.proto", "no-such.proto");
    let say_hello = "helloworld.Greeter/SayHello";
    let cases: [(&[&str], &str); 9] = [
        (&["--call", "helloworld.Nope/SayHello", "--proto", &hello], "it has: helloworld.Greeter"),
        (&["--call", "helloworld.Greeter/Nope", "--proto", &hello], "it has: SayHello"),
        (&["--call", say_hello, "--proto", &broken], "broken.proto:6"),
        (&["--call", say_hello, "--proto", &hello, "-D", r#"{"nam":"x"}"#], "\"nam\""),
        (&["--call", say_hello, "--proto", &hello, "-D", r#"{"name":5}"#], "\"name\""),
        (&["--call", say_hello, "--proto", &hello, "-D", "name=x"], "JSON"),
        (&["--call", say_hello, "--proto", &hello, "--stream-rate", "10"], "--stream-rate"),
        (&["--call", say_hello, "--proto", &hello, "--http1.1"], "--http1.1"),
        (&["--call", say_hello, "--proto", &missing], "no-such.proto"),
    ];
    let target = url(&server, false);
    for (flags, said) in cases {
        let run = strain_raw(&[&["grpc"], flags, &["-n", "5", &target]].concat());
        assert_eq!(run.code, 2, "{flags:?}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{flags:?}: {}", run.stderr);
        assert!(run.stderr.contains(said), "{flags:?}: wanted {said:?} in {}", run.stderr);
        assert_eq!(run.stdout, "", "{flags:?}");
    }
    let counts = server.counts();
    assert_eq!((count(&counts, "/calls"), count(&counts, "/connections")), (0, 0), "{counts}");
}

#[test]
fn a_deadline_is_counted_as_deadline_exceeded() {
    let server = GoGrpc::start(&[]);
    // Each call asks the server to sleep 200 ms with a 20 ms deadline. grpc-go (1.85) races two
    // ends at the deadline: the handler's DEADLINE_EXCEEDED trailers, or its transport's timer
    // resetting the stream with CANCEL (http2_server.go, "close the stream on reaching the
    // deadline"), which the server then counts as Canceled. A gRPC client counts the second as
    // DEADLINE_EXCEEDED too, since its deadline has passed (grpc-go's http2_client.go
    // handleRSTStream), so every call is DEADLINE_EXCEEDED to strain.
    let n = 20;
    let run = call(&server, "helloworld.Greeter/SayHello", r#"{"name":"sleep:200ms"}"#, "--deadline 20ms -n 20 -c 4");
    run.assert_nums(&[
        ("/requests", n),
        ("/grpc/codes/deadline_exceeded", n),
        ("/grpc/messages_sent", n),
        ("/grpc/messages_received", 0),
    ]);
    let codes = run.json.as_ref().unwrap()["grpc"]["codes"].as_object().unwrap().len();
    assert_eq!(codes, 1, "{}", run.stdout);
    let counts = server.counts();
    let figures = method(&counts, SAY_HELLO);
    assert_eq!((count(figures, "/calls"), count(figures, "/received")), (n, n), "{counts}");
    let ended = count(figures, "/codes/DeadlineExceeded") + count(figures, "/codes/Canceled");
    assert_eq!(ended, n, "grpc-go ended every call at the deadline: {counts}");
}

#[test]
fn metadata_reaches_the_server() {
    let server = GoGrpc::start(&[]);
    // `header:KEY` answers "Hello " and KEY's values joined by commas, so the reply's size
    // tells what arrived: field 1's tag and length, then the text. The key is matched without
    // regard to case and the value is trimmed, as HTTP/2 headers are.
    let data = r#"{"name":"header:x-strain-test"}"#;
    let one = call(&server, "helloworld.Greeter/SayHello", data, "-n 10 -c 2 -M x-strain-test:abcdefghij");
    let reply = |text: &str| 2 + text.len() as u64;
    one.assert_nums(&[("/grpc/codes/ok", 10), ("/grpc/message_bytes_received", 10 * reply("Hello abcdefghij"))]);
    let mut a = vec!["grpc", "--call", "helloworld.Greeter/SayHello", "-D", data, "-n", "10", "-c", "2"];
    let proto = proto_of("helloworld.Greeter/SayHello");
    let target = url(&server, false);
    a.extend(["--proto", &proto, "-M", "x-strain-test: abcdefghij", "-M", "X-Strain-Test:  klm", &target]);
    let two = strain(&a);
    assert_eq!(two.code, 0, "{}\n{}", two.stdout, two.stderr);
    two.assert_nums(&[("/grpc/codes/ok", 10), ("/grpc/message_bytes_received", 10 * reply("Hello abcdefghij,klm"))]);
    // Without the metadata the reply is "Hello " alone.
    let none = call(&server, "helloworld.Greeter/SayHello", data, "-n 10 -c 2");
    none.assert_nums(&[("/grpc/message_bytes_received", 10 * reply("Hello "))]);
}

#[test]
fn check_counts_replies_that_do_not_decode() {
    let server = GoGrpc::start(&[]);
    // The reply's field 1 is a string (length-delimited); declared as int64 (a varint) it
    // cannot decode. Only --check decodes replies.
    let (_dir, wrong) = temp_file(
        "wrong.proto",
        "syntax = \"proto3\";\npackage helloworld;\n\
         service Greeter { rpc SayHello (HelloRequest) returns (Wrong); }\n\
         message HelloRequest { string name = 1; }\nmessage Wrong { int64 message = 1; }\n",
    );
    let target = url(&server, false);
    let run_with = |extra: &[&str]| {
        let base = ["grpc", "--call", "helloworld.Greeter/SayHello", "--proto", &wrong, "-D", r#"{"name":"x"}"#];
        let run = strain(&[&base[..], extra, &["-n", "10", "-c", "2", &target]].concat());
        assert_eq!(run.code, 0, "{extra:?}: {}\n{}", run.stdout, run.stderr);
        run
    };
    let unchecked = run_with(&[]);
    unchecked.assert_nums(&[("/grpc/codes/ok", 10), ("/grpc/bad_messages", 0), ("/errors/status", 0)]);
    assert!(!unchecked.stdout.contains("Non-OK calls"), "{}", unchecked.stdout);
    // Checked, each call still ended OK (its status is counted so) but is a bad message, and
    // so an error of the run.
    let checked = run_with(&["--check"]);
    checked.assert_nums(&[
        ("/grpc/codes/ok", 10),
        ("/grpc/bad_messages", 10),
        ("/grpc/messages_received", 10),
        ("/errors/status", 10),
    ]);
    assert!(checked.stdout.contains("Non-OK calls: 10"), "{}", checked.stdout);
    assert!(checked.stdout.contains("bad messages 10"), "{}", checked.stdout);
    assert_served(&server, SAY_HELLO, &[("/calls", 20), ("/codes/OK", 20)]);
}

/// strain's own origin answers strain's own calls of each kind (schema by reflection), and
/// both count the same calls and messages: the demo's and the built-in service's path. A
/// streamed call's head carries no Content-Length (nghttp2's server, unlike grpc-go, refuses a
/// stream whose DATA outruns one).
#[test]
fn gzip_both_ways_is_counted_exactly() {
    // grpc-go compresses its replies when the client accepts gzip (strain offers it with
    // --compress gzip, which compresses its requests too) and reads gzip requests.
    let server = GoGrpc::start(&["-compress-replies"]);
    let point = r#"{"latitude": 3, "longitude": 4}"#;
    let run = call(&server, "routeguide.RouteGuide/GetFeature", point, "-n 100 -c 2 --check --compress gzip");
    run.assert_nums(&[("/grpc/codes/ok", 100), ("/grpc/messages_received", 100), ("/grpc/bad_messages", 0)]);
    assert_served(
        &server,
        "/routeguide.RouteGuide/GetFeature",
        &[("/calls", 100), ("/received", 100), ("/gzip_requests", 100), ("/gzip_replies", 100)],
    );
    // Streams, each message compressed on its own; and without --compress nothing is offered or
    // compressed either way.
    server.reset();
    let note = r#"{"location": {"latitude": 1, "longitude": 2}, "message": "hi"}"#;
    let chat = call(&server, "routeguide.RouteGuide/RouteChat", note, "--stream-messages 3 -n 10 -c 2 --compress gzip");
    chat.assert_nums(&[("/grpc/codes/ok", 10), ("/grpc/messages_sent", 30), ("/grpc/messages_received", 30)]);
    assert_served(
        &server,
        ROUTE_CHAT,
        &[("/calls", 10), ("/received", 30), ("/sent", 30), ("/gzip_requests", 10), ("/gzip_replies", 10)],
    );
    server.reset();
    let plain = call(&server, "helloworld.Greeter/SayHello", r#"{"name":"x"}"#, "-n 50 -c 2 --check");
    plain.assert_nums(&[("/grpc/codes/ok", 50), ("/grpc/bad_messages", 0)]);
    assert_served(&server, SAY_HELLO, &[("/calls", 50), ("/gzip_requests", 0), ("/gzip_replies", 0)]);
    // strain's own origin reads gzip requests too.
    let origin = crate::harness::Origin::start(&["--grpc", "-t", "1"]);
    let url = format!("http://{}", origin.addr);
    let echo = strain(&[
        "grpc",
        "--call",
        "strain.echo.v1.Echo/Unary",
        "-D",
        r#"{"message":"mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"}"#,
        "-n",
        "20",
        "-c",
        "2",
        "--compress",
        "gzip",
        &url,
    ]);
    assert_eq!(echo.code, 0, "{}\n{}", echo.stdout, echo.stderr);
    echo.assert_nums(&[("/grpc/codes/ok", 20), ("/grpc/messages_received", 20)]);
}

#[test]
fn strains_origin_answers_every_kind_of_call_exactly() {
    let origin = crate::harness::Origin::start(&["--grpc", "-t", "1"]);
    let url = format!("http://{}", origin.addr);
    let cases: [(&str, &str, u64, u64); 4] = [
        // (method, extra flags, messages sent, messages received) for 20 calls.
        ("Unary", "", 20, 20),
        ("ServerStream", "", 20, 60),
        ("ClientStream", "--stream-messages 4", 80, 20),
        ("Bidi", "--stream-messages 4 --stream-rate 500", 80, 80),
    ];
    for (method, extra, sent, received) in cases {
        let call = format!("strain.echo.v1.Echo/{method}");
        let mut a = vec!["grpc", "--call", &call, "-D", r#"{"message":"m","count":3}"#, "-n", "20", "-c", "2"];
        a.extend(args(extra));
        a.push(&url);
        let run = strain(&a);
        assert_eq!(run.code, 0, "{method}: {}\n{}", run.stdout, run.stderr);
        run.assert_nums(&[
            ("/grpc/codes/ok", 20),
            ("/grpc/messages_sent", sent),
            ("/grpc/messages_received", received),
            ("/grpc/http_errors", 0),
            ("/errors/read", 0),
        ]);
    }
    let page = crate::proxies::http_get(origin.addr, "/_strain/stats").expect("the stats page");
    let body = page.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let s: serde_json::Value = serde_json::from_str(body).unwrap();
    let calls = serde_json::json!({"unary": 20, "server_stream": 20, "client_stream": 20, "bidi": 20, "reflection": 4, "unknown": 0});
    assert_eq!(s["grpc"]["calls"], calls, "{s}");
    // The load's messages each way, and one each way per reflection call.
    assert_eq!(s["grpc"]["messages_received"].as_u64(), Some(20 + 20 + 80 + 80 + 4 * 2), "{s}");
}

/// A report file that cannot be written is said before reflection asks the server anything:
/// one line, exit 2, and the origin saw no call at all.
#[test]
fn an_unwritable_report_is_refused_before_reflection() {
    let origin = crate::harness::Origin::start(&["--grpc", "-t", "1"]);
    let url = format!("http://{}", origin.addr);
    for flag in ["--json", "--html"] {
        let run =
            strain_raw(&["grpc", "--call", "strain.echo.v1.Echo/Unary", flag, "/no/such/dir/out", "-n", "5", &url]);
        assert_eq!(run.code, 2, "{flag}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{flag}: {}", run.stderr);
        assert!(run.stderr.contains("cannot write /no/such/dir/out"), "{flag}: {}", run.stderr);
    }
    let page = crate::proxies::http_get(origin.addr, "/_strain/stats").expect("the stats page");
    let body = page.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let s: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(s["grpc"]["calls"]["reflection"], 0, "{s}");
    assert_eq!(s["grpc"]["calls"]["unary"], 0, "{s}");
}
