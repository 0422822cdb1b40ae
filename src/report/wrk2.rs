//! wrk2's `--latency` block: the HdrHistogram percentile lines, the detailed percentile
//! spectrum and its footer, byte for byte.
//!
//! The text reporter calls [`latency_block`] with a merged latency histogram (values in
//! microseconds) and prints the result where wrk2 prints it; for wrk2's `-U` the caller prints
//! an empty line and a second block titled `Uncorrected Latency (measured without taking
//! delayed starts into account)`.
//!
//! This is a port of the code wrk2 actually runs (its `print_hdr_latency` and the copy of
//! HdrHistogram_c bundled as `src/hdr_histogram.c`), not a use of the `hdrhistogram` crate's
//! own iterators and statistics, because the two differ in ways that show in the output:
//! - the percentile lines round the wanted count half up (`count * p + 0.5`), where the crate's
//!   `value_at_quantile` rounds it up (`ceil`);
//! - the spectrum's ticks are computed in percent with `log(x) / log(2)`, where the crate
//!   works in quantiles with `log2`, which can step differently near a power of two;
//! - the mean is an integer sum divided once, where the crate sums fractions;
//! - the footer's `Max` is the *lowest* value equivalent to the largest recorded one (wrk2's
//!   README shows `12.503` on the last row and `Max = 12.496`);
//! - `Buckets` is computed as the bundled C computes it from the histogram's bounds;
//! - wrk formats the percentile lines' times in `long double`, which rounds some ties the
//!   other way from `units::time_us`'s `f64` (see `units::time_us_exact`).
//!
//! Two departures, both where wrk2's output is broken: an empty histogram prints a mean and
//! deviation of `0.000` where wrk2 prints `-nan` (it divides by zero; the spectrum keeps its
//! one `0.000 1.000000 0 inf` row, as wrk2 prints it), and counts above 2^31 print whole where
//! wrk2's `%12d` of an `int64_t` shows the low 32 bits.
//!
//! Only the histogram's non-empty buckets matter to any of these computations (the C code skips
//! empty ones or passes over them without effect), so the port walks `iter_recorded` once.

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::units::{padded, time_us_exact};

/// Percentiles of the summary lines, as wrk2 prints them.
const PERCENTILES: [f64; 8] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];
/// Spectrum steps per halving of the distance to 100%, as wrk2 passes it.
const TICKS_PER_HALF_DISTANCE: i64 = 5;
/// Values are microseconds; the spectrum and footer print milliseconds.
const VALUE_SCALE: f64 = 1000.0;
/// The line wrk2 prints after each block.
const RULE: &str = "----------------------------------------------------------";

/// wrk2's `Latency Distribution (HdrHistogram - TITLE)` block, the detailed spectrum and its footer.
pub fn latency_block(title: &str, h: &Histogram<u64>) -> String {
    let buckets = recorded(h);
    let total = buckets.iter().fold(0u64, |t, b| t.saturating_add(b.count));
    let mut out = String::new();
    let _ = writeln!(out, "  Latency Distribution (HdrHistogram - {title})");
    for p in PERCENTILES {
        let v = value_at_percentile(&buckets, total, p);
        let _ = writeln!(out, "{p:7.3}%{}", padded(&time_us_exact(v), 10));
    }
    out.push_str("\n  Detailed Percentile spectrum:\n");
    let _ = write!(out, "{:>12} {:>12} {:>12} {:>12}\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    for row in spectrum(&buckets, total) {
        let fraction = row.percentile / 100.0;
        // 1/(1-1) is inf on the last row, which C's printf prints as `inf`, as Rust does.
        let _ = writeln!(
            out,
            "{:12.3} {fraction:12.6} {:12} {:12.2}",
            row.value as f64 / VALUE_SCALE,
            row.count,
            1.0 / (1.0 - fraction)
        );
    }
    let (mean, stdev) = mean_stdev(&buckets, total);
    // C prints the lowest equivalent value of the last recorded bucket.
    let max = buckets.last().map_or(0, |b| b.lowest);
    let (bucket_count, sub_bucket_count) = c_layout(h);
    let _ = writeln!(out, "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]", mean / VALUE_SCALE, stdev / VALUE_SCALE);
    let _ = writeln!(out, "#[Max     = {:12.3}, Total count    = {total:12}]", max as f64 / VALUE_SCALE);
    let _ = writeln!(out, "#[Buckets = {bucket_count:12}, SubBuckets     = {sub_bucket_count:12}]");
    out.push_str(RULE);
    out.push('\n');
    out
}

/// One bucket with at least one value.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    lowest: u64,
    highest: u64,
    median: u64,
    count: u64,
}

fn recorded(h: &Histogram<u64>) -> Vec<Bucket> {
    h.iter_recorded()
        .map(|v| {
            let highest = v.value_iterated_to();
            Bucket {
                lowest: h.lowest_equivalent(highest),
                highest,
                median: h.median_equivalent(highest),
                count: v.count_at_value(),
            }
        })
        .collect()
}

/// C's `hdr_value_at_percentile`: the highest value of the first bucket that brings the running
/// count to `p` percent of `total`, rounded half up; 0 for an empty histogram.
fn value_at_percentile(buckets: &[Bucket], total: u64, p: f64) -> u64 {
    let p = p.min(100.0);
    let wanted = (((p / 100.0) * total as f64 + 0.5) as u64).max(1);
    let mut running = 0u64;
    for b in buckets {
        running = running.saturating_add(b.count);
        if running >= wanted {
            return b.highest;
        }
    }
    0
}

/// One line of the detailed spectrum.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    /// Highest value equivalent to the bucket's, in microseconds.
    value: u64,
    /// In percent, as C's iterator keeps it; printed as a fraction.
    percentile: f64,
    /// Values at or below this bucket.
    count: u64,
}

/// C's `hdr_percentile_iter`: rows at percentiles 0, 10, 20, .. 50, 55, .. 75, 77.5, .. (five
/// ticks per halving of the distance to 100%), each at the first bucket whose running count
/// reaches it, with several rows on one bucket when it spans several ticks. Once the last
/// bucket is reached it gives one row there and then the final row at 100%.
fn spectrum(buckets: &[Bucket], total: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut to = 0.0f64;
    let mut running = 0u64;
    let mut last_value = 0;
    for b in buckets {
        running = running.saturating_add(b.count);
        last_value = b.highest;
        let current = (100.0 * running as f64) / total as f64;
        while to <= current {
            rows.push(Row { value: b.highest, percentile: to, count: running });
            // C checks for the end before looking at the same bucket again: the bucket that
            // completes the count gets one row only.
            if running >= total {
                break;
            }
            match next_tick(to) {
                Some(next) => to = next,
                // Ticks below a float's resolution near 100%: what is left is the last row.
                None => break,
            }
        }
        if running >= total {
            break;
        }
    }
    // C gives the final row even for an empty histogram, where it reads value 0, count 0.
    rows.push(Row { value: last_value, percentile: 100.0, count: running });
    rows
}

/// The percentile after `to`, computed with C's expression; `None` once the step no longer
/// moves it, so that a pathological count cannot loop forever.
fn next_tick(to: f64) -> Option<f64> {
    let halvings = ((100.0 / (100.0 - to)).ln() / 2f64.ln()) as i64;
    // C's `(int64_t) pow(2, halvings + 1)`; a shift past 62 could not happen before the float
    // test below stops the walk, but must not overflow either.
    let half_distance = 1i64.checked_shl(u32::try_from(halvings.saturating_add(1)).ok()?).filter(|d| *d > 0)?;
    let ticks = TICKS_PER_HALF_DISTANCE.checked_mul(half_distance)?;
    let next = to + 100.0 / ticks as f64;
    (next > to).then_some(next)
}

/// C's `hdr_mean` and `hdr_stddev` (population), in microseconds; zeros when empty, where C
/// divides by zero and prints `nan`.
fn mean_stdev(buckets: &[Bucket], total: u64) -> (f64, f64) {
    if total == 0 {
        return (0.0, 0.0);
    }
    // C sums in an int64; a u128 cannot overflow where C's would.
    let sum: u128 = buckets.iter().map(|b| u128::from(b.count) * u128::from(b.median)).sum();
    let mean = sum as f64 / total as f64;
    let squares = buckets.iter().fold(0.0f64, |acc, b| {
        let dev = b.median as f64 - mean;
        acc + (dev * dev) * b.count as f64
    });
    (mean, (squares / total as f64).sqrt())
}

/// Bucket and sub-bucket counts as wrk2's bundled `hdr_init` computes them from the
/// histogram's lowest discernible value, highest trackable value and significant figures.
fn c_layout(h: &Histogram<u64>) -> (u32, u32) {
    let largest_single_unit = 2.0 * 10f64.powi(i32::from(h.sigfig()));
    let sub_bucket_count_magnitude = (largest_single_unit.ln() / 2f64.ln()).ceil() as u32;
    let sub_bucket_half_count_magnitude = sub_bucket_count_magnitude.max(1) - 1;
    let sub_bucket_count = 1u32 << (sub_bucket_half_count_magnitude + 1);
    let unit_magnitude = ((h.low() as f64).ln() / 2f64.ln()).floor() as u32;
    // Wider than any bound, so the doubling below ends before it can overflow.
    let mut trackable = u128::from(sub_bucket_count - 1) << unit_magnitude;
    let mut buckets = 1;
    while trackable < u128::from(h.high()) {
        trackable <<= 1;
        buckets += 1;
    }
    (buckets, sub_bucket_count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wrk2's histogram bounds (one day in microseconds) and strain's (one hour).
    const WRK2_MAX: u64 = 86_400_000_000;
    const STRAIN_MAX: u64 = 3_600_000_000;

    fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, STRAIN_MAX, 3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    /// 1000 values spread geometrically over 100 µs ..= 50 ms, and five outliers.
    fn golden_histogram() -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, STRAIN_MAX, 3).unwrap();
        for i in 0..1000u32 {
            let v = 100.0 * 500f64.powf(f64::from(i) / 999.0);
            h.record(v.round() as u64).unwrap();
        }
        for v in [75_000, 120_000, 250_000, 1_500_000, 12_000_000] {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn recorded_block_matches_golden_file() {
        crate::report::check_golden("wrk2_recorded.txt", &latency_block("Recorded Latency", &golden_histogram()));
    }

    #[test]
    fn empty_histogram_prints_zeros_and_the_final_row() {
        let got = latency_block("Recorded Latency", &histogram(&[]));
        crate::report::check_golden("wrk2_empty.txt", &got);
        assert!(!got.contains("nan"), "{got}");
        // wrk2 prints the final 100% row even with nothing recorded.
        assert_eq!(got.matches("inf").count(), 1, "{got}");
    }

    #[test]
    fn percentile_lines_round_half_up_like_c() {
        // 4 values: p75 wants count 3 (3.0 + 0.5 truncated), p90 wants 4 (3.6 + 0.5). The
        // crate's ceil gives the same here; 1003 values below tell them apart.
        let h = histogram(&[(100, 1), (200, 1), (300, 1), (400, 1)]);
        let rows: &[(f64, u64)] = &[(50.0, 200), (75.0, 300), (90.0, 400), (100.0, 400)];
        let b = recorded(&h);
        for &(p, want) in rows {
            assert_eq!(value_at_percentile(&b, 4, p), want, "p{p}");
        }
        // 0.75 * 1003 = 752.25: C wants 752 values, ceil would want 753.
        let h = histogram(&[(100, 752), (200, 251)]);
        assert_eq!(value_at_percentile(&recorded(&h), 1003, 75.0), 100);
        assert_eq!(h.value_at_quantile(0.75), 200, "the crate rounds up; wrk2 does not");
        assert_eq!(value_at_percentile(&[], 0, 50.0), 0);
    }

    /// The percentile column of the spectrum in wrk2's README (39500 values, the last one
    /// alone in its bucket): it depends only on the tick arithmetic, so any histogram of that
    /// shape must reproduce it.
    const README_PERCENTILES: &str = "0.000000 0.100000 0.200000 0.300000 0.400000 0.500000 \
        0.550000 0.600000 0.650000 0.700000 0.750000 0.775000 0.800000 0.825000 0.850000 \
        0.875000 0.887500 0.900000 0.912500 0.925000 0.937500 0.943750 0.950000 0.956250 \
        0.962500 0.968750 0.971875 0.975000 0.978125 0.981250 0.984375 0.985938 0.987500 \
        0.989062 0.990625 0.992188 0.992969 0.993750 0.994531 0.995313 0.996094 0.996484 \
        0.996875 0.997266 0.997656 0.998047 0.998242 0.998437 0.998633 0.998828 0.999023 \
        0.999121 0.999219 0.999316 0.999414 0.999512 0.999561 0.999609 0.999658 0.999707 \
        0.999756 0.999780 0.999805 0.999829 0.999854 0.999878 0.999890 0.999902 0.999915 \
        0.999927 0.999939 0.999945 0.999951 0.999957 0.999963 0.999969 0.999973 0.999976 \
        1.000000";
    /// Its last column over the same rows.
    const README_INVERTED: &str = "1.00 1.11 1.25 1.43 1.67 2.00 2.22 2.50 2.86 3.33 4.00 4.44 \
        5.00 5.71 6.67 8.00 8.89 10.00 11.43 13.33 16.00 17.78 20.00 22.86 26.67 32.00 35.56 \
        40.00 45.71 53.33 64.00 71.11 80.00 91.43 106.67 128.00 142.22 160.00 182.86 213.33 \
        256.00 284.44 320.00 365.71 426.67 512.00 568.89 640.00 731.43 853.33 1024.00 1137.78 \
        1280.00 1462.86 1706.67 2048.00 2275.56 2560.00 2925.71 3413.33 4096.00 4551.11 \
        5120.00 5851.43 6826.67 8192.00 9102.22 10240.00 11702.86 13653.33 16384.00 18204.44 \
        20480.00 23405.71 27306.67 32768.00 36408.89 40960.00 inf";

    #[test]
    fn spectrum_ticks_match_wrk2_readme() {
        // One value per microsecond from 1 µs, then a lone outlier: every tick finds a bucket.
        let mut values: Vec<(u64, u64)> = (1..=39_499).map(|v| (v, 1)).collect();
        values.push((1_000_000, 1));
        let got = latency_block("Recorded Latency", &histogram(&values));
        let rows: Vec<Vec<&str>> = got
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("Value"))
            .skip(2)
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().collect())
            .collect();
        let percentiles: Vec<&str> = rows.iter().map(|r| r[1]).collect();
        let inverted: Vec<&str> = rows.iter().map(|r| r[3]).collect();
        assert_eq!(percentiles, README_PERCENTILES.split_whitespace().collect::<Vec<_>>());
        assert_eq!(inverted, README_INVERTED.split_whitespace().collect::<Vec<_>>());
        // The row that completes the count, then the final row, both on the outlier.
        let tail: Vec<&str> = rows[rows.len() - 2..].iter().map(|r| r[2]).collect();
        assert_eq!(tail, ["39500", "39500"]);
    }

    #[test]
    fn spectrum_repeats_a_bucket_that_spans_several_ticks() {
        // Two buckets of one value each: 50% lies in the first, the rest in the last.
        let h = histogram(&[(100, 1), (200, 1)]);
        let rows = spectrum(&recorded(&h), 2);
        let got: Vec<(u64, f64, u64)> = rows.iter().map(|r| (r.value, r.percentile, r.count)).collect();
        let want = [
            (100, 0.0, 1),
            (100, 10.0, 1),
            (100, 20.0, 1),
            (100, 30.0, 1),
            (100, 40.0, 1),
            (100, 50.0, 1),
            (200, 55.0, 2),
            (200, 100.0, 2),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn footer_statistics_follow_c() {
        // Medians: 100, 200 and 2049 (bucket [2048, 2049] at unit 2 above 2047).
        let h = histogram(&[(100, 2), (200, 1), (2049, 1)]);
        let b = recorded(&h);
        let (mean, stdev) = mean_stdev(&b, 4);
        let want_mean = (2.0 * 100.0 + 200.0 + 2049.0) / 4.0;
        let var =
            (2.0 * (100.0f64 - want_mean).powi(2) + (200.0 - want_mean).powi(2) + (2049.0 - want_mean).powi(2)) / 4.0;
        assert_eq!(mean, want_mean);
        assert!((stdev - var.sqrt()).abs() < 1e-9, "{stdev}");
        // Max is the lowest equivalent of the top bucket, not its highest.
        assert_eq!(b.last().map(|b| (b.lowest, b.highest)), Some((2048, 2049)));
        assert_eq!(mean_stdev(&[], 0), (0.0, 0.0));
    }

    #[test]
    fn bucket_counts_follow_wrk2_hdr_init() {
        let rows: &[(u64, u64, u8, (u32, u32))] = &[
            // wrk2's own histograms; its README shows 27 and 2048.
            (1, WRK2_MAX, 3, (27, 2048)),
            (1, STRAIN_MAX, 3, (22, 2048)),
            (1, STRAIN_MAX, 2, (25, 256)),
            (1, STRAIN_MAX, 5, (15, 262_144)),
            (1000, STRAIN_MAX, 3, (13, 2048)),
            (1024, STRAIN_MAX, 3, (12, 2048)),
            // Just above 2047 * 2^k the C needs one bucket more than the crate, which has 2.
            (1, 4095, 3, (3, 2048)),
        ];
        for &(low, high, sigfig, want) in rows {
            let h = Histogram::<u64>::new_with_bounds(low, high, sigfig).unwrap();
            assert_eq!(c_layout(&h), want, "{low} {high} {sigfig}");
        }
        assert_eq!(Histogram::<u64>::new_with_bounds(1, 4095, 3).unwrap().buckets(), 2);
    }

    #[test]
    fn next_tick_stops_instead_of_overflowing() {
        // The float just below 100: a tick there is under half its ulp.
        let last = f64::from_bits(100f64.to_bits() - 1);
        let rows: &[(f64, Option<f64>)] =
            &[(0.0, Some(10.0)), (50.0, Some(55.0)), (75.0, Some(77.5)), (last, None), (100.0, None)];
        for &(from, want) in rows {
            assert_eq!(next_tick(from), want, "{from}");
        }
    }
}
