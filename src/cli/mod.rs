//! The command line: raw flags ([`flags`]) become a validated [`Config`] here, and each mode
//! (load a URL, run the origin, run the demo) is wired from its parts. The binary's `main`
//! only prints the error this returns.

pub mod flags;
pub mod proxy;
pub mod units;

use std::ffi::OsString;
use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;

use crate::config::{Config, ConfigError, Output, Target, DEFAULT_INTERVAL};
use crate::engine::ScriptPlan;
use crate::engine::{self, EngineError};
use crate::http::request::Header;
use crate::origin::{self, OriginConfig, OriginError};
use crate::plan::Schedule;
use crate::report;
use crate::report::hdrlog::HdrLog;
use crate::script::{MainScript, ScriptError, ScriptSource, UrlParts};
use crate::stats::interval::IntervalRow;
use crate::stats::Summary;
use flags::{Cli, Command, CommonLoadFlags, DemoFlags, LoadFlags, OriginFlags};

// Exit codes: one table, mirrored in README.md ("Exit codes") and tested in
// tests/integration/exit_codes.rs.
/// The run executed and measured something.
pub const EXIT_OK: i32 = 0;
/// The run started but failed: a script error, or no connection ever succeeded.
pub const EXIT_FAILED: i32 = 1;
/// A usage or setup error: nothing was loaded.
pub const EXIT_USAGE: i32 = 2;
/// A second Ctrl-C ended strain at once, without a report (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;
/// The run executed but a threshold failed (k6's code; used by `--threshold`).
pub const EXIT_THRESHOLDS: i32 = 99;

/// Why strain could not do what was asked; every variant exits with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag or value is wrong.
    #[error("{0}")]
    Usage(String),
    /// The options do not form a valid test.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The test could not start.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The script does not load.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The origin server failed.
    #[error(transparent)]
    Origin(#[from] OriginError),
    /// A report or listener could not be set up.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        EXIT_USAGE
    }
}

/// Runs strain with these arguments (the first is the program name); returns the exit code.
pub fn run<I, T>(args: I) -> Result<i32, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            print!("{e}");
            return Ok(EXIT_OK);
        }
        Err(e) => return Err(CliError::Usage(one_line(&e.to_string()))),
    };
    match cli.command {
        Some(Command::Origin(f)) => run_origin(&f),
        Some(Command::Demo(f)) => run_demo(&f),
        Some(Command::Proxy(f)) => proxy::run(&f),
        None => run_load(&load_config(cli.load)?),
    }
}

/// clap's message without its "error: " prefix, usage and hint lines.
fn one_line(msg: &str) -> String {
    let first = msg.lines().find(|l| !l.trim().is_empty()).unwrap_or(msg);
    first.trim().trim_start_matches("error: ").to_string()
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

/// Builds and checks the parts of a config every load mode shares.
pub fn common_config(f: &CommonLoadFlags, url: &str) -> Result<Config, CliError> {
    let mut config = Config::new(Target::parse(url)?);
    config.connections = f.connections;
    config.threads = f.threads;
    config.duration = f.duration;
    config.timeout = f.timeout;
    config.latency = f.latency;
    config.insecure = f.insecure;
    config.json = f.json.clone().map(|p| if p.as_os_str() == "-" { Output::Stdout } else { Output::File(p) });
    config.uncorrected = f.uncorrected;
    config.interval = f.interval;
    config.hdr_log = f.hdr_log.clone();
    config.tick = f.tick;
    config.source_addrs = f.source_addrs.clone();
    config.schedule = match (f.rate, &f.stages) {
        (rate, Some(stages)) => {
            let schedule = Schedule::stages(rate.unwrap_or(0.0), &stages.0);
            config.duration = schedule.duration();
            Some(schedule)
        }
        (Some(rate), None) => Some(Schedule::constant(rate, config.duration)),
        (None, None) => None,
    };
    // The HdrHistogram log is written interval by interval.
    if (config.schedule.is_some() || config.hdr_log.is_some()) && config.interval.is_none() {
        config.interval = Some(DEFAULT_INTERVAL);
    }
    config.validate()?;
    Ok(config)
}

/// Turns load flags into a validated config.
pub fn load_config(f: LoadFlags) -> Result<Config, CliError> {
    let url = f.url.ok_or_else(|| CliError::Usage("a URL is required".into()))?;
    let mut config = common_config(&f.common, &url)?;
    config.headers = f.headers.iter().map(|h| parse_header(h)).collect::<Result<_, _>>()?;
    if let Some(path) = f.script {
        let mut args = vec![url.clone()];
        args.extend(f.script_args);
        config.script = Some((path, args));
    } else if !f.script_args.is_empty() {
        return Err(CliError::Usage("arguments after -- are for a script: give one with -s".into()));
    }
    Ok(config)
}

/// A flag set by the first Ctrl-C (and SIGTERM); a second Ctrl-C exits at once.
pub(crate) fn stop_flag() -> Result<Arc<AtomicBool>, CliError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    let io = |source| CliError::Io { what: "cannot install the Ctrl-C handler".into(), source };
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED, stop.clone()).map_err(io)?;
        signal_hook::flag::register(sig, stop.clone()).map_err(io)?;
    }
    Ok(stop)
}

/// Runs a load test and prints its reports.
pub fn run_load(config: &Config) -> Result<i32, CliError> {
    let stop = stop_flag()?;
    load_with(config, &stop)
}

/// A proxy test riding on a load run: its request plan and where the origin's counters are.
pub struct ProxyRun<'a> {
    /// Which documents, how asked.
    pub plan: crate::engine::proxy::ProxyPlan,
    /// The origin's counters.
    pub origin: proxy::OriginView<'a>,
}

fn load_with(config: &Config, stop: &AtomicBool) -> Result<i32, CliError> {
    load_run(config, stop, None)
}

/// Runs a load test (optionally a proxy test) and prints its reports.
pub fn load_run(config: &Config, stop: &AtomicBool, proxy_run: Option<ProxyRun>) -> Result<i32, CliError> {
    // A script that does not load stops strain here, before any load.
    let script = match &config.script {
        Some((path, args)) => {
            let source = ScriptSource::read(path.clone(), args.clone())?;
            let url = url_parts(config);
            let main = MainScript::load(&source, &url)?;
            Some((main, source, url))
        }
        None => None,
    };
    let mut plan = engine::prepare(config)?;
    let origin_view = match proxy_run {
        Some(p) => {
            plan = plan.with_proxy(p.plan, config.duration);
            Some(p.origin)
        }
        None => None,
    };
    let origin_start = origin_view.as_ref().and_then(|v| v.counts());
    let mut origin_last = origin_start;
    let mut proxy_rows: Vec<serde_json::Value> = Vec::new();
    let mut main_script = None;
    if let Some((mut main, source, url)) = script {
        let setups = match main.setup(config.threads, plan.addr()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("strain: {e}");
                return Ok(EXIT_FAILED);
            }
        };
        plan = plan.with_script(ScriptPlan { source, url, setups });
        main_script = Some(main);
    }
    // The text report moves to stderr when stdout carries JSON, so the two never mix.
    let json_to_stdout = config.json == Some(Output::Stdout);
    let mut text: Box<dyn Write> =
        if json_to_stdout { Box::new(std::io::stderr()) } else { Box::new(std::io::stdout()) };
    let mut hdr_log = match &config.hdr_log {
        Some(path) => Some(open_hdr_log(path)?),
        None => None,
    };
    let mut log_error = None;
    let mut live = |row: &IntervalRow, h: &hdrhistogram::Histogram<u64>| {
        match &origin_view {
            None => eprintln!("{}", report::live::line(row)),
            Some(view) => {
                let now = view.counts();
                let delta = now
                    .zip(origin_last)
                    .map(|(n, l)| (n.requests.saturating_sub(l.requests), n.connections.saturating_sub(l.connections)));
                if now.is_some() {
                    origin_last = now;
                }
                eprintln!("{}", report::proxy::line(row, delta.map(|d| d.0), delta.map(|d| d.1)));
                proxy_rows.push(serde_json::json!({
                    "start_s": row.start_s,
                    "origin_requests": delta.map(|d| d.0),
                    "origin_new_connections": delta.map(|d| d.1),
                    "hit_ratio": delta.and_then(|d| report::proxy::hit_ratio(row.requests - row.status_errors, d.0)),
                    "first_byte_mean_us": row.ttfb_mean_us,
                    "first_byte_p99_us": row.ttfb_p99_us,
                }));
            }
        }
        if let Some(log) = hdr_log.as_mut() {
            if let Err(e) = log.interval(row.start_s, row.length_s, h, None) {
                log_error.get_or_insert(e);
            }
        }
    };
    // The header follows what the scripts' init() printed, as in wrk.
    let mut header = || {
        let _ = text.write_all(report::text::header(config).as_bytes());
        let _ = text.flush();
    };
    let out = engine::run(&plan, config, stop, &mut header, &mut live)?;
    if let Some(e) = log_error.or_else(|| hdr_log.as_mut().and_then(|l| l.flush().err())) {
        eprintln!("strain: writing the HdrHistogram log failed: {e}");
    }
    let summary = Summary::new(&out.recorders, out.elapsed, out.started);
    let mut code = EXIT_OK;
    // A script error ends the run, often before any connection: that error alone is the news.
    if summary.total.connections == 0 && out.script_error.is_none() {
        let why = summary.total.first_connect_error.as_deref().unwrap_or("no attempt finished");
        eprintln!("strain: no connection to {} succeeded: {why}", out.addr);
        code = EXIT_FAILED;
    }
    if let Some(advice) = report::text::port_range_advice(&summary, config, out.addr) {
        eprintln!("{advice}");
    }
    let _ = text.write_all(report::text::body(&summary, config).as_bytes());
    let mut proxy_json = None;
    if let Some(view) = &origin_view {
        let origin = view
            .counts()
            .zip(origin_start)
            .map(|(n, s)| (n.requests.saturating_sub(s.requests), n.connections.saturating_sub(s.connections)));
        let t = &summary.total;
        let content = summary.errors(crate::stats::ErrorKind::Content);
        let lines =
            report::proxy::summary(t.requests, t.status_errors, origin, t.aborted, content, &t.content_failures);
        let _ = text.write_all(lines.as_bytes());
        proxy_json = Some(serde_json::json!({
            "hit_ratio": origin.and_then(|o| report::proxy::hit_ratio(t.requests - t.status_errors, o.0)),
            "origin_requests": origin.map(|o| o.0),
            "origin_connections": origin.map(|o| o.1),
            "aborted": t.aborted,
            "arrivals_dropped": t.arrivals_dropped,
            "content_failures": t.content_failures,
            "first_byte_us": report::json::latency_value(&t.ttfb_us),
            "intervals": proxy_rows,
        }));
    }
    let _ = text.flush();
    if let Some(e) = &out.script_error {
        eprintln!("strain: {e}");
        code = EXIT_FAILED;
    }
    if let Some(main) = &main_script {
        for (i, globals) in out.globals.into_iter().enumerate() {
            main.thread_ended(i, globals);
        }
        if out.script_error.is_none() {
            if let Err(e) = main.done(&summary) {
                eprintln!("strain: {e}");
                code = EXIT_FAILED;
            }
        }
    }
    if let Some(dest) = &config.json {
        let json = report::json::render_with(&summary, config, &out.series, proxy_json);
        match dest {
            Output::Stdout => {
                let _ = std::io::stdout().write_all(json.as_bytes());
            }
            Output::File(path) => std::fs::write(path, json)
                .map_err(|source| CliError::Io { what: format!("cannot write {}", path.display()), source })?,
        }
    }
    Ok(code)
}

/// The URL's parts as a script's `wrk` table shows them.
fn url_parts(config: &Config) -> UrlParts {
    let t = &config.target;
    UrlParts {
        scheme: match t.scheme {
            crate::config::Scheme::Http => "http".into(),
            crate::config::Scheme::Https => "https".into(),
        },
        host: t.host.clone(),
        port: t.explicit_port.then_some(t.port),
        path: t.path.clone(),
        host_header: t.host_header(),
        headers: config.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
    }
}

/// Creates the `--hdr-log` file before the run, so a bad path is an error before any load.
fn open_hdr_log(path: &std::path::Path) -> Result<HdrLog<std::io::BufWriter<std::fs::File>>, CliError> {
    let io = |source| CliError::Io { what: format!("cannot write {}", path.display()), source };
    let file = std::fs::File::create(path).map_err(io)?;
    HdrLog::new(std::io::BufWriter::new(file), std::time::SystemTime::now()).map_err(io)
}

fn run_origin(f: &OriginFlags) -> Result<i32, CliError> {
    let mut config = OriginConfig {
        body_size: f.body_size,
        status: f.status,
        stall_at: f.stall_at,
        stall_for: f.stall_for.unwrap_or_default(),
        keepalive: f.keepalive as u64,
        seed: f.seed,
        header_timeout: Some(f.header_timeout),
        send_timeout: Some(f.send_timeout),
        ..OriginConfig::default()
    };
    f.documents.apply(&mut config)?;
    crate::net::raise_file_limit();
    let listener = TcpListener::bind(f.listen)
        .map_err(|source| CliError::Io { what: format!("cannot listen on {}", f.listen), source })?;
    let addr =
        listener.local_addr().map_err(|source| CliError::Io { what: "cannot read the address".into(), source })?;
    if let Some(t) = f.threads {
        config.threads = t.max(1);
    }
    let stop = stop_flag()?;
    println!("strain origin listening on http://{addr}/");
    let _ = std::io::stdout().flush();
    let stats = origin::run(listener, &config, &stop)?;
    println!(
        "strain origin served {} requests on {} connections ({} bytes in, {} bytes out)",
        stats.requests, stats.connections, stats.bytes_read, stats.bytes_written
    );
    // On stderr: the test harness reads exactly four numbers from stdout after the first line.
    eprintln!("strain origin: 200 {}, 304 {}, aborted {}", stats.ok, stats.not_modified, stats.aborted);
    Ok(EXIT_OK)
}

fn run_demo(f: &DemoFlags) -> Result<i32, CliError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|source| CliError::Io { what: "cannot listen on loopback".into(), source })?;
    let addr =
        listener.local_addr().map_err(|source| CliError::Io { what: "cannot read the address".into(), source })?;
    let origin_config = OriginConfig { threads: 1, ..OriginConfig::default() };
    let mut config = Config::new(Target::parse(&format!("http://{addr}/"))?);
    config.duration = f.duration;
    config.latency = true;
    config.threads = 1;
    config.validate()?;
    let stop = stop_flag()?;
    let origin_stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let server = s.spawn(|| origin::run(listener, &origin_config, &origin_stop));
        let result = load_with(&config, &stop);
        origin_stop.store(true, Ordering::Relaxed);
        let served = server.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        eprintln!("origin saw {} requests on {} connections", served.requests, served.connections);
        result
    })
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

    #[test]
    fn clap_errors_become_one_line() {
        let msg = "error: invalid value 'x' for '-c <N>': bad\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(msg), "invalid value 'x' for '-c <N>': bad");
    }
}
