//! The load engine: one event loop per thread, each owning its connections outright.
//!
//! [`prepare`] settles everything before the threads start (address, TLS client, the rendered
//! request, the protocol) into a [`Plan`]; [`run`] takes only the plan: it starts its worker
//! threads, waits for them and returns their recorders. A worker first makes its script state
//! (running `init`), one thread after another; the clock starts once every worker has, as in
//! wrk. Each worker speaks the plan's protocol through one transport (`transport/`: one per protocol).
//!
//! Hot-path rules, for everything under this module: per request there are no locks, atomics,
//! allocations, dynamic dispatch, logging or clock reads beyond the two that time the request.
//! A worker reaches its sockets through edge-triggered epoll (mio), registers each socket once,
//! and writes the next request as soon as it has read a response, so a keep-alive request costs
//! one `read` and one `write` system call. The stop flag is read once per loop turn, not per
//! request.
//!
//! A connection moves Connecting -> Writing -> Reading -> (response complete) -> Writing again;
//! what decides *when* the next request is written (at once, as now, or at a paced instant) is
//! the worker's, not the connection's, so pacing and scripted requests slot in without touching
//! the state machine.

mod clock;
mod deadlines;
mod feed;
pub mod judged;
mod pacer;
mod plan;
pub mod proxy;
mod slot;
mod timer;
pub mod trace;
mod transport;
mod worker;

pub use plan::{
    Carried, Launch, PageSetup, PageSource, Plan, PreparedScript, QuicSetup, RequestSource, TargetList, Timing, Wire,
};
pub(crate) use plan::{Origin, Span};
pub use slot::State;
pub use transport::paced::{write_out, Pace};
pub use transport::{connect_cause, Dialed, HeldSlot, Host, Part, PerSlot, ReadEnd, Readable, Transport};
pub use worker::{drive, Share, WorkerOutput};

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use std::time::{Duration, Instant, SystemTime};

use crate::config::{Config, Paces, Protocol, ProtocolChoice, Scheme};
use crate::http::request;
use crate::net::{self, tls::TlsSetup, NetError};
use crate::script::{ScriptError, ThreadScript};
use crate::stats::interval::{IntervalRow, Latencies, SeriesSink, Snapshot, Spares};
use crate::stats::series::{Series, SeriesError};
use crate::stats::Recorder;
use transport::h1::Http1;
use transport::h2::Http2;
use transport::h3::Http3;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The target could not be resolved or TLS could not be set up.
    #[error(transparent)]
    Net(#[from] NetError),
    /// A worker could not create its poller.
    #[error("cannot create an event loop: {0}")]
    Poll(std::io::Error),
    /// A worker thread could not be started.
    #[error("cannot start a worker thread: {0}")]
    Thread(std::io::Error),
    /// The script failed before load started.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The QUIC client could not be set up.
    #[error("cannot set up QUIC: {0}")]
    Quic(String),
    /// The measured rows could not be read back from their temporary file.
    #[error(transparent)]
    Series(#[from] SeriesError),
    /// The trace file could not be created.
    #[error(transparent)]
    Trace(#[from] trace::TraceFileError),
    /// More connections than the process may open files.
    #[error(
        "{connections} connections need more open files than this process may have ({limit}): raise the hard limit (ulimit -Hn, LimitNOFILE) or use fewer connections"
    )]
    FileLimit {
        /// Connections asked for.
        connections: usize,
        /// The open-file limit in force.
        limit: u64,
    },
}

/// Files a run needs besides its connections: epoll and timer fds per thread, stdio, logs.
const SPARE_FILES: u64 = 64;

/// What the threads measured, and over what time.
#[derive(Debug)]
pub struct RunOutput {
    /// One recorder per thread.
    pub recorders: Vec<Recorder>,
    /// When load started.
    pub started: SystemTime,
    /// Wall time from the end of the warm-up until every thread stopped.
    pub elapsed: Duration,
    /// CPU time each worker thread used after the warm-up.
    pub thread_cpu: Vec<Duration>,
    /// Time each worker thread waited for a CPU after the warm-up.
    pub thread_waited: Vec<Duration>,
    /// The address that was loaded.
    pub addr: std::net::SocketAddr,
    /// The time series, one row per interval ([`Config::series_interval`]), after the warm-up.
    pub series: Vec<IntervalRow>,
    /// Each thread's script globals when it ended (empty without a script).
    pub globals: Vec<Vec<(String, crate::script::Value)>>,
    /// The first script error, which ended the run.
    pub script_error: Option<ScriptError>,
}

/// What a run reports while it goes.
pub enum Progress<'a> {
    /// Every thread is ready; load starts now.
    Started,
    /// One interval, merged across threads, and its latency histograms.
    Interval(&'a IntervalRow, Latencies<'a>),
}

/// Resolves the target, builds the TLS client and renders the request: everything that can
/// fail before load starts, so a bad host is one error line and no report.
pub fn prepare(config: &Config) -> Result<Plan, EngineError> {
    let limit = net::raise_file_limit();
    let connections = config.segment_connections();
    if connections as u64 + SPARE_FILES > limit {
        return Err(EngineError::FileLimit { connections, limit });
    }
    let target = &config.target;
    let resolve = |t: &crate::config::Target| match &config.unix_socket {
        // The URL still gives Host and path; no name is resolved.
        Some(_) => Ok(std::net::SocketAddr::from(([127, 0, 0, 1], t.port))),
        None => net::resolve(&t.host, t.port, config.timeout),
    };
    let servers = config.origins();
    let addrs = servers.iter().map(resolve).collect::<Result<Vec<_>, _>>()?;
    for addr in &addrs {
        net::check_sources(&config.source_addrs, *addr)?;
    }
    let protocol = settle(config, addrs[0]);
    let alpn: &[&[u8]] = match protocol {
        // A WebSocket is upgraded from HTTP/1.1 (RFC 8441's HTTP/2 way is not spoken).
        Protocol::Http1 | Protocol::Unit(_) => &[b"http/1.1"],
        Protocol::Http2 { .. } => &[b"h2"],
        Protocol::Http3 { .. } => &[b"h3"],
    };
    let origins = servers
        .iter()
        .zip(addrs)
        .map(|(t, addr)| {
            let tls = t.tls(config.insecure, alpn).map_err(NetError::Tls)?;
            Ok(Origin { addr, tls })
        })
        .collect::<Result<Vec<_>, EngineError>>()?;
    let request =
        request::render(&config.method, &target.path, &target.host_header(), &config.headers, config.body.as_deref());
    let wire = match protocol {
        // A unit's transport comes with the workload (`Plan::with_unit`); until then its
        // connections are HTTP/1.1's.
        Protocol::Http1 | Protocol::Unit(_) => Wire::Http1,
        Protocol::Http2 { streams } => {
            let scheme = target.scheme.name();
            let fixed = crate::http::fields::from_http1(&request, scheme, &target.host_header())
                .map_err(|why| EngineError::Script(ScriptError::Runtime { hook: "request", message: why }))?;
            Wire::Http2 { streams: streams as usize, fixed }
        }
        Protocol::Http3 { streams } => {
            let fixed = crate::http::fields::from_http1(&request, Scheme::Https.name(), &target.host_header())
                .map_err(|why| EngineError::Script(ScriptError::Runtime { hook: "request", message: why }))?;
            let quic = QuicSetup { host: target.host.clone(), insecure: config.insecure };
            Wire::Http3 { streams: streams as usize, fixed, quic }
        }
    };
    Ok(Plan {
        origins,
        protocol,
        request,
        wire,
        segment: config.segment,
        timeout_us: config.timeout.as_micros() as u64,
        follow_redirects: config.follow_redirects,
        threads: config.threads,
        unix_socket: config.unix_socket.clone(),
        thread_conns: (0..config.threads).map(|i| config.connections_for(i)).collect(),
        thread_requests: (0..config.threads).map(|i| config.requests_for(i)).collect(),
        span: Span {
            duration: config.duration,
            warmup: config.warmup,
            interval: config.series_interval(),
            start_at: config.start_at,
            open_ended: config.requests.is_some() && !config.time_bound,
        },
        // A rate of streams started is not one of answers: an interval's are the streams'.
        target: config.schedule.clone().filter(|_| config.paced()),
        source_addrs: config.source_addrs.clone(),
        slow: config.slow,
        trace: trace::Shared::open(&config.trace)?,
        send: match (config.targets.is_empty(), config.pages) {
            (true, Some(browse)) => RequestSource::Pages(Box::new(PageSetup { browse, source: PageSource::Site })),
            (true, None) => RequestSource::Fixed,
            (false, _) => RequestSource::Targets(TargetList {
                requests: config
                    .targets
                    .iter()
                    .map(|t| {
                        let mut headers = config.headers.clone();
                        headers.extend(t.headers.iter().cloned());
                        let url = &t.target;
                        request::render(&t.method, &url.path, &url.host_header(), &headers, t.body.as_deref())
                    })
                    .collect(),
                random: config.targets_random,
                origin: config.target_origins(),
                origins: config.origins().len(),
            }),
        },
        when: match (&config.schedule, config.paces()) {
            (None, _) => Timing::ClosedLoop,
            (Some(s), Paces::Requests) => {
                Timing::Paced { schedule: s.clone(), tick_us: config.tick.as_micros() as u64 }
            }
            (Some(s), Paces::Streams) => Timing::Arrivals(s.clone()),
        },
    })
}

/// The protocol `config` asks for, settled: an https target without `--http2` or `--http1.1`
/// speaks what the server chooses when offered both by ALPN (one handshake here, before any
/// load); a server that cannot be reached now stays HTTP/1.1 (the run reports its errors).
fn settle(config: &Config, addr: std::net::SocketAddr) -> Protocol {
    let t = &config.target;
    match (config.protocol, t.scheme) {
        (ProtocolChoice::Exactly(protocol), _) => protocol,
        (ProtocolChoice::Negotiate, Scheme::Http) => Protocol::Http1,
        (ProtocolChoice::Negotiate, Scheme::Https) => {
            let chose_h2 = TlsSetup::new(&t.host, config.insecure, &[b"h2", b"http/1.1"])
                .ok()
                .and_then(|setup| net::tls::negotiate(addr, &setup, config.timeout).ok())
                .flatten()
                .is_some_and(|p| p == b"h2");
            if chose_h2 {
                Protocol::Http2 { streams: 1 }
            } else {
                Protocol::Http1
            }
        }
    }
}

/// Runs the load test `plan` describes until its duration passes or `stop` is set.
/// `progress` hears [`Progress::Started`] once every thread's script has run `init` (in
/// thread order, as in wrk), just before the clock starts, then each interval's merged row and
/// latency histogram as the run goes.
pub fn run(plan: &Plan, stop: &AtomicBool, progress: &mut dyn FnMut(Progress)) -> Result<RunOutput, EngineError> {
    let (tx, rx) = mpsc::channel::<Snapshot>();
    let span = &plan.span;
    let every = span.interval;
    // A soak's rows would grow its memory for as long as it runs: past a batch they are
    // compressed and kept in a temporary file.
    let mut series = Series::new(&std::env::temp_dir());
    let spares = Spares::default();
    let (results, started, start) = std::thread::scope(|scope| {
        // Inside the scope, so a panic drops the senders and no worker waits forever to start.
        let mut go = Vec::with_capacity(plan.threads);
        let handles: Vec<_> = (0..plan.threads)
            .map(|i| {
                let feed = SeriesSink { every, tx: tx.clone(), spares: spares.clone() };
                let (ready_tx, ready_rx) = mpsc::channel::<()>();
                let (go_tx, go_rx) = mpsc::channel::<Instant>();
                go.push(go_tx);
                let handle = std::thread::Builder::new()
                    .name(format!("strain-worker-{i}"))
                    .spawn_scoped(scope, move || worker_thread(plan, stop, i, ready_tx, go_rx, feed))
                    .map_err(EngineError::Thread);
                // One thread's init at a time, so what the scripts print comes in thread order.
                // An error means the thread is gone; the others carry on.
                let _ = ready_rx.recv();
                handle
            })
            .collect();
        progress(Progress::Started);
        if let Some(at) = span.start_at {
            wait_until(at, stop);
        }
        let (started, start) = (SystemTime::now(), Instant::now());
        for g in go.drain(..) {
            let _ = g.send(start);
        }
        drop(tx);
        collect_intervals(&rx, plan, &mut series, &spares, &mut |row, h| progress(Progress::Interval(row, h)));
        let results: Vec<Result<WorkerOutput, EngineError>> = handles
            .into_iter()
            .map(|h| h.and_then(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))))
            .collect();
        (results, started, start)
    });
    // A run stopped during its warm-up measured nothing, over no time.
    let elapsed = start.elapsed().saturating_sub(span.warmup);
    if let Some(t) = &plan.trace {
        t.flush();
    }
    let outputs = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    // Every row keeps its whole histogram: `strain merge` adds segments' rows exactly with it,
    // and the HTML page draws its heatmap and joins rows of long runs from it. A short run's
    // are compressed now, with the workers' connections gone: a compressor's few hundred KiB
    // would otherwise add to the run's peak memory.
    let series = series.finish()?;
    let script_error = outputs.iter().find_map(|o| o.script_error.clone());
    let thread_cpu = outputs.iter().map(|o| o.cpu).collect();
    let thread_waited = outputs.iter().map(|o| o.waited).collect();
    let (recorders, globals) = outputs.into_iter().map(|o| (o.rec, o.globals)).unzip();
    let started = started + span.warmup;
    Ok(RunOutput {
        recorders,
        started,
        elapsed,
        thread_cpu,
        thread_waited,
        addr: plan.addr(),
        series,
        globals,
        script_error,
    })
}

/// Worker thread `i`: makes its script state and says it is ready, waits for the start, then
/// runs its share of the load.
fn worker_thread(
    plan: &Plan,
    stop: &AtomicBool,
    i: usize,
    ready: mpsc::Sender<()>,
    go: mpsc::Receiver<Instant>,
    series: SeriesSink,
) -> Result<WorkerOutput, EngineError> {
    let script = worker::thread_script(plan, i);
    let _ = ready.send(());
    // No start time: the run was abandoned before it began.
    let Ok(start) = go.recv() else { return Ok(WorkerOutput::empty(None)) };
    let share = worker::Share {
        index: i,
        conns: plan.thread_conns.get(i).copied().unwrap_or(0),
        requests: plan.thread_requests.get(i).copied().flatten(),
        start,
        warm: start + plan.span.warmup,
        end: start + plan.span.duration,
        series,
    };
    match script.map_err(EngineError::Script).and_then(|s| over_wire(plan, stop, share, s)) {
        // init() or the first request() failed: the run ends, with what was measured.
        Err(EngineError::Script(e)) => {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            Ok(WorkerOutput::empty(Some(e)))
        }
        other => other,
    }
}

/// Sleeps until the wall clock reaches `at` (every segment of a test starts at the same
/// instant), or `stop` is set.
fn wait_until(at: SystemTime, stop: &AtomicBool) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Ok(left) = at.duration_since(SystemTime::now()) else { return };
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// How often a run hands the allocator's free pages back to the system.
const TRIM_EVERY: Duration = Duration::from_secs(10);

/// Hands the pages the allocator holds free, in every thread's arena, back to the system.
///
/// After a server stalls, the burst that follows allocates in the workers' arenas (nghttp2's
/// streams and frames, the links' buffers) and frees it between blocks still in use, where
/// glibc keeps it resident: each stall left a step in a long run's RSS while its live heap
/// stayed flat (docs/benchmarks.md, the soaks of issue 33). Once every [`TRIM_EVERY`], on the
/// coordinating thread, it costs a walk of the arenas' free lists.
fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it locks each arena as it goes.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Merges the threads' snapshots interval by interval, in order, until every worker is done;
/// the rows after the warm-up go to `series`, the histograms done with to `spares`.
fn collect_intervals(
    rx: &mpsc::Receiver<Snapshot>,
    plan: &Plan,
    series: &mut Series,
    spares: &Spares,
    on_interval: &mut dyn FnMut(&IntervalRow, Latencies<'_>),
) {
    let mut pending: BTreeMap<u32, Vec<Snapshot>> = BTreeMap::new();
    let warm_us = plan.span.warmup.as_micros() as u64;
    let share = 1.0 / f64::from(plan.segment.count.max(1));
    let mut v2 = hdrhistogram::serialization::V2Serializer::new();
    let mut trimmed = Instant::now();
    let mut emit = |mut parts: Vec<Snapshot>| {
        let (start, end) = (parts.iter().map(|p| p.start_us).min(), parts.iter().map(|p| p.end_us).max());
        let target = plan.target.as_ref().zip(start.zip(end)).map(|(s, (a, b))| {
            let (a, b) = (a as f64 / 1e6, (b as f64 / 1e6).min(s.duration().as_secs_f64()));
            if b > a {
                (s.due_by(b) - s.due_by(a)) / (b - a) * share
            } else {
                s.rate_at(a) * share
            }
        });
        // A replay's reader counted its own share already.
        let target = match &plan.when {
            Timing::Replay { due, .. } => start.zip(end).map(|(a, b)| due.rate_between(a, b)),
            _ => target,
        };
        let uncorrected = Snapshot::take_uncorrected(&mut parts);
        let (row, h) = IntervalRow::merge(&mut parts, target);
        spares.give_parts(parts);
        on_interval(&row, Latencies { corrected: &h, uncorrected: uncorrected.as_ref() });
        // Warm-up rows are shown live but are not part of the measured series.
        if start.is_some_and(|s| s >= warm_us) {
            let plain = crate::stats::codec::v2(&h, &mut v2);
            series.push(row, plain);
        }
        spares.give(h);
        if let Some(u) = uncorrected {
            spares.give(u);
        }
        if trimmed.elapsed() >= TRIM_EVERY {
            trimmed = Instant::now();
            give_back_free_memory();
        }
    };
    for snap in rx.iter() {
        let index = snap.index;
        let parts = pending.entry(index).or_default();
        parts.push(snap);
        if parts.len() == plan.threads {
            // Earlier intervals cannot still be missing parts: each thread sends in order.
            while let Some((&first, _)) = pending.first_key_value() {
                if first > index {
                    break;
                }
                if let Some((_, parts)) = pending.pop_first() {
                    emit(parts);
                }
            }
        }
    }
    for (_, parts) in std::mem::take(&mut pending) {
        emit(parts);
    }
}
/// Runs thread `share.index`'s share of the load over the protocol the plan settled, with
/// the script state [`worker::thread_script`] made for it.
fn over_wire(
    plan: &Plan,
    stop: &AtomicBool,
    share: Share,
    script: Option<ThreadScript>,
) -> Result<WorkerOutput, EngineError> {
    match &plan.wire {
        Wire::Http1 => {
            let transport = Http1::new(share.conns);
            worker::drive(plan, stop, share, script, transport)
        }
        Wire::Http2 { streams, fixed } => {
            let mut transport = Http2::new(share.conns, *streams, fixed.clone());
            if let Some(streaming) = plan.send.streaming() {
                transport = transport.with_streams(streaming.clone());
            }
            worker::drive(plan, stop, share, script, transport)
        }
        Wire::Http3 { streams, fixed, quic } => {
            let transport = Http3::new(share.conns, *streams, fixed, quic, plan.slow.rates.recv_buffer())?;
            worker::drive(plan, stop, share, script, transport)
        }
        Wire::Unit(unit) => unit.run(plan, stop, share, script),
    }
}
