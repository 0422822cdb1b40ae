//! What a replay replays, as the load's configuration carries it to the header and the
//! result (the replay itself is `crate::replay`'s).

use serde::{Deserialize, Serialize};

/// A recording's file and the format it is read in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDoc {
    /// The path, as given.
    pub path: String,
    /// The format's name.
    pub format: String,
}

/// What a replay replays, as its header and its result say it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayNote {
    /// The recordings and their formats.
    pub files: Vec<FileDoc>,
    /// Requests one pass sends (every segment's together).
    pub requests: u64,
    /// The recorded span they cover, microseconds (`--max-gap` applied).
    pub span_us: u64,
    /// The speed the replay goes at (from `--speed`, or `--rate`'s mean).
    pub speed: f64,
    /// Passes over the recordings (`None`: until stopped).
    pub loops: Option<u32>,
}

impl ReplayNote {
    /// The recording's mean rate, requests/s.
    pub fn recorded_rate(&self) -> f64 {
        if self.span_us == 0 {
            return 0.0;
        }
        self.requests.saturating_sub(1) as f64 * 1e6 / self.span_us as f64
    }
}
