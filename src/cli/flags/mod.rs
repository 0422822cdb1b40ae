//! Raw command-line flags, kept as close to wrk's as clap allows. Nothing here is validated
//! beyond value syntax; [`super::load`] turns them into a [`crate::config::Config`].
//!
//! Each flag is defined once, in a group, and every command that takes it flattens that group
//! (ripgrep's one definition per flag): a command either honours a flag or does not accept it,
//! so clap refuses it with exit 2. The groups: how the load connects ([`ConnectFlags`]), what
//! it asks for ([`RequestFlags`]), how long and how fast ([`LengthFlags`]), which share of a
//! split test ([`SegmentFlags`]), what the text shows ([`TextFlags`]), what happens while it
//! runs ([`LiveFlags`]), how it is judged ([`ThresholdFlags`]), and the result files
//! ([`ResultFiles`]).

pub mod protocol;
mod replay;
mod results;
mod server;

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand};

pub use protocol::{CompareCmd, FindMaxCmd, ProtocolCmd, ProtocolFlags, ProtocolMode};
pub use replay::{files as replay_files, ReplayFlags};
pub use results::{CompareFlags, K8sJobFlags, MergeFlags, ReportFlags, RunnerFlags};
pub use server::{
    is_probability, probability, DocumentFlags, ExtensionFlag, FormFlag, OriginFlags, ProxyFlags, ServiceDistFlag,
};

use super::units::{self, Dur};
use crate::defaults;

/// The usage lines of `strain --help`; the units' commands are added to them (see
/// [`crate::cli::run`]).
pub const USAGE: &str = "strain [OPTIONS] <URL>\n       strain origin [OPTIONS]\n       strain demo [OPTIONS]\n       strain proxy [OPTIONS]\n       strain report RESULT.json... -o FILE.html\n       strain compare URL_A URL_B [OPTIONS] | strain compare BASE NEW\n       strain find-max URL --slo EXPR...\n       strain merge RESULT.json...\n       strain replay FILE... [URL] [OPTIONS]\n       strain k8s-job --segments N --image IMAGE -- [OPTIONS] <URL>\n       strain completions SHELL | strain man";

/// strain: an HTTP load generator (wrk-compatible flags).
#[derive(Debug, Parser)]
#[command(
    name = "strain",
    version = crate::cli::VERSION,
    about = "HTTP load generator: wrk's flags and output, honest latency, a built-in origin server",
    disable_version_flag = true,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    override_usage = USAGE
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
    Origin(Deferred<Box<OriginFlags>>),
    /// Load the built-in origin server in this process for a few seconds and print the report.
    Demo(Deferred<DemoFlags>),
    /// Test a caching proxy: client and origin in one (jtest), with a measured hit ratio.
    Proxy(Deferred<Box<ProxyFlags>>),
    /// Render saved results (--json files) as one HTML page, overlaid.
    Report(Deferred<ReportFlags>),
    /// Is the new build slower? Run two URLs A/B, interleaved (URL_A URL_B [load flags]), or
    /// judge saved results (BASE NEW, or BASE... -- NEW...).
    Compare(Deferred<Box<CompareFlags>>),
    /// Find the highest rate the service sustains under its SLO (a capacity search).
    #[command(name = "find-max")]
    FindMax(Deferred<Box<FindMaxFlags>>),
    /// Merge the results of one test's segments (--segment I/N) into one result.
    Merge(Deferred<MergeFlags>),
    /// Replay recorded traffic (access logs, HAR, JSON lines, Proxy Verifier files) at its
    /// recorded pace, latency measured from each request's due time.
    Replay(Deferred<Box<ReplayFlags>>),
    /// Print a Kubernetes Indexed Job that runs a load as N segments on different nodes.
    #[command(name = "k8s-job")]
    K8sJob(Deferred<K8sJobFlags>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `strain man > strain.1`, read with `man -l strain.1`.
    Man,
}

/// A command's flags, defined to clap only when that command is the one run: building every
/// command's flags to parse one of them touched their code and heap at every start (adding
/// `strain ws`'s three commands added 1 MB to every run's peak RSS). Help, completions and the
/// man page build them all, as clap does for them.
#[derive(Debug)]
pub struct Deferred<T>(pub T);

impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.defer(|cmd| keep_about(cmd, T::augment_args))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(|cmd| keep_about(cmd, T::augment_args_for_update))
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

impl<T: clap::FromArgMatches> clap::FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Deferred)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }
}

/// `cmd` with `augment`'s flags and the command's own description: the flags' struct would put
/// its doc comment in its place, where the command's (the enum variant's) was set first.
pub(crate) fn keep_about(cmd: clap::Command, augment: fn(clap::Command) -> clap::Command) -> clap::Command {
    let (about, long) = (cmd.get_about().cloned(), cmd.get_long_about().cloned());
    let mut cmd = augment(cmd);
    if let Some(about) = about {
        cmd = cmd.about(about);
    }
    match long {
        Some(long) => cmd.long_about(long),
        None => cmd.long_about(None::<&'static str>),
    }
}

/// How the load connects: every command that sends load, whatever its protocol.
#[derive(Debug, Clone, Args)]
pub struct ConnectFlags {
    /// Connections to keep open, split evenly across threads (default 10; find-max, replay: 100).
    #[arg(short = 'c', long = "connections", value_name = "N", value_parser = units::count)]
    pub connections: Option<usize>,
    /// Worker threads.
    #[arg(short = 't', long = "threads", value_name = "N", default_value_t = defaults::THREADS, value_parser = units::count)]
    pub threads: usize,
    /// Count a request with no complete response within T as a timeout.
    #[arg(short = 'T', long = "timeout", value_name = "T", default_value_t = Dur(defaults::TIMEOUT), value_parser = units::dur)]
    pub timeout: Dur,
    /// Do not verify TLS certificates (self-signed test servers).
    #[arg(short = 'k', long = "insecure")]
    pub insecure: bool,
    /// Rate mode: send requests due within T together at its end (0: each at its own time).
    #[arg(long = "tick", value_name = "T", default_value_t = Dur(defaults::TICK), value_parser = units::dur)]
    pub tick: Dur,
    /// Connect from this local address (repeatable: connections take them in turn). Each one
    /// adds a local port range's worth of connections, e.g. 127.0.0.2 for a loopback target.
    #[arg(long = "source-addr", value_name = "IP")]
    pub source_addrs: Vec<std::net::IpAddr>,
    /// Connect to this Unix-domain socket instead of the URL's host and port (the URL still
    /// gives Host and path; http:// only).
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,
    /// A slow reader: read each connection at most RATE bytes per second (1k, 10kB/s, 1M);
    /// the time spent reading slowly is part of each request's latency.
    #[arg(long = "read-rate", value_name = "RATE", value_parser = units::byte_rate)]
    pub read_rate: Option<u64>,
    /// A slow sender: write each connection at most RATE bytes per second, headers and bodies
    /// dribbled alike.
    #[arg(long = "write-rate", value_name = "RATE", value_parser = units::byte_rate)]
    pub write_rate: Option<u64>,
    /// Close each connection as soon as a response's Content-Length has arrived, whatever the
    /// server would keep open.
    #[arg(long = "drop-after-length")]
    pub drop_after_length: bool,
    /// Print the first N exchanges, and the first of each status or error kind not seen
    /// before, on stderr: the request sent, the response's status, headers and first 512 body
    /// bytes, and the connect, TLS, first-byte and last-byte times.
    #[arg(long = "trace", value_name = "N", value_parser = units::count, allow_hyphen_values = true)]
    pub trace: Option<usize>,
    /// Write every exchange to FILE as JSON lines (for a short run).
    #[arg(long = "trace-file", value_name = "FILE")]
    pub trace_file: Option<PathBuf>,
}

/// Which HTTP the load speaks: the commands whose protocol is HTTP itself (gRPC is always
/// HTTP/2, a WebSocket always upgraded HTTP/1.1: their commands do not offer these).
#[derive(Debug, Clone, Default, Args)]
pub struct HttpFlags {
    /// Speak HTTP/2: h2 by ALPN on https URLs, h2c with prior knowledge on http URLs.
    #[arg(long = "http2")]
    pub http2: bool,
    /// Speak HTTP/1.1 even to an https server that prefers h2 (without a flag, https speaks
    /// what the server chooses by ALPN, http speaks HTTP/1.1).
    #[arg(long = "http1.1", conflicts_with_all = ["http2", "http3"])]
    pub http1: bool,
    /// Speak HTTP/3 over QUIC (UDP, ALPN h3) to an https URL.
    #[arg(long = "http3", conflicts_with = "http2")]
    pub http3: bool,
    /// Requests in flight per connection.
    #[command(flatten)]
    pub streams: StreamsFlag,
}

/// `-m`: requests (or calls) in flight per connection, over HTTP/2 and HTTP/3.
#[derive(Debug, Clone, Default, Args)]
pub struct StreamsFlag {
    /// HTTP/2 and HTTP/3: requests in flight per connection (h2load's -m).
    #[arg(short = 'm', long = "max-streams", value_name = "N", value_parser = units::count)]
    pub max_streams: Option<usize>,
}

/// What each request is, and where it goes: a URL, headers, a script (not proxy tests, whose
/// workload builds the requests).
#[derive(Debug, Args)]
pub struct RequestFlags {
    /// Add a request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "H")]
    pub headers: Vec<String>,
    /// Run a wrk Lua script (setup, init, delay, request, response, done).
    #[arg(short = 's', long = "script", value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// The request's method (GET, POST, PUT, DELETE, HEAD, ...).
    #[arg(short = 'X', long = "method", value_name = "M", conflicts_with = "script")]
    pub method: Option<String>,
    /// Send this body with every request (a Content-Length from its size; set Content-Type
    /// with -H).
    #[arg(long = "body", value_name = "STRING", conflicts_with_all = ["script", "body_file"])]
    pub body: Option<String>,
    /// Send this file's bytes, as they are, as every request's body.
    #[arg(long = "body-file", value_name = "FILE", conflicts_with = "script")]
    pub body_file: Option<PathBuf>,
    /// Send the requests of this file in turn (vegeta's HTTP format, or JSON lines); the URL
    /// argument is then optional.
    #[arg(long = "targets", value_name = "FILE", conflicts_with_all = ["script", "method", "body", "body_file"])]
    pub targets: Option<PathBuf>,
    /// The targets' order: round-robin (exact over the run) or random.
    #[arg(
        long = "targets-order",
        value_name = "ORDER",
        value_enum,
        default_value = "round-robin",
        requires = "targets"
    )]
    pub targets_order: TargetsOrder,
    /// Seed of a random targets order.
    #[arg(long = "seed", value_name = "N", default_value_t = 1, requires = "targets")]
    pub seed: u64,
    /// Follow up to N redirects (301, 302, 303, 307, 308) to the same host, as one request
    /// whose latency is the whole chain; off by default, as in wrk (a redirect is then an
    /// answer like any other).
    #[arg(long = "follow-redirects", value_name = "N", default_value = "0", value_parser = units::count)]
    pub follow_redirects: usize,
}

/// Whole pages (`--fullpage`): `strain URL` and `strain proxy` load pages as a browser does.
#[derive(Debug, Clone, Default, Args)]
pub struct PageFlags {
    /// Load whole pages as a browser does (jtest -l): each 6 connections are a browser that
    /// asks for a page, then for every object the page embeds (read from its HTML), in
    /// parallel over its connections; reports page load time beside request latency. -n counts
    /// pages. Closed loop only.
    #[arg(long = "fullpage")]
    pub fullpage: bool,
    /// With --fullpage: each next page is one the last page links to (jtest -F), up to
    /// --max-depth links from where the browser started; otherwise every page is a new one.
    #[arg(long = "follow", requires = "fullpage")]
    pub follow: bool,
    /// With --fullpage: fetch only from the page's host (jtest -J), even through a forward
    /// proxy, which could reach others (a direct run always keeps to the URL's host).
    #[arg(long = "same-host", requires = "fullpage")]
    pub same_host: bool,
    /// With --follow: links followed from a starting page before the browser starts again
    /// [default: 3].
    #[arg(long = "max-depth", value_name = "N", requires = "follow", value_parser = units::count, allow_hyphen_values = true)]
    pub max_depth: Option<usize>,
}

impl PageFlags {
    /// How pages are browsed, when they are.
    pub fn browse(&self) -> Option<crate::config::Browse> {
        use crate::config::Browse;
        self.fullpage.then(|| Browse {
            follow: self.follow,
            same_host: self.same_host,
            max_depth: self.max_depth.map_or(Browse::DEFAULT_DEPTH, |d| u32::try_from(d).unwrap_or(u32::MAX)),
        })
    }
}

/// The order a targets file's requests go in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetsOrder {
    /// In the file's order, over and over.
    RoundRobin,
    /// Drawn at random (with --seed).
    Random,
}

/// How long the load runs and at what rate (not find-max, which chooses both per step).
#[derive(Debug, Clone, Args)]
pub struct LengthFlags {
    /// Test duration (500ms, 10, 10s, 2m, 1h) [default: 10s; with -n: until the N are answered].
    #[arg(short = 'd', long = "duration", value_name = "T", value_parser = units::dur)]
    pub duration: Option<Dur>,
    /// Send exactly N requests, then end (with -R at that rate; with -d whichever comes first).
    #[arg(short = 'n', long = "requests", value_name = "N", value_parser = units::count, conflicts_with = "stages")]
    pub requests: Option<usize>,
    /// Hold this many requests per second in total (wrk2's -R); latency then counts from when
    /// each request should have been sent.
    #[arg(short = 'R', long = "rate", value_name = "N", value_parser = units::rate)]
    pub rate: Option<f64>,
    /// Rate stages "DURATION:RATE,...": each ramps linearly from the previous rate (or -R, or 0)
    /// to its own; the test lasts their sum. A 0s stage is a step.
    #[arg(long = "stages", value_name = "LIST", value_parser = units::stages, conflicts_with = "duration")]
    pub stages: Option<units::StageList>,
}

/// Which share of a test split over several processes this one runs.
#[derive(Debug, Args)]
pub struct SegmentFlags {
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

/// What wrk's text report shows beyond its default lines.
#[derive(Debug, Args)]
pub struct TextFlags {
    /// Print the latency distribution.
    #[arg(short = 'L', long = "latency")]
    pub latency: bool,
    /// With --latency in rate mode, also print the uncorrected latency (wrk2's -U).
    #[arg(short = 'U', long = "u_latency")]
    pub uncorrected: bool,
}

/// What a single run shows and does while it goes.
#[derive(Debug, Args)]
pub struct LiveFlags {
    /// Cut the time series (JSON, HTML, --hdr-log) every T and print a progress line on stderr
    /// for each row. Without it: T from the run's length (1s from 40s up, else the longest of
    /// 500ms, 200ms, ... 10ms giving 40 rows; -n: 100ms), a line a second in rate mode, none in
    /// closed loop.
    #[arg(long = "interval", value_name = "T", value_parser = units::duration)]
    pub interval: Option<Duration>,
    /// Do not draw the live status line (drawn on stderr only when it is a terminal).
    #[arg(long = "quiet")]
    pub quiet: bool,
    /// Write the run's latency histograms as an HdrHistogram interval log to FILE.
    #[arg(long = "hdr-log", value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
    /// Stop the run as soon as a threshold can no longer pass (max, error and late budgets); the
    /// full report is still printed.
    #[arg(long = "abort-on-fail", requires = "thresholds")]
    pub abort_on_fail: bool,
}

/// Pass/fail rules on a result.
#[derive(Debug, Args)]
pub struct ThresholdFlags {
    /// Pass/fail rule on the result, k6's style (repeatable): p99<200ms, p(99.9)<1s, max<2s,
    /// mean<50ms, errors<0.1%, errors<10, rps>=9900, hit_ratio>0.85, late<1%. A failed one
    /// makes the exit code 99.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
}

/// Live metrics for Prometheus, in every mode.
#[derive(Debug, Args)]
pub struct MetricsFlags {
    /// Serve live metrics at http://ADDR/metrics while the test runs (Prometheus text, or
    /// OpenMetrics when asked), e.g. 127.0.0.1:9464 (port 0 picks one and prints it).
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// After the test, keep serving the final values this long, so the last scrape sees the
    /// totals.
    #[arg(long = "metrics-linger", value_name = "T", value_parser = units::duration, default_value = "0s", requires = "metrics_listen")]
    pub metrics_linger: Duration,
    /// Send the metrics to a Prometheus remote-write URL (http://…/api/v1/write) once a
    /// second and at the end; a slow or absent receiver never slows the load.
    #[arg(long = "metrics-push", value_name = "URL")]
    pub metrics_push: Option<String>,
    /// A label on every metric series, KEY=VALUE (repeatable), e.g. --tag run=nightly.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = tag)]
    pub tags: Vec<(String, String)>,
}

/// Parses `--tag KEY=VALUE`.
fn tag(s: &str) -> Result<(String, String), String> {
    crate::metrics::Tags::parse_one(s).map_err(|e| e.to_string())
}

impl MetricsFlags {
    /// The settings of a test whose segment (of a split test) is `segment`.
    pub fn settings(&self, segment: Option<u32>) -> crate::metrics::Settings {
        crate::metrics::Settings {
            listen: self.metrics_listen,
            linger: self.metrics_linger,
            push: self.metrics_push.clone(),
            tags: crate::metrics::Tags(self.tags.clone()).with_segment(segment),
        }
    }
}

/// Where the result goes besides the text.
#[derive(Debug, Args)]
pub struct ResultFiles {
    /// Also write the result as JSON to FILE ("-" for standard output).
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the result as one self-contained HTML page to FILE.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// What a single run takes besides how it connects: `strain <url>` and `strain proxy` (not a
/// search, which chooses each step's rate and length, and judges by its SLO).
#[derive(Debug, Args)]
pub struct RunFlags {
    /// Duration and rate.
    #[command(flatten)]
    pub length: LengthFlags,
    /// Segments of a split test.
    #[command(flatten)]
    pub segment: SegmentFlags,
    /// What the text shows.
    #[command(flatten)]
    pub text: TextFlags,
    /// Progress, status line, HdrHistogram log, abort-on-fail.
    #[command(flatten)]
    pub live: LiveFlags,
    /// Thresholds.
    #[command(flatten)]
    pub checks: ThresholdFlags,
    /// JSON and HTML.
    #[command(flatten)]
    pub files: ResultFiles,
    /// Live metrics for Prometheus.
    #[command(flatten)]
    pub metrics: MetricsFlags,
}

/// Flags of `strain <url>`.
#[derive(Debug, Args)]
pub struct LoadFlags {
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// HTTP/1.1, HTTP/2 or HTTP/3, and streams per connection.
    #[command(flatten)]
    pub http: HttpFlags,
    /// Headers and script.
    #[command(flatten)]
    pub request: RequestFlags,
    /// Whole pages.
    #[command(flatten)]
    pub pages: PageFlags,
    /// Length, segments, text, progress, thresholds, result files.
    #[command(flatten)]
    pub run: RunFlags,
    /// The URL to load: http[s]://host[:port][/path][?query] (optional with --targets).
    #[arg(value_name = "URL", required_unless_present = "targets")]
    pub url: Option<String>,
    /// Arguments for the script's init(args), after `--`.
    #[arg(last = true, value_name = "SCRIPT_ARGS")]
    pub script_args: Vec<String>,
}

/// How a capacity search chooses and judges its steps: shared by `find-max`, `proxy --find-max`
/// and `demo --find-max`. The defaults are applied when the search is made, so that `proxy`
/// can tell a search flag given without `--find-max` (and refuse it).
#[derive(Debug, Args)]
pub struct FindMaxOptions {
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
    /// Stop when the highest pass and the lowest fail are this close [default: 2%].
    #[arg(long = "precision", value_name = "PCT", value_parser = units::percent)]
    pub precision: Option<f64>,
    /// Load before each step's measurement, not recorded [default: 2s].
    #[arg(long = "warmup", value_name = "T", value_parser = units::dur)]
    pub warmup: Option<Dur>,
    /// How long each step is measured [default: 10s].
    #[arg(long = "step-duration", value_name = "T", value_parser = units::dur)]
    pub step: Option<Dur>,
    /// Show this process's CPU and memory per step (repeatable; e.g. the server's pid).
    #[arg(long = "watch-pid", value_name = "PID")]
    pub watch: Vec<u32>,
}

/// Flags of `strain find-max`.
#[derive(Debug, Args)]
pub struct FindMaxFlags {
    /// How steps are chosen and judged.
    #[command(flatten)]
    pub search: FindMaxOptions,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// HTTP/1.1, HTTP/2 or HTTP/3, and streams per connection.
    #[command(flatten)]
    pub http: HttpFlags,
    /// Headers and script, in every step.
    #[command(flatten)]
    pub request: RequestFlags,
    /// Every step and the answer as JSON; the latency-vs-rate curve as HTML.
    #[command(flatten)]
    pub files: ResultFiles,
    /// Live metrics for Prometheus, over every step.
    #[command(flatten)]
    pub metrics: MetricsFlags,
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

impl FindMaxOptions {
    /// The first search flag given, by name (`None`: no search was asked for).
    pub fn first_given(&self) -> Option<&'static str> {
        [
            ("--slo", !self.slo.is_empty()),
            ("--start", self.start.is_some()),
            ("--max", self.max.is_some()),
            ("--precision", self.precision.is_some()),
            ("--warmup", self.warmup.is_some()),
            ("--step-duration", self.step.is_some()),
            ("--watch-pid", !self.watch.is_empty()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn flag_definitions_are_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
