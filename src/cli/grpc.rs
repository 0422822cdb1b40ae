//! `strain grpc --call PKG.Service/Method URL`: the schema settled (`--proto`, `--protoset`, or
//! the server's reflection), the method found and the messages read and encoded, all before
//! anything is sent (a bad schema, method or message is one line, exit 2); then one HTTP/2 run
//! whose requests are the method's calls.

use std::sync::Arc;

use super::flags::GrpcFlags;
use super::{load, run_and_report, stop_flag, CliError};
use crate::config::{ProtocolChoice, Scheme, Target};
use crate::grpc::call::{protocol_headers, CallPlan};
use crate::grpc::message::Messages;
use crate::grpc::schema::{self, Method};
use crate::http::request::Header;
use crate::run::{OriginPlacement, RunConfig, Workload};

/// Runs `strain grpc`.
pub fn run(f: &GrpcFlags) -> Result<i32, CliError> {
    if f.connect.http1 || f.connect.http3 {
        return Err(CliError::Usage("gRPC travels over HTTP/2: drop --http1.1 and --http3".into()));
    }
    let target = Target::parse(&f.url)?;
    let mut connect = f.connect.clone();
    connect.http2 = true;
    let shape = load::RunShape::of(&f.run);
    let mut config = load::load(&f.url, &connect, Some(shape), None, crate::defaults::CONNECTIONS)?;
    let calls = calls(f, &target, &config)?;
    config.method = "POST".into();
    config.headers = calls.1;
    debug_assert!(matches!(config.protocol, ProtocolChoice::Http2 { .. }));
    let checks = load::checks(&f.run, &config, false)?;
    let outputs = load::outputs(&config, &f.run);
    let stop = stop_flag()?;
    let test =
        RunConfig { load: config, workload: Workload::Grpc(Arc::new(calls.0)), origin: OriginPlacement::Elsewhere, checks };
    let (code, _) = run_and_report(test, &outputs, &stop)?;
    Ok(code)
}

/// The calls the flags describe, and the headers each carries; every failure is one line.
fn calls(f: &GrpcFlags, target: &Target, config: &crate::config::Config) -> Result<(CallPlan, Vec<Header>), CliError> {
    let usage = |e: &dyn std::fmt::Display| CliError::Usage(e.to_string());
    let pool = match (&f.protoset, f.protos.is_empty()) {
        (Some(path), _) => schema::from_protoset(path).map_err(|e| usage(&e))?,
        (None, false) => schema::compile(&f.protos, &f.import_paths).map_err(|e| usage(&e))?,
        (None, true) => {
            let tls = target.scheme == Scheme::Https;
            crate::grpc::reflect::fetch(target, tls, config.insecure, &f.call, config.timeout).map_err(|e| usage(&e))?
        }
    };
    let method: Method = schema::find_method(&pool, &f.call).map_err(|e| usage(&e))?;
    let messages = match (&f.data, &f.data_file, &f.data_bin) {
        (Some(json), _, _) => Messages::from_json(&method.input, json),
        (_, Some(path), _) => Messages::from_json_lines(&method.input, path),
        (_, _, Some(path)) => Messages::from_binary(&method.input, path),
        _ => Ok(Messages::empty(&method.input)),
    }
    .map_err(|e| usage(&e))?;
    let mut headers = protocol_headers();
    if let Some(d) = f.deadline {
        headers.push(Header { name: "grpc-timeout".into(), value: crate::grpc::wire::timeout(d.0) });
    }
    for m in &f.metadata {
        let h = load::parse_header(m).map_err(|_| {
            CliError::Usage(format!("invalid --metadata '{m}': expected 'key: value'"))
        })?;
        let name = h.name.to_ascii_lowercase();
        if name.starts_with("grpc-") || name.starts_with(':') || ["content-type", "te"].contains(&name.as_str()) {
            return Err(CliError::Usage(format!("--metadata '{m}': {name} is gRPC's own; give your own keys")));
        }
        headers.push(Header { name, value: h.value });
    }
    let check = f.check.then(|| method.output.clone());
    let plan = CallPlan::new(&method.path, &target.host_header(), &headers, messages, check);
    Ok((plan, headers))
}
