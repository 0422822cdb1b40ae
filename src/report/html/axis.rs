//! Axes that read at a glance: ticks on a 1-2-5 grid (linear: multiples of 1, 2 or 5 × 10^k;
//! logarithmic: 1, 2 and 5 of each decade), one unit per axis chosen for its range and named
//! in its title, and numbers with thousands separators.

use crate::report::units::grouped;

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// From `lo` to `hi`, evenly.
    Linear {
        /// The axis's start.
        lo: f64,
        /// Its end.
        hi: f64,
    },
    /// From `lo` to `hi` (both above 0), by decades.
    Log {
        /// The axis's start.
        lo: f64,
        /// Its end.
        hi: f64,
    },
}

impl Scale {
    /// Where `v` lies along the axis, from 0 to 1 (values outside are clamped, and a log
    /// axis puts 0 and below at its start).
    pub fn frac(&self, v: f64) -> f64 {
        let f = match *self {
            Scale::Linear { lo, hi } => (v - lo) / (hi - lo),
            Scale::Log { lo, hi } if v > 0.0 => (v.ln() - lo.ln()) / (hi.ln() - lo.ln()),
            Scale::Log { .. } => 0.0,
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// An axis: its scale, ticks, the unit its values are divided by, and its title.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The scale, in the axis's unit.
    pub scale: Scale,
    /// Tick values, in the unit.
    pub ticks: Vec<f64>,
    /// Decimals of the tick labels.
    pub decimals: usize,
    /// A value in the data's unit is divided by this to be in the axis's unit.
    pub divisor: f64,
    /// The title, unit included: `Latency (ms)`.
    pub title: String,
    /// `lin`, `log` or `pct` (the spectrum's 1/(1-p) axis), for tests and the script.
    pub kind: &'static str,
}

impl Axis {
    /// A linear axis from 0 (or `lo` when below 0) to at least `hi`, ticks on a 1-2-5 grid.
    pub fn linear(lo: f64, hi: f64, title: &str, divisor: f64) -> Axis {
        let (lo, hi) = (lo / divisor, hi / divisor);
        let (ticks, step) = nice_ticks(lo.min(0.0), if hi > lo.min(0.0) { hi } else { lo.min(0.0) + 1.0 });
        let scale = Scale::Linear { lo: ticks[0], hi: *ticks.last().unwrap_or(&1.0) };
        Axis { scale, ticks, decimals: decimals(step), divisor, title: title.to_string(), kind: "lin" }
    }

    /// A linear axis of whole counts from 0 to at least `hi`: steps of at least 1.
    pub fn count(hi: f64, title: &str) -> Axis {
        let mut a = Axis::linear(0.0, hi.max(1.0), title, 1.0);
        if a.decimals > 0 {
            let top = a.ticks.last().copied().unwrap_or(1.0).ceil().max(1.0);
            a.ticks = (0..=top as u64).map(|v| v as f64).collect();
            a.scale = Scale::Linear { lo: 0.0, hi: top };
            a.decimals = 0;
        }
        a
    }

    /// A linear axis with the first and last values exactly `lo` and `hi` (time: the run's span)
    /// and ticks on the 1-2-5 grid inside.
    pub fn span(lo: f64, hi: f64, title: &str, divisor: f64) -> Axis {
        let (lo, hi) = (lo / divisor, if hi > lo { hi / divisor } else { lo / divisor + 1.0 });
        let step = nice_step((hi - lo) / 5.0);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        let ticks = (first..=last).map(|i| clean(i as f64 * step)).collect();
        Axis {
            scale: Scale::Linear { lo, hi },
            ticks,
            decimals: decimals(step),
            divisor,
            title: title.to_string(),
            kind: "lin",
        }
    }

    /// A log axis over whole decades around `lo`..`hi` (both in the data's unit, above 0),
    /// ticks at 1, 2 and 5 of each decade (only 1 past two decades, so labels do not crowd).
    pub fn log(lo: f64, hi: f64, title: &str, divisor: f64) -> Axis {
        let lo = (lo / divisor).max(f64::MIN_POSITIVE);
        let hi = (hi / divisor).max(lo);
        let d0 = lo.log10().floor() as i32;
        let mut d1 = hi.log10().ceil() as i32;
        if d1 <= d0 {
            d1 = d0 + 1;
        }
        let mantissas: &[f64] = if d1 - d0 > 2 { &[1.0] } else { &[1.0, 2.0, 5.0] };
        let mut ticks = Vec::new();
        for d in d0..=d1 {
            for m in mantissas {
                let v = clean(m * 10f64.powi(d));
                if v <= 10f64.powi(d1) * 1.000_001 {
                    ticks.push(v);
                }
            }
        }
        let decimals = (-d0).max(0) as usize;
        Axis {
            scale: Scale::Log { lo: 10f64.powi(d0), hi: 10f64.powi(d1) },
            ticks,
            decimals,
            divisor,
            title: title.to_string(),
            kind: "log",
        }
    }

    /// A tick's label.
    pub fn label(&self, v: f64) -> String {
        if self.kind == "log" {
            // Each log tick keeps the digits it needs: 0.001, 0.002, …, 1, 2, 5, 10.
            let places = if v >= 1.0 { 0 } else { (-(v.log10().floor()) as usize).min(self.decimals) };
            grouped(v, places)
        } else {
            grouped(v, self.decimals)
        }
    }

    /// Where a value in the data's unit lies, 0 to 1.
    pub fn frac(&self, v: f64) -> f64 {
        self.scale.frac(v / self.divisor)
    }
}

/// A latency axis's unit for values up to `max_us` microseconds: its name and size in µs.
pub fn latency_unit(max_us: f64) -> (&'static str, f64) {
    if max_us >= 1_000_000.0 {
        ("s", 1_000_000.0)
    } else if max_us >= 1_000.0 {
        ("ms", 1_000.0)
    } else {
        ("µs", 1.0)
    }
}

/// A time axis's unit for a span of `secs`: its name and size in seconds.
pub fn time_unit(secs: f64) -> (&'static str, f64) {
    if secs > 7_200.0 {
        ("h", 3_600.0)
    } else if secs > 600.0 {
        ("min", 60.0)
    } else {
        ("s", 1.0)
    }
}

/// A latency in microseconds, in the unit that reads best, to three significant digits.
pub fn latency(us: f64) -> String {
    let (unit, size) = latency_unit(us);
    let v = us / size;
    let places = if v >= 100.0 || size == 1.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{} {unit}", grouped(v, places))
}

/// A rate as the page writes it: `1,234/s`, a decimal below 100 (`12.5/s`).
pub fn per_second(v: f64) -> String {
    format!("{}/s", grouped(v, if v < 100.0 { 1 } else { 0 }))
}

/// The 1-2-5 step nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let base = 10f64.powf(raw.log10().floor());
    let m = raw / base;
    let nice = if m <= 1.0 + 1e-9 {
        1.0
    } else if m <= 2.0 + 1e-9 {
        2.0
    } else if m <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    nice * base
}

/// Ticks from `lo` down to a multiple of the step, up to `hi` rounded up to one: three to six
/// intervals on a 1-2-5 step; also returns the step.
pub fn nice_ticks(lo: f64, hi: f64) -> (Vec<f64>, f64) {
    let step = nice_step((hi - lo) / 6.0);
    let first = (lo / step + 1e-9).floor() as i64;
    let last = (hi / step - 1e-9).ceil() as i64;
    let ticks = (first..=last.max(first + 1)).map(|i| clean(i as f64 * step)).collect();
    (ticks, step)
}

/// Decimals that show a step's digits: 0 for 1 and above, 1 for 0.5 or 0.2, 2 for 0.05…
fn decimals(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-(step.log10().floor())) as usize
    }
}

/// `v` without the binary noise of `i × step` (0.30000000000000004 → 0.3).
fn clean(v: f64) -> f64 {
    let s = format!("{v:.9}");
    s.parse().unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        // (raw step, nice step)
        let rows = [
            (0.7, 1.0),
            (1.0, 1.0),
            (1.3, 2.0),
            (2.7, 5.0),
            (6.0, 10.0),
            (648.0, 1000.0),
            (0.0123, 0.02),
            // Nothing to divide: one.
            (0.0, 1.0),
        ];
        for (raw, want) in rows {
            assert!((nice_step(raw) - want).abs() < 1e-12, "{raw}: {}", nice_step(raw));
        }
    }

    #[test]
    fn ticks_cover_the_range_on_the_grid() {
        // The requests/s axis of issue 21's run: max 3240 gave 3240 / 2430 / 1620 / 810 / 0.
        let (ticks, step) = nice_ticks(0.0, 3240.0);
        assert_eq!((ticks, step), (vec![0.0, 1000.0, 2000.0, 3000.0, 4000.0], 1000.0));
        // Its latency axis, in ms: max 1.08 s.
        let a = Axis::linear(0.0, 1_080_000.0, "Latency (s)", 1_000_000.0);
        assert_eq!(a.ticks, vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2]);
        assert_eq!(
            a.ticks.iter().map(|t| a.label(*t)).collect::<Vec<_>>(),
            ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2"]
        );
        // A time span keeps its ends and ticks inside.
        let t = Axis::span(0.0, 8.0, "Time (s)", 1.0);
        assert_eq!(t.ticks, vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(t.scale, Scale::Linear { lo: 0.0, hi: 8.0 });
    }

    #[test]
    fn count_axes_step_by_whole_numbers() {
        // Two connections: 0, 1, 2 rather than 0.0, 0.5, 1.0, 1.5, 2.0.
        assert_eq!(Axis::count(2.0, "Connections").ticks, vec![0.0, 1.0, 2.0]);
        assert_eq!(Axis::count(0.0, "Connections").ticks, vec![0.0, 1.0]);
        assert_eq!(Axis::count(3240.0, "Errors").ticks, vec![0.0, 1000.0, 2000.0, 3000.0, 4000.0]);
    }

    #[test]
    fn log_ticks_are_one_two_five_per_decade() {
        let a = Axis::log(130.0, 45_000.0, "Latency (ms)", 1000.0);
        assert_eq!(a.ticks, vec![0.1, 1.0, 10.0, 100.0]);
        let a = Axis::log(130.0, 4_500.0, "Latency (ms)", 1000.0);
        assert_eq!(a.ticks, vec![0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]);
        assert_eq!(a.label(0.1), "0.1");
        assert_eq!(a.label(5.0), "5");
        assert!((a.frac(1000.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn numbers_get_thousands_separators() {
        let rows = [
            (0.0, 0, "0"),
            (999.0, 0, "999"),
            (1234.0, 0, "1,234"),
            (1_234_567.891, 1, "1,234,567.9"),
            (-2000.0, 0, "-2,000"),
        ];
        for (v, places, want) in rows {
            assert_eq!(grouped(v, places), want);
        }
        assert_eq!(latency(950.0), "950 µs");
        assert_eq!(latency(12_345.0), "12.3 ms");
        assert_eq!(latency(1_500_000.0), "1.50 s");
    }
}
