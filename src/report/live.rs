//! What stderr shows while a test runs: the plain progress [`line`] printed once per interval
//! with `--interval` (once per second of rows joined when the interval was chosen shorter), and
//! the terminal's [`StatusLine`], one line redrawn in place as often in every mode. The CLI's
//! printer owns a `StatusLine` only when stderr is a terminal and `--quiet` is off; rendering
//! ([`status`], [`bar`]) is pure so it is tested alone.

use std::io::Write;

use super::units::time_us;
use crate::stats::interval::IntervalRow;

/// One readable line: elapsed time, target and achieved rate, latency, errors, connections,
/// late sends.
pub fn line(r: &IntervalRow) -> String {
    let target = r.target_per_s.map_or(String::new(), |t| format!("target {t:>8.0}/s  "));
    format!(
        "[{:>6.1}s] {target}done {:>8.0}/s  p50 {:>8}  p90 {:>8}  p99 {:>8}  max {:>8}  errors {}  conns {}  late {}",
        r.start_s + r.length_s,
        r.achieved_per_s,
        time_us(r.p50_us as f64),
        time_us(r.p90_us as f64),
        time_us(r.p99_us as f64),
        time_us(r.max_us as f64),
        r.errors,
        r.open_connections,
        r.late
    )
}

/// Cells in the status line's progress bar.
const BAR_CELLS: usize = 10;

/// Width assumed when the terminal's cannot be read.
pub const DEFAULT_WIDTH: usize = 80;

/// A progress bar of `cells` cells, `#` for the share done (clamped to 0..=1), `-` for the rest.
pub fn bar(done: f64, cells: usize) -> String {
    // NaN (a zero-length test) reads as finished rather than poisoning the arithmetic.
    let done = if done.is_nan() { 1.0 } else { done.clamp(0.0, 1.0) };
    let full = ((done * cells as f64).round() as usize).min(cells);
    format!("[{}{}]", "#".repeat(full), "-".repeat(cells - full))
}

/// How far a run has to go, for the status line's bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// Its planned seconds.
    Time(f64),
    /// `-n`: requests sent so far of the count (a run of N requests has no planned time).
    Requests {
        /// Sent so far.
        sent: u64,
        /// The count.
        total: u64,
    },
}

/// The status line for an interval row, at most `width` characters: the elapsed and planned
/// seconds with a bar (with `-n`, the requests sent of the count), requests per second (against the target in rate mode), p50 and p99 of
/// the interval, errors, open connections, and the hit ratio in a proxy test (`hit` is
/// `Some(None)` when the ratio is unknown). Fields that do not fit are left off, least useful
/// first, so what shows is always whole.
pub fn status(r: &IntervalRow, goal: Goal, hit: Option<Option<f64>>, width: usize) -> String {
    let elapsed_s = r.start_s + r.length_s;
    let progress = match goal {
        Goal::Time(total_s) => format!("{} {elapsed_s:.1}/{total_s:.0}s", bar(elapsed_s / total_s, BAR_CELLS)),
        Goal::Requests { sent, total } => {
            format!("{} {sent}/{total} requests {elapsed_s:.1}s", bar(sent as f64 / total as f64, BAR_CELLS))
        }
    };
    let rate = match r.target_per_s {
        Some(t) => format!("{:.0}/{:.0} req/s", r.achieved_per_s, t),
        None => format!("{:.0} req/s", r.achieved_per_s),
    };
    // (priority, text): lower priority is dropped first when the line is too wide.
    let mut fields: Vec<(u8, String)> = vec![
        (9, progress),
        (8, rate),
        (5, format!("p50 {}", time_us(r.p50_us as f64))),
        (7, format!("p99 {}", time_us(r.p99_us as f64))),
        (6, format!("err {}", r.errors)),
        (3, format!("conn {}", r.open_connections)),
    ];
    if let Some(hit) = hit {
        fields.push((7, hit.map_or("hit ?".to_string(), |h| format!("hit {h:.3}"))));
    }
    let joined = |fields: &[(u8, String)]| fields.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>().join("  ");
    let mut out = joined(&fields);
    while out.chars().count() > width && fields.len() > 1 {
        let lowest = fields.iter().enumerate().min_by_key(|(_, (p, _))| *p).map_or(0, |(i, _)| i);
        fields.remove(lowest);
        out = joined(&fields);
    }
    out.chars().take(width).collect()
}

/// The width of the terminal on stderr, if it is one and says.
pub fn terminal_width() -> Option<usize> {
    let mut size = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which lives for the call.
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// Erases the line the cursor is on and returns to its start.
const CLEAR: &str = "\r\x1b[K";

/// The line redrawn in place at the bottom of a terminal. Whoever prints anything else while it
/// is shown calls [`StatusLine::clear`] first, so the text never lands after the status line,
/// and the next [`StatusLine::draw`] puts it back below what was printed.
#[derive(Debug, Default)]
pub struct StatusLine {
    shown: bool,
}

impl StatusLine {
    /// A status line not yet drawn.
    pub fn new() -> StatusLine {
        StatusLine::default()
    }

    /// Replaces the status line with `text` (one write, so nothing interleaves inside it).
    pub fn draw(&mut self, text: &str) {
        let _ = std::io::stderr().write_all(format!("\r{text}\x1b[K").as_bytes());
        self.shown = true;
    }

    /// Erases the status line if it is shown.
    pub fn clear(&mut self) {
        if std::mem::take(&mut self.shown) {
            let _ = std::io::stderr().write_all(CLEAR.as_bytes());
        }
    }

    /// The width a status line may take: one column short of the terminal's, so the cursor never
    /// sits past the edge, where some terminals wrap on the next character.
    pub fn width() -> usize {
        terminal_width().unwrap_or(DEFAULT_WIDTH).saturating_sub(1).max(1)
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(elapsed_s: f64, target: Option<f64>) -> IntervalRow {
        IntervalRow {
            start_s: elapsed_s - 1.0,
            length_s: 1.0,
            target_per_s: target,
            achieved_per_s: 12345.4,
            requests: 12345,
            mean_us: 900.0,
            p50_us: 820,
            p90_us: 1500,
            p99_us: 4560,
            max_us: 9000,
            errors: 7,
            open_connections: 100,
            ..Default::default()
        }
    }

    #[test]
    fn bar_fills_with_the_share_done() {
        for (done, cells, want) in [
            (0.0, 10, "[----------]"),
            (0.3, 10, "[###-------]"),
            (0.34, 10, "[###-------]"), // rounds down below half a cell
            (0.35, 10, "[####------]"), // and up from half a cell
            (1.0, 10, "[##########]"),
            (1.7, 10, "[##########]"), // the drain after the duration stays full
            (-0.5, 4, "[----]"),       // clamped
            (f64::NAN, 4, "[####]"),   // zero-length test
            (0.5, 0, "[]"),
        ] {
            assert_eq!(bar(done, cells), want, "done {done} cells {cells}");
        }
    }

    #[test]
    fn status_carries_every_field_when_it_fits() {
        for (r, total, hit, want) in [
            // Closed loop.
            (
                row(3.0, None),
                10.0,
                None,
                "[###-------] 3.0/10s  12345 req/s  p50 820.00us  p99 4.56ms  err 7  conn 100",
            ),
            // Rate mode: achieved against target.
            (
                row(5.0, Some(20000.0)),
                10.0,
                None,
                "[#####-----] 5.0/10s  12345/20000 req/s  p50 820.00us  p99 4.56ms  err 7  conn 100",
            ),
            // Proxy test, ratio known and unknown.
            (
                row(10.0, None),
                10.0,
                Some(Some(0.9)),
                "[##########] 10.0/10s  12345 req/s  p50 820.00us  p99 4.56ms  err 7  conn 100  hit 0.900",
            ),
            (
                row(1.0, None),
                2.0,
                Some(None),
                "[#####-----] 1.0/2s  12345 req/s  p50 820.00us  p99 4.56ms  err 7  conn 100  hit ?",
            ),
        ] {
            assert_eq!(status(&r, Goal::Time(total), hit, 200), want);
        }
        // -n: the requests sent of the count, and the time so far.
        assert_eq!(
            status(&row(1.0, None), Goal::Requests { sent: 250, total: 1000 }, None, 200),
            "[###-------] 250/1000 requests 1.0s  12345 req/s  p50 820.00us  p99 4.56ms  err 7  conn 100"
        );
    }

    #[test]
    fn status_drops_the_least_useful_fields_to_fit() {
        let r = row(5.0, Some(20000.0));
        for (width, want) in [
            // 79 columns: a rate-mode proxy line loses the connection count, then p50.
            (79, "[#####-----] 5.0/10s  12345/20000 req/s  p99 4.56ms  err 7  hit 0.900"),
            (62, "[#####-----] 5.0/10s  12345/20000 req/s  p99 4.56ms  hit 0.900"),
            (50, "[#####-----] 5.0/10s  12345/20000 req/s  hit 0.900"),
            (40, "[#####-----] 5.0/10s  12345/20000 req/s"),
            (20, "[#####-----] 5.0/10s"),
            // Narrower than the last field: cut.
            (8, "[#####--"),
        ] {
            let got = status(&r, Goal::Time(10.0), Some(Some(0.9)), width);
            assert_eq!(got, want, "width {width}");
            assert!(got.len() <= width);
        }
    }
}
