//! How the command line fails: one error type for every subcommand and the exit codes, one
//! table mirrored in README.md ("Exit codes") and tested in tests/integration/exit_codes.rs.

use crate::config::ConfigError;
use crate::origin::OriginError;
use crate::run::RunError;

/// The run executed and measured something.
pub const EXIT_OK: i32 = 0;
/// The run started but failed: a script error, or no connection ever succeeded.
pub const EXIT_FAILED: i32 = 1;
/// A usage or setup error: nothing was loaded.
pub const EXIT_USAGE: i32 = 2;
/// A second Ctrl-C ended strain at once, without a report (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;
/// The run executed but a threshold failed (k6's code).
pub const EXIT_THRESHOLDS: i32 = 99;
/// `strain compare` found a significant regression beyond `--fail-on-regression`. 98, next to
/// 99: both mean "measured fine, judged failing", so CI can tell them from 1 and 2 (could not
/// run) with one test (>= 98), and low codes such as 3 stay free for failures to run.
pub const EXIT_REGRESSION: i32 = 98;

/// Exit code of `strain compare` when the evidence cannot decide (too few runs or intervals,
/// or noise too large for the allowed change): not a pass, so a CI gate does not read it as one.
pub const EXIT_INCONCLUSIVE: i32 = 97;

/// Why strain could not do what was asked; every variant exits with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag or value is wrong.
    #[error("{0}")]
    Usage(String),
    /// The options do not form a valid test.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The test could not run.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The origin server failed.
    #[error(transparent)]
    Origin(#[from] OriginError),
    /// Results cannot be merged.
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),
    /// Live metrics could not be set up.
    #[error(transparent)]
    Metrics(#[from] crate::metrics::ExportError),
    /// A report or listener could not be set up.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        EXIT_USAGE
    }
}
