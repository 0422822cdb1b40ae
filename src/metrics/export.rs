//! The exporter a run's observer feeds: it adds each row to the tally that `/metrics` serves
//! and hands the samples to the remote-write pusher at most once a second; after the test it
//! lingers so the last scrape sees the totals, and says what remote write dropped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::remote::{Delivery, PushError, Pusher};
use super::serve::Endpoint;
use super::{Tags, Tally};
use crate::result::ProxyRow;
use crate::run::RunResult;
use crate::stats::interval::{IntervalRow, Latencies};

/// Where live metrics go, as the command line asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Serve `/metrics` here (`--metrics-listen`).
    pub listen: Option<SocketAddr>,
    /// Keep serving this long after the test (`--metrics-linger`).
    pub linger: Duration,
    /// Remote-write URL (`--metrics-push`).
    pub push: Option<String>,
    /// Labels on every series (`--tag`, and `segment`).
    pub tags: Tags,
}

impl Settings {
    /// True when metrics go anywhere.
    pub fn wanted(&self) -> bool {
        self.listen.is_some() || self.push.is_some()
    }
}

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The endpoint's address could not be bound.
    #[error("cannot listen for metrics on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The push URL is not usable.
    #[error(transparent)]
    Push(#[from] PushError),
}

/// Samples pushed at most this often (rows may be 10 ms apart in a short run).
const PUSH_EVERY: Duration = Duration::from_secs(1);

/// A running exporter.
pub struct Exporter {
    tally: Arc<Mutex<Tally>>,
    tags: Tags,
    endpoint: Option<Endpoint>,
    pusher: Option<Pusher>,
    pushed_at: Option<Instant>,
    linger: Duration,
}

impl Exporter {
    /// Starts serving and pushing as `s` asks; rows before `warmup_s` are not counted.
    pub fn start(s: &Settings, warmup_s: f64) -> Result<Exporter, ExportError> {
        let tally = Arc::new(Mutex::new(Tally::new(warmup_s)));
        let endpoint = match s.listen {
            Some(addr) => Some(
                Endpoint::start(addr, Arc::clone(&tally), s.tags.clone())
                    .map_err(|source| ExportError::Listen { addr, source })?,
            ),
            None => None,
        };
        let pusher = s.push.as_deref().map(Pusher::start).transpose()?;
        Ok(Exporter { tally, tags: s.tags.clone(), endpoint, pusher, pushed_at: None, linger: s.linger })
    }

    /// Where `/metrics` is served, if it is.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(Endpoint::addr)
    }

    fn tally(&self) -> MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One interval row of the run.
    pub fn row(&mut self, row: &IntervalRow, latency: Latencies<'_>, proxy: Option<&ProxyRow>) {
        self.tally().add_row(row, latency, proxy);
        if self.pusher.is_some() && self.pushed_at.is_none_or(|t| t.elapsed() >= PUSH_EVERY) {
            self.pushed_at = Some(Instant::now());
            let samples: Vec<_> = self.tally().families(&self.tags).into_iter().flat_map(|f| f.samples).collect();
            if let Some(p) = &self.pusher {
                p.push(&samples);
            }
        }
    }

    /// The run ended with `result` (a capacity search's step, or the whole test).
    pub fn finished(&mut self, result: &RunResult) {
        self.tally().finish(result);
    }

    /// A capacity search's step starts at `rate`; the step's warm-up ends `warmup_s` in.
    pub fn step_started(&mut self, rate: f64, warmup_s: f64) {
        let mut t = self.tally();
        t.step_started(rate);
        t.set_warmup(warmup_s);
    }

    /// A step was judged `verdict`.
    pub fn step_ended(&mut self, verdict: &str) {
        self.tally().step_ended(verdict);
    }

    /// After the test: pushes the totals, keeps `/metrics` up for the linger time, and returns
    /// a line to print when remote write dropped samples.
    pub fn close(self) -> Option<String> {
        let samples: Vec<_> = self.tally().families(&self.tags).into_iter().flat_map(|f| f.samples).collect();
        let Exporter { pusher, endpoint, linger, .. } = self;
        let delivery = pusher.map(|p| p.finish(&samples));
        if endpoint.is_some() && !linger.is_zero() {
            std::thread::sleep(linger);
        }
        drop(endpoint);
        // A receiver never reached was already named in the pusher's one warning line.
        match delivery {
            Some(Delivery { sent, dropped_samples }) if dropped_samples > 0 && sent > 0 => Some(format!(
                "strain: metrics push: {dropped_samples} samples dropped while the receiver was unreachable; the last batch, with every total, arrived"
            )),
            _ => None,
        }
    }
}
