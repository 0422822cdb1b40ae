//! The command line every protocol command shares (`strain grpc`, `strain ws`): one run, a
//! capacity search (`find-max`) or an A/B comparison (`compare`), each with the same connection,
//! run and result flags. A protocol brings only its own flags, `P`.

use clap::{Args, FromArgMatches, Subcommand};

use super::{ConnectFlags, FindMaxOptions, LengthFlags, MetricsFlags, ResultFiles, RunFlags, RunnerFlags};

/// A protocol's own flags, and what its command says of its URL.
pub trait ProtocolFlags: Args + FromArgMatches + std::fmt::Debug {
    /// The URL's help: its schemes and what it names.
    const URL_HELP: &'static str;

    /// The shared flags as this protocol's command shows them: one that does nothing for it
    /// hidden, one that means something else for it said so (the run's own command, built).
    fn adjust(cmd: clap::Command) -> clap::Command {
        cmd
    }
}

/// A protocol command: one run, or (as a subcommand) a capacity search or an A/B comparison
/// of the same load.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ProtocolCmd<P: ProtocolFlags> {
    /// A capacity search or an A/B comparison instead of one run.
    #[command(subcommand)]
    pub mode: Option<ProtocolMode<P>>,
    /// The protocol's own flags.
    #[command(flatten)]
    pub own: P,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// Duration, -n, -R, stages; segments, text, progress, thresholds, result files, metrics.
    #[command(flatten)]
    pub run: RunFlags,
    /// The server.
    #[arg(value_name = "URL", required = true, help = P::URL_HELP)]
    pub url: Option<String>,
}

/// What a protocol command runs besides one load.
#[derive(Debug, Subcommand)]
pub enum ProtocolMode<P: ProtocolFlags> {
    /// Find the highest rate the server sustains under its SLO (a capacity search).
    #[command(name = "find-max")]
    FindMax(Box<FindMaxCmd<P>>),
    /// Is the new build slower? Send the same load to URL_A and URL_B, interleaved.
    Compare(Box<CompareCmd<P>>),
}

/// A protocol's `find-max`.
#[derive(Debug, Args)]
pub struct FindMaxCmd<P: ProtocolFlags> {
    /// The protocol's own flags.
    #[command(flatten)]
    pub own: P,
    /// The SLO, the rates tried, each step's length.
    #[command(flatten)]
    pub search: FindMaxOptions,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// JSON and HTML of the search.
    #[command(flatten)]
    pub files: ResultFiles,
    /// Live metrics for Prometheus.
    #[command(flatten)]
    pub metrics: MetricsFlags,
    /// The server.
    #[arg(value_name = "URL", help = P::URL_HELP)]
    pub url: String,
}

/// A protocol's `compare`.
#[derive(Debug, Args)]
pub struct CompareCmd<P: ProtocolFlags> {
    /// The protocol's own flags.
    #[command(flatten)]
    pub own: P,
    /// Rounds, warm-up, preparation commands.
    #[command(flatten)]
    pub runner: RunnerFlags,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// Duration and rate of each run.
    #[command(flatten)]
    pub length: LengthFlags,
    /// JSON and HTML of the comparison.
    #[command(flatten)]
    pub files: ResultFiles,
    /// Fail (exit 98) when B is slower than A by more than this many percent.
    #[arg(long = "fail-on-regression", value_name = "PCT", default_value_t = crate::defaults::FAIL_ON_REGRESSION_PCT)]
    pub fail_on_regression: f64,
    /// The base build's server.
    #[arg(value_name = "URL_A")]
    pub a: String,
    /// The new build's server.
    #[arg(value_name = "URL_B")]
    pub b: String,
}
