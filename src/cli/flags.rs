//! Raw command-line flags, kept as close to wrk's as clap allows. Nothing here is validated
//! beyond value syntax; [`super::load_config`] turns these into a [`crate::config::Config`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

use super::units::{self, Dur};
use crate::defaults;

/// strain: an HTTP load generator (wrk-compatible flags).
#[derive(Debug, Parser)]
#[command(
    name = "strain",
    version,
    about = "HTTP load generator: wrk's flags and output, honest latency, a built-in origin server",
    disable_version_flag = true,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    override_usage = "strain [OPTIONS] <URL>\n       strain origin [OPTIONS]\n       strain demo [OPTIONS]\n       strain proxy [OPTIONS]\n       strain report RESULT.json... -o FILE.html\n       strain compare BASE NEW\n       strain find-max URL --slo EXPR...\n       strain merge RESULT.json...\n       strain k8s-job --segments N --image IMAGE -- [OPTIONS] <URL>"
)]
pub struct Cli {
    /// A mode other than load testing a URL.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Load test options.
    #[command(flatten)]
    pub load: LoadFlags,
    /// Print the version.
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    pub version: Option<bool>,
}

/// Modes besides `strain <url>`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the built-in origin server until Ctrl-C, then print what it served.
    Origin(OriginFlags),
    /// Load the built-in origin server in this process for a few seconds and print the report.
    Demo(DemoFlags),
    /// Test a caching proxy: client and origin in one (jtest), with a measured hit ratio.
    Proxy(Box<ProxyFlags>),
    /// Render saved results (--json files) as one HTML page, overlaid.
    Report(ReportFlags),
    /// Compare result JSONs: is the new build slower? (BASE NEW, or BASE... -- NEW...)
    Compare(CompareFlags),
    /// Find the highest rate the service sustains under its SLO (a capacity search).
    #[command(name = "find-max")]
    FindMax(Box<FindMaxFlags>),
    /// Merge the results of one test's segments (--segment I/N) into one result.
    Merge(MergeFlags),
    /// Print a Kubernetes Indexed Job that runs a load as N segments on different nodes.
    #[command(name = "k8s-job")]
    K8sJob(K8sJobFlags),
}

/// How a capacity search chooses and judges its steps: shared by `find-max`, `proxy --find-max`
/// and `demo --find-max`.
#[derive(Debug, Args)]
pub struct SearchFlags {
    /// Service level every passing rate must meet (repeatable; at least one on latency, which
    /// is measured from the intended send): p99<100ms, p(99.9)<1s, max<2s, errors<0.1%.
    #[arg(long = "slo", value_name = "EXPR")]
    pub slo: Vec<String>,
    /// First rate tried, requests/s (default: a 2 s closed-loop probe's rate / 4).
    #[arg(long = "start", value_name = "R", value_parser = units::rate)]
    pub start: Option<f64>,
    /// Highest rate tried, requests/s.
    #[arg(long = "max", value_name = "R", value_parser = units::rate)]
    pub max: Option<f64>,
    /// Stop when the highest pass and the lowest fail are this close.
    #[arg(long = "precision", value_name = "PCT", default_value = "2%", value_parser = units::percent)]
    pub precision: f64,
    /// Load before each step's measurement (not recorded).
    #[arg(long = "warmup", value_name = "T", default_value_t = Dur(defaults::SEARCH_WARMUP), value_parser = units::dur)]
    pub warmup: Dur,
    /// How long each step is measured.
    #[arg(long = "step-duration", value_name = "T", default_value_t = Dur(defaults::SEARCH_STEP), value_parser = units::dur)]
    pub step: Dur,
    /// Show this process's CPU and memory per step (repeatable; e.g. the server's pid).
    #[arg(long = "watch-pid", value_name = "PID")]
    pub watch: Vec<u32>,
}

/// Flags of `strain find-max`.
#[derive(Debug, Args)]
pub struct FindMaxFlags {
    /// How steps are chosen and judged.
    #[command(flatten)]
    pub search: SearchFlags,
    /// Connections to keep open (split evenly across threads).
    #[arg(short = 'c', long = "connections", value_name = "N", default_value_t = defaults::SEARCH_CONNECTIONS, value_parser = units::count)]
    pub connections: usize,
    /// Worker threads.
    #[arg(short = 't', long = "threads", value_name = "N", default_value_t = defaults::THREADS, value_parser = units::count)]
    pub threads: usize,
    /// Count a request with no complete response within T as a timeout.
    #[arg(short = 'T', long = "timeout", value_name = "T", default_value_t = Dur(defaults::TIMEOUT), value_parser = units::dur)]
    pub timeout: Dur,
    /// Add a request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "H")]
    pub headers: Vec<String>,
    /// Run a wrk Lua script in every step.
    #[arg(short = 's', long = "script", value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Do not verify TLS certificates (self-signed test servers).
    #[arg(short = 'k', long = "insecure")]
    pub insecure: bool,
    /// Send requests due within T together at its end (0: each at its own time).
    #[arg(long = "tick", value_name = "T", default_value_t = Dur(defaults::TICK), value_parser = units::dur)]
    pub tick: Dur,
    /// Connect from this local address (repeatable).
    #[arg(long = "source-addr", value_name = "IP")]
    pub source_addrs: Vec<std::net::IpAddr>,
    /// Speak HTTP/2 in every step (h2 by ALPN on https, h2c on http).
    #[arg(long = "http2")]
    pub http2: bool,
    /// HTTP/2: requests in flight per connection.
    #[arg(short = 'm', long = "max-streams", value_name = "N", value_parser = units::count)]
    pub max_streams: Option<usize>,
    /// Also write every step and the answer as JSON to FILE ("-" for standard output).
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also draw the latency-vs-rate curve and the steps as one HTML page.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Refused with a reason: the search chooses the rates.
    #[arg(short = 'R', long = "rate", hide = true, value_name = "N")]
    pub rate: Option<String>,
    /// Refused with a reason: the search chooses the rates.
    #[arg(long = "stages", hide = true, value_name = "LIST")]
    pub stages: Option<String>,
    /// Refused with a reason: steps have their own length.
    #[arg(short = 'd', long = "duration", hide = true, value_name = "T")]
    pub duration: Option<String>,
    /// The URL to load: http[s]://host[:port][/path][?query].
    #[arg(value_name = "URL", required = true)]
    pub url: String,
    /// Arguments for the script's init(args), after `--`.
    #[arg(last = true, value_name = "SCRIPT_ARGS")]
    pub script_args: Vec<String>,
}

/// Flags of `strain compare`.
#[derive(Debug, Args)]
pub struct CompareFlags {
    /// Result JSONs (--json) of the base; with no `--`, exactly two files: BASE NEW.
    #[arg(value_name = "BASE", required = true)]
    pub base: Vec<PathBuf>,
    /// Result JSONs of the new build, after `--`.
    #[arg(last = true, value_name = "NEW")]
    pub new: Vec<PathBuf>,
    /// The smallest change that counts, in percent: a metric significantly worse by more than
    /// this makes the exit code 98; smaller changes are within run-to-run noise.
    #[arg(long = "fail-on-regression", value_name = "PCT", default_value_t = defaults::FAIL_ON_REGRESSION_PCT)]
    pub fail_on_regression: f64,
    /// Also write the comparison as JSON to FILE ("-" for standard output).
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also draw both sides' runs overlaid on one HTML page (as `strain report` does).
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Load options shared by `strain <url>` and `strain proxy`.
#[derive(Debug, Args)]
pub struct CommonLoadFlags {
    /// Connections to keep open (split evenly across threads).
    #[arg(short = 'c', long = "connections", value_name = "N", default_value_t = defaults::CONNECTIONS, value_parser = units::count)]
    pub connections: usize,
    /// Worker threads.
    #[arg(short = 't', long = "threads", value_name = "N", default_value_t = defaults::THREADS, value_parser = units::count)]
    pub threads: usize,
    /// Test duration (500ms, 10, 10s, 2m, 1h).
    #[arg(short = 'd', long = "duration", value_name = "T", default_value_t = Dur(defaults::DURATION), value_parser = units::dur)]
    pub duration: Dur,
    /// Count a request with no complete response within T as a timeout.
    #[arg(short = 'T', long = "timeout", value_name = "T", default_value_t = Dur(defaults::TIMEOUT), value_parser = units::dur)]
    pub timeout: Dur,
    /// Print the latency distribution.
    #[arg(short = 'L', long = "latency")]
    pub latency: bool,
    /// Also write the full result as JSON to FILE ("-" for standard output).
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Do not verify TLS certificates (self-signed test servers).
    #[arg(short = 'k', long = "insecure")]
    pub insecure: bool,
    /// Hold this many requests per second in total (wrk2's -R); latency then counts from when
    /// each request should have been sent.
    #[arg(short = 'R', long = "rate", value_name = "N", value_parser = units::rate)]
    pub rate: Option<f64>,
    /// Rate stages "DURATION:RATE,...": each ramps linearly from the previous rate (or -R, or 0)
    /// to its own; the test lasts their sum. A 0s stage is a step.
    #[arg(long = "stages", value_name = "LIST", value_parser = units::stages, conflicts_with = "duration")]
    pub stages: Option<units::StageList>,
    /// With --latency in rate mode, also print the uncorrected latency (wrk2's -U).
    #[arg(short = 'U', long = "u_latency")]
    pub uncorrected: bool,
    /// Print a progress line on stderr every T (default in rate mode: 1s; closed loop: none).
    #[arg(long = "interval", value_name = "T", value_parser = units::duration)]
    pub interval: Option<Duration>,
    /// Do not draw the live status line (drawn on stderr only when it is a terminal).
    #[arg(long = "quiet")]
    pub quiet: bool,
    /// Rate mode: send requests due within T together at its end (0: each at its own time).
    #[arg(long = "tick", value_name = "T", default_value_t = Dur(defaults::TICK), value_parser = units::dur)]
    pub tick: Dur,
    /// Write the run's latency histograms as an HdrHistogram interval log to FILE.
    #[arg(long = "hdr-log", value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
    /// Connect from this local address (repeatable: connections take them in turn). Each one
    /// adds a local port range's worth of connections, e.g. 127.0.0.2 for a loopback target.
    #[arg(long = "source-addr", value_name = "IP")]
    pub source_addrs: Vec<std::net::IpAddr>,
    /// Pass/fail rule on the result, k6's style (repeatable): p99<200ms, p(99.9)<1s, max<2s,
    /// mean<50ms, errors<0.1%, errors<10, rps>=9900, hit_ratio>0.85, late<1%. A failed one
    /// makes the exit code 99.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Also write the report as one self-contained HTML page (charts over time, the percentile
    /// spectrum, the summary) to FILE.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Stop the run as soon as a threshold can no longer pass (max, error and late budgets); the
    /// full report is still printed.
    #[arg(long = "abort-on-fail", requires = "thresholds")]
    pub abort_on_fail: bool,
    /// Speak HTTP/2: h2 by ALPN on https URLs, h2c with prior knowledge on http URLs.
    #[arg(long = "http2")]
    pub http2: bool,
    /// Speak HTTP/1.1 (the default).
    #[arg(long = "http1.1", conflicts_with = "http2")]
    pub http1: bool,
    /// HTTP/2: requests in flight per connection (h2load's -m).
    #[arg(short = 'm', long = "max-streams", value_name = "N", value_parser = units::count)]
    pub max_streams: Option<usize>,
    /// Run share I of a test split N ways ("I/N", 0 <= I < N): its part of the connections and
    /// every N-th request of the rate; `strain merge` adds the N results up exactly.
    #[arg(long = "segment", value_name = "I/N", value_parser = units::segment, conflicts_with = "segments")]
    pub segment: Option<(u32, u32)>,
    /// Split N ways, this process's share read from JOB_COMPLETION_INDEX (a Kubernetes Indexed
    /// Job).
    #[arg(long = "segments", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub segments: Option<u32>,
    /// Start the load at this wall-clock instant (RFC 3339, or unix seconds), so every segment
    /// of a test starts together and their intervals line up.
    #[arg(long = "start-at", value_name = "TIME", value_parser = units::instant)]
    pub start_at: Option<std::time::SystemTime>,
}

/// Flags of `strain <url>`.
#[derive(Debug, Args)]
pub struct LoadFlags {
    /// Connections, threads, duration, rate and reports.
    #[command(flatten)]
    pub common: CommonLoadFlags,
    /// Add a request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "H")]
    pub headers: Vec<String>,
    /// Run a wrk Lua script (setup, init, delay, request, response, done).
    #[arg(short = 's', long = "script", value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// The URL to load: http[s]://host[:port][/path][?query].
    #[arg(value_name = "URL", required = true)]
    pub url: Option<String>,
    /// Arguments for the script's init(args), after `--`.
    #[arg(last = true, value_name = "SCRIPT_ARGS")]
    pub script_args: Vec<String>,
}

/// How the origin serves documents: shared by `strain origin` and `strain proxy`.
#[derive(Debug, Args)]
pub struct DocumentFlags {
    /// Freshness lifetime sent with documents (Cache-Control: max-age).
    #[arg(long = "max-age", value_name = "T", default_value_t = Dur(defaults::MAX_AGE), value_parser = units::dur)]
    pub max_age: Dur,
    /// Send documents with Cache-Control: no-cache instead of a max-age.
    #[arg(long = "no-cache")]
    pub no_cache: bool,
    /// Probability (0 to 1) that a conditional document request (If-Modified-Since,
    /// If-None-Match) gets 304 Not Modified (jtest -I).
    #[arg(long = "ims-not-modified", value_name = "P", default_value_t = defaults::IMS_NOT_MODIFIED, allow_negative_numbers = true)]
    pub ims_not_modified: f64,
    /// Wait this long before the first byte of every response (jtest -w).
    #[arg(long = "delay", value_name = "T", default_value_t = Dur(Duration::ZERO), value_parser = units::dur)]
    pub delay: Dur,
    /// Write at most B bytes per second on each connection (jtest -r; suffixes k, M, G).
    #[arg(long = "byte-rate", value_name = "B", value_parser = units::count)]
    pub byte_rate: Option<usize>,
    /// Probability (0 to 1) that a document body is cut short and its connection closed
    /// (jtest -G).
    #[arg(long = "abort-rate", value_name = "P", default_value_t = 0.0, allow_negative_numbers = true)]
    pub abort_rate: f64,
    /// Content-Type of documents: html, jpeg or text.
    #[arg(long = "content-type", value_name = "TYPE", default_value = "text", value_parser = |s: &str| s.parse::<crate::origin::ContentType>())]
    pub content_type: crate::origin::ContentType,
}

impl DocumentFlags {
    /// Checks the values and sets them on `config`.
    pub fn apply(&self, config: &mut crate::origin::OriginConfig) -> Result<(), super::CliError> {
        for (flag, p) in [("--ims-not-modified", self.ims_not_modified), ("--abort-rate", self.abort_rate)] {
            if !is_probability(p) {
                return Err(super::CliError::Usage(format!("{flag} must be a probability between 0 and 1, not {p}")));
            }
        }
        if self.byte_rate == Some(0) {
            return Err(super::CliError::Usage("--byte-rate must be above 0 (leave it out for no limit)".into()));
        }
        config.max_age = self.max_age.0;
        config.no_cache = self.no_cache;
        config.ims_not_modified = self.ims_not_modified;
        config.delay = self.delay.0;
        config.byte_rate = self.byte_rate.map(|b| b as u64);
        config.abort_rate = self.abort_rate;
        config.content_type = self.content_type;
        Ok(())
    }
}

/// Flags of `strain origin`.
#[derive(Debug, Args)]
pub struct OriginFlags {
    /// Address to listen on (loopback unless told otherwise; port 0 picks a free one).
    #[arg(long = "listen", value_name = "ADDR", default_value_t = defaults::ORIGIN_LISTEN)]
    pub listen: SocketAddr,
    /// Size of the fixed response body (paths other than documents /d/ID/LEN), in bytes.
    #[arg(long = "body-size", value_name = "BYTES", default_value_t = crate::origin::BODY_PATTERN.len(), value_parser = units::count)]
    pub body_size: usize,
    /// Status code of the fixed response (documents are always 200 or 304).
    #[arg(long = "status", value_name = "CODE", default_value_t = defaults::ORIGIN_STATUS, value_parser = clap::value_parser!(u16).range(200..=599))]
    pub status: u16,
    /// Stop answering at this time after start (for coordinated-omission tests)...
    #[arg(long = "stall-at", value_name = "T", value_parser = units::duration, requires = "stall_for")]
    pub stall_at: Option<Duration>,
    /// ...for this long; requests that arrive meanwhile are answered when it ends.
    #[arg(long = "stall-for", value_name = "T", value_parser = units::duration, requires = "stall_at")]
    pub stall_for: Option<Duration>,
    /// Event-loop threads (default: one per core).
    #[arg(short = 't', long = "threads", value_name = "N", value_parser = units::count)]
    pub threads: Option<usize>,
    /// Close each connection after N responses, the last saying Connection: close (jtest -j);
    /// 0 never.
    #[arg(long = "keepalive", value_name = "N", default_value = "0", value_parser = units::count)]
    pub keepalive: usize,
    /// Seed of the random choices (which responses are 304 or cut); the same seed repeats them.
    #[arg(long = "seed", value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Close a connection whose request head has not arrived whole this long after it began
    /// (slowloris clients); 0 never.
    #[arg(long = "header-timeout", value_name = "T", default_value_t = Dur(defaults::HEADER_TIMEOUT), value_parser = units::dur)]
    pub header_timeout: Dur,
    /// Close a connection whose client has taken none of its response this long (it asked and
    /// stopped reading); 0 never.
    #[arg(long = "send-timeout", value_name = "T", default_value_t = Dur(defaults::SEND_TIMEOUT), value_parser = units::dur)]
    pub send_timeout: Dur,
    /// Model a server of known capacity: every request (but /_strain/stats) holds one of
    /// --workers workers for T, the rest queue in arrival order (capacity: workers / T req/s).
    #[arg(long = "service-time", value_name = "T", value_parser = units::dur)]
    pub service_time: Option<Dur>,
    /// Requests served at once with --service-time (default: 1).
    #[arg(long = "workers", value_name = "N", value_parser = units::count)]
    pub workers: Option<usize>,
    /// How service times vary: fixed, or exp (exponential with mean T).
    #[arg(long = "service-time-dist", value_name = "DIST", value_enum, default_value_t = ServiceDistFlag::Fixed)]
    pub service_time_dist: ServiceDistFlag,
    /// Serve HTTPS, with ALPN h2 and http/1.1 (a self-signed certificate for 127.0.0.1 and
    /// localhost is made at start unless --cert and --key are given).
    #[arg(long = "tls")]
    pub tls: bool,
    /// With --tls: the certificate chain, a PEM file.
    #[arg(long = "cert", value_name = "FILE", requires_all = ["tls", "key"])]
    pub cert: Option<std::path::PathBuf>,
    /// With --tls: the certificate's private key, a PEM file.
    #[arg(long = "key", value_name = "FILE", requires_all = ["tls", "cert"])]
    pub key: Option<std::path::PathBuf>,
    /// How documents are served.
    #[command(flatten)]
    pub documents: DocumentFlags,
}

impl OriginFlags {
    /// Where the TLS certificate comes from; `None` without --tls.
    pub fn tls(&self) -> Option<crate::origin::TlsSource> {
        if !self.tls {
            return None;
        }
        Some(match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => crate::origin::TlsSource::Pem { cert: cert.clone(), key: key.clone() },
            _ => crate::origin::TlsSource::SelfSigned,
        })
    }

    /// The service the flags ask for, checked: none without --service-time.
    pub fn service(&self) -> Result<Option<crate::origin::Service>, super::CliError> {
        let usage = |msg: &str| Err(super::CliError::Usage(msg.into()));
        let Some(time) = self.service_time else {
            return if self.workers.is_some() { usage("--workers needs --service-time") } else { Ok(None) };
        };
        if time.0.is_zero() {
            return usage("--service-time must be above 0");
        }
        let workers = self.workers.unwrap_or(defaults::SERVICE_WORKERS);
        if workers == 0 {
            return usage("--workers must be at least 1");
        }
        let Ok(workers) = u32::try_from(workers) else { return usage("--workers must be at most 4294967295") };
        let dist = match self.service_time_dist {
            ServiceDistFlag::Fixed => crate::origin::ServiceDist::Fixed,
            ServiceDistFlag::Exp => crate::origin::ServiceDist::Exp,
        };
        Ok(Some(crate::origin::Service { time: time.0, workers, dist }))
    }
}

/// How the origin's service times vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServiceDistFlag {
    /// Every request takes exactly T.
    Fixed,
    /// Exponential with mean T.
    Exp,
}

/// Flags of `strain demo`.
#[derive(Debug, Args)]
pub struct DemoFlags {
    /// How long the demo load runs.
    #[arg(short = 'd', long = "duration", value_name = "T", default_value_t = Dur(defaults::DEMO_DURATION), value_parser = units::dur)]
    pub duration: Dur,
    /// Instead, search for the highest rate an origin with a known capacity (8 workers of 4 ms:
    /// 2,000 requests/s) sustains with p99 under 100 ms.
    #[arg(long = "find-max", conflicts_with = "duration")]
    pub find_max: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn flag_definitions_are_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}

/// How requests name the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormFlag {
    /// Absolute-form URLs to a forward proxy.
    Forward,
    /// Origin-form with Host, to a reverse proxy.
    Reverse,
    /// Origin-form with Host, to a transparent proxy.
    Transparent,
}

/// Flags of `strain proxy`.
#[derive(Debug, Args)]
pub struct ProxyFlags {
    /// The proxy under test (default: the origin itself, for a dry run).
    #[arg(long = "proxy", value_name = "HOST:PORT")]
    pub proxy: Option<String>,
    /// The origin as URLs name it (default: the in-process origin's address).
    #[arg(long = "origin", value_name = "HOST:PORT")]
    pub origin: Option<String>,
    /// Request form.
    #[arg(long = "form", value_enum, default_value = "reverse")]
    pub form: FormFlag,
    /// Talk to the proxy over TLS (https; add -k for a self-signed proxy certificate).
    #[arg(long = "proxy-tls")]
    pub proxy_tls: bool,
    /// Run only the client (the origin runs elsewhere; needs --origin).
    #[arg(long = "client-only", conflicts_with = "origin_only")]
    pub client_only: bool,
    /// Run only the origin, for clients elsewhere.
    #[arg(long = "origin-only")]
    pub origin_only: bool,
    /// Where the origin listens.
    #[arg(long = "listen", value_name = "ADDR", default_value_t = defaults::PROXY_ORIGIN_LISTEN)]
    pub listen: SocketAddr,
    /// Share of requests for the hot set (jtest -z).
    #[arg(long = "hit-rate", value_name = "P", default_value_t = defaults::HIT_RATE, value_parser = probability)]
    pub hit_rate: f64,
    /// Documents in the hot set (jtest -Z).
    #[arg(long = "hotset", value_name = "N", default_value_t = defaults::HOTSET, value_parser = units::count)]
    pub hotset: usize,
    /// Zipf popularity within the hot set, with this exponent.
    #[arg(long = "zipf", value_name = "ALPHA")]
    pub zipf: Option<f64>,
    /// Replace the hot set this many times an hour, gradually.
    #[arg(long = "evolve", value_name = "R", default_value = "0")]
    pub evolve: f64,
    /// Every document's size (default: jtest's mix, 100 B to 900 KB).
    #[arg(long = "doc-size", value_name = "BYTES", value_parser = units::count)]
    pub doc_size: Option<usize>,
    /// Cycle through the URLs (or paths) in FILE instead of generated documents.
    #[arg(long = "urls", value_name = "FILE")]
    pub urls: Option<PathBuf>,
    /// Shuffle the --urls list (seeded) instead of cycling in order.
    #[arg(long = "shuffle")]
    pub shuffle: bool,
    /// Write the first N generated URLs (N = --dump-count) to FILE and exit.
    #[arg(long = "dump-urls", value_name = "FILE")]
    pub dump_urls: Option<PathBuf>,
    /// How many URLs --dump-urls writes.
    #[arg(long = "dump-count", value_name = "N", default_value_t = defaults::DUMP_COUNT, value_parser = units::count)]
    pub dump_count: usize,
    /// Seed of every random choice.
    #[arg(long = "seed", value_name = "N", default_value_t = defaults::PROXY_SEED)]
    pub seed: u64,
    /// Open new client connections at this rate per second instead of keeping -c open; each does
    /// --keepalive requests (1 when not given), with at most -c at a time (jtest -e).
    #[arg(long = "new-conn-rate", value_name = "N", value_parser = units::rate)]
    pub new_conn_rate: Option<f64>,
    /// Requests per client connection before it is replaced (jtest -k; 0 unlimited).
    #[arg(long = "keepalive", value_name = "N", default_value = "0", value_parser = units::count)]
    pub keepalive: usize,
    /// Share of requests sent as reloads (no-cache; jtest -W).
    #[arg(long = "reload-rate", value_name = "P", default_value = "0", value_parser = probability)]
    pub reload_rate: f64,
    /// Share of requests sent with If-Modified-Since.
    #[arg(long = "ims-rate", value_name = "P", default_value = "0", value_parser = probability)]
    pub ims_rate: f64,
    /// Share of responses abandoned mid-body (jtest -g).
    #[arg(long = "client-abort-rate", value_name = "P", default_value = "0", value_parser = probability)]
    pub client_abort_rate: f64,
    /// Check every body against its URL; a wrong one is a content error.
    #[arg(long = "check-content")]
    pub check_content: bool,
    /// Requests per origin connection before the origin closes it (jtest -j; 0 unlimited).
    #[arg(long = "origin-keepalive", value_name = "N", default_value = "0", value_parser = units::count)]
    pub origin_keepalive: usize,
    /// How the in-process origin serves documents.
    #[command(flatten)]
    pub documents: DocumentFlags,
    /// Load options shared with the main command.
    #[command(flatten)]
    pub load: CommonLoadFlags,
    /// Search for the highest rate the proxy sustains under --slo (as `strain find-max`).
    #[arg(long = "find-max", requires = "slo")]
    pub find_max: bool,
    /// The capacity search, with --find-max.
    #[command(flatten)]
    pub search: SearchFlags,
}

/// Parses a probability in [0, 1].
pub fn probability(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if is_probability(p) => Ok(p),
        _ => Err(format!("'{s}' is not a probability between 0 and 1")),
    }
}

/// Whether `p` is in [0, 1] (NaN is not).
pub fn is_probability(p: f64) -> bool {
    (0.0..=1.0).contains(&p)
}

/// Flags of `strain report`.
#[derive(Debug, Args)]
pub struct ReportFlags {
    /// Result files written with --json, or one find-max search's JSON.
    #[arg(value_name = "RESULT.json", required = true)]
    pub results: Vec<PathBuf>,
    /// Where to write the page.
    #[arg(short = 'o', long = "output", value_name = "FILE.html", required = true)]
    pub output: PathBuf,
    /// A label per result, in order (default: the file name).
    #[arg(long = "label", value_name = "TEXT")]
    pub labels: Vec<String>,
}

/// Flags of `strain merge`.
#[derive(Debug, Args)]
pub struct MergeFlags {
    /// The segments' results (--json files); "-" reads results concatenated on standard input
    /// (as `cat` or `kubectl logs` give them).
    #[arg(value_name = "RESULT", required = true)]
    pub results: Vec<PathBuf>,
    /// Also write the merged result as JSON to FILE ("-" for standard output).
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the merged report as one HTML page to FILE.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Pass/fail rule judged on the merged result (repeatable, as for a run); a failed one makes
    /// the exit code 99.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Merge even results that are not one test's segments (different target or segment
    /// count, a segment missing or given twice).
    #[arg(long = "force")]
    pub force: bool,
    /// Print the latency distribution.
    #[arg(short = 'L', long = "latency")]
    pub latency: bool,
    /// With --latency in rate mode, also print the uncorrected latency (wrk2's -U).
    #[arg(short = 'U', long = "u_latency")]
    pub uncorrected: bool,
}

/// Flags of `strain k8s-job`.
#[derive(Debug, Args)]
pub struct K8sJobFlags {
    /// Pods sharing the load, one segment each (on different nodes when there are enough).
    #[arg(long = "segments", value_name = "N", required = true, value_parser = units::count)]
    pub segments: usize,
    /// The container image; its entrypoint must be strain (see Containerfile).
    #[arg(long = "image", value_name = "IMAGE", required = true)]
    pub image: String,
    /// The Job's name, a DNS-1123 label (lowercase letters, digits and '-').
    #[arg(long = "name", value_name = "NAME", default_value = defaults::K8S_NAME)]
    pub name: String,
    /// The segments start together this long after the manifest is printed: apply it before.
    #[arg(long = "start-delay", value_name = "T", default_value_t = Dur(defaults::K8S_START_DELAY), value_parser = units::dur)]
    pub start_delay: Dur,
    /// CPU each pod requests (a Kubernetes quantity: 2, 1500m).
    #[arg(long = "cpu", value_name = "QUANTITY", default_value = defaults::K8S_CPU)]
    pub cpu: String,
    /// Memory each pod requests and is limited to (512Mi, 2Gi).
    #[arg(long = "memory", value_name = "QUANTITY", default_value = defaults::K8S_MEMORY)]
    pub memory: String,
    /// The load each segment runs: strain's options and URL, after `--`.
    #[arg(last = true, value_name = "STRAIN_ARGS")]
    pub args: Vec<String>,
}
