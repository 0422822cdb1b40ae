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
use super::record::{BadRecord, Record};
use super::timing::{Clock, Placed, Reorder, Spread};
use super::ReplayPlan;

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
    #[error("{path}: unknown format (give --format: combined, common, squid, har, jsonl, verifier, or --log-format)")]
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
    /// A record does not parse (and `--skip-bad` was not given).
    #[error("{path}:{line}: {why} (--skip-bad counts such records and goes on)")]
    Bad {
        /// The file.
        path: String,
        /// The line or entry, 1-based.
        line: u64,
        /// Why.
        why: String,
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

/// What one pass over the recordings counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Records read.
    pub records: u64,
    /// Records that did not parse, skipped (`--skip-bad`).
    pub bad: u64,
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
    read::detect(&head).ok_or_else(|| ReplayError::UnknownFormat { path: path.display().to_string() })
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
    /// Makes sure the next record (if any) is queued; a bad record is an error unless
    /// `skip_bad` (then counted).
    fn fill(&mut self, skip_bad: bool, counts: &mut Counts) -> Result<(), ReplayError> {
        while self.queue.is_empty() && !self.done {
            match self.rx.recv() {
                Ok(Chunk::Records(v)) => self.queue.extend(v),
                Ok(Chunk::Bad(_)) if skip_bad => counts.bad += 1,
                Ok(Chunk::Bad(bad)) => {
                    return Err(ReplayError::Bad { path: self.path.clone(), line: bad.line, why: bad.why });
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
    plan: &ReplayPlan,
    formats: &[Format],
    clock: &mut Clock,
    counts: &mut Counts,
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
                h.fill(plan.skip_bad, counts)?;
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
pub(super) fn clock(plan: &ReplayPlan, speed: f64) -> Clock {
    Clock::new(speed, plan.from, plan.to, plan.max_gap.map(|g| g.as_micros() as u64))
}
