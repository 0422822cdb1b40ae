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
mod pacer;
pub mod proxy;
mod slot;
mod timer;
mod transport;
mod worker;

use worker::WorkerOutput;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use std::time::{Duration, Instant, SystemTime};

use crate::config::{Config, Protocol, ProtocolChoice, Scheme};
use crate::http::request;
use crate::net::{self, tls::TlsSetup, NetError};
use crate::script::{ScriptError, ScriptSource, ThreadSetup, UrlParts};
use crate::stats::interval::{Feed, IntervalRow, Latencies, Snapshot, Spares};
use crate::stats::series::{Series, SeriesError};
use crate::stats::Recorder;

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

/// A script prepared for the workers: its text, the URL it sees, and what `setup` decided.
#[derive(Debug, Clone)]
pub struct PreparedScript {
    /// The script and its arguments.
    pub source: ScriptSource,
    /// The `wrk` table's URL fields.
    pub url: UrlParts,
    /// One entry per thread, from `setup(thread)`.
    pub setups: Vec<ThreadSetup>,
}

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

/// A targets file's requests, rendered, and the order they go in.
#[derive(Debug, Clone)]
pub struct TargetList {
    /// Each target's request as HTTP/1 bytes.
    pub requests: Vec<Vec<u8>>,
    /// `--targets-order random`: drawn with this seed; `None`: round-robin.
    pub random: Option<u64>,
    /// The origin (index into the plan's) of each target.
    pub origin: Vec<u16>,
    /// How many origins there are.
    pub origins: usize,
}

/// What each request is, settled before the threads start.
pub enum RequestSource {
    /// The rendered request, the same every time.
    Fixed,
    /// A wrk Lua script: its hooks, and its requests when it builds them.
    Script(PreparedScript),
    /// A proxy test: each request asks for a document its workload chooses.
    Proxy(proxy::ProxySetup),
    /// A targets file's requests.
    Targets(TargetList),
    /// A replay's requests, each with its own bytes, from the replay's reader.
    Replay,
    /// gRPC calls: their messages in turn, their answers judged by `grpc-status`.
    Grpc(std::sync::Arc<crate::grpc::call::CallSetup>),
}

/// When requests are sent, settled before the threads start.
pub enum Timing {
    /// Each connection sends its next request as soon as a response completes.
    ClosedLoop,
    /// Requests come due on a schedule (wrk2's `-R`, stages); due sends within one tick go out
    /// together.
    Paced {
        /// The whole run's schedule; each thread takes every `threads`-th request.
        schedule: crate::schedule::Schedule,
        /// The tick, in microseconds (0: each at its own time).
        tick_us: u64,
    },
    /// Connections arrive on a schedule (jtest's `-e`), each sending its requests at once; at
    /// most `-c` are open.
    Arrivals(crate::schedule::Schedule),
    /// Recorded requests come due at their replayed times, from the replay's reader.
    Replay {
        /// One queue per thread, each taken by its worker when it starts.
        queues: Vec<std::sync::Mutex<Option<mpsc::Receiver<crate::replay::reader::Batch>>>>,
        /// The tick, in microseconds (0: each at its own time).
        tick_us: u64,
        /// Requests due per interval, counted by the reader: each row's target.
        due: crate::replay::reader::DueCounts,
    },
}

/// What a run reports while it goes.
pub enum Progress<'a> {
    /// Every thread is ready; load starts now.
    Started,
    /// One interval, merged across threads, and its latency histograms.
    Interval(&'a IntervalRow, Latencies<'a>),
}

/// A server the run connects to, resolved, with its TLS client.
pub(crate) struct Origin {
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) tls: Option<TlsSetup>,
}

/// Everything settled before the threads start, shared by them read-only.
pub struct Plan {
    /// The servers: the URL's first, then those of a targets file. Each thread's connection
    /// `c` goes to origin `c mod len`.
    pub(crate) origins: Vec<Origin>,
    /// The protocol the run speaks, settled from the choice once, before load.
    pub(crate) protocol: Protocol,
    /// The request rendered from the URL and headers (a script may replace it).
    pub(crate) request: Vec<u8>,
    pub(crate) timeout_us: u64,
    pub(crate) threads: usize,
    /// `--unix-socket`: connections go to this socket instead of the URL's address.
    pub(crate) unix_socket: Option<std::path::PathBuf>,
    /// Connections each thread keeps.
    pub(crate) thread_conns: Vec<usize>,
    /// `-n`: requests each thread sends before it ends.
    pub(crate) thread_requests: Vec<Option<u64>>,
    /// How long the load goes and how its time is cut.
    pub(crate) span: Span,
    /// Rate mode: the schedule each interval's target comes from.
    pub(crate) target: Option<crate::schedule::Schedule>,
    pub(crate) source_addrs: Vec<std::net::IpAddr>,
    pub(crate) send: RequestSource,
    pub(crate) when: Timing,
    pub(crate) wire: Wire,
    /// This process's share of the test: its threads pace every `count`-th request.
    pub(crate) segment: crate::config::Segment,
}

/// How long a run goes and how its time is cut.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    /// From the start of load to the end of sending, warm-up included.
    pub(crate) duration: Duration,
    /// Load before measuring starts.
    pub(crate) warmup: Duration,
    /// The time series' interval.
    pub(crate) interval: Duration,
    /// When every segment starts (`--start-at`).
    pub(crate) start_at: Option<SystemTime>,
    /// `-n` without `-d`: the run ends when its count is answered (or its schedule is all
    /// sent), never at `duration`, which is then only the schedule's expected length.
    pub(crate) open_ended: bool,
}

/// How requests travel, settled before the threads start.
pub enum Wire {
    /// HTTP/1.1 on each connection.
    Http1,
    /// HTTP/2 streams: `streams` in flight per connection.
    Http2 {
        /// Requests in flight per connection.
        streams: usize,
        /// The URL's request as HTTP/2 fields.
        fixed: crate::http::fields::FieldRequest,
    },
    /// HTTP/3 over QUIC: `streams` in flight per connection.
    Http3 {
        /// Requests in flight per connection.
        streams: usize,
        /// The URL's request as fields (HTTP/3 has HTTP/2's pseudo-headers).
        fixed: crate::http::fields::FieldRequest,
        /// How each thread sets up its QUIC connections.
        quic: QuicSetup,
    },
    /// WebSocket: each connection upgraded, then messages.
    WebSocket(std::sync::Arc<crate::ws::WsLoad>),
}

/// What a thread needs to make its QUIC client configuration (each thread makes its own:
/// quiche's configuration holds a TLS context that is not shared between threads).
#[derive(Debug, Clone)]
pub struct QuicSetup {
    /// The server name sent in SNI and checked against the certificate.
    pub host: String,
    /// `--insecure`: any certificate is accepted.
    pub insecure: bool,
}

impl Plan {
    /// The address that will be loaded (the URL's server).
    pub fn addr(&self) -> std::net::SocketAddr {
        self.origins[0].addr
    }

    /// Whether connections speak TLS.
    pub(crate) fn https(&self) -> bool {
        self.origins[0].tls.is_some()
    }

    /// The protocol the run speaks.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Makes this a proxy test: each request asks for a document chosen by `proxy`; with a
    /// new-connection rate, connections arrive on that schedule.
    pub fn with_proxy(mut self, proxy: proxy::ProxySetup) -> Plan {
        if let Some(rate) = proxy.new_conn_rate {
            self.when = Timing::Arrivals(crate::schedule::Schedule::constant(rate, self.span.duration));
        }
        self.send = RequestSource::Proxy(proxy);
        self
    }

    /// Makes this a replay: thread `i` sends what `queues[i]` brings, each request when due.
    pub fn with_replay(
        mut self,
        queues: Vec<mpsc::Receiver<crate::replay::reader::Batch>>,
        tick: Duration,
        due: crate::replay::reader::DueCounts,
    ) -> Plan {
        let queues = queues.into_iter().map(|q| std::sync::Mutex::new(Some(q))).collect();
        self.when = Timing::Replay { queues, tick_us: tick.as_micros() as u64, due };
        self.send = RequestSource::Replay;
        self
    }

    /// Drops the replay queues no worker took, so the replay's reader never waits on them.
    pub fn close_replay(&self) {
        if let Timing::Replay { queues, .. } = &self.when {
            for q in queues {
                if let Ok(mut q) = q.lock() {
                    q.take();
                }
            }
        }
    }

    /// Makes this a gRPC load: each request is a call of `calls`, and its answer is judged by
    /// its `grpc-status` and messages.
    pub fn with_grpc(mut self, calls: std::sync::Arc<crate::grpc::call::CallSetup>) -> Result<Plan, EngineError> {
        if let Some(first) = calls.fixed(0) {
            self.request = first.to_vec();
            let scheme = if self.https() { "https" } else { "http" };
            if let Wire::Http2 { fixed, .. } = &mut self.wire {
                let authority = fixed
                    .fields
                    .iter()
                    .find(|(n, _)| n == b":authority")
                    .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                    .unwrap_or_default();
                *fixed = crate::http::fields::from_http1(first, scheme, &authority)
                    .map_err(|why| EngineError::Script(ScriptError::Runtime { hook: "request", message: why }))?;
                // gRPC frames its own messages: a Content-Length is one more field to encode
                // and for the server to check on every call.
                fixed.fields.retain(|(name, _)| name != b"content-length");
            }
        }
        self.send = RequestSource::Grpc(calls);
        Ok(self)
    }

    /// Makes this a WebSocket load: each connection is upgraded as `load` offers, and each
    /// request is one of its messages.
    pub fn with_websocket(mut self, load: std::sync::Arc<crate::ws::WsLoad>) -> Plan {
        self.wire = Wire::WebSocket(load);
        self
    }

    /// Attaches a script (after its `setup` ran against [`Plan::addr`]).
    pub fn with_script(mut self, script: PreparedScript) -> Plan {
        self.send = RequestSource::Script(script);
        self
    }
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
        Protocol::Http1 | Protocol::WebSocket => &[b"http/1.1"],
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
        // The message and the upgrade come with the workload (`Plan::with_websocket`); until
        // then its connections are HTTP/1.1's.
        Protocol::Http1 | Protocol::WebSocket => Wire::Http1,
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
        target: config.schedule.clone(),
        source_addrs: config.source_addrs.clone(),
        send: match config.targets.is_empty() {
            true => RequestSource::Fixed,
            false => RequestSource::Targets(TargetList {
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
        when: match &config.schedule {
            None => Timing::ClosedLoop,
            Some(s) => Timing::Paced { schedule: s.clone(), tick_us: config.tick.as_micros() as u64 },
        },
    })
}

/// The protocol `config` asks for, settled: an https target without `--http2` or `--http1.1`
/// speaks what the server chooses when offered both by ALPN (one handshake here, before any
/// load); a server that cannot be reached now stays HTTP/1.1 (the run reports its errors).
fn settle(config: &Config, addr: std::net::SocketAddr) -> Protocol {
    let t = &config.target;
    match (config.protocol, t.scheme) {
        (ProtocolChoice::Http2 { streams }, _) => Protocol::Http2 { streams },
        (ProtocolChoice::Http3 { streams }, _) => Protocol::Http3 { streams },
        (ProtocolChoice::WebSocket, _) => Protocol::WebSocket,
        (ProtocolChoice::Http1, _) | (ProtocolChoice::Negotiate, Scheme::Http) => Protocol::Http1,
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
                let feed = Feed { every, tx: tx.clone(), spares: spares.clone() };
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
    series: Feed,
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
    match script.map_err(EngineError::Script).and_then(|s| worker::run(plan, stop, share, s)) {
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
