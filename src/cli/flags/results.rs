//! Flags of the commands that read results: `report`, `compare`, `merge`, and `k8s-job`,
//! which prints a Job around a load's own flags.

use std::path::PathBuf;

use clap::Args;

use super::super::units::{self, Dur};
use super::{ResultFiles, TextFlags, ThresholdFlags};
use crate::defaults;

/// Flags of `strain compare`: saved results (BASE NEW, or BASE... -- NEW...), or two URLs the
/// A/B runner loads itself, with the load flags of a run.
#[derive(Debug, Args)]
pub struct CompareFlags {
    /// Two URLs (the A/B runner: strain runs both, interleaved), or result JSONs (--json) of
    /// the base; with no `--`, exactly two files: BASE NEW.
    #[arg(value_name = "A", required = true)]
    pub base: Vec<String>,
    /// After `--`: result JSONs of the new build; with two URLs, the script's init arguments.
    #[arg(last = true, value_name = "NEW")]
    pub new: Vec<String>,
    /// The smallest change that counts, in percent: a metric worse by more than this makes
    /// the exit code 98; smaller changes are no change.
    #[arg(long = "fail-on-regression", value_name = "PCT", default_value_t = defaults::FAIL_ON_REGRESSION_PCT)]
    pub fail_on_regression: f64,
    /// Compare results of different URLs (natural for two ports of an A/B test).
    #[arg(long = "allow-different-url")]
    pub allow_different_url: bool,
    /// Compare results even when their mode, rate, connections, duration or protocol differ.
    #[arg(long = "force")]
    pub force: bool,
    /// The comparison as JSON; the verdict and both sides' runs on one HTML page.
    #[command(flatten)]
    pub files: ResultFiles,
    /// The A/B runner's rounds and what it runs.
    #[command(flatten)]
    pub runner: RunnerFlags,
    /// Connections, threads, timeout of each run (A/B runner).
    #[command(flatten)]
    pub connect: super::ConnectFlags,
    /// HTTP/1.1, HTTP/2 or HTTP/3, and streams per connection.
    #[command(flatten)]
    pub http: super::HttpFlags,
    /// Headers, method, body, script, targets of each run (A/B runner).
    #[command(flatten)]
    pub request: super::RequestFlags,
    /// Duration and rate of each run (A/B runner).
    #[command(flatten)]
    pub length: super::LengthFlags,
}

/// How the A/B runner (`strain compare URL_A URL_B`) runs its rounds.
#[derive(Debug, Args)]
pub struct RunnerFlags {
    /// Rounds (A B, then B A, …): a number, or "auto" to add rounds until every metric is
    /// decided (a sequential test) or --max-rounds are run.
    #[arg(long = "rounds", value_name = "N|auto", default_value = "5", value_parser = units::rounds)]
    pub rounds: units::RoundsArg,
    /// With --rounds auto: the most rounds.
    #[arg(long = "max-rounds", value_name = "N", default_value_t = defaults::COMPARE_MAX_ROUNDS, value_parser = clap::value_parser!(u32).range(3..))]
    pub max_rounds: u32,
    /// Load before each run's measurement, not recorded.
    #[arg(long = "warmup", value_name = "T", default_value_t = Dur(defaults::COMPARE_WARMUP), value_parser = units::dur)]
    pub warmup: Dur,
    /// A shell command run before each run of A (e.g. to switch the build behind one port).
    #[arg(long = "prepare-a", value_name = "CMD")]
    pub prepare_a: Option<String>,
    /// A shell command run before each run of B.
    #[arg(long = "prepare-b", value_name = "CMD")]
    pub prepare_b: Option<String>,
    /// The time series' interval of each run (its charts, and the samples of a comparison of
    /// single saved runs) [default: 1s].
    #[arg(long = "interval", value_name = "T", value_parser = units::duration)]
    pub interval: Option<std::time::Duration>,
    /// Keep each run's result JSON in DIR (a-1.json, b-1.json, …; created if missing).
    #[arg(long = "save-runs", value_name = "DIR")]
    pub save_runs: Option<PathBuf>,
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
    /// The merged result as JSON and as an HTML page.
    #[command(flatten)]
    pub files: ResultFiles,
    /// Thresholds judged on the merged result.
    #[command(flatten)]
    pub checks: ThresholdFlags,
    /// Merge even results that are not one test's segments (different target or segment
    /// count, a segment missing or given twice).
    #[arg(long = "force")]
    pub force: bool,
    /// What the text shows.
    #[command(flatten)]
    pub text: TextFlags,
}

/// Flags of `strain k8s-job`.
#[derive(Debug, Args)]
pub struct K8sJobFlags {
    /// Pods sharing the load, one segment each (on different nodes when there are enough).
    #[arg(long = "segments", value_name = "N", required = true, value_parser = units::count)]
    pub segments: usize,
    /// The container image; its entrypoint must be strain (see the Dockerfile).
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
