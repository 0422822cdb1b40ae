//! Flags become a run's parts here, once for every command that sends load: a plain run, a
//! proxy test, a capacity search (find-max and `proxy --find-max`), a segment of a split test
//! and the demo all call [`load`] with the flag groups they accept, so a flag means the same
//! thing wherever it is taken. Nothing here does I/O beyond reading the environment for
//! `--segments`: resolving the host and choosing the protocol happen when the run starts.

use super::flags::{ConnectFlags, HttpFlags, LengthFlags, RequestFlags, RunFlags, SegmentFlags, StreamsFlag};
use super::CliError;
use crate::config::{Config, Protocol, ProtocolChoice, Segment, Settings, Target};
use crate::http::request::Header;
use crate::report::{Output, Outputs, TextOptions};
use crate::run::Workload;
use crate::schedule::Schedule;
use crate::verdict::{Checks, Needs, Threshold};
use std::time::Duration;

/// A single run's length, segment and interval flags (a search chooses its own).
#[derive(Clone, Copy)]
pub struct RunShape<'a> {
    /// Duration, -n, rate or stages.
    pub length: &'a LengthFlags,
    /// Which share of a split test.
    pub segment: Option<&'a SegmentFlags>,
    /// `--interval`.
    pub interval: Option<Duration>,
    /// Load before the measured length (the A/B runner's `--warmup`), added to it.
    pub warmup: Duration,
    /// `strain replay`: what is replayed (the requests and their times come from it).
    pub replay: Option<&'a crate::replay::ReplayNote>,
    /// Whether the run ends at its duration, when the length alone does not say (a replay's
    /// duration is a guard past its recording's end, a bound only if `-d` gave it).
    pub time_bound: Option<bool>,
    /// `--fullpage`: whole pages, as a browser loads them.
    pub pages: Option<crate::config::Browse>,
}

impl<'a> RunShape<'a> {
    /// The shape a single run's flags give.
    pub fn of(run: &'a RunFlags) -> RunShape<'a> {
        RunShape {
            length: &run.length,
            segment: Some(&run.segment),
            interval: run.live.interval,
            warmup: Duration::ZERO,
            replay: None,
            time_bound: None,
            pages: None,
        }
    }
}

/// What each request is, from the flags and the files they name (a proxy test makes its own).
#[derive(Clone, Copy)]
pub struct RequestShape<'a> {
    /// `-X`, `-H`, `--body`, `--targets-order`.
    pub flags: &'a RequestFlags,
    /// The targets and body files, read once.
    pub inputs: &'a Inputs,
}

/// What each request of a load is.
pub enum Requests<'a> {
    /// The URL's, with what the HTTP flags and the files they name say.
    Flags(RequestShape<'a>),
    /// A protocol's own method and headers (gRPC's `POST` and its metadata).
    Fixed {
        /// The method.
        method: &'a str,
        /// The headers, in order.
        headers: Vec<crate::http::request::Header>,
    },
    /// The workload makes each request (a proxy test, a replay, WebSocket messages).
    Workload,
}

/// The target of an HTTP command's `url` (a WebSocket's is `strain ws`'s).
pub fn http_target(url: &str) -> Result<Target, CliError> {
    let target = Target::parse(url)?;
    if target.websocket {
        return Err(CliError::Usage(format!("{url}: a WebSocket server is loaded with strain ws")));
    }
    Ok(target)
}

/// The load of `target`, built once and checked once: how it connects, for a single run
/// (`None` for a search) its length, segment and interval, and what each request is; every
/// piece a protocol adds is given here, before the one check. `-c` defaults to
/// `default_connections` (find-max loads with more connections than wrk's 10).
pub fn load(
    target: Target,
    f: &ConnectFlags,
    protocol: ProtocolChoice,
    run: Option<RunShape>,
    request: Requests,
    default_connections: usize,
) -> Result<Config, CliError> {
    let mut config = Settings::new(target);
    config.connections = f.connections.unwrap_or(default_connections);
    config.threads = f.threads;
    config.timeout = f.timeout.0;
    config.insecure = f.insecure;
    config.tick = f.tick.0;
    config.source_addrs = f.source_addrs.clone();
    config.unix_socket = f.unix_socket.clone();
    config.slow = crate::config::Slow {
        rates: crate::net::throttle::Rates { read: f.read_rate, write: f.write_rate },
        drop_after_length: f.drop_after_length,
    };
    config.trace = crate::engine::trace::TraceSpec { shown: f.trace.unwrap_or(0) as u64, file: f.trace_file.clone() };
    config.protocol = protocol;
    // Without --interval the config chooses one from the run's length once it is known.
    config.interval = run.and_then(|r| r.interval);
    if let Some(length) = run.map(|r| r.length) {
        config.requests = length.requests.map(|n| n as u64);
        config.time_bound = run
            .and_then(|r| r.time_bound)
            .unwrap_or(length.requests.is_none() || length.duration.is_some() || length.stages.is_some());
        config.duration = match (length.duration, length.requests, length.rate) {
            (Some(d), None, _) | (Some(d), _, None) => d.0,
            // At a rate, N requests are due in N / rate; one interval more lets the last come
            // due before the end (the -n budget keeps the count at N).
            (d, Some(n), Some(rate)) => {
                let rate = rate.max(1e-9);
                let due = Duration::from_secs_f64((n as f64 + 1.0) / rate).max(Duration::from_millis(1));
                d.map_or(due, |d| d.0.min(due))
            }
            (None, Some(_), None) => crate::defaults::REQUESTS_DURATION,
            (None, None, _) => crate::defaults::DURATION,
        };
        let warmup = run.map_or(Duration::ZERO, |r| r.warmup);
        config.warmup = warmup;
        config.duration += warmup;
        config.schedule = match (length.rate, &length.stages) {
            (rate, Some(stages)) => {
                let schedule = Schedule::stages(rate.unwrap_or(0.0), &stages.0);
                config.duration = schedule.duration();
                Some(schedule)
            }
            (Some(rate), None) => Some(Schedule::constant(rate, config.duration)),
            (None, None) => None,
        };
    }
    config.replay = run.and_then(|r| r.replay).cloned();
    config.pages = run.and_then(|r| r.pages);
    if let Some(s) = run.and_then(|r| r.segment) {
        config.segment = segment(s)?;
        config.start_at = s.start_at;
    }
    match request {
        Requests::Flags(r) => requests(&mut config, r)?,
        Requests::Fixed { method, headers } => {
            config.method = method.to_owned();
            config.headers = headers;
        }
        Requests::Workload => {}
    }
    let config = config.build()?;
    if let Some(late) = config.start_at.and_then(|at| std::time::SystemTime::now().duration_since(at).ok()) {
        eprintln!(
            "strain: --start-at was {:.1}s ago: starting now, out of step with the other segments",
            late.as_secs_f64()
        );
    }
    Ok(config)
}

/// `--segment I/N`, or `--segments N` with the index from a Kubernetes Indexed Job.
fn segment(f: &SegmentFlags) -> Result<Segment, CliError> {
    Ok(match (f.segment, f.segments) {
        (Some((index, count)), _) => Segment { index, count },
        (None, Some(count)) => {
            let index = std::env::var("JOB_COMPLETION_INDEX")
                .ok()
                .and_then(|v| v.trim().parse::<u32>().ok())
                .ok_or_else(|| {
                    CliError::Usage(
                        "--segments needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job); elsewhere use --segment I/N".into(),
                    )
                })?;
            if index >= count {
                return Err(CliError::Usage(format!("JOB_COMPLETION_INDEX {index} is not below --segments {count}")));
            }
            Segment { index, count }
        }
        (None, None) => Segment::default(),
    })
}

/// `--http2`, `--http3`, `--http1.1` and `-m` as the protocol asked for; `-m` without
/// `--http2` or `--http3` is refused.
pub fn protocol(f: &HttpFlags) -> Result<ProtocolChoice, CliError> {
    if f.streams.max_streams.is_some() && !f.http2 && !f.http3 {
        return Err(CliError::Usage("-m (streams per connection) needs --http2 or --http3".into()));
    }
    if f.http1 {
        return Ok(ProtocolChoice::Exactly(Protocol::Http1));
    }
    if !f.http2 && !f.http3 {
        return Ok(ProtocolChoice::Negotiate);
    }
    let streams = streams(&f.streams)?;
    Ok(ProtocolChoice::Exactly(match f.http3 {
        true => Protocol::Http3 { streams },
        false => Protocol::Http2 { streams },
    }))
}

/// `-m` as a count of streams (1 without it).
pub fn streams(f: &StreamsFlag) -> Result<u32, CliError> {
    u32::try_from(f.max_streams.unwrap_or(1))
        .map_err(|_| CliError::Usage("-m is larger than a connection's streams can be".into()))
}

/// The files a test's requests come from (`--targets`, `--body-file`), each read once: a
/// comparison's two sides and a search's steps share what was read.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The targets file's requests.
    pub targets: Option<Vec<crate::config::TargetRequest>>,
    /// The body file's bytes.
    pub body: Option<Vec<u8>>,
}

impl Inputs {
    /// Reads the files `f` names.
    pub fn read(f: &RequestFlags) -> Result<Inputs, CliError> {
        let targets = match &f.targets {
            Some(path) => Some(crate::workload::targets::read(path).map_err(|e| CliError::Usage(e.to_string()))?),
            None => None,
        };
        let body = match &f.body_file {
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|source| CliError::Io { what: format!("cannot read {}", path.display()), source })?,
            ),
            None => None,
        };
        Ok(Inputs { targets, body })
    }

    /// The URL of the first target: it names the server when no URL does.
    pub fn first_url(&self) -> Option<&str> {
        self.targets.as_ref()?.first().map(|t| t.target.url.as_str())
    }
}

/// `-X`'s method, as sent: an HTTP token, upper-cased (lower case is the user's, not a
/// method of its own).
pub fn method(m: &str) -> Result<String, CliError> {
    if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_') {
        return Err(CliError::Usage(format!("invalid method '{m}': expected a word such as GET or POST")));
    }
    Ok(m.to_ascii_uppercase())
}

/// The request parts of `config`: `-H` headers, the targets, the method and the body.
fn requests(config: &mut Settings, r: RequestShape) -> Result<(), CliError> {
    let f = r.flags;
    config.headers = f.headers.iter().map(|h| parse_header(h)).collect::<Result<_, _>>()?;
    config.follow_redirects = u32::try_from(f.follow_redirects).unwrap_or(u32::MAX);
    if let Some(targets) = &r.inputs.targets {
        config.targets = targets.clone();
        config.targets_random = (f.targets_order == super::flags::TargetsOrder::Random).then_some(f.seed);
    }
    if let Some(m) = &f.method {
        config.method = method(m)?;
    }
    config.body = match &f.body {
        Some(text) => Some(text.clone().into_bytes()),
        None => r.inputs.body.clone(),
    };
    Ok(())
}

/// What each request is: the URL's (the config has its headers, method and body), or a script
/// with its `init` arguments (the URL first, as wrk passes it).
pub fn workload(f: &RequestFlags, url: &str, script_args: &[String]) -> Result<Workload, CliError> {
    match &f.script {
        Some(path) => {
            let mut args = vec![url.to_string()];
            args.extend(script_args.iter().cloned());
            Ok(Workload::Script { path: path.clone(), args })
        }
        None if !script_args.is_empty() => {
            Err(CliError::Usage("arguments after -- are for a script: give one with -s".into()))
        }
        None => Ok(Workload::Url),
    }
}

/// Where a single run's reports go. Progress lines print with `--interval`, in rate mode, and
/// with `--hdr-log` (which is written interval by interval).
pub fn outputs(config: &Config, run: &RunFlags) -> Outputs {
    let RunFlags { text, live, files, metrics, .. } = run;
    Outputs {
        text: TextOptions { latency: text.latency, uncorrected: text.uncorrected },
        progress: live.interval.is_some() || config.paced() || live.hdr_log.is_some(),
        quiet: live.quiet,
        json: files.json.clone().map(Output::of),
        html: files.html.clone(),
        hdr_log: live.hdr_log.clone(),
        command: command_line(),
        metrics: metrics.settings(config.segment.is_split().then_some(config.segment.index)),
    }
}

/// The command line, for the JSON.
pub fn command_line() -> Vec<String> {
    std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect()
}

/// Parses `--threshold` rules for the test `config` describes: a rule that needs rate mode
/// needs a schedule, one that needs a proxy test is refused unless `proxy`.
pub fn thresholds(exprs: &[String], config: &Config, proxy: bool) -> Result<Vec<Threshold>, CliError> {
    let thresholds: Vec<Threshold> = exprs
        .iter()
        .map(|t| Threshold::parse(t).map_err(|e| CliError::Usage(e.to_string())))
        .collect::<Result<_, _>>()?;
    for t in &thresholds {
        let missing = match t.needs() {
            Some(Needs::RateMode) => !config.paced(),
            Some(Needs::ProxyTest) => !proxy,
            None => false,
        };
        if let Some(needs) = t.needs().filter(|_| missing) {
            return Err(CliError::Usage(format!("threshold '{}' needs {needs}", t.text)));
        }
    }
    Ok(thresholds)
}

/// The thresholds and `--abort-on-fail` of a single run.
pub fn checks(run: &RunFlags, config: &Config, proxy: bool) -> Result<Checks, CliError> {
    Ok(Checks { thresholds: thresholds(&run.checks.thresholds, config, proxy)?, abort_on_fail: run.live.abort_on_fail })
}

/// Parses `Name: value` (or wrk's dropped `Name:value`).
pub fn parse_header(s: &str) -> Result<Header, CliError> {
    let bad = |why: &str| CliError::Usage(format!("invalid header '{s}': {why}"));
    let (name, value) = s.split_once(':').ok_or_else(|| bad("expected 'Name: value'"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(bad("the name is empty"));
    }
    if !name.bytes().all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b)) {
        return Err(bad("the name has characters not allowed in a header name"));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(bad("the value contains a line break"));
    }
    Ok(Header { name: name.to_string(), value: value.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_with_or_without_space() {
        let h = parse_header("X-Token:abc").unwrap();
        assert_eq!((h.name.as_str(), h.value.as_str()), ("X-Token", "abc"));
        let h = parse_header("Accept:  text/html ").unwrap();
        assert_eq!((h.name.as_str(), h.value.as_str()), ("Accept", "text/html"));
        let h = parse_header("X-Empty:").unwrap();
        assert_eq!(h.value, "");
        for bad in ["NoColon", ": v", "Bad Name: v"] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }
}
