//! Every default, in one place: the command line shows these in its help and the code that
//! builds a test without flags (a library caller, the demo) uses the same constants.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

/// Connections kept open when `-c` is not given (wrk's default).
pub const CONNECTIONS: usize = 10;
/// Worker threads when `-t` is not given (wrk's default).
pub const THREADS: usize = 2;
/// Test length when `-d` is not given (wrk's default).
pub const DURATION: Duration = Duration::from_secs(10);
/// Longest a closed-loop `-n` run without `-d` goes on before it stops short of its count.
pub const REQUESTS_DURATION: Duration = Duration::from_secs(24 * 3600);
/// Request timeout when `-T` is not given (wrk's default).
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// The longest time-series interval chosen when `--interval` is not given: a run measured for
/// [`AUTO_INTERVAL_ROWS`] seconds or more gets rows of this length (see
/// [`crate::config::auto_interval`]).
pub const INTERVAL: Duration = Duration::from_secs(1);
/// Rows a run of known length is cut into at least when `--interval` is not given (unless that
/// would take intervals shorter than [`MIN_INTERVAL`]): enough points for a chart of a short run.
pub const AUTO_INTERVAL_ROWS: u32 = 40;
/// The shortest time-series interval, given or chosen: below it a row holds too few responses
/// to mean much, and the rows' bookkeeping starts to cost.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The interval chosen for a closed-loop `-n` run, which may end at any moment before its
/// duration.
pub const COUNT_INTERVAL: Duration = Duration::from_millis(100);
/// How much of a run one progress line (and each redraw of the status line) covers when the
/// interval was chosen automatically and is shorter: its rows are joined.
pub const PROGRESS_SPAN: Duration = Duration::from_secs(1);
/// Rate mode's send granularity when `--tick` is not given.
pub const TICK: Duration = Duration::from_millis(1);
/// How long `strain demo` loads its origin.
pub const DEMO_DURATION: Duration = Duration::from_secs(5);

/// Replies of a gRPC ServerStream call to the origin's echo service whose request asks for 0.
pub const GRPC_STREAM_COUNT: u32 = 10;
/// Where `strain origin` listens.
pub const ORIGIN_LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), 8080));
/// Where `strain proxy`'s in-process origin listens (port 0: a free one).
pub const PROXY_ORIGIN_LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), 0));
/// Status of the origin's fixed response.
pub const ORIGIN_STATUS: u16 = 200;
/// Freshness lifetime of the origin's documents (`Cache-Control: max-age`).
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// Probability that a conditional document request gets `304 Not Modified` (jtest -I).
pub const IMS_NOT_MODIFIED: f64 = 0.5;
/// Longest a request head may take to arrive at the origin: generous for any real client on
/// a test network, short enough that slowloris sockets are reclaimed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Workers of the origin's modelled service when `--service-time` is given without `--workers`.
pub const SERVICE_WORKERS: usize = 1;
/// Longest the origin waits for a client to take any of its queued output (nginx's
/// `send_timeout`).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(60);

/// Share of a proxy test's requests for the hot set (jtest -z).
pub const HIT_RATE: f64 = 0.4;
/// Documents in the hot set (jtest -Z).
pub const HOTSET: usize = 1000;
/// Seed of a proxy test's random choices.
pub const PROXY_SEED: u64 = 1;
/// URLs `--dump-urls` writes.
pub const DUMP_COUNT: usize = 10_000;

/// `strain compare`: a significant regression larger than this, in percent, fails the comparison.
pub const FAIL_ON_REGRESSION_PCT: f64 = 5.0;

/// `strain compare URL_A URL_B --rounds auto`: the most rounds.
pub const COMPARE_MAX_ROUNDS: u32 = 20;

/// `strain compare URL_A URL_B`: each run's interval when `--interval` is not given. Fixed, not
/// chosen from `-d` as a single run's is: a comparison of one run a side samples its rows, and
/// their number and size should not change with the length.
pub const COMPARE_INTERVAL: Duration = Duration::from_secs(1);

/// `strain compare URL_A URL_B`: load before each run's measurement, not recorded.
pub const COMPARE_WARMUP: std::time::Duration = std::time::Duration::from_secs(1);

/// `strain find-max`: the load before each step's measurement, not recorded.
pub const SEARCH_WARMUP: Duration = Duration::from_secs(2);
/// `strain find-max`: each step's interval. A step is stopped early from its rows once its SLO
/// can no longer hold; with rows of a second its result still rests on a second of load or
/// more (the latency curve's points, whether the generator kept up), as it always has.
pub const SEARCH_INTERVAL: Duration = Duration::from_secs(1);
/// `strain find-max`: how long each step is measured.
pub const SEARCH_STEP: Duration = Duration::from_secs(10);
/// `strain find-max`: the search ends when the highest pass and the lowest fail are this close
/// (a share of the pass).
pub const SEARCH_PRECISION: f64 = 0.02;
/// `strain find-max`: the closed-loop probe that picks the first rate when `--start` is not given.
pub const SEARCH_PROBE: Duration = Duration::from_secs(2);
/// `strain find-max`: connections when `-c` is not given. wrk's 10 would cap the rate at
/// 10 / latency before the server is anywhere near its limit.
pub const SEARCH_CONNECTIONS: usize = 100;

/// `strain replay`'s connections (`-c`) when none are given: a recording's concurrency is not
/// known beforehand, and a request that finds none free goes late.
pub const REPLAY_CONNECTIONS: usize = 100;

/// `strain k8s-job`: the Job's name when `--name` is not given.
pub const K8S_NAME: &str = "strain";
/// `strain k8s-job`: how long after the manifest is printed the segments start. Long enough to
/// apply it and pull the image on every node; a start time already past fails the pods.
pub const K8S_START_DELAY: Duration = Duration::from_secs(30);
/// `strain k8s-job`: the CPU each pod requests (a Kubernetes quantity).
pub const K8S_CPU: &str = "2";
/// `strain k8s-job`: the memory each pod requests and is limited to.
pub const K8S_MEMORY: &str = "512Mi";
/// `strain k8s-job`: how long a finished Job and its pods (and so their logs) are kept.
pub const K8S_TTL_AFTER_FINISHED: Duration = Duration::from_secs(24 * 3600);
/// `strain k8s-job`: time granted past the start delay, the test and its timeout before
/// Kubernetes ends the Job (image pulls, scheduling, the report).
pub const K8S_DEADLINE_SLACK: Duration = Duration::from_secs(120);
