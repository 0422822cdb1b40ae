//! Renders a finished [`crate::stats::Summary`]: wrk's text ([`text`]), JSON ([`json`]), HTML
//! ([`html`]), the live lines ([`live`]), a search's table ([`find_max`]). Reporters read the
//! result and the load's config; they know nothing of the engine. [`Outputs`] is where a run's
//! reports go, chosen by the caller apart from the load.

use std::path::PathBuf;

pub mod find_max;
pub mod hdrlog;
pub mod html;
pub mod json;
pub mod live;
pub mod proxy;
pub mod replay;
pub mod text;
pub use crate::stats::units;
pub mod wrk2;

/// Where a report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Standard output (`-`).
    Stdout,
    /// A file.
    File(PathBuf),
}

impl Output {
    /// `-` is standard output, anything else a file.
    pub fn of(path: PathBuf) -> Output {
        if is_standard(&path) {
            Output::Stdout
        } else {
            Output::File(path)
        }
    }
}

/// Whether a path given on the command line is `-`: the standard stream (standard output for a
/// report, standard input for results read back). The one place that decides it.
pub fn is_standard(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

/// What wrk's text shows beyond its default lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// The latency distribution (`--latency`; wrk2's spectrum in rate mode).
    pub latency: bool,
    /// Rate mode: the uncorrected latency too (wrk2's `-U`).
    pub uncorrected: bool,
}

/// Where a run's reports go and what they show: the caller's choice, apart from the load.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// What the text report shows.
    pub text: TextOptions,
    /// A progress line on stderr every interval (every second when the interval was chosen
    /// shorter).
    pub progress: bool,
    /// No status line redrawn on a terminal's stderr.
    pub quiet: bool,
    /// The result as JSON.
    pub json: Option<Output>,
    /// The result as one HTML page.
    pub html: Option<PathBuf>,
    /// Each interval's histogram as an HdrHistogram interval log.
    pub hdr_log: Option<PathBuf>,
    /// The command line that asked for this test, written into the JSON (empty for a library
    /// call).
    pub command: Vec<String>,
    /// Live metrics for Prometheus (`--metrics-listen`, `--metrics-push`).
    pub metrics: crate::metrics::Settings,
}

/// Golden-file comparison for the reporters' tests.
#[cfg(test)]
pub(crate) fn check_golden(name: &str, got: &str) {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("STRAIN_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(got, want, "run with STRAIN_BLESS=1 to accept a deliberate change");
}

/// A summary with hand-picked numbers, so every field of a report is known (the reporters'
/// golden tests share it).
#[cfg(test)]
pub(crate) fn fixed() -> (crate::stats::Summary, crate::config::Config) {
    use crate::config::Target;
    use crate::stats::{ErrorKind, Recorder, Summary};
    use std::time::{Duration, UNIX_EPOCH};
    let mut r = Recorder::new();
    for (latency_us, n) in [(120, 500), (450, 300), (900, 150), (2_500, 45), (1_500_000, 5)] {
        for _ in 0..n {
            r.response(200, latency_us);
        }
    }
    for _ in 0..7 {
        r.response(503, 800);
    }
    for rate in [9_000, 10_000, 11_000, 10_500] {
        r.rate_sample(rate);
    }
    r.bytes = 1_290_000;
    r.errors[ErrorKind::Connect as usize] = 1;
    r.errors[ErrorKind::Read as usize] = 2;
    r.errors[ErrorKind::Parse as usize] = 3;
    r.errors[ErrorKind::Timeout as usize] = 4;
    let summary = Summary::new(vec![r], Duration::from_micros(10_003_000), UNIX_EPOCH);
    let mut config = crate::config::Settings::new(Target::parse("http://127.0.0.1:8080/index.html").unwrap());
    config.connections = 100;
    config.threads = 4;
    (summary, config.build().unwrap())
}

/// `config` at 100 requests/s: the golden rate-mode runs' load.
#[cfg(test)]
pub(crate) fn paced(config: &crate::config::Config) -> crate::config::Config {
    let mut s = config.to_settings();
    s.schedule = Some(crate::schedule::Schedule::constant(100.0, s.duration));
    s.build().unwrap()
}

/// Rate-mode pacing figures for the golden tests: some late sends, some without a connection.
#[cfg(test)]
pub(crate) fn fixed_pacing() -> crate::stats::Pacing {
    crate::stats::Pacing {
        sent: 1007,
        late: 40,
        late_no_connection: 30,
        late_connecting: 0,
        late_sum_us: 2_000_000,
        late_generator_sum_us: 120_000,
        late_max_us: 1_480_000,
        unsent: 3,
    }
}
