//! A run on the command line: [`run_and_report`] runs one test with a [`Printer`] observer that
//! prints as it goes (wrk's header once load starts, a line per interval, the status line on a
//! terminal, the HdrHistogram log, the report and the thresholds' outcomes at the end), then
//! writes the result files. The verdicts are the run's; this only prints them.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::{CliError, EXIT_FAILED, EXIT_OK, EXIT_THRESHOLDS};
use crate::config::Config;
use crate::report::hdrlog::HdrLog;
use crate::report::{self, Output, Outputs};
use crate::result::RunDoc;
use crate::run::proxy::ProxyRow;
use crate::run::{Failure, Observer, RunConfig, RunResult};
use crate::stats::interval::{IntervalRow, Latencies};
use crate::verdict::Threshold;

/// Prints a run as it goes: wrk's header once load starts, a line per interval (with
/// `--interval`, rate mode and proxy tests; rows of an interval chosen shorter than a second
/// are joined into a line a second), the status line on a terminal, the HdrHistogram log (every
/// row), and the reports at the end.
struct Printer<'a> {
    config: &'a Config,
    outputs: &'a Outputs,
    /// wrk's text; on stderr when stdout carries the JSON, so the two never mix.
    text: Box<dyn Write>,
    hdr_log: Option<HdrLog<std::io::BufWriter<std::fs::File>>>,
    log_error: Option<std::io::Error>,
    /// The line redrawn each interval (or joined rows) when stderr is a terminal (not with
    /// `--quiet`). Plain
    /// `--interval` lines and messages scroll above it; it is erased before the report.
    status: Option<report::live::StatusLine>,
    /// Rows waiting to be shown as one, when the interval was chosen automatically and is
    /// shorter than [`crate::defaults::PROGRESS_SPAN`]: a line per second reads as before and
    /// the status line is not redrawn many times a second.
    joining: Option<Joining>,
    /// Live metrics, fed each row.
    metrics: Option<crate::metrics::Exporter>,
    /// Requests sent so far (the status line's bar with `-n`).
    sent: u64,
}

/// Consecutive rows (and their proxy columns) to be shown as one line.
struct Joining {
    rows: Vec<IntervalRow>,
    proxy: Vec<ProxyRow>,
    /// The rows' latency histograms added up.
    merged: hdrhistogram::Histogram<u64>,
}

impl Joining {
    /// Joining for the run `config` describes, if its rows are to be joined: an interval
    /// chosen automatically, shorter than a line's span.
    fn of(config: &Config) -> Option<Joining> {
        let span = crate::defaults::PROGRESS_SPAN;
        (config.interval.is_none() && config.series_interval() < span).then(|| Joining {
            rows: Vec::new(),
            proxy: Vec::new(),
            merged: crate::stats::latency_histogram(),
        })
    }

    /// Adds a row; returns the joined row (and proxy columns) once the rows cover a span.
    fn push(
        &mut self,
        row: &IntervalRow,
        latency: &hdrhistogram::Histogram<u64>,
        proxy: Option<&ProxyRow>,
    ) -> Option<(IntervalRow, Option<ProxyRow>)> {
        self.rows.push(row.clone());
        self.proxy.extend(proxy.cloned());
        // Every row's histogram has the same bounds as `merged`: adding cannot fail.
        let _ = self.merged.add(latency);
        let from = self.rows[0].start_s;
        row.closes_span(from, crate::defaults::PROGRESS_SPAN).then(|| self.take()).flatten()
    }

    /// The rows so far joined, and none left; `None` when there were none.
    fn take(&mut self) -> Option<(IntervalRow, Option<ProxyRow>)> {
        if self.rows.is_empty() {
            return None;
        }
        let row = IntervalRow::combine(&self.rows, &self.merged);
        let proxy = (!self.proxy.is_empty()).then(|| ProxyRow::combine(&self.proxy, &self.rows));
        self.rows.clear();
        self.proxy.clear();
        self.merged.reset();
        Some((row, proxy))
    }
}

impl Printer<'_> {
    /// Prints a line on stderr during the run, above the status line (redrawn after it).
    fn say(&mut self, line: &str) {
        if let Some(status) = self.status.as_mut() {
            status.clear();
        }
        eprintln!("{line}");
    }

    /// Shows a row (one interval, or several joined): its progress line when lines are printed,
    /// and the status line.
    fn show(&mut self, row: &IntervalRow, proxy: Option<&ProxyRow>) {
        if self.outputs.progress {
            self.say(&progress_line(row, proxy));
        }
        if let Some(status) = self.status.as_mut() {
            let goal = match (self.config.requests, self.config.time_bound) {
                (Some(total), false) => report::live::Goal::Requests { sent: self.sent, total },
                _ => report::live::Goal::Time(self.config.duration.as_secs_f64()),
            };
            status.draw(&report::live::status(
                row,
                goal,
                proxy.map(|p| p.hit_ratio),
                report::live::StatusLine::width(),
            ));
        }
    }
}

/// A row's progress line, with the proxy columns in a proxy test.
fn progress_line(row: &IntervalRow, proxy: Option<&ProxyRow>) -> String {
    match proxy {
        None => report::live::line(row),
        Some(p) => report::proxy::line(row, p),
    }
}

impl Observer for Printer<'_> {
    fn shared_cpus(&mut self, shared: &crate::net::host::SharedCpus) {
        let target = match &self.config.unix_socket {
            Some(path) => format!("unix:{}", path.display()),
            None => self.config.target.url.clone(),
        };
        self.say(&shared.warning(&target));
    }

    fn started(&mut self) {
        // The header follows what the scripts' init() printed, as in wrk.
        let header = match &self.config.replay {
            Some(note) => report::replay::header(
                note,
                &self.config.target.url,
                self.config.threads,
                self.config.segment_connections(),
            ),
            None => report::text::header(self.config),
        };
        let _ = self.text.write_all(header.as_bytes());
        let _ = self.text.flush();
    }

    fn interval(&mut self, row: &IntervalRow, latency: Latencies<'_>, proxy: Option<&ProxyRow>) {
        self.sent += row.sent;
        if let Some(m) = self.metrics.as_mut() {
            m.row(row, latency, proxy);
        }
        if let Some(log) = self.hdr_log.as_mut() {
            if let Err(e) = log.interval(row.start_s, row.length_s, latency.corrected, None) {
                self.log_error.get_or_insert(e);
            }
        }
        match self.joining.as_mut() {
            None => self.show(row, proxy),
            Some(j) => {
                if let Some((row, proxy)) = j.push(row, latency.corrected, proxy) {
                    self.show(&row, proxy.as_ref());
                }
            }
        }
    }

    fn aborting(&mut self, t: &Threshold) {
        self.say(&format!("strain: threshold '{}' can no longer pass: stopping the run", t.text));
    }

    fn finished(&mut self, result: &RunResult) {
        if let Some(m) = self.metrics.as_mut() {
            m.finished(result);
        }
        // Rows that did not make a whole line make a last, shorter one, as a last short
        // interval does.
        if let Some((row, proxy)) = self.joining.as_mut().and_then(Joining::take) {
            if self.outputs.progress {
                self.say(&progress_line(&row, proxy.as_ref()));
            }
        }
        // Nothing more is drawn: what follows (report, JSON, script output) starts on a clean line.
        if let Some(mut status) = self.status.take() {
            status.clear();
        }
        if let Some(e) = self.log_error.take().or_else(|| self.hdr_log.as_mut().and_then(|l| l.flush().err())) {
            eprintln!("strain: writing the HdrHistogram log failed: {e}");
        }
        if let Some(Failure::NothingConnected { why }) = &result.failure {
            let to = match (&self.config.unix_socket, self.config.origins().len()) {
                (Some(path), _) => path.display().to_string(),
                (None, 1) => result.addr.to_string(),
                (None, n) => format!("any of the targets' {n} servers"),
            };
            eprintln!("strain: no connection to {to} succeeded: {why}");
        }
        if let Some(advice) = report::text::port_range_advice(&result.summary, self.config, result.addr) {
            eprintln!("{advice}");
        }
        let _ = self
            .text
            .write_all(report::text::body(&result.summary, self.config, result.protocol, self.outputs.text).as_bytes());
        if let Some(p) = &result.proxy {
            let _ = self.text.write_all(report::proxy::summary(&result.summary.total, p).as_bytes());
        }
        if let (Some(note), Some(fed)) = (&self.config.replay, &result.replay) {
            let _ = self.text.write_all(report::replay::block(note, fed, &result.summary).as_bytes());
        }
        for o in &result.outcomes {
            let _ = writeln!(self.text, "{}", report::text::outcome(o));
        }
        let _ = self.text.flush();
    }
}

/// Runs one test, printing as it goes, then writes the result files; returns the exit code and
/// the result.
pub fn run_and_report(test: RunConfig, outputs: &Outputs, stop: &AtomicBool) -> Result<(i32, RunResult), CliError> {
    check_outputs(outputs)?;
    let config = test.load.clone();
    let text = text_stream(outputs.json.as_ref());
    let hdr_log = match &outputs.hdr_log {
        Some(path) => Some(open_hdr_log(path)?),
        None => None,
    };
    let status = (!outputs.quiet && std::io::stderr().is_terminal()).then(report::live::StatusLine::new);
    // Nothing to show, nothing to join.
    let joining = Joining::of(&config).filter(|_| outputs.progress || status.is_some());
    let metrics = start_metrics(&outputs.metrics, config.warmup.as_secs_f64())?;
    let mut printer =
        Printer { config: &config, outputs, text, hdr_log, log_error: None, status, joining, metrics, sent: 0 };
    let result = crate::run::run(test, stop, &mut printer)?;
    let metrics = printer.metrics.take();
    if let Some(Failure::Script(e)) = &result.failure {
        eprintln!("strain: {e}");
    }
    write_result(&report::json::document(&result, &config, &outputs.command), &config, outputs)?;
    close_metrics(metrics);
    Ok((exit_code(&result), result))
}

/// Starts the metrics exporter when `settings` ask for one; a port chosen by the system is
/// printed, so a scraper can be pointed at it.
pub(crate) fn start_metrics(
    settings: &crate::metrics::Settings,
    warmup_s: f64,
) -> Result<Option<crate::metrics::Exporter>, CliError> {
    if !settings.wanted() {
        return Ok(None);
    }
    let exporter = crate::metrics::Exporter::start(settings, warmup_s)?;
    if let (Some(asked), Some(addr)) = (settings.listen, exporter.addr()) {
        if asked.port() == 0 {
            eprintln!("strain: metrics at http://{addr}/metrics");
        }
    }
    Ok(Some(exporter))
}

/// After the test: the exporter's last push and linger, and its one line when remote write
/// dropped samples.
pub(crate) fn close_metrics(metrics: Option<crate::metrics::Exporter>) {
    if let Some(line) = metrics.and_then(crate::metrics::Exporter::close) {
        eprintln!("{line}");
    }
}

/// A finished run's exit code: failed, a threshold failed, or fine.
pub fn exit_code(result: &RunResult) -> i32 {
    if !result.succeeded() {
        EXIT_FAILED
    } else if result.outcomes.iter().any(|o| !o.passed) {
        EXIT_THRESHOLDS
    } else {
        EXIT_OK
    }
}

/// Writes a result's JSON and HTML page where `outputs` asks for them.
pub(crate) fn write_result(doc: &RunDoc, config: &Config, outputs: &Outputs) -> Result<(), CliError> {
    if let Some(path) = &outputs.html {
        // The page is drawn from the same document as the JSON, as `strain report` draws
        // saved results.
        let label = config.target.url.clone();
        write_file(path, &report::html::render(&[(label, doc.clone())]))?;
    }
    match &outputs.json {
        Some(Output::Stdout) if config.segment.is_split() => {
            // A segment's result on stdout is one line: `kubectl logs` of N pods is then N JSON
            // lines (between the reports' text), which `strain merge -` reads. Keys sorted, as
            // this line has always been written.
            let line = serde_json::to_value(doc).map_or_else(|_| doc.to_json(), |v| v.to_string());
            let _ = writeln!(std::io::stdout(), "{}", line.trim_end());
        }
        Some(output) => emit(output, &doc.to_json())?,
        None => {}
    }
    Ok(())
}

/// Writes a report file whole or not at all: into a file beside it, renamed over it once
/// written, so a failure (a full disk, Ctrl-C) leaves no half file.
pub(crate) fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    let tmp = beside(path);
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        cannot_write(path, source)
    })
}

/// Writes `text` where `output` says: standard output, or a file written whole.
pub(crate) fn emit(output: &Output, text: &str) -> Result<(), CliError> {
    match output {
        Output::Stdout => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            Ok(())
        }
        Output::File(path) => write_file(path, text),
    }
}

/// Where text for people goes: standard error when a document takes standard output, so the
/// two never mix.
pub(crate) fn text_stream(document: Option<&Output>) -> Box<dyn Write> {
    if document == Some(&Output::Stdout) {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    }
}

/// Checks, before any load, that a report file can be written at `path` (`-` is standard
/// output): its directory exists and takes a new file, and it is not a directory. A long test's
/// result is then not lost to a typo found at its end.
pub(crate) fn check_writable(path: &Path) -> Result<(), CliError> {
    if report::is_standard(path) {
        return Ok(());
    }
    if path.is_dir() {
        return Err(CliError::Usage(format!("cannot write {}: it is a directory", path.display())));
    }
    let tmp = beside(path);
    std::fs::File::create(&tmp).map_err(|source| cannot_write(path, source))?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

/// Checks the report files `files` names and an HdrHistogram log, before work that comes
/// before the run (a replay's scan, a gRPC schema by reflection) is done for nothing.
pub(crate) fn check_files(files: &super::flags::ResultFiles, hdr_log: Option<&Path>) -> Result<(), CliError> {
    for path in [files.json.as_deref(), files.html.as_deref(), hdr_log].into_iter().flatten() {
        check_writable(path)?;
    }
    Ok(())
}

/// Checks every report file a run will write (see [`check_writable`]).
pub(crate) fn check_outputs(outputs: &Outputs) -> Result<(), CliError> {
    let json = match &outputs.json {
        Some(Output::File(p)) => Some(p.as_path()),
        _ => None,
    };
    for path in [json, outputs.html.as_deref(), outputs.hdr_log.as_deref()].into_iter().flatten() {
        check_writable(path)?;
    }
    Ok(())
}

/// A hidden file beside `path`, for writing it whole.
fn beside(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(|| "strain".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

fn cannot_write(path: &Path, source: std::io::Error) -> CliError {
    CliError::Io { what: format!("cannot write {}", path.display()), source }
}

/// Creates the `--hdr-log` file before the run, so a bad path is an error before any load.
fn open_hdr_log(path: &std::path::Path) -> Result<HdrLog<std::io::BufWriter<std::fs::File>>, CliError> {
    let io = |source| CliError::Io { what: format!("cannot write {}", path.display()), source };
    let file = std::fs::File::create(path).map_err(io)?;
    HdrLog::new(std::io::BufWriter::new(file), std::time::SystemTime::now()).map_err(io)
}
