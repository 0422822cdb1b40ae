//! `strain replay`: recorded traffic sent again at its recorded pace.
//!
//! [`read`] turns each format into [`record::Record`]s as it reads them; [`timing`] puts them
//! back in order and gives each its due time (`start + (t_i - t_0) / speed`); [`render`] makes
//! each the request strain sends (the URL's server, `-H`, `--drop-header`, the methods and
//! bodies allowed); [`feed`] runs all of it on its own thread, ahead of the load, and hands
//! each worker thread its share in batches. The workers send each request when it comes due,
//! as in rate mode, and measure its latency from then.

pub mod read;
pub mod reader;
pub mod record;
pub mod render;
pub mod timing;
pub mod walk;

use std::path::PathBuf;
use std::time::Duration;

pub use crate::config::replay::{FileDoc, ReplayNote};
pub use read::Format;

/// How the recorded gaps become the replay's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// `--speed X`: every gap divided by X (1 is the recorded pace).
    Speed(f64),
    /// `--rate N`: the gaps scaled so that the mean rate is N requests/s.
    Rate(f64),
}

/// How many times the recording is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loops {
    /// This many times, one after the other.
    Times(u32),
    /// Until the run is stopped (`-d`, Ctrl-C, `-n`).
    Forever,
}

/// A point in the recording: `--from`, `--to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// This long after the recording's first request.
    After(Duration),
    /// This wall-clock instant, microseconds since the Unix epoch.
    At(i64),
}

/// Which recorded key keeps a client's requests on one connection (`--sessions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKey {
    /// The client's address.
    Client,
    /// The recorded connection (nginx `$connection`, HAR's `connection`).
    Connection,
    /// The recorded session (a Proxy Verifier session, HAR's page).
    Session,
}

/// What `strain replay` replays and how, checked when built by the command line.
#[derive(Debug, Clone)]
pub struct ReplaySetup {
    /// The recordings, merged by time.
    pub files: Vec<PathBuf>,
    /// `--format`, or `None` to detect each file's from its content.
    pub format: Option<Format>,
    /// How the gaps are scaled.
    pub pace: Pace,
    /// `--from`.
    pub from: Option<Mark>,
    /// `--to`.
    pub to: Option<Mark>,
    /// `--loop`.
    pub loops: Loops,
    /// `--max-gap`: a longer silence in the recording is cut to this.
    pub max_gap: Option<Duration>,
    /// `--reorder-window`: records this far out of order in the file are put back in order.
    pub window: Duration,
    /// `--sessions`.
    pub sessions: Option<SessionKey>,
    /// The requests strain sends for the records.
    pub render: render::Rewrite,
    /// How many lines in no layout the replay goes on with.
    pub bad_lines: BadLines,
}

/// How many records that are no whole request a replay tolerates. A record in its format that
/// holds no request (a `-`, a scanner's bytes, a cut last line) is always skipped and counted,
/// but under `--strict`; a line in no layout at all is a bad line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadLines {
    /// Bad lines up to [`BAD_SHARE`] of the lines read are counted, the first three shown;
    /// more is an error before any load (the file is likely in another layout).
    Few,
    /// Any number of bad lines (`--skip-bad`).
    Any,
    /// Every record must be a whole request (`--strict`): the first that is not is an error.
    None,
}

/// The share of bad lines a replay goes on with by default (1 %).
pub const BAD_SHARE: f64 = 0.01;

/// Bad lines a replay names in its error and its report.
pub const BAD_SHOWN: usize = 3;
