//! Flags of the commands that read results: `report`, `compare`, `merge`, and `k8s-job`,
//! which prints a Job around a load's own flags.

use std::path::PathBuf;

use clap::Args;

use super::super::units::{self, Dur};
use super::{ResultFiles, TextFlags, ThresholdFlags};
use crate::defaults;

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
    /// The comparison as JSON; both sides' runs overlaid on one HTML page.
    #[command(flatten)]
    pub files: ResultFiles,
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
