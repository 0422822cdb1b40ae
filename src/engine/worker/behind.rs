//! How far a paced thread was behind: the time it spent away from its poll (busy with events
//! and its own turns) plus the time it waited for a CPU (the kernel's run delay, which a
//! cgroup's quota or other processes add). A send that came due while every connection looked
//! busy is strain's own lateness when the thread was behind for most of its wait: a thread
//! that is throttled or late to its turn also reads its responses late, so its connections
//! look busy because it is behind, not because the server holds them (docs/DIAGNOSES.md).

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Spacing of the samples kept: fine enough against [`crate::stats::LATE_SEND_US`].
const SAMPLE_US: u64 = 250;
/// How often the run delay is read (one `pread` of a proc file, a few µs: 200 a second).
const READ_US: u64 = 5_000;
/// Samples kept: at least half a second of history at [`SAMPLE_US`].
const SAMPLES: usize = 2_048;

/// A paced thread's running total of time behind, sampled to answer "how much of this
/// interval".
#[derive(Debug, Default)]
pub(super) struct Behind {
    /// `/proc/thread-self/schedstat`, opened by the worker thread itself when it begins;
    /// `None` where the kernel keeps no run delay.
    schedstat: Option<File>,
    opened: bool,
    /// Time spent away from the poll so far, µs.
    off_poll_us: u64,
    /// When the thread last came back from its poll (clock µs).
    awake_since: u64,
    /// The run delay at the first read and at the latest, µs.
    delay_base_us: u64,
    delay_us: u64,
    read_at: u64,
    /// (clock µs, behind so far µs), oldest first.
    samples: VecDeque<(u64, u64)>,
}

impl Behind {
    /// The thread goes into its poll at clock time `now`.
    pub(super) fn polling(&mut self, now: u64) {
        self.off_poll_us += now.saturating_sub(self.awake_since);
        self.awake_since = now;
    }

    /// The thread is back from its poll (or begins) at clock time `now`.
    pub(super) fn woke(&mut self, now: u64) {
        if !self.opened {
            self.opened = true;
            self.schedstat = File::open("/proc/thread-self/schedstat").ok();
            self.delay_base_us = self.read_delay().unwrap_or(0);
            self.delay_us = self.delay_base_us;
        }
        self.awake_since = now;
        if now.saturating_sub(self.read_at) >= READ_US {
            self.read_at = now;
            if let Some(d) = self.read_delay() {
                self.delay_us = d.max(self.delay_us);
            }
        }
        if self.samples.back().is_none_or(|&(t, _)| now.saturating_sub(t) >= SAMPLE_US) {
            if self.samples.len() == SAMPLES {
                self.samples.pop_front();
            }
            let total = self.total(now);
            self.samples.push_back((now, total));
        }
    }

    /// How long the thread was behind between `from` and `now` (clock µs), as far as its
    /// samples tell: from the last one at or before `from` (the oldest if none is).
    pub(super) fn since(&self, from: u64, now: u64) -> u64 {
        let at = self.samples.partition_point(|&(t, _)| t <= from);
        let Some(&(_, then)) = self.samples.get(at.saturating_sub(1)) else { return 0 };
        self.total(now).saturating_sub(then)
    }

    /// Time behind so far: away from the poll (up to `now`) and waiting for a CPU.
    fn total(&self, now: u64) -> u64 {
        self.off_poll_us + now.saturating_sub(self.awake_since) + (self.delay_us - self.delay_base_us)
    }

    /// The thread's run delay, µs.
    fn read_delay(&self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.schedstat.as_ref()?.read_at(&mut buf, 0).ok()?;
        run_delay_ns(std::str::from_utf8(&buf[..n]).ok()?).map(|ns| ns / 1_000)
    }
}

/// The run delay in a `schedstat` line ("cpu-time run-delay timeslices"), nanoseconds.
pub(super) fn run_delay_ns(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_away_from_the_poll_counts_from_the_sample_before() {
        let mut b = Behind { opened: true, ..Behind::default() };
        b.woke(0);
        b.polling(100); // 100 µs of work
        b.woke(1_000); // asleep 900
        b.polling(6_000); // 5 ms of work
        b.woke(6_100);
        // From 0: all the work; from 1,000 (the sample then): the 5 ms.
        assert_eq!(b.since(0, 6_100), 5_100);
        assert_eq!(b.since(1_000, 6_100), 5_000);
        // Mid-turn, the time since the thread woke counts too.
        assert_eq!(b.since(6_100, 8_100), 2_000);
        // Before the first sample: from the oldest.
        assert_eq!(Behind::default().since(5, 10), 0);
    }

    #[test]
    fn the_run_delay_is_the_second_field() {
        assert_eq!(run_delay_ns("1234 5678 9\n"), Some(5678));
        assert_eq!(run_delay_ns("1234"), None);
        assert_eq!(run_delay_ns(""), None);
    }

    #[test]
    fn this_threads_schedstat_reads() {
        let mut b = Behind::default();
        b.woke(0);
        // Linux keeps it unless built without schedstats; where it does, it reads.
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            assert!(b.read_delay().is_some());
        }
    }
}
