//! The plan of a run: everything [`super::prepare`] settles before the threads start (the
//! servers, the protocol, what each request is and when it is sent), shared by the workers
//! read-only.

use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use super::judged::Judged;
use super::{proxy, EngineError};
use crate::config::Protocol;
use crate::net::tls::TlsSetup;
use crate::script::{ScriptError, ScriptSource, ThreadSetup, UrlParts};

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
    /// Whole pages (`--fullpage`): each browser's page, then what it embeds.
    Pages(Box<PageSetup>),
    /// A targets file's requests.
    Targets(TargetList),
    /// A replay's requests, each with its own bytes, from the replay's reader.
    Replay,
    /// A workload that judges its own answers (gRPC's calls, by `grpc-status`).
    Judged(std::sync::Arc<dyn Judged>),
}

/// Whole pages: how they are browsed, and where the pages come from.
#[derive(Debug)]
pub struct PageSetup {
    /// `--follow`, `--same-host`, `--max-depth`.
    pub browse: crate::config::Browse,
    /// Where each new page comes from.
    pub source: PageSource,
}

/// Where a browser's new pages come from.
#[derive(Debug)]
pub enum PageSource {
    /// The URL's page, over and over (its links when following).
    Site,
    /// A proxy test's documents, asked for as pages.
    Proxy(proxy::ProxySetup),
}

impl RequestSource {
    /// How each exchange streams its requests, for a workload whose requests stream (gRPC's
    /// client-streaming and bidi calls).
    pub fn streaming(&self) -> Option<&crate::grpc::call::Streaming> {
        match self {
            RequestSource::Judged(j) => j.streaming(),
            _ => None,
        }
    }
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
    /// Redirects to the same host followed as part of one request.
    pub(crate) follow_redirects: u32,
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
    /// A slow or odd client's rates and closes.
    pub(crate) slow: crate::config::Slow,
    /// `--trace`, `--trace-file`: what the threads share of the trace, when there is one.
    pub(crate) trace: Option<std::sync::Arc<crate::engine::trace::Shared>>,
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
    /// A unit's own transport (WebSocket's): each connection is its, the worker the same.
    Unit(std::sync::Arc<dyn Launch>),
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
        self.send = match &self.send {
            RequestSource::Pages(p) => {
                RequestSource::Pages(Box::new(PageSetup { browse: p.browse, source: PageSource::Proxy(proxy) }))
            }
            _ => RequestSource::Proxy(proxy),
        };
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

    /// Makes this a load whose answers `judged` judges (gRPC's calls): each request is its
    /// next exchange.
    pub fn with_judged(mut self, judged: std::sync::Arc<dyn Judged>) -> Result<Plan, EngineError> {
        if let Some(first) = judged.first() {
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
                // Such exchanges frame their own messages (gRPC's): a Content-Length is one
                // more field to encode and for the server to check on every call.
                fixed.fields.retain(|(name, _)| name != b"content-length");
            }
        }
        self.send = RequestSource::Judged(judged);
        Ok(self)
    }

    /// Makes this a unit's load: its connections are its own transport's.
    pub fn with_unit(mut self, unit: std::sync::Arc<dyn Launch>) -> Plan {
        self.wire = Wire::Unit(unit);
        self
    }

    /// Attaches a script (after its `setup` ran against [`Plan::addr`]).
    pub fn with_script(mut self, script: PreparedScript) -> Plan {
        self.send = RequestSource::Script(script);
        self
    }
}

/// A unit's transport, settled before the threads start: it runs each thread's share of the
/// load over a transport of its own, through [`crate::engine::drive`].
pub trait Launch: Send + Sync + std::fmt::Debug {
    /// Runs thread `share.index`'s share.
    fn run(
        &self,
        plan: &Plan,
        stop: &std::sync::atomic::AtomicBool,
        share: super::Share,
        script: Option<crate::script::ThreadScript>,
    ) -> Result<super::WorkerOutput, super::EngineError>;
}

/// A unit's load that one transport of its own carries: each thread's share is that transport
/// driven by the engine (its [`Launch`] follows).
pub trait Carried: Clone + Send + Sync + std::fmt::Debug + 'static {
    /// The transport.
    type Transport: super::Transport;
    /// Thread `index`'s (of `threads`) transport of `load` over `conns` slots.
    fn transport(load: std::sync::Arc<Self>, conns: usize, index: usize, threads: usize) -> Self::Transport;
}

impl<L: Carried> Launch for L {
    fn run(
        &self,
        plan: &Plan,
        stop: &std::sync::atomic::AtomicBool,
        share: super::Share,
        script: Option<crate::script::ThreadScript>,
    ) -> Result<super::WorkerOutput, super::EngineError> {
        let transport = L::transport(std::sync::Arc::new(self.clone()), share.conns, share.index, plan.threads);
        super::drive(plan, stop, share, script, transport)
    }
}
