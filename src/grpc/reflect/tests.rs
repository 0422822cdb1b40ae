//! The client against a fake reflection server made of strain's own HTTP/2 session (it puts
//! `grpc-status` in its headers, having no trailers, which the client accepts alike), and,
//! when `STRAIN_TEST_PY_GRPC` names a Python with grpcio, against a real gRPC server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::time::Duration;

use prost::Message as _;

use super::*;
use crate::grpc::reflection::{FileDescriptors, ServiceList, ServiceName};
use crate::grpc::schema::{find_method, services, MethodKind};

const TIMEOUT: Duration = Duration::from_secs(5);

/// One reply of the fake server: its header fields and its body.
type Reply = (Vec<(String, String)>, Vec<u8>);

/// A server on port 0 answering stream `n` (0-based, in the order they arrive) to `path` with
/// `respond(n, path)`, for one connection.
fn serve(respond: impl Fn(usize, &str) -> Reply + Send + 'static) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let Ok((mut sock, _)) = listener.accept() else { return };
        let mut session = Session::server(Settings::default()).unwrap();
        let mut n = 0;
        let mut buf = vec![0u8; 65536];
        loop {
            let mut out = Vec::new();
            session.output(&mut out).unwrap();
            if sock.write_all(&out).is_err() {
                return;
            }
            let Ok(got) = sock.read(&mut buf) else { return };
            if got == 0 || session.receive(&buf[..got]).is_err() {
                return;
            }
            let requests: Vec<Event> = session.events().drain(..).collect();
            for event in requests {
                if let Event::Request { stream, head } = event {
                    let (fields, body) = respond(n, &String::from_utf8_lossy(&head.path));
                    n += 1;
                    session.submit_response(stream, &fields, body).unwrap();
                }
            }
        }
    });
    addr
}

fn ok(answers: Vec<Answer>) -> Reply {
    let mut body = Vec::new();
    for answer in answers {
        wire::frame(&Response { answer: Some(answer), ..Response::default() }.encode_to_vec(), &mut body);
    }
    (fields("0"), body)
}

fn fields(status: &str) -> Vec<(String, String)> {
    [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", status)]
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .to_vec()
}

fn unimplemented() -> Reply {
    (fields("12"), Vec::new())
}

fn listed(names: &[&str]) -> Answer {
    Answer::Services(ServiceList { service: names.iter().map(|n| ServiceName { name: n.to_string() }).collect() })
}

/// The files of a two-file schema (`geo.proto` imports `common/point.proto` and
/// google/protobuf/empty.proto), serialized, by name; the well-known file is left out, as some
/// servers do.
fn geo_files() -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("common")).unwrap();
    std::fs::write(
        dir.path().join("geo.proto"),
        "syntax = \"proto3\"; package geo; import \"google/protobuf/empty.proto\"; import \"common/point.proto\";\n\
         service Atlas { rpc Locate(common.Point) returns (google.protobuf.Empty); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("common/point.proto"),
        "syntax = \"proto3\"; package common; message Point { int32 x = 1; }\n",
    )
    .unwrap();
    let pool = schema::compile(&[dir.path().join("geo.proto")], &[]).unwrap();
    pool.files()
        .filter(|f| !f.name().starts_with("google/"))
        .map(|f| (f.name().to_string(), f.file_descriptor_proto().encode_to_vec()))
        .collect()
}

fn files(names: &[&str]) -> Answer {
    let all = geo_files();
    let pick = all.into_iter().filter(|(n, _)| names.contains(&n.as_str())).map(|(_, b)| b).collect();
    Answer::Files(FileDescriptors { file_descriptor_proto: pick })
}

fn fetch_from(addr: SocketAddr, service: &str) -> Result<DescriptorPool, ReflectError> {
    fetch(addr, &addr.to_string(), None, service, TIMEOUT)
}

#[test]
fn v1_answers_make_the_schema() {
    let addr = serve(|_, path| {
        assert_eq!(path, reflection::PATHS[0]);
        ok(vec![
            listed(&["geo.Atlas", "grpc.reflection.v1.ServerReflection"]),
            files(&["geo.proto", "common/point.proto"]),
        ])
    });
    let pool = fetch_from(addr, "geo.Atlas").unwrap();
    assert_eq!(services(&pool), ["geo.Atlas"]);
    let m = find_method(&pool, "geo.Atlas/Locate").unwrap();
    assert_eq!(
        (m.input.full_name(), m.output.full_name(), m.kind),
        ("common.Point", "google.protobuf.Empty", MethodKind::Unary)
    );
}

#[test]
fn without_v1_the_client_asks_v1alpha() {
    for v1 in [unimplemented(), ((vec![(":status".to_string(), "404".to_string())]), Vec::new())] {
        let addr = serve(move |n, path| match n {
            0 => v1.clone(),
            _ => {
                assert_eq!(path, reflection::PATHS[1]);
                ok(vec![listed(&["geo.Atlas"]), files(&["geo.proto", "common/point.proto"])])
            }
        });
        assert!(find_method(&fetch_from(addr, "geo.Atlas").unwrap(), "geo.Atlas/Locate").is_ok());
    }
}

#[test]
fn imports_the_answer_lacked_are_asked_for_by_name() {
    let addr = serve(|n, _| match n {
        0 => ok(vec![listed(&["geo.Atlas"]), files(&["geo.proto"])]),
        _ => ok(vec![files(&["common/point.proto"])]),
    });
    assert!(find_method(&fetch_from(addr, "geo.Atlas").unwrap(), "geo.Atlas/Locate").is_ok());
}

#[test]
fn what_goes_wrong_is_said_in_one_line() {
    let addr = serve(|_, _| unimplemented());
    assert_eq!(
        fetch_from(addr, "geo.Atlas").unwrap_err().to_string(),
        format!(
            "{addr} has no gRPC reflection service (UNIMPLEMENTED on grpc.reflection.v1 and v1alpha); \
             give the schema with --proto or --protoset"
        )
    );
    let addr = serve(|_, _| {
        let not_found = ErrorAnswer { error_code: 5, error_message: "symbol not found".into() };
        ok(vec![listed(&["b.Two", "a.One"]), Answer::Error(not_found)])
    });
    assert_eq!(
        fetch_from(addr, "geo.Atlas").unwrap_err().to_string(),
        "the server has no service \"geo.Atlas\"; it lists: a.One, b.Two"
    );
    let addr = serve(|_, _| {
        let not_found = ErrorAnswer { error_code: 5, error_message: "symbol not found".into() };
        ok(vec![listed(&["geo.Atlas"]), Answer::Error(not_found)])
    });
    assert_eq!(
        fetch_from(addr, "geo.Atlas").unwrap_err().to_string(),
        "reflection: asked for symbol geo.Atlas, the server answered NOT_FOUND: symbol not found"
    );
    let addr = serve(|_, _| {
        let mut reply = (fields("7"), Vec::new());
        reply.0.push(("grpc-message".into(), "no%20way%".into()));
        reply
    });
    assert_eq!(
        fetch_from(addr, "geo.Atlas").unwrap_err().to_string(),
        "reflection: the call failed with PERMISSION_DENIED: no way%"
    );
    let addr = serve(|_, _| ok(vec![listed(&["geo.Atlas"])]));
    assert_eq!(fetch_from(addr, "geo.Atlas").unwrap_err().to_string(), "reflection: 2 questions got 1 answers");
}

#[test]
fn a_refused_a_silent_and_a_foreign_server_are_told_apart() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = fetch_from(addr, "a.B").unwrap_err().to_string();
    assert!(err.starts_with(&format!("reflection: cannot connect to {addr}: Connection refused")), "{err}");

    // Accepts, reads, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let _ = sock.read(&mut [0u8; 1024]);
        std::thread::sleep(Duration::from_millis(500));
    });
    let err = fetch(addr, "x", None, "a.B", Duration::from_millis(200)).unwrap_err();
    assert_eq!(err.to_string(), format!("reflection: {addr} did not answer within 200ms"));
    hold.join().unwrap();

    // HTTP/1.1 only.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let _ = sock.read(&mut [0u8; 1024]);
        let _ = sock.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
    // It closes while strain may still be writing: the close or the failed write is seen first.
    let err = fetch_from(addr, "a.B").unwrap_err().to_string();
    assert!(err.starts_with("reflection: "), "{err}");
    assert!(err.ends_with(" (it spoke no HTTP/2: http:// means h2c with prior knowledge)"), "{err}");
}

/// A real gRPC server (Python's grpcio) serving `tests/servers/python-grpc/greet.proto`, with
/// reflection or without, over TLS when given a PEM certificate and key; killed when dropped.
struct PyServer {
    child: std::process::Child,
    addr: SocketAddr,
}

impl PyServer {
    /// `None` when `STRAIN_TEST_PY_GRPC` is not set.
    fn start(reflection: bool, tls: Option<(&std::path::Path, &std::path::Path)>) -> Option<PyServer> {
        let python = std::env::var_os("STRAIN_TEST_PY_GRPC")?;
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers/python-grpc");
        let mut cmd = std::process::Command::new(python);
        // grpcio's core logs a refused handshake (the certificate test's point) to stderr.
        cmd.env("GRPC_VERBOSITY", "NONE");
        cmd.arg(dir.join("server.py")).arg("--proto").arg(dir.join("greet.proto"));
        if !reflection {
            cmd.arg("--no-reflection");
        }
        if let Some((cert, key)) = tls {
            cmd.arg("--tls-cert").arg(cert).arg("--tls-key").arg(key);
        }
        let mut child = cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
        let port = line.trim().strip_prefix("PORT ").unwrap_or_else(|| panic!("server said {line:?}"));
        Some(PyServer { child, addr: format!("127.0.0.1:{port}").parse().unwrap() })
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_grpc_server_with_reflection() {
    let Some(server) = PyServer::start(true, None) else { return };
    let pool = fetch_from(server.addr, "greet.Greeter").unwrap();
    let m = find_method(&pool, "greet.Greeter/SayHello").unwrap();
    assert_eq!(
        (m.path.as_str(), m.input.full_name(), m.kind),
        ("/greet.Greeter/SayHello", "greet.HelloRequest", MethodKind::Unary)
    );
    assert_eq!(find_method(&pool, "greet.Greeter/Chat").unwrap().kind, MethodKind::Bidi);
    assert_eq!(find_method(&pool, "greet.Greeter/Ping").unwrap().output.full_name(), "google.protobuf.Empty");
    let err = fetch_from(server.addr, "greet.Nope").unwrap_err().to_string();
    assert!(
        err.starts_with("the server has no service \"greet.Nope\"; it lists: greet.Greeter, grpc.reflection."),
        "{err}"
    );
}

#[test]
fn a_real_grpc_server_without_reflection() {
    let Some(server) = PyServer::start(false, None) else { return };
    assert_eq!(fetch_from(server.addr, "greet.Greeter").unwrap_err(), ReflectError::NoReflection { addr: server.addr });
}

#[test]
fn a_real_grpc_server_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let made = crate::net::tls::self_signed(&["localhost"]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, made.cert).unwrap();
    std::fs::write(&key, made.key).unwrap();
    let Some(server) = PyServer::start(true, Some((&cert, &key))) else { return };
    let authority = format!("localhost:{}", server.addr.port());
    let setup = TlsSetup::new("localhost", true, &[b"h2"]).unwrap();
    let pool = fetch(server.addr, &authority, Some(&setup), "greet.Greeter", TIMEOUT).unwrap();
    assert!(find_method(&pool, "greet.Greeter/SayHello").is_ok());
    // Verifying the self-signed certificate fails, and says how to skip it.
    let strict = TlsSetup::new("localhost", false, &[b"h2"]).unwrap();
    let err = fetch(server.addr, &authority, Some(&strict), "greet.Greeter", TIMEOUT).unwrap_err().to_string();
    assert!(err.starts_with("reflection: TLS certificate rejected") && err.ends_with("use --insecure"), "{err}");
}
