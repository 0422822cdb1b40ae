//! Capacity search (`strain find-max`): the highest rate a service sustains under its SLO, as
//! one call, [`run`]. Each step is one [`crate::run::run`] at a constant rate (open loop,
//! latency from the intended send), warmed up first and judged by [`step`]; [`bisect`] picks the
//! rates (×2 until a fail, then bisection); [`knee`] reads the latency-vs-rate curve; [`watch`]
//! reads the server's CPU and memory per step.
//!
//! A step that is certain to fail stops early: once more of its requests are slower than an
//! SLO percentile's bound than the whole step may have (1% of the planned requests for p99),
//! no later response can bring the percentile back under it.

pub mod bisect;
pub mod knee;
pub mod step;
pub mod watch;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::config::Config;
use crate::run::{Failure, Observer, OriginPlacement, RunConfig, RunError, Workload};
use crate::schedule::Schedule;
use crate::stats::interval::{IntervalRow, Latencies};
use crate::verdict::{Budget, Checks, Metric, Threshold};
use bisect::{Bisection, End, Outcome};
use step::{Step, Verdict};
use watch::WatchError;

/// Longest pause after a failed step (see [`cool_down`]).
pub const COOLDOWN_MAX: Duration = Duration::from_secs(10);

/// Waits after a failed step so the next one does not start on its backlog: an overloaded
/// service keeps working through requests that strain stopped waiting for. The step's slowest
/// response is the depth of the queue it left, so the pause is that long (at most
/// [`COOLDOWN_MAX`]); Ctrl-C cuts it short.
fn cool_down(wait: Duration, stop: &AtomicBool) {
    let until = std::time::Instant::now() + wait;
    while std::time::Instant::now() < until && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(std::time::Instant::now())));
    }
}

/// A capacity search: the load every step shares, the SLO and how the rates are chosen.
#[derive(Debug, Clone)]
pub struct FindMaxConfig {
    /// Target, connections, threads, timeout, headers, tick; the duration and rate are the
    /// search's.
    load: Config,
    /// What each request is.
    workload: Workload,
    /// How the search goes.
    spec: FindMaxSpec,
}

/// How a search goes: what [`FindMaxConfig::new`] checks.
#[derive(Debug, Clone)]
pub struct FindMaxSpec {
    /// The service level: every term must hold at a passing rate; at least one on latency.
    pub slo: Vec<Threshold>,
    /// The first rate; `None`: a closed-loop probe's rate / 4.
    pub start: Option<f64>,
    /// No step above this rate.
    pub max: Option<f64>,
    /// The search ends when pass and fail are within this share of the pass.
    pub precision: f64,
    /// Load before each step's measurement.
    pub warmup: Duration,
    /// Each step's measurement.
    pub step: Duration,
    /// The closed-loop probe's length (when there is no `start`).
    pub probe: Duration,
    /// Processes whose CPU and memory are read per step.
    pub watch: Vec<u32>,
}

/// Why a search could not run.
#[derive(Debug, thiserror::Error)]
pub enum FindMaxError {
    /// The settings do not form a search.
    #[error("{0}")]
    Invalid(String),
    /// A step could not start.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A `--watch-pid` process cannot be read.
    #[error(transparent)]
    Watch(#[from] WatchError),
    /// A step ran but failed (a script error, nothing connected).
    #[error("{0}")]
    Failed(String),
}

/// What the search found.
#[derive(Debug)]
pub struct FindMaxResult {
    /// The closed-loop probe's rate, when it ran.
    pub probe_per_s: Option<f64>,
    /// Every step, in the order run.
    pub steps: Vec<Step>,
    /// The answer.
    pub answer: Answer,
}

/// The answer of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Why the search ended.
    pub end: End,
    /// The highest rate that met the SLO, requests/s.
    pub max_rate: Option<f64>,
    /// The lowest rate that did not.
    pub first_fail: Option<f64>,
    /// The SLO terms that failed at the lowest failing rate.
    pub failed_terms: Vec<String>,
    /// The knee of the latency-vs-rate curve: (rate, latency in microseconds of the SLO's
    /// first latency term).
    pub knee: Option<(f64, f64)>,
    /// The step that reached strain's own limit, as its verdict.
    pub limit: Option<Verdict>,
}

/// Hears a search as it goes.
pub trait FindMaxObserver {
    /// The server runs on this machine on CPUs strain's threads use too (told by every step;
    /// the first time is before any load).
    fn shared_cpus(&mut self, _shared: &crate::net::host::SharedCpus) {}
    /// The probe ran: its rate and the first rate chosen from it.
    fn probed(&mut self, _per_s: f64, _start: f64) {}
    /// A step at `rate` starts.
    fn step_started(&mut self, _rate: f64) {}
    /// A step ended and was judged.
    fn step(&mut self, _step: &Step) {}
    /// One interval of the running step (live metrics read them).
    fn interval(&mut self, _row: &IntervalRow, _latency: Latencies<'_>, _proxy: Option<&crate::run::proxy::ProxyRow>) {}
    /// The running step's load ended with `result`, before it is judged.
    fn step_finished(&mut self, _result: &crate::run::RunResult) {}
}

/// A search observer that ignores everything.
pub struct Quiet;

impl FindMaxObserver for Quiet {}

impl FindMaxConfig {
    /// A search of `load` and `workload` as `spec` says, checked here once: a config that
    /// exists is a search that can run.
    pub fn new(load: Config, workload: Workload, spec: FindMaxSpec) -> Result<FindMaxConfig, FindMaxError> {
        let config = FindMaxConfig { load, workload, spec };
        config.validate()?;
        // A step's load is the search's with the step's length and rate: one that does not
        // build is said now, not at the first step.
        config.step_load(1.0)?;
        Ok(config)
    }

    /// The load every step is made from.
    pub fn load(&self) -> &Config {
        &self.load
    }

    /// What each request is.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// How the search goes.
    pub fn spec(&self) -> &FindMaxSpec {
        &self.spec
    }

    /// Checks the settings.
    fn validate(&self) -> Result<(), FindMaxError> {
        let invalid = |s: String| Err(FindMaxError::Invalid(s));
        if !self.spec.slo.iter().any(is_latency_term) {
            return invalid("the SLO needs a latency term, e.g. --slo 'p99<100ms'".into());
        }
        if let Some(t) = self.spec.slo.iter().find(|t| t.needs() == Some(crate::verdict::Needs::ProxyTest)) {
            if !matches!(self.workload, Workload::Proxy(_)) {
                return invalid(format!("SLO term '{}' needs a proxy test", t.text));
            }
        }
        if !(self.spec.precision > 0.0 && self.spec.precision < 1.0) {
            return invalid(format!("--precision must be between 0% and 100%, not {}%", self.spec.precision * 100.0));
        }
        for (flag, rate) in [("--start", self.spec.start), ("--max", self.spec.max)] {
            if rate.is_some_and(|r| !(r.is_finite() && r >= bisect::FLOOR_PER_S)) {
                return invalid(format!("{flag} must be a rate of at least {} request/s", bisect::FLOOR_PER_S));
            }
        }
        if self.spec.step.is_zero() {
            return invalid("--step-duration must be above 0".into());
        }
        if let Workload::Proxy(p) = &self.workload {
            if p.new_conn_rate.is_some() {
                return invalid("--new-conn-rate sets its own rate: it cannot be searched".into());
            }
        }
        Ok(())
    }

    /// The load of one step at `rate`, built from the search's and checked as every load is.
    pub fn step_load(&self, rate: f64) -> Result<Config, FindMaxError> {
        let mut load = self.load.to_settings();
        load.duration = self.spec.warmup + self.spec.step;
        load.warmup = self.spec.warmup;
        load.schedule = Some(Schedule::constant(rate, load.duration));
        load.interval = Some(crate::defaults::SEARCH_INTERVAL);
        load.build().map_err(|e| FindMaxError::Invalid(e.to_string()))
    }
}

/// An SLO term's latency bound, microseconds, when it is an upper bound on a percentile or the
/// maximum.
fn latency_bound(t: &Threshold) -> Option<(f64, f64)> {
    let share_above = match t.metric {
        Metric::Percentile(p) => 1.0 - p / 100.0,
        Metric::Max => 0.0,
        _ => return None,
    };
    Some((t.latency_cap_us()?, share_above))
}

/// Whether an SLO term holds latency down: an upper bound on a percentile or the maximum, or a
/// bound on the mean. A search needs one; its values draw the latency-vs-rate curve.
fn is_latency_term(t: &Threshold) -> bool {
    latency_bound(t).is_some() || matches!(t.metric, Metric::Mean)
}

/// Searches for the highest rate that meets the SLO, until the search ends or `stop` is set.
pub fn run(
    config: &FindMaxConfig,
    stop: &AtomicBool,
    observer: &mut dyn FindMaxObserver,
) -> Result<FindMaxResult, FindMaxError> {
    for pid in &config.spec.watch {
        watch::sample(*pid)?;
    }
    let mut probe_per_s = None;
    let start = match config.spec.start {
        Some(s) => s,
        None => {
            let per_s = probe(config, stop, observer)?;
            let start = (per_s / 4.0).max(bisect::FLOOR_PER_S);
            observer.probed(per_s, start);
            probe_per_s = Some(per_s);
            start
        }
    };
    let mut bisection = Bisection::new(start, config.spec.max, config.spec.precision);
    let mut steps: Vec<Step> = Vec::new();
    while let Some(rate) = bisection.next() {
        if stop.load(Ordering::Relaxed) {
            bisection.stop();
            break;
        }
        observer.step_started(rate);
        let step = run_step(config, rate, &steps, stop, observer)?;
        if stop.load(Ordering::Relaxed) {
            // Cut short from outside: not a measurement of this rate.
            bisection.stop();
            break;
        }
        bisection.record(
            rate,
            match &step.verdict {
                Verdict::Pass => Outcome::Pass,
                v if v.is_limit() => Outcome::Limit,
                _ => Outcome::Fail,
            },
        );
        observer.step(&step);
        let backlog = (!step.verdict.passed()).then(|| Duration::from_micros(step.figures.max_us).min(COOLDOWN_MAX));
        steps.push(step);
        if let Some(wait) = backlog.filter(|_| bisection.next().is_some()) {
            cool_down(wait, stop);
        }
    }
    let answer = answer(&bisection, &steps, &config.spec.slo);
    Ok(FindMaxResult { probe_per_s, steps, answer })
}

/// Tells the search's observer what a run tells of the machine (the probe's run).
struct Told<'a>(&'a mut dyn FindMaxObserver);

impl Observer for Told<'_> {
    fn shared_cpus(&mut self, shared: &crate::net::host::SharedCpus) {
        self.0.shared_cpus(shared);
    }
}

/// A short closed-loop run: how fast the service answers with every connection busy.
fn probe(config: &FindMaxConfig, stop: &AtomicBool, observer: &mut dyn FindMaxObserver) -> Result<f64, FindMaxError> {
    let mut load = config.load.to_settings();
    load.duration = config.spec.probe;
    load.schedule = None;
    let test = RunConfig {
        load: load.build().map_err(|e| FindMaxError::Invalid(e.to_string()))?,
        workload: config.workload.clone(),
        origin: OriginPlacement::Elsewhere,
        checks: Checks::default(),
    };
    let result = crate::run::run(test, stop, &mut Told(observer))?;
    if let Some(f) = &result.failure {
        return Err(FindMaxError::Failed(format!("the probe failed: {}", failure_text(f))));
    }
    let per_s = result.summary.started_per_s().unwrap_or_else(|| result.summary.requests_per_s());
    if per_s <= 0.0 {
        return Err(FindMaxError::Failed(format!(
            "the probe got no answer in {:?}: give --start to search anyway",
            config.spec.probe
        )));
    }
    Ok(per_s)
}

fn failure_text(f: &Failure) -> String {
    match f {
        Failure::Script(e) => e.to_string(),
        Failure::NothingConnected { why } => format!("no connection succeeded: {why}"),
    }
}

/// Runs and judges one step.
fn run_step(
    config: &FindMaxConfig,
    rate: f64,
    earlier: &[Step],
    stop: &AtomicBool,
    outer: &mut dyn FindMaxObserver,
) -> Result<Step, FindMaxError> {
    let load = config.step_load(rate)?;
    let step_stop = AtomicBool::new(false);
    let mut early = Early::new(config, &load, rate, stop, &step_stop, outer);
    let test = RunConfig {
        load,
        workload: config.workload.clone(),
        origin: OriginPlacement::Elsewhere,
        checks: Checks::default(),
    };
    let result = crate::run::run(test, &step_stop, &mut early)?;
    let starts = std::mem::take(&mut early.watch_start);
    let watched = config.spec.watch.iter().zip(starts).map(|(pid, s)| watch::over(*pid, s)).collect();
    if let Some(f) = &result.failure {
        let noun = config.load.paces().noun();
        return Err(FindMaxError::Failed(format!("the step at {rate:.0} {noun}/s failed: {}", failure_text(f))));
    }
    // Only a passing step shows the service unqueued: a failed one may have been saturated, and
    // a later step as slow would then read as "as fast as before" (a -c limit that was not).
    let baseline =
        earlier.iter().filter(|s| s.verdict.passed()).map(Step::service_mean_us).filter(|m| *m > 0.0).reduce(f64::min);
    Ok(Step::judge(rate, result, &config.spec.slo, config.load.connections, baseline, watched))
}

/// A step's observer: samples the watched processes when load starts, passes Ctrl-C on to the
/// step, and ends the step once an SLO term can no longer pass.
struct Early<'a> {
    slo: &'a [Threshold],
    watch: &'a [u32],
    watch_start: Vec<Option<watch::Sample>>,
    warm_s: f64,
    /// Requests the step's measured part plans to send; `None` when its rate is of streams,
    /// whose answers are not counted ahead.
    planned: Option<f64>,
    /// Per latency-bound term: responses slower than its bound so far.
    above: Vec<u64>,
    budget: Budget,
    stop: &'a AtomicBool,
    step_stop: &'a AtomicBool,
    /// The search's observer, which sees the step's rows and end too.
    outer: &'a mut dyn FindMaxObserver,
}

impl<'a> Early<'a> {
    fn new(
        config: &'a FindMaxConfig,
        load: &Config,
        rate: f64,
        stop: &'a AtomicBool,
        step_stop: &'a AtomicBool,
        outer: &'a mut dyn FindMaxObserver,
    ) -> Early<'a> {
        // The budget is of the measured part: the step without its warm-up.
        let mut measured = load.to_settings();
        measured.schedule = Some(Schedule::constant(rate, config.spec.step));
        Early {
            slo: &config.spec.slo,
            watch: &config.spec.watch,
            watch_start: Vec::new(),
            warm_s: load.warmup.as_secs_f64(),
            planned: (config.load.paces() == crate::config::Paces::Requests)
                .then_some(rate * config.spec.step.as_secs_f64()),
            above: vec![0; config.spec.slo.len()],
            budget: Budget::new(&measured),
            stop,
            step_stop,
            outer,
        }
    }
}

impl Observer for Early<'_> {
    fn shared_cpus(&mut self, shared: &crate::net::host::SharedCpus) {
        self.outer.shared_cpus(shared);
    }

    fn started(&mut self) {
        self.watch_start = self.watch.iter().map(|pid| watch::sample(*pid).ok()).collect();
    }

    fn finished(&mut self, result: &crate::run::RunResult) {
        self.outer.step_finished(result);
    }

    fn interval(&mut self, row: &IntervalRow, latency: Latencies<'_>, proxy: Option<&crate::run::proxy::ProxyRow>) {
        self.outer.interval(row, latency, proxy);
        if self.stop.load(Ordering::Relaxed) {
            self.step_stop.store(true, Ordering::Relaxed);
        }
        let Some(planned) = self.planned.filter(|_| row.start_s >= self.warm_s) else { return };
        let mut lost = self.budget.add(row, self.slo).is_some();
        for (t, above) in self.slo.iter().zip(self.above.iter_mut()) {
            if let Some((bound_us, share)) = latency_bound(t) {
                *above += latency.corrected.count_between(bound_us as u64 + 1, u64::MAX);
                lost |= *above as f64 > share * planned;
            }
        }
        if lost {
            self.step_stop.store(true, Ordering::Relaxed);
        }
    }
}

/// The answer from the steps run.
fn answer(bisection: &Bisection, steps: &[Step], slo: &[Threshold]) -> Answer {
    let first_fail_step = steps
        .iter()
        .filter(|s| matches!(s.verdict, Verdict::Slo | Verdict::Behind))
        .min_by(|a, b| a.figures.target_per_s.total_cmp(&b.figures.target_per_s));
    let failed_terms = first_fail_step
        .map(|s| s.result.outcomes.iter().filter(|o| !o.passed).map(|o| o.threshold.text.clone()).collect())
        .unwrap_or_default();
    let latency_term = slo.iter().position(is_latency_term);
    let points: Vec<(f64, f64)> = steps
        .iter()
        .filter(|s| !s.verdict.is_limit())
        .filter_map(|s| {
            latency_term
                .and_then(|i| s.result.outcomes.get(i))
                .and_then(|o| o.measured)
                .map(|m| (s.figures.target_per_s, m))
        })
        .collect();
    Answer {
        end: bisection.end().unwrap_or(End::Stopped),
        max_rate: bisection.pass,
        first_fail: first_fail_step.map(|s| s.figures.target_per_s),
        failed_terms,
        knee: knee::knee(&points),
        limit: steps.iter().find(|s| s.verdict.is_limit()).map(|s| s.verdict.clone()),
    }
}
