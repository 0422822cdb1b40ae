//! A thread's share of the rate schedule.
//!
//! Thread `j` of `T` takes requests `j, j+T, j+2T, ...` of the one global schedule, so the
//! threads together follow it exactly whatever the rate (even below one request per thread per
//! second), and no coordination is needed while running. Within a thread, any free connection
//! takes the next due request: a slow connection does not hold back a share of the schedule
//! while others idle (wrk2 gives each connection its own schedule).
//!
//! Sends are grouped on a tick (1 ms by default): a request due inside a tick is intended for
//! the tick's end, and latency counts from there. Waking for every request (every 50 µs at
//! 20,000/s) costs the generator, and the server, a context switch per request; a tick makes
//! that one per millisecond, like wrk2's and h2load's timers, while the rate stays exact and a
//! stall still shows in full. `--tick 0` sends each request at its own microsecond.

use crate::schedule::Schedule;

/// The next requests this thread owes.
#[derive(Debug)]
pub struct Pacer<'a> {
    schedule: &'a Schedule,
    next_k: u64,
    step: u64,
    tick_us: u64,
    next_due: Option<u64>,
}

impl<'a> Pacer<'a> {
    /// The pacer of thread `index` out of `threads`.
    pub fn new(schedule: &'a Schedule, index: usize, threads: usize, tick_us: u64) -> Pacer<'a> {
        let next_k = index as u64;
        let mut p = Pacer { schedule, next_k, step: threads.max(1) as u64, tick_us, next_due: None };
        p.next_due = p.due(next_k);
        p
    }

    /// Request `k`'s intended start, moved to the end of its tick.
    fn due(&self, k: u64) -> Option<u64> {
        let t = self.schedule.due_us(k)?;
        if self.tick_us <= 1 {
            return Some(t);
        }
        // The last tick may end at (or past) the end of the run: its requests keep their own times.
        let q = t.div_ceil(self.tick_us) * self.tick_us;
        Some(if q >= self.schedule.duration().as_micros() as u64 { t } else { q })
    }

    /// When the next request is due (clock µs), or `None` when the schedule is done.
    #[inline]
    pub fn next_due(&self) -> Option<u64> {
        self.next_due
    }

    /// Takes the next request; returns its intended start.
    #[inline]
    pub fn take(&mut self) -> Option<u64> {
        let due = self.next_due?;
        self.next_k += self.step;
        self.next_due = self.due(self.next_k);
        Some(due)
    }

    /// Requests due before `end_us` that were never taken.
    pub fn left_before(&self, end_us: u64) -> u64 {
        let mut n = 0;
        let mut k = self.next_k;
        while let Some(t) = self.due(k) {
            if t >= end_us {
                break;
            }
            n += 1;
            k += self.step;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn segments_and_their_threads_interleave_the_single_process_schedule() {
        use crate::schedule::Stage;
        let ramp = Schedule::stages(
            0.0,
            &[
                Stage { duration: Duration::from_millis(300), rate_per_s: 2000.0 },
                Stage { duration: Duration::ZERO, rate_per_s: 500.0 },
                Stage { duration: Duration::from_millis(200), rate_per_s: 500.0 },
            ],
        );
        for sched in [Schedule::constant(1000.0, Duration::from_millis(97)), ramp] {
            let mut want = Vec::new();
            let mut one = Pacer::new(&sched, 0, 1, 0);
            while let Some(due) = one.take() {
                want.push(due);
            }
            for n in 1..=16usize {
                for threads in 1..=3usize {
                    // Thread t of segment s: s + n t, then every n × threads-th (see
                    // engine::worker::schedule::share_index).
                    let mut all = Vec::new();
                    for seg in 0..n {
                        for t in 0..threads {
                            let mut p = Pacer::new(&sched, seg + n * t, n * threads, 0);
                            while let Some(due) = p.take() {
                                all.push(due);
                            }
                        }
                    }
                    all.sort();
                    assert_eq!(all, want, "{n} segments x {threads} threads");
                }
            }
        }
    }

    #[test]
    fn threads_interleave_the_global_schedule() {
        let sched = Schedule::constant(1000.0, Duration::from_millis(10));
        let mut all = Vec::new();
        for t in 0..3 {
            let mut p = Pacer::new(&sched, t, 3, 0);
            while let Some(due) = p.take() {
                all.push(due);
            }
        }
        all.sort();
        let want: Vec<u64> = (0..10).map(|k| k * 1000).collect();
        assert_eq!(all, want);
        // A rate below the thread count still works: 0.5/s over 10 s on 2 threads.
        let slow = Schedule::constant(0.5, Duration::from_secs(10));
        let p0: Vec<u64> = std::iter::from_fn({
            let mut p = Pacer::new(&slow, 0, 2, 0);
            move || p.take()
        })
        .collect();
        assert_eq!(p0, vec![0, 4_000_000, 8_000_000]);
        assert_eq!(Pacer::new(&slow, 1, 2, 0).left_before(5_000_000), 1);
    }

    #[test]
    fn a_tick_groups_sends_without_changing_the_count() {
        // 10 requests 300 µs apart on a 1 ms tick: due at 0, then the ends of their ticks; the
        // last tick would end with the run, so its requests keep their own times.
        let sched = Schedule::constant(1000.0 / 0.3, Duration::from_millis(3));
        let mut p = Pacer::new(&sched, 0, 1, 1000);
        let got: Vec<u64> = std::iter::from_fn(|| p.take()).collect();
        assert_eq!(got, vec![0, 1000, 1000, 1000, 2000, 2000, 2000, 2100, 2400, 2700]);
    }
}
