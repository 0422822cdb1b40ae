//! One test, of any kind, as one call: [`run`] takes a [`RunConfig`] and returns a typed
//! [`RunResult`]; progress goes to an [`Observer`] the caller chooses. The command line calls it
//! once and renders; a capacity search calls it in a loop; a test calls it in-process.
//!
//! What it owns: loading the script (its `setup` before load, `done` after), starting the
//! in-process origin when the test has one, wiring a proxy test's origin counters into the
//! interval rows, turning the engine's recorders into a summary, and the verdicts: thresholds
//! judged on the result, and `--abort-on-fail` stopping the run once one must fail. What it
//! does not: parse flags, print, or pick an exit code.

pub mod proxy;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{Config, ConfigError, Protocol};
use crate::engine::proxy::ProxySetup;
use crate::engine::{self, EngineError, PreparedScript, Progress};
use crate::net::host::{self, Listening, SharedCpus};
use crate::origin::{self, OriginConfig, OriginError, OriginLive, OriginStats};
use crate::script::{MainScript, ScriptError, ScriptSource, UrlParts};
use crate::stats::interval::{IntervalRow, Latencies};
use crate::stats::Summary;
use crate::verdict::{Budget, Checks, Outcome, Threshold};
use proxy::{OriginView, ProxyResult, ProxyRow, ProxyTracker};

/// One test: the load's shape and what it sends, and where its origin runs.
pub struct RunConfig {
    /// Target, connections, threads, duration, timeout, rate schedule, intervals.
    pub load: Config,
    /// What each request is.
    pub workload: Workload,
    /// Whether an origin serves from this process while the load runs.
    pub origin: OriginPlacement,
    /// Thresholds judged on the result, and whether to stop once one must fail.
    pub checks: Checks,
}

/// What each request is.
#[derive(Debug, Clone)]
pub enum Workload {
    /// GET the URL with the configured headers.
    Url,
    /// A wrk Lua script and the arguments for its `init`.
    Script {
        /// The script file.
        path: PathBuf,
        /// `init(args)`; the URL first, as wrk passes it.
        args: Vec<String>,
    },
    /// A proxy test: documents chosen by the workload, the hit ratio measured at the origin.
    Proxy(ProxySetup),
    /// Recorded requests, each at its replayed time (`strain replay`).
    Replay(Box<Replay>),
    /// Exchanges whose answers the workload judges itself (`strain grpc`'s calls).
    Judged(std::sync::Arc<dyn crate::engine::judged::Judged>),
    /// A unit's own load over its own transport (`strain ws`).
    Unit(std::sync::Arc<dyn crate::engine::Launch>),
}

/// A replay, scanned: what to read, what the scan found, and the speed.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The recordings and how they are replayed.
    pub setup: crate::replay::ReplaySetup,
    /// What the scan before the load found.
    pub scan: crate::replay::reader::Scan,
    /// The speed the recording goes at.
    pub speed: f64,
}

/// Where the origin is.
// One value per run, moved once into the origin's thread: its size costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum OriginPlacement {
    /// Somewhere else (a proxy test reads its counters from `/_strain/stats`).
    Elsewhere,
    /// Served from this process for the length of the run.
    InProcess {
        /// Its listening socket, bound by the caller (so the address is known beforehand).
        listener: TcpListener,
        /// How it serves.
        config: OriginConfig,
    },
}

/// Why a test could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The options do not form a valid test.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine could not start (target, TLS, threads).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The script does not load.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The in-process origin failed.
    #[error(transparent)]
    Origin(#[from] OriginError),
    /// The replay's recordings could not be read.
    #[error(transparent)]
    Replay(#[from] crate::replay::reader::ReplayError),
}

/// Why a test that ran did not succeed.
#[derive(Debug, Clone)]
pub enum Failure {
    /// A script hook (or its `setup`, or `done`) failed.
    Script(ScriptError),
    /// No connection to the target ever succeeded.
    NothingConnected {
        /// The first connect error, or why there was none.
        why: String,
    },
}

/// What one test measured.
#[derive(Debug)]
pub struct RunResult {
    /// Every thread's measurements, merged.
    pub summary: Summary,
    /// One row per interval.
    pub series: Vec<IntervalRow>,
    /// The address that was loaded.
    pub addr: SocketAddr,
    /// The protocol the run spoke (settled before load: ALPN on https unless one was asked for).
    pub protocol: Protocol,
    /// Proxy tests: the hit ratio and what the origin saw.
    pub proxy: Option<ProxyResult>,
    /// What the in-process origin served, when there was one.
    pub origin_served: Option<OriginStats>,
    /// Why the run did not succeed, if it did not.
    pub failure: Option<Failure>,
    /// Each threshold of the run's checks, judged on this result.
    pub outcomes: Vec<Outcome>,
    /// CPU time each of strain's worker threads used while measuring: a thread near 100% of the
    /// elapsed time is the generator's own limit.
    pub thread_cpu: Vec<std::time::Duration>,
    /// Time each worker thread was ready to run but waited for a CPU while measuring (another
    /// process, the server on the same machine, had it).
    pub thread_waited: Vec<std::time::Duration>,
    /// The server runs on this machine on CPUs strain's threads use too.
    pub shared_cpus: Option<SharedCpus>,
    /// A replay: what its reader did while the load ran.
    pub replay: Option<crate::replay::reader::Fed>,
}

/// Sees a run as it goes. Every method has a default that ignores it.
pub trait Observer {
    /// The server runs on this machine on CPUs strain's threads use too (told once, before
    /// load starts).
    fn shared_cpus(&mut self, _shared: &SharedCpus) {}
    /// Every thread's script ran `init`; load starts now (wrk prints its header here).
    fn started(&mut self) {}
    /// One interval, merged across threads, with the proxy columns in proxy tests.
    fn interval(&mut self, _row: &IntervalRow, _latency: Latencies<'_>, _proxy: Option<&ProxyRow>) {}
    /// `--abort-on-fail`: `threshold` can no longer pass, so the run stops now (it drains and
    /// reports as on Ctrl-C).
    fn aborting(&mut self, _threshold: &Threshold) {}
    /// The run is measured; a script's `done()` runs after this, so reports printed here come
    /// before what `done()` prints, as in wrk.
    fn finished(&mut self, _result: &RunResult) {}
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {}

/// Runs one test until its duration passes or `stop` is set.
pub fn run(config: RunConfig, stop: &AtomicBool, observer: &mut dyn Observer) -> Result<RunResult, RunError> {
    let RunConfig { load, workload, origin, checks } = config;
    match origin {
        OriginPlacement::Elsewhere => client(&load, workload, &checks, None, stop, observer),
        OriginPlacement::InProcess { listener, config: origin_config } => {
            let live = OriginLive::new();
            let origin_stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                let server = s.spawn(|| origin::run_live(listener, &origin_config, &origin_stop, &live));
                let result = client(&load, workload, &checks, Some(&live), stop, observer);
                origin_stop.store(true, Ordering::Relaxed);
                let served = server.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                result.map(|r| RunResult { origin_served: Some(served), ..r })
            })
        }
    }
}

/// The load side of a run.
fn client(
    load: &Config,
    workload: Workload,
    checks: &Checks,
    live: Option<&OriginLive>,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<RunResult, RunError> {
    // A script that does not load stops the run here, before any load.
    let script = match &workload {
        Workload::Script { path, args } => {
            let source = ScriptSource::read(path.clone(), args.clone())?;
            let url = url_parts(load);
            let main = MainScript::load(&source, &url)?;
            Some((main, source, url))
        }
        _ => None,
    };
    let mut plan = engine::prepare(load)?;
    let shared_cpus = match (live, &load.unix_socket) {
        (Some(_), _) => host::shared_cpus(Listening::ThisProcess),
        (None, Some(path)) => host::shared_cpus(Listening::Unix(path)),
        (None, None) => plan.origins.iter().find_map(|o| host::shared_cpus(Listening::Tcp(o.addr))),
    };
    if let Some(s) = &shared_cpus {
        observer.shared_cpus(s);
    }
    let mut tracker = None;
    let mut queues = None;
    if let Workload::Replay(_) = &workload {
        let (tx, rx): (Vec<_>, Vec<_>) =
            (0..load.threads).map(|_| std::sync::mpsc::sync_channel(crate::replay::reader::QUEUED)).unzip();
        let due = crate::replay::reader::DueCounts::new(load.series_interval());
        plan = plan.with_replay(rx, load.tick, due.clone());
        queues = Some((tx, due));
    }
    if let Workload::Judged(judged) = &workload {
        plan = plan.with_judged(judged.clone())?;
    }
    if let Workload::Unit(unit) = &workload {
        plan = plan.with_unit(unit.clone());
    }
    let (replay, proxy) = match workload {
        Workload::Replay(r) => (Some(r), None),
        Workload::Proxy(p) => (None, Some(p)),
        _ => (None, None),
    };
    if let Some(p) = proxy {
        let view = match live {
            Some(l) => OriginView::Local(l),
            None => OriginView::Remote(p.origin.clone()),
        };
        tracker = Some(ProxyTracker::new(view, load.warmup));
        plan = plan.with_proxy(p);
    }
    let mut main_script = None;
    if let Some((mut main, source, url)) = script {
        match main.setup(load.threads, plan.addr()) {
            Ok(setups) => plan = plan.with_script(PreparedScript { source, url, setups }),
            Err(e) => return Ok(unrun(&plan, Failure::Script(e))),
        }
        main_script = Some(main);
    }
    let budget = checks.abort_on_fail.then(|| Budget::new(load));
    let mut watch = Watch { observer: &mut *observer, tracker, budget, thresholds: &checks.thresholds, stop };
    let (mut out, fed) = match (&replay, queues) {
        (Some(r), Some((queues, due))) => replayed(&plan, r, queues, due, load, stop, &mut watch)?,
        _ => (engine::run(&plan, stop, &mut |progress| watch.progress(progress))?, None),
    };
    let tracker = watch.tracker.take();
    let mut result = measured(&plan, &mut out, tracker);
    result.replay = fed;
    result.shared_cpus = shared_cpus;
    result.outcomes = result.judge(&checks.thresholds);
    observer.finished(&result);
    if let Some(main) = &main_script {
        for (i, globals) in out.globals.into_iter().enumerate() {
            main.thread_ended(i, globals);
        }
        if out.script_error.is_none() {
            if let Err(e) = main.done(&result.summary) {
                result.failure = Some(Failure::Script(e));
            }
        }
    }
    Ok(result)
}

/// Runs a replay's load: its reader on its own thread, feeding each worker its share.
fn replayed(
    plan: &engine::Plan,
    replay: &Replay,
    queues: Vec<std::sync::mpsc::SyncSender<crate::replay::reader::Batch>>,
    due: crate::replay::reader::DueCounts,
    load: &Config,
    stop: &AtomicBool,
    watch: &mut Watch,
) -> Result<(engine::RunOutput, Option<crate::replay::reader::Fed>), RunError> {
    use crate::replay::reader;
    std::thread::scope(|scope| {
        let conns = (0..load.threads).map(|i| load.connections_for(i)).collect();
        let split = reader::Split { segment: load.segment, queues, conns, due, notes: !load.trace.off() };
        let feeder = reader::start(scope, &replay.setup, &replay.scan, replay.speed, split)?;
        let out = engine::run(plan, stop, &mut |progress| watch.progress(progress));
        // The workers have ended and dropped their queues (those of threads that never
        // started go now), so the reader ends too.
        plan.close_replay();
        let fed = feeder.finish()?;
        Ok((out?, Some(fed)))
    })
}

/// What the engine's progress means to the caller: each interval goes to the observer (with
/// the proxy columns in proxy tests), and `--abort-on-fail` stops the run once a threshold can
/// no longer pass.
struct Watch<'a, 'o> {
    observer: &'a mut (dyn Observer + 'o),
    tracker: Option<ProxyTracker<'a>>,
    budget: Option<Budget>,
    thresholds: &'a [Threshold],
    stop: &'a AtomicBool,
}

impl Watch<'_, '_> {
    fn progress(&mut self, progress: Progress) {
        let (row, h) = match progress {
            Progress::Started => return self.observer.started(),
            Progress::Interval(row, h) => (row, h),
        };
        match self.tracker.as_mut() {
            Some(t) => self.observer.interval(row, h, Some(&t.interval(row))),
            None => self.observer.interval(row, h, None),
        }
        let give_up = self.budget.as_mut().and_then(|b| b.add(row, self.thresholds));
        if let Some(t) = give_up.filter(|_| !self.stop.load(Ordering::Relaxed)) {
            self.observer.aborting(t);
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// The result of a run that went: the threads' recorders merged, and why it did not succeed
/// (the series and CPU times are taken out of `out`; its script globals stay for `done()`).
fn measured(plan: &engine::Plan, out: &mut engine::RunOutput, tracker: Option<ProxyTracker>) -> RunResult {
    let summary = Summary::new(std::mem::take(&mut out.recorders), out.elapsed, out.started);
    let failure = match &out.script_error {
        Some(e) => Some(Failure::Script(e.clone())),
        None if summary.total.connections == 0 => Some(Failure::NothingConnected {
            why: summary.total.first_connect_error.clone().unwrap_or_else(|| "no attempt finished".into()),
        }),
        None => None,
    };
    RunResult {
        replay: None,
        proxy: tracker.map(|t| t.finish(&summary.total)),
        summary,
        series: std::mem::take(&mut out.series),
        addr: out.addr,
        protocol: plan.protocol(),
        origin_served: None,
        failure,
        outcomes: Vec::new(),
        thread_cpu: std::mem::take(&mut out.thread_cpu),
        thread_waited: std::mem::take(&mut out.thread_waited),
        shared_cpus: None,
    }
}

/// The result of a run that never started load (its script's `setup` failed).
fn unrun(plan: &engine::Plan, failure: Failure) -> RunResult {
    RunResult {
        summary: Summary::new(Vec::new(), std::time::Duration::ZERO, std::time::SystemTime::now()),
        series: Vec::with_capacity(0),
        addr: plan.addr(),
        protocol: plan.protocol(),
        proxy: None,
        origin_served: None,
        failure: Some(failure),
        outcomes: Vec::new(),
        thread_cpu: Vec::new(),
        thread_waited: Vec::new(),
        shared_cpus: None,
        replay: None,
    }
}

impl RunResult {
    /// Whether the run executed and measured something.
    pub fn succeeded(&self) -> bool {
        self.failure.is_none()
    }

    /// Each of `thresholds` judged on this result.
    pub fn judge(&self, thresholds: &[Threshold]) -> Vec<Outcome> {
        let hit_ratio = self.proxy.as_ref().and_then(|p| p.hit_ratio);
        thresholds.iter().map(|t| t.judge(&self.summary, hit_ratio)).collect()
    }
}

/// The URL's parts as a script's `wrk` table shows them.
fn url_parts(config: &Config) -> UrlParts {
    let t = &config.target;
    UrlParts {
        scheme: t.scheme.name().into(),
        host: t.host.clone(),
        port: t.explicit_port.then_some(t.port),
        path: t.path.clone(),
        host_header: t.host_header(),
        headers: config.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
    }
}
