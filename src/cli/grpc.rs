//! `strain grpc --call PKG.Service/Method URL`: the schema settled (`--proto`, `--protoset`, or
//! the server's reflection), the method found and the messages read and encoded, all before
//! anything is sent (a bad schema, method or message is one line, exit 2); then one HTTP/2 run
//! whose requests are the method's calls.

use std::sync::Arc;

use super::flags::GrpcFlags;
use super::{load, run_and_report, stop_flag, CliError};
use crate::config::{ProtocolChoice, Scheme, Target};
use crate::grpc::call::{protocol_headers, CallPlan, StreamPlan};
use crate::grpc::message::Messages;
use crate::grpc::schema::{self, Method, MethodKind};
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
    if let Some(s) = &calls.0.streaming {
        // --timeout bounds the wait for the answer once a stream has sent all it sends.
        let span_us = s.duration_us.unwrap_or(0).max(s.messages.unwrap_or(0).saturating_mul(s.every_us));
        config.timeout += std::time::Duration::from_micros(span_us);
    }
    debug_assert!(matches!(config.protocol, ProtocolChoice::Http2 { .. }));
    let checks = load::checks(&f.run, &config, false)?;
    let outputs = load::outputs(&config, &f.run);
    let stop = stop_flag()?;
    let test = RunConfig {
        load: config,
        workload: Workload::Grpc(Arc::new(calls.0)),
        origin: OriginPlacement::Elsewhere,
        checks,
    };
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
            let _ = (Scheme::Https, config.insecure);
            return Err(CliError::Usage("give the schema with --proto or --protoset".into()));
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
        let h = load::parse_header(m)
            .map_err(|_| CliError::Usage(format!("invalid --metadata '{m}': expected 'key: value'")))?;
        let name = h.name.to_ascii_lowercase();
        if name.starts_with("grpc-") || name.starts_with(':') || ["content-type", "te"].contains(&name.as_str()) {
            return Err(CliError::Usage(format!("--metadata '{m}': {name} is gRPC's own; give your own keys")));
        }
        headers.push(Header { name, value: h.value });
    }
    let check = f.check.then(|| method.output.clone());
    let streaming = stream_plan(f, &method, &messages)?;
    let mut plan = CallPlan::new(&method.path, &target.host_header(), &headers, messages, check);
    if let Some(s) = streaming {
        plan = plan.streamed(s);
    }
    Ok((plan, headers))
}

/// How a client-streaming or bidi call sends its messages; `None` for a call whose request is
/// one message. The stream flags on such a call are refused rather than ignored.
fn stream_plan(f: &GrpcFlags, method: &Method, messages: &Messages) -> Result<Option<StreamPlan>, CliError> {
    let asked = f.stream_rate.is_some() || f.stream_messages.is_some() || f.stream_duration.is_some();
    let bidi = match method.kind {
        MethodKind::Bidi => true,
        MethodKind::ClientStreaming => false,
        MethodKind::Unary | MethodKind::ServerStreaming if asked => {
            return Err(CliError::Usage(format!(
                "--stream-rate, --stream-messages and --stream-duration are for calls whose requests stream; {} takes one request",
                method.path
            )))
        }
        MethodKind::Unary | MethodKind::ServerStreaming => return Ok(None),
    };
    if !messages.all_fixed() {
        return Err(CliError::Usage("templates are not sent on streams yet: give fixed messages".into()));
    }
    let framed = (0..messages.len().max(1))
        .filter_map(|k| messages.fixed(k))
        .map(|m| {
            let mut out = Vec::new();
            crate::grpc::wire::frame(m, &mut out);
            out
        })
        .collect();
    let every_us = f.stream_rate.map_or(0, |r| (1e6 / r).round().max(1.0) as u64);
    let duration_us = f.stream_duration.map(|d| d.0.as_micros() as u64);
    let count = f.stream_messages.map(|n| n as u64).or(if duration_us.is_none() { Some(10) } else { None });
    Ok(Some(StreamPlan { framed, every_us, messages: count, duration_us, bidi }))
}
