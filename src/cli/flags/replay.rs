//! Flags of `strain replay`: the recordings, how their time becomes the replay's, and how
//! their requests are rewritten.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{ConnectFlags, RunFlags};
use crate::cli::units::{self, Dur};

/// Flags of `strain replay`.
#[derive(Debug, Args)]
pub struct ReplayFlags {
    /// The recordings, then optionally the URL whose scheme, host and port replace the
    /// recorded ones: access logs (nginx, Apache, Caddy, Traefik, HAProxy, Envoy, IIS and
    /// other W3C logs, CloudFront, AWS ALB and ELB, Squid, ATS squid.log), HAR, JSON lines,
    /// Proxy Verifier replay files; gzip read directly.
    #[arg(value_name = "FILE... [URL]", required = true, num_args = 1..)]
    pub inputs: Vec<String>,
    /// The recordings' format: har, jsonl, verifier, or a log layout (combined, combined+,
    /// common, vhost_combined, caddy, traefik, haproxy, envoy, w3c, alb, elb, squid,
    /// squid-native) [default: detected from the content].
    #[arg(long = "format", value_name = "NAME")]
    pub format: Option<String>,
    /// An access log's own layout, pasted from the server's config: nginx log_format
    /// ($variables), Apache LogFormat (%h %t "%r" ...), or an ATS format (%<cqtq> ...).
    #[arg(long = "log-format", value_name = "LAYOUT", conflicts_with = "format")]
    pub log_format: Option<String>,
    /// Replay this many times as fast as recorded (0.5 is half as fast).
    #[arg(long = "speed", value_name = "X", default_value_t = 1.0, value_parser = speed, conflicts_with = "rate")]
    pub speed: f64,
    /// Start this far into the recording (10m), or at this time (RFC 3339).
    #[arg(long = "from", value_name = "T")]
    pub from: Option<String>,
    /// Stop this far into the recording, or at this time (RFC 3339).
    #[arg(long = "to", value_name = "T")]
    pub to: Option<String>,
    /// Play the recording N times, one after the other, or "forever" (until -d, -n, Ctrl-C).
    #[arg(long = "loop", value_name = "N|forever", default_value = "1")]
    pub loops: String,
    /// Cut longer silences in the recording to T.
    #[arg(long = "max-gap", value_name = "T", value_parser = units::dur)]
    pub max_gap: Option<Dur>,
    /// Put records back in time order when they are out of order by up to T in the file (nginx
    /// writes a line when a request ends); at most 20,000 records are held.
    #[arg(long = "reorder-window", value_name = "T", default_value = "5s", value_parser = units::duration)]
    pub window: Duration,
    /// Keep each client's requests on one connection, in the recorded order: client (its
    /// address), connection (nginx $connection, HAR's connection), session (Proxy Verifier's).
    #[arg(long = "sessions", value_name = "KEY", value_parser = ["client", "connection", "session"])]
    pub sessions: Option<String>,
    /// Keep the recorded Host header (the URL still says where to connect).
    #[arg(long = "keep-host")]
    pub keep_host: bool,
    /// The methods replayed, comma-separated [default: GET,HEAD].
    #[arg(long = "methods", value_name = "LIST", value_delimiter = ',')]
    pub methods: Vec<String>,
    /// Send a body recorded only by its size as that many bytes (otherwise such a request is
    /// skipped and counted).
    #[arg(long = "synthetic-body")]
    pub synthetic_body: bool,
    /// Add a request header, "Name: value" (repeatable; replaces a recorded one).
    #[arg(short = 'H', long = "header", value_name = "H")]
    pub headers: Vec<String>,
    /// Remove this recorded header (repeatable), e.g. Cookie or Authorization.
    #[arg(long = "drop-header", value_name = "NAME")]
    pub drop_headers: Vec<String>,
    /// Go on whatever share of lines is in no layout strain reads, counting them (without it,
    /// up to 1% of the lines read are counted and the first three shown; more is an error).
    #[arg(long = "skip-bad", conflicts_with = "strict")]
    pub skip_bad: bool,
    /// Make any record that is not a whole request an error: a line in no layout, a "-", a
    /// request that is not METHOD TARGET VERSION, a last line cut off (otherwise each is
    /// skipped and counted by cause).
    #[arg(long = "strict")]
    pub strict: bool,
    /// Connections, threads, timeout.
    #[command(flatten)]
    pub connect: ConnectFlags,
    /// HTTP/1.1, HTTP/2 or HTTP/3, and streams per connection.
    #[command(flatten)]
    pub http: super::HttpFlags,
    /// -d and -n bound the replay; -R sets its mean rate (the gaps scaled); segments, text,
    /// progress, thresholds, result files, metrics.
    #[command(flatten)]
    pub run: RunFlags,
}

/// Parses `--speed`: a positive factor.
fn speed(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("invalid speed '{s}': a factor above 0 (2 is twice as fast)")),
    }
}

/// The recordings given (every input but a trailing URL).
pub fn files(inputs: &[String]) -> (Vec<PathBuf>, Option<&str>) {
    match inputs.split_last() {
        Some((last, rest)) if last.starts_with("http://") || last.starts_with("https://") => {
            (rest.iter().map(PathBuf::from).collect(), Some(last.as_str()))
        }
        _ => (inputs.iter().map(PathBuf::from).collect(), None),
    }
}
