//! Prometheus remote write 1.0: the tally's samples as a `WriteRequest` (protobuf, snappy
//! block-compressed) POSTed every interval and once at the end. A thread of its own sends
//! them; the observer only hands a batch over a bounded queue and never waits, so a slow or
//! absent receiver cannot slow the load: a batch that finds the queue full, or that fails
//! every retry, is dropped and counted. Counters are cumulative, so the next batch that
//! arrives carries every total.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::Sample;
use crate::config::{Scheme, Target};

/// Batches waiting to be sent at most (an interval each: half a minute at 1 s rows).
const QUEUE: usize = 32;
/// Attempts per batch, with doubling pauses from 100 ms.
const ATTEMPTS: u32 = 4;
/// How long the end of a run waits for the last batch.
const FINAL_WAIT: Duration = Duration::from_secs(10);

/// Why a push URL cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// Not a URL strain can send to.
    #[error("invalid --metrics-push URL '{url}': {why}")]
    Url {
        /// The URL.
        url: String,
        /// What is wrong.
        why: String,
    },
}

/// What the pusher did, for the end of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Batches the receiver accepted.
    pub sent: u64,
    /// Samples dropped (queue full, or every retry failed).
    pub dropped_samples: u64,
}

/// A batch: its encoded body and how many samples it holds.
struct Batch {
    body: Vec<u8>,
    samples: u64,
}

/// The remote-write sender.
pub struct Pusher {
    tx: Option<SyncSender<Batch>>,
    counts: Arc<Counts>,
    thread: Option<JoinHandle<()>>,
}

/// Counters shared with the sending thread.
#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    dropped: AtomicU64,
    warned: AtomicBool,
}

impl Pusher {
    /// A pusher to `url` (plain `http://`).
    pub fn start(url: &str) -> Result<Pusher, PushError> {
        let bad = |why: &str| PushError::Url { url: url.to_string(), why: why.to_string() };
        let target = Target::parse(url).map_err(|e| bad(&e.to_string()))?;
        if target.scheme != Scheme::Http {
            return Err(bad("remote write is sent over plain http:// (put a TLS proxy in front of the receiver)"));
        }
        let (tx, rx) = sync_channel(QUEUE);
        let counts = Arc::new(Counts::default());
        let shared = Arc::clone(&counts);
        let name = url.to_string();
        let thread = std::thread::Builder::new()
            .name("strain-push".into())
            .spawn(move || send_all(&rx, &target, &name, &shared))
            .map_err(|e| bad(&e.to_string()))?;
        Ok(Pusher { tx: Some(tx), counts, thread: Some(thread) })
    }

    /// Queues `samples` taken now; never waits (a full queue drops them, counted).
    pub fn push(&self, samples: &[Sample]) {
        let batch = Batch { body: encode(samples, now_ms()), samples: samples.len() as u64 };
        if let Some(tx) = &self.tx {
            if let Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) = tx.try_send(batch) {
                self.counts.dropped.fetch_add(b.samples, Ordering::Relaxed);
            }
        }
    }

    /// Sends the last `samples`, waits (a bounded time) for the queue to drain, and says what
    /// was delivered.
    pub fn finish(mut self, samples: &[Sample]) -> Delivery {
        self.push(samples);
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let deadline = Instant::now() + FINAL_WAIT;
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
        Delivery {
            sent: self.counts.sent.load(Ordering::Relaxed),
            dropped_samples: self.counts.dropped.load(Ordering::Relaxed),
        }
    }
}

/// The sending thread: each batch in turn, retried, until the queue closes.
fn send_all(rx: &Receiver<Batch>, target: &Target, url: &str, counts: &Counts) {
    for batch in rx.iter() {
        let mut pause = Duration::from_millis(100);
        let mut last = String::new();
        let mut ok = false;
        for attempt in 0..ATTEMPTS {
            match post(target, &batch.body) {
                Ok(()) => {
                    ok = true;
                    break;
                }
                Err(e) => last = e,
            }
            if attempt + 1 < ATTEMPTS {
                std::thread::sleep(pause);
                pause *= 2;
            }
        }
        if ok {
            counts.sent.fetch_add(1, Ordering::Relaxed);
        } else {
            counts.dropped.fetch_add(batch.samples, Ordering::Relaxed);
            if !counts.warned.swap(true, Ordering::Relaxed) {
                eprintln!("strain: metrics push to {url} failed ({last}); the run goes on, samples are dropped while it fails");
            }
        }
    }
}

/// POSTs one body; a 2xx is success.
fn post(target: &Target, body: &[u8]) -> Result<(), String> {
    let addr =
        (target.host.as_str(), target.port).to_socket_addrs().map_err(|e| e.to_string())?.next().ok_or("no address")?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n\
         X-Prometheus-Remote-Write-Version: 0.1.0\r\nUser-Agent: strain/{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        target.path,
        target.host,
        target.port,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    s.write_all(head.as_bytes()).and_then(|()| s.write_all(body)).map_err(|e| e.to_string())?;
    let mut reply = Vec::new();
    let _ = s.take(64 * 1024).read_to_end(&mut reply);
    let text = String::from_utf8_lossy(&reply);
    let status = text.split_whitespace().nth(1).unwrap_or("");
    if status.starts_with('2') {
        Ok(())
    } else if status.is_empty() {
        Err("no answer".into())
    } else {
        Err(format!("HTTP {status}"))
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// A `WriteRequest` of `samples` at `ts_ms`, snappy-compressed (block format, as remote
/// write 1.0 asks). Protobuf written by hand: four small messages, no schema compiler.
pub fn encode(samples: &[Sample], ts_ms: i64) -> Vec<u8> {
    let mut req = Vec::with_capacity(samples.len() * 96);
    for s in samples {
        let mut series = Vec::with_capacity(96);
        // Labels sorted by name, `__name__` first (it sorts before lower-case names).
        let mut labels: Vec<(&str, &str)> = vec![("__name__", s.name.as_str())];
        labels.extend(s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        labels.sort();
        for (k, v) in labels {
            let mut label = Vec::with_capacity(k.len() + v.len() + 4);
            bytes_field(&mut label, 1, k.as_bytes());
            bytes_field(&mut label, 2, v.as_bytes());
            bytes_field(&mut series, 1, &label);
        }
        let mut sample = Vec::with_capacity(20);
        sample.push(1 << 3 | 1); // value: double (fixed64)
        sample.extend_from_slice(&s.value.to_le_bytes());
        sample.push(2 << 3); // timestamp: int64 (varint)
        varint(&mut sample, ts_ms as u64);
        bytes_field(&mut series, 2, &sample);
        bytes_field(&mut req, 1, &series);
    }
    snap::raw::Encoder::new().compress_vec(&req).unwrap_or_default()
}

/// A length-delimited field.
fn bytes_field(out: &mut Vec<u8>, field: u64, data: &[u8]) {
    varint(out, field << 3 | 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// A protobuf varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_encodes_as_prometheus_reads_it() {
        let s = Sample { name: "up".into(), labels: vec![("job".into(), "x".into())], value: 1.0 };
        let body = snap::raw::Decoder::new().decompress_vec(&encode(&[s], 1000)).unwrap();
        // WriteRequest.timeseries (1) { labels (1) {__name__=up}, labels {job=x}, samples (2) {1.0, 1000} }
        let want: Vec<u8> = [
            &[0x0a, 40][..],
            &[0x0a, 14, 0x0a, 8],
            b"__name__",
            &[0x12, 2],
            b"up",
            &[0x0a, 8, 0x0a, 3],
            b"job",
            &[0x12, 1],
            b"x",
            &[0x12, 12, 0x09],
            &1.0f64.to_le_bytes(),
            &[0x10, 0xe8, 0x07],
        ]
        .concat();
        assert_eq!(body, want);
        assert!(Pusher::start("https://127.0.0.1:9/api/v1/write").is_err());
        assert!(Pusher::start("nonsense").is_err());
    }
}
