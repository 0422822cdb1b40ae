//! `strain grpc --call PKG.Service/Method URL`: the schema settled (`--proto`, `--protoset`, or
//! the server's reflection), the method found and the messages read and encoded, all before
//! anything is sent (a bad schema, method or message is one line, exit 2); then one HTTP/2 run
//! whose requests are the method's calls, a capacity search over them (`grpc find-max`), or
//! an A/B comparison of two servers answering them (`grpc compare`).

use std::sync::Arc;

use super::flags::CallFlags;
use crate::cli::flags::ConnectFlags;
use crate::cli::load;
use crate::cli::protocol::{Aim, Protocol};
use crate::cli::CliError;
use crate::config::{Config, Target};
use crate::grpc::call::{protocol_headers, CallSetup, StreamAsk, Streaming};
use crate::grpc::message::Messages;
use crate::grpc::schema::{self, Method, MethodKind};
use crate::grpc::wire::Encoding;
use crate::http::request::Header;
use crate::run::Workload;

impl Protocol for CallFlags {
    const COMMAND: &'static str = "strain grpc";

    fn load(&self, aim: Aim) -> Result<(Config, Workload), CliError> {
        grpc_load(self, aim)
    }
}

/// The load of calls to `url`: HTTP/2 whatever the flags, the run's shape (`None` for a
/// search), and the calls as its workload. `-c` defaults to `connections`.
fn grpc_load(call: &CallFlags, aim: Aim) -> Result<(Config, Workload), CliError> {
    let Aim { url, connect, shape, connections } = aim;
    // gRPC travels over HTTP/2 only: its command offers no other.
    let protocol = crate::config::ProtocolChoice::Exactly(crate::config::Protocol::Http2 { streams: load::streams(&call.streams)? });
    let target = Target::parse(url)?;
    if target.websocket || target.path != "/" {
        return Err(CliError::Usage(format!(
            "{url}: a gRPC server's URL is http[s]://host:port; the method goes in --call"
        )));
    }
    let (plan, headers) = calls(call, &target, connect)?;
    let mut connect = connect.clone();
    if let Some(s) = &plan.streaming {
        // --timeout bounds the wait for the answer once a stream has sent all it sends.
        let span_us = s.duration_us.unwrap_or(0).max(s.messages.unwrap_or(0).saturating_mul(s.every_us));
        connect.timeout.0 += std::time::Duration::from_micros(span_us);
    }
    // The method is the test's path: reports name it, and merge and compare tell the results
    // of different methods apart as they do different paths.
    let target = target.at_path(&plan.path);
    let requests = load::Requests::Fixed { method: "POST", headers };
    let config = load::load(target, &connect, protocol, shape, requests, connections)?;
    Ok((config, Workload::Judged(Arc::new(plan))))
}

/// The calls the flags describe, and the headers each carries; every failure is one line.
fn calls(f: &CallFlags, target: &Target, connect: &ConnectFlags) -> Result<(CallSetup, Vec<Header>), CliError> {
    let name =
        f.call.as_deref().ok_or_else(|| CliError::Usage("--call names the method: PKG.Service/Method".into()))?;
    let mut headers = protocol_headers();
    let encoding = match f.compress.as_deref() {
        Some("gzip") => Encoding::Gzip,
        _ => Encoding::Identity,
    };
    if encoding == Encoding::Gzip {
        // Offered only when asked, as grpc-go offers only the compressors a client registers:
        // the field costs every call HPACK work (measured: 0.9x unary calls per CPU-second).
        headers.push(Header { name: "grpc-encoding".into(), value: "gzip".into() });
        headers.push(Header { name: "grpc-accept-encoding".into(), value: crate::grpc::wire::ACCEPTED.into() });
    }
    if let Some(d) = f.deadline {
        headers.push(Header { name: "grpc-timeout".into(), value: crate::grpc::wire::timeout(d.0) });
    }
    for m in &f.metadata {
        let h = load::parse_header(m)
            .map_err(|_| CliError::Usage(format!("invalid --metadata '{m}': expected 'key: value'")))?;
        let name = h.name.to_ascii_lowercase();
        if name.starts_with("grpc-") || ["content-type", "te", "user-agent"].contains(&name.as_str()) {
            return Err(CliError::Usage(format!("--metadata '{m}': {name} is gRPC's own; give your own keys")));
        }
        headers.push(Header { name, value: h.value });
    }
    let pool = match (&f.protoset, f.protos.is_empty()) {
        (Some(path), _) => schema::from_protoset(path).map_err(|e| usage(&e))?,
        (None, false) => schema::compile(&f.protos, &f.import_paths).map_err(|e| usage(&e))?,
        (None, true) => reflect(name, target, connect)?,
    };
    let method: Method = schema::find_method(&pool, name).map_err(|e| usage(&e))?;
    let messages = match (&f.data, &f.data_file, &f.data_bin) {
        (Some(json), _, _) => Messages::from_json(&method.input, json),
        (_, Some(path), _) => Messages::from_json_lines(&method.input, path),
        (_, _, Some(path)) => Messages::from_binary(&method.input, path),
        _ => Ok(Messages::empty(&method.input)),
    }
    .map_err(|e| usage(&e))?;
    let check = f.check.then(|| method.checked.clone());
    let ask = StreamAsk { rate: f.stream_rate, messages: f.stream_messages, duration: f.stream_duration.map(|d| d.0) };
    let streaming = Streaming::for_method(&ask, &method, &messages, encoding).map_err(CliError::Usage)?;
    let server_streams = matches!(method.kind, MethodKind::ServerStreaming | MethodKind::Bidi);
    let mut plan = CallSetup::new(&method.path, &target.host_header(), &headers, messages, check, encoding)
        .server_streaming(server_streams)
        .deadline(f.deadline.map(|d| d.0));
    if let Some(s) = streaming {
        plan = plan.streamed(s);
    }
    Ok((plan, headers))
}

/// The schema the server's reflection gives for the called service (one connection, before
/// any load).
fn reflect(name: &str, target: &Target, connect: &ConnectFlags) -> Result<prost_reflect::DescriptorPool, CliError> {
    let (service, _) = schema::split_call(name).map_err(|e| usage(&e))?;
    let addr = match &connect.unix_socket {
        Some(_) => {
            return Err(CliError::Usage(
                "reflection over a Unix socket is not asked: give --proto or --protoset".into(),
            ))
        }
        None => crate::net::resolve(&target.host, target.port, connect.timeout.0).map_err(|e| usage(&e))?,
    };
    let tls = target.tls(connect.insecure, &[b"h2"]).map_err(|e| usage(&e))?;
    crate::grpc::reflect::fetch(addr, &target.host_header(), tls.as_ref(), service, connect.timeout.0)
        .map_err(|e| usage(&e))
}

/// A schema, message or reflection error as the one line the binary prints (exit 2).
fn usage(e: &dyn std::fmt::Display) -> CliError {
    CliError::Usage(e.to_string())
}
