//! The command line: raw flags ([`flags`]) become a validated [`Config`] here, and each mode
//! (load a URL, run the origin, run the demo) is wired from its parts. The binary's `main`
//! only prints the error this returns.

pub mod compare;
pub mod find_max;
pub mod flags;
pub mod k8s;
pub mod merge;
pub mod proxy;
pub mod units;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Parser;

use crate::config::{Config, ConfigError, Output, Target, DEFAULT_INTERVAL};
use crate::http::request::Header;
use crate::origin::{self, OriginConfig, OriginError};
use crate::plan::Schedule;
use crate::report;
use crate::report::hdrlog::HdrLog;
use crate::run::proxy::ProxyRow;
use crate::run::{Failure, Observer, OriginPlacement, RunConfig, RunError, RunResult, Workload};
use crate::stats::interval::IntervalRow;
use crate::verdict::{Needs, Threshold};
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
/// The run executed but a threshold failed (k6's code).
pub const EXIT_THRESHOLDS: i32 = 99;
/// `strain compare` found a significant regression beyond `--fail-on-regression`. 98, next to
/// 99: both mean "measured fine, judged failing", so CI can tell them from 1 and 2 (could not
/// run) with one test (>= 98), and low codes such as 3 stay free for failures to run.
pub const EXIT_REGRESSION: i32 = 98;

/// Why strain could not do what was asked; every variant exits with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag or value is wrong.
    #[error("{0}")]
    Usage(String),
    /// The options do not form a valid test.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The test could not run.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The origin server failed.
    #[error(transparent)]
    Origin(#[from] OriginError),
    /// Results cannot be merged.
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),
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
            // --help and --version; a closed pipe (`strain --help | head`) is not an error.
            let _ = write!(std::io::stdout(), "{e}");
            return Ok(EXIT_OK);
        }
        Err(e) => return Err(CliError::Usage(one_line(&e.to_string()))),
    };
    match cli.command {
        Some(Command::Origin(f)) => run_origin(&f),
        Some(Command::Demo(f)) => run_demo(&f),
        Some(Command::Proxy(f)) => proxy::run(&f),
        Some(Command::Report(f)) => run_report(&f),
        Some(Command::Compare(f)) => compare::run(&f),
        Some(Command::FindMax(f)) => find_max::run(&f),
        Some(Command::Merge(f)) => merge::run(&f),
        Some(Command::K8sJob(f)) => k8s::run(&f),
        None => {
            let (test, checks) = load_config(cli.load)?;
            run_load(test, &checks)
        }
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
    config.command = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    config.connections = f.connections;
    config.threads = f.threads;
    config.duration = f.duration.0;
    config.timeout = f.timeout.0;
    config.latency = f.latency;
    config.insecure = f.insecure;
    config.json = f.json.clone().map(|p| if p.as_os_str() == "-" { Output::Stdout } else { Output::File(p) });
    config.uncorrected = f.uncorrected;
    config.interval = f.interval;
    config.quiet = f.quiet;
    config.hdr_log = f.hdr_log.clone();
    config.html = f.html.clone();
    config.tick = f.tick.0;
    config.source_addrs = f.source_addrs.clone();
    config.segment = match (f.segment, f.segments) {
        (Some((index, count)), _) => crate::config::Segment { index, count },
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
            crate::config::Segment { index, count }
        }
        (None, None) => crate::config::Segment::default(),
    };
    if let Some(at) = f.start_at {
        if let Ok(late) = std::time::SystemTime::now().duration_since(at) {
            eprintln!(
                "strain: --start-at was {:.1}s ago: starting now, out of step with the other segments",
                late.as_secs_f64()
            );
        }
        config.start_at = Some(at);
    }
    config.protocol = protocol(f.http2, f.http1, f.max_streams)?;
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

/// `--http2`, `--http1.1` and `-m` as the protocol asked for; `-m` without `--http2` is refused.
pub(crate) fn protocol(
    http2: bool,
    http1: bool,
    max_streams: Option<usize>,
) -> Result<crate::config::ProtocolChoice, CliError> {
    use crate::config::ProtocolChoice;
    if max_streams.is_some() && !http2 {
        return Err(CliError::Usage("-m (streams per connection) needs --http2".into()));
    }
    if http1 {
        return Ok(ProtocolChoice::Http1);
    }
    if !http2 {
        return Ok(ProtocolChoice::Negotiate);
    }
    let streams = u32::try_from(max_streams.unwrap_or(1))
        .map_err(|_| CliError::Usage("-m is larger than HTTP/2 allows".into()))?;
    Ok(ProtocolChoice::Http2 { streams })
}

/// Pass/fail rules judged on a run's result, and whether to stop the run once one must fail.
#[derive(Debug, Default)]
pub struct Checks {
    /// `--threshold` rules.
    pub thresholds: Vec<Threshold>,
    /// `--abort-on-fail`.
    pub abort_on_fail: bool,
}

/// Parses the thresholds for the test `config` describes; a rule that needs rate mode needs a
/// schedule, one that needs a proxy test is refused unless `proxy`.
pub fn checks(f: &CommonLoadFlags, config: &Config, proxy: bool) -> Result<Checks, CliError> {
    Ok(Checks { thresholds: thresholds(&f.thresholds, config, proxy)?, abort_on_fail: f.abort_on_fail })
}

/// Parses `--threshold` expressions for the test `config` describes (see [`checks`]).
pub(crate) fn thresholds(exprs: &[String], config: &Config, proxy: bool) -> Result<Vec<Threshold>, CliError> {
    let thresholds: Vec<Threshold> = exprs
        .iter()
        .map(|t| Threshold::parse(t).map_err(|e| CliError::Usage(e.to_string())))
        .collect::<Result<_, _>>()?;
    for t in &thresholds {
        let missing = match t.needs() {
            Some(Needs::RateMode) => config.schedule.is_none(),
            Some(Needs::ProxyTest) => !proxy,
            None => false,
        };
        if let Some(needs) = t.needs().filter(|_| missing) {
            return Err(CliError::Usage(format!("threshold '{}' needs {needs}", t.text)));
        }
    }
    Ok(thresholds)
}

/// Turns load flags into a validated test and its checks.
pub fn load_config(f: LoadFlags) -> Result<(RunConfig, Checks), CliError> {
    let url = f.url.ok_or_else(|| CliError::Usage("a URL is required".into()))?;
    let mut config = common_config(&f.common, &url)?;
    let checks = checks(&f.common, &config, false)?;
    config.headers = f.headers.iter().map(|h| parse_header(h)).collect::<Result<_, _>>()?;
    let workload = match f.script {
        Some(path) => {
            let mut args = vec![url.clone()];
            args.extend(f.script_args);
            Workload::Script { path, args }
        }
        None if !f.script_args.is_empty() => {
            return Err(CliError::Usage("arguments after -- are for a script: give one with -s".into()))
        }
        None => Workload::Url,
    };
    Ok((RunConfig { load: config, workload, origin: OriginPlacement::Elsewhere }, checks))
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
pub fn run_load(test: RunConfig, checks: &Checks) -> Result<i32, CliError> {
    let stop = stop_flag()?;
    run_and_report(test, checks, &stop).map(|(code, _)| code)
}

/// Prints a run as it goes: wrk's header once load starts, a line per interval (with
/// `--interval`, rate mode and proxy tests), the status line on a terminal, the HdrHistogram
/// log, and the reports at the end.
struct Printer<'a> {
    config: &'a Config,
    /// wrk's text; on stderr when stdout carries the JSON, so the two never mix.
    text: Box<dyn Write>,
    hdr_log: Option<HdrLog<std::io::BufWriter<std::fs::File>>>,
    log_error: Option<std::io::Error>,
    /// The thresholds, and for `--abort-on-fail` the stop flag to set and what the rows so far
    /// add up to.
    checks: &'a Checks,
    stop: &'a AtomicBool,
    budget: crate::verdict::Budget,
    /// The thresholds judged at the end.
    outcomes: Vec<crate::verdict::Outcome>,
    /// The line redrawn each interval when stderr is a terminal (not with `--quiet`). Plain
    /// `--interval` lines and messages scroll above it; it is erased before the report.
    status: Option<report::live::StatusLine>,
}

impl Printer<'_> {
    /// Prints a line on stderr during the run, above the status line (redrawn after it).
    fn say(&mut self, line: &str) {
        if let Some(status) = self.status.as_mut() {
            status.clear();
        }
        eprintln!("{line}");
    }
}

impl Observer for Printer<'_> {
    fn started(&mut self) {
        // The header follows what the scripts' init() printed, as in wrk.
        let _ = self.text.write_all(report::text::header(self.config).as_bytes());
        let _ = self.text.flush();
    }

    fn interval(&mut self, row: &IntervalRow, latency: &hdrhistogram::Histogram<u64>, proxy: Option<&ProxyRow>) {
        if self.config.interval.is_some() {
            self.say(&match proxy {
                None => report::live::line(row),
                Some(p) => report::proxy::line(row, p),
            });
        }
        if let Some(log) = self.hdr_log.as_mut() {
            if let Err(e) = log.interval(row.start_s, row.length_s, latency, None) {
                self.log_error.get_or_insert(e);
            }
        }
        if self.checks.abort_on_fail && !self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(t) = self.budget.add(row, &self.checks.thresholds) {
                let text = format!("strain: threshold '{}' can no longer pass: stopping the run", t.text);
                self.say(&text);
                self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        if let Some(status) = self.status.as_mut() {
            let total_s = self.config.duration.as_secs_f64();
            status.draw(&report::live::status(
                row,
                total_s,
                proxy.map(|p| p.hit_ratio),
                report::live::StatusLine::width(),
            ));
        }
    }

    fn finished(&mut self, result: &RunResult) {
        // Nothing more is drawn: what follows (report, JSON, script output) starts on a clean line.
        if let Some(mut status) = self.status.take() {
            status.clear();
        }
        if let Some(e) = self.log_error.take().or_else(|| self.hdr_log.as_mut().and_then(|l| l.flush().err())) {
            eprintln!("strain: writing the HdrHistogram log failed: {e}");
        }
        if let Some(Failure::NothingConnected { why }) = &result.failure {
            eprintln!("strain: no connection to {} succeeded: {why}", result.addr);
        }
        if let Some(advice) = report::text::port_range_advice(&result.summary, self.config, result.addr) {
            eprintln!("{advice}");
        }
        let _ = self.text.write_all(report::text::body(&result.summary, self.config, result.protocol).as_bytes());
        if let Some(p) = &result.proxy {
            let _ = self.text.write_all(report::proxy::summary(&result.summary.total, p).as_bytes());
        }
        self.outcomes = self.checks.thresholds.iter().map(|t| t.judge(result)).collect();
        for o in &self.outcomes {
            let _ = writeln!(self.text, "{}", report::text::outcome(o));
        }
        let _ = self.text.flush();
    }
}

/// Runs one test, printing as it goes, then writes the JSON; returns the exit code and the result.
pub fn run_and_report(test: RunConfig, checks: &Checks, stop: &AtomicBool) -> Result<(i32, RunResult), CliError> {
    let config = test.load.clone();
    let text: Box<dyn Write> =
        if config.json == Some(Output::Stdout) { Box::new(std::io::stderr()) } else { Box::new(std::io::stdout()) };
    let hdr_log = match &config.hdr_log {
        Some(path) => Some(open_hdr_log(path)?),
        None => None,
    };
    let budget = crate::verdict::Budget::new(&config);
    let status = (!config.quiet && std::io::stderr().is_terminal()).then(report::live::StatusLine::new);
    let mut printer =
        Printer { config: &config, text, hdr_log, log_error: None, checks, stop, budget, outcomes: Vec::new(), status };
    let result = crate::run::run(test, stop, &mut printer)?;
    if let Some(Failure::Script(e)) = &result.failure {
        eprintln!("strain: {e}");
    }
    let json = report::json::render_result(&result, &config, &printer.outcomes);
    write_result(&json, &config)?;
    let code = if !result.succeeded() {
        EXIT_FAILED
    } else if printer.outcomes.iter().any(|o| !o.passed) {
        EXIT_THRESHOLDS
    } else {
        EXIT_OK
    };
    Ok((code, result))
}

/// Writes a result's JSON and HTML page where `config` asks for them.
pub(crate) fn write_result(json: &str, config: &Config) -> Result<(), CliError> {
    if let Some(path) = &config.html {
        // The page is drawn from the JSON, as `strain report` draws saved results.
        let doc: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        let label = config.target.url.clone();
        write_file(path, &report::html::render(&[(label, doc)]))?;
    }
    match &config.json {
        Some(Output::Stdout) if config.segment.is_split() => {
            // A segment's result on stdout is one line: `kubectl logs` of N pods is then N JSON
            // lines (between the reports' text), which `strain merge -` reads.
            let line =
                serde_json::from_str::<serde_json::Value>(json).map_or_else(|_| json.to_string(), |v| v.to_string());
            let _ = writeln!(std::io::stdout(), "{line}");
        }
        Some(Output::Stdout) => {
            let _ = std::io::stdout().write_all(json.as_bytes());
        }
        Some(Output::File(path)) => write_file(path, json)?,
        None => {}
    }
    Ok(())
}

/// Writes a report file.
pub(crate) fn write_file(path: &std::path::Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|source| CliError::Io { what: format!("cannot write {}", path.display()), source })
}

/// `strain report`: saved results drawn as one page.
fn run_report(f: &flags::ReportFlags) -> Result<i32, CliError> {
    if f.labels.len() > f.results.len() {
        return Err(CliError::Usage(format!("{} labels for {} results", f.labels.len(), f.results.len())));
    }
    let mut results = Vec::with_capacity(f.results.len());
    for (i, path) in f.results.iter().enumerate() {
        let label = f.labels.get(i).cloned().unwrap_or_else(|| file_name(path));
        results.push((label, load_json(path, |d| is_result(d) || is_search(d), "a strain result or search (--json)")?));
    }
    // A search's page has its own layout (rate on the x axis), so it cannot share one with runs.
    let page = match results.as_slice() {
        [(_, doc)] if is_search(doc) => report::html::render_search(doc),
        _ if results.iter().any(|(_, d)| is_search(d)) => {
            return Err(CliError::Usage(format!(
                "a find-max search gets a page of its own: give its JSON alone ({} files given)",
                results.len()
            )))
        }
        _ => report::html::render(&results),
    };
    write_file(&f.output, &page)?;
    Ok(EXIT_OK)
}

/// A path's file name, for labels.
pub(crate) fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Reads a result written with `--json`, for the HTML page.
pub(crate) fn load_result(path: &std::path::Path) -> Result<serde_json::Value, CliError> {
    load_json(path, is_result, "a strain result (--json)")
}

/// Whether a document is one run's result.
fn is_result(d: &serde_json::Value) -> bool {
    d.get("intervals").is_some()
}

/// Whether a document is a capacity search (`find-max --json`).
fn is_search(d: &serde_json::Value) -> bool {
    d["kind"] == "find-max"
}

/// Reads a JSON document strain wrote, refusing one that `accept` does not take for `what`.
fn load_json(
    path: &std::path::Path,
    accept: impl Fn(&serde_json::Value) -> bool,
    what: &str,
) -> Result<serde_json::Value, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| CliError::Io { what: format!("cannot read {}", path.display()), source })?;
    serde_json::from_str(&text)
        .ok()
        .filter(|d: &serde_json::Value| d.get("schema_version").is_some() && accept(d))
        .ok_or_else(|| CliError::Usage(format!("{} is not {what}", path.display())))
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
        header_timeout: Some(f.header_timeout.0),
        send_timeout: Some(f.send_timeout.0),
        ..OriginConfig::default()
    };
    f.documents.apply(&mut config)?;
    config.service = f.service()?;
    config.tls = f.tls().map(Box::new);
    if let Some(tls) = &config.tls {
        tls.check()?;
    }
    crate::net::raise_file_limit();
    let (listener, addr) = bind(f.listen)?;
    if let Some(t) = f.threads {
        config.threads = t.max(1);
    }
    let stop = stop_flag()?;
    let scheme = if config.tls.is_some() { "https" } else { "http" };
    println!("strain origin listening on {scheme}://{addr}/");
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
    if f.find_max {
        return demo_find_max();
    }
    let (listener, addr) = bind("127.0.0.1:0".parse().map_err(|_| CliError::Usage("bad address".into()))?)?;
    let mut config = Config::new(Target::parse(&format!("http://{addr}/"))?);
    config.duration = f.duration.0;
    config.latency = true;
    config.threads = 1;
    let origin =
        OriginPlacement::InProcess { listener, config: OriginConfig { threads: 1, ..OriginConfig::default() } };
    let stop = stop_flag()?;
    let test = RunConfig { load: config, workload: Workload::Url, origin };
    let (code, result) = run_and_report(test, &Checks::default(), &stop)?;
    if let Some(served) = result.origin_served {
        eprintln!("origin saw {} requests on {} connections", served.requests, served.connections);
    }
    Ok(code)
}

/// `strain demo --find-max`: the capacity search against an origin whose capacity is known
/// (8 workers of 4 ms: 2,000 requests/s), with short steps so it ends within a minute.
fn demo_find_max() -> Result<i32, CliError> {
    let service = origin::Service { time: std::time::Duration::from_millis(4), workers: 8, dist: Default::default() };
    let capacity = f64::from(service.workers) / service.time.as_secs_f64();
    let (listener, addr) = bind("127.0.0.1:0".parse().map_err(|_| CliError::Usage("bad address".into()))?)?;
    let mut load = Config::new(Target::parse(&format!("http://{addr}/"))?);
    load.connections = crate::defaults::SEARCH_CONNECTIONS;
    load.threads = 1;
    let flags = flags::SearchFlags {
        slo: vec!["p99<100ms".into()],
        start: None,
        max: None,
        precision: crate::defaults::SEARCH_PRECISION,
        warmup: units::Dur(std::time::Duration::from_secs(1)),
        step: units::Dur(std::time::Duration::from_secs(2)),
        watch: Vec::new(),
    };
    let search = find_max::search_config(&flags, load, Workload::Url)?;
    println!(
        "The origin serves each request with one of {} workers for {:?}: its capacity is {} requests/s.",
        service.workers,
        service.time,
        report::search::rate(capacity)
    );
    let origin_config = OriginConfig { threads: 1, service: Some(service), ..OriginConfig::default() };
    let stop = stop_flag()?;
    find_max::search_with_origin(&search, &stop, listener, &origin_config, None, None)
}

/// Binds a listener and reads back its address (port 0 picks a free one).
pub(crate) fn bind(addr: std::net::SocketAddr) -> Result<(TcpListener, std::net::SocketAddr), CliError> {
    let listener =
        TcpListener::bind(addr).map_err(|source| CliError::Io { what: format!("cannot listen on {addr}"), source })?;
    let bound =
        listener.local_addr().map_err(|source| CliError::Io { what: "cannot read the address".into(), source })?;
    Ok((listener, bound))
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
