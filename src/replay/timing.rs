//! When each recorded request is due: records put back in time order within a window
//! ([`Reorder`]), a whole second's requests spread evenly over it ([`Spread`]), and the
//! recorded time made a due time ([`Clock`]: `--from`/`--to`, `--max-gap`, the speed).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::record::Record;
use super::Mark;

/// A record and its place in the file, ordered by start time, then by that place.
struct Keyed {
    start: i64,
    seq: u64,
    record: Record,
}

impl PartialEq for Keyed {
    fn eq(&self, o: &Self) -> bool {
        (self.start, self.seq) == (o.start, o.seq)
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Keyed {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.start, self.seq).cmp(&(o.start, o.seq))
    }
}

/// Records a reorder window holds at most, whatever its length: a dense recording (20,000/s
/// over 5 s) would otherwise hold 100,000 records (about 110 MB); past this many, the oldest
/// goes out early, and a record later found to be older still is counted as late.
pub const MAX_HELD: usize = 20_000;

/// Puts a file's records back in start order: a record is held until the file has reached
/// `window` past it (or [`MAX_HELD`] records are held) (nginx writes a line when a request ends, so a slow request's line comes
/// after those that started later). A record further out of order than that goes at once, at
/// the time of the last record given out, and is counted.
pub struct Reorder {
    heap: BinaryHeap<Reverse<Keyed>>,
    seq: u64,
    newest: i64,
    window_us: i64,
    /// The start of the last record given out.
    emitted: i64,
    /// Records that came later in the file than the window allows.
    pub late: u64,
}

impl Reorder {
    /// A reorderer holding records up to `window_us` of recorded time.
    pub fn new(window_us: u64) -> Reorder {
        Reorder {
            heap: BinaryHeap::new(),
            seq: 0,
            newest: i64::MIN,
            window_us: i64::try_from(window_us).unwrap_or(i64::MAX),
            emitted: i64::MIN,
            late: 0,
        }
    }

    /// Takes `r`; gives `out` every record now beyond the window, in order.
    pub fn push(&mut self, mut r: Record, out: &mut dyn FnMut(Record)) {
        if r.start_us < self.emitted {
            self.late += 1;
            r.start_us = self.emitted;
        }
        self.newest = self.newest.max(r.start_us);
        self.seq += 1;
        self.heap.push(Reverse(Keyed { start: r.start_us, seq: self.seq, record: r }));
        let edge = self.newest.saturating_sub(self.window_us);
        while self.heap.len() > MAX_HELD || self.heap.peek().is_some_and(|k| k.0.start < edge) {
            if let Some(Reverse(k)) = self.heap.pop() {
                self.emitted = k.start;
                out(k.record);
            }
        }
    }

    /// The file ended: gives out what is held, in order.
    pub fn finish(&mut self, out: &mut dyn FnMut(Record)) {
        while let Some(Reverse(k)) = self.heap.pop() {
            self.emitted = k.start;
            out(k.record);
        }
    }
}

/// Spreads the requests of a log that writes whole seconds evenly over their second: the
/// `n` requests of one second start at `i / n` of it, in file order.
#[derive(Default)]
pub struct Spread {
    second: Vec<Record>,
}

impl Spread {
    /// Takes the next record in time order; gives `out` those whose place is settled.
    pub fn push(&mut self, r: Record, out: &mut dyn FnMut(Record)) {
        let sec = |r: &Record| r.start_us.div_euclid(1_000_000);
        if self.second.first().is_some_and(|f| !r.whole_second || sec(f) != sec(&r)) {
            self.flush(out);
        }
        if r.whole_second {
            self.second.push(r);
        } else {
            out(r);
        }
    }

    /// Gives out the second held.
    pub fn flush(&mut self, out: &mut dyn FnMut(Record)) {
        let n = self.second.len() as i64;
        for (i, mut r) in self.second.drain(..).enumerate() {
            r.start_us = r.start_us.div_euclid(1_000_000) * 1_000_000 + i as i64 * 1_000_000 / n;
            out(r);
        }
    }
}

/// Where a recorded time falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Before `--from`: skipped.
    Before,
    /// Due this many microseconds after the replay's start.
    Due(u64),
    /// Past `--to`: this and everything after it is skipped.
    After,
}

/// Recorded times (in order) to due times: `(t - t0 - cut) / speed`, where `t0` is the first
/// request replayed and `cut` the silence `--max-gap` took out so far.
#[derive(Debug, Clone)]
pub struct Clock {
    speed: f64,
    from: Option<Mark>,
    to: Option<Mark>,
    max_gap_us: Option<i64>,
    /// The recording's first request's time.
    first: Option<i64>,
    /// The first replayed request's time.
    t0: Option<i64>,
    prev: i64,
    cut: i64,
}

impl Clock {
    /// A clock at `speed` over the window `from`..`to`, cutting gaps to `max_gap_us`.
    pub fn new(speed: f64, from: Option<Mark>, to: Option<Mark>, max_gap_us: Option<u64>) -> Clock {
        let speed = if speed.is_finite() && speed > 0.0 { speed } else { 1.0 };
        let max_gap_us = max_gap_us.map(|g| i64::try_from(g).unwrap_or(i64::MAX));
        Clock { speed, from, to, max_gap_us, first: None, t0: None, prev: 0, cut: 0 }
    }

    /// Where the recorded time `t` (not before the previous one) falls.
    pub fn place(&mut self, t: i64) -> Placed {
        let first = *self.first.get_or_insert(t);
        let mark = |m: Mark| match m {
            Mark::After(d) => first.saturating_add(i64::try_from(d.as_micros()).unwrap_or(i64::MAX)),
            Mark::At(at) => at,
        };
        if self.from.is_some_and(|m| t < mark(m)) {
            return Placed::Before;
        }
        if self.to.is_some_and(|m| t >= mark(m)) {
            return Placed::After;
        }
        let t0 = *self.t0.get_or_insert(t);
        if let Some(max) = self.max_gap_us {
            let gap = t - self.prev;
            if t > t0 && gap > max {
                self.cut += gap - max;
            }
        }
        self.prev = t;
        let since = (t - t0 - self.cut).max(0);
        Placed::Due((since as f64 / self.speed) as u64)
    }

    /// The recorded span replayed so far (first to last request replayed, gaps cut), µs.
    pub fn span_us(&self) -> u64 {
        self.t0.map_or(0, |t0| (self.prev - t0 - self.cut).max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(start_us: i64, whole_second: bool) -> Record {
        Record { start_us, whole_second, ..Record::default() }
    }

    fn starts(v: &[Record]) -> Vec<i64> {
        v.iter().map(|r| r.start_us).collect()
    }

    #[test]
    fn records_out_of_order_within_the_window_are_put_back() {
        let mut q = Reorder::new(1_000_000);
        let mut out = Vec::new();
        for t in [100, 50, 1_500_000, 900_000, 3_000_000, 200] {
            q.push(at(t, false), &mut |r| out.push(r));
        }
        q.finish(&mut |r| out.push(r));
        // 200 came after 1.5 s had gone out: beyond the window, it goes at once, counted.
        assert_eq!(starts(&out), [50, 100, 900_000, 1_500_000, 1_500_000, 3_000_000]);
        assert_eq!(q.late, 1);
    }

    #[test]
    fn a_dense_window_holds_at_most_max_held_records() {
        let mut q = Reorder::new(10_000_000);
        let mut out = Vec::new();
        for t in 0..=MAX_HELD as i64 {
            q.push(at(1_000 + t, false), &mut |r| out.push(r));
        }
        // Within the window, but one too many: the oldest went out early.
        assert_eq!(starts(&out), [1_000]);
        q.push(at(5, false), &mut |r| out.push(r));
        assert_eq!(q.late, 1);
    }

    #[test]
    fn a_second_of_requests_is_spread_over_it() {
        let mut s = Spread::default();
        let mut out = Vec::new();
        for r in
            [at(5_000_000, true), at(5_000_000, true), at(5_000_000, true), at(5_000_000, true), at(6_000_000, true)]
        {
            s.push(r, &mut |r| out.push(r));
        }
        s.flush(&mut |r| out.push(r));
        assert_eq!(starts(&out), [5_000_000, 5_250_000, 5_500_000, 5_750_000, 6_000_000]);
    }

    #[test]
    fn the_clock_scales_cuts_and_windows() {
        // Twice as fast: a 4 s gap is 2 s.
        let mut c = Clock::new(2.0, None, None, None);
        assert_eq!(c.place(10_000_000), Placed::Due(0));
        assert_eq!(c.place(14_000_000), Placed::Due(2_000_000));
        // A silence of 60 s cut to 1 s.
        let mut c = Clock::new(1.0, None, None, Some(1_000_000));
        assert_eq!(c.place(0), Placed::Due(0));
        assert_eq!(c.place(500_000), Placed::Due(500_000));
        assert_eq!(c.place(60_500_000), Placed::Due(1_500_000));
        assert_eq!(c.span_us(), 1_500_000);
        // From 10 s after the first request to 20 s: due times count from the first replayed.
        let mut c = Clock::new(
            1.0,
            Some(Mark::After(Duration::from_secs(10))),
            Some(Mark::After(Duration::from_secs(20))),
            None,
        );
        assert_eq!(c.place(0), Placed::Before);
        assert_eq!(c.place(12_000_000), Placed::Due(0));
        assert_eq!(c.place(19_000_000), Placed::Due(7_000_000));
        assert_eq!(c.place(20_000_000), Placed::After);
    }
}
