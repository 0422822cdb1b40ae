//! The replay's reader: on a thread of its own it walks the recordings ([`super::walk`]),
//! gives each request its bytes, and hands each worker thread its share in [`Batch`]es through
//! a bounded channel, ahead of the load. Memory stays bounded whatever the file's size: the reorder window, a
//! few batches per thread.
//!
//! [`scan`] walks the recordings once before any load, without sending: a bad record, a file
//! of no known format or without a request stops the test before anything is sent, and the
//! scan gives the span and count `--rate` scales by and the servers a URL-less replay loads.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::mpsc::{self, SyncSender, TrySendError};

use serde::{Deserialize, Serialize};

use super::read::Format;
use super::record::Record;
use super::render::Skip;
use super::walk::{clock, detect, walk};
pub use super::walk::{Counts, ReplayError};
use super::{BadLines, Loops, Pace, ReplaySetup, SessionKey, BAD_SHARE};
pub use crate::config::replay::FileDoc;
use crate::config::{Segment, Target};

/// Requests handed to a worker thread at once: their due times and servers, their bytes in
/// one buffer (so a batch is two allocations, not one per request).
#[derive(Debug, Default)]
pub struct Batch {
    /// The requests, in due order.
    pub items: Vec<Item>,
    /// Every request's bytes, one after the other.
    pub bytes: Vec<u8>,
    /// `--trace`: each request's place in its recording and what it recorded (`FILE:LINE:
    /// METHOD TARGET`), beside `items`; empty when the run is not traced.
    pub notes: Vec<Box<str>>,
}

/// One request of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Item {
    /// When it is due, microseconds after the replay's start.
    pub due_us: u64,
    /// Which server it goes to.
    pub origin: u16,
    /// `--sessions`: the slot (of its thread) its session's requests all go on, or [`NO_SLOT`].
    pub slot: u32,
    /// Its path's number (see [`Fed::paths`]).
    pub path: u16,
    /// Where its bytes are in the batch's buffer.
    pub start: u32,
    /// How many bytes.
    pub len: u32,
}

impl Batch {
    /// Request `k`'s place in its recording, when the run is traced.
    pub fn note_of(&self, k: usize) -> Option<&str> {
        self.notes.get(k).map(|n| &**n)
    }

    /// Request `k`'s bytes.
    pub fn bytes_of(&self, k: usize) -> &[u8] {
        self.items
            .get(k)
            .and_then(|it| self.bytes.get(it.start as usize..it.start as usize + it.len as usize))
            .unwrap_or(&[])
    }
}

/// An item without a session: any free connection takes it.
pub const NO_SLOT: u32 = u32::MAX;

/// Requests per batch: enough that the channel is touched once per this many sends.
const BATCH: usize = 256;
/// Batches queued per worker thread ahead of its sends.
pub const QUEUED: usize = 32;
/// A batch also goes once it spans this much due time, so a thread with few requests is not
/// kept waiting for a full one.
const BATCH_SPAN_US: u64 = 20_000;

/// Servers a URL-less replay loads at most.
const MAX_SERVERS: usize = 64;

/// What the scan found, before any load.
#[derive(Debug, Clone)]
pub struct Scan {
    /// Each file's format.
    pub formats: Vec<Format>,
    /// The files, for the report.
    pub files: Vec<FileDoc>,
    /// Requests one pass sends.
    pub requests: u64,
    /// The recorded span they cover (first to last, `--max-gap` applied), µs.
    pub span_us: u64,
    /// The servers, in order of first appearance (the URL's alone when one is given).
    pub servers: Vec<Target>,
    /// The counts of one pass.
    pub counts: Counts,
    /// The first lines in no layout, `file:line: why` (see [`crate::replay::BAD_SHOWN`]).
    pub bad_lines: Vec<String>,
}

impl Scan {
    /// The speed the replay goes at: `--speed`, or what makes `--rate`'s mean.
    pub fn speed(&self, pace: Pace) -> f64 {
        match pace {
            Pace::Speed(x) => x,
            Pace::Rate(n) if self.requests > 1 && self.span_us > 0 => {
                // n = (requests - 1) gaps over span / speed.
                n * self.span_us as f64 / 1e6 / (self.requests - 1) as f64
            }
            Pace::Rate(_) => 1.0,
        }
    }

    /// The recording's mean rate, requests/s (0 over no time).
    pub fn recorded_rate(&self) -> f64 {
        if self.span_us == 0 {
            return 0.0;
        }
        (self.requests.saturating_sub(1)) as f64 * 1e6 / self.span_us as f64
    }
}

/// Walks the recordings once, sending nothing: formats, counts, span and servers.
pub fn scan(plan: &ReplaySetup) -> Result<Scan, ReplayError> {
    let formats = match &plan.format {
        Some(f) => vec![f.clone(); plan.files.len()],
        None => plan.files.iter().map(|p| detect(p)).collect::<Result<_, _>>()?,
    };
    let files = plan
        .files
        .iter()
        .zip(&formats)
        .map(|(p, f)| FileDoc { path: p.display().to_string(), format: f.name() })
        .collect();
    let mut counts = Counts::default();
    let mut servers: Vec<Target> = plan.render.base.iter().cloned().collect();
    let mut requests = 0;
    let (mut skipped_method, mut skipped_body, mut generated) = (0, 0, 0);
    let mut bad_lines = Vec::new();
    // The methods left out, to name in the error when nothing else is left.
    let mut unreplayed: Vec<String> = Vec::new();
    let mut clock = clock(plan, 1.0);
    walk(plan, &formats, &mut clock, &mut counts, &mut bad_lines, &mut |file, r, _| {
        // A record that is skipped need not name a server.
        match plan.render.skip(&r) {
            Some(Skip::Method) => {
                skipped_method += 1;
                let method = r.method.trim().to_ascii_uppercase();
                if !unreplayed.contains(&method) && unreplayed.len() < 8 {
                    unreplayed.push(method);
                }
            }
            Some(Skip::Body) => skipped_body += 1,
            None => {
                generated += u64::from(plan.render.generates(&r));
                let server = plan.render.server(&r).ok_or_else(|| ReplayError::NoServer {
                    path: plan.files[file].display().to_string(),
                    line: r.line,
                })?;
                if !servers.iter().any(|s| s.same_origin(&server)) {
                    if servers.len() >= MAX_SERVERS {
                        return Err(ReplayError::TooManyServers { max: MAX_SERVERS });
                    }
                    servers.push(server);
                }
                requests += 1;
            }
        }
        Ok(ControlFlow::Continue(()))
    })?;
    counts.skipped_method = skipped_method;
    counts.skipped_body = skipped_body;
    counts.generated_body = generated;
    if plan.bad_lines == BadLines::Few && counts.bad as f64 > BAD_SHARE * counts.records as f64 {
        return Err(ReplayError::TooManyBad {
            bad: counts.bad,
            read: counts.records,
            share: 100.0 * counts.bad as f64 / counts.records.max(1) as f64,
            examples: bad_lines,
        });
    }
    if requests == 0 {
        let what = plan.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        let mut why = Vec::new();
        let mut hint = String::new();
        if counts.skipped_method > 0 {
            let mut all = plan.render.methods.clone();
            all.extend(unreplayed.iter().cloned());
            why.push(format!("{} with a method not replayed ({})", counts.skipped_method, unreplayed.join(", ")));
            hint = format!(": replay them with --methods {}", all.join(","));
        }
        if counts.skipped_body > 0 {
            why.push(format!("{} with a body the file does not hold (--synthetic-body)", counts.skipped_body));
        }
        if counts.outside > 0 {
            why.push(format!("{} outside --from/--to", counts.outside));
        }
        for (n, what) in [
            (counts.no_request, "with no request (\"-\")"),
            (counts.not_http, "not an HTTP request line"),
            (counts.truncated, "cut off at the end of the file"),
            (counts.unreadable, "entries that cannot be read"),
            (counts.bad, "in no layout strain reads"),
        ] {
            if n > 0 {
                why.push(format!("{n} {what}"));
            }
        }
        let why = if why.is_empty() { String::new() } else { format!(" ({} skipped){hint}", why.join(", ")) };
        return Err(ReplayError::Empty { what, why });
    }
    Ok(Scan { formats, files, requests, span_us: clock.span_us(), servers, counts, bad_lines })
}

/// What the reader did while the load ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fed {
    /// Requests handed to this process's worker threads.
    pub queued: u64,
    /// Passes over the recordings begun.
    pub loops: u32,
    /// What the passes counted.
    pub counts: Counts,
    /// The paths requests were counted by, by number (the last is every path past
    /// [`MAX_PATHS`] - 1 others).
    pub paths: Vec<String>,
    /// The first lines in no layout, `file:line: why`.
    #[serde(default)]
    pub bad_lines: Vec<String>,
}

/// Paths counted apart; those beyond share the last number.
pub const MAX_PATHS: usize = 1024;

/// Numbers the paths (without their query) as they first come.
#[derive(Default)]
struct Paths {
    by_name: std::collections::HashMap<String, u16>,
    names: Vec<String>,
}

impl Paths {
    /// The number of `target`'s path.
    fn number(&mut self, target: &str) -> u16 {
        let form = crate::http::request::origin_form(target);
        let path = form.split('?').next().unwrap_or(form);
        if let Some(&n) = self.by_name.get(path) {
            return n;
        }
        if self.names.len() >= MAX_PATHS - 1 {
            if self.names.len() == MAX_PATHS - 1 {
                self.names.push("(other paths)".into());
            }
            return (MAX_PATHS - 1) as u16;
        }
        let n = self.names.len() as u16;
        self.names.push(path.to_string());
        self.by_name.insert(path.to_string(), n);
        n
    }
}

/// The reader, running: its thread and the signal that the workers' queues are filled.
pub struct Feeder<'scope> {
    handle: std::thread::ScopedJoinHandle<'scope, Result<Fed, ReplayError>>,
}

impl Feeder<'_> {
    /// Waits for the reader to end (the load ended: its queues are gone).
    pub fn finish(self) -> Result<Fed, ReplayError> {
        self.handle.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    }
}

/// Requests due in each interval of the replay (this process's share), counted by the reader
/// ahead of the load: the replay's target rate, row by row, as a rate schedule gives it.
#[derive(Debug, Clone)]
pub struct DueCounts {
    interval_us: u64,
    counts: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
}

impl DueCounts {
    /// Counts per interval of `interval`.
    pub fn new(interval: std::time::Duration) -> DueCounts {
        DueCounts { interval_us: (interval.as_micros() as u64).max(1), counts: Default::default() }
    }

    /// A request is due at `due_us`.
    fn add(&self, due_us: u64) {
        let k = (due_us / self.interval_us) as usize;
        if let Ok(mut c) = self.counts.lock() {
            if c.len() <= k {
                c.resize(k + 1, 0);
            }
            c[k] += 1;
        }
    }

    /// The rate requests came due at between `a_us` and `b_us` (an interval's part of one
    /// counted interval weighs as its share of it).
    pub fn rate_between(&self, a_us: u64, b_us: u64) -> f64 {
        let Ok(c) = self.counts.lock() else { return 0.0 };
        if b_us <= a_us {
            return 0.0;
        }
        let iv = self.interval_us;
        let mut due = 0.0;
        for k in (a_us / iv)..b_us.div_ceil(iv) {
            let (lo, hi) = (k * iv, (k + 1) * iv);
            let overlap = hi.min(b_us).saturating_sub(lo.max(a_us)) as f64 / iv as f64;
            due += c.get(k as usize).copied().unwrap_or(0) as f64 * overlap;
        }
        due / ((b_us - a_us) as f64 / 1e6)
    }
}

/// Where the reader's requests go: this process's share of them, split over its threads.
pub struct Split {
    /// The test's segment: this process sends request `k` when `k mod count == index`.
    pub segment: Segment,
    /// One queue per worker thread; request `k div count` of this segment goes to thread
    /// `(k div count) mod threads`.
    pub queues: Vec<SyncSender<Batch>>,
    /// Connections each thread keeps (a session's slot is one of its thread's).
    pub conns: Vec<usize>,
    /// Where the requests due per interval are counted.
    pub due: DueCounts,
    /// `--trace`: each request carries its place in its recording.
    pub notes: bool,
}

/// Starts the reader on `scope`: it feeds `split.queues` at `speed` until the recordings (all
/// loops) end or every queue is gone. Returns once each queue holds its first batches (or the
/// recordings are done), so the load starts with its requests at hand.
pub fn start<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    plan: &'env ReplaySetup,
    scan: &'env Scan,
    speed: f64,
    split: Split,
) -> Result<Feeder<'scope>, ReplayError> {
    let (primed_tx, primed_rx) = mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name("strain-replay".into())
        .spawn_scoped(scope, move || feed(plan, scan, speed, split, primed_tx))
        .map_err(|source| ReplayError::Open { path: "(replay reader)".into(), source })?;
    let _ = primed_rx.recv();
    Ok(Feeder { handle })
}

/// The reader's loop (see [`start`]).
fn feed(
    plan: &ReplaySetup,
    scan: &Scan,
    speed: f64,
    split: Split,
    primed: mpsc::Sender<()>,
) -> Result<Fed, ReplayError> {
    let threads = split.queues.len().max(1);
    let mut out: Vec<Out> = split.queues.into_iter().map(|tx| Out { tx: Some(tx), batch: Batch::default() }).collect();
    let mut fed = Fed::default();
    let mut primed = Some(primed);
    let count = u64::from(split.segment.count.max(1));
    let index = u64::from(split.segment.index);
    let mut k: u64 = 0;
    let mut offset: u64 = 0;
    let mut pass = 0u32;
    let mut servers = scan.servers.clone();
    let mut paths = Paths::default();
    loop {
        pass += 1;
        fed.loops = pass;
        let mut counts = Counts::default();
        let mut clock = clock(plan, speed);
        let mut last_due = 0;
        let mut n = 0u64;
        let (mut skipped_method, mut skipped_body, mut generated) = (0, 0, 0);
        let mut shown = Vec::new();
        let walked = walk(plan, &scan.formats, &mut clock, &mut counts, &mut shown, &mut |file, r, due| {
            let due = offset + due;
            last_due = due;
            let Some(server) = plan.render.server(&r) else { return Ok(ControlFlow::Continue(())) };
            let origin = servers.iter().position(|s| s.same_origin(&server)).unwrap_or_else(|| {
                servers.push(server.clone());
                servers.len() - 1
            });
            let req = match plan.render.render(&r, &server, origin as u16) {
                Ok(req) => req,
                Err(skip) => {
                    *match skip {
                        Skip::Method => &mut skipped_method,
                        Skip::Body => &mut skipped_body,
                    } += 1;
                    return Ok(ControlFlow::Continue(()));
                }
            };
            generated += u64::from(plan.render.generates(&r));
            n += 1;
            // A session goes whole to one segment, one thread and one of its connections,
            // by its key's hash; other requests are dealt in turn.
            let (spot, session) = match plan.sessions.and_then(|key| session_of(&r, key)) {
                Some(h) => (h, true),
                None => (k, false),
            };
            k += 1;
            let mine = spot % count == index;
            let t = ((spot / count) % threads as u64) as usize;
            if !mine {
                return Ok(ControlFlow::Continue(()));
            }
            fed.queued += 1;
            split.due.add(due);
            let slot = match split.conns.get(t) {
                Some(&c) if session && c > 0 => ((spot / count / threads as u64) % c as u64) as u32,
                _ => NO_SLOT,
            };
            let path = paths.number(&r.target);
            let o = &mut out[t];
            if split.notes {
                let file = plan.files.get(file).map_or(String::new(), |f| f.display().to_string());
                let note = format!("{file}:{}: {} {}", r.line, r.method, r.target);
                o.batch.notes.push(note.into_boxed_str());
            }
            o.push(due, req.origin, slot, path, &req.bytes);
            if o.full(due) {
                send(&mut out, t, &mut primed);
            }
            if out.iter().all(|o| o.tx.is_none()) {
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        });
        counts.skipped_method = skipped_method;
        counts.skipped_body = skipped_body;
        counts.generated_body = generated;
        fed.counts.add(&counts);
        if pass == 1 {
            fed.bad_lines = shown;
        }
        walked?;
        let all_gone = out.iter().all(|o| o.tx.is_none());
        let more = match plan.loops {
            Loops::Times(t) => pass < t,
            Loops::Forever => true,
        };
        if all_gone || !more || n == 0 {
            break;
        }
        // The next pass starts one mean gap after this one's last request.
        offset = last_due + last_due / n.max(1);
    }
    for t in 0..out.len() {
        send(&mut out, t, &mut primed);
    }
    drop(primed);
    fed.paths = paths.names;
    Ok(fed)
}

/// A worker thread's queue and the batch being filled for it.
struct Out {
    tx: Option<SyncSender<Batch>>,
    batch: Batch,
}

impl Out {
    /// Adds a request.
    fn push(&mut self, due_us: u64, origin: u16, slot: u32, path: u16, bytes: &[u8]) {
        let start = self.batch.bytes.len() as u32;
        self.batch.bytes.extend_from_slice(bytes);
        self.batch.items.push(Item { due_us, origin, slot, path, start, len: bytes.len() as u32 });
    }

    /// Whether the batch should go now (it holds its share, or spans enough time).
    fn full(&self, due_us: u64) -> bool {
        let first = self.batch.items.first().map_or(due_us, |i| i.due_us);
        self.batch.items.len() >= BATCH || due_us.saturating_sub(first) >= BATCH_SPAN_US
    }
}

/// Sends thread `t`'s batch; when its queue is full, the others' partial batches go first (so
/// none waits on a full one), then this waits. A gone queue (its thread ended) is dropped.
fn send(out: &mut [Out], t: usize, primed: &mut Option<mpsc::Sender<()>>) {
    let batch = std::mem::take(&mut out[t].batch);
    if batch.items.is_empty() {
        return;
    }
    let Some(tx) = out[t].tx.as_ref() else { return };
    match tx.try_send(batch) {
        Ok(()) => {}
        Err(TrySendError::Disconnected(_)) => out[t].tx = None,
        Err(TrySendError::Full(batch)) => {
            // The queues are full: the load can start (the first fill is done).
            if let Some(p) = primed.take() {
                let _ = p.send(());
            }
            for (j, o) in out.iter_mut().enumerate() {
                if j != t && !o.batch.items.is_empty() {
                    if let Some(tx) = &o.tx {
                        match tx.try_send(std::mem::take(&mut o.batch)) {
                            Ok(()) => {}
                            // Still full: it stays (its queue holds requests enough).
                            Err(TrySendError::Full(b)) => o.batch = b,
                            Err(TrySendError::Disconnected(_)) => o.tx = None,
                        }
                    }
                }
            }
            if let Some(tx) = out[t].tx.as_ref() {
                if tx.send(batch).is_err() {
                    out[t].tx = None;
                }
            }
        }
    }
}

/// The hash of `r`'s session key (`None`: the record has none).
fn session_of(r: &Record, key: SessionKey) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let value = match key {
        SessionKey::Client => r.client.as_deref(),
        SessionKey::Connection => r.connection.as_deref(),
        SessionKey::Session => r.session.as_deref(),
    }?;
    // SipHash with fixed keys: the same session lands on the same connection in every run
    // and every segment.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    Some(h.finish())
}

/// The default methods replayed.
pub fn default_methods() -> Vec<String> {
    vec!["GET".into(), "HEAD".into()]
}

/// The files' display for the header (`access.log, b.har`).
pub fn names(files: &[PathBuf]) -> String {
    files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
