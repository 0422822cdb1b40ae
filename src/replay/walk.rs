//! One pass over the recordings, shared by the scan before the load and the feed during it:
//! each file read on a thread of its own (through gzip when it is one) and put back in order
//! within the reorder window, the files merged by time, a whole second's requests spread over
//! it, and each record placed on the replay's clock.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};

use serde::{Deserialize, Serialize};

use super::read::{self, Format, ReadError};
use super::record::{BadKind, BadRecord, Record};
use super::timing::{Clock, Placed, Reorder, Spread};
use super::{BadLines, ReplaySetup, BAD_SHOWN};

/// Records a file's reader sends at once.
const CHUNK: usize = 256;

/// Why a replay cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Its format is none strain knows.
    #[error("{path}: unknown format: in none of the layouts strain detects (docs/REPLAY.md lists them); give the log's own layout with --log-format, or --format")]
    UnknownFormat {
        /// The file.
        path: String,
    },
    /// The whole file is not of its format.
    #[error("{path}: {why}")]
    Malformed {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// A record that is no whole request, under `--strict`.
    #[error("{path}:{line}: {why} (--strict: without it, such records are skipped and counted)")]
    Bad {
        /// The file.
        path: String,
        /// The line or entry, 1-based.
        line: u64,
        /// Why.
        why: String,
    },
    /// More lines in no layout than a replay goes on with (`--skip-bad` allows any number).
    #[error(
        "{bad} of {read} records ({share:.1}%) are in no layout strain reads, over the 1% a replay goes on with: {} (give the log's layout with --log-format, or --skip-bad to replay the rest)",
        examples.join("; ")
    )]
    TooManyBad {
        /// Bad lines.
        bad: u64,
        /// Records read.
        read: u64,
        /// Their share, percent.
        share: f64,
        /// The first few, as `file:line: why`.
        examples: Vec<String>,
    },
    /// A vegeta targets file: requests without times.
    #[error("{path}: a vegeta targets file has no times to replay at: load it with strain --targets {path}")]
    Targets {
        /// The file.
        path: String,
    },
    /// Nothing in the recordings would be sent.
    #[error("{what}: no request to replay{why}")]
    Empty {
        /// The files.
        what: String,
        /// What was skipped, when something was.
        why: String,
    },
    /// Without a URL, a record names no server.
    #[error("{path}:{line}: the record names no server (a path without a Host): give a URL to replay against")]
    NoServer {
        /// The file.
        path: String,
        /// The line or entry.
        line: u64,
    },
    /// Without a URL, the recordings name more servers than strain loads at once.
    #[error("the recordings name more than {max} servers: give a URL to replay against")]
    TooManyServers {
        /// The most a replay loads.
        max: usize,
    },
}

/// What one pass over the recordings counted. Every record read is sent, skipped by one cause
/// or another, or outside `--from`/`--to`: `records` = sent + every skip + `outside`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Records read (every line or entry, the bad and the skipped among them).
    pub records: u64,
    /// Lines in no layout strain reads, skipped (at most 1 % of those read, or any number
    /// with `--skip-bad`).
    pub bad: u64,
    /// Records in their layout whose request is `-` or empty.
    #[serde(default)]
    pub no_request: u64,
    /// Records whose request is not `METHOD TARGET VERSION` (scanners, TLS handshakes sent to
    /// a plain port, binary junk).
    #[serde(default)]
    pub not_http: u64,
    /// The file's last line, cut off mid-record.
    #[serde(default)]
    pub truncated: u64,
    /// Entries whose fields cannot be read even leniently (HAR, Proxy Verifier).
    #[serde(default)]
    pub unreadable: u64,
    /// Requests sent with a body generated at its recorded size (the file holds only the size).
    #[serde(default)]
    pub generated_body: u64,
    /// Records before `--from`, and the first past `--to` (the file is read no further).
    pub outside: u64,
    /// Records whose method is not replayed.
    pub skipped_method: u64,
    /// Records with a body the file does not hold.
    pub skipped_body: u64,
    /// Records further out of order in their file than the reorder window.
    pub late_in_file: u64,
}

impl Counts {
    pub(super) fn add(&mut self, o: &Counts) {
        self.records += o.records;
        self.bad += o.bad;
        self.no_request += o.no_request;
        self.not_http += o.not_http;
        self.truncated += o.truncated;
        self.unreadable += o.unreadable;
        self.generated_body += o.generated_body;
        self.outside += o.outside;
        self.skipped_method += o.skipped_method;
        self.skipped_body += o.skipped_body;
        self.late_in_file += o.late_in_file;
    }
}

/// Opens `path`, through a gzip decoder when it is one.
pub(crate) fn open(path: &Path) -> Result<Box<dyn BufRead + Send>, ReplayError> {
    let name = path.display().to_string();
    let err = |source| ReplayError::Open { path: name.clone(), source };
    let mut file = File::open(path).map_err(err)?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(err)?;
    let file = File::open(path).map_err(err)?;
    if n == 2 && magic == [0x1f, 0x8b] {
        return Ok(Box::new(BufReader::with_capacity(1 << 18, flate2::read::MultiGzDecoder::new(file))));
    }
    Ok(Box::new(BufReader::with_capacity(1 << 18, file)))
}

/// The format of the file at `path`, from its first bytes.
pub(crate) fn detect(path: &Path) -> Result<Format, ReplayError> {
    let mut input = open(path)?;
    let mut head = Vec::with_capacity(64 * 1024);
    input
        .by_ref()
        .take(64 * 1024)
        .read_to_end(&mut head)
        .map_err(|source| ReplayError::Open { path: path.display().to_string(), source })?;
    let path = path.display().to_string();
    match read::detect(&head) {
        Some(format) => Ok(format),
        None if read::is_targets(&head) => Err(ReplayError::Targets { path }),
        None => Err(ReplayError::UnknownFormat { path }),
    }
}

/// What a file's reader thread sends on.
enum Chunk {
    /// Records in start order.
    Records(Vec<Record>),
    /// A record that does not parse.
    Bad(BadRecord),
    /// The file ended: records out of order beyond the window, and how reading ended.
    Done(u64, Result<(), ReadError>),
}

/// Reads one file on this thread: its records, put back in order, go to `tx` in chunks.
fn read_file(format: &Format, mut input: Box<dyn BufRead + Send>, window_us: u64, tx: &SyncSender<Chunk>) {
    let mut reorder = Reorder::new(window_us);
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut gone = false;
    let send = |chunk: &mut Vec<Record>, gone: &mut bool| {
        if !*gone && tx.send(Chunk::Records(std::mem::take(chunk))).is_err() {
            *gone = true;
        }
    };
    let result = read::read(format, &mut input, &mut |item| {
        match item {
            Ok(r) => reorder.push(r, &mut |r| chunk.push(r)),
            Err(bad) => gone |= tx.send(Chunk::Bad(bad)).is_err(),
        }
        if chunk.len() >= CHUNK {
            send(&mut chunk, &mut gone);
        }
        if gone {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    reorder.finish(&mut |r| chunk.push(r));
    if !chunk.is_empty() {
        send(&mut chunk, &mut gone);
    }
    let _ = tx.send(Chunk::Done(reorder.late, result));
}

/// One file's records as they come from its reader.
struct Head {
    path: String,
    rx: Receiver<Chunk>,
    queue: VecDeque<Record>,
    done: bool,
}

impl Head {
    /// Makes sure the next record (if any) is queued; a record that is no request is counted
    /// by its kind (the first bad lines kept in `shown`), or is an error under `--strict`.
    fn fill(&mut self, policy: BadLines, counts: &mut Counts, shown: &mut Vec<String>) -> Result<(), ReplayError> {
        while self.queue.is_empty() && !self.done {
            match self.rx.recv() {
                Ok(Chunk::Records(v)) => self.queue.extend(v),
                Ok(Chunk::Bad(bad)) if policy == BadLines::None => {
                    return Err(ReplayError::Bad { path: self.path.clone(), line: bad.line, why: bad.why });
                }
                Ok(Chunk::Bad(bad)) => {
                    counts.records += 1;
                    let count = match bad.kind {
                        BadKind::Unmatched => {
                            if shown.len() < BAD_SHOWN {
                                shown.push(format!("{}:{}: {}", self.path, bad.line, bad.why));
                            }
                            &mut counts.bad
                        }
                        BadKind::NoRequest => &mut counts.no_request,
                        BadKind::NotHttp => &mut counts.not_http,
                        BadKind::Truncated => &mut counts.truncated,
                        BadKind::Unreadable => &mut counts.unreadable,
                    };
                    *count += 1;
                }
                Ok(Chunk::Done(late, result)) => {
                    counts.late_in_file += late;
                    self.done = true;
                    result.map_err(|e| ReplayError::Malformed { path: self.path.clone(), why: e.to_string() })?;
                }
                Err(_) => self.done = true,
            }
        }
        Ok(())
    }
}

/// One pass over the recordings: every record in time order, whole seconds spread, placed by
/// `clock`; `visit` gets each due record (with its file's index) until it breaks.
pub(super) fn walk(
    plan: &ReplaySetup,
    formats: &[Format],
    clock: &mut Clock,
    counts: &mut Counts,
    shown: &mut Vec<String>,
    visit: &mut dyn FnMut(usize, Record, u64) -> Result<ControlFlow<()>, ReplayError>,
) -> Result<(), ReplayError> {
    let window_us = plan.window.as_micros() as u64;
    std::thread::scope(|scope| {
        let mut heads = Vec::with_capacity(plan.files.len());
        for (path, format) in plan.files.iter().zip(formats) {
            let input = open(path)?;
            let (tx, rx) = mpsc::sync_channel(4);
            std::thread::Builder::new()
                .name("strain-replay-read".into())
                .spawn_scoped(scope, move || read_file(format, input, window_us, &tx))
                .map_err(|source| ReplayError::Open { path: path.display().to_string(), source })?;
            heads.push(Head { path: path.display().to_string(), rx, queue: VecDeque::new(), done: false });
        }
        let mut spread = Spread::default();
        let mut placed: VecDeque<(usize, Record)> = VecDeque::new();
        let mut from_file: VecDeque<usize> = VecDeque::new();
        loop {
            for h in &mut heads {
                h.fill(plan.bad_lines, counts, shown)?;
            }
            // The file whose next record is earliest (few files: a scan beats a heap).
            let next = heads
                .iter()
                .enumerate()
                .filter_map(|(i, h)| h.queue.front().map(|r| (r.start_us, i)))
                .min()
                .map(|(_, i)| i);
            let Some(i) = next else { break };
            let Some(r) = heads[i].queue.pop_front() else { break };
            counts.records += 1;
            from_file.push_back(i);
            spread.push(r, &mut |r| placed.push_back((from_file.pop_front().unwrap_or(0), r)));
            if let ControlFlow::Break(()) = place_all(&mut placed, clock, counts, visit)? {
                return Ok(());
            }
        }
        spread.flush(&mut |r| placed.push_back((from_file.pop_front().unwrap_or(0), r)));
        place_all(&mut placed, clock, counts, visit).map(|_| ())
    })
}

/// Gives `visit` each spread record's due time.
fn place_all(
    placed: &mut VecDeque<(usize, Record)>,
    clock: &mut Clock,
    counts: &mut Counts,
    visit: &mut dyn FnMut(usize, Record, u64) -> Result<ControlFlow<()>, ReplayError>,
) -> Result<ControlFlow<()>, ReplayError> {
    while let Some((file, r)) = placed.pop_front() {
        match clock.place(r.start_us) {
            Placed::Before => counts.outside += 1,
            Placed::After => {
                counts.outside += 1 + placed.len() as u64;
                return Ok(ControlFlow::Break(()));
            }
            Placed::Due(due) => {
                if let ControlFlow::Break(()) = visit(file, r, due)? {
                    return Ok(ControlFlow::Break(()));
                }
            }
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// The clock of one pass at `speed`.
pub(super) fn clock(plan: &ReplaySetup, speed: f64) -> Clock {
    Clock::new(speed, plan.from, plan.to, plan.max_gap.map(|g| g.as_micros() as u64))
}
