//! wrk's number formatting, reproduced exactly because people parse wrk's output.
//!
//! A value moves to the next unit once it reaches 0.85 of that unit's scale (850 µs prints as
//! `0.85ms`), and each family stops at its last unit but one, as wrk's loop does: times never
//! exceed minutes, sizes never exceed terabytes.

struct Units {
    scale: f64,
    base: &'static str,
    units: &'static [&'static str],
}

const TIME_US: Units = Units { scale: 1000.0, base: "us", units: &["ms", "s"] };
const TIME_S: Units = Units { scale: 60.0, base: "s", units: &["m", "h"] };
const BINARY: Units = Units { scale: 1024.0, base: "", units: &["K", "M", "G", "T", "P"] };
const METRIC: Units = Units { scale: 1000.0, base: "", units: &["k", "M", "G", "T", "P"] };

fn format_units(n: f64, m: &Units, precision: usize) -> String {
    let mut amt = n;
    let mut unit = m.base;
    let threshold = m.scale * 0.85;
    // Like wrk, the last unit of each list is never reached.
    for u in &m.units[..m.units.len() - 1] {
        if amt < threshold {
            break;
        }
        amt /= m.scale;
        unit = u;
    }
    format!("{amt:.precision$}{unit}")
}

/// Bytes in powers of 1024 (`1.23M`; callers append `B`).
pub fn binary(n: f64) -> String {
    format_units(n, &BINARY, 2)
}

/// Counts in powers of 1000 (`1.00k`).
pub fn metric(n: f64) -> String {
    format_units(n, &METRIC, 2)
}

/// A duration given in microseconds (`850.00us`, `0.85ms`, `1.50s`, `2.00m`).
pub fn time_us(n: f64) -> String {
    if n >= 1_000_000.0 {
        format_units(n / 1_000_000.0, &TIME_S, 2)
    } else {
        format_units(n, &TIME_US, 2)
    }
}

/// A whole test duration in seconds (`10s`, `2m`, `120m`).
pub fn time_s(n: f64) -> String {
    format_units(n, &TIME_S, 0)
}

/// wrk's column padding: a value right-aligned in `width`, with room for a two-letter unit;
/// shorter units give their unused letters back as trailing spaces. Unlike wrk, a value wider
/// than its column is not cut (wrk's `1000.00ms` becomes `1000.00m`, which reads as minutes).
pub fn padded(msg: &str, width: usize) -> String {
    let bytes = msg.as_bytes();
    let alpha = |k: usize| bytes.len() >= k && bytes[bytes.len() - k].is_ascii_alphabetic();
    let pad = 2 - usize::from(alpha(1)) - usize::from(alpha(2));
    let width = width.saturating_sub(pad);
    format!("{msg:>width$}{}", &"  "[..pad])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_switch_like_wrk() {
        type Format = fn(f64) -> String;
        let rows: &[(Format, f64, &str)] = &[
            (time_us, 849.0, "849.00us"),
            (time_us, 850.0, "0.85ms"),
            (time_us, 1_500.0, "1.50ms"),
            (time_us, 999_999.0, "1000.00ms"),
            (time_us, 1_500_000.0, "1.50s"),
            (time_us, 51_000_000.0, "0.85m"),
            (time_us, 7_200_000_000.0, "120.00m"),
            (time_s, 10.0, "10s"),
            (time_s, 120.0, "2m"),
            (time_s, 7200.0, "120m"),
            (time_s, 50.0, "50s"),
            (metric, 999.0, "1.00k"),
            (metric, 849.0, "849.00"),
            (metric, 12_345_678.0, "12.35M"),
            (binary, 900.0, "0.88K"),
            (binary, 1_290_000.0, "1.23M"),
            (binary, 5.0 * 1024.0f64.powi(5), "5120.00T"),
        ];
        for (f, n, want) in rows {
            assert_eq!(f(*n), *want, "{n}");
        }
    }

    #[test]
    fn padding_matches_wrk_columns() {
        assert_eq!(padded("1.23ms", 8), "  1.23ms");
        assert_eq!(padded("1.23s", 8), "  1.23s ");
        assert_eq!(padded("12.00", 8), " 12.00  ");
        assert_eq!(padded("1.00k", 9), "   1.00k ");
        // wrk cuts a value wider than its column ("1000.00m"); strain keeps it whole, since a
        // cut unit reads as another unit.
        assert_eq!(padded("1000.00ms", 8), "1000.00ms");
    }
}
