//! `strain find-max` (and `demo --find-max`): flags become a [`FindMaxConfig`]; the search
//! prints a line per step as it ends, then the answer; `--json` and `--html` get the whole
//! search. No passing rate exits with the thresholds' code.

use std::io::Write;
use std::sync::atomic::AtomicBool;

use super::flags::{FindMaxFlags, FindMaxOptions};
use super::{CliError, EXIT_FAILED, EXIT_OK, EXIT_THRESHOLDS, EXIT_USAGE};
use crate::config::Config;
use crate::find_max::step::Step;
use crate::find_max::{self, FindMaxConfig, FindMaxError, FindMaxObserver, FindMaxResult, FindMaxSpec};
use crate::report::find_max as text;
use crate::report::Output;
use crate::run::Workload;
use crate::verdict::Threshold;

/// Runs `strain find-max`.
pub fn run(f: &FindMaxFlags) -> Result<i32, CliError> {
    let (load, workload) = load(f)?;
    let config = find_max_config(&f.search, load, workload)?;
    let stop = super::stop_flag()?;
    search_and_report(&config, &stop, f.files.json.as_deref(), f.files.html.as_deref(), &f.metrics.settings(None))
}

/// The load every step runs, from the flags a search shares with a run.
pub fn load(f: &FindMaxFlags) -> Result<(Config, Workload), CliError> {
    for (flag, given) in [("-R", f.rate.is_some()), ("--stages", f.stages.is_some()), ("-d", f.duration.is_some())] {
        if given {
            return Err(CliError::Usage(format!(
                "find-max chooses each step's rate and length: {flag} cannot be combined with it (use --start, --max, --step-duration)"
            )));
        }
    }
    let inputs = super::load::Inputs::read(&f.request)?;
    let request = super::load::RequestShape { flags: &f.request, inputs: &inputs };
    let config = super::load::load(
        super::load::http_target(&f.url)?,
        &f.connect,
        super::load::protocol(&f.http)?,
        None,
        super::load::Requests::Flags(request),
        crate::defaults::SEARCH_CONNECTIONS,
    )?;
    let workload = super::load::workload(&f.request, &f.url, &f.script_args)?;
    Ok((config, workload))
}

/// The search `flags` describe, over `load` and `workload`.
pub fn find_max_config(f: &FindMaxOptions, load: Config, workload: Workload) -> Result<FindMaxConfig, CliError> {
    if f.slo.is_empty() {
        return Err(CliError::Usage("find-max needs an SLO: --slo 'p99<100ms' (repeatable)".into()));
    }
    let slo: Vec<Threshold> = f
        .slo
        .iter()
        .map(|t| Threshold::parse(t).map_err(|e| CliError::Usage(e.to_string())))
        .collect::<Result<_, _>>()?;
    let spec = FindMaxSpec {
        slo,
        start: f.start,
        max: f.max,
        precision: f.precision.unwrap_or(crate::defaults::SEARCH_PRECISION),
        warmup: f.warmup.map_or(crate::defaults::SEARCH_WARMUP, |d| d.0),
        step: f.step.map_or(crate::defaults::SEARCH_STEP, |d| d.0),
        probe: crate::defaults::SEARCH_PROBE,
        watch: f.watch.clone(),
    };
    FindMaxConfig::new(load, workload, spec).map_err(|e| CliError::Usage(e.to_string()))
}

/// [`search_and_report`] with the built-in origin serving from this process for the whole
/// search (the demo, a proxy search): each step reads its counters over HTTP, as a remote
/// origin's.
pub fn search_with_origin(
    config: &FindMaxConfig,
    stop: &AtomicBool,
    listener: std::net::TcpListener,
    origin_config: &crate::origin::OriginConfig,
    json: Option<&std::path::Path>,
    html: Option<&std::path::Path>,
    metrics: &crate::metrics::Settings,
) -> Result<i32, CliError> {
    let origin_stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let server = s.spawn(|| crate::origin::run(listener, origin_config, &origin_stop));
        let code = search_and_report(config, stop, json, html, metrics);
        origin_stop.store(true, std::sync::atomic::Ordering::Relaxed);
        server.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        code
    })
}

/// Prints the steps as they end.
struct Printer<'a> {
    out: Box<dyn Write + 'a>,
    connections: usize,
    /// What the rates pace.
    paces: crate::config::Paces,
    watch: &'a [u32],
    /// The table's header is printed once, after the probe's line.
    table: bool,
    /// Live metrics over every step.
    metrics: Option<crate::metrics::Exporter>,
    /// Each step's warm-up, seconds (its rows before it are not counted).
    warmup_s: f64,
    /// The target, as the shared-CPUs warning names it (said once).
    target: String,
    /// Whether that warning was said.
    warned: bool,
}

impl Printer<'_> {
    fn table(&mut self) {
        if !std::mem::replace(&mut self.table, true) {
            let _ = self.out.write_all(text::table_header(self.watch).as_bytes());
        }
    }
}

impl FindMaxObserver for Printer<'_> {
    fn shared_cpus(&mut self, shared: &crate::net::host::SharedCpus) {
        if !std::mem::replace(&mut self.warned, true) {
            eprintln!("{}", shared.warning(&self.target));
        }
    }

    fn probed(&mut self, per_s: f64, start: f64) {
        let _ = self.out.write_all(text::probed(per_s, start, self.connections, self.paces.noun()).as_bytes());
    }

    fn step_started(&mut self, rate: f64) {
        if let Some(m) = self.metrics.as_mut() {
            m.step_started(rate, self.warmup_s);
        }
        self.table();
        let _ = self.out.flush();
    }

    fn interval(
        &mut self,
        row: &crate::stats::interval::IntervalRow,
        latency: crate::stats::interval::Latencies<'_>,
        proxy: Option<&crate::run::proxy::ProxyRow>,
    ) {
        if let Some(m) = self.metrics.as_mut() {
            m.row(row, latency, proxy);
        }
    }

    fn step_finished(&mut self, result: &crate::run::RunResult) {
        if let Some(m) = self.metrics.as_mut() {
            m.finished(result);
        }
    }

    fn step(&mut self, step: &Step) {
        if let Some(m) = self.metrics.as_mut() {
            m.step_ended(step.verdict.name());
        }
        let _ = self.out.write_all(text::step_line(step).as_bytes());
        let _ = self.out.flush();
    }
}

/// Runs the search, printing as it goes, and writes the JSON and HTML; returns the exit code.
pub fn search_and_report(
    config: &FindMaxConfig,
    stop: &AtomicBool,
    json: Option<&std::path::Path>,
    html: Option<&std::path::Path>,
    metrics: &crate::metrics::Settings,
) -> Result<i32, CliError> {
    for path in [json, html].into_iter().flatten() {
        super::check_writable(path)?;
    }
    // Steps' rows before their warm-up's end are not counted; the probe's rows are not either.
    let metrics = super::print::start_metrics(metrics, config.spec().warmup.as_secs_f64())?;
    let json = json.map(|p| Output::of(p.to_path_buf()));
    let out = super::print::text_stream(json.as_ref());
    let mut printer = Printer {
        out,
        connections: config.load().connections,
        paces: config.load().paces(),
        watch: &config.spec().watch,
        table: false,
        metrics,
        warmup_s: config.spec().warmup.as_secs_f64(),
        target: config.load().target.url.clone(),
        warned: false,
    };
    let _ = printer.out.write_all(text::header(config).as_bytes());
    let _ = printer.out.flush();
    let result: FindMaxResult = match find_max::run(config, stop, &mut printer) {
        Ok(r) => r,
        Err(FindMaxError::Failed(why)) => {
            eprintln!("strain: {why}");
            return Ok(EXIT_FAILED);
        }
        Err(FindMaxError::Run(e)) => return Err(CliError::Run(e)),
        Err(e) => {
            eprintln!("strain: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let _ = printer.out.write_all(b"\n");
    let _ = printer.out.write_all(text::answer(&result.answer, printer.connections, printer.paces).as_bytes());
    if let Some(shared) = result.steps.iter().find_map(|s| s.result.shared_cpus.as_ref()) {
        let _ = writeln!(printer.out, "{}", text::shared_note(shared));
    }
    let _ = printer.out.flush();
    let found = text::document(config, &result, &super::load::command_line());
    if let Some(path) = html {
        super::write_file(path, &crate::report::html::render_find_max(&found))?;
    }
    if let Some(json) = &json {
        super::print::emit(json, &found.to_json())?;
    }
    super::print::close_metrics(printer.metrics.take());
    Ok(if result.answer.max_rate.is_some() { EXIT_OK } else { EXIT_THRESHOLDS })
}
